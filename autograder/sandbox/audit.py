"""The runner's audit hook (PEP 578): what student code did to the runner's machinery, told to the judge
on a pipe of its own, before the audited operation goes ahead.

Student code runs in the runner, so it can replace the runner's reports about a call (arguments changed
in place, the issue-49 observations). ``install`` adds one ``sys.addaudithook`` hook after the runner's
own imports and before any student code; Python offers no way to remove it. The hook writes lines on a
file descriptor inherited from the judge (``COURSE_AUDIT_FD``), with ``os.write``, the descriptor and
everything else it uses bound when it was installed, so that rebinding ``os.write`` changes nothing:

* ``flag <event> at <where>``: the first time student code triggers an event of ``DANGER`` (or one starting
  with ``DANGER_PREFIXES``): ctypes, the garbage collector's object lists, frames (``sys._getframe``,
  ``tb_frame``, ``gi_frame``...), trace and profile hooks, code objects and functions built, ``__code__``
  or ``__defaults__`` replaced, data turned into code (``compile``, ``exec``, ``marshal``, ``pickle``),
  processes started, an ``autograder`` module loaded, another audit hook added, ``/proc/.../mem`` opened;
* ``ok <nonce>`` or ``changed <nonce> <what>``: on ``course.check``, the event the runner raises around
  each call the judge asks it to watch (the nonce is the judge's, new for each call): whether the
  grader's modules, their classes and the library functions the reports are computed with are still the
  objects they were at start-up (writes into a module or a class, which Python does not audit, show here).

"Student code" is a frame whose code was not loaded from a file of the Python installation or the
course's packages (``trusted_roots``): the notebook's cells (``<ipython-input-...>``), the submission's
own modules, code compiled at run time from a string. An event counts against the first frame above the
stdlib helpers that hand out frames (``inspect.currentframe``, ``logging.currentframe``,
``traceback.walk_tb``...) and above ctypes' and pickle's own frames (``ON_BEHALF``), so ``warnings``, ``logging``, ``typing``, ``dataclasses``, imports of ``.pyc``
files and the libraries' own work do not flag. The judge reads the pipe after every watched reply
(``judge.session``): a flag, a ``changed`` line, a line it cannot read, or no ``ok`` for its nonce makes
the notebook's reports untrusted. If the descriptor no longer is the judge's pipe (closed, or another
file ``dup2``'d over it) the hook cannot speak, and kills its own process instead.
"""

from __future__ import annotations

import _thread
import os
import sys

AUDIT_FD_VARIABLE = "COURSE_AUDIT_FD"
CHECK_EVENT = "course.check"
MAX_FLAGS = 24   # one line per kind of event: the pipe never fills between two reads

DANGER = frozenset({
    "sys._getframe", "sys._current_frames", "sys.settrace", "sys.setprofile", "sys.addaudithook",
    "gc.get_objects", "gc.get_referrers", "gc.get_referents", "code.__new__", "function.__new__",
    "object.__setattr__", "object.__getattr__", "object.__delattr__", "marshal.loads", "marshal.load",
    "pickle.find_class", "compile", "exec", "os.fork", "os.forkpty", "os.exec", "os.posix_spawn", "os.spawn",
    "os.system", "subprocess.Popen", "cpython.run_stdin", "cpython.run_command", "cpython.run_file"})
DANGER_PREFIXES = ("ctypes.",)
# Stdlib functions that hand their caller a frame (or walk frames for it): the caller is the one to judge.
FRAME_HELPERS = {"/inspect.py": {"currentframe", "stack", "trace", "getouterframes", "getinnerframes"},
                 "/logging/__init__.py": {"currentframe", "<lambda>"},   # currentframe is a lambda there
                 "/traceback.py": {"walk_stack", "walk_tb"}}
# Stdlib code that only acts for its caller, on the caller's data (a foreign function looked up, a pickle read):
# skipped whatever the event.
ON_BEHALF = ("/ctypes/", "/pickle.py", "/copyreg.py", "/_compat_pickle.py")
# The library functions and classes the runner's reports and its wire encoding are computed with. Named one
# by one, not whole modules: libraries rebind their own functions as they load (torch._dynamo wraps
# torch.manual_seed), and none of these.
LIBRARY_NAMES = ("torch.equal", "torch.frombuffer", "torch.empty", "torch.Tensor", "torch.Generator", "torch.Size",
                 "torch.dtype", "torch.nn.Parameter", "torch.random.get_rng_state", "torch._C.TensorBase",
                 "torch.is_grad_enabled", "torch.get_default_dtype",
                 "numpy.frombuffer", "numpy.ascontiguousarray", "numpy.array_equal", "numpy.ndarray", "numpy.dtype",
                 "numpy.generic", "numpy.random.get_state", "random.getstate", "json.dumps", "json.loads",
                 "base64.b64encode", "base64.b64decode", "math.isfinite", "itertools.islice", "io.StringIO",
                 "inspect.signature", "traceback.extract_tb", "functools.lru_cache", "sys.audit")
