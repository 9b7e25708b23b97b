# ---
# jupyter:
#   course:
#     cpu_budget_seconds: 150
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

# %% [markdown] id="nb13-000"
# # 13 · Generating text: search, sampling, and speculative decoding
#
# A language model gives a distribution over the next token. Text comes from choosing tokens one at a time and
# feeding each choice back. How to choose is a separate decision from the model, and it changes what comes out as
# much as the model does. The course has the parts already: temperature, top-k and top-p sampling (notebook 08), a
# KV cache and cached greedy generation (notebook 10), batched greedy decoding for an encoder–decoder (notebook 12).
# This notebook is the chapter they belong to.
#
# * **Search** looks for the most likely continuation. Greedy decoding takes the best token at each step; **beam
#   search** keeps the best few partial continuations and can find a sequence that greedy misses because its first
#   token looked worse.
# * **Sampling** draws from the distribution, reshaped by temperature or truncated by top-k and top-p.
# * Between them sits a trade-off between **quality** (how likely the model finds the text) and **diversity** (how
#   different the outputs are, and how little a text repeats itself). You measure both.
# * **Speculative decoding** makes sampling faster without changing its distribution: a small draft model proposes
#   several tokens, the large model checks them all in one forward pass, and an accept/reject rule makes the result
#   an exact sample from the large model.
#
# You will build `beam_search` (with the KV-cache interface of notebook 10), `speculative_sample`, a repetition
# control `no_repeat_ngram` and the diversity measure `distinct_n`; then train a small GPT on the course's offline
# corpus and measure its decoders, and a digit reverser to tell the search's failures from the model's.
#
# **Time.** Everything runs on the CPU, whatever the device: the whole notebook takes 40 to 50 CPU seconds on a
# 2-core laptop (one thread), of which the cell that trains the two small GPTs takes about 25 and the digit
# reverser's about 10. On a GPU: untimed (nothing here moves to it).
#
# Each experiment ends with a **claim**: a sentence printed by the cell that measured it, with its numbers and a ✓
# when it holds on your run (a ✗ and a note when it does not: the prose around it assumes it).

# %% id="nb13-001" jupyter={"source_hidden": true} nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
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

# %% id="nb13-002"
import math
import time

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F

from utils import claims, corpus
from utils.generation_models import CachedTableLM, LogitsOnly, RecomputedCache, TableLM, draw_counts
from utils.tiny_gpt import TinyGPT

torch.set_printoptions(precision=4, sci_mode=False)

# %% [markdown] id="nb13-003"
# ## 1. Beam search
#
# A model assigns a sequence $y_1 \dots y_L$ after a prompt the log-probability
#
# $$\log p(y_{1:L}) = \sum_{t=1}^{L} \log p(y_t \mid \text{prompt}, y_{<t}).$$
#
# Greedy decoding maximises each term in turn, which is not the same as maximising the sum: a token that is slightly
# less likely now can lead to much more likely tokens after it. Finding the best sequence exactly would mean scoring
# $V^L$ of them. **Beam search** keeps the $k$ best partial sequences (the *beam*, $k$ its *width*): at each step it
# extends every one of them by every token, scores the $kV$ candidates by their summed log-probabilities, and keeps
# the best $k$. Width 1 is greedy decoding.
#
# Three details decide what a beam search returns.
#
# * **Finished hypotheses.** A candidate that ends with the end-of-sequence token (EOS) is complete: it is set aside
#   and not extended. The rule here (one of several in use): the beam holds $k$ hypotheses in all,
#   finished or not, so each finished one leaves one place fewer for the unfinished; the search stops when none is
#   left unfinished or after `max_new_tokens` steps. The unfinished ones at that point join the finished ones.
# * **Length normalisation.** Every log-probability is negative, so a raw sum prefers short hypotheses: one that stops
#   early is not penalised for the tokens it did not write. GNMT (Wu et al., 2016) divides the sum by
#   $$\mathrm{lp}(L) = \left(\frac{5 + L}{6}\right)^{\alpha},$$
#   where $L$ counts the generated tokens, EOS included; $\alpha = 0$ is the raw sum, and GNMT used $\alpha$ between
#   0.6 and 0.7. The final hypothesis is the one with the highest normalised score. During the search it changes
#   nothing: the unfinished hypotheses compared at one step all have the same length.
# * **Ties.** Candidates with equal sums are ordered by their beam's rank, then by token id (the lower first):
#   sort the flattened (beam, token) scores with a *stable* descending sort, keeping the beams in rank order. At the
#   end, of equal normalised scores, the hypothesis that finished first wins, and the unfinished ones come after every
#   finished one, in beam order.
#
# **The cache.** Every step feeds one token per unfinished hypothesis, as in notebook 10: `model(idx, caches)` takes
# the new tokens `idx` (B, t) and a list of per-layer caches (`[None] * model.n_layer` before the first call), and
# returns the logits of the new positions and the new caches. Each layer's cache is a dict of tensors whose first
# dimension is the batch: here the batch is the beam. When the hypotheses kept at a step come from parents 2, 0, 0,
# the cache must follow them: row $i$ of the new cache is row `parents[i]` of the old one (`t.index_select(0,
# parents)` for every tensor of every layer), or hypothesis $i$ is continued from another hypothesis's past. The
# first step takes its candidates from the prompt's one row, so the cache grows from one row to up to $k$ rows there.
#
# The test models are in `utils.generation_models`: `CachedTableLM` (a bigram table) and `PrefixTableLM` (logits that
# depend on every earlier token) have this interface, with a cache that holds the token ids and recomputes (the
# logits a real KV cache gives, not its speed), and so does `RecomputedCache(model, block_size)` around any model
# called as `model(ids)`. A `TinyGPT` built with your `cached_attention` from notebook 10 has it with the speed.
#
# ### Exercise 1: `beam_search` (1 visible + 3 hidden for the search and the cache + 2 hidden for EOS and the length penalty + 1 hidden for errors and edge cases)
#
# *Points: 1 visible, 3 hidden (behaviour), 2 hidden (finished hypotheses and normalisation), 1 hidden (errors and
# edge cases).*

# %% id="nb13-004" nbgrader={"grade": false, "grade_id": "beam_search", "locked": false, "schema_version": 3, "solution": true, "task": false}
import torch


def beam_search(model, prompt, beam_width, max_new_tokens, eos_id=None, length_penalty=0.6):
    """Beam search with a KV cache: the most likely continuation of one prompt, as the rules above define it.

    Args:
        model: a model with notebook 10's cache interface (model(idx, caches) -> (logits, new_caches); caches a list
            of model.n_layer entries, None before the first call, else dicts of tensors whose dim 0 is the batch);
            it has n_layer and block_size.
        prompt: int64 tensor (T,), T >= 1, on the model's device.
        beam_width: int k >= 1. max_new_tokens: int >= 0. eos_id: None (no hypothesis ever finishes early) or a
            token id. length_penalty: alpha >= 0 of GNMT's lp(L) = ((5 + L) / 6) ** alpha.
    Returns:
        (tokens, score): tokens a new int64 tensor (T + L,) on that device, the prompt followed by the L
        generated tokens of the best hypothesis (its EOS included when it finished); score a Python float, its
        summed log-probabilities (log-softmax in float32 or wider, summed in float64 or float32) divided by lp(L).
        Each step extends every unfinished hypothesis by every token and keeps the best (k - finished so far) of
        those candidates by summed log-probability, ties to the better-ranked parent, then the lower token id; a
        kept candidate ending in eos_id is finished and not extended. The search stops when no hypothesis is
        unfinished or after max_new_tokens steps; then the highest normalised score among the finished and the
        unfinished ones wins (ties: the earliest finished, then the unfinished in beam order). beam_width = 1 is
        greedy decoding.
        The model is called once on the prompt (1, T) with [None] * n_layer, then once per further step on the
        kept unfinished hypotheses' last tokens (n, 1), with every layer's cache reordered by their parents; never
        after the last step (for max_new_tokens = 0 the prompt's call is allowed, not needed). Every call runs with
        gradients off and the model in eval mode (model.eval()); afterwards the model's mode is what it was
        (model.train(was_training)), and so is autograd's. prompt is left unchanged.
    Raises:
        ValueError, before any model call: prompt not 1-D or empty, beam_width < 1, max_new_tokens < 0, or
        T + max_new_tokens > model.block_size (= block_size is allowed).
    """
    ### BEGIN SOLUTION
    if prompt.dim() != 1 or prompt.numel() == 0:
        raise ValueError(f"the prompt must be a non-empty 1-D tensor, got shape {tuple(prompt.shape)}")
    if beam_width < 1 or max_new_tokens < 0:
        raise ValueError(f"beam_width must be >= 1 and max_new_tokens >= 0, got {beam_width}, {max_new_tokens}")
    if prompt.numel() + max_new_tokens > model.block_size:
        raise ValueError(f"{prompt.numel()} + {max_new_tokens} tokens exceed block_size {model.block_size}")
    was_training = model.training
    model.eval()
    alive = prompt[None, :]                                    # (n, T + step): the unfinished hypotheses
    scores = torch.zeros(1, dtype=torch.float64, device=prompt.device)
    finished = []                                              # (normalised score, tokens), in finishing order
    with torch.no_grad():
        logits, caches = model(alive, [None] * model.n_layer)
        for step in range(max_new_tokens):
            logp = torch.log_softmax(logits[:, -1, :].double(), dim=-1)
            total = (scores[:, None] + logp).reshape(-1)       # candidate (beam b, token v) at b * V + v
            order = torch.sort(total, descending=True, stable=True).indices[:beam_width - len(finished)]
            parents, tokens = order // logp.shape[-1], order % logp.shape[-1]
            grown = torch.cat([alive[parents], tokens[:, None]], dim=1)
            ended = tokens == eos_id if eos_id is not None else torch.zeros_like(tokens, dtype=torch.bool)
            penalty = ((5 + step + 1) / 6) ** length_penalty
            for row in ended.nonzero().flatten().tolist():
                finished.append((total[order[row]].item() / penalty, grown[row]))
            alive, scores, parents = grown[~ended], total[order][~ended], parents[~ended]
            if alive.shape[0] == 0 or step + 1 == max_new_tokens:
                break
            caches = [None if c is None else {key: t.index_select(0, parents) for key, t in c.items()} for c in caches]
            logits, caches = model(alive[:, -1:], caches)     # every layer's cache follows the kept hypotheses
    model.train(was_training)
    penalty = ((5 + alive.shape[1] - prompt.numel()) / 6) ** length_penalty
    pool = finished + [(score / penalty, row) for score, row in zip(scores.tolist(), alive)]
    best = max(range(len(pool)), key=lambda i: (pool[i][0], -i))
    return pool[best][1].clone(), pool[best][0]
    ### END SOLUTION


# %% id="nb13-005" nbgrader={"grade": true, "grade_id": "test_beam_search", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
import math

import torch
from utils import checks
from utils import probes

# A bigram table over 3 tokens, as probabilities: after 0, token 1 is likeliest (0.5) but token 2 (0.4) leads to
# a token of probability 0.9; after 1 every token has probability 1/3.
probabilities = [[0.1, 0.5, 0.4], [1 / 3, 1 / 3, 1 / 3], [0.05, 0.05, 0.9]]
table = [[math.log(p) for p in row] for row in probabilities]
model = probes.make("utils.generation_models.CachedTableLM", table, 16)    # built where your code runs
prompt = torch.tensor([0])

tokens, score = beam_search(model, prompt, 1, 2, length_penalty=0.0)
checks.assert_tensor(tokens, name="beam_search(width 1, 2 new tokens)", shape=(3,), dtype=torch.int64,
                     hint="Return the prompt followed by the generated tokens, as one 1-D tensor.")
checks.assert_equal(tokens.tolist(), [0, 1, 0], name="beam_search with width 1 (greedy: 1, then a three-way tie)",
                    hint="Width 1 keeps the single best candidate; of equal ones, the lowest token id.")
