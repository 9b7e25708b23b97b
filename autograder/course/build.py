"""``python -m autograder build``: regenerate ``notebooks/`` (student versions) from ``solutions/``.

Steps: write the canonical set-up cell into every solution notebook and strip its outputs (the
sources are kept tidy by the same command that builds from them), run nbgrader's
``generate_assignment`` on each assignment in a throw-away course folder, and copy the release
versions into ``notebooks/``. A file is written only when its content changes, so running the build
twice changes nothing; a student version that holds someone's work is never replaced or removed
(``student_work``: the build refuses, or with ``force`` moves it to a dated backup first).
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from . import contracts, conventions, student_work
from .. import selfgrade
from .course_directory import course_config, link_sources, make_api
from .setup_cell import SETUP_GRADE_ID, release_problems, setup_cell_source
from .solution_source import load_solution, notebook_text, write_solution


class BuildError(RuntimeError):
    """nbgrader could not build a student version; the message holds its log."""


def _same_text(path: Path, text: str) -> bool:
    """Whether the file at ``path`` holds exactly ``text`` (False when it is missing or not UTF-8 text)."""
    try:
        return path.is_file() and path.read_text(encoding="utf-8") == text
    except (OSError, UnicodeDecodeError):
        return False


def tidy_source_notebook(nb) -> None:
    """Canonical set-up cell, no outputs, no execution counts (in place)."""
    setup_cells = [c for c in nb.cells if conventions.grade_id(c) == SETUP_GRADE_ID]
    if len(setup_cells) != 1:
        raise BuildError(f"expected exactly one set-up cell (grade_id {SETUP_GRADE_ID!r}), found {len(setup_cells)}")
    setup_cells[0].source = setup_cell_source()
    # Its code is an installer (about 110 lines): folded in JupyterLab, Notebook 7 and VS Code, where a
    # student reads the prose and runs it; unfolded with a click.
    metadata = {**setup_cells[0].metadata, "jupyter": {"source_hidden": True}}
    setup_cells[0].metadata = nbformat.from_dict(dict(sorted(metadata.items())))   # as nbformat writes it
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None


def add_self_grading_cell(nb, assignment_name: str) -> None:
    """Append the self-grading cells (public edition) to a student version, in place, with fixed ids."""
    from nbformat.v4 import new_code_cell, new_markdown_cell

    cells = [new_markdown_cell(
        selfgrade.HEADING + "\n\n"
        "The next cell runs every test of this notebook, the hidden ones too, on the answers written in "
        "it, and prints your points per exercise with the reason for each failure. Save the notebook "
        "first: it grades the saved notebook, run afresh, so an answer counts even if you never ran its "
        "cell (where the notebook's file cannot be found, it grades what this kernel holds, and says so)."),
        new_code_cell(selfgrade.cell_source(assignment_name))]
    for cell, ident in zip(cells, ("self-grading-heading", "self-grading")):
        if nb.get("nbformat_minor", 0) >= 5:
            cell["id"] = ident   # stable, so that building twice gives the same file
        else:
            cell.pop("id", None)
    nb.cells.extend(cells)


class Built(list):
    """The files a build changed (a list of paths), ``removed``: those of them it deleted (a private edition's
    bundles, a notebook no longer released), and ``backups``: the (original, backup) pairs of the files with
    someone's work in them that ``force`` moved aside first."""

    backups: list[tuple[Path, Path]]
    removed: list[Path]

    def __init__(self, changed=(), backups=(), removed=()):
        super().__init__(changed)
        self.backups = list(backups)
        self.removed = list(removed)


@dataclass
class _Planned:
    """What the build will do to ``notebooks/`` and the bundles, decided before anything is written."""

    writes: dict = field(default_factory=dict)     # path -> new text (only files whose text changes)
    removals: list = field(default_factory=list)   # files and folders to remove