LIBRARY_CLASSES = ("torch.Tensor", "torch.nn.Parameter")
COURSE_PACKAGES = ("autograder", "utils")
# Module globals of the course's packages that change while a notebook runs, by design.
RUNTIME_STATE = frozenset({"utils.precision._cpu_peak_resettable"})


def trusted_roots() -> tuple[str, ...]:
    """Folders whose files are the installation's and the course's code: the standard library, the
    ``site-packages`` folders, the course packages' folders (never the working folder)."""
    import sysconfig

    work = os.getcwd()
    roots = {sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    roots.update(p for p in sys.path if p and os.path.isdir(p) and os.path.abspath(p) != work
                 and not work.startswith(os.path.abspath(p) + os.sep))
    for package in COURSE_PACKAGES:
        module = sys.modules.get(package)
        if module is not None and getattr(module, "__file__", None):
            roots.add(os.path.dirname(os.path.dirname(os.path.abspath(module.__file__))))
    return tuple(sorted(os.path.join(os.path.abspath(r), "") for r in roots))


def snapshot() -> list[tuple[str, object, dict, frozenset | None]]:
    """(label, namespace, its entries now, the new names allowed in it: None for any) for each namespace
    watched. In a course module, a new name is a change unless it is a submodule imported since."""
    taken = []
    for name in sorted(sys.modules):
        taken += _module_record(name, sys.modules[name])
    taken += [(label, cls.__dict__, dict(cls.__dict__), frozenset()) for label, cls in _library_classes()]
    taken.append(("sys.modules", sys.modules, {name: sys.modules[name] for name, *_ in taken if name in sys.modules},
                  None))
    return taken


def _module_record(name: str, module) -> list:
    """What is watched in one module: builtins' entries, the named library functions, a course module's
    entries (all but ``RUNTIME_STATE``) and its classes' own; nothing for another module."""
    import types

    if not isinstance(module, types.ModuleType):
        return []
    space = vars(module)
    if name == "builtins":   # all but IPython's "_", "__", "___" (the last results)
        return [(name, space, {key: value for key, value in space.items() if key.strip("_")}, None)]
    if name.split(".")[0] in COURSE_PACKAGES:
        return _course_record(name, space)
    names = {dotted.rpartition(".")[2] for dotted in LIBRARY_NAMES if dotted.rpartition(".")[0] == name}
    return [(name, space, {key: space[key] for key in names if key in space}, None)] if names else []


def _course_record(name: str, space: dict) -> list:
    runtime = frozenset(key.rpartition(".")[2] for key in RUNTIME_STATE if key.startswith(name + "."))
    record = [(name, space, {key: value for key, value in space.items() if key not in runtime}, runtime)]
    return record + [(f"{name}.{value.__qualname__}", value.__dict__, dict(value.__dict__), frozenset())
                     for value in list(space.values()) if isinstance(value, type) and value.__module__ == name]


def _library_classes():
    for dotted in LIBRARY_CLASSES:
        module_name, _, attribute = dotted.rpartition(".")
        module = sys.modules.get(module_name)
        cls = getattr(module, attribute, None) if module is not None else None
        if isinstance(cls, type):
            yield dotted, cls


def changes(taken, len=len, list=list, type=type) -> list[str]:   # noqa: A002 - bound before student code runs
    """What differs from ``snapshot()``'s record: an entry rebound or removed, or a new name in a course
    module (other than a submodule it imported) or a watched class. The builtins it uses are bound at
    definition: a rebound ``builtins.len`` shows in the record instead of hiding everything else."""
    found = []
    for label, space, entries, allowed in taken:
        for key, value in entries.items():
            if space.get(key, changes) is not value:
                found.append(f"{label}.{key}")
        if allowed is not None and len(space) > len(entries):
            found += [f"{label}.{key}" for key, value in list(space.items()) if key not in entries and key not in allowed
                      and not (type(value).__name__ == "module" and label.split(".")[0] in COURSE_PACKAGES)]
        if len(found) > 3:
            break
    return found[:4]


def install(fd: int, objects: dict | None = None) -> None:
    """Add the hook, writing on ``fd`` (see the module's text). Call once, after the runner's imports.
    ``objects``: label -> (an object's ``__dict__``, the names in it that change by design), watched too."""
    taken = snapshot()
    for label, (space, changing) in (objects or {}).items():
        taken.append((label, space, {k: v for k, v in space.items() if k not in changing}, frozenset(changing)))
    hook = _make_hook(fd, os.fstat(fd), trusted_roots(), taken)
    sys.addaudithook(hook)


def _make_hook(fd, stat, roots, taken, _write=os.write, _fstat=os.fstat, _kill=os.kill, _getpid=os.getpid,
               _frame=sys._getframe, _changes=changes, _str=str, _thread=_thread.get_ident):
    # The guard against the hook's own events (its sys._getframe) is per thread: one shared flag would let a
    # thread of the student's slip an event past while another thread's event is being looked at.
    state = {"busy": set(), "said": set()}
    identity = (stat.st_dev, stat.st_ino)

    def say(line: str) -> None:
        try:
            current = _fstat(fd)
            if (current.st_dev, current.st_ino) != identity:
                raise OSError("not the judge's pipe")
            _write(fd, (line[:500].replace("\n", " ") + "\n").encode("utf-8", "replace"))
        except OSError:
            _kill(_getpid(), 9)   # the judge can no longer be told: nothing this process reports is believed

    def hook(event, args):
        me = _thread()
        if me in state["busy"]:
            return
        state["busy"].add(me)
        try:
            if event == CHECK_EVENT:
                nonce = _str(args[0])[:64] if args else ""
                forger = _student_frame(_frame(1), event, roots)   # only the runner's agent raises it
                found = [f"{CHECK_EVENT} raised at {forger}"] if forger else _changes(taken)
                say(f"changed {nonce} {', '.join(found)}" if found else f"ok {nonce}")
            elif event == "open" and _foreign_bytecode(args, roots) and "bytecode" not in state["said"]:
                state["said"].add("bytecode")   # whoever opens it: compiled code chooses the file it claims
                say(f"flag compiled code loaded from {_str(args[0]).rpartition('/')[2][:80]}")
            elif event not in state["said"] and len(state["said"]) < MAX_FLAGS and _dangerous(event, args):
                where = _student_frame(_frame(1), event, roots)
                if where is not None:
                    state["said"].add(event)
                    say(f"flag {_named(event, args)} at {where}")
        finally:
            state["busy"].discard(me)

    return hook


def _named(event: str, args) -> str:
    """The event with what it was about: ``object.__getattr__`` of ``tb_frame``, ``import`` of which module."""
    about = args[1] if event.startswith("object.") and len(args) > 1 else args[0] if event == "import" and args else ""
    return f"{event} ({about})" if isinstance(about, str) and about else event


def _foreign_bytecode(args, roots: tuple[str, ...]) -> bool:
    """A ``.pyc`` file opened from outside the installation and the course's packages: its code objects would
    carry whatever file name it was compiled with, a library's too (the submission's are not staged)."""
    path = args[0] if args else None
    # Plain string tests (os.path could be rebound): a relative path, or one that climbs out with "..", is foreign.
    return isinstance(path, str) and path.endswith(".pyc") and not (path.startswith(roots) and "/../" not in path
                                                                    and "/./" not in path)


def _dangerous(event: str, args) -> bool:
    if event in DANGER or event.startswith(DANGER_PREFIXES):
        return True
    if event == "import":
        return bool(args) and isinstance(args[0], str) and args[0].split(".")[0] == "autograder"
    if event == "open":
        path = args[0] if args else None
        return isinstance(path, str) and path.startswith("/proc/") and path.endswith("/mem")
    return False


def _student_frame(frame, event: str, roots: tuple[str, ...]) -> str | None:
    """Where the student's code triggered ``event`` (``frame``: the hook's caller), or None when the
    first frame past the frame-handing helpers (past the import machinery, for an import) is trusted."""
    while frame is not None and _helper(frame.f_code, event):
        frame = frame.f_back
    if frame is None:
        return None
    filename = frame.f_code.co_filename
    if filename.startswith(roots) or filename.startswith("<frozen "):
        return None
    shown = "a cell of your notebook" if filename.startswith("<ipython-input-") else os.path.basename(filename)[:80]
    return f"line {frame.f_lineno} of {shown}"


def _helper(code, event: str) -> bool:
    filename = code.co_filename
    if event == "import" and filename.startswith("<frozen importlib") or any(part in filename for part in ON_BEHALF):
        return True
    return any(filename.endswith(suffix) and code.co_name in names for suffix, names in FRAME_HELPERS.items())
