# ---
# jupyter:
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

# %% [markdown] id="4439a002"
# # 05 · Multi-head attention and what it costs
#
# One attention layer computes, for every position, a weighted average of the other positions' values,
# with weights from one notion of relevance: the dot product of a query and a key. But language relates
# words in many ways at once. In *"The cats that the dog chased are sleeping"*, the verb *are* must find
# its subject *cats* (syntax, four words back), *sleeping* relates to *cats* and *dog* by meaning
# (semantics), and a pronoun two sentences later must find what it refers to (discourse). One set of
# weights gives each query **one** distribution over the context; it cannot point at the subject and at
# the previous word and at the topic word all at once without blurring them together.
#
# **Multi-head attention** runs $h$ attention computations side by side, each in its own small subspace
# with its own projections, and mixes their results with one more matrix. In this chapter you:
#
# 1. split a $d_\text{model}$-dimensional representation into $h$ heads and merge it back, as exact inverses
#    (the reshape that everybody gets wrong once);
# 2. write a batched multi-head attention `nn.Module` that matches PyTorch's `nn.MultiheadAttention`
#    weight for weight;
# 3. count parameters: the $4 d_\text{model}^2$ of an attention layer (and why some texts say $3 d_\text{model}^2$), the
#    feed-forward network, LayerNorm and embeddings, up to a whole 6-layer model, and see that the number
#    of heads does not change the count;
# 4. work out what attention costs in memory and time as the sequence grows, and where the quadratic
#    term takes over;
# 5. check that every head's output is a convex combination of its values (and what that rules out);
# 6. look at heads that each implement one recognisable pattern: previous token, duplicate token,
#    delimiter, rare word, and design the probe that tells them apart.
#
# **Time.** About 5 seconds of CPU time for the whole notebook, measured on one core of a busy 2-core machine,
# about what a 2-core laptop takes; no cell takes more than 2 seconds. On a GPU: untimed (nothing here needs
# one).
#
# **How the exercises work.** Each exercise is a function or class with a docstring that states what goes
# in and what comes out. Replace `raise NotImplementedError()` with your code, then run the test cell
# below it: its messages say what was expected and what came back. When the notebook is graded, further
# hidden tests check the same code on new inputs, so make it correct in general, not just on the examples
# shown. Run the cells in order.

# %% id="27c1899d" jupyter={"source_hidden": true} nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
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

# %% id="0d5a8ed5"
import math
import re
from collections import Counter

import matplotlib.pyplot as plt
import torch
import torch.nn as nn
import torch.nn.functional as F

from utils import claims, corpus, plotting

torch.set_printoptions(precision=4, sci_mode=False)

# %% [markdown] id="b2882d13"
# ## 1. One head, one notion of relevance
#
# Recall single-head scaled dot-product attention. For inputs $X \in \mathbb{R}^{T \times d_\text{model}}$
# (one row per position), three learned matrices give queries, keys and values, $Q = XW^Q$, $K = XW^K$,
# $V = XW^V$, and
#
# $$
# \operatorname{Attention}(Q, K, V) = \operatorname{softmax}\!\Big(\frac{QK^\top}{\sqrt{d_k}} + M\Big)\, V ,
# $$
#
# where $M$ is $0$, or $-\infty$ above the diagonal for a causal (left-to-right) model. Row $i$ of the
# softmax is **one** probability distribution over positions: whatever $W^Q$ and $W^K$ learned to call
# relevant. $W^Q$ decides what question each token asks, $W^K$ what each token advertises, $W^V$ what it
# hands over when chosen. If the useful questions are "who is my subject?", "what was the previous
# word?" and "which word here is unusual?", a single head must average them into one distribution, and
# the answers get mixed.
#
# ### Several heads in parallel
#
# Multi-head attention keeps the total width $d_\text{model}$ but cuts it into $h$ heads of width
# $d_k = d_\text{model}/h$. Head $i$ has its own projections $W_i^Q, W_i^K, W_i^V \in \mathbb{R}^{d_\text{model} \times d_k}$,
# computes its own attention pattern, and produces a $(T \times d_k)$ output. The $h$ outputs are
# concatenated back to width $d_\text{model}$ and mixed by an output projection $W^O \in \mathbb{R}^{d_\text{model} \times d_\text{model}}$:
#
# $$
# \operatorname{head}_i = \operatorname{Attention}(XW_i^Q,\; XW_i^K,\; XW_i^V),
# \qquad
# \operatorname{MHA}(X) = \operatorname{Concat}(\operatorname{head}_1, \dots, \operatorname{head}_h)\, W^O .
# $$
#
# In code nobody stores $3h$ small matrices. Stack the $W_i^Q$ side by side and you get one
# $d_\text{model} \times d_\text{model}$ matrix $W^Q$ whose columns $i d_k, \dots, (i+1)d_k - 1$ belong to head $i$. So
# $Q = XW^Q$ is computed once for all heads, and head $i$'s queries are simply **columns
# $i d_k$ to $(i+1) d_k$ of $Q$**. The whole trick of an efficient implementation is to reshape $Q$ so
# that the heads become a batch dimension, run one batched attention, and reshape back.
#
# ### Worked example: $d_\text{model} = 6$, $h = 3$, so $d_k = 2$
#
# Each head works in 2 dimensions: $W_1^Q, W_1^K, W_1^V$ are $6 \times 2$ each, and so are those of
# heads 2 and 3. Take two tokens whose (already projected) 6-dimensional query vectors are
# $q_\text{tok 0} = (0, 1, 2, 3, 4, 5)$ and $q_\text{tok 1} = (6, 7, 8, 9, 10, 11)$. Head 1 sees features
# 0-1, head 2 features 2-3, head 3 features 4-5:
#
# | | head 1 | head 2 | head 3 |
# |---|---|---|---|
# | token 0 | (0, 1) | (2, 3) | (4, 5) |
# | token 1 | (6, 7) | (8, 9) | (10, 11) |
#
# So head 2's query matrix, one row per token, is $\begin{pmatrix} 2 & 3 \\ 8 & 9 \end{pmatrix}$.
# The concatenation at the end puts the three 2-dimensional head outputs of a token back side by side,
# 6 numbers again, and $W^O$ ($6 \times 6$) mixes them.
#
# **Predict before you run.** The tempting one-liner `q.view(1, 3, 2, 2)` also produces a tensor of shape
# (batch 1, 3 heads, 2 tokens, 2 features). What does it put in "head 2" (index 1)?
#
# <details><summary>Answer</summary>
#
# `view` only re-reads the same 12 numbers in memory order, 0, 1, 2, ..., 11, four at a time. Its "head 2"
# is $\begin{pmatrix} 4 & 5 \\ 6 & 7 \end{pmatrix}$: head 3's features of token 0 and head 1's features of token 1.
# The shape is right and the content is garbage: each "head" now mixes tokens and features of different heads.
# The correct split first cuts the **feature** axis, `(1, 2, 3, 2)` = (batch, token, head, feature), and then
# swaps the token and head axes.
# </details>

# %% id="64a2a0bf"
q = torch.arange(12.0).reshape(1, 2, 6)          # (B=1, T=2, d_model=6): two tokens
d_model, h = 6, 3
d_k = d_model // h
print(f"d_model = {d_model}, h = {h} heads, d_k = {d_model} / {h} = {d_k} features per head")
for i in range(h):
    print(f"head {i + 1}: features {i * d_k}-{(i + 1) * d_k - 1}:", q[0, :, i * d_k:(i + 1) * d_k].tolist())
print()
print("q.view(1, 3, 2, 2)[0, 1] =", q.view(1, 3, 2, 2)[0, 1].tolist(), " <- not head 2: wrong tokens, wrong features")

# %% [markdown] id="47c1d06c"
# ### Exercise 1: `split_heads` and `merge_heads` (1 + 2 + 1 points)
#
# *Points: 1 visible, 2 hidden (behaviour: values, strides, dtypes, devices, gradients), 1 hidden (errors and edge cases: `ValueError` for an indivisible width, inputs left unchanged, one head).*
#
# Write the two reshapes, for a batch:
#
# * `split_heads(x, n_head)`: $(B, T, d_\text{model}) \to (B, h, T, d_k)$, where head $i$ gets features
#   $i d_k, \dots, (i+1) d_k - 1$ of every token;
# * `merge_heads(x)`: $(B, h, T, d_k) \to (B, T, h \cdot d_k)$, the concatenation of the heads, feature
#   blocks in head order. `merge_heads(split_heads(x, h))` must give back `x` exactly, and
#   `split_heads(merge_heads(y), h)` must give back `y`.
#
# Hints: cut the feature axis first, then move the head axis; merging undoes the two steps in the
# reverse order. A transposed tensor is not contiguous in memory, and `.view` refuses to reshape it:
# `.reshape` (or `.contiguous()` first) copies when it has to.

# %% id="1e1723e6" nbgrader={"grade": false, "grade_id": "split_heads", "locked": false, "schema_version": 3, "solution": true, "task": false}
import torch


def split_heads(x, n_head):
    """Split the features of every token into n_head heads and make the heads a batch axis.

    Args:
        x: tensor of shape (B, T, d_model), any dtype, contiguous or not; d_model must be a
            multiple of n_head.
        n_head: the number of heads h, a positive int.
    Returns:
        Tensor of shape (B, h, T, d_k), d_k = d_model // h, same dtype and device, with
        out[b, i, t, :] == x[b, t, i * d_k:(i + 1) * d_k]: head i owns the i-th block of d_k
        consecutive features. It may be a view of x (the usual reshape + transpose gives a
        non-contiguous view, no copy) or a new tensor; callers must not rely on either. x is not
        modified. Differentiable.
    Raises:
        ValueError: if d_model is not divisible by n_head.
    """
    ### BEGIN SOLUTION
    B, T, d_model = x.shape
    if d_model % n_head != 0:
        raise ValueError(f"d_model = {d_model} is not divisible by n_head = {n_head}")
    # Cut the feature axis into h blocks of d_k: (B, T, h, d_k); then swap the token and head axes.
    return x.reshape(B, T, n_head, d_model // n_head).transpose(1, 2)
    ### END SOLUTION


def merge_heads(x):
    """Concatenate the heads again: the exact inverse of split_heads.

    Args:
        x: tensor of shape (B, h, T, d_k), any dtype, contiguous or not (split_heads' output and
            attention outputs usually are not).
    Returns:
        Tensor of shape (B, T, h * d_k), same dtype and device, with
        out[b, t, i * d_k:(i + 1) * d_k] == x[b, i, t, :]. Because the head axis has to move back
        next to the feature axis, this is in general a new (contiguous) tensor; when the memory
        already has that order (e.g. x came straight from split_heads) it may be a view. x is not
        modified. Differentiable.
    """
    ### BEGIN SOLUTION
    B, h, T, d_k = x.shape
    # Undo the steps in reverse order: heads back behind the tokens, then join (h, d_k) into one axis.
    return x.transpose(1, 2).reshape(B, T, h * d_k)
    ### END SOLUTION


# %% id="b5edcf63" nbgrader={"grade": true, "grade_id": "test_split_heads", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
import torch
from utils import checks

# The worked example: two tokens of width 6, three heads of width 2.
x = torch.arange(12.0).reshape(1, 2, 6)
out = split_heads(x, 3)
checks.assert_tensor(out, name="split_heads(arange(12).reshape(1, 2, 6), 3)", shape=(1, 3, 2, 2), dtype=torch.float32,
                     hint="(B, T, d_model) -> (B, h, T, d_k).")
expected = torch.tensor([[[[0.0, 1.0], [6.0, 7.0]],      # head 1: features 0-1 of token 0, then token 1
                          [[2.0, 3.0], [8.0, 9.0]],      # head 2: features 2-3
                          [[4.0, 5.0], [10.0, 11.0]]]])  # head 3: features 4-5
checks.assert_close(out, expected, name="split_heads(arange(12).reshape(1, 2, 6), 3)",
                    hint="Head i must get features i*d_k .. (i+1)*d_k - 1 of EVERY token. A single .view(B, h, T, d_k) "
                         "re-reads memory in the wrong order: cut the feature axis into (h, d_k) first, then swap T and h.")

# merge_heads puts the heads back side by side: out[b, t] = concat(x[b, 0, t], x[b, 1, t], ...).
y = torch.tensor([[[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]],        # head 0, tokens 0, 1, 2
                   [[10.0, 20.0], [30.0, 40.0], [50.0, 60.0]]]])  # head 1
