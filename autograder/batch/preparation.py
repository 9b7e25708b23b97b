"""A submission on its way through the grading stages (``Job``), and the two stages that make it ready
for its judge: **repair** (``repair_submission``: odd metadata and outputs dropped, the release
skeleton with the student's answers, over-long notes shortened) and **prepare** (``prepare_job``:
nbgrader's preprocessors put the course's test cells back, hidden tests included; the judge's job
lists which cells run in the student's process), with the flags of the student's code
(``flag_sources``, parsed here, in the grader's process, within a budget)."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from ..course import contracts, conventions
from ..course.setup_cell import SETUP_GRADE_ID
from ..judge.protocol import JudgeJob, JudgeResult
from ..sandbox.limits import Limits
from .flags import MAX_SCANNED_CHARS, flags_for
from .repair import repair
from .report import GradeRow
from .tampering import TAMPERING, tampering_for

MAX_FLAGGED_CHARS = 1_000_000                   # answer code parsed for flags, per submission
MAX_EXTRA_MARKDOWN_CHARS = 200_000


# Flags saying code was not read in full (``flags_for``, ``flag_sources``): it may hide a reach into the grader.
UNREAD = ("code cell too long to scan", "code too long to scan in full", "code the grader could not parse")


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


def normalise(nb) -> list[str]:
    """Fix what is valid nbformat but would break grading: odd metadata, outputs, huge extra text (in place)."""
    notes = []
    bad_meta = 0
    for cell in nb.cells:
        meta = cell.get("metadata")
        if not isinstance(meta, dict):
            cell["metadata"] = meta = nbformat.NotebookNode()
            bad_meta += 1
        if "nbgrader" in meta and (not isinstance(meta["nbgrader"], dict)
                                   or not isinstance(meta["nbgrader"].get("grade_id", ""), str)):
            del meta["nbgrader"]   # not nbgrader's: a release cell's grade id is text
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
    references, upstream, exercise_of = conventions.reference_answers(source_nb)   # the judge's second pass
    job.judge_job = JudgeJob(cells, run_indices, answers, labels, conventions.exercise_names(source_nb), limits,
                             str(files_dir) if files_dir else None, [str(p) for p in hide], _tampering(job.row.flags),
                             references, upstream, exercise_of, contracts.for_judge(job.assignment))


def _tampering(flags: str) -> str:
    """The flags that make the runner's reports of unchanged inputs unbelievable, for the judge: a reach
    into the grader's machinery (``autograder.batch.tampering``), or code not read in full (it may hide one)."""
    return "; ".join(flag for flag in (flags or "").split("; ") if flag.startswith((TAMPERING + ": ",) + UNREAD))


def answer_sources(nb, release) -> list[str]:
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
            found.update(flags_for(source) + tampering_for(source))
        except Exception:  # noqa: BLE001 - a flag is advice; never a reason to stop
            found.add("code the grader could not parse")
    return "; ".join(sorted(found))
