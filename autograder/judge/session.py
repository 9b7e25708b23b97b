"""The judge: decides every graded test of a notebook in a process that never runs student code.

``python -m autograder.judge`` (one process per notebook, started by the grader) reads a job on its
standard input, starts the sandboxed runner (``autograder.runner``) in a scratch folder holding the
submission's files, and walks the notebook:

* the set-up cell, the answer cells and the student's own cells run **in the runner**, in order (the
  course's demo and figure cells are not re-run: they teach, they don't grade);
* each graded test cell runs **here**, with the exercise names bound to handles (``Handle``): calling
  one sends the arguments to the runner and brings the result back by value (``autograder.wire``);
  expected values and comparisons are computed here, with the judge's own ``torch`` and ``checks``.

Nothing the runner says is believed beyond "the student's code returned this": every reply is parsed
strictly and bounded in size; a malformed one is that submission's error. A call that overruns its
limit is interrupted (the runner's own alarm) or the runner is killed and started again, replaying the
set-up and answer cells, so one slow or crashing answer costs only its own tests.

The result goes back to the grader as one JSON object, authenticated with a key the grader sent, so
even a runner that could reach the judge's output could not forge it.
"""

from __future__ import annotations

import builtins
import contextlib
import hashlib
import hmac
import io
import json
import os
import select
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import sandbox, wire
from .protocol import Status

MAX_RESTARTS = 6
GRACE_S = 10            # after a call's limit: time for the runner's own interrupt to come back
STARTUP_TIMEOUT_S = 120
SETUP_TIMEOUT_S = 120   # the set-up cell (imports; on a busy machine that can take a while)
MAX_STRAY_REPLIES = 1000
MAX_NOTEBOOK_OUTPUT_BYTES = 4 * 1024 * 1024  # text and images of all cells together (see keep_within_budget)
NOT_RUN = "NotRun"


class RunnerGone(Exception):
    """The runner died, was killed after overrunning, or broke the protocol; it will be restarted."""

    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status = status


class StudentCodeError(RuntimeError):
    """An exception raised by the student's code whose type is not a Python built-in."""


# --------------------------------------------------------------------------------------------------
# Talking to the runner


class Connection:
    """Requests written to ``writer`` (binary), replies read from file descriptor ``read_fd``."""

    def __init__(self, writer, read_fd: int, buffer: bytes = b""):
        self.writer = writer
        self.fd = read_fd
        self.buffer = buffer
        self.next_id = 0

    def request(self, message: dict, limit_s: float) -> dict:
        self.next_id += 1
        ident = self.next_id
        message = dict(message, id=ident, limit=limit_s)
        try:
            self.writer.write((json.dumps(message) + "\n").encode("utf-8"))
            self.writer.flush()
        except (BrokenPipeError, OSError):
            raise RunnerGone(Status.KERNEL_DIED, "the student's process had exited") from None
        reply = self._read(ident, time.monotonic() + limit_s + GRACE_S)
        if reply is None:
            raise RunnerGone(Status.TIMEOUT, f"did not finish within {limit_s:g} s and was stopped")
        return reply

    def _read(self, ident: int, deadline: float):
        strays = 0
        while True:
            newline = self.buffer.find(b"\n")
            if newline >= 0:
                line, self.buffer = self.buffer[:newline], self.buffer[newline + 1:]
                try:
                    reply = json.loads(line)
                except (ValueError, UnicodeDecodeError):
                    raise RunnerGone(Status.PROTOCOL_ERROR, "the student's process wrote something that is not a reply") from None
                except RecursionError:
                    raise RunnerGone(Status.PROTOCOL_ERROR, "the student's process wrote a reply nested too deeply to read") from None
                if type(reply) is dict and reply.get("id") == ident:
                    return reply
                strays += 1
                if strays > MAX_STRAY_REPLIES:
                    raise RunnerGone(Status.PROTOCOL_ERROR, "too many unexpected replies")
                continue
            if len(self.buffer) > wire.MAX_MESSAGE_BYTES:
                raise RunnerGone(Status.PROTOCOL_ERROR, "a reply was larger than the grader accepts")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([self.fd], [], [], remaining)
            if ready:
                chunk = os.read(self.fd, 1 << 20)
                if not chunk:
                    raise RunnerGone(Status.KERNEL_DIED, "the student's process exited")
                self.buffer += chunk


