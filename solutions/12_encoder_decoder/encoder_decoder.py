# ---
# jupyter:
#   course:
#     cpu_budget_seconds: 120
#   jupytext:
#     cell_metadata_filter: all
#     notebook_metadata_filter: kernelspec,language_info,course,-jupytext.text_representation
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
#   language_info:
#     name: python
# ---

# %% [markdown] id="c4eb7e1a"
# # 12 · Encoders and encoder–decoders
#
# Every model so far read text left to right and predicted the next token: a **decoder-only** transformer.
# Notebook 07 ended with a table of the three families built from the same block; this notebook builds the
# other two and measures when each one wins.
#
# * An **encoder** is the block without the causal mask: every position reads every other one, left and right.
#   It cannot be trained by next-token prediction (it would see the answer), so it is trained by **masked language
#   modelling**: hide some tokens, predict them from both sides (BERT).
# * An **encoder–decoder** reads a *source* with an encoder and writes a *target* with a decoder whose blocks have a
#   third sublayer, **cross-attention**: queries from the target, keys and values from the encoder's output. It is
#   the original transformer of 2017, built for translation; T5 and BART are later ones.
#
# Before the transformer, encoder–decoders were two recurrent networks: an LSTM read the source into its final
# hidden state, and a second LSTM, started from that state, wrote the target. Everything the decoder knows about
# the source has to pass through one vector of fixed size, however long the source is. That is an *information*
# bottleneck (attention removes it: the decoder reads one vector per source position), beside the *sequential*
# one (an RNN needs $T$ steps one after another; self-attention does not). Textbooks often say the fixed vector
# "necessarily" loses information beyond some ratio; that is too strong, since a vector of floats can in principle
# hold a lot, but what a trained network *learns* to store in it is limited. Here you measure it: an LSTM
# encoder–decoder without attention against your transformer, on the same task, as the source grows.
#
# You will build, in order: `CrossAttention`, `EncoderBlock`, `DecoderBlock`, BERT's `mask_tokens`, the
# `Seq2Seq` model and `greedy_decode`; then train a small translator and compare it with a decoder-only model of
# the same size and with the LSTM.
#
# **Time.** Everything runs on the CPU, whatever the device: the whole notebook takes about 85 CPU seconds on a
# 2-core laptop (one thread). Three cells take about 30 seconds each (the translator, the decoder-only model, the
# two text models of section 8); each says so before it starts, and the training loops print their predicted time
# after their first 11 steps. On a GPU: untimed (nothing here moves to it).
#
# Each experiment ends with a **claim**: a sentence printed by the cell that measured it, with its numbers and a ✓
# when it holds on your run (a ✗ and a note when it does not: the prose around it assumes it).

# %% id="b27f9fbf" jupyter={"source_hidden": true} nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
# NOT PUBLISHED YET: the course's repository address is a placeholder, so this cell cannot install from it.
# Run the notebooks from a copy of the course on your own machine (README: Quick start). On Colab, build
# the course's wheel in a copy (`pip wheel --no-deps .` gives transformer_course-*.whl), upload it to the
# Files panel, then run this cell: it installs that wheel (or the pip source in $COURSE_INSTALL_SOURCE).
# Set-up: run this cell first.
# On Google Colab it installs the course helpers (the `utils` package) and the extra packages the
# notebooks use, from the course repository; on your own machine (after the README's quick start)
# it only imports them. It seeds the random generators and picks the device: a CUDA GPU if there
# is one (Colab: Runtime > Change runtime type > GPU), else Apple MPS, else the CPU.
def _pip_failure_cause(output: str) -> str:
    """The line of pip's output that says why it failed (not an upgrade notice; colour codes removed)."""
    # pip's last line is often not the cause: "[notice] A new release of pip", or a generic
    # "ERROR: ... Check the logs". Prefer a known cause, then git's "fatal:", then pip's "ERROR:".
    causes = ("Could not resolve host", "Temporary failure in name resolution", "Name or service not known",
              "Failed to establish a new connection", "Network is unreachable", "Connection refused",
              "timed out", "No such file or directory", "does not exist", "No matching distribution",
              "Could not find a version", "Repository not found", "not found", "Permission denied",
              "No space left", "SSL", "HTTP error", "403", "404")
    generic = ("check the logs", "subprocess-exited-with-error", "did not run successfully",
               "exit code", "end of output", "see above", "lines of output")
    lines = _pip_output_lines(output)
    useful = [line for line in lines if not any(g in line.lower() for g in generic)]
    for cause in causes:
        for line in useful:
            where = line.lower().find(cause.lower())
            if where >= 0:
                return _tidy(line if len(line) <= 160 else line[where:].split("'")[0].split(")")[0])
    for prefix in ("fatal:", "ERROR:", "error:"):
        for line in reversed(useful):
            if line.startswith(prefix):
                return _tidy(line)
    return _tidy((useful or lines or ["pip failed"])[-1])


def _pip_output_lines(output: str) -> list[str]:
    """pip's output as stripped lines: colour codes, box drawing and pip's upgrade notices removed."""
    import re

    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07", "", output or "").replace("\r", "\n")
    notices = ("[notice]", "new release of pip", "pip install --upgrade pip", "you are using pip version")
    lines = []
    for raw in text.splitlines():
        line = raw.strip().lstrip("\u2502\u2570\u2500>\u00d7 ").strip()
        if line and not any(notice in line.lower() for notice in notices):
            lines.append(line)
    return lines


def _tidy(line: str) -> str:
    for prefix in ("ERROR: ", "error: ", "fatal: "):
        if line.startswith(prefix):
            line = line[len(prefix):]
    return line if len(line) <= 300 else line[:297] + "..."


def _install_course_helpers():
    import importlib, os, subprocess, sys

    class SetupError(Exception):
        def _render_traceback_(self):  # shown by Jupyter as this one line, without a traceback
            return [f"Set-up failed: {self}"]

    try:
        import utils.checks  # noqa: F401 - installed already: nothing to do
        return
    except ImportError as error:
        name = error.name or "utils"
        missing = "the course helpers (`utils`)" if name.startswith("utils") else f"`{name}`"
    try:
        import google.colab  # noqa: F401 - only Google Colab has it
    except ImportError:
        raise SetupError(f"cannot import {missing} in this Python ({sys.executable}). From the course "
                         f"folder run `pip install -e '.[notebooks]'` (README: Quick start), "
                         "then restart the kernel.") from None
    source = os.environ.get("COURSE_INSTALL_SOURCE")
    if not source:  # not published yet: install a wheel uploaded to this runtime
        import glob
        wheels = sorted(glob.glob("transformer_course-*.whl") + glob.glob("/content/transformer_course-*.whl"))
        if not wheels:
            raise SetupError("the course is not published yet, so there is nothing to install it from. Upload "
                             "the course's wheel (transformer_course-*.whl, built in a copy of the course with "
                             "`pip wheel --no-deps .`) to the Files panel and run this cell again, or set "
                             "COURSE_INSTALL_SOURCE to a pip source; or work on your own machine "
                             "(README: Quick start).")
        source = "file://" + os.path.abspath(wheels[-1])
    print("Installing the course helpers (about a minute)...")
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-color",
                          f"transformer-course[notebooks] @ {source}"], capture_output=True, text=True)
    if pip.returncode != 0:
        raise SetupError(f"could not install the course helpers from {source} "
                         f"({_pip_failure_cause(pip.stderr + chr(10) + pip.stdout)}). Check "
                         "that this runtime is online, or work on your own machine (README: Quick start).")
    importlib.invalidate_caches()
    for name in [name for name in sys.modules if name == "utils" or name.startswith("utils.")]:
        del sys.modules[name]


_install_course_helpers()
del _install_course_helpers, _pip_failure_cause, _pip_output_lines, _tidy

import utils
from utils import checks

utils.seed_everything(0)
device = utils.choose_device()
print(utils.environment.describe(device))
utils.environment.warn_missing_packages()

# %% id="06e4c923"
import math
import time

import matplotlib.pyplot as plt
import torch
import torch.nn as nn
import torch.nn.functional as F

from utils import claims

torch.set_printoptions(precision=4, sci_mode=False)

# %% [markdown] id="44d0cd97"
# ## 1. Cross-attention
#
# Self-attention computes queries, keys and values from one sequence. Cross-attention takes the queries from the
# target $X \in \mathbb{R}^{T \times d}$ and the keys and values from the source's encoding
# $M \in \mathbb{R}^{S \times \text{kdim}}$ (the encoder's "memory"; `kdim`, its width, is $d$ unless the encoder has
# another width):
#
# $$
# Q = X W_Q + b_Q, \qquad K = M W_K + b_K, \qquad V = M W_V + b_V, \qquad
# \text{out} = \operatorname{softmax}\!\Big(\frac{Q K^\top}{\sqrt{d_\text{head}}} + \text{mask}\Big) V \, W_O + b_O
# $$
#
# per head, exactly as in notebook 05. Three things differ from self-attention:
#
# * **$T \neq S$.** The score matrix is $T \times S$: one row per target position, one column per source position.
#   The output has one row per *target* position.
# * **No causal mask.** The source is fully known before the decoder starts, so every target position may read
#   every source position. (The decoder's *self*-attention stays causal.)
# * **A padding mask over the source.** A batch holds sources of different lengths, padded at the end to the
#   longest. The padding positions must get no weight: their scores are set to $-\infty$ before the softmax, the
#   same `key_padding_mask` that `nn.MultiheadAttention` takes (True = padding).
#
# A source that is *all* padding leaves a row with every score at $-\infty$, and the softmax of that row is
# $0/0 = $ NaN. Such a row has nothing to read; this notebook's contract is that its weights are all zero, so the
# heads return the zero vector and the output is $W_O \cdot 0 + b_O = b_O$. (`nn.MultiheadAttention` returns NaN
# there; a NaN in one row of a batch poisons the loss of the whole batch.)
#
# The keys and values depend only on the source, not on the target. When a decoder writes a target one token at a
# time, the source does not change between steps: compute $K$ and $V$ **once** (`project`) and reuse them at every
# step (`attend`). This is notebook 10's KV cache, applied to the source; unlike a self-attention cache it never
# grows.
#
# **The worked example** (the visible tests use it). One head, $d = 2$, every projection the identity and no bias,
# except $b_O = (0.5, -1)$. One target position, $T = 1$, with $x = (2, 0)$; a source of $S = 3$ positions
# $(1, 0), (0, 1), (0, 0)$. The scores are $q \cdot k_j / \sqrt{2} = (\sqrt 2, 0, 0)$.
#
# **Predict before you run** (the cell after the tests computes it with your `CrossAttention`): the three weights,
# and the output. Then: the same with source position 0 marked as padding, and with all three marked.
#
# <details><summary>Answer</summary>
#
# $e^{\sqrt 2} \approx 4.11$, so the weights are $(4.11, 1, 1) / 6.11 \approx (0.67, 0.16, 0.16)$, the heads'
# output is $0.67 \cdot (1, 0) + 0.16 \cdot (0, 1) + 0.16 \cdot (0, 0) = (0.67, 0.16)$, and adding $b_O$ gives
# $(1.17, -0.84)$. With position 0 padded its score is $-\infty$: the weights are $(0, 0.5, 0.5)$ and the output
# $(0, 0.5) + b_O = (0.5, -0.5)$. With all three padded there is nothing to read: weights $(0, 0, 0)$, output
# $b_O = (0.5, -1)$.
# </details>
#
# ### Exercise 1: `CrossAttention` (1 + 3 + 1 points)
#
# *Points: 1 visible, 3 hidden (against `nn.MultiheadAttention` with copied weights: several shapes, $T \neq S$,
# `kdim`/`vdim` $\neq d$, sources of unequal lengths, float64, the weights per head), 1 hidden (edge cases: sources
# that are all padding, $T = S = 1$, the error for a head count that does not divide $d$).*

# %% id="643df693" nbgrader={"grade": false, "grade_id": "CrossAttention", "locked": false, "schema_version": 3, "solution": true, "task": false}
import math

import torch
import torch.nn as nn


class CrossAttention(nn.Module):
    """Multi-head attention from a target sequence (the queries) to a source sequence (the keys and values).

    CrossAttention(d_model, n_head, kdim=None, vdim=None)
      kdim and vdim (default d_model) are the widths of the key and value inputs.
      Parameters, each an nn.Linear with a bias: q_proj (d_model -> d_model), k_proj (kdim -> d_model),
      v_proj (vdim -> d_model), out_proj (d_model -> d_model); no others. Raises ValueError if n_head does
      not divide d_model. Head h uses features h*d_head:(h+1)*d_head of each projection
      (d_head = d_model // n_head), as nn.MultiheadAttention does.

    project(key, value) -> (k, v): key (B, S, kdim) and value (B, S, vdim) projected and split into heads,
      each of shape (B, n_head, S, d_head). Compute it once per source and reuse the pair.

    attend(x, k, v, padding_mask=None, return_weights=False):
      x: (B, T, d_model), the queries' input (T may differ from S); k, v: as project returns them.
      padding_mask: None, or bool (B, S) with True where the source position is padding: no query
      attends to it. There is no causal mask: every target position may read every non-padding source
      position. Scores q.k / sqrt(d_head), softmax over the source axis, weights @ v, heads concatenated,
      out_proj. A row whose source is all padding attends to nothing: its weights are all zero, so its
      output is exactly out_proj.bias (never NaN).
      Returns the output (B, T, d_model), or (output, weights) when return_weights is True, with weights
      of shape (B, n_head, T, S) (zero at padding positions).

    forward(x, key, value, padding_mask=None) = attend(x, *project(key, value), padding_mask). Where no
      source is all padding this equals nn.MultiheadAttention(d_model, n_head, kdim=kdim, vdim=vdim,
      batch_first=True)(x, key, value, key_padding_mask=padding_mask)[0] with the same weights.
    Works in float32 and float64 (the dtype of x and the module's); the inputs are not modified.
    """

    def __init__(self, d_model, n_head, kdim=None, vdim=None):
        super().__init__()
        ### BEGIN SOLUTION
        if d_model % n_head != 0:
            raise ValueError(f"n_head={n_head} does not divide d_model={d_model}")
        self.d_model, self.n_head, self.d_head = d_model, n_head, d_model // n_head
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model if kdim is None else kdim, d_model)
        self.v_proj = nn.Linear(d_model if vdim is None else vdim, d_model)
        self.out_proj = nn.Linear(d_model, d_model)
        ### END SOLUTION

    def project(self, key, value):
        ### BEGIN SOLUTION
        B, S, _ = key.shape
        k = self.k_proj(key).view(B, S, self.n_head, self.d_head).transpose(1, 2)
        v = self.v_proj(value).view(B, S, self.n_head, self.d_head).transpose(1, 2)
        return k, v
        ### END SOLUTION

    def attend(self, x, k, v, padding_mask=None, return_weights=False):
        ### BEGIN SOLUTION
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.n_head, self.d_head).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)
        if padding_mask is not None:
            scores = scores.masked_fill(padding_mask[:, None, None, :], float("-inf"))
        weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)     # an all-padding row: 0, not NaN
        out = self.out_proj((weights @ v).transpose(1, 2).reshape(B, T, self.d_model))
        return (out, weights) if return_weights else out
        ### END SOLUTION

    def forward(self, x, key, value, padding_mask=None):
        ### BEGIN SOLUTION
        return self.attend(x, *self.project(key, value), padding_mask)
        ### END SOLUTION


# %% id="c305c77e" nbgrader={"grade": true, "grade_id": "test_CrossAttention", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
import math

import torch
from utils import checks, probes


def weights_from(mha):
    # nn.MultiheadAttention keeps q, k, v in one matrix (or three when kdim/vdim differ) and one bias.
    if mha._qkv_same_embed_dim:
        wq, wk, wv = mha.in_proj_weight.chunk(3)
    else:
        wq, wk, wv = mha.q_proj_weight, mha.k_proj_weight, mha.v_proj_weight
    bq, bk, bv = mha.in_proj_bias.chunk(3)
    state = {"q_proj.weight": wq, "q_proj.bias": bq, "k_proj.weight": wk, "k_proj.bias": bk,
             "v_proj.weight": wv, "v_proj.bias": bv, "out_proj.weight": mha.out_proj.weight,
             "out_proj.bias": mha.out_proj.bias}
    return {name: tensor.detach().clone() for name, tensor in state.items()}


ca = CrossAttention(2, 1)
checks.assert_equal(sorted(probes.parameters(ca)), ["k_proj.bias", "k_proj.weight", "out_proj.bias", "out_proj.weight",
                                                    "q_proj.bias", "q_proj.weight", "v_proj.bias", "v_proj.weight"],
                    name="the parameters of CrossAttention(2, 1)",
                    hint="Four nn.Linear layers with biases, named q_proj, k_proj, v_proj and out_proj.")

# The worked example: one head, identity projections, out_proj adds the bias [0.5, -1].
eye, zero, bias = torch.eye(2), torch.zeros(2), torch.tensor([0.5, -1.0])
ca.load_state_dict({"q_proj.weight": eye, "q_proj.bias": zero, "k_proj.weight": eye, "k_proj.bias": zero,
                    "v_proj.weight": eye, "v_proj.bias": zero, "out_proj.weight": eye, "out_proj.bias": bias})
x = torch.tensor([[[2.0, 0.0]]])                         # one query (T = 1)
source = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]])  # three source positions (S = 3)
e = math.exp(2 / math.sqrt(2))                           # scores [2, 0, 0] / sqrt(d_head = 2)
expected = torch.tensor([[[e / (e + 2), 1 / (e + 2)]]]) + bias
checks.assert_close(ca(x, source, source), expected, atol=1e-5, name="CrossAttention worked example (T = 1, S = 3)",
                    hint="softmax(q k^T / sqrt(d_head)) over the source axis, times v, then out_proj.")
first_padded = torch.tensor([[True, False, False]])
checks.assert_close(ca(x, source, source, first_padded), torch.tensor([[[0.0, 0.5]]]) + bias, atol=1e-5,
                    name="the worked example with source position 0 padded",
                    hint="padding_mask is True at PADDING: those scores become -inf before the softmax.")
all_padded = torch.tensor([[True, True, True]])
checks.assert_close(ca(x, source, source, all_padded), bias.view(1, 1, 2), atol=1e-6,
                    name="the worked example with every source position padded",
                    hint="Nothing to attend to: the weights are all 0, the output is out_proj.bias, never NaN.")

