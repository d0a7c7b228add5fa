"""Quick fixes: libcst codemods of the statement a finding names, rendered as text edits.

Contract (used by the CLI's --fix and the language server's code actions):

* `Edit(span, new_text)`: replace the text of `span` (lines 1-based, columns 0-based in code
  points, as in `Finding.span`) with `new_text`.
* `edits_for(text, finding) -> list[Edit] | None`: the edits of the finding's quick fix
  (`finding.fix`, a FixRecipe whose `kind` names the codemod), or None when it has none or
  the codemod does not apply to the code as it is now.
* `apply_safe_fixes(text, findings) -> str`: the text with every safe fix applied (fix-all);
  applying it twice changes nothing the second time.
* `noqa_edit(text, finding) -> Edit`: appends `# noqa: IPLxxx` to the finding's first line (or
  adds the code to an existing noqa comment).
* `inplace_off_edits(text, line) -> list[Edit]`: every `inplace=True` in the class enclosing
  `line` turned into `inplace=False` ("turn off in-place activations in this class").
"""
