"""Finding and reading submissions, the first stage of ``python -m autograder grade``.

``discover`` walks ``SUBMISSIONS/<student>/<assignment>/<notebook>.ipynb`` and gives every notebook it
finds a place: a submission to grade, or a row saying why it cannot be (``misplaced notebook``);
``read_submission`` reads one notebook, validated, or raises ``Unreadable`` with a short reason;
``stage_files`` (``submission_files``) stages the files beside it for the runner. Names are bytes
until shown (``clean_text``), sizes are read with ``lstat`` before anything is read, links are never
followed, and a student's folder is walked within bounds (``submission_files.walk``: depth, entries,
path length; past them the submission is an ``invalid submission``). Each student's folder is looked
through on its own: what goes wrong there is that student's row, never the batch's.
"""

from __future__ import annotations

import json
import stat
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import nbformat.reader

from ..course import conventions
from ..course.text import clean_text, valid_unicode
from ..judge.protocol import Status
from .folder_names import student_name
from .submission_files import (MAX_SUBMISSION_FILES, MAX_SUBMISSION_FILES_BYTES, FolderProblem, Unreadable,  # noqa: F401
                               CHECKPOINTS, entries, stage_files, walk)
from .notebook_bounds import NotebookTooBig, read_bounded
from .report import GradeRow

MAX_NOTEBOOK_BYTES = 25 * 1024 * 1024
EXPECTED_LAYOUT = "SUBMISSIONS/<student>/<assignment>/<notebook>.ipynb"


class NoSubmissions(Exception):
    """Nothing under the submissions folder is laid out as ``<student>/<assignment>/<notebook>.ipynb``."""


@dataclass
class Found:
    """A submission found on disk: an assignment folder, or a notebook outside one (``notebook``)."""

    student_id: str
    assignment: str
    folder: Path
    notebook: Path | None = None   # a notebook found outside an assignment folder, graded where it is
    notes: list = field(default_factory=list)


def _notebooks_in(folder: Path, limit: int = 50) -> list[Path]:
    """Notebooks under ``folder`` (not in checkpoints, links not followed), at most ``limit``, sorted;
    ``FolderProblem`` when the walk passes its bounds first (``submission_files``)."""
    found = []
    for parent, _, files in walk(folder, skip=CHECKPOINTS.__eq__):
        found.extend(parent / f for f in files if f.endswith(".ipynb"))
        if len(found) >= limit:
            break
    return sorted(found)[:limit]


def _entries(folder: Path, bounded: bool = True) -> list[Path]:
    """The entries of ``folder``, sorted; of a student's folder (``bounded``) at most ``MAX_FOLDER_ENTRIES``,
    else ``FolderProblem``. The submissions folder itself is the instructor's, and not bounded."""
    return [folder / name for name in entries(folder)] if bounded else sorted(folder.iterdir())


def _visible_dirs(folder: Path, bounded: bool = True) -> list[Path]:
    return [p for p in _entries(folder, bounded) if not p.name.startswith(".") and p.is_dir()]


def discover(submissions_dir: Path, known: dict | None = None) -> tuple[list[Found], list[GradeRow]]:
    """Every submission under ``submissions_dir`` (links included, to be refused), and rows for what
    cannot be graded at all (a notebook outside any assignment folder whose assignment its name does
    not tell, an assignment folder where a student folder should be)."""
    known = known if known is not None else {}
    by_notebook = _assignments_by_notebook_name(known)
    found: list[Found] = []
    rows = [GradeRow("", path.name, None, None, Status.MISPLACED_NOTEBOOK,
                     f"{path.name} is at the top of the submissions folder, in no student's folder: "
                     f"expected {EXPECTED_LAYOUT}")
            for path in _loose_notebooks(submissions_dir, bounded=False)]
    for student in _students(submissions_dir):
        try:   # one student's folder never stops the batch: what it holds is theirs
            _discover_student(student, known, by_notebook, found, rows, submissions_dir)
        except Exception as error:  # noqa: BLE001 - that student's row says why
            rows.append(_student_row(student, error))
    for entry in found:
        if entry.assignment not in known and entry.notebook is None:
            entry.notes.extend(_misnested_hint(entry, by_notebook)[:1])
    return sorted(found, key=lambda f: (f.student_id, f.assignment)), rows


def _discover_student(student: Path, known: dict, by_notebook: dict, found: list[Found], rows: list[GradeRow],
                      submissions_dir: Path) -> None:
    """One student's folder: its assignment folders and loose notebooks into ``found``, rows for what is misplaced."""
    student_id = student_name(student.name)
    if student_id in known:
        rows.append(GradeRow(student_id, "", None, None, Status.MISPLACED_NOTEBOOK,
                             f"a folder named like the assignment {student_id} where a student's folder should be: "
                             f"expected {EXPECTED_LAYOUT}, e.g. <student>/{student_id}/"
                             f"{known[student_id].source_path.name}"))
        return
    folders = {p.name: Found(student_id, p.name, p) for p in _visible_dirs(student)}
    for path in _loose_notebooks(student):
        row = _place_loose_notebook(path, student, folders, by_notebook, known)
        rows.extend([row] if row else [])
    found.extend(_one_per_student(folders.values(), found, submissions_dir))