out = merge_heads(y)
checks.assert_tensor(out, name="merge_heads of a (1, 2, 3, 2) tensor", shape=(1, 3, 4), dtype=torch.float32,
                     hint="(B, h, T, d_k) -> (B, T, h * d_k).")
checks.assert_close(out, torch.tensor([[[1.0, 2.0, 10.0, 20.0], [3.0, 4.0, 30.0, 40.0], [5.0, 6.0, 50.0, 60.0]]]),
                    name="merge_heads of a (1, 2, 3, 2) tensor",
                    hint="Token t's row is head 0's row t followed by head 1's row t. Move the head axis back behind "
                         "the token axis before joining (h, d_k).")

# Exact inverses.
x = torch.arange(2 * 4 * 6.0).reshape(2, 4, 6)
checks.assert_close(merge_heads(split_heads(x, 2)), x, atol=0, rtol=0, name="merge_heads(split_heads(x, 2))",
                    hint="The two functions must undo each other exactly.")
checks.assert_raises(ValueError, split_heads, torch.zeros(1, 2, 6), 4, name="split_heads with d_model=6, n_head=4",
                     hint="6 features cannot be cut into 4 equal heads: raise ValueError.")
print("split_heads / merge_heads: visible tests passed")

# %% id="0d45c38d" nbgrader={"grade": true, "grade_id": "test_split_heads_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for split_heads run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks, probes

g = torch.Generator().manual_seed(5051)


def split_reference(x, h):
    # Written out head by head with slicing: head i = features i*d_k .. (i+1)*d_k - 1.
    d_k = x.shape[-1] // h
    return torch.stack([x[:, :, i * d_k:(i + 1) * d_k] for i in range(h)], dim=1)


def merge_reference(y):
    return torch.cat([y[:, i] for i in range(y.shape[1])], dim=-1)


for B, T, d, h in [(3, 5, 12, 4), (2, 7, 8, 2), (1, 4, 10, 5), (2, 3, 6, 1), (2, 5, 6, 6), (4, 1, 8, 4)]:
    x = torch.randn(B, T, d, generator=g)
    name = f"split_heads(x of shape {(B, T, d)}, {h})"
    out = split_heads(x, h)
    checks.assert_tensor(out, name=name, shape=(B, h, T, d // h), dtype=torch.float32)
    checks.assert_close(out, split_reference(x, h), atol=0, rtol=0, name=name,
                        hint="out[b, i, t] must be x[b, t, i*d_k:(i+1)*d_k]: split the feature axis, then swap T and h.")
    y = torch.randn(B, h, T, d // h, generator=g)
    name = f"merge_heads(y of shape {(B, h, T, d // h)})"
    out = merge_heads(y)
    checks.assert_tensor(out, name=name, shape=(B, T, d), dtype=torch.float32)
    checks.assert_close(out, merge_reference(y), atol=0, rtol=0, name=name,
                        hint="out[b, t] is the concatenation of y[b, 0, t], y[b, 1, t], ...: transpose back before joining.")
    checks.assert_close(merge_heads(split_heads(x, h)), x, atol=0, rtol=0, name=f"merge_heads(split_heads(x, {h})), x {(B, T, d)}")
    checks.assert_close(split_heads(merge_heads(y), h), y, atol=0, rtol=0, name=f"split_heads(merge_heads(y), {h}), y {(B, h, T, d // h)}")

# Non-contiguous inputs: a transposed x, and heads that come from a transpose (as attention outputs do).
x = torch.randn(6, 2, 12, generator=g, dtype=torch.float64).transpose(0, 1)        # (2, 6, 12), not contiguous
checks.assert_close(split_heads(x, 3), split_reference(x, 3), atol=0, rtol=0,
                    name="split_heads of a non-contiguous float64 x", hint="Keep the dtype; .view fails on non-contiguous input.")
y = torch.randn(2, 5, 3, 4, generator=g, dtype=torch.float64).transpose(1, 2)       # (2, 3, 5, 4), not contiguous
out = merge_heads(y)
checks.assert_tensor(out, name="merge_heads of a non-contiguous float64 y", shape=(2, 5, 12), dtype=torch.float64)
checks.assert_close(out, merge_reference(y), atol=0, rtol=0, name="merge_heads of a non-contiguous float64 y")
y = torch.randn(2, 3, 5, 4, generator=g).permute(0, 1, 3, 2).contiguous().transpose(2, 3)   # other strides
checks.assert_close(merge_heads(y), merge_reference(y), atol=0, rtol=0, name="merge_heads of a (B, h, T, d_k) with swapped strides")

# Integer tensors are just rearranged.
x = torch.randint(-50, 50, (2, 3, 8), generator=g)
out = split_heads(x, 4)
checks.assert_tensor(out, name="split_heads of an int64 tensor", shape=(2, 4, 3, 2), dtype=torch.int64)
checks.assert_equal(out.tolist(), split_reference(x, 4).tolist(), name="split_heads of an int64 tensor")

# Gradients pass straight through (a rearrangement of the gradient).
x = torch.randn(2, 4, 6, generator=g, dtype=torch.float64).requires_grad_()
grad_out = torch.randn(2, 2, 4, 3, generator=g, dtype=torch.float64)
result = probes.gradients(split_heads, x, 2, grad_output=grad_out)
checks.assert_tensor(result["inputs"][0], name="gradient of split_heads", shape=(2, 4, 6), dtype=torch.float64,
                     hint="Use torch operations only, so that gradients flow.")
checks.assert_close(result["inputs"][0], merge_reference(grad_out), atol=1e-12, name="gradient of split_heads")
y = torch.randn(2, 3, 4, 2, generator=g, dtype=torch.float64).requires_grad_()
grad_out = torch.randn(2, 4, 6, generator=g, dtype=torch.float64)
result = probes.gradients(merge_heads, y, grad_output=grad_out)
checks.assert_true(result["inputs"][0] is not None, name="gradient of merge_heads",
                   problem="no gradient reached the heads.", hint="Use torch operations only (no .detach(), no NumPy).")
checks.assert_close(result["inputs"][0], split_reference(grad_out, 3), atol=1e-12, name="gradient of merge_heads")

# On the device of x: x on PyTorch's meta device (shapes, no values) stands in for a GPU. A rearrangement never
# needs the values, so the result must be on meta too; a result made with torch.empty/zeros without device= is a
# CPU tensor, and copying meta heads into it fails ("needs values" is not accepted here).
for fn, args, label in [(split_heads, (torch.randn(2, 3, 6, generator=g), 3), "split_heads"),
                        (merge_heads, (torch.randn(2, 3, 4, 2, generator=g),), "merge_heads")]:
    checks.assert_kept_on_meta(probes.make("utils.meta_device.result_device_on_meta", fn, *args), values_may_be_read=False,
                               name=f"{label} of a tensor on another device than the CPU (the meta device)",
                               hint="Return a tensor on x's device: rearrange x itself (reshape, transpose, cat, stack), or "
                                    "make new tensors with device=x.device (x.new_empty(...)).")

print("split_heads / merge_heads: hidden tests (behaviour) passed")
### END HIDDEN TESTS

# %% id="ddab6dae" nbgrader={"grade": true, "grade_id": "test_split_heads_hidden_errors", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for split_heads run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks, probes

g = torch.Generator().manual_seed(5053)
# ValueError, not a reshape's RuntimeError or an assert, whenever the width cannot be cut evenly.
for shape, h in [((2, 3, 10), 3), ((2, 3, 8), 3), ((1, 1, 7), 2), ((3, 2, 6), 4), ((1, 5, 4), 8)]:
    checks.assert_raises(ValueError, split_heads, torch.zeros(*shape), h, name=f"split_heads of shape {shape}, n_head={h}",
                         hint="Check d_model % n_head yourself and raise ValueError with a message.")
# The input is left alone, by both functions.
x = torch.randn(2, 4, 6, generator=g)
traced = probes.traced_call(split_heads, x, 3)
checks.assert_close(traced.args_after[0], x, atol=0, rtol=0, name="split_heads' input after the call",
                    hint="Do not modify x in place.")
y = torch.randn(2, 3, 4, 2, generator=g)
traced = probes.traced_call(merge_heads, y)
checks.assert_close(traced.args_after[0], y, atol=0, rtol=0, name="merge_heads' input after the call",
                    hint="Do not modify x in place.")
# One head is the identity rearrangement; one token and one feature per head are fine.
x = torch.randn(3, 4, 5, generator=g)
checks.assert_close(split_heads(x, 1), x[:, None], atol=0, rtol=0, name="split_heads(x, 1)",
                    hint="With one head the output is x with a head axis of size 1 inserted at position 1.")
x = torch.randn(2, 1, 6, generator=g)
checks.assert_close(split_heads(x, 6), x.reshape(2, 1, 6, 1).transpose(1, 2), atol=0, rtol=0, name="split_heads of a (2, 1, 6) x, 6 heads")
print("split_heads / merge_heads: hidden tests (errors and edge cases) passed")
### END HIDDEN TESTS

# %% [markdown] id="8461b91f"
# ## 2. Multi-head attention as one batched computation
#
# With the two reshapes, all heads run at once. For a batch $x$ of shape $(B, T, d_\text{model})$:
#
# 1. project: $Q = xW_Q^\top + b_Q$, $K = xW_K^\top + b_K$, $V = xW_V^\top + b_V$ (PyTorch's `nn.Linear` stores
#    $W$ as (out, in) and computes $xW^\top + b$), each $(B, T, d_\text{model})$;
# 2. split each into heads: $(B, h, T, d_k)$;
# 3. attention per head, batched over $B$ **and** $h$: scores $QK^\top/\sqrt{d_k}$ of shape $(B, h, T, T)$,
#    causal mask if asked, softmax over the last axis (the keys), times $V$: $(B, h, T, d_k)$;
# 4. merge the heads: $(B, T, d_\text{model})$;
# 5. output projection: $\text{out} = \text{merged}\,W_O^\top + b_O$.
#
# Two details decide whether the result is right. The scale is $\sqrt{d_k}$, the width of **one head**, not
# $\sqrt{d_\text{model}}$: the scores of a head are sums of $d_k$ products, so their spread grows like $\sqrt{d_k}$.
# And the output projection is not decoration: without $W_O$ each head's output stays in its own block
# of features and the heads never combine.
#
# **Weight layout.** In the separate layout, rows $i d_k, \dots, (i+1) d_k - 1$ of `q_proj.weight` (PyTorch's
# $(\text{out}, \text{in})$ convention) produce head $i$'s queries, and the same for keys and values; columns
# $i d_k, \dots, (i+1) d_k - 1$ of `out_proj.weight` read head $i$'s output. Many codebases fuse the three
# input projections into one `nn.Linear(d_model, 3 * d_model)` whose weight is $W_Q$, $W_K$, $W_V$ stacked in
# that order: that is exactly PyTorch's `nn.MultiheadAttention.in_proj_weight`. Both layouts compute the
# same function; the exercise accepts either, as long as the names are the documented ones.
#
# **What heads turn out to learn.** Trained models contain heads with recognisable jobs. Studies of
# BERT and of machine-translation transformers found **previous-token** (and next-token) heads that
# attend one position back, **delimiter** heads that park attention on separators such as `[SEP]`, `.` or
# the first token when they have nothing better to do, **rare-word** heads that attend to the least frequent
# token in the sentence, and heads that track syntactic relations such as a verb's object. Many heads can be
# pruned with little loss; a few do most of the work. In language models, pairs of heads across two
# layers form **induction heads**, which find an earlier occurrence of the current token and copy what
# followed it ("Mr Dursley ... Mr" → "Dursley"); notebook 11 trains a small model until one forms and
# finds it. Section 2b builds four of these patterns by hand.
#
# ### Exercise 2: `MultiHeadAttention` (2 + 2 + 1 points)
#
# *Points: 2 visible, 2 hidden (behaviour: outputs against a loop over heads and `nn.MultiheadAttention`, several lengths on one module, the causal mask, gradients), 1 hidden (errors, defaults and edge cases: `ValueError` for an indivisible width, `causal` left out, a single token, float64, float16 and bfloat16, the input left unchanged, the mask made on x's device).*
#
# Write the module. No loop over heads: the point is one batched computation. Inside, use your
# `split_heads` and `merge_heads`, and either your own masked softmax or `F.scaled_dot_product_attention`
# (its default scale is $1/\sqrt{\text{last dimension of } q}$, which after the split is $d_k$).

# %% id="30330bc1" nbgrader={"grade": false, "grade_id": "MultiHeadAttention", "locked": false, "schema_version": 3, "solution": true, "task": false}
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    """Batched multi-head self-attention: MultiHeadAttention(d_model, n_head, bias=True).

    Weight layout (the tests load weights by these names and shapes, so use exactly one of these):
      * separate projections (the layout of this notebook):
            q_proj, k_proj, v_proj, out_proj: each nn.Linear(d_model, d_model, bias=bias);
      * or fused input projections:
            qkv_proj: nn.Linear(d_model, 3 * d_model, bias=bias), weight = torch.cat([W_q, W_k, W_v])
            (rows 0:d are the queries, d:2d the keys, 2d:3d the values; the bias likewise),
            out_proj: nn.Linear(d_model, d_model, bias=bias).
      The tests read the parameter names to tell the layouts apart. No other parameters (a cached mask
      may be a buffer). With bias=False no projection has a bias. In every projection, output features
      i*d_k .. (i+1)*d_k - 1 (rows of the weight) belong to head i, d_k = d_model // n_head, and
      out_proj's input features (columns) i*d_k .. (i+1)*d_k - 1 read head i's output.

    forward(x, causal=False):
        x: floating tensor (B, T, d_model), T >= 1, any floating dtype (float32, float64, float16,
            bfloat16). Returns a new tensor (B, T, d_model), same dtype:
            head_i = softmax(Q_i K_i^T / sqrt(d_k) + M) V_i with Q = x W_q^T + b_q (head i = its
            i-th block of d_k features), likewise K and V; M = 0, or -inf above the diagonal when
            causal=True (position t attends to positions <= t only, so no row is ever fully masked);
            out = concat(head_1, ..., head_h) W_o^T + b_o.
        Differentiable with respect to x and every parameter; x is not modified. Runs on the device of
        the module and x (a GPU too): every tensor it makes, the causal mask included, is made on x.device.
    Raises:
        ValueError: in the constructor, if d_model is not divisible by n_head.
    """

    def __init__(self, d_model, n_head, bias=True):
        super().__init__()
        ### BEGIN SOLUTION
        if d_model % n_head != 0:
            raise ValueError(f"d_model = {d_model} is not divisible by n_head = {n_head}")
        self.n_head = n_head
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, d_model, bias=bias)
        self.v_proj = nn.Linear(d_model, d_model, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)
        ### END SOLUTION

    def forward(self, x, causal=False):
        ### BEGIN SOLUTION
        T = x.shape[1]
        q = split_heads(self.q_proj(x), self.n_head)           # (B, h, T, d_k)
        k = split_heads(self.k_proj(x), self.n_head)
        v = split_heads(self.v_proj(x), self.n_head)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])   # (B, h, T, T), scaled by sqrt(d_k)
        if causal:
            future = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)   # key j > query i
            scores = scores.masked_fill(future, float("-inf"))
        heads = scores.softmax(dim=-1) @ v                      # (B, h, T, d_k)
        return self.out_proj(merge_heads(heads))                # mix the heads: (B, T, d_model)
        ### END SOLUTION


