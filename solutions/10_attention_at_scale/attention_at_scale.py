# ---
# jupyter:
#   course:
#     cpu_budget_seconds: 90
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

# %% [markdown] id="nb10-000"
# # 10 · Attention at scale: online softmax, tiles, the KV cache, and what training costs
#
# Everything so far computed attention the obvious way: form the score matrix $S = QK^\top/\sqrt{d}$,
# take a softmax along each row, multiply by $V$. That is correct, and for the short sequences of the
# earlier notebooks it is fine. This notebook is about what happens when sequences get long and models
# get big, and about the three ideas that every serious implementation uses:
#
# 1. **The $T \times T$ matrix.** Naive attention stores $S$ and $\operatorname{softmax}(S)$: memory that
#    grows with the *square* of the sequence length. We measure it.
# 2. **The online softmax** (exercise 1): a softmax computed block by block, with a running maximum and
#    a running sum, that never sees the whole row at once.
# 3. **Tiled attention** (exercise 2), the idea of FlashAttention: the same output as
#    `F.scaled_dot_product_attention`, computed tile by tile, with extra memory that grows only
#    linearly in $T$.
# 4. **The KV cache** (exercises 3 and 4): generating one token at a time without recomputing the
#    keys and values of everything before it.
# 5. **What training costs** (exercise 5): FLOPs per token, memory for weights, gradients and AdamW's
#    state, and the fraction of the machine a run actually uses (MFU).
#
# The notebook stands alone: the small GPT it needs is `utils.tiny_gpt.TinyGPT`, built from PyTorch's
# own parts, and the memory tracer is `utils.memory.PeakTensorMemory`.
#
# **Time.** The whole notebook takes about 15 CPU seconds on a 2-core laptop (12 to 15 on one thread where it was
# checked); no cell runs longer than a few seconds. On a GPU it is untimed.
#
# **How the exercises work.** Each exercise is a function with a docstring that states what goes in and
# what comes out. Replace `raise NotImplementedError()` with your code, then run the test cell below it:
# its messages say what was expected and what came back. When the notebook is graded, further hidden
# tests check the same function on new inputs (other shapes, other block sizes, edge cases), so make it
# correct in general, not just on the examples shown. Run the cells in order.

# %% id="nb10-001" jupyter={"source_hidden": true} nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
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

# %% id="nb10-002"
import math
import time

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F

from utils import claims, run_cost
from utils.memory import PeakTensorMemory, peak_tensor_bytes
from utils.tiny_gpt import TinyGPT

torch.set_printoptions(precision=4, sci_mode=False)


# %% [markdown] id="nb10-003"
# ## 1. The $T \times T$ matrix
#
# For one head, with $T$ queries and $T$ keys of width $d$, naive attention computes
#
# $$
# S = \frac{QK^\top}{\sqrt d} \in \mathbb{R}^{T \times T}, \qquad P = \operatorname{softmax}_\text{rows}(S), \qquad O = PV \in \mathbb{R}^{T \times d}.
# $$
#
# $Q$, $K$, $V$ and $O$ hold $T \cdot d$ numbers each; $S$ and $P$ hold $T^2$. In float32 (4 bytes) one
# $T \times T$ matrix is $4T^2$ bytes: at $T = 8192$ that is $4 \cdot 8192^2 = 268{,}435{,}456$ bytes,
# 256 MiB, **for one head of one layer of one sequence**, and training keeps $P$ for the backward pass.
# A GPT-2-small-sized model (12 layers, 12 heads) would need $144 \times 256$ MiB = 36 GiB for these
# matrices alone at that length.
#
# **Predict before you run.** With $T = 2048$ and $d = 16$, how many bytes does the naive computation
# hold at its peak, beyond $Q$, $K$, $V$? (Hint: count the matrices of size $T \times T$ that are alive at
# the same moment.)
#
# <details><summary>Answer</summary>
#
# Two: the scores $S$ and the probabilities $P$ are both alive while the softmax runs, $2 \cdot 4 \cdot 2048^2$
# bytes = 32 MiB. The output $O$ ($2048 \times 16$ floats, 128 KiB) is small beside them. The cell below
# measures it with `PeakTensorMemory`, which watches every tensor PyTorch creates.
# </details>

# %% id="nb10-004"
def naive_attention(q, k, v):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])       # T x T
    return torch.softmax(scores, dim=-1) @ v                        # another T x T, then T x d


for T in (8192, 32768):
    print(f"T = {T:>6}: one fp32 T x T matrix = 4 T^2 = {4 * T * T:,} bytes = {4 * T * T / 2**20:,.0f} MiB")

print(f"\n{'T':>6} {'naive peak':>12} {'2 x 4 T^2':>12} {'SDPA peak':>11}")
naive_peaks, fused_peaks = {}, {}
for T in (256, 512, 1024, 2048):
    q, k, v = torch.randn(3, 1, 1, T, 16).unbind(0)
    _, naive_peaks[T] = peak_tensor_bytes(naive_attention, q, k, v)
    _, fused_peaks[T] = peak_tensor_bytes(F.scaled_dot_product_attention, q, k, v)
    print(f"{T:>6} {naive_peaks[T] / 2**20:>9.2f} MiB {2 * 4 * T * T / 2**20:>8.2f} MiB {fused_peaks[T] / 2**20:>8.3f} MiB")
beyond = {T: naive_peaks[T] - 2 * 4 * T * T for T in naive_peaks}     # what the naive peak holds beyond S and P
claims.claim(f"The naive peak is the two T x T matrices S and P plus the T x d output: beyond 2 x 4 T^2 it holds "
             f"{beyond[2048]:,} bytes at T = 2048 (the output is 4 x 2048 x 16 = {4 * 2048 * 16:,})",
             holds=all(0 <= extra <= 2 * 4 * T * 16 for T, extra in beyond.items()))
claims.claim(f"PyTorch's fused kernel holds {fused_peaks[2048] / naive_peaks[2048]:.2%} of the naive peak at T = 2048",
             holds=fused_peaks[2048] < 0.01 * naive_peaks[2048])

# %% [markdown] id="nb10-005"
# The two claims above settle the prediction: the peak is the two $T \times T$ matrices (plus the small output),
# so it quadruples every time $T$ doubles, and PyTorch's fused `F.scaled_dot_product_attention` holds a tiny
# fraction of it: it never builds the whole score matrix. How?
#
# ### Memory that is big and slow, memory that is small and fast
#
# A GPU has two kinds of memory that matter here. **HBM** (the tens of GB on the card) is large but
# comparatively slow: an H100 reads it at about 3 TB/s. **SRAM** (the on-chip shared memory and
# registers, a few hundred KB per streaming multiprocessor) is tiny but roughly ten times faster to
# reach. Attention does little arithmetic per byte of $S$ it touches (a multiply-add to make a score, an
# exponential, a multiply-add with $V$), so a naive kernel that writes $S$ to HBM, reads it back for the
# softmax, writes $P$, and reads it back again for $PV$, spends its time *moving* the $T \times T$
# matrices, not computing them.
#
# **FlashAttention** (Dao et al., 2022) never writes them: it cuts $Q$ into row blocks and $K, V$ into
# column blocks, loads one tile of each into SRAM, computes that tile's scores, folds them into a running
# result, and moves on. Each score is computed, used, and thrown away on chip. The one obstacle is the
# softmax: its denominator sums over the *whole* row, which the kernel never holds at once. Section 2
# removes that obstacle. (The backward pass recomputes the tiles instead of storing $P$: more
# arithmetic, far less memory traffic.)
#
# The figure shows the tiles of a causal attention matrix with blocks of 4: each is visited once per
# query block; tiles entirely above the diagonal are never computed at all.

# %% id="nb10-006"
T_FIG, BLOCK_FIG = 16, 4
fig, ax = plt.subplots(figsize=(5.2, 5))
for i0 in range(0, T_FIG, BLOCK_FIG):
    for j0 in range(0, T_FIG, BLOCK_FIG):
        if j0 > i0 + BLOCK_FIG - 1:
            color, label = "#f0f0f0", "skipped (all masked)"
        elif j0 + BLOCK_FIG - 1 <= i0:
            color, label = "#9ecae1", "full tile"
        else:
            color, label = "#fdae6b", "diagonal tile (masked inside)"
        ax.add_patch(plt.Rectangle((j0, i0), BLOCK_FIG, BLOCK_FIG, facecolor=color, edgecolor="black", label=label))
        ax.text(j0 + BLOCK_FIG / 2, i0 + BLOCK_FIG / 2, f"Q{i0 // BLOCK_FIG} K{j0 // BLOCK_FIG}", ha="center", va="center", fontsize=8)
handles, labels = ax.get_legend_handles_labels()
unique = dict(zip(labels, handles))
ax.legend(unique.values(), unique.keys(), loc="upper right", fontsize=8)
ax.set_xlim(0, T_FIG)
ax.set_ylim(T_FIG, 0)
ax.set_xlabel("key position (K, V blocks)")
ax.set_ylabel("query position (Q blocks)")
ax.set_title(f"Causal attention, T = {T_FIG}, tiles of {BLOCK_FIG} x {BLOCK_FIG}")
plt.show()
visited = sum(1 for i0 in range(0, T_FIG, BLOCK_FIG) for j0 in range(0, T_FIG, BLOCK_FIG) if j0 <= i0 + BLOCK_FIG - 1)
print(f"{visited} of {(T_FIG // BLOCK_FIG) ** 2} tiles computed")

# %% [markdown] id="nb10-007"
# ## 2. The online softmax
#
# The softmax of a row $x_1, \dots, x_n$ is $p_i = e^{x_i - m} / \ell$ with $m = \max_j x_j$ and
# $\ell = \sum_j e^{x_j - m}$. Subtracting $m$ changes nothing mathematically and keeps every exponent
# $\le 0$, so nothing overflows (notebook 01). Both $m$ and $\ell$ seem to need the whole row. They don't.
#
# Suppose we have seen part of the row and kept its maximum $m$ and its sum $\ell = \sum_{\text{seen}} e^{x_j - m}$.
# A new block $b_1, \dots, b_k$ arrives. The new maximum is $m' = \max(m, \max_i b_i)$, and the old sum
# was measured against the wrong maximum; but $e^{x - m'} = e^{x - m}\, e^{m - m'}$, so one factor fixes all
# of it at once:
#
# $$
# \ell' = \ell \, e^{m - m'} + \sum_{i=1}^{k} e^{b_i - m'} .
# $$
#
# Start from $m = -\infty$, $\ell = 0$, fold in the blocks in order, and at the end $m$ is the row's
# maximum and $\ell$ its softmax denominator. The log-sum-exp is $m + \ln \ell$, and $p_i = e^{x_i - m}/\ell$.
#
# **A worked example.** The row $(1, 2, 3, 4)$ in blocks of two:
#
# | after block | $m$ | $\ell$ |
# |---|---|---|
# | $(1, 2)$ | 2 | $e^{-1} + e^{0} = 1.36788$ |
# | $(3, 4)$ | 4 | $1.36788 \cdot e^{2 - 4} + e^{-1} + e^{0} = 0.18512 + 1.36788 = 1.55300$ |
#
# and $m + \ln \ell = 4 + 0.44019 = 4.44019 = \ln(e^1 + e^2 + e^3 + e^4)$. Check it with a calculator.
#
# **Masked entries.** Attention masks set scores to $-\infty$. A block can be entirely masked, and so
# can everything seen so far: then $m = m' = -\infty$ and the formula asks for $e^{-\infty - (-\infty)}$,
# which is NaN in floating point. The sum of nothing is 0, so the answer is $\ell' = 0$, $m' = -\infty$:
# your code has to take that case apart (for example, subtract 0 instead of $m'$ where $m'$ is $-\infty$).
#
# ### Exercise 1: `online_softmax_update` (1 visible + 2 hidden for the update + 1 hidden for masked blocks, large values and inputs left alone)
#
# One step of the online softmax, for a whole batch of rows at once. The tests drive your function over
# blocks of a row themselves, so it only ever sees one block at a time.

# %% id="nb10-008" nbgrader={"grade": false, "grade_id": "online_softmax_update", "locked": false, "schema_version": 3, "solution": true, "task": false}
import torch


