"""``python -m autograder selfgrade FOLDER``: every saved notebook of the course graded, and a progress
table across the course (points per notebook, the exercises to revisit) for one student working alone.

Each notebook under ``FOLDER`` (``notebooks/01_next_token/next_token.ipynb``, or any ``*.ipynb`` whose
folder or file name names an assignment) runs in a fresh kernel with a last cell that grades it the
way the self-grading cell does (``selfgrade.run_tests``) and prints the result as one JSON line, read
back here. With ``--html FILE`` the same progress is written as a page with a figure (points per
notebook), made like the class report's (no script, no request).
"""

from __future__ import annotations

import hashlib
import html
import json
import sys
from pathlib import Path

from . import _run_with_grading_cell, available_assignments, infer_assignment, read_bundle, run_tests, summarise

RESULT_MARKER = "course-selfgrade-result:"


def print_result(assignment_name: str) -> None:
    """In the notebook's kernel: grade the answers defined now and print one JSON line (``RESULT_MARKER``)."""
    import __main__

    bundle = read_bundle(assignment_name)
    if bundle is None:
        print(RESULT_MARKER + json.dumps({"error": f"no self-grading tests for {assignment_name}"}))
        return
    try:
        from IPython import get_ipython

        namespace = get_ipython().user_ns
    except (ImportError, AttributeError):
        namespace = vars(__main__)
    rows, earned, total = summarise(run_tests(bundle, namespace))
    print(RESULT_MARKER + json.dumps({"rows": rows, "earned": earned, "total": total}))


def course_notebooks(folder: Path) -> list[tuple[str, Path]]:
    """``(assignment, notebook)`` for every saved notebook under ``folder`` that names an assignment, in course order."""
    found: dict[str, Path] = {}
    for path in sorted(Path(folder).rglob("*.ipynb")):
        if ".ipynb_checkpoints" in path.parts:
            continue
        name = infer_assignment(path)
        if name is not None and name not in found:
            found[name] = path
    return sorted(found.items())


NOT_STARTED = "not answered yet (the notebook is as released: skipped, nothing was run)"


def not_started(assignment: str) -> dict:
    """The result of a notebook still as released, without running it: 0 of every exercise's points."""
    points: dict[str, float] = {}
    for test in read_bundle(assignment)["tests"]:
        points[test["exercise"]] = points.get(test["exercise"], 0.0) + test["points"]
    rows = [[name, f"0 / {total:g}", "failed", [("", NOT_STARTED)]] for name, total in points.items()]
    return {"rows": rows, "earned": 0.0, "total": sum(points.values())}


def nbgrader_checksum(cell) -> str:
    """nbgrader's checksum of a cell (``nbgrader.utils.compute_checksum``, which the release stores in each
    answer cell's metadata), computed here because a student's install has no nbgrader."""
    meta = cell["metadata"]["nbgrader"]
    digest = hashlib.md5()
    for part in (cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"]), cell["cell_type"],
                 str(bool(meta.get("grade"))), str(bool(meta.get("solution"))), str(bool(meta.get("locked"))),
                 meta["grade_id"]):
        digest.update(part.encode("utf-8"))
    if meta.get("grade"):
        digest.update(str(float(meta["points"])).encode("utf-8"))
    return digest.hexdigest()


def untouched(path: Path) -> bool:
    """Whether every answer cell of the saved notebook at ``path`` is still as released (its source matches
    the checksum the release stored); False when the notebook cannot be read or has no answer cell."""
    try:
        cells = json.loads(Path(path).read_text(encoding="utf-8"))["cells"]
        answers = [c for c in cells if isinstance(c.get("metadata", {}).get("nbgrader"), dict)
                   and c["metadata"]["nbgrader"].get("solution") and "checksum" in c["metadata"]["nbgrader"]]
        return bool(answers) and all(nbgrader_checksum(c) == c["metadata"]["nbgrader"]["checksum"] for c in answers)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


def grade_notebook(assignment: str, path: Path) -> dict:
    """The notebook run and graded: ``{"rows", "earned", "total"}``, or ``{"error": ...}``."""
    code = f"from autograder.selfgrade.progress import print_result\nprint_result({assignment!r})"
    try:
        outputs = _run_with_grading_cell(path, assignment, code)
    except Exception as error:  # noqa: BLE001 - one notebook that cannot run never stops the table
        return {"error": f"the notebook could not be run: {type(error).__name__}: {str(error)[:200]}"}
    for output in outputs:
        for line in str(output.get("text", "")).splitlines():
            if line.startswith(RESULT_MARKER):
                return json.loads(line[len(RESULT_MARKER):])
        if output.get("output_type") == "error":
            return {"error": f"grading failed: {output.get('ename')}: {str(output.get('evalue'))[:200]}"}
    return {"error": "grading printed no result"}


