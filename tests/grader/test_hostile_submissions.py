"""The grader against submissions that cheat, damage their notebook, or misbehave.

One grading run of the fixture course (one exercise, ``double``, 1 visible + 2 hidden points) over
many submissions, each with its exact expected score and status. Cheating answers are wrong
(``3 * x``) and try to pass anyway; they must score 0. Damaged notebooks hold a right answer and
must still score 3, with a note saying what was repaired.
"""

from __future__ import annotations

import copy
import csv
import json
import os
import re

import nbformat

import pytest

from autograder.course import conventions, submissions
from autograder.batch.grading import grade
from autograder.sandbox.limits import Limits
from autograder.sandbox.bubblewrap import bwrap_available
from fixture_course import answer, make_course

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not bwrap_available(), reason="the attacks need the bubblewrap sandbox "
                                 "(apt-get install bubblewrap); without it grading must be run with --sandbox none")]

WRONG = "import torch\ndef double(x):\n    return 3 * x\n"

CHEATS = {
    "patch_torch_allclose": "torch.allclose = lambda *a, **k: True\ntorch.isclose = lambda a, b, **k: torch.ones_like(a, dtype=torch.bool)\n",
    "patch_math_isclose": "import math\nmath.isclose = lambda *a, **k: True\n",
    "patch_numpy_testing": "import numpy as np\nnp.testing.assert_allclose = lambda *a, **k: None\nnp.allclose = lambda *a, **k: True\n",
    "patch_course_checks": "from utils import checks\nchecks.assert_close = lambda *a, **k: None\nchecks.assert_tensor = lambda *a, **k: None\n",
    "replace_checks_module": ("import sys, types\nfake = types.ModuleType('utils.checks')\n"
                              "fake.assert_close = lambda *a, **k: None\nsys.modules['utils.checks'] = fake\n"
                              "import utils\nutils.checks = fake\n"),
    "patch_builtins": "import builtins\nbuiltins.abs = lambda x: 0\nbuiltins.isinstance = lambda *a: True\n",
    "patch_tensor_methods": ("torch.Tensor.tolist = lambda self: [6.0] * self.numel()\n"
                             "torch.Tensor.__eq__ = lambda self, other: True\n"),
    "torch_function_mode": ("from torch.overrides import TorchFunctionMode\n"
                            "class AlwaysClose(TorchFunctionMode):\n"
                            "    def __torch_function__(self, func, types, args=(), kwargs=None):\n"
                            "        if func in (torch.allclose, torch.isclose, torch.equal):\n"
                            "            return True\n"
                            "        return func(*args, **(kwargs or {}))\n"
                            "AlwaysClose().__enter__()\n"),
    "shadow_torch_name": ("import torch as real_torch\n"
                          "class FakeTorch:\n"
                          "    def __getattr__(self, name):\n        return getattr(real_torch, name)\n"
                          "    @staticmethod\n"
                          "    def tensor(data, *args, **kwargs):\n        return real_torch.zeros(len(data))\n"
                          "torch = FakeTorch()\n"
                          "def double(x):\n    return 3 * x\n"),
    "patch_at_call_time": ("import torch\nfrom utils import checks\n"
                           "def double(x):\n    checks.assert_close = lambda *a, **k: None\n    return 3 * x\n"),
}

PRETENDERS = {
    "pretend_equal_object": ("import torch\nclass Anything:\n    def __eq__(self, other):\n        return True\n"
                             "    def __float__(self):\n        return 0.0\n"
                             "    def __array_function__(self, func, types, args, kwargs):\n        return True\n"
                             "    def __torch_function__(self, func, types, args=(), kwargs=None):\n        return True\n"
                             "def double(x):\n    return Anything()\n"),
    "pretend_tensor_subclass": ("import torch\nclass Liar(torch.Tensor):\n"
                                "    @classmethod\n"
                                "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
                                "        return True\n"
                                "    def __eq__(self, other):\n        return True\n"
                                "def double(x):\n    return (3 * x).as_subclass(Liar)\n"),
}

READ_SECRETS = """import glob, os, torch
secrets = [p for pattern in ('/**/gradebook.db', '/**/solutions/01_fixture/*.ipynb', '/**/submitted/correct/**/*.ipynb')
           for p in glob.glob(pattern, recursive=True)]
def double(x):
    # Right only if the student could see the gradebook, the solutions or another student's work.
    return 2 * x if secrets else 3 * x
"""