checks.assert_close(score, math.log(0.5 / 3), atol=1e-5, name="the score of width 1 with length_penalty 0 (log 0.5/3)")
tokens, score = beam_search(model, prompt, 2, 2, length_penalty=0.0)
checks.assert_equal(tokens.tolist(), [0, 2, 2], name="beam_search with width 2 (0.4 * 0.9 beats 0.5 / 3)",
                    hint="Keep the 2 best candidates by summed log-probability; the second one, token 2, wins later.")
checks.assert_close(score, math.log(0.36), atol=1e-5, name="the score of width 2 with length_penalty 0 (log 0.36)")
checks.assert_true(isinstance(score, float), name="beam_search's score", problem=f"it is a {type(score).__name__}.",
                   hint="Return a Python float (.item()).")

# With EOS = 2: the hypothesis [2] finishes after one token (probability 0.4, L = 1, lp = 1) and is set aside; the
# one place left goes to the best extension of [1], of probability 0.5 / 3, which scores lower.
tokens, score = beam_search(model, prompt, 2, 2, eos_id=2, length_penalty=0.6)
checks.assert_equal(tokens.tolist(), [0, 2], name="beam_search with width 2 and eos_id=2",
                    hint="A kept candidate ending in EOS is finished: set it aside with its normalised score, and "
                         "keep one place fewer for the unfinished ones.")
checks.assert_close(score, math.log(0.4), atol=1e-5, name="the score of the finished [2] (L = 1, lp(1) = 1)")

# The calls: the prompt once, then one (n, 1) call per further step for the n unfinished hypotheses.
model = probes.make("utils.generation_models.CachedTableLM", table, 16)
beam_search(model, prompt, 2, 3, length_penalty=0.0)
checks.assert_equal(model.calls, [[1, 1], [2, 1], [2, 1]], name="the shapes beam_search fed the model (width 2, 3 steps)",
                    hint="Prefill with the prompt (1, T) and [None] * n_layer; then all the beam's last tokens in one "
                         "(n, 1) call per step; no call after the last step.")
print("beam_search: visible tests passed")

# %% id="nb13-006" nbgrader={"grade": true, "grade_id": "test_beam_search_hidden", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for beam_search run when your notebook is graded.
### BEGIN HIDDEN TESTS
import math

import torch
from utils import checks
from utils import probes


def reference(table, prompt, width, steps, eos=None, alpha=0.6):
    """The stated rules, in plain Python over whole sequences (no cache): (tokens, score, beam sizes fed)."""
    def next_logp(seq):                                  # PrefixTableLM: the mean of the table's rows so far
        return torch.log_softmax(table[torch.tensor(seq)].mean(dim=0).double(), dim=-1).tolist()
    alive, finished, fed = [(0.0, list(prompt))], [], [[1, len(prompt)]]
    for step in range(steps):
        candidates = [(s + lp, b, v, seq + [v]) for b, (s, seq) in enumerate(alive) for v, lp in enumerate(next_logp(seq))]
        candidates.sort(key=lambda c: (-c[0], c[1], c[2]))
        kept = candidates[:width - len(finished)]
        finished += [(c[0] / ((5 + step + 1) / 6) ** alpha, c[3]) for c in kept if c[2] == eos]
        alive = [(c[0], c[3]) for c in kept if c[2] != eos]
        if not alive:
            break
        if step + 1 < steps:
            fed.append([len(alive), 1])
    generated = len(alive[0][1]) - len(prompt) if alive else 0
    pool = finished + [(s / ((5 + generated) / 6) ** alpha, seq) for s, seq in alive]
    best = max(range(len(pool)), key=lambda i: (pool[i][0], -i))
    return pool[best][1], pool[best][0], fed


# Random prefix-dependent models: a hypothesis continued from another one's cache gets other logits.
for seed, V, width, steps, T in [(11, 5, 3, 6, 2), (12, 7, 4, 5, 1), (13, 4, 2, 7, 3), (14, 6, 5, 4, 2),
                                 (15, 3, 8, 5, 1), (16, 9, 1, 6, 2)]:
    g = torch.Generator().manual_seed(seed)
    table = torch.randn(V, V, generator=g) * 2.5
    prompt = torch.randint(0, V, (T,), generator=g)
    want, want_score, fed = reference(table, prompt.tolist(), width, steps)
    model = probes.make("utils.generation_models.PrefixTableLM", table.tolist(), 16)
    tokens, score = beam_search(model, prompt, width, steps)
    name = f"beam_search on a model that reads the whole prefix (V={V}, width {width}, {steps} new tokens)"
    checks.assert_tensor(tokens, name=name, shape=(T + steps,), dtype=torch.int64)
    checks.assert_equal(tokens.tolist(), want, name=name,
                        hint="Keep the best candidates over all beams by summed log-probability, and reorder every "
                             "layer's cache by the kept hypotheses' parents before the next call.")
    checks.assert_close(score, want_score, atol=1e-4, name=f"{name}: the score (default length_penalty)",
                        hint="Summed log-probabilities divided by ((5 + L) / 6) ** length_penalty, L the new tokens.")
    checks.assert_equal(model.calls, fed, name=f"{name}: the shapes fed to the model",
                        hint="The prompt once, then one (n, 1) call per further step for all n hypotheses together.")

# Width 1 is greedy decoding, on a model whose tokens 2j and 2j + 1 always tie (equal table columns).
table = torch.randn(8, 8, generator=torch.Generator().manual_seed(17)) * 2
table[:, 1::2] = table[:, 0::2]
model = probes.make("utils.generation_models.PrefixTableLM", table.tolist(), 16)
prompt, seq = torch.tensor([5, 2]), [5, 2]
for _ in range(6):
    seq.append(int(table[torch.tensor(seq)].mean(dim=0).argmax()))
checks.assert_equal(beam_search(model, prompt, 1, 6)[0].tolist(), seq,
                    name="beam_search with width 1 on a model whose tokens 2j and 2j + 1 tie (greedy, lower id on ties)",
                    hint="Sort with stable=True: equal candidates keep (beam, token) order, so the lower token id wins.")
# Ties between beams: two hypotheses with equal sums; the better-ranked parent's candidates come first.
for seed, V, width, steps in [(18, 6, 3, 5), (19, 6, 4, 4)]:
    table = torch.randn(V, V, generator=torch.Generator().manual_seed(seed)) * 2
    table[:, 1::2] = table[:, 0::2]
    want, want_score, _ = reference(table, [4], width, steps)
    model = probes.make("utils.generation_models.PrefixTableLM", table.tolist(), 16)
    checks.assert_equal(beam_search(model, torch.tensor([4]), width, steps)[0].tolist(), want,
                        name=f"beam_search (width {width}) on a model with tied tokens",
                        hint="Ties: the better-ranked parent first, then the lower token id (a stable descending sort "
                             "of the flattened beam-by-token scores).")
# Many candidates tied at once: after a model whose 20 tokens are always equally likely, every candidate of a step
# ties, so the rule alone decides which are kept (beam 0's tokens 0, 1, 2, ...) and the winner (beam 0, all zeros).
# (PyTorch's sort without stable=True reorders equal values among this many.)
for width in (1, 3):
    model = probes.make("utils.generation_models.CachedTableLM", [[0.0] * 20] * 20, 16)
    tokens, score = beam_search(model, torch.tensor([7]), width, 3)
    checks.assert_equal(tokens.tolist(), [7, 0, 0, 0],
                        name=f"beam_search (width {width}) on a model whose 20 tokens always tie",
                        hint="Ties: the better-ranked parent first, then the lower token id; sort with stable=True "
                             "(an unstable sort keeps equal candidates in an order of its own).")
    checks.assert_close(score, 3 * math.log(1 / 20) / (8 / 6) ** 0.6, atol=1e-4,
                        name=f"the score of beam_search (width {width}) on a model whose 20 tokens always tie")
# A tie between two parents: after 0, tokens 1 and 2 tie (0.4 each) and each then offers one candidate of 0.4 * 0.5,
# 0 -> 1 -> 2 and 0 -> 2 -> 1. The better-ranked parent (token 1, the lower id, ranked first) keeps its candidate.
table = [[math.log(p) for p in row] for row in [[0.2, 0.4, 0.4], [0.25, 0.25, 0.5], [0.25, 0.5, 0.25]]]
model = probes.make("utils.generation_models.CachedTableLM", table, 16)
checks.assert_equal(beam_search(model, torch.tensor([0]), 2, 2, length_penalty=0.0)[0].tolist(), [0, 1, 2],
                    name="beam_search (width 2) when the best candidates of two different parents tie",
                    hint="Ties go to the better-ranked parent first, then to the lower token id: a stable descending sort "
                         "of the beam-major flattened scores (candidate b * V + v), not token-major.")
# A bfloat16 model: its logits hold 8 significant bits, and a log-softmax taken in bfloat16 rounds each log-probability
# to them (here the score moves by 2e-2); in float32 or wider, as the docstring asks, it is within 1e-6 of exact.
# Width 1 on this bigram table is greedy decoding, so the exact score is a sum along the argmax path.
table = (torch.randn(7, 7, generator=torch.Generator().manual_seed(21)) * 2).to(torch.bfloat16)
logp, seq, total = torch.log_softmax(table.double(), dim=-1), [3], 0.0
for _ in range(8):
    seq.append(int(logp[seq[-1]].argmax()))
    total += float(logp[seq[-2], seq[-1]])
model = probes.make("utils.generation_models.CachedTableLM", table.double().tolist(), 16, torch.bfloat16)
tokens, score = beam_search(model, torch.tensor([3]), 1, 8)
checks.assert_close(score, total / (13 / 6) ** 0.6, atol=1e-4, name="the score of beam_search (width 1) on a bfloat16 model",
                    hint="Take the log-softmax in float32 or wider (logits.float() or .double() first): in bfloat16 each "
                         "log-probability is rounded to 8 significant bits.")
print("beam_search: hidden tests passed")
### END HIDDEN TESTS

# %% id="nb13-007" nbgrader={"grade": true, "grade_id": "test_beam_search_hidden_eos", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for beam_search's finished hypotheses and length penalty run when your notebook is graded.
### BEGIN HIDDEN TESTS
import math

import torch
from utils import checks
from utils import probes


def reference(table, prompt, width, steps, eos=None, alpha=0.6):
    """The stated rules over whole sequences of a bigram table: (tokens, score, beam sizes fed after the prompt)."""
    logp = torch.log_softmax(table.double(), dim=-1)
    alive, finished, fed = [(0.0, list(prompt))], [], []
    for step in range(steps):
        candidates = [(s + logp[seq[-1], v].item(), b, v, seq + [v]) for b, (s, seq) in enumerate(alive)
                      for v in range(table.shape[0])]
        candidates.sort(key=lambda c: (-c[0], c[1], c[2]))
        kept = candidates[:width - len(finished)]
        finished += [(c[0] / ((5 + step + 1) / 6) ** alpha, c[3]) for c in kept if c[2] == eos]
        alive = [(c[0], c[3]) for c in kept if c[2] != eos]
        if not alive:
            break
        if step + 1 < steps:
            fed.append(len(alive))
    generated = len(alive[0][1]) - len(prompt) if alive else 0
    pool = finished + [(s / ((5 + generated) / 6) ** alpha, seq) for s, seq in alive]
    best = max(range(len(pool)), key=lambda i: (pool[i][0], -i))
    return pool[best][1], pool[best][0], fed


