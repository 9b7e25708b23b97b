"""One student cannot sink the batch, and nothing is dropped silently (issues 15 and 16).

One batch of the fixture course (``tests/fixture_course.py``: one exercise, 1 visible + 2 hidden
points) holds every attack class and every layout mistake at once, next to honest classmates; each
test states the exact row it expects (score, status, words of the detail), the number of rows, and the
largest file the batch may leave in OUT. The layout checks that need no grading run are fast.
"""

from __future__ import annotations

import copy
import csv
import json
import os
import re
from pathlib import Path

import nbformat
import pytest

from autograder.batch import grading, intake, planning, preparation, report
from autograder.course import submissions
from autograder.__main__ import main as autograder_main
from autograder.batch.grading import grade
from autograder.batch.intake import NoSubmissions
from autograder.course.text import clean_text
from autograder.sandbox.limits import Limits
from conftest import TEST_SANDBOX
from fixture_course import answer, make_course

LIMITS = Limits(cell_timeout_s=20, notebook_timeout_s=180, memory_mb=3072, sandbox=TEST_SANDBOX)
NB = "fixture.ipynb"
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
MAX_OUT_FILE_BYTES = 8 * 1024 * 1024   # the judge keeps 4 MB of outputs per notebook; a page adds its markup

# An answer that is right and prints 20,000 characters in each of 400 cells of its own (8 MB of output
# from a notebook of about 100 kB): the judge keeps 4 MB per notebook, so no file in OUT grows past 8 MB.
OUTPUT_BOMB_CELLS = 400
# Inside double(): write a reply nested 100,000 levels deep on every descriptor the runner might answer on.
DEEP_REPLY = ("import os, torch\ndef double(x):\n    for fd in range(3, 40):\n        try:\n"
              "            os.write(fd, b'[' * 100000 + b'\\n')\n        except OSError:\n            pass\n"
              "    return 2 * x\n")
SURROGATE_MESSAGE = "import torch\ndef double(x):\n    raise ValueError('broken \\udcff text')\n"
DATA_ANSWER = "import torch\nFACTOR = int(open('factor.txt').read())\n\ndef double(x):\n    return FACTOR * x\n"
XSS = ('<script>alert(1)</script><img src=x onerror="alert(2)"> [click](javascript:alert(3)) '
       '<a href="javascript:alert(4)">x</a>')


# folder name -> (how rows show it, why it cannot be graded under)
INVALID_NAMES = {
    " lead_space": ("\\u0020lead_space", "starts with whitespace (U+0020 SPACE)"),
    "trail_space ": ("trail_space\\u0020", "ends with whitespace (U+0020 SPACE)"),
    "line\u2028separator": ("line\\u2028separator", "holds a line break (U+2028 LINE SEPARATOR)"),
    "para\u2029separator": ("para\\u2029separator", "holds a line break (U+2029 PARAGRAPH SEPARATOR)"),
    "zero\u200bwidth": ("zero\\u200bwidth", "holds an invisible character (U+200B ZERO WIDTH SPACE)"),
}


def another_assignments_notebook(assignment, root: Path):
    """A solved notebook of another assignment: its answer cell has a grade id the fixture's release does not."""
    nb = answer(assignment, root)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "double":
            cell.metadata["nbgrader"]["grade_id"] = "intro_exercise"
    return nb


