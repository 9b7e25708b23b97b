"""``python -m autograder grade SUBMISSIONS --out OUT``: autograde a folder of submissions.

Layout read: ``SUBMISSIONS/<student_id>/<assignment>/<notebook>.ipynb`` (nbgrader's
``submitted/`` layout). Written, and nothing outside ``OUT``:

* ``OUT/gradebook.db``: nbgrader's sqlite gradebook (``nbgrader export``, formgrader and
  ``generate_feedback`` work on it with ``--CourseDirectory.root=OUT/course`` and
  ``--CourseDirectory.db_url=sqlite:///OUT/gradebook.db``);
* ``OUT/grades.csv``: ``student_id, assignment, score, max_score, status, detail, flags``, one row
  per submission whatever happened to it, values made safe for spreadsheets;
* ``OUT/feedback/<student_id>/<assignment>/<notebook>.html``: feedback, hidden tests shown only by
  name, points, verdict and the judge's message; student HTML and scripts never run in it;
* ``OUT/course/``: nbgrader's working folders.

Each submission goes through these stages, each a function below, each isolated so that one
submission can never stop the batch (any failure becomes that submission's status):

``discover`` (every notebook found gets a row: misplaced ones graded where their name names the
assignment, or reported) -> ``read_submission`` -> ``repair_submission`` -> ``prepare_job`` -> ``run_judge`` (the judge runs the
graded tests outside the student's process; ``autograder.judge``) -> ``record`` (nbgrader scores the
cells the judge produced and writes the gradebook) -> ``write_feedback``.

Only this process opens the gradebook; only the judge decides a test; only the sandboxed runner
runs student code. Nothing a student controls can stop the batch: names are bytes until shown (then
escaped, control characters removed), sizes are read with ``lstat`` before anything is read, the files
beside a notebook are capped (``MAX_SUBMISSION_FILES_BYTES``), outputs are capped per notebook (in the
judge) and the judge's reply per submission (``MAX_JUDGE_RESULT_BYTES``), and flagging parses a
bounded amount of code.
"""

from __future__ import annotations

import copy
import csv
import hashlib
import html
import json
import os
import re
import secrets
import shutil
import stat
import subprocess
import sys
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import nbformat.reader
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Unicode

from . import conventions
from .course_directory import course_config, link_sources, make_api, put_scripts_on_path
from .feedback_page import readable_page
from .flags import MAX_SCANNED_CHARS, flags_for
from .judge.outputs import error_output
from .repair import repair
from .sandbox import Limits, check_runner_starts, use_bwrap, with_course_on_path
from .setup_cell import SETUP_GRADE_ID
from .protocol import JUDGE_STATUSES, UNREADABLE, JudgeJob, JudgeResult, ProtocolError, Status, unseal
from .shards import Shard, clear_marker, write_marker
from .stage_times import add as add_stage_time, stage

CSV_COLUMNS = ["student_id", "assignment", "score", "max_score", "status", "detail", "flags"]
STATE_FILE = "grading_state.json"
STATUSES = JUDGE_STATUSES   # what a judge may report
GRADER_VERSION = "4"  # bump when a change to the grader should regrade unchanged submissions
MAX_NOTEBOOK_BYTES = 25 * 1024 * 1024
MAX_SUBMISSION_FILES_BYTES = 64 * 1024 * 1024   # the files beside a notebook, all together, that the runner gets
MAX_SUBMISSION_FILES = 1000                     # files looked at in one submission folder
MAX_JUDGE_RESULT_BYTES = 64 * 1024 * 1024       # a judge's reply (its outputs are capped at 4 MB; this is a backstop)
MAX_FLAGGED_CHARS = 1_000_000                   # answer code parsed for flags, per submission
MAX_EXTRA_MARKDOWN_CHARS = 200_000
CSP = ("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; "
       "style-src 'unsafe-inline'; font-src data:\">")


class Unreadable(Exception):
    def __init__(self, status: str, detail: str):
        super().__init__(detail)
        self.status, self.detail = status, detail


class NoSubmissions(Exception):
    """Nothing under the submissions folder is laid out as ``<student>/<assignment>/<notebook>.ipynb``."""


_INVISIBLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")


def clean_text(value) -> str:
    """``value`` as one line of printable text, safe for a terminal, a CSV file and nbgrader.

    Bytes of a file name that were not UTF-8 show as ``\\xff``, other lone surrogates as
    ``\\udc80``; tabs and line breaks become spaces; other control characters (ESC, BEL, NUL, ...) and
    invisible direction overrides are removed.
    """
    text = str(value)
    try:
        text = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return _INVISIBLE.sub("", text.replace("\t", " ").replace("\r", " ").replace("\n", " "))


_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_unicode(value):
    """``value`` (a JSON-like structure) with lone surrogates in its strings replaced by U+FFFD; and whether any were."""
    found = False

    def fix(item):
        nonlocal found
        if isinstance(item, str):
            try:
                item.encode("utf-8")
                return item
            except UnicodeEncodeError:
                found = True
                return _SURROGATE.sub("\ufffd", item)
        if isinstance(item, list):
            return [fix(x) for x in item]
        if isinstance(item, dict):
            return {fix(k): fix(v) for k, v in item.items()}
        return item

    return fix(value), found


@dataclass
class GradeRow:
    student_id: str
    assignment: str
    score: float | None
    max_score: float | None
    status: str
    detail: str = ""
    flags: str = ""

    def as_dict(self) -> dict:
        fmt = lambda v: "" if v is None else f"{v:g}"  # noqa: E731
        return {"student_id": clean_text(self.student_id), "assignment": clean_text(self.assignment),
                "score": fmt(self.score), "max_score": fmt(self.max_score), "status": clean_text(self.status),
                "detail": clean_text(self.detail), "flags": clean_text(self.flags)}

    @classmethod
    def from_dict(cls, data: dict) -> "GradeRow":
        number = lambda v: None if v in ("", None) else float(v)  # noqa: E731
        return cls(data["student_id"], data["assignment"], number(data["score"]), number(data["max_score"]),
                   data["status"], data.get("detail", ""), data.get("flags", ""))


@dataclass
class Job:
    """One submission on its way through the stages."""

    student_id: str
    assignment: conventions.Assignment
    folder: Path
    row: GradeRow
    submitted_path: Path | None = None   # the repaired copy under OUT/course/submitted
    judge_job: JudgeJob | None = None    # what the judge gets
    result: JudgeResult | None = None    # what the judge said
    release_sources: set = field(default_factory=set)
    files_dir: Path | None = None        # the submission's other files, staged for the runner


