"""``python -m autograder grade SUBMISSIONS --out OUT``: autograde a folder of submissions.

Layout read: ``SUBMISSIONS/<student_id>/<assignment>/<notebook>.ipynb`` (nbgrader's
``submitted/`` layout). Written:

* ``OUT/gradebook.db``: nbgrader's sqlite gradebook (the real one: ``nbgrader export``,
  formgrader and ``generate_feedback`` all work on it with ``--CourseDirectory.root=OUT/course``
  and ``--CourseDirectory.db_url=sqlite:///OUT/gradebook.db``);
* ``OUT/grades.csv``: ``student_id, assignment, score, max_score, status, detail``;
* ``OUT/feedback/<student_id>/<assignment>/<notebook>.html``: per-student feedback, with hidden
  tests shown only by name, points and pass/fail;
* ``OUT/course/``: nbgrader's working folders (``submitted``, ``autograded``, ``feedback``).

How a submission is graded, in three phases:

1. *Prepare* (parent, serial): read and validate each notebook; an unreadable one gets status
   ``invalid notebook`` and counts as missing (zero), never stops the batch. nbgrader's sanitising
   preprocessors put the course's own test cells, hidden tests included, back in place.
2. *Execute* (children, ``--workers`` at a time): each prepared notebook runs in its own sandboxed
   process and kernel (``autograder.sandbox``), with per-cell and per-notebook time limits and a
   memory limit.
3. *Record* (parent, serial): nbgrader's ``autograde`` runs with its ``Execute`` step replaced by the
   result of phase 2, so nbgrader itself scores the cells and writes the gradebook; then feedback.
   Only the parent ever opens the gradebook.
"""

from __future__ import annotations

import copy
import csv
import hashlib
import json
import shutil
import sys
import warnings
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

import nbformat
import nbformat.reader
from nbgrader.preprocessors import NbGraderPreprocessor

from . import conventions, guard
from .flags import flags_for
from .setup_cell import SETUP_GRADE_ID
from .repair import repair
from .worker import error_output
from .course_directory import course_config, link_sources, make_api
from .sandbox import ExecutionResult, Limits, copy_submission_files, run_isolated

CSV_COLUMNS = ["student_id", "assignment", "score", "max_score", "status", "detail", "flags"]
STATE_FILE = "grading_state.json"
UNREADABLE = ("invalid notebook", "missing notebook")  # statuses of submissions that never run
GRADER_VERSION = "2"  # bump when a change to the grader should regrade unchanged submissions


@dataclass
class NotebookJob:
    student_id: str
    assignment: str
    notebook: str             # notebook name without .ipynb
    submitted_path: Path      # the copy under OUT/course/submitted
    prepared: object = None   # the sanitised notebook to execute
    result: ExecutionResult | None = None


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


# --------------------------------------------------------------------------------------------------
# nbgrader preprocessors plugged into its autograde and feedback steps

_EXECUTED: dict[tuple[str, str, str], ExecutionResult] = {}
PREAMBLE_KEY = "course_grader_preamble"


class ReplayExecution(NbGraderPreprocessor):
    """Stands in for nbgrader's ``Execute``: hands back the notebook the sandbox executed.

    Also keeps a correct answer from losing points to harmless noise: output on stderr (warnings,
    progress bars, logging) in a graded cell is shown as ordinary output instead of counting as a
    failure, and a graded cell whose last line is an expression cannot award itself partial
    credit (nbgrader reads a number returned by a test cell as its score).
    """

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        result = _EXECUTED[(info["student"], info["assignment"], info["notebook"])]
        if result.notebook is None:
            return _mark_all_graded(nb, result), resources
        executed = [c for c in result.notebook.cells if not c.metadata.get(PREAMBLE_KEY)]
        if len(executed) != len(nb.cells):
            raise RuntimeError("the executed notebook does not line up with the submission")
        count = 0
        for cell, ran in zip(nb.cells, executed):
            if cell.cell_type == "code":
                cell.outputs = ran.get("outputs", [])
                count += ran.get("execution_count") is not None
                cell.execution_count = count if ran.get("execution_count") is not None else None
                if cell.metadata.get("nbgrader", {}).get("grade"):
                    cell.outputs = [_neutral(output) for output in cell.outputs]
        return nb, resources


