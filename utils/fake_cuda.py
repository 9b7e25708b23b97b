"""Where a function makes its result, seen on a machine without a GPU, with the input's values still there.

``utils.meta_device`` moves a function's tensors to PyTorch's meta device, which has shapes and no values: code
that reads its input's values (``.tolist()``, ``.item()``, ``int(x[0])``, a Python loop over starts) cannot run
there, and its device is not seen ("needs values"). This module keeps the values. Each tensor argument becomes a
*labelled* tensor: a wrapper that holds the real CPU tensor and reports ``device == cuda:0`` (``is_cuda`` is
true), so code that asks for the input's device (``device=data.device``, ``.to(data.device)``) gets a labelled
tensor too, and every operation on labelled tensors runs on the CPU on the real values and gives labelled results.
What a CUDA build would refuse or hand back on the CPU shows the same way here:

* a tensor made with no ``device=`` (``torch.empty(B, T)``, ``torch.arange(T)``) is a plain CPU tensor; filled
  from the labelled input (``out[b] = data[s:s + T]``, which a GPU allows: it is a copy between devices) and
  returned, the result is on the CPU;
* a plain CPU tensor (not a 0-dim scalar) that meets a labelled one in an operation raises PyTorch's "Expected
  all tensors to be on the same device", as on a GPU (a causal mask made without ``device=``); indexing a labelled
  tensor with CPU indices is allowed, as on a GPU, and a CPU tensor indexed with labelled indices is refused;
* ``torch.randint(..., generator=g, device=data.device)`` with a CPU generator raises, as CUDA does;
* ``.numpy()`` of a labelled tensor raises ``TypeError``, as for a CUDA tensor; ``.item()``, ``.tolist()``,
  ``.cpu()`` and ``.to("cpu")`` read or move the real values;
* operations whose Python bindings reach the CUDA runtime before the emulation sees them (``~mask``,
  ``mask.nonzero()``) run on the real values and give labelled results (``_on_the_values``).

What it cannot see: anything PyTorch decides in its CUDA kernels themselves (speed, memory, nondeterminism,
float16 support), streams and synchronisation, a result moved to the CPU on purpose before being returned (it is
reported as what it is, on the CPU), and code that reaches the CUDA runtime directly (``torch.cuda.*``): on this
CPU build that raises "Torch not compiled with CUDA enabled", which is reported as ``"unsupported"`` and not
counted against the answer, like any operation this emulation does not handle. The device rules are the common
ones (a CPU 0-dim tensor may meet a CUDA one; copies and ``.to`` cross devices; CPU indices may index a CUDA
tensor); where PyTorch is laxer for some operation, a correct answer could be refused here, so tests use it on
the operations of the exercise they check.

Tensors PyTorch makes inside its C++ operators with a labelled tensor's options (``scaled_dot_product_attention``'s
workspace) are made on the CPU and labelled too (``_FactoriesOnLabel``, a dispatch-level mode).

Test instruments, built where the student's code runs with
``probes.make("utils.fake_cuda.result_device_on_fake_cuda", fn, *args)`` (a module argument, such as a model given
to a search, becomes a labelled copy) or ``probes.make("utils.fake_cuda.module_output_device_on_fake_cuda", module,
*args)``; they return plain data, read in
the test by ``checks.assert_kept_on_fake_cuda``. Students receive them as they are.
"""

from __future__ import annotations

import copy

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

LABEL = torch.device("cuda", 0)
MISMATCH = "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"
# What this CPU build says when code reaches CUDA itself: the emulation's limit, not the answer's mistake.
UNSUPPORTED_MESSAGES = ("not compiled with CUDA", "not linked with support for cuda", "from the 'CUDA' backend")
# Operations that take CPU indices (and values) for a CUDA tensor, or copy between devices.
_INDEXING = {"aten::index", "aten::index_put", "aten::index_put_", "aten::_index_put_impl_"}
_CROSS_DEVICE = {"aten::copy_", "aten::_to_copy", "aten::_copy_from", "aten::_copy_from_and_resize"}