# --------------------------------------------------------------------------------------------------
# Stage 1: read


@dataclass
class Found:
    """A submission found on disk: an assignment folder, or a notebook outside one (``notebook``)."""

    student_id: str
    assignment: str
    folder: Path
    notebook: Path | None = None   # a notebook found outside an assignment folder, graded where it is
    notes: list = field(default_factory=list)


def _notebooks_in(folder: Path, limit: int = 50) -> list[Path]:
    """Notebooks under ``folder`` (not in checkpoints, links not followed), at most ``limit``, sorted."""
    found = []
    for parent, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d != ".ipynb_checkpoints")
        found.extend(Path(parent) / f for f in sorted(files) if f.endswith(".ipynb"))
        if len(found) >= limit:
            break
    return sorted(found)[:limit]


def _visible_dirs(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if not p.name.startswith(".") and p.is_dir())


def discover(submissions_dir: Path, known: dict | None = None) -> tuple[list[Found], list[GradeRow]]:
    """Every submission under ``submissions_dir`` (links included, to be refused), and rows for what
    cannot be graded at all (a notebook outside any assignment folder whose assignment its name does
    not tell, an assignment folder where a student folder should be)."""
    known = known if known is not None else {}
    by_notebook: dict[str, list] = {}
    for assignment in known.values():
        by_notebook.setdefault(assignment.source_path.name, []).append(assignment)
        by_notebook.setdefault(assignment.name + ".ipynb", []).append(assignment)
    expected_layout = "SUBMISSIONS/<student>/<assignment>/<notebook>.ipynb"
    found: list[Found] = []
    rows: list[GradeRow] = []
    for path in sorted(p for p in submissions_dir.iterdir() if p.name.endswith(".ipynb") and not p.name.startswith(".")):
        rows.append(GradeRow("", path.name, None, None, Status.MISPLACED_NOTEBOOK,
                             f"{path.name} is at the top of the submissions folder, in no student's folder: "
                             f"expected {expected_layout}"))
    for student in _visible_dirs(submissions_dir):
        if student.name in known:
            assignment = known[student.name]
            rows.append(GradeRow(student.name, "", None, None, Status.MISPLACED_NOTEBOOK,
                                 f"a folder named like the assignment {student.name} where a student's folder should be: "
                                 f"expected {expected_layout}, e.g. <student>/{student.name}/{assignment.source_path.name}"))
            continue
        folders = {p.name: Found(student.name, p.name, p) for p in _visible_dirs(student)}
        found.extend(folders.values())
        loose = sorted(p for p in student.iterdir() if p.name.endswith(".ipynb") and not p.name.startswith("."))
        for path in loose:
            matches = by_notebook.get(path.name, [])
            matches = list({a.name: a for a in matches}.values())
            if len(matches) == 1 and matches[0].name in folders:
                folders[matches[0].name].notes.append(
                    f"also found {path.name} outside the assignment folder (not graded)")
            elif len(matches) == 1:
                assignment = matches[0]
                folders[assignment.name] = entry = Found(
                    student.name, assignment.name, student, notebook=path,
                    notes=[f"graded {path.name}, found outside an assignment folder "
                           f"(expected {student.name}/{assignment.name}/{assignment.source_path.name})"])
                found.append(entry)
            else:
                where = ", ".join(f"{a.name}/{a.source_path.name}" for a in sorted(known.values(), key=lambda a: a.name))
                rows.append(GradeRow(student.name, path.name, None, None, Status.MISPLACED_NOTEBOOK,
                                     f"{path.name} is not in an assignment folder and its name names no single assignment: "
                                     f"expected {expected_layout}, one of: {where}"))
    for entry in found:
        if entry.assignment not in known and entry.notebook is None:
            for path in _notebooks_in(entry.folder, 5):
                matches = by_notebook.get(path.name, [])
                if len(matches) == 1:
                    entry.notes.append(f"it holds {path.relative_to(entry.folder)}: expected "
                                       f"{entry.student_id}/{matches[0].name}/{matches[0].source_path.name}")
                    break
    return sorted(found, key=lambda f: (f.student_id, f.assignment)), rows


def no_submissions_message(submissions_dir: Path, known: dict) -> str:
    example = next(iter(sorted(known.values(), key=lambda a: a.name)), None)
    top = [p.name + ("/" if p.is_dir() else "") for p in sorted(submissions_dir.iterdir())][:8]
    return (f"no submissions found under {clean_text(submissions_dir)}: expected "
            f"SUBMISSIONS/<student>/<assignment>/<notebook>.ipynb"
            + (f", e.g. {clean_text(submissions_dir)}/ada/{example.name}/{example.source_path.name}" if example else "")
            + f"; assignments: {', '.join(sorted(known)) or 'none'}"
            + f"; found at the top: {clean_text(', '.join(top)) if top else 'nothing'}. Nothing was graded or written.")


def _differs_from_release(path: Path, release) -> bool:
    """Whether the notebook at ``path`` holds code the release does not (False when it cannot be read)."""
    try:
        info = path.lstat()
        if not stat.S_ISREG(info.st_mode) or not 0 < info.st_size <= MAX_NOTEBOOK_BYTES:
            return False
        nb = nbformat.read(str(path), as_version=4)
        answers = [str(c.get("source", "")).strip() for c in nb.cells if conventions.is_solution_cell(c)]
        if answers:  # the answer cells, compared with the release's stubs
            return any(a not in {c.source.strip() for c in release.cells if conventions.is_solution_cell(c)} for a in answers)
        released = {c.source.strip() for c in release.cells if c.cell_type == "code"}
        return any(c.get("cell_type") == "code" and str(c.get("source", "")).strip() not in released for c in nb.cells)
    except Exception:  # noqa: BLE001 - an unreadable notebook is not preferred
        return False


