"""The files of a submission folder: walked within bounds (``walk``), and staged for the runner
(``stage_files``).

A submission folder is the student's: it may hold a folder nested a thousand levels deep (a zipped
course folder can), paths longer than the grader's own folders can take, or millions of entries.
``walk`` is ``os.walk`` for such folders: top-down, sorted, iterative (its stack is a list, so no
recursion grows with what a student supplies; ``os.walk`` before Python 3.12 recursed once per
level and a folder 1,100 levels deep raised ``RecursionError``), links never followed (a link, to a
folder or anything else, is listed among the files), and bounded while it walks: past
``MAX_FOLDER_DEPTH`` levels, ``MAX_FOLDER_ENTRIES`` entries or ``MAX_PATH_BYTES`` of a path below
the folder, or on a folder it cannot read, it stops and raises ``FolderProblem`` with the reason,
which is the student's (status ``invalid submission``), never the grader's.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

from ..course.text import clean_text
from ..judge.protocol import Status

MAX_FOLDER_DEPTH = 32          # levels of folders below a submission folder
MAX_FOLDER_ENTRIES = 10_000    # files, folders and links below a submission folder, all levels together
MAX_PATH_BYTES = 1024          # a path below a submission folder (its file system's name limit is 255 per name)
MAX_SUBMISSION_FILES_BYTES = 64 * 1024 * 1024   # the files beside a notebook, all together, that the runner gets
MAX_SUBMISSION_FILES = 1000                     # files looked at in one submission folder
CHECKPOINTS = ".ipynb_checkpoints"              # Jupyter's copies: never looked into


class Unreadable(Exception):
    """A submission the grader cannot grade, for a reason of the student's: ``status`` and ``detail`` say which."""

    def __init__(self, status: str, detail: str):
        super().__init__(detail)
        self.status, self.detail = status, detail


class FolderProblem(Unreadable):
    """A folder the student supplied that the grader does not take (``invalid submission``); ``detail`` says why."""

    def __init__(self, detail: str):
        super().__init__(Status.INVALID_SUBMISSION, detail)


def walk(top: Path, skip: Callable[[str], bool] = lambda name: False) -> Iterator[tuple[Path, list[str], list[str]]]:
    """``(folder, dirs, files)`` for ``top`` and every folder below it, as ``os.walk(top)`` gives them
    top-down (the caller may prune ``dirs`` in place), names sorted; folders named so that ``skip(name)``
    is true are not entered. Links are files here. ``FolderProblem`` past a bound."""
    top = Path(top)
    stack: list[tuple[Path, int]] = [(top, 0)]
    seen = 0
    while stack:
        folder, depth = stack.pop()
        dirs, files = _listing(folder, top, MAX_FOLDER_ENTRIES - seen)
        seen += len(dirs) + len(files)
        dirs[:] = [d for d in dirs if not skip(d)]
        yield folder, dirs, files
        if dirs and depth >= MAX_FOLDER_DEPTH:
            where = _shown(top / (folder / dirs[0]).relative_to(top).parts[0], top)
            raise FolderProblem(f"folders nested more than {MAX_FOLDER_DEPTH} levels deep (in {where}/): "
                                "submit the notebook and the files it reads, not a whole folder tree")
        stack.extend((folder / d, depth + 1) for d in reversed(dirs))


def entries(folder: Path) -> list[str]:
    """The names in ``folder`` (one level), sorted; ``FolderProblem`` past ``MAX_FOLDER_ENTRIES`` or when
    it cannot be read."""
    dirs, files = _listing(Path(folder), Path(folder), MAX_FOLDER_ENTRIES)
    return sorted(dirs + files)


