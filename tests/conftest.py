"""Shared fixtures: the course's assignments, one notebook run per assignment, and the run report.

Each notebook runs once in full per session (``notebook_run``): its student version with the solutions
filled in, on a simulated Colab (tests/simulated_colab.py) in a folder of its own (notebooks 09 and 12 with
the student's earlier notebooks beside them, ``NOTEBOOKS_BESIDE``), timed in CPU seconds; the solution's
tests, hidden ones included, and its mutants then run in the judge as the grader runs them. A second full
run of the solution notebook in the repository's kernel would test nothing more: the judge runs every
test cell, and the student version is the solution notebook less its hidden tests.

Every kernel and process the suite starts runs PyTorch on one thread, as the grader's runners do
(issue 35): set here, before anything imports PyTorch, in this process's environment, which the
kernels (nbclient, self-grading, the `selfgrade` command) and subprocesses inherit; the simulated
Colab's kernel and `autograder check`'s kernel set it themselves. A test about threads sets its own.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
import sys
from pathlib import Path

import pytest

from autograder.sandbox.cpu_time import ONE_THREAD
from utils import claims

os.environ.update(ONE_THREAD)
# Every notebook the suite runs checks the claims its prose makes (utils/claims.py): one that does not hold fails.
os.environ[claims.STRICT] = "1"

import torch  # noqa: E402

torch.set_num_threads(1)   # the judge's test cells run in this process

sys.path.insert(0, str(Path(__file__).parent))

import nbformat  # noqa: E402

from autograder.course import conventions, submissions  # noqa: E402
from autograder.course.check import NotebookReport, run_notebook  # noqa: E402
from machine_load import busy_loops  # noqa: E402
from simulated_colab import AloneRun, colab, run_alone  # noqa: E402,F401  (colab: a session fixture)
from xdist_scheduling import LongestScopeFirst, WorkerCrashes  # noqa: E402
from autograder.sandbox import cpu_time  # noqa: E402

ASSIGNMENTS = conventions.assignments()
ASSIGNMENT_NAMES = frozenset(a.name for a in ASSIGNMENTS)

# The suite's own submissions are graded in the bubblewrap sandbox where it works (CI installs it);
# elsewhere with limits only, which must then be asked for explicitly (`auto` refuses to fall back).
from autograder.sandbox.bubblewrap import bwrap_available  # noqa: E402

TEST_SANDBOX = "auto" if bwrap_available() else "none"

from autograder.sandbox.limits import Limits  # noqa: E402

# Kernel runs that can only be timed by the clock (nbclient runs a whole notebook; the simulated Colab and
# self-grading) get wall-clock limits at least LOAD_MARGIN times the CPU time they bound: each notebook's CPU
# budget, and the longest cell's CPU seconds as measured (test_solutions_and_mutants.py checks both for every
# notebook): a machine busy enough to stretch a one-thread kernel LOAD_MARGIN-fold (load 20 on 2 cores) still
# passes. The cell limit is the notebook's: a slower CPU raises measured CPU seconds too (on an AMD EPYC
# without AVX-512, notebook 09's longest cell took 95 CPU s, twice the 48 s of the machines before it).
LOAD_MARGIN = 10
WALL_CELL_TIMEOUT_S = 1800
WALL_NOTEBOOK_TIMEOUT_S = 1800


def pytest_generate_tests(metafunc):
    if "assignment" in metafunc.fixturenames:
        metafunc.parametrize("assignment", ASSIGNMENTS, ids=[a.name for a in ASSIGNMENTS])


def scope_of(nodeid: str) -> str:
    """The unit of work pytest-xdist hands to one worker: the tests of ``NOTEBOOK_RUN_MODULES`` for one
    assignment (``notebook run[09_your_gpt]``: they share that notebook's run, ``notebook_run``), a module's
    tests for one assignment (``test_x.py[09_your_gpt]``), or a whole module for every other test (its
    module-scoped fixtures, a graded batch, are then made once), or the modules of ``SHARED_SCOPES`` together."""
    module = nodeid.split("::", 1)[0]
    param = nodeid[nodeid.rfind("[") + 1:-1] if nodeid.endswith("]") and "[" in nodeid else ""
    if module in SHARED_SCOPES:
        return SHARED_SCOPES[module]
    if param in ASSIGNMENT_NAMES:
        return f"notebook run[{param}]" if module in NOTEBOOK_RUN_MODULES else f"{module}[{param}]"
    return module


# The modules whose tests read one notebook's run (``notebook_run``, ``report``).
NOTEBOOK_RUN_MODULES = frozenset({"tests/course/test_solutions_and_mutants.py", "tests/course/test_colab_simulation.py",
                                  "tests/course/test_visible_agrees_with_grade.py"})


# The notebook whose one run (the simulated Colab's, then the judge's with the mutants) goes beside busy loops
# at the suite's priority (``busy_loop_count``): the machine is busy, and every cell must still pass, every mutant
# still be caught, and the CPU time stay within the budget (tests/course/test_busy_machine.py). Notebook 08
# failed a cell under load (issue 35); its training cells are the longest after 09's.
LOADED_NOTEBOOK = "08_train_gpt"

# Tests that share a fixture made once go out as one unit, so that one worker makes it once: modules that
# share a session-scoped fixture.
SMALL_CLASS_SCOPE = "tests/grader/test_shards.py+test_slurm.py"   # `small_class` (tests/conftest.py)
PIPELINE_SCOPE = "tests/course/test_autograde_pipeline.py+test_selfgrade.py"   # `pipeline`: one batch of every notebook
SHARED_SCOPES = {"tests/grader/test_shards.py": SMALL_CLASS_SCOPE, "tests/grader/test_slurm.py": SMALL_CLASS_SCOPE,
                 "tests/course/test_autograde_pipeline.py": PIPELINE_SCOPE, "tests/course/test_selfgrade.py": PIPELINE_SCOPE,
                 # reads notebook 08's run, made beside busy loops (``LOADED_NOTEBOOK``)
                 "tests/course/test_busy_machine.py": f"notebook run[{LOADED_NOTEBOOK}]"}


# Longest first: a scope's wall seconds are the sum of its tests' seconds (set-up, call and tear-down) in
# this checkout's last runs that ran them (pytest's cache, key TEST_SECONDS: kept per test, so a run of a
# few tests, or of the quick subset, leaves the figures of the others as they were; kept per scope, one
# `-m "not slow"` run put notebook 09's 400-second scope at 0 s, last in the queue). In a fresh clone:
# these (a quiet machine, two workers; measured from a run at load 4-6 on 0e5af09, scaled by 3/4) and each
# notebook's CPU budget for the scopes not named. Handed out in the
# order collected, notebook 09's runs came last and one worker idled for minutes.
TEST_SECONDS = "course/test_seconds"
MEASURED_SCOPE_SECONDS = {
    "notebook run[09_your_gpt]": 230,           # with the student's parts and the control; judged with mutants too
    SMALL_CLASS_SCOPE: 160,
    "notebook run[12_encoder_decoder]": 140,
    f"notebook run[{LOADED_NOTEBOOK}]": 110,    # beside the busy loops
    "tests/grader/test_hostile_submissions.py": 130,
    PIPELINE_SCOPE: 180,
    "notebook run[02_tokenization]": 90,        # with the simulated Colab's build, on whichever worker runs it first
    "tests/grader/test_class_report.py": 70,
    "tests/grader/test_grading_statuses.py": 60,
    "tests/grader/test_grading_environments.py": 50,
    "tests/grader/test_host_memory.py": 35,
    "tests/grader/test_kernel_memory.py": 70,
    "tests/grader/test_sandbox_confinement.py": 25,
    "tests/grader/test_nothing_left_behind.py": 20,
    "tests/grader/test_hidden_inputs_stay_hidden.py": 45,
}


def _scope_seconds(scope: str, nodeids, seen: dict) -> float:
    known = [seen[nodeid] for nodeid in nodeids if nodeid in seen]
    return sum(known) if known else _estimated_seconds(scope)


def _estimated_seconds(scope: str) -> float:
    if scope in MEASURED_SCOPE_SECONDS:
        return MEASURED_SCOPE_SECONDS[scope]
    name = scope[scope.rfind("[") + 1:-1] if scope.endswith("]") else ""
    assignment = next((a for a in ASSIGNMENTS if a.name == name), None)
    return conventions.cpu_budget_seconds(conventions.read_notebook(assignment.source_path)) if assignment else 0.0


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Work goes out by ``scope_of``, the longest scope first, so the notebooks spread over the workers and
    neither waits at the end for the other's long scope. (``--dist loadgroup`` would say this with marks,
    but pytest 9 ignores the node ids it rewrites.) A worker that crashes stops the run
    (tests/xdist_scheduling.py)."""
    cache = getattr(config, "cache", None)     # absent with -p no:cacheprovider
    seen = cache.get(TEST_SECONDS, {}) if cache is not None else {}
    return LongestScopeFirst(config, log, scope_of, lambda scope, nodeids: _scope_seconds(scope, nodeids, seen))


def pytest_configure(config):
    if not hasattr(config, "workerinput"):     # the controller (or a run without workers)
        config.pluginmanager.register(WorkerCrashes(), "worker_crashes")


_TEST_RUN_SECONDS: dict[str, float] = {}


def pytest_runtest_logreport(report):
    # On the controller (and in a run without workers): each test's set-up, call and tear-down.
    _TEST_RUN_SECONDS[report.nodeid] = _TEST_RUN_SECONDS.get(report.nodeid, 0.0) + report.duration


# The small class (fixture_course.SMALL_CLASS) graded on one machine, once per session: test_shards.py merges
# 3 shards of it and test_slurm.py a Slurm job array's, and both compare with this grading (they ran one
# each). Their modules go to one worker together (SHARED_SCOPES).
SMALL_CLASS_LIMITS = Limits(cell_timeout_s=60, notebook_timeout_s=300, sandbox=TEST_SANDBOX)


@pytest.fixture(scope="session")
def small_class(tmp_path_factory) -> Path:
    """A folder with the class (``submitted/``), the fixture course (``solutions/``) and the class graded on
    one machine (``single/``: grades.csv, gradebook.db, feedback). Read only: tests write elsewhere."""
    from autograder.batch.grading import grade
    from fixture_course import make_small_class

    root = tmp_path_factory.mktemp("small_class")
    grade(make_small_class(root), root / "single", workers=2, progress=False, solutions_dir=root / "solutions",
          limits=SMALL_CLASS_LIMITS)
    return root


# The nbgrader pipeline's one batch (PIPELINE_SCOPE): every notebook's solution (student "solution") and
# untouched student copy ("untouched"), and notebook 01 with every other exercise wrong ("partial"), as an
# instructor's `grade` grades a class: one gradebook, one judges' server. test_autograde_pipeline.py reads
# the first two; test_selfgrade.py compares notebook 01's three with what self-grading gives.
PARTIAL_STUDENT = "partial"


def partly_wrong(assignment):
    """The student version with every other exercise (sorted by name) answered by its first mutant."""
    from autograder.course import mutant_edits
    from autograder.course.solution_source import load_solution

    mutants = mutant_edits.assignment_mutants(assignment, load_solution(assignment))
    mistakes = {exercise: group[0].code for index, (exercise, group) in enumerate(sorted(mutants.items()))
                if index % 2 == 0}
    return submissions.filled_in(assignment, mistakes)


@pytest.fixture(scope="session")
def pipeline(tmp_path_factory):
    """(rows by (student, assignment), the output folder) of the one batch."""
    import shutil

    from autograder.batch.grading import grade

    root = tmp_path_factory.mktemp("pipeline")
    subs = root / "submitted"
    for assignment in ASSIGNMENTS:
        name = assignment.source_path.name
        submissions.write(submissions.filled_in(assignment), subs / "solution" / assignment.name / name)
        (subs / "untouched" / assignment.name).mkdir(parents=True)
        shutil.copyfile(assignment.release_path, subs / "untouched" / assignment.name / name)
    first = ASSIGNMENTS[0]
    submissions.write(partly_wrong(first), subs / PARTIAL_STUDENT / first.name / first.source_path.name)
    rows = grade(subs, root / "out", workers=2, progress=False,
                 limits=Limits(cell_timeout_s=WALL_CELL_TIMEOUT_S, notebook_timeout_s=WALL_NOTEBOOK_TIMEOUT_S,
                               sandbox=TEST_SANDBOX))
    return {(r.student_id, r.assignment): r for r in rows}, root / "out"


# The probe appended to each notebook's run: where its helpers came from (the installed wheel, not the checkout).
PROBE_CELL = ("import sys, utils, hypothesis\n"
              "print('utils from', utils.__file__)\n"
              "print('sys.path', [p for p in sys.path if p])")


@dataclass
class NotebookRun:
    report: NotebookReport    # the kernel run's fields from ``alone``; the judge run's and the mutants' own
    alone: AloneRun           # the student version, solutions filled in, run alone on the simulated Colab
    busy_loop_cpu_seconds: list = field(default_factory=list)   # the loaded notebook's: what each loop spun


_NOTEBOOK_RUNS: dict[str, NotebookRun] = {}

# Notebooks 09, 12 and 13 use the parts the student built earlier, read from their notebooks beside them in the
# course folder (utils/your_parts.py): their one full run has them there, the student versions with the
# solutions filled in, as a student's course folder has them. They then run what a student who did the course
# runs (09: every part theirs, beside it the control from PyTorch's parts for the first sixth of the run),
# within the notebook's CPU budget. Alone, every part falls back to PyTorch's (09: the control's parts), which
# tests/course/test_your_parts.py checks part by part in 09's GPU configuration, and
# test_your_parts_encoder_decoder.py for 12 (issue 35: one CPU-configuration run of 09 costs two CPU minutes,
# and the suite makes one).
NOTEBOOKS_BESIDE = conventions.NOTEBOOKS_BESIDE   # which notebooks go beside which: autograder/course/conventions.py
# What notebook 09 names each of those parts in its "your parts" line.
PARTS_OF_09 = ("LayerNorm (07)", "feed-forward (07)", "block (07)", "attention (05)", "RoPE (06)", "BPE tokenizer (02)")


@pytest.fixture
def notebook_run(assignment, colab, tmp_path_factory) -> NotebookRun:
    return run_of(assignment, colab, tmp_path_factory)


def run_of(assignment, colab, tmp_path_factory) -> NotebookRun:
    """The notebook's one run in this session (made on first use)."""
    if assignment.name not in _NOTEBOOK_RUNS:
        folder = tmp_path_factory.mktemp(f"colab-{assignment.name}") / "content"
        nb = submissions.filled_in(assignment)
        nb.cells.append(nbformat.v4.new_code_cell(PROBE_CELL))
        submissions.write(nb, folder / assignment.release_path.name)
        _write_notebooks_beside(assignment, folder)
        loaded = assignment.name == LOADED_NOTEBOOK
        with busy_loops(busy_loop_count() if loaded else 0) as loops:
            alone = run_alone(nb, folder, colab, wall_timeout_s=WALL_CELL_TIMEOUT_S, cell_cpu_limit_s=600)
            report = run_notebook(assignment, in_kernel=False)
            spun = [cpu_time.process_cpu_seconds(loop.pid) for loop in loops]
        report.seconds, report.heaviest_cell_seconds = alone.seconds, alone.heaviest_cell_seconds
        report.cell_errors = dict(alone.cell_errors)
        _SUMMARIES[assignment.name] = _summary(report, loaded)
        _NOTEBOOK_RUNS[assignment.name] = NotebookRun(report, alone, spun)
    return _NOTEBOOK_RUNS[assignment.name]


def busy_loop_count() -> int:
    """Enough busy loops that every core has a process besides the loaded notebook: one per core, less one
    for each other pytest-xdist worker, which keeps a core busy with its own tests (on 2 cores and 2
    workers, 1 loop: the loops' CPU time is the suite's loss, 70 CPU seconds for two)."""
    other_workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) - 1
    return max(1, (os.cpu_count() or 2) - other_workers)


