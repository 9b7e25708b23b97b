"""The second pass: a mistake is charged where it is made (issue 51).

An exercise whose solution uses an earlier one (``conventions.exercise_dependencies``: a block built with the
student's ``LayerNorm``) fails its tests when that earlier answer is wrong, with nothing wrong in its own
code. After the walk, for every test cell that failed while an exercise its exercise uses lost points too,
the judge starts one fresh runner (a new ``Workspace``: fresh scratch folder, fresh private ``/tmp``), runs
the set-up, answer and student cells there with each such upstream answer replaced by the course's code
(``JudgeJob.references``), and judges those test cells again. A cell that passes there takes the pass, its
outputs replaced by one note naming the course's part it was graded with; nothing the second runner printed
or raised reaches the page (the course's code runs there, and the student's code beside it could print it).
A cell that fails again keeps its first outputs, its message extended by a line naming the upstream
exercise; so does a cell the second pass could not judge (no time left, the runner failed), saying why.

Where the course's code runs: an upstream exercise whose own tests are not judged again runs it in place of
the student's answer cell; one whose own tests are judged again (it too uses a part that failed) keeps the
student's answer for those tests, and the course's code runs just before the answer cell of the first
exercise graded with it, after those tests. The second pass never lowers a score and never sets the
notebook's status: it only turns failed cells into passes, within the notebook's time limit.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from ..sandbox import confinement
from .outputs import stream_output
from .protocol import JudgeJob, RunnerSpec, failed_line, nbgrader_meta, passed_note
from .workspace import START_FAILURES, Workspace


@dataclass
class Plan:
    """What the second pass does: the test cells it judges again (index -> the failed exercises its own
    exercise uses), and for each of those upstream exercises the first of its tests that failed."""

    retest: dict = field(default_factory=dict)
    culprits: dict = field(default_factory=dict)


def failed(outputs: list) -> bool:
    """nbgrader's verdict on a graded cell: it loses its points when its outputs hold an error."""
    return any(type(o) is dict and o.get("output_type") == "error" for o in outputs)


def plan(job: JudgeJob, outputs: dict) -> Plan:
    """The second pass for a walk whose kept outputs are ``outputs`` (cell index -> outputs)."""
    first_failure: dict[str, str] = {}
    failing: list[tuple[int, str]] = []
    for index, cell in enumerate(job.cells):
        meta = nbgrader_meta(cell)
        exercise = job.exercise_of.get(str(meta.get("grade_id")))
        if meta.get("grade") is True and exercise and failed(outputs.get(index, [])):
            first_failure.setdefault(exercise, str(meta.get("grade_id")))
            failing.append((index, exercise))
    result = Plan()
    for index, exercise in failing:
        upstream = [u for u in job.upstream.get(exercise, []) if u in first_failure and u in job.references]
        if upstream:
            result.retest[index] = upstream
            result.culprits.update({u: first_failure[u] for u in upstream})
    return result


def add_line(outputs: list, line: str) -> None:
    """``line`` added to the cell's first error (the message a feedback page shows, hidden tests included)."""
    for output in outputs:
        if type(output) is dict and output.get("output_type") == "error":
            output["evalue"] = f"{output.get('evalue', '')}\n{line}"
            output["traceback"] = list(output.get("traceback") or []) + [line]
            return


