"""Issue 47, part 4: a batch leaves nothing in the temporary folder. Judges forked from one server end by
``os._exit`` (no atexit hook runs), a judge killed for its time limit removes nothing itself, and each judge
makes a workspace and a made-up ``/etc`` for its sandbox: before, one batch left 157 folders in /tmp.

A small batch of the fixture course is graded with a private ``TMPDIR`` (nothing else on the machine writes
there): two right answers, one whose cells loop forever (the cell time limit stops each call and the
runner is restarted), one whose judge is killed by SIGKILL while its runner runs. Every entry that was not
there before is a leftover."""

from __future__ import annotations

import os
import signal
import tempfile
import threading
import time

import pytest

from autograder.batch import grading
from autograder.course import submissions
from autograder.judge import client
from autograder.sandbox import processes
from autograder.sandbox.limits import Limits
from conftest import TEST_SANDBOX
from fixture_course import answer, make_course

pytestmark = pytest.mark.slow

LOOPS = "import torch\ndef double(x):\n    while True:\n        pass\n"
STUDENTS = {"ada": None, "loops": LOOPS, "killed": None, "zed": None}


def _kill_once_its_runner_runs(judge) -> None:
    deadline = time.monotonic() + 120
    while not processes._children(judge.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    os.killpg(judge.pid, signal.SIGKILL)


def test_a_batch_leaves_nothing_in_the_temporary_folder(tmp_path, monkeypatch):
    root = tmp_path / "course"
    root.mkdir()
    assignment = make_course(root)
    subs = root / "submitted"
    for student, code in STUDENTS.items():
        submissions.write(answer(assignment, root, code), subs / student / "01_fixture" / "fixture.ipynb")
    private = tmp_path / "tmp"
    private.mkdir()
    monkeypatch.setenv("TMPDIR", str(private))        # the judges and the fork server, started from here
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    real_run_judge = grading.run_judge
    killed = []

    def run_judge(job, limits, judge=None):
        if "killed" in str(job.submission_dir):
            judge = judge or client.start_judge()
            killed.append(judge)
            threading.Thread(target=_kill_once_its_runner_runs, args=(judge,), daemon=True).start()
        return real_run_judge(job, limits, judge=judge)

    monkeypatch.setattr(grading, "run_judge", run_judge)
    before = set(os.listdir(private))
    rows = {r.student_id: r for r in grading.grade(
        subs, root / "out", workers=2, progress=False, solutions_dir=root / "solutions",
        limits=Limits(cell_timeout_s=3, notebook_timeout_s=120, sandbox=TEST_SANDBOX))}
    left = sorted(set(os.listdir(private)) - before)
    print(f"sandbox {TEST_SANDBOX}: temporary folder entries before {len(before)}, after {len(before) + len(left)}, "
          f"new {len(left)}")
    assert [(s, rows[s].status) for s in STUDENTS] == [("ada", "ok"), ("loops", "timeout"), ("killed", "error"),
                                                       ("zed", "ok")], [rows[s].detail for s in STUDENTS]
    assert killed and killed[0].poll() is not None
    assert not left, f"left in the temporary folder: {left}"