# Against PyTorch: 3 queries, 5 source positions, keys 6 wide, values 5 wide, the second source 3 long.
torch.manual_seed(0)
mha = torch.nn.MultiheadAttention(8, 2, kdim=6, vdim=5, batch_first=True)
ca = CrossAttention(8, 2, kdim=6, vdim=5)
ca.load_state_dict(weights_from(mha))
x, key, value = torch.randn(2, 3, 8), torch.randn(2, 5, 6), torch.randn(2, 5, 5)
mask = torch.tensor([[False] * 5, [False, False, False, True, True]])
with torch.no_grad():
    expected = mha(x, key, value, key_padding_mask=mask)[0]
out = ca(x, key, value, mask)
checks.assert_tensor(out, name="CrossAttention(8, 2, kdim=6, vdim=5) on T = 3 queries, S = 5 sources", shape=(2, 3, 8),
                     dtype=torch.float32, hint="One output row per QUERY (the target): (B, T, d_model).")
checks.assert_close(out, expected, atol=1e-5, name="CrossAttention against nn.MultiheadAttention with the same weights",
                    hint="Queries from x, keys from key, values from value; no causal mask; split heads like "
                         "nn.MultiheadAttention (head h = features h*d_head:(h+1)*d_head).")
print("CrossAttention: visible tests passed")

# %% id="f08bfa3d" nbgrader={"grade": true, "grade_id": "test_CrossAttention_hidden", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for CrossAttention run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks, probes


def weights_from(mha):
    if mha._qkv_same_embed_dim:
        wq, wk, wv = mha.in_proj_weight.chunk(3)
    else:
        wq, wk, wv = mha.q_proj_weight, mha.k_proj_weight, mha.v_proj_weight
    bq, bk, bv = mha.in_proj_bias.chunk(3)
    state = {"q_proj.weight": wq, "q_proj.bias": bq, "k_proj.weight": wk, "k_proj.bias": bk,
             "v_proj.weight": wv, "v_proj.bias": bv, "out_proj.weight": mha.out_proj.weight,
             "out_proj.bias": mha.out_proj.bias}
    return {name: tensor.detach().clone() for name, tensor in state.items()}


g = torch.Generator().manual_seed(1212)
other = torch.Generator().manual_seed(1214)
for d, h, kdim, vdim, B, T, S, lengths, dtype in [
        (12, 3, None, None, 3, 4, 7, [7, 2, 5], torch.float32),
        (16, 4, 10, 6, 2, 9, 3, [3, 1], torch.float32),
        (8, 1, 8, 12, 4, 1, 6, [6, 6, 4, 1], torch.float64),
        (6, 2, None, None, 2, 5, 5, [5, 5], torch.float32),
        (10, 5, 4, None, 1, 2, 8, [8], torch.float64)]:
    torch.manual_seed(int(torch.randint(1000, (1,), generator=g)))
    mha = torch.nn.MultiheadAttention(d, h, kdim=kdim, vdim=vdim, batch_first=True).to(dtype)
    with torch.no_grad():
        mha.in_proj_bias.normal_(0, 0.5)
        mha.out_proj.bias.normal_(0, 0.5)
    ca = CrossAttention(d, h, kdim, vdim)
    if dtype == torch.float64:
        ca.double()
    ca.load_state_dict(weights_from(mha))
    x = torch.randn(B, T, d, generator=g, dtype=dtype)
    key = torch.randn(B, S, kdim or d, generator=g, dtype=dtype)
    value = torch.randn(B, S, vdim or d, generator=g, dtype=dtype)
    mask = torch.arange(S)[None, :] >= torch.tensor(lengths)[:, None]
    tol = 1e-5 if dtype == torch.float32 else 1e-10
    name = f"CrossAttention({d}, {h}, kdim={kdim}, vdim={vdim}), B={B}, T={T}, S={S}, source lengths {lengths}, {dtype}"
    with torch.no_grad():
        expected, expected_weights = mha(x, key, value, key_padding_mask=mask, average_attn_weights=False)
    out = ca(x, key, value, mask)
    checks.assert_tensor(out, name=name, shape=(B, T, d), dtype=dtype, hint="(B, T, d_model), in the input's dtype.")
    checks.assert_close(out, expected, atol=tol, rtol=tol, name=name + " vs nn.MultiheadAttention",
                        hint="Queries from the target x, keys and values from the source; padding (True) never attended; "
                             "no causal mask between target and source.")
    out = ca(x, key, value)
    with torch.no_grad():
        expected_unmasked = mha(x, key, value)[0]
    checks.assert_close(out, expected_unmasked, atol=tol, rtol=tol, name=name + " without a padding mask (the default)",
                        hint="padding_mask=None: every source position is attended.")
    k, v = ca.project(key, value)
    checks.assert_tensor(k, name=f"project(key, value)[0] for {name}", shape=(B, h, S, d // h), dtype=dtype,
                         hint="Keys split into heads: (B, n_head, S, d_head).")
    checks.assert_tensor(v, name=f"project(key, value)[1] for {name}", shape=(B, h, S, d // h), dtype=dtype,
                         hint="Values split into heads: (B, n_head, S, d_head).")
    out, weights = ca.attend(x, k, v, mask, return_weights=True)
    checks.assert_close(out, expected, atol=tol, rtol=tol, name=name + ": attend(x, *project(key, value), mask)",
                        hint="forward is attend on project's pair: the same numbers.")
    checks.assert_close(weights, expected_weights, atol=tol, rtol=tol,
                        name=name + ": the weights attend returns with return_weights=True",
                        hint="Per head, (B, n_head, T, S), rows summing to 1 over the non-padding source positions.")
    # attend reads the pair it is given: projecting another source in between (a second sentence, another
    # block's cache) changes nothing.
    ca.project(torch.randn(B, S, kdim or d, generator=other, dtype=dtype), torch.randn(B, S, vdim or d, generator=other, dtype=dtype))
    checks.assert_close(ca.attend(x, k, v, mask), expected, atol=tol, rtol=tol,
                        name=name + ": attend(x, k, v, mask) after project() was called on another source",
                        hint="Use the k and v passed to attend; do not keep the last projection on self.")
print("CrossAttention: hidden tests passed")
### END HIDDEN TESTS

# %% id="86e68a60" nbgrader={"grade": true, "grade_id": "test_CrossAttention_hidden_edges", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for CrossAttention (edge cases: all-padding sources, T = S = 1, errors) run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks, probes

g = torch.Generator().manual_seed(1213)
# Sources that are all padding: the row attends to nothing, its weights are 0 and its output is out_proj.bias.
ca = CrossAttention(8, 2, kdim=4, vdim=4)
params = probes.parameters(ca)
x, source = torch.randn(3, 4, 8, generator=g), torch.randn(3, 6, 4, generator=g)
mask = torch.tensor([[True] * 6, [False, True, True, True, True, True], [True] * 6])
out, weights = ca.attend(x, *ca.project(source, source), mask, return_weights=True)
checks.assert_true(not bool(out.isnan().any()), name="CrossAttention on sources that are all padding",
                   problem="the output holds NaN.", hint="softmax over an all -inf row is NaN: give such rows zero weights.")
checks.assert_close(out[0], params["out_proj.bias"].expand(4, 8), atol=1e-6, name="the output for an all-padding source",
                    hint="Zero weights, so the heads give 0 and out_proj gives its bias.")
checks.assert_close(out[2], params["out_proj.bias"].expand(4, 8), atol=1e-6, name="the output for another all-padding source")
checks.assert_close(weights[0], torch.zeros(2, 4, 6), atol=0, name="the weights for an all-padding source",
                    hint="All zero: nothing to attend to.")
checks.assert_close(weights[1, :, :, 0], torch.ones(2, 4), atol=1e-6, name="the weights for a source with one real position",
                    hint="All the weight on the only non-padding position.")
# One query and one source position; a query row of a padded batch does not see the others' sources.
ca = CrossAttention(4, 2)
params = probes.parameters(ca)
x, source = torch.randn(2, 1, 4, generator=g), torch.randn(2, 1, 4, generator=g)
v = source @ params["v_proj.weight"].T + params["v_proj.bias"]
checks.assert_close(ca(x, source, source), v @ params["out_proj.weight"].T + params["out_proj.bias"], atol=1e-5,
                    name="CrossAttention with T = 1 and S = 1", hint="One source position gets all the weight: out_proj(v_proj(source)).")
checks.assert_raises(ValueError, CrossAttention, 10, 4, name="CrossAttention(10, 4)", hint="4 heads do not divide d_model = 10.")
print("CrossAttention: hidden edge tests passed")
### END HIDDEN TESTS

# %% [markdown] id="9c3ca226"
# The worked example with your `CrossAttention`; then three target positions reading two sources of different
# lengths: the rows of the second sequence put no weight on its padding.

# %% id="5bcc8b8e"
example = CrossAttention(2, 1)
with torch.no_grad():
    for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
        getattr(example, name).weight.copy_(torch.eye(2))
        getattr(example, name).bias.zero_()
    example.out_proj.bias.copy_(torch.tensor([0.5, -1.0]))
    query, memory = torch.tensor([[[2.0, 0.0]]]), torch.tensor([[[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]])
    for padded in ([False, False, False], [True, False, False], [True, True, True]):
        out, weights = example.attend(query, *example.project(memory, memory), torch.tensor([padded]), return_weights=True)
        print(f"worked example, padding {padded}: weights {[round(w, 2) for w in weights.flatten().tolist()]}, "
              f"output {[round(o, 2) for o in out.flatten().tolist()]}")

torch.manual_seed(0)
cross = CrossAttention(8, 2, kdim=6, vdim=6)
target = torch.randn(2, 3, 8)                    # B = 2 target sequences of T = 3 positions
source = torch.randn(2, 5, 6)                    # their sources, S = 5 positions, 6 features each
padding = torch.tensor([[False] * 5, [False, False, True, True, True]])   # the second source has 2 real tokens
k, v = cross.project(source, source)
out, weights = cross.attend(target, k, v, padding, return_weights=True)
print(f"queries {tuple(target.shape)}, keys and values {tuple(k.shape)} -> output {tuple(out.shape)}, "
      f"weights {tuple(weights.shape)}")
print("second sequence, head 0, weights (rows: target positions, columns: source positions):")
print(weights[1, 0])
print("weight on padding positions:", weights[1, :, :, 2:].abs().max().item())

# %% [markdown] id="9c85d3c0"
# ## 2. The encoder block and the decoder block
#
# Both are Pre-LN blocks like notebook 07's `PreLNBlock`: each sublayer reads a LayerNorm of the residual stream
# and adds its result back.
#
# * **Encoder block**: bidirectional self-attention (a padding mask, no causal mask), then the FFN. It has exactly
#   the parameters of PyTorch's `nn.TransformerEncoderLayer(..., norm_first=True)`, so the tests load one
#   `state_dict` into both and compare.
# * **Decoder block**: three sublayers. Causal self-attention over the target, then cross-attention from the
#   target to the encoder's output, then the FFN:
#
# $$
# h = x + \text{SelfAttn}_\text{causal}(\text{LN}_1(x)), \qquad
# h = h + \text{CrossAttn}(\text{LN}_2(h), M), \qquad
# \text{out} = h + \text{FFN}(\text{LN}_3(h)).
# $$
#
# The memory $M$ enters cross-attention as it is: the encoder ends with its own LayerNorm, so normalising $M$ again
# in every decoder block would only add parameters. The self-attention sublayers use `nn.MultiheadAttention` (you
# wrote it in notebook 05); cross-attention is yours from Exercise 1.
#
# ### Exercise 2: `EncoderBlock` (1 + 2 points)
#
# *Points: 1 visible, 2 hidden (against `nn.TransformerEncoderLayer` with the same weights: several shapes, unequal
# source lengths, float64, without a mask).*

# %% id="a920fbc1" nbgrader={"grade": false, "grade_id": "EncoderBlock", "locked": false, "schema_version": 3, "solution": true, "task": false}
import torch
import torch.nn as nn
import torch.nn.functional as F


class EncoderBlock(nn.Module):
    """A Pre-LN encoder block: bidirectional self-attention with a key-padding mask, then the FFN.

    EncoderBlock(d_model, n_head, d_ff=None)      d_ff defaults to 4 * d_model
      Submodules, with the names and shapes of nn.TransformerEncoderLayer(d_model, n_head, d_ff,
      dropout=0.0, activation="gelu", batch_first=True, norm_first=True), so one state_dict loads into both:
        norm1, norm2: nn.LayerNorm(d_model);
        self_attn: nn.MultiheadAttention(d_model, n_head, batch_first=True);
        linear1: nn.Linear(d_model, d_ff); linear2: nn.Linear(d_ff, d_model).
      No dropout; the activation is the exact GELU (F.gelu, not the tanh approximation).

    forward(x, padding_mask=None):
      x: (B, S, d_model); padding_mask: None, or bool (B, S), True at source padding: no position attends
      to a padding position (padding positions still get an output, which later layers ignore).
        h   = x + self_attn(norm1(x))          every position reads every non-padding position: no causal mask
        out = h + linear2(gelu(linear1(norm2(h))))
      Returns a new tensor (B, S, d_model); x is not modified.
    """

    def __init__(self, d_model, n_head, d_ff=None):
        super().__init__()
        ### BEGIN SOLUTION
        d_ff = 4 * d_model if d_ff is None else d_ff
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.self_attn = nn.MultiheadAttention(d_model, n_head, batch_first=True)
        self.linear1, self.linear2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)
        ### END SOLUTION

    def forward(self, x, padding_mask=None):
        ### BEGIN SOLUTION
        h = self.norm1(x)
        x = x + self.self_attn(h, h, h, key_padding_mask=padding_mask, need_weights=False)[0]
        return x + self.linear2(F.gelu(self.linear1(self.norm2(x))))
        ### END SOLUTION


# %% id="674de536" nbgrader={"grade": true, "grade_id": "test_EncoderBlock", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
import torch
from utils import checks, probes

torch.manual_seed(0)
reference = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation="gelu", batch_first=True, norm_first=True)
block = EncoderBlock(8, 2, 16)
block.load_state_dict({k: v.detach().clone() for k, v in reference.state_dict().items()})
x = torch.randn(2, 5, 8)
mask = torch.tensor([[False] * 5, [False, False, False, True, True]])   # the second source is 3 long
with torch.no_grad():
    expected = reference(x, src_key_padding_mask=mask)
out = block(x, mask)
checks.assert_tensor(out, name="EncoderBlock(8, 2, 16) on (2, 5, 8)", shape=(2, 5, 8), dtype=torch.float32)
checks.assert_close(out, expected, atol=1e-5,
                    name="EncoderBlock against nn.TransformerEncoderLayer(norm_first=True, gelu, dropout=0)",
                    hint="x + self_attn(norm1(x)) with key_padding_mask, then + linear2(gelu(linear1(norm2(.)))).")
# Bidirectional: the first position reads the last real one.
changed = x.clone()
changed[0, 4] = torch.randn(8)            # (adding a constant would vanish in norm1)
checks.assert_true(bool((block(changed, mask)[0, 0] - out[0, 0]).abs().max() > 1e-4), name="EncoderBlock output at position 0",
                   problem="it did not change when the token at position 4 changed.",
                   hint="An encoder has no causal mask: every position reads the whole source.")
print("EncoderBlock: visible tests passed")

# %% id="0d6587fe" nbgrader={"grade": true, "grade_id": "test_EncoderBlock_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for EncoderBlock run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks, probes

g = torch.Generator().manual_seed(1221)
for d, h, d_ff, B, S, lengths, dtype in [(12, 3, 20, 3, 6, [6, 2, 4], torch.float32), (8, 1, None, 2, 4, [1, 4], torch.float64),
                                         (16, 4, 32, 1, 9, [9], torch.float32), (6, 2, 10, 4, 3, [3, 3, 2, 1], torch.float32)]:
    torch.manual_seed(int(torch.randint(1000, (1,), generator=g)))
    width = 4 * d if d_ff is None else d_ff
    reference = torch.nn.TransformerEncoderLayer(d, h, width, dropout=0.0, activation="gelu", batch_first=True,
                                                 norm_first=True).to(dtype)
    with torch.no_grad():
        for name_, p in reference.named_parameters():
            if name_.startswith("norm"):
                p.add_(0.3 * torch.randn(p.shape, generator=g, dtype=dtype))
    block = EncoderBlock(d, h) if d_ff is None else EncoderBlock(d, h, d_ff)
    if dtype == torch.float64:
        block.double()
    block.load_state_dict({k: v.detach().clone() for k, v in reference.state_dict().items()})
    x = torch.randn(B, S, d, generator=g, dtype=dtype)
    mask = torch.arange(S)[None, :] >= torch.tensor(lengths)[:, None]
    tol = 2e-5 if dtype == torch.float32 else 1e-10
    name = f"EncoderBlock({d}, {h}, {d_ff}) on B={B}, S={S}, lengths {lengths}, {dtype}"
    with torch.no_grad():
        expected = reference(x, src_key_padding_mask=mask)
        expected_unmasked = reference(x)
    out = block(x, mask)
    checks.assert_tensor(out, name=name, shape=(B, S, d), dtype=dtype)
    checks.assert_close(out, expected, atol=tol, rtol=tol, name=name + " vs nn.TransformerEncoderLayer",
                        hint="Pre-LN: norm1 before attention, norm2 before the FFN; padding keys masked; no causal mask.")
    checks.assert_close(block(x), expected_unmasked, atol=tol, rtol=tol, name=name + " without a padding mask (the default)")
print("EncoderBlock: hidden tests passed")
### END HIDDEN TESTS

# %% [markdown] id="49d12684"
# ### Exercise 3: `DecoderBlock` (1 + 2 + 1 points)
#
# *Points: 1 visible, 2 hidden (against `nn.TransformerDecoderLayer` with the same weights: several shapes,
# $T \neq S$, unequal source lengths, float64, with `memory` and with `memory_kv`), 1 hidden (the default `d_ff`,
# the error when both or neither source is given, causal on the target side, not causal on the source side, the
# mask made on x's device).*

# %% id="ff9f7289" nbgrader={"grade": false, "grade_id": "DecoderBlock", "locked": false, "schema_version": 3, "solution": true, "task": false}
import torch
import torch.nn as nn
import torch.nn.functional as F


class DecoderBlock(nn.Module):
    """A Pre-LN decoder block: causal self-attention, then cross-attention to the source, then the FFN.

    DecoderBlock(d_model, n_head, d_ff=None)      d_ff defaults to 4 * d_model
      Submodules: norm1, norm2, norm3: nn.LayerNorm(d_model);
        self_attn: nn.MultiheadAttention(d_model, n_head, batch_first=True);
        cross_attn: your CrossAttention(d_model, n_head);
        linear1: nn.Linear(d_model, d_ff); linear2: nn.Linear(d_ff, d_model). Exact GELU, no dropout.
      (nn.TransformerDecoderLayer(..., norm_first=True) is the same block; its multihead_attn is our
      cross_attn with the three input projections kept in one matrix.)

    forward(x, memory=None, memory_padding_mask=None, memory_kv=None):
      x: (B, T, d_model), the target side. The source comes either as memory, (B, S, d_model), the
      encoder's output used as it is (not normalised again here), or as memory_kv, the pair
      self.cross_attn.project(memory, memory) computed once beforehand: give exactly one of the two, else
      ValueError. memory_padding_mask: None, or bool (B, S), True at source padding.
        h   = x + self_attn(norm1(x)) with a causal mask   (target position t reads positions <= t only)
        h   = h + cross_attn(norm2(h), memory)             (every non-padding source position, no causal mask)
        out = h + linear2(gelu(linear1(norm3(h))))
      Both ways of passing the source give the same result. Returns a new tensor (B, T, d_model). Runs on
      the device of the block and its inputs (a GPU too): every tensor it makes, the causal mask included,
      is made on x.device.
    """

    def __init__(self, d_model, n_head, d_ff=None):
        super().__init__()
        ### BEGIN SOLUTION
        d_ff = 4 * d_model if d_ff is None else d_ff
        self.norm1, self.norm2, self.norm3 = nn.LayerNorm(d_model), nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.self_attn = nn.MultiheadAttention(d_model, n_head, batch_first=True)
        self.cross_attn = CrossAttention(d_model, n_head)
        self.linear1, self.linear2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)
        ### END SOLUTION

    def forward(self, x, memory=None, memory_padding_mask=None, memory_kv=None):
        ### BEGIN SOLUTION
        if (memory is None) == (memory_kv is None):
            raise ValueError("give exactly one of memory and memory_kv")
        if memory_kv is None:
            memory_kv = self.cross_attn.project(memory, memory)
        T = x.shape[1]
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        h = self.norm1(x)
        x = x + self.self_attn(h, h, h, attn_mask=causal, need_weights=False)[0]
        x = x + self.cross_attn.attend(self.norm2(x), *memory_kv, memory_padding_mask)
        return x + self.linear2(F.gelu(self.linear1(self.norm3(x))))
        ### END SOLUTION


