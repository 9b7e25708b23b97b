"""The grader's layers import only downwards: what runs beside student code (runner, judge) never
imports the batch or the command line, and module-level imports have no cycles."""

from __future__ import annotations

import ast
from pathlib import Path

import autograder

PACKAGE = Path(autograder.__file__).resolve().parent

# The process that runs student code, and the judge beside it, must not pull in the batch grader
# (nbgrader, the gradebook, the CSV): a smaller surface, and no path from a test cell to grades.
STUDENT_SIDE = {"runner", "kernel_agent", "wire", "serving", "protocol", "sandbox"}
BATCH = {"grading", "gradebook", "intake", "report", "shards", "demo", "__main__", "build", "check", "agreement",
         "class_report", "class_report_page", "report_figures", "mutant_messages", "mutant_edits",
         "mutant_import"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts) or "__init__"


def _imports(path: Path, module_level_only: bool) -> set[str]:
    """The autograder modules ``path`` imports (relative or absolute), as dotted names under the package."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if module_level_only else list(ast.walk(tree))
    package = list(path.relative_to(PACKAGE).parent.parts)   # where a relative import starts
    found = set()
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[:len(package) - (node.level - 1)]
            target = base + (node.module.split(".") if node.module else [])
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("autograder"):
            target = node.module.split(".")[1:]
        elif isinstance(node, ast.Import):
            found.update(a.name.removeprefix("autograder.") for a in node.names if a.name.startswith("autograder."))
            continue
        else:
            continue
        found.add(".".join(target))
        found.update(".".join(target + [alias.name]) for alias in node.names)   # `from . import conventions`
    return {name for name in found if name and ((PACKAGE / (name.replace(".", "/") + ".py")).exists()
            or (PACKAGE / name.replace(".", "/") / "__init__.py").exists())}


def _graph(module_level_only: bool) -> dict[str, set[str]]:
    return {_module_name(p): _imports(p, module_level_only) for p in PACKAGE.rglob("*.py")}


def test_the_import_reader_sees_known_edges():
    graph = _graph(module_level_only=True)
    assert "protocol" in graph["grading"] and "serving" in graph["runner"] and "judge.outputs" in graph["gradebook"]
    assert "judge.session" in graph["judge.notebook"]


def test_what_runs_beside_student_code_never_imports_the_batch():
    graph = _graph(module_level_only=False)   # lazy imports inside functions count too
    judge = {name for name in graph if name == "judge" or name.startswith("judge.")}
    for module in STUDENT_SIDE | judge:
        reached, frontier = set(), {module}
        while frontier:
            current = frontier.pop()
            for target in graph.get(current, set()) - reached:
                reached.add(target)
                frontier.add(target)
        assert not reached & BATCH, f"{module} reaches {sorted(reached & BATCH)}"


def test_module_level_imports_have_no_cycles():
    graph = _graph(module_level_only=True)
    state: dict[str, str] = {}

    def visit(module: str, path: list[str]) -> None:
        state[module] = "open"
        for target in sorted(graph.get(module, set())):
            assert state.get(target) != "open", "import cycle: " + " -> ".join(path + [module, target])
            if target not in state:
                visit(target, path + [module])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [])
