"""A session: one student process (restarted when needed) and the notebook's state in it.

The judge runs the notebook's set-up, answer and student cells in the runner (``run_cell``: replayed
after a restart, so one crashing answer costs only its own tests) and each graded test cell here, in
the judge, with the exercise names bound to handles (``run_test_cell``). ``AttachedSession`` is the
same for self-grading, where the student's own kernel answers and cannot be restarted.
"""

from __future__ import annotations

import builtins
import contextlib
import io
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from ..sandbox import confinement, processes
from ..sandbox.limits import Limits
from . import return_types, wire, wire_decode
from .protocol import (MAX_CELL_IMAGES, MAX_CELL_TEXT_CHARS, MAX_ERROR_MESSAGE_CHARS, MAX_IMAGE_CHARS,
                        MAX_TEST_MESSAGE_CHARS, Status)
from .audit_pipe import AuditPipe
from .changes import argument_returned, changed_inputs, global_mode_left_changed, global_rng_used, wrong_return_type
from .handles import Handle, Probes, StudentCodeError, exception_from
from .hidden_values import HiddenInputs
from .outputs import error_output, image_output, is_base64, stream_output
from .transport import Connection, RunnerGone

HIDDEN_MARKER = "### BEGIN HIDDEN TESTS"   # nbgrader's marker (course.conventions.BEGIN_HIDDEN)
MAX_RESTARTS = 6
STARTUP_TIMEOUT_S = 120
NOT_RUN = "NotRun"
# The judge's own count of a timed call's CPU seconds includes what the runner does around the call (reading
# the request, encoding the reply): a call fails on it only past the limit by this much.
CPU_SLACK, CPU_SLACK_S = 1.1, 0.5
TIMEOUT_HINT = "Hint: look for an endless loop, or work repeated inside a loop."


@dataclass
class CellOutcome:
    outputs: list = field(default_factory=list)
    trouble: str | None = None     # status-worthy trouble: timeout, kernel died, memory limit, protocol error
    message: str = ""


def is_memory_error(name: str, message: str) -> bool:
    text = message.lower()
    return name == "MemoryError" or any(s in text for s in ("not enough memory", "can't allocate memory",
                                                           "cannot allocate memory", "out of memory"))


def _check_failure(text: str):
    from utils.checks import CheckFailure

    return CheckFailure(text)


