"""Issue 47, part 2: forged runner reports that the grader's reading of the source does not see earn
nothing, because the runner's audit hook (``autograder/sandbox/audit.py``) does.

Each forgery below is an answer to the fixture course's ``double`` that writes into its argument (the plain
wrong answer: 0 of 3 points, "modified its argument `x` in place") and replaces the runner's report of that
change by a route that ``autograder.batch.tampering`` does not flag (checked first): the call then looked
clean to a runner without the hook, and earned the 3 points. With the hook, each scores what the plain
wrong answer scores, and its feedback says why. An honest answer whose own cells use ``warnings``,
``logging``, ``typing``, ``dataclasses``, a ``tqdm`` bar and a matplotlib figure is not flagged.
"""

from __future__ import annotations

import marshal
import pickle

import pytest

from autograder.batch.tampering import tampering_for

WRONG = "    x.mul_(2)\n    return x\n"
# Finds the runner's agent (the object answering the judge) by walking from a frame of the call, and makes
# its ``call`` report nothing: ``f`` is a frame inside the call.
WALK = '''
def _silence(f):
    while f is not None:
        agent = getattr(f, "f_" + "locals").get("self")
        if type(agent).__name__ == "Agent" and "call" not in vars(agent):
            real = agent.call
            agent.call = lambda target, request: (real(target, dict(request, may_mutate=True))[0], {})
        f = getattr(f, "f_" + "back")
'''
FROM_HERE = "import sys\n_silence(sys._get" + "frame())\n"
WALK_CODE = compile(WALK + FROM_HERE, "<forged>", "exec")


class _Exec:
    """Pickles as a call of ``exec`` on the walk."""

    def __reduce__(self):
        return exec, (WALK + FROM_HERE,)

FORGERIES = {
    "frame_through_an_alias": "import torch, sys\ngrab = getattr(sys, '_get' + 'frame')\n" + WALK
    + "def double(x):\n    _silence(grab())\n" + WRONG,
    "frame_through_a_traceback": "import torch\n" + WALK + "def double(x):\n    try:\n        raise ValueError\n"
    "    except ValueError as error:\n        _silence(getattr(error.__traceback__, 'tb_' + 'frame'))\n" + WRONG,
    "garbage_collector": "import torch, gc as g\ndef double(x):\n    for o in getattr(g, 'get_' + 'objects')():\n"
    "        if type(o).__name__ == 'Agent' and 'call' not in vars(o):\n            real = o.call\n"
    "            o.call = lambda t, r, real=real: (real(t, dict(r, may_mutate=True))[0], {})\n" + WRONG,
    "ctypes": "import torch\nc = print.__self__.__dict__['__imp' + 'ort__']('ct' + 'ypes')\n" + WALK
    + "def double(x):\n    get = c.pythonapi.PyEval_GetFrame\n    get.restype = c.c_void_p\n"
    "    _silence(c.cast(get(), c.py_object).value)\n" + WRONG,
    "marshal_turned_into_code": "import torch, marshal, types\ndef double(x):\n"
    f"    types.FunctionType(marshal.loads({marshal.dumps(WALK_CODE)!r}), globals())()\n"
    + WRONG,
    "pickle_turned_into_code": f"import torch, pickle\ndef double(x):\n    pickle.loads({pickle.dumps(_Exec())!r})\n"
    + WRONG,
    "code_object_swapped": "import torch\nka = print.__self__.__dict__['__imp' + 'ort__']('auto' + 'grader.sandbox.kernel_' "
    "+ 'agent', fromlist=['x'])\nfor name in ('changed_' + 'arguments', 'returned_' + 'arguments'):\n"
    "    setattr(getattr(ka, name), '__co' + 'de__', getattr(lambda *a, **k: [], '__co' + 'de__'))\n"
    "def double(x):\n" + WRONG,
    "module_written_through_builtins_import": "import torch\nka = print.__self__.__dict__['__imp' + 'ort__']"
    "('auto' + 'grader.sandbox.kernel_' + 'agent', fromlist=['x'])\n"
    "for name in ('changed_' + 'arguments', 'returned_' + 'arguments'):\n    setattr(ka, name, lambda *a, **k: [])\n"
    "def double(x):\n" + WRONG,
    "class_found_through_subclasses": "import torch\nfor k in getattr(object, '__subclass' + 'es__')():\n"
    "    if k.__name__ == 'Agent':\n        real = k.call\n"
    "        k.call = lambda self, t, r, real=real: (real(self, t, dict(r, may_mutate=True))[0], {})\n"
    "def double(x):\n" + WRONG,
    "sys_modules_through_an_alias_and_vars": "import torch, sys\nmods = getattr(sys, 'mod' + 'ules')\n"
    "for name in list(mods):\n    if name.endswith('kernel_' + 'agent'):\n"
    "        for report in ('changed_' + 'arguments', 'returned_' + 'arguments'):\n"
    "            vars(mods[name])[report] = lambda *a, **k: []\ndef double(x):\n" + WRONG,
    # The argument written into keeps its bytes for the runner's comparison: a subclass answers detach()
    # with the values it had (the wire encodes what TensorBase.detach gives).
    "class_disguised_to_look_unchanged": """import torch
class Looks(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if getattr(func, '__name__', '') == 'detach' and args and type(args[0]) is Looks and hasattr(args[0], 'before'):
            return args[0].before
        return super().__torch_function__(func, types, args, kwargs or {})
def double(x):
    before = x.clone()
    x.mul_(2)
    result = x.clone()
    x.__class__ = Looks
    x.before = before
    return result
""",
}
HONEST = '''import torch, warnings, logging, typing, dataclasses
import tqdm
import matplotlib.pyplot as plt

T = typing.TypeVar("T")

class Pair(typing.NamedTuple):
    a: int
    b: int

@dataclasses.dataclass
class Settings:
    factor: float = 2.0

def double(x):
    logging.getLogger("double").info("doubling %s values", x.numel())
    if x.numel() > 10**9:
        warnings.warn("a big tensor")
    return x * Settings().factor
'''
HONEST_CELL = '''warnings.warn("a note from my own cell")
logging.getLogger("me").warning("and a log line")
for _ in tqdm.tqdm(range(5)):
    pass
plt.plot([1, 2, 3], [1, 4, 9]); plt.title("squares"); plt.show()
print(double(torch.ones(2)), Pair(1, 2))'''
# Silences the hook instead: closes its descriptor (named in the runner's first environment) or puts another
# file in its place. The judge then reads the end of its pipe (were another copy of it open, the hook would
# kill its own process at the next call it checks: tests/unit/test_audit_pipe.py).
CLOSES = ("import os, torch\nfd = [v for v in open('/proc/self/environ').read().split(chr(0)) if v.startswith("
          "'COURSE_AUDIT_FD=')][0].split('=')[1]\n")