class SecondRunner:
    """The fresh runner of the second pass and the notebook's clock: every cell is started only while the
    notebook's time limit leaves room for it to run to its own limit."""

    def __init__(self, job: JudgeJob, work: Plan, deadline: float, setup_timeout_s: float):
        self.job, self.work, self.deadline, self.setup_timeout_s = job, work, deadline, setup_timeout_s
        self.verdicts: dict[int, object] = {}    # retested cell index -> its CellOutcome in the second runner
        self.stopped = ""                        # why the second pass stopped early, if it did
        self.retested = {job.exercise_of.get(str(nbgrader_meta(job.cells[i]).get("grade_id"))) for i in work.retest}

    def room_for(self, seconds: float) -> bool:
        if time.perf_counter() + seconds > self.deadline:
            self.stopped = "no time left within the notebook's time limit"
        return not self.stopped

    def run(self, first_pass_s: float) -> None:
        """Start the runner only if the time limit leaves room for the first pass again (the second runs at
        most what it ran) and for the set-up cell."""
        limits = self.job.limits
        if not self.room_for(max(first_pass_s, limits.cell_timeout_s + self.setup_timeout_s)):
            return
        with Workspace(RunnerSpec(limits, list(self.job.hide))) as space:
            if self.job.submission_dir:
                confinement.copy_submission_files(Path(self.job.submission_dir), space.scratch)
            try:
                space.start_for(self.job)
            except START_FAILURES as error:
                self.stopped = f"its second runner did not start ({str(error)[:100]})"
                return
            space.session.untrusted_reports = self.job.untrusted_reports
            self._walk(space.session)

    def _walk(self, session) -> None:
        last = max(self.work.retest)
        ran: set[str] = set()
        for index, cell in enumerate(self.job.cells[:last + 1]):
            if cell.get("cell_type") != "code" or not self.room_for(self.job.limits.cell_timeout_s):
                continue
            meta = nbgrader_meta(cell)
            if index in self.work.retest:
                self.verdicts[index] = session.run_test_cell(str(cell.get("source", "")), str(meta.get("grade_id")))
            elif index in self.job.run_indices and meta.get("grade") is not True:
                self._run_cell(session, index, cell, ran)

    def _run_cell(self, session, index: int, cell: dict, ran: set) -> None:
        meta = nbgrader_meta(cell)
        name = str(meta.get("grade_id")) if index in self.job.answer_cells else ""
        if name in self.retested:   # the course's parts it is graded with, before its cell defines it
            for upstream in self.job.upstream.get(name, []):
                if upstream in self.work.culprits and upstream not in ran:
                    session.run_cell(self.job.references[upstream])
                    ran.add(upstream)
        if name in self.work.culprits and name not in self.retested:
            session.run_cell(self.job.references[name])   # in place of the student's answer
            ran.add(name)
            return
        setup = meta.get("grade_id") == "setup"
        session.run_cell(str(cell.get("source", "")), limit_s=self.setup_timeout_s if setup else None)


def second_pass(job: JudgeJob, cells: list, begun: float, setup_timeout_s: float) -> None:
    """Judge again, with the course's code for the failed parts they use, the test cells that failed while an
    earlier exercise they use failed; ``cells`` (the walk's ``CellResult``s) take the verdicts, in place.
    ``begun``: when the notebook's judging began (``time.perf_counter``), for its time limit."""
    by_index = {cell.index: cell.outputs for cell in cells}
    work = plan(job, by_index)
    if not work.retest:
        return
    runner = SecondRunner(job, work, begun + job.limits.notebook_timeout_s, setup_timeout_s)
    runner.run(time.perf_counter() - begun)
    for index, upstream in work.retest.items():
        outcome = runner.verdicts.get(index)
        exercise = job.exercise_of.get(str(nbgrader_meta(job.cells[index]).get("grade_id")), "this exercise")
        if outcome is not None and not outcome.trouble and not failed(outcome.outputs):
            by_index[index][:] = [stream_output(passed_note(exercise, upstream, work.culprits))]
        elif outcome is not None and not outcome.trouble:
            add_line(by_index[index], failed_line(exercise, upstream, work.culprits, None))
        else:   # the status's name only: a message from the second runner could quote the course's code
            why = runner.stopped or (f"its second run ended in '{outcome.trouble}'" if outcome is not None
                                     else "the second runner stopped before this test")
            add_line(by_index[index], failed_line(exercise, upstream, work.culprits, why[:150]))
