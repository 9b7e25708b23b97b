"""Judges forked from one process that has already imported PyTorch: a batch pays for the import once.

Every judge imports PyTorch (its test cells compute expected values with it): about 1.8 CPU seconds, half
of what a fresh judge costs before it judges anything. ``ForkServer`` starts one process per batch
(``python -m autograder.judge --fork-server``) that imports what a judge imports and then waits; each
``start`` sends it a pipe pair (``socket.send_fds``) and it forks a child that becomes a judge exactly as
``python -m autograder.judge`` would be: its own session, the pipes as its standard input and output, its
standard error discarded, random generators seeded afresh, the temporary folder the grader made for it as its
own (``workspace.own_temporary_folder``, named in the request). The server never runs student code, nor does
the child before it is a judge; the socket is the grader's alone (a ``socketpair``, not a path on disk).

``ForkedJudge`` is what ``subprocess.Popen`` gave the grader (``pid``, ``stdin``, ``stdout``, ``wait``,
``poll``): the child is the server's, so its end is watched through a pidfd. If the server cannot start or
dies, ``start`` raises ``OSError`` and the grader starts a plain judge process instead.
"""

from __future__ import annotations

import os
import select
import socket
import subprocess
import sys
import threading

from ..sandbox.confinement import with_course_on_path
from .protocol import TEMP_FOLDER_VARIABLE

FLAG = "--fork-server"


class ForkedJudge:
    """A judge forked by the server: the parts of ``subprocess.Popen`` the grader uses."""

    def __init__(self, pid: int, pidfd: int, stdin, stdout):
        self.pid, self.stdin, self.stdout = pid, stdin, stdout
        self.args = f"forked judge {pid}"
        self.returncode: int | None = None
        self._pidfd: int | None = pidfd

    def __del__(self):
        if self._pidfd is not None:
            os.close(self._pidfd)

    def poll(self) -> int | None:
        return self._ended(0)

    def wait(self, timeout: float | None = None) -> int:
        if self._ended(timeout) is None:
            raise subprocess.TimeoutExpired(self.args, timeout)
        return self.returncode

    def _ended(self, timeout: float | None) -> int | None:
        if self.returncode is None and self._pidfd is not None and select.select([self._pidfd], [], [], timeout)[0]:
            os.close(self._pidfd)
            self._pidfd, self.returncode = None, 0     # its exit status is the server's to collect
        return self.returncode


class ForkServer:
    """One server process for a batch; ``start`` gives a judge forked from it, ``close`` ends it."""

    def __init__(self, temporary_folder: str | None = None):
        """``temporary_folder``: the server's ``TMPDIR`` (the batch's folder), so that anything it or a judge
        makes outside the judge's own folder still lies where the batch removes it."""
        if not sys.platform.startswith("linux") or not hasattr(os, "pidfd_open"):
            raise OSError("judges are forked only on Linux 5.3 and later (pidfd_open)")
        os.close(os.pidfd_open(os.getpid()))      # an older kernel (or a seccomp filter) refuses it: OSError
        ours, theirs = socket.socketpair()
        self._socket, self._lock = ours, threading.Lock()
        env = with_course_on_path(dict(os.environ))
        if temporary_folder:
            env["TMPDIR"] = temporary_folder
        try:
            self._process = subprocess.Popen([sys.executable, "-m", "autograder.judge", FLAG, str(theirs.fileno())],
                                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                             stderr=subprocess.DEVNULL, pass_fds=[theirs.fileno()],
                                             start_new_session=True, env=env)
        finally:
            theirs.close()

    def start(self, ahead: bool = False, temporary_folder: str = "") -> ForkedJudge:
        """A judge forked now; ``ahead``: one that reads a runner spec line first (``--ahead``);
        ``temporary_folder``: the judge's own (``workspace.own_temporary_folder``), else it makes one."""
        judge_in, to_judge = os.pipe()
        from_judge, judge_out = os.pipe()
        request = (b"A" if ahead else b"J") + os.fsencode(temporary_folder) + b"\n"
        try:
            with self._lock:
                socket.send_fds(self._socket, [request], [judge_in, judge_out])
                pid = int(self._read_line())
            pidfd = os.pidfd_open(pid)
        except (OSError, ValueError) as error:
            os.close(to_judge)
            os.close(from_judge)
            raise OSError(f"the judges' fork server did not start a judge: {error}") from error
        finally:
            os.close(judge_in)
            os.close(judge_out)
        return ForkedJudge(pid, pidfd, os.fdopen(to_judge, "wb"), os.fdopen(from_judge, "rb"))

    def _read_line(self) -> bytes:
        reply = b""
        while not reply.endswith(b"\n"):
            chunk = self._socket.recv(32)
            if not chunk or len(reply) > 32:
                raise OSError("the judges' fork server is gone")
            reply += chunk
        return reply

    def close(self) -> None:
        """End the server (its judges live on: each is in its own session)."""
        self._socket.close()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