def _find_notebook(folder: Path, expected_name: str, release=None) -> tuple[Path, str]:
    """The submitted notebook: the expected name, or the only notebook in the folder (misnamed); of
    several, the one that differs from the release (the expected name first), with a note naming the others."""
    expected = folder / expected_name
    candidates = _notebooks_in(folder)
    if (expected.exists() or expected.is_symlink()) and expected not in candidates:
        candidates = sorted(candidates + [expected])
    if not candidates:
        raise Unreadable(Status.MISSING_NOTEBOOK, f"no {expected_name} in the submission (notebooks found: none)")
    if len(candidates) == 1:
        path = candidates[0]
        return path, "" if path == expected else f"graded {path.relative_to(folder)} in place of {expected_name}"
    changed = [p for p in candidates if release is not None and _differs_from_release(p, release)]
    pool = changed or candidates
    path = expected if expected in pool else pool[0]
    others = ", ".join(str(p.relative_to(folder)) for p in candidates if p != path)
    why = " (it differs from the release)" if changed and len(changed) < len(candidates) else ""
    return path, f"graded {path.relative_to(folder)}{why}; also found {others} (not graded)"


def read_submission(folder: Path, assignment: conventions.Assignment, release=None,
                    notebook: Path | None = None) -> tuple[object, list[str]]:
    """The submitted notebook, validated; ``Unreadable`` with a short reason otherwise."""
    if folder.is_symlink():
        raise Unreadable(Status.INVALID_NOTEBOOK, "the submission folder is a link to somewhere else")
    if notebook is not None:
        path, note = notebook, ""
    else:
        path, note = _find_notebook(folder, assignment.source_path.name, release)
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
    try:
        nb = nbformat.read(str(path), as_version=4)
    except nbformat.reader.NotJSONError:
        raise Unreadable(Status.INVALID_NOTEBOOK, "the file is not valid JSON (damaged or truncated?)") from None
    except Exception as error:  # noqa: BLE001 - any unreadable file is an invalid notebook
        raise Unreadable(Status.INVALID_NOTEBOOK, f"unreadable: {type(error).__name__}") from None
    try:
        nbformat.validate(nb)
    except Exception as error:  # noqa: BLE001
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise Unreadable(Status.INVALID_NOTEBOOK, f"not a valid notebook: {first[:100]}") from None
    notes = [note] if note else []
    try:
        fixed, replaced = valid_unicode(nb)
    except RecursionError:
        raise Unreadable(Status.INVALID_NOTEBOOK, "the notebook is nested too deeply to read") from None
    if replaced:  # nbgrader cannot write lone surrogates (JSON escapes such as \udc80): the student's text
        nb = nbformat.from_dict(fixed)
        notes.append("text that is not valid Unicode (lone surrogates) was replaced by \ufffd")
    return nb, notes


def stage_files(folder: Path, target: Path) -> list[str]:
    """Hard-link (or copy) the submission's own files into ``target``, at most
    ``MAX_SUBMISSION_FILES_BYTES`` in all and ``MAX_SUBMISSION_FILES`` files, sizes read with
    ``lstat`` before anything is read; notes on what was left out.

    Notebooks, checkpoints, links and special files are never staged. What is staged is what the
    judge copies into the runner's private folder, once.
    """
    notes: list[str] = []
    total = count = 0
    for parent, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d != ".ipynb_checkpoints")
        for name in sorted(files) + [d for d in dirs if os.path.islink(os.path.join(parent, d))]:
            path = Path(parent) / name
            relative = path.relative_to(folder)
            if name.endswith(".ipynb"):
                continue
            count += 1
            if count > MAX_SUBMISSION_FILES:
                notes.append(f"only the first {MAX_SUBMISSION_FILES} files were looked at")
                return notes
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                notes.append(f"{relative} (a link)")
            elif not stat.S_ISREG(info.st_mode):
                notes.append(f"{relative} (not a regular file)")
            elif total + info.st_size > MAX_SUBMISSION_FILES_BYTES:
                notes.append(f"{relative} ({info.st_size / 2**20:.1f} MB; the files beside the notebook may "
                             f"take {MAX_SUBMISSION_FILES_BYTES // 2**20} MB in all)")
            else:
                total += info.st_size
                destination = target / relative
                destination.parent.mkdir(parents=True, exist_ok=True)
                try:
                    os.link(path, destination, follow_symlinks=False)
                except OSError:
                    shutil.copyfile(path, destination, follow_symlinks=False)
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(parent, d))]
    return notes


# --------------------------------------------------------------------------------------------------
# Stage 2: repair


def normalise(nb) -> list[str]:
    """Fix what is valid nbformat but would break grading: odd metadata, outputs, huge extra text (in place)."""
    notes = []
    bad_meta = 0
    for cell in nb.cells:
        meta = cell.get("metadata")
        if not isinstance(meta, dict):
            cell["metadata"] = meta = nbformat.NotebookNode()
            bad_meta += 1
        if "nbgrader" in meta and not isinstance(meta["nbgrader"], dict):
            del meta["nbgrader"]
            bad_meta += 1
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
        elif "attachments" in cell:
            del cell["attachments"]
    if bad_meta:
        notes.append(f"malformed metadata removed from {bad_meta} cell(s)")
    return notes


def escape_student_markdown(nb, release_sources: set) -> int:
    """Show the student's own markdown and raw cells as escaped text (in place), as the feedback page does,
    so that formgrader's view of the autograded notebook runs no ``<script>``, ``onerror`` or
    ``javascript:`` link. Returns how many cells were escaped."""
    return sum(_escape_student_cell(cell, release_sources) for cell in nb.cells)


def _escape_student_cell(cell, release_sources: set) -> bool:
    """Turn one markdown or raw cell the student wrote into escaped text (in place); whether it did."""
    if cell.cell_type not in ("markdown", "raw") or cell.source in release_sources:
        return False
    cell.cell_type = "markdown"
    cell.source = "<pre>" + html.escape(cell.source) + "</pre>"
    cell.pop("attachments", None)
    return True


def _cap_extra_markdown(nb, release_sources: set) -> list[str]:
    total = 0
    trimmed = 0
    for cell in nb.cells:
        if cell.cell_type != "code" and cell.source not in release_sources:
            total += len(cell.source)
            if total > MAX_EXTRA_MARKDOWN_CHARS:
                cell.source = "[text removed by the grader: the notebook's own notes were too long]"
                trimmed += 1
    return [f"{trimmed} over-long text cell(s) shortened"] if trimmed else []


def repair_submission(nb, release) -> tuple[object, list[str]]:
    notes = normalise(nb)
    nb, repaired = repair(nb, release)
    notes += repaired
    notes += _cap_extra_markdown(nb, {c.source for c in release.cells})
    return nb, notes


# --------------------------------------------------------------------------------------------------
# Stage 3: prepare the judge's job