# %% id="5c828550" nbgrader={"grade": true, "grade_id": "test_DecoderBlock", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
import torch
from utils import checks, probes


def decoder_weights_from(reference):
    # nn.TransformerDecoderLayer's multihead_attn keeps q, k, v in one matrix; CrossAttention splits them.
    state = {k: v.detach().clone() for k, v in reference.state_dict().items() if not k.startswith("multihead_attn")}
    wq, wk, wv = reference.multihead_attn.in_proj_weight.detach().clone().chunk(3)
    bq, bk, bv = reference.multihead_attn.in_proj_bias.detach().clone().chunk(3)
    state.update({"cross_attn.q_proj.weight": wq, "cross_attn.q_proj.bias": bq, "cross_attn.k_proj.weight": wk,
                  "cross_attn.k_proj.bias": bk, "cross_attn.v_proj.weight": wv, "cross_attn.v_proj.bias": bv,
                  "cross_attn.out_proj.weight": reference.multihead_attn.out_proj.weight.detach().clone(),
                  "cross_attn.out_proj.bias": reference.multihead_attn.out_proj.bias.detach().clone()})
    return state


torch.manual_seed(0)
reference = torch.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, activation="gelu", batch_first=True, norm_first=True)
block = DecoderBlock(8, 2, 16)
block.load_state_dict(decoder_weights_from(reference))
x, memory = torch.randn(2, 4, 8), torch.randn(2, 6, 8)
mask = torch.tensor([[False] * 6, [False, False, True, True, True, True]])
causal = torch.ones(4, 4, dtype=torch.bool).triu(1)
with torch.no_grad():
    expected = reference(x, memory, tgt_mask=causal, memory_key_padding_mask=mask)
out = block(x, memory, mask)
checks.assert_tensor(out, name="DecoderBlock(8, 2, 16) on a target (2, 4, 8) and a source (2, 6, 8)", shape=(2, 4, 8),
                     dtype=torch.float32, hint="One output per TARGET position.")
checks.assert_close(out, expected, atol=1e-5, name="DecoderBlock against nn.TransformerDecoderLayer(norm_first=True)",
                    hint="Three residual sublayers: causal self-attention on norm1(x), cross-attention from norm2(x) to "
                         "the memory (not normalised here), the FFN on norm3(x).")
kv = block.cross_attn.project(memory, memory)
checks.assert_close(block(x, memory_padding_mask=mask, memory_kv=kv), expected, atol=1e-5,
                    name="DecoderBlock with memory_kv = cross_attn.project(memory, memory) instead of memory",
                    hint="With memory_kv given, skip the projection and pass the pair to cross_attn.attend.")
print("DecoderBlock: visible tests passed")

# %% id="f126e5de" nbgrader={"grade": true, "grade_id": "test_DecoderBlock_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for DecoderBlock run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks, probes


def decoder_weights_from(reference):
    state = {k: v.detach().clone() for k, v in reference.state_dict().items() if not k.startswith("multihead_attn")}
    wq, wk, wv = reference.multihead_attn.in_proj_weight.detach().clone().chunk(3)
    bq, bk, bv = reference.multihead_attn.in_proj_bias.detach().clone().chunk(3)
    state.update({"cross_attn.q_proj.weight": wq, "cross_attn.q_proj.bias": bq, "cross_attn.k_proj.weight": wk,
                  "cross_attn.k_proj.bias": bk, "cross_attn.v_proj.weight": wv, "cross_attn.v_proj.bias": bv,
                  "cross_attn.out_proj.weight": reference.multihead_attn.out_proj.weight.detach().clone(),
                  "cross_attn.out_proj.bias": reference.multihead_attn.out_proj.bias.detach().clone()})
    return state


g = torch.Generator().manual_seed(1231)
for d, h, d_ff, B, T, S, lengths, dtype in [(12, 3, 20, 3, 5, 7, [7, 2, 4], torch.float32),
                                            (8, 1, None, 2, 1, 3, [1, 3], torch.float64),
                                            (16, 4, 24, 1, 9, 2, [2], torch.float32),
                                            (6, 2, 10, 2, 6, 6, [6, 5], torch.float32)]:
    torch.manual_seed(int(torch.randint(1000, (1,), generator=g)))
    width = 4 * d if d_ff is None else d_ff
    reference = torch.nn.TransformerDecoderLayer(d, h, width, dropout=0.0, activation="gelu", batch_first=True,
                                                 norm_first=True).to(dtype)
    with torch.no_grad():
        for name_, p in reference.named_parameters():
            if name_.startswith("norm") or name_.endswith("bias"):
                p.add_(0.3 * torch.randn(p.shape, generator=g, dtype=dtype))
    block = DecoderBlock(d, h) if d_ff is None else DecoderBlock(d, h, d_ff)
    if dtype == torch.float64:
        block.double()
    block.load_state_dict(decoder_weights_from(reference))
    x = torch.randn(B, T, d, generator=g, dtype=dtype)
    memory = torch.randn(B, S, d, generator=g, dtype=dtype) * 2 + 1
    mask = torch.arange(S)[None, :] >= torch.tensor(lengths)[:, None]
    causal = torch.ones(T, T, dtype=torch.bool).triu(1)
    tol = 2e-5 if dtype == torch.float32 else 1e-10
    name = f"DecoderBlock({d}, {h}, {d_ff}) on B={B}, T={T}, S={S}, source lengths {lengths}, {dtype}"
    with torch.no_grad():
        expected = reference(x, memory, tgt_mask=causal, memory_key_padding_mask=mask)
        expected_unmasked = reference(x, memory, tgt_mask=causal)
    out = block(x, memory, mask)
    checks.assert_tensor(out, name=name, shape=(B, T, d), dtype=dtype)
    checks.assert_close(out, expected, atol=tol, rtol=tol, name=name + " vs nn.TransformerDecoderLayer",
                        hint="Causal self-attention, then cross-attention to the raw memory with its padding mask, then "
                             "the FFN, each on its own LayerNorm of the stream and added back.")
    checks.assert_close(block(x, memory), expected_unmasked, atol=tol, rtol=tol,
                        name=name + " without a padding mask (the default)")
    kv = block.cross_attn.project(memory, memory)
    checks.assert_close(block(x, memory_padding_mask=mask, memory_kv=kv), expected, atol=tol, rtol=tol,
                        name=name + " with memory_kv")
print("DecoderBlock: hidden tests passed")
### END HIDDEN TESTS

# %% id="548b3b7e" nbgrader={"grade": true, "grade_id": "test_DecoderBlock_hidden_edges", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for DecoderBlock (defaults, errors, which positions each output reads) run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks, probes

g = torch.Generator().manual_seed(1232)
block = DecoderBlock(8, 2)
params = probes.parameters(block)
checks.assert_equal(tuple(params["linear1.weight"].shape), (32, 8), name="DecoderBlock(8, 2).linear1.weight's shape",
                    hint="d_ff defaults to 4 * d_model.")
checks.assert_equal(sorted(k for k in params if k.startswith("cross_attn.")),
                    ["cross_attn.k_proj.bias", "cross_attn.k_proj.weight", "cross_attn.out_proj.bias",
                     "cross_attn.out_proj.weight", "cross_attn.q_proj.bias", "cross_attn.q_proj.weight",
                     "cross_attn.v_proj.bias", "cross_attn.v_proj.weight"],
                    name="DecoderBlock's cross-attention parameters", hint="cross_attn is a CrossAttention(d_model, n_head).")
x, memory = torch.randn(1, 3, 8, generator=g), torch.randn(1, 4, 8, generator=g)
checks.assert_raises(ValueError, block, x, name="DecoderBlock called with neither memory nor memory_kv",
                     hint="Exactly one of memory and memory_kv.")
kv = block.cross_attn.project(memory, memory)
checks.assert_raises(ValueError, block, x, memory, None, kv, name="DecoderBlock called with both memory and memory_kv",
                     hint="Exactly one of memory and memory_kv.")
# Causal on the target side: changing the last target position changes nothing before it.
out = block(x, memory)
changed = x.clone()
changed[0, 2] = torch.randn(8, generator=g)
checks.assert_close(block(changed, memory)[0, :2], out[0, :2], atol=1e-6, name="DecoderBlock outputs 0 and 1 after target position 2 changed",
                    hint="Self-attention in the decoder is causal: position t reads target positions <= t only.")
# Not causal on the source side: the first target position reads the last source position.
changed = memory.clone()
changed[0, 3] = torch.randn(8, generator=g)
checks.assert_true(bool((block(x, changed)[0, 0] - out[0, 0]).abs().max() > 1e-4), name="DecoderBlock output 0",
                   problem="it did not change when source position 3 changed.",
                   hint="Cross-attention has no causal mask: every target position reads the whole source.")
# On the device of x: the block, x and memory on PyTorch's meta device (shapes, no values) stand in for a GPU. A causal
# mask made without device= meets the meta scores; code that reads values cannot run there and is not judged.
seen = probes.make("utils.meta_device.module_output_device_on_meta", block, x, memory=memory)
checks.assert_kept_on_meta(seen,
                           name="DecoderBlock(8, 2) with its weights, x and memory on another device than the CPU (the meta device)",
                           hint="Make the causal mask on x.device (torch.ones(T, T, dtype=torch.bool, device=x.device)): "
                                "with x on a GPU, a tensor made without device= is on the CPU.")
# The same with the values kept (utils.fake_cuda), so an answer that reads values is judged too.
seen = probes.make("utils.fake_cuda.module_output_device_on_fake_cuda", block, x, memory=memory)
checks.assert_kept_on_fake_cuda(seen, name="DecoderBlock(8, 2) on a GPU (emulated, the values kept)",
                                hint="Make the causal mask on x.device: with x on a GPU, a tensor made without device= is "
                                     "on the CPU.")
print("DecoderBlock: hidden edge tests passed")
### END HIDDEN TESTS

# %% [markdown] id="e299b257"
# ## 3. Masked language modelling
#
# An encoder sees the whole input, so "predict the next token" is trivial for it. BERT's objective instead
# corrupts the input and asks for the originals: choose 15% of the positions, and at each chosen position
#
# * replace the token by `[MASK]` with probability 0.8,
# * by a random token with probability 0.1,
# * leave it as it is with probability 0.1,
#
# then train with cross-entropy **only at the chosen positions**: the labels hold the original id there and
# $-100$ (PyTorch's `ignore_index`) everywhere else. Why not always `[MASK]`? BERT's paper gives the reason: the
# token `[MASK]` never occurs in the text the model is fine-tuned and used on, so a model pre-trained only on inputs
# with `[MASK]` at every position it predicts would meet a mismatch between pre-training and fine-tuning. Leaving
# 10% of the chosen tokens unchanged biases the representation towards the word actually observed; and since the
# model cannot tell which tokens were replaced by random ones or left alone, it has to keep a contextual
# representation of every input token, not only of `[MASK]`. Padding and the special tokens (`[CLS]`, `[SEP]`,
# padding, `[MASK]` itself) are never chosen: predicting where padding is teaches nothing.
#
# How the positions are chosen differs between implementations. Google's original BERT code chooses exactly
# $\text{round}(0.15\,n)$ of a sequence's $n$ tokens (at most `max_predictions_per_seq`) and draws its random
# replacements from the whole vocabulary. This notebook follows Hugging Face's `DataCollatorForLanguageModeling`
# instead: each position is chosen independently (a coin with probability 0.15), so a sequence gets 15% on average,
# not exactly. Drawing the random replacements from the ordinary ids only (never a special token) is this notebook's
# own choice: a random `[PAD]` or `[MASK]` in the middle of a text would be a token the model never sees there. All
# randomness comes from a `torch.Generator` you are given, so a test can replay it.
#
# ### Exercise 4: `mask_tokens` (1 + 3 + 1 points)
#
# *Points: 1 visible, 3 hidden (the statistics over many draws with tolerances of five binomial standard
# deviations: the share chosen and its spread from row to row, the 80/10/10 split, random tokens uniform over the
# ordinary ids, the original included (tried with only two ordinary ids); never a special or
# padding position; labels; the generator as the only source of randomness), 1 hidden (edge cases: nothing
# maskable, one token, `mask_prob` 0, outside $[0, 1]$, the default, a `mask_id` that `special_ids` does not list).*

# %% id="f6e44746" nbgrader={"grade": false, "grade_id": "mask_tokens", "locked": false, "schema_version": 3, "solution": true, "task": false}
import torch


def mask_tokens(ids, mask_id, vocab_size, special_ids, generator, mask_prob=0.15):
    """BERT's masking: the inputs and labels of a masked-language-model batch.

    ids: int64 tensor (B, T) of token ids in [0, vocab_size). special_ids: a list of ints (padding,
    CLS, SEP, ...): positions holding them are never chosen, and they are never drawn as random tokens.
    mask_id is special too, whether or not special_ids lists it (listing it changes nothing): a position that
    already holds it is never chosen, and it is never drawn as a random token. Every other id in
    [0, vocab_size) is "ordinary". generator: a torch.Generator, the only source of randomness (the same
    generator state gives the same result).
      1. Choose each position whose id is ordinary independently with probability mask_prob.
      2. At each chosen position, independently: with probability 0.8 write mask_id; with 0.1 a random
         ordinary token, uniform over the ordinary ids (it may equal the original); with 0.1 keep the original.
    Returns (inputs, labels), two new int64 tensors of ids's shape: inputs as above; labels hold the
    original id at every chosen position and -100 everywhere else (F.cross_entropy's ignore_index).
    ids is not modified. With no ordinary position (or mask_prob = 0) inputs equals ids and every label is
    -100. Raises ValueError if mask_prob is outside [0, 1].
    """
    ### BEGIN SOLUTION
    if not 0.0 <= mask_prob <= 1.0:
        raise ValueError(f"mask_prob must be in [0, 1], got {mask_prob}")
    special = {int(i) for i in special_ids} | {int(mask_id)}
    ordinary = torch.tensor([i for i in range(vocab_size) if i not in special], dtype=torch.long)
    inputs, labels = ids.clone(), torch.full_like(ids, -100)
    if len(ordinary) == 0:
        return inputs, labels
    maskable = torch.isin(ids, ordinary)
    chosen = (torch.rand(ids.shape, generator=generator) < mask_prob) & maskable
    action = torch.rand(ids.shape, generator=generator)
    random_tokens = ordinary[torch.randint(len(ordinary), ids.shape, generator=generator)]
    inputs[chosen & (action < 0.8)] = mask_id
    swap = chosen & (action >= 0.8) & (action < 0.9)
    inputs[swap] = random_tokens[swap]
    labels[chosen] = ids[chosen]
    return inputs, labels
    ### END SOLUTION


# %% id="33ad0ef9" nbgrader={"grade": true, "grade_id": "test_mask_tokens", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
import torch
from utils import checks, probes

SPECIAL = [0, 1, 2, 3]            # pad, CLS, SEP, MASK
ids = torch.tensor([[1, 7, 8, 9, 10, 11, 2, 0, 0],
                    [1, 12, 13, 2, 14, 15, 16, 17, 2]])
is_special = torch.isin(ids, torch.tensor(SPECIAL))

# mask_prob = 1: every ordinary position is chosen, no special one.
traced = probes.traced_call(mask_tokens, ids, 3, 20, SPECIAL, torch.Generator().manual_seed(0), 1.0)
inputs, labels = traced.result
checks.assert_equal(traced.args_after[0].tolist(), ids.tolist(), name="ids after mask_tokens",
                    hint="Leave ids unchanged: work on a clone.")
