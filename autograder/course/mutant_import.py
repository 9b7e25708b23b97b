"""Turn old-format mutant files (a whole copy of an answer cell) into named edits (``mutant_edits``).

``python -m autograder mutants import mutants/NN_slug/*.py`` reads each ``<exercise>__<mistake>.py``
(a one-line docstring that says the mistake, then the whole replacement of the solution cell), diffs
it against the current solution cell with ``difflib`` and appends the smallest edits to
``mutants/NN_slug.toml``; the ``.py`` files are deleted once their edits are written and checked.

A copy of a cell made before the solution last changed differs from it in comments and docstrings
too. By default those differences are left out: an edit only changes code lines, and the mutant is
checked to be the old file's code exactly (the same syntax tree, docstrings aside; comments, blank
lines and docstrings come from the current solution). ``--exact`` keeps every difference, so the
mutant is the old file's text line for line.
"""

from __future__ import annotations

import ast
import difflib
import io
import tokenize
from dataclasses import dataclass
from pathlib import Path

from . import conventions
from .mutant_edits import (Edit, MutantEdits, apply_edits, mutants_by_exercise, mutants_file, occurrences, read_edits,
                           solution_cells)
from .solution_source import load_solution


@dataclass
class OldMutant:
    exercise: str
    slug: str
    mistake: str
    code: list[str]       # the cell's lines, without the docstring
    path: Path


def read_old(path: Path) -> OldMutant:
    """An old-format mutant file: ``<exercise>__<mistake>.py``, its docstring, its code."""
    exercise, sep, slug = path.stem.partition("__")
    if not sep:
        raise ValueError(f"{path}: mutant files are named <exercise>__<mistake>.py")
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    doc = ast.get_docstring(tree)
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    code = lines[tree.body[0].end_lineno:] if doc is not None else lines
    return OldMutant(exercise, slug, (doc or path.stem).strip().splitlines()[0], code, path)


def hunk_edits(old: list[str], new: list[str]) -> list[Edit]:
    """The smallest edits (each replacing lines that occur once in ``old``) that turn ``old`` into ``new``."""
    groups = [list(op[1:]) for op in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
              if op[0] != "equal"]
    index = 0
    while index < len(groups):
        i1, i2, j1, j2 = groups[index]
        if i2 > i1 and len(occurrences(old, tuple(old[i1:i2]))) == 1:
            index += 1
            continue
        if i1 == 0 and i2 == len(old):
            raise ValueError("no unique context for an edit")
        groups[index] = [i1 - 1, i2, j1 - 1, j2] if i1 > 0 else [i1, i2 + 1, j1, j2 + 1]
        index = _merge_touching(groups, index)
    return [Edit(tuple(old[i1:i2]), tuple(new[j1:j2])) for i1, i2, j1, j2 in groups]


def _merge_touching(groups: list[list[int]], index: int) -> int:
    """Merge group ``index`` with its neighbours when their line ranges now touch; return its new index."""
    if index > 0 and groups[index - 1][1] >= groups[index][0]:
        previous = groups.pop(index - 1)
        index -= 1
        groups[index] = [previous[0], groups[index][1], previous[2], groups[index][3]]
    if index + 1 < len(groups) and groups[index][1] >= groups[index + 1][0]:
        following = groups.pop(index + 1)
        groups[index] = [groups[index][0], following[1], groups[index][2], following[3]]
    return index


def _noise_and_keys(lines: list[str]) -> tuple[set[int], list[str]]:
    """The lines that are no code (blank, comment-only, docstring) and each line's code without its comment."""
    text = "\n".join(lines) + "\n"
    keys = list(lines)
    noise = {i for i, line in enumerate(lines) if not line.strip() or line.lstrip().startswith("#")}
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT:
            row, col = token.start
            keys[row - 1] = keys[row - 1][:col].rstrip()
    for node in ast.walk(ast.parse(text)):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and _is_docstring(body[0]):
            noise.update(range(body[0].lineno - 1, body[0].end_lineno))
    return noise, keys