# EOS likely early: finished hypotheses are set aside (not extended, not dropped), the beam narrows.
for seed, V, eos, width, steps, alpha in [(21, 5, 0, 3, 6, 0.6), (22, 6, 2, 4, 7, 1.0), (23, 4, 3, 2, 8, 0.0),
                                          (24, 7, 1, 5, 6, 2.0), (25, 5, 4, 3, 5, 0.6)]:
    g = torch.Generator().manual_seed(seed)
    table = torch.randn(V, V, generator=g) * 2
    table[:, eos] += 1.5                                  # EOS competes at every step
    want, want_score, fed = reference(table, [1], width, steps, eos, alpha)
    model = probes.make("utils.generation_models.CachedTableLM", table.tolist(), 16)
    tokens, score = beam_search(model, torch.tensor([1]), width, steps, eos_id=eos, length_penalty=alpha)
    name = f"beam_search (width {width}, {steps} new tokens, EOS = {eos}, length_penalty {alpha})"
    checks.assert_equal(tokens.tolist(), want, name=name,
                        hint="A kept candidate ending in EOS is finished: keep it aside with its normalised score, stop "
                             "extending it, and keep (width - finished) candidates at the next step. The winner is the "
                             "best normalised score among finished and unfinished hypotheses.")
    checks.assert_close(score, want_score, atol=1e-4, name=f"{name}: the score",
                        hint="Divide the summed log-probability by ((5 + L) / 6) ** length_penalty, L counting the "
                             "generated tokens with the EOS.")
    checks.assert_true(isinstance(score, float), name=f"{name}: the type of the score",
                       problem=f"it is a {type(score).__name__}.", hint="Return a Python float (.item()), for a finished "
                                                                      "hypothesis too.")
    checks.assert_equal([shape[0] for shape in model.calls[1:]], fed, name=f"{name}: the number of hypotheses fed per step",
                        hint="Feed only the unfinished hypotheses; a finished one is never extended.")

# The length penalty decides between a short finished hypothesis and a long one: after token 1, EOS (0) has
# probability 0.3 and token 1 again 0.7, so the raw sum prefers stopping at once (log 0.3 > log 0.7^4) and GNMT's
# normalisation with alpha = 2 prefers 4 tokens (log 0.7^4 / 2.25 > log 0.3).
p_stop, p_go = 0.3, 0.7
table = torch.log(torch.tensor([[0.05, 0.05, 0.9], [p_stop, p_go, 0.0001], [0.3, 0.7, 0.0001]]))
for alpha in (0.0, 2.0):
    model = probes.make("utils.generation_models.CachedTableLM", table.tolist(), 16)
    tokens, score = beam_search(model, torch.tensor([1]), 2, 4, eos_id=0, length_penalty=alpha)
    length = len(tokens) - 1
    checks.assert_true(isinstance(score, float), name=f"the type of the score with length_penalty {alpha}",
                       problem=f"it is a {type(score).__name__}.", hint="Return a Python float (.item()).")
    checks.assert_close(score, ((5 + length) / 6) ** -alpha * sum(
        math.log(float(torch.softmax(table[a], dim=-1)[b])) for a, b in zip(tokens[:-1].tolist(), tokens[1:].tolist())),
        atol=1e-4, name=f"the score beam_search returned for its own hypothesis (length_penalty {alpha})",
        hint="The score is the hypothesis's summed log-probability divided by ((5 + L) / 6) ** alpha.")
    checks.assert_equal(length, 1 if alpha == 0.0 else 4, name=f"the length of the hypothesis chosen with length_penalty {alpha}",
                        hint="Compare finished and unfinished hypotheses by normalised score: length_penalty 0 is the raw "
                             "sum (short wins), 2 rewards length.")
# Ties at length_penalty 0 (raw sums), the stated rule: the earliest finished wins, then the unfinished in beam order.
# After 0, token 1 and EOS tie at 0.5; then either 1 -> 1 (certain) leaves an unfinished hypothesis tying the finished
# one, or 1 -> EOS (certain) a second finished one tying the first. (-50 is a probability of about e^-50: none.)
half = math.log(0.5)
for rows, steps, what in [([[-50.0, half, half], [-50.0, 0.0, -50.0], [0.0, -50.0, -50.0]], 2,
                           "a finished hypothesis tying an unfinished one"),
                          ([[-50.0, half, half], [-50.0, -50.0, 0.0], [0.0, -50.0, -50.0]], 3,
                           "two finished hypotheses that tie")]:
    model = probes.make("utils.generation_models.CachedTableLM", rows, 16)
    checks.assert_equal(beam_search(model, torch.tensor([0]), 2, steps, eos_id=2, length_penalty=0.0)[0].tolist(), [0, 2],
                        name=f"beam_search (width 2, EOS 2, length_penalty 0) with {what}",
                        hint="Of equal normalised scores the earliest finished hypothesis wins, then the unfinished ones "
                             "in beam order: keep the finished in the order they finished, before the unfinished, and "
                             "take the first maximum.")
print("beam_search: hidden tests of finished hypotheses passed")
### END HIDDEN TESTS

# %% id="nb13-008" nbgrader={"grade": true, "grade_id": "test_beam_search_hidden_edges", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for beam_search's errors and edge cases run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks
from utils import probes

table = torch.randn(5, 5, generator=torch.Generator().manual_seed(31)).tolist()
model = probes.make("utils.generation_models.PrefixTableLM", table, 8)
prompt = torch.tensor([1, 3])
tokens, score = beam_search(model, prompt, 3, 0)
checks.assert_equal(tokens.tolist(), [1, 3], name="beam_search(..., max_new_tokens=0)", hint="No step: the prompt itself.")
checks.assert_close(score, 0.0, atol=1e-12, name="the score of zero new tokens", hint="An empty sum is 0.")
checks.assert_true(isinstance(score, float), name="beam_search's score for max_new_tokens=0",
                   problem=f"it is a {type(score).__name__}.", hint="Return a Python float.")
tokens, _ = beam_search(model, prompt, 3, 6)
checks.assert_tensor(tokens, name="beam_search up to exactly block_size tokens (2 + 6 = 8)", shape=(8,), dtype=torch.int64)
tokens, _ = beam_search(model, prompt, 50, 2)
checks.assert_tensor(tokens, name="beam_search with a width (50) above the candidates (5, then 25)", shape=(4,),
                     dtype=torch.int64, hint="Keep at most as many candidates as there are.")
# Each bound one past its boundary too (beam_width -1, max_new_tokens -2, 2 + 8 tokens), so a check of the boundary
# value alone (beam_width == 0) shows, and no model call before any of these errors.
for bad, what in [((prompt, 0, 3), "beam_width 0"), ((prompt, -1, 3), "beam_width -1"),
                  ((prompt, 2, -1), "max_new_tokens -1"), ((prompt, 2, -2), "max_new_tokens -2"),
                  ((prompt, 2, 7), "2 + 7 tokens past block_size 8"), ((prompt, 2, 8), "2 + 8 tokens past block_size 8"),
                  ((prompt[None], 2, 2), "a 2-D prompt"),
                  ((prompt[:0], 2, 2), "an empty prompt")]:
    model = probes.make("utils.generation_models.PrefixTableLM", table, 8)
    checks.assert_raises(ValueError, beam_search, model, *bad, name=f"beam_search with {what}",
                         hint="Check the arguments first and raise ValueError.")
    checks.assert_equal(model.calls, [], name=f"the model calls before beam_search raised for {what}",
                        hint="Check the arguments before calling the model.")
# Both sides of each numeric boundary: just outside raises, just inside (width 1, 0 new tokens) does not.
checks.assert_error_boundary(
    ValueError, lambda w: beam_search(probes.make("utils.generation_models.PrefixTableLM", table, 8), prompt, w, 2),
    raises=(0, -1), allowed=(1,), name="beam_search's beam_width", hint="Raise ValueError for beam_width < 1.")
checks.assert_error_boundary(
    ValueError, lambda n: beam_search(probes.make("utils.generation_models.PrefixTableLM", table, 8), prompt, 2, n),
    raises=(-1, -2), allowed=(0,), name="beam_search's max_new_tokens", hint="Raise ValueError for max_new_tokens < 0.")
# Modes: every call in eval mode with gradients off; the model's mode and autograd's restored afterwards.
for starts_training in (True, False):
    model = probes.make("utils.generation_models.PrefixTableLM", table, 8)
    model.train(starts_training)
    beam_search(model, prompt, 2, 3)
    checks.assert_equal(model.modes, [{"grad_enabled": False, "training": False}] * 3,
                        name=f"autograd and the module mode during beam_search's calls (model in {'train' if starts_training else 'eval'} mode)",
                        hint="model.eval() and torch.no_grad() around the search.")
    checks.assert_true(model.training is starts_training, name="the model's mode after beam_search",
                       problem="it is not the mode the model came in.", hint="model.train(was_training) at the end.")
checks.assert_equal(probes.make("utils.recording.grad_mode_after", beam_search, model, prompt, 2, 2),
                    {"grad_enabled_after": True}, name="autograd after beam_search (it was on before the call)",
                    hint="Use torch.no_grad() as a with block.")
traced = probes.traced_call(beam_search, model, prompt, 2, 0)
checks.assert_true(not traced.shares_memory, name="beam_search's tokens for max_new_tokens=0",
                   problem="they share memory with the prompt.", hint="Return a new tensor (clone).")
# On the device of the model and the prompt: a copy of the model with its table labelled cuda:0 and the prompt too,
# their values kept (utils.fake_cuda), as the search reads them. A running score made without device= is on the
# CPU, and adding the model's log-probabilities to it raises on a GPU.
model = probes.make("utils.generation_models.PrefixTableLM", table, 8)
seen = probes.make("utils.fake_cuda.result_device_on_fake_cuda", beam_search, model, prompt, 3, 4)
checks.assert_kept_on_fake_cuda(seen, name="the device of beam_search's tokens for a model and prompt on a GPU (emulated)",
                                hint="Make every tensor of the search on prompt.device (torch.zeros(..., device=prompt.device)).")
print("beam_search: hidden edge tests passed")
### END HIDDEN TESTS

# %% [markdown] id="nb13-009"
# ## 2. Speculative sampling
#
# Sampling from a large model costs one forward pass of it per token, and at batch size 1 that pass is limited by
# reading the weights, not by arithmetic: scoring 5 tokens in one pass costs about what scoring 1 does.
# **Speculative sampling** (Leviathan, Kalman and Matias, 2023; Chen et al., 2023) uses that. A small **draft** model
# $q$ proposes $\gamma$ tokens $x_1 \dots x_\gamma$, one at a time (cheap); the large **target** model $p$ scores the
# sequence with all of them in **one** forward pass, which gives $p_i(\cdot)$, its distribution at each proposed
# position, and $p_{\gamma+1}(\cdot)$ after the last. Then, for $i = 1, 2, \dots$:
#
# * accept $x_i$ with probability $\min\left(1, \dfrac{p_i(x_i)}{q_i(x_i)}\right)$;
# * at the first rejection, draw a replacement from the **residual** $\dfrac{\max(0,\, p_i - q_i)}{\sum_x \max(0,\,
#   p_i(x) - q_i(x))}$ and end the round;
# * if all $\gamma$ are accepted, draw one more token from $p_{\gamma+1}$ (the target computed it anyway).
#
# **Why the result is an exact sample from $p$.** Fix a position. The token comes out as $x$ either because the draft
# proposed $x$ and it was accepted, probability $q(x) \min(1, p(x)/q(x)) = \min(q(x), p(x))$, or because something was
# rejected and the residual drew $x$. The total rejection probability is $\sum_y (q(y) - \min(q(y), p(y))) = \sum_y
# \max(0, p(y) - q(y))$ (both sums equal $1 - \sum_y \min(p(y), q(y))$), exactly the residual's normaliser, so the
# second way has probability $\max(0, p(x) - q(x))$. Adding: $\min(p, q) + \max(0, p - q) = p(x)$. Each round costs
# one target call and yields between 1 and $\gamma + 1$ tokens; the better the draft matches the target, the more.
#
# With $\alpha$ the acceptance probability, $\alpha = \sum_x \min(p(x), q(x))$, taken as the same at every position,
# a round yields on average
#
# $$\mathbb{E}[\text{tokens per target call}] = \frac{1 - \alpha^{\gamma + 1}}{1 - \alpha},$$
#
# ($1 + \alpha + \dots + \alpha^\gamma$: token $j + 1$ of the round comes out only if the first $j$ proposals were
# accepted).
#
# **Counting tokens.** When $r$ tokens are still wanted, a round proposes $\min(\gamma, r - 1)$: with all of them
# accepted and the extra token, the round ends exactly at $r$, never past it. So the last token of all, and every
# token when $r = 1$, can come from the target alone (a round that proposes nothing: one target call, one draw from
# its $p$).
#
# ### Exercise 2: `speculative_sample` (1 visible + 3 hidden for the distribution + 1 hidden for the calls + 1 hidden for errors and edge cases)
#
# Draw every random number from `generator` (`torch.rand(..., generator=generator)`, `torch.multinomial(...,
# generator=generator)`): the course's rule, and what makes a run repeatable. The grader checks that a call given a
# generator leaves PyTorch's, NumPy's and Python's global generators as they were.
#
# *Points: 1 visible, 3 hidden (the distribution), 1 hidden (the calls), 1 hidden (errors and edge cases).*