def online_softmax_update(running_max, running_sum, block):
    """Fold one block of every row into that row's running maximum and softmax denominator.

    Args:
        running_max: float tensor of shape (...,): the largest entry of each row seen so far
            (-inf before the first block, or while every entry seen is -inf).
        running_sum: float tensor of the same shape: sum over the entries seen so far of
            exp(entry - running_max) (0 before the first block).
        block: float tensor of shape (..., k), k >= 1, same leading shape and dtype: the next k
            entries of every row. Entries are finite or -inf (a masked score); never +inf or NaN.
    Returns:
        (new_max, new_sum), two NEW tensors of shape (...,) and the input dtype:
        new_max = max(running_max, max of block) and
        new_sum = running_sum * exp(running_max - new_max) + sum_i exp(block_i - new_max).
        Where every entry seen so far (block included) is -inf, new_max is -inf and new_sum is 0
        (never NaN). No exp overflows, whatever the size of the entries (exponents are <= 0).
        The three inputs are left unchanged.
    """
    ### BEGIN SOLUTION
    new_max = torch.maximum(running_max, block.amax(dim=-1))
    # Where everything so far is masked, new_max is -inf: shift by 0 there, so that
    # exp(-inf - 0) = 0 instead of exp(-inf - (-inf)) = NaN.
    shift = torch.where(torch.isneginf(new_max), torch.zeros_like(new_max), new_max)
    new_sum = running_sum * torch.exp(running_max - shift) + torch.exp(block - shift.unsqueeze(-1)).sum(dim=-1)
    return new_max, new_sum
    ### END SOLUTION


# %% id="nb10-009" nbgrader={"grade": true, "grade_id": "test_online_softmax_update", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
import math

import torch
from utils import checks, probes

# The worked example: the row (1, 2, 3, 4) in two blocks of two.
m, s = torch.tensor([-math.inf]), torch.tensor([0.0])
m, s = online_softmax_update(m, s, torch.tensor([[1.0, 2.0]]))
checks.assert_close(m, torch.tensor([2.0]), name="running max after the block (1, 2)")
checks.assert_close(s, torch.tensor([math.exp(-1) + 1.0]), name="running sum after the block (1, 2)",
                    hint="Start from max -inf and sum 0: the sum is exp(1 - 2) + exp(2 - 2).")
m, s = online_softmax_update(m, s, torch.tensor([[3.0, 4.0]]))
checks.assert_close(m, torch.tensor([4.0]), name="running max after (1, 2), (3, 4)")
checks.assert_close(s, torch.tensor([1.55300]), atol=1e-5, name="running sum after (1, 2), (3, 4)",
                    hint="The old sum was measured against the old maximum 2: multiply it by exp(2 - 4) "
                         "before adding exp(3 - 4) + exp(4 - 4).")
checks.assert_close((m + s.log()).item(), math.log(sum(math.exp(x) for x in (1, 2, 3, 4))), atol=1e-5,
                    name="log-sum-exp of (1, 2, 3, 4) from the running max and sum")

# Two rows at once, blocks of three then one.
rows = torch.tensor([[0.5, -1.0, 2.0, 3.5], [10.0, 9.0, -3.0, 0.0]])
m, s = torch.full((2,), -math.inf), torch.zeros(2)
m, s = online_softmax_update(m, s, rows[:, :3])
m, s = online_softmax_update(m, s, rows[:, 3:])
checks.assert_close(m + s.log(), torch.logsumexp(rows, dim=-1), name="log-sum-exp of two rows from blocks (3, 1)",
                    hint="Work on the last axis only: max and sum over dim=-1, one result per row.")

# The caller's running max, running sum and block stay as they were: the results are new tensors.
before = (torch.tensor([2.0]), torch.tensor([1.5]), torch.tensor([[3.0, 1.0]]))
call = probes.traced_call(online_softmax_update, *(t.clone() for t in before))
for label, after, old in zip(("running_max", "running_sum", "block"), call.args_after, before):
    checks.assert_close(after, old, atol=0, rtol=0, name=f"{label} after online_softmax_update",
                        hint="Return new tensors; running_sum.mul_(...).add_(...) changes the caller's running sum.")

checks.assert_close(m, torch.tensor([3.5, 10.0]), name="running max of the two rows after blocks (3, 1)",
                    hint="One maximum per row (block.amax(dim=-1)), not one maximum over the whole block.")
print("online_softmax_update: visible tests passed")

# %% id="nb10-010" nbgrader={"grade": true, "grade_id": "test_online_softmax_update_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for online_softmax_update run when your notebook is graded.
### BEGIN HIDDEN TESTS
import math

import torch
from utils import checks


def fold(rows, sizes):
    m = torch.full(rows.shape[:-1], -math.inf, dtype=rows.dtype)
    s = torch.zeros(rows.shape[:-1], dtype=rows.dtype)
    start = 0
    for size in sizes:
        m, s = online_softmax_update(m, s, rows[..., start:start + size])
        start += size
    return m, s


generator = torch.Generator().manual_seed(1010)
for shape, sizes in [((3, 7), (7,)), ((3, 7), (1,) * 7), ((2, 5, 11), (4, 4, 3)), ((6, 9), (2, 5, 1, 1)),
                     ((1, 64), (30, 34)), ((4, 1), (1,))]:
    rows = 3 * torch.randn(*shape, generator=generator)
    m, s = fold(rows, sizes)
    name = f"rows of shape {shape} in blocks {sizes}"
    checks.assert_close(m, rows.amax(dim=-1), atol=0, rtol=0, name=f"{name}: running max",
                        hint="new_max = max(running_max, max of the block), row by row.")
    checks.assert_close(m + s.log(), torch.logsumexp(rows, dim=-1), atol=1e-5, rtol=1e-5, name=f"{name}: log-sum-exp",
                        hint="Rescale the old sum by exp(old_max - new_max) before adding the block's terms.")
    checks.assert_close(torch.exp(rows - m.unsqueeze(-1)) / s.unsqueeze(-1), torch.softmax(rows, dim=-1),
                        atol=1e-6, name=f"{name}: softmax from (max, sum)")

# float64 in, float64 out.
rows = torch.randn(2, 6, dtype=torch.float64, generator=generator)
m, s = fold(rows, (2, 2, 2))
checks.assert_tensor(s, name="running sum of float64 rows", shape=(2,), dtype=torch.float64)
checks.assert_close(m + s.log(), torch.logsumexp(rows, dim=-1), atol=1e-12, rtol=1e-12, name="float64 log-sum-exp",
                    hint="Compute in the rows' own dtype: a sum taken in float32 and cast back to float64 is off by about 1e-8.")
print("online_softmax_update: hidden tests passed")
### END HIDDEN TESTS

# %% id="nb10-011" nbgrader={"grade": true, "grade_id": "test_online_softmax_update_hidden_edges", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for online_softmax_update's edge clauses run when your notebook is graded.
### BEGIN HIDDEN TESTS
import math

import torch
from utils import checks
from utils import probes

inf = math.inf
# Masked blocks: a whole block of -inf first, in the middle, and a row that is all -inf so far.
m, s = torch.tensor([-inf, -inf]), torch.tensor([0.0, 0.0])
m, s = online_softmax_update(m, s, torch.tensor([[-inf, -inf], [-inf, 1.0]]))
checks.assert_close(m, torch.tensor([-inf, 1.0]), name="max after a fully masked block (row 0)",
                    hint="A row whose entries are all -inf keeps max -inf.")
checks.assert_close(s, torch.tensor([0.0, 1.0]), name="sum after a fully masked block (row 0)",
                    hint="exp(-inf - (-inf)) is NaN in floating point: where the new max is -inf, the sum is 0.")
m, s = online_softmax_update(m, s, torch.tensor([[2.0, -inf], [-inf, -inf]]))
checks.assert_close(m, torch.tensor([2.0, 1.0]), name="max after masked, then (2, -inf)")
checks.assert_close(s, torch.tensor([1.0, 1.0]), name="sum after masked, then a partly masked block")

# Huge scores: exponents must stay <= 0.
m, s = torch.tensor([-inf]), torch.tensor([0.0])
m, s = online_softmax_update(m, s, torch.tensor([[1000.0, 999.0]]))
m, s = online_softmax_update(m, s, torch.tensor([[1002.0]]))
checks.assert_close(m + s.log(), torch.logsumexp(torch.tensor([1000.0, 999.0, 1002.0]), dim=0).reshape(1), atol=1e-4,
                    name="log-sum-exp of (1000, 999 | 1002)",
                    hint="Never exponentiate a raw score: subtract the new maximum first (exp(1000) is inf in float32).")
# A block far above a finite running max: exp(block - old max) overflows (exp(200) is inf in float32), even if
# it is multiplied by exp(old max - new max) afterwards; only exp(block - new max) stays <= 1.
for dtype, jump in ((torch.float32, 200.0), (torch.float64, 1000.0)):
    m, s = online_softmax_update(torch.tensor([-inf], dtype=dtype), torch.tensor([0.0], dtype=dtype),
                                 torch.tensor([[0.0, -1.0]], dtype=dtype))
    m, s = online_softmax_update(m, s, torch.tensor([[jump, jump - 1.0]], dtype=dtype))
    expected = torch.logsumexp(torch.tensor([0.0, -1.0, jump, jump - 1.0], dtype=torch.float64), dim=0).reshape(1)
    checks.assert_close((m + s.log()).double(), expected, atol=1e-4,
                        name=f"log-sum-exp of (0, -1 | {jump:g}, {jump - 1:g}), {dtype}",
                        hint="Exponentiate the block against the NEW maximum (block - new_max <= 0), never against the old one: "
                             "exp(block - old_max) overflows before any rescaling can bring it back.")

# Inputs left unchanged, results are new tensors.
running_max, running_sum, block = torch.tensor([0.5, -1.0]), torch.tensor([2.0, 3.0]), torch.tensor([[3.0, 1.0], [-2.0, 0.0]])
traced = probes.traced_call(online_softmax_update, running_max, running_sum, block)
for name, before, after in zip(("running_max", "running_sum", "block"), (running_max, running_sum, block), traced.args_after):
    checks.assert_close(after, before, atol=0, rtol=0, name=f"online_softmax_update's argument {name} after the call",
                        hint="Compute new tensors; do not write into the arguments (no in-place ops such as mul_).")
checks.assert_true(not traced.returns_argument and not traced.shares_memory, name="online_softmax_update's results",
                   problem="a result is one of the arguments, or a view of one.", hint="Return new tensors.")

# The results have the input dtype, float32 and float64 alike.
for dtype in (torch.float32, torch.float64):
    m, s = online_softmax_update(torch.tensor([0.5, -inf], dtype=dtype), torch.tensor([1.0, 0.0], dtype=dtype),
                                 torch.tensor([[2.0, -1.0], [0.0, -inf]], dtype=dtype))
    for name, result in (("new_max", m), ("new_sum", s)):
        checks.assert_tensor(result, name=f"online_softmax_update's {name} for {dtype} inputs", shape=(2,), dtype=dtype,
                             hint="Compute in the inputs' dtype and return tensors of that dtype.")
    checks.assert_close(s, torch.tensor([math.exp(-1.5) + 1.0 + math.exp(-3.0), 1.0], dtype=dtype), atol=1e-6,
                        name=f"new_sum of (0.5, 1.0) and the block (2, -1), {dtype}")
# A fully masked block changes nothing, but the results are still new tensors.
running_max, running_sum = torch.tensor([1.0, -inf]), torch.tensor([2.0, 0.0])
traced = probes.traced_call(online_softmax_update, running_max, running_sum, torch.full((2, 3), -inf))
checks.assert_close(traced.result[0], running_max, atol=0, rtol=0, name="new_max after a fully masked block")
checks.assert_close(traced.result[1], running_sum, atol=0, rtol=0, name="new_sum after a fully masked block")
checks.assert_true(not traced.returns_argument and not traced.shares_memory,
                   name="online_softmax_update's results for a fully masked block",
                   problem="a result is one of the arguments, or a view of one.",
                   hint="Return new tensors even when the block changes nothing (no early return of the inputs).")
print("online_softmax_update: hidden edge-case tests passed")
### END HIDDEN TESTS

