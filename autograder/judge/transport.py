"""Talking to the student's process: one JSON request per line out, the reply with the same id back.

The judge believes nothing it reads here, and bounds what it reads *before* parsing it: a line is
read into a buffer that never holds more than ``wire.MAX_MESSAGE_BYTES`` (plus one read), and a longer
line ends the notebook as a ``protocol error`` without being parsed. A line is parsed in full only if
it ends the way the runner ends the reply awaited (``"id": N}``, ``serving.reply_line``) and holds at
most ``MAX_REPLY_VALUES`` JSON values (counted on the bytes: a line of ``[],[],...`` would otherwise
take twenty times its size as Python lists); any other line is a stray, parsed only up to
``MAX_STRAY_LINE_BYTES``, counted and dropped, ``MAX_STRAY_BYTES`` of strays in all. A process that
says nothing by the deadline is reported as a timeout (the session then kills and restarts it).
"""

from __future__ import annotations

import json
import os
import select
import time

from . import wire
from .protocol import Status

GRACE_S = 10            # after a call's limit: time for the runner's own interrupt to come back
MAX_STRAY_REPLIES = 1000
MAX_STRAY_LINE_BYTES = 1024 * 1024       # a line that is not the awaited reply is parsed only up to this
MAX_STRAY_BYTES = 16 * 1024 * 1024       # lines that are not the awaited reply, all together, per request
MAX_REPLY_VALUES = 2_000_000             # JSON values in one reply (about 100 MB of Python objects at most)
READ_BYTES = 1 << 20


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
        self.buffer = bytearray(buffer)
        self.scanned = 0   # how much of the buffer is known to hold no newline
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
        strays = stray_bytes = 0
        while True:
            line = self._next_line(deadline)
            if line is None:
                return None
            awaited = _ends_like_reply(line, ident)
            if not awaited and len(line) > MAX_STRAY_LINE_BYTES:
                raise RunnerGone(Status.PROTOCOL_ERROR, f"the student's process wrote a line of {_size(len(line))} "
                                 "that is not a reply to the grader (written onto the grader's channel?)")
            reply = _parse(line)
            if type(reply) is dict and reply.get("id") == ident:
                return reply
            strays, stray_bytes = strays + 1, stray_bytes + len(line)
            if strays > MAX_STRAY_REPLIES:
                raise RunnerGone(Status.PROTOCOL_ERROR, "too many unexpected replies")
            if stray_bytes > MAX_STRAY_BYTES:
                raise RunnerGone(Status.PROTOCOL_ERROR, f"more than {_size(MAX_STRAY_BYTES)} of lines that are "
                                 "not a reply to the grader")

    def _next_line(self, deadline: float) -> bytes | None:
        """The next line (without its newline), never buffering more than ``wire.MAX_MESSAGE_BYTES`` plus
        one read; None at the deadline."""
        while True:
            newline = self.buffer.find(b"\n", self.scanned)
            if newline >= 0:
                line = bytes(self.buffer[:newline])
                del self.buffer[:newline + 1]
                self.scanned = 0
                if len(line) > wire.MAX_MESSAGE_BYTES:
                    raise RunnerGone(Status.PROTOCOL_ERROR, "a reply was larger than the grader accepts")
                return line
            self.scanned = len(self.buffer)
            if len(self.buffer) > wire.MAX_MESSAGE_BYTES:
                raise RunnerGone(Status.PROTOCOL_ERROR, "a reply was larger than the grader accepts")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([self.fd], [], [], remaining)
            if ready:
                chunk = os.read(self.fd, READ_BYTES)
                if not chunk:
                    raise RunnerGone(Status.KERNEL_DIED, "the student's process exited")
                self.buffer += chunk


def _ends_like_reply(line: bytes, ident: int) -> bool:
    """Whether ``line`` ends as the runner ends its reply to request ``ident`` (``..., "id": 5}``)."""
    return line.rstrip().endswith(b'"id": %d}' % ident)


def _parse(line: bytes):
    """The JSON value of one line; ``RunnerGone`` (protocol error) for anything else, or for a line with
    more than ``MAX_REPLY_VALUES`` values (counted before parsing)."""
    values = line.count(b",") + line.count(b"[") + line.count(b"{")
    if values > MAX_REPLY_VALUES:
        raise RunnerGone(Status.PROTOCOL_ERROR, f"a reply held more than {MAX_REPLY_VALUES:,} values")
    try:
        return json.loads(line)
    except (ValueError, UnicodeDecodeError):
        raise RunnerGone(Status.PROTOCOL_ERROR, "the student's process wrote something that is not a reply") from None
    except RecursionError:
        raise RunnerGone(Status.PROTOCOL_ERROR, "the student's process wrote a reply nested too deeply to read") from None


def _size(count: int) -> str:
    return f"{count / 2**20:.1f} MB" if count >= 2**20 else f"{count:,} bytes"
