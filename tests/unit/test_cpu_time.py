"""``autograder.sandbox.cpu_time``: a kernel's cells timed in CPU seconds, a runaway cell interrupted after its CPU
limit (not after a wall-clock time that a busy machine stretches), and the one-thread environment."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from autograder.sandbox import cpu_time

BUSY_UNTIL_INTERRUPTED = ("import signal, sys\n"
                          "signal.signal(signal.SIGINT, lambda *a: sys.exit(3))\n"
                          "print('ready', flush=True)\n"
                          "while True:\n    pass\n")


def test_one_thread_environment_sets_both_thread_pools():
    env = cpu_time.one_thread_environment({"PATH": "/bin", "OMP_NUM_THREADS": "8"})
    assert env == {"PATH": "/bin", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def test_an_unknown_process_has_no_cpu_time():
    assert cpu_time.process_cpu_seconds(None) is None
    assert cpu_time.process_cpu_seconds(2**22 + 12345) is None   # above the kernel's pid_max default


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="CPU time is read from /proc")
def test_a_busy_process_is_interrupted_after_its_cpu_limit():
    process = subprocess.Popen([sys.executable, "-c", BUSY_UNTIL_INTERRUPTED], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline().strip() == "ready"
        clock = cpu_time.CellClock(process.pid, cpu_limit_s=0.5)
        assert clock.measures_cpu
        started = time.perf_counter()
        with clock.cell() as watch:
            assert process.wait(timeout=120) == 3, "the watch must interrupt the process (SIGINT)"
        assert watch.seconds >= 0.5
        assert time.perf_counter() - started >= 0.5
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            process.wait()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="CPU time is read from /proc")
def test_an_idle_process_uses_no_cpu_time_and_is_left_alone():
    process = subprocess.Popen([sys.executable, "-c", "import time; print('ready', flush=True); time.sleep(60)"],
                               stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline().strip() == "ready"
        clock = cpu_time.CellClock(process.pid, cpu_limit_s=0.5)
        with clock.cell() as watch:
            time.sleep(1.5)
        assert watch.seconds < 0.5 and process.poll() is None
    finally:
        process.kill()
        process.wait()
