"""Finding and reading submissions (autograder/batch/intake.py), on small folders made here: where each
notebook found goes, and why a file that cannot be graded is refused."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

from autograder.batch import folder_names, intake, submission_files
from autograder.judge.protocol import Status
from fixture_course import make_deep_folder, remove_deep_folder


@dataclass
class Assignment:
    name: str
    source_path: Path


KNOWN = {"01_a": Assignment("01_a", Path("/course/01_a/a.ipynb")),
         "02_b": Assignment("02_b", Path("/course/02_b/b.ipynb"))}


def notebook(*sources: str):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    return nb


def put(path: Path, nb=None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb or notebook("x = 1"), str(path))
    return path


def test_each_notebook_found_is_a_submission_or_a_row_saying_where_it_should_be(tmp_path):
    put(tmp_path / "ann" / "01_a" / "a.ipynb")
    put(tmp_path / "bob" / "b.ipynb")                 # loose, its name names 02_b: graded where it is
    put(tmp_path / "cy" / "01_a" / "a.ipynb")
    put(tmp_path / "cy" / "a.ipynb")                  # loose, beside the folder it belongs in: noted
    put(tmp_path / "dee" / "notes.ipynb")             # loose, names nothing: a row
    put(tmp_path / "top.ipynb")                       # outside every student's folder: a row
    put(tmp_path / "01_a" / "a.ipynb")                # an assignment where a student should be: a row
    put(tmp_path / "eve" / "homework" / "a.ipynb")    # a folder that is no assignment: a hint
    found, rows = intake.discover(tmp_path, KNOWN)
    by_key = {(f.student_id, f.assignment): f for f in found}
    assert sorted(by_key) == [("ann", "01_a"), ("bob", "02_b"), ("cy", "01_a"), ("eve", "homework")]
    assert by_key["bob", "02_b"].notebook == tmp_path / "bob" / "b.ipynb"
    assert by_key["bob", "02_b"].notes == ["graded b.ipynb, found outside an assignment folder (expected bob/02_b/b.ipynb)"]
    assert by_key["cy", "01_a"].notebook is None
    assert by_key["cy", "01_a"].notes == ["also found a.ipynb outside the assignment folder (not graded)"]
    assert by_key["eve", "homework"].notes == ["it holds a.ipynb: expected eve/01_a/a.ipynb"]
    assert by_key["ann", "01_a"].notes == []
    assert {(r.student_id, r.assignment) for r in rows} == {("", "top.ipynb"), ("01_a", ""), ("dee", "notes.ipynb")}
    assert all(r.status == Status.MISPLACED_NOTEBOOK and intake.EXPECTED_LAYOUT in r.detail for r in rows)
    dee = next(r for r in rows if r.student_id == "dee")
    assert dee.detail.endswith("one of: 01_a/a.ipynb, 02_b/b.ipynb")


def test_hidden_files_and_folders_are_not_submissions(tmp_path):
    put(tmp_path / ".trash" / "01_a" / "a.ipynb")
    put(tmp_path / "ann" / ".ipynb_checkpoints" / "a.ipynb")
    put(tmp_path / ".top.ipynb")
    found, rows = intake.discover(tmp_path, KNOWN)
    assert found == [] and rows == []
    assert "no submissions found under" in intake.no_submissions_message(tmp_path, KNOWN)
    assert "e.g. " in intake.no_submissions_message(tmp_path, KNOWN)
    assert "assignments: none" in intake.no_submissions_message(tmp_path, {})


def read(folder: Path, release=None):
    return intake.read_submission(folder, KNOWN["01_a"], release)


def refused(folder: Path, release=None) -> tuple[str, str]:
    with pytest.raises(intake.Unreadable) as caught:
        read(folder, release)
    return caught.value.status, caught.value.detail


def test_a_valid_notebook_is_read_with_no_notes(tmp_path):
    put(tmp_path / "a.ipynb", notebook("y = 2"))
    nb, notes = read(tmp_path)
    assert [c.source for c in nb.cells] == ["y = 2"] and notes == []


def test_files_that_cannot_be_graded_are_refused_with_the_reason(tmp_path):
    assert refused(tmp_path) == (Status.MISSING_NOTEBOOK, "no a.ipynb in the submission (notebooks found: none)")
    (tmp_path / "a.ipynb").write_bytes(b"")
    assert refused(tmp_path) == (Status.INVALID_NOTEBOOK, "the file is empty")
    (tmp_path / "a.ipynb").write_text('{"cells": [', encoding="utf-8")
    assert refused(tmp_path) == (Status.INVALID_NOTEBOOK, "the file is not valid JSON (damaged or truncated?)")
    (tmp_path / "a.ipynb").write_text('{"cells": [{"cell_type": "code", "source": "x", "metadata": {}, "outputs": [], "execution_count": "one"}], '
                                      '"nbformat": 4, "nbformat_minor": 4, "metadata": {}}', encoding="utf-8")
    status, detail = refused(tmp_path)
    assert status == Status.INVALID_NOTEBOOK and detail.startswith("not a valid notebook: ")
    (tmp_path / "a.ipynb").unlink()
    (tmp_path / "a.ipynb").mkdir()
    assert refused(tmp_path) == (Status.INVALID_NOTEBOOK, "the notebook is not a regular file")


def test_links_are_never_followed(tmp_path):
    elsewhere = put(tmp_path / "elsewhere" / "secret.ipynb")
    folder = tmp_path / "sub"
    folder.mkdir()
    os.symlink(elsewhere, folder / "a.ipynb")
    assert refused(folder) == (Status.INVALID_NOTEBOOK, "the notebook is a link (only regular files are graded)")
    linked = tmp_path / "linked"
    os.symlink(tmp_path / "elsewhere", linked)
    assert refused(linked) == (Status.INVALID_NOTEBOOK, "the submission folder is a link to somewhere else")


def test_a_notebook_over_the_size_limit_is_refused_before_it_is_read(tmp_path, monkeypatch):
    monkeypatch.setattr(intake, "MAX_NOTEBOOK_BYTES", 100)
    (tmp_path / "a.ipynb").write_bytes(b"{" + b" " * 200)   # not JSON either: the size is checked first
    status, detail = refused(tmp_path)
    assert status == Status.INVALID_NOTEBOOK and detail.startswith("the file is 0 MB; the limit is 0 MB")


def test_lone_surrogates_are_replaced_and_noted(tmp_path):
    (tmp_path / "a.ipynb").write_text(nbformat.writes(notebook("s = 'PLACE'")).replace("PLACE", "\\udc80"),
                                      encoding="utf-8")
    nb, notes = read(tmp_path)
    assert nb.cells[0].source == "s = '\ufffd'"
    assert notes == ["text that is not valid Unicode (lone surrogates) was replaced by \ufffd"]


def test_of_several_notebooks_the_one_that_differs_from_the_release_is_graded(tmp_path):
    release = notebook("x = 1")
    put(tmp_path / "a.ipynb", notebook("x = 1"))            # the expected name, but untouched
    put(tmp_path / "a-copy.ipynb", notebook("x = 42"))      # the work
    nb, notes = read(tmp_path, release)
    assert nb.cells[0].source == "x = 42"
    assert notes == ["graded a-copy.ipynb (it differs from the release); also found a.ipynb (not graded)"]
    put(tmp_path / "a.ipynb", notebook("x = 7"))            # both differ: the expected name wins
    nb, notes = read(tmp_path, release)
    assert nb.cells[0].source == "x = 7" and notes == ["graded a.ipynb; also found a-copy.ipynb (not graded)"]


def test_a_single_misnamed_notebook_is_graded_in_place_of_the_expected_one(tmp_path):
    put(tmp_path / "deep" / "mine.ipynb", notebook("z = 3"))
    nb, notes = read(tmp_path)
    assert nb.cells[0].source == "z = 3" and notes == ["graded deep/mine.ipynb in place of a.ipynb"]


@pytest.mark.parametrize("name, problem", [("ann", False), ("bad\x1bname", True), ("tab\there", True),
                                           (os.fsdecode(b"\xff"), True), ("émilie", False)])
def test_name_problem(name, problem):
    assert bool(folder_names.name_problem(name)) is problem


@pytest.mark.parametrize("name, shown, problem", [
    (" ann", "\\u0020ann", "starts with whitespace (U+0020 SPACE)"),
    ("ann ", "ann\\u0020", "ends with whitespace (U+0020 SPACE)"),
    ("ann\u00a0", "ann\\u00a0", "ends with whitespace (U+00A0 NO-BREAK SPACE)"),
    ("an\u2028n", "an\\u2028n", "holds a line break (U+2028 LINE SEPARATOR)"),
    ("an\u2029n", "an\\u2029n", "holds a line break (U+2029 PARAGRAPH SEPARATOR)"),
    ("an\x85n", "an\\u0085n", "holds a line break (U+0085)"),
    ("a\u200bnn", "a\\u200bnn", "holds an invisible character (U+200B ZERO WIDTH SPACE)"),
    ("ann\u202e", "ann\\u202e", "holds an invisible character (U+202E RIGHT-TO-LEFT OVERRIDE)"),
    ("\ufeffann", "\\ufeffann", "holds an invisible character (U+FEFF ZERO WIDTH NO-BREAK SPACE)"),
    ("bad\x1bname", "bad\\u001bname", "holds a control character (U+001B)"),
])
def test_names_that_hide_characters_are_refused_with_the_character(name, shown, problem):
    assert folder_names.shown_name(name) == shown
    assert folder_names.name_problem(name) == f"the folder name '{shown}' {problem}: rename it"


def test_a_name_with_spaces_inside_or_accents_is_fine_and_shown_as_it_is():
    for name in ("ann lee", "émilie", "e\u0301milie", "李雷"):
        assert folder_names.name_problem(name) == "" and folder_names.shown_name(name) == name


def test_a_name_in_nfc_and_in_nfd_is_one_student(tmp_path):
    nfc, nfd = "\u00e9mile", "e\u0301mile"
    put(tmp_path / nfd / "01_a" / "a.ipynb")
    put(tmp_path / nfc / "01_a" / "a.ipynb")
    put(tmp_path / nfd / "02_b" / "b.ipynb")            # only under the NFD folder: graded, as the NFC name
    put(tmp_path / "noe\u0308l" / "01_a" / "a.ipynb")    # NFD only
    found, rows = intake.discover(tmp_path, KNOWN)
    assert rows == []
    assert [(f.student_id, f.assignment, f.folder.relative_to(tmp_path).as_posix()) for f in found] == [
        ("no\u00ebl", "01_a", "noe\u0308l/01_a"), (nfc, "01_a", f"{nfc}/01_a"), (nfc, "02_b", f"{nfd}/02_b")]
    assert found[1].notes == [f"also found {nfd}/01_a, under a student folder whose name is the same in another "
                              "Unicode form (NFC/NFD): not graded"]
    assert found[0].notes == [] and found[2].notes == []


def answers(**cells):
    """A notebook whose answer cells (nbgrader solution cells) have these grade ids and sources."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source, metadata={"nbgrader": {"solution": True, "grade": False, "grade_id": gid}})
                for gid, source in cells.items()]
    return nb