def _listing(folder: Path, top: Path, room: int) -> tuple[list[str], list[str]]:
    """The folders and the other entries (files, links, special files) of ``folder``, sorted; at most
    ``room`` entries are read, then ``FolderProblem``."""
    dirs, files = [], []
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if len(dirs) + len(files) >= room:
                    raise FolderProblem(f"more than {MAX_FOLDER_ENTRIES:,} files and folders in the submission: "
                                        "submit the notebook and the files it reads, not a whole folder tree")
                _check_length(folder / entry.name, top)
                (dirs if entry.is_dir(follow_symlinks=False) else files).append(entry.name)
    except OSError as error:
        raise FolderProblem(f"a folder the grader cannot read: {_shown(folder, top)} "
                            f"({error.strerror or type(error).__name__})") from None
    return sorted(dirs), sorted(files)


def _check_length(path: Path, top: Path) -> None:
    length = len(os.fsencode(path.relative_to(top)))
    if length > MAX_PATH_BYTES:
        raise FolderProblem(f"a path in the submission is too long ({length:,} bytes; the grader takes "
                            f"{MAX_PATH_BYTES:,}): {_shown(path, top)}")


def _shown(path: Path, top: Path, limit: int = 60) -> str:
    """``path`` below ``top`` as the detail shows it, its middle left out past ``limit`` characters."""
    text = clean_text(os.fsdecode(path.relative_to(top)))
    return text if len(text) <= limit else f"{text[:limit // 2]}...{text[-limit // 2:]}"


def too_long(error: OSError) -> bool:
    """Whether ``error`` says a name or path was too long (``ENAMETOOLONG``): the student's names."""
    return error.errno == errno.ENAMETOOLONG


def stage_files(folder: Path, target: Path) -> list[str]:
    """Hard-link (or copy) the submission's own files into ``target``, at most
    ``MAX_SUBMISSION_FILES_BYTES`` in all and ``MAX_SUBMISSION_FILES`` files, sizes read with
    ``lstat`` before anything is read; notes on what was left out. ``FolderProblem`` when the folder
    passes the walk's bounds or a path of the student's is too long for the staging folder.

    Notebooks, checkpoints, links and special files are never staged. What is staged is what the
    judge copies into the runner's private folder, once.
    """
    notes: list[str] = []
    total = count = 0
    for parent, _, files in walk(folder, skip=CHECKPOINTS.__eq__):
        for name in (f for f in files if not f.endswith(".ipynb")):
            count += 1
            if count > MAX_SUBMISSION_FILES:
                notes.append(f"only the first {MAX_SUBMISSION_FILES} files were looked at")
                return notes
            total = _stage_one(parent / name, folder, target, total, notes)
    return notes


def _stage_one(path: Path, folder: Path, target: Path, total: int, notes: list[str]) -> int:
    """Stage one file (a note instead when it is a link, not a regular file, or over the budget); the bytes
    staged so far."""
    relative = path.relative_to(folder)
    info = path.lstat()
    if stat.S_ISLNK(info.st_mode):
        notes.append(f"{relative} (a link)")
    elif not stat.S_ISREG(info.st_mode):
        notes.append(f"{relative} (not a regular file)")
    elif total + info.st_size > MAX_SUBMISSION_FILES_BYTES:
        notes.append(f"{relative} ({info.st_size / 2**20:.1f} MB; the files beside the notebook may "
                     f"take {MAX_SUBMISSION_FILES_BYTES // 2**20} MB in all)")
    else:
        _copy(path, target / relative)
        total += info.st_size
    return total


def _copy(path: Path, destination: Path) -> None:
    """Hard-link ``path`` to ``destination`` (a copy where that fails); a name too long for the staging
    folder is the student's (``FolderProblem``), any other failure the grader's."""
    try:
        destination.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(path, destination, follow_symlinks=False)
        except OSError:
            shutil.copyfile(path, destination, follow_symlinks=False)
    except OSError as error:
        if not too_long(error):
            raise
        raise FolderProblem(f"a path in the submission is too long for the grader's staging folder: "
                            f"{clean_text(os.fsdecode(path.name))[:60]}") from None
