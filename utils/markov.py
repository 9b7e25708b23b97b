"""Sources with a known answer, and tiny instruments for tests of training code.

* ``random_chain`` / ``entropy_rate`` / ``sample_chain``: an order-1 Markov chain whose best possible
  next-token loss (its entropy rate) is known exactly;
* ``fit_on_chain(model, P, ...)``: train a language model ``model(idx, targets) -> (logits, loss)`` on
  samples of the chain with ``torch.optim.AdamW`` and return its validation loss. Tests build it where
  the student's code runs with ``probes.make("utils.markov.fit_on_chain", model, P, ...)``, so the
  model is trained where it lives and only numbers come back;
* ``BigramLM``: a one-table model with the ``(logits, loss)`` interface, for tests of a training step.
* ``BiasedBigramLM`` (two parameter tensors) and ``sgd_one_group_per_parameter(model, lr)`` (one
  parameter group per tensor): a training step must clip by the global norm and set every group's rate.
* ``parts_with(parts, ffn=..., rope=..., norm=...)``: a notebook's parts with ``BiasedFeedForward`` (Linear
  layers with biases), ``unrotated`` (a RoPE function that rotates nothing) or ``ShiftlessLayerNorm`` (a norm
  of another class), for tests of a model's build.
* ``linears_sharing_a_weight()``: two Linear layers with one weight, for tests of parameter names;
  ``HeadTiedToTable`` (a Linear head tied to a plain Parameter registered first), ``HeadTiedToScaledEmbedding``
  (a head tied to a subclass of nn.Embedding) and ``TiedUnderOtherNames`` (GPT-2's ``wte``/``lm_head`` beside an
  untied ``emb_proj``), for tests that decide by the modules, not by names or exact types.
* ``with_stale_gradients(model, value)``: gradients left over from an earlier backward, which a training step
  must clear before its own.

These are test instruments, not answers to any exercise: students receive this module as it is.
"""

from __future__ import annotations

import math
import random

import torch
import torch.nn.functional as F
from torch import nn


def random_chain(k: int, concentration: float = 0.5, seed: int = 0) -> torch.Tensor:
    """A (k, k) float64 transition matrix with rows drawn from a Dirichlet(concentration)."""
    g = torch.Generator().manual_seed(seed)
    gamma = torch._standard_gamma(torch.full((k, k), concentration, dtype=torch.float64), generator=g)
    return gamma / gamma.sum(dim=1, keepdim=True)


def entropy_rate(P: torch.Tensor, iterations: int = 2000) -> float:
    """The entropy rate in nats of the stationary chain with transition matrix P."""
    P = P.to(torch.float64)
    pi = torch.full((P.shape[0],), 1.0 / P.shape[0], dtype=torch.float64)
    for _ in range(iterations):
        pi = pi @ P
    rows = -(P * torch.where(P > 0, P.log(), torch.zeros_like(P))).sum(dim=1)
    return float(pi @ rows)


def sample_chain(P: torch.Tensor, n: int, seed: int) -> torch.Tensor:
    """n states of the chain (int64), starting from state 0."""
    rng = random.Random(seed)
    rows = P.to(torch.float64).cumsum(dim=1).tolist()
    out, state = [], 0
    for _ in range(n):
        u = rng.random()
        row = rows[state]
        state = next((j for j, c in enumerate(row) if u < c), len(row) - 1)
        out.append(state)
    return torch.tensor(out, dtype=torch.int64)


