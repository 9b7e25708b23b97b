"""The sandboxed process that runs a submission's code (``python -m autograder.sandbox.runner``).

It is untrusted by design: student code runs in this very process (an IPython shell, no Jupyter
kernel, so no connection files and no sockets), and may rewrite anything here. The judge, on the
other side of two pipes, believes nothing it says beyond "this is what the student's code returned".

Protocol: one JSON request per line on standard input, one JSON reply per line on the standard
output saved at start-up (file descriptors 1 and 2 of this process then both go to the log, so a
C-level print cannot interleave with replies). Each request has an ``id`` the reply repeats.

* ``{"id": n, "op": "run", "source": "..."}``: run one cell; reply ``{"ok", "error", "stdout",
  "images"}`` (text capped; figures as PNG);
* ``{"id": n, "op": "enter"}``: copy the submission's files (read-only at ``COURSE_RUNNER_SEED``)
  into the working folder again, for a runner started before they were there; reply ``{"ok": true}``;
* every other op is the judge's call protocol, answered by ``autograder.sandbox.kernel_agent.Agent``.

Time limits: each request's ``limit`` is enforced here (``autograder.judge.serving``: an alarm, then a
``KeyboardInterrupt`` in the running code); the judge also sends SIGINT, and kills the process when
no reply comes soon after.
"""

from __future__ import annotations

import os
import sys

from ..judge.protocol import MAX_CELL_IMAGES, MAX_CELL_TEXT_CHARS, MAX_IMAGE_CHARS
from ..judge.serving import TimeLimit, serve
from . import audit


def _course_paths_first() -> None:
    """The working folder (the student's files) goes last on sys.path: it can add modules, never
    shadow the course's packages or the libraries."""
    cwd = os.getcwd()
    sys.path[:] = [p for p in sys.path if p not in ("", ".", cwd)] + [cwd]


def _enter_workdir() -> None:
    """In the sandbox: copy the submission's files (read-only) into the private /tmp and work there."""
    seed, work = os.environ.get("COURSE_RUNNER_SEED"), os.environ.get("COURSE_RUNNER_WORK")
    if seed and work:
        import shutil

        shutil.copytree(seed, work, dirs_exist_ok=True)
        os.chdir(work)


def main() -> int:
    _enter_workdir()
    _course_paths_first()
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    requests = os.fdopen(os.dup(0), "r", encoding="utf-8")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)   # a C-level print goes to the log, never between two replies
    os.environ.setdefault("MPLBACKEND", "Agg")
    limit = TimeLimit("stopped by the grader's time limit", on_sigint=True)
    limit.install()
    answer = _answerer()

    def write(line: str) -> None:
        replies.write(line)
        replies.flush()

    serve(requests, write, answer, limit)
    return 0


def _watch_student_code(agent) -> None:
    """The audit hook (``audit``), on the descriptor the judge passed, once the runner's own imports are done
    and before any student code runs; it also watches the agent's own attributes (a method set on it)."""
    fd = os.environ.pop(audit.AUDIT_FD_VARIABLE, "")
    if fd.isdigit():
        audit.install(int(fd), {"the agent": (vars(agent), ("next_id",))})


def _answerer():
    """The function answering each request: ``run`` runs a cell in an IPython shell, every other op
    goes to the judge's call protocol (``kernel_agent.Agent``) over the same namespace."""
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    from .kernel_agent import Agent

    config = Config()
    config.HistoryManager.enabled = False
    shell = InteractiveShell.instance(config=config)
    # The libraries every notebook imports, loaded before any student code (and outside its time limits).
    import numpy  # noqa: F401
    import torch  # noqa: F401
    import utils  # noqa: F401
    import utils.checks  # noqa: F401 - loaded before the audit hook's snapshot, which then watches them
    import utils.probes  # noqa: F401
    agent = Agent(shell.user_ns)
    _watch_student_code(agent)

    def answer(request: dict) -> dict:
        if request.get("op") == "run":
            return _run_cell(shell, str(request.get("source", "")))
        if request.get("op") == "enter":   # started ahead of its job: the submission's files are there now
            _enter_workdir()
            return {"ok": True}
        return agent.handle(request)
    return answer


def _run_cell(shell, source: str) -> dict:
    from IPython.utils.capture import capture_output

    from .kernel_agent import describe_error

    with capture_output(display=True) as captured:
        result = shell.run_cell(source, store_history=False)
    error = result.error_in_exec or result.error_before_exec
    return {"ok": error is None, "error": describe_error(error) if error is not None else None,
            "stdout": _text(captured.stdout + captured.stderr), "images": _images(captured.outputs)}


def _text(text: str) -> str:
    if len(text) > MAX_CELL_TEXT_CHARS:
        return text[:MAX_CELL_TEXT_CHARS] + "\n... [output truncated by the grader]\n"
    return text


def _images(outputs) -> list[str]:
    images = []
    for output in outputs[:MAX_CELL_IMAGES]:
        data = getattr(output, "data", {}) or {}
        png = data.get("image/png")
        if isinstance(png, str) and len(png) <= MAX_IMAGE_CHARS:
            images.append(png)
    return images


if __name__ == "__main__":
    sys.exit(main())
