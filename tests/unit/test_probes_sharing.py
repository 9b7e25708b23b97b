"""``utils.probes.traced_call`` sees a result that shares memory with an argument, tensor or NumPy array
(a test that asks "are these new tensors?" must be able to fail)."""

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
