"""utils.meta_device: which device a function makes its result on, seen without a GPU."""

import pytest
import torch
import torch.nn.functional as F

from utils.meta_device import result_device_on_meta

IDS = torch.tensor([[2, 0], [1, 3]])


def test_a_result_made_on_the_inputs_device_is_meta():
    for fn in (lambda ids, v: (ids.unsqueeze(-1) == torch.arange(v, device=ids.device)).float(),
               lambda ids, v: F.one_hot(ids, v).float(),
               lambda ids, v: torch.eye(v, device=ids.device)[ids]):
        assert result_device_on_meta(fn, IDS, 5) == {"outcome": "device", "device": "meta"}


def test_a_result_made_without_device_is_on_the_cpu():
    assert result_device_on_meta(lambda ids, v: torch.eye(v)[ids], IDS, 5) == {"outcome": "device", "device": "cpu"}
    made_on_cpu = result_device_on_meta(lambda ids, v: (torch.zeros(*ids.shape, v).scatter(-1, ids.unsqueeze(-1), 1.0), 7), IDS, 5)
    assert made_on_cpu == {"outcome": "device", "device": "cpu"}


def test_mixing_devices_is_a_mismatch_and_reading_values_is_not_counted():
    mixed = result_device_on_meta(lambda ids, v: (ids.unsqueeze(-1) == torch.arange(v)).float(), IDS, 5)
    assert mixed["outcome"] == "mismatch" and "device" in mixed["error"]
    reads = result_device_on_meta(lambda ids, v: torch.tensor([[float(i == j) for j in range(v)] for i in ids.flatten().tolist()]), IDS, 5)
    assert reads["outcome"] == "needs values"
    assert result_device_on_meta(lambda ids, v: ids.shape, IDS, 5) == {"outcome": "no tensor"}


def test_tensors_inside_lists_and_keywords_move_too():
    seen = []
    result_device_on_meta(lambda xs, cache, scale=None: seen.extend([xs[0].device.type, cache["k"].device.type,
                                                                    scale.device.type]) or xs[0],
                          [IDS], {"k": IDS}, scale=torch.ones(1))
    assert seen == ["meta", "meta", "meta"]


class _CausalAttention(torch.nn.Module):
    """nn.MultiheadAttention with a causal mask made on x's device, or (mask_on_input_device=False) on the CPU."""

    def __init__(self, mask_on_input_device: bool = True):
        super().__init__()
        self.attn = torch.nn.MultiheadAttention(8, 2, batch_first=True)
        self.mask_on_input_device = mask_on_input_device

    def forward(self, x):
        device = x.device if self.mask_on_input_device else None
        mask = torch.ones(x.shape[1], x.shape[1], dtype=torch.bool, device=device).triu(1)
        return self.attn(x, x, x, attn_mask=mask, need_weights=False)[0]


def test_a_module_runs_on_meta_as_a_copy_and_a_mask_made_on_the_cpu_is_a_mismatch():
    from utils.meta_device import module_output_device_on_meta

    x = torch.randn(2, 4, 8)
    good = _CausalAttention()
    assert module_output_device_on_meta(good, x) == {"outcome": "device", "device": "meta"}
    assert good.attn.in_proj_weight.device.type == "cpu"           # the module itself stays where it was
    assert module_output_device_on_meta(_CausalAttention(False), x)["outcome"] == "mismatch"


class _LearnedPositions(torch.nn.Module):
    def __init__(self, on_input_device: bool = True):
        super().__init__()
        self.pos, self.on_input_device = torch.nn.Embedding(6, 8), on_input_device

    def forward(self, x):
        return x + self.pos(torch.arange(x.shape[1], device=x.device if self.on_input_device else None))


def test_a_submodule_called_with_a_tensor_made_on_the_cpu_is_a_mismatch_though_meta_lets_it_run():
    from utils.meta_device import module_output_device_on_meta

    x = torch.randn(2, 4, 8)
    assert module_output_device_on_meta(_LearnedPositions(), x) == {"outcome": "device", "device": "meta"}
    stray = module_output_device_on_meta(_LearnedPositions(False), x)
    assert stray == {"outcome": "mismatch", "error": "pos was called with a tensor on cpu"}


def test_fake_meta_sees_a_result_built_from_inputs_moved_to_the_cpu():
    from utils.checks import assert_kept_on_meta
    from utils.meta_device import result_device_on_fake_meta

    def on_device(lengths, T):
        pos = torch.arange(T, device=lengths.device)
        return (pos[None, :] >= (T - lengths)[:, None])[:, None]

    def moved(lengths, T):
        lengths = lengths.cpu()
        return (torch.arange(T)[None, :] >= (T - lengths)[:, None])[:, None]

    kept = result_device_on_fake_meta(on_device, torch.tensor([2, 4]), 4)
    assert kept == {"outcome": "device", "device": "meta"}
    assert_kept_on_meta(kept, name="kept")
    assert result_device_on_fake_meta(moved, torch.tensor([2, 4]), 4)["device"] == "cpu"
    assert result_device_on_meta(moved, torch.tensor([2, 4]), 4)["outcome"] == "needs values"  # what meta missed
    mixed = result_device_on_fake_meta(lambda x, T: torch.arange(T)[None, :] >= x[:, None], torch.tensor([2, 4]), 4)
    assert mixed["outcome"] == "mismatch"
    reads = result_device_on_fake_meta(lambda x, T: torch.tensor([int(x[0])]), torch.tensor([2, 4]), 4)
    assert reads["outcome"] == "needs values"
    with pytest.raises(AssertionError):       # a CPU result fails the check
        assert_kept_on_meta(result_device_on_fake_meta(moved, torch.tensor([2, 4]), 4), name="moved")
