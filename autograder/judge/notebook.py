"""Judging a whole notebook: which cells run where, what sets the status, what is kept of the outputs.

Cells are walked in order. The set-up cell, the answer cells and the student's own cells
(``job.run_indices``) run in the runner; the course's demo and figure cells are not re-run (they
teach, they don't grade). Each graded test cell runs in the judge. Trouble in an answer cell or a
test (a timeout, the process dying, memory) sets the notebook's status; trouble in a student's own
cell is only reported in the detail.
"""

from __future__ import annotations

import time
from pathlib import Path

from ..sandbox import confinement
from .protocol import AHEAD_PREFIX, CellResult, JudgeJob, JudgeResult, RunnerSpec, Status, nbgrader_meta
from .outputs import keep_within_budget
from .second_pass import second_pass
from .session import CellOutcome, Session
from .workspace import START_FAILURES, Workspace

SETUP_TIMEOUT_S = 120   # the set-up cell (imports; on a busy machine that can take a while)
RUNNER_START = "runner start (sandbox, Python)"
SECOND_PASS = "second pass (tests judged again with the course's earlier parts)"
# Work done before the job arrived, while the grader was busy with the previous notebook: reported
# apart from the other timings, which add up to the time the job took.
RUNNER_STARTED_AHEAD = AHEAD_PREFIX + "runner start, overlapped with the previous notebook"


def section_of(cells: list, index: int) -> str:
    """The heading of the section a cell is in (for messages about ungraded cells)."""
    for cell in reversed(cells[:index]):
        if cell.get("cell_type") == "markdown":
            for line in reversed(str(cell.get("source", "")).splitlines()):   # the last heading above the cell
                if line.startswith("#"):
                    return line.lstrip("#").strip()[:80]
    return "the top of the notebook"


class _Walk:
    """The notebook's verdict as it builds up: statuses, details, kept outputs, time per kind of cell."""

    def __init__(self):
        self.statuses: list[str] = []
        self.details: list[str] = []
        self.cells: list[CellResult] = []
        self.spent = 0
        self.timings = {RUNNER_START: 0.0, "set-up cell": 0.0, "answer and student cells": 0.0, "test cells": 0.0}

    def keep(self, index: int, outcome: CellOutcome, graded: bool) -> None:
        self.spent = keep_within_budget(outcome.outputs, self.spent, graded)
        self.cells.append(CellResult(index, outcome.outputs))

    def result(self) -> JudgeResult:
        status = Status(self.statuses[0]) if self.statuses else Status.OK
        return JudgeResult(status, "; ".join(dict.fromkeys(self.details))[:1000], self.cells, self.timings)


def judge_notebook(job: JudgeJob, workspace: Workspace | None = None) -> JudgeResult:
    """Run a job (built by ``autograder.batch.preparation.prepare_job``) and return the notebook's result, in
    ``workspace`` (a runner started ahead, used if it suits the job) or a fresh one; closes it."""
    begun = time.perf_counter()
    walk = _Walk()
    if workspace is not None and not workspace.suits(job):
        workspace.close()
        workspace = None
    with workspace or Workspace(RunnerSpec(job.limits, list(job.hide))) as space:
        if job.submission_dir:
            skipped = confinement.copy_submission_files(Path(job.submission_dir), space.scratch)
            if skipped:
                walk.details.append("files not copied: " + ", ".join(skipped[:5]))
        started = time.perf_counter()
        try:
            space.start_for(job)
        except START_FAILURES as error:
            return JudgeResult.failed(f"could not start the student's process: {error}"[:300])
        walk.timings[RUNNER_START] = time.perf_counter() - started
        space.session.untrusted_reports = job.untrusted_reports
        if space.started_ahead_s is not None:
            walk.timings[RUNNER_STARTED_AHEAD] = space.started_ahead_s
        for index, cell in enumerate(job.cells):
            if cell.get("cell_type") == "code":
                _judge_cell(job, space.session, walk, index, cell)
    # After the first runner is gone (no two runners' memory at once): the failures an earlier exercise caused.
    started = time.perf_counter()
    second_pass(job, walk.cells, begun, SETUP_TIMEOUT_S)
    walk.timings[SECOND_PASS] = time.perf_counter() - started
    return walk.result()


def _judge_cell(job: JudgeJob, session: Session, walk: _Walk, index: int, cell: dict) -> None:
    meta = nbgrader_meta(cell)
    source = str(cell.get("source", ""))
    started = time.perf_counter()
    if meta.get("grade") is True:
        grade_id = str(meta.get("grade_id", index))
        outcome = session.run_test_cell(source, grade_id)
        walk.timings["test cells"] += time.perf_counter() - started
        if outcome.trouble:
            walk.statuses.append(outcome.trouble)
            walk.details.append(outcome.message or f"{grade_id}: {outcome.trouble}")
        walk.keep(index, outcome, graded=True)
    elif index in job.run_indices:
        setup = meta.get("grade_id") == "setup"
        outcome = session.run_cell(source, limit_s=max(job.limits.cell_timeout_s, SETUP_TIMEOUT_S) if setup else None)
        walk.timings["set-up cell" if setup else "answer and student cells"] += time.perf_counter() - started
        if outcome.trouble:
            where = job.cell_labels.get(str(index)) or f"a cell in '{section_of(job.cells, index)}'"
            walk.details.append(f"{where}: {outcome.message}")
            if index in job.answer_cells:
                walk.statuses.append(outcome.trouble)
        walk.keep(index, outcome, graded=False)