# --------------------------------------------------------------------------------------------------
# Handles: the exercise names as the test cells see them in the judge


class Handle(wire.Ref):
    """A function, class or object that lives in the student's process. Call it; read attributes."""

    __slots__ = ("_session", "_label")

    def __init__(self, session: "Session", ident, label: str):
        object.__setattr__(self, "id", ident)
        object.__setattr__(self, "_session", session)
        object.__setattr__(self, "_label", label)

    def __call__(self, *args, **kwargs):
        return self._call(args, kwargs, may_mutate=False)

    def _call(self, args: tuple, kwargs: dict, *, may_mutate: bool):
        """Call where the object lives. Unless ``may_mutate``, a by-value argument the call changed
        (the runner reports what it saw; ``changed_inputs`` here decides) fails the test."""
        return self._session.ask({"op": "call", "target": self._target(), "args": self._session.send(list(args)),
                                  "kwargs": self._session.send(dict(kwargs)), "may_mutate": bool(may_mutate)},
                                 self._label, sent=None if may_mutate else (tuple(args), dict(kwargs)))

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return self._session.ask({"op": "getattr", "target": self._target(), "name": name}, f"{self._label}.{name}")

    def __setattr__(self, name, value):
        raise AttributeError("attributes of the student's objects cannot be set from a test; call a method")

    def _target(self) -> dict:
        return {"name": self.id} if isinstance(self.id, str) else {"ref": self.id}

    def __repr__(self) -> str:
        return f"<{self._label}>"


class _Probes:
    """What ``utils.probes`` calls in the judge (``probes._judge``)."""

    def __init__(self, session: "Session"):
        self.session = session

    def probe(self, kind: str, target, args, kwargs, **extra):
        session = self.session
        if kind == "make":
            spec = {"literal": target}
        elif isinstance(target, Handle):
            spec = target._target()
        else:
            raise TypeError(f"probes.{kind} needs one of the notebook's functions, classes or objects, "
                            f"got {type(target).__name__}")
        return session.ask({"op": "probe", "kind": kind, "target": spec, "args": session.send(list(args)),
                            "kwargs": session.send(dict(kwargs)), "extra": session.send(dict(extra))},
                           f"probes.{kind}")

    def mutating_call(self, target, args, kwargs):
        if not isinstance(target, Handle):
            raise TypeError(f"probes.mutating_call needs one of the notebook's functions, classes or objects, "
                            f"got {type(target).__name__}")
        return target._call(tuple(args), dict(kwargs), may_mutate=True)

    @contextlib.contextmanager
    def time_limit(self, seconds: float, what: str):
        previous = self.session.call_limit
        self.session.call_limit = (float(seconds), what)
        try:
            yield
        finally:
            self.session.call_limit = previous


def _exception_from(error: dict, label: str) -> BaseException:
    """Rebuild a student exception for the test: the same built-in type, or ``StudentCodeError``."""
    if type(error) is not dict:
        return StudentCodeError(f"{label} failed")
    name = str(error.get("type", "Error"))[:100]
    message = str(error.get("message", ""))[:2000]
    where = [str(w)[:200] for w in error.get("where", [])[:3]] if type(error.get("where")) is list else []
    text = message + (f"\n(raised in your code: {where[-1]})" if where else "")
    kind = getattr(builtins, name, None)
    if isinstance(kind, type) and issubclass(kind, Exception) and kind.__module__ == "builtins":
        try:
            return kind(text)
        except Exception:  # noqa: BLE001 - a built-in whose constructor wants other arguments
            pass
    return StudentCodeError(f"{name}: {text}")


# --------------------------------------------------------------------------------------------------
# Inputs changed by a call: the runner reports what it saw, the judge compares with what it sent

MAX_CHANGES_READ = 20


