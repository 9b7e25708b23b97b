"""``autograder.sandbox.memory_watch``: the memory a sandbox holds counts memfds held open and System V segments,
not only resident memory (issue 28), and the batch runs no more notebooks at once than the host's budget
holds. Fast: this process plays the sandbox."""

from __future__ import annotations

import ctypes
import os

import pytest

from autograder.sandbox import memory_watch
from autograder.sandbox.memory_watch import SandboxMemory, notebook_bound_mb, workers_within

MB = 2**20


def test_an_unmapped_memfd_held_open_counts_once():
    watch = SandboxMemory()
    before, _ = watch.total([os.getpid()])
    fd = os.memfd_create("held")
    try:
        for _ in range(8):
            os.write(fd, b"\1" * (8 * MB))    # 64 MB, resident in no process
        duplicate = os.dup(fd)                # the same file twice: counted once
        after, tasks = watch.total([os.getpid()])
        os.close(duplicate)
    finally:
        os.close(fd)
    print(f"\nmemory of this process as the watch sees it: {before / MB:.0f} MB, with a 64 MB memfd {after / MB:.0f} MB")
    assert 60 * MB <= after - before <= 72 * MB and tasks >= 1


@pytest.mark.skipif(memory_watch.ipc_namespace(os.getpid()) is None, reason="no /proc/PID/ns here")
def test_a_detached_segment_counts_and_is_removed_with_the_sandbox():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype, libc.shmat.argtypes = ctypes.c_void_p, [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
    libc.shmdt.argtypes = [ctypes.c_void_p]
    ident = libc.shmget(0, 32 * MB, 0o1600)
    assert ident >= 0, os.strerror(ctypes.get_errno())
    try:
        address = libc.shmat(ident, None, 0)
        ctypes.memset(address, 1, 32 * MB)
        libc.shmdt(ctypes.c_void_p(address))    # attached to nothing now, still holding 32 MB
        watch = SandboxMemory()                 # this process shares the host's IPC namespace: segments it made count
        counted, _ = watch.total([os.getpid()])
        assert ident in watch.created
        assert watch.remove_segments() == 1
        rows = {row[0] for row in memory_watch._segment_rows()}
        assert ident not in rows, "the segment outlived the sandbox"
        assert counted >= 32 * MB
    finally:
        libc.shmctl(ident, 0, None)


def test_the_batch_runs_no_more_notebooks_than_the_host_budget_holds():
    each = notebook_bound_mb(4096, isolated=True)
    assert each == 4096 + 576 + memory_watch.JUDGE_MB + memory_watch.AHEAD_MB
    assert workers_within(2, 3 * each, 4096, True) == (2, "")
    allowed, note = workers_within(4, 2 * each + 1, 4096, True)
    assert allowed == 2 and note.startswith(f"grading 2 notebook(s) at once instead of 4: each may hold up to {each:,} MB")
    allowed, note = workers_within(3, 1000, 4096, False)
    assert allowed == 1 and note.endswith("(one notebook alone may exceed it: lower --memory-mb)")
