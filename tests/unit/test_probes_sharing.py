"""``utils.probes.traced_call`` sees a result that shares memory with an argument, tensor or NumPy array
(a test that asks "are these new tensors?" must be able to fail), and ``arguments_after_calls`` an argument
that a constructed object kept and changed later, in a method."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from utils import probes


@pytest.mark.parametrize("make_argument", [
    lambda: np.arange(20, dtype=np.int64),
    lambda: np.arange(40, dtype=np.int64)[::2],                       # a strided view
    lambda: np.arange(20, dtype=np.int64).reshape(4, 5)[:, 1:],       # a 2-D slice
])
def test_a_view_of_a_numpy_argument_is_seen(make_argument):
    data = make_argument()
    window = probes.traced_call(lambda a: torch.from_numpy(a.reshape(-1)[2:5]) if a.ndim == 1 else torch.from_numpy(a[1]), data)
    assert window.shares_memory
    copied = probes.traced_call(lambda a: torch.from_numpy(np.array(a.reshape(-1)[2:5], copy=True)), data)
    assert not copied.shares_memory


def test_tensor_views_are_seen_and_copies_are_not():
    x = torch.arange(6.0)
    assert probes.traced_call(lambda t: t[1:3], x).shares_memory
    assert not probes.traced_call(lambda t: t[1:3].clone(), x).shares_memory
    assert not probes.traced_call(lambda a: torch.tensor(a[1:3]), np.arange(6)).shares_memory


def test_repeated_calls_sees_a_cache_and_slices_of_one_buffer_but_not_new_tensors():
    import functools

    cached = functools.lru_cache(maxsize=None)(lambda n: torch.ones(n, n, dtype=torch.bool).tril())
    calls = probes.repeated_calls(cached, (3,), (3,))
    assert calls.same_object and calls.shares_memory
    table = torch.ones(64, 64, dtype=torch.bool).tril()
    calls = probes.repeated_calls(lambda n: table[:n, :n], (3,), (5,))
    assert calls.shares_memory and not calls.same_object
    calls = probes.repeated_calls(lambda n: torch.ones(n, n, dtype=torch.bool).tril(), (3,), (3,), (5,))
    assert not calls.same_object and not calls.shares_memory
    assert [tuple(r.shape) for r in calls.results] == [(3, 3), (3, 3), (5, 5)]
    assert not probes.repeated_calls(lambda n: n + 1, (1,), (1,)).same_object    # equal numbers are not a cache


def test_arguments_after_calls_sees_an_argument_kept_and_changed_by_a_later_method():
    class KeepsIt:
        def __init__(self, words):
            self.words = words

        def grow(self, key):
            self.words[key] = 1

    class CopiesIt(KeepsIt):
        def __init__(self, words):
            super().__init__(dict(words))

    words = {"a": 0}
    assert probes.arguments_after_calls(KeepsIt, (words,), [("grow", ("b",)), ("grow", ("c",))]) == (
        {"a": 0, "b": 1, "c": 1},)
    assert words == {"a": 0, "b": 1, "c": 1}      # in the student's own kernel: the caller's own dict
    assert probes.arguments_after_calls(CopiesIt, ({"a": 0},), [("grow", ("b",))]) == ({"a": 0},)
    assert probes.arguments_after_calls(CopiesIt, ({"a": 0},), []) == ({"a": 0},)
