"""``autograder.judge.session``: student cells run in the runner (outputs capped, timeouts and memory
errors set the status, a dead runner restarted with the cells so far replayed), calls from test cells
(values, exceptions, time limits, inputs changed in place), and test cells run in the judge with the
exercise names bound to handles. The runner is replaced by a scripted connection: no process starts."""

from __future__ import annotations

import io
from types import SimpleNamespace

import pytest
import torch

from autograder.sandbox import confinement, processes
from autograder.sandbox.limits import Limits
from autograder.judge import wire
from autograder.judge import session as session_module
from autograder.judge.handles import Handle, StudentCodeError
from autograder.judge.session import (MAX_RESTARTS, NOT_RUN, STARTUP_TIMEOUT_S, AttachedSession, Session,
                                      is_memory_error)
from autograder.judge.transport import RunnerGone
from autograder.judge.protocol import MAX_CELL_IMAGES, MAX_CELL_TEXT_CHARS, Status
from utils import probes
from utils.checks import CheckFailure

PNG = "iVBORw0KGgo="


class Runner:
    """The scripted student process: each request takes the next reply (a dict, or an exception to raise)."""

    def __init__(self):
        self.replies = []
        self.requests = []
        self.started = 0
        self.killed = 0
        self.dead = False

    def connection(self, writer, fd, buffer=b""):
        runner = self

        class Scripted:
            def request(self, message, limit_s):
                runner.requests.append((message, limit_s))
                reply = runner.replies.pop(0) if runner.replies else {"ok": True}
                if isinstance(reply, BaseException):
                    raise reply
                return reply
        return Scripted()

    def start(self, scratch, limits, hide, log):
        self.started += 1
        self.dead = False
        runner = self

        class Process:
            stdin = io.BytesIO()
            stdout = io.BytesIO()
            stdout.fileno = lambda: -1

            def poll(self):
                return 1 if runner.dead else None
        return Process()

    def kill(self, process):
        self.killed += 1

    def sources(self):
        return [m.get("source") for m, _ in self.requests]


@pytest.fixture
def runner(monkeypatch):
    scripted = Runner()
    monkeypatch.setattr(session_module, "Connection", scripted.connection)
    monkeypatch.setattr(confinement, "start_runner", scripted.start)
    monkeypatch.setattr(processes, "kill_group", scripted.kill)
    return scripted


@pytest.fixture
def session(runner, tmp_path):
    s = Session(tmp_path, Limits(cell_timeout_s=7, sandbox="none"), [], ["double"], tmp_path / "runner.log")
    s.start()
    runner.requests.clear()
    return s


def test_start_runs_an_empty_cell_within_the_start_up_limit(runner, tmp_path):
    s = Session(tmp_path, Limits(sandbox="none"), [], [], tmp_path / "runner.log")
    s.start()
    assert runner.requests == [({"op": "run", "source": "pass"}, STARTUP_TIMEOUT_S)]
    assert (tmp_path / "runner.log").exists() and s.alive()
    s.stop()
    assert runner.killed == 1 and not s.alive()
    s.stop()
    assert runner.killed == 1


def test_a_cell_keeps_its_text_and_valid_figures_within_the_caps(runner, session):
    runner.replies = [{"ok": True, "stdout": "t" * (MAX_CELL_TEXT_CHARS + 5),
                       "images": [PNG, "not base64!", 5, PNG + "A" * 10**6] + [PNG] * 10}]
    outcome = session.run_cell("plot()")
    assert outcome.trouble is None
    assert outcome.outputs[0] == {"output_type": "stream", "name": "stdout", "text": "t" * MAX_CELL_TEXT_CHARS}
    assert [o["data"]["image/png"] for o in outcome.outputs[1:]] == [PNG] * 2   # of the first MAX_CELL_IMAGES
    assert MAX_CELL_IMAGES == 5
    assert runner.requests == [({"op": "run", "source": "plot()"}, 7)]
    assert session.replay == ["plot()"]


def test_a_cell_not_kept_is_not_replayed_and_a_stated_limit_is_used(runner, session):
    session.run_cell("x = 1", keep=False, limit_s=120)
    assert runner.requests == [({"op": "run", "source": "x = 1"}, 120)] and session.replay == []


