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

# %% [markdown] id="486c9d95"
# # 03 · Attention, by hand and in code
#
# After notebook 02 a text is a sequence of vectors, one per token. Each vector still knows only its own
# token: *mat* has the same vector in "the cat sat on the mat" and in "the mat is red". **Attention** is the
# step where every token looks at the others and takes in what it needs. It is the only operation in a
# transformer that moves information between positions, and it is small enough to do by hand.
#
# This notebook works through the classic attention examples with numbers you can check on paper, then
# turns them into code:
#
# 0. **Why attention replaced recurrence**: an LSTM against one attention layer on a long-range
#    recall task, and their time against the sequence length, measured.
# 1. **Soft attention in three steps**: scores, softmax, weighted sum, and why this is a
#    *differentiable dictionary look-up*.
# 2. **Three tokens, cat / sat / mat**: the score table, the weights, the outputs, what the scale
#    $1/\sqrt{d_k}$ changes, and the causal mask.
# 3. **Four positions in matrix form**, $d_k = 3$.
# 4. **One query, three keys**: scaling, exponentiation and normalisation, step by step.
# 5. **Five tokens, "cat sat on the mat"**: masked scores, the attention matrix, $O = AV$, and the
#    residual update.
# 6. **Exercises**: attention with a mask for batches of sequences and heads, the causal mask, and the
#    mask for a batch of prompts of different lengths.
# 7. **Scale**: why the $T \times T$ matrix is the problem at long context, measured, and what
#    FlashAttention changes.
#
# | # | exercise | what it does | points |
# |---|---|---|---|
# | A | `first_disagreement` | the first number of a printed table that its rounding does not explain (an audit) | 1 + 2 + 1 |
# | 1 | `scaled_dot_product_attention` | $\operatorname{softmax}(QK^\top/\sqrt{d_k})\,V$ with an optional boolean mask, any batch shape | 1 + 2 + 1 |
# | 2 | `causal_mask` | the look-back-only mask for a sequence of length $T$ | 1 + 2 |
# | 3 | `left_padded_causal_mask` | the mask for a batch of prompts of different lengths | 1 + 2 + 1 |
#
# Worked examples in books and slides print their numbers rounded, usually to two decimals. Section 2
# shows such a printed table first and asks you to audit it with a small function of your own (exercise
# A); after that, every such number is printed three ways: as it is usually printed, ours rounded the same
# way, and ours exactly. Where they disagree the text says why. It happens five times: twice a rounding
# shortcut (outputs computed from weights rounded first, exponentials from rounded scores), once a slip in a
# well-known walkthrough (an entry of $QK^\top$), once a printed matrix that neither of the printed tables it
# comes from reproduces (its unrounded scores are not shown; the difference is one unit of the last digit), and
# once a step-by-step update that lets a token attend to the future (section 5).
#
# **Time.** About 15 seconds of CPU time for the whole notebook, measured on one core of a busy 2-core machine,
# about what a 2-core laptop takes; the longest cell, section 0's two models at five distances, takes about 10
# seconds. On a GPU: untimed (nothing here needs one).
#
# **How the exercises work.** Each exercise is a function with a docstring that states what goes in and
# what comes out. Replace `raise NotImplementedError()` with your code, then run the test cell below it:
# its messages say what was expected and what came back. When the notebook is graded, further hidden
# tests check the same function on new inputs, so make it correct in general, not just on the examples
# shown. Run the cells in order. Questions marked **Predict first** have their answer folded under
# *Answer*: work it out before you open it.

# %% id="4b41042a" jupyter={"source_hidden": true} nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
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

# %% id="25b988af"
# %matplotlib inline
import math
import time

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from IPython.display import Markdown, display

from utils import claims, plotting

torch.set_printoptions(precision=4, sci_mode=False)


def fmt(x, decimals):
    """x rounded to `decimals` places, with no minus sign on a zero."""
    text = f"{x:.{decimals}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def against_printed(label, printed, exact, decimals=2):
    """One line: the numbers as usually printed, ours rounded the same way, and ours in full."""
    exact = [float(x) for x in torch.as_tensor(exact, dtype=torch.float64).flatten()]
    printed = [float(p) for p in (printed if isinstance(printed, (list, tuple)) else [printed])]
    theirs = " ".join(fmt(p, decimals) for p in printed)
    ours = " ".join(fmt(x, decimals) for x in exact)
    verdict = "same" if theirs == ours else "DIFFERENT"
    print(f"{label:<34} printed: {theirs:<26} ours: {ours:<26} exact: {' '.join(f'{x:.6f}' for x in exact)}  {verdict}")


