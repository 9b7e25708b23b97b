"""Answer code that reaches into the code the runner reports with, found by reading it in the grader.

The runner tells the judge which arguments a call changed (``kernel_agent.changed_arguments``); it
runs in the student's process, so code there can replace that report (patch the function, its
module in ``sys.modules``, its globals or code object, or what it computes with) and keep the points
of the "inputs left unchanged" checks. No check inside that process can prove it was not done, so
the grader reads the submitted source, outside it, for the routes to the runner's machinery:

* importing the grader (``autograder``, any submodule) or naming it in a string;
* writing into modules or their contents: an attribute of an imported module or of a name imported
  from one set or deleted (``checks.assert_close = ...``, ``torch.Tensor.__eq__ = ...``; settings under
  ``torch.backends`` excepted), ``setattr``/``delattr`` on them, their ``__dict__`` or ``vars()``;
* ``sys.modules`` used other than to ask ``name in sys.modules``;
* function and frame internals (``__code__``, ``__globals__``, ``__closure__``, ``__builtins__``,
  ``__subclasses__``, ``f_globals``, ``f_locals``, ``f_back``, ``sys._getframe``, ``inspect``'s frames),
  the garbage collector's object lists, trace and profile hooks, ``ctypes``;
* code the grader cannot read: ``exec``, ``eval``, ``compile``, ``__import__``, ``import_module`` of a
  name built at run time.

Each finding is a flag starting ``TAMPERING``; ``prepare_job`` hands them to the judge (with the flags
saying code was not read in full, ``grading.UNREAD``: it may hide one), which then
fails every call whose verdict needs the runner's change report (``Session.untrusted_reports``).
What this cannot prove (autograder/README.md, "Threat model"): a route it does not list (a library
function that returns a module object and is then written through a name bound at run time, data
turned into code by a library such as ``pickle``), which is why the list errs wide. The second layer
watches the code as it runs: the runner's audit hook (``autograder/sandbox/audit.py``).
"""

from __future__ import annotations

import ast

TAMPERING = "reaches into the grader's machinery"
GRADER_PACKAGES = ("autograder",)
# In a string, these name the grader's modules (a docstring saying "the autograder checks this" does not).
GRADER_WORDS = ("autograder.", "kernel_agent", "changed_arguments")
INTERNALS = {"__code__", "__globals__", "__closure__", "__builtins__", "__subclasses__", "f_globals", "f_locals",
             "f_back", "f_builtins", "_getframe", "currentframe", "getouterframes", "settrace", "setprofile",
             "get_objects", "get_referrers", "get_referents", "gi_frame", "tb_frame", "cr_frame"}
UNREADABLE_CODE = {"exec", "eval", "compile", "__import__"}
MUTATING_METHODS = {"update", "pop", "popitem", "setdefault", "clear", "__setitem__", "__delitem__"}
EXEMPT_SETTINGS = ("torch.backends.",)


def tampering_for(source: str) -> list[str]:
    """Why this code could have replaced the runner's reports (empty for ordinary answers). The caller
    bounds the size (``preparation.flag_sources``); code that does not parse cannot run either."""
    try:
        tree = _parsed(source)
    except SyntaxError:
        return []
    except (ValueError, RecursionError, MemoryError):   # null bytes, nesting deeper than Python parses
        return []   # flagged by ``flags_for`` as code the grader could not parse (``grading.UNREAD``)
    mark_membership_tests(tree)
    modules = _module_names(tree)
    found: set[str] = set()
    for node in ast.walk(tree):
        reason = _reason(node, modules)
        if reason:
            found.add(f"{TAMPERING}: {reason}")
    return sorted(found)


def _parsed(source: str) -> ast.AST:
    """The cell as the runner's IPython shell runs it: magics and ``!`` lines turned into Python first
    (a cell starting ``%time`` is not Python, and must not hide what follows)."""
    try:
        return ast.parse(source)
    except SyntaxError:
        from IPython.core.inputtransformer2 import TransformerManager

        return ast.parse(TransformerManager().transform_cell(source))


