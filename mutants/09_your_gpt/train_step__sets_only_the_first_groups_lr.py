"""Sets the learning rate of the first parameter group only (optimizer.param_groups[0]), so any other group keeps its old rate."""
import contextlib

import torch
import torch.nn as nn


class AdamW(torch.optim.Optimizer):
    # torch.optim.Optimizer with your adamw_update (PyTorch's class keeps the groups and the state).
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state.update(step=0, exp_avg=torch.zeros_like(p), exp_avg_sq=torch.zeros_like(p))
                state["step"] += 1
                new_p, state["exp_avg"], state["exp_avg_sq"] = adamw_update(
                    p, p.grad, state["exp_avg"], state["exp_avg_sq"], state["step"], group["lr"],
                    betas=group["betas"], eps=group["eps"], weight_decay=group["weight_decay"])
                p.copy_(new_p)


def param_groups(model, weight_decay):
    # Two parameter groups from your decay_names: decayed matrices, and everything else without decay.
    decay, no_decay = decay_names(model)
    named = dict(model.named_parameters())
    return [{"params": [named[n] for n in decay], "weight_decay": weight_decay},
            {"params": [named[n] for n in no_decay], "weight_decay": 0.0}]


def train_step(model, optimizer, x, y, lr, max_norm=1.0, precision=None, scaler=None):
    """One optimisation step of a language model; returns the batch's loss before the update.

    Args:
        model: nn.Module called as model(x, y) -> (logits, loss). optimizer: a torch.optim.Optimizer over
        its parameters (any number of groups). x, y: int64 tensors (B, T). lr: float, this step's learning
        rate. max_norm: float > 0, the gradient clipping threshold (global norm).
        precision: None, or an object whose precision.autocast() returns a context manager (a
        utils.precision.Precision): the forward, and only the forward, runs inside
        `with precision.autocast():`; backward, clipping and the update come after it, outside.
        scaler: None, or a loss scaler with torch.amp.GradScaler's methods (float16 needs one): the
        backward runs on scaler.scale(loss); scaler.unscale_(optimizer) comes before the clipping (which
        must see the true gradients); scaler.step(optimizer) then scaler.update() replace optimizer.step().
    Returns:
        A Python float: the loss (unscaled). Effects, in order: every group's "lr" set to lr; gradients
        cleared; forward; backward; gradients clipped to global norm max_norm; optimizer.step() (with a
        scaler: scale, backward, unscale_, clip, step, update).
    """
    optimizer.param_groups[0]["lr"] = lr
    optimizer.zero_grad(set_to_none=True)
    with precision.autocast() if precision is not None else contextlib.nullcontext():
        _, loss = model(x, y)
    if scaler is None:
        loss.backward()
    else:
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    if scaler is None:
        optimizer.step()
    else:
        scaler.step(optimizer)
        scaler.update()
    return loss.item()
