"""Small models that remember how they were called, for tests of training and evaluation loops.

A test of an evaluation loop has to know more than the number it returns: was the forward pass run
under ``torch.no_grad()``? Was the model in evaluation mode while it ran, and in which mode was it
left afterwards? A test cannot look inside the student's function, but it can hand it a model that
writes these facts down. Build one where the student's code runs with
``probes.make("utils.recording.RecordingLM", vocab_size=11, seed=3)``, pass it to the exercise, then
read ``model.calls`` (plain data: a list of dicts) and ``model.training``.

This module holds no exercise solution: students receive it as it is.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class RecordingLM(nn.Module):
    """A bigram language model (one logit table) that records every forward call.

    ``forward(idx)`` takes token ids of shape ``(B, T)`` (int64) and returns logits of shape
    ``(B, T, vocab_size)`` (float32): row ``idx[b, t]`` of the table. It has no dropout, so its output
    does not depend on the mode. Each call appends to ``self.calls`` a dict
    ``{"grad_enabled": bool, "training": bool, "shape": [B, T]}`` saying whether autograd was
    recording and whether the module was in training mode during that call.
    ``reset_calls()`` empties the record. The weights come from ``seed`` (same seed, same model).
    """

    def __init__(self, vocab_size: int = 11, seed: int = 0):
        super().__init__()
        generator = torch.Generator().manual_seed(seed)
        self.table = nn.Parameter(torch.randn(vocab_size, vocab_size, generator=generator))
        self.calls: list[dict] = []

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        self.calls.append({"grad_enabled": bool(torch.is_grad_enabled()), "training": bool(self.training),
                           "shape": [int(s) for s in idx.shape]})
        return self.table[idx]

    def reset_calls(self) -> None:
        self.calls = []


class RecordingPairLM(nn.Module):
    """A ``RecordingLM`` (``self.inner``) behind the ``forward(idx, targets=None) -> (logits, loss)``
    interface of a training step, with ``loss = F.cross_entropy`` over every position (None without
    targets). The record is the nested module's: ``self.inner.calls``. Because the recorder is a submodule,
    a step that sets ``model.training = True`` on the top module only (not ``model.train()``) shows as a
    call in eval mode.
    """

    def __init__(self, vocab_size: int = 11, seed: int = 0):
        super().__init__()
        self.inner = RecordingLM(vocab_size, seed)

    def forward(self, idx, targets=None):
        logits = self.inner(idx)
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def grad_mode_after(fn, *args, **kwargs) -> dict:
    """Call ``fn(*args, **kwargs)`` with autograd on and report whether autograd is still on when it returns.

    A function that turns autograd off for its own work with ``torch.no_grad()`` gives it back on exit;
    one that calls ``torch.set_grad_enabled(False)`` and never restores it leaves its caller without
    gradients. Build it where the student's code runs, passing the exercise itself:
    ``probes.make("utils.recording.grad_mode_after", generate, model, prompt, 3, 0, generator)``.
    Returns ``{"grad_enabled_after": bool}``; the caller's own autograd mode is restored afterwards.
    """
    with torch.enable_grad():
        fn(*args, **kwargs)
        return {"grad_enabled_after": bool(torch.is_grad_enabled())}


def attributes_set_by_calls(module, *inputs) -> dict:
    """Call ``module(x)`` for each ``x`` in ``inputs``, in turn, and report which instance attributes the
    calls set or replaced, on the module or any submodule (a tensor kept from one call to the next,
    a cache, a counter). A forward whose calls are independent sets none. Build it where the student's
    code runs: ``probes.make("utils.recording.attributes_set_by_calls", model, ids_a, ids_b)``. Returns
    ``{"attributes_set": [names]}``, e.g. ``["last_logits"]`` or ``["blocks.0.cache"]``.
    """
    before = {id(m): dict(vars(m)) for m in module.modules()}
    for x in inputs:
        module(x)
    changed = set()
    for name, m in module.named_modules():
        old = before.get(id(m), {})
        changed.update(f"{name}.{key}" if name else key for key, value in vars(m).items()
                       if key not in old or old[key] is not value)
    return {"attributes_set": sorted(changed)}


def hooks_left(module) -> dict:
    """The hooks still registered on ``module`` and its submodules: ``{"hooks": {name: count}}`` (plain data),
    counting forward, forward-pre and backward hooks, for each module that has any ("" is ``module`` itself). A
    function that adds a hook for its own work and removes it when done (``handle.remove()``) leaves ``{}``.
    Build it where the student's code runs: ``probes.make("utils.recording.hooks_left", model)``."""
    counts = {name: len(m._forward_hooks) + len(m._forward_pre_hooks) + len(m._backward_hooks)
              for name, m in module.named_modules()}
    return {"hooks": {name: n for name, n in counts.items() if n}}