def _write_with_escapes(nb, path: Path) -> None:
    """Write a notebook as JSON with \\u escapes (the only way a lone surrogate gets into a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(nb, ensure_ascii=True), encoding="ascii")


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    root = tmp_path_factory.mktemp("course")
    assignment = make_course(root)
    subs = root / "submitted"
    release = root / "notebooks" / "01_fixture" / NB

    def put(student: str, nb=None, name: str = NB) -> Path:
        return submissions.write(nb if nb is not None else answer(assignment, root), subs / student / "01_fixture" / name)

    put("correct")
    # Issue 15: nothing dropped silently.
    submissions.write(answer(assignment, root), subs / "loose_right" / NB)               # graded where it is
    submissions.write(answer(assignment, root), subs / "loose_unknown" / "homework.ipynb")  # no assignment by that name
    submissions.write(answer(assignment, root), subs / "01_fixture" / NB)                # an assignment folder at the top
    submissions.write(answer(assignment, root), subs / "ada.ipynb")                      # a notebook at the top
    (subs / "two_notebooks" / "01_fixture").mkdir(parents=True)
    (subs / "two_notebooks" / "01_fixture" / NB).write_bytes(release.read_bytes())        # the untouched release
    put("two_notebooks", name="fixture_final.ipynb")                                      # the solved one
    put("truncated").write_text(release.read_text(encoding="utf-8")[:300], encoding="utf-8")
    # Issue 16: one student cannot sink the batch.
    folder = put("odd_file_names").parent
    (folder / os.fsdecode(b"data\xff.txt")).write_text("x", encoding="utf-8")
    os.symlink("/etc/passwd", folder / os.fsdecode(b"link\xfe"))
    put(os.fsdecode(b"st\xffudent"))
    put("zo\u00eb")
    big = put("big_data_file").parent
    with open(big / "big.bin", "wb") as handle:
        handle.truncate(100 * 2**20)            # 100 MB on paper (sparse): over the 64 MB the files may take
    put("data_file", answer(assignment, root, DATA_ANSWER)).parent.joinpath("factor.txt").write_text("2", encoding="utf-8")
    bomb = answer(assignment, root)
    bomb.cells += [nbformat.v4.new_code_cell("print('x' * 20000)") for _ in range(OUTPUT_BOMB_CELLS)]
    put("output_bomb", bomb)
    xss = answer(assignment, root)
    xss.cells.insert(1, nbformat.v4.new_markdown_cell(XSS))
    put("markdown_script", xss)
    put("deep_reply", answer(assignment, root, DEEP_REPLY))
    put("surrogate_message", answer(assignment, root, SURROGATE_MESSAGE))
    surrogate_source = answer(assignment, root, "import torch\ndef double(x):\n    return 2 * x  # \udcff\n")
    _write_with_escapes(surrogate_source, subs / "surrogate_source" / "01_fixture" / NB)
    put("judge_fails")
    put("prepare_fails")
    # Issue 28: a whole course zipped into one assignment's folder, another assignment's notebook alone,
    # names that hide characters, one name in NFC and in NFD.
    zipped = subs / "zipped_course" / "01_fixture" / "course" / "notebooks"
    submissions.write(answer(assignment, root), zipped / "01_fixture" / NB)
    submissions.write(another_assignments_notebook(assignment, root), zipped / "00_intro" / "intro.ipynb")
    submissions.write(another_assignments_notebook(assignment, root), subs / "only_another" / "01_fixture" / "intro.ipynb")
    for name in INVALID_NAMES:
        put(name)
    put("\u00e9mile")                                                 # NFC: graded
    put("e\u0301mile", answer(assignment, root, "def double(x):\n    return x\n"))   # the same name in NFD: noted
    put("noe\u0308l")                                                 # NFD only: graded as the NFC name

    real_run_judge, real_sanitise = grading.run_judge, preparation._sanitise

    def run_judge(job, limits, judge=None):
        if "judge_fails" in str(job.submission_dir):
            raise OSError(11, "Resource temporarily unavailable")   # what fork() says with no PIDs left
        return real_run_judge(job, limits, judge=judge)

    def sanitise(nb, job, config, db_url):
        if job.student_id == "prepare_fails":
            raise RuntimeError("nbgrader could not build this notebook")
        return real_sanitise(nb, job, config, db_url)

    out = root / "out"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(grading, "run_judge", run_judge)
        patch.setattr(preparation, "_sanitise", sanitise)
        rows = grade(subs, out, workers=2, progress=False, solutions_dir=root / "solutions", limits=LIMITS)
    return rows, out, subs, root


def _row(rows, student, assignment="01_fixture"):
    matches = [r for r in rows if (r.student_id, r.assignment) == (student, assignment)]
    assert len(matches) == 1, f"{len(matches)} rows for {student}/{assignment}: {[(r.student_id, r.assignment) for r in rows]}"
    return matches[0]


def _show(row) -> str:
    return f"{row.student_id}: score {row.score}/{row.max_score}, status {row.status!r}, detail {row.detail!r}"


# student -> (score, max_score, status, words the detail must contain)
EXPECTED = {
    "correct": (3, 3, "ok", []),
    "loose_right": (3, 3, "ok", ["found outside an assignment folder", "expected loose_right/01_fixture/fixture.ipynb"]),
    "two_notebooks": (3, 3, "ok", ["graded fixture_final.ipynb (it differs from the release)",
                                   "also found fixture.ipynb (not graded)"]),
    "truncated": (0, 3, "invalid notebook", ["not valid JSON"]),
    "odd_file_names": (3, 3, "ok", ["link\\xfe (a link)"]),
    "zo\u00eb": (3, 3, "ok", []),
    "big_data_file": (3, 3, "ok", ["big.bin (100.0 MB; the files beside the notebook may take 64 MB in all)"]),
    "data_file": (3, 3, "ok", []),
    "output_bomb": (3, 3, "ok", []),
    "markdown_script": (3, 3, "ok", ["text cell(s) of the student's shown as plain text"]),
    "deep_reply": (0, 3, "protocol error", ["nested too deeply"]),
    "surrogate_message": (0, 3, "ok", ["not valid Unicode"]),
    "surrogate_source": (3, 3, "ok", ["not valid Unicode"]),
    "judge_fails": (0, 3, "error", ["could not run this notebook's judge: BlockingIOError: [Errno 11]"]),
    "prepare_fails": (None, None, "grader error", ["RuntimeError: nbgrader could not build this notebook"]),
    "zipped_course": (3, 3, "ok", ["graded course/notebooks/01_fixture/fixture.ipynb; found course/notebooks/00_intro/"
                                   "intro.ipynb: another assignment's notebook (not graded)"]),
    "only_another": (0, 3, "missing notebook", ["no fixture.ipynb in the submission; found intro.ipynb: another "
                                                "assignment's notebook (not graded)"]),
    "\u00e9mile": (3, 3, "ok", ["also found e\u0301mile/01_fixture, under a student folder whose name is the same in "
                                "another Unicode form (NFC/NFD): not graded"]),
    "no\u00ebl": (3, 3, "ok", []),
}


@pytest.mark.slow
@pytest.mark.parametrize("student", sorted(EXPECTED))
def test_each_submission_gets_its_exact_row(batch, student):
    rows, _, _, _ = batch
    row = _row(rows, student)
    score, max_score, status, words = EXPECTED[student]
    assert (row.score, row.max_score, row.status) == (score, max_score, status), _show(row)
    for word in words:
        assert word in row.as_dict()["detail"], _show(row)


@pytest.mark.slow
def test_rows_for_what_cannot_be_graded(batch):
    rows, _, _, _ = batch
    loose = _row(rows, "loose_unknown", "homework.ipynb")
    assert (loose.score, loose.status) == (None, "misplaced notebook"), _show(loose)
    assert "expected SUBMISSIONS/<student>/<assignment>/<notebook>.ipynb, one of: 01_fixture/fixture.ipynb" in loose.detail
    top = _row(rows, "01_fixture", "")
    assert (top.score, top.status) == (None, "misplaced notebook") and "<student>/01_fixture/fixture.ipynb" in top.detail, _show(top)
    ada = _row(rows, "", "ada.ipynb")
    assert (ada.score, ada.status) == (None, "misplaced notebook") and "in no student's folder" in ada.detail, _show(ada)
    odd = _row(rows, os.fsdecode(b"st\xffudent"))
    assert (odd.score, odd.status) == (None, "invalid name"), _show(odd)
    assert "the folder name 'st\\xffudent' is not plain UTF-8 text" in odd.as_dict()["detail"], _show(odd)


@pytest.mark.slow
def test_one_row_per_submission_and_a_csv_that_any_string_fits(batch):
    rows, out, _, _ = batch
    # + loose_unknown, the top-level 01_fixture folder and ada.ipynb, st\xffudent, and the names that hide characters
    assert len(rows) == len(EXPECTED) + 4 + len(INVALID_NAMES)
    text = (out / "grades.csv").read_text(encoding="utf-8")
    table = list(csv.DictReader(text.splitlines()))
    assert len(table) == len(rows)
    assert "st\\xffudent" in {r["student_id"] for r in table}
    assert not CONTROL.search(text.replace("\r\n", "").replace("\n", "")), "control characters in grades.csv"


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(INVALID_NAMES))
def test_a_name_that_hides_characters_is_an_invalid_name_with_the_reason(batch, name):
    rows, _, _, _ = batch
    shown, why = INVALID_NAMES[name]
    row = _row(rows, shown)
    assert row.as_dict() == {"student_id": shown, "assignment": "01_fixture", "score": "", "max_score": "",
                             "status": "invalid name", "detail": f"the folder name '{shown}' {why}: rename it",
                             "flags": ""}, _show(row)


@pytest.mark.slow
def test_no_name_or_folder_is_a_grader_error_and_no_line_separator_is_shown(batch, capsys):
    rows, out, _, _ = batch
    assert [r.student_id for r in rows if r.status == "grader error"] == ["prepare_fails"]
    assert [r.student_id for r in rows if "mile" in r.student_id] == ["\u00e9mile"], "one row for NFC and NFD"
    text = (out / "grades.csv").read_text(encoding="utf-8") + report.format_table(rows)
    assert not re.search("[\u2028\u2029\x85\u200b]", text), "a line separator or invisible character was shown"
    page = (out / "feedback" / "only_another" / "01_fixture" / "fixture.html").read_text(encoding="utf-8")
    assert "missing notebook" in page and "another assignment" in page


@pytest.mark.slow
def test_no_file_in_out_is_larger_than_the_budget(batch):
    _, out, _, _ = batch
    sizes = {p: p.lstat().st_size for p in out.rglob("*") if p.is_file()}
    largest = max(sizes, key=sizes.get)
    assert sizes[largest] < MAX_OUT_FILE_BYTES, f"{largest} is {sizes[largest]} bytes"
    assert not any(p.name == "big.bin" for p in sizes), "the data file over the cap was copied into OUT"
    page = (out / "feedback" / "output_bomb" / "01_fixture" / "fixture.html").read_text(encoding="utf-8")
    assert "outputs passed the 4 MB it keeps per notebook" in page


@pytest.mark.slow
def test_an_unreadable_notebook_gets_a_short_feedback_page(batch):
    _, out, _, _ = batch
    page = (out / "feedback" / "truncated" / "01_fixture" / "fixture.html").read_text(encoding="utf-8")
    assert "could not be graded" in page and "invalid notebook" in page and "not valid JSON" in page
    assert "Content-Security-Policy" in page


@pytest.mark.slow
def test_the_autograded_notebook_renders_no_student_html(batch):
    """Formgrader shows OUT/course/autograded/...: the student's markdown must be text there, as in feedback."""
    _, out, _, _ = batch
    nb = nbformat.read(str(out / "course" / "autograded" / "markdown_script" / "01_fixture" / NB), as_version=4)
    student = [c.source for c in nb.cells if c.cell_type in ("markdown", "raw") and "alert" in c.source]
    # One HTML block with text only: markdown inside <pre> is not parsed, so no tag, handler or link is live.
    assert len(student) == 1 and re.fullmatch(r"<pre>[^<>]*</pre>", student[0]), student
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in student[0]
    page = (out / "feedback" / "markdown_script" / "01_fixture" / "fixture.html").read_text(encoding="utf-8")
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)" in page, "escaped once, shown as text"


