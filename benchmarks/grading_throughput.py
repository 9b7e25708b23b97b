"""Grading throughput on this machine: submissions per minute with 1 and with 2 workers.

    python benchmarks/grading_throughput.py [--copies N] [--workers 1 2]

Grades N copies of the correct submission of every assignment (the filled-in solution notebooks),
once per worker count, into fresh output folders, and prints submissions per minute and the
overhead per submission beyond executing the notebook itself (kernel start, imports, sandbox,
nbgrader bookkeeping and feedback), measured as wall time per submission with 1 worker minus the
notebook's own cell time.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from autograder import conventions, submissions  # noqa: E402
from autograder.grading import grade  # noqa: E402
from notebook_runner import run_notebook  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copies", type=int, default=4, help="submissions per assignment (default 4)")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()

    assignments = conventions.assignments()
    cell_seconds = {a.name: run_notebook(a, with_mutants=False).seconds for a in assignments}
    with tempfile.TemporaryDirectory(prefix="throughput-") as tmp:
        subs = Path(tmp) / "submitted"
        for assignment in assignments:
            nb = submissions.filled_in(assignment)
            for copy in range(args.copies):
                submissions.write(nb, subs / f"student{copy:03d}" / assignment.name / assignment.source_path.name)
        total = args.copies * len(assignments)
        notebook_time = args.copies * sum(cell_seconds.values())
        print(f"{total} submissions ({args.copies} per assignment: {', '.join(a.name for a in assignments)})")
        print("notebook cell time alone: " + ", ".join(f"{k} {v:.1f} s" for k, v in cell_seconds.items()))
        print(f"{'workers':>7} {'wall s':>8} {'subs/min':>9} {'s/sub':>7} {'overhead s/sub':>15}")
        for workers in args.workers:
            start = time.perf_counter()
            rows = grade(subs, Path(tmp) / f"out{workers}", workers=workers, progress=False)
            wall = time.perf_counter() - start
            bad = [r for r in rows if r.status != "ok" or r.score != r.max_score]
            overhead = (wall * workers - notebook_time) / total
            print(f"{workers:>7} {wall:8.1f} {60 * total / wall:9.2f} {wall / total:7.2f} {overhead:15.2f}"
                  + (f"  ({len(bad)} not full marks!)" if bad else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
