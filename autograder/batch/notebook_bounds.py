"""Reading a submitted notebook within a bound on the grader's own memory (issue 28).

A notebook file is at most 25 MB (``intake.MAX_NOTEBOOK_BYTES``), but what parsing builds from it is
not bounded by its size: 25 MB of ``[],[],...`` are eight million Python lists, 25 MB of empty
cells or outputs are hundreds of thousands of nbformat nodes, each validated against the schema, and
the grader grew to 5 GB on such a file. So before nbformat sees anything:

* the JSON values are counted on the bytes (``[``, ``{`` and ``,``: an upper bound) and a file with
  more than ``MAX_JSON_VALUES`` is refused;
* after ``json.loads``, everything the grader never uses is dropped: code cells' outputs and
  execution counts, text cells' attachments (the grader clears them anyway, ``preparation.normalise``),
  a cell's metadata larger than ``MAX_CELL_METADATA_CHARS`` (its ``nbgrader`` entry kept) and the
  notebook's metadata larger than ``MAX_NOTEBOOK_METADATA_CHARS`` (kernel and language kept);
* a notebook with more than ``MAX_CELLS`` cells is refused;

and only then is what is left handed to nbformat (version conversion and validation as before).
Refusals raise ``NotebookTooBig`` with the reason; the submission is an ``invalid notebook``.
"""

from __future__ import annotations

import json

MAX_JSON_VALUES = 1_000_000        # about 100 MB of Python objects at most while the file is parsed
MAX_CELLS = 3_000                  # the course's notebooks have under 200
MAX_CELL_METADATA_CHARS = 64_000
MAX_NOTEBOOK_METADATA_CHARS = 256_000
KEPT_NOTEBOOK_METADATA = ("kernelspec", "language_info")


class NotebookTooBig(ValueError):
    """A notebook whose structure would take the grader more memory than it gives one submission."""


def read_bounded(raw: bytes):
    """The notebook in ``raw`` (a file's bytes) as nbformat 4, with what the grader never reads
    dropped first, and notes on what was dropped; ``NotebookTooBig``, or nbformat's and ``json``'s own
    errors for a file that is not a notebook."""
    import nbformat

    values = raw.count(b"[") + raw.count(b"{") + raw.count(b",")
    if values > MAX_JSON_VALUES:
        raise NotebookTooBig(f"the file holds about {values:,} JSON values; the grader reads at most "
                             f"{MAX_JSON_VALUES:,} (clear the outputs and resubmit)")
    data = json.loads(raw)
    del raw
    notes = _strip(data) if type(data) is dict and type(data.get("cells")) is list else []
    return nbformat.reads(json.dumps(data), as_version=4), notes


def _strip(data: dict) -> list[str]:
    """Drop outputs, attachments and oversized metadata in place; refuse too many cells."""
    cells = data["cells"]
    if len(cells) > MAX_CELLS:
        raise NotebookTooBig(f"the notebook has {len(cells):,} cells; the grader reads at most {MAX_CELLS:,}")
    trimmed = sum(_strip_cell(cell) for cell in cells if type(cell) is dict)
    meta = data.get("metadata")
    if type(meta) is dict and _chars(meta) > MAX_NOTEBOOK_METADATA_CHARS:
        data["metadata"] = {key: meta[key] for key in KEPT_NOTEBOOK_METADATA
                            if key in meta and _chars(meta[key]) <= MAX_CELL_METADATA_CHARS}
        trimmed += 1
    return [f"oversized metadata removed from {trimmed} place(s)"] if trimmed else []


def _strip_cell(cell: dict) -> bool:
    """Drop a cell's outputs or attachments, and its metadata if oversized (its ``nbgrader`` entry
    kept when that is not); whether metadata was removed."""
    if cell.get("cell_type") == "code":
        if _plausible_outputs(cell):   # malformed ones are left for nbformat to refuse, as before
            cell["outputs"], cell["execution_count"] = [], None
    else:
        cell.pop("attachments", None)
    meta = cell.get("metadata")
    if type(meta) is dict and _chars(meta) > MAX_CELL_METADATA_CHARS:
        cell["metadata"] = {"nbgrader": meta["nbgrader"]} if type(meta.get("nbgrader")) is dict \
            and _chars(meta["nbgrader"]) <= MAX_CELL_METADATA_CHARS else {}
        return True
    return False


OUTPUT_TYPES = {"stream", "display_data", "execute_result", "error"}


def _plausible_outputs(cell: dict) -> bool:
    """Whether a code cell's outputs and execution count have the shapes nbformat accepts (checked
    shallowly: dropping them must not turn an invalid notebook into a valid one)."""
    count, outputs = cell.get("execution_count"), cell.get("outputs")
    return (count is None or type(count) is int) and type(outputs) is list and all(
        type(o) is dict and o.get("output_type") in OUTPUT_TYPES for o in outputs)


def _chars(value) -> int:
    try:
        return len(json.dumps(value))
    except (TypeError, ValueError, RecursionError):
        return MAX_NOTEBOOK_METADATA_CHARS + 1
