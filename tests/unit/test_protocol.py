"""The grader's statuses: one enum, the strings of the CSV, every one documented for instructors."""

from __future__ import annotations

import csv
import io
import json

from autograder.batch import grading, report
from autograder.judge.protocol import JUDGE_STATUSES, UNREADABLE, Status
from autograder.course.conventions import REPO_ROOT


def test_statuses_are_written_as_their_strings():
    assert json.dumps({"status": Status.KERNEL_DIED}) == '{"status": "kernel died"}'
    assert f"{Status.GRADER_ERROR}" == str(Status.GRADER_ERROR) == "grader error"
    row = report.GradeRow("ann", "01_next_token", None, None, Status.MISSING_NOTEBOOK, "no notebook")
    out = io.StringIO()
    csv.writer(out).writerow([row.status])
    assert out.getvalue().strip() == "missing notebook"
    assert report.GradeRow.from_dict(json.loads(json.dumps(row.as_dict()))).status == Status.MISSING_NOTEBOOK


def test_every_status_is_explained_in_the_instructor_guide():
    guide = (REPO_ROOT / "autograder" / "README.md").read_text(encoding="utf-8")
    missing = [s.value for s in Status if f"`{s.value}`" not in guide]
    assert not missing, f"statuses the instructor guide does not explain: {missing}"


def test_the_judge_statuses_and_the_unreadable_ones_are_disjoint():
    assert set(JUDGE_STATUSES).isdisjoint(UNREADABLE)
    assert grading.STATUSES == JUDGE_STATUSES
    assert grading.verify_result(b"not json", b"k").status == Status.ERROR


# --------------------------------------------------------------------------------------------------
# The messages between the grader, the judge and a student's kernel: round trips, and every malformed
# field refused with ProtocolError (never another exception, never accepted).

import pytest  # noqa: E402

from autograder.judge.protocol import (CellResult, JudgeJob, JudgeResult, ProtocolError, SelfGradeJob,  # noqa: E402
                                 TestVerdict, seal, sign, unseal, verdicts_from, verdicts_message)
from autograder.sandbox.limits import Limits  # noqa: E402

CELLS = [{"cell_type": "code", "source": "x = 1", "metadata": {}},
         {"cell_type": "code", "source": "assert x == 1", "metadata": {"nbgrader": {"grade": True}}}]


def a_job(**changes) -> JudgeJob:
    fields = dict(cells=CELLS, run_indices=[0], answer_cells=[0], cell_labels={"0": "your answer to f"},
                  names=["f"], limits=Limits(cell_timeout_s=7, memory_mb=2048, sandbox="none"),
                  submission_dir="/tmp/ann", hide=["/solutions"])
    fields.update(changes)
    return JudgeJob(**fields)


def test_a_job_survives_its_message_with_its_key():
    job = a_job()
    message = job.to_message(b"\x01\xfe secret")
    assert json.loads(message)["key"] == "01fe20736563726574"
    back, key = JudgeJob.from_message(message)
    assert key == b"\x01\xfe secret"
    assert back == job
    assert back.limits == Limits(cell_timeout_s=7, notebook_timeout_s=900, memory_mb=2048, max_file_mb=256, sandbox="none")


def test_a_job_without_the_optional_fields_gets_their_defaults():
    data = {"cells": CELLS, "run_indices": [0, 1], "names": [], "limits": {}}
    job = JudgeJob.from_dict(data)
    assert (job.answer_cells, job.cell_labels, job.submission_dir, job.hide) == ([], {}, None, [])
    assert job.limits == Limits()


