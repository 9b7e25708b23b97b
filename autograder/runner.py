"""The sandboxed process that runs a submission's code (``python -m autograder.runner``).

It is untrusted by design: student code runs in this very process (an IPython shell, no Jupyter
kernel, so no connection files and no sockets), and may rewrite anything here. The judge, on the
other side of two pipes, believes nothing it says beyond "this is what the student's code returned".

Protocol: one JSON request per line on standard input, one JSON reply per line on the standard
output saved at start-up (file descriptors 1 and 2 of this process then both go to the log, so a
C-level print cannot interleave with replies). Each request has an ``id`` the reply repeats.

* ``{"id": n, "op": "run", "source": "..."}``: run one cell; reply ``{"ok", "error", "stdout",
  "images"}`` (text capped; figures as PNG);
* every other op is the judge's call protocol, answered by ``autograder.kernel_agent.Agent``.

A time limit is the judge's to enforce: it sends SIGINT (a ``KeyboardInterrupt`` in the running
code) and, if no reply comes soon after, kills the process.
"""

from __future__ import annotations

import json
import os
import signal
import sys

MAX_STDOUT_CHARS = 20_000
MAX_IMAGES = 5
MAX_IMAGE_BYTES = 400_000


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
    os.dup2(2, 1)
    os.environ.setdefault("MPLBACKEND", "Agg")

    busy = {"now": False}

    def interrupt(signum, frame):
        if busy["now"]:
            raise KeyboardInterrupt(f"stopped by the grader's time limit")
    signal.signal(signal.SIGINT, interrupt)
    signal.signal(signal.SIGALRM, interrupt)

    def limited(function, request):
        """Run with the request's time limit: the alarm interrupts the student's code when it overruns."""
        limit = request.get("limit")
        busy["now"] = True
        if isinstance(limit, (int, float)) and limit > 0:
            signal.setitimer(signal.ITIMER_REAL, float(limit))
        try:
            return function()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            busy["now"] = False

    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    from .kernel_agent import Agent, describe_error

    from traitlets.config import Config

    config = Config()
    config.HistoryManager.enabled = False
    shell = InteractiveShell.instance(config=config)
    # The libraries every notebook imports, loaded before any student code (and outside its time limits).
    import numpy  # noqa: F401
    import torch  # noqa: F401
    import utils  # noqa: F401
    namespace = shell.user_ns
    agent = Agent(namespace)

    def send(reply: dict) -> None:
        replies.write(json.dumps(reply) + "\n")
        replies.flush()

    for line in requests:
        try:
            request = json.loads(line)
        except json.JSONDecodeError:
            continue
        if type(request) is not dict:
            continue
        ident = request.get("id")
        if request.get("op") == "run":
            with capture_output(display=True) as captured:
                result = limited(lambda: shell.run_cell(str(request.get("source", "")), store_history=False), request)
            error = result.error_in_exec or result.error_before_exec
            reply = {"id": ident, "ok": error is None,
                     "error": describe_error(error) if error is not None else None,
                     "stdout": _text(captured.stdout + captured.stderr),
                     "images": _images(captured.outputs)}
        else:
            reply = limited(lambda: agent.handle(request), request)
            reply["id"] = ident
        try:
            send(reply)
        except (TypeError, ValueError) as error:
            send({"id": ident, "ok": False, "error": {"type": "TypeError", "message": f"reply not sendable: {error}",
                                                      "where": []}})
    return 0


def _text(text: str) -> str:
    if len(text) > MAX_STDOUT_CHARS:
        return text[:MAX_STDOUT_CHARS] + "\n... [output truncated by the grader]\n"
    return text


def _images(outputs) -> list[str]:
    images = []
    for output in outputs[:MAX_IMAGES]:
        data = getattr(output, "data", {}) or {}
        png = data.get("image/png")
        if isinstance(png, str) and len(png) <= MAX_IMAGE_BYTES:
            images.append(png)
    return images


if __name__ == "__main__":
    sys.exit(main())
