"""``inplace-lsp run [OPTIONS] [--] SCRIPT [ARGS...]`` and ``... run -m MODULE [ARGS...]``.

Runs the user's real script under the runtime detector in this interpreter, as ``python
SCRIPT ARGS`` (or ``python -m MODULE ARGS``) would: the same ``sys.argv``, ``sys.path[0]`` and
``__main__``, and the script's exit code. On an in-place error the traceback shows both ends;
the findings go to ``.inplace-lsp/last-run.json`` in the project (the language server shows
them), one file per rank under torchrun. Imports no more than the detector does.
"""

from __future__ import annotations

import builtins
import importlib.machinery
import importlib.util
import os
import runpy
import sys
import traceback
import types
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from inplace_lsp import files
from inplace_lsp.detector import Detector
from inplace_lsp.report import DIRECTORY, NAME, project_root
from inplace_lsp.verify import tracer

USAGE = """\
usage: inplace-lsp run [OPTIONS] [--] SCRIPT [ARGS...]
       inplace-lsp run [OPTIONS] -m MODULE [ARGS...]

Run a Python script (or module) under the runtime in-place detector: when backward fails
with "modified by an inplace operation", the error names the line that wrote and the op that
saved the tensor. The exit code is the script's.

options:
  -m MODULE        run a module, as python -m does (the rest are its arguments)
  --report PATH    write the findings there (default: .inplace-lsp/last-run.json in the
                   project: the nearest folder above the script with pyproject.toml,
                   setup.py, setup.cfg, .git or .inplace-lsp, else the working directory)
  --no-report      write no report
  --retention      also warn about calls that build on a graph backward already freed
  --no-silent      do not check writes through .data or NumPy into saved tensors
  --no-leaf        leave torch's leaf in-place error as it is
  -h, --help       show this help
"""

EXIT_USAGE = 2
REPORT_NAME = Path(DIRECTORY) / NAME


class _Usage(Exception):
    pass


@dataclass
class _Options:
    script: str | None = None
    module: str | None = None
    args: list[str] = field(default_factory=list)
    report: str | None = None
    no_report: bool = False
    retention: bool = False
    silent: bool = True
    leaf: bool = True
    help: bool = False


def _parse(argv: list[str]) -> _Options:
    options = _Options()
    index = 0
    while index < len(argv):
        token = argv[index]
        if token == "--":
            index += 1
            break
        if token in ("-h", "--help"):
            options.help = True
            return options
        if token.startswith("-m"):
            attached = token[2:]
            module = attached or (argv[index + 1] if index + 1 < len(argv) else "")
            if not module:
                raise _Usage("-m needs a module name")
            options.module = module
            options.args = argv[index + (1 if attached else 2) :]
            return options
        if token == "--report" or token.startswith("--report="):
            value = token.partition("=")[2] if "=" in token else None
            if value is None:
                if index + 1 >= len(argv):
                    raise _Usage("--report needs a path")
                index += 1
                value = argv[index]
            options.report = value
        elif token == "--no-report":
            options.no_report = True
        elif token == "--retention":
            options.retention = True
        elif token == "--no-silent":
            options.silent = False
        elif token == "--no-leaf":
            options.leaf = False
        elif token.startswith("-") and token != "-":
            raise _Usage(f"unknown option {token}")
        else:
            break
        index += 1
    if index >= len(argv):
        raise _Usage("no script to run")
    options.script = argv[index]
    options.args = argv[index + 1 :]
    return options