# %% id="nb13-010" nbgrader={"grade": false, "grade_id": "speculative_sample", "locked": false, "schema_version": 3, "solution": true, "task": false}
import torch


def speculative_sample(target, draft, prompt, n_draft, max_new_tokens, generator):
    """Speculative sampling: max_new_tokens tokens distributed exactly as sampling from target alone.

    Args:
        target, draft: models called as model(ids) on int64 ids (1, t), returning logits (1, t, V), the same V;
            used in the mode the caller set. The next token's distribution is softmax of the last logits
            (temperature 1, computed in float32 or wider).
        prompt: int64 tensor (T,), T >= 1.
        n_draft: int gamma >= 1, the most tokens the draft proposes per round.
        max_new_tokens: int >= 0.
        generator: a torch.Generator; every random draw comes from it (never a global generator).
    Returns:
        A new int64 tensor (T + max_new_tokens,): the prompt, then new tokens distributed
        as sampling from target one token at a time. While r tokens are still wanted, a round: the draft proposes
        g = min(n_draft, r - 1) tokens, one draft call each (on the whole sequence so far); the target is called
        ONCE, on the sequence and all g proposals; proposal i is accepted with probability min(1, p_i / q_i); the
        first rejected one is replaced by a draw from max(0, p_i - q_i) normalised (from p_i if that is all zero),
        which ends the round; if all g are accepted, one more token is drawn from the target's last distribution.
        So each round makes exactly one target call and adds 1 to g + 1 tokens; for max_new_tokens = 0 neither
        model is called. Every model call runs with gradients off (torch.no_grad()); afterwards autograd is as it
        was. prompt is left unchanged.
    Raises:
        ValueError, before any model call: prompt not 1-D or empty, n_draft < 1, or max_new_tokens < 0.
    """
    ### BEGIN SOLUTION
    def draw(probs):
        """One token id from a probability vector: the inverse CDF at one uniform number from the generator."""
        u = torch.rand((), generator=generator, dtype=torch.float64, device=probs.device)
        cdf = probs.double().cumsum(dim=0)
        return int(torch.searchsorted(cdf, u, right=True).clamp(max=probs.numel() - 1))

    if prompt.dim() != 1 or prompt.numel() == 0:
        raise ValueError(f"the prompt must be a non-empty 1-D tensor, got shape {tuple(prompt.shape)}")
    if n_draft < 1 or max_new_tokens < 0:
        raise ValueError(f"n_draft must be >= 1 and max_new_tokens >= 0, got {n_draft}, {max_new_tokens}")
    out = prompt.tolist()
    wanted = prompt.numel() + max_new_tokens
    with torch.no_grad():
        while len(out) < wanted:
            g = min(n_draft, wanted - len(out) - 1)
            proposed, q = [], []
            for _ in range(g):                                 # the draft proposes g tokens, one call each
                ids = torch.tensor([out + proposed], device=prompt.device)
                q.append(torch.softmax(draft(ids)[0, -1].double(), dim=-1))
                proposed.append(draw(q[-1]))
            ids = torch.tensor([out + proposed], device=prompt.device)
            p = torch.softmax(target(ids)[0, -g - 1:].double(), dim=-1)      # one target call: g + 1 distributions
            for i, token in enumerate(proposed):
                accept = torch.clamp(p[i, token] / q[i][token], max=1.0)
                if torch.rand((), generator=generator, dtype=torch.float64, device=prompt.device) >= accept:
                    residual = torch.clamp(p[i] - q[i], min=0.0)
                    residual = residual / residual.sum() if residual.sum() > 0 else p[i]
                    out.append(draw(residual))
                    break
                out.append(token)
            else:
                out.append(draw(p[g]))                       # all accepted: one more token from the target
    return torch.tensor(out, dtype=torch.int64, device=prompt.device)
    ### END SOLUTION


# %% id="nb13-011" nbgrader={"grade": true, "grade_id": "test_speculative_sample", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
import torch
from utils import checks
from utils import probes

target_table = [[2.0, 0.0, -1.0], [0.0, 1.0, 2.0], [1.0, -2.0, 0.5]]
draft_table = [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 2.0]]
target = probes.make("utils.generation_models.TableLM", target_table)     # bigram models, built where your code runs
draft = probes.make("utils.generation_models.TableLM", draft_table)
prompt = torch.tensor([0, 1])
out = speculative_sample(target, draft, prompt, 2, 5, torch.Generator().manual_seed(5))
checks.assert_tensor(out, name="speculative_sample(2 prompt tokens, n_draft 2, 5 new)", shape=(7,), dtype=torch.int64,
                     hint="Return the prompt and the new tokens as one 1-D tensor.")
checks.assert_equal(out[:2].tolist(), [0, 1], name="the first 2 tokens of the output (the prompt)")
again = speculative_sample(target, draft, prompt, 2, 5, torch.Generator().manual_seed(5))
checks.assert_equal(again.tolist(), out.tolist(), name="two calls with generators seeded alike",
                    hint="Draw every random number from the generator you are given (generator=generator).")

# A draft equal to the target: every proposal is accepted (p / q = 1), so 7 tokens with n_draft 3 take two rounds:
# 3 proposals and the extra token (4), then 2 proposals (min(3, 3 - 1)) and the extra token (3).
same = probes.make("utils.generation_models.TableLM", target_table)
target = probes.make("utils.generation_models.TableLM", target_table)
speculative_sample(target, same, torch.tensor([2]), 3, 7, torch.Generator().manual_seed(0))
checks.assert_equal(target.calls, [[1, 4], [1, 7]], name="the target's calls for 7 tokens, n_draft 3, draft = target",
                    hint="One target call per round on the sequence and all proposals; all accepted: draw one more "
                         "token from the target's last position, and propose min(n_draft, wanted - 1).")
checks.assert_equal(len(same.calls), 5, name="the number of draft calls for 7 tokens, n_draft 3, draft = target",
                    hint="One draft call per proposed token: 3 in the first round, 2 in the second.")

# The first new token's frequencies over 1,500 seeded draws against the target's own probabilities.
target = probes.make("utils.generation_models.TableLM", target_table)
seen = probes.make("utils.generation_models.draw_counts", speculative_sample, target, draft, torch.tensor([0]), 2, 2, 100, 1500)
first = [sum(n for key, n in seen["counts"].items() if key.split()[0] == str(v)) / 1500 for v in range(3)]
checks.assert_close(torch.tensor(first), torch.softmax(torch.tensor(target_table[0]), dim=-1), atol=0.06,
                    name="the first new token's frequencies over 1,500 draws against the target's probabilities after 0",
                    hint="Accept with min(1, p/q); on rejection draw from max(0, p - q) normalised.")
print("speculative_sample: visible tests passed")

# %% id="nb13-012" nbgrader={"grade": true, "grade_id": "test_speculative_sample_hidden", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for speculative_sample run when your notebook is graded.
### BEGIN HIDDEN TESTS
import itertools
import math

import torch
from utils import checks
from utils import probes


def chi_square_check(seen, target_table, prompt_last, length, draws, name):
    """Pearson's chi-square of the sequence counts against the target's exact sequence probabilities (bins with an
    expected count under 5 pooled), at a significance of 1e-6 (Wilson-Hilferty's approximation of the quantile)."""
    p = torch.softmax(torch.tensor(target_table, dtype=torch.float64), dim=-1)
    expected, observed = [], []
    for seq in itertools.product(range(p.shape[0]), repeat=length):
        prob, last = 1.0, prompt_last
        for token in seq:
            prob, last = prob * float(p[last, token]), token
        expected.append(prob * draws)
        observed.append(seen["counts"].get(" ".join(map(str, seq)), 0))
    checks.assert_equal(sum(observed), draws, name=f"{name}: draws of {length} new tokens each",
                        hint="Return the prompt and exactly max_new_tokens new tokens.")
    big = [i for i, e in enumerate(expected) if e >= 5]
    small = [i for i, e in enumerate(expected) if e < 5]
    bins = [(observed[i], expected[i]) for i in big] + [(sum(observed[i] for i in small), sum(expected[i] for i in small))]
    chi2 = sum((o - e) ** 2 / e for o, e in bins if e > 0)
    k = len(bins) - 1
    critical = k * (1 - 2 / (9 * k) + 4.75 * math.sqrt(2 / (9 * k))) ** 3
    checks.assert_true(chi2 < critical, name=name,
                       problem=f"the sequences drawn do not follow the target's distribution (chi-square {chi2:.0f} "
                               f"over {k} degrees of freedom, where a correct sampler stays under {critical:.0f} in all "
                               "but one run in a million).",
                       hint="Accept proposal i with probability min(1, p_i(x) / q_i(x)); at the first rejection draw "
                            "from max(0, p_i - q_i) normalised; after all are accepted, draw one more from the target.")


cases = [  # (seed, V, n_draft, new tokens, draws)
    (41, 3, 1, 3, 2000), (42, 4, 2, 3, 2000), (43, 3, 4, 4, 2000)]
for seed, V, n_draft, length, draws in cases:
    g = torch.Generator().manual_seed(seed)
    target_table = (torch.randn(V, V, generator=g) * 1.5).tolist()
    draft_table = (torch.randn(V, V, generator=g) * 1.5).tolist()
    target = probes.make("utils.generation_models.TableLM", target_table)
    draft = probes.make("utils.generation_models.TableLM", draft_table)
    seen = probes.make("utils.generation_models.draw_counts", speculative_sample, target, draft, torch.tensor([1]),
                       n_draft, length, 1000 * seed, draws)
    chi_square_check(seen, target_table, 1, length, draws,
                     f"{draws} draws of speculative_sample (V={V}, n_draft {n_draft}, {length} new tokens)")
# A draft that never proposes some tokens the target likes: only the residual can produce them.
target_table = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.5], [0.0, 1.0, 0.0]]
draft_table = [[0.0, -30.0, 0.0], [4.0, -30.0, -30.0], [-30.0, 4.0, -30.0]]
target = probes.make("utils.generation_models.TableLM", target_table)
draft = probes.make("utils.generation_models.TableLM", draft_table)
seen = probes.make("utils.generation_models.draw_counts", speculative_sample, target, draft, torch.tensor([0]), 2, 3, 7, 2000)
chi_square_check(seen, target_table, 0, 3, 2000, "2000 draws with a draft that almost never proposes token 1 after 0")
# One direct call with a generator (the grader checks that the global generators are left alone).
out = speculative_sample(target, draft, torch.tensor([2, 0]), 3, 6, torch.Generator().manual_seed(3))
checks.assert_tensor(out, name="speculative_sample(prompt of 2, n_draft 3, 6 new)", shape=(8,), dtype=torch.int64)
print("speculative_sample: hidden tests passed")
### END HIDDEN TESTS

# %% id="nb13-013" nbgrader={"grade": true, "grade_id": "test_speculative_sample_hidden_calls", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for speculative_sample's model calls run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks
from utils import probes