# %% [markdown] id="nb10-012"
# Any block size gives the same answer, to rounding. The cell below folds the rows of a random matrix
# through your function in blocks of 1, 7, 64 and the whole row, and compares with `torch.logsumexp`.

# %% id="nb10-013"
scores = 5 * torch.randn(8, 1000)
reference = torch.logsumexp(scores, dim=-1)
for block in (1, 7, 64, 1000):
    m, s = torch.full((8,), -math.inf), torch.zeros(8)
    for start in range(0, scores.shape[-1], block):
        m, s = online_softmax_update(m, s, scores[:, start:start + block])
    print(f"blocks of {block:>4}: largest |difference| from torch.logsumexp = {(m + s.log() - reference).abs().max():.2e}")

# %% [markdown] id="nb10-014"
# ## 3. Tiled attention
#
# Attention's output row $i$ is a softmax-weighted average of the value rows:
# $o_i = \sum_j p_{ij} v_j = \frac{1}{\ell_i} \sum_j e^{s_{ij} - m_i} v_j$. The online softmax carries over
# unchanged if we also carry the *unnormalised* output $a_i = \sum_{\text{seen}} e^{s_{ij} - m_i} v_j$: when a
# key block arrives and the maximum moves from $m_i$ to $m_i'$, everything accumulated so far is rescaled
# by the same factor $e^{m_i - m_i'}$,
#
# $$
# a_i' = a_i \, e^{m_i - m_i'} + \sum_{j \in \text{block}} e^{s_{ij} - m_i'}\, v_j ,
# \qquad \ell_i' = \ell_i \, e^{m_i - m_i'} + \sum_{j \in \text{block}} e^{s_{ij} - m_i'} ,
# $$
#
# and at the end $o_i = a_i / \ell_i$. That is the whole algorithm of FlashAttention's forward pass:
#
# ```
# for each block of query rows Q_i:
#     m = -inf, l = 0, a = 0                       # one per query row of the block
#     for each block of key/value rows K_j, V_j:
#         S = Q_i K_j^T / sqrt(d)                  # a block x block tile of scores
#         (causal: set S to -inf where key position > query position)
#         m' = max(m, rowmax(S)); P = exp(S - m')
#         l = l * exp(m - m') + rowsum(P)
#         a = a * exp(m - m') + P V_j
#         m = m'
#     O_i = a / l
# ```
#
# Memory: one tile of scores ($\text{block}^2$ numbers) and the running $m$, $\ell$, $a$ for one query
# block, plus the output. No $T \times T$ matrix ever exists.
#
# **Causal masking across tiles.** The mask compares *absolute* positions: query row $r$ of the tile
# that starts at $i_0$ is position $i_0 + r$; key column $c$ of the tile starting at $j_0$ is $j_0 + c$.
# Comparing the positions *inside* the tile ($c > r$) is right only on the diagonal tiles. And a
# key block that starts after the query block's last position is entirely masked: skip it (that is
# the grey half of the figure above, half the work of causal attention).
#
# **Blocks that do not divide $T$.** With $T = 10$ and blocks of 4 the tiles start at 0, 4, 8, and the last
# holds only 2 rows. Slicing `x[..., start:start + block, :]` gives exactly that; a loop that stops at
# `T - block` loses the last partial tile.
#
# ### Exercise 2: `tiled_attention` (1 visible + 3 hidden for the output + 1 hidden for errors, edge shapes and the device + 1 hidden for memory)
#
# This is the notebook's main build. Use only tiles: never form a score matrix larger than
# `block_size` x `block_size` per batch element and head (the memory test measures it). Do not call
# `F.scaled_dot_product_attention` or `torch.softmax` on whole rows.

# %% id="nb10-015" nbgrader={"grade": false, "grade_id": "tiled_attention", "locked": false, "schema_version": 3, "solution": true, "task": false}
import math

import torch


def tiled_attention(q, k, v, block_size, causal=False):
    """Scaled dot-product attention computed tile by tile with the online softmax (FlashAttention's forward).

    Args:
        q: float tensor (..., T, d): queries; any number of leading (batch, head) dimensions, T >= 1.
        k: float tensor (..., S, d): keys, the same leading dimensions, S >= 1.
        v: float tensor (..., S, d_v): values.
        block_size: int >= 1: the tile size, for query rows and for key/value rows alike. It need not
            divide T or S, and may exceed them (then one tile holds everything).
        causal: if True, query position i attends only to key positions <= i (T must equal S).
    Returns:
        A NEW tensor (..., T, d_v) with q's dtype, on q's device (every tensor it makes is made there),
        equal (to float rounding, about 1e-5 in float32) to
        F.scaled_dot_product_attention(q, k, v, is_causal=causal): softmax(q k^T / sqrt(d)) v.
        Never forms a score matrix larger than block_size x block_size per leading index, so the
        extra memory grows like T * (block_size + d_v), not T^2. q, k and v are left unchanged.
    Raises:
        ValueError: if block_size is not a positive int, or causal is True and T != S.
    """
    ### BEGIN SOLUTION
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:
        raise ValueError(f"block_size must be a positive int, got {block_size!r}")
    T, S = q.shape[-2], k.shape[-2]
    if causal and T != S:
        raise ValueError(f"causal attention needs as many queries as keys, got T = {T} and S = {S}")
    scale = 1.0 / math.sqrt(q.shape[-1])
    out = torch.empty(*q.shape[:-1], v.shape[-1], dtype=q.dtype, device=q.device)
    for i0 in range(0, T, block_size):
        q_tile = q[..., i0:i0 + block_size, :] * scale
        rows = q_tile.shape[-2]
        m = torch.full(q_tile.shape[:-1], -math.inf, dtype=q.dtype, device=q.device)
        l = torch.zeros_like(m)
        a = torch.zeros(*q_tile.shape[:-1], v.shape[-1], dtype=q.dtype, device=q.device)
        for j0 in range(0, S, block_size):
            if causal and j0 > i0 + rows - 1:
                break                                   # this key block and all later ones are in the future
            scores = q_tile @ k[..., j0:j0 + block_size, :].transpose(-2, -1)
            if causal:
                query_pos = torch.arange(i0, i0 + rows, device=q.device).unsqueeze(-1)
                key_pos = torch.arange(j0, j0 + scores.shape[-1], device=q.device)
                scores = scores.masked_fill(key_pos > query_pos, -math.inf)
            m_new = torch.maximum(m, scores.amax(dim=-1))   # finite: every query sees key 0 in the first block
            rescale = torch.exp(m - m_new)
            p = torch.exp(scores - m_new.unsqueeze(-1))
            l = l * rescale + p.sum(dim=-1)
            a = a * rescale.unsqueeze(-1) + p @ v[..., j0:j0 + block_size, :]
            m = m_new
        out[..., i0:i0 + rows, :] = a / l.unsqueeze(-1)
    return out
    ### END SOLUTION


# %% id="nb10-016" nbgrader={"grade": true, "grade_id": "test_tiled_attention", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
import torch
import torch.nn.functional as F
from utils import checks

generator = torch.Generator().manual_seed(0)
q, k, v = torch.randn(3, 2, 8, 4, generator=generator).unbind(0)   # batch 2, T = 8, d = 4

out = tiled_attention(q, k, v, block_size=8)
checks.assert_close(out, F.scaled_dot_product_attention(q, k, v), atol=1e-5,
                    name="tiled_attention(T=8, d=4, block_size=8): one tile",
                    hint="With one tile this is plain attention: softmax(q k^T / sqrt(d)) v, done with the online update.")
out = tiled_attention(q, k, v, block_size=2)
checks.assert_close(out, F.scaled_dot_product_attention(q, k, v), atol=1e-5,
                    name="tiled_attention(T=8, d=4, block_size=2): 4 x 4 tiles",
                    hint="When a key block raises the running max, rescale BOTH the running sum and the "
                         "accumulated output by exp(old_max - new_max).")
out = tiled_attention(q, k, v, block_size=3)
checks.assert_close(out, F.scaled_dot_product_attention(q, k, v), atol=1e-5,
                    name="tiled_attention(T=8, block_size=3): tiles that do not divide T",
                    hint="Tiles start at 0, 3, 6; the last one holds 2 rows. Slice x[..., start:start + block].")
out = tiled_attention(q, k, v, block_size=3, causal=True)
checks.assert_close(out, F.scaled_dot_product_attention(q, k, v, is_causal=True), atol=1e-5,
                    name="tiled_attention(T=8, block_size=3, causal=True)",
                    hint="Mask with ABSOLUTE positions: key j0 + c is hidden from query i0 + r when j0 + c > i0 + r.")
print("tiled_attention: visible tests passed")

# %% id="nb10-017" nbgrader={"grade": true, "grade_id": "test_tiled_attention_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for tiled_attention run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
import torch.nn.functional as F
from utils import checks

generator = torch.Generator().manual_seed(2024)
cases = [  # leading dims, T, S, d, d_v, block sizes
    ((1,), 1, 1, 3, 3, (1, 4)),
    ((2, 3), 10, 10, 8, 8, (1, 3, 4, 7, 10, 16)),
    ((), 13, 5, 6, 2, (2, 5, 64)),
    ((2,), 17, 17, 4, 5, (4, 6, 17, 100)),
    ((1, 2), 33, 20, 16, 16, (8, 11)),
]
for lead, T, S, d, d_v, blocks in cases:
    q = torch.randn(*lead, T, d, generator=generator)
    k = torch.randn(*lead, S, d, generator=generator)
    v = torch.randn(*lead, S, d_v, generator=generator)
    expected = F.scaled_dot_product_attention(q, k, v)
    for block in blocks:
        checks.assert_close(tiled_attention(q, k, v, block), expected, atol=2e-5, rtol=1e-4,
                            name=f"tiled_attention(q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}, block_size={block})",
                            hint="Check the last partial tile (slice to start + block, never past), the rescaling of the "
                                 "accumulator, and the scale 1/sqrt(d) with d = q.shape[-1].")

# Large scores: the running max must keep every exponent <= 0.
q = 40 * torch.randn(2, 9, 4, generator=generator)
k = 40 * torch.randn(2, 9, 4, generator=generator)
v = torch.randn(2, 9, 3, generator=generator)
checks.assert_close(tiled_attention(q, k, v, 2), F.scaled_dot_product_attention(q, k, v), atol=2e-5,
                    name="tiled_attention with scores in the hundreds, block_size=2",
                    hint="Subtract the running max before exp; never exponentiate raw scores.")
print("tiled_attention: hidden tests passed")
### END HIDDEN TESTS

# %% id="nb10-018" nbgrader={"grade": true, "grade_id": "test_tiled_attention_hidden_causal", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for tiled_attention's causal mask run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
import torch.nn.functional as F
from utils import checks

generator = torch.Generator().manual_seed(77)
for lead, T, d, blocks in [((1,), 1, 2, (1, 3)), ((2, 2), 12, 8, (1, 4, 5, 12, 30)), ((3,), 19, 4, (2, 7, 8))]:
    q, k, v = (torch.randn(*lead, T, d, generator=generator) for _ in range(3))
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    for block in blocks:
        checks.assert_close(tiled_attention(q, k, v, block, causal=True), expected, atol=2e-5, rtol=1e-4,
                            name=f"tiled_attention(T={T}, block_size={block}, causal=True)",
                            hint="The mask compares absolute positions (query i0 + r, key j0 + c). Key blocks that start "
                                 "after the query block's last row are entirely masked: skip them.")
# Very negative scores (-2e9 for every key): a masked score counts for nothing, so a finite mask value such as
# -1e9, larger than every allowed score, would take all the weight of its row.
q, k = torch.ones(1, 5, 1), torch.full((1, 5, 1), -2e9)
v = torch.arange(1.0, 6.0).view(1, 5, 1)
expected = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=True).float()
for block in (2, 5):
    checks.assert_close(tiled_attention(q, k, v, block, causal=True), expected, atol=1e-5,
                        name=f"tiled_attention(T=5, block_size={block}, causal=True), every score -2e9",
                        hint="Mask with -inf (masked_fill(..., float('-inf'))): a finite value such as -1e9 is larger "
                             "than a score of -2e9.")
print("tiled_attention: hidden causal tests passed")
### END HIDDEN TESTS