checks.assert_tensor(inputs, name="inputs from mask_tokens", shape=(2, 9), dtype=torch.int64)
checks.assert_tensor(labels, name="labels from mask_tokens", shape=(2, 9), dtype=torch.int64)
checks.assert_equal(labels.tolist(), torch.where(is_special, -100, ids).tolist(), name="labels with mask_prob=1.0",
                    hint="The original id at every chosen position (all ordinary ones here), -100 at pads and specials.")
checks.assert_equal(inputs[is_special].tolist(), ids[is_special].tolist(), name="inputs at the special and padding positions",
                    hint="Specials and pads are never chosen, so never replaced.")

# The 80/10/10 split over many positions (a spread of 5 standard deviations is allowed).
big = torch.randint(4, 20, (200, 100), generator=torch.Generator().manual_seed(1))
inputs, labels = mask_tokens(big, 3, 20, SPECIAL, torch.Generator().manual_seed(2))
chosen = labels != -100
n = int(chosen.sum())
checks.assert_true(abs(n / big.numel() - 0.15) < 5 * (0.15 * 0.85 / big.numel()) ** 0.5, name="the share of positions chosen",
                   problem=f"{n} of {big.numel()} = {n / big.numel():.3f}, expected 0.15.",
                   hint="Choose each ordinary position with probability mask_prob; labels mark the chosen ones.")
masked = int((inputs[chosen] == 3).sum())
checks.assert_true(abs(masked / n - 0.8) < 5 * (0.16 / n) ** 0.5, name="the share of chosen positions set to the mask id",
                   problem=f"{masked / n:.3f}, expected 0.8.", hint="80% of the CHOSEN positions get mask_id.")
kept = int((inputs[chosen] == big[chosen]).sum())
checks.assert_true(abs(kept / n - (0.1 + 0.1 / 16)) < 5 * (0.1 * 0.9 / n) ** 0.5, name="the share of chosen positions left as they were",
                   problem=f"{kept / n:.3f}, expected 0.1 (plus random tokens that happen to equal the original).",
                   hint="80% mask, 10% a random ordinary token, 10% unchanged (still with a label).")
same = mask_tokens(big, 3, 20, SPECIAL, torch.Generator().manual_seed(2))
checks.assert_equal(same[0].tolist(), inputs.tolist(), name="mask_tokens twice with generators seeded alike",
                    hint="Draw every random number from `generator`.")
print("mask_tokens: visible tests passed")

# %% id="e3d2571e" nbgrader={"grade": true, "grade_id": "test_mask_tokens_hidden", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for mask_tokens run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks, probes


def within(count, total, p, what, hint):
    spread = 5 * (p * (1 - p) / total) ** 0.5 + 1e-12
    checks.assert_true(abs(count / total - p) <= spread, name=what,
                       problem=f"{count} of {total} = {count / total:.4f}, expected {p:.4f} +- {spread:.4f}.", hint=hint)


g = torch.Generator().manual_seed(3131)
# The last case has two ordinary ids, so a random replacement equals the original half the time: 15% of the chosen
# positions keep their id (a draw that avoids the original gives 10%, about 18 standard deviations lower).
for vocab, special, mask_id, p, shape in [(30, [0, 1, 2, 3], 3, 0.15, (300, 200)), (12, [0, 5, 11], 11, 0.3, (50, 400)),
                                          (50, [0, 1, 2, 3, 4], 4, 0.5, (64, 128)), (6, [0, 1, 2, 3], 3, 0.5, (200, 200))]:
    ordinary = [i for i in range(vocab) if i not in special]
    ids = torch.tensor(ordinary)[torch.randint(len(ordinary), shape, generator=g)]
    pads = torch.rand(shape, generator=g) < 0.2
    ids = torch.where(pads, special[0], ids)
    ids[:, 0] = special[-1] if len(special) > 1 else special[0]
    label = f"mask_tokens(vocab={vocab}, special={special}, mask_id={mask_id}, mask_prob={p}) on {shape}"
    inputs, labels = mask_tokens(ids, mask_id, vocab, special, torch.Generator().manual_seed(int(torch.randint(10**6, (1,), generator=g))), p)
    checks.assert_tensor(inputs, name=label + ": inputs", shape=shape, dtype=torch.int64)
    checks.assert_tensor(labels, name=label + ": labels", shape=shape, dtype=torch.int64)
    is_special = torch.isin(ids, torch.tensor(special))
    chosen = labels != -100
    checks.assert_equal(int((chosen & is_special).sum()), 0, name=label + ": chosen special or padding positions",
                        hint="Only ordinary ids may be chosen.")
    checks.assert_equal(labels[chosen].tolist(), ids[chosen].tolist(), name=label + ": labels at chosen positions",
                        hint="The ORIGINAL id.")
    checks.assert_equal(sorted(set(labels[~chosen].tolist())), [-100] if bool((~chosen).any()) else [], name=label + ": labels elsewhere",
                        hint="-100 at every position that is not chosen.")
    checks.assert_equal(inputs[~chosen].tolist(), ids[~chosen].tolist(), name=label + ": inputs at positions not chosen",
                        hint="Only chosen positions change.")
    eligible, n = int((~is_special).sum()), int(chosen.sum())
    within(n, eligible, p, label + ": the share of ordinary positions chosen", "Each ordinary position with probability mask_prob.")
    picked_in, picked_ids = inputs[chosen], ids[chosen]
    within(int((picked_in == mask_id).sum()), n, 0.8, label + ": the share of chosen positions masked", "80% get mask_id.")
    within(int((picked_in == picked_ids).sum()), n, 0.1 + 0.1 / len(ordinary), label + ": the share of chosen positions kept",
           "10% keep the original (and a random token equals the original once in len(ordinary)).")
    random_tokens = picked_in[(picked_in != mask_id) & (picked_in != picked_ids)]
    checks.assert_equal(int(torch.isin(random_tokens, torch.tensor(special)).sum()), 0, name=label + ": random tokens that are special",
                        hint="Random replacements come from the ordinary ids only.")
    counts = torch.bincount(random_tokens, minlength=vocab)[ordinary].tolist()
    total = len(random_tokens)
    for token, count in zip(ordinary, counts):
        expected = total / len(ordinary)
        spread = 6 * expected ** 0.5 + 3
        checks.assert_true(abs(count - expected) <= spread, name=label + f": random replacements equal to {token}",
                           problem=f"{count}, expected about {expected:.0f}.", hint="Uniform over the ordinary ids.")
# A skewed batch: every ordinary position holds the same id, 7. The random replacements still come uniformly from all
# the ordinary ids of the vocabulary, not from the ids the batch happens to hold: 1/8 of them equal 7 (kept: 0.1 + 0.1/8
# of the chosen positions) and each of the 7 other ordinary ids gets 0.1/8.
ids = torch.full((300, 200), 7)
ids[:, 0], ids[:, -1] = 1, 2
label = "mask_tokens(vocab=12, special=[0, 1, 2, 3], mask_id=3, mask_prob=0.5) on rows of the single ordinary id 7"
inputs, labels = mask_tokens(ids, 3, 12, [0, 1, 2, 3], torch.Generator().manual_seed(5151), 0.5)
chosen = labels != -100
n = int(chosen.sum())
counts = torch.bincount(inputs[chosen], minlength=12).tolist()
uniform_hint = ("Draw the random token uniformly from the ordinary ids of the vocabulary (every id in [0, vocab_size) "
                "not in special_ids), not from the tokens of the batch.")
within(counts[7], n, 0.1 + 0.1 / 8, label + ": the share of chosen positions that hold 7 afterwards", uniform_hint)
for token in (4, 5, 6, 8, 9, 10, 11):
    within(counts[token], n, 0.1 / 8, label + f": the share of chosen positions replaced by {token}", uniform_hint)
# Each position is chosen independently, so the number chosen in a row of n ordinary positions is binomial(n, p):
# it varies from row to row with variance n p (1 - p). (Choosing exactly round(n p) per row gives no variance.)
rows, n, p = 2000, 38, 0.15
ids = torch.randint(4, 30, (rows, n + 2), generator=g)
ids[:, 0], ids[:, -1] = 1, 2
_, labels = mask_tokens(ids, 3, 30, [0, 1, 2, 3], torch.Generator().manual_seed(4242), p)
variance = n * p * (1 - p)
excess_kurtosis = (1 - 6 * p * (1 - p)) / variance
spread = 5 * variance * ((excess_kurtosis + 3) / rows - (rows - 3) / (rows * (rows - 1))) ** 0.5   # 5 sd of a sample variance
sample = float((labels != -100).sum(dim=1).double().var())
checks.assert_true(abs(sample - variance) <= spread, name=f"the number of positions chosen per row over {rows} rows of {n}",
                   problem=f"its variance is {sample:.3f}, expected {variance:.3f} +- {spread:.3f} (binomial).",
                   hint="Choose each ordinary position independently with probability mask_prob (a coin per position), "
                        "not a fixed number per row.")
# The generator is the only source of randomness.
ids = torch.randint(4, 30, (20, 30), generator=g)
first = mask_tokens(ids, 3, 30, [0, 1, 2, 3], torch.Generator().manual_seed(77))
torch.manual_seed(123)
second = mask_tokens(ids, 3, 30, [0, 1, 2, 3], torch.Generator().manual_seed(77))
checks.assert_equal([t.tolist() for t in second], [t.tolist() for t in first], name="mask_tokens with the same generator seed",
                    hint="Use generator= in every random call; the global seed must not matter.")
other = mask_tokens(ids, 3, 30, [0, 1, 2, 3], torch.Generator().manual_seed(78))
checks.assert_true(other[1].tolist() != first[1].tolist(), name="mask_tokens with another generator seed",
                   problem="gave the same choice.", hint="Draw from the generator you are given.")
print("mask_tokens: hidden tests passed")
### END HIDDEN TESTS

# %% id="313f281e" nbgrader={"grade": true, "grade_id": "test_mask_tokens_hidden_edges", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for mask_tokens (edge cases: nothing maskable, one token, mask_prob 0 and out of range, the default, mask_id not in special_ids) run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks, probes

SPECIAL = [0, 1, 2, 3]
# Nothing maskable: all padding and specials.
ids = torch.tensor([[1, 0, 0, 2], [3, 3, 0, 0]])
inputs, labels = mask_tokens(ids, 3, 10, SPECIAL, torch.Generator().manual_seed(0), 1.0)
checks.assert_equal(inputs.tolist(), ids.tolist(), name="mask_tokens with no ordinary position: inputs", hint="Nothing to choose.")
checks.assert_equal(labels.tolist(), [[-100] * 4] * 2, name="mask_tokens with no ordinary position: labels")
# A vocabulary of special ids only: no ordinary id at all, so nothing is chosen and no random token is drawn.
inputs, labels = mask_tokens(torch.tensor([[0, 1, 1, 0]]), 1, 2, [0, 1], torch.Generator().manual_seed(0), 1.0)
checks.assert_equal((inputs.tolist(), labels.tolist()), ([[0, 1, 1, 0]], [[-100] * 4]),
                    name="mask_tokens with vocab_size=2 and special_ids=[0, 1] (no ordinary id)",
                    hint="With no ordinary id there is no position to choose and no random token to draw from: "
                         "return ids unchanged (a copy) and -100 labels.")
# A single position, always chosen.
for seed in range(20):
    inputs, labels = mask_tokens(torch.tensor([[7]]), 3, 10, SPECIAL, torch.Generator().manual_seed(seed), 1.0)
    checks.assert_equal(labels.tolist(), [[7]], name=f"labels for one ordinary token with mask_prob=1 (seed {seed})")
    checks.assert_true(inputs.item() in (3, 4, 5, 6, 7, 8, 9), name=f"input for one ordinary token (seed {seed})",
                       problem=f"got {inputs.item()}.", hint="mask id, an ordinary token, or the original.")
# mask_prob = 0 chooses nothing; outside [0, 1] is an error.
ids = torch.randint(4, 10, (5, 8), generator=torch.Generator().manual_seed(1))
inputs, labels = mask_tokens(ids, 3, 10, SPECIAL, torch.Generator().manual_seed(2), 0.0)
checks.assert_equal((inputs.tolist(), labels.tolist()), (ids.tolist(), [[-100] * 8] * 5), name="mask_tokens with mask_prob=0")
for bad in (1.5, -0.1):
    checks.assert_raises(ValueError, mask_tokens, ids, 3, 10, SPECIAL, torch.Generator().manual_seed(0), bad,
                         name=f"mask_tokens(..., mask_prob={bad})", hint="mask_prob must be in [0, 1].")
checks.assert_error_boundary(ValueError, lambda p: mask_tokens(ids, 3, 10, SPECIAL, torch.Generator().manual_seed(0), p),
                             raises=(1.01, -0.01), allowed=(0.0, 1.0), name="mask_tokens' mask_prob",
                             hint="[0, 1] includes both ends: raise only for mask_prob < 0 or mask_prob > 1.")
# mask_id is special even when special_ids does not list it: a position holding it is never chosen, and it is never
# drawn as a random token (here the ordinary ids are 4 and 5 only, so a random replacement equal to 3 would show as
# 0.8 + 0.1 / 3 of the chosen positions holding 3 afterwards, not 0.8).
ids = torch.tensor([[1, 3, 4, 3, 5, 2, 0]])
inputs, labels = mask_tokens(ids, 3, 6, [0, 1, 2], torch.Generator().manual_seed(6), 1.0)
checks.assert_equal(labels.tolist(), [[-100, -100, 4, -100, 5, -100, -100]],
                    name="labels from mask_tokens(ids, mask_id=3, vocab_size=6, special_ids=[0, 1, 2], mask_prob=1.0)",
                    hint="mask_id counts as special whether or not special_ids lists it: a position that already holds "
                         "it is never chosen.")
ids = torch.full((200, 200), 4)
inputs, labels = mask_tokens(ids, 3, 6, [0, 1, 2], torch.Generator().manual_seed(7), 0.5)
chosen = labels != -100
n = int(chosen.sum())
share = float((inputs[chosen] == 3).sum()) / n
checks.assert_true(abs(share - 0.8) <= 5 * (0.16 / n) ** 0.5, name="the share of chosen positions holding mask_id 3 afterwards, "
                   "special_ids=[0, 1, 2] (3 not listed), vocab_size=6",
                   problem=f"{share:.4f}, expected 0.8 (0.833 means the random replacements drew mask_id as well).",
                   hint="mask_id is never drawn as a random token, listed in special_ids or not: the ordinary ids here are 4 and 5.")
# The default mask_prob is 0.15.
big = torch.randint(4, 10, (300, 100), generator=torch.Generator().manual_seed(3))
_, labels = mask_tokens(big, 3, 10, SPECIAL, torch.Generator().manual_seed(4))
share = float((labels != -100).float().mean())
checks.assert_true(abs(share - 0.15) < 5 * (0.15 * 0.85 / big.numel()) ** 0.5, name="the share chosen with the default mask_prob",
                   problem=f"{share:.4f}, expected 0.15.", hint="mask_prob defaults to 0.15.")
print("mask_tokens: hidden edge tests passed")
### END HIDDEN TESTS

# %% [markdown] id="73630084"
# What a masked-LM batch looks like, on bytes (`_` is `[MASK]`, `|` the special tokens, `·` padding, and `?` a byte
# that is not printable ASCII: a random replacement (probability 0.1 at a chosen position) can be any of the 256 bytes):

# %% id="4dc470cf"
# Bytes as tokens: ids 0-3 are special (pad, CLS, SEP, MASK), a byte b is id b + 4.
PAD_ID, CLS_ID, SEP_ID, MASK_ID = 0, 1, 2, 3
BYTE_VOCAB = 256 + 4


def encode_bytes(texts, length):
    rows = []
    for text in texts:
        ids = [CLS_ID] + [b + 4 for b in text.encode("utf-8")][: length - 2] + [SEP_ID]
        rows.append(ids + [PAD_ID] * (length - len(ids)))
    return torch.tensor(rows)


def show(ids):
    return "".join("_" if i == MASK_ID else "·" if i == PAD_ID else "|" if i in (CLS_ID, SEP_ID) else chr(i - 4) if 32 <= i - 4 < 127 else "?"
                   for i in ids.tolist())


batch = encode_bytes(["the encoder reads both sides of a gap", "short one"], 40)
inputs, labels = mask_tokens(batch, MASK_ID, BYTE_VOCAB, [PAD_ID, CLS_ID, SEP_ID, MASK_ID],
                             torch.Generator().manual_seed(0), mask_prob=0.3)
for row in range(2):
    print("original:", show(batch[row]))
    print("inputs:  ", show(inputs[row]), f"   ({int((labels[row] != -100).sum())} positions carry a label)")

# %% [markdown] id="ff7ec876"
# ## 4. The encoder–decoder and its decoding loop
#
# `Seq2Seq` puts the pieces together. One embedding table serves three uses: it embeds the source, it embeds the
# decoder's input, and its transpose is the output layer (the 2017 transformer shared it the same way, since source
# and target used one vocabulary). Positions are the fixed sinusoids of the 2017 paper (given: `sinusoidal_positions`), so
# the model has no position parameters and can be run on lengths it never saw. They are added to the embeddings as
# they are: the 2017 paper also multiplied the embeddings by $\sqrt{d_{model}}$, and this model does not. The encoder
# ends with its own LayerNorm (`encoder_norm`), the decoder with `decoder_norm` before the output layer, and each
# decoder block reads the source through its own cross-attention projections.
#
# **Teacher forcing and the shift.** In training, the decoder reads the correct target and predicts it one step
# ahead. Its input is the target **shifted right** with a start token in front:
#
# | position $t$ | 0 | 1 | 2 | 3 |
# |---|---|---|---|---|
# | decoder input | `BOS` | $y_0$ | $y_1$ | $y_2$ |
# | predicts | $y_0$ | $y_1$ | $y_2$ | $y_3$ = `EOS` |
#
# Feed the unshifted target and position $t$ can read $y_t$ through its own input: the loss drops to almost zero and
# the model has learnt to copy, which is useless when it must generate.
#
# **Teacher forcing is not what inference does.** In training, every position reads the *correct* earlier target
# tokens; when generating, it reads the model's *own* earlier outputs. After its first mistake the decoder is in a
# prefix it never trained on, and one error can bring the next: this is **exposure bias** (the name is from Ranzato
# et al., 2016; Bengio et al., 2015, proposed scheduled sampling against it). Some texts claim the opposite, that
# causal masking ensures "the model never encounters distribution shift between training and inference",
# "eliminating the train-test mismatch". The mask only makes each position see the same *kind* of context in both
# (the tokens to its left), not the same tokens: teacher forcing is exactly the setting in which the mismatch
# arises. It stays small here because the model will make few mistakes, and section 5 scores the outputs it
# generates by itself, not its teacher-forced loss.
#
# **Greedy decoding.** At inference there is no target: start from `BOS`, run the decoder, append the argmax of the
# last position, repeat. The encoder runs once per batch, and each decoder block's cross-attention keys and values
# are computed once (`cross_kv`) and reused at every step. A row that has produced `EOS` is finished: it gets
# padding from then on, and the loop stops when every row has finished (or at a maximum length). (The decoder's
# own self-attention could use notebook 10's growing cache too; here it recomputes the short prefix, which keeps the
# loop simple.)
#
# ### Exercise 5: `Seq2Seq` (1 + 3 + 1 points)
#
# This is the substantial build: five methods, each a few lines, that must agree with each other.
#
# *Points: 1 visible, 3 hidden (several sizes, $T \neq S$, unequal source lengths, a `bos_id` other than 1, random
# weights different in every block: `encode`, `cross_kv` and `decode` against the formulas in the docstring, the
# shift at every position, `forward` against `decode`, padding tokens without effect, a bidirectional source), 1
# hidden (parameter counts with the default `d_ff`, the `ValueError` for each bad head or layer count the docstring names,
# `source_positions` on and off, the default mask).*

