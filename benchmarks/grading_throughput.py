"""Grading throughput on this machine: submissions per minute with 1 and with 2 workers.

    python benchmarks/grading_throughput.py [--copies N] [--workers 1 2] [--sandbox auto|none] [--no-fork-server]

Grades N copies of the correct submission of every assignment (the filled-in solution notebooks),
once per worker count, into fresh output folders, and prints submissions per minute and seconds per
submission, then where the time went, per submission (``autograder/batch/stage_times.py``): starting the
judge and the sandboxed runner (two Python processes importing PyTorch), the set-up cell, the answer
cells, the test cells, nbgrader's release, autograde and feedback steps, the CSV. The **overhead** is
the wall time per submission (times workers) less the set-up, answer and test cells: what grading
adds to running the student's work. (The course's demo cells are not run when grading.) Judges
start one notebook ahead (``--no-ahead`` to compare): the runner's start is then done while the
previous notebook is graded, and printed apart. Each row also gives the CPU seconds per submission (this
process and every process it waited for, judges and runners included), which a busy machine still
measures; ``--no-fork-server`` starts every judge as a process of its own instead of forking it from the
batch's server (``autograder/judge/fork_server.py``), to compare.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

from autograder.course import conventions, submissions
from autograder.batch import stage_times
from autograder.batch.grading import grade
from autograder.judge import client
from autograder.judge.protocol import AHEAD_PREFIX
from autograder.sandbox.limits import Limits


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copies", type=int, default=4, help="submissions per assignment (default 4)")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--sandbox", default="auto", choices=["auto", "bwrap", "none"])
    parser.add_argument("--assignment", action="append", help="only these assignments (default: all)")
    parser.add_argument("--no-ahead", action="store_true",
                        help="start each judge and runner when its notebook's turn comes (to compare)")
    parser.add_argument("--no-fork-server", action="store_true",
                        help="start every judge as a process of its own, not forked from the batch's server (to compare)")
    args = parser.parse_args()
    if args.no_fork_server:
        client.ForkServer = _no_fork_server

    assignments = [a for a in conventions.assignments() if not args.assignment or a.name in args.assignment]
    with tempfile.TemporaryDirectory(prefix="throughput-") as tmp:
        subs = Path(tmp) / "submitted"
        for assignment in assignments:
            nb = submissions.filled_in(assignment)
            for copy in range(args.copies):
                submissions.write(nb, subs / f"student{copy:03d}" / assignment.name / assignment.source_path.name)
        total = args.copies * len(assignments)
        print(f"{total} submissions ({args.copies} per assignment: {', '.join(a.name for a in assignments)}), "
              f"sandbox {args.sandbox}, judges started {'when their turn comes' if args.no_ahead else 'one notebook ahead'}")
        splits = {}
        print(f"{'workers':>7} {'wall s':>8} {'subs/min':>9} {'s/sub':>7} {'CPU s/sub':>10}")
        for workers in args.workers:
            stage_times.snapshot()
            start, cpu_start = time.perf_counter(), _cpu_seconds()
            rows = grade(subs, Path(tmp) / f"out{workers}", workers=workers, progress=False,
                         limits=Limits(sandbox=args.sandbox), judges_ahead=not args.no_ahead)
            wall, cpu = time.perf_counter() - start, _cpu_seconds() - cpu_start
            bad = [r for r in rows if r.status != "ok" or r.score != r.max_score]
            print(f"{workers:>7} {wall:8.1f} {60 * total / wall:9.2f} {wall / total:7.2f} {cpu / total:10.2f}"
                  + (f"  ({len(bad)} not full marks!)" if bad else ""))
            splits[workers] = (wall, stage_times.snapshot())
        for workers, (wall, split) in splits.items():
            print_split(workers, wall, split, total)
    return 0


def _cpu_seconds() -> float:
    """CPU seconds of this process and of every process it has waited for (and theirs, once waited for)."""
    return sum(u.ru_utime + u.ru_stime for u in (resource.getrusage(resource.RUSAGE_SELF),
                                                   resource.getrusage(resource.RUSAGE_CHILDREN)))


def _no_fork_server():
    raise OSError("--no-fork-server: every judge starts as a process of its own")


def print_split(workers: int, wall: float, split: dict[str, float], total: int) -> None:
    """Seconds per submission in each stage (summed over workers; stages overlap, since nbgrader records
    one notebook while the next is judged), then the overhead: wall time x workers per submission
    minus the answer and test cells, and apart from it the work done ahead (a runner started while
    the previous notebook was graded), which costs CPU but no notebook waited for it."""
    print(f"\nwhere the time went, {workers} worker(s), seconds per submission (stages overlap):")
    for name, seconds in sorted(split.items(), key=lambda item: -item[1]):
        print(f"  {name:<70} {seconds / total:6.2f}")
    per_submission = wall * workers / total
    cells = sum(split.get(f"judge: {name}", 0) for name in ("set-up cell", "answer and student cells", "test cells")) / total
    ahead = sum(s for name, s in split.items() if name.startswith("judge: " + AHEAD_PREFIX)) / total
    print(f"  wall x workers per submission {per_submission:.2f} s = set-up, answer and test cells {cells:.2f} s "
          f"+ overhead {per_submission - cells:.2f} s (besides: {ahead:.2f} s of runner start done ahead, overlapped)")


if __name__ == "__main__":
    sys.exit(main())
