"""`%load_ext inplace_lsp` in a real IPython kernel (ipykernel, driven through jupyter_client
as a notebook front end drives it): `%%inplace_detect` for one cell and `%inplace_detect on` /
`off` for the session name the writing and the saving lines as IPython names cells."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
manager = pytest.importorskip("jupyter_client.manager", reason="jupyter-client: test extra")
pytest.importorskip("ipykernel", reason="ipykernel is in the test extra")

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[Any]:
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    paths = [str(ROOT), os.environ.get("PYTHONPATH", "")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, paths)))
    env["PYTHONWARNINGS"] = "ignore"
    # What a Jupyter server gives a notebook's kernel: the notebook's path from its root.
    env["JPY_SESSION_NAME"] = "lessons/nb.ipynb"
    km, kc = manager.start_new_kernel(startup_timeout=120, cwd=str(tmp_path), env=env)
    try:
        yield kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def run(kc: Any, code: str, cell_id: str | None = None) -> tuple[str, str]:
    """A cell's status and what it showed (streams, and the error's traceback); `cell_id` goes
    in the execute_request's metadata as VS Code's and JupyterLab's front ends send it."""
    shown: list[str] = []
    if cell_id is not None:
        request = kc.session.msg("execute_request", {"code": code, "silent": False})
        request["metadata"]["cellId"] = cell_id
        kc.shell_channel.send(request)
        msg_id = request["header"]["msg_id"]
        while True:
            message = kc.get_iopub_msg(timeout=120)
            if message["parent_header"].get("msg_id") != msg_id:
                continue
            content = message["content"]
            if message["msg_type"] == "stream":
                shown.append(content["text"])
            elif message["msg_type"] == "error":
                shown.append("\n".join(content["traceback"]))
            elif message["msg_type"] == "status" and content["execution_state"] == "idle":
                break
        while True:
            reply = kc.get_shell_msg(timeout=120)
            if reply["parent_header"].get("msg_id") == msg_id:
                return reply["content"]["status"], "".join(shown)

    def output(message: dict[str, Any]) -> None:
        content = message["content"]
        if message["msg_type"] == "stream":
            shown.append(content["text"])
        elif message["msg_type"] == "error":
            shown.append("\n".join(content["traceback"]))

    reply = kc.execute_interactive(code, output_hook=output, timeout=120)
    return reply["content"]["status"], "".join(shown)


def test_the_cell_magic_and_the_session_name_the_cells_lines(kernel: Any, tmp_path: Path) -> None:
    assert run(kernel, "%load_ext inplace_lsp")[0] == "ok"  # In [1]
    assert run(kernel, "import torch")[0] == "ok"  # In [2]
    bug = "x = torch.ones(3, requires_grad=True)\ny = torch.sigmoid(x)\ny.mul_(2)\n"
    status, shown = run(kernel, "%%inplace_detect\n" + bug + "y.sum().backward()")  # In [3]
    assert status == "error"
    assert "written at  Cell In[3], line 4 by mul_" in shown, shown
    assert "saved by    SigmoidBackward0 at Cell In[3], line 3" in shown
    versions = "versions    v0 saved by SigmoidBackward0 at line 3, v1 written by mul_ at line 4"
    assert versions in shown, shown
    assert "overrides.py" not in shown and "inplace_lsp/" not in shown  # no frame of theirs
    report = json.loads((tmp_path / ".inplace-lsp" / "last-run.json").read_text("utf-8"))
    (finding,) = report["findings"]
    assert (finding["mutation"]["line"], finding["mutation"]["source"]) == (4, "y.mul_(2)")

    status, shown = run(kernel, "%inplace_detect on")  # In [4]
    assert status == "ok" and "on for this session" in shown
    status, shown = run(kernel, bug + "y.sum().backward()")  # In [5]
    assert status == "error" and "written at  Cell In[5], line 3 by mul_" in shown, shown
    assert run(kernel, "z = torch.ones(2, requires_grad=True)\n(z * 2).sum().backward()")[0] == "ok"
    status, shown = run(kernel, "%inplace_detect off")
    assert status == "ok" and "off" in shown
    report = json.loads((tmp_path / ".inplace-lsp" / "last-run.json").read_text("utf-8"))
    assert [f["mutation"]["line"] for f in report["findings"]] == [3]
    assert report["exit_code"] == 0
    # Off: torch's own error, untouched.
    status, shown = run(kernel, bug + "y.sum().backward()")
    assert status == "error" and "inplace-lsp detect" not in shown