# %% id="bacb78fa" nbgrader={"grade": true, "grade_id": "test_MultiHeadAttention", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
import math

import torch
from utils import checks, probes

SEPARATE = {"q_proj.weight", "k_proj.weight", "v_proj.weight", "out_proj.weight"}
FUSED = {"qkv_proj.weight", "out_proj.weight"}


def with_biases(names):
    return names | {n.replace("weight", "bias") for n in names}


# The parameters have the documented names and shapes.
m = MultiHeadAttention(4, 2)
params = probes.parameters(m)
names = set(params)
checks.assert_true(names in (with_biases(SEPARATE), with_biases(FUSED)), name="MultiHeadAttention(4, 2) parameters",
                   problem=f"got parameters {sorted(names)}.",
                   hint="Use q_proj, k_proj, v_proj, out_proj (or qkv_proj, out_proj) as nn.Linear with bias=bias.")
fused = "qkv_proj.weight" in names
for n, p in params.items():
    rows = 12 if n.startswith("qkv_proj") else 4
    checks.assert_tensor(p, name=f"MultiHeadAttention(4, 2).{n}", shape=(rows, 4) if n.endswith("weight") else (rows,))
no_bias = set(probes.parameters(MultiHeadAttention(4, 2, bias=False)))
checks.assert_true(no_bias in (SEPARATE, FUSED), name="MultiHeadAttention(4, 2, bias=False) parameters",
                   problem=f"got parameters {sorted(no_bias)}.", hint="bias=False: no projection has a bias.")


def load(module, Wq, Wk, Wv, Wo, scale_out=1.0):
    d = Wq.shape[0]
    zeros = torch.zeros(d)
    if fused:
        sd = {"qkv_proj.weight": torch.cat([Wq, Wk, Wv]), "qkv_proj.bias": torch.zeros(3 * d)}
    else:
        sd = {"q_proj.weight": Wq, "k_proj.weight": Wk, "v_proj.weight": Wv,
              "q_proj.bias": zeros, "k_proj.bias": zeros, "v_proj.bias": zeros}
    sd.update({"out_proj.weight": Wo * scale_out, "out_proj.bias": zeros})
    module.load_state_dict(sd, strict=False)


# Identity projections: Q = K = V = x, head 0 sees features 0-1, head 1 features 2-3, d_k = 2.
eye = torch.eye(4)
load(m, eye, eye, eye, eye)
x = torch.tensor([[[1.0, 0.0, 0.0, 2.0],
                   [0.0, 1.0, 2.0, 0.0],
                   [1.0, 1.0, 0.0, 0.0]]])


def by_hand(x, causal):
    # Each head on its own 2 features, scores divided by sqrt(d_k) = sqrt(2), then concatenated.
    outs = []
    for i in range(2):
        f = x[0, :, 2 * i:2 * i + 2]
        s = f @ f.T / math.sqrt(2)
        if causal:
            s = s.masked_fill(torch.ones(3, 3, dtype=torch.bool).triu(1), float("-inf"))
        outs.append(torch.softmax(s, dim=-1) @ f)
    return torch.cat(outs, dim=-1).unsqueeze(0)


out = m(x)
checks.assert_tensor(out, name="MultiHeadAttention(4, 2)(x)", shape=(1, 3, 4), dtype=torch.float32)
checks.assert_close(out, by_hand(x, False), name="MultiHeadAttention(4, 2) with identity weights",
                    hint="Two heads of width d_k = 2: head i uses features 2i, 2i+1 only; scale by sqrt(d_k), not sqrt(d_model).")
out = m(x, causal=True)
checks.assert_close(out[0, 0], x[0, 0], name="causal output of the first token (identity weights)",
                    hint="With causal=True the first token can only attend to itself, so it gets back its own value.")
checks.assert_close(out, by_hand(x, True), name="MultiHeadAttention(4, 2) with identity weights, causal=True",
                    hint="Mask the keys AFTER each query (j > i) with -inf, before the softmax.")

# The output projection is applied: doubling W_O doubles the output.
load(m, eye, eye, eye, eye, scale_out=2.0)
checks.assert_close(m(x), 2 * by_hand(x, False), name="MultiHeadAttention with out_proj.weight = 2 I",
                    hint="Finish with the output projection out_proj applied to the merged heads.")
print("MultiHeadAttention: visible tests passed")

# %% id="d5e04a5d" nbgrader={"grade": true, "grade_id": "test_MultiHeadAttention_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for MultiHeadAttention run when your notebook is graded.
### BEGIN HIDDEN TESTS
import math

import torch
from utils import checks, probes

g = torch.Generator().manual_seed(5052)
NAMES = ("q_proj", "k_proj", "v_proj", "out_proj")


def layout(module, d, bias):
    params = probes.parameters(module)
    names = set(params)
    separate = {f"{n}.weight" for n in NAMES}
    fused = {"qkv_proj.weight", "out_proj.weight"}
    if bias:
        separate |= {f"{n}.bias" for n in NAMES}
        fused |= {"qkv_proj.bias", "out_proj.bias"}
    checks.assert_true(names in (separate, fused), name=f"parameters of MultiHeadAttention({d}, ..., bias={bias})",
                       problem=f"got {sorted(names)}.", hint="Use the names and shapes stated in the docstring.")
    return "qkv_proj.weight" in names


def random_weights(d, bias, dtype):
    W = [torch.randn(d, d, generator=g, dtype=dtype) / math.sqrt(d) for _ in range(4)]
    b = [torch.randn(d, generator=g, dtype=dtype) * 0.2 if bias else None for _ in range(4)]
    return W, b


def state_dict(W, b, fused):
    if fused:
        sd = {"qkv_proj.weight": torch.cat(W[:3]), "out_proj.weight": W[3]}
        if b[0] is not None:
            sd.update({"qkv_proj.bias": torch.cat(b[:3]), "out_proj.bias": b[3]})
        return sd
    sd = {f"{n}.weight": w for n, w in zip(NAMES, W)}
    if b[0] is not None:
        sd.update({f"{n}.bias": v for n, v in zip(NAMES, b)})
    return sd


def linear(x, w, bias):
    return x @ w.T + (bias if bias is not None else 0)


def loop_reference(x, W, b, h, causal):
    # One head at a time, with plain slicing: head i owns features i*d_k .. (i+1)*d_k - 1.
    T, d = x.shape[1], x.shape[2]
    d_k = d // h
    q, k, v = (linear(x, W[j], b[j]) for j in range(3))
    heads = []
    for i in range(h):
        cols = slice(i * d_k, (i + 1) * d_k)
        s = q[..., cols] @ k[..., cols].transpose(-2, -1) / math.sqrt(d_k)
        if causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
        heads.append(torch.softmax(s, dim=-1) @ v[..., cols])
    return linear(torch.cat(heads, dim=-1), W[3], b[3])


def torch_reference(x, W, b, h, causal):
    d = x.shape[-1]
    ref = torch.nn.MultiheadAttention(d, h, bias=b[0] is not None, batch_first=True).to(x.dtype)
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat(W[:3]))
        ref.out_proj.weight.copy_(W[3])
        if b[0] is not None:
            ref.in_proj_bias.copy_(torch.cat(b[:3]))
            ref.out_proj.bias.copy_(b[3])
        mask = torch.ones(x.shape[1], x.shape[1], dtype=torch.bool).triu(1) if causal else None
        return ref(x, x, x, attn_mask=mask, need_weights=False)[0]


