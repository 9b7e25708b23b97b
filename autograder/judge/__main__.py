"""Entry points: ``python -m autograder.judge [--ahead]`` (batch: one job on standard input, one sealed
result on standard output; ``--ahead``: a runner spec line first, and the runner starts before the job);
``python -m autograder.judge --attached`` (self-grading: a job line, then the kernel's replies on standard
input, the judge's calls and the verdicts on standard output); ``python -m autograder.judge --fork-server FD``
(batch judges forked from one process that imported PyTorch once: ``fork_server.py``)."""

from __future__ import annotations

import os
import sys

from ..sandbox import processes
from .protocol import (JudgeJob, JudgeResult, ProtocolError, RunnerSpec, SelfGradeJob, TestVerdict, seal,
                        verdicts_message)
from .outputs import error_output
from .session import NOT_RUN, AttachedSession, CellOutcome
from .transport import Connection
from .notebook import judge_notebook
from .workspace import Workspace, own_temporary_folder
from . import fork_server


def main(ahead: bool = False) -> int:
    """One job on standard input, its sealed result on standard output. ``ahead`` (``--ahead``): a
    ``RunnerSpec`` line comes first, and the runner starts before the job is read. Everything it makes on
    disk lies in its own temporary folder, removed however this returns or raises."""
    with own_temporary_folder():
        return _judge_one_job(ahead)


def _judge_one_job(ahead: bool) -> int:
    processes.become_subreaper()
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # anything printed by accident goes to the log, not into the result
    workspace = Workspace.ahead(RunnerSpec.from_line(sys.stdin.readline())) if ahead else None
    try:
        job, key = JudgeJob.from_message(sys.stdin.read())
    except BaseException:   # no job came (the grader had no more): nothing to judge, nothing left running
        if workspace is not None:
            workspace.close()
        raise
    try:
        result = judge_notebook(job, workspace)
    except Exception as error:  # noqa: BLE001 - reported to the grader as this submission's error
        result = JudgeResult.failed(f"judge failed: {type(error).__name__}: {error}"[:300])
    out.write(seal(result.to_json(), key))
    out.flush()
    return 0


def main_attached() -> int:
    """One job line on stdin, then calls over stdin/stdout; the verdicts as the last line."""
    writer = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    buffer = b""
    while b"\n" not in buffer:
        chunk = os.read(0, 1 << 20)
        if not chunk:
            return 1
        buffer += chunk
    line, buffer = buffer.split(b"\n", 1)
    try:
        job = SelfGradeJob.from_json(line)
    except (ValueError, ProtocolError):
        return 1
    session = AttachedSession(job.names, Connection(writer, 0, buffer), job.limit_s)
    session.declare_contracts(job.contracts)
    verdicts = [_verdict(session, test) for test in job.tests]
    writer.write((verdicts_message(verdicts) + "\n").encode("utf-8"))
    writer.flush()
    return 0


def _verdict(session: AttachedSession, test: dict) -> TestVerdict:
    if session.gone:
        outcome = CellOutcome(outputs=[error_output(NOT_RUN, "your kernel stopped answering")])
    else:
        outcome = session.run_test_cell(test["source"], test["grade_id"])
    errors = [o for o in outcome.outputs if o.get("output_type") == "error"]
    return TestVerdict(str(test.get("exercise", "")), test["grade_id"], float(test.get("points", 0)), not errors,
                       f"{errors[0]['ename']}: {errors[0]['evalue']}" if errors else "")


def _entry(args: list[str]) -> int:
    if "--attached" in args:
        return main_attached()
    if fork_server.FLAG in args:
        return fork_server.serve(int(args[args.index(fork_server.FLAG) + 1]), main)
    return main(ahead="--ahead" in args)


if __name__ == "__main__":
    sys.exit(_entry(sys.argv[1:]))
