"""Grading in shards gives the same grades as grading on one machine, and a merge never hides a gap.

* ``Shard``: every submission falls in exactly one shard, the same one on every run;
* ``grade --shard I/K`` on each shard, then ``merge``: the merged CSV and gradebook equal a
  single-machine grade of the same submissions, cell by cell; merging twice changes nothing;
* ``merge --report``: the class report of the merged shards equals one machine's, byte for byte;
* a missing or unfinished shard is reported by its index and nothing is merged, unless
  ``--allow-missing``.

The same comparison through a real Slurm cluster is in ``tests/grader/test_slurm.py``; both compare with
one single-machine grading of the class per session (``small_class`` in ``tests/conftest.py``).
"""

from __future__ import annotations

import csv
import json
import os
import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.course import conventions
from autograder.batch.class_report import REPORT_HTML, REPORT_JSON, write_report
from autograder.batch.grading import grade
from autograder.batch.shards import MARKER, Shard, ShardsIncomplete, merge
from conftest import SMALL_CLASS_LIMITS
from fixture_course import SMALL_CLASS as STUDENTS


def test_shard_parse_accepts_i_of_k_and_refuses_the_rest():
    assert Shard.parse("2/5") == Shard(2, 5)
    for bad in ("5/5", "-1/3", "1", "a/b", "1/0", ""):
        with pytest.raises(ValueError, match="I/K"):
            Shard.parse(bad)


def test_every_submission_falls_in_exactly_one_shard_and_always_the_same():
    keys = [(f"student{i}", assignment) for i in range(300) for assignment in ("01_next_token", "02_tokenization")]
    for count in (1, 2, 3, 7):
        owners = [[index for index in range(count) if Shard(index, count).owns(*key)] for key in keys]
        assert all(len(found) == 1 for found in owners)
        sizes = [sum(found == [index] for found in owners) for index in range(count)]
        assert min(sizes) > len(keys) / count / 2, f"shards far from balanced: {sizes}"
    # Stable across processes and machines: the hash is SHA-256, not Python's salted hash().
    digest = hashlib.sha256("ada\x0001_next_token".encode()).digest()
    assert Shard(int.from_bytes(digest[:8], "big") % 4, 4).owns("ada", "01_next_token")
    assert Shard(0, 3).owns("ada", "01_fixture") and Shard(1, 3).owns("fay", "01_fixture")
    assert Shard(2, 3).owns("bob", "01_fixture")


def test_merge_refuses_folders_that_are_not_shards(tmp_path):
    (tmp_path / "a").mkdir()
    with pytest.raises(ShardsIncomplete, match="no finished shard"):
        merge([tmp_path / "a"], tmp_path / "out")
    assert not (tmp_path / "out").exists()


def _csv(path: Path) -> list[tuple]:
    with open(path, newline="") as handle:
        return [(r["student_id"], r["assignment"], r["score"], r["max_score"], r["status"]) for r in csv.DictReader(handle)]


def gradebook_scores(db: Path) -> dict:
    """Every grade cell's score for every submission, read through nbgrader's own API."""
    from nbgrader.api import Gradebook

    scores = {}
    with Gradebook(f"sqlite:///{db}") as gradebook:
        for assignment in gradebook.assignments:
            for submission in assignment.submissions:
                for notebook in submission.notebooks:
                    for grade_entry in notebook.grades:
                        scores[(submission.student.id, assignment.name, notebook.name, grade_entry.name)] = (
                            grade_entry.auto_score, grade_entry.max_score, grade_entry.needs_manual_grade)
    return scores


