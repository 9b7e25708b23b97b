"""The suite never hangs on a worker that crashes (issue 47: a pytest-xdist worker aborted inside SQLite, xdist
replaced it, and both workers idled while the controller waited, until stopped by hand after 8 minutes).

Inner pytest sessions under the suite's own scheduler (tests/xdist_scheduling.py) and addopts (pyproject.toml,
two workers): one in which a test kills its worker must fail at once, naming that test; the same session
without the crash passes. Then the scheduler on its own, with stand-in workers: longest scope first, and what a
crash does to the queue and to the other workers.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import textwrap
import time
import tomllib
from pathlib import Path

import pytest

import xdist_scheduling
from xdist.remote import Producer
from xdist_scheduling import LongestScopeFirst

REPO = Path(__file__).resolve().parents[2]
ADDOPTS = shlex.split(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"])

INNER_CONFTEST = f"""
import sys
sys.path.insert(0, {str(Path(xdist_scheduling.__file__).parent)!r})
from xdist_scheduling import LongestScopeFirst, WorkerCrashes

def pytest_xdist_make_scheduler(config, log):
    return LongestScopeFirst(config, log, lambda nodeid: nodeid.split("::")[0], lambda scope, nodeids: 0.0)

def pytest_configure(config):
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(WorkerCrashes(), "worker_crashes")
"""

# Three scopes, longest first: test_long.py goes to one worker, test_crash.py to the other, test_other.py after.
# The crash waits until the other worker is running test_long.py, so that it has tests left to take back.
INNER_TESTS = {
    "test_long.py": """
        import os, pathlib, time, pytest

        @pytest.mark.parametrize("step", range(6))
        def test_step(step):
            pathlib.Path(os.environ["INNER_MARKS"], "long started").touch()
            time.sleep(0.2)
        """,
    "test_crash.py": """
        import os, pathlib, signal, time

        def test_before():
            pass

        def test_kills_its_worker():
            if os.environ.get("INNER_CRASH"):
                started, deadline = pathlib.Path(os.environ["INNER_MARKS"], "long started"), time.monotonic() + 20
                while not started.exists() and time.monotonic() < deadline:
                    time.sleep(0.01)
                os.kill(os.getpid(), signal.SIGABRT)

        def test_after():
            pass
        """,
    "test_other.py": """
        def test_other():
            pass
        """,
}
INNER_TEST_COUNT = 10
CRASHED = "test_crash.py::test_kills_its_worker"


def inner_run(root: Path, crash: bool) -> tuple[subprocess.CompletedProcess, float]:
    """The inner session, its plugins limited to xdist (seconds saved per worker on a busy machine); never
    longer than 60 s (a hang fails this test, by ``TimeoutExpired``)."""
    (root / "marks").mkdir(parents=True)
    (root / "conftest.py").write_text(INNER_CONFTEST)
    (root / "pytest.ini").write_text("[pytest]\n")
    for name, source in INNER_TESTS.items():
        (root / name).write_text(textwrap.dedent(source))
    env = {name: value for name, value in os.environ.items() if not name.startswith("PYTEST_")}
    env.update(PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", INNER_MARKS=str(root / "marks"))
    if crash:
        env["INNER_CRASH"] = "1"
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "xdist", "-p", "no:cacheprovider", *ADDOPTS,
                           "-v", "-rA"], cwd=root, env=env, capture_output=True, text=True, timeout=60)
    return done, time.monotonic() - start


def test_the_suite_runs_on_two_workers_and_starts_no_replacement_for_a_crashed_one():
    assert ADDOPTS[ADDOPTS.index("-n") + 1] == "2"
    assert "--max-worker-restart=0" in ADDOPTS


def test_a_worker_that_kills_itself_fails_the_run_at_once_naming_its_test(tmp_path):
    done, seconds = inner_run(tmp_path, crash=True)
    output = done.stdout + done.stderr
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, output
    assert f"crashed while running '{CRASHED}'" in output
    assert f"FAILED {CRASHED}" in output
    assert "PASSED test_crash.py::test_after" not in output       # the run stopped: nothing went back to the queue
    assert "tests not run" in output
    print(f"the inner run with a crashed worker exited {done.returncode} in {seconds:.1f} s")


def test_the_same_run_without_the_crash_passes(tmp_path):
    done, seconds = inner_run(tmp_path, crash=False)
    output = done.stdout + done.stderr
    assert done.returncode == pytest.ExitCode.OK, output
    assert "scheduling tests via LongestScopeFirst" in output
    assert f"{INNER_TEST_COUNT} passed" in output
    assert "worker crash" not in output
    print(f"the inner run passed in {seconds:.1f} s")


# -- the scheduler alone, with stand-in workers ------------------------------------------------------------


class Config:
    """What LoadScopeScheduling reads of pytest's config: two workers."""

    class option:
        loadscopereorder = True

    def getvalue(self, name):
        assert name == "tx"
        return ["popen", "popen"]


class Worker:
    """A stand-in for xdist's WorkerController: records what it is sent."""

    def __init__(self, name: str):
        self.gateway = type("Gateway", (), {"id": name})()
        self.sent: list[list[int]] = []
        self.stolen: list[list[int]] = []
        self.shutting_down = False

    def send_runtest_some(self, indices):
        self.sent.append(list(indices))

    def send_steal(self, indices):
        self.stolen.append(list(indices))

    def shutdown(self):
        self.shutting_down = True

    def __repr__(self):
        return self.gateway.id


