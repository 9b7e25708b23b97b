"""``autograder.batch.stage_times``: seconds summed per stage across calls and threads, and ``snapshot``
returning the totals and starting again from zero."""

from __future__ import annotations

import threading
import time

import pytest

from autograder.batch import stage_times


@pytest.fixture(autouse=True)
def fresh():
    stage_times.snapshot()
    yield
    stage_times.snapshot()


def test_stages_add_up_and_a_snapshot_starts_again_from_zero():
    stage_times.add("judge", 1.25)
    stage_times.add("judge", 0.5)
    stage_times.add("record", 2)
    assert stage_times.snapshot() == {"judge": 1.75, "record": 2.0}
    assert stage_times.snapshot() == {}


def test_a_stage_counts_its_time_even_when_it_fails():
    with pytest.raises(KeyError):
        with stage_times.stage("read"):
            time.sleep(0.02)
            raise KeyError("x")
    with stage_times.stage("read"):
        pass
    seconds = stage_times.snapshot()["read"]
    assert 0.02 <= seconds < 1


def test_worker_threads_add_to_the_same_totals():
    def work():
        for _ in range(1000):
            stage_times.add("judge", 0.001)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert stage_times.snapshot()["judge"] == pytest.approx(4.0)
