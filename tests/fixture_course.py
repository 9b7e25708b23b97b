"""A one-notebook course built on the fly (``01_fixture``), for testing the grader on damaged submissions: the
one-exercise course of ``double``, or any exercises a test gives, and a class of its notebooks graded."""

from __future__ import annotations

from pathlib import Path

from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from autograder.course import conventions, submissions
from autograder.course.build import build
from autograder.course.solution_source import write_text_source

SOLUTION = '''import torch

def double(x):
    """Return 2 * x for a tensor x (any shape)."""
    ### BEGIN SOLUTION
    return 2 * x
    ### END SOLUTION'''

VISIBLE = '''import torch
from utils import checks
checks.assert_close(double(torch.tensor([1.0, -2.0])), torch.tensor([2.0, -4.0]), name="double")
print("visible tests passed")'''

HIDDEN = '''# Hidden tests for double run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks
checks.assert_close(double(torch.arange(6.0).reshape(2, 3)), torch.arange(6.0).reshape(2, 3) * 2, name="double")
### END HIDDEN TESTS'''


def _meta(grade_id: str, **flags) -> dict:
    meta = {"schema_version": 3, "grade": False, "solution": False, "locked": True, "grade_id": grade_id, "task": False}
    meta.update(flags)
    return {"nbgrader": meta}


def make_course(root: Path, hidden: tuple[str, ...] = (HIDDEN,)) -> conventions.Assignment:
    """``root/solutions/01_fixture/fixture.ipynb`` and its student version in ``root/notebooks``; ``hidden``:
    the hidden test cells (``test_double_hidden``, then ``test_double_hidden_2``, ...; 2 points each)."""
    tests = [("test_double", 1, VISIBLE)]
    tests += [("test_double_hidden" + (f"_{i + 1}" if i else ""), 2, source) for i, source in enumerate(hidden)]
    return make_exercises_course(root, {"double": (SOLUTION, tests)})


def make_exercises_course(root: Path, exercises: dict[str, tuple[str, list[tuple[str, int, str]]]],
                          contracts: str | None = None) -> conventions.Assignment:
    """The fixture notebook with ``exercises`` (name -> (solution cell, [(grade id, points, test cell), ...])) after
    its set-up cell, built into ``root/notebooks``; ``contracts``: the text of its ``contracts/01_fixture.toml``."""
    cells = [new_markdown_cell("# Fixture"), new_code_cell("", metadata=_meta("setup"))]
    for name, (solution, tests) in exercises.items():
        cells.append(new_code_cell(solution, metadata=_meta(name, solution=True, locked=False)))
        cells += [new_code_cell(source, metadata=_meta(grade_id, grade=True, points=points))
                  for grade_id, points, source in tests]
    nb = new_notebook(cells=cells, metadata={"kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python",
                                                            "name": "python3"}, "language_info": {"name": "python"}})
    source = root / "solutions" / "01_fixture" / "fixture.ipynb"   # derived from fixture.py by the build
    source.parent.mkdir(parents=True)
    write_text_source(source, nb)
    if contracts is not None:
        (root / "contracts").mkdir()
        (root / "contracts" / "01_fixture.toml").write_text(contracts, encoding="utf-8")
    build(root / "solutions", root / "notebooks")
    return conventions.Assignment("01_fixture", source)


def release_path(root: Path) -> Path:
    return root / "notebooks" / "01_fixture" / "fixture.ipynb"


def grade_class(root: Path, notebooks: dict) -> tuple[dict, Path]:
    """Each student's notebook (student -> nbformat notebook) submitted and graded in the test sandbox, two workers,
    30 s a cell and 120 s a notebook: (student -> GradeRow, the OUT folder)."""
    from autograder.batch.grading import grade
    from autograder.sandbox.limits import Limits
    from conftest import TEST_SANDBOX

    for student, nb in notebooks.items():
        submissions.write(nb, root / "submitted" / student / "01_fixture" / "fixture.ipynb")
    out = root / "out"
    rows = grade(root / "submitted", out, workers=2, progress=False, solutions_dir=root / "solutions",
                 limits=Limits(cell_timeout_s=30, notebook_timeout_s=120, sandbox=TEST_SANDBOX))
    return {row.student_id: row for row in rows}, out


