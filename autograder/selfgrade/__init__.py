"""Self-grading for self-study: the instructor's grade, computed by the same judge, in your own notebook.

The last cell of every notebook in the course's public edition calls ``grade_this_notebook``. It
starts the judge (``autograder.judge``) as a child process and answers its calls from this kernel:
the judge runs every graded test of the notebook, visible and hidden, against the answers defined
here now, and prints one line per exercise (points, passed or not), each failed test's whole
message (hint included) under it, and the total. The hidden tests' source is never shown; they travel in a bundle built by
``python -m autograder build`` (``autograder/selfgrade/<assignment>.bin``), with the course's code of the exercises later
ones use: a mistake is charged where it is made, as the grader charges it (``second_pass``).

This is honest only towards yourself: the tests and your code share your machine, so anything can
be faked. A graded class uses the private edition (``python -m autograder build --no-self-grading``),
which ships neither this cell nor the bundles. From a terminal: ``python -m autograder selfgrade
NOTEBOOK`` runs a saved notebook in a fresh kernel and then grades it the same way (the assignment
is the notebook's folder name, else the one whose notebook has its file name, else ``--assignment``).
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

from ..judge.protocol import SelfGradeJob, TestVerdict, verdicts_from
from ..judge.serving import TimeLimit, serve

# Nothing here imports nbformat or nbgrader at module level: on Colab only what the course's own
# package needs is installed, and the self-grading cell must work there.

BUNDLE_DIR = Path(__file__).resolve().parent
CELL_MARKER = "# Self-grading:"
HEADING = "## How did you do? Grade yourself"
# Not a secret: the bundle is obfuscated so that a hidden test is not one click away while you work.
_MASK = b"transformer-course self-grading bundle"


def cell_source(assignment_name: str) -> str:
    return (f"{CELL_MARKER} the instructor's tests, hidden ones included, on the answers this notebook holds.\n"
            f"# Save first: answers count whether or not you ran their cells. Your work is not sent anywhere.\n"
            f"from autograder.selfgrade import grade_this_notebook\n"
            f"grade_this_notebook({assignment_name!r})")


def is_self_grading_cell(cell) -> bool:
    """The two cells ``build`` appends to a public student version (the grader ignores them)."""
    return is_self_grading_source(cell.get("source", ""))


def is_self_grading_source(source) -> bool:
    return isinstance(source, str) and (source.startswith(CELL_MARKER) or source.startswith(HEADING))


def _mask(data: bytes) -> bytes:
    return bytes(b ^ _MASK[i % len(_MASK)] for i, b in enumerate(data))


def make_bundle(source_nb, declared: dict | None = None) -> bytes:
    """The graded test cells of a source notebook, with what the judge needs (the course's code of the exercises
    later ones use included, for the second pass) and what the contracts declare for every call, obfuscated."""
    from ..course import conventions

    tests = []
    for exercise in conventions.exercises(source_nb):
        for index in exercise.test_indices:
            cell = source_nb.cells[index]
            meta = conventions.nbgrader_meta(cell)
            tests.append({"exercise": exercise.name, "grade_id": meta["grade_id"],
                          "points": meta.get("points", 0), "source": cell.source})
    # The course's code of the exercises later ones use, for the second pass: the public edition publishes it.
    references, upstream, _ = conventions.reference_answers(source_nb)
    payload = json.dumps({"names": conventions.exercise_names(source_nb), "tests": tests, "references": references,
                          "upstream": upstream, "contracts": declared or {}}, sort_keys=True)
    return base64.b64encode(_mask(zlib.compress(payload.encode("utf-8"), 9))) + b"\n"


def read_bundle(assignment_name: str) -> dict | None:
    path = BUNDLE_DIR / f"{assignment_name}.bin"
    if not path.exists():
        return None
    return json.loads(zlib.decompress(_mask(base64.b64decode(path.read_bytes()))).decode("utf-8"))


def run_tests(bundle: dict, namespace: dict, limit_s: float = 300.0) -> list[TestVerdict]:
    """Run the bundle's tests in a judge process, answering its calls from ``namespace``; a verdict per test,
    a mistake charged where it is made, as the grader charges it (``second_pass``)."""
    from .second_pass import second_pass

    return second_pass(bundle, namespace, _judged(bundle, namespace, limit_s),
                       lambda part, names: _judged(part, names, limit_s))


def _judged(bundle: dict, namespace: dict, limit_s: float) -> list[TestVerdict]:
    """The bundle's tests run once in a judge process, its calls answered from ``namespace``."""
    from ..sandbox.kernel_agent import Agent

    job = SelfGradeJob(bundle["names"], bundle["tests"], limit_s, bundle.get("contracts", {}))
    process = subprocess.Popen([sys.executable, "-m", "autograder.judge", "--attached"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
    process.stdin.write(job.to_json() + "\n")
    process.stdin.flush()
    limit = TimeLimit("stopped by the self-grading time limit")
    limit.install()   # in the kernel's main thread only; elsewhere the judge's own clock applies

    def write(line: str) -> None:
        process.stdin.write(line)
        process.stdin.flush()

    try:
        done = serve(process.stdout, write, Agent(namespace).handle, limit, until="done")
    finally:
        limit.uninstall()
        process.stdin.close()
        process.wait(timeout=60)
    return verdicts_from(done) if done is not None else []


def summarise(results: list[TestVerdict]) -> tuple[list[list], float, float]:
    """One row per exercise: name, points, verdict, and each failed test's whole message (hint included)."""
    rows, earned, total = [], 0.0, 0.0
    by_exercise: dict[str, list[TestVerdict]] = {}
    for result in results:
        by_exercise.setdefault(result.exercise, []).append(result)
    for exercise, tests in by_exercise.items():
        points = sum(t.points for t in tests)
        got = sum(t.points for t in tests if t.passed)
        earned, total = earned + got, total + points
        failed = [t for t in tests if not t.passed]
        verdict = "passed" if not failed else ("hidden tests failed" if all("hidden" in t.grade_id for t in failed)
                                               else "failed")
        messages = [(t.grade_id, t.message.strip()) for t in tests if not t.passed or t.message]   # passes: the note
        rows.append([exercise, f"{got:g} / {points:g}", verdict, messages])
    return rows, earned, total


def format_table(rows: list[list], earned: float, total: float) -> str:
    """The table the self-grading cell prints: a line per exercise, then each failure's message in full."""
    width = max([len(r[0]) for r in rows] + [8])
    lines = [f"{'exercise':<{width}}  points     result"]
    for name, points, verdict, messages in rows:
        lines.append(f"{name:<{width}}  {points:<9}  {verdict}")
        for grade_id, message in messages:
            text = message.splitlines() or ["(no message)"]
            lines.append(f"    {grade_id}: {text[0]}")
            lines += [f"    {'':{len(grade_id)}}  {line}" for line in text[1:]]
    lines.append(f"\nTotal: {earned:g} / {total:g} points")
    return "\n".join(lines)


TOTAL_LINE = re.compile(r"Total: ([0-9.]+) / ([0-9.]+) points")


def printed_total(text: str) -> tuple[float, float] | None:
    """(earned, out of) from the total line ``format_table`` prints, or None if ``text`` has none."""
    match = TOTAL_LINE.search(text)
    return (float(match.group(1)), float(match.group(2))) if match else None


def grade_this_notebook(assignment_name: str) -> None:
    """Run this notebook's tests (visible and hidden) on the answers it holds; print the table.

    The answers come from the notebook as saved (as on screen on Colab), run afresh, whether or not
    their cells ran in this kernel (``saved_notebook``); where the notebook cannot be found, from
    this kernel as it is now, and the first line says which. Returns None, so the cell shows the
    table only (no ``Out[..]`` echo of the total)."""
    from .saved_notebook import grade_in_fresh_python, locate, unsaved_answers

    bundle = read_bundle(assignment_name)
    if bundle is None:
        known = available_assignments()
        if known:
            print(f"Self-grading has no tests for an assignment named {assignment_name!r} "
                  f"(this edition has: {', '.join(known)}).")
        else:
            print("Self-grading is switched off in this edition of the course (your instructor grades your work).")
        return None
    namespace = _kernel_namespace()
    saved = locate(namespace)
    if saved is None:
        print("Grading the answers this kernel holds now (this notebook's file could not be found from here): "
              "run every cell above first.\n")
        return grade_kernel_answers(assignment_name)
    print(_source_line(saved, unsaved_answers(saved.content, list(namespace.get("In", [])))))
    print(grade_in_fresh_python(saved, assignment_name, is_self_grading_source))
    return None


def grade_kernel_answers(assignment_name: str) -> None:
    """The table for the answers defined in this kernel now (``selfgrade NOTEBOOK`` runs the whole
    notebook first, then this)."""
    rows, earned, total = summarise(run_tests(read_bundle(assignment_name), _kernel_namespace()))
    print(format_table(rows, earned, total))


def _kernel_namespace() -> dict:
    import __main__

    try:
        from IPython import get_ipython

        shell = get_ipython()
        return shell.user_ns if shell is not None else vars(__main__)
    except ImportError:
        return vars(__main__)


def _source_line(saved, unsaved: list[str]) -> str:
    """What is graded, said first: the notebook as saved (when), and any answer run but not saved."""
    import time

    when = "" if saved.saved_at is None else f", saved at {time.strftime('%H:%M:%S', time.localtime(saved.saved_at))}"
    line = (f"Grading the answers written in {saved.where}{when}, run afresh (answers count whether or not "
            f"you ran their cells; the experiments after the last test are skipped).")
    if unsaved:
        line += ("\nNot saved yet: you ran a different version of " + ", ".join(unsaved) +
                 " than the saved notebook holds. Save (Ctrl+S), then run this cell again.")
    return line + "\n"


def available_assignments() -> list[str]:
    """The assignments this edition ships self-grading bundles for."""
    return sorted(p.stem for p in BUNDLE_DIR.glob("*.bin")) if BUNDLE_DIR.is_dir() else []


def infer_assignment(path: Path) -> str | None:
    """The assignment a saved notebook belongs to: its folder's name (``01_next_token/...``), else the
    one assignment whose notebook has its file name (``next_token.ipynb`` -> ``01_next_token``)."""
    known = available_assignments()
    folder = Path(path).resolve().parent.name
    if folder in known:
        return folder
    by_name = [name for name in known if name.split("_", 1)[-1] == Path(path).stem]
    return by_name[0] if len(by_name) == 1 else None


def grade_saved_notebook(path: Path, assignment_name: str | None = None) -> int:
    """``python -m autograder selfgrade NOTEBOOK``: run a saved notebook in a fresh kernel, then grade it.

    Returns the command's exit status: 0 when graded, 2 when the assignment is unknown."""
    path = Path(path)
    known = available_assignments()
    if not known:
        print("Self-grading is switched off in this edition of the course (your instructor grades your work).")
        return 2
    if assignment_name is None:
        assignment_name = infer_assignment(path)
        if assignment_name is None:
            print(f"Could not tell which assignment {path} is: its folder ({path.resolve().parent.name!r}) and its "
                  f"file name ({path.name!r}) name none of this course's assignments ({', '.join(known)}).\n"
                  f"Say which one it is: python -m autograder selfgrade {path} --assignment {known[0]}",
                  file=sys.stderr)
            return 2
    elif assignment_name not in known:
        print(f"There is no assignment named {assignment_name!r}; this course has: {', '.join(known)}.", file=sys.stderr)
        return 2
    for output in _run_with_grading_cell(path, assignment_name):
        if output.get("output_type") == "stream":
            print(output.get("text", ""), end="")
        elif output.get("output_type") == "error":
            print(f"{output.get('ename')}: {output.get('evalue')}")
    return 0


def _run_with_grading_cell(path: Path, assignment_name: str, code: str | None = None) -> list:
    """Run the notebook at ``path`` in a fresh kernel with a grading cell at the end (in place of its
    own; ``code`` instead of the table, as ``selfgrade.progress`` asks); the kernel's stderr goes to ours
    without ipykernel's notices. The grading cell's outputs."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(str(path), as_version=4)
    nb.cells = [c for c in nb.cells if CELL_MARKER not in c.source]
    nb.cells.append(nbformat.v4.new_code_cell(
        code or f"from autograder.selfgrade import grade_kernel_answers\ngrade_kernel_answers({assignment_name!r})"))
    os.environ.setdefault("MPLBACKEND", "Agg")
    client = NotebookClient(nb, timeout=1800, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(path.parent)}})
    with tempfile.TemporaryFile() as log:
        client.execute(stderr=log)   # the kernel's own stderr, filtered below
        log.seek(0)
        kernel_stderr = log.read().decode("utf-8", "replace")
    for line in kernel_stderr.splitlines():
        if line.strip() and not _is_kernel_noise(line):
            print(line, file=sys.stderr)
    return nb.cells[-1].get("outputs", [])


KERNEL_NOISE = ("Kernel is running over TCP without encryption",)
# PyTorch's profiler (Kineto) logs each start and stop to stderr: "USDT:2026-11-29 01:13:08 24126:24126
# SyncActivityProfilerHandler.cpp:52] profiler_start" (notebook 10 asks the profiler which kernel ran).
PROFILER_LOG = re.compile(r"^[A-Z]+:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)? \d+:\d+ \w+\.cpp:\d+\]")


def _is_kernel_noise(line: str) -> bool:
    """ipykernel's start-up notice about its TCP transport, and the profiler's log lines, say nothing about
    the student's work."""
    return any(noise in line for noise in KERNEL_NOISE) or PROFILER_LOG.match(line) is not None
