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

# %% [markdown] id="ea39478d"
# # 04 · Why attention divides by $\sqrt{d_k}$
#
# Scaled dot-product attention,
#
# $$
# \operatorname{Attention}(Q, K, V) = \operatorname{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right) V,
# $$
#
# has exactly one constant in it: the $1/\sqrt{d_k}$, where $d_k$ is the length of a query or key vector
# (the *head* dimension). It looks like a detail. This notebook shows that it decides whether attention can
# learn at all, and why the right constant is the square root of $d_k$, not $d_k$ and not 1:
#
# 1. **The variance of a dot product.** For random vectors, $q \cdot k$ has variance proportional to $d_k$:
#    derived on paper, checked exactly on a case small enough to enumerate, then estimated by Monte Carlo
#    for $d_k$ from 1 to 1024.
# 2. **Softmax saturation.** Scores with a standard deviation of 22 push the softmax to a near one-hot
#    distribution: we measure the largest weight and the entropy of attention rows, and the softmax
#    Jacobian, which is what the gradient has to pass through.
# 3. **Temperature**: dividing by $\sqrt{d_k}$ is the same knob as the sampling temperature of notebook 01.
# 4. **Learning**: a tiny attention model trained with and without the scale.
#
# **Time.** About 6 seconds of CPU time for the whole notebook, measured on one core of a busy 2-core machine,
# about what a 2-core laptop takes; no cell takes more than 2 seconds. On a GPU: untimed (nothing here needs
# one).
#
# **How the exercises work.** Each exercise is a function with a docstring that states what goes in and
# what comes out. Replace `raise NotImplementedError()` with your code, then run the test cell below it:
# its messages say what was expected and what came back. When the notebook is graded, further hidden
# tests check the same function on new inputs, so make it correct in general, not just on the examples
# shown. Run the cells in order.

# %% id="ccb16aa9" jupyter={"source_hidden": true} nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
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

# %% id="044541f9"
import itertools
import math

import matplotlib.pyplot as plt
import torch

from utils import claims

torch.set_printoptions(precision=4, sci_mode=False)


# %% [markdown] id="d188261e"
# ## 1. The variance of a dot product
#
# An attention score is a dot product, $s = q \cdot k = \sum_{i=1}^{d_k} q_i k_i$: a sum of $d_k$ terms.
# More terms, bigger sums. To say *how much* bigger, model the entries as random, which is what they are
# at initialisation: let $q_1, \dots, q_{d_k}, k_1, \dots, k_{d_k}$ be **independent**, each with
# **mean 0** and **variance $\sigma^2$**.
#
# **The mean.** Independence lets the expectation of a product split:
# $\mathbb{E}[s] = \sum_i \mathbb{E}[q_i]\,\mathbb{E}[k_i] = 0$.
#
# **One term.** Since $\mathbb{E}[q_i k_i] = 0$,
#
# $$
# \operatorname{Var}(q_i k_i) = \mathbb{E}[q_i^2 k_i^2] - \big(\mathbb{E}[q_i k_i]\big)^2
# = \mathbb{E}[q_i^2]\,\mathbb{E}[k_i^2] - 0 = \sigma^2 \cdot \sigma^2 = \sigma^4 .
# $$
#
# **The sum.** The $d_k$ terms are independent of each other (term $i$ uses only $q_i$ and $k_i$), and the
# variance of a sum of independent terms is the sum of their variances:
#
# $$
# \boxed{\operatorname{Var}(q \cdot k) = d_k\, \sigma^4}, \qquad \operatorname{sd}(q \cdot k) = \sqrt{d_k}\,\sigma^2 .
# $$
#
# With unit-variance entries ($\sigma = 1$) the variance is simply $d_k$: at $d_k = 64$ the scores have
# standard deviation 8, at $d_k = 512$ about 22.6 (often rounded to 23).
#
# **The fix.** A constant factor comes out of a variance squared, $\operatorname{Var}(cX) = c^2 \operatorname{Var}(X)$, so
#
# $$
# \operatorname{Var}\!\left(\frac{q \cdot k}{\sqrt{d_k}}\right) = \frac{d_k\,\sigma^4}{d_k} = \sigma^4 ,
# $$
#
# the variance of a single term, whatever $d_k$ is ($= 1$ for $\sigma = 1$). Dividing by $d_k$ instead would
# give $\sigma^4 / d_k \to 0$: every score near 0 and attention close to uniform for large heads. The
# square root is exactly what undoes the growth of the standard deviation.
#
# A few remarks that are easy to get wrong:
#
# * **Nothing here is Gaussian.** The derivation uses independence, mean zero and a common variance, nothing
#   else; presentations that assume $\mathcal N(0, 1)$ entries assume more than they need.
# * **Mean zero matters.** If the entries had mean $\mu \ne 0$, the scores would also *drift*:
#   $\mathbb{E}[q \cdot k] = d_k \mu^2$.
# * **It is $d_k$, not $d_\text{model}$.** The dot product runs over the head dimension. Some texts write
#   $1/\sqrt{d_\text{model}}$; that agrees only for a single head. With 8 heads and $d_\text{model} = 512$,
#   $d_k = 64$ and the factor is $1/8$, not $1/22.6$.
# * **It is a statement about initialisation.** Trained queries and keys are neither independent nor of
#   unit variance; the scale guarantees a sensible *starting point*, and section 4 shows why the start
#   matters so much.
#
# ### A case you can check by hand
#
# Take $d_k = 2$ and entries that are fair coin flips, $\pm 1$ with probability $\frac12$ each: mean 0,
# variance $\sigma^2 = 1$. Each product $q_i k_i$ is again $\pm 1$ with probability $\frac12$, and the two
# products are independent, so $s = q_1 k_1 + q_2 k_2$ is
#
# | $s$ | $-2$ | $0$ | $2$ |
# |---|---|---|---|
# | probability | $\frac14$ | $\frac12$ | $\frac14$ |
#
# and $\operatorname{Var}(s) = \mathbb{E}[s^2] = 4 \cdot \frac14 + 0 \cdot \frac12 + 4 \cdot \frac14 = 2 = d_k \sigma^4$.
# There are only $2^4 = 16$ equally likely $(q, k)$, so the computer can enumerate them all: no sampling,
# no approximation.
#
# **Predict before you run.** Now let the entries be $\pm 2$ ($\sigma = 2$), still with $d_k = 2$. Which
# values can $s$ take, what is $\operatorname{Var}(s)$, and what is the variance of $s / \sqrt{2}$?
#
# <details><summary>Answer</summary>
#
# Each product is $\pm 4$, so $s \in \{-8, 0, 8\}$ with probabilities $\frac14, \frac12, \frac14$, and
# $\operatorname{Var}(s) = 64 \cdot \frac12 = 32 = d_k \sigma^4 = 2 \cdot 16$. Scaled:
# $\operatorname{Var}(s/\sqrt2) = 32 / 2 = 16 = \sigma^4$. The scale removes the growth with $d_k$, not
# the dependence on $\sigma$.
# </details>

# %% id="0fb3f57a"
def exact_dot_variance(values, d_k, scaled=False):
    """Enumerate every (q, k) whose 2 * d_k entries are drawn from `values` (all equally likely)."""
    scores = []
    for entries in itertools.product(values, repeat=2 * d_k):
        q = torch.tensor(entries[:d_k], dtype=torch.float64)
        k = torch.tensor(entries[d_k:], dtype=torch.float64)
        scores.append(q @ k / (math.sqrt(d_k) if scaled else 1.0))
    scores = torch.stack(scores)
    return scores, scores.var(correction=0).item()      # the exact variance of the distribution


for values, d_k, scaled in [((-1, 1), 2, False), ((-1, 1), 3, False), ((-2, 2), 2, False), ((-2, 2), 2, True)]:
    scores, variance = exact_dot_variance(values, d_k, scaled)
    support, counts = torch.unique(scores, return_counts=True)
    sigma = values[1]
    theory = sigma ** 4 * (1 if scaled else d_k)
    table = ", ".join(f"{s:+.3g}: {c}/{len(scores)}" for s, c in zip(support.tolist(), counts.tolist()))
    print(f"entries +-{sigma}, d_k = {d_k}, {'scaled  ' if scaled else 'unscaled'}  "
          f"Var = {variance:g}  (theory {theory:g})   distribution of s: {table}")