def changed_inputs(label: str, args: tuple, kwargs: dict, changed) -> str | None:
    """The failure message for a call that modified a by-value argument, or None when it did not.

    ``args``/``kwargs`` are the values the test passed (the judge's own objects); ``changed`` is the
    runner's report (``kernel_agent.changed_arguments``). Nothing in the report is believed: each
    entry names a part of an argument and what it holds now, and only a real difference from what
    the test sent counts.
    """
    if type(changed) is not list:
        return None
    problems = []
    for entry in changed[:MAX_CHANGES_READ]:
        try:
            found = _one_change(args, kwargs, entry)
        except (wire.WireError, RecursionError, TypeError, ValueError, KeyError, IndexError, RuntimeError):
            continue
        if found:
            problems.append(found)
    if not problems:
        return None
    (name, what, kind), more = problems[0], len(problems) - 1
    who = label[5:] if label.startswith("your ") else label
    root = name.split("[")[0] if name.split("[")[0].isidentifier() else "x"
    advice = {"tensor": f"return a new tensor instead (work on a copy such as {root}.clone(), or write "
                        f"{root} = {root} * 2 rather than {root} *= 2)",
              "array": f"return a new array instead (work on a copy, {root}.copy())"}.get(
        kind, f"build and return a new {kind} instead of changing the caller's")
    text = f"{who} modified its argument `{name}` in place ({what}); {advice}."
    if more:
        text += f" ({more} more part{'s' if more > 1 else ''} of its arguments changed too.)"
    return text + "\nHint: the caller's inputs must be left as they were (the exercise's docstring says so)."


def _one_change(args: tuple, kwargs: dict, entry) -> tuple[str, str, str] | None:
    if type(entry) is not dict or type(entry.get("path")) is not list or len(entry["path"]) > wire.MAX_DEPTH:
        return None
    arg = entry.get("arg")
    if type(arg) is int and 0 <= arg < len(args):
        node = args[arg]
    elif type(arg) is str and arg in kwargs:
        node = kwargs[arg]
    else:
        return None
    name = entry.get("name")
    if not (type(name) is str and 0 < len(name) <= 60 and name.replace("_", "a").replace("[", "").replace("]", "")
            .isalnum() and name.isascii()):
        name = arg if type(arg) is str else f"#{arg + 1}"
    for step in entry["path"]:
        if type(step) is not int:
            return None
        if isinstance(node, dict):
            key = list(node.keys())[step]
            name += f"[{_short(key)}]"
            node = node[key]
        elif isinstance(node, (list, tuple)):
            node = node[step]
            name += f"[{step}]"
        else:
            return None
    after = wire.decode(entry["after"]) if entry.get("after") is not None else _UNREADABLE
    what = _what_changed(node, after)
    if what is None:
        return None
    import numpy as np
    import torch

    kind = ("tensor" if isinstance(node, torch.Tensor) else "array" if isinstance(node, np.ndarray)
            else "dict" if isinstance(node, dict) else "list")
    return name, what, kind


_UNREADABLE = object()


def _what_changed(before, after) -> str | None:
    import numpy as np
    import torch

    if after is _UNREADABLE:
        return "it now holds something the grader cannot read"
    if isinstance(before, (torch.Tensor, np.ndarray)):
        kind = torch.Tensor if isinstance(before, torch.Tensor) else np.ndarray
        if not isinstance(after, kind):
            return f"it was replaced by a {type(after).__name__}"
        if tuple(before.shape) != tuple(after.shape):
            return f"its shape changed from {tuple(before.shape)} to {tuple(after.shape)}"
        if before.dtype != after.dtype:
            return f"its dtype changed from {before.dtype} to {after.dtype}"
        if kind is torch.Tensor:
            b, a = before.detach(), after.detach()
            different = (b != a) & ~(_nan(b) & _nan(a))
            count, total = int(different.sum()), b.numel()
        else:
            different = (before != after) & ~(_nan(before) & _nan(after))
            count, total = int(np.sum(different)), before.size
        if count:
            return f"{count} of {total} value{'s' if total != 1 else ''} changed"
        if kind is torch.Tensor and before.requires_grad != after.requires_grad:
            return f"its requires_grad changed from {before.requires_grad} to {after.requires_grad}"
        return None
    if isinstance(before, dict):
        if not isinstance(after, dict):
            return f"it was replaced by a {type(after).__name__}"
        added = [k for k in after if k not in before]
        removed = [k for k in before if k not in after]
        if added or removed:
            parts = ([f"{len(added)} key{'s' if len(added) != 1 else ''} added ({_keys(added)})"] if added else []) + \
                    ([f"{len(removed)} removed ({_keys(removed)})"] if removed else [])
            return ", ".join(parts)
        count = sum(_what_changed(before[k], after[k]) is not None for k in before)
        return f"{count} of {len(before)} entries changed" if count else None
    if isinstance(before, (list, tuple)):
        if not isinstance(after, (list, tuple)):
            return f"it was replaced by a {type(after).__name__}"
        if len(before) != len(after):
            return f"its length changed from {len(before)} to {len(after)}"
        count = sum(_what_changed(b, a) is not None for b, a in zip(before, after))
        return f"{count} of {len(before)} items changed" if count else None
    if isinstance(before, (torch.Generator, wire.Ref)):
        return None
    try:
        same = wire.encode(before) == wire.encode(after)
    except Exception:  # noqa: BLE001 - values that cannot be compared count as changed
        same = False
    return None if same else f"{_short(before)} became {_short(after)}"