@pytest.mark.parametrize("error, trouble, message", [
    ({"type": "KeyboardInterrupt", "message": "stopped"}, Status.TIMEOUT, "ran past 7 s"),
    ({"type": "MemoryError", "message": ""}, Status.MEMORY_LIMIT, "ran out of memory"),
    ({"type": "RuntimeError", "message": "CUDA out of memory. Tried to allocate"}, Status.MEMORY_LIMIT, "ran out of memory"),
    ({"type": "NameError", "message": "name 'y' is not defined", "where": ["line 1 in <cell>: y"]}, None, ""),
])
def test_a_failing_cell_shows_its_error_and_only_time_and_memory_set_the_status(runner, session, error, trouble, message):
    runner.replies = [{"ok": False, "error": error, "stdout": "before\n"}]
    outcome = session.run_cell("y")
    assert (outcome.trouble, outcome.message) == (trouble, message)
    assert outcome.outputs[0]["text"] == "before\n"
    assert outcome.outputs[1]["ename"] == error["type"] and outcome.outputs[1]["evalue"] == error["message"]
    assert outcome.outputs[1]["traceback"][1:] == [f"  {w}" for w in error.get("where", [])]


def test_text_and_figures_of_the_wrong_type_are_ignored():
    from autograder.judge.session import _cell_outputs

    assert _cell_outputs({"stdout": 3, "images": "x"}) == []


def test_a_runner_that_dies_in_a_cell_is_restarted_with_the_earlier_cells_replayed(runner, session):
    session.run_cell("import torch")
    session.run_cell("def double(x): return 2 * x")
    runner.requests.clear()
    runner.replies = [RunnerGone(Status.KERNEL_DIED, "the student's process exited")]
    outcome = session.run_cell("import os; os._exit(1)")
    assert outcome.trouble == Status.KERNEL_DIED and outcome.message == "the student's process exited"
    assert outcome.outputs == [{"output_type": "error", "ename": "KernelDied", "evalue": "the student's process exited",
                                "traceback": ["KernelDied: the student's process exited"]}]
    assert runner.sources() == ["import os; os._exit(1)", "pass", "import torch", "def double(x): return 2 * x"]
    assert (runner.started, runner.killed, session.restarts) == (2, 1, 1)
    assert session.replay == ["import torch", "def double(x): return 2 * x"]   # the crashing cell is not replayed


def test_a_runner_found_dead_before_a_cell_is_restarted_first(runner, session):
    session.run_cell("a = 1")
    runner.requests.clear()
    runner.dead = True
    assert session.run_cell("b = a").trouble is None
    assert runner.sources() == ["pass", "a = 1", "b = a"]


def test_a_replayed_cell_that_fails_gives_a_fresh_runner_and_restarts_are_bounded(runner, session):
    session.run_cell("slow()")
    runner.requests.clear()
    runner.replies = [{"ok": True}, RunnerGone(Status.TIMEOUT, "slow"), {"ok": True}]
    session.restart()
    assert runner.sources() == ["pass", "slow()", "pass"]
    session.restarts = MAX_RESTARTS
    with pytest.raises(RunnerGone, match="restarted too many times") as raised:
        session.restart()
    assert raised.value.status == Status.KERNEL_DIED


def test_a_call_returns_the_decoded_value_and_objects_as_handles(runner, session):
    runner.replies = [{"ok": True, "value": wire.encode((torch.tensor([1.0, 2.0]), 3))},
                      {"ok": True, "value": {"$": "ref", "id": 4}}]
    value = session.ask({"op": "call"}, "your double")
    assert torch.equal(value[0], torch.tensor([1.0, 2.0])) and value[1] == 3
    model = session.ask({"op": "call"}, "your Model")
    assert isinstance(model, Handle) and model.id == 4 and repr(model) == "<object from your Model>"
    assert [limit for _, limit in runner.requests] == [7.0, 7.0]
    assert all("clock" not in message for message, _ in runner.requests)   # the cell's limit: the clock


def test_a_call_past_its_limit_fails_the_test_with_the_tests_own_words(runner, session):
    session.call_limit = (20.0, "train_bpe on a 50 KB corpus")
    runner.replies = [{"ok": False, "error": {"type": "KeyboardInterrupt", "message": ""}}]
    with pytest.raises(CheckFailure, match=r"^train_bpe on a 50 KB corpus: did not finish within 20 s, so the grader stopped it.\nHint:"):
        session.ask({"op": "call"}, "your train_bpe")
    assert session.trouble == Status.TIMEOUT and runner.requests[0][1] == 20.0
    assert runner.requests[0][0]["clock"] == "cpu"     # a test's time limit is in the runner's CPU seconds


