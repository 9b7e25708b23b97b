"""`build` never destroys work (issue 28): a student version with answers filled in or outputs is not
overwritten; the build refuses naming it, or with --force moves it to a dated backup first. A student
version as a build wrote it (this release, an earlier one, the other edition) is rebuilt silently.
On the one-exercise fixture course: nbgrader builds it, no kernel runs."""

from __future__ import annotations

import functools
import shutil
import sys
from pathlib import Path

import nbformat
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from autograder.course import build as build_module  # noqa: E402
from autograder.course import conventions  # noqa: E402
from autograder.__main__ import main as autograder_main  # noqa: E402
from autograder.course.build import build  # noqa: E402
from autograder.course.solution_source import load_solution, write_solution  # noqa: E402
from autograder.course.student_work import WorkWouldBeLost, work_in  # noqa: E402
from fixture_course import SOLUTION, answer, make_course  # noqa: E402

NB = "fixture.ipynb"


@pytest.fixture(scope="module")
def built_once(tmp_path_factory):
    root = tmp_path_factory.mktemp("built")
    make_course(root)
    return root


@pytest.fixture
def course(built_once, tmp_path):
    """A fresh copy of the built fixture course (one nbgrader build for the module)."""
    root = tmp_path / "course"
    shutil.copytree(built_once, root, symlinks=True)
    source = root / "solutions" / "01_fixture" / NB
    return conventions.Assignment("01_fixture", source), root, root / "notebooks" / "01_fixture" / NB


def rebuild(root: Path, **options):
    return build(root / "solutions", root / "notebooks", **options)


def test_a_clean_rebuild_changes_nothing_and_switching_editions_is_silent(course):
    _, root, released = course
    assert rebuild(root) == [] and rebuild(root).backups == []
    private = rebuild(root, self_grading=False)     # the notebook loses its self-grading cells, no refusal
    assert released in private and private.backups == []
    public = rebuild(root)                          # and gets them back
    assert released in public and public.backups == []


def test_a_student_version_from_an_earlier_release_is_rebuilt_silently(course):
    """The author edits the exercise's docstring: the stub changes, the old stub was the build's own."""
    assignment, root, released = course
    nb = load_solution(assignment)
    nb.cells[2].source = SOLUTION.replace("(any shape)", "(any shape, any dtype)")
    write_solution(assignment, nb)
    changed = rebuild(root)
    assert released in changed and changed.backups == []
    assert "any dtype" in released.read_text(encoding="utf-8")


def test_filled_in_answers_are_refused_by_name_and_nothing_is_written(course):
    assignment, root, released = course
    nbformat.write(answer(assignment, root), str(released))
    work = released.read_bytes()
    assignment.text_path.write_text(assignment.text_path.read_text(encoding="utf-8").replace("(any shape)", "(all shapes)"),
                                    encoding="utf-8")   # a build that would change the file
    with pytest.raises(WorkWouldBeLost) as refused:
        rebuild(root)
    message = str(refused.value)
    assert f"{released}: answer or test cells changed since the build wrote them: double" in message, message
    assert "--force" in message and "cp -r" in message and "notebooks-backup-" in message
    assert released.read_bytes() == work


def test_outputs_are_refused(course):
    _, root, released = course
    nb = nbformat.read(str(released), as_version=4)
    nb.cells[1].execution_count = 1
    nb.cells[1].outputs = [nbformat.v4.new_output("stream", text="cpu\n")]
    nbformat.write(nb, str(released))
    assert work_in(released) == ["outputs in 1 cell(s) (it has been run)"]
    with pytest.raises(WorkWouldBeLost) as refused:
        rebuild(root)
    assert f"{released}: outputs in 1 cell(s)" in str(refused.value)


def test_force_moves_the_work_to_a_dated_backup_first(course):
    assignment, root, released = course
    nbformat.write(answer(assignment, root), str(released))
    work = released.read_bytes()
    changed = rebuild(root, force=True)
    assert released in changed and len(changed.backups) == 1
    original, backup = changed.backups[0]
    assert original == released and backup.read_bytes() == work
    assert backup.relative_to(root).parts[0].startswith("notebooks-backup-")
    assert backup.relative_to(root).parts[1:] == ("notebooks", "01_fixture", NB)
    assert work_in(released) == [] and rebuild(root) == []


def test_files_the_build_did_not_write_are_not_removed(course):
    _, root, released = course
    notes = released.parent / "my_notes.txt"
    notes.write_text("attention is a weighted average", encoding="utf-8")
    checkpoint = released.parent / ".ipynb_checkpoints" / "fixture-checkpoint.ipynb"
    checkpoint.parent.mkdir()
    checkpoint.write_text("{}", encoding="utf-8")
    experiments = root / "notebooks" / "my_experiments" / "try.py"
    experiments.parent.mkdir()
    experiments.write_text("print(1)", encoding="utf-8")
    with pytest.raises(WorkWouldBeLost) as refused:
        rebuild(root)
    message = str(refused.value)
    assert f"{notes}: not a notebook" in message and f"{experiments.parent}: try.py: not a notebook" in message, message
    assert "checkpoint" not in message
    assert notes.exists() and experiments.exists() and checkpoint.exists()
    notes.unlink()
    experiments.unlink()
    assert rebuild(root) == [experiments.parent]   # an empty folder of an assignment that is gone: removed
    assert checkpoint.exists(), "Jupyter's checkpoints are not the build's to remove"


def test_the_build_command_refuses_then_keeps_a_backup_with_force(course, monkeypatch, capsys):
    assignment, root, released = course
    nbformat.write(answer(assignment, root), str(released))
    monkeypatch.setattr(build_module, "build", functools.partial(
        build, root / "solutions", root / "notebooks"))
    assert autograder_main(["build", "--no-self-grading"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("build: refusing to overwrite 1 file(s)") and str(released) in err, err
    assert autograder_main(["build", "--no-self-grading", "--force"]) == 0
    out = capsys.readouterr().out
    assert f"kept {released} (it held someone's work) as {root}/notebooks-backup-" in out, out


def test_a_private_build_says_which_files_it_removed(course):
    """The bundles a private edition deletes are reported as removed, not as updated (issue 51)."""
    _, root, released = course
    bundle = root / "autograder" / "selfgrade" / "01_fixture.bin"
    assert bundle.exists()
    private = rebuild(root, self_grading=False)
    assert bundle in private and private.removed == [bundle] and not bundle.exists()
    assert released in private and released not in private.removed
