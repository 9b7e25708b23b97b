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

# %% [markdown] id="a55365e1"
# # 07 · The transformer block
#
# Attention lets every position read from the others; that alone is not a model you can stack 12, 24 or 96
# times and train. A **transformer block** wraps attention with three more pieces, each one the answer to
# a specific way deep networks fail:
#
# * **LayerNorm** keeps the numbers each sublayer reads at a controlled scale, token by token;
# * the **position-wise feed-forward network (FFN)** gives every token a non-linear computation of its own
#   (attention only takes weighted averages);
# * **residual connections** add each sublayer's output to its input, so the block computes a *correction*
#   to a running representation, the **residual stream**, and gradients have a straight path back to the
#   first layer.
#
# In this chapter you:
#
# 1. write LayerNorm from scratch and match `nn.LayerNorm` to the last digit (biased variance, $\varepsilon$
#    inside the square root), and see what the $\sigma + \varepsilon$ formula that some texts print changes;
# 2. write the FFN with ReLU or GELU, $d_\text{ff} = 4\,d_\text{model}$;
# 3. assemble a **Pre-LN** block (GPT-2 and almost every model since) and a **Post-LN** block (the original
#    2017 transformer), stack them, and check that every parameter learns;
# 4. measure gradients through a 24-layer stack with and without residuals, and Pre-LN against Post-LN;
# 5. compare decoder-only, encoder-only and encoder-decoder models, and count GPT-2 small's
#    124,439,808 parameters, by formula and on a model built without allocating any memory.
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

# %% id="ec37f6a6" jupyter={"source_hidden": true} nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
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

# %% id="6f19950b"
import math

import matplotlib.pyplot as plt
import torch
import torch.nn as nn
import torch.nn.functional as F

from utils import claims

torch.set_printoptions(precision=4, sci_mode=False)

# %% [markdown] id="caa386fa"
# ## 1. One block, two sublayers, one residual stream
#
# A block maps a sequence of $T$ vectors of width $d$ (written $d_\text{model}$ elsewhere) to a sequence of
# the same shape, so blocks can be stacked without adapters. Inside there are two **sublayers**: multi-head
# self-attention (MHA), the only place where positions exchange information, and the FFN, applied to each
# position separately with the same weights. Each sublayer is wrapped in a residual connection and a
# LayerNorm. Where the LayerNorm sits gives the two variants of this notebook:
#
# $$
# \textbf{Pre-LN:}\quad
# \begin{aligned}
# x' &= x + \operatorname{MHA}(\operatorname{LN}_1(x)) \\
# y &= x' + \operatorname{FFN}(\operatorname{LN}_2(x'))
# \end{aligned}
# \qquad\qquad
# \textbf{Post-LN:}\quad
# \begin{aligned}
# x' &= \operatorname{LN}_1(x + \operatorname{MHA}(x)) \\
# y &= \operatorname{LN}_2(x' + \operatorname{FFN}(x'))
# \end{aligned}
# $$
#
# In Pre-LN the sublayers *read* a normalised copy of the stream and *write* an update that is added to it;
# the stream itself is never normalised inside the block (a GPT-style model applies one final LayerNorm
# after the last block). In Post-LN the sum is normalised after every sublayer, so the stream is reset to
# unit scale twice per block. Section 5 measures what this difference does to gradients.
#
# **Two statements in circulation are wrong.** A one-line form of the Post-LN block that some texts print,
# $h^{(\ell+1)} = \operatorname{LN}\big(h^{(\ell)} + \operatorname{FFN}(\operatorname{LN}(h^{(\ell)} + \operatorname{MHA}(h^{(\ell)})))\big)$,
# adds the FFN's output to the block's *input* $h^{(\ell)}$. In the block as built (and as the 2017 paper defines
# it) the FFN's residual is the intermediate $x' = \operatorname{LN}(h^{(\ell)} + \operatorname{MHA}(h^{(\ell)}))$ that the
# FFN reads, as in the right-hand equations above; the printed form throws the attention sublayer's contribution
# out of the stream except through the FFN. And a common explanation of why Pre-LN trains more easily says that in
# Post-LN "the residual stream accumulates unnormalised updates" until it has a very large magnitude. That is the
# reverse of what happens: Post-LN normalises the sum after every sublayer, so its stream *cannot* grow, while it is
# Pre-LN's stream that accumulates un-normalised updates. Section 5 measures both streams, and gives the reason
# that holds up (Xiong et al., 2020): where the gradients of the top layers sit at initialisation.

# %% [markdown] id="c2eec8fb"
# ## 2. Layer normalisation
#
# LayerNorm standardises **each token's vector on its own**, over its $d$ features, then lets the model
# rescale and shift every feature with learned vectors $\gamma$ (`weight`) and $\beta$ (`bias`):
#
# $$
# \mu = \frac{1}{d}\sum_{j=1}^{d} x_j, \qquad
# \sigma^2 = \frac{1}{d}\sum_{j=1}^{d} (x_j - \mu)^2, \qquad
# \operatorname{LN}(x)_j = \gamma_j\,\frac{x_j - \mu}{\sqrt{\sigma^2 + \varepsilon}} + \beta_j .
# $$
#
# Three details decide whether your numbers match PyTorch's `nn.LayerNorm`:
#
# * **The variance is biased**: divide by $d$, not $d - 1$. This is a description of the vector in hand, not
#   an estimate of a population, and `torch.var` divides by $d - 1$ unless told otherwise
#   (`unbiased=False`, or `correction=0`).
# * **$\varepsilon$ sits inside the square root**, $\sqrt{\sigma^2 + \varepsilon}$, with $\varepsilon = 10^{-5}$
#   by default in PyTorch (and in GPT-2). Some texts print $\dfrac{x - \mu}{\sigma + \varepsilon}$ and quote
#   $\varepsilon = 10^{-6}$; that is a different function. For ordinary vectors the two agree to about
#   $\varepsilon/\sigma^2$, but for a nearly constant vector (tiny $\sigma$) they differ by a large factor, as
#   the experiment after the exercise shows. Since the models you will load were trained with the
#   square-root form, that is the one to implement.
# * **The statistics are per token.** Unlike batch normalisation, nothing is averaged over the batch or the
#   sequence: the result for one token does not depend on the other tokens, on the batch size, or on
#   whether the model is training. That is why it suits variable-length sequences and one-token-at-a-time
#   generation.
#
# At initialisation $\gamma = 1$ and $\beta = 0$, so a freshly built LayerNorm only standardises.
#
# ### Worked example
#
# Take $x = (1, 2, 3, 4)$. Then $\mu = 2.5$, the deviations are $(-1.5, -0.5, 0.5, 1.5)$, and
# $\sigma^2 = (2.25 + 0.25 + 0.25 + 2.25)/4 = 1.25$, so $\sqrt{\sigma^2 + \varepsilon} \approx 1.1180$ and
#
# $$
# \operatorname{LN}(x) \approx (-1.3416,\; -0.4472,\; 0.4472,\; 1.3416).
# $$
#
# **Predict before you run.** What comes out if you use the unbiased variance (divide by $d - 1 = 3$)? And
# what does LayerNorm return for the constant vector $(3, 3, 3, 3)$?
#
# <details><summary>Answer</summary>
#
# The unbiased variance is $5/3 \approx 1.6667$, its square root $1.2910$, and the output shrinks to
# $(-1.1619, -0.3873, 0.3873, 1.1619)$: every value is $\sqrt{3/4} \approx 0.866$ times too small, an error
# no tolerance forgives. The constant vector has $x - \mu = 0$ and $\sigma^2 = 0$: the output is
# $0/\sqrt{\varepsilon} = 0$ in every feature (then $\beta$ after the affine step). This is what $\varepsilon$
# is for: without it you would compute $0/0$ and get NaN.
# </details>

# %% id="46626872"
x = torch.tensor([1.0, 2.0, 3.0, 4.0])
mu = x.mean()
var_biased = ((x - mu) ** 2).mean()                    # divide by d
var_unbiased = ((x - mu) ** 2).sum() / (len(x) - 1)    # divide by d - 1: not what LayerNorm uses
print(f"mean = {mu.item()}, biased variance = {var_biased.item()}, unbiased variance = {var_unbiased.item():.4f}")
print("biased   (x - mu) / sqrt(var + 1e-5):", ((x - mu) / torch.sqrt(var_biased + 1e-5)).tolist())
print("unbiased (x - mu) / sqrt(var + 1e-5):", ((x - mu) / torch.sqrt(var_unbiased + 1e-5)).tolist())
print("nn.LayerNorm(4)(x):                  ", nn.LayerNorm(4)(x).tolist())
c = torch.full((4,), 3.0)
print("constant vector:", ((c - c.mean()) / torch.sqrt(((c - c.mean()) ** 2).mean() + 1e-5)).tolist(),
      " without eps:", ((c - c.mean()) / torch.sqrt(((c - c.mean()) ** 2).mean())).tolist())

# %% [markdown] id="5340efb1"
# ### Exercise 1: `LayerNorm` (1 + 2 + 1 points)
#
# *Points: 1 visible, 2 hidden (shapes, eps values and dtypes against F.layer_norm, a non-contiguous input, nearly constant rows, a large common offset), 1 hidden (edge cases: the initial parameters and the eps attribute, an integer eps, d_model = 1 and constant rows, gradients, the input left unchanged).*
#
# Write LayerNorm as an `nn.Module` that is a drop-in replacement for `nn.LayerNorm(d_model, eps=eps)`: same
# parameter names and shapes (so the same `state_dict` loads into both) and the same outputs. Compute the
# statistics yourself: `F.layer_norm` and `nn.LayerNorm` are what the tests compare you against, not
# building blocks.
#
# Hints: average over the **last** axis and keep it (`keepdim=True`) so that the statistics broadcast back
# against $x$. Subtract the mean before you square: $\mathbb{E}[x^2] - \mathbb{E}[x]^2$ is the same number on
# paper but loses every digit in float32 when the mean is large compared to the spread.

# %% id="a8e6a985" nbgrader={"grade": false, "grade_id": "LayerNorm", "locked": false, "schema_version": 3, "solution": true, "task": false}
import torch
import torch.nn as nn


class LayerNorm(nn.Module):
    """Layer normalisation over the last axis, a drop-in replacement for nn.LayerNorm(d_model, eps=eps).

    LayerNorm(d_model, eps=1e-5)
      Parameters (the same names and shapes as nn.LayerNorm, so one state_dict loads into both):
        weight: nn.Parameter of shape (d_model,), initialised to ones  (gamma, the per-feature scale);
        bias:   nn.Parameter of shape (d_model,), initialised to zeros (beta, the per-feature shift).
      No other parameters. eps: a positive number, float or int; an int is accepted and means the same float
      (LayerNorm(d, eps=1) computes exactly what LayerNorm(d, eps=1.0) does), as in nn.LayerNorm. It is kept as a
      plain Python number in the attribute eps (not a parameter, not a tensor): a float eps as that float; an int
      either as given or as float(eps), both are fine.

    forward(x):
        x: floating tensor of shape (..., d_model), any number of leading axes (also none), contiguous
           or not, float32 or float64. Each vector x[..., :] is normalised on its own:
               mu = mean over the last axis, var = mean of (x - mu)^2 over the last axis (the BIASED
               variance: divide by d_model, not d_model - 1),
               out = (x - mu) / sqrt(var + eps) * weight + bias   (eps INSIDE the square root).
        Returns a new tensor of x's shape and dtype; x is not modified. A constant vector (var = 0)
        gives exactly `bias` (no NaN); d_model = 1 is allowed (the output is `bias`). Accurate when the
        mean is large compared to the spread (e.g. 1e4 + N(0, 1) in float32): subtract the mean before
        squaring. Differentiable with respect to x, weight and bias.
    """

    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        ### BEGIN SOLUTION
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))
        self.bias = nn.Parameter(torch.zeros(d_model))
        ### END SOLUTION

    def forward(self, x):
        ### BEGIN SOLUTION
        mu = x.mean(dim=-1, keepdim=True)
        centred = x - mu
        var = (centred * centred).mean(dim=-1, keepdim=True)         # biased: divide by d_model
        return centred / torch.sqrt(var + self.eps) * self.weight + self.bias
        ### END SOLUTION


# %% id="560c8e0e" nbgrader={"grade": true, "grade_id": "test_LayerNorm", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
import torch
from utils import checks, probes

ln = LayerNorm(4)
params = probes.parameters(ln)
checks.assert_equal(sorted(params), ["bias", "weight"], name="parameter names of LayerNorm(4)",
                    hint="Two nn.Parameter attributes, named weight (gamma) and bias (beta), like nn.LayerNorm.")
checks.assert_close(params["weight"], torch.ones(4), atol=0, rtol=0, name="LayerNorm(4).weight at initialisation",
                    hint="gamma starts at ones, so a fresh LayerNorm only standardises.")
checks.assert_close(params["bias"], torch.zeros(4), atol=0, rtol=0, name="LayerNorm(4).bias at initialisation",
                    hint="beta starts at zeros.")

# The worked example: mean 2.5, biased variance 1.25.
out = ln(torch.tensor([1.0, 2.0, 3.0, 4.0]))
checks.assert_tensor(out, name="LayerNorm(4)([1, 2, 3, 4])", shape=(4,), dtype=torch.float32)
checks.assert_close(out, torch.tensor([-1.3416355, -0.4472118, 0.4472118, 1.3416355]), atol=1e-5,
                    name="LayerNorm(4)([1, 2, 3, 4])",
                    hint="sigma^2 = 1.25 (divide by d = 4, not 3). Values 0.866 times too small mean the unbiased variance.")

# The same vector shifted by 1e4, in float32: the normalised values do not change.
checks.assert_close(ln(torch.tensor([10001.0, 10002.0, 10003.0, 10004.0])), torch.tensor([-1.3416355, -0.4472118, 0.4472118, 1.3416355]),
                    atol=1e-4, name="LayerNorm(4)([10001, 10002, 10003, 10004]) in float32",
                    hint="Subtract the mean before squaring: E[x^2] - E[x]^2 is about 1e8 - 1e8 here, and float32 keeps "
                         "no digit of the 1.25 left over (NaN or garbage).")

# eps = 1 makes the placement of eps visible: var = 1, so (x - mu) / sqrt(1 + 1) = +-0.7071.
out = LayerNorm(2, eps=1.0)(torch.tensor([-1.0, 1.0]))
checks.assert_close(out, torch.tensor([-0.70710678, 0.70710678]), atol=1e-5, name="LayerNorm(2, eps=1.0)([-1, 1])",
                    hint="eps goes INSIDE the square root: sqrt(var + eps) = sqrt(2). (sigma + eps = 2 would give +-0.5.)")

# A constant vector: 0 / sqrt(eps) = 0, never NaN.
checks.assert_close(ln(torch.full((4,), 3.0)), torch.zeros(4), atol=1e-6, name="LayerNorm(4) of a constant vector",
                    hint="x - mu is 0 and var is 0; eps keeps the division finite. Did you leave eps out?")

# Each token is normalised over its own features (the last axis), whatever the leading axes.
x = torch.tensor([[[1.0, 2.0, 3.0, 4.0], [10.0, 10.0, 10.0, 14.0], [0.0, 0.0, 0.0, 0.0]],
                  [[4.0, 3.0, 2.0, 1.0], [-1.0, 1.0, -1.0, 1.0], [2.0, 2.0, 2.0, 2.0]]])
