"""Imports from other files of the workspace: `from .layers import Gate` is read and modelled,
so a save in one file and a write in another are seen together."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor, Future
from pathlib import Path
from typing import Any

from inplace_lsp.analysis.engine import DocumentAnalysis
from inplace_lsp.analysis.workspace import Workspace
from inplace_lsp.lsp.scheduler import Scheduler, Snapshot

LAYERS = """\
import torch
import torch.nn as nn


class Gate(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return torch.sigmoid(self.proj(x))


class Plain(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return self.proj(x)
"""

MODEL = """\
import torch.nn as nn
from .layers import Gate, Plain


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate = Gate(4)
        self.plain = Plain(4)

    def forward(self, x):
        g = self.gate(x)
        g += 1
        p = self.plain(x)
        p += 1
        return g * p
"""


def make_package(root: Path) -> Path:
    pkg = root / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "layers.py").write_text(LAYERS, encoding="utf-8")
    model = pkg / "model.py"
    model.write_text(MODEL, encoding="utf-8")
    return model


def test_save_in_imported_class_write_here(tmp_path: Path) -> None:
    model = make_package(tmp_path)
    analysis = DocumentAnalysis(path=str(model), workspace=Workspace(tmp_path))
    findings = analysis.update(MODEL).findings
    errors = [(f.code, f.line) for f in findings if f.severity.value == "error"]
    assert errors == [("IPL001", 13)]  # `g += 1` after Gate's sigmoid; Plain's Linear is fine
    related = findings[0].related[0]
    assert related.path is not None and related.path.endswith("layers.py")
    assert related.span.line == 11 and related.span.col == 15
    assert "torch.sigmoid" in findings[0].message


def test_an_imported_file_is_read_in_the_encoding_its_coding_line_names(tmp_path: Path) -> None:
    model = make_package(tmp_path)
    latin = "# -*- coding: latin-1 -*-\n# Gate: a sigmoid (café)\n" + LAYERS
    (tmp_path / "pkg" / "layers.py").write_bytes(latin.encode("latin-1"))
    analysis = DocumentAnalysis(path=str(model), workspace=Workspace(tmp_path))
    findings = analysis.update(MODEL).findings
    assert [(f.code, f.line) for f in findings if f.severity.value == "error"] == [("IPL001", 13)]
    assert findings[0].related[0].span.line == 13  # two lines below where it was in UTF-8


def test_an_import_is_not_followed_through_a_link_out_of_the_workspace(
    tmp_path: Path,
) -> None:
    """A module a repository commits as a symlink leading out of the workspace is not read
    (its classes are unknown: no error rests on them); one leading elsewhere inside it is."""
    project = tmp_path / "project"
    project.mkdir()
    model = make_package(project)
    layers = project / "pkg" / "layers.py"
    outside = tmp_path / "outside" / "layers.py"
    outside.parent.mkdir()
    outside.write_text(LAYERS, encoding="utf-8")
    layers.unlink()
    layers.symlink_to(outside)
    workspace = Workspace(project)
    analysis = DocumentAnalysis(path=str(model), workspace=workspace)
    assert [f for f in analysis.update(MODEL).findings if f.severity.value == "error"] == []
    assert not any(str(outside) in path for path in workspace.files())

    shared = project / "shared" / "layers.py"
    shared.parent.mkdir()
    shared.write_text(LAYERS, encoding="utf-8")
    layers.unlink()
    layers.symlink_to(shared)
    analysis = DocumentAnalysis(path=str(model), workspace=Workspace(project))
    errors = [
        (f.code, f.line) for f in analysis.update(MODEL).findings if f.severity.value == "error"
    ]
    assert errors == [("IPL001", 13)]


def test_editor_buffer_of_imported_file_wins_over_disk(tmp_path: Path) -> None:
    model = make_package(tmp_path)
    workspace = Workspace(tmp_path)
    analysis = DocumentAnalysis(path=str(model), workspace=workspace)
    assert [f.line for f in analysis.update(MODEL).findings if f.severity.value == "error"] == [13]
    # The user edits layers.py (unsaved): Gate no longer ends in a sigmoid.
    workspace.set_document(
        str(tmp_path / "pkg" / "layers.py"), 2, LAYERS.replace("torch.sigmoid(", "(")
    )
    assert [f for f in analysis.update(MODEL).findings if f.severity.value == "error"] == []


def test_findings_rest_on_the_files_they_read_and_no_others(tmp_path: Path) -> None:
    """A document's findings are kept while the files its analysis read are unchanged: the
    first keystroke after opening (which modelled the imports) analyses nothing again, nor
    does an edit of a file it does not import; an edit of one it imports is seen."""
    model = make_package(tmp_path)
    other = tmp_path / "pkg" / "other.py"
    other.write_text(LAYERS, encoding="utf-8")
    workspace = Workspace(tmp_path)
    workspace.model_of(str(other))  # modelled: another open document imports it
    analysis = DocumentAnalysis(path=str(model), workspace=workspace)
    assert [f.line for f in analysis.update(MODEL).findings if f.severity.value == "error"] == [13]
    again = analysis.update(MODEL + "\n")
    assert again.functions_analysed == 0
    workspace.set_document(str(other), 2, LAYERS.replace("torch.sigmoid(", "("))
    unrelated = analysis.update(MODEL)
    assert unrelated.functions_analysed == 0
    assert [f.line for f in unrelated.findings if f.severity.value == "error"] == [13]
    workspace.set_document(
        str(tmp_path / "pkg" / "layers.py"), 2, LAYERS.replace("(x))", "(x)) * 2")
    )
    related = analysis.update(MODEL)
    assert related.functions_analysed > 0
    assert [f.line for f in related.findings if f.severity.value == "error"] == []


def test_unresolvable_import_is_unknown_not_an_error(tmp_path: Path) -> None:
    text = MODEL.replace("from .layers import", "from .missing import")
    path = tmp_path / "model.py"
    path.write_text(text, encoding="utf-8")
    findings = DocumentAnalysis(path=str(path), workspace=Workspace(tmp_path)).update(text).findings
    assert [f for f in findings if f.severity.value == "error"] == []


def test_import_cycle_terminates(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("import torch\nfrom b import B\nclass A(B):\n    pass\n")
    (tmp_path / "b.py").write_text("import torch\nfrom a import A\nclass B(A):\n    pass\n")
    text = "import torch\nfrom a import A\nm = A()\ny = m(torch.ones(2))\ny += 1\n"
    path = tmp_path / "main.py"
    path.write_text(text, encoding="utf-8")
    result = DocumentAnalysis(path=str(path), workspace=Workspace(tmp_path)).update(text)
    assert result.syntax_errors == []


def test_a_first_analysis_from_the_file_alone_is_refined_by_its_imports(tmp_path: Path) -> None:
    """From the file alone, Gate (in layers.py) is unknown: no finding rests on it. With the
    files it imports, the finding is there, and only what looked into another file is
    analysed again (`local` names nothing imported)."""
    text = MODEL + "\n\ndef local(t):\n    t.add_(1)\n    return t\n"
    model = make_package(tmp_path)
    model.write_text(text, encoding="utf-8")
    analysis = DocumentAnalysis(path=str(model), workspace=Workspace(tmp_path))
    alone = analysis.update(text, alone=True)
    assert [f for f in alone.findings if f.severity.value == "error"] == []
    refined = analysis.update(text)
    assert [f.line for f in refined.findings if f.severity.value == "error"] == [13]
    assert (
        refined.findings
        == DocumentAnalysis(path=str(model), workspace=Workspace(tmp_path)).update(text).findings
    )
    assert refined.functions_analysed == 1  # Net.forward, not local


def test_the_server_publishes_the_file_alone_first_and_again_only_if_its_imports_change_it(
    tmp_path: Path,
) -> None:
    model = make_package(tmp_path)
    published: list[Snapshot] = []
    scheduler = Scheduler(
        published.append, workspace=Workspace(tmp_path, use_jedi=False), executor=Inline()
    )
    scheduler.open("model", str(model), 1, MODEL)
    errors = [
        (s.version, s.refined, [f.line for f in s.findings if f.severity.value == "error"])
        for s in published
    ]
    assert errors == [(1, False, []), (1, True, [13])]
    published.clear()
    layers = tmp_path / "pkg" / "layers.py"
    scheduler.open("layers", str(layers), 1, LAYERS)  # imports nothing of the workspace
    assert [(s.version, s.refined) for s in published] == [(1, False)]
    scheduler.submit("model", 2, MODEL + "\n")
    assert [(s.version, s.refined) for s in published[1:]] == [(2, False)]


class Inline(Executor):
    """Runs submitted work at once, in the caller's thread."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        future.set_result(fn(*args, **kwargs))
        return future