COLLECTION = ([f"test_long.py::test_step[{i}]" for i in range(4)]
              + ["test_quick.py::test_a", "test_quick.py::test_b", "test_quick.py::test_c"]
              + ["test_mid.py::test_x[09_your_gpt]", "test_mid.py::test_y[09_your_gpt]"]
              + ["test_last.py::test_z"])
SECONDS = {"test_long.py": 100.0, "test_mid.py[09]": 50.0}


def scope(nodeid: str) -> str:     # test_mid.py's tests go out as one unit under a name of their own
    module = nodeid.split("::")[0]
    return "test_mid.py[09]" if module == "test_mid.py" else module


def scheduled(*workers: Worker) -> LongestScopeFirst:
    sched = LongestScopeFirst(Config(), Producer("stand-in", enabled=False), scope,
                              lambda name, nodeids: SECONDS.get(name, 0.0))
    for worker in workers:
        sched.add_node(worker)
        sched.add_node_collection(worker, COLLECTION)
    sched.schedule()
    return sched


def nodeids(indices):
    return [COLLECTION[i] for i in indices]


def test_the_longest_scope_goes_out_first_then_the_one_with_most_tests():
    gw0, gw1 = Worker("gw0"), Worker("gw1")
    sched = scheduled(gw0, gw1)
    assert nodeids(gw0.sent[0]) == COLLECTION[:4]                                   # 100 s
    assert nodeids(gw1.sent[0]) == ["test_mid.py::test_x[09_your_gpt]", "test_mid.py::test_y[09_your_gpt]"]  # 50 s
    assert nodeids(gw1.sent[1]) == ["test_quick.py::test_a", "test_quick.py::test_b", "test_quick.py::test_c"]
    assert list(sched.workqueue) == ["test_last.py"]


def complete(sched: LongestScopeFirst, worker: Worker, nodeid: str) -> None:
    sched.mark_test_complete(worker, COLLECTION.index(nodeid))


def test_a_crash_hands_nothing_out_again_takes_back_the_other_workers_unstarted_tests_and_stops_them():
    gw0, gw1 = Worker("gw0"), Worker("gw1")
    sched = scheduled(gw0, gw1)
    complete(sched, gw1, "test_mid.py::test_x[09_your_gpt]")
    complete(sched, gw1, "test_mid.py::test_y[09_your_gpt]")     # gw1 done with a unit; test_quick.py's next
    complete(sched, gw0, "test_long.py::test_step[0]")

    assert sched.remove_node(gw1) == "test_quick.py::test_a"     # gw1 crashed in test_quick.py's first test
    assert not sched.workqueue                                    # its finished unit is not handed out again
    assert gw0.stolen == [[1], [2], [3]] and gw0.shutting_down    # one at a time: all but the one it runs go
    sched.remove_pending_tests_from_node(gw0, [3])                # gw0 had already taken 1 and 2 off its queue
    complete(sched, gw0, "test_long.py::test_step[1]")
    complete(sched, gw0, "test_long.py::test_step[2]")
    assert sched.tests_finished and not sched.has_pending
    assert sched.crashes == [("gw1", "test_quick.py::test_a")]
    assert sorted(sched.not_run) == sorted(["test_quick.py::test_b", "test_quick.py::test_c", "test_last.py::test_z",
                                            "test_long.py::test_step[3]"])
    assert sched.remove_node(gw0) is None                         # it finished: no crash


class DeadWorker(Worker):
    """A worker whose channel is closed: it died before the controller read its last report."""

    def send_runtest_some(self, indices):
        raise OSError("cannot send (already closed?)")


def test_a_worker_that_died_before_its_last_report_was_read_is_not_an_internal_error():
    """On a busy machine the controller may read 'test done' from a worker that has already crashed, and hand it
    its next unit: the send fails. That is the crash, reported when the worker's going down is read, not an
    INTERNALERROR that loses the run's report (CI saw it once, exit 3 instead of 1)."""
    gw0, gw1 = Worker("gw0"), DeadWorker("gw1")
    sched = scheduled(gw0, gw1)
    complete(sched, gw1, "test_mid.py::test_x[09_your_gpt]")
    complete(sched, gw1, "test_mid.py::test_y[09_your_gpt]")     # its next unit goes out to a closed channel
    assert sched.remove_node(gw1) == "test_quick.py::test_a"     # the unit it never received: its first test
    assert sched.crashes == [("gw1", "test_quick.py::test_a")] and gw0.shutting_down


def test_a_replacement_worker_is_handed_no_finished_unit_and_shut_down():
    """xdist's own remove_node put the crashed worker's finished unit back in the queue, and handed it to the
    replacement as an empty list of tests: it never reported back, and the run hung (issue 47). With
    ``--max-worker-restart`` above 0 on the command line, a replacement now gets nothing, and stops."""
    gw0, gw1 = Worker("gw0"), Worker("gw1")
    sched = scheduled(gw0, gw1)
    for nodeid in COLLECTION[:4]:
        complete(sched, gw0, nodeid)
    assert sched.remove_node(gw0) == "test_last.py::test_z"
    gw2 = Worker("gw2")
    sched.add_node(gw2)
    sched.add_node_collection(gw2, COLLECTION)
    sched.schedule()
    assert gw2.sent == [] and gw2.shutting_down
