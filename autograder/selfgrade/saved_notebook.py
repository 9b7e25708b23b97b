"""Self-grading grades what the notebook holds, not what happens to have run in the kernel.

A student who types an answer and never runs its cell, or interrupts a long training cell before the
exercises below it ran, has the answer in the notebook but not in the kernel. So the self-grading
cell looks for the notebook's own file (or, on Colab, its live contents), runs its answers in a fresh
Python, and grades them there: the same thing ``python -m autograder selfgrade NOTEBOOK`` does from a
terminal, without a second Jupyter kernel (Colab's runtime has none to spare).

Where the notebook is found, in this order:

* Colab: the front end hands over the notebook as it is on screen (unsaved edits included);
* JupyterLab, Jupyter Notebook 7 and other ``jupyter_server`` front ends: ``JPY_SESSION_NAME``, the
  path the server started this kernel for (ipykernel also exposes it as ``__session__``);
* VS Code: ``__vsc_ipynb_file__`` in the kernel's namespace.

Elsewhere (a plain ``ipython``, an exported script) nothing is found and the kernel's answers are
graded, as the cell then says.

What runs in the fresh Python: every code cell above the notebook's last graded test cell, except the
test cells themselves (the judge runs those) — the set-up cell, the given code and the answers. The
experiments after the last test (notebook 09's long training runs) are not needed by any test and are
skipped, which is what keeps self-grading within ``RUN_LIMIT_S``. A cell that raises is reported by
its position and the error, and the cells after it still run, as in the instructor's grader.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

RUN_LIMIT_S = 600
SESSION_VARIABLES = ("JPY_SESSION_NAME",)


@dataclass
class SavedNotebook:
    content: dict          # the notebook as JSON (nbformat 4)
    where: str             # what the student is told: a path, or "this Colab notebook"
    saved_at: float | None  # the file's modification time; None where the content is live


def locate(namespace: dict) -> SavedNotebook | None:
    """The notebook this kernel runs, as saved (or live on Colab); None where it cannot be found."""
    live = _colab_notebook()
    if live is not None:
        return SavedNotebook(live, "this Colab notebook, as on screen", None)
    for candidate in _candidate_paths(namespace):
        try:
            content = json.loads(candidate.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(content, dict) and isinstance(content.get("cells"), list):
            return SavedNotebook(content, str(candidate), candidate.stat().st_mtime)
    return None


def _colab_notebook() -> dict | None:
    if "google.colab" not in sys.modules:
        return None
    try:
        from google.colab import _message

        reply = _message.blocking_request("get_ipynb", request="", timeout_sec=30)
    except Exception:  # noqa: BLE001 - an older or changed Colab: fall back to the other ways
        return None
    content = reply.get("ipynb") if isinstance(reply, dict) else None
    return content if isinstance(content, dict) else None


def _candidate_paths(namespace: dict) -> list[Path]:
    names = [os.environ.get(variable) for variable in SESSION_VARIABLES]
    names += [namespace.get("__session__"), namespace.get("__vsc_ipynb_file__")]
    found = []
    for name in filter(None, names):
        path = Path(str(name)).expanduser()
        # jupyter_server gives the full path; older ones a path relative to the server's root, and
        # the kernel runs in the notebook's folder, so the file's name alone is the fallback.
        for candidate in (path, Path.cwd() / path.name):
            if candidate.suffix == ".ipynb" and candidate.is_file() and candidate not in found:
                found.append(candidate)
    return found


def cells_to_run(content: dict, is_self_grading_source) -> list[tuple[int, str]]:
    """``(position, source)`` of the code cells above the last graded test cell, test cells left out;
    ``position`` counts the notebook's code cells from 1, as the student would."""
    cells = [c for c in content.get("cells", []) if c.get("cell_type") == "code"]
    graded = [i for i, c in enumerate(cells) if c.get("metadata", {}).get("nbgrader", {}).get("grade")
              and not c.get("metadata", {}).get("nbgrader", {}).get("solution")]
    last = graded[-1] if graded else len(cells)
    chosen = []
    for index, cell in enumerate(cells[:last]):
        source = _text(cell.get("source", ""))
        if index not in graded and not is_self_grading_source(source):
            chosen.append((index + 1, source))
    return chosen


def _text(source) -> str:
    return "".join(source) if isinstance(source, list) else str(source)


def unsaved_answers(content: dict, history: list[str]) -> list[str]:
    """The answers whose last run in this kernel differs from the saved notebook: named by their
    first ``def``/``class`` line. ``history`` is the kernel's ``In`` list, oldest first."""
    differ = []
    for cell in content.get("cells", []):
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell.get("cell_type") != "code" or not meta.get("solution") or meta.get("grade"):
            continue
        saved = _text(cell.get("source", "")).strip()
        heading = _first_definition(saved)
        ran = [entry.strip() for entry in history if heading and _first_definition(entry) == heading]
        if ran and ran[-1] != saved:
            differ.append(heading)
    return differ


def _first_definition(source: str) -> str | None:
    for line in source.splitlines():
        if line.startswith(("def ", "class ")):
            return line.split("(")[0].split(":")[0].strip()
    return None


def grade_in_fresh_python(saved: SavedNotebook, assignment_name: str, is_self_grading_source,
                          limit_s: float = RUN_LIMIT_S) -> str:
    """Run the saved notebook's answers in a new Python (``python -m autograder.selfgrade``) and grade
    them there; the text to print."""
    chosen = cells_to_run(saved.content, is_self_grading_source)
    env = {k: v for k, v in os.environ.items() if k not in SESSION_VARIABLES}
    env.setdefault("MPLBACKEND", "Agg")
    folder = Path(saved.where).parent if saved.saved_at is not None else Path.cwd()
    with tempfile.TemporaryDirectory() as scratch:
        job = Path(scratch) / "job.json"
        job.write_text(json.dumps({"assignment": assignment_name, "cells": chosen}), encoding="utf-8")
        try:
            done = subprocess.run([sys.executable, "-m", "autograder.selfgrade", str(job)], cwd=folder,
                                  env=env, capture_output=True, text=True, timeout=limit_s)
        except subprocess.TimeoutExpired:
            return (f"Stopped: running the {len(chosen)} cells of your notebook took more than {limit_s / 60:g} "
                    f"minutes. Look for a cell above the last test that runs for long, and try again.")
    if done.returncode != 0:
        return f"Self-grading could not run your notebook's cells:\n{done.stderr.strip()[-2000:]}"
    return done.stdout.rstrip()


def run_cells(cells: list) -> tuple[dict, list[str], float]:
    """In the fresh Python: run ``(position, source)`` cells in an IPython shell (magics work), their
    output swallowed. The shell's namespace, a line per cell that raised, and the seconds taken."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    started, failures = time.monotonic(), []
    for number, source in cells:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            result = shell.run_cell(source, store_history=False, silent=True)
        error = result.error_before_exec or result.error_in_exec
        if error is not None:
            failures.append(f"  code cell {number} ({_first_line(source)}): {type(error).__name__}: {error}")
    return shell.user_ns, failures, time.monotonic() - started


def _first_line(source: str) -> str:
    lines = [line for line in source.splitlines() if line.strip()]
    return (lines[0][:60] + ("…" if len(lines[0]) > 60 else "")) if lines else "empty"