def _mark_all_graded(nb, result: ExecutionResult):
    """No executed notebook came back (the whole notebook timed out or the worker failed): every test fails."""
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade"):
            cell.outputs = [error_output("NotExecuted", f"{result.status}: {result.detail}")]
    return nb


def _neutral(output):
    if output.get("output_type") == "stream" and output.get("name") == "stderr":
        output["name"] = "stdout"
    if output.get("output_type") == "execute_result":
        text = output.get("data", {}).get("text/plain", "")
        from nbformat.v4 import new_output

        return new_output("stream", name="stdout", text=f"Out: {text}\n")
    return output


class RedactHiddenTests(NbGraderPreprocessor):
    """Feedback shows a hidden-test cell only as its name, points and whether it passed."""

    def preprocess_cell(self, cell, resources, index):
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("grade") and conventions.BEGIN_HIDDEN in cell.source:
            failed = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
            verdict = f"failed ({failed[0].get('ename', 'error')})" if failed else "passed"
            cell.source = f"# Hidden tests '{meta.get('grade_id')}' ({meta.get('points', 0):g} points): {verdict}"
            from nbformat.v4 import new_output

            cell.outputs = [new_output("stream", name="stdout", text=f"Hidden tests {verdict}.\n")]
        return cell, resources


# --------------------------------------------------------------------------------------------------


def discover(submissions_dir: Path) -> list[tuple[str, str, Path]]:
    """``(student_id, assignment, folder)`` for every submission folder, sorted."""
    found = []
    for student in sorted(p for p in submissions_dir.iterdir() if p.is_dir() and not p.name.startswith(".")):
        for folder in sorted(p for p in student.iterdir() if p.is_dir() and not p.name.startswith(".")):
            found.append((student.name, folder.name, folder))
    return found


def _read_valid(path: Path):
    """The notebook at ``path``, or a short reason why it cannot be graded."""
    if path.stat().st_size == 0:
        return None, "the file is empty"
    try:
        nb = nbformat.read(str(path), as_version=4)
    except nbformat.reader.NotJSONError:
        return None, "the file is not valid JSON (damaged or truncated?)"
    except Exception as error:  # noqa: BLE001 - any unreadable file is an invalid notebook
        return None, f"unreadable: {type(error).__name__}"
    try:
        nbformat.validate(nb)
    except Exception as error:  # noqa: BLE001
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return None, f"not a valid notebook: {first[:100]}"
    return nb, ""


def _config(root: Path, db_path: Path):
    from nbconvert.preprocessors import ClearMetadataPreprocessor
    from nbgrader.preprocessors import (AssignLatePenalties, CheckCellMetadata, GetGrades, IgnorePattern,
                                        LimitOutput, SaveAutoGrades)
    from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor

    config = course_config(root, db_path)
    config.Autograde.autograde_preprocessors = [ReplayExecution, IgnorePattern, ClearMetadataPreprocessor,
                                                LimitOutput, SaveAutoGrades, AssignLatePenalties, CheckCellMetadata]
    config.GenerateFeedback.preprocessors = [GetGrades, RedactHiddenTests, CSSHTMLHeaderPreprocessor]
    return config


def _sanitise(nb, job: NotebookJob, config, db_url: str):
    from nbgrader.preprocessors import CheckCellMetadata, ClearOutput, DeduplicateIds, OverwriteCells, OverwriteKernelspec

    resources = {"nbgrader": {"student": job.student_id, "assignment": job.assignment, "notebook": job.notebook,
                              "db_url": db_url}, "metadata": {"path": str(job.submitted_path.parent)}}
    for cls in (ClearOutput, DeduplicateIds, OverwriteKernelspec, OverwriteCells, CheckCellMetadata):
        nb, resources = cls(config=config).preprocess(nb, resources)
    return nb