def _module_names(tree: ast.AST) -> set[str]:
    """Names bound by imports (modules and what was imported from them)."""
    names: set[str] = {"sys"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
            names.update(f"sys={alias.asname}" for alias in node.names if alias.name == "sys" and alias.asname)
        elif isinstance(node, ast.ImportFrom):
            names.update(alias.asname or alias.name for alias in node.names)
    return names


def _reason(node: ast.AST, modules: set[str]) -> str | None:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return _import_reason(node)
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
        text = node.value.decode("latin-1") if isinstance(node.value, bytes) else node.value
        word = "autograder" if text.strip() == "autograder" else next((w for w in GRADER_WORDS if w in text), None)
        return f"names {word!r} in a string" if word else None
    if isinstance(node, ast.Attribute):
        return _attribute_reason(node, modules)
    if isinstance(node, ast.Name) and node.id in UNREADABLE_CODE:
        return f"runs code the grader cannot read ({node.id})"
    if isinstance(node, ast.Call):
        return _call_reason(node, modules)
    return None


def _import_reason(node: ast.Import | ast.ImportFrom) -> str | None:
    names = [alias.name for alias in node.names] + ([node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
    if isinstance(node, ast.ImportFrom) and node.module in ("sys", "gc", "inspect", "builtins"):
        inner = [alias.name for alias in node.names if alias.name in INTERNALS | {"modules", "*"}]
        if inner:
            return f"imports {node.module}.{inner[0]}"
    for name in names:
        root = name.split(".")[0]
        if root in GRADER_PACKAGES:
            return f"imports {name}"
        if root == "ctypes":
            return "imports ctypes"
    return None


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def _root(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _attribute_reason(node: ast.Attribute, modules: set[str]) -> str | None:
    if node.attr in INTERNALS:
        return f"reads {node.attr}"
    if node.attr == "modules" and _is_sys(node.value, modules) and not getattr(node, "_membership", False):
        return "uses sys.modules"
    if isinstance(node.ctx, (ast.Store, ast.Del)) and _root(node) in modules:
        dotted = _dotted(node)
        if not dotted.startswith(EXEMPT_SETTINGS):
            return f"rebinds {dotted or node.attr}"
    if node.attr == "__dict__" and _root(node) in modules:
        return f"reaches {_dotted(node) or '__dict__'}"
    return None


def _is_sys(node: ast.AST, modules: set[str]) -> bool:
    """``sys``, an alias of it, or a module imported by a call (``importlib.import_module("sys")``)."""
    if isinstance(node, ast.Name):
        return node.id == "sys" or f"sys={node.id}" in modules
    return isinstance(node, ast.Call)


def _call_reason(node: ast.Call, modules: set[str]) -> str | None:
    name = _called_name(node)
    first = node.args[0] if node.args else None
    return _reflection_reason(name, first, modules) or _sys_modules_reason(node, name, modules)


def _called_name(node: ast.Call) -> str:
    if isinstance(node.func, ast.Name):
        return node.func.id
    return node.func.attr if isinstance(node.func, ast.Attribute) else ""


def _reflection_reason(name: str, first: ast.AST | None, modules: set[str]) -> str | None:
    """``setattr``/``delattr``/``vars`` on an imported module, or a module imported by a name built at run time."""
    if name in ("setattr", "delattr") and first is not None and _root(first) in modules:
        return f"calls {name} on {_dotted(first) or _root(first)}"
    if name == "vars" and first is not None and _root(first) in modules:
        return f"reaches vars({_dotted(first) or _root(first)})"
    if name == "import_module" and not (first is not None and isinstance(first, ast.Constant)):
        return "imports a module named at run time"
    return None


def _sys_modules_reason(node: ast.Call, name: str, modules: set[str]) -> str | None:
    """A mutating method called on ``sys.modules`` (``sys.modules.update(...)``, ``.pop(...)``...)."""
    if name in MUTATING_METHODS and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Attribute) \
            and node.func.value.attr == "modules" and _is_sys(node.func.value.value, modules):
        return "changes sys.modules"
    return None


def mark_membership_tests(tree: ast.AST) -> None:
    """``name in sys.modules`` only asks; mark those ``sys.modules`` nodes so they are not findings."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and all(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
            for side in node.comparators:
                if isinstance(side, ast.Attribute) and side.attr == "modules":
                    side._membership = True
