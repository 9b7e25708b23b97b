"""CPU time of a kernel this process started, and a cell time limit in CPU seconds.

``python -m autograder check`` and the test suite time a notebook's cells and stop a runaway one. On a
machine that other work keeps busy, wall-clock time measures the machine, not the notebook: a cell that
needs 20 s of CPU can take minutes to finish. So a cell's time is the CPU time (user + system) its kernel
used, read from ``/proc`` where Linux has it, and a cell is interrupted once it has used ``cpu_limit_s``
CPU seconds. Elsewhere (no ``/proc``) both fall back to wall-clock time.

The kernels run PyTorch on one thread (``ONE_THREAD``), as the grader's runners do
(``confinement.child_environment``): CPU time is then close to the wall time on a quiet machine, and OpenMP
threads that spin while they wait for a busy core cannot multiply it.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
POLL_S = 0.5


def one_thread_environment(base: dict[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) with PyTorch's thread pools set to one thread."""
    return {**(os.environ if base is None else base), **ONE_THREAD}


def process_cpu_seconds(pid: int | None) -> float | None:
    """User + system CPU seconds of process ``pid`` and its waited-for children; None if /proc cannot tell."""
    if not pid:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        return sum(int(fields[i]) for i in (11, 12, 13, 14)) / ticks   # utime, stime, cutime, cstime
    except (OSError, IndexError, ValueError):
        return None


class CellClock:
    """Times cells of one kernel in CPU seconds, and interrupts (SIGINT) a cell past ``cpu_limit_s``.

    Use ``with clock.cell() as elapsed:`` around one cell's execution; ``elapsed()`` is its time.
    """

    def __init__(self, pid: int | None, cpu_limit_s: float):
        self.pid, self.cpu_limit_s = pid, cpu_limit_s
        self.last_cpu = process_cpu_seconds(pid)
        self.measures_cpu = self.last_cpu is not None

    def now(self) -> float:
        if not self.measures_cpu:
            return time.perf_counter()
        cpu = process_cpu_seconds(self.pid)
        if cpu is not None:      # a kernel that died keeps the time it had used
            self.last_cpu = cpu
        return self.last_cpu

    def cell(self) -> _CellWatch:
        return _CellWatch(self)


class _CellWatch:
    def __init__(self, clock: CellClock):
        self.clock, self.start, self.seconds = clock, 0.0, 0.0
        self.done = threading.Event()
        self.watcher = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> _CellWatch:
        self.start = self.clock.now()
        if self.clock.measures_cpu:
            self.watcher.start()
        return self

    def __exit__(self, *exc) -> None:
        self.done.set()
        self.seconds = self.clock.now() - self.start
        if self.watcher.is_alive():
            self.watcher.join()

    def _watch(self) -> None:
        while not self.done.wait(POLL_S):
            if self.clock.now() - self.start > self.clock.cpu_limit_s:
                try:
                    os.kill(self.clock.pid, signal.SIGINT)   # ipykernel: KeyboardInterrupt in the running cell
                except OSError:
                    pass
                return
