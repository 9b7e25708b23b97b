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

``read_submission`` -> ``repair_submission`` -> ``prepare_job`` -> ``run_judge`` (the judge runs the
graded tests outside the student's process; ``autograder.judge``) -> ``record`` (nbgrader scores the
cells the judge produced and writes the gradebook) -> ``write_feedback``.

Only this process opens the gradebook; only the judge decides a test; only the sandboxed runner
runs student code.
"""

from __future__ import annotations

import copy
import csv
import hashlib
import hmac
import html
import json
import os
import secrets
import shutil
import subprocess
import sys
import warnings
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import nbformat.reader
from nbgrader.preprocessors import NbGraderPreprocessor

from . import conventions
from .course_directory import course_config, link_sources, make_api, put_scripts_on_path
from .feedback_page import readable_page
from .flags import flags_for
from .judge import error_output, sign
from .repair import repair
from .sandbox import Limits, check_runner_starts, copy_submission_files, use_bwrap, with_course_on_path
from .setup_cell import SETUP_GRADE_ID

CSV_COLUMNS = ["student_id", "assignment", "score", "max_score", "status", "detail", "flags"]
STATE_FILE = "grading_state.json"
UNREADABLE = ("invalid notebook", "missing notebook")  # statuses of submissions that never run
STATUSES = ("ok", "timeout", "kernel died", "memory limit", "protocol error", "error")
GRADER_VERSION = "3"  # bump when a change to the grader should regrade unchanged submissions
MAX_NOTEBOOK_BYTES = 25 * 1024 * 1024
MAX_EXTRA_MARKDOWN_CHARS = 200_000
CSP = ("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; "
       "style-src 'unsafe-inline'; font-src data:\">")


class Unreadable(Exception):
    def __init__(self, status: str, detail: str):
        super().__init__(detail)
        self.status, self.detail = status, detail


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
        return {"student_id": self.student_id, "assignment": self.assignment, "score": fmt(self.score),
                "max_score": fmt(self.max_score), "status": self.status, "detail": self.detail, "flags": self.flags}

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
    payload: dict | None = None          # what the judge gets
    result: dict | None = None           # what the judge said
    release_sources: set = field(default_factory=set)


# --------------------------------------------------------------------------------------------------
# Stage 1: read


def discover(submissions_dir: Path) -> list[tuple[str, str, Path]]:
    """``(student_id, assignment, folder)`` for every submission folder, sorted (links included, to be refused)."""
    found = []
    for student in sorted(p for p in submissions_dir.iterdir() if p.is_dir() and not p.name.startswith(".")):
        for folder in sorted(p for p in student.iterdir() if p.is_dir() and not p.name.startswith(".")):
            found.append((student.name, folder.name, folder))
    return found


def _find_notebook(folder: Path, expected_name: str) -> tuple[Path, str]:
    """The submitted notebook: the expected name, or the only notebook in the folder (misnamed)."""
    expected = folder / expected_name
    if expected.exists() or expected.is_symlink():
        return expected, ""
    candidates = sorted(p for p in folder.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
    if len(candidates) == 1:
        return candidates[0], f"graded {candidates[0].relative_to(folder)} in place of {expected_name}"
    found = ", ".join(str(p.relative_to(folder)) for p in candidates) or "none"
    raise Unreadable("missing notebook", f"no {expected_name} in the submission (notebooks found: {found})")


def read_submission(folder: Path, assignment: conventions.Assignment) -> tuple[object, list[str]]:
    """The submitted notebook, validated; ``Unreadable`` with a short reason otherwise."""
    if folder.is_symlink():
        raise Unreadable("invalid notebook", "the submission folder is a link to somewhere else")
    path, note = _find_notebook(folder, assignment.source_path.name)
    if path.is_symlink() or any(p.is_symlink() for p in path.parents if folder in p.parents):
        raise Unreadable("invalid notebook", "the notebook is a link (only regular files are graded)")
    import stat

    info = path.lstat()
    if not stat.S_ISREG(info.st_mode):
        raise Unreadable("invalid notebook", "the notebook is not a regular file")
    if info.st_size == 0:
        raise Unreadable("invalid notebook", "the file is empty")
    if info.st_size > MAX_NOTEBOOK_BYTES:
        raise Unreadable("invalid notebook", f"the file is {info.st_size / 2**20:.0f} MB; the limit is "
                                             f"{MAX_NOTEBOOK_BYTES / 2**20:.0f} MB (clear the outputs and resubmit)")
    try:
        nb = nbformat.read(str(path), as_version=4)
    except nbformat.reader.NotJSONError:
        raise Unreadable("invalid notebook", "the file is not valid JSON (damaged or truncated?)") from None
    except Exception as error:  # noqa: BLE001 - any unreadable file is an invalid notebook
        raise Unreadable("invalid notebook", f"unreadable: {type(error).__name__}") from None
    try:
        nbformat.validate(nb)
    except Exception as error:  # noqa: BLE001
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise Unreadable("invalid notebook", f"not a valid notebook: {first[:100]}") from None
    return nb, [note] if note else []


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


def prepare_job(job: Job, nb, release, source_nb, limits: Limits, hide: list[Path], config, db_url: str) -> None:
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
    job.payload = {"notebook": {"cells": [dict(cell_type=c.cell_type, source=c.source, metadata=dict(c.metadata))
                                          for c in prepared.cells]},
                   "run_indices": run_indices, "answer_cells": answers, "cell_labels": labels,
                   "names": conventions.exercise_names(source_nb),
                   "submission_dir": str(job.folder), "hide": [str(p) for p in hide],
                   "limits": {"cell_timeout_s": limits.cell_timeout_s, "notebook_timeout_s": limits.notebook_timeout_s,
                              "memory_mb": limits.memory_mb, "max_file_mb": limits.max_file_mb,
                              "sandbox": limits.sandbox}}


# --------------------------------------------------------------------------------------------------
# Stage 4: the judge


def run_judge(payload: dict, limits: Limits) -> dict:
    """Run ``python -m autograder.judge`` on one job; return its verified result (never raises)."""
    key = secrets.token_bytes(32)
    message = json.dumps(dict(payload, key=key.hex()))
    process = subprocess.Popen([sys.executable, "-m", "autograder.judge"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True,
                               env=with_course_on_path(dict(os.environ)))
    try:
        out, _ = process.communicate(message.encode("utf-8"), timeout=limits.notebook_timeout_s + 60)
    except subprocess.TimeoutExpired:
        from .sandbox import kill_group

        kill_group(process)
        return {"status": "timeout", "detail": f"the notebook ran past {limits.notebook_timeout_s} s", "cells": []}
    return verify_result(out, key)


def verify_result(out: bytes, key: bytes) -> dict:
    """The judge's result if it is authentic and well formed; an ``error`` result otherwise."""
    try:
        envelope = json.loads(out.decode("utf-8"))
        body, mac = envelope["body"], envelope["mac"]
        if not (isinstance(body, str) and isinstance(mac, str) and hmac.compare_digest(mac, sign(key, body))):
            raise ValueError("bad signature")
        result = json.loads(body)
        if result.get("status") not in STATUSES or not isinstance(result.get("detail"), str):
            raise ValueError("bad status")
        for cell in result.get("cells", []):
            if type(cell.get("index")) is not int or type(cell.get("outputs")) is not list:
                raise ValueError("bad cell")
        return result
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError):
        return {"status": "error", "detail": "the judge returned no valid result", "cells": []}


