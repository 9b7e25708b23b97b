"""``autograder.judge.wire``, the encoding of values between the judge and the student's process.

A round trip (encode, JSON, decode) must give back an equal value of the same type for nested values
built from every kind the protocol allows (hypothesis draws them), and ``decode`` must refuse every
malformed message with ``WireError`` (never another exception, never a value built from it).
"""

from __future__ import annotations

import json
import math
import os
import tempfile

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autograder.judge import wire, wire_decode

os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", os.path.join(tempfile.gettempdir(), "hypothesis-course"))

TENSOR_DTYPES = sorted(wire._TENSOR_DTYPES)


@st.composite
def tensors(draw):
    dtype = getattr(torch, draw(st.sampled_from(TENSOR_DTYPES)))
    shape = draw(st.lists(st.integers(0, 3), max_size=3))
    seed = draw(st.integers(0, 2**31 - 1))
    g = torch.Generator().manual_seed(seed)
    base = torch.randn(tuple(shape), generator=g, dtype=torch.float64) * 50
    if dtype == torch.bool:
        tensor = base > 0
    elif dtype.is_complex:
        tensor = torch.complex(base, -base).to(dtype)
    elif dtype.is_floating_point:
        tensor = base.to(dtype)
        if tensor.numel() and draw(st.booleans()):
            tensor.view(-1)[0] = draw(st.sampled_from([math.inf, -math.inf, math.nan, -0.0]))
    else:
        low = 0 if dtype == torch.uint8 else -100
        tensor = base.clamp(low, 100).to(dtype)
    if dtype.is_floating_point and draw(st.booleans()):
        tensor.requires_grad_(True)
    return tensor


arrays = st.builds(lambda dtype, n: np.arange(n).astype(dtype),
                   st.sampled_from(["<f8", "<f4", "<i8", "<i4", "|u1", "|b1", "<c16"]), st.integers(0, 5))
floats = st.floats(allow_nan=True, allow_infinity=True)
NUMPY_SCALAR_TYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint64, np.float16, np.float32, np.float64,
                      np.complex64, np.complex128, np.bool_]
numpy_scalars = st.builds(lambda kind, x: kind(x) if kind is not np.bool_ else kind(x > 0),
                          st.sampled_from(NUMPY_SCALAR_TYPES), st.integers(0, 100))
scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), floats, st.text(max_size=20),
                    st.binary(max_size=20), st.sampled_from([getattr(torch, n) for n in TENSOR_DTYPES]), tensors(), arrays,
                    numpy_scalars)
keys = st.one_of(st.text(max_size=5), st.integers(-5, 5), st.booleans(), st.none(), st.tuples(st.integers(0, 3), st.text(max_size=3)))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.tuples(inner, inner), st.dictionaries(keys, inner, max_size=4)), max_leaves=12)


def same(a, b) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, torch.Tensor):
        return (a.dtype == b.dtype and a.shape == b.shape and a.requires_grad == b.requires_grad
                and torch.equal(torch.nan_to_num(a.detach().view(torch.int16) if a.dtype == torch.bfloat16 else a.detach(), nan=7.0),
                                torch.nan_to_num(b.detach().view(torch.int16) if b.dtype == torch.bfloat16 else b.detach(), nan=7.0))
                and bool((a.detach().isnan() == b.detach().isnan()).all() if a.is_floating_point() else True))
    if isinstance(a, np.generic):
        return a.dtype == b.dtype and a.tobytes() == b.tobytes()
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return a == b


