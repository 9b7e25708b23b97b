"""utils.fake_cuda: where a function makes its result, seen without a GPU, with its input's values kept (issue 49:
a value-reading answer that builds on the CPU escapes the meta probe)."""

import pytest
import torch

from utils import checks
from utils.fake_cuda import LabelledCuda, LabelledTensor, result_device_on_fake_cuda

DATA = torch.arange(100, 150)
CUDA_RESULT = {"outcome": "device", "device": "cuda", "where": "the result"}


def _gen():
    return torch.Generator().manual_seed(0)


def _index_table(data, t, b, g=None):          # 08's get_batch, indices moved to data's device
    starts = torch.randint(data.shape[0] - t, (b,), generator=g)
    index = (starts[:, None] + torch.arange(t)).to(data.device)
    return data[index], data[index + 1]


def _preallocated(data, t, b, g=None, device=False):
    starts = torch.randint(data.shape[0] - t, (b,), generator=g)
    where = {"device": data.device} if device else {}
    x, y = torch.empty(b, t, dtype=data.dtype, **where), torch.empty(b, t, dtype=data.dtype, **where)
    for row, s in enumerate(starts.tolist()):   # reads values: the meta probe says "needs values" here
        x[row], y[row] = data[s:s + t], data[s + 1:s + t + 1]
    return x, y


def _from_lists(data, t, b, g=None, device=False):
    values, starts = data.tolist(), torch.randint(len(data) - t, (b,), generator=g).tolist()
    where = {"device": data.device} if device else {}
    return (torch.tensor([values[s:s + t] for s in starts], **where),
            torch.tensor([values[s + 1:s + t + 1] for s in starts], dtype=data.dtype).to(data.device))


@pytest.mark.parametrize("fn", [
    _index_table,
    lambda d, t, b, g: tuple(d[(torch.randint(len(d) - t, (b,), generator=g)[:, None] + torch.arange(t + 1))]
                             .split(t, dim=1)[:1] * 2),      # CPU indices may index a CUDA tensor
    lambda d, t, b, g: _preallocated(d, t, b, g, device=True),
    lambda d, t, b, g: _from_lists(d, t, b, g, device=True),
    lambda d, t, b, g: (torch.stack([d[s:s + t] for s in torch.randint(len(d) - t, (b,), generator=g)]),) * 2])
def test_answers_that_keep_the_device_are_on_cuda_reading_values_or_not(fn):
    assert result_device_on_fake_cuda(fn, DATA, 7, 5, _gen()) == CUDA_RESULT


def test_a_tensor_made_without_device_and_filled_is_a_cpu_result():
    for fn in (_preallocated, _from_lists):
        seen = result_device_on_fake_cuda(fn, DATA, 7, 5, _gen())
        assert seen == {"outcome": "device", "device": "cpu", "where": "returned tensor 0"}
    assert result_device_on_fake_cuda(lambda x: x.cpu() * 2, torch.ones(3))["device"] == "cpu"


def test_mixing_a_cpu_tensor_with_a_labelled_one_is_a_mismatch_but_a_cpu_scalar_is_not():
    mixed = result_device_on_fake_cuda(lambda x: x + torch.ones(x.shape), torch.ones(2, 3))
    assert mixed["outcome"] == "mismatch" and "same device" in mixed["error"]
    assert result_device_on_fake_cuda(lambda x: x * torch.tensor(2.0), torch.ones(2, 3)) == CUDA_RESULT
    indexed = result_device_on_fake_cuda(lambda i: torch.arange(10)[i], torch.tensor([1, 2]))
    assert indexed["outcome"] == "mismatch"


def test_what_a_gpu_refuses_is_a_mismatch():
    drawn = result_device_on_fake_cuda(lambda d, g: torch.randint(5, (3,), generator=g, device=d.device), DATA, _gen())
    assert drawn["outcome"] == "mismatch" and "generator" in drawn["error"]
    assert result_device_on_fake_cuda(lambda x: torch.from_numpy(x.numpy()), torch.ones(2))["outcome"] == "mismatch"


