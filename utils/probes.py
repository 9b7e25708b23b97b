"""What a test asks of an exercise beyond calling it, written once for both places a test runs.

A test cell runs in two places:

* in the student's own kernel, for immediate feedback: the exercise names are the student's real
  functions and classes, and these probes simply do their work there;
* at grading time, in the course's *judge*, a separate process that never runs student code: the
  exercise names are handles that send their arguments to the sandboxed student kernel and get the
  result back **by value** (tensors, arrays, numbers, strings, lists/tuples/dicts of them). There a
  probe becomes one request to the kernel, and its answer comes back by value too.

So a test never needs an object that lives in the student's kernel. What it cannot do by calling a
handle, it does with a probe:

* ``gradients(fn, *args, grad_output=..., **kwargs)``: run ``fn`` (a function or an ``nn.Module``)
  where it lives and backpropagate; returns the output and the gradients by value;
* ``traced_call(fn, *args, **kwargs)``: the result plus what the call did to its arguments (were
  they modified in place? is the result one of them, or a view of one?);
* ``repeated_calls(fn, args_1, args_2, ...)``: one call per tuple of arguments, and whether two of the
  results are one object or share memory (a cache, or slices of one buffer kept between calls);
* ``arguments_after_calls(cls, args, calls)``: build ``cls(*args)`` and call its methods where it lives,
  then the constructor's arguments as they are afterwards (an object that kept an argument it was
  given and changed it later, in a method, shows here; a plain call only shows changes made during it);
* ``mutating_call(fn, *args, **kwargs)``: the call, for an exercise whose contract says it modifies
  an argument in place. At grading time every other call of an exercise checks that the arguments the
  test passed are unchanged afterwards, and fails naming the one that changed; this one does not;
* ``make("torch.nn.Linear", 4, 3)``: build an object of a PyTorch or course class where the student's
  code runs, so it can be passed to an exercise (a model for an evaluation loop, say);
* ``parameters(module)`` / ``num_parameters(module)``: a module's named parameters by value;
* ``time_limit(seconds)``: a context manager; at grading time a call inside it that overruns is
  stopped and fails with a clear message (in your own kernel it is measured after the fact);
* ``default_dtype(torch.float64)``: a context manager; calls inside run with PyTorch's default dtype set
  to it where the student's code runs, and it is put back afterwards ("float32 whatever the default").

This module holds no exercise solution: students receive it as it is.
"""

from __future__ import annotations

import gc
import importlib
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .memory import storage_span

# Set by the judge (``autograder.judge``) in its own process. In a student's kernel it stays None and
# every probe runs right here.
_judge = None

ALLOWED_PREFIXES = ("torch.", "utils.")


@dataclass
class TracedCall:
    """What ``traced_call`` saw.

    ``result``: the return value. ``args_after``/``kwargs_after``: the arguments as they were after
    the call (equal to the inputs unless the function modified them in place).
    ``returns_argument``: the result *is* one of the argument objects (e.g. the caller's own list).
    ``shares_memory``: a tensor in the result shares memory with a tensor or NumPy array argument (a view of it).
    """

    result: Any
    args_after: tuple
    kwargs_after: dict
    returns_argument: bool
    shares_memory: bool


@dataclass
class RepeatedCalls:
    """What ``repeated_calls`` saw.

    ``results``: the return values, one per call. ``same_object``: two calls returned the very same object
    (a cached result). ``shares_memory``: tensors returned by two different calls share memory (views of one
    buffer kept between calls, such as slices of a precomputed table).
    """

    results: list
    same_object: bool
    shares_memory: bool


def _is_local() -> bool:
    return _judge is None


def gradients(fn, *args, grad_output=None, **kwargs) -> dict:
    """Call ``fn(*args, **kwargs)`` and backpropagate ``(output * grad_output).sum()``.

    Floating tensor arguments created with ``requires_grad=True`` get gradients; so do the
    parameters when ``fn`` is an ``nn.Module``. ``grad_output`` defaults to ones. Returns a dict:
    ``"output"`` (detached), ``"inputs"`` (one entry per positional argument: its gradient, or
    None), ``"params"`` (parameter name -> gradient or None; empty for a plain function).
    """
    if not _is_local():
        return _judge.probe("gradients", fn, args, kwargs, grad_output=grad_output)
    return _gradients_here(fn, args, kwargs, grad_output)