out = ln(x)
checks.assert_tensor(out, name="LayerNorm(4) of a (2, 3, 4) batch", shape=(2, 3, 4), dtype=torch.float32)
expected = torch.tensor([[[-1.3416355, -0.4472118, 0.4472118, 1.3416355], [-0.5773483, -0.5773483, -0.5773483, 1.7320449], [0.0] * 4],
                         [[1.3416355, 0.4472118, -0.4472118, -1.3416355], [-0.9999950, 0.9999950, -0.9999950, 0.9999950], [0.0] * 4]])
checks.assert_close(out, expected, atol=1e-5, name="LayerNorm(4) of a (2, 3, 4) batch",
                    hint="Mean and variance over the LAST axis only (dim=-1, keepdim=True): one pair per token.")

# The affine step: load gamma and beta as a state_dict, exactly as into nn.LayerNorm.
ln.load_state_dict({"weight": torch.tensor([1.0, 2.0, -1.0, 0.5]), "bias": torch.tensor([0.0, 1.0, 0.0, -1.0])})
checks.assert_close(ln(torch.tensor([1.0, 2.0, 3.0, 4.0])), torch.tensor([-1.3416355, 0.1055764, -0.4472118, -0.3291822]),
                    atol=1e-5, name="LayerNorm(4) with weight=[1, 2, -1, 0.5], bias=[0, 1, 0, -1]",
                    hint="After normalising, multiply by weight and add bias, feature by feature.")

# The caller's x stays as it was.
x = torch.tensor([[1.0, 2.0, 3.0, 4.0], [2.0, 0.0, 2.0, 0.0]])
call = probes.traced_call(LayerNorm(4), x.clone())
checks.assert_close(call.args_after[0], x, atol=0, rtol=0, name="LayerNorm's input after the call",
                    hint="x - mu is a new tensor; x -= mu or x.sub_(mu) changes the caller's activations.")
print("LayerNorm: visible tests passed")

# %% id="93515613" nbgrader={"grade": true, "grade_id": "test_LayerNorm_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for LayerNorm run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
import torch.nn.functional as F
from utils import checks, probes

g = torch.Generator().manual_seed(7071)

for shape, eps, dtype in [((3, 5, 8), 1e-5, torch.float32), ((7, 16), 1e-6, torch.float32), ((2, 2, 3, 6), 0.1, torch.float64),
                          ((10,), 1e-5, torch.float64), ((4, 1, 12), 2.0, torch.float32)]:
    d = shape[-1]
    x = torch.randn(shape, generator=g, dtype=dtype) * 3 + 1
    w = torch.randn(d, generator=g, dtype=dtype)
    b = torch.randn(d, generator=g, dtype=dtype)
    ln = LayerNorm(d, eps=eps)
    if dtype == torch.float64:
        ln.double()
    ln.load_state_dict({"weight": w, "bias": b})
    out = ln(x)
    name = f"LayerNorm({d}, eps={eps}) on a {dtype} tensor of shape {shape}"
    checks.assert_tensor(out, name=name, shape=shape, dtype=dtype, hint="Same shape and dtype as the input.")
    tol = 1e-10 if dtype == torch.float64 else 1e-5
    checks.assert_close(out, F.layer_norm(x, (d,), w, b, eps), atol=tol, rtol=tol, name=name + " vs F.layer_norm",
                        hint="Biased variance over the last axis, eps inside the square root, then * weight + bias.")

# A non-contiguous input (a transposed batch, as after a transpose of heads or of batch and time): LayerNorm
# accepts any layout, as nn.LayerNorm does; x.view(-1, d) fails on it.
x = torch.randn(6, 3, 5, generator=g).transpose(0, 2)                      # (5, 3, 6), not contiguous
w, b = torch.randn(6, generator=g), torch.randn(6, generator=g)
ln = LayerNorm(6)
ln.load_state_dict({"weight": w, "bias": b})
checks.assert_close(ln(x), F.layer_norm(x, (6,), w, b), atol=1e-5, rtol=1e-5,
                    name="LayerNorm(6) on a transposed (non-contiguous) tensor of shape (5, 3, 6)",
                    hint="Reduce over dim=-1 of x itself (or flatten with .reshape, not .view): x need not be contiguous.")

# Nearly constant rows: here sigma + eps and sqrt(sigma^2 + eps) differ by a factor of 3.
x = 5.0 + 1e-3 * torch.randn(4, 6, generator=g, dtype=torch.float64)
ln = LayerNorm(6).double()
checks.assert_close(ln(x), F.layer_norm(x, (6,), eps=1e-5), atol=1e-9, rtol=1e-9, name="LayerNorm(6) on rows with spread 1e-3",
                    hint="eps inside the square root: (x - mu) / sqrt(var + eps), not / (sqrt(var) + eps).")

# A large common offset in float32.
x = 1e4 + torch.randn(3, 64, generator=g)
# (Correct float32 implementations differ from F.layer_norm by up to about 5e-3 here, the one-pass formula by 1 or more.)
checks.assert_close(LayerNorm(64)(x), F.layer_norm(x, (64,)), atol=0.05, rtol=0, name="LayerNorm(64) on 1e4 + N(0, 1) in float32",
                    hint="Compute the variance from x - mu; E[x^2] - E[x]^2 cancels catastrophically in float32.")
print("LayerNorm: hidden tests passed")
### END HIDDEN TESTS

# %% id="5425b23e" nbgrader={"grade": true, "grade_id": "test_LayerNorm_hidden_edges", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for LayerNorm (edge cases: the initial parameters, an integer eps, d_model = 1 and constant rows, gradients, the input left unchanged) run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
import torch.nn.functional as F
from utils import checks, probes

g = torch.Generator().manual_seed(7071)

# The initial parameters: weight ones, bias zeros, nothing else (eps is a plain number).
params = probes.parameters(LayerNorm(9))
checks.assert_equal(sorted(params), ["bias", "weight"], name="the parameters of LayerNorm(9)",
                    hint="Exactly two parameters, weight and bias, as in nn.LayerNorm; eps is not a parameter.")
checks.assert_close(params["weight"], torch.ones(9), atol=0, rtol=0, name="LayerNorm(9).weight at initialisation",
                    hint="Start from the identity: weight = ones.")
checks.assert_close(params["bias"], torch.zeros(9), atol=0, rtol=0, name="LayerNorm(9).bias at initialisation",
                    hint="Start from the identity: bias = zeros.")

# eps is the float attribute ln.eps, as in nn.LayerNorm (code written for nn.LayerNorm reads it).
for args, eps in [((9,), 1e-5), ((9, 0.25), 0.25)]:
    eps_seen = LayerNorm(*args).eps
    checks.assert_true(type(eps_seen) is float and eps_seen == eps, name=f"LayerNorm{args}.eps",
                       problem=f"expected the float {eps}, got {eps_seen!r}.",
                       hint="Store the argument as self.eps = eps, a plain float, as nn.LayerNorm does.")

# An integer eps is accepted and means the same float (nn.LayerNorm(2, eps=1) works): eps = 1 gives +-1/sqrt(2) here,
# and the attribute holds the number 1 (the int as given, or 1.0).
try:
    ln = LayerNorm(2, eps=1)
except (TypeError, ValueError, AssertionError) as error:
    checks.assert_true(False, name="LayerNorm(2, eps=1)",
                       problem=f"the call raised {type(error).__name__}: {str(error).splitlines()[0][:200] if str(error) else ''}",
                       hint="eps may be an int, as in nn.LayerNorm(2, eps=1): accept it and use it as a number.")
x = torch.tensor([[-1.0, 1.0], [3.0, 5.0]])
checks.assert_close(ln(x), F.layer_norm(x, (2,), eps=1.0), atol=1e-6, name="LayerNorm(2, eps=1) (an int eps)",
                    hint="An int eps means the same number as a float: (x - mu) / sqrt(var + 1).")
eps_seen = ln.eps
checks.assert_true(type(eps_seen) in (int, float) and eps_seen == 1, name="LayerNorm(2, eps=1).eps",
                   problem=f"expected the number 1 (int or float), got {eps_seen!r}.",
                   hint="Keep eps as a plain Python number: self.eps = eps (or float(eps)), not a tensor or a parameter.")

# d_model = 1 and constant rows give the bias.
ln = LayerNorm(1)
ln.load_state_dict({"weight": torch.tensor([3.0]), "bias": torch.tensor([0.25])})
checks.assert_close(ln(torch.tensor([[2.0], [-7.0]])), torch.tensor([[0.25], [0.25]]), atol=1e-6, name="LayerNorm(1)",
                    hint="A single feature is its own mean: the normalised value is 0, the output is bias.")
ln = LayerNorm(5)
ln.load_state_dict({"weight": torch.full((5,), 2.0), "bias": torch.arange(5.0)})
checks.assert_close(ln(torch.full((2, 5), -4.0)), torch.arange(5.0).expand(2, 5), atol=1e-6,
                    name="LayerNorm(5) of constant rows", hint="A constant row normalises to 0, so the output is bias (no NaN).")

# Gradients with respect to x, weight and bias, against autograd through F.layer_norm.
x = torch.randn(2, 3, 7, generator=g, dtype=torch.float64)
w = torch.randn(7, generator=g, dtype=torch.float64)
b = torch.randn(7, generator=g, dtype=torch.float64)
grad_out = torch.randn(2, 3, 7, generator=g, dtype=torch.float64)
ln = LayerNorm(7).double()
ln.load_state_dict({"weight": w, "bias": b})
result = probes.gradients(ln, x.clone().requires_grad_(), grad_output=grad_out)
xr, wr, br = (t.clone().requires_grad_() for t in (x, w, b))
(F.layer_norm(xr, (7,), wr, br, 1e-5) * grad_out).sum().backward()
for label, got, want in [("x", result["inputs"][0], xr.grad), ("weight", result["params"].get("weight"), wr.grad),
                         ("bias", result["params"].get("bias"), br.grad)]:
    checks.assert_true(got is not None, name=f"gradient of LayerNorm with respect to {label}",
                       problem="no gradient came back.", hint="Use torch operations on x and the parameters only.")
    checks.assert_close(got, want, atol=1e-9, rtol=1e-7, name=f"gradient of LayerNorm with respect to {label}")

# The input is left alone.
x = torch.randn(3, 4, generator=g)
traced = probes.traced_call(LayerNorm(4), x)
checks.assert_close(traced.args_after[0], x, atol=0, rtol=0, name="LayerNorm's input after the call",
                    hint="Do not modify x in place (x -= mu changes the caller's tensor).")
checks.assert_true(not traced.shares_memory, name="LayerNorm's output", problem="the output shares memory with x.",
                   hint="Return a new tensor.")
print("LayerNorm: hidden tests (edge cases) passed")
### END HIDDEN TESTS

# %% [markdown] id="94cb0f57"
# ### $\sqrt{\sigma^2 + \varepsilon}$ against $\sigma + \varepsilon$
#
# Both formulas divide by "the standard deviation, kept away from zero", and for a vector with
# $\sigma \approx 1$ you cannot tell them apart. Below, the same vector is shrunk to smaller and smaller spreads
# $\sigma$ and normalised both ways, with $\varepsilon = 10^{-5}$. The number printed is the standard deviation
# of the output, which LayerNorm is supposed to make 1.
#
# **Predict before you run.** At $\sigma = 10^{-3}$, which formula still gives an output spread near 1?
#
# <details><summary>Answer</summary>
#
# $\sigma + \varepsilon = 1.01 \times 10^{-3}$, so that form still gives about $0.99$. The square-root form divides
# by $\sqrt{10^{-6} + 10^{-5}} = 3.3 \times 10^{-3}$ and gives about $0.30$: once $\sigma^2$ falls below
# $\varepsilon$, it deliberately stops amplifying (a nearly constant vector is mostly rounding noise, and
# blowing it up to unit scale would amplify the noise). The two formulas are different functions, so a
# model trained with one gives different outputs with the other: implement the one the weights were trained
# with, which for PyTorch, GPT-2 and almost every released model is $\sqrt{\sigma^2 + \varepsilon}$.
# </details>

# %% id="14b33669"
def sigma_plus_eps_norm(x, eps=1e-5):
    # The variant some texts print: (x - mu) / (sigma + eps). Not what nn.LayerNorm computes.
    mu = x.mean(-1, keepdim=True)
    sigma = ((x - mu) ** 2).mean(-1, keepdim=True).sqrt()
    return (x - mu) / (sigma + eps)


