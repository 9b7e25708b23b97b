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

# %% [markdown] id="nb11-000"
# # 11 · What heads learn: induction heads, found in a model you train
#
# Notebook 05 drew attention heads by hand. Here we train small transformers and *find* what their
# heads do, the way interpretability research does (Elhage et al., "A Mathematical Framework for
# Transformer Circuits", 2021; Olsson et al., "In-context Learning and Induction Heads", 2022):
#
# 1. **The induction pattern** $[A][B] \dots [A] \to [B]$: having seen $A$ followed by $B$ once, predict
#    $B$ after the next $A$. It is the simplest form of in-context learning, and we show why **one**
#    attention layer cannot implement it while **two** can.
# 2. **Training** a 1-layer and a 2-layer attention-only transformer on sequences that end with a
#    repeated random segment: the 2-layer model learns to copy, with a sudden drop in the loss (a
#    *phase change*).
# 3. **Reading the heads** (exercises 1 and 2): which head looks at the previous token, which head looks
#    at the token after an earlier copy of the current one, and which heads copy what they attend to.
# 4. **Ablations** (exercise 3): switch a head off and measure what the model loses.
# 5. **Superposition** in miniature (exercise 4): how many nearly orthogonal directions fit in $d$
#    dimensions, and why an embedding can hold more features than it has dimensions.
# 6. **"bank"**: the same token before and after attention, in a trained model and in an untrained one.
#
# **Time.** Everything runs on the CPU, whatever the device: the whole notebook takes about 25 CPU seconds on a
# 2-core laptop (one thread), the longest cell (training the two models of section 1) about 15 of them, and no cell
# runs longer than 30 seconds. On a GPU: untimed (nothing here moves to it).
#
# Each main experiment ends with a **claim**: a sentence printed by the cell that measured it, with its numbers and a
# ✓ when it holds on your run (a ✗ and a note when it does not: the prose around it assumes it).
#
# **How the exercises work.** Each exercise is a function with a docstring that states what goes in and
# what comes out. Replace `raise NotImplementedError()` with your code, then run the test cell below it:
# its messages say what was expected and what came back. When the notebook is graded, further hidden
# tests check the same function on new inputs (with models and seeds made inside the tests, so they never
# depend on how your own training run went). Run the cells in order.

# %% id="nb11-001" jupyter={"source_hidden": true} nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
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

# %% id="nb11-002"
import math
import time

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F

from utils import claims, progress
from utils.attention_only import AttentionOnlyTransformer

torch.set_printoptions(precision=3, sci_mode=False)

# %% [markdown] id="nb11-003"
# ## 1. The induction pattern, and why it needs two layers
#
# Take a text in which "Mr Dursley" appeared once. The next time the model sees "Mr", a good guess is
# "Dursley". In tokens: earlier in the context, $A$ was followed by $B$; now the current token is $A$
# again; predict $B$. That requires, at the current position, attending to **the token right after the
# earlier $A$**: the position of $B$.
#
# **Why one layer cannot.** In a single attention layer, the query at the current position (token $A$)
# can only match keys that are computed from *one* token each (plus its position): the key at position
# $j$ knows $x_j$ and $j$, nothing else. The position we want is the one whose **previous** token is $A$;
# its own token is $B$, which the query knows nothing about. A content match can find the earlier $A$
# itself (and copy $A$: wrong), and a positional match can find "the position $k$ steps back" (right only
# if the repeat always comes at the same distance). Neither finds "the token after the earlier $A$" when
# the distance varies.
#
# **Why two layers can.** A first-layer head can write information about *other positions* into the
# residual stream, which a second-layer head then uses. There are two classic routes:
#
# * **K-composition** (the route usually drawn): a *previous-token head* in layer 1 writes "my previous
#   token was $A$" at the position of $B$; a layer-2 head whose query says "I am $A$" matches that in its
#   **keys** and attends to $B$.
# * **Q-composition**: a *duplicate-token head* in layer 1 attends, from the current $A$, to the earlier
#   $A$ and copies its **position** into the residual stream; a layer-2 head uses that in its **query**
#   ("the earlier copy sat at position $j$") to attend to position $j + 1$, which holds $B$.
#
# Either way, the layer-2 head attends to $B$ and its value/output circuit **copies** $B$ into the
# prediction: that head is an **induction head**.
#
# **Where the positions go decides which routes exist.** Q-composition needs a head to copy an earlier
# token's *position* into the residual stream, which is possible only if position vectors are part of
# what heads read as values. In GPT-2 they are (learned positions are added to the token embeddings).
# Many recent models instead give positions only to the **queries and keys** (RoPE, ALiBi): a head can
# still find "the previous position", but the residual stream carries only what tokens were written, so
# Q-composition is impossible and the model has to build a previous-token head. Our models do the same
# in its simplest form (Shortformer's *position-infused attention*: learned position vectors added to
# what the queries and keys are computed from, never to the values), with one head per layer, so that
# each head can be read on its own. At the end of section 3 a model with GPT-2's positions is trained
# too, and its scores show which route it took instead.
#
# **The data.** Random tokens from a vocabulary of 32, 24 per sequence; the last $n$ of them (with $n$
# drawn from 4 to 10 for every sequence) are a copy of the $n$ tokens before them. The first part is
# unpredictable (loss $\ln 32 = 3.47$ nats at best); in the repeated part every token after the first
# can be predicted exactly, by induction. Because $n$ varies, the distance to the earlier copy varies:
# position alone does not help.

# %% id="nb11-004"
VOCAB, T, MIN_REPEAT, MAX_REPEAT = 32, 24, 4, 10


def repeated_batch(batch_size, generator, vocab=VOCAB, T=T, min_repeat=MIN_REPEAT, max_repeat=MAX_REPEAT):
    """Sequences of random tokens ending in a copy of the segment before it; and which predictions are
    predictable (the target is in the repeat and is not its first token). (The sizes are bound when the
    function is defined, so later cells that reuse the name T cannot change them.)"""
    tokens = torch.randint(0, vocab, (batch_size, T), generator=generator)
    lengths = torch.randint(min_repeat, max_repeat + 1, (batch_size,), generator=generator)
    predictable = torch.zeros(batch_size, T - 1, dtype=torch.bool)     # prediction t is of token t + 1
    for row, n in enumerate(lengths.tolist()):
        tokens[row, T - n:] = tokens[row, T - 2 * n:T - n]
        predictable[row, T - n:] = True        # targets T - n + 1 .. T - 1: the repeat after its first token
    return tokens, predictable


example, example_mask = repeated_batch(1, torch.Generator().manual_seed(3))
print("tokens     ", example[0].tolist())
print("predictable", ["  ." if not m else "  ^" for m in example_mask[0].tolist()])
print(f"best possible loss: {math.log(VOCAB):.3f} nats on unpredictable tokens, 0 on predictable ones")

# %% [markdown] id="nb11-005"
# ### Training both models
#
# **Predict before you run.** Both models reach about the same loss on the unpredictable tokens. On the
# *predictable* ones, what do you expect from the 1-layer model: $\ln 32 = 3.47$, about 0, or in
# between? (Hint: it can find the earlier occurrence of the *current* token by content, and it can
# learn that the answer is usually *some* token of the context.)
#
# <details><summary>Answer</summary>
#
# In between. Without induction it cannot know *which* earlier token comes next, but it can learn that
# the next token is usually one of the tokens already in the context, and spread its probability over
# them: better than $\ln 32$, far from 0. The 2-layer model can do much better. The cell prints both.
# </details>
#
# Each model (one head per layer, width 32, positions given to queries and keys only) trains for 3,000
# steps of 32 sequences with AdamW; the cell records the loss on the predictable tokens at every step.

# %% id="nb11-006"
STEPS, BATCH, N_HEAD = 3000, 32, 1


def masked_loss(logits, tokens, mask):
    losses = F.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten(), reduction="none").view(mask.shape)
    return losses[mask].mean()


def train_model(n_layer, seed=0, positions="attention", vocab=VOCAB, T=T):
    model = AttentionOnlyTransformer(vocab, d_model=32, n_head=N_HEAD, n_layer=n_layer, block_size=T, seed=seed,
                                     positions=positions)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)
    generator = torch.Generator().manual_seed(seed)
    curve = []
    with progress.training_steps(STEPS, f"{n_layer}-layer model", cpu_seconds=True) as bar:
        for step in bar:
            tokens, mask = repeated_batch(BATCH, generator)
            logits = model(tokens[:, :-1])
            losses = F.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten(), reduction="none").view(mask.shape)
            optimizer.zero_grad(set_to_none=True)
            losses.mean().backward()
            optimizer.step()
            curve.append(losses[mask].mean().item())
            bar.show(loss=curve[-1])
    return model.eval(), curve


start = time.process_time()
models, curves = {}, {}
for n_layer in (1, 2):
    models[n_layer], curves[n_layer] = train_model(n_layer)
print(f"trained both models in {time.process_time() - start:.0f} CPU s")

test_tokens, test_mask = repeated_batch(2000, torch.Generator().manual_seed(12345))
predictable_loss = {}
with torch.no_grad():
    for n_layer, model in models.items():
        logits = model(test_tokens[:, :-1])
        predictable_loss[n_layer] = masked_loss(logits, test_tokens, test_mask).item()
        print(f"{n_layer}-layer model: loss {predictable_loss[n_layer]:.3f} nats on the predictable "
              f"tokens, {masked_loss(logits, test_tokens, ~test_mask):.3f} on the others (ln {VOCAB} = {math.log(VOCAB):.3f})")


def smooth(values, width=50):
    kernel = torch.ones(width) / width
    return torch.conv1d(torch.tensor(values).view(1, 1, -1), kernel.view(1, 1, -1)).flatten()


fig, ax = plt.subplots(figsize=(7, 3.5))
for n_layer in (1, 2):
    ax.plot(smooth(curves[n_layer]), label=f"{n_layer} layer{'s' if n_layer > 1 else ''}")
