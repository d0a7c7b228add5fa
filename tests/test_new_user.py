"""What a new user hit (issue 40), each as the user met it: the commands and the editor
requests they ran, on files written as they would write them.

1. A quick fix that was offered and did nothing: `x += self.fc(x)` in a `forward` whose `x`
   is its argument. The rewrite changes what the caller sees (its tensor no longer changes),
   so it is an unsafe fix: JSON says `"fixable": false` and why, `check --fix` leaves it and
   says why, `--fix --unsafe-fixes` applies it, and the editor lists it, not preferred and
   not in fix-all.
2. verify ran a stray `.venv` above a file in no project and never named its interpreter.
3. verify refused notebooks and the place `check` prints (`nb.ipynb:cell 3:8`).
4. `run` without torch said only "No module named 'torch'".
5. "backward through the graph a second time" (a hidden state carried across batches): `run`
   printed torch's message alone (only `--retention` explained it); verify called it a plain
   error (exit 2), printed torch's message twice and named no line.
6. check and the runtime named different ops and lines for one bug.
7. Duplicates after verify: a second Problems entry on the analysis's line, absolute paths in
   run messages, two notifications per `:InplaceVerify` (tests/test_editor_nvim.py,
   test_editor_emacs.py, test_editor_vscode.py, test_lsp_verify.py).
8. A clean `run` said nothing (was the detector on?); `--show-hints` counted hints as problems
   (tests/test_cli.py); `scripts/bundle_server.py` ran silent for a minute and a half
   (tests/test_bundle.py); verify suggested ints for tensor arguments (tests/test_verify.py).
9. A run finding offered no quick fix though its line's analysis finding had one
   (tests/test_lsp_run_report.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from inplace_lsp import cli
from inplace_lsp.lsp import actions

BLOCK = textwrap.dedent(
    """\
    import torch
    import torch.nn as nn


    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 8)

        def forward(self, x):
            x += self.fc(x)
            return x
    """
)


def _check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(["check", "--no-cache", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def block(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "res.py"
    path.write_text(BLOCK, encoding="utf-8")
    return path


def test_an_unsafe_fix_is_not_called_fixable(
    block: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _check(capsys, "--format", "json", "res.py")
    assert code == 1
    (record,) = json.loads(out)
    assert (record["line"], record["code"], record["fixable"]) == (11, "IPL001", False)
    assert record["fix"] == {
        "applicability": "unsafe",
        "reason": "`x` is an argument: its caller would no longer see it change",
    }


def test_fix_says_what_it_left_and_why(block: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _check(capsys, "--fix", "res.py")
    assert code == 1
    assert block.read_text(encoding="utf-8") == BLOCK
    assert err == (
        "res.py:11:9: IPL001 not fixed: the fix is unsafe (`x` is an argument: its caller "
        "would no longer see it change); `--unsafe-fixes` applies it\n"
    )
    assert out.splitlines()[-2:] == [
        "1 more fix is unsafe (see above): `--unsafe-fixes` applies it.",
        "Found 1 problem (1 error, 0 warnings) in 1 of 1 file.",
    ]


def test_fix_says_why_a_finding_has_no_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "step.py").write_text(
        textwrap.dedent(
            """\
            import torch

            w = torch.randn(3, requires_grad=True)
            opt = torch.optim.SGD([w], lr=0.1)
            z = (w * w).sum()
            z.backward(retain_graph=True)
            opt.step()
            z.backward()
            """
        ),
        encoding="utf-8",
    )
    code, _, err = _check(capsys, "--fix", "step.py")
    assert code == 1
    assert err == "step.py:7:1: IPL007 not fixed: no automatic fix\n"


def test_unsafe_fixes_apply_it_and_keep_the_forward_value(
    block: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _check(capsys, "--fix", "--unsafe-fixes", "res.py")
    assert (code, err) == (0, "")
    assert out == "Fixed 1 problem.\nAll checks passed: 1 file.\n"
    fixed = block.read_text(encoding="utf-8")
    assert fixed == BLOCK.replace("x += self.fc(x)", "x = x + self.fc(x)")
    pytest.importorskip("torch")
    proof = textwrap.dedent(
        """\
        import importlib.util, sys
        import torch

        def load(path, name):
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return module

        old, new = load(sys.argv[1], "old"), load(sys.argv[2], "new")
        torch.manual_seed(0)
        a = old.Block()
        b = new.Block()
        b.load_state_dict(a.state_dict())
        x = torch.randn(4, 8, requires_grad=True)
        with torch.no_grad():
            expected = a(x.detach().clone())
        out = b(x)
        assert torch.allclose(out, expected)
        out.sum().backward()
        # Against the same sum written out of place by hand.
        x2 = x.detach().clone().requires_grad_()
        (x2 + a.fc(x2)).sum().backward()
        assert torch.allclose(x.grad, x2.grad)
        assert torch.allclose(b.fc.weight.grad, a.fc.weight.grad)
        try:
            a(x2.detach().clone().requires_grad_() * 1).sum().backward()
        except RuntimeError as exc:
            assert "modified by an inplace operation" in str(exc)
        else:
            raise AssertionError("the original ran backward")
        print("ok")
        """
    )
    original = block.with_name("original.py")
    original.write_text(BLOCK, encoding="utf-8")
    ran = subprocess.run(
        [sys.executable, "-c", proof, str(original), str(block)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.stdout == "ok\n", ran.stderr


def _editor(tmp_path: Path) -> tuple[Any, str, types.Diagnostic]:
    from test_lsp_units import _session

    session, client = _session(tmp_path, lazy_edits=True)
    uri = (tmp_path / "res.py").as_uri()
    session.open_document(uri, 1, BLOCK)
    (flagged,) = [d for d in client.published[-1][2] if d.code == "IPL001"]
    return session, uri, flagged


def test_the_editor_lists_an_unsafe_fix_not_preferred_and_not_in_fix_all(tmp_path: Path) -> None:
    session, uri, flagged = _editor(tmp_path)
    offered = session.code_actions(uri, flagged.range, None)
    titles = [a.title for a in offered]
    fix = next(a for a in offered if a.title.startswith("Rewrite out of place"))
    assert fix.title == (
        "Rewrite out of place (IPL001, unsafe: `x` is an argument: its caller would no longer "
        "see it change)"
    )
    assert not fix.is_preferred
    assert not [a for a in offered if a.kind == actions.FIX_ALL], titles
    resolved = session.resolve_code_action(fix)
    assert resolved.edit is not None and resolved.edit.changes is not None
    (edit,) = resolved.edit.changes[uri]
    assert edit.new_text == "= x +"


def test_the_editor_offers_no_fix_that_does_not_apply(tmp_path: Path) -> None:
    """A finding whose recipe's codemod finds nothing to rewrite lists no quick fix."""
    text = BLOCK.replace("x += self.fc(x)", "x.add_(self.fc(x)) if True else None")
    from test_lsp_units import _session

    session, client = _session(tmp_path, lazy_edits=True)
    uri = (tmp_path / "odd.py").as_uri()
    session.open_document(uri, 1, text)
    for diagnostic in client.published[-1][2]:
        for action in session.code_actions(uri, diagnostic.range, [actions.QUICKFIX]):
            if action.title.startswith("Suppress"):
                continue
            assert session.resolve_code_action(action).edit is not None, action.title


