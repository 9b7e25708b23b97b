"""`selfgrade FOLDER` skips what is untouched (issue 51: 12 notebooks, 8 untouched, took 10 min 37 s) and
prints none of PyTorch's profiler lines."""

from __future__ import annotations

import json
import re
import shutil
import time

import nbformat
from nbgrader.utils import compute_checksum

from autograder.course import conventions
from autograder.selfgrade import _is_kernel_noise
from autograder.selfgrade.progress import grade_folder, nbgrader_checksum, untouched


def test_the_checksum_is_nbgraders_on_every_released_cell():
    compared = 0
    for path in sorted(conventions.NOTEBOOKS_DIR.rglob("*.ipynb")):
        for cell in nbformat.read(str(path), as_version=4).cells:
            if "checksum" in cell.metadata.get("nbgrader", {}):
                assert nbgrader_checksum(cell) == compute_checksum(cell) == cell.metadata.nbgrader.checksum
                compared += 1
    assert compared > 100


def test_a_released_notebook_is_untouched_until_an_answer_changes(tmp_path):
    release = conventions.NOTEBOOKS_DIR / "01_next_token" / "next_token.ipynb"
    copy = tmp_path / "01_next_token" / "next_token.ipynb"
    copy.parent.mkdir()
    shutil.copyfile(release, copy)
    assert untouched(copy)
    nb = json.loads(copy.read_text())
    answer = next(c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("solution"))
    answer["source"] = "".join(answer["source"]).replace("raise NotImplementedError()", "return logits")
    copy.write_text(json.dumps(nb))
    assert not untouched(copy)
    copy.write_text("not json")
    assert not untouched(copy)


def test_a_folder_of_untouched_notebooks_takes_a_second(tmp_path, capsys):
    for name in ("01_next_token", "04_scaling", "07_block"):
        source = next((conventions.NOTEBOOKS_DIR / name).glob("*.ipynb"))
        (tmp_path / name).mkdir()
        shutil.copyfile(source, tmp_path / name / source.name)
    start = time.perf_counter()
    assert grade_folder(tmp_path) == 0
    assert time.perf_counter() - start < 5
    out = capsys.readouterr().out
    assert re.search(r"01_next_token +0 / 37", out) and "not answered yet" in out and "Total: 0 / " in out, out


def test_profiler_log_lines_are_noise():
    assert _is_kernel_noise("USDT:2026-11-29 01:13:08 24126:24126 SyncActivityProfilerHandler.cpp:52] profiler_start")
    assert _is_kernel_noise("STAGE:2024-05-08 12:00:00 1234:1234 ActivityProfilerController.cpp:311] Completed Stage")
    assert not _is_kernel_noise("UserWarning: the student's own warning")
