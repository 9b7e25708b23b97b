"""``autograder.batch.repair`` on damage a student really does, as pure nbformat (no kernel, no nbgrader):
each case states the cells that must come out and the note the grade table shows."""

from __future__ import annotations

import copy

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from autograder.batch.repair import repair


def graded(source, gid, **meta):
    cell = new_code_cell(source)
    cell.metadata["nbgrader"] = {"schema_version": 3, "grade_id": gid, "locked": True, "solution": False,
                                 "grade": True, "points": 1, "task": False, **meta}
    return cell


def answer(source, gid="f"):
    cell = new_code_cell(source)
    cell.metadata["nbgrader"] = {"schema_version": 3, "grade_id": gid, "locked": False, "solution": True,
                                 "grade": False, "task": False}
    return cell


def release_notebook():
    setup = new_code_cell("import math")
    setup.metadata["nbgrader"] = {"schema_version": 3, "grade_id": "setup", "locked": True, "solution": False,
                                  "grade": False, "task": False}
    return new_notebook(cells=[
        setup, new_markdown_cell("## Exercise"), answer("def f(x):\n    raise NotImplementedError()"),
        graded("assert f(1) == 2", "test_f"), graded("# Hidden tests for f\n", "test_f_hidden"),
        new_markdown_cell("The end."),
    ])


def ids(nb):
    return [c.metadata.get("nbgrader", {}).get("grade_id") or c.source[:12] for c in nb.cells]


def student(*edits):
    nb = copy.deepcopy(release_notebook())
    nb.cells[2].source = "def f(x):\n    return 2 * x"
    for edit in edits:
        edit(nb)
    return nb


def test_an_untouched_layout_keeps_the_answer_and_needs_no_note():
    out, notes = repair(student(), release_notebook())
    assert ids(out) == ids(release_notebook()) and notes == []
    assert out.cells[2].source == "def f(x):\n    return 2 * x"


def test_a_deleted_test_cell_comes_back():
    out, notes = repair(student(lambda nb: nb.cells.pop(3)), release_notebook())
    assert ids(out) == ids(release_notebook())
    assert notes == ["deleted test cells restored: test_f"]


def test_moved_cells_go_back_into_order():
    def swap(nb):
        nb.cells[2], nb.cells[3] = nb.cells[3], nb.cells[2]
    out, notes = repair(student(swap), release_notebook())
    assert ids(out) == ids(release_notebook()) and "cells moved back into their original order" in notes
    assert out.cells[2].source == "def f(x):\n    return 2 * x"


def test_a_duplicated_test_cell_is_dropped():
    out, notes = repair(student(lambda nb: nb.cells.insert(4, copy.deepcopy(nb.cells[3]))), release_notebook())
    assert ids(out) == ids(release_notebook()) and "duplicate cells ignored: test_f" in notes


def test_an_answer_without_metadata_is_reattached_by_its_definition():
    def strip(nb):
        nb.cells[2].metadata = {}
    out, notes = repair(student(strip), release_notebook())
    assert out.cells[2].source == "def f(x):\n    return 2 * x"
    assert "answer f re-attached by matching its definition" in notes
    assert ids(out) == ids(release_notebook())


def test_a_missing_answer_leaves_the_stub():
    out, notes = repair(student(lambda nb: nb.cells.pop(2)), release_notebook())
    assert "no answer found for f" in notes and "NotImplementedError" in out.cells[2].source


def test_the_students_own_cells_stay_after_the_cell_they_followed():
    out, notes = repair(student(lambda nb: nb.cells.insert(3, new_code_cell("print(f(3))"))), release_notebook())
    assert ids(out) == ["setup", "## Exercise", "f", "print(f(3))", "test_f", "test_f_hidden", "The end."]
    assert notes == []


def test_code_above_the_setup_cell_runs_after_it():
    out, notes = repair(student(lambda nb: nb.cells.insert(0, new_code_cell("x = 1"))), release_notebook())
    assert ids(out)[:2] == ["setup", "x = 1"] and "cells above the set-up cell moved below it" in notes


