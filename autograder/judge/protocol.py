"""The words the grader's processes and its outputs share.

``Status`` is the status of one graded notebook: the judge's result carries one of the first six, the
batch grader adds the rest for submissions that never reach a judge or that the grader itself failed
on. The values are the strings of the CSV's ``status`` column, the README and the feedback pages; a
``Status`` compares equal to its string and is written as it (``StrEnum``).

The messages between processes are typed here too, each with its own checks on the way in:
``JudgeJob`` (grader -> judge) and ``JudgeResult`` (judge -> grader, sealed with ``seal``/``unseal``),
``SelfGradeJob`` and ``TestVerdict`` (a student's kernel <-> the attached judge). The calls between
the judge and the student's process are ``autograder.sandbox.kernel_agent``'s, their values ``autograder.judge.wire``'s.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from dataclasses import asdict, dataclass, field
from enum import StrEnum

from ..sandbox.limits import Limits


class Status(StrEnum):
    # Results of judging a notebook (autograder/judge/):
    OK = "ok"
    TIMEOUT = "timeout"
    KERNEL_DIED = "kernel died"
    MEMORY_LIMIT = "memory limit"
    PROTOCOL_ERROR = "protocol error"
    ERROR = "error"
    # Submissions that never ran, and the grader's own failures (autograder/batch/grading.py):
    INVALID_NOTEBOOK = "invalid notebook"
    INVALID_SUBMISSION = "invalid submission"
    MISSING_NOTEBOOK = "missing notebook"
    MISPLACED_NOTEBOOK = "misplaced notebook"
    INVALID_NAME = "invalid name"
    UNKNOWN_ASSIGNMENT = "unknown assignment"
    GRADER_ERROR = "grader error"


JUDGE_STATUSES = (Status.OK, Status.TIMEOUT, Status.KERNEL_DIED, Status.MEMORY_LIMIT, Status.PROTOCOL_ERROR, Status.ERROR)
UNREADABLE = (Status.INVALID_NOTEBOOK, Status.INVALID_SUBMISSION, Status.MISSING_NOTEBOOK)   # submissions that never run


# --------------------------------------------------------------------------------------------------
# Output caps: what one cell's outputs may hold, applied where they are made (the runner) and again
# where they are believed (the judge), from these numbers only.

MAX_CELL_TEXT_CHARS = 20_000      # printed text of one cell (or one test cell in the judge)
MAX_CELL_IMAGES = 5               # figures kept per cell
MAX_IMAGE_CHARS = 400_000         # one figure, as base64 PNG text
MAX_ERROR_MESSAGE_CHARS = 2_000   # an exception's message from the student's code
MAX_TEST_MESSAGE_CHARS = 4_000    # a failed test's message (the judge's own words and values)


# --------------------------------------------------------------------------------------------------
# The batch judge: one job in (grader -> judge, on its standard input), one sealed result out


class ProtocolError(ValueError):
    """A message that is not what the protocol says: malformed, mistyped, or not authentic."""


def _require(condition: bool, what: str) -> None:
    if not condition:
        raise ProtocolError(what)


def _int_list(value, what: str) -> list[int]:
    _require(type(value) is list and all(type(v) is int for v in value), f"{what} must be a list of integers")
    return list(value)


def _str_list(value, what: str) -> list[str]:
    _require(type(value) is list and all(type(v) is str for v in value), f"{what} must be a list of strings")
    return list(value)


def _str_map(value, what: str) -> dict:
    _require(type(value) is dict and all(type(v) is str for v in value.values()), f"{what} must map to strings")
    return dict(value)


def _contracts(value) -> dict:
    _require(type(value) is dict and all(type(c) is dict and type(c.get("returns")) is str for c in value.values()),
             "contracts must map names to objects with a declared return type")
    return {name: {"returns": c["returns"], "views": _str_list(c.get("views", []), "views")} for name, c in value.items()}


def _upstream(value) -> dict:
    _require(type(value) is dict, "upstream must be an object")
    return {name: _str_list(used, "upstream's lists") for name, used in value.items()}


def _limits(value) -> Limits:
    _require(type(value) is dict, "limits must be an object")
    try:
        return Limits(**value)
    except (TypeError, ValueError) as error:   # an unknown field, or a value that could never grade
        raise ProtocolError(f"limits: {error}") from None


@dataclass(frozen=True)
class RunnerSpec:
    """What a runner started ahead of its job needs (``python -m autograder.judge --ahead``, first line
    of its standard input): the run's limits and the paths hidden from it. The job that follows must
    name the same, or the judge starts a fresh runner for it."""

    limits: Limits
    hide: list

    def to_line(self) -> bytes:
        return json.dumps({"limits": asdict(self.limits), "hide": self.hide}).encode("utf-8") + b"\n"

    @classmethod
    def from_line(cls, line: str | bytes) -> "RunnerSpec":
        try:
            data = json.loads(line)
        except ValueError:
            raise ProtocolError("a runner spec must be one line of JSON") from None
        _require(type(data) is dict, "a runner spec must be an object")
        return cls(_limits(data.get("limits")), _str_list(data.get("hide", []), "hide"))


def nbgrader_meta(cell: dict) -> dict:
    """A job cell's nbgrader metadata (``{}`` where it has none, or none of the right type)."""
    meta = cell.get("metadata", {}).get("nbgrader", {}) if type(cell.get("metadata")) is dict else {}
    return meta if type(meta) is dict else {}


