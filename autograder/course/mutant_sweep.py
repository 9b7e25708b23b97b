"""Operator mutants: every small edit of a solution that a student's slip could make, run through the judge.

``python -m autograder mutants sweep NN_slug [--exercise NAME ...]`` takes each exercise's solution cell and
makes one mutant per place where an operator applies: a statement deleted, ``device=x.device`` dropped to the
CPU, an axis changed, a copy or a ``.item()`` dropped, a comparison loosened, ``+ 1`` or ``- 1`` dropped, an
error type changed, autograd or the module's mode switched, a sum for a mean, a dtype narrowed, and so on. It
prints the mutants that every test of the exercise passes. Each survivor is either a wrong answer the tests
miss (then write a hidden check and a named mutant in ``mutants/NN_slug.toml``) or the same program in other
words (a reworded error message, ``dim=1`` for ``dim=-1`` on a 2-D tensor): the sweep finds, a person judges.
Hand-written mutants (``mutant_edits``) stay the record of what is caught; the sweep looks for what is not.
A survivor judged the same program is recorded, with the reason, in ``mutants/judged/NN_slug.toml``
(``[[same_program]]`` tables: exercise, operator, before, after, why); the sweep reports it apart, so that what it
calls surviving is only what no one has judged yet.
"""

from __future__ import annotations

import ast
import re
import tomllib
from dataclasses import dataclass

from . import contracts, conventions, mutant_edits

# (what the edit does, pattern, replacement): each applies at every match, one match per mutant.
OPERATORS = (
    ("device dropped to the CPU", r"\bdevice=[A-Za-z_][\w.]*\.device\b", "device='cpu'"),
    ("last axis made the first", r"\bdim=-1\b", "dim=0"),
    ("axis -2 made -1", r"\bdim=-2\b", "dim=-1"),
    ("axis 1 made -1", r"\bdim=1\b", "dim=-1"),
    ("axis 0 made -1", r"\bdim=0\b", "dim=-1"),
    ("copy dropped", r"\.clone\(\)|\.copy\(\)|\.detach\(\)|\.contiguous\(\)", ""),
    ("keepdim dropped", r"\bkeepdim=True\b", "keepdim=False"),
    ("<= made <", r"<=", "<"),
    (">= made >", r">=", ">"),
    ("< made <=", r"(?<=[^<>=!]) < (?=[^=])", " <= "),
    ("> made >=", r"(?<=[^<>=!-]) > (?=[^=])", " >= "),
    ("+ 1 dropped", r" \+ 1\b", ""),
    ("- 1 dropped", r" - 1\b", ""),
    ("error type changed", r"\bValueError\b", "TypeError"),
    ("autograd left on", r"torch\.no_grad\(\)", "torch.enable_grad()"),
    ("mode switched", r"\.eval\(\)", ".train()"),
    ("mode switched", r"\.train\(\)", ".eval()"),
    ("tensor returned for a number", r"\.item\(\)|\.tolist\(\)", ""),
    ("Python number conversion dropped", r"\b(?:int|float)\(", "("),
    ("sum made mean", r"\.sum\(", ".mean("),
    ("mean made sum", r"\.mean\(", ".sum("),
    ("reshape made view", r"\.reshape\(", ".view("),
    ("float64 made float32", r"\bfloat64\b", "float32"),
    ("dtype of an input replaced by float32", r"\bdtype=[A-Za-z_][\w.]*\.dtype\b", "dtype=torch.float32"),
    ("square root dropped", r"math\.sqrt\(|torch\.sqrt\(", "("),
    ("flag flipped", r"\bTrue\b", "False"),
    ("flag flipped", r"\bFalse\b", "True"),
    ("None test inverted", r"\bis None\b", "is not None"),
    ("and made or", r"\band\b", "or"),
    ("or made and", r"\bor\b", "and"),
    ("min made max", r"\bmin\(|\.amin\(", "max("),
    ("max made min", r"\bmax\(|\.amax\(", "min("),
    ("stable sort made unstable", r"\bstable=True\b", "stable=False"),
    ("bias switched on", r"\bbias=False\b", "bias=True"),
    ("epsilon dropped", r"\beps\b", "0.0"),
    # The classes every exercise shares (issue 49): randomness from a global generator, a result that is the
    # caller's own object, an error condition checked on one side only (only its boundary value refused).
    ("generator dropped: a global draw", r",\s*generator=(?!None\b)[A-Za-z_][\w.]*", ""),
    ("copy dropped", r"\blist\(([A-Za-z_]\w*)\)", r"\1"),
    ("error condition made one-sided", r"\b([A-Za-z_][\w.\[\]()]*) < (\d+)\b",
     lambda m: f"{m[1]} == {int(m[2]) - 1}"),
    ("error condition made one-sided", r"\b([A-Za-z_][\w.\[\]()]*) <= (\d+)\b", r"\1 == \2"),
)
# Lines whose deletion cannot leave a program (or only makes one that returns None, which every test sees).
NOT_DELETED = ("def ", "class ", "if ", "elif ", "else", "for ", "while ", "with ", "try", "except", "finally",
               "return", "@", "#", "raise", "yield", "import ", "from ", "global ", "nonlocal ")


# A deleted increment can make a loop run for ever: such a test cell is stopped (and the mutant counted caught)
# after this many seconds, not check's 300, so that a sweep of a notebook with loops takes minutes, not hours.
CELL_TIMEOUT_S = 30


@dataclass(frozen=True)
class OperatorMutant:
    mutant: mutant_edits.Mutant   # what the judge runs
    line: int                     # 1-based, in the solution cell without its solution-marker lines
    operator: str
    before: str
    after: str


