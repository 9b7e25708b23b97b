"""The grader's own memory on notebooks built to inflate what it parses before judging (issue 28): each
attack class, under the 25 MB file limit, read, repaired and flagged as ``grade`` does, in a fresh
process whose peak memory (``VmHWM``) is printed and bounded with a wide margin, with the exact outcome
(refused as ``invalid notebook`` with the reason, or read with what was dropped said)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from autograder.batch import notebook_bounds
from fixture_course import make_course

FILE_BYTES = 24 * 2**20     # under intake.MAX_NOTEBOOK_BYTES
PEAK_MB = 600               # the process, Python, nbformat and PyTorch-free grader code included
# Before issue 28 (main at 080232e, same machine, 2 busy cores) these took the grader up to several GB.


def _many_cells(nb):
    cell = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": ""}
    nb["cells"] += [dict(cell) for _ in range(FILE_BYTES // len(json.dumps(cell)))]


def _many_outputs(nb):
    output = {"output_type": "stream", "name": "stdout", "text": ""}
    next(c for c in nb["cells"] if c["cell_type"] == "code")["outputs"] = [output] * (FILE_BYTES // 60)


def _one_giant_output(nb):
    output = {"output_type": "stream", "name": "stdout", "text": "x" * (FILE_BYTES - 100_000)}
    next(c for c in nb["cells"] if c["cell_type"] == "code")["outputs"] = [output]


def _wide_metadata(nb):
    nb["cells"][0]["metadata"]["junk"] = {f"k{i}": 0 for i in range(FILE_BYTES // 15)}


def _lists_in_metadata(nb):
    nb["metadata"]["junk"] = [[] for _ in range(FILE_BYTES // 4)]


def _big_metadata_strings(nb):
    for cell in nb["cells"]:
        cell["metadata"]["junk"] = "y" * (FILE_BYTES // (2 * len(nb["cells"])))


def _attachments(nb):
    markdown = next(c for c in nb["cells"] if c["cell_type"] == "markdown")
    markdown["attachments"] = {f"a{i}.png": {"image/png": ""} for i in range(FILE_BYTES // 36)}


def _many_code_cells(nb, source_lines=800):
    cell = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": "x = 1\n" * source_lines}
    nb["cells"] += [dict(cell) for _ in range(FILE_BYTES // len(json.dumps(cell)))]


def _many_code_cells_under_the_cap(nb):
    # 2,900 cells of 8 kB: read, repaired and flagged (1 MB of it parsed); string literals keep the flags'
    # walk short (1 MB of statements takes the flags a minute or more on a busy machine).
    cell = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
            "source": "s = '" + "x" * (FILE_BYTES // 2900 - 200) + "'\n"}
    nb["cells"] += [dict(cell) for _ in range(2900)]


TOO_MANY_VALUES = "the grader reads at most 1,000,000 (clear the outputs and resubmit)"
# attack -> (outcome: "invalid notebook" or "read", words expected in the reason or notes)
ATTACKS = {
    "many_cells": (_many_cells, "invalid notebook", TOO_MANY_VALUES),
    "many_outputs": (_many_outputs, "invalid notebook", TOO_MANY_VALUES),
    "one_giant_output": (_one_giant_output, "read", ""),
    "wide_metadata": (_wide_metadata, "invalid notebook", TOO_MANY_VALUES),
    "lists_in_metadata": (_lists_in_metadata, "invalid notebook", TOO_MANY_VALUES),
    "big_metadata_strings": (_big_metadata_strings, "read", "oversized metadata removed from"),
    "attachments": (_attachments, "invalid notebook", TOO_MANY_VALUES),
    "many_code_cells": (_many_code_cells, "invalid notebook", "cells; the grader reads at most 3,000"),
    "many_code_cells_under_the_cap": (_many_code_cells_under_the_cap, "read", ""),
}

MEASURE = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    import nbformat
    from autograder.course import conventions
    from autograder.batch import intake, preparation
    release = nbformat.read(sys.argv[1], as_version=4)
    path = Path(sys.argv[2])
    start, outcome = time.perf_counter(), {}
    try:
        nb, notes = intake.read_submission(path.parent, conventions.Assignment("01_fixture", Path(sys.argv[3])),
                                           release, path)
        nb, repaired = preparation.repair_submission(nb, release)
        preparation.flag_sources(preparation.answer_sources(nb, release))
        outcome = {"status": "read", "detail": "; ".join(notes + repaired)}
    except intake.Unreadable as problem:
        outcome = {"status": problem.status, "detail": problem.detail}
    status = Path("/proc/self/status").read_text()
    outcome["peak_mb"] = int(status.split("VmHWM:")[1].split()[0]) // 1024
    outcome["seconds"] = time.perf_counter() - start
    print(json.dumps(outcome))
""")


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    root = tmp_path_factory.mktemp("bounds")
    assignment = make_course(root)
    return root, assignment


SLOW = {"many_code_cells_under_the_cap"}   # 2,900 cells through repair and nbformat: tens of seconds on a busy machine


@pytest.mark.parametrize("attack", [pytest.param(a, marks=pytest.mark.slow) if a in SLOW else a for a in sorted(ATTACKS)])
def test_the_grader_reads_an_inflating_notebook_within_its_memory(course, attack, tmp_path):
    root, assignment = course
    build, status, words = ATTACKS[attack]
    release = root / "notebooks" / "01_fixture" / "fixture.ipynb"
    nb = json.loads(release.read_text(encoding="utf-8"))
    build(nb)
    path = tmp_path / "submitted" / "fixture.ipynb"
    path.parent.mkdir()
    path.write_text(json.dumps(nb), encoding="utf-8")
    assert path.stat().st_size <= 25 * 2**20, "the attack must pass the file-size check to test what follows"
    done = subprocess.run([sys.executable, "-c", MEASURE, str(release), str(path), str(assignment.source_path)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"\n{attack} ({path.stat().st_size / 2**20:.1f} MB file): grader peak {outcome['peak_mb']} MB, "
          f"{outcome['seconds']:.1f} s, {outcome['status']}: {outcome['detail'][:120]}")
    assert outcome["status"] == status and words in outcome["detail"], outcome
    assert outcome["peak_mb"] < PEAK_MB, f"the grader peaked at {outcome['peak_mb']} MB"


def test_outputs_and_attachments_are_dropped_before_nbformat_builds_anything():
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "id": "a", "metadata": {}, "execution_count": 3, "source": "x = 1",
         "outputs": [{"output_type": "stream", "name": "stdout", "text": "1\n"}]},
        {"cell_type": "markdown", "id": "b", "metadata": {"nbgrader": {"grade": False}, "junk": "z" * 70_000},
         "source": "hi", "attachments": {"a.png": {"image/png": "AAAA"}}}]}
    read, notes = notebook_bounds.read_bounded(json.dumps(nb).encode())
    assert read.cells[0].outputs == [] and read.cells[0].execution_count is None
    assert "attachments" not in read.cells[1] and dict(read.cells[1].metadata) == {"nbgrader": {"grade": False}}
    assert notes == ["oversized metadata removed from 1 place(s)"]


def test_structure_is_counted_on_the_bytes_before_parsing(monkeypatch):
    monkeypatch.setattr(notebook_bounds, "MAX_JSON_VALUES", 10)
    with pytest.raises(notebook_bounds.NotebookTooBig, match="about 12 JSON values; the grader reads at most 10"):
        notebook_bounds.read_bounded(b'{"cells": [' + b"[]," * 3 + b'[]], "x": [1, 2]}')
