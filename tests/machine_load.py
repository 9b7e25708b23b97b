"""Busy loops that load the machine while a notebook runs (issue 35: the suite must hold on a busy machine)."""

from __future__ import annotations

import subprocess
import sys
from contextlib import contextmanager


@contextmanager
def busy_loops(count: int):
    """``count`` processes that spin at this process's priority; all killed and reaped on exit."""
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield loops
    finally:
        for loop in loops:
            loop.kill()
        for loop in loops:
            loop.wait(timeout=30)
