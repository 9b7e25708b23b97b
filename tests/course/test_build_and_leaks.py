"""notebooks/ is exactly what the build makes, and nothing students receive leaks an answer."""

from __future__ import annotations

import re
import shutil

import pytest

from autograder import selfgrade
from autograder.course import conventions
from autograder.course.build import build
from autograder.course.solution_source import load_solution

STUDENT_FACING = [conventions.NOTEBOOKS_DIR, conventions.REPO_ROOT / "utils", conventions.REPO_ROOT / "autograder"]


@pytest.fixture(scope="module")
def first_build(tmp_path_factory):
    """One build of the whole course into an empty folder (notebooks/ and selfgrade/), for both tests
    below: each build of every notebook and bundle takes seconds (issue 35)."""
    root = tmp_path_factory.mktemp("first_build")
    build(conventions.SOLUTIONS_DIR, root / "notebooks", tidy_sources=False, bundle_dir=root / "selfgrade")
    return root


def test_notebooks_are_current(first_build):
    built = first_build / "notebooks"
    expected = {p.relative_to(built): p.read_text(encoding="utf-8") for p in built.rglob("*") if p.is_file()}
    bundles = {p.name: p.read_text() for p in (first_build / "selfgrade").iterdir()}
    shipped = {p.name: p.read_text() for p in selfgrade.BUNDLE_DIR.glob("*.bin")}
    assert bundles == shipped, ("the self-grading bundles in autograder/selfgrade are out of date; "
                                "run `python -m autograder build` and commit the result")
    actual = {p.relative_to(conventions.NOTEBOOKS_DIR): p.read_text(encoding="utf-8")
              for p in conventions.NOTEBOOKS_DIR.rglob("*") if p.is_file() and ".ipynb_checkpoints" not in p.parts}
    stale = sorted(str(p) for p in expected if actual.get(p) != expected[p])
    extra = sorted(str(p) for p in actual if p not in expected)
    assert not stale and not extra, (
        f"notebooks/ is out of date (stale: {stale}, not built from solutions/: {extra}); "
        "run `python -m autograder build` and commit the result")


def test_build_twice_changes_nothing(first_build, tmp_path):
    shutil.copytree(first_build, tmp_path, dirs_exist_ok=True)     # the second build works on a copy
    built = tmp_path / "notebooks"
    assert build(conventions.SOLUTIONS_DIR, built, tidy_sources=False, bundle_dir=tmp_path / "selfgrade") == []


def _student_files():
    for folder in STUDENT_FACING:
        for path in folder.rglob("*"):
            if path.is_file() and path.suffix in {".ipynb", ".py", ".md", ".txt", ".json"} and "__pycache__" not in path.parts:
                yield path, path.read_text(encoding="utf-8", errors="replace")


def _region_lines(source: str, begin: str, end: str) -> list[str]:
    lines, inside = [], False
    for line in source.splitlines():
        if line.strip() == begin:
            inside = True
        elif line.strip() == end:
            inside = False
        elif inside:
            lines.append(line.strip())
    return lines


def _distinctive(line: str) -> bool:
    """A line long and specific enough that finding it elsewhere means it was copied."""
    return len(line) >= 40 and not line.startswith(("#", '"""', "import ", "from ", "print(")) and re.search(r"[=(]", line) is not None


def test_no_solution_region_or_hidden_test_reaches_students():
    secret_lines: dict[str, str] = {}
    for assignment in conventions.assignments():
        for cell in load_solution(assignment).cells:
            for line in _region_lines(cell.source, conventions.BEGIN_SOLUTION, conventions.END_SOLUTION):
                if _distinctive(line):
                    secret_lines[line] = f"solution in {assignment.name}"
            for line in _region_lines(cell.source, conventions.BEGIN_HIDDEN, conventions.END_HIDDEN):
                if _distinctive(line):
                    secret_lines[line] = f"hidden test in {assignment.name}"
    problems = []
    for path, text in _student_files():
        for marker in conventions.MARKERS if path.suffix == ".ipynb" or "utils" in path.parts else ():
            if re.search(rf'(^|")\s*{re.escape(marker)}\s*(\\n)?("|$)', text, re.MULTILINE):
                problems.append(f"{path}: contains the marker line {marker!r}")
        stripped = {line.strip() for line in text.replace("\\n", "\n").splitlines()}
        for line, what in secret_lines.items():
            if line in stripped:
                problems.append(f"{path}: contains a line of a {what}: {line[:80]!r}")
    assert not problems, "\n".join(problems)


def test_student_stubs_raise_not_implemented():
    for assignment in conventions.assignments():
        nb = conventions.read_notebook(assignment.release_path)
        for cell in nb.cells:
            if conventions.is_solution_cell(cell):
                assert "raise NotImplementedError()" in cell.source, f"{assignment.name}/{conventions.grade_id(cell)}: no stub"
