"""utils.toy_models.CopySeq2Seq, the instrument notebook 12's greedy_decode tests hand to the student's loop:
a right loop reads the source back; a loop that skips BOS or does not feed its choices back goes wrong."""

from __future__ import annotations

import torch

from utils.toy_models import CopySeq2Seq


def _greedy(model, src, mask, steps):
    memory_kv = model.cross_kv(model.encode(src, mask))
    out = torch.full((src.shape[0], 1), model.bos_id)
    for _ in range(steps):
        out = torch.cat([out, model.decode(out, memory_kv, mask)[:, -1].argmax(-1, keepdim=True)], dim=1)
    return out[:, 1:]


def test_a_right_loop_reads_each_source_back_then_eos_then_the_after_eos_token():
    model = CopySeq2Seq(12)
    src = torch.tensor([[5, 6, 7], [8, 0, 0]])
    mask = torch.tensor([[False, False, False], [False, True, True]])
    assert _greedy(model, src, mask, 5).tolist() == [[5, 6, 7, 2, 3], [8, 2, 3, 3, 3]]
    assert (model.encode_calls, model.cross_kv_calls, len(model.decode_calls)) == (1, 1, 5)
    assert model.decode_calls[0] == {"shape": [2, 1], "grad_enabled": True, "training": True}


def test_a_prefix_that_is_not_the_models_own_choices_gives_the_after_eos_token():
    model = CopySeq2Seq(12)
    src, mask = torch.tensor([[5, 6, 7]]), torch.zeros(1, 3, dtype=torch.bool)
    memory_kv = model.cross_kv(model.encode(src, mask))
    assert model.decode(torch.tensor([[1, 5, 6]]), memory_kv, mask).argmax(-1).tolist() == [[5, 6, 7]]
    assert model.decode(torch.tensor([[1, 9, 6]]), memory_kv, mask).argmax(-1).tolist() == [[5, 3, 3]]
    assert model.decode(torch.tensor([[5, 6, 7]]), memory_kv, mask).argmax(-1).tolist() == [[3, 3, 3]]


def test_a_mode_set_on_the_top_module_alone_shows_in_the_records_and_in_modes():
    model = CopySeq2Seq(12)
    src, mask = torch.tensor([[5, 6]]), torch.zeros(1, 2, dtype=torch.bool)
    model.training = False                      # the top module only: inner stays in training mode
    model.decode(torch.tensor([[1]]), model.cross_kv(model.encode(src, mask)), mask)
    assert model.modes() == {"model": False, "inner": True}
    assert [call["training"] for call in model.encode_and_cross_kv_calls + model.decode_calls] == [True] * 3
    model.eval()
    model.decode(torch.tensor([[1]]), model.cross_kv(model.encode(src, mask)), mask)
    assert model.modes() == {"model": False, "inner": False}
    assert model.decode_calls[-1]["training"] is False



def test_on_an_emulated_gpu_a_loop_that_feeds_cpu_tokens_is_refused_and_a_right_one_is_not():
    # utils.fake_cuda labels the model's parameters too (a model on the GPU), so a loop may take its device from
    # src or from the model; grad mode stays on here, as in a loop that forgets torch.no_grad() (no abort).
    from utils.fake_cuda import result_device_on_fake_cuda

    src, mask = torch.tensor([[5, 6, 7], [8, 0, 0]]), torch.tensor([[False, False, False], [False, True, True]])

    def loop_on(device_of):
        def loop(model, src, mask):
            memory_kv = model.cross_kv(model.encode(src, mask))
            out = torch.full((src.shape[0], 1), model.bos_id, device=device_of(model, src))
            for _ in range(4):
                out = torch.cat([out, model.decode(out, memory_kv, mask)[:, -1].argmax(-1, keepdim=True)], dim=1)
            return out[:, 1:]
        return loop

    for right in (lambda model, src: src.device, lambda model, src: next(model.parameters()).device):
        seen = result_device_on_fake_cuda(loop_on(right), CopySeq2Seq(12), src, mask)
        assert seen == {"outcome": "device", "device": "cuda", "where": "the result"}
    on_cpu = result_device_on_fake_cuda(loop_on(lambda model, src: "cpu"), CopySeq2Seq(12), src, mask)
    assert on_cpu["outcome"] == "mismatch"
