"""The solution notebooks as text: ``solutions/NN_slug/slug.py`` in Jupytext's percent format.

The text file is the course's source, the one people edit and review: each cell is a ``# %%`` block
whose line carries the cell's id and its metadata (nbgrader's, as JSON), markdown cells are ``# %%
[markdown]`` blocks of comments, and no output is stored. The notebook nbgrader needs is derived from
it: ``load_solution`` gives it in memory, and ``derived_notebook`` writes it beside the text as
``slug.ipynb`` (ignored by git, rewritten whenever the text changes), where nbgrader's ``source``
folder finds it. The two are the same notebook, cell by cell (ids, sources, types, metadata), and
the notebook's own metadata (kernel, ``course`` budget) is in the text's header.

``python -m autograder source import PATH.ipynb`` turns a notebook into its text source.
"""

from __future__ import annotations

import copy
import os
import tempfile
from pathlib import Path

import jupytext
import nbformat

TEXT_FORMAT = "py:percent"
NOTEBOOK_METADATA = "kernelspec,language_info,course,-jupytext.text_representation"
TRAILING_NEWLINES = "source_trailing_newlines"    # a cell whose source ends with newlines (kept exactly)
_READ_ONLY_KEYS = ("lines_to_next_cell",)          # jupytext's layout hints, never the course's


def notebook_to_text(nb) -> str:
    """The percent-format text of a solution notebook (ids and metadata on each cell's line, no outputs)."""
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        meta = {"id": cell.pop("id")}
        stripped = cell.source.rstrip("\n")
        if stripped != cell.source:
            meta[TRAILING_NEWLINES] = len(cell.source) - len(stripped)
            cell.source = stripped
        cell.metadata = {**meta, **cell.metadata}
        cell.pop("outputs", None)
        cell.pop("execution_count", None)
    nb.metadata["jupytext"] = {"notebook_metadata_filter": NOTEBOOK_METADATA, "cell_metadata_filter": "all"}
    return jupytext.writes(nb, fmt=TEXT_FORMAT)


def text_to_notebook(text: str):
    """The notebook of a percent-format text (``nbformat`` 4.5, code cells without outputs)."""
    nb = jupytext.reads(text, fmt=TEXT_FORMAT)
    nb.metadata.pop("jupytext", None)
    nb.nbformat, nb.nbformat_minor = 4, 5
    for cell in nb.cells:
        for key in _READ_ONLY_KEYS:
            cell.metadata.pop(key, None)
        cell["id"] = str(cell.metadata.pop("id"))
        cell.source += "\n" * int(cell.metadata.pop(TRAILING_NEWLINES, 0))
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return nbformat.from_dict(nb)


def notebook_text(nb) -> str:
    """The exact text a notebook is stored as (stable key order and indentation)."""
    text = nbformat.writes(nb)
    return text if text.endswith("\n") else text + "\n"


def load_solution(assignment):
    """The solution notebook of ``assignment`` (a ``conventions.Assignment``), read from its text source."""
    return text_to_notebook(Path(assignment.text_path).read_text(encoding="utf-8"))


def write_text_source(notebook_path: Path, nb) -> Path:
    """Store ``nb`` as the text source of the notebook that would be at ``notebook_path`` (``slug.py`` beside it)."""
    target = Path(notebook_path).with_suffix(".py")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(notebook_to_text(nb), encoding="utf-8")
    return target


def write_solution(assignment, nb) -> bool:
    """Store ``nb`` as the assignment's text source (and its derived notebook); False if nothing changed."""
    text = notebook_to_text(nb)
    changed = _write_if_changed(Path(assignment.text_path), text)
    derived_notebook(assignment, force=True)
    return changed


def derived_notebook(assignment, force: bool = False) -> Path:
    """Write the notebook nbgrader reads, ``slug.ipynb`` beside the text source, when the text is newer
    (or ``force``) and the notebook differs."""
    text, notebook = Path(assignment.text_path), Path(assignment.source_path)
    if force or not notebook.exists() or notebook.stat().st_mtime_ns < text.stat().st_mtime_ns:
        if not _write_if_changed(notebook, notebook_text(load_solution(assignment))):
            os.utime(notebook)    # the same notebook: newer than the text from now on
    return notebook


def _write_if_changed(path: Path, text: str) -> bool:
    """Write atomically (several processes may derive the same notebook at once); False if it was so already."""
    try:
        if path.read_text(encoding="utf-8") == text:
            return False
    except (OSError, UnicodeDecodeError):
        pass
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        out.write(text)
    os.replace(temporary, path)
    return True


def import_notebook(path: Path, keep: bool = False, replace: bool = False) -> Path:
    """Turn ``path`` (``solutions/NN_slug/slug.ipynb``) into its text source ``slug.py`` beside it,
    check that the text gives the notebook back cell by cell, and delete the .ipynb unless ``keep``.
    A text source that is there already and says otherwise is replaced only with ``replace``."""
    nb = nbformat.read(str(path), as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    text = notebook_to_text(nb)
    if notebook_text(text_to_notebook(text)) != notebook_text(nb):
        raise ValueError(f"{path}: its text form does not give the same notebook back")
    target = path.with_suffix(".py")
    if target.exists() and target.read_text(encoding="utf-8") != text and not replace:
        raise ValueError(f"{target} exists and differs from {path}'s text: to replace it, import with --replace")
    target.write_text(text, encoding="utf-8")
    if not keep:
        path.unlink()
    return target
