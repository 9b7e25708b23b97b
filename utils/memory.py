"""How much tensor memory a computation holds at its peak, measured by watching every PyTorch op.

``with PeakTensorMemory() as tracker: ...`` records, for every tensor created inside the block (on any
device), the bytes of its storage while it is alive; ``tracker.peak`` is the most held at once.
Views share their base's storage and are not counted twice; tensors that existed before the block
(the inputs) are not counted. So ``peak`` is the *extra* memory a computation needs, which is what
separates naive attention (a T x T score matrix) from tiled attention (a few tiles at a time).

It sees tensors made by PyTorch operators only (not NumPy arrays, not Python objects), and it slows
the computation down: use it to measure memory, never time.

``result_has_shared_elements(fn, *args)`` says whether a returned tensor has elements that are one memory
location (an ``expand()``ed view): a "new tensor" a caller cannot edit one part of; ``results_share_memory(fn,
*args)`` whether two returned tensors are views of one buffer, ``results_own_their_memory(fn, *args)`` whether
each is contiguous and alone in its memory; ``call_with_strided(fn, *args)`` calls ``fn`` on
tensors that are not contiguous (a layout the trip to the student's process does not keep).
"""

from __future__ import annotations

import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves


class PeakTensorMemory(TorchDispatchMode):
    """``with PeakTensorMemory() as m:`` ...; then ``m.peak`` (bytes) and ``m.live`` (still held)."""

    def __init__(self):
        super().__init__()
        self.live = self.peak = 0

    def _freed(self, nbytes: int) -> None:
        self.live -= nbytes

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        seen = {id(t.untyped_storage()) for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)}
        for tensor in tree_leaves(result):
            if isinstance(tensor, torch.Tensor) and id(tensor.untyped_storage()) not in seen:  # new, not a view
                storage = tensor.untyped_storage()
                seen.add(id(storage))
                self.live += storage.nbytes()
                self.peak = max(self.peak, self.live)
                weakref.finalize(storage, self._freed, storage.nbytes())   # counted off when freed
        return result


def result_has_shared_elements(fn, *args, **kwargs) -> bool:
    """Whether the tensor ``fn(*args, **kwargs)`` returns has elements that are one memory location: a
    dimension longer than 1 with stride 0, as ``expand()`` makes. Writing one such element writes them all,
    and in-place operations on the tensor raise. A test instrument, built where the student's code runs with
    ``probes.make("utils.memory.result_has_shared_elements", fn, *args)``: it returns plain data (a bool),
    because strides do not survive the trip to the judge (a view with gaps arrives contiguous)."""
    result = fn(*args, **kwargs)
    if not isinstance(result, torch.Tensor):
        return False
    return any(size > 1 and stride == 0 for size, stride in zip(result.shape, result.stride()))


def storage_span(tensor: torch.Tensor) -> tuple[int, int] | None:
    """The addresses ``[start, end)`` of the storage a tensor views (None for an empty tensor): two tensors whose
    spans overlap share memory, as views of one buffer do."""
    if tensor.numel() == 0:
        return None
    start = tensor.untyped_storage().data_ptr()
    return start, start + tensor.untyped_storage().nbytes()


def results_share_memory(fn, *args, **kwargs) -> bool:
    """Whether two tensors among those ``fn(*args, **kwargs)`` returns (in a tuple, list or dict) share memory:
    views of one buffer (``window[:, :-1], window[:, 1:]``), so that writing into one result changes another.
    A test instrument for "new tensors", built where the student's code runs with
    ``probes.make("utils.memory.results_share_memory", fn, *args)``: it returns plain data (a bool), because
    results arrive in the judge as separate copies."""
    spans = [storage_span(t) for t in tree_leaves(fn(*args, **kwargs)) if isinstance(t, torch.Tensor) and t.numel() > 0]
    return any(start < other_end and other_start < end
               for n, (start, end) in enumerate(spans) for other_start, other_end in spans[n + 1:])


def results_own_their_memory(fn, *args, **kwargs) -> bool:
    """Whether every tensor ``fn(*args, **kwargs)`` returns (in a tuple, list or dict too) is contiguous and alone
    in its memory: its storage holds its elements and nothing else, so it is no slice of a larger buffer
    (``window[:, :-1]`` of a ``(B, T + 1)`` window is one, and not contiguous: ``.view(-1)`` refuses it). A test
    instrument for "new tensors", built where the student's code runs with
    ``probes.make("utils.memory.results_own_their_memory", fn, *args)``: it returns plain data (a bool), because
    strides and storage do not survive the trip to the judge."""
    return all(tensor.is_contiguous() and tensor.storage_offset() == 0
               and tensor.untyped_storage().nbytes() == tensor.numel() * tensor.element_size()
               for tensor in tree_leaves(fn(*args, **kwargs))
               if isinstance(tensor, torch.Tensor) and tensor.numel() > 0)     # no element: nothing to hold


def call_with_strided(fn, *args, **kwargs) -> dict:
    """Call ``fn`` with every tensor argument of two or more dimensions replaced by a view with the same values
    that is not contiguous (as ``batch[:, 1:]`` or a transpose is), so that code flattening it with ``view``
    shows. A test instrument, built where the student's code runs with
    ``probes.make("utils.memory.call_with_strided", model, idx, targets)``, because tensors arrive there
    contiguous. Returns plain data: ``{"result": what fn returned}``, or ``{"error": "TypeName: message"}`` when
    it raised."""
    def strided(value):
        if isinstance(value, torch.Tensor) and value.dim() >= 2:
            return value.transpose(0, 1).contiguous().transpose(0, 1)    # same values, column-major
        return value
    try:
        return {"result": fn(*map(strided, args), **{k: strided(v) for k, v in kwargs.items()})}
    except Exception as error:  # noqa: BLE001 - reported to the test, which names the clause
        return {"error": f"{type(error).__name__}: {error}"[:300]}


def peak_tensor_bytes(fn, *args, **kwargs) -> tuple[object, int]:
    """``(fn(*args, **kwargs), peak bytes of the tensors it created)``, gradients off."""
    with torch.no_grad(), PeakTensorMemory() as tracker:
        result = fn(*args, **kwargs)
    return result, tracker.peak