def test_a_finding_in_a_cell_carries_the_cell_its_notebook_and_its_text(
    kernel: Any, tmp_path: Path
) -> None:
    """The report of a cell run from a notebook names the cell as the front end did (VS Code's
    Jupyter extension sends the cell's URI as its id, JupyterLab the notebook's cell id), the
    notebook (the server's session name, in the kernel's folder), the execution count and the
    cell's text as typed; lines are named by the cell's place in the saved notebook (found by
    that id, else by the text) beside the execution count."""
    first = "%load_ext inplace_lsp\nimport torch"
    cell = "%%inplace_detect\nx = torch.ones(3, requires_grad=True)\ny = torch.sigmoid(x)\n"
    cell += "y.mul_(2)\ny.sum().backward()"
    edited = "%%inplace_detect\nw = torch.sigmoid(x)\nw.add_(1)\nw.sum().backward()"
    saved = [
        {"cell_type": "markdown", "id": "intro", "metadata": {}, "source": ["# Gates"]},
        {"cell_type": "code", "id": "c-1", "metadata": {}, "source": first.splitlines(True)},
        {"cell_type": "code", "id": "c-2", "metadata": {}, "source": cell.splitlines(True)},
        {"cell_type": "code", "id": "c-3", "metadata": {}, "source": ["w = 1  # not saved yet"]},
    ]
    notebook = {"cells": saved, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "nb.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    assert run(kernel, first)[0] == "ok"  # In [1]
    uri = "vscode-notebook-cell:/work/lessons/nb.ipynb#W2sZmlsZQ%3D%3D"
    status, shown = run(kernel, cell, cell_id=uri)  # In [2]: VS Code's id, found by its text
    assert status == "error" and "written at  cell 3 (In[2]), line 4 by mul_" in shown, shown
    report = json.loads((tmp_path / ".inplace-lsp" / "last-run.json").read_text("utf-8"))
    (finding,) = report["findings"]
    expected = {
        "id": uri,
        "notebook": str(tmp_path / "nb.ipynb"),
        "execution_count": 2,
        "text": cell,
    }
    assert finding["mutation"]["cell"] == expected
    assert finding["saved_by"]["cell"] == expected and finding["saved_by"]["line"] == 3
    assert finding["message"].startswith(
        "cell 3 (In[2]), line 4 modifies in place a tensor that SigmoidBackward0 saved at "
        "cell 3 (In[2]), line 3; "
    )
    # JupyterLab's id: the cell is found by it, though its text on disk is older.
    status, shown = run(kernel, edited, cell_id="c-3")  # In [3]
    assert status == "error" and "written at  cell 4 (In[3]), line 3 by add_" in shown, shown
    # No id, and a text the saved notebook does not have: IPython's name.
    status, shown = run(kernel, "%inplace_detect on")  # In [4]
    assert status == "ok"
    status, shown = run(kernel, "z = torch.sigmoid(x)\nz.add_(1)\nz.sum().backward()")  # In [5]
    assert status == "error" and "written at  Cell In[5], line 2 by add_" in shown, shown
    run(kernel, "%inplace_detect off")
    report = json.loads((tmp_path / ".inplace-lsp" / "last-run.json").read_text("utf-8"))
    (finding,) = report["findings"]
    assert finding["mutation"]["cell"]["id"] is None
    assert finding["mutation"]["cell"]["execution_count"] == 5
    assert finding["mutation"]["cell"]["text"].startswith("z = torch.sigmoid(x)\n")


CLEAN = """\
torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Linear(4, 8), torch.nn.ReLU(inplace=True), torch.nn.Linear(8, 1)
)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
data = torch.randn(16, 4)
losses, grads = [], []
for step in range(3):
    h = model[0](data)
    h += 1  # safe: Linear saves its input, not its output
    loss = model[2](model[1](h)).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    grads.append([p.grad.clone() for p in model.parameters()])
    losses.append(loss.detach().clone())
    optimizer.step()
"""


def test_a_clean_cell_computes_bit_for_bit_the_same_under_the_magic(kernel: Any) -> None:
    """The same training cell run plainly, under `%%inplace_detect` and with the detector on
    for the session: the losses, the gradients and the weights are equal bit for bit."""
    assert run(kernel, "%load_ext inplace_lsp\nimport torch")[0] == "ok"
    keep = "{name} = (losses, grads, [p.detach().clone() for p in model.parameters()])"
    assert run(kernel, CLEAN + keep.format(name="plain"))[0] == "ok"
    status, shown = run(kernel, "%%inplace_detect\n" + CLEAN + keep.format(name="cell"))
    assert status == "ok" and "inplace-lsp" not in shown, shown
    assert run(kernel, "%inplace_detect on")[0] == "ok"
    assert run(kernel, CLEAN + keep.format(name="session"))[0] == "ok"
    assert run(kernel, "%inplace_detect off")[0] == "ok"
    compare = (
        "flat = lambda r: [*r[0], *(g for step in r[1] for g in step), *r[2]]\n"
        "same = [len(flat(x)) == len(flat(plain))\n"
        "        and all(torch.equal(a, b) for a, b in zip(flat(x), flat(plain)))\n"
        "        for x in (cell, session)]"
    )
    assert run(kernel, compare)[0] == "ok"
    status, shown = run(kernel, "print(same, len(plain[0]), len(plain[1]))")
    assert status == "ok" and shown.strip() == "[True, True] 3 3", shown