# %% id="nb10-019" nbgrader={"grade": true, "grade_id": "test_tiled_attention_hidden_edges", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for tiled_attention's errors, dtype and inputs run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
import torch.nn.functional as F
from utils import checks
from utils import probes

q, k, v = torch.randn(3, 1, 6, 4, generator=torch.Generator().manual_seed(5)).unbind(0)
for bad in (0, -2, 2.5, True):
    checks.assert_raises(ValueError, tiled_attention, q, k, v, bad, name=f"tiled_attention(block_size={bad!r})",
                         hint="block_size must be a positive int: check it before looping.")
checks.assert_error_boundary(ValueError, lambda b: tiled_attention(q, k, v, b), raises=(0, -1), allowed=(1,),
                             name="tiled_attention's block_size", hint="A block of one key is allowed: raise only for block_size < 1.")
checks.assert_raises(ValueError, tiled_attention, q, k[..., :4, :], v[..., :4, :], 2, causal=True,
                     name="tiled_attention(causal=True) with 6 queries and 4 keys",
                     hint="Causal attention needs T == S: raise ValueError otherwise.")
out = tiled_attention(q, k, v, 4, True)
checks.assert_close(out, F.scaled_dot_product_attention(q, k, v, is_causal=True), atol=2e-5,
                    name="tiled_attention(q, k, v, 4, True): causal passed positionally")
q64, k64, v64 = (t.double() for t in (q, k, v))
out = tiled_attention(q64, k64, v64, 4)
checks.assert_tensor(out, name="tiled_attention on float64 inputs", shape=(1, 6, 4), dtype=torch.float64,
                     hint="Create the output and the running tensors with q's dtype.")
checks.assert_close(out, F.scaled_dot_product_attention(q64, k64, v64), atol=1e-10, name="tiled_attention in float64")
# bfloat16 in, bfloat16 out (accumulating in float32 is fine, but the result is converted back to q's dtype).
q16, k16, v16 = (t.to(torch.bfloat16) for t in (q, k, v))
out = tiled_attention(q16, k16, v16, 4, causal=True)
checks.assert_tensor(out, name="tiled_attention on bfloat16 inputs", shape=(1, 6, 4), dtype=torch.bfloat16,
                     hint="The result has q's dtype: if you accumulate in float32, convert back before returning.")
checks.assert_close(out.float(), F.scaled_dot_product_attention(q16.float(), k16.float(), v16.float(), is_causal=True),
                    atol=5e-2, rtol=5e-2, name="tiled_attention in bfloat16 (to bfloat16 rounding)")

out = tiled_attention(q, k, v, 4)
checks.assert_tensor(out, name="tiled_attention on float32 inputs", shape=(1, 6, 4), dtype=torch.float32,
                     hint="The result has q's dtype: accumulate in it, or convert back before returning.")
traced = probes.traced_call(tiled_attention, q, k, v, 4, causal=True)
for name, before, after in zip("qkv", (q, k, v), traced.args_after):
    checks.assert_close(after, before, atol=0, rtol=0, name=f"tiled_attention's argument {name} after the call",
                        hint="Scale a copy of the query tile (q_tile = q[...] * scale), never q in place.")
checks.assert_true(not traced.shares_memory, name="tiled_attention's result", problem="the result is a view of an input.",
                   hint="Write the output into a new tensor.")
print("tiled_attention: hidden error and edge tests passed")
# On q's device: q, k and v on PyTorch's meta device (shapes, no values) stand in for a GPU. A tensor made without
# device= (the running max, the positions of a causal tile) meets the meta ones; code that reads values, or copies
# into a tensor made on the CPU, cannot run there and is judged by the next check.
for causal in (False, True):
    seen = probes.make("utils.meta_device.result_device_on_meta", tiled_attention, *torch.randn(3, 2, 5, 4).unbind(0), 2, causal=causal)
    checks.assert_kept_on_meta(seen,
                               name=f"tiled_attention(block_size=2, causal={causal}) with q, k, v on another device than the CPU (the meta device)",
                               hint="Make every tensor on q.device (torch.zeros(..., dtype=q.dtype, device=q.device), "
                                    "torch.arange(..., device=q.device)): with q on a GPU, a tensor made without device= is on the CPU.")
# The same with the values kept (q, k, v labelled cuda:0, utils.fake_cuda): an output made without device= and
# filled tile by tile (a copy, which meta tensors cannot give) shows as a CPU result.
for causal in (False, True):
    seen = probes.make("utils.fake_cuda.result_device_on_fake_cuda", tiled_attention, *torch.randn(3, 2, 5, 4).unbind(0), 2, causal=causal)
    checks.assert_kept_on_fake_cuda(seen, name=f"tiled_attention(block_size=2, causal={causal}) with q, k, v on a GPU (emulated, the values kept)",
                                    hint="Make the output on q.device too (torch.empty(..., dtype=q.dtype, device=q.device)) before "
                                         "writing the tiles into it.")
### END HIDDEN TESTS

# %% id="nb10-020" nbgrader={"grade": true, "grade_id": "test_tiled_attention_hidden_memory", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for tiled_attention's memory run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks
from utils import probes

# T = 8192, d = 2, tiles of 256. One fp32 T x T score matrix is 256 MiB; a T x 256 strip of scores is 8 MiB;
# tiles of 256 x 256 (0.25 MiB each) and an output of T x 2 need about 1 MiB.
T, d, block = 8192, 2, 256
generator = torch.Generator().manual_seed(9)
q, k, v = (torch.randn(1, T, d, generator=generator) for _ in range(3))
limit = 4 * 2**20
for causal in (False, True):
    _, peak = probes.make("utils.memory.peak_tensor_bytes", tiled_attention, q, k, v, block, causal=causal)
    checks.assert_true(peak <= limit, name=f"extra memory of tiled_attention(T={T}, d={d}, block_size={block}, causal={causal})",
                       problem=f"it held {peak / 2**20:.1f} MiB of new tensors at its peak (limit {limit / 2**20:.0f} MiB): "
                               f"a T x T score matrix is {4 * T * T / 2**20:.0f} MiB and a T x {block} strip "
                               f"{4 * T * block / 2**20:.0f} MiB.",
                       hint="Tile the queries AND the keys: one block_size x block_size tile of scores at a time, "
                            "never all T queries (or all S keys) at once.")
print("tiled_attention: hidden memory tests passed")
### END HIDDEN TESTS

# %% [markdown] id="nb10-021"
# ### Same answer, linear memory
#
# The cell below measures the peak extra memory of your `tiled_attention` (tiles of 64) against the
# naive computation as $T$ grows, and times three implementations: the naive one, your tiled one, and
# PyTorch's fused `F.scaled_dot_product_attention`.
#
# **Predict before you run.** From $T = 256$ to $T = 2048$ (8 times longer), by what factor does the naive peak
# grow? And the tiled one, with tiles of 64: by 64, by 8, or by less? Which of the three is fastest?
#
# <details><summary>Answer</summary>
#
# The naive peak grows by about $8^2 = 64$ (two $T \times T$ matrices). The tiled one holds one $64 \times 64$ tile
# of scores at a time plus the running statistics and the output, which are $O(T)$: it grows by at most 8, and in
# practice by less, because the fixed tile dominates at these lengths (the cell checks both). The fused kernel is
# the fastest at both lengths (checked too); your tiled version is slower than it at both, and the paragraph after
# the timings says why.
# </details>

# %% id="nb10-022"
lengths = [256, 512, 1024, 2048]
naive_mib, tiled_mib = [], []
for T in lengths:
    q, k, v = torch.randn(3, 1, 1, T, 16).unbind(0)
    naive_mib.append(peak_tensor_bytes(naive_attention, q, k, v)[1] / 2**20)
    tiled_mib.append(peak_tensor_bytes(tiled_attention, q, k, v, 64, causal=True)[1] / 2**20)
fig, ax = plt.subplots(figsize=(6, 4))
ax.loglog(lengths, naive_mib, "o-", label="naive: S and P, 2 x 4 T^2 bytes")
ax.loglog(lengths, tiled_mib, "s-", label="tiled, blocks of 64")
ax.set_xlabel("sequence length T")
ax.set_ylabel("peak extra memory (MiB)")
ax.set_title("Attention memory, one head, d = 16, fp32")
ax.legend()
plt.show()
for T, a, b in zip(lengths, naive_mib, tiled_mib):
    print(f"T = {T:>5}: naive {a:7.2f} MiB, tiled {b:6.3f} MiB ({a / b:5.0f}x less)")
print(f"growth from T = {lengths[0]} to {lengths[-1]} ({lengths[-1] // lengths[0]}x longer): "
      f"naive x{naive_mib[-1] / naive_mib[0]:.0f}, tiled x{tiled_mib[-1] / tiled_mib[0]:.1f}")
claims.claim(f"8 times longer: the naive peak grows x{naive_mib[-1] / naive_mib[0]:.0f} (quadratic, x64), the tiled one "
             f"x{tiled_mib[-1] / tiled_mib[0]:.1f} (at most linear, x8)",
             holds=naive_mib[-1] / naive_mib[0] > 50 and tiled_mib[-1] / tiled_mib[0] < 8)


# %% id="nb10-023"
def best_time(fn, *args, repeat=3):
    best = math.inf
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - start)
    return best


# Which kernel does F.scaled_dot_product_attention run here? Ask the profiler for the op it dispatched to.
q, k, v = torch.randn(3, 1, 4, 512, 64).unbind(0)
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
    F.scaled_dot_product_attention(q, k, v, is_causal=True)
kernels = sorted({event.key for event in profile.key_averages() if "attention" in event.key and event.key != "aten::scaled_dot_product_attention"})
print(f"device {q.device}: F.scaled_dot_product_attention ran {kernels}")
if torch.cuda.is_available():
    print("CUDA back-ends enabled: flash", torch.backends.cuda.flash_sdp_enabled(),
          "| memory-efficient", torch.backends.cuda.mem_efficient_sdp_enabled(), "| math", torch.backends.cuda.math_sdp_enabled())

def naive_causal_attention(q, k, v):
    T = q.shape[-2]
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(diagonal=1), -math.inf)
    return torch.softmax(scores, dim=-1) @ v


implementations = {
    "naive": naive_causal_attention,
    "tiled (yours)": lambda q, k, v: tiled_attention(q, k, v, 64, causal=True),
    "SDPA (fused)": lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
}
print(f"\n{'T':>6}" + "".join(f"{name:>16}" for name in implementations) + "   (ms; 4 heads, d = 64, causal, tiles of 64)")
timings = {}
for T in (256, 1024):
    q, k, v = torch.randn(3, 1, 4, T, 64).unbind(0)
    timings[T] = {name: best_time(fn, q, k, v) for name, fn in implementations.items()}
    print(f"{T:>6}" + "".join(f"{seconds * 1e3:16.2f}" for seconds in timings[T].values()))
fused_margin = min(min(t["naive"], t["tiled (yours)"]) / t["SDPA (fused)"] for t in timings.values())
claims.claim(f"The fused kernel is the fastest of the three at both lengths, at least {fused_margin:.1f} times faster "
             f"than the next", holds=fused_margin > 1.2, why_it_may_not="timings on a busy machine vary")

# %% [markdown] id="nb10-024"
# Read the table before the explanation. Your tiled version always uses far less memory, but its
# speed depends on the length. Every tile costs several separate PyTorch calls (a product, a max, an
# exponential, two sums, another product), each with its own dispatch overhead and its own pass over
# memory, and the loop runs in the Python interpreter: for short sequences that overhead dominates.
# For long ones the naive version pays for its size instead: it writes and re-reads the $T \times T$
# scores and probabilities, several times the size of the processor's caches, and a loop over small
# tiles that stay in cache can win even in Python.
#
# A **fused kernel** gets both benefits: the whole inner loop is one compiled function, the tile stays
# in registers and on-chip memory from the score to the output, and there is no interpreter in between.
# That is what `F.scaled_dot_product_attention` runs (the kernel name printed above). On a GPU the gap
# is wider still: the naive version is limited by HBM bandwidth, the fused one by arithmetic.

