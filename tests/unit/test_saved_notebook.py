"""Where the self-grading cell finds the notebook it belongs to, and which of its cells it runs."""

from __future__ import annotations

import json
import sys
import types

from autograder import selfgrade
from autograder.selfgrade import saved_notebook


def _cell(source, nbgrader=None, kind="code"):
    cell = {"cell_type": kind, "source": source, "metadata": {}}
    if nbgrader is not None:
        cell["metadata"]["nbgrader"] = nbgrader
    return cell


ANSWER = {"solution": True, "grade": False, "grade_id": "f"}
TEST = {"solution": False, "grade": True, "grade_id": "test_f", "points": 1}


def _notebook():
    return {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        _cell("import torch"),                                   # code cell 1: the set-up
        _cell("# Exercise", kind="markdown"),
        _cell("def f(x):\n    return x + 1\n", ANSWER),          # 2: an answer
        _cell("assert f(1) == 2", TEST),                         # 3: its test
        _cell("print(f(2))"),                                    # 4: given code between tests
        _cell("def g(x):\n    return 2 * x\n", dict(ANSWER, grade_id="g")),  # 5
        _cell("assert g(1) == 2", dict(TEST, grade_id="test_g")),           # 6: the last test
        _cell("train_for_an_hour()"),                            # 7: an experiment after every test
        _cell(selfgrade.cell_source("01_x")),                    # 8: the self-grading cell
    ]}


def test_cells_to_run_are_those_above_the_last_test_without_the_tests():
    chosen = saved_notebook.cells_to_run(_notebook(), selfgrade.is_self_grading_source)
    assert [position for position, _ in chosen] == [1, 2, 4, 5]
    assert chosen[1][1].startswith("def f(x)")


def test_cells_given_as_lists_of_lines_are_joined():
    nb = _notebook()
    nb["cells"][2]["source"] = ["def f(x):\n", "    return x + 1\n"]
    chosen = dict(saved_notebook.cells_to_run(nb, selfgrade.is_self_grading_source))
    assert chosen[2] == "def f(x):\n    return x + 1\n"


def test_a_notebook_without_tests_runs_every_code_cell_but_self_grading():
    nb = _notebook()
    nb["cells"] = [c for c in nb["cells"] if not c["metadata"].get("nbgrader", {}).get("grade")]
    positions = [p for p, _ in saved_notebook.cells_to_run(nb, selfgrade.is_self_grading_source)]
    assert positions == [1, 2, 3, 4, 5]


def test_locate_reads_the_path_jupyter_server_gives(tmp_path, monkeypatch):
    path = tmp_path / "work" / "next_token.ipynb"
    path.parent.mkdir()
    path.write_text(json.dumps(_notebook()), encoding="utf-8")
    monkeypatch.setenv("JPY_SESSION_NAME", str(path))
    found = saved_notebook.locate({})
    assert found.where == str(path) and found.saved_at == path.stat().st_mtime
    assert found.content["cells"][2]["source"].startswith("def f")


def test_a_relative_session_path_falls_back_to_the_file_in_the_kernels_folder(tmp_path, monkeypatch):
    (tmp_path / "next_token.ipynb").write_text(json.dumps(_notebook()), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("JPY_SESSION_NAME", "course/notebooks/01_next_token/next_token.ipynb")
    assert saved_notebook.locate({}).where == str(tmp_path / "next_token.ipynb")


def test_vs_code_names_the_file_in_the_namespace(tmp_path, monkeypatch):
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    path = tmp_path / "n.ipynb"
    path.write_text(json.dumps(_notebook()), encoding="utf-8")
    assert saved_notebook.locate({"__vsc_ipynb_file__": str(path)}).where == str(path)


def test_nothing_found_where_no_front_end_says_or_the_file_is_not_a_notebook(tmp_path, monkeypatch):
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    assert saved_notebook.locate({}) is None
    broken = tmp_path / "broken.ipynb"
    broken.write_text("{not json", encoding="utf-8")
    monkeypatch.setenv("JPY_SESSION_NAME", str(broken))
    assert saved_notebook.locate({"__session__": str(tmp_path / "missing.ipynb")}) is None


def test_on_colab_the_notebook_comes_live_from_the_front_end(monkeypatch):
    asked = []

    def blocking_request(kind, request="", timeout_sec=None):
        asked.append(kind)
        return {"ipynb": _notebook()}

    colab = types.ModuleType("google.colab")
    message = types.ModuleType("google.colab._message")
    message.blocking_request = blocking_request
    colab._message = message
    monkeypatch.setitem(sys.modules, "google", types.ModuleType("google"))
    monkeypatch.setitem(sys.modules, "google.colab", colab)
    monkeypatch.setitem(sys.modules, "google.colab._message", message)
    found = saved_notebook.locate({})
    assert asked == ["get_ipynb"] and found.saved_at is None and "Colab" in found.where


def test_answers_run_differently_from_the_saved_ones_are_named():
    nb = _notebook()
    history = ["", "import torch", "def f(x):\n    return x - 1\n", "def g(x):\n    return 2 * x\n"]
    assert saved_notebook.unsaved_answers(nb, history) == ["def f"]
    history.append("def f(x):\n    return x + 1\n")     # run again as saved: nothing to warn about
    assert saved_notebook.unsaved_answers(nb, history) == []
    assert saved_notebook.unsaved_answers(nb, []) == []   # never run: the saved notebook is all there is