def build(solutions_dir: Path = conventions.SOLUTIONS_DIR, notebooks_dir: Path = conventions.NOTEBOOKS_DIR,
          *, tidy_sources: bool = True, only: set[str] | None = None, release: bool = False,
          self_grading: bool = True, bundle_dir: Path | None = None, force: bool = False) -> Built:
    """Build every student version (or only the assignments named in ``only``); return the files that changed.

    ``release``: the build is for publishing the course; refuse it (before writing anything) while
    the repository URL in ``autograder/course/setup_cell.py`` is a placeholder.

    ``self_grading`` (the public edition): each student version ends with the self-grading cell, and
    the tests it runs are written to ``bundle_dir`` (default ``autograder/selfgrade`` beside
    ``notebooks_dir``). Without it (a private edition for a graded class) neither is shipped and
    existing bundles are removed.

    A file in ``notebooks_dir`` that the build would replace or remove and that holds someone's work
    (``student_work.work_in``: answers filled in, outputs, a file the build did not write) is never
    lost: the build raises ``WorkWouldBeLost`` naming them before writing anything there, or with
    ``force`` first moves them to a dated backup folder beside ``notebooks_dir`` (``Built.backups``).
    """
    bundle_dir = bundle_dir or notebooks_dir.parent / "autograder" / "selfgrade"
    problems = release_problems() if release else []
    if problems:
        raise BuildError("refusing a release build: " + "; ".join(problems))
    all_assignments = conventions.assignments(solutions_dir)
    assignments = _selected(all_assignments, only, solutions_dir)
    changed: list[Path] = []
    if tidy_sources:
        changed += _tidy_sources(assignments)
    planned = _Planned()
    with tempfile.TemporaryDirectory(prefix="course-build-") as tmp:
        root = Path(tmp)
        link_sources(root, solutions_dir)
        api = make_api(course_config(root, root / "gradebook.db"))
        for assignment in assignments:
            released = _generate(api, root, assignment.name)
            _plan_release(released, notebooks_dir / assignment.name, assignment.name, self_grading, planned)
            _plan_bundle(assignment, bundle_dir, self_grading, planned)
    _plan_unknown_folders(notebooks_dir, {a.name for a in all_assignments}, planned)
    at_stake = [p for p in list(planned.writes) + planned.removals if notebooks_dir in p.parents]
    backups = student_work.guard(at_stake, notebooks_dir, force=force)
    return Built(changed + _apply(planned), backups, planned.removals)


def _apply(planned: _Planned) -> list[Path]:
    """Write and remove what was planned; return the paths changed, in the order planned."""
    for path, text in planned.writes.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for path in planned.removals:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
    return list(planned.writes) + planned.removals


def _selected(all_assignments: list, only: set[str] | None, solutions_dir: Path) -> list:
    """The assignments named in ``only`` (all when it is empty), in course order; an unknown name is an error."""
    if only:
        unknown = sorted(only - {a.name for a in all_assignments})
        if unknown:
            raise BuildError(f"no assignment named {', '.join(unknown)} in {solutions_dir}")
    return [a for a in all_assignments if not only or a.name in only]


def _tidy_sources(assignments: list) -> list[Path]:
    """Tidy each solution notebook in place (``tidy_source_notebook``); return those rewritten."""
    changed = []
    for assignment in assignments:
        nb = load_solution(assignment)
        tidy_source_notebook(nb)
        if write_solution(assignment, nb):
            changed.append(assignment.text_path)
    return changed


def _generate(api, root: Path, name: str) -> Path:
    """Run nbgrader's generate_assignment on one assignment; return the folder of its release files."""
    result = api.generate_assignment(name, force=True, create=True)
    if not result["success"]:
        raise BuildError(f"nbgrader generate_assignment failed for {name}:\n"
                         f"{result.get('log', '')}\n{result.get('error', '')}")
    return root / "release" / name


def _plan_release(released: Path, target: Path, assignment_name: str, self_grading: bool,
                  planned: _Planned) -> None:
    """Plan ``target`` to hold exactly the release files (notebooks with the self-grading cells when
    ``self_grading``); hidden files there (Jupyter's checkpoints) are not the build's and are left alone."""
    expected = set()
    for path in sorted(released.rglob("*")):
        if path.is_dir():
            continue
        relative = path.relative_to(released)
        expected.add(relative)
        if path.suffix == ".ipynb":
            released_nb = nbformat.read(str(path), as_version=4)
            if self_grading:
                add_self_grading_cell(released_nb, assignment_name)
            text = notebook_text(released_nb)
        else:
            text = path.read_text(encoding="utf-8")
        if not _same_text(target / relative, text):
            planned.writes[target / relative] = text
    if target.is_dir():
        planned.removals += [path for path in sorted(target.rglob("*")) if path.is_file()
                             and not student_work.is_hidden(path, target) and path.relative_to(target) not in expected]


def _plan_bundle(assignment, bundle_dir: Path, self_grading: bool, planned: _Planned) -> None:
    """The assignment's self-grading bundle (its tests), or its removal from a private edition."""
    bundle = bundle_dir / f"{assignment.name}.bin"
    if self_grading:
        data = selfgrade.make_bundle(load_solution(assignment), contracts.for_judge(assignment)).decode("ascii")
        if not _same_text(bundle, data):
            planned.writes[bundle] = data
    elif bundle.exists():
        planned.removals.append(bundle)


def _plan_unknown_folders(notebooks_dir: Path, known: set[str], planned: _Planned) -> None:
    """The student versions of assignments that no longer exist in ``solutions/`` (hidden folders are not the build's)."""
    if notebooks_dir.exists():
        planned.removals += [folder for folder in sorted(notebooks_dir.iterdir())
                             if folder.is_dir() and folder.name not in known and not folder.name.startswith(".")]