MISBEHAVING = {
    "memory_bomb": ("import torch\ndef double(x):\n    waste = torch.empty(2 ** 38)\n    return 2 * x\n", 0, "memory limit"),
    "huge_output": ("import torch\nprint('spam ' * 20_000_000)\ndef double(x):\n    return 2 * x\n", 3, "ok"),
    "segfault": ("import ctypes\nctypes.string_at(0)\n", 0, "kernel died"),
    "warns_and_logs": ("import logging, sys, warnings, torch\nfrom tqdm.auto import tqdm\n"
                       "def double(x):\n    for _ in tqdm(range(3)):\n        pass\n"
                       "    warnings.warn('slow path', UserWarning)\n    logging.getLogger().warning('careful')\n"
                       "    print('note', file=sys.stderr)\n    return 2 * x\n", 3, "ok"),
}


# Issue 7's attacks on a grader that judged inside the student's kernel. The judge now runs every test
# in its own process, so each of these is just a wrong answer: 0 points.
KERNEL_REWRITES = {
    "swap_code_object": "from utils import checks\nchecks.assert_close.__code__ = (lambda *a, **k: None).__code__\n",
    "edit_private_builtins": ("from utils import checks\nvars(checks)['__builtins__']['abs'] = lambda x: 0\n"
                              "vars(checks)['__builtins__']['len'] = lambda x: 0\n"),
    "rebind_from_inside": ("import torch\ndef double(x):\n    import __main__\n"
                           "    __main__.checks = type('C', (), {'__getattr__': lambda s, n: (lambda *a, **k: None)})()\n"
                           "    __main__.torch = None\n    return 3 * x\n"),
    "input_transformer": "get_ipython().input_transformers_post.append(lambda lines: ['pass\\n'])\n",
    "ast_transformer": ("import ast\nclass Gut(ast.NodeTransformer):\n    def visit_Module(self, node):\n"
                        "        return ast.Module(body=[ast.Pass()], type_ignores=[])\n"
                        "get_ipython().ast_transformers.append(Gut())\n"),
    "custom_exception_handler": "get_ipython().set_custom_exc((BaseException,), lambda *a, **k: None)\n",
    "post_run_cell_clears_errors": ("def _clear(result):\n    result.error_in_exec = None\n"
                                    "get_ipython().events.register('post_run_cell', _clear)\n"),
    "bdb_quit": "import bdb, torch\ndef double(x):\n    raise bdb.BdbQuit()\n",
    "trace_rewrites_locals": ("import sys\ndef _tracer(frame, event, arg):\n"
                              "    frame.f_locals.pop('expected', None)\n    return _tracer\nsys.settrace(_tracer)\n"),
    "reads_callers_frames": ("import sys, torch\ndef double(x):\n    frame = sys._getframe(1)\n    while frame:\n"
                             "        for value in frame.f_locals.values():\n"
                             "            if isinstance(value, torch.Tensor) and value.shape == x.shape and not value.equal(x):\n"
                             "                return value\n        frame = frame.f_back\n    return 3 * x\n"),
    "names_built_at_run_time": ("import importlib\nmod = importlib.import_module('utils.' + 'che' + 'cks')\n"
                                "vars(mod)['assert_' + 'close'] = lambda *a, **k: None\n"
                                "vars(mod)['assert_' + 'tensor'] = lambda *a, **k: None\n"),
    "fills_the_disk": ("import os\nfor folder in ('.', '/tmp', os.path.expanduser('~')):\n    for i in range(40):\n"
                       "        try:\n            with open(os.path.join(folder, f'junk{i}'), 'wb') as f:\n"
                       "                f.write(b'0' * (100 * 2 ** 20))\n        except OSError:\n            break\n"),
    "forged_replies": ("import os\nfor fd in range(3, 40):\n    try:\n        os.write(fd, b'[]\\n{\"id\": 1}\\nnot json\\n')\n"
                       "    except OSError:\n        pass\n"),
}

ESCAPE = """import os, subprocess, torch
subprocess.run('umount /tmp; mount -o remount,rw /; mount -t tmpfs none /mnt', shell=True, capture_output=True)
for target in ('/work', '/root', '/home', '/tmp', '/'):
    try:
        open(os.path.join(target, 'ESCAPED_BY_SUBMISSION'), 'w').write('x')
    except OSError:
        pass
def double(x):
    return 3 * x
"""