OWNERS = {"a.ipynb": "01_a", "b.ipynb": "02_b"}


def test_a_whole_course_zipped_into_one_assignment_folder_grades_that_assignments_notebook(tmp_path):
    release = answers(f="raise NotImplementedError()")
    put(tmp_path / "course" / "01_a" / "a.ipynb", answers(f="return 1"))
    put(tmp_path / "course" / "02_b" / "b.ipynb", answers(g="return 2"))     # named for 02_b
    put(tmp_path / "course" / "00_intro" / "intro.ipynb", answers(h="return 3"))   # answers of another notebook
    nb, notes = intake.read_submission(tmp_path, KNOWN["01_a"], release, owners=OWNERS)
    assert nb.cells[0].source == "return 1"
    assert notes == ["graded course/01_a/a.ipynb; found course/00_intro/intro.ipynb, "
                     "course/02_b/b.ipynb: other assignments' notebooks (not graded)"]


def test_the_assignments_notebook_is_graded_even_untouched_beside_anothers_work(tmp_path):
    release = answers(f="raise NotImplementedError()")
    put(tmp_path / "a.ipynb", answers(f="raise NotImplementedError()"))   # not started
    put(tmp_path / "b.ipynb", answers(g="return 2"))                      # the earlier notebook, done
    nb, notes = intake.read_submission(tmp_path, KNOWN["01_a"], release, owners=OWNERS)
    assert nb.cells[0].source == "raise NotImplementedError()"
    assert notes == ["graded a.ipynb; found b.ipynb: another assignment's notebook (not graded)"]