def show_matrix(matrix, rows, cols, decimals=2, corner=""):
    """Display a small matrix as a table with labelled rows (queries) and columns (keys); -inf as −∞."""
    def entry(x):
        return "−∞" if x == -math.inf else fmt(x, decimals)
    lines = [f"| {corner} | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for name, row in zip(rows, torch.as_tensor(matrix).tolist()):
        lines.append(f"| **{name}** | " + " | ".join(entry(x) for x in row) + " |")
    display(Markdown("\n".join(lines)))


# %% [markdown] id="b0a1c001"
# ## 0. Before attention: recurrence and its bottleneck
#
# Before transformers, sequence models were **recurrent neural networks** (RNNs, and their gated form, the
# LSTM). An RNN reads the tokens one at a time and keeps a single state vector of fixed size $d$:
# $h_t = f(h_{t-1}, x_t)$. That design has two costs, and attention removes both:
#
# * **One vector holds the whole past.** Whatever the model knows about token 1 when it reaches token $t$
#   must have survived $t - 1$ updates of $h$, each of which also has to make room for the new token. The
#   gradient that teaches the model to keep it must travel back through the same $t - 1$ steps, and shrinks
#   (or explodes) by a factor at every step. Attention keeps one vector *per position* and lets position $t$
#   read position 1 directly: the path between any two positions has length 1.
# * **The steps cannot run in parallel.** $h_t$ needs $h_{t-1}$, so a layer takes $T$ sequential steps
#   whatever the hardware. Attention computes all positions at once with a few matrix products; the price is
#   the $T \times T$ matrix of scores (section 9).
#
# | layer | work | sequential steps | path between two positions | memory for the context |
# |---|---|---|---|---|
# | recurrent (RNN, LSTM) | $O(T d^2)$ | $O(T)$ | $O(T)$ | $O(d)$: one state |
# | self-attention | $O(T^2 d)$ | $O(1)$ | $O(1)$ | $O(T d)$ vectors, plus $T^2$ weights per head |
#
# Both rows can be measured in a few seconds. **The experiment**: a sequence of $T$ random tokens from a
# vocabulary of 8; the model must output the **first** token after reading the last one, so the answer lies
# $T - 1$ steps back. An LSTM with a state of size 32 reads the sequence and predicts from its last state;
# one attention layer of the same width (32), with learned position vectors, lets the last position attend
# to all of them and predicts from what it reads. Both are trained the same way (Adam, the same steps and
# batches) for each distance, then tested on 1000 new sequences.
#
# **Predict first.** Which model's accuracy depends on the distance?
#
# <details><summary>Answer</summary>
#
# The LSTM's: the first token must survive $T - 1$ updates of its state, and the gradient that teaches it to
# keep it must come back through the same steps, so with a fixed budget it fails beyond some distance and falls
# to chance (1/8). Attention's does not: the last position reads position 1 directly, whatever $T$ is.
# </details>

# %% id="b0a1c002"
from torch import nn

V_recall, width, recall_steps, recall_batch = 8, 32, 300, 64


class LSTMRecall(nn.Module):
    """Reads the tokens one by one; predicts the first token from its last state."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(V_recall, width)
        self.lstm = nn.LSTM(width, width, batch_first=True)
        self.out = nn.Linear(width, V_recall)

    def forward(self, tokens):
        states, _ = self.lstm(self.embed(tokens))
        return self.out(states[:, -1])


class AttentionRecall(nn.Module):
    """One attention layer: the last position's query against every position's key."""

    def __init__(self, max_len):
        super().__init__()
        self.embed = nn.Embedding(V_recall, width)
        self.position = nn.Embedding(max_len, width)
        self.query, self.key, self.value = nn.Linear(width, width), nn.Linear(width, width), nn.Linear(width, width)
        self.out = nn.Linear(width, V_recall)

    def forward(self, tokens):
        h = self.embed(tokens) + self.position(torch.arange(tokens.shape[1]))
        weights = torch.softmax(self.query(h[:, -1:]) @ self.key(h).transpose(-2, -1) / math.sqrt(width), dim=-1)
        return self.out((weights @ self.value(h))[:, 0])


def recall_accuracy(model, T, seed):
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(recall_steps):
        tokens = torch.randint(0, V_recall, (recall_batch, T), generator=generator)
        loss = F.cross_entropy(model(tokens), tokens[:, 0])       # the answer: the first token
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    test = torch.randint(0, V_recall, (1000, T), generator=torch.Generator().manual_seed(seed + 1))
    with torch.no_grad():
        return (model(test).argmax(dim=-1) == test[:, 0]).float().mean().item()


threads = torch.get_num_threads()
torch.set_num_threads(1)                 # small matrices: one thread is faster and the timings steadier
print(f"chance: 1/{V_recall} = {1 / V_recall:.3f};  {recall_steps} Adam steps of {recall_batch} sequences per model")
recall = {}
for T in [2, 10, 20, 30, 60]:
    torch.manual_seed(T)
    lstm_model, attention_model = LSTMRecall(), AttentionRecall(T)
    recall[T] = (recall_accuracy(lstm_model, T, seed=T), recall_accuracy(attention_model, T, seed=T))
    print(f"T = {T:>2} (answer {T - 1:>2} steps back): LSTM accuracy {recall[T][0]:.3f}   attention accuracy {recall[T][1]:.3f}")
print(f"parameters: LSTM {sum(p.numel() for p in lstm_model.parameters()):,}, "
      f"attention {sum(p.numel() for p in attention_model.parameters()):,} (at T = 60, with its 60 position vectors)")
far = [T for T in recall if T >= 20]
claims.claim(f"One step back both models are perfect; from {far[0]} steps back on, the LSTM stays within "
             f"{max(abs(recall[T][0] - 1 / V_recall) for T in far):.3f} of chance while attention scores at least "
             f"{min(a for _, a in recall.values()):.3f} at every distance, with "
             f"{sum(p.numel() for p in attention_model.parameters()):,} parameters against the LSTM's "
             f"{sum(p.numel() for p in lstm_model.parameters()):,}",
             holds=min(recall[2]) >= 0.99 and all(a >= 0.99 for _, a in recall.values())
             and all(recall[T][0] < 1 / V_recall + 0.1 for T in far)
             and sum(p.numel() for p in attention_model.parameters()) < sum(p.numel() for p in lstm_model.parameters()))


# %% [markdown] id="b0a1c003"
# With the answer one step back both models are perfect. As the distance grows, the LSTM falls to chance
# within this budget while the attention layer stays perfect, with fewer parameters. LSTMs were designed to
# carry information over long gaps, and with more training or tuning one may learn these distances too; what
# the experiment measures is what distance costs each design on equal terms. For attention, position 1 is
# exactly as far from the last position as position $T - 1$ is.
#
# **The other columns of the table: time.** Below, one forward and backward pass through each layer alone
# (no training), one sequence, width 32, for growing $T$ (the best CPU time of 5 runs on one thread), and the growth
# exponent fitted over the longer lengths: 1 for linear, 2 for quadratic.

# %% id="b0a1c004"
def step_time(layer, T, repeats=5):
    """Best CPU time of one forward + backward pass on one sequence of length T (CPU time of this process, not
    the clock's: other programs running meanwhile do not count)."""
    x = torch.randn(1, T, width, requires_grad=True)
    best = math.inf
    for _ in range(repeats):
        start = time.process_time()
        layer(x).sum().backward()
        best = min(best, time.process_time() - start)
    return best


lstm_layer = nn.LSTM(width, width, batch_first=True)
q_proj, k_proj, v_proj = nn.Linear(width, width), nn.Linear(width, width), nn.Linear(width, width)
layers = {
    "LSTM": lambda x: lstm_layer(x)[0],
    "self-attention": lambda x: torch.softmax(q_proj(x) @ k_proj(x).transpose(-2, -1) / math.sqrt(width), dim=-1) @ v_proj(x),
}
lengths = [64, 128, 256, 512, 1024, 2048]
times = {name: [step_time(layer, T) for T in lengths] for name, layer in layers.items()}
torch.set_num_threads(threads)
print("      T  " + "".join(f"{name:>22}" for name in times))
for i, T in enumerate(lengths):
    print(f"{T:>7}  " + "".join(f"{times[name][i] * 1e3:>19.2f} ms" for name in times))
exponents = {}
for name, values in times.items():
    # least-squares slope of log(time) against log(T), over T = 256 ... 2048
    logs = [(math.log(T), math.log(t)) for T, t in zip(lengths, values) if T >= 256]
    mean_x, mean_y = sum(x for x, _ in logs) / len(logs), sum(y for _, y in logs) / len(logs)
    exponents[name] = exponent = sum((x - mean_x) * (y - mean_y) for x, y in logs) / sum((x - mean_x) ** 2 for x, _ in logs)
    print(f"{name}: time grows like T^{exponent:.1f} over T = 256 ... {lengths[-1]}; "
          f"sequential steps per layer: {'T' if name == 'LSTM' else '1 (a few matrix products)'}")
claims.claim(f"The LSTM's time grows like T^{exponents['LSTM']:.1f}, attention's like T^{exponents['self-attention']:.1f}, "
             f"and at T = {lengths[-1]} attention is {times['self-attention'][-1] / times['LSTM'][-1]:.0f} times slower "
             f"on this CPU", holds=exponents["LSTM"] < 1.3 and exponents["self-attention"] > exponents["LSTM"] + 0.6
             and times["self-attention"][-1] > times["LSTM"][-1],
             why_it_may_not="timings on a busy machine vary")

# %% [markdown] id="b0a1c005"
# The measured growth follows the table: the LSTM's time grows about linearly in $T$, attention's about
# quadratically (the fitted exponent sits below 2 while the linear projections still weigh in, and can pass 2
# once the $T \times T$ matrices no longer fit in the processor's cache and each entry costs more), so on this
# CPU, which runs one or two things at a time, attention is the *slower* layer at long $T$. What the table's "sequential steps" column buys shows on parallel hardware: attention's $T^2$ work
# is a few large matrix products that a GPU spreads over thousands of units at once, while the LSTM's $T$
# steps must run one after the other however many units there are. That, and the path of length 1, is why
# attention replaced recurrence; the $T^2$ is the bill, and section 9 reads it.
#
# **Predict first (memory).** An RNN keeps one state of $d_\text{model}$ numbers for the whole past; a
# transformer layer keeps one vector of $d_\text{model}$ numbers per position. For which sequence length is
# the transformer's context memory 10 times the RNN's, with the same $d_\text{model}$? And what if the
# transformer also stores its attention weights, one $T \times T$ matrix (one head), with $d_\text{model} = 512$?
#
# <details><summary>Answer</summary>
#
# The ratio of the vectors alone is $T\,d_\text{model} / d_\text{model} = T$: ten times at $T = 10$, whatever
# $d_\text{model}$ is. With the weights it is $(T d_\text{model} + T^2) / d_\text{model}$, which grows
# quadratically; the cell below finds the lengths.
# </details>

# %% id="b0a1c006"
d_model = 512
for target in [10, 100, 1000]:
    only_vectors = next(T for T in range(1, 10**6) if T * d_model / d_model >= target)
    with_weights = next(T for T in range(1, 10**6) if (T * d_model + T * T) / d_model >= target)
    print(f"transformer context memory {target:>4} x the RNN's: T = {only_vectors} (vectors only), "
          f"T = {with_weights} (vectors + one {with_weights} x {with_weights} weight matrix, d_model = {d_model})")

# %% [markdown] id="93b71ba6"
# ## 1. Soft attention in three steps
#
# Start with a current state $s$ (say, the decoder of a translation model about to emit the next word)
# and a set of vectors $h_1, \dots, h_n$ (say, one per word of the source sentence). Soft attention is:
#
# 1. for every $i$, a score $e_i = \langle s, h_i \rangle$: how well does $h_i$ match what $s$ is after?
# 2. the softmax of the scores, $a = \operatorname{softmax}(e_1, \dots, e_n)$: positive **attention
#    weights** that sum to 1;
# 3. the weighted sum $x = \sum_i a_i h_i$.
#
# Here every $h_i$ does two jobs: it is compared with $s$, and it is what gets returned. Giving the two jobs
# to different vectors is the general form used everywhere since: a **query** $q$, **keys** $k_i$ and
# **values** $v_i$,
#
# $$
# e_i = \langle q, k_i \rangle, \qquad a = \operatorname{softmax}(e), \qquad x = \sum_{i} a_i\, v_i .
# $$
#
# **A differentiable dictionary look-up.** A Python `dict` finds the one key equal to the query and returns
# its value. Attention compares the query with *every* key, turns the similarities into weights, and
# returns a blend of all the values: a point in their convex hull, pulled towards the values whose keys
# match best. "Equal or not" becomes "how much", and that makes every step differentiable: the gradient
# of a loss reaches the query, the keys and the values, so a model can *learn* what to ask for (queries),
# what to advertise (keys) and what to hand over (values). A `dict` offers no gradient: a slightly
# different query finds either nothing or the same entry.
#
# **Predict first.** Three keys $k_1, k_2, k_3$ that are orthonormal (the rows of the identity), values
# 10, 20 and 60, and the query $q = \beta\, k_2$ that points at the second key. What does the soft look-up
# return for $\beta = 0$? And as $\beta$ grows?
#
# <details><summary>Answer</summary>
#
# For $\beta = 0$ every score is 0, the weights are uniform, and the result is the mean of the values,
# 30. The scores are $(0, \beta, 0)$, so as $\beta$ grows the weight of key 2, $e^\beta/(e^\beta + 2)$,
# tends to 1 and the result tends to 20: the hard look-up `table["k2"]`. The length of the query acts as
# an inverse temperature (notebook 01).
# </details>

# %% id="190bd42a"
keys = torch.eye(3, dtype=torch.float64)                         # k_1, k_2, k_3: orthonormal
values = torch.tensor([10.0, 20.0, 60.0], dtype=torch.float64)
table = {"k1": 10.0, "k2": 20.0, "k3": 60.0}
print(f'hard look-up:      table["k2"] = {table["k2"]}')
for beta in [0.0, 1.0, 3.0, 10.0]:
    query = beta * keys[1]
    e = keys @ query                          # step 1: one score per key
    a = torch.softmax(e, dim=0)               # step 2: a distribution over the keys
    x = a @ values                            # step 3: the weighted sum of the values
    print(f"soft, beta = {beta:>4}:  scores {e.tolist()}  weights {[round(w, 4) for w in a.tolist()]}  -> {x.item():.4f}")

# Differentiable: how the result changes when the query moves (a dict has no such thing).
query = (3.0 * keys[1]).requires_grad_()
(torch.softmax(keys @ query, dim=0) @ values).backward()
print(f"\nd result / d query at beta = 3: {[round(g, 4) for g in query.grad.tolist()]}")

# %% [markdown] id="b91e34e1"
# The gradient is $a_i (v_i - x)$ along key $i$: turning the query towards $k_3$ (value 60, above the current
# result 21.4) raises the result, towards $k_1$ or further along $k_2$ (values below 21.4) lowers it. Training
# uses exactly this signal to move queries and keys.
#
# ## 2. Three tokens: cat, sat, mat
#
# A favourite small example: the tokens *cat*, *sat*, *mat* with embedding dimension $d_\text{model} = 4$
# and head dimension $d_k = 2$. Every token's embedding $x_i$ (a row of $X$) is projected three times, by
# learned $4 \times 2$ matrices that are the same for every position:
#
# $$
# q_i = x_i W_Q \;\;\text{(query: what do I look for?)}, \qquad
# k_i = x_i W_K \;\;\text{(key: what do I offer?)}, \qquad
# v_i = x_i W_V \;\;\text{(value: what do I pass on?)}.
# $$
#
# The example is usually shown with $X$ and the projected $Q$, $K$, $V$ only. The matrices below are one
# choice that produces exactly those $Q$, $K$, $V$; it is not the only one (three tokens pin down only part
# of a $4 \times 2$ matrix).

# %% id="1fd040cc"
tokens3 = ["cat", "sat", "mat"]
X3 = torch.tensor([[1.0, 0.0, 1.0, 0.0],      # cat
                   [0.0, 1.0, 0.0, 1.0],      # sat
                   [1.0, 0.0, 0.5, 0.5]],     # mat
                  dtype=torch.float64)
W_Q = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0], [0.0, 0.0]], dtype=torch.float64)
W_K = torch.tensor([[0.0, 0.0], [0.0, 0.0], [1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
W_V = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
Q3, K3, V3 = X3 @ W_Q, X3 @ W_K, X3 @ W_V

# The projections as the example states them: q1 q2 | k1 k2 | v1 v2 for cat, sat, mat.
stated = torch.tensor([[1.0, 0.0, 1.0, 0.0, 2.0, 0.0],
                       [0.0, 1.0, 0.0, 1.0, 0.0, 2.0],
                       [1.0, 0.0, 0.5, 0.5, 1.5, 0.5]], dtype=torch.float64)
print("X W_Q, X W_K, X W_V give the stated Q, K, V:", torch.equal(torch.cat([Q3, K3, V3], dim=1), stated))
show_matrix(torch.cat([Q3, K3, V3], dim=1), tokens3, ["q₁", "q₂", "k₁", "k₂", "v₁", "v₂"], decimals=1)

# %% [markdown] id="300f6364"
# **Predict first.** Fill in the score table $s_{ij} = q_i \cdot k_j$ (rows: the query's token, columns:
# the key's token). Which key does *cat* match best?
#
# <details><summary>Answer</summary>
#
# $q_\text{cat} = (1, 0)$, so its scores are the first coordinates of the keys: 1.0 with *cat*, 0.0 with
# *sat*, 0.5 with *mat*. $q_\text{sat} = (0, 1)$ reads the second coordinates: 0.0, 1.0, 0.5. *mat* has the
# same query as *cat*, so the same row. *cat* matches itself best, then the other noun *mat*, and the
# verb *sat* not at all.
# </details>

# %% id="29be3d4a"
S3 = Q3 @ K3.T                   # S3[i, j] = q_i . k_j
show_matrix(S3, tokens3, tokens3, decimals=1, corner="q · k")

# %% [markdown] id="4b811207"
# The row of scores becomes a row of weights with the softmax, and the output of a token is the
# weighted sum of the value vectors $v_\text{cat} = (2, 0)$, $v_\text{sat} = (0, 2)$, $v_\text{mat} = (1.5, 0.5)$.
# This example is traditionally done **without** the scale $1/\sqrt{d_k}$: $\operatorname{softmax}(QK^\top)\,V$.
# We follow it first, then add the scale.
#
# **Predict first.** The weights of *cat*, from the scores $(1, 0, 0.5)$ (use $e \approx 2.718$,
# $e^{0.5} \approx 1.649$), and its output.
#
# <details><summary>Answer</summary>
#
# $(2.718, 1, 1.649)/5.367 = (0.506, 0.186, 0.307)$, and the output
# $0.506\,(2, 0) + 0.186\,(0, 2) + 0.307\,(1.5, 0.5) = (1.474, 0.526)$: mostly *cat* (first coordinate),
# with some *sat* and *mat* mixed in. Before attention the token carried only its own value $(2, 0)$; now
# it carries information about its context.
# </details>

# %% [markdown] id="a0d17a01"
# ### Audit the printed example
#
# This example is usually printed like this, unscaled, every number rounded to two decimals:
#
# | weights | cat | sat | mat | output |
# |---|---|---|---|---|
# | **cat** | 0.51 | 0.19 | 0.31 | (1.48, 0.53) |
# | **sat** | 0.19 | 0.51 | 0.31 | (0.84, 1.17) |
# | **mat** | 0.51 | 0.19 | 0.31 | |
#
# Each entry claims to be the exact value rounded to two places. Before reading on, decide: is every one of
# them? A rounded number is right when the exact value lies within half a unit of its last digit: 0.51 stands
# for anything in $[0.505, 0.515]$. (A value exactly half-way, such as 1.485, has two correct roundings, 1.48
# and 1.49.)
#
# ### Exercise A: `first_disagreement` (1 + 2 + 1 points)
#
# *Points: 1 visible, 2 hidden (tables of several lengths and precisions, lists and tensors), 1 hidden (edge
# cases: half-way values, the slack of exactly 1e-9, float32 tensors, the default `decimals`, empty tables, `None` and the
# error for unequal lengths).*
#
# Write the auditor: given the printed numbers and the exact ones, return the position of the first printed
# number that its rounding does not explain. The next cell runs it on the table above, recomputed.

# %% id="a0d17a02" nbgrader={"grade": false, "grade_id": "first_disagreement", "locked": false, "schema_version": 3, "solution": true, "task": false}
import torch


def first_disagreement(printed, exact, decimals=2):
    """Position of the first printed number that is not the exact value rounded to `decimals` places.

    Args:
        printed: a list of Python floats, the numbers as printed, each shown with `decimals` decimals.
        exact: a list of Python floats or a 1-D floating tensor: the recomputed values, in the same order.
        decimals: int >= 0, the number of decimals the printout shows (default 2).
    Returns:
        A Python int (counting from 0): the first index i where printed[i] differs from exact[i] by more
        than rounding explains, |printed[i] - exact[i]| > 0.5 * 10**-decimals + 1e-9. The 1e-9 absorbs the
        binary representation of decimals, so a value exactly half-way agrees with both of its roundings
        (1.485 printed as 1.48 or as 1.49). None (not -1) when every entry agrees, and for two empty lists.
        Neither argument is modified.
    Raises:
        ValueError if printed and exact have different lengths.
    """
    ### BEGIN SOLUTION
    exact = [float(x) for x in exact]
    if len(printed) != len(exact):
        raise ValueError(f"{len(printed)} printed numbers but {len(exact)} exact ones")
    half_unit = 0.5 * 10 ** -decimals + 1e-9
    for i, (shown, value) in enumerate(zip(printed, exact)):
        if abs(shown - value) > half_unit:
            return i
    return None
    ### END SOLUTION


# %% id="a0d17a03" nbgrader={"grade": true, "grade_id": "test_first_disagreement", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
import torch
from utils import checks, probes

checks.assert_equal(first_disagreement([1.0, 2.5, 3.14], [1.0, 2.5, 3.14159]), None,
                    name="first_disagreement of a correct table",
                    hint="3.14159 rounds to 3.14: nothing disagrees, so return None.")
checks.assert_equal(first_disagreement([1.0, 2.0, 3.0, 4.0], [1.0, 2.02, 3.5, 4.0]), 1,
                    name="first_disagreement([1.0, 2.0, 3.0, 4.0], [1.0, 2.02, 3.5, 4.0])",
                    hint="2.02 rounded to two decimals is 2.02, not 2.00: index 1 is the first (3.5 is the second).")
checks.assert_equal(first_disagreement([0.3, 0.7], torch.tensor([0.34, 0.76], dtype=torch.float64), decimals=1), 1,
                    name="first_disagreement with decimals=1",
                    hint="With one decimal, 0.34 rounds to 0.3 (agrees) and 0.76 to 0.8 (0.7 disagrees).")
checks.assert_equal(first_disagreement([0.2, 0.1], [0.2, 0.104]), None, name="first_disagreement, within half a unit",
                    hint="0.104 is within 0.005 of 0.10: that is what rounding to two decimals allows.")
checks.assert_raises(ValueError, first_disagreement, [1.0, 2.0], [1.0], name="first_disagreement with unequal lengths")

checks.assert_equal(first_disagreement([1.48, 1.49], [1.485, 1.485]), None, name="first_disagreement of a half-way value",
                    hint="1.485 is exactly half-way: 1.48 and 1.49 are both correct roundings. Compare |printed - exact| "
                         "with half a unit plus 1e-9 (the binary slack) instead of rounding the exact value yourself.")

# Neither list is modified: read them, don't consume them.
call = probes.traced_call(first_disagreement, [1.0, 2.0, 3.0], [1.0, 2.5, 3.0])
checks.assert_equal(call.args_after[0], [1.0, 2.0, 3.0], name="printed after first_disagreement([1.0, 2.0, 3.0], [1.0, 2.5, 3.0])",
                    hint="printed.pop(0), sort() or reverse() change the caller's list: index into it, or zip over it.")
checks.assert_equal(call.args_after[1], [1.0, 2.5, 3.0], name="exact after first_disagreement([1.0, 2.0, 3.0], [1.0, 2.5, 3.0])",
                    hint="Convert exact into a new list ([float(x) for x in exact]) instead of changing the caller's.")
print("first_disagreement: visible tests passed")

# %% id="a0d17a04" nbgrader={"grade": true, "grade_id": "test_first_disagreement_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for first_disagreement run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks

g = torch.Generator().manual_seed(3030)

# Tables built so that the answer is known: every entry is its value correctly rounded, except the entries
# at chosen positions, which are the exact value moved by 0.6 to 3 units of the last digit (beyond rounding).
for length, decimals, bad, as_tensor in [(7, 2, [3, 5], False), (12, 3, [0], True), (5, 1, [4], False),
                                         (9, 0, [2, 6, 7], True), (30, 4, [17, 29], False), (6, 2, [], True),
                                         (40, 2, [39], True)]:
    unit = 10 ** -decimals
    exact = (torch.rand(length, generator=g, dtype=torch.float64) - 0.3) * 20
    # keep every value at least 0.05 units away from a half-way point, so its rounding is unambiguous
    frac = (exact / unit) % 1
    exact = exact + torch.where((frac - 0.5).abs() < 0.05, 0.1 * unit, 0.0)
    printed = [round(x, decimals) for x in exact.tolist()]
    for position in bad:
        push = (0.6 + 2.4 * torch.rand((), generator=g).item()) * unit
        printed[position] = round(exact[position].item() + (push if position % 2 else -push), decimals + 3)
    expected = bad[0] if bad else None
    argument = exact if as_tensor else exact.tolist()
    checks.assert_equal(first_disagreement(printed, argument, decimals=decimals), expected,
                        name=f"first_disagreement on a table of {length} numbers with {decimals} decimals "
                             f"({'tensor' if as_tensor else 'list'}), wrong entries at {bad}",
                        hint="Return the FIRST index (from 0) where |printed - exact| > half a unit of the last "
                             "printed digit, 0.5 * 10**-decimals; None if there is none.")

# An entry off by less than one unit but more than half a unit disagrees (1.474 is printed 1.47, not 1.48).
checks.assert_equal(first_disagreement([0.5, 1.48], [0.5, 1.474]), 1, name="first_disagreement([0.5, 1.48], [0.5, 1.474])",
                    hint="|1.48 - 1.474| = 0.006 is more than half a unit (0.005).")
checks.assert_equal(first_disagreement([10.0, -2.3], [10.04, -2.36], decimals=1), 1,
                    name="first_disagreement with negative numbers, decimals=1")
print("first_disagreement: hidden tests passed")
### END HIDDEN TESTS

# %% id="a0d17a05" nbgrader={"grade": true, "grade_id": "test_first_disagreement_hidden_edges", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for first_disagreement run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks, probes

# Half-way values have two correct roundings; binary floats must not tip them over.
for printed, exact, decimals in [([1.48], [1.485], 2), ([1.49], [1.485], 2), ([0.12, 0.13], [0.125, 0.125], 2),
                                 ([2.0, 3.0], [2.5, 2.5], 0), ([0.1], [0.15], 1), ([0.2], [0.15], 1),
                                 ([1.0005], [1.00045], 4), ([-0.0], [-0.004], 2)]:
    checks.assert_equal(first_disagreement(printed, exact, decimals=decimals), None,
                        name=f"first_disagreement({printed}, {exact}, decimals={decimals})",
                        hint="A value exactly half-way between two roundings agrees with both; compare the "
                             "difference with half a unit plus a small slack (1e-9), not the rounded values.")
# The default is two decimals.
checks.assert_equal(first_disagreement([0.5, 0.3], [0.5, 0.306]), 1, name="first_disagreement with the default decimals",
                    hint="decimals defaults to 2: 0.306 rounds to 0.31.")
checks.assert_equal(first_disagreement([0.5, 0.3], [0.5, 0.304]), None, name="first_disagreement with the default decimals (agreeing)")
# Empty tables, the return type, and errors.
checks.assert_equal(first_disagreement([], []), None, name="first_disagreement of two empty lists")
checks.assert_equal(first_disagreement([0.0], [1.0], decimals=3), 0, name="first_disagreement: a Python int 0, not None or False")
checks.assert_raises(ValueError, first_disagreement, [1.0], torch.tensor([1.0, 2.0], dtype=torch.float64),
                     name="first_disagreement with more exact values than printed ones")
checks.assert_raises(ValueError, first_disagreement, [], [1.0], name="first_disagreement with an empty printout")
# Unequal lengths raise even when an entry before the end disagrees (checked before the first comparison, not after).
checks.assert_raises(ValueError, first_disagreement, [1.0, 5.0], [2.0], name="first_disagreement([1.0, 5.0], [2.0]): "
                     "unequal lengths whose first entry already disagrees")
checks.assert_raises(ValueError, first_disagreement, [0.3], torch.tensor([0.9, 0.3], dtype=torch.float64),
                     name="first_disagreement([0.3], tensor([0.9, 0.3])): unequal lengths whose first entry already disagrees")
# The exact values are left alone.
exact = torch.tensor([0.25, 0.5, 0.125], dtype=torch.float64)
traced = probes.traced_call(first_disagreement, [0.25, 0.5, 0.13], exact, 2)
checks.assert_close(traced.args_after[1], exact.clone(), atol=0, rtol=0, name="first_disagreement's exact values after the call")

# The slack is 1e-9, no more and no less: half a unit plus 5e-10 agrees, half a unit plus 1e-8 does not.
for printed, exact, decimals, expected in [([1.48], [1.4850000005], 2, None), ([1.48], [1.48500001], 2, 0),
                                           ([2.0, 0.3], [2.0, 0.35000002], 1, 1), ([7.0, 0.3], [7.0, 0.3500000004], 1, None),
                                           ([5.0], [5.50000002], 0, 0)]:
    checks.assert_equal(first_disagreement(printed, exact, decimals=decimals), expected,
                        name=f"first_disagreement({printed}, {exact}, decimals={decimals})",
                        hint="Disagreement means |printed - exact| > 0.5 * 10**-decimals + 1e-9: the slack is exactly "
                             "1e-9 (not 1e-6, not math.isclose's relative 1e-9).")
# The bound is absolute, whatever the size of the numbers: at 1.2e7 with two decimals, or 12345.5 with six, a relative
# tolerance of 1e-9 (math.isclose's default rel_tol) is wider than half a unit and would hide these differences.
for printed, exact, decimals, expected in [([12345678.0], [12345678.007], 2, 0), ([3.0, 12345.5], [3.0, 12345.500002], 6, 1),
                                           ([12345678.0], [12345678.004], 2, None)]:
    checks.assert_equal(first_disagreement(printed, exact, decimals=decimals), expected,
                        name=f"first_disagreement({printed}, {exact}, decimals={decimals}): large numbers",
                        hint="Disagreement means |printed - exact| > 0.5 * 10**-decimals + 1e-9, an absolute bound: "
                             "math.isclose(p, e, abs_tol=...) also applies a relative tolerance of 1e-9 (rel_tol), "
                             "which for numbers in the millions is wider than half a unit.")
# Between the stated slack and a looser one: half a unit plus 3e-9 to 5e-9 disagrees (printed 0.0 makes |p - e| exact,
# and 2e-9 above the bound is far beyond any order of the comparison's rounding), so a slack of 1e-8 shows.
for printed, exact, decimals, expected in [([0.0], [0.005 + 4e-9], 2, 0), ([0.2, 0.0], [0.2, 0.05 + 3e-9], 1, 1),
                                           ([0.0, 0.0], [0.0, 0.0005 + 5e-9], 3, 1)]:
    checks.assert_equal(first_disagreement(printed, exact, decimals=decimals), expected,
                        name=f"first_disagreement({printed}, {exact}, decimals={decimals}): a few 1e-9 beyond the bound",
                        hint="Disagreement means |printed - exact| > 0.5 * 10**-decimals + 1e-9: the slack is exactly "
                             "1e-9, so half a unit plus 4e-9 disagrees (a slack of 1e-8 would let it pass).")
# A difference of exactly half a unit plus 1e-9 still agrees: the rule is "more than", not "at least". (At these two
# widths 0.5 * 10**-decimals + 1e-9 rounds down, so every arrangement of the comparison, |p - e| > h + 1e-9,
# |p - e| - h > 1e-9 or |p - e| - 1e-9 > h, gives the same answer; printed 0.0 makes |p - e| exact.)
for printed, exact, decimals in [([0.0], [0.5 + 1e-9], 0), ([0.3, 0.0], [0.3, 0.05 + 1e-9], 1)]:
    checks.assert_equal(first_disagreement(printed, exact, decimals=decimals), None,
                        name=f"first_disagreement({printed}, {exact}, decimals={decimals}): a difference of exactly "
                             f"0.5 * 10**-{decimals} + 1e-9",
                        hint="Disagreement means |printed - exact| > 0.5 * 10**-decimals + 1e-9, strictly: a difference "
                             "equal to the bound agrees (> , not >=).")
# A float32 tensor of exact values: its values are compared as they are, with the printed Python floats as they are
# (0.125 and 0.375 are exact in float32; the printed 0.12 and 0.38 must not be rounded to float32 first).
checks.assert_equal(first_disagreement([0.12, 0.38, 0.25], torch.tensor([0.125, 0.375, 0.25], dtype=torch.float32)), None,
                    name="first_disagreement([0.12, 0.38, 0.25], float32 tensor [0.125, 0.375, 0.25])",
                    hint="Compare in double precision (Python floats): float32(0.12) is 0.1199999973, which puts the "
                         "half-way value 0.125 beyond the slack.")
checks.assert_equal(first_disagreement([0.5, 0.13, 0.2], torch.tensor([0.5, 0.125, 0.21], dtype=torch.float32)), 2,
                    name="first_disagreement([0.5, 0.13, 0.2], float32 tensor [0.5, 0.125, 0.21])")
print("first_disagreement: hidden edge-case tests passed")
### END HIDDEN TESTS

# %% id="13448745"
A3 = torch.softmax(S3, dim=-1)         # no 1/sqrt(d_k) here, like the classic example
O3 = A3 @ V3
show_matrix(A3, tokens3, tokens3, corner="weights")
printed_weights = [0.51, 0.19, 0.31, 0.19, 0.51, 0.31, 0.51, 0.19, 0.31]
printed_outputs = [1.48, 0.53, 0.84, 1.17]
print("your audit of the printed weights, row by row: first disagreement at",
      first_disagreement(printed_weights, A3.flatten()))
print("your audit of the printed outputs (cat, then sat): first disagreement at",
      first_disagreement(printed_outputs, O3[:2].flatten()))
print("every printed output that disagrees:",
      [i for i in range(4) if first_disagreement(printed_outputs[i:i + 1], O3[:2].flatten()[i:i + 1]) is not None], "\n")
against_printed('weights of "cat"', [0.51, 0.19, 0.31], A3[0])
against_printed('weights of "sat"', [0.19, 0.51, 0.31], A3[1])
against_printed('weights of "mat"', [0.51, 0.19, 0.31], A3[2])
against_printed('output of "cat"', [1.48, 0.53], O3[0])
against_printed('output of "sat"', [0.84, 1.17], O3[1])

w2 = torch.tensor([0.51, 0.19, 0.31], dtype=torch.float64)      # the weights after rounding
print(f"\nrounded weights sum to {w2.sum().item():.2f}; times the values: "
      f"cat {[round(x, 3) for x in (w2 @ V3).tolist()]}, sat {[round(x, 3) for x in (w2[[1, 0, 2]] @ V3).tolist()]}")

# %% [markdown] id="b90adb5d"
# **The reveal.** The weights agree with the usual printout. Two output coordinates do not (positions 0 and 2 of the
# outputs, as your function found): the example is commonly
# printed with $\text{out}_\text{cat} = (1.48, 0.53)$ and $\text{out}_\text{sat} = (0.84, 1.17)$, while the
# exact values are $(1.474, 0.526)$ and $(0.833, 1.167)$. The printed 1.48 and 0.84 come from multiplying
# the weights **after** rounding them to two decimals ($0.51 \cdot 2 + 0.31 \cdot 1.5 = 1.485$), and those
# rounded weights sum to 1.01, not 1. Round at the end, not in the middle.
#
# ### What the scale $1/\sqrt{d_k}$ changes
#
# The attention used in practice divides the scores by $\sqrt{d_k}$ before the softmax (notebook 04 shows
# why: the dot product of two random $d_k$-dimensional vectors has a variance that grows with $d_k$). Here
# $\sqrt 2 \approx 1.41$.
#
# **Predict first.** Dividing the scores by 1.41 brings them closer together. Does the weight of *cat* on
# itself go up or down?
#
# <details><summary>Answer</summary>
#
# Down: smaller differences between scores give a flatter softmax. The scale works like a temperature of
# $\sqrt{d_k}$. With $d_k = 2$ the effect is modest (0.51 becomes 0.46); with $d_k = 512$, unscaled scores
# of random vectors have a standard deviation near 23 and the softmax is almost one-hot.
# </details>

# %% id="96edda3f"
A3_scaled = torch.softmax(S3 / math.sqrt(2), dim=-1)
for label, weights in [("unscaled", A3), ("scaled by 1/sqrt(2)", A3_scaled)]:
    out = weights @ V3
    print(f'"cat", {label:<20} weights {[round(w, 4) for w in weights[0].tolist()]}   '
          f'output {[round(o, 4) for o in out[0].tolist()]}')

# %% [markdown] id="576d55e6"
# ### The causal mask
#
# A language model predicts the token after position $i$ from positions $1, \dots, i$; it must not see
# $i+1, i+2, \dots$, the very tokens it is trained to predict. So before the softmax the scores of every
# key $j > i$ are set to $-\infty$: since $e^{-\infty} = 0$, those weights are exactly 0, and the remaining
# weights of the row are renormalised among themselves.
#
# **Predict first.** The masked weights, row by row.
#
# <details><summary>Answer</summary>
#
# *cat* sees only itself: weight 1. *sat* sees *cat* and itself with scores $(0, 1)$:
# $(1, e)/(1 + e) = (0.269, 0.731)$. *mat*, the last token, sees everything, so its row does not change:
# $(0.51, 0.19, 0.31)$.
# </details>

# %% id="ac367db3"
future = torch.ones(3, 3, dtype=torch.bool).triu(diagonal=1)       # True where key j > query i
S3_masked = S3.masked_fill(future, -math.inf)
A3_causal = torch.softmax(S3_masked, dim=-1)
show_matrix(S3_masked, tokens3, tokens3, decimals=1, corner="masked q · k")
show_matrix(A3_causal, tokens3, tokens3, corner="weights")
against_printed('causal weights of "cat"', [1.00], A3_causal[0, :1])
against_printed('causal weights of "sat"', [0.27, 0.73], A3_causal[1, :2])
against_printed('causal weights of "mat"', [0.51, 0.19, 0.31], A3_causal[2])
print(f'with the scale 1/sqrt(2), "sat" would weigh cat and itself '
      f'{[round(w, 4) for w in torch.softmax(S3_masked / math.sqrt(2), dim=-1)[1, :2].tolist()]}')

fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), layout="constrained")
plotting.attention_heatmap(A3, tokens3, ax=axes[0], title="cat / sat / mat, no mask")
plotting.attention_heatmap(A3_causal, tokens3, ax=axes[1], title="with the causal mask")
fig.suptitle("Attention weights, unscaled: rows are queries, columns the keys they read")
plt.show()

# %% [markdown] id="72c936f9"
# Each row sums to 1; the mask makes the matrix lower-triangular, and the first token can only attend to
# itself.
#
# ## 3. Four positions in matrix form
#
# Stacking the queries, keys and values of all positions as the rows of matrices computes every output
# at once:
#
# $$
# \operatorname{Attention}(Q, K, V) = \operatorname{softmax}\!\Big(\frac{QK^\top}{\sqrt{d_k}}\Big)\, V,
# $$
#
# with the softmax taken along each row. With $T$ positions, $Q$ and $K$ are $T \times d_k$, the score matrix
# $QK^\top$ is $T \times T$ (one entry per query–key pair), and the output is $T \times d_v$, one row per
# position, each a convex combination of the rows of $V$.
#
# A standard walkthrough uses $T = 4$ and $d_k = d_v = 3$:
#
# $$
# Q = \begin{pmatrix} 1&0&1\\ 0&1&0\\ 1&1&0\\ 0&0&1 \end{pmatrix}, \quad
# K = \begin{pmatrix} 1&0&0\\ 0&1&0\\ 1&0&1\\ 0&1&1 \end{pmatrix}, \quad
# V = \begin{pmatrix} 1&2&0\\ 0&1&1\\ 1&0&2\\ 2&1&0 \end{pmatrix}.
# $$
#
# **Predict first.** The first row of $QK^\top/\sqrt 3$, and which position query 1 weighs most.
#
# <details><summary>Answer</summary>
#
# $q_1 = (1, 0, 1)$ has dot products $1, 0, 2, 1$ with the four keys; divided by $\sqrt 3 \approx 1.732$:
# $(0.577, 0, 1.155, 0.577)$. Position 3, whose key $(1, 0, 1)$ equals the query, gets the most weight.
# </details>

# %% id="4079b969"
positions = ["1", "2", "3", "4"]
Q4 = torch.tensor([[1.0, 0, 1], [0, 1, 0], [1, 1, 0], [0, 0, 1]], dtype=torch.float64)
K4 = torch.tensor([[1.0, 0, 0], [0, 1, 0], [1, 0, 1], [0, 1, 1]], dtype=torch.float64)
V4 = torch.tensor([[1.0, 2, 0], [0, 1, 1], [1, 0, 2], [2, 1, 0]], dtype=torch.float64)

raw4 = Q4 @ K4.T
scaled4 = raw4 / math.sqrt(3)
row1_exp = scaled4[0].exp()
A4 = torch.softmax(scaled4, dim=-1)
Z4 = A4 @ V4
show_matrix(raw4, positions, positions, decimals=0, corner="QKᵀ")
show_matrix(scaled4, positions, positions, decimals=3, corner="QKᵀ/√3")
against_printed("scaled scores, row 1", [0.577, 0, 1.155, 0.577], scaled4[0], decimals=3)
against_printed("their exponentials", [1.780, 1, 3.174, 1.780], row1_exp, decimals=3)
against_printed("sum of the exponentials", 7.734, row1_exp.sum(), decimals=3)
against_printed("weights, row 1", [0.230, 0.129, 0.410, 0.230], A4[0], decimals=3)
print(f"the weights of row 1 sum to {A4[0].sum().item():.12f}")
from_rounded = [math.exp(s) for s in (0.577, 1.155)]
print(f"exponentials of the printed scores 0.577 and 1.155: {from_rounded[0]:.4f} and {from_rounded[1]:.4f}, "
      f"sum {1 + 2 * from_rounded[0] + from_rounded[1]:.4f}; of the exact scores: {row1_exp[0]:.4f} and {row1_exp[2]:.4f}, "
      f"sum {row1_exp.sum():.4f}")
cut = [math.floor(1000 * x) / 1000 for x in from_rounded]
print(f"those two cut (not rounded) to three decimals: {cut[0]:.3f} and {cut[1]:.3f}; the four cut values summed: "
      f"{1 + 2 * cut[0] + cut[1]:.3f}")
print(f"\noutput Z = AV has shape {tuple(Z4.shape)} (T x d_v):\n{Z4}")
print(f"row 1 = 0.230 v1 + 0.129 v2 + 0.410 v3 + 0.230 v4 = {[round(z, 4) for z in Z4[0].tolist()]}")

# %% [markdown] id="1a6a87f3"
# **Find the error.** The scores and weights of row 1 agree with the printout to three decimals, but its
# exponentials and their sum do not (the lines marked above). Before opening the answer: what did the
# printout compute its exponentials from?
#
# <details><summary>Answer</summary>
#
# From the scores *after* rounding them to three decimals, with each exponential then cut (not rounded)
# to three decimals and the cut values summed: the last two lines above follow that chain to the printed
# numbers, while $1/\sqrt 3 = 0.57735\ldots$ gives the exact ones. Rounding in the middle of a calculation
# moves the last decimal; here it washes out again when the weights are rounded.
# </details>
#
# **One more audit.** The walkthrough usually prints this score matrix:
#
# | $QK^\top$ | 1 | 2 | 3 | 4 |
# |---|---|---|---|---|
# | **1** | 1 | 0 | 2 | 1 |
# | **2** | 0 | 1 | 0 | 1 |
# | **3** | 1 | 1 | 2 | 1 |
# | **4** | 0 | 0 | 1 | 1 |
#
# **Predict first.** Does every entry agree with $Q$ and $K$ above? The cell below asks your
# `first_disagreement` (with `decimals=0`, the matrix read row by row), then shows what it found.

# %% id="fc8169a2"
printed_raw = torch.tensor([[1.0, 0, 2, 1], [0, 1, 0, 1], [1, 1, 2, 1], [0, 0, 1, 1]], dtype=torch.float64)
position = first_disagreement(printed_raw.flatten().tolist(), raw4.flatten(), decimals=0)
print("your audit of the printed QK^T: first disagreement at index", position,
      "" if position is None else f"= entry ({position // 4 + 1}, {position % 4 + 1})")
for i, j in (raw4 != printed_raw).nonzero().tolist():
    print(f"entry ({i + 1}, {j + 1}): printed {printed_raw[i, j]:.0f}, but q{i + 1} . k{j + 1} = "
          f"{Q4[i].tolist()} . {K4[j].tolist()} = {raw4[i, j]:.0f}")
against_printed("scaled scores, row 3", [0.577, 0.577, 1.155, 0.577], scaled4[2], decimals=3)
print(f"so row 3 of A is uniform, {A4[2].tolist()}, and row 3 of Z is the mean of the values, {Z4[2].tolist()}")

# %% [markdown] id="01aee62d"
# $q_3 = (1, 1, 0)$ and $k_3 = (1, 0, 1)$ share only their first coordinate, so the score is 1, not 2:
# query 3 scores every key equally and simply averages the values. The row that matters for the
# walkthrough's point, row 1, is unaffected. (Always recompute an entry or two of a printed matrix.)
#
# ## 4. One query, three keys, step by step
#
# A short exercise that appears in textbook treatments of causal attention: a sequence of length $T = 5$
# with $d_\text{model} = 4$ and a single head, so $d_k = d_\text{model} = 4$ and the scale is
# $1/\sqrt 4 = 1/2$. Position $i = 3$ has the query $q[3] = (1, 0, -1, 0)$ and, under the causal mask, sees
# the keys
#
# $$
# k[1] = (1, 1, 0, 0), \qquad k[2] = (0, 1, 1, 0), \qquad k[3] = (-1, 0, 1, 1).
# $$
#
# Compute the weights $\alpha[3,1], \alpha[3,2], \alpha[3,3]$: dot products, scaling, exponentiation,
# normalisation.
#
# **Predict first.** Do it by hand, then run the cell.
#
# <details><summary>Answer</summary>
#
# Dot products $1, -1, -2$; scaled $0.5, -0.5, -1$; exponentials $1.6487, 0.6065, 0.3679$ with sum
# $2.6231$; weights $0.6285, 0.2312, 0.1402$. The key most aligned with the query, $k[1]$, gets the most.
# </details>

# %% id="406b23f5"
q_3 = torch.tensor([1.0, 0.0, -1.0, 0.0], dtype=torch.float64)
k_123 = torch.tensor([[1.0, 1.0, 0.0, 0.0],
                      [0.0, 1.0, 1.0, 0.0],
                      [-1.0, 0.0, 1.0, 1.0]], dtype=torch.float64)
dots = k_123 @ q_3
halved = dots / math.sqrt(4)
exps = halved.exp()
alpha = exps / exps.sum()
for j in range(3):
    print(f"j = {j + 1}:  q[3] . k[{j + 1}] = {dots[j]:+.0f}   scaled {halved[j]:+.2f}   exp {exps[j]:.4f}")
print(f"sum of the exponentials: {exps.sum():.4f}")
against_printed("alpha[3,1], alpha[3,2], alpha[3,3]", [0.6285, 0.2312, 0.1402], alpha, decimals=4)
print(f"the rounded weights sum to {sum(round(a, 4) for a in alpha.tolist()):.4f}, the exact ones to {alpha.sum().item():.6f}")
print(f"without the scale 1/2 the weights would be {[round(a, 4) for a in torch.softmax(dots, dim=0).tolist()]}")

# %% [markdown] id="340c9253"
# ## 5. Five tokens, "cat sat on the mat", with the causal mask
#
# The full layer, in matrix form, for a five-token sentence with $d_k = d_v = 4$, as it is often
# presented: masked scores $S$ (future positions at $-\infty$), scaled scores $Z = S/\sqrt{d_k} = S/2$,
# the attention matrix $A = \operatorname{softmax}(Z)$ row by row, the values $V$, the output $O = AV$, and
# finally the **residual update**: every token's vector becomes $x_i + o_i$. (Adding $o_i$ to $x_i$ needs
# $d_v = d_\text{model}$, true here; a real layer first maps its output back to $d_\text{model}$ with a
# matrix $W_O$, notebook 05.)
#
# This version starts from $S$ (the queries behind it are not given), printed with one decimal, and
# prints $Z$, $A$ and $O$ rounded as well. We start from its $S$ and recompute everything.

# %% id="b84b00d5"
tokens5 = ["cat", "sat", "on", "the", "mat"]
inf = math.inf
S5 = torch.tensor([[1.6, -inf, -inf, -inf, -inf],
                   [3.0, 1.6, -inf, -inf, -inf],
                   [1.7, 0.9, 0.7, -inf, -inf],
                   [1.2, 0.6, 0.5, 0.0, -inf],
                   [1.3, 0.6, 0.5, -0.1, -0.3]], dtype=torch.float64)
V5 = torch.tensor([[1.0, 0.0, 0.0, 0.0],
                   [1.0, 1.0, 0.0, 0.0],
                   [0.0, 1.0, 1.0, 0.0],
                   [0.0, 0.0, 1.0, 1.0],
                   [0.0, 0.0, 0.0, 1.0]], dtype=torch.float64)
X5 = torch.tensor([[0.6, 0.2, -0.1, 0.3],
                   [0.5, 0.7, 0.1, 0.4],
                   [0.3, 0.6, 0.4, 0.2],
                   [0.1, 0.4, 0.5, 0.2],
                   [0.0, 0.2, 0.6, 0.3]], dtype=torch.float64)
# The rounded tables as usually printed with this example:
printed_Z = torch.tensor([[0.8, -inf, -inf, -inf, -inf],
                          [1.5, 0.8, -inf, -inf, -inf],
                          [0.8, 0.4, 0.4, -inf, -inf],
                          [0.6, 0.3, 0.2, 0.0, -inf],
                          [0.6, 0.3, 0.2, -0.0, -0.2]], dtype=torch.float64)
printed_A = torch.tensor([[1.00, 0, 0, 0, 0],
                          [0.67, 0.33, 0, 0, 0],
                          [0.43, 0.29, 0.27, 0, 0],
                          [0.33, 0.25, 0.23, 0.18, 0],
                          [0.29, 0.22, 0.20, 0.15, 0.14]], dtype=torch.float64)
printed_O = torch.tensor([[1.0, 0.0, 0.0, 0.0],
                          [1.0, 0.3, 0.0, 0.0],
                          [0.7, 0.6, 0.3, 0.0],
                          [0.6, 0.5, 0.4, 0.2],
                          [0.5, 0.4, 0.4, 0.3]], dtype=torch.float64)
show_matrix(S5, tokens5, tokens5, decimals=1, corner="masked S")

# %% [markdown] id="8221970c"
# **Predict first.** Row *on* has the scores $(1.7, 0.9, 0.7)$, so $Z = (0.85, 0.45, 0.35)$. Its weights?
#
# <details><summary>Answer</summary>
#
# $e^{0.85} = 2.340$, $e^{0.45} = 1.568$, $e^{0.35} = 1.419$, sum $5.327$: weights $(0.439, 0.294, 0.266)$,
# that is $0.44 / 0.29 / 0.27$.
# </details>
#
# **Find the error.** The usual printout of this example gives $Z$ rounded to one decimal and $A$ rounded
# to two (both are in the next cell as `printed_Z` and `printed_A`, and shown there against the exact
# values). Your `first_disagreement` reads the printed $A$ row by row (only the unmasked entries); which
# entry does it stop at, and can either printed table, $S$ or $Z$, have produced the printed $A$?

# %% id="d62a6183"
Z5 = S5 / math.sqrt(4)                      # -inf / 2 is still -inf: the mask survives the scaling
A5 = torch.softmax(Z5, dim=-1)              # exp(-inf) = 0: masked weights are exactly 0
A5_from_printed_Z = torch.softmax(printed_Z, dim=-1)
show_matrix(Z5, tokens5, tokens5, decimals=2, corner="Z = S/2")
show_matrix(A5, tokens5, tokens5, decimals=2, corner="A")
for i, name in enumerate(tokens5):
    against_printed(f'Z, row "{name}"', printed_Z[i, : i + 1].tolist(), Z5[i, : i + 1], decimals=1)
print()
for i, name in enumerate(tokens5):
    against_printed(f'A, row "{name}" (from S/2)', printed_A[i, : i + 1].tolist(), A5[i, : i + 1])
print()
for i, name in enumerate(tokens5):
    against_printed(f'A, row "{name}" (from printed Z)', printed_A[i, : i + 1].tolist(), A5_from_printed_Z[i, : i + 1])
seen = torch.ones(5, 5, dtype=torch.bool).tril()            # the unmasked entries, row by row
position = first_disagreement(printed_A[seen].tolist(), A5[seen], decimals=2)
rows, cols = seen.nonzero().unbind(1)
print("\nyour audit of the printed A: first disagreement at index", position,
      "" if position is None else f'= row "{tokens5[rows[position]]}", key "{tokens5[cols[position]]}": printed '
      f"{printed_A[seen][position].item():.2f}, exact {A5[seen][position].item():.4f}")
print("row sums of the printed A:", [round(s, 2) for s in printed_A.sum(dim=-1).tolist()])
print("largest difference, printed A vs ours:", f"{(printed_A - A5).abs().max().item():.4f}")

# %% [markdown] id="3922cf64"
# What the given numbers really give (the lines above): recomputed from the printed $S$, rows *on*, *the*
# and *mat* each differ from the printed $A$ in an entry or two, and recomputed from the printed $Z$ they
# differ again. Neither printed table reproduces the printed $A$, so the printed $A$ was computed from
# unrounded scores that are not shown. The largest difference (printed above) is one unit of the last
# digit: fine for the picture, and a reminder that a printed worked example is a sketch, and the code is
# the reference. (The $Z$ rows also
# show rounding of halves: $S/2$ lands on values like $0.85$ and $0.35$, which can round either way.)
#
# Now the output and the residual update.
#
# **Predict first.** $V$ has only 0s and 1s: value *cat* is $e_1$, *sat* is $e_1 + e_2$, *on* $e_2 + e_3$, *the*
# $e_3 + e_4$, *mat* $e_4$. What is the first coordinate of $o_\text{on}$?
#
# <details><summary>Answer</summary>
#
# The weight of *cat* plus the weight of *sat*: $0.439 + 0.294 = 0.734$. Each coordinate of an output
# row adds up the weights of the tokens whose values have a 1 there.
# </details>

# %% id="d1be2d6c"
O5 = A5 @ V5
X5_new = X5 + O5                            # the residual update: each token keeps x_i and adds o_i
show_matrix(O5, tokens5, ["1", "2", "3", "4"], corner="O = AV")
for i, name in enumerate(tokens5):
    against_printed(f'O, row "{name}"', printed_O[i].tolist(), O5[i], decimals=1)
show_matrix(X5, tokens5, ["1", "2", "3", "4"], corner="X")
show_matrix(X5_new, tokens5, ["1", "2", "3", "4"], corner="X + O")

fig, ax = plt.subplots(figsize=(4.6, 3.8), layout="constrained")
plotting.attention_heatmap(A5, tokens5, ax=ax, title="cat sat on the mat: causal A")
plt.show()

# %% [markdown] id="2e29fe52"
# At the one-decimal rounding of the usual printout, $O = AV$ agrees in every entry.
#
# The same example is also often shown updating *sat* on its own, step by step, before introducing the mask, and
# gets $x'_\text{sat} = (1.14, 1.09, 0.39, 0.58)$, so $o_\text{sat} = x'_\text{sat} - x_\text{sat}$, printed
# below beside the masked matrix form's $o_\text{sat}$: they disagree. **Find the error** before running
# the cell: which weights would give the step-by-step $o_\text{sat}$? With these values, $V^\top a = o_\text{sat}$ together
# with $\sum_j a_j = 1$ is five equations for five weights:

# %% id="f607acf4"
o_sat_step = torch.tensor([1.14, 1.09, 0.39, 0.58], dtype=torch.float64) - X5[1]
system = torch.cat([V5.T, torch.ones(1, 5, dtype=torch.float64)])        # V^T a = o, sum(a) = 1
a = torch.linalg.solve(system, torch.cat([o_sat_step, torch.ones(1, dtype=torch.float64)]))
print("o_sat, step by step:        ", [round(o, 2) for o in o_sat_step.tolist()])
print("o_sat, masked matrix form:  ", [round(o, 2) for o in O5[1].tolist()])
print("weights that give the first:", dict(zip(tokens5, [round(w, 2) for w in a.tolist()])))

# %% [markdown] id="aaad7e7c"
# All five weights are positive and sum to 1, and *sat* weighs *cat* about twice as much as itself, as
# in the masked version ($0.67 / 0.33$). So the step-by-step update is *sat* attending to **all five**
# tokens, the future included: consistent with an illustration made before the mask is introduced, and
# not what a language model computes. With the mask, *sat* sees only *cat* and itself.

# %% [markdown] id="ccfcd3ea"
# ## 6. Exercise: attention for batches of sequences and heads
#
# A model runs attention for a batch of sequences and several heads at once: queries of shape
# (batch, heads, $T_q$, $d_k$), and the formula applies to the last two dimensions, separately for every
# leading index. PyTorch's matrix product already works that way: `a @ b` multiplies the last two
# dimensions and broadcasts over the others (so does `torch.einsum("...qd,...kd->...qk", q, k)`).
# $T_q$ and $T_k$ need not be equal: in *cross-attention* the queries come from one sequence (the text
# being generated) and the keys and values from another (say, an encoded image or source sentence).
#
# A **mask** says which query–key pairs may interact. We use booleans with **True = may attend**, the
# convention of the boolean `attn_mask` of `F.scaled_dot_product_attention`. A masked (False) score is
# replaced by $-\infty$ (or a very negative number such as $-10^9$) **before** the softmax, so its weight is
# exactly 0 and the other weights of the row still sum to 1. A mask of shape $(T_q, T_k)$ is shared by the
# whole batch: broadcasting lines it up with the scores $(\dots, T_q, T_k)$.
#
# **A row with nothing to attend to.** If a query may attend to no key at all (section 8 produces such
# rows from padding), its scores are all $-\infty$ and the softmax computes $0/0$ = NaN, which then spreads
# into every later layer and the loss. We define the result instead: **such a row gets weight 0 on every
# key, and output 0.** Don't count on PyTorch's own function for this: recent versions return 0 for such
# rows on the CPU, older versions and some GPU kernels return NaN.
#
# ### Exercise 1: `scaled_dot_product_attention` (1 + 2 + 1 points)
#
# *Points: 1 visible, 2 hidden (shapes, masks, permutations, the causal mask against PyTorch), 1 hidden (edge cases: fully masked rows, huge scores, float32 in and out, the default `mask=None`, inputs left unchanged).*
#
# $$
# \text{weights} = \operatorname{softmax}_\text{keys}\!\Big(\frac{q\,k^\top}{\sqrt{d_k}},\ \text{masked scores} \to -\infty\Big),
# \qquad \text{output} = \text{weights}\; v .
# $$
#
# Use elementary operations (a matrix product or `einsum`, `masked_fill` or `torch.where`, `torch.softmax`),
# not `F.scaled_dot_product_attention` itself: it returns no weights. Things to get right: which dimension
# the softmax normalises, where $d_k$ comes from, and a mask with fewer dimensions than the scores
# (`scores[~mask] = ...` needs a mask of exactly the scores' shape; broadcasting operations don't).

# %% id="4e713d87" nbgrader={"grade": false, "grade_id": "scaled_dot_product_attention", "locked": false, "schema_version": 3, "solution": true, "task": false}
import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    """Scaled dot-product attention, softmax(q k^T / sqrt(d_k)) v, with an optional boolean mask.

    Args:
        q: floating tensor (..., T_q, d_k), the queries.
        k: floating tensor (..., T_k, d_k), the keys, with the same leading dimensions as q.
        v: floating tensor (..., T_k, d_v), the values, one row per key.
        mask: None (every query attends to every key), or a torch.bool tensor that broadcasts to
            (..., T_q, T_k), e.g. (T_q, T_k) for the whole batch. True = "may attend"; a False entry
            gets weight exactly 0 (the convention of the boolean attn_mask of
            F.scaled_dot_product_attention).
    Returns:
        (output, weights), new tensors with the dtype of q, computed at least at q's precision (float64
        inputs keep float64 precision: no pass through float32; a float32 softmax for half inputs is fine):
        output (..., T_q, d_v): row i is the weighted sum of the rows of v, with the weights of row i;
        weights (..., T_q, T_k): softmax over the keys (last dimension) of the scaled, masked scores;
            every row sums to 1.
        A query whose mask row is False everywhere gets weights 0 on every key and output 0 (never NaN).
        d_k is the size of the last dimension of q. Finite for scores in the thousands (stable softmax).
        The inputs are not modified.
    """
    ### BEGIN SOLUTION
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])          # (..., T_q, T_k)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))             # before the softmax
    weights = torch.softmax(scores, dim=-1)                            # over the keys
    if mask is not None:
        # A row with no allowed key is all -inf and its softmax is 0/0 = NaN: make it all zeros.
        weights = weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
    return weights @ v, weights
    ### END SOLUTION


