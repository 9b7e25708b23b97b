"""``python -m autograder report OUT``: what the class got wrong, from a graded output folder.

Reads what ``grade`` (or ``merge``) left in ``OUT``: ``grades.csv`` (statuses), the gradebook
(points of every test cell, through nbgrader's API) and the autograded notebooks
(``OUT/course/autograded/<student>/<assignment>/<notebook>.ipynb``: each failed test cell's output
holds the judge's message). Writes ``OUT/report.json`` (the numbers) and ``OUT/report.html`` (the
same, one self-contained page: ``class_report_page.py``):

* per assignment and exercise: the points distribution, the share of full, partial and zero marks,
  the median, and the exercises ordered by how many points the class lost;
* the failures grouped: the students whose failing tests of an exercise gave the same messages, once
  numbers and quoted names are taken out (``message_pattern``), form one group; a group whose
  messages are those a named mutant gives against the solution (``mutant_messages.py``) is labelled
  with that mistake (students whose messages are exactly a mutant's are set apart with its name, so
  two mistakes that read alike once numbers are gone are still told apart);
* the submissions that did not run cleanly (timeout, kernel died, invalid notebook, misplaced ...);
* per student: total, rank, what they missed, and their feedback pages (relative links).

Nothing in it depends on how the class was graded: a merge of shards gives the same report as one
machine. Text from students is made printable here (``clean_text`` line by line) and escaped by the page.
"""

from __future__ import annotations

import csv
import json
import re
import statistics
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path

from ..course import conventions
from ..judge.protocol import Status
from .mutant_messages import MutantFailure, error_message, mutant_failures
from .report import UNTOUCHED, GradeRow
from ..course.text import clean_text
from ..course.solution_source import load_solution

REPORT_JSON = "report.json"
REPORT_HTML = "report.html"
MAX_MESSAGE_CHARS = 1200
EXAMPLES = 2