def test_only_another_assignments_notebook_is_a_missing_notebook_saying_so(tmp_path):
    release = answers(f="raise NotImplementedError()")
    put(tmp_path / "b.ipynb", answers(g="return 2"))
    assert refused_with(tmp_path, release) == (
        Status.MISSING_NOTEBOOK, "no a.ipynb in the submission; found b.ipynb: another assignment's notebook (not graded)")
    (tmp_path / "b.ipynb").rename(tmp_path / "mine.ipynb")     # its answers tell whose it is, whatever its name
    assert refused_with(tmp_path, release) == (
        Status.MISSING_NOTEBOOK, "no a.ipynb in the submission; found mine.ipynb: another assignment's notebook (not graded)")


def refused_with(folder: Path, release) -> tuple[str, str]:
    with pytest.raises(intake.Unreadable) as caught:
        intake.read_submission(folder, KNOWN["01_a"], release, owners=OWNERS)
    return caught.value.status, caught.value.detail


# --------------------------------------------------------------------------------------------------
# A student's folder is walked within bounds (submission_files): past them, the submission is the
# student's `invalid submission`, with the reason, and no other student's row changes.


@pytest.fixture
def deep(tmp_path):
    """``make(parent, levels)`` makes a folder that deep under ``parent``; all removed one level at a time after
    the test (``shutil.rmtree`` and pytest's clean-up recurse once per level)."""
    made = []

    def make(parent: Path, levels: int) -> Path:
        made.append(make_deep_folder(parent, levels))
        return made[-1]

    yield make
    for top in made:
        remove_deep_folder(top)


