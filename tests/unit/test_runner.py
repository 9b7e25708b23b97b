"""``autograder.sandbox.runner``, the sandboxed process's own code, without a sandbox: the working folder goes
last on ``sys.path``, the submission's files are copied to the work folder, a cell's text and figures
are capped by the protocol's numbers, ``run`` requests run cells and every other op reaches the call
protocol over the same namespace, and ``main`` answers each request line on the saved standard output."""

from __future__ import annotations

import io
import json
import os
import signal
import sys
import types

import pytest

from autograder.sandbox import runner
from autograder.judge.protocol import MAX_CELL_IMAGES, MAX_CELL_TEXT_CHARS, MAX_IMAGE_CHARS


def test_the_working_folder_goes_last_on_sys_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", ["", "/lib/python", str(tmp_path), ".", "/site-packages"])
    runner._course_paths_first()
    assert sys.path == ["/lib/python", "/site-packages", str(tmp_path)]


def test_the_submission_is_copied_to_the_work_folder_which_becomes_the_current_one(tmp_path, monkeypatch):
    seed, work = tmp_path / "seed", tmp_path / "work"
    (seed / "data").mkdir(parents=True)
    (seed / "data" / "corpus.txt").write_text("héllo")
    (seed / "helper.py").write_text("X = 1\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COURSE_RUNNER_SEED", str(seed))
    monkeypatch.setenv("COURSE_RUNNER_WORK", str(work))
    runner._enter_workdir()
    assert os.getcwd() == str(work)
    assert (work / "data" / "corpus.txt").read_text() == "héllo"
    assert (work / "helper.py").read_text() == "X = 1\n"


def test_without_a_seed_the_runner_stays_where_it_was_started(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("COURSE_RUNNER_SEED", raising=False)
    monkeypatch.setenv("COURSE_RUNNER_WORK", str(tmp_path / "work"))
    runner._enter_workdir()
    assert os.getcwd() == str(tmp_path) and not (tmp_path / "work").exists()


def test_text_is_kept_up_to_the_cap_and_marked_when_cut():
    exact = "a" * MAX_CELL_TEXT_CHARS
    assert runner._text(exact) == exact
    cut = runner._text(exact + "tail")
    assert cut == exact + "\n... [output truncated by the grader]\n"


def _output(data):
    return types.SimpleNamespace(data=data)


def test_only_png_figures_within_the_caps_are_kept():
    outputs = [_output({"image/png": "AAAA"}), _output({"text/plain": "<Figure>"}), object(),
               _output({"image/png": "B" * (MAX_IMAGE_CHARS + 1)}), _output({"image/png": b"bytes"}),
               _output(None)] + [_output({"image/png": f"P{i}"}) for i in range(MAX_CELL_IMAGES)]
    # Only the first MAX_CELL_IMAGES outputs are looked at; of those only "AAAA" is a PNG within the cap.
    assert MAX_CELL_IMAGES == 5
    assert runner._images(outputs) == ["AAAA"]
    assert runner._images([_output({"image/png": f"P{i}"}) for i in range(MAX_CELL_IMAGES + 2)]) == \
        [f"P{i}" for i in range(MAX_CELL_IMAGES)]


class FakeShell:
    """Runs a cell with exec, reporting errors the way IPython's ExecutionResult does."""

    def __init__(self):
        self.user_ns = {}
        self.ran = []

    def run_cell(self, source, store_history):
        self.ran.append((source, store_history))
        try:
            exec(compile(source, "<cell>", "exec"), self.user_ns)  # noqa: S102 - the test's own cells
            error = None
        except Exception as exc:  # noqa: BLE001
            error = exc
        return types.SimpleNamespace(error_in_exec=error, error_before_exec=None)


def test_a_cell_reply_carries_its_printed_text_and_its_error():
    shell = FakeShell()
    ok = runner._run_cell(shell, "print('hi'); import sys; print('warn', file=sys.stderr)")
    assert ok == {"ok": True, "error": None, "stdout": "hi\nwarn\n", "images": []}
    failed = runner._run_cell(shell, "print('before')\nraise ValueError('bad shape')")
    assert failed["ok"] is False and failed["stdout"] == "before\n"
    assert (failed["error"]["type"], failed["error"]["message"]) == ("ValueError", "bad shape")
    assert shell.ran[0][1] is False   # nothing kept in IPython's history


def test_run_requests_run_cells_and_other_ops_reach_the_call_protocol_over_the_same_namespace(monkeypatch):
    from IPython.core import interactiveshell

    shell = FakeShell()
    monkeypatch.setattr(interactiveshell.InteractiveShell, "instance", classmethod(lambda cls, config=None: shell))
    answer = runner._answerer()
    assert answer({"op": "run", "source": "def double(x):\n    return 2 * x\n"})["ok"] is True
    assert answer({"op": "call", "target": {"name": "double"}, "args": [21], "kwargs": {"$": "dict", "items": []}}) \
        == {"ok": True, "value": 42}
    missing = answer({"op": "getattr", "target": {"name": "triple"}, "name": "x"})
    assert missing["ok"] is False and missing["error"]["type"] == "NameError"
    assert answer({"op": "run"})["ok"] is True   # no source: an empty cell


def test_main_answers_each_request_on_the_saved_output_and_sends_fds_1_and_2_to_the_log(monkeypatch, tmp_path):
    requests = io.StringIO('{"id": 1, "op": "run", "source": "x"}\nnoise\n{"id": 2, "op": "ping"}\n')
    replies = io.StringIO()
    replies.close = lambda: None
    dup2 = []
    fake_os = types.SimpleNamespace(
        getcwd=os.getcwd, environ={}, devnull=os.devnull, O_RDONLY=os.O_RDONLY,
        dup=lambda fd: 100 + fd, open=lambda path, flags: 7, dup2=lambda a, b: dup2.append((a, b)),
        fdopen=lambda fd, mode, encoding=None: {101: replies, 100: requests}[fd])   # copies of fds 1 and 0
    monkeypatch.setattr(runner, "os", fake_os)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(runner, "_answerer", lambda: lambda request: {"ok": True, "op": request.get("op")})
    handlers = {s: signal.getsignal(s) for s in (signal.SIGALRM, signal.SIGINT)}
    try:
        assert runner.main() == 0
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
    assert [json.loads(line) for line in replies.getvalue().splitlines()] == \
        [{"ok": True, "op": "run", "id": 1}, {"ok": True, "op": "ping", "id": 2}]
    assert dup2 == [(7, 0), (2, 1)]   # standard input from /dev/null, fd 1 into the log (fd 2)
    assert fake_os.environ["MPLBACKEND"] == "Agg"