def serve(fd: int, main) -> int:
    """The server: import what every judge imports, then fork one judge per request until the socket closes;
    each child runs ``main(ahead=...)``, the batch judge's entry point (``python -m autograder.judge``)."""
    import torch  # noqa: F401 - the point of the server: imported once, shared by every judge it forks
    import numpy  # noqa: F401

    channel = socket.socket(fileno=fd)
    while True:
        _reap(os.WNOHANG)
        message, fds = _request(channel)
        if not message or len(fds) != 2:
            _reap(0)        # the grader is done: its judges have ended or are ending
            return 0
        leader_read, leader_write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(leader_read)
            _become_judge(channel, fds, ahead=message[:1] == b"A", main=main, folder=os.fsdecode(message[1:-1]),
                          leader=leader_write)
        for descriptor in (*fds, leader_write):
            os.close(descriptor)
        os.read(leader_read, 1)     # end of file once the child leads its own session (or has died): only then is
        os.close(leader_read)       # its pid a process group the grader can kill (killpg), never a moment before
        channel.sendall(b"%d\n" % pid)


def _request(channel: socket.socket) -> tuple[bytes, list[int]]:
    """One request: ``A`` (ahead) or ``J``, the judge's temporary folder, a newline; and its two pipe ends.
    Nothing (``b""``) when the grader has closed the socket."""
    try:
        message, fds, _, _ = socket.recv_fds(channel, 4096, 2)
        while message and not message.endswith(b"\n") and len(message) < 8192:
            more = channel.recv(4096)
            if not more:
                break
            message += more
    except OSError:
        return b"", []
    return (message, fds) if message.endswith(b"\n") else (b"", fds)


def _become_judge(channel: socket.socket, fds: list[int], *, ahead: bool, main, folder: str, leader: int) -> None:
    """In the forked child: what ``python -m autograder.judge`` would be, with ``folder`` (if any) as its
    own temporary folder, removed by ``main`` before the ``os._exit``; never returns. ``leader``: closed once
    the child leads its own session, which the server waits for before it hands the pid to the grader."""
    code = 1
    try:
        if folder:
            os.environ[TEMP_FOLDER_VARIABLE] = folder
        channel.close()
        os.setsid()
        os.close(leader)
        os.dup2(fds[0], 0)
        os.dup2(fds[1], 1)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        for descriptor in (*fds, devnull):
            os.close(descriptor)
        sys.stdin = open(0, "r", encoding=sys.stdin.encoding, errors=sys.stdin.errors, closefd=False)
        _seed_afresh()
        code = main(ahead=ahead)
    finally:
        os._exit(code)


def _seed_afresh() -> None:
    # A fresh process seeds Python's and NumPy's global generators from the OS; a fork would copy the server's.
    import random

    import numpy

    random.seed()
    numpy.random.seed()


def _reap(options: int) -> None:
    """Collect the judges that have ended (``os.WNOHANG``), or wait for all of them (0)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, options)
        except ChildProcessError:
            return
        if pid == 0:
            return