def _gradients_here(fn, args, kwargs, grad_output) -> dict:
    args = tuple(a.detach().clone().requires_grad_(True) if isinstance(a, torch.Tensor) and a.requires_grad else a
                 for a in args)
    module = fn if isinstance(fn, torch.nn.Module) else None
    if module is not None:
        module.zero_grad(set_to_none=True)
    with torch.enable_grad():
        output = fn(*args, **kwargs)
        if not isinstance(output, torch.Tensor):
            raise TypeError(f"gradients() needs a tensor output, got {type(output).__name__}")
        weight = torch.ones_like(output) if grad_output is None else grad_output.to(output.dtype)
        if output.requires_grad:
            (output * weight).sum().backward()
    input_grads = [a.grad.detach().clone() if isinstance(a, torch.Tensor) and a.grad is not None else None
                   for a in args]
    params = {}
    if module is not None:
        params = {name: (p.grad.detach().clone() if p.grad is not None else None)
                  for name, p in module.named_parameters()}
    return {"output": output.detach(), "inputs": input_grads, "params": params}


def traced_call(fn, *args, **kwargs) -> TracedCall:
    """Call ``fn`` and report what it did to its arguments (see ``TracedCall``)."""
    if not _is_local():
        return TracedCall(**_judge.probe("traced_call", fn, args, kwargs))
    return TracedCall(**_traced_call_here(fn, args, kwargs))


def repeated_calls(fn, *argument_tuples) -> RepeatedCalls:
    """Call ``fn(*arguments)`` for each tuple in ``argument_tuples``, in order, where ``fn`` lives, keeping
    every result alive, and report whether any two results are one object or share memory (see
    ``RepeatedCalls``): what a contract's "a new tensor" means across calls."""
    if not _is_local():
        return RepeatedCalls(**_judge.probe("repeated_calls", fn, argument_tuples, {}))
    return RepeatedCalls(**_repeated_calls_here(fn, argument_tuples))


def arguments_after_calls(cls, args: tuple, calls) -> tuple:
    """Build ``obj = cls(*args)`` where ``cls`` lives, call ``getattr(obj, name)(*method_args)`` for each
    ``(name, method_args)`` in ``calls``, in order, and return ``args`` as they are after the last call.

    A constructor whose contract says it leaves its arguments unchanged must not keep one and change it
    later: at grading time each argument travels by value, so only this probe, which keeps the object and
    its arguments together where the student's code runs, can see such a change. In your own kernel
    ``args`` are your own objects, and the returned tuple holds them."""
    if not _is_local():
        return tuple(_judge.probe("arguments_after_calls", cls, args, {}, calls=[tuple(c) for c in calls]))
    return _arguments_after_calls_here(cls, args, calls)


def _arguments_after_calls_here(cls, args, calls) -> tuple:
    obj = cls(*args)
    for name, method_args in calls:
        getattr(obj, name)(*method_args)
    return tuple(args)