def test_a_test_cell_turned_into_markdown_is_restored_as_code():
    def retype(nb):
        cell = nb.cells[3]
        nb.cells[3] = new_markdown_cell(cell.source, metadata=cell.metadata)
    out, notes = repair(student(retype), release_notebook())
    assert out.cells[3].cell_type == "code" and "cell type of test_f restored" in notes


def test_the_release_notebook_is_not_modified():
    release = release_notebook()
    before = nbformat.writes(release)
    repair(student(lambda nb: nb.cells.pop(3)), release)
    assert nbformat.writes(release) == before


# A cell of the student's own with nbgrader metadata: nbgrader refused the whole notebook (SchemaTooOldError,
# ValidationError "... the nbgrader metadata may be corrupted"), a `grader error` for what is the student's file.
# The metadata is removed (only the release's cells are nbgrader's) and the note names the cell.
def own_cell(kind="code", **meta):
    cell = new_code_cell("print('mine')") if kind == "code" else new_markdown_cell("my notes")
    cell.metadata["nbgrader"] = meta
    return cell


STRAY = {
    "marked as graded": (own_cell(schema_version=3, grade=True, solution=False, locked=False, grade_id="my_test",
                                  points=5, task=False), "'my_test' (marked as graded)"),
    "old schema": (own_cell(schema_version=1, grade=False, solution=False, locked=False, grade_id="mine"),
                   "'mine' (schema version 1)"),
    "answer on markdown": (own_cell("markdown", schema_version=3, grade=False, solution=True, locked=False,
                                    grade_id="essay", task=False), "'essay' (marked as an answer)"),
    "stale keys": (own_cell(schema_version=3, grade=False, solution=False, locked=True, grade_id="copied",
                            checksum="abc", cell_type="code", task=False), "'copied' (a grade id the release does not have)"),
    "graded, no grade id": (own_cell(grade=True, points=2), "a code cell (marked as graded)"),
}


@pytest.mark.parametrize("case", sorted(STRAY))
def test_stray_nbgrader_metadata_on_the_students_own_cell_is_removed_and_named(case):
    from nbgrader.nbgraderformat import MetadataValidator

    cell, named = STRAY[case]
    out, notes = repair(student(lambda nb: nb.cells.insert(3, copy.deepcopy(cell))), release_notebook())
    assert ids(out)[3] == cell.source[:12] and "nbgrader" not in out.cells[3].metadata
    assert notes == ["nbgrader metadata removed from 1 of the student's own cell(s), which nbgrader would refuse "
                     f"(only the release's cells are graded): {named}"]
    MetadataValidator().validate_nb(out)   # what nbgrader's CheckCellMetadata runs: no SchemaTooOldError, no ValidationError


def test_a_student_cell_claiming_a_release_cells_grade_id_is_the_release_cell_again():
    from nbgrader.nbgraderformat import MetadataValidator

    impostor = own_cell("markdown", schema_version=3, grade=True, solution=True, locked=False, grade_id="test_f",
                        points=10, task=False)
    out, notes = repair(student(lambda nb: nb.cells.insert(5, impostor)), release_notebook())
    assert ids(out) == ids(release_notebook()) and "duplicate cells ignored: test_f" in notes
    assert out.cells[3].metadata["nbgrader"]["points"] == 1
    MetadataValidator().validate_nb(out)


def test_a_grade_id_that_is_not_text_is_malformed_metadata():
    from autograder.batch.preparation import repair_submission

    cell = own_cell(schema_version=3, grade=True, grade_id=["not", "text"], points=1)
    out, notes = repair_submission(student(lambda nb: nb.cells.insert(3, cell)), release_notebook())
    assert "malformed metadata removed from 1 cell(s)" in notes and "nbgrader" not in out.cells[3].metadata