def _student_row(student: Path, error: Exception) -> GradeRow:
    """The row of a student's folder that could not be looked through: the student's (a folder past the
    walk's bounds, a name too long, a folder that cannot be read) or, for anything else, the grader's."""
    if isinstance(error, FolderProblem):
        status, detail = error.status, f"the folder {student.name}: {error.detail}"
    elif isinstance(error, (OSError, RecursionError)):
        status, detail = Status.INVALID_SUBMISSION, f"the folder {student.name} cannot be read: {type(error).__name__}"
    else:
        status, detail = Status.GRADER_ERROR, f"{type(error).__name__}: {clean_text(error)[:150]}"
    return GradeRow(student_name(student.name), "", None, None, status, detail)


def _students(submissions_dir: Path) -> list[Path]:
    """The student folders, those whose names are already in NFC first among names that are the same in NFC."""
    return sorted(_visible_dirs(submissions_dir, bounded=False),
                  key=lambda p: (student_name(p.name), p.name != student_name(p.name), p.name))


def _one_per_student(entries, found: list[Found], submissions_dir: Path) -> list[Found]:
    """``entries`` of one student folder less those already found under a folder with the same name
    in another Unicode form (NFC and NFD): that student's submission is graded once, from the folder
    found first, and its row notes the other."""
    first = {(f.student_id, f.assignment): f for f in found}
    new = []
    for entry in entries:
        kept = first.get((entry.student_id, entry.assignment))
        if kept is None:
            new.append(entry)
        else:
            where = (entry.notebook or entry.folder).relative_to(submissions_dir)
            kept.notes.append(f"also found {where}, under a "
                              "student folder whose name is the same in another Unicode form (NFC/NFD): not graded")
    return new


def _assignments_by_notebook_name(known: dict) -> dict[str, list]:
    """Notebook file name -> the assignments it may belong to (by the solution's name or the assignment's)."""
    by_notebook: dict[str, dict] = {}
    for assignment in known.values():
        for name in (assignment.source_path.name, assignment.name + ".ipynb"):
            by_notebook.setdefault(name, {})[assignment.name] = assignment
    return {name: list(matches.values()) for name, matches in by_notebook.items()}


def _loose_notebooks(folder: Path, bounded: bool = True) -> list[Path]:
    return [p for p in _entries(folder, bounded) if p.name.endswith(".ipynb") and not p.name.startswith(".")]


def _place_loose_notebook(path: Path, student: Path, folders: dict, by_notebook: dict, known: dict) -> GradeRow | None:
    """A notebook directly in a student's folder: graded as the assignment its name names (added to
    ``folders``), noted beside that assignment's folder, or a ``misplaced notebook`` row."""
    matches = by_notebook.get(path.name, [])
    if len(matches) == 1 and matches[0].name in folders:
        folders[matches[0].name].notes.append(f"also found {path.name} outside the assignment folder (not graded)")
        return None
    if len(matches) == 1:
        assignment = matches[0]
        folders[assignment.name] = Found(student_name(student.name), assignment.name, student, notebook=path,
                                         notes=[f"graded {path.name}, found outside an assignment folder (expected "
                                                f"{student.name}/{assignment.name}/{assignment.source_path.name})"])
        return None
    where = ", ".join(f"{a.name}/{a.source_path.name}" for a in sorted(known.values(), key=lambda a: a.name))
    return GradeRow(student_name(student.name), path.name, None, None, Status.MISPLACED_NOTEBOOK,
                    f"{path.name} is not in an assignment folder and its name names no single assignment: "
                    f"expected {EXPECTED_LAYOUT}, one of: {where}")


def _misnested_hint(entry: Found, by_notebook: dict) -> list[str]:
    """For a folder that is no assignment: where the assignment's notebook it holds should have been (or
    why the grader could not look through it)."""
    try:
        notebooks = _notebooks_in(entry.folder, 5)
    except FolderProblem as problem:
        return [problem.detail]
    except OSError as error:   # a hint is advice: never a reason to stop
        return [f"the grader could not look through it ({type(error).__name__})"]
    for path in notebooks:
        matches = by_notebook.get(path.name, [])
        if len(matches) == 1:
            return [f"it holds {path.relative_to(entry.folder)}: expected "
                    f"{entry.student_id}/{matches[0].name}/{matches[0].source_path.name}"]
    return []