DEEP = (Status.INVALID_SUBMISSION, f"folders nested more than {submission_files.MAX_FOLDER_DEPTH} levels deep (in d/): "
        "submit the notebook and the files it reads, not a whole folder tree")


def test_a_folder_1100_levels_deep_beside_the_notebook_is_an_invalid_submission_not_a_recursion(tmp_path, deep):
    put(tmp_path / "a.ipynb")
    deep(tmp_path, 1100)
    assert refused(tmp_path) == DEEP
    with pytest.raises(intake.Unreadable) as caught:
        intake.stage_files(tmp_path, tmp_path.parent / "staged")
    assert (caught.value.status, caught.value.detail) == DEEP


def test_the_walk_goes_as_deep_as_its_bound_and_no_deeper(tmp_path, deep):
    deep(tmp_path / "ok", submission_files.MAX_FOLDER_DEPTH)
    assert len(list(submission_files.walk(tmp_path / "ok"))) == submission_files.MAX_FOLDER_DEPTH + 1
    deep(tmp_path / "too_deep", submission_files.MAX_FOLDER_DEPTH + 1)
    with pytest.raises(submission_files.FolderProblem):
        list(submission_files.walk(tmp_path / "too_deep"))
    walked = submission_files.walk(tmp_path / "too_deep")
    for folder, dirs, _ in walked:   # a folder the caller does not enter is no problem
        dirs.clear()


def test_a_deep_folder_where_an_assignment_should_be_gives_a_row_not_a_crash(tmp_path, deep):
    """The walk for a hint (a folder that is no assignment) ran outside any per-submission guard: a folder 1,100
    levels deep there stopped the whole batch with RecursionError. Now it is the hint's reason."""
    put(tmp_path / "ann" / "01_a" / "a.ipynb")
    deep(tmp_path / "bob" / "my_course", 1100)
    found, rows = intake.discover(tmp_path, KNOWN)
    by_key = {(f.student_id, f.assignment): f for f in found}
    assert sorted(by_key) == [("ann", "01_a"), ("bob", "my_course")] and rows == []
    assert by_key["bob", "my_course"].notes == [DEEP[1]]


