"""The course's notebook conventions, in code (CONTRIBUTING.md describes them in prose).

Where the repository's pieces live, how an exercise's cells are found, and how a solution cell's
code is turned into what a student would have written. The build, the grader, the demo and the
test-suite all read notebooks through these functions, so a convention is defined once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

REPO_ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS_DIR = REPO_ROOT / "solutions"
NOTEBOOKS_DIR = REPO_ROOT / "notebooks"
MUTANTS_DIR = REPO_ROOT / "mutants"

DEFAULT_CPU_BUDGET_SECONDS = 60

BEGIN_SOLUTION = "### BEGIN SOLUTION"
END_SOLUTION = "### END SOLUTION"
BEGIN_HIDDEN = "### BEGIN HIDDEN TESTS"
END_HIDDEN = "### END HIDDEN TESTS"
MARKERS = (BEGIN_SOLUTION, END_SOLUTION, BEGIN_HIDDEN, END_HIDDEN)

_ASSIGNMENT_NAME = re.compile(r"^\d\d_[a-z0-9_]+$")


@dataclass(frozen=True)
class Assignment:
    """One numbered assignment folder: ``solutions/NN_slug/slug.py``, the solution notebook as text
    (``solution_source``), and ``slug.ipynb`` beside it, the notebook derived from it for nbgrader
    (``source_path``; not in git)."""

    name: str
    source_path: Path

    @property
    def text_path(self) -> Path:
        return self.source_path.with_suffix(".py")

    @property
    def notebook_name(self) -> str:
        return self.source_path.stem

    @property
    def release_path(self) -> Path:
        return NOTEBOOKS_DIR / self.name / self.source_path.name

    @property
    def mutants_path(self) -> Path:
        """The assignment's mutants: named edits of its solution cells (``autograder/course/mutant_edits.py``)."""
        return MUTANTS_DIR / f"{self.name}.toml"


def assignments(solutions_dir: Path = SOLUTIONS_DIR) -> list[Assignment]:
    """Every assignment under ``solutions/``, in teaching order, its notebook derived from its text
    when the text is newer (``solution_source.derived_notebook``)."""
    from .solution_source import derived_notebook

    found = []
    for folder in sorted(p for p in solutions_dir.iterdir() if p.is_dir() and not p.name.startswith(".")):
        if not _ASSIGNMENT_NAME.match(folder.name):
            raise ValueError(f"{folder}: assignment folders are named NN_slug (e.g. 01_next_token)")
        texts = sorted(folder.glob("*.py"))
        if len(texts) != 1:
            lone = [n.name for n in folder.glob("*.ipynb") if not n.with_suffix(".py").exists()]
            raise ValueError(f"{folder}: expected exactly one notebook as text (slug.py), found {[t.name for t in texts]}"
                             + (f"; turn {lone[0]} into it with python -m autograder source import "
                                f"{folder / lone[0]}" if lone else ""))
        assignment = Assignment(folder.name, texts[0].with_suffix(".ipynb"))
        derived_notebook(assignment)
        found.append(assignment)
    return found


def assignment(name: str, solutions_dir: Path = SOLUTIONS_DIR) -> Assignment:
    """The assignment called ``name`` (e.g. "09_your_gpt"), as ``assignments`` gives it; KeyError naming the
    assignments there are if none is called so."""
    found = {a.name: a for a in assignments(solutions_dir)}
    if name not in found:
        raise KeyError(f"no assignment {name!r} under {solutions_dir}; there are {sorted(found)}")
    return found[name]


def nbgrader_meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def grade_id(cell) -> str | None:
    return nbgrader_meta(cell).get("grade_id")


def is_solution_cell(cell) -> bool:
    return cell.cell_type == "code" and bool(nbgrader_meta(cell).get("solution")) and not nbgrader_meta(cell).get("grade")


def is_graded_cell(cell) -> bool:
    return bool(nbgrader_meta(cell).get("grade"))


def cpu_budget_seconds(nb) -> float:
    return float(nb.metadata.get("course", {}).get("cpu_budget_seconds", DEFAULT_CPU_BUDGET_SECONDS))


@dataclass
class Exercise:
    """A solution cell and the indices of its test cells in the notebook.

    ``hidden_index`` is the core hidden cell ``test_<name>_hidden``; ``hidden_part_indices`` are the
    further hidden cells ``test_<name>_hidden_<part>`` (edge clauses, errors raised, ...) that carry
    their own points, so partial credit follows what is right.
    """

    name: str
    solution_index: int
    visible_index: int | None = None
    hidden_index: int | None = None
    hidden_part_indices: list[int] = field(default_factory=list)
    test_indices: list[int] = field(default_factory=list)

    @property
    def hidden_indices(self) -> list[int]:
        """Every hidden test cell of the exercise, the core one first."""
        return ([self.hidden_index] if self.hidden_index is not None else []) + self.hidden_part_indices