# %% id="fa56918a" nbgrader={"grade": false, "grade_id": "Seq2Seq", "locked": false, "schema_version": 3, "solution": true, "task": false}
import math

import torch
import torch.nn as nn


def sinusoidal_positions(T, d_model):
    """The fixed sine/cosine position table of "Attention is all you need" (given): (T, d_model) float32."""
    position = torch.arange(T, dtype=torch.float32)[:, None]
    frequency = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
    table = torch.zeros(T, d_model)
    table[:, 0::2] = torch.sin(position * frequency)
    table[:, 1::2] = torch.cos(position * frequency[: d_model // 2])
    return table


class Seq2Seq(nn.Module):
    """An encoder-decoder transformer with one shared token embedding.

    Seq2Seq(vocab_size, d_model, n_head, n_layer, d_ff=None, bos_id=1, source_positions=True)
      embed: nn.Embedding(vocab_size, d_model), the only token table: it embeds the source and the
        decoder's input, and its weight is the output layer (logits = h @ embed.weight.T; no separate head).
      encoder: nn.ModuleList of n_layer EncoderBlock(d_model, n_head, d_ff); encoder_norm: nn.LayerNorm(d_model).
      decoder: nn.ModuleList of n_layer DecoderBlock(d_model, n_head, d_ff); decoder_norm: nn.LayerNorm(d_model).
      No other parameters. Positions come from sinusoidal_positions (no parameters): added to the decoder's
      input embeddings always, and to the source embeddings only when source_positions is True (with False
      the encoder sees its source as a bag of tokens).

    encode(src, src_padding_mask=None) -> memory (B, S, d_model): x = embed(src), plus
      sinusoidal_positions(S, d_model) (positions 0..S-1) when source_positions is True; then
      x = encoder[i](x, src_padding_mask) for i = 0..n_layer-1; memory = encoder_norm(x). The embeddings
      are not rescaled (no factor sqrt(d_model)).
    cross_kv(memory) -> a list of n_layer pairs, pair i = decoder[i].cross_attn.project(memory, memory)
      (each block's own projections).
    decode(tgt_in, memory_kv, src_padding_mask=None) -> logits (B, T, vocab_size): tgt_in (B, T) is the
      decoder's input (BOS first). y = embed(tgt_in) + sinusoidal_positions(T, d_model) (positions 0..T-1,
      not rescaled); y = decoder[i](y, memory_padding_mask=src_padding_mask, memory_kv=memory_kv[i]) for
      i = 0..n_layer-1; logits = decoder_norm(y) @ embed.weight.T. Position t predicts the token that
      follows tgt_in[:, :t+1].
    forward(src, tgt, src_padding_mask=None) -> logits (B, T, vocab_size) for teacher forcing. The decoder's
      input is tgt shifted right by one with bos_id in front, [bos_id, tgt[:, 0], ..., tgt[:, T-2]], so the
      logits at position t predict tgt[:, t] having seen only tgt[:, :t]. Equals
      decode(that input, cross_kv(encode(src, mask)), mask).
    src (B, S) and tgt (B, T) are int64, S and T may differ; the padding mask is True at source padding
    (the logits do not depend on the tokens at padding positions).
    Errors: the constructor raises ValueError, and no other type, if n_head < 1, if n_head does not divide
    d_model, or if n_layer < 1 (a model without blocks would never read its source). Nothing else is checked:
    a bad call (a token outside the vocabulary, shapes that do not fit) raises whatever PyTorch raises.
    """

    def __init__(self, vocab_size, d_model, n_head, n_layer, d_ff=None, bos_id=1, source_positions=True):
        super().__init__()
        ### BEGIN SOLUTION
        if n_head < 1 or d_model % n_head != 0:
            raise ValueError(f"n_head={n_head} does not divide d_model={d_model}")
        if n_layer < 1:
            raise ValueError(f"n_layer must be >= 1, got {n_layer}")
        self.bos_id, self.source_positions = bos_id, source_positions
        self.embed = nn.Embedding(vocab_size, d_model)      # one table: source, decoder input, output layer
        self.encoder = nn.ModuleList(EncoderBlock(d_model, n_head, d_ff) for _ in range(n_layer))
        self.decoder = nn.ModuleList(DecoderBlock(d_model, n_head, d_ff) for _ in range(n_layer))
        self.encoder_norm, self.decoder_norm = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        ### END SOLUTION

    def encode(self, src, src_padding_mask=None):
        ### BEGIN SOLUTION
        x = self.embed(src)
        if self.source_positions:
            x = x + sinusoidal_positions(src.shape[1], x.shape[-1]).to(x)
        for block in self.encoder:
            x = block(x, src_padding_mask)
        return self.encoder_norm(x)
        ### END SOLUTION

    def cross_kv(self, memory):
        ### BEGIN SOLUTION
        return [block.cross_attn.project(memory, memory) for block in self.decoder]
        ### END SOLUTION

    def decode(self, tgt_in, memory_kv, src_padding_mask=None):
        ### BEGIN SOLUTION
        y = self.embed(tgt_in)
        y = y + sinusoidal_positions(tgt_in.shape[1], y.shape[-1]).to(y)
        for block, kv in zip(self.decoder, memory_kv):
            y = block(y, memory_padding_mask=src_padding_mask, memory_kv=kv)
        return self.decoder_norm(y) @ self.embed.weight.T
        ### END SOLUTION

    def forward(self, src, tgt, src_padding_mask=None):
        ### BEGIN SOLUTION
        bos = torch.full_like(tgt[:, :1], self.bos_id)
        tgt_in = torch.cat([bos, tgt[:, :-1]], dim=1)
        return self.decode(tgt_in, self.cross_kv(self.encode(src, src_padding_mask)), src_padding_mask)
        ### END SOLUTION


# %% id="eea77962" nbgrader={"grade": true, "grade_id": "test_Seq2Seq", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
import torch
from utils import checks, probes


def seq2seq_parameters(vocab, d, n_layer, d_ff):
    encoder_block = 4 * d * d + 4 * d + 4 * d + 2 * d * d_ff + d_ff + d
    decoder_block = encoder_block + 4 * d * d + 4 * d + 2 * d     # plus cross-attention and a third LayerNorm
    return vocab * d + n_layer * (encoder_block + decoder_block) + 4 * d


model = Seq2Seq(13, 16, 2, 2, 32, bos_id=1)
checks.assert_equal(probes.num_parameters(model), seq2seq_parameters(13, 16, 2, 32),
                    name="the number of parameters of Seq2Seq(13, 16, 2, 2, 32)",
                    hint="One nn.Embedding shared by the source, the decoder input and the output layer (no separate "
                         "head, no learned positions), n_layer encoder and decoder blocks, two final LayerNorms.")
g = torch.Generator().manual_seed(0)
src = torch.randint(3, 13, (2, 5), generator=g)
mask = torch.tensor([[False] * 5, [False, False, False, True, True]])
tgt = torch.randint(3, 13, (2, 4), generator=g)
logits = model(src, tgt, mask)
checks.assert_tensor(logits, name="Seq2Seq(...)(src (2, 5), tgt (2, 4))", shape=(2, 4, 13), dtype=torch.float32,
                     hint="One row of logits per TARGET position: (B, T, vocab_size).")
# The decoder's input is [BOS, tgt[0], ..., tgt[T-2]]: position t must not see tgt[t].
changed = tgt.clone()
changed[:, 2] = (tgt[:, 2] - 3 + 1) % 10 + 3
after = model(src, changed, mask)
moved = float((after[:, :3] - logits[:, :3]).detach().abs().max())   # in words, not two tables of logits
checks.assert_true(moved <= 1e-5, name="logits at positions 0-2 after tgt[:, 2] changed",
                   problem=f"they moved by up to {moved:.2g} (they must not move at all): a position before 3 read tgt[:, 2].",
                   hint="Shift the target right by one with BOS in front: position t predicts tgt[t] from tgt[:t] only. "
                        "Feeding tgt itself lets position 2 read the answer it must predict.")
checks.assert_true(bool((after[:, 3] - logits[:, 3]).abs().max() > 1e-4), name="logits at position 3 after tgt[:, 2] changed",
                   problem="they did not change.", hint="Position 3 reads tgt[:, :3], which includes tgt[:, 2].")
bos_first = torch.cat([torch.ones(2, 1, dtype=torch.long), tgt[:, :-1]], dim=1)
checks.assert_close(model.decode(bos_first, model.cross_kv(model.encode(src, mask)), mask), logits, atol=1e-5,
                    name="decode([BOS, tgt[:, :-1]], cross_kv(encode(src, mask)), mask) against forward(src, tgt, mask)",
                    hint="forward is encode, cross_kv and decode on the shifted target.")
print("Seq2Seq: visible tests passed")

# %% id="c0561d76" nbgrader={"grade": true, "grade_id": "test_Seq2Seq_hidden", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for Seq2Seq run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks, probes


def sinusoids(T, d):
    # The table of "Attention is all you need" written out: sin(t / 10000^(i/d)) at even i, cos at i + 1.
    angle = torch.arange(T, dtype=torch.float64)[:, None] / 10000.0 ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    table = torch.zeros(T, d, dtype=torch.float64)
    table[:, 0::2], table[:, 1::2] = torch.sin(angle), torch.cos(angle)
    return table.float()


def randomise(model, g):
    # Random weights, different in every block and in both norms, so reusing one block's or skipping one shows.
    state = model.state_dict()
    for key, p in probes.parameters(model).items():
        noise = torch.randn(p.shape, generator=g, dtype=p.dtype)
        state[key] = noise / p.shape[-1] ** 0.5 if p.dim() > 1 else 0.3 * noise + float(key.endswith("weight"))
    model.load_state_dict(state)


def check_against_the_formulas(model, src, shifted, mask, n_layer, name):
    # encode, cross_kv and decode as the docstring writes them, from the model's own blocks and norms.
    table = model.embed.weight.detach()
    x = table[src] + sinusoids(src.shape[1], table.shape[1])
    for i in range(n_layer):
        x = model.get_submodule(f"encoder.{i}")(x, mask)
    memory = model.encode(src, mask)
    checks.assert_close(memory, model.encoder_norm(x), atol=1e-4, rtol=1e-4, name=name + ": encode(src, mask)",
                        hint="encoder_norm(encoder blocks(embed(src) + sinusoidal_positions(S, d_model))), every block "
                             "with the mask; the embeddings are not multiplied by sqrt(d_model).")
    kv = model.cross_kv(memory)
    expected_kv = [model.get_submodule(f"decoder.{i}.cross_attn").project(memory, memory) for i in range(n_layer)]
    for i in range(n_layer):
        for j, part in enumerate(["keys", "values"]):
            checks.assert_close(kv[i][j], expected_kv[i][j], atol=1e-5, rtol=1e-5, name=name + f": cross_kv(memory)[{i}][{j}] (the {part})",
                                hint=f"Pair i is decoder[i].cross_attn.project(memory, memory): block {i}'s own projections.")
    y = table[shifted] + sinusoids(shifted.shape[1], table.shape[1])
    for i in range(n_layer):
        y = model.get_submodule(f"decoder.{i}")(y, memory_padding_mask=mask, memory_kv=expected_kv[i])
    checks.assert_close(model.decode(shifted, expected_kv, mask), model.decoder_norm(y) @ table.T, atol=1e-4, rtol=1e-4,
                        name=name + ": decode(tgt_in, memory_kv, mask)",
                        hint="decoder_norm(decoder blocks(embed(tgt_in) + sinusoidal_positions(T, d_model))) @ embed.weight.T, "
                             "positions 0..T-1, block i with memory_kv[i].")


g = torch.Generator().manual_seed(1251)
for vocab, d, h, n_layer, d_ff, bos, B, S, T, lengths in [(11, 12, 3, 1, 24, 1, 3, 6, 4, [6, 2, 4], ),
                                                          (17, 16, 4, 3, None, 5, 2, 3, 7, [3, 1]),
                                                          (9, 8, 2, 2, 16, 2, 1, 8, 1, [8])]:
    model = Seq2Seq(vocab, d, h, n_layer, d_ff, bos_id=bos)
    randomise(model, g)
    name = f"Seq2Seq({vocab}, {d}, {h}, {n_layer}, {d_ff}, bos_id={bos}) on src {(B, S)} (lengths {lengths}), tgt {(B, T)}"
    src = torch.randint(3, vocab, (B, S), generator=g)
    tgt = torch.randint(3, vocab, (B, T), generator=g)
    mask = torch.arange(S)[None, :] >= torch.tensor(lengths)[:, None]
    logits = model(src, tgt, mask)
    checks.assert_tensor(logits, name=name, shape=(B, T, vocab), dtype=torch.float32)
    shifted = torch.cat([torch.full((B, 1), bos), tgt[:, :-1]], dim=1)
    check_against_the_formulas(model, src, shifted, mask, n_layer, name + " with random weights")
    memory = model.encode(src, mask)
    checks.assert_tensor(memory, name=name + ": encode(src, mask)", shape=(B, S, d), dtype=torch.float32)
    kv = model.cross_kv(memory)
    checks.assert_equal(len(kv), n_layer, name=name + ": len(cross_kv(memory))", hint="One (k, v) pair per decoder block.")
    checks.assert_close(model.decode(shifted, kv, mask), logits, atol=1e-5, name=name + ": forward vs decode on [BOS, tgt[:, :-1]]",
                        hint=f"The decoder's input starts with bos_id = {bos}, then tgt without its last token.")
    for j in range(T):
        changed = tgt.clone()
        changed[:, j] = (tgt[:, j] - 3 + 1) % (vocab - 3) + 3
        after = model(src, changed, mask)
        checks.assert_close(after[:, : j + 1], logits[:, : j + 1], atol=1e-5, name=name + f": logits up to position {j} after tgt[:, {j}] changed",
                            hint="Position t sees only tgt[:, :t] (shifted right, causal).")
    # The tokens under the padding do not matter.
    other = torch.where(mask, torch.randint(3, vocab, (B, S), generator=g), src)
    checks.assert_close(model(other, tgt, mask), logits, atol=1e-5, name=name + ": logits after changing tokens under the padding",
                        hint="Pass the padding mask to every encoder block and every cross-attention.")
    # The first target position reads the last real source token (a bidirectional encoder, cross-attention to all).
    last = src.clone()
    last[0, lengths[0] - 1] = (src[0, lengths[0] - 1] - 3 + 1) % (vocab - 3) + 3
    checks.assert_true(bool((model(last, tgt, mask)[0, 0] - logits[0, 0]).abs().max() > 1e-5),
                       name=name + ": logits at target position 0 after the last source token changed",
                       problem="they did not change.", hint="Every target position reads the whole source.")
print("Seq2Seq: hidden tests passed")
### END HIDDEN TESTS

# %% id="6accc762" nbgrader={"grade": true, "grade_id": "test_Seq2Seq_hidden_edges", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for Seq2Seq (parameter counts, errors, source positions, defaults) run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks, probes


def seq2seq_parameters(vocab, d, n_layer, d_ff):
    encoder_block = 4 * d * d + 4 * d + 4 * d + 2 * d * d_ff + d_ff + d
    decoder_block = encoder_block + 4 * d * d + 4 * d + 2 * d
    return vocab * d + n_layer * (encoder_block + decoder_block) + 4 * d


g = torch.Generator().manual_seed(1252)
for vocab, d, h, n_layer in [(50, 8, 2, 1), (7, 24, 4, 3)]:
    checks.assert_equal(probes.num_parameters(Seq2Seq(vocab, d, h, n_layer)), seq2seq_parameters(vocab, d, n_layer, 4 * d),
                        name=f"the number of parameters of Seq2Seq({vocab}, {d}, {h}, {n_layer}) (d_ff defaults to 4 d)",
                        hint="The output layer is embed.weight itself; positions are sinusoidal (no parameters).")
checks.assert_raises(ValueError, Seq2Seq, 10, 10, 4, 1, name="Seq2Seq(10, 10, 4, 1)", hint="4 heads do not divide d_model = 10.")
# The constructor's errors are ValueError for each bad count the docstring names (not ZeroDivisionError from d_model % 0,
# not nn.MultiheadAttention's AssertionError, not a model built without blocks).
for args, why in [((10, 8, 0, 1), "0 heads: check n_head >= 1 before d_model % n_head (which raises ZeroDivisionError)"),
                  ((10, 8, -2, 1), "a negative head count divides 8 (8 % -2 == 0) but is not a head count: check n_head >= 1"),
                  ((10, 8, 2, 0), "n_layer must be >= 1: a model with no blocks never reads its source"),
                  ((10, 8, 2, -1), "n_layer must be >= 1")]:
    checks.assert_raises(ValueError, Seq2Seq, *args, name=f"Seq2Seq{args}", hint=f"Raise ValueError: {why}.")
# The inside of n_head < 1 and n_layer < 1: one head and one layer are a model.
checks.assert_error_boundary(ValueError, lambda h: Seq2Seq(10, 8, h, 1), raises=(0, -1), allowed=(1,),
                             name="Seq2Seq(10, 8, n_head, 1)'s n_head", hint="Raise ValueError only for n_head < 1: one head is allowed.")
checks.assert_error_boundary(ValueError, lambda n: Seq2Seq(10, 8, 2, n), raises=(0, -1), allowed=(1,),
                             name="Seq2Seq(10, 8, 2, n_layer)'s n_layer", hint="Raise ValueError only for n_layer < 1: one layer is allowed.")
# source_positions: with False the encoder reads a bag of tokens, so a permuted source gives the same logits.
src = torch.tensor([[4, 5, 6, 7, 8]])
permuted = torch.tensor([[8, 6, 4, 7, 5]])
tgt = torch.tensor([[4, 5, 6]])
bag = Seq2Seq(10, 16, 2, 2, source_positions=False)
checks.assert_close(bag(permuted, tgt), bag(src, tgt), atol=1e-5, name="Seq2Seq(..., source_positions=False) on a permuted source",
                    hint="Without source positions the encoder is permutation-equivariant and cross-attention sums over the source.")
ordered = Seq2Seq(10, 16, 2, 2)
checks.assert_true(bool((ordered(permuted, tgt) - ordered(src, tgt)).abs().max() > 1e-4),
                   name="Seq2Seq(...) (source_positions=True by default) on a permuted source",
                   problem="the logits did not change.", hint="Add sinusoidal_positions to the source embeddings when source_positions is True.")
# No padding mask given: the default None.
checks.assert_tensor(ordered(src, tgt), name="Seq2Seq(...)(src, tgt) without a mask", shape=(1, 3, 10), dtype=torch.float32)
print("Seq2Seq: hidden edge tests passed")
### END HIDDEN TESTS

# %% [markdown] id="d20dacef"
# ### Exercise 6: `greedy_decode` (1 + 2 + 1 points)
#
# The tests hand your loop a model with known behaviour (`utils.toy_models.CopySeq2Seq`: it copies its source, then
# says EOS, then a token a finished row must never get) that counts how often its encoder and `cross_kv` run.
# Greedy is the simplest decoder; notebook 13 builds beam search, which keeps several hypotheses and sets aside the
# ones that have said EOS.
#
# *Points: 1 visible, 2 hidden (batches whose rows end at different steps, a maximum length that cuts rows short,
# other BOS/EOS/pad ids, one encoder run and one `cross_kv` per call, one `decode` per returned column), 1 hidden
# (`max_len = 0` and a negative `max_len`, no gradients and eval mode while decoding, every module's own mode restored,
# submodules in modes of their own included, a new contiguous tensor on src's device).*

# %% id="91f2ec3d" nbgrader={"grade": false, "grade_id": "greedy_decode", "locked": false, "schema_version": 3, "solution": true, "task": false}
import torch


def greedy_decode(model, src, src_padding_mask, max_len, bos_id=1, eos_id=2, pad_id=0):
    """Greedy decoding with an encoder-decoder that has Seq2Seq's encode, cross_kv and decode methods.

    src: int64 (B, S); src_padding_mask: bool (B, S), True at padding; max_len: int >= 0, the most tokens a
    row gets. Raises ValueError if max_len < 0, before it touches the model.
    Calls model.encode(src, src_padding_mask) once and model.cross_kv(memory) once, and passes that one
    memory_kv to every step. Every row starts from [bos_id]; each step calls
    model.decode(tokens so far, memory_kv, src_padding_mask) once and appends the argmax of the LAST
    position's logits. A row that has produced eos_id is finished: from then on it gets pad_id (whatever the
    model says). Decoding stops when every row is finished or after max_len steps, whichever comes first (so
    model.decode is called once per returned column, never more).
    Returns a new int64 tensor (B, L) on src's device, contiguous and in memory of its own (not a slice of the
    tokens with the BOS): the generated tokens without the BOS, L <= max_len (L < max_len only when every row
    has finished). max_len = 0 returns an empty int64 tensor of shape (B, 0) and never calls model.decode
    (whether it encodes first is left to you). Runs with gradients off and the model in eval mode (every
    submodule too), and gives every module back in the mode it came in, each its own: a model in train mode
    whose encoder was in eval mode (frozen) comes back exactly so. Autograd's mode after the call is what it was
    before (gradients off with a torch.no_grad() block, not torch.set_grad_enabled(False)).
    """
    ### BEGIN SOLUTION
    if max_len < 0:
        raise ValueError(f"max_len must be >= 0, got {max_len}")
    modes = [(module, module.training) for module in model.modules()]     # each module's own mode
    model.eval()
    try:
        with torch.no_grad():
            memory_kv = model.cross_kv(model.encode(src, src_padding_mask))
            tokens = torch.full((src.shape[0], 1), bos_id, dtype=torch.long, device=src.device)
            finished = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
            for _ in range(max_len):
                if finished.all():
                    break
                logits = model.decode(tokens, memory_kv, src_padding_mask)
                chosen = logits[:, -1].argmax(dim=-1)
                chosen = torch.where(finished, torch.full_like(chosen, pad_id), chosen)
                tokens = torch.cat([tokens, chosen[:, None]], dim=1)
                finished = finished | (chosen == eos_id)
    finally:
        for module, training in modes:
            module.training = training
    return tokens[:, 1:].clone()
    ### END SOLUTION


# %% id="8d84a278" nbgrader={"grade": true, "grade_id": "test_greedy_decode", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
import torch
from utils import checks, probes

# A model that copies its source, then says EOS (2), then a token 3 that a finished row must not get.
model = probes.make("utils.toy_models.CopySeq2Seq", 12)
src = torch.tensor([[5, 6, 7], [8, 0, 0]])
mask = torch.tensor([[False, False, False], [False, True, True]])
out = greedy_decode(model, src, mask, 6)
checks.assert_tensor(out, name="greedy_decode(copying model, 2 sources, max_len=6)", shape=(2, 4), dtype=torch.int64,
                     hint="Stop as soon as every row has produced EOS: here after 4 tokens (3 copied, then EOS).")
checks.assert_equal(out.tolist(), [[5, 6, 7, 2], [8, 2, 0, 0]], name="greedy_decode(copying model, 2 sources, max_len=6)",
                    hint="No BOS in the result; after a row's EOS, pad_id (0), whatever the model says.")
checks.assert_equal((model.encode_calls, model.cross_kv_calls), (1, 1), name="(encode calls, cross_kv calls)",
                    hint="Encode the source once and compute the cross-attention keys and values once, before the loop.")
checks.assert_equal([call["shape"] for call in model.decode_calls], [[2, 1], [2, 2], [2, 3], [2, 4]],
                    name="the shapes greedy_decode fed model.decode", hint="BOS, then one more token per step; no call after the last.")
print("greedy_decode: visible tests passed")

# %% id="59209797" nbgrader={"grade": true, "grade_id": "test_greedy_decode_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for greedy_decode run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks, probes

for (bos, eos, after), pad, src, lengths, max_len, expected in [
        ((1, 2, 3), 0, [[4, 5, 6, 7, 8], [9, 4, 0, 0, 0], [6, 0, 0, 0, 0]], [5, 2, 1], 10,
         [[4, 5, 6, 7, 8, 2], [9, 4, 2, 0, 0, 0], [6, 2, 0, 0, 0, 0]]),
        ((4, 5, 6), 7, [[8, 9, 10], [11, 8, 9]], [3, 3], 3, [[8, 9, 10], [11, 8, 9]]),
        ((4, 5, 6), 7, [[8, 9, 10, 11], [8, 7, 7, 7]], [4, 1], 3, [[8, 9, 10], [8, 5, 7]]),
        ((1, 2, 3), 0, [[10, 11], [11, 10]], [2, 2], 1, [[10], [11]])]:
    model = probes.make("utils.toy_models.CopySeq2Seq", 12, bos, eos, after)
    src = torch.tensor(src)
    mask = torch.arange(src.shape[1])[None, :] >= torch.tensor(lengths)[:, None]
    out = greedy_decode(model, src, mask, max_len, bos_id=bos, eos_id=eos, pad_id=pad)
    name = f"greedy_decode(copying model, sources of lengths {lengths}, max_len={max_len}, bos={bos}, eos={eos}, pad={pad})"
    checks.assert_tensor(out, name=name, shape=(len(lengths), len(expected[0])), dtype=torch.int64,
                         hint="(B, L): L = max_len, or the step at which the last row produced EOS.")
    checks.assert_equal(out.tolist(), expected, name=name,
                        hint="Start from bos_id, feed back your argmax of the LAST position, pad_id after a row's eos_id, stop at max_len.")
    checks.assert_equal((model.encode_calls, model.cross_kv_calls), (1, 1), name=name + ": (encode calls, cross_kv calls)",
                        hint="Once each, before the loop; reuse memory_kv at every step.")
    checks.assert_equal([call["shape"][1] for call in model.decode_calls], list(range(1, len(expected[0]) + 1)),
                        name=name + ": the lengths fed to model.decode", hint="One decode call per returned column.")
print("greedy_decode: hidden tests passed")
### END HIDDEN TESTS

# %% id="b7a3c99e" nbgrader={"grade": true, "grade_id": "test_greedy_decode_hidden_edges", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for greedy_decode (max_len = 0 and below, modes and gradients, mixed modes, a new tensor) run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks, probes

src, mask = torch.tensor([[5, 6]]), torch.tensor([[False, False]])
model = probes.make("utils.toy_models.CopySeq2Seq", 12)
out = greedy_decode(model, src, mask, 0)
checks.assert_tensor(out, name="greedy_decode(..., max_len=0)", shape=(1, 0), dtype=torch.int64, hint="No token: shape (B, 0).")
checks.assert_equal(len(model.decode_calls), 0, name="decode calls with max_len=0", hint="Nothing to choose, nothing to decode.")
for starts_training in (True, False):
    model = probes.make("utils.toy_models.CopySeq2Seq", 12)
    model.train(starts_training)
    greedy_decode(model, src, mask, 5)
    start = "train" if starts_training else "eval"
    checks.assert_equal([(c["grad_enabled"], c["training"]) for c in model.decode_calls], [(False, False)] * 3,
                        name=f"(gradients recorded, training mode) in each decode call, model given in {start} mode",
                        hint="Decode under torch.no_grad() with model.eval().")
    checks.assert_equal([(c["grad_enabled"], c["training"]) for c in model.encode_and_cross_kv_calls], [(False, False)] * 2,
                        name=f"(gradients recorded, training mode) in the encode and cross_kv calls, model given in {start} mode",
                        hint="Switch to eval mode and turn gradients off before encoding: the encoder runs in the same mode as the decoder.")
    checks.assert_true(model.training is starts_training, name=f"the model's mode after greedy_decode, given in {start} mode",
                       problem="it came back in the other mode.", hint="Remember model.training and restore it.")
    checks.assert_equal(model.modes(), {"model": starts_training, "inner": starts_training},
                        name=f"the modes of the model and of its submodule after greedy_decode, given in {start} mode",
                        hint="Give every module its own mode back (record module.training for each of "
                             "model.modules() and set it again); assigning model.training = was_training restores the "
                             "top module only.")
# Submodules in modes of their own (a frozen part in eval mode inside a model in train mode, or the reverse) get
# each its own mode back; model.train(was_training) would set them all alike.
for top, inner in ((True, False), (False, True)):
    model = probes.make("utils.toy_models.CopySeq2Seq", 12)
    model.train(top)
    model.inner.train(inner)
    out = greedy_decode(model, src, mask, 5)
    checks.assert_equal(out.tolist(), [[5, 6, 2]], name=f"greedy_decode on a model in mode {top} whose submodule is in mode {inner}",
                        hint="Decode with every module in eval mode (model.eval()).")
    checks.assert_equal([c["training"] for c in model.decode_calls], [False] * 3,
                        name=f"training mode in each decode call, model in mode {top} and its submodule in mode {inner}",
                        hint="model.eval() sets every submodule to eval mode while decoding.")
    checks.assert_equal(model.modes(), {"model": top, "inner": inner},
                        name=f"the modes after greedy_decode of a model in mode {top} whose submodule was in mode {inner}",
                        hint="Each module gets its own mode back: remember module.training for every module of "
                             "model.modules() and restore each one. model.train(was_training) sets every submodule to "
                             "the top module's mode.")
# max_len on both sides of 0: 0 gives (B, 0) without a decode call; a negative max_len raises ValueError, and the model
# is left as it was.
model = probes.make("utils.toy_models.CopySeq2Seq", 12)
out = greedy_decode(model, torch.tensor([[5, 6], [7, 0]]), torch.tensor([[False, False], [False, True]]), 0)
checks.assert_tensor(out, name="greedy_decode(..., max_len=0) on 2 sources", shape=(2, 0), dtype=torch.int64,
                     hint="No token: an empty int64 tensor of shape (B, 0).")
checks.assert_error_boundary(ValueError, lambda m: greedy_decode(probes.make("utils.toy_models.CopySeq2Seq", 12), src, mask, m),
                             raises=(-1,), allowed=(0,), name="greedy_decode's max_len",
                             hint="max_len = 0 is allowed (no token); raise only for max_len < 0.")
for bad in (-1, -5):
    model = probes.make("utils.toy_models.CopySeq2Seq", 12)
    model.train()
    checks.assert_raises(ValueError, greedy_decode, model, src, mask, bad, name=f"greedy_decode(..., max_len={bad})",
                         hint="A negative max_len is an error: raise ValueError (range(max_len) would quietly be empty).")
    checks.assert_equal((len(model.decode_calls), model.modes()), (0, {"model": True, "inner": True}),
                        name=f"(decode calls, modes) after greedy_decode(..., max_len={bad}) raised",
                        hint="Check max_len first, before switching the model's mode.")
# Autograd is on again after the call when it was on before: the caller's next loss.backward() needs it.
checks.assert_equal(probes.make("utils.recording.grad_mode_after", greedy_decode, probes.make("utils.toy_models.CopySeq2Seq", 12),
                                src, mask, 3),
                    {"grad_enabled_after": True}, name="autograd after greedy_decode (it was on before the call)",
                    hint="Turn gradients off with a with torch.no_grad(): block; torch.set_grad_enabled(False) stays in force "
                         "after the function returns.")
traced = probes.traced_call(greedy_decode, probes.make("utils.toy_models.CopySeq2Seq", 12), src, mask, 4)
checks.assert_equal(traced.result.tolist(), [[5, 6, 2]], name="greedy_decode on one source of 2 tokens")
checks.assert_true(not traced.shares_memory, name="greedy_decode's result", problem="it shares memory with an argument.")
checks.assert_true(probes.make("utils.memory.results_own_their_memory", greedy_decode, probes.make("utils.toy_models.CopySeq2Seq", 12),
                               torch.tensor([[5, 6, 7], [8, 0, 0]]), torch.tensor([[False, False, False], [False, True, True]]), 6),
                   name="greedy_decode's result on 2 sources", problem="it is a slice of a larger buffer (not contiguous).",
                   hint="Return a new tensor: copy the tokens after the BOS (tokens[:, 1:].clone()).")
# On src's device: src, its mask and the model's parameters labelled cuda:0 with their values kept (utils.fake_cuda; the
# model computes on its parameters' device). Tokens or flags made without device= are on the CPU and meet the GPU ones,
# as a GPU would refuse.
seen = probes.make("utils.fake_cuda.result_device_on_fake_cuda", greedy_decode, probes.make("utils.toy_models.CopySeq2Seq", 12),
                   torch.tensor([[5, 6, 7], [8, 0, 0]]), torch.tensor([[False, False, False], [False, True, True]]), 6)
checks.assert_kept_on_fake_cuda(seen, name="greedy_decode with src and its mask on a GPU (emulated, the values kept)",
                                hint="Make the tokens and the finished flags on src.device (torch.full(..., device=src.device)): "
                                     "with src on a GPU, a tensor made without device= is on the CPU.")
print("greedy_decode: hidden edge tests passed")
### END HIDDEN TESTS

# %% [markdown] id="f0c7dbc0"
# ## 5. A translator you train: copying digits, and sources longer than any it saw
#
# A task with a known answer, generated offline: the source is a string of digits, the target is the same digits in
# the same order, then `EOS`. Copying is the simplest task whose output depends on every source token *and on its
# position*: each output digit has to find "its" source position, which is what cross-attention does, and a model
# that must squeeze the source into one vector has to store all of it (section 6).
#
# The model trains on sources of 1 to 8 digits and is tested on fresh sources of 1 to 12, so lengths 9 to 12 were
# never seen. With absolute positions that usually fails for a plain reason: positions 8 to 11 were never *trained*.
# The sinusoids give them a defined input, not a learnt meaning. The fix used here is a simplified variant of
# **randomised positions** (Ruoss et al., 2023, who give each training sequence an ordered random *subset* of the
# positions of a longer range): every training source is placed at a random contiguous offset inside a frame of
# `FRAME` positions
# (padding before and after it, masked), and its target at the same offset. Short sources then train every
# position of the frame, and a long source at offset 0 uses only positions the model knows. Your `Seq2Seq` needs
# no change for this: its padding mask may mark any source position, and the target's leading padding gets no
# loss (the decoder reads it as ordinary tokens; `Seq2Seq` takes no target mask). Set `FRAME = None` after the
# run to train without offsets and see the longer sources fail.

# %% id="5b03fbc4"
PAD, BOS, EOS, SEP, DIGIT0 = 0, 1, 2, 3, 4        # digits 0-9 are ids 4-13
VOCAB = 14
TRAIN_LENGTHS = list(range(1, 9))                 # training sources have 1 to 8 digits
TEST_LENGTHS = list(range(1, 13))                 # held out: fresh sources of 1 to 12 digits (9-12 never seen)
FRAME = 16                                        # training puts each source at a random offset in 16 positions


def copy_batch(n, lengths, generator, frame=None):
    """n sources of random digits (lengths drawn from `lengths`) and their targets: the same digits, then EOS.

    frame=None: every source starts at position 0, right-padded to the longest. frame=F: each row's source starts
    at a random offset o (0 <= o <= F - length) of F positions, padded before and after, and its target at the
    same offset (PAD before it: no loss there). Returns src (n, S), padding (n, S) True at padding, tgt (n, S + 1).
    """
    length = torch.tensor(lengths)[torch.randint(len(lengths), (n,), generator=generator)]
    S = int(length.max()) if frame is None else frame
    offset = torch.zeros(n, dtype=torch.long)
    if frame is not None:
        offset = (torch.rand(n, generator=generator) * (frame - length + 1)).long()
    position = torch.arange(S)[None, :]
    padding = (position < offset[:, None]) | (position >= (offset + length)[:, None])
    src = torch.where(padding, PAD, torch.randint(10, (n, S), generator=generator) + DIGIT0)
    tgt = F.pad(src, (0, 1), value=PAD)
    tgt[torch.arange(n), offset + length] = EOS
    return src, padding, tgt


def show_ids(ids):
    names = {PAD: "·", BOS: "<s>", EOS: "</s>", SEP: "|"}
    return " ".join(names.get(i, str(i - DIGIT0)) for i in ids.tolist())


src, padding, tgt = copy_batch(3, TRAIN_LENGTHS, torch.Generator().manual_seed(0), frame=FRAME)
for row in range(3):
    print(f"source {show_ids(src[row]):33} target {show_ids(tgt[row])}")

# %% [markdown] id="22ba7ab0"
# The training loop is the one of notebook 08 (AdamW, a one-cycle schedule), on fresh random batches. The model is
# small: $d = 64$, 4 heads, 2 encoder and 2 decoder blocks. The source keeps its positions
# (`source_positions=True`): without them the encoder would see a bag of digits, and the order, which is the whole
# task, would be lost.
#
# **Your parts, carried forward** (as in notebook 09): where your parts from earlier notebooks fit this model, it
# uses them: your `LayerNorm` (notebook 07) for every LayerNorm, and your `MultiHeadAttention` (notebook 05) for
# each decoder block's causal self-attention, with the weights PyTorch's parts start from. Each is read from your
# saved notebook in the course folder (`../07_block/block.ipynb`, `../05_multi_head/multi_head.ipynb`; save them
# first), and used only if that notebook's visible tests for it pass and the model then gives the same logits as
# with PyTorch's part. Otherwise PyTorch's part is used; the printed line says which parts are yours, which fell
# back and why, and which do not fit here.
#
# **Time:** the training cell takes about 30 CPU seconds on a 2-core laptop (one thread), the longest cell of the
# notebook; it prints its predicted time after its first 20 steps. The next cell scores the model on held-out
# sources.
#
# **Predict before you run.** On fresh sources of the training lengths (1 to 8 digits) the model will copy almost
# every one. What about 9 to 12 digits, longer than any it trained on: all of them, none, or something in between,
# and where does it fail first?
#
# <details><summary>Answer</summary>
#
# In between, and it fails at the longest first. Thanks to the offsets every position up to the frame's end was
# trained, so the model can find source position $t$ when it writes output $t$ at any of them: it copies most
# sources of 9 and 10 digits. But it never wrote a copy of more than 8 digits, never decided when to stop after 11
# or 12, and its decoder's self-attention never read so long a prefix of its own output: exact match drops at 11
# and 12. The next cell prints it length by length.
# </details>

# %% id="6a74a509"
from utils import progress, your_parts

STEPS, BATCH, LR = 600, 64, 3e-3


def train_model(model, loss_of_batch, steps=STEPS, seed=0, label="training"):
    """AdamW with a one-cycle schedule on fresh batches of the copying task (sources at random offsets in FRAME
    positions), with a progress bar and its time predicted from the first steps; returns (last loss, CPU seconds)."""
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=LR, total_steps=steps, pct_start=0.1)
    model.train()
    start = time.process_time()
    with progress.training_steps(steps, label, cpu_seconds=True) as bar:
        for step in bar:
            loss = loss_of_batch(model, *copy_batch(BATCH, TRAIN_LENGTHS, generator, FRAME))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            schedule.step()
            if step % 10 == 0:
                bar.show(loss=loss.item())
        bar.show(loss=loss.item())
    return loss.item(), time.process_time() - start


def seq2seq_loss(model, src, padding, tgt):
    logits = model(src, tgt, padding)
    return F.cross_entropy(logits.flatten(0, 1), tgt.flatten(), ignore_index=PAD)


D_MODEL, N_HEAD, N_LAYER, D_FF = 64, 4, 2, 128
torch.manual_seed(0)
translator = Seq2Seq(VOCAB, D_MODEL, N_HEAD, N_LAYER, D_FF, bos_id=BOS)
nn.init.normal_(translator.embed.weight, std=D_MODEL ** -0.5)   # small tied embeddings: logits start near 0
translator, parts_line = your_parts.carry_into_encoder_decoder(translator)
print(parts_line)
results = {}
loss, seconds = train_model(translator, seq2seq_loss, label="encoder-decoder")
results["encoder-decoder"] = {"parameters": sum(p.numel() for p in translator.parameters()), "train CPU s": seconds}
print(f"encoder-decoder: {results['encoder-decoder']['parameters']:,} parameters, {STEPS} steps in {seconds:.1f} CPU s, "
      f"last loss {loss:.3f}")


# %% id="62f22625"
def pad_after_eos(tokens):
    """Everything after a row's first EOS becomes PAD (for decoders that do not stop by themselves)."""
    seen_eos = (tokens == EOS).long().cumsum(dim=1)
    after = (seen_eos - (tokens == EOS).long()) > 0
    return torch.where(after, PAD, tokens)


def exact_match_by_length(generate, lengths=TEST_LENGTHS, n=200, seed=12345):
    """{length: share of n fresh sources whose whole output (digits, EOS, nothing after) is right}."""
    generator = torch.Generator().manual_seed(seed)
    scores = {}
    for length in lengths:
        src, padding, tgt = copy_batch(n, [length], generator)
        out = generate(src, padding, length + 1)[:, : length + 1]
        out = F.pad(out, (0, length + 1 - out.shape[1]), value=PAD)
        scores[length] = (out == tgt).all(dim=1).float().mean().item()
    return scores


def mean_over(scores, lengths):
    return sum(scores[length] for length in lengths) / len(lengths)


translator.eval()
accuracy = {"encoder-decoder": exact_match_by_length(lambda s, m, L: greedy_decode(translator, s, m, L, BOS, EOS, PAD))}
scores = accuracy["encoder-decoder"]
print("held-out exact match by source length:", {k: round(v, 3) for k, v in scores.items()})
print(f"held-out, training lengths 1-8: {mean_over(scores, range(1, 9)):.1%};   longer than any in training, 9-12: "
      f"{mean_over(scores, range(9, 13)):.1%}")
claims.claim(f"The encoder-decoder copies held-out sources of the training lengths ({mean_over(scores, range(1, 9)):.1%} "
             f"exact over lengths 1-8) and most longer ones ({mean_over(scores, range(9, 13)):.1%} over 9-12), failing "
             f"most at the longest ({scores[12]:.0%} at 12 digits)",
             holds=mean_over(scores, range(1, 9)) > 0.97 and mean_over(scores, range(9, 13)) > 0.6
             and scores[12] == min(scores.values()))


# %% [markdown] id="9687ae61"
# Read the two numbers above. The first is held-out accuracy on fresh sources of the lengths the model trained on;
# the second is length generalisation: sources longer than any in training, at positions the offsets did train.
# The by-length line shows where it holds. Past the frame nothing was trained: set `TEST_LENGTHS` up to 20 and
# watch the last lengths.
#
# ### Where the decoder looks
#
# For one source of 12 digits (longer than any in training), the cross-attention weights of the last decoder block
# while it writes the copy. Output position $t$ should draw its weight from source position $t$: a diagonal, the
# alignment that a fixed-vector decoder cannot have.

# %% id="5747ed98"
def cross_attention_weights(model, src, padding, tokens, layer=-1):
    """The cross-attention weights (n_head, T, S) of one decoder block while it reads `tokens` (BOS first)."""
    block, recorded = model.decoder[layer], []
    attend = block.cross_attn.attend

    def recording_attend(x, k, v, padding_mask=None, return_weights=False):
        out, weights = attend(x, k, v, padding_mask, return_weights=True)
        recorded.append(weights)
        return out

    block.cross_attn.attend = recording_attend           # an instance attribute hides the method for a moment
    try:
        with torch.no_grad():
            model.decode(tokens, model.cross_kv(model.encode(src, padding)), padding)
    finally:
        del block.cross_attn.attend
    return recorded[0][0]


src, padding, _ = copy_batch(1, [12], torch.Generator().manual_seed(7))
out = greedy_decode(translator, src, padding, 13, BOS, EOS, PAD)
tokens = torch.cat([torch.full((1, 1), BOS), out], dim=1)[:, :-1]      # what the decoder read at each step
weights = cross_attention_weights(translator, src, padding, tokens).mean(dim=0)
print("source: ", show_ids(src[0]), "\noutput: ", show_ids(out[0]))
fig, ax = plt.subplots(figsize=(6, 5))
ax.imshow(weights, cmap="viridis")
ax.set_xticks(range(src.shape[1]), [show_ids(t[None]) for t in src[0]])
ax.set_yticks(range(out.shape[1]), [show_ids(t[None]) for t in out[0]])
ax.set_xlabel("source position (its digit)")
ax.set_ylabel("output token being predicted")
ax.set_title("Cross-attention of the last decoder block (mean over heads),\na source longer than any in training")
fig.tight_layout()
plt.show()
diagonal = weights.diagonal()[: src.shape[1]]                      # output t reading source position t
print(f"mean attention weight on the source position being copied: {diagonal.mean():.2f} "
      f"(uniform attention would give {1 / src.shape[1]:.2f})")
claims.claim(f"Cross-attention aligns output t with source position t: {diagonal.mean():.2f} of the weight on average, "
             f"against {1 / src.shape[1]:.2f} for uniform attention", holds=diagonal.mean() > 0.5)


# %% [markdown] id="fa6dccee"
# ### What caching the source buys
#
# The same greedy decoding two ways on 100 sources of 12 digits: your loop (encoder once, cross-attention keys
# and values once), and a loop that calls the whole model on the growing target at every step, so the encoder and
# every block's key and value projections run again each time. The outputs are identical; only the cost differs.

# %% id="af5ea1b8"
def decode_recomputing(model, src, padding, max_len):
    # The slow loop: the whole forward pass (encoder included) again at every step.
    tokens = torch.full((src.shape[0], 0), PAD)
    with torch.no_grad():
        for _ in range(max_len):
            logits = model(src, torch.cat([tokens, torch.full((src.shape[0], 1), PAD)], dim=1), padding)
            tokens = torch.cat([tokens, logits[:, -1].argmax(dim=-1, keepdim=True)], dim=1)
    return pad_after_eos(tokens)


def cpu_seconds(run, repeats=3):
    # The fastest of a few runs: CPU time on a shared machine is noisy, and noise only ever adds time.
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        result = run()
        best = min(best, time.process_time() - start)
    return result, best


src, padding, tgt = copy_batch(100, [12], torch.Generator().manual_seed(8))
fast, fast_seconds = cpu_seconds(lambda: greedy_decode(translator, src, padding, 13, BOS, EOS, PAD))
slow, slow_seconds = cpu_seconds(lambda: decode_recomputing(translator, src, padding, 13))
same = torch.equal(F.pad(fast, (0, 13 - fast.shape[1]), value=PAD), slow)
print(f"encoder once, cross K/V once: {fast_seconds * 1000:.0f} ms CPU;  encoder and projections every step: "
      f"{slow_seconds * 1000:.0f} ms CPU (the fastest of 3 runs each)")
claims.claim(f"Caching the source changes no output ({'identical' if same else 'different'} outputs on 100 sources) and "
             f"costs less: {fast_seconds * 1000:.0f} ms of CPU against {slow_seconds * 1000:.0f} ms "
             f"({slow_seconds / fast_seconds:.1f}x)", holds=same and slow_seconds > 1.1 * fast_seconds)


# %% [markdown] id="32351948"
# ## 6. The bottleneck, measured: an LSTM encoder–decoder without attention
#
# Given code: the 2014 design. An LSTM reads the source; its final state $(h, c)$ is the only thing the decoder LSTM
# receives. Same task, same steps, same batches (each source moved to the start of its row: an LSTM reads from its
# first token, so the offsets would only add padding). It trains in about 10 CPU seconds.
#
# **Predict before you run.** To write the copy, the decoder needs every digit of the source *and its order*: a
# source of $L$ digits is one of $10^L$, and all of it has to come out of the final state, $2 \times 128$ numbers.
# How will the LSTM's exact match change from 1 digit to 8 (lengths it trained on), and beyond?
#
# <details><summary>Answer</summary>
#
# It falls as the source grows, already within the training lengths: short sources come out right, sources of 8
# digits clearly less often, and at 12 digits almost none. In principle 256 floats can hold 8 digits with room to
# spare; what the trained network learns to store in them is the limit. The transformer has no such squeeze: it
# reads each digit from the source at the moment it writes it.
# </details>

# %% id="8bbb0729"
class LSTMSeq2Seq(nn.Module):
    """The 2014 encoder-decoder without attention: the whole source must fit in the encoder's last (h, c)."""

    def __init__(self, vocab_size, d_embed, hidden):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_embed)
        self.encoder = nn.LSTM(d_embed, hidden, batch_first=True)
        self.decoder = nn.LSTM(d_embed, hidden, batch_first=True)
        self.out = nn.Linear(hidden, vocab_size)

    def encode(self, src, padding):
        lengths = (~padding).sum(dim=1)
        packed = nn.utils.rnn.pack_padded_sequence(self.embed(src), lengths, batch_first=True, enforce_sorted=False)
        return self.encoder(packed)[1]                         # (h, c) after each row's last real token

    def forward(self, src, tgt, padding):
        tgt_in = torch.cat([torch.full_like(tgt[:, :1], BOS), tgt[:, :-1]], dim=1)
        hidden, _ = self.decoder(self.embed(tgt_in), self.encode(src, padding))
        return self.out(hidden)

    @torch.no_grad()
    def generate(self, src, padding, max_len):
        state, token, out = self.encode(src, padding), torch.full((src.shape[0], 1), BOS), []
        for _ in range(max_len):
            hidden, state = self.decoder(self.embed(token), state)
            token = self.out(hidden[:, -1]).argmax(dim=-1, keepdim=True)
            out.append(token)
        return pad_after_eos(torch.cat(out, dim=1))


