"""A student opens one notebook alone from its Colab badge: does it run to the end?

Each student notebook, with the solutions filled in, runs alone in an empty folder on a simulated Colab
(tests/simulated_colab.py: only what Colab preinstalls, pip offline on a folder of wheels, the course
installed from its wheel): the suite's one full run of it (``notebook_run``, tests/conftest.py). Its
set-up cell must install the helpers and the extras, every cell must run, and it must print what a
notebook run alone prints.
"""

from __future__ import annotations

import re

import pytest

from autograder.course import conventions, setup_cell
from simulated_colab import errors, execute, text

pytestmark = pytest.mark.slow

# What a notebook run alone must print. Notebook 09 alone finds none of the student's earlier notebooks: every
# part falls back to PyTorch's, and the CPU configuration must still beat the counted trigram (this run is the
# suite's only CPU-configuration run of 09 with every part fallen back whose output is read; see
# test_your_parts.py, which runs 09 beside the student's notebooks).
PRINTED_ALONE = {
    "09_your_gpt": ("your parts: yours: none, and this notebook's GPT, AdamW, clipping and train_step | fell back: ",
                    "bits per byte; counted trigram", "-> beats it by",
                    "(the same run: every model part fell back)"),
    # Notebook 12 alone: its parts from 05 and 07 are not there, so both fall back, saying so, and it still trains.
    "12_encoder_decoder": ("your parts: yours: none | fell back: LayerNorm (07) (no file ../07_block/block.ipynb",
                           "decoder self-attention (05) (no file ../05_multi_head/multi_head.ipynb",
                           # issue 32's bar: >= 95% exact match on held-out sources longer than any in training
                           re.compile(r"longer than any in training, 9-12: (9[5-9]\.\d|100\.0)%")),
}


def test_student_notebook_runs_alone_on_simulated_colab(assignment, notebook_run, colab):
    nb = notebook_run.alone.executed     # the student version, solutions filled in, a probe cell appended
    found_errors = errors(nb)
    assert not found_errors, f"{assignment.name} stops on simulated Colab:\n" + "\n".join(found_errors)
    setup = next(c for c in nb.cells if conventions.grade_id(c) == setup_cell.SETUP_GRADE_ID)
    assert "Installing the course helpers" in text(setup), "the set-up cell did not install the helpers"
    report = text(nb.cells[-1])
    assert f"utils from {colab.site_packages}" in report, f"utils was not imported from the installed wheel: {report}"
    assert str(conventions.REPO_ROOT) not in report, f"the repository leaked onto the kernel's path: {report}"
    printed = "".join(text(cell) for cell in nb.cells)
    for expected in PRINTED_ALONE.get(assignment.name, ()):    # a string it contains, or a pattern it matches
        found = expected.search(printed) if isinstance(expected, re.Pattern) else expected in printed
        assert found, f"{assignment.name} alone on simulated Colab did not print {expected!r}:\n{printed[-3000:]}"


def test_setup_cell_explains_a_failed_install_in_one_line(colab, tmp_path):
    """Offline Colab (or a wrong source): one line that says what failed and what to do, no traceback."""
    from nbformat.v4 import new_code_cell, new_notebook

    colab.reset()
    colab.write_kernel(**{setup_cell.INSTALL_SOURCE_VARIABLE: (tmp_path / "missing.whl").as_uri()})
    try:
        nb = new_notebook(cells=[new_code_cell(setup_cell.setup_cell_source())])
        execute(nb, tmp_path, colab, timeout=120)
    finally:
        colab.write_kernel()
    (error,) = [o for o in nb.cells[0].outputs if o.output_type == "error"]
    assert len(error.traceback) == 1, error.traceback
    line = error.traceback[0]
    assert line.startswith("Set-up failed: could not install the course helpers from file://"), line
    assert "online" in line and "README" in line, line
    # the real cause, whatever pip printed last (an upgrade notice, colour codes)
    # (pip 23 says "... is not a valid wheel filename", pip 26 "Invalid wheel filename (wrong number of parts)")
    assert any(cause in line.lower() for cause in ("wheel filename", "no such file or directory", "does not exist")), line
    assert "\x1b" not in line and "[notice]" not in line and "new release of pip" not in line, line