def test_too_many_entries_and_too_long_paths_are_invalid_submissions(tmp_path, monkeypatch):
    monkeypatch.setattr(submission_files, "MAX_FOLDER_ENTRIES", 20)
    put(tmp_path / "many" / "a.ipynb")
    for i in range(25):
        (tmp_path / "many" / f"f{i:02}.txt").write_text("x", encoding="utf-8")
    assert refused(tmp_path / "many") == (Status.INVALID_SUBMISSION, "more than 20 files and folders in the submission: "
                                          "submit the notebook and the files it reads, not a whole folder tree")
    long = tmp_path / "long"
    put(long / "a.ipynb")
    nested = long / "/".join(["n" * 200] * 5)     # 1,004 bytes: past the 1,024 with the file's name
    nested.mkdir(parents=True)
    (nested / ("d" * 20 + ".txt")).write_text("x", encoding="utf-8")
    status, detail = refused(long)
    assert (status, detail) == (Status.INVALID_SUBMISSION, "a path in the submission is too long (1,029 bytes; the "
                                f"grader takes 1,024): {'n' * 30}...nnnnn/{'d' * 20}.txt")


def test_a_path_too_long_for_the_staging_folder_is_the_students(tmp_path):
    """Staged under a folder whose own path is long, a path that fits the submission's bound can pass the
    kernel's (4,096 bytes): ENAMETOOLONG, which used to be a grader error, is the student's row."""
    folder = tmp_path / "sub"
    nested = folder / "/".join(["n" * 240] * 4)
    nested.mkdir(parents=True)
    (nested / "data.txt").write_text("x", encoding="utf-8")
    target = tmp_path / "/".join(["t" * 250] * 13)
    target.mkdir(parents=True)
    with pytest.raises(intake.Unreadable) as caught:
        intake.stage_files(folder, target)
    assert caught.value.status == Status.INVALID_SUBMISSION
    assert caught.value.detail == "a path in the submission is too long for the grader's staging folder: data.txt"


def test_links_are_listed_never_followed_by_the_walk(tmp_path):
    (tmp_path / "inner").mkdir()
    os.symlink(tmp_path, tmp_path / "inner" / "loop")            # a loop, if followed
    os.symlink("/etc", tmp_path / "etc")
    walked = [(folder.relative_to(tmp_path).as_posix(), dirs, files) for folder, dirs, files in submission_files.walk(tmp_path)]
    assert walked == [(".", ["inner"], ["etc"]), ("inner", [], ["loop"])]


def test_one_students_folder_that_cannot_be_looked_through_is_their_row_alone(tmp_path, monkeypatch):
    monkeypatch.setattr(submission_files, "MAX_FOLDER_ENTRIES", 20)
    put(tmp_path / "ann" / "01_a" / "a.ipynb")
    for i in range(25):
        put(tmp_path / "bob" / f"n{i:02}.ipynb")
    found, rows = intake.discover(tmp_path, KNOWN)
    assert [(f.student_id, f.assignment) for f in found] == [("ann", "01_a")]
    assert [(r.student_id, r.assignment, r.status) for r in rows] == [("bob", "", Status.INVALID_SUBMISSION)]
    assert rows[0].detail.startswith("the folder bob: more than 20 files and folders in the submission")


def test_the_readme_states_the_walks_bounds():
    text = " ".join((Path(intake.__file__).parents[1] / "README.md").read_text(encoding="utf-8").split())
    bounds = (f"{submission_files.MAX_FOLDER_DEPTH} levels, {submission_files.MAX_FOLDER_ENTRIES:,} entries and "
              f"{submission_files.MAX_PATH_BYTES:,} bytes of a path")
    assert bounds in text and "| `invalid submission` |" in text
