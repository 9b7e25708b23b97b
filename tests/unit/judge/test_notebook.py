"""``autograder.judge.notebook``: which cells run where, what sets the notebook's status and what only
goes into the detail, with a fake session in place of the runner (no process starts)."""

from __future__ import annotations

from pathlib import Path

import pytest

from autograder.sandbox import processes
from autograder.sandbox.limits import Limits
from autograder.judge import workspace
from autograder.judge.notebook import (RUNNER_START, RUNNER_STARTED_AHEAD, SECOND_PASS, SETUP_TIMEOUT_S, judge_notebook,
                                      section_of)
from autograder.judge.workspace import Workspace
from autograder.judge.protocol import RunnerSpec
from autograder.judge.session import CellOutcome
from autograder.judge.transport import RunnerGone
from autograder.judge.protocol import CellResult, JudgeJob, Status


def code(source, **nbgrader):
    return {"cell_type": "code", "source": source, "metadata": {"nbgrader": nbgrader} if nbgrader else {}}


def markdown(source):
    return {"cell_type": "markdown", "source": source, "metadata": {}}


CELLS = [
    code("import torch", grade_id="setup"),                                   # 0: set-up
    markdown("# Chapter\n\n## 1. Doubling\nSome prose"),                      # 1
    code("def double(x): ...", solution=True, grade_id="double"),              # 2: answer
    code("plot(double)"),                                                     # 3: demo, not re-run
    code("assert double(2) == 4", grade=True, grade_id="test_double"),        # 4: test
    markdown("### Your experiments"),                                         # 5
    code("my_own = 1"),                                                       # 6: the student's own cell
    code("assert double(3) == 6", grade=True, grade_id="test_double_hidden"),  # 7: test
]


class FakeConnection:
    """The runner's pipe, as far as entering a workspace goes: records requests; ``gone`` fails them."""

    def __init__(self, session, gone=False):
        self.session, self.gone, self.requests = session, gone, []

    def request(self, message, limit_s):
        self.requests.append(message)
        if self.session.fail_enter:
            raise RunnerGone("kernel died", "the student's process had exited")
        self.session.files = {p.name: p.read_text() for p in self.session.scratch.iterdir()}
        return {"ok": True}


class FakeSession:
    """Records what ran where; ``troubles`` maps a source to the CellOutcome it gets."""

    instances = []

    def __init__(self, scratch, limits, hide, names, log_path, *, troubles=None, fail_start=None, fail_enter=False):
        self.scratch, self.limits, self.hide, self.names, self.log_path = scratch, limits, hide, names, log_path
        self.ran, self.tested, self.stopped = [], [], 0
        self.troubles = troubles or {}
        self.fail_start, self.fail_enter = fail_start, fail_enter
        FakeSession.instances.append(self)

    def declare_contracts(self, declared):
        self.contracts = dict(declared)

    def start(self):
        self.files = {p.name: p.read_text() for p in self.scratch.iterdir()}   # the scratch folder goes with the judge
        self.started = getattr(self, "started", 0) + 1
        if self.fail_start:
            raise self.fail_start
        self.connection = FakeConnection(self)

    def stop(self):
        self.stopped += 1

    def alive(self):
        return self.stopped == 0

    def run_cell(self, source, limit_s=None):
        self.ran.append((source, limit_s))
        return self.troubles.get(source, CellOutcome([{"output_type": "stream", "name": "stdout", "text": source}]))

    def run_test_cell(self, source, grade_id):
        self.tested.append((source, grade_id))
        return self.troubles.get(source, CellOutcome())


@pytest.fixture
def fake(monkeypatch):
    FakeSession.instances.clear()
    settings = {}
    monkeypatch.setattr(workspace, "Session", lambda *a: FakeSession(*a, **settings))
    monkeypatch.setattr(processes, "kill_descendants", lambda: None)
    return settings


def job(**changes):
    fields = dict(cells=CELLS, run_indices=[0, 2, 6], answer_cells=[2], cell_labels={"2": "your answer to double"},
                  names=["double"], limits=Limits(cell_timeout_s=9, sandbox="none"), hide=["/secret"])
    fields.update(changes)
    return JudgeJob(**fields)


def test_run_cells_run_in_the_runner_tests_here_and_demos_nowhere(fake):
    result = judge_notebook(job())
    session = FakeSession.instances[0]
    assert session.ran == [("import torch", SETUP_TIMEOUT_S), ("def double(x): ...", None), ("my_own = 1", None)]
    assert session.tested == [("assert double(2) == 4", "test_double"), ("assert double(3) == 6", "test_double_hidden")]
    assert session.names == ["double"] and [str(p) for p in session.hide] == ["/secret"]
    assert session.stopped == 1
    assert result.status == Status.OK and result.detail == ""
    assert [c.index for c in result.cells] == [0, 2, 4, 6, 7]
    assert result.cells[0] == CellResult(0, [{"output_type": "stream", "name": "stdout", "text": "import torch"}])
    assert set(result.timings) == {RUNNER_START, "set-up cell", "answer and student cells", "test cells", SECOND_PASS}


def test_a_long_cell_timeout_also_applies_to_the_set_up_cell(fake):
    judge_notebook(job(limits=Limits(cell_timeout_s=300, sandbox="none")))
    assert FakeSession.instances[0].ran[0] == ("import torch", 300)


