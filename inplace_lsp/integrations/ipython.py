"""IPython and Jupyter: ``%load_ext inplace_lsp``, then the runtime detector for the session
(``%inplace_detect on``, ``%inplace_detect off``) or for one cell (``%%inplace_detect`` on its
first line).

Code run under it fails, where backward meets a tensor changed in place, with the line that
wrote and the op that saved it named by the cell's place in the notebook and its execution
count, ``written at  cell 2 (In[3]), line 5 by mul_`` (as IPython names cells in its
tracebacks, ``Cell In[3]``, when the notebook on disk does not have the cell). The findings
go to ``.inplace-lsp/last-run.json`` in the project of the kernel's working directory, as
``inplace-lsp run`` writes them (the report is rewritten when a finding appears and when the
detector is turned off). A line in a cell carries the cell with it (``"cell"``: the id the
notebook's front end gave the kernel, the notebook's path when the kernel knows it, the
execution count and the cell's text), so that the language server shows the finding on that
cell's line in the open notebook.
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path
from typing import Any

from IPython.core.magic import Magics, line_cell_magic, magics_class

from inplace_lsp import files, notebook
from inplace_lsp.detector import Detector
from inplace_lsp.report import DIRECTORY, NAME, project_root
from inplace_lsp.verify.tracer import norm

USAGE = "usage: %inplace_detect on | off   (or %%inplace_detect as a cell's first line)"


@magics_class
class InplaceMagics(Magics):  # type: ignore[misc]  # IPython ships no types for subclasses
    """``%inplace_detect`` and ``%%inplace_detect``; see the module."""

    def __init__(self, shell: Any) -> None:
        super().__init__(shell)
        self.session: Detector | None = None  # on for the session (between on and off)
        # execution count -> the cell id its execute_request gave (VS Code's Jupyter
        # extension: the cell's URI; JupyterLab: the notebook's cell id), once the cell ran
        self.cell_ids: dict[int, str] = {}
        self.running: tuple[str, str | None] | None = None  # the running cell: (text, id)
        shell.events.register("pre_run_cell", self._pre_run_cell)
        shell.events.register("post_run_cell", self._post_run_cell)

    def _pre_run_cell(self, info: Any) -> None:
        # IPython 9 counts the cell before this event, 8 after it: the text says which it is.
        cell_id = getattr(info, "cell_id", None)
        self.running = (info.raw_cell, cell_id if isinstance(cell_id, str) and cell_id else None)

    def _post_run_cell(self, result: Any) -> None:
        cell_id = getattr(result.info, "cell_id", None)
        if isinstance(result.execution_count, int) and isinstance(cell_id, str) and cell_id:
            self.cell_ids[result.execution_count] = cell_id
        self.running = None

    def _detector(self) -> Detector:
        report = Path(project_root(os.getcwd())) / DIRECTORY / NAME
        detector = Detector(report=report, header={"command": ["ipython", "%inplace_detect"]})
        detector.names = self._cell_name
        detector.cells = self._cell
        return detector

    def _count(self, path: str) -> int | None:
        """The execution count of the cell whose code the kernel compiled as ``path``."""
        shell: Any = self.shell
        numbers = getattr(shell.compile, "_filename_map", {})
        for name, number in numbers.items():
            if name == path or norm(name) == path:
                return int(number)
        return None

    def _cell_name(self, path: str) -> str | None:
        """What the code of a cell (the kernel's file for it) is called: "cell 3 (In[5])",
        the cell's place in the notebook when the notebook on disk has it (by the cell id the
        front end gave, else by its text) and its execution count; "Cell In[5]", as IPython's
        tracebacks say it, when not."""
        cell = self._cell(path)
        if cell is None:
            return None
        number = cell["execution_count"]
        position = _position(cell["notebook"], cell["id"], cell["text"])
        return f"Cell In[{number}]" if position is None else f"cell {position} (In[{number}])"

    def _cell(self, path: str) -> dict[str, object] | None:
        """What the report says of the cell whose code is ``path``: its id, the notebook, the
        execution count and the text the cell had (its lines are the lines of ``path``)."""
        number = self._count(path)
        if number is None:
            return None
        shell: Any = self.shell
        raw = shell.history_manager.input_hist_raw
        text = raw[number] if 0 <= number < len(raw) else None
        namespace = shell.user_ns
        saved_at = namespace.get("__vsc_ipynb_file__") or namespace.get("__session__")
        if isinstance(saved_at, str) and saved_at and not os.path.isabs(saved_at):
            # A Jupyter server's path, from its root; the kernel starts in the notebook's folder.
            saved_at = os.path.join(os.getcwd(), os.path.basename(saved_at))
        cell_id = self.cell_ids.get(number)
        if cell_id is None and self.running is not None and self.running[0] == text:
            cell_id = self.running[1]
        return {
            "id": cell_id,
            "notebook": saved_at if isinstance(saved_at, str) and saved_at else None,
            "execution_count": number,
            "text": text if isinstance(text, str) else None,
        }

    @line_cell_magic  # type: ignore[misc]
    def inplace_detect(self, line: str, cell: str | None = None) -> None:
        if cell is not None:
            self._one_cell(cell)
            return
        word = line.strip()
        if word == "on":
            if self.session is None:
                self.session = self._detector()
                self.session.__enter__()
            print("inplace-lsp: the detector is on for this session (%inplace_detect off)")
        elif word == "off":
            if self.session is not None:
                self.session.__exit__(None, None, None)
                self.session.finish(0)
                self.session = None
            print("inplace-lsp: the detector is off")
        else:
            print(USAGE)

    def _one_cell(self, cell: str) -> None:
        """The cell's code under a detector of its own; its lines keep their numbers in the
        cell (the magic is line 1)."""
        shell: Any = self.shell
        name = shell.compile.cache("\n" + cell, _running_cell(shell))
        code = compile("\n" + cell, name, "exec")
        detector = self._detector()
        try:
            with detector:
                exec(code, shell.user_ns)
        finally:
            detector.finish(0 if not detector.errors else 1)


NOTEBOOK_MAX_BYTES = 64 << 20  # a notebook on disk larger than this is not read for names


@functools.lru_cache(maxsize=8)
def _code_cells(path: str, mtime_ns: int) -> list[tuple[int, object, str]]:
    """(place among all cells, id, source) of each code cell of the notebook at ``path``."""
    data = files.read_regular(path, NOTEBOOK_MAX_BYTES)
    saved = notebook.read_notebook(data.decode("utf-8"))
    cells = saved.content["cells"]
    return [
        (cell.number, cells[cell.number - 1].get("id"), cell.source) for cell in saved.code_cells
    ]


def _position(path: object, cell_id: object, text: object) -> int | None:
    """The 1-based place of a cell in the notebook saved at ``path``: the code cell with that
    id (JupyterLab's), else the one whose text is ``text``; None when the file has neither."""
    if not isinstance(path, str):
        return None
    try:
        cells = _code_cells(path, os.stat(path).st_mtime_ns)
    except (OSError, ValueError):  # no notebook there, or not one
        return None
    for number, saved_id, _ in cells:
        if cell_id is not None and saved_id == cell_id:
            return number
    matches = [number for number, _, saved in cells if saved == text]
    return matches[0] if len(matches) == 1 else None


def _running_cell(shell: Any) -> int:
    """The execution count of the cell running the magic (its code's frame is on the stack)."""
    numbers = getattr(shell.compile, "_filename_map", {})
    frame = sys._getframe(1)
    while frame is not None:
        number = numbers.get(frame.f_code.co_filename)
        if number is not None:
            return int(number)
        frame = frame.f_back  # type: ignore[assignment]
    return int(shell.execution_count)


def _shown_without_the_detector(
    shell: Any, kind: type[BaseException], error: BaseException, tb: Any, tb_offset: Any = None
) -> Any:
    """IPython's traceback of an error, with the frames it has without the detector."""
    from inplace_lsp.verify import tracer

    tracer.without_detector_frames(error)
    shown = shell.InteractiveTB.structured_traceback(
        kind, error, error.__traceback__, tb_offset=tb_offset
    )
    shell._showtraceback(kind, error, shown)
    return shown


def load(shell: Any) -> None:
    """What ``%load_ext inplace_lsp`` does: the magics, and tracebacks of RuntimeErrors (the
    in-place error) without the detector's frames."""
    shell.register_magics(InplaceMagics)
    shell.set_custom_exc((RuntimeError,), _shown_without_the_detector)