for B, T, d, h, bias in [(2, 5, 12, 3, True), (3, 7, 16, 4, False), (1, 6, 8, 1, True), (2, 4, 6, 6, True), (2, 9, 20, 5, False)]:
    m = MultiHeadAttention(d, h, bias=bias)
    fused = layout(m, d, bias)
    W, b = random_weights(d, bias, torch.float32)
    m.load_state_dict(state_dict(W, b, fused), strict=False)
    x = torch.randn(B, T, d, generator=g)
    for causal in (False, True):
        name = f"MultiHeadAttention({d}, {h}, bias={bias}) on x {(B, T, d)}, causal={causal}"
        out = m(x, causal=causal)
        checks.assert_tensor(out, name=name, shape=(B, T, d), dtype=torch.float32)
        checks.assert_close(out, loop_reference(x, W, b, h, causal), atol=1e-5, rtol=1e-4, name=name + " vs a loop over heads",
                            hint="Heads are blocks of d_k consecutive features; scale by sqrt(d_k); causal masks keys j > i; "
                                 "apply out_proj to the merged heads.")
        checks.assert_close(out, torch_reference(x, W, b, h, causal), atol=1e-5, rtol=1e-4,
                            name=name + " vs torch.nn.MultiheadAttention with the same weights")
    checks.assert_equal(probes.num_parameters(m), 4 * d * d + (4 * d if bias else 0),
                        name=f"number of parameters of MultiHeadAttention({d}, {h}, bias={bias})",
                        hint="Four d x d projections (Q, K, V, output), plus four bias vectors if bias=True.")

m = MultiHeadAttention(8, 2)
fused = layout(m, 8, True)
W, b = random_weights(8, True, torch.float32)
m.load_state_dict(state_dict(W, b, fused), strict=False)

# One module, several lengths in turn (a mask kept from an earlier call shows here), causal and not.
# 1100 is longer than the usual block sizes (512, 1024): T has no upper bound in the contract.
for B, T in [(2, 3), (1, 9), (3, 2), (2, 6), (1, 40), (1, 1100), (1, 9)]:
    for causal in (True, False):
        x = torch.randn(B, T, 8, generator=g)
        checks.assert_close(m(x, causal=causal), loop_reference(x, W, b, 2, causal), atol=1e-5, rtol=1e-4,
                            name=f"the same MultiHeadAttention(8, 2) on x {(B, T, 8)}, causal={causal} (lengths 3, 9, 2, 6, 40, 1100, 9 in turn)",
                            hint="Build the causal mask for the current length T at every call (or slice a mask made for the largest length).")

# The future does not leak under causal=True: changing the last token leaves earlier outputs unchanged.
x = torch.randn(2, 6, 8, generator=g)
x2 = x.clone()
x2[:, -1] = torch.randn(2, 8, generator=g) * 5
checks.assert_close(m(x2, causal=True)[:, :-1], m(x, causal=True)[:, :-1], atol=1e-5,
                    name="causal outputs of tokens 0..4 after changing token 5",
                    hint="With causal=True, position t must not see positions after t.")

# Gradients reach every parameter, with the right values.
m = MultiHeadAttention(12, 3)
fused = layout(m, 12, True)
m.double()
W, b = random_weights(12, True, torch.float64)
m.load_state_dict(state_dict(W, b, fused), strict=False)
x = torch.randn(2, 5, 12, generator=g, dtype=torch.float64)
grad_out = torch.randn(2, 5, 12, generator=g, dtype=torch.float64)
result = probes.gradients(m, x.clone().requires_grad_(), causal=True, grad_output=grad_out)
leaves = [w.clone().requires_grad_() for w in W] + [v.clone().requires_grad_() for v in b]
xr = x.clone().requires_grad_()
(loop_reference(xr, leaves[:4], leaves[4:], 3, True) * grad_out).sum().backward()
expected = state_dict([w.grad for w in leaves[:4]], [v.grad for v in leaves[4:]], fused)
for n, grad in expected.items():
    got = result["params"].get(n)
    checks.assert_true(got is not None, name=f"gradient of {n}", problem="no gradient reached this parameter.",
                       hint="Every projection must be used in the forward pass, through torch operations.")
    checks.assert_close(got, grad, atol=1e-9, rtol=1e-7, name=f"gradient of {n}")
checks.assert_close(result["inputs"][0], xr.grad, atol=1e-9, rtol=1e-7, name="gradient with respect to x")

print("MultiHeadAttention: hidden tests (behaviour) passed")
### END HIDDEN TESTS

# %% id="1d7f92d1" nbgrader={"grade": true, "grade_id": "test_MultiHeadAttention_hidden_edges", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for MultiHeadAttention run when your notebook is graded.
### BEGIN HIDDEN TESTS
import math

import torch
from utils import checks, probes

g = torch.Generator().manual_seed(5054)
NAMES = ("q_proj", "k_proj", "v_proj", "out_proj")


def layout(module, d, bias):
    params = probes.parameters(module)
    names = set(params)
    separate = {f"{n}.weight" for n in NAMES}
    fused = {"qkv_proj.weight", "out_proj.weight"}
    if bias:
        separate |= {f"{n}.bias" for n in NAMES}
        fused |= {"qkv_proj.bias", "out_proj.bias"}
    checks.assert_true(names in (separate, fused), name=f"parameters of MultiHeadAttention({d}, ..., bias={bias})",
                       problem=f"got {sorted(names)}.", hint="Use the names and shapes stated in the docstring.")
    return "qkv_proj.weight" in names


def random_weights(d, bias, dtype):
    W = [torch.randn(d, d, generator=g, dtype=dtype) / math.sqrt(d) for _ in range(4)]
    b = [torch.randn(d, generator=g, dtype=dtype) * 0.2 if bias else None for _ in range(4)]
    return W, b


def state_dict(W, b, fused):
    if fused:
        sd = {"qkv_proj.weight": torch.cat(W[:3]), "out_proj.weight": W[3]}
        if b[0] is not None:
            sd.update({"qkv_proj.bias": torch.cat(b[:3]), "out_proj.bias": b[3]})
        return sd
    sd = {f"{n}.weight": w for n, w in zip(NAMES, W)}
    if b[0] is not None:
        sd.update({f"{n}.bias": v for n, v in zip(NAMES, b)})
    return sd


def linear(x, w, bias):
    return x @ w.T + (bias if bias is not None else 0)


def loop_reference(x, W, b, h, causal):
    # One head at a time, with plain slicing: head i owns features i*d_k .. (i+1)*d_k - 1.
    T, d = x.shape[1], x.shape[2]
    d_k = d // h
    q, k, v = (linear(x, W[j], b[j]) for j in range(3))
    heads = []
    for i in range(h):
        cols = slice(i * d_k, (i + 1) * d_k)
        s = q[..., cols] @ k[..., cols].transpose(-2, -1) / math.sqrt(d_k)
        if causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
        heads.append(torch.softmax(s, dim=-1) @ v[..., cols])
    return linear(torch.cat(heads, dim=-1), W[3], b[3])


def torch_reference(x, W, b, h, causal):
    d = x.shape[-1]
    ref = torch.nn.MultiheadAttention(d, h, bias=b[0] is not None, batch_first=True).to(x.dtype)
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat(W[:3]))
        ref.out_proj.weight.copy_(W[3])
        if b[0] is not None:
            ref.in_proj_bias.copy_(torch.cat(b[:3]))
            ref.out_proj.bias.copy_(b[3])
        mask = torch.ones(x.shape[1], x.shape[1], dtype=torch.bool).triu(1) if causal else None
        return ref(x, x, x, attn_mask=mask, need_weights=False)[0]


# ValueError in the constructor, not later in forward and not another type.
for d, h in [(10, 4), (7, 2), (6, 4), (12, 5)]:
    checks.assert_raises(ValueError, MultiHeadAttention, d, h, name=f"MultiHeadAttention({d}, {h})",
                         hint="Raise ValueError in __init__ when d_model is not a multiple of n_head.")

# The defaults: bias=True in the constructor, causal=False in forward.
m = MultiHeadAttention(8, 4)
fused = layout(m, 8, True)
W, b = random_weights(8, True, torch.float32)
m.load_state_dict(state_dict(W, b, fused), strict=False)
x = torch.randn(2, 5, 8, generator=g)
checks.assert_close(m(x), loop_reference(x, W, b, 4, False), atol=1e-5, rtol=1e-4,
                    name="MultiHeadAttention(8, 4)(x) without the causal argument",
                    hint="causal defaults to False: every position sees every position.")

# A single token: attention has nothing to choose, the output is out_proj(v_proj(x)).
m = MultiHeadAttention(8, 2)
fused = layout(m, 8, True)
W, b = random_weights(8, True, torch.float32)
m.load_state_dict(state_dict(W, b, fused), strict=False)
x = torch.randn(3, 1, 8, generator=g)
checks.assert_close(m(x, causal=True), linear(linear(x, W[2], b[2]), W[3], b[3]), atol=1e-5,
                    name="MultiHeadAttention on a single token", hint="A lone token attends to itself with weight 1.")

# Every allowed score far below -1e4 (queries and keys point opposite ways, scores -44194): the future keys
# must still get weight 0, so a mask value of -1e4 is not enough; -inf (or the dtype's lowest value) is.
m = MultiHeadAttention(2, 1)
fused = layout(m, 2, True)
W = [torch.diag(torch.tensor([1.0, 0.0])), torch.diag(torch.tensor([-1.0, 0.0])), torch.diag(torch.tensor([0.0, 1.0])), torch.eye(2)]
b = [torch.zeros(2) for _ in range(4)]
m.load_state_dict(state_dict(W, b, fused), strict=False)
x = torch.tensor([[[250.0, 0.0], [250.0, 1.0], [250.0, 2.0], [250.0, 3.0]]])
checks.assert_close(m(x, causal=True), loop_reference(x, W, b, 1, True), atol=1e-4,
                    name="MultiHeadAttention(2, 1), causal, where every allowed score is about -44194",
                    hint="Mask the future with -inf (masked_fill(mask, float('-inf'))): a finite fill such as -1e4 is "
                         "larger than these scores, and the future keys then take all the weight.")

# float64 all the way through.
m = MultiHeadAttention(12, 4)
fused = layout(m, 12, True)
m.double()
W, b = random_weights(12, True, torch.float64)
m.load_state_dict(state_dict(W, b, fused), strict=False)
x = torch.randn(2, 5, 12, generator=g, dtype=torch.float64)
out = m(x, causal=True)
checks.assert_tensor(out, name="MultiHeadAttention in float64", shape=(2, 5, 12), dtype=torch.float64,
                     hint="Build masks and constants in x's dtype (or use masked_fill), so float64 stays float64.")
checks.assert_close(out, loop_reference(x, W, b, 4, True), atol=1e-10, rtol=1e-10, name="MultiHeadAttention in float64")

# x is left alone.
x = torch.randn(2, 4, 12, generator=g, dtype=torch.float64)
traced = probes.traced_call(m, x, causal=True)
checks.assert_close(traced.args_after[0], x, atol=0, rtol=0, name="MultiHeadAttention's input after the call",
                    hint="Do not modify x in place.")

# Half precision (float16 and bfloat16, as models run on a GPU): x's dtype is kept and the values hold. A mask
# value of -1e9 does not fit in float16, and a float32 mask added to half scores makes them float32.
for dtype, tol in [(torch.float16, 2e-2), (torch.bfloat16, 1e-1)]:
    m = MultiHeadAttention(12, 3)
    fused = layout(m, 12, True)
    W, b = random_weights(12, True, torch.float32)
    W, b = [w.to(dtype) for w in W], [v.to(dtype) for v in b]
    m.load_state_dict(state_dict(W, b, fused), strict=False)
    m.to(dtype)
    x = torch.randn(2, 5, 12, generator=g).to(dtype)
    name = f"MultiHeadAttention(12, 3) in {str(dtype).replace('torch.', '')}, causal=True"
    out = m(x, causal=True)
    checks.assert_tensor(out, name=name, shape=(2, 5, 12), dtype=dtype,
                         hint="Keep x's dtype: masked_fill with float('-inf') works in every floating dtype; a mask "
                              "value such as -1e9 overflows float16, and a float32 mask added to the scores makes them float32.")
    expected = loop_reference(x.double(), [w.double() for w in W], [v.double() for v in b], 3, True)
    checks.assert_close(out.double(), expected, atol=tol, rtol=tol, name=name + " (against float64 arithmetic)")

