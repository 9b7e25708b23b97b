"""Grading works wherever Python lives and whoever runs it, and refuses to pretend it is isolated.

* a virtual environment inside the repository (``.venv``, the common layout) or under ``/tmp``:
  both are hidden by the sandbox's own mounts unless it binds them back;
* as root (CI and containers): the sandbox drops every capability;
* without bubblewrap: ``auto`` refuses with a clear message, and with ``--sandbox none`` no process a
  submission starts outlives its notebook.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autograder import conventions, sandbox, submissions
from autograder.grading import grade
from autograder.sandbox import Limits, SandboxUnavailable, bwrap_available
from fixture_course import answer, make_course

pytestmark = pytest.mark.slow
needs_bwrap = pytest.mark.skipif(not bwrap_available(), reason="bubblewrap is not usable here (apt-get install bubblewrap)")

GRADE_SCRIPT = """
import sys
from pathlib import Path
from autograder.grading import grade
from autograder.sandbox import Limits
root = Path(sys.argv[1])
rows = grade(root / "submitted", root / "out", workers=2, progress=False, solutions_dir=root / "solutions",
             limits=Limits(cell_timeout_s=60, notebook_timeout_s=300, sandbox="bwrap"))
print(sys.prefix)
for row in rows:
    print(row.student_id, row.score, row.status, row.detail)
"""


def _course_with_two_students(root: Path) -> None:
    assignment = make_course(root)
    submissions.write(answer(assignment, root), root / "submitted" / "right" / "01_fixture" / "fixture.ipynb")
    submissions.write(answer(assignment, root, "import torch\ndef double(x):\n    return 3 * x\n"),
                      root / "submitted" / "wrong" / "01_fixture" / "fixture.ipynb")


@needs_bwrap
@pytest.mark.parametrize("where", ["inside the repository", "under /tmp"])
def test_grading_from_a_virtual_environment(where, tmp_path):
    if where == "inside the repository":
        venv = conventions.REPO_ROOT / f".venv-grading-test-{os.getpid()}"
    else:
        venv = Path("/tmp") / f"course-venv-test-{os.getpid()}"
    try:
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], check=True)
        _course_with_two_students(tmp_path)
        done = subprocess.run([str(venv / "bin" / "python"), "-c", GRADE_SCRIPT, str(tmp_path)],
                              capture_output=True, text=True, timeout=900, cwd=conventions.REPO_ROOT)
        assert done.returncode == 0, done.stderr[-3000:]
        lines = done.stdout.strip().splitlines()
        assert Path(lines[0]).resolve() == venv.resolve(), f"the grader did not run from the venv: {lines[0]}"
        rows = {line.split()[0]: line.split(maxsplit=3)[1:] for line in lines[1:]}
        assert rows["right"][:2] == ["3.0", "ok"], lines
        assert rows["wrong"][:2] == ["0.0", "ok"], lines
    finally:
        shutil.rmtree(venv, ignore_errors=True)


@needs_bwrap
def test_sandbox_drops_every_capability_and_hides_the_course(tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    command = sandbox._bwrap_prefix(scratch, [conventions.REPO_ROOT]) + [
        "sh", "-c", f"grep CapEff /proc/self/status; ls {conventions.SOLUTIONS_DIR} 2>&1 | wc -l; "
                    "umount /tmp 2>&1 || echo umount-refused"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert "CapEff:\t0000000000000000" in done.stdout, done.stdout + done.stderr
    assert "umount-refused" in done.stdout
    listing = done.stdout.splitlines()[1].strip()
    assert listing in ("0", "1"), f"the solutions folder is visible in the sandbox: {done.stdout}"


def test_auto_refuses_to_grade_without_isolation(monkeypatch, tmp_path):
    monkeypatch.setattr(sandbox, "_BWRAP_WORKS", False)
    _course_with_two_students(tmp_path)
    with pytest.raises(SandboxUnavailable, match="--sandbox none"):
        grade(tmp_path / "submitted", tmp_path / "out", progress=False, solutions_dir=tmp_path / "solutions",
              limits=Limits(sandbox="auto"))


DAEMON = """import os, sys, time, torch
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        for _ in range(600):
            with open({marker!r}, "a") as log:
                log.write("still here\\n")
            time.sleep(0.2)
        os._exit(0)
    os._exit(0)
def double(x):
    return 2 * x
"""


def test_no_process_outlives_its_notebook_without_the_sandbox(tmp_path):
    assignment = make_course(tmp_path)
    marker = tmp_path / "daemon-was-here"
    submissions.write(answer(assignment, tmp_path, DAEMON.format(marker=str(marker))),
                      tmp_path / "submitted" / "daemon" / "01_fixture" / "fixture.ipynb")
    rows = grade(tmp_path / "submitted", tmp_path / "out", progress=False, solutions_dir=tmp_path / "solutions",
                 limits=Limits(cell_timeout_s=60, notebook_timeout_s=300, sandbox="none"))
    assert rows[0].score == 3, rows[0]
    assert marker.exists(), "the daemon never started, so this test proves nothing"
    size = marker.stat().st_size
    time.sleep(3)
    assert marker.stat().st_size == size, "a process started by the submission kept running after its notebook was graded"
