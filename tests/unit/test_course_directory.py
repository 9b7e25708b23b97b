"""``autograder.course.course_directory``: nbgrader's configuration for the course's layout, this Python's
scripts folder first on PATH (once), and the ``source`` link that refuses to replace anything else."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from autograder.course import course_directory


def test_the_configuration_names_the_course_folders_and_the_gradebook(tmp_path):
    config = course_directory.course_config(tmp_path / "course", tmp_path / "gradebook.db", course_id="demo")
    folders = config.CourseDirectory
    assert (folders.root, folders.course_id, folders.db_url) == \
        (str(tmp_path / "course"), "demo", f"sqlite:///{tmp_path / 'gradebook.db'}")
    assert [folders.source_directory, folders.release_directory, folders.submitted_directory,
            folders.autograded_directory, folders.feedback_directory] == \
        ["source", "release", "submitted", "autograded", "feedback"]
    assert config.ClearSolutions.code_stub == {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
    assert course_directory.course_config(tmp_path, tmp_path / "g.db").CourseDirectory.course_id == "transformer-course"


def test_this_pythons_scripts_folder_goes_first_on_path_once(monkeypatch):
    scripts = str(Path(sys.executable).parent)
    monkeypatch.setenv("PATH", os.pathsep.join(["/usr/bin", scripts, "", "/bin"]))
    course_directory.put_scripts_on_path()
    assert os.environ["PATH"] == os.pathsep.join([scripts, "/usr/bin", "/bin"])
    course_directory.put_scripts_on_path()
    assert os.environ["PATH"] == os.pathsep.join([scripts, "/usr/bin", "/bin"])
    monkeypatch.delenv("PATH")
    course_directory.put_scripts_on_path()
    assert os.environ["PATH"] == scripts


def test_the_source_link_points_at_the_solutions_and_refuses_to_replace_anything_else(tmp_path):
    solutions = tmp_path / "solutions"
    solutions.mkdir()
    root = tmp_path / "out" / "course"
    course_directory.link_sources(root, solutions)
    assert (root / "source").is_symlink() and (root / "source").resolve() == solutions.resolve()
    course_directory.link_sources(root, solutions)   # the same link again: fine
    with pytest.raises(FileExistsError, match="is not a link to"):
        course_directory.link_sources(root, tmp_path / "other")
    plain = tmp_path / "plain"
    (plain / "source").mkdir(parents=True)
    with pytest.raises(FileExistsError, match="exists and is not a link"):
        course_directory.link_sources(plain, solutions)


def test_alembic_is_asked_once_per_process_and_its_answer_stamps_every_new_gradebook(tmp_path, monkeypatch):
    import nbgrader.api as api
    from sqlalchemy import text

    course_directory.put_scripts_on_path()
    asked = []

    def alembic(command, **kwargs):          # `alembic -c INI heads`, answered without the 3 CPU seconds
        asked.append(command)
        return b"0123abcd (head)\n"

    monkeypatch.setattr(api.sp, "check_output", alembic)
    api.get_alembic_version.cache_clear()
    try:
        stamps = []
        for name in ("first.db", "second.db"):
            with api.Gradebook(f"sqlite:///{tmp_path / name}") as gradebook:
                stamps.append(gradebook.db.execute(text("SELECT version_num FROM alembic_version")).scalar())
        course_directory.put_scripts_on_path()      # again: the kept answer stays
    finally:
        api.get_alembic_version.cache_clear()       # the next gradebook of this process asks the real command
    assert stamps == ["0123abcd", "0123abcd"]
    assert len(asked) == 1 and asked[0][0] == "alembic" and asked[0][-1] == "heads", asked
