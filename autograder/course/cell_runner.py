"""Run a notebook cell by cell in a fresh kernel and keep what it printed and where it stopped.

For runs that read a notebook's printed figures (notebook 09 with a student's parts beside it, in the
suite and in ``benchmarks/your_parts_bpb.py``): every code cell runs even after one fails, as a student
who keeps going would see it, and the errors come back as one line each.
"""

from __future__ import annotations

import copy
from pathlib import Path

from nbclient import NotebookClient


def printed_and_errors(nb, folder: Path, timeout_s: float) -> tuple[str, list[str]]:
    """Execute every code cell of ``nb`` (left unchanged) in a kernel whose working folder is ``folder``.

    Returns (everything the cells wrote to stdout, in order; ``"cell N: ErrorName: message"`` for each
    cell that raised, N its index in ``nb.cells``). ``timeout_s`` bounds each cell's wall time.
    """
    client = NotebookClient(nb, timeout=timeout_s, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(folder)}})
    printed, errors = [], []
    with client.setup_kernel():
        for index, original in enumerate(nb.cells):
            if original.cell_type != "code":
                continue
            cell = copy.deepcopy(original)
            client.execute_cell(cell, index)
            for output in cell.get("outputs", []):
                if output.get("output_type") == "stream" and output.get("name") == "stdout":
                    printed.append(output["text"])
                elif output.get("output_type") == "error":
                    errors.append(f"cell {index}: {output['ename']}: {output['evalue']}")
    return "".join(printed), errors
