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

# %% [markdown] id="cell-000"
# # 01 · Next-token prediction
#
# Every large language model, from a 2003 feed-forward network to GPT-4, is **pretrained** on one task:
# **given the tokens so far, predict the next one.** (Chat assistants are then trained further, on
# curated conversations and on human preferences; that later stage starts from the pretrained
# next-token predictor and keeps its interface, one token at a time.) This notebook builds the idea
# from the ground up, with counting and a few dozen lines of PyTorch:
#
# 1. **Autoregression.** The chain rule of probability turns "model a whole text" into "predict the next
#    token", and any text supplies its own labels.
# 2. **The loss.** A numerically stable log-softmax and the cross-entropy loss, written by hand.
# 3. **Perplexity**, the standard way to report how good a language model is, and what it means.
# 4. **A bigram model** of a real corpus, by counting, with smoothing, evaluated on held-out text.
# 5. **The zero-layer transformer** (embedding → unembedding) as a PyTorch module you write, the
#    training loop that fits it, and what it learns: exactly the bigram model.
# 6. **Decoding:** greedy choice versus sampling with a temperature, and the generation loop that
#    turns a model into a text generator.
#
# **Time.** About 5 seconds of CPU time for the whole notebook, measured on one core of a busy 2-core machine,
# about what a 2-core laptop takes; no cell takes more than 2 seconds. On a GPU: untimed (nothing here needs
# one).
#
# **How the exercises work.** Each exercise is a function with a docstring that states what goes in and
# what comes out. Replace `raise NotImplementedError()` with your code, then run the test cell below it:
# its messages say what was expected and what came back. When the notebook is graded, further hidden
# tests check the same function on new inputs, so make it correct in general, not just on the examples
# shown. Run the cells in order.

# %% id="cell-001" jupyter={"source_hidden": true} nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
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

# %% id="cell-002"
import math
import re

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F

from utils import claims, corpus, plotting

torch.set_printoptions(precision=4, sci_mode=False)

# %% [markdown] id="cell-003"
# ## 1. A language model predicts the next token
#
# A **language model** assigns a probability to every sequence of tokens $w_1, \dots, w_n$ (for now, a
# token is a word or a character; notebook 02 is about choosing them). Directly modelling
# $P(w_1, \dots, w_n)$ looks hopeless: there are astronomically many sequences. The **chain rule of
# probability** splits it, with no approximation at all, into one prediction per position:
#
# $$
# P(w_1, \dots, w_n) \;=\; \prod_{i=1}^{n} P(w_i \mid w_1, \dots, w_{i-1}) \;=\; \prod_{i=1}^{n} P(w_i \mid w_{<i}).
# $$
#
# So a model that can answer *"what comes next, given everything so far?"* can score any text, and, by
# drawing one token at a time and appending it, generate text. Models used this way are called
# **autoregressive**: their own output becomes part of their next input.
#
# ### Labels for free: self-supervision
#
# Take the sentence *"The city of Warsaw is the capital and largest city of Poland"* and pretend we don't
# know its ending. The input *"The city of Warsaw is the capital and largest city of"* has the expected
# output *"Poland"*, and nobody had to label anything: the text is its own answer key. The same holds at
# every position, so **one sentence of $n$ tokens is $n$ training examples**:

# %% id="cell-004"
sentence = "The city of Warsaw is the capital and largest city of Poland"
words = sentence.split()

# Every prefix of the sentence is a context; the word after it is the label.
# (The first word is predicted from an empty context, which models mark with a <START> token.)
for i in range(len(words)):
    context = " ".join(["<START>"] + words[:i])
    print(f"{context:>62}  ->  {words[i]}")

# %% [markdown] id="cell-005"
# In code, all these pairs come from one **shift by one**: the inputs are the tokens without the last one,
# the targets are the tokens without the first one, and position $i$ of the targets is the token that
# follows position $i$ of the inputs. A transformer computes all $n$ predictions in a single forward pass
# (the causal mask, later in the course, stops position $i$ from peeking at $w_{i+1}, w_{i+2}, \dots$).

# %% id="cell-006"
inputs, targets = words[:-1], words[1:]
for x, y in list(zip(inputs, targets))[:4]:
    print(f"input {x!r:>10}  target {y!r}")
print("...")

# %% [markdown] id="cell-007"
# ### A worked example of the chain rule
#
# Suppose a model gives these probabilities to the first four words (made-up but plausible numbers):
#
# | $i$ | context $w_{<i}$ | next word $w_i$ | $P(w_i \mid w_{<i})$ | $\ln P$ |
# |---|---|---|---|---|
# | 1 | ⟨START⟩ | The | 0.1 | −2.303 |
# | 2 | The | city | 0.05 | −2.996 |
# | 3 | The city | of | 0.5 | −0.693 |
# | 4 | The city of | Warsaw | 0.01 | −4.605 |
#
# The probability of the four words is the product $0.1 \times 0.05 \times 0.5 \times 0.01 = 2.5 \times 10^{-5}$,
# and its logarithm is the sum of the logarithms, $-10.597$. Check both by hand before running the cell.
#
# In practice we **always add log-probabilities** instead of multiplying probabilities: a product of
# thousands of numbers below one underflows to exactly zero, even in float64, while the sum of their
# logarithms is a perfectly ordinary number.

# %% id="cell-008"
p = torch.tensor([0.1, 0.05, 0.5, 0.01], dtype=torch.float64)
print(f"P(The city of Warsaw) = {p.prod().item():.3g}")
print(f"sum of log-probs      = {p.log().sum().item():.4f}   (exp of it: {p.log().sum().exp().item():.3g})")

# A 2000-token text where every token had probability 0.1:
long_text = torch.full((2000,), 0.1, dtype=torch.float64)
print(f"\nproduct of 2000 probabilities: {long_text.prod().item()}   <- underflow: 1e-2000 is not a float64")
print(f"sum of their logs:             {long_text.log().sum().item():.2f}")

# %% [markdown] id="cell-009"
# ## 2. Scoring a prediction: log-softmax and cross-entropy
#
# A neural language model does not output probabilities directly. Its last layer produces a vector of
# **logits** $z \in \mathbb{R}^V$, one unconstrained score per vocabulary entry, and the **softmax** turns
# them into a distribution:
#
# $$
# \operatorname{softmax}(z)_j = \frac{e^{z_j}}{\sum_{k=1}^{V} e^{z_k}},
# \qquad
# \log \operatorname{softmax}(z)_j = z_j - \log \sum_{k=1}^{V} e^{z_k}.
# $$
#
# Adding the same constant to every logit changes nothing: $e^{z_j + c} / \sum_k e^{z_k + c} = e^{z_j}/\sum_k e^{z_k}$.
# Keep this in mind; it will answer a question in section 5.
#
# ### Why "numerically stable"?
#
# Logits of a trained model can be large, and float32 overflows above $e^{88.7}$: `exp(1000.)` is `inf`,
# and `inf - inf` is `nan`. Computing the softmax first and taking the log afterwards is no cure either:
# a probability like $e^{-1000}$ underflows to `0.0`, and $\log 0 = -\infty$, although the right answer
# is simply $-1000$. The **log-sum-exp trick** uses the freedom to shift: for any constant $c$,
#
# $$
# \log \sum_k e^{z_k} = c + \log \sum_k e^{z_k - c}.
# $$
#
# Choosing $c = \max_k z_k$ makes the largest exponent $e^0 = 1$, so nothing overflows and the sum lies
# between $1$ and $V$, so its logarithm is never $\log 0$.
#
# **Worked example.** For $z = (1, 2, 3)$: $c = 3$, the shifted logits are $(-2, -1, 0)$, their exponentials
# $(0.1353, 0.3679, 1)$ sum to $1.5032$, whose log is $0.4076$. So
# $\log\operatorname{softmax}(z) = (-2, -1, 0) - 0.4076 = (-2.4076, -1.4076, -0.4076)$, i.e. probabilities
# $(0.090, 0.245, 0.665)$.
#
# **Predict before you run.** What is $\log\operatorname{softmax}$ of the logits $(7, 7, 7, 7)$? And of
# $(1007, 1007, 1007, 1007)$? What would the naive formula $z_j - \log\sum_k e^{z_k}$ give for the second
# in float32?
#
# <details><summary>Answer</summary>
#
# Both are $(-\ln 4, -\ln 4, -\ln 4, -\ln 4) = (-1.386, \dots)$: equal logits give the uniform distribution
# over 4 tokens, and adding 1000 to every logit changes nothing. The naive formula computes $e^{1007} = \infty$,
# so every entry becomes $1007 - \infty = -\infty$. The shifted version computes $e^0 = 1$ four times.
#
# </details>

# %% id="cell-010"
z = torch.tensor([1000.0, 0.0])
print("naive  z - log(sum(exp(z))):", z - z.exp().sum().log())      # exp(1000) = inf
print("log(softmax(z)):            ", torch.softmax(z, dim=0).log())  # e^-1000 underflows to 0
print("what we want:               ", torch.tensor([0.0, -1000.0]))

# %% [markdown] id="cell-011"
# ### Exercise 1: `log_softmax` (1 + 2 + 1 points)
#
# *Points: 1 visible, 2 hidden (batched, 1-D and square inputs, rows far apart, huge logits, float64), 1 hidden (edge cases: a single vocabulary entry, -inf logits, the input left unchanged, gradients).*
#
# Write a numerically stable log-softmax over the **last** dimension, for input of any shape
# `(..., V)`: every row (every slice along the last dimension) is normalised separately. Use elementary
# operations (`max`, `exp`, `sum`, `log`); calling `torch.log_softmax` would pass the tests but teach you
# nothing.
#
# Two details that catch many people: the maximum must be taken **per row**, not over the whole tensor
# (why? think of one row near $+900$ and another near $-900$), and the row maxima must still be lined up
# as a column, shape `(..., 1)`, so that each one is subtracted from its own row. (A square input is where
# a misaligned maximum goes unnoticed by the shapes and silently gives wrong numbers.)

# %% id="a0fe971c" nbgrader={"grade": false, "grade_id": "log_softmax", "locked": false, "schema_version": 3, "solution": true, "task": false}
import torch


def log_softmax(logits):
    """Numerically stable log-softmax over the last dimension.

    Args:
        logits: floating tensor of shape (..., V), V >= 1, unnormalised scores. Entries may be -inf
            (a token ruled out) as long as every row has at least one finite entry.
    Returns:
        A new tensor (the input is not modified) of the same shape and dtype, with
        out[..., j] = logits[..., j] - log(sum_k exp(logits[..., k])),
        so that out.exp().sum(dim=-1) is 1 for every row. Exact even for logits like +-1000 (no inf or
        nan from overflow); -inf entries give -inf; differentiable (torch operations only).
    """
    ### BEGIN SOLUTION
    # Shifting a row by a constant leaves its softmax unchanged; shifting by the row maximum makes
    # the largest exponent exp(0) = 1, so nothing overflows and the sum is >= 1 (no log 0).
    shifted = logits - logits.max(dim=-1, keepdim=True).values
    return shifted - shifted.exp().sum(dim=-1, keepdim=True).log()
    ### END SOLUTION


# %% id="cell-013" nbgrader={"grade": true, "grade_id": "test_log_softmax", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
import math

import torch
from utils import checks, probes

# The worked example: z = (1, 2, 3).
out = log_softmax(torch.tensor([[1.0, 2.0, 3.0]]))
checks.assert_tensor(out, name="log_softmax([[1, 2, 3]])", shape=(1, 3), dtype="floating",
                     hint="The output has the same shape as the input.")
lse = 3 + math.log(1 + math.exp(-1) + math.exp(-2))  # log(e^1 + e^2 + e^3) = 3.4076
checks.assert_close(out, torch.tensor([[1 - lse, 2 - lse, 3 - lse]]), name="log_softmax([[1, 2, 3]])",
                    hint="log_softmax(z)_j = z_j - log(sum_k exp(z_k)), taken along the last dimension.")
checks.assert_close(out.exp().sum(), 1.0, name="exp(log_softmax([[1, 2, 3]])).sum()",
                    hint="The probabilities of one row must sum to 1.")

# Huge logits, and two rows of very different size: the shift must be per row.
out = log_softmax(torch.tensor([[1000.0, 0.0], [-1000.0, -1000.0]]))
checks.assert_close(out, torch.tensor([[0.0, -1000.0], [-math.log(2), -math.log(2)]]),
                    name="log_softmax([[1000, 0], [-1000, -1000]])",
                    hint="Subtract each row's own maximum (keepdim=True) before exp, and never take the "
                         "log of a probability that has already underflowed to 0.")

# The caller's logits stay as they were: the shift goes into a new tensor.
z = torch.tensor([[1000.0, 0.0], [3.0, -1.0]])
call = probes.traced_call(log_softmax, z.clone())
checks.assert_close(call.args_after[0], z, atol=0, rtol=0, name="log_softmax's input after the call",
                    hint="Compute z - z.max(...) into a new tensor; z -= ... or z.sub_(...) changes the caller's logits.")
print("log_softmax: visible tests passed")

# %% id="9958285f" nbgrader={"grade": true, "grade_id": "test_log_softmax_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for log_softmax run when your notebook is graded.
### BEGIN HIDDEN TESTS
import math

import torch
from utils import checks, probes

g = torch.Generator().manual_seed(101)

# Batched input: normalise along the last dimension only.
x = torch.randn(4, 5, 7, generator=g) * 3
checks.assert_close(log_softmax(x), torch.log_softmax(x, dim=-1), name="log_softmax on shape (4, 5, 7)",
                    hint="Normalise over the last dimension (dim=-1), every row on its own.")

# A 1-D input is a single row.
x = torch.randn(9, generator=g)
checks.assert_close(log_softmax(x), torch.log_softmax(x, dim=-1), name="log_softmax on a 1-D tensor")

# A square matrix: a per-row maximum without keepdim broadcasts along the wrong axis here.
x = torch.randn(6, 6, generator=g) * 5
checks.assert_close(log_softmax(x), torch.log_softmax(x, dim=-1), name="log_softmax on a 6x6 matrix",
                    hint="Line the row maxima up as a column (shape (..., 1)) so each is subtracted from its own row.")

# Rows of very different magnitudes: a single global maximum makes the low row underflow.
x = torch.stack([torch.randn(8, generator=g) + 900.0, torch.randn(8, generator=g) - 900.0])
checks.assert_close(log_softmax(x), torch.log_softmax(x, dim=-1), atol=1e-4, rtol=1e-5,
                    name="log_softmax of rows near +900 and -900",
                    hint="Subtract each row's own maximum, not the maximum of the whole tensor.")

# Huge float32 logits.
x = torch.randn(16, 50, generator=g) * 1000.0
out = log_softmax(x)
checks.assert_tensor(out, name="log_softmax of logits ~ +-1000", shape=(16, 50), dtype=torch.float32)
checks.assert_true(bool(torch.isfinite(out).all()), name="log_softmax of logits ~ +-1000",
                   problem="the result contains inf or nan.",
                   hint="exp of a large logit overflows; shift by the row maximum first.")
checks.assert_close(out, torch.log_softmax(x, dim=-1), atol=1e-3, rtol=1e-5, name="log_softmax of logits ~ +-1000")

# float64 in, float64 out, at float64 precision.
x = torch.randn(5, 11, generator=g, dtype=torch.float64) * 40
out = log_softmax(x)
checks.assert_tensor(out, name="log_softmax of a float64 tensor", shape=(5, 11), dtype=torch.float64,
                     hint="Keep the input's dtype.")
checks.assert_close(out, torch.log_softmax(x, dim=-1), atol=1e-12, rtol=1e-12, name="log_softmax in float64")
print("log_softmax: hidden tests passed")
### END HIDDEN TESTS

# %% id="bec4cfde" nbgrader={"grade": true, "grade_id": "test_log_softmax_hidden_edges", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for log_softmax (edge cases: a single vocabulary entry, -inf logits, the input left unchanged, gradients) run when your notebook is graded.
### BEGIN HIDDEN TESTS
import math

import torch
from utils import checks, probes

g = torch.Generator().manual_seed(101)

# V = 1: the only token has probability 1, log-probability 0.
x = torch.randn(3, 1, generator=g) * 100
checks.assert_close(log_softmax(x), torch.zeros(3, 1), name="log_softmax with a single vocabulary entry")

# -inf entries (tokens ruled out) stay -inf; the rest is normalised among the finite entries.
x = torch.tensor([[0.0, -math.inf, math.log(3.0)], [-math.inf, 2.0, 2.0]], dtype=torch.float64)
expected = torch.tensor([[math.log(0.25), -math.inf, math.log(0.75)], [-math.inf, math.log(0.5), math.log(0.5)]],
                        dtype=torch.float64)
checks.assert_close(log_softmax(x), expected, atol=1e-12, name="log_softmax with -inf entries",
                    hint="A -inf logit has probability 0; the row maximum is a finite entry.")

# The input is left alone (the call runs where your code runs; its arguments come back as they were left).
x = torch.randn(3, 4, generator=g, dtype=torch.float64)
before = x.clone()
call = probes.traced_call(log_softmax, x)
checks.assert_close(call.args_after[0], before, atol=0, rtol=0, name="log_softmax's input after the call",
                    hint="Avoid in-place operations such as -= on the logits.")

# Gradients flow (it will be part of a loss): d/dx sum(w * log_softmax(x)) = w - softmax(x) * sum(w).
x = torch.randn(3, 4, generator=g, dtype=torch.float64, requires_grad=True)
w = torch.randn(3, 4, generator=g, dtype=torch.float64)
got = probes.gradients(log_softmax, x, grad_output=w)
checks.assert_true(got["inputs"][0] is not None, name="gradient of log_softmax",
                   problem="no gradient reached the logits.",
                   hint="Build the result from differentiable torch operations (no .item(), no NumPy).")
p = torch.softmax(x.detach(), dim=-1)
checks.assert_close(got["inputs"][0], w - p * w.sum(dim=-1, keepdim=True), atol=1e-10, rtol=1e-8,
                    name="gradient of log_softmax")

# V = 1 is differentiable too: the output is always 0, so the gradient is exactly 0 (not missing).
x = torch.randn(3, 1, generator=g, dtype=torch.float64, requires_grad=True)
got = probes.gradients(log_softmax, x, grad_output=torch.randn(3, 1, generator=g, dtype=torch.float64))
checks.assert_true(got["inputs"][0] is not None, name="gradient of log_softmax with a single vocabulary entry",
                   problem="no gradient reached the logits: the result was built without them (e.g. torch.zeros_like).",
                   hint="Let the general formula handle V = 1; it gives 0 and stays connected to the logits.")
checks.assert_close(got["inputs"][0], torch.zeros(3, 1, dtype=torch.float64), atol=1e-12,
                    name="gradient of log_softmax with a single vocabulary entry")
