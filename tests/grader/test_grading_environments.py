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

from autograder.course import conventions, submissions
from autograder.sandbox import confinement
from autograder.sandbox import bubblewrap
from autograder.batch.grading import grade
from autograder.sandbox.limits import Limits
from autograder.sandbox.bubblewrap import SandboxUnavailable, bwrap_available
from conftest import TEST_SANDBOX
from fixture_course import answer, make_course

pytestmark = pytest.mark.slow
needs_bwrap = pytest.mark.skipif(not bwrap_available(), reason="bubblewrap is not usable here (apt-get install bubblewrap)")

GRADE_SCRIPT = """
import sys
from pathlib import Path
from autograder.batch.grading import grade
from autograder.sandbox.limits import Limits
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


def _venv_over_the_running_environment(venv: Path) -> None:
    """A new venv that imports the packages of the environment running the tests.

    ``--system-site-packages`` would show the *base* interpreter's packages, which in a maintainer's
    venv lack nbgrader and the course: the new venv gets a ``.pth`` file that adds the running
    environment's site-packages instead (``site.addsitedir``, so their own ``.pth`` files, the
    editable install's among them, are read too).
    """
    import site

    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    found = subprocess.run([str(venv / "bin" / "python"), "-c", "import site; print(site.getsitepackages()[0])"],
                           capture_output=True, text=True, check=True)
    outer = [path for path in site.getsitepackages() if Path(path).is_dir()]
    lines = [f"import site; site.addsitedir({path!r})" for path in outer]
    (Path(found.stdout.strip()) / "_running_environment.pth").write_text("\n".join(lines) + "\n")


@needs_bwrap
@pytest.mark.parametrize("where", ["inside the repository", "under /tmp"])
def test_grading_from_a_virtual_environment(where, tmp_path):
    if where == "inside the repository":
        venv = conventions.REPO_ROOT / f".venv-grading-test-{os.getpid()}"
    else:
        venv = Path("/tmp") / f"course-venv-test-{os.getpid()}"
    try:
        _venv_over_the_running_environment(venv)
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
    command = bubblewrap.bwrap_prefix(scratch, [conventions.REPO_ROOT]) + [
        "sh", "-c", f"grep CapEff /proc/self/status; ls {conventions.SOLUTIONS_DIR} 2>&1 | wc -l; "
                    "umount /tmp 2>&1 || echo umount-refused"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert "CapEff:\t0000000000000000" in done.stdout, done.stdout + done.stderr
    assert "umount-refused" in done.stdout
    listing = done.stdout.splitlines()[1].strip()
    assert listing in ("0", "1"), f"the solutions folder is visible in the sandbox: {done.stdout}"


def test_auto_refuses_to_grade_without_isolation(monkeypatch, tmp_path):
    monkeypatch.setattr(bubblewrap, "_BWRAP_WORKS", False)
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
    # The daemon is forked by the answer cell itself: the runner's audit hook reports the fork (a child could take
    # over the runner's pipes and answer for it), so no report of unchanged inputs is believed (issue 47).
    assert rows[0].score == 0, rows[0]
    page = (tmp_path / "out" / "feedback" / "daemon" / "01_fixture" / "fixture.html").read_text(encoding="utf-8")
    assert "os.fork" in page, "the feedback page should name the route"
    assert marker.exists(), "the daemon never started, so this test proves nothing"
    size = marker.stat().st_size
    time.sleep(3)
    assert marker.stat().st_size == size, "a process started by the submission kept running after its notebook was graded"


def test_a_machine_where_the_student_process_cannot_start_stops_grading_with_the_reason(tmp_path):
    """A broken machine (the course not importable in the sandbox, too little memory) must not hand
    every student an error in turn: grading stops before anything is written, and says what to fix."""
    limits = Limits(sandbox=TEST_SANDBOX)
    confinement.check_runner_starts(limits, [])  # this machine is fine
    with pytest.raises(confinement.RunnerCannotStart) as raised:
        confinement.check_runner_starts(limits, [], command=[sys.executable, "-c", "import no_such_course_package"])
    message = str(raised.value)
    assert "nothing was graded" in message and "No module named 'no_such_course_package'" in message, message
    assert "pip install -e ." in message, message
    with pytest.raises(confinement.RunnerCannotStart) as raised:
        confinement.check_runner_starts(limits, [], command=[sys.executable, "-c", "x = bytearray(2**40)"])
    assert "MemoryError" in str(raised.value) and "--memory-mb" in str(raised.value), str(raised.value)


def test_the_grade_command_refuses_a_memory_limit_pytorch_cannot_start_in(tmp_path):
    (tmp_path / "submissions").mkdir()
    done = subprocess.run([sys.executable, "-m", "autograder", "grade", str(tmp_path / "submissions"), "--out",
                           str(tmp_path / "out"), "--memory-mb", "100"], capture_output=True, text=True,
                          cwd=conventions.REPO_ROOT, timeout=120)
    assert done.returncode == 2 and "--memory-mb" in done.stderr and "1024" in done.stderr, done.stderr
    assert not (tmp_path / "out").exists()