@pytest.mark.slow
def test_three_shards_merged_equal_one_machine(small_class, tmp_path):
    # small_class: the class and its grades on one machine (`single`), shared with test_slurm.py
    submitted = small_class / "submitted"
    options = dict(workers=2, progress=False, solutions_dir=small_class / "solutions", limits=SMALL_CLASS_LIMITS)
    for index in range(3):
        rows = grade(submitted, tmp_path / f"shard-{index}", shard=Shard(index, 3), **options)
        assert rows and all(Shard(index, 3).owns(r.student_id, r.assignment) for r in rows), (index, rows)
    shards = [tmp_path / f"shard-{index}" for index in range(3)]

    report = merge(shards, tmp_path / "merged")
    assert (report.merged, report.missing, report.rows) == ([0, 1, 2], [], len(STUDENTS))
    single, merged = _csv(small_class / "single" / "grades.csv"), _csv(tmp_path / "merged" / "grades.csv")
    assert merged == single and len(merged) == len(STUDENTS)
    assert {r[0]: r[2] for r in merged} == {"ada": "3", "bob": "0", "cy": "3", "eve": "3", "fay": "0", "gus": "3"}
    expected = gradebook_scores(small_class / "single" / "gradebook.db")
    assert gradebook_scores(tmp_path / "merged" / "gradebook.db") == expected and expected
    for student in STUDENTS:
        assert (tmp_path / "merged" / "feedback" / student / "01_fixture" / "fixture.html").is_file(), student

    # nbgrader's own export reads the merged gradebook: every student, the same totals.
    exported = tmp_path / "export.csv"
    done = subprocess.run([sys.executable, "-m", "nbgrader", "export", f"--CourseDirectory.root={tmp_path / 'merged' / 'course'}",
                           f"--CourseDirectory.db_url=sqlite:///{tmp_path / 'merged' / 'gradebook.db'}",
                           f"--CsvExportPlugin.to={exported}"], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"})
    assert done.returncode == 0, done.stderr[-2000:]
    with open(exported, newline="") as handle:
        totals = {r["student_id"]: float(r["score"]) for r in csv.DictReader(handle)}
    assert totals == {"ada": 3.0, "bob": 0.0, "cy": 3.0, "eve": 3.0, "fay": 0.0, "gus": 3.0}, totals

    # Merging again rebuilds the same folder.
    before = (tmp_path / "merged" / "grades.csv").read_bytes()
    merge(shards, tmp_path / "merged")
    assert (tmp_path / "merged" / "grades.csv").read_bytes() == before
    assert gradebook_scores(tmp_path / "merged" / "gradebook.db") == expected

    # The command: nbgrader's SQLAlchemy warnings go to the log, not the terminal (issue 28).
    done = subprocess.run([sys.executable, "-m", "autograder", "merge", *map(str, shards), "--out", str(tmp_path / "merged"),
                           "--report"], capture_output=True, text=True, cwd=conventions.REPO_ROOT, timeout=300)
    assert done.returncode == 0 and "Warning" not in done.stdout + done.stderr, done.stdout + done.stderr
    assert done.stdout.startswith(f"merged 3 of 3 shards: {len(STUDENTS)} submissions\n"), done.stdout
    # Its class report is one machine's, report.json and report.html byte for byte, bob's group named by the
    # course's mutant (the report reads only what grading left in the folder: a merge must leave all of it).
    one_machine = tmp_path / "single"
    shutil.copytree(small_class / "single", one_machine, symlinks=True)
    write_report(one_machine)
    merged_report = json.loads((tmp_path / "merged" / REPORT_JSON).read_text(encoding="utf-8"))
    assert merged_report == json.loads((one_machine / REPORT_JSON).read_text(encoding="utf-8"))
    assert (tmp_path / "merged" / REPORT_HTML).read_bytes() == (one_machine / REPORT_HTML).read_bytes()
    groups = {tuple(g["students"]): g["mistake"] for g in merged_report["assignments"][0]["exercises"][0]["groups"]}
    assert groups == {("bob",): "Multiplies by three instead of two", ("fay",): None}, groups

    # A shard whose grades.csv disagrees with its gradebook is refused, naming the shard and the student.
    honest = (shards[2] / "grades.csv").read_text(encoding="utf-8")
    bob = next(line for line in honest.splitlines() if line.startswith("bob,"))
    assert bob.startswith("bob,01_fixture,0,3,"), bob
    (shards[2] / "grades.csv").write_text(honest.replace(bob, bob.replace("bob,01_fixture,0,3,", "bob,01_fixture,3,3,")),
                                          encoding="utf-8")
    shutil.rmtree(tmp_path / "merged")
    with pytest.raises(ShardsIncomplete) as refused:
        merge(shards, tmp_path / "merged")
    assert str(refused.value) == (f"shard 2 ({shards[2]}): its grades.csv disagrees with its gradebook: bob/01_fixture: "
                                  "grades.csv 3/3, gradebook 0/3. Nothing was merged (grade that shard again).")
    assert not (tmp_path / "merged").exists()
    (shards[2] / "grades.csv").write_text(honest, encoding="utf-8")

    # A shard that did not finish is named by its index; nothing is merged unless asked.
    merge(shards, tmp_path / "merged")
    shutil.rmtree(tmp_path / "merged")
    (shards[1] / MARKER).unlink()
    with pytest.raises(ShardsIncomplete) as refused:
        merge(shards, tmp_path / "merged")
    assert "missing or unfinished shards: 1" in str(refused.value) and "--shard I/3" in str(refused.value)
    assert not (tmp_path / "merged").exists()
    done = subprocess.run([sys.executable, "-m", "autograder", "merge", *map(str, shards), "--out", str(tmp_path / "merged")],
                          capture_output=True, text=True, cwd=conventions.REPO_ROOT, timeout=300)
    assert done.returncode == 1 and "missing or unfinished shards: 1" in done.stderr, done.stderr
    partial = merge(shards, tmp_path / "merged", allow_missing=True)
    assert partial.missing == [1] and partial.rows == len(STUDENTS) - 2   # fay and gus are shard 1's
    assert {r[0] for r in _csv(tmp_path / "merged" / "grades.csv")} == set(STUDENTS) - {"fay", "gus"}