# %% [markdown] id="71fc95f5"
# ### How precise is a Monte Carlo estimate?
#
# Enumeration stops being possible almost at once ($d_k = 64$ with coin-flip entries has $2^{128}$
# cases), so we **sample**: draw $n$ independent pairs $(q, k)$, compute their $n$ dot products, and take the
# sample variance. That estimate is itself random, and it is worth knowing how far off it may be.
#
# For $n$ independent draws of a zero-mean $X$, the sample variance $\hat v$ has, for large $n$,
#
# $$
# \operatorname{Var}(\hat v) \approx \frac{\mathbb{E}[X^4] - \operatorname{Var}(X)^2}{n}.
# $$
#
# For Gaussian entries, one term $Y = q_i k_i$ has $\mathbb{E}[Y^4] = \mathbb{E}[q_i^4]\,\mathbb{E}[k_i^4] = 3\sigma^4 \cdot 3\sigma^4 = 9\sigma^8$;
# adding $d_k$ independent terms gives $\mathbb{E}[X^4] = 3 d_k^2 \sigma^8 + 6 d_k \sigma^8$ (fourth cumulants add:
# $9\sigma^8 - 3\sigma^8 = 6\sigma^8$ per term). Divided by $\operatorname{Var}(X)^2 = d_k^2 \sigma^8$:
#
# $$
# \text{relative standard error of } \hat v \;\approx\; \sqrt{\frac{2 + 6/d_k}{n}} .
# $$
#
# With $n = 20\,000$ and $d_k = 16$ that is about $1.1\%$; at $d_k = 1$ the tail of $q_1 k_1$ is heavy and it
# is $2\%$. The tests of the next exercise accept an estimate within **seven** standard errors of the
# theory. A correct estimate lands that far off with probability below $10^{-11}$ (for a normal
# approximation; in 600 simulated estimates per case the worst was 3.7 standard errors), while every
# classic mistake is off by a factor of 2 or more.
#
# ### Exercise 1: `mc_dot_product_variance` (1 + 2 + 1 points)
#
# *Points: 1 visible, 2 hidden (the estimate against theory, reproducible from the generator), 1 hidden (the estimate is a real sample: its spread across generators, and a Python float).*
#
# Estimate $\operatorname{Var}(q \cdot k)$, or $\operatorname{Var}(q \cdot k / \sqrt{d_k})$ when `scaled=True`,
# by Monte Carlo. Draw **all** randomness from the `generator` you are given (pass `generator=generator`
# to `torch.randn`), so that the same seed always gives the same estimate: that is how the tests make a
# statistical check reproducible. The tests also run your function with many generators and small
# `n_samples`, and check that the estimates scatter around the theory as much as a sample variance of
# `n_samples` dot products should: the closed form plus a little noise is not an estimate. `sigma` is the *standard deviation* of each entry.
#
# Hint: you will have a tensor with one axis for the samples and one for the coordinates. Decide which one
# the dot product sums over, and which one the variance is taken over.

# %% id="b189657b" nbgrader={"grade": false, "grade_id": "mc_dot_product_variance", "locked": false, "schema_version": 3, "solution": true, "task": false}
import math

import torch


def mc_dot_product_variance(d_k, n_samples, generator, sigma=1.0, scaled=False):
    """Monte Carlo estimate of the variance of the dot product of two random vectors.

    Args:
        d_k: int >= 1, the length of q and of k.
        n_samples: int >= 2, the number of independent (q, k) pairs to draw.
        generator: a torch.Generator. Draw ALL randomness from it (torch.randn(..., generator=generator)),
            so that a generator with the same seed always gives the same estimate. Draw from its current
            state (never re-seed it): a generator already drawn from gives another estimate than a fresh
            one with the same seed.
        sigma: float > 0, the standard deviation of every entry: entries of q and k are i.i.d. N(0, sigma**2).
        scaled: if True, estimate the variance of q . k / sqrt(d_k) instead of q . k.
    Returns:
        A Python float (not a tensor): the sample variance of the n_samples dot products, one per pair
        (dividing by n_samples or by n_samples - 1 are both fine). Theory: d_k * sigma**4, or sigma**4
        when scaled. It is a genuine estimate: across generators it scatters around the theory with the
        spread of a sample variance of n_samples values (relative standard deviation about
        sqrt((2 + 6 / d_k) / n_samples) for large n_samples), and it is never negative.
        Uses memory for about 2 * n_samples * d_k numbers.
    """
    ### BEGIN SOLUTION
    q = sigma * torch.randn(n_samples, d_k, generator=generator)
    k = sigma * torch.randn(n_samples, d_k, generator=generator)
    scores = (q * k).sum(dim=-1)            # one dot product per sample: a sum over the d_k coordinates
    if scaled:
        scores = scores / math.sqrt(d_k)
    return scores.var().item()              # the spread across samples
    ### END SOLUTION


# %% id="47f4c14c" nbgrader={"grade": true, "grade_id": "test_mc_dot_product_variance", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
import math

import torch
from utils import checks


def tolerance(d_k, n_samples):
    # Seven relative standard errors of a sample variance of Gaussian dot products, sqrt((2 + 6/d_k) / n)
    # (see "How precise is a Monte Carlo estimate?"): a correct estimate is never this far off.
    return 7 * math.sqrt((2 + 6 / d_k) / n_samples)


estimate = mc_dot_product_variance(16, 20000, torch.Generator().manual_seed(0))
checks.assert_close(estimate, 16.0, atol=0, rtol=tolerance(16, 20000),
                    name="mc_dot_product_variance(d_k=16, n_samples=20000)",
                    hint="Draw q and k of shape (n_samples, d_k), take one dot product per sample (a sum over the "
                         "d_k axis), then the variance over the samples. Theory: d_k * sigma**4 = 16.")

estimate = mc_dot_product_variance(16, 20000, torch.Generator().manual_seed(1), scaled=True)
checks.assert_close(estimate, 1.0, atol=0, rtol=tolerance(16, 20000),
                    name="mc_dot_product_variance(d_k=16, n_samples=20000, scaled=True)",
                    hint="Scaled means q . k / sqrt(d_k), whose variance is d_k / d_k = 1 (dividing by d_k gives 1/16).")

estimate = mc_dot_product_variance(4, 20000, torch.Generator().manual_seed(2), sigma=2.0)
checks.assert_close(estimate, 64.0, atol=0, rtol=tolerance(4, 20000),
                    name="mc_dot_product_variance(d_k=4, n_samples=20000, sigma=2)",
                    hint="sigma is a standard deviation: entries are sigma * (standard normal). "
                         "Theory: d_k * sigma**4 = 4 * 16 = 64.")

first = mc_dot_product_variance(8, 1000, torch.Generator().manual_seed(3))
again = mc_dot_product_variance(8, 1000, torch.Generator().manual_seed(3))
checks.assert_close(again, first, atol=0, rtol=0, name="mc_dot_product_variance twice with the same seed",
                    hint="Draw every random number from the generator argument (generator=generator), never from "
                         "the global random state.")
print("mc_dot_product_variance: visible tests passed")

# %% id="a74a79c5" nbgrader={"grade": true, "grade_id": "test_mc_dot_product_variance_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for mc_dot_product_variance run when your notebook is graded.
### BEGIN HIDDEN TESTS
import math

import torch
from utils import checks


def tolerance(d_k, n_samples):
    # Seven relative standard errors of the sample variance (fourth-moment formula): never reached by chance.
    return 7 * math.sqrt((2 + 6 / d_k) / n_samples)


cases = [  # d_k, n_samples, sigma, scaled
    (1, 200000, 1.0, False), (3, 50000, 0.5, False), (5, 40000, 2.0, True), (64, 20000, 1.5, True),
    (256, 8000, 1.0, False), (1024, 2000, 0.7, True), (1024, 2000, 1.0, False),
]
for index, (d_k, n_samples, sigma, scaled) in enumerate(cases):
    theory = sigma ** 4 * (1 if scaled else d_k)
    estimate = mc_dot_product_variance(d_k, n_samples, torch.Generator().manual_seed(4040 + index),
                                       sigma=sigma, scaled=scaled)
    checks.assert_close(estimate, theory, atol=0, rtol=tolerance(d_k, n_samples),
                        name=f"mc_dot_product_variance(d_k={d_k}, n_samples={n_samples}, sigma={sigma}, scaled={scaled})",
                        hint="Theory: d_k * sigma**4 unscaled, sigma**4 scaled. Check the axis of the dot product, "
                             "that sigma multiplies standard normals, and that q and k are drawn independently.")

# Reproducible from the generator, and actually driven by it.
first = mc_dot_product_variance(32, 500, torch.Generator().manual_seed(77), sigma=1.3)
again = mc_dot_product_variance(32, 500, torch.Generator().manual_seed(77), sigma=1.3)
other = mc_dot_product_variance(32, 500, torch.Generator().manual_seed(78), sigma=1.3)
checks.assert_close(again, first, atol=0, rtol=0, name="mc_dot_product_variance with the same seed twice",
                    hint="Use only the generator argument for random numbers.")
checks.assert_true(other != first, name="mc_dot_product_variance with two different seeds",
                   problem="two different generators gave exactly the same estimate.",
                   hint="Draw the samples from the generator you are given, not from a seed of your own.")
# Drawn from the generator's current state: a generator already drawn from is not the same as a fresh one.
advanced = torch.Generator().manual_seed(79)
torch.randn(10, generator=advanced)
fresh = mc_dot_product_variance(32, 500, torch.Generator().manual_seed(79), sigma=1.3)
checks.assert_true(mc_dot_product_variance(32, 500, advanced, sigma=1.3) != fresh,
                   name="mc_dot_product_variance with a generator already drawn from",
                   problem="it gave exactly the estimate of a fresh generator with the same seed: the generator was "
                           "re-seeded instead of drawn from its current state.",
                   hint="Draw from the generator as it is (generator=generator); do not call generator.manual_seed "
                        "inside the function.")
print("mc_dot_product_variance: hidden tests passed")
### END HIDDEN TESTS

# %% id="5a7c0e11" nbgrader={"grade": true, "grade_id": "test_mc_dot_product_variance_hidden_sampling", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for mc_dot_product_variance run when your notebook is graded.
### BEGIN HIDDEN TESTS
import math

import torch
from utils import checks