base = torch.randn(1, 512, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
base = (base - base.mean()) / base.std(correction=0)            # spread exactly 1
ours = LayerNorm(512).double()
print(f"{'sigma':>8} {'sqrt(var + eps)':>17} {'sigma + eps':>13} {'max |difference|':>18}")
spread = {}
for sigma in [1.0, 0.1, 0.01, 0.003, 0.001, 0.0001]:
    x = 7.0 + sigma * base
    with torch.no_grad():
        a, b = ours(x), sigma_plus_eps_norm(x)
    spread[sigma] = (a.std(correction=0).item(), b.std(correction=0).item())
    print(f"{sigma:>8g} {a.std(correction=0).item():>17.4f} {b.std(correction=0).item():>13.4f} {(a - b).abs().max().item():>18.2e}")
claims.claim(f"At sigma = 1 the two forms give spreads {spread[1.0][0]:.4f} and {spread[1.0][1]:.4f}; at sigma = 1e-3 "
             f"the square-root form gives {spread[0.001][0]:.2f} and sigma + eps {spread[0.001][1]:.2f}, "
             f"{spread[0.001][1] / spread[0.001][0]:.1f} times more",
             holds=abs(spread[1.0][0] - spread[1.0][1]) < 1e-3 and abs(spread[0.001][0] - 0.30) < 0.02
             and abs(spread[0.001][1] - 0.99) < 0.01, why_it_may_not="your LayerNorm differs from nn.LayerNorm")
with torch.no_grad():
    x = torch.randn(4, 64, dtype=torch.float64)
    print("\nyour LayerNorm against nn.LayerNorm on random data: max |difference| =",
          f"{(LayerNorm(64).double()(x) - nn.LayerNorm(64).double()(x)).abs().max().item():.1e}")

# %% [markdown] id="cf6d65bb"
# ## 3. The position-wise feed-forward network
#
# Attention mixes tokens but is, for a fixed attention pattern, linear in the values: every output is a
# weighted average of value vectors. The FFN adds the non-linear computation, applied to **each position
# separately and identically** (the same weights for every token, no information crosses positions):
#
# $$
# \operatorname{FFN}(x) = \phi(x W_1^\top + b_1)\, W_2^\top + b_2, \qquad
# W_1 \in \mathbb{R}^{d_\text{ff} \times d},\; W_2 \in \mathbb{R}^{d \times d_\text{ff}},
# $$
#
# in PyTorch's $(\text{out}, \text{in})$ layout of `nn.Linear`. The hidden width is conventionally
# $d_\text{ff} = 4d$ (2048 for $d = 512$, 3072 for GPT-2's $d = 768$): the FFN expands, applies $\phi$, and
# projects back. It holds $2\,d\,d_\text{ff} = 8d^2$ weights, twice an attention layer's $4d^2$, so about two
# thirds of a block's parameters. Because it acts on each row of a $(B, T, d)$ tensor alone, `nn.Linear`,
# which works on the last axis, is all you need: no loop over positions.
#
# **The activation $\phi$.** The original transformer used $\operatorname{ReLU}(z) = \max(0, z)$. GPT, BERT and
# most models since use the **Gaussian error linear unit**,
#
# $$
# \operatorname{GELU}(z) = z\,\Phi(z) = \frac{z}{2}\Big(1 + \operatorname{erf}\big(z/\sqrt{2}\big)\Big),
# $$
#
# with $\Phi$ the standard normal CDF: a smooth ReLU that lets small negative values through a little. There
# is also a popular **tanh approximation**, $\tfrac{z}{2}\big(1 + \tanh\big(\sqrt{2/\pi}\,(z + 0.044715 z^3)\big)\big)$,
# which GPT-2 itself used and which `nn.GELU(approximate="tanh")` computes. It differs from the exact form by
# at most about $5 \times 10^{-4}$. In this notebook "gelu" means the **exact** erf form, `nn.GELU()`'s default.
#
# **Predict before you run.** $\operatorname{GELU}(1) = \Phi(1) \approx 0.8413$ and
# $\operatorname{GELU}(-1) = -\Phi(-1) \approx -0.1587$. What is $\operatorname{GELU}(-1) + \operatorname{GELU}(1)$,
# and $\operatorname{GELU}(z) - \operatorname{GELU}(-z)$ for any $z$?
#
# <details><summary>Answer</summary>
#
# $0.8413 - 0.1587 = 0.6827 = 2\Phi(1) - 1$, the probability mass of a standard normal within one standard
# deviation. In general $\operatorname{GELU}(z) - \operatorname{GELU}(-z) = z\Phi(z) + z\Phi(-z) = z$, exactly as for ReLU:
# the two differ only in the symmetric part, $\operatorname{GELU}(z) + \operatorname{GELU}(-z) = z\,(2\Phi(z) - 1)$,
# which ReLU has as $|z|$.
# </details>

# %% id="bd3dcb1e"
z = torch.tensor([-2.0, -1.0, 0.0, 1.0, 2.0])
print("z             ", z.tolist())
print("ReLU          ", F.relu(z).tolist())
print("GELU (exact)  ", [round(v, 6) for v in F.gelu(z).tolist()])
print("GELU (tanh)   ", [round(v, 6) for v in F.gelu(z, approximate="tanh").tolist()])
print("GELU(1) + GELU(-1) =", round((F.gelu(torch.tensor(1.0)) + F.gelu(torch.tensor(-1.0))).item(), 4),
      "  2 Phi(1) - 1 =", round(math.erf(1 / math.sqrt(2)), 4))

grid = torch.linspace(-4, 4, 801)
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.5))
ax1.plot(grid, F.relu(grid), label="ReLU")
ax1.plot(grid, F.gelu(grid), label="GELU (exact)")
ax1.set_title("Activations")
ax1.set_xlabel("z")
ax1.legend()
ax2.plot(grid, F.gelu(grid) - F.gelu(grid, approximate="tanh"))
ax2.set_title("GELU exact minus tanh approximation")
ax2.set_xlabel("z")
fig.tight_layout()
plt.show()

# %% [markdown] id="847d777e"
# ### Exercise 2: `FeedForward` (1 + 2 + 1 points)
#
# *Points: 1 visible, 2 hidden (widths, activations, shapes and dtypes against a reference, a non-contiguous input, the exact GELU), 1 hidden (edge cases: the defaults, gradients, the input left unchanged, unknown activations raise ValueError).*
#
# Write the FFN as an `nn.Module` with two `nn.Linear` layers named `fc1` and `fc2` (the tests load weights
# by these names) and the activation chosen by a string. No dropout.
#
# Hints: the activation goes **between** the two linear layers, never after the second (the output is an
# update added to the residual stream, and it must be able to be negative). Check which GELU your function
# computes.

# %% id="2febfd95" nbgrader={"grade": false, "grade_id": "FeedForward", "locked": false, "schema_version": 3, "solution": true, "task": false}
import torch
import torch.nn as nn
import torch.nn.functional as F


class FeedForward(nn.Module):
    """The position-wise feed-forward network: fc2(activation(fc1(x))).

    FeedForward(d_model, d_ff=None, activation="gelu")
      d_ff: hidden width; None means 4 * d_model.
      activation: "relu" (max(0, z)) or "gelu" (the EXACT GELU z * Phi(z) = z/2 (1 + erf(z / sqrt 2)),
        nn.GELU()'s default, not the tanh approximation). Any other value raises ValueError.
      Parameters (the tests load weights by these names):
        fc1: nn.Linear(d_model, d_ff)  (weight (d_ff, d_model), bias (d_ff,));
        fc2: nn.Linear(d_ff, d_model)  (weight (d_model, d_ff), bias (d_model,)).
      No other parameters, no dropout.

    forward(x):
        x: floating tensor of shape (..., d_model) (any leading axes, contiguous or not), float32 or float64.
        Returns a new tensor of the same shape and dtype: fc2(phi(fc1(x))), applied to every position
        separately. x is not modified. Differentiable.
    """

    def __init__(self, d_model, d_ff=None, activation="gelu"):
        super().__init__()
        ### BEGIN SOLUTION
        if activation not in ("relu", "gelu"):
            raise ValueError(f"activation must be 'relu' or 'gelu', not {activation!r}")
        d_ff = 4 * d_model if d_ff is None else d_ff
        self.activation = activation
        self.fc1 = nn.Linear(d_model, d_ff)
        self.fc2 = nn.Linear(d_ff, d_model)
        ### END SOLUTION

    def forward(self, x):
        ### BEGIN SOLUTION
        hidden = self.fc1(x)
        hidden = F.relu(hidden) if self.activation == "relu" else F.gelu(hidden)   # exact (erf) GELU
        return self.fc2(hidden)
        ### END SOLUTION


# %% id="d0a90999" nbgrader={"grade": true, "grade_id": "test_FeedForward", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
import torch
from utils import checks, probes

# Names and shapes; d_ff defaults to 4 * d_model.
shapes = {n: tuple(p.shape) for n, p in probes.parameters(FeedForward(4)).items()}
checks.assert_equal(shapes, {"fc1.weight": (16, 4), "fc1.bias": (16,), "fc2.weight": (4, 16), "fc2.bias": (4,)},
                    name="parameter shapes of FeedForward(4)",
                    hint="fc1 = nn.Linear(d_model, d_ff), fc2 = nn.Linear(d_ff, d_model), with d_ff = 4 * d_model by default.")
shapes = {n: tuple(p.shape) for n, p in probes.parameters(FeedForward(4, d_ff=6)).items()}
checks.assert_equal(shapes, {"fc1.weight": (6, 4), "fc1.bias": (6,), "fc2.weight": (4, 6), "fc2.bias": (4,)},
                    name="parameter shapes of FeedForward(4, d_ff=6)", hint="Use the d_ff you are given.")

# Identity in, minus identity out: the output is -phi(z), so phi shows directly.
z = torch.tensor([[-2.0, -1.0, 0.0, 1.0, 2.0]])
weights = {"fc1.weight": torch.eye(5), "fc1.bias": torch.zeros(5), "fc2.weight": -torch.eye(5), "fc2.bias": torch.zeros(5)}
ffn = FeedForward(5, d_ff=5, activation="relu")
ffn.load_state_dict(weights)
out = ffn(z)
checks.assert_tensor(out, name="FeedForward(5, 5, 'relu') with fc1 = I, fc2 = -I", shape=(1, 5), dtype=torch.float32)
checks.assert_close(out, torch.tensor([[0.0, 0.0, 0.0, -1.0, -2.0]]), atol=1e-6,
                    name="FeedForward(5, 5, 'relu') with fc1 = I, fc2 = -I",
                    hint="fc2(relu(fc1(x))) = -relu(z). The activation goes between fc1 and fc2, not after fc2.")
ffn = FeedForward(5, d_ff=5, activation="gelu")
ffn.load_state_dict(weights)
checks.assert_close(ffn(z), torch.tensor([[0.04550026, 0.15865526, 0.0, -0.84134475, -1.95449972]]), atol=2e-6,
                    name="FeedForward(5, 5, 'gelu') with fc1 = I, fc2 = -I",
                    hint="-GELU(z) with the EXACT GELU z * Phi(z): GELU(1) = 0.841345. The tanh approximation gives 0.841192.")
default = FeedForward(5, d_ff=5)
default.load_state_dict(weights)
checks.assert_close(default(z), torch.tensor([[0.04550026, 0.15865526, 0.0, -0.84134475, -1.95449972]]), atol=2e-6,
                    name="FeedForward(5, 5) with the default activation, fc1 = I, fc2 = -I",
                    hint='activation="gelu" is the default: -GELU(z), not -ReLU(z) = (0, 0, 0, -1, -2).')

# Biases and a (B, T, d) input: every position gets the same map.
ffn.load_state_dict({"fc1.weight": torch.eye(5), "fc1.bias": torch.ones(5), "fc2.weight": torch.eye(5), "fc2.bias": torch.full((5,), -1.0)})
x = torch.zeros(2, 3, 5)
checks.assert_close(ffn(x), torch.full((2, 3, 5), 0.84134475 - 1.0), atol=2e-6, name="FeedForward on zeros with biases 1 and -1",
                    hint="GELU(0 + 1) - 1 at every position: fc1 adds its bias before the activation, fc2 after.")
checks.assert_raises(ValueError, FeedForward, 4, activation="swish", name="FeedForward(4, activation='swish')",
                     hint="Only 'relu' and 'gelu' are defined: raise ValueError for anything else.")
print("FeedForward: visible tests passed")

# %% id="a1bfdb9a" nbgrader={"grade": true, "grade_id": "test_FeedForward_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for FeedForward run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks, probes

g = torch.Generator().manual_seed(3072)


def reference(x, sd, activation):
    hidden = torch.nn.functional.linear(x, sd["fc1.weight"], sd["fc1.bias"])
    hidden = torch.relu(hidden) if activation == "relu" else torch.nn.GELU()(hidden)
    return torch.nn.functional.linear(hidden, sd["fc2.weight"], sd["fc2.bias"])


def random_state(d, d_ff, dtype):
    return {"fc1.weight": torch.randn(d_ff, d, generator=g, dtype=dtype), "fc1.bias": torch.randn(d_ff, generator=g, dtype=dtype),
            "fc2.weight": torch.randn(d, d_ff, generator=g, dtype=dtype) / d_ff ** 0.5, "fc2.bias": torch.randn(d, generator=g, dtype=dtype)}


for d, d_ff, activation, shape, dtype in [(8, None, "gelu", (2, 5), torch.float32), (6, 10, "relu", (3, 4), torch.float32),
                                           (12, 7, "gelu", (2, 3, 2), torch.float64), (5, None, "relu", (), torch.float64),
                                           (3, 1, "gelu", (9,), torch.float32)]:
    width = 4 * d if d_ff is None else d_ff
    ffn = FeedForward(d, d_ff, activation=activation)
    shapes = {n: tuple(p.shape) for n, p in probes.parameters(ffn).items()}
    checks.assert_equal(shapes, {"fc1.weight": (width, d), "fc1.bias": (width,), "fc2.weight": (d, width), "fc2.bias": (d,)},
                        name=f"parameter shapes of FeedForward({d}, {d_ff}, {activation!r})")
    if dtype == torch.float64:
        ffn.double()
    sd = random_state(d, width, dtype)
    ffn.load_state_dict(sd)
    x = torch.randn(*shape, d, generator=g, dtype=dtype) * 2
    out = ffn(x)
    name = f"FeedForward({d}, {d_ff}, {activation!r}) on a {dtype} input of shape {tuple(x.shape)}"
    checks.assert_tensor(out, name=name, shape=tuple(x.shape), dtype=dtype)
    tol = 1e-10 if dtype == torch.float64 else 1e-5
    checks.assert_close(out, reference(x, sd, activation), atol=tol, rtol=tol, name=name,
                        hint="fc2(phi(fc1(x))) with the exact GELU (erf), or ReLU when asked.")

# A non-contiguous input (a transposed batch): the FFN acts on the last axis whatever the layout.
ffn = FeedForward(6, 10, activation="relu")
sd = random_state(6, 10, torch.float32)
ffn.load_state_dict(sd)
x = torch.randn(6, 4, 3, generator=g).transpose(0, 2)                     # (3, 4, 6), not contiguous
checks.assert_close(ffn(x), reference(x, sd, "relu"), atol=1e-5, rtol=1e-5,
                    name="FeedForward(6, 10, 'relu') on a transposed (non-contiguous) input of shape (3, 4, 6)",
                    hint="nn.Linear works on the last axis of any tensor; flattening with .view fails on a non-contiguous x (use .reshape, or no flattening).")

# The exact GELU, far into both tails and near 0 (float64).
ffn = FeedForward(7, d_ff=7, activation="gelu").double()
ffn.load_state_dict({"fc1.weight": torch.eye(7, dtype=torch.float64), "fc1.bias": torch.zeros(7, dtype=torch.float64),
                     "fc2.weight": torch.eye(7, dtype=torch.float64), "fc2.bias": torch.zeros(7, dtype=torch.float64)})
z = torch.tensor([[-6.0, -3.0, -0.5, 0.1, 0.7, 2.5, 9.0]], dtype=torch.float64)
expected = z * 0.5 * (1 + torch.special.erf(z / 2 ** 0.5))           # the closed form, in float64
checks.assert_close(ffn(z), expected, atol=1e-12, rtol=1e-10, name="the GELU of FeedForward(7, 7, 'gelu') in float64",
                    hint="GELU(z) = z/2 (1 + erf(z / sqrt 2)), the exact form, not the tanh approximation.")
print("FeedForward: hidden tests passed")
### END HIDDEN TESTS

# %% id="f3651384" nbgrader={"grade": true, "grade_id": "test_FeedForward_hidden_edges", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for FeedForward (edge cases: the defaults, gradients, the input left unchanged, unknown activations raise ValueError) run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks, probes

g = torch.Generator().manual_seed(3072)


def reference(x, sd, activation):
    hidden = torch.nn.functional.linear(x, sd["fc1.weight"], sd["fc1.bias"])
    hidden = torch.relu(hidden) if activation == "relu" else torch.nn.GELU()(hidden)
    return torch.nn.functional.linear(hidden, sd["fc2.weight"], sd["fc2.bias"])


def random_state(d, d_ff, dtype):
    return {"fc1.weight": torch.randn(d_ff, d, generator=g, dtype=dtype), "fc1.bias": torch.randn(d_ff, generator=g, dtype=dtype),
            "fc2.weight": torch.randn(d, d_ff, generator=g, dtype=dtype) / d_ff ** 0.5, "fc2.bias": torch.randn(d, generator=g, dtype=dtype)}


# The defaults: d_ff = 4 * d_model and the exact GELU.
ffn = FeedForward(5)
shapes = {n: tuple(p.shape) for n, p in probes.parameters(ffn).items()}
checks.assert_equal(shapes, {"fc1.weight": (20, 5), "fc1.bias": (20,), "fc2.weight": (5, 20), "fc2.bias": (5,)},
                    name="parameter shapes of FeedForward(5)", hint="d_ff=None means 4 * d_model.")
ffn.double()
sd = random_state(5, 20, torch.float64)
ffn.load_state_dict(sd)
x = torch.randn(3, 5, generator=g, dtype=torch.float64) * 2
checks.assert_close(ffn(x), reference(x, sd, "gelu"), atol=1e-10, rtol=1e-10, name="FeedForward(5) with the default activation",
                    hint='The default activation is "gelu" (exact).')

