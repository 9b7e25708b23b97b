"""``autograder.batch.repair`` on damage a student really does, as pure nbformat (no kernel, no nbgrader):
each case states the cells that must come out and the note the grade table shows."""

from __future__ import annotations

import copy

import nbformat
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