# %% id="11b1030b" nbgrader={"grade": true, "grade_id": "test_scaled_dot_product_attention", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
import math

import torch
from utils import checks, probes

name = "scaled_dot_product_attention"

# One query that scores every key the same: uniform weights, output = the mean of the values.
result = scaled_dot_product_attention(torch.zeros(1, 2), torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]),
                                      torch.tensor([[3.0, 0.0], [0.0, 3.0], [3.0, 3.0]]))
checks.assert_true(isinstance(result, tuple) and len(result) == 2, name=name,
                   problem=f"expected a tuple (output, weights), got {type(result).__name__}.",
                   hint="End with: return output, weights")
out, w = result

# Batched input, checked first: 2 sequences x 3 heads, T_q = 4 queries, T_k = 6 keys, d_k = 5, d_v = 7.
gb = torch.Generator().manual_seed(1)
q_b, k_b, v_b = (torch.randn(2, 3, 4, 5, generator=gb), torch.randn(2, 3, 6, 5, generator=gb),
                 torch.randn(2, 3, 6, 7, generator=gb))
transpose_hint = ("q k^T needs the keys transposed on their last two dimensions only: transpose the last two "
                  "dimensions of k (k.transpose(-2, -1)), not the first two. On a batch, k.T reverses ALL the "
                  "dimensions and k.transpose(0, 1) swaps batch and heads.")
