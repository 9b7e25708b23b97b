"""Whether a file in ``notebooks/`` holds a person's work, so that no course command overwrites it.

The build regenerates the student versions; a clone in which someone filled in the notebooks (the
student's path in the README) must never lose an answer to it. A student version as a build writes
it has no outputs, and every cell nbgrader marked carries a checksum of its own source
(``nbgrader.utils.compute_checksum``), so a filled-in answer cell shows whatever the release it came
from. ``work_in`` says why a file may hold work; ``guard`` refuses to replace or remove such files
(``WorkWouldBeLost``), or with ``force`` first moves them to a dated backup folder.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import nbformat

from . import conventions


class WorkWouldBeLost(RuntimeError):
    """Files the build would replace or remove hold a person's work; nothing in ``notebooks/`` was written."""


def is_hidden(path: Path, root: Path) -> bool:
    """Whether ``path`` lies in a hidden file or folder under ``root`` (``.ipynb_checkpoints``: Jupyter's, never the build's)."""
    return any(part.startswith(".") for part in path.relative_to(root).parts)


def work_in(path: Path) -> list[str]:
    """Why the file (or folder) at ``path`` may hold a person's work; empty for a student version as a build wrote it."""
    if path.is_dir() and not path.is_symlink():
        return [f"{p.relative_to(path)}: {'; '.join(reasons)}" for p in sorted(path.rglob("*"))
                if p.is_file() and not is_hidden(p, path) and (reasons := work_in(p))]
    if path.suffix != ".ipynb":
        return ["not a notebook (the build cannot tell whether someone wrote it)"]
    try:
        nb = nbformat.read(str(path), as_version=4)
    except Exception:  # noqa: BLE001 - whatever it is, it is not a notebook the build wrote
        return ["not a notebook the build could read"]
    return _edited_cells(nb) + _outputs(nb)


def _edited_cells(nb) -> list[str]:
    """The graded and answer cells whose source no longer matches nbgrader's checksum (filled in, edited)."""
    from nbgrader.utils import compute_checksum

    edited = []
    for cell in nb.cells:
        checksum = conventions.nbgrader_meta(cell).get("checksum")
        try:
            changed = checksum is not None and compute_checksum(cell) != checksum
        except Exception:  # noqa: BLE001 - metadata nbgrader cannot read: someone edited it
            changed = True
        if changed:
            edited.append(str(conventions.grade_id(cell) or "a cell"))
    return [f"answer or test cells changed since the build wrote them: {', '.join(edited)}"] if edited else []


def _outputs(nb) -> list[str]:
    ran = [c for c in nb.cells if c.cell_type == "code" and (c.get("outputs") or c.get("execution_count") is not None)]
    return [f"outputs in {len(ran)} cell(s) (it has been run)"] if ran else []


def backup_folder(parent: Path) -> Path:
    """A new folder ``notebooks-backup-<date>-<time>`` in ``parent`` (a suffix when that name is taken)."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    folder = parent / f"notebooks-backup-{stamp}"
    count = 1
    while folder.exists():
        count += 1
        folder = parent / f"notebooks-backup-{stamp}-{count}"
    return folder


def guard(paths: list[Path], notebooks_dir: Path, *, force: bool = False) -> list[tuple[Path, Path]]:
    """Before the build replaces or removes ``paths`` (files or folders under ``notebooks_dir``): refuse
    (``WorkWouldBeLost``, naming each file and how to keep it) if any holds work; with ``force``, move
    those to a backup folder beside ``notebooks_dir`` first. Returns the (original, backup) pairs moved."""
    at_risk = {path: reasons for path in paths if path.exists() and (reasons := work_in(path))}
    if not at_risk:
        return []
    if not force:
        lines = [f"  {path}: {'; '.join(reasons)}" for path, reasons in at_risk.items()]
        raise WorkWouldBeLost(
            f"refusing to overwrite {len(at_risk)} file(s) in {notebooks_dir} that hold someone's work:\n"
            + "\n".join(lines) + "\nNothing in that folder was written. To keep them, copy them somewhere else first "
            f"(e.g. cp -r {notebooks_dir} my-work), or run the build again with --force: it first moves each of them to "
            f"{notebooks_dir.parent / 'notebooks-backup-<date>-<time>'}/ and says where.")
    folder = backup_folder(notebooks_dir.parent)
    moved = []
    for path in at_risk:
        backup = folder / path.relative_to(notebooks_dir.parent)
        backup.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(path), str(backup))
        moved.append((path, backup))
    return moved
