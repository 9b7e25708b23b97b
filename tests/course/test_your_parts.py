"""The "your parts, carried forward" loader of notebook 09 (utils.your_parts).

The course's own solution notebooks play the student's saved notebooks: copied into a course-shaped
folder outside ``solutions/`` (the loader refuses to read from there), their parts load, pass their
visible tests, and a GPT built from them gives the same logits as one built from PyTorch's parts with
the weights copied across. The student's notebook-07 block takes notebook 09's parts in place of its own
(by the names 07's contract gives them) and is then the same block as 09's, causal or not, with RoPE; one
that cannot (its forward does not call them) falls back with its reason. A broken notebook, a missing file
and a path into ``solutions/`` fall back with a one-line message. Notebook 09 itself runs here with the
untouched student notebooks beside it, in the GPU configuration on the CPU: every part falls back, with
its reason, and the notebook still trains. Its one CPU-configuration run, with the student's notebooks
beside it (every part theirs, the control beside it, the counted trigram beaten within the CPU budget), is
the suite's run of 09 on the simulated Colab (tests/conftest.py, ``NOTEBOOKS_BESIDE``;
test_colab_simulation.py reads it).
"""

from __future__ import annotations

import json
import math
import re
import shutil
from collections import OrderedDict
from pathlib import Path


import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from autograder.course import conventions
from autograder.course.cell_runner import printed_and_errors
from autograder.course.solution_source import load_solution
from conftest import PARTS_OF_09
from utils import your_parts

ROOT = Path(__file__).resolve().parents[2]


PART_FOLDERS = ("02_tokenization", "05_multi_head", "06_positions", "07_block")


def _course(tmp_path: Path, source: str = "solutions") -> Path:
    for folder in PART_FOLDERS:
        (tmp_path / folder).mkdir()
        for nb in (ROOT / source / folder).glob("*.ipynb"):
            shutil.copy(nb, tmp_path / folder / nb.name)
    (tmp_path / "09_your_gpt").mkdir()
    return tmp_path / "09_your_gpt"


def _run_notebook_09(here: Path) -> tuple[str, list[str]]:
    """Notebook 09's solution executed in ``here``, cell by cell: (the text it printed, the errors)."""
    return printed_and_errors(load_solution(conventions.assignment("09_your_gpt")), here, timeout_s=900)


def _parts_line(printed: str) -> str:
    lines = [line for line in printed.splitlines() if line.startswith("your parts: yours:")]
    assert lines, printed[-3000:]
    return lines[0]


def _gpt_namespace() -> dict:
    # The given parts and the GPT of notebook 09's solution (instructor side: tests may read solutions/).
    notebook = json.loads((ROOT / "solutions" / "09_your_gpt" / "your_gpt.ipynb").read_text())
    cell = next(c for c in notebook["cells"] if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "GPT")
    namespace: dict = {}
    exec("".join(cell["source"]), namespace)
    return namespace


