"""Put a damaged submission back into the shape of the released notebook before grading.

Students delete, move, duplicate and retype cells, and some editors strip cell metadata. nbgrader
copes badly: a deleted test cell leaves "needs manual grade" forever, a notebook without metadata is
graded as if every cell were missing. Here the grader rebuilds every submission on the skeleton of
the student version it was released as:

* every cell of the release notebook comes back in its place and order (test cells, prose, the
  set-up cell), whatever the student did to it; nbgrader then restores the test code itself;
* each answer cell takes the student's code for it: by ``grade_id``; failing that (metadata
  stripped) from the first of the student's cells that defines the same function or class as the
  stub; failing that, the unanswered stub;
* the student's own extra cells are kept, right after the cell they followed, without nbgrader
  metadata: only the release's cells are nbgrader's. A cell the student marked as graded or as an
  answer, or one carrying another notebook's or an older schema's nbgrader metadata, would make
  nbgrader refuse the notebook (``ValidationError: ... the nbgrader metadata may be corrupted``,
  ``SchemaTooOldError``), which used to be a grader error; its metadata is removed and the note
  names the cell;
* copies of release cells (a duplicated test cell, a metadata-less copy of a locked cell) are dropped.

The repair is deterministic and says what it did, so the grade table can show it.
"""

from __future__ import annotations

import ast
import copy
import functools
import re

from ..course import conventions
from ..course.text import clean_text
from ..selfgrade import is_self_grading_cell
from ..course.setup_cell import SETUP_GRADE_ID

_DEFINES = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)", re.MULTILINE)


MAX_PARSED_CHARS = 100_000  # longer cells are read with a regular expression (the grader's time and memory)


@functools.lru_cache(maxsize=4096)
def _defined_names(source: str) -> list[str]:
    if len(source) > MAX_PARSED_CHARS:
        return _DEFINES.findall(source)
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # null bytes, deep nesting: student code
        return _DEFINES.findall(source)
    return [node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]


def _normal(source: str) -> str:
    return "\n".join(line.rstrip() for line in source.strip().splitlines())


def repair(submitted, release) -> tuple[object, list[str]]:
    """The submission rebuilt on the release skeleton, and notes on what had to be repaired."""
    index = _index(submitted, release)
    answers, used_extras, answer_notes = _match_answers(release, index)
    repaired, moved_notes = _reassemble(release, answers, index.extras, used_extras)
    return repaired, index.notes + answer_notes + moved_notes + _stray_metadata_note(index.extras, used_extras)


def _stray_metadata_note(extras, used_extras: set[int]) -> list[str]:
    """Which of the student's own cells kept in the notebook lost their nbgrader metadata, and why it was stray."""
    named = [_stray_name(cell) for position, (_, cell) in enumerate(extras)
             if position not in used_extras and "nbgrader" in cell.get("metadata", {})]
    if not named:
        return []
    more = f" and {len(named) - 5} more" if len(named) > 5 else ""
    return [f"nbgrader metadata removed from {len(named)} of the student's own cell(s), which nbgrader would refuse "
            f"(only the release's cells are graded): {', '.join(named[:5])}{more}"]


def _stray_name(cell) -> str:
    meta = conventions.nbgrader_meta(cell)
    gid = meta.get("grade_id")
    name = f"'{clean_text(gid)[:40]}'" if isinstance(gid, str) and gid else f"a {cell.cell_type} cell"
    if meta.get("grade"):
        return f"{name} (marked as graded)"
    if meta.get("solution"):
        return f"{name} (marked as an answer)"
    if meta.get("schema_version") != 3:
        return f"{name} (schema version {clean_text(meta.get('schema_version'))[:10]})"
    return f"{name} (a grade id the release does not have)"


def _own_cell(cell):
    """A copy of one of the student's own cells, without nbgrader metadata (nbgrader's are the release's cells)."""
    fresh = copy.deepcopy(cell)
    fresh.get("metadata", {}).pop("nbgrader", None)
    return fresh


class _Index:
    """The student's cells sorted out against the release: by grade_id, the student's own cells (with
    the release cell each followed), and what was duplicated, deleted, retyped or moved."""

    def __init__(self):
        self.by_id: dict[str, object] = {}
        self.extras: list[tuple[str | None, object]] = []   # (anchor grade_id, cell)
        self.seen: dict[str, int] = {}
        self.notes: list[str] = []


def _index(submitted, release) -> _Index:
    index = _Index()
    release_ids = [conventions.grade_id(c) for c in release.cells]
    known = {gid for gid in release_ids if gid}
    _sort_cells(submitted, release, known, index)
    index.notes += _damage_notes(submitted, release, release_ids, known, index.seen)
    return index