def exercises(nb) -> list[Exercise]:
    """The exercises of a source notebook, in order, with their test cells.

    The tests of exercise ``x`` are the graded cells ``test_x`` (visible), ``test_x_hidden`` (the
    core hidden tests) and any ``test_x_hidden_<part>`` (hidden tests of one clause, scored
    separately), which come after the solution cell ``x`` and before the next solution cell.
    """
    found: list[Exercise] = []
    for index, cell in enumerate(nb.cells):
        if is_solution_cell(cell):
            found.append(Exercise(grade_id(cell), index))
        elif is_graded_cell(cell) and found:
            current = found[-1]
            gid = grade_id(cell)
            if gid == f"test_{current.name}":
                current.visible_index = index
            elif gid == f"test_{current.name}_hidden":
                current.hidden_index = index
            elif gid.startswith(f"test_{current.name}_hidden_"):
                current.hidden_part_indices.append(index)
            else:
                continue
            current.test_indices.append(index)
    return found


def exercise_names(nb) -> list[str]:
    """The names a notebook's solution cells define at top level (functions, classes, variables).

    In the judge, these are the names a test cell may use from the notebook: each becomes a handle
    to the student's object of that name.
    """
    import ast

    names: list[str] = []
    for cell in nb.cells:
        if not is_solution_cell(cell):
            continue
        try:
            tree = ast.parse(strip_solution_markers(cell.source))
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.append(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names.extend(t.id for t in targets if isinstance(t, ast.Name))
    return list(dict.fromkeys(names))


def exercise_dependencies(nb) -> dict[str, tuple[str, ...]]:
    """For each exercise, the earlier exercises its solution uses, directly or through another (a block
    that builds a ``LayerNorm``; a model built from those blocks), in notebook order.

    Read from the solution cells: an exercise uses another when it names one of the names that exercise's
    cell defines (``exercise_names`` of that cell alone). A wrong answer to one of these can fail this
    exercise's tests with nothing wrong in its own code, so the class report names no mistake of this
    exercise for a student whose upstream part failed.
    """
    import ast

    found = exercises(nb)
    defines = {e.name: set(exercise_names(_only_cell(nb, e.solution_index))) | {e.name} for e in found}
    direct: dict[str, set[str]] = {}
    for position, exercise in enumerate(found):
        try:
            tree = ast.parse(strip_solution_markers(nb.cells[exercise.solution_index].source))
        except SyntaxError:
            tree = ast.Module(body=[], type_ignores=[])
        used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
        direct[exercise.name] = {e.name for e in found[:position] if defines[e.name] & used}
    order = [e.name for e in found]
    closed: dict[str, tuple[str, ...]] = {}
    for name in order:   # earlier exercises are closed first
        every = set(direct[name]).union(*(closed[u] for u in direct[name]))
        closed[name] = tuple(n for n in order if n in every)
    return closed


def reference_answers(nb) -> tuple[dict[str, str], dict[str, list[str]], dict[str, str]]:
    """What the judge needs to charge a mistake where it is made (the second pass, ``judge.second_pass``), from
    a solution notebook: the course's code of each exercise that a later one uses (markers stripped), each
    exercise's upstream exercises (``exercise_dependencies``, only those that have some) and the exercise of
    each graded test cell, by grade id. Solution code: it goes to the judge only, never to a student."""
    upstream = {name: list(used) for name, used in exercise_dependencies(nb).items() if used}
    used = {name for names in upstream.values() for name in names}
    found = exercises(nb)
    references = {e.name: strip_solution_markers(nb.cells[e.solution_index].source) for e in found if e.name in used}
    exercise_of = {grade_id(nb.cells[index]): e.name for e in found for index in e.test_indices}
    return references, upstream, exercise_of


def _only_cell(nb, index: int):
    return nbformat.v4.new_notebook(cells=[nb.cells[index]])


def strip_solution_markers(source: str) -> str:
    """The code a student who solved the exercise would have: the solution without marker lines."""
    return "\n".join(line for line in source.splitlines() if line.strip() not in (BEGIN_SOLUTION, END_SOLUTION))


def read_notebook(path: Path):
    return nbformat.read(str(path), as_version=4)


# The earlier notebooks whose parts a notebook loads from the student's course folder (utils/your_parts.py):
# notebook 09 trains the student's tokenizer, attention, RoPE and blocks, 12 their attention and LayerNorm, and
# 13's top-k and top-p rows use their 08 sampler. A run of that notebook as a student who did the course runs it
# has these beside it (the suite's run, tests/conftest.py; benchmarks/training_predictions.py).
NOTEBOOKS_BESIDE = {"09_your_gpt": ("02_tokenization", "05_multi_head", "06_positions", "07_block"),
                    "12_encoder_decoder": ("05_multi_head", "07_block"),
                    "13_generation": ("08_train_gpt",)}