@pytest.mark.slow
def test_solution_parts_load_and_give_the_same_logits(tmp_path, monkeypatch, capsys):
    here = _course(tmp_path)
    monkeypatch.chdir(here)
    ln = your_parts.load(your_parts.NOTEBOOKS["07"], "LayerNorm", "FeedForward", "PreLNBlock")
    mha = your_parts.load(your_parts.NOTEBOOKS["05"], "MultiHeadAttention")
    rope = your_parts.load(your_parts.NOTEBOOKS["06"], "apply_rope")
    out = capsys.readouterr().out
    assert ln is not None and mha is not None and rope is not None, out
    assert out.count("visible tests pass") == 3, out

    ns = _gpt_namespace()

    class Attention(nn.Module):
        def __init__(self, n_embd, n_head, causal=True, rope=None):
            super().__init__()
            self.causal, self.mha = causal, mha["MultiHeadAttention"](n_embd, n_head, bias=False)

        def forward(self, x):
            return self.mha(x, causal=self.causal)

    parts = dict(ns["PARTS"], norm=ln["LayerNorm"], ffn=ln["FeedForward"], attention=Attention,
                 block=your_parts.block_part(ln["PreLNBlock"], ns["PreLNBlock"]))
    torch.manual_seed(0)
    reference = ns["GPT"](13, 16, n_layer=2, n_head=4, n_embd=32)
    mine = ns["GPT"](13, 16, n_layer=2, n_head=4, n_embd=32, parts=parts)
    with torch.no_grad():
        g = torch.Generator().manual_seed(3)
        for m in reference.modules():     # norms away from (1, 0), so that a wrong norm shows
            if isinstance(m, nn.LayerNorm):
                m.weight.copy_(1 + 0.5 * torch.randn(m.weight.shape, generator=g))
                m.bias.copy_(0.5 * torch.randn(m.bias.shape, generator=g))
        for bs, bt in zip(reference.blocks, mine.blocks):
            bt.ln1.load_state_dict(bs.ln1.state_dict())
            bt.ln2.load_state_dict(bs.ln2.state_dict())
            linears = [m for m in bt.attn.modules() if isinstance(m, nn.Linear)]
            sources = list(bs.attn.qkv.weight.chunk(3)) + [bs.attn.proj.weight] if len(linears) == 4 else \
                [bs.attn.qkv.weight, bs.attn.proj.weight]
            for w, m in zip(sources, linears):
                m.weight.copy_(w)
            for s, t in zip((bs.ffn.fc, bs.ffn.proj), [m for m in bt.ffn.modules() if isinstance(m, nn.Linear)]):
                t.weight.copy_(s.weight)
                t.bias.zero_()
        for name in ("tok_emb", "pos_emb", "ln_f"):
            getattr(mine, name).load_state_dict(getattr(reference, name).state_dict())
        ids = torch.randint(13, (3, 16), generator=torch.Generator().manual_seed(1))
        expected, _ = reference(ids)
        got, _ = mine(ids)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)
    assert mine.head.weight is mine.tok_emb.weight
    assert all(type(block).__name__ == "YourPreLNBlock" for block in mine.blocks)
    # RoPE against the complex-number form: pair (x_2i, x_2i+1) at position t times exp(i t base^(-2i/d)).
    q = torch.randn(2, 4, 16, 8, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    pairs = torch.view_as_complex(q.reshape(2, 4, 16, 4, 2).contiguous())
    angles = torch.arange(16, dtype=torch.float64)[:, None] * 10000.0 ** (-torch.arange(0, 8, 2, dtype=torch.float64) / 8)
    expected = torch.view_as_real(pairs * torch.polar(torch.ones_like(angles), angles)).reshape(2, 4, 16, 8)
    torch.testing.assert_close(rope["apply_rope"](q), expected, atol=1e-9, rtol=1e-9)
    # The GPT takes RoPE only from the parts: without it positions="rope" is refused; with it, order matters.
    with pytest.raises(ValueError):
        ns["GPT"](13, 16, n_layer=1, n_head=2, n_embd=16, positions="rope")
    rotary = ns["GPT"](13, 16, n_layer=1, n_head=2, n_embd=16, positions="rope", parts=dict(ns["PARTS"], rope=rope["apply_rope"]))
    with torch.no_grad():
        for p in rotary.parameters():
            p.copy_(0.5 * torch.randn(p.shape, generator=g))
        a, _ = rotary(torch.tensor([[1, 2, 3, 4]]))
        b, _ = rotary(torch.tensor([[3, 2, 1, 4]]))
    assert (a[0, -1] - b[0, -1]).abs().max() > 1e-3


@pytest.mark.slow
def test_solution_tokenizer_loads_and_round_trips(tmp_path, monkeypatch, capsys):
    here = _course(tmp_path)
    monkeypatch.chdir(here)
    bpe = your_parts.load(your_parts.NOTEBOOKS["02"], "train_bpe", "encode", "decode", instead="HF tokenizers' BPE")
    assert bpe is not None, capsys.readouterr().out
    text = "the theme of the thesis: théâtre, 東京 and the thermos. " * 20
    merges, vocab = bpe["train_bpe"](text, 40)
    ids = bpe["encode"](text, merges)
    assert len(ids) < len(text.encode("utf-8")) and max(ids) < 256 + len(merges)
    assert bpe["decode"](ids, vocab) == text


def test_broken_part_falls_back_with_one_line(tmp_path, monkeypatch, capsys):
    here = _course(tmp_path)
    path = tmp_path / "07_block" / "block.ipynb"
    notebook = json.loads(path.read_text())
    for cell in notebook["cells"]:
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "LayerNorm":
            cell["source"] = ("import torch.nn as nn\n\n\nclass LayerNorm(nn.Module):\n"
                              "    def __init__(self, d_model, eps=1e-5):\n        super().__init__()\n"
                              "        self.weight = nn.Parameter(torch.ones(d_model))\n"
                              "        self.bias = nn.Parameter(torch.zeros(d_model))\n\n"
                              "    def forward(self, x):\n        return x * self.weight + self.bias   # forgot to normalise\n")
    path.write_text(json.dumps(notebook))
    monkeypatch.chdir(here)
    assert your_parts.load(your_parts.NOTEBOOKS["07"], "LayerNorm") is None
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and "test_LayerNorm" in out[0] and "PyTorch's instead" in out[0], out


def test_missing_file_and_solutions_folder_fall_back(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert your_parts.load("../07_block/block.ipynb", "LayerNorm") is None
    assert "no file" in capsys.readouterr().out
    assert your_parts.load(ROOT / "solutions" / "07_block" / "block.ipynb", "LayerNorm") is None
    assert "solutions folder" in capsys.readouterr().out
    assert your_parts.load("../06_positions/positions.ipynb", "apply_rope", instead="learned positions") is None
    assert capsys.readouterr().out.strip().endswith("using learned positions instead.")


@pytest.mark.slow
def test_notebook_09_falls_back_part_by_part_on_untouched_notebooks_and_runs_the_gpu_configuration_on_the_cpu(
        tmp_path, monkeypatch):
    # One run serves both (issue 35: each CPU-configuration run of 09 costs two CPU minutes): the untouched
    # student notebooks beside it, so every part falls back with its reason; COURSE_GPU_CONFIG_ON_CPU=1, so
    # the GPU branch (standard-library corpus, your train_step under bfloat16 autocast, predicted and measured
    # time and memory) runs on the CPU with a few small steps. The parts that fall back are PyTorch's: the
    # control's, which the CPU configuration's run with the student's parts trains beside them
    # (test_colab_simulation.py).
    monkeypatch.setenv("COURSE_OFFLINE", "1")
    monkeypatch.setenv("COURSE_GPU_CONFIG_ON_CPU", "1")
    printed, errors = _run_notebook_09(_course(tmp_path, source="notebooks"))
    assert not errors, errors
    line = _parts_line(printed)
    yours, fallen = line.split(" | fell back: ")
    assert yours == "your parts: yours: none, and this notebook's GPT, AdamW, clipping and train_step", line
    for part in PARTS_OF_09:
        assert f"{part} (" in fallen, line
    assert fallen.count("is not answered yet") == len(PARTS_OF_09) and "NotImplementedError" not in line, line
    assert "the same run: every model part fell back" in printed, printed[-3000:]
    assert "(GPU configuration) in bfloat16 autocast on the CPU" in printed, printed[:2000]
    assert "standard library:" in printed and "predicted on Colab's T4 (float16 + GradScaler)" in printed
    assert re.search(r"time\s+\d+ s\s+\d+ s\nmemory\s+\d+\.\d+ GiB\s+\d+\.\d+ GiB", printed), printed[-3000:]
    losses = re.search(r"training loss: first step (\S+), mean of the last three (\S+)", printed)
    assert losses, printed[-3000:]
    first, last = float(losses.group(1)), float(losses.group(2))
    assert math.isfinite(first) and math.isfinite(last) and last < first, (first, last)


# A correct notebook-05 MultiHeadAttention (its visible tests pass: the names and shapes are the documented
# ones) that reads its projections' weights instead of calling them. RoPE, placed after the projection
# modules, can never reach it: notebook 09 must say so and fall back, not crash in training or silently
# train without positions.
WEIGHTS_READING_MHA = '''
import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_head, bias=True):
        super().__init__()
        if d_model % n_head:
            raise ValueError("d_model must be a multiple of n_head")
        self.n_head = n_head
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (nn.Linear(d_model, d_model, bias=bias) for _ in range(4))

    def forward(self, x, causal=False):
        B, T, d = x.shape
        weight = torch.cat([self.q_proj.weight, self.k_proj.weight, self.v_proj.weight])
        bias = None if self.q_proj.bias is None else torch.cat([self.q_proj.bias, self.k_proj.bias, self.v_proj.bias])
        q, k, v = F.linear(x, weight, bias).view(B, T, 3, self.n_head, d // self.n_head).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        return self.out_proj(y.transpose(1, 2).reshape(B, T, d))
'''


def _rope(x, base=10000.0):
    T, d = x.shape[-2:]
    angles = torch.arange(T, dtype=torch.float64)[:, None] * base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    pairs = torch.view_as_complex(x.double().reshape(*x.shape[:-1], d // 2, 2).contiguous())
    return torch.view_as_real(pairs * torch.polar(torch.ones_like(angles), angles)).flatten(-2).to(x.dtype)


class _SeparateMHA(nn.Module):     # calls q_proj, k_proj, v_proj, out_proj as modules
    def __init__(self, d_model, n_head, bias=True):
        super().__init__()
        self.n_head = n_head
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (nn.Linear(d_model, d_model, bias=bias) for _ in range(4))

    def forward(self, x, causal=False):
        B, T, d = x.shape
        q, k, v = (p(x).view(B, T, self.n_head, -1).transpose(1, 2) for p in (self.q_proj, self.k_proj, self.v_proj))
        return self.out_proj(self._attend(q, k, v, causal).transpose(1, 2).reshape(B, T, d))

    def _attend(self, q, k, v, causal):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)


class _FusedMHA(nn.Module):        # calls one fused qkv_proj
    def __init__(self, d_model, n_head, bias=True):
        super().__init__()
        self.n_head = n_head
        self.qkv_proj, self.out_proj = nn.Linear(d_model, 3 * d_model, bias=bias), nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, causal=False):
        B, T, d = x.shape
        q, k, v = (p.view(B, T, self.n_head, -1).transpose(1, 2) for p in self.qkv_proj(x).chunk(3, dim=-1))
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        return self.out_proj(y.transpose(1, 2).reshape(B, T, d))


def test_rope_reaches_attention_that_calls_its_projections_and_not_one_that_reads_their_weights():
    namespace: dict = {}
    exec(WEIGHTS_READING_MHA, namespace)
    state = torch.random.get_rng_state()
    for mha in (_SeparateMHA, _FusedMHA):
        assert your_parts.rope_reaches_attention(your_parts.attention_part(mha), _rope) == ""
    reason = your_parts.rope_reaches_attention(your_parts.attention_part(namespace["MultiHeadAttention"]), _rope)
    assert "q_proj/k_proj (or qkv_proj)" in reason and "AttributeError" in reason, reason
    identity = your_parts.rope_reaches_attention(your_parts.attention_part(_SeparateMHA), lambda x: x)
    assert "has no effect" in identity, identity
    assert torch.equal(state, torch.random.get_rng_state()), "the probe must not move the notebook's random stream"


# Blocks written to notebook 07's contract (ln1, attn = nn.MultiheadAttention(d, h, batch_first=True), ln2,
# ffn; forward(x, causal=False)), independent of its solution. Each passes notebook 07's tests; only the first
# two can take notebook 09's parts in place of their own.
class _ContractBlock(nn.Module):
    def __init__(self, d_model, n_head, d_ff=None, activation="gelu"):
        super().__init__()
        d_ff = d_ff or 4 * d_model
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.ffn = nn.Sequential(OrderedDict([("fc1", nn.Linear(d_model, d_ff)), ("act", nn.ReLU() if activation == "relu"
                                               else nn.GELU()), ("fc2", nn.Linear(d_ff, d_model))]))
        self.attn = nn.MultiheadAttention(d_model, n_head, batch_first=True)    # registered after ffn

    def forward(self, x, causal=False):
        T = x.shape[1]
        mask = torch.full((T, T), float("-inf")).triu(1) if causal else None      # a float mask
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.ffn(self.ln2(x))


class _PositionalCallBlock(_ContractBlock):    # nn.MultiheadAttention's arguments by position; its weights ignored
    def forward(self, x, causal=False):
        T = x.shape[1]
        h = self.ln1(x)
        out, _ = self.attn(h, h, h, None, True, torch.ones(T, T, dtype=torch.bool).triu(1) if causal else None)
        return x + out + self.ffn(self.ln2(x + out))


class _OwnSublayersBlock(_ContractBlock):      # calls the modules it built, kept aside: 09's parts never run
    def __init__(self, d_model, n_head, d_ff=None, activation="gelu"):
        super().__init__(d_model, n_head, d_ff, activation)
        self.sublayers = (self.ln1, self.attn, self.ln2, self.ffn)

    def forward(self, x, causal=False):
        ln1, attn, ln2, ffn = self.sublayers
        T = x.shape[1]
        h = ln1(x)
        x = x + attn(h, h, h, attn_mask=torch.ones(T, T, dtype=torch.bool).triu(1) if causal else None)[0]
        return x + ffn(ln2(x))


class _WeightsReadingBlock(_ContractBlock):    # reads attn.in_proj_weight, which 09's attention does not have
    def forward(self, x, causal=False):
        T, d = x.shape[1], x.shape[2]
        h = self.ln1(x).transpose(0, 1)
        out, _ = F.multi_head_attention_forward(
            h, h, h, d, self.attn.num_heads, self.attn.in_proj_weight, self.attn.in_proj_bias, None, None, False, 0.0,
            self.attn.out_proj.weight, self.attn.out_proj.bias, need_weights=False,
            attn_mask=torch.ones(T, T, dtype=torch.bool).triu(1) if causal else None)
        x = x + out.transpose(0, 1)
        return x + self.ffn(self.ln2(x))


class _OutProjFirstMHA(_SeparateMHA):          # a correct notebook-05 attention that registers out_proj first
    def __init__(self, d_model, n_head, bias=True):
        nn.Module.__init__(self)
        self.n_head, self.out_proj = n_head, nn.Linear(d_model, d_model, bias=bias)
        self.q_proj, self.k_proj, self.v_proj = (nn.Linear(d_model, d_model, bias=bias) for _ in range(3))


def test_a_block_of_notebook_07s_contract_is_09s_block_with_09s_parts_in_it():
    ns = _gpt_namespace()
    GPT, given = ns["GPT"], ns["PARTS"]
    state = torch.random.get_rng_state()
    for block_class in (_ContractBlock, _PositionalCallBlock):
        assert your_parts.block_matches_given(your_parts.block_part(block_class, ns["PreLNBlock"]), given) == ""
    assert torch.equal(state, torch.random.get_rng_state()), "the probe must not move the notebook's random stream"
    yours = dict(given, block=your_parts.block_part(_ContractBlock, ns["PreLNBlock"]))
    ids = torch.randint(13, (2, 12), generator=torch.Generator().manual_seed(0))
    for options in (dict(), dict(causal=False), dict(positions="rope"), dict(positions="rope", causal=False)):
        rope = {"rope": _rope} if options.get("positions") == "rope" else {}
        torch.manual_seed(0)
        control = GPT(13, 12, n_layer=2, n_head=4, n_embd=32, parts=dict(given, **rope), **options)
        torch.manual_seed(0)
        mine = GPT(13, 12, n_layer=2, n_head=4, n_embd=32, parts=dict(yours, **rope), **options)
        assert type(mine.blocks[1]).__name__ == "Your_ContractBlock"
        # The same random numbers drawn in the same places: the same weights under the same names, so the
        # same logits without copying anything (the residual projections found and scaled as in 09's block).
        assert mine.state_dict().keys() == control.state_dict().keys(), options
        for name, value in control.state_dict().items():
            assert torch.equal(mine.state_dict()[name], value), (options, name)
        with torch.no_grad():
            torch.testing.assert_close(mine(ids)[0], control(ids)[0], atol=1e-6, rtol=1e-6)
    # The causal flag reaches the student's forward: position 0 sees the future only with causal=False.
    for causal in (True, False):
        model = GPT(13, 12, n_layer=1, n_head=2, n_embd=16, causal=causal, parts=yours)
        with torch.no_grad():
            for p in model.parameters():      # scale 0.5, not 0.02: attention far from uniform
                p.copy_(0.5 * torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel())))
            a, b = model(torch.tensor([[1, 2, 3]]))[0][0, 0], model(torch.tensor([[1, 5, 6]]))[0][0, 0]
        assert ((a - b).abs().max() > 1e-4) == (not causal), causal
    # The residual projections by their documented names, in whatever order a part registers its layers.
    block = yours["block"](16, 2, parts=dict(given, attention=your_parts.attention_part(_OutProjFirstMHA)))
    assert block.residual_weights()[0] is block.attn.mha.out_proj.weight
    assert block.residual_weights()[1] is block.ffn.proj.weight