print("log_softmax: hidden tests (edge cases) passed")
### END HIDDEN TESTS

# %% [markdown] id="cell-015"
# ### Cross-entropy: the loss of next-token prediction
#
# For one prediction with logits $z$ and the token $y$ that actually came next, the loss is the
# **negative log-likelihood** $-\log \operatorname{softmax}(z)_y$: zero if the model gave $y$ probability 1,
# large if it thought $y$ unlikely. It is the cross-entropy $H(q, p) = -\sum_j q_j \log p_j$ between the
# one-hot "truth" $q$ and the model's distribution $p$, since only the $j = y$ term survives. Over a batch
# of $N$ predictions we average:
#
# $$
# \mathcal{L} \;=\; -\frac{1}{N} \sum_{i=1}^{N} \log \operatorname{softmax}(z_i)_{y_i}
# \;=\; \frac{1}{N} \sum_{i=1}^{N} \Big( \log \sum_k e^{z_{i,k}} - z_{i, y_i} \Big).
# $$
#
# By the chain rule of section 1, minimising this average over the positions of a text is the same as
# maximising the probability the model gives to the whole text: **training with cross-entropy is
# maximum-likelihood estimation.**
#
# **Worked example.** Two predictions (token ids count from 0). Row 0 has logits $(\ln 1, \ln 2, \ln 1)$,
# i.e. probabilities $(\tfrac14, \tfrac12, \tfrac14)$, and target $y_0 = 1$; row 1 has logits
# $(\ln 2, \ln 1, \ln 1)$, probabilities $(\tfrac12, \tfrac14, \tfrac14)$, and target $y_1 = 2$. The losses are
# $-\ln \tfrac12 = 0.693$ and $-\ln \tfrac14 = 1.386$; their mean is $1.040$.
#
# **Predict before you run.** A common slip is to pick the target column for *all* rows at once,
# `log_probs[:, targets]`. What shape does that have here, and what "loss" does its mean give?
#
# <details><summary>Answer</summary>
#
# Shape $(2, 2)$: every row's log-probability of *every* target, here $\ln\tfrac12, \ln\tfrac14$ (row 0, columns 1
# and 2) and $\ln\tfrac14, \ln\tfrac14$ (row 1). Minus their mean is $(0.693 + 3 \times 1.386)/4 = 1.213$, not
# $1.040$. It agrees with the right answer only when all rows are equal or all targets are, which is why
# the tests below use neither.
#
# </details>
#
# A useful sanity check: a model that knows nothing (all logits equal) has loss exactly $\ln V$. At the
# start of training, your loss should be close to that.
#
# ### Exercise 2: `cross_entropy` (1 + 2 + 1 points)
#
# *Points: 1 visible, 2 hidden (random logits and targets of several sizes, targets at both ends, huge logits), 1 hidden (edge cases: a single vocabulary entry, float64 kept, gradients).*
#
# Compute the mean cross-entropy from logits and integer targets. Use your `log_softmax` (that is where
# the stability comes from). Then you need exactly one number per row: row $i$'s entry in column
# `targets[i]`. Indexing a matrix with two index tensors of the same length pairs them up position by
# position (first row index with first column index, and so on); think about which two you need.
# Return a 0-d tensor built from torch operations only, so that gradients flow through it.

# %% id="b2e93e3b" nbgrader={"grade": false, "grade_id": "cross_entropy", "locked": false, "schema_version": 3, "solution": true, "task": false}
import torch


def cross_entropy(logits, targets):
    """Mean cross-entropy (negative log-likelihood, in nats) of the targets under softmax(logits).

    Args:
        logits: floating tensor of shape (N, V), N >= 1; row i scores the V candidates for prediction i.
        targets: int64 tensor of shape (N,); targets[i] in [0, V) is the token that actually came next.
    Returns:
        0-d tensor with the dtype of logits: -(1/N) * sum_i log softmax(logits[i])[targets[i]].
        Each row uses its own target only. Differentiable (torch operations only) and exact for logits
        as large as +-1000. The inputs are not modified.
    """
    ### BEGIN SOLUTION
    log_probs = log_softmax(logits)                                  # (N, V), stable
    rows = torch.arange(logits.shape[0], device=logits.device)
    return -log_probs[rows, targets].mean()                          # the target's log-prob, per row
    ### END SOLUTION


# %% id="7e0b1998" nbgrader={"grade": true, "grade_id": "test_cross_entropy", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
import math

import torch
from utils import checks

# The worked example: two different rows with different targets.
logits = torch.log(torch.tensor([[1.0, 2.0, 1.0], [2.0, 1.0, 1.0]]))   # p = (1/4, 1/2, 1/4) and (1/2, 1/4, 1/4)
loss = cross_entropy(logits, torch.tensor([1, 2]))
checks.assert_tensor(loss, name="cross_entropy(worked example)", shape=(), dtype="floating",
                     hint="Return a 0-d tensor: the mean over the N predictions.")
checks.assert_close(loss, (math.log(2) + math.log(4)) / 2, name="cross_entropy(worked example)",
                    hint="Row 0 has target 1 (probability 1/2), row 1 target 2 (probability 1/4): one entry per row, "
                         "the one in that row's own target column, then average -log p. (log_probs[:, targets] "
                         "takes every target from every row and gives 1.213.)")

# Three different rows, three different targets: p(target) = 0.7, 0.2 and 0.5.
probs = torch.tensor([[0.7, 0.1, 0.2], [0.2, 0.3, 0.5], [0.5, 0.4, 0.1]])
loss = cross_entropy(torch.log(probs), torch.tensor([0, 2, 0]))
checks.assert_close(loss, -(math.log(0.7) + math.log(0.5) + math.log(0.5)) / 3,
                    name="cross_entropy of three rows with targets [0, 2, 0]",
                    hint="Row i uses column targets[i] (counting from 0) of row i only.")

# A model that knows nothing: all logits equal, loss ln V.
loss = cross_entropy(torch.zeros(3, 5), torch.tensor([0, 4, 2]))
checks.assert_close(loss, math.log(5), name="cross_entropy(all-zero logits, V = 5)",
                    hint="With equal logits every token has probability 1/V.")

# Huge logits: row 0 is right with certainty (loss 0), row 1 is wrong by 1000 (loss 1000).
loss = cross_entropy(torch.tensor([[1000.0, 0.0], [0.0, 1000.0]]), torch.tensor([0, 0]))
checks.assert_close(loss, 500.0, name="cross_entropy([[1000, 0], [0, 1000]], targets [0, 0])",
                    hint="Use the stable log_softmax; the naive formula gives inf or nan here.")
print("cross_entropy: visible tests passed")

# %% id="b7e756e9" nbgrader={"grade": true, "grade_id": "test_cross_entropy_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for cross_entropy run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
import torch.nn.functional as F
from utils import checks, probes

g = torch.Generator().manual_seed(202)

for n, v, scale in [(37, 11, 3.0), (5, 200, 1.0), (64, 3, 1000.0), (1, 7, 2.0)]:
    logits = torch.randn(n, v, generator=g) * scale
    targets = torch.randint(0, v, (n,), generator=g)
    loss = cross_entropy(logits, targets)
    name = f"cross_entropy on random logits, N={n}, V={v}, scale {scale:g}"
    checks.assert_tensor(loss, name=name, shape=(), dtype="floating", hint="Return a 0-d tensor (the mean).")
    checks.assert_close(loss, F.cross_entropy(logits, targets), name=name, atol=1e-5, rtol=1e-4,
                        hint="Average, over the rows, minus the log-probability of each row's own target.")

# Targets at both ends of the vocabulary (catches off-by-one indexing).
logits = torch.randn(6, 4, generator=g)
targets = torch.tensor([0, 3, 3, 0, 1, 2])
checks.assert_close(cross_entropy(logits, targets), F.cross_entropy(logits, targets),
                    name="cross_entropy with targets 0 and V-1",
                    hint="Row i uses column targets[i] exactly (targets count from 0).")

# Values written out by hand: losses 1000 (row 0) and 2000 (row 1), mean 1500.
logits = torch.tensor([[1000.0, -1000.0, 0.0], [-1000.0, 1000.0, 0.0]])
checks.assert_close(cross_entropy(logits, torch.tensor([2, 0])), 1500.0, name="cross_entropy of +-1000 logits",
                    hint="Shift each row by its maximum; don't take the log of an underflowed softmax.")
print("cross_entropy: hidden tests passed")
### END HIDDEN TESTS

# %% id="632108f6" nbgrader={"grade": true, "grade_id": "test_cross_entropy_hidden_edges", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for cross_entropy (edge cases: a single vocabulary entry, float64 kept, gradients) run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
import torch.nn.functional as F
from utils import checks, probes

g = torch.Generator().manual_seed(202)

# V = 1: a single possible token, loss 0.
logits = torch.randn(4, 1, generator=g) * 50
checks.assert_close(cross_entropy(logits, torch.zeros(4, dtype=torch.long)), 0.0,
                    name="cross_entropy with a single vocabulary entry")
# ... also in float64, where the loss keeps the dtype and stays differentiable (gradient exactly 0).
logits = torch.randn(3, 1, generator=g, dtype=torch.float64, requires_grad=True) * 50
loss = cross_entropy(logits.detach(), torch.zeros(3, dtype=torch.long))
checks.assert_tensor(loss, name="cross_entropy with a single vocabulary entry in float64", shape=(), dtype=torch.float64,
                     hint="V = 1 needs no special case: the general formula gives 0 in the dtype of the logits.")
got = probes.gradients(cross_entropy, logits.detach().requires_grad_(), torch.zeros(3, dtype=torch.long))
checks.assert_true(got["inputs"][0] is not None, name="gradient of cross_entropy with a single vocabulary entry",
                   problem="no gradient reached the logits: the loss was built without them (e.g. torch.tensor(0.0)).")
checks.assert_close(got["inputs"][0], torch.zeros(3, 1, dtype=torch.float64), atol=1e-12,
                    name="gradient of cross_entropy with a single vocabulary entry")

# float64 precision.
logits = torch.randn(20, 9, generator=g, dtype=torch.float64) * 10
targets = torch.randint(0, 9, (20,), generator=g)
loss = cross_entropy(logits, targets)
checks.assert_tensor(loss, name="cross_entropy in float64", shape=(), dtype=torch.float64,
                     hint="Keep the dtype of the logits.")
checks.assert_close(loss, F.cross_entropy(logits, targets), atol=1e-12, rtol=1e-12, name="cross_entropy in float64")

# Gradient: (softmax(z) - onehot(y)) / N, computed where your code runs and sent back.
logits = torch.randn(5, 6, generator=g, dtype=torch.float64, requires_grad=True)
targets = torch.randint(0, 6, (5,), generator=g)
got = probes.gradients(cross_entropy, logits, targets)
checks.assert_true(got["inputs"][0] is not None, name="gradient of cross_entropy",
                   problem="no gradient reached the logits.", hint="Use torch operations only (no .item(), no NumPy).")
expected = (torch.softmax(logits.detach(), dim=1) - F.one_hot(targets, 6).double()) / 5
checks.assert_close(got["inputs"][0], expected, atol=1e-10, rtol=1e-8, name="gradient of cross_entropy")
print("cross_entropy: hidden tests (edge cases) passed")
### END HIDDEN TESTS

# %% [markdown] id="cell-019"
# Your function against PyTorch's, on random logits, and the $\ln V$ sanity check:

# %% id="cell-020"
g = torch.Generator().manual_seed(0)
logits = torch.randn(8, 103, generator=g)
targets = torch.randint(0, 103, (8,), generator=g)
print(f"yours: {cross_entropy(logits, targets).item():.6f}   F.cross_entropy: {F.cross_entropy(logits, targets).item():.6f}")
print(f"all-zero logits: {cross_entropy(torch.zeros(8, 103), targets).item():.4f}   ln 103 = {math.log(103):.4f}")

# %% [markdown] id="cell-021"
# ## 3. Perplexity
#
# Cross-entropy in nats is hard to feel. The number language-model papers report is the **perplexity**:
#
# $$
# \operatorname{PPL} \;=\; \exp\!\Big( -\frac{1}{n} \sum_{i=1}^{n} \log P(w_i \mid w_{<i}) \Big)
# \;=\; \exp(\text{cross-entropy})
# \;=\; \Big( \prod_{i=1}^{n} P(w_i \mid w_{<i}) \Big)^{-1/n}.
# $$
#
# The last form says it plainly: perplexity is **one over the geometric mean** of the probabilities the
# model gave to the tokens that actually occurred.
#
# > **A common mix-up.** Some texts write perplexity as $\frac{1}{n}\sum_{i=1}^{n} \log P(w_i \mid w_{<i})$.
# > That formula is wrong for perplexity: it is the *average log-likelihood* per token. It is never positive, and it is exactly **minus** the cross-entropy; higher is better. Perplexity
# > is the exponential of its negative: $\operatorname{PPL} = \exp\big(-\frac1n\sum_i \log P(w_i \mid w_{<i})\big) \ge 1$,
# > lower is better. The two carry the same information, but they have different signs, different
# > scales, and opposite directions of "good", so mixing them up changes every conclusion you draw.
#
# Why is it called a **branching factor**? If a model spreads its probability uniformly over $k$
# candidates and the right token is always among them, every $P(w_i \mid w_{<i}) = 1/k$ and the perplexity
# is exactly $k$. A perplexity of 14 means the model is, on average, as unsure as if it were choosing
# uniformly among 14 tokens. Some facts that follow from the definition:
#
# * $\operatorname{PPL} \ge 1$, with equality only for a model that gave every actual token probability 1.
# * A uniform model over a vocabulary of $V$ tokens has perplexity exactly $V$: each term is $\log(1/V)$.
#   A model can be *worse* than that: being confidently wrong costs more than knowing nothing.
# * In **bits**: $\log_2 \operatorname{PPL} = \text{cross-entropy} / \ln 2$ is the number of bits per token a
#   compressor driven by the model would need (for characters: *bits per character*). Perplexity itself
#   does not depend on the base, **as long as the exponential and the logarithm use the same base**
#   ($e^{\text{nats}} = 2^{\text{bits}}$).
# * Perplexities are only comparable between models that use the **same tokens**: a character-level and
#   a word-level model predict different things per step (notebook 02).
#
# **Worked examples.** The four Warsaw words of section 1 had mean negative log-likelihood
# $10.597 / 4 = 2.649$ nats, so their perplexity is $e^{2.649} = 14.14$ (check:
# $(2.5 \times 10^{-5})^{-1/4} = 40000^{1/4} = \sqrt{200}$). Tokens with probabilities $\tfrac13$ and
# $\tfrac1{12}$ have product $\tfrac1{36}$, geometric mean $\tfrac16$, so perplexity 6, or $\log_2 6 = 2.585$ bits per
# token. Note it is *not* one over the arithmetic mean probability, $1/\tfrac{5}{24} = 4.8$.
#
# **Predict before you run.** A model gives the first token of a text probability $\tfrac12$ and the second
# probability $0$. What is its perplexity on these two tokens?
#
# <details><summary>Answer</summary>
#
# Infinite. The log-probabilities are $\ln\tfrac12$ and $\ln 0 = -\infty$, their mean is $-\infty$, and
# $e^{+\infty} = \infty$ (equivalently, $(\tfrac12 \cdot 0)^{-1/2} = \infty$). The model declared impossible
# something that happened, and no finite number describes that. Skipping the $-\infty$ entry would report
# 2 and hide the failure; section 4 meets exactly this on real text.
#
# </details>
#
# ### Exercise 3: `perplexity` (1 + 2 + 1 points)
#
# *Points: 1 visible, 2 hidden (random probabilities in float64, uniform models, any shape, contiguous or not), 1 hidden (edge cases: one token, float32 kept, an impossible token gives inf).*
#
# Compute the perplexity from the per-token log-probabilities (natural logarithm) that a model assigned
# to the tokens of a text. Return a 0-d tensor (not a Python number: later code does tensor arithmetic
# with it), and let a $-\infty$ log-probability give an infinite perplexity.

# %% id="4b6e75a9" nbgrader={"grade": false, "grade_id": "perplexity", "locked": false, "schema_version": 3, "solution": true, "task": false}
import torch


def perplexity(log_probs):
    """Perplexity from the log-probabilities a model gave to the tokens that actually occurred.

    Args:
        log_probs: non-empty floating tensor of any shape (usually (n,)); every entry is one token's
            log P(w_i | w_<i) in nats (natural log), so every entry is <= 0. An entry may be -inf
            (the model gave that token probability 0). Contiguous or not (e.g. a transposed tensor).
    Returns:
        0-d tensor (a tensor, not a Python float) with the dtype of log_probs: exp of the mean negative
        log-likelihood over all entries, a number >= 1. If any entry is -inf the result is inf: such
        entries are never skipped. The input is not modified.
    """
    ### BEGIN SOLUTION
    mean_nll = -log_probs.mean()          # the cross-entropy in nats per token (+inf if a token had p = 0)
    return torch.exp(mean_nll)            # exp and log in the same base (e)
    ### END SOLUTION


# %% id="a1f9d9b5" nbgrader={"grade": true, "grade_id": "test_perplexity", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
import math

import torch
from utils import checks

# A uniform model over V = 4 tokens: perplexity 4, returned as a 0-d tensor.
ppl = perplexity(torch.full((10,), -math.log(4.0)))
checks.assert_tensor(ppl, name="perplexity of a uniform model over 4 tokens", shape=(), dtype="floating",
                     hint="Return a 0-d tensor (not a Python float: no .item()).")
checks.assert_close(ppl, 4.0, name="perplexity of a uniform model over 4 tokens",
                    hint="Perplexity = exp(mean negative log-likelihood); uniform over V gives V.")

# The worked example: probabilities 1/3 and 1/12, geometric mean 1/6, perplexity 6.
ppl = perplexity(torch.log(torch.tensor([1 / 3, 1 / 12])))
checks.assert_close(ppl, 6.0, name="perplexity of probabilities (1/3, 1/12)",
                    hint="exp(-(ln(1/3) + ln(1/12)) / 2) = 6. The log-probs are in nats, so use exp, not 2**; "
                         "and average the log-probabilities, not the probabilities.")

# A perfect model: every token had probability 1.
checks.assert_close(perplexity(torch.zeros(5)), 1.0, name="perplexity of a perfect model",
                    hint="log-probabilities of 0 mean probability 1, and perplexity 1.")

# A token the model called impossible: probability 0, log-probability -inf, perplexity inf.
ppl = perplexity(torch.tensor([math.log(0.5), -math.inf]))
checks.assert_close(ppl, math.inf, name="perplexity of probabilities (1/2, 0)",
                    hint="Don't skip -inf entries: a model that gave an actual token probability 0 has "
                         "infinite perplexity.")
