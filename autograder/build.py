"""``python -m autograder build``: regenerate ``notebooks/`` (student versions) from ``solutions/``.

Steps: write the canonical set-up cell into every solution notebook and strip its outputs (the
sources are kept tidy by the same command that builds from them), run nbgrader's
``generate_assignment`` on each assignment in a throw-away course folder, and copy the release
versions into ``notebooks/``. A file is written only when its content changes, so running the build
twice changes nothing.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import nbformat

from . import conventions
from .course_directory import course_config, link_sources, make_api
from .setup_cell import SETUP_GRADE_ID, release_problems, setup_cell_source


class BuildError(RuntimeError):
    """nbgrader could not build a student version; the message holds its log."""


def notebook_text(nb) -> str:
    """The exact text a notebook is stored as (stable key order and indentation)."""
    text = nbformat.writes(nb)
    return text if text.endswith("\n") else text + "\n"


def write_if_changed(path: Path, text: str) -> bool:
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return True


def tidy_source_notebook(nb) -> None:
    """Canonical set-up cell, no outputs, no execution counts (in place)."""
    setup_cells = [c for c in nb.cells if conventions.grade_id(c) == SETUP_GRADE_ID]
    if len(setup_cells) != 1:
        raise BuildError(f"expected exactly one set-up cell (grade_id {SETUP_GRADE_ID!r}), found {len(setup_cells)}")
    setup_cells[0].source = setup_cell_source()
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None


def build(solutions_dir: Path = conventions.SOLUTIONS_DIR, notebooks_dir: Path = conventions.NOTEBOOKS_DIR,
          *, tidy_sources: bool = True, only: set[str] | None = None, release: bool = False) -> list[Path]:
    """Build every student version (or only the assignments named in ``only``); return the files that changed.

    ``release``: the build is for publishing the course; refuse it (before writing anything) while
    the repository URL in ``autograder/setup_cell.py`` is a placeholder.
    """
    if release:
        problems = release_problems()
        if problems:
            raise BuildError("refusing a release build: " + "; ".join(problems))
    changed: list[Path] = []
    all_assignments = conventions.assignments(solutions_dir)
    if only:
        unknown = sorted(only - {a.name for a in all_assignments})
        if unknown:
            raise BuildError(f"no assignment named {', '.join(unknown)} in {solutions_dir}")
    assignments = [a for a in all_assignments if not only or a.name in only]
    if tidy_sources:
        for assignment in assignments:
            nb = conventions.read_notebook(assignment.source_path)
            tidy_source_notebook(nb)
            if write_if_changed(assignment.source_path, notebook_text(nb)):
                changed.append(assignment.source_path)

    with tempfile.TemporaryDirectory(prefix="course-build-") as tmp:
        root = Path(tmp)
        link_sources(root, solutions_dir)
        api = make_api(course_config(root, root / "gradebook.db"))
        for assignment in assignments:
            result = api.generate_assignment(assignment.name, force=True, create=True)
            if not result["success"]:
                raise BuildError(f"nbgrader generate_assignment failed for {assignment.name}:\n"
                                 f"{result.get('log', '')}\n{result.get('error', '')}")
            released = root / "release" / assignment.name
            target = notebooks_dir / assignment.name
            expected = set()
            for path in sorted(released.rglob("*")):
                if path.is_dir():
                    continue
                relative = path.relative_to(released)
                expected.add(relative)
                if path.suffix == ".ipynb":
                    text = notebook_text(nbformat.read(str(path), as_version=4))
                    if write_if_changed(target / relative, text):
                        changed.append(target / relative)
                elif write_if_changed(target / relative, path.read_text(encoding="utf-8")):
                    changed.append(target / relative)
            for path in sorted(target.rglob("*")):
                if path.is_file() and path.relative_to(target) not in expected:
                    path.unlink()
                    changed.append(path)

    known = {a.name for a in all_assignments}
    if notebooks_dir.exists():
        for folder in notebooks_dir.iterdir():
            if folder.is_dir() and folder.name not in known:
                shutil.rmtree(folder)
                changed.append(folder)
    return changed
