"""Each training cell's predicted time against the time it took, quiet and beside busy loops (issue 51).

    python benchmarks/training_predictions.py [--busy N] [assignment ...]

Every training loop of the notebooks predicts its whole time from its first steps (``utils.progress``: the first
step apart, then the pace of the next 10) and prints it again beside the time taken when it ends. This runs the
solution notebooks (default: those with training cells, 08, 09, 11, 12 and 13) as a student runs them, in a
course-shaped temporary folder with the notebooks whose parts they load beside them, PyTorch on one thread, and
prints one row per training run: predicted, taken, their ratio, and whether it is within 1.5 times. ``--busy N``
runs N busy loops beside it (a machine doing other work). A report: it exits 1 when a ratio is past 1.5, so a
maintainer sees it, and is never part of the test suite's verdicts (the suite judges the CPU-second predictions of
its own runs: tests/course/test_solutions_and_mutants.py).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import tempfile
from pathlib import Path

from autograder.course import cell_runner, conventions, submissions
from utils import progress

TRAINING_NOTEBOOKS = ("08_train_gpt", "09_your_gpt", "11_induction_heads", "12_encoder_decoder", "13_generation")
FACTOR = 1.5
SHORTEST_S = 2   # the line's whole seconds decide a shorter run's ratio


def _spin() -> None:
    while True:
        pass


def run(assignment, root: Path) -> list[dict]:
    """The finished runs that notebook printed, run filled in with its solutions, in ``root``."""
    by_name = {a.name: a for a in conventions.assignments()}
    for name in (assignment.name, *conventions.NOTEBOOKS_BESIDE.get(assignment.name, ())):
        other = by_name[name]
        submissions.write(submissions.filled_in(other), root / name / other.release_path.name)
    folder = root / assignment.name
    nb = submissions.filled_in(assignment)
    printed, errors = cell_runner.printed_and_errors(nb, folder, timeout_s=3600)
    for error in errors:
        print(f"  {assignment.name}: {error}", file=sys.stderr)
    return progress.finished_runs(printed)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("assignments", nargs="*", default=list(TRAINING_NOTEBOOKS))
    parser.add_argument("--busy", type=int, default=0, help="busy loops to run beside the notebooks")
    options = parser.parse_args(argv)
    os.environ.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    loops = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(options.busy)]
    for loop in loops:
        loop.start()
    off = 0
    try:
        print(f"{'notebook':20} {'run':32} {'predicted':>11} {'took':>11} {'ratio':>6}  within {FACTOR}x   "
              f"(busy loops: {options.busy})")
        for name in options.assignments:
            with tempfile.TemporaryDirectory() as root:
                for r in run(conventions.assignment(name), Path(root)):
                    ratio = r["predicted"] / max(r["took"], 1)
                    ok = 1 / FACTOR <= ratio <= FACTOR
                    verdict = "too short" if r["took"] < SHORTEST_S else "yes" if ok else "NO"
                    off += verdict == "NO"
                    print(f"{name:20} {r['desc'][:32]:32} {r['predicted']:>5} {r['unit']:5} {r['took']:>5} "
                          f"{r['unit']:5} {ratio:6.2f}  {verdict}", flush=True)
    finally:
        for loop in loops:
            loop.terminate()
    return 1 if off else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