print("perplexity: visible tests passed")

# %% id="bdc85f79" nbgrader={"grade": true, "grade_id": "test_perplexity_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for perplexity run when your notebook is graded.
### BEGIN HIDDEN TESTS
import math

import numpy as np
import torch
from utils import checks

rng = np.random.default_rng(303)

# Random probabilities, reference: one over the geometric mean, computed with NumPy. float64 stays float64.
p = rng.uniform(0.01, 1.0, size=50)
expected = float(np.prod(p) ** (-1.0 / len(p)))
ppl = perplexity(torch.tensor(np.log(p), dtype=torch.float64))
checks.assert_tensor(ppl, name="perplexity of 50 float64 log-probabilities", shape=(), dtype=torch.float64,
                     hint="Return a 0-d tensor with the dtype of log_probs.")
checks.assert_close(ppl, expected, rtol=1e-9, atol=1e-9, name="perplexity of 50 random probabilities",
                    hint="Perplexity = (product of the probabilities) ** (-1/n) = exp(-mean(log_probs)).")

# Uniform over a large vocabulary, float32.
checks.assert_close(perplexity(torch.full((300,), -math.log(1000.0))), 1000.0, rtol=1e-4,
                    name="perplexity of a uniform model over 1000 tokens")

# Probabilities 1/2 and 1/8 (1 and 3 bits): 2 bits per token on average, perplexity 4.
checks.assert_close(perplexity(torch.log(torch.tensor([0.5, 0.125]))), 4.0,
                    name="perplexity of probabilities (1/2, 1/8)")

# Any shape: a (batch, time) tensor is the mean over all its tokens.
p = rng.uniform(0.05, 1.0, size=(3, 8))
expected = float(np.exp(-np.log(p).mean()))
checks.assert_close(perplexity(torch.tensor(np.log(p))), expected, rtol=1e-9, atol=1e-9,
                    name="perplexity of a (3, 8) tensor of log-probabilities",
                    hint="Average over every entry, whatever the shape.")
# ... also when its memory is not in reading order: a transposed (8, 3) tensor is still a tensor of any shape.
checks.assert_close(perplexity(torch.tensor(np.log(p)).T), expected, rtol=1e-9, atol=1e-9,
                    name="perplexity of a transposed (non-contiguous) (8, 3) tensor of log-probabilities",
                    hint="log_probs.view(-1) fails on a non-contiguous tensor: use .mean() on the tensor itself, or .reshape(-1).")
print("perplexity: hidden tests passed")
### END HIDDEN TESTS

# %% id="d530ef5c" nbgrader={"grade": true, "grade_id": "test_perplexity_hidden_edges", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for perplexity (edge cases: one token, float32 kept, an impossible token gives inf) run when your notebook is graded.
### BEGIN HIDDEN TESTS
import math

import numpy as np
import torch
from utils import checks

rng = np.random.default_rng(303)

# A single token with probability 0.2: perplexity 5.
ppl = perplexity(torch.tensor([math.log(0.2)]))
checks.assert_tensor(ppl, name="perplexity of one token", shape=(), dtype=torch.float32)
checks.assert_close(ppl, 5.0, name="perplexity of one token with p = 0.2")

# One impossible token among many: infinite, whatever the others are.
p = rng.uniform(0.5, 1.0, size=(4, 5))
log_p = torch.tensor(np.log(p))
log_p[2, 3] = -math.inf
checks.assert_close(perplexity(log_p), math.inf, name="perplexity with one -inf among 20 log-probabilities",
                    hint="Keep -inf entries: they make the mean -inf and the perplexity inf.")
print("perplexity: hidden tests (edge cases) passed")
### END HIDDEN TESTS

# %% [markdown] id="cell-025"
# The Warsaw example in code, and the same number in bits:

# %% id="cell-026"
warsaw_log_probs = torch.log(torch.tensor([0.1, 0.05, 0.5, 0.01]))
ppl = perplexity(warsaw_log_probs)
print(f"perplexity = {ppl.item():.3f}  (sqrt(200) = {math.sqrt(200):.3f})")
print(f"cross-entropy = {-warsaw_log_probs.mean().item():.3f} nats = {math.log2(ppl.item()):.3f} bits per token")
print(f"mean log-probability = {warsaw_log_probs.mean().item():.3f}: minus the cross-entropy, not a perplexity")

# %% [markdown] id="cell-027"
# ## 4. A bigram model of a real corpus
#
# Time for real text. We use character-level tokens (every character is a token) and the prose of the
# Python help pages, which ships with every Python installation, so it works offline and gives the same
# result on every run of the same Python version. (If you are online, `corpus.tiny_shakespeare()` returns
# Karpathy's *Tiny Shakespeare* instead; the numbers change, the story doesn't.) The help pages indent
# code and lists with long runs of spaces; left alone, "another space" would be the likeliest character
# after a space and would dominate everything below, so we collapse each run into one space.
#
# The vocabulary is the set of characters in the text, and each character gets an integer id. We keep the
# last 10% of the text as a **validation** set: the model never sees it while "training", so it tells us
# how well the model does on text it hasn't memorised.

# %% id="cell-028"
raw_text = corpus.python_docs()        # or: corpus.tiny_shakespeare() if you are online
text = re.sub(" +", " ", raw_text)     # collapse each run of spaces (indentation) into a single space
chars = sorted(set(text))              # the vocabulary: every distinct character
V = len(chars)
stoi = {ch: i for i, ch in enumerate(chars)}   # string -> id
itos = {i: ch for ch, i in stoi.items()}       # id -> string


def show(ch):
    # A readable label for a character in prints and plots.
    return {" ": "␣", "\n": "\\n", "\t": "\\t"}.get(ch, ch)


train_text, val_text = corpus.train_validation_split(text, validation_fraction=0.1)
train_ids = torch.tensor([stoi[ch] for ch in train_text])
val_ids = torch.tensor([stoi[ch] for ch in val_text])

print(f"{len(raw_text):,} characters, {len(text):,} after collapsing runs of spaces")
print(f"{len(text):,} characters, vocabulary of V = {V}: {''.join(show(c) for c in chars[:60])} ...")
print(f"train {len(train_ids):,} characters, validation {len(val_ids):,}")
print(repr(train_text[20000:20200]))

# %% [markdown] id="cell-029"
# (We built the vocabulary from the whole text, so that every validation character has an id. Real
# tokenizers fix their vocabulary in advance and handle unknown input by falling back to bytes; that
# is the subject of notebook 02.)
#
# ### Counting is maximum likelihood
#
# The simplest language model looks only at the **previous** token: it approximates
# $P(w_i \mid w_{<i}) \approx P(w_i \mid w_{i-1})$. With $C[a, b]$ = the number of times token $b$ follows
# token $a$ in the training text, the maximum-likelihood estimate is the obvious one:
#
# $$
# \hat P(b \mid a) = \frac{C[a, b]}{\sum_{b'} C[a, b']}.
# $$
#
# Why: the log-likelihood of the training text is $\sum_{a, b} C[a, b] \log P(b \mid a)$, and each row $a$
# is a separate problem "maximise $\sum_b C[a,b] \log p_b$ subject to $\sum_b p_b = 1$", whose solution
# (a Lagrange multiplier, or Gibbs' inequality) is $p_b \propto C[a,b]$.
#
# **Worked example.** In *banana* (vocabulary `a`=0, `b`=1, `n`=2) the pairs are `ba`, `an`, `na`, `an`,
# `na`: so $C[a, n] = 2$, $C[b, a] = 1$, $C[n, a] = 2$ and every other count is 0. A text of $T$ tokens has
# $T - 1$ pairs (the last token has no successor); here $6 - 1 = 5$.
#
# ### Exercise 4: `bigram_counts` (1 + 2 + 1 points)
#
# *Points: 1 visible, 2 hidden (random texts, a vocabulary larger than the ids used), 1 hidden (edge cases: counts beyond 16 bits in int64, empty, one- and two-token texts, the ids left unchanged, the counts on the device of the ids).*
#
# Count the pairs. Rows are the previous token, columns the next token. Avoid a Python loop over the
# 400,000 characters (it works, but takes seconds). Two ideas do it in a couple of lines: the text lined
# up against itself shifted by one position gives all $T - 1$ pairs at once; and a pair $(a, b)$ can be
# written as the single number $aV + b$, so counting pairs is counting how often each of $V^2$ numbers
# occurs, and the $V^2$ counts reshape into the table. Beware: `counts[prev, nxt] += 1` with index tensors
# does **not** count a pair that occurs twice twice. Count in 64-bit integers: a text of 300 equal
# characters has 299 equal pairs, and an 8-bit count would wrap around to 43.

# %% id="f997552f" nbgrader={"grade": false, "grade_id": "bigram_counts", "locked": false, "schema_version": 3, "solution": true, "task": false}
import torch


def bigram_counts(ids, vocab_size):
    """How often each token follows each other token.

    Args:
        ids: int64 tensor of shape (T,), T >= 0, token ids in [0, vocab_size), a text in reading order.
            Not modified.
        vocab_size: the vocabulary size V.
    Returns:
        A new int64 tensor (dtype torch.int64 exactly, whatever the counts) of shape (V, V), on the device
        of ids:
        counts[a, b] = number of positions i with ids[i] == a and ids[i + 1] == b. Row = previous token,
        column = next token; the counts sum to T - 1 (all zeros when T <= 1; no pair wraps around from
        the last token to the first).
    """
    ### BEGIN SOLUTION
    counts = torch.zeros(vocab_size, vocab_size, dtype=torch.long, device=ids.device)
    prev, nxt = ids[:-1], ids[1:]                        # the T - 1 (previous, next) pairs
    # accumulate=True adds up repeated pairs (plain indexed += would count each distinct pair once)
    counts.index_put_((prev, nxt), torch.ones_like(nxt), accumulate=True)
    return counts
    ### END SOLUTION


# %% id="43b56ea8" nbgrader={"grade": true, "grade_id": "test_bigram_counts", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
import torch
from utils import checks

# "banana" with a=0, b=1, n=2: pairs ba, an, na, an, na.
ids = torch.tensor([1, 0, 2, 0, 2, 0])
counts = bigram_counts(ids, 3)
checks.assert_tensor(counts, name="bigram_counts('banana')", shape=(3, 3), dtype=torch.int64,
                     hint="Return a (V, V) tensor of int64 counts (dtype=torch.long).")
checks.assert_equal(counts.tolist(), [[0, 0, 2], [1, 0, 0], [2, 0, 0]], name="bigram_counts('banana')",
                    hint="counts[a, b] counts ids[i] == a followed by ids[i+1] == b: row = previous, "
                         "column = next; 'an' occurs twice.")
checks.assert_equal(int(counts.sum()), 5, name="number of pairs in 'banana'",
                    hint="A text of T tokens has T - 1 pairs; the last token has no successor.")

# 300 equal tokens: 299 equal pairs, more than an 8-bit counter holds.
counts = bigram_counts(torch.zeros(300, dtype=torch.long), 2)
checks.assert_tensor(counts, name="bigram_counts of 300 equal tokens", shape=(2, 2), dtype=torch.int64,
                     hint="Count in int64: a small integer type such as uint8 wraps around after 255.")
checks.assert_equal(counts.tolist(), [[299, 0], [0, 0]], name="bigram_counts of 300 equal tokens",
                    hint="The pair (0, 0) occurs 299 times; every occurrence counts.")
print("bigram_counts: visible tests passed")

# %% id="44dcfb54" nbgrader={"grade": true, "grade_id": "test_bigram_counts_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for bigram_counts run when your notebook is graded.
### BEGIN HIDDEN TESTS
from collections import Counter

import torch
from utils import checks, probes

g = torch.Generator().manual_seed(404)

# A random text; reference: count the pairs with a Counter.
ids = torch.randint(0, 13, (500,), generator=g)
pairs = Counter(zip(ids[:-1].tolist(), ids[1:].tolist()))
expected = [[pairs.get((a, b), 0) for b in range(13)] for a in range(13)]
counts = bigram_counts(ids, 13)
checks.assert_tensor(counts, name="bigram_counts on 500 random ids", shape=(13, 13), dtype=torch.int64)
checks.assert_equal(counts.tolist(), expected, name="bigram_counts on 500 random ids",
                    hint="Row = previous token, column = next token; every one of the T - 1 pairs once.")

# A vocabulary larger than the ids that occur: unused rows and columns stay 0.
ids = torch.tensor([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5])
pairs = Counter(zip(ids[:-1].tolist(), ids[1:].tolist()))
expected = [[pairs.get((a, b), 0) for b in range(20)] for a in range(20)]
counts = bigram_counts(ids, 20)
checks.assert_tensor(counts, name="bigram_counts with vocab_size 20", shape=(20, 20), dtype=torch.int64)
checks.assert_equal(counts.tolist(), expected, name="bigram_counts with vocab_size 20")
print("bigram_counts: hidden tests passed")
### END HIDDEN TESTS

# %% id="79d32e91" nbgrader={"grade": true, "grade_id": "test_bigram_counts_hidden_edges", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for bigram_counts (edge cases: counts beyond 16 bits in int64, empty, one- and two-token texts, the ids left unchanged, the counts on the device of the ids) run when your notebook is graded.
### BEGIN HIDDEN TESTS
from collections import Counter

import torch
from utils import checks, probes

g = torch.Generator().manual_seed(404)

# One pair repeated far beyond 8 (and 16) bits: counted every time, in int64.
counts = bigram_counts(torch.full((70001,), 4, dtype=torch.long), 6)
checks.assert_tensor(counts, name="bigram_counts of 70001 equal tokens", shape=(6, 6), dtype=torch.int64,
                     hint="Count in int64.")
checks.assert_equal(int(counts[4, 4]), 70000, name="bigram_counts of 70001 equal tokens",
                    hint="Repeated pairs must add up (indexed += counts duplicates once), without wrapping around.")
checks.assert_equal(int(counts.sum()), 70000, name="number of pairs among 70001 equal tokens")

# Short texts: no token or one token has no pair, two tokens have one.
checks.assert_equal(bigram_counts(torch.tensor([], dtype=torch.long), 3).tolist(), [[0] * 3] * 3,
                    name="bigram_counts of an empty text")
checks.assert_equal(bigram_counts(torch.tensor([2]), 4).tolist(), [[0] * 4] * 4, name="bigram_counts of one token")
expected = [[0] * 4 for _ in range(4)]
expected[3][0] = 1
checks.assert_equal(bigram_counts(torch.tensor([3, 0]), 4).tolist(), expected, name="bigram_counts of two tokens",
                    hint="The text [3, 0] has exactly one pair: 3 followed by 0, and no pair wrapping around.")

# The ids are left alone.
ids = torch.randint(0, 5, (40,), generator=g)
before = ids.clone()
call = probes.traced_call(bigram_counts, ids, 5)
checks.assert_equal(call.args_after[0].tolist(), before.tolist(), name="the ids after bigram_counts",
                    hint="Don't modify the caller's ids.")

# On the device of ids: ids labelled cuda:0 with their values kept (utils.fake_cuda), since a correct answer may
# read them (a Python loop over ids.tolist()). A table made without device= is on the CPU, and on a GPU adding
# the pairs into it with the ids' index tensors raises.
seen = probes.make("utils.fake_cuda.result_device_on_fake_cuda", bigram_counts, torch.tensor([1, 0, 2, 0, 2, 0]), 3)
checks.assert_kept_on_fake_cuda(seen, name="the device of bigram_counts(ids, 3) for ids on a GPU (emulated, the values kept)",
                                hint="Make the table on ids.device (torch.zeros(..., device=ids.device)).")
print("bigram_counts: hidden tests (edge cases) passed")
### END HIDDEN TESTS

# %% [markdown] id="cell-033"
# The counts of the training text, and the conditional probabilities $\hat P(b \mid a)$ among the twelve
# most frequent characters. Each row is the distribution of the next character after the row's character;
# the full rows (all $V$ columns) sum to 1. Look at the row of `␣`: after a space, `t` is the likeliest
# next character (think *the*, *to*, *that*).

# %% id="cell-034"
train_counts = bigram_counts(train_ids, V)
print(f"{train_counts.sum().item():,} pairs; {(train_counts > 0).sum().item()} of the {V * V:,} possible pairs occur")

frequent = torch.bincount(train_ids, minlength=V).argsort(descending=True)[:12]
row_probs = train_counts.float() / train_counts.sum(dim=1, keepdim=True).clamp(min=1)
labels = [show(itos[int(i)]) for i in frequent]
plotting.heatmap(row_probs[frequent][:, frequent], labels, labels, cmap="Blues",
                 title="Bigram probabilities P(next | previous), 12 most frequent characters",
                 xlabel="next character b", ylabel="previous character a")
plt.show()

# %% [markdown] id="cell-035"
# ### Zero counts and smoothing
#
# Some pairs that appear in the validation text never occur in the training text. The maximum-likelihood
# model gives them probability 0, so one such pair gives a log-probability of $-\infty$ and makes the
# perplexity of the whole validation text **infinite**. The simplest cure is **add-$\alpha$ smoothing**:
# pretend every pair was seen $\alpha$ extra times,
#
# $$
# P_\alpha(b \mid a) = \frac{C[a, b] + \alpha}{\sum_{b'} C[a, b'] + \alpha V},
# $$
#
# which keeps every probability positive and every row summing to 1 (the denominator gained $\alpha$ once
# for each of the $V$ columns). $\alpha = 1$ is *Laplace smoothing*; $\alpha = 0$ gives back the
# maximum-likelihood model. A row with no counts at all becomes uniform.
#
# **Worked example** (the *banana* counts, $\alpha = 1$, $V = 3$): the row of `a` has counts $(0, 0, 2)$, so
# $P_1(\cdot \mid a) = (1, 1, 3)/5$; the row of `b`, counts $(1, 0, 0)$, gives $(2, 1, 1)/4$.
#
# ### Exercise 5: `bigram_log_probs` (1 + 2 + 1 points)
#
# *Points: 1 visible, 2 hidden (random counts with an empty row at several alphas, alpha = 0, rows not columns), 1 hidden (edge cases: a huge alpha, float64 and float32 counts kept and left unchanged).*
#
# Return the smoothed model as a $(V, V)$ tensor of **log**-probabilities, `out[a, b] = log P(b | a)`.
# Normalise each **row** (fixed previous token), add $\alpha$ **before** normalising, and don't modify the
# `counts` you are given, not even when they are already floating point. (A conversion to a dtype a tensor
# already has returns *the same tensor*, not a copy; an in-place update after it changes the caller's
# data.) Float64 counts give float64 log-probabilities.

# %% id="12938f93" nbgrader={"grade": false, "grade_id": "bigram_log_probs", "locked": false, "schema_version": 3, "solution": true, "task": false}
import torch


