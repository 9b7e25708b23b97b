"""The judge's side of the runner's audit hook (``sandbox/audit.py``): the lines it wrote, and what they mean
for the notebook's reports.

The hook writes ``flag <event> at <where>`` when student code reached into the runner's machinery, and
``ok <nonce>`` or ``changed <nonce> <what>`` when a call the judge watched had been checked. The judge
believes a report of that call only if the pipe holds no flag, no ``changed`` line, nothing it cannot read,
and an ``ok`` line with the nonce it sent; if the pipe ended, the runner's end of it was closed (by the
student's code: the runner never closes it).
"""

from __future__ import annotations

import os

MAX_PENDING = 1 << 16   # the hook writes a few short lines per call; more is not the hook's


class AuditPipe:
    """Reads one runner's audit pipe without blocking, and keeps what it found wrong."""

    def __init__(self):
        self.pending = b""
        self.problem = ""   # the first thing found wrong, for the rest of the notebook
        self.answered: set[str] = set()

    def read(self, fd: int | None, *, ended_counts: bool = True) -> None:
        """Take every complete line the hook has written so far (``fd`` None: the runner is gone).
        ``ended_counts``: the runner is alive, so an ended pipe was closed by its code (when the judge
        stops or restarts it, the end is its own doing)."""
        if fd is None:
            return
        while True:
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                break
            except OSError:
                chunk = b""
            if not chunk:
                if ended_counts:
                    self._found("the grader's channel in your process was closed")
                break
            self.pending += chunk
            if len(self.pending) > MAX_PENDING:
                self._found("something other than the grader wrote on the grader's channel in your process")
                self.pending = b""
                break
        *lines, self.pending = self.pending.split(b"\n")
        for line in lines:
            self._line(line.decode("utf-8", "replace"))

    def check(self, fd: int | None, nonce: str) -> str:
        """Why a reply to the call sent with ``nonce`` cannot be believed, or ""."""
        self.read(fd)
        if not self.problem and nonce not in self.answered:
            self._found("the grader's check in your process did not answer")
        return self.problem

    def _line(self, line: str) -> None:
        kind, _, rest = line.partition(" ")
        if kind == "ok" and rest and " " not in rest:
            self.answered.add(rest)
        elif kind == "flag" and rest:
            self._found(f"your code used {rest}")
        elif kind == "changed" and " " in rest:
            self._found(f"your code changed the grader's code in your process: {rest.partition(' ')[2]}")
        else:
            self._found("something other than the grader wrote on the grader's channel in your process")

    def _found(self, problem: str) -> None:
        self.problem = self.problem or problem[:300]
