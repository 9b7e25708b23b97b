"""Self-grading (the public edition's last cell) gives the points the instructor's grader gives.

A student runs the whole notebook in their own kernel, then the self-grading cell; the grader runs
the same notebook through the sandbox and the judge. Both use the same tests and the same judge, so
the points must agree, for a correct, a partly wrong and an untouched notebook 01, graded in the nbgrader
pipeline's batch (``pipeline`` in tests/conftest.py). A kernel that holds the correct answers is every
notebook's run on the simulated Colab, whose self-grading cell must give full marks
(test_colab_simulation.py), as the grader gives the solutions (test_autograde_pipeline.py).
"""

from __future__ import annotations

import os
import re
import shutil

import nbformat
import pytest
from nbclient import NotebookClient

from autograder import selfgrade
from autograder.course import conventions, submissions
from autograder.course.build import build
from conftest import PARTIAL_STUDENT, WALL_CELL_TIMEOUT_S, partly_wrong

pytestmark = pytest.mark.slow

FIRST = conventions.assignments()[0]


def _samples(assignment):
    """The three of notebook 01 that the pipeline's batch grades, by its student names."""
    untouched = conventions.read_notebook(assignment.release_path)
    return {"solution": submissions.filled_in(assignment), PARTIAL_STUDENT: partly_wrong(assignment),
            "untouched": untouched}


def _self_grade(nb, folder) -> float:
    """The whole notebook run in a kernel that cannot find its file: the kernel's answers are graded."""
    text = _grading_cell_output(nb, folder)
    assert text.startswith("Grading the answers this kernel holds now"), text[:300]
    return _total(text)


def _self_grade_saved(nb, folder, monkeypatch, ran_first: str = "") -> str:
    """The notebook saved where the kernel's session says it is, and a kernel that ran only
    ``ran_first`` and the self-grading cell: the saved answers are graded, run or not."""
    path = folder / FIRST.source_path.name
    submissions.write(nb, path)
    grading_cell = next(c for c in nb.cells if selfgrade.CELL_MARKER in c.source)
    kernel_nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(ran_first), grading_cell.copy()])
    with monkeypatch.context() as session:
        session.setenv("JPY_SESSION_NAME", str(path))   # what jupyter_server gives the kernel it starts
        return _grading_cell_output(kernel_nb, folder)


def _grading_cell_output(nb, folder) -> str:
    os.environ.setdefault("MPLBACKEND", "Agg")
    cells = [c for c in nb.cells if selfgrade.CELL_MARKER in c.source]
    assert len(cells) == 1, "the student version must end with the self-grading cell"
    client = NotebookClient(nb, timeout=WALL_CELL_TIMEOUT_S, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(folder)}})
    client.execute()
    text = "".join(o.get("text", "") for o in cells[0].outputs if o.get("output_type") == "stream")
    errors = [o for o in cells[0].outputs if o.get("output_type") == "error"]
    assert not errors, f"the self-grading cell failed: {errors[0].get('ename')}: {errors[0].get('evalue')}"
    assert "evalue" not in text and "BEGIN HIDDEN" not in text
    return text


def _total(text: str) -> float:
    total = selfgrade.printed_total(text)
    assert total, f"no total in the self-grading output:\n{text}"
    return total[0]


def test_self_grading_gives_the_graders_points(tmp_path, monkeypatch, pipeline):
    rows, _ = pipeline
    samples = _samples(FIRST)
    graded = {student: rows[(student, FIRST.name)] for student in samples}
    for student, nb in samples.items():
        if student != "solution":   # the solution's kernel run is the simulated Colab's (full marks, every notebook)
            folder = tmp_path / "kernel" / student
            folder.mkdir(parents=True)
            mine = _self_grade(nb, folder)
            assert mine == graded[student].score, (
                f"{student}: self-grading gave {mine}, the grader {graded[student].score} ({graded[student].detail})")
        saved_folder = tmp_path / "saved" / student
        saved_folder.mkdir(parents=True)
        text = _self_grade_saved(nb, saved_folder, monkeypatch)
        assert text.startswith(f"Grading the answers written in {saved_folder / FIRST.source_path.name}"), text[:300]
        assert _total(text) == graded[student].score, (
            f"{student}: self-grading the saved notebook, no cell run, gave {_total(text)}, the grader "
            f"{graded[student].score}:\n{text}")
    assert graded["solution"].score == graded["solution"].max_score > graded[PARTIAL_STUDENT].score > graded["untouched"].score == 0


def test_self_grading_warns_of_answers_run_but_not_saved(tmp_path, monkeypatch):
    """The kernel ran another ``log_softmax`` than the saved one: the saved one is graded, and the
    first lines say that the notebook was not saved since."""
    wrong = "def log_softmax(x, dim=-1):\n    return x\n"
    text = _self_grade_saved(submissions.filled_in(FIRST), tmp_path, monkeypatch, ran_first=wrong)
    first_lines = text.split("Total:")[0].split("exercise")[0]
    assert "Not saved yet" in first_lines and "def log_softmax" in first_lines, text[:600]
    assert re.search(r"log_softmax +([0-9.]+) / \1 +passed", text), text


def test_private_edition_ships_no_self_grading(tmp_path):
    solutions = tmp_path / "solutions"
    shutil.copytree(FIRST.source_path.parent, solutions / FIRST.name)
    build(solutions, tmp_path / "notebooks", tidy_sources=False, self_grading=False)
    nb = conventions.read_notebook(tmp_path / "notebooks" / FIRST.name / FIRST.source_path.name)
    assert not any(selfgrade.is_self_grading_cell(c) for c in nb.cells)
    assert not (tmp_path / "autograder" / "selfgrade").exists() or not any((tmp_path / "autograder" / "selfgrade").iterdir())
    build(solutions, tmp_path / "public", tidy_sources=False, bundle_dir=tmp_path / "bundles")
    public = conventions.read_notebook(tmp_path / "public" / FIRST.name / FIRST.source_path.name)
    assert sum(selfgrade.is_self_grading_cell(c) for c in public.cells) == 2
    assert (tmp_path / "bundles" / f"{FIRST.name}.bin").exists()