def _sanitise(nb, job: Job, config, db_url: str):
    """nbgrader's own checks and the course's test cells put back (hidden tests included)."""
    from nbgrader.preprocessors import CheckCellMetadata, ClearOutput, DeduplicateIds, OverwriteCells, OverwriteKernelspec

    resources = {"nbgrader": {"student": job.student_id, "assignment": job.assignment.name,
                              "notebook": job.assignment.notebook_name, "db_url": db_url},
                 "metadata": {"path": str(job.submitted_path.parent)}}
    for cls in (ClearOutput, DeduplicateIds, OverwriteKernelspec, OverwriteCells, CheckCellMetadata):
        nb, resources = cls(config=config).preprocess(nb, resources)
    return nb


def prepare_job(job: Job, nb, release, source_nb, limits: Limits, hide: list[Path], config, db_url: str,
                files_dir: Path | None = None) -> None:
    prepared = _sanitise(copy.deepcopy(nb), job, config, db_url)
    release_code = {c.source for c in release.cells if c.cell_type == "code" and not conventions.nbgrader_meta(c).get("solution")}
    run_indices, answers, labels = [], [], {}
    for index, cell in enumerate(prepared.cells):
        if cell.cell_type != "code" or conventions.is_graded_cell(cell):
            continue
        gid = conventions.grade_id(cell)
        if gid == SETUP_GRADE_ID:
            run_indices.append(index)
            labels[str(index)] = "the set-up cell"
        elif conventions.is_solution_cell(cell):
            run_indices.append(index)
            answers.append(index)
            labels[str(index)] = f"your answer cell '{gid}'"
        elif cell.source not in release_code:
            run_indices.append(index)   # the student's own cell (demo cells of the course are not re-run)
    cells = [dict(cell_type=c.cell_type, source=c.source, metadata=dict(c.metadata)) for c in prepared.cells]
    job.judge_job = JudgeJob(cells, run_indices, answers, labels, conventions.exercise_names(source_nb), limits,
                             str(files_dir) if files_dir else None, [str(p) for p in hide])


# --------------------------------------------------------------------------------------------------
# Stage 4: the judge


def run_judge(job: JudgeJob, limits: Limits) -> JudgeResult:
    """Run ``python -m autograder.judge`` on one job; return its verified result (never raises)."""
    from .sandbox import kill_group

    key = secrets.token_bytes(32)
    message = job.to_message(key)
    process = subprocess.Popen([sys.executable, "-m", "autograder.judge"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True,
                               env=with_course_on_path(dict(os.environ)))

    def send() -> None:
        try:
            process.stdin.write(message)
            process.stdin.close()
        except OSError:
            pass

    threading.Thread(target=send, daemon=True).start()
    deadline = time.monotonic() + limits.notebook_timeout_s + 60
    chunks, size = [], 0
    try:
        import select

        fd = process.stdout.fileno()
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                kill_group(process)
                return JudgeResult.failed(f"the notebook ran past {limits.notebook_timeout_s} s", Status.TIMEOUT)
            if not select.select([fd], [], [], min(remaining, 5))[0]:
                continue
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_JUDGE_RESULT_BYTES:
                kill_group(process)
                return JudgeResult.failed(f"the notebook's outputs were larger than the grader keeps "
                                          f"({MAX_JUDGE_RESULT_BYTES // 2**20} MB)", Status.PROTOCOL_ERROR)
    finally:
        process.stdout.close()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            kill_group(process)
    return verify_result(b"".join(chunks), key)


def verify_result(out: bytes, key: bytes) -> JudgeResult:
    """The judge's result if it is authentic and well formed; an ``error`` result otherwise."""
    try:
        result, replaced = valid_unicode(json.loads(unseal(out, key)))
        if replaced and isinstance(result, dict):   # nbgrader cannot write lone surrogates; they came from the student's output
            result["detail"] = "; ".join(x for x in (result.get("detail"), "text that is not valid Unicode "
                                         "(lone surrogates) in the notebook's output was replaced") if x)
        return JudgeResult.from_dict(result)
    except (ProtocolError, ValueError, TypeError, KeyError, AttributeError, RecursionError):
        return JudgeResult.failed("the judge returned no valid result")


# --------------------------------------------------------------------------------------------------
# Stage 5: record (nbgrader scores the cells) and stage 6: feedback

JUDGED_DIR = "judged"   # under the course folder: the judge's result for each notebook, read by ReplayExecution


def judged_path(root: Path, student_id: str, assignment_name: str, notebook_name: str) -> Path:
    return Path(root) / JUDGED_DIR / student_id / assignment_name / f"{notebook_name}.json"


class ReplayExecution(NbGraderPreprocessor):
    """Stands in for nbgrader's ``Execute``: the outputs the judge produced, cell by cell, read from the
    result file ``record`` wrote (``judged_path``) for this student, assignment and notebook.

    A graded cell the judge did not reach gets an error (it scores 0, never "no output, full marks").
    """

    course_root = Unicode("", help="the nbgrader course folder (its judged/ folder holds the results)").tag(config=True)

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        path = judged_path(self.course_root, info["student"], info["assignment"], info["notebook"])
        result = JudgeResult.from_json(path.read_text(encoding="utf-8"))
        by_index = {cell.index: cell.outputs for cell in result.cells}
        count = 0
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            outputs = by_index.get(index)
            if outputs is None:
                cell.outputs = []
                cell.execution_count = None
                if conventions.is_graded_cell(cell):
                    cell.outputs = [nbformat.from_dict(error_output(
                        "NotExecuted", f"{result.status}: {result.detail or 'the tests did not run'}"))]
                continue
            count += 1
            cell.execution_count = count
            cell.outputs = [nbformat.from_dict(o) for o in outputs if isinstance(o, dict)]
        return nb, resources


class RedactHiddenTests(NbGraderPreprocessor):
    """Feedback shows a hidden-test cell as its name, points, verdict and the judge's message only."""

    def preprocess_cell(self, cell, resources, index):
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("grade") and conventions.BEGIN_HIDDEN in cell.source:
            failed = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
            verdict = f"failed ({failed[0].get('ename', 'error')})" if failed else "passed"
            cell.source = f"# Hidden tests '{meta.get('grade_id')}' ({meta.get('points', 0):g} points): {verdict}"
            from nbformat.v4 import new_output

            text = f"Hidden tests {verdict}."
            if failed:
                text += "\n" + str(failed[0].get("evalue", ""))[:2000]
            cell.outputs = [new_output("stream", name="stdout", text=text + "\n")]
        return cell, resources


class EscapeStudentText(NbGraderPreprocessor):
    """Markdown the student wrote is shown as text, never as HTML (no scripts in feedback pages): every
    cell whose text is not one of the release notebook's (under the course folder's release/)."""

    course_root = Unicode("", help="the nbgrader course folder (its release/ folder holds the release notebooks)").tag(config=True)

    def preprocess(self, nb, resources):
        info = resources.get("nbgrader", {})
        release = Path(self.course_root) / "release" / str(info.get("assignment")) / f"{info.get('notebook')}.ipynb"
        self._release_text = {c.source for c in conventions.read_notebook(release).cells} if release.is_file() else set()
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, index):
        if not _escaped(cell.source):   # escape_student_markdown already did it before nbgrader saw the cell
            _escape_student_cell(cell, self._release_text)
        return cell, resources


