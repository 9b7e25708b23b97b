"""Grading a class in shards on many machines, and merging the shards into one result.

``grade SUBMISSIONS --out OUT_i --shard I/K`` grades exactly the submissions whose stable hash of
``(student, assignment)`` falls in shard ``I`` of ``K`` (the same submission always lands in the same
shard, so a re-run of one shard skips what it graded before). Each shard's output folder is complete
on its own (CSV, gradebook, feedback) and ends with a ``shard.json`` marker written only after the
shard finished, so a task that died is told apart from one that succeeded.

``merge OUT_0 ... OUT_K-1 --out OUT`` checks that every shard ``0..K-1`` is there and finished, and
builds one output folder: one ``grades.csv``, one nbgrader gradebook made with nbgrader's own API (so
``nbgrader export`` and formgrader work on it), the feedback folders and nbgrader's course folders
together. It refuses to build a partial result unless told ``allow_missing``; it rebuilds ``OUT`` from
the shards every time, so merging twice gives the same folder.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from .planning import GRADER_VERSION, STATE_FILE
from .warnings_log import LOG_NAME, captured

MARKER = "shard.json"
MERGED_MARKER = "merged.json"


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count`` (0-based, like ``$SLURM_ARRAY_TASK_ID`` and ``$JOB_COMPLETION_INDEX``)."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> "Shard":
        """``"I/K"`` with ``0 <= I < K``; raises ``ValueError`` with the form expected."""
        index, sep, count = str(text).partition("/")
        try:
            shard = cls(int(index), int(count))
        except ValueError:
            raise ValueError(f"--shard takes I/K (e.g. 0/4), got {text!r}") from None
        if not sep or shard.count < 1 or not 0 <= shard.index < shard.count:
            raise ValueError(f"--shard I/K needs 0 <= I < K, got {text!r}")
        return shard

    def owns(self, student_id: str, assignment: str) -> bool:
        """Whether ``(student_id, assignment)`` belongs to this shard (SHA-256, stable across runs and machines)."""
        digest = hashlib.sha256(f"{student_id}\0{assignment}".encode("utf-8", "surrogateescape")).digest()
        return int.from_bytes(digest[:8], "big") % self.count == self.index

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def write_marker(out_dir: Path, shard: Shard, submissions: int) -> None:
    """Mark ``out_dir`` as a finished shard (written last, atomically)."""
    marker = {"index": shard.index, "count": shard.count, "submissions": submissions,
              "grader_version": GRADER_VERSION}
    partial = out_dir / (MARKER + ".part")
    partial.write_text(json.dumps(marker, indent=1))
    partial.replace(out_dir / MARKER)


def clear_marker(out_dir: Path) -> None:
    """A shard being (re)graded is not finished until it says so again."""
    (out_dir / MARKER).unlink(missing_ok=True)


class ShardsIncomplete(RuntimeError):
    """Some shards are missing or did not finish, and a partial merge was not allowed."""


@dataclass
class MergeReport:
    count: int
    merged: list[int]
    missing: list[int]          # indices with no finished output folder
    problems: list[str]         # folders that are not finished shards, with the reason
    rows: int
    warnings_line: str = ""     # where the Python warnings raised while merging were kept, if any

    def summary(self) -> str:
        lines = [f"merged {len(self.merged)} of {self.count} shards: {self.rows} submissions"]
        if self.missing:
            lines.append(f"missing or unfinished shards: {', '.join(map(str, self.missing))} "
                         f"(re-run them with --shard I/{self.count}, then merge again)")
        lines += [f"not a finished shard: {problem}" for problem in self.problems]
        lines += [self.warnings_line] if self.warnings_line else []
        return "\n".join(lines)


def read_shards(shard_dirs: list[Path], expect: int | None = None) -> tuple[dict[int, Path], int, list[str]]:
    """The finished shards by index, the shard count, and the folders that are not finished shards."""
    found: dict[int, Path] = {}
    problems: list[str] = []
    counts = {expect} if expect else set()
    for folder in map(Path, shard_dirs):
        marker = folder / MARKER
        try:
            data = json.loads(marker.read_text())
            index, count = int(data["index"]), int(data["count"])
        except FileNotFoundError:
            problems.append(f"{folder}: no {MARKER} (the shard did not finish, or this is not a shard's --out)")
            continue
        except (OSError, ValueError, KeyError, TypeError) as error:
            problems.append(f"{folder}: unreadable {MARKER} ({type(error).__name__})")
            continue
        if index in found:
            raise ShardsIncomplete(f"shard {index} given twice: {found[index]} and {folder}")
        counts.add(count)
        found[index] = folder
    if len(counts) > 1:
        raise ShardsIncomplete(f"the shards disagree on the number of shards: {sorted(counts)}")
    if not counts:
        raise ShardsIncomplete("no finished shard among the folders given:\n" + "\n".join(problems))
    return found, counts.pop(), problems


def merge(shard_dirs: list[Path], out_dir: Path, *, allow_missing: bool = False,
          expect: int | None = None) -> MergeReport:
    """Merge finished shard folders into ``out_dir`` (rebuilt from scratch; see the module docstring)."""
    found, count, problems = read_shards(shard_dirs, expect)
    missing = [index for index in range(count) if index not in found]
    report = MergeReport(count, sorted(found), missing, problems, 0)
    if (missing or problems) and not allow_missing:
        raise ShardsIncomplete(report.summary() + "\nNothing was merged (pass --allow-missing for a partial result).")
    out_dir = Path(out_dir).resolve()
    if any(folder.resolve() == out_dir for folder in found.values()):
        raise ShardsIncomplete(f"--out {out_dir} is one of the shards; merge into a new folder")
    with captured() as logged:   # nbgrader's SQLAlchemy warnings: into the log, not the terminal
        _check_against_gradebooks(found)
        building = out_dir.with_name(out_dir.name + ".merging")
        shutil.rmtree(building, ignore_errors=True)
        building.mkdir(parents=True)
        shards = [found[index] for index in sorted(found)]
        report.rows = _merge_csv(shards, building / "grades.csv")
        _merge_gradebooks(shards, building / "gradebook.db")
    report.warnings_line = logged.summary(out_dir / LOG_NAME if logged.write(building) else None)
    _merge_folders(shards, building)
    _merge_state(shards, building)
    (building / MERGED_MARKER).write_text(json.dumps(
        {"count": count, "merged": report.merged, "missing": missing}, indent=1))
    if out_dir.exists():
        shutil.rmtree(out_dir)
    building.rename(out_dir)
    return report


def _check_against_gradebooks(found: dict[int, Path]) -> None:
    """``ShardsIncomplete`` naming the first shard whose ``grades.csv`` disagrees with its gradebook, and where."""
    for index in sorted(found):
        disagreements = csv_against_gradebook(found[index])
        if disagreements:
            raise ShardsIncomplete(f"shard {index} ({found[index]}): its grades.csv disagrees with its gradebook: "
                                   + "; ".join(disagreements[:10]) + (f"; and {len(disagreements) - 10} more"
                                   if len(disagreements) > 10 else "") + ". Nothing was merged (grade that shard again).")


def csv_against_gradebook(folder: Path) -> list[str]:
    """Where a shard's ``grades.csv`` and its gradebook disagree, one ``student/assignment: ...`` each:
    a score (or maximum) that differs, a score the gradebook does not hold, a gradebook submission the
    CSV has no score for. Scores are compared as the CSV writes them."""
    from .report import GradeRow

    with open(folder / "grades.csv", newline="", encoding="utf-8") as handle:
        rows = {(r.student_id, r.assignment): r for r in map(GradeRow.from_dict, csv.DictReader(handle))}
    book = _gradebook_scores(folder / "gradebook.db")
    shown = lambda score, top: f"{score:g}/{top:g}"  # noqa: E731
    problems = []
    for key in sorted(set(rows) | set(book)):
        row, held = rows.get(key), book.get(key)
        in_csv = None if row is None or row.score is None else shown(row.score, row.max_score or 0)
        in_book = None if held is None else shown(*held)
        if in_csv != in_book:
            problems.append(f"{key[0]}/{key[1]}: grades.csv {in_csv or 'no score'}, gradebook {in_book or 'no submission'}")
    return problems


def _gradebook_scores(db: Path) -> dict:
    """(student, assignment) -> (score, max score) of every submission in an nbgrader gradebook (none if it is missing)."""
    if not db.exists():
        return {}
    from nbgrader.api import Gradebook

    from ..course.course_directory import put_scripts_on_path

    put_scripts_on_path()
    with Gradebook(f"sqlite:///{db}") as gradebook:
        return {(submission.student.id, assignment.name): (float(submission.score), float(submission.max_score))
                for assignment in gradebook.assignments for submission in assignment.submissions}


def _merge_csv(shards: list[Path], target: Path) -> int:
    from .report import GradeRow, write_csv

    rows: dict[tuple[str, str], GradeRow] = {}
    for folder in shards:
        with open(folder / "grades.csv", newline="", encoding="utf-8") as handle:
            for data in csv.DictReader(handle):
                row = GradeRow.from_dict(data)
                key = (row.student_id, row.assignment)
                if key in rows:
                    raise ShardsIncomplete(f"{key[0]}/{key[1]} was graded by two shards ({folder}); "
                                           "were they run with the same K?")
                rows[key] = row
    write_csv([rows[key] for key in sorted(rows)], target)
    return len(rows)


def _merge_gradebooks(shards: list[Path], target: Path) -> None:
    """One gradebook holding every shard's assignments, students, submissions, grades and comments."""
    from nbgrader.api import Gradebook

    from ..course.course_directory import put_scripts_on_path

    put_scripts_on_path()
    with Gradebook(f"sqlite:///{target}") as merged:
        for folder in shards:
            if not (folder / "gradebook.db").exists():
                continue
            with Gradebook(f"sqlite:///{folder / 'gradebook.db'}") as shard:
                for assignment in shard.assignments:
                    _copy_definition(assignment, merged)
                for student in shard.students:
                    merged.update_or_create_student(student.id, first_name=student.first_name,
                                                    last_name=student.last_name, email=student.email,
                                                    lms_user_id=student.lms_user_id)
                for assignment in shard.assignments:
                    for submission in assignment.submissions:
                        _copy_submission(submission, merged)