def _write_notebooks_beside(assignment, folder: Path) -> None:
    for name in NOTEBOOKS_BESIDE.get(assignment.name, ()):
        earlier = next(a for a in ASSIGNMENTS if a.name == name)
        submissions.write(submissions.filled_in(earlier), folder.parent / name / earlier.release_path.name)


@pytest.fixture
def report(notebook_run) -> NotebookReport:
    return notebook_run.report


# -- the terminal summary: each notebook's CPU time and its mutants ---------------------------------
# Kept as plain data, so that pytest-xdist workers can send theirs to the controller (workeroutput).
_SUMMARIES: dict[str, dict] = {}


def _summary(report: NotebookReport, loaded: bool = False) -> dict:
    flag = "within budget" if report.seconds <= report.budget_seconds else "OVER BUDGET"
    flag += ", on a busy machine" if loaded else ""
    mutants = [f"    {'caught ' if m.caught else 'MISSED '} {m.name}: {m.description} "
               f"[{', '.join(m.failed_cells) or m.setup_error or 'no test failed'}]" for m in report.mutants]
    return {"time": f"{report.assignment:<24} {report.seconds:7.1f} s of {report.budget_seconds:5.0f} s budget  "
                    f"({flag}); judged with mutants in {report.judge_seconds:.1f} s",
            "caught": sum(m.caught for m in report.mutants), "total": len(report.mutants), "mutants": mutants}


