"""``python -m autograder selfgrade FOLDER``: every saved notebook graded, one progress table.

A folder with notebook 01 answered with the solutions and notebook 02 as released (nothing answered):
the table gives 01 full marks and 02 zero with every exercise to revisit, the total adds up, and the
``--html`` page is inert (no script, no remote URL).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest

from autograder.course import conventions, submissions
from autograder.selfgrade import available_assignments, read_bundle
from autograder.selfgrade.progress import course_notebooks, format_progress, progress_rows

pytestmark = pytest.mark.skipif(not available_assignments(), reason="private edition: no self-grading bundles")


def test_the_progress_table_adds_up_and_names_what_to_revisit():
    results = {"01_next_token": {"rows": [["a", "2 / 2", "passed", []], ["b", "0 / 3", "failed",
                                                                          [["test_b", "NotImplementedError: "]]]],
                                 "earned": 2.0, "total": 5.0},
               "02_tokenization": {"rows": [["c", "1 / 4", "hidden tests failed", [["test_c_hidden", "CheckFailure: c: off\nmore"]]]],
                                   "earned": 1.0, "total": 4.0},
               "03_attention": {"error": "the notebook could not be run: CellTimeoutError: x"}}
    table = format_progress(progress_rows(results))
    assert re.search(r"01_next_token\s+2 / 5\s+b \(0 / 3\)", table)
    assert re.search(r"02_tokenization\s+1 / 4\s+c \(1 / 4\)", table)
    assert re.search(r"03_attention\s+—\s+the notebook could not be run", table)
    assert "Total: 3 / 9 points over 3 notebook(s)" in table
    assert "01_next_token b: not answered yet" in table and "02_tokenization c: CheckFailure: c: off" in table


def test_notebooks_are_found_by_folder_or_file_name(tmp_path):
    (tmp_path / "01_next_token").mkdir()
    (tmp_path / "01_next_token" / "next_token.ipynb").write_text("{}")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "tokenization.ipynb").write_text("{}")
    (tmp_path / "01_next_token" / ".ipynb_checkpoints").mkdir()
    (tmp_path / "01_next_token" / ".ipynb_checkpoints" / "next_token.ipynb").write_text("{}")
    (tmp_path / "scratch.ipynb").write_text("{}")
    found = course_notebooks(tmp_path)
    assert [(name, path.relative_to(tmp_path).as_posix()) for name, path in found] == [
        ("01_next_token", "01_next_token/next_token.ipynb"), ("02_tokenization", "mine/tokenization.ipynb")]


@pytest.mark.slow
def test_selfgrade_a_folder_prints_the_progress_across_the_course(tmp_path):
    known = {a.name: a for a in conventions.assignments()}
    submissions.write(submissions.filled_in(known["01_next_token"]), tmp_path / "01_next_token" / "next_token.ipynb")
    (tmp_path / "02_tokenization").mkdir()
    shutil.copy(known["02_tokenization"].release_path, tmp_path / "02_tokenization" / "tokenization.ipynb")
    done = subprocess.run([sys.executable, "-m", "autograder", "selfgrade", str(tmp_path), "--html", str(tmp_path / "p.html")],
                          capture_output=True, text=True, cwd=conventions.REPO_ROOT, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    totals = {name: sum(t["points"] for t in read_bundle(name)["tests"]) for name in ("01_next_token", "02_tokenization")}
    assert re.search(rf"01_next_token\s+{totals['01_next_token']:g} / {totals['01_next_token']:g}\s+nothing: full marks", done.stdout)
    assert re.search(rf"02_tokenization\s+0 / {totals['02_tokenization']:g}\s+\w", done.stdout), done.stdout
    assert f"Total: {totals['01_next_token']:g} / {sum(totals.values()):g} points over 2 notebook(s)" in done.stdout
    page = (tmp_path / "p.html").read_text(encoding="utf-8")
    assert "<script" not in page and not re.search(r"(src|href)=\"https?:", page) and "data:image/png;base64," in page