def _nan(values):
    import numpy as np
    import torch

    if isinstance(values, torch.Tensor):
        return torch.isnan(values) if (values.is_floating_point() or values.is_complex()) else torch.zeros_like(values, dtype=torch.bool)
    return np.isnan(values) if values.dtype.kind in "fc" else np.zeros(values.shape, dtype=bool)


def _keys(keys: list) -> str:
    return ", ".join(_short(k) for k in keys[:3]) + (", ..." if len(keys) > 3 else "")


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# --------------------------------------------------------------------------------------------------
# A session: one runner (restarted when needed) and the notebook's state in it


@dataclass
class CellOutcome:
    outputs: list = field(default_factory=list)
    trouble: str | None = None     # status-worthy trouble: timeout, kernel died, memory limit, protocol error
    message: str = ""


class Session:
    def __init__(self, scratch: Path, limits: sandbox.Limits, hide: list[Path], names: list[str], log_path: Path):
        self.scratch = scratch
        self.limits = limits
        self.hide = hide
        self.names = list(names)
        self.log_path = log_path
        self.process = None
        self.connection: Connection | None = None
        self.replay: list[str] = []
        self.restarts = 0
        self.call_limit: tuple[float, str] | None = None
        self.trouble: str | None = None

    # -- the runner's life ---------------------------------------------------------------------
    def start(self) -> None:
        with open(self.log_path, "ab") as log:
            self.process = sandbox.start_runner(self.scratch, self.limits, self.hide, log)
        self.connection = Connection(self.process.stdin, self.process.stdout.fileno())
        self.connection.request({"op": "run", "source": "pass"}, STARTUP_TIMEOUT_S)

    def stop(self) -> None:
        if self.process is not None:
            sandbox.kill_group(self.process)
            self.process = None

    def restart(self) -> None:
        self.stop()
        self.restarts += 1
        if self.restarts > MAX_RESTARTS:
            raise RunnerGone(Status.KERNEL_DIED, "the student's process was restarted too many times")
        self.start()
        for source in self.replay:
            try:
                self.connection.request({"op": "run", "source": source}, self.limits.cell_timeout_s)
            except RunnerGone:
                self.stop()
                self.start()

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    # -- student cells -------------------------------------------------------------------------
    def run_cell(self, source: str, *, keep: bool = True, limit_s: float | None = None) -> CellOutcome:
        outcome = CellOutcome()
        limit_s = limit_s or self.limits.cell_timeout_s
        try:
            if not self.alive():
                self.restart()
            reply = self.connection.request({"op": "run", "source": source}, limit_s)
        except RunnerGone as gone:
            outcome.trouble, outcome.message = gone.status, str(gone)
            outcome.outputs.append(error_output(gone.status.title().replace(" ", ""), str(gone)))
            self._recover()
            return outcome
        text = reply.get("stdout")
        if isinstance(text, str) and text:
            outcome.outputs.append(stream_output(text[:20_000]))
        images = reply.get("images")
        if type(images) is list:
            for png in images[:5]:
                if isinstance(png, str) and len(png) < 600_000 and _is_base64(png):
                    outcome.outputs.append({"output_type": "display_data", "metadata": {}, "data": {"image/png": png}})
        if reply.get("ok") is not True:
            error = reply.get("error") if type(reply.get("error")) is dict else {}
            name, message = str(error.get("type", "Error"))[:100], str(error.get("message", ""))[:2000]
            outcome.outputs.append(error_output(name, message, error.get("where")))
            if name == "KeyboardInterrupt":
                outcome.trouble, outcome.message = Status.TIMEOUT, f"ran past {limit_s:g} s"
            elif is_memory_error(name, message):
                outcome.trouble, outcome.message = Status.MEMORY_LIMIT, "ran out of memory"
        if keep:
            self.replay.append(source)
        return outcome

    def _recover(self) -> None:
        try:
            self.restart()
        except RunnerGone:
            self.stop()

    # -- calls from test cells -----------------------------------------------------------------
    def send(self, value):
        try:
            return wire.encode(value)
        except wire.WireError as error:
            raise TypeError(f"a test can send the student's code only tensors, arrays, numbers, strings, "
                            f"lists/tuples/dicts of them and the notebook's own objects ({error})") from None

    def ask(self, message: dict, label: str, sent: tuple | None = None):
        limit, what = self.call_limit or (float(self.limits.cell_timeout_s), label)
        if not self.alive():
            raise RunnerGone(self.trouble or Status.KERNEL_DIED, "the student's process is not running")
        try:
            reply = self.connection.request(message, limit)
        except RunnerGone as gone:
            self._recover()
            if gone.status == Status.TIMEOUT:
                self.trouble = self.trouble or Status.TIMEOUT
                from utils.checks import CheckFailure

                raise CheckFailure(f"{what}: did not finish within {limit:g} s, so the grader stopped it.\n"
                                   "Hint: look for an endless loop, or work repeated inside a loop.") from None
            self.trouble = self.trouble or gone.status
            raise
        if reply.get("ok") is True:
            try:
                value = wire.decode(reply.get("value"), lambda ident: Handle(self, ident, f"object from {label}"))
            except (wire.WireError, RecursionError, TypeError, ValueError) as error:
                raise StudentCodeError(f"{label} returned something the grader cannot read: {error}") from None
            if sent is not None and reply.get("changed"):
                problem = changed_inputs(label, sent[0], sent[1], reply.get("changed"))
                if problem:
                    from utils.checks import CheckFailure

                    raise CheckFailure(problem)
            return value
        error = reply.get("error")
        if type(error) is dict and error.get("type") == "KeyboardInterrupt":
            self.trouble = self.trouble or Status.TIMEOUT
            from utils.checks import CheckFailure

            raise CheckFailure(f"{what}: did not finish within {limit:g} s, so the grader stopped it.\n"
                               "Hint: look for an endless loop, or work repeated inside a loop.")
        if type(error) is dict and is_memory_error(str(error.get("type")), str(error.get("message"))):
            self.trouble = self.trouble or Status.MEMORY_LIMIT
        raise _exception_from(error, label)

    # -- test cells ----------------------------------------------------------------------------
    def run_test_cell(self, source: str, grade_id: str) -> CellOutcome:
        import torch

        from utils import probes

        outcome = CellOutcome()
        namespace = {"__name__": "__course_test__", "__builtins__": builtins}
        namespace.update({name: Handle(self, name, f"your {name}") for name in self.names})
        printed = io.StringIO()
        probes._judge = _Probes(self)
        self.trouble = None
        torch.manual_seed(0)
        try:
            with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
                exec(compile(source, f"<test cell {grade_id}>", "exec"), namespace)  # noqa: S102 - course-authored
        except RunnerGone as gone:
            outcome.outputs.append(stream_output(printed.getvalue()[:20_000])) if printed.getvalue() else None
            outcome.outputs.append(error_output(NOT_RUN if gone.status != Status.TIMEOUT else "Timeout",
                                                f"the student's process stopped during this test ({gone})"))
            outcome.trouble, outcome.message = gone.status, str(gone)
            return outcome
        except BaseException as error:  # noqa: BLE001 - any failure of a test is that test's verdict
            if printed.getvalue():
                outcome.outputs.append(stream_output(printed.getvalue()[:20_000]))
            outcome.outputs.append(error_output(type(error).__name__, str(error)[:4000]))
            if self.trouble:
                outcome.trouble, outcome.message = self.trouble, f"{grade_id}: {str(error).splitlines()[0][:150]}"
            return outcome
        finally:
            probes._judge = None
        if printed.getvalue():
            outcome.outputs.append(stream_output(printed.getvalue()[:20_000]))
        return outcome