try:
    batched = scaled_dot_product_attention(q_b, k_b, v_b)
except (RuntimeError, IndexError, ValueError) as error:
    checks.assert_true(False, name="scaled_dot_product_attention on a batch of shape (2, 3, 4, 5) with 6 keys",
                       problem=f"the call raised {type(error).__name__}: {str(error).splitlines()[0][:200]}",
                       hint=transpose_hint)
out_b, w_b = batched
checks.assert_tensor(w_b, name="weights for a (2, 3, 4, 5) batch with 6 keys", shape=(2, 3, 4, 6), dtype="floating",
                     hint=transpose_hint)
checks.assert_tensor(out_b, name="output for a (2, 3, 4, 5) batch with 6 keys, d_v = 7", shape=(2, 3, 4, 7),
                     dtype="floating", hint="output = weights @ v has shape (..., T_q, d_v).")
checks.assert_close(w_b.sum(dim=-1), torch.ones(2, 3, 4), name="row sums of the batched weights (softmax over the keys)",
                    hint="The softmax runs over the keys, the LAST dimension: torch.softmax(scores, dim=-1). "
                         "dim=-2 normalises over the queries instead, so each query's weights no longer sum to 1.")

checks.assert_tensor(out, name="output for one query and 3 keys", shape=(1, 2), dtype="floating",
                     hint="output has shape (T_q, d_v): one row per query, as wide as a value.")
