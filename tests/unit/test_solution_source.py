"""The solution notebooks as text (``autograder.course.solution_source``): the text and the notebook give each
other back exactly, the derived notebook is the one that was committed before the text took its place,
a one-line change to an exercise is a one-line change of the text, and the text is never released."""

from __future__ import annotations

import difflib
import json
import subprocess

import nbformat
import pytest

from autograder.course import conventions, solution_source
from autograder.course.solution_source import load_solution, notebook_text, notebook_to_text, text_to_notebook
from fixture_course import make_course

ASSIGNMENTS = conventions.assignments()
# The last commit of the main line with solutions/NN_slug/slug.ipynb in git, and the commit that replaced them
# by text: a notebook whose text has not changed since is compared with what was committed before it.
BEFORE_THE_TEXT, THE_TEXT = "12914a1", "4087aa2"


def test_text_to_notebook_to_text_is_the_same_text(assignment):
    text = assignment.text_path.read_text(encoding="utf-8")
    nb = text_to_notebook(text)
    assert notebook_to_text(nb) == text
    assert notebook_text(nb) == assignment.source_path.read_text(encoding="utf-8"), "the derived notebook is stale"
    nbformat.validate(nb)


def _committed(assignment) -> dict | None:
    path = f"solutions/{assignment.name}/{assignment.source_path.name}"
    changed = subprocess.run(["git", "diff", "--quiet", THE_TEXT, "--", str(assignment.text_path)],
                             cwd=conventions.REPO_ROOT, capture_output=True)
    if changed.returncode != 0:   # edited since (or no git here): nothing to compare with
        return None
    done = subprocess.run(["git", "show", f"{BEFORE_THE_TEXT}:{path}"], cwd=conventions.REPO_ROOT,
                          capture_output=True, text=True)
    return json.loads(done.stdout) if done.returncode == 0 else None


def test_the_derived_notebook_is_the_one_committed_before_the_text_cell_by_cell(assignment):
    committed = _committed(assignment)
    if committed is None:
        pytest.skip(f"{assignment.name}: not in git as a notebook at {BEFORE_THE_TEXT}, or its text changed since "
                    f"{THE_TEXT} (or this copy has no .git)")
    derived = json.loads(notebook_text(load_solution(assignment)))
    assert derived["metadata"] == committed["metadata"]
    assert len(derived["cells"]) == len(committed["cells"])
    for index, (new, old) in enumerate(zip(derived["cells"], committed["cells"])):
        assert new == old, f"{assignment.name} cell {index} differs"
    assert derived == committed


def test_a_one_line_change_to_an_exercise_is_a_one_line_change_of_the_text():
    assignment = ASSIGNMENTS[0]
    nb = load_solution(assignment)
    cell = next(c for c in nb.cells if conventions.is_solution_cell(c))
    lines = cell.source.split("\n")
    where = next(i for i, line in enumerate(lines) if line.strip() == conventions.END_SOLUTION) - 1
    lines[where] += "  # changed"
    before = assignment.text_path.read_text(encoding="utf-8").splitlines()
    cell.source = "\n".join(lines)
    after = notebook_to_text(nb).splitlines()
    changed = [line for line in difflib.unified_diff(before, after, lineterm="", n=0)
               if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert len(changed) == 2 and changed[0].startswith("-") and changed[1] == "+" + changed[0][1:] + "  # changed"


def test_import_turns_a_notebook_into_its_text_and_drops_outputs(tmp_path):
    nb = load_solution(ASSIGNMENTS[0])
    code = next(c for c in nb.cells if c.cell_type == "code")
    code.outputs, code.execution_count = [nbformat.v4.new_output("stream", text="printed\n")], 3
    path = tmp_path / "01_next_token" / "next_token.ipynb"
    path.parent.mkdir()
    nbformat.write(nb, str(path))
    target = solution_source.import_notebook(path)
    assert target == path.with_suffix(".py") and not path.exists()
    assert target.read_text(encoding="utf-8") == ASSIGNMENTS[0].text_path.read_text(encoding="utf-8")
    code.source += "\nx = 1"
    nbformat.write(nb, str(path))
    with pytest.raises(ValueError, match="--replace"):
        solution_source.import_notebook(path)
    assert "x = 1" in solution_source.import_notebook(path, replace=True).read_text(encoding="utf-8")


@pytest.mark.slow
def test_the_text_source_is_never_released_and_a_lone_notebook_is_refused(tmp_path):
    make_course(tmp_path)
    assert (tmp_path / "solutions" / "01_fixture" / "fixture.py").is_file()
    released = sorted(p.name for p in (tmp_path / "notebooks" / "01_fixture").iterdir())
    assert released == ["fixture.ipynb"]
    (tmp_path / "solutions" / "01_fixture" / "fixture.py").unlink()
    with pytest.raises(ValueError, match="source import"):
        conventions.assignments(tmp_path / "solutions")


def test_one_assignment_by_name_and_an_unknown_name_lists_those_there_are():
    assert conventions.assignment("04_scaling").source_path == ASSIGNMENTS[3].source_path
    with pytest.raises(KeyError, match="01_next_token"):
        conventions.assignment("99_missing")