class Session:
    def __init__(self, scratch: Path, limits: Limits, hide: list[Path], names: list[str], log_path: Path):
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
        self.untrusted_reports = ""   # why the runner's reports of unchanged inputs cannot be believed
        self.audit = AuditPipe()   # what the runner's audit hook saw (sandbox/audit.py)
        self.hidden_inputs = HiddenInputs()   # what hidden tests sent: hidden in every output after them
        self.in_hidden_test = False
        self.contracts: dict[str, dict] = {}   # name -> {"returns": parsed type, "views": [...]} (declare_contracts)

    # -- the runner's life ---------------------------------------------------------------------
    def start(self) -> None:
        with open(self.log_path, "ab") as log:
            self.process = confinement.start_runner(self.scratch, self.limits, self.hide, log)
        self.connection = Connection(self.process.stdin, self.process.stdout.fileno())
        self.connection.request({"op": "run", "source": "pass"}, STARTUP_TIMEOUT_S)

    def stop(self) -> None:
        if self.process is not None:
            self.audit.read(getattr(self.process, "audit_fd", None), ended_counts=False)
            self.audit.pending = b""
            processes.kill_group(self.process)
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

    def _explained(self, gone: RunnerGone) -> RunnerGone:
        """``gone``, with the watch's reason when the watch killed the runner (the sandbox's memory past the
        limit, too many tasks): still ``kernel died``, the sandbox as a whole was stopped."""
        process = getattr(self, "process", None)
        reason = getattr(process, "killed_for", None)
        group = getattr(process, "cgroup", None)
        if reason is None and group is not None and group.oom_killed():
            reason = (f"the notebook's processes held more memory than the sandbox's share, past the "
                      f"{group.limit_bytes / 2**20:,.0f} MB limit (counted by the kernel: resident memory, files in "
                      "memory, socket buffers and memfd pages together)")
        if gone.status == Status.KERNEL_DIED and isinstance(reason, str):
            return RunnerGone(Status.KERNEL_DIED, f"stopped by the grader: {reason}")
        return gone

    def _recover(self) -> None:
        try:
            self.restart()
        except RunnerGone:
            self.stop()

    # -- student cells -------------------------------------------------------------------------
    def run_cell(self, source: str, *, keep: bool = True, limit_s: float | None = None) -> CellOutcome:
        """Run a cell in the runner; its outputs, and the trouble (if any) that should set the status.
        Values a hidden test sent before are hidden in them (``hidden_values``): the student's code may
        have kept them to print now."""
        return _redacted(self._run_cell(source, keep, limit_s), self.hidden_inputs)

    def _run_cell(self, source: str, keep: bool, limit_s: float | None) -> CellOutcome:
        limit_s = limit_s or self.limits.cell_timeout_s
        try:
            if not self.alive():
                self.restart()
            reply = self.connection.request({"op": "run", "source": source}, limit_s)
        except RunnerGone as gone:
            gone = self._explained(gone)
            self._recover()
            return CellOutcome([error_output(gone.status.title().replace(" ", ""), str(gone))], gone.status, str(gone))
        outcome = CellOutcome(_cell_outputs(reply))
        if reply.get("ok") is not True:
            error = reply.get("error") if type(reply.get("error")) is dict else {}
            name = str(error.get("type", "Error"))[:100]
            message = str(error.get("message", ""))[:MAX_ERROR_MESSAGE_CHARS]
            outcome.outputs.append(error_output(name, message, error.get("where")))
            if name == "KeyboardInterrupt":
                outcome.trouble, outcome.message = Status.TIMEOUT, f"ran past {limit_s:g} s"
            elif is_memory_error(name, message):
                outcome.trouble, outcome.message = Status.MEMORY_LIMIT, "ran out of memory"
        if keep:
            self.replay.append(source)
        return outcome

    # -- calls from test cells -----------------------------------------------------------------
    def send(self, value):
        if self.in_hidden_test:
            self.hidden_inputs.add_arguments(value)
        try:
            return wire.encode(value)
        except wire.WireError as error:
            raise TypeError(f"a test can send the student's code only tensors, arrays, numbers, strings, "
                            f"lists/tuples/dicts of them and the notebook's own objects ({error})") from None

    def ask(self, message: dict, label: str, sent: tuple | None = None, name: str | None = None):
        """Send a call, return its value; raise what the student's code raised, or the test's failure
        (a timeout, an argument changed in place, a clause of ``name``'s contract broken)."""
        limit, what = self.call_limit or (float(self.limits.cell_timeout_s), label)
        message = self._watched(message, label, sent)
        reply = self._timed_request(message, limit, what) if self.call_limit else self._request(message, limit, what)
        if reply.get("ok") is True:
            self._believed(message.get("audit"), label)
            return self._value(reply, label, sent, self.contracts.get(name) if name else None)
        error = reply.get("error")
        if type(error) is dict and error.get("type") == "KeyboardInterrupt":
            self.trouble = self.trouble or Status.TIMEOUT
            raise _check_failure(f"{what}: did not finish within {limit:g} s, so the grader stopped it.\n{TIMEOUT_HINT}")
        if type(error) is dict and is_memory_error(str(error.get("type")), str(error.get("message"))):
            self.trouble = self.trouble or Status.MEMORY_LIMIT
        if self.in_hidden_test and type(error) is dict:
            self.hidden_inputs.add_text(str(error.get("message", ""))[:MAX_ERROR_MESSAGE_CHARS])
        raise exception_from(error, label)

    def _watched(self, message: dict, label: str, sent: tuple | None) -> dict:
        """``message``, with a new nonce for the runner's audit hook to check the call with when its verdict
        rests on the runner's reports (``sent``); such a call fails at once when they are already untrusted."""
        if sent is None:
            return message
        if self._audit_fd() is not None:
            self._audited("")
            message = dict(message, audit=secrets.token_hex(8))
        if self.untrusted_reports:
            raise _check_failure(untrusted_message(label, self.untrusted_reports))
        return message

    def _believed(self, nonce: str | None, label: str) -> None:
        """Fail a watched call (``nonce``) unless the audit hook checked it and saw nothing wrong so far."""
        if nonce is None:
            return
        self._audited(nonce)
        if self.untrusted_reports:
            raise _check_failure(untrusted_message(label, self.untrusted_reports))

    def _audit_fd(self) -> int | None:
        return getattr(getattr(self, "process", None), "audit_fd", None)

    def _audited(self, nonce: str) -> None:
        """Read what the runner's audit hook wrote; ``nonce``: the call it must have checked. Anything wrong
        makes the notebook's reports untrusted, as the grader's reading of its source does (``tampering``)."""
        fd = self._audit_fd()
        problem = self.audit.check(fd, nonce) if nonce else (self.audit.read(fd) or self.audit.problem)
        if problem and problem not in self.untrusted_reports:
            self.untrusted_reports = f"{self.untrusted_reports}; {problem}" if self.untrusted_reports else problem

    def _timed_request(self, message: dict, limit: float, what: str) -> dict:
        """A call under a test's speed requirement: the runner stops itself past ``limit`` CPU seconds
        (``serving.py``), and the judge counts the sandbox's CPU seconds itself, from ``/proc``, so code that
        silences the runner's timer (SIGPROF ignored or blocked) still fails past the limit."""
        pid = getattr(getattr(self, "process", None), "pid", None)
        before = processes.sandbox_cpu_seconds(pid) if pid is not None else None
        reply = self._request(dict(message, clock="cpu"), limit, what)
        after = processes.sandbox_cpu_seconds(pid) if before is not None else None
        used = after - before if after is not None else 0.0
        if used > limit * CPU_SLACK + CPU_SLACK_S:
            self.trouble = self.trouble or Status.TIMEOUT
            raise _check_failure(f"{what}: took {used:.1f} CPU seconds (counted by the grader, outside your process); "
                                 f"the limit is {limit:g} s.\n{TIMEOUT_HINT}")
        return reply

    def _request(self, message: dict, limit: float, what: str) -> dict:
        if not self.alive():
            raise RunnerGone(self.trouble or Status.KERNEL_DIED, "the student's process is not running")
        try:
            return self.connection.request(message, limit)
        except RunnerGone as gone:
            gone = self._explained(gone)
            self._recover()
            self.trouble = self.trouble or gone.status
            if gone.status == Status.TIMEOUT:
                raise _check_failure(f"{what}: did not finish within {limit:g} s, so the grader stopped it.\n"
                                     f"{TIMEOUT_HINT}") from None
            raise

    def _value(self, reply: dict, label: str, sent: tuple | None, contract: dict | None = None):
        try:
            value = wire_decode.decode(reply.get("value"), lambda ident: Handle(self, ident, f"object from {label}"))
        except (wire.WireError, RecursionError, TypeError, ValueError) as error:
            unreadable = StudentCodeError(f"{label} returned something the grader cannot read: {error}")
            unreadable.withheld = f"{label} returned something the grader cannot read."
            raise unreadable from None
        if sent is not None and reply.get("changed"):
            problem = changed_inputs(label, sent[0], sent[1], reply.get("changed"))
            if problem:
                raise _check_failure(problem)
        # Issue 49's observations count in hidden tests only: a visible test gives the verdict it gives in the
        # student's kernel, where nothing observes the call (tests/course/test_visible_agrees_with_grade.py).
        if sent is not None and self.in_hidden_test and reply.get("global_rng"):
            raise _check_failure(global_rng_used(label, reply.get("global_rng")))
        if sent is not None and self.in_hidden_test and reply.get("global_mode"):
            raise _check_failure(global_mode_left_changed(label, reply.get("global_mode")))
        if sent is not None and self.in_hidden_test:
            self._kept_to_contract(reply, label, value, contract)
        return value

    def _kept_to_contract(self, reply: dict, label: str, value, contract: dict | None) -> None:
        """Fail a hidden test's call whose result is an argument itself or shares memory with one, where the
        contract of the name called does not let it view that argument (without a contract, as for a method, only
        the argument itself fails), or is not of the declared return type."""
        entries = reply.get("returned_argument")
        entries = [e for e in entries if type(e) is dict] if type(entries) is list else []
        views = contract["views"] if contract else None
        wrong = [e for e in entries if e.get("name") not in (views or ()) and (views is not None or not e.get("shares"))]
        if wrong:
            raise _check_failure(argument_returned(label, wrong))
        problem = return_types.mismatch(value, contract["returns"]) if contract else None
        if problem:
            raise _check_failure(wrong_return_type(label, problem))

    def declare_contracts(self, declared: dict) -> None:
        """What the exercises' contracts declare for every call (``course.contracts.for_judge``): name ->
        ``{"returns": a type expression (return_types), "views": the arguments a result may share memory with}``."""
        self.contracts = {name: {"returns": return_types.parse(c["returns"]), "views": list(c.get("views", []))}
                          for name, c in declared.items()}

    # -- test cells ----------------------------------------------------------------------------
    def run_test_cell(self, source: str, grade_id: str) -> CellOutcome:
        """Run a graded test cell here, in the judge, with the exercise names bound to handles. A hidden
        test (``### BEGIN HIDDEN TESTS``) shows no input values (``hidden_values``): its checks run with
        ``checks.values_withheld()``, what the student's code raised is shown without its message, what it
        sends is recorded and hidden in its message and in every output after it."""
        from utils import checks

        hidden = HIDDEN_MARKER in source
        self.in_hidden_test = hidden
        try:
            with checks.values_withheld() if hidden else contextlib.nullcontext():
                outcome = self._run_test_cell(source, grade_id, hidden)
        finally:
            self.in_hidden_test = False
        return _redacted(outcome, self.hidden_inputs, strict=hidden)

    def _run_test_cell(self, source: str, grade_id: str, hidden: bool) -> CellOutcome:
        import torch

        from utils import probes

        outcome = CellOutcome()
        namespace = {"__name__": "__course_test__", "__builtins__": builtins}
        namespace.update({name: Handle(self, name, f"your {name}") for name in self.names})
        printed = io.StringIO()
        probes._judge = Probes(self)
        self.trouble = None
        torch.manual_seed(0)
        try:
            with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
                exec(compile(source, f"<test cell {grade_id}>", "exec"), namespace)  # noqa: S102 - course-authored
        except RunnerGone as gone:
            outcome.outputs += _printed(printed)
            outcome.outputs.append(error_output(NOT_RUN if gone.status != Status.TIMEOUT else "Timeout",
                                                f"the student's process stopped during this test ({gone})"))
            outcome.trouble, outcome.message = gone.status, str(gone)
            return outcome
        except BaseException as error:  # noqa: BLE001 - any failure of a test is that test's verdict
            text = getattr(error, "withheld", None) if hidden else None
            text = text if isinstance(text, str) else str(error)
            outcome.outputs += _printed(printed)
            outcome.outputs.append(error_output(type(error).__name__, text[:MAX_TEST_MESSAGE_CHARS]))
            if self.trouble:
                outcome.trouble, outcome.message = self.trouble, f"{grade_id}: {(text.splitlines() or [''])[0][:150]}"
            return outcome
        finally:
            probes._judge = None
        outcome.outputs += _printed(printed)
        return outcome


