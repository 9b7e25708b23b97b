"""Self-grading for self-study: the instructor's grade, computed by the same judge, in your own notebook.

The last cell of every notebook in the course's public edition calls ``grade_this_notebook``. It
starts the judge (``autograder.judge``) as a child process and answers its calls from this kernel:
the judge runs every graded test of the notebook, visible and hidden, against the answers defined
here now, and prints one line per exercise (points, passed or not, and the message of the first
failed check). The hidden tests' source is never shown; they travel in a bundle built by
``python -m autograder build`` (``autograder/selfgrade/<assignment>.bin``).

This is honest only towards yourself: the tests and your code share your machine, so anything can
be faked. A graded class uses the private edition (``python -m autograder build --no-self-grading``),
which ships neither this cell nor the bundles. From a terminal: ``python -m autograder selfgrade
NOTEBOOK`` runs a saved notebook in a fresh kernel and then grades it the same way.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import zlib
from pathlib import Path

# Nothing here imports nbformat or nbgrader at module level: on Colab only what the course's own
# package needs is installed, and the self-grading cell must work there.

BUNDLE_DIR = Path(__file__).resolve().parent / "selfgrade"
CELL_MARKER = "# Self-grading:"
HEADING = "## How did you do? Grade yourself"
# Not a secret: the bundle is obfuscated so that a hidden test is not one click away while you work.
_MASK = b"transformer-course self-grading bundle"


def cell_source(assignment_name: str) -> str:
    return (f"{CELL_MARKER} the instructor's tests, hidden ones included, on your answers as they are now.\n"
            f"# Run every cell above first. Your work is not sent anywhere.\n"
            f"from autograder.selfgrade import grade_this_notebook\n"
            f"grade_this_notebook({assignment_name!r})")


def is_self_grading_cell(cell) -> bool:
    """The two cells ``build`` appends to a public student version (the grader ignores them)."""
    source = cell.get("source", "")
    return isinstance(source, str) and (source.startswith(CELL_MARKER) or source.startswith(HEADING))


def _mask(data: bytes) -> bytes:
    return bytes(b ^ _MASK[i % len(_MASK)] for i, b in enumerate(data))


def make_bundle(source_nb) -> bytes:
    """The graded test cells of a source notebook, with what the judge needs, obfuscated."""
    from . import conventions

    tests = []
    for exercise in conventions.exercises(source_nb):
        for index in exercise.test_indices:
            cell = source_nb.cells[index]
            meta = conventions.nbgrader_meta(cell)
            tests.append({"exercise": exercise.name, "grade_id": meta["grade_id"],
                          "points": meta.get("points", 0), "source": cell.source})
    payload = json.dumps({"names": conventions.exercise_names(source_nb), "tests": tests}, sort_keys=True)
    return base64.b64encode(_mask(zlib.compress(payload.encode("utf-8"), 9))) + b"\n"


def read_bundle(assignment_name: str) -> dict | None:
    path = BUNDLE_DIR / f"{assignment_name}.bin"
    if not path.exists():
        return None
    return json.loads(zlib.decompress(_mask(base64.b64decode(path.read_bytes()))).decode("utf-8"))


def run_tests(bundle: dict, namespace: dict, limit_s: float = 300.0) -> list[dict]:
    """Run the bundle's tests in a judge process, answering its calls from ``namespace``."""
    from .kernel_agent import Agent

    agent = Agent(namespace)
    job = {"names": bundle["names"], "tests": bundle["tests"], "limit_s": limit_s}
    process = subprocess.Popen([sys.executable, "-m", "autograder.judge", "--attached"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
    process.stdin.write(json.dumps(job) + "\n")
    process.stdin.flush()
    results: list[dict] = []

    def interrupt(signum, frame):
        raise KeyboardInterrupt("stopped by the self-grading time limit")

    previous = signal.signal(signal.SIGALRM, interrupt) if _main_thread() else None
    try:
        for line in process.stdout:
            message = json.loads(line)
            if message.get("op") == "done":
                results = message["results"]
                break
            limit = message.get("limit")
            if previous is not None and isinstance(limit, (int, float)) and limit > 0:
                signal.setitimer(signal.ITIMER_REAL, float(limit))
            try:
                reply = agent.handle(message)
            finally:
                if previous is not None:
                    signal.setitimer(signal.ITIMER_REAL, 0)
            reply["id"] = message.get("id")
            try:
                text = json.dumps(reply)
            except (TypeError, ValueError) as error:
                text = json.dumps({"id": message.get("id"), "ok": False,
                                   "error": {"type": "TypeError", "message": str(error), "where": []}})
            process.stdin.write(text + "\n")
            process.stdin.flush()
    finally:
        if previous is not None:
            signal.signal(signal.SIGALRM, previous)
        process.stdin.close()
        process.wait(timeout=60)
    return results


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def summarise(results: list[dict]) -> tuple[list[list[str]], float, float]:
    """One row per exercise: name, points, verdict, first failure message."""
    rows, earned, total = [], 0.0, 0.0
    by_exercise: dict[str, list[dict]] = {}
    for result in results:
        by_exercise.setdefault(result["exercise"], []).append(result)
    for exercise, tests in by_exercise.items():
        points = sum(t["points"] for t in tests)
        got = sum(t["points"] for t in tests if t["passed"])
        earned, total = earned + got, total + points
        failed = [t for t in tests if not t["passed"]]
        verdict = "passed" if not failed else ("hidden tests failed" if all("hidden" in t["grade_id"] for t in failed)
                                               else "failed")
        message = failed[0]["message"].strip().splitlines()[0][:160] if failed and failed[0]["message"].strip() else ""
        rows.append([exercise, f"{got:g} / {points:g}", verdict, message])
    return rows, earned, total


def grade_this_notebook(assignment_name: str) -> float | None:
    """Run this notebook's tests (visible and hidden) on the answers defined now; print the table."""
    bundle = read_bundle(assignment_name)
    if bundle is None:
        print("Self-grading is switched off in this edition of the course (your instructor grades your work).")
        return None
    import __main__

    try:
        from IPython import get_ipython

        shell = get_ipython()
        namespace = shell.user_ns if shell is not None else vars(__main__)
    except ImportError:
        namespace = vars(__main__)
    results = run_tests(bundle, namespace)
    rows, earned, total = summarise(results)
    width = max([len(r[0]) for r in rows] + [8])
    print(f"{'exercise':<{width}}  points     result")
    for name, points, verdict, message in rows:
        print(f"{name:<{width}}  {points:<9}  {verdict}" + (f": {message}" if message else ""))
    print(f"\nTotal: {earned:g} / {total:g} points")
    return earned


def grade_saved_notebook(path: Path, assignment_name: str | None = None) -> float | None:
    """``python -m autograder selfgrade NOTEBOOK``: run a saved notebook in a fresh kernel, then grade it."""
    import nbformat
    from nbclient import NotebookClient

    path = Path(path)
    nb = nbformat.read(str(path), as_version=4)
    if assignment_name is None:
        assignment_name = path.resolve().parent.name
    nb.cells = [c for c in nb.cells if CELL_MARKER not in c.source]
    nb.cells.append(nbformat.v4.new_code_cell(
        f"from autograder.selfgrade import grade_this_notebook\n_ = grade_this_notebook({assignment_name!r})"))
    os.environ.setdefault("MPLBACKEND", "Agg")
    client = NotebookClient(nb, timeout=1800, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    last = nb.cells[-1]
    for output in last.get("outputs", []):
        if output.get("output_type") == "stream":
            print(output.get("text", ""), end="")
        elif output.get("output_type") == "error":
            print(f"{output.get('ename')}: {output.get('evalue')}")
    return None