@pytest.mark.parametrize("field, value, words", [
    ("cells", "x = 1", "cells must be a list of objects"),
    ("cells", [["code"]], "cells must be a list of objects"),
    ("cell_labels", {"0": 3}, "cell_labels must map to strings"),
    ("cell_labels", ["0"], "cell_labels must map to strings"),
    ("limits", None, "limits must be an object"),
    ("limits", {"cpu": 3}, "limits: "),
    ("submission_dir", 5, "submission_dir must be a string or null"),
    ("run_indices", [0, "1"], "run_indices must be a list of integers"),
    ("run_indices", None, "run_indices must be a list of integers"),
    ("answer_cells", [True], "answer_cells must be a list of integers"),
    ("names", ["f", 2], "names must be a list of strings"),
    ("hide", "/solutions", "hide must be a list of strings"),
])
def test_every_malformed_field_of_a_job_is_a_protocol_error(field, value, words):
    data = a_job().to_dict()
    data[field] = value
    with pytest.raises(ProtocolError, match=words):
        JudgeJob.from_dict(data)


@pytest.mark.parametrize("limits", [{"cell_timeout_s": 0}, {"memory_mb": "lots"}, {"sandbox": "docker"}])
def test_limits_that_cannot_grade_are_a_protocol_error_too(limits):
    data = a_job().to_dict()
    data["limits"] = limits
    with pytest.raises(ProtocolError, match="limits: "):
        JudgeJob.from_dict(data)


@pytest.mark.parametrize("message", [b"[]", b'{"job": {}}', b'{"key": 5, "job": {}}', b'{"key": "zz", "job": null}'])
def test_a_job_message_without_a_key_or_a_job_is_refused(message):
    with pytest.raises(ProtocolError):
        JudgeJob.from_message(message)


def test_a_job_message_whose_key_is_not_hex_is_a_protocol_error():
    message = json.loads(a_job().to_message(b"k"))
    message["key"] = "not hex"
    with pytest.raises(ProtocolError, match="key"):
        JudgeJob.from_message(json.dumps(message))


def test_a_result_survives_json_with_its_cells_and_timings():
    result = JudgeResult(Status.TIMEOUT, "f: ran past 7 s",
                         [CellResult(0, [{"output_type": "stream", "name": "stdout", "text": "hi\n"}]), CellResult(3, [])],
                         {"test cells": 1.5, "set-up cell": 2})
    back = JudgeResult.from_json(result.to_json())
    assert back == JudgeResult(Status.TIMEOUT, "f: ran past 7 s", result.cells, {"test cells": 1.5, "set-up cell": 2.0})
    assert back.status is Status.TIMEOUT
    assert json.loads(result.to_json())["status"] == "timeout"


def test_a_failed_result_is_an_error_with_no_cells():
    assert JudgeResult.failed("no runner") == JudgeResult(Status.ERROR, "no runner", [], {})
    assert JudgeResult.failed("slow", Status.TIMEOUT).status == Status.TIMEOUT


@pytest.mark.parametrize("changes, words", [
    ({"status": "invalid notebook"}, "not a judge status"),     # a grader status, never the judge's
    ({"status": None}, "not a judge status"),
    ({"detail": None}, "detail must be text"),
    ({"cells": {"0": []}}, "cells must be a list"),
    ({"cells": [{"index": "0", "outputs": []}]}, "integer index"),
    ({"cells": [{"index": 0, "outputs": "text"}]}, "list of outputs"),
    ({"cells": [[0, []]]}, "integer index"),
])
def test_every_malformed_field_of_a_result_is_a_protocol_error(changes, words):
    data = JudgeResult(Status.OK, "", [CellResult(0, [])]).to_dict()
    data.update(changes)
    with pytest.raises(ProtocolError, match=words):
        JudgeResult.from_dict(data)
    with pytest.raises(ProtocolError):
        JudgeResult.from_dict([data])


@pytest.mark.parametrize("timings", [None, [1, 2], {"a": "1"}, {"a": True}])
def test_strange_timings_are_dropped_not_refused(timings):
    data = JudgeResult(Status.OK, "fine").to_dict()
    data["timings"] = timings
    assert JudgeResult.from_dict(data) == JudgeResult(Status.OK, "fine", [], {})


def test_a_sealed_body_comes_back_only_with_the_same_key():
    body = JudgeResult(Status.OK, "all good").to_json()
    envelope = seal(body, b"key-1")
    assert json.loads(envelope) == {"mac": sign(b"key-1", body), "body": body}
    assert len(json.loads(envelope)["mac"]) == 64
    assert unseal(envelope, b"key-1") == body
    assert unseal(envelope.encode("utf-8"), b"key-1") == body
    with pytest.raises(ProtocolError, match="bad signature"):
        unseal(envelope, b"key-2")


