"""The runner's audit hook (``autograder/sandbox/audit.py``) and the judge's reading of its pipe
(``autograder/judge/audit_pipe.py``). A hook cannot be removed, so each hook test runs in a Python of its
own: code compiled as a notebook cell (``<ipython-input-...>``) does things, and the test reads the lines."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from autograder.judge.audit_pipe import AuditPipe

# The script itself is code from a string, which the hook would judge as a student's: it compiles the cell
# before the hook is installed and runs it through runpy (the standard library), as IPython runs a cell.
RUN = textwrap.dedent('''
    import os, sys, runpy
    from autograder.sandbox import audit
    cell = compile(sys.argv[1], "<ipython-input-1-abc>", "exec")
    read, write = os.pipe()
    audit.install(write)
    runpy._run_code(cell, {"__name__": "__main__"})
    import threading   # the check raised from a library frame, as the runner's agent raises it
    threading.Thread(target=sys.audit, args=(audit.CHECK_EVENT, "n1")).run()
    os.close(write)
    sys.stdout.write(os.read(read, 65536).decode())
''')


def hook_lines(cell: str) -> list[str]:
    completed = subprocess.run([sys.executable, "-c", RUN, textwrap.dedent(cell)], capture_output=True, text=True,
                               timeout=120, env=dict(os.environ, PYTHONWARNINGS="ignore"))
    assert completed.returncode == 0, completed.stderr[-2000:]
    return completed.stdout.splitlines()


def test_library_work_from_a_cell_is_not_flagged():
    lines = hook_lines('''
        import warnings, logging, typing, dataclasses, collections, enum, inspect, traceback
        warnings.warn("a note")
        logging.getLogger("me").warning("a line")
        T = typing.TypeVar("T")
        P = collections.namedtuple("P", "a b")
        class Colour(enum.Enum):
            RED = 1
        @dataclasses.dataclass
        class S:
            x: int = 1
        inspect.signature(lambda a, b=2: a)
        traceback.format_stack()
    ''')
    assert lines == ["ok n1"], lines


@pytest.mark.parametrize("cell, event", [
    ("import gc\ngc.get_objects()", "flag gc.get_objects at line 2 of a cell of your notebook"),
    ("import sys\ng = getattr(sys, '_get' + 'frame')\ng()", "flag sys._getframe at line 3"),
    ("import inspect\ninspect.stack()", "flag sys._getframe at line 2"),
    ("import logging\nlogging.currentframe()", "flag sys._getframe at line 2"),
    ("try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    getattr(e.__traceback__, 'tb_' + 'frame')",
     "flag object.__getattr__ (tb_frame) at line 4"),
    ("import traceback\ntry:\n    1 / 0\nexcept ZeroDivisionError as e:\n    list(traceback.walk_tb(e.__traceback__))",
     "flag object.__getattr__ (tb_frame) at line 5"),
    ("import ctypes\nctypes.pythonapi.PyEval_GetFrame", "flag ctypes.dlsym at line 2"),
    ("import marshal\nmarshal.loads(marshal.dumps(1))", "flag marshal.loads at line 2"),
    ("import pickle\npickle.loads(pickle.dumps(ValueError()))", "flag pickle.find_class at line 2"),
    ("def f(): pass\nf.__code__ = (lambda: 1).__code__", "flag object.__getattr__ (__code__) at line 2"),
    ("import types\ntypes.FunctionType((lambda: 1).__code__.replace(), {})", "flag object.__getattr__ (__code__)"),
    ("import sys\nsys.settrace(None)", "flag sys.settrace at line 2"),
    ("__import__('autograder.judge.outputs')", "flag import (autograder.judge.outputs) at line 1"),
])
def test_each_route_into_the_runner_is_flagged_at_its_line(cell, event):
    lines = hook_lines(cell)
    assert any(line.startswith(event) for line in lines), lines


@pytest.mark.parametrize("cell, changed", [
    ("from autograder.sandbox import audit\nsetattr(audit, 'MAX_' + 'FLAGS', 0)", "autograder.sandbox.audit.MAX_FLAGS"),
    ("import builtins\nbuiltins.len = lambda x: 99", "builtins.len"),
    ("import torch\ntorch.equal = lambda a, b: True", "torch.equal"),
    ("import torch\ntorch.Tensor.data_ptr = lambda self: 0", "torch.Tensor.data_ptr"),
    ("from utils import checks\nvars(checks)['assert_close'] = print", "utils.checks.assert_close"),
])
def test_writes_into_modules_and_classes_show_in_the_check(cell, changed):
    preload = "import torch, numpy, utils.checks, autograder.sandbox.kernel_agent\n"
    lines = _checked(preload, cell)
    assert lines[-1].startswith("changed n1 ") and changed in lines[-1], lines


def _checked(preload: str, cell: str) -> list[str]:
    """The lines for ``cell`` with ``preload`` imported before the hook's record is taken."""
    script = RUN.replace("from autograder.sandbox import audit", preload + "from autograder.sandbox import audit")
    completed = subprocess.run([sys.executable, "-c", script, cell], capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr[-2000:]
    return completed.stdout.splitlines()


def test_the_hook_kills_its_process_when_its_pipe_is_replaced():
    check = 'threading.Thread(target=sys.audit, args=(audit.CHECK_EVENT, "n1")).run()'
    script = RUN.replace(check, f'os.dup2(os.open(os.devnull, os.O_WRONLY), write)\n{check}\nprint("still here")')
    completed = subprocess.run([sys.executable, "-c", script, "pass"], capture_output=True, text=True, timeout=120)
    assert completed.returncode == -9 and "still here" not in completed.stdout


def _pipe_with(data: bytes, close: bool = True) -> int:
    read, write = os.pipe()
    os.write(write, data)
    if close:
        os.close(write)
    os.set_blocking(read, False)
    return read


@pytest.mark.parametrize("data, nonce, problem", [
    (b"ok n1\n", "n1", ""),
    (b"ok n1\nok n1\n", "n1", ""),
    (b"ok n0\n", "n1", "the grader's check in your process did not answer"),
    (b"flag gc.get_objects at line 2 of a cell of your notebook\nok n1\n", "n1",
     "your code used gc.get_objects at line 2 of a cell of your notebook"),
    (b"ok n1\nchanged n1 torch.equal\n", "n1", "your code changed the grader's code in your process: torch.equal"),
    (b"ok n1\nhello\n", "n1", "something other than the grader wrote on the grader's channel in your process"),
])
def test_the_judge_believes_a_call_only_with_its_ok_and_nothing_else(data, nonce, problem):
    fd = _pipe_with(data, close=False)
    try:
        assert AuditPipe().check(fd, nonce) == problem
    finally:
        os.close(fd)


def test_an_ended_pipe_counts_only_while_the_runner_lives():
    fd = _pipe_with(b"ok n1\n")
    pipe = AuditPipe()
    assert pipe.check(fd, "n1") == "the grader's channel in your process was closed"
    os.close(fd)
    fd = _pipe_with(b"")
    quiet = AuditPipe()
    quiet.read(fd, ended_counts=False)
    os.close(fd)
    assert quiet.problem == ""


def test_bytecode_from_outside_the_installation_is_flagged_whoever_loads_it(tmp_path):
    """A sourceless ``.pyc`` carries the file name it was compiled with (a library's, if it likes), so its
    code would pass for the library's: the import machinery opening it is flagged."""
    import py_compile

    source = tmp_path / "helper.py"
    source.write_text("import gc\nX = len(gc.get_objects())\n")
    py_compile.compile(str(source), cfile=str(tmp_path / "helper.pyc"), dfile=textwrap.__file__)
    source.unlink()
    lines = hook_lines(f"import sys\nsys.path.insert(0, {str(tmp_path)!r})\nimport helper")
    assert lines[0] == "flag compiled code loaded from helper.pyc", lines


def test_the_submissions_compiled_files_are_not_staged(tmp_path):
    from autograder.sandbox.confinement import copy_submission_files

    (tmp_path / "src" / "__pycache__").mkdir(parents=True)
    (tmp_path / "src" / "helper.py").write_text("X = 1\n")
    (tmp_path / "src" / "helper.pyc").write_bytes(b"\x00")
    (tmp_path / "src" / "__pycache__" / "helper.cpython-311.pyc").write_bytes(b"\x00")
    (tmp_path / "work").mkdir()
    copy_submission_files(tmp_path / "src", tmp_path / "work")
    assert sorted(p.name for p in (tmp_path / "work").rglob("*")) == ["helper.py"]


def test_a_check_raised_by_student_code_is_not_an_answer():
    lines = hook_lines("import sys\nsys.audit('course.check', 'n1')")
    assert lines[0] == "changed n1 course.check raised at line 2 of a cell of your notebook", lines
    assert lines[1] == "ok n1", "the runner's own check still answers"