def _user_traceback(tb: TracebackType | None) -> TracebackType | None:
    """The traceback from the first frame of the module `-m` runs on (not runpy's)."""
    while tb is not None and "runpy" in os.path.basename(tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    return tb


def _print_error(exc: BaseException) -> None:
    """As the interpreter prints an uncaught exception (no frame of this tool's, or of torch's
    dispatch to the detector)."""
    tracer.without_detector_frames(exc)
    text = "".join(traceback.format_exception(type(exc), exc, _user_traceback(exc.__traceback__)))
    sys.stderr.write(text)
    sys.stderr.flush()


def _interrupted_as_python_is(exc: KeyboardInterrupt) -> None:
    """Ctrl-C: the exception goes on up (python then runs the atexit handlers and ends by
    SIGINT, exit status 130), and the hook that prints it (the script's own, if it set one)
    gets the traceback python would give it, from the script's first frame, not this tool's."""
    tracer.without_detector_frames(exc)
    shown = _user_traceback(exc.__traceback__)
    hook = sys.excepthook

    def print_interrupt(
        kind: type[BaseException], value: BaseException, tb: TracebackType | None
    ) -> None:
        sys.excepthook = hook
        if value is exc:  # python's own hook prints the exception's traceback, not `tb`
            tb = shown
            value.with_traceback(shown)
        hook(kind, value, tb)

    sys.excepthook = print_interrupt


def _run_script(script: str) -> None:
    """Runs ``script`` as ``python SCRIPT`` does: its code, compiled from its bytes (a coding
    line honoured), in a new ``__main__`` module whose ``__file__`` is the absolute path, with a
    source loader and no spec; ``sys.argv`` is left as it is (``argv[0]`` as typed)."""
    path = os.path.abspath(script)
    loader = importlib.machinery.SourceFileLoader("__main__", path)
    code = compile(loader.get_data(path), path, "exec", dont_inherit=True)
    main = types.ModuleType("__main__")
    main.__dict__.update(__file__=path, __loader__=loader, __cached__=None, __builtins__=builtins)
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = main
    try:
        exec(code, main.__dict__)
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved


def _exit_code(exc: SystemExit) -> int:
    """What the interpreter would exit with for ``exc`` (printing a non-integer code)."""
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF if code >= 0 else code
    print(code, file=sys.stderr)
    return 1


def main(argv: list[str]) -> int:
    try:
        options = _parse(argv)
    except _Usage as exc:
        sys.stderr.write(USAGE)
        print(f"inplace-lsp run: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if options.help:
        sys.stdout.write(USAGE)
        return 0
    script, module = options.script, options.module
    if script is not None:
        if not os.path.isfile(script):
            print(f"inplace-lsp run: can't open file {script!r}", file=sys.stderr)
            return EXIT_USAGE
        start = os.path.dirname(os.path.realpath(script))
    else:
        start = os.getcwd()
    report: Path | None = None
    if options.report and not options.no_report:
        report = Path(os.path.abspath(options.report))  # before the script can chdir
    elif not options.no_report:
        root = project_root(start, fallback=os.getcwd())
        report = Path(root) / REPORT_NAME
        if not files.inside(str(report.parent), root):
            print(
                f"inplace-lsp run: {report.parent} leads out of the project "
                f"(to {os.path.realpath(report.parent)}): no report written",
                file=sys.stderr,
            )
            report = None
    if importlib.util.find_spec("torch") is None:
        print(_NO_TORCH.format(python=sys.executable), file=sys.stderr)
        return EXIT_USAGE
    detector = Detector(
        silent=options.silent, leaf=options.leaf, retention=options.retention, report=report
    )
    saved_argv, saved_path = list(sys.argv), list(sys.path)
    code = 0
    error: BaseException | None = None
    try:
        # As the interpreter does: argv[0] the script (run_module puts the module's file
        # there), sys.path[0] its folder (the working directory for a module).
        sys.argv = [script if script is not None else str(module), *options.args]
        detector.header["command"] = list(sys.argv)
        directory = os.path.dirname(os.path.abspath(script)) if script else os.getcwd()
        if sys.path:
            sys.path[0] = directory
        else:
            sys.path.insert(0, directory)
        with detector:
            if script is not None:
                _run_script(script)
            else:
                runpy.run_module(str(module), run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        code = _exit_code(exc)
    except KeyboardInterrupt as exc:
        detector.finish(130)
        _interrupted_as_python_is(exc)
        raise
    except BaseException as exc:  # the user's exception: printed as Python would, exit 1
        error = exc
        code = 1
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path
    if error is not None:
        _print_error(error)
    detector.finish(code)
    _summary(detector, error, code)
    return code


def _shown(path: Path) -> str:
    """``path`` relative to the working directory when it is under it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


_NO_TORCH = """\
inplace-lsp run: torch is not installed in {python}, the interpreter inplace-lsp runs in.
`run` runs your script in that interpreter, so inplace-lsp must be installed beside torch:
install it into the environment that has your torch (`python -m pip install
/path/to/inplace-lsp`, from its clone), or add torch to this one (a pipx install: `pipx
inject inplace-lsp torch`). `inplace-lsp check` and the editor need no torch."""


def _summary(detector: Detector, error: BaseException | None, code: int) -> None:
    """The errors that the traceback above does not show (the script caught them), then one
    line of counts; after a clean run that found nothing, what the detector watched."""
    findings = detector.findings
    if not findings:
        calls = detector.backward_calls
        if error is None and code == 0:
            watched = (
                f"no in-place problem in {calls} backward call{'s' if calls != 1 else ''}"
                if calls
                else "no backward() ran: nothing for the detector to check"
            )
            print(f"inplace-lsp run: {watched}", file=sys.stderr)
        return
    shown = tracer.error_text(error) if error is not None else ""
    for finding in findings:
        if finding["severity"] == "error" and finding.get("detail", "") not in shown:
            print(f"inplace-lsp run: {finding['message']}", file=sys.stderr)
    errors = sum(f["severity"] == "error" for f in findings)
    where = ""
    if detector.report is not None:
        where = "; report: " + (
            "not written" if detector.report_error is not None else _shown(detector.report)
        )
    print(
        f"inplace-lsp run: {errors} error(s), {len(findings) - errors} warning(s){where}",
        file=sys.stderr,
    )