_HEX = re.compile(r"\b0x[0-9a-fA-F]+\b")
_QUOTED_NAME = re.compile(r"(['\"`])[A-Za-z_][\w.]*\1")
_NUMBER = re.compile(r"(?<![A-Za-z_])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_NUMBER_RUN = re.compile(r"#(?:[\s,;:()\[\]]*#)*(?:\s*,)?")
_SPACES = re.compile(r"\s+")


def message_pattern(message: str, student_id: str = "") -> str:
    """The message with what varies between students taken out: numbers (a run of numbers, as in a
    printed tensor or shape, becomes one ``#``), quoted identifiers (``'x'``, ``"x"``, ```x```) and
    the student's own id."""
    text = _QUOTED_NAME.sub("'…'", _HEX.sub("#", message))
    if len(student_id) >= 3:   # a whole word only: the id "ada" is not taken out of "adam"
        text = re.sub(rf"(?<!\w){re.escape(student_id)}(?!\w)", "<student>", text)
    text = _NUMBER_RUN.sub("#", _NUMBER.sub("#", text))
    return _SPACES.sub(" ", text).strip()


def printable(message: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """A message as it is shown: each line made printable (``clean_text``), at most ``limit`` characters."""
    text = "\n".join(clean_text(line) for line in str(message).splitlines())
    return text if len(text) <= limit else text[:limit] + " …"


# The statuses of a submission whose answers ran: its points say what it got right. The others (unreadable,
# missing, untouched, the judge failing) are reported by status, apart from the shares and the mistakes.
TOOK_PART = (Status.OK, Status.TIMEOUT, Status.KERNEL_DIED, Status.MEMORY_LIMIT, Status.PROTOCOL_ERROR)


def took_part(row: GradeRow) -> bool:
    """Whether the submission's answers ran and were judged (not unreadable, missing, or untouched)."""
    return row.score is not None and row.status in TOOK_PART and not row.detail.startswith(UNTOUCHED)


@dataclass
class ExerciseCells:
    name: str
    cells: list[str]                                   # grade ids, in notebook order
    upstream: tuple = ()                               # earlier exercises its solution uses (conventions.exercise_dependencies)
    failures: dict = field(default_factory=dict)       # ((grade_id, pattern), ...) -> mutants failing so
    exact: dict = field(default_factory=dict)          # ((grade_id, message), ...) -> mutants failing exactly so


@dataclass
class Submission:
    row: GradeRow
    points: dict = field(default_factory=dict)         # grade_id -> (score, max_score)
    messages: dict = field(default_factory=dict)       # grade_id -> the judge's message of a failed cell
    feedback: list = field(default_factory=list)       # feedback pages, relative to OUT


def build_report(out_dir: Path, solutions_dir: Path | None = None, mutants_dir: Path | None = None,
                 with_mutants: bool = True) -> dict:
    """The report of ``out_dir`` as a JSON-ready dict (what ``report.json`` holds)."""
    out_dir = Path(out_dir)
    solutions_dir = Path(solutions_dir) if solutions_dir else course_solutions(out_dir)
    mutants_dir = Path(mutants_dir) if mutants_dir else solutions_dir.parent / "mutants"
    rows = read_rows(out_dir / "grades.csv")
    known = {a.name: a for a in conventions.assignments(solutions_dir)} if solutions_dir.is_dir() else {}
    submissions = read_submissions(out_dir, rows)
    assignments = []
    for name in sorted({s.row.assignment for s in submissions.values() if s.row.score is not None}):
        cells = exercise_cells(known.get(name), submissions, name)
        if with_mutants and name in known:
            label_failures(cells, mutant_failures(known[name], mutants_dir, out_dir, {e.name for e in cells}))
        assignments.append(assignment_section(name, cells, [s for s in submissions.values() if s.row.assignment == name]))
    return {"assignments": assignments, "hardest": hardest(assignments),
            "statuses": statuses(rows), "students": students(submissions, assignments)}


def course_solutions(out_dir: Path) -> Path:
    """The solutions the class was graded against: where ``OUT/course/source`` points, else this checkout's."""
    source = Path(out_dir) / "course" / "source"
    return source.resolve() if source.is_dir() else conventions.SOLUTIONS_DIR


def read_rows(path: Path) -> list[GradeRow]:
    with open(path, newline="", encoding="utf-8") as handle:
        return [GradeRow.from_dict(data) for data in csv.DictReader(handle)]


def read_submissions(out_dir: Path, rows: list[GradeRow]) -> dict:
    """Every row with its cells' points (gradebook), failed cells' messages (autograded notebook) and feedback pages."""
    found = {(r.student_id, r.assignment): Submission(r) for r in rows}
    _read_points(out_dir / "gradebook.db", found)
    for (student, assignment), submission in found.items():
        autograded = out_dir / "course" / "autograded" / student / assignment
        for notebook in sorted(autograded.glob("*.ipynb")) if autograded.is_dir() else []:
            submission.messages.update(failed_messages(notebook))
        folder = out_dir / "feedback" / student / assignment
        submission.feedback = sorted(p.relative_to(out_dir).as_posix() for p in folder.glob("*.html")) if folder.is_dir() else []
    return found


def _read_points(db_path: Path, found: dict) -> None:
    from nbgrader.api import Gradebook, MissingEntry

    from ..course.course_directory import put_scripts_on_path

    if not db_path.exists():
        return
    put_scripts_on_path()
    with Gradebook(f"sqlite:///{db_path}") as gradebook:
        for (student, assignment), submission in found.items():
            if submission.row.score is None:
                continue
            try:
                entry = gradebook.find_submission(assignment, student)
            except MissingEntry:
                continue
            for notebook in entry.notebooks:
                for grade in notebook.grades:
                    submission.points[grade.name] = (float(grade.score or 0), float(grade.max_score or 0))


def failed_messages(path: Path) -> dict[str, str]:
    """grade_id -> the message of each graded cell that failed, from an autograded notebook."""
    if not path.is_file():
        return {}
    try:
        nb = conventions.read_notebook(path)
    except Exception:  # noqa: BLE001 - an unreadable notebook only costs its messages
        return {}
    messages = {}
    for cell in nb.cells:
        if cell.cell_type == "code" and conventions.is_graded_cell(cell):
            message = error_message(cell.get("outputs"))
            if message is not None:
                messages[conventions.grade_id(cell)] = message
    return messages


def exercise_cells(assignment: conventions.Assignment | None, submissions: dict, name: str) -> list[ExerciseCells]:
    """The exercises of an assignment with their test cells: from its solution notebook, else from the
    test cells' names (``test_<exercise>``, ``test_<exercise>_hidden...``) in the gradebook."""
    if assignment is not None:
        nb = load_solution(assignment)
        upstream = conventions.exercise_dependencies(nb)
        return [ExerciseCells(e.name, [conventions.grade_id(nb.cells[i]) for i in e.test_indices], upstream[e.name])
                for e in conventions.exercises(nb) if e.test_indices]
    by_name: dict[str, list[str]] = {}
    for submission in submissions.values():
        if submission.row.assignment == name:
            for grade_id in submission.points:
                exercise = grade_id.removeprefix("test_").split("_hidden")[0]
                by_name.setdefault(exercise, [])
                if grade_id not in by_name[exercise]:
                    by_name[exercise].append(grade_id)
    return [ExerciseCells(exercise, sorted(cells, key=lambda c: ("_hidden" in c, c))) for exercise, cells in sorted(by_name.items())]


def signature(cells: list[str], messages: dict, student_id: str = "") -> tuple[tuple, tuple]:
    """How an exercise failed: ``(grade_id, pattern)`` and ``(grade_id, message)`` for each of ``cells``
    that failed with a message, in order (both empty when none did)."""
    failed = [grade_id for grade_id in cells if grade_id in messages]
    return (tuple((g, message_pattern(messages[g], student_id)) for g in failed),
            tuple((g, messages[g].strip()) for g in failed))


def label_failures(cells: list[ExerciseCells], mutants: list[MutantFailure]) -> None:
    """Each exercise learns how each of its mutants fails: the patterns and the exact messages of its
    failing tests (the keys a group of students is matched on)."""
    by_name = {e.name: e for e in cells}
    for mutant in mutants:
        exercise = by_name.get(mutant.exercise)
        patterns, exact = signature(exercise.cells, dict(mutant.failures)) if exercise else ((), ())
        if patterns:
            exercise.failures.setdefault(patterns, []).append(mutant)
            exercise.exact.setdefault(exact, []).append(mutant)


def assignment_section(name: str, cells: list[ExerciseCells], submissions: list[Submission]) -> dict:
    """One assignment: its exercises over the submissions that took part (``took_part``), the others by status."""
    graded = sorted((s for s in submissions if took_part(s.row)), key=lambda s: s.row.student_id)
    apart = sorted((s for s in submissions if s.row.score is not None and not took_part(s.row)), key=lambda s: s.row.student_id)
    by_name = {e.name: e for e in cells}
    exercises = [exercise_section(e, graded, by_name) for e in cells]
    exercises.sort(key=lambda e: (-e["lost"], e["name"]))
    return {"name": name, "students": len(graded), "max_score": sum(e["max_points"] for e in exercises),
            "median_score": _median([s.row.score for s in graded]), "exercises": exercises,
            "not_taking_part": [{"student": clean_text(s.row.student_id), "why": _why_apart(s.row)} for s in apart]}


def _why_apart(row: GradeRow) -> str:
    return "untouched" if row.detail.startswith(UNTOUCHED) and row.status in TOOK_PART else clean_text(row.status)


def passed(submission: Submission, exercise: ExerciseCells) -> bool:
    """Whether the submission earned every point of ``exercise``'s test cells."""
    return all(submission.points.get(c, (0.0, 0.0))[0] >= submission.points.get(c, (0.0, 0.0))[1] for c in exercise.cells)


def exercise_section(exercise: ExerciseCells, graded: list[Submission], by_name: dict | None = None) -> dict:
    """Points distribution, shares, median, points lost and the failure groups of one exercise."""
    maxima = {c: max((s.points[c][1] for s in graded if c in s.points), default=0.0) for c in exercise.cells}
    max_points = sum(maxima.values())
    points = {s.row.student_id: sum(s.points.get(c, (0.0, 0.0))[0] for c in exercise.cells) for s in graded}
    values = list(points.values())
    return {"name": exercise.name, "max_points": max_points, "students": len(values),
            "histogram": histogram(values, list(maxima.values())),
            "full": sum(v >= max_points for v in values), "zero": sum(v <= 0 < max_points for v in values),
            "partial": sum(0 < v < max_points for v in values), "median": _median(values),
            "lost": sum(max_points - v for v in values),
            "groups": failure_groups(exercise, [s for s in graded if points[s.row.student_id] < max_points], by_name or {})}


def histogram(values: list[float], cell_points: list[float]) -> list[list[float]]:
    """``[points, students]`` for every total one can earn (any set of the cells passed) and every total seen."""
    possible = {round(sum(c), 6) for k in range(len(cell_points) + 1) for c in combinations(cell_points, k)} \
        if len(cell_points) <= 8 else set()
    seen = {round(v, 6) for v in values}
    return [[value, sum(round(v, 6) == value for v in values)] for value in sorted(possible | seen)]


def failure_groups(exercise: ExerciseCells, lost: list[Submission], by_name: dict | None = None) -> list[dict]:
    """The students who lost points, grouped by the patterns of their failing tests' messages; a group
    is named by the mutants failing with the very same messages, else with the same patterns, but only
    where every earlier exercise this one uses (``exercise.upstream``) earned full points: a student whose
    ``LayerNorm`` is wrong made no mistake of the block's own, whatever its messages look like. Their
    group is named by the earlier parts that lost points instead."""
    groups: dict = {}
    for submission in lost:
        groups.setdefault(_group_key(exercise, submission, by_name or {}), []).append(submission)
    mutants_by_name = {m.mutant: m for mutants in exercise.exact.values() for m in mutants}
    found = [_failure_group(patterns, [] if upstream else
                            [mutants_by_name[name] for name in named] or exercise.failures.get(patterns, []), members, upstream)
             for (patterns, named, upstream), members in groups.items()]
    return sorted(found, key=lambda g: (-g["count"], g["test"], g["pattern"], g["mutants"], g["upstream"]))


def _group_key(exercise: ExerciseCells, submission: Submission, by_name: dict) -> tuple:
    """(patterns of the failing tests, mutants failing with exactly these messages, earlier exercises that
    lost points): the students with one key form one group."""
    patterns, exact = signature(exercise.cells, submission.messages, submission.row.student_id)
    upstream = tuple(u for u in exercise.upstream if u in by_name and not passed(submission, by_name[u]))
    named = tuple(m.mutant for m in exercise.exact.get(exact, [])) if patterns and not upstream else ()
    return patterns or (("", no_message(submission.row)),), named, upstream


def _failure_group(patterns: tuple, mutants: list, members: list[Submission], upstream: tuple = ()) -> dict:
    """One group of ``failure_groups``: its first failing test and pattern, the mutants that name it (none
    where an earlier part it uses lost points: ``upstream`` names those), its students."""
    grade_id, pattern = patterns[0]
    mistake = " / ".join(sorted({m.mistake.rstrip(".") for m in mutants})) or None
    if upstream:
        mistake = f"an earlier exercise it uses lost points: {', '.join(upstream)}"
    return {"test": grade_id, "pattern": pattern, "tests": [g for g, _ in patterns if g], "count": len(members),
            "mistake": mistake, "upstream": list(upstream),
            "mutants": sorted(m.mutant for m in mutants),
            "message": printable(members[0].messages[grade_id] if grade_id else pattern),
            "examples": [clean_text(m.row.student_id) for m in members[:EXAMPLES]],
            "students": [clean_text(m.row.student_id) for m in members]}


def no_message(row: GradeRow) -> str:
    """What stands for the message of a submission that lost points without a failed test's message:
    its status (an unreadable or missing notebook: no test ran), else points set by hand."""
    if row.status != "ok":
        return f"({clean_text(row.status)}: no test ran)"
    return "(no failed test's message: points set by hand?)"


def hardest(assignments: list[dict]) -> list[dict]:
    """Every exercise of the course, the largest share of the points lost first (what the figure plots:
    assignments taken by different numbers of students compare by share, not by points)."""
    every = [{"assignment": a["name"], "exercise": e["name"], "lost": e["lost"], "max_points": e["max_points"],
              "students": e["students"], "share_lost": share_lost(e)} for a in assignments for e in a["exercises"]]
    return sorted(every, key=lambda e: (-e["share_lost"], -e["lost"], e["assignment"], e["exercise"]))


def share_lost(exercise: dict) -> float:
    """The fraction of the points the students who took part could earn on ``exercise`` that they lost."""
    possible = exercise["max_points"] * exercise["students"]
    return exercise["lost"] / possible if possible else 0.0


def statuses(rows: list[GradeRow]) -> list[dict]:
    """Each status other than ``ok`` with the submissions concerned."""
    by_status: dict[str, list[dict]] = {}
    for row in rows:
        if row.status != "ok":
            by_status.setdefault(clean_text(row.status), []).append(
                {"student": clean_text(row.student_id), "assignment": clean_text(row.assignment),
                 "detail": printable(row.detail, 400)})
    return [{"status": status, "count": len(items), "submissions": items} for status, items in sorted(by_status.items())]


def students(submissions: dict, assignments: list[dict]) -> list[dict]:
    """Per student: total, rank (1 is the highest total; ties share a rank), what they missed, their pages."""
    missed: dict[str, list[dict]] = {}
    for section in assignments:
        for exercise in section["exercises"]:
            for group in exercise["groups"]:
                for student in group["students"]:
                    missed.setdefault(student, []).append(
                        {"assignment": section["name"], "exercise": exercise["name"],
                         "what": group["mistake"] or (group["message"].splitlines() or [""])[0][:200]})
    people: dict[str, dict] = {}
    for (student, _), submission in sorted(submissions.items()):
        row = submission.row
        if not student:
            continue   # a notebook in no student's folder: under statuses only
        person = people.setdefault(clean_text(student), {"student": clean_text(student), "total": 0.0, "max_score": 0.0,
                                                         "submissions": [], "missed": missed.get(clean_text(student), [])})
        person["total"] += row.score or 0.0
        person["max_score"] += row.max_score or 0.0
        person["submissions"].append({"assignment": clean_text(row.assignment), "score": row.score,
                                      "max_score": row.max_score, "status": clean_text(row.status),
                                      "feedback": submission.feedback})
    ranked = sorted(people.values(), key=lambda p: (-p["total"], p["student"]))
    for person in ranked:
        person["rank"] = 1 + sum(other["total"] > person["total"] for other in ranked)
    return ranked


def _median(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def write_report(out_dir: Path, solutions_dir: Path | None = None, mutants_dir: Path | None = None,
                 with_mutants: bool = True) -> tuple[Path, Path]:
    """Write ``OUT/report.json`` and ``OUT/report.html``; return their paths."""
    from .class_report_page import render_page

    out_dir = Path(out_dir)
    data = build_report(out_dir, solutions_dir, mutants_dir, with_mutants)
    json_path, html_path = out_dir / REPORT_JSON, out_dir / REPORT_HTML
    json_path.write_text(json.dumps(data, indent=1, ensure_ascii=False), encoding="utf-8")
    html_path.write_text(render_page(data), encoding="utf-8")
    return html_path, json_path
