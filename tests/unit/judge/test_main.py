"""``autograder.judge.__main__``: the batch entry point writes the result sealed with the job's key (a
judge that fails still answers, as an error), and the attached entry point reads one job line, answers
each test with a verdict and ends with the ``done`` line. Standard input and output are stand-ins here."""

from __future__ import annotations

import io
import json
import sys
import types

import pytest

from autograder.sandbox import processes
from autograder.sandbox.limits import Limits
from autograder.judge import __main__ as entry
from autograder.judge.session import AttachedSession
from autograder.judge.protocol import (JudgeJob, JudgeResult, ProtocolError, RunnerSpec, SelfGradeJob, Status, TestVerdict, unseal,
                                 verdicts_from)


class Kept(io.BytesIO):
    def close(self):
        pass


class FakeOs:
    """What the entry points use of ``os``: copies of fds 0/1 become in-memory files, reads come from ``chunks``."""

    def __init__(self, chunks=(), text=True):
        self.out = io.StringIO() if text else Kept()
        if text:
            self.out.close = lambda: None
        self.chunks = list(chunks)
        self.dup2s = []

    def dup(self, fd):
        return 100 + fd

    def fdopen(self, fd, mode, encoding=None):
        assert fd == 101
        return self.out

    def dup2(self, a, b):
        self.dup2s.append((a, b))

    def read(self, fd, size):
        assert fd == 0
        return self.chunks.pop(0) if self.chunks else b""


JOB = JudgeJob(cells=[], run_indices=[], answer_cells=[], cell_labels={}, names=[],
               limits=Limits(sandbox="none"))


@pytest.fixture
def batch(monkeypatch):
    fake = FakeOs()
    monkeypatch.setattr(entry, "os", fake)
    monkeypatch.setattr(processes, "become_subreaper", lambda: None)
    monkeypatch.setattr(sys, "stdin", io.StringIO(JOB.to_message(b"the key").decode()))
    return fake


def test_the_batch_judge_writes_its_result_sealed_with_the_jobs_key(batch, monkeypatch):
    judged = []
    result = JudgeResult(Status.TIMEOUT, "slow", [], {"test cells": 1.0})
    monkeypatch.setattr(entry, "judge_notebook", lambda job, workspace=None: judged.append(job) or result)
    assert entry.main() == 0
    assert judged == [JOB]
    assert JudgeResult.from_json(unseal(batch.out.getvalue(), b"the key")) == result
    with pytest.raises(ProtocolError, match="bad signature"):
        unseal(batch.out.getvalue(), b"another key")
    assert batch.dup2s == [(2, 1)]   # stray prints go to the log, not into the result


def test_a_judge_that_fails_still_answers_with_an_error_result(batch, monkeypatch):
    def crash(job, workspace=None):
        raise RuntimeError("boom " + "x" * 400)

    monkeypatch.setattr(entry, "judge_notebook", crash)
    assert entry.main() == 0
    result = JudgeResult.from_json(unseal(batch.out.getvalue(), b"the key"))
    assert result.status == Status.ERROR and result.cells == []
    assert result.detail.startswith("judge failed: RuntimeError: boom xxx") and len(result.detail) == 300


def attached(monkeypatch, chunks):
    fake = FakeOs(chunks, text=False)
    monkeypatch.setattr(entry, "os", fake)
    return fake


TESTS = [{"exercise": "double", "grade_id": "test_double", "points": 1, "source": "assert double(2) == 4"},
         {"exercise": "double", "grade_id": "test_double_hidden", "points": 2.5,
          "source": "assert double(3) == 6, 'double(3) should be 6'"}]


def test_the_attached_judge_answers_each_test_with_a_verdict_and_ends_with_done(monkeypatch):
    job = SelfGradeJob(["double"], TESTS, 30).to_json().encode()
    replies = b'{"id": 1, "ok": true, "value": 4}\n{"id": 2, "ok": true, "value": 7}\n'
    fake = attached(monkeypatch, [job[:10], job[10:] + b"\n" + replies])
    assert entry.main_attached() == 0
    lines = fake.out.getvalue().decode().splitlines()
    calls = [json.loads(line) for line in lines[:-1]]
    assert [(c["op"], c["target"], c["args"], c["id"], c["limit"]) for c in calls] == \
        [("call", {"name": "double"}, [2], 1, 30.0), ("call", {"name": "double"}, [3], 2, 30.0)]
    assert verdicts_from(json.loads(lines[-1])) == [
        TestVerdict("double", "test_double", 1.0, True, ""),
        TestVerdict("double", "test_double_hidden", 2.5, False, "AssertionError: double(3) should be 6")]
    assert json.loads(lines[-1])["op"] == "done"


@pytest.mark.parametrize("chunks", [[b'{"names": []'], [b"not a job\n"], [b'{"names": [], "tests": 3}\n']])
def test_the_attached_judge_gives_up_without_a_whole_valid_job_line(monkeypatch, chunks):
    fake = attached(monkeypatch, chunks)
    assert entry.main_attached() == 1
    assert fake.out.getvalue() == b""


def test_once_the_kernel_is_gone_the_remaining_tests_are_not_run():
    session = AttachedSession(["double"], None, 5)
    session.gone = True
    verdict = entry._verdict(session, {"grade_id": "test_double", "points": 1, "source": "raise SystemExit"})
    assert verdict == TestVerdict("", "test_double", 1.0, False, "NotRun: your kernel stopped answering")


def test_a_test_without_points_is_worth_nothing_but_still_judged():
    session = types.SimpleNamespace(gone=False, run_test_cell=lambda source, grade_id: types.SimpleNamespace(outputs=[
        {"output_type": "stream", "text": "ok"}]))
    assert entry._verdict(session, {"grade_id": "t", "source": ""}) == TestVerdict("", "t", 0.0, True, "")


def test_the_judge_started_ahead_reads_a_runner_spec_first_and_starts_its_runner_before_the_job(batch, monkeypatch):
    spec = RunnerSpec(JOB.limits, list(JOB.hide))
    monkeypatch.setattr(sys, "stdin", io.StringIO(spec.to_line().decode() + JOB.to_message(b"the key").decode()))
    events = []

    class Ahead:
        @classmethod
        def ahead(cls, given):
            events.append(("started ahead", given))
            return "the workspace"

    monkeypatch.setattr(entry, "Workspace", Ahead)
    monkeypatch.setattr(entry, "judge_notebook", lambda job, workspace=None: events.append((job, workspace))
                        or JudgeResult(Status.OK))
    assert entry.main(ahead=True) == 0
    assert events == [("started ahead", spec), (JOB, "the workspace")]
    assert JudgeResult.from_json(unseal(batch.out.getvalue(), b"the key")).status == Status.OK


def test_a_judge_started_ahead_that_gets_no_job_closes_its_workspace(batch, monkeypatch):
    spec = RunnerSpec(JOB.limits, list(JOB.hide))
    monkeypatch.setattr(sys, "stdin", io.StringIO(spec.to_line().decode()))   # the grader closed the pipe
    closed = []

    class Ahead:
        @classmethod
        def ahead(cls, given):
            return cls()

        def close(self):
            closed.append(True)

    monkeypatch.setattr(entry, "Workspace", Ahead)
    with pytest.raises(ValueError):
        entry.main(ahead=True)
    assert closed == [True]