def no_submissions_message(submissions_dir: Path, known: dict) -> str:
    example = next(iter(sorted(known.values(), key=lambda a: a.name)), None)
    top = [p.name + ("/" if p.is_dir() else "") for p in sorted(submissions_dir.iterdir())][:8]
    return (f"no submissions found under {clean_text(submissions_dir)}: expected {EXPECTED_LAYOUT}"
            + (f", e.g. {clean_text(submissions_dir)}/ada/{example.name}/{example.source_path.name}" if example else "")
            + f"; assignments: {', '.join(sorted(known)) or 'none'}"
            + f"; found at the top: {clean_text(', '.join(top)) if top else 'nothing'}. Nothing was graded or written.")


def _compared_with_release(path: Path, release) -> str:
    """How the notebook at ``path`` stands to the release: ``"elsewhere"`` (its answer cells are all
    another assignment's), ``"changed"`` (it holds code the release does not), ``"untouched"``, or
    ``"unreadable"``."""
    try:
        info = path.lstat()
        if not stat.S_ISREG(info.st_mode) or not 0 < info.st_size <= MAX_NOTEBOOK_BYTES:
            return "unreadable"
        nb, _ = read_bounded(path.read_bytes())
        return cells_compared_with_release(nb, release)
    except Exception:  # noqa: BLE001 - an unreadable notebook is not preferred
        return "unreadable"


def cells_compared_with_release(nb, release) -> str:
    """``_compared_with_release`` of a notebook already read."""
    answers, stubs = _answer_cells(nb), _answer_cells(release)
    if answers and stubs and not set(answers) & set(stubs):
        return "elsewhere"
    if answers:  # the answer cells, compared with the release's stubs
        return "changed" if any(a not in stubs.values() for a in answers.values()) else "untouched"
    released = {c.source.strip() for c in release.cells if c.cell_type == "code"}
    changed = any(c.get("cell_type") == "code" and str(c.get("source", "")).strip() not in released for c in nb.cells)
    return "changed" if changed else "untouched"


def _answer_cells(nb) -> dict[str, str]:
    """The answer cells of a notebook: grade id -> source, stripped."""
    return {conventions.grade_id(c): str(c.get("source", "")).strip() for c in nb.cells if conventions.is_solution_cell(c)}


def _candidates(folder: Path, expected_name: str) -> list[Path]:
    """The notebooks in a submission folder (a link under the expected name included, to be refused)."""
    expected = folder / expected_name
    candidates = _notebooks_in(folder)
    if (expected.exists() or expected.is_symlink()) and expected not in candidates:
        candidates = sorted(candidates + [expected])
    return candidates


def _find_notebook(folder: Path, expected_name: str, release=None, owners: dict | None = None) -> tuple[Path, str]:
    """The submitted notebook: the expected name, or the only notebook in the folder (misnamed); of
    several, the one that differs from the release (named for the assignment first, at the top of the
    folder first), with a note naming the others. Another assignment's notebook (named for it in
    ``owners``, file name -> assignment, or whose answer cells are all another assignment's) is
    never graded in its place: it is only noted."""
    candidates = _candidates(folder, expected_name)
    if not candidates:
        raise Unreadable(Status.MISSING_NOTEBOOK, f"no {expected_name} in the submission (notebooks found: none)")
    kinds = _kinds(candidates, expected_name, release)
    elsewhere = _other_assignments(candidates, kinds, expected_name, owners or {})
    ours = [p for p in candidates if p not in elsewhere]
    elsewhere_note = _elsewhere_note(folder, elsewhere)
    if not ours:
        raise Unreadable(Status.MISSING_NOTEBOOK, f"no {expected_name} in the submission; {elsewhere_note}")
    changed = [p for p in ours if kinds[p] == "changed"]
    path = _preferred(ours, changed, folder / expected_name)
    notes = [_graded_note(path, ours, changed, folder / expected_name, bool(elsewhere))] + ([elsewhere_note] if elsewhere else [])
    return path, "; ".join(note for note in notes if note)


def _other_assignments(candidates: list[Path], kinds: dict[Path, str], expected_name: str, owners: dict) -> list[Path]:
    """The candidates that are another assignment's notebook: named for it in ``owners``, or whose answer
    cells are all another assignment's."""
    return [p for p in candidates if kinds[p] == "elsewhere" or (p.name != expected_name and p.name in owners)]


def _elsewhere_note(folder: Path, elsewhere: list[Path]) -> str:
    whose = "another assignment's notebook" if len(elsewhere) == 1 else "other assignments' notebooks"
    return f"found {', '.join(str(p.relative_to(folder)) for p in elsewhere)}: {whose} (not graded)"


