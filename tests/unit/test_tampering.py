"""``autograder.batch.tampering``: the routes by which code in the student's process could replace the runner's
change report are found in the submitted source (issue 28, item 3), and ordinary answers are left alone;
the grader hands the findings to the judge (``preparation._tampering``), which then fails every call whose
inputs-unchanged check rests on that report."""

from __future__ import annotations

import pytest

from autograder.batch.preparation import _tampering, flag_sources
from autograder.judge.session import Session
from autograder.sandbox.limits import Limits
from autograder.batch.tampering import TAMPERING, tampering_for

ORDINARY = '''\
import math
import sys
import torch
import torch.nn as nn
import torch.nn.functional as F
from utils import checks, probes

torch.backends.cudnn.deterministic = True
IN_COLAB = "google.colab" in sys.modules


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)
        self.proj.weight.data.normal_(0, 0.02)

    def forward(self, x):
        return F.gelu(self.proj(x)) + math.sqrt(2.0) * 0

def generate(model, ids):
    model.eval()
    for m in model.modules():
        pass
    return getattr(F, "softmax")(model(ids), dim=-1)
'''


def test_ordinary_answers_reach_nothing():
    assert tampering_for(ORDINARY) == []
    assert tampering_for('def f(x):\n    """The autograder checks that x is left as it was."""\n    return x\n') == []
    assert tampering_for("%%time\nimport torch\nx = torch.ones(2)\n") == []


@pytest.mark.parametrize("source, reason", [
    ("import autograder.sandbox.kernel_agent as agent\n", "imports autograder.sandbox.kernel_agent"),
    ("from autograder import kernel_agent\n", "imports autograder"),
    ("import sys\nsys.modules['auto' + 'grader.kernel_agent']\n", "uses sys.modules"),
    ("import sys as s\nm = s.modules.get('x')\n", "uses sys.modules"),
    ("import sys\nsys.modules.update({})\n", "changes sys.modules"),
    ("from sys import modules\n", "imports sys.modules"),
    ("x = 'autograder'\n", "names 'autograder' in a string"),
    ("import sys\nm = sys.modules['autograder.sandbox.kernel_agent']\n", "names 'autograder.' in a string"),
    ("x = b'changed_arguments'\n", "names 'changed_arguments' in a string"),
    ("from utils import checks\nchecks.assert_close = None\n", "rebinds checks.assert_close"),
    ("import torch\ntorch.Tensor.__eq__ = None\n", "rebinds torch.Tensor.__eq__"),
    ("import base64\ndel base64.b64encode\n", "rebinds base64.b64encode"),
    ("import torch\nsetattr(torch, 'equal', None)\n", "calls setattr on torch"),
    ("import numpy as np\nvars(np)['array_equal'] = None\n", "reaches vars(np)"),
    ("from utils import probes\nprobes.__dict__.clear()\n", "reaches probes.__dict__"),
    ("f.__code__ = g.__code__\n", "reads __code__"),
    ("def f(x):\n    return f.__globals__\n", "reads __globals__"),
    ("import sys\nsys._getframe(1)\n", "reads _getframe"),
    ("from sys import _getframe\n", "imports sys._getframe"),
    ("import gc\ngc.get_objects()\n", "reads get_objects"),
    ("from gc import get_referrers\n", "imports gc.get_referrers"),
    ("import sys\nsys.settrace(None)\n", "reads settrace"),
    ("import ctypes\n", "imports ctypes"),
    ("exec(data)\n", "runs code the grader cannot read (exec)"),
    ("__import__('o' + 's')\n", "runs code the grader cannot read (__import__)"),
    ("import importlib\nimportlib.import_module(name)\n", "imports a module named at run time"),
    ("%time pass\nimport sys\nsys._getframe(0)\n", "reads _getframe"),   # behind a magic, as the runner runs it
])
def test_each_route_into_the_grader_is_found(source, reason):
    assert f"{TAMPERING}: {reason}" in tampering_for(source), tampering_for(source)


def test_code_the_grader_does_not_read_in_full_is_not_believed_either():
    long_cell = "x = '" + "a" * 200_000 + "'\n"
    assert _tampering(flag_sources(["import torch\n", long_cell])) == "code cell too long to scan (200 kB)"
    many = ["x = '" + "a" * 90_000 + "'\n"] * 12
    assert _tampering(flag_sources(many)) == "code too long to scan in full"
    assert _tampering(flag_sources(["x = " + "-" * 50_000 + "1"])) == "code the grader could not parse"
    assert _tampering(flag_sources([ORDINARY, "import gc\ngc.collect()\n"])) == ""


def test_the_judge_fails_a_checked_call_without_asking_the_runner():
    session = Session.__new__(Session)
    session.limits, session.call_limit, session.trouble = Limits(), None, None
    session.untrusted_reports = f"{TAMPERING}: imports autograder.sandbox.kernel_agent"
    with pytest.raises(Exception) as raised:
        session.ask({"op": "call"}, "your double", sent=((), {}))
    assert type(raised.value).__name__ == "CheckFailure"
    assert str(raised.value).startswith(
        "double: the grader cannot check that your code leaves its inputs unchanged (reaches into the grader's "
        "machinery: imports autograder.sandbox.kernel_agent), so every check of unchanged inputs fails for this notebook.")