# An estimate is a sample: with many generators and few samples, the estimates must scatter around the
# theory exactly as much as the sample variance of n_samples Gaussian dot products does. For zero-mean X
# with Var(X) = v and fourth moment m4, Var(sample variance) = m4 / n - v**2 * (n - 3) / (n * (n - 1)).
# Measured over 300 blocks of 200 seeds each (three ways of laying out the draws, divisor n - 1), the relative
# spread was 0.77-1.48 times this for n_samples = 2 and 0.81-1.28 times for 6 and 10, and the mean 0.67-1.33
# (n = 2) and 0.87-1.15 times the theory; dividing by n_samples lowers the mean by (n - 1) / n. The bounds
# below are wider than all of that; the closed form plus noise has a spread near 0.
# At d_k = 1 the dot product is one product of two normals, with heavy tails (fourth moment 9 sigma**8): its
# sample variance scatters about twice as much as for entries of the same variance with light tails (uniform
# entries: 0.55 times the Gaussian spread), so this case also tells N(0, sigma**2) entries from look-alikes.
# Measured over 100 blocks of 300 seeds (two layouts of the draws, divisors n and n - 1): 0.82-1.19 times the
# prediction; uniform entries 0.49-0.60.
for d_k, n_samples, sigma, scaled, seed in [(4, 10, 1.0, False, 60000), (9, 6, 0.8, True, 61000),
                                            (4, 2, 1.0, False, 62000), (1, 20, 1.3, False, 63000)]:
    v = sigma ** 4 * d_k
    m4 = (3 * d_k ** 2 + 6 * d_k) * sigma ** 8
    predicted = math.sqrt(m4 / n_samples - v ** 2 * (n_samples - 3) / (n_samples * (n_samples - 1))) / v
    theory = sigma ** 4 * (1 if scaled else d_k)
    estimates = []
    for s in range(300 if d_k == 1 else 200):
        estimate = mc_dot_product_variance(d_k, n_samples, torch.Generator().manual_seed(seed + s), sigma=sigma,
                                           scaled=scaled)
        if s == 0:
            checks.assert_true(type(estimate) is float, name="the type of mc_dot_product_variance's result",
                               problem=f"expected a Python float, got {type(estimate).__name__}.",
                               hint="Turn the 0-d tensor into a number with .item().")
        estimates.append(float(estimate))
    values = torch.tensor(estimates, dtype=torch.float64)
    name = (f"mc_dot_product_variance(d_k={d_k}, n_samples={n_samples}, sigma={sigma}, scaled={scaled}) "
            f"over {len(estimates)} generators")
    checks.assert_true(bool((values >= 0).all()), name=name, problem="an estimate that is negative or nan.",
                       hint="A sample variance of n_samples >= 2 values is a number >= 0; use all n_samples pairs.")
    low, high = (0.5, 2.0) if n_samples == 2 else (0.72, 2.0) if d_k == 1 else (0.6, 1.6)
    mean = values.mean().item()
    checks.assert_true(0.5 * (n_samples - 1) / n_samples * theory < mean < 1.5 * theory, name=f"{name}: the mean estimate",
                       problem=f"the estimates average {mean:.4g}; the theory is {theory:.4g}.",
                       hint="Averaged over many generators the estimates should centre on the theory.")
    spread = (values.std() / values.mean()).item()
    checks.assert_true(low * predicted < spread < high * predicted, name=f"{name}: the spread of the estimates",
                       problem=f"the estimates have relative standard deviation {spread:.3g}; a sample variance of "
                               f"{n_samples} dot products has {predicted:.3g}.",
                       hint="Compute the variance of n_samples dot products drawn from the generator; do not "
                            "return the theory (plus noise), use exactly n_samples pairs, and draw the entries from "
                            "the normal distribution (sigma * torch.randn), not another one of the same variance.")
print("mc_dot_product_variance: hidden sampling tests passed")
### END HIDDEN TESTS

# %% [markdown] id="ccd2b27a"
# Now the whole range of head sizes, $d_k = 1, 2, 4, \dots, 1024$, on log–log axes. A power law
# $\operatorname{Var} = d_k$ is a straight line of slope 1 there; the scaled variance should be a flat line
# at 1. The error bars are $\pm 2$ standard errors from the formula above.

# %% id="e54e883b"
dims = [2 ** i for i in range(11)]                  # 1, 2, 4, ..., 1024
n_samples = 4000
generator = torch.Generator().manual_seed(0)
unscaled = [mc_dot_product_variance(d, n_samples, generator) for d in dims]
scaled = [mc_dot_product_variance(d, n_samples, generator, scaled=True) for d in dims]
rel_se = [math.sqrt((2 + 6 / d) / n_samples) for d in dims]

fig, ax = plt.subplots(figsize=(6.5, 4.2))
ax.errorbar(dims, unscaled, yerr=[2 * v * r for v, r in zip(unscaled, rel_se)], fmt="o", label=r"Monte Carlo, $q \cdot k$")
ax.errorbar(dims, scaled, yerr=[2 * v * r for v, r in zip(scaled, rel_se)], fmt="s", label=r"Monte Carlo, $q \cdot k / \sqrt{d_k}$")
ax.plot(dims, dims, "k--", linewidth=1, label=r"theory $d_k$")
ax.plot(dims, [1] * len(dims), "k:", linewidth=1, label="theory 1")
ax.set_xscale("log", base=2)
ax.set_yscale("log", base=2)
ax.set_xlabel("$d_k$")
ax.set_ylabel("variance of the score")
ax.set_title(f"Variance of a dot product of N(0, 1) vectors ({n_samples} pairs per point)")
ax.legend()
plt.show()

print(" d_k   Var(q.k)  theory   sd(q.k)   Var(q.k/sqrt(d_k))")
for d, u, s in zip(dims, unscaled, scaled):
    print(f"{d:>4}  {u:>9.2f}  {d:>6}  {math.sqrt(d):>7.2f}   {s:.3f}")
worst = max(max(abs(u / d - 1), abs(s - 1)) / r for d, u, s, r in zip(dims, unscaled, scaled, rel_se))
claims.claim(f"Every estimate lies within {worst:.1f} standard errors of its theory (d_k unscaled, 1 scaled), "
             f"from d_k = 1 to {dims[-1]}", holds=worst < 3)

# %% [markdown] id="b040b8aa"
# ## 2. What large scores do to a softmax
#
# The softmax only sees differences between scores: $e^{s_i} / e^{s_j} = e^{s_i - s_j}$. A gap of 10 already
# means a weight ratio of $e^{10} \approx 22\,000$. At $d_k = 512$ the unscaled scores of one query against
# its keys are spread with a standard deviation of 22.6, so gaps of 10 or 20 between the best key and the
# runner-up are ordinary, and the softmax puts essentially all its weight on one key.
#
# To measure how *spread out* an attention row $p = (p_1, \dots, p_T)$ is, we use its **entropy**
#
# $$
# H(p) = -\sum_{j=1}^{T} p_j \ln p_j \quad\text{(in nats)}, \qquad 0 \le H(p) \le \ln T ,
# $$
#
# which is $0$ for a one-hot row and $\ln T$ for the uniform row. Terms with $p_j = 0$ count as $0$, the limit
# of $p \ln p$ as $p \to 0$; this matters, because masked positions get weight exactly 0, and so do keys in
# a saturated row once $e^{-100}$ underflows. The natural log matches the $e$ in the softmax; $\log_2$ would
# give bits instead (1 nat $= 1/\ln 2 \approx 1.443$ bits). An entropy of $H$ nats is "as spread out as a
# uniform distribution over $e^H$ keys", a handy way to read it.
#
# **Worked example.** Uniform over 4 keys: $H = \ln 4 = 1.386$. The row $(\frac12, \frac12, 0, 0)$ (two keys
# masked): $H = \ln 2 = 0.693$. The row $(0.7, 0.1, 0.1, 0.1)$: $H = -0.7\ln 0.7 - 3 \cdot 0.1 \ln 0.1 = 0.250 + 0.691 = 0.940$.
#
# ### Exercise 2: `attention_entropy` (1 + 2 + 1 points)
#
# *Points: 1 visible, 2 hidden (random and saturated rows of several shapes and dtypes), 1 hidden (edge cases: exact zeros, one-hot rows, a single key, uniform rows, the input left unchanged).*
#
# Return the entropy of every row of an attention matrix. Don't let a weight of exactly 0 produce `nan`
# (what is $0 \cdot \ln 0$ in floating point?).

# %% id="3d1672d3" nbgrader={"grade": false, "grade_id": "attention_entropy", "locked": false, "schema_version": 3, "solution": true, "task": false}
import torch


def attention_entropy(weights):
    """Entropy, in nats, of each attention row.

    Args:
        weights: floating tensor of shape (..., T), T >= 1; every slice along the last dimension is a
            probability distribution (entries >= 0 that sum to 1). Entries may be exactly 0 (masked keys,
            or an underflowed softmax), and a row may be exactly one-hot.
    Returns:
        A new tensor of shape (...) (the last dimension removed), same dtype as weights:
        H = -sum_j w_j * ln(w_j) over the last dimension, where a term with w_j == 0 counts as 0.
        So a one-hot row gives exactly 0 (never nan), and a uniform row over T keys gives ln(T).
        The input is not modified.
    """
    ### BEGIN SOLUTION
    # 0 * log(0) is 0 * (-inf) = nan in floating point; by the limit p log p -> 0 such terms are 0.
    terms = torch.where(weights > 0, weights * torch.log(weights), torch.zeros_like(weights))
    return -terms.sum(dim=-1)
    ### END SOLUTION


# %% id="50c29b91" nbgrader={"grade": true, "grade_id": "test_attention_entropy", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
import math

import torch
from utils import checks, probes

out = attention_entropy(torch.tensor([0.25, 0.25, 0.25, 0.25]))
checks.assert_tensor(out, name="attention_entropy(uniform over 4)", shape=(), dtype="floating",
                     hint="One row in, one number out: sum over the last dimension.")
checks.assert_close(out, torch.tensor(math.log(4)), name="attention_entropy(uniform over 4)",
                    hint="H = -sum p ln p in nats (natural log): ln 4 = 1.386 here; log2 would give 2.")

