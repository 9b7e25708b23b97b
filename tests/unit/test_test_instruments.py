"""Instruments the hidden tests hand to the student's code (notebook 01's utils.toy_models.TimeMajorLM,
utils.recording.grad_mode_after and attributes_set_by_calls; later notebooks' such as
utils.memory.result_has_shared_elements): each tells the right answer from the mistake it was built for."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from utils.memory import result_has_shared_elements, results_share_memory
from utils.recording import RecordingPairLM, attributes_set_by_calls, grad_mode_after, hooks_left
from utils.toy_models import TimeMajorLM


def test_time_major_logits_equal_the_table_rows_and_refuse_view():
    model = TimeMajorLM(6, dtype=torch.float64)
    with torch.no_grad():
        model.table.copy_(torch.randn(6, 6, dtype=torch.float64))
    ids = torch.randint(0, 6, (3, 4))
    logits = model(ids)
    assert logits.shape == (3, 4, 6) and not logits.is_contiguous()
    assert torch.equal(logits, model.table[ids])
    assert logits.reshape(-1, 6).shape == (12, 6)
    with pytest.raises(RuntimeError):
        logits.view(-1, 6)


def _restoring(x):
    with torch.no_grad():
        return x * 2


def _leaving_off(x):
    torch.set_grad_enabled(False)
    return x * 2


def test_grad_mode_after_tells_a_restoring_function_from_one_that_leaves_autograd_off():
    assert grad_mode_after(_restoring, torch.ones(2)) == {"grad_enabled_after": True}
    try:
        assert grad_mode_after(_leaving_off, torch.ones(2)) == {"grad_enabled_after": False}
    finally:
        torch.set_grad_enabled(True)
    assert torch.is_grad_enabled()


class _Keeper(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = nn.Linear(2, 2)

    def forward(self, x):
        self.inner.last = self.inner(x)
        return self.inner.last


def test_attributes_set_by_calls_names_what_forward_kept_and_nothing_for_an_independent_forward():
    assert attributes_set_by_calls(nn.Linear(2, 2), torch.ones(1, 2), torch.ones(3, 2)) == {"attributes_set": []}
    assert attributes_set_by_calls(_Keeper(), torch.ones(1, 2)) == {"attributes_set": ["inner.last"]}


def test_recording_pair_lm_gives_the_tables_loss_and_its_nested_record_shows_a_top_only_mode_change():
    model = RecordingPairLM(5, seed=2)
    idx, targets = torch.tensor([[0, 3, 4]]), torch.tensor([[1, 1, 2]])
    logits, loss = model(idx, targets)
    table = model.inner.table.detach()
    expected = torch.nn.functional.cross_entropy(table[idx].reshape(-1, 5), targets.reshape(-1))
    assert torch.equal(logits, model.inner.table[idx]) and torch.allclose(loss, expected)
    assert model(idx)[1] is None
    model.eval()
    model.training = True                     # the top module only: the recorder inside stays in eval mode
    model(idx, targets)
    with torch.no_grad():
        model.train()
        model(idx, targets)
    assert [(c["training"], c["grad_enabled"]) for c in model.inner.calls] == [
        (True, True), (True, True), (False, True), (True, False)]


def test_hooks_left_counts_the_hooks_still_on_each_module():
    model = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.ReLU()))
    assert hooks_left(model) == {"hooks": {}}
    kept = model[1][0].register_forward_hook(lambda module, args, output: None)
    model.register_forward_pre_hook(lambda module, args: None)
    with_one_removed = model[0].register_forward_hook(lambda module, args, output: None)
    with_one_removed.remove()
    assert hooks_left(model) == {"hooks": {"": 1, "1.0": 1}}
    kept.remove()
    assert hooks_left(model) == {"hooks": {"": 1}}


def test_with_bystander_hooks_puts_one_inert_hook_on_every_module():
    from utils.recording import with_bystander_hooks
    model = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.ReLU()))
    x = torch.randn(3, 2)
    before = model(x)
    assert with_bystander_hooks(model) == {"hooks": {"": 1, "0": 1, "1": 1, "1.0": 1}}
    assert torch.equal(model(x), before)
    mine = model[0].register_forward_hook(lambda module, args, output: output * 0)
    mine.remove()                                   # removing one's own hook leaves the others
    assert hooks_left(model) == {"hooks": {"": 1, "0": 1, "1": 1, "1.0": 1}}
    model[0]._forward_hooks.clear()                 # clearing a module's hooks drops the bystander too
    assert hooks_left(model) == {"hooks": {"": 1, "1": 1, "1.0": 1}}


def test_tied_under_other_names_ties_the_head_to_wte_and_leaves_emb_proj_untied():
    from utils.markov import TiedUnderOtherNames

    model = TiedUnderOtherNames(5, 3)
    assert [name for name, _ in model.named_parameters()] == ["wte.weight", "emb_proj.weight"]
    assert model.lm_head.weight is model.wte.weight
    assert model.emb_proj.weight is not model.wte.weight


def test_result_has_shared_elements_tells_an_expanded_view_from_its_copy_and_from_other_views():
    mask = torch.ones(3, 3, dtype=torch.bool).tril()
    assert result_has_shared_elements(lambda: mask.expand(2, 1, 3, 3))
    assert not result_has_shared_elements(lambda: mask.expand(2, 1, 3, 3).clone())
    assert not result_has_shared_elements(lambda: mask.expand(1, 1, 3, 3))    # stride 0 on a dimension of 1 shares nothing
    assert not result_has_shared_elements(lambda: mask.t())                   # a transposed view: every element its own
    assert not result_has_shared_elements(lambda: [mask])                     # not a tensor: nothing to say


def test_results_share_memory_tells_two_slices_of_one_window_from_two_copies():
    window = torch.arange(12).view(2, 6)
    assert results_share_memory(lambda: (window[:, :-1], window[:, 1:]))         # notebook 09's get_batch mistake
    assert results_share_memory(lambda: {"x": window[:, :-1], "y": [window[:, 1:].clone(), window[0]]})
    assert not results_share_memory(lambda: (window[:, :-1].clone(), window[:, 1:].clone()))
    assert not results_share_memory(lambda: (window, torch.empty(0), torch.empty(0)))   # empty tensors hold no memory
    assert not results_share_memory(lambda: window)                              # one tensor: nothing to share with


def test_call_with_strided_passes_the_same_values_not_contiguous_and_reports_a_view_that_refuses_them():
    from utils.memory import call_with_strided

    targets = torch.tensor([[2, 3, 4], [5, 6, 7]])
    seen = call_with_strided(lambda t, n: (t.is_contiguous(), t.reshape(-1).tolist(), n), targets, 5)
    assert seen == {"result": (False, [2, 3, 4, 5, 6, 7], 5)}
    refused = call_with_strided(lambda t: t.view(-1), targets)
    assert set(refused) == {"error"} and refused["error"].startswith("RuntimeError")


def test_results_own_their_memory_refuses_a_slice_of_a_larger_buffer_and_accepts_copies_and_fresh_tensors():
    import numpy as np
    from utils.memory import results_own_their_memory

    window = torch.arange(12).view(2, 6)
    assert not results_own_their_memory(lambda: (window[:, :-1].clone(), window[:, 1:]))    # offset 1, not contiguous
    assert not results_own_their_memory(lambda: (window[:, :-1], window[:, 1:].clone()))
    assert not results_own_their_memory(lambda: window[0])                                   # contiguous, but a row of 2
    assert results_own_their_memory(lambda: (window[:, :-1].clone(), window[:, 1:].contiguous()))
    assert results_own_their_memory(lambda: (torch.from_numpy(np.arange(6).astype(np.int64)), torch.zeros(0), 3))
    assert results_own_their_memory(lambda: window[:, 6:])          # an empty slice holds no element of the buffer