# %% [markdown] id="nb10-025"
# ## 4. Generating with a KV cache
#
# A language model generates one token at a time. The simple loop of notebook 01 feeds the model the
# whole sequence at every step and keeps only the last position's logits. At step $t$ that recomputes the
# keys and values of all $t$ earlier tokens, which are exactly what they were one step before: a causal
# model's keys and values at position $j$ depend only on tokens $\le j$, and those never change. Over
# $n$ generated tokens the work adds up to $O(n^2)$ token-passes through the model.
#
# A **KV cache** keeps, for every layer, the keys and values computed so far. Each step then feeds only
# the *new* token: its query, key and value are computed, the key and value are appended to the cache,
# and the new query attends to all cached keys. One token-pass per step.
#
# The cost is memory: per layer, one key and one value vector of width $d_\text{model}$ (all heads
# together) per token,
#
# $$
# \text{cache bytes} = 2 \cdot n_\text{layers} \cdot T \cdot d_\text{model} \cdot \text{bytes per value} \quad (\text{per sequence}),
# $$
#
# which for a 7B-parameter model (32 layers, $d_\text{model} = 4096$) in fp16 at $T = 4096$ is
# $2 \cdot 32 \cdot 4096 \cdot 4096 \cdot 2$ bytes = 2 GiB per sequence: why long contexts are memory-bound
# at inference, and why grouped-query attention shares keys and values between heads.
#
# **The mask when several tokens arrive at once.** The first step feeds the whole prompt (the *prefill*);
# later steps feed one token. When $t$ new queries arrive after $P$ cached tokens, query $i$ sits at
# position $P + i$ and may see keys $0, \dots, P + i$: the causal mask is aligned to the **bottom right** of the
# $t \times (P + t)$ score matrix. (`F.scaled_dot_product_attention(..., is_causal=True)` aligns it to
# the *top left*, which is right only when $P = 0$. Pass an explicit boolean `attn_mask` instead.)
#
# ### Exercise 3: `cached_attention` (1 visible + 2 hidden for the output and the cache + 1 hidden for the first step, several new tokens, large scores, float64, the device and inputs left alone)
#
# `TinyGPT` (in `utils.tiny_gpt`) calls your function from every layer on its cached path: it passes the
# new tokens' queries, keys and values (heads already split), and that layer's cache.

# %% id="nb10-026" nbgrader={"grade": false, "grade_id": "cached_attention", "locked": false, "schema_version": 3, "solution": true, "task": false}
import torch
import torch.nn.functional as F


def cached_attention(q, k, v, cache):
    """Causal attention of t new tokens over everything cached before them, and the updated cache.

    Args:
        q, k: float tensors (B, H, t, d): queries and keys of the t >= 1 new tokens, at positions
            P, ..., P + t - 1, where P is the number of tokens already in the cache.
        v: float tensor (B, H, t, d_v): their values.
        cache: None before the first call (P = 0), else the dict this function returned last time:
            {"k": (B, H, P, d) keys, "v": (B, H, P, d_v) values} of the P earlier tokens.
    Returns:
        (out, new_cache): out is a new tensor (B, H, t, d_v) with q's dtype, on q's device (every tensor it
        makes, the mask included, is made there), in which new token i attends,
        with scale 1/sqrt(d), to the keys of positions 0, ..., P + i (everything cached, and the new
        tokens up to itself), whatever the size of the scores; new_cache is a NEW dict {"k": (B, H, P + t, d), "v": (B, H, P + t, d_v)}, the old
        entries first, then the new ones. When cache is None its tensors may be k and v themselves (or a
        view of them): a cache keeps what it is given. The result equals full causal attention over all P + t
        tokens at the last t positions. q, k, v, the cache dict and its tensors are left unchanged.
    """
    ### BEGIN SOLUTION
    if cache is None:
        keys, values = k, v
    else:
        keys = torch.cat([cache["k"], k], dim=-2)
        values = torch.cat([cache["v"], v], dim=-2)
    t, total = q.shape[-2], keys.shape[-2]
    # Query i is position (total - t) + i: it may see keys 0 .. (total - t) + i. A bottom-right causal mask.
    visible = torch.ones(t, total, dtype=torch.bool, device=q.device).tril(diagonal=total - t)
    out = F.scaled_dot_product_attention(q, keys, values, attn_mask=visible)
    return out, {"k": keys, "v": values}
    ### END SOLUTION


# %% id="nb10-027" nbgrader={"grade": true, "grade_id": "test_cached_attention", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
import torch
import torch.nn.functional as F
from utils import checks, probes

generator = torch.Generator().manual_seed(0)
q, k, v = torch.randn(3, 1, 2, 5, 4, generator=generator).unbind(0)     # B=1, H=2, 5 tokens, d=4
full = F.scaled_dot_product_attention(q, k, v, is_causal=True)

# One token at a time: after each call the cache holds one more token.
cache, rows = None, []
for position in range(5):
    out, cache = cached_attention(q[..., position:position + 1, :], k[..., position:position + 1, :],
                                  v[..., position:position + 1, :], cache)
    checks.assert_tensor(cache["k"], name=f"cache['k'] after token {position}", shape=(1, 2, position + 1, 4),
                         hint="Append the new keys after the cached ones along the token axis (dim=-2).")
    rows.append(out)
checks.assert_close(torch.cat(rows, dim=-2), full, atol=1e-5, name="five cached steps of one token against full causal attention",
                    hint="The single new query attends to every cached key and to its own key.")

# A prefill of 3 tokens, then 2 more in one call: the mask is aligned bottom-right.
out, cache = cached_attention(q[..., :3, :], k[..., :3, :], v[..., :3, :], None)
checks.assert_close(out, full[..., :3, :], atol=1e-5, name="prefill of 3 tokens (empty cache)",
                    hint="Several new tokens are causal among themselves: token i must not see token i + 1.")
out, cache = cached_attention(q[..., 3:, :], k[..., 3:, :], v[..., 3:, :], cache)
checks.assert_close(out, full[..., 3:, :], atol=1e-5, name="2 new tokens after 3 cached",
                    hint="Query i of the new block is position P + i: it sees keys 0 .. P + i. is_causal=True aligns "
                         "the mask top-left, which is wrong once P > 0; build a boolean mask.")

# The cache passed in stays as it was: the grown keys and values go into a new dict.
old = {"k": k[..., :3, :].clone(), "v": v[..., :3, :].clone()}
call = probes.traced_call(cached_attention, q[..., 3:, :], k[..., 3:, :], v[..., 3:, :],
                          {"k": old["k"].clone(), "v": old["v"].clone()})
for key in ("k", "v"):
    checks.assert_close(call.args_after[3][key], old[key], atol=0, rtol=0, name=f"the old cache's {key!r} after the call",
                        hint="Build and return a new dict {'k': torch.cat(...), 'v': torch.cat(...)}; do not store into "
                             "the cache you were given.")
print("cached_attention: visible tests passed")

# %% id="nb10-028" nbgrader={"grade": true, "grade_id": "test_cached_attention_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for cached_attention run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
import torch.nn.functional as F
from utils import checks

generator = torch.Generator().manual_seed(31)
for (B, H, d, d_v), chunks in [((2, 3, 8, 8), (4, 1, 1, 3, 1)), ((1, 1, 5, 3), (1, 1, 1, 1, 1, 1)),
                               ((3, 2, 4, 6), (7,)), ((1, 4, 16, 16), (2, 5, 1))]:
    T = sum(chunks)
    q = torch.randn(B, H, T, d, generator=generator)
    k = torch.randn(B, H, T, d, generator=generator)
    v = torch.randn(B, H, T, d_v, generator=generator)
    full = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    cache, start = None, 0
    for size in chunks:
        part = slice(start, start + size)
        out, cache = cached_attention(q[..., part, :], k[..., part, :], v[..., part, :], cache)
        name = f"cached_attention of tokens {start}..{start + size - 1} after {start} cached (B={B}, H={H}, d={d}, d_v={d_v})"
        checks.assert_close(out, full[..., part, :], atol=2e-5, name=name,
                            hint="Keys: everything cached, then the new ones; new query i sees positions 0 .. P + i.")
        start += size
        checks.assert_close(cache["k"], k[..., :start, :], atol=0, rtol=0, name=f"cache['k'] after {start} tokens",
                            hint="The cache holds the keys as they were passed in, old ones first, none dropped or repeated.")
        checks.assert_close(cache["v"], v[..., :start, :], atol=0, rtol=0, name=f"cache['v'] after {start} tokens")
print("cached_attention: hidden tests passed")
### END HIDDEN TESTS

# %% id="nb10-029" nbgrader={"grade": true, "grade_id": "test_cached_attention_hidden_edges", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for cached_attention's other clauses run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
import torch.nn.functional as F
from utils import checks
from utils import probes

generator = torch.Generator().manual_seed(8)
q, k, v = torch.randn(3, 1, 2, 6, 4, generator=generator).unbind(0)
# The first call: cache None, one token and several.
out, cache = cached_attention(q[..., :1, :], k[..., :1, :], v[..., :1, :], None)
checks.assert_close(out, v[..., :1, :], atol=1e-6, name="cached_attention of the very first token",
                    hint="The first token sees only itself: its output is its own value.")
checks.assert_equal(sorted(cache), ["k", "v"], name="the keys of the returned cache dict")
# Inputs (the old cache included) are left unchanged, and the new cache is a new dict.
old = {"k": k[..., :4, :].clone(), "v": v[..., :4, :].clone()}
traced = probes.traced_call(cached_attention, q[..., 4:, :], k[..., 4:, :], v[..., 4:, :], old)
out, new_cache = traced.result
checks.assert_close(out, F.scaled_dot_product_attention(q, k, v, is_causal=True)[..., 4:, :], atol=2e-5,
                    name="2 new tokens after a cache of 4")
old_after = traced.args_after[3]
checks.assert_equal(sorted(old_after), ["k", "v"], name="the old cache dict after the call",
                    hint="Return a new dict; do not add, remove or replace entries of the one passed in.")
checks.assert_close(old_after["k"], old["k"], atol=0, rtol=0, name="the old cache's keys after the call",
                    hint="torch.cat makes a new tensor; do not write into the cached tensors.")
checks.assert_close(old_after["v"], old["v"], atol=0, rtol=0, name="the old cache's values after the call")
checks.assert_true(not traced.returns_argument, name="cached_attention's new cache",
                   problem="it returned the cache dict it was given.", hint="Build and return a new dict.")

# Large scores: a later key whose score is 4e4 above the allowed ones still gets weight exactly 0 (a mask of -1e4
# added to it is not enough), and exp of scores in the thousands overflows unless the row maximum comes off first.
q = torch.ones(1, 1, 3, 2)
k = torch.tensor([[0.0, 0.0], [1.0, 1.0], [3e4, 3e4]]).view(1, 1, 3, 2)
v = torch.tensor([[1.0], [2.0], [4.0]]).view(1, 1, 3, 1)
expected = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=True).float()
for P in (0, 1):
    cache = None if P == 0 else {"k": k[..., :P, :], "v": v[..., :P, :]}
    out, _ = cached_attention(q[..., P:, :], k[..., P:, :], v[..., P:, :], cache)
    checks.assert_close(out, expected[..., P:, :], atol=1e-5,
                        name=f"{3 - P} new tokens after {P} cached, scores 0, 1.4 and 4e4 (the last key hidden from the "
                             "earlier queries)",
                        hint="Mask with -inf or a boolean mask (never a finite penalty such as -1e4, which a score 4e4 "
                             "overcomes), and take the softmax with the row maximum subtracted (exp(4e4) is inf): "
                             "torch.softmax or F.scaled_dot_product_attention do.")
# float64 in, float64 out, to float64 precision.
q, k, v = torch.randn(3, 2, 2, 5, 3, dtype=torch.float64, generator=generator).unbind(0)
out, cache = cached_attention(q[..., 3:, :], k[..., 3:, :], v[..., 3:, :], {"k": k[..., :3, :], "v": v[..., :3, :]})
checks.assert_tensor(out, name="cached_attention's output for float64 inputs", shape=(2, 2, 2, 3), dtype=torch.float64,
                     hint="Compute in the inputs' dtype; do not convert to float32.")
