"""autograder.sandbox.cgroups: a control group per sandbox, its memory limit counting what only the kernel sees."""

from __future__ import annotations

import subprocess
import sys

import pytest

from autograder.sandbox import cgroups

pytestmark = pytest.mark.skipif(cgroups.available() is not None, reason=str(cgroups.available()))

SOCKET_BUFFERS = """import socket
held = []
while True:
    a, b = socket.socketpair()
    a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8 * 2 ** 20)
    a.setblocking(False)
    try:
        while True:
            a.send(b"x" * 65536)
    except BlockingIOError:
        held.append((a, b))
"""


def test_socket_buffers_count_and_the_kernel_stops_the_group():
    group = cgroups.SandboxCgroup.create(128 * 2**20, 16)
    try:
        run = subprocess.run([sys.executable, "-c", SOCKET_BUFFERS], preexec_fn=group.join, timeout=120)
        assert run.returncode == -9 and group.oom_killed()
        assert group.peak_bytes() <= 128 * 2**20
    finally:
        group.remove()
    assert not any(folder.exists() for folder in group.folders.values())


def test_tasks_are_bounded():
    group = cgroups.SandboxCgroup.create(512 * 2**20, 12)
    code = ("import threading, time\nstarted = 0\ntry:\n    for _ in range(40):\n"
            "        threading.Thread(target=time.sleep, args=(2,), daemon=True).start(); started += 1\n"
            "except RuntimeError:\n    pass\nprint(started)")
    try:
        run = subprocess.run([sys.executable, "-c", code], preexec_fn=group.join, capture_output=True, text=True,
                             timeout=60)
        assert int(run.stdout) < 12, run.stdout
        assert not group.oom_killed()
    finally:
        group.remove()


def test_remove_kills_what_is_left_and_is_idempotent():
    group = cgroups.SandboxCgroup.create(256 * 2**20, 16)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], preexec_fn=group.join,
                               start_new_session=True)
    assert sleeper.pid in group.pids()
    group.remove()
    assert sleeper.wait(10) == -9
    group.remove()


def test_reap_stale_removes_the_groups_of_a_dead_maker_only(tmp_path):
    live = cgroups.SandboxCgroup.create(64 * 2**20, 8)
    # A judge killed before it removed its group: it made one, put a process in it, and died.
    code = ("import os, subprocess, sys\nfrom autograder.sandbox import cgroups\n"
            "g = cgroups.SandboxCgroup.create(64 * 2**20, 8)\n"
            "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'], preexec_fn=g.join, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
            "print(*g.folders.values())\nos._exit(0)")
    left = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout.split()
    from pathlib import Path
    assert left and all(Path(f).exists() for f in left)
    try:
        assert cgroups.reap_stale() >= len(left)
        assert not any(Path(f).exists() for f in left)
        assert all(f.exists() for f in live.folders.values())
    finally:
        live.remove()


def test_where_none_can_be_made_the_refusal_says_what_fixes_it(monkeypatch):
    monkeypatch.setattr(cgroups, "_mounts", lambda: {})
    reason = cgroups.available()
    assert reason is not None and "--sandbox none" in reason and "Delegate=yes" in reason