ax.axhline(math.log(VOCAB), color="gray", linestyle=":", label=f"ln {VOCAB}")
ax.set_xlabel("training step")
ax.set_ylabel("loss on predictable tokens (nats)")
ax.set_title("The 2-layer model's phase change")
ax.legend()
plt.show()
smoothed = smooth(curves[2]).tolist()
below = {level: next(step for step, value in enumerate(smoothed) if value < level) for level in (3.0, 2.5, 2.0, 1.0)}
jump = below[1.0]
print(f"the 2-layer model's smoothed loss first fell below 1 nat at step {jump}")
claims.claim(f"On the predictable tokens the 1-layer model ends in between: {predictable_loss[1]:.2f} nats, below "
             f"ln {VOCAB} = {math.log(VOCAB):.2f} and far from 0; the 2-layer model reaches {predictable_loss[2]:.2f}",
             holds=1.0 < predictable_loss[1] < math.log(VOCAB) - 0.3 and predictable_loss[2] < predictable_loss[1] / 2)
slow, fast = below[2.5] - below[3.0], below[1.0] - below[2.0]
claims.claim(f"The 2-layer model's drop is sudden: its smoothed loss took {slow} steps to fall from 3 to 2.5 nats "
             f"(steps {below[3.0]}-{below[2.5]}), then only {fast} to fall a whole nat, from 2 to 1 (steps "
             f"{below[2.0]}-{below[1.0]})", holds=fast < slow)

# %% id="nb11-007"
# Loss at each position of the repeat, counted from its start (position 0 is the repeat's first token).
with torch.no_grad():
    per_position = {}
    for n_layer, model in models.items():
        losses = F.cross_entropy(model(test_tokens[:, :-1]).flatten(0, 1), test_tokens[:, 1:].flatten(),
                                 reduction="none").view(test_mask.shape)
        starts = T - 1 - (test_mask.sum(dim=1) + 1)                 # prediction index of the repeat's first token
        table = torch.zeros(MAX_REPEAT)
        counts = torch.zeros(MAX_REPEAT)
        for row in range(len(test_tokens)):
            segment = losses[row, starts[row]:]
            table[:len(segment)] += segment
            counts[:len(segment)] += 1
        per_position[n_layer] = table / counts
fig, ax = plt.subplots(figsize=(6, 3.5))
for n_layer, values in per_position.items():
    ax.plot(range(MAX_REPEAT), values, "o-", label=f"{n_layer} layer{'s' if n_layer > 1 else ''}")
ax.set_xlabel("position in the repeated segment")
ax.set_ylabel("mean loss (nats)")
ax.set_title("Only the repeat's first token stays unpredictable")
ax.legend()
plt.show()
print("2-layer loss by position in the repeat:", [round(v, 2) for v in per_position[2].tolist()])
first, rest = per_position[2][0].item(), per_position[2][1:].max().item()
claims.claim(f"In the 2-layer model only the repeat's first token stays unpredictable: {first:.2f} nats there, at most "
             f"{rest:.2f} at every later position of the repeat", holds=first > 2.0 and rest < 1.0)

# %% [markdown] id="nb11-008"
# ## 2. Reading the heads
#
# Each head of each layer has an attention pattern: for every query position $i$, a distribution over
# key positions $j \le i$. Two scores summarise what a head does on our data, both computed from the
# patterns and the tokens alone:
#
# * the **previous-token score**: the attention from each position $i \ge 1$ to position $i - 1$,
#   averaged;
# * the **prefix-matching score**: for each position $i$ whose token occurred earlier, at positions
#   $j < i$ with $x_j = x_i$, the attention from $i$ to the positions right after those occurrences,
#   $j + 1$ (the "$B$" of $[A][B] \dots [A]$), summed over them, then averaged over such positions $i$.
#   A perfect induction head scores 1; a head that attends to the earlier $A$ itself (position $j$,
#   a *duplicate-token head*) scores close to 0. What a trained head scores, and how far above the other heads,
#   the cell after the exercise measures.
#
# **A worked example.** Tokens $(5, 7, 5)$ and one head whose pattern row for position 2 is
# $(0.1, 0.8, 0.1)$. Position 2 holds 5, which occurred at position 0; the position after it is 1; the
# prefix-matching score is $0.8$ (position 2 is the only position whose token occurred before).
# Its previous-token score is the mean of row 1's weight on 0 and row 2's weight on 1.
#
# ### Exercise 1: `previous_token_score` and `prefix_matching_score` (1 visible + 2 hidden for the scores + 1 hidden for edge cases)

# %% id="nb11-009" nbgrader={"grade": false, "grade_id": "head_scores", "locked": false, "schema_version": 3, "solution": true, "task": false}
import torch


def previous_token_score(patterns):
    """How much each head attends to the previous position.

    Args:
        patterns: float tensor (B, H, T, T), T >= 2: attention weights, patterns[b, h, i, j] the
            weight of query i on key j (rows sum to 1, zero above the diagonal).
    Returns:
        A new tensor (H,) with the patterns' dtype, on their device: for each head, the mean over b and over
        i = 1 .. T-1 of patterns[b, h, i, i - 1]. The input is left unchanged.
    Raises:
        ValueError: if T < 2 (there is no previous position).
    """
    ### BEGIN SOLUTION
    if patterns.shape[-1] < 2:
        raise ValueError("a previous-token score needs at least 2 positions")
    return patterns.diagonal(offset=-1, dim1=-2, dim2=-1).mean(dim=(0, 2))
    ### END SOLUTION


def prefix_matching_score(patterns, tokens):
    """How much each head attends to the token right after an earlier occurrence of the current token.

    Args:
        patterns: float tensor (B, H, T, T) of attention weights, as above.
        tokens: int64 tensor (B, T): the tokens the patterns were computed on.
    Returns:
        A new tensor (H,) with the patterns' dtype, on their device: for each head, the mean over every (b, i) whose
        token occurred before, at some j < i with tokens[b, j] == tokens[b, i], of the total weight
        patterns[b, h, i, j + 1] summed over ALL such j (each position after an earlier occurrence
        counted once). Inputs are left unchanged.
    Raises:
        ValueError: if no position's token occurred before (the mean would be over nothing).
    """
    ### BEGIN SOLUTION
    T = tokens.shape[1]
    same = tokens.unsqueeze(2) == tokens.unsqueeze(1)                       # (B, i, j): x_i == x_j
    earlier = torch.ones(T, T, dtype=torch.bool, device=tokens.device).tril(diagonal=-1)   # j < i
    occurrence = same & earlier
    # Position j + 1 is a target of query i when j is an earlier occurrence: shift the j axis by one.
    targets = torch.zeros_like(occurrence)
    targets[:, :, 1:] = occurrence[:, :, :-1]
    queries = occurrence.any(dim=2)                                        # (B, i): has an earlier occurrence
    if not queries.any():
        raise ValueError("no token occurs twice, so there is nothing to match")
    weight = (patterns * targets.unsqueeze(1)).sum(dim=-1)                  # (B, H, i)
    return (weight * queries.unsqueeze(1)).sum(dim=(0, 2)) / queries.sum()
    ### END SOLUTION


# %% id="nb11-010" nbgrader={"grade": true, "grade_id": "test_head_scores", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
import torch
from utils import checks

# The worked example: tokens (5, 7, 5); one head.
pattern = torch.tensor([[[[1.0, 0.0, 0.0], [0.3, 0.7, 0.0], [0.1, 0.8, 0.1]]]])
tokens = torch.tensor([[5, 7, 5]])
checks.assert_close(prefix_matching_score(pattern, tokens), torch.tensor([0.8]),
                    name="prefix_matching_score on tokens (5, 7, 5)",
                    hint="Position 2 holds 5, seen before at position 0: the target is position 0 + 1 = 1.")
checks.assert_close(previous_token_score(pattern), torch.tensor([(0.3 + 0.8) / 2]),
                    name="previous_token_score of the worked example", hint="Mean of patterns[b, h, i, i - 1] over i >= 1.")

# Two heads: head 0 always looks back one step, head 1 always at position 0.
positions = 4      # (not T: that name is the notebook's sequence length)
back_one = torch.zeros(positions, positions)
back_one[0, 0] = 1.0
back_one[torch.arange(1, positions), torch.arange(0, positions - 1)] = 1.0
first = torch.zeros(positions, positions)
first[:, 0] = 1.0
patterns = torch.stack([back_one, first]).unsqueeze(0)                   # (1, 2, 4, 4)
checks.assert_close(previous_token_score(patterns), torch.tensor([1.0, 1 / 3]),
                    name="previous_token_score of a previous-token head and a first-token head",
                    hint="One score per head: average over the batch and the query positions 1 .. T-1.")
tokens = torch.tensor([[3, 3, 9, 3]])          # position 1 repeats 3 (target 1), position 3 repeats 3 (targets 1 and 2)
checks.assert_close(prefix_matching_score(patterns, tokens), torch.tensor([0.5, 0.0]),
                    name="prefix_matching_score on tokens (3, 3, 9, 3)",
                    hint="Position 1: earlier 3 at 0, target 1. Position 3: earlier 3s at 0 and 1, targets 1 and 2 "
                         "(summed). Head 0 puts 1.0 on position 0 from query 1 and 1.0 on position 2 from query 3.")
print("previous_token_score, prefix_matching_score: visible tests passed")

# %% id="nb11-011" nbgrader={"grade": true, "grade_id": "test_head_scores_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for previous_token_score and prefix_matching_score run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks


def reference(patterns, tokens):
    B, H, T, _ = patterns.shape
    previous = torch.zeros(H, dtype=torch.float64)
    for b in range(B):
        for i in range(1, T):
            previous += patterns[b, :, i, i - 1].double()
    previous /= B * (T - 1)
    prefix = torch.zeros(H, dtype=torch.float64)
    count = 0
    for b in range(B):
        for i in range(T):
            targets = {j + 1 for j in range(i) if tokens[b, j] == tokens[b, i]}
            if targets:
                count += 1
                prefix += sum(patterns[b, :, i, t].double() for t in targets)
    return previous, prefix / count