class LabelledTensor(torch.Tensor):
    """A real CPU tensor (``inner``) that reports the device ``cuda:0``."""

    __torch_function__ = torch._C._disabled_torch_function_impl   # the mode below sees the Python-level calls

    @staticmethod
    def __new__(cls, inner: torch.Tensor):
        labelled = torch.Tensor._make_wrapper_subclass(
            cls, inner.shape, strides=inner.stride(), storage_offset=inner.storage_offset(), dtype=inner.dtype,
            device=LABEL, requires_grad=inner.requires_grad)
        labelled.inner = inner
        return labelled

    def __repr__(self):
        return f"LabelledTensor({self.inner!r}, device='cuda:0')"

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        _check_devices(func, args, kwargs)
        plain_args, plain_kwargs = tree_map(_unwrap, args), tree_map(_unwrap, kwargs)
        if _is_cuda(plain_kwargs.get("device")):   # new_zeros, empty_like, ...: made beside a labelled tensor
            plain_kwargs["device"] = torch.device("cpu")
        result = func(*plain_args, **plain_kwargs)
        if func._schema.name == "aten::_to_copy" and _is_cpu(kwargs.get("device")):
            return result
        return tree_map(lambda out: _relabel(out, args, plain_args), result)


def _unwrap(value):
    return value.inner if isinstance(value, LabelledTensor) else value


def _relabel(out, args, plain_args):
    """An operation's output, labelled unless it is a plain argument given back (an in-place write or copy into
    a CPU tensor); a labelled argument given back in place is that argument itself."""
    if not isinstance(out, torch.Tensor):
        return out
    for original, plain in zip(tree_flatten(args)[0], tree_flatten(plain_args)[0]):
        if out is plain:
            return original
    return LabelledTensor(out)


def _check_devices(func, args, kwargs) -> None:
    """Raise PyTorch's device mismatch where a CUDA build would: a CPU tensor other than a 0-dim scalar meeting a
    labelled one, outside copies and the indices (and values) of an indexing operation."""
    name = func._schema.name
    if name in _CROSS_DEVICE:
        return
    if name in _INDEXING:
        self = args[0]
        if not isinstance(self, LabelledTensor) and any(
                isinstance(t, LabelledTensor) for t in tree_flatten((args[1:], kwargs))[0]):
            raise RuntimeError("indices should be either on cpu or on the same device as the indexed tensor (cpu)")
        return
    tensors = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
    if any(isinstance(t, LabelledTensor) for t in tensors) and any(
            not isinstance(t, LabelledTensor) and t.dim() > 0 for t in tensors):
        raise RuntimeError(f"{MISMATCH} (in {name})")


def _is_cuda(device) -> bool:
    return isinstance(device, (str, torch.device)) and torch.device(device).type == "cuda"


def _is_cpu(device) -> bool:
    return isinstance(device, (str, torch.device)) and torch.device(device).type == "cpu"


def _label_all(value):
    return tree_map(lambda v: LabelledTensor(v) if isinstance(v, torch.Tensor) else v, value)


def _target_device(args, kwargs):
    """The device a ``Tensor.to(...)`` call names (positionally, by keyword or by a tensor), or None."""
    for value in (kwargs.get("device"), kwargs.get("other"), *args):
        if isinstance(value, torch.Tensor):
            return value.device
        if isinstance(value, (str, torch.device)):
            return torch.device(value)
    return None


def _move(func, self, args, kwargs):
    """``self.to(...)``, ``.cuda()`` or ``.cpu()``: a labelled tensor for the label's device, a plain one for the
    CPU, a new tensor whenever the device changes (as on a GPU), ``self`` itself where nothing changes."""
    if func is torch.Tensor.cuda:
        target = LABEL
    elif func is torch.Tensor.cpu:
        target = torch.device("cpu")
    else:
        target = _target_device(args, kwargs)
    base = _unwrap(self)
    if func is torch.Tensor.to:
        args = tuple("cpu" if isinstance(a, (str, torch.device)) else _unwrap(a).cpu() if isinstance(a, torch.Tensor)
                     else a for a in args)
        kwargs = {k: ("cpu" if k == "device" else v) for k, v in kwargs.items() if k != "other"}
        moved = base.to(*args, **kwargs)
    else:
        moved = base
    if target is None or target.type == self.device.type:
        return self if moved is base else type(self)(moved) if isinstance(self, LabelledTensor) else moved
    moved = moved.clone() if moved is base else moved
    return LabelledTensor(moved) if target.type == "cuda" else moved


def _index_plain(index):
    """An index with its labelled tensors unwrapped (CPU indices may index a CUDA tensor)."""
    return tree_map(_unwrap, index)