# Gradients of every parameter and of x.
d, width = 6, 9
ffn = FeedForward(d, width, activation="gelu").double()
sd = random_state(d, width, torch.float64)
ffn.load_state_dict(sd)
x = torch.randn(2, 4, d, generator=g, dtype=torch.float64)
grad_out = torch.randn(2, 4, d, generator=g, dtype=torch.float64)
result = probes.gradients(ffn, x.clone().requires_grad_(), grad_output=grad_out)
leaves = {n: t.clone().requires_grad_() for n, t in sd.items()}
xr = x.clone().requires_grad_()
(reference(xr, leaves, "gelu") * grad_out).sum().backward()
for n, leaf in leaves.items():
    got = result["params"].get(n)
    checks.assert_true(got is not None, name=f"gradient of {n}", problem="no gradient reached this parameter.")
    checks.assert_close(got, leaf.grad, atol=1e-9, rtol=1e-7, name=f"gradient of {n}")
checks.assert_close(result["inputs"][0], xr.grad, atol=1e-9, rtol=1e-7, name="gradient of FeedForward with respect to x")

traced = probes.traced_call(ffn, x)
checks.assert_close(traced.args_after[0], x, atol=0, rtol=0, name="FeedForward's input after the call", hint="Do not modify x in place.")
for bad in ("GELU", "tanh", "", None):
    checks.assert_raises(ValueError, FeedForward, 4, 8, bad, name=f"FeedForward(4, 8, {bad!r})",
                         hint="Only 'relu' and 'gelu' (lower case) are accepted.")
print("FeedForward: hidden tests (edge cases) passed")
### END HIDDEN TESTS

# %% [markdown] id="e3c59051"
# ## 4. Assembling the block
#
# With LayerNorm and the FFN written, a block is four modules and two residual additions. Attention comes
# from PyTorch here, `nn.MultiheadAttention(d_model, n_head, batch_first=True)` (earlier notebooks built it by
# hand; this one uses the built-in so it stands on its own). It is called with the same tensor as query, key
# and value, and for a causal (decoder) block with a boolean `attn_mask` that is `True` where attention is
# **forbidden**, above the diagonal: position $t$ may read positions $\le t$ only.
#
# ```python
# out, _ = self.attn(h, h, h, attn_mask=mask, need_weights=False)   # out: (B, T, d)
# ```
#
# **The residual stream.** Read the Pre-LN equations as a program: there is one running tensor $x$; each
# sublayer reads a normalised copy of it and **adds** its result. The stream after $L$ blocks is the input
# plus the sum of $2L$ updates. Two bugs look almost right and are common: normalising the stream itself
# (`x = ln1(x); x = x + attn(x)`, which throws the un-normalised input away) and adding the residual twice
# (`x = x + (x + attn(...))`, which doubles the stream at every sublayer).
#
# **Predict before you run.** Set the output projection of attention and the second FFN layer to zero
# (weights and biases). What does a Pre-LN block return for an input $x$? And a Post-LN block with
# default LayerNorms ($\gamma = 1$, $\beta = 0$)?
#
# <details><summary>Answer</summary>
#
# Both sublayers now output exactly 0. Pre-LN: $x' = x + 0$, $y = x' + 0$, so the block is the **identity**:
# a Pre-LN stack can start as "do nothing" and learn corrections. Post-LN: $y = \operatorname{LN}_2(\operatorname{LN}_1(x))$,
# which is $\operatorname{LN}(x)$ (normalising twice changes almost nothing): a Post-LN block can never pass its
# input through unchanged, its output is always standardised.
# </details>
#
# **An exercise in stacking.** Once your `PreLNBlock` passes its tests, stack four of them with $d = 64$, $h = 4$ and
# $d_\text{ff} = 256$ (`nn.Sequential` will do), pass a random batch of shape $(2, 12, 64)$ (batch 2, length 12) through
# the stack, and check two things: the output has the input's shape, and after `out.sum().backward()` every
# parameter holds a gradient (`all(p.grad is not None for p in stack.parameters())`). The cell after Exercise 4
# does it, and the hidden tests run the same check on your blocks.
#
# **Parameter layout.** The hidden tests build your block, load a `state_dict` into it and compare with a
# block assembled from `nn.LayerNorm`, `nn.MultiheadAttention` and `nn.Linear`, so the names are part of the
# contract:
#
# | name | module | parameters |
# |---|---|---|
# | `ln1` | your `LayerNorm(d_model)` (or `nn.LayerNorm`) | `ln1.weight`, `ln1.bias` $(d)$ |
# | `attn` | `nn.MultiheadAttention(d_model, n_head, batch_first=True)` | `attn.in_proj_weight` $(3d, d)$, `attn.in_proj_bias` $(3d)$, `attn.out_proj.weight` $(d, d)$, `attn.out_proj.bias` $(d)$ |
# | `ln2` | `LayerNorm(d_model)` | `ln2.weight`, `ln2.bias` $(d)$ |
# | `ffn` | your `FeedForward(d_model, d_ff, activation)` | `ffn.fc1.weight` $(d_\text{ff}, d)$, `ffn.fc1.bias`, `ffn.fc2.weight` $(d, d_\text{ff})$, `ffn.fc2.bias` |
#
# ### Exercise 3: `PreLNBlock` (2 + 3 + 1 points)
#
# *Points: 2 visible, 3 hidden (behaviour), 1 hidden (one block called with several sequence lengths and causal flags in turn, in training and in eval mode, the default `causal=False`, and the mask made on x's device).*
#
# Hints: two separate LayerNorms, one per sublayer (they learn different scales). The residual adds the
# block's input as it came in, not its normalised copy. Build the mask from the sequence length of the
# input you are given.

# %% id="53ae984b" nbgrader={"grade": false, "grade_id": "PreLNBlock", "locked": false, "schema_version": 3, "solution": true, "task": false}
import torch
import torch.nn as nn


class PreLNBlock(nn.Module):
    """A Pre-LN transformer block:  x' = x + MHA(LN1(x));  y = x' + FFN(LN2(x')).

    PreLNBlock(d_model, n_head, d_ff=None, activation="gelu")
      Submodules, with exactly these names (the tests load a state_dict by them):
        ln1:  LayerNorm(d_model)      -> ln1.weight, ln1.bias                       (d_model,)
        attn: nn.MultiheadAttention(d_model, n_head, batch_first=True)  (bias, no dropout)
              -> attn.in_proj_weight (3 d_model, d_model), attn.in_proj_bias (3 d_model,),
                 attn.out_proj.weight (d_model, d_model), attn.out_proj.bias (d_model,)
        ln2:  LayerNorm(d_model)      -> ln2.weight, ln2.bias                       (d_model,)
        ffn:  FeedForward(d_model, d_ff, activation)
              -> ffn.fc1.weight (d_ff, d_model), ffn.fc1.bias (d_ff,), ffn.fc2.weight (d_model, d_ff),
                 ffn.fc2.bias (d_model,)            (d_ff = 4 * d_model when None)
      No other parameters. Your LayerNorm/FeedForward or nn.LayerNorm / an equivalent module with the
      same names all work. No dropout anywhere.

    forward(x, causal=False):
        x: floating tensor (B, T, d_model), T >= 1, float32 or float64 (after .double()).
        Self-attention on LN1(x) as query, key and value; with causal=True position t attends to
        positions <= t only (a boolean attn_mask, True above the diagonal); with causal=False to all.
        Returns a new tensor (B, T, d_model) of x's dtype; x is not modified. Differentiable with
        respect to x and every parameter. Leaves the block and its submodules in the mode (training or
        eval) its caller set. Runs on the device of the block and x (a GPU too): every tensor it makes,
        the mask included, is made on x.device.
    """

    def __init__(self, d_model, n_head, d_ff=None, activation="gelu"):
        super().__init__()
        ### BEGIN SOLUTION
        self.ln1 = LayerNorm(d_model)
        self.attn = nn.MultiheadAttention(d_model, n_head, batch_first=True)
        self.ln2 = LayerNorm(d_model)
        self.ffn = FeedForward(d_model, d_ff, activation)
        ### END SOLUTION

    def forward(self, x, causal=False):
        ### BEGIN SOLUTION
        T = x.shape[1]
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1) if causal else None
        h = self.ln1(x)                                        # the sublayer reads a normalised copy ...
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]   # ... and adds to the stream
        return x + self.ffn(self.ln2(x))
        ### END SOLUTION


# %% id="b9fbafd8" nbgrader={"grade": true, "grade_id": "test_PreLNBlock", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
import torch
from utils import checks, probes

g = torch.Generator().manual_seed(707)

def block_shapes(d, d_ff):
    return {"ln1.weight": (d,), "ln1.bias": (d,), "attn.in_proj_weight": (3 * d, d), "attn.in_proj_bias": (3 * d,),
            "attn.out_proj.weight": (d, d), "attn.out_proj.bias": (d,), "ln2.weight": (d,), "ln2.bias": (d,),
            "ffn.fc1.weight": (d_ff, d), "ffn.fc1.bias": (d_ff,), "ffn.fc2.weight": (d, d_ff), "ffn.fc2.bias": (d,)}


def random_state(d, d_ff, g, dtype=torch.float32):
    def r(*shape, scale=1.0):
        return torch.randn(*shape, generator=g, dtype=dtype) * scale
    return {"ln1.weight": 1 + 0.3 * r(d), "ln1.bias": 0.2 * r(d),
            "attn.in_proj_weight": r(3 * d, d, scale=1.5 / d ** 0.5), "attn.in_proj_bias": r(3 * d, scale=0.1),
            "attn.out_proj.weight": r(d, d, scale=d ** -0.5), "attn.out_proj.bias": r(d, scale=0.1),
            "ln2.weight": 1 + 0.3 * r(d), "ln2.bias": 0.2 * r(d),
            "ffn.fc1.weight": r(d_ff, d, scale=d ** -0.5), "ffn.fc1.bias": r(d_ff, scale=0.1),
            "ffn.fc2.weight": r(d, d_ff, scale=d_ff ** -0.5), "ffn.fc2.bias": r(d, scale=0.1)}


class ReferenceBlock(torch.nn.Module):
    # The same block assembled from PyTorch's own modules, with the same parameter names.
    def __init__(self, d, n_head, d_ff, activation, pre_ln):
        super().__init__()
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.attn = torch.nn.MultiheadAttention(d, n_head, batch_first=True)
        self.ffn = torch.nn.ModuleDict({"fc1": torch.nn.Linear(d, d_ff), "fc2": torch.nn.Linear(d_ff, d)})
        self.act = torch.nn.ReLU() if activation == "relu" else torch.nn.GELU()
        self.pre_ln = pre_ln

    def forward(self, x, causal=False):
        T = x.shape[1]
        mask = torch.ones(T, T, dtype=torch.bool).triu(1) if causal else None
        ffn = lambda z: self.ffn["fc2"](self.act(self.ffn["fc1"](z)))
        if self.pre_ln:
            h = self.ln1(x)
            x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
            return x + ffn(self.ln2(x))
        x = self.ln1(x + self.attn(x, x, x, attn_mask=mask, need_weights=False)[0])
        return self.ln2(x + ffn(x))


def reference(sd, x, n_head, d_ff, activation, pre_ln, causal):
    ref = ReferenceBlock(x.shape[-1], n_head, d_ff, activation, pre_ln).to(x.dtype)
    ref.load_state_dict(sd)
    with torch.no_grad():
        return ref(x, causal=causal)


block = PreLNBlock(8, 2)
shapes = {n: tuple(p.shape) for n, p in probes.parameters(block).items()}
checks.assert_equal(shapes, block_shapes(8, 32), name="parameter names and shapes of PreLNBlock(8, 2)",
                    hint="ln1, attn (nn.MultiheadAttention, batch_first=True), ln2, ffn (fc1, fc2 with d_ff = 4 * d_model): "
                         "two separate LayerNorms, nothing else.")

# Zero updates: the attention's output projection and the FFN's second layer are 0. Pre-LN is then the identity.
sd = random_state(8, 32, g)
for n in ("attn.out_proj.weight", "attn.out_proj.bias", "ffn.fc2.weight", "ffn.fc2.bias"):
    sd[n] = torch.zeros_like(sd[n])
block.load_state_dict(sd)
x = torch.tensor([[[1.0, 2.0, 3.0, 4.0, 0.0, 0.0, 0.0, 2.0], [0.5, -1.0, 0.0, 0.0, 1.0, 1.0, 3.0, 0.0]]])
out = block(x)
checks.assert_tensor(out, name="PreLNBlock(8, 2) with zero updates", shape=(1, 2, 8), dtype=torch.float32)
checks.assert_close(out, x, atol=1e-6, name="PreLNBlock(8, 2) with zero updates (out_proj = 0, fc2 = 0)",
                    hint="Both sublayers add 0, so y = x. Getting 0 means the residual is missing; 2x, that it is added "
                         "twice; a normalised x, that the stream itself was normalised (LN after the residual, or "
                         "x = ln1(x) before adding).")
sd["ffn.fc2.bias"] = torch.full((8,), 0.5)
block.load_state_dict(sd)
checks.assert_close(block(x), x + 0.5, atol=1e-6, name="PreLNBlock(8, 2) whose FFN outputs the constant 0.5",
                    hint="y = x' + FFN(LN2(x')) with FFN = 0.5 everywhere: x + 0.5.")

# Random weights: the same state_dict in your block and in one built from nn.LayerNorm, nn.MultiheadAttention, nn.Linear.
sd = random_state(8, 32, g)
block.load_state_dict(sd)
x = torch.randn(2, 5, 8, generator=g)
for causal in (False, True):
    name = f"PreLNBlock(8, 2)(x, causal={causal}) vs the same block built from PyTorch modules"
    out = block(x, causal=causal)
    checks.assert_tensor(out, name=name, shape=(2, 5, 8), dtype=torch.float32)
    checks.assert_close(out, reference(sd, x, 2, 32, "gelu", True, causal), atol=1e-5, rtol=1e-4, name=name,
                        hint="y = x' + FFN(LN2(x')), x' = x + MHA(LN1(x)): ln1 before attention, ln2 before the FFN, each used once.")

# causal=True: changing the last token must not change the outputs at earlier positions.
x2 = x.clone()
x2[:, -1] = 3 * torch.randn(2, 8, generator=g)
checks.assert_close(block(x2, causal=True)[:, :-1], block(x, causal=True)[:, :-1], atol=1e-5,
                    name="causal outputs at positions 0..3 after changing position 4",
                    hint="With causal=True pass attn_mask = a (T, T) boolean tensor, True above the diagonal.")

# A longer sequence after the calls with T = 5: each call builds the mask for its own length.
x7 = torch.randn(1, 7, 8, generator=g)
checks.assert_close(block(x7, causal=True), reference(sd, x7, 2, 32, "gelu", True, True), atol=1e-5, rtol=1e-4,
                    name="PreLNBlock(8, 2)(x, causal=True) on T = 7 after calls with T = 5",
                    hint="Build the mask from this call's T; a mask kept from an earlier call has the wrong size.")