generator = torch.Generator().manual_seed(11)
for B, H, T, V in [(1, 1, 2, 2), (3, 4, 9, 3), (2, 2, 16, 5), (5, 3, 12, 4)]:
    scores = torch.randn(B, H, T, T, generator=generator).masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
    patterns = scores.softmax(dim=-1)
    tokens = torch.randint(0, V, (B, T), generator=generator)
    tokens[0, -1] = tokens[0, 0]                 # at least one repeat
    previous, prefix = reference(patterns, tokens)
    name = f"patterns (B={B}, H={H}, T={T}), {V} token values"
    checks.assert_close(previous_token_score(patterns), previous.float(), atol=1e-5, name=f"previous_token_score, {name}")
    checks.assert_close(prefix_matching_score(patterns, tokens), prefix.float(), atol=1e-5, name=f"prefix_matching_score, {name}",
                        hint="For each query whose token occurred earlier at j, sum its weights on every j + 1 (not on j "
                             "itself); average over those queries only, across the whole batch.")

# Unequal numbers of matching queries per sequence: the mean is over (b, i) pairs, not per sequence first.
patterns = torch.zeros(2, 1, 4, 4)
patterns[0, 0] = torch.eye(4)
patterns[0, 0, 3] = torch.tensor([0.0, 1.0, 0.0, 0.0])    # sequence 0: query 3 attends to 1, after the earlier 1
patterns[1, 0, :, 0] = 1.0                                 # sequence 1: every query attends to position 0
tokens = torch.tensor([[1, 2, 3, 1], [4, 4, 4, 4]])        # sequence 0: one matching query; sequence 1: three
checks.assert_close(prefix_matching_score(patterns, tokens), torch.tensor([(1.0 + 0.0 + 0.0 + 0.0) / 4]),
                    name="prefix_matching_score with one matching query in one sequence and three in the other",
                    hint="Average over all (b, i) pairs that have an earlier occurrence (4 here), not per sequence first "
                         "(which would give (1 + 0) / 2).")
print("head scores: hidden tests passed")
### END HIDDEN TESTS

# %% id="nb11-012" nbgrader={"grade": true, "grade_id": "test_head_scores_hidden_edges", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for the head scores' edge clauses run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks
from utils import probes

checks.assert_raises(ValueError, previous_token_score, torch.ones(2, 3, 1, 1), name="previous_token_score with T = 1",
                     hint="With one position there is no previous token: raise ValueError.")
# Both sides of T < 2: no position at all (T = 0) raises too; two positions (one previous-token weight) do not.
def causal_uniform(t):             # (1, 2, t, t): each query spreads its weight evenly over positions 0..i
    weights = torch.tril(torch.ones(1, 2, t, t))
    return weights / weights.sum(dim=-1, keepdim=True)


checks.assert_error_boundary(ValueError, lambda t: previous_token_score(causal_uniform(t)), raises=(1, 0),
                             allowed=(2,), name="previous_token_score with T",
                             hint="Raise ValueError whenever T < 2, for T = 0 too (the mean would be over nothing).")
patterns = torch.full((1, 2, 3, 3), 1 / 3)
checks.assert_raises(ValueError, prefix_matching_score, patterns, torch.tensor([[0, 1, 2]]),
                     name="prefix_matching_score when no token repeats",
                     hint="No query has an earlier occurrence: the mean is over nothing; raise ValueError, never return NaN.")
tokens = torch.tensor([[2, 2, 2]])
traced = probes.traced_call(prefix_matching_score, patterns, tokens)
checks.assert_close(traced.args_after[0], patterns, atol=0, rtol=0, name="patterns after prefix_matching_score")
checks.assert_equal(traced.args_after[1].tolist(), [[2, 2, 2]], name="tokens after prefix_matching_score")
checks.assert_tensor(traced.result, name="prefix_matching_score's result", shape=(2,), dtype="floating")
# The scores have the patterns' dtype, float32, float64 and bfloat16 alike (a float32 mean of float64 patterns loses
# digits; a float32 mask multiplied into bfloat16 patterns makes the score float32).
for dtype, tolerance in ((torch.float32, 1e-6), (torch.float64, 1e-12), (torch.bfloat16, 1e-2)):
    patterns = torch.tensor([[[[1.0, 0.0, 0.0], [0.3, 0.7, 0.0], [0.1, 0.8, 0.1]]]], dtype=dtype)
    for name, score, expected in [("previous_token_score", previous_token_score(patterns), (0.3 + 0.8) / 2),
                                  ("prefix_matching_score", prefix_matching_score(patterns, torch.tensor([[5, 7, 5]])), 0.8)]:
        checks.assert_tensor(score, name=f"{name} of {dtype} patterns", shape=(1,), dtype=dtype,
                             hint="Average in the patterns' dtype; do not convert to float32 (or float64), and multiply by "
                                  "a boolean mask, or one in the patterns' dtype (mask.float() makes bfloat16 float32).")
        checks.assert_close(score.double(), torch.tensor([expected], dtype=dtype).double(), atol=tolerance,
                            name=f"{name} of the worked example in {dtype}")
# On the patterns' device: patterns and tokens labelled cuda:0 with their values kept (utils.fake_cuda), as a GPU
# would hold them. A mask made without device= (torch.ones(T, T) for j < i) meets the GPU tokens and raises there;
# on a CPU every device is the same one, so only this shows it.
patterns = torch.tensor([[[[1.0, 0.0, 0.0], [0.3, 0.7, 0.0], [0.1, 0.8, 0.1]]]])
for name, score_fn, args in [("previous_token_score", previous_token_score, (patterns,)),
                             ("prefix_matching_score", prefix_matching_score, (patterns, torch.tensor([[5, 7, 5]])))]:
    seen = probes.make("utils.fake_cuda.result_device_on_fake_cuda", score_fn, *args)
    checks.assert_kept_on_fake_cuda(seen, name=f"{name} with its inputs on a GPU (emulated, the values kept)",
                                    hint="Make every tensor on the inputs' device (torch.ones(..., device=tokens.device)): "
                                         "with the tokens on a GPU, a tensor made without device= is on the CPU.")
print("head scores: hidden edge tests passed")
### END HIDDEN TESTS

# %% [markdown] id="nb11-013"
# The scores of every head of both trained models, on the test sequences:

# %% id="nb11-014"
def duplicate_token_score(patterns, tokens):
    # The attention from each position whose token occurred before to those earlier occurrences
    # themselves (positions j, where prefix matching looks at j + 1).
    T = tokens.shape[1]
    earlier = (tokens.unsqueeze(2) == tokens.unsqueeze(1)) & torch.ones(T, T, dtype=torch.bool).tril(diagonal=-1)
    queries = earlier.any(dim=2)
    weight = (patterns * earlier.unsqueeze(1)).sum(dim=-1)
    return (weight * queries.unsqueeze(1)).sum(dim=(0, 2)) / queries.sum()


head_table = {}
sample = test_tokens[:500]
for n_layer, model in models.items():
    for layer, patterns in enumerate(model.patterns(sample)):
        scores = (previous_token_score(patterns), duplicate_token_score(patterns, sample),
                  prefix_matching_score(patterns, sample))
        for head in range(model.n_head):
            head_table[(n_layer, layer, head)] = tuple(score[head].item() for score in scores)
print(f"{'model':>7} {'head':>6} {'previous-token':>15} {'duplicate-token':>16} {'prefix-matching':>16}")
for (n_layer, layer, head), values in head_table.items():
    print(f"{n_layer}-layer {f'{layer}.{head}':>6}" + "".join(f"{v:>16.2f}" for v in values))

two_layer = [key[1:] for key in head_table if key[0] == 2]
induction_head = max(two_layer, key=lambda k: head_table[(2,) + k][2])
first_layer = [k for k in two_layer if k[0] == 0]
previous_head = max(first_layer, key=lambda k: head_table[(2,) + k][0])
duplicate_head = max(first_layer, key=lambda k: head_table[(2,) + k][1])
route = "K-composition" if head_table[(2,) + previous_head][0] > head_table[(2,) + duplicate_head][1] else "Q-composition"
print(f"\n2-layer model: induction head {induction_head[0]}.{induction_head[1]} (prefix-matching "
      f"{head_table[(2,) + induction_head][2]:.2f}); in layer 0 the strongest previous-token head is "
      f"{previous_head[0]}.{previous_head[1]} ({head_table[(2,) + previous_head][0]:.2f}) and the strongest "
      f"duplicate-token head {duplicate_head[0]}.{duplicate_head[1]} ({head_table[(2,) + duplicate_head][1]:.2f}): "
      f"this model took the {route} route")
feeder = previous_head if route == "K-composition" else duplicate_head
others = max(values[2] for key, values in head_table.items() if key != (2,) + induction_head)
claims.claim(f"The 2-layer model has an induction head: head {induction_head[0]}.{induction_head[1]} scores "
             f"{head_table[(2,) + induction_head][2]:.2f} on prefix matching, every other head at most {others:.2f}",
             holds=induction_head[0] == 1 and head_table[(2,) + induction_head][2] > 2 * others)
claims.claim(f"With positions in the queries and keys only, the model built a previous-token head: layer 0 scores "
             f"{head_table[(2,) + previous_head][0]:.2f} on previous-token, {head_table[(2,) + duplicate_head][1]:.2f} on "
             f"duplicate-token (the K-composition route)",
             holds=head_table[(2,) + previous_head][0] > head_table[(2,) + duplicate_head][1] + 0.1)

# %% id="nb11-015"
# The layer-0 head that feeds the induction head, and the induction head, on one test sequence.
sequence = test_tokens[:1]
length = sequence.shape[1]
n = int(test_mask[0].sum()) + 1
patterns = models[2].patterns(sequence)
fig, axes = plt.subplots(1, 2, figsize=(10, 4.5))
feeder_name = "previous-token head" if route == "K-composition" else "duplicate-token head"
for ax, (layer, head), title in zip(axes, (feeder, induction_head), (feeder_name, "induction head")):
    ax.imshow(patterns[layer][0, head], cmap="Blues", vmin=0, vmax=1)
    ax.axhline(length - n - 0.5, color="red", linestyle="--", linewidth=1)
    ax.set_title(f"{title}: layer {layer}, head {head}")
    ax.set_xlabel("key position")
    ax.set_ylabel("query position")