def test_a_runner_that_does_not_come_back_is_restarted_and_the_call_fails_as_a_timeout(runner, session):
    runner.replies = [RunnerGone(Status.TIMEOUT, "did not finish")]
    with pytest.raises(CheckFailure, match="your double: did not finish within 7 s"):
        session.ask({"op": "call"}, "your double")
    assert session.trouble == Status.TIMEOUT and runner.started == 2
    runner.replies = [RunnerGone(Status.PROTOCOL_ERROR, "garbage")]
    session.trouble = None
    with pytest.raises(RunnerGone, match="garbage"):
        session.ask({"op": "call"}, "your double")
    assert session.trouble == Status.PROTOCOL_ERROR


def test_a_call_to_a_runner_that_is_gone_says_so_with_the_trouble_so_far(runner, session):
    runner.dead = True
    session.trouble = Status.MEMORY_LIMIT
    with pytest.raises(RunnerGone) as raised:
        session.ask({"op": "call"}, "your double")
    assert raised.value.status == Status.MEMORY_LIMIT and runner.requests == []


def test_student_exceptions_come_back_and_memory_errors_set_the_status(runner, session):
    runner.replies = [{"ok": False, "error": {"type": "ValueError", "message": "k must be positive"}},
                      {"ok": False, "error": {"type": "MemoryError", "message": ""}},
                      {"ok": True, "value": {"$": "tensor", "dtype": "float32"}}]
    with pytest.raises(ValueError, match="k must be positive"):
        session.ask({"op": "call"}, "your top_k")
    assert session.trouble is None
    with pytest.raises(MemoryError):
        session.ask({"op": "call"}, "your top_k")
    assert session.trouble == Status.MEMORY_LIMIT
    with pytest.raises(StudentCodeError, match="your top_k returned something the grader cannot read"):
        session.ask({"op": "call"}, "your top_k")


def test_an_argument_changed_in_place_fails_the_call(runner, session):
    x = torch.zeros(3)
    runner.replies = [{"ok": True, "value": None, "changed": [{"arg": 0, "name": "x", "path": [],
                                                               "after": wire.encode(torch.ones(3))}]}]
    with pytest.raises(CheckFailure, match=r"^double modified its argument `x` in place \(3 of 3 values changed\)"):
        session.ask({"op": "call"}, "your double", sent=((x,), {}))
    runner.replies = [{"ok": True, "value": None, "changed": [{"arg": 0, "name": "x", "path": [],
                                                               "after": wire.encode(torch.ones(3))}]}]
    assert session.ask({"op": "call"}, "your double", sent=None) is None   # probes.mutating_call


def test_only_values_the_wire_carries_can_be_sent():
    with pytest.raises(TypeError, match="a test can send the student's code only tensors"):
        Session.send(SimpleNamespace(in_hidden_test=False), object())


def test_a_test_cell_runs_here_with_the_names_as_handles(runner, session):
    runner.replies = [{"ok": True, "value": 4}]
    outcome = session.run_test_cell("print('checking'); assert double(2) == 4\nprint(type(double).__name__)", "test_double")
    assert outcome.trouble is None
    assert outcome.outputs == [{"output_type": "stream", "name": "stdout", "text": "checking\nHandle\n"}]
    message, _ = runner.requests[0]
    assert message["op"] == "call" and message["target"] == {"name": "double"} and message["args"] == [2]
    assert probes._judge is None


def test_a_failing_test_cell_keeps_what_it_printed_and_its_error(runner, session):
    runner.replies = [{"ok": True, "value": 5}]
    outcome = session.run_test_cell("print('checking')\nassert double(2) == 4, 'double(2) should be 4'", "test_double")
    assert outcome.trouble is None
    assert outcome.outputs[0]["text"] == "checking\n"
    assert (outcome.outputs[1]["ename"], outcome.outputs[1]["evalue"]) == ("AssertionError", "double(2) should be 4")


def test_a_test_cell_whose_call_times_out_sets_the_status(runner, session):
    runner.replies = [{"ok": False, "error": {"type": "KeyboardInterrupt", "message": ""}}]
    outcome = session.run_test_cell("double(10**9)", "test_double_hidden")
    assert outcome.trouble == Status.TIMEOUT
    assert outcome.message == "test_double_hidden: your double: did not finish within 7 s, so the grader stopped it."
    assert outcome.outputs[-1]["ename"] == "CheckFailure"


def test_a_test_cell_during_which_the_runner_died_is_not_run(runner, session):
    runner.replies = [RunnerGone(Status.KERNEL_DIED, "the student's process exited")]
    outcome = session.run_test_cell("print('a'); double(1)", "test_double")
    assert outcome.trouble == Status.KERNEL_DIED
    assert outcome.outputs[0]["text"] == "a\n"
    assert outcome.outputs[1]["ename"] == NOT_RUN
    assert "the student's process stopped during this test" in outcome.outputs[1]["evalue"]


