"""What a run of ``grade`` does with each submission found: grade it now, keep its result from the last
run into the same OUT (its files, solution notebook and limits unchanged: ``OUT/grading_state.json``
holds their fingerprints), or report it as it is (a misplaced notebook, an invalid name, an unknown
assignment)."""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from ..judge.protocol import Status
from ..sandbox.limits import Limits
from .folder_names import name_problem, shown_name
from .intake import MAX_NOTEBOOK_BYTES, Found
from .submission_files import MAX_SUBMISSION_FILES, MAX_SUBMISSION_FILES_BYTES, FolderProblem, walk
from .report import GradeRow

STATE_FILE = "grading_state.json"
GRADER_VERSION = "6"  # bump when a change to the grader should regrade unchanged submissions


def _fingerprint(found: "Found", source_path: Path, limits: Limits) -> str:
    """What decides whether a submission must be graded again: its files (sizes read with ``lstat``;
    contents hashed in chunks, up to the size the runner would get), the solution and the limits."""
    digest = hashlib.sha256(f"{GRADER_VERSION}|{limits}".encode())
    digest.update(source_path.read_bytes())
    paths = [found.notebook] if found.notebook is not None else _files(found.folder, digest)
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


def _files(folder: Path, digest) -> list[Path]:
    """The files under ``folder`` (links and special files included), up to one past ``MAX_SUBMISSION_FILES``;
    a folder past the walk's bounds adds its reason to ``digest`` (so the same folder keeps its fingerprint)."""
    paths: list[Path] = []
    try:
        for parent, _, files in walk(folder):
            paths.extend(parent / f for f in files)
            if len(paths) > MAX_SUBMISSION_FILES:
                break
    except FolderProblem as problem:
        digest.update(f"|{problem.detail}".encode())
    return paths


@dataclass
class Plan:
    rows: dict          # (student, assignment) -> GradeRow: every row of the CSV
    fingerprints: dict  # (student, assignment) -> fingerprint of what was graded
    todo: list          # (Found, Assignment, GradeRow) to grade in this run


def load_state(state_path: Path) -> dict:
    try:
        return json.loads(state_path.read_text(encoding="utf-8")) if state_path.exists() else {}
    except (OSError, ValueError):
        return {}  # a damaged state file only costs a regrade


def plan_run(found, misplaced, known, state, limits, solutions_dir, students, assignments, force, shard) -> Plan:
    """Which submissions to grade now; the rows of the others (kept from the last run, or final as they are)."""
    rows = {(r.student_id, r.assignment): r for r in misplaced}
    if shard is not None:
        rows = {key: row for key, row in rows.items() if shard.owns(*key)}   # each misplaced row in one shard
    plan = Plan(rows, {}, [])
    for entry in found:
        key = (entry.student_id, entry.assignment)
        if shard is not None and not shard.owns(*key):
            continue
        problem = name_problem(entry.student_id) or name_problem(entry.assignment)
        if problem:   # the names escaped, so that the row never looks like another student's
            rows[key] = GradeRow(shown_name(key[0]), shown_name(key[1]), None, None, Status.INVALID_NAME, problem)
        elif entry.assignment not in known:
            rows[key] = GradeRow(*key, None, None, Status.UNKNOWN_ASSIGNMENT,
                                 "; ".join([f"no assignment {entry.assignment!r} in {solutions_dir.name}/"] + entry.notes))
        elif not _kept_from_last_run(plan, entry, known[entry.assignment], state, limits, students, assignments, force):
            row = rows[key] = GradeRow(*key, None, None, Status.OK)
            plan.todo.append((entry, known[entry.assignment], row))
    return plan


def _kept_from_last_run(plan: Plan, entry, assignment, state, limits, students, assignments, force) -> bool:
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