@pytest.mark.slow
def test_a_rerun_after_odd_names_gives_the_same_rows(batch):
    rows, out, subs, root = batch
    again = grade(subs, out, workers=2, progress=False, solutions_dir=root / "solutions", limits=LIMITS,
                  students={"correct"})
    assert [r.as_dict() for r in again] == [r.as_dict() for r in rows]


# --------------------------------------------------------------------------------------------------
# Layout mistakes that stop before anything is written (fast: no grading)


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    # One fixture course for the layout tests (each nbgrader build takes seconds): they only read it,
    # and grade stops before writing anything.
    root = tmp_path_factory.mktemp("course")
    return make_course(root), root


@pytest.mark.parametrize("layout", ["empty", "no student level", "one level too deep", "only unknown assignments",
                                    "a notebook at the top"])
def test_no_submissions_found_stops_with_the_expected_layout(course, tmp_path, layout):
    assignment, root = course
    subs = tmp_path / "subs"
    subs.mkdir()
    where = {"empty": None, "no student level": subs / "01_fixture" / NB,
             "one level too deep": subs / "submitted" / "ada" / "01_fixture" / NB,
             "only unknown assignments": subs / "ada" / "homework" / NB, "a notebook at the top": subs / NB}[layout]
    if where is not None:
        submissions.write(answer(assignment, root), where)
    with pytest.raises(NoSubmissions) as raised:
        grade(subs, tmp_path / "out", progress=False, solutions_dir=root / "solutions", limits=LIMITS)
    message = str(raised.value)
    assert f"no submissions found under {subs}" in message, message
    assert "expected SUBMISSIONS/<student>/<assignment>/<notebook>.ipynb" in message, message
    assert not (tmp_path / "out").exists(), "nothing may be written"