def _is_docstring(node) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def code_only_target(solution: list[str], mutant: list[str]) -> list[str]:
    """The solution with only its code lines changed into the mutant's: its comments and docstrings stay."""
    s_noise, s_keys = _noise_and_keys(solution)
    m_noise, m_keys = _noise_and_keys(mutant)
    s_code = [i for i in range(len(solution)) if i not in s_noise]
    m_code = [j for j in range(len(mutant)) if j not in m_noise]
    matcher = difflib.SequenceMatcher(None, [s_keys[i] for i in s_code], [m_keys[j] for j in m_code], autojunk=False)
    replaced: dict[int, list[str]] = {}     # solution line -> the lines that take its place
    inserted: dict[int, list[str]] = {}     # solution line -> lines put before it
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        new = [mutant[m_code[j]] for j in range(j1, j2)]
        if i2 > i1:
            replaced[s_code[i1]] = new
            replaced.update({s_code[i]: [] for i in range(i1 + 1, i2)})
        else:
            inserted.setdefault(s_code[i1] if i1 < len(s_code) else len(solution), []).extend(new)
    target = []
    for i, line in enumerate(solution + [None]):
        target += inserted.get(i, [])
        if line is not None:
            target += replaced.get(i, [line])
    return target


def same_code(a: str, b: str) -> bool:
    """Whether two cells are the same program: the same syntax tree once docstrings are left out."""
    def normal(text):
        tree = ast.parse(text)
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if isinstance(body, list) and body and _is_docstring(body[0]) and not isinstance(node, ast.Expr):
                node.body = body[1:]
        return ast.dump(tree)
    try:
        return normal(a) == normal(b)
    except SyntaxError:
        return a == b


def convert(old: OldMutant, solution: str, exact: bool = False) -> MutantEdits:
    """The edits of one old mutant against the current solution cell, checked to give the old code
    (line for line with ``exact``, else the same program); the edits keep every difference when the
    code-only ones do not give the same program."""
    lines = solution.split("\n")
    if lines == old.code:
        raise ValueError(f"{old.path}: the mutant is the solution itself")
    exact_entry = MutantEdits(old.exercise, old.slug, old.mistake, tuple(hunk_edits(lines, old.code)), old.path)
    if apply_edits(solution, exact_entry) != "\n".join(old.code):
        raise ValueError(f"{old.path}: the edits do not give the file's text back")
    if exact:
        return exact_entry
    try:
        target = code_only_target(lines, old.code)
        entry = MutantEdits(old.exercise, old.slug, old.mistake, tuple(hunk_edits(lines, target)), old.path)
        if same_code(apply_edits(solution, entry), "\n".join(old.code)):
            return entry
    except (SyntaxError, ValueError, tokenize.TokenError):
        pass
    return exact_entry