# 4. `run` in an interpreter without torch (a pipx install) said only "No module named
# 'torch'". 8. A run that found nothing said nothing: was the detector on?


def test_run_without_torch_says_what_to_install_where(tmp_path: Path) -> None:
    """A real environment without torch, inplace-lsp importable from this checkout."""
    env = tmp_path / "env"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(env)], check=True, timeout=120
    )
    python = env / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(site, "inplace_lsp_checkout.pth").write_text(
        str(Path(cli.__file__).resolve().parent.parent) + "\n", encoding="utf-8"
    )
    script = tmp_path / "train.py"
    script.write_text("import torch\n", encoding="utf-8")
    done = subprocess.run(
        [str(python), "-m", "inplace_lsp", "run", str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert done.stderr.startswith(
        f"inplace-lsp run: torch is not installed in {python}, the interpreter inplace-lsp "
        "runs in.\n"
    ), done.stderr
    assert "install it into the environment that has your torch" in done.stderr
    assert "ModuleNotFoundError" not in done.stderr


@pytest.mark.torch
@pytest.mark.parametrize(
    ("body", "said"),
    [
        (
            "w = torch.randn(3, requires_grad=True)\n"
            "for _ in range(3):\n"
            "    (w * 2).sum().backward()\n",
            "inplace-lsp run: no in-place problem in 3 backward calls\n",
        ),
        (
            "print(torch.ones(1).sum().item())\n",
            "inplace-lsp run: no backward() ran: nothing for the detector to check\n",
        ),
    ],
    ids=["backward", "no-backward"],
)
def test_a_clean_run_says_what_the_detector_watched(body: str, said: str, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    script = tmp_path / "train.py"
    script.write_text("import torch\n" + body, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "inplace_lsp", "run", "--no-report", str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert (done.returncode, done.stderr) == (0, said)


# 2. verify ran a `.venv` found in any folder above a file that is in no project (here `H/`,
# as a home folder's), not the activated environment, and its text output never named the
# interpreter.

CLEAN = BLOCK.replace("x += self.fc(x)\n        return x", "return x + self.fc(x)")


def _wrapper(folder: Path, target: str) -> Path:
    """A virtual environment's `bin/python` that is `target`."""
    python = folder / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\nexec {target} "$@"\n', encoding="utf-8")
    python.chmod(0o755)
    return python


@pytest.mark.torch
def test_verify_outside_a_project_runs_the_activated_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch")
    home = tmp_path / "H"
    _wrapper(home / ".venv", "/bin/false")  # a stray environment without torch
    active = _wrapper(tmp_path / "active", sys.executable)
    model = home / "work" / "model.py"
    model.parent.mkdir(parents=True)
    model.write_text(CLEAN, encoding="utf-8")
    monkeypatch.setenv("VIRTUAL_ENV", str(tmp_path / "active"))
    monkeypatch.delenv("CONDA_PREFIX", raising=False)
    monkeypatch.chdir(model.parent)
    code = cli.main(["verify", "model.py"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.startswith("Block: forward and backward OK"), out
    assert out.endswith(f"  interpreter: {active} (the activated environment $VIRTUAL_ENV)\n"), out
    # Inside a project, the project's own environment comes first.
    (home / "work" / "pyproject.toml").write_text("", encoding="utf-8")
    project_python = _wrapper(home / "work" / ".venv", sys.executable)
    assert cli.main(["verify", "model.py"]) == 0
    assert capsys.readouterr().out.endswith(
        f"  interpreter: {project_python} (the project's .venv)\n"
    )


# 3. `verify nb.ipynb` said the notebook had no module, and the place `check` prints
# (`nb.ipynb:cell 3:8`) was "no such file".


def _notebook(path: Path) -> None:
    def code(*lines: str) -> dict[str, object]:
        source = [line + "\n" for line in lines]
        return {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                "source": source}  # fmt: skip

    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Gates\n"]},
        code("import torch", "import torch.nn as nn"),
        code(
            "class Gate(nn.Module):",
            "    def __init__(self):",
            "        super().__init__()",
            "        self.fc = nn.Linear(8, 8)",
            "",
            "    def forward(self, x):",
            "        g = torch.sigmoid(self.fc(x))",
            "        g += x",
            "        return g",
        ),
        code("m = Gate()", "m(torch.randn(2, 8)).sum().backward()"),
    ]
    meta = {"kernelspec": {"language": "python", "name": "python3", "display_name": "Python 3"}}
    document = {"cells": cells, "metadata": meta, "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(document, indent=1), encoding="utf-8")


@pytest.mark.torch
def test_verify_a_notebook_at_the_place_check_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    monkeypatch.delenv("CONDA_PREFIX", raising=False)
    _notebook(tmp_path / "nb.ipynb")
    assert cli.main(["check", "--no-cache", "nb.ipynb"]) == 1
    place = capsys.readouterr().out.split(": IPL001")[0].rsplit(":", 1)[0]
    assert place == "nb.ipynb:cell 3:8"
    expected = [
        "Gate fails: line 8 of cell 3 overwrites the output of torch.sigmoid saved at line 7 "
        "of cell 3",
        "  nb.ipynb:cell 3:8: in-place write",
        "  nb.ipynb:cell 3:7: saved by SigmoidBackward0",
    ]
    for target in ("nb.ipynb", place):
        assert cli.main(["verify", target]) == 1
        assert capsys.readouterr().out.splitlines()[:3] == expected
    assert cli.main(["verify", "--format", "json", place]) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["mutation"] == {"path": "nb.ipynb", "cell": 3, "line": 8}
    assert (result["saved_by"]["cell"], result["saved_by"]["line"]) == (3, 7)
    # Cells and lines that are not there, and a line without its cell, are told apart.
    assert cli.main(["verify", "nb.ipynb:cell 9"]) == 2
    assert capsys.readouterr().err == "nb.ipynb: no code cell 9 (its code cells: 2, 3, 4)\n"
    assert cli.main(["verify", "nb.ipynb:8"]) == 2
    assert "a notebook's line is in a cell: nb.ipynb:cell N:LINE" in capsys.readouterr().err


# 6. check and the runtime named different ops and lines for one bug: `nn.Linear(bias=False)`
# runs MmBackward0 (check said AddmmBackward0), and of three saves check named the first while
# torch, `run` and verify name the last (backward() visits the latest save first).

THREE_SAVES = textwrap.dedent(
    """\
    import torch
    import torch.nn as nn


    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 8, bias=False)
            self.fc2 = nn.Linear(8, 8, False)

        def forward(self, x):
            h = torch.tanh(x)
            y = self.fc(h) + self.fc2(h)
            h += 1
            return y


    Block()(torch.randn(2, 8, requires_grad=True)).sum().backward()
    """
)


@pytest.mark.torch
def test_check_and_run_name_the_same_op_and_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "three.py").write_text(THREE_SAVES, encoding="utf-8")
    assert cli.main(["check", "--no-cache", "--format", "json", "three.py"]) == 1
    (record,) = json.loads(capsys.readouterr().out)
    assert record["message"].startswith("nn.Linear saved `h` for backward (line 13)")
    saved = record["related"][0]
    assert (saved["line"], saved["column"]) == (13, 26)
    assert saved["message"] == "saved by nn.Linear here: MmBackward0 needs it"
    done = subprocess.run(
        [sys.executable, "-m", "inplace_lsp", "run", "--no-report", "three.py"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 1
    assert "saved by    MmBackward0 at three.py:13" in done.stderr, done.stderr


# 5. A hidden state carried across batches fails the second backward: `run` explains it without
# a flag and names the line that built on the freed graph (and not the metric accumulated
# beside it, which the failing graph does not hold); verify calls it an autograd error (exit
# 1), names the line and prints torch's message once.

LANGUAGE_MODEL = textwrap.dedent(
    """\
    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    lstm = nn.LSTM(8, 16, batch_first=True)
    head = nn.Linear(16, 8)
    opt = torch.optim.SGD([*lstm.parameters(), *head.parameters()], lr=0.1)
    hidden = None
    seen = torch.zeros(())
    for step in range(3):
        out, hidden = lstm(torch.randn(4, 5, 8), hidden)
        loss = head(out).pow(2).mean()
        seen = seen + loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    """
)


@pytest.mark.torch
def test_run_explains_a_second_backward_without_a_flag(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    (tmp_path / "lm.py").write_text(LANGUAGE_MODEL, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "inplace_lsp", "run", "lm.py"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 1, done.stderr
    explained = done.stderr.split("inplace-lsp detect: calls that built on a graph", 1)[1]
    assert explained.splitlines()[1:3] == [
        "  lstm at lm.py:11 (freed by the backward at lm.py:15)",
        "      out, hidden = lstm(torch.randn(4, 5, 8), hidden)",
    ]
    assert "lm.py:13" not in explained  # `seen` builds on it too, but this backward holds none
    assert done.stderr.endswith(
        "inplace-lsp run: 1 error(s), 0 warning(s); report: .inplace-lsp/last-run.json\n"
    )
    (finding,) = json.loads((tmp_path / ".inplace-lsp" / "last-run.json").read_text())["findings"]
    assert (finding["severity"], finding["kind"]) == ("error", "graph-retention")
    assert finding["mutation"]["line"] == 11
    assert "second time" in finding["message"]


CHAR_RNN = textwrap.dedent(
    """\
    import torch
    import torch.nn as nn


    class CharRNN(nn.Module):
        def __init__(self, vocab=10, hidden=16):
            super().__init__()
            self.embed = nn.Embedding(vocab, hidden)
            self.cell = nn.GRUCell(hidden, hidden)
            self.out = nn.Linear(hidden, vocab)
            self.h = None

        def forward(self, tokens):
            x = self.embed(tokens)
            if self.h is None:
                self.h = torch.zeros(x.shape[0], x.shape[-1])
            self.h = self.cell(x, self.h)
            return self.out(self.h)

        @staticmethod
        def example_inputs():
            return (torch.randint(0, 10, (4,)),)
    """
)


@pytest.mark.torch
def test_verify_names_the_line_a_second_backward_fails_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rnn.py").write_text(CHAR_RNN, encoding="utf-8")
    assert cli.main(["verify", "--train-step", "rnn.py"]) == 1
    captured = capsys.readouterr()
    assert captured.out.splitlines()[:2] == [
        "CharRNN fails: line 17 builds on a graph that an earlier backward freed, and the next "
        "backward raised 'Trying to backward through the graph a second time' (detach what is "
        "kept across steps)",
        "  rnn.py:17: builds on the graph a backward freed",
    ]
    assert "Trying to backward" not in captured.err  # torch's message is not printed again
    fixed = CHAR_RNN.replace("self.cell(x, self.h)", "self.cell(x, self.h.detach())")
    (tmp_path / "rnn.py").write_text(fixed, encoding="utf-8")
    assert cli.main(["verify", "--train-step", "rnn.py"]) == 0