def test_a_tampered_body_or_mac_is_refused():
    body = JudgeResult(Status.ERROR, "crashed").to_json()
    envelope = json.loads(seal(body, b"k"))
    forged = dict(envelope, body=body.replace("error", "ok"))
    with pytest.raises(ProtocolError, match="bad signature"):
        unseal(json.dumps(forged), b"k")
    flipped = dict(envelope, mac=("0" if envelope["mac"][0] != "0" else "1") + envelope["mac"][1:])
    with pytest.raises(ProtocolError, match="bad signature"):
        unseal(json.dumps(flipped), b"k")


@pytest.mark.parametrize("envelope, words", [
    (b"\xff\xfe", "not JSON"),
    ("{", "not JSON"),
    ("[" * 100_000, "not JSON"),
    ('["body", "mac"]', "must be an object"),
    ('{"body": "x"}', "needs a body and a mac"),
    ('{"body": 1, "mac": "00"}', "needs a body and a mac"),
])
def test_a_malformed_envelope_is_a_protocol_error(envelope, words):
    with pytest.raises(ProtocolError, match=words):
        unseal(envelope, b"k")


def test_a_self_grading_job_round_trips_and_defaults_its_limit():
    tests = [{"exercise": "f", "grade_id": "test_f", "points": 1, "source": "assert f(1) == 2"}]
    job = SelfGradeJob(["f"], tests, 12.5)
    assert SelfGradeJob.from_json(job.to_json()) == job
    assert SelfGradeJob.from_json(json.dumps({"names": ["f"], "tests": tests})).limit_s == 300.0


@pytest.mark.parametrize("data, words", [
    ([], "a job must be an object"),
    ({"names": ["f"], "tests": [{"grade_id": "t"}]}, "source and a grade_id"),
    ({"names": ["f"], "tests": [{"grade_id": 1, "source": ""}]}, "source and a grade_id"),
    ({"names": ["f"], "tests": "t"}, "source and a grade_id"),
    ({"names": ["f"], "tests": [], "limit_s": 0}, "limit_s must be a positive number"),
    ({"names": ["f"], "tests": [], "limit_s": "5"}, "limit_s must be a positive number"),
    ({"names": ["f"], "tests": [], "limit_s": True}, "limit_s must be a positive number"),
    ({"names": "f", "tests": []}, "names must be a list of strings"),
])
def test_a_malformed_self_grading_job_is_a_protocol_error(data, words):
    with pytest.raises(ProtocolError, match=words):
        SelfGradeJob.from_json(json.dumps(data))


def test_verdicts_round_trip_through_the_last_message():
    verdicts = [TestVerdict("f", "test_f", 1.0, True), TestVerdict("f", "test_f_hidden", 2.0, False, "AssertionError: 3 != 2")]
    message = json.loads(verdicts_message(verdicts))
    assert message["op"] == "done"
    assert verdicts_from(message) == verdicts


def test_a_verdict_passes_only_when_passed_is_exactly_true():
    message = {"results": [{"exercise": "f", "grade_id": "t", "points": "2", "passed": 1}]}
    assert verdicts_from(message) == [TestVerdict("f", "t", 2.0, False, "")]


@pytest.mark.parametrize("message, words", [
    ({}, "results must be a list of objects"),
    ({"results": [1]}, "results must be a list of objects"),
    ({"results": [{"exercise": "f", "points": 1, "passed": True}]}, "a verdict is malformed"),
    ({"results": [{"exercise": "f", "grade_id": "t", "points": "two", "passed": True}]}, "a verdict is malformed"),
    ({"results": [{"exercise": "f", "grade_id": "t", "points": None, "passed": True}]}, "a verdict is malformed"),
])
def test_malformed_verdicts_are_a_protocol_error(message, words):
    with pytest.raises(ProtocolError, match=words):
        verdicts_from(message)