def is_memory_error(name: str, message: str) -> bool:
    text = message.lower()
    return name == "MemoryError" or any(s in text for s in ("not enough memory", "can't allocate memory",
                                                           "cannot allocate memory", "out of memory"))


def _is_base64(text: str) -> bool:
    import base64
    import binascii

    try:
        base64.b64decode(text.replace("\n", ""), validate=True)
        return True
    except (binascii.Error, ValueError):
        return False


def stream_output(text: str) -> dict:
    return {"output_type": "stream", "name": "stdout", "text": text}


def error_output(ename: str, evalue: str, where=None) -> dict:
    lines = [f"{ename}: {evalue}"]
    if type(where) is list:
        lines += [f"  {str(w)[:200]}" for w in where[:3]]
    return {"output_type": "error", "ename": ename, "evalue": evalue, "traceback": lines}


# --------------------------------------------------------------------------------------------------
# A whole notebook


def section_of(cells: list, index: int) -> str:
    """The heading of the section a cell is in (for messages about ungraded cells)."""
    for cell in reversed(cells[:index]):
        if cell.get("cell_type") == "markdown":
            for line in str(cell.get("source", "")).splitlines():
                if line.startswith("#"):
                    return line.lstrip("#").strip()[:80]
    return "the top of the notebook"