def progress_rows(results: dict[str, dict]) -> list[dict]:
    """One row per notebook: points, and the exercises to revisit (not full marks) with their first failed test."""
    rows = []
    for assignment, result in results.items():
        if "error" in result:
            rows.append({"assignment": assignment, "earned": 0.0, "total": None, "revisit": [], "error": result["error"]})
            continue
        revisit = [{"exercise": name, "points": points, "first_failure": _first_line(messages)}
                   for name, points, verdict, messages in result["rows"] if verdict != "passed"]
        rows.append({"assignment": assignment, "earned": result["earned"], "total": result["total"], "revisit": revisit})
    return rows


def _first_line(messages: list) -> str:
    """The first failed test's message, first line; an exercise still raising NotImplementedError is not started."""
    if not messages:
        return ""
    text = (str(messages[0][1]).strip().splitlines() or [""])[0]
    return "not answered yet" if text.startswith("NotImplementedError") or text == NOT_STARTED else text[:120]


def _points(row: dict) -> str:
    return "—" if row["total"] is None else f"{row['earned']:g} / {row['total']:g}"


def _todo(row: dict) -> str:
    if row.get("error"):
        return row["error"]
    return ", ".join(f"{r['exercise']} ({r['points']})" for r in row["revisit"]) or "nothing: full marks"


def format_progress(rows: list[dict]) -> str:
    """The progress table printed across the course, with the total."""
    width = max([len(r["assignment"]) for r in rows] + [8])
    lines = [f"{'notebook':<{width}}  {'points':<11}  to revisit"]
    for row in rows:
        lines.append(f"{row['assignment']:<{width}}  {_points(row):<11}  {_todo(row)}")
    earned = sum(r["earned"] for r in rows if r["total"] is not None)
    total = sum(r["total"] for r in rows if r["total"] is not None)
    lines.append(f"\nTotal: {earned:g} / {total:g} points over {len(rows)} notebook(s)")
    for row in rows:
        for item in row["revisit"]:
            if item["first_failure"]:
                lines.append(f"  {row['assignment']} {item['exercise']}: {item['first_failure']}")
    return "\n".join(lines)


def progress_page(rows: list[dict]) -> str:
    """The progress as a self-contained page: the table and a figure of the points per notebook."""
    from ..batch.gradebook import CSP
    from ..batch.report_figures import progress_png

    scored = [r for r in rows if r["total"]]
    figure = progress_png([r["assignment"] for r in scored], [100 * r["earned"] / r["total"] for r in scored])
    body = "".join(f"<tr><td>{html.escape(r['assignment'])}</td><td>{_points(r)}</td><td>{html.escape(_todo(r))}</td></tr>"
                   for r in rows)
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head>\n{CSP}\n<meta charset=\"utf-8\"><title>Your progress</title>\n"
            "<style>body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:60em;padding:0 1em}"
            "td,th{padding:.2em .6em;text-align:left;vertical-align:top}</style></head>\n<body><h1>Your progress</h1>\n"
            f"<img src=\"data:image/png;base64,{figure}\" alt=\"points per notebook\">\n"
            f"<table><tr><th>notebook</th><th>points</th><th>to revisit</th></tr>{body}</table>\n</body></html>\n")


def grade_folder(folder: Path, html_path: Path | None = None) -> int:
    """``python -m autograder selfgrade FOLDER``: grade every saved notebook, print the progress table."""
    if not available_assignments():
        print("Self-grading is switched off in this edition of the course (your instructor grades your work).")
        return 2
    notebooks = course_notebooks(folder)
    if not notebooks:
        print(f"No notebook of this course under {folder} (expected e.g. {folder}/01_next_token/next_token.ipynb).",
              file=sys.stderr)
        return 2
    results = {}
    for assignment, path in notebooks:
        if untouched(path):   # nothing to run: a second for the folder, not a kernel per notebook
            results[assignment] = not_started(assignment)
            continue
        print(f"grading {path} ...", file=sys.stderr, flush=True)
        results[assignment] = grade_notebook(assignment, path)
    rows = progress_rows(results)
    print(format_progress(rows))
    if html_path is not None:
        Path(html_path).write_text(progress_page(rows), encoding="utf-8")
        print(f"\nProgress page: {html_path}")
    return 0
