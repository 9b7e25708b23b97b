"""Where a function makes its result, seen on a machine without a GPU.

A tensor on PyTorch's ``meta`` device has a shape and a dtype but no values. Code that builds its result
on the device of its input (``torch.zeros(..., device=ids.device)``, ``torch.arange(n, device=x.device)``,
operations on the input itself) gives a meta result for a meta input; code that builds it with no
``device=`` gives a CPU result, the same mistake that on a GPU hands a CPU tensor back for a GPU input.
So a test on a CPU-only machine can check a clause "on the device of `ids`".

Code that reads its input's values (``.tolist()``, ``.item()``, ``.numpy()``) cannot run on meta: that
says nothing about the device, and the outcome is "needs values", which a test does not count against it.
PyTorch says the same ("Cannot copy out of meta tensor") when a meta tensor is written into a tensor made on
the CPU (``out[...] = tile``), so that mistake reads as "needs values" too: only a CPU tensor that meets a
meta one in an operation, or a CPU result, is seen.

A module is checked the same way with its parameters and buffers on meta too
(``module_output_device_on_meta``): a causal mask made with no ``device=`` meets the meta scores and is
reported, as on a GPU it would stop the forward pass.

Test instruments, built where the student's code runs with
``probes.make("utils.meta_device.result_device_on_meta", fn, *args)`` or
``probes.make("utils.meta_device.module_output_device_on_meta", module, x)``; students receive them as they are.
"""

from __future__ import annotations

import copy

import torch

# What PyTorch says when a meta tensor meets a tensor on another device in one operation (as a GPU
# tensor meeting a CPU tensor would): a device mistake, not a read of values.
DEVICE_MISMATCH_MESSAGES = ("is not on the expected device", "Expected all tensors to be on the same device")


def _to_meta(value, move=lambda tensor: tensor.to("meta")):
    """``value`` with every tensor in it (also inside lists, tuples and dicts) replaced by ``move(tensor)``."""
    if isinstance(value, torch.Tensor):
        return move(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_to_meta(v, move) for v in value)
    if isinstance(value, dict):
        return {key: _to_meta(v, move) for key, v in value.items()}
    return value


def result_device_on_meta(fn, *args, **kwargs) -> dict:
    """Call ``fn`` with every tensor argument (also inside lists, tuples and dicts) moved to the meta device.

    Returns plain data: ``{"outcome": "device", "device": "meta" | "cpu" | ...}`` with the device type of the
    result (a tensor, or the first tensor of a returned tuple or list); ``{"outcome": "mismatch", "error":
    message}`` when the call mixed the meta input with a tensor made on another device; ``{"outcome":
    "needs values", "error": message}`` when it raised for another reason (it read the input's values);
    ``{"outcome": "no tensor"}`` when it returned no tensor.
    """
    return _device_report(lambda: fn(*_to_meta(list(args)), **{k: _to_meta(v) for k, v in kwargs.items()}))


def _device_report(call) -> dict:
    """The report of ``result_device_on_meta`` for ``call()``, a call on meta inputs."""
    try:
        result = call()
    except Exception as error:  # noqa: BLE001 - every failure is reported, none is raised into the test
        message = f"{type(error).__name__}: {error}"
        mismatch = any(text in str(error) for text in DEVICE_MISMATCH_MESSAGES)
        return {"outcome": "mismatch" if mismatch else "needs values", "error": message[:300]}
    if isinstance(result, (tuple, list)):
        result = next((r for r in result if isinstance(r, torch.Tensor)), None)
    if not isinstance(result, torch.Tensor):
        return {"outcome": "no tensor"}
    return {"outcome": "device", "device": result.device.type}


def result_device_on_fake_meta(fn, *args, **kwargs) -> dict:
    """Like ``result_device_on_meta``, with every tensor argument a *fake* meta tensor (PyTorch's
    ``FakeTensorMode``: shape, dtype and device, no values).

    Unlike a plain meta tensor, a fake one can be moved: ``x.cpu()`` gives a fake CPU tensor instead of raising,
    so code that moves its input to the CPU and builds its result there (``lengths = lengths.cpu()``) shows as a
    CPU result, where ``result_device_on_meta`` reads "needs values". Reading values (``.tolist()``,
    ``int(x[0])``) still raises and reads as "needs values". Same report as ``result_device_on_meta``, for
    ``checks.assert_kept_on_meta``.
    """
    from torch._subclasses.fake_tensor import FakeTensorMode

    def fake(tensor):   # made inside the mode, so a fake tensor (a real one may not enter the mode's operations)
        return torch.empty_strided(tensor.shape, tensor.stride(), dtype=tensor.dtype, device="meta")

    with FakeTensorMode():
        return _device_report(lambda: fn(*_to_meta(list(args), fake), **{k: _to_meta(v, fake) for k, v in kwargs.items()}))


def module_output_device_on_meta(module, *args, **kwargs) -> dict:
    """Call a copy of ``module`` moved to the meta device (its parameters and buffers) on ``args`` moved
    there too; the module itself is left as it was. The outcomes are those of ``result_device_on_meta``:
    ``"mismatch"`` when the forward pass mixed meta tensors with one it made on another device (a mask
    built without ``device=``, a tensor kept as a plain attribute, which ``module.to`` does not move), or
    when a submodule was called with a tensor on another device (positions made on the CPU for an
    ``nn.Embedding``: meta lets an embedding take them, a GPU does not)."""
    copy_on_meta = copy.deepcopy(module).to("meta")
    strays: list[str] = []

    def watch(name):
        def before(submodule, inputs, keywords):
            for value in (*inputs, *keywords.values()):
                if isinstance(value, torch.Tensor) and value.device.type != "meta":
                    strays.append(f"{name} was called with a tensor on {value.device.type}")
        return before

    for name, submodule in copy_on_meta.named_modules():
        if name:
            submodule.register_forward_pre_hook(watch(name), with_kwargs=True)
    seen = result_device_on_meta(copy_on_meta, *args, **kwargs)
    if strays and seen["outcome"] != "mismatch":
        return {"outcome": "mismatch", "error": strays[0]}
    return seen