plt.show()
print(f"repeat of length {n} from position {length - n} (red line): the induction head's queries there should attend "
      f"{n - 1} positions back, to the token after the earlier copy")

# %% [markdown] id="nb11-016"
# ### What a head writes: the OV circuit and copying
#
# Where a head looks is half the story; the other half is what it writes. If a head attends (fully) to a
# position holding token $t$, it adds to the residual stream $e_t W_V^{(h)} W_O^{(h)}$, where $e_t$ is row $t$
# of the embedding, $W_V^{(h)}$ the head's value map and $W_O^{(h)}$ its slice of the output map. Read
# directly through the unembedding, that changes the logits by row $t$ of the $V \times V$ matrix
#
# $$
# M^{(h)} = W_E\, W_V^{(h)}\, W_O^{(h)}\, W_U ,
# $$
#
# the head's **OV circuit** (ignoring the positional part and later layers). A **copying** head raises the
# logit of the very token it attends to: row $t$ of $M^{(h)}$ peaks at column $t$. Its **copying score** is
# the fraction of tokens $t$ for which the diagonal entry $M_{tt}$ is strictly the largest of its row.
#
# Shapes, in the row-vector convention `x @ W` used by `model.ov_weights(layer)`:
# $W_E$ is $(V, d)$, $W_V$ and $W_O$ are $(d, d)$ for all heads together, $W_U$ is $(d, V)$. Head $h$ of
# $n$ heads, with $d_h = d / n$, owns **columns** $h d_h, \dots, (h+1) d_h - 1$ of $W_V$ (its value vectors
# sit side by side) and the same **rows** of $W_O$ (it reads its slice of the concatenated outputs).
#
# ### Exercise 2: `ov_circuit` and `copying_score` (1 visible + 2 hidden + 1 hidden for edge cases)
#
# *Points: 1 visible, 2 hidden (ov_circuit for every head of three shapes against einsum, copying_score against a count with ties, on circuits whose rows and columns read differently, and on leads of one rounding step), 1 hidden (edge cases: a head out of range or a width the heads do not divide raises ValueError, float64 weights, a 1 x 1 circuit, the score is a Python float).*

# %% id="nb11-017" nbgrader={"grade": false, "grade_id": "copying", "locked": false, "schema_version": 3, "solution": true, "task": false}
import torch


def ov_circuit(W_E, W_V, W_O, W_U, head, n_head):
    """The direct effect on the logits of head `head` attending to each token: W_E W_V^(h) W_O^(h) W_U.

    Args:
        W_E: (V, d) token embedding; W_V: (d, d) value map of all heads (x @ W_V; head h owns columns
            h*d_h .. (h+1)*d_h - 1); W_O: (d, d) output map (head h owns rows h*d_h .. (h+1)*d_h - 1);
            W_U: (d, V) unembedding. Float tensors of one dtype.
        head: int, 0 <= head < n_head. n_head: int >= 1 dividing d.
    Returns:
        A new (V, V) tensor of the inputs' dtype whose row t is the change of the V logits when the head
        attends to token t.
    Raises:
        ValueError: if head is out of range or n_head does not divide d.
    """
    ### BEGIN SOLUTION
    d = W_V.shape[0]
    if n_head < 1 or d % n_head or not 0 <= head < n_head:
        raise ValueError(f"head {head} of {n_head} heads does not fit width {d}")
    width = d // n_head
    columns = slice(head * width, (head + 1) * width)
    return W_E @ W_V[:, columns] @ W_O[columns, :] @ W_U
    ### END SOLUTION


def copying_score(circuit):
    """The fraction of tokens t whose own logit gains most when the head attends to t.

    Args:
        circuit: float tensor (V, V), an OV circuit (row t: the effect of attending to token t).
    Returns:
        A Python float in [0, 1]: the fraction of rows t in which circuit[t, t] is STRICTLY larger than
        every other entry of row t (a tie with another entry does not count).
    """
    ### BEGIN SOLUTION
    diagonal = circuit.diagonal()
    others = circuit.clone()
    others.fill_diagonal_(float("-inf"))
    return (diagonal > others.amax(dim=1)).float().mean().item()
    ### END SOLUTION


# %% id="nb11-018" nbgrader={"grade": true, "grade_id": "test_copying", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
import torch
from utils import checks

# d = 4, two heads of width 2, vocabulary 3.
W_E = torch.tensor([[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]])
W_V = torch.eye(4)
W_O = torch.diag(torch.tensor([1.0, 1.0, 2.0, 2.0]))
W_U = torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
circuit = ov_circuit(W_E, W_V, W_O, W_U, head=0, n_head=2)
checks.assert_close(circuit, torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.0]]),
                    name="ov_circuit(..., head=0, n_head=2)",
                    hint="Head 0 owns columns 0-1 of W_V and rows 0-1 of W_O: W_E @ W_V[:, 0:2] @ W_O[0:2, :] @ W_U.")
circuit = ov_circuit(W_E, W_V, W_O, W_U, head=1, n_head=2)
checks.assert_close(circuit, torch.tensor([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [2.0, 0.0, 2.0]]),
                    name="ov_circuit(..., head=1, n_head=2)", hint="Head 1: columns 2-3 of W_V, rows 2-3 of W_O.")
checks.assert_close(copying_score(torch.tensor([[3.0, 1.0], [0.0, 2.0]])), 1.0, name="copying_score of [[3, 1], [0, 2]]")
# Ties in both orders: the diagonal ties first in row 1 and last in row 3 (argmax picks one of them).
tied = torch.tensor([[2.0, 0.0, 0.0, 0.0], [0.0, 3.0, 3.0, 0.0], [0.0, 0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 1.0]])
checks.assert_close(copying_score(tied), 1 / 4,
                    name="copying_score of [[2, 0, 0, 0], [0, 3, 3, 0], [0, 0, 0, 0], [1, 0, 0, 1]]",
                    hint="Only row 0 counts. Rows 1 (3 = 3, the diagonal first), 2 (all 0) and 3 (1 = 1, the diagonal "
                         "last) are ties, and the diagonal must be STRICTLY the largest: argmax picks one of the tied "
                         "entries, so it counts a tie as copying whenever it picks the diagonal.")
print("ov_circuit, copying_score: visible tests passed")

# %% id="nb11-019" nbgrader={"grade": true, "grade_id": "test_copying_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for ov_circuit and copying_score run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks

generator = torch.Generator().manual_seed(21)
for V, d, n_head in [(5, 6, 3), (7, 8, 1), (4, 12, 4)]:
    W_E, W_V, W_O, W_U = (torch.randn(*shape, generator=generator) for shape in ((V, d), (d, d), (d, d), (d, V)))
    width = d // n_head
    for head in range(n_head):
        s = slice(head * width, (head + 1) * width)
        expected = torch.einsum("vd,de,ef,fw->vw", W_E, W_V[:, s], W_O[s, :], W_U)
        checks.assert_close(ov_circuit(W_E, W_V, W_O, W_U, head, n_head), expected, atol=1e-4, rtol=1e-4,
                            name=f"ov_circuit(V={V}, d={d}, head={head}, n_head={n_head})",
                            hint="Columns of W_V and rows of W_O belong to the head; every head has width d // n_head.")
# copying_score against a count made here, on circuits with and without ties.
for V in (3, 10, 50):
    circuit = torch.randint(-2, 3, (V, V), generator=generator).float()
    circuit += 2 * torch.eye(V) * (torch.rand(V, generator=generator) < 0.5).float().unsqueeze(1)
    strict = sum(all(circuit[t, t] > circuit[t, s] for s in range(V) if s != t) for t in range(V)) / V
    checks.assert_close(copying_score(circuit), float(strict), atol=1e-9, name=f"copying_score of a {V} x {V} integer circuit",
                        hint="Count rows whose diagonal entry is strictly larger than every other entry; ties do not count.")