checks.assert_close(attention_entropy(torch.tensor([0.7, 0.1, 0.1, 0.1])),
                    torch.tensor(-0.7 * math.log(0.7) - 0.3 * math.log(0.1)),
                    name="attention_entropy([0.7, 0.1, 0.1, 0.1])", hint="Mind the minus sign: entropy is >= 0.")

out = attention_entropy(torch.tensor([[0.5, 0.5, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]]))
checks.assert_close(out, torch.tensor([math.log(2), 0.0]), name="attention_entropy of rows with exact zeros",
                    hint="0 * ln(0) is nan in floating point; a weight of exactly 0 must contribute 0 "
                         "(a one-hot row has entropy 0).")

weights = torch.full((2, 3, 5), 0.2)
checks.assert_close(attention_entropy(weights), torch.full((2, 3), math.log(5)), name="attention_entropy on shape (2, 3, 5)",
                    hint="Every slice along the LAST dimension is one row; the result has shape weights.shape[:-1].")

# The caller's weights stay as they were, zeros included.
w = torch.tensor([[0.5, 0.5, 0.0, 0.0]])
call = probes.traced_call(attention_entropy, w.clone())
checks.assert_close(call.args_after[0], w, atol=0, rtol=0, name="attention_entropy's input after the call",
                    hint="Handle p = 0 without writing into the weights: clamp_ or masked_fill_ changes the caller's "
                         "tensor; torch.where, torch.xlogy or a clamped copy do not.")
print("attention_entropy: visible tests passed")

# %% id="65b92df2" nbgrader={"grade": true, "grade_id": "test_attention_entropy_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for attention_entropy run when your notebook is graded.
### BEGIN HIDDEN TESTS
import math

import torch
from utils import checks

g = torch.Generator().manual_seed(5150)

# Random rows, batched, against PyTorch's categorical entropy (in nats).
for shape, dtype in [((7, 9), torch.float32), ((2, 4, 6), torch.float64), ((11,), torch.float64), ((3, 3), torch.float32),
                     ((1, 3, 1, 5), torch.float64)]:
    weights = torch.softmax(torch.randn(*shape, generator=g, dtype=dtype) * 2, dim=-1)
    reference = torch.distributions.Categorical(probs=weights).entropy()
    out = attention_entropy(weights)
    checks.assert_tensor(out, name=f"attention_entropy on shape {shape}, {dtype}", shape=shape[:-1], dtype=dtype,
                         hint="Reduce over the last dimension only, and keep the dtype of weights (no .float(), no "
                              "accumulator created without dtype=weights.dtype).")
    checks.assert_close(out, reference, atol=1e-6, rtol=1e-5, name=f"attention_entropy on shape {shape}, {dtype}",
                        hint="H = -sum_j p_j ln p_j over the last dimension, natural log.")

# Rows that are not contiguous in memory (a softmax over the first dimension, moved last): any tensor of
# shape (..., T) is allowed, so reshape rather than view.
weights = torch.softmax(torch.randn(6, 3, 4, generator=g, dtype=torch.float64), dim=0).permute(2, 1, 0)
checks.assert_close(attention_entropy(weights), torch.distributions.Categorical(probs=weights).entropy(), atol=1e-10,
                    rtol=1e-8, name="attention_entropy of rows that are not contiguous (shape (4, 3, 6), permuted)",
                    hint="weights.view(...) fails on a tensor that is not contiguous; use reshape, or reduce with "
                         "sum(dim=-1) directly.")

# Saturated float32 rows with tiny but positive weights (an unscaled softmax at d_k = 512).
scores = torch.randn(50, 16, generator=g) * 22.6
weights = torch.softmax(scores, dim=-1)
expected = torch.special.entr(weights.double()).sum(dim=-1).float()
checks.assert_close(attention_entropy(weights), expected, atol=1e-5, rtol=1e-4,
                    name="attention_entropy of saturated rows")

# Nearly one-hot float64 rows: almost all of the entropy is in weights of 1e-7 to 1e-11, which count in full
# (only an exact 0 contributes 0).
rows = [[1.0, 1e-7, 1e-7, 2e-9], [1e-11, 1.0, 3e-8, 0.0], [0.25, 1e-9, 0.75, 1e-10]]
for row in rows:
    row[row.index(max(row))] = 1.0 - (sum(row) - max(row))
weights = torch.tensor(rows, dtype=torch.float64)
expected = torch.tensor([-sum(p * math.log(p) for p in row if p > 0) for row in rows], dtype=torch.float64)
checks.assert_close(attention_entropy(weights), expected, atol=1e-13, rtol=1e-7,
                    name="attention_entropy of nearly one-hot float64 rows (weights down to 1e-11)",
                    hint="Every positive weight contributes -w ln w, however small; only w == 0 counts as 0 "
                         "(no threshold, no epsilon added inside the log).")

print("attention_entropy: hidden tests passed")
### END HIDDEN TESTS

# %% id="5a7c0e12" nbgrader={"grade": true, "grade_id": "test_attention_entropy_hidden_edges", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for attention_entropy run when your notebook is graded.
### BEGIN HIDDEN TESTS
import math

import torch
from utils import checks, probes

g = torch.Generator().manual_seed(5151)

# Masked rows: exact zeros (softmax of -inf) must count as 0, not nan.
scores = torch.randn(5, 8, generator=g, dtype=torch.float64)
mask = torch.ones(5, 8, dtype=torch.bool).tril()          # row i may look at keys 0..i
weights = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
expected = torch.tensor([-sum(p * math.log(p) for p in row if p > 0) for row in weights.tolist()], dtype=torch.float64)
out = attention_entropy(weights)
checks.assert_true(bool(torch.isfinite(out).all()), name="attention_entropy of causally masked rows",
                   problem="the result contains nan or inf.", hint="0 * ln(0) must count as 0.")
checks.assert_close(out, expected, atol=1e-10, rtol=1e-8, name="attention_entropy of causally masked rows")

# One-hot rows (a fully saturated softmax) have entropy exactly 0; uniform rows ln T.
checks.assert_close(attention_entropy(torch.eye(6, dtype=torch.float64)), torch.zeros(6, dtype=torch.float64),
                    atol=1e-12, name="attention_entropy of one-hot rows")
checks.assert_close(attention_entropy(torch.full((4, 1), 1.0)), torch.zeros(4), atol=1e-7,
                    name="attention_entropy with a single key (T = 1)")
# A single key in other dtypes: the result keeps the weights' dtype there too (a shortcut for T = 1 that builds
# torch.zeros(...) without dtype= gives float32).
for shape, dtype in [((4, 1), torch.float64), ((1,), torch.float16)]:
    out = attention_entropy(torch.ones(shape, dtype=dtype))
    checks.assert_tensor(out, name=f"attention_entropy with a single key, shape {shape}, {dtype}", shape=shape[:-1],
                         dtype=dtype, hint="Same dtype as weights for every T: a special case for T = 1 needs "
                                           "dtype=weights.dtype (torch.zeros_like(weights[..., 0]), or no special case).")
    checks.assert_close(out.double(), torch.zeros(shape[:-1], dtype=torch.float64), atol=0,
                        name=f"attention_entropy with a single key, shape {shape}, {dtype}")
checks.assert_close(attention_entropy(torch.full((2, 64), 1 / 64, dtype=torch.float64)),
                    torch.full((2,), math.log(64), dtype=torch.float64), atol=1e-10,
                    name="attention_entropy of uniform rows over 64 keys", hint="ln(64) = 4.159 nats (not 6 bits).")

# Half precision keeps exact zeros as 0 too: a guard such as clamp_min(1e-12) is 0 in float16 (1e-12 underflows).
for dtype in (torch.float16, torch.bfloat16):
    weights = torch.tensor([[1.0, 0.0, 0.0, 0.0], [0.5, 0.5, 0.0, 0.0], [0.25, 0.25, 0.25, 0.25]], dtype=dtype)
    out = attention_entropy(weights)
    checks.assert_tensor(out, name=f"attention_entropy of {dtype} rows with exact zeros", shape=(3,), dtype=dtype)
    checks.assert_close(out.double(), torch.tensor([0.0, math.log(2), math.log(4)], dtype=torch.float64), atol=1e-2,
                        rtol=1e-2, name=f"attention_entropy of {dtype} rows with exact zeros",
                        hint="A weight of exactly 0 must count as 0 in every dtype: test w > 0 (torch.where, torch.xlogy); "
                             "1e-12 is 0 in float16, so clamp_min(1e-12) still takes log(0).")

# The input is left alone.
weights = torch.softmax(torch.randn(3, 5, generator=g), dim=-1)
before = weights.clone()
traced = probes.traced_call(attention_entropy, weights)
checks.assert_close(traced.args_after[0], before, atol=0, rtol=0, name="attention_entropy's input after the call",
                    hint="Do not modify the weights in place (no clamp_, log_, masked_fill_ on the input).")
print("attention_entropy: hidden edge-case tests passed")
### END HIDDEN TESTS

# %% [markdown] id="117960b9"
# ### Saturation at $d_k = 512$
#
# One query, $T = 16$ keys, all entries independent $\mathcal N(0, 1)$, and $d_k = 512$. We draw 2000 such
# rows and look at the largest weight and the entropy of each, with and without the scale. For reference,
# the uniform row has entropy $\ln 16 = 2.77$ nats.
#
# **Predict before you run.** Without the scale, how much weight does the best key get in a typical row,
# and what is the entropy? And with the scale?
#
# <details><summary>Answer</summary>
#
# Without the scale the typical (median) row gives its best key about **0.9997** of the weight and has an
# entropy of about **0.003 nats**: it is one-hot in all but name (as spread out as a uniform distribution
# over $e^{0.003} \approx 1.003$ keys). Two thirds of the rows put more than 0.99 on a single key. With the scale
# the best key gets about 0.22 and the entropy is about 2.4 nats, close to the uniform 2.77: a soft
# mixture. The printout below gives the exact figures for this draw.
# </details>