def answer(assignment: conventions.Assignment, root: Path, code: str | None = None):
    """The student version with ``double`` answered by ``code`` (the solution when None)."""
    return submissions.filled_in(assignment, {} if code is None else {"double": code}, release_path=release_path(root))


# A small class (test_shards, test_slurm). Names chosen so that each of 3 shards owns at least one student
# (checked in test_shards).
SMALL_CLASS = {"ada": None, "bob": "import torch\ndef double(x):\n    return 3 * x\n", "eve": None,
               "fay": "def double(x):\n    raise RuntimeError('not yet')\n", "gus": None, "cy": None}


# bob's mistake as a named mutant of the fixture course, so that the class report of the small class labels a
# group (test_shards compares the report of the merged shards with one machine's).
SMALL_CLASS_MUTANT = '"""Multiplies by three instead of two."""\nimport torch\n\n\ndef double(x):\n    return 3 * x\n'


def add_mutants(root: Path, mutants: dict[str, str]) -> None:
    """Named mutants of ``double`` (name -> module text, its docstring the mistake) in the fixture course's
    ``root/mutants``, imported as the course's mutant files are."""
    from autograder.course.mutant_import import import_files

    folder = root / "mutants" / "01_fixture"
    folder.mkdir(parents=True)
    for name, code in mutants.items():
        (folder / f"double__{name}.py").write_text(code, encoding="utf-8")
    import_files(sorted(folder.glob("*.py")), solutions_dir=root / "solutions", mutants_dir=root / "mutants")


def make_small_class(root: Path) -> Path:
    """The fixture course in ``root`` (with bob's mistake as a named mutant) and ``SMALL_CLASS``'s submissions
    in ``root/submitted`` (returned)."""
    assignment = make_course(root)
    add_mutants(root, {"triples": SMALL_CLASS_MUTANT})
    for student, code in SMALL_CLASS.items():
        submissions.write(answer(assignment, root, code), root / "submitted" / student / "01_fixture" / "fixture.ipynb")
    return root / "submitted"


def make_deep_folder(parent: Path, levels: int, name: str = "d") -> Path:
    """``parent/name/name/...``, ``levels`` folders deep (as a zipped course folder can hold), made one level
    at a time through descriptors, so no path the kernel reads is longer than one name; returns the first."""
    import os

    parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(levels):
            os.mkdir(name, dir_fd=fd)
            inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
    finally:
        os.close(fd)
    return parent / name


def remove_deep_folder(top: Path) -> None:
    """Remove what ``make_deep_folder`` made (and anything in it), one level at a time: ``shutil.rmtree`` (and
    pytest's clean-up of old temporary folders) recurse once per level and fail on 1,100 of them."""
    import os
    import shutil

    if not top.exists():
        return
    fds = [os.open(top.parent, os.O_RDONLY | os.O_DIRECTORY)]
    names = [top.name]
    try:
        while True:   # down to the deepest folder, keeping a descriptor of each level
            fds.append(os.open(names[-1], os.O_RDONLY | os.O_DIRECTORY, dir_fd=fds[-1]))
            inner = [e.name for e in os.scandir(fds[-1]) if e.is_dir(follow_symlinks=False)]
            for entry in os.scandir(fds[-1]):
                if not entry.is_dir(follow_symlinks=False):
                    os.unlink(entry.name, dir_fd=fds[-1])
            if not inner:
                break
            names.append(inner[0])
            if len(inner) > 1:
                for other in inner[1:]:
                    shutil.rmtree(other, dir_fd=fds[-1])
        while len(fds) > 1:   # and back up, removing each level from its parent
            os.close(fds.pop())
            os.rmdir(names.pop(), dir_fd=fds[-1])
    finally:
        for fd in fds:
            os.close(fd)
