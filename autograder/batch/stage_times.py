"""Where a grading's time goes: seconds accumulated per stage, for ``benchmarks/grading_throughput.py``.

The batch grader wraps each of its stages in ``stage(name)``; the judge reports its own split (runner
start, set-up cell, answer cells, test cells) in its result, which ``add`` folds in. Worker threads add
to the same totals (guarded by a lock), so a total is the time spent in that stage summed over all
submissions, whatever the number of workers. Nothing here changes what is graded.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from contextlib import contextmanager

_lock = threading.Lock()
_seconds: dict[str, float] = defaultdict(float)


def add(name: str, seconds: float) -> None:
    with _lock:
        _seconds[name] += seconds


@contextmanager
def stage(name: str):
    start = time.perf_counter()
    try:
        yield
    finally:
        add(name, time.perf_counter() - start)


def snapshot() -> dict[str, float]:
    """The totals so far, and start again from zero."""
    with _lock:
        totals = dict(_seconds)
        _seconds.clear()
    return totals