# --- A training step in a precision, recorded ----------------------------------------------------------------

class StepRecordingLM(nn.Module):
    """A model, a precision and a loss scaler for tests of a training step, writing into one log.

    ``forward(idx, targets=None) -> (logits, loss)`` is ``utils.markov.BigramLM``'s (same seed, same table;
    the loss in float32). ``precision`` is like ``utils.precision.Precision``: ``precision.autocast()``
    enters CPU bfloat16 autocast. ``scaler`` (present when ``scale`` is given) has ``torch.amp.GradScaler``'s
    four calls with a fixed factor: ``scale(loss)`` returns ``loss * scale``; ``unscale_(optimizer)``
    divides the gradients by it (once per step); ``step(optimizer)`` unscales if that has not happened,
    then calls ``optimizer.step()``; ``update()`` ends the step. ``events`` lists, in order: "autocast
    enter" / "autocast exit", "forward" / "forward in autocast", "backward" / "backward in autocast" (when
    the gradient reaches the logits), "scale", "unscale_", "step", "update". Plain strings.
    """

    def __init__(self, vocab_size: int, seed: int = 0, scale: float | None = None):
        super().__init__()
        generator = torch.Generator().manual_seed(seed)
        self.table = nn.Parameter(torch.randn(vocab_size, vocab_size, generator=generator))
        self.events: list[str] = []
        self.inside_autocast = False
        self.precision = _RecordingPrecision(self)
        self.scaler = None if scale is None else _RecordingScaler(self.events, scale)

    def forward(self, idx, targets=None):
        self.events.append("forward in autocast" if self.inside_autocast else "forward")
        logits = self.table[idx]
        if logits.requires_grad:
            logits.register_hook(self._log_backward)
        if targets is None:
            return logits, None
        return logits, nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), targets.reshape(-1))

    def _log_backward(self, grad):
        self.events.append("backward in autocast" if self.inside_autocast else "backward")
        return grad


class _RecordingPrecision:
    needs_grad_scaler = False
    dtype = torch.bfloat16

    def __init__(self, model: StepRecordingLM):
        self._model = model

    def autocast(self):
        return _RecordedAutocast(self._model)


class _RecordedAutocast:
    def __init__(self, model: StepRecordingLM):
        self._model, self._autocast = model, torch.autocast("cpu", dtype=torch.bfloat16)

    def __enter__(self):
        self._model.events.append("autocast enter")
        self._model.inside_autocast = True
        self._autocast.__enter__()
        return self

    def __exit__(self, *exc):
        self._autocast.__exit__(*exc)
        self._model.inside_autocast = False
        self._model.events.append("autocast exit")
        return False


class _RecordingScaler:
    def __init__(self, events: list, scale: float):
        self._events, self.scale_factor, self._unscaled = events, float(scale), False

    def scale(self, loss):
        self._events.append("scale")
        return loss * self.scale_factor

    def unscale_(self, optimizer):
        self._events.append("unscale_")
        if self._unscaled:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        self._unscaled = True
        with torch.no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        p.grad.div_(self.scale_factor)

    def step(self, optimizer):
        self._events.append("step")
        if not self._unscaled:
            self.unscale_(optimizer)
        optimizer.step()

    def update(self):
        self._events.append("update")
        self._unscaled = False


# --- Hooks that belong to someone else ----------------------------------------------------------------------

def _bystander_hook(module, args, output):
    return None   # changes nothing: it is there only to be left alone


def with_bystander_hooks(module) -> dict:
    """Registers one forward hook that changes nothing on ``module`` and on each of its submodules, as a user's
    own hooks would be, and returns ``hooks_left(module)`` (plain data). A function that removes only the hooks it
    added (``handle.remove()``) leaves that count as it was; one that clears a module's hooks
    (``module._forward_hooks.clear()``) drops these too. Build it where the student's code runs:
    ``probes.make("utils.recording.with_bystander_hooks", model)``."""
    for submodule in module.modules():
        submodule.register_forward_hook(_bystander_hook)
    return hooks_left(module)