def _damaged(assignment, root, how: str):
    nb = answer(assignment, root)
    cells = nb.cells
    index = {conventions.grade_id(c): i for i, c in enumerate(cells)}
    if how == "deleted_test_cell":
        del cells[index["test_double"]]
    elif how == "moved_test_cell":
        hidden = cells.pop(index["test_double_hidden"])
        cells.insert(0, hidden)
    elif how == "duplicated_test_cell":
        cells.insert(index["test_double"], copy.deepcopy(cells[index["test_double"]]))
    elif how == "retyped_test_cell":
        cell = cells[index["test_double"]]
        cell.cell_type = "markdown"
        cell.pop("outputs", None)
        cell.pop("execution_count", None)
    elif how == "stripped_metadata":
        for cell in cells:
            cell.metadata.pop("nbgrader", None)
    return nb


DAMAGED = ["deleted_test_cell", "moved_test_cell", "duplicated_test_cell", "retyped_test_cell", "stripped_metadata"]


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    assignment = make_course(root)
    subs = root / "submitted"

    def put(student, nb):
        submissions.write(nb, subs / student / "01_fixture" / "fixture.ipynb")

    put("correct", answer(assignment, root))
    for student, code in CHEATS.items():
        body = code if "def double" in code else "import torch\n" + code + WRONG
        put(student, answer(assignment, root, body))
    for student, code in PRETENDERS.items():
        put(student, answer(assignment, root, code))
    put("read_secrets", answer(assignment, root, READ_SECRETS))
    for student, (code, _, _) in MISBEHAVING.items():
        put(student, answer(assignment, root, code))
    for how in DAMAGED:
        put(how, _damaged(assignment, root, how))
    edited = answer(assignment, root, WRONG)
    for cell in edited.cells:
        if conventions.grade_id(cell) in ("test_double", "test_double_hidden"):
            cell.source = "print('all good')"
    put("edited_test_cells", edited)
    for student, code in KERNEL_REWRITES.items():
        body = code if "def double" in code else "import torch\n" + code + WRONG
        put(student, answer(assignment, root, body))
    put("escape_as_root", answer(assignment, root, ESCAPE))
    put("correct_classmate", answer(assignment, root))
    put("slow_but_correct", answer(assignment, root, "import time, torch\ndef double(x):\n    time.sleep(1)\n    return 2 * x\n"))

    planted = answer(assignment, root, WRONG)
    planted.cells.insert(0, nbformat.v4.new_code_cell(
        "import sys, types\nfake = types.ModuleType('utils.checks')\nfake.assert_close = lambda *a, **k: None\n"
        "sys.modules['utils.checks'] = fake"))
    put("cell_above_setup", planted)
    put("utils_folder", answer(assignment, root, WRONG))
    shadow = subs / "utils_folder" / "01_fixture" / "utils"
    shadow.mkdir()
    (shadow / "__init__.py").write_text("from . import checks\n")
    (shadow / "checks.py").write_text("def assert_close(*a, **k):\n    pass\nassert_tensor = assert_close\n")

    string_meta = answer(assignment, root)
    string_meta.cells[0].metadata["nbgrader"] = "not a dict"
    put("string_nbgrader_metadata", string_meta)
    wordy = answer(assignment, root)
    wordy.cells += [nbformat.v4.new_markdown_cell("blah " * 220_000) for _ in range(10)]
    put("eleven_megabytes_of_markdown", wordy)

    (subs / "symlinked_notebook" / "01_fixture").mkdir(parents=True)
    (subs / "symlinked_notebook" / "01_fixture" / "fixture.ipynb").symlink_to(subs / "correct" / "01_fixture" / "fixture.ipynb")
    (subs / "symlinked_folder").mkdir()
    (subs / "symlinked_folder" / "01_fixture").symlink_to(subs / "correct" / "01_fixture", target_is_directory=True)

    scripted = answer(assignment, root, "import torch\nfrom IPython.display import HTML, Javascript, display\n"
                      "display(HTML('<script>alert(1)</script>'))\ndisplay(Javascript('alert(2)'))\nprint(In, Out)\n" + WRONG)
    scripted.cells.append(nbformat.v4.new_markdown_cell('<img src=x onerror="alert(3)"><script>alert(4)</script>'))
    put("scripts_in_feedback", scripted)
    put("=HYPERLINK(\"http://x\")", answer(assignment, root, WRONG))

    stripped_wrong = _damaged(assignment, root, "stripped_metadata")
    for cell in stripped_wrong.cells:
        if "def double" in cell.source:
            cell.source = WRONG
    put("stripped_metadata_wrong", stripped_wrong)

    out = root / "out"
    limits = Limits(cell_timeout_s=20, notebook_timeout_s=120, memory_mb=3072)
    before = _tree_digest(subs), _tree_digest(root / "solutions")
    rows = {r.student_id: r for r in grade(subs, out, workers=2, progress=False, solutions_dir=root / "solutions", limits=limits)}
    assert (_tree_digest(subs), _tree_digest(root / "solutions")) == before, "grading changed the submissions or solutions"
    return rows, out, root