def fit_on_chain(model: nn.Module, P: torch.Tensor, steps: int = 150, block_size: int = 32, batch_size: int = 32,
                 lr: float = 3e-3, seed: int = 0, eval_batches: int = 8) -> dict:
    """Train ``model`` (called as ``model(x, y) -> (logits, loss)``) on the chain P; return numbers.

    Returns ``{"first_loss", "val_loss", "uniform"}`` in nats: the loss of the first training batch,
    the mean validation loss after training (fixed batches, evaluation mode, no gradients), ln K.
    """
    torch.manual_seed(seed)
    train = sample_chain(P, 40_000, seed + 1)
    val = sample_chain(P, 8_000, seed + 2)
    g = torch.Generator().manual_seed(seed)

    def batch(data, gen):
        starts = torch.randint(len(data) - block_size, (batch_size,), generator=gen)
        index = starts[:, None] + torch.arange(block_size)
        return data[index], data[index + 1]

    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    model.train()
    first = None
    for _ in range(steps):
        x, y = batch(train, g)
        _, loss = model(x, y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        first = float(loss.detach()) if first is None else first
    model.eval()
    vg = torch.Generator().manual_seed(1234)
    with torch.no_grad():
        losses = []
        for _ in range(eval_batches):
            x, y = batch(val, vg)
            logits, _ = model(x, None)
            losses.append(float(F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), y.reshape(-1))))
    model.train()
    return {"first_loss": first, "val_loss": sum(losses) / len(losses), "uniform": math.log(P.shape[0])}