def _docstring_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body:
            first = body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                lines.update(range(first.lineno - 1, first.end_lineno))
    return lines


class _TextBlanked(ast.NodeTransformer):
    """Every string literal and f-string made empty: an edit inside a message is not another program."""

    def visit_Constant(self, node):
        return ast.Constant("") if isinstance(node.value, str) else node

    def visit_JoinedStr(self, node):
        return ast.Constant("")


def _program(text: str) -> str:
    return ast.dump(_TextBlanked().visit(ast.parse(text)))


def _replaced(match: re.Match, replacement) -> str:
    return replacement(match) if callable(replacement) else match.expand(replacement)


def _edits_of_line(line: str) -> list[tuple[str, str]]:
    """(operator, the edited line) for every operator at every place it applies on ``line``."""
    edits = []
    stripped = line.strip()
    if not stripped.startswith(NOT_DELETED):
        edits.append(("statement deleted", line[: len(line) - len(line.lstrip())] + "pass"))
    for operator, pattern, replacement in OPERATORS:
        edits += [(operator, line[: m.start()] + _replaced(m, replacement) + line[m.end():])
                  for m in re.finditer(pattern, line)]
    return edits


def operator_mutants(exercise: str, code: str) -> list[OperatorMutant]:
    """The operator mutants of one solution cell: each compiles, and each is a different program from the
    solution and from every other, strings aside (edits that change only a comment or the text of a message,
    or give a program already made, are left out)."""
    seen = {_program(code)}
    skip = _docstring_lines(ast.parse(code))
    lines = code.split("\n")
    mutants = []
    for index, line in enumerate(lines):
        if index in skip or not line.strip() or line.strip().startswith("#"):
            continue
        for operator, edited in _edits_of_line(line):
            text = "\n".join(lines[:index] + [edited] + lines[index + 1:])
            try:
                program = _program(text)
            except SyntaxError:
                continue
            if program in seen:
                continue
            seen.add(program)
            mutant = mutant_edits.Mutant(exercise, f"{exercise}__sweep_{len(mutants) + 1}", operator, text)
            mutants.append(OperatorMutant(mutant, index + 1, operator, line.strip(), edited.strip()))
    return mutants


def sweep(assignment: conventions.Assignment, exercises: list[str] | None = None,
          operators: list[str] | None = None) -> tuple[int, list[OperatorMutant]]:
    """Run every operator mutant of the chosen exercises (all by default) through the judge with the exercise's
    tests, or only those whose operator's name contains one of ``operators`` (e.g. ``["one-sided",
    "generator"]``); returns (how many mutants ran, the survivors: mutants that every test passed)."""
    from .check import judge_mutants
    from .solution_source import load_solution

    nb = load_solution(assignment)
    cells = mutant_edits.solution_cells(nb)
    unknown = sorted(set(exercises or ()) - set(cells))
    if unknown:
        raise ValueError(f"no exercise {', '.join(unknown)} in {assignment.name} (it has {', '.join(cells)})")
    made = _chosen(cells, exercises, operators)
    by_name = {m.mutant.name: m for found in made.values() for m in found}
    results = judge_mutants(nb, {name: [m.mutant for m in found] for name, found in made.items()},
                            cell_timeout_s=CELL_TIMEOUT_S, declared=contracts.for_judge(assignment))
    return len(results), [by_name[result.name] for result in results if not result.caught]


def _chosen(cells: dict[str, str], exercises: list[str] | None, operators: list[str] | None) -> dict[str, list]:
    """The operator mutants of the chosen exercises' cells (all by default), of the chosen operators only."""
    made = {name: [m for m in operator_mutants(name, code) if not operators or any(o in m.operator for o in operators)]
            for name, code in cells.items() if not exercises or name in exercises}
    return {name: found for name, found in made.items() if found}


def judged_same(assignment) -> dict[tuple[str, str, str, str], str]:
    """(exercise, operator, before, after) -> why, for each survivor a person judged the same program in other
    words (``mutants/judged/NN_slug.toml``)."""
    path = conventions.MUTANTS_DIR / "judged" / f"{assignment.name}.toml"
    if not path.exists():
        return {}
    entries = tomllib.loads(path.read_text(encoding="utf-8")).get("same_program", [])
    return {(e["exercise"], e["operator"], e["before"], e["after"]): e["why"] for e in entries}


def main(name: str, exercises: list[str], operators: list[str] | None = None) -> int:
    """Print the survivors of one assignment's sweep; 0 when every one was judged the same program."""
    assignment = conventions.assignment(name)
    ran, survivors = sweep(assignment, exercises, operators)
    judged = judged_same(assignment)
    same = [s for s in survivors if (s.mutant.exercise, s.operator, s.before, s.after) in judged]
    survivors = [s for s in survivors if s not in same]
    print(f"{name}: {ran - len(survivors) - len(same)} of {ran} operator mutants caught, {len(same)} judged the same "
          f"program (mutants/judged/{name}.toml), {len(survivors)} surviving")
    for s in same:
        print(f"  same program  {s.mutant.exercise} ({s.operator}): {judged[(s.mutant.exercise, s.operator, s.before, s.after)]}")
    for s in survivors:
        print(f"  survived  {s.mutant.exercise}, line {s.line} ({s.operator}): {s.before}  ->  {s.after}")
    if survivors:
        print("Each survivor is a wrong answer the tests miss (write a hidden check and a mutant in mutants/) or the "
              "same program in other words (leave it).")
    return 1 if survivors else 0