# The stacking exercise of section 4: four blocks, d_model = 64, h = 4, on a (2, 12, 64) input.
stack = probes.make("torch.nn.Sequential", *[PreLNBlock(64, 4) for _ in range(4)])
result = probes.gradients(stack, torch.randn(2, 12, 64, generator=g).requires_grad_())
checks.assert_tensor(result["output"], name="four stacked PreLNBlock(64, 4) on a (2, 12, 64) input", shape=(2, 12, 64),
                     hint="A block preserves the shape (B, T, d_model).")
no_grad = [n for n, grad in result["params"].items() if grad is None]
checks.assert_true(len(result["params"]) == 48 and not no_grad, name="gradients of four stacked PreLNBlock(64, 4)",
                   problem=f"{len(result['params'])} parameters (expected 4 x 12 = 48); without a gradient: {no_grad}.",
                   hint="Every submodule must be used in forward, through torch operations.")
print("PreLNBlock: visible tests passed")

# %% id="7977e872" nbgrader={"grade": true, "grade_id": "test_PreLNBlock_hidden", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for PreLNBlock run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks, probes

g = torch.Generator().manual_seed(7007)

def block_shapes(d, d_ff):
    return {"ln1.weight": (d,), "ln1.bias": (d,), "attn.in_proj_weight": (3 * d, d), "attn.in_proj_bias": (3 * d,),
            "attn.out_proj.weight": (d, d), "attn.out_proj.bias": (d,), "ln2.weight": (d,), "ln2.bias": (d,),
            "ffn.fc1.weight": (d_ff, d), "ffn.fc1.bias": (d_ff,), "ffn.fc2.weight": (d, d_ff), "ffn.fc2.bias": (d,)}


def random_state(d, d_ff, g, dtype=torch.float32):
    def r(*shape, scale=1.0):
        return torch.randn(*shape, generator=g, dtype=dtype) * scale
    return {"ln1.weight": 1 + 0.3 * r(d), "ln1.bias": 0.2 * r(d),
            "attn.in_proj_weight": r(3 * d, d, scale=1.5 / d ** 0.5), "attn.in_proj_bias": r(3 * d, scale=0.1),
            "attn.out_proj.weight": r(d, d, scale=d ** -0.5), "attn.out_proj.bias": r(d, scale=0.1),
            "ln2.weight": 1 + 0.3 * r(d), "ln2.bias": 0.2 * r(d),
            "ffn.fc1.weight": r(d_ff, d, scale=d ** -0.5), "ffn.fc1.bias": r(d_ff, scale=0.1),
            "ffn.fc2.weight": r(d, d_ff, scale=d_ff ** -0.5), "ffn.fc2.bias": r(d, scale=0.1)}


class ReferenceBlock(torch.nn.Module):
    # The same block assembled from PyTorch's own modules, with the same parameter names.
    def __init__(self, d, n_head, d_ff, activation, pre_ln):
        super().__init__()
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.attn = torch.nn.MultiheadAttention(d, n_head, batch_first=True)
        self.ffn = torch.nn.ModuleDict({"fc1": torch.nn.Linear(d, d_ff), "fc2": torch.nn.Linear(d_ff, d)})
        self.act = torch.nn.ReLU() if activation == "relu" else torch.nn.GELU()
        self.pre_ln = pre_ln

    def forward(self, x, causal=False):
        T = x.shape[1]
        mask = torch.ones(T, T, dtype=torch.bool).triu(1) if causal else None
        ffn = lambda z: self.ffn["fc2"](self.act(self.ffn["fc1"](z)))
        if self.pre_ln:
            h = self.ln1(x)
            x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
            return x + ffn(self.ln2(x))
        x = self.ln1(x + self.attn(x, x, x, attn_mask=mask, need_weights=False)[0])
        return self.ln2(x + ffn(x))


def reference(sd, x, n_head, d_ff, activation, pre_ln, causal):
    ref = ReferenceBlock(x.shape[-1], n_head, d_ff, activation, pre_ln).to(x.dtype)
    ref.load_state_dict(sd)
    with torch.no_grad():
        return ref(x, causal=causal)


PRE = True
for d, h, d_ff, activation, (B, T), causal in [(12, 3, 20, "relu", (3, 7), True), (16, 4, None, "gelu", (2, 6), False),
                                                 (6, 1, 10, "gelu", (1, 9), True), (20, 5, 8, "relu", (2, 4), False),
                                                 (8, 2, None, "gelu", (4, 1), True)]:
    width = 4 * d if d_ff is None else d_ff
    block = PreLNBlock(d, h, d_ff, activation)
    shapes = {n: tuple(p.shape) for n, p in probes.parameters(block).items()}
    name = f"PreLNBlock({d}, {h}, {d_ff}, {activation!r})"
    checks.assert_equal(shapes, block_shapes(d, width), name=f"parameter names and shapes of {name}",
                        hint="ln1, attn, ln2, ffn.fc1, ffn.fc2; d_ff = 4 * d_model when None.")
    sd = random_state(d, width, g)
    block.load_state_dict(sd)
    x = torch.randn(B, T, d, generator=g) * 2 + 0.5
    out = block(x, causal=causal)
    checks.assert_tensor(out, name=f"{name}(x {(B, T, d)}, causal={causal})", shape=(B, T, d), dtype=torch.float32)
    checks.assert_close(out, reference(sd, x, h, width, activation, PRE, causal), atol=2e-5, rtol=2e-4,
                        name=f"{name}(x {(B, T, d)}, causal={causal}) vs a block of PyTorch modules")

# float64, tight tolerance, causal and not.
block = PreLNBlock(10, 2).double()
sd = random_state(10, 40, g, torch.float64)
block.load_state_dict(sd)
x = torch.randn(2, 6, 10, generator=g, dtype=torch.float64)
for causal in (True, False):
    out = block(x, causal=causal)
    checks.assert_tensor(out, name=f"PreLNBlock(10, 2) in float64, causal={causal}", shape=(2, 6, 10), dtype=torch.float64)
    checks.assert_close(out, reference(sd, x, 2, 40, "gelu", PRE, causal), atol=1e-9, rtol=1e-9,
                        name=f"PreLNBlock(10, 2) in float64, causal={causal}")

# Gradients of every parameter and of x, against the reference block (float64).
grad_out = torch.randn(2, 6, 10, generator=g, dtype=torch.float64)
result = probes.gradients(block, x.clone().requires_grad_(), causal=True, grad_output=grad_out)
ref = ReferenceBlock(10, 2, 40, "gelu", PRE).double()
ref.load_state_dict(sd)
xr = x.clone().requires_grad_()
(ref(xr, causal=True) * grad_out).sum().backward()
for n, p in ref.named_parameters():
    got = result["params"].get(n)
    checks.assert_true(got is not None, name=f"gradient of {n}", problem="no gradient reached this parameter.",
                       hint="Every submodule must be used in forward.")
    checks.assert_close(got, p.grad, atol=1e-8, rtol=1e-6, name=f"gradient of {n}")
checks.assert_close(result["inputs"][0], xr.grad, atol=1e-8, rtol=1e-6, name="gradient with respect to x")

traced = probes.traced_call(block, x, causal=True)
checks.assert_close(traced.args_after[0], x, atol=0, rtol=0, name="the block's input after the call", hint="Do not modify x in place.")

# Four stacked blocks of another size: the shape is preserved, every parameter gets a gradient.
stack = probes.make("torch.nn.Sequential", *[PreLNBlock(24, 4, 48, "relu") for _ in range(4)])
result = probes.gradients(stack, torch.randn(3, 5, 24, generator=g).requires_grad_())
checks.assert_tensor(result["output"], name="four stacked PreLNBlock(24, 4, 48, 'relu') on (3, 5, 24)", shape=(3, 5, 24))
no_grad = [n for n, grad in result["params"].items() if grad is None]
checks.assert_true(len(result["params"]) == 48 and not no_grad, name="gradients of four stacked PreLNBlock(24, 4, 48, 'relu')",
                   problem=f"{len(result['params'])} parameters, without a gradient: {no_grad}.")
checks.assert_tensor(result["inputs"][0], name="gradient of the stack with respect to its input", shape=(3, 5, 24))
print("PreLNBlock: hidden tests passed")
### END HIDDEN TESTS

# %% id="26268217" nbgrader={"grade": true, "grade_id": "test_PreLNBlock_hidden_lengths", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for PreLNBlock (lengths and modes) run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks, probes

PRE, NAME = True, "PreLNBlock(12, 3, 24)"
g = torch.Generator().manual_seed(7101)


class Reference(torch.nn.Module):
    # The same block from PyTorch's own modules, the same parameter names.
    def __init__(self, d, n_head, d_ff):
        super().__init__()
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.attn = torch.nn.MultiheadAttention(d, n_head, batch_first=True)
        self.ffn = torch.nn.ModuleDict({"fc1": torch.nn.Linear(d, d_ff), "fc2": torch.nn.Linear(d_ff, d)})

    def forward(self, x, causal):
        T = x.shape[1]
        mask = torch.ones(T, T, dtype=torch.bool).triu(1) if causal else None
        ffn = lambda z: self.ffn["fc2"](torch.nn.functional.gelu(self.ffn["fc1"](z)))
        if PRE:
            h = self.ln1(x)
            x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
            return x + ffn(self.ln2(x))
        x = self.ln1(x + self.attn(x, x, x, attn_mask=mask, need_weights=False)[0])
        return self.ln2(x + ffn(x))


def check_calls_in_turn(block, ref, calls, mode, hint):
    # The same block on each (T, causal) in turn against the reference; its mode must stay as it was set.
    for T, causal in calls:
        x = torch.randn(2, T, 12, generator=g)
        with torch.no_grad():
            expected = ref(x, causal)
        name = f"the same {NAME} in {mode} mode on T = {T}, causal={causal} (after calls with other lengths)"
        checks.assert_close(block(x, causal=causal), expected, atol=2e-5, rtol=2e-4, name=name, hint=hint)
    checks.assert_equal(block.training, mode == "training", name=f"{NAME}.training after calls in {mode} mode",
                        hint="forward leaves the module in the mode its caller set (no self.train() or self.eval() inside).")
    for sub in ("ln1", "attn", "ln2", "ffn"):
        checks.assert_equal(getattr(block, sub).training, mode == "training", name=f"{NAME}.{sub}.training after calls in {mode} mode",
                            hint="forward leaves every submodule in the mode its caller set (no self.attn.eval() inside).")


ref = Reference(12, 3, 24)
with torch.no_grad():
    for p in ref.parameters():
        p.copy_(torch.randn(p.shape, generator=g) * 0.3)
sd = {k: v.detach().clone() for k, v in ref.state_dict().items()}
block = PreLNBlock(12, 3, 24)
block.load_state_dict(sd)
# Several sequence lengths, in an order where a mask kept from an earlier call shows (a shorter one
# first, then a longer one, and one past the usual block sizes of 512 and 1024), causal and not.
check_calls_in_turn(block, ref, [(3, True), (7, True), (40, True), (1100, True), (2, False), (5, True), (1, True), (6, False)], "training",
                    "Build the mask from this call's T and causal flag; keep nothing from an earlier call.")
x = torch.randn(1, 4, 12, generator=g)
with torch.no_grad():
    expected = ref(x, False)
checks.assert_close(block(x), expected, atol=2e-5, rtol=2e-4, name=f"{NAME}(x) with the default causal=False",
                    hint="causal defaults to False: every position attends to every position.")
# In eval mode (evaluation, generation) causal=True still masks the future: the mask is part of the model.
block.eval()
check_calls_in_turn(block, ref, [(4, True), (8, True), (3, False)], "eval",
                    "Apply the causal mask whenever causal=True, in eval mode as in training mode.")
# On the device of x: the block and x on PyTorch's meta device (shapes, no values) stand in for a GPU. A mask
# made without device= is a CPU tensor meeting meta scores; code that reads values cannot run there and is not judged.
for causal in (True, False):
    seen = probes.make("utils.meta_device.module_output_device_on_meta", block, torch.randn(2, 5, 12, generator=g), causal=causal)
    checks.assert_kept_on_meta(seen,
                               name=f"{NAME} with its weights and x on another device than the CPU (the meta device), causal={causal}",
                               hint="Make the mask on x.device (torch.ones(T, T, dtype=torch.bool, device=x.device)): "
                                    "with x on a GPU, a tensor made without device= is on the CPU.")
    # The same with the values kept (utils.fake_cuda), so an answer that reads values is judged too.
    seen = probes.make("utils.fake_cuda.module_output_device_on_fake_cuda", block, torch.randn(2, 5, 12, generator=g),
                       causal=causal)
    checks.assert_kept_on_fake_cuda(seen, name=f"{NAME} on a GPU (emulated, the values kept), causal={causal}",
                                    hint="Make the mask on x.device: with x on a GPU, a tensor made without device= is "
                                         "on the CPU.")
print(f"{NAME}: hidden tests (lengths and modes) passed")
### END HIDDEN TESTS

# %% [markdown] id="60dd8c88"
# ### Exercise 4: `PostLNBlock` (1 + 2 + 1 points)
#
# *Points: 1 visible, 2 hidden (behaviour), 1 hidden (one block called with several sequence lengths and causal flags in turn, in training and in eval mode, the default `causal=False`, and the mask made on x's device).*
#
# The original arrangement: each sublayer reads the stream as it is, its output is added, and the **sum**
# is normalised,
#
# $$
# x' = \operatorname{LN}_1(x + \operatorname{MHA}(x)), \qquad y = \operatorname{LN}_2(x' + \operatorname{FFN}(x')).
# $$
#
# The same submodules with the same names (so one state dict loads into both variants); only `forward`
# changes. Write the class in full (a subclass of
# your `PreLNBlock` that overrides `forward` is fine too).

# %% id="61b2c9cf" nbgrader={"grade": false, "grade_id": "PostLNBlock", "locked": false, "schema_version": 3, "solution": true, "task": false}
import torch
import torch.nn as nn


class PostLNBlock(nn.Module):
    """A Post-LN transformer block (the 2017 arrangement):  x' = LN1(x + MHA(x));  y = LN2(x' + FFN(x')).

    PostLNBlock(d_model, n_head, d_ff=None, activation="gelu")
      Exactly the submodules and parameter names of PreLNBlock:
        ln1: LayerNorm(d_model); attn: nn.MultiheadAttention(d_model, n_head, batch_first=True);
        ln2: LayerNorm(d_model); ffn: FeedForward(d_model, d_ff, activation) with fc1, fc2
        (d_ff = 4 * d_model when None). No other parameters, no dropout.

    forward(x, causal=False):
        x: floating tensor (B, T, d_model), T >= 1, float32 or float64 (after .double()).
        Self-attention on x itself (query = key = value = x); with causal=True position t attends to
        positions <= t only. ln1 normalises x + MHA(x); ln2 normalises x' + FFN(x').
        Returns a new tensor (B, T, d_model) of x's dtype; x is not modified. Differentiable. Leaves the
        block and its submodules in the mode (training or eval) its caller set. Runs on the device of the
        block and x: every tensor it makes, the mask included, is made on x.device.
    """

    def __init__(self, d_model, n_head, d_ff=None, activation="gelu"):
        super().__init__()
        ### BEGIN SOLUTION
        self.ln1 = LayerNorm(d_model)
        self.attn = nn.MultiheadAttention(d_model, n_head, batch_first=True)
        self.ln2 = LayerNorm(d_model)
        self.ffn = FeedForward(d_model, d_ff, activation)
        ### END SOLUTION

    def forward(self, x, causal=False):
        ### BEGIN SOLUTION
        T = x.shape[1]
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1) if causal else None
        x = self.ln1(x + self.attn(x, x, x, attn_mask=mask, need_weights=False)[0])
        return self.ln2(x + self.ffn(x))
        ### END SOLUTION