class BigramLM(nn.Module):
    """``forward(idx, targets=None) -> (logits, loss)`` with ``logits = table[idx]`` (a (V, V) table) and
    ``loss = F.cross_entropy`` over every position (None without targets)."""

    def __init__(self, vocab_size: int, seed: int = 0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.table = nn.Parameter(torch.randn(vocab_size, vocab_size, generator=g))

    def forward(self, idx, targets=None):
        logits = self.table[idx]
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


class BiasedBigramLM(BigramLM):
    """``BigramLM`` with a second parameter, a (V,) ``bias`` added to every row of logits: two parameter
    tensors whose gradients differ in size, so clipping each one on its own and clipping by the global
    norm give different updates."""

    def __init__(self, vocab_size: int, seed: int = 0):
        super().__init__(vocab_size, seed)
        g = torch.Generator().manual_seed(seed + 1)
        self.bias = nn.Parameter(torch.randn(vocab_size, generator=g))

    def forward(self, idx, targets=None):
        logits = self.table[idx] + self.bias
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def sgd_one_group_per_parameter(model: nn.Module, lr: float, momentum: float = 0.0) -> torch.optim.SGD:
    """``torch.optim.SGD`` over ``model``'s parameters with one parameter group each (every group starting
    at ``lr``): for tests of code that must set the learning rate of every group, not only the first."""
    return torch.optim.SGD([{"params": [p]} for p in model.parameters()], lr=lr, momentum=momentum)


class ScaledLM(nn.Module):
    """Wraps a ``(logits, loss)`` model and multiplies its loss by ``scale`` (large gradients on demand)."""

    def __init__(self, model: nn.Module, scale: float):
        super().__init__()
        self.model, self.scale = model, scale

    def forward(self, idx, targets=None):
        logits, loss = self.model(idx, targets)
        return logits, (None if loss is None else loss * self.scale)


class DecayProbe(nn.Module):
    """A model with one parameter of each kind, named ``emb``, ``pos``, ``norm`` (LayerNorm), ``fc``
    (Linear with bias), ``rms`` (RMSNorm) and ``head`` (Linear without bias; tied to ``emb`` if ``tied``)."""

    def __init__(self, vocab_size: int, width: int, tied: bool = True):
        super().__init__()
        self.emb = nn.Embedding(vocab_size, width)
        self.pos = nn.Parameter(torch.zeros(3, width))
        self.norm = nn.LayerNorm(width)
        self.fc = nn.Linear(width, width)
        self.rms = nn.RMSNorm(width)
        self.head = nn.Linear(width, vocab_size, bias=False)
        if tied:
            self.head.weight = self.emb.weight

    def forward(self, idx):
        x = self.emb(idx) + self.pos[: idx.shape[1]]
        return self.head(self.rms(self.fc(self.norm(x))))


class BiasedFeedForward(nn.Module):
    """A feed-forward part (C -> d_ff -> C with a GELU) whose two layers, ``fc`` and ``proj``, have biases:
    a model built with it shows whether its initialisation sets every Linear bias to 0."""

    def __init__(self, n_embd: int, d_ff: int):
        super().__init__()
        self.fc, self.proj = nn.Linear(n_embd, d_ff), nn.Linear(d_ff, n_embd)

    def forward(self, x):
        return self.proj(F.gelu(self.fc(x)))


def unrotated(x: torch.Tensor) -> torch.Tensor:
    """A stand-in for a RoPE function that rotates nothing (returns its input): enough to build a model
    with positions="rope" and look at its attributes."""
    return x


class ShiftlessLayerNorm(nn.LayerNorm):
    """nn.LayerNorm without its shift (one parameter, weight): a norm class other than nn.LayerNorm, so a
    test can see which norms of a model were built from its parts."""

    def __init__(self, normalized_shape, eps: float = 1e-5):
        super().__init__(normalized_shape, eps=eps, bias=False)


def linears_sharing_a_weight() -> nn.Sequential:
    """nn.Sequential(Linear(3, 3), Linear(3, 3)) whose second layer's weight IS the first's: named_parameters()
    lists the shared weight once, as "0.weight" ("1.weight" is no name of it)."""
    first, second = nn.Linear(3, 3), nn.Linear(3, 3)
    second.weight = first.weight
    return nn.Sequential(first, second)


class HeadTiedToTable(nn.Module):
    """A plain embedding table ``W_E`` (an nn.Parameter, as in notebook 01, no nn.Embedding) registered first, and a
    Linear ``head`` (with a bias) whose weight IS ``W_E``: named_parameters() lists the shared weight as "W_E", a
    name that is no Linear's, although it is the weight of a Linear (and of no nn.Embedding)."""

    def __init__(self, vocab_size: int, width: int):
        super().__init__()
        self.W_E = nn.Parameter(torch.zeros(vocab_size, width))
        self.head = nn.Linear(width, vocab_size)
        self.head.weight = self.W_E


class ScaledEmbedding(nn.Embedding):
    """An nn.Embedding subclass that multiplies its vectors by sqrt(width), as "Attention is all you need" does."""

    def forward(self, idx):
        return super().forward(idx) * math.sqrt(self.embedding_dim)


class HeadTiedToScaledEmbedding(nn.Module):
    """A ``ScaledEmbedding`` ``emb`` (a subclass of nn.Embedding) and a Linear ``head`` without bias tied to it."""

    def __init__(self, vocab_size: int, width: int):
        super().__init__()
        self.emb = ScaledEmbedding(vocab_size, width)
        self.head = nn.Linear(width, vocab_size, bias=False)
        self.head.weight = self.emb.weight


class TiedUnderOtherNames(nn.Module):
    """GPT-2's names: an nn.Embedding ``wte`` with a Linear ``lm_head`` (no bias) tied to it, and between them an
    untied Linear ``emb_proj`` (no bias) whose name contains "emb": a rule that goes by names ("emb" in the name
    means an embedding) gets both the other way round."""

    def __init__(self, vocab_size: int, width: int):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, width)
        self.emb_proj = nn.Linear(width, width, bias=False)
        self.lm_head = nn.Linear(width, vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight


def with_stale_gradients(model: nn.Module, value: float = 1.0) -> nn.Module:
    """Gives every parameter of ``model`` a gradient full of ``value``, as a backward before a training step
    leaves them (an evaluation that computed gradients), and returns the model itself."""
    for p in model.parameters():
        p.grad = torch.full_like(p, value)
    return model


def parts_with(parts: dict, ffn: bool = False, rope: bool = False, norm: bool = False) -> dict:
    """A copy of a notebook's ``parts`` dictionary with ``BiasedFeedForward`` as its "ffn" (``ffn=True``),
    ``unrotated`` as its "rope" (``rope=True``) and/or ``ShiftlessLayerNorm`` as its "norm" (``norm=True``),
    built where the student's code runs."""
    changed = dict(parts)
    if ffn:
        changed["ffn"] = BiasedFeedForward
    if rope:
        changed["rope"] = unrotated
    if norm:
        changed["norm"] = ShiftlessLayerNorm
    return changed
