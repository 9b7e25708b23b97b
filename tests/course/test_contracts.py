"""Each exercise's contract as data (``contracts/NN_slug.toml``, ``autograder.course.contracts``) agrees with its
docstring and its tests: every name the students write has one; each declared return type is named in the
docstring (and the judge proves it on every hidden call of the suite's solution runs); each error condition is the
docstring's, and each one with a numeric boundary is probed on both sides by ``checks.assert_error_boundary`` in
the exercise's hidden cells; the generator, mutated and viewed arguments are parameters the docstring names."""

from __future__ import annotations

import ast
import re

import pytest

from autograder.course import contracts, conventions
from autograder.course.solution_source import load_solution
from autograder.judge import return_types

ASSIGNMENTS = conventions.assignments()
# What a docstring says for each declared type (any of the words).
TYPE_WORDS = {"float": ("float",), "int": ("int",), "bool": ("bool", "True"), "str": ("str", "text", "\""),
              "bytes": ("bytes",), "None": ("None",), "tensor": ("tensor",), "list": ("list",), "dict": ("dict",),
              "tuple": ("(", "tuple", "pair")}


def _definitions(nb) -> dict[str, tuple[str, ast.AST]]:
    """name -> (its exercise, its def) for every function and class the solution cells define at top level."""
    found = {}
    for exercise in conventions.exercises(nb):
        code = conventions.strip_solution_markers(nb.cells[exercise.solution_index].source)
        for node in ast.parse(code).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                found[node.name] = (exercise, node)
    return found


def _words(text: str) -> str:
    return " ".join(text.split())


def _atoms(node) -> set[str]:
    return {node[0]} | {a for child in node[1:] for a in _atoms(child)} if node[0] != "|" else \
        {a for child in node[1:] for a in _atoms(child)}