def keep_within_budget(outputs: list, spent: int, graded: bool) -> int:
    """Drop outputs (in place) once the notebook's outputs pass ``MAX_NOTEBOOK_OUTPUT_BYTES``; return the new total.

    A test cell's error output is always kept (it is the verdict); everything else past the budget is
    replaced, once, by a note. So a small notebook can never make the judge, the gradebook or a
    feedback page hold hundreds of megabytes.
    """
    kept, dropped = [], False
    for output in outputs:
        size = len(json.dumps(output))
        if spent + size <= MAX_NOTEBOOK_OUTPUT_BYTES or (graded and output.get("output_type") == "error"):
            kept.append(output)
            spent += size
        else:
            dropped = True
    if dropped and spent <= MAX_NOTEBOOK_OUTPUT_BYTES:
        kept.append(stream_output(f"[output removed by the grader: the notebook's outputs passed the "
                                  f"{MAX_NOTEBOOK_OUTPUT_BYTES // 2**20} MB it keeps per notebook]\n"))
        spent = MAX_NOTEBOOK_OUTPUT_BYTES + 1  # the note is shown once
    outputs[:] = kept
    return spent


def judge_notebook(job: dict) -> dict:
    """Run a job (see ``run_job``'s caller in ``autograder.grading``) and return the result object."""
    limits = sandbox.Limits(**job["limits"])
    hide = [Path(p) for p in job.get("hide", [])]
    cells = job["notebook"]["cells"]
    run_indices = set(job["run_indices"])
    names = job["names"]
    statuses: list[str] = []
    details: list[str] = []
    results: list[dict] = []
    spent = 0
    with tempfile.TemporaryDirectory(prefix="course-grade-") as tmp:
        scratch = Path(tmp) / "work"
        scratch.mkdir()
        if job.get("submission_dir"):
            skipped = sandbox.copy_submission_files(Path(job["submission_dir"]), scratch)
            if skipped:
                details.append("files not copied: " + ", ".join(skipped[:5]))
        session = Session(scratch, limits, hide, names, Path(tmp) / "runner.log")
        timings = {"runner start (sandbox, Python)": 0.0, "set-up cell": 0.0, "answer and student cells": 0.0, "test cells": 0.0}
        started = time.perf_counter()
        try:
            session.start()
        except (RunnerGone, sandbox.SandboxUnavailable, OSError) as error:
            session.stop()
            return {"status": Status.ERROR, "detail": f"could not start the student's process: {error}"[:300], "cells": []}
        timings["runner start (sandbox, Python)"] = time.perf_counter() - started
        try:
            for index, cell in enumerate(cells):
                if cell.get("cell_type") != "code":
                    continue
                meta = cell.get("metadata", {}).get("nbgrader", {})
                graded = type(meta) is dict and meta.get("grade") is True
                started = time.perf_counter()
                if graded:
                    gid = str(meta.get("grade_id", index))
                    outcome = session.run_test_cell(str(cell.get("source", "")), gid)
                    timings["test cells"] += time.perf_counter() - started
                    if outcome.trouble:
                        statuses.append(outcome.trouble)
                        details.append(outcome.message or f"{gid}: {outcome.trouble}")
                elif index in run_indices:
                    setup = type(meta) is dict and meta.get("grade_id") == "setup"
                    outcome = session.run_cell(str(cell.get("source", "")),
                                               limit_s=max(limits.cell_timeout_s, SETUP_TIMEOUT_S) if setup else None)
                    timings["set-up cell" if setup else "answer and student cells"] += time.perf_counter() - started
                    if outcome.trouble:
                        where = job.get("cell_labels", {}).get(str(index)) or f"a cell in '{section_of(cells, index)}'"
                        details.append(f"{where}: {outcome.message}")
                        if job.get("answer_cells") and index in set(job["answer_cells"]):
                            statuses.append(outcome.trouble)
                else:
                    continue
                spent = keep_within_budget(outcome.outputs, spent, graded)
                results.append({"index": index, "outputs": outcome.outputs})
        finally:
            session.stop()
            sandbox.kill_descendants()
    status = statuses[0] if statuses else Status.OK
    return {"status": status, "detail": "; ".join(dict.fromkeys(details))[:1000], "cells": results, "timings": timings}


