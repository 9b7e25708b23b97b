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

Each submission goes through these stages (``planning`` decides which run; ``preparation`` holds the
repair and the judge's job), each isolated so that one submission can never stop the batch (any
failure becomes that submission's status):

``discover`` (``intake``: every notebook found gets a row; misplaced ones graded where their name
names the assignment, or reported) -> ``read_submission`` (``intake``) -> ``repair_submission`` ->
``prepare_job`` -> ``run_judge`` (the judge runs the graded tests outside the student's process;
``autograder.judge``) -> ``record`` (``gradebook``: nbgrader scores the cells the judge produced and
writes the gradebook) -> ``write_feedback`` (``gradebook``); the rows, CSV and table are ``report``'s.

Only this process opens the gradebook; only the judge decides a test; only the sandboxed runner
runs student code. Nothing a student controls can stop the batch: names are bytes until shown (then
escaped, control characters removed), sizes are read with ``lstat`` before anything is read, the files
beside a notebook are capped (``MAX_SUBMISSION_FILES_BYTES``), outputs are capped per notebook (in the
judge) and the judge's reply per submission (``MAX_JUDGE_RESULT_BYTES``), and flagging parses a
bounded amount of code.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from ..course import conventions
from ..course.course_directory import link_sources, make_api, put_scripts_on_path
from ..course.text import clean_text
from ..judge.client import MAX_JUDGE_RESULT_BYTES, JudgesAhead, discard, run_judge, verify_result  # noqa: F401
from ..judge.protocol import AHEAD_PREFIX, JUDGE_STATUSES, UNREADABLE, JudgeResult, RunnerSpec, Status
from ..sandbox import cgroups
from ..sandbox.bubblewrap import use_bwrap
from ..sandbox.confinement import check_runner_starts
from ..sandbox.limits import Limits
from ..sandbox.memory_watch import workers_within
from .gradebook import escape_student_markdown, fill_scores, nbgrader_config, record, record_zero, unreadable_page, write_feedback
from .intake import (Found, NoSubmissions, Unreadable, cells_compared_with_release, discover, no_submissions_message,
                     read_submission, stage_files)
from .planning import STATE_FILE, Plan, load_state, plan_run
from .preparation import Job, answer_sources, flag_sources, prepare_job, repair_submission
from .report import UNTOUCHED, GradeRow, write_csv
from .shards import Shard, clear_marker, write_marker
from ..course.solution_source import load_solution
from .stage_times import add as add_stage_time, stage
from .warnings_log import captured

STATUSES = JUDGE_STATUSES   # what a judge may report


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
    owners: dict = field(default_factory=dict)     # the course's notebook file names -> their assignments


def grade(submissions_dir: Path, out_dir: Path, *, workers: int = 1, limits: Limits = Limits(),
          solutions_dir: Path = conventions.SOLUTIONS_DIR, progress: bool = True,
          students: set[str] | None = None, assignments: set[str] | None = None,
          force: bool = False, shard: Shard | None = None, judges_ahead: bool = True,
          host_memory_mb: int | None = None) -> list[GradeRow]:
    """Grade the submissions under ``submissions_dir``; write the CSV and feedback under ``out_dir``
    (and ``warnings.log`` there when nbgrader or its libraries raised Python warnings).

    ``students``/``assignments`` limit the run to some submissions (the others keep their earlier
    results). A submission whose files, solution notebook and limits are unchanged since the last
    run in the same ``out_dir`` is not graded again unless ``force``. ``shard`` grades only the
    submissions that shard owns (``autograder/batch/shards.py``) and marks ``out_dir`` finished at the end.
    ``judges_ahead``: start each worker's next judge and runner while it grades a notebook
    (``JudgesAhead``; off, each starts when its job comes, as the benchmark compares).
    ``host_memory_mb``: what all notebooks graded at once may hold together (default 80% of the host's
    memory); fewer than ``workers`` run at once when their bounds would add up to more, and a line on
    standard error says so (``memory_watch.workers_within``).
    Raises ``NoSubmissions`` (writing nothing) when no folder is laid out as
    ``<student>/<assignment>/<notebook>.ipynb``.

    The stages: plan (what to grade, what to keep, what to report as it is) -> release notebooks (once
    per assignment) -> prepare (read, repair, the judge's job) -> judge and record (nbgrader scores
    the judged cells; feedback pages) -> report (scores, CSV, state).
    """
    with captured() as logged:   # nbgrader's warnings (SQLAlchemy's) go to OUT/warnings.log, not the terminal
        ordered = _grade(submissions_dir, out_dir, workers, limits, solutions_dir, progress, students, assignments,
                         force, shard, judges_ahead, host_memory_mb)
    logged.write(Path(out_dir).resolve())
    return ordered


def _grade(submissions_dir, out_dir, workers, limits, solutions_dir, progress, students, assignments, force, shard,
           judges_ahead, host_memory_mb) -> list[GradeRow]:
    put_scripts_on_path()  # nbgrader opens gradebooks with the `alembic` command (venv not activated)
    submissions_dir, out_dir = Path(submissions_dir).resolve(), Path(out_dir).resolve()
    known, found, misplaced = _find_submissions(submissions_dir, Path(solutions_dir))
    hide = [out_dir, submissions_dir, Path(solutions_dir).resolve(), conventions.REPO_ROOT]
    workers, note = workers_within(workers, host_memory_mb, limits.memory_mb, use_bwrap(limits))  # bwrap refused now
    if note:
        print(f"grade: {note}", file=sys.stderr)
    check_runner_starts(limits, hide)  # likewise: a broken machine stops here, before any grade is written
    course = _open_course(out_dir, Path(solutions_dir), hide)
    course.owners = {a.source_path.name: a.name for a in known.values()}
    state_path = out_dir / STATE_FILE
    state = load_state(state_path)
    if shard is not None:
        clear_marker(out_dir)
    plan = plan_run(found, misplaced, known, state, limits, Path(solutions_dir), students, assignments, force, shard)
    _release(plan, course)
    jobs = [job for job in (_prepare(entry, assignment, row, course, limits) for entry, assignment, row in plan.todo) if job]
    graded_now = {(job.student_id, job.assignment.name) for job in jobs}
    _zero_unreadable(plan, state, graded_now, known, course, out_dir)
    try:
        _run_all(jobs, limits, workers, progress, lambda job: _finish(job, course, out_dir), judges_ahead)
    finally:
        cgroups.reap_stale()    # the control groups of any judge killed before it removed its runner's
    shutil.rmtree(course.staging, ignore_errors=True)
    ordered = _report(plan, graded_now, state, state_path, course.db_url, out_dir)
    if shard is not None:
        write_marker(out_dir, shard, len(ordered))
    return ordered


def _find_submissions(submissions_dir: Path, solutions_dir: Path) -> tuple[dict, list[Found], list[GradeRow]]:
    """The course's assignments by name, the submissions found and the misplaced-notebook rows;
    ``FileNotFoundError`` or ``NoSubmissions`` (nothing written) when there is nothing to grade."""
    if not submissions_dir.is_dir():
        raise FileNotFoundError(f"no submissions folder at {submissions_dir}")
    known = {a.name: a for a in conventions.assignments(solutions_dir)}
    found, misplaced = discover(submissions_dir, known)
    if not any(entry.assignment in known for entry in found):
        raise NoSubmissions(no_submissions_message(submissions_dir, known))
    return known, found, misplaced


def _open_course(out_dir: Path, solutions_dir: Path, hide: list[Path]) -> _Course:
    root = out_dir / "course"
    db_path = out_dir / "gradebook.db"
    link_sources(root, solutions_dir)
    config = nbgrader_config(root, db_path)
    staging = root / "staging"
    shutil.rmtree(staging, ignore_errors=True)
    return _Course(root, config, make_api(config), f"sqlite:///{db_path}", staging, hide)


def _release(plan: Plan, course: _Course) -> None:
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
            course.sources[assignment.name] = load_solution(assignment)
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
    nb, notes = read_submission(entry.folder, assignment, release, entry.notebook, course.owners)
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
    if cells_compared_with_release(nb, release) == "untouched":
        notes.insert(0, UNTOUCHED)
    nb, repaired = repair_submission(nb, release)
    escaped = escape_student_markdown(nb, course.release_text[assignment.name])
    if escaped:
        repaired.append(f"{escaped} text cell(s) of the student's shown as plain text")
    job.row.detail = "; ".join(notes + repaired)
    job.row.flags = flag_sources(answer_sources(nb, release))
    job.submitted_path = target / assignment.source_path.name
    nbformat.write(nb, str(job.submitted_path))
    return nb


def _zero_unreadable(plan: Plan, state: dict, graded_now: set, known: dict, course: _Course, out_dir: Path) -> None:
    """Unreadable submissions graded this run: zero in the gradebook, a short feedback page."""
    for key, row in plan.rows.items():
        if key in graded_now or row.status not in UNREADABLE or key[1] not in known \
                or plan.fingerprints.get(key) == state.get(f"{key[0]}/{key[1]}", {}).get("fingerprint"):
            continue   # (a student's folder that could not be looked through has no assignment: no page)
        try:
            record_zero(course.db_url, key[1], key[0])
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


def _report(plan: Plan, graded_now: set, state: dict, state_path: Path, db_url: str, out_dir: Path) -> list[GradeRow]:
    """Scores from the gradebook, the CSV, then the state the next run starts from."""
    start = time.perf_counter()
    rows = plan.rows
    try:
        fill_scores({k: r for k, r in rows.items() if k in graded_now or r.status in UNREADABLE}, db_url)
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


def _run_all(jobs: list[Job], limits: Limits, workers: int, progress: bool, finish, ahead_on: bool = True) -> None:
    """Judge ``workers`` notebooks at a time, each judge started one notebook ahead (``JudgesAhead``);
    record each here as soon as its judge is done."""
    if not jobs:
        return
    from tqdm.auto import tqdm

    ahead = JudgesAhead(RunnerSpec(limits, list(jobs[0].judge_job.hide)), len(jobs), max(1, workers) if ahead_on else 0)
    try:
        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            futures = {pool.submit(_judge_one, job, limits, ahead): job for job in jobs}
            bar = tqdm(total=len(futures), desc="grading", unit="notebook", disable=not progress, file=sys.stderr)
            try:
                for future in as_completed(futures):
                    try:
                        job = future.result()
                    except BaseException as error:  # noqa: BLE001 - the thread itself failed
                        job = futures[future]
                        job.result = JudgeResult.failed(f"the judge did not run: {type(error).__name__}")
                    finish(job)
                    bar.update(1)
            finally:
                bar.close()
    finally:
        ahead.close()   # once every judge handed out has ended: the batch's temporary folder goes too


def _judge_one(job: Job, limits: Limits, ahead: JudgesAhead) -> Job:
    """One notebook through its judge (one started ahead, when there is one); the judge's timings added
    to the stage times: work done ahead of the job apart, the rest adding up to the time it took."""
    judge = ahead.take()
    try:
        start = time.perf_counter()
        job.result = run_judge(job.judge_job, limits, judge=judge)
        elapsed = time.perf_counter() - start
        for name, seconds in job.result.timings.items():
            add_stage_time(f"judge: {name}", seconds)
        on_the_clock = sum(s for name, s in job.result.timings.items() if not name.startswith(AHEAD_PREFIX))
        add_stage_time("judge: process start, imports and result transfer", elapsed - on_the_clock)
    except Exception as error:  # noqa: BLE001 - e.g. no process left to start the judge with
        discard(judge)
        job.result = JudgeResult.failed(f"the grader could not run this notebook's judge: "
                                        f"{type(error).__name__}: {clean_text(error)[:150]}")
    return job