checks.assert_tensor(w, name="weights for one query and 3 keys", shape=(1, 3), dtype="floating",
                     hint="weights has shape (T_q, T_k): one row per query, one column per key.")
checks.assert_close(w, torch.full((1, 3), 1 / 3), name="weights of a query with equal scores",
                    hint="q = 0 scores 0 against every key, so the softmax over the keys (the last dimension, dim=-1) "
                         "is uniform.")
checks.assert_close(out, torch.tensor([[2.0, 2.0]]), name="output of a query with equal scores",
                    hint="output = weights @ v: here the mean of the three value rows.")

# The four-position walkthrough: scores divided by sqrt(d_k) = sqrt(3), softmax over each row.
Q = torch.tensor([[1.0, 0, 1], [0, 1, 0], [1, 1, 0], [0, 0, 1]])
K = torch.tensor([[1.0, 0, 0], [0, 1, 0], [1, 0, 1], [0, 1, 1]])
V = torch.tensor([[1.0, 2, 0], [0, 1, 1], [1, 0, 2], [2, 1, 0]])
out, w = scaled_dot_product_attention(Q, K, V)
checks.assert_tensor(w, name="weights, 4 positions", shape=(4, 4), dtype="floating")
checks.assert_tensor(out, name="output, 4 positions", shape=(4, 3), dtype="floating")
e = [math.exp(s / math.sqrt(3)) for s in (1, 0, 2, 1)]
row1 = [x / sum(e) for x in e]
checks.assert_close(w[0], torch.tensor(row1), name="weights of query 1 (4 positions, d_k = 3)",
                    hint="Scores q_1 . k_j are (1, 0, 2, 1); divide by sqrt(d_k) = sqrt(3), where d_k is the last "
                         "dimension of q; then softmax over the keys.")
checks.assert_close(w.sum(dim=-1), torch.ones(4), name="row sums of the weights (4 positions)",
                    hint="Normalise over the keys (the last dimension), so that every query's weights sum to 1.")
checks.assert_close(out[0], torch.tensor(row1) @ V, name="output of query 1 (4 positions)",
                    hint="Row i of the output is sum_j weights[i, j] * v[j].")

# Cross-attention shapes: 2 queries, 4 keys, d_k = 3, d_v = 5.
g = torch.Generator().manual_seed(0)
out, w = scaled_dot_product_attention(torch.randn(2, 3, generator=g), torch.randn(4, 3, generator=g),
                                      torch.randn(4, 5, generator=g))
checks.assert_tensor(out, name="output for T_q = 2, T_k = 4, d_v = 5", shape=(2, 5), dtype="floating",
                     hint="q k^T is (T_q, T_k); transpose the last two dimensions of k, not the first two.")
checks.assert_tensor(w, name="weights for T_q = 2, T_k = 4", shape=(2, 4), dtype="floating")

# # cat / sat / mat with the causal mask (True = may attend): masked weights are exactly 0.
Qc = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
Kc = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
Vc = torch.tensor([[2.0, 0.0], [0.0, 2.0], [1.5, 0.5]])
causal = torch.tensor([[True, False, False], [True, True, False], [True, True, True]])
out, w = scaled_dot_product_attention(Qc, Kc, Vc, causal)
checks.assert_tensor(w, name="weights, cat/sat/mat with the causal mask", shape=(3, 3), dtype="floating")
checks.assert_close(w[0], torch.tensor([1.0, 0.0, 0.0]), atol=0, rtol=1e-6,
                    name='weights of "cat" under the causal mask',
                    hint="True means 'may attend'. Masked scores must become -inf (or very negative) BEFORE the "
                         "softmax: then their weights are exactly 0 and the row still sums to 1.")
b = math.exp(1 / math.sqrt(2))
checks.assert_close(w[1], torch.tensor([1 / (1 + b), b / (1 + b), 0.0]), atol=1e-6,
                    name='weights of "sat" under the causal mask', hint="softmax((0, 1) / sqrt(2)) on the allowed keys.")
checks.assert_close(out[0], torch.tensor([2.0, 0.0]), name='output of "cat" under the causal mask')

# One mask for a whole batch of 2 sequences x 3 heads (it broadcasts).
q, k, v = torch.randn(2, 3, 4, 5, generator=g), torch.randn(2, 3, 4, 5, generator=g), torch.randn(2, 3, 4, 6, generator=g)
lower = torch.ones(4, 4, dtype=torch.bool).tril()
out, w = scaled_dot_product_attention(q, k, v, lower)
checks.assert_tensor(out, name="output for a (2, 3, 4, 5) batch with a (4, 4) mask", shape=(2, 3, 4, 6), dtype="floating",
                     hint="Work on the last two dimensions and let the mask broadcast (masked_fill or torch.where).")
checks.assert_tensor(w, name="weights for a (2, 3, 4, 5) batch with a (4, 4) mask", shape=(2, 3, 4, 4), dtype="floating")
checks.assert_close(w.sum(dim=-1), torch.ones(2, 3, 4), name="row sums, batched and masked")
checks.assert_close(w.masked_fill(lower, 0.0), torch.zeros(2, 3, 4, 4), atol=0, rtol=0,
                    name="weights at masked positions, batched", hint="Every False position of the mask gets weight exactly 0.")

# A query that may attend to nothing: weights 0 and output 0, not NaN.
mask = torch.tensor([[True, True], [False, False]])
out, w = scaled_dot_product_attention(torch.randn(2, 3, generator=g), torch.randn(2, 3, generator=g),
                                      torch.randn(2, 4, generator=g), mask)
checks.assert_tensor(w, name="weights with a fully masked row", shape=(2, 2), dtype="floating")
checks.assert_close(w[1], torch.zeros(2), atol=0, rtol=0, name="weights of a query with no allowed key",
                    hint="A row of -inf scores gives softmax 0/0 = NaN. Define it: such a row gets weight 0 "
                         "everywhere (find the rows whose mask has no True, and zero them).")
checks.assert_close(out[1], torch.zeros(4), atol=0, rtol=0, name="output of a query with no allowed key",
                    hint="With all its weights 0, the query's output row is 0.")

# q, k and v stay as they were: scale the scores (or a copy of q), never the caller's q.
g = torch.Generator().manual_seed(2)
q, k, v = torch.randn(3, 4, generator=g), torch.randn(5, 4, generator=g), torch.randn(5, 2, generator=g)
call = probes.traced_call(scaled_dot_product_attention, q.clone(), k.clone(), v.clone())
for after, before, label in zip(call.args_after, (q, k, v), "qkv"):
    checks.assert_close(after, before, atol=0, rtol=0, name=f"{label} after scaled_dot_product_attention",
                        hint="q /= math.sqrt(d_k) changes the caller's tensor; write q / math.sqrt(d_k) or scale the scores.")

# d_k = 5 and d_v = 7 differ: the scale is sqrt(d_k), the last dimension of q and k.
reference = torch.softmax(q_b @ k_b.transpose(-2, -1) / math.sqrt(5), dim=-1)
checks.assert_close(w_b, reference, name="weights for the (2, 3, 4, 5) batch (d_k = 5, d_v = 7)",
                    hint="Divide the scores by sqrt(d_k) = sqrt(5), where d_k = q.shape[-1]; sqrt(d_v) = sqrt(7) "
                         "or d_k itself gives other weights.")
print("scaled_dot_product_attention: visible tests passed")

# %% id="89beb7bf" nbgrader={"grade": true, "grade_id": "test_scaled_dot_product_attention_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for scaled_dot_product_attention run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
import torch.nn.functional as F
from utils import checks, probes

g = torch.Generator().manual_seed(3031)
f64 = torch.float64


def reference(q, k, v, mask=None):
    # PyTorch's own attention; the weights are its output for identity values (one column per key).
    eye = torch.eye(k.shape[-2], dtype=q.dtype).expand(*k.shape[:-2], k.shape[-2], k.shape[-2]).contiguous()
    return (F.scaled_dot_product_attention(q, k, v, attn_mask=mask),
            F.scaled_dot_product_attention(q, k, eye, attn_mask=mask))


def attend(q, k, v, mask=None, what=""):
    result = scaled_dot_product_attention(q, k, v, mask)
    checks.assert_true(isinstance(result, tuple) and len(result) == 2, name=f"scaled_dot_product_attention {what}",
                       problem=f"expected a tuple (output, weights), got {type(result).__name__}.")
    out, w = result
    lead, t_q, t_k, d_v = q.shape[:-2], q.shape[-2], k.shape[-2], v.shape[-1]
    checks.assert_tensor(out, name=f"output {what}", shape=(*lead, t_q, d_v), dtype="floating",
                         hint="output is (..., T_q, d_v).")
    checks.assert_tensor(w, name=f"weights {what}", shape=(*lead, t_q, t_k), dtype="floating",
                         hint="weights is (..., T_q, T_k): queries along rows, keys along columns.")
    return out, w


# Random shapes with T_q != T_k and d_k != d_v, with and without batch and head dimensions, float64.
for shape_q, t_k, d_v in [((5, 3), 7, 4), ((2, 6, 8), 9, 5), ((2, 3, 6, 8), 9, 5), ((1, 4, 1, 16), 3, 2)]:
    q = torch.randn(*shape_q, generator=g, dtype=f64)
    k = torch.randn(*shape_q[:-2], t_k, shape_q[-1], generator=g, dtype=f64)
    v = torch.randn(*shape_q[:-2], t_k, d_v, generator=g, dtype=f64)
    what = f"for q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}"
    out, w = attend(q, k, v, what=what)
    ref_out, ref_w = reference(q, k, v)
    checks.assert_close(w, ref_w, atol=1e-6, rtol=1e-5, name=f"weights {what}",
                        hint="softmax over the keys (last dimension) of q k^T / sqrt(d_k), d_k = q.shape[-1].")
    checks.assert_close(out, ref_out, atol=1e-6, rtol=1e-5, name=f"output {what}", hint="output = weights @ v.")
    checks.assert_close(w.sum(dim=-1), torch.ones(w.shape[:-1], dtype=f64), atol=1e-6,
                        name=f"row sums of the weights {what}")

# Masks of several shapes (every row keeps at least one key): PyTorch's result, zeros where masked. A 3-D mask
# broadcasts like any other: one mask per sequence for q of shape (B, T_q, d_k), and one mask per head for q of
# shape (B, H, T_q, d_k); no axis is inserted into it.
for lead, mask_shape in [((2, 3), (5, 6)), ((2, 3), (2, 1, 5, 6)), ((2, 3), (2, 3, 5, 6)), ((3,), (3, 5, 6)),
                         ((2, 3), (3, 5, 6))]:
    q = torch.randn(*lead, 5, 4, generator=g, dtype=f64)
    k = torch.randn(*lead, 6, 4, generator=g, dtype=f64)
    v = torch.randn(*lead, 6, 3, generator=g, dtype=f64)
    mask = torch.rand(*mask_shape, generator=g) < 0.5
    mask[..., 0] = True
    what = f"for q {tuple(q.shape)} with a random mask of shape {mask_shape}"
    out, w = attend(q, k, v, mask, what)
    ref_out, ref_w = reference(q, k, v, mask)
    checks.assert_close(w, ref_w, atol=1e-6, rtol=1e-5, name=f"weights {what}",
                        hint="True = may attend: set the False scores to -inf before the softmax. The mask broadcasts "
                             "against the scores (..., T_q, T_k) from the right, as it is.")
    checks.assert_close(out, ref_out, atol=1e-6, rtol=1e-5, name=f"output {what}")
    checks.assert_close(torch.where(mask, 0.0, w), torch.zeros_like(ref_w), atol=0, rtol=0,
                        name=f"weights at the masked positions {what}",
                        hint="A masked key must get weight exactly 0: mask before the softmax, not after.")
    checks.assert_close(w.sum(dim=-1), torch.ones(*lead, 5, dtype=f64), atol=1e-6, name=f"row sums {what}",
                        hint="Masking after the softmax leaves rows that no longer sum to 1.")

