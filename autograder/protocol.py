"""The words the grader's processes and its outputs share.

``Status`` is the status of one graded notebook: the judge's result carries one of the first six, the
batch grader adds the rest for submissions that never reach a judge or that the grader itself failed
on. The values are the strings of the CSV's ``status`` column, the README and the feedback pages; a
``Status`` compares equal to its string and is written as it (``StrEnum``).
"""

from __future__ import annotations

from enum import StrEnum


class Status(StrEnum):
    # Results of judging a notebook (autograder/judge.py):
    OK = "ok"
    TIMEOUT = "timeout"
    KERNEL_DIED = "kernel died"
    MEMORY_LIMIT = "memory limit"
    PROTOCOL_ERROR = "protocol error"
    ERROR = "error"
    # Submissions that never ran, and the grader's own failures (autograder/grading.py):
    INVALID_NOTEBOOK = "invalid notebook"
    MISSING_NOTEBOOK = "missing notebook"
    MISPLACED_NOTEBOOK = "misplaced notebook"
    INVALID_NAME = "invalid name"
    UNKNOWN_ASSIGNMENT = "unknown assignment"
    GRADER_ERROR = "grader error"


JUDGE_STATUSES = (Status.OK, Status.TIMEOUT, Status.KERNEL_DIED, Status.MEMORY_LIMIT, Status.PROTOCOL_ERROR, Status.ERROR)
UNREADABLE = (Status.INVALID_NOTEBOOK, Status.MISSING_NOTEBOOK)   # submissions that never run