def left_aligned(src, padding, tgt):
    """The same copying examples with every source moved to position 0 (and its target rebuilt to match)."""
    order = padding.int().argsort(dim=1, stable=True)             # each row's real positions first, in order
    width = int((~padding).sum(dim=1).max())
    src, padding = src.gather(1, order)[:, :width], padding.gather(1, order)[:, :width]
    tgt = F.pad(src, (0, 1), value=PAD)
    tgt[torch.arange(len(src)), (~padding).sum(dim=1)] = EOS
    return src, padding, tgt


def lstm_loss(model, src, padding, tgt):
    return seq2seq_loss(model, *left_aligned(src, padding, tgt))


torch.manual_seed(0)
lstm = LSTMSeq2Seq(VOCAB, D_MODEL, 128)
loss, seconds = train_model(lstm, lstm_loss, label="LSTM")
results["LSTM, no attention"] = {"parameters": sum(p.numel() for p in lstm.parameters()), "train CPU s": seconds}
lstm.eval()
accuracy["LSTM, no attention"] = exact_match_by_length(lstm.generate)
print(f"LSTM encoder-decoder: {results['LSTM, no attention']['parameters']:,} parameters, {seconds:.1f} CPU s, last loss {loss:.3f}")
print("held-out exact match by source length:", {k: round(v, 3) for k, v in accuracy["LSTM, no attention"].items()})
lstm_scores = accuracy["LSTM, no attention"]
claims.claim(f"The LSTM's exact match falls with the length, already within its training lengths: {lstm_scores[1]:.0%} at "
             f"1 digit, {lstm_scores[8]:.0%} at 8, {lstm_scores[12]:.0%} at 12 (the encoder-decoder: "
             f"{accuracy['encoder-decoder'][8]:.0%} at 8)",
             holds=lstm_scores[1] > 0.95 and lstm_scores[8] < lstm_scores[1] - 0.15 and lstm_scores[12] < 0.2
             and accuracy["encoder-decoder"][8] > lstm_scores[8] + 0.15)


