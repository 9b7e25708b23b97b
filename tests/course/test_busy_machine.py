"""A notebook passes on a busy machine (issue 35).

Maintainers run the suite on shared machines and laptops. Here one solution notebook runs in a kernel, as
``autograder check`` runs it, beside one busy loop per core at the suite's own priority: every cell must
pass, and its CPU time must stay within its budget. PyTorch runs on one thread (two OpenMP threads spin
while they wait for a busy core: on a loaded machine notebook 09 used 12 CPU minutes), and cells are
limited in CPU seconds, not by a clock that the load stretches.
"""

from __future__ import annotations

import os
import subprocess
import sys
import types
from contextlib import contextmanager

import nbformat
import pytest

from autograder.course import check, conventions
from autograder.sandbox import cpu_time

LOADED_NOTEBOOK = "08_train_gpt"   # the notebook that failed a cell under load (issue 35); the longest training cells


@contextmanager
def busy_loops(count: int):
    """``count`` processes that spin at this process's priority; all killed and reaped on exit."""
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield loops
    finally:
        for loop in loops:
            loop.kill()
        for loop in loops:
            loop.wait(timeout=30)


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
def test_a_notebook_passes_beside_one_busy_loop_per_core():
    assignment = next(a for a in conventions.assignments() if a.name == LOADED_NOTEBOOK)
    with busy_loops(os.cpu_count() or 2) as loops:
        report = check.run_notebook(assignment, with_mutants=False)
        spun = [cpu_time.process_cpu_seconds(loop.pid) for loop in loops]
    assert not report.cell_errors, "fails on a busy machine:\n" + "\n".join(report.cell_errors.values())
    assert not report.judge_errors, "fails in the judge on a busy machine:\n" + "\n".join(report.judge_errors.values())
    assert report.seconds <= report.budget_seconds, (
        f"{report.seconds:.0f} CPU seconds on a busy machine, over the {report.budget_seconds:.0f} s budget")
    if all(s is not None for s in spun):      # the load was real: the loops had the cores for a good while
        assert min(spun) > 5, f"the busy loops used only {spun} CPU seconds"
