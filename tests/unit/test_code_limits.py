"""The grader's code stays readable in pieces: no module of ``autograder/`` over 400 lines, no function
over 40 lines, none with a cyclomatic complexity over 15 (counted as radon counts it: one, plus one per
``if``, conditional expression, loop and its ``else``, ``except`` and ``try``'s ``else``, extra operand of
``and``/``or``, comprehension ``for`` and its ``if``s, and ``match`` case). A function that grows past
these is split by concept, not by cutting it in half."""

from __future__ import annotations

import ast
from pathlib import Path

import autograder

PACKAGE = Path(autograder.__file__).resolve().parent
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 40
MAX_COMPLEXITY = 15

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def complexity(function: ast.AST) -> int:
    """Cyclomatic complexity of ``function``'s own body (nested functions and classes count on their own)."""
    total = 1
    stack = list(ast.iter_child_nodes(function))
    while stack:
        node = stack.pop()
        if isinstance(node, FUNCTIONS + (ast.ClassDef,)):
            continue
        if isinstance(node, (ast.If, ast.IfExp)):
            total += 1
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            total += 1 + bool(node.orelse)
        elif isinstance(node, ast.Try):
            total += len(node.handlers) + bool(node.orelse)
        elif isinstance(node, ast.BoolOp):
            total += len(node.values) - 1
        elif isinstance(node, ast.comprehension):
            total += 1 + len(node.ifs)
        elif isinstance(node, ast.Match):
            total += sum(1 for case in node.cases if not _is_wildcard(case.pattern))
        stack.extend(ast.iter_child_nodes(node))
    return total


def _is_wildcard(pattern: ast.AST) -> bool:
    return isinstance(pattern, ast.MatchAs) and pattern.pattern is None


def _functions():
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, FUNCTIONS):
                yield path.relative_to(PACKAGE.parent), node


def test_the_counter_counts_what_radon_counts():
    source = ("def f(x, ys):\n"
              "    if x and ys or not x:\n"          # if: 1, and/or: 2
              "        return [y for y in ys if y]\n"  # comprehension: 1, its if: 1
              "    for y in ys:\n"                    # loop and its else: 2
              "        pass\n"
              "    else:\n"
              "        pass\n"
              "    try:\n"                            # two handlers: 2
              "        return 1 if x else 2\n"        # conditional expression: 1
              "    except ValueError:\n"
              "        pass\n"
              "    except TypeError:\n"
              "        pass\n"
              "    def inner():\n"                    # counted on its own
              "        if x:\n"
              "            pass\n")
    function = ast.parse(source).body[0]
    assert complexity(function) == 1 + 1 + 2 + 2 + 2 + 2 + 1
    assert complexity(function.body[-1]) == 2


def test_no_module_over_400_lines():
    long = {str(p.relative_to(PACKAGE.parent)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"


def test_no_function_over_40_lines():
    long = [f"{path}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
            for path, node in _functions() if node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: {long}"


def test_no_function_more_complex_than_15():
    tangled = [f"{path}:{node.lineno} {node.name} (complexity {complexity(node)})"
               for path, node in _functions() if complexity(node) > MAX_COMPLEXITY]
    assert not tangled, f"functions of cyclomatic complexity over {MAX_COMPLEXITY}: {tangled}"