def _kinds(candidates: list[Path], expected_name: str, release) -> dict[Path, str]:
    """Each candidate compared with the release (``_compared_with_release``); not read when there is no
    release, or when the expected notebook is the only one."""
    if release is None or candidates == [candidates[0].parent / expected_name]:
        return {p: "" for p in candidates}
    return {p: _compared_with_release(p, release) for p in candidates}


def _graded_note(path: Path, ours: list[Path], changed: list[Path], expected: Path, more_found: bool) -> str:
    """What the detail says about the notebook graded (nothing when it is the expected one, alone)."""
    folder = expected.parent
    shown = str(path.relative_to(folder))
    if len(ours) > 1:
        why = " (it differs from the release)" if 0 < len(changed) < len(ours) else ""
        others = ", ".join(str(p.relative_to(folder)) for p in ours if p != path)
        return f"graded {shown}{why}; also found {others} (not graded)"
    if path.name != expected.name:
        return f"graded {shown} in place of {expected.name}"
    return f"graded {shown}" if more_found or path != expected else ""


def _preferred(ours: list[Path], changed: list[Path], expected: Path) -> Path:
    """Of this assignment's notebooks, those that differ from the release first; among them the
    expected name at the top of the folder, then the expected name deeper down, then the first."""
    pool = changed or ours
    named = [p for p in pool if p.name == expected.name]
    return expected if expected in pool else (named or pool)[0]


def read_submission(folder: Path, assignment: conventions.Assignment, release=None,
                    notebook: Path | None = None, owners: dict | None = None) -> tuple[object, list[str]]:
    """The submitted notebook, validated; ``Unreadable`` with a short reason otherwise. ``owners``:
    the course's notebook file names -> their assignments (another assignment's notebook is not graded)."""
    if folder.is_symlink():
        raise Unreadable(Status.INVALID_NOTEBOOK, "the submission folder is a link to somewhere else")
    path, note = ((notebook, "") if notebook is not None   # FolderProblem past the walk's bounds
                  else _find_notebook(folder, assignment.source_path.name, release, owners))
    _check_notebook_file(path, folder)
    nb, dropped = _parse_notebook(path)
    notes = ([note] if note else []) + dropped
    try:
        fixed, replaced = valid_unicode(nb)
    except RecursionError:
        raise Unreadable(Status.INVALID_NOTEBOOK, "the notebook is nested too deeply to read") from None
    if replaced:  # nbgrader cannot write lone surrogates (JSON escapes such as \udc80): the student's text
        nb = nbformat.from_dict(fixed)
        notes.append("text that is not valid Unicode (lone surrogates) was replaced by \ufffd")
    return nb, notes


def _check_notebook_file(path: Path, folder: Path) -> None:
    """``Unreadable`` unless ``path`` is a regular file, reached through no link, of a size the grader reads."""
    if path.is_symlink() or any(p.is_symlink() for p in path.parents if folder in p.parents):
        raise Unreadable(Status.INVALID_NOTEBOOK, "the notebook is a link (only regular files are graded)")
    info = path.lstat()
    if not stat.S_ISREG(info.st_mode):
        raise Unreadable(Status.INVALID_NOTEBOOK, "the notebook is not a regular file")
    if info.st_size == 0:
        raise Unreadable(Status.INVALID_NOTEBOOK, "the file is empty")
    if info.st_size > MAX_NOTEBOOK_BYTES:
        raise Unreadable(Status.INVALID_NOTEBOOK, f"the file is {info.st_size / 2**20:.0f} MB; the limit is "
                                             f"{MAX_NOTEBOOK_BYTES / 2**20:.0f} MB (clear the outputs and resubmit)")


def _parse_notebook(path: Path):
    """The notebook at ``path``, read within the grader's memory bound (``notebook_bounds``: outputs and
    attachments dropped before nbformat builds anything) and validated by nbformat, with notes on what
    was dropped; ``Unreadable`` with the reason (nbformat's first line) otherwise."""
    try:
        nb, notes = read_bounded(path.read_bytes())
    except OSError as error:   # a file the student left unreadable (permissions, a name too long)
        raise Unreadable(Status.INVALID_NOTEBOOK, f"the file cannot be read ({error.strerror or type(error).__name__})") from None
    except NotebookTooBig as error:
        raise Unreadable(Status.INVALID_NOTEBOOK, str(error)) from None
    except (json.JSONDecodeError, nbformat.reader.NotJSONError):
        raise Unreadable(Status.INVALID_NOTEBOOK, "the file is not valid JSON (damaged or truncated?)") from None
    except Exception as error:  # noqa: BLE001 - any unreadable file is an invalid notebook
        raise Unreadable(Status.INVALID_NOTEBOOK, f"unreadable: {type(error).__name__}") from None
    try:
        nbformat.validate(nb)
    except Exception as error:  # noqa: BLE001
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise Unreadable(Status.INVALID_NOTEBOOK, f"not a valid notebook: {first[:100]}") from None
    return nb, notes