def mutating_call(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` for an exercise whose contract says it modifies an argument in place.

    At grading time every plain call of an exercise fails when it changed a tensor, array, list or
    dict the test passed (the judge compares them before and after). This call is exempt; to see
    what it did to its arguments, use ``traced_call``, which is exempt too. In your own kernel it is
    the plain call."""
    if not _is_local():
        return _judge.mutating_call(fn, args, kwargs)
    return fn(*args, **kwargs)


def _instances_in(value, kind, found: list) -> list:
    """Every object of type ``kind`` in ``value`` and the lists, tuples and dict values nested in it."""
    if isinstance(value, kind):
        found.append(value)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _instances_in(item, kind, found)
    elif isinstance(value, dict):
        for item in value.values():
            _instances_in(item, kind, found)
    return found


def _array_span(array: np.ndarray):
    # The bytes a NumPy array (a view, strided, or a memmap) can reach: a tensor made from it with
    # torch.from_numpy lives inside them.
    if array.size == 0:
        return None
    start = array.__array_interface__["data"][0]
    offsets = [(n - 1) * stride for n, stride in zip(array.shape, array.strides)]
    return start + sum(o for o in offsets if o < 0), start + sum(o for o in offsets if o > 0) + array.itemsize


def _traced_call_here(fn, args, kwargs) -> dict:
    result = fn(*args, **kwargs)
    argument_objects = list(args) + list(kwargs.values())
    returns_argument = any(result is a for a in argument_objects if not isinstance(a, (int, float, str, bool, type(None))))
    spans = [s for s in (storage_span(t) for t in _instances_in(argument_objects, torch.Tensor, [])) if s]
    spans += [s for s in (_array_span(a) for a in _instances_in(argument_objects, np.ndarray, [])) if s]
    shares = False
    for tensor in _instances_in(result, torch.Tensor, []):
        span = storage_span(tensor)
        if span and any(span[0] < end and start < span[1] for start, end in spans):
            shares = True
    return {"result": result, "args_after": tuple(args), "kwargs_after": dict(kwargs),
            "returns_argument": returns_argument, "shares_memory": shares}


def _repeated_calls_here(fn, argument_tuples) -> dict:
    results = [fn(*arguments) for arguments in argument_tuples]
    mutable = [r for r in results if not isinstance(r, (int, float, str, bool, bytes, type(None)))]
    same_object = any(a is b for n, a in enumerate(mutable) for b in mutable[n + 1:])
    spans = [[s for s in (storage_span(t) for t in _instances_in(r, torch.Tensor, [])) if s] for r in results]
    shares = any(start < other_end and other_start < end
                 for n, mine in enumerate(spans) for theirs in spans[n + 1:]
                 for start, end in mine for other_start, other_end in theirs)
    return {"results": results, "same_object": same_object, "shares_memory": shares}


def make(qualified_name: str, *args, **kwargs):
    """Build ``qualified_name(*args, **kwargs)`` (a class or function under ``torch.`` or ``utils.``)
    where the student's code runs, e.g. ``make("torch.nn.Linear", 4, 3)``. Keyword ``state_dict=``
    loads those weights into the new module."""
    if not qualified_name.startswith(ALLOWED_PREFIXES):
        raise ValueError(f"make() builds objects from torch.* or utils.* only, not {qualified_name!r}")
    if not _is_local():
        return _judge.probe("make", qualified_name, args, kwargs)
    return _make_here(qualified_name, args, kwargs)


def _make_here(qualified_name: str, args, kwargs):
    state = kwargs.pop("state_dict", None)
    module_name, _, attribute = qualified_name.rpartition(".")
    target = importlib.import_module(module_name)
    obj = getattr(target, attribute)(*args, **kwargs)
    if state is not None:
        obj.load_state_dict(state)
    return obj


def parameters(module) -> dict:
    """``{name: tensor}`` for the module's named parameters (detached copies)."""
    if not _is_local():
        return _judge.probe("parameters", module, (), {})
    return _parameters_here(module)


def _parameters_here(module) -> dict:
    return {name: p.detach().clone() for name, p in module.named_parameters()}


def num_parameters(module) -> int:
    """The number of scalar parameters in the module (shared tensors counted once)."""
    if not _is_local():
        return _judge.probe("num_parameters", module, (), {})
    return _num_parameters_here(module)


def _num_parameters_here(module) -> int:
    return sum(p.numel() for p in module.parameters())


@contextmanager
def time_limit(seconds: float, what: str = "this call"):
    """Calls inside must finish within ``seconds`` of CPU time (a busy machine does not stretch it). At
    grading time an overrunning call is stopped and fails; here (your own kernel) the block is timed and
    fails afterwards if it took too long."""
    if not _is_local():
        with _judge.time_limit(seconds, what):
            yield
        return
    gc.collect()  # the garbage earlier cells left is not charged to the timed calls (as at grading time)
    start = time.process_time()
    yield
    elapsed = time.process_time() - start
    if elapsed > seconds:
        from .checks import CheckFailure

        raise CheckFailure(f"{what}: took {elapsed:.2f} CPU seconds; the limit at grading time is {seconds:g} s.\n"
                           "Hint: look for work repeated inside a loop (recounting everything on every step).")


@contextmanager
def default_dtype(dtype):
    """Calls inside run with PyTorch's default dtype set to ``dtype`` where the student's code runs; the
    default it had is put back afterwards, whatever the block raised."""
    previous = make("torch.get_default_dtype")
    make("torch.set_default_dtype", dtype)
    try:
        yield
    finally:
        make("torch.set_default_dtype", previous)


# The kernel-side half of each probe, looked up by the judge's requests by name.
KERNEL_SIDE = {
    "gradients": lambda fn, args, kwargs, grad_output=None: _gradients_here(fn, args, kwargs, grad_output),
    "traced_call": lambda fn, args, kwargs: _traced_call_here(fn, args, kwargs),
    "arguments_after_calls": lambda cls, args, kwargs, calls=(): _arguments_after_calls_here(cls, args, calls),
    "repeated_calls": lambda fn, args, kwargs: _repeated_calls_here(fn, args),
    "make": lambda name, args, kwargs: _make_here(name, args, dict(kwargs)),
    "parameters": lambda module, args, kwargs: _parameters_here(module),
    "num_parameters": lambda module, args, kwargs: _num_parameters_here(module),
}