def test_the_grade_command_says_no_submissions_and_fails(tmp_path, capsys):
    (tmp_path / "subs").mkdir()
    code = autograder_main(["grade", str(tmp_path / "subs"), "--out", str(tmp_path / "out"),
                            "--allow-self-grading-bundles", "--sandbox", TEST_SANDBOX])
    err = capsys.readouterr().err
    assert code == 1 and "no submissions found under" in err and "<student>/<assignment>/<notebook>.ipynb" in err, err
    assert not (tmp_path / "out").exists()


def test_the_grade_command_refuses_the_public_editions_bundles(tmp_path, capsys, monkeypatch):
    (tmp_path / "subs").mkdir()
    monkeypatch.setattr(report, "self_grading_bundles", lambda: [tmp_path / "selfgrade" / "01_x.bin"])
    code = autograder_main(["grade", str(tmp_path / "subs"), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 1 and "python -m autograder build --no-self-grading" in err and "--allow-self-grading-bundles" in err, err
    assert not (tmp_path / "out").exists()
    monkeypatch.setattr(report, "self_grading_bundles", lambda: [])
    code = autograder_main(["grade", str(tmp_path / "subs"), "--out", str(tmp_path / "out"), "--sandbox", TEST_SANDBOX])
    err = capsys.readouterr().err
    assert code == 1 and "refused" not in err and "no submissions found" in err, "without bundles nothing is refused"


def test_the_summary_warns_about_sandbox_none_and_bundles():
    lines = report.summary_warnings(Limits(sandbox="none"), [Path("autograder/selfgrade/01_x.bin")])
    assert "rewrite the grader's files and zero the next student" in lines[0]
    assert "--no-self-grading" in lines[1]
    assert report.summary_warnings(Limits(sandbox="bwrap"), []) == []


# --------------------------------------------------------------------------------------------------
# The pieces, on inputs where a violation shows


def test_clean_text_leaves_no_line_break_or_invisible_character_of_any_kind():
    """Every character of Unicode's categories Cc, Cf, Zl and Zp this Python knows becomes a space or goes."""
    import sys
    import unicodedata

    hidden = "".join(chr(c) for c in range(sys.maxunicode + 1)
                     if unicodedata.category(chr(c)) in ("Cc", "Cf", "Zl", "Zp"))
    assert set(clean_text(hidden)) <= {" "}
    assert clean_text("ann\u2028lee\u2029x\x85y") == "ann lee x y"
    assert clean_text("zero\u200bwidth\u00adsoft\ufeff") == "zerowidthsoft"


def test_clean_text_keeps_text_and_drops_what_a_terminal_or_csv_would_act_on():
    assert clean_text("zo\u00eb \u4e2d\u6587") == "zo\u00eb \u4e2d\u6587"
    assert clean_text(os.fsdecode(b"a\xffb")) == "a\\xffb"
    assert clean_text("lone \ud800 surrogate") == "lone \\ud800 surrogate"
    assert clean_text("\x1b[31mred\x07\x00 tab\there\r\nnext \u202eevil") == "[31mred tab here  next evil"


def test_the_csv_is_written_whatever_the_strings(tmp_path):
    row = report.GradeRow(os.fsdecode(b"\xff\xfe"), "a\ud800", 1.0, 3.0, "ok", "=HYPERLINK(\"x\")\x1b\x07", "\x00")
    report.write_csv([row], tmp_path / "grades.csv")
    table = list(csv.DictReader(open(tmp_path / "grades.csv", encoding="utf-8")))
    assert table == [{"student_id": "\\xff\\xfe", "assignment": "a\\ud800", "score": "1", "max_score": "3",
                      "status": "ok", "detail": "'=HYPERLINK(\"x\")", "flags": ""}]


def test_staged_files_are_capped_and_checked_before_reading(tmp_path):
    folder, target = tmp_path / "sub", tmp_path / "staged"
    folder.mkdir()
    target.mkdir()
    (folder / "small.txt").write_text("2", encoding="utf-8")
    with open(folder / "huge.bin", "wb") as handle:
        handle.truncate(intake.MAX_SUBMISSION_FILES_BYTES + 1)
    os.symlink("/etc/passwd", folder / "link")
    os.mkfifo(folder / "pipe")
    (folder / os.fsdecode(b"\xff.txt")).write_text("x", encoding="utf-8")
    notes = intake.stage_files(folder, target)
    assert sorted(os.listdir(target)) == sorted(["small.txt", os.fsdecode(b"\xff.txt")])
    assert notes == [f"huge.bin ({(intake.MAX_SUBMISSION_FILES_BYTES + 1) / 2**20:.1f} MB; the files beside the "
                     f"notebook may take {intake.MAX_SUBMISSION_FILES_BYTES // 2**20} MB in all)",
                     "link (a link)", "pipe (not a regular file)"]


def test_fingerprints_take_any_file_name_and_do_not_read_huge_files(tmp_path):
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / os.fsdecode(b"\xff.ipynb")).write_text("{}", encoding="utf-8")
    with open(folder / "huge.bin", "wb") as handle:
        handle.truncate(4 * 2**30)   # 4 GB on paper: hashed by size and time, never read
    source = tmp_path / "source.ipynb"
    source.write_text("{}", encoding="utf-8")
    found = intake.Found("s", "a", folder)
    first = planning._fingerprint(found, source, LIMITS)
    assert first == planning._fingerprint(found, source, LIMITS)
    (folder / os.fsdecode(b"\xff.ipynb")).write_text("{ }", encoding="utf-8")
    assert planning._fingerprint(found, source, LIMITS) != first


@pytest.mark.slow   # parses a megabyte of code three times (the quick subset's costliest test, 20 s on a busy
# machine); the same bounds on cheap inputs (one long cell, many cells, unparseable code) are quick in
# tests/unit/test_tampering.py
def test_flagging_is_bounded_for_huge_and_deeply_nested_cells():
    assert preparation.flag_sources(["x = 1\n" * 500_000]) == "code cell too long to scan (3000 kB)"   # 3 MB: not parsed
    assert preparation.flag_sources(["import gc\n", "y = " + "(" * 50 + "1" + ")" * 50]) == "uses gc"
    assert preparation.flag_sources(["y = " + "[" * 5000 + "]" * 5000]) == ""   # too deep for Python: not a crash
    # 1 MB parsed in all: a long cell first hides nothing after it; cells past the budget are flagged.
    assert preparation.flag_sources(["x = 1\n" * 500_000, "import ctypes\n"]) == (
        "code cell too long to scan (3000 kB); reaches into the grader's machinery: imports ctypes; uses ctypes")
    assert preparation.flag_sources(["x = 1\n" * 15_000] * 12 + ["import gc\n"]) == "code too long to scan in full; uses gc"
    assert preparation.flag_sources(["x = 1\n" * 15_000] * 12 + ["import gc\n" * 5_000]) == "code too long to scan in full"


def test_the_judge_keeps_four_megabytes_of_outputs_per_notebook_and_every_verdict():
    from autograder.judge.outputs import MAX_NOTEBOOK_OUTPUT_BYTES, error_output, keep_within_budget, stream_output

    spent = 0
    kept = []
    for _ in range(400):
        outputs = [stream_output("x" * 20_000)]
        spent = keep_within_budget(outputs, spent, graded=False)
        kept.append(outputs)
    verdict = [stream_output("y" * 20_000), error_output("CheckFailure", "double: wrong")]
    spent = keep_within_budget(verdict, spent, graded=True)
    total = sum(len(json.dumps(o)) for cell in kept for o in cell)
    assert MAX_NOTEBOOK_OUTPUT_BYTES - 30_000 < total <= MAX_NOTEBOOK_OUTPUT_BYTES + 200
    notes = [o for cell in kept for o in cell if "output removed by the grader" in o.get("text", "")]
    assert len(notes) == 1 and kept[-1] == [] and verdict == [error_output("CheckFailure", "double: wrong")]


def test_a_reply_nested_too_deeply_is_the_students_protocol_error():
    from autograder.judge.transport import Connection, RunnerGone

    with pytest.raises(RunnerGone) as raised:
        Connection(None, -1, b"[" * 100_000 + b"\n")._read(1, 0.0)
    assert raised.value.status == "protocol error" and "nested too deeply" in str(raised.value)


def test_a_result_with_lone_surrogates_is_made_valid_and_says_so():
    from autograder.judge.protocol import sign

    key = b"k" * 32
    body = json.dumps({"status": "ok", "detail": "", "cells": [{"index": 3, "outputs": [
        {"output_type": "error", "ename": "ValueError", "evalue": "broken \udcff text", "traceback": []}]}]})
    result = grading.verify_result(json.dumps({"body": body, "mac": sign(key, body)}).encode(), key)
    assert result.status == "ok" and "not valid Unicode" in result.detail
    assert result.cells[0].outputs[0]["evalue"] == "broken \ufffd text"
    copy.deepcopy(result)  # plain data


def test_the_readme_states_the_limits_the_code_applies():
    from autograder.batch import flags
    from autograder.judge import outputs

    text = " ".join((Path(grading.__file__).parents[1] / "README.md").read_text(encoding="utf-8").split())
    stated = [f"at most {intake.MAX_NOTEBOOK_BYTES // 2**20} MB",
              f"at most {intake.MAX_SUBMISSION_FILES_BYTES // 2**20} MB in all and {intake.MAX_SUBMISSION_FILES:,} files",
              f"at most {outputs.MAX_NOTEBOOK_OUTPUT_BYTES // 2**20} MB of outputs per notebook",
              f"at most {grading.MAX_JUDGE_RESULT_BYTES // 2**20} MB of a judge's reply",
              f"at most {flags.MAX_SCANNED_CHARS // 1000} kB per cell and {preparation.MAX_FLAGGED_CHARS // 10**6} MB per submission",
              f"no file in OUT over {MAX_OUT_FILE_BYTES // 2**20} MB"]
    for phrase in stated:
        assert phrase in text, phrase


def test_a_failing_release_build_is_one_grader_error_per_submission(tmp_path, monkeypatch):
    """nbgrader's release notebook is made once per assignment, before any submission is read; when
    nbgrader fails there, each submission of that assignment gets a 'grader error' row with the reason
    (the students' files are not to blame), and nothing is judged."""
    assignment = make_course(tmp_path)
    subs = tmp_path / "submitted"
    for student in ("ann", "bob", "cem"):
        submissions.write(answer(assignment, tmp_path), subs / student / "01_fixture" / NB)
    calls = []

    def failing_api(config):
        class Api:
            def generate_assignment(self, name, **kwargs):
                calls.append(name)
                return {"success": False, "log": "[GenerateAssignmentApp | ERROR] cell metadata is invalid"}
        return Api()

    monkeypatch.setattr(grading, "make_api", failing_api)
    monkeypatch.setattr(grading, "run_judge", lambda job, limits, judge=None: pytest.fail("nothing may be judged"))
    rows = grade(subs, tmp_path / "out", progress=False, solutions_dir=tmp_path / "solutions", limits=LIMITS)
    assert calls == ["01_fixture"]
    assert [(r.student_id, r.status) for r in rows] == [("ann", "grader error"), ("bob", "grader error"), ("cem", "grader error")]
    assert all("generate_assignment failed" in r.detail and "cell metadata is invalid" in r.detail for r in rows), rows