def _parameters(node) -> list[str]:
    if isinstance(node, ast.ClassDef):
        init = next((f for f in node.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
        return [a.arg for a in init.args.args[1:] + init.args.kwonlyargs] if init else []
    return [a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs]


def _hidden_sources(nb, exercise) -> list[str]:
    return [nb.cells[i].source for i in [exercise.hidden_index, *exercise.hidden_part_indices] if i is not None]


def _boundary_probes(sources: list[str], name: str, parameters: list[str]):
    """(exception name, argument, raises, allowed) for each ``assert_error_boundary`` whose lambda calls ``name``
    with its parameter in (an expression at) one argument's place."""
    for source in sources:
        for call in ast.walk(ast.parse(conventions.strip_solution_markers(source))):
            if not (isinstance(call, ast.Call) and getattr(call.func, "attr", None) == "assert_error_boundary"):
                continue
            kinds, fn = call.args[0], call.args[1]
            keywords = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg in ("raises", "allowed")}
            if not isinstance(fn, ast.Lambda) or not isinstance(fn.body, ast.Call):
                continue
            inner, variable = fn.body, fn.args.args[0].arg
            if getattr(inner.func, "id", None) != name:
                continue
            places = [(parameters[i] if i < len(parameters) else None, a) for i, a in enumerate(inner.args)]
            places += [(k.arg, k.value) for k in inner.keywords]
            for argument, expression in places:
                if any(isinstance(n, ast.Name) and n.id == variable for n in ast.walk(expression)):
                    yield ast.unparse(kinds), argument, keywords.get("raises", ()), keywords.get("allowed", ())


def _disagreements(assignment) -> list[str]:
    nb = load_solution(assignment)
    declared = contracts.load(assignment)
    defined = _definitions(nb)
    exercise_names = {e.name for e in conventions.exercises(nb)}
    problems = [f"{n}: a contract for a name no solution cell defines" for n in sorted(set(declared) - set(defined))]
    for name, (exercise, node) in defined.items():
        doc = _words(ast.get_docstring(node) or "")
        needs = not name.startswith("_") and (name in exercise_names or "Return" in doc)
        if name not in declared:
            problems += [f"{name}: no contract in {contracts.path_of(assignment).name}"] if needs else []
            continue
        problems += [f"{name}: {p}" for p in _clause_problems(declared[name], node, doc,
                                                                _hidden_sources(nb, exercise))]
    tests = "\n".join(cell.source for cell in nb.cells if conventions.is_graded_cell(cell))
    problems += [f"{name}: its tests call it through probes.mutating_call, but its contract declares no mutates"
                 for name in sorted(set(re.findall(r"mutating_call\(\s*(\w+)", tests)))
                 if name in declared and not declared[name].mutates]
    return problems


def _clause_problems(contract, node, doc: str, hidden: list[str]) -> list[str]:
    problems = []
    parameters = _parameters(node)
    for atom in _atoms(return_types.parse(contract.returns)):
        if atom == "instance":
            problems += [] if isinstance(node, ast.ClassDef) else ["returns an instance, but it is not a class"]
        elif not any(word in doc for word in TYPE_WORDS[atom]):
            problems.append(f"returns {contract.returns!r}, but its docstring never says {TYPE_WORDS[atom][0]!r}")
    named = set(re.findall(r"\b(\w+Error)\b", doc))
    for error in contract.errors:
        if _words(error.when) not in doc or error.raises not in doc:
            problems.append(f"{error.raises} when {error.when!r}: not in its docstring")
        if error.argument is None:
            continue
        probes = [p for p in _boundary_probes(hidden, node.name, parameters)
                  if p[0] == error.raises and p[1] == error.argument]
        if not any(set(error.outside) <= set(p[2]) and set(error.inside) <= set(p[3]) for p in probes):
            problems.append(f"{error.raises} when {error.when!r}: no checks.assert_error_boundary in its hidden cells "
                            f"probes {error.argument} with raises={error.outside} and allowed={error.inside}")
    problems += [f"its docstring names {n}, which its contract neither raises nor lists in not_raised"
                 for n in sorted(named - {e.raises for e in contract.errors} - set(contract.not_raised))]
    for key in ("mutates", "views") + (("generator",) if contract.generator else ()):
        values = [contract.generator] if key == "generator" else getattr(contract, key)
        problems += [f"{key} names {v!r}, not a parameter" for v in values if v not in parameters]
    if ("generator" in parameters) != (contract.generator == "generator"):
        problems.append("a parameter named generator is the call's only randomness: declare generator = \"generator\"")
    problems += ["views declared, but its docstring never says the result may be a view"] if contract.views and "view" not in doc else []
    problems += ["mutates declared, but its docstring never says it modifies an argument"] if contract.mutates and not \
        re.search(r"modif|in place", doc) else []
    problems += _device_problems(contract, doc, hidden)
    return problems


# A docstring that states where the results are: "on the device of ids", "same dtype and device", "Runs on the device".
RESULT_DEVICE = re.compile(r"on the device of|same device as|on (?:\w+'s|its|their) device|dtype and device|[Rr]uns on the device")


def _device_problems(contract, doc: str, hidden: list[str]) -> list[str]:
    """A stated result device is declared, and a declared one is checked where no CPU answer passes by chance:
    on fake CUDA (values kept), or on meta for an answer that never needs the values."""
    if not contract.device:
        return ["its docstring states the results' device: declare device"] if RESULT_DEVICE.search(doc) else []
    text = "\n".join(hidden)
    checked = "utils.fake_cuda." in text or "values_may_be_read=False" in text
    return [] if checked else [f"device follows {contract.device!r}, but no hidden cell checks it on fake CUDA "
                               "(utils.fake_cuda) or on meta with values_may_be_read=False"]


@pytest.mark.parametrize("declared", ASSIGNMENTS, ids=[a.name for a in ASSIGNMENTS])
def test_each_contract_agrees_with_its_docstring_and_its_hidden_tests(declared):
    assert _disagreements(declared) == []


def test_every_declared_return_type_parses_and_the_files_cover_every_assignment():
    folder = contracts.path_of(ASSIGNMENTS[0]).parent
    assert sorted(p.stem for p in folder.glob("*.toml")) == [a.name for a in ASSIGNMENTS]
    for assignment in ASSIGNMENTS:
        for contract in contracts.load(assignment).values():
            return_types.parse(contract.returns)
