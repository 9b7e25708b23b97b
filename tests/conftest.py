"""Shared fixtures: the course's assignments, one notebook run per assignment, and the run report.

Every kernel and process the suite starts runs PyTorch on one thread, as the grader's runners do
(issue 35): set here, before anything imports PyTorch, in this process's environment, which the
kernels (nbclient, self-grading, the `selfgrade` command) and subprocesses inherit; the simulated
Colab's kernel and `autograder check`'s kernel set it themselves. A test about threads sets its own.
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

import pytest

from autograder.cpu_time import ONE_THREAD

os.environ.update(ONE_THREAD)

import torch  # noqa: E402

torch.set_num_threads(1)   # the judge's test cells run in this process

sys.path.insert(0, str(Path(__file__).parent))

from autograder import conventions  # noqa: E402
from autograder.check import NotebookReport, run_notebook  # noqa: E402

ASSIGNMENTS = conventions.assignments()

# The suite's own submissions are graded in the bubblewrap sandbox where it works (CI installs it);
# elsewhere with limits only, which must then be asked for explicitly (`auto` refuses to fall back).
from autograder.sandbox import bwrap_available  # noqa: E402

TEST_SANDBOX = "auto" if bwrap_available() else "none"

# Kernel runs that can only be timed by the clock (nbclient runs a whole notebook; the simulated Colab and
# self-grading) get wall-clock limits at least LOAD_MARGIN times the CPU time they bound, as measured by
# `autograder check` (test_solutions_and_mutants.py checks it for every notebook): a machine busy enough
# to stretch a one-thread kernel LOAD_MARGIN-fold (load 20 on 2 cores) still passes.
LOAD_MARGIN = 10
WALL_CELL_TIMEOUT_S = 900
WALL_NOTEBOOK_TIMEOUT_S = 1800


def pytest_generate_tests(metafunc):
    if "assignment" in metafunc.fixturenames:
        metafunc.parametrize("assignment", ASSIGNMENTS, ids=[a.name for a in ASSIGNMENTS])


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """pytest-xdist hands out work by scope: a module's tests for one assignment (``test_x.py[09_your_gpt]``:
    the tests that share that notebook's run, ``report``), or a whole module for every other test (its
    module-scoped fixtures, a graded batch, are then made once). So the notebooks spread over the workers.
    (``--dist loadgroup`` would say this with marks, but pytest 9 ignores the node ids it rewrites.)"""
    from xdist.scheduler import LoadScopeScheduling

    names = {a.name for a in ASSIGNMENTS}

    class NotebookScopes(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            param = nodeid[nodeid.rfind("[") + 1:-1] if nodeid.endswith("]") and "[" in nodeid else ""
            return f"{module}[{param}]" if param in names else module

    return NotebookScopes(config, log)


@functools.cache
def notebook_report(name: str) -> NotebookReport:
    assignment = next(a for a in ASSIGNMENTS if a.name == name)
    report = run_notebook(assignment)
    _SUMMARIES[name] = _summary(report)
    return report


@pytest.fixture
def report(assignment) -> NotebookReport:
    return notebook_report(assignment.name)


# -- the terminal summary: each notebook's CPU time and its mutants ---------------------------------
# Kept as plain data, so that pytest-xdist workers can send theirs to the controller (workeroutput).
_SUMMARIES: dict[str, dict] = {}


def _summary(report: NotebookReport) -> dict:
    flag = "within budget" if report.seconds <= report.budget_seconds else "OVER BUDGET"
    mutants = [f"    {'caught ' if m.caught else 'MISSED '} {m.name}: {m.description} "
               f"[{', '.join(m.failed_cells) or m.setup_error or 'no test failed'}]" for m in report.mutants]
    return {"time": f"{report.assignment:<24} {report.seconds:7.1f} s of {report.budget_seconds:5.0f} s budget  "
                    f"({flag}); judged with mutants in {report.judge_seconds:.1f} s",
            "caught": sum(m.caught for m in report.mutants), "total": len(report.mutants), "mutants": mutants}


def pytest_sessionfinish(session):
    if hasattr(session.config, "workeroutput"):    # an xdist worker: hand the summaries to the controller
        session.config.workeroutput["notebook_summaries"] = dict(_SUMMARIES)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    _SUMMARIES.update(getattr(node, "workeroutput", {}).get("notebook_summaries", {}))


def pytest_terminal_summary(terminalreporter):
    if not _SUMMARIES:
        return
    write = terminalreporter.write_line
    terminalreporter.section("notebook CPU run times (solution, mutant runs excluded)")
    for name, summary in sorted(_SUMMARIES.items()):
        write(summary["time"])
    terminalreporter.section("mutant catch rate")
    total = caught = 0
    for name, summary in sorted(_SUMMARIES.items()):
        total += summary["total"]
        caught += summary["caught"]
        write(f"{name:<24} {summary['caught']}/{summary['total']} mutants lose points")
        for line in summary["mutants"]:
            write(line)
    if total:
        write(f"overall: {caught}/{total} = {100 * caught / total:.0f}% of mutants caught")