@dataclass(frozen=True)
class JudgeJob:
    """What the judge needs to grade one notebook (``autograder.batch.preparation.prepare_job`` builds it).

    ``cells`` are the sanitised notebook's cells as ``{"cell_type", "source", "metadata"}``; the judge
    runs ``run_indices`` in the runner (``answer_cells`` among them: trouble there sets the status),
    labels them in messages with ``cell_labels`` (index as a string -> words), binds ``names`` to
    handles in each graded cell, copies ``submission_dir`` (if any) for the runner, and hides ``hide``
    from it. ``references`` (exercise -> the course's code, for exercises a later one uses), ``upstream``
    (exercise -> the earlier exercises its solution uses) and ``exercise_of`` (grade id -> exercise) are
    for the second pass (``judge.second_pass``); they hold solution code, so a job never reaches a student.
    ``contracts`` (name -> ``{"returns", "views"}``, ``course.contracts.for_judge``) is checked on every hidden call.
    """

    cells: list
    run_indices: list
    answer_cells: list
    cell_labels: dict
    names: list
    limits: Limits
    submission_dir: str | None = None
    hide: list = field(default_factory=list)
    untrusted_reports: str = ""   # why the runner's change reports cannot be believed (``tampering``), or ""
    references: dict = field(default_factory=dict)
    upstream: dict = field(default_factory=dict)
    exercise_of: dict = field(default_factory=dict)
    contracts: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"cells": self.cells, "run_indices": self.run_indices, "answer_cells": self.answer_cells,
                "cell_labels": self.cell_labels, "names": self.names, "limits": asdict(self.limits),
                "submission_dir": self.submission_dir, "hide": self.hide, "untrusted_reports": self.untrusted_reports,
                "references": self.references, "upstream": self.upstream, "exercise_of": self.exercise_of,
                "contracts": self.contracts}

    @classmethod
    def from_dict(cls, data) -> "JudgeJob":
        _require(type(data) is dict, "a job must be an object")
        cells = data.get("cells")
        _require(type(cells) is list and all(type(c) is dict for c in cells), "cells must be a list of objects")
        labels = data.get("cell_labels", {})
        _require(type(labels) is dict and all(type(v) is str for v in labels.values()), "cell_labels must map to strings")
        limits = _limits(data.get("limits"))
        folder = data.get("submission_dir")
        _require(folder is None or type(folder) is str, "submission_dir must be a string or null")
        untrusted = data.get("untrusted_reports", "")
        _require(type(untrusted) is str, "untrusted_reports must be a string")
        return cls(cells, _int_list(data.get("run_indices"), "run_indices"),
                   _int_list(data.get("answer_cells", []), "answer_cells"), dict(labels),
                   _str_list(data.get("names"), "names"), limits, folder, _str_list(data.get("hide", []), "hide"),
                   untrusted, _str_map(data.get("references", {}), "references"), _upstream(data.get("upstream", {})),
                   _str_map(data.get("exercise_of", {}), "exercise_of"), _contracts(data.get("contracts", {})))

    def to_message(self, key: bytes) -> bytes:
        """The judge's standard input: the job and the key its result must be sealed with."""
        return json.dumps({"key": key.hex(), "job": self.to_dict()}).encode("utf-8")

    @classmethod
    def from_message(cls, text: str | bytes) -> tuple["JudgeJob", bytes]:
        message = json.loads(text)
        _require(type(message) is dict and type(message.get("key")) is str, "a job message needs a key")
        try:
            key = bytes.fromhex(message["key"])
        except ValueError:
            raise ProtocolError("the job message's key must be hexadecimal") from None
        return cls.from_dict(message.get("job")), key