def _fingerprint(folder: Path, source_path: Path, limits: Limits) -> str:
    digest = hashlib.sha256(f"{GRADER_VERSION}|{limits}".encode())
    digest.update(source_path.read_bytes())
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _find_notebook(folder: Path, expected_name: str) -> tuple[Path | None, str]:
    """The submitted notebook: the expected name, or the only notebook in the folder (misnamed)."""
    expected = folder / expected_name
    if expected.exists():
        return expected, ""
    candidates = sorted(p for p in folder.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
    if len(candidates) == 1:
        return candidates[0], f"graded {candidates[0].relative_to(folder)} in place of {expected_name}"
    found = ", ".join(str(p.relative_to(folder)) for p in candidates) or "none"
    return None, f"no {expected_name} in the submission (notebooks found: {found})"


def _with_guard(nb):
    """The notebook to execute: a guard snapshot after the set-up cell, a restore call atop each test cell."""
    from nbformat.v4 import new_code_cell

    name = guard.guard_name()
    prepared = copy.deepcopy(nb)
    for cell in prepared.cells:
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade"):
            cell.source = guard.test_cell_prefix(name) + cell.source
    setup_index = next((i for i, c in enumerate(prepared.cells) if conventions.grade_id(c) == SETUP_GRADE_ID), -1)
    preamble = new_code_cell(guard.preamble_source(name), metadata={PREAMBLE_KEY: True})
    prepared.cells.insert(setup_index + 1, preamble)
    return prepared


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
    warnings.filterwarnings("ignore", module="nbgrader")  # SQLAlchemy chatter from nbgrader's gradebook
    warnings.filterwarnings("ignore", message=".*not in session.*")
    submissions_dir = Path(submissions_dir).resolve()
    out_dir = Path(out_dir).resolve()
    if not submissions_dir.is_dir():
        raise FileNotFoundError(f"no submissions folder at {submissions_dir}")
    root = out_dir / "course"
    db_path = out_dir / "gradebook.db"
    link_sources(root, solutions_dir)
    config = _config(root, db_path)
    api = make_api(config)
    db_url = f"sqlite:///{db_path}"
    state_path = out_dir / STATE_FILE
    state = json.loads(state_path.read_text()) if state_path.exists() else {}

    known = {a.name: a for a in conventions.assignments(solutions_dir)}
    rows: dict[tuple[str, str], GradeRow] = {}
    fingerprints: dict[tuple[str, str], str] = {}
    jobs: list[NotebookJob] = []
    generated: set[str] = set()

    for student_id, assignment_name, folder in discover(submissions_dir):
        key = (student_id, assignment_name)
        state_key = f"{student_id}/{assignment_name}"
        if assignment_name not in known:
            rows[key] = GradeRow(student_id, assignment_name, None, None, "unknown assignment",
                                 f"no assignment {assignment_name!r} in {solutions_dir.name}/")
            continue
        assignment = known[assignment_name]
        fingerprints[key] = _fingerprint(folder, assignment.source_path, limits)
        previous = state.get(state_key)
        selected = (students is None or student_id in students) and (assignments is None or assignment_name in assignments)
        if previous and (not selected or (not force and previous["fingerprint"] == fingerprints[key])):
            rows[key] = GradeRow.from_dict(previous["row"])
            fingerprints[key] = previous["fingerprint"]
            continue
        if not selected:
            continue
        if assignment_name not in generated:
            result = api.generate_assignment(assignment_name, force=True, create=True)
            if not result["success"]:
                raise RuntimeError(f"nbgrader generate_assignment failed:\n{result.get('log', '')}{result.get('error', '')}")
            generated.add(assignment_name)
        release = conventions.read_notebook(root / "release" / assignment_name / assignment.source_path.name)
        target = root / "submitted" / student_id / assignment_name
        if target.exists():
            shutil.rmtree(target)  # a re-run grades what is submitted now, nothing stale
        target.mkdir(parents=True)
        copy_submission_files(folder, target)
        row = rows[key] = GradeRow(student_id, assignment_name, None, None, "ok")
        notebook_path, note = _find_notebook(folder, assignment.source_path.name)
        if notebook_path is None:
            row.status, row.detail = "missing notebook", note
            continue
        nb, problem = _read_valid(notebook_path)
        if nb is None:
            row.status, row.detail = "invalid notebook", problem
            continue
        nb, notes = repair(nb, release)
        row.detail = "; ".join(([note] if note else []) + notes)
        row.flags = "; ".join(sorted({f for source in _answer_sources(nb, release) for f in flags_for(source)}))
        job = NotebookJob(student_id, assignment_name, assignment.notebook_name, target / assignment.source_path.name)
        nbformat.write(nb, str(job.submitted_path))
        try:
            job.prepared = _with_guard(_sanitise(copy.deepcopy(nb), job, config, db_url))
        except Exception as error:  # noqa: BLE001 - e.g. nbgrader metadata that fails its checks
            row.status, row.detail = "invalid notebook", f"{type(error).__name__}: {str(error)[:150]}"
            job.submitted_path.unlink()
            continue
        jobs.append(job)

    graded_now = {(job.student_id, job.assignment) for job in jobs}
    for key, row in rows.items():
        # Unreadable submissions graded this run: zero in the gradebook, no stale feedback.
        if key not in graded_now and row.status in UNREADABLE \
                and fingerprints.get(key) != state.get(f"{key[0]}/{key[1]}", {}).get("fingerprint"):
            _record_zero(db_url, key[1], key[0])
            shutil.rmtree(out_dir / "feedback" / key[0] / key[1], ignore_errors=True)

    def record(job: NotebookJob) -> None:
        """Phase 3 for one executed notebook (parent only): nbgrader scores it, then feedback."""
        row = rows[(job.student_id, job.assignment)]
        if job.result.status != "ok":
            row.status = job.result.status
            row.detail = "; ".join(x for x in (job.result.detail, row.detail) if x)
        _EXECUTED[(job.student_id, job.assignment, job.notebook)] = job.result
        try:
            result = api.autograde(job.assignment, job.student_id, force=True, create=True)
        finally:
            _EXECUTED.pop((job.student_id, job.assignment, job.notebook), None)
        if not result["success"]:
            row.status, row.detail = "grader error", _last_line(result)
            return
        feedback = api.generate_feedback(job.assignment, job.student_id, force=True)
        if feedback["success"]:
            source = root / "feedback" / job.student_id / job.assignment
            target = out_dir / "feedback" / job.student_id / job.assignment
            if target.exists():
                shutil.rmtree(target)
            shutil.copytree(source, target)

    hide = [out_dir, submissions_dir, Path(solutions_dir).resolve(), conventions.REPO_ROOT]
    _execute_all(jobs, submissions_dir, limits, workers, progress, hide, record)

    _fill_scores({k: r for k, r in rows.items() if k in graded_now or r.status in UNREADABLE}, db_url)
    for key, row in rows.items():
        if key in fingerprints:
            state[f"{key[0]}/{key[1]}"] = {"fingerprint": fingerprints[key], "row": row.as_dict()}
    state_path.parent.mkdir(parents=True, exist_ok=True)
    state_path.write_text(json.dumps(state, indent=1, sort_keys=True))
    ordered = [rows[key] for key in sorted(rows)]
    write_csv(ordered, out_dir / "grades.csv")
    return ordered


def _execute_all(jobs: list[NotebookJob], submissions_dir: Path, limits: Limits, workers: int, progress: bool,
                 hide: list[Path], record) -> None:
    """Run the notebooks ``workers`` at a time; record each in this thread as soon as it finishes.

    Recording (nbgrader's bookkeeping and the feedback page) overlaps with the notebooks still
    running, and only this thread ever touches the gradebook.
    """
    if not jobs:
        return
    from tqdm.auto import tqdm

    def run(job: NotebookJob) -> NotebookJob:
        job.result = run_isolated(job.prepared, submissions_dir / job.student_id / job.assignment, limits, hide)
        return job

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = [pool.submit(run, job) for job in jobs]
        bar = tqdm(total=len(futures), desc="grading", unit="notebook", disable=not progress, file=sys.stderr)
        for future in as_completed(futures):
            record(future.result())
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


def write_csv(rows: list[GradeRow], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        for row in rows:
            writer.writerow(row.as_dict())


def format_table(rows: list[GradeRow]) -> str:
    header = ["student_id", "assignment", "score", "status"]
    body = [[r.student_id, r.assignment,
             "-" if r.score is None else f"{r.score:g} / {r.max_score:g}",
             r.status + (f" ({r.detail})" if r.detail else "") + (f" [flagged: {r.flags}]" if r.flags else "")] for r in rows]
    widths = [max(len(str(x)) for x in column) for column in zip(header, *body)]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in body])
