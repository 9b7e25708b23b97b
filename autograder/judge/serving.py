"""The student side's request loop: read a request, answer it within its time limit, write the reply.

Two processes answer the judge: the sandboxed runner (``autograder.sandbox.runner``, batch grading) and the
student's own kernel while it grades itself (``autograder.selfgrade``). Both use ``serve``: one JSON
request per line in, one JSON reply per line out, each reply carrying its request's ``id``. A request's
``limit`` (seconds) is enforced here with ``SIGALRM``: the code running when it fires gets a
``KeyboardInterrupt``, which the answer reports like any other error. A request with ``"clock": "cpu"``
(a test's ``probes.time_limit``: a speed requirement) is limited in this process's CPU seconds instead
(``SIGPROF``), which a busy machine does not stretch. The judge keeps its own clock too and kills a
runner that does not come back (``autograder.judge.transport``).
"""

from __future__ import annotations

import contextlib
import gc
import json
import signal
import threading
from typing import Callable, Iterable

UNSENDABLE = "reply not sendable"


class TimeLimit:
    """``with limit.applied(seconds):`` interrupts the block after ``seconds`` with ``KeyboardInterrupt``.

    The handlers are installed by ``install`` (only in the main thread, the only one Python delivers
    signals to; elsewhere there is no limit here and the judge's clock alone applies). With
    ``on_sigint`` the judge's SIGINT interrupts the same way, but only while a request is being
    answered: one arriving between requests is ignored.
    """

    def __init__(self, message: str, *, on_sigint: bool = False):
        self.message = message
        self.on_sigint = on_sigint
        self.busy = False
        self.installed = False
        self._previous: dict = {}

    def _interrupt(self, signum, frame):
        if self.busy:
            raise KeyboardInterrupt(self.message)

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for signum in (signal.SIGALRM, signal.SIGPROF) + ((signal.SIGINT,) if self.on_sigint else ()):
            self._previous[signum] = signal.signal(signum, self._interrupt)
        self.installed = True

    def uninstall(self) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous, self.installed = {}, False

    @contextlib.contextmanager
    def applied(self, limit, *, cpu: bool = False):
        """``limit`` wall-clock seconds, or with ``cpu`` this process's CPU seconds (``ITIMER_PROF``)."""
        self.busy = True
        timed = self.installed and isinstance(limit, (int, float)) and not isinstance(limit, bool) and limit > 0
        timer = signal.ITIMER_PROF if cpu else signal.ITIMER_REAL
        if timed and cpu:
            # A speed requirement times the student's call, not the garbage collection that earlier work
            # (a test building a large input here) left due: Python charges a full collection to whichever
            # allocation triggers it, which could be the timed call's first.
            gc.collect()
        if timed:
            signal.setitimer(timer, float(limit))
        try:
            yield
        finally:
            if timed:
                signal.setitimer(timer, 0)
            self.busy = False


def read_request(line: str | bytes) -> dict | None:
    """A request object, or None for a line that is not one (skipped: the judge never sends those)."""
    try:
        request = json.loads(line)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return request if type(request) is dict else None


def reply_line(reply: dict, ident) -> str:
    """The reply as one line of JSON with the request's id; a reply that cannot be written (a value
    JSON cannot hold) becomes a ``TypeError`` reply, so the judge always hears back."""
    try:
        return json.dumps(dict(reply, id=ident))
    except (TypeError, ValueError) as error:
        return json.dumps({"id": ident, "ok": False,
                           "error": {"type": "TypeError", "message": f"{UNSENDABLE}: {error}"[:2000], "where": []}})


def serve(lines: Iterable, write: Callable[[str], None], answer: Callable[[dict], dict], limit: TimeLimit,
          *, until: str | None = None) -> dict | None:
    """Answer every request of ``lines`` with ``answer`` (within its ``limit``), writing each reply line.

    Returns the first message whose ``op`` is ``until`` (not answered), or None when ``lines`` ends.
    """
    for line in lines:
        request = read_request(line)
        if request is None:
            continue
        if until is not None and request.get("op") == until:
            return request
        with limit.applied(request.get("limit"), cpu=request.get("clock") == "cpu"):
            reply = answer(request)
        write(reply_line(reply, request.get("id")) + "\n")
    return None
