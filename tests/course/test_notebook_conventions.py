"""Every source notebook follows CONTRIBUTING.md (quick: no kernel is started)."""

from __future__ import annotations

import ast
import collections
import re

import pytest

from autograder.course import conventions, mutant_edits
from autograder.batch.flags import flags_for
from autograder.batch.tampering import tampering_for
from autograder.course.setup_cell import SETUP_GRADE_ID, setup_cell_source
from autograder.course.solution_source import load_solution

GRADE_ID = re.compile(r"^[A-Za-z0-9_-]+$")
ALLOWED_KEYS = {"schema_version", "grade", "solution", "locked", "grade_id", "points", "task", "checksum", "cell_type"}


@pytest.fixture
def nb(assignment):
    return load_solution(assignment)


def test_setup_cell_is_first_and_canonical(nb):
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    assert code_cells, "the notebook has no code cell"
    first = code_cells[0]
    assert conventions.grade_id(first) == SETUP_GRADE_ID, "the first code cell must be the set-up cell (grade_id 'setup')"
    assert first.source == setup_cell_source(), "set-up cell differs from autograder/course/setup_cell.py: run `python -m autograder build`"


def test_outputs_are_stripped(nb):
    dirty = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and (c.outputs or c.execution_count)]
    assert not dirty, f"cells {dirty} have outputs or execution counts; run `python -m autograder build` to strip them"


def test_kernelspec_is_python3(nb):
    assert nb.metadata.get("kernelspec", {}).get("name") == "python3"


def test_nbgrader_metadata_is_well_formed(nb):
    seen = set()
    for index, cell in enumerate(nb.cells):
        meta = conventions.nbgrader_meta(cell)
        if not meta:
            continue
        assert meta.get("schema_version") == 3, f"cell {index}: nbgrader schema_version must be 3"
        unknown = set(meta) - ALLOWED_KEYS
        assert not unknown, f"cell {index}: nbgrader rejects unknown metadata keys {unknown}"
        gid = meta.get("grade_id")
        assert gid and GRADE_ID.match(gid), f"cell {index}: grade_id {gid!r} must use letters, digits, _ and -"
        assert gid not in seen, f"cell {index}: grade_id {gid!r} is used twice"
        seen.add(gid)
        if meta.get("grade"):
            assert meta.get("locked"), f"cell {index} ({gid}): test cells must be locked"
            assert float(meta.get("points", 0)) > 0, f"cell {index} ({gid}): a test cell must be worth points"


def test_every_exercise_has_visible_and_hidden_tests(nb):
    exercises = conventions.exercises(nb)
    assert exercises, "a graded notebook needs at least one exercise"
    for exercise in exercises:
        solution = nb.cells[exercise.solution_index].source
        assert conventions.BEGIN_SOLUTION in solution and conventions.END_SOLUTION in solution, (
            f"{exercise.name}: the solution cell needs ### BEGIN SOLUTION / ### END SOLUTION")
        assert exercise.visible_index is not None, f"{exercise.name}: no visible test cell 'test_{exercise.name}'"
        assert exercise.hidden_index is not None, f"{exercise.name}: no hidden test cell 'test_{exercise.name}_hidden'"
        visible = nb.cells[exercise.visible_index].source
        assert conventions.BEGIN_HIDDEN not in visible, f"{exercise.name}: the visible test cell holds hidden tests"
        for index in exercise.hidden_indices:
            hidden = nb.cells[index].source
            gid = conventions.grade_id(nb.cells[index])
            assert conventions.BEGIN_HIDDEN in hidden and conventions.END_HIDDEN in hidden, (
                f"{gid}: a hidden test cell needs ### BEGIN HIDDEN TESTS / ### END HIDDEN TESTS")
            before, _, rest = hidden.partition(conventions.BEGIN_HIDDEN)
            _, _, after = rest.partition(conventions.END_HIDDEN)
            outside = [line for line in (before + after).splitlines() if line.strip()]
            assert all(line.lstrip().startswith("#") for line in outside), (
                f"{gid}: only comments may stand outside the hidden-test markers")


def ends_in_a_value(source: str) -> bool:
    """Whether a cell's last statement is an expression that may echo a value (``m.sum()``, ``x``,
    ``f(x)``); ``print(...)`` and the course's ``checks.*`` calls return None and are fine."""
    tree = ast.parse(source.replace(conventions.BEGIN_HIDDEN, "").replace(conventions.END_HIDDEN, ""))
    if not tree.body or not isinstance(tree.body[-1], ast.Expr):
        return False
    value = tree.body[-1].value
    if isinstance(value, ast.Call):
        func = value.func
        if isinstance(func, ast.Name) and func.id == "print":
            return False
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "checks":
            return False
    return True


def test_honest_answers_are_not_flagged(nb):
    # The flags column asks a person to read the code; the course's own answers (and the code released
    # inside answer cells, such as notebook 09's GPT) must leave it empty, or every honest row is flagged.
    for exercise in conventions.exercises(nb):
        source = conventions.strip_solution_markers(nb.cells[exercise.solution_index].source)
        assert flags_for(source) == [], f"{exercise.name}: the solution's answer cell is flagged {flags_for(source)}"
        # Tampering (issue 28) fails every inputs-unchanged check of a notebook: never for an honest answer.
        assert tampering_for(source) == [], f"{exercise.name}: the solution reaches into the grader: {tampering_for(source)}"


