"""``autograder.judge.transport.Connection`` over a real pipe: the reply with the request's id, stray
lines counted and dropped, and every way a student's process can fail the protocol (garbage, too deep,
too big, silence, exit, a closed pipe) reported as ``RunnerGone`` with its status."""

from __future__ import annotations

import io
import json
import os

import pytest

from autograder import wire
from autograder.judge import transport
from autograder.judge.transport import Connection, RunnerGone
from autograder.protocol import Status


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
