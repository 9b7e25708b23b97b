"""Judges started ahead: how many wait, when new ones start, that unused ones are stopped; and the
runner spec line they read first."""

from __future__ import annotations

import pytest

from autograder.judge import client
from autograder.judge.protocol import ProtocolError, RunnerSpec
from autograder.sandbox.limits import Limits


class FakeJudge:
    """Stands in for a judge process: records that it was started and how it was stopped."""

    started = []

    def __init__(self, spec, server=None, parent=None):
        self.spec = spec
        self.closed = False
        FakeJudge.started.append(self)
        self.stdin = self.stdout = self

    def close(self):
        self.closed = True

    def wait(self, timeout=None):
        return 0


@pytest.fixture
def fake_judges(monkeypatch):
    FakeJudge.started = []
    monkeypatch.setattr(client, "start_judge", FakeJudge)
    monkeypatch.setattr(client, "ForkServer", lambda folder=None: None)    # no server process for stand-in judges
    return FakeJudge.started


SPEC = RunnerSpec(Limits(cell_timeout_s=30, notebook_timeout_s=600, memory_mb=2048, sandbox="none"), ["/hidden"])


def test_one_judge_waits_per_worker_and_the_next_starts_when_one_is_taken(fake_judges):
    ahead = client.JudgesAhead(SPEC, jobs=3, count=1)
    assert len(fake_judges) == 1 and all(j.spec == SPEC for j in fake_judges)
    first = ahead.take()
    assert first is fake_judges[0] and len(fake_judges) == 2, "taking one starts the next job's judge"
    ahead.take()
    assert len(fake_judges) == 3
    third = ahead.take()
    assert third is fake_judges[2] and len(fake_judges) == 3, "no judge is started beyond the jobs"
    assert ahead.take() is None, "more takes than jobs: the job starts its own judge"
    ahead.close()
    assert not any(j.closed for j in fake_judges), "judges handed out are not the pool's to stop"


def test_never_more_waiting_than_jobs_left(fake_judges):
    ahead = client.JudgesAhead(SPEC, jobs=2, count=4)
    assert len(fake_judges) == 2
    ahead.take()
    assert len(fake_judges) == 2 and len(ahead.waiting) == 1


def test_close_stops_the_judges_never_used(fake_judges):
    ahead = client.JudgesAhead(SPEC, jobs=5, count=2)
    taken = ahead.take()
    ahead.close()
    unused = [j for j in fake_judges if j is not taken]
    assert len(unused) == 2 and all(j.closed for j in unused) and not taken.closed
    assert not ahead.waiting


def test_a_judge_that_cannot_be_started_leaves_the_job_to_start_its_own(monkeypatch):
    def no_processes(spec, server=None, parent=None):
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(client, "start_judge", no_processes)
    monkeypatch.setattr(client, "ForkServer", lambda folder=None: None)
    ahead = client.JudgesAhead(SPEC, jobs=2, count=1)
    assert ahead.take() is None and ahead.take() is None


def test_discard_ignores_none_and_closes_both_pipes():
    client.discard(None)
    judge = FakeJudge(SPEC)
    client.discard(judge)
    assert judge.closed


def test_runner_spec_round_trip_and_rejections():
    assert RunnerSpec.from_line(SPEC.to_line()) == SPEC
    assert SPEC.to_line().endswith(b"\n") and SPEC.to_line().count(b"\n") == 1
    for bad in (b"not json\n", b"[]\n", b'{"limits": 3}\n', b'{"limits": {"memory": 1}}\n', b'{"limits": {"memory_mb": 1}}\n',
                b'{"limits": {}, "hide": [1]}\n'):
        with pytest.raises(ProtocolError):
            RunnerSpec.from_line(bad)