checks.assert_close(out, F.scaled_dot_product_attention(q, k, v, is_causal=True)[..., 3:, :], atol=1e-12, rtol=1e-12,
                    name="2 float64 tokens after 3 cached, to float64 precision")
# Very negative scores: every allowed key scores -2e9, so a finite mask value such as -1e9 would be the largest
# score of its row and take all the weight. A hidden key gets weight exactly 0 whatever the size of the scores.
q = torch.ones(1, 1, 3, 1)
k = torch.full((1, 1, 3, 1), -2e9)
v = torch.tensor([1.0, 2.0, 4.0]).view(1, 1, 3, 1)
expected = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=True).float()
for P in (0, 1):
    cache = None if P == 0 else {"k": k[..., :P, :], "v": v[..., :P, :]}
    out, _ = cached_attention(q[..., P:, :], k[..., P:, :], v[..., P:, :], cache)
    checks.assert_close(out, expected[..., P:, :], atol=1e-5,
                        name=f"{3 - P} new tokens after {P} cached, every score -2e9",
                        hint="Mask with -inf or a boolean mask: a finite value such as -1e9 is larger than a score of -2e9.")
# bfloat16 in, bfloat16 out: a mask added to the scores is made in q's dtype (or is boolean).
q, k, v = torch.randn(3, 1, 2, 5, 4, generator=generator).to(torch.bfloat16).unbind(0)
out, _ = cached_attention(q[..., 3:, :], k[..., 3:, :], v[..., 3:, :], {"k": k[..., :3, :], "v": v[..., :3, :]})
checks.assert_tensor(out, name="cached_attention's output for bfloat16 inputs", shape=(1, 2, 2, 4), dtype=torch.bfloat16,
                     hint="An additive mask made without dtype= is float32 and turns bfloat16 scores into float32: use "
                          "a boolean mask or masked_fill on the scores.")
checks.assert_close(out.float(), F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=True)[..., 3:, :],
                    atol=5e-2, rtol=5e-2, name="2 bfloat16 tokens after 3 cached")
print("cached_attention: hidden edge tests passed")
# On q's device: the new tokens and the cache on PyTorch's meta device (shapes, no values) stand in for a GPU. A mask
# made without device= meets the meta scores; code that reads values cannot run there and is not judged.
q, k, v = torch.randn(3, 1, 2, 5, 4, generator=generator).unbind(0)
for cache in (None, {"k": k[..., :3, :], "v": v[..., :3, :]}):
    seen = probes.make("utils.meta_device.result_device_on_meta", cached_attention, q[..., 3:, :], k[..., 3:, :], v[..., 3:, :], cache)
    checks.assert_kept_on_meta(seen,
                               name=f"cached_attention of 2 new tokens after {0 if cache is None else 3} cached, on another device than the CPU (the meta device)",
                               hint="Make the mask on q.device (torch.ones(..., dtype=torch.bool, device=q.device)): "
                                    "with q on a GPU, a tensor made without device= is on the CPU.")
    # The same with the values kept (utils.fake_cuda: labelled cuda:0), so an answer that reads values is judged too.
    seen = probes.make("utils.fake_cuda.result_device_on_fake_cuda", cached_attention, q[..., 3:, :], k[..., 3:, :],
                       v[..., 3:, :], cache)
    checks.assert_kept_on_fake_cuda(seen, name=f"cached_attention of 2 new tokens after {0 if cache is None else 3} "
                                               "cached, on a GPU (emulated, the values kept)",
                                    hint="Make the mask on q.device: with q on a GPU, a tensor made without device= is "
                                         "on the CPU.")
### END HIDDEN TESTS

# %% [markdown] id="nb10-030"
# ### Exercise 4: `generate_greedy` (1 visible + 2 hidden for the tokens and one token per step + 1 hidden for edge cases)
#
# Now the loop. `model = TinyGPT(..., attention=cached_attention)` has two ways to be called:
#
# * `logits, _ = model(idx)`: the whole sequence `idx` (B, T) at once, no cache; `logits` is (B, T, V).
# * `logits, caches = model(idx_new, caches)`: `caches` is a list with one entry per layer (`None` for
#   every layer before the first call: `[None] * model.n_layer`); `idx_new` holds the tokens that come
#   after the cached ones; the model returns their logits and the new caches.
#
# Greedy decoding picks the most likely next token each time (`argmax`; on ties, the lowest token id,
# which is what `torch.argmax` returns). Feed the prompt once, then one token per step, and stop as soon as the
# last token is chosen: its logits would never be used, so the model is called `max_new_tokens` times in all
# (the prompt's call gives the first new token). The model's positions are learned and limited:
# `model.block_size` tokens at most, and the whole returned sequence, prompt and new tokens, must fit in them.
# Notebook 13 uses the same cache interface for beam search, where the cache is reordered at every step to follow
# the hypotheses that survive.

# %% id="nb10-031" nbgrader={"grade": false, "grade_id": "generate_greedy", "locked": false, "schema_version": 3, "solution": true, "task": false}
import torch


def generate_greedy(model, idx, max_new_tokens):
    """Greedy decoding with a KV cache: the prompt in one call, then exactly one new token per call.

    Args:
        model: a TinyGPT built with attention=cached_attention (see above); it has n_layer and block_size.
        idx: int64 tensor (B, T), T >= 1: the prompts (every row the same length).
        max_new_tokens: int >= 0.
    Returns:
        A new int64 tensor (B, T + max_new_tokens): the prompt followed by the generated tokens, each the
        argmax of the logits at the last position (ties: the lowest id). The same tokens as running the
        whole sequence through model(idx) at every step. For max_new_tokens >= 1 the model is called
        exactly max_new_tokens times: once on the whole prompt (its last logits give the first new token),
        then once per further token with a (B, 1) input; never after the last token is chosen (its logits
        would go unused). For max_new_tokens = 0 no token is chosen: calling the model on the prompt is
        allowed, not needed. Every call runs with gradients off, the model and all its submodules in eval
        mode (model.eval()); afterwards the model's train/eval mode is the same as before
        (model.train(was_training)), and so is autograd's (torch.no_grad() as a with block).
        idx is left unchanged.
    Raises:
        ValueError: if T + max_new_tokens > model.block_size, before any call: the returned sequence must
        fit in the model's context. T + max_new_tokens = block_size is allowed (the last token is never
        fed back, so the model sees at most block_size - 1 positions then), block_size + 1 raises; a prompt
        longer than block_size raises even with max_new_tokens = 0.
    """
    ### BEGIN SOLUTION
    if idx.shape[1] + max_new_tokens > model.block_size:
        raise ValueError(f"{idx.shape[1]} + {max_new_tokens} tokens exceed the model's block_size {model.block_size}")
    was_training = model.training
    model.eval()
    tokens = [idx]
    with torch.no_grad():
        logits, caches = model(idx, [None] * model.n_layer)        # the prefill: the whole prompt once
        for step in range(max_new_tokens):
            next_token = logits[:, -1, :].argmax(dim=-1, keepdim=True)
            tokens.append(next_token)
            if step + 1 < max_new_tokens:                           # the last token needs no logits
                logits, caches = model(next_token, caches)
    model.train(was_training)
    return torch.cat(tokens, dim=1)
    ### END SOLUTION


# %% id="nb10-032" nbgrader={"grade": true, "grade_id": "test_generate_greedy", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
import torch
from utils import checks
from utils import probes
from utils.tiny_gpt import TinyGPT

config = dict(vocab_size=11, d_model=16, n_head=2, n_layer=2, block_size=16, seed=0)
model = probes.make("utils.tiny_gpt.TinyGPT", attention=cached_attention, **config)   # built where your code runs
prompt = torch.tensor([[1, 2, 3], [4, 5, 6]])
out = generate_greedy(model, prompt, 5)
checks.assert_tensor(out, name="generate_greedy(model, 2 prompts of 3 tokens, 5)", shape=(2, 8), dtype=torch.int64,
                     hint="Return the prompt and the new tokens together: (B, T + max_new_tokens).")
checks.assert_equal(out[:, :3].tolist(), prompt.tolist(), name="the first 3 tokens of the output (the prompt)")

# The same tokens as the slow loop that feeds the whole sequence every step (same seed, same weights).
reference = TinyGPT(**config)
slow = prompt.clone()
with torch.no_grad():
    for _ in range(5):
        logits, _ = reference(slow)
        slow = torch.cat([slow, logits[:, -1].argmax(dim=-1, keepdim=True)], dim=1)
checks.assert_equal(out.tolist(), slow.tolist(), name="generate_greedy against the loop without a cache",
                    hint="Prefill with [None] * model.n_layer, then feed only the token you just chose, with the caches "
                         "the previous call returned.")
fresh = probes.make("utils.tiny_gpt.TinyGPT", attention=cached_attention, **config)
generate_greedy(fresh, prompt, 4)
checks.assert_equal(fresh.calls, [(2, 3), (2, 1), (2, 1), (2, 1)], name="the shapes generate_greedy fed the model",
                    hint="The prompt once, then one (B, 1) token per step; no call after the last token is chosen.")
print("generate_greedy: visible tests passed")

# %% id="nb10-033" nbgrader={"grade": true, "grade_id": "test_generate_greedy_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for generate_greedy run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks
from utils import probes
from utils.tiny_gpt import TinyGPT

for seed, (V, d, h, L, block), prompt, n in [
        (3, (17, 24, 3, 3, 40), [[5, 1, 16, 2]], 20),
        (4, (9, 8, 1, 1, 12), [[0], [8], [3]], 11),
        (5, (13, 16, 4, 2, 30), [[2, 2, 2, 2, 2, 2, 2], [12, 11, 10, 9, 8, 7, 6]], 9)]:
    config = dict(vocab_size=V, d_model=d, n_head=h, n_layer=L, block_size=block, seed=seed)
    reference = TinyGPT(**config)                        # built here, in the judge: the cache-free reference
    ids = torch.tensor(prompt)
    with torch.no_grad():
        for _ in range(n):
            logits, _ = reference(ids)
            ids = torch.cat([ids, logits[:, -1].argmax(dim=-1, keepdim=True)], dim=1)
    model = probes.make("utils.tiny_gpt.TinyGPT", attention=cached_attention, **config)
    out = generate_greedy(model, torch.tensor(prompt), n)
    name = f"generate_greedy(TinyGPT(V={V}, d={d}, heads={h}, layers={L}), prompts {tuple(torch.tensor(prompt).shape)}, {n})"
    checks.assert_tensor(out, name=name, shape=tuple(ids.shape), dtype=torch.int64)
    checks.assert_equal(out.tolist(), ids.tolist(), name=name,
                        hint="Greedy: argmax of the last position's logits. Feed the chosen token with the caches the "
                             "previous call returned; never the whole sequence again.")
    checks.assert_equal(model.calls, [tuple(torch.tensor(prompt).shape)] + [(len(prompt), 1)] * (n - 1),
                        name=f"{name}: the shapes fed to the model",
                        hint="One call on the whole prompt, then one (B, 1) call per further token.")

# Ties: tokens 2k and 2k + 1 share their embedding row, and the head is tied to the embedding, so their
# logits are equal at every step; greedy decoding takes the lower id (torch.argmax's first maximum).
config = dict(vocab_size=10, d_model=16, n_head=2, n_layer=2, block_size=12, seed=6)
reference = TinyGPT(**config)
with torch.no_grad():
    reference.wte.weight[1::2] = reference.wte.weight[0::2]
prompt = torch.tensor([[1, 4, 7], [2, 9, 0]])
ids = prompt
with torch.no_grad():
    for _ in range(6):
        logits, _ = reference(ids)
        ids = torch.cat([ids, logits[:, -1].argmax(dim=-1, keepdim=True)], dim=1)
model = probes.make("utils.tiny_gpt.TinyGPT", attention=cached_attention, **config)
model.load_state_dict(reference.state_dict())
checks.assert_equal(generate_greedy(model, prompt, 6).tolist(), ids.tolist(),
                    name="generate_greedy on a model whose tokens 2k and 2k + 1 always tie",
                    hint="On a tie the lowest token id wins: torch.argmax returns the first maximum; a search "
                         "from the end (or topk) can return the last one.")
print("generate_greedy: hidden tests passed")
### END HIDDEN TESTS