# %% id="5c0db51e" nbgrader={"grade": true, "grade_id": "test_PostLNBlock", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
import torch
from utils import checks, probes

g = torch.Generator().manual_seed(708)

def block_shapes(d, d_ff):
    return {"ln1.weight": (d,), "ln1.bias": (d,), "attn.in_proj_weight": (3 * d, d), "attn.in_proj_bias": (3 * d,),
            "attn.out_proj.weight": (d, d), "attn.out_proj.bias": (d,), "ln2.weight": (d,), "ln2.bias": (d,),
            "ffn.fc1.weight": (d_ff, d), "ffn.fc1.bias": (d_ff,), "ffn.fc2.weight": (d, d_ff), "ffn.fc2.bias": (d,)}


def random_state(d, d_ff, g, dtype=torch.float32):
    def r(*shape, scale=1.0):
        return torch.randn(*shape, generator=g, dtype=dtype) * scale
    return {"ln1.weight": 1 + 0.3 * r(d), "ln1.bias": 0.2 * r(d),
            "attn.in_proj_weight": r(3 * d, d, scale=1.5 / d ** 0.5), "attn.in_proj_bias": r(3 * d, scale=0.1),
            "attn.out_proj.weight": r(d, d, scale=d ** -0.5), "attn.out_proj.bias": r(d, scale=0.1),
            "ln2.weight": 1 + 0.3 * r(d), "ln2.bias": 0.2 * r(d),
            "ffn.fc1.weight": r(d_ff, d, scale=d ** -0.5), "ffn.fc1.bias": r(d_ff, scale=0.1),
            "ffn.fc2.weight": r(d, d_ff, scale=d_ff ** -0.5), "ffn.fc2.bias": r(d, scale=0.1)}


class ReferenceBlock(torch.nn.Module):
    # The same block assembled from PyTorch's own modules, with the same parameter names.
    def __init__(self, d, n_head, d_ff, activation, pre_ln):
        super().__init__()
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.attn = torch.nn.MultiheadAttention(d, n_head, batch_first=True)
        self.ffn = torch.nn.ModuleDict({"fc1": torch.nn.Linear(d, d_ff), "fc2": torch.nn.Linear(d_ff, d)})
        self.act = torch.nn.ReLU() if activation == "relu" else torch.nn.GELU()
        self.pre_ln = pre_ln

    def forward(self, x, causal=False):
        T = x.shape[1]
        mask = torch.ones(T, T, dtype=torch.bool).triu(1) if causal else None
        ffn = lambda z: self.ffn["fc2"](self.act(self.ffn["fc1"](z)))
        if self.pre_ln:
            h = self.ln1(x)
            x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
            return x + ffn(self.ln2(x))
        x = self.ln1(x + self.attn(x, x, x, attn_mask=mask, need_weights=False)[0])
        return self.ln2(x + ffn(x))


def reference(sd, x, n_head, d_ff, activation, pre_ln, causal):
    ref = ReferenceBlock(x.shape[-1], n_head, d_ff, activation, pre_ln).to(x.dtype)
    ref.load_state_dict(sd)
    with torch.no_grad():
        return ref(x, causal=causal)


block = PostLNBlock(8, 2)
shapes = {n: tuple(p.shape) for n, p in probes.parameters(block).items()}
checks.assert_equal(shapes, block_shapes(8, 32), name="parameter names and shapes of PostLNBlock(8, 2)",
                    hint="ln1, attn (nn.MultiheadAttention, batch_first=True), ln2, ffn (fc1, fc2 with d_ff = 4 * d_model): "
                         "two separate LayerNorms, nothing else.")

# Zero updates: both sublayers output 0, so y = LN2(LN1(x)); with ln2 = (weight 2, bias 1): 2 LN(x) + 1.
sd = random_state(8, 32, g)
for n in ("attn.out_proj.weight", "attn.out_proj.bias", "ffn.fc2.weight", "ffn.fc2.bias"):
    sd[n] = torch.zeros_like(sd[n])
sd.update({"ln1.weight": torch.ones(8), "ln1.bias": torch.zeros(8), "ln2.weight": torch.full((8,), 2.0), "ln2.bias": torch.ones(8)})
block.load_state_dict(sd)
x = torch.tensor([[[1.0, 2.0, 3.0, 4.0, 1.0, 2.0, 3.0, 4.0], [0.0, 0.0, 0.0, 0.0, 2.0, 2.0, 2.0, 2.0]]])
out = block(x)
checks.assert_tensor(out, name="PostLNBlock(8, 2) with zero updates", shape=(1, 2, 8), dtype=torch.float32)
ln_row = [-1.3416355, -0.4472118, 0.4472118, 1.3416355] * 2        # LN of (1, 2, 3, 4, 1, 2, 3, 4): mean 2.5, var 1.25
expected = torch.tensor([[[2 * v + 1 for v in ln_row], [-1.0] * 4 + [3.0] * 4]])
checks.assert_close(out, expected, atol=1e-4, name="PostLNBlock(8, 2) with zero updates and ln2 = (weight 2, bias 1)",
                    hint="y = LN2(LN1(x + 0) + 0) = 2 LN(x) + 1. Getting x + 1 or so means a norm is missing after a "
                         "residual (that would be Pre-LN); the second row (-1, ..., 3, ...) is (0, 0, 0, 0, 2, 2, 2, 2) normalised.")

# Random weights: the same state_dict in your block and in one built from nn.LayerNorm, nn.MultiheadAttention, nn.Linear.
sd = random_state(8, 32, g)
block.load_state_dict(sd)
x = torch.randn(2, 5, 8, generator=g)
for causal in (False, True):
    name = f"PostLNBlock(8, 2)(x, causal={causal}) vs the same block built from PyTorch modules"
    out = block(x, causal=causal)
    checks.assert_tensor(out, name=name, shape=(2, 5, 8), dtype=torch.float32)
    checks.assert_close(out, reference(sd, x, 2, 32, "gelu", False, causal), atol=1e-5, rtol=1e-4, name=name,
                        hint="x' = LN1(x + MHA(x)), y = LN2(x' + FFN(x')): attention reads x itself; ln1 after the first residual, ln2 after the second.")

# causal=True: changing the last token must not change the outputs at earlier positions.
x2 = x.clone()
x2[:, -1] = 3 * torch.randn(2, 8, generator=g)
checks.assert_close(block(x2, causal=True)[:, :-1], block(x, causal=True)[:, :-1], atol=1e-5,
                    name="causal outputs at positions 0..3 after changing position 4",
                    hint="With causal=True pass attn_mask = a (T, T) boolean tensor, True above the diagonal.")

# A longer sequence after the calls with T = 5: each call builds the mask for its own length.
x7 = torch.randn(1, 7, 8, generator=g)
checks.assert_close(block(x7, causal=True), reference(sd, x7, 2, 32, "gelu", False, True), atol=1e-5, rtol=1e-4,
                    name="PostLNBlock(8, 2)(x, causal=True) on T = 7 after calls with T = 5",
                    hint="Build the mask from this call's T; a mask kept from an earlier call has the wrong size.")

# The stacking exercise of section 4: four blocks, d_model = 64, h = 4, on a (2, 12, 64) input.
stack = probes.make("torch.nn.Sequential", *[PostLNBlock(64, 4) for _ in range(4)])
result = probes.gradients(stack, torch.randn(2, 12, 64, generator=g).requires_grad_())
checks.assert_tensor(result["output"], name="four stacked PostLNBlock(64, 4) on a (2, 12, 64) input", shape=(2, 12, 64),
                     hint="A block preserves the shape (B, T, d_model).")
no_grad = [n for n, grad in result["params"].items() if grad is None]
checks.assert_true(len(result["params"]) == 48 and not no_grad, name="gradients of four stacked PostLNBlock(64, 4)",
                   problem=f"{len(result['params'])} parameters (expected 4 x 12 = 48); without a gradient: {no_grad}.",
                   hint="Every submodule must be used in forward, through torch operations.")
print("PostLNBlock: visible tests passed")

# %% id="0e718398" nbgrader={"grade": true, "grade_id": "test_PostLNBlock_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for PostLNBlock run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks, probes

g = torch.Generator().manual_seed(7008)

def block_shapes(d, d_ff):
    return {"ln1.weight": (d,), "ln1.bias": (d,), "attn.in_proj_weight": (3 * d, d), "attn.in_proj_bias": (3 * d,),
            "attn.out_proj.weight": (d, d), "attn.out_proj.bias": (d,), "ln2.weight": (d,), "ln2.bias": (d,),
            "ffn.fc1.weight": (d_ff, d), "ffn.fc1.bias": (d_ff,), "ffn.fc2.weight": (d, d_ff), "ffn.fc2.bias": (d,)}


def random_state(d, d_ff, g, dtype=torch.float32):
    def r(*shape, scale=1.0):
        return torch.randn(*shape, generator=g, dtype=dtype) * scale
    return {"ln1.weight": 1 + 0.3 * r(d), "ln1.bias": 0.2 * r(d),
            "attn.in_proj_weight": r(3 * d, d, scale=1.5 / d ** 0.5), "attn.in_proj_bias": r(3 * d, scale=0.1),
            "attn.out_proj.weight": r(d, d, scale=d ** -0.5), "attn.out_proj.bias": r(d, scale=0.1),
            "ln2.weight": 1 + 0.3 * r(d), "ln2.bias": 0.2 * r(d),
            "ffn.fc1.weight": r(d_ff, d, scale=d ** -0.5), "ffn.fc1.bias": r(d_ff, scale=0.1),
            "ffn.fc2.weight": r(d, d_ff, scale=d_ff ** -0.5), "ffn.fc2.bias": r(d, scale=0.1)}


class ReferenceBlock(torch.nn.Module):
    # The same block assembled from PyTorch's own modules, with the same parameter names.
    def __init__(self, d, n_head, d_ff, activation, pre_ln):
        super().__init__()
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.attn = torch.nn.MultiheadAttention(d, n_head, batch_first=True)
        self.ffn = torch.nn.ModuleDict({"fc1": torch.nn.Linear(d, d_ff), "fc2": torch.nn.Linear(d_ff, d)})
        self.act = torch.nn.ReLU() if activation == "relu" else torch.nn.GELU()
        self.pre_ln = pre_ln

    def forward(self, x, causal=False):
        T = x.shape[1]
        mask = torch.ones(T, T, dtype=torch.bool).triu(1) if causal else None
        ffn = lambda z: self.ffn["fc2"](self.act(self.ffn["fc1"](z)))
        if self.pre_ln:
            h = self.ln1(x)
            x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
            return x + ffn(self.ln2(x))
        x = self.ln1(x + self.attn(x, x, x, attn_mask=mask, need_weights=False)[0])
        return self.ln2(x + ffn(x))


def reference(sd, x, n_head, d_ff, activation, pre_ln, causal):
    ref = ReferenceBlock(x.shape[-1], n_head, d_ff, activation, pre_ln).to(x.dtype)
    ref.load_state_dict(sd)
    with torch.no_grad():
        return ref(x, causal=causal)


PRE = False
for d, h, d_ff, activation, (B, T), causal in [(12, 3, 20, "relu", (3, 7), True), (16, 4, None, "gelu", (2, 6), False),
                                                 (6, 1, 10, "gelu", (1, 9), True), (20, 5, 8, "relu", (2, 4), False),
                                                 (8, 2, None, "gelu", (4, 1), True)]:
    width = 4 * d if d_ff is None else d_ff
    block = PostLNBlock(d, h, d_ff, activation)
    shapes = {n: tuple(p.shape) for n, p in probes.parameters(block).items()}
    name = f"PostLNBlock({d}, {h}, {d_ff}, {activation!r})"
    checks.assert_equal(shapes, block_shapes(d, width), name=f"parameter names and shapes of {name}",
                        hint="ln1, attn, ln2, ffn.fc1, ffn.fc2; d_ff = 4 * d_model when None.")
    sd = random_state(d, width, g)
    block.load_state_dict(sd)
    x = torch.randn(B, T, d, generator=g) * 2 + 0.5
    out = block(x, causal=causal)
    checks.assert_tensor(out, name=f"{name}(x {(B, T, d)}, causal={causal})", shape=(B, T, d), dtype=torch.float32)
    checks.assert_close(out, reference(sd, x, h, width, activation, PRE, causal), atol=2e-5, rtol=2e-4,
                        name=f"{name}(x {(B, T, d)}, causal={causal}) vs a block of PyTorch modules")

# float64, tight tolerance, causal and not.
block = PostLNBlock(10, 2).double()
sd = random_state(10, 40, g, torch.float64)
block.load_state_dict(sd)
x = torch.randn(2, 6, 10, generator=g, dtype=torch.float64)
for causal in (True, False):
    out = block(x, causal=causal)
    checks.assert_tensor(out, name=f"PostLNBlock(10, 2) in float64, causal={causal}", shape=(2, 6, 10), dtype=torch.float64)
    checks.assert_close(out, reference(sd, x, 2, 40, "gelu", PRE, causal), atol=1e-9, rtol=1e-9,
                        name=f"PostLNBlock(10, 2) in float64, causal={causal}")

# Gradients of every parameter and of x, against the reference block (float64).
grad_out = torch.randn(2, 6, 10, generator=g, dtype=torch.float64)
result = probes.gradients(block, x.clone().requires_grad_(), causal=True, grad_output=grad_out)
ref = ReferenceBlock(10, 2, 40, "gelu", PRE).double()
ref.load_state_dict(sd)
xr = x.clone().requires_grad_()
(ref(xr, causal=True) * grad_out).sum().backward()
for n, p in ref.named_parameters():
    got = result["params"].get(n)
    checks.assert_true(got is not None, name=f"gradient of {n}", problem="no gradient reached this parameter.",
                       hint="Every submodule must be used in forward.")
    checks.assert_close(got, p.grad, atol=1e-8, rtol=1e-6, name=f"gradient of {n}")
checks.assert_close(result["inputs"][0], xr.grad, atol=1e-8, rtol=1e-6, name="gradient with respect to x")

traced = probes.traced_call(block, x, causal=True)
checks.assert_close(traced.args_after[0], x, atol=0, rtol=0, name="the block's input after the call", hint="Do not modify x in place.")

# Four stacked blocks of another size: the shape is preserved, every parameter gets a gradient.
stack = probes.make("torch.nn.Sequential", *[PostLNBlock(24, 4, 48, "relu") for _ in range(4)])
result = probes.gradients(stack, torch.randn(3, 5, 24, generator=g).requires_grad_())
checks.assert_tensor(result["output"], name="four stacked PostLNBlock(24, 4, 48, 'relu') on (3, 5, 24)", shape=(3, 5, 24))
no_grad = [n for n, grad in result["params"].items() if grad is None]
checks.assert_true(len(result["params"]) == 48 and not no_grad, name="gradients of four stacked PostLNBlock(24, 4, 48, 'relu')",
                   problem=f"{len(result['params'])} parameters, without a gradient: {no_grad}.")
checks.assert_tensor(result["inputs"][0], name="gradient of the stack with respect to its input", shape=(3, 5, 24))
print("PostLNBlock: hidden tests passed")
### END HIDDEN TESTS

