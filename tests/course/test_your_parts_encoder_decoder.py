"""Notebook 12's "your parts" switch (utils.your_parts.carry_into_encoder_decoder).

The notebook's own Seq2Seq (its solution cells) is the model; the student's saved notebooks 05 and 07 are
small notebooks written here, each with an exercise cell and a visible test cell, so every path shows in a
second: correct parts (separate and fused projections) are carried in and give the same logits; a part whose
visible tests pass but that computes something else, a part that does not fit the model's call, and missing
files all fall back, leaving the model (and the notebook's random stream) as they were.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from autograder.course import conventions
from autograder.course.solution_source import load_solution
from utils import your_parts

LAYER_NORM = '''
import torch, torch.nn as nn
class LayerNorm(nn.Module):
    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.eps, self.weight, self.bias = eps, nn.Parameter(torch.ones(d_model)), nn.Parameter(torch.zeros(d_model))
    def forward(self, x):
        mu = x.mean(-1, keepdim=True)
        var = ((x - mu) ** 2).mean(-1, keepdim=True) * VARIANCE_SCALE
        return (x - mu) / torch.sqrt(var + self.eps) * self.weight + self.bias
'''

ATTENTION = '''
import torch, torch.nn as nn, torch.nn.functional as F
class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_head, bias=True):
        super().__init__()
        self.n_head = n_head
        if FUSED:
            self.qkv_proj = nn.Linear(d_model, 3 * d_model, bias=bias)
        else:
            self.q_proj, self.k_proj, self.v_proj = (nn.Linear(d_model, d_model, bias=bias) for _ in range(3))
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)
    def forward(self, x, causal=False):
        B, T, C = x.shape
        q, k, v = self.qkv_proj(x).chunk(3, -1) if FUSED else (self.q_proj(x), self.k_proj(x), self.v_proj(x))
        q, k, v = (t.view(B, T, self.n_head, -1).transpose(1, 2) for t in (q, k, v))
        out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        return self.out_proj(out.transpose(1, 2).reshape(B, T, C))
'''


def _notebook(path: Path, exercise: str, source: str) -> None:
    cells = [{"cell_type": "code", "metadata": {"nbgrader": {"solution": True, "grade_id": exercise}},
              "source": source, "outputs": [], "execution_count": None},
             {"cell_type": "code", "metadata": {"nbgrader": {"grade": True, "grade_id": f"test_{exercise}"}},
              "source": f"assert {exercise} is not None", "outputs": [], "execution_count": None}]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))


def _course(tmp_path: Path, variance_scale: float = 1.0, fused: bool = False) -> dict:
    _notebook(tmp_path / "07_block" / "block.ipynb", "LayerNorm", f"VARIANCE_SCALE = {variance_scale}\n" + LAYER_NORM)
    _notebook(tmp_path / "05_multi_head" / "multi_head.ipynb", "MultiHeadAttention", f"FUSED = {fused}\n" + ATTENTION)
    return {"05": tmp_path / "05_multi_head" / "multi_head.ipynb", "07": tmp_path / "07_block" / "block.ipynb"}


@pytest.fixture(scope="module")
def seq2seq_class():
    assignment = conventions.assignment("12_encoder_decoder")
    namespace: dict = {}
    for cell in load_solution(assignment).cells:
        if cell.metadata.get("nbgrader", {}).get("solution"):
            exec(cell.source, namespace)
    return namespace["Seq2Seq"]


def _model(seq2seq_class):
    torch.manual_seed(0)
    model = seq2seq_class(14, 16, 2, 2, 32, bos_id=1)
    with torch.no_grad():
        for module in model.modules():      # norms away from (1, 0), so that a wrong norm would show
            if isinstance(module, nn.LayerNorm):
                module.weight.normal_(1.0, 0.5), module.bias.normal_(0.0, 0.5)
    return model


def _logits(model):
    generator = torch.Generator().manual_seed(3)
    src, tgt = torch.randint(14, (2, 6), generator=generator), torch.randint(14, (2, 4), generator=generator)
    padding = torch.tensor([[False] * 6, [False, False, True, True, True, True]])
    with torch.no_grad():
        return model(src, tgt, padding)


@pytest.mark.parametrize("fused", [False, True])
def test_correct_parts_are_carried_in_with_the_same_logits(tmp_path, seq2seq_class, fused):
    model = _model(seq2seq_class)
    state = torch.get_rng_state()
    carried, line = your_parts.carry_into_encoder_decoder(model, _course(tmp_path, fused=fused))
    assert line.startswith("your parts: yours: LayerNorm (07), decoder self-attention (05) | fell back: none"), line
    assert torch.equal(torch.get_rng_state(), state)
    assert all(type(block.self_attn) is your_parts.SelfAttentionPart for block in carried.decoder)
    assert all(type(block.self_attn) is nn.MultiheadAttention for block in carried.encoder)
    assert not any(type(m) is nn.LayerNorm for m in carried.modules())
    torch.testing.assert_close(_logits(carried), _logits(model), atol=1e-5, rtol=1e-5)


def test_a_part_with_other_logits_falls_back(tmp_path, seq2seq_class):
    model = _model(seq2seq_class)
    carried, line = your_parts.carry_into_encoder_decoder(model, _course(tmp_path, variance_scale=1.5))
    assert "LayerNorm (07) (the model gives other logits with it and the same weights; PyTorch's instead)" in line, line
    assert "yours: decoder self-attention (05)" in line, line
    assert sum(type(m) is nn.LayerNorm for m in carried.modules()) == sum(type(m) is nn.LayerNorm for m in model.modules())


def test_attention_part_refuses_calls_it_cannot_serve():
    part = your_parts.SelfAttentionPart(nn.Identity())
    x = torch.randn(1, 3, 4)
    with pytest.raises(ValueError):
        part(x, x, x, key_padding_mask=torch.zeros(1, 3, dtype=torch.bool))
    with pytest.raises(ValueError):
        part(x, x, x, attn_mask=torch.ones(3, 3, dtype=torch.bool).tril())     # not the causal mask
    with pytest.raises(ValueError):
        part(x, torch.randn(1, 5, 4), torch.randn(1, 5, 4))                     # cross-attention


def test_causal_mask_forms_are_recognised():
    above = torch.ones(3, 3, dtype=torch.bool).triu(1)
    float_mask = torch.zeros(3, 3).masked_fill(above, float("-inf"))
    assert your_parts._is_causal_mask(above, 3, False) is True
    assert your_parts._is_causal_mask(float_mask, 3, False) is True
    assert your_parts._is_causal_mask(None, 3, True) is True
    assert your_parts._is_causal_mask(None, 3, False) is False
    assert your_parts._is_causal_mask(float_mask + 1.0, 3, False) is None


def test_untouched_notebooks_fall_back_and_return_the_model(tmp_path, seq2seq_class):
    model = _model(seq2seq_class)
    stubs = {"05": tmp_path / "missing" / "multi_head.ipynb", "07": tmp_path / "missing" / "block.ipynb"}
    carried, line = your_parts.carry_into_encoder_decoder(model, stubs)
    assert carried is model
    assert line.startswith("your parts: yours: none | fell back: LayerNorm (07) (no file"), line
    assert "decoder self-attention (05) (no file" in line and "not carried: the encoder's self-attention" in line, line


def test_attention_that_makes_its_mask_on_the_cpu_falls_back_before_it_stops_a_gpu_run(tmp_path, seq2seq_class):
    # Right on a CPU, so it would pass every logit check here; on a GPU its CPU mask meets GPU scores.
    notebooks = _course(tmp_path)
    mask_on_cpu = ATTENTION.replace(
        "out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)",
        "out = F.scaled_dot_product_attention(q, k, v, attn_mask=~torch.ones(T, T, dtype=torch.bool).triu(1) if causal else None)")
    assert mask_on_cpu != ATTENTION
    _notebook(notebooks["05"], "MultiHeadAttention", "FUSED = False\n" + mask_on_cpu)
    model = _model(seq2seq_class)
    carried, line = your_parts.carry_into_encoder_decoder(model, notebooks)
    assert "decoder self-attention (05) (your MultiHeadAttention makes a tensor off x's device" in line, line
    assert "yours: LayerNorm (07)" in line, line
    assert all(type(block.self_attn) is nn.MultiheadAttention for block in carried.decoder)
