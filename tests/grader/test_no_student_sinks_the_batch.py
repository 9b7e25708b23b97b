"""No student sinks the batch (issue 47, part 3): one `grade` command over the fixture course
(``tests/fixture_course.py``: one exercise, 1 visible + 2 hidden points) with a red team's submissions
beside an honest classmate.

Before: a folder nested 1,100 levels deep stopped the whole batch (RecursionError while intake walked it
for a hint: exit 1, no grades.csv); a path too long for the staging folder, stray nbgrader metadata
(an old schema) and a cell the student marked as graded were each a `grader error`; a notebook built to
blow up syntax highlighting took the grader to gigabytes and wrote a 25 MB feedback page. Now the
command exits 0, every submission has its row with the student's status and a reason, the classmate has
full marks, and every notebook has a feedback page under the cap.
"""

from __future__ import annotations

import csv

import nbformat
import pytest

from autograder.__main__ import main as autograder_main
from autograder.batch import feedback_bounds, submission_files
from autograder.course import submissions
from conftest import TEST_SANDBOX
from fixture_course import answer, make_course, make_deep_folder, remove_deep_folder

pytestmark = pytest.mark.slow

NB = "fixture.ipynb"
# Ten cells of comment lines: about 900,000 tokens in all, each cell under the 100 kB the flags parse and
# 900 kB under the 1 MB they parse per submission, so the answer is graded in full (3/3): only the page is bounded.
BOMB_CELLS = 10
BOMB_CELL = "#\n" * 45_000

# student -> (score, max_score, status, words the detail must contain)
EXPECTED = {
    "honest": (3, 3, "ok", []),
    "deep": (0, 3, "invalid submission", [f"folders nested more than {submission_files.MAX_FOLDER_DEPTH} levels deep "
                                          "(in data/)"]),
    "long_name": (0, 3, "invalid submission", ["a path in the submission is too long", "the grader takes 1,024"]),
    "old_schema": (3, 3, "ok", ["nbgrader metadata removed from 1 of the student's own cell(s)",
                                "'mine' (schema version 1)"]),
    "marked_graded": (3, 3, "ok", ["'my_test' (marked as graded)"]),
    "bomb": (3, 3, "ok", ["feedback page shortened in"]),
}


def own_cell(source: str, **nbgrader) -> nbformat.NotebookNode:
    return nbformat.v4.new_code_cell(source, metadata={"nbgrader": nbgrader})


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("course")
    assignment = make_course(root)
    subs, out = root / "submitted", root / "out"

    def put(student: str, nb=None, folder: str = "01_fixture"):
        return submissions.write(nb if nb is not None else answer(assignment, root), subs / student / folder / NB)

    put("honest")
    deep = [make_deep_folder(put("deep").parent / "data", 1100)]                     # beside the notebook
    put("deep_elsewhere")                                                              # the batch crasher: where
    deep.append(make_deep_folder(subs / "deep_elsewhere" / "course_copy", 1100))       # intake looked for a hint
    nested = put("long_name").parent / "/".join(["n" * 200] * 5)
    nested.mkdir(parents=True)
    (nested / ("results_" + "x" * 60 + ".txt")).write_text("1", encoding="utf-8")
    old = answer(assignment, root)
    old.cells.append(own_cell("y = 1", schema_version=1, grade=False, solution=False, locked=False, grade_id="mine"))
    put("old_schema", old)
    marked = answer(assignment, root)
    marked.cells.append(own_cell("print('my own test')", schema_version=3, grade=True, solution=False, locked=False,
                                 grade_id="my_test", points=5, task=False))
    put("marked_graded", marked)
    bomb = answer(assignment, root)
    bomb.cells += [nbformat.v4.new_code_cell(BOMB_CELL) for _ in range(BOMB_CELLS)]
    put("bomb", bomb)
    try:
        code = autograder_main(["grade", str(subs), "--out", str(out), "--solutions", str(root / "solutions"),
                                "--workers", "1", "--cell-timeout", "30", "--notebook-timeout", "180",
                                "--sandbox", TEST_SANDBOX, "--allow-self-grading-bundles"])
    finally:
        for top in deep:
            remove_deep_folder(top)   # shutil.rmtree (and pytest's clean-up) recurse once per level
    with open(out / "grades.csv", newline="", encoding="utf-8") as handle:
        rows = {(r["student_id"], r["assignment"]): r for r in csv.DictReader(handle)}
    return code, rows, out


def test_the_batch_finishes_with_exit_status_0_and_a_row_for_every_submission(graded):
    code, rows, _ = graded
    assert code == 0
    assert sorted(rows) == sorted([(s, "01_fixture") for s in EXPECTED] + [("deep_elsewhere", "01_fixture"),
                                                                           ("deep_elsewhere", "course_copy")])
    assert not [key for key, row in rows.items() if row["status"] == "grader error"], rows


@pytest.mark.parametrize("student", sorted(EXPECTED))
def test_each_submission_has_the_students_status_and_a_reason(graded, student):
    _, rows, _ = graded
    row = rows[student, "01_fixture"]
    score, max_score, status, words = EXPECTED[student]
    assert (float(row["score"]), float(row["max_score"]), row["status"]) == (score, max_score, status), row
    assert all(word in row["detail"] for word in words), row
    assert bool(row["detail"]) is (student != "honest"), row


def test_a_deep_folder_where_an_assignment_should_be_is_its_reason_and_the_notebook_beside_it_is_graded(graded):
    _, rows, _ = graded
    assert (rows["deep_elsewhere", "01_fixture"]["score"], rows["deep_elsewhere", "01_fixture"]["status"]) == ("3", "ok")
    hint = rows["deep_elsewhere", "course_copy"]
    assert hint["status"] == "unknown assignment" and "folders nested more than 32 levels deep (in d/)" in hint["detail"]


@pytest.mark.parametrize("student", sorted(EXPECTED) + ["deep_elsewhere"])
def test_every_notebook_has_a_feedback_page_under_the_cap(graded, student):
    _, _, out = graded
    page = out / "feedback" / student / "01_fixture" / "fixture.html"
    size = page.stat().st_size
    assert size < feedback_bounds.MAX_FEEDBACK_PAGE_BYTES, size
    text = page.read_text(encoding="utf-8")
    if EXPECTED.get(student, (0, 0, "ok"))[2] == "invalid submission":
        assert "could not use the folder you submitted" in text and "Score: 0." in text
    if student == "bomb":
        assert size < 2 * 2**20 and feedback_bounds.shortened_count(text) >= BOMB_CELLS - 1, size
