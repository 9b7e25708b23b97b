"""Which number format a training run computes in, and the GPU configuration's switch for CI.

``choose_precision(device)`` decides from the device alone:

* CUDA with compute capability 8.0 or more (A100, RTX 30xx/40xx, L4, H100): bfloat16 autocast. Its
  exponent range is float32's, so gradients do not underflow and no loss scaling is needed.
* CUDA below 8.0 (Colab's free T4 is 7.5, V100 is 7.0): float16 autocast with a ``GradScaler``. These
  GPUs have float16 tensor cores but no native bfloat16: ``torch.cuda.is_bf16_supported()`` answers
  yes on them by default because it counts *emulation*, which runs bfloat16 through float32 units and
  is slower than float16. So the capability decides, never that function.
* CPU: float32 (CPU autocast to bfloat16 only pays on CPUs with bfloat16 matrix units).
* Apple's MPS: float32 (see ``_mps_precision`` for why).

``COURSE_GPU_CONFIG_ON_CPU=1`` is the one setting that makes a notebook's GPU configuration
(``if gpu_configuration(device):``) run on the CPU, in CI: ``gpu_configuration`` answers True,
``choose_precision`` takes the GPU path with bfloat16 autocast on the CPU, and ``steps_for`` and
``smoke_sized`` shrink the GPU's step counts and batches to a few small ones, so a typo in a branch no maintainer can run fails the suite.

``reset_peak_memory(device)`` / ``peak_memory_bytes(device)`` measure a run's peak memory; what is
measured depends on the device (``peak_memory_source`` says it in words).
"""

from __future__ import annotations

import contextlib
import os
import resource
import sys
from dataclasses import dataclass
from pathlib import Path

import torch

GPU_CONFIG_ON_CPU = "COURSE_GPU_CONFIG_ON_CPU"
"""Environment variable: ``1`` runs the GPU configuration on the CPU, a few steps (for CI)."""

SMOKE_STEPS = 3
"""Steps a simulated GPU configuration runs when the notebook gives no other count."""

# The first compute capability with bfloat16 tensor cores (Ampere).
NATIVE_BFLOAT16_CAPABILITY = (8, 0)

_SIMULATED_DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclass(frozen=True)
class Precision:
    """The number format of a run: ``with p.autocast(): loss = ...`` and ``p.grad_scaler()``."""

    device_type: str          # "cuda" | "cpu" | "mps"
    dtype: torch.dtype        # compute dtype under autocast; torch.float32 means no autocast
    needs_grad_scaler: bool   # True only for float16
    reason: str               # one line for the notebook to print

    def autocast(self):
        """``torch.autocast(device_type, dtype)``, or a context that does nothing for float32."""
        if self.dtype is torch.float32:
            return contextlib.nullcontext()
        return torch.autocast(self.device_type, dtype=self.dtype)

    def grad_scaler(self) -> torch.amp.GradScaler:
        """A ``GradScaler`` that scales only for float16 (disabled, a pass-through, otherwise)."""
        return torch.amp.GradScaler(self.device_type, enabled=self.needs_grad_scaler)

    def __str__(self) -> str:
        return self.reason


def simulating_gpu_on_cpu() -> bool:
    """True when ``COURSE_GPU_CONFIG_ON_CPU=1``: the GPU configuration runs on the CPU, a few steps."""
    return os.environ.get(GPU_CONFIG_ON_CPU) == "1"


def gpu_configuration(device) -> bool:
    """True when a notebook should run its GPU configuration: on CUDA, or when simulated on the CPU."""
    return torch.device(device).type == "cuda" or simulating_gpu_on_cpu()


def steps_for(gpu_steps: int, smoke_steps: int = SMOKE_STEPS) -> int:
    """How many steps the GPU configuration runs: ``gpu_steps``, or ``smoke_steps`` when simulated.

    Under ``COURSE_GPU_CONFIG_ON_CPU=1`` the same code path runs with a few steps (also on a CUDA
    machine, where the setting asks for a smoke test, not a full run).
    """
    return min(gpu_steps, smoke_steps) if simulating_gpu_on_cpu() else gpu_steps


def smoke_sized(config: dict, **smoke_values) -> dict:
    """``config`` as it is, or with ``smoke_values`` put in when the GPU configuration is simulated.

    ``RUN = smoke_sized(dict(batch_size=64, max_steps=3000, ...), batch_size=4, max_steps=12)``: on a
    GPU the run is the one written; under ``COURSE_GPU_CONFIG_ON_CPU=1`` the same code runs a few small
    steps on the CPU. A smoke value for a key the configuration lacks is a typo: ``KeyError``.
    """
    unknown = sorted(set(smoke_values) - set(config))
    if unknown:
        raise KeyError(f"smoke values for keys the configuration does not have: {unknown}")
    return dict(config, **smoke_values) if simulating_gpu_on_cpu() else dict(config)