# Rows, not columns: in this circuit the large entry 5 beats the diagonal of row 0 but not of column 0, and the
# transpose swaps the two readings (each row's own diagonal against the rest of that row, ties in both orders).
circuit = torch.tensor([[1.0, 5.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
for name, matrix, expected in [("[[1, 5, 0], [0, 0, 0], [0, 0, 1]]", circuit, 1 / 3),
                               ("[[1, 0, 0], [5, 0, 0], [0, 0, 1]]", circuit.T.contiguous(), 2 / 3),
                               ("[[1, 1], [1, 1]] + [[1, 0], [0, 0]]", torch.tensor([[2.0, 1.0], [2.0, 1.0]]), 0.5),
                               ("[[1, 1], [1, 1]] (float64)", torch.ones(2, 2, dtype=torch.float64), 0.0),
                               # STRICTLY larger, by any margin: one float32 step above 1.0, and 1e-12 in float64.
                               ("[[1 + 2^-23, 1], [0, 1]]", torch.tensor([[1.0 + 2.0 ** -23, 1.0], [0.0, 1.0]]), 1.0),
                               ("[[1, 1 + 1e-12], [0, 1 + 1e-12]] (float64)",
                                torch.tensor([[1.0, 1.0 + 1e-12], [0.0, 1.0 + 1e-12]], dtype=torch.float64), 0.5)]:
    checks.assert_close(copying_score(matrix), expected, atol=1e-9, name=f"copying_score of {name}",
                        hint="Row t: the effect of attending to token t. Compare circuit[t, t] with the other entries "
                             "of ROW t (not column t) exactly: a tie does not count, whichever entry comes first, and "
                             "any positive lead counts (no tolerance).")
print("ov_circuit, copying_score: hidden tests passed")
### END HIDDEN TESTS

# %% id="cf7dcbdc" nbgrader={"grade": true, "grade_id": "test_copying_hidden_edges", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for ov_circuit and copying_score (edge cases: a head out of range or a width the heads do not divide raises ValueError, float64 weights, a 1 x 1 circuit, the score is a Python float) run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks

# (not W_E, ...: the demos' weights in this kernel)
maps = [torch.randn(shape, generator=torch.Generator().manual_seed(i)) for i, shape in enumerate([(5, 6), (6, 6), (6, 6), (6, 5)])]
checks.assert_error_boundary(ValueError, lambda h: ov_circuit(maps[0], maps[1], maps[2], maps[3], h, 3), raises=(3, -1), allowed=(0, 2),
                             name="ov_circuit's head with 3 heads",
                             hint="Heads are numbered 0 .. n_head - 1: raise for head < 0 or head >= n_head, not at the ends.")
for bad_head, n_head in [(3, 3), (-1, 3), (0, 4)]:
    checks.assert_raises(ValueError, ov_circuit, torch.randn(5, 6), torch.randn(6, 6),
                         torch.randn(6, 6), torch.randn(6, 5), bad_head, n_head,
                         name=f"ov_circuit(head={bad_head}, n_head={n_head}) with d = 6")

# float64 weights give a float64 circuit, to float64 precision.
generator = torch.Generator().manual_seed(23)
W_E, W_V, W_O, W_U = (torch.randn(*shape, generator=generator, dtype=torch.float64) for shape in ((5, 4), (4, 4), (4, 4), (4, 5)))
circuit = ov_circuit(W_E, W_V, W_O, W_U, 1, 2)
checks.assert_tensor(circuit, name="ov_circuit of float64 weights", shape=(5, 5), dtype=torch.float64,
                     hint="Multiply in the weights' dtype; do not convert to float32.")
checks.assert_close(circuit, torch.einsum("vd,de,ef,fw->vw", W_E, W_V[:, 2:], W_O[2:, :], W_U), atol=1e-12, rtol=1e-12,
                    name="ov_circuit of float64 weights (head 1 of 2), to float64 precision")

score = copying_score(torch.eye(4) * 3)
checks.assert_true(type(score) is float, name="copying_score's return type", problem=f"it returned {type(score).__name__}.",
                   hint="Return a Python float (.item()).")

checks.assert_close(copying_score(torch.tensor([[-2.0]])), 1.0, atol=0, rtol=0, name="copying_score of a 1 x 1 circuit",
                    hint="With one token there is no other entry to beat: the diagonal is strictly the largest, score 1.0.")
score = copying_score(torch.tensor([[1.0, 0.0], [0.0, -1.0]], dtype=torch.float64))
checks.assert_true(type(score) is float, name="copying_score's return type for a float64 circuit",
                   problem=f"it returned {type(score).__name__}.", hint="Return a Python float (.item()).")
print("copying: hidden tests (edge cases) passed")
### END HIDDEN TESTS

# %% id="nb11-020"
print(f"{'model':>7} {'head':>6} {'copying score':>14}")
copying = {}
for n_layer, model in models.items():
    for layer in range(n_layer):
        weights = model.ov_weights(layer)
        for head in range(model.n_head):
            copying[(n_layer, layer, head)] = copying_score(ov_circuit(*weights, head, model.n_head))
            print(f"{n_layer}-layer {f'{layer}.{head}':>6} {copying[(n_layer, layer, head)]:14.2f}")
print(f"\nthe induction head {induction_head[0]}.{induction_head[1]} copies {copying[(2,) + induction_head]:.0%} of the "
      f"tokens it attends to; the layer-0 {feeder_name} {feeder[0]}.{feeder[1]} {copying[(2,) + feeder]:.0%} "
      "(what it writes feeds the next layer's queries or keys, not the logits directly)")
claims.claim(f"The induction head is a copying head (copying score {copying[(2,) + induction_head]:.2f}); the layer-0 "
             f"{feeder_name} is not ({copying[(2,) + feeder]:.2f})",
             holds=copying[(2,) + induction_head] >= 0.9 and copying[(2,) + feeder] <= 0.6)

# %% [markdown] id="nb11-021"
# ## 3. Ablations: switch a head off
#
# Scores are correlations. To show a head is *needed*, remove it and measure the damage. Two ways:
#
# * **zero ablation**: replace the head's output by zeros;
# * **mean ablation**: replace it by its mean over the batch and the positions, which keeps the average
#   signal the rest of the network is used to and removes only the information that varies. It is
#   usually the fairer test.
#
# PyTorch's **forward hooks** make this a few lines: `module.register_forward_hook(fn)` calls
# `fn(module, inputs, output)` after every forward pass of `module`, and if `fn` returns a tensor it
# replaces the output. `model.layers[l].head_outputs` is an identity module applied to the heads'
# outputs, shape (B, n_head, T, d_head), right before they are mixed by the output map: a hook there
# can change one head and nothing else. (A hook on `model.layers[l]` would change the whole layer's
# contribution, every head at once.) Always remove a hook when done (`handle.remove()`, in a
# `finally:`), or it keeps acting on every later call.
#
# ### Exercise 3: `loss_with_head_ablated` (1 visible + 2 hidden for the loss + 1 hidden for edge cases)

# %% id="nb11-022" nbgrader={"grade": false, "grade_id": "head_ablation", "locked": false, "schema_version": 3, "solution": true, "task": false}
import torch
import torch.nn.functional as F


def loss_with_head_ablated(model, tokens, mask, layer=None, head=None, mode="zero"):
    """The model's mean next-token loss on the masked predictions, with one head switched off.

    Args:
        model: an AttentionOnlyTransformer; layer l's heads pass through model.layers[l].head_outputs,
            an identity module whose output has shape (B, n_head, T, d_head).
        tokens: int64 tensor (B, T). The model reads tokens[:, :-1]; prediction t is of tokens[:, t + 1].
        mask: bool tensor (B, T - 1): which predictions count. At least one is True.
        layer, head: the head to ablate (ints); both None: no ablation (the clean loss).
        mode: "zero" (the head's output becomes 0) or "mean" (it becomes its mean over the batch and the
            positions of this same input, one d_head vector, computed in a clean forward pass).
    Returns:
        A Python float: the mean cross-entropy (nats) over the predictions where mask is True. Computed
        without gradients; the model is left exactly as it was (no hook stays registered, same mode,
        same weights), and so are the inputs.
    Raises:
        ValueError: if mode is neither "zero" nor "mean", or only one of layer and head is None.
    """
    ### BEGIN SOLUTION
    if mode not in ("zero", "mean"):
        raise ValueError(f"mode must be 'zero' or 'mean', got {mode!r}")
    if (layer is None) != (head is None):
        raise ValueError("give both layer and head, or neither")
    inputs, targets = tokens[:, :-1], tokens[:, 1:]

    def loss():
        logits = model(inputs)
        losses = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="none").view(mask.shape)
        return losses[mask].mean().item()

    with torch.no_grad():
        if layer is None:
            return loss()
        point = model.layers[layer].head_outputs
        replacement = None
        if mode == "mean":
            seen = []
            handle = point.register_forward_hook(lambda module, args, output: seen.append(output[:, head].mean(dim=(0, 1))))
            try:
                model(inputs)
            finally:
                handle.remove()
            replacement = seen[0]

        def ablate(module, args, output):
            output = output.clone()
            output[:, head] = 0.0 if replacement is None else replacement
            return output

        handle = point.register_forward_hook(ablate)
        try:
            return loss()
        finally:
            handle.remove()
    ### END SOLUTION


# %% id="nb11-023" nbgrader={"grade": true, "grade_id": "test_head_ablation", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
import torch
import torch.nn.functional as F
from utils import checks
from utils import probes

config = dict(vocab_size=6, d_model=8, n_head=2, n_layer=2, block_size=6, seed=4)
model = probes.make("utils.attention_only.AttentionOnlyTransformer", **config)
tokens = torch.tensor([[0, 1, 2, 3, 0, 1], [5, 4, 3, 2, 5, 4]])
mask = torch.ones(2, 5, dtype=torch.bool)
clean = loss_with_head_ablated(model, tokens, mask)
expected = F.cross_entropy(model(tokens[:, :-1]).flatten(0, 1), tokens[:, 1:].flatten()).item()
checks.assert_close(clean, expected, atol=1e-5, name="loss_with_head_ablated with no head ablated (the clean loss)",
                    hint="Mean cross-entropy of model(tokens[:, :-1]) against tokens[:, 1:] where mask is True.")
ablated = loss_with_head_ablated(model, tokens, mask, layer=1, head=0)
checks.assert_true(abs(ablated - clean) > 1e-4, name="loss with head 1.0 zeroed",
                   problem=f"it equals the clean loss ({ablated:.5f} vs {clean:.5f}): the ablation changed nothing.",
                   hint="Register a forward hook on model.layers[layer].head_outputs that returns the output with "
                        "output[:, head] set to 0.")
again = loss_with_head_ablated(model, tokens, mask)
checks.assert_close(again, clean, atol=1e-6, name="the clean loss after an ablation",
                    hint="Remove the hook (handle.remove()) before returning, or it stays on the model.")

# Only the predictions where mask is True count, each with the same weight (3 in sequence 0, 1 in sequence 1).
partial = torch.tensor([[True, True, True, False, False], [False, False, False, False, True]])
per_prediction = F.cross_entropy(model(tokens[:, :-1]).flatten(0, 1), tokens[:, 1:].flatten(), reduction="none")
checks.assert_close(loss_with_head_ablated(model, tokens, partial), per_prediction[partial.flatten()].mean().item(),
                    atol=1e-5, name="loss_with_head_ablated with a partial mask (no head ablated)",
                    hint="Average the per-prediction losses over the True entries of mask only, all of them together "
                         "(not each sequence's mean first).")
print("loss_with_head_ablated: visible tests passed")

# %% id="nb11-024" nbgrader={"grade": true, "grade_id": "test_head_ablation_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for loss_with_head_ablated run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
import torch.nn.functional as F
from utils import checks
from utils import probes
from utils.attention_only import AttentionOnlyTransformer


def reference_loss(model, tokens, mask, layer, head, mode):
    """The same quantity computed here, in the judge, on our own copy of the model."""
    point = model.layers[layer].head_outputs
    with torch.no_grad():
        kept = []
        grab = point.register_forward_hook(lambda m, a, out: kept.append(out))
        model(tokens[:, :-1])
        grab.remove()
        value = torch.zeros_like(kept[0][:, head]) if mode == "zero" else kept[0][:, head].mean(dim=(0, 1)).expand_as(kept[0][:, head])

        def replace(m, a, out):
            out = out.clone()
            out[:, head] = value
            return out

        handle = point.register_forward_hook(replace)
        logits = model(tokens[:, :-1])
        handle.remove()
    losses = F.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten(), reduction="none").view(mask.shape)
    return losses[mask].mean().item()


generator = torch.Generator().manual_seed(42)
for config, B in [(dict(vocab_size=10, d_model=12, n_head=3, n_layer=2, block_size=9, seed=7), 4),
                  (dict(vocab_size=7, d_model=8, n_head=4, n_layer=1, block_size=5, seed=8), 3),
                  (dict(vocab_size=16, d_model=16, n_head=2, n_layer=3, block_size=12, seed=9), 5)]:
    mine = AttentionOnlyTransformer(**config)
    theirs = probes.make("utils.attention_only.AttentionOnlyTransformer", **config)
    T = config["block_size"] + 1
    tokens = torch.randint(0, config["vocab_size"], (B, T), generator=generator)
    mask = torch.rand(B, T - 1, generator=generator) < 0.6       # unequal counts per sequence
    mask[0, 0] = True
    for layer in range(config["n_layer"]):
        for head in range(config["n_head"]):
            for mode in ("zero", "mean"):
                checks.assert_close(loss_with_head_ablated(theirs, tokens, mask, layer, head, mode),
                                    reference_loss(mine, tokens, mask, layer, head, mode), atol=1e-5, rtol=1e-5,
                                    name=f"loss_with_head_ablated(layer={layer}, head={head}, mode={mode!r}) on a model "
                                         f"with {config['n_layer']} layers of {config['n_head']} heads",
                                    hint="Change only output[:, head] of model.layers[layer].head_outputs; 'mean' is that "
                                         "head's mean over the batch AND the positions of a clean pass; average the loss "
                                         "over the masked predictions only.")
print("loss_with_head_ablated: hidden tests passed")
### END HIDDEN TESTS

# %% id="nb11-025" nbgrader={"grade": true, "grade_id": "test_head_ablation_hidden_edges", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for loss_with_head_ablated's edge clauses run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
import torch.nn.functional as F
from utils import checks
from utils import probes

model = probes.make("utils.attention_only.AttentionOnlyTransformer", 5, 4, 2, 1, 4, seed=3)
tokens = torch.tensor([[1, 2, 3, 4, 0]])
mask = torch.tensor([[True, False, True, True]])
clean = loss_with_head_ablated(model, tokens, mask)
checks.assert_true(type(clean) is float, name="loss_with_head_ablated's return type",
                   problem=f"it returned {type(clean).__name__}.", hint="Return a Python float (.item()).")
# An unknown mode raises whether or not a head is ablated, and the two modes are spelled exactly so.
for args, kwargs in [((0, 0), {"mode": "max"}), ((None, None), {"mode": "max"}), ((0, 1), {"mode": "Zero"}),
                     ((None, None), {"mode": "MEAN"}), ((0, None), {}), ((None, 1), {})]:
    checks.assert_raises(ValueError, loss_with_head_ablated, model, tokens, mask, *args, name=f"loss_with_head_ablated{args} {kwargs}",
                         hint="Raise ValueError for a mode other than exactly 'zero' or 'mean' (check it first, also when no "
                              "head is ablated), or when only one of layer and head is given.", **kwargs)
model.train()
loss_with_head_ablated(model, tokens, mask, 0, 1, "mean")
checks.assert_true(model.training is True, name="the model's mode after loss_with_head_ablated",
                   problem="a model in train mode came back in eval mode.", hint="Leave the model's mode as it was.")
checks.assert_close(loss_with_head_ablated(model, tokens, mask), clean, atol=1e-6, name="the clean loss after a mean ablation",
                    hint="Both hooks (the one that measures the mean and the one that replaces it) must be removed.")
# No hook stays registered, on any module: one that only records (the mean's) leaves the loss alone but not the model.
for layer, head, mode in [(0, 1, "mean"), (0, 0, "zero"), (None, None, "mean")]:
    loss_with_head_ablated(model, tokens, mask, layer, head, mode)
    checks.assert_equal(probes.make("utils.recording.hooks_left", model)["hooks"], {},
                        name=f"hooks left on the model's modules after loss_with_head_ablated(layer={layer}, head={head}, {mode!r})",
                        hint="Remove every hook you register (handle.remove(), in a finally: block), the one that measures "
                             "the mean too.")

# A model in eval mode stays in eval mode; no call of the model records gradients.
model.eval()
before = len(model.modes)
loss_with_head_ablated(model, tokens, mask, 0, 0, "mean")
checks.assert_true(model.training is False, name="the mode of a model in eval mode after loss_with_head_ablated",
                   problem="a model in eval mode came back in train mode.",
                   hint="Leave the model's mode as it was: remember model.training and restore it.")
for starts_training in (True, False):
    model.train(starts_training)
    loss_with_head_ablated(model, tokens, mask, 0, 1, "zero")
    loss_with_head_ablated(model, tokens, mask)
modes = model.modes[before:]
checks.assert_true(len(modes) > 0, name="the model calls of loss_with_head_ablated", problem="the model was never called.")
checks.assert_equal([mode["grad_enabled"] for mode in modes], [False] * len(modes),
                    name="gradient recording during loss_with_head_ablated's model calls",
                    hint="Compute every forward pass under torch.no_grad().")

# A call that fails inside the model (token 9 is outside the vocabulary of 5) leaves no hook behind either:
# remove the hooks in a finally: block, so the next clean loss is the clean loss.
model.train()
for layer, head, mode in [(0, 1, "zero"), (0, 0, "mean")]:
    checks.assert_raises(Exception, loss_with_head_ablated, model, torch.tensor([[1, 2, 9, 4, 0]]), mask, layer, head, mode,
                         name=f"loss_with_head_ablated on a token outside the vocabulary (layer {layer}, head {head}, {mode!r})")
    checks.assert_close(loss_with_head_ablated(model, tokens, mask), clean, atol=1e-6,
                        name=f"the clean loss after a {mode} ablation that raised",
                        hint="Register the hook, then compute the loss in try: ... finally: handle.remove(), so that an "
                             "exception on the way does not leave the hook on the model.")
checks.assert_true(model.training is True, name="the mode of a model in train mode after a call that raised",
                   problem="it came back in eval mode.", hint="Restore the mode in the finally: block too.")

# Hooks that the caller registered stay on the model: a function removes only the hooks it added.
watched = probes.make("utils.attention_only.AttentionOnlyTransformer", 5, 4, 2, 1, 4, seed=3)
theirs = probes.make("utils.recording.with_bystander_hooks", watched)["hooks"]
for layer, head, mode in [(0, 1, "zero"), (0, 0, "mean")]:
    loss_with_head_ablated(watched, tokens, mask, layer, head, mode)
    checks.assert_equal(probes.make("utils.recording.hooks_left", watched)["hooks"], theirs,
                        name=f"the hooks a caller had registered, after loss_with_head_ablated(layer={layer}, head={head}, {mode!r})",
                        hint="Remove your own hook with the handle register_forward_hook returned (handle.remove()); "
                             "module._forward_hooks.clear() also removes hooks that are not yours.")
print("loss_with_head_ablated: hidden edge tests passed")
### END HIDDEN TESTS

# %% id="nb11-026"
model = models[2]
clean = loss_with_head_ablated(model, test_tokens, test_mask)
print(f"2-layer model, loss on the predictable tokens: {clean:.3f} nats clean")
print(f"{'head':>6} {'zero ablation':>14} {'mean ablation':>14}   (increase in nats)")
increases = {}
for layer in range(model.n_layer):
    for head in range(model.n_head):
        zero = loss_with_head_ablated(model, test_tokens, test_mask, layer, head, "zero") - clean
        mean = loss_with_head_ablated(model, test_tokens, test_mask, layer, head, "mean") - clean
        increases[(layer, head)] = mean
        print(f"{f'{layer}.{head}':>6} {zero:14.3f} {mean:14.3f}")
worst = max(increases, key=increases.get)
print(f"\nmean-ablating head {worst[0]}.{worst[1]} hurts most (+{increases[worst]:.2f} nats); the induction head "
      f"{induction_head[0]}.{induction_head[1]} costs +{increases[induction_head]:.2f}, the {feeder_name} "
      f"{feeder[0]}.{feeder[1]} +{increases[feeder]:.2f}; the 1-layer model, which has no induction head, "
      f"scores {loss_with_head_ablated(models[1], test_tokens, test_mask):.2f}")
claims.claim(f"Both heads of the circuit are needed: mean-ablating the induction head costs +{increases[induction_head]:.2f} "
             f"nats, the {feeder_name} +{increases[feeder]:.2f}, from a clean {clean:.2f}",
             holds=min(increases[induction_head], increases[feeder]) > 1.5)

# %% [markdown] id="nb11-027"
# Read the table with the circuit in mind. The two heads are the two halves of one circuit, so removing
# either breaks the copy. Removing the induction head removes the copy itself: nothing moves $B$ to the
# prediction, and the model falls back to what the 1-layer model knows. Removing the previous-token head
# leaves the induction head running, but its keys no longer say which token came before, so it attends
# almost at random and copies a wrong token, sometimes with confidence; that can cost as much. A head's
# ablation damage measures how much the *rest of the network* depends on it, not how "important" its own
# computation is in isolation: the printed line above says which of the two costs more here.
#
# ### The other route: GPT-2's positions
#
# The same 2-layer model and seed, with the position vectors added to the token embeddings instead (GPT-2's
# way), so that heads can copy positions forward. The cell trains it (about 8 CPU seconds) and prints the same
# scores.
#
# **Predict before you run.** Both routes are now open. Does the layer-0 head stay a previous-token head, or can
# the model take the other route?
#
# <details><summary>Answer</summary>
#
# On this seed it takes the other route: its layer-0 head becomes a duplicate-token head (a high duplicate-token
# score, a previous-token score near 0), which copies the position of the earlier $A$ forward for the layer-1
# head's queries (Q-composition). Nothing forbids K-composition here, and another seed may build a previous-token
# head instead: what the data rewards is the circuit, not one route. Ablating the layer-0 head still breaks it.
# </details>

# %% id="8dabbcf3"
gpt2_style, _ = train_model(2, positions="residual")
patterns0 = gpt2_style.patterns(sample)[0]
previous0 = previous_token_score(patterns0)[0].item()
duplicate0 = duplicate_token_score(patterns0, sample)[0].item()
prefix1 = prefix_matching_score(gpt2_style.patterns(sample)[1], sample)[0].item()
clean_other = loss_with_head_ablated(gpt2_style, test_tokens, test_mask)
cost = {(layer, 0): loss_with_head_ablated(gpt2_style, test_tokens, test_mask, layer, 0, "mean") - clean_other for layer in (0, 1)}
print(f"positions in the residual stream: loss {clean_other:.3f} nats on the predictable tokens; layer-1 prefix-matching {prefix1:.2f}")
print(f"layer-0 head: previous-token score {previous0:.2f}, duplicate-token score {duplicate0:.2f} -> "
      + ("a previous-token head (K-composition, as above)" if previous0 > duplicate0 else
         "a duplicate-token head: this model copies the earlier position forward (Q-composition)"))
print(f"mean ablation: layer-0 head +{cost[(0, 0)]:.2f} nats, induction head +{cost[(1, 0)]:.2f} nats")
claims.claim(f"With GPT-2's positions this seed's model takes the Q-composition route: its layer-0 head scores "
             f"{duplicate0:.2f} on duplicate-token and {previous0:.2f} on previous-token, and mean-ablating it costs "
             f"+{cost[(0, 0)]:.2f} nats", holds=duplicate0 > previous0 + 0.1 and cost[(0, 0)] > 1.5)

# %% [markdown] id="nb11-028"
# ## 4. Superposition in miniature
#
# A model with $d$ dimensions in its residual stream has only $d$ exactly orthogonal directions. Yet
# models appear to represent far more features than that (Elhage et al., "Toy Models of
# Superposition", 2022). The geometry that allows it: in high dimensions, random directions are
# **nearly** orthogonal. For two independent random unit vectors in $\mathbb{R}^d$ the cosine has mean 0
# and standard deviation $1/\sqrt{d}$: at $d = 512$ about $0.044$. So a space can hold many more than $d$
# directions that interfere with each other only a little; if features are *sparse* (rarely active at
# once), the small interference is a price worth paying.
#
# ### Exercise 4: `pairwise_cosines` (1 visible + 1 hidden for the values + 1 hidden for edge cases)

# %% id="nb11-029" nbgrader={"grade": false, "grade_id": "pairwise_cosines", "locked": false, "schema_version": 3, "solution": true, "task": false}
import torch


def pairwise_cosines(vectors):
    """The cosine of the angle between every pair of vectors.

    Args:
        vectors: float tensor (n, d), n >= 1, d >= 1: one vector per row. No row may be all zeros.
    Returns:
        A new tensor (n, n), vectors' dtype: entry [i, j] = <v_i, v_j> / (|v_i| |v_j|), in [-1, 1] and
        1 on the diagonal, both to rounding (a clamp is allowed, not required). The input is left unchanged.
    Raises:
        ValueError: if some row has norm 0 (its direction is undefined).
    """
    ### BEGIN SOLUTION
    norms = vectors.norm(dim=1, keepdim=True)
    if (norms == 0).any():
        raise ValueError("a zero vector has no direction")
    unit = vectors / norms
    return unit @ unit.T
    ### END SOLUTION


# %% id="nb11-030" nbgrader={"grade": true, "grade_id": "test_pairwise_cosines", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
import math

import torch
from utils import checks, probes

vectors = torch.tensor([[1.0, 0.0], [0.0, 2.0], [3.0, 3.0]])
checks.assert_close(pairwise_cosines(vectors),
                    torch.tensor([[1.0, 0.0, 1 / math.sqrt(2)], [0.0, 1.0, 1 / math.sqrt(2)],
                                  [1 / math.sqrt(2), 1 / math.sqrt(2), 1.0]]),
                    name="pairwise_cosines of (1, 0), (0, 2), (3, 3)",
                    hint="Divide each row by its own length first: a cosine ignores how long the vectors are.")

# The caller's vectors stay as they were.
fresh = torch.tensor([[1.0, 0.0], [0.0, 2.0], [3.0, 3.0]])
call = probes.traced_call(pairwise_cosines, fresh.clone())
checks.assert_close(call.args_after[0], fresh, atol=0, rtol=0, name="the vectors after pairwise_cosines",
                    hint="vectors / norms is a new tensor; vectors.div_(norms) or /= changes the caller's vectors.")
print("pairwise_cosines: visible tests passed")

# %% id="nb11-031" nbgrader={"grade": true, "grade_id": "test_pairwise_cosines_hidden", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for pairwise_cosines run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
import torch.nn.functional as F
from utils import checks

generator = torch.Generator().manual_seed(5)
for n, d, scale in [(1, 1, 1.0), (4, 3, 10.0), (7, 50, 0.01), (30, 5, 3.0)]:
    vectors = scale * torch.randn(n, d, generator=generator) * torch.rand(n, 1, generator=generator).add(0.1)
    expected = F.cosine_similarity(vectors.unsqueeze(1), vectors.unsqueeze(0), dim=-1)
    checks.assert_close(pairwise_cosines(vectors), expected, atol=1e-5,
                        name=f"pairwise_cosines of {n} vectors in {d} dimensions (lengths differ)",
                        hint="Normalise the rows (one length per vector), not the columns, then take dot products.")
vectors = torch.randn(5, 4, dtype=torch.float64, generator=generator)
checks.assert_tensor(pairwise_cosines(vectors), name="pairwise_cosines of float64 vectors", shape=(5, 5), dtype=torch.float64)
# Rows whose entries sum to 0, or that are 0 but for one entry, are not zero rows (only a norm of 0 is).
vectors = torch.tensor([[1.0, -1.0, 0.0], [0.0, 0.0, -2.0], [3.0, -1.0, -2.0]])
checks.assert_close(pairwise_cosines(vectors), F.cosine_similarity(vectors.unsqueeze(1), vectors.unsqueeze(0), dim=-1),
                    atol=1e-6, name="pairwise_cosines of (1, -1, 0), (0, 0, -2), (3, -1, -2)",
                    hint="Raise only when a row's NORM is 0; a row whose entries sum to 0 has a direction.")

# The result has the vectors' dtype, float32 as well as float64.
checks.assert_tensor(pairwise_cosines(torch.randn(3, 6, generator=generator)), name="pairwise_cosines of float32 vectors",
                     shape=(3, 3), dtype=torch.float32, hint="Compute in the vectors' dtype; do not convert to float64.")
print("pairwise_cosines: hidden tests passed")
### END HIDDEN TESTS

# %% id="nb11-032" nbgrader={"grade": true, "grade_id": "test_pairwise_cosines_hidden_edges", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for pairwise_cosines' edge clauses run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
from utils import checks
from utils import probes

checks.assert_raises(ValueError, pairwise_cosines, torch.tensor([[1.0, 2.0], [0.0, 0.0]]),
                     name="pairwise_cosines with a zero vector", hint="Check the norms and raise ValueError; never return NaN.")
vectors = torch.tensor([[3.0, 4.0], [-1.0, 0.5]])
traced = probes.traced_call(pairwise_cosines, vectors)
checks.assert_close(traced.args_after[0], vectors, atol=0, rtol=0, name="the vectors after pairwise_cosines",
                    hint="Normalise a copy (vectors / norms), never the input in place.")

# Short vectors are not zero vectors: a cosine ignores the lengths, however small (no epsilon clamps them).
# Lengths about 1e-9 and 1e-14, below F.cosine_similarity's eps (1e-8) and F.normalize's (1e-12), far above
# where their squares would underflow in float32.
unit = torch.tensor([[0.6, 0.8], [-2 / 5 ** 0.5, 1 / 5 ** 0.5], [0.0, 1.0]], dtype=torch.float64)
for dtype in (torch.float32, torch.float64):
    for length in (1e-9, 1e-14):
        short = torch.tensor([[3.0, 4.0], [-1.0, 0.5], [0.0, 2.0]], dtype=dtype) * length
        checks.assert_close(pairwise_cosines(short), (unit @ unit.T).to(dtype), atol=1e-5,
                            name=f"pairwise_cosines of vectors of length about {length:g} ({dtype})",
                            hint="Only a norm of exactly 0 is an error; divide by the norms themselves (F.cosine_similarity "
                                 "clamps norms below its eps=1e-8, F.normalize below its eps=1e-12).")
print("pairwise_cosines: hidden edge tests passed")
### END HIDDEN TESTS

# %% [markdown] id="nb11-033a"
# The cell below draws 600 random directions in $d$ dimensions and measures the spread of their cosines; then, for
# $d$ from 16 to 128, it keeps greedily every random direction (of 3,000 candidates) whose cosine with all those
# kept so far is below 0.25 in absolute value.
#
# **Predict before you run.** At $d = 128$, how many directions does the greedy search keep: fewer than 128, about
# 128, or more? And at $d = 16$?
#
# <details><summary>Answer</summary>
#
# At $d = 128$ several times more than 128: the typical cosine is $1/\sqrt{128} \approx 0.09$, so a bound of 0.25
# is almost three standard deviations wide and most candidates pass. At $d = 16$ the typical cosine is already
# $1/\sqrt{16} = 0.25$, the bound itself, and the search keeps fewer than 16. The number of nearly orthogonal
# directions grows much faster than $d$, which is why superposition pays off in wide models.
# </details>

# %% id="nb11-033"
dims = [2, 8, 32, 128, 512]
samples = {}
fig, ax = plt.subplots(figsize=(7, 3.5))
generator = torch.Generator().manual_seed(0)
for d in dims:
    cosines = pairwise_cosines(torch.randn(600, d, generator=generator))
    off_diagonal = cosines[~torch.eye(600, dtype=torch.bool)]
    samples[d] = off_diagonal
    ax.hist(off_diagonal.numpy(), bins=80, density=True, histtype="step", label=f"d = {d}")
ax.set_xlabel("cosine between two random directions")
ax.set_ylabel("density")
ax.set_title("Random directions are nearly orthogonal in high dimensions")
ax.legend()
plt.show()
for d in dims:
    print(f"d = {d:>3}: standard deviation of the cosine {samples[d].std():.4f} (1/sqrt(d) = {1 / math.sqrt(d):.4f})")

# How many random directions can be kept with every pairwise |cosine| below 0.25? (greedy, 3,000 candidates)
print()
found = {}
for d in (16, 32, 64, 128):
    candidates = torch.randn(3000, d, generator=generator)
    unit = candidates / candidates.norm(dim=1, keepdim=True)
    kept = unit[:1]
    for vector in unit[1:]:
        if (kept @ vector).abs().max() < 0.25:
            kept = torch.cat([kept, vector.unsqueeze(0)])
    print(f"d = {d:>3}: {len(kept):>4} directions with every |cosine| < 0.25 ({len(kept) / d:.1f} per dimension)")
    found[d] = len(kept)
worst = max(abs(samples[d].std().item() * math.sqrt(d) - 1) for d in dims)
claims.claim(f"The cosine of two random directions has standard deviation 1/sqrt(d) at every d measured (within "
             f"{worst:.1%})", holds=worst < 0.05)
claims.claim(f"Nearly orthogonal directions outgrow the dimensions: {found[16]} kept at d = 16 (fewer than 16), "
             f"{found[128]} at d = 128 ({found[128] / 128:.1f} per dimension)", holds=found[16] < 16 and found[128] > 3 * 128)

# %% [markdown] id="nb11-034"
# ## 5. "bank": one token, two meanings
#
# A token's embedding is one vector, whatever it means in context: "bank" of a river and "bank" that
# holds money start identical. Attention is what makes them differ: after an attention layer, the
# vector at "bank" is the embedding **plus** what the heads brought in from the context ("river",
# "fisherman" or "money", "teller"). A toy corpus of sentences of both kinds shows it: we take the vector
# at every "bank" before attention (the token embedding alone) and after the attention layer, and ask
# whether its nearest neighbour among the other "bank"s has the same meaning. We ask it of a model trained on
# the corpus (600 steps of next-word prediction) and, as a control, of the same model before training.
#
# **Predict before you run.** The untrained model has random weights. Will its "bank" vectors after attention
# group by meaning (nearest neighbours of the same sense far above the chance level of one half), or not?
#
# <details><summary>Answer</summary>
#
# They will, about as well as the trained model's. Any attention layer, trained or not, adds to the vector at
# "bank" a weighted mix of the context's vectors, and the two senses share no context words: the mix differs by
# sense whatever the weights are. So this test shows that attention **mixes in the context**, not that anything
# was learnt. What training adds is *using* it: the last cell asks each model to predict the sentence's last word
# ("water" or "office") from a position whose own word, "the", is the same in both senses, so only the context
# can tell. The untrained model does no better than chance there; the trained one is nearly always right.
# </details>

# %% id="nb11-035"
RIVER = ["the fisherman sat on the muddy", "we walked along the grassy", "the boat drifted toward the steep",
         "ducks rested on the river", "the flood washed over the low", "reeds grew thick on the far"]
MONEY = ["she deposited her salary at the", "the teller at the busy", "he borrowed money from the local",
         "interest rates rose at the central", "the robbers escaped from the", "my savings sit in the"]
ENDINGS = {"river": ["bank near the water", "bank beside the stream", "bank under the willows"],
           "money": ["bank near the office", "bank beside the market", "bank under new management"]}
FILLERS = ["today", "again", "quietly", "at noon", "in spring", "once more"]


def bank_sentences(count, generator):
    sentences, senses = [], []
    for _ in range(count):
        sense = "river" if torch.rand(1, generator=generator).item() < 0.5 else "money"
        starts = RIVER if sense == "river" else MONEY
        pick = lambda options: options[torch.randint(len(options), (1,), generator=generator).item()]  # noqa: E731
        sentences.append(f"{pick(FILLERS)} {pick(starts)} {pick(ENDINGS[sense])}".split())
        senses.append(sense)
    return sentences, senses


generator = torch.Generator().manual_seed(0)
train_sentences, _ = bank_sentences(3000, generator)
words = sorted({w for s in train_sentences for w in s} | {"<pad>"})
index = {w: i for i, w in enumerate(words)}
LENGTH = max(len(s) for s in train_sentences)
encode = lambda sentences: torch.tensor([[index[w] for w in s] + [index["<pad>"]] * (LENGTH - len(s)) for s in sentences])  # noqa: E731

bank_model = AttentionOnlyTransformer(len(words), d_model=32, n_head=2, n_layer=1, block_size=LENGTH, seed=1)
untrained = AttentionOnlyTransformer(len(words), d_model=32, n_head=2, n_layer=1, block_size=LENGTH, seed=1)   # control
optimizer = torch.optim.AdamW(bank_model.parameters(), lr=3e-3)
data = encode(train_sentences)
with progress.training_steps(600, "bank model", cpu_seconds=True) as bar:
    for step in bar:
        batch = data[torch.randint(len(data), (64,), generator=generator)]
        loss = F.cross_entropy(bank_model(batch[:, :-1]).flatten(0, 1), batch[:, 1:].flatten(),
                               ignore_index=index["<pad>"])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if step % 10 == 0:
            bar.show(loss=loss.item())
print(f"{len(words)} words; next-word loss after training {loss.item():.2f} nats")

test_sentences, test_senses = bank_sentences(200, torch.Generator().manual_seed(99))
tokens = encode(test_sentences)
positions = [s.index("bank") for s in test_sentences]
with torch.no_grad():
    before = bank_model.embed(tokens)[torch.arange(len(tokens)), positions]
    after = bank_model.residual(tokens)[torch.arange(len(tokens)), positions]
    after_untrained = untrained.residual(tokens)[torch.arange(len(tokens)), positions]
labels = torch.tensor([sense == "river" for sense in test_senses])


def nearest_neighbour_agreement(vectors):
    cosines = pairwise_cosines(vectors)
    cosines.fill_diagonal_(-2.0)                      # a vector is not its own neighbour
    return (labels[cosines.argmax(dim=1)] == labels).float().mean().item()


alike = (before - before[0]).abs().max().item() == 0
neighbours = {"trained": nearest_neighbour_agreement(after), "untrained": nearest_neighbour_agreement(after_untrained)}
print(f"'bank' vectors that are exactly alike before attention: {alike}")
for name, agreement in neighbours.items():
    print(f"after attention, {name:9} model: nearest neighbour has the same meaning for {agreement:.0%} of the 'bank's "
          f"(half would be chance)")
claims.claim(f"Attention separates the two 'bank's with or without training: same-sense nearest neighbours for "
             f"{neighbours['trained']:.0%} of them in the trained model, {neighbours['untrained']:.0%} in the untrained "
             f"one, from vectors that were identical before attention", holds=alike and min(neighbours.values()) > 0.9)

# What training adds: predicting the last word from a position whose own word ("the") is the same in both senses.
RIVER_LAST, MONEY_LAST = [index[w] for w in ("water", "stream", "willows")], [index[w] for w in ("office", "market")]
rows = [row for row, s in enumerate(test_sentences) if s[-2] == "the"]
where = torch.tensor([len(test_sentences[row]) - 2 for row in rows])      # the position of that "the"
river = labels[rows]
ending = {}
with torch.no_grad():
    for name, model in (("trained", bank_model), ("untrained", untrained)):
        probs = model(tokens[rows]).softmax(dim=-1)[torch.arange(len(rows)), where]
        says_river = probs[:, RIVER_LAST].sum(dim=1) > probs[:, MONEY_LAST].sum(dim=1)
        ending[name] = (says_river == river).float().mean().item()
        print(f"{name:9} model: the last word's sense predicted right for {ending[name]:.0%} of {len(rows)} sentences "
              f"(half would be chance)")
claims.claim(f"Only training makes the model use the context: the trained model predicts the right sense of the last "
             f"word for {ending['trained']:.0%} of the sentences, the untrained one for {ending['untrained']:.0%}",
             holds=ending["trained"] > 0.9 and ending["untrained"] < 0.75)
centred = after - after.mean(dim=0)
_, _, directions = torch.linalg.svd(centred, full_matrices=False)
projected = centred @ directions[:2].T
fig, ax = plt.subplots(figsize=(5, 4))
for sense, marker in (("river", "o"), ("money", "s")):
    chosen = labels == (sense == "river")
    ax.scatter(projected[chosen, 0], projected[chosen, 1], marker=marker, alpha=0.6, label=f"'bank' ({sense})")
ax.set_title("'bank' after attention (2 principal directions)")
ax.legend()
plt.show()

# %% [markdown] id="nb11-036"
# ## Summary
#
# * The induction pattern $[A][B] \dots [A] \to [B]$ needs two heads in sequence: a layer-1 head that
#   writes information about another position into the residual stream (a previous-token head for
#   K-composition, a duplicate-token head for Q-composition), and an **induction head** that uses it to
#   attend to $B$ and copy it. One layer cannot; two layers learn it, with a sudden drop in the loss,
#   and the scores tell which route a trained model took. Where positions enter decides which routes
#   exist: with positions only in queries and keys (as with RoPE), a previous-token head is the only way.
# * Heads can be **read** (attention-pattern scores, the OV circuit's copying score) and **tested**
#   (ablations with forward hooks). Mean ablation removes information while keeping the average signal.
# * In $d$ dimensions, random directions have cosines of about $\pm 1/\sqrt d$: many more than $d$ nearly
#   orthogonal directions fit, which is how a model can hold more features than dimensions
#   (**superposition**).
# * A token's embedding is the same in every context. Attention mixes the context into it, so the two "bank"s
#   differ after one layer even with random weights; training is what makes the model *use* the difference (the
#   untrained model could not predict the sentence's ending, the trained one could).