# %% id="b97a022b" nbgrader={"grade": true, "grade_id": "test_PostLNBlock_hidden_lengths", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for PostLNBlock (lengths and modes) run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks, probes

PRE, NAME = False, "PostLNBlock(12, 3, 24)"
g = torch.Generator().manual_seed(7102)


class Reference(torch.nn.Module):
    # The same block from PyTorch's own modules, the same parameter names.
    def __init__(self, d, n_head, d_ff):
        super().__init__()
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.attn = torch.nn.MultiheadAttention(d, n_head, batch_first=True)
        self.ffn = torch.nn.ModuleDict({"fc1": torch.nn.Linear(d, d_ff), "fc2": torch.nn.Linear(d_ff, d)})

    def forward(self, x, causal):
        T = x.shape[1]
        mask = torch.ones(T, T, dtype=torch.bool).triu(1) if causal else None
        ffn = lambda z: self.ffn["fc2"](torch.nn.functional.gelu(self.ffn["fc1"](z)))
        if PRE:
            h = self.ln1(x)
            x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
            return x + ffn(self.ln2(x))
        x = self.ln1(x + self.attn(x, x, x, attn_mask=mask, need_weights=False)[0])
        return self.ln2(x + ffn(x))


def check_calls_in_turn(block, ref, calls, mode, hint):
    # The same block on each (T, causal) in turn against the reference; its mode must stay as it was set.
    for T, causal in calls:
        x = torch.randn(2, T, 12, generator=g)
        with torch.no_grad():
            expected = ref(x, causal)
        name = f"the same {NAME} in {mode} mode on T = {T}, causal={causal} (after calls with other lengths)"
        checks.assert_close(block(x, causal=causal), expected, atol=2e-5, rtol=2e-4, name=name, hint=hint)
    checks.assert_equal(block.training, mode == "training", name=f"{NAME}.training after calls in {mode} mode",
                        hint="forward leaves the module in the mode its caller set (no self.train() or self.eval() inside).")
    for sub in ("ln1", "attn", "ln2", "ffn"):
        checks.assert_equal(getattr(block, sub).training, mode == "training", name=f"{NAME}.{sub}.training after calls in {mode} mode",
                            hint="forward leaves every submodule in the mode its caller set (no self.attn.eval() inside).")


ref = Reference(12, 3, 24)
with torch.no_grad():
    for p in ref.parameters():
        p.copy_(torch.randn(p.shape, generator=g) * 0.3)
sd = {k: v.detach().clone() for k, v in ref.state_dict().items()}
block = PostLNBlock(12, 3, 24)
block.load_state_dict(sd)
# Several sequence lengths, in an order where a mask kept from an earlier call shows (a shorter one
# first, then a longer one, and one past the usual block sizes of 512 and 1024), causal and not.
check_calls_in_turn(block, ref, [(3, True), (7, True), (40, True), (1100, True), (2, False), (5, True), (1, True), (6, False)], "training",
                    "Build the mask from this call's T and causal flag; keep nothing from an earlier call.")
x = torch.randn(1, 4, 12, generator=g)
with torch.no_grad():
    expected = ref(x, False)
checks.assert_close(block(x), expected, atol=2e-5, rtol=2e-4, name=f"{NAME}(x) with the default causal=False",
                    hint="causal defaults to False: every position attends to every position.")
# In eval mode (evaluation, generation) causal=True still masks the future: the mask is part of the model.
block.eval()
check_calls_in_turn(block, ref, [(4, True), (8, True), (3, False)], "eval",
                    "Apply the causal mask whenever causal=True, in eval mode as in training mode.")
# On the device of x: the block and x on PyTorch's meta device (shapes, no values) stand in for a GPU. A mask
# made without device= is a CPU tensor meeting meta scores; code that reads values cannot run there and is not judged.
for causal in (True, False):
    seen = probes.make("utils.meta_device.module_output_device_on_meta", block, torch.randn(2, 5, 12, generator=g), causal=causal)
    checks.assert_kept_on_meta(seen,
                               name=f"{NAME} with its weights and x on another device than the CPU (the meta device), causal={causal}",
                               hint="Make the mask on x.device (torch.ones(T, T, dtype=torch.bool, device=x.device)): "
                                    "with x on a GPU, a tensor made without device= is on the CPU.")
    # The same with the values kept (utils.fake_cuda), so an answer that reads values is judged too.
    seen = probes.make("utils.fake_cuda.module_output_device_on_fake_cuda", block, torch.randn(2, 5, 12, generator=g),
                       causal=causal)
    checks.assert_kept_on_fake_cuda(seen, name=f"{NAME} on a GPU (emulated, the values kept), causal={causal}",
                                    hint="Make the mask on x.device: with x on a GPU, a tensor made without device= is "
                                         "on the CPU.")
print(f"{NAME}: hidden tests (lengths and modes) passed")
### END HIDDEN TESTS

# %% [markdown] id="542e46fc"
# Your two blocks against each other on the same weights, and the stacking exercise posed in section 4: four
# Pre-LN blocks with $d = 64$, $h = 4$, $d_\text{ff} = 256$ on a batch of shape $(2, 12, 64)$, one backward pass of
# the output's sum, and a look at which of the $4 \times 12$ parameter tensors received a gradient.

# %% id="bc1f01cb"
torch.manual_seed(0)
pre, post = PreLNBlock(64, 4), PostLNBlock(64, 4)
post.load_state_dict(pre.state_dict())                # same names, so the weights move across
x = torch.randn(2, 12, 64)
with torch.no_grad():
    print(f"same weights, Pre-LN vs Post-LN: max |difference| = {(pre(x, causal=True) - post(x, causal=True)).abs().max():.3f}")

stack = nn.Sequential(*[PreLNBlock(64, 4, d_ff=256) for _ in range(4)])
out = stack(x)
out.sum().backward()
grads = [(name, p.grad) for name, p in stack.named_parameters()]
print(f"input {tuple(x.shape)} -> output {tuple(out.shape)}")
print(f"{len(grads)} parameter tensors, {sum(p.numel() for p in stack.parameters()):,} parameters; "
      f"all have a gradient: {all(g is not None for _, g in grads)}")
for name, grad in grads[:12]:
    print(f"   {name:24} {str(tuple(grad.shape)):12} gradient norm {grad.norm():.3g}")
key_bias = [block.attn.in_proj_bias.grad[64:128].abs().max().item() for block in stack]
print("largest |gradient| in the key part of attn.in_proj_bias, per block:", [f"{v:.0e}" for v in key_bias])
smallest_norm = min(grad.norm().item() for _, grad in grads)
claims.claim(f"The stack keeps the shape {tuple(out.shape)} and all {len(grads)} parameter tensors hold a gradient; the key "
             f"part of attn.in_proj_bias gets at most {max(key_bias):.0e}, while the smallest whole tensor's gradient norm "
             f"is {smallest_norm:.2g}", holds=out.shape == x.shape and len(grads) == 48
             and all(g is not None for _, g in grads) and max(key_bias) < 1e-4 * smallest_norm)


# %% [markdown] id="704ce223"
# The last line is worth a second look: the gradient of `attn.in_proj_bias` is not zero, but the part of it
# that belongs to the **keys** (entries $d$ to $2d$) is zero up to rounding (the claim above compares it with the
# gradient norms elsewhere), in every block and at every step.
# Adding the same vector $b_K$ to every key adds $q_i \cdot b_K$ to every score of query $i$, the same number
# for all keys, and softmax ignores a constant shift. The key bias is a parameter that can never learn
# (some implementations drop it).
#
# ## 5. Residuals as a gradient highway
#
# Why do residual connections make depth trainable? Write one sublayer with a residual as
# $x_{l+1} = x_l + F_l(x_l)$. Its Jacobian is
#
# $$
# \frac{\partial x_{l+1}}{\partial x_l} = I + \frac{\partial F_l}{\partial x_l},
# \qquad
# \frac{\partial \mathcal{L}}{\partial x_l}
# = \frac{\partial \mathcal{L}}{\partial x_L}\prod_{k=l}^{L-1}\Big(I + \frac{\partial F_k}{\partial x_k}\Big).
# $$
#
# Multiply out the product: one of its terms is $I$ itself, the **identity path**, which carries the gradient at
# the top down to layer $l$ unchanged, however deep the stack. It is one term among many, not a guarantee: the other
# terms add to it, and they can also cancel it (a sublayer whose Jacobian is $-I$ makes $I + \partial F/\partial x = 0$
# and stops the gradient). What residuals guarantee is that depth alone no longer multiplies the gradient by a
# factor per layer; how large it stays is something to measure. Without the residual, $x_{l+1} = F_l(x_l)$ and the
# product is $\prod_k \partial F_k/\partial x_k$: if each factor shrinks vectors by a typical factor $s < 1$, the
# gradient at the bottom is $s^{L}$ times the one at the top, exponentially small in depth (and if $s > 1$,
# exponentially large).
#
# The experiment: 24 layers, each an attention sublayer followed by an FFN sublayer, width 32, built from
# your `PreLNBlock`'s `attn` and `ffn` (the LayerNorms are left out, to isolate the residual). The same weights
# run once with residual additions and once without. A random readout to 50 "tokens" and a cross-entropy loss
# on random targets give a loss at the top; we plot $\lVert \partial \mathcal{L}/\partial x_l \rVert$, the
# gradient arriving at the input of each layer.
#
# **Predict before you run.** Without residuals, roughly how small is the gradient at layer 0, compared with the top?
#
# <details><summary>Answer</summary>
#
# Dozens of orders of magnitude. With PyTorch's default initialisations each weight matrix shrinks a vector
# (`nn.Linear`'s weights have standard deviation $1/\sqrt{3\,\text{fan-in}}$ and scale variances by about $1/3$, the
# attention's input projection by about $1/2$), attention averages over positions, and there are four matrices per
# layer: $24 \times 4 = 96$ shrinking factors. The gradient underflows to exactly 0 in
# float32 before it reaches layer 0, and the forward signal dies the same way, so even the top layer gets a weak
# gradient. With residuals, in this run (these weights, this initialisation), the gradient never fell below the top's: it
# changes smoothly with depth (the printout gives the smallest ratio to the top). That is a measurement, not a theorem.
# </details>

# %% id="6a47be68"
def causal_mask(T):
    return torch.ones(T, T, dtype=torch.bool).triu(1)


def with_residual(block, x):
    x = x + block.attn(x, x, x, attn_mask=causal_mask(x.shape[1]), need_weights=False)[0]
    return x + block.ffn(x)


def without_residual(block, x):
    x = block.attn(x, x, x, attn_mask=causal_mask(x.shape[1]), need_weights=False)[0]
    return block.ffn(x)


def gradient_profile(blocks, step, *, final_norm=False, seed=1, B=2, T=16, vocab=50):
    # Run x through the blocks with `step`, put a language-model-style loss on top, backpropagate.
    # Returns per layer: the gradient norm at the layer's input, the norm of its parameters' gradient,
    # and the RMS size of the residual stream entering it.
    g = torch.Generator().manual_seed(seed)
    d = blocks[0].ln1.weight.shape[0]
    x = torch.randn(B, T, d, generator=g, requires_grad=True)
    readout = torch.randn(d, vocab, generator=g) / d ** 0.5
    targets = torch.randint(0, vocab, (B, T), generator=g)
    for block in blocks:
        block.zero_grad(set_to_none=True)
    inputs, h = [], x
    for block in blocks:
        h.retain_grad()
        inputs.append(h)
        h = step(block, h)
    if final_norm:                                            # a Pre-LN model ends with one LayerNorm
        h = F.layer_norm(h, (d,))
    F.cross_entropy((h @ readout).flatten(0, 1), targets.flatten()).backward()
    stream_grad = [v.grad.norm().item() for v in inputs]
    param_grad = [math.sqrt(sum(p.grad.pow(2).sum().item() for p in b.parameters() if p.grad is not None)) for b in blocks]
    stream_rms = [v.detach().pow(2).mean().sqrt().item() for v in inputs]
    return stream_grad, param_grad, stream_rms


L, d, h = 24, 32, 4
torch.manual_seed(0)
blocks = [PreLNBlock(d, h) for _ in range(L)]
res_grad, _, _ = gradient_profile(blocks, with_residual)
plain_grad, _, _ = gradient_profile(blocks, without_residual)
print("gradient norm at the input of layers 0, 6, 12, 18, 23")
print("  with residuals:   ", "  ".join(f"{res_grad[i]:.2e}" for i in (0, 6, 12, 18, 23)))
print("  without residuals:", "  ".join(f"{plain_grad[i]:.2e}" for i in (0, 6, 12, 18, 23)))
ratio_to_top = [v / res_grad[-1] for v in res_grad]
print(f"with residuals, smallest gradient norm / the top's: {min(ratio_to_top):.2f}; "
      f"layer 0 / the top (layer {L - 1}): {ratio_to_top[0]:.1f}x over {L} layers")