@dataclass
class CellResult:
    """The outputs the judge kept for the notebook's cell ``index`` (nbformat output objects)."""

    index: int
    outputs: list


# The note that replaces the outputs of a test cell that passed in the judge's second pass, graded with the
# course's code for an earlier exercise that lost points (``judge.second_pass``); the feedback page shows it
# under a hidden test's verdict.
REFERENCE_NOTE = "Graded with the course's "
# The whole note: exercise and grade-id names only, so a hidden test's own printed text cannot pass for one.
REFERENCE_NOTE_PATTERN = re.compile(REFERENCE_NOTE + r"[\w, ]+, since yours lost points in [\w, ]+: your \w+ passes "
                                    r"this test with it\.\n")


def _names(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def passed_note(exercise: str, upstream: list[str], culprits: dict) -> str:
    """The note of a test of ``exercise`` passed with the course's ``upstream`` (``culprits``: each one's first
    failed test)."""
    tests = ", ".join(culprits[u] for u in upstream)
    return f"{REFERENCE_NOTE}{_names(upstream)}, since yours lost points in {tests}: your {exercise} passes this test with it.\n"


def failed_line(exercise: str, upstream: list[str], culprits: dict, why: str | None) -> str:
    """The line added to a failed test's message: the upstream exercises that failed too, and whether the test
    also fails with the course's code for them (``why`` is None) or could not be judged so (why not)."""
    head = f"{_names(upstream)}, which {exercise} uses, lost points too ({', '.join(culprits[u] for u in upstream)})"
    if why is None:
        return f"{head}; this test fails with the course's {_names(upstream)} as well, so the failure is {exercise}'s own."
    return f"{head}: this failure may come from there (the grader could not try the course's {_names(upstream)}: {why})."


# A judge timing named with this prefix is work done before the job arrived (a runner started ahead,
# overlapped with another notebook); the other timings add up to the time the job itself took.
AHEAD_PREFIX = "ahead: "

# The environment variable naming a judge's own temporary folder, which the grader makes before the judge
# starts and removes after it ends (``judge.workspace.own_temporary_folder``); a forked judge gets it in
# its request to the fork server.
TEMP_FOLDER_VARIABLE = "COURSE_JUDGE_TMPDIR"


@dataclass
class JudgeResult:
    """What the judge says about one notebook: a judge status, why, and each cell's outputs."""

    status: Status
    detail: str = ""
    cells: list = field(default_factory=list)      # CellResult, in notebook order
    timings: dict = field(default_factory=dict)    # stage -> seconds inside the judge (benchmarks)

    @classmethod
    def failed(cls, detail: str, status: Status = Status.ERROR) -> "JudgeResult":
        """A result with no cells: the notebook could not be judged."""
        return cls(status, detail)

    def to_dict(self) -> dict:
        return {"status": str(self.status), "detail": self.detail, "timings": self.timings,
                "cells": [{"index": c.index, "outputs": c.outputs} for c in self.cells]}

    @classmethod
    def from_dict(cls, data) -> "JudgeResult":
        """Checked field by field: the status is a judge status, every cell has an index and a list of outputs."""
        _require(type(data) is dict, "a result must be an object")
        _require(data.get("status") in JUDGE_STATUSES, "the result's status is not a judge status")
        _require(isinstance(data.get("detail"), str), "the result's detail must be text")
        cells = data.get("cells", [])
        _require(type(cells) is list, "the result's cells must be a list")
        for cell in cells:
            _require(type(cell) is dict and type(cell.get("index")) is int and type(cell.get("outputs")) is list,
                     "each cell needs an integer index and a list of outputs")
        timings = data.get("timings")
        if not (type(timings) is dict and all(type(v) in (int, float) for v in timings.values())):
            timings = {}   # only benchmarks read them; a strange value is dropped, not an error
        return cls(Status(data["status"]), data["detail"], [CellResult(c["index"], c["outputs"]) for c in cells],
                   {str(k): float(v) for k, v in timings.items()})

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_json(cls, text: str) -> "JudgeResult":
        return cls.from_dict(json.loads(text))


# --------------------------------------------------------------------------------------------------
# Sealing: the judge's result is authenticated with the key the grader sent in the job, so even a
# process that could write to the judge's standard output could not forge a verdict.


def sign(key: bytes, body: str) -> str:
    return hmac.new(key, body.encode("utf-8"), hashlib.sha256).hexdigest()


def seal(body: str, key: bytes) -> str:
    """The envelope the judge writes: the body and its HMAC-SHA256."""
    return json.dumps({"mac": sign(key, body), "body": body})


def unseal(envelope: bytes | str, key: bytes) -> str:
    """The body of an authentic envelope; ``ProtocolError`` if it is malformed or the MAC is wrong."""
    try:
        message = json.loads(envelope)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise ProtocolError("the envelope is not JSON") from None
    _require(type(message) is dict, "the envelope must be an object")
    body, mac = message.get("body"), message.get("mac")
    _require(isinstance(body, str) and isinstance(mac, str), "the envelope needs a body and a mac")
    _require(hmac.compare_digest(mac, sign(key, body)), "bad signature")
    return body


# --------------------------------------------------------------------------------------------------
# Self-grading: the student's kernel starts ``python -m autograder.judge --attached``, sends one job
# line, answers the judge's calls, and reads one verdict per graded test cell at the end.


@dataclass(frozen=True)
class SelfGradeJob:
    names: list
    tests: list          # {"exercise", "grade_id", "points", "source"} per graded test cell
    limit_s: float = 300.0
    contracts: dict = field(default_factory=dict)   # name -> {"returns", "views"} (course.contracts.for_judge)

    def to_json(self) -> str:
        return json.dumps({"names": self.names, "tests": self.tests, "limit_s": self.limit_s,
                           "contracts": self.contracts})

    @classmethod
    def from_json(cls, text: str | bytes) -> "SelfGradeJob":
        data = json.loads(text)
        _require(type(data) is dict, "a job must be an object")
        tests = data.get("tests")
        _require(type(tests) is list and all(type(t) is dict and isinstance(t.get("source"), str)
                                             and isinstance(t.get("grade_id"), str) for t in tests),
                 "tests must be objects with a source and a grade_id")
        limit = data.get("limit_s", 300.0)
        _require(type(limit) in (int, float) and limit > 0, "limit_s must be a positive number")
        return cls(_str_list(data.get("names"), "names"), tests, float(limit),
                   _contracts(data.get("contracts", {})))


@dataclass
class TestVerdict:
    exercise: str
    grade_id: str
    points: float
    passed: bool
    message: str = ""

    __test__ = False   # not a pytest test class


def verdicts_message(verdicts: list[TestVerdict]) -> str:
    """The judge's last line to the kernel: every verdict."""
    return json.dumps({"op": "done", "results": [asdict(v) for v in verdicts]})


def verdicts_from(message: dict) -> list[TestVerdict]:
    results = message.get("results")
    _require(type(results) is list and all(type(r) is dict for r in results), "results must be a list of objects")
    try:
        return [TestVerdict(str(r["exercise"]), str(r["grade_id"]), float(r["points"]), r["passed"] is True,
                            str(r.get("message", ""))) for r in results]
    except (KeyError, TypeError, ValueError) as error:
        raise ProtocolError(f"a verdict is malformed: {error}") from None