# An all-True mask changes nothing; the mask may be passed by keyword.
_, w_plain = attend(q, k, v, what="without a mask")
out, w = scaled_dot_product_attention(q, k, v, mask=torch.ones(5, 6, dtype=torch.bool))
checks.assert_close(w, w_plain, atol=1e-6, name="weights with an all-True mask (keyword mask=)",
                    hint="True means 'may attend': an all-True mask is the same as no mask.")

# Permutation equivariance without a mask: reorder the queries and the outputs reorder the same way;
# reorder the key/value pairs together and nothing changes.
q = torch.randn(2, 7, 4, generator=g, dtype=f64)
k = torch.randn(2, 5, 4, generator=g, dtype=f64)
v = torch.randn(2, 5, 3, generator=g, dtype=f64)
perm_q, perm_k = torch.randperm(7, generator=g), torch.randperm(5, generator=g)
out, w = attend(q, k, v, what="(permutation test)")
out_pq, _ = attend(q[:, perm_q], k, v, what="with the queries permuted")
checks.assert_close(out_pq, out[:, perm_q], atol=1e-6, name="output with the queries permuted",
                    hint="Each query's output depends on that query and on the keys and values only.")
out_pk, w_pk = attend(q, k[:, perm_k], v[:, perm_k], what="with the key/value pairs permuted")
checks.assert_close(out_pk, out, atol=1e-6, name="output with the key/value pairs permuted",
                    hint="Attention is a weighted sum over the keys: their order must not matter.")
checks.assert_close(w_pk, w[:, :, perm_k], atol=1e-6, name="weights with the key/value pairs permuted")

# Under the causal mask, changing the future (even to huge values) never changes the past.
T = 7
lower = torch.ones(T, T, dtype=torch.bool).tril()
q = torch.randn(2, 3, T, 4, generator=g, dtype=f64)
k = torch.randn(2, 3, T, 4, generator=g, dtype=f64)
v = torch.randn(2, 3, T, 5, generator=g, dtype=f64)
out, w = attend(q, k, v, lower, "under the causal mask")
ref_out, _ = reference(q, k, v, lower)
checks.assert_close(out, ref_out, atol=1e-6, rtol=1e-5, name="output under the causal mask")
for t in [0, 3, 5]:
    q2, k2, v2 = q.clone(), k.clone(), v.clone()
    q2[..., t + 1:, :] = torch.randn(2, 3, T - t - 1, 4, generator=g, dtype=f64) * 50
    k2[..., t + 1:, :] = torch.randn(2, 3, T - t - 1, 4, generator=g, dtype=f64) * 50
    v2[..., t + 1:, :] = torch.randn(2, 3, T - t - 1, 5, generator=g, dtype=f64) * 1000
    out2, _ = attend(q2, k2, v2, lower, "after changing future tokens")
    checks.assert_close(out2[..., : t + 1, :], out[..., : t + 1, :], atol=1e-8, rtol=1e-8,
                        name=f"outputs at positions 0..{t} after changing positions {t + 1}..{T - 1}",
                        hint="A masked (future) key must contribute nothing: not to the softmax's sum, "
                             "not through its value. Filling masked scores with 0 is not masking.")

print("scaled_dot_product_attention: hidden tests passed")
### END HIDDEN TESTS

# %% id="c1d2e301" nbgrader={"grade": true, "grade_id": "test_scaled_dot_product_attention_hidden_edges", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for scaled_dot_product_attention run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
import torch.nn.functional as F
from utils import checks, probes

g = torch.Generator().manual_seed(3034)
f64 = torch.float64


def reference(q, k, v, mask=None):
    # PyTorch's own attention; the weights are its output for identity values (one column per key).
    eye = torch.eye(k.shape[-2], dtype=q.dtype).expand(*k.shape[:-2], k.shape[-2], k.shape[-2]).contiguous()
    return (F.scaled_dot_product_attention(q, k, v, attn_mask=mask),
            F.scaled_dot_product_attention(q, k, eye, attn_mask=mask))


def attend(q, k, v, mask=None, what=""):
    result = scaled_dot_product_attention(q, k, v, mask)
    checks.assert_true(isinstance(result, tuple) and len(result) == 2, name=f"scaled_dot_product_attention {what}",
                       problem=f"expected a tuple (output, weights), got {type(result).__name__}.")
    out, w = result
    lead, t_q, t_k, d_v = q.shape[:-2], q.shape[-2], k.shape[-2], v.shape[-1]
    checks.assert_tensor(out, name=f"output {what}", shape=(*lead, t_q, d_v), dtype="floating",
                         hint="output is (..., T_q, d_v).")
    checks.assert_tensor(w, name=f"weights {what}", shape=(*lead, t_q, t_k), dtype="floating",
                         hint="weights is (..., T_q, T_k): queries along rows, keys along columns.")
    return out, w


# Fully masked rows (padding): weights 0 and output 0; every other row as PyTorch computes it.
# (PyTorch returns 0 or NaN for such rows depending on version and backend, so they are checked apart.)
q = torch.randn(3, 2, 4, 5, generator=g, dtype=f64)
k = torch.randn(3, 2, 6, 5, generator=g, dtype=f64)
v = torch.randn(3, 2, 6, 3, generator=g, dtype=f64)
mask = torch.rand(3, 1, 4, 6, generator=g) < 0.6
mask[..., 0] = True
mask[0, :, 2] = False            # one query of sequence 0 sees nothing
mask[1] = False                  # sequence 1 sees nothing at all
has_key = mask.any(dim=-1, keepdim=True)
out, w = attend(q, k, v, mask, "with fully masked rows")
ref_out, ref_w = reference(q, k, v, mask)
checks.assert_close(w, torch.where(has_key, ref_w, 0.0), atol=1e-6, rtol=1e-5, name="weights with fully masked rows",
                    hint="A query whose mask row is all False gets weight 0 on every key (not NaN, not uniform); "
                         "the other rows are unaffected.")
checks.assert_close(out, torch.where(has_key, ref_out, 0.0), atol=1e-6, rtol=1e-5, name="output with fully masked rows",
                    hint="A query with no key to attend to has output 0.")

# Fully masked rows under 3-D masks, which broadcast from the right like any other: one mask per sequence for q of
# shape (B, T_q, d_k), and one per head for q of shape (B, H, T_q, d_k). The rows to zero are those of the mask's
# LAST axis (the keys), whatever its other axes are; other rows of the same sequence keep their keys.
for lead, mask_shape in [((3,), (3, 4, 6)), ((2, 3), (3, 4, 6))]:
    q = torch.randn(*lead, 4, 5, generator=g, dtype=f64)
    k = torch.randn(*lead, 6, 5, generator=g, dtype=f64)
    v = torch.randn(*lead, 6, 3, generator=g, dtype=f64)
    mask = torch.rand(*mask_shape, generator=g) < 0.6
    mask[..., 0] = True
    mask[0, 1] = False             # query 1 of the first mask sees nothing
    mask[2, 3] = False             # and query 3 of the last
    has_key = mask.any(dim=-1, keepdim=True)
    what = f"for q {tuple(q.shape)} with a {len(mask_shape)}-D mask {mask_shape} that has fully masked rows"
    out, w = attend(q, k, v, mask, what)
    ref_out, ref_w = reference(q, k, v, mask)
    checks.assert_close(w, torch.where(has_key, ref_w, 0.0), atol=1e-6, rtol=1e-5, name=f"weights {what}",
                        hint="A query whose mask row (the mask's last axis, over the keys) is all False gets weight 0 "
                             "on every key: find such rows with mask.any(dim=-1, keepdim=True), not along another axis.")
    checks.assert_close(out, torch.where(has_key, ref_out, 0.0), atol=1e-6, rtol=1e-5, name=f"output {what}")

# Huge scores: the softmax must be the stable one.
q = torch.randn(2, 4, 8, generator=g, dtype=f64) * 60
k = torch.randn(2, 5, 8, generator=g, dtype=f64) * 60
v = torch.randn(2, 5, 3, generator=g, dtype=f64)
out, w = attend(q, k, v, what="for scores in the thousands")
ref_out, ref_w = reference(q, k, v)
checks.assert_close(w, ref_w, atol=1e-6, rtol=1e-5, name="weights for scores in the thousands",
                    hint="exp of a score in the thousands overflows; use torch.softmax or subtract the row maximum.")
checks.assert_close(out, ref_out, atol=1e-6, rtol=1e-5, name="output for scores in the thousands")

# Masking is exact whatever the scores: allowed scores near -11000 to -16000 and masked keys that would score far
# higher still get weight exactly 0 (a finite fill such as -1e4 would outscore the allowed keys, and so would a
# finite penalty added to the scores, scores - 1e4: in the last row the masked key 0 scores 11300 above key 4).
q = torch.full((1, 4, 2), 100.0, dtype=f64)
k = -torch.tensor([[30.0, 30.0], [80.0, 80.0], [90.0, 90.0], [100.0, 100.0], [110.0, 110.0]], dtype=f64)[None]
v = torch.randn(1, 5, 3, generator=g, dtype=f64)
mask = torch.tensor([[False, True, True, True, True], [False, False, True, True, False], [False, False, False, True, True],
                     [False, False, False, False, True]])
out, w = attend(q, k, v, mask, "with very negative allowed scores")
ref_out, ref_w = reference(q, k, v, mask)
masking_hint = ("Fill masked scores with -inf (or a number far below any score, such as -1e9 or the dtype's minimum), "
                "not -1e4, and don't add a finite penalty such as -1e4 to them: a masked key must get weight exactly 0 "
                "whatever the scores are.")
checks.assert_close(w, ref_w, atol=1e-6, rtol=1e-5, name="weights with allowed scores near -11000 and masked ones above",
                    hint=masking_hint)
checks.assert_close(torch.where(mask, 0.0, w), torch.zeros(1, 4, 5, dtype=f64), atol=0, rtol=0,
                    name="weights at the masked positions with allowed scores near -11000", hint=masking_hint)
checks.assert_close(out, ref_out, atol=1e-6, rtol=1e-5, name="output with allowed scores near -11000")

# float64 in, float64 out (the dtype of q).
out, w = attend(torch.randn(2, 3, 4, generator=g, dtype=f64), torch.randn(2, 5, 4, generator=g, dtype=f64),
                torch.randn(2, 5, 3, generator=g, dtype=f64), what="in float64")
checks.assert_tensor(out, name="output for float64 inputs", dtype=f64, hint="Return tensors with the dtype of q (no .float()).")
checks.assert_tensor(w, name="weights for float64 inputs", dtype=f64, hint="Return tensors with the dtype of q (no .float()).")
# ... and computed in float64: any order of the operations in float64 agrees with PyTorch's to about 1e-15, while a
# pass through float32 (the scores, the softmax or the product with v) leaves errors near 1e-8 to 1e-6.
q, k, v = (torch.randn(2, 5, 6, generator=g, dtype=f64) * 2, torch.randn(2, 7, 6, generator=g, dtype=f64) * 2,
           torch.randn(2, 7, 3, generator=g, dtype=f64) * 10)
mask = torch.ones(5, 7, dtype=torch.bool).tril(diagonal=2)
out, w = attend(q, k, v, mask, "in float64 (precision)")
ref_out, ref_w = reference(q, k, v, mask)
float64_hint = ("Compute in the dtype of q: a float64 input must not pass through float32 (.float(), a float32 "
                "softmax or matrix product) even if the result is cast back.")
checks.assert_close(w, ref_w, atol=1e-11, rtol=1e-10, name="weights for float64 inputs, at float64 precision", hint=float64_hint)
checks.assert_close(out, ref_out, atol=1e-11, rtol=1e-10, name="output for float64 inputs, at float64 precision", hint=float64_hint)
# bfloat16 in, bfloat16 out: the dtype of q, also where a softmax in float32 would be more accurate.
q, k, v = (torch.randn(2, 4, 8, generator=g, dtype=f64), torch.randn(2, 6, 8, generator=g, dtype=f64),
           torch.randn(2, 6, 3, generator=g, dtype=f64))
out, w = attend(q.bfloat16(), k.bfloat16(), v.bfloat16(), what="in bfloat16")
ref_out, ref_w = reference(q.bfloat16().double(), k.bfloat16().double(), v.bfloat16().double())
half_hint = "Return tensors with the dtype of q: a softmax computed in float32 for accuracy is cast back (.to(q.dtype))."
checks.assert_tensor(out, name="output for bfloat16 inputs", dtype=torch.bfloat16, hint=half_hint)
checks.assert_tensor(w, name="weights for bfloat16 inputs", dtype=torch.bfloat16, hint=half_hint)
checks.assert_close(out.double(), ref_out, atol=5e-2, rtol=5e-2, name="output in bfloat16")
checks.assert_close(w.double(), ref_w, atol=5e-2, rtol=5e-2, name="weights in bfloat16")

# float32 in, a floating result out, at float32 precision.
q, k, v = (torch.randn(2, 3, 6, 8, generator=g), torch.randn(2, 3, 7, 8, generator=g), torch.randn(2, 3, 7, 4, generator=g))
mask = torch.rand(6, 7, generator=g) < 0.7
mask[:, 0] = True
out, w = attend(q, k, v, mask, "in float32")
ref_out, ref_w = reference(q.double(), k.double(), v.double(), mask)
checks.assert_tensor(out, name="output for float32 inputs", dtype=torch.float32, hint="Return tensors with the dtype of q.")
checks.assert_tensor(w, name="weights for float32 inputs", dtype=torch.float32, hint="Return tensors with the dtype of q.")
checks.assert_close(out, ref_out.float(), atol=1e-5, rtol=1e-4, name="output in float32")
checks.assert_close(w, ref_w.float(), atol=1e-5, rtol=1e-4, name="weights in float32")

# The caller's tensors are left alone.
q, k, v = (torch.randn(2, 4, 3, generator=g, dtype=f64), torch.randn(2, 5, 3, generator=g, dtype=f64),
           torch.randn(2, 5, 2, generator=g, dtype=f64))
mask = torch.ones(4, 5, dtype=torch.bool).tril()
call = probes.traced_call(scaled_dot_product_attention, q.clone(), k.clone(), v.clone(), mask.clone())
for arg, before, label in zip(call.args_after, (q, k, v, mask), ("q", "k", "v", "mask")):
    checks.assert_close(arg, before, atol=0, rtol=0, name=f"argument {label} after the call",
                        hint="Don't modify the inputs in place (q /= ..., masked_fill_ on k, ...): compute new tensors.")
# The default: no mask argument at all.
q, k, v = (torch.randn(3, 4, generator=g, dtype=f64), torch.randn(6, 4, generator=g, dtype=f64),
           torch.randn(6, 2, generator=g, dtype=f64))
result = scaled_dot_product_attention(q, k, v)
checks.assert_true(isinstance(result, tuple) and len(result) == 2, name="scaled_dot_product_attention(q, k, v) without a mask",
                   problem=f"expected a tuple (output, weights), got {type(result).__name__}.")
ref_out, ref_w = reference(q, k, v)
checks.assert_close(result[1], ref_w, atol=1e-6, rtol=1e-5, name="weights without a mask argument (mask defaults to None)")
checks.assert_close(result[0], ref_out, atol=1e-6, rtol=1e-5, name="output without a mask argument")
print("scaled_dot_product_attention: hidden edge-case tests passed")
### END HIDDEN TESTS