def _escaped(source: str) -> bool:
    """Already shown as plain text by ``escape_student_markdown`` (no markup left inside the ``<pre>``)."""
    inner = source[len("<pre>"):-len("</pre>")]
    return source.startswith("<pre>") and source.endswith("</pre>") and "<" not in inner and ">" not in inner


def _config(root: Path, db_path: Path):
    from nbconvert.preprocessors import ClearMetadataPreprocessor, CSSHTMLHeaderPreprocessor
    from nbgrader.preprocessors import (AssignLatePenalties, CheckCellMetadata, GetGrades, IgnorePattern,
                                        LimitOutput, SaveAutoGrades)

    config = course_config(root, db_path)
    config.ReplayExecution.course_root = config.EscapeStudentText.course_root = str(root)
    config.Autograde.autograde_preprocessors = [ReplayExecution, IgnorePattern, ClearMetadataPreprocessor,
                                                LimitOutput, SaveAutoGrades, AssignLatePenalties, CheckCellMetadata]
    config.GenerateFeedback.preprocessors = [GetGrades, RedactHiddenTests, EscapeStudentText, CSSHTMLHeaderPreprocessor]
    return config


def record(job: Job, api, root: Path) -> None:
    """nbgrader scores the cells the judge produced and writes the gradebook (this process only)."""
    row = job.row
    result = job.result
    if result.status != Status.OK:
        row.status = result.status
    row.detail = "; ".join(x for x in (row.detail, result.detail) if x)
    judged = judged_path(root, job.student_id, job.assignment.name, job.assignment.notebook_name)
    judged.parent.mkdir(parents=True, exist_ok=True)
    judged.write_text(result.to_json(), encoding="utf-8")
    try:
        outcome = api.autograde(job.assignment.name, job.student_id, force=True, create=True)
    finally:
        judged.unlink(missing_ok=True)
    if not outcome["success"]:
        row.status, row.detail = Status.GRADER_ERROR, _last_line(outcome)


def write_feedback(job: Job, api, root: Path, out_dir: Path) -> None:
    outcome = api.generate_feedback(job.assignment.name, job.student_id, force=True)
    if not outcome["success"]:
        return
    source = root / "feedback" / job.student_id / job.assignment.name
    target = out_dir / "feedback" / job.student_id / job.assignment.name
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target)
    for page in target.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        page.write_text(readable_page(text.replace("<head>", "<head>\n" + CSP, 1)), encoding="utf-8")


# --------------------------------------------------------------------------------------------------
# The batch


def _fingerprint(found: "Found", source_path: Path, limits: Limits) -> str:
    """What decides whether a submission must be graded again: its files (sizes read with ``lstat``;
    contents hashed in chunks, up to the size the runner would get), the solution and the limits."""
    digest = hashlib.sha256(f"{GRADER_VERSION}|{limits}".encode())
    digest.update(source_path.read_bytes())
    if found.notebook is not None:
        paths = [found.notebook]
    else:
        paths = []
        for parent, dirs, files in os.walk(found.folder):
            dirs.sort()
            paths.extend(Path(parent) / f for f in sorted(files))
            if len(paths) > MAX_SUBMISSION_FILES:
                break
    budget = MAX_SUBMISSION_FILES_BYTES + MAX_NOTEBOOK_BYTES
    for path in paths[:MAX_SUBMISSION_FILES + 1]:
        info = path.lstat()
        digest.update(os.fsencode(path.relative_to(found.folder)) + b"\0" + f"{info.st_mode}|{info.st_size}".encode())
        if not stat.S_ISREG(info.st_mode):
            continue
        if info.st_size > budget:
            digest.update(f"|{info.st_mtime_ns}".encode())
            continue
        budget -= info.st_size
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def _answer_sources(nb, release) -> list[str]:
    """Code the student wrote: answer cells and their own cells (not the released cells)."""
    released = {c.source for c in release.cells if not conventions.nbgrader_meta(c).get("solution")}
    return [c.source for c in nb.cells if c.cell_type == "code" and c.source not in released]


def flag_sources(sources: list[str]) -> str:
    """The flags of the student's code, parsing at most ``MAX_FLAGGED_CHARS`` in all (the grader's own process)."""
    found: set[str] = set()
    budget = MAX_FLAGGED_CHARS
    for source in sources:
        if len(source) > MAX_SCANNED_CHARS:
            found.update(flags_for(source))   # not parsed: flagged as too long to scan
            continue
        if len(source) > budget:
            found.add("code too long to scan in full")
            continue
        budget -= len(source)
        try:
            found.update(flags_for(source))
        except Exception:  # noqa: BLE001 - a flag is advice; never a reason to stop
            found.add("code the grader could not parse")
    return "; ".join(sorted(found))


def name_problem(name: str) -> str:
    """Why a student's or an assignment's folder name cannot be graded under (empty when it can)."""
    if clean_text(name) != name or "/" in name:
        return (f"the folder name '{clean_text(name)}' is not plain UTF-8 text (bytes that are not UTF-8, "
                "or control characters): rename it")
    return ""