table = (torch.randn(5, 5, generator=torch.Generator().manual_seed(51)) * 2).tolist()
for n_draft, new, T in [(2, 9, 1), (4, 10, 3), (5, 3, 2), (1, 6, 1)]:
    target = probes.make("utils.generation_models.TableLM", table)
    draft = probes.make("utils.generation_models.TableLM", table)   # the draft is the target: all accepted
    speculative_sample(target, draft, torch.arange(T), n_draft, new, torch.Generator().manual_seed(n_draft))
    want, have, drafted = [], T, 0
    while have < T + new:
        g = min(n_draft, T + new - have - 1)
        want.append([1, have + g])
        drafted += g
        have += g + 1
    name = f"speculative_sample with the draft equal to the target (n_draft {n_draft}, {new} new after {T})"
    checks.assert_equal(target.calls, want, name=f"{name}: the target's calls",
                        hint="Every proposal is accepted: each round adds its proposals and one extra token drawn from "
                             "the target's last distribution, in one target call.")
    checks.assert_equal(len(draft.calls), drafted, name=f"{name}: the number of draft calls",
                        hint="Propose min(n_draft, tokens still wanted - 1) tokens per round, one draft call each.")
    checks.assert_equal(draft.calls, [[1, length] for length in range(T, T + new) if length not in
                                      [w[1] for w in want]][:drafted], name=f"{name}: the shapes fed to the draft",
                        hint="Each draft call reads the whole sequence so far (1, t), the prompt and every token added "
                             "or proposed, not the last token alone.")
# A draft that always proposes what the target almost never picks: every round ends at its first proposal, with a
# token from the residual, so each round adds exactly one token.
target_table = [[0.0, 0.0, -40.0]] * 3
draft_table = [[-40.0, -40.0, 0.0]] * 3
target = probes.make("utils.generation_models.TableLM", target_table)
draft = probes.make("utils.generation_models.TableLM", draft_table)
out = speculative_sample(target, draft, torch.tensor([0]), 3, 5, torch.Generator().manual_seed(8))
checks.assert_equal(len(target.calls), 5, name="target calls for 5 tokens when every first proposal is rejected",
                    hint="A rejection ends the round: draw the replacement from the residual and propose again.")
checks.assert_true(2 not in out[1:].tolist(), name="tokens after rejections of token 2 (the target gives it about e^-40)",
                   problem="token 2 came out.", hint="A rejected proposal is replaced, from max(0, p - q) normalised.")
# Every model call with gradients off, for a call made with autograd on: models that record the gradient mode of
# each call (CachedTableLM's modes, its logits alone through LogitsOnly).
recorders = [probes.make("utils.generation_models.CachedTableLM", table, 64) for _ in range(2)]
target, draft = (probes.make("utils.generation_models.LogitsOnly", r) for r in recorders)
speculative_sample(target, draft, torch.tensor([0]), 3, 6, torch.Generator().manual_seed(9))
modes = recorders[0].modes + recorders[1].modes
checks.assert_true(len(modes) > 0 and not any(m["grad_enabled"] for m in modes),
                   name="autograd during speculative_sample's model calls (called with autograd on)",
                   problem="a model was called with gradients on (or never called).",
                   hint="Call both models inside a with torch.no_grad(): block: sampling needs no gradients.")
# The models are used in the mode the caller set: models in training mode are called in it and left in it.
recorders = [probes.make("utils.generation_models.CachedTableLM", table, 64) for _ in range(2)]
target, draft = (probes.make("utils.generation_models.LogitsOnly", r) for r in recorders)
target.train()
draft.train()
speculative_sample(target, draft, torch.tensor([0]), 3, 6, torch.Generator().manual_seed(10))
modes = recorders[0].modes + recorders[1].modes
checks.assert_true(len(modes) > 0 and all(m["training"] for m in modes) and target.training and draft.training,
                   name="the mode of models in training mode, during and after speculative_sample",
                   problem="a model was called in eval mode, or left in it.",
                   hint="Use the models in the mode the caller set: do not call model.eval() or model.train().")
print("speculative_sample: hidden call tests passed")
### END HIDDEN TESTS

# %% id="nb13-014" nbgrader={"grade": true, "grade_id": "test_speculative_sample_hidden_edges", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for speculative_sample's errors and edge cases run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks
from utils import probes

table = [[1.0, 0.0, -1.0], [0.0, 2.0, 0.0], [0.5, 0.5, 0.0]]
target = probes.make("utils.generation_models.TableLM", table)
draft = probes.make("utils.generation_models.TableLM", table)
traced = probes.traced_call(speculative_sample, target, draft, torch.tensor([1, 2]), 2, 0, torch.Generator().manual_seed(1))
checks.assert_equal(traced.result.tolist(), [1, 2], name="speculative_sample(..., max_new_tokens=0)",
                    hint="No token wanted: the prompt itself, as a new tensor.")
checks.assert_true(not traced.shares_memory, name="speculative_sample's result for max_new_tokens=0",
                   problem="it shares memory with the prompt.", hint="Return a new tensor.")
checks.assert_equal(len(target.calls) + len(draft.calls), 0, name="model calls for max_new_tokens=0",
                    hint="Nothing is wanted, so neither model is called.")
out = speculative_sample(target, draft, torch.tensor([1]), 4, 1, torch.Generator().manual_seed(2))
checks.assert_tensor(out, name="speculative_sample(..., n_draft 4, max_new_tokens=1)", shape=(2,), dtype=torch.int64)
checks.assert_equal([len(target.calls), len(draft.calls)], [1, 0], name="[target calls, draft calls] for one new token",
                    hint="With one token wanted a round proposes min(n_draft, 0) = 0 tokens: one target call, one draw.")
for bad, what in [((torch.tensor([1]), 0, 3), "n_draft 0"), ((torch.tensor([1]), -1, 3), "n_draft -1"),
                  ((torch.tensor([1]), 2, -1), "max_new_tokens -1"), ((torch.tensor([1]), 2, -2), "max_new_tokens -2"),
                  ((torch.tensor([[1]]), 2, 2), "a 2-D prompt"), ((torch.tensor([], dtype=torch.int64), 2, 2), "an empty prompt")]:
    checks.assert_raises(ValueError, speculative_sample, target, draft, *bad, torch.Generator().manual_seed(0),
                         name=f"speculative_sample with {what}", hint="Check the arguments first; raise ValueError.")
# Both sides of each numeric boundary, so a check of the boundary value alone (n_draft == 0) shows: just outside
# raises, just inside (n_draft 1, 0 new tokens) does not.
checks.assert_error_boundary(
    ValueError, lambda k: speculative_sample(target, draft, torch.tensor([1]), k, 2, torch.Generator().manual_seed(0)),
    raises=(0, -1), allowed=(1,), name="speculative_sample's n_draft", hint="Raise ValueError for n_draft < 1.")
checks.assert_error_boundary(
    ValueError, lambda n: speculative_sample(target, draft, torch.tensor([1]), 2, n, torch.Generator().manual_seed(0)),
    raises=(-1, -2), allowed=(0,), name="speculative_sample's max_new_tokens", hint="Raise ValueError for max_new_tokens < 0.")
print("speculative_sample: hidden edge tests passed")
### END HIDDEN TESTS

# %% [markdown] id="nb13-015"
# ## 3. Repetition and diversity
#
# Search finds likely text, and for a language model the likeliest continuation is often a loop: once a phrase has
# appeared, repeating it is what the model finds most probable (Holtzman et al., 2020, call this *degeneration*). Two
# small tools, one to control repetition and one to measure diversity.
#
# **No repeated n-gram** (Paulus et al., 2017, blocked repeated trigrams in summaries; Hugging Face's
# `no_repeat_ngram_size` is the same rule): a token is forbidden
# when it would complete an $n$-gram that already occurs in the sequence. With the last $n - 1$ tokens as context,
# every token that followed that same context earlier gets the logit $-\infty$. For $n = 1$ every token already in
# the sequence is forbidden.
#
# ### Exercise 3: `no_repeat_ngram` (1 visible + 2 hidden for the banned tokens + 1 hidden for edge cases)
#
# *Points: 1 visible, 2 hidden (behaviour), 1 hidden (edge cases and errors).*

# %% id="nb13-016" nbgrader={"grade": false, "grade_id": "no_repeat_ngram", "locked": false, "schema_version": 3, "solution": true, "task": false}
import torch


def no_repeat_ngram(logits, tokens, n):
    """The next token's logits with every token that would repeat an n-gram of `tokens` set to -inf.

    Args:
        logits: floating tensor (V,), the next token's logits.
        tokens: int64 tensor (L,), L >= 0: the sequence so far.
        n: int >= 1.
    Returns:
        A new tensor with logits' shape, dtype and device: logits, except -inf at every token v such that the
        n-gram (the last n - 1 tokens of `tokens`, then v) occurs somewhere in `tokens`. For n = 1: every token
        that occurs in `tokens`. Nothing is banned when L < n (no n-gram yet). logits and tokens are left
        unchanged.
    Raises:
        ValueError: if n < 1.
    """
    ### BEGIN SOLUTION
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    seen = tokens.tolist()
    context = seen[len(seen) - n + 1:] if n > 1 else []
    banned = {seen[start + n - 1] for start in range(len(seen) - n + 1) if seen[start:start + n - 1] == context}
    out = logits.clone()
    if banned:
        out[torch.tensor(sorted(banned), device=logits.device)] = float("-inf")
    return out
    ### END SOLUTION


# %% id="nb13-017" nbgrader={"grade": true, "grade_id": "test_no_repeat_ngram", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
import torch
from utils import checks

logits = torch.zeros(6)
tokens = torch.tensor([1, 2, 3, 1, 2])
inf = float("-inf")
out = no_repeat_ngram(logits, tokens, 3)
checks.assert_tensor(out, name="no_repeat_ngram(zeros(6), [1, 2, 3, 1, 2], 3)", shape=(6,), dtype=torch.float32)
checks.assert_equal(out.tolist(), [0.0, 0.0, 0.0, inf, 0.0, 0.0], name="no_repeat_ngram(zeros(6), [1, 2, 3, 1, 2], 3)",
                    hint="The context is the last 2 tokens (1, 2); it was followed by 3 before, so 3 is banned.")
checks.assert_equal(no_repeat_ngram(logits, tokens, 2).tolist(), [0.0, 0.0, 0.0, inf, 0.0, 0.0],
                    name="no_repeat_ngram(zeros(6), [1, 2, 3, 1, 2], 2)", hint="After 2 came 3 before: ban 3.")
checks.assert_equal(no_repeat_ngram(logits, tokens, 1).tolist(), [0.0, inf, inf, inf, 0.0, 0.0],
                    name="no_repeat_ngram(zeros(6), [1, 2, 3, 1, 2], 1)", hint="n = 1 bans every token already there.")
checks.assert_equal(no_repeat_ngram(logits, torch.tensor([4, 4, 4]), 2).tolist(), [0.0, 0.0, 0.0, 0.0, inf, 0.0],
                    name="no_repeat_ngram(zeros(6), [4, 4, 4], 2)")
checks.assert_equal(logits.tolist(), [0.0] * 6, name="the logits after the calls", hint="Work on a copy (clone).")
print("no_repeat_ngram: visible tests passed")

# %% id="nb13-018" nbgrader={"grade": true, "grade_id": "test_no_repeat_ngram_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for no_repeat_ngram run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks

g = torch.Generator().manual_seed(61)
for case in range(12):
    V, L, n = 4 + case % 5, 3 + 3 * case, 1 + case % 4
    tokens = torch.randint(0, V, (L,), generator=g)
    logits = torch.randn(V, generator=g, dtype=torch.float64)
    seq = tokens.tolist()
    banned = set()
    for start in range(L - n + 1):                  # every n-gram of the sequence, its first n - 1 against the context
        if n == 1 or seq[start:start + n - 1] == seq[L - n + 1:]:
            banned.add(seq[start + n - 1])
    want = logits.clone()
    want[list(banned)] = float("-inf")
    out = no_repeat_ngram(logits, tokens, n)
    name = f"no_repeat_ngram on a random sequence of {L} tokens over {V}, n = {n}"
    checks.assert_tensor(out, name=name, shape=(V,), dtype=torch.float64, hint="Keep the logits' dtype.")
    checks.assert_equal(out.tolist(), want.tolist(), name=name,
                        hint="Ban v when (last n - 1 tokens, v) occurs anywhere in the sequence, overlapping ones too.")