print("MultiHeadAttention: hidden tests (errors, defaults and edge cases) passed")
# On the device of x: the module and x on PyTorch's meta device (shapes, no values) stand in for a GPU. A mask
# made without device= is a CPU tensor meeting meta scores (on a GPU the forward pass would stop there); code
# that reads values cannot run on meta and is not judged here.
for causal in (True, False):
    seen = probes.make("utils.meta_device.module_output_device_on_meta", MultiHeadAttention(8, 2),
                       torch.randn(2, 5, 8, generator=g), causal=causal)
    checks.assert_kept_on_meta(seen,
                               name=f"MultiHeadAttention(8, 2) with its weights and x on another device than the CPU "
                                    f"(the meta device), causal={causal}",
                               hint="Make the causal mask on x.device (torch.ones(T, T, dtype=torch.bool, "
                                    "device=x.device)): with x on a GPU, a tensor made without device= is on the CPU.")
    # The same with the values kept (utils.fake_cuda: the weights and x labelled cuda:0), so an answer that reads
    # values (.item(), .tolist()) and makes its mask on the CPU is judged too.
    seen = probes.make("utils.fake_cuda.module_output_device_on_fake_cuda", MultiHeadAttention(8, 2),
                       torch.randn(2, 5, 8, generator=g), causal=causal)
    checks.assert_kept_on_fake_cuda(seen, name=f"MultiHeadAttention(8, 2) on a GPU (emulated, the values kept), causal={causal}",
                                    hint="Make the causal mask on x.device: with x on a GPU, a tensor made without "
                                         "device= is on the CPU.")
### END HIDDEN TESTS

# %% [markdown] id="d95abbae"
# Your module and PyTorch's `nn.MultiheadAttention` compute the same function once they hold the same
# weights. PyTorch keeps the three input projections fused in `in_proj_weight` (rows: queries, keys,
# values) and the output projection in `out_proj`, so copying is a `torch.cat`. The helper below loads
# the same four matrices into either layout of your module.

# %% id="713da074"
def load_attention_weights(module, W_q, W_k, W_v, W_o):
    # Put four (d, d) matrices into a MultiHeadAttention of either documented layout, biases zero.
    names = dict(module.named_parameters())
    with torch.no_grad():
        if "qkv_proj.weight" in names:
            names["qkv_proj.weight"].copy_(torch.cat([W_q, W_k, W_v]))
        else:
            for key, W in zip(["q_proj", "k_proj", "v_proj"], [W_q, W_k, W_v]):
                names[f"{key}.weight"].copy_(W)
        names["out_proj.weight"].copy_(W_o)
        for key, p in names.items():
            if key.endswith("bias"):
                p.zero_()


def pytorch_attention(W_q, W_k, W_v, W_o, n_head):
    d = W_q.shape[0]
    reference = nn.MultiheadAttention(d, n_head, batch_first=True)
    with torch.no_grad():
        reference.in_proj_weight.copy_(torch.cat([W_q, W_k, W_v]))
        reference.in_proj_bias.zero_()
        reference.out_proj.weight.copy_(W_o)
        reference.out_proj.bias.zero_()
    return reference


torch.manual_seed(0)
d_model, n_head = 16, 4
W_q, W_k, W_v, W_o = (torch.randn(d_model, d_model) / d_model ** 0.5 for _ in range(4))
mine = MultiHeadAttention(d_model, n_head)
load_attention_weights(mine, W_q, W_k, W_v, W_o)
theirs = pytorch_attention(W_q, W_k, W_v, W_o, n_head)

x = torch.randn(2, 10, d_model)
causal_mask = torch.ones(10, 10, dtype=torch.bool).triu(1)      # True = not allowed (a key in the future)
with torch.no_grad():
    for causal in (False, True):
        ours = mine(x, causal=causal)
        ref, _ = theirs(x, x, x, attn_mask=causal_mask if causal else None, need_weights=False)
        print(f"causal={causal!s:5}  max |ours - nn.MultiheadAttention| = {(ours - ref).abs().max().item():.2e}")


# %% [markdown] id="996130d3"
# ### What one head can and cannot output
#
# Each row of a head's attention weights comes out of a softmax: the weights $\alpha_{ij}$ are positive and sum
# to 1. So the head's output $o_i = \sum_j \alpha_{ij} v_j$ is a **convex combination** of the value vectors it
# may look at, and lies in their **convex hull** (for a causal head, the hull of $v_1, \dots, v_i$). Geometrically:
# attention can select one value (a weight near 1), average several, or interpolate between them, but it can
# never leave the hull: every coordinate of $o_i$ lies between the smallest and the largest value of that
# coordinate among the visible $v_j$, and $\lVert o_i \rVert \le \max_j \lVert v_j \rVert$ (a norm is convex). It
# cannot extrapolate, amplify, or produce a vector outside the hull (in particular outside the span) of the
# values it sees; that is left to $W_O$, the residual stream and the feed-forward layer. It can point in a
# direction no single value points to: $v_1 = (1, 0)$ and $v_2 = (0, 1)$ with weights $\tfrac12, \tfrac12$ give
# $(\tfrac12, \tfrac12)$, at $45^\circ$ to both; inside the hull is not the same as along one of the $v_j$.
# (The proof is two lines: each coordinate of $o_i$ is a weighted mean with
# non-negative weights summing to 1, so it lies between the minimum and the maximum; the norm bound is the
# triangle inequality, $\lVert \sum_j \alpha_{ij} v_j \rVert \le \sum_j \alpha_{ij} \lVert v_j \rVert$.)
#
# The cell below checks all three statements on the heads of your module, with random weights, causal
# masking and scores large enough that some weights are almost 0 or 1, then shows what breaks without the
# softmax.
#
# **Predict before you run.** The output of the whole layer, after $W_O$, is it still inside the hull of the
# values $v_j$?
#
# <details><summary>Answer</summary>
#
# No, and not even in any meaningful sense: $W_O$ maps the concatenated head outputs to a new space, and each
# head has its own weights $\alpha$. The convex-combination property belongs to each head, before $W_O$.
# The last line of the cell compares the lengths of the layer's outputs with those of the values: $W_O$ is free to stretch them.
# </details>

# %% id="34f5df5b"
def _projections(module):
    # The query, key and value projections of a MultiHeadAttention in either documented layout.
    params = dict(module.named_parameters())
    if "qkv_proj.weight" in params:
        W = params["qkv_proj.weight"].chunk(3)
        b = params["qkv_proj.bias"].chunk(3) if "qkv_proj.bias" in params else (None,) * 3
        return [lambda t, W=W_, b=b_: F.linear(t, W, b) for W_, b_ in zip(W, b)]
    return [module.q_proj, module.k_proj, module.v_proj]


# %% id="0a8d61a8" source_trailing_newlines=1
torch.manual_seed(5)
d_model, n_head, B, T = 16, 4, 3, 9
layer = MultiHeadAttention(d_model, n_head)
with torch.no_grad():
    for p in layer.parameters():
        p.mul_(4)                                              # sharper scores: weights near 0 and 1 occur
    x = torch.randn(B, T, d_model)
    q, k, v = (split_heads(proj(x), n_head) for proj in _projections(layer))
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_model // n_head)
    scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
    weights = scores.softmax(dim=-1)                          # (B, h, T, T)
    heads = weights @ v                                       # (B, h, T, d_k): one output per head and position

    visible = torch.ones(T, T, dtype=torch.bool).tril()       # causal: query i sees keys j <= i
    v_rows = v[:, :, None, :, :].expand(B, n_head, T, T, -1)  # v_rows[b, s, i, j] = v[b, s, j]
    lowest = v_rows.masked_fill(~visible[..., None], float("inf")).amin(dim=3)
    highest = v_rows.masked_fill(~visible[..., None], float("-inf")).amax(dim=3)
    largest_norm = v.norm(dim=-1)[:, :, None, :].masked_fill(~visible, 0).amax(dim=-1)

    print(f"weights: min {weights.min().item():.2e}, max {weights.max().item():.4f}, "
          f"rows sum to 1 within {(weights.sum(-1) - 1).abs().max().item():.1e}")
    inside = ((heads >= lowest - 1e-5) & (heads <= highest + 1e-5)).float().mean().item()
    print(f"head outputs inside the per-coordinate range of the visible values: {inside:.1%}")
    print(f"largest ||o_i|| / max ||v_j|| over visible j: {(heads.norm(dim=-1) / largest_norm).max().item():.4f}")
    assert (weights >= 0).all() and torch.allclose(weights.sum(-1), torch.ones(()), atol=1e-5)
    assert inside == 1.0 and (heads.norm(dim=-1) <= largest_norm + 1e-5).all()

    # Without the softmax (raw scaled scores as weights, future set to 0) nothing holds any more.
    raw = scores.masked_fill(~visible, 0) @ v
    outside = ((raw < lowest - 1e-5) | (raw > highest + 1e-5)).float().mean().item()
    print(f"without the softmax: {outside:.1%} of the coordinates leave the range, "
          f"||o_i|| up to {(raw.norm(dim=-1) / largest_norm).max().item():.1f} x the largest value")

    # After W_O the bound is gone: the output projection may stretch what the heads return.
    out = layer(x, causal=True)
    stretch = (out.norm(dim=-1) / largest_norm.amax(1)).max().item()
    print(f"layer output (after W_O): ||out_i|| up to {stretch:.2f} x the largest visible ||v_j||")
    head_ratio = (heads.norm(dim=-1) / largest_norm).max().item()
claims.claim(f"Every head output lies inside the range of its visible values and is at most {head_ratio:.4f} times the "
             f"longest; without the softmax {outside:.0%} of the coordinates leave the range, and after W_O the outputs "
             f"reach {stretch:.2f} times the longest value", holds=inside == 1.0 and head_ratio <= 1 + 1e-5
             and outside > 0.5 and stretch > 1)

# %% [markdown] id="78f1bc63"
# ### 2b. Four heads with four jobs
#
# Trained heads are learned, but the patterns they implement are simple enough to **write down**. Below,
# each token of *"&lt;s&gt; the function returns the frozen list ."* is a 64-dimensional vector made of readable
# features: a one-hot of the word, a one-hot of the position, a constant 1, and the word's **rarity**
# $\log(N / (\text{count} + 1))$ measured on the course's English corpus (the Python documentation). One
# attention layer with $h = 4$ heads of width $d_k = 16$ gets hand-set $W_Q$ and $W_K$, one block of
# 16 rows per head:
#
# * **head 1, previous token**: the query of position $i$ is the one-hot of position $i - 1$, the key of
#   position $j$ is the one-hot of $j$, so $q_i \cdot k_j$ is large only for $j = i - 1$;
# * **head 2, duplicate token**: query = (word one-hot, minus position one-hot), key = (word one-hot, position
#   one-hot), so the score is high for *the same word at another position*; tokens without a twin fall back on
#   `<s>` (a small constant bonus on its key), as real heads do with a "sink" token;
# * **head 3, delimiter**: every query is the same constant; keys of `<s>` and `.` are large, so everyone
#   looks at the sentence boundaries;
# * **head 4, rare word**: constant query, key = rarity, so everyone looks at the least frequent word
#   (score 10 for the rarest word, a sharper head than the others).
#
# The scale of the scores (about 5 after dividing by $\sqrt{d_k}$) sets how sharp the patterns are. No mask
# here: this is an encoder layer, as in BERT, where such heads were first catalogued. The weights go into
# your `MultiHeadAttention` and into `nn.MultiheadAttention`, which can return the per-head patterns
# (`average_attn_weights=False`).