@pytest.mark.parametrize("source, echoes", [
    ("x = 1\nprint(x)", False), ("checks.assert_true(True, name='x')", False), ("x = 1", False),
    ("m = torch.ones(2)\nm.sum()", True), ("f(3)", True), ("x", True), ("x + 1", True),
])
def test_the_last_expression_check(source, echoes):
    assert ends_in_a_value(source) is echoes


def test_test_cells_do_not_end_in_an_expression(nb):
    """nbgrader reads the value of a test cell's last expression as a partial score."""
    for cell in nb.cells:
        if conventions.is_graded_cell(cell):
            assert not ends_in_a_value(cell.source), (
                f"{conventions.grade_id(cell)}: the last line is an expression that may show a value (nbgrader would "
                "read it as a partial score); end with a print(...), a checks.* call or an assert")


def test_every_exercise_has_three_mutants(assignment, nb):
    names = {e.name for e in conventions.exercises(nb)}
    entries = mutant_edits.read_edits(assignment.mutants_path)
    unknown = {e.exercise for e in entries} - names
    assert not unknown, f"mutants name exercises that do not exist: {sorted(unknown)}"
    counts = collections.Counter(e.exercise for e in entries)
    short = {name: counts[name] for name in names if counts[name] < 3}
    assert not short, f"every exercise needs at least 3 mutants in {assignment.mutants_path}; too few: {short}"
    for entry in entries:
        for edit in entry.edits:
            assert not set(conventions.MARKERS) & {line.strip() for line in edit.with_}, (
                f"{entry.name}: mutants hold plain code, no markers")


def test_every_mutant_edit_applies_to_the_current_solution(assignment, nb):
    """Each mutant's edits find their lines exactly once in the current solution cell (no kernel)."""
    mutants = mutant_edits.assignment_mutants(assignment, nb)   # StaleMutant names the first that does not
    entries = mutant_edits.read_edits(assignment.mutants_path)
    assert sum(map(len, mutants.values())) == len(entries) > 0
    for group in mutants.values():
        for mutant in group:
            compile(mutant.code, mutant.name, "exec")
            assert mutant.code != mutant_edits.solution_cells(nb)[mutant.exercise], f"{mutant.name} changes nothing"


STATED_POINTS = re.compile(r"\*Points: (.*?)\*", re.DOTALL)
HEADING_POINTS = re.compile(r"\(((?:\d+ \+ )*\d+) points\)")


def _points_of_test_cells(nb, exercise: str) -> int:
    total = 0
    for cell in nb.cells:
        meta = conventions.nbgrader_meta(cell)
        gid = meta.get("grade_id", "") if meta and meta.get("grade") else ""
        if gid == f"test_{exercise}" or gid.startswith(f"test_{exercise}_hidden"):
            total += int(meta.get("points", 0))
    return total


def test_the_points_a_notebook_states_are_the_points_its_test_cells_give(nb):
    # "*Points: 1 visible, 2 hidden (...), 1 hidden (...)*" and "(1 + 2 + 1 points)" in the prose above an
    # exercise are what a student plans by: they must add up to the exercise's test cells.
    prose, wrong = [], []
    for cell in nb.cells:
        meta = conventions.nbgrader_meta(cell)
        if cell.cell_type == "markdown":
            prose.append(cell.source)
        elif meta and meta.get("solution") and not meta.get("grade"):
            exercise, text = meta["grade_id"], "\n".join(prose)
            given = _points_of_test_cells(nb, exercise)
            statements = [STATED_POINTS.findall(text)[-1:], HEADING_POINTS.findall(text)[-1:]]
            for found in filter(None, statements):
                stated = sum(int(n) for n in re.findall(r"(\d+)(?:\s+(?:visible|hidden)|\s*(?:\+|$))", found[0]))
                if stated != given:
                    wrong.append(f"{exercise}: the prose says {found[0][:80]!r} = {stated}, its test cells give {given}")
            prose = []
        elif meta and meta.get("grade"):
            prose = []
    assert not wrong, "\n".join(wrong)


TABLE_ROW = re.compile(r"^\| [^|]+ \| `(\w+)` \|.*\| ((?:\d+ \+ )*\d+) \|$", re.MULTILINE)


def test_the_exercise_tables_points_are_the_points_the_test_cells_give(nb):
    # The table of exercises at the top of a notebook ("| 4 | `PairCounter` | ... | 1 + 5 |").
    exercises = {conventions.nbgrader_meta(c)["grade_id"] for c in nb.cells
                 if conventions.nbgrader_meta(c).get("solution") and not conventions.nbgrader_meta(c).get("grade")}
    rows = [row for c in nb.cells if c.cell_type == "markdown" for row in TABLE_ROW.findall(c.source)]
    wrong = [f"{name}: the table says {stated}, its test cells give {_points_of_test_cells(nb, name)}"
             for name, stated in rows if name in exercises
             and sum(int(n) for n in stated.split("+")) != _points_of_test_cells(nb, name)]
    assert not wrong, "\n".join(wrong)