@settings(derandomize=True, max_examples=200, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(values)
def test_round_trip_gives_back_an_equal_value_of_the_same_type(value):
    message = json.dumps(wire.encode(value), allow_nan=False)
    assert same(wire_decode.decode(json.loads(message)), value)


def test_generators_travel_with_their_state():
    g = torch.Generator().manual_seed(5)
    torch.rand(3, generator=g)
    copy = wire_decode.decode(json.loads(json.dumps(wire.encode(g))))
    assert torch.equal(torch.rand(4, generator=copy), torch.rand(4, generator=g))


def test_objects_without_a_value_become_references_or_are_refused():
    module = torch.nn.Linear(2, 2)
    assert wire.encode(module, remember=lambda obj: 7) == {"$": "ref", "id": 7}
    with pytest.raises(wire.WireError):
        wire.encode(module)
    with pytest.raises(wire.WireError):
        wire.encode(np.array(["a"], dtype=object))


MALFORMED = [
    {"$": "pickle", "data": ""}, {"$": "float", "v": "1e999"}, {"$": "float", "v": None},
    {"$": "tuple", "items": "ab"}, {"$": "dict", "items": [[1]]}, {"$": "dict", "items": [[[1], 2]]},
    {"$": "bytes", "data": "***"}, {"$": "bytes", "data": 5},
    {"$": "tensor", "dtype": "float32", "shape": [2], "data": "AAAA"},              # 3 bytes for 8
    {"$": "tensor", "dtype": "object", "shape": [1], "data": ""},
    {"$": "tensor", "dtype": "float32", "shape": [-1], "data": ""},
    {"$": "tensor", "dtype": "float32", "shape": [1 << 20, 1 << 20], "data": ""},  # too large
    {"$": "tensor", "dtype": "float32", "shape": [1] * 17, "data": "AAAAAA=="},
    {"$": "tensor", "dtype": "float32", "shape": "2", "data": ""},
    {"$": "ndarray", "dtype": "|O", "shape": [1], "data": "AAAAAAAAAAA="},
    {"$": "ndarray", "dtype": "not a dtype", "shape": [1], "data": ""},
    {"$": "ndarray", "dtype": "<f8", "shape": [2], "data": "AAAAAAAAAAA="},
    {"$": "dtype", "name": "float128"}, {"$": "dtype", "name": "Tensor"},
    {"$": "generator", "state": "AAAA"},
    {"$": "ref", "id": "7"}, {"$": "ref", "id": 7},                                   # no resolver on this side
    {"$": "global", "name": 3}, {"$": "global", "name": "os"},                      # no resolver
    {"no tag": 1}, 3 + 4j,
    {"$": "npscalar", "dtype": "<i8", "data": "AAAA"},                              # 3 bytes for 8
    {"$": "npscalar", "dtype": "|O", "data": "AAAAAAAAAAA="},
    {"$": "npscalar", "dtype": "<U1", "data": "AAAAAA=="},
    {"$": "npscalar", "dtype": ["<i8"], "data": ""},
    {"$": "tensor", "dtype": "float32", "shape": [1], "data": "AAAAAA==", "device": "cuda:0; import os"},
    {"$": "tensor", "dtype": "float32", "shape": [1], "data": "AAAAAA==", "device": 0},
    {"$": "tensor", "dtype": "float32", "shape": [1, 1], "data": "AAAAAA==", "order": [0, 0]},
    {"$": "tensor", "dtype": "float32", "shape": [1, 1], "data": "AAAAAA==", "order": [1]},
    {"$": "tensor", "dtype": "float32", "shape": [1, 1], "data": "AAAAAA==", "order": "10"},
    {"$": "tensor", "dtype": "float32", "shape": [1, 1], "data": "AAAAAA==", "order": [1.0, 0.0]},
]


@pytest.mark.parametrize("message", MALFORMED, ids=[str(i) for i in range(len(MALFORMED))])
def test_malformed_values_are_refused(message):
    with pytest.raises(wire.WireError):
        wire_decode.decode(message)


def test_depth_and_length_limits():
    deep = []
    for _ in range(wire.MAX_DEPTH + 2):
        deep = [deep]
    with pytest.raises(wire.WireError, match="deeply"):
        wire_decode.decode(deep)
    with pytest.raises(wire.WireError, match="deeply"):
        wire.encode(deep)
    with pytest.raises(wire.WireError):
        wire_decode.decode(list(range(wire.MAX_ITEMS + 1)))


# ----------------------------------------------------------------------------------------------
# Types arrive as the student's code returned them: a value returned by a function in the student's
# process (``kernel_agent.Agent``), sent as JSON, decoded the way the judge decodes a reply.


def returned_to_the_judge(value):
    """``value`` as a test cell in the judge receives it when the student's function returns it."""
    from autograder.sandbox.kernel_agent import Agent

    reply = Agent({"f": lambda: value}).handle({"op": "call", "target": {"name": "f"}, "args": [],
                                                "kwargs": {"$": "dict", "items": []}})
    assert reply["ok"] is True, reply
    return wire_decode.decode(json.loads(json.dumps(reply["value"], allow_nan=False)), lambda ident: wire.Ref(ident))


@pytest.mark.parametrize("value", [np.int64(7), np.int32(-3), np.uint8(255), np.float32(0.1), np.float64(2.5),
                                   np.float16(1.5), np.complex64(1 - 2j), np.bool_(True), np.bool_(False),
                                   np.float64("nan"), np.float32("-inf")],
                         ids=lambda v: f"{type(v).__name__}({v})")
def test_a_numpy_scalar_arrives_as_the_same_numpy_type(value):
    got = returned_to_the_judge(value)
    assert type(got) is type(value) and got.dtype == value.dtype and got.tobytes() == value.tobytes()


@pytest.mark.parametrize("value", [True, False, 0, 1, -2**80, 2.0, -0.0, 0.1, math.inf, math.nan],
                         ids=repr)
def test_a_python_number_keeps_its_type_and_a_bool_stays_a_bool(value):
    got = returned_to_the_judge(value)
    assert type(got) is type(value)
    assert same(got, value)


@pytest.mark.parametrize("dtype", ["<f8", "<f4", ">f8", "<f2", "<i8", ">i4", "|u1", "|b1", "<c8"])
def test_an_array_keeps_its_dtype_and_shape(dtype):
    value = (np.arange(6).reshape(2, 3) % 2).astype(dtype)
    got = returned_to_the_judge(value)
    assert type(got) is np.ndarray and got.dtype == value.dtype and got.shape == (2, 3)
    assert np.array_equal(got, value)


@pytest.mark.parametrize("dtype", TENSOR_DTYPES)
def test_a_tensor_keeps_its_dtype_and_requires_grad(dtype):
    value = torch.ones(2, 2, dtype=getattr(torch, dtype))
    if value.is_floating_point():
        value = (value * 3).requires_grad_(True) * 1   # not a leaf: a result computed with gradients on
    got = returned_to_the_judge(value)
    assert type(got) is torch.Tensor and got.dtype == value.dtype and got.requires_grad == value.requires_grad
    assert wire.device_of(got) == "cpu" and not hasattr(got, wire.DEVICE_ATTRIBUTE)


def test_a_parameter_stays_a_parameter_and_other_tensor_subclasses_arrive_as_plain_tensors():
    parameter = torch.nn.Parameter(torch.ones(3))
    got = returned_to_the_judge(parameter)
    assert type(got) is torch.nn.Parameter and got.requires_grad
    frozen = returned_to_the_judge(torch.nn.Parameter(torch.ones(3), requires_grad=False))
    assert type(frozen) is torch.nn.Parameter and not frozen.requires_grad

    class Tagged(torch.Tensor):
        pass

    assert type(returned_to_the_judge(torch.ones(2).as_subclass(Tagged))) is torch.Tensor


def a_message_from(device: str) -> dict:
    """What the student's process sends for a tensor that lives on ``device`` (this machine may have none)."""
    encoded = wire.encode(torch.arange(3.0))
    return {**encoded, "device": device}


def test_a_tensor_from_another_device_is_decoded_on_the_cpu_with_its_device_recorded():
    got = wire_decode.decode(a_message_from("cuda:0"))
    assert got.device.type == "cpu" and wire.device_of(got) == "cuda:0"
    assert torch.equal(got, torch.arange(3.0))
    # Sent on (to another of the student's functions), it still says where it came from.
    assert wire.encode(got)["device"] == "cuda:0"


def test_the_students_side_puts_a_tensor_back_on_its_device_when_it_has_that_device():
    sent = [a_message_from("cuda:0"), {"$": "tuple", "items": [a_message_from("meta")]}]
    got = wire_decode.decode(sent, restore_devices=True)
    if torch.cuda.is_available():
        assert got[0].device.type == "cuda"
    else:
        assert got[0].device.type == "cpu" and wire.device_of(got[0]) == "cuda:0"
    assert got[1][0].device.type == "meta"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_cuda_tensor_returned_by_the_student_is_recorded_as_cuda_in_the_judge():
    got = returned_to_the_judge(torch.ones(2, device="cuda"))
    assert got.device.type == "cpu" and wire.device_of(got).startswith("cuda")


def test_the_checks_read_the_device_attribute_the_wire_writes():
    from utils import checks

    assert checks._WIRE_DEVICE == wire.DEVICE_ATTRIBUTE


# The checks give the same verdict on a value in the student's kernel and on what the judge receives.
CHECKS_ON_RESULTS = {
    "assert_equal int": lambda c, x: c.assert_equal(x, 3, name="x"),
    "assert_equal float": lambda c, x: c.assert_equal(x, 3.0, name="x"),
    "assert_equal bool": lambda c, x: c.assert_equal(x, True, name="x"),
    "assert_equal list": lambda c, x: c.assert_equal(x, [3], name="x"),
    "assert_close float": lambda c, x: c.assert_close(x, 3.0, name="x"),
    "assert_close tensor": lambda c, x: c.assert_close(x, torch.tensor([3.0]), name="x"),
    "assert_close array": lambda c, x: c.assert_close(x, np.array([3.0]), name="x"),
    "assert_tensor float32": lambda c, x: c.assert_tensor(x, name="x", dtype=torch.float32, shape=(1,)),
    "assert_tensor integer": lambda c, x: c.assert_tensor(x, name="x", dtype="integer"),
    "assert_tensor on cpu": lambda c, x: c.assert_tensor(x, name="x", device="cpu"),
    "assert_true isinstance int": lambda c, x: c.assert_true(isinstance(x, int), name="x", problem="not an int"),
    "assert_true type is float": lambda c, x: c.assert_true(type(x) is float, name="x", problem="not a float"),
    "assert_true x": lambda c, x: c.assert_true(x, name="x", problem="false"),
}
RESULTS = [3, 3.0, True, np.int64(3), np.float64(3.0), np.float32(3.0), np.bool_(True), [np.int64(3)], [3],
           torch.tensor([3.0]), torch.tensor([3]), torch.tensor(3.0, dtype=torch.float64), np.array([3.0]),
           np.array([3], dtype=np.int32), torch.nn.Parameter(torch.tensor([3.0]))]


def verdict(check, value) -> str:
    from utils import checks

    try:
        check(checks, value)
    except AssertionError:
        return "fails"
    except TypeError:
        return "refuses"
    return "passes"


@pytest.mark.parametrize("value", RESULTS, ids=lambda v: f"{type(v).__name__}:{v!r}"[:40])
def test_every_check_gives_the_same_verdict_in_the_kernel_and_in_the_judge(value):
    judged = returned_to_the_judge(value)
    differ = [name for name, check in CHECKS_ON_RESULTS.items() if verdict(check, value) != verdict(check, judged)]
    assert not differ, f"{type(value).__name__} {value!r}: verdicts differ for {differ}"


def test_a_device_check_fails_in_the_judge_for_a_tensor_that_was_on_another_device():
    from utils import checks

    got = wire_decode.decode(a_message_from("cuda:0"))
    with pytest.raises(AssertionError, match="on cuda:0"):
        checks.assert_tensor(got, name="x", device="cpu")
    with pytest.raises(AssertionError, match="on cuda:0"):
        checks.assert_close(got, torch.arange(3.0), name="x")
    checks.assert_tensor(got, name="x", device="cuda")


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int64", "bool"])
def test_a_transposed_tensor_arrives_transposed_and_a_sliced_one_contiguous(dtype):
    # The student's kernel and the judge see the same layout for a transpose (split_heads' output fed to
    # merge_heads: code that needs .contiguous() must fail in both), and the same values for anything else.
    base = torch.arange(24).reshape(2, 3, 4).to(getattr(torch, dtype))
    for view in [base.transpose(1, 2), base.permute(2, 0, 1), base.transpose(0, 2)]:
        got = wire_decode.decode(json.loads(json.dumps(wire.encode(view))))
        assert got.shape == view.shape and torch.equal(got, view) and got.dtype == view.dtype
        assert got.stride() == view.stride() and not got.is_contiguous()
    gapped = base.transpose(0, 2)[:, :1]
    got = wire_decode.decode(json.loads(json.dumps(wire.encode(gapped))))
    assert torch.equal(got, gapped) and got.is_contiguous()
    assert wire.memory_order(base) is None and wire.memory_order(gapped) is None


def test_a_transposed_tensor_keeps_requires_grad_and_parameter_type():
    value = torch.nn.Parameter(torch.randn(3, 4).t())
    got = wire_decode.decode(json.loads(json.dumps(wire.encode(value))))
    assert type(got) is torch.nn.Parameter and got.requires_grad and got.stride() == value.stride()
    value = torch.randn(3, 4, requires_grad=True).t()
    got = wire_decode.decode(json.loads(json.dumps(wire.encode(value))))
    assert got.requires_grad and got.is_leaf and torch.equal(got.detach(), value.detach())