def bigram_log_probs(counts, alpha):
    """Add-alpha smoothed bigram model, as log-probabilities.

    Args:
        counts: tensor of shape (V, V) with non-negative counts, integer or floating (float32 or
            float64), counts[a, b] as returned by bigram_counts. Never modified (not even when it is
            already floating point).
        alpha: float >= 0, the pseudo-count added to every pair (0 = maximum likelihood).
    Returns:
        A new floating tensor of shape (V, V): float64 if counts is float64, otherwise float32 or
        float64. out[a, b] = log((counts[a, b] + alpha) / (sum_b' counts[a, b'] + alpha * V)),
        so every row is a distribution: out.exp().sum(dim=1) is 1. Entries with counts[a, b] + alpha == 0
        are -inf; for alpha = 0 a row with no counts at all is 0/0 (nan, undefined).
    """
    ### BEGIN SOLUTION
    smoothed = (counts if counts.is_floating_point() else counts.float()) + alpha   # `+` makes a new tensor
    return (smoothed / smoothed.sum(dim=1, keepdim=True)).log()   # normalise each row (previous token)
    ### END SOLUTION


# %% id="9f7c51c7" nbgrader={"grade": true, "grade_id": "test_bigram_log_probs", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
import math

import torch
from utils import checks, probes

banana = torch.tensor([[0, 0, 2], [1, 0, 0], [2, 0, 0]])
out = bigram_log_probs(banana, 1.0)
checks.assert_tensor(out, name="bigram_log_probs(banana counts, alpha=1)", shape=(3, 3), dtype="floating")
expected = torch.log(torch.tensor([[1 / 5, 1 / 5, 3 / 5], [2 / 4, 1 / 4, 1 / 4], [3 / 5, 1 / 5, 1 / 5]]))
checks.assert_close(out, expected, name="bigram_log_probs(banana counts, alpha=1)",
                    hint="Add alpha to every count, then divide each row by its own sum (which gained alpha * V), "
                         "then take the log.")
checks.assert_close(out.exp().sum(dim=1), torch.ones(3), name="row sums of exp(bigram_log_probs)",
                    hint="Each row (a fixed previous token) must be a probability distribution.")

# alpha = 0 is the maximum-likelihood model: log 0 = -inf for unseen pairs.
out = bigram_log_probs(banana, 0.0)
checks.assert_close(out[0], torch.tensor([-math.inf, -math.inf, 0.0]), name="bigram_log_probs(banana, alpha=0)[a]",
                    hint="Without smoothing, P(n | a) = 2/2 = 1 and the unseen pairs get probability 0.")

# The same counts as float32: the caller's tensor must come back untouched.
counts = banana.float()
before = counts.clone()
call = probes.traced_call(bigram_log_probs, counts, 1.0)
checks.assert_close(call.result, expected, name="bigram_log_probs(float32 banana counts, alpha=1)")
checks.assert_close(call.args_after[0], before, atol=0, rtol=0, name="the float32 counts after bigram_log_probs",
                    hint="Converting a float32 tensor to float32 returns the same tensor, not a copy; adding alpha "
                         "in place then changes the caller's counts. Build a new tensor instead.")
print("bigram_log_probs: visible tests passed")

# %% id="af182e69" nbgrader={"grade": true, "grade_id": "test_bigram_log_probs_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for bigram_log_probs run when your notebook is graded.
### BEGIN HIDDEN TESTS
import math

import torch
from utils import checks, probes

g = torch.Generator().manual_seed(505)


def reference(counts, alpha):
    # Written out entry by entry in float64.
    rows = counts.tolist()
    width = len(rows[0])
    out = []
    for row in rows:
        total = sum(row) + alpha * width
        out.append([math.log((c + alpha) / total) if c + alpha > 0 else -math.inf for c in row])
    return torch.tensor(out, dtype=torch.float64)


counts = torch.randint(0, 6, (9, 9), generator=g)
counts[2] = 0                                     # a row that never occurred (its sum, alpha * V, is below 1 at alpha = 0.1)
for alpha in [0.1, 0.37, 1.0, 2.5]:
    out = bigram_log_probs(counts, alpha)
    name = f"bigram_log_probs(random 9x9 counts, alpha={alpha})"
    checks.assert_tensor(out, name=name, shape=(9, 9), dtype="floating")
    checks.assert_close(out.double(), reference(counts, alpha), name=name, atol=1e-5, rtol=1e-5,
                        hint="log((C[a, b] + alpha) / (sum_b' C[a, b'] + alpha * V)); normalise rows, smooth first.")
    checks.assert_close(out.exp().sum(dim=1).double(), torch.ones(9, dtype=torch.float64), atol=1e-5,
                        name=f"row sums of exp({name})")

# alpha = 0 on counts without empty rows: maximum likelihood, -inf where the count is 0.
counts = torch.randint(0, 4, (5, 5), generator=g)
counts[:, 0] += 1
checks.assert_close(bigram_log_probs(counts, 0.0).double(), reference(counts, 0.0), atol=1e-5, rtol=1e-5,
                    name="bigram_log_probs with alpha=0")

# Rows, not columns, are normalised (column sums differ from row sums here).
counts = torch.tensor([[10, 0, 0, 0], [1, 1, 1, 1], [0, 0, 0, 30], [2, 0, 5, 1]])
checks.assert_close(bigram_log_probs(counts, 0.5).double(), reference(counts, 0.5), atol=1e-5, rtol=1e-5,
                    name="bigram_log_probs on uneven rows", hint="Each row (previous token) sums to 1, not each column.")
print("bigram_log_probs: hidden tests passed")
### END HIDDEN TESTS

# %% id="444dcf15" nbgrader={"grade": true, "grade_id": "test_bigram_log_probs_hidden_edges", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for bigram_log_probs (edge cases: a huge alpha, float64 and float32 counts kept and left unchanged) run when your notebook is graded.
### BEGIN HIDDEN TESTS
import math

import torch
from utils import checks, probes

g = torch.Generator().manual_seed(505)


def reference(counts, alpha):
    # Written out entry by entry in float64.
    rows = counts.tolist()
    width = len(rows[0])
    out = []
    for row in rows:
        total = sum(row) + alpha * width
        out.append([math.log((c + alpha) / total) if c + alpha > 0 else -math.inf for c in row])
    return torch.tensor(out, dtype=torch.float64)


# A huge alpha drowns the counts: nearly uniform.
counts = torch.randint(0, 50, (7, 7), generator=g)
checks.assert_close(bigram_log_probs(counts, 1e7).double(), torch.full((7, 7), -math.log(7), dtype=torch.float64),
                    atol=1e-4, name="bigram_log_probs with alpha = 1e7")

# float64 counts: float64 result at float64 precision, counts left unchanged.
counts = torch.rand(6, 6, generator=g, dtype=torch.float64) * 20
before = counts.clone()
call = probes.traced_call(bigram_log_probs, counts, 0.8)
checks.assert_tensor(call.result, name="bigram_log_probs on float64 counts", shape=(6, 6), dtype=torch.float64,
                     hint="float64 counts give a float64 result (don't convert them down to float32).")
checks.assert_close(call.result, reference(counts, 0.8), atol=1e-12, rtol=1e-10, name="bigram_log_probs on float64 counts")
checks.assert_close(call.args_after[0], before, atol=0, rtol=0, name="float64 counts after bigram_log_probs",
                    hint="Work on a new tensor (counts + alpha), not counts += alpha.")

# float32 counts: left unchanged too (a float32 -> float32 conversion is the same tensor).
counts = torch.rand(5, 5, generator=g) * 9
before = counts.clone()
call = probes.traced_call(bigram_log_probs, counts, 0.3)
checks.assert_close(call.result.double(), reference(before, 0.3), atol=1e-5, rtol=1e-5,
                    name="bigram_log_probs on float32 counts")
checks.assert_close(call.args_after[0], before, atol=0, rtol=0, name="float32 counts after bigram_log_probs",
                    hint="counts.float() is counts itself when counts is float32; don't add alpha in place.")

# A tiny alpha on float64 counts: unseen pairs get a tiny but positive probability, whose log is far below
# anything a floor such as clamp(min=1e-30) (log = -69) lets through, and never -inf.
counts = torch.tensor([[3.0, 0.0, 1.0], [0.0, 0.0, 0.0], [0.0, 5.0, 0.0]], dtype=torch.float64)
out = bigram_log_probs(counts, 1e-200)
checks.assert_close(out, reference(counts, 1e-200), atol=1e-9, rtol=1e-9, name="bigram_log_probs(float64 counts, alpha=1e-200)",
                    hint="log((C[a, b] + alpha) / (row total + alpha * V)) exactly: an unseen pair gets log(1e-200 / 4) = -461.9 "
                         "here, not a floor on the probabilities (no clamp before the log).")
print("bigram_log_probs: hidden tests (edge cases) passed")
### END HIDDEN TESTS

# %% [markdown] id="cell-039"
# ### How good is it? Perplexity on held-out text
#
# Under the bigram model, the log-probability of validation character $i+1$ is the entry
# `log_probs[val_ids[i], val_ids[i + 1]]`, so indexing with the two shifted id tensors gives all of them at
# once. We compare with two baselines: the **uniform** model (perplexity exactly $V$) and the **unigram**
# model, which ignores the context and predicts every character with its overall frequency (add-$\alpha$
# smoothed too).
#
# **Predict before you run.** Without smoothing ($\alpha = 0$), what is the bigram model's perplexity on the
# validation text? And as $\alpha$ grows, what happens to the perplexity on the *training* text?
#
# <details><summary>Answer</summary>
#
# Infinite, as soon as one validation pair never occurs in the training text: that pair gets probability 0,
# its log-probability is $-\infty$, and one infinite term makes the mean infinite (the cell counts such pairs).
# On the training text the perplexity only rises with $\alpha$: the unsmoothed table is the one that fits the
# training counts best, and smoothing moves probability away from them.
# </details>

# %% id="cell-040"
def model_perplexity(log_probs, ids):
    # Perplexity of a bigram model (a (V, V) table of log-probabilities) on a text of ids.
    return perplexity(log_probs[ids[:-1], ids[1:]]).item()


unseen = (train_counts[val_ids[:-1], val_ids[1:]] == 0).sum().item()
print(f"{unseen} validation pairs never occur in the training text")
print(f"alpha = 0 (maximum likelihood): train perplexity {model_perplexity(bigram_log_probs(train_counts, 0.0), train_ids):.2f}, "
      f"validation perplexity {model_perplexity(bigram_log_probs(train_counts, 0.0), val_ids)}")

alphas = torch.logspace(-4, 1, 21).tolist()
train_ppl = [model_perplexity(bigram_log_probs(train_counts, a), train_ids) for a in alphas]
val_ppl = [model_perplexity(bigram_log_probs(train_counts, a), val_ids) for a in alphas]
best_alpha = alphas[min(range(len(alphas)), key=lambda k: val_ppl[k])]

fig, ax = plt.subplots(figsize=(6, 3.5))
ax.semilogx(alphas, train_ppl, "o-", label="training text")
ax.semilogx(alphas, val_ppl, "o-", label="validation text")
ax.axvline(best_alpha, color="gray", linestyle="--")
ax.set_xlabel(r"smoothing pseudo-count $\alpha$")
ax.set_ylabel("perplexity (lower is better)")
ax.set_title(rf"Add-$\alpha$ bigram model; best validation $\alpha$ = {best_alpha:.3g}")
ax.legend()
plt.show()
claims.claim(f"Without smoothing the validation perplexity is infinite ({unseen} unseen pairs); more smoothing raises "
             f"the training perplexity at every alpha tried ({train_ppl[0]:.2f} -> {train_ppl[-1]:.2f}), while the "
             f"validation perplexity is lowest inside the range, at alpha = {best_alpha:.3g} ({min(val_ppl):.2f})",
             holds=unseen > 0 and all(a < b for a, b in zip(train_ppl, train_ppl[1:]))
             and alphas[0] < best_alpha < alphas[-1])

# %% [markdown] id="cell-041"
# More smoothing always hurts on the training text (it moves probability away from what was seen there),
# but on the validation text there is a sweet spot: too little smoothing and the unseen pairs are
# punished hard, too much and the model forgets what it learned. Choosing $\alpha$ on validation data is
# *hyperparameter tuning*; a final, honest number would come from a third, untouched test set.
#
# (Don't compare the two curves with each other: the validation text is simply a different stretch of the
# document, here the last help topics in alphabetical order, and it may be easier or harder than the rest.
# Compare **models** on the **same** text.)
#
# Now the comparison with the baselines:

# %% id="cell-042"
bigram = bigram_log_probs(train_counts, best_alpha)

unigram_counts = torch.bincount(train_ids, minlength=V).float() + best_alpha
unigram = (unigram_counts / unigram_counts.sum()).log()          # (V,): the same for every context
results = {
    "uniform (knows nothing)": perplexity(torch.full((len(val_ids),), -math.log(V))).item(),
    "unigram (character frequencies)": perplexity(unigram[val_ids[1:]]).item(),
    "bigram (previous character)": model_perplexity(bigram, val_ids),
}
print(f"{'model':<34}{'val perplexity':>16}{'bits/char':>11}")
for name, ppl in results.items():
    print(f"{name:<34}{ppl:>16.2f}{math.log2(ppl):>11.2f}")
uniform_ppl, unigram_ppl, bigram_ppl = results.values()
claims.claim(f"One previous character divides the perplexity by {unigram_ppl / bigram_ppl:.1f} against the character "
             f"frequencies and by {uniform_ppl / bigram_ppl:.1f} against knowing nothing",
             holds=unigram_ppl / bigram_ppl > 2 and uniform_ppl / bigram_ppl > 5)

# %% [markdown] id="cell-043"
# Conditioning on a single previous character cuts the perplexity several-fold compared with the
# character frequencies alone, and close to an order of magnitude compared with knowing nothing (the
# factors are printed above). Where does the
# model hesitate? The **surprisal** $-\log_2 P(c_i \mid c_{i-1})$ of each character of our sentence, in bits:

# %% id="cell-044"
warsaw = "The city of Warsaw is the capital and largest city of Poland"
ids = torch.tensor([stoi[ch] for ch in warsaw])
bits = -bigram[ids[:-1], ids[1:]] / math.log(2)          # surprisal of characters 2..n

fig, ax = plt.subplots(figsize=(11, 3))
ax.bar(range(len(bits)), bits.numpy())
ax.set_xticks(range(len(bits)), labels=[show(ch) for ch in warsaw[1:]])
ax.set_ylabel("surprisal (bits)")
ax.set_xlabel("character (predicted from the one before it)")
ax.set_title(f"Bigram surprisal per character: mean {bits.mean().item():.2f} bits, "
             f"perplexity {perplexity(bigram[ids[:-1], ids[1:]]).item():.1f}")
plt.show()

pairs = [(warsaw[i] + warsaw[i + 1], b) for i, b in enumerate(bits.tolist())]
print("most surprising:", ", ".join(f"{p!r} {b:.1f}" for p, b in sorted(pairs, key=lambda x: -x[1])[:4]))
print("under one bit:  ", ", ".join(dict.fromkeys(f"{p!r} {b:.2f}" for p, b in pairs if b < 1)))
word_final = [b for (p, b) in pairs if p[1] == " "]
print(f"a space after a word's last letter: {min(word_final):.1f} to {max(word_final):.1f} bits")
cheap = sorted({p for p, b in pairs if b < 1})
claims.claim(f"Only {' and '.join(map(repr, cheap))} cost less than one bit, and every word-final space costs more "
             f"than one ({min(word_final):.1f} bits at least)", holds=cheap == ["Th", "he"] and min(word_final) > 1)

# %% [markdown] id="cell-045"
# The big surprises are the capital letters after a space (the printout names them) and rare pairs such
# as `aw`. Only the `h` after `T` and the `e` after `h` cost less than a bit. Even the space that ends a
# word costs more than a bit (the range is printed above): after a word's last letter a bigram model
# cannot tell whether the word ends, because it does not know which word it is in. A model that remembered
# more than one character would be nearly certain of the `aw` after `Wars` and of the space after
# `Warsaw`. Looking further back is what the rest of this course builds.

# %% [markdown] id="0d1671d0"
# ## 5. The zero-layer transformer is a bigram model
#
# Strip a transformer of all its layers and what is left is the path **token → embedding → unembedding
# → logits**: an embedding matrix $W_E \in \mathbb{R}^{V \times d_\text{model}}$ (row $a$ is the vector of token
# $a$) and an unembedding matrix $W_U \in \mathbb{R}^{d_\text{model} \times V}$:
#
# $$
# \text{logits}(a) = W_E[a]\, W_U \in \mathbb{R}^{V},
# \qquad\text{so all the model's logits form one matrix } M = W_E W_U \in \mathbb{R}^{V \times V}.
# $$
#
# Nothing in this model lets one position see another: there is no attention, and in this stripped-down
# version no position embedding either. (A full transformer adds a learned vector for each position to
# the token's embedding; with it, the prediction could also depend on *where* the token stands, but
# still on no other token.) So the logits at position $t$ are a function of the token $x_t$ alone, and
# whatever its weights, this model *is* a bigram model: row $a$ of $\operatorname{softmax}(M)$ is its
# $P(\cdot \mid a)$. Which $W_E W_U$ minimises the training loss?
#
# The training loss over the $N$ pairs $(x_i, y_i)$ of the text depends on the data only through the counts
# (pair $(a, b)$ contributes $C[a, b]$ identical terms):
#
# $$
# \mathcal{L}(M) = -\frac{1}{N} \sum_{i=1}^{N} \log \operatorname{softmax}(M_{x_i})_{y_i}
# = \sum_{a} \frac{n_a}{N} \Big( -\sum_b \hat P(b \mid a) \log \operatorname{softmax}(M_a)_b \Big),
# \qquad n_a = \sum_b C[a, b].
# $$
#
# Each bracket is the cross-entropy between the empirical next-token distribution $\hat P(\cdot \mid a)$ and
# the model's row, which is smallest exactly when they are equal (Gibbs' inequality). So:
#
# * **Answer.** The loss is minimised when $\operatorname{softmax}(M_a) = \hat P(\cdot \mid a)$ for every row,
#   i.e. $(W_E W_U)_{a b} = \log \hat P(b \mid a) + c_a$: the **bigram log-probabilities up to a constant
#   per row** (the softmax cannot see $c_a$, section 2). The smallest reachable loss is the bigram model's
#   own training cross-entropy.
# * **Zero counts.** Where $C[a, b] = 0$ the ideal logit is $-\infty$: the minimum is approached, never
#   attained, and gradient descent keeps pushing those logits down ever more slowly.
# * **Rank.** $\operatorname{rank}(W_E W_U) \le d_\text{model}$. With $d_\text{model} \ge V$ every $V \times V$
#   matrix is reachable and the bigram optimum can be reached. The free constant per row buys one rank more:
#   with $L = \log \hat P$ invertible, $\det(L + c\,\mathbf{1}^\top) = \det(L)\,(1 + \mathbf{1}^\top L^{-1} c)$, and a
#   choice of $c$ makes it $0$, so some optimum has rank $V - 1$ and $d_\text{model} = V - 1$ reaches it too.
#   With $d_\text{model} < V - 1$ the model must in general settle for the best matrix of rank at most
#   $d_\text{model}$ (a low-rank, "compressed" bigram model), and its loss stays above the bigram's.

