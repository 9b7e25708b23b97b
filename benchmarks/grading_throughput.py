"""Grading throughput on this machine: submissions per minute with 1 and with 2 workers.

    python benchmarks/grading_throughput.py [--copies N] [--workers 1 2] [--sandbox auto|none]

Grades N copies of the correct submission of every assignment (the filled-in solution notebooks),
once per worker count, into fresh output folders, and prints submissions per minute and seconds per
submission, then where the time went, per submission (``autograder/stage_times.py``): starting the
judge and the sandboxed runner (two Python processes importing PyTorch), the set-up cell, the answer
cells, the test cells, nbgrader's release, autograde and feedback steps, the CSV. The **overhead** is
everything but the answer and test cells: what grading adds to running the student's work. (The
course's demo cells are not run when grading.)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from autograder import conventions, stage_times, submissions
from autograder.grading import grade
from autograder.protocol import AHEAD_PREFIX
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
        splits = {}
        print(f"{'workers':>7} {'wall s':>8} {'subs/min':>9} {'s/sub':>7}")
        for workers in args.workers:
            stage_times.snapshot()
            start = time.perf_counter()
            rows = grade(subs, Path(tmp) / f"out{workers}", workers=workers, progress=False,
                         limits=Limits(sandbox=args.sandbox))
            wall = time.perf_counter() - start
            bad = [r for r in rows if r.status != "ok" or r.score != r.max_score]
            print(f"{workers:>7} {wall:8.1f} {60 * total / wall:9.2f} {wall / total:7.2f}"
                  + (f"  ({len(bad)} not full marks!)" if bad else ""))
            splits[workers] = (wall, stage_times.snapshot())
        for workers, (wall, split) in splits.items():
            print_split(workers, wall, split, total)
    return 0


def print_split(workers: int, wall: float, split: dict[str, float], total: int) -> None:
    """Seconds per submission in each stage (summed over workers), and the overhead above the cells:
    what each notebook waited for, and the work done ahead of it (a runner started while the previous
    notebook was being graded), which costs CPU but not that notebook's time."""
    print(f"\nwhere the time went, {workers} worker(s), seconds per submission (stages of parallel workers overlap):")
    for name, seconds in sorted(split.items(), key=lambda item: -item[1]):
        print(f"  {name:<70} {seconds / total:6.2f}")
    ahead = sum(s for name, s in split.items() if name.startswith("judge: " + AHEAD_PREFIX)) / total
    waited = sum(split.values()) / total - ahead
    print(f"  {'(all stages the notebooks waited for)':<70} {waited:6.2f}   "
          f"wall x workers per submission: {wall * workers / total:.2f}")
    cells = (split.get("judge: answer and student cells", 0) + split.get("judge: test cells", 0)) / total
    print(f"  overhead above the answer and test cells: {waited - cells:.2f} s per submission waited for, "
          f"plus {ahead:.2f} s done ahead (overlapped)")


if __name__ == "__main__":
    sys.exit(main())