# %% id="7b12e314"
d_k, T, n_rows = 512, 16, 2000
generator = torch.Generator().manual_seed(512)
q = torch.randn(n_rows, d_k, generator=generator)
keys = torch.randn(n_rows, T, d_k, generator=generator)
raw_scores = torch.einsum("nd,ntd->nt", q, keys)          # n_rows independent rows of T scores
print(f"standard deviation of the raw scores: {raw_scores.std().item():.2f}   (theory sqrt(512) = {math.sqrt(512):.2f})")
print(f"uniform row: entropy ln {T} = {math.log(T):.3f} nats, largest weight 1/{T} = {1 / T:.4f}\n")

rows = {}
for label, scores in [("without scaling", raw_scores), ("with 1/sqrt(d_k)", raw_scores / math.sqrt(d_k))]:
    weights = torch.softmax(scores, dim=-1)
    rows[label] = weights
    largest = weights.max(dim=-1).values
    entropy = attention_entropy(weights)
    print(f"{label:>17}: median largest weight {largest.median().item():.4f}, "
          f"rows with largest weight > 0.99: {(largest > 0.99).float().mean().item():.0%}, "
          f"median entropy {entropy.median().item():.4f} nats (mean {entropy.mean().item():.3f})")

# A typical row: the one with the median entropy without scaling.
entropy = attention_entropy(rows["without scaling"])
typical = entropy.argsort()[n_rows // 2].item()
print("\na typical row, without scaling: ", rows["without scaling"][typical])
print("the same row, with 1/sqrt(d_k):  ", rows["with 1/sqrt(d_k)"][typical])
hard, soft = rows["without scaling"], rows["with 1/sqrt(d_k)"]
hard_top, soft_top = hard.max(dim=-1).values, soft.max(dim=-1).values
claims.claim(f"Without the scale the median row gives its best key {hard_top.median().item():.4f}, "
             f"{(hard_top > 0.99).float().mean().item():.0%} of the rows put over 0.99 on one key, and the median entropy is "
             f"{attention_entropy(hard).median().item():.4f} nats; with it the best key gets {soft_top.median().item():.2f} "
             f"and the entropy is {attention_entropy(soft).median().item():.2f} nats, near ln {T} = {math.log(T):.2f}",
             holds=hard_top.median() > 0.999 and 0.6 < (hard_top > 0.99).float().mean() < 0.75
             and attention_entropy(hard).median() < 0.01 and 0.15 < soft_top.median() < 0.3
             and 2.2 < attention_entropy(soft).median() < 2.6)

# %% [markdown] id="94cf1b84"
# ### The gradient has to pass through the softmax Jacobian
#
# Training changes the scores only through the gradient that flows back through the softmax. With
# $p = \operatorname{softmax}(z)$, $p_i = e^{z_i} / Z$ and $Z = \sum_k e^{z_k}$, the quotient rule gives
#
# $$
# \frac{\partial p_i}{\partial z_j} = \frac{\delta_{ij}\, e^{z_i}}{Z} - \frac{e^{z_i} e^{z_j}}{Z^2}
# = p_i (\delta_{ij} - p_j),
# \qquad\text{i.e.}\qquad
# J = \operatorname{diag}(p) - p\,p^\top ,
# $$
#
# where $p\,p^\top$ is the **outer** product (a $T \times T$ matrix), not the inner product $p^\top p$ (a number).
# Backpropagation multiplies the incoming gradient by it: $\partial L / \partial z = J^\top\, \partial L / \partial p = J\,\partial L/\partial p$
# ($J$ is symmetric). Some properties to check against your code:
#
# * every row and column sums to 0: adding a constant to all scores changes nothing, so no gradient along $(1, \dots, 1)$;
# * for a **one-hot** $p = e_m$: $\operatorname{diag}(e_m) - e_m e_m^\top = 0$. The whole matrix vanishes, not only
#   its off-diagonal part (a common loose description): the winner's own entry $p_m(1 - p_m)$ is 0 as well;
# * for the uniform $p$ over $T$ keys, the Frobenius norm is $\lVert J \rVert_F = \sqrt{T - 1}/T$, which is $0.242$ for $T = 16$.
#
# So a saturated row passes back almost no gradient to **any** of its scores: the keys that lost get no
# signal to become more relevant, and the winner gets none either. That is gradient starvation.
#
# **Worked example.** For $p = (0.2, 0.3, 0.5)$:
# $J = \begin{pmatrix} 0.16 & -0.06 & -0.10 \\ -0.06 & 0.21 & -0.15 \\ -0.10 & -0.15 & 0.25 \end{pmatrix}$
# (diagonal $p_i - p_i^2$, off-diagonal $-p_i p_j$). Each row sums to 0.
#
# ### Exercise 3: `softmax_jacobian` (1 + 2 + 1 points)
#
# *Points: 1 visible, 2 hidden (batches of several shapes and dtypes against autograd), 1 hidden (edge cases: saturated and one-hot rows, exact zeros, a single key, the input left unchanged, the result on the device of p).*
#
# Given probabilities $p$ (already a softmax output), return $\operatorname{diag}(p) - p p^\top$, for a single
# row or for a whole batch of rows. Hint: think about which two axes the outer product should create, so
# that it works for any number of leading dimensions.

# %% id="1a540e92" nbgrader={"grade": false, "grade_id": "softmax_jacobian", "locked": false, "schema_version": 3, "solution": true, "task": false}
import torch


def softmax_jacobian(p):
    """The Jacobian of the softmax, written in terms of its output.

    Args:
        p: floating tensor of shape (..., T), T >= 1, contiguous in memory or not (a transposed batch too): each
            slice along the last dimension is a softmax output p = softmax(z) (entries >= 0 summing to 1; exact
            zeros and one-hot rows allowed).
    Returns:
        A new tensor of shape (..., T, T), same dtype as p and on the same device as p, with
        J[..., i, j] = d p_i / d z_j = p_i * (delta_ij - p_j), i.e. diag(p) - outer(p, p) for every row.
        J is symmetric, its rows sum to 0, and it is exactly 0 for a one-hot row.
        Leading dimensions are batch dimensions (any number, including none). The input is not modified.
    """
    ### BEGIN SOLUTION
    outer = p.unsqueeze(-1) * p.unsqueeze(-2)          # (..., T, 1) * (..., 1, T) -> (..., T, T)
    return torch.diag_embed(p) - outer                 # diag_embed puts each row on a diagonal
    ### END SOLUTION


# %% id="c0be595a" nbgrader={"grade": true, "grade_id": "test_softmax_jacobian", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
import torch
from utils import checks, probes

out = softmax_jacobian(torch.tensor([0.5, 0.5]))
checks.assert_tensor(out, name="softmax_jacobian([0.5, 0.5])", shape=(2, 2), dtype="floating",
                     hint="A row of T probabilities gives a T x T matrix.")
checks.assert_close(out, torch.tensor([[0.25, -0.25], [-0.25, 0.25]]), name="softmax_jacobian([0.5, 0.5])",
                    hint="J = diag(p) - p p^T: diagonal p_i - p_i**2, off-diagonal -p_i * p_j.")

expected = torch.tensor([[0.16, -0.06, -0.10], [-0.06, 0.21, -0.15], [-0.10, -0.15, 0.25]])
checks.assert_close(softmax_jacobian(torch.tensor([0.2, 0.3, 0.5])), expected, name="softmax_jacobian([0.2, 0.3, 0.5])",
                    hint="p p^T is the OUTER product (a T x T matrix), not the inner product p^T p (a number).")

checks.assert_close(softmax_jacobian(torch.tensor([1.0, 0.0, 0.0])), torch.zeros(3, 3),
                    name="softmax_jacobian of a one-hot row",
                    hint="For p = e_m, diag(p) and p p^T are the same matrix: the Jacobian is exactly 0. "
                         "Did you forget the diag(p) term?")

batch = torch.tensor([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
out = softmax_jacobian(batch)
checks.assert_tensor(out, name="softmax_jacobian on a batch of shape (2, 3)", shape=(2, 3, 3), dtype="floating",
                     hint="Leading dimensions are batch dimensions: each row gets its own T x T matrix.")
checks.assert_close(out[1], expected, name="softmax_jacobian on a batch: the second row's matrix",
                    hint="torch.diag does not work on batches; build the diagonal and the outer product per row.")

# The caller's row stays as it was (values and shape).
p = torch.tensor([0.2, 0.3, 0.5])
call = probes.traced_call(softmax_jacobian, p.clone())
checks.assert_close(call.args_after[0], p, atol=0, rtol=0, name="softmax_jacobian's input after the call",
                    hint="p.unsqueeze(-1) returns a new view; p.unsqueeze_(-1) reshapes the caller's tensor.")

out = softmax_jacobian(torch.tensor([0.2, 0.3, 0.5], dtype=torch.float64))
checks.assert_tensor(out, name="softmax_jacobian of a float64 row", shape=(3, 3), dtype=torch.float64,
                     hint="Keep p's dtype: build the diagonal with torch.diag_embed(p) (or zeros with dtype=p.dtype).")
print("softmax_jacobian: visible tests passed")

# %% id="a21d3a64" nbgrader={"grade": true, "grade_id": "test_softmax_jacobian_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for softmax_jacobian run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks

g = torch.Generator().manual_seed(9090)


def autograd_jacobian(z):
    # Independent reference: differentiate torch.softmax itself, one row at a time.
    rows = z.reshape(-1, z.shape[-1])
    blocks = [torch.autograd.functional.jacobian(lambda row: torch.softmax(row, dim=-1), row) for row in rows]
    return torch.stack(blocks).reshape(*z.shape, z.shape[-1])


# Leading dimensions of size 1 are batch dimensions like any other: (1, 5) gives (1, 5, 5), not a squeezed (5, 5).
for shape, dtype, spread in [((5,), torch.float64, 1.0), ((7,), torch.float32, 3.0), ((3, 4), torch.float64, 2.0),
                             ((2, 3, 6), torch.float64, 1.5), ((4, 4), torch.float32, 1.0), ((1, 5), torch.float64, 1.0),
                             ((1, 3, 4), torch.float32, 2.0)]:
    z = torch.randn(*shape, generator=g, dtype=dtype) * spread
    p = torch.softmax(z, dim=-1)
    out = softmax_jacobian(p)
    name = f"softmax_jacobian on shape {shape}, {dtype}"
    checks.assert_tensor(out, name=name, shape=(*shape, shape[-1]), dtype=dtype,
                         hint="The result has shape p.shape + (T,) and p's dtype: one T x T matrix per row.")
    tolerance = 1e-10 if dtype == torch.float64 else 1e-6
    checks.assert_close(out, autograd_jacobian(z), atol=tolerance, rtol=1e-5, name=f"{name} vs autograd",
                        hint="J[..., i, j] = p_i * (delta_ij - p_j): diag(p) minus the outer product of p with itself.")

# Half precision keeps its dtype too: a float32 identity or zeros (torch.eye(T), torch.zeros(T, T)) would promote the
# result to float32 (float64 input hides that: float64 wins the promotion). Values at half precision's resolution.
for shape, dtype in [((3, 6), torch.float16), ((2, 5), torch.bfloat16)]:
    z = torch.randn(*shape, generator=g, dtype=torch.float64)
    out = softmax_jacobian(torch.softmax(z, dim=-1).to(dtype))
    name = f"softmax_jacobian on shape {shape}, {dtype}"
    checks.assert_tensor(out, name=name, shape=(*shape, shape[-1]), dtype=dtype,
                         hint="Keep p's dtype: build the identity or the diagonal with dtype=p.dtype (torch.diag_embed(p)).")
    checks.assert_close(out.double(), autograd_jacobian(z), atol=1e-2, rtol=0, name=f"{name} vs autograd (float64)")

print("softmax_jacobian: hidden tests passed")
### END HIDDEN TESTS

# %% id="5a7c0e13" nbgrader={"grade": true, "grade_id": "test_softmax_jacobian_hidden_edges", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for softmax_jacobian run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks, probes

g = torch.Generator().manual_seed(9091)



def autograd_jacobian(z):
    # Independent reference: differentiate torch.softmax itself, one row at a time.
    rows = z.reshape(-1, z.shape[-1])
    blocks = [torch.autograd.functional.jacobian(lambda row: torch.softmax(row, dim=-1), row) for row in rows]
    return torch.stack(blocks).reshape(*z.shape, z.shape[-1])


# A saturated batch: rows that are (nearly) one-hot have a (nearly) zero Jacobian.
z = torch.randn(6, 16, generator=g, dtype=torch.float64) * 22.6
p = torch.softmax(z, dim=-1)
checks.assert_close(softmax_jacobian(p), autograd_jacobian(z), atol=1e-12, rtol=1e-6,
                    name="softmax_jacobian of saturated rows vs autograd")

# Rows with masked (exactly zero) entries; symmetry and zero row sums.
p = torch.tensor([[0.0, 0.25, 0.75, 0.0], [0.0, 0.0, 0.0, 1.0]], dtype=torch.float64)
expected = torch.tensor([[[0.0, 0.0, 0.0, 0.0], [0.0, 0.1875, -0.1875, 0.0], [0.0, -0.1875, 0.1875, 0.0], [0.0, 0.0, 0.0, 0.0]],
                         [[0.0] * 4, [0.0] * 4, [0.0] * 4, [0.0] * 4]], dtype=torch.float64)
checks.assert_close(softmax_jacobian(p), expected, atol=1e-12, name="softmax_jacobian of rows with exact zeros")
# A batch that is not contiguous in memory (a transpose): the same Jacobians as its contiguous copy.
p = torch.softmax(torch.randn(7, 3, 2, generator=g, dtype=torch.float64), dim=0).permute(2, 1, 0)   # (2, 3, 7)
checks.assert_close(softmax_jacobian(p), torch.diag_embed(p) - p[..., :, None] * p[..., None, :], atol=1e-12,
                    name="softmax_jacobian of a transposed batch (not contiguous in memory)",
                    hint="Broadcast (unsqueeze, diag_embed) or use reshape: .view fails on a tensor that is not contiguous.")
# A single key (T = 1): p = (1,), J = 0.
checks.assert_close(softmax_jacobian(torch.ones(3, 1, dtype=torch.float64)), torch.zeros(3, 1, 1, dtype=torch.float64),
                    atol=0, name="softmax_jacobian with a single key (T = 1)")
# ... in p's dtype (assert_close compares values only): a shortcut for T = 1 built without dtype= gives float32.
for shape, dtype in [((3, 1), torch.float64), ((1,), torch.float16)]:
    checks.assert_tensor(softmax_jacobian(torch.ones(shape, dtype=dtype)), shape=(*shape, 1), dtype=dtype,
                         name=f"softmax_jacobian with a single key, shape {shape}, {dtype}",
                         hint="Same dtype as p for every T: a special case for T = 1 needs dtype=p.dtype "
                              "(torch.zeros_like(p).unsqueeze(-1), or no special case).")
# One-hot rows: exactly 0, not merely small (diag(e_m) and e_m e_m^T are the same matrix).
for dtype in (torch.float64, torch.float32):
    checks.assert_close(softmax_jacobian(torch.eye(5, dtype=dtype)), torch.zeros(5, 5, 5, dtype=dtype), atol=0, rtol=0,
                        name=f"softmax_jacobian of one-hot rows, {dtype}",
                        hint="For p = e_m every entry p_i (delta_ij - p_j) is exactly 0. Use p as it is: clamping it "
                             "(p.clamp(min=1e-12)) leaves entries of about 1e-12.")

# The input is left alone.
p = torch.softmax(torch.randn(2, 5, generator=g), dim=-1)
before = p.clone()
traced = probes.traced_call(softmax_jacobian, p)
checks.assert_close(traced.args_after[0], before, atol=0, rtol=0, name="softmax_jacobian's input after the call",
                    hint="Do not modify p in place (no mul_, sub_ or unsqueeze_ on the input).")

# On the device of p: p on PyTorch's meta device (shapes, no values) stands in for p on a GPU. A helper tensor
# made without device= (torch.eye(T), torch.zeros(...)) is on the CPU and cannot meet p there.
seen = probes.make("utils.meta_device.result_device_on_meta", softmax_jacobian, torch.tensor([[0.2, 0.3, 0.5], [1.0, 0.0, 0.0]]))
checks.assert_kept_on_meta(seen, name="the device of softmax_jacobian(p) for p on another device than the CPU (the meta device)",
                           hint="Build every helper tensor on p.device (torch.eye(T, dtype=p.dtype, device=p.device)), or use "
                                "torch.diag_embed(p): with p on a GPU, a tensor made without device= is on the CPU.")
# The same with p's values kept (labelled cuda:0, utils.fake_cuda): a Jacobian preallocated without device= and
# filled from p (a copy, which meta tensors cannot give) shows as a CPU result or as devices mixed.
seen = probes.make("utils.fake_cuda.result_device_on_fake_cuda", softmax_jacobian, torch.tensor([[0.2, 0.3, 0.5], [1.0, 0.0, 0.0]]))
checks.assert_kept_on_fake_cuda(seen, name="the device of softmax_jacobian(p) for p on a GPU (emulated, the values kept)",
                                hint="Make every tensor on p.device (torch.zeros(..., dtype=p.dtype, device=p.device)), or use "
                                     "torch.diag_embed(p).")
print("softmax_jacobian: hidden edge-case tests passed")
### END HIDDEN TESTS

# %% [markdown] id="43d818b0"
# ### Entropy and gradient size against $d_k$
#
# Now the same measurement for every head size from 1 to 1024: for each $d_k$, 300 rows of $T = 16$ random
# keys, the mean entropy of the attention row and the median Frobenius norm of its softmax Jacobian
# (the median, because a few unlucky rows with two near-equal winners would dominate a mean).
#
# **Predict before you run.** With the scale, how does the entropy change from $d_k = 4$ to $d_k = 1024$? And
# without it, roughly how fast does the Jacobian norm fall as $d_k$ grows?
#
# <details><summary>Answer</summary>
#
# With the scale it does not change: the scaled scores have unit variance at every $d_k$, so every head size
# sees the same distribution of rows. Without it the scores' spread grows like $\sqrt{d_k}$, the gap between the
# best key and the rest grows with it, and the Jacobian's entries $p_i(\delta_{ij} - p_j)$ vanish like the
# runner-up weights, roughly like $e^{-\text{gap}}$: faster than any power of $d_k$, orders of magnitude by
# $d_k = 512$.
# </details>

# %% id="f23e0052"
T, n_rows = 16, 300
generator = torch.Generator().manual_seed(16)
curves = {"without scaling": ([], []), "with 1/sqrt(d_k)": ([], [])}
for d in dims:
    q = torch.randn(n_rows, d, generator=generator)
    keys = torch.randn(n_rows, T, d, generator=generator)
    scores = torch.einsum("nd,ntd->nt", q, keys)
    for label, divisor in [("without scaling", 1.0), ("with 1/sqrt(d_k)", math.sqrt(d))]:
        weights = torch.softmax(scores / divisor, dim=-1)
        entropies, norms = curves[label]
        entropies.append(attention_entropy(weights).mean().item())
        norms.append(torch.linalg.matrix_norm(softmax_jacobian(weights)).median().item())

fig, (ax_h, ax_j) = plt.subplots(1, 2, figsize=(11, 4))
for label, (entropies, norms) in curves.items():
    ax_h.plot(dims, entropies, "o-", label=label)
    ax_j.plot(dims, norms, "o-", label=label)
ax_h.axhline(math.log(T), color="gray", linestyle="--")
ax_h.annotate(f"uniform: ln {T}", (1, math.log(T)), textcoords="offset points", xytext=(4, -12), color="gray")
ax_j.axhline(math.sqrt(T - 1) / T, color="gray", linestyle="--")
ax_j.annotate("uniform row", (dims[-1], math.sqrt(T - 1) / T), textcoords="offset points", xytext=(-70, -14), color="gray")
for ax in (ax_h, ax_j):
    ax.set_xscale("log", base=2)
    ax.set_xlabel("$d_k$")
    ax.legend(loc="lower left")
ax_j.set_yscale("log")
ax_h.set_ylabel("mean entropy of an attention row (nats)")
ax_j.set_ylabel(r"median $\|\mathrm{diag}(p) - pp^\top\|_F$")
ax_h.set_title(f"How spread out attention is ({T} keys)")
ax_j.set_title("How much gradient the softmax lets through")
plt.show()

for label, (entropies, norms) in curves.items():
    print(f"{label:>17}:  d_k = 64: entropy {entropies[6]:.3f}, Jacobian norm {norms[6]:.2e}   "
          f"d_k = 512: entropy {entropies[9]:.3f}, Jacobian norm {norms[9]:.2e}")
ratio = curves["without scaling"][1][9] / curves["with 1/sqrt(d_k)"][1][9]
print(f"at d_k = 512 the typical unscaled row's Jacobian norm is {ratio:.1e} times the scaled row's")
flat_entropy = max(curves["with 1/sqrt(d_k)"][0]) - min(curves["with 1/sqrt(d_k)"][0])
flat_norm = max(curves["with 1/sqrt(d_k)"][1]) / min(curves["with 1/sqrt(d_k)"][1])
claims.claim(f"With the scale the mean entropy varies by {flat_entropy:.2f} nats and the Jacobian norm by a factor "
             f"{flat_norm:.2f} over d_k = 1 ... {dims[-1]}; without it, at d_k = 512, the norm is {ratio:.1e} times the scaled row's",
             holds=flat_entropy < 0.2 and flat_norm < 1.3 and ratio < 1e-3)

# %% [markdown] id="bf3dc0d5"
# With the scale both curves are flat: a head of size 1024 starts as soft as a head of size 4. Without it
# the entropy falls towards 0 and the Jacobian norm falls by orders of magnitude: at $d_k = 512$ the typical
# row's Jacobian norm is under one thousandth of a soft row's (the ratio is printed above).
#
# ## 3. Temperature: the same knob
#
# Notebook 01 sampled the next token from $\operatorname{softmax}(z / T)$ with a **temperature** $T$: $T < 1$
# sharpens the distribution, $T \to 0$ turns it into the arg max (greedy decoding), $T > 1$ flattens it towards
# uniform. Attention's scale is exactly this knob, turned to a particular value:
#
# $$
# \operatorname{softmax}\!\left(\frac{q \cdot k}{\sqrt{d_k}}\right) = \text{softmax of the raw scores at temperature } T = \sqrt{d_k}.
# $$
#
# Read the other way round, **dropping the scale is running attention at temperature $1/\sqrt{d_k}$** on
# well-scaled (unit-variance) scores: at $d_k = 512$ that is $T \approx 0.044$, deep in near-greedy territory,
# which is what we measured. Some models make the knob explicit: they normalise $q$ and $k$ (so scores are
# cosine similarities, bounded by 1) and then *learn* the temperature, because for them $1/\sqrt{d_k}$ would
# make attention too flat.
#
# **Predict before you run.** Take the typical row from above with the scale applied, and sharpen it with
# temperatures $2, 1, 0.25$ and $1/\sqrt{512}$. Which of these equals the unscaled row?
#
# <details><summary>Answer</summary>
#
# $T = 1/\sqrt{512}$: dividing the scaled scores by $1/\sqrt{512}$ multiplies them back by $\sqrt{512}$, giving
# the raw scores. Its entropy is the unscaled row's; $T = 2$ flattens the row further.
# </details>

# %% id="8befadfd"
scaled_row = raw_scores[typical] / math.sqrt(d_k)
for temperature in [2.0, 1.0, 0.25, 1 / math.sqrt(d_k)]:
    weights = torch.softmax(scaled_row / temperature, dim=-1)
    print(f"T = {temperature:6.4f}: largest weight {weights.max().item():.4f}, entropy {attention_entropy(weights).item():.4f} nats")
unscaled_row = torch.softmax(raw_scores[typical], dim=-1)
print(f"unscaled row     : largest weight {unscaled_row.max().item():.4f}, entropy {attention_entropy(unscaled_row).item():.4f} nats")
gap = (torch.softmax(scaled_row * math.sqrt(d_k), dim=-1) - unscaled_row).abs().max().item()
claims.claim(f"At T = 1/sqrt({d_k}) the row is the unscaled row (largest difference {gap:.0e})", holds=gap < 1e-5)


# %% [markdown] id="0b3cc5ce"
# ## 4. Why it matters for learning
#
# Saturation would be harmless if training could get out of it. It mostly cannot, because the way out goes
# through the vanishing Jacobian. Here is a task small enough to train in a second or two on a CPU.
#
# * **Inputs.** A sequence of $T = 16$ tokens, each a random vector $x_t \in \mathbb{R}^{16}$ with
#   $\mathcal N(0, 1)$ entries. The last token is the query.
# * **Target.** A fixed random "teacher" decides how much the query should attend to each token,
#   $a^\star = \operatorname{softmax}_t(x_T^\top A\, x_t)$, a soft pattern (its entropy, printed after training, is well below the $\ln 16 = 2.77$ of uniform attention), and the
#   target is $y = \sum_t a^\star_t x_t$.
# * **Model.** One attention head with $d_k = 256$: $q = x_T W_Q$, $k_t = x_t W_K$ with
#   $W_Q, W_K \in \mathbb{R}^{16 \times 256}$; the values are the $x_t$ themselves, and the output is
#   $\hat y = \sum_t a_t x_t$ with $a = \operatorname{softmax}_t(q \cdot k_t / c)$. The loss is the mean squared
#   error $\lVert \hat y - y \rVert^2 / 16$, averaged over a batch of 32 fresh sequences per step; Adam, 150 steps.
# * **Initialisation.** Entries of $W_Q, W_K$ are $\mathcal N(0, 1/16)$, so the entries of $q$ and $k$ have
#   variance 1: exactly the assumption of section 1 (a variance-preserving, "LeCun-style" initialisation).
#
# We train with $c = \sqrt{d_k} = 16$ and with $c = 1$. Note what is *not* different: the two models can
# represent exactly the same functions (the unscaled one could absorb $1/\sqrt{d_k}$ into $W_Q$). Only
# the starting point and the training dynamics differ. A third run makes this precise: the unscaled model
# with the initial weights **and** the learning rate divided by $d_k^{1/4} = 4$. Then $q \cdot k$ starts
# $\sqrt{d_k}$ times smaller, and since Adam's steps do not depend on the size of the gradient, every step
# is the scaled run's step, shrunk by the same factor. Its curves should lie exactly on the scaled run's.
#
# Besides the loss we record, at every step, the mean largest attention weight (saturation) and the median
# over the rows of the norm of $\partial L / \partial s$, the gradient that reaches the scores of one row after
# passing through the softmax Jacobian (starvation). The median is the typical row; a mean would be dominated
# by the few rows where two keys happen to tie.
#
# **Predict before you run.** Which of the three runs learns the teacher's pattern in 150 steps, and how does
# the third run's loss curve compare with the first's?
#
# <details><summary>Answer</summary>
#
# The scaled run learns (its loss falls by orders of magnitude); the unscaled run starts saturated and barely
# moves. The third run's curve lies on top of the first's, to rounding: it is the same optimisation in other
# units, since its scores are the scaled run's scores at every step.
# </details>

# %% id="694f6749"
def train_attention(divisor, init_std, lr, d_model=16, d_k=256, T=16, batch=32, steps=150, seed=0,
                    optimizer_class=torch.optim.Adam, pytorch_default_init=False):
    """Train W_Q, W_K of one attention head to reproduce a teacher's attention; return the per-step records.
    pytorch_default_init: weights uniform on +-1/sqrt(fan-in), as nn.Linear draws them (init_std is then unused)."""
    generator = torch.Generator().manual_seed(seed)
    teacher = torch.randn(d_model, d_model, generator=generator) * 0.5 / math.sqrt(d_model)

    def initial_weights():
        if pytorch_default_init:
            return ((torch.rand(d_model, d_k, generator=generator) * 2 - 1) / math.sqrt(d_model)).requires_grad_()
        return (torch.randn(d_model, d_k, generator=generator) * init_std).requires_grad_()

    W_Q, W_K = initial_weights(), initial_weights()
    optimizer = optimizer_class([W_Q, W_K], lr=lr)
    record = {"loss": [], "largest weight": [], "gradient at the scores": [], "teacher entropy": []}
    for _ in range(steps):
        x = torch.randn(batch, T, d_model, generator=generator)
        query = x[:, -1]                                             # (batch, d_model)
        with torch.no_grad():
            target_weights = torch.softmax(torch.einsum("bd,de,bte->bt", query, teacher, x), dim=-1)
            target = torch.einsum("bt,btd->bd", target_weights, x)
            record["teacher entropy"].append(attention_entropy(target_weights))
        scores = torch.einsum("bk,btk->bt", query @ W_Q, x @ W_K) / divisor
        scores.retain_grad()
        weights = torch.softmax(scores, dim=-1)
        loss = (torch.einsum("bt,btd->bd", weights, x) - target).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        record["loss"].append(loss.item())
        record["largest weight"].append(weights.max(dim=-1).values.mean().item())
        record["gradient at the scores"].append(scores.grad.norm(dim=-1).median().item() * batch)  # typical row
    return record


d_k, d_model, lr = 256, 16, 0.01
threads = torch.get_num_threads()
torch.set_num_threads(1)          # tiny matrices: one thread is faster than two that keep synchronising
runs = {
    "with 1/sqrt(d_k)": train_attention(math.sqrt(d_k), 1 / math.sqrt(d_model), lr),
    "without scaling": train_attention(1.0, 1 / math.sqrt(d_model), lr),
    "without scaling, init and lr / d_k^(1/4)": train_attention(1.0, 1 / math.sqrt(d_model) / d_k ** 0.25, lr / d_k ** 0.25),
}
torch.set_num_threads(threads)

fig, axes = plt.subplots(1, 3, figsize=(15, 4.6), layout="constrained")
styles = {"with 1/sqrt(d_k)": dict(linewidth=3, alpha=0.5), "without scaling": dict(linewidth=1.5),
          "without scaling, init and lr / d_k^(1/4)": dict(linewidth=1, linestyle="--", color="black")}
for ax, key in zip(axes, ["loss", "largest weight", "gradient at the scores"]):
    for label, record in runs.items():
        ax.plot(record[key], label=label, **styles[label])
    ax.set_xlabel("Adam step")
    ax.set_title(key)
axes[0].set_yscale("log")
axes[0].set_ylabel("mean squared error")
axes[1].set_ylabel("mean largest attention weight")
axes[2].set_ylabel(r"median over rows of $\|\partial L / \partial s\|$")
axes[2].set_yscale("log")
fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncol=3)
fig.suptitle(f"One attention head, d_k = {d_k}: trained with and without the 1/sqrt(d_k) scale")
plt.show()

for label, record in runs.items():
    print(f"{label:>41}: loss {record['loss'][0]:.3f} -> {record['loss'][-1]:.4f}, "
          f"largest weight at start {record['largest weight'][0]:.3f}, "
          f"gradient at the scores at start {record['gradient at the scores'][0]:.2e}")
start = {label: record["gradient at the scores"][0] for label, record in runs.items()}
print(f"at the start the typical row's gradient at the scores is {start['with 1/sqrt(d_k)'] / start['without scaling']:.0f} "
      f"times smaller without the scale")
same = max(abs(a - b) for a, b in zip(runs["with 1/sqrt(d_k)"]["loss"], runs["without scaling, init and lr / d_k^(1/4)"]["loss"]))
print(f"largest difference between the scaled run and the rescaled unscaled run: {same:.1e}")
teacher_entropy = torch.cat(runs["with 1/sqrt(d_k)"]["teacher entropy"])
print(f"the teacher's attention rows: entropy mean {teacher_entropy.mean().item():.2f} nats, "
      f"median {teacher_entropy.median().item():.2f} (uniform over {16} keys: ln 16 = {math.log(16):.2f})")
scaled_run, unscaled_run = runs["with 1/sqrt(d_k)"], runs["without scaling"]
claims.claim(f"With the scale the loss falls {scaled_run['loss'][0] / scaled_run['loss'][-1]:.0f}-fold in {len(scaled_run['loss'])} "
             f"steps; without it the rows start with a largest weight of {unscaled_run['largest weight'][0]:.2f} and the loss "
             f"falls {unscaled_run['loss'][0] / unscaled_run['loss'][-1]:.2f}-fold; the rescaled unscaled run matches the "
             f"scaled one to {same:.0e}", holds=scaled_run["loss"][0] / scaled_run["loss"][-1] > 30
             and unscaled_run["largest weight"][0] > 0.9 and unscaled_run["loss"][0] / unscaled_run["loss"][-1] < 2
             and same < 1e-4 and teacher_entropy.median().item() < math.log(16) - 0.5)

# %% [markdown] id="2f9cc362"
# What the three panels show:
#
# * **With the scale** the rows start soft (the largest weight at the start is printed above), the gradient
#   reaches the scores, and the loss falls by orders of magnitude within 150 steps (start and end printed above).
# * **Without the scale** the rows start saturated (a largest weight near 1, printed above): the loss starts higher, because
#   each output copies one arbitrary token, and it barely moves. In the typical row the gradient reaching the
#   scores is already smaller at the start, by the factor printed above, and then collapses by further orders of
#   magnitude as training pushes rows deeper into saturation: the other keys get no signal that they should
#   matter. (The few rows with a near tie still get gradient, which is why the loss wobbles rather than
#   staying perfectly flat.)
# * **The rescaled unscaled run** coincides with the scaled run: the $1/\sqrt{d_k}$ is not magic, it is a
#   reparametrisation. What it buys is that the *standard* initialisation and learning rate start every head,
#   of any size, in the soft regime.
#
# Being honest about what this depends on:
#
# * **The initialisation.** With smaller initial weights the unscaled scores are smaller and less saturated.
#   PyTorch's default `nn.Linear` initialisation, for instance, gives entries of $q$ and $k$ a variance of
#   about $1/3$ instead of 1 (uniform weights on $\pm 1/\sqrt{\text{fan-in}}$), so unscaled scores at
#   $d_k = 256$ have variance $256/9 \approx 28$ (standard deviation $\approx 5.3$) instead of 256 (standard
#   deviation 16). With that initialisation (the cell below), the unscaled model does start to learn, but after 150
#   steps its loss is still hundreds of times the scaled model's. The larger $d_k$, the worse.
# * **The optimiser.** Adam divides each step by a running size of the gradient, which hides part of the
#   starvation. With plain SGD, the same initialisation as above and a learning rate at which the scaled model
#   learns (1.0), the unscaled model does not learn at all (the cell below, seed 0).
# * **The task.** Here the teacher wants a soft pattern. A task that needs hard, one-hot attention suffers less
#   from starting sharp, though it still has to find the *right* key, which again needs gradient.

# %% id="a7c5e2d1"
threads = torch.get_num_threads()
torch.set_num_threads(1)
default_init = {label: train_attention(divisor, None, lr, pytorch_default_init=True)["loss"]
                for label, divisor in [("with 1/sqrt(d_k)", math.sqrt(d_k)), ("without scaling", 1.0)]}
with_sgd = {label: train_attention(divisor, 1 / math.sqrt(d_model), 1.0, optimizer_class=torch.optim.SGD)["loss"]
            for label, divisor in [("with 1/sqrt(d_k)", math.sqrt(d_k)), ("without scaling", 1.0)]}
torch.set_num_threads(threads)
for name, losses in [("PyTorch's default init, Adam", default_init), ("section 1's init, SGD, lr 1.0", with_sgd)]:
    print(f"{name:>30}: " + ";  ".join(f"{label} loss {l[0]:.3f} -> {l[-1]:.4f}" for label, l in losses.items()))
claims.claim(f"With PyTorch's default initialisation the unscaled loss ends {default_init['without scaling'][-1]:.2f}, "
             f"{default_init['without scaling'][-1] / default_init['with 1/sqrt(d_k)'][-1]:.0f} times the scaled model's; "
             f"with SGD the scaled model reaches {with_sgd['with 1/sqrt(d_k)'][-1]:.4f} while the unscaled one ends at "
             f"{with_sgd['without scaling'][-1] / with_sgd['without scaling'][0]:.0%} of its first loss",
             holds=default_init["without scaling"][-1] / default_init["with 1/sqrt(d_k)"][-1] > 100
             and default_init["without scaling"][-1] < default_init["without scaling"][0]
             and with_sgd["with 1/sqrt(d_k)"][-1] < 0.01 and with_sgd["without scaling"][-1] > 0.9 * with_sgd["without scaling"][0])

# %% [markdown] id="eaccc173"
# ## Summary
#
# * For independent zero-mean entries of variance $\sigma^2$, $\operatorname{Var}(q \cdot k) = d_k \sigma^4$: the
#   scores' standard deviation grows like $\sqrt{d_k}$ (8 at $d_k = 64$, 22.6 at $d_k = 512$). Dividing by
#   $\sqrt{d_k}$, not $d_k$, brings the variance back to $\sigma^4$ for every head size. The head dimension
#   $d_k$ is what counts, not $d_\text{model}$.
# * A Monte Carlo estimate of a variance has relative standard error $\sqrt{(2 + 6/d_k)/n}$ here: a statistical
#   check with a fixed seed and a tolerance of several standard errors is reliable.
# * Large scores saturate the softmax: at $d_k = 512$ a typical unscaled row puts 0.9997 on one key and has
#   entropy 0.003 nats (uniform: 2.77). The softmax Jacobian $\operatorname{diag}(p) - pp^\top$ is then nearly 0 (exactly 0 for a
#   one-hot row), so almost no gradient reaches the scores.
# * $1/\sqrt{d_k}$ is a softmax temperature; leaving it out is attention at temperature $1/\sqrt{d_k}$, nearly greedy.
# * In training, the unscaled head starts saturated and barely learns; the scaled head learns at once. The scale is
#   equivalent to rescaling the initialisation and the learning rate; the effect depends on the initialisation
#   scale and the optimiser, and grows with $d_k$.