# %% [markdown] id="b6cd2d3b"
# ## 7. The same task, decoder-only
#
# A decoder-only transformer can do the task too: feed it "source `SEP` target" as one sequence (a **prefix LM**)
# and train next-token prediction on the target part only. Here its stack has $2L + 1 = 5$ causal blocks of the
# same width, which gives it about as many parameters as the encoder–decoder's 2 + 2 blocks (a decoder block has a
# third sublayer). It has no cross-attention: the source is simply earlier in the same sequence, and the target
# reads it through causal self-attention. The source part gets no loss and is read only from the left, so each
# source position sees just the digits before it.
#
# It gets the same examples as the LSTM, each source at the start. The offsets would not give it what they give the
# encoder–decoder: there, output $t$ and source digit $t$ share a position number, whatever the length; in one
# sequence, output digit $t$ sits at position $L + 1 + t$ and its source digit at $t$, a distance that grows with
# the length $L$. (Try it: put `[PAD] * offset` in front of each row in `joined` and train it on the frame.)
#
# The cell trains it for the same 600 steps, about 30 CPU seconds on a 2-core laptop (it prints its predicted time
# after 20 steps).
#
# **Predict before you run.** The prefix LM has as many parameters as the encoder–decoder and reads every source
# digit through attention. On the training lengths, will it copy as well as the encoder–decoder? On 9 to 12 digits?
#
# <details><summary>Answer</summary>
#
# On the training lengths, as well: attention to the source is all the task needs, and both have it. On longer
# sources it fails, all of them: a copy of 9 or more digits ends at positions that no training sequence reached
# (the longest had $8 + 1 + 9 = 18$ tokens), looking back over distances it never learnt, and exact match needs
# every digit and the `EOS` right. The encoder–decoder's offsets have no counterpart here.
# </details>