# --------------------------------------------------------------------------------------------------
# Stage 5: record (nbgrader scores the cells) and stage 6: feedback

_RESULTS: dict[tuple[str, str, str], dict] = {}
_RELEASE_TEXT: dict[str, set] = {}


class ReplayExecution(NbGraderPreprocessor):
    """Stands in for nbgrader's ``Execute``: the outputs the judge produced, cell by cell.

    A graded cell the judge did not reach gets an error (it scores 0, never "no output, full marks").
    """

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        result = _RESULTS[(info["student"], info["assignment"], info["notebook"])]
        by_index = {cell["index"]: cell["outputs"] for cell in result.get("cells", [])}
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
                        "NotExecuted", f"{result.get('status')}: {result.get('detail') or 'the tests did not run'}"))]
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
    """Markdown the student wrote is shown as text, never as HTML (no scripts in feedback pages)."""

    def preprocess_cell(self, cell, resources, index):
        known = _RELEASE_TEXT.get(resources.get("nbgrader", {}).get("assignment"), set())
        if cell.cell_type in ("markdown", "raw") and cell.source not in known:
            cell.cell_type = "markdown"
            cell.source = "<pre>" + html.escape(cell.source) + "</pre>"
            cell.pop("attachments", None)
        return cell, resources


def _config(root: Path, db_path: Path):
    from nbconvert.preprocessors import ClearMetadataPreprocessor, CSSHTMLHeaderPreprocessor
    from nbgrader.preprocessors import (AssignLatePenalties, CheckCellMetadata, GetGrades, IgnorePattern,
                                        LimitOutput, SaveAutoGrades)

    config = course_config(root, db_path)
    config.Autograde.autograde_preprocessors = [ReplayExecution, IgnorePattern, ClearMetadataPreprocessor,
                                                LimitOutput, SaveAutoGrades, AssignLatePenalties, CheckCellMetadata]
    config.GenerateFeedback.preprocessors = [GetGrades, RedactHiddenTests, EscapeStudentText, CSSHTMLHeaderPreprocessor]
    return config


