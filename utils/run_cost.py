"""What a training run will cost, predicted before it starts: notebook 10's accounting.

* **Time.** Training costs ``6 N + 12 L T d`` FLOPs per token (``N`` the parameters that multiply
  activations: weight matrices and the head, not embedding lookups; ``L`` layers, context ``T``, width
  ``d``). Divided by the device's peak FLOP/s for the run's precision and by an assumed **model FLOPs
  utilisation** (the share of the peak a small model really reaches; stated with every prediction), it
  gives seconds.
* **Memory.** 16 bytes per parameter (float32 weight, gradient and AdamW's two moments) plus the
  activations kept for the backward pass: ``s b h (34 + 5 a s / h)`` bytes per layer for a 16-bit layer
  (Korthikanti et al., 2022; the ``5 a s / h`` part is the attention matrices, which a fused attention
  kernel never stores), twice that in float32, plus the logits and their gradient (float32).

The GPU peaks are datasheet figures (dense, no sparsity), as in ``benchmarks/train_gpt.py``.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import torch

# Datasheet peaks of common GPUs, dense (no sparsity), TFLOP/s: (16-bit tensor-core peak, float32 matmul peak as
# PyTorch runs it: TF32 where the GPU has it, plain fp32 on a T4/V100). benchmarks/train_gpt.py reads the same table.
GPU_PEAK_TFLOPS = {"H200": (989.0, 495.0), "H100": (989.0, 495.0), "A100": (312.0, 156.0), "L4": (121.0, 60.0),
                   "A10": (125.0, 62.5), "T4": (65.0, 8.1), "V100": (125.0, 15.7)}
ASSUMED_UTILISATION = 0.3
"""The share of the peak a model of this course's size is assumed to reach (a guess, printed as such)."""


@dataclass(frozen=True)
class Shape:
    """A GPT's size as the accounting needs it, and one run of it."""

    matmul_params: int     # N: weight matrices and the head (not embedding lookups, biases, norm gains)
    params: int            # every parameter (for the 16 bytes each)
    n_layer: int
    n_head: int
    n_embd: int
    vocab_size: int
    block_size: int        # T
    batch_size: int        # B
    steps: int


@dataclass(frozen=True)
class Prediction:
    flops_per_token: int
    tokens: int
    peak_flops: float
    utilisation: float
    seconds: float
    state_bytes: int
    activation_bytes: int

    @property
    def memory_bytes(self) -> int:
        return self.state_bytes + self.activation_bytes


def shape_of(model: torch.nn.Module, *, n_layer, n_head, n_embd, vocab_size, block_size, batch_size, steps) -> Shape:
    """The ``Shape`` of a model (its parameters counted once each) and a run of it."""
    params = sum(p.numel() for p in model.parameters())
    lookups = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Embedding))
    small = sum(p.numel() for p in model.parameters() if p.dim() < 2)
    head = vocab_size * n_embd       # the tied head multiplies: it counts although it is the embedding
    return Shape(params - lookups - small + head, params, n_layer, n_head, n_embd, vocab_size, block_size, batch_size, steps)


def predict(shape: Shape, peak_flops: float, *, bytes_per_activation: int = 2,
            utilisation: float = ASSUMED_UTILISATION, fused_attention: bool = True) -> Prediction:
    """Predicted seconds and peak memory of a run of ``shape`` on a device of ``peak_flops`` FLOP/s."""
    s, b, h, a = shape.block_size, shape.batch_size, shape.n_embd, shape.n_head
    flops_per_token = 6 * shape.matmul_params + 12 * shape.n_layer * s * h
    tokens = shape.steps * b * s
    seconds = flops_per_token * tokens / (peak_flops * utilisation)
    per_layer = s * b * h * (34 + (0 if fused_attention else 5 * a * s / h)) * bytes_per_activation / 2
    logits = 2 * 4 * b * s * shape.vocab_size
    return Prediction(flops_per_token, tokens, peak_flops, utilisation, seconds, 16 * shape.params,
                      int(shape.n_layer * per_layer + logits))


def gpu_peak_flops(name: str, dtype: torch.dtype) -> float | None:
    """The datasheet peak of a GPU whose name contains a key of ``GPU_PEAK_TFLOPS``, for ``dtype``."""
    for key, (half, single) in GPU_PEAK_TFLOPS.items():
        if key in name:
            return (half if dtype in (torch.float16, torch.bfloat16) else single) * 1e12
    return None


def matmul_rates(rows: int, inner: int, cols: int, device, dtype: torch.dtype = torch.float32, repeats: int = 5,
                 warmup: int = 1) -> list[float]:
    """FLOP/s of ``repeats`` timed products (rows x inner) @ (inner x cols) on ``device``, after ``warmup``
    untimed ones, sorted from slowest to fastest."""
    a = torch.randn(rows, inner, device=device, dtype=dtype)
    b = torch.randn(inner, cols, device=device, dtype=dtype)
    synchronize = torch.cuda.synchronize if torch.device(device).type == "cuda" else (lambda: None)
    rates = []
    for step in range(warmup + repeats):
        synchronize()
        start = time.perf_counter()
        a @ b
        synchronize()
        if step >= warmup:
            rates.append(2 * rows * inner * cols / (time.perf_counter() - start))
    return sorted(rates)


def measured_peak_flops(device, dtype: torch.dtype = torch.float32, size: int = 512, repeats: int = 5) -> float:
    """The median FLOP/s of ``repeats`` square matmuls on ``device`` (for a device with no datasheet entry)."""
    return statistics.median(matmul_rates(size, size, size, device, dtype, repeats))


def peak_flops(device, dtype: torch.dtype) -> tuple[float, str]:
    """The peak FLOP/s of ``device`` for ``dtype``, and where the figure comes from."""
    device = torch.device(device)
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
        peak = gpu_peak_flops(name, dtype)
        if peak is not None:
            return peak, f"{name} datasheet peak for {str(dtype).replace('torch.', '')}"
    return measured_peak_flops(device), f"measured: median of 5 matmuls of 512 x 512 on the {device.type.upper()}"


def describe(prediction: Prediction, where: str) -> str:
    """One line: the predicted time and memory, and the assumptions behind them."""
    return (f"predicted on {where}: {prediction.seconds:.0f} s ({prediction.flops_per_token / 1e6:.1f} MFLOP per token x "
            f"{prediction.tokens:,} tokens at {prediction.utilisation:.0%} of {prediction.peak_flops / 1e12:.3g} TFLOP/s), "
            f"memory {prediction.memory_bytes / 2**30:.2f} GiB (16 bytes x parameters = {prediction.state_bytes / 2**30:.2f} GiB "
            f"+ activations and logits {prediction.activation_bytes / 2**30:.2f} GiB)")