# %% id="nb10-034" nbgrader={"grade": true, "grade_id": "test_generate_greedy_hidden_edges", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for generate_greedy's edge clauses run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks
from utils import probes

model = probes.make("utils.tiny_gpt.TinyGPT", 7, 8, 2, 1, 10, attention=cached_attention, seed=1)
prompt = torch.tensor([[3, 1, 4]])
out = generate_greedy(model, prompt, 0)
checks.assert_equal(out.tolist(), [[3, 1, 4]], name="generate_greedy(..., max_new_tokens=0)",
                    hint="Zero new tokens: return the prompt (a new tensor).")
out = generate_greedy(model, prompt, 7)
checks.assert_tensor(out, name="generate_greedy up to exactly block_size tokens", shape=(1, 10), dtype=torch.int64,
                     hint="3 + 7 = 10 = block_size is allowed: the last chosen token is never fed back.")
checks.assert_error_boundary(ValueError, lambda m: generate_greedy(model, prompt, m), raises=(8, 9), allowed=(7,),
                             name="generate_greedy's max_new_tokens after 3 prompt tokens, block_size 10",
                             hint="Raise exactly when T + max_new_tokens > block_size: 3 + 7 fits, 3 + 8 does not.")
model.train()
checks.assert_raises(ValueError, generate_greedy, model, prompt, 8, name="generate_greedy past block_size (3 + 8 > 10)",
                     hint="Check T + max_new_tokens against model.block_size before generating: the returned sequence "
                          "must fit in block_size (not only the positions the model is fed, which are one fewer).")
# The bound on the prompt alone: a prompt of exactly block_size tokens with no new token is allowed, one longer raises.
out = generate_greedy(model, torch.arange(10)[None] % 7, 0)
checks.assert_equal(out.tolist(), (torch.arange(10)[None] % 7).tolist(), name="generate_greedy(prompt of block_size = 10 tokens, 0)",
                    hint="T + 0 = block_size fits: return the prompt.")
checks.assert_raises(ValueError, generate_greedy, model, torch.arange(11)[None] % 7, 0,
                     name="generate_greedy(prompt of 11 tokens, 0) on a model of block_size 10",
                     hint="T + max_new_tokens > block_size raises, with max_new_tokens = 0 too.")
checks.assert_true(model.training is True, name="the mode of a model in train mode after generate_greedy raised ValueError",
                   problem="the model was left in eval mode.",
                   hint="Check the length before switching to eval mode (or restore the mode in a finally: block).")
model.train()
generate_greedy(model, prompt, 2)
checks.assert_true(model.training is True, name="the model's mode after generate_greedy on a model in train mode",
                   problem="the model was left in eval mode.", hint="Remember model.training and restore it afterwards.")
traced = probes.traced_call(generate_greedy, model, prompt, 3)
checks.assert_equal(traced.args_after[1].tolist(), [[3, 1, 4]], name="the prompt after generate_greedy")
checks.assert_true(not traced.shares_memory, name="generate_greedy's result", problem="it shares memory with the prompt.",
                   hint="Concatenate into a new tensor.")

# A model in eval mode stays in eval mode.
model.eval()
generate_greedy(model, prompt, 2)
checks.assert_true(model.training is False, name="the model's mode after generate_greedy on a model in eval mode",
                   problem="a model in eval mode came back in train mode.",
                   hint="Restore the mode the model had (model.train(was_training)), not always train mode.")
# Every call runs in eval mode with gradients off, whatever mode the model came in.
for starts_training in (True, False):
    model.train(starts_training)
    before = len(model.modes)
    generate_greedy(model, prompt, 3)
    modes = model.modes[before:]
    start = "train" if starts_training else "eval"
    checks.assert_equal([mode["grad_enabled"] for mode in modes], [False] * 3,
                        name=f"gradient recording during generate_greedy's 3 model calls (model in {start} mode)",
                        hint="Run the model calls under torch.no_grad().")
    checks.assert_equal([mode["training"] for mode in modes], [False] * 3,
                        name=f"the module mode during generate_greedy's 3 model calls (model in {start} mode)",
                        hint="Call model.eval() before the first call, and restore the old mode afterwards.")
# No new tokens: the prompt, as a new tensor.
traced = probes.traced_call(generate_greedy, model, prompt, 0)
checks.assert_equal(traced.result.tolist(), [[3, 1, 4]], name="generate_greedy(..., max_new_tokens=0), traced")
checks.assert_true(not traced.returns_argument and not traced.shares_memory,
                   name="generate_greedy's result for max_new_tokens=0",
                   problem="it is the prompt tensor itself, or a view of it.", hint="Return a new tensor (e.g. idx.clone()).")
# Every module runs in eval mode, not only the top one, and every module comes back in its mode.
for starts_training in (True, False):
    model.train(starts_training)
    modules_before = model.modules_in_training()
    before = len(model.modes)
    generate_greedy(model, prompt, 2)
    start = "train" if starts_training else "eval"
    checks.assert_equal([mode["modules_in_training"] for mode in model.modes[before:]], [[], []],
                        name=f"the modules in training mode during generate_greedy's 2 model calls (model in {start} mode)",
                        hint="model.eval() puts every submodule in eval mode; model.training = False changes the top module only.")
    checks.assert_equal(model.modules_in_training(), modules_before,
                        name=f"the modules in training mode after generate_greedy (model in {start} mode)",
                        hint="model.train(was_training) restores every submodule; model.training = was_training the top module only.")
# Autograd is on again after the call when it was on before.
checks.assert_equal(probes.make("utils.recording.grad_mode_after", generate_greedy, model, prompt, 2),
                    {"grad_enabled_after": True}, name="autograd after generate_greedy (it was on before the call)",
                    hint="Turn gradients off with a with torch.no_grad(): block; torch.set_grad_enabled(False) stays in force "
                         "after the function returns.")
print("generate_greedy: hidden edge tests passed")
### END HIDDEN TESTS

# %% [markdown] id="nb10-035"
# ### What the cache buys
#
# Generation time per token with and without the cache, as the sequence grows. Without it, step $t$
# processes $t$ tokens; with it, one. The cache's size is checked against the formula. (A few seconds.)
#
# **Predict before you run.** As the sequence grows from 64 to 504 tokens, what happens to the tokens per second
# without the cache, and with it? At 504 tokens, is the cache's advantage closer to 2 times or to 500 times?
#
# <details><summary>Answer</summary>
#
# Without the cache the rate falls roughly as $1/t$: every step pushes the whole prefix through the weights. With
# it the rate stays nearly flat: one token-pass per step, plus attention over the cached keys, which grows only
# slowly at this size. The advantage at 504 tokens is an order of magnitude (the cell checks more than 3 times),
# far from 504: a one-token call still pays the fixed cost of every layer's kernels and Python overhead, which a
# long call spreads over hundreds of tokens.
# </details>

# %% id="nb10-036"
model = TinyGPT(vocab_size=64, d_model=128, n_head=4, n_layer=4, block_size=512, attention=cached_attention, seed=0).eval()
prompt = torch.randint(0, 64, (1, 8), generator=torch.Generator().manual_seed(0))
checkpoints = [64, 128, 256, 384, 504]
uncached, cached = [], []
with torch.no_grad():
    ids = prompt
    for target in checkpoints:                                   # no cache: the whole sequence every step
        start = time.perf_counter()
        steps = 0
        while ids.shape[1] < target:
            logits, _ = model(ids)
            ids = torch.cat([ids, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
            steps += 1
        uncached.append(steps / (time.perf_counter() - start))
    logits, caches = model(prompt, [None] * model.n_layer)
    length = prompt.shape[1]
    for target in checkpoints:                                   # the cache: one token per step
        start = time.perf_counter()
        steps = 0
        while length < target:
            logits, caches = model(logits[:, -1].argmax(-1, keepdim=True), caches)
            length += 1
            steps += 1
        cached.append(steps / (time.perf_counter() - start))
fig, ax = plt.subplots(figsize=(6, 4))
ax.plot(checkpoints, uncached, "o-", label="no cache: the whole prefix every step")
ax.plot(checkpoints, cached, "s-", label="KV cache: one token per step")
ax.set_xlabel("sequence length reached")
ax.set_ylabel("tokens per second (over the last stretch)")
ax.set_title("TinyGPT, 4 layers, d = 128, CPU" if device.type == "cpu" else "TinyGPT, 4 layers, d = 128")
ax.legend()
plt.show()
print(f"at length {checkpoints[-1]}: {uncached[-1]:.0f} tokens/s without the cache, {cached[-1]:.0f} with it "
      f"({cached[-1] / uncached[-1]:.1f}x)")
claims.claim(f"At length {checkpoints[-1]} the cache generates {cached[-1] / uncached[-1]:.1f} times as many tokens per "
             f"second as the loop without it", holds=cached[-1] > 3 * uncached[-1], why_it_may_not="timings on a busy machine vary")
measured = sum(c["k"].nbytes + c["v"].nbytes for c in caches)
formula = 2 * model.n_layer * length * model.d_model * 4
print(f"cache after {length} tokens: {measured:,} bytes in the tensors; 2 * layers * T * d_model * 4 bytes = {formula:,}")
assert measured == formula


# %% [markdown] id="nb10-037"
# ## 5. What training costs
#
# **FLOPs per token.** A weight matrix $W$ of shape $m \times n$ applied to one token's vector costs
# $m n$ multiply-adds, $2mn$ floating-point operations (FLOPs). Training does that product three times
# per token: once forward ($y = Wx$), and twice backward, once for the gradient with respect to the
# input ($W^\top g$, to pass back to earlier layers) and once for the gradient with respect to the weight
# ($g x^\top$). So every parameter that multiplies an activation costs $2 + 2 + 2 = 6$ FLOPs per token:
# $6N$ for the model, where $N$ counts the weight matrices and the output head, but not the embedding
# lookups (a lookup multiplies nothing) and not biases or LayerNorm gains (a few FLOPs, no products).
#
# Attention adds products that have no parameters: per layer and per token, $q \cdot k$ against $T$ keys
# ($2Td$ FLOPs, $d = d_\text{model}$ summed over heads) and the weighted sum of $T$ values ($2Td$): $4Td$
# forward, times 3 for training. Counting the whole $T \times T$ matrix (no saving for the causal half,
# as the usual convention does),
#
# $$
# C_\text{train} \approx 6N + 12\, n_\text{layers}\, T\, d_\text{model} \quad \text{FLOPs per token}
# $$
#
# (PaLM, Chowdhery et al. 2022, appendix B). For GPT-2 small at $T = 1024$ the attention term is
# $12 \cdot 12 \cdot 1024 \cdot 768 \approx 0.11$ GFLOP per token against $6N \approx 0.74$: about 13 %.
#
# ### Exercise 5: `training_flops_per_token` (1 visible + 1 hidden)

# %% id="nb10-038" nbgrader={"grade": false, "grade_id": "training_flops_per_token", "locked": false, "schema_version": 3, "solution": true, "task": false}
def training_flops_per_token(n_params, n_layer, context_length, d_model):
    """Model FLOPs of one training step (forward and backward), per token.

    Args:
        n_params: int >= 0, the parameters that multiply activations (weight matrices and the output
            head; not embedding lookups, biases or norm gains).
        n_layer: int >= 1, the number of transformer blocks.
        context_length: int >= 1, T, the number of tokens each attends over (the full T x T matrix is
            counted: no saving for the causal half).
        d_model: int >= 1, the model width (summed over heads).
    Returns:
        A Python int: 6 * n_params (2 FLOPs per multiply-add, forward plus two backward products) plus
        12 * n_layer * context_length * d_model (attention's q.k and weighted sum of values, 4 T d
        forward per layer, times 3 with the backward pass).
    """
    ### BEGIN SOLUTION
    return 6 * n_params + 12 * n_layer * context_length * d_model
    ### END SOLUTION


# %% id="nb10-039" nbgrader={"grade": true, "grade_id": "test_training_flops_per_token", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
from utils import checks

checks.assert_equal(training_flops_per_token(1000, 1, 1, 1), 6012, name="training_flops_per_token(1000, 1, 1, 1)",
                    hint="6 per parameter (forward 2, backward 4) plus 12 * layers * T * d_model for attention.")
checks.assert_equal(training_flops_per_token(0, 2, 8, 16), 12 * 2 * 8 * 16, name="training_flops_per_token(0, 2, 8, 16)",
                    hint="Attention alone: q.k and the weighted sum are 2 T d FLOPs each forward, per layer and token; "
                         "the backward pass doubles it.")
print("training_flops_per_token: visible tests passed")

# %% id="nb10-040" nbgrader={"grade": true, "grade_id": "test_training_flops_per_token_hidden", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for training_flops_per_token run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from torch.utils.flop_counter import FlopCounterMode
from utils import checks

# GPT-2 small at T = 1024: 12 layers of width 768, matmul parameters = 12 * (4 + 8) * 768^2 + 50257 * 768.
n = 12 * 12 * 768 ** 2 + 50257 * 768
checks.assert_equal(training_flops_per_token(n, 12, 1024, 768), 6 * n + 113_246_208,
                    name="training_flops_per_token for GPT-2 small at T = 1024",
                    hint="Return an exact Python int: 6 * n_params + 12 * n_layer * T * d_model.")
# (2**53 + 1 and 10**17 + 3: beyond float64's 53-bit mantissa, so a sum that goes through a float is off.)
for args in [(7, 3, 5, 2), (10 ** 9, 32, 4096, 4096), (123, 1, 1, 1), (2 ** 53 + 1, 1, 1, 1), (10 ** 17 + 3, 96, 8192, 12288)]:
    checks.assert_equal(training_flops_per_token(*args), 6 * args[0] + 12 * args[1] * args[2] * args[3],
                        name=f"training_flops_per_token{args}")

# The 6N part, against PyTorch's own FLOP counter on a stack of linear layers (built and run here, in the judge).
layers = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 16))
x = torch.randn(10, 32, requires_grad=True)
with FlopCounterMode(display=False) as counter:
    layers(x).sum().backward()