def test_values_are_real_and_the_label_reads_as_cuda():
    with LabelledCuda():
        data = LabelledTensor(torch.arange(10))
        x, y = _index_table(data, 3, 4, _gen())
        assert (x.device, data.is_cuda, data[3].item(), data.tolist()) == (torch.device("cuda", 0), True, 3, list(range(10)))
        assert (y - x).tolist() == [[1, 1, 1]] * 4
        assert torch.equal(x.cpu(), _index_table(torch.arange(10), 3, 4, _gen())[0])


def test_the_callers_tensors_are_left_alone_and_cuda_itself_is_not_judged():
    data = torch.arange(5)
    result_device_on_fake_cuda(lambda d: d.add_(1), data)
    assert data.tolist() == [0, 1, 2, 3, 4]
    unsupported = result_device_on_fake_cuda(lambda x: torch.cuda.synchronize() or x, torch.ones(2))
    assert unsupported["outcome"] == "unsupported"
    assert result_device_on_fake_cuda(lambda x: len(x), torch.ones(2)) == {"outcome": "no tensor"}
    assert result_device_on_fake_cuda(lambda x: x[5], torch.ones(2))["outcome"] == "raised"


def test_assert_kept_on_fake_cuda_passes_cuda_and_unsupported_and_fails_the_rest():
    checks.assert_kept_on_fake_cuda(CUDA_RESULT, name="kept")
    checks.assert_kept_on_fake_cuda({"outcome": "unsupported", "error": "no CUDA"}, name="reached CUDA")
    for report in ({"outcome": "device", "device": "cpu", "where": "the result"}, {"outcome": "mismatch", "error": "x"},
                   {"outcome": "raised", "error": "x"}, {"outcome": "no tensor"}):
        with pytest.raises(checks.CheckFailure, match="emulated: cuda:0"):
            checks.assert_kept_on_fake_cuda(report, name="a device mistake")
    with pytest.raises(TypeError):
        checks.assert_kept_on_fake_cuda("cuda", name="not a report")
    with checks.values_withheld(), pytest.raises(checks.CheckFailure) as failed:
        checks.assert_kept_on_fake_cuda({"outcome": "mismatch", "error": "0.4963 quiet"}, name="hidden")
    assert "0.4963" not in str(failed.value) and "'mismatch'" in str(failed.value)


def test_pytorch_attention_made_in_cpp_keeps_the_label():
    q = torch.randn(1, 2, 4, 8)
    seen = result_device_on_fake_cuda(lambda q: torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True), q)
    assert seen == CUDA_RESULT


class _Positions(torch.nn.Module):
    """A tied table and a position embedding; ``on_device`` says whether the positions are made on idx's device."""

    def __init__(self, on_device, reads_ids=False):
        super().__init__()
        self.tok, self.pos = torch.nn.Embedding(7, 4), torch.nn.Embedding(5, 4)
        self.head = torch.nn.Linear(4, 7, bias=False)
        self.head.weight = self.tok.weight
        self.register_buffer("scale", torch.ones(4))
        self.on_device, self.reads_ids = on_device, reads_ids

    def forward(self, idx):
        if self.reads_ids and int(idx.max()) >= 7:      # reads values: the meta probe says "needs values"
            raise ValueError("id out of range")
        where = {"device": idx.device} if self.on_device else {}
        return self.head((self.tok(idx) + self.pos(torch.arange(idx.shape[1], **where))) * self.scale)


def test_a_module_is_labelled_whole_and_left_as_it_was():
    from utils.fake_cuda import module_output_device_on_fake_cuda
    from utils.meta_device import module_output_device_on_meta

    model, idx = _Positions(on_device=True, reads_ids=True), torch.tensor([[1, 2, 3]])
    assert module_output_device_on_fake_cuda(model, idx) == CUDA_RESULT
    assert model.tok.weight.device.type == "cpu" and model.head.weight is model.tok.weight
    wrong = _Positions(on_device=False, reads_ids=True)
    assert module_output_device_on_meta(wrong, idx)["outcome"] == "needs values"     # the escape
    assert module_output_device_on_fake_cuda(wrong, idx)["outcome"] == "mismatch"


