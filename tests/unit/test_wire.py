"""``autograder.wire``, the encoding of values between the judge and the student's process.

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

from autograder import wire

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
scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), floats, st.text(max_size=20),
                    st.binary(max_size=20), st.sampled_from([getattr(torch, n) for n in TENSOR_DTYPES]), tensors(), arrays)
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
    assert same(wire.decode(json.loads(message)), value)


def test_generators_travel_with_their_state():
    g = torch.Generator().manual_seed(5)
    torch.rand(3, generator=g)
    copy = wire.decode(json.loads(json.dumps(wire.encode(g))))
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
]


@pytest.mark.parametrize("message", MALFORMED, ids=[str(i) for i in range(len(MALFORMED))])
def test_malformed_values_are_refused(message):
    with pytest.raises(wire.WireError):
        wire.decode(message)


def test_depth_and_length_limits():
    deep = []
    for _ in range(wire.MAX_DEPTH + 2):
        deep = [deep]
    with pytest.raises(wire.WireError, match="deeply"):
        wire.decode(deep)
    with pytest.raises(wire.WireError, match="deeply"):
        wire.encode(deep)
    with pytest.raises(wire.WireError):
        wire.decode(list(range(wire.MAX_ITEMS + 1)))
