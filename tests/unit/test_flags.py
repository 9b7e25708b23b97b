"""``autograder.batch.flags.flags_for``: answer code that reaches for the grading machinery is flagged for a
person to read, ordinary answers are not, and code that cannot be scanned says so instead of failing."""

from __future__ import annotations

import pytest

from autograder.batch import flags
from autograder.batch.flags import flags_for

ORDINARY = '''\
import math
import torch
import torch.nn.functional as F
from utils import checks


def cross_entropy(logits, targets):
    log_probs = F.log_softmax(logits, dim=-1)
    total = 0.0
    total += -log_probs[torch.arange(len(targets)), targets].mean()
    cache = {}
    cache["x"] = math.pi
    del cache["x"]
    return total
'''


def test_an_ordinary_answer_is_not_flagged():
    assert flags_for(ORDINARY) == []


@pytest.mark.parametrize("source, flag", [
    # suspicious names, used or imported
    ("import builtins", "uses builtins"),
    ("import ctypes.util", "uses ctypes"),
    ("from gc import get_objects", "uses gc"),
    ("setattr(a, 'b', 1)", "calls setattr"),
    ("exec('x = 1')", "calls exec"),
    ("get_ipython()", "uses get_ipython"),
    # suspicious attributes
    ("import sys\nsys.modules.clear()", "uses sys.modules"),
    ("import sys as s\ns.modules['torch'] = None", "uses sys.modules"),
    ("from sys import modules", "uses sys.modules"),
    ("importlib.import_module('sys').modules.pop('torch')", "uses sys.modules"),
    ("sys.settrace(None)", "installs a trace hook"),
    ("f = sys._getframe(1)", "walks stack frames"),
    ("f.__code__ = g.__code__", "rewrites code objects"),
    ("ip.input_transformers_post.append(t)", "installs input transformers"),
    # rebinding a module's conventional name, or assigning an attribute of a module
    ("torch = None", "rebinds the name torch"),
    ("F: object = None", "rebinds the name F"),
    ("del np", "rebinds the name np"),
    ("torch.allclose = lambda *a, **k: True", "rebinds torch.allclose"),
    ("checks.assert_close.x = 1", "rebinds checks.assert_close.x"),
    ("import mylib as m\nm.value = 3", "rebinds m.value"),
    ("import a.b\na.b.c = 1", "rebinds a.b.c"),
    ("math.pi += 1", "rebinds math.pi"),
    # methods a result object would need to pretend
    ("class R:\n    def __eq__(self, other):\n        return True", "defines __eq__"),
    ("def __torch_function__(cls, *args):\n    pass", "defines __torch_function__"),
])
def test_each_kind_of_reach_is_flagged(source, flag):
    assert flags_for(source) == [flag]


def test_flags_are_sorted_and_each_given_once():
    source = "import gc\nimport ctypes\ngc.get_objects()\ngc.get_objects()\ntorch = 1\ntorch = 2"
    assert flags_for(source) == sorted({"uses gc", "uses ctypes", "walks the garbage collector", "rebinds the name torch"})


def test_attributes_of_objects_that_are_not_modules_may_be_assigned():
    assert flags_for("import torch\nmodel = torch.nn.Linear(2, 2)\nmodel.weight = None\nself.x = 1") == []


def test_pytorch_modules_method_is_not_sys_modules():
    # nn.Module.modules() walks a model's submodules: ordinary in an answer (notebook 09's own GPT cell uses it).
    source = "for m in self.attn.modules():\n    pass\nlayers = list(model.modules())\nnn.Sequential().modules()"
    assert flags_for(source) == []


def test_code_that_cannot_be_scanned():
    assert flags_for("def f(:\n") == []   # a syntax error is the student's error, reported elsewhere
    assert flags_for("x = " + "-" * 50_000 + "1") == ["code the grader could not parse"]   # nested too deeply
    long = "x = 1\n" * (flags.MAX_SCANNED_CHARS // 6 + 1)
    assert flags_for(long) == [f"code cell too long to scan ({len(long) // 1000} kB)"]