class AttachedSession(Session):
    """The judge serving a self-study student's own kernel (``autograder.selfgrade``): the kernel is
    our parent, answering on our standard input; it cannot be restarted."""

    def __init__(self, names: list[str], connection: Connection, limit_s: float):
        self.names = list(names)
        self.connection = connection
        self.limits = sandbox.Limits(cell_timeout_s=int(limit_s), sandbox="none")
        self.call_limit = None
        self.trouble = None
        self.gone = False

    def alive(self) -> bool:
        return not self.gone

    def _recover(self) -> None:
        self.gone = True

    def stop(self) -> None:
        pass


def main_attached() -> int:
    """``python -m autograder.judge --attached``: one job line on stdin, then calls over stdin/stdout."""
    writer = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    buffer = b""
    while b"\n" not in buffer:
        chunk = os.read(0, 1 << 20)
        if not chunk:
            return 1
        buffer += chunk
    line, buffer = buffer.split(b"\n", 1)
    job = json.loads(line)
    session = AttachedSession(job["names"], Connection(writer, 0, buffer), float(job.get("limit_s", 300)))
    results = []
    for test in job["tests"]:
        if session.gone:
            outcome = CellOutcome(outputs=[error_output(NOT_RUN, "your kernel stopped answering")])
        else:
            outcome = session.run_test_cell(test["source"], test["grade_id"])
        errors = [o for o in outcome.outputs if o.get("output_type") == "error"]
        results.append({"exercise": test["exercise"], "grade_id": test["grade_id"], "points": test["points"],
                        "passed": not errors,
                        "message": f"{errors[0]['ename']}: {errors[0]['evalue']}" if errors else ""})
    writer.write((json.dumps({"op": "done", "results": results}) + "\n").encode("utf-8"))
    writer.flush()
    return 0


def sign(key: bytes, body: str) -> str:
    return hmac.new(key, body.encode("utf-8"), hashlib.sha256).hexdigest()


def main() -> int:
    sandbox.become_subreaper()
    job = json.loads(sys.stdin.read())
    key = bytes.fromhex(job.pop("key"))
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # anything printed by accident goes to the log, not into the result
    try:
        result = judge_notebook(job)
    except Exception as error:  # noqa: BLE001 - reported to the grader as this submission's error
        result = {"status": Status.ERROR, "detail": f"judge failed: {type(error).__name__}: {error}"[:300], "cells": []}
    body = json.dumps(result)
    out.write(json.dumps({"mac": sign(key, body), "body": body}))
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main_attached() if "--attached" in sys.argv[1:] else main())
