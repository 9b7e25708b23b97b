"""A judge's workspace: a private temporary folder, the scratch folder the runner sees read-only, and
the session with the runner, started either when the job arrives or ahead of it.

A runner started ahead (``python -m autograder.judge --ahead``) is started with an empty scratch
folder, the run's limits and the paths it hides (a ``RunnerSpec``), while the grader is still busy
with the previous notebook: Python, PyTorch and the sandbox then start on an idle core instead of on
the next notebook's clock. When the job arrives, the submission's files are copied into the scratch
folder and the runner copies them in (its ``enter`` request) before any of the student's code runs.
A runner still serves one notebook only; a job whose limits or hidden paths differ gets a fresh one.

Everything a judge makes on disk lies in its own temporary folder (``own_temporary_folder``: the one the
grader made for it and named in ``TEMP_FOLDER_VARIABLE``, or one of its own): the workspace, and beside its
scratch folder the sandbox's made-up ``/etc``. The judge removes it however ``main`` ends (a forked judge
then ends by ``os._exit``, which runs no ``atexit`` hook and no finaliser); the grader removes it again once
the judge has ended, which covers a judge killed by a signal (the notebook's time limit, SIGKILL).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from pathlib import Path

from ..sandbox import bubblewrap
from ..sandbox import processes
from .protocol import TEMP_FOLDER_VARIABLE, JudgeJob, RunnerSpec
from .session import STARTUP_TIMEOUT_S, Session
from .transport import RunnerGone

START_FAILURES = (RunnerGone, bubblewrap.SandboxUnavailable, OSError)


@contextlib.contextmanager
def own_temporary_folder():
    """The judge's temporary folder while the block runs (``tempfile`` makes everything there), removed
    when it ends, returning or raising: the grader's (``TEMP_FOLDER_VARIABLE``), else a new one."""
    given = os.environ.get(TEMP_FOLDER_VARIABLE, "")
    folder = given if given and os.path.isdir(given) else tempfile.mkdtemp(prefix="course-judge-")
    previous, tempfile.tempdir = tempfile.tempdir, folder
    try:
        yield Path(folder)
    finally:
        tempfile.tempdir = previous
        shutil.rmtree(folder, ignore_errors=True)


class Workspace:
    """The temporary folder, scratch folder and runner session of one notebook's judging."""

    def __init__(self, spec: RunnerSpec):
        self.spec = spec
        self._folder = tempfile.TemporaryDirectory(prefix="course-grade-")
        self.scratch = Path(self._folder.name) / "work"
        self.scratch.mkdir()
        self.session = Session(self.scratch, spec.limits, [Path(p) for p in spec.hide], [],
                               Path(self._folder.name) / "runner.log")
        self.started_ahead_s: float | None = None   # seconds the runner took to start ahead of its job

    @classmethod
    def ahead(cls, spec: RunnerSpec) -> "Workspace":
        """A workspace whose runner starts now, before its job (if it cannot, it starts with the job)."""
        workspace = cls(spec)
        started = time.perf_counter()
        try:
            workspace.session.start()
            workspace.started_ahead_s = time.perf_counter() - started
        except START_FAILURES:
            workspace.session.stop()
        return workspace

    def suits(self, job: JudgeJob) -> bool:
        return job.limits == self.spec.limits and list(job.hide) == list(self.spec.hide)

    def start_for(self, job: JudgeJob) -> None:
        """The runner ready for ``job``, whose files are in the scratch folder: told to copy them in if
        it was started ahead, else started now. Raises what starting raises (``START_FAILURES``)."""
        self.session.names = list(job.names)
        self.session.declare_contracts(job.contracts)
        if self.started_ahead_s is not None and self.session.alive():
            try:
                self.session.connection.request({"op": "enter"}, STARTUP_TIMEOUT_S)
                return
            except RunnerGone:
                self.session.stop()
        self.started_ahead_s = None
        self.session.start()

    def close(self) -> None:
        self.session.stop()
        processes.kill_descendants()
        self._folder.cleanup()

    def __enter__(self) -> "Workspace":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