# %% id="e2558070"
tokens = ["<s>", "the", "function", "returns", "the", "frozen", "list", "."]
vocab = sorted(set(tokens), key=tokens.index)                # <s>, the, function, returns, frozen, list, .
T, V = len(tokens), len(vocab)
d_model, n_head = 64, 4
d_k = d_model // n_head
WORD, POS, ONE, RARE = 0, V, V + T, V + T + 1               # where each feature group starts

words = re.findall(r"[a-z]+", corpus.python_docs().lower())
counts = Counter(words)
rarity = {w: math.log(len(words) / (counts[w] + 1)) for w in vocab}
rarity["<s>"] = rarity["."] = 0.0                            # boundaries are not words
print({w: counts[w] for w in vocab if w not in ("<s>", ".")}, f"among {len(words):,} words")

X = torch.zeros(1, T, d_model)
for t, w in enumerate(tokens):
    X[0, t, WORD + vocab.index(w)] = 1.0
    X[0, t, POS + t] = 1.0
    X[0, t, ONE] = 1.0
    X[0, t, RARE] = rarity[w] / max(rarity.values())

s = 5.0 * math.sqrt(d_k)                                     # score 5 after the 1/sqrt(d_k) scaling
W_q, W_k = torch.zeros(d_model, d_model), torch.zeros(d_model, d_model)
for i in range(T):                                           # head 1 (rows 0..15): previous token
    W_q[max(i - 1, 0), POS + i] = s                          # query of position i = s * one-hot(i - 1)
    W_k[i, POS + i] = 1.0                                    # key of position j = one-hot(j)
for v in range(V):                                           # head 2 (rows 16..31): same word, other position
    W_q[16 + v, WORD + v], W_k[16 + v, WORD + v] = s, 1.0
for i in range(T):
    W_q[16 + V + i, POS + i], W_k[16 + V + i, POS + i] = -s, 1.0
W_q[31, ONE], W_k[31, WORD + vocab.index("<s>")] = s, 0.5    # ... else fall back on <s>
W_q[32, ONE] = s                                             # head 3 (rows 32..47): delimiters
W_k[32, WORD + vocab.index("<s>")] = W_k[32, WORD + vocab.index(".")] = 1.0
W_q[48, ONE], W_k[48, RARE] = 2 * s, 1.0                     # head 4 (rows 48..63): the rarest word
W_v, W_o = torch.eye(d_model), torch.eye(d_model)

mine = MultiHeadAttention(d_model, n_head)
load_attention_weights(mine, W_q, W_k, W_v, W_o)
theirs = pytorch_attention(W_q, W_k, W_v, W_o, n_head)
with torch.no_grad():
    ref, per_head = theirs(X, X, X, need_weights=True, average_attn_weights=False)   # per_head: (1, h, T, T)
    print(f"max |ours - nn.MultiheadAttention| on the sentence = {(mine(X) - ref).abs().max().item():.2e}")

fig, axes = plt.subplots(2, 2, figsize=(11, 8.5))
titles = ["head 1: previous token", "head 2: duplicate token", "head 3: delimiters", "head 4: rare word"]
for i, ax in enumerate(axes.flat):
    plotting.attention_heatmap(per_head[0, i], tokens, title=titles[i], ax=ax)
fig.tight_layout()
plt.show()


# %% [markdown] id="3063ba47"
# Each row is one query's distribution over the keys. Head 1 is a shifted diagonal (the first token,
# with no predecessor, looks at itself). In head 2 the two *the*'s find each other and everything else
# rests on `<s>`. Head 3 splits attention between the two boundaries, and head 4 sends every query to the
# rarest word. One head could not do all four: its single softmax per query would have to
# choose. Real heads are messier, a blend of such patterns learned by gradient descent, but the
# interpretability literature finds exactly these shapes in trained models.

# %% [markdown] id="69fab0de"
# ### A guided experiment: probing what a head does
#
# Here we *know* what each head was built to do. For a trained model one has to find out, and the usual design
# (as in the studies of BERT's heads) has four parts:
#
# 1. **A hypothesis per phenomenon, stated as a score**: the attention mass a query puts on the key the
#    phenomenon singles out. Previous token: the mass on position $i-1$. Duplicate token: the mass on the other
#    occurrences of the query's own word (only for queries that have one). Delimiter: the mass on `<s>` and `.`.
#    Rare word: the mass on the rarest word of the sentence.
# 2. **Controlled inputs**: many sentences generated so that the phenomenon varies (words repeat or not, the
#    rare word moves), not one hand-picked example.
# 3. **A baseline**: the same score for attention spread uniformly over the visible keys, the level a head
#    reaches by chance.
# 4. **A conclusion per head**: a head is specialised for a phenomenon when its score is far above the baseline
#    and above the other heads'. (Attention weights show where a head looks, not that the model uses what it
#    finds; a study of a trained model confirms with an **ablation**: zero that head's output and measure the loss
#    on sentences where the phenomenon matters, against sentences where it does not.)
#
# The cell below runs this design on the four hand-set heads with 300 random sentences of the same form, and
# checks that it recovers the job of each head.
#
# **Predict before you run.** The delimiter head looks at `<s>` and `.`: what does it score on the
# *previous-token* probe, compared with the uniform baseline? And which head scores highest on the delimiter probe
# besides head 3?
#
# <details><summary>Answer</summary>
#
# Below the baseline: a query whose previous token is not a delimiter gets almost nothing from head 3 there,
# while uniform attention spreads some mass on every key, the previous one included. Besides head 3, the
# duplicate-token head scores highest on the delimiter probe, above the baseline: it falls back on `<s>`, the sink,
# whenever a word has no twin. A probe score alone is not a job description, which is why the design compares
# each head's score with the other heads' and with the baseline.
# </details> For a linguistic phenomenon such as subject-verb agreement the
# design is the same, with minimal pairs as inputs (*the key to the cabinets **is*** / *the keys to the cabinet
# **are***) and the mass from the verb on its subject as the score.

# %% id="6ff2c8df"
def sentence_features(words):
    # The readable 64-dimensional features of section 2b for any sentence of T = 8 tokens.
    X = torch.zeros(1, T, d_model)
    for t, w in enumerate(words):
        X[0, t, WORD + vocab.index(w)] = 1.0
        X[0, t, POS + t] = 1.0
        X[0, t, ONE] = 1.0
        X[0, t, RARE] = rarity[w] / max(rarity.values())
    return X


def probe_scores(A, words):
    # A: (h, T, T) attention weights of one sentence. Returns {probe: per-head score, a tensor (h,)}.
    same = torch.tensor([[words[i] == words[j] and i != j for j in range(T)] for i in range(T)])
    has_twin = same.any(dim=1)
    rarest = max(rarity[w] for w in words)
    return {
        "previous token": torch.stack([A[:, i, i - 1] for i in range(1, T)], dim=1).mean(dim=1),
        "duplicate token": (A * same).sum(dim=-1)[:, has_twin].mean(dim=1) if has_twin.any() else None,
        "delimiter": A[:, :, [t for t, w in enumerate(words) if w in ("<s>", ".")]].sum(dim=-1).mean(dim=1),
        "rare word": A[:, :, [t for t, w in enumerate(words) if rarity[w] == rarest]].sum(dim=-1).mean(dim=1),
    }


g = torch.Generator().manual_seed(9)
middle = [w for w in vocab if w not in ("<s>", ".")]
totals = {name: [] for name in ["previous token", "duplicate token", "delimiter", "rare word"]}
chance = {name: [] for name in totals}
uniform = torch.full((1, T, T), 1.0 / T)                       # the baseline: no preference at all
sentences = [["<s>"] + [middle[int(j)] for j in torch.randint(len(middle), (T - 2,), generator=g)] + ["."]
             for _ in range(300)]
X = torch.cat([sentence_features(words) for words in sentences])                   # (300, T, d_model)
with torch.no_grad():
    _, A = theirs(X, X, X, need_weights=True, average_attn_weights=False)          # (300, h, T, T), one call
for words, weights in zip(sentences, A):
    for name, score in probe_scores(weights, words).items():
        if score is not None:
            totals[name].append(score)
            chance[name].append(probe_scores(uniform, words)[name])

table = torch.stack([torch.stack(totals[name]).mean(dim=0) for name in totals], dim=1)    # (heads, probes)
print(f"{'':26}" + "".join(f"{name:>17}" for name in totals))
for s, title in enumerate(titles):
    print(f"{title:26}" + "".join(f"{table[s, p].item():17.2f}" for p in range(len(totals))))
print(f"{'uniform attention (chance)':26}" + "".join(f"{torch.stack(chance[n]).mean().item():17.2f}" for n in totals))
best = table.argmax(dim=1).tolist()
print("\nthe probe each head scores highest on:", {titles[s]: list(totals)[p] for s, p in enumerate(best)})
baseline = torch.tensor([torch.stack(chance[n]).mean().item() for n in totals])
own = table.diagonal()
claims.claim(f"Each head scores highest on the probe of its own job ({', '.join(f'{v:.2f}' for v in own.tolist())}), "
             f"at least {(own / baseline).min().item():.1f} times the uniform baseline",
             holds=best == [0, 1, 2, 3] and bool((own > 3 * baseline).all()))
others = [s for s in range(len(titles)) if s != 2]
runner_up = max(others, key=lambda s: table[s, 2].item())
claims.claim(f"The delimiter head scores {table[2, 0].item():.2f} on the previous-token probe, below the baseline "
             f"{baseline[0].item():.2f}; besides it, {titles[runner_up]} scores highest on the delimiter probe "
             f"({table[runner_up, 2].item():.2f} against {baseline[2].item():.2f})",
             holds=table[2, 0] < baseline[0] and runner_up == 1 and table[1, 2] > baseline[2])


# %% [markdown] id="b402bf74"
# ## 3. Counting parameters
#
# Where do a transformer's parameters live? Every piece is a matrix or a vector whose size follows from
# $d_\text{model}$ (written $d$ below), $d_\text{ff}$, $|V|$ and the context length, so the count is
# arithmetic, and worth being able to do in your head.
#
# **Attention.** $W_Q, W_K, W_V, W_O$ are each $d \times d$: $4d^2$ weights, plus $4d$ biases if the projections
# have them. Per head, the input projections are $3 \cdot d \cdot d_k = 3d^2/h$, and $h$ heads give back
# $3d^2$: **the number of heads does not change the count**, it only decides how the same $d \times d$
# matrices are cut into blocks. Some texts give $3d^2$ for an attention layer: that counts $W_Q, W_K, W_V$
# only, which is right for the single-head attention they start from (its output is used directly). Multi-head
# attention adds the output projection $W_O$, another $d^2$, and every transformer layer has one, so
# the per-layer figure is $4d^2$. For $d = 6, h = 3$: $3 \cdot 36 = 108$ input weights (36 per head), plus
# $36$ for $W_O$, $144$ in all, and $168$ with the four bias vectors of length 6.
#
# **Feed-forward network.** $d \to d_\text{ff} \to d$: two matrices, $2\,d\,d_\text{ff}$ weights, plus biases of
# length $d_\text{ff}$ (first layer) and $d$ (second). With $d_\text{ff} = 4d$ that is $8d^2$: twice the
# attention.
#
# **LayerNorm.** A scale $\gamma$ and a shift $\beta$ per feature: $2d$. A block has two.
#
# **Embeddings.** The token table is $|V| \times d$. Learned position embeddings add $T_\text{max} \times d$
# (sinusoidal and rotary encodings add nothing). The output layer that turns the final vector into $|V|$
# logits is another $d \times |V|$ matrix (usually without bias), unless it is **tied** to the token table,
# the same tensor used twice, counted once.

