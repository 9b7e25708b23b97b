"""utils.run_cost: notebook 10's accounting of a run's time and memory, and notebook 09's GPU run on a T4."""

from __future__ import annotations

import torch

from utils import run_cost


def test_flops_time_and_memory_follow_the_formulas():
    shape = run_cost.Shape(matmul_params=1000, params=1200, n_layer=2, n_head=4, n_embd=8, vocab_size=10,
                           block_size=16, batch_size=3, steps=5)
    prediction = run_cost.predict(shape, peak_flops=1e6, utilisation=0.5)
    assert prediction.flops_per_token == 6 * 1000 + 12 * 2 * 16 * 8
    assert prediction.tokens == 5 * 3 * 16
    assert prediction.seconds == prediction.flops_per_token * prediction.tokens / (1e6 * 0.5)
    assert prediction.state_bytes == 16 * 1200
    per_layer = 16 * 3 * 8 * 34                    # s b h 34 bytes in 16 bits, the attention matrices not stored
    assert prediction.activation_bytes == 2 * per_layer + 2 * 4 * 3 * 16 * 10
    unfused = run_cost.predict(shape, 1e6, fused_attention=False, bytes_per_activation=4)
    assert unfused.activation_bytes == int(2 * 16 * 3 * 8 * (34 + 5 * 4 * 16 / 8) * 2 + 2 * 4 * 3 * 16 * 10)


def test_shape_counts_the_tied_head_and_not_the_lookups():
    model = torch.nn.Module()
    model.emb = torch.nn.Embedding(10, 8)
    model.fc = torch.nn.Linear(8, 8)              # 64 weights that multiply, 8 biases that do not
    shape = run_cost.shape_of(model, n_layer=1, n_head=2, n_embd=8, vocab_size=10, block_size=4, batch_size=2, steps=1)
    assert shape.params == 80 + 72
    assert shape.matmul_params == 64 + 10 * 8


def test_gpu_peaks_by_name_and_dtype():
    assert run_cost.gpu_peak_flops("Tesla T4", torch.float16) == 65e12
    assert run_cost.gpu_peak_flops("Tesla T4", torch.float32) == 8.1e12
    assert run_cost.gpu_peak_flops("NVIDIA A100-SXM4-40GB", torch.bfloat16) == 312e12
    assert run_cost.gpu_peak_flops("Some New GPU", torch.float16) is None
    assert run_cost.measured_peak_flops("cpu", size=64, repeats=3) > 0


def test_notebook_09_gpu_run_fits_a_t4():
    # Notebook 09's GPU configuration: 6 layers of 384, 6 heads, T = 256, B = 64, 3000 steps, a character
    # vocabulary of at most a few thousand (the standard library's sources): at most 10 minutes and 15 GB.
    n_embd, n_layer, vocab = 384, 6, 3000
    matmul = n_layer * 12 * n_embd ** 2 + vocab * n_embd
    params = matmul + 256 * n_embd + n_layer * (4 * n_embd) + 2 * n_embd
    shape = run_cost.Shape(matmul, params, n_layer, 6, n_embd, vocab, 256, 64, 3000)
    t4 = run_cost.predict(shape, run_cost.gpu_peak_flops("T4", torch.float16))
    assert t4.seconds <= 600, t4
    assert t4.memory_bytes <= 15e9, t4