weights = 32 * 64 + 64 * 16
attention_term = 12 * 1 * 1 * 1          # n_layer = T = d_model = 1: take it off to compare the 6N part
checks.assert_equal(training_flops_per_token(weights, 1, 1, 1) - attention_term, counter.get_total_flops() // 10,
                    name="6 N against torch.utils.flop_counter on two linear layers (10 tokens)",
                    hint="Forward 2 FLOPs per weight; backward 4 (gradient of the input and of the weight).")
print("training_flops_per_token: hidden tests passed")
### END HIDDEN TESTS

# %% [markdown] id="nb10-041"
# ### Checked against PyTorch's FLOP counter
#
# `torch.utils.flop_counter.FlopCounterMode` counts the FLOPs of every matrix product PyTorch runs. The
# cell below counts one training step of `TinyGPT`. PyTorch's counter has no formula registered for the
# CPU's fused attention kernel, so we register its own formulas for the GPU kernels
# (`sdpa_flop`, `sdpa_backward_flop`) for the CPU ones too.
#
# **Predict before you run.** Will the counter find exactly $6N$ FLOPs per token in the products with weights? And
# exactly $12LTd$ in attention?
#
# <details><summary>Answer</summary>
#
# $6N$ exactly: the weight products are the ones the formula counts, one forward and two backward. Attention comes
# out at $14LTd$, not $12LTd$ (both checked by the cell); the paragraph after it says where the extra $2LTd$ comes
# from.
# </details>

# %% id="nb10-042"
from torch.utils import flop_counter

B, T = 4, 64
model = TinyGPT(vocab_size=65, d_model=64, n_head=4, n_layer=2, block_size=T, seed=0)
idx = torch.randint(0, 65, (B, T))


def same_formula_as(gpu_op):
    """PyTorch's registered FLOP formula of a GPU attention kernel, for use with another op."""
    formula = flop_counter.flop_registry[gpu_op]      # already takes tensors (it reads their shapes)
    counted = lambda *args, **kwargs: formula(*args, **kwargs)  # noqa: E731
    counted._get_raw = True                           # tell FlopCounterMode not to wrap it a second time
    return counted


aten = torch.ops.aten
cpu_attention = {
    aten._scaled_dot_product_flash_attention_for_cpu: same_formula_as(aten._scaled_dot_product_flash_attention),
    aten._scaled_dot_product_flash_attention_for_cpu_backward:
        same_formula_as(aten._scaled_dot_product_flash_attention_backward),
}
with flop_counter.FlopCounterMode(display=False, custom_mapping=cpu_attention) as counter:
    logits, _ = model(idx)
    F.cross_entropy(logits.flatten(0, 1), idx.flatten()).backward()
counts = {str(op): n for op, n in counter.get_flop_counts()["Global"].items()}
attention_ops = sum(n for op, n in counts.items() if "attention" in op)
tokens = B * T
N = model.matmul_parameters()
formula = training_flops_per_token(N, model.n_layer, T, model.d_model)
print(f"N (matmul parameters) = {N:,}; {tokens} tokens")
print(f"counted: {counter.get_total_flops() / tokens:,.0f} FLOPs per token, of which matrix products with weights "
      f"{(counter.get_total_flops() - attention_ops) / tokens:,.0f} (6N = {6 * N:,}) and attention {attention_ops / tokens:,.0f}")
print(f"formula: 6N + 12 L T d = {formula:,}; attention term 12 L T d = {12 * model.n_layer * T * model.d_model:,}, "
      f"counted with recomputation 14 L T d = {14 * model.n_layer * T * model.d_model:,}")
weight_flops = (counter.get_total_flops() - attention_ops) / tokens
claims.claim(f"The counter finds {weight_flops:,.0f} FLOPs per token in products with weights, exactly 6N, and "
             f"{attention_ops / tokens:,.0f} in attention, exactly 14 L T d",
             holds=weight_flops == 6 * N and attention_ops == 14 * model.n_layer * T * model.d_model * tokens)

# %% [markdown] id="nb10-043"
# The weight products match $6N$, as predicted. The attention count is $14 L T d$, not $12 L T d$: the fused
# kernel's backward pass *recomputes* the scores instead of storing the $T \times T$ matrix (one extra
# $QK^\top$, $2Td$ per layer and token), and PyTorch's counter counts the FLOPs the kernel really does.
# By convention, **model FLOPs utilisation (MFU)** counts only the FLOPs the model needs, $6N + 12LTd$, so
# that recomputation never makes a run look more efficient; the count including it gives the *hardware*
# FLOPs utilisation (HFU).
#
# ### Memory for training, and MFU
#
# Mixed-precision AdamW training keeps, per parameter: the fp32 weight (4 bytes), its gradient (4),
# and AdamW's two moment estimates (4 + 4): **16 bytes per parameter** before a single activation is
# stored. Activations come on top: Korthikanti et al. (2022) count, in this course's notation,
# $T B d\,(34 + 5\, n_\text{head} T / d)$ bytes per layer for a 16-bit transformer layer (sequence length $T$,
# batch $B$, width $d$, $n_\text{head}$ heads, dropout masks included; the paper writes $sbh(34 + 5as/h)$ with its
# $h$ the width and $a$ the heads), of which the $5\, n_\text{head} T/d$ part is the attention matrices that
# FlashAttention never stores.

# %% id="nb10-044"
gpt2 = dict(params=124_439_808, layers=12, width=768, heads=12, T=1024)
state = 16 * gpt2["params"]
per_layer = gpt2["T"] * 1 * gpt2["width"] * (34 + 5 * gpt2["heads"] * gpt2["T"] / gpt2["width"])
without_scores = gpt2["T"] * gpt2["width"] * 34
print(f"GPT-2 small, {gpt2['params']:,} parameters: weights + gradients + AdamW moments = 16 bytes each = "
      f"{state / 2**30:.2f} GiB")
print(f"activations for one sequence of {gpt2['T']}: {per_layer / 2**20:.1f} MiB per layer, "
      f"{gpt2['layers'] * per_layer / 2**30:.2f} GiB for {gpt2['layers']} layers "
      f"({gpt2['layers'] * without_scores / 2**30:.2f} GiB without the stored attention matrices)")

# Utilisation of a TinyGPT training step on this device: achieved model FLOP/s over the rate this device measures
# on a 1024 x 1024 fp32 product; on a GPU with a datasheet figure, also the MFU proper, over the datasheet peak.
model = TinyGPT(vocab_size=65, d_model=128, n_head=4, n_layer=4, block_size=128, seed=0).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
idx = torch.randint(0, 65, (16, 128), device=device)


def train_step():
    logits, _ = model(idx)
    loss = F.cross_entropy(logits.flatten(0, 1), idx.flatten())
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()


def synchronize():
    if device.type == "cuda":
        torch.cuda.synchronize()


train_step()                                          # warm-up
synchronize()
start = time.perf_counter()
for _ in range(5):
    train_step()
synchronize()
step_seconds = (time.perf_counter() - start) / 5
tokens_per_second = idx.numel() / step_seconds
flops_per_token = training_flops_per_token(model.matmul_parameters(), model.n_layer, 128, model.d_model)
a = torch.randn(1024, 1024, device=device)
a @ a
synchronize()
start = time.perf_counter()
for _ in range(10):
    a @ a
synchronize()
peak = 10 * 2 * 1024 ** 3 / (time.perf_counter() - start)
print(f"\nTinyGPT (4 layers, d = 128) on {device}: {step_seconds * 1e3:.0f} ms per step of {idx.numel():,} tokens, "
      f"{tokens_per_second:,.0f} tokens/s, {flops_per_token * tokens_per_second / 1e9:.2f} GFLOP/s of model FLOPs")
print(f"rate measured on a 1024 x 1024 fp32 product: {peak / 1e9:.1f} GFLOP/s -> model FLOPs over that rate: "
      f"{flops_per_token * tokens_per_second / peak:.0%} (not MFU: its denominator is a measured rate, not the datasheet peak)")
datasheet = run_cost.gpu_peak_flops(torch.cuda.get_device_name(device), torch.float32) if device.type == "cuda" else None
if datasheet:
    print(f"MFU against the datasheet fp32 peak of {datasheet / 1e12:.0f} TFLOP/s: {flops_per_token * tokens_per_second / datasheet:.1%}")

# %% [markdown] id="nb10-045"
# **Which denominator.** MFU as PaLM (Chowdhery et al., 2022) defines it divides the model FLOP/s by the hardware's
# *theoretical* peak, the datasheet figure (989 TFLOP/s of bfloat16 for an H100). On a CPU there is no such figure
# at hand, so the cell divides by a rate it measures, a large fp32 product on this very machine: the share of what
# this machine really reaches on its best case. That share is larger than an MFU would be, since no real product
# reaches the datasheet peak, so the two are not comparable. On a GPU with a datasheet entry the cell prints
# both.
#
# What keeps either below 100 %: everything in a step that is not a large matrix product (LayerNorm,
# GELU, softmax, AdamW's per-parameter updates, which do little arithmetic per byte they move), small
# matrices that cannot keep every core busy, and per-operation overhead. On a CPU a small model can
# reach a good share of the measured rate, because the CPU's peak is modest; the same model on a GPU uses
# a tiny fraction of it, since its matrices are far too small to fill the device. Large GPU training
# runs aim for 40–60 % MFU against the datasheet peak, with the levers seen here: bigger matrices, fused
# kernels (section 3), and less memory traffic.
#
# ## Summary
#
# * Naive attention stores $T \times T$ matrices: memory quadratic in $T$, measured.
# * The **online softmax** folds a row in block by block with a running maximum and sum, rescaling the
#   old sum by $e^{m - m'}$; masked blocks need care.
# * **Tiled attention** carries the same rescaling into the output accumulator: the same result as
#   `F.scaled_dot_product_attention` for any tile size, with memory linear in $T$. Written in Python it
#   is slow; fused into one kernel (FlashAttention) it is fast and small.
# * The **KV cache** turns the $O(n^2)$ token-passes through the weights of generating $n$ tokens into $O(n)$, at
#   the cost of $2 \cdot n_\text{layers} \cdot T \cdot d_\text{model}$ values of memory per sequence. Attention's
#   own work stays $O(n^2)$: each new query still reads every cached key.
# * Training costs about $6N + 12LTd$ FLOPs per token and 16 bytes per parameter of optimizer state
#   before activations; MFU says how much of the machine a run really uses.
