"""utils.precision: the precision of a run is decided by the device's compute capability (never by
emulated bfloat16), the CPU and MPS get float32, and one environment setting runs the GPU
configuration on the CPU with bfloat16 autocast and a few steps."""

from __future__ import annotations

import pytest
import torch

from utils import precision
from utils.precision import Precision, choose_precision, gpu_configuration, steps_for


@pytest.fixture(autouse=True)
def _not_simulated(monkeypatch):
    monkeypatch.delenv(precision.GPU_CONFIG_ON_CPU, raising=False)


def _fake_cuda(monkeypatch, capability):
    """A CUDA device of ``capability`` whose is_bf16_supported() says yes (emulation counts, as on a T4)."""
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: capability)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: True)


@pytest.mark.parametrize("capability, dtype, scaler", [
    ((7, 0), torch.float16, True),    # V100
    ((7, 5), torch.float16, True),    # T4 (Colab's free GPU): emulated bfloat16 must not be chosen
    ((8, 0), torch.bfloat16, False),  # A100
    ((8, 6), torch.bfloat16, False),  # RTX 30xx, A10
    ((9, 0), torch.bfloat16, False),  # H100
])
def test_cuda_precision_follows_the_compute_capability(monkeypatch, capability, dtype, scaler):
    _fake_cuda(monkeypatch, capability)
    chosen = choose_precision(torch.device("cuda"))
    assert (chosen.device_type, chosen.dtype, chosen.needs_grad_scaler) == ("cuda", dtype, scaler)
    assert f"{capability[0]}.{capability[1]}" in chosen.reason
    assert ("GradScaler" in chosen.reason) == scaler


def test_the_cuda_rule_ignores_the_simulation_setting(monkeypatch):
    _fake_cuda(monkeypatch, (7, 5))
    monkeypatch.setenv(precision.GPU_CONFIG_ON_CPU, "1")
    assert choose_precision("cuda:0").dtype is torch.float16


def test_cpu_computes_in_float32_without_autocast():
    chosen = choose_precision(torch.device("cpu"))
    assert (chosen.device_type, chosen.dtype, chosen.needs_grad_scaler) == ("cpu", torch.float32, False)
    assert not torch.is_autocast_enabled("cpu")
    with chosen.autocast():
        assert not torch.is_autocast_enabled("cpu")
        assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype is torch.float32
    assert not chosen.grad_scaler().is_enabled()


def test_mps_computes_in_float32_without_querying_the_gpu(monkeypatch):
    def no_query(*args, **kwargs):
        raise AssertionError("the MPS rule must not depend on a device query")
    monkeypatch.setattr(torch.cuda, "get_device_capability", no_query)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", no_query)
    chosen = choose_precision(torch.device("mps"))
    assert (chosen.device_type, chosen.dtype, chosen.needs_grad_scaler) == ("mps", torch.float32, False)
    assert "MPS" in chosen.reason


def test_the_setting_runs_the_gpu_path_on_the_cpu_in_bfloat16(monkeypatch):
    assert not gpu_configuration("cpu") and gpu_configuration(torch.device("cuda"))
    assert steps_for(3000) == 3000
    monkeypatch.setenv(precision.GPU_CONFIG_ON_CPU, "1")
    assert gpu_configuration("cpu")
    assert steps_for(3000) == precision.SMOKE_STEPS and steps_for(3000, 5) == 5 and steps_for(2, 5) == 2
    chosen = choose_precision("cpu")
    assert (chosen.device_type, chosen.dtype, chosen.needs_grad_scaler) == ("cpu", torch.bfloat16, False)
    assert precision.GPU_CONFIG_ON_CPU in chosen.reason
    with chosen.autocast():
        assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype is torch.bfloat16
    monkeypatch.setenv(precision.GPU_CONFIG_ON_CPU, "0")
    assert not gpu_configuration("cpu") and choose_precision("cpu").dtype is torch.float32


def test_smoke_sized_shrinks_a_configuration_only_when_simulated(monkeypatch):
    run = dict(batch_size=64, max_steps=3000, max_lr=1e-3)
    assert precision.smoke_sized(run, batch_size=4, max_steps=12) == run
    monkeypatch.setenv(precision.GPU_CONFIG_ON_CPU, "1")
    assert precision.smoke_sized(run, batch_size=4, max_steps=12) == dict(batch_size=4, max_steps=12, max_lr=1e-3)
    assert run == dict(batch_size=64, max_steps=3000, max_lr=1e-3)            # the original is left alone
    with pytest.raises(KeyError, match="max_step"):
        precision.smoke_sized(run, max_step=12)


def test_simulated_float16_scales_the_loss_on_the_cpu():
    chosen = choose_precision("cpu", simulate="float16")
    assert (chosen.dtype, chosen.needs_grad_scaler) == (torch.float16, True)
    weight = torch.nn.Parameter(torch.ones(2))
    optimizer = torch.optim.SGD([weight], lr=0.1)
    scaler = chosen.grad_scaler()
    assert scaler.is_enabled()
    scales = []
    for _ in range(2):
        optimizer.zero_grad()
        with chosen.autocast():
            loss = (torch.ones(1, 2) @ weight.unsqueeze(1)).sum()
        assert loss.dtype is torch.float16
        scales.append(scaler.get_scale())
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    # The first scale, 2**16, overflows float16 (largest 65504): that step is skipped and the scale halved;
    # the second step is taken with the unscaled gradient, 1.
    assert scales == [2.0**16, 2.0**15], scales
    assert torch.allclose(weight.detach(), torch.full((2,), 0.9)), weight


def test_simulation_is_refused_off_the_cpu_and_for_unknown_dtypes():
    with pytest.raises(ValueError, match="CPU"):
        choose_precision("cuda", simulate="bfloat16")
    with pytest.raises(ValueError, match="float16"):
        choose_precision("cpu", simulate="float8")


def test_precision_is_a_frozen_record():
    chosen = choose_precision("cpu")
    assert isinstance(chosen, Precision) and str(chosen) == chosen.reason
    with pytest.raises(AttributeError):
        chosen.dtype = torch.float16


def test_cpu_peak_memory_sees_a_large_allocation():
    precision.reset_peak_memory("cpu")
    before = precision.peak_memory_bytes("cpu")
    block = torch.ones(64 * 2**20 // 4)   # 64 MiB, written so the pages are resident
    assert block.sum().item() > 0
    after = precision.peak_memory_bytes("cpu")
    del block
    assert after - before >= 48 * 2**20, (before, after)
    assert "peak resident memory" in precision.peak_memory_source("cpu")


def test_cuda_peak_memory_reads_the_allocator(monkeypatch):
    calls = []
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", lambda device=None: calls.append(device))
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda device=None: 12345)
    precision.reset_peak_memory("cuda")
    assert calls and precision.peak_memory_bytes("cuda") == 12345
    assert "max_memory_allocated" in precision.peak_memory_source("cuda")