# %% [markdown] id="dd5289cf"
# ### Exercise 3: parameter counts (1 + 2 + 1 points)
#
# *Points: 1 visible, 2 hidden (behaviour: against PyTorch modules and full-size shapes), 1 hidden (the signatures' defaults and one-feature sizes).*
#
# Four functions, each one line of arithmetic that returns a Python `int`. The test cells compare them with
# the parameter counts of real PyTorch modules.

# %% id="6b18633e" nbgrader={"grade": false, "grade_id": "count_parameters", "locked": false, "schema_version": 3, "solution": true, "task": false}
def attention_params(d_model, n_head, bias=True):
    """Parameters of one multi-head attention layer (Q, K, V and output projections, d_model x d_model).

    Args: d_model (int), n_head (int, divides d_model), bias (bool: every projection has a bias).
    Returns: int, the same as sum(p.numel() for p in nn.MultiheadAttention(d_model, n_head, bias=bias).parameters()).
    """
    ### BEGIN SOLUTION
    # h heads of 3 * d * (d / h) input weights = 3 d^2 whatever h is, plus the d x d output projection.
    return 4 * d_model * d_model + (4 * d_model if bias else 0)
    ### END SOLUTION


def ffn_params(d_model, d_ff, bias=True):
    """Parameters of the position-wise feed-forward network Linear(d_model, d_ff) -> Linear(d_ff, d_model).

    Returns: int, 2 * d_model * d_ff weights plus (if bias) the biases of both layers.
    """
    ### BEGIN SOLUTION
    return 2 * d_model * d_ff + ((d_ff + d_model) if bias else 0)
    ### END SOLUTION


def layernorm_params(d_model):
    """Parameters of one nn.LayerNorm(d_model): a scale and a shift per feature. Returns an int."""
    ### BEGIN SOLUTION
    return 2 * d_model
    ### END SOLUTION


def embedding_params(vocab_size, d_model, context_length=0, tied=True):
    """Parameters of the token embedding, learned position embedding and output (unembedding) layer.

    Args:
        vocab_size, d_model: ints. context_length: number of learned positions (0 for sinusoidal or
        rotary encodings, which have no parameters). tied: the output layer (d_model -> vocab_size,
        no bias) reuses the token-embedding matrix; if False it is a separate matrix.
    Returns: int.
    """
    ### BEGIN SOLUTION
    token_table = vocab_size * d_model
    output_layer = 0 if tied else vocab_size * d_model     # a tied matrix is one tensor, counted once
    return token_table + output_layer + context_length * d_model
    ### END SOLUTION


# %% id="4c1f24cf" nbgrader={"grade": true, "grade_id": "test_count_parameters", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
from utils import checks

# The worked example: d_model = 6, h = 3.
checks.assert_equal(attention_params(6, 3, bias=False), 144, name="attention_params(6, 3, bias=False)",
                    hint="W_Q, W_K, W_V and W_O are each 6 x 6: 4 * 36. Don't forget the output projection.")
checks.assert_equal(attention_params(6, 3), 168, name="attention_params(6, 3)",
                    hint="Each of the four projections has a bias vector of length d_model: 144 + 4 * 6.")
checks.assert_equal(attention_params(6, 1), attention_params(6, 3), name="attention_params(6, 1) vs attention_params(6, 3)",
                    hint="The number of heads only cuts the same d x d matrices into blocks.")
checks.assert_equal(ffn_params(6, 24), 2 * 6 * 24 + 24 + 6, name="ffn_params(6, 24)",
                    hint="Two weight matrices (6 x 24 and 24 x 6), a bias of length 24 and one of length 6.")
checks.assert_equal(ffn_params(6, 24, bias=False), 288, name="ffn_params(6, 24, bias=False)")
checks.assert_equal(layernorm_params(6), 12, name="layernorm_params(6)", hint="A gain and a bias per feature.")
checks.assert_equal(embedding_params(10, 6), 60, name="embedding_params(10, 6) (tied, no learned positions)")
checks.assert_equal(embedding_params(10, 6, tied=False), 120, name="embedding_params(10, 6, tied=False)",
                    hint="Untied, the output layer is a second 10 x 6 matrix.")
checks.assert_equal(embedding_params(10, 6, context_length=4), 84, name="embedding_params(10, 6, context_length=4)",
                    hint="Learned positions add context_length x d_model.")
print("parameter counts: visible tests passed")

# %% id="9909e501" nbgrader={"grade": true, "grade_id": "test_count_parameters_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for count_parameters run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks


def count(module):
    return sum(p.numel() for p in module.parameters())     # shared (tied) tensors are counted once


class TinyLM(torch.nn.Module):
    def __init__(self, vocab_size, d_model, context_length, tied):
        super().__init__()
        self.tok = torch.nn.Embedding(vocab_size, d_model)
        self.pos = torch.nn.Embedding(context_length, d_model) if context_length else None
        self.head = torch.nn.Linear(d_model, vocab_size, bias=False)
        if tied:
            self.head.weight = self.tok.weight


for d, h in [(20, 4), (36, 6), (48, 1), (30, 30)]:
    for bias in (True, False):
        checks.assert_equal(attention_params(d, h, bias=bias), count(torch.nn.MultiheadAttention(d, h, bias=bias)),
                            name=f"attention_params({d}, {h}, bias={bias}) vs nn.MultiheadAttention",
                            hint="4 d^2 weights (Q, K, V and the output projection), 4 d biases; h does not enter.")
for d, d_ff in [(20, 80), (36, 50), (7, 3)]:
    for bias in (True, False):
        ffn = torch.nn.Sequential(torch.nn.Linear(d, d_ff, bias=bias), torch.nn.GELU(), torch.nn.Linear(d_ff, d, bias=bias))
        checks.assert_equal(ffn_params(d, d_ff, bias=bias), count(ffn), name=f"ffn_params({d}, {d_ff}, bias={bias}) vs two nn.Linear",
                            hint="2 d d_ff weights; biases of length d_ff (first layer) and d (second).")
for d in (7, 300):
    checks.assert_equal(layernorm_params(d), count(torch.nn.LayerNorm(d)), name=f"layernorm_params({d}) vs nn.LayerNorm")
for V, d, ctx, tied in [(50, 8, 0, True), (50, 8, 0, False), (37, 12, 16, True), (37, 12, 16, False), (5, 3, 11, True)]:
    checks.assert_equal(embedding_params(V, d, context_length=ctx, tied=tied), count(TinyLM(V, d, ctx, tied)),
                        name=f"embedding_params({V}, {d}, context_length={ctx}, tied={tied}) vs nn.Embedding + output layer",
                        hint="Token table V d; learned positions context_length d; an untied output layer another V d.")
# Full-size shapes, in closed form: GPT-2 small and a 4096-wide model.
checks.assert_equal(embedding_params(50257, 768, context_length=1024), 39383808, name="embedding_params for GPT-2 small")
checks.assert_equal(attention_params(4096, 32, bias=False), 67108864, name="attention_params(4096, 32, bias=False)")
checks.assert_equal(ffn_params(4096, 11008, bias=False), 90177536, name="ffn_params(4096, 11008, bias=False)")
print("parameter counts: hidden tests (behaviour) passed")
### END HIDDEN TESTS

# %% id="98c94864" nbgrader={"grade": true, "grade_id": "test_count_parameters_hidden_defaults", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for count_parameters run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks


def count(module):
    return sum(tensor.numel() for tensor in module.parameters())     # as PyTorch counts: shared tensors once


# Every function called without its optional arguments: bias=True, context_length=0, tied=True.
for d, h in [(24, 3), (10, 10)]:
    checks.assert_equal(attention_params(d, h), count(torch.nn.MultiheadAttention(d, h)),
                        name=f"attention_params({d}, {h}) with the default bias", hint="bias defaults to True.")
for d, d_ff in [(24, 96), (5, 2)]:
    ffn = torch.nn.Sequential(torch.nn.Linear(d, d_ff), torch.nn.ReLU(), torch.nn.Linear(d_ff, d))
    checks.assert_equal(ffn_params(d, d_ff), count(ffn), name=f"ffn_params({d}, {d_ff}) with the default bias",
                        hint="bias defaults to True: biases of length d_ff and d_model.")
checks.assert_equal(embedding_params(301, 7), 301 * 7, name="embedding_params(301, 7) with the defaults",
                    hint="Defaults: no learned positions (context_length=0) and a tied output layer (counted once).")
checks.assert_equal(embedding_params(301, 7, context_length=0, tied=True), 301 * 7,
                    name="embedding_params(301, 7, context_length=0, tied=True)")
# Degenerate but legal sizes: one feature, one head.
checks.assert_equal(attention_params(1, 1), 8, name="attention_params(1, 1)")
checks.assert_equal(layernorm_params(1), 2, name="layernorm_params(1)")
checks.assert_equal(ffn_params(1, 1, bias=False), 2, name="ffn_params(1, 1, bias=False)")
print("parameter counts: hidden tests (defaults and edge cases) passed")
### END HIDDEN TESTS

# %% [markdown] id="75ea77e5"
# Each function against the real PyTorch module it describes, counted the way PyTorch counts:
# `sum(p.numel() for p in module.parameters())`. The embedding check ties the output layer to the token
# table by assigning the same `Parameter` to both; `.parameters()` yields a shared tensor once.

# %% id="20414717"
def n_params(module):
    return sum(p.numel() for p in module.parameters())


class TokenAndOutput(nn.Module):
    # Token embedding, optional learned positions, and an output layer, tied or not.
    def __init__(self, vocab_size, d_model, context_length=0, tied=True):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(context_length, d_model) if context_length else None
        self.unembed = nn.Linear(d_model, vocab_size, bias=False)
        if tied:
            self.unembed.weight = self.tok.weight                  # one tensor, used twice


d, h, d_ff, V = 64, 4, 256, 1000
rows = [
    ("attention, biases", attention_params(d, h), nn.MultiheadAttention(d, h)),
    ("attention, no biases", attention_params(d, h, bias=False), nn.MultiheadAttention(d, h, bias=False)),
    ("FFN", ffn_params(d, d_ff), nn.Sequential(nn.Linear(d, d_ff), nn.ReLU(), nn.Linear(d_ff, d))),
    ("LayerNorm", layernorm_params(d), nn.LayerNorm(d)),
    ("embeddings, tied", embedding_params(V, d), TokenAndOutput(V, d)),
    ("embeddings, untied", embedding_params(V, d, tied=False), TokenAndOutput(V, d, tied=False)),
    ("embeddings + 128 learned positions", embedding_params(V, d, 128), TokenAndOutput(V, d, 128)),
]
print(f"d_model={d}, h={h}, d_ff={d_ff}, |V|={V}")
print(f"{'component':36}{'formula':>10}{'module':>10}")
for label, formula, module in rows:
    print(f"{label:36}{formula:>10,}{n_params(module):>10,}  {'ok' if formula == n_params(module) else 'MISMATCH'}")

# %% [markdown] id="5c818a16"
# ### The numbers at full size
#
# At $d_\text{model} = 512$, $h = 8$ (biases ignored), one attention layer holds $4 \cdot 512^2$ parameters,
# and a 12-layer stack twelve times as many. Then the classic 6-layer configuration: $d_\text{model} = 512$,
# $h = 8$, $d_\text{ff} = 2048$, $|V| = 32{,}000$, sinusoidal positions (no parameters), output layer tied to the
# token embedding, biases included. PyTorch's own `nn.TransformerEncoderLayer(512, 8, 2048)` (one attention,
# two linear layers, two LayerNorms) confirms the per-layer total; it is built on the `meta` device, which
# records shapes without allocating memory.

# %% id="9b1a142f"
d, h = 512, 8
per_layer = attention_params(d, h, bias=False)
print(f"attention, d_model=512, h=8, no biases: 4 * 512^2 = {per_layer:,} per layer;  12 layers: {12 * per_layer:,}")
print(f"   (Q, K, V only, the 3 d^2 of single-head texts: {3 * d * d:,}; the output projection adds {d * d:,})")