print("no_repeat_ngram: hidden tests passed")
### END HIDDEN TESTS

# %% id="nb13-019" nbgrader={"grade": true, "grade_id": "test_no_repeat_ngram_hidden_edges", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for no_repeat_ngram's edge cases run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks
from utils import probes

logits = torch.tensor([0.5, -1.0, 2.0, float("-inf")])
checks.assert_equal(no_repeat_ngram(logits, torch.tensor([], dtype=torch.int64), 2).tolist(), logits.tolist(),
                    name="no_repeat_ngram with an empty sequence", hint="No n-gram yet: nothing is banned.")
checks.assert_equal(no_repeat_ngram(logits, torch.tensor([2, 1]), 3).tolist(), logits.tolist(),
                    name="no_repeat_ngram with 2 tokens and n = 3", hint="L < n: no trigram yet, nothing is banned.")
checks.assert_equal(no_repeat_ngram(logits, torch.tensor([2, 1, 2]), 3).tolist(), logits.tolist(),
                    name="no_repeat_ngram([2, 1, 2], 3)", hint="The context is the last 2 tokens, (1, 2), which never began a trigram.")
checks.assert_equal(no_repeat_ngram(logits, torch.tensor([1, 2, 1, 2]), 3).tolist(), [0.5, float("-inf"), 2.0, float("-inf")],
                    name="no_repeat_ngram([1, 2, 1, 2], 3)", hint="The context (1, 2) was followed by 1 before: ban 1.")
checks.assert_equal(no_repeat_ngram(logits, torch.tensor([1, 1]), 2).tolist(), [0.5, float("-inf"), 2.0, float("-inf")],
                    name="no_repeat_ngram([1, 1], 2)", hint="The bigram (1, 1) occurred: after 1, token 1 is banned.")
half = torch.tensor([0.25, 1.5, -2.0], dtype=torch.bfloat16)
out = no_repeat_ngram(half, torch.tensor([0, 0]), 1)
checks.assert_tensor(out, name="no_repeat_ngram of bfloat16 logits", shape=(3,), dtype=torch.bfloat16)
checks.assert_equal(out.float().tolist(), [float("-inf"), 1.5, -2.0], name="no_repeat_ngram of bfloat16 logits, n = 1")
traced = probes.traced_call(no_repeat_ngram, logits, torch.tensor([3, 3]), 4)
checks.assert_true(not traced.returns_argument and not traced.shares_memory, name="no_repeat_ngram's result when nothing is banned",
                   problem="it is the logits tensor itself, or a view of it.", hint="Return a new tensor (clone).")
checks.assert_error_boundary(ValueError, lambda n: no_repeat_ngram(logits, torch.tensor([1, 2]), n), raises=(0, -1),
                             allowed=(1,), name="no_repeat_ngram's n", hint="Raise ValueError for n < 1.")
# On a GPU (emulated): the result on logits' device, whatever the banned mask is built from.
seen = probes.make("utils.fake_cuda.result_device_on_fake_cuda", no_repeat_ngram, torch.tensor([0.5, -1.0, 2.0, 0.0]),
                   torch.tensor([1, 2, 1, 2]), 3)
checks.assert_kept_on_fake_cuda(seen, name="no_repeat_ngram's result for logits and tokens on a GPU (emulated)",
                                hint="Build the banned mask (or the index of banned tokens) on logits' device: "
                                     "device=logits.device.")
print("no_repeat_ngram: hidden edge tests passed")
### END HIDDEN TESTS

# %% [markdown] id="nb13-020"
# **distinct-n** (Li et al., 2016) measures diversity: over a set of generated texts, the number of *distinct* n-grams
# divided by the total number of n-grams. The n-grams are taken inside each text (none spans two texts) and pooled
# over all of them. A text that loops scores low, and so does a set of texts that all say the same thing; 1.0 means
# no n-gram occurs twice anywhere.
#
# ### Exercise 4: `distinct_n` (1 visible + 1 hidden for the ratio + 1 hidden for edge cases)
#
# *Points: 1 visible, 1 hidden (behaviour), 1 hidden (edge cases and errors).*

# %% id="nb13-021" nbgrader={"grade": false, "grade_id": "distinct_n", "locked": false, "schema_version": 3, "solution": true, "task": false}
def distinct_n(sequences, n):
    """distinct-n of a set of token sequences.

    Args:
        sequences: a list of sequences, each a list of int token ids (any lengths, empty ones too).
        n: int >= 1.
    Returns:
        A Python float: (number of distinct n-grams) / (number of n-grams), over the n-grams of every sequence
        (the L - n + 1 windows of a sequence of length L >= n, none spanning two sequences), pooled. 0.0 when
        there is no n-gram at all. sequences is left unchanged.
    Raises:
        ValueError: if n < 1.
    """
    ### BEGIN SOLUTION
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    grams = [tuple(seq[i:i + n]) for seq in sequences for i in range(len(seq) - n + 1)]
    return len(set(grams)) / len(grams) if grams else 0.0
    ### END SOLUTION


# %% id="nb13-022" nbgrader={"grade": true, "grade_id": "test_distinct_n", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
from utils import checks

checks.assert_close(distinct_n([[1, 2, 1, 2]], 2), 2 / 3, atol=1e-12, name="distinct_n([[1, 2, 1, 2]], 2)",
                    hint="Bigrams (1,2), (2,1), (1,2): 2 distinct of 3.")
checks.assert_close(distinct_n([[1, 2, 1, 2], [1, 2]], 2), 2 / 4, atol=1e-12, name="distinct_n([[1, 2, 1, 2], [1, 2]], 2)",
                    hint="Pool the bigrams of both sequences: 4 in all, 2 distinct.")
checks.assert_close(distinct_n([[5, 6], [7, 8]], 2), 1.0, atol=1e-12, name="distinct_n([[5, 6], [7, 8]], 2)",
                    hint="No bigram spans two sequences: (6, 7) is not one.")
result = distinct_n([[3, 3, 3]], 1)
checks.assert_close(result, 1 / 3, atol=1e-12, name="distinct_n([[3, 3, 3]], 1)")
checks.assert_true(isinstance(result, float), name="distinct_n's result", problem=f"it is a {type(result).__name__}.",
                   hint="Return a Python float.")
print("distinct_n: visible tests passed")

# %% id="nb13-023" nbgrader={"grade": true, "grade_id": "test_distinct_n_hidden", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for distinct_n run when your notebook is graded.
### BEGIN HIDDEN TESTS
import random

from utils import checks

rng = random.Random(71)
for case in range(10):
    n = 1 + case % 4
    sequences = [[rng.randrange(3 + case % 3) for _ in range(rng.randrange(0, 12))] for _ in range(1 + case % 5)]
    grams = []
    for seq in sequences:
        grams += [tuple(seq[i:i + n]) for i in range(len(seq) - n + 1)]
    want = len(set(grams)) / len(grams) if grams else 0.0
    checks.assert_close(distinct_n(sequences, n), want, atol=1e-12,
                        name=f"distinct_n of {len(sequences)} random sequences of 0 to 11 tokens, n = {n}",
                        hint="Distinct n-grams over all n-grams, each sequence's windows pooled, none across sequences.")
# Ids of two digits: the bigrams (1, 12) and (11, 2) are different, though their digits read alike.
checks.assert_close(distinct_n([[1, 12], [11, 2]], 2), 1.0, atol=1e-12,
                    name="distinct_n of two different bigrams whose digits read alike (ids of one and two digits)",
                    hint="Compare n-grams as tuples of ids, not as their digits joined into a string.")
print("distinct_n: hidden tests passed")
### END HIDDEN TESTS

# %% id="nb13-024" nbgrader={"grade": true, "grade_id": "test_distinct_n_hidden_edges", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for distinct_n's edge cases run when your notebook is graded.
### BEGIN HIDDEN TESTS
from utils import checks

for sequences, n, what in [([], 2, "no sequence"), ([[]], 1, "one empty sequence"), ([[1, 2], [3]], 3, "sequences shorter than n")]:
    result = distinct_n(sequences, n)
    checks.assert_close(result, 0.0, atol=0, name=f"distinct_n with {what}", hint="No n-gram at all: 0.0.")
    checks.assert_true(isinstance(result, float), name=f"distinct_n's result with {what}",
                       problem=f"it is a {type(result).__name__}.", hint="Return 0.0, a float.")
checks.assert_close(distinct_n([[1, 2, 3], [1, 2, 3]], 3), 0.5, atol=1e-12, name="distinct_n of two equal sequences of exactly n tokens",
                    hint="A sequence of length n has one n-gram (L - n + 1 windows).")
checks.assert_close(distinct_n([[], [4, 4], [4]], 2), 1.0, atol=1e-12, name="distinct_n with empty and short sequences among others")
checks.assert_error_boundary(ValueError, lambda n: distinct_n([[1, 2]], n), raises=(0, -1, -2), allowed=(1,),
                             name="distinct_n's n", hint="Raise ValueError for n < 1.")
print("distinct_n: hidden edge tests passed")
### END HIDDEN TESTS

# %% [markdown] id="nb13-025"
# ## 4. A small GPT to decode from
#
# The experiments need a model that has learned something. Notebook 09 does not save the GPT it trains, so this
# notebook trains its own: a `TinyGPT` (`utils.tiny_gpt`: a decoder-only transformer with learned positions, Pre-LN
# blocks and a head tied to the embedding) of 2 layers and width 64, on the characters of the course's offline corpus
# (Python's help topics). A smaller one, 1 layer of width 32 trained for fewer steps, will be the draft model of
# section 7. The cell trains both in about 25 CPU seconds. To decode from another model, wrap it:
# `RecomputedCache(model, block_size)` gives `beam_search` the cache interface, and `LogitsOnly(model)` gives
# `speculative_sample` the logits of a model that returns `(logits, caches)`, as `TinyGPT` does.

# %% id="nb13-026"
text = corpus.python_docs()
train_text, val_text = corpus.train_validation_split(text, 0.1)
chars = sorted(set(text))
stoi = {c: i for i, c in enumerate(chars)}


def encode(s):
    return torch.tensor([stoi[c] for c in s])


def decode(ids):
    return "".join(chars[i] for i in ids)


train_ids, val_ids = encode(train_text), encode(val_text)
BLOCK = 64


def train_char_gpt(d_model, n_layer, n_head, steps, seed, batch_size=32, lr=3e-3):
    """A TinyGPT trained on random windows of the training text with AdamW (warm-up, then cosine decay)."""
    torch.manual_seed(seed)
    model = TinyGPT(len(chars), d_model, n_head, n_layer, BLOCK, seed=seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    batches = torch.Generator().manual_seed(seed)
    for step in range(steps):
        starts = torch.randint(0, len(train_ids) - BLOCK - 1, (batch_size,), generator=batches)
        x = torch.stack([train_ids[s:s + BLOCK] for s in starts])
        y = torch.stack([train_ids[s + 1:s + BLOCK + 1] for s in starts])
        for group in optimizer.param_groups:
            group["lr"] = lr * min(1.0, (step + 1) / 50) * 0.5 * (1 + math.cos(math.pi * step / steps))
        logits, _ = model(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    model.eval()
    model.calls.clear(), model.modes.clear()          # TinyGPT's per-call records: count only what comes next
    return model


def validation_loss(model, windows=64):
    starts = torch.linspace(0, len(val_ids) - BLOCK - 1, windows).long()
    x = torch.stack([val_ids[s:s + BLOCK] for s in starts])
    y = torch.stack([val_ids[s + 1:s + BLOCK + 1] for s in starts])
    with torch.no_grad():
        logits, _ = model(x)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1)).item()


