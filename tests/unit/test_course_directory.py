"""``autograder.course.course_directory``: nbgrader's configuration for the course's layout, this Python's
scripts folder first on PATH (once), and the ``source`` link that refuses to replace anything else."""

from __future__ import annotations

import os
import re
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


def _nbgrader_schema_head() -> str:
    """The revision no other of nbgrader's migrations comes after, read from the migration files themselves."""
    import nbgrader

    found = {}
    for script in (Path(nbgrader.__file__).parent / "alembic" / "versions").glob("*.py"):
        text = script.read_text()
        found[re.search(r"^revision = '(\w+)'", text, re.M).group(1)] = re.search(r"^down_revision = '?(\w+)'?", text, re.M).group(1)
    (head,) = set(found) - set(found.values())
    return head


def _stamps(tmp_path, *names) -> list[str]:
    import nbgrader.api as api
    from sqlalchemy import text

    stamps = []
    for name in names:
        with api.Gradebook(f"sqlite:///{tmp_path / name}") as gradebook:
            stamps.append(gradebook.db.execute(text("SELECT version_num FROM alembic_version")).scalar())
    return stamps


def test_new_gradebooks_carry_nbgrader_schema_head_read_once_without_the_alembic_command(tmp_path, monkeypatch):
    import nbgrader.api as api

    course_directory.put_scripts_on_path()
    monkeypatch.setattr(api.sp, "check_output", lambda *a, **k: pytest.fail(f"the alembic command ran: {a}"))
    api.get_alembic_version.cache_clear()
    try:
        assert _stamps(tmp_path, "first.db", "second.db") == [_nbgrader_schema_head()] * 2
        assert api.get_alembic_version.cache_info().misses == 1
        course_directory.put_scripts_on_path()      # again: the kept answer stays
        assert api.get_alembic_version.cache_info().misses == 1
    finally:
        api.get_alembic_version.cache_clear()


def test_migrations_with_two_heads_are_answered_by_nbgrader_s_own_command(tmp_path, monkeypatch):
    import nbgrader.api as api
    from alembic.script import ScriptDirectory

    course_directory.put_scripts_on_path()
    asked = []
    monkeypatch.setattr(ScriptDirectory, "get_heads", lambda self: ["aaaa1111", "bbbb2222"])
    monkeypatch.setattr(api.sp, "check_output", lambda command, **k: asked.append(command) or b"bbbb2222 (head)\n")
    api.get_alembic_version.cache_clear()
    try:
        assert _stamps(tmp_path, "first.db", "second.db") == ["bbbb2222"] * 2
    finally:
        api.get_alembic_version.cache_clear()
    assert len(asked) == 1 and asked[0][0] == "alembic" and asked[0][-1] == "heads", asked