def test_a_block_that_cannot_take_09s_parts_is_refused_with_its_reason():
    ns = _gpt_namespace()
    aside = your_parts.block_matches_given(your_parts.block_part(_OwnSublayersBlock, ns["PreLNBlock"]), ns["PARTS"])
    assert "does not give x + attn(ln1(x)), then + ffn(ln2(x))" in aside, aside
    reading = your_parts.block_matches_given(your_parts.block_part(_WeightsReadingBlock, ns["PreLNBlock"]), ns["PARTS"])
    assert reading.startswith("your PreLNBlock fails with this notebook's ln1, attn, ln2 and ffn") and \
        "AttributeError" in reading, reading


@pytest.mark.slow
def test_attention_and_block_that_cannot_take_their_place_fall_back_with_their_reasons(tmp_path, monkeypatch):
    # Notebook 05's attention reads its weights (RoPE cannot reach it); notebook 07's block keeps its own modules
    # aside (09's parts in it would never run). Both pass their notebooks' visible tests.
    here = _course(tmp_path)
    own_sublayers_block = ("import torch\nimport torch.nn as nn\n\n\nclass PreLNBlock(nn.Module):\n"
                           "    def __init__(self, d_model, n_head, d_ff=None, activation='gelu'):\n"
                           "        super().__init__()\n        self.ln1, self.ln2 = LayerNorm(d_model), LayerNorm(d_model)\n"
                           "        self.attn = nn.MultiheadAttention(d_model, n_head, batch_first=True)\n"
                           "        self.ffn = FeedForward(d_model, d_ff, activation)\n"
                           "        self.sublayers = (self.ln1, self.attn, self.ln2, self.ffn)\n\n"
                           "    def forward(self, x, causal=False):\n        ln1, attn, ln2, ffn = self.sublayers\n"
                           "        T = x.shape[1]\n        h = ln1(x)\n"
                           "        mask = torch.ones(T, T, dtype=torch.bool).triu(1) if causal else None\n"
                           "        x = x + attn(h, h, h, attn_mask=mask, need_weights=False)[0]\n"
                           "        return x + ffn(ln2(x))\n")
    for folder, grade_id, source in (("05_multi_head/multi_head.ipynb", "MultiHeadAttention", WEIGHTS_READING_MHA),
                                     ("07_block/block.ipynb", "PreLNBlock", own_sublayers_block)):
        path = tmp_path / folder
        notebook = json.loads(path.read_text())
        for cell in notebook["cells"]:
            if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id:
                cell["source"] = source
        path.write_text(json.dumps(notebook))
    monkeypatch.chdir(here)
    ns = _gpt_namespace()
    carried = your_parts.carry_forward(ns["PARTS"])
    assert carried.origin["RoPE (06)"] == "yours" and carried.positions == "rope"
    assert carried.origin["LayerNorm (07)"] == carried.origin["feed-forward (07)"] == "yours", carried.origin
    assert "q_proj/k_proj (or qkv_proj)" in carried.origin["attention (05)"], carried.origin
    assert carried.parts["attention"] is ns["CausalSelfAttention"], "the attention falls back to the PyTorch part"
    assert "attention (05) (your MultiHeadAttention fails with RoPE" in carried.line()
    assert "does not give x + attn(ln1(x))" in carried.origin["block (07)"], carried.origin
    assert carried.origin["block (07)"].endswith("; this notebook's PreLNBlock instead"), carried.origin
    assert carried.parts["block"] is ns["PreLNBlock"] and carried.control["block"] is ns["PreLNBlock"]


class _MaskOnTheCpuMHA(_SeparateMHA):
    # Notebook 05's contract, right on a CPU, but its causal mask is made without device=: on a GPU it stops.
    def _attend(self, q, k, v, causal):
        T = q.shape[-2]
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if causal:
            scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
        return scores.softmax(-1) @ v


def test_attention_that_makes_its_mask_on_the_cpu_is_refused_and_the_solutions_is_taken():
    refused = your_parts.attention_runs_on_a_gpu(_MaskOnTheCpuMHA)
    assert refused.startswith("your MultiHeadAttention makes a tensor off x's device"), refused
    solution = {}      # notebook 05's exercises (MultiHeadAttention calls split_heads and merge_heads)
    for cell in load_solution(conventions.assignment("05_multi_head")).cells:
        if conventions.is_solution_cell(cell):
            exec(conventions.strip_solution_markers(cell.source), solution)
    assert your_parts.attention_runs_on_a_gpu(solution["MultiHeadAttention"]) == ""
