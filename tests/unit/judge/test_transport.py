"""``autograder.judge.transport.Connection`` over a real pipe: the reply with the request's id, stray
lines counted and dropped, and every way a student's process can fail the protocol (garbage, too deep,
too big, silence, exit, a closed pipe) reported as ``RunnerGone`` with its status."""

from __future__ import annotations

import io
import json
import os

import pytest

from autograder.judge import wire
from autograder.judge import transport
from autograder.judge.transport import Connection, RunnerGone
from autograder.judge.protocol import Status


@pytest.fixture
def pipe():
    read_fd, write_fd = os.pipe()
    yield read_fd, write_fd
    for fd in (read_fd, write_fd):
        try:
            os.close(fd)
        except OSError:
            pass


def test_a_request_is_one_line_with_an_id_and_its_limit_and_the_matching_reply_comes_back(pipe):
    read_fd, write_fd = pipe
    sent = io.BytesIO()
    connection = Connection(sent, read_fd)
    os.write(write_fd, b'{"id": 7, "ok": true}\n"noise"\n{"id": 1, "ok": true, "value": 3}\n{"id": 2, "value": 4}\n')
    assert connection.request({"op": "run", "source": "pass"}, 5) == {"id": 1, "ok": True, "value": 3}
    assert json.loads(sent.getvalue()) == {"op": "run", "source": "pass", "id": 1, "limit": 5}
    assert connection.request({"op": "run"}, 5) == {"id": 2, "value": 4}   # the rest stays buffered
    assert sent.getvalue().count(b"\n") == 2


def test_a_reply_split_over_several_reads_is_put_together(pipe):
    read_fd, write_fd = pipe
    connection = Connection(io.BytesIO(), read_fd, b'{"id": 1, "va')
    os.write(write_fd, b'lue": "\xc3\xa9"}\n')
    assert connection.request({}, 5) == {"id": 1, "value": "é"}


@pytest.mark.parametrize("data, status, words", [
    (b"Traceback (most recent call last):\n", Status.PROTOCOL_ERROR, "not a reply"),
    (b"\xff\xfe\n", Status.PROTOCOL_ERROR, "not a reply"),
    (b"[" * 100_000 + b"\n", Status.PROTOCOL_ERROR, "nested too deeply"),
])
def test_a_line_that_is_not_json_is_a_protocol_error(pipe, data, status, words):
    read_fd, _ = pipe
    with pytest.raises(RunnerGone, match=words) as raised:
        Connection(io.BytesIO(), read_fd, data).request({}, 5)
    assert raised.value.status == status


def test_too_many_stray_replies_are_a_protocol_error(pipe, monkeypatch):
    monkeypatch.setattr(transport, "MAX_STRAY_REPLIES", 3)
    read_fd, write_fd = pipe
    os.write(write_fd, b'{"id": 99}\n' * 3 + b'{"id": 1}\n')
    assert Connection(io.BytesIO(), read_fd).request({}, 5) == {"id": 1}
    os.write(write_fd, b'{"id": 99}\n' * 4 + b'{"id": 1}\n')
    with pytest.raises(RunnerGone, match="too many unexpected replies") as raised:
        Connection(io.BytesIO(), read_fd).request({}, 5)
    assert raised.value.status == Status.PROTOCOL_ERROR


def test_a_reply_larger_than_a_message_may_be_is_a_protocol_error(pipe, monkeypatch):
    monkeypatch.setattr(wire, "MAX_MESSAGE_BYTES", 1000)
    read_fd, write_fd = pipe
    os.write(write_fd, b'{"id": 1, "value": "' + b"x" * 2000)
    with pytest.raises(RunnerGone, match="larger than the grader accepts") as raised:
        Connection(io.BytesIO(), read_fd).request({}, 5)
    assert raised.value.status == Status.PROTOCOL_ERROR


def test_silence_past_the_limit_and_its_grace_is_a_timeout(pipe, monkeypatch):
    monkeypatch.setattr(transport, "GRACE_S", 0)
    read_fd, _ = pipe
    with pytest.raises(RunnerGone, match="did not finish within 0.05 s and was stopped") as raised:
        Connection(io.BytesIO(), read_fd).request({}, 0.05)
    assert raised.value.status == Status.TIMEOUT