def record(job: Job, api) -> None:
    """nbgrader scores the cells the judge produced and writes the gradebook (this process only)."""
    row = job.row
    result = job.result
    if result["status"] != "ok":
        row.status = result["status"]
    row.detail = "; ".join(x for x in (row.detail, result.get("detail", "")) if x)
    key = (job.student_id, job.assignment.name, job.assignment.notebook_name)
    _RESULTS[key] = result
    try:
        outcome = api.autograde(job.assignment.name, job.student_id, force=True, create=True)
    finally:
        _RESULTS.pop(key, None)
    if not outcome["success"]:
        row.status, row.detail = "grader error", _last_line(outcome)


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


def _fingerprint(folder: Path, source_path: Path, limits: Limits) -> str:
    digest = hashlib.sha256(f"{GRADER_VERSION}|{limits}".encode())
    digest.update(source_path.read_bytes())
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()):
        digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _answer_sources(nb, release) -> list[str]:
    """Code the student wrote: answer cells and their own cells (not the released cells)."""
    released = {c.source for c in release.cells if not conventions.nbgrader_meta(c).get("solution")}
    return [c.source for c in nb.cells if c.cell_type == "code" and c.source not in released]


def grade(submissions_dir: Path, out_dir: Path, *, workers: int = 1, limits: Limits = Limits(),
          solutions_dir: Path = conventions.SOLUTIONS_DIR, progress: bool = True,
          students: set[str] | None = None, assignments: set[str] | None = None,
          force: bool = False) -> list[GradeRow]:
    """Grade the submissions under ``submissions_dir``; write the CSV and feedback under ``out_dir``.

    ``students``/``assignments`` limit the run to some submissions (the others keep their earlier
    results). A submission whose files, solution notebook and limits are unchanged since the last
    run in the same ``out_dir`` is not graded again unless ``force``.
    """
    warnings.filterwarnings("ignore", module="nbgrader")
    warnings.filterwarnings("ignore", message=".*not in session.*")
    put_scripts_on_path()  # nbgrader opens gradebooks with the `alembic` command (venv not activated)
    submissions_dir = Path(submissions_dir).resolve()
    out_dir = Path(out_dir).resolve()
    if not submissions_dir.is_dir():
        raise FileNotFoundError(f"no submissions folder at {submissions_dir}")
    use_bwrap(limits)  # refuse now, with the reason, rather than once per submission
    hide = [out_dir, submissions_dir, Path(solutions_dir).resolve(), conventions.REPO_ROOT]
    check_runner_starts(limits, hide)  # likewise: a broken machine stops here, before any grade is written
    root = out_dir / "course"
    db_path = out_dir / "gradebook.db"
    link_sources(root, Path(solutions_dir))
    config = _config(root, db_path)
    api = make_api(config)
    db_url = f"sqlite:///{db_path}"
    state_path = out_dir / STATE_FILE
    state = json.loads(state_path.read_text()) if state_path.exists() else {}

    known = {a.name: a for a in conventions.assignments(solutions_dir)}
    rows: dict[tuple[str, str], GradeRow] = {}
    fingerprints: dict[tuple[str, str], str] = {}
    jobs: list[Job] = []
    releases: dict[str, object] = {}
    sources: dict[str, object] = {}

    for student_id, assignment_name, folder in discover(submissions_dir):
        key = (student_id, assignment_name)
        if assignment_name not in known:
            rows[key] = GradeRow(student_id, assignment_name, None, None, "unknown assignment",
                                 f"no assignment {assignment_name!r} in {Path(solutions_dir).name}/")
            continue
        assignment = known[assignment_name]
        try:
            fingerprints[key] = _fingerprint(folder, assignment.source_path, limits)
        except OSError as error:
            fingerprints[key] = f"unreadable:{error}"
        previous = state.get(f"{student_id}/{assignment_name}")
        selected = (students is None or student_id in students) and (assignments is None or assignment_name in assignments)
        if previous and (not selected or (not force and previous["fingerprint"] == fingerprints[key])):
            rows[key] = GradeRow.from_dict(previous["row"])
            fingerprints[key] = previous["fingerprint"]
            continue
        if not selected:
            continue
        row = rows[key] = GradeRow(student_id, assignment_name, None, None, "ok")
        job = Job(student_id, assignment, folder, row)
        try:
            if assignment_name not in releases:
                generated = api.generate_assignment(assignment_name, force=True, create=True)
                if not generated["success"]:
                    raise RuntimeError(f"nbgrader generate_assignment failed:\n{generated.get('log', '')}")
                releases[assignment_name] = conventions.read_notebook(root / "release" / assignment_name / assignment.source_path.name)
                sources[assignment_name] = conventions.read_notebook(assignment.source_path)
                _RELEASE_TEXT[assignment_name] = {c.source for c in releases[assignment_name].cells}
            release = releases[assignment_name]
            nb, notes = read_submission(folder, assignment)   # refuses links before anything is copied
            target = root / "submitted" / student_id / assignment_name
            if target.exists():
                shutil.rmtree(target)  # a re-run grades what is submitted now, nothing stale
            target.mkdir(parents=True)
            copy_submission_files(folder, target)
            nb, repaired = repair_submission(nb, release)
            row.detail = "; ".join(notes + repaired)
            row.flags = "; ".join(sorted({f for s in _answer_sources(nb, release) for f in flags_for(s)}))
            job.submitted_path = target / assignment.source_path.name
            nbformat.write(nb, str(job.submitted_path))
            prepare_job(job, nb, release, sources[assignment_name], limits, hide, config, db_url)
            jobs.append(job)
        except Unreadable as problem:
            row.status, row.detail = problem.status, problem.detail
        except Exception as error:  # noqa: BLE001 - one submission never stops the batch
            row.status, row.detail = "invalid notebook", f"{type(error).__name__}: {str(error)[:150]}"
            if job.submitted_path is not None and job.submitted_path.exists():
                job.submitted_path.unlink()

    graded_now = {(job.student_id, job.assignment.name) for job in jobs}
    for key, row in rows.items():
        # Unreadable submissions graded this run: zero in the gradebook, no stale feedback.
        if key not in graded_now and row.status in UNREADABLE \
                and fingerprints.get(key) != state.get(f"{key[0]}/{key[1]}", {}).get("fingerprint"):
            try:
                _record_zero(db_url, key[1], key[0])
            except Exception as error:  # noqa: BLE001
                row.detail += f" (gradebook: {type(error).__name__})"
            shutil.rmtree(out_dir / "feedback" / key[0] / key[1], ignore_errors=True)

    def finish(job: Job) -> None:
        try:
            record(job, api)
            write_feedback(job, api, root, out_dir)
        except Exception as error:  # noqa: BLE001 - one submission never stops the batch
            job.row.status, job.row.detail = "grader error", f"{type(error).__name__}: {str(error)[:150]}"

    _run_all(jobs, limits, workers, progress, finish)

    _fill_scores({k: r for k, r in rows.items() if k in graded_now or r.status in UNREADABLE}, db_url)
    for key, row in rows.items():
        if key in fingerprints:
            state[f"{key[0]}/{key[1]}"] = {"fingerprint": fingerprints[key], "row": row.as_dict()}
    state_path.parent.mkdir(parents=True, exist_ok=True)
    state_path.write_text(json.dumps(state, indent=1, sort_keys=True))
    ordered = [rows[key] for key in sorted(rows)]
    write_csv(ordered, out_dir / "grades.csv")
    return ordered


