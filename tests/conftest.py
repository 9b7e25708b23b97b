"""Shared fixtures: the course's assignments, one notebook run per assignment, and the run report."""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from autograder import conventions  # noqa: E402
from autograder.check import NotebookReport, run_notebook  # noqa: E402

ASSIGNMENTS = conventions.assignments()

# The suite's own submissions are graded in the bubblewrap sandbox where it works (CI installs it);
# elsewhere with limits only, which must then be asked for explicitly (`auto` refuses to fall back).
from autograder.sandbox import bwrap_available  # noqa: E402

TEST_SANDBOX = "auto" if bwrap_available() else "none"
_REPORTS: dict[str, NotebookReport] = {}


def pytest_generate_tests(metafunc):
    if "assignment" in metafunc.fixturenames:
        metafunc.parametrize("assignment", ASSIGNMENTS, ids=[a.name for a in ASSIGNMENTS])


@functools.cache
def notebook_report(name: str) -> NotebookReport:
    assignment = next(a for a in ASSIGNMENTS if a.name == name)
    report = run_notebook(assignment)
    _REPORTS[name] = report
    return report


@pytest.fixture
def report(assignment) -> NotebookReport:
    return notebook_report(assignment.name)


def pytest_terminal_summary(terminalreporter):
    if not _REPORTS:
        return
    write = terminalreporter.write_line
    terminalreporter.section("notebook CPU run times (solution, mutant runs excluded)")
    for name, report in sorted(_REPORTS.items()):
        flag = "within budget" if report.seconds <= report.budget_seconds else "OVER BUDGET"
        write(f"{name:<24} {report.seconds:7.1f} s of {report.budget_seconds:5.0f} s budget  ({flag}); "
              f"judged with mutants in {report.judge_seconds:.1f} s")
    terminalreporter.section("mutant catch rate")
    total = caught = 0
    for name, report in sorted(_REPORTS.items()):
        n_caught = sum(m.caught for m in report.mutants)
        total += len(report.mutants)
        caught += n_caught
        write(f"{name:<24} {n_caught}/{len(report.mutants)} mutants lose points")
        for mutant in report.mutants:
            mark = "caught " if mutant.caught else "MISSED "
            where = ", ".join(mutant.failed_cells) or mutant.setup_error or "no test failed"
            write(f"    {mark} {mutant.path.name}: {mutant.description} [{where}]")
    if total:
        write(f"overall: {caught}/{total} = {100 * caught / total:.0f}% of mutants caught")