def _redacted(outcome: CellOutcome, hidden: HiddenInputs, strict: bool = False) -> CellOutcome:
    """``outcome`` with the values hidden tests sent so far hidden in its outputs and message (``strict``: a
    hidden test's own, see ``hidden_values``)."""
    if hidden:
        hidden.redact_outputs(outcome.outputs, strict)
        outcome.message = hidden.redact(outcome.message, strict)
    return outcome


def untrusted_message(label: str, reasons: str) -> str:
    """The failure of a call whose inputs-unchanged check rests on a report the notebook could forge."""
    who = label[5:] if label.startswith("your ") else label
    return (f"{who}: the grader cannot check that your code leaves its inputs unchanged ({reasons[:300]}), so every "
            "check of unchanged inputs fails for this notebook.\nHint: remove that code (an answer never needs it).")


def _printed(printed: io.StringIO) -> list:
    text = printed.getvalue()
    return [stream_output(text[:MAX_CELL_TEXT_CHARS])] if text else []


def _cell_outputs(reply: dict) -> list:
    """The printed text and figures of a runner's reply, within the caps (whatever the runner sent)."""
    outputs = []
    text = reply.get("stdout")
    if isinstance(text, str) and text:
        outputs.append(stream_output(text[:MAX_CELL_TEXT_CHARS]))
    images = reply.get("images")
    if type(images) is list:
        outputs += [image_output(png) for png in images[:MAX_CELL_IMAGES]
                    if isinstance(png, str) and len(png) <= MAX_IMAGE_CHARS and is_base64(png)]
    return outputs


class AttachedSession(Session):
    """The judge serving a self-study student's own kernel (``autograder.selfgrade``): the kernel is
    our parent, answering on our standard input; it cannot be restarted."""

    def __init__(self, names: list[str], connection: Connection, limit_s: float):
        self.names = list(names)
        self.connection = connection
        self.limits = Limits(cell_timeout_s=int(limit_s), sandbox="none")
        self.call_limit = None
        self.trouble = None
        self.gone = False
        self.untrusted_reports = ""
        self.hidden_inputs = HiddenInputs()
        self.in_hidden_test = False

    def alive(self) -> bool:
        return not self.gone

    def _recover(self) -> None:
        self.gone = True

    def stop(self) -> None:
        pass