# %% [markdown] id="508f7057"
# ### Exercise 6: `ZeroLayerTransformer` (1 + 2 + 1 points)
#
# *Points: 1 visible, 2 hidden (logits and gradients, one model called on several shapes), 1 hidden
# (the parameters and their random initial values).*
#
# Write the model as a PyTorch module: a class derived from `nn.Module` whose `__init__` creates the
# weights and whose `forward` maps token ids to logits. Weights that training should change must be
# registered as **parameters** (wrap the tensor in `nn.Parameter` and assign it to an attribute), otherwise
# `model.parameters()` doesn't list them and no optimizer will ever touch them. Name them exactly `W_E` and
# `W_U` with the shapes in the docstring: the tests load their own weights into your model by name.
#
# The forward pass works on a whole batch of sequences at once: ids of shape $(B, T)$ become logits of
# shape $(B, T, V)$, one row of $V$ scores per position. Looking up row $a$ of $W_E$ for every id is just
# indexing with the id tensor, and the result's last dimension then meets $W_U$ in a matrix product that
# broadcasts over the batch and time dimensions.
#
# **Predict before you run.** Why not start both matrices at zero, the way one might start counts?
#
# <details><summary>Answer</summary>
#
# Then nothing ever moves. The gradient of the loss with respect to $W_U$ is built from the embeddings
# $W_E[x]$, and the gradient with respect to $W_E$ is built from $W_U$: each matrix's gradient is multiplied
# by the other matrix, so with both at zero both gradients are exactly zero, at every step, and the loss
# stays at $\ln V$ forever. Random initial values break this deadlock (and, in models with many units,
# make the units different from one another).
#
# </details>

# %% id="bbfdae12" nbgrader={"grade": false, "grade_id": "ZeroLayerTransformer", "locked": false, "schema_version": 3, "solution": true, "task": false}
import math

import torch
from torch import nn


class ZeroLayerTransformer(nn.Module):
    """A transformer with no layers: token embedding, then unembedding. No bias, no position embedding.

    ZeroLayerTransformer(vocab_size, d_model) has exactly two parameters, in float32:
        W_E: nn.Parameter of shape (vocab_size, d_model); row a is the embedding of token a.
        W_U: nn.Parameter of shape (d_model, vocab_size); the unembedding.
    Both start random (drawn from PyTorch's global generator; never all zero, never one repeated
    value, so that no two tokens start with the same embedding; a good choice: W_E standard normal,
    W_U normal with standard deviation 1 / sqrt(d_model), so that the initial logits have variance
    about 1). Tests replace them with model.load_state_dict({"W_E": ..., "W_U": ...}).

    forward(idx):
        idx: int64 tensor of shape (B, T), token ids in [0, vocab_size).
        Returns the logits, a new float32 tensor of shape (B, T, vocab_size) with
        out[b, t] = W_E[idx[b, t]] @ W_U: unnormalised scores (no softmax), differentiable with respect
        to W_E and W_U. idx is not modified. Calls are independent: nothing is kept from one call to
        the next, and any B, T >= 1 work with the same model.
    """

    def __init__(self, vocab_size, d_model):
        super().__init__()
        ### BEGIN SOLUTION
        self.W_E = nn.Parameter(torch.randn(vocab_size, d_model))
        self.W_U = nn.Parameter(torch.randn(d_model, vocab_size) / math.sqrt(d_model))
        ### END SOLUTION

    def forward(self, idx):
        ### BEGIN SOLUTION
        return self.W_E[idx] @ self.W_U        # (B, T, d_model) @ (d_model, V): every position scores all V tokens
        ### END SOLUTION


# %% id="f376d4cc" nbgrader={"grade": true, "grade_id": "test_ZeroLayerTransformer", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
import torch
from utils import checks, probes

model = ZeroLayerTransformer(5, 3)
params = probes.parameters(model)
checks.assert_equal(sorted(params), ["W_E", "W_U"], name="ZeroLayerTransformer(5, 3): parameter names",
                    hint="Register exactly two parameters, self.W_E and self.W_U, each an nn.Parameter (no bias).")
checks.assert_tensor(params["W_E"], name="ZeroLayerTransformer(5, 3).W_E", shape=(5, 3), dtype=torch.float32,
                     hint="W_E has one row of d_model numbers per token: shape (vocab_size, d_model).")
checks.assert_tensor(params["W_U"], name="ZeroLayerTransformer(5, 3).W_U", shape=(3, 5), dtype=torch.float32,
                     hint="W_U maps a d_model vector to vocab_size logits: shape (d_model, vocab_size).")
checks.assert_true(bool((params["W_E"] != 0).any()) and bool((params["W_U"] != 0).any()),
                   name="ZeroLayerTransformer(5, 3): initial weights", problem="a weight matrix starts all zero.",
                   hint="With zero weights every gradient is zero too (see the question above): start random.")

# Weights you can multiply by hand.
W_E = torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 1.0, 0.0], [0.0, 0.0, 0.0]])
W_U = torch.tensor([[1.0, 2.0, 0.0, 0.0, 0.0], [0.0, 0.0, 3.0, 0.0, 0.0], [0.0, 0.0, 0.0, 4.0, 5.0]])
model.load_state_dict({"W_E": W_E, "W_U": W_U})
logits = model(torch.tensor([[0, 3], [2, 4]]))
checks.assert_tensor(logits, name="logits for ids of shape (2, 2)", shape=(2, 2, 5), dtype=torch.float32,
                     hint="One row of vocab_size logits per position: shape (B, T, vocab_size).")
expected = torch.tensor([[[1.0, 2.0, 0.0, 0.0, 0.0], [1.0, 2.0, 3.0, 0.0, 0.0]],
                         [[0.0, 0.0, 0.0, 4.0, 5.0], [0.0, 0.0, 0.0, 0.0, 0.0]]])
checks.assert_close(logits, expected, name="logits for ids [[0, 3], [2, 4]]",
                    hint="Position (b, t) gets the row W_E[idx[b, t]] times W_U: raw scores, no softmax.")

# Random, not constant: tokens that start with the same embedding get the same gradient and never separate.
fresh = probes.parameters(ZeroLayerTransformer(5, 3))
checks.assert_true(len({tuple(row) for row in fresh["W_E"].tolist()}) == 5,
                   name="ZeroLayerTransformer(5, 3): rows of W_E at initialisation",
                   problem="two tokens start with the same embedding row.",
                   hint="Initialise with random values (e.g. torch.randn(...) * 0.02), not a constant such as ones.")
print("ZeroLayerTransformer: visible tests passed")

# %% id="ce808252" nbgrader={"grade": true, "grade_id": "test_ZeroLayerTransformer_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for ZeroLayerTransformer run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
import torch.nn.functional as F
from utils import checks, probes

g = torch.Generator().manual_seed(707)

for vocab, d, shapes in [(11, 4, [(3, 7), (1, 1), (2, 12), (3, 7)]), (3, 8, [(2, 5), (4, 2)]), (6, 6, [(1, 1), (5, 3)])]:
    name = f"ZeroLayerTransformer({vocab}, {d})"
    model = ZeroLayerTransformer(vocab, d)
    W_E = torch.randn(vocab, d, generator=g)
    W_U = torch.randn(d, vocab, generator=g)
    model.load_state_dict({"W_E": W_E, "W_U": W_U})
    # One model, several batch shapes in a row: nothing may be kept from one call to the next.
    for shape in shapes:
        idx = torch.randint(0, vocab, shape, generator=g)
        logits = model(idx)
        checks.assert_tensor(logits, name=f"{name} on ids of shape {shape}", shape=(*shape, vocab), dtype=torch.float32,
                             hint="One row of vocab_size logits per position, for any (B, T); keep nothing between calls.")
        one_hot = F.one_hot(idx, vocab).float()                     # (B, T, vocab): selecting a row = multiplying by a one-hot
        checks.assert_close(logits, one_hot @ W_E @ W_U, atol=1e-5, rtol=1e-5, name=f"{name} logits on ids of shape {shape}",
                            hint="out[b, t] = W_E[idx[b, t]] @ W_U, no softmax, no bias.")

        # Gradients of sum(G * logits) reach both matrices: dW_E = onehot^T (G W_U^T), dW_U = (onehot W_E)^T G.
        G = torch.randn(*shape, vocab, generator=g)
        got = probes.gradients(model, idx, grad_output=G)
        oh, Gf = one_hot.reshape(-1, vocab), G.reshape(-1, vocab)
        for pname, expected in [("W_E", oh.T @ (Gf @ W_U.T)), ("W_U", (oh @ W_E).T @ Gf)]:
            checks.assert_true(got["params"].get(pname) is not None, name=f"{name}: gradient of {pname}",
                               problem="no gradient reached this parameter.",
                               hint="Compute the logits from the parameters with torch operations.")
            checks.assert_close(got["params"][pname], expected, atol=1e-4, rtol=1e-4,
                                name=f"{name}: gradient of {pname} on ids of shape {shape}")

# Calls are independent: forward keeps nothing on the model (no logits, ids or cache stored as an attribute).
model = ZeroLayerTransformer(7, 3)
report = probes.make("utils.recording.attributes_set_by_calls", model, torch.tensor([[1, 2, 3]]), torch.tensor([[4], [5]]))
checks.assert_equal(report["attributes_set"], [], name="attributes ZeroLayerTransformer(7, 3).forward set on the model in two calls",
                    hint="Return the logits without storing them (or anything else) on self: nothing is kept from one call to the next.")
print("ZeroLayerTransformer: hidden tests passed")
### END HIDDEN TESTS

# %% id="zlt-hidden-init" nbgrader={"grade": true, "grade_id": "test_ZeroLayerTransformer_hidden_init", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for ZeroLayerTransformer (parameters and initial values) run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks, probes

previous = None
for vocab, d in [(11, 4), (3, 8), (6, 6), (6, 6)]:
    name = f"ZeroLayerTransformer({vocab}, {d})"
    model = ZeroLayerTransformer(vocab, d)
    params = probes.parameters(model)
    checks.assert_equal(sorted(params), ["W_E", "W_U"], name=f"{name}: parameter names",
                        hint="Register exactly two parameters, self.W_E and self.W_U, each an nn.Parameter (no bias).")
    checks.assert_tensor(params["W_E"], name=f"{name}.W_E", shape=(vocab, d), dtype=torch.float32)
    checks.assert_tensor(params["W_U"], name=f"{name}.W_U", shape=(d, vocab), dtype=torch.float32)
    checks.assert_equal(probes.num_parameters(model), 2 * vocab * d, name=f"{name}: number of parameters")
    W_E, W_U = params["W_E"].double(), params["W_U"].double()
    # Random values: every entry different from the others (a repeated value, e.g. all ones, gives tokens
    # identical embeddings that gradient descent never tells apart), and a new draw for every model.
    for pname, W in [("W_E", W_E), ("W_U", W_U)]:
        checks.assert_equal(int(W.unique().numel()), W.numel(), name=f"{name}.{pname}: distinct initial values",
                            hint="Start from random values (torch.randn), not zeros or a constant.")
    if previous is not None and previous[0].shape == W_E.shape:
        checks.assert_true(not torch.equal(previous[0], W_E), name=f"two models {name}: initial W_E",
                           problem="two new models start with the same weights.",
                           hint="Draw the initial values from PyTorch's global generator; don't reseed it in __init__.")
    previous = (W_E, W_U)

# The forward pass leaves idx alone and returns a new tensor.
model = ZeroLayerTransformer(5, 3)
idx = torch.tensor([[0, 4, 4], [1, 2, 3]])
call = probes.traced_call(model, idx)
checks.assert_equal(call.args_after[0].tolist(), idx.tolist(), name="idx after model(idx)", hint="Don't modify idx.")
checks.assert_tensor(call.result, name="model(idx) for idx of shape (2, 3)", shape=(2, 3, 5), dtype=torch.float32)
print("ZeroLayerTransformer: hidden init tests passed")
### END HIDDEN TESTS

# %% [markdown] id="71fd6412"
# ### Exercise 7: `train` (1 + 3 + 1 points)
#
# Now the training loop, the same loop (give or take a learning-rate schedule) that trains every model
# in this course. Each step:
#
# 1. **Sample a batch.** Pick `batch_size` random windows of `block_size` consecutive tokens. The inputs
#    are the windows, the targets are the same windows shifted one token to the right (section 1: every
#    position predicts the token after it). A window must leave room for that extra target token.
# 2. **Forward and loss.** The model gives logits of shape $(B, T, V)$; the loss is the mean cross-entropy
#    over all $B \cdot T$ predictions. The cross-entropy you wrote (and PyTorch's) takes one row of logits per
#    prediction, so view the batch as $B \cdot T$ rows.
# 3. **Backward and step.** PyTorch *adds* each backward pass's gradients to what is already stored in
#    `.grad`, so clear the old ones first; then backpropagate and let the optimizer update the weights.
#
# The docstring fixes the order in which random numbers are drawn, so that your run and the grader's
# reference run draw the same batches and the tests can compare losses and weights exactly. For the same
# reason the optimizer is Adam with its default settings, created once before the loop (it keeps running
# averages of the gradients, its state, from step to step).
#
# *Points: 1 visible, 3 hidden (losses and weights, with models that do and don't read the whole
# window, and one that arrives holding gradients), 1 hidden (edge cases: zero steps, return types, the tokens left unchanged).*
#
# **Predict before you run.** The tests below train a $3 \times 3$ table of logits that starts at zero, on the
# text `0 1 2 0 1 2 ...`, with `lr = 0.1`. Adam's very first update moves every weight whose gradient is not
# zero by almost exactly `lr`, against the sign of its gradient. What is the first loss, and which way does
# each of the nine weights move?
#
# <details><summary>Answer</summary>
#
# All logits are 0, so every token has probability $\tfrac13$ and the first loss is $\ln 3$. The
# gradient of the mean cross-entropy for row $a$ is proportional to $\operatorname{softmax} - \text{one-hot}$:
# negative for the token that actually follows $a$, namely $(a + 1) \bmod 3$, positive for the other two. So
# after one step $W[a, (a + 1) \bmod 3] = +0.1$ and the other six weights are $-0.1$, and the second loss is
# $-\ln \frac{e^{0.1}}{e^{0.1} + 2e^{-0.1}} = \ln(1 + 2e^{-0.2})$, whatever batches were drawn (the tests below print
# both losses).
#
# </details>

# %% id="b751e34e" nbgrader={"grade": false, "grade_id": "train", "locked": false, "schema_version": 3, "solution": true, "task": false}
import torch
import torch.nn.functional as F


def train(model, tokens, steps, lr, batch_size, block_size, generator):
    """Train a next-token model with Adam on random windows of a text; return the loss curve.

    Args:
        model: an nn.Module mapping int64 ids of shape (B, T) to logits of shape (B, T, V), contiguous or
            not (your ZeroLayerTransformer, or any other such model, also one whose logits at position t
            depend on every token up to t). Trained in place: its parameters change.
        tokens: int64 tensor of shape (N,), N > block_size, the training text as token ids. Not modified.
        steps: the number of optimizer steps (0: return [] and leave the model unchanged).
        lr: learning rate of torch.optim.Adam over model.parameters() (other settings at their defaults),
            created once, before the first step.
        batch_size, block_size: every step trains on batch_size windows of block_size tokens.
        generator: a torch.Generator, the only source of randomness.
    Every step does, in this order:
        1. starts = torch.randint(N - block_size, (batch_size,), generator=generator);
        2. inputs x[i] = tokens[starts[i] : starts[i] + block_size] and targets y[i] = the window shifted
           one token to the right, tokens[starts[i] + 1 : starts[i] + block_size + 1]; both (batch_size, block_size),
           one window per row, and the model gets x whole, shape (batch_size, block_size);
        3. loss = mean cross-entropy (natural log) of model(x) against y over all batch_size * block_size positions;
        4. clear the old gradients, backpropagate the loss, take one optimizer step.
    Returns:
        a new list of `steps` Python floats (not tensors): step k's loss, computed before step k's update.
    """
    ### BEGIN SOLUTION
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    offsets = torch.arange(block_size)
    losses = []
    for _ in range(steps):
        starts = torch.randint(tokens.shape[0] - block_size, (batch_size,), generator=generator)
        positions = starts[:, None] + offsets                  # (B, T): one window per row
        x, y = tokens[positions], tokens[positions + 1]       # targets: the same windows, shifted by one
        logits = model(x)                                      # (B, T, V)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))  # B*T rows
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses
    ### END SOLUTION


# %% id="6d280a27" nbgrader={"grade": true, "grade_id": "test_train", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
import math

import torch
from utils import checks, probes

# Any module mapping ids (B, T) to logits (B, T, V) can be trained. The simplest is a (V, V) table whose row a
# holds the logits for the token after a: an nn.Embedding(V, V). Here V = 3, all zeros, on the text 0 1 2 0 1 2 ...
tokens = torch.tensor([0, 1, 2] * 10)
table = probes.make("torch.nn.Embedding", 3, 3, state_dict={"weight": torch.zeros(3, 3)})
losses = train(table, tokens, 1, 0.1, 2, 4, torch.Generator().manual_seed(0))
checks.assert_true(type(losses) is list and len(losses) == 1 and all(type(v) is float for v in losses),
                   name="train(..., steps=1)", problem=f"expected a list of 1 Python float, got {losses!r}.",
                   hint="Append loss.item() once per step and return the list.")
checks.assert_close(losses[0], math.log(3), name="first loss (all logits 0, V = 3)",
                    hint="Record the loss of the batch before the update: with all logits equal it is ln V.")
weights = table.state_dict()["weight"]
expected = torch.tensor([[-0.1, 0.1, -0.1], [-0.1, -0.1, 0.1], [0.1, -0.1, -0.1]])
checks.assert_close(weights, expected, atol=1e-4, name="the table after one Adam step with lr = 0.1",
                    hint="Targets are the inputs shifted by one (after a comes (a + 1) % 3, whose logit must go up); "
                         "use torch.optim.Adam(model.parameters(), lr=lr) and call its step().")