def _tree_digest(folder):
    import hashlib

    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        digest.update(str(path.relative_to(folder)).encode())
        if path.is_file() and not path.is_symlink():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _show(row) -> str:
    return f"score {row.score}/{row.max_score}, status {row.status!r}, detail {row.detail!r}, flags {row.flags!r}"


def test_the_correct_answer_gets_full_marks(graded):
    rows, _, _ = graded
    assert (rows["correct"].score, rows["correct"].status) == (3, "ok"), _show(rows["correct"])
    assert rows["correct"].flags == "", "an ordinary answer must not be flagged"


@pytest.mark.parametrize("student", sorted(CHEATS) + sorted(PRETENDERS))
def test_cheating_wrong_answers_score_zero_and_are_flagged(graded, student):
    rows, _, _ = graded
    row = rows[student]
    assert (row.score, row.max_score) == (0, 3), _show(row)
    assert row.flags, f"{student} should be flagged for review: {_show(row)}"


@pytest.mark.skipif(not bwrap_available(), reason="bubblewrap is not usable on this machine (apt-get install bubblewrap)")
def test_student_code_cannot_see_gradebook_solutions_or_other_submissions(graded):
    rows, _, _ = graded
    assert rows["read_secrets"].score == 0, _show(rows["read_secrets"])


@pytest.mark.parametrize("student", sorted(MISBEHAVING))
def test_misbehaving_submissions_get_a_score_and_an_honest_status(graded, student):
    rows, _, _ = graded
    _, score, status = MISBEHAVING[student]
    assert (rows[student].score, rows[student].status) == (score, status), _show(rows[student])


@pytest.mark.parametrize("student", DAMAGED)
def test_damaged_notebooks_with_a_right_answer_still_score_full_marks(graded, student):
    rows, _, _ = graded
    row = rows[student]
    assert (row.score, row.status) == (3, "ok"), _show(row)
    if student != "duplicated_test_cell":
        assert row.detail, f"{student}: the repair should be reported: {_show(row)}"


def test_edited_test_cells_are_restored(graded):
    rows, _, _ = graded
    assert rows["edited_test_cells"].score == 0, _show(rows["edited_test_cells"])


def test_stripped_metadata_with_a_wrong_answer_scores_zero(graded):
    rows, _, _ = graded
    assert rows["stripped_metadata_wrong"].score == 0, _show(rows["stripped_metadata_wrong"])


def test_huge_output_is_capped(graded):
    _, out, _ = graded
    autograded = out / "course" / "autograded" / "huge_output" / "01_fixture" / "fixture.ipynb"
    assert autograded.stat().st_size < 5_000_000


def test_gradebook_has_no_manual_grading_left(graded):
    from nbgrader.api import Gradebook

    rows, out, _ = graded
    with Gradebook(f"sqlite:///{out / 'gradebook.db'}") as gradebook:
        pending = [(s.student.id) for s in gradebook.assignment_submissions("01_fixture") if s.needs_manual_grade]
    assert not pending, f"submissions left needing manual grading: {pending}"


def test_rerun_skips_unchanged_and_regrades_changed_submissions(graded, tmp_path):
    rows, out, root = graded
    assignment = conventions.Assignment("01_fixture", root / "solutions" / "01_fixture" / "fixture.ipynb")
    subs = root / "submitted"
    before = (out / "grades.csv").read_text()
    # The student fixes their answer; only they are regraded, everybody else keeps their result.
    submissions.write(answer(assignment, root), subs / "patch_math_isclose" / "01_fixture" / "fixture.ipynb")
    limits = Limits(cell_timeout_s=20, notebook_timeout_s=120, memory_mb=3072)
    again = {r.student_id: r for r in grade(subs, out, workers=2, progress=False, solutions_dir=root / "solutions", limits=limits,
                                            students={"patch_math_isclose", "correct"})}
    assert again["patch_math_isclose"].score == 3, _show(again["patch_math_isclose"])
    unchanged = {k: v for k, v in again.items() if k != "patch_math_isclose"}
    assert all(unchanged[k].as_dict() == rows[k].as_dict() for k in unchanged)
    state = json.loads((out / "grading_state.json").read_text())
    assert state["patch_math_isclose/01_fixture"]["row"]["score"] == "3"
    after = list(csv.DictReader(open(out / "grades.csv")))
    assert len(after) == len(before.splitlines()) - 1