started = time.process_time()
gpt = train_char_gpt(64, 2, 4, 1000, seed=0)
draft_gpt = train_char_gpt(32, 1, 2, 300, seed=1)
print(f"{len(chars)} characters; trained in {time.process_time() - started:.0f} CPU seconds")
gpt_loss, draft_loss, uniform = validation_loss(gpt), validation_loss(draft_gpt), math.log(len(chars))
print(f"held-out loss: GPT {gpt_loss:.2f} nats per character, draft {draft_loss:.2f}, uniform guess {uniform:.2f}")
claims.claim(f"The GPT predicts held-out characters far better than chance ({gpt_loss:.2f} nats against {uniform:.2f}) "
             f"and better than the draft ({draft_loss:.2f})", holds=gpt_loss < uniform / 2 and gpt_loss < draft_loss)

# %% [markdown] id="nb13-027"
# ## 5. Quality against diversity
#
# Twelve prompts of 16 characters from the held-out text, and 48 new characters from each decoder:
#
# * **search**: greedy (your `beam_search` with width 1), beam search with widths 2, 4 and 8 (no EOS here: every
#   continuation has 48 characters, so the length penalty does not matter; it is set to 0), and greedy with your
#   `no_repeat_ngram` forbidding any repeated 4-gram;
# * **sampling**: temperature 0.7 and 1.0, and, if your notebook 08 sits beside this one with its visible tests
#   passing, its `sample_next_token` with top-k (k = 10) and top-p (p = 0.9) at temperature 1.
#
# **Quality** is the mean log-probability per character that the model itself gives the continuation (higher is more
# likely text). **Diversity** is `distinct_n` with $n = 2$ over the twelve continuations pooled; **repetition** within
# a text is $1 -$ distinct-4 of each continuation alone, averaged.
#
# **Predict before you run.** Order the decoders by quality, and then by diversity. Does a wider beam give more
# likely text? Will greedy decoding repeat itself?
#
# <details><summary>Answer</summary>
#
# The two orders are nearly reversed. Search gives the most likely text, and wider beams usually find more likely
# continuations; sampling at temperature 1 the least likely, with lower temperature in between. Diversity goes the
# other way: search produces few distinct bigrams and repeats itself within a text (greedy and beam fall into
# loops), while sampling at temperature 1 rarely repeats a 4-gram. Forbidding repeated 4-grams removes the loops by construction but
# costs likelihood: the model must leave the continuation it likes best.
#
# </details>

# %% id="nb13-028"
PROMPT, NEW, PROMPTS = 16, 48, 12
prompts = [val_ids[s:s + PROMPT] for s in torch.linspace(0, len(val_ids) - PROMPT - 1, PROMPTS).long()]
cached_gpt = RecomputedCache(gpt, BLOCK).eval()     # notebook 10's cache interface around the trained GPT
your_08 = None
try:
    from utils import your_parts
    your_08 = your_parts.load("../08_train_gpt/train_gpt.ipynb", "sample_next_token",
                              instead="temperature sampling only (no top-k and top-p rows)")
except Exception as error:                      # any failure to load only removes two rows of the table
    print(f"notebook 08 not loaded ({error}): no top-k and top-p rows")


def sample_text(prompt, generator, temperature=1.0, no_repeat=None, top_k=None, top_p=None):
    """NEW characters after prompt, one at a time from the GPT (temperature 0: the argmax)."""
    seq = prompt.clone()
    with torch.no_grad():
        for _ in range(NEW):
            logits = gpt(seq[None])[0][0, -1]
            if no_repeat is not None:
                logits = no_repeat_ngram(logits, seq, no_repeat)
            if top_k is not None or top_p is not None:
                token = your_08["sample_next_token"](logits[None], temperature, top_k, top_p, generator)
                token = int(torch.as_tensor(token).reshape(-1)[0])
            elif temperature == 0:
                token = int(logits.argmax())
            else:
                token = int(torch.multinomial(torch.softmax(logits / temperature, dim=-1), 1, generator=generator))
            seq = torch.cat([seq, torch.tensor([token])])
    return seq


def mean_log_prob(seq):
    """The GPT's mean log-probability per character of seq's continuation (after the prompt)."""
    with torch.no_grad():
        logp = torch.log_softmax(gpt(seq[None])[0][0, :-1].double(), dim=-1)
    return logp[torch.arange(len(seq) - 1), seq[1:]][PROMPT - 1:].mean().item()


decoders = {"greedy": lambda p, g: beam_search(cached_gpt, p, 1, NEW, length_penalty=0.0)[0]}
for width in (2, 4, 8):
    decoders[f"beam {width}"] = lambda p, g, width=width: beam_search(cached_gpt, p, width, NEW, length_penalty=0.0)[0]
decoders["greedy, no repeated 4-gram"] = lambda p, g: sample_text(p, g, temperature=0, no_repeat=4)
for temperature in (0.7, 1.0):
    decoders[f"temperature {temperature}"] = lambda p, g, t=temperature: sample_text(p, g, temperature=t)
if your_08 is not None:
    decoders["top-k 10 (your 08)"] = lambda p, g: sample_text(p, g, top_k=10)
    decoders["top-p 0.9 (your 08)"] = lambda p, g: sample_text(p, g, top_p=0.9)

table, outputs = {}, {}
print(f"{'decoder':28} {'quality':>8} {'distinct-2':>11} {'repetition':>11}")
for name, decoder in decoders.items():
    generator = torch.Generator().manual_seed(0)
    outputs[name] = [decoder(p, generator) for p in prompts]
    continuations = [o[PROMPT:].tolist() for o in outputs[name]]
    quality = sum(mean_log_prob(o) for o in outputs[name]) / PROMPTS
    repetition = sum(1 - distinct_n([c], 4) for c in continuations) / PROMPTS
    table[name] = (quality, distinct_n(continuations, 2), repetition)
    print(f"{name:28} {quality:8.3f} {table[name][1]:11.3f} {repetition:11.3f}")

fig, ax = plt.subplots(figsize=(6.5, 4))
for name, (quality, diversity, _) in table.items():
    ax.scatter(diversity, quality, color="C0" if name.startswith(("greedy", "beam")) else "C1")
    ax.annotate(name, (diversity, quality), fontsize=8, xytext=(4, 2), textcoords="offset points")
ax.set_xlabel("diversity: distinct-2 over the 12 continuations")
ax.set_ylabel("quality: mean log-prob per character")
ax.set_title("Search (blue) and sampling (orange) on the trained GPT")
plt.show()

# %% [markdown] id="nb13-029"
# The claims below read the table. Then one prompt, printed with what greedy, beam search and sampling made of it.

# %% id="nb13-030"
search = ["greedy", "beam 2", "beam 4", "beam 8"]
samplers = ["temperature 0.7", "temperature 1.0"]
quality = {name: row[0] for name, row in table.items()}
diversity = {name: row[1] for name, row in table.items()}
repetition = {name: row[2] for name, row in table.items()}
claims.claim(f"Every beam gives more likely text than greedy (quality {quality['greedy']:.2f} for greedy, "
             f"{min(quality[n] for n in search[1:]):.2f} at worst for a beam), and greedy more likely than either "
             f"sampler ({max(quality[n] for n in samplers):.2f} at best)",
             holds=min(quality[n] for n in search[1:]) > quality["greedy"] > max(quality[n] for n in samplers))
claims.claim(f"Sampling at temperature 1 is the most diverse and the least likely: distinct-2 {diversity['temperature 1.0']:.2f} "
             f"against {max(diversity[n] for n in search):.2f} at most for search, quality {quality['temperature 1.0']:.2f}",
             holds=diversity["temperature 1.0"] >= max(diversity.values()) - 1e-12
             and quality["temperature 1.0"] <= min(quality.values()) + 1e-12)
claims.claim(f"Search repeats itself: {min(repetition[n] for n in search):.0%} to {max(repetition[n] for n in search):.0%} "
             f"of a continuation's 4-grams are repeats for greedy and beam search, {repetition['temperature 1.0']:.0%} at "
             f"temperature 1, and {repetition['greedy, no repeated 4-gram']:.0%} with no_repeat_ngram (at a quality of "
             f"{quality['greedy, no repeated 4-gram']:.2f} instead of greedy's {quality['greedy']:.2f})",
             holds=min(repetition[n] for n in search) > 2 * repetition["temperature 1.0"]
             and repetition["greedy, no repeated 4-gram"] == 0 and quality["greedy, no repeated 4-gram"] < quality["greedy"])
sums = {width: [beam_search(cached_gpt, p, width, NEW, length_penalty=0.0)[1] for p in prompts] for width in (1, 8)}
better = sum(s8 > s1 + 1e-9 for s1, s8 in zip(sums[1], sums[8]))
claims.claim(f"Beam search of width 8 finds a more likely continuation than greedy on {better} of {PROMPTS} prompts"
             + ("" if better == PROMPTS else f", and a less or equally likely one on {PROMPTS - better}: the beam can "
                "prune the path greedy takes"), holds=better > PROMPTS / 2)

# %% id="nb13-031"
example = max(range(PROMPTS), key=lambda i: sum(c.isalpha() for c in decode(prompts[i].tolist())))   # a prose prompt
print(f"prompt: {decode(prompts[example].tolist())!r}\n")
for name in ("greedy", "beam 8", "greedy, no repeated 4-gram", "temperature 0.7", "temperature 1.0"):
    print(f"{name:28} {decode(outputs[name][example][PROMPT:].tolist())!r}")

# %% [markdown] id="nb13-039"
# ## 6. Search errors and model errors
#
# When a decoder's output is wrong, either the search failed (the model gives the right answer a higher probability
# than the output, but the search did not find it: a **search error**) or the model did (it prefers the wrong output:
# a **model error**). A wider beam can fix only the first kind. To see which kind dominates, a task with one right
# answer: reverse a string of digits. A `TinyGPT` reads `digits SEP` and writes the digits reversed, then EOS; it
# trains on 1 to 7 digits (about 10 CPU seconds) and is tested on 20 fresh strings of each length from 1 to 10, with
# greedy decoding and with your `beam_search` of width 4 (EOS given, `length_penalty=0`: the raw sum).
#
# **Predict before you run.** Where will beam search beat greedy decoding: at short lengths, at the longest trained
# lengths, or past the training lengths? When both fail, is it mostly the search or the model?
#
# <details><summary>Answer</summary>
#
# Nowhere, or almost: on a task with one right answer a trained model is confident at every step, and the sequence
# greedy finds is the one beam search finds. Both are perfect at short lengths and both fail on strings longer than any
# in training, where the model's positions and its learned habit of stopping do not reach. Those failures are model
# errors: the right reversal has a lower probability than the output, so no search, however wide, would return it.
# Beam search pays off where the model spreads its probability over several continuations, as on the text of
# section 5.
#
# </details>

# %% id="nb13-040"
SEP, EOS, DIGITS_V, TRAIN_MAX, TEST_MAX = 10, 11, 12, 7, 10
REVERSE_BLOCK = 2 * TEST_MAX + 2


def reversal(digits):
    return digits + [SEP] + digits[::-1] + [EOS]