FORGERIES["closes_the_hooks_descriptor"] = CLOSES + "os.close(int(fd))\ndef double(x):\n" + WRONG
FORGERIES["replaces_the_hooks_descriptor"] = (CLOSES + "os.dup2(os.open(os.devnull, os.O_WRONLY), int(fd))\n"
                                              "def double(x):\n" + WRONG)
# student -> (answer, own cell or None, expected score of 3, status)
STUDENTS = {"honest": (HONEST, HONEST_CELL, 3, "ok"),
            "plain_wrong": ("import torch\ndef double(x):\n" + WRONG, None, 0, "ok")}
STUDENTS.update({name: (code, None, 0, "ok") for name, code in FORGERIES.items()})


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_each_forgery_gets_past_the_static_reader(name):
    assert tampering_for(FORGERIES[name]) == [], "the forgery must need the audit hook to be caught"


@pytest.mark.slow
def test_forged_reports_earn_nothing_and_honest_libraries_keep_full_marks(tmp_path):
    from fixture_course import answer, grade_class, make_course
    from nbformat.v4 import new_code_cell

    root = tmp_path / "course"
    assignment = make_course(root)
    notebooks = {}
    for student, (code, own_cell, *_) in STUDENTS.items():
        notebooks[student] = answer(assignment, root, code)
        if own_cell:
            notebooks[student].cells.append(new_code_cell(own_cell))
    rows, out = grade_class(root, notebooks)
    scores = {student: (rows[student].score, rows[student].status) for student in STUDENTS}
    assert scores == {student: (score, status) for student, (_, _, score, status) in STUDENTS.items()}, scores
    for student in FORGERIES:
        page = (out / "feedback" / student / "01_fixture" / "fixture.html").read_text(encoding="utf-8")
        said = ("double: the grader cannot check that your code leaves its inputs unchanged ("
                + ("the grader's channel in your process was closed)" if "descriptor" in student else "your code"))
        assert said in page.replace("&#x27;", "'"), f"{student}: the feedback should say why"
    honest = (out / "feedback" / "honest" / "01_fixture" / "fixture.html").read_text(encoding="utf-8")
    assert "cannot check" not in honest and rows["honest"].flags == ""


# --------------------------------------------------------------------------------------------------
# A test's speed requirement (``probes.time_limit``) is CPU seconds counted by the runner's own timer
# (SIGPROF); the judge also counts the sandbox's CPU seconds from /proc, outside the sandbox.

TIMED_HIDDEN = '''# Hidden tests for double run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks, probes
with probes.time_limit(1, "double on a small tensor"):
    result = double(torch.arange(6.0))
checks.assert_close(result, torch.arange(6.0) * 2, name="double")
### END HIDDEN TESTS'''
BURN = "    import time\n    start = time.process_time()\n    while time.process_time() - start < 3:\n        pass\n"
SLOW = {"fast": ("import torch\ndef double(x):\n    return 2 * x\n", 3),
        "slow": ("import torch\ndef double(x):\n" + BURN + "    return 2 * x\n", 1),
        "slow_with_its_timer_silenced": ("import torch, signal\ndef double(x):\n"
                                         "    signal.signal(signal.SIGPROF, signal.SIG_IGN)\n" + BURN
                                         + "    return 2 * x\n", 1)}


def test_silencing_the_runners_timer_is_static_readers_blind_spot():
    assert tampering_for(SLOW["slow_with_its_timer_silenced"][0]) == []


@pytest.mark.slow
def test_a_timed_call_that_silences_the_runners_timer_still_fails_past_its_limit(tmp_path):
    from fixture_course import answer, grade_class, make_course

    root = tmp_path / "course"
    assignment = make_course(root, hidden=(TIMED_HIDDEN,))
    rows, out = grade_class(root, {student: answer(assignment, root, code) for student, (code, _) in SLOW.items()})
    assert {student: rows[student].score for student in SLOW} == {student: score for student, (_, score) in SLOW.items()}
    page = (out / "feedback" / "slow_with_its_timer_silenced" / "01_fixture" / "fixture.html").read_text(encoding="utf-8")
    assert "CPU seconds (counted by the grader, outside your process); the limit is 1 s" in page