def unreadable_page(row: GradeRow, path: Path) -> None:
    """A short feedback page for a submission that could not be read or run: what happened, in plain words."""
    title = html.escape(f"{clean_text(row.assignment)}: {clean_text(row.student_id)}")
    what = ("No notebook was found in your submission, so none of its tests ran. Upload the notebook itself."
            if row.status == Status.MISSING_NOTEBOOK else
            "The file could not be read as a notebook, so none of its tests ran. "
            "Open it in Jupyter, save it again, and resubmit it.")
    text = (f"<!DOCTYPE html>\n<html><head>\n{CSP}\n<meta charset=\"utf-8\"><title>{title}</title></head>\n"
            f"<body><h1>{title}</h1>\n<p>Your submission could not be graded: <b>{html.escape(row.status)}</b>.</p>\n"
            f"<p>{html.escape(clean_text(row.detail))}</p>\n"
            f"<p>Score: 0. {html.escape(what)}</p>\n</body></html>\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@dataclass
class _Course:
    """The nbgrader course folder of one run, and what the run reads and writes besides."""
    root: Path
    config: object
    api: object
    db_url: str
    staging: Path
    hide: list[Path]
    releases: dict = field(default_factory=dict)   # assignment name -> released notebook
    sources: dict = field(default_factory=dict)    # assignment name -> solution notebook
    release_text: dict = field(default_factory=dict)   # assignment name -> the release notebook's cell sources


@dataclass
class _Plan:
    rows: dict          # (student, assignment) -> GradeRow: every row of the CSV
    fingerprints: dict  # (student, assignment) -> fingerprint of what was graded
    todo: list          # (Found, Assignment, GradeRow) to grade in this run


def grade(submissions_dir: Path, out_dir: Path, *, workers: int = 1, limits: Limits = Limits(),
          solutions_dir: Path = conventions.SOLUTIONS_DIR, progress: bool = True,
          students: set[str] | None = None, assignments: set[str] | None = None,
          force: bool = False, shard: Shard | None = None) -> list[GradeRow]:
    """Grade the submissions under ``submissions_dir``; write the CSV and feedback under ``out_dir``.

    ``students``/``assignments`` limit the run to some submissions (the others keep their earlier
    results). A submission whose files, solution notebook and limits are unchanged since the last
    run in the same ``out_dir`` is not graded again unless ``force``. ``shard`` grades only the
    submissions that shard owns (``autograder/shards.py``) and marks ``out_dir`` finished at the end.
    Raises ``NoSubmissions`` (writing nothing) when no folder is laid out as
    ``<student>/<assignment>/<notebook>.ipynb``.

    The stages: plan (what to grade, what to keep, what to report as it is) -> release notebooks (once
    per assignment) -> prepare (read, repair, the judge's job) -> judge and record (nbgrader scores
    the judged cells; feedback pages) -> report (scores, CSV, state).
    """
    warnings.filterwarnings("ignore", module="nbgrader")
    warnings.filterwarnings("ignore", message=".*not in session.*")
    put_scripts_on_path()  # nbgrader opens gradebooks with the `alembic` command (venv not activated)
    submissions_dir, out_dir = Path(submissions_dir).resolve(), Path(out_dir).resolve()
    if not submissions_dir.is_dir():
        raise FileNotFoundError(f"no submissions folder at {submissions_dir}")
    known = {a.name: a for a in conventions.assignments(solutions_dir)}
    found, misplaced = discover(submissions_dir, known)
    if not any(entry.assignment in known for entry in found):
        raise NoSubmissions(no_submissions_message(submissions_dir, known))
    use_bwrap(limits)  # refuse now, with the reason, rather than once per submission
    hide = [out_dir, submissions_dir, Path(solutions_dir).resolve(), conventions.REPO_ROOT]
    check_runner_starts(limits, hide)  # likewise: a broken machine stops here, before any grade is written
    course = _open_course(out_dir, Path(solutions_dir), hide)
    state_path = out_dir / STATE_FILE
    state = _load_state(state_path)
    if shard is not None:
        clear_marker(out_dir)
    plan = _plan(found, misplaced, known, state, limits, Path(solutions_dir), students, assignments, force, shard)
    _release(plan, course)
    jobs = [job for job in (_prepare(entry, assignment, row, course, limits) for entry, assignment, row in plan.todo) if job]
    graded_now = {(job.student_id, job.assignment.name) for job in jobs}
    _zero_unreadable(plan, state, graded_now, known, course, out_dir)
    _run_all(jobs, limits, workers, progress, lambda job: _finish(job, course, out_dir))
    shutil.rmtree(course.staging, ignore_errors=True)
    ordered = _report(plan, graded_now, state, state_path, course.db_url, out_dir)
    if shard is not None:
        write_marker(out_dir, shard, len(ordered))
    return ordered


def _open_course(out_dir: Path, solutions_dir: Path, hide: list[Path]) -> _Course:
    root = out_dir / "course"
    db_path = out_dir / "gradebook.db"
    link_sources(root, solutions_dir)
    config = _config(root, db_path)
    staging = root / "staging"
    shutil.rmtree(staging, ignore_errors=True)
    return _Course(root, config, make_api(config), f"sqlite:///{db_path}", staging, hide)


def _load_state(state_path: Path) -> dict:
    try:
        return json.loads(state_path.read_text(encoding="utf-8")) if state_path.exists() else {}
    except (OSError, ValueError):
        return {}  # a damaged state file only costs a regrade


def _plan(found, misplaced, known, state, limits, solutions_dir, students, assignments, force, shard) -> _Plan:
    """Which submissions to grade now; the rows of the others (kept from the last run, or final as they are)."""
    rows = {(r.student_id, r.assignment): r for r in misplaced}
    if shard is not None:
        rows = {key: row for key, row in rows.items() if shard.owns(*key)}   # each misplaced row in one shard
    plan = _Plan(rows, {}, [])
    for entry in found:
        key = (entry.student_id, entry.assignment)
        if shard is not None and not shard.owns(*key):
            continue
        problem = name_problem(entry.student_id) or name_problem(entry.assignment)
        if problem:
            rows[key] = GradeRow(*key, None, None, Status.INVALID_NAME, problem)
        elif entry.assignment not in known:
            rows[key] = GradeRow(*key, None, None, Status.UNKNOWN_ASSIGNMENT,
                                 "; ".join([f"no assignment {entry.assignment!r} in {solutions_dir.name}/"] + entry.notes))
        elif not _kept_from_last_run(plan, entry, known[entry.assignment], state, limits, students, assignments, force):
            row = rows[key] = GradeRow(*key, None, None, Status.OK)
            plan.todo.append((entry, known[entry.assignment], row))
    return plan


def _kept_from_last_run(plan: _Plan, entry, assignment, state, limits, students, assignments, force) -> bool:
    """Record the submission's fingerprint; True if it is not graded now (unchanged, or not selected)."""
    key = (entry.student_id, entry.assignment)
    try:
        plan.fingerprints[key] = _fingerprint(entry, assignment.source_path, limits)
    except Exception as error:  # noqa: BLE001 - graded again next time, nothing worse
        plan.fingerprints[key] = f"unreadable:{type(error).__name__}:{secrets.token_hex(8)}"
    previous = state.get(f"{key[0]}/{key[1]}")
    selected = (students is None or key[0] in students) and (assignments is None or key[1] in assignments)
    if isinstance(previous, dict) and (not selected or (not force and previous.get("fingerprint") == plan.fingerprints[key])):
        try:
            plan.rows[key] = GradeRow.from_dict(previous["row"])
            plan.fingerprints[key] = previous["fingerprint"]
            return True
        except (KeyError, TypeError, ValueError):
            pass  # a damaged record: grade it again
    return not selected


def _release(plan: _Plan, course: _Course) -> None:
    """nbgrader's release notebook of every assignment to grade, made once; if nbgrader fails, every
    submission of that assignment is a grader error with nbgrader's reason (and is not graded)."""
    failed: dict[str, str] = {}
    for assignment in {a.name: a for _, a, _ in plan.todo}.values():
        try:
            with stage("nbgrader: release notebook (once per assignment)"):
                generated = course.api.generate_assignment(assignment.name, force=True, create=True)
            if not generated["success"]:
                raise RuntimeError(f"nbgrader generate_assignment failed:\n{generated.get('log', '')}")
            release = conventions.read_notebook(course.root / "release" / assignment.name / assignment.source_path.name)
            course.releases[assignment.name] = release
            course.sources[assignment.name] = conventions.read_notebook(assignment.source_path)
            course.release_text[assignment.name] = {c.source for c in release.cells}
        except Exception as error:  # noqa: BLE001 - reported on each of the assignment's rows
            failed[assignment.name] = f"{type(error).__name__}: {clean_text(error)[:150]}"
    for _, assignment, row in plan.todo:
        if assignment.name in failed:
            row.status, row.detail = Status.GRADER_ERROR, failed[assignment.name]
    plan.todo = [item for item in plan.todo if item[1].name not in failed]


def _prepare(entry, assignment, row: GradeRow, course: _Course, limits: Limits) -> Job | None:
    """Read and repair one submission and build its judge job; None (with the row's status set) if it
    cannot be graded."""
    job = Job(entry.student_id, assignment, entry.folder, row)
    start = time.perf_counter()
    try:
        nb = _read_and_repair(job, entry, course)
    except Unreadable as problem:
        row.status, row.detail = problem.status, "; ".join(entry.notes + [problem.detail])
        return None
    except (ValueError, UnicodeError, RecursionError) as error:   # the student's file: text or structure the grader cannot take
        return _failed(job, Status.INVALID_NOTEBOOK, error)
    except Exception as error:  # noqa: BLE001 - one submission never stops the batch
        return _failed(job, Status.GRADER_ERROR, error)
    try:
        prepare_job(job, nb, course.releases[assignment.name], course.sources[assignment.name], limits, course.hide,
                    course.config, course.db_url, job.files_dir)
    except Exception as error:  # noqa: BLE001 - the grader failed (nbgrader, the disk): a bug to report
        return _failed(job, Status.GRADER_ERROR, error)
    add_stage_time("grader: read, repair and prepare the job", time.perf_counter() - start)
    return job


def _failed(job: Job, status: Status, error: BaseException) -> None:
    job.row.status, job.row.detail = status, f"{type(error).__name__}: {clean_text(error)[:150]}"
    if job.submitted_path is not None and job.submitted_path.exists():
        job.submitted_path.unlink()
    return None


def _read_and_repair(job: Job, entry, course: _Course):
    """The submission read (links refused before anything is copied), its files staged, repaired and
    written where nbgrader looks for it."""
    assignment, release = job.assignment, course.releases[job.assignment.name]
    nb, notes = read_submission(entry.folder, assignment, release, entry.notebook)
    notes = entry.notes + notes
    target = course.root / "submitted" / job.student_id / assignment.name
    if target.exists():
        shutil.rmtree(target)  # a re-run grades what is submitted now, nothing stale
    target.mkdir(parents=True)
    if entry.notebook is None:
        job.files_dir = course.staging / job.student_id / assignment.name
        job.files_dir.mkdir(parents=True)
        left_out = stage_files(entry.folder, job.files_dir)
        if left_out:
            notes.append("files not given to the notebook: " + ", ".join(left_out[:5])
                         + (f" and {len(left_out) - 5} more" if len(left_out) > 5 else ""))
    nb, repaired = repair_submission(nb, release)
    escaped = escape_student_markdown(nb, course.release_text[assignment.name])
    if escaped:
        repaired.append(f"{escaped} text cell(s) of the student's shown as plain text")
    job.row.detail = "; ".join(notes + repaired)
    job.row.flags = flag_sources(_answer_sources(nb, release))
    job.submitted_path = target / assignment.source_path.name
    nbformat.write(nb, str(job.submitted_path))
    return nb


def _zero_unreadable(plan: _Plan, state: dict, graded_now: set, known: dict, course: _Course, out_dir: Path) -> None:
    """Unreadable submissions graded this run: zero in the gradebook, a short feedback page."""
    for key, row in plan.rows.items():
        if key in graded_now or row.status not in UNREADABLE \
                or plan.fingerprints.get(key) == state.get(f"{key[0]}/{key[1]}", {}).get("fingerprint"):
            continue
        try:
            _record_zero(course.db_url, key[1], key[0])
        except Exception as error:  # noqa: BLE001
            row.detail += f" (gradebook: {type(error).__name__})"
        feedback = out_dir / "feedback" / key[0] / key[1]
        shutil.rmtree(feedback, ignore_errors=True)
        try:
            unreadable_page(row, feedback / known[key[1]].source_path.with_suffix(".html").name)
        except Exception as error:  # noqa: BLE001
            row.detail += f" (feedback page: {type(error).__name__})"


def _finish(job: Job, course: _Course, out_dir: Path) -> None:
    """nbgrader scores the judged notebook and writes its feedback page (in this process)."""
    try:
        with stage("nbgrader: autograde and gradebook"):
            record(job, course.api, course.root)
        with stage("nbgrader: feedback page"):
            write_feedback(job, course.api, course.root, out_dir)
    except Exception as error:  # noqa: BLE001 - one submission never stops the batch
        job.row.status, job.row.detail = Status.GRADER_ERROR, f"{type(error).__name__}: {clean_text(error)[:150]}"
    finally:
        shutil.rmtree(course.staging / job.student_id / job.assignment.name, ignore_errors=True)


def _report(plan: _Plan, graded_now: set, state: dict, state_path: Path, db_url: str, out_dir: Path) -> list[GradeRow]:
    """Scores from the gradebook, the CSV, then the state the next run starts from."""
    start = time.perf_counter()
    rows = plan.rows
    try:
        _fill_scores({k: r for k, r in rows.items() if k in graded_now or r.status in UNREADABLE}, db_url)
    except Exception as error:  # noqa: BLE001 - the CSV is still written, with the reason
        for key in graded_now:
            rows[key].status, rows[key].detail = Status.GRADER_ERROR, f"gradebook: {type(error).__name__}"
    ordered = [rows[key] for key in sorted(rows)]
    write_csv(ordered, out_dir / "grades.csv")   # before the state: a failure here must not be remembered
    for key, row in rows.items():
        if key in plan.fingerprints:
            state[f"{key[0]}/{key[1]}"] = {"fingerprint": plan.fingerprints[key], "row": row.as_dict()}
    state_path.parent.mkdir(parents=True, exist_ok=True)
    state_path.write_text(json.dumps(state, indent=1, sort_keys=True), encoding="utf-8")
    add_stage_time("grader: scores, CSV and state", time.perf_counter() - start)
    return ordered


def _run_all(jobs: list[Job], limits: Limits, workers: int, progress: bool, finish) -> None:
    """Judge ``workers`` notebooks at a time; record each here as soon as its judge is done."""
    if not jobs:
        return
    from tqdm.auto import tqdm

    def judge(job: Job) -> Job:
        try:
            start = time.perf_counter()
            job.result = run_judge(job.judge_job, limits)
            elapsed = time.perf_counter() - start
            for name, seconds in job.result.timings.items():
                add_stage_time(f"judge: {name}", seconds)
            add_stage_time("judge: process start, imports and result transfer", elapsed - sum(job.result.timings.values()))
        except Exception as error:  # noqa: BLE001 - e.g. no process left to start the judge with
            job.result = JudgeResult.failed(f"the grader could not run this notebook's judge: "
                                            f"{type(error).__name__}: {clean_text(error)[:150]}")
        return job

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = {pool.submit(judge, job): job for job in jobs}
        bar = tqdm(total=len(futures), desc="grading", unit="notebook", disable=not progress, file=sys.stderr)
        for future in as_completed(futures):
            try:
                job = future.result()
            except BaseException as error:  # noqa: BLE001 - the thread itself failed
                job = futures[future]
                job.result = JudgeResult.failed(f"the judge did not run: {type(error).__name__}")
            finish(job)
            bar.update(1)
        bar.close()


def _last_line(result: dict) -> str:
    text = (result.get("error") or result.get("log") or "").strip().splitlines()
    return text[-1][:200] if text else "nbgrader autograde failed"


def _record_zero(db_url: str, assignment_name: str, student_id: str) -> None:
    """A submission that cannot be run still gets a gradebook entry: zero on every cell, no manual grading."""
    from nbgrader.api import Gradebook

    with Gradebook(db_url) as gradebook:
        gradebook.update_or_create_student(student_id)
        submission = gradebook.update_or_create_submission(assignment_name, student_id)
        for notebook in submission.notebooks:
            for grade_entry in notebook.grades:
                grade_entry.auto_score = 0
                grade_entry.manual_score = None
                grade_entry.needs_manual_grade = False
        gradebook.db.commit()


def _fill_scores(rows: dict[tuple[str, str], GradeRow], db_url: str) -> None:
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(db_url) as gradebook:
        for (student_id, assignment_name), row in rows.items():
            if row.status == Status.UNKNOWN_ASSIGNMENT:
                continue
            try:
                submission = gradebook.find_submission(assignment_name, student_id)
            except MissingEntry:
                row.status = row.status if row.status != Status.OK else Status.GRADER_ERROR
                continue
            row.score = float(submission.score)
            row.max_score = float(submission.max_score)


def spreadsheet_safe(value: str) -> str:
    """A cell value no spreadsheet will run as a formula: leading = + - @ (and tab/CR) get a quote;
    control characters and bytes that are not text never reach the file (``clean_text``)."""
    text = clean_text(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t") else text


def write_csv(rows: list[GradeRow], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8", errors="backslashreplace") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        for row in rows:
            values = row.as_dict()
            writer.writerow({k: v if k in ("score", "max_score") else spreadsheet_safe(v) for k, v in values.items()})


def self_grading_bundles() -> list[Path]:
    """The public edition's self-grading bundles in the installed grader (they hold the hidden tests,
    and the sandbox can read the grader's own package)."""
    return sorted((Path(__file__).resolve().parent / "selfgrade").glob("*.bin"))


BUNDLES_REFUSAL = ("this is the public edition of the course: autograder/selfgrade/*.bin ({count} file(s)) hold the "
                   "hidden tests, and a student's code can read them from inside the sandbox. For a graded class, "
                   "build the private edition first: python -m autograder build --no-self-grading (it removes "
                   "them), or pass --allow-self-grading-bundles to grade anyway (self-study, trusted code).")
NO_SANDBOX_WARNING = ("WARNING: graded with --sandbox none: each student's code ran with the grader's own rights. "
                      "One student can rewrite the grader's files and zero the next student, and read the "
                      "solutions. Trust these grades only for code you trust, or inside a container.")


def summary_warnings(limits: Limits, bundles: list[Path]) -> list[str]:
    """Lines the ``grade`` command prints under its table: how far these grades can be trusted."""
    lines = []
    if limits.sandbox == "none":
        lines.append(NO_SANDBOX_WARNING)
    if bundles:
        lines.append(f"WARNING: graded with the self-grading bundles present ({len(bundles)} file(s) in "
                     f"{bundles[0].parent}): students could read the hidden tests. For a graded class: "
                     "python -m autograder build --no-self-grading")
    return lines


def format_table(rows: list[GradeRow]) -> str:
    header = ["student_id", "assignment", "score", "status"]
    body = [[clean_text(r.student_id), clean_text(r.assignment),
             "-" if r.score is None else f"{r.score:g} / {r.max_score:g}",
             clean_text(r.status + (f" ({r.detail})" if r.detail else "") + (f" [flagged: {r.flags}]" if r.flags else ""))]
            for r in rows]
    widths = [max(len(str(x)) for x in column) for column in zip(header, *body)]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in body])
