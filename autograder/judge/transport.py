"""Talking to the student's process: one JSON request per line out, the reply with the same id back.

The judge believes nothing it reads here: a reply is parsed strictly and bounded in size, stray lines
are counted and dropped, and a process that says nothing by the deadline is reported as a timeout
(the session then kills and restarts it).
"""

from __future__ import annotations

import json
import os
import select
import time

from .. import wire
from ..protocol import Status

GRACE_S = 10            # after a call's limit: time for the runner's own interrupt to come back
MAX_STRAY_REPLIES = 1000


class RunnerGone(Exception):
    """The runner died, was killed after overrunning, or broke the protocol; it will be restarted."""

    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status = status


class Connection:
    """Requests written to ``writer`` (binary), replies read from file descriptor ``read_fd``."""

    def __init__(self, writer, read_fd: int, buffer: bytes = b""):
        self.writer = writer
        self.fd = read_fd
        self.buffer = buffer
        self.next_id = 0

    def request(self, message: dict, limit_s: float) -> dict:
        self.next_id += 1
        ident = self.next_id
        message = dict(message, id=ident, limit=limit_s)
        try:
            self.writer.write((json.dumps(message) + "\n").encode("utf-8"))
            self.writer.flush()
        except (BrokenPipeError, OSError):
            raise RunnerGone(Status.KERNEL_DIED, "the student's process had exited") from None
        reply = self._read(ident, time.monotonic() + limit_s + GRACE_S)
        if reply is None:
            raise RunnerGone(Status.TIMEOUT, f"did not finish within {limit_s:g} s and was stopped")
        return reply

    def _read(self, ident: int, deadline: float):
        strays = 0
        while True:
            newline = self.buffer.find(b"\n")
            if newline >= 0:
                line, self.buffer = self.buffer[:newline], self.buffer[newline + 1:]
                try:
                    reply = json.loads(line)
                except (ValueError, UnicodeDecodeError):
                    raise RunnerGone(Status.PROTOCOL_ERROR, "the student's process wrote something that is not a reply") from None
                except RecursionError:
                    raise RunnerGone(Status.PROTOCOL_ERROR, "the student's process wrote a reply nested too deeply to read") from None
                if type(reply) is dict and reply.get("id") == ident:
                    return reply
                strays += 1
                if strays > MAX_STRAY_REPLIES:
                    raise RunnerGone(Status.PROTOCOL_ERROR, "too many unexpected replies")
                continue
            if len(self.buffer) > wire.MAX_MESSAGE_BYTES:
                raise RunnerGone(Status.PROTOCOL_ERROR, "a reply was larger than the grader accepts")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([self.fd], [], [], remaining)
            if ready:
                chunk = os.read(self.fd, 1 << 20)
                if not chunk:
                    raise RunnerGone(Status.KERNEL_DIED, "the student's process exited")
                self.buffer += chunk


