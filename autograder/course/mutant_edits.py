"""Mutants as named edits of the current solution: ``mutants/NN_slug.toml``.

A mutant is a plausible wrong answer to one exercise. It is stored as the mistake it makes (what the
class report names a group of students by) and the smallest replace-this-with-that edits that turn the
exercise's solution cell (without its ``### BEGIN/END SOLUTION`` lines) into the wrong answer::

    bigram_counts.missing_last_pair = {mistake = "Off by one: never counts the last pair.", edit = '''
    -    prev, nxt = ids[:-1], ids[1:]
    +    prev, nxt = ids[:-2], ids[1:-1]
    '''}

The key ``<exercise>.<mistake>`` names the exercise (the solution cell's ``grade_id``) and the mutant
(``<exercise>__<mistake>``, as reports print it). ``edit`` is a unified diff's hunks without their
line numbers: the lines that start with a space (kept) or ``-`` (replaced) are whole lines of the
current solution cell, which must occur there exactly once, in a row, and the ``+`` lines are put in
place of the ``-`` ones; a line ``@@`` starts the next edit of the same mutant. An edit that no longer applies (the solution changed)
raises ``StaleMutant`` naming the mutant, and ``python -m autograder check`` fails with it.
"""

from __future__ import annotations

import tomllib
import warnings
from dataclasses import dataclass
from pathlib import Path

from . import conventions

KEYS = {"mistake", "edit"}


class StaleMutant(ValueError):
    """A mutant whose edit no longer applies to the current solution (or whose entry is malformed)."""


@dataclass(frozen=True)
class Edit:
    replace: tuple[str, ...]    # whole lines of the solution cell
    with_: tuple[str, ...]      # the lines that take their place


@dataclass(frozen=True)
class MutantEdits:
    exercise: str
    slug: str
    mistake: str
    edits: tuple[Edit, ...]
    source: Path

    @property
    def name(self) -> str:
        return f"{self.exercise}__{self.slug}"


@dataclass(frozen=True)
class Mutant:
    """A mutant applied to the current solution: its ``code`` is what a student would have written."""

    exercise: str
    name: str
    mistake: str
    code: str


def parse_edit(text: str, name: str) -> tuple[Edit, ...]:
    """The edits an ``edit`` string describes: hunks of `` ``/``-``/``+`` lines, separated by ``@@``."""
    hunks: list[tuple[list[str], list[str]]] = [([], [])]
    for line in text.split("\n")[:-1] if text.endswith("\n") else text.split("\n"):
        if line == "@@":
            hunks.append(([], []))
        elif line[:1] in ("", " ", "-", "+"):
            replace, with_ = hunks[-1]
            if line[:1] != "+":
                replace.append(line[1:])
            if line[:1] != "-":
                with_.append(line[1:])
        else:
            raise StaleMutant(f"mutant {name}: each line of `edit` starts with a space (a line kept), - (a line "
                              f"replaced) or + (its replacement), or is @@ (the next edit); not {line!r}")
    if any(not replace or replace == with_ for replace, with_ in hunks):
        raise StaleMutant(f"mutant {name}: an edit of `edit` replaces no line of the solution, or changes nothing")
    return tuple(Edit(tuple(replace), tuple(with_)) for replace, with_ in hunks)


def mutants_file(mutants_dir: Path, assignment_name: str) -> Path:
    return Path(mutants_dir) / f"{assignment_name}.toml"


def read_edits(path: Path) -> list[MutantEdits]:
    """Every mutant in one notebook's file, in the file's order (empty when there is no file)."""
    if not Path(path).is_file():
        return []
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise StaleMutant(f"{path}: not valid TOML: {error}") from None
    return [_entry(path, exercise, slug, entry)
            for exercise, table in data.items() for slug, entry in table.items()]


def _entry(path: Path, exercise: str, slug: str, entry) -> MutantEdits:
    name = f"{exercise}__{slug}"
    if not isinstance(entry, dict) or set(entry) != KEYS or not all(isinstance(v, str) for v in entry.values()):
        raise StaleMutant(f"mutant {name} ({path}): expects exactly the text keys {sorted(KEYS)}")
    return MutantEdits(exercise, slug, entry["mistake"], parse_edit(entry["edit"], f"{name} ({path})"), Path(path))


def occurrences(lines: list[str] | tuple[str, ...], part: tuple[str, ...]) -> list[int]:
    """Where ``part`` starts as a run of whole lines in ``lines``."""
    n = len(part)
    return [i for i in range(len(lines) - n + 1) if n and tuple(lines[i:i + n]) == part]


def apply_edits(solution: str, mutant: MutantEdits) -> str:
    """The solution text with the mutant's edits made; ``StaleMutant`` (naming it) when one does not apply."""
    lines = solution.split("\n")
    spans = []
    for number, edit in enumerate(mutant.edits, 1):
        found = occurrences(lines, edit.replace)
        if len(found) != 1:
            where = "is not in" if not found else f"occurs {len(found)} times in"
            raise StaleMutant(f"mutant {mutant.name} ({mutant.source}): edit {number} no longer applies: the text "
                              f"to replace {where} the current solution of {mutant.exercise}:\n"
                              + "\n".join(edit.replace))
        spans.append((found[0], found[0] + len(edit.replace), edit.with_))
    spans.sort()
    for (_, end, _), (start, _, _) in zip(spans, spans[1:]):
        if start < end:
            raise StaleMutant(f"mutant {mutant.name} ({mutant.source}): two of its edits replace the same lines")
    for start, end, with_ in reversed(spans):
        lines[start:end] = with_
    return "\n".join(lines)


def solution_cells(nb) -> dict[str, str]:
    """Each exercise's solution code (the cell without its solution-marker lines), by exercise name."""
    return {conventions.grade_id(c): conventions.strip_solution_markers(c.source)
            for c in nb.cells if conventions.is_solution_cell(c)}


def mutants_by_exercise(nb, path: Path, exercises: set[str] | None = None,
                        skip_stale: bool = False) -> dict[str, list[Mutant]]:
    """The mutants in ``path`` applied to the solution notebook ``nb``, grouped by exercise in the
    file's order (only those of ``exercises``, when given). ``StaleMutant`` names the first that does
    not apply; with ``skip_stale`` such a mutant is left out, with a warning."""
    solutions = solution_cells(nb)
    grouped: dict[str, list[Mutant]] = {}
    for entry in read_edits(path):
        if exercises is not None and entry.exercise not in exercises:
            continue
        try:
            code = _applied(entry, solutions)
        except StaleMutant as stale:
            if not skip_stale:
                raise
            warnings.warn(str(stale), stacklevel=2)
            continue
        grouped.setdefault(entry.exercise, []).append(Mutant(entry.exercise, entry.name, entry.mistake, code))
    return grouped


def _applied(entry: MutantEdits, solutions: dict[str, str]) -> str:
    if entry.exercise not in solutions:
        raise StaleMutant(f"mutant {entry.name} ({entry.source}): the notebook has no exercise {entry.exercise!r}")
    return apply_edits(solutions[entry.exercise], entry)


def assignment_mutants(assignment, nb, exercises: set[str] | None = None) -> dict[str, list[Mutant]]:
    """The mutants of an assignment (``mutants/NN_slug.toml``) applied to its solution notebook ``nb``."""
    return mutants_by_exercise(nb, assignment.mutants_path, exercises)