# %% [markdown] id="bbb4456f"
# ## 7. Exercise: the causal mask
#
# A decoder-only model (GPT) trains on every position of a text at once: position $i$ predicts token
# $i + 1$ from tokens $0, \dots, i$, all in one forward pass. The causal mask keeps that honest: query $i$ may
# attend to key $j$ only when $j \le i$. As a matrix with queries along the rows and keys along the
# columns, the allowed entries are the **lower triangle, diagonal included**: every token sees itself.
#
# Masks come in several conventions, so state yours and read the others' documentation: ours (and the
# boolean `attn_mask` of `F.scaled_dot_product_attention`) has True = may attend; the boolean `attn_mask`
# of `nn.MultiheadAttention` has True = blocked; other code adds a float mask of $0$ and $-\infty$ to the
# scores.
#
# ### Exercise 2: `causal_mask` (1 + 2 points)

# %% id="f30e2c70" nbgrader={"grade": false, "grade_id": "causal_mask", "locked": false, "schema_version": 3, "solution": true, "task": false}
import torch


def causal_mask(T):
    """The causal (look back only) attention mask for a sequence of length T.

    Args:
        T: the sequence length, an int >= 1.
    Returns:
        A new torch.bool tensor of shape (T, T) with True = "may attend": entry [i, j] is True exactly
        when j <= i (query i sees key j at its own position and before), False above the diagonal
        (the future). It can be passed as `mask` to scaled_dot_product_attention, and as attn_mask to
        F.scaled_dot_product_attention, which use the same convention.
    """
    ### BEGIN SOLUTION
    return torch.ones(T, T, dtype=torch.bool).tril()      # lower triangle, diagonal included
    ### END SOLUTION


# %% id="f28f3e25" nbgrader={"grade": true, "grade_id": "test_causal_mask", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
import torch
from utils import checks

m = causal_mask(3)
checks.assert_tensor(m, name="causal_mask(3)", shape=(3, 3), dtype=torch.bool,
                     hint="Return a torch.bool tensor of shape (T, T), True where attending is allowed.")
checks.assert_close(m, torch.tensor([[True, False, False], [True, True, False], [True, True, True]]),
                    name="causal_mask(3)",
                    hint="Row i is the query, column j the key: allowed when j <= i. That is the lower triangle, "
                         "with the diagonal (every token sees itself).")
m = causal_mask(1)
checks.assert_tensor(m, name="causal_mask(1)", shape=(1, 1), dtype=torch.bool)
checks.assert_close(m, torch.tensor([[True]]), name="causal_mask(1)", hint="A single token attends to itself.")
print("causal_mask: visible tests passed")

# %% id="72c6589c" nbgrader={"grade": true, "grade_id": "test_causal_mask_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for causal_mask run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
import torch.nn.functional as F
from utils import checks, probes

for T in [16, 2, 1, 5, 9]:         # no cached mask of an earlier length; T = 1 is one token seeing itself
    m = causal_mask(T)
    checks.assert_tensor(m, name=f"causal_mask({T})", shape=(T, T), dtype=torch.bool,
                         hint="A torch.bool tensor of shape (T, T).")
    i = torch.arange(T)
    checks.assert_close(m, i[:, None] >= i[None, :], atol=0, rtol=0, name=f"causal_mask({T})",
                        hint="True exactly where key j <= query i.")

# A new tensor on every call: not one cached object per length, not slices of one precomputed buffer (a caller
# that edits its mask in place would change every later caller's).
calls = probes.repeated_calls(causal_mask, (4,), (4,), (7,))
checks.assert_true(not calls.same_object and not calls.shares_memory, name="causal_mask(4), causal_mask(4), causal_mask(7)",
                   problem=("two calls returned the same tensor object" if calls.same_object else
                            "the masks of two calls share memory (slices of one buffer)") + ".",
                   hint="Build the mask afresh in every call (torch.ones(T, T, dtype=torch.bool).tril()); a cached mask or "
                        "a slice of a large precomputed one is shared by every caller.")
for T, m in zip((4, 4, 7), calls.results):
    i = torch.arange(T)
    checks.assert_close(m, i[:, None] >= i[None, :], atol=0, rtol=0, name=f"causal_mask({T}) (repeated calls)")

# T is any int >= 1, also beyond the block sizes of well-known models (1024 in GPT-2, 2048 in GPT-3): a crop of one
# fixed-size table comes back short.
for T in [1025, 2049]:
    m = causal_mask(T)
    checks.assert_tensor(m, name=f"causal_mask({T})", shape=(T, T), dtype=torch.bool,
                         hint="Build the (T, T) mask for the T asked for; a crop of a fixed-size table stops at its size.")
    i = torch.arange(T)
    checks.assert_close(m, i[:, None] >= i[None, :], atol=0, rtol=0, name=f"causal_mask({T})")

# What the mask is for: with it, PyTorch's attention is its own causal attention.
g = torch.Generator().manual_seed(3032)
q, k, v = (torch.randn(2, 3, 6, 4, generator=g, dtype=torch.float64) for _ in range(3))
m = causal_mask(6)
checks.assert_tensor(m, name="causal_mask(6)", shape=(6, 6), dtype=torch.bool)
checks.assert_close(F.scaled_dot_product_attention(q, k, v, attn_mask=m),
                    F.scaled_dot_product_attention(q, k, v, is_causal=True), atol=1e-12, rtol=1e-10,
                    name="F.scaled_dot_product_attention with attn_mask=causal_mask(6)",
                    hint="Used as attn_mask (True = may attend) it must give the same result as is_causal=True.")
print("causal_mask: hidden tests passed")
### END HIDDEN TESTS

# %% [markdown] id="bd8ebd67"
# ### Your functions on the worked examples
#
# Your attention always divides by $\sqrt{d_k}$. To get the classic *unscaled* cat / sat / mat numbers
# back, hand it $q\sqrt{d_k}$ instead of $q$: the two factors cancel. The single query of section 4 has no
# values; with the identity as values, the output *is* the weights.

# %% id="b06a0460"
_, w = scaled_dot_product_attention(Q3 * math.sqrt(2), K3, V3)
against_printed('cat/sat/mat, "cat" (unscaled)', [0.51, 0.19, 0.31], w[0])
_, w = scaled_dot_product_attention(Q3 * math.sqrt(2), K3, V3, causal_mask(3))
against_printed('causal, "sat" (unscaled)', [0.27, 0.73], w[1, :2])
out, w = scaled_dot_product_attention(Q4, K4, V4)
against_printed("4 positions, weights of row 1", [0.230, 0.129, 0.410, 0.230], w[0], decimals=3)
print(f"4 positions: output shape {tuple(out.shape)}; equal to section 3: {torch.allclose(out, Z4)}")
_, w = scaled_dot_product_attention(q_3[None], k_123, torch.eye(3, dtype=torch.float64))
against_printed("one query, three keys", [0.6285, 0.2312, 0.1402], w[0], decimals=4)
out_causal, _ = scaled_dot_product_attention(Q4, K4, V4, causal_mask(4))
print("4 positions, causal: same as PyTorch's:",
      torch.allclose(out_causal, F.scaled_dot_product_attention(Q4, K4, V4, is_causal=True)))

# %% [markdown] id="5a1e67e2"
# ## 8. Exercise: a batch of prompts of different lengths
#
# To run several prompts through a model at once they must have the same length, so the shorter ones are
# **padded** with a filler token. For generation they are padded on the **left**: then every prompt ends in
# the last column, and the next token of every prompt is appended in the same place. (Hugging Face
# tokenizers call this `padding_side="left"`.) For $T = 4$:
#
# | position | 0 | 1 | 2 | 3 | `lengths` |
# |---|---|---|---|---|---|
# | prompt 0 | `<pad>` | `<pad>` | the | cat | 2 |
# | prompt 1 | the | cat | sat | on | 4 |
#
# Padding must be invisible: no token may attend to a pad token. Together with the causal rule, query $i$
# of prompt $b$ may attend to key $j$ when $j \le i$ **and** key $j$ is a real token, $j \ge T - \text{lengths}[b]$.
# A query at a pad position then has no key at all it may attend to: those are exactly the fully masked
# rows of exercise 1, whose output is defined to be 0.
#
# The scores of a batch with heads have shape $(B, H, T, T)$, and one mask serves every head, so the mask
# has shape $(B, 1, T, T)$. The size-1 head dimension matters: broadcasting lines shapes up from the right,
# so a $(B, T, T)$ mask would be read as $(1, B, T, T)$, an error, or, when $B$ happens to equal $H$, silently
# the mask of prompt $h$ applied to head $h$.
#
# **Predict first.** The mask of prompt 0 above, as a $4 \times 4$ table.
#
# <details><summary>Answer</summary>
#
# Keys 0 and 1 are padding, so columns 0 and 1 are all False. Queries 0 and 1 (the pads) see nothing: rows
# 0 and 1 are all False. Query 2 (*the*) sees key 2; query 3 (*cat*) sees keys 2 and 3:
#
# | | 0 | 1 | 2 | 3 |
# |---|---|---|---|---|
# | 0 | F | F | F | F |
# | 1 | F | F | F | F |
# | 2 | F | F | T | F |
# | 3 | F | F | T | T |
# </details>
#
# ### Exercise 3: `left_padded_causal_mask` (1 + 2 + 1 points)
#
# *Points: 1 visible, 2 hidden (batches of several lengths, against PyTorch's causal attention per prompt), 1 hidden (edge cases: empty prompts, T = 1, prompts filling all T positions, `lengths` left unchanged, the device).*

# %% id="9ea889d7" nbgrader={"grade": false, "grade_id": "left_padded_causal_mask", "locked": false, "schema_version": 3, "solution": true, "task": false}
import torch


def left_padded_causal_mask(lengths, T):
    """The attention mask for a batch of prompts padded on the left to length T.

    Prompt b occupies the last lengths[b] positions, T - lengths[b], ..., T - 1; the positions before
    it are padding. Query i of prompt b may attend to key j when j <= i (causal) and j >= T - lengths[b]
    (key j is a real token).

    Args:
        lengths: 1-D int64 tensor of shape (B,), with 0 <= lengths[b] <= T.
        T: the padded length, an int >= 1.
    Returns:
        A new torch.bool tensor of shape (B, 1, T, T) on the device of lengths, True = "may attend" (the size-1 dimension is
        for the heads: the mask broadcasts against scores of shape (B, H, T, T)). Every entry is its own element,
        also when no prompt is padded (not an expand() of one (T, T) mask), so a caller may edit one prompt's
        mask in place. The rows of queries
        at padding positions are all False: they have no key they may attend to; a prompt of length 0
        gets an all-False (T, T) mask, and one of length T the plain causal mask. lengths is not modified.
    """
    ### BEGIN SOLUTION
    pos = torch.arange(T, device=lengths.device)
    real_key = pos[None, :] >= (T - lengths)[:, None]                # (B, T): key j is a real token
    look_back = pos[:, None] >= pos[None, :]                          # (T, T): j <= i
    return (look_back[None, :, :] & real_key[:, None, :])[:, None]    # (B, 1, T, T)
    ### END SOLUTION


# %% id="07d16a34" nbgrader={"grade": true, "grade_id": "test_left_padded_causal_mask", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
import torch
from utils import checks, probes

F_, T_ = False, True
m = left_padded_causal_mask(torch.tensor([2, 4]), 4)
checks.assert_tensor(m, name="left_padded_causal_mask([2, 4], 4)", shape=(2, 1, 4, 4), dtype=torch.bool,
                     hint="Shape (B, 1, T, T): one mask per prompt, a size-1 dimension for the heads, then "
                          "queries x keys. dtype torch.bool, True = may attend.")
prompt0 = [[F_, F_, F_, F_], [F_, F_, F_, F_], [F_, F_, T_, F_], [F_, F_, T_, T_]]
checks.assert_close(m[0, 0], torch.tensor(prompt0), name="mask of prompt 0 (length 2 of 4)",
                    hint="Prompt 0 is <pad> <pad> the cat: no query may attend to the keys 0 and 1 (padding), "
                         "and query i may attend only to keys j <= i.")
prompt1 = [[T_, F_, F_, F_], [T_, T_, F_, F_], [T_, T_, T_, F_], [T_, T_, T_, T_]]
checks.assert_close(m[1, 0], torch.tensor(prompt1), name="mask of prompt 1 (length 4 of 4, no padding)",
                    hint="Without padding, this is the causal mask: the lower triangle with the diagonal.")
m = left_padded_causal_mask(torch.tensor([1]), 3)
checks.assert_close(m, torch.tensor([[[[F_, F_, F_], [F_, F_, F_], [F_, F_, T_]]]]),
                    name="left_padded_causal_mask([1], 3)",
                    hint="The one real token sits in the last position, T - 1, and sees only itself.")

# The caller's lengths stay as they were.
call = probes.traced_call(left_padded_causal_mask, torch.tensor([2, 4]), 4)
checks.assert_equal(call.args_after[0].tolist(), [2, 4], name="lengths after left_padded_causal_mask([2, 4], 4)",
                    hint="Compute T - lengths into a new tensor; lengths.neg_() or lengths -= ... changes the caller's tensor.")

# A prompt of length 0 is all padding: its mask is all False.
m = left_padded_causal_mask(torch.tensor([0, 1]), 2)
checks.assert_close(m[0, 0], torch.zeros(2, 2, dtype=torch.bool), name="mask of an empty prompt (length 0 of 2)",
                    hint="Prompt b starts at T - lengths[b] = T: no key is a real token, so no query may attend.")
print("left_padded_causal_mask: visible tests passed")

# %% id="5ae3cb54" nbgrader={"grade": true, "grade_id": "test_left_padded_causal_mask_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for left_padded_causal_mask run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
import torch.nn.functional as F
from utils import checks


def expected_mask(lengths, T):
    # Entry by entry, from the definition.
    return torch.tensor([[[[j <= i and j >= T - n for j in range(T)] for i in range(T)]] for n in lengths])


# T and lengths are any ints in range: also past 127 and 255, where T - lengths kept in int8 or uint8 wraps around.
for lengths, T in [([3, 6, 2, 1], 6), ([5, 2, 7], 7), ([2, 2], 5), ([4, 1, 3, 2, 4], 8), ([1, 300, 0, 129], 300)]:
    name = f"left_padded_causal_mask({lengths}, {T})"
    m = left_padded_causal_mask(torch.tensor(lengths), T)
    checks.assert_tensor(m, name=name, shape=(len(lengths), 1, T, T), dtype=torch.bool,
                         hint="Shape (B, 1, T, T), dtype torch.bool.")
    checks.assert_close(m, expected_mask(lengths, T), atol=0, rtol=0, name=name,
                        hint="Allowed: key j <= query i AND key j is real (j >= T - lengths[b]). Padding is on the "
                             "left, and it is the keys at pad positions that nobody may attend to.")

# What the mask is for: with it, every real position of a padded batch gets exactly the output of its
# prompt run alone (no padding, plain causal attention), for every head.
g = torch.Generator().manual_seed(3033)
lengths, T, H = [2, 5, 3], 5, 2
q, k, v = (torch.randn(3, H, T, 4, generator=g, dtype=torch.float64) * 2 for _ in range(3))
m = left_padded_causal_mask(torch.tensor(lengths), T)
checks.assert_tensor(m, name=f"left_padded_causal_mask({lengths}, {T})", shape=(3, 1, T, T), dtype=torch.bool)
out = F.scaled_dot_product_attention(q, k, v, attn_mask=m)
for b, n in enumerate(lengths):
    alone = F.scaled_dot_product_attention(q[b, :, T - n:], k[b, :, T - n:], v[b, :, T - n:], is_causal=True)
    checks.assert_close(out[b, :, T - n:], alone, atol=1e-10, rtol=1e-8,
                        name=f"attention of prompt {b} (length {n}) with the mask, at its real positions",
                        hint="Padded or not, a prompt's tokens must attend exactly as if the padding were absent.")
print("left_padded_causal_mask: hidden tests passed")
### END HIDDEN TESTS

# %% id="c1d2e302" nbgrader={"grade": true, "grade_id": "test_left_padded_causal_mask_hidden_edges", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for left_padded_causal_mask run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks, probes


def expected_mask(lengths, T):
    # Entry by entry, from the definition.
    return torch.tensor([[[[j <= i and j >= T - n for j in range(T)] for i in range(T)]] for n in lengths])


