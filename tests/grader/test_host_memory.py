"""Host memory a submission can take outside what a process's limits see (issue 28): each attack with its
exact row, the host's shared memory and System V segments before, at their peak and after, and the
grader's and its children's peak memory printed.

* ``memfd_hoard``: ``memfd_create`` files written and kept open, never mapped (resident in no
  process; 25 of 255 MB once took the host's shared memory from 18 MB to 6.4 GB, status ``ok``);
* ``sysv_hoard``: System V segments made, filled and detached (12 of 512 MB were once left on the host).

Each attack is right (``2 * x``) only if it kept everything it asked for; it must score 0, its answer
cell stopped by the grader with the reason, and classmates in the same batch keep full marks. Graded
with bubblewrap and with ``--sandbox none`` (where the runner gets its own IPC namespace when the
grader may make one, and the watch removes the segments otherwise).
"""

from __future__ import annotations

import resource
import threading
import time
from pathlib import Path

import pytest

from autograder.course import submissions
from autograder.batch.grading import grade
from autograder.sandbox.limits import Limits
from autograder.sandbox.bubblewrap import bwrap_available
from fixture_course import answer, make_course

pytestmark = pytest.mark.slow

MEMORY_MB = 1536
MEMFD_HOARD = """import os, torch
held = []
for i in range(16):
    fd = os.memfd_create(f"hoard{i}")
    for _ in range(15):
        os.write(fd, b"\\1" * (17 * 2 ** 20))    # 255 MB: under the file-size limit
    held.append(fd)
def double(x):
    return 2 * x if len(held) == 16 else 3 * x
"""
SYSV_HOARD = """import ctypes, torch
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype, libc.shmat.argtypes = ctypes.c_void_p, [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
libc.shmdt.argtypes = [ctypes.c_void_p]
made = 0
for i in range(8):
    ident = libc.shmget(0, 512 * 2 ** 20, 0o1600)   # IPC_PRIVATE, IPC_CREAT | 0600
    address = libc.shmat(ident, None, 0) if ident >= 0 else None
    if address in (None, 2 ** 64 - 1):
        break
    ctypes.memset(address, 1, 512 * 2 ** 20)
    libc.shmdt(ctypes.c_void_p(address))
    made += 1
def double(x):
    return 2 * x if made == 8 else 3 * x
"""
STOPPED = "your answer cell 'double': stopped by the grader: the notebook's processes held"


def _shmem_mb() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("Shmem:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _segments() -> set[int]:
    return {int(line.split()[1]) for line in Path("/proc/sysvipc/shm").read_text().splitlines()[1:]}


class HostWatch:
    """The host's shared memory every 0.05 s while grading runs."""

    def __init__(self):
        self.before, self.segments_before = _shmem_mb(), _segments()
        self.peak, self.running = self.before, True
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    def _sample(self):
        while self.running:
            self.peak = max(self.peak, _shmem_mb())
            time.sleep(0.05)

    def stop(self) -> dict:
        self.running = False
        self.thread.join(5)
        time.sleep(0.5)
        return {"before": self.before, "peak": self.peak, "after": _shmem_mb(),
                "segments_left": _segments() - self.segments_before}


def _graded(root: Path, sandbox: str):
    assignment = make_course(root)
    subs = root / "submitted"
    for student, code in (("correct", None), ("memfd_hoard", MEMFD_HOARD), ("sysv_hoard", SYSV_HOARD),
                          ("correct_classmate", None)):
        submissions.write(answer(assignment, root, code), subs / student / "01_fixture" / "fixture.ipynb")
    watch = HostWatch()
    started = time.perf_counter()
    rows = {r.student_id: r for r in grade(subs, root / "out", workers=1, progress=False,
                                            solutions_dir=root / "solutions",
                                            limits=Limits(cell_timeout_s=60, notebook_timeout_s=180,
                                                          memory_mb=MEMORY_MB, sandbox=sandbox))}
    host = watch.stop()
    print(f"\n[{sandbox}] graded in {time.perf_counter() - started:.0f} s; host shared memory (MB): before "
          f"{host['before']:.0f}, peak {host['peak']:.0f}, after {host['after']:.0f}; System V segments left: "
          f"{len(host['segments_left'])}; grader peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB; "
          f"largest judge or runner peak RSS {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024:.0f} MB")
    return rows, host


@pytest.fixture(scope="module", params=["bwrap", "none"])
def hoarded(request, tmp_path_factory):
    if request.param == "bwrap" and not bwrap_available():
        pytest.skip("bubblewrap is not usable here (apt-get install bubblewrap)")
    return _graded(tmp_path_factory.mktemp(f"host-memory-{request.param}"), request.param)


@pytest.mark.parametrize("student", ["memfd_hoard", "sysv_hoard"])
def test_shared_memory_counts_against_the_notebook_limit(hoarded, student):
    rows, _ = hoarded
    row = rows[student]
    assert (row.score, row.max_score, row.status) == (0, 3, "kernel died"), (row.score, row.status, row.detail)
    assert STOPPED in row.detail and f"past the {MEMORY_MB:,} MB limit" in row.detail, row.detail


def test_the_host_gets_its_shared_memory_back(hoarded):
    _, host = hoarded
    assert host["peak"] - host["before"] < MEMORY_MB + 512, f"the host's shared memory rose by {host['peak'] - host['before']:.0f} MB"
    assert host["after"] - host["before"] < 256, f"{host['after'] - host['before']:.0f} MB of shared memory stayed behind"
    assert host["segments_left"] == set(), f"System V segments left on the host: {sorted(host['segments_left'])}"


def test_classmates_keep_full_marks(hoarded):
    rows, _ = hoarded
    for student in ("correct", "correct_classmate"):
        assert (rows[student].score, rows[student].status) == (3, "ok"), (student, rows[student].detail)
