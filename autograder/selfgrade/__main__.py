"""``python -m autograder.selfgrade JOB``: the fresh Python in which the self-grading cell runs the
saved notebook's answers (``saved_notebook``), then grades them and prints the table."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from . import format_table, read_bundle, run_tests, summarise
from .saved_notebook import run_cells


def main(job_path: Path) -> None:
    job = json.loads(Path(job_path).read_text(encoding="utf-8"))
    namespace, failures, seconds = run_cells(job["cells"])
    rows, earned, total = summarise(run_tests(read_bundle(job["assignment"]), namespace))
    print(f"Ran {len(job['cells'])} code cells of your notebook in {seconds:.0f} s.")
    if failures:
        print("These cells raised an error (the tests of what they define fail too):\n" + "\n".join(failures[:20]))
    print()
    print(format_table(rows, earned, total))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