for lengths, T in [([0, 6, 0, 1], 6), ([1], 1), ([0, 1], 1), ([0], 3), ([4, 4, 4], 4)]:
    name = f"left_padded_causal_mask({lengths}, {T})"
    m = left_padded_causal_mask(torch.tensor(lengths), T)
    checks.assert_tensor(m, name=name, shape=(len(lengths), 1, T, T), dtype=torch.bool,
                         hint="Shape (B, 1, T, T), dtype torch.bool.")
    checks.assert_close(m, expected_mask(lengths, T), atol=0, rtol=0, name=name,
                        hint="A prompt of length 0 is all padding: its mask is all False. A prompt of length T "
                             "has no padding: its mask is the causal mask.")

lengths = torch.tensor([2, 0, 5])
call = probes.traced_call(left_padded_causal_mask, lengths.clone(), 5)
checks.assert_close(call.args_after[0], lengths, atol=0, rtol=0, name="lengths after left_padded_causal_mask",
                    hint="Don't modify lengths in place (lengths.neg_(), lengths -= ...): compute T - lengths as a new tensor.")

# A new tensor on every call: not one object per (lengths, T) kept from an earlier call (a caller that edits its
# mask in place, say to hide one more key, would change every later caller's).
calls = probes.repeated_calls(left_padded_causal_mask, (torch.tensor([2, 3]), 3), (torch.tensor([2, 3]), 3),
                              (torch.tensor([1]), 3))
checks.assert_true(not calls.same_object and not calls.shares_memory,
                   name="left_padded_causal_mask([2, 3], 3) twice, then ([1], 3)",
                   problem=("two calls returned the same tensor object" if calls.same_object else
                            "the masks of two calls share memory") + ".",
                   hint="Build the mask afresh in every call; a mask cached per lengths is shared by every caller.")
for (lengths, T), m in zip((([2, 3], 3), ([2, 3], 3), ([1], 3)), calls.results):
    checks.assert_close(m, expected_mask(lengths, T), atol=0, rtol=0,
                        name=f"left_padded_causal_mask({lengths}, {T}) (repeated calls)")
print("left_padded_causal_mask: hidden edge-case tests passed")
# Every entry its own element, also when every prompt has length T and the B masks are all the plain causal mask:
# an expand() of one (T, T) mask has stride 0 across the batch, so editing one prompt's mask would edit all of them
# (and in-place writes raise).
for lengths, T in [([4, 4, 4], 4), ([3, 1], 3), ([2, 2], 2)]:
    shared = probes.make("utils.memory.result_has_shared_elements", left_padded_causal_mask, torch.tensor(lengths), T)
    checks.assert_true(not shared, name=f"left_padded_causal_mask({lengths}, {T}): one element per entry",
                       problem="the mask is an expand()ed view: several of its entries are one memory location.",
                       hint="Return a tensor with B * T * T elements of its own (the & of the two masks is one; "
                            "expand(...) is not, add .clone() if you expand).")
# On the device of lengths: lengths on PyTorch's meta device (shapes, no values) stand in for lengths on a GPU. A mask
# built from positions made without device= is a CPU tensor; code that reads the lengths' values cannot run there and
# is not judged by this check.
from utils import probes
seen = probes.make("utils.meta_device.result_device_on_meta", left_padded_causal_mask, torch.tensor([2, 4, 0]), 4)
checks.assert_kept_on_meta(seen,
                           name="the device of left_padded_causal_mask(lengths, 4) for lengths on another device than the CPU (the meta device)",
                           hint="Make the positions on lengths.device (torch.arange(T, device=lengths.device)): "
                                "with lengths on a GPU, a tensor made without device= is on the CPU.")
# The same with fake meta tensors (shapes and a device, no values): unlike plain meta, lengths.cpu() works there, so a
# mask built from lengths moved to the CPU shows as a CPU result. Reading the values is not judged there (the next check is).
seen = probes.make("utils.meta_device.result_device_on_fake_meta", left_padded_causal_mask, torch.tensor([2, 4, 0]), 4)
checks.assert_kept_on_meta(seen,
                           name="the device of left_padded_causal_mask(lengths, 4) for lengths on another device than the CPU (fake meta tensors, which .cpu() can move)",
                           hint="Return the mask on lengths.device: don't move lengths to the CPU (lengths.cpu()) "
                                "and build the mask there, or move the result back with .to(lengths.device).")
# And with the values kept (lengths labelled cuda:0, utils.fake_cuda): a mask made with torch.zeros(...) without
# device= and filled prompt by prompt from lengths.tolist() shows as a CPU result.
seen = probes.make("utils.fake_cuda.result_device_on_fake_cuda", left_padded_causal_mask, torch.tensor([2, 4, 0]), 4)
checks.assert_kept_on_fake_cuda(seen,
                                name="the device of left_padded_causal_mask(lengths, 4) for lengths on a GPU (emulated, the values kept)",
                                hint="Make every tensor of the mask on lengths.device (torch.zeros(..., device=lengths.device), "
                                     "torch.arange(T, device=lengths.device)).")
### END HIDDEN TESTS

# %% [markdown] id="1df74f31"
# Your two functions together on a small batch: three prompts of different lengths, left-padded, two
# heads, random vectors (the pad positions get random vectors too, to show they don't leak). Each prompt's
# real positions must get exactly what the prompt alone gets, and the pad rows must be 0, not NaN.

# %% id="f63f94eb"
prompts = [["the", "cat"], ["the", "cat", "sat", "on"], ["mat"]]
T = max(len(p) for p in prompts)
padded = [["<pad>"] * (T - len(p)) + p for p in prompts]
lengths = torch.tensor([len(p) for p in prompts])
batch_mask = left_padded_causal_mask(lengths, T)                    # (3, 1, 4, 4)

g = torch.Generator().manual_seed(8)
qb, kb, vb = (torch.randn(3, 2, T, 4, generator=g) for _ in range(3))   # batch 3, 2 heads, T = 4, d = 4
out_b, w_b = scaled_dot_product_attention(qb, kb, vb, batch_mask)
for b, p in enumerate(prompts):
    n = len(p)
    alone, _ = scaled_dot_product_attention(qb[b, :, T - n:], kb[b, :, T - n:], vb[b, :, T - n:], causal_mask(n))
    gap = (out_b[b, :, T - n:] - alone).abs().max().item()
    pad_rows_zero = bool((out_b[b, :, : T - n] == 0).all())
    print(f"{' '.join(padded[b]):<24} largest difference from the prompt alone: {gap:.1e}   "
          f"pad rows all 0: {pad_rows_zero}   NaN anywhere: {bool(out_b[b].isnan().any())}")
    padding_ok = (padding_ok if b else True) and gap < 1e-6 and pad_rows_zero and not out_b[b].isnan().any()
claims.claim("Each padded prompt gets the outputs it gets alone, its pad rows are 0, and no NaN appears",
             holds=padding_ok, why_it_may_not="your scaled_dot_product_attention or left_padded_causal_mask differs")

fig, axes = plt.subplots(1, 3, figsize=(13, 3.6), layout="constrained")
for b, ax in enumerate(axes):
    plotting.attention_heatmap(w_b[b, 0], padded[b], ax=ax, title=f"prompt {b}, head 0")
fig.suptitle("Left padding with the causal mask: pad keys get no weight, pad queries attend to nothing")
plt.show()

# %% [markdown] id="737ce0e2"
# ## 9. Scale: the $T \times T$ matrix
#
# Every query scores every key, so a head of a layer builds a $T \times T$ matrix of scores, and then
# another of weights. A frequently quoted figure: at $T = 8192$, in float32, that is 256 MB for one such
# matrix. Computed:

# %% id="e8284673"
T = 8192
one_matrix = T * T * (torch.finfo(torch.float32).bits // 8)
print(f"T = {T}: {T * T:,} entries x 4 bytes = {one_matrix:,} bytes = {one_matrix / 2**20:,.0f} MiB "
      f"= {one_matrix / 1e6:,.0f} MB, for one head of one layer")
heads, layers = 12, 12                                          # GPT-2 small
print(f"{heads} heads x {layers} layers, all kept for the backward pass: "
      f"{heads * layers * one_matrix / 2**30:,.0f} GiB for one sequence")
for T in [1024, 4096, 8192, 32768, 131072]:
    print(f"T = {T:>7,}: {T * T * 4 / 2**20:>10,.0f} MiB per head and layer")

# %% [markdown] id="7f203157"
# The "256 MB" is 256 **MiB** ($2^{28}$ bytes, 268 million bytes). Doubling the context quadruples it, and at
# 128k tokens one head of one layer would need 64 GiB. A model that kept the weights of every head and layer
# for the backward pass would run out of memory long before that.
#
# ### Measured: naive attention against PyTorch's fused kernel
#
# On this machine's CPU, for one head with $d_k = 64$ and growing $T$: the naive version (the three lines of
# exercise 1, with the causal mask) against `F.scaled_dot_product_attention(q, k, v, is_causal=True)`.
# Memory is measured by watching PyTorch work: a small helper sees every tensor an operation creates
# inside the call and records the most bytes alive at once (it does not see scratch memory a kernel uses
# internally and frees before returning). Times are CPU times, the best of a few runs on one thread, so
# other programs running at the same time disturb them little.

# %% id="08a99f39"
from utils.memory import PeakTensorMemory   # `with PeakTensorMemory() as m:` ... then m.peak: the most
                                           # bytes held at once by tensors created inside


def naive_causal_attention(q, k, v):
    n = q.shape[-2]
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])                                  # T x T
    s = s.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(diagonal=1), -math.inf)    # T x T
    return torch.softmax(s, dim=-1) @ v                                                   # T x T, then T x d


def fused_causal_attention(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def best_time(fn, *args, repeats=3):
    # CPU time of this process (not wall-clock time): other programs running meanwhile don't count.
    best = math.inf
    for _ in range(repeats):
        start = time.process_time()
        fn(*args)
        best = min(best, time.process_time() - start)
    return best


methods = {"naive: softmax(QKᵀ/√d)V": naive_causal_attention, "F.scaled_dot_product_attention": fused_causal_attention}
sizes = [256, 512, 1024, 2048, 4096]
measured = {name: {"seconds": [], "bytes": []} for name in methods}
g = torch.Generator().manual_seed(9)
threads = torch.get_num_threads()
torch.set_num_threads(1)              # one thread: other programs on the machine disturb the timings less
started = time.perf_counter()
for n in sizes:
    q, k, v = (torch.randn(1, 1, n, 64, generator=g) for _ in range(3))
    outputs = []
    for name, fn in methods.items():
        with PeakTensorMemory() as memory:
            outputs.append(fn(q, k, v))
        measured[name]["bytes"].append(memory.peak)
        measured[name]["seconds"].append(best_time(fn, q, k, v, repeats=2 if n >= 2048 else 3))
    agree = (outputs[0] - outputs[1]).abs().max().item()
    print(f"T = {n:>4}: " + "   ".join(f"{name.split(':')[0]} {m['seconds'][-1] * 1e3:7.1f} ms {m['bytes'][-1] / 2**20:7.2f} MiB"
                                        for name, m in measured.items()) + f"   (outputs agree to {agree:.0e})")
print(f"measured in {time.perf_counter() - started:.1f} s, on one CPU thread")
torch.set_num_threads(threads)
naive, fused = measured.values()
memory_ratio = naive["bytes"][-1] / fused["bytes"][-1]
speedup = naive["seconds"][-1] / fused["seconds"][-1]
over_one_matrix = [b / (n * n * 4) for n, b in zip(sizes, naive["bytes"])]
claims.claim(f"The naive version holds at most {max(over_one_matrix):.2f} times one T x T float32 "
             f"matrix; at T = {sizes[-1]} the fused kernel holds {memory_ratio:.0f} times less memory and runs "
             f"{speedup:.1f} times faster", holds=1 <= min(over_one_matrix) and max(over_one_matrix) < 4
             and memory_ratio > 100 and speedup > 2, why_it_may_not="timings on a busy machine vary")

fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), layout="constrained")
for name, m in measured.items():
    axes[0].plot(sizes, [s * 1e3 for s in m["seconds"]], marker="o", label=name)
    axes[1].plot(sizes, [b / 2**20 for b in m["bytes"]], marker="o", label=name)
axes[1].plot(sizes, [n * n * 4 / 2**20 for n in sizes], linestyle="--", color="gray", label="one T×T float32 matrix")
axes[0].set(xscale="log", yscale="log", xlabel="sequence length T", ylabel="CPU time (ms, best of runs)",
            title="Time: one head, d_k = 64, causal, one thread")
axes[1].set(xscale="log", yscale="log", xlabel="sequence length T", ylabel="peak tensor memory (MiB)",
            title="Memory allocated during the call")
for ax in axes:
    ax.minorticks_off()
    ax.set_xticks(sizes, labels=[str(n) for n in sizes])
    ax.legend(fontsize=8)
plt.show()

# %% [markdown] id="23857896"
# The naive version's memory follows the dashed line, times a small factor: it holds the scores, the masked
# scores and the boolean mask, each $T \times T$, at the same moment. The fused kernel's memory is just its
# output (and one number per row, for the backward pass): it grows like $T$, not $T^2$, and at the longest length
# the gap is two orders of magnitude (the factor is printed above). It is also several times faster here: it never writes the big
# matrices out and reads them back, and it skips the blocks above the diagonal that the mask would
# discard anyway.
#
# ### What FlashAttention changes
#
# The naive algorithm writes $S = QK^\top$ to memory, reads it back for the softmax, writes $P$, and reads it
# again to multiply by $V$. On a GPU, reading and writing the large, slow memory (HBM) takes longer than the
# arithmetic, so attention is limited by memory traffic, and the $T \times T$ matrices are also what runs
# out of memory first. **FlashAttention** (Dao et al., 2022) computes exactly the same result, not an
# approximation, without ever storing $S$ or $P$:
#
# * it cuts $Q$ into blocks of rows and $K$, $V$ into blocks of rows, small enough to live in the fast
#   on-chip memory (SRAM), and for each block of queries streams over the blocks of keys and values;
# * the softmax is computed *online*: for every query row it keeps the running maximum $m$, the running
#   sum $\ell$ of $e^{s - m}$ and the running output; when a new block raises the maximum, the old sum and
#   output are rescaled by $e^{m_\text{old} - m_\text{new}}$, so the final division gives the exact softmax;
# * extra memory is $O(T)$ (the output, and $m$ and $\ell$ per row) instead of $O(T^2)$; the backward pass
#   recomputes the blocks of $S$ from $Q$ and $K$ instead of storing them, trading a little arithmetic for
#   far less memory traffic;
# * with the causal mask, blocks entirely above the diagonal are skipped: about half the work.
#
# `F.scaled_dot_product_attention` picks an implementation for you: FlashAttention or a similar
# memory-efficient kernel on a GPU when the inputs allow (half precision, supported shapes), a tiled kernel
# in the same spirit on the CPU (the one measured above), and the plain math otherwise. The idea that makes
# all of them exact fits in one sentence: a softmax can be computed block by block, as long as the running
# sum and output are rescaled by $e^{m_\text{old} - m_\text{new}}$ whenever a block raises the running maximum.
# Notebook 10 has you build it: the online softmax, tiled attention equal to
# `F.scaled_dot_product_attention` for any tile size, and its memory measured.
#
# ## Summary
#
# * Attention in three steps: scores $\langle q, k_i\rangle$, softmax, weighted sum of the values; a soft,
#   differentiable dictionary look-up whose queries, keys and values are learned.
# * In matrix form, $\operatorname{softmax}(QK^\top/\sqrt{d_k})\,V$: the softmax runs along each row (over the
#   keys), every output row is a convex combination of value rows, and the scale $1/\sqrt{d_k}$ acts as a
#   temperature (notebook 04 explains its value).
# * Classic worked examples often skip the scale (cat / sat / mat), round before multiplying, or carry a
#   slip (entry (3, 3) of the four-position walkthrough): recompute them, and trust the code.
# * Masks: True = may attend, $-\infty$ before the softmax; the causal mask is the lower triangle with the
#   diagonal; left padding adds masked key columns and fully masked query rows, defined here to give 0.
# * The $T \times T$ matrices cost $4T^2$ bytes per head and layer in float32 (256 MiB at $T = 8192$);
#   fused kernels such as FlashAttention give the same result in $O(T)$ memory by tiling and an online
#   softmax.
#
# **Next: notebook 04**, the variance of dot products: why the scale is exactly $1/\sqrt{d_k}$, and what goes
# wrong without it.