def _sort_cells(submitted, release, known: set[str], index: _Index) -> None:
    """Each of the student's cells into ``index``: a release cell (the first of each grade_id counts,
    and anchors the extra cells after it), the student's own cell, or a copy of a release cell (dropped)."""
    release_sources = {_normal(c.source) for c in release.cells if not conventions.nbgrader_meta(c).get("solution")}
    release_types = {conventions.grade_id(c): c.cell_type for c in release.cells if conventions.grade_id(c)}
    anchor: str | None = None
    for cell in submitted.cells:
        if is_self_grading_cell(cell):
            continue  # the public edition's self-grading cells: not part of the graded notebook
        gid = conventions.grade_id(cell)
        if gid in known:
            index.seen[gid] = index.seen.get(gid, 0) + 1
            if cell.cell_type != release_types[gid] and index.seen[gid] == 1:
                index.notes.append(f"cell type of {gid} restored")
            index.by_id.setdefault(gid, cell)
            anchor = gid
        elif _normal(cell.source) not in release_sources:   # else a copy of a release cell (duplicated, or stripped of its metadata)
            index.extras.append((anchor, cell))


def _damage_notes(submitted, release, release_ids: list, known: set[str], seen: dict[str, int]) -> list[str]:
    """What the grade table says was repaired: duplicated cells, deleted test cells, cells out of order."""
    notes = []
    duplicated = sorted(g for g, n in seen.items() if n > 1)
    if duplicated:
        notes.append(f"duplicate cells ignored: {', '.join(duplicated)}")
    missing_tests = _deleted_test_cells(release, release_ids, known, seen)
    if missing_tests:
        notes.append(f"deleted test cells restored: {', '.join(missing_tests)}")
    order = [g for g in (conventions.grade_id(c) for c in submitted.cells) if g in known]
    if list(dict.fromkeys(order)) != [g for g in release_ids if g in seen]:
        notes.append("cells moved back into their original order")
    return notes


def _deleted_test_cells(release, release_ids: list, known: set[str], seen: dict[str, int]) -> list[str]:
    """The graded cells of the release (not the set-up cell) that the submission no longer has."""
    return sorted(g for g in known if g not in seen and g != "setup"
                  and conventions.nbgrader_meta(release.cells[release_ids.index(g)]).get("grade"))


def _match_answers(release, index: _Index) -> tuple[dict[str, str], set[int], list[str]]:
    """Each answer cell's code: by grade_id; else the first unused extra cell of the same type that
    defines one of the names the stub defines; else none (the stub stays)."""
    answers: dict[str, str] = {}
    used_extras: set[int] = set()
    notes: list[str] = []
    for cell in (c for c in release.cells if conventions.nbgrader_meta(c).get("solution")):
        gid = conventions.grade_id(cell)
        if gid in index.by_id:
            answers[gid] = index.by_id[gid].source
            continue
        wanted = set(_defined_names(cell.source))
        for position, (_, extra) in enumerate(index.extras):
            if position not in used_extras and extra.cell_type == cell.cell_type and wanted and wanted & set(_defined_names(extra.source)):
                answers[gid] = extra.source
                used_extras.add(position)
                notes.append(f"answer {gid} re-attached by matching its definition")
                break
        else:
            notes.append(f"no answer found for {gid}")
    return answers, used_extras, notes


def _reassemble(release, answers: dict[str, str], extras, used_extras: set[int]) -> tuple[object, list[str]]:
    """Every release cell in its place (answers filled in), the student's own cells after the cell
    they followed; nothing runs before the set-up cell, so cells from above it follow it instead."""
    extras_after: dict[str | None, list[object]] = {}
    for position, (after, extra) in enumerate(extras):
        if position not in used_extras:
            extras_after.setdefault(after, []).append(extra)
    leading = [_own_cell(c) for c in extras_after.get(None, [])]
    notes = ["cells above the set-up cell moved below it"] if any(c.cell_type == "code" for c in leading) else []
    has_setup = any(conventions.grade_id(c) == SETUP_GRADE_ID for c in release.cells)
    cells = [] if has_setup else leading
    for cell in release.cells:
        fresh = copy.deepcopy(cell)
        gid = conventions.grade_id(cell)
        if gid in answers:
            fresh.source = answers[gid]
        cells.append(fresh)
        if gid == SETUP_GRADE_ID:
            cells.extend(leading)
        cells.extend(_own_cell(c) for c in extras_after.get(gid, []) if gid)
    repaired = copy.deepcopy(release)
    repaired.cells = cells
    return repaired, notes
