"""The grader's sides import only one way: the sandbox and the judge (what runs beside student code)
never import the batch, the course's commands or the command line; the batch never imports the
course's commands; nothing imports an entry point; and no import, at module level, inside a function
or for type checking only, closes a cycle."""

from __future__ import annotations

import ast
from pathlib import Path

import autograder

PACKAGE = Path(autograder.__file__).resolve().parent

SIDES = ("course", "judge", "sandbox", "batch", "selfgrade")
# The course's commands: they drive everything else (build, check, demo, the mutants' agreement, one mistake
# charged once).
COURSE_COMMANDS = {"course.build", "course.check", "course.demo", "course.agreement", "course.isolation"}
ENTRY_POINTS = {"__main__", "judge.__main__"}


def _side(module: str, graph: dict) -> set[str]:
    return {name for name in graph if name == module or name.startswith(module + ".")}


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
    assert "judge.protocol" in graph["batch.grading"] and "judge.serving" in graph["sandbox.runner"]
    assert "judge.outputs" in graph["batch.gradebook"]
    assert "judge.session" in graph["judge.notebook"]
    assert "course.conventions" in graph["batch.intake"] and "sandbox.limits" in graph["judge.protocol"]
    everything = _graph(module_level_only=False)
    assert "sandbox.memory_watch" in everything["sandbox.confinement"]   # a lazy import inside a function
    assert "batch.preparation" in everything["batch.gradebook"]          # an import for type checking only


def test_every_module_lives_in_a_side():
    loose = [name for name in _graph(module_level_only=True)
             if name not in {"__init__", "__main__"} and name.split(".")[0] not in SIDES]
    assert not loose, f"modules outside the subpackages {SIDES}: {loose}"


def _reached(graph: dict[str, set[str]], module: str) -> set[str]:
    reached, frontier = set(), {module}
    while frontier:
        current = frontier.pop()
        for target in graph.get(current, set()) - reached:
            reached.add(target)
            frontier.add(target)
    return reached


def test_what_runs_beside_student_code_never_imports_the_batch():
    graph = _graph(module_level_only=False)   # lazy imports inside functions count too
    forbidden = _side("batch", graph) | COURSE_COMMANDS | ENTRY_POINTS
    for module in _side("sandbox", graph) | _side("judge", graph) | {"selfgrade"}:
        reached = _reached(graph, module) - {module}
        assert not reached & forbidden, f"{module} reaches {sorted(reached & forbidden)}"


def test_the_batch_never_imports_the_course_commands():
    graph = _graph(module_level_only=False)
    for module in _side("batch", graph):
        reached = _reached(graph, module)
        assert not reached & (COURSE_COMMANDS | ENTRY_POINTS), f"{module} reaches {sorted(reached & COURSE_COMMANDS)}"


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` (its modules in order, the first repeated at the end), or None."""
    state: dict[str, str] = {}

    def visit(module: str, path: list[str]) -> list[str] | None:
        state[module] = "open"
        for target in sorted(graph.get(module, set())):
            if state.get(target) == "open":
                return path[path.index(target):] + [module, target] if target in path else [module, target]
            if target not in state:
                found = visit(target, path + [module])
                if found:
                    return found
        state[module] = "done"
        return None

    for module in sorted(graph):
        if module not in state:
            found = visit(module, [])
            if found:
                return found
    return None


def test_the_cycle_finder_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycles_at_all():
    """Module-level, function-level and type-checking imports together: a cycle among any of them is a
    tangle of concerns, even where Python would tolerate it."""
    cycle = _cycle(_graph(module_level_only=False))
    assert cycle is None, "import cycle: " + " -> ".join(cycle)
