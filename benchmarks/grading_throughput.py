"""Grading throughput on this machine: submissions per minute with 1 and with 2 workers.

    python benchmarks/grading_throughput.py [--copies N] [--workers 1 2] [--sandbox auto|none]

Grades N copies of the correct submission of every assignment (the filled-in solution notebooks),
once per worker count, into fresh output folders, and prints submissions per minute and seconds per
submission. Each submission costs: starting the judge and the sandboxed runner (two Python processes
importing PyTorch), running the set-up and answer cells, the test calls, nbgrader's bookkeeping and
the feedback page. (The course's demo cells are not run when grading.)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from autograder import conventions, submissions
from autograder.grading import grade
from autograder.sandbox import Limits


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copies", type=int, default=4, help="submissions per assignment (default 4)")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--sandbox", default="auto", choices=["auto", "bwrap", "none"])
    parser.add_argument("--assignment", action="append", help="only these assignments (default: all)")
    args = parser.parse_args()

    assignments = [a for a in conventions.assignments() if not args.assignment or a.name in args.assignment]
    with tempfile.TemporaryDirectory(prefix="throughput-") as tmp:
        subs = Path(tmp) / "submitted"
        for assignment in assignments:
            nb = submissions.filled_in(assignment)
            for copy in range(args.copies):
                submissions.write(nb, subs / f"student{copy:03d}" / assignment.name / assignment.source_path.name)
        total = args.copies * len(assignments)
        print(f"{total} submissions ({args.copies} per assignment: {', '.join(a.name for a in assignments)}), "
              f"sandbox {args.sandbox}")
        print(f"{'workers':>7} {'wall s':>8} {'subs/min':>9} {'s/sub':>7}")
        for workers in args.workers:
            start = time.perf_counter()
            rows = grade(subs, Path(tmp) / f"out{workers}", workers=workers, progress=False,
                         limits=Limits(sandbox=args.sandbox))
            wall = time.perf_counter() - start
            bad = [r for r in rows if r.status != "ok" or r.score != r.max_score]
            print(f"{workers:>7} {wall:8.1f} {60 * total / wall:9.2f} {wall / total:7.2f}"
                  + (f"  ({len(bad)} not full marks!)" if bad else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