def test_each_test_cell_starts_from_the_same_random_state(runner, session):
    first = session.run_test_cell("import torch; print(torch.rand(1).item())", "a").outputs[0]["text"]
    torch.rand(5)
    second = session.run_test_cell("import torch; print(torch.rand(1).item())", "b").outputs[0]["text"]
    torch.manual_seed(0)
    assert first == second == f"{torch.rand(1).item()}\n"


@pytest.mark.parametrize("name, message, expected", [
    ("MemoryError", "", True), ("RuntimeError", "CUDA out of memory", True),
    ("OSError", "[Errno 12] Cannot allocate memory", True), ("RuntimeError", "not enough memory: you tried", True),
    ("ValueError", "memory", False), ("RuntimeError", "shape mismatch", False),
])
def test_memory_errors_are_told_by_name_or_message(name, message, expected):
    assert is_memory_error(name, message) is expected


def test_an_attached_session_cannot_restart_its_kernel_and_stops_asking_once_it_is_gone():
    class Silent:
        calls = 0

        def request(self, message, limit_s):
            Silent.calls += 1
            raise RunnerGone(Status.KERNEL_DIED, "your kernel stopped answering")

    attached = AttachedSession(["f"], Silent(), 30.0)
    assert attached.limits.cell_timeout_s == 30 and attached.limits.sandbox == "none"
    assert attached.alive()
    with pytest.raises(RunnerGone):
        attached.ask({"op": "call"}, "your f")
    assert attached.gone and not attached.alive()
    with pytest.raises(RunnerGone, match="is not running"):
        attached.ask({"op": "call"}, "your f")
    assert Silent.calls == 1
    attached.stop()


HIDDEN_CELL = "### BEGIN HIDDEN TESTS\n{}\n### END HIDDEN TESTS\n"


def test_a_hidden_test_shows_what_the_students_code_raised_without_its_message(runner, session):
    """Issue 47: code can raise its arguments (``raise ValueError(str(x))``); a hidden test shows the type and
    the line, and the test itself still gets the message (a test may read it)."""
    leak = {"ok": False, "error": {"type": "ValueError", "message": "x is tensor([0.4963, 0.7682, 0.0885])",
                                   "where": ["line 3 in double: raise ValueError(f'x is {x}')"]}}
    runner.replies = [dict(leak), dict(leak)]
    source = ("import torch\ntry:\n    double(torch.tensor([0.4963, 0.7682, 0.0885]))\nexcept ValueError as e:\n"
              "    assert '0.4963' in str(e)\ndouble(torch.tensor([0.4963, 0.7682, 0.0885]))")
    visible = session.run_test_cell(source, "test_double")
    assert "0.4963" in visible.outputs[-1]["evalue"], "a visible test shows it: its inputs are in its source"
    runner.replies = [dict(leak), dict(leak)]
    hidden = session.run_test_cell(HIDDEN_CELL.format(source), "test_double_hidden")
    assert hidden.outputs[-1]["ename"] == "ValueError"
    assert hidden.outputs[-1]["evalue"] == ("your double raised ValueError (line 3 in double); a hidden test does not "
                                            "show its message, which can hold the test's inputs.")


def test_a_hidden_tests_inputs_are_hidden_in_its_message_and_in_every_output_after_it(runner, session):
    x = torch.tensor([[0.4963, 0.7682, 0.0885], [0.1320, 0.3074, 0.6341]])
    runner.replies = [{"ok": True, "value": wire.encode(torch.zeros(2, 3))}]
    outcome = session.run_test_cell(HIDDEN_CELL.format(
        "import torch\nx = torch.tensor([[0.4963, 0.7682, 0.0885], [0.1320, 0.3074, 0.6341]])\n"
        "y = double(x)\nassert False, f'double({x}) gave {y}'"), "test_double_hidden")
    message = outcome.outputs[-1]["evalue"]
    assert "0.4963" not in message and "double(tensor([[…, …, …]," in message and "gave tensor([[0., 0., 0.]," in message
    runner.replies = [{"ok": True, "stdout": f"kept: {x}\nand {x.tolist()}\nloss 0.4963\n"}]
    later = session.run_cell("print(KEPT)")
    assert later.outputs[0]["text"] == ("kept: tensor([[…, …, …],\n        […, …, …]])\nand [[…, …, …], […, …, …]]\n"
                                        "loss 0.4963\n"), "runs of an input go; a single number stays"