def _has_labelled(value) -> bool:
    return any(isinstance(v, LabelledTensor) and v.dim() > 0 for v in tree_flatten(value)[0])


def _getitem(self, index):
    if isinstance(self, LabelledTensor):
        return LabelledTensor(self.inner[_index_plain(index)])
    if _has_labelled(index):
        raise RuntimeError("indices should be either on cpu or on the same device as the indexed tensor (cpu)")
    return self[_index_plain(index)]


def _setitem(self, index, value):
    """``self[index] = value``: a copy between devices is allowed (as on a GPU); ``self`` keeps its device."""
    if not isinstance(self, LabelledTensor) and _has_labelled(index):
        raise RuntimeError("indices should be either on cpu or on the same device as the indexed tensor (cpu)")
    _unwrap(self)[_index_plain(index)] = _unwrap(value)


class LabelledCuda(TorchFunctionMode):
    """While active: a tensor asked for on ``cuda`` is made on the CPU and labelled; moves, indexing and reading
    values of labelled tensors behave as for CUDA tensors (see the module's docstring)."""

    _MOVES = (torch.Tensor.to, torch.Tensor.cuda, torch.Tensor.cpu)
    _VALUES = (torch.Tensor.item, torch.Tensor.tolist, torch.Tensor.numpy, torch.Tensor.__int__,
               torch.Tensor.__float__, torch.Tensor.__bool__, torch.Tensor.__index__, torch.Tensor.__format__)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func in self._MOVES:
            return _move(func, args[0], args[1:], kwargs)
        if func is torch.Tensor.__getitem__:
            return _getitem(*args)
        if func is torch.Tensor.__setitem__:
            return _setitem(*args)
        if func in self._VALUES and args and isinstance(args[0], LabelledTensor):
            if func is torch.Tensor.numpy:   # CUDA's refusal; the others read the real values
                raise TypeError("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the "
                                "tensor to host memory first.")
            return func(args[0].inner, *args[1:], **kwargs)
        if _is_cuda(kwargs.get("device")):
            return _label_all(_made_on_label(func, args, kwargs))
        try:
            return func(*args, **kwargs)
        except RuntimeError as error:
            if not (_reached_cuda(error) and any(isinstance(t, LabelledTensor) for t in tree_flatten((args, kwargs))[0])):
                raise
        return _on_the_values(func, args, kwargs)


def _reached_cuda(error: Exception) -> bool:
    return any(text in str(error) for text in UNSUPPORTED_MESSAGES)


def _on_the_values(func, args, kwargs):
    """A call whose Python binding guards the device of a tensor that reports cuda (``~mask``, ``mask.nonzero()``)
    reaches the CUDA runtime this build lacks before the dispatch sees it: run it on the real values, with the same
    device rule (a CPU tensor other than a 0-dim scalar beside a labelled one raises), and label its results, as
    CUDA gives them on the device."""
    tensors = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
    if any(not isinstance(t, LabelledTensor) and t.dim() > 0 for t in tensors):
        raise RuntimeError(f"{MISMATCH} (in {getattr(func, '__name__', func)})")
    return _label_all(func(*tree_map(_unwrap, args), **tree_map(_unwrap, kwargs)))


