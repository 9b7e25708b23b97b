"""How pytest-xdist hands out the suite's tests (``LongestScopeFirst``), and what a worker that crashes does to
the run (``WorkerCrashes``): it fails the run, which stops after the tests running at the time.

Kept apart from tests/conftest.py (which imports PyTorch and the course) so that a test can run an inner pytest
session under this very scheduler in a second (tests/unit/test_worker_crash.py).

xdist's own handling of a crash (3.8) hung the suite: the crashed worker's whole workload went back to the
queue, its finished units included; the replacement worker was handed a finished unit first, got an empty
list of tests to run, and never reported back, so nothing asked for the next unit, and the other worker had
been told to shut down once the queue emptied. Both idled, and the controller waited for ever. A crash is
a failure of the run whatever its cause, and a crashed test would only be run again (xdist puts it back in
the queue, and a test that kills its worker every time kills eight workers in turn). So here a crash ends the
run: the scheduler hands out nothing more, takes back from the other workers the tests they have not
started and shuts them down, and pyproject.toml starts no replacement (``--max-worker-restart=0``). The
crashed test fails, named (xdist's report, ``worker 'gw0' crashed while running '...'``), and the summary
says how many tests were not run. A worker that dies outside any test fails the run too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import pytest
from xdist.scheduler import LoadScopeScheduling


class LongestScopeFirst(LoadScopeScheduling):
    """Work goes out by ``scope_of(nodeid)``, the scope with the most ``seconds_of(scope, nodeids)`` first
    (then the one with the most tests); a worker that crashes stops the run."""

    def __init__(self, config, log, scope_of: Callable[[str], str],
                 seconds_of: Callable[[str, Iterable[str]], float]) -> None:
        super().__init__(config, log)
        self.scope_of, self.seconds_of = scope_of, seconds_of
        self.ordered = False
        self.crashes: list[tuple[str, str]] = []    # (worker id, the test it was running)
        self.not_run: list[str] = []                # the tests the run stopped before

    def _split_scope(self, nodeid: str) -> str:
        return self.scope_of(nodeid)

    def _assign_work_unit(self, node) -> None:
        if not self.ordered:       # once, before the first unit goes out: the queue is complete then
            self.ordered = True
            units = sorted(self.workqueue.items(), key=lambda item: (
                -self.seconds_of(item[0], item[1]), -len(item[1])))
            self.workqueue.clear()
            self.workqueue.update(units)
        try:
            super()._assign_work_unit(node)
        except OSError:
            # The worker died before the controller read its last report: the unit is recorded as its work, and the
            # event of its going down, which follows, stops the run (``remove_node``). Seen on a busy machine, where
            # "test done" and the crash reach the controller in one read and the send raised INTERNALERROR.
            pass

    def remove_node(self, node) -> str | None:
        """A worker that finished goes as in xdist. One that went down with tests left (a crash) returns the
        test it was running (its first test not done: a worker runs its tests in the order they were sent),
        and the run stops: nothing goes back to the queue (see the module's docstring)."""
        workload = self.assigned_work.get(node)
        if workload is None or not self._pending_of(workload):
            return super().remove_node(node)
        del self.assigned_work[node]
        pending = [nodeid for unit in workload.values() for nodeid, done in unit.items() if not done]
        self.crashes.append((node.gateway.id, pending[0]))
        self.not_run += pending[1:]
        self.not_run += [nodeid for unit in self.workqueue.values() for nodeid, done in unit.items() if not done]
        self.workqueue.clear()
        for other in self.nodes:
            self._take_back_unstarted(other)
        return pending[0]

    def _take_back_unstarted(self, node) -> None:
        """Ask the worker for its tests not yet started, one at a time (xdist's ``steal`` gives back all that
        are asked or none, and a worker has taken its current test and the next off its queue), and shut it
        down: it stops after the tests it has taken. It answers with those it gave back (``unscheduled``)."""
        collection = self.registered_collections.get(node, [])
        for unit in self.assigned_work[node].values():
            for nodeid, done in unit.items():
                if not done:
                    try:
                        node.send_steal([collection.index(nodeid)])
                    except OSError:        # its channel closed: it is going down anyway
                        return
        node.shutdown()

    def remove_pending_tests_from_node(self, node, indices) -> None:
        """The tests a worker gave back: they will not run."""
        if node not in self.assigned_work:
            return
        collection = self.registered_collections[node]
        for index in indices:
            nodeid = collection[index]
            del self.assigned_work[node][self._split_scope(nodeid)][nodeid]
            self.not_run.append(nodeid)


class WorkerCrashes:
    """The controller's side of a worker going down: the run fails (xdist reports a failed test only when the
    worker was running one), and the summary says which worker, while running what, and what was not run."""

    def __init__(self) -> None:
        self.down: list[str] = []

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error) -> None:
        if error:
            self.down.append(f"worker {node.gateway.id} went down: {error}")

    def pytest_sessionfinish(self, session) -> None:
        if self.down and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter, config) -> None:
        if not self.down:
            return
        terminalreporter.section("worker crash", red=True)
        for line in self.down:
            terminalreporter.write_line(line)
        sched = getattr(config.pluginmanager.getplugin("dsession"), "sched", None)
        if isinstance(sched, LongestScopeFirst):
            for worker, nodeid in sched.crashes:
                terminalreporter.write_line(f"worker {worker} crashed while running {nodeid}")
            if sched.crashes:
                scopes = sorted({sched.scope_of(nodeid) for nodeid in sched.not_run})
                terminalreporter.write_line(
                    f"the run stopped there: {len(sched.not_run)} tests not run"
                    + (f" ({', '.join(scopes[:5])}{', ...' if len(scopes) > 5 else ''})" if scopes else ""))