def test_trouble_in_an_answer_cell_sets_the_status_and_in_a_students_own_cell_only_the_detail(fake):
    fake["troubles"] = {"my_own = 1": CellOutcome([], Status.TIMEOUT, "ran past 9 s"),
                        "def double(x): ...": CellOutcome([], Status.MEMORY_LIMIT, "ran out of memory")}
    result = judge_notebook(job())
    assert result.status == Status.MEMORY_LIMIT
    assert result.detail == "your answer to double: ran out of memory; a cell in 'Your experiments': ran past 9 s"


def test_a_students_own_trouble_alone_leaves_the_status_ok(fake):
    fake["troubles"] = {"my_own = 1": CellOutcome([], Status.KERNEL_DIED, "exited")}
    result = judge_notebook(job(cells=CELLS[:5] + [code("my_own = 1")], run_indices=[0, 2, 5]))
    assert result.status == Status.OK and result.detail == "a cell in '1. Doubling': exited"


def test_the_first_troubled_test_sets_the_status_and_each_detail_is_said_once(fake):
    fake["troubles"] = {"assert double(2) == 4": CellOutcome([], Status.TIMEOUT, ""),
                        "assert double(3) == 6": CellOutcome([], Status.KERNEL_DIED, "exited")}
    result = judge_notebook(job())
    assert result.status == Status.TIMEOUT and result.detail == "test_double: timeout; exited"
    fake["troubles"] = {"assert double(2) == 4": CellOutcome([], Status.TIMEOUT, "slow"),
                        "assert double(3) == 6": CellOutcome([], Status.TIMEOUT, "slow")}
    assert judge_notebook(job()).detail == "slow"


def test_a_runner_that_cannot_start_is_a_failed_result(fake):
    fake["fail_start"] = RunnerGone(Status.TIMEOUT, "no reply to the first cell")
    result = judge_notebook(job())
    assert result.status == Status.ERROR and result.cells == []
    assert result.detail == "could not start the student's process: no reply to the first cell"
    assert FakeSession.instances[0].stopped == 1


def test_the_submissions_files_are_copied_and_the_ones_skipped_are_named(fake, tmp_path):
    folder = tmp_path / "ann"
    folder.mkdir()
    (folder / "data.txt").write_text("x")
    (folder / "torch.py").write_text("x")    # would shadow a module: not copied
    result = judge_notebook(job(submission_dir=str(folder)))
    assert FakeSession.instances[0].files == {"data.txt": "x"}
    assert result.detail.startswith("files not copied: torch.py")


def test_a_cell_with_strange_metadata_is_a_plain_cell(fake):
    cells = [code("x = 1"), {"cell_type": "code", "source": "y", "metadata": {"nbgrader": "grade"}}]
    result = judge_notebook(job(cells=cells, run_indices=[1], answer_cells=[]))
    assert FakeSession.instances[0].ran == [("y", None)] and FakeSession.instances[0].tested == []
    assert [c.index for c in result.cells] == [1]


def test_a_cells_section_is_the_nearest_heading_above_it():
    assert section_of(CELLS, 7) == "Your experiments"
    assert section_of(CELLS, 4) == "1. Doubling"
    assert section_of(CELLS, 1) == "the top of the notebook"
    assert section_of([markdown("#" + "x" * 200), code("")], 1) == "x" * 80


def test_a_runner_started_ahead_is_started_before_its_job_and_enters_its_files(fake, tmp_path):
    ahead = Workspace.ahead(RunnerSpec(job().limits, ["/secret"]))
    runner = FakeSession.instances[0]
    assert runner.started == 1 and runner.files == {}, "started ahead: the scratch folder is still empty"
    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / "data.txt").write_text("x")
    result = judge_notebook(job(submission_dir=str(folder)), ahead)
    assert len(FakeSession.instances) == 1 and runner.started == 1, "the same runner, not a second start"
    assert runner.connection.requests == [{"op": "enter"}] and runner.files == {"data.txt": "x"}
    assert runner.names == ["double"] and runner.ran[0][0] == "import torch" and runner.stopped == 1
    assert RUNNER_STARTED_AHEAD in result.timings and result.timings[RUNNER_STARTED_AHEAD] >= 0
    assert result.status == Status.OK


def test_a_workspace_for_other_limits_or_hidden_paths_is_closed_and_a_fresh_runner_started(fake):
    ahead = Workspace.ahead(RunnerSpec(job().limits, ["/another"]))
    result = judge_notebook(job(), ahead)
    first, second = FakeSession.instances
    assert first.stopped == 1 and first.ran == [], "the unsuitable runner ran nothing"
    assert second.hide == [Path("/secret")] and second.started == 1 and second.ran
    assert RUNNER_STARTED_AHEAD not in result.timings


def test_a_runner_started_ahead_that_died_is_replaced_when_the_job_comes(fake):
    fake["fail_enter"] = True
    ahead = Workspace.ahead(RunnerSpec(job().limits, ["/secret"]))
    runner = FakeSession.instances[0]
    first_pipe = runner.connection
    result = judge_notebook(job(), ahead)
    assert first_pipe.requests == [{"op": "enter"}] and runner.started == 2 and runner.ran
    assert RUNNER_STARTED_AHEAD not in result.timings and result.status == Status.OK


def test_a_runner_that_cannot_start_ahead_starts_with_its_job(fake):
    fake["fail_start"] = RunnerGone("kernel died", "no")
    ahead = Workspace.ahead(RunnerSpec(job().limits, ["/secret"]))
    assert ahead.started_ahead_s is None
    result = judge_notebook(job(), ahead)
    assert result.status == Status.ERROR and "could not start" in result.detail