# Two steps on a fresh table: the second loss is ln(1 + 2 exp(-0.2)) whatever batches were drawn.
table = probes.make("torch.nn.Embedding", 3, 3, state_dict={"weight": torch.zeros(3, 3)})
losses = train(table, tokens, 2, 0.1, 2, 4, torch.Generator().manual_seed(1))
checks.assert_close(torch.tensor(losses, dtype=torch.float64),
                    torch.tensor([math.log(3), math.log(1 + 2 * math.exp(-0.2))], dtype=torch.float64),
                    atol=1e-4, name="the two losses of train(..., steps=2)",
                    hint="One loss per step, each computed before that step's update.")
print(f"losses: {losses[0]:.4f} = ln 3 = {math.log(3):.4f}, then {losses[1]:.4f} = ln(1 + 2e^-0.2) = {math.log(1 + 2 * math.exp(-0.2)):.4f}")
print("train: visible tests passed")

# %% id="d0ba0557" nbgrader={"grade": true, "grade_id": "test_train_hidden", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for train run when your notebook is graded.
### BEGIN HIDDEN TESTS
import math

import torch
import torch.nn.functional as F
from utils import checks, probes


def reference_train(weight, tokens, steps, lr, batch_size, block_size, seed, prefix_sum=False):
    # The contract, written out independently for a (vocab, vocab) logit table, used as a bigram model
    # or (prefix_sum) as a model whose logits at position t add up the rows of every token up to t.
    table = weight.clone().requires_grad_()
    optimizer = torch.optim.Adam([table], lr=lr)
    g = torch.Generator().manual_seed(seed)
    losses = []
    for _ in range(steps):
        starts = torch.randint(len(tokens) - block_size, (batch_size,), generator=g).tolist()
        x = torch.stack([tokens[s:s + block_size] for s in starts])
        y = torch.stack([tokens[s + 1:s + block_size + 1] for s in starts])
        logits = torch.stack([torch.stack([table[x[i, :t + 1]].sum(0) for t in range(block_size)])
                              for i in range(batch_size)]) if prefix_sum else table[x]
        loss = F.cross_entropy(logits.flatten(0, 1), y.flatten())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return table.detach(), losses



g = torch.Generator().manual_seed(808)
for model_name, vocab, n, steps, lr, batch_size, block_size, seed in [
        ("torch.nn.Embedding", 7, 200, 25, 0.05, 4, 6, 11), ("torch.nn.Embedding", 4, 30, 12, 0.3, 3, 1, 12),
        ("torch.nn.Embedding", 10, 500, 8, 0.01, 16, 20, 13), ("utils.toy_models.PrefixSumLM", 5, 120, 10, 0.05, 3, 8, 14),
        ("utils.toy_models.PrefixSumLM", 6, 40, 6, 0.1, 5, 3, 15), ("utils.toy_models.TimeMajorLM", 6, 80, 5, 0.05, 3, 4, 17)]:
    # TimeMajorLM is a bigram table whose logits come back as a transposed view (not contiguous): the
    # model's output may be flattened with reshape or flatten, not with view.
    prefix_sum = model_name.endswith("PrefixSumLM")
    kind = ("prefix-sum model" if prefix_sum else "bigram table" if model_name.endswith("Embedding")
            else "bigram table with non-contiguous logits")
    name = (f"train({kind}, V={vocab}, N={n}, steps={steps}, lr={lr}, "
            f"batch_size={batch_size}, block_size={block_size})")
    tokens = torch.randint(0, vocab, (n,), generator=g)
    W0 = torch.randn(vocab, vocab, generator=g, dtype=torch.float64)
    expected_W, expected_losses = reference_train(W0, tokens, steps, lr, batch_size, block_size, seed, prefix_sum)
    if model_name.startswith("utils."):
        model = probes.make(model_name, vocab, dtype=torch.float64, state_dict={"table": W0})
    else:
        model = probes.make(model_name, vocab, vocab, dtype=torch.float64, state_dict={"weight": W0})
    losses = train(model, tokens, steps, lr, batch_size, block_size, torch.Generator().manual_seed(seed))
    checks.assert_true(type(losses) is list and len(losses) == steps, name=name, problem=f"expected a list of {steps} losses.")
    checks.assert_close(torch.tensor([float(v) for v in losses], dtype=torch.float64),
                        torch.tensor(expected_losses, dtype=torch.float64),
                        atol=1e-7, rtol=1e-6, name=f"{name}: losses",
                        hint="Draw the starts with the generator exactly as the docstring says; one window per row, "
                             "shape (batch_size, block_size), given to the model whole; clear the gradients "
                             "every step; one Adam optimizer for the whole run; record each loss before its update; flatten "
                             "the logits with reshape (a model's logits need not be contiguous, and view refuses them).")
    checks.assert_close(next(iter(model.state_dict().values())), expected_W, atol=1e-7, rtol=1e-6,
                        name=f"{name}: weights after training")

# A model that arrives holding gradients (left by a gradient check): step 1 clears them before its backward,
# so every update is the gradient of its own batch only (clearing after the step instead adds the old ones in).
tokens = torch.randint(0, 6, (60,), generator=g)
W0 = torch.randn(6, 6, generator=g, dtype=torch.float64)
model = probes.make("torch.nn.Embedding", 6, 6, dtype=torch.float64, state_dict={"weight": W0})
probes.gradients(model, torch.tensor([[0, 1, 2, 3, 4, 5]]), grad_output=50 * torch.randn(1, 6, 6, generator=g, dtype=torch.float64))
expected_W, expected_losses = reference_train(W0, tokens, 3, 0.1, 4, 5, 16)
losses = train(model, tokens, 3, 0.1, 4, 5, torch.Generator().manual_seed(16))
name = "train(bigram table that holds gradients from an earlier backward, steps=3)"
checks.assert_close(next(iter(model.state_dict().values())), expected_W, atol=1e-7, rtol=1e-6,
                    name=f"{name}: weights after training",
                    hint="Step 4 of the docstring: clear the old gradients BEFORE backpropagating (optimizer.zero_grad(), "
                         "then loss.backward(), then optimizer.step()); the model may arrive with gradients in .grad.")
checks.assert_close(torch.tensor([float(v) for v in losses], dtype=torch.float64),
                    torch.tensor(expected_losses, dtype=torch.float64), atol=1e-7, rtol=1e-6, name=f"{name}: losses")
print("train: hidden tests passed")
### END HIDDEN TESTS

# %% id="train-hidden-edges" nbgrader={"grade": true, "grade_id": "test_train_hidden_edges", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for train (edge cases, return types, inputs) run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks, probes

g = torch.Generator().manual_seed(818)
for steps in [3, 1]:
    W0 = torch.randn(5, 5, generator=g, dtype=torch.float64)
    table = probes.make("torch.nn.Embedding", 5, 5, dtype=torch.float64, state_dict={"weight": W0})
    tokens = torch.randint(0, 5, (40,), generator=g)
    call = probes.traced_call(train, table, tokens, steps, 0.1, 4, 5, torch.Generator().manual_seed(steps))
    losses = call.result
    checks.assert_true(type(losses) is list and len(losses) == steps and all(type(v) is float for v in losses),
                       name=f"train(..., steps={steps})", problem=f"expected a list of {steps} Python floats, got {losses!r}.",
                       hint="Append loss.item() (a Python float, not the tensor) once per step.")
    checks.assert_equal(call.args_after[1].tolist(), tokens.tolist(), name=f"the tokens after train(..., steps={steps})",
                        hint="Don't modify the caller's tokens.")

# The model gets each batch whole: one call of shape (batch_size, block_size) per step, not one per window.
model = probes.make("utils.recording.RecordingLM", 5, 0)
train(model, torch.randint(0, 5, (30,), generator=g), 2, 0.1, 3, 4, torch.Generator().manual_seed(4))
checks.assert_equal([c["shape"] for c in model.calls], [[3, 4], [3, 4]],
                    name="the shapes train fed the model (2 steps of batch_size 3, block_size 4)",
                    hint="Stack the batch_size windows into x of shape (batch_size, block_size) and call model(x) once "
                         "per step.")

# steps = 0: an empty list, the model unchanged.
W0 = torch.randn(3, 3, generator=g, dtype=torch.float64)
table = probes.make("torch.nn.Embedding", 3, 3, dtype=torch.float64, state_dict={"weight": W0})
losses = train(table, torch.tensor([0, 1, 2, 1, 0]), 0, 0.1, 2, 2, torch.Generator().manual_seed(0))
checks.assert_equal(losses, [], name="train(..., steps=0)")
checks.assert_true(type(losses) is list, name="train(..., steps=0)", problem=f"expected a list, got {type(losses).__name__}.")
checks.assert_close(table.state_dict()["weight"], W0, atol=0, rtol=0, name="weights after train(..., steps=0)")
print("train: hidden edge tests passed")
### END HIDDEN TESTS

# %% [markdown] id="32a72843"
# ### Training the zero-layer transformer on the corpus
#
# Your module and your loop, on the character-level training text, with $d_\text{model} = V$ (wide enough to
# represent any bigram table). Every step sees 16 windows of 32 characters, 512 of the 400,000 training
# pairs, so each loss on the curve is a noisy estimate; its trend is what matters.
#
# **Predict before you run.** With the suggested initialisation, is the first loss $\ln V$, more, or less?
#
# <details><summary>Answer</summary>
#
# More: about $\ln V + \tfrac12$. Each initial logit is a sum of $d_\text{model}$ products, each of variance
# $1/d_\text{model}$, so the logits are random with variance about 1. Random logits make the model confidently
# wrong here and there, and that costs more than it gains: for logits of variance $\sigma^2$ the expected loss is
# close to $\ln V + \sigma^2/2$. (This is one reason real models initialise their output layer small.)
#
# </details>

# %% id="7c423bf3"
torch.manual_seed(0)                                     # the initial weights come from PyTorch's global generator
zero_layer = ZeroLayerTransformer(V, V)
losses = train(zero_layer, train_ids, steps=150, lr=0.1, batch_size=16, block_size=32,
               generator=torch.Generator().manual_seed(0))

# Reference lines: the training cross-entropy of the maximum-likelihood bigram and unigram models.
mle_bigram = bigram_log_probs(train_counts, 0.0)
bigram_train_ce = -mle_bigram[train_ids[:-1], train_ids[1:]].mean().item()
unigram_mle = (torch.bincount(train_ids, minlength=V).float() / len(train_ids)).log()
unigram_train_ce = -unigram_mle[train_ids[1:]].mean().item()

# The loss on the whole training text, from the counts: the model's (V, V) table is its output for the ids 0..V-1.
with torch.no_grad():
    table = torch.log_softmax(zero_layer(torch.arange(V)[None])[0], dim=1)
whole_text = -(train_counts * table).sum().item() / train_counts.sum().item()

smoothed = torch.tensor(losses).unfold(0, 20, 1).mean(dim=1).tolist()
ax = plotting.loss_curves({"batch loss": losses, "mean of the last 20 steps": [math.nan] * 19 + smoothed},
                          reference={"bigram model (train)": bigram_train_ce, "ln V (knows nothing)": math.log(V)},
                          title="Zero-layer transformer, d_model = V, trained with your train()",
                          ylabel="cross-entropy (nats)")
plt.show()
print(f"first loss {losses[0]:.3f}   (ln V = {math.log(V):.3f}, ln V + 1/2 = {math.log(V) + 0.5:.3f})")
print(f"after {len(losses)} steps: whole training text {whole_text:.3f} nats;  bigram model {bigram_train_ce:.3f}, "
      f"unigram model {unigram_train_ce:.3f}")
claims.claim(f"The first loss, {losses[0]:.3f}, is above ln V = {math.log(V):.3f}; after {len(losses)} steps the model "
             f"({whole_text:.3f} nats) is below the unigram model ({unigram_train_ce:.3f}) by more than half the way "
             f"to the bigram line ({bigram_train_ce:.3f})",
             holds=losses[0] > math.log(V) and bigram_train_ce < whole_text
             and unigram_train_ce - whole_text > (unigram_train_ce - bigram_train_ce) / 2)


# %% [markdown] id="b1b674ad"
# After 150 small steps the model is well below the unigram model and closing in on the bigram line. To
# see exactly where the optimum lies, and what narrower models can reach, we use a shortcut that only this
# model allows. Since the loss depends on the data only through the counts, one **full-batch** step costs a
# $V \times V$ matrix product instead of a pass over 400,000 pairs (for a real transformer with a long context
# nothing like this exists, and we sample minibatches as `train` does). We fit three widths with Adam.
#
# **Predict before you run.** Which of $d_\text{model} = V$, $8$ and $2$ reach the bigram model's loss, and in
# what order do the others stop?
#
# <details><summary>Answer</summary>
#
# Only $d_\text{model} = V$ (with $V = 103$ characters, a width of 8 or 2 caps the rank of $W_E W_U$ far below
# the $V - 1$ the optimum needs). The narrower, the higher the loss it stops at: $d_\text{model} = 2$ above
# $d_\text{model} = 8$. Both still beat the unigram model, which needs rank 1 only.
# </details>

# %% id="cell-047"
def train_zero_layer(counts, d_model, steps=200, lr=0.1, seed=0):
    # Fit logits = W_E @ W_U to the bigram counts by full-batch Adam; return W_E, W_U, loss per step.
    # The matrices are tiny (V x V), so this runs on the CPU whatever `device` the set-up cell chose.
    V = counts.shape[0]
    g = torch.Generator().manual_seed(seed)
    W_E = torch.randn(V, d_model, generator=g).requires_grad_()
    W_U = (torch.randn(d_model, V, generator=g) / math.sqrt(d_model)).requires_grad_()
    optimizer = torch.optim.Adam([W_E, W_U], lr=lr)
    pair_weights = counts.float() / counts.sum()          # C[a, b] / N
    losses = []
    for _ in range(steps):
        logits = W_E @ W_U                                # (V, V): row a = logits after token a
        # Mean cross-entropy over all N training pairs, computed from the counts
        # (PyTorch's log_softmax, which your exercise 1 matches).
        loss = -(pair_weights * torch.log_softmax(logits, dim=1)).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return W_E.detach(), W_U.detach(), losses


models = {d: train_zero_layer(train_counts, d) for d in [V, 8, 2]}

fig, ax = plt.subplots(figsize=(7, 4))
for d, (_, _, losses) in models.items():
    ax.plot(losses, label=f"$d_{{model}}$ = {d}" + (" (= V)" if d == V else ""))
for name, value, shift in [("bigram model (train)", bigram_train_ce, -12), ("unigram model (train)", unigram_train_ce, 4)]:
    ax.axhline(value, linestyle="--", color="gray")
    ax.annotate(name, (0.6 * len(models[V][2]), value), textcoords="offset points", xytext=(0, shift), color="gray")
ax.set_ylim(bigram_train_ce - 0.2, math.log(V) + 0.3)
ax.set_xlabel("Adam step (full batch)")
ax.set_ylabel("training cross-entropy (nats)")
ax.set_title("Zero-layer transformer: logits = $W_E[x]\\,W_U$")
ax.legend()
plt.show()
for d, (_, _, losses) in models.items():
    print(f"d_model = {d:>3}: final training loss {losses[-1]:.4f}   (bigram model: {bigram_train_ce:.4f})")
final = {d: losses[-1] for d, (_, _, losses) in models.items()}
claims.claim(f"d_model = V ends {final[V] - bigram_train_ce:.4f} nats above the bigram model; d_model = 8 stops "
             f"{final[8] - bigram_train_ce:.3f} above it and d_model = 2 {final[2] - bigram_train_ce:.3f}",
             holds=final[V] - bigram_train_ce < 0.005 < final[8] - bigram_train_ce < final[2] - bigram_train_ce
             and final[2] < unigram_train_ce)

# %% [markdown] id="cell-048"
# With $d_\text{model} = V$ the loss runs down to the bigram line; the narrow models stop above it, the
# narrower the higher. (Even $d_\text{model} = 1$ could still represent the unigram model: all rows equal is a
# rank-1 matrix.)
#
# Now compare the learned table itself with the counted one. We take `log_softmax` of the learned logits,
# which removes the per-row constants $c_a$, and plot it against $\log \hat P(b \mid a)$ for the pairs seen at
# least 10 times (rarer pairs carry almost no weight in the loss, and unseen ones have $-\infty$ as target).

# %% id="cell-049"
seen = train_counts >= 10
fig, axes = plt.subplots(1, 2, figsize=(10, 4.2), sharey=True)
for ax, d in zip(axes, [V, 8]):
    W_E, W_U, _ = models[d]
    learned = torch.log_softmax(W_E @ W_U, dim=1)
    points = ax.scatter(mle_bigram[seen], learned[seen], s=6, c=train_counts[seen].float().log10(), cmap="viridis")
    ax.plot([-9, 0], [-9, 0], color="black", linewidth=1, linestyle="--", label="learned = counted")
    ax.set_title(f"$d_{{model}}$ = {d}")
    ax.set_xlabel(r"counted bigram $\log \hat P(b \mid a)$")
    ax.legend(loc="upper left")
axes[0].set_ylabel(r"learned log_softmax$(W_E W_U)_{ab}$")
fig.colorbar(points, ax=axes, label="log10 count of the pair")
fig.suptitle("What the zero-layer transformer learns (pairs seen at least 10 times)")
plt.show()

# The raw logits differ from the bigram log-probs by a constant per row:
W_E, W_U, _ = models[V]
offset = torch.where(seen, W_E @ W_U - mle_bigram, torch.nan)     # logit - log P, seen pairs only
row_constant = offset.nanmean(dim=1)                              # c_a (nan: row without such pairs)
within_row = (offset - row_constant[:, None]).abs().nanmean().item()
c = row_constant[~row_constant.isnan()]
print(f"logits - log P(b|a): the row constants c_a range from {c.min().item():.2f} to {c.max().item():.2f}, "
      f"while within a row the differences deviate from c_a by {within_row:.3f} on average")
claims.claim(f"The learned logits are the counted log-probabilities plus a constant per row: the constants spread over "
             f"{(c.max() - c.min()).item():.1f} nats, the deviations from them average {within_row:.3f}",
             holds=within_row < 0.02 and (c.max() - c.min()).item() > 1)

# %% [markdown] id="cell-050"
# With $d_\text{model} = V$ the points lie on the diagonal: gradient descent found the counted bigram
# table, with a different, irrelevant constant in each row of the raw logits. With $d_\text{model} = 8$ the
# frequent pairs are still roughly right, but the rank limit blurs the rest.
#
# A reassuring check of the shortcut we took: computing the loss the ordinary way, one row of logits per
# pair as a transformer would, gives the same number as the counts formula (here on the validation pairs):