def test_a_process_that_exits_before_replying_died(pipe):
    read_fd, write_fd = pipe
    os.write(write_fd, b'{"id": 0}\n')
    os.close(write_fd)
    with pytest.raises(RunnerGone, match="exited") as raised:
        Connection(io.BytesIO(), read_fd).request({}, 5)
    assert raised.value.status == Status.KERNEL_DIED


def test_a_request_to_a_closed_pipe_says_the_process_had_exited(pipe):
    class Closed:
        def write(self, data):
            raise BrokenPipeError

    with pytest.raises(RunnerGone, match="had exited") as raised:
        Connection(Closed(), pipe[0]).request({}, 5)
    assert raised.value.status == Status.KERNEL_DIED


# --------------------------------------------------------------------------------------------------
# Issue 28: lines written onto the reply pipe are bounded before they are parsed. A stray line of tens
# of MB (``[],[],...`` takes about twenty times its size as Python lists) once took a judge to 1.8 GB.

def _written_in_a_thread(write_fd: int, data: bytes):
    import threading

    def write():
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(write_fd, view[:1 << 20]):]
        except OSError:
            pass   # the reader stopped reading: what the judge does with a line over the cap
    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


def _peak_while(call):
    """(what ``call`` raised, the peak of Python allocations it made, in MB)."""
    import tracemalloc

    tracemalloc.start()
    try:
        with pytest.raises(RunnerGone) as raised:
            call()
        return raised.value, tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def test_a_stray_line_of_tens_of_megabytes_is_a_protocol_error_without_being_parsed(pipe):
    read_fd, write_fd = pipe
    stray = b"[" + b"[]," * 10_000_000 + b"[]]\n"   # 30 MB; parsed, about 800 MB of lists
    _written_in_a_thread(write_fd, stray + b'{"id": 1}\n')
    error, peak = _peak_while(lambda: Connection(io.BytesIO(), read_fd).request({}, 30))
    print(f"judge's Python allocations while reading a 30 MB stray line: peak {peak:.0f} MB")
    assert error.status == Status.PROTOCOL_ERROR
    assert str(error) == ("the student's process wrote a line of 28.6 MB that is not a reply to the grader "
                          "(written onto the grader's channel?)")
    assert peak < 160, f"the judge held {peak:.0f} MB for a 30 MB line (parsed, it takes about 800 MB)"


def test_a_line_longer_than_a_message_is_cut_off_while_being_read(pipe, monkeypatch):
    monkeypatch.setattr(wire, "MAX_MESSAGE_BYTES", 4 * 2**20)
    read_fd, write_fd = pipe
    thread = _written_in_a_thread(write_fd, b"x" * (64 * 2**20) + b"\n")
    error, peak = _peak_while(lambda: Connection(io.BytesIO(), read_fd).request({}, 30))
    print(f"judge's Python allocations while a 64 MB line arrives (cap 4 MB): peak {peak:.0f} MB")
    assert (error.status, str(error)) == (Status.PROTOCOL_ERROR, "a reply was larger than the grader accepts")
    assert peak < 20, f"the judge buffered {peak:.0f} MB of a line capped at 4 MB"
    os.close(read_fd)
    thread.join(5)


def test_a_reply_with_too_many_values_is_refused_before_parsing(pipe, monkeypatch):
    monkeypatch.setattr(transport, "MAX_REPLY_VALUES", 1000)
    read_fd, write_fd = pipe
    os.write(write_fd, b'{"value": [' + b"0," * 1000 + b'0], "id": 1}\n')
    with pytest.raises(RunnerGone, match="a reply held more than 1,000 values") as raised:
        Connection(io.BytesIO(), read_fd).request({}, 5)
    assert raised.value.status == Status.PROTOCOL_ERROR
    os.write(write_fd, b'{"value": [' + b"0," * 990 + b'0], "id": 1}\n')
    assert len(Connection(io.BytesIO(), read_fd).request({}, 5)["value"]) == 991


def test_many_medium_stray_lines_add_up_to_a_protocol_error(pipe, monkeypatch):
    monkeypatch.setattr(transport, "MAX_STRAY_BYTES", 2 * 2**20)
    read_fd, write_fd = pipe
    _written_in_a_thread(write_fd, (b'"' + b"y" * 500_000 + b'"\n') * 5 + b'{"id": 1}\n')
    with pytest.raises(RunnerGone, match="more than 2.0 MB of lines that are not a reply") as raised:
        Connection(io.BytesIO(), read_fd).request({}, 30)
    assert raised.value.status == Status.PROTOCOL_ERROR
