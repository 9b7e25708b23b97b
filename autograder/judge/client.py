"""The grader's side of a judge: start one (``python -m autograder.judge``), send it its job, read
and verify its sealed reply (``run_judge``); and judges started one notebook ahead (``JudgesAhead``),
so that the next runner's start (a sandbox, Python, PyTorch) overlaps the notebook being graded.

Each judge gets a temporary folder of its own, made here before it starts (``TEMP_FOLDER_VARIABLE``) and
removed here after it has ended, however it ended (``ended``): a judge killed for the notebook's time limit,
or by anyone's SIGKILL, cannot remove its workspace itself. A batch's judges have theirs inside the batch's
folder (``JudgesAhead``), removed when the batch is done.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque

from .fork_server import ForkedJudge, ForkServer
from .protocol import TEMP_FOLDER_VARIABLE, JudgeJob, JudgeResult, ProtocolError, RunnerSpec, Status, unseal
from ..sandbox.limits import Limits
from ..sandbox.processes import kill_group
from ..sandbox.confinement import with_course_on_path
from ..course.text import valid_unicode

MAX_JUDGE_RESULT_BYTES = 64 * 1024 * 1024       # a judge's reply (its outputs are capped at 4 MB; this is a backstop)


def start_judge(spec: RunnerSpec | None = None, server: ForkServer | None = None,
                parent: str | None = None) -> subprocess.Popen | ForkedJudge:
    """A judge process waiting for its job; with ``spec``, one that starts its runner now (``--ahead``);
    forked by ``server`` when there is one and it answers, else a process of its own. Its temporary
    folder is made in ``parent`` (default: the system's) and removed by ``ended``."""
    folder = tempfile.mkdtemp(prefix="course-judge-", dir=parent)
    try:
        process = _forked(server, spec is not None, folder) or subprocess.Popen(
            [sys.executable, "-m", "autograder.judge"] + (["--ahead"] if spec else []),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            start_new_session=True, env=dict(with_course_on_path(dict(os.environ)), **{TEMP_FOLDER_VARIABLE: folder}))
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    process.temporary_folder = folder
    if spec is not None:
        try:
            process.stdin.write(spec.to_line())   # one short line: the pipe takes it without blocking
            process.stdin.flush()
        except OSError:
            pass   # the judge is gone already; run_judge will read no result and say so
    return process



def _forked(server: ForkServer | None, ahead: bool, folder: str) -> ForkedJudge | None:
    if server is None:
        return None
    try:
        return server.start(ahead, folder)
    except OSError:
        return None     # the server is gone: a process of its own


def ended(judge) -> None:
    """After ``judge`` has ended (or was killed): remove its temporary folder, whatever it left there."""
    folder = getattr(judge, "temporary_folder", None)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)


def run_judge(job: JudgeJob, limits: Limits, judge: subprocess.Popen | None = None) -> JudgeResult:
    """Run ``python -m autograder.judge`` (or ``judge``, one started ahead) on one job; return its
    verified result (never raises)."""
    key = secrets.token_bytes(32)
    message = job.to_message(key)
    process = judge if judge is not None else start_judge()

    def send() -> None:
        try:
            process.stdin.write(message)
            process.stdin.close()
        except OSError:
            pass

    threading.Thread(target=send, daemon=True).start()
    try:
        reply = _read_reply(process, limits)
    finally:
        process.stdout.close()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            kill_group(process)
        ended(process)
    return reply if isinstance(reply, JudgeResult) else verify_result(reply, key)


def _read_reply(process: subprocess.Popen, limits: Limits) -> bytes | JudgeResult:
    """Everything the judge writes until it closes its output; a failed result (the judge killed) if it
    runs past the notebook's time limit plus a minute, or writes more than ``MAX_JUDGE_RESULT_BYTES``."""
    import select

    deadline = time.monotonic() + limits.notebook_timeout_s + 60
    chunks, size = [], 0
    fd = process.stdout.fileno()
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            kill_group(process)
            return JudgeResult.failed(f"the notebook ran past {limits.notebook_timeout_s} s", Status.TIMEOUT)
        if not select.select([fd], [], [], min(remaining, 5))[0]:
            continue
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_JUDGE_RESULT_BYTES:
            kill_group(process)
            return JudgeResult.failed(f"the notebook's outputs were larger than the grader keeps "
                                      f"({MAX_JUDGE_RESULT_BYTES // 2**20} MB)", Status.PROTOCOL_ERROR)


def verify_result(out: bytes, key: bytes) -> JudgeResult:
    """The judge's result if it is authentic and well formed; an ``error`` result otherwise."""
    try:
        result, replaced = valid_unicode(json.loads(unseal(out, key)))
        if replaced and isinstance(result, dict):   # nbgrader cannot write lone surrogates; they came from the student's output
            result["detail"] = "; ".join(x for x in (result.get("detail"), "text that is not valid Unicode "
                                         "(lone surrogates) in the notebook's output was replaced") if x)
        return JudgeResult.from_dict(result)
    except (ProtocolError, ValueError, TypeError, KeyError, AttributeError, RecursionError):
        return JudgeResult.failed("the judge returned no valid result")


class JudgesAhead:
    """Judges started ahead of their jobs, at most ``count`` waiting at once, none beyond the jobs left.

    ``take()`` gives a waiting judge (or None: start one with the job) and starts the next one, so
    while a worker grades a notebook the judge and runner of its next one are starting. ``close()``
    stops those never used and removes the batch's temporary folder (``folder``, where each judge started
    here has its own): call it once the judges handed out have ended. Starting one may fail (no processes
    left): the job then starts its own.
    For more than one job the judges are forked from one ``ForkServer`` (PyTorch imported once).
    """

    def __init__(self, spec: RunnerSpec, jobs: int, count: int):
        self.spec, self.left, self.count = spec, jobs, count
        self.waiting: deque = deque()
        self.lock = threading.Lock()
        self.folder = tempfile.mkdtemp(prefix="course-batch-")   # the judges' temporary folders, and the server's
        self.server = self._fork_server(self.folder) if count > 0 and jobs > 1 else None
        with self.lock:
            self._fill()

    @staticmethod
    def _fork_server(folder: str) -> ForkServer | None:
        try:
            return ForkServer(folder)
        except OSError:
            return None      # every judge then starts as a process of its own

    def _fill(self) -> None:
        while len(self.waiting) < min(self.count, self.left):
            try:
                self.waiting.append(start_judge(self.spec, self.server, self.folder))
            except OSError:
                return

    def take(self) -> subprocess.Popen | None:
        with self.lock:
            self.left -= 1
            judge = self.waiting.popleft() if self.waiting else None
            self._fill()
            return judge

    def close(self) -> None:
        with self.lock:
            while self.waiting:
                discard(self.waiting.popleft())
            if self.server is not None:
                self.server.close()
                self.server = None
            shutil.rmtree(self.folder, ignore_errors=True)   # what a judge or the server left, past every judge's end


def discard(judge: subprocess.Popen | None) -> None:
    """Stop a judge that will get no job (closing its input: it stops its runner and exits)."""
    if judge is None:
        return
    for stream in (judge.stdin, judge.stdout):
        try:
            stream.close()
        except OSError:
            pass
    try:
        judge.wait(timeout=10)
    except subprocess.TimeoutExpired:
        kill_group(judge)
    ended(judge)