N, d, h, d_ff, V = 6, 512, 8, 2048, 32_000
parts = {
    "embedding (tied with the output layer)": embedding_params(V, d, tied=True),
    "attention per layer": attention_params(d, h),
    "FFN per layer": ffn_params(d, d_ff),
    "LayerNorm per layer (two of them)": 2 * layernorm_params(d),
}
layer = parts["attention per layer"] + parts["FFN per layer"] + parts["LayerNorm per layer (two of them)"]
total = parts["embedding (tied with the output layer)"] + N * layer
print(f"\n{N} layers, d_model={d}, h={h}, d_ff={d_ff}, |V|={V:,}, tied embeddings, biases included:")
for label, value in parts.items():
    print(f"  {label:42}{value:>13,}")
print(f"  {'one layer':42}{layer:>13,}")
print(f"  {'6 layers':42}{N * layer:>13,}")
print(f"  {'grand total':42}{total:>13,}   ({total / 1e6:.1f} M)")
reference_layer = nn.TransformerEncoderLayer(d, h, d_ff, device="meta")
print(f"  nn.TransformerEncoderLayer(512, 8, 2048) has {n_params(reference_layer):,} parameters")
print(f"  share of the 6 layers: attention {parts['attention per layer'] / layer:.1%}, FFN {parts['FFN per layer'] / layer:.1%}")

# %% [markdown] id="871b086e"
# About 35.3 million parameters, 16.4 million of them in the embedding table. Within a layer the FFN holds
# two thirds and attention one third, LayerNorm almost nothing. (The original translation transformer also
# had a 6-layer decoder, whose layers carry a second, cross-attention sublayer, so its total is larger; a
# pre-LN model adds one final LayerNorm, 1,024 more.)
#
# **Predict before you run.** With $d_\text{model} = 512$ fixed, how does the parameter count of an attention
# layer change from $h = 1$ to $h = 16$?
#
# <details><summary>Answer</summary>
#
# It does not change. With more heads each head is narrower ($d_k = 512/h$), and the $h$ blocks of
# $512 \times d_k$ still tile the same $512 \times 512$ matrices. What changes with $h$ is the number of
# attention patterns (and the memory to store them, section 4), not the parameters.
# </details>

# %% id="3244e4ed"
print(f"{'h':>3}{'d_k':>6}{'formula (biases)':>18}{'nn.MultiheadAttention':>23}{'no biases':>12}")
counted = set()
for h in [1, 2, 4, 8, 16]:
    module = nn.MultiheadAttention(512, h, device="meta")
    counted.add(n_params(module))
    print(f"{h:>3}{512 // h:>6}{attention_params(512, h):>18,}{n_params(module):>23,}{attention_params(512, h, bias=False):>12,}")
claims.claim(f"nn.MultiheadAttention(512, h) holds {counted.pop():,} parameters for every h from 1 to 16",
             holds=len(counted) == 0 and all(attention_params(512, h) == attention_params(512, 1) for h in [1, 2, 4, 8, 16]))


# %% [markdown] id="7022f34d"
# ## 4. What attention costs as sequences grow
#
# Per layer and per sequence of length $T$, with $h$ heads of width $d_k = d/h$ (multiply-adds, constants kept):
#
# * the four projections: $4\,T\,d^2$, **linear** in $T$;
# * the scores $Q_iK_i^\top$ of all heads: $h \cdot T^2 d_k = T^2 d$, and the weighted sums $A_iV_i$ another
#   $T^2 d$: together $2\,T^2 d$, **quadratic** in $T$. So the time of attention is $O(T^2 d)$;
# * memory: the attention matrices, $h$ of them, $T \times T$ each: $h\,T^2$ numbers, $O(T^2 h)$ space, against
#   $T\,d$ numbers for one activation of the sequence.
#
# Divide the two time terms by $d$: the comparison is $T^2$ against $d\,T$, and $T^2$ overtakes $d\,T$ exactly
# when $T > d$. With the constants above the attention core equals the projections at $T = 2d$; for memory,
# $hT^2$ overtakes $Td$ already at $T = d/h = d_k$. (Some texts give $T = d/h$ as "the" crossover; that is
# the crossover for memory, and for the FLOPs of one head against one head's share of the projections, not for
# the whole layer's compute.) The functions below do the arithmetic for a 4096-wide model with 32 heads,
# the shape of a 7-billion-parameter model, at $T = 4096$ in fp16 (2 bytes per number).
#
# **Predict before you run.** For that model at $T = 4096$: how many bytes do one layer's attention matrices take
# for one sequence, and is the attention core's time already larger than the projections'?
#
# <details><summary>Answer</summary>
#
# $h\,T^2 \cdot 2 = 32 \cdot 4096^2 \cdot 2 = 2^{30}$ bytes, 1 GiB per layer and sequence, where one activation of
# the sequence takes $T d \cdot 2$ bytes, 32 MiB. The time is not: at $T = d$ the core's $2T^2d$ is half the
# projections' $4Td^2$, and it catches up only at $T = 2d$. The cell prints both.
# </details>

# %% id="5f6c93ad"
def attention_matrix_bytes(T, n_head, bytes_per_value=2):
    # All h attention matrices (T x T each) of one layer, for one sequence.
    return n_head * T * T * bytes_per_value


def attention_core_macs(T, d_model):
    # Q K^T and A V over all heads: h * T^2 * d_k each, i.e. T^2 * d_model each.
    return 2 * T * T * d_model


def projection_macs(T, d_model):
    # Q, K, V and output projections: 4 * T * d_model^2.
    return 4 * T * d_model * d_model


def crossover_length(quadratic, linear, T_max=1 << 20):
    # The first T at which quadratic(T) > linear(T) (both increasing in T).
    low, high = 1, T_max
    while low < high:
        mid = (low + high) // 2
        if quadratic(mid) > linear(mid):
            high = mid
        else:
            low = mid + 1
    return low


T, d, h = 4096, 4096, 32
size = attention_matrix_bytes(T, h)
print(f"T={T}, d_model={d}, h={h}, fp16: {h} x {T}^2 x 2 bytes = {size:,} bytes"
      f" = {size / 1e9:.2f} GB ({size / 2**30:.2f} GiB) per layer, per sequence")
print(f"   x 32 layers = {32 * size / 1e9:.1f} GB; x 32 layers x batch 8 = {8 * 32 * size / 1e9:.0f} GB "
      f"(why fused kernels such as FlashAttention never store them)")
print(f"time per layer: attention core 2 T^2 d = {attention_core_macs(T, d):.3g} multiply-adds, "
      f"projections 4 T d^2 = {projection_macs(T, d):.3g}")

first = crossover_length(lambda t: t * t, lambda t: d * t)
print(f"\nT^2 > d*T first at T = {first:,}: the terms are equal at T = d = {first - 1:,}")
print(f"with constants, 2 T^2 d > 4 T d^2 first at T = {crossover_length(lambda t: attention_core_macs(t, d), lambda t: projection_macs(t, d)):,}")
print(f"and against the projections plus the FFN (8 T d^2 more), 2 T^2 d > 12 T d^2 first at T = "
      f"{crossover_length(lambda t: attention_core_macs(t, d), lambda t: 3 * projection_macs(t, d)):,}")
print(f"memory, h T^2 > T d first at T = {crossover_length(lambda t: h * t * t, lambda t: t * d):,}  (d/h = d_k = {d // h})")
for T_ in (512, 4096, 32768, 131072):
    ratio = attention_core_macs(T_, d) / projection_macs(T_, d)
    print(f"   T = {T_:>7,}: attention core / projections = {ratio:6.2f}, "
          f"attention matrices {attention_matrix_bytes(T_, h) / 1e9:8.2f} GB per layer")

# %% id="c13e1331"
lengths = torch.logspace(6, 17, 100, base=2)            # T from 64 to 131,072
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4))
ax1.loglog(lengths, lengths ** 2, label=r"$T^2$  (attention scores, per unit of $d$)")
ax1.loglog(lengths, d * lengths, label=r"$d\,T$  (projections, per unit of $d$)")
ax1.axvline(d, color="gray", linestyle="--")
ax1.annotate(f"T = d = {d}", (d, 1e5), xytext=(6, 0), textcoords="offset points", color="gray")
ax1.set_xlabel("sequence length T")
ax1.set_ylabel("multiply-adds / d")
ax1.set_title(f"Quadratic against linear, d = {d}")
ax1.legend()
ax2.loglog(lengths, [attention_matrix_bytes(t, h) / 1e9 for t in lengths.tolist()], label=f"h = {h} attention matrices, fp16")
ax2.loglog(lengths, lengths * d * 2 / 1e9, label="one (T, d) activation, fp16")
ax2.axvline(d // h, color="gray", linestyle="--")
ax2.annotate(f"T = d/h = {d // h}", (d // h, 1e-2), xytext=(6, 0), textcoords="offset points", color="gray")
ax2.set_xlabel("sequence length T")
ax2.set_ylabel("GB per layer, per sequence")
ax2.set_title("Memory")
ax2.legend()
fig.tight_layout()
plt.show()

# %% [markdown] id="dacafa64"
# Below a few thousand tokens, a layer's time goes mostly into its matrix multiplications with weights
# (the projections here, and the FFN, twice as big again: $8Td^2$ more). With the constants kept, the attention
# core $2T^2d$ overtakes the projections alone ($4Td^2$) at $T = 2d$, and the projections plus the FFN
# ($12Td^2$) only at $T = 6d$ (printed above for this $d = 4096$); past that the $T^2$ term takes over and keeps
# growing. Memory turns quadratic much earlier: storing the attention probabilities of all heads costs more than
# the activations as soon as $T > d_k$, which is why long-context implementations compute attention in tiles
# and never materialise the $T \times T$ matrices, and why so much research goes into sparse, linear and
# sliding-window attention.
#
# ## Summary
#
# * One head gives each query one distribution over the context: one notion of relevance. $h$ heads of
#   width $d_k = d_\text{model}/h$ look for $h$ different things at the same cost, and $W_O$ mixes their answers.
# * Splitting heads is `(B, T, d) → (B, T, h, d_k) → (B, h, T, d_k)`; a single `view` to `(B, h, T, d_k)`
#   mixes heads and tokens. Merging undoes the steps in reverse order and must copy (`reshape`) after the transpose.
# * Each head's output is a convex combination of the values it sees: inside their hull, never longer than
#   the longest of them; only $W_O$, the residual and the FFN leave it. A probe measures a head's attention mass on
#   the key a phenomenon singles out, over many generated inputs, against chance.
# * A batched implementation equals the loop over heads and PyTorch's `nn.MultiheadAttention`, whose
#   `in_proj_weight` is $W_Q, W_K, W_V$ stacked. The scale is $\sqrt{d_k}$.
# * An attention layer has $4d^2$ weights (+ $4d$ biases) whatever $h$ is: $3d^2$ for Q, K, V, and $d^2$ for the
#   output projection that single-head presentations leave out. At $d = 512$: 1,048,576 per layer, 12,582,912
#   for 12 layers. The FFN has $2\,d\,d_\text{ff}$, LayerNorm $2d$; the 6-layer $d = 512$ model with a tied
#   32,000-token vocabulary has about 35.3 M parameters, 16.4 M of them in the embedding.
# * Attention time is $O(T^2 d)$ and its memory $O(T^2 h)$: at $T = d_\text{model} = 4096$, $h = 32$, the fp16 attention
#   matrices alone take 1.07 GB per layer per sequence. The quadratic term overtakes the linear one at $T = d$
#   (compute) and at $T = d/h$ (memory).
#
# Next: attention as written here is blind to order: shuffle the tokens and the outputs shuffle with them.
# Notebook 06 gives the model positions.
