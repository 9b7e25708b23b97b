"""The sandbox's processes seen from the judge: the runner's log copied up to its cap, the watch that
sums the memory and counts the tasks of every process of the sandbox and kills them all past their
limits, and the kills at the end (the process group, every descendant a notebook left behind)."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from .limits import MEMORY_POLL_S

def start_thread(target, *args) -> None:
    import threading

    threading.Thread(target=target, args=args, daemon=True).start()


def copy_capped(source: int, target: int, cap: int) -> None:
    """Copy ``source`` into ``target`` up to ``cap`` bytes, then read and drop the rest until the end."""
    kept = 0
    try:
        while chunk := os.read(source, 65536):
            if kept < cap:
                os.write(target, chunk[:cap - kept])
                kept += len(chunk)
                if kept >= cap:
                    os.write(target, f"\n[log cut at {cap} bytes by the grader]\n".encode())
    except OSError:
        pass
    finally:
        os.close(source)
        os.close(target)


def watch_sandbox(process: subprocess.Popen, cap: int, max_tasks: int) -> None:
    """Every ``MEMORY_POLL_S``, sum the memory (``memory_watch.SandboxMemory``: resident memory, memfds
    held by descriptors, System V shared memory) and count the tasks (processes and threads) of
    ``process`` and all its descendants (every process of the sandbox); past ``cap`` bytes or
    ``max_tasks``, kill them all and say why in ``process.killed_for`` (the session reports it)."""
    import time

    from .memory_watch import SandboxMemory

    watch = SandboxMemory()
    try:
        while process.poll() is None:
            pids = [process.pid] + _children(process.pid)
            memory, tasks = watch.total(pids)
            if memory > cap or tasks > max_tasks:
                process.killed_for = (f"the notebook's processes held {memory / 2**20:,.0f} MB of memory (resident, "
                                      f"memfd and shared memory together), past the {cap / 2**20:,.0f} MB limit"
                                      if memory > cap else f"the notebook started more than {max_tasks} processes "
                                      "and threads")
                _kill_all(pids)
                return
            time.sleep(MEMORY_POLL_S)
    finally:
        watch.remove_segments()


def _kill_all(pids: list[int]) -> None:
    for pid in reversed(pids):
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def kill_group(process: subprocess.Popen) -> None:
    """Kill the runner's process group, wait for it, then kill whatever is left in its control group (a
    process that left the group's session) and remove the group."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
    group = getattr(process, "cgroup", None)
    if group is not None:
        group.remove()
    audit_fd = getattr(process, "audit_fd", None)
    if audit_fd is not None:
        process.audit_fd = None
        os.close(audit_fd)


def become_subreaper() -> None:
    """Linux: orphans of our children are re-parented to us, so ``kill_descendants`` finds daemons."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


def kill_descendants() -> None:
    """Kill every process descended from this one (daemons a submission left behind)."""
    me = os.getpid()
    for _ in range(5):
        children = _children(me)
        if not children:
            return
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        for pid in children:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass


def sandbox_cpu_seconds(pid: int) -> float | None:
    """The CPU seconds (user and system, of every thread, and of the children each has waited for) used so
    far by ``pid`` and its live descendants, read from ``/proc`` here, outside the sandbox: nothing the
    sandboxed code does changes what this reads. None when ``pid`` is gone."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for index, current in enumerate([pid] + _children(pid)):
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            if index == 0:
                return None
            continue
        total += sum(int(value) for value in fields[11:15])   # utime, stime, cutime, cstime
    return total / ticks


def _children(pid: int) -> list[int]:
    found: list[int] = []
    stack = [pid]
    while stack:
        current = stack.pop()
        task_dir = Path(f"/proc/{current}/task")
        if not task_dir.exists():
            continue
        for task in task_dir.iterdir():
            try:
                kids = [int(x) for x in (task / "children").read_text().split()]
            except (OSError, ValueError):
                continue
            found.extend(kids)
            stack.extend(kids)
    return found