def choose_precision(device, *, simulate: str | None = None) -> Precision:
    """The precision a run on ``device`` computes in (see the module docstring for the rule).

    ``simulate`` ("bfloat16" or "float16") makes the CPU take the GPU path with that autocast dtype
    (float16 with a ``GradScaler``); ``COURSE_GPU_CONFIG_ON_CPU=1`` means ``simulate="bfloat16"``.
    Simulation is for the CPU only: asking for it on another device raises ``ValueError``.
    """
    device = torch.device(device)
    if simulate is None and device.type == "cpu" and simulating_gpu_on_cpu():
        simulate = "bfloat16"
    if simulate is not None:
        return _simulated_precision(device, simulate)
    if device.type == "cuda":
        return _cuda_precision(device)
    if device.type == "mps":
        return _mps_precision()
    return Precision(device.type, torch.float32, False, f"float32 on the {device.type.upper()}: no autocast")


def _simulated_precision(device: torch.device, simulate: str) -> Precision:
    if device.type != "cpu":
        raise ValueError(f"simulate= runs the GPU path on the CPU; the device here is {device.type!r}")
    if simulate not in _SIMULATED_DTYPES:
        raise ValueError(f"simulate must be one of {sorted(_SIMULATED_DTYPES)}, got {simulate!r}")
    dtype = _SIMULATED_DTYPES[simulate]
    scaler = " + GradScaler" if dtype is torch.float16 else ""
    return Precision("cpu", dtype, dtype is torch.float16,
                     f"{simulate} autocast{scaler} on the CPU: the GPU configuration simulated "
                     f"({GPU_CONFIG_ON_CPU}=1 or simulate=)")


def _cuda_precision(device: torch.device) -> Precision:
    capability = tuple(torch.cuda.get_device_capability(device))
    shown = f"{capability[0]}.{capability[1]}"
    if capability >= NATIVE_BFLOAT16_CAPABILITY:
        return Precision("cuda", torch.bfloat16, False,
                         f"bfloat16 autocast: compute capability {shown} >= 8.0 has native bfloat16")
    return Precision("cuda", torch.float16, True,
                     f"float16 + GradScaler: compute capability {shown} < 8.0 has no native bfloat16")


def _mps_precision() -> Precision:
    # float32 on Apple's GPUs, on purpose. torch.autocast("mps") exists only from torch 2.5 (the course
    # supports 2.2 and later), bfloat16 there also needs macOS 14, and float16 would need a GradScaler
    # whose MPS kernels are as recent; float32 runs the same on every torch and macOS a student may
    # have, and the course's models are small enough that MPS in float32 is already quick.
    return Precision("mps", torch.float32, False,
                     "float32 on Apple's GPU (MPS): autocast there needs torch >= 2.5, so none is used")


# --- peak memory -----------------------------------------------------------------------------------

_CLEAR_REFS = Path("/proc/self/clear_refs")
_STATUS = Path("/proc/self/status")
_cpu_peak_resettable = False  # set when a reset on the CPU has worked (Linux clear_refs)


def reset_peak_memory(device) -> None:
    """Start a new peak-memory measurement on ``device`` (see ``peak_memory_source``)."""
    global _cpu_peak_resettable
    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    elif device.type == "cpu":
        try:
            _CLEAR_REFS.write_text("5")  # Linux: resets the process's peak resident set size (VmHWM)
            _cpu_peak_resettable = True
        except OSError:
            _cpu_peak_resettable = False


def peak_memory_bytes(device) -> int:
    """The peak memory since ``reset_peak_memory(device)``, in bytes (what it counts: ``peak_memory_source``)."""
    device = torch.device(device)
    if device.type == "cuda":
        return int(torch.cuda.max_memory_allocated(device))
    if device.type == "mps":
        return int(torch.mps.driver_allocated_memory())
    high_water = _linux_high_water_mark()
    if high_water is not None:
        return high_water
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)  # bytes on macOS, KiB elsewhere


def peak_memory_source(device) -> str:
    """What ``peak_memory_bytes(device)`` measures, in words, for a notebook's memory report."""
    device = torch.device(device)
    if device.type == "cuda":
        return "peak GPU memory held by tensors (torch.cuda.max_memory_allocated), since the reset"
    if device.type == "mps":
        return "memory the MPS driver holds now (torch.mps.driver_allocated_memory; MPS keeps no peak)"
    if _cpu_peak_resettable and _linux_high_water_mark() is not None:
        return "peak resident memory of the whole process (Linux VmHWM: Python and libraries too), since the reset"
    return "peak resident memory of the whole process since it started (no reset is possible here)"


def _linux_high_water_mark() -> int | None:
    """VmHWM of /proc/self/status in bytes, or None off Linux."""
    try:
        for line in _STATUS.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None
