"""The outputs the judge writes into the graded notebook, and the budget they must fit in."""

from __future__ import annotations

import base64
import binascii
import json

MAX_NOTEBOOK_OUTPUT_BYTES = 4 * 1024 * 1024  # text and images of all cells together (see keep_within_budget)


def stream_output(text: str) -> dict:
    return {"output_type": "stream", "name": "stdout", "text": text}


def error_output(ename: str, evalue: str, where=None) -> dict:
    lines = [f"{ename}: {evalue}"]
    if type(where) is list:
        lines += [f"  {str(w)[:200]}" for w in where[:3]]
    return {"output_type": "error", "ename": ename, "evalue": evalue, "traceback": lines}


def image_output(png: str) -> dict:
    return {"output_type": "display_data", "metadata": {}, "data": {"image/png": png}}


def is_base64(text: str) -> bool:
    try:
        base64.b64decode(text.replace("\n", ""), validate=True)
        return True
    except (binascii.Error, ValueError):
        return False


def keep_within_budget(outputs: list, spent: int, graded: bool) -> int:
    """Drop outputs (in place) once the notebook's outputs pass ``MAX_NOTEBOOK_OUTPUT_BYTES``; return the new total.

    A test cell's error output is always kept (it is the verdict); everything else past the budget is
    replaced, once, by a note. So a small notebook can never make the judge, the gradebook or a
    feedback page hold hundreds of megabytes.
    """
    kept, dropped = [], False
    for output in outputs:
        size = len(json.dumps(output))
        if spent + size <= MAX_NOTEBOOK_OUTPUT_BYTES:
            kept.append(output)
            spent += size
        elif graded and output.get("output_type") == "error":
            kept.append(output)   # past the budget: the budget is full, but the note is still to be shown
            spent = max(spent, MAX_NOTEBOOK_OUTPUT_BYTES)
        else:
            dropped = True
    if dropped and spent <= MAX_NOTEBOOK_OUTPUT_BYTES:
        kept.append(stream_output(f"[output removed by the grader: the notebook's outputs passed the "
                                  f"{MAX_NOTEBOOK_OUTPUT_BYTES // 2**20} MB it keeps per notebook]\n"))
        spent = MAX_NOTEBOOK_OUTPUT_BYTES + 1  # the note is shown once
    outputs[:] = kept
    return spent
