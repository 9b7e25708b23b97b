"""nbgrader configuration for the course's layout, built in one place.

nbgrader's own layout is ``source/``, ``release/``, ``submitted/``, ``autograded/``, ``feedback/``
under a course root, with ``gradebook.db`` in the root. The course keeps the sources in
``solutions/`` and the student versions in ``notebooks/``; grading happens in a separate working
folder (``OUT/course``) so that a grading run never writes into the repository. This module makes the
``traitlets`` configuration for both uses, and the nbgrader API object that runs on it.
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

from traitlets.config import Config


def put_scripts_on_path() -> None:
    """Put this Python's scripts folder first on ``PATH``.

    nbgrader opens every gradebook by running the ``alembic`` command it finds on ``PATH``; with a
    venv that is not activated (``.venv/bin/python -m autograder grade ...``) that folder is not on
    ``PATH``, and every gradebook would fail to open. ``sys.executable``'s folder is not resolved:
    in a venv it is the venv's ``bin``, where pip put ``alembic``.
    """
    scripts = str(Path(sys.executable).parent)
    entries = os.environ.get("PATH", "").split(os.pathsep)
    if entries[:1] != [scripts]:
        os.environ["PATH"] = os.pathsep.join([scripts] + [e for e in entries if e and e != scripts])
    ask_alembic_once()


def ask_alembic_once() -> None:
    """Read nbgrader's schema revision once per process, in the process, not once per new gradebook.

    nbgrader stamps every gradebook it creates with its schema's revision, which it reads by running the
    ``alembic heads`` command (3.3 CPU seconds, measured: a Python that imports SQLAlchemy and the
    migrations). The revision is a constant of the installed nbgrader: it is read here with alembic's own
    ``ScriptDirectory`` over the ``alembic.ini`` nbgrader writes for the command (0.1 s), and kept for the
    process. A grading run, a merge of shards or a build that creates several gradebooks reads it once
    (issue 35: the suite creates dozens). Where the migrations have more than one head, nbgrader's own way
    (the command) answers.
    """
    import nbgrader.api as api

    if not hasattr(api.get_alembic_version, "cache_info"):
        api.get_alembic_version = functools.cache(functools.partial(_alembic_head, api.get_alembic_version))


def _alembic_head(ask_the_command) -> str:
    from alembic.config import Config
    from alembic.script import ScriptDirectory
    from nbgrader.dbutil import _temp_alembic_ini

    with _temp_alembic_ini("sqlite:////tmp/gradebook.db") as ini:   # the URL nbgrader's own call writes
        heads = ScriptDirectory.from_config(Config(ini)).get_heads()
    return heads[0] if len(heads) == 1 else ask_the_command()


def course_config(root: Path, db_path: Path, *, course_id: str = "transformer-course") -> Config:
    """Configuration for a course root whose ``source``/``release``/... folders are under ``root``."""
    config = Config()
    config.CourseDirectory.root = str(root)
    config.CourseDirectory.course_id = course_id
    config.CourseDirectory.source_directory = "source"
    config.CourseDirectory.release_directory = "release"
    config.CourseDirectory.submitted_directory = "submitted"
    config.CourseDirectory.autograded_directory = "autograded"
    config.CourseDirectory.feedback_directory = "feedback"
    # An assignment folder's .py file is the solution notebook as text (solution_source): never released.
    config.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", "*.py"]
    config.CourseDirectory.db_url = f"sqlite:///{db_path}"
    # Student versions: the stub every solution region becomes.
    config.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
    config.ClearSolutions.text_stub = "YOUR ANSWER HERE"
    config.NbGraderAPI.log_level = "WARN"
    return config


def make_api(config: Config):
    """An ``NbGraderAPI`` bound to ``config`` (imported late: nbgrader is slow to import)."""
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    put_scripts_on_path()
    return NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)


def link_sources(root: Path, solutions_dir: Path) -> None:
    """Make ``root/source`` point at the solutions folder (a symlink, so nothing is copied)."""
    root.mkdir(parents=True, exist_ok=True)
    source = root / "source"
    if source.is_symlink() or source.exists():
        if source.is_symlink() and source.resolve() == solutions_dir.resolve():
            return
        raise FileExistsError(f"{source} exists and is not a link to {solutions_dir}")
    source.symlink_to(solutions_dir.resolve(), target_is_directory=True)
