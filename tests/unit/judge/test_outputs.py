"""``autograder.judge.outputs``: the output objects the judge writes, and the per-notebook budget that
keeps a test's verdict but replaces everything else past 4 MB by one note."""

from __future__ import annotations

import json

from autograder.judge import outputs
from autograder.judge.outputs import (MAX_NOTEBOOK_OUTPUT_BYTES, error_output, image_output, is_base64,
                                      keep_within_budget, stream_output)


def test_output_objects_are_nbformat_outputs():
    assert stream_output("hi\n") == {"output_type": "stream", "name": "stdout", "text": "hi\n"}
    assert image_output("iVBO") == {"output_type": "display_data", "metadata": {}, "data": {"image/png": "iVBO"}}
    assert error_output("ValueError", "bad") == \
        {"output_type": "error", "ename": "ValueError", "evalue": "bad", "traceback": ["ValueError: bad"]}


def test_an_error_shows_at_most_three_places_each_cut_to_200_characters():
    where = ["line 1 in f: x", "line 2 in g: y" + "z" * 300, 3, "line 4 in k"]
    out = error_output("KeyError", "'a'", where)
    assert out["traceback"] == ["KeyError: 'a'", "  line 1 in f: x", "  " + ("line 2 in g: y" + "z" * 300)[:200], "  3"]
    assert error_output("E", "m", "line 1")["traceback"] == ["E: m"]   # only a list is read


def test_base64_is_told_from_other_text():
    assert is_base64("aGVsbG8=") and is_base64("aGVs\nbG8=") and is_base64("")
    assert not is_base64("hello world") and not is_base64("aGVsbG8") and not is_base64("<svg/>")


def size(output) -> int:
    return len(json.dumps(output))


def test_outputs_within_the_budget_are_all_kept_and_counted():
    cell = [stream_output("a" * 100), image_output("QUJD")]
    spent = keep_within_budget(cell, 1000, graded=False)
    assert cell == [stream_output("a" * 100), image_output("QUJD")]
    assert spent == 1000 + size(stream_output("a" * 100)) + size(image_output("QUJD"))


def test_past_the_budget_outputs_are_replaced_by_one_note_but_a_verdict_is_kept():
    big = stream_output("x" * 1000)
    verdict = error_output("CheckFailure", "expected 3, got 4")
    cell = [big, verdict, image_output("QUJD")]
    spent = keep_within_budget(cell, MAX_NOTEBOOK_OUTPUT_BYTES - 10, graded=True)
    assert cell[0] == verdict
    assert cell[1]["output_type"] == "stream" and "passed the 4 MB it keeps per notebook" in cell[1]["text"]
    assert len(cell) == 2 and spent == MAX_NOTEBOOK_OUTPUT_BYTES + 1
    later = [stream_output("y"), error_output("AssertionError", "no")]
    assert keep_within_budget(later, spent, graded=False) == spent
    assert later == []   # the note is shown once; an ungraded cell's error is not a verdict


def test_the_cut_happens_at_the_exact_byte():
    out = stream_output("z")
    fits = [out]
    assert keep_within_budget(fits, MAX_NOTEBOOK_OUTPUT_BYTES - size(out), graded=False) == MAX_NOTEBOOK_OUTPUT_BYTES
    assert fits == [out]
    one_over = [dict(out)]
    keep_within_budget(one_over, MAX_NOTEBOOK_OUTPUT_BYTES - size(out) + 1, graded=False)
    assert one_over[0]["text"].startswith("[output removed by the grader")
    assert outputs.MAX_NOTEBOOK_OUTPUT_BYTES == 4 * 1024 * 1024
