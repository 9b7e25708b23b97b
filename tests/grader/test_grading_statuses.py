"""The grader on damaged and hostile submissions: every case gets a score and an honest status."""

from __future__ import annotations

import csv

import pytest

from autograder.course import submissions
from autograder.batch.grading import grade
from autograder.sandbox.limits import Limits
from conftest import TEST_SANDBOX
from fixture_course import answer, make_course

pytestmark = pytest.mark.slow

# student_id -> (answer code or a special file, expected score of 3, expected status)
CASES = {
    "correct": (None, 3, "ok"),
    "wrong": ("import torch\ndef double(x):\n    return 3 * x", 0, "ok"),
    "warns": ("import torch, sys, warnings\ndef double(x):\n    warnings.warn('deprecated thing')\n"
              "    print('progress 50%', file=sys.stderr)\n    return 2 * x", 3, "ok"),
    "crash": ("import os\nos._exit(3)", 0, "kernel died"),
    "dies_in_test": ("import os, torch\ndef double(x):\n    os._exit(0)", 0, "kernel died"),
    "loops": ("import torch\ndef double(x):\n    while True:\n        pass", 0, "timeout"),
    "sys_exit": ("import sys, torch\ndef double(x):\n    return 2 * x\nsys.exit(0)", 3, "ok"),
    "misnamed": (None, 3, "ok"),
}
# Right or wrong by chance: only seeding makes the score repeatable (test_grading_is_deterministic).
COIN = ("import random, numpy as np, torch\n"
        "def double(x):\n"
        "    heads = torch.rand(1).item() + np.random.rand() + random.random() > 1.5\n"
        "    return 2 * x if heads else 3 * x\n")
COIN_STUDENTS = ("coin_a", "coin_b")


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("course")
    assignment = make_course(root)
    subs = root / "submitted"
    for student, (code, _, _) in CASES.items():
        submissions.write(answer(assignment, root, code), subs / student / "01_fixture" / "fixture.ipynb")
    (subs / "invalid_json" / "01_fixture").mkdir(parents=True)
    (subs / "invalid_json" / "01_fixture" / "fixture.ipynb").write_text('{"cells": [', encoding="utf-8")
    (subs / "empty_file" / "01_fixture").mkdir(parents=True)
    (subs / "empty_file" / "01_fixture" / "fixture.ipynb").write_text("", encoding="utf-8")
    submissions.write(answer(assignment, root), subs / "misnamed" / "01_fixture" / "my_work.ipynb")
    (subs / "no_notebook" / "01_fixture").mkdir(parents=True)
    (subs / "no_notebook" / "01_fixture" / "notes.txt").write_text("I forgot to upload it", encoding="utf-8")
    submissions.write(answer(assignment, root), subs / "wrong_folder" / "99_nothing" / "fixture.ipynb")
    for student in COIN_STUDENTS:             # test_grading_is_deterministic grades one of them again
        submissions.write(answer(assignment, root, COIN), subs / student / "01_fixture" / "fixture.ipynb")
    out = root / "out"
    rows = grade(subs, out, workers=2, progress=False, solutions_dir=root / "solutions",
                 limits=Limits(cell_timeout_s=15, notebook_timeout_s=120, sandbox=TEST_SANDBOX))
    return {r.student_id: r for r in rows}, out, root


@pytest.mark.parametrize("student", sorted(CASES))
def test_score_and_status(graded, student):
    rows, _, _ = graded
    _, score, status = CASES[student]
    row = rows[student]
    assert (row.score, row.status) == (score, status), f"{student}: got {row.score} with status {row.status!r} ({row.detail})"


@pytest.mark.parametrize("student,status", [("invalid_json", "invalid notebook"), ("empty_file", "invalid notebook"),
                                            ("no_notebook", "missing notebook")])
def test_unreadable_submissions_score_zero_with_a_reason(graded, student, status):
    rows, _, _ = graded
    assert (rows[student].score, rows[student].max_score, rows[student].status) == (0, 3, status)


def test_unknown_assignment_is_reported_not_graded(graded):
    rows, _, _ = graded
    assert rows["wrong_folder"].status == "unknown assignment" and rows["wrong_folder"].score is None
    assert "it holds fixture.ipynb: expected wrong_folder/01_fixture/fixture.ipynb" in rows["wrong_folder"].detail


@pytest.mark.parametrize("student,words", [("invalid_json", "could not be read as a notebook"),
                                           ("empty_file", "could not be read as a notebook"),
                                           ("no_notebook", "No notebook was found in your submission")])
def test_unreadable_submissions_get_a_short_feedback_page(graded, student, words):
    _, out, _ = graded
    page = (out / "feedback" / student / "01_fixture" / "fixture.html").read_text(encoding="utf-8")
    assert words in page and "Content-Security-Policy" in page and "Score: 0." in page, page


def test_csv_has_one_row_per_submission(graded):
    rows, out, _ = graded
    with open(out / "grades.csv", newline="") as handle:
        table = list(csv.DictReader(handle))
    assert [r["student_id"] for r in table] == sorted(rows)
    assert set(table[0]) >= {"student_id", "assignment", "score", "max_score", "status"}


def test_feedback_hides_hidden_test_source(graded):
    _, out, _ = graded
    html = (out / "feedback" / "wrong" / "01_fixture" / "fixture.html").read_text(encoding="utf-8")
    assert "arange(6.0)" not in html and "BEGIN HIDDEN TESTS" not in html
    assert "test_double_hidden" in html and "failed" in html


def test_grading_is_deterministic(graded, tmp_path):
    """Submissions graded again, from scratch, get the scores they got in the class's batch, and two copies of one
    submission get the same score (everything is seeded)."""
    rows, _, root = graded
    again = grade(root / "submitted", tmp_path / "out", workers=2, progress=False, solutions_dir=root / "solutions",
                  students=set(COIN_STUDENTS), limits=Limits(cell_timeout_s=15, notebook_timeout_s=120, sandbox=TEST_SANDBOX))
    regraded = {r.student_id: (r.score, r.status) for r in again if r.student_id in COIN_STUDENTS}
    first, second = ((rows[student].score, rows[student].status) for student in COIN_STUDENTS)
    assert regraded == dict(zip(COIN_STUDENTS, (first, second))) and first[0] is not None and first[1] == "ok", regraded
    assert first == second, "two identical submissions must score the same"
