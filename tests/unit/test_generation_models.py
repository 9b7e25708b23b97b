"""Notebook 13's instruments (utils/generation_models.py): each gives the logits it documents, tells a cache
that follows its sequences from one that does not, and counts what it says it counts."""

from __future__ import annotations

import pytest
import torch

from utils.generation_models import CachedTableLM, LogitsOnly, PrefixTableLM, RecomputedCache, TableLM, draw_counts
from utils.tiny_gpt import TinyGPT


def test_table_lm_gives_the_table_rows_and_counts_its_calls():
    table = torch.randn(5, 5)
    model = TableLM(table.tolist())
    ids = torch.tensor([[1, 4, 0]])
    assert torch.equal(model(ids), table[ids])
    assert model.calls == [[1, 3]]
    with pytest.raises(TypeError):
        model(ids[0])


def test_a_cache_fed_one_token_at_a_time_gives_the_cache_free_logits():
    model = PrefixTableLM(torch.randn(6, 6).tolist(), block_size=8)
    ids = torch.tensor([[1, 2, 3, 4, 5], [0, 0, 5, 1, 2]])
    full, none = model(ids)
    assert none is None
    logits, caches = model(ids[:, :2], [None])
    steps = [logits]
    for t in range(2, 5):
        logits, caches = model(ids[:, t:t + 1], caches)
        steps.append(logits)
    assert torch.allclose(torch.cat(steps, dim=1), full, atol=1e-6)
    assert caches[0]["k"].shape == (2, 1, 5, 1)


def test_a_cache_of_another_sequence_gives_other_logits_and_a_wrong_batch_raises():
    model = PrefixTableLM(torch.randn(6, 6, generator=torch.Generator().manual_seed(0)).tolist(), block_size=8)
    _, caches = model(torch.tensor([[1, 2], [3, 4]]), [None])
    swapped = [{key: t.flip(0) for key, t in caches[0].items()}]
    right, _ = model(torch.tensor([[5], [5]]), caches)
    wrong, _ = model(torch.tensor([[5], [5]]), swapped)
    assert not torch.allclose(right, wrong)
    with pytest.raises(ValueError, match="reorder"):
        model(torch.tensor([[5], [5], [5]]), caches)
    with pytest.raises(ValueError, match="block_size"):
        model(torch.tensor([[1] * 7, [2] * 7]), caches)


def test_recomputed_cache_records_modes_and_wraps_a_tinygpt():
    gpt = TinyGPT(7, 8, 2, 1, 16, seed=0).eval()
    wrapped = RecomputedCache(gpt, 16).eval()
    ids = torch.tensor([[1, 2, 3]])
    with torch.no_grad():
        logits, caches = wrapped(ids[:, :2], [None])
        last, _ = wrapped(ids[:, 2:], caches)
    assert torch.allclose(last, gpt(ids)[0][:, 2:], atol=1e-6)
    assert wrapped.modes[0] == {"grad_enabled": False, "training": False}
    wrapped.train()
    wrapped(ids)
    assert wrapped.modes[-1]["training"] is True
    assert torch.equal(LogitsOnly(gpt)(ids), gpt(ids)[0])
    assert CachedTableLM(torch.zeros(3, 3).tolist(), 4).block_size == 4


def test_draw_counts_counts_each_draw_with_its_own_seed():
    def sampler(target, draft, prompt, n_draft, new, generator):
        drawn = torch.randint(0, 3, (new,), generator=generator)
        target(prompt[None])
        return torch.cat([prompt, drawn])
    target, draft = TableLM(torch.zeros(3, 3).tolist()), TableLM(torch.zeros(3, 3).tolist())
    seen = draw_counts(sampler, target, draft, torch.tensor([0, 1]), 2, 2, 5, 30)
    assert sum(seen["counts"].values()) == 30 and seen["target_calls"] == 30 and seen["draft_calls"] == 0
    want = {}
    for i in range(30):
        key = " ".join(map(str, torch.randint(0, 3, (2,), generator=torch.Generator().manual_seed(5 + i)).tolist()))
        want[key] = want.get(key, 0) + 1
    assert seen["counts"] == want
