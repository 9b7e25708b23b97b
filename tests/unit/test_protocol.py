"""The grader's statuses: one enum, the strings of the CSV, every one documented for instructors."""

from __future__ import annotations

import csv
import io
import json

from autograder import grading, report
from autograder.protocol import JUDGE_STATUSES, UNREADABLE, Status
from autograder.conventions import REPO_ROOT


def test_statuses_are_written_as_their_strings():
    assert json.dumps({"status": Status.KERNEL_DIED}) == '{"status": "kernel died"}'
    assert f"{Status.GRADER_ERROR}" == str(Status.GRADER_ERROR) == "grader error"
    row = report.GradeRow("ann", "01_next_token", None, None, Status.MISSING_NOTEBOOK, "no notebook")
    out = io.StringIO()
    csv.writer(out).writerow([row.status])
    assert out.getvalue().strip() == "missing notebook"
    assert report.GradeRow.from_dict(json.loads(json.dumps(row.as_dict()))).status == Status.MISSING_NOTEBOOK


def test_every_status_is_explained_in_the_instructor_guide():
    guide = (REPO_ROOT / "autograder" / "README.md").read_text(encoding="utf-8")
    missing = [s.value for s in Status if f"`{s.value}`" not in guide]
    assert not missing, f"statuses the instructor guide does not explain: {missing}"


def test_the_judge_statuses_and_the_unreadable_ones_are_disjoint():
    assert set(JUDGE_STATUSES).isdisjoint(UNREADABLE)
    assert grading.STATUSES == JUDGE_STATUSES
    assert grading.verify_result(b"not json", b"k").status == Status.ERROR