# %% id="bb99256f"
class PrefixLM(nn.Module):
    """Decoder-only: one causal stack reads "source SEP target" and predicts the target's tokens."""

    def __init__(self, vocab_size, d_model, n_head, n_layer, d_ff):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        nn.init.normal_(self.embed.weight, std=d_model ** -0.5)
        self.blocks = nn.ModuleList(nn.TransformerEncoderLayer(d_model, n_head, d_ff, dropout=0.0, activation="gelu",
                                                               batch_first=True, norm_first=True) for _ in range(n_layer))
        self.norm = nn.LayerNorm(d_model)

    def hidden(self, ids):
        """The final LayerNorm's output (B, T, d_model): position t has read ids[:, :t+1] only."""
        T = ids.shape[1]
        x = self.embed(ids) + sinusoidal_positions(T, self.embed.embedding_dim)
        causal = torch.ones(T, T, dtype=torch.bool).triu(1)
        for block in self.blocks:
            x = block(x, src_mask=causal)
        return self.norm(x)

    def forward(self, ids):
        return self.hidden(ids) @ self.embed.weight.T


def joined(src, padding, tgt):
    # Row b: its real source digits, SEP, its target (digits, EOS); right-padded. Loss only on the target.
    rows, targets = [], []
    for b in range(src.shape[0]):
        source = src[b][~padding[b]].tolist()
        target = [t for t in tgt[b].tolist() if t != PAD]
        rows.append(source + [SEP] + target)
        targets.append([PAD] * len(source) + target)       # position i predicts token i + 1: SEP predicts y0
    width = max(len(r) for r in rows)
    ids = torch.tensor([r + [PAD] * (width - len(r)) for r in rows])
    labels = torch.tensor([t + [PAD] * (width - len(t)) for t in targets])
    return ids, labels


def prefix_lm_loss(model, src, padding, tgt):
    ids, labels = joined(*left_aligned(src, padding, tgt))
    return F.cross_entropy(model(ids).flatten(0, 1), labels.flatten(), ignore_index=PAD)


@torch.no_grad()
def prefix_generate(model, src, padding, max_len):
    ids = torch.cat([src, torch.full((src.shape[0], 1), SEP)], dim=1)    # one length per call: no padding inside
    for _ in range(max_len):
        ids = torch.cat([ids, model(ids)[:, -1].argmax(dim=-1, keepdim=True)], dim=1)
    return pad_after_eos(ids[:, src.shape[1] + 1:])


torch.manual_seed(0)
prefix_lm = PrefixLM(VOCAB, D_MODEL, N_HEAD, 2 * N_LAYER + 1, D_FF)    # 5 blocks: about the encoder-decoder's size
loss, seconds = train_model(prefix_lm, prefix_lm_loss, label="prefix LM")
results["decoder-only prefix LM"] = {"parameters": sum(p.numel() for p in prefix_lm.parameters()), "train CPU s": seconds}
prefix_lm.eval()
accuracy["decoder-only prefix LM"] = exact_match_by_length(lambda s, m, L: prefix_generate(prefix_lm, s, m, L))
print(f"prefix LM: {results['decoder-only prefix LM']['parameters']:,} parameters, {seconds:.1f} CPU s, last loss {loss:.3f}")
print("held-out exact match by source length:", {k: round(v, 3) for k, v in accuracy["decoder-only prefix LM"].items()})
prefix_scores = accuracy["decoder-only prefix LM"]
claims.claim(f"The prefix LM copies the training lengths ({mean_over(prefix_scores, range(1, 9)):.1%} exact over 1-8) "
             f"and none of the longer sources ({mean_over(prefix_scores, range(9, 13)):.1%} over 9-12)",
             holds=mean_over(prefix_scores, range(1, 9)) > 0.97 and mean_over(prefix_scores, range(9, 13)) < 0.1)

# %% [markdown] id="a2f76669"
# ### Three models side by side
#
# The table and the figure collect the measurements above (exact match on held-out sources; the CPU seconds are
# one thread on a shared machine, so compare them only within one run).

# %% id="f1796172"
print(f"{'model':26}{'parameters':>12}{'train CPU s':>13}{'lengths 1-8':>13}{'lengths 9-12':>14}")
for name, row in results.items():
    print(f"{name:26}{row['parameters']:>12,}{row['train CPU s']:>13.1f}{mean_over(accuracy[name], range(1, 9)):>13.1%}"
          f"{mean_over(accuracy[name], range(9, 13)):>14.1%}")
fig, ax = plt.subplots(figsize=(7, 4))
for (name, scores), marker in zip(accuracy.items(), "os^"):
    ax.plot(list(scores), list(scores.values()), marker=marker, label=name)
ax.axvspan(8.5, 12.5, color="0.9", label="longer than any training source")
ax.set_xlabel("source length (digits)")
ax.set_ylabel("exact match on held-out sources")
ax.set_ylim(-0.02, 1.02)
ax.set_title("Copying digits: accuracy against length")
ax.legend()
fig.tight_layout()
plt.show()
lstm_scores = accuracy["LSTM, no attention"]
print(f"LSTM without attention: {lstm_scores[1]:.1%} exact at 1 digit, {lstm_scores[4]:.1%} at 4, {lstm_scores[8]:.1%} at 8 "
      f"(its longest training length), {lstm_scores[12]:.1%} at 12")


def best(score):
    # Every model with the best score (ties named together).
    top = max(score(name) for name in results)
    return " and ".join(name for name in results if score(name) == top)


print(f"most accurate on lengths 1-8: {best(lambda name: mean_over(accuracy[name], range(1, 9)))};  on lengths 9-12: "
      f"{best(lambda name: mean_over(accuracy[name], range(9, 13)))};  fastest to train: "
      f"{best(lambda name: -results[name]['train CPU s'])}")
long = {name: mean_over(accuracy[name], range(9, 13)) for name in results}
claims.claim(f"Only the encoder-decoder copies sources longer than any in training: {long['encoder-decoder']:.1%} exact "
             f"over 9-12 digits, the LSTM {long['LSTM, no attention']:.1%}, the prefix LM {long['decoder-only prefix LM']:.1%}",
             holds=long["encoder-decoder"] > 0.6 > 2 * max(long["LSTM, no attention"], long["decoder-only prefix LM"]))

# %% [markdown] id="19535a1a"
# What to read from the table, the figure and the two lines under them:
#
# * **The LSTM** has one fixed-size state between reader and writer. To copy, that state must hold every digit and
#   its order, and the first printed line shows what a trained one manages: its accuracy falls as the source
#   grows, already within the lengths it trained on, where the transformer reads each digit from the source
#   itself. This is the bottleneck of the recurrent encoder–decoder, and why attention was added to it (Bahdanau et
#   al., 2015) before the transformer dropped the recurrence altogether. It is a statement about how much of the
#   source the decoder needs: to *sort* digits, only the ten digit counts matter, and the state has far less to hold
#   (try it: make the targets the sorted digits in `copy_batch`).
# * **Encoder–decoder against decoder-only** at equal size: both can attend to every source token (compare their
#   accuracy on the training lengths). The difference is the cost: the prefix LM runs every one of its blocks over
#   source and target together, a sequence twice as long, and reads its source only from the left; the
#   encoder–decoder reads the source once, bidirectionally, and its decoder spends its work on the target alone.
#   Compare the time column, knowing that here the encoder–decoder trained on the whole frame of `FRAME` positions
#   (the offsets' price), the others only on their examples' own lengths. Decoder-only models won in practice for a
#   different reason (notebook 07): one objective on all text, and one model for any task phrased as a continuation.
# * **Longer sources** than any seen in training: the encoder–decoder's column 9-12 comes from the offsets as much
#   as from the architecture. Its decoder writes output $t$ by reading source position $t$, and the offsets trained
#   that lookup at every position of the frame; without them (`FRAME = None`) positions 8 and beyond are as new to
#   it as to the others.
#
# ## 8. Both sides against the left side: a masked LM on text
#
# The objective of Exercise 4 on real text (the Python documentation, as bytes; a held-out tenth for testing): a
# small encoder (two of your `EncoderBlock`s) trained to fill in masked bytes, against a causal model of the same
# width and depth trained on next-byte prediction. Both are asked about the same chosen positions of held-out
# windows. The causal model predicts each of them from the clean bytes to its left; the encoder reads a window in
# which 15% of the positions are corrupted, but on both sides. Same number of steps for each: the cell takes about
# 30 CPU seconds on a 2-core laptop.
#
# **Predict before you run.** Which of the two fills in more of the chosen bytes of held-out text: the encoder,
# which sees both sides of each gap, or the causal model, which sees only the left? Count what each one learns from
# per step before you answer.
#
# <details><summary>Answer</summary>
#
# At this budget, the causal model. Seeing both sides helps, but the masked LM is trained only at the 15% of
# positions it chose, the causal model at every position: in the same 300 steps it gets several times more
# predicted bytes to learn from, and that outweighs the right-hand context here. The cell prints both counts.
# </details>

# %% id="5853c580"
from utils import corpus

train_text, valid_text = corpus.train_validation_split(corpus.python_docs())
train_bytes = torch.tensor(list(train_text.encode("utf-8"))) + 4        # byte b is id b + 4, as in section 3
valid_bytes = torch.tensor(list(valid_text.encode("utf-8"))) + 4
SPECIALS = [PAD_ID, CLS_ID, SEP_ID, MASK_ID]
WINDOW, TEXT_STEPS = 64, 300


def windows(data, n, generator):
    starts = torch.randint(len(data) - WINDOW, (n,), generator=generator)
    return torch.stack([data[s: s + WINDOW] for s in starts.tolist()])


class MaskedLM(nn.Module):
    """An encoder-only model: embeddings + sinusoidal positions, your encoder blocks, a tied output layer."""

    def __init__(self, vocab_size, d_model, n_head, n_layer, d_ff):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        nn.init.normal_(self.embed.weight, std=d_model ** -0.5)
        self.blocks = nn.ModuleList(EncoderBlock(d_model, n_head, d_ff) for _ in range(n_layer))
        self.norm = nn.LayerNorm(d_model)

    def hidden(self, ids):
        """The final LayerNorm's output (B, T, d_model): every position has read the whole window."""
        x = self.embed(ids) + sinusoidal_positions(ids.shape[1], self.embed.embedding_dim)
        for block in self.blocks:
            x = block(x)
        return self.norm(x)

    def forward(self, ids):
        return self.hidden(ids) @ self.embed.weight.T


def train_on_text(model, loss_of_window, seed=0, label="text model"):
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR)
    start, targets = time.process_time(), 0
    with progress.training_steps(TEXT_STEPS, label, cpu_seconds=True) as bar:
        for step in bar:
            loss, n = loss_of_window(model, windows(train_bytes, 32, generator), generator)
            targets += n
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            if step % 10 == 0:
                bar.show(loss=loss.item())
    return loss.item(), time.process_time() - start, targets


def mlm_loss(model, ids, generator):
    inputs, labels = mask_tokens(ids, MASK_ID, BYTE_VOCAB, SPECIALS, generator)
    loss = F.cross_entropy(model(inputs).flatten(0, 1), labels.flatten(), ignore_index=-100)
    return loss, int((labels != -100).sum())


def causal_loss(model, ids, generator):
    return F.cross_entropy(model(ids[:, :-1]).flatten(0, 1), ids[:, 1:].flatten()), ids[:, 1:].numel()


torch.manual_seed(0)
encoder_lm = MaskedLM(BYTE_VOCAB, D_MODEL, N_HEAD, 2, D_FF)
causal_lm = PrefixLM(BYTE_VOCAB, D_MODEL, N_HEAD, 2, D_FF)               # the same causal stack as section 7
mlm_last, mlm_seconds, mlm_targets = train_on_text(encoder_lm, mlm_loss, label="masked LM")
causal_last, causal_seconds, causal_targets = train_on_text(causal_lm, causal_loss, label="causal LM")

# Held-out text: the same chosen positions for both. The encoder sees the corrupted window (both sides);
# the causal model sees the clean bytes to the LEFT of each chosen position and nothing to its right.
generator = torch.Generator().manual_seed(99)
ids = windows(valid_bytes, 256, generator)
inputs, labels = mask_tokens(ids, MASK_ID, BYTE_VOCAB, SPECIALS, generator)
chosen = labels != -100
chosen[:, 0] = False                                                    # the causal model has no left context there
encoder_lm.eval(), causal_lm.eval()
with torch.no_grad():
    encoder_guess = encoder_lm(inputs).argmax(dim=-1)
    causal_guess = F.pad(causal_lm(ids[:, :-1]).argmax(dim=-1), (1, 0), value=PAD_ID)   # position t from bytes < t
print(f"{int(chosen.sum())} chosen positions in {ids.shape[0]} held-out windows of {WINDOW} bytes")
print(f"masked LM (reads both sides):   accuracy {(encoder_guess[chosen] == ids[chosen]).float().mean():.1%}  "
      f"({mlm_seconds:.1f} CPU s, trained on {mlm_targets:,} predicted bytes)")
print(f"causal LM (reads the left only): accuracy {(causal_guess[chosen] == ids[chosen]).float().mean():.1%}  "
      f"({causal_seconds:.1f} CPU s, trained on {causal_targets:,} predicted bytes)")
masked_right = (encoder_guess[chosen] == ids[chosen]).float().mean().item()
causal_right = (causal_guess[chosen] == ids[chosen]).float().mean().item()
claims.claim(f"At equal steps the causal model fills in more of the chosen bytes ({causal_right:.1%} against the masked "
             f"LM's {masked_right:.1%}), having learnt from {causal_targets / mlm_targets:.1f} times as many predicted bytes",
             holds=causal_right > masked_right + 0.03 and causal_targets > 3 * mlm_targets)

# %% [markdown] id="b3d36907"
# Look at the last column before the accuracies. With the same number of steps the two models did not get the same
# training signal: the causal model learns from every position of every window, the masked LM only from the 15% it
# chose, several times fewer predicted bytes. Per step the masked objective is the less efficient one, and at this
# budget that outweighs the advantage of seeing both sides (the claim above); this is one reason (ELECTRA, 2020, is built on it)
# why pure masked-LM pre-training was overtaken. With equal *signal* (more steps for the encoder, or a higher
# `mask_prob`) you would expect the advantage to show, since a masked byte in the middle of a word is easier to
# fill in when you can see how the word ends. This notebook does not run that comparison (it would not fit in its
# CPU budget): make the prediction, then try it. Whatever the numbers, an encoder cannot generate text: there is no left-to-right order in which
# its predictions can be chained. An encoder is for *representing* a text you already have (classification,
# tagging, retrieval); a decoder is for continuing one.
#
# ### One vector per window: a linear probe
#
# What an encoder is for, measured. Freeze both models, take one vector per window, and train only a linear
# classifier (a *probe*) on a small labelled task generated offline: is a window of 64 bytes from the Python
# documentation, or from the source code of Python's standard library? Neither model saw the standard library's
# source files in training (the documentation they trained on does hold short code examples and `>>>` sessions). The
# encoder's vector is the mean of its outputs over the window (BERT trains a `[CLS]` token for this; nothing here was
# trained for classification, so the mean is the fair choice). The causal model's is its *last* position, the only
# one that has read the whole window: what a decoder-only model offers when one vector is asked of it. The third
# row, the causal model's mean over positions, separates "pooled over the window" from "read both sides": where it
# matches the first row, what the last position lacked was not the right-hand side but the rest of the window, since
# a position trained to predict one next byte keeps mostly what that byte needs. All three probes see the same
# windows and train the same way; the accuracies are on held-out windows (chance is 50%).

# %% id="21c530a1"
code_train, code_valid = corpus.python_stdlib_corpus()
code_train_bytes = torch.frombuffer(bytearray(code_train.encode("utf-8")), dtype=torch.uint8)
code_valid_bytes = torch.frombuffer(bytearray(code_valid.encode("utf-8")), dtype=torch.uint8)


def labelled_windows(doc_bytes, code_bytes, n, generator):
    """n windows of documentation (label 0) and n of standard-library code (label 1), as byte ids."""
    ids = torch.cat([windows(doc_bytes, n, generator), windows(code_bytes, n, generator).long() + 4])
    return ids, torch.cat([torch.zeros(n), torch.ones(n)])


def probe_accuracy(features, seed=5, n=512, steps=300):
    """A logistic-regression probe trained on frozen features of training windows; its held-out accuracy."""
    generator = torch.Generator().manual_seed(seed)
    train_ids, train_y = labelled_windows(train_bytes, code_train_bytes, n, generator)
    test_ids, test_y = labelled_windows(valid_bytes, code_valid_bytes, n, generator)
    with torch.no_grad():
        train_x, test_x = features(train_ids), features(test_ids)
    mean, std = train_x.mean(dim=0), train_x.std(dim=0) + 1e-6
    probe = nn.Linear(train_x.shape[1], 1)
    nn.init.zeros_(probe.weight), nn.init.zeros_(probe.bias)
    optimizer = torch.optim.AdamW(probe.parameters(), lr=1e-2, weight_decay=1e-2)
    for _ in range(steps):
        loss = F.binary_cross_entropy_with_logits(probe((train_x - mean) / std).squeeze(-1), train_y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        return ((probe((test_x - mean) / std).squeeze(-1) > 0).float() == test_y).float().mean().item()


representations = {"masked LM, mean over positions": lambda ids: encoder_lm.hidden(ids).mean(dim=1),
                   "causal LM, last position": lambda ids: causal_lm.hidden(ids)[:, -1],
                   "causal LM, mean over positions": lambda ids: causal_lm.hidden(ids).mean(dim=1)}
probed = {}
for name, features in representations.items():
    probed[name] = probe_accuracy(features)
    print(f"{name:32} linear probe, held-out accuracy {probed[name]:.1%}")
masked_mean, causal_last, causal_mean = probed.values()
claims.claim(f"Pooled over the window, both models' vectors tell documentation from code about equally well ({masked_mean:.1%} "
             f"and {causal_mean:.1%}; chance 50%), the causal model's last position less well ({causal_last:.1%})",
             holds=abs(masked_mean - causal_mean) < 0.04 and min(masked_mean, causal_mean) > causal_last + 0.05)

# %% [markdown] id="87f26829"
# ## What you built
#
# Cross-attention with a padding mask and a cached source, Pre-LN encoder and decoder blocks, BERT's masking, an
# encoder–decoder with shared embeddings trained by teacher forcing on a right-shifted target, and a batched greedy
# decoder that stops per sequence. Together with notebooks 07 to 10 that is all three families of notebook 07's
# table.