# %% id="cell-051"
W_E, W_U, _ = models[V]
x, y = val_ids[:-1], val_ids[1:]
per_pair = F.cross_entropy(W_E[x] @ W_U, y)                      # (N, V) logits, like a real model
val_counts = bigram_counts(val_ids, V)
from_counts = -(val_counts.float() / val_counts.sum() * torch.log_softmax(W_E @ W_U, dim=1)).sum()
print(f"per pair: {per_pair.item():.5f}   from counts: {from_counts.item():.5f}")
claims.claim(f"The counts formula gives the per-pair loss to {abs(per_pair - from_counts).item():.1e}",
             holds=abs(per_pair - from_counts).item() < 1e-4)

# %% [markdown] id="cell-052"
# ## 6. Decoding: from a distribution to text
#
# A language model outputs a *distribution* over the next token; **decoding** decides which token to
# actually emit. Then the token is appended and the loop repeats: predict, decode, append.
#
# * **Greedy decoding** takes the most likely token, $\arg\max_j z_j$. Deterministic, and prone to loops.
# * **Sampling** draws the token at random from $\operatorname{softmax}(z)$: varied text, sometimes odd.
# * **Temperature** $T > 0$ interpolates. Divide the logits by $T$ before the softmax:
#
# $$
# p_j^{(T)} = \operatorname{softmax}(z / T)_j = \frac{e^{z_j / T}}{\sum_k e^{z_k / T}}
# = \frac{p_j^{1/T}}{\sum_k p_k^{1/T}} \quad\text{where } p = \operatorname{softmax}(z).
# $$
#
# $T = 1$ is the model's own distribution; $T < 1$ sharpens it (raising to the power $1/T > 1$ favours the
# large probabilities) and $T \to 0$ puts all the mass on the arg max, i.e. greedy decoding; $T > 1$ flattens
# it, and $T \to \infty$ gives the uniform distribution. $T = 0$ itself is a division by zero, so greedy is
# implemented with `argmax`, not with a temperature. (Other strategies, such as *top-k* sampling, which
# first keeps only the $k$ likeliest tokens, cut off the unlikely tail instead of reshaping it.)
#
# **Predict before you run.** Logits $(\ln 1, \ln 2, \ln 1)$, so $p = (\tfrac14, \tfrac12, \tfrac14)$. What
# are the probabilities at $T = 0.5$, and at $T = 2$?
#
# <details><summary>Answer</summary>
#
# At $T = 0.5$ the probabilities are squared and renormalised: $(1, 4, 1)/6 = (0.167, 0.667, 0.167)$. At
# $T = 2$ they are replaced by their square roots, renormalised: $(1, \sqrt2, 1)/(2 + \sqrt2) = (0.293, 0.414, 0.293)$.
#
# </details>
#
# ### Exercise 8: `softmax_with_temperature` (1 + 2 + 1 points)
#
# *Points: 1 visible, 2 hidden (batches of several shapes and temperatures, a huge temperature), 1 hidden (edge cases: a tiny temperature without overflow, float64 kept, the logits left unchanged, non-positive temperatures raise ValueError).*
#
# Return the temperature-scaled distribution over the last dimension. Reject a temperature that is not
# positive with a `ValueError` whose message says why. You may use `torch.softmax` or your `log_softmax`;
# a hand-written softmax without the max-shift would overflow at small temperatures. Don't divide the
# caller's tensor in place, and keep its dtype (float64 logits give float64 probabilities).

# %% id="d2ad123e" nbgrader={"grade": false, "grade_id": "softmax_with_temperature", "locked": false, "schema_version": 3, "solution": true, "task": false}
import torch


def softmax_with_temperature(logits, temperature):
    """Next-token probabilities at a sampling temperature.

    Args:
        logits: floating tensor of shape (..., V). Not modified.
        temperature: a number > 0. Below 1 sharpens the distribution, above 1 flattens it.
    Returns:
        A new tensor with the same shape and the same dtype as logits: softmax(logits / temperature)
        over the last dimension. Finite even at small temperatures such as 0.01, where
        logits / temperature reach the thousands.
    Raises:
        ValueError: if temperature <= 0, with a message saying so (the limit T -> 0 is greedy
            decoding: use argmax).
    """
    ### BEGIN SOLUTION
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}; for greedy decoding use argmax")
    return torch.softmax(logits / temperature, dim=-1)       # a new tensor; softmax shifts by the max
    ### END SOLUTION


# %% id="cell-054" nbgrader={"grade": true, "grade_id": "test_softmax_with_temperature", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
import math

import torch
from utils import checks

logits = torch.log(torch.tensor([1.0, 2.0, 1.0]))        # p = (1/4, 1/2, 1/4)
out = softmax_with_temperature(logits, 1.0)
checks.assert_tensor(out, name="softmax_with_temperature(logits, 1)", shape=(3,), dtype="floating")
checks.assert_close(out, torch.tensor([0.25, 0.5, 0.25]), name="softmax_with_temperature(logits, T=1)",
                    hint="At T = 1 this is the plain softmax of the logits.")
checks.assert_close(softmax_with_temperature(logits, 0.5), torch.tensor([1 / 6, 4 / 6, 1 / 6]),
                    name="softmax_with_temperature(logits, T=0.5)",
                    hint="Divide the logits by T (do not multiply), then softmax: p ** (1/T), renormalised.")
s = math.sqrt(2)
checks.assert_close(softmax_with_temperature(logits, 2.0), torch.tensor([1 / (2 + s), s / (2 + s), 1 / (2 + s)]),
                    name="softmax_with_temperature(logits, T=2)")
out = softmax_with_temperature(logits.double(), 0.5)
checks.assert_tensor(out, name="softmax_with_temperature(float64 logits, T=0.5)", shape=(3,), dtype=torch.float64,
                     hint="Keep the dtype of the logits: float64 in, float64 out.")
for bad in [0.0, -1.0]:
    checks.assert_raises(ValueError, softmax_with_temperature, logits, bad,
                         name=f"softmax_with_temperature(logits, T={bad})",
                         hint="A temperature must be > 0: raise ValueError('...') with a message saying so.")

# Two rows, one with huge logits: each row is a distribution of its own (softmax over the last dimension).
out = softmax_with_temperature(torch.tensor([[1000.0, 0.0, 1000.0], [0.0, 0.0, 0.0]]), 1.0)
checks.assert_close(out, torch.tensor([[0.5, 0.0, 0.5], [1 / 3, 1 / 3, 1 / 3]]),
                    name="softmax_with_temperature([[1000, 0, 1000], [0, 0, 0]], T=1)",
                    hint="Normalise each row over the LAST dimension (dim=-1), and subtract the row maximum before exp "
                         "(or use torch.softmax): exp(1000) overflows to inf and inf / inf is nan.")
print("softmax_with_temperature: visible tests passed")

# %% id="eefd6b09" nbgrader={"grade": true, "grade_id": "test_softmax_with_temperature_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for softmax_with_temperature run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks, probes

g = torch.Generator().manual_seed(606)

# Batches: the softmax runs over the last dimension; float32 stays float32.
for shape, temperature in [((4, 10), 0.7), ((2, 3, 5), 1.6), ((6, 6), 3)]:
    x = torch.randn(*shape, generator=g) * 2
    name = f"softmax_with_temperature on shape {shape}, T={temperature}"
    out = softmax_with_temperature(x, temperature)
    checks.assert_tensor(out, name=name, shape=shape, dtype=torch.float32)
    checks.assert_close(out, torch.softmax(x / temperature, dim=-1), name=name,
                        hint="softmax(logits / T) over the last dimension.")

# Large temperature: nearly uniform.
x = torch.randn(3, 4, generator=g)
checks.assert_close(softmax_with_temperature(x, 1e6), torch.full((3, 4), 0.25), atol=1e-5,
                    name="softmax_with_temperature at T = 1e6", hint="T -> infinity flattens to uniform.")
# Rows of very negative logits at a small temperature: logits / T reach -1e5 and -2e5, and each row is still a
# distribution (every exp underflows to 0 unless the row's own maximum is subtracted first).
x = torch.tensor([[-1000.0, -1001.0, -1003.0], [-500.0, -500.0, -2000.0]])
checks.assert_close(softmax_with_temperature(x, 0.01), torch.softmax(x / 0.01, dim=-1), atol=1e-6,
                    name="softmax_with_temperature of very negative logits at T = 0.01",
                    hint="Subtract each row's maximum, whatever its sign, before exp (torch.softmax does): exp(-1e5) "
                         "is 0 in every entry, and 0 / 0 is nan.")
print("softmax_with_temperature: hidden tests passed")
### END HIDDEN TESTS

# %% id="2a97c927" nbgrader={"grade": true, "grade_id": "test_softmax_with_temperature_hidden_edges", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for softmax_with_temperature (edge cases: a tiny temperature without overflow, float64 kept, the logits left unchanged, non-positive temperatures raise ValueError) run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks, probes

g = torch.Generator().manual_seed(606)

# Small temperature: logits / T reach thousands; must not overflow, and approaches the arg max.
x = torch.randn(5, 8, generator=g) * 10
out = softmax_with_temperature(x, 0.01)
checks.assert_true(bool(torch.isfinite(out).all()), name="softmax_with_temperature at T = 0.01",
                   problem="the result contains inf or nan.",
                   hint="Use a stable softmax (shift by the maximum) - logits / T can be huge.")
checks.assert_close(out, torch.softmax(x / 0.01, dim=-1), atol=1e-5, name="softmax_with_temperature at T = 0.01")
checks.assert_equal(out.argmax(dim=-1).tolist(), x.argmax(dim=-1).tolist(), name="arg max at T = 0.01")
# ... and on 64 nearly equal logits, where T = 0.01 still spreads the mass (logits / T differ by a few units):
# a temperature floor changes these numbers, and softmax(logits) ** (1 / T) underflows every entry to 0.
x = torch.randn(4, 64, generator=g) * 0.05
out = softmax_with_temperature(x, 0.01)
checks.assert_true(bool(torch.isfinite(out).all()), name="softmax_with_temperature(64 nearly equal logits, T = 0.01)",
                   problem="the result contains inf or nan.",
                   hint="Divide the logits by T, then a stable softmax; powers of probabilities underflow to 0 / 0.")
checks.assert_close(out, torch.softmax(x / 0.01, dim=-1), atol=1e-5, name="softmax_with_temperature(64 nearly equal logits, T = 0.01)",
                    hint="Use the temperature you are given, however small: softmax(logits / T).")
# ... and at T = 1e-4 on logits 1e-4 apart (logits / T differ by units): a floor at 1e-2 or 1e-3 flattens these.
x = torch.arange(6, dtype=torch.float32).repeat(2, 1) * 1e-4
out = softmax_with_temperature(x, 1e-4)
checks.assert_close(out, torch.softmax(x / 1e-4, dim=-1), atol=1e-5,
                    name="softmax_with_temperature(logits 0, 1e-4, ..., 5e-4, T = 1e-4)",
                    hint="Use the temperature you are given, however small (no floor such as max(T, 0.01)): softmax(logits / T).")

# float64 in, float64 out, at float64 precision.
x = torch.randn(7, generator=g, dtype=torch.float64)
out = softmax_with_temperature(x, 0.3)
checks.assert_tensor(out, name="softmax_with_temperature in float64", shape=(7,), dtype=torch.float64,
                     hint="Keep the dtype of the logits.")
checks.assert_close(out, torch.softmax(x / 0.3, dim=-1), atol=1e-12, rtol=1e-10, name="softmax_with_temperature in float64")

# The caller's logits are left alone.
x = torch.randn(3, 5, generator=g)
before = x.clone()
call = probes.traced_call(softmax_with_temperature, x, 0.5)
checks.assert_close(call.args_after[0], before, atol=0, rtol=0, name="the logits after softmax_with_temperature",
                    hint="Use logits / temperature, not logits /= temperature.")

# Non-positive temperatures are rejected, with a message saying so (the grader appends where the error was
# raised on a line of its own: the student's message is what comes before it).
for bad in [0, -0.5, -3.0]:
    error = checks.assert_raises(ValueError, softmax_with_temperature, torch.randn(4, generator=g), bad,
                                 name=f"softmax_with_temperature(T={bad})")
    message = str(error).split("\n(raised in your code")[0].strip()
    checks.assert_true(bool(message), name=f"the message of the ValueError for T={bad}", problem="it is empty.",
                       hint="Say why: raise ValueError(f'temperature must be > 0, got {temperature}').")
    # Saying why: it names the temperature, its value or the condition (a number > 0, positive, greedy/argmax).
    said = message.lower()
    reasons = ("temperature", "positive", "zero", "0", ">", "<", "greedy", "argmax", "greater", "larger")
    checks.assert_true(any(word in said for word in reasons), name=f"the message of the ValueError for T={bad}",
                       problem=f"{message!r} does not say what is wrong with the temperature.",
                       hint="Say why: raise ValueError(f'temperature must be > 0, got {temperature}').")
# Both sides of the boundary: 0 and below raise, the smallest positive temperature tried here does not.
x = torch.randn(4, generator=g)
checks.assert_error_boundary(ValueError, lambda t: softmax_with_temperature(x, t), raises=(0.0, -1.0), allowed=(0.01,),
                             name="softmax_with_temperature's temperature", hint="Raise ValueError for temperature <= 0.")
print("softmax_with_temperature: hidden tests (edge cases) passed")
### END HIDDEN TESTS

# %% [markdown] id="cell-056"
# What the temperature does to a real distribution: the bigram model's prediction for the character after
# a space, the start of a new word.

# %% id="cell-057"
context = " "
logits = bigram[stoi[context]]                         # log-probabilities are logits, too
top = logits.argsort(descending=True)[:15]             # the 15 likeliest next characters at T = 1
labels = [show(itos[int(i)]) for i in top]

fig, axes = plt.subplots(1, 4, figsize=(14, 3.6), layout="constrained")
greedy = torch.zeros(V)
greedy[logits.argmax()] = 1.0
panels = [("T = 0.5", softmax_with_temperature(logits, 0.5)), ("T = 1 (the model)", softmax_with_temperature(logits, 1.0)),
          ("T = 2", softmax_with_temperature(logits, 2.0)), ("T → 0 (greedy: argmax)", greedy)]
for ax, (title, probs) in zip(axes, panels):
    entropy = torch.special.entr(probs).sum().item()          # -sum p log p, with 0 log 0 = 0
    plotting.bar_distribution(probs[top], labels, ax=ax, title=f"{title}\nentropy {entropy:.2f} nats")
    ax.set_xlabel("next character")
    ax.set_ylabel("probability" if ax is axes[0] else "")
    ax.set_ylim(0, 1.05 if probs is greedy else 1.15 * panels[0][1].max().item())  # one scale for T = 0.5, 1, 2
fig.suptitle(f"Next-character distribution after {show(context)!r} (the 15 likeliest at T = 1)")
plt.show()

# %% [markdown] id="8a819779"
# ### Exercise 9: `generate` (1 + 2 + 1 points)
#
# *Points: 1 visible, 2 hidden (greedy and sampled text, ties, long prompts), 1 hidden (edge cases: no
# gradients, the prompt left unchanged, `n_new = 0`, a negative temperature).*
#
# Generation is the chain rule run forwards: predict a distribution for the next token, pick one, append
# it, and feed the longer sequence back in. Write that loop for any model that maps ids $(B, T)$ to logits
# $(B, T, V)$:
#
# * the model wants a batch, so the sequence so far goes in as a batch of one;
# * position $t$'s logits predict token $t + 1$, so the prediction for the *new* token sits at the **last**
#   position;
# * temperature 0 means greedy decoding (the arg max); a positive temperature means sampling from the
#   temperature-scaled distribution, with the generator you are given as the only source of randomness, so
#   that the same seed gives the same text;
# * no gradients are needed while generating (it saves memory and time to say so).
#
# **Predict before you run.** Greedy decoding with a bigram model is a fixed function "next character =
# $f$(previous character)". What must happen to the greedy text sooner or later?
#
# <details><summary>Answer</summary>
#
# It repeats. There are only $V$ characters, so within $V$ steps some character comes back, and from then on the
# same cycle repeats forever. (Sampling escapes the cycle; a model that looks further back makes it longer
# but doesn't abolish it, which is why greedy decoding of large models also tends to loop.)
#
# </details>

# %% id="f00f3091" nbgrader={"grade": false, "grade_id": "generate", "locked": false, "schema_version": 3, "solution": true, "task": false}
import torch


def generate(model, prompt_ids, n_new, temperature, generator):
    """Autoregressive generation: predict the next token, pick one, append it, repeat n_new times.

    Args:
        model: an nn.Module mapping int64 ids of shape (B, T) to logits of shape (B, T, V).
        prompt_ids: int64 tensor of shape (T0,), T0 >= 1: the text so far. Not modified.
        n_new: the number of tokens to add, >= 0.
        temperature: 0 for greedy decoding (the arg max of the logits; on a tie the lowest id), or a
            number > 0 to sample from softmax(logits / temperature).
        generator: a torch.Generator, the only source of randomness (unused when temperature is 0).
    Every step feeds the whole sequence so far (never cropped, however long) to the model as a batch of
    one, shape (1, T), and uses the logits at the last position, which predict the token after it.
    No gradients are recorded: the model runs with autograd off (torch.no_grad()), and autograd is as it
    was before once generate returns.
    Returns:
        a new int64 tensor of shape (T0 + n_new,): the prompt followed by the n_new new ids (a copy of
        the prompt when n_new is 0).
    Raises:
        ValueError: if temperature < 0.
    """
    ### BEGIN SOLUTION
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0 (0 means greedy), got {temperature}")
    ids = prompt_ids.clone()
    with torch.no_grad():
        for _ in range(n_new):
            logits = model(ids[None])[0, -1]                      # (V,): the prediction after the last token
            if temperature == 0:
                next_id = logits.argmax()
            else:
                probs = torch.softmax(logits / temperature, dim=-1)
                next_id = torch.multinomial(probs, 1, generator=generator)[0]
            ids = torch.cat([ids, next_id.reshape(1).to(ids.dtype)])
    return ids
    ### END SOLUTION


# %% id="10435e66" nbgrader={"grade": true, "grade_id": "test_generate", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
import math

import torch
from utils import checks, probes

# A bigram "model": an embedding table whose row a holds the logits for the token after a.
# Here token a is followed by (a + 1) % 4 with logit 5, by every other token with logit 0.
W = torch.zeros(4, 4)
W[torch.arange(4), (torch.arange(4) + 1) % 4] = 5.0
successor = probes.make("torch.nn.Embedding", 4, 4, state_dict={"weight": W})

out = generate(successor, torch.tensor([2]), 6, 0, torch.Generator().manual_seed(0))
checks.assert_tensor(out, name="generate(successor model, prompt [2], 6 new tokens, greedy)", shape=(7,),
                     dtype=torch.int64, hint="Return the prompt followed by the n_new new ids, one int64 tensor.")