def _run_all(jobs: list[Job], limits: Limits, workers: int, progress: bool, finish) -> None:
    """Judge ``workers`` notebooks at a time; record each here as soon as its judge is done."""
    if not jobs:
        return
    from tqdm.auto import tqdm

    def judge(job: Job) -> Job:
        job.result = run_judge(job.payload, limits)
        return job

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = [pool.submit(judge, job) for job in jobs]
        bar = tqdm(total=len(futures), desc="grading", unit="notebook", disable=not progress, file=sys.stderr)
        for future in as_completed(futures):
            finish(future.result())
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
            if row.status == "unknown assignment":
                continue
            try:
                submission = gradebook.find_submission(assignment_name, student_id)
            except MissingEntry:
                row.status = row.status if row.status != "ok" else "grader error"
                continue
            row.score = float(submission.score)
            row.max_score = float(submission.max_score)


def spreadsheet_safe(value: str) -> str:
    """A cell value no spreadsheet will run as a formula: leading = + - @ (and tab/CR) get a quote."""
    text = str(value).replace("\r", " ").replace("\n", " ")
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t") else text


def write_csv(rows: list[GradeRow], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        for row in rows:
            values = row.as_dict()
            writer.writerow({k: v if k in ("score", "max_score") else spreadsheet_safe(v) for k, v in values.items()})


def format_table(rows: list[GradeRow]) -> str:
    header = ["student_id", "assignment", "score", "status"]
    body = [[r.student_id, r.assignment,
             "-" if r.score is None else f"{r.score:g} / {r.max_score:g}",
             r.status + (f" ({r.detail})" if r.detail else "") + (f" [flagged: {r.flags}]" if r.flags else "")] for r in rows]
    widths = [max(len(str(x)) for x in column) for column in zip(header, *body)]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in body])