class _FactoriesOnLabel(TorchDispatchMode):
    """While active: an operator that makes a tensor on ``cuda`` from inside PyTorch's C++ (``at::empty`` with a
    query's options, as ``scaled_dot_product_attention`` does), which never passes the Python-level mode above,
    makes it on the CPU and labels it."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if _is_cuda(kwargs.get("device")) and not any(isinstance(t, torch.Tensor) for t in tree_flatten(args)[0]):
            return _label_all(func(*args, **{**kwargs, "device": torch.device("cpu")}))
        return func(*args, **kwargs)


def _made_on_label(func, args, kwargs):
    """A factory call asked for on ``cuda`` (``torch.zeros(..., device=x.device)``), made on the CPU; a CPU
    generator is refused, as CUDA refuses it."""
    generator = kwargs.get("generator")
    if isinstance(generator, torch.Generator) and generator.device.type != "cuda":
        raise RuntimeError(f"Expected a 'cuda' device type for generator but found '{generator.device.type}'")
    return func(*args, **{**kwargs, "device": torch.device("cpu")})


def result_device_on_fake_cuda(fn, *args, **kwargs) -> dict:
    """Call ``fn`` with every tensor argument (also inside lists, tuples and dicts) a labelled copy that reports
    ``cuda:0`` and keeps its values, and every module argument a copy with its parameters and buffers labelled (a
    model on the GPU, recording no gradients), under ``LabelledCuda``.

    Returns plain data: ``{"outcome": "device", "device": "cuda" | "cpu", "where": ...}``, the device of the
    result (``"cpu"`` when any returned tensor, of a tuple, list or dict too, is on the CPU; ``where`` says which);
    ``{"outcome": "mismatch", "error": message}`` when the call mixed devices as a GPU would refuse (CPU tensors
    with labelled ones, a CPU generator for a CUDA draw, ``.numpy()`` of a CUDA tensor);
    ``{"outcome": "unsupported", "error": message}`` when it reached CUDA itself, which this build cannot emulate;
    ``{"outcome": "raised", "error": message}`` for any other exception; ``{"outcome": "no tensor"}`` when it
    returned no tensor.
    """
    labelled_args = [_labelled_argument(a) for a in args]
    labelled_kwargs = {k: _labelled_argument(v) for k, v in kwargs.items()}
    try:
        with LabelledCuda(), _FactoriesOnLabel():
            result = fn(*labelled_args, **labelled_kwargs)
            return _result_report(result)
    except Exception as error:  # noqa: BLE001 - every failure is reported, none is raised into the test
        return _error_report(error)


def _labelled_argument(value):
    """A module argument becomes a labelled copy (a model on the GPU, so a loop may take its device from the
    parameters); tensors, also inside lists, tuples and dicts, labelled copies."""
    if isinstance(value, torch.nn.Module):
        return _labelled_module(value)
    return _label_all(_copy_tensors(value))


def _copy_tensors(value):
    return tree_map(lambda v: v.detach().clone().requires_grad_(v.requires_grad) if isinstance(v, torch.Tensor)
                    else v, value)


def _result_report(result) -> dict:
    tensors = [(i, t) for i, t in enumerate(tree_flatten(result)[0]) if isinstance(t, torch.Tensor)]
    if not tensors:
        return {"outcome": "no tensor"}
    for position, tensor in tensors:
        if not isinstance(tensor, LabelledTensor):
            where = "the result" if len(tree_flatten(result)[0]) == 1 else f"returned tensor {position}"
            return {"outcome": "device", "device": tensor.device.type, "where": where}
    return {"outcome": "device", "device": "cuda", "where": "the result"}


def _error_report(error: Exception) -> dict:
    message = f"{type(error).__name__}: {error}"[:300]
    if _reached_cuda(error):
        return {"outcome": "unsupported", "error": message}
    device_words = (MISMATCH[:40], "indices should be either on cpu", "device type for generator",
                    "can't convert cuda")
    if any(text in str(error) for text in device_words):
        return {"outcome": "mismatch", "error": message}
    return {"outcome": "raised", "error": message}


def module_output_device_on_fake_cuda(module, *args, **kwargs) -> dict:
    """``result_device_on_fake_cuda`` for a module's forward pass: a copy of ``module`` whose parameters and
    buffers are labelled copies (a tied weight stays one tensor), called on labelled ``args``; the module itself is
    left as it was. A tensor kept as a plain attribute stays on the CPU, as ``module.to("cuda")`` would leave it.
    The copy's parameters record no gradients."""
    return result_device_on_fake_cuda(_labelled_module(module), *args, **kwargs)


def _labelled_module(module):
    """A copy of ``module`` whose parameters and buffers are labelled copies (a tied weight stays one tensor) that
    record no gradients: autograd through a labelled tensor would reach CUDA itself, which aborts this build."""
    labelled = copy.deepcopy(module)
    made: dict[int, torch.Tensor] = {}
    for submodule in labelled.modules():
        for name, tensor in list(submodule._parameters.items()) + list(submodule._buffers.items()):
            if tensor is None:
                continue
            if id(tensor) not in made:
                inner = LabelledTensor(tensor.detach().clone())
                made[id(tensor)] = torch.nn.Parameter(inner, requires_grad=False) if name in submodule._parameters else inner
            table = submodule._parameters if name in submodule._parameters else submodule._buffers
            table[name] = made[id(tensor)]
    return labelled