def _copy_definition(assignment, merged) -> None:
    """The assignment's notebooks and cells, as nbgrader recorded them from the source notebook."""
    merged.update_or_create_assignment(assignment.name, duedate=assignment.duedate)
    for notebook in assignment.notebooks:
        merged.update_or_create_notebook(notebook.name, assignment.name, kernelspec=notebook.kernelspec)
        for cell in notebook.grade_cells:
            merged.update_or_create_grade_cell(cell.name, notebook.name, assignment.name,
                                               max_score=cell.max_score, cell_type=cell.cell_type)
        for cell in notebook.task_cells:
            merged.update_or_create_task_cell(cell.name, notebook.name, assignment.name,
                                              max_score=cell.max_score, cell_type=cell.cell_type)
        for cell in notebook.solution_cells:
            merged.update_or_create_solution_cell(cell.name, notebook.name, assignment.name)
        for cell in notebook.source_cells:
            merged.update_or_create_source_cell(cell.name, notebook.name, assignment.name, cell_type=cell.cell_type,
                                                locked=cell.locked, source=cell.source, checksum=cell.checksum)


def _copy_submission(submission, merged) -> None:
    assignment, student = submission.assignment.name, submission.student.id
    merged.update_or_create_submission(assignment, student, timestamp=submission.timestamp,
                                       extension=submission.extension)
    for notebook in submission.notebooks:
        target = merged.find_submission_notebook(notebook.name, assignment, student)
        target.flagged = notebook.flagged
        target.late_submission_penalty = notebook.late_submission_penalty
        for grade in notebook.grades:
            copy = merged.find_grade(grade.name, notebook.name, assignment, student)
            copy.auto_score, copy.manual_score = grade.auto_score, grade.manual_score
            copy.extra_credit, copy.needs_manual_grade = grade.extra_credit, grade.needs_manual_grade
        for comment in notebook.comments:
            copy = merged.find_comment(comment.name, notebook.name, assignment, student)
            copy.auto_comment, copy.manual_comment = comment.auto_comment, comment.manual_comment
    merged.db.commit()


def _merge_folders(shards: list[Path], building: Path) -> None:
    """Feedback pages and nbgrader's course folders (what formgrader reads), side by side."""
    for folder in shards:
        for part in ("feedback", "course/submitted", "course/autograded", "course/feedback", "course/release"):
            if (folder / part).is_dir():
                shutil.copytree(folder / part, building / part, symlinks=True, dirs_exist_ok=True)
    source = shards[0] / "course" / "source"
    (building / "course").mkdir(exist_ok=True)
    if source.is_symlink():
        os.symlink(os.readlink(source), building / "course" / "source", target_is_directory=True)


def _merge_state(shards: list[Path], building: Path) -> None:
    """The shards' fingerprints together, so grading into the merged folder skips what is unchanged."""
    state: dict = {}
    for folder in shards:
        path = folder / STATE_FILE
        if path.exists():
            state.update(json.loads(path.read_text()))
    (building / STATE_FILE).write_text(json.dumps(state, indent=1, sort_keys=True))