def test_a_module_argument_of_a_function_is_a_labelled_copy_and_left_as_it_was():
    # A loop given a model (notebook 12's greedy_decode) may take the device from its parameters; grad mode on,
    # the copy's parameters record no gradients (autograd through a labelled tensor would abort this build).
    model = torch.nn.Linear(3, 2)

    def run(m, x):
        return m(x.to(next(m.parameters()).device)), torch.zeros(2, device=next(m.parameters()).device)

    assert result_device_on_fake_cuda(run, model, torch.randn(4, 3)) == CUDA_RESULT
    assert type(model.weight) is torch.nn.Parameter and model.weight.device.type == "cpu" and model.weight.requires_grad


def test_bindings_that_guard_the_cuda_device_run_on_the_values_with_the_device_rule():
    """``~mask`` and ``nonzero`` reach the CUDA runtime in their Python bindings, before the dispatch: they run on the
    real values and come back labelled; a CPU tensor beside a labelled one there is refused as elsewhere."""
    from utils.fake_cuda import _on_the_values

    with LabelledCuda():
        mask = LabelledTensor(torch.tensor([True, False, True]))
        kept = (~mask).nonzero()
        assert isinstance(kept, LabelledTensor) and kept.tolist() == [[1]]
        with pytest.raises(RuntimeError, match="same device"):
            _on_the_values(torch.Tensor.__and__, (mask, torch.tensor([True, True, False])), {})
    assert result_device_on_fake_cuda(lambda x: torch.cuda.synchronize() or ~x, torch.ones(2) > 0)["outcome"] == "unsupported"


def test_a_function_given_a_model_gets_a_labelled_copy_and_the_model_is_left_as_it_was():
    model, idx = _Positions(on_device=True, reads_ids=True), torch.tensor([[1, 2, 3]])

    def continued(m, ids):            # reads values, as a search does, and builds on the ids' device
        return torch.cat([ids, m(ids)[:, -1:].argmax(-1)], dim=1)

    def scores_on_the_cpu(m, ids):    # a running score made without device=, added to the model's output
        return torch.zeros(1, 7) + m(ids)[:, -1]

    assert result_device_on_fake_cuda(continued, model, idx) == CUDA_RESULT
    assert result_device_on_fake_cuda(continued, m=model, ids=idx) == CUDA_RESULT
    assert result_device_on_fake_cuda(scores_on_the_cpu, model, idx)["outcome"] == "mismatch"
    assert model.tok.weight.device.type == "cpu" and model.head.weight is model.tok.weight


@pytest.mark.parametrize("fn, args", [
    (lambda ids, v: torch.nn.functional.one_hot(ids.long(), v).float(), (torch.tensor([[2, 0], [1, 3]]), 5)),
    (lambda ids, v: torch.eye(v, device=ids.device)[ids], (torch.tensor([[2, 0], [1, 3]]), 5)),
    (lambda x: (~(x > 0)).nonzero().flatten() + torch.nonzero(x < 0, as_tuple=True)[0], (torch.tensor([1.0, -1.0, 2.0]),)),
    (lambda p: torch.diag_embed(p) - torch.einsum("...i,...j->...ij", p, p), (torch.tensor([[0.2, 0.8], [1.0, 0.0]]),)),
    (lambda s, t: torch.where(torch.arange(t, device=s.device) > 1, torch.tensor(float("-inf"), device=s.device), s),
     (torch.randn(3, 4), 4)),
    (lambda d, t, b, g: tuple(d.unfold(0, t + 1, 1)[torch.randint(len(d) - t, (b,), generator=g)].clone().split(t, -1)[:1]),
     (DATA, 7, 5, torch.Generator().manual_seed(0)))])
def test_right_answers_in_other_words_stay_on_the_label(fn, args):
    """PyTorch's composite operators (one_hot, einsum, unfold) make their tensors in C++ with the input's options:
    those are labelled too, so a right answer is never counted against."""
    assert result_device_on_fake_cuda(fn, *args) == CUDA_RESULT
