"""``autograder.judge.serving``: the request loop both student-side processes use. One reply per request with
its id, lines that are not requests skipped, the ``until`` stop, a reply JSON cannot hold turned into a
``TypeError`` reply, and ``TimeLimit`` interrupting a slow answer (and only a request being answered)."""

from __future__ import annotations

import json
import signal
import threading
import time

import pytest

from autograder.judge.serving import UNSENDABLE, TimeLimit, read_request, reply_line, serve


def run(lines, answer, limit=None, **kwargs):
    written = []
    stopped = serve(lines, written.append, answer, limit or TimeLimit("stop"), **kwargs)
    return [json.loads(line) for line in written], written, stopped


def test_each_request_gets_one_reply_line_with_its_id():
    replies, written, stopped = run(['{"id": 1, "op": "add", "a": 2, "b": 3}\n', b'{"id": "x", "op": "add", "a": 1, "b": 1}'],
                                    lambda r: {"ok": True, "value": r["a"] + r["b"]})
    assert replies == [{"ok": True, "value": 5, "id": 1}, {"ok": True, "value": 2, "id": "x"}]
    assert all(line.endswith("\n") and line.count("\n") == 1 for line in written)
    assert stopped is None


def test_lines_that_are_not_requests_are_skipped_without_a_reply():
    seen = []
    replies, _, _ = run(["not json", "[1, 2]", "3", b"\xff\xfe", "[" * 100_000, "", '{"id": 9}'],
                        lambda r: seen.append(r) or {"ok": True})
    assert seen == [{"id": 9}]
    assert replies == [{"ok": True, "id": 9}]


def test_until_returns_the_stop_message_unanswered_and_reads_no_further():
    lines = iter(['{"id": 1, "op": "call"}', '{"op": "done", "results": []}', '{"id": 2, "op": "call"}'])
    replies, _, stopped = run(lines, lambda r: {"ok": True}, until="done")
    assert replies == [{"ok": True, "id": 1}]
    assert stopped == {"op": "done", "results": []}
    assert next(lines) == '{"id": 2, "op": "call"}'


def test_a_reply_json_cannot_hold_becomes_a_type_error_reply():
    replies, _, _ = run(['{"id": 4}'], lambda r: {"ok": True, "value": object()})
    assert replies[0]["id"] == 4 and replies[0]["ok"] is False
    assert replies[0]["error"]["type"] == "TypeError"
    assert replies[0]["error"]["message"].startswith(f"{UNSENDABLE}: Object of type object is not JSON serializable")
    assert replies[0]["error"]["where"] == []


def test_an_unsendable_set_or_a_huge_type_name_still_gives_one_bounded_reply():
    line = reply_line({"value": {1j}}, 3)
    assert json.loads(line)["error"]["message"].startswith(UNSENDABLE)
    long = reply_line({"value": type("X" * 5000, (), {})()}, 3)
    assert len(json.loads(long)["error"]["message"]) == 2000


def test_read_request_accepts_only_objects():
    assert read_request('{"op": "run"}') == {"op": "run"}
    assert read_request(b'{"op": "run"}') == {"op": "run"}
    assert [read_request(x) for x in ("null", '"op"', "{", b"\x80")] == [None, None, None, None]


@pytest.fixture
def installed():
    limit = TimeLimit("stopped by the test's limit", on_sigint=True)
    previous = {s: signal.getsignal(s) for s in (signal.SIGALRM, signal.SIGPROF, signal.SIGINT)}
    limit.install()
    yield limit
    limit.uninstall()
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.setitimer(signal.ITIMER_PROF, 0)
    assert {s: signal.getsignal(s) for s in previous} == previous


def test_a_slow_answer_is_interrupted_at_its_limit_and_the_next_request_still_answered(installed):
    def answer(request):
        try:
            time.sleep(request["sleep"])
            return {"ok": True}
        except KeyboardInterrupt as interrupt:
            return {"ok": False, "error": str(interrupt)}

    started = time.monotonic()
    replies, _, _ = run(['{"id": 1, "sleep": 5, "limit": 0.05}', '{"id": 2, "sleep": 0.01, "limit": 1}'],
                        answer, installed)
    assert time.monotonic() - started < 2
    assert replies == [{"ok": False, "error": "stopped by the test's limit", "id": 1}, {"ok": True, "id": 2}]
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)   # no alarm left running between requests
    assert installed.busy is False


def test_a_cpu_clock_limit_counts_this_processs_cpu_seconds_not_the_clock(installed):
    # A test's probes.time_limit: a sleeping answer (no CPU) outlives its limit, a spinning one is stopped,
    # however busy the machine is.
    def answer(request):
        try:
            if request["work"] == "sleep":
                time.sleep(0.3)
            else:
                while True:
                    pass
            return {"ok": True}
        except KeyboardInterrupt as interrupt:
            return {"ok": False, "error": str(interrupt)}

    replies, _, _ = run(['{"id": 1, "work": "sleep", "limit": 0.1, "clock": "cpu"}',
                         '{"id": 2, "work": "spin", "limit": 0.1, "clock": "cpu"}'], answer, installed)
    assert replies == [{"ok": True, "id": 1}, {"ok": False, "error": "stopped by the test's limit", "id": 2}]
    assert signal.getitimer(signal.ITIMER_PROF) == (0.0, 0.0) == signal.getitimer(signal.ITIMER_REAL)


def test_a_cpu_clock_limit_starts_with_no_garbage_left_to_collect(installed):
    # A full collection charged to the timed call would count the heap earlier work built (a test's
    # 95,000-word corpus), not the student's call: the speed clock starts after one.
    import gc

    def collected():
        return sum(stats["collected"] for stats in gc.get_stats())

    gc.disable()                     # only the collections the code under test asks for
    try:
        for _ in range(50_000):      # cycles: only the collector frees them
            cycle = []
            cycle.append(cycle)
        del cycle
        before = collected()
        with installed.applied(5, cpu=True):
            on_entry = collected() - before
            assert signal.getitimer(signal.ITIMER_PROF)[0] > 0
        with installed.applied(5):   # a wall-clock limit (every request's safety net) collects nothing
            assert collected() - before == on_entry
    finally:
        gc.enable()
    assert on_entry >= 50_000


@pytest.mark.parametrize("limit", [None, 0, -1, True, "5"])
def test_a_missing_or_meaningless_limit_sets_no_alarm(installed, limit):
    with installed.applied(limit):
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
        assert installed.busy is True


def test_sigint_interrupts_only_while_a_request_is_answered(installed):
    signal.raise_signal(signal.SIGINT)          # between requests: ignored
    with pytest.raises(KeyboardInterrupt, match="stopped by the test's limit"):
        with installed.applied(None):
            signal.raise_signal(signal.SIGINT)
            time.sleep(1)


def test_without_on_sigint_only_the_alarm_is_taken_over():
    limit = TimeLimit("x")
    before = signal.getsignal(signal.SIGINT)
    limit.install()
    try:
        assert signal.getsignal(signal.SIGINT) is before
        assert signal.getsignal(signal.SIGALRM) == limit._interrupt
    finally:
        limit.uninstall()
    assert limit.installed is False


def test_outside_the_main_thread_nothing_is_installed_and_no_alarm_is_set():
    limit = TimeLimit("x", on_sigint=True)
    seen = {}

    def worker():
        limit.install()
        with limit.applied(0.01):
            seen["timer"] = signal.getitimer(signal.ITIMER_REAL)
            time.sleep(0.05)
        seen["installed"] = limit.installed

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert seen == {"timer": (0.0, 0.0), "installed": False}