zero_layers = sum(v == 0 for v in plain_grad)
bottom_half = max(plain_grad[:L // 2]) / plain_grad[-1]
claims.claim(f"Without residuals the gradient is exactly 0 at the bottom {zero_layers} of the {L} layers, and over the "
             f"bottom half at most {bottom_half:.0e} times the top's; with residuals it never falls below the top's "
             f"({min(ratio_to_top):.2f} at least) and is {ratio_to_top[0]:.1f} times the top's at layer 0",
             holds=plain_grad[0] == 0 and all(v == 0 for v in plain_grad[:zero_layers]) and bottom_half < 1e-10
             and min(ratio_to_top) >= 1 and ratio_to_top[0] > 10)

fig, ax = plt.subplots(figsize=(7, 4))
ax.semilogy(range(L), res_grad, "o-", label="x + F(x): with residuals")
ax.semilogy(range(L), [max(v, 1e-45) for v in plain_grad], "s-", label="F(x): without residuals (0 drawn at 1e-45)")
ax.set_xlabel("layer l (0 = bottom, next to the input)")
ax.set_ylabel(r"$\|\partial \mathcal{L} / \partial x_l\|$")
ax.set_title(f"Gradient reaching each of {L} layers (width {d}, same weights)")
ax.legend()
fig.tight_layout()
plt.show()


# %% [markdown] id="fcab3a8a"
# With residuals the gradient changes smoothly (the factor between layer 0 and the top is printed above, more than one
# order of magnitude in this run), and it grows towards the input rather than shrinking: every layer's own path adds
# its share to the identity path. Without them it falls by orders of magnitude per few layers and reaches exactly
# zero in float32: the bottom layers of that network (the claim counts them) cannot learn at all, whatever the
# learning rate, and the rest of its bottom half gets a gradient more than ten orders of magnitude below the top's. This is the "gradient highway": the chain of additions gives every layer a
# direct line to the loss.
#
# ### Pre-LN against Post-LN at initialisation
#
# Both placements keep the residual additions, but Post-LN puts a LayerNorm **on** the highway: the gradient
# from the top passes through $2L$ LayerNorms on its way down, each rescaling it by the inverse of the
# standard deviation of the sum it normalised. Pre-LN leaves the highway clear and normalises only the copies
# the sublayers read; the price is a stream that grows as updates pile up.
#
# The experiment: 24 blocks of each kind, width 32, causal, with every weight matrix drawn from
# $\mathcal{N}(0, 1/\text{fan-in})$ (an initialisation under which each sublayer's output is about as large as its
# input, the regime where the two placements differ most) and the same loss as above (the Pre-LN stack gets
# its final LayerNorm). Left: the size of the residual stream entering each layer. Right: the norm of the
# gradient of each layer's parameters, what an optimiser step is made of.
#
# **Predict before you run.** Which of the two streams grows with depth? And at the top of the stack, whose
# parameter gradients are larger? (Section 1 quoted an explanation that says Post-LN's stream grows: test it.)
#
# <details><summary>Answer</summary>
#
# Pre-LN's stream grows: each sublayer adds an update of about the size of the normalised copy it read, and
# nothing ever rescales the sum. Post-LN's stream is normalised after every sublayer and stays at unit size,
# the opposite of the quoted explanation. At the top, Post-LN's gradients are the larger ones: in Pre-LN each
# later sublayer reads its input through a LayerNorm that divides by an ever larger stream, so its effect on the
# loss, and its gradient, shrinks with depth. The cell prints both ratios.
# </details>

# %% id="aaac159c"
def unit_scale_init(blocks, seed=0):
    # Every weight matrix N(0, 1/fan_in), biases 0, LayerNorms at (1, 0).
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for block in blocks:
            for name, p in block.named_parameters():
                if p.dim() == 2:
                    p.copy_(torch.randn(p.shape, generator=g) / p.shape[1] ** 0.5)
                else:
                    p.fill_(1.0 if name.endswith("ln1.weight") or name.endswith("ln2.weight") else 0.0)
    return blocks


pre_blocks = unit_scale_init([PreLNBlock(d, h) for _ in range(L)])
post_blocks = unit_scale_init([PostLNBlock(d, h) for _ in range(L)])
_, pre_param, pre_rms = gradient_profile(pre_blocks, lambda b, x: b(x, causal=True), final_norm=True)
_, post_param, post_rms = gradient_profile(post_blocks, lambda b, x: b(x, causal=True))

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4))
ax1.plot(range(L), pre_rms, "o-", label="Pre-LN")
ax1.plot(range(L), post_rms, "s-", label="Post-LN")
ax1.set_xlabel("layer l")
ax1.set_ylabel("RMS of the residual stream entering layer l")
ax1.set_title("Forward: the size of the stream")
ax1.legend()
ax2.semilogy(range(L), pre_param, "o-", label="Pre-LN")
ax2.semilogy(range(L), post_param, "s-", label="Post-LN")
ax2.set_xlabel("layer l")
ax2.set_ylabel("norm of the layer's parameter gradient")
ax2.set_title("Backward: gradient per layer at initialisation")
ax2.legend()
fig.tight_layout()
plt.show()
def mean(values):
    return sum(values) / len(values)


for label, rms, grad in [("Pre-LN", pre_rms, pre_param), ("Post-LN", post_rms, post_param)]:
    print(f"{label:8} stream RMS layer 0 -> 23: {rms[0]:.2f} -> {rms[-1]:.2f};   mean parameter gradient, "
          f"bottom 4 layers {mean(grad[:4]):.2f}, top 4 layers {mean(grad[-4:]):.2f} (top / bottom = {mean(grad[-4:]) / mean(grad[:4]):.2f})")
print(f"top 4 layers: Post-LN's gradients are {mean(post_param[-4:]) / mean(pre_param[-4:]):.1f} times Pre-LN's")
post_trend = mean(post_param[-4:]) / mean(post_param[:4])
pre_trend = mean(pre_param[-4:]) / mean(pre_param[:4])
claims.claim(f"Post-LN's stream stays between {min(post_rms):.2f} and {max(post_rms):.2f} RMS while Pre-LN's grows "
             f"{pre_rms[-1] / pre_rms[0]:.1f}-fold; Pre-LN's gradients fall with depth (top / bottom {pre_trend:.2f}), "
             f"Post-LN's show no such fall ({post_trend:.2f}), and at the top Post-LN's are "
             f"{mean(post_param[-4:]) / mean(pre_param[-4:]):.1f} times Pre-LN's",
             holds=max(abs(r - 1) for r in post_rms[1:]) < 0.05 and pre_rms[-1] / pre_rms[0] > 2.5
             and pre_trend < 0.5 and 0.5 < post_trend < 2 and mean(post_param[-4:]) / mean(pre_param[-4:]) > 2)


# %% [markdown] id="6721abe4"
# What the two panels show:
#
# * **Post-LN** resets the stream to unit size after every sublayer (left, flat at 1), and its parameter
#   gradients are about the same size at every depth (right: noisy, no trend). At this depth and initialisation
#   the $2L$ LayerNorms on the highway neither kill nor amplify the gradient on its way down.
# * **Pre-LN** lets the stream grow as the updates accumulate (left: its RMS rises severalfold, the claim above
#   gives the factor), and its parameter gradients **fall with depth** in step: each later sublayer reads its input
#   through a LayerNorm that divides by an ever larger stream, so its effect on the loss, and its gradient, is
#   scaled down.
#
# This is where the explanation quoted in section 1 goes wrong. It has Post-LN's residual stream "accumulating
# unnormalised updates" to a large magnitude; the left panel shows Post-LN's stream flat at 1 and Pre-LN's the one
# that grows. Whatever makes Post-LN hard to train, it is not the size of its stream. What the right panel shows is
# the reason that holds up: the difference sits at the top of the stack, where Post-LN's gradients are several
# times larger than Pre-LN's, and in deeper Post-LN models they stay that large, while Pre-LN's shrink as layers
# are added.
# Xiong et al. (2020) worked this out: with Post-LN the gradients of the last layers at initialisation do not
# decrease with depth, so a full learning rate from step 0 makes them take steps that are too large, and
# training diverges unless the learning rate is **warmed up** over the first thousands of steps (the original
# transformer ramped up over 4,000). With Pre-LN the per-layer gradients are damped automatically, and training
# works with little or no warm-up, which is why GPT-2 and nearly every large model since put the LayerNorm first
# (plus one final LayerNorm, since the stream itself is never normalised). Pre-LN also keeps the identity path free
# of LayerNorms, so however deep the stack, the bottom layers hear the loss. Its trade-off, later layers that
# change the stream relatively little, is what refinements such as GPT-2's scaled initialisation of the residual
# projections tune.

# %% [markdown] id="36f5d00f"
# ## 6. Three families built from the same block
#
# The block of this notebook, with or without the causal mask, is the whole body of the three families of
# transformer models. What changes is who may attend to whom, and what the model is trained to predict.
#
# | | **encoder-only** | **decoder-only** | **encoder-decoder** |
# |---|---|---|---|
# | examples | BERT, RoBERTa | GPT-2, GPT-3, LLaMA | the 2017 transformer, T5, BART |
# | self-attention | bidirectional: every token sees every token (`causal=False`) | causal: token $t$ sees tokens $\le t$ (`causal=True`) | encoder bidirectional; decoder causal, plus **cross-attention**: decoder queries, encoder keys and values (a third sublayer per decoder block) |
# | pre-training objective | masked language modelling: hide ~15% of tokens, predict them from both sides | next-token prediction on raw text | reconstruct or transform a sequence: corrupted spans → original (T5), source → target (translation) |
# | what comes out | one contextual vector per input token | a distribution over the next token at every position | an output sequence generated token by token, conditioned on the input |
# | typical use | classification, tagging, retrieval and embeddings (fine-tuned heads) | text generation, chat, in-context learning | translation, summarisation, other input → output tasks |
# | generates text? | not directly (no left-to-right factorisation) | yes, autoregressively | yes, the decoder does |
# | LayerNorm placement in the original | Post-LN (BERT) | Pre-LN (GPT-2 onward) | Post-LN (2017); Pre-LN variants since (T5) |
# | built in this course | notebook 12 (encoder block, masked-LM masking) | notebooks 07 to 11 | notebook 12 (cross-attention, decoder block, a translator) |
#
# Decoder-only models won the scaling race for a simple reason: one objective, next-token prediction, uses every
# token of any text as a training signal, and one architecture both understands a prompt and continues it.

# %% [markdown] id="b31ba170"
# ## 7. Counting GPT-2 small
#
# GPT-2 small is a decoder-only stack of the Pre-LN blocks you just wrote: $L = 12$ layers, $d = 768$,
# $h = 12$ heads ($d_k = 64$), $d_\text{ff} = 4d = 3072$, GELU, a context of $T_\text{max} = 1024$ learned
# positions, a vocabulary of $|V| = 50{,}257$ byte-level BPE tokens, a final LayerNorm, and an output layer
# **tied** to the token embedding (one matrix, counted once). Every projection has a bias. By formula:
#
# * embeddings: tokens $|V| d = 38{,}597{,}376$, positions $T_\text{max} d = 786{,}432$;
# * per block: attention $4d^2 + 4d = 2{,}362{,}368$; FFN $2\,d\,d_\text{ff} + d_\text{ff} + d = 4{,}722{,}432$;
#   two LayerNorms $4d = 3{,}072$; together $7{,}087{,}872$, so $12$ blocks hold $85{,}054{,}464$;
# * final LayerNorm $2d = 1{,}536$; output layer: $0$ new parameters (tied).
#
# $$
# 38{,}597{,}376 + 786{,}432 + 85{,}054{,}464 + 1{,}536 = 124{,}439{,}808 .
# $$
#
# The often-quoted "117 M" comes from the first GPT-2 paper's table; the released checkpoint holds
# 124,439,808 parameters, and without tying the output layer would add another $|V| d$, giving 163,037,184.
#
# The check: build the model from your `PreLNBlock` and `LayerNorm` on PyTorch's **`meta` device**, where tensors
# have shapes and dtypes but no storage. Building it costs no memory and no time for random initialisation,
# yet `parameters()` lists every tensor, so the count is exact. (The same trick lets you plan a 70-billion-parameter
# model on a laptop.)

# %% id="98b2e3a5"
def gpt_parameter_count(n_layer, d_model, n_head, context, vocab, d_ff=None, tied=True):
    # Closed form for a GPT-2-style decoder: learned positions, biases everywhere, Pre-LN with a final LayerNorm.
    d_ff = 4 * d_model if d_ff is None else d_ff
    embeddings = vocab * d_model + context * d_model
    attention = 4 * d_model * d_model + 4 * d_model          # Q, K, V, output projections (h does not enter)
    ffn = 2 * d_model * d_ff + d_ff + d_model
    norms = 2 * (2 * d_model)
    output_layer = 0 if tied else vocab * d_model
    return embeddings + n_layer * (attention + ffn + norms) + 2 * d_model + output_layer


class GPT(nn.Module):
    def __init__(self, n_layer, d_model, n_head, context, vocab):
        super().__init__()
        self.wte = nn.Embedding(vocab, d_model)                   # token embedding
        self.wpe = nn.Embedding(context, d_model)                 # learned positions
        self.blocks = nn.ModuleList(PreLNBlock(d_model, n_head, activation="gelu") for _ in range(n_layer))
        self.ln_f = LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab, bias=False)
        self.lm_head.weight = self.wte.weight                     # tied: one tensor, two uses

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        for block in self.blocks:
            x = block(x, causal=True)
        return self.lm_head(self.ln_f(x))


config = dict(n_layer=12, d_model=768, n_head=12, context=1024, vocab=50_257)
formula = gpt_parameter_count(**config)
with torch.device("meta"):
    gpt2 = GPT(**config)
counted = sum(p.numel() for p in gpt2.parameters())          # a shared (tied) tensor is listed once
print(f"GPT-2 small by formula:          {formula:>13,}")
print(f"GPT-2 small built on 'meta':     {counted:>13,}   match: {formula == counted}")
print(f"parameters live on {gpt2.wte.weight.device}; in float32 they would take {counted * 4 / 1e6:,.0f} MB")
print(f"untied output layer:             {gpt_parameter_count(**config, tied=False):>13,}")
by_part = {"token embedding (tied with the output)": gpt2.wte.weight.numel(),
           "position embedding": gpt2.wpe.weight.numel(),
           "12 blocks": sum(p.numel() for p in gpt2.blocks.parameters()),
           "final LayerNorm": sum(p.numel() for p in gpt2.ln_f.parameters())}
for part, n in by_part.items():
    print(f"   {part:40}{n:>13,}  ({n / counted:.1%})")
reference = nn.TransformerEncoderLayer(768, 12, 3072, activation="gelu", norm_first=True, device="meta")
print(f"one nn.TransformerEncoderLayer(768, 12, 3072, norm_first=True): {sum(p.numel() for p in reference.parameters()):,}"
      f"   one of your blocks: {sum(p.numel() for p in gpt2.blocks[0].parameters()):,}")
logits = gpt2(torch.zeros(1, 8, dtype=torch.long, device="meta"))
print(f"a forward pass on 'meta' computes only shapes: (1, 8) token ids -> logits {tuple(logits.shape)}")

# %% [markdown] id="8feff702"
# Almost a third of GPT-2 small is its embedding table: with $|V| = 50{,}257$ and $d = 768$ the vocabulary costs
# as much as five and a half blocks. In larger models the blocks dominate ($12 L d^2$ grows with depth and
# width squared), which is why "parameters $\approx 12 L d^2$" is the usual back-of-the-envelope estimate
# ($12 \cdot 12 \cdot 768^2 = 84.9$ M here, against the exact 85.1 M in the blocks).
#
# ## Summary
#
# * **LayerNorm** standardises each token over its features with the **biased** variance and
#   $\sqrt{\sigma^2 + \varepsilon}$, $\varepsilon = 10^{-5}$, then applies $\gamma$ (`weight`) and $\beta$ (`bias`).
#   The $\sigma + \varepsilon$ form some texts print is a different function: equal for ordinary vectors, a factor of
#   3 apart at $\sigma = 10^{-3}$ and more for flatter ones.
# * The **FFN**, $\phi(xW_1^\top + b_1)W_2^\top + b_2$ with $d_\text{ff} = 4d$, works on every position alone and
#   holds two thirds of a block's parameters. GELU here is the exact $z\Phi(z)$; the tanh form differs by
#   up to $5 \times 10^{-4}$.
# * **Pre-LN**: $x + \operatorname{MHA}(\operatorname{LN}(x))$, then $x + \operatorname{FFN}(\operatorname{LN}(x))$; **Post-LN**:
#   $\operatorname{LN}(x + \operatorname{MHA}(x))$, then $\operatorname{LN}(x + \operatorname{FFN}(x))$. Same parameters, different
#   training behaviour.
# * **Residuals** put an identity term into every layer's Jacobian, a path that carries the top's gradient down
#   unchanged (other terms can add to it or, in principle, cancel it): through these 24 layers at this initialisation
#   the gradient never fell below the top's, while without residuals it underflows to zero. At initialisation Post-LN's top layers get gradients several
#   times larger than Pre-LN's, which damps them by its growing stream: Post-LN needs a learning-rate warm-up,
#   Pre-LN hardly does.
# * Encoder-only (bidirectional, masked LM), decoder-only (causal, next token) and encoder-decoder (plus
#   cross-attention) models are stacks of this one block.
# * GPT-2 small: $50{,}257 \cdot 768 + 1024 \cdot 768 + 12 \cdot 7{,}087{,}872 + 1{,}536 = 124{,}439{,}808$ parameters
#   with tied embeddings, confirmed on a model built on the `meta` device.
#
# Next: notebook 08 stacks these blocks into a GPT and trains it.
