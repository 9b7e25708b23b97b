"""The class-scale path, for real: a Slurm job array grades a class in 3 shards, a dependent job merges
them, and the result equals grading the same submissions on one machine.

The cluster is real (munged, slurmctld and slurmd from Debian's packages, started by the test on
localhost); the submission goes through the script an instructor runs,
``autograder/cluster/slurm/grade-class.sh``. Skipped, with the reason, where Slurm is not installed.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

import slurm_cluster
from autograder.course import conventions
from autograder.batch.shards import MARKER
from conftest import SMALL_CLASS_LIMITS, TEST_SANDBOX
from test_shards import STUDENTS, _csv, gradebook_scores

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(slurm_cluster.available() is not None, reason=str(slurm_cluster.available()))]

SCRIPT = conventions.REPO_ROOT / "autograder" / "cluster" / "slurm" / "grade-class.sh"


def _submit(cluster, small_class, out, *extra: str) -> tuple[str, str]:
    done = subprocess.run(
        ["bash", str(SCRIPT), str(small_class / "submitted"), str(out), "3", *extra, "--",
         "--solutions", str(small_class / "solutions"), "--sandbox", TEST_SANDBOX,
         "--cell-timeout", str(SMALL_CLASS_LIMITS.cell_timeout_s), "--notebook-timeout",
         str(SMALL_CLASS_LIMITS.notebook_timeout_s), "--allow-self-grading-bundles"],
        env=dict(cluster.env, COURSE_PYTHON=sys.executable, SBATCH_OPTIONS="--cpus-per-task=1"),
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    return lines[0].split()[3], lines[1].split()[2]   # "grading: job array N ...", "merging: job M ..."


def test_a_job_array_grades_the_class_and_its_merge_equals_one_machine(small_class, tmp_path):
    # small_class: the class and its grades on one machine (`single`), shared with test_shards.py
    single = small_class / "single"
    with slurm_cluster.Cluster(tmp_path / "cluster") as cluster:
        start = time.monotonic()
        array, merge_job = _submit(cluster, small_class, tmp_path / "out")
        logs = lambda: "\n".join(p.read_text()[-1500:] for p in sorted((tmp_path / "out").glob("*.log")))  # noqa: E731
        assert cluster.wait_for(array, 600) == "COMPLETED", logs()
        assert cluster.wait_for(merge_job, 300) == "COMPLETED", logs()
        elapsed = time.monotonic() - start
        out = tmp_path / "out"
        for index in range(3):
            assert (out / f"shard-{index}" / MARKER).is_file(), index
        assert _csv(out / "merged" / "grades.csv") == _csv(single / "grades.csv")
        assert gradebook_scores(out / "merged" / "gradebook.db") == gradebook_scores(single / "gradebook.db")
        print(f"slurm: {len(STUDENTS)} submissions in 3 array tasks of 1 CPU each, graded and merged in {elapsed:.0f} s")

        # A failed task: its shard is missing, the merge job fails naming it, and re-running only that
        # task (--tasks 1) followed by the new merge job completes the class.
        (out / "shard-1" / MARKER).unlink()
        (out / "merged" / "grades.csv").unlink()
        done = subprocess.run([sys.executable, "-m", "autograder", "merge", *(str(out / f"shard-{i}") for i in range(3)),
                               "--out", str(out / "merged"), "--expect", "3"], capture_output=True, text=True,
                              cwd=conventions.REPO_ROOT, timeout=300)
        assert done.returncode == 1 and "missing or unfinished shards: 1" in done.stderr, done.stderr
        array, merge_job = _submit(cluster, small_class, tmp_path / "out", "--tasks", "1")
        assert cluster.wait_for(array, 600) == "COMPLETED"
        assert cluster.wait_for(merge_job, 300) == "COMPLETED"
        assert _csv(out / "merged" / "grades.csv") == _csv(single / "grades.csv")
