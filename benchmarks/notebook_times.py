"""Print each solution notebook's CPU run time against its budget (a report, never a failing test).

    python benchmarks/notebook_times.py [assignment ...]

(``python -m autograder check`` makes the same runs and adds the mutants.)
"""

from __future__ import annotations

import sys

from autograder.course import conventions
from autograder.course.check import run_notebook


def main(names: list[str]) -> int:
    chosen = [a for a in conventions.assignments() if not names or a.name in names]
    print(f"{'assignment':<24} {'seconds':>8} {'budget':>7}  verdict")
    for assignment in chosen:
        report = run_notebook(assignment, with_mutants=False)
        verdict = "ok" if report.seconds <= report.budget_seconds else "OVER BUDGET"
        if report.cell_errors:
            verdict += f" ({len(report.cell_errors)} failing cells)"
        print(f"{assignment.name:<24} {report.seconds:8.1f} {report.budget_seconds:7.0f}  {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