def edit_text(edits: tuple[Edit, ...]) -> str:
    """The ``edit`` string of ``edits``: each a hunk of kept, replaced and new lines (``mutant_edits.parse_edit``)."""
    lines: list[str] = []
    for edit in edits:
        if lines:
            lines.append("@@")
        matcher = difflib.SequenceMatcher(None, edit.replace, edit.with_, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                lines += [" " + line for line in edit.replace[i1:i2]]
            else:
                lines += ["-" + line for line in edit.replace[i1:i2]] + ["+" + line for line in edit.with_[j1:j2]]
    return "\n".join(lines) + "\n"


def toml_text(text: str) -> str:
    """A multi-line TOML string of ``text`` (which ends with a newline): literal, the code as it is,
    where it can be; else a basic one, escaped line by line."""
    if "'''" not in text and not any(ord(c) < 32 and c not in "\t\n" for c in text):
        return f"'''\n{text}'''"
    return '"""\n' + "\n".join(_escaped(line) for line in text.split("\n")) + '"""'


def _escaped(text: str) -> str:
    text = text.replace("\\", "\\\\").replace('"', '\\"')
    return "".join(c if ord(c) >= 32 or c == "\t" else f"\\u{ord(c):04x}" for c in text)


def entry_toml(entry: MutantEdits) -> str:
    """One mutant as a line of TOML (and its edit's lines): ``<exercise>.<mistake> = {mistake, edit}``."""
    return (f"{entry.exercise}.{entry.slug} = {{mistake = \"{_escaped(entry.mistake)}\", "
            f"edit = {toml_text(edit_text(entry.edits))}}}\n")


FILE_HEADER = ("# Mutants of {name}: wrong answers that must lose points, as edits of the solution cells.\n"
               "# <exercise>.<mistake> = {{mistake = what the class report calls it, edit = hunks of the cell}}\n"
               "# (autograder/course/mutant_edits.py; CONTRIBUTING.md, \"Mutants\"). Add old-format files with\n"
               "# python -m autograder mutants import mutants/{name}/*.py\n")


def import_files(paths: list[Path], exact: bool = False, keep: bool = False, replace: bool = False,
                 solutions_dir: Path | None = None, mutants_dir: Path | None = None) -> list[str]:
    """Append each old-format mutant file to its notebook's ``mutants/NN_slug.toml`` (the folder's name
    is the assignment's), check that the file read back gives each mutant's code, then delete the
    files (unless ``keep``). A mutant of the same name already there is an error, or with ``replace``
    is taken out first. Returns a line per notebook."""
    known = {a.name: a for a in conventions.assignments(solutions_dir or conventions.SOLUTIONS_DIR)}
    mutants_dir = Path(mutants_dir or conventions.MUTANTS_DIR)
    by_assignment: dict[str, list[Path]] = {}
    for path in sorted(Path(p) for p in paths):
        if path.parent.name not in known:
            raise ValueError(f"{path}: its folder is not an assignment of solutions/ ({', '.join(known)})")
        by_assignment.setdefault(path.parent.name, []).append(path)
    return [_import_assignment(known[name], mutants_file(mutants_dir, name), files, exact, keep, replace)
            for name, files in by_assignment.items()]


def _import_assignment(assignment, target: Path, paths: list[Path], exact: bool, keep: bool, replace: bool) -> str:
    nb = load_solution(assignment)
    solutions = solution_cells(nb)
    olds = [read_old(path) for path in paths]
    _make_room(target, olds, replace)
    missing = sorted({old.exercise for old in olds} - set(solutions))
    if missing:
        raise ValueError(f"{assignment.name} has no exercise {', '.join(missing)} (mutant files {paths[0].parent})")
    entries = [convert(old, solutions[old.exercise], exact) for old in olds]
    text = target.read_text(encoding="utf-8") if target.is_file() else FILE_HEADER.format(name=assignment.name)
    target.write_text(text + "".join(entry_toml(entry) for entry in entries), encoding="utf-8")
    _check_imported(nb, target, olds, exact)
    if not keep:
        _delete_files(paths)
    return f"{assignment.name}: {len(entries)} mutants added to {target}" + ("" if keep else ", their files deleted")


def _make_room(target: Path, olds: list, replace: bool) -> None:
    """Mutants already in ``target`` under an imported file's name: an error, or (``replace``) taken out."""
    taken = {entry.name for entry in read_edits(target)}
    clash = sorted(f"{old.exercise}__{old.slug}" for old in olds if f"{old.exercise}__{old.slug}" in taken)
    if clash and not replace:
        raise ValueError(f"{target} already has mutants named {', '.join(clash)} (--replace takes them out first)")
    if clash:
        target.write_text(without_entries(target.read_text(encoding="utf-8"), clash), encoding="utf-8")


def _delete_files(paths: list[Path]) -> None:
    for path in paths:
        path.unlink()
    if paths[0].parent.is_dir() and not any(paths[0].parent.iterdir()):
        paths[0].parent.rmdir()


def without_entries(text: str, names: list[str]) -> str:
    """``text`` (a mutants file as ``entry_toml`` writes it) without the entries of these mutants."""
    lines = text.split("\n")
    for name in names:
        exercise, _, slug = name.partition("__")
        start = next((i for i, line in enumerate(lines) if line.startswith(f"{exercise}.{slug} = {{")), None)
        end = next((i for i in range(start or 0, len(lines)) if lines[i] in ("'''}", '"""}')), None)
        if start is None or end is None:
            raise ValueError(f"mutant {name}: its entry is not laid out as the import writes it; take it out by hand")
        del lines[start:end + 1]
    return "\n".join(lines)


def _check_imported(nb, target: Path, olds: list[OldMutant], exact: bool) -> None:
    """Read ``target`` back: each imported mutant gives its old file's code (its text, with ``exact``)."""
    applied = {m.name: m.code for group in mutants_by_exercise(nb, target).values() for m in group}
    for old in olds:
        code, wanted = applied[f"{old.exercise}__{old.slug}"], "\n".join(old.code)
        if not (code == wanted if exact else same_code(code, wanted)):
            raise ValueError(f"{target}: mutant {old.exercise}__{old.slug} read back is not {old.path}'s code")
