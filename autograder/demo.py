"""``python -m autograder demo``: build the student versions, then grade sample submissions.

The samples are made on the spot from the repository (nothing with answers is bundled in the
package): for every assignment,

* ``alice_correct``  - every exercise answered with the solution's code;
* ``bob_partial``    - the solution, with one plausible mistake (a mutant from ``mutants/``)
  in every other exercise;
* ``carol_untouched`` - the student version as released, nothing filled in;
* ``dave_broken``    - a file that is not a notebook any more (truncated JSON);
* ``erin_crash``     - a notebook whose first answer kills its kernel (``os._exit``).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from . import conventions, submissions
from .build import build
from .grading import grade
from .report import format_table, self_grading_bundles, summary_warnings
from .sandbox import Limits, bwrap_available

CRASHING_ANSWER = "import os\nos._exit(3)  # a student's experiment that takes the kernel down\n"


def make_samples(folder: Path) -> Path:
    if folder.exists():
        shutil.rmtree(folder)
    for assignment in conventions.assignments():
        name = assignment.source_path.name
        nb = submissions.filled_in(assignment)
        submissions.write(nb, folder / "alice_correct" / assignment.name / name)

        mistakes = {}
        for index, (exercise, paths) in enumerate(sorted(conventions.mutant_files(assignment).items())):
            if index % 2 == 0:
                mistakes[exercise] = paths[0].read_text(encoding="utf-8")
        if not mistakes:
            raise FileNotFoundError(f"no mutants for {assignment.name} under {conventions.MUTANTS_DIR}: the 'partly wrong' "
                                    "sample would be all correct (the container must copy mutants/)")
        submissions.write(submissions.filled_in(assignment, mistakes), folder / "bob_partial" / assignment.name / name)

        untouched = folder / "carol_untouched" / assignment.name / name
        untouched.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(assignment.release_path, untouched)

        broken = folder / "dave_broken" / assignment.name / name
        broken.parent.mkdir(parents=True, exist_ok=True)
        text = assignment.release_path.read_text(encoding="utf-8")
        broken.write_text(text[: len(text) // 2], encoding="utf-8")

        first_exercise = conventions.exercises(conventions.read_notebook(assignment.source_path))[0].name
        crash = submissions.filled_in(assignment, {first_exercise: CRASHING_ANSWER})
        submissions.write(crash, folder / "erin_crash" / assignment.name / name)
    return folder


def run_demo(out_dir: Path, workers: int | None = None) -> int:
    out_dir = Path(out_dir).resolve()
    print("1/3 Building the student versions (notebooks/) from solutions/ ...")
    changed = build()
    print(f"    {len(changed)} file(s) changed" if changed else "    notebooks/ already up to date")
    samples = make_samples(out_dir / "submissions")
    print(f"2/3 Sample submissions written to {samples}")
    for path in sorted(p for p in samples.iterdir()):
        print(f"    {path.name}")
    results_dir = out_dir / "results"
    if results_dir.exists():
        shutil.rmtree(results_dir)
    workers = workers or min(2, os.cpu_count() or 1)
    print(f"3/3 Grading with {workers} worker(s) ...")
    # The samples are made here from the course's own files, so grading them without bubblewrap is safe.
    sandbox = "bwrap" if bwrap_available() else "none"
    if sandbox == "none":
        print("    (bubblewrap is not available: the demo's own samples are graded without the sandbox)")
    rows = grade(samples, results_dir, workers=workers,
                 limits=Limits(cell_timeout_s=120, notebook_timeout_s=600, sandbox=sandbox))
    print()
    print(format_table(rows))
    print()
    print(f"Grades (CSV):   {results_dir / 'grades.csv'}")
    print(f"Feedback HTML:  {results_dir / 'feedback'}/<student_id>/<assignment>/<notebook>.html")
    print(f"Gradebook:      {results_dir / 'gradebook.db'} (nbgrader sqlite)")
    # The demo grades its own samples: the public edition's bundles (what `grade` refuses without
    # --allow-self-grading-bundles) and --sandbox none are allowed here, and said.
    for line in summary_warnings(Limits(sandbox=sandbox), self_grading_bundles()):
        print(f"\n{line}")
    return 0


if __name__ == "__main__":
    sys.exit(run_demo(Path("grading/demo")))
