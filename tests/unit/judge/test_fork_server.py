"""Judges forked from one server (``autograder.judge.fork_server``): each is a judge as a process of its own
would be (its own session, its own input and output, the same verdicts), and without a server the grader
starts judge processes as before."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from autograder.judge import client
from autograder.judge.fork_server import ForkedJudge, ForkServer
from autograder.judge.protocol import AHEAD_PREFIX, JudgeJob, RunnerSpec, Status
from autograder.sandbox.limits import Limits

LIMITS = Limits(cell_timeout_s=30, notebook_timeout_s=120, sandbox="none")
GRADED = {"nbgrader": {"grade": True, "grade_id": "test_double", "points": 1}}
JOB = JudgeJob(cells=[{"cell_type": "code", "source": "def double(x):\n    return 2 * x\n", "metadata": {}},
                      {"cell_type": "code", "source": "assert double(21) == 42\nprint('forty-two')\n", "metadata": GRADED},
                      {"cell_type": "code", "source": "assert double(1) == 3\n", "metadata": GRADED}],
               run_indices=[0], answer_cells=[0], cell_labels={}, names=["double"], limits=LIMITS)


@pytest.fixture
def server():
    server = ForkServer()
    yield server
    server.close()


def _verdicts(result):
    return result.status, [(cell.index, [(o.get("output_type"), o.get("ename"), o.get("text")) for o in cell.outputs])
                           for cell in result.cells]


@pytest.mark.slow
def test_a_forked_judge_gives_the_verdicts_of_a_judge_process(server):
    fresh = client.run_judge(JOB, LIMITS)
    forked_judge = server.start()
    assert isinstance(forked_judge, ForkedJudge)
    forked = client.run_judge(JOB, LIMITS, judge=forked_judge)
    assert fresh.status == Status.OK and _verdicts(forked) == _verdicts(fresh)
    outputs = {cell.index: cell.outputs for cell in forked.cells}
    assert any("forty-two" in str(o.get("text")) for o in outputs[1])
    assert any(o.get("output_type") == "error" for o in outputs[2])
    assert forked_judge.wait(timeout=30) == 0 and forked_judge.poll() == 0


@pytest.mark.slow
def test_a_judge_started_ahead_is_forked_with_its_runner_spec(server):
    spec = RunnerSpec(LIMITS, [])
    judge = client.start_judge(spec, server)
    assert isinstance(judge, ForkedJudge)
    result = client.run_judge(JOB, LIMITS, judge=judge)
    assert result.status == Status.OK and any(name.startswith(AHEAD_PREFIX) for name in result.timings), result.timings


@pytest.mark.slow
def test_each_forked_judge_has_its_own_session_and_ends_when_its_input_closes(server):
    judges = [server.start(), server.start()]
    try:
        assert judges[0].pid != judges[1].pid
        for judge in judges:
            assert os.getsid(judge.pid) == judge.pid and os.getpgid(judge.pid) == judge.pid
            assert judge.poll() is None
            with pytest.raises(subprocess.TimeoutExpired):
                judge.wait(timeout=0.1)
    finally:
        for judge in judges:
            client.discard(judge)     # closes its input: a judge with no job writes nothing and exits
    assert all(judge.poll() is not None for judge in judges)


@pytest.mark.slow
def test_without_its_server_a_judge_starts_as_a_process_of_its_own(server):
    server.close()
    with pytest.raises(OSError):
        server.start()
    judge = client.start_judge(None, server)
    assert isinstance(judge, subprocess.Popen)
    client.discard(judge)
    assert judge.returncode is not None


def _until(condition, timeout_s: float = 60) -> None:
    import time

    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


@pytest.mark.slow
def test_a_forked_judge_removes_its_temporary_folder_before_it_ends_by_os_exit(server, tmp_path):
    """Forked judges end by ``os._exit`` (no atexit hook runs): the judge removes its folder (its workspace,
    the sandbox's /etc) itself, whether it judged a job or got none. Nothing here removes it for the judge:
    ``server.start`` gives a bare ``ForkedJudge`` (``client.ended`` knows no folder of it)."""
    judged, idle = tmp_path / "judged", tmp_path / "idle"
    judged.mkdir()
    idle.mkdir()
    assert client.run_judge(JOB, LIMITS, judge=server.start(False, str(judged))).status == Status.OK
    waiting = server.start(True, str(idle))
    waiting.stdin.write(RunnerSpec(LIMITS, []).to_line())
    waiting.stdin.flush()
    _until(lambda: any(idle.iterdir()))           # its workspace, runner started ahead
    client.discard(waiting)                       # no job: it stops its runner and exits
    assert not judged.exists() and not idle.exists()


@pytest.mark.slow
def test_the_grader_removes_the_temporary_folder_of_a_judge_that_was_killed(server, tmp_path):
    """A judge killed by SIGKILL (the notebook's time limit, anyone's kill) removes nothing: the grader
    removes its folder once it has ended; judges in a batch have theirs in the batch's folder."""
    import signal

    for forked in (server, None):
        judge = client.start_judge(RunnerSpec(LIMITS, []), forked, str(tmp_path))
        assert isinstance(judge, ForkedJudge if forked else subprocess.Popen)
        folder = Path(judge.temporary_folder)
        assert folder.parent == tmp_path
        _until(lambda: any(folder.iterdir()))     # the judge's workspace
        os.killpg(judge.pid, signal.SIGKILL)
        client.discard(judge)
        assert not any(tmp_path.iterdir()), list(tmp_path.iterdir())