def pytest_sessionfinish(session):
    if hasattr(session.config, "workeroutput"):    # an xdist worker: hand the summaries to the controller
        session.config.workeroutput["notebook_summaries"] = dict(_SUMMARIES)
    elif getattr(session.config, "cache", None) is not None and _TEST_RUN_SECONDS:
        seen = session.config.cache.get(TEST_SECONDS, {})
        seen.update({nodeid: round(seconds, 2) for nodeid, seconds in _TEST_RUN_SECONDS.items()})
        session.config.cache.set(TEST_SECONDS, seen)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    _SUMMARIES.update(getattr(node, "workeroutput", {}).get("notebook_summaries", {}))


def pytest_terminal_summary(terminalreporter):
    if not _SUMMARIES:
        return
    write = terminalreporter.write_line
    terminalreporter.section("notebook CPU run times (solution, mutant runs excluded)")
    for name, summary in sorted(_SUMMARIES.items()):
        write(summary["time"])
    terminalreporter.section("mutant catch rate")
    total = caught = 0
    for name, summary in sorted(_SUMMARIES.items()):
        total += summary["total"]
        caught += summary["caught"]
        write(f"{name:<24} {summary['caught']}/{summary['total']} mutants lose points")
        for line in summary["mutants"]:
            write(line)
    if total:
        write(f"overall: {caught}/{total} = {100 * caught / total:.0f}% of mutants caught")
