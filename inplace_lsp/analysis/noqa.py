"""`# noqa` comments: decides whether one source line suppresses one finding code.

Same reading as flake8 and ruff: a bare `# noqa` suppresses every finding on its line;
`# noqa: IPL001,IPL003` (commas and/or spaces, any case, the space after the colon optional)
suppresses only those codes, or codes starting with a listed prefix. Codes of other tools
(`# noqa: E501`) leave our findings alone.
"""

from __future__ import annotations

import re

# A code is letters then digits (E501, IPL001); anything after the last code is free text.
_NOQA = re.compile(
    r"#\s*noqa(?P<sep>\s*:\s*(?P<codes>[a-z]+[0-9]+(?:[\s,]+[a-z]+[0-9]+)*))?",
    re.IGNORECASE,
)
_SPLIT = re.compile(r"[\s,]+")


def suppressed(line_text: str, code: str) -> bool:
    """Whether `line_text` carries a `# noqa` that covers `code`."""
    if "noqa" not in line_text.lower():  # the common case, without a regex
        return False
    code = code.upper()
    for match in _NOQA.finditer(line_text):
        codes = match.group("codes")
        if codes is None:  # a bare directive, or a colon followed by no code: everything
            return True
        if any(code.startswith(listed) for listed in _SPLIT.split(codes.upper()) if listed):
            return True
    return False
