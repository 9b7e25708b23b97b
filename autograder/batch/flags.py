"""Flag answer code that reaches for the grading machinery, for an instructor to look at.

The score is never changed here: verdicts are decided by the judge, in a process the student's code
never runs in (``autograder.judge``), so these tricks cannot change a score. A flag says "a person should read this": code that rebinds
attributes of modules or the names of modules (``torch = ...``), touches ``builtins`` or ``sys.modules``, walks frames or the garbage
collector, uses ``ctypes``, installs trace hooks or IPython input transformers, or defines the
methods a result object would need to pretend (``__eq__``, ``__torch_function__``, ...).
"""

from __future__ import annotations

import ast

# Conventional names of modules in a notebook; rebinding one (``torch = FakeTorch()``) is worth a look.
MODULE_ALIASES = {"torch": "torch", "np": "numpy", "numpy": "numpy", "F": "torch.nn.functional", "nn": "torch.nn",
                  "math": "math", "random": "random", "checks": "utils.checks", "utils": "utils", "sys": "sys", "os": "os"}

SUSPICIOUS_NAMES = {
    "builtins": "uses builtins", "ctypes": "uses ctypes", "gc": "uses gc", "inspect": "uses inspect",
    "setattr": "calls setattr", "delattr": "calls delattr", "globals": "calls globals()",
    "__import__": "calls __import__", "exec": "calls exec", "eval": "calls eval",
    "get_ipython": "uses get_ipython",
}
SUSPICIOUS_ATTRIBUTES = {
    "settrace": "installs a trace hook", "setprofile": "installs a profile hook",
    "_getframe": "walks stack frames", "f_locals": "walks stack frames", "f_globals": "walks stack frames",
    "__code__": "rewrites code objects", "__globals__": "reaches function globals", "__closure__": "reaches closures",
    "input_transformers_cleanup": "installs input transformers", "input_transformers_post": "installs input transformers",
    "ast_transformers": "installs AST transformers", "get_objects": "walks the garbage collector",
    "get_referrers": "walks the garbage collector", "_exit": "calls os._exit",
}
# Longer cells are not parsed in the grader's process (a 3 MB cell once took 5 GB and 272 s); they are flagged instead.
MAX_SCANNED_CHARS = 100_000

PRETENDING_METHODS = {"__eq__", "__ne__", "__torch_function__", "__torch_dispatch__", "__array_function__",
                      "__array_ufunc__", "__float__", "__bool__", "__instancecheck__", "__class__"}


def _root_name(node: ast.AST) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def flags_for(source: str) -> list[str]:
    """Reasons to look at this code (empty for ordinary answers)."""
    if len(source) > MAX_SCANNED_CHARS:
        return [f"code cell too long to scan ({len(source) // 1000} kB)"]
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    except (ValueError, RecursionError, MemoryError):  # null bytes, nesting deeper than Python parses
        return ["code the grader could not parse"]
    imported = _imported_names(tree)
    sys_names = _names_bound_to_sys(tree)
    found: list[str] = []
    for node in ast.walk(tree):
        found.extend(_node_flags(node, imported))
        if _reaches_sys_modules(node, sys_names):
            found.append("uses sys.modules")
    return sorted(set(found))


def _names_bound_to_sys(tree: ast.AST) -> set[str]:
    """``sys`` and every name an import binds to it (``import sys as s``)."""
    names = {"sys"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.asname for alias in node.names if alias.name == "sys" and alias.asname)
    return names


def _reaches_sys_modules(node: ast.AST, sys_names: set[str]) -> bool:
    """``sys.modules`` (or through an alias of sys), ``from sys import modules``, or ``.modules`` of a module
    imported by a call (``importlib.import_module("sys").modules``). PyTorch's ``model.modules()`` is not."""
    if isinstance(node, ast.ImportFrom):
        return node.module == "sys" and any(alias.name == "modules" for alias in node.names)
    if not (isinstance(node, ast.Attribute) and node.attr == "modules"):
        return False
    value = node.value
    if isinstance(value, ast.Name):
        return value.id in sys_names
    if isinstance(value, ast.Call):
        called = value.func.attr if isinstance(value.func, ast.Attribute) else getattr(value.func, "id", None)
        return called in {"import_module", "__import__"}
    return False


# Names of modules whose attributes an answer has no reason to assign, imported or not (``torch.x = ...``).
_MODULE_NAMES = frozenset({"torch", "np", "numpy", "math", "checks", "utils", "F", "sys", "os"})


def _imported_names(tree: ast.AST) -> set[str]:
    """The names the code's imports bind (``import a.b as c`` binds ``c``, ``import a.b`` binds ``a``)."""
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.update(alias.asname or alias.name for alias in node.names)
    return imported


def _node_flags(node: ast.AST, imported: set[str]) -> list[str]:
    """The flags one node of the tree raises on its own (its children are visited separately)."""
    if isinstance(node, ast.Name) and node.id in SUSPICIOUS_NAMES:
        return [SUSPICIOUS_NAMES[node.id]]
    if isinstance(node, ast.Attribute) and node.attr in SUSPICIOUS_ATTRIBUTES:
        return [SUSPICIOUS_ATTRIBUTES[node.attr]]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return _import_flags(node)
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
        return _rebinding_flags(node, imported)
    if isinstance(node, ast.FunctionDef) and node.name in PRETENDING_METHODS:
        return [f"defines {node.name}"]
    return []


def _import_flags(node: ast.Import | ast.ImportFrom) -> list[str]:
    """An import of a suspicious module (``import ctypes``, ``from builtins import ...``) or name."""
    names = [a.name for a in node.names] + ([node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
    return [SUSPICIOUS_NAMES[n.split(".")[0]] for n in names if n and n.split(".")[0] in SUSPICIOUS_NAMES]


def _rebinding_flags(node: ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete, imported: set[str]) -> list[str]:
    """Assigning (or deleting) a module's conventional name, or an attribute of a module."""
    targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
    found = []
    for target in targets:
        if isinstance(target, ast.Name) and target.id in MODULE_ALIASES:
            found.append(f"rebinds the name {target.id}")
        if isinstance(target, ast.Attribute) and _root_name(target) in imported | _MODULE_NAMES:
            found.append(f"rebinds {ast.unparse(target)}")
    return found