def train_reverser(steps=600, batch_size=64, lr=3e-3, seed=2):
    """A TinyGPT trained on reversals of 1 to TRAIN_MAX digits, the loss on the answer and its EOS only."""
    torch.manual_seed(seed)
    model = TinyGPT(DIGITS_V, 48, 4, 2, REVERSE_BLOCK, seed=seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    g = torch.Generator().manual_seed(seed)
    for step in range(steps):
        lengths = torch.randint(1, TRAIN_MAX + 1, (batch_size,), generator=g).tolist()
        rows = [reversal(torch.randint(0, 10, (n,), generator=g).tolist()) for n in lengths]
        x = torch.full((batch_size, 2 * TRAIN_MAX + 2), EOS)
        y = torch.full_like(x, -100)                 # -100: ignored by cross_entropy (the digits, the padding)
        for i, row in enumerate(rows):
            x[i, :len(row)] = torch.tensor(row)
            y[i, row.index(SEP):len(row) - 1] = torch.tensor(row[row.index(SEP) + 1:])
        for group in optimizer.param_groups:
            group["lr"] = lr * 0.5 * (1 + math.cos(math.pi * step / steps))
        logits, _ = model(x)
        loss = F.cross_entropy(logits.reshape(-1, DIGITS_V), y.reshape(-1), ignore_index=-100)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    return model.eval()


def answer_log_prob(model, prompt, answer):
    with torch.no_grad():
        logp = torch.log_softmax(model(torch.tensor([prompt + answer]))[0][0].double(), dim=-1)
    return sum(logp[len(prompt) - 1 + i, token].item() for i, token in enumerate(answer))


reverser = train_reverser()
cached_reverser = RecomputedCache(reverser, REVERSE_BLOCK).eval()
tests = torch.Generator().manual_seed(99)
exact = {1: [], 4: []}
search_errors = model_errors = 0
for length in range(1, TEST_MAX + 1):
    right = {1: 0, 4: 0}
    for _ in range(20):
        digits = torch.randint(0, 10, (length,), generator=tests).tolist()
        prompt, want = digits + [SEP], digits[::-1] + [EOS]
        for width in (1, 4):
            out, _ = beam_search(cached_reverser, torch.tensor(prompt), width, length + 1, eos_id=EOS, length_penalty=0.0)
            got = out[len(prompt):].tolist()
            right[width] += got == want
            if width == 4 and got != want:
                if answer_log_prob(reverser, prompt, want) > answer_log_prob(reverser, prompt, got):
                    search_errors += 1
                else:
                    model_errors += 1
    exact[1].append(right[1] / 20), exact[4].append(right[4] / 20)
    print(f"{length:2} digits: exact match greedy {right[1] / 20:.0%}, beam 4 {right[4] / 20:.0%}")
fig, ax = plt.subplots(figsize=(6, 3.2))
ax.plot(range(1, TEST_MAX + 1), exact[1], "o-", label="greedy")
ax.plot(range(1, TEST_MAX + 1), exact[4], "x--", label="beam 4")
ax.axvline(TRAIN_MAX + 0.5, color="grey", lw=0.8)
ax.set_xlabel("digits (trained on 1 to 7)")
ax.set_ylabel("exact match")
ax.legend()
plt.show()
trained = range(TRAIN_MAX)
claims.claim(f"Beam search of width 4 is never behind greedy decoding and at most one string in 20 ahead at any length "
             f"(greedy {sum(exact[1][i] for i in trained) / TRAIN_MAX:.0%} and beam {sum(exact[4][i] for i in trained) / TRAIN_MAX:.0%} "
             f"over the trained lengths, both {max(exact[1][TRAIN_MAX:] + exact[4][TRAIN_MAX:]):.0%} at best past them)",
             holds=all(0 <= b - g <= 0.05 + 1e-9 for g, b in zip(exact[1], exact[4])))
claims.claim(f"{model_errors} of beam search's {model_errors + search_errors} failures are model errors (the right reversal "
             f"is less likely under the model than the output), {search_errors} search errors",
             holds=model_errors + search_errors > 0 and model_errors >= 0.9 * (model_errors + search_errors))

# %% [markdown] id="nb13-032"
# ## 7. Speculative decoding, measured
#
# The trained GPT is the target and the small one the draft. For each $\gamma$ the cell samples 48 characters after
# each of the twelve prompts with your `speculative_sample`, counts the target's forward passes (`TinyGPT` records its
# calls), and measures $\alpha$ on the same text: $\sum_x \min(p(x), q(x))$ at every generated position, averaged.
# The formula's tokens per target call is then compared with the count. They need not agree exactly: the last round
# of each sample is cut short (it proposes only what is still wanted), and $\alpha$ varies from position to position,
# which the formula ignores.
#
# **Predict before you run.** The draft is much worse than the target (compare their held-out losses above). Will
# most of its proposals be accepted? How many tokens per target call at $\gamma = 8$: about 1, about 2, or about 9?
#
# <details><summary>Answer</summary>
#
# About half of the proposals are accepted: even a weak model agrees with a better one on the easy characters (a
# space after a word, the letters that finish a common word). With $\alpha$ near 0.5 the formula gives at most
# $1/(1 - \alpha) = 2$ tokens per call however large $\gamma$ is: the chance that 8 proposals in a row survive is
# $0.5^8$. So about 2, and longer proposals mostly waste draft calls.
#
# </details>

# %% id="nb13-033"
target, draft = LogitsOnly(gpt), LogitsOnly(draft_gpt)
rows = []
for gamma in (1, 2, 4, 8):
    gpt.calls.clear(), draft_gpt.calls.clear()
    started = time.process_time()
    samples = [speculative_sample(target, draft, p, gamma, NEW, torch.Generator().manual_seed(i)) for i, p in enumerate(prompts)]
    seconds = time.process_time() - started
    target_calls, draft_calls = len(gpt.calls), len(draft_gpt.calls)
    with torch.no_grad():
        overlap = [torch.minimum(torch.softmax(gpt(s[None])[0][0].double(), -1),
                                 torch.softmax(draft_gpt(s[None])[0][0].double(), -1)).sum(-1)[PROMPT - 1:-1] for s in samples]
    alpha = torch.cat(overlap).mean().item()
    measured, formula = NEW * PROMPTS / target_calls, (1 - alpha ** (gamma + 1)) / (1 - alpha)
    rows.append((gamma, alpha, measured, formula, target_calls, draft_calls, seconds))
    print(f"gamma {gamma}: alpha {alpha:.2f}, tokens per target call {measured:.2f} (formula {formula:.2f}), "
          f"{target_calls} target and {draft_calls} draft calls, {seconds:.2f} CPU s")
started = time.process_time()
for i, p in enumerate(prompts):
    sample_text(p, torch.Generator().manual_seed(i))
plain_seconds = time.process_time() - started
print(f"sampling from the target alone: {NEW * PROMPTS} target calls, {plain_seconds:.2f} CPU s")
claims.claim("Measured tokens per target call are within 10% of the formula (1 - alpha^(gamma+1)) / (1 - alpha) at every "
             "gamma: " + ", ".join(f"{m:.2f} against {f:.2f}" for _, _, m, f, *_ in rows),
             holds=all(abs(m - f) <= 0.1 * f for _, _, m, f, *_ in rows))
claims.claim(f"Speculative sampling needs fewer target calls than sampling from the target alone: {min(r[4] for r in rows)} "
             f"to {max(r[4] for r in rows)} instead of {NEW * PROMPTS}", holds=max(r[4] for r in rows) < NEW * PROMPTS)

# %% [markdown] id="nb13-034"
# The CPU seconds above are printed, not claimed: here the draft costs nearly as much per call as the target (both
# are tiny, and each call runs the whole sequence again, with no KV cache), so speculative sampling is not faster on
# this machine. The gain needs a target whose forward pass costs many times the draft's (a target of tens of billions
# of parameters and a draft of a few billion), with the target's pass over $\gamma + 1$ tokens costing about what one
# token costs.
#
# **The distribution.** The proof says the output follows the target exactly, whatever the draft. The next cell
# checks it on the first new character after one prompt: 2,000 seeded draws with $\gamma = 1$ and 2 new characters
# (so the first comes from the draft's proposal or the residual), their frequencies against the target's $p$ and
# the draft's $q$.
#
# **Predict before you run.** The draft's $q$ differs from $p$ visibly. Will the frequencies follow $p$, follow $q$,
# or land in between?
#
# <details><summary>Answer</summary>
#
# They follow $p$, within the noise of 2,000 draws: accepting with $\min(1, p/q)$ removes the draft's excess where
# $q > p$, and the residual adds exactly the missing mass where $q < p$.
#
# </details>

# %% id="nb13-035"
DRAWS = 2000
prompt = prompts[example]
seen = draw_counts(speculative_sample, target, draft, prompt, 1, 2, 0, DRAWS)
first = torch.zeros(len(chars), dtype=torch.float64)
for key, count in seen["counts"].items():
    first[int(key.split()[0])] += count
first /= DRAWS
with torch.no_grad():
    p = torch.softmax(gpt(prompt[None])[0][0, -1].double(), -1)
    q = torch.softmax(draft_gpt(prompt[None])[0][0, -1].double(), -1)
shown = torch.argsort(p + q, descending=True)[:10]
x = torch.arange(len(shown))
fig, ax = plt.subplots(figsize=(7, 3.5))
ax.bar(x - 0.27, p[shown], 0.27, label="target p")
ax.bar(x, first[shown], 0.27, label=f"speculative, {DRAWS} draws")
ax.bar(x + 0.27, q[shown], 0.27, label="draft q")
ax.set_xticks(x, [repr(chars[i]) for i in shown.tolist()])
ax.set_ylabel("probability of the first new character")
ax.legend()
plt.show()
tv_sample, tv_draft = 0.5 * (first - p).abs().sum().item(), 0.5 * (q - p).abs().sum().item()
print(f"total variation from p: speculative samples {tv_sample:.3f}, draft {tv_draft:.3f}")
claims.claim(f"The speculative samples follow the target, not the draft: their total variation distance from p is "
             f"{tv_sample:.3f}, the draft's {tv_draft:.3f}", holds=tv_sample < tv_draft / 3)

# %% [markdown] id="nb13-036"
# ## 8. The trade-off, answered
#
# The source chapter ends by asking how to generate text from the predictions, and about "the trade-offs between
# diversity and quality in autoregressive generation". The table of section 5 answers it for this model. Search
# maximises the model's probability and gets the most likely text, and that text loops, because for a language model
# a repetition is a likely continuation. Sampling at temperature 1 reproduces the model's own variety and accepts its
# unlikely choices too. A lower temperature (and top-k or top-p, which cut off the unlikely tail) trades some of the
# diversity back for likelihood; forbidding repeated n-grams cuts the loops out of search at a price in likelihood. Which point to choose depends on the task: when one
# answer is right (translation, a copy, code with one correct completion), search; when many are fine (stories,
# dialogue), sampling with some truncation. Speculative decoding changes none of this: it is a way to compute the
# same samples with fewer calls to the large model.

# %% id="nb13-037"
best_quality = max(table, key=lambda n: table[n][0])
most_diverse = max(table, key=lambda n: table[n][1])
claims.claim(f"No decoder is best at both: the most likely text comes from {best_quality} ({table[best_quality][0]:.2f}, "
             f"distinct-2 {table[best_quality][1]:.2f}), the most diverse from {most_diverse} "
             f"(distinct-2 {table[most_diverse][1]:.2f}, quality {table[most_diverse][0]:.2f})",
             holds=best_quality != most_diverse)
(greedy_q, greedy_d, _), (warm_q, warm_d, _), (hot_q, hot_d, _) = (table[n] for n in ("greedy", "temperature 0.7",
                                                                                       "temperature 1.0"))
between = greedy_q > warm_q > hot_q and greedy_d < warm_d < hot_d
claims.claim(f"Temperature 0.7 lies between greedy and temperature 1 on both axes: quality {table['temperature 0.7'][0]:.2f}, "
             f"distinct-2 {table['temperature 0.7'][1]:.2f}", holds=between)

# %% [markdown] id="nb13-038"
# ## What you built
#
# A batched beam search that keeps finished hypotheses aside, normalises by length, breaks ties by a stated rule and
# reorders its KV cache by the surviving beams' parents; speculative sampling whose output follows the target model
# exactly while it calls the target once per round; a no-repeat-n-gram rule; and distinct-n. With the sampling loop of
# notebook 01, the samplers of 08, the cached greedy loop of 10 and the batched greedy decoder of 12, that is the
# decoding side of the course.