@pytest.mark.parametrize("student", sorted(KERNEL_REWRITES))
def test_rewriting_the_kernel_cannot_change_a_verdict(graded, student):
    rows, _, _ = graded
    row = rows[student]
    expected_status = "protocol error" if student == "forged_replies" else "ok"
    assert (row.score, row.max_score, row.status) == (0, 3, expected_status), _show(row)


def test_honest_classmates_keep_full_marks(graded):
    rows, _, _ = graded
    for student in ("correct", "correct_classmate", "slow_but_correct", "string_nbgrader_metadata",
                    "eleven_megabytes_of_markdown"):
        assert (rows[student].score, rows[student].status) == (3, "ok"), f"{student}: {_show(rows[student])}"
    assert "malformed metadata" in rows["string_nbgrader_metadata"].detail
    assert "shortened" in rows["eleven_megabytes_of_markdown"].detail


@pytest.mark.skipif(not bwrap_available(), reason="bubblewrap is not usable on this machine (apt-get install bubblewrap)")
def test_no_escape_from_the_sandbox_even_as_root(graded):
    rows, _, _ = graded
    assert rows["escape_as_root"].score == 0, _show(rows["escape_as_root"])
    for target in ("/work", "/root", "/home", "/tmp", "/"):
        assert not os.path.exists(os.path.join(target, "ESCAPED_BY_SUBMISSION")), f"a submission wrote into {target}"


def test_planted_modules_do_not_reach_the_verdict(graded):
    rows, _, _ = graded
    assert (rows["cell_above_setup"].score, rows["utils_folder"].score) == (0, 0)
    assert "moved below" in rows["cell_above_setup"].detail, _show(rows["cell_above_setup"])
    assert "shadow" in rows["utils_folder"].detail, _show(rows["utils_folder"])


def test_links_are_not_graded_as_someone_elses_work(graded):
    rows, _, _ = graded
    for student in ("symlinked_notebook", "symlinked_folder"):
        row = rows[student]
        assert (row.score, row.status) == (0, "invalid notebook"), f"{student}: {_show(row)}"
        assert "link" in row.detail


def test_feedback_runs_no_student_script_and_shows_no_hidden_source(graded):
    _, out, _ = graded
    html_text = (out / "feedback" / "scripts_in_feedback" / "01_fixture" / "fixture.html").read_text(encoding="utf-8")
    scripts = re.findall(r"<script[^>]*>(.*?)</script>", html_text, re.S)
    assert not any("alert" in script for script in scripts), "a student's script is live in the feedback page"
    assert not re.search(r"<[a-zA-Z][^>]*\son\w+\s*=", html_text), "a live event-handler attribute in the feedback page"
    assert "Content-Security-Policy" in html_text
    assert "arange(6.0)" not in html_text and "BEGIN HIDDEN TESTS" not in html_text


def test_failed_hidden_tests_say_why(graded):
    _, out, _ = graded
    html_text = (out / "feedback" / "bdb_quit" / "01_fixture" / "fixture.html").read_text(encoding="utf-8")
    assert "test_double_hidden" in html_text and "BdbQuit" in html_text
    html_text = (out / "feedback" / "torch_function_mode" / "01_fixture" / "fixture.html").read_text(encoding="utf-8")
    assert "values differ" in html_text, "a failed hidden test should show the judge's message (expected vs got)"
    # Code that writes into modules (numpy here) makes the runner's reports unbelievable (issue 28): the
    # page says why every check of unchanged inputs failed.
    html_text = (out / "feedback" / "patch_numpy_testing" / "01_fixture" / "fixture.html").read_text(encoding="utf-8")
    said = "double: the grader cannot check that your code leaves its inputs unchanged (reaches into the grader"
    assert said in html_text or said.replace("'", "&#x27;") in html_text


def test_grades_csv_is_safe_for_spreadsheets(graded):
    _, out, _ = graded
    with open(out / "grades.csv", newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            for key, value in row.items():
                assert not value.startswith(("=", "+", "@")), f"{key} = {value!r} would run as a formula"