checks.assert_equal(out.tolist(), [2, 3, 0, 1, 2, 3, 0], name="generate(successor model, prompt [2], 6 new tokens, greedy)",
                    hint="Greedy: append the arg max of the logits, feed the longer sequence back in, repeat.")
out = generate(successor, torch.tensor([0, 2]), 1, 0, torch.Generator().manual_seed(0))
checks.assert_equal(out.tolist(), [0, 2, 3], name="generate(successor model, prompt [0, 2], 1 new token, greedy)",
                    hint="The prediction for the next token is at the LAST position of the model's output.")

# Sampling at T = 0.5 from p = (1/4, 1/2, 1/4), whatever the context: the probabilities become (1/6, 4/6, 1/6).
W = torch.log(torch.tensor([1.0, 2.0, 1.0])).repeat(3, 1)
model = probes.make("torch.nn.Embedding", 3, 3, state_dict={"weight": W})
out = generate(model, torch.tensor([0]), 3000, 0.5, torch.Generator().manual_seed(1))
checks.assert_tensor(out, name="generate(..., 3000 new tokens, T = 0.5)", shape=(3001,), dtype=torch.int64)
frequencies = torch.bincount(out[1:], minlength=3).double() / 3000
checks.assert_close(frequencies, torch.tensor([1 / 6, 4 / 6, 1 / 6], dtype=torch.float64), atol=0.05,
                    name="frequencies of 3000 tokens sampled at T = 0.5 (tolerance: 5 standard deviations)",
                    hint="Sample from softmax(logits / T): at T = 0.5 the probabilities p become p**2, renormalised.")

# The generator is the only source of randomness: the same seed gives the same text.
a = generate(model, torch.tensor([0]), 50, 1.0, torch.Generator().manual_seed(7))
b = generate(model, torch.tensor([0]), 50, 1.0, torch.Generator().manual_seed(7))
checks.assert_equal(a.tolist(), b.tolist(), name="two runs of generate with generators seeded 7",
                    hint="Draw every random number with the generator you are given, not PyTorch's global one.")
checks.assert_raises(ValueError, generate, model, torch.tensor([0]), 5, -1.0, torch.Generator().manual_seed(0),
                     name="generate(..., temperature=-1)", hint="A negative temperature has no meaning: raise ValueError.")

# A model that reads the whole context: its logits are the sum of one table row per token so far
# (utils.toy_models.PrefixSumLM). After [0, 1] they are W[0] + W[1] = (1, 2, 0): token 1 is next.
# From the last token alone they would be W[1] = (1, 0, 0): token 0.
W = torch.tensor([[0.0, 2.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 3.0]])
context_model = probes.make("utils.toy_models.PrefixSumLM", 3, state_dict={"table": W})
out = generate(context_model, torch.tensor([0, 1]), 1, 0, torch.Generator().manual_seed(0))
checks.assert_equal(out.tolist(), [0, 1, 1], name="generate(prefix-sum model, prompt [0, 1], 1 new token, greedy)",
                    hint="Feed the model the whole sequence so far (prompt and the tokens generated), shape (1, T), "
                         "not only the last token: this model's prediction depends on every earlier token.")
print("generate: visible tests passed")

# %% id="7b04c80c" nbgrader={"grade": true, "grade_id": "test_generate_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for generate run when your notebook is graded.
### BEGIN HIDDEN TESTS
import math

import torch
from utils import checks, probes

g = torch.Generator().manual_seed(909)

# Greedy decoding with a random bigram table, reference: follow the row maxima by hand.
vocab = 9
W = torch.randn(vocab, vocab, generator=g)
model = probes.make("torch.nn.Embedding", vocab, vocab, state_dict={"weight": W})
prompt = torch.randint(0, vocab, (5,), generator=g)
expected = prompt.tolist()
for _ in range(15):
    row = W[expected[-1]].tolist()
    expected.append(row.index(max(row)))
out = generate(model, prompt, 15, 0, torch.Generator().manual_seed(0))
checks.assert_tensor(out, name="generate(random 9x9 bigram table, prompt of 5, 15 new, greedy)", shape=(20,),
                     dtype=torch.int64)
checks.assert_equal(out.tolist(), expected, name="generate(random 9x9 bigram table, prompt of 5, 15 new, greedy)",
                    hint="Each new token is the arg max of the logits at the last position.")

# A model whose prediction depends on the whole prefix, not only the last token: the reference adds
# up the table rows of every token so far.
W = torch.randn(6, 6, generator=g, dtype=torch.float64)
model = probes.make("utils.toy_models.PrefixSumLM", 6, dtype=torch.float64, state_dict={"table": W})
prompt = torch.tensor([2, 5, 0])
expected = prompt.tolist()
for _ in range(40):
    scores = W[expected].sum(dim=0).tolist()
    expected.append(scores.index(max(scores)))
checks.assert_equal(generate(model, prompt, 40, 0, torch.Generator().manual_seed(0)).tolist(), expected,
                    name="greedy generate with a model that reads the whole prefix",
                    hint="Feed the whole sequence so far, shape (1, T), and read the logits at the last position.")

# A long prompt (60 tokens) for the same kind of model: the first tokens still count at the end.
W = torch.randn(7, 7, generator=g, dtype=torch.float64)
model = probes.make("utils.toy_models.PrefixSumLM", 7, dtype=torch.float64, state_dict={"table": W})
prompt = torch.randint(0, 7, (60,), generator=g)
expected = prompt.tolist()
for _ in range(12):
    scores = W[expected].sum(dim=0).tolist()
    expected.append(scores.index(max(scores)))
checks.assert_equal(generate(model, prompt, 12, 0, torch.Generator().manual_seed(0)).tolist(), expected,
                    name="greedy generate with a 60-token prompt and a model that reads the whole prefix",
                    hint="Never crop the sequence: feed all of it, however long.")
# A prompt longer than any usual context window (2100 tokens): only its FIRST token decides the next one.
# Tokens 1 and 2 add nothing, token 0 adds a score of 5 for token 2; without token 0 every score is 0 (tie: 0).
W = torch.zeros(3, 3, dtype=torch.float64)
W[0, 2] = 5.0
model = probes.make("utils.toy_models.PrefixSumLM", 3, dtype=torch.float64, state_dict={"table": W})
prompt = torch.cat([torch.tensor([0]), torch.ones(2099, dtype=torch.long)])
checks.assert_equal(generate(model, prompt, 2, 0, torch.Generator().manual_seed(0))[-2:].tolist(), [2, 2],
                    name="greedy generate with a 2100-token prompt whose first token decides the prediction",
                    hint="Never crop the sequence (not to 256, not to 1024 tokens): the contract feeds all of it.")

# Greedy ties go to the lowest id.
W = torch.tensor([[1.0, 3.0, 3.0, 0.0]] * 4)
model = probes.make("torch.nn.Embedding", 4, 4, state_dict={"weight": W})
checks.assert_equal(generate(model, torch.tensor([3]), 3, 0, torch.Generator().manual_seed(0)).tolist(), [3, 1, 1, 1],
                    name="greedy generate with tied logits (ids 1 and 2)", hint="On a tie, pick the lowest id.")
# Three tied ids (1, 2 and 4) among five: torch.topk(logits, 1) returns id 2 here, argmax id 1.
W = torch.tensor([[1.0, 3.0, 3.0, 0.0, 3.0]] * 5)
model = probes.make("torch.nn.Embedding", 5, 5, state_dict={"weight": W})
checks.assert_equal(generate(model, torch.tensor([0]), 3, 0, torch.Generator().manual_seed(0)).tolist(), [0, 1, 1, 1],
                    name="greedy generate with three tied logits (ids 1, 2 and 4)",
                    hint="On a tie, pick the lowest id: torch.argmax does; torch.topk(logits, 1) need not.")

# Sampling at T = 1.5 from a bigram chain whose rows differ: each row's transition frequencies.
W = torch.tensor([[0.0, 1.0, 2.0], [2.0, 0.0, 1.0], [1.0, 2.0, 0.0]])
model = probes.make("torch.nn.Embedding", 3, 3, state_dict={"weight": W})
out = generate(model, torch.tensor([1, 2, 0]), 4000, 1.5, torch.Generator().manual_seed(5))
checks.assert_tensor(out, name="generate(3-token chain, 4000 new, T = 1.5)", shape=(4003,), dtype=torch.int64)
seq = out[2:]                                     # from the last prompt token on: 4000 transitions
expected_P = torch.softmax(W.double() / 1.5, dim=1)
for a in range(3):
    following = seq[1:][seq[:-1] == a]
    n_a = following.numel()
    checks.assert_true(n_a >= 500, name=f"T = 1.5 chain: visits of token {a}",
                       problem=f"token {a} was followed by only {n_a} tokens in 4000 draws (expected about 1333).")
    freq = torch.bincount(following, minlength=3).double() / n_a
    checks.assert_close(freq, expected_P[a], atol=5 * math.sqrt(0.25 / n_a),
                        name=f"T = 1.5 chain: frequencies of the token after {a} (tolerance: 5 standard deviations)",
                        hint="Sample from softmax(logits / T) of the logits at the last position.")

# Logits near 1000 (p = softmax(1000, 999.5, 0) = (0.62, 0.38, 0)): exp(1000 / T) overflows to inf in float32,
# so the weights to sample from must be a stable softmax, not exp of the raw logits.
W = torch.tensor([[1000.0, 999.5, 0.0]] * 3)
model = probes.make("torch.nn.Embedding", 3, 3, state_dict={"weight": W})
out = generate(model, torch.tensor([2]), 600, 1.0, torch.Generator().manual_seed(8))
freq = torch.bincount(out[1:], minlength=3).double() / 600
expected_p = torch.softmax(torch.tensor([1000.0, 999.5, 0.0], dtype=torch.float64), dim=0)
checks.assert_close(freq, expected_p, atol=5 * math.sqrt(0.25 / 600),
                    name="frequencies of 600 tokens sampled at T = 1 from logits (1000, 999.5, 0) (tolerance: 5 standard deviations)",
                    hint="Sample from softmax(logits / T), computed stably (torch.softmax shifts by the maximum); "
                         "exp(1000) is inf in float32.")

# A small positive temperature still samples: logits (0, 0.005) at T = 0.01 give probabilities softmax(0, 0.5).
W = torch.tensor([[0.0, 0.005]] * 2)
model = probes.make("torch.nn.Embedding", 2, 2, state_dict={"weight": W})
out = generate(model, torch.tensor([0]), 600, 0.01, torch.Generator().manual_seed(6))
p_one = torch.softmax(torch.tensor([0.0, 0.5], dtype=torch.float64), dim=0)[1].item()
checks.assert_close(float((out[1:] == 1).double().mean()), p_one, atol=5 * math.sqrt(0.25 / 600),
                    name="frequency of token 1 sampled at T = 0.01 from logits (0, 0.005) (tolerance: 5 standard deviations)",
                    hint="Only temperature 0 means greedy; any T > 0 samples from softmax(logits / T).")

# Different seeds give different texts; the same seed the same text.
W = torch.zeros(5, 5)
model = probes.make("torch.nn.Embedding", 5, 5, state_dict={"weight": W})
a = generate(model, torch.tensor([0]), 40, 1.0, torch.Generator().manual_seed(21))
b = generate(model, torch.tensor([0]), 40, 1.0, torch.Generator().manual_seed(22))
c = generate(model, torch.tensor([0]), 40, 1.0, torch.Generator().manual_seed(21))
checks.assert_true(a.tolist() != b.tolist(), name="generate with generators seeded 21 and 22",
                   problem="two different seeds gave the same 40 tokens.", hint="Use the generator you are given.")
checks.assert_equal(a.tolist(), c.tolist(), name="generate twice with generators seeded 21")

print("generate: hidden tests passed")
### END HIDDEN TESTS

# %% id="generate-hidden-edges" nbgrader={"grade": true, "grade_id": "test_generate_hidden_edges", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for generate (edge cases) run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks, probes

# No gradients: this model predicts token 0 whenever autograd is recording, and its table otherwise.
W = torch.zeros(4, 4)
W[torch.arange(4), (torch.arange(4) + 1) % 4] = 5.0
model = probes.make("utils.toy_models.GradModeLM", 4, state_dict={"table": W})
checks.assert_equal(generate(model, torch.tensor([1]), 5, 0, torch.Generator().manual_seed(0)).tolist(), [1, 2, 3, 0, 1, 2],
                    name="greedy generate with a model that shows whether gradients are recorded",
                    hint="Run the model with autograd off: wrap the loop in torch.no_grad().")
out = generate(model, torch.tensor([2]), 300, 0.5, torch.Generator().manual_seed(4))
checks.assert_true(int((out[1:] == 0).sum()) < 150, name="sampling generate with a model that shows whether gradients are recorded",
                   problem="almost every sampled token is 0: the model ran with gradients recorded.",
                   hint="Run the model with autograd off: wrap the loop in torch.no_grad().")
# ... and autograd is back on when generate returns, for a caller that had it on.
report = probes.make("utils.recording.grad_mode_after", generate, model, torch.tensor([1]), 3, 0, torch.Generator().manual_seed(0))
checks.assert_true(report["grad_enabled_after"], name="autograd after generate returned (it was on before the call)",
                   problem="autograd is off: generate left it disabled for its caller.",
                   hint="Use `with torch.no_grad():` (or @torch.no_grad()), which restores autograd on exit; "
                        "torch.set_grad_enabled(False) without restoring it leaves autograd off for the caller.")

# The prompt is left alone; n_new = 0 returns a copy of it.
model = probes.make("torch.nn.Embedding", 5, 5, state_dict={"weight": torch.zeros(5, 5)})
prompt = torch.tensor([4, 1, 3])
call = probes.traced_call(generate, model, prompt, 6, 1.0, torch.Generator().manual_seed(3))
checks.assert_equal(call.args_after[1].tolist(), [4, 1, 3], name="the prompt after generate",
                    hint="Build the sequence in a new tensor; don't write into prompt_ids.")
checks.assert_tensor(call.result, name="generate(prompt of 3, 6 new, T = 1)", shape=(9,), dtype=torch.int64)
checks.assert_equal(call.result[:3].tolist(), [4, 1, 3], name="the first tokens returned by generate",
                    hint="Return the prompt followed by the new tokens.")
for temperature in [1.0, 0]:
    call = probes.traced_call(generate, model, prompt, 0, temperature, torch.Generator().manual_seed(3))
    checks.assert_tensor(call.result, name=f"generate(..., n_new=0, temperature={temperature})", shape=(3,), dtype=torch.int64)
    checks.assert_equal(call.result.tolist(), [4, 1, 3], name=f"generate(..., n_new=0, temperature={temperature})")
    checks.assert_true(not call.returns_argument and not call.shares_memory, name=f"generate(..., n_new=0, temperature={temperature})",
                       problem="returned the caller's prompt tensor itself (or a view of it), not a new tensor.",
                       hint="Return a copy, so that later changes to one don't change the other.")
checks.assert_raises(ValueError, generate, model, prompt, 3, -0.5, torch.Generator().manual_seed(0),
                     name="generate(..., temperature=-0.5)")
checks.assert_raises(ValueError, generate, model, prompt, 0, -2.0, torch.Generator().manual_seed(0),
                     name="generate(..., n_new=0, temperature=-2)", hint="Check the temperature before anything else.")
# Both sides of the boundary: any negative temperature raises, 0 (greedy) does not.
checks.assert_error_boundary(ValueError, lambda t: generate(model, prompt, 2, t, torch.Generator().manual_seed(0)),
                             raises=(-0.01, -1.0), allowed=(0.0,), name="generate's temperature",
                             hint="Raise ValueError for temperature < 0; 0 means greedy decoding.")
print("generate: hidden edge tests passed")
### END HIDDEN TESTS

# %% [markdown] id="6690da9e"
# Now generate text with the zero-layer transformer you trained in section 5, starting from `T`. None of it
# reads like English, or like Python documentation, because one character of context is far too little;
# the temperature trades coherence (low $T$) against variety (high $T$), and the greedy text falls into a
# loop, as predicted. Looking further back is what everything that follows in this course builds.

# %% id="3cc9b4f3"
def decode(ids):
    return "".join(itos[int(i)] for i in ids)


prompt = torch.tensor([stoi["T"]])
greedy = decode(generate(zero_layer, prompt, 60, 0, torch.Generator().manual_seed(0)))
print("greedy :", repr(greedy))
period = next((p for p in range(1, 11) if greedy[-30:] == greedy[-30 - p:-p]), None)
claims.claim(f"The greedy text ends in a loop that repeats every {period} characters",
             holds=period is not None)
for temperature in [0.5, 1.0, 2.0]:
    text_ids = generate(zero_layer, prompt, 60, temperature, torch.Generator().manual_seed(0))
    print(f"T = {temperature}:", repr(decode(text_ids)))

# %% [markdown] id="cell-060"
# ## Summary
#
# * The chain rule $P(w_1, \dots, w_n) = \prod_i P(w_i \mid w_{<i})$ turns language modelling into
#   next-token prediction, and every text supplies its own (context → next token) training pairs.
# * The loss is the cross-entropy, $-\log \operatorname{softmax}(z)_y$ averaged over positions, computed
#   stably with the log-sum-exp trick. Minimising it is maximum-likelihood training.
# * Perplexity $= \exp(\text{mean negative log-likelihood}) \ge 1$ is the effective number of choices per
#   token: $V$ for a uniform model, 1 for a perfect one. It is **not** the mean log-probability (that is
#   minus the cross-entropy). $\log_2$ of it is bits per token.
# * A count-based bigram model with add-$\alpha$ smoothing beats the unigram and uniform baselines by a wide
#   margin on held-out text; without smoothing its validation perplexity is infinite.
# * A PyTorch model is a module with registered parameters and a forward pass; a training loop samples a
#   batch, computes the loss, clears the old gradients, backpropagates and steps the optimizer.
# * A zero-layer transformer (embedding → unembedding) can only learn a bigram model: the loss-minimising
#   $W_E W_U$ is the table of bigram log-probabilities up to a constant per row (when $d_\text{model} \ge V - 1$,
#   the constants buying one rank; in general a low-rank version otherwise).
# * Decoding turns distributions into text, one token at a time, feeding each choice back in: greedy
#   decoding loops, sampling varies, and the temperature sharpens ($T<1$) or flattens ($T>1$) the distribution.
#
# **Next: [02 · Tokenization](../02_tokenization/tokenization.ipynb).** We used characters as tokens. Real
# models use subword units learned by byte-pair encoding: fewer steps per text, a larger vocabulary, and
# perplexities that are only comparable between models with the same tokenizer.
