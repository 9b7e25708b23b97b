"""A notebook passes on a busy machine (issue 35).

Maintainers run the suite on shared machines and laptops. The suite's one run of notebook 08
(``LOADED_NOTEBOOK`` in tests/conftest.py: on the simulated Colab, then in the judge with its mutants) goes
beside busy loops at the suite's own priority, one per core less one per other pytest-xdist worker (which
keeps its core busy with its own tests): every cell must pass, every mutant must still be
caught (test_solutions_and_mutants.py reads the same run), and its CPU time must stay within its budget.
PyTorch runs on one thread (two OpenMP threads spin while they wait for a busy core: on a loaded machine
notebook 09 used 12 CPU minutes), and cells are limited in CPU seconds, not by a clock that the load stretches.
This module's tests go to the worker that makes that run (``SHARED_SCOPES``).
"""

from __future__ import annotations

import types

import nbformat
import pytest

from autograder.course import check, conventions
from conftest import LOADED_NOTEBOOK, run_of
from machine_load import busy_loops


def test_busy_loops_are_gone_afterwards():
    with busy_loops(2) as loops:
        assert all(loop.poll() is None for loop in loops)
    assert all(loop.returncode is not None for loop in loops)


@pytest.mark.slow
def test_checks_kernel_runs_pytorch_on_one_thread_whatever_the_environment_says(tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "4")
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import os, torch\nassert torch.get_num_threads() == 1, torch.get_num_threads()\n"
        "assert os.environ['OMP_NUM_THREADS'] == os.environ['MKL_NUM_THREADS'] == '1'")])
    report = check.NotebookReport("one_thread", 0.0, 60)
    check._run_in_kernel(nb, types.SimpleNamespace(source_path=tmp_path / "x.ipynb"), report, 60)
    assert not report.cell_errors, report.cell_errors


@pytest.mark.slow
def test_a_notebook_passes_on_a_busy_machine(colab, tmp_path_factory):
    assignment = conventions.assignment(LOADED_NOTEBOOK)
    run = run_of(assignment, colab, tmp_path_factory)
    report = run.report
    assert not report.cell_errors, "fails on a busy machine:\n" + "\n".join(report.cell_errors.values())
    assert not report.judge_errors, "fails in the judge on a busy machine:\n" + "\n".join(report.judge_errors.values())
    assert report.mutants and all(m.caught for m in report.mutants), "a mutant escaped on a busy machine"
    assert report.seconds <= report.budget_seconds, (
        f"{report.seconds:.0f} CPU seconds on a busy machine, over the {report.budget_seconds:.0f} s budget")
    spun = run.busy_loop_cpu_seconds
    assert spun, "the notebook ran without busy loops"
    if all(s is not None for s in spun):      # the load was real: the loops had the cores for a good while
        assert min(spun) > 5, f"the busy loops used only {spun} CPU seconds"
