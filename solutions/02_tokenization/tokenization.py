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

# %% [markdown] id="c00"
# # 02 · Tokenization: from characters to a working byte-level BPE
#
# A language model never reads text. It reads a list of integers, one per **token**, and everything
# it learns is learned about those integers. Before the first layer of a transformer runs, a
# **tokenizer** has already decided what the units of language are. That decision fixes how long
# sequences are (and attention's cost grows with the square of the length), how big the embedding
# table is, which strings the model can represent at all, and what it can and cannot "see", such as the
# letters inside a word.
#
# In this chapter you build the tokenizer family that GPT-2, GPT-4 and Llama 3 use,
# **byte-level byte-pair encoding (BPE)**, from scratch, fast enough to train on half a megabyte of
# text in seconds, and measure what it buys:
#
# | # | exercise | what it does | points |
# |---|---|---|---|
# | 1 | `split_words` | a GPT-2 style regex pre-tokenizer: words, digits, contractions, whitespace | 1 + 3 |
# | 2 | `count_pairs` | count adjacent token pairs in a corpus of words | 1 + 3 |
# | 3 | `merge` | replace one pair by a new token | 1 + 3 |
# | 4 | `PairCounter` | keep the pair counts up to date after a merge, touching only the words that change | 1 + 5 |
# | 5 | `train_bpe` | learn the merges, in order, and the vocabulary | 1 + 4 |
# | 6 | `encode` | text → token ids with the learned merges | 1 + 4 |
# | 7 | `decode` | token ids → text | 1 + 3 |
# | 8 | `encode_with_specials` | special tokens such as `<|endoftext|>`: never merged, always one id | 1 + 3 |
# | 9 | `one_hot` | the embedding lookup as a matrix product | 1 + 3 |
#
# Each exercise has visible tests (run them) and hidden tests that run when the notebook is graded. A
# few questions ask you to **predict before you run**: write your guess down, then open the answer.
#
# **Time.** About 10 seconds of CPU time for the whole notebook, measured on one core of a busy 2-core machine,
# about what a 2-core laptop takes; no cell takes more than 2 seconds. On a GPU: untimed (nothing here needs
# one).

# %% id="setup" jupyter={"source_hidden": true} nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
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

# %% id="c02"
# %matplotlib inline
import collections
import html
import json
import math
import os
import re
import tempfile
import time

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from IPython.display import HTML, display

from utils import claims, corpus


def show_table(header, rows):
    """Display a small table. Every cell is shown as plain text (HTML-escaped, so `</w>` stays visible)."""
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(cell))}</td>" for cell in row) + "</tr>" for row in rows)
    display(HTML(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"))


def show_token(piece):
    """A token's bytes (or a string) as readable text: '␣' for a space, escapes for other bytes."""
    if isinstance(piece, bytes):
        piece = piece.decode("utf-8", errors="backslashreplace")
    return piece.replace(" ", "␣").replace("\n", "\\n").replace("\t", "\\t")


def prose_only(text):
    """Keep the running prose of a reStructuredText-like document: drop table borders and rows, headings'
    underlines, code examples and other paragraphs that are mostly symbols; join each paragraph's lines and
    collapse runs of whitespace to one space. One paragraph per line."""
    paragraphs = []
    for block in re.split(r"\n[ \t]*\n", text):
        lines = [line.strip() for line in block.splitlines()]
        lines = [line for line in lines if line and not re.fullmatch(r"[-=+|*~^_ ]+", line)
                 and not line.startswith(("|", "+", ">>>", "..."))]
        paragraph = re.sub(r"\s+", " ", " ".join(lines))
        if paragraph and sum(c.isalpha() or c == " " for c in paragraph) >= 0.85 * len(paragraph):
            paragraphs.append(paragraph)
    return "\n".join(paragraphs)


# %% [markdown] id="c03"
# ## 1. Why tokenize, and into what?
#
# A model needs a fixed, finite **vocabulary** $V$: every input is a sequence of ids in
# $\{0, \dots, |V|-1\}$. Take the running sentence of this chapter,
#
# > researchers fine-tune large-scale models
#
# and three ways to cut it.
#
# * **Word-level.** One token per word: `[researchers] [fine-tune] [large-scale] [models]`, 4 tokens.
#   Short, but the vocabulary is whatever words the training text happened to contain. A word it never
#   saw (a new compound like *fine-tune*, a name, a typo, *LoRA*) becomes the single token `[UNK]`,
#   and the model cannot tell one unknown word from another.
# * **Character-level.** One token per character: 40 tokens for this sentence, from a vocabulary of
#   about a hundred symbols. No word is ever unknown (only a character missing from the alphabet can
#   be), but sequences get much longer.
# * **Subword.** Frequent words stay whole, rare words are built from frequent pieces:
#   `[research] [ers] [fine] [-] [tune] ...`. This is what every modern LLM uses, and BPE is the
#   most common way to learn the pieces.
#
# Let us measure the first two on real text: the English prose of the Python documentation, which ships
# with every Python installation (`utils.corpus.python_docs()`, about 460 KB). The raw help text is full
# of indentation, code examples and ASCII-art tables (`+-----+-----+`); a tokenizer trained on it would
# spend its first merges on runs of spaces and dashes. So we keep the prose only (`prose_only` above: no
# table borders, no code blocks, whitespace collapsed), about 340 KB. We build each vocabulary from the
# first 90% and measure on the last 10%, text the vocabulary has not seen. A "word" here is a
# whitespace-separated string.
#
# **Predict before you run.** Which words of the running sentence does a word-level vocabulary built from the
# Python documentation know? And roughly how many tokens per word does the character level cost?
#
# <details><summary>Answer</summary>
#
# None of the four: *researchers*, *fine-tune*, *large-scale* and *models* (as written, with the hyphens) do not
# occur in that documentation. The character level costs the mean word length plus one for the space and a
# little for punctuation: about six tokens per word for English prose. The cell prints both.
# </details>

# %% id="c04"
text = prose_only(corpus.python_docs())
train_text, valid_text = corpus.train_validation_split(text, validation_fraction=0.1)
valid_words = valid_text.split()
print(f"prose corpus: {len(text.encode('utf-8')):,} bytes, {len(text.split()):,} words")

word_vocab = set(train_text.split())             # word-level vocabulary: every word seen in training
char_vocab = set(train_text)                     # character-level vocabulary
word_unknown = sum(w not in word_vocab for w in valid_words) / len(valid_words)
char_unknown = sum(c not in char_vocab for c in valid_text) / len(valid_text)
chars_per_word = len(valid_text) / len(valid_words)

sentence = "researchers fine-tune large-scale models"
print("word-level:", [w if w in word_vocab else "[UNK]" for w in sentence.split()])
print("char-level:", len(sentence), "tokens")
show_table(
    ["tokenizer", "vocabulary size", "tokens per word (held-out)", "unknown tokens (held-out)"],
    [["word-level", f"{len(word_vocab):,}", "1.00", f"{word_unknown:.1%}"],
     ["character-level", f"{len(char_vocab):,}", f"{chars_per_word:.2f}", f"{char_unknown:.1%}"]],
)
claims.claim(f"Every word of the running sentence is unknown at word level, {word_unknown:.1%} of the held-out words "
             f"are unknown, and characters cost {chars_per_word:.2f} tokens per word",
             holds=all(w not in word_vocab for w in sentence.split()) and 0.05 < word_unknown < 0.25 and 5 < chars_per_word < 7.5)
r = chars_per_word
print(f"r = {r:.1f} times longer: the attention scores cost {r * r:.0f} times more, the per-token layers {r:.1f} times")

# %% [markdown] id="c05"
# All four words of the running sentence are `[UNK]` for a vocabulary learned from the Python
# documentation, and a sizeable share of held-out words is unknown (printed above): word-level tokenizers are
# brittle. Characters fix that but cost several tokens per word (counting the space and punctuation that
# come with each word).
#
# **Why length matters.** Self-attention compares every position with every other one: the score
# matrix $QK^\top$ for $n$ tokens has $n^2$ entries. If a tokenizer makes the sequence $r$ times longer,
# the attention scores cost $r^2$ times more, while the per-token layers (the linear maps and the MLP)
# cost $r$ times more. A claim you will often meet, "5× longer means 25× the compute", is therefore true
# of the attention scores only; the total lies between $r$ and $r^2$, depending on how much of the model
# is attention at that length. With the $r$ measured above (the last line of the cell), that is $r$ to $r^2$
# times, and the context window holds $r$ times less text.
#
# Subword tokenization aims for the best of both: no unknowns, and sequences far shorter than
# character-level. We come back to this table with our own BPE tokenizer in Section 7.
#
# ## 2. Bytes: a base vocabulary with nothing unknown
#
# Characters are not a closed set: Unicode has about 150,000 of them, and a character-level vocabulary
# built from English text has no entry for `東` or `🙂`. **Bytes** are a closed set. Every string is
# stored as a sequence of bytes by the UTF-8 encoding, 1 to 4 bytes per character, and there are only
# 256 byte values. A tokenizer whose base vocabulary is the 256 bytes can therefore represent **any**
# text, in any language, emoji and code included, with no `[UNK]` token at all. GPT-2 introduced this
# *byte-level* BPE; its vocabulary of 50,257 tokens is exactly 256 bytes + 50,000 learned merges + one
# special end-of-text token.
#
# **Predict before you run.** How many bytes does `"naïve 🙂"` take in UTF-8? (It has 7 characters.)
#
# <details><summary>Answer</summary>
#
# 11 bytes: `n a i v e` and the space are ASCII (1 byte each, 6 in all), `ï` takes 2 bytes
# (`C3 AF`) and `🙂` takes 4 (`F0 9F 99 82`). Check it with `len("naïve 🙂".encode("utf-8"))`.
# </details>

# %% id="c06"
rows = []
for ch in ["a", "é", "€", "東", "🙂"]:
    data = ch.encode("utf-8")
    rows.append([ch, f"U+{ord(ch):04X}", len(data), " ".join(f"{b:02X}" for b in data), list(data)])
show_table(["character", "code point", "UTF-8 bytes", "hex", "token ids (bytes)"], rows)

# %% [markdown] id="c07"
# ASCII characters are one byte each, so English text starts out at about one token per character;
# accented letters take 2 bytes, most CJK characters 3, emoji 4. BPE will learn to merge the frequent
# byte sequences back into bigger tokens.
#
# Two strings that look identical can differ in bytes. `é` can be stored as one code point, U+00E9
# (bytes `C3 A9`), or as `e` followed by the *combining* acute accent U+0301 (bytes `65 CC 81`). Unicode
# calls the two forms canonically equivalent, and `unicodedata.normalize("NFC", s)` turns the second
# into the first. A tokenizer must **not** do that on its own: `decode(encode(s))` has to give back
# exactly `s`, byte for byte. (Some tokenizers normalize as a documented, separate first step; ours does not.)
#
# ### Pre-tokenization: BPE learns inside words
#
# Before learning merges we cut the text into **words** (pre-tokens), and merges are learned and applied
# only inside a word. Joining the pieces gives back the original text exactly.
#
# Why words rather than the raw byte stream?
#
# * **Word boundaries carry meaning.** GPT-2's rule gives each word the single space in front of it
#   (`" models"`), so BPE can tell a word-initial `" hug"` from the `hug` inside *shrug*. A classic
#   textbook presentation of BPE instead marks the *end* of each word with a special symbol `</w>` (as
#   the original BPE paper for translation did); the leading space does the same job with an ordinary
#   byte, so decoding needs no special symbol and any text, including double spaces or no space at all,
#   still round-trips.
# * **The vocabulary is not wasted** on pieces that straddle two words, like `"e t"` in *the tokenizer*.
# * **Speed.** The prose corpus has about 55,000 words but only about 4,500 *distinct* pre-tokens. We
#   count each distinct word once, weighted by how often it occurs, instead of scanning every byte.
#
# ### Exercise 1: a GPT-2 style pre-tokenizer
#
# *Points: 1 visible, 2 hidden (the rule on ASCII and accented text, against GPT-2's pre-tokenizer), 1 hidden
# (Unicode: text drawn from every general category against GPT-2's pre-tokenizer; numbers such as `²` and `Ⅻ`,
# control characters, whitespace of other scripts, combining accents, typographic apostrophes).*
#
# GPT-2 cuts text with one regular expression whose alternatives are tried in order at each position:
#
# | alternative | matches | examples |
# |---|---|---|
# | contractions | `'s` `'t` `'re` `'ve` `'m` `'ll` `'d` (lower case) | `it` `'s` |
# | letters | an optional single space, then a run of letters | `␣models`, `naïve` |
# | numbers | an optional single space, then a run of numbers | `␣2024`, `²²` |
# | other symbols | an optional single space, then a run of characters that are not whitespace, letters or numbers | `␣-`, `!!`, `␣"(` |
# | whitespace before a word | a run of whitespace, **leaving its last character** for the word that follows | `␣␣` in `x␣␣␣=` |
# | other whitespace | any remaining run of whitespace | `\n`, trailing spaces |
#
# The whitespace rule is the subtle one. In `"a   b"` (three spaces) the pieces are `a`, `␣␣`, `␣b`: the
# last space goes with `b`, so `" b"` is the same token whether one or three spaces came before it. In
# `"a\n\nb"` the run leaves its last newline over too, and since only a space can join a word, that
# newline becomes a piece of its own: `a`, `\n`, `\n`, `b`. At the end of the text the run stays whole.
#
# GPT-2 writes *letter* as `\p{L}` and *number* as `\p{N}`, Unicode's general categories, in the
# third-party `regex` module's syntax: a letter is a character whose category (`unicodedata.category(ch)`)
# starts with `L` (`é`, `ß`, `Ж`, `東`), a number one whose category starts with `N`: decimal digits (`Nd`:
# `7`, `٣`, `３`) but also letter-like numbers (`Nl`: `Ⅻ`) and other numbers (`No`: `²`, `½`). Whitespace is
# Unicode's *White_Space*: what Python's `\s` matches, except the four control characters U+001C to U+001F,
# which `\s` counts as whitespace and GPT-2 as symbols. Everything else is "other": `_`, punctuation,
# emoji, combining accents such as U+0301, control characters.
#
# Python's built-in `re` has no `\p{...}`, and its `\w` and `\d` draw the lines elsewhere (`[^\W\d_]` takes
# `²` and `½` for letters). One way to use `re` anyway: write the pattern for ASCII, and run it over a
# *stand-in* of the text in which every character is replaced by one ASCII character of its class (a
# letter by `a`, a number by `0`, other whitespace by a tab, anything else by `!`; keep ASCII as it is,
# apostrophe and space included). The matches' positions in the stand-in are the pieces' positions in the
# text.
#
# **Predict before you run.** What pieces does the rule give for `"it's 2024!  Hello\n"`?
#
# <details><summary>Answer</summary>
#
# `['it', "'s", ' 2024', '!', ' ', ' Hello', '\n']`: the contraction is its own piece; `!` has no space in
# front; of the two spaces before `Hello` the first stands alone and the second joins `Hello`; the final
# newline is a whitespace run of its own.
# </details>

# %% id="split_words" source_trailing_newlines=1 nbgrader={"grade": false, "grade_id": "split_words", "locked": false, "schema_version": 3, "solution": true, "task": false}
import re
import unicodedata


def split_words(text):
    r"""Split `text` into pre-tokens (words) with GPT-2's rule; ''.join(split_words(text)) == text.

    text: a str (may be empty), any Unicode. Returns a new list of non-empty str, in order; the text
    is not normalized. At each position the first alternative that matches is taken, and it takes as
    many characters as it can:
      1. a contraction: 's 't 're 've 'm 'll 'd (lower case only: 'S is not one; apostrophe U+0027
         only: the typographic ’ is a symbol);
      2. an optional single space, then one or more letters;
      3. an optional single space, then one or more numbers;
      4. an optional single space, then one or more characters that are neither whitespace, letters
         nor numbers (the underscore, a combining accent, an emoji, a control character);
      5. a run of whitespace that is not followed by a non-whitespace character (so a run of spaces
         before a word leaves its last space to the word);
      6. any other run of whitespace.
    The optional leading character in 2-4 is the space U+0020 only (never a tab, a newline or a
    no-break space). The classes are GPT-2's \p{L}, \p{N} and \s, by Unicode category
    (unicodedata.category(ch)):
      letter: a category that starts with "L" (Lu, Ll, Lt, Lm, Lo: é, ß, Ж, 東);
      number: a category that starts with "N": Nd (0-9, ٣, ３), Nl (Ⅻ) and No (², ½);
      whitespace: Unicode's White_Space, which is what re's \s matches except U+001C..U+001F (those
        four control characters are symbols, rule 4).
    """
    ### BEGIN SOLUTION
    def stand_in(ch):
        r"""One ASCII character of ch's class: ASCII as it is, a letter 'a', a number '0', other
        whitespace a tab, anything else '!' (so is U+001C..U+001F, which re's \s would take)."""
        if ch.isascii():
            return "!" if "\x1c" <= ch <= "\x1f" else ch
        kind = unicodedata.category(ch)[0]
        if kind == "L":
            return "a"
        if kind == "N":
            return "0"
        return "\t" if ch.isspace() else "!"

    # re has no \p{L}/\p{N}: run GPT-2's pattern, written for ASCII, over a stand-in of the text in which
    # each character is replaced by one ASCII character of its class; the pieces are at the same places.
    shadow = text.translate({ord(ch): stand_in(ch) for ch in set(text)})
    pattern = r"'(?:[sdmt]|ll|ve|re)| ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+(?!\S)|\s+"
    return [text[m.start():m.end()] for m in re.finditer(pattern, shadow, flags=re.ASCII)]
    ### END SOLUTION


# %% id="test_split_words" nbgrader={"grade": true, "grade_id": "test_split_words", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
from utils import checks


def _split(text):
    got = split_words(text)
    checks.assert_true(isinstance(got, list), name=f"split_words({text!r})", problem=f"expected a list, got {type(got).__name__}.")
    return list(got)


checks.assert_equal(_split("hello world"), ["hello", " world"], name="split_words('hello world')",
                    hint="the space in front of a word belongs to the word.")
checks.assert_equal(_split("it's 2024!  Hello\n"), ["it", "'s", " 2024", "!", " ", " Hello", "\n"],
                    name="split_words(\"it's 2024!  Hello\\n\")",
                    hint="contractions are pieces of their own; of a run of spaces before a word, the last space joins the word.")
checks.assert_equal(_split("abc123def"), ["abc", "123", "def"], name="split_words('abc123def')",
                    hint="letters and digits form separate runs.")
checks.assert_equal(_split("x  = 42"), ["x", " ", " =", " 42"], name="split_words('x  = 42')",
                    hint="symbols take one leading space too.")
checks.assert_equal(_split("a\n\nb  "), ["a", "\n", "\n", "b", "  "], name="split_words('a\\n\\nb  ')",
                    hint="a whitespace run before a word leaves its last character over; only a space can join the word, "
                         "so a left-over newline stands alone. Whitespace at the very end stays whole.")
checks.assert_equal(_split("snake_case"), ["snake", "_", "case"], name="split_words('snake_case')",
                    hint="the underscore is a symbol, not a letter.")
checks.assert_equal(_split("x²² ½"), ["x", "²²", " ½"], name="split_words('x²² ½')",
                    hint="² and ½ are numbers (Unicode category No), not letters: a category that starts with N is a number.")
checks.assert_equal(_split(""), [], name="split_words('')")
print("split_words: visible tests passed")

# %% id="test_split_words_hidden" nbgrader={"grade": true, "grade_id": "test_split_words_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for split_words run when your notebook is graded.
### BEGIN HIDDEN TESTS
import os
import re
import tempfile

os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", os.path.join(tempfile.gettempdir(), "hypothesis-course"))
from hypothesis import HealthCheck, given, settings, strategies as st
from tokenizers import pre_tokenizers

from utils import checks


def _split(text):
    got = split_words(text)
    checks.assert_true(isinstance(got, list), name=f"split_words({text!r})", problem=f"expected a list, got {type(got).__name__}.")
    return list(got)


# Values written here.
checks.assert_equal(_split("we'll see, they've gone; I'd"), ["we", "'ll", " see", ",", " they", "'ve", " gone", ";", " I", "'d"],
                    name="split_words(\"we'll see, they've gone; I'd\")")
checks.assert_equal(_split("café 東京 naïve"), ["café", " 東京", " naïve"], name="split_words('café 東京 naïve')",
                    hint="letters are Unicode letters, not only a-z.")
checks.assert_equal(_split("e\u0301t\u00e9"), ["e", "\u0301", "t\u00e9"], name="split_words('e\\u0301t\\u00e9')",
                    hint="a combining accent is not a letter: it is an 'other' symbol; do not normalize the text.")
checks.assert_equal(_split("\t  x"), ["\t ", " x"], name="split_words('\\t  x')")
checks.assert_equal(_split("   "), ["   "], name="split_words('   ')")
checks.assert_equal(_split("A1_b2"), ["A", "1", "_", "b", "2"], name="split_words('A1_b2')")
checks.assert_equal(_split("x 'tis"), ["x", " '", "tis"], name="split_words(\"x 'tis\")",
                    hint="a contraction has no leading space; here the apostrophe is a symbol with its space.")

# Against HF tokenizers' GPT-2 pre-tokenizer (the original pattern with \p{L} and \p{N}), on text whose
# characters are classified the same way by both (ASCII, accented Latin letters, CJK, emoji, whitespace).
_hf = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
_printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
_BYTE_OF = {chr(b): b for b in _printable}
_BYTE_OF.update({chr(256 + i): b for i, b in enumerate(b for b in range(256) if b not in _printable)})


def _reference(text):
    return [bytes(_BYTE_OF[ch] for ch in piece).decode("utf-8") for piece, _ in _hf.pre_tokenize_str(text)]


_alphabet = st.sampled_from(list("abcXYZ019 ' \t\n\r.,!?-_()\"") + ["'s", "'ll", "'re", "'d", "é", "ß", "東", "🙂", "  ", "\n\n"])


@settings(derandomize=True, max_examples=80, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_alphabet, max_size=25).map("".join))
def test_split_matches_gpt2(s):
    got = _split(s)
    checks.assert_equal("".join(got), s, name=f"''.join(split_words({s!r}))", hint="the pieces must join to the text.")
    checks.assert_equal(got, _reference(s), name=f"split_words({s!r}) vs GPT-2's pre-tokenizer")


test_split_matches_gpt2()
del test_split_matches_gpt2, _split
### END HIDDEN TESTS

# %% id="test_split_words_hidden_unicode" nbgrader={"grade": true, "grade_id": "test_split_words_hidden_unicode", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for split_words (Unicode) run when your notebook is graded.
### BEGIN HIDDEN TESTS
import os
import tempfile

os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", os.path.join(tempfile.gettempdir(), "hypothesis-course"))
from hypothesis import HealthCheck, given, settings, strategies as st
from tokenizers import pre_tokenizers

from utils import checks


def _split(text):
    got = split_words(text)
    checks.assert_true(isinstance(got, list) and all(type(p) is str and p for p in got), name=f"split_words({text!r})",
                       problem=f"expected a list of non-empty str, got {got!r}.")
    return list(got)


# Values written here. (The loop variable is not `text`: in the solution notebook this cell runs in the same
# kernel as the demos, whose `text` is the corpus.)
for sample, expected, hint in [
    ("Привет мир", ["Привет", " мир"], "letters of any script are letters."),
    ("x\u00a0y", ["x", "\u00a0", "y"], "only the space U+0020 joins a word; a no-break space is whitespace of its own."),
    ("a\tb", ["a", "\t", "b"], "only the space U+0020 joins a word, not a tab."),
    ("東京\u3000タワー", ["東京", "\u3000", "タワー"], "U+3000 (ideographic space) is whitespace, not a space that joins a word."),
    ("a \u00a0 b", ["a", " \u00a0", " b"], "a whitespace run (here space, no-break space, space) leaves its last space to the word."),
    ("IT'S I'M", ["IT", "'", "S", " I", "'", "M"], "contractions are lower case only: 'S is a symbol and a letter."),
    ("it\u2019s", ["it", "\u2019", "s"], "only the apostrophe U+0027 starts a contraction; ’ is a symbol."),
    ("x ٣٤ ３", ["x", " ٣٤", " ３"], "digits are Unicode decimal digits too, not only 0-9."),
    ("Ⅻ½x ²³", ["Ⅻ½", "x", " ²³"], "numbers are Unicode category N: Nd digits, Nl (Ⅻ) and No (², ½), not letters."),
    ("2½! Ⅻ.", ["2½", "!", " Ⅻ", "."], "½ (No) and Ⅻ (Nl) are numbers like 2, not symbols: they do not join the '!' after them."),
    ("第五章 Ⅻ五", ["第五章", " Ⅻ", "五"],
     "五 is a letter (category Lo) although str.isnumeric() gives True for it: classify by the category, letters first."),
    ("五万円 3万", ["五万円", " 3", "万"], "五 and 万 are letters (Lo), 3 a number (Nd): the category decides, not a numeric value."),
    ("a\x1cb \x1d\x1e\x1f", ["a", "\x1c", "b", " \x1d\x1e\x1f"],
     "U+001C..U+001F are not whitespace for GPT-2 (not Unicode White_Space, though re's \\s matches them): they are symbols."),
    ("a\x1c\n b", ["a", "\x1c", "\n", " b"], "U+001C is a symbol; the newline before ' b' is whitespace of its own."),
    ("e\u0301\u0301x ab\u0301", ["e", "\u0301\u0301", "x", " ab", "\u0301"], "a combining accent is a symbol; do not normalize."),
    ("ß🙂 🙂🙂x", ["ß", "🙂", " 🙂🙂", "x"], "an emoji is a symbol, and takes one leading space."),
]:
    checks.assert_equal(_split(sample), expected, name=f"split_words({sample!r})", hint=hint)

# Against HF tokenizers' GPT-2 pre-tokenizer (GPT-2's pattern with \p{L}, \p{N} and Unicode's White_Space) on
# text drawn from every Unicode general category. Only characters assigned in this Python's Unicode
# version are drawn (no Cn, and no surrogates Cs, which a str cannot encode): HF's tables are at least as
# new, and a character assigned later is unassigned here, so unicodedata cannot classify it.
_hf = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
_printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
_BYTE_OF = {chr(b): b for b in _printable}
_BYTE_OF.update({chr(256 + i): b for i, b in enumerate(b for b in range(256) if b not in _printable)})


def _reference(text):
    return [bytes(_BYTE_OF[ch] for ch in piece).decode("utf-8") for piece, _ in _hf.pre_tokenize_str(text)]


_CATEGORIES = ["Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf",
               "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Co"]
_alphabet = st.one_of(
    *[st.characters(categories=[category]) for category in _CATEGORIES],
    st.sampled_from(list("aZ1 '\t\n_.\x1c\x1f\x85") + ["²", "½", "Ⅻ", "٣", "\u00a0", "\u3000", "'s", "'ll", "  ", " \u00a0"]))


@settings(derandomize=True, max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_alphabet, max_size=20).map("".join))
def test_split_unicode(s):
    got = _split(s)
    checks.assert_equal("".join(got), s, name=f"''.join(split_words({s!r}))", hint="the pieces must join to the text.")
    checks.assert_equal(got, _reference(s), name=f"split_words({s!r}) vs GPT-2's pre-tokenizer")


test_split_unicode()
del test_split_unicode, _split
### END HIDDEN TESTS

# %% [markdown] id="c11"
# ## 3. Byte-pair encoding by hand
#
# BPE (Sennrich et al., 2016, after a 1994 compression algorithm by Gage) builds the vocabulary bottom up:
#
# 1. Start with every word spelled in base tokens (for us: its UTF-8 bytes, ids 0–255).
# 2. **Count** every adjacent pair of tokens. A word $w$ that occurs $c(w)$ times contributes $c(w)$ for
#    each position where the pair occurs in it:
#    $$N(a, b) = \sum_{w} c(w)\,\bigl|\{\, i : w_i = a,\ w_{i+1} = b \,\}\bigr|.$$
# 3. **Merge** the most frequent pair $(a^*, b^*)$: give it the next free id ($256 + k$ for merge $k$)
#    and replace every occurrence of $a^*$ followed by $b^*$ in every word.
# 4. Repeat until you have the number of merges you asked for.
#
# The merges, in order, *are* the tokenizer. The vocabulary is the 256 bytes plus one token per merge.
#
# **Ties.** Step 3 is ambiguous when several pairs share the highest count, which happens all the time
# on small corpora. A tokenizer must be deterministic, so we fix a rule: *highest count first; among
# equal counts, the smallest pair $(a, b)$, comparing $a$ first and, when the $a$'s are equal, $b$*
# (Python's tuple order). Any fixed rule gives a valid BPE; different libraries use different ones, and
# we will see that it changes the merge order.
#
# Our worked example is a tiny corpus often used to introduce BPE, each word once:
# *hug, hugs, hugged, hugging, smiled, smiling, waved, waving*.
#
# ### Exercise 2: count adjacent pairs
#
# *Points: 1 visible, 2 hidden (random corpora against an independent count, the input left unchanged), 1 hidden (edge cases: worked values, ids above 255, the empty corpus, exact large counts).*
#
# Represent the corpus as a dict from each word (a tuple of token ids) to its count, for example
# `{(32, 104, 117, 103): 1, ...}` for `" hug"`. Return the pair counts $N(a, b)$ as a dict of Python ints.
#
# **Predict before you run.** In the corpus `{(5, 5, 5): 2, (5, 6): 1}`, what is $N(5, 5)$?
#
# <details><summary>Answer</summary>
#
# 4: the pair occurs at positions 0 and 1 of `(5, 5, 5)` (occurrences may overlap when counting), and that
# word occurs twice. $N(5, 6) = 1$.
# </details>

# %% id="count_pairs" nbgrader={"grade": false, "grade_id": "count_pairs", "locked": false, "schema_version": 3, "solution": true, "task": false}
def count_pairs(words):
    """Count adjacent token pairs in a corpus of words.

    words: dict mapping each word, a tuple of token ids such as (32, 104, 117, 103) for " hug",
        to the number of times it occurs (a positive int). Not modified.
    Returns a new dict mapping each adjacent pair (a, b) to N(a, b), a Python int: every position where
    token a is directly followed by token b inside a word adds that word's count. Overlapping
    occurrences count separately ((5, 5, 5) holds the pair (5, 5) twice); no pair spans two words;
    pairs that do not occur are absent (no zero entries). An empty corpus gives {}.
    """
    ### BEGIN SOLUTION
    counts = {}
    for word, count in words.items():
        for pair in zip(word, word[1:]):
            counts[pair] = counts.get(pair, 0) + count
    return counts
    ### END SOLUTION


# %% id="test_count_pairs" nbgrader={"grade": true, "grade_id": "test_count_pairs", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
from utils import checks
from utils import probes


def _pair_counts(words):
    got = count_pairs(words)
    checks.assert_true(isinstance(got, dict), name="count_pairs", problem=f"expected a dict, got {type(got).__name__}.")
    return dict(got)


checks.assert_equal(_pair_counts({(1, 2, 3): 1}), {(1, 2): 1, (2, 3): 1}, name="count_pairs({(1, 2, 3): 1})",
                    hint="counts are Python ints (1, not 1.0).")
checks.assert_equal(
    _pair_counts({(1, 2, 3): 2, (2, 3): 1}), {(1, 2): 2, (2, 3): 3}, name="count_pairs({(1, 2, 3): 2, (2, 3): 1})",
    hint="each occurrence adds the word's count: (2, 3) occurs in a word seen twice and in a word seen once.")
checks.assert_equal(
    _pair_counts({(5, 5, 5): 2, (5, 6): 1}), {(5, 5): 4, (5, 6): 1}, name="count_pairs({(5, 5, 5): 2, (5, 6): 1})",
    hint="(5, 5) occurs at positions 0 and 1; every position counts, even when occurrences overlap.")
checks.assert_equal(
    _pair_counts({(1, 2): 1, (3, 4): 1}), {(1, 2): 1, (3, 4): 1}, name="count_pairs({(1, 2): 1, (3, 4): 1})",
    hint="pairs never span two words: there is no (2, 3) here.")
checks.assert_equal(_pair_counts({(7,): 4}), {}, name="count_pairs({(7,): 4})", hint="a one-token word has no pairs.")
traced = probes.traced_call(count_pairs, {(12, 3, 12): 3})
checks.assert_equal(traced.args_after[0], {(12, 3, 12): 3}, name="count_pairs input afterwards",
                    hint="do not modify the words dict.")
print("count_pairs: visible tests passed")

# %% id="test_count_pairs_hidden" nbgrader={"grade": true, "grade_id": "test_count_pairs_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for count_pairs run when your notebook is graded.
### BEGIN HIDDEN TESTS
import collections
import random

from utils import checks
from utils import probes


def _counts(words):
    traced = probes.traced_call(count_pairs, words)
    got = traced.result
    checks.assert_true(isinstance(got, dict), name="count_pairs", problem=f"expected a dict, got {type(got).__name__}.")
    checks.assert_equal(traced.args_after[0], words, name="count_pairs input afterwards", hint="do not modify the words dict.")
    checks.assert_true(not traced.returns_argument, name="count_pairs", problem="returned the input dict itself.")
    return dict(got)


# Random corpora against an independent count.
rng = random.Random(2024)
for trial in range(20):
    words = {}
    for _ in range(rng.randint(1, 30)):
        word = tuple(rng.choice([1, 2, 3, 260]) for _ in range(rng.randint(1, 9)))
        words[word] = rng.randint(1, 50)
    expected = collections.Counter()
    for word, count in words.items():
        for i in range(len(word) - 1):
            expected[word[i], word[i + 1]] += count
    checks.assert_equal(_counts(words), dict(expected), name=f"count_pairs on random corpus #{trial}")
### END HIDDEN TESTS

# %% id="9d6f4f7b" nbgrader={"grade": true, "grade_id": "test_count_pairs_hidden_edges", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for count_pairs (edge cases: worked values, ids above 255, the empty corpus, exact large counts) run when your notebook is graded.
### BEGIN HIDDEN TESTS
import collections
import random

from utils import checks
from utils import probes


def _counts(words):
    traced = probes.traced_call(count_pairs, words)
    got = traced.result
    checks.assert_true(isinstance(got, dict), name="count_pairs", problem=f"expected a dict, got {type(got).__name__}.")
    checks.assert_equal(traced.args_after[0], words, name="count_pairs input afterwards", hint="do not modify the words dict.")
    checks.assert_true(not traced.returns_argument, name="count_pairs", problem="returned the input dict itself.")
    return dict(got)


checks.assert_equal(
    _counts({(10, 20, 10, 20): 3, (20, 10): 2, (30,): 7}), {(10, 20): 6, (20, 10): 5},
    name="count_pairs({(10, 20, 10, 20): 3, (20, 10): 2, (30,): 7})",
    hint="(10, 20) twice in a word seen 3 times; (20, 10) once there and once in a word seen twice.")
checks.assert_equal(_counts({(300, 300, 300, 300): 2, (300, 999): 5}), {(300, 300): 6, (300, 999): 5},
                    name="count_pairs with ids above 255", hint="ids of merged tokens are just larger ints.")
checks.assert_equal(_counts({}), {}, name="count_pairs({})")
checks.assert_equal(_counts({(4, 4): 1000000}), {(4, 4): 1000000}, name="count_pairs({(4, 4): 1000000})",
                    hint="counts are exact Python ints.")
# Beyond 2**53 a float (or a float64 array) no longer holds every integer: only Python ints stay exact.
checks.assert_equal(_counts({(4, 4, 4): 2**60 + 1, (5, 4): 3}), {(4, 4): 2**61 + 2, (5, 4): 3},
                    name="count_pairs({(4, 4, 4): 2**60 + 1, (5, 4): 3})",
                    hint="add the counts as Python ints; float(2**60 + 1) is 2**60.")
### END HIDDEN TESTS

# %% [markdown] id="c15"
# Now the classic corpus in its classic notation first: letters, with `</w>` marking the end of each
# word. `count_pairs` works with any hashable tokens, so strings are fine here.

# %% id="c16"
seed_words = ["hug", "hugs", "hugged", "hugging", "smiled", "smiling", "waved", "waving"]
classic_corpus = {tuple(word) + ("</w>",): 1 for word in seed_words}
classic_counts = count_pairs(classic_corpus)
top = sorted(classic_counts.items(), key=lambda item: (-item[1], item[0]))[:9]
show_table(["pair", "count"], [[" + ".join(pair), count] for pair, count in top])

# %% [markdown] id="c17"
# It is easy to read this corpus and see `h u` and `u g` (4 each) as the two top pairs; some
# presentations of this example say exactly that. But **`g </w>` also occurs 4 times** (in *hug,
# hugging, smiling, waving*): there is a three-way tie for the first merge. Our byte-level corpus, with
# the space in front of each word, has the same kind of tie:

# %% id="c18"
toy_text = " hug hugs hugged hugging smiled smiling waved waving"
toy_words = collections.Counter(tuple(w.encode("utf-8")) for w in split_words(toy_text))
toy_counts = count_pairs(toy_words)
ranked = sorted(toy_counts.items(), key=lambda item: (-item[1], item[0]))

fig, ax = plt.subplots(figsize=(8, 2.8))
labels = [show_token(bytes(pair[:1])) + " + " + show_token(bytes(pair[1:])) for pair, _ in ranked[:14]]
ax.bar(range(len(labels)), [count for _, count in ranked[:14]], color=["C3"] * 3 + ["C0"] * 11)
ax.set_xticks(range(len(labels)), labels=labels, rotation=45, ha="right")
ax.set_ylabel("count N(a, b)")
ax.set_title("Pair counts in the toy corpus: a three-way tie at the top (red)")
plt.tight_layout()
plt.show()
show_table(["pair (ids)", "pair (text)", "count"], [[pair, " + ".join(show_token(bytes([t])) for t in pair), n] for pair, n in ranked[:6]])


# %% [markdown] id="c19"
# Three pairs occur 4 times: `␣+h` = (32, 104), `h+u` = (104, 117) and `u+g` = (117, 103). Our rule
# takes the smallest pair, (32, 104). The next exercise performs the merge itself.
#
# ### Exercise 3: apply one merge
#
# *Points: 1 visible, 2 hidden (random lists against a left-to-right, non-overlapping replacement; a new list, the input unchanged), 1 hidden (edge cases: empty and one-token lists, overlapping pairs, ids above 255 and with several digits, an absent pair).*
#
# Replace every occurrence of `pair` in a token list by `new_id`, scanning **left to right**, so
# `[5, 5, 5]` with the pair `(5, 5)` becomes `[9, 5]` (the first two fives merge, the third is left).
# This is the convention of GPT-2 and of the HF `tokenizers` library. Work on the list of ids itself:
# ids above 9 have several digits, and a trick on their text form (joining the ids into a string and
# replacing a substring) confuses `12, 3` with `2, 3`.
#
# **Predict before you run.** What is `merge([5, 5, 5, 5, 5], (5, 5), 9)`?
#
# <details><summary>Answer</summary>
#
# `[9, 9, 5]`: positions 0–1 merge, the scan continues at position 2, positions 2–3 merge, and the last
# 5 has no partner.
# </details>

# %% id="merge" nbgrader={"grade": false, "grade_id": "merge", "locked": false, "schema_version": 3, "solution": true, "task": false}
def merge(ids, pair, new_id):
    """Replace each occurrence of `pair` in `ids` by `new_id`, scanning left to right.

    ids: list of int token ids (any non-negative ints, several digits included). pair: tuple (a, b) of
    ints. new_id: int.
    Returns a new list, also when nothing changes; `ids` itself is not modified. Occurrences are taken
    greedily from the left and do not overlap: merge([5, 5, 5], (5, 5), 9) == [9, 5].
    """
    ### BEGIN SOLUTION
    a, b = pair
    out, i, n = [], 0, len(ids)
    while i < n:
        if ids[i] == a and i + 1 < n and ids[i + 1] == b:
            out.append(new_id)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out
    ### END SOLUTION


# %% id="test_merge" nbgrader={"grade": true, "grade_id": "test_merge", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
from utils import checks
from utils import probes


def _merged(ids, pair, new_id):
    got = merge(list(ids), pair, new_id)
    checks.assert_true(isinstance(got, list), name="merge", problem=f"expected a list, got {type(got).__name__}.")
    return list(got)


checks.assert_equal(_merged([1, 2, 3, 1, 2], (1, 2), 99), [99, 3, 99], name="merge([1, 2, 3, 1, 2], (1, 2), 99)")
checks.assert_equal(_merged([1, 2, 3], (1, 2), 9), [9, 3], name="merge([1, 2, 3], (1, 2), 9)",
                    hint="keep the tokens after the last occurrence.")
checks.assert_equal(_merged([3, 1, 2], (1, 2), 9), [3, 9], name="merge([3, 1, 2], (1, 2), 9)",
                    hint="a pair at the very end of the list must merge too.")
checks.assert_equal(_merged([5, 5, 5], (5, 5), 9), [9, 5], name="merge([5, 5, 5], (5, 5), 9)",
                    hint="scan left to right; after a merge, continue after the pair (no overlap).")
checks.assert_equal(_merged([1, 2], (2, 1), 9), [1, 2], name="merge([1, 2], (2, 1), 9)",
                    hint="(2, 1) does not occur: order inside a pair matters.")
checks.assert_equal(_merged([12, 3], (2, 3), 9), [12, 3], name="merge([12, 3], (2, 3), 9)",
                    hint="12 is one token, not the digits 1 and 2: compare ids, not their text.")
checks.assert_equal(_merged([4, 12, 34], (2, 3), 9), [4, 12, 34], name="merge([4, 12, 34], (2, 3), 9)",
                    hint="compare ids, not their text.")
traced = probes.traced_call(merge, [4, 4, 7], (4, 4), 8)
checks.assert_equal(traced.args_after[0], [4, 4, 7], name="merge input afterwards", hint="return a new list; do not modify `ids`.")
traced = probes.traced_call(merge, [4, 7], (7, 4), 8)
checks.assert_true(not traced.returns_argument, name="merge([4, 7], (7, 4), 8)",
                   problem="returned the caller's own list; the contract says a new list, also when nothing changes.",
                   hint="a caller that later modifies the result would modify its input too.")
print("merge: visible tests passed")

# %% id="test_merge_hidden" nbgrader={"grade": true, "grade_id": "test_merge_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for merge run when your notebook is graded.
### BEGIN HIDDEN TESTS
import random

from utils import checks
from utils import probes


def _merged(ids, pair, new_id):
    traced = probes.traced_call(merge, ids, pair, new_id)
    checks.assert_equal(traced.args_after[0], ids, name="merge input afterwards", hint="return a new list; do not modify `ids`.")
    checks.assert_true(not traced.returns_argument, name=f"merge({ids}, {pair}, {new_id})",
                       problem="returned the caller's own list instead of a new one.")
    got = traced.result
    checks.assert_true(isinstance(got, list), name="merge", problem=f"expected a list, got {type(got).__name__}.")
    return list(got)


# Random lists against Python's own left-to-right, non-overlapping replacement (bytes.replace).
rng = random.Random(7)
for trial in range(100):
    ids = [rng.choice([1, 2, 3, 12, 23]) for _ in range(rng.randint(0, 25))]
    pair = (rng.choice([1, 2, 3, 12, 23]), rng.choice([1, 2, 3, 12, 23]))
    expected = list(bytes(ids).replace(bytes(pair), bytes([200])))
    checks.assert_equal(_merged(ids, pair, 200), expected, name=f"merge({ids}, {pair}, 200)")
### END HIDDEN TESTS

# %% id="66aa93ff" nbgrader={"grade": true, "grade_id": "test_merge_hidden_edges", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for merge (edge cases: empty and one-token lists, overlapping pairs, ids above 255 and with several digits, an absent pair) run when your notebook is graded.
### BEGIN HIDDEN TESTS
import random

from utils import checks
from utils import probes


def _merged(ids, pair, new_id):
    traced = probes.traced_call(merge, ids, pair, new_id)
    checks.assert_equal(traced.args_after[0], ids, name="merge input afterwards", hint="return a new list; do not modify `ids`.")
    checks.assert_true(not traced.returns_argument, name=f"merge({ids}, {pair}, {new_id})",
                       problem="returned the caller's own list instead of a new one.")
    got = traced.result
    checks.assert_true(isinstance(got, list), name="merge", problem=f"expected a list, got {type(got).__name__}.")
    return list(got)


checks.assert_equal(_merged([], (1, 2), 9), [], name="merge([], (1, 2), 9)")
checks.assert_equal(_merged([7], (7, 7), 9), [7], name="merge([7], (7, 7), 9)")
checks.assert_equal(_merged([5, 5, 5, 5], (5, 5), 9), [9, 9], name="merge([5, 5, 5, 5], (5, 5), 9)")
checks.assert_equal(_merged([5, 5, 5, 5, 5], (5, 5), 9), [9, 9, 5], name="merge([5, 5, 5, 5, 5], (5, 5), 9)",
                    hint="left to right: merge positions 0-1 and 2-3, keep the last 5.")
checks.assert_equal(_merged([1, 1, 2], (1, 2), 9), [1, 9], name="merge([1, 1, 2], (1, 2), 9)")
checks.assert_equal(_merged([300, 256, 300, 256, 300], (300, 256), 1000), [1000, 1000, 300],
                    name="merge with ids above 255")
checks.assert_equal(_merged([11, 1, 1, 11], (1, 1), 7), [11, 7, 11], name="merge([11, 1, 1, 11], (1, 1), 7)",
                    hint="compare ids, not digits.")
checks.assert_equal(_merged([21, 32, 1], (1, 3), 5), [21, 32, 1], name="merge([21, 32, 1], (1, 3), 5)",
                    hint="compare ids, not digits.")
checks.assert_equal(_merged([3, 4], (9, 9), 10), [3, 4], name="merge([3, 4], (9, 9), 10)")
# new_id may be any int, also one of the pair's own ids: the scan reads `ids`, never the list it builds.
checks.assert_equal(_merged([1, 2, 2], (1, 2), 1), [1, 2], name="merge([1, 2, 2], (1, 2), 1)",
                    hint="only pairs of the input merge: after (1, 2) -> 1 the scan goes on at the second 2; comparing "
                         "the last token written with the next one would merge the new 1 with that 2 as well.")
### END HIDDEN TESTS

# %% [markdown] id="c23"
# One BPE step on the toy corpus, by hand: pick the top pair with our tie rule, give it id 256, merge it
# in every word.

# %% id="c24"
top_count = max(toy_counts.values())
best = min(pair for pair, n in toy_counts.items() if n == top_count)   # highest count, then smallest pair
print("merge 0:", best, "->", 256, f"(count {toy_counts[best]})")
after = {tuple(merge(list(word), best, 256)): n for word, n in toy_words.items()}
for word in list(after)[:4]:
    print(" ", word)

# %% [markdown] id="c25"
# ## 4. Making BPE fast: update the counts, don't recount them
#
# The straightforward trainer recounts every pair after every merge. One recount costs time
# proportional to the total length of all distinct words, $\sum_w |w|$, so $M$ merges cost
# $O(M \cdot \sum_w |w|)$. But a merge changes only the words that contain the merged pair, and after
# the first few merges those are a tiny fraction of the corpus.
#
# The **incremental** update keeps the counts between merges. When a word $w$ with count $c(w)$ changes
# from $w$ to $w'$, every pair count changes by
# $$\Delta N(a, b) = c(w)\,\bigl(\#_{w'}(a, b) - \#_w(a, b)\bigr),$$
# where $\#_w(a, b)$ is the number of positions of $(a, b)$ in $w$. Words that do not contain the merged
# pair have $w' = w$ and contribute nothing, so they need not be visited at all, *if* you can find the
# words that contain a pair without scanning the corpus. That needs an **index**: for each pair, the
# set of words in which it (may) occur, kept up to date as new pairs appear.
#
# A worked example. Corpus `{(1, 2, 3): 2, (2, 3): 1}`, counts $N(1,2) = 2$, $N(2,3) = 3$. Merge
# $(2, 3) \to 9$: the first word becomes $(1, 9)$, so $N(1,2)$ and $N(2,3)$ each lose 2 and $N(1,9)$ gains
# 2; the second word becomes $(9)$, so $N(2,3)$ loses 1. Result: $N(1, 9) = 2$ and nothing else. Note that
# the *neighbours* of the merged pair changed too: $(1, 2)$ is gone.
#
# **Predict before you run.** In `{(1, 2, 1, 2): 1}` ($N(1,2) = 2$, $N(2,1) = 1$) you merge $(1, 2) \to 7$.
# Which counts change, and to what?
#
# <details><summary>Answer</summary>
#
# The word becomes $(7, 7)$: $N(1,2)$ goes to 0 and $N(2,1)$ to 0 (both disappear), and the new pair
# $(7, 7)$ gets count 1. Subtracting all the old word's pairs and adding all the new word's pairs, both
# times the word's count, gets this right without thinking about special cases.
# </details>
#
# ### Exercise 4: a pair counter that updates itself
#
# *Points: 1 visible, 3 hidden (counts and words after every merge), 1 hidden (speed: the cost of a merge
# follows the words that contain the pair), 1 hidden (edge cases: return values, inputs left unchanged,
# absent pairs, one-token words).*
#
# Write the class `PairCounter`: `__init__` counts once and builds the index; `merge(pair, new_id)`
# updates the words that contain `pair`, and only those. `replay` and `words` are given.

# %% id="PairCounter" nbgrader={"grade": false, "grade_id": "PairCounter", "locked": false, "schema_version": 3, "solution": true, "task": false}
import collections


class PairCounter:
    """The BPE training corpus and its pair counts, kept up to date merge after merge.

    PairCounter(words): words is a dict mapping each distinct word (a tuple of ids) to its count, as for
    count_pairs; it is not modified. Keep the current tokens of the distinct words in self.tokens (a list
    with one list of ids per word) and their counts in self.freqs (same order): the given methods `words`
    and `replay` rely on them. Afterwards:
      self.counts: a dict pair -> int equal to count_pairs of the current corpus (no zero entries).
    merge(pair, new_id): merge `pair` (a tuple of two ids) into `new_id` (left to right, as `merge`
      does) in every word that contains it and update self.counts to the counts of the new corpus;
      returns None. A pair that occurs nowhere changes nothing. Its cost must be proportional to the
      words that contain `pair`, not to the size of the corpus: not even a scan of every word is
      allowed. The tests replay 600 merges of rare pairs on a corpus of 48,000 distinct words within
      0.25 CPU seconds, where looking at every word at every merge takes over three.
    words(): the current corpus as a new dict mapping each word's current tokens (a tuple) to its count.
    """

    def __init__(self, words):
        ### BEGIN SOLUTION
        self.tokens = [list(word) for word in words]        # current segmentation of each distinct word
        self.freqs = list(words.values())
        self.counts = count_pairs(words)
        self.where = collections.defaultdict(set)           # pair -> indices of words that may contain it
        for i, word in enumerate(self.tokens):
            for pair in zip(word, word[1:]):
                self.where[pair].add(i)
        ### END SOLUTION

    def merge(self, pair, new_id):
        ### BEGIN SOLUTION
        pair = tuple(pair)
        counts, where = self.counts, self.where
        for i in where.pop(pair, ()):
            old = self.tokens[i]
            if pair[0] not in old:                           # the index said "may contain": it does not
                continue
            new = merge(old, pair, new_id)
            if len(new) == len(old):                         # ... nor here
                continue
            # Delta N(a, b) = c(w) (#_w'(a, b) - #_w(a, b)): only the pairs around the merged positions change.
            before, after = collections.Counter(zip(old, old[1:])), collections.Counter(zip(new, new[1:]))
            freq = self.freqs[i]
            for p in before.keys() | after.keys():
                change = after[p] - before[p]
                if change:
                    n = counts.get(p, 0) + change * freq
                    if n:
                        counts[p] = n
                    else:
                        del counts[p]                        # no zero entries
            for p in after.keys() - before.keys():           # pairs new to this word (they hold new_id)
                where[p].add(i)
            self.tokens[i] = new
        ### END SOLUTION

    def words(self):
        return {tuple(tokens): freq for tokens, freq in zip(self.tokens, self.freqs)}

    def replay(self, merges, first_id=256):
        """Given: apply merges[k] with the new id first_id + k, in order."""
        for k, pair in enumerate(merges):
            self.merge(tuple(pair), first_id + k)


# %% id="test_PairCounter" nbgrader={"grade": true, "grade_id": "test_PairCounter", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
import random

from utils import checks
from utils import probes

pc = PairCounter({(1, 2, 3): 2, (2, 3): 1})
checks.assert_equal(dict(pc.counts), {(1, 2): 2, (2, 3): 3}, name="PairCounter({(1, 2, 3): 2, (2, 3): 1}).counts")
pc.merge((2, 3), 9)
checks.assert_equal(dict(pc.counts), {(1, 9): 2}, name="counts after merge((2, 3), 9)",
                    hint="subtract ALL pairs of the old word (its neighbours (1, 2) too) and add all pairs of the new one, "
                         "times the word's count; drop pairs whose count reaches 0.")
checks.assert_equal(pc.words(), {(1, 9): 2, (9,): 1}, name="words() after merge((2, 3), 9)")

pc = PairCounter({(1, 2, 1, 2): 1, (5, 1): 3})
pc.merge((1, 2), 7)
checks.assert_equal(dict(pc.counts), {(7, 7): 1, (5, 1): 3}, name="PairCounter({(1, 2, 1, 2): 1, (5, 1): 3}) after merge((1, 2), 7)")
pc.merge((7, 7), 8)
checks.assert_equal(dict(pc.counts), {(5, 1): 3}, name="... then merge((7, 7), 8)",
                    hint="a pair created by a merge must be found by later merges: keep the index up to date.")
checks.assert_equal(pc.words(), {(8,): 1, (5, 1): 3}, name="words() after both merges")

pc = PairCounter({(4, 4, 4): 5})
pc.merge((4, 4), 6)
checks.assert_equal(dict(pc.counts), {(6, 4): 5}, name="PairCounter({(4, 4, 4): 5}) after merge((4, 4), 6)")
pc.merge((3, 3), 10)
checks.assert_equal(dict(pc.counts), {(6, 4): 5}, name="merge of a pair that does not occur", hint="nothing changes.")

traced = probes.traced_call(PairCounter, {(1, 2): 1})
checks.assert_equal(traced.args_after[0], {(1, 2): 1}, name="PairCounter input afterwards", hint="do not modify the words dict.")

# Speed: 40 merges of rare pairs in a corpus of 20,000 distinct words (about 200,000 tokens).
rng = random.Random(5)
words = {}
while len(words) < 20_000:
    words[tuple(rng.choices(range(60), k=rng.randint(4, 16)))] = rng.randint(1, 20)
rare = [(100 + i % 8, 100 + (3 * i) % 8, 100 + (5 * i + 1) % 8) for i in range(40)]
for i, word in enumerate(rare):
    words[word] = words.get(word, 0) + 1
merges = [(word[0], word[1]) for word in rare]
pc = PairCounter(words)
with probes.time_limit(0.5, "PairCounter.replay: 40 merges of rare pairs on 20,000 distinct words"):
    pc.replay(merges, first_id=1000)
expected = {}
for word, n in words.items():
    if word[0] >= 100:
        for k, pair in enumerate(merges):
            out, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and (word[i], word[i + 1]) == pair:
                    out.append(1000 + k)
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            word = tuple(out)
    for pair in zip(word, word[1:]):
        expected[pair] = expected.get(pair, 0) + n
checks.assert_equal(dict(pc.counts), expected, name="counts after 40 merges on the large corpus")
print("PairCounter: visible tests passed")

# %% id="test_PairCounter_hidden" nbgrader={"grade": true, "grade_id": "test_PairCounter_hidden", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for PairCounter run when your notebook is graded.
### BEGIN HIDDEN TESTS
import collections
import random

from utils import checks
from utils import probes


def _merge(word, pair, new_id):
    out, i = [], 0
    while i < len(word):
        if i + 1 < len(word) and (word[i], word[i + 1]) == pair:
            out.append(new_id)
            i += 2
        else:
            out.append(word[i])
            i += 1
    return tuple(out)


def _count(words):
    counts = collections.Counter()
    for word, n in words.items():
        for pair in zip(word, word[1:]):
            counts[pair] += n
    return dict(counts)


# 1. Random small corpora: after every merge, counts and words match an independent recount.
rng = random.Random(99)
for trial in range(8):
    words = {}
    for _ in range(rng.randint(1, 25)):
        words[tuple(rng.choice([1, 2, 3, 4]) for _ in range(rng.randint(1, 10)))] = rng.randint(1, 9)
    pc = PairCounter(words)
    checks.assert_equal(dict(pc.counts), _count(words), name=f"PairCounter(random corpus #{trial}).counts")
    for k in range(6):
        counts = _count(words)
        if not counts:
            break
        pair = rng.choice(sorted(counts)) if k % 2 else max(sorted(counts), key=counts.get)
        pc.merge(pair, 50 + k)
        words = {_merge(w, pair, 50 + k): n for w, n in words.items()}
        checks.assert_equal(dict(pc.counts), _count(words), name=f"counts after merge #{k} {pair} on random corpus #{trial}",
                            hint="subtract every pair of each changed word and add every pair of its new form, times its count; "
                                 "no zero entries; pairs created by earlier merges must be found too.")
    checks.assert_equal(pc.words(), words, name=f"words() on random corpus #{trial}")
### END HIDDEN TESTS

# %% id="test_PairCounter_hidden_speed" nbgrader={"grade": true, "grade_id": "test_PairCounter_hidden_speed", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for PairCounter (speed) run when your notebook is graded.
### BEGIN HIDDEN TESTS
import collections
import random

from utils import checks
from utils import probes


def _merge(word, pair, new_id):
    out, i = [], 0
    while i < len(word):
        if i + 1 < len(word) and (word[i], word[i + 1]) == pair:
            out.append(new_id)
            i += 2
        else:
            out.append(word[i])
            i += 1
    return tuple(out)


def _count(words):
    counts = collections.Counter()
    for word, n in words.items():
        for pair in zip(word, word[1:]):
            counts[pair] += n
    return dict(counts)


# Speed: 600 merges of rare pairs (ten chains of 60 merges over ids 100..179, each as BPE would pick
# them) in a corpus of 48,000 distinct words (about half a million tokens: 600 x 48,000 word visits cost as
# much as 300 x 95,000 did, and building, sending and counting the corpus half as much, for each graded
# notebook). The words that contain a merged pair are at most a hundred: the course's replay
# takes about 0.02 s, looking at every word at every merge (even a fast `in` test) over 3 s, so the limit
# of 0.25 s is more than 10x from both. (The kernel collects its garbage before a timed call.)
rng = random.Random(2025)
common = {}
while len(common) < 48_000:
    common[tuple(rng.choices(range(60), k=rng.randint(4, 16)))] = rng.randint(1, 20)
rare, current, merges = {}, {}, []
for group in range(10):
    ids = range(100 + 8 * group, 108 + 8 * group)
    words = {}
    while len(words) < 100:
        words[tuple(rng.choice(ids) for _ in range(rng.randint(2, 9)))] = rng.randint(1, 5)
    rare.update(words)
    for k in range(60):
        counts = _count(words)
        top = max(counts.values())
        pair = min(p for p, n in counts.items() if n == top)
        merges.append(pair)
        words = {_merge(w, pair, 2000 + len(merges) - 1): n for w, n in words.items()}
    current.update(words)
checks.assert_true(len(merges) == 600, name="(internal check of the test)", problem="too few merges")
pc = PairCounter({**common, **rare})
with probes.time_limit(0.25, "PairCounter.replay: 600 merges of rare pairs on 48,000 distinct words"):
    pc.replay(merges, first_id=2000)
expected = _count(common)
for pair, n in _count(current).items():
    expected[pair] = expected.get(pair, 0) + n
checks.assert_equal(dict(pc.counts), expected, name="counts after 600 merges on the large corpus")
after = pc.words()
checks.assert_equal(len(after), len(common) + len(rare), name="len(words()) after 600 merges on the large corpus")
checks.assert_equal({w: n for w, n in after.items() if w[0] >= 100}, current, name="words() of the rare words after 600 merges")
### END HIDDEN TESTS

# %% id="test_PairCounter_hidden_edges" nbgrader={"grade": true, "grade_id": "test_PairCounter_hidden_edges", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for PairCounter (edge cases) run when your notebook is graded.
### BEGIN HIDDEN TESTS
from utils import checks
from utils import probes

words = {(7, 8, 7, 8): 2, (9,): 4, (8, 7): 1}
call = probes.traced_call(PairCounter, words)
checks.assert_equal(call.args_after[0], {(7, 8, 7, 8): 2, (9,): 4, (8, 7): 1}, name="the words dict after PairCounter(words)",
                    hint="do not modify the words dict you are given.")
pc = PairCounter(dict(words))
checks.assert_equal(dict(pc.counts), {(7, 8): 4, (8, 7): 3}, name="PairCounter({(7, 8, 7, 8): 2, (9,): 4, (8, 7): 1}).counts",
                    hint="a one-token word has no pairs; count each position, times the word's count.")


def _lists_of_ids(tokens):
    # "self.tokens (a list with one list of ids per word)": what came back, described when it is not that.
    if isinstance(tokens, list) and all(isinstance(t, list) for t in tokens):
        return None
    inner = sorted({type(t).__name__ for t in tokens}) if isinstance(tokens, (list, tuple)) else []
    return f"a {type(tokens).__name__}" + (f" of {', '.join(inner)}" if inner else "")


problem = _lists_of_ids(pc.tokens)
checks.assert_true(problem is None, name="PairCounter({(7, 8, 7, 8): 2, (9,): 4, (8, 7): 1}).tokens",
                   problem=f"expected a list with one list of ids per word, got {problem}.",
                   hint="self.tokens holds one list per distinct word (list(word), not the tuple itself), also for "
                        "words that no merge changes; the given methods and callers rely on it.")
result = pc.merge((7, 8), 20)
checks.assert_true(result is None, name="PairCounter.merge((7, 8), 20)", problem=f"returned {result!r}, expected None.",
                   hint="merge updates the counter in place and returns None.")
checks.assert_equal(dict(pc.counts), {(20, 20): 2, (8, 7): 1}, name="counts after merge((7, 8), 20)")
for absent in [(1, 2), (20, 7), (9, 9)]:
    result = pc.merge(absent, 30)
    checks.assert_true(result is None, name=f"PairCounter.merge({absent}, 30)", problem=f"returned {result!r}, expected None.")
    checks.assert_equal(dict(pc.counts), {(20, 20): 2, (8, 7): 1}, name=f"counts after merge({absent}, 30) of an absent pair",
                        hint="a pair that occurs nowhere changes nothing.")
got = pc.words()
checks.assert_equal(got, {(20, 20): 2, (9,): 4, (8, 7): 1}, name="words() after the merges")
problem = _lists_of_ids(pc.tokens)
checks.assert_true(problem is None, name="PairCounter.tokens after merges", problem=f"expected a list with one list of ids per word, got {problem}.",
                   hint="store each merged word as a list too (merge returns one).")
pc.merge((20, 20), 21)
checks.assert_equal(dict(pc.counts), {(8, 7): 1}, name="counts after merge((20, 20), 21)", hint="no zero entries.")
checks.assert_equal(got, {(20, 20): 2, (9,): 4, (8, 7): 1}, name="a dict returned by words() before a later merge",
                    hint="words() returns a new dict each time.")
pc = PairCounter({})
checks.assert_equal(dict(pc.counts), {}, name="PairCounter({}).counts")
pc.merge((1, 2), 3)
checks.assert_equal(pc.words(), {}, name="PairCounter({}).words() after a merge")
# "it is not modified": not by __init__, and not later by a merge through a reference kept to it. At grading
# time the dict travels by value, so only a probe that keeps the counter and its dict together can see it.
after = probes.arguments_after_calls(PairCounter, ({(7, 8, 7, 8): 2, (9,): 4, (8, 7): 1},),
                                     [("merge", ((7, 8), 20)), ("merge", ((20, 20), 21))])
checks.assert_equal(after[0], {(7, 8, 7, 8): 2, (9,): 4, (8, 7): 1},
                    name="the words dict given to PairCounter, after two merges",
                    hint="the counter must not change the dict it was given, not even later: keep your own copy.")
### END HIDDEN TESTS

# %% [markdown] id="c29"
# ### Exercise 5: train BPE
#
# *Points: 1 visible, 3 hidden (agreement with HF tokenizers, tie-breaking values, multi-byte characters, speed), 1 hidden (edge cases: overlapping pairs, early stop, zero merges, return types).*
#
# Put the pieces together. `train_bpe(text, num_merges)` splits the text into words with
# `split_words`, counts each distinct word, and then repeats *pick the top pair (tie rule) → merge*
# `num_merges` times. Merge $k$ creates id $256 + k$. It returns the merges in order and the
# vocabulary, a dict from every id to its bytes: `vocab[i] = bytes([i])` for the 256 byte tokens and
# `vocab[256 + k] = vocab[a] + vocab[b]` for merge $k = (a, b)$. If every word has become a single token
# before `num_merges` merges, stop early (there is nothing left to merge).
#
# Your `PairCounter` keeps the counts; picking the top pair is a scan over them. Mind the tie rule: the
# highest count first, then the smallest pair, and a pair is a *pair*: two pairs with the same first
# token are told apart by the second. (A recounting trainer built from `count_pairs` and `merge` is
# correct too and passes the tests; it is just slow.)

# %% id="train_bpe" nbgrader={"grade": false, "grade_id": "train_bpe", "locked": false, "schema_version": 3, "solution": true, "task": false}
import collections


def train_bpe(text, num_merges):
    """Learn up to `num_merges` byte-level BPE merges from `text`.

    The text is split with split_words; each distinct word becomes the tuple of its UTF-8 bytes
    (ids 0..255), counted as often as it occurs. Merge k (k = 0, 1, ...) replaces the most frequent
    adjacent pair, in every word, by the new id 256 + k.
    Ties: among pairs with the highest count, take the smallest pair (a, b): the smallest a, and among
    equal a's the smallest b. Stops early when no word has two tokens left.

    Returns (merges, vocab):
        merges: a list of (a, b) tuples of ints in the order learned; merges[k] created id 256 + k.
        vocab: a dict mapping every id 0 .. 255 + len(merges) to its bytes:
            vocab[i] == bytes([i]) for i < 256 and vocab[256 + k] == vocab[a] + vocab[b].
    """
    ### BEGIN SOLUTION
    import heapq

    word_counts = collections.Counter(split_words(text))       # encode each distinct word once, not every occurrence
    pairs = PairCounter({tuple(word.encode("utf-8")): n for word, n in word_counts.items()})
    merges, vocab = [], {i: bytes([i]) for i in range(256)}
    # Picking the top pair by scanning all counts costs O(distinct pairs) per merge, which dominates
    # thousands of merges. Instead: a heap of (-count, pair) (highest count first, then the smallest
    # pair), refreshed with the pairs whose counts the merge set; an entry whose count is out of date
    # is skipped when it comes to the top.
    pairs.counts = changed = _WatchedCounts(pairs.counts)
    heap = [(-n, p) for p, n in pairs.counts.items()]
    heapq.heapify(heap)
    while len(merges) < num_merges and heap:
        neg, pair = heapq.heappop(heap)
        if pairs.counts.get(pair, 0) != -neg:               # out of date: its current count was pushed when it was set
            continue
        new_id = 256 + len(merges)
        changed.touched.clear()
        pairs.merge(pair, new_id)
        merges.append(pair)
        vocab[new_id] = vocab[pair[0]] + vocab[pair[1]]
        for p in changed.touched:
            n = pairs.counts.get(p, 0)
            if n > 0:
                heapq.heappush(heap, (-n, p))
    return merges, vocab


class _WatchedCounts(dict):
    """A dict that remembers which keys were assigned since `touched` was last cleared."""

    def __init__(self, *args):
        super().__init__(*args)
        self.touched = set()

    def __setitem__(self, key, value):
        self.touched.add(key)
        dict.__setitem__(self, key, value)
    ### END SOLUTION


# %% id="test_train_bpe" nbgrader={"grade": true, "grade_id": "test_train_bpe", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
from utils import checks


def _trained(text, num_merges):
    result = train_bpe(text, num_merges)
    checks.assert_true(isinstance(result, tuple) and len(result) == 2, name="train_bpe",
                       problem=f"expected a tuple (merges, vocab), got {type(result).__name__}.")
    merges, vocab = result
    checks.assert_true(isinstance(merges, list) and isinstance(vocab, dict), name="train_bpe",
                       problem=f"expected merges as a list and vocab as a dict, got {type(merges).__name__} and {type(vocab).__name__}.")
    return [tuple(p) for p in merges], dict(vocab)


toy_merges, toy_vocab = _trained(" hug hugs hugged hugging smiled smiling waved waving", 6)
checks.assert_equal(
    toy_merges, [(32, 104), (117, 103), (256, 257), (101, 100), (105, 110), (260, 103)],
    name="train_bpe(toy corpus, 6) merges",
    hint="merge 0 is a three-way tie at count 4: (32, 104) is the smallest pair. After it, (256, 117) and "
         "(117, 103) tie at 4 and (117, 103) is smaller. max(counts, key=counts.get) does not apply the rule.")
checks.assert_equal(
    [toy_vocab.get(256 + k) for k in range(6)], [b" h", b"ug", b" hug", b"ed", b"in", b"ing"],
    name="train_bpe(toy corpus, 6) new vocabulary entries", hint="vocab[256 + k] = vocab[a] + vocab[b] for merges[k] = (a, b).")
checks.assert_equal(len(toy_vocab), 262, name="len(vocab) after 6 merges", hint="256 byte tokens + one per merge.")
checks.assert_equal([toy_vocab.get(i) for i in (0, 32, 104, 255)], [b"\x00", b" ", b"h", b"\xff"],
                    name="byte tokens in vocab", hint="vocab[i] == bytes([i]) for i < 256.")
# Ties on the second token: 'a'+'c' and 'a'+'b' both occur 3 times; (97, 98) is the smaller pair.
merges, _ = _trained("ac,ac,ac,ab,ab,ab", 1)
checks.assert_equal(merges, [(97, 98)], name="train_bpe('ac,ac,ac,ab,ab,ab', 1)",
                    hint="(97, 99) and (97, 98) tie at 3 and have the same first token: the second decides.")
merges, _ = _trained("aaaa", 10)
checks.assert_equal(merges, [(97, 97), (256, 256)], name="train_bpe('aaaa', 10)",
                    hint="after two merges 'aaaa' is one token: stop early instead of failing.")
print("train_bpe: visible tests passed")

# %% id="test_train_bpe_hidden" nbgrader={"grade": true, "grade_id": "test_train_bpe_hidden", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for train_bpe run when your notebook is graded.
### BEGIN HIDDEN TESTS
import json
import re

from tokenizers import Tokenizer, models, pre_tokenizers, trainers

from utils import checks
from utils import probes

# HF's ByteLevel pre-tokenizer shows each byte as a printable character (GPT-2's table); invert it.
_printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
_BYTE_OF = {chr(b): b for b in _printable}
_BYTE_OF.update({chr(256 + i): b for i, b in enumerate(b for b in range(256) if b not in _printable)})
class _WORDS:
    """GPT-2's pre-tokenizer (\\p{L}, \\p{N}, Unicode's White_Space), written here: re over an ASCII stand-in."""

    @staticmethod
    def _kind(ch):
        import unicodedata

        if ch.isascii():
            return "!" if "\x1c" <= ch <= "\x1f" else ch
        category = unicodedata.category(ch)
        return "a" if category[0] == "L" else "0" if category[0] == "N" else "\t" if ch.isspace() else "!"

    @staticmethod
    def findall(text):
        shadow = "".join(_WORDS._kind(ch) for ch in text)
        pattern = r"'(?:[sdmt]|ll|ve|re)| ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+(?!\S)|\s+"
        return [text[m.start():m.end()] for m in re.finditer(pattern, shadow, flags=re.ASCII)]



def _hf_merges(text, num_merges):
    """Merges (as byte-string pairs) learned by HF tokenizers from the same words: 256-byte alphabet,
    no special tokens, no minimum count, one word per input sequence so HF does not split further."""
    hf = Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    trainer = trainers.BpeTrainer(vocab_size=256 + num_merges, min_frequency=0, special_tokens=[],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    hf.train_from_iterator(_WORDS.findall(text), trainer=trainer)
    merges = json.loads(hf.to_str())["model"]["merges"]
    merges = [m.split(" ") if isinstance(m, str) else m for m in merges]
    return [tuple(bytes(_BYTE_OF[ch] for ch in part) for part in m) for m in merges]


def _trained(text, num_merges):
    result = train_bpe(text, num_merges)
    checks.assert_true(isinstance(result, tuple) and len(result) == 2, name="train_bpe",
                       problem=f"expected a tuple (merges, vocab), got {type(result).__name__}.")
    merges, vocab = result
    merges, vocab = [tuple(p) for p in merges], dict(vocab)
    checks.assert_equal(sorted(vocab), list(range(256 + len(merges))), name="vocab ids",
                        hint="vocab has one entry per byte and one per merge.")
    for k, (a, b) in enumerate(merges):
        checks.assert_equal(vocab[256 + k], vocab[a] + vocab[b], name=f"vocab[{256 + k}]",
                            hint="vocab[256 + k] = vocab[a] + vocab[b] for merges[k] = (a, b).")
    return merges, vocab


# 1. Agreement with HF tokenizers on a text whose first 31 merges have a unique most frequent pair
#    (no ties, checked when this test was written), so the result does not depend on tie-breaking.
#    Sentence i is repeated REPS[i] times to spread the pair counts apart.
PASSAGE = """The lighthouse stood on a narrow spit of rock at the mouth of the harbour. Every evening the keeper climbed the spiral stairs, trimmed the wick, polished the lens and wound the clockwork that turned the light. Ships that passed in the night counted the flashes: three short, one long, then darkness for ten seconds. Sailors who knew the coast could tell from the pattern alone which headland they were passing, and they steered their boats accordingly.

In the winter the storms came from the north. Waves broke against the tower and threw spray as high as the gallery, and the keeper listened to the wind howling through the railings while he wrote the weather into his logbook. He recorded the pressure, the temperature, the direction of the wind and the state of the sea, four times a day, in a careful hand. The logbooks were kept for many years, and they are still read today by people who study how the climate of the coast has changed.

The keeper's daughter learned the work by watching her father. She learned to read the barometer, to mend the nets, to row the small boat across to the village for bread and oil, and to light the lamp when her father was ill. When she was older she kept the light herself, and she kept it for forty years. Visitors who climbed the stairs with her remember the smell of the oil, the warmth of the lamp room and the view over the grey water, which stretched away to the horizon in every direction.

Today the light is automatic. A small computer switches it on at dusk and off at dawn, and a technician visits twice a year to check the batteries and clean the glass. The tower is painted white and red, as it always was, and the flashes still follow the old pattern: three short, one long, then darkness. Nobody lives on the rock any more, but the logbooks, the lens and the little boat are kept in the museum in the village, where children can read the entries and try to imagine the storms.
"""
SENTENCES = re.findall(r"[^.!?:]+[.!?:]\s*", PASSAGE)
REPS = [6, 2, 6, 6, 3, 8, 4, 1, 2, 4, 2, 6, 6, 4, 5, 7, 8, 2]
assert "".join(SENTENCES) == PASSAGE and len(SENTENCES) == len(REPS)
CORPUS = "".join(s * r for s, r in zip(SENTENCES, REPS))

merges, vocab = _trained(CORPUS, 31)
ours = [(vocab[a], vocab[b]) for a, b in merges]
theirs = _hf_merges(CORPUS, 31)
checks.assert_equal(len(theirs), 31, name="HF reference", hint="(internal check of the test)")
for k, (mine, ref) in enumerate(zip(ours, theirs)):
    checks.assert_equal(mine, ref, name=f"merge {k} on an unseen corpus vs HF tokenizers",
                        hint="this corpus has no ties in its first 31 merges; check the pair counts "
                             "(weighted by word counts, within words only) and the merge itself.")
checks.assert_equal(len(ours), 31, name="number of merges")

# 2. Values written here (tie-breaking matters): the classic low/lower/newest/widest corpus.
merges, vocab = _trained(" low" * 5 + " lower" * 2 + " newest" * 6 + " widest" * 3, 10)
checks.assert_equal(
    merges, [(101, 115), (256, 116), (32, 108), (111, 119), (258, 259), (32, 110), (101, 119), (261, 262), (263, 257), (32, 119)],
    name="train_bpe(low/lower/newest/widest, 10) merges",
    hint="ties go to the smallest pair: (101, 115) 'e'+'s' before (115, 116) 's'+'t' (both 9).")
checks.assert_equal([vocab[256 + k] for k in range(10)],
                    [b"es", b"est", b" l", b"ow", b" low", b" n", b"ew", b" new", b" newest", b" w"],
                    name="train_bpe(low/lower/newest/widest, 10) tokens")

# 3. Multi-byte characters: merges may join parts of a character.
merges, vocab = _trained("café naïve café résumé 東京 東京都 京都 🙂🙂 🙂! crème brûlée, 東京 café 🙂🙂🙂", 12)
checks.assert_equal(
    [vocab[256 + k] for k in range(len(merges))],
    [b"\x99\x82", b"\x9f\x99\x82", b"\xc3\xa9", b"\xf0\x9f\x99\x82", b"\xba\xac", b"\xe4\xba\xac", b" c",
     b" \xe6", b" \xf0\x9f\x99\x82", b"af", b"\x9d\xb1", b" \xe6\x9d\xb1"],
    name="train_bpe on a multilingual corpus", hint="words are UTF-8 bytes: 'é' is (195, 169), '🙂' is (240, 159, 153, 130).")

# 5. Ties decided by the second token (values written here).
merges, vocab = _trained("bd.bd.bd.bd.bc!bc!bc!bc!", 2)
checks.assert_equal(merges, [(98, 99), (98, 100)], name="train_bpe('bd.bd.bd.bd.bc!bc!bc!bc!', 2)",
                    hint="(98, 100) and (98, 99) tie at 4 with the same first token: the smaller second token wins.")
merges, vocab = _trained("qz/qz/qy/qy/", 2)
checks.assert_equal(merges, [(113, 121), (113, 122)], name="train_bpe('qz/qz/qy/qy/', 2)",
                    hint="(113, 122) and (113, 121) tie at 2: the smaller second token wins, then the other follows.")

# 6. Time limit, generous: a straightforward recounting solution takes well under a second here.
with probes.time_limit(20, "train_bpe on a 7.6 KB corpus with 200 merges"):
    train_bpe(CORPUS, 200)
del _trained, _hf_merges
### END HIDDEN TESTS

# %% id="19cfceeb" nbgrader={"grade": true, "grade_id": "test_train_bpe_hidden_edges", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for train_bpe (edge cases: overlapping pairs, early stop, zero merges, return types) run when your notebook is graded.
### BEGIN HIDDEN TESTS
import json
import re

from tokenizers import Tokenizer, models, pre_tokenizers, trainers

from utils import checks
from utils import probes

# HF's ByteLevel pre-tokenizer shows each byte as a printable character (GPT-2's table); invert it.
_printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
_BYTE_OF = {chr(b): b for b in _printable}
_BYTE_OF.update({chr(256 + i): b for i, b in enumerate(b for b in range(256) if b not in _printable)})
class _WORDS:
    """GPT-2's pre-tokenizer (\\p{L}, \\p{N}, Unicode's White_Space), written here: re over an ASCII stand-in."""

    @staticmethod
    def _kind(ch):
        import unicodedata

        if ch.isascii():
            return "!" if "\x1c" <= ch <= "\x1f" else ch
        category = unicodedata.category(ch)
        return "a" if category[0] == "L" else "0" if category[0] == "N" else "\t" if ch.isspace() else "!"

    @staticmethod
    def findall(text):
        shadow = "".join(_WORDS._kind(ch) for ch in text)
        pattern = r"'(?:[sdmt]|ll|ve|re)| ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+(?!\S)|\s+"
        return [text[m.start():m.end()] for m in re.finditer(pattern, shadow, flags=re.ASCII)]



def _hf_merges(text, num_merges):
    """Merges (as byte-string pairs) learned by HF tokenizers from the same words: 256-byte alphabet,
    no special tokens, no minimum count, one word per input sequence so HF does not split further."""
    hf = Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    trainer = trainers.BpeTrainer(vocab_size=256 + num_merges, min_frequency=0, special_tokens=[],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    hf.train_from_iterator(_WORDS.findall(text), trainer=trainer)
    merges = json.loads(hf.to_str())["model"]["merges"]
    merges = [m.split(" ") if isinstance(m, str) else m for m in merges]
    return [tuple(bytes(_BYTE_OF[ch] for ch in part) for part in m) for m in merges]


def _trained(text, num_merges):
    result = train_bpe(text, num_merges)
    checks.assert_true(isinstance(result, tuple) and len(result) == 2, name="train_bpe",
                       problem=f"expected a tuple (merges, vocab), got {type(result).__name__}.")
    merges, vocab = result
    merges, vocab = [tuple(p) for p in merges], dict(vocab)
    checks.assert_equal(sorted(vocab), list(range(256 + len(merges))), name="vocab ids",
                        hint="vocab has one entry per byte and one per merge.")
    for k, (a, b) in enumerate(merges):
        checks.assert_equal(vocab[256 + k], vocab[a] + vocab[b], name=f"vocab[{256 + k}]",
                            hint="vocab[256 + k] = vocab[a] + vocab[b] for merges[k] = (a, b).")
    return merges, vocab


# 4. Edge cases: overlapping pairs, early stop, zero merges.
merges, vocab = _trained("aaaa", 10)
checks.assert_equal(merges, [(97, 97), (256, 256)], name="train_bpe('aaaa', 10)",
                    hint="after two merges 'aaaa' is one token: stop early instead of failing.")
merges, vocab = _trained("hello world", 0)
checks.assert_equal((merges, len(vocab)), ([], 256), name="train_bpe('hello world', 0)")
# Early stop where the last pairs vanish: after (a, b) and (" ", ab) in "ab ab ab" (three merges in "xy xy z"), no
# word of "ab ab ab" has two tokens, and no pair is left to merge, not even one whose count has fallen to 0.
for sample, expected in [("ab ab ab", [(97, 98), (32, 256)]), ("xy xy z", [(120, 121), (32, 122), (32, 256)])]:
    merges, vocab = _trained(sample, 10)
    checks.assert_equal((merges, len(vocab)), (expected, 256 + len(expected)), name=f"train_bpe({sample!r}, 10)",
                        hint="Stop when no pair occurs any more: a pair whose count fell to 0 (or a stale heap entry) is "
                             "not a candidate; delete zero counts, or skip them.")

# Return types as stated: a list of (a, b) tuples of Python ints (hashable: encode and the demos look pairs
# up in dicts), and a dict of int ids to bytes.
merges, vocab = train_bpe("abab cdcd abab", 3)
checks.assert_true(type(merges) is list and len(merges) == 3
                   and all(type(p) is tuple and len(p) == 2 and all(type(t) is int for t in p) for p in merges),
                   name="the merges of train_bpe('abab cdcd abab', 3)",
                   problem=f"expected a list of 3 tuples (a, b) of Python ints, got {merges!r}.",
                   hint="Append each merged pair as a tuple of ints, merges.append((a, b)); not a list or a NumPy pair.")
checks.assert_true(type(vocab) is dict and all(type(i) is int and type(v) is bytes for i, v in vocab.items()),
                   name="the vocab of train_bpe('abab cdcd abab', 3)",
                   problem=f"expected a dict of int ids to bytes, got {sorted(set((type(i).__name__, type(v).__name__) for i, v in vocab.items()))}.",
                   hint="vocab[i] = bytes([i]) for the bytes and vocab[a] + vocab[b] (bytes, not bytearray) for a merge.")
### END HIDDEN TESTS

# %% [markdown] id="c33"
# Here is what the rule gives on the toy corpus: each merge with its count at the moment it was chosen,
# and the words afterwards.

# %% id="c34"
toy_merges, toy_vocab = train_bpe(toy_text, 6)
words = dict(toy_words)
rows = []
for k, pair in enumerate(toy_merges):
    counts = count_pairs(words)
    tied = sum(n == counts[pair] for n in counts.values())
    rows.append([k, pair, " + ".join(show_token(toy_vocab[t]) for t in pair), 256 + k,
                 show_token(toy_vocab[256 + k]), counts[pair], tied])
    words = {tuple(merge(list(w), pair, 256 + k)): n for w, n in words.items()}
show_table(["merge", "pair", "as text", "new id", "new token", "count", "pairs with that count"], rows)
print("words after 6 merges:")
for word in words:
    print("  ", " ".join(show_token(toy_vocab[t]) for t in word))

# %% [markdown] id="c35"
# `hug`, `ing` and `ed` are now reusable pieces: *hugging* is `␣hug g ing`, *waved* is
# `␣ w a v ed`. Nobody told BPE about stems or suffixes; they are simply the most frequent
# byte sequences.
#
# **The order depends on the tie rule.** A common way to present this example merges `h u`, `hu g`,
# `i n`, `in g`, `e d`, in that order, as if each were the unique winner. Replaying those choices on the
# `</w>` corpus shows that each was *a* most frequent pair, and that each was tied:

# %% id="c36"
textbook_order = [("h", "u"), ("hu", "g"), ("i", "n"), ("in", "g"), ("e", "d")]
words = dict(classic_corpus)
rows = []
for a, b in textbook_order:
    counts = count_pairs(words)
    rivals = sorted(p for p, n in counts.items() if n == counts[a, b] and p != (a, b))
    rows.append([f"{a} + {b}", counts[a, b], max(counts.values()), ", ".join(" + ".join(p) for p in rivals)])
    words = {tuple(merge(list(w), (a, b), a + b)): n for w, n in words.items()}
show_table(["merge", "its count", "highest count", "other pairs with the same count"], rows)

# %% [markdown] id="c37" source_trailing_newlines=1
# That order breaks the ties by teaching preference (stems and suffixes first), which is fine for
# explaining the idea but is not an algorithm. Our rule gives `␣h`, `ug`, `␣hug`, `ed`, `in`, `ing`.
# The HF `tokenizers` library also takes the smallest pair, but of its *own* internal ids, in which the
# space byte sorts after the letters; on our byte corpus it merges `h u` first, then `␣ hu`, `␣hu g`,
# `e d`, `i n`, `in g`. All three are valid BPE runs; after six merges ours and HF's split every word
# of the corpus the same way, through different intermediate tokens (`␣h`, `ug` versus `hu`, `␣hu`). What
# matters is that a tokenizer fixes one rule, because the merges it learns are frozen into the model:
# the same text must always produce the same ids.
#
# **Our tie rule**, stated once: among the pairs with the highest count, take the smallest pair `(a, b)`
# of *our* ids (bytes by value, then the merges in the order they were made): the smallest `a`, and
# among equal `a`s the smallest `b`. Other published trainers break ties other ways: by the
# lexicographically greatest pair of byte strings (Stanford CS336's reference), by the pair seen first
# (minbpe), or, like HF `tokenizers`, by the smallest pair of their own ids. HF numbers the 256 bytes in
# the order of the printable characters it shows them as (GPT-2's byte-to-character table, where the
# space byte is `Ġ`, U+0120, after every letter) and each merge after them. The experiment below trains
# the straightforward way (a full `count_pairs` and a `merge` per step) on a slice of the training text
# with only the tie rule changed to HF's order, and compares the merges with HF's own trainer on the same
# words.

# %% id="6e8a5db1" source_trailing_newlines=1
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

_printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
byte_shown_as = {b: chr(b) for b in _printable}            # GPT-2's table: how HF shows each byte
byte_shown_as.update({b: chr(256 + i) for i, b in enumerate(b for b in range(256) if b not in _printable)})


def train_with_tie_rule(text, num_merges, rank):
    """The straightforward trainer with ties broken by `rank`: among the most frequent pairs, the one
    with the smallest (rank(a), rank(b))."""
    words = collections.Counter(tuple(w.encode("utf-8")) for w in split_words(text))
    merges = []
    for k in range(num_merges):
        counts = count_pairs(words)
        if not counts:
            break
        best = min(counts, key=lambda p: (-counts[p], rank(p[0]), rank(p[1])))
        merges.append(best)
        words = {tuple(merge(list(w), best, 256 + k)): n for w, n in words.items()}
    return merges


def hf_rank(token):
    """HF's own ids: bytes in the order of the characters it shows them as, then the merges in order."""
    return ord(byte_shown_as[token]) if token < 256 else 0x110000 + token


def hf_merges(text, num_merges):
    """HF tokenizers' BpeTrainer on the same words (256-byte alphabet, one word per sequence), as id pairs."""
    hf = Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    hf.train_from_iterator(split_words(text), trainer=trainers.BpeTrainer(
        vocab_size=256 + num_merges, min_frequency=0, special_tokens=[], show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    id_of = {byte_shown_as[b]: b for b in range(256)}
    merges = []
    for k, m in enumerate(json.loads(hf.to_str())["model"]["merges"]):
        a, b = m.split(" ") if isinstance(m, str) else m
        merges.append((id_of[a], id_of[b]))
        id_of[a + b] = 256 + k
    return merges


rows = []
for label, sample, n in [("toy corpus", toy_text, 12), (f"first {len(train_text[:30000]):,} characters of the training text",
                                                        train_text[:30000], 60)]:
    reference = hf_merges(sample, n)
    ours, _ = train_bpe(sample, n)
    with_hf_ties = train_with_tie_rule(sample, n, rank=hf_rank)
    first_difference = next((k for k, (x, y) in enumerate(zip(ours, reference)) if x != y), None)
    rows.append([label, len(reference), sum(x == y for x, y in zip(with_hf_ties, reference)),
                 "none" if first_difference is None else f"merge {first_difference}"])
show_table(["text", "HF merges", "same merge, in the same place, with HF's tie order",
            "our rule: first merge that differs"], rows)
claims.claim("With HF's tie order the straightforward trainer reproduces HF's merges one for one on both texts "
             f"({' and '.join(f'{same}/{n}' for _, n, same, _ in rows)}); with ours they part at "
             f"{' and '.join(first for *_, first in rows)}",
             holds=all(same == n for _, n, same, _ in rows) and any(first != "none" for *_, first in rows))


# %% [markdown] id="f4ab817b"
# Changing nothing but the tie order reproduces HF's merges one for one (the middle column equals the
# merge count). With our order the two trainers part at the first merge where a tie is broken differently,
# and from there on the lists differ, though both are correct byte-level BPE.
#
# ### What the incremental update buys
#
# Below we time your `train_bpe` against a replay of the same merges done the straightforward way, a
# full `count_pairs` plus a `merge` over every distinct word before each merge, on the training text.
#
# **Predict before you run.** The replay's time grows linearly with the number of merges. What shape
# do you expect for your `train_bpe`, and how many times faster at 60 merges?
#
# <details><summary>Answer</summary>
#
# Your trainer pays once for the first count and the index (the intercept), and then little per
# merge: after the first merges a merge changes only a few percent of the distinct words, some well under 1%
# (right panel). Its curve is nearly flat, and the ratio printed below the figure (measured on your machine, so it
# varies with its speed and load; the first merges are the expensive ones, since frequent pairs occur in many words)
# grows with every further merge. If your curve has the same slope as the replay, your
# `PairCounter.merge` (or your `train_bpe`) is still visiting every word.
# </details>

# %% id="c38"
def replay_with_recount(text, merges):
    """Apply learned merges the straightforward way; return the cumulative seconds after each merge
    and the fraction of distinct words each merge changed."""
    words = collections.Counter(tuple(w.encode("utf-8")) for w in split_words(text))
    seconds, touched = [], []
    start = time.process_time()
    for k, pair in enumerate(merges):
        counts = count_pairs(words)                    # the full recount
        max(counts.values())                           # ... and a scan for the top pair
        new_words = {tuple(merge(list(w), pair, 256 + k)): n for w, n in words.items()}
        touched.append(sum(len(new) < len(old) for old, new in zip(words, new_words)) / len(words))
        words = new_words
        seconds.append(time.process_time() - start)
    return seconds, touched


timing_merges = [1, 60]
yours = []
for m in timing_merges:
    start = time.process_time()                        # CPU time: other programs running meanwhile don't count
    merges_m, _ = train_bpe(train_text, m)
    yours.append(time.process_time() - start)
recount_seconds, touched = replay_with_recount(train_text, merges_m)
window = 10
touched_mean = [sum(touched[max(0, i - window + 1):i + 1]) / len(touched[max(0, i - window + 1):i + 1])
                for i in range(len(touched))]

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.6))
ax1.plot(range(1, len(recount_seconds) + 1), recount_seconds, label="recount after every merge")
ax1.plot(timing_merges, yours, "o-", label="your train_bpe")
ax1.set_xlabel("number of merges")
ax1.set_ylabel("seconds (cumulative)")
ax1.set_title(f"Training time on {len(train_text) // 1000} KB of prose")
ax1.legend()
ax2.semilogy(range(1, len(touched) + 1), [100 * t for t in touched], ".", color="C0", alpha=0.35, label="each merge")
ax2.semilogy(range(1, len(touched) + 1), [100 * t for t in touched_mean], color="C0", label=f"mean of the last {window}")
ax2.legend()
ax2.set_xlabel("merge k")
ax2.set_ylabel("% of distinct words changed")
ax2.set_title("How much of the corpus one merge touches")
plt.tight_layout()
plt.show()
print(f"{timing_merges[-1]} merges: recount {recount_seconds[-1]:.2f} s, your train_bpe {yours[-1]:.2f} s "
      f"({recount_seconds[-1] / yours[-1]:.1f}x)")
early, late = sum(touched[:window]) / window, touched_mean[-1]
claims.claim(f"At {timing_merges[-1]} merges your train_bpe takes {recount_seconds[-1] / yours[-1]:.1f} times less CPU time "
             f"than the recount; the first {window} merges change {early:.1%} of the distinct words on average, the last "
             f"{window} {late:.1%}", holds=recount_seconds[-1] > 1.5 * yours[-1] and late < min(early, 0.05),
             why_it_may_not="a train_bpe that recounts, or a PairCounter.merge that visits every word, is as slow as the replay")

# %% [markdown] id="c39"
# The recounting trainer's time grows linearly with the number of merges at a steep, constant slope:
# every merge pays for the whole corpus again. The incremental trainer pays that once, at the start, and
# each later merge costs only what it changes. The gap grows with every merge, and GPT-2 learned 50,000
# of them from a corpus far larger than ours. (A `train_bpe` that scans all pair counts to find the top
# pair, as the exercise suggests, pays a cost proportional to the number of distinct pairs at every merge;
# the reference solution keeps the pairs in a priority queue (a heap whose out-of-date entries are skipped
# when they reach the top), as production trainers such as HF `tokenizers` do. `benchmarks/bpe_benchmark.py`
# in the repository compares the reference trainer with HF's Rust implementation.)
#
# ## 5. Encoding and decoding
#
# Training happens once. After that the merges are frozen, and the tokenizer has two jobs.
#
# **Encode** a new text: split it into words exactly as in training, spell each word in bytes, then apply
# the merges **in the order they were learned**: merge 0 everywhere it applies, then merge 1, and so on.
# The order matters: with merges `b+c` (learned first) and then `a+b`, the word `abc` becomes
# `a bc`, because `b` is already taken by the time `a+b` is considered.
#
# **Decode** ids: look up each id's bytes, concatenate, and decode the UTF-8. Concatenate *before*
# decoding: a token may hold only part of a character (a corpus with many 🙂 soon learns the token
# `\x99\x82`, the last two of its four bytes `F0 9F 99 82`), and an arbitrary list of ids need not be
# valid UTF-8 at all. Python's `errors="replace"` writes one U+FFFD (`�`) for each **invalid
# sequence**: a byte that cannot start a character, or the start of a multi-byte character that is cut
# short. That is what a chatbot shows when it streams half a character. Neither direction changes the
# text in any other way: no Unicode normalization, and a leading byte-order mark U+FEFF (bytes
# `EF BB BF`) is a character like any other (the `utf-8-sig` codec would silently drop it).
#
# **Predict before you run.** How many U+FFFD characters does `b"\xff\xfe\x80".decode("utf-8", errors="replace")`
# give? And `b"\xe2\x82".decode("utf-8", errors="replace")`?
#
# <details><summary>Answer</summary>
#
# Three for the first: `FF`, `FE` and `80` are each invalid on their own (none can start a UTF-8
# character), so each becomes its own U+FFFD. One for the second: `E2 82` is the start of a three-byte
# character (`€` is `E2 82 AC`) cut short, one invalid sequence.
# </details>
#
# ### Exercise 6: encode
#
# *Points: 1 visible, 3 hidden (agreement with HF tokenizers on a multilingual text and on random Unicode), 1 hidden (edge cases: word boundaries, merge order, non-ASCII, no normalization, byte-order marks).*

# %% id="encode" nbgrader={"grade": false, "grade_id": "encode", "locked": false, "schema_version": 3, "solution": true, "task": false}
import math


def encode(text, merges):
    """Encode `text` into a list of token ids with the learned `merges`.

    Split the text with split_words (as in training) and turn each word into its UTF-8 bytes
    (ids 0..255). Then apply the merges in the order they were learned: merges[k] = (a, b) replaces
    every occurrence of a followed by b with 256 + k (left to right, as in `merge`). Merges never
    cross word boundaries. The text is used as it is: no Unicode normalization, nothing added or dropped.
    Returns a new list of ints ([] for the empty text).
    """
    ### BEGIN SOLUTION
    rank = {pair: 256 + k for k, pair in enumerate(merges)}   # pair -> the id its merge creates
    ids = []
    for word in split_words(text):
        tokens = list(word.encode("utf-8"))
        # Same result as looping over all merges in order, but only looks at pairs that occur: a merge
        # can only create pairs that were learned later, so always merge the earliest-learned pair present.
        while len(tokens) >= 2:
            pair = min(zip(tokens, tokens[1:]), key=lambda p: rank.get(p, math.inf))
            if pair not in rank:
                break
            tokens = merge(tokens, pair, rank[pair])
        ids.extend(tokens)
    return ids
    ### END SOLUTION


# %% id="test_encode" nbgrader={"grade": true, "grade_id": "test_encode", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
from utils import checks

TOY_MERGES = [(32, 104), (117, 103), (256, 257), (101, 100), (105, 110), (260, 103)]   # " h" "ug" " hug" "ed" "in" "ing"


def _encoded(text, merges):
    got = encode(text, merges)
    checks.assert_true(isinstance(got, list), name="encode", problem=f"expected a list, got {type(got).__name__}.")
    return list(got)


checks.assert_equal(_encoded(" hugging", TOY_MERGES), [258, 103, 261], name="encode(' hugging')",
                    hint="' hug' (258), 'g' (103), 'ing' (261).")
checks.assert_equal(_encoded(" hugged", TOY_MERGES), [258, 103, 259], name="encode(' hugged')")
checks.assert_equal(_encoded("hug", TOY_MERGES), [104, 257], name="encode('hug')",
                    hint="without the leading space only 'ug' applies: 'h' (104), 'ug' (257).")
checks.assert_equal(_encoded("", TOY_MERGES), [], name="encode('')")
checks.assert_equal(_encoded("é", []), [195, 169], name="encode('é', no merges)", hint="start from the UTF-8 bytes.")
checks.assert_equal(_encoded("abc", [(98, 99), (97, 98)]), [97, 256], name="encode('abc', [b+c, a+b])",
                    hint="apply merges in the order learned: b+c first, after which a+b no longer occurs.")
checks.assert_equal(_encoded("hug hug", [(103, 32)]), [104, 117, 103, 32, 104, 117, 103],
                    name="encode('hug hug', [g+space])",
                    hint="split_words gives 'hug', ' hug': the space belongs to the next word, so g+space never occurs.")
checks.assert_equal(_encoded("e\u0301", []), [101, 204, 129], name="encode('e\\u0301', no merges)",
                    hint="'e' plus a combining accent is 3 bytes; do not normalize the text (NFC would turn it into 'é', C3 A9).")
checks.assert_equal(_encoded("\ufeffhi", []), [239, 187, 191, 104, 105], name="encode('\\ufeffhi', no merges)",
                    hint="a leading U+FEFF is text like any other: encode it (EF BB BF).")
print("encode: visible tests passed")

# %% id="test_encode_hidden" nbgrader={"grade": true, "grade_id": "test_encode_hidden", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for encode run when your notebook is graded.
### BEGIN HIDDEN TESTS
import json
import os
import re
import tempfile

os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", os.path.join(tempfile.gettempdir(), "hypothesis-course"))
from hypothesis import HealthCheck, given, settings, strategies as st
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

from utils import checks

_printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
_BYTE_OF = {chr(b): b for b in _printable}
_BYTE_OF.update({chr(256 + i): b for i, b in enumerate(b for b in range(256) if b not in _printable)})
class _WORDS:
    """GPT-2's pre-tokenizer (\\p{L}, \\p{N}, Unicode's White_Space), written here: re over an ASCII stand-in."""

    @staticmethod
    def _kind(ch):
        import unicodedata

        if ch.isascii():
            return "!" if "\x1c" <= ch <= "\x1f" else ch
        category = unicodedata.category(ch)
        return "a" if category[0] == "L" else "0" if category[0] == "N" else "\t" if ch.isspace() else "!"

    @staticmethod
    def findall(text):
        shadow = "".join(_WORDS._kind(ch) for ch in text)
        pattern = r"'(?:[sdmt]|ll|ve|re)| ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+(?!\S)|\s+"
        return [text[m.start():m.end()] for m in re.finditer(pattern, shadow, flags=re.ASCII)]



def _encoded(text, merges):
    got = encode(text, merges)
    checks.assert_true(isinstance(got, list), name="encode", problem=f"expected a list, got {type(got).__name__}.")
    return [int(i) for i in got]


# Agreement with HF tokenizers: merges learned by HF on a multilingual text, then both sides encode.
_TRAIN = ("Grüße aus Köln! Die Brücke über den Fluss ist schön. " * 3 + "東京都は日本の首都です。東京タワーと京都。" * 3
          + "Emoji: 🙂🙂 👍🏽 🚀🚀🚀 ❤️ " * 3 + "The quick brown fox jumps over the lazy dog; the dog sleeps. " * 4
          + "def square(x):\n    return x ** 2\n\n" * 3)
_hf = Tokenizer(models.BPE())
_hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
_hf.train_from_iterator(_WORDS.findall(_TRAIN), trainer=trainers.BpeTrainer(
    vocab_size=256 + 80, min_frequency=0, special_tokens=[], initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    show_progress=False))
_id_of = {bytes([b]): b for b in range(256)}
MERGES = []
for k, m in enumerate(json.loads(_hf.to_str())["model"]["merges"]):
    a, b = (bytes(_BYTE_OF[ch] for ch in part) for part in (m.split(" ") if isinstance(m, str) else m))
    MERGES.append((_id_of[a], _id_of[b]))
    _id_of[a + b] = 256 + k
assert len(MERGES) == 80 and len(_id_of) == 256 + 80


def _hf_ids(text):
    words = _WORDS.findall(text)
    if not words:
        return []
    return [_id_of[bytes(_BYTE_OF[ch] for ch in tok)] for tok in _hf.encode(words, is_pretokenized=True).tokens]


_BYTES_OF = {i: t for t, i in _id_of.items()}
for sample in [_TRAIN, "Grüße, 東京! 🙂🙂🙂 the quick brown dog  jumps\n\n    return x", "  \t\n", "a"]:
    mine = _encoded(sample, MERGES)
    checks.assert_equal(mine, _hf_ids(sample), name=f"encode({sample[:30]!r}...) vs HF tokenizers")
    checks.assert_equal(b"".join(_BYTES_OF[i] for i in mine).decode("utf-8"), sample, name="round trip of encode")

# Random Unicode text (any code point, astral planes included), biased towards the training characters.
_chars = st.one_of(st.sampled_from(sorted(set(_TRAIN))), st.characters())


@settings(derandomize=True, max_examples=120, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.text(alphabet=_chars, max_size=40))
def test_encode_matches_hf(s):
    mine = _encoded(s, MERGES)
    checks.assert_equal(mine, _hf_ids(s), name=f"encode({s!r}) vs HF tokenizers")
    checks.assert_equal(b"".join(_BYTES_OF[i] for i in mine).decode("utf-8"), s, name=f"bytes of encode({s!r})")


test_encode_matches_hf()
del test_encode_matches_hf, _encoded, _hf, _hf_ids
### END HIDDEN TESTS

# %% id="693c0453" nbgrader={"grade": true, "grade_id": "test_encode_hidden_edges", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for encode (edge cases: word boundaries, merge order, non-ASCII, no normalization, byte-order marks) run when your notebook is graded.
### BEGIN HIDDEN TESTS
import json
import os
import re
import tempfile

os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", os.path.join(tempfile.gettempdir(), "hypothesis-course"))
from hypothesis import HealthCheck, given, settings, strategies as st
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

from utils import checks

_printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
_BYTE_OF = {chr(b): b for b in _printable}
_BYTE_OF.update({chr(256 + i): b for i, b in enumerate(b for b in range(256) if b not in _printable)})
class _WORDS:
    """GPT-2's pre-tokenizer (\\p{L}, \\p{N}, Unicode's White_Space), written here: re over an ASCII stand-in."""

    @staticmethod
    def _kind(ch):
        import unicodedata

        if ch.isascii():
            return "!" if "\x1c" <= ch <= "\x1f" else ch
        category = unicodedata.category(ch)
        return "a" if category[0] == "L" else "0" if category[0] == "N" else "\t" if ch.isspace() else "!"

    @staticmethod
    def findall(text):
        shadow = "".join(_WORDS._kind(ch) for ch in text)
        pattern = r"'(?:[sdmt]|ll|ve|re)| ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+(?!\S)|\s+"
        return [text[m.start():m.end()] for m in re.finditer(pattern, shadow, flags=re.ASCII)]



def _encoded(text, merges):
    got = encode(text, merges)
    checks.assert_true(isinstance(got, list), name="encode", problem=f"expected a list, got {type(got).__name__}.")
    return [int(i) for i in got]


# Fixed cases, values written here.
checks.assert_equal(_encoded("a  b", [(32, 32)]), [97, 32, 32, 98], name="encode('a  b', [space+space])",
                    hint="split_words('a  b') is ['a', ' ', ' b']: the two spaces are in different words.")
checks.assert_equal(_encoded("x\n\ny", [(10, 10)]), [120, 10, 10, 121], name="encode('x\\n\\ny', [newline+newline])",
                    hint="merges never cross the words that split_words returns.")
checks.assert_equal(_encoded("the", [(104, 101), (116, 104)]), [116, 256], name="encode('the', [h+e, t+h])",
                    hint="merge order, not longest match: h+e is applied first, then t+h no longer occurs.")
checks.assert_equal(_encoded("aaaaa", [(97, 97), (256, 97)]), [256, 257], name="encode('aaaaa', [a+a, aa+a])")
checks.assert_equal(_encoded(" naïve 東京", [(195, 175), (32, 110), (257, 97)]),
                    [258, 256, 118, 101, 32, 230, 157, 177, 228, 186, 172], name="encode(' naïve 東京', ...)")

checks.assert_equal(_encoded("Cafe\u0301 \u212b", [(195, 169)]), [67, 97, 102, 101, 204, 129, 32, 226, 132, 171],
                    name="encode('Cafe\\u0301 \\u212b', [C3+A9])", hint="no Unicode normalization: the text's own bytes.")
checks.assert_equal(_encoded("\ufeff\ufeffx", []), [239, 187, 191, 239, 187, 191, 120], name="encode('\\ufeff\\ufeffx', [])")
checks.assert_equal(_encoded("\ufeffab cd", [(97, 98)]), [239, 187, 191, 256, 32, 99, 100], name="encode('\\ufeffab cd', [a+b])",
                    hint="a leading U+FEFF is text in a text of any length: encode its bytes EF BB BF.")
# A text of a single character is one word like any other: the bytes of a multi-byte character merge too.
checks.assert_equal(_encoded("é", [(195, 169)]), [256], name="encode('é', [C3+A9])",
                    hint="a one-character text goes through split_words and the merges like any other text.")
checks.assert_equal(_encoded("\U0001f642", [(240, 159), (153, 130), (256, 257)]), [258],
                    name="encode('\\U0001f642' (🙂, bytes F0 9F 99 82), [F0+9F, 99+82, 256+257])")
# The same word with two different merge lists of the same length, in turn: each call uses its own merges.
checks.assert_equal(_encoded("abc abc", [(97, 98)]), [256, 99, 32, 256, 99], name="encode('abc abc', [a+b])")
checks.assert_equal(_encoded("abc abc", [(98, 99)]), [97, 256, 32, 97, 256], name="encode('abc abc', [b+c]) after encode(..., [a+b])",
                    hint="the result depends on the merges of this call: a cache kept between calls must be keyed by them.")
# Windows line endings stay as they are: \r is a byte of the text like any other.
windows_text = "line one\r\nline two\r\n"            # not `text`: the demos' corpus in this kernel
checks.assert_equal(_encoded(windows_text, []), list(windows_text.encode("utf-8")),
                    name="encode of a text with Windows line endings, no merges",
                    hint="The text is used as it is: nothing is normalized, \r\n included.")
### END HIDDEN TESTS

# %% [markdown] id="c43"
# ### Exercise 7: decode
#
# *Points: 1 visible, 2 hidden (the round trip with an independent encoder on random Unicode text), 1 hidden (edge cases: characters split over tokens, invalid and unfinished UTF-8, byte-order marks, no normalization).*

# %% id="decode" nbgrader={"grade": false, "grade_id": "decode", "locked": false, "schema_version": 3, "solution": true, "task": false}
def decode(ids, vocab):
    """Turn a list of token ids back into text.

    ids: list of int. vocab: dict mapping id -> bytes (as returned by train_bpe).
    Returns the str whose UTF-8 encoding is the tokens' bytes joined in order. One character may be
    split over several tokens. Where the joined bytes are not valid UTF-8 (possible for an arbitrary
    list of ids), each invalid sequence becomes one U+FFFD, exactly as
    bytes.decode("utf-8", errors="replace") does: b"\xff\xfe\x80" gives three, an unfinished
    multi-byte character (b"\xe2\x82") gives one. Nothing else changes: no Unicode normalization, and a
    leading U+FEFF (bytes EF BB BF) is kept. decode([]) == "".
    """
    ### BEGIN SOLUTION
    return b"".join(vocab[i] for i in ids).decode("utf-8", errors="replace")
    ### END SOLUTION


# %% id="test_decode" nbgrader={"grade": true, "grade_id": "test_decode", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
from utils import checks

TOY_VOCAB = {i: bytes([i]) for i in range(256)}
TOY_VOCAB.update({256: b" h", 257: b"ug", 258: b" hug", 259: b"ed", 260: b"in", 261: b"ing", 262: b"\xe2\x82"})


def _decoded(ids):
    got = decode(ids, TOY_VOCAB)
    checks.assert_true(isinstance(got, str), name="decode", problem=f"expected a str, got {type(got).__name__}.")
    return got


checks.assert_equal(_decoded([258, 103, 261]), " hugging", name="decode([258, 103, 261])")
checks.assert_equal(_decoded([104, 257, 258, 115]), "hug hugs", name="decode([104, 257, 258, 115])",
                    hint="join the tokens' bytes as they are: no separators.")
checks.assert_equal(_decoded([]), "", name="decode([])")
checks.assert_equal(_decoded([195, 169]), "é", name="decode([195, 169])", hint="'é' is two bytes in UTF-8.")
checks.assert_equal(_decoded([262, 0xAC]), "€", name="decode([262, 172])",
                    hint="token 262 holds the first two bytes of '€' (E2 82 AC): join all bytes, then decode once.")
checks.assert_equal(_decoded([104, 0xE2]), "h\ufffd", name="decode([104, 226])",
                    hint='a lone 0xE2 byte is not valid UTF-8: decode with errors="replace".')
checks.assert_equal(_decoded([0xFF, 0xFE, 0x80]), "\ufffd\ufffd\ufffd", name="decode([255, 254, 128])",
                    hint="one U+FFFD per invalid byte sequence: three bytes that can never start a character give three.")
checks.assert_equal(_decoded([0xEF, 0xBB, 0xBF, 104]), "\ufeffh", name="decode([239, 187, 191, 104])",
                    hint="EF BB BF is the character U+FEFF; keep it (the utf-8-sig codec drops it).")
checks.assert_equal(_decoded([101, 0xCC, 0x81]), "e\u0301", name="decode([101, 204, 129])",
                    hint="'e' + combining acute accent: return exactly the decoded text, without normalizing it to 'é'.")
print("decode: visible tests passed")

# %% id="test_decode_hidden" nbgrader={"grade": true, "grade_id": "test_decode_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for decode run when your notebook is graded.
### BEGIN HIDDEN TESTS
import json
import os
import re
import tempfile

os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", os.path.join(tempfile.gettempdir(), "hypothesis-course"))
from hypothesis import HealthCheck, given, settings, strategies as st
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

from utils import checks

_printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
_BYTE_OF = {chr(b): b for b in _printable}
_BYTE_OF.update({chr(256 + i): b for i, b in enumerate(b for b in range(256) if b not in _printable)})
class _WORDS:
    """GPT-2's pre-tokenizer (\\p{L}, \\p{N}, Unicode's White_Space), written here: re over an ASCII stand-in."""

    @staticmethod
    def _kind(ch):
        import unicodedata

        if ch.isascii():
            return "!" if "\x1c" <= ch <= "\x1f" else ch
        category = unicodedata.category(ch)
        return "a" if category[0] == "L" else "0" if category[0] == "N" else "\t" if ch.isspace() else "!"

    @staticmethod
    def findall(text):
        shadow = "".join(_WORDS._kind(ch) for ch in text)
        pattern = r"'(?:[sdmt]|ll|ve|re)| ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+(?!\S)|\s+"
        return [text[m.start():m.end()] for m in re.finditer(pattern, shadow, flags=re.ASCII)]



def _decoded(ids, vocab):
    got = decode(list(ids), dict(vocab))
    checks.assert_true(isinstance(got, str), name="decode", problem=f"expected a str, got {type(got).__name__}.")
    return got


# Round trip with an independent encoder (HF tokenizers) on random Unicode text.
_TRAIN = ("Grüße aus Köln! Die Brücke über den Fluss ist schön. " * 3 + "東京都は日本の首都です。東京タワーと京都。" * 3
          + "Emoji: 🙂🙂 👍🏽 🚀🚀🚀 ❤️ " * 3 + "The quick brown fox jumps over the lazy dog; the dog sleeps. " * 4
          + "def square(x):\n    return x ** 2\n\n" * 3)
_hf = Tokenizer(models.BPE())
_hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
_hf.train_from_iterator(_WORDS.findall(_TRAIN), trainer=trainers.BpeTrainer(
    vocab_size=256 + 80, min_frequency=0, special_tokens=[], initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    show_progress=False))
VOCAB = {b: bytes([b]) for b in range(256)}
_id_of = {bytes([b]): b for b in range(256)}
for k, m in enumerate(json.loads(_hf.to_str())["model"]["merges"]):
    a, b = (bytes(_BYTE_OF[ch] for ch in part) for part in (m.split(" ") if isinstance(m, str) else m))
    VOCAB[256 + k] = a + b
    _id_of[a + b] = 256 + k
assert len(VOCAB) == 256 + 80
assert sum(len(t.decode("utf-8", "replace")) != len(t) for t in VOCAB.values() if len(t) > 1) > 5  # partial characters


def _hf_ids(text):
    words = _WORDS.findall(text)
    if not words:
        return []
    return [_id_of[bytes(_BYTE_OF[ch] for ch in tok)] for tok in _hf.encode(words, is_pretokenized=True).tokens]


for sample in [_TRAIN, "🙂🚀 東京都。 Brücke", ""]:
    checks.assert_equal(_decoded(_hf_ids(sample), VOCAB), sample, name=f"decode(encode({sample[:30]!r}...))")

_chars = st.one_of(st.sampled_from(sorted(set(_TRAIN))), st.characters())


@settings(derandomize=True, max_examples=120, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.text(alphabet=_chars, max_size=40))
def test_round_trip(s):
    checks.assert_equal(_decoded(_hf_ids(s), VOCAB), s, name=f"decode(encode({s!r}))")


test_round_trip()
del test_round_trip, _decoded, _hf, _hf_ids
### END HIDDEN TESTS

# %% id="bb014406" nbgrader={"grade": true, "grade_id": "test_decode_hidden_edges", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for decode (edge cases: characters split over tokens, invalid and unfinished UTF-8, byte-order marks, no normalization) run when your notebook is graded.
### BEGIN HIDDEN TESTS
import json
import os
import re
import tempfile

os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", os.path.join(tempfile.gettempdir(), "hypothesis-course"))
from hypothesis import HealthCheck, given, settings, strategies as st
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

from utils import checks

_printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
_BYTE_OF = {chr(b): b for b in _printable}
_BYTE_OF.update({chr(256 + i): b for i, b in enumerate(b for b in range(256) if b not in _printable)})
class _WORDS:
    """GPT-2's pre-tokenizer (\\p{L}, \\p{N}, Unicode's White_Space), written here: re over an ASCII stand-in."""

    @staticmethod
    def _kind(ch):
        import unicodedata

        if ch.isascii():
            return "!" if "\x1c" <= ch <= "\x1f" else ch
        category = unicodedata.category(ch)
        return "a" if category[0] == "L" else "0" if category[0] == "N" else "\t" if ch.isspace() else "!"

    @staticmethod
    def findall(text):
        shadow = "".join(_WORDS._kind(ch) for ch in text)
        pattern = r"'(?:[sdmt]|ll|ve|re)| ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+(?!\S)|\s+"
        return [text[m.start():m.end()] for m in re.finditer(pattern, shadow, flags=re.ASCII)]



def _decoded(ids, vocab):
    got = decode(list(ids), dict(vocab))
    checks.assert_true(isinstance(got, str), name="decode", problem=f"expected a str, got {type(got).__name__}.")
    return got


# Fixed cases, values written here.
V = {i: bytes([i]) for i in range(256)}
V.update({256: b"\xf0\x9f", 257: b"\x99\x82", 258: b" \xe6\x9d", 259: b"\xb1\xe4\xba\xac", 260: b"ab"})
checks.assert_equal(_decoded([256, 257], V), "🙂", name="decode([256, 257])", hint="join all bytes first, then decode.")
checks.assert_equal(_decoded([260, 258, 259, 256, 257, 33], V), "ab 東京🙂!", name="decode(mixed tokens)")
checks.assert_equal(_decoded([255], V), "\ufffd", name="decode([255])", hint="0xFF is never valid UTF-8.")
checks.assert_equal(_decoded([256, 97], V), "\ufffda", name="decode([256, 97])",
                    hint="an unfinished 4-byte sequence followed by 'a' gives one U+FFFD, then 'a'.")
checks.assert_equal(_decoded([0], V), "\x00", name="decode([0])")
checks.assert_equal(_decoded([97, 256], V), "a\ufffd", name="decode([97, 256])",
                    hint="an unfinished 4-byte sequence at the very end gives one U+FFFD.")
checks.assert_equal(_decoded([260, 0xE6, 0x9D], V), "ab\ufffd", name="decode([260, 230, 157])",
                    hint="an unfinished 3-byte sequence at the end gives one U+FFFD.")
checks.assert_equal(_decoded([0xC0, 0xAF, 0xED, 0xA0, 0x80], V), "\ufffd" * 5, name="decode(overlong and surrogate bytes)")
checks.assert_equal(_decoded([0x61, 0xED, 0xA0, 0x80], V), "a" + "\ufffd" * 3, name="decode(a + the bytes of a surrogate, ED A0 80)",
                    hint='ED A0 80 (a UTF-16 surrogate written as UTF-8) is invalid UTF-8: errors="replace" gives three '
                         'U+FFFD; errors="surrogatepass" would return the surrogate itself.')
checks.assert_equal(_decoded([0xEF, 0xBB, 0xBF, 0xEF, 0xBB, 0xBF], V), "\ufeff\ufeff", name="decode(two U+FEFF)")
checks.assert_equal(_decoded([0x41, 0xCC, 0x8A, 0x20, 0xE2, 0x84, 0xAB], V), "A\u030a \u212b", name="decode(A + ring, Angstrom sign)",
                    hint="no Unicode normalization.")
### END HIDDEN TESTS

# %% [markdown] id="c47"
# **Never unknown.** Train a tokenizer on the English documentation and feed it text it has never seen,
# in scripts it has never seen: everything round-trips, because every byte is a token. What changes is
# the cost: text unlike the training data falls back to (nearly) one token per byte.

# %% id="c48"
NUM_MERGES = 1000
merges, vocab = train_bpe(train_text, NUM_MERGES)

samples = ["researchers fine-tune large-scale models", "Grüße aus Köln, naïve café", "東京は日本の首都です",
           "🙂👍🏽 emoji 🚀", "def square(x):\n    return x ** 2", "Ελληνικά και русский"]
rows = []
for s in samples:
    ids = encode(s, merges)
    rows.append([show_token(s), len(s), len(s.encode("utf-8")), len(ids), f"{len(ids) / len(s):.2f}", decode(ids, vocab) == s])
show_table(["text", "characters", "UTF-8 bytes", "tokens", "tokens per character", "round trip"], rows)

# %% [markdown] id="c49"
# The property that matters, `decode(encode(s)) == s` for **every** string, can be tested rather than
# hoped for. Property-based testing (the `hypothesis` library) generates hundreds of random Unicode
# strings, including characters outside the Basic Multilingual Plane like 🙂, and checks the property on
# each; when one fails, it shrinks it to a minimal counterexample. The hidden tests do the same.

# %% id="c50"
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", os.path.join(tempfile.gettempdir(), "hypothesis-course"))
from hypothesis import given, settings, strategies as st


@settings(derandomize=True, max_examples=200, deadline=None, database=None)
@given(st.text(max_size=50))
def round_trip(s):
    assert decode(encode(s, merges), vocab) == s, s


round_trip()
print("decode(encode(s)) == s held for 200 random Unicode strings")

# %% [markdown] id="c51"
# ## 6. Special tokens: `<|endoftext|>`
#
# Training data is many documents glued together. The model must know where one ends and the next
# begins, so tokenizers reserve **special tokens**: GPT-2's single special token is `<|endoftext|>`,
# id 50256, the last of its 50,257. Chat models add more (`<|im_start|>`, `<|im_end|>`, ...) to mark
# the roles in a conversation.
#
# A special token is not text. Two rules make it work:
#
# * it is **never merged** and never split: wherever the string `<|endoftext|>` appears, it becomes its
#   one id, however the merges would have cut those 13 characters, and no merge ever joins it with its
#   neighbours, so the text on each side is encoded on its own, as if the special token were a
#   document boundary (which it is);
# * it **round-trips**: the vocabulary maps its id to the bytes of its string, so `decode` needs no change.
#
# Cutting the text at special tokens is a job for a regular expression that matches any of the special
# strings. Careful: `|` in a pattern means "or", so the literal text `<|endoftext|>` used as a pattern
# matches `<`, `endoftext` or `>` anywhere. A special string has to be *escaped* before it goes into a
# pattern.
#
# **Predict before you run.** What does `re.split("<|endoftext|>", "a<|endoftext|>b")` return?
#
# <details><summary>Answer</summary>
#
# `['a', '|', '|', 'b']`: the pattern is the three alternatives `<`, `endoftext` and `>`, each of which
# is cut out. `re.escape("<|endoftext|>")` gives `<\|endoftext\|>`, which matches the literal string.
# </details>
#
# ### Exercise 8: encode with special tokens
#
# *Points: 1 visible, 2 hidden (special tokens cut the text, nothing merged across them), 1 hidden (edge cases:
# special strings with other pattern characters, non-ASCII text, no specials, the ids given).*

# %% id="encode_with_specials" nbgrader={"grade": false, "grade_id": "encode_with_specials", "locked": false, "schema_version": 3, "solution": true, "task": false}
import re


def encode_with_specials(text, merges, specials):
    """Encode `text` like `encode`, except that special tokens become their own ids.

    specials: dict mapping each special string (such as "<|endoftext|>", "[SEP]" or "<s>") to its id,
        any int, used as given. Special strings are matched literally: characters that mean something
        in a regular expression ( | [ ] . * + ? ( ) $ ^ \\ ) are ordinary characters in them. No special
        string occurs inside another. May be empty (then the result is encode(text, merges)).
    Every occurrence of a special string in `text` becomes its id, wherever it is (even inside a word);
    each stretch of text between special strings (and before the first, after the last) is encoded on
    its own with encode(stretch, merges), so nothing is merged across a special token.
    Returns a new list of Python ints. Neither text, merges nor specials is modified.
    """
    ### BEGIN SOLUTION
    if not specials:
        return encode(text, merges)
    pattern = "(" + "|".join(re.escape(s) for s in specials) + ")"
    ids = []
    for i, chunk in enumerate(re.split(pattern, text)):
        if i % 2:                                   # re.split keeps the captured separators at odd positions
            ids.append(specials[chunk])
        else:
            ids.extend(encode(chunk, merges))
    return ids
    ### END SOLUTION


# %% id="test_encode_with_specials" nbgrader={"grade": true, "grade_id": "test_encode_with_specials", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
from utils import checks

EOT = {"<|endoftext|>": 1000}
# Merges that would cut '<|endoftext|>' into pieces: '<' + '|' -> 256, 'e' + 'n' -> 257, '|' + '>' -> 258.
MERGES = [(60, 124), (101, 110), (124, 62)]


def _encoded(text, merges, specials):
    got = encode_with_specials(text, merges, specials)
    checks.assert_true(isinstance(got, list), name="encode_with_specials", problem=f"expected a list, got {type(got).__name__}.")
    return list(got)


checks.assert_equal(_encoded("<|endoftext|>", MERGES, EOT), [1000], name="encode_with_specials('<|endoftext|>')",
                    hint="a special string becomes its one id; the merges never touch it.")
checks.assert_equal(_encoded("hi<|endoftext|>en", MERGES, EOT), [104, 105, 1000, 257],
                    name="encode_with_specials('hi<|endoftext|>en')", hint="encode the text on each side with encode().")
checks.assert_equal(_encoded("a|b<c>", MERGES, EOT), [97, 124, 98, 60, 99, 62], name="encode_with_specials('a|b<c>')",
                    hint="'|', '<' and '>' on their own are ordinary text: escape the special strings before using them in a pattern.")
checks.assert_equal(_encoded("x<|endoftext|><|endoftext|>", MERGES, EOT), [120, 1000, 1000],
                    name="encode_with_specials('x<|endoftext|><|endoftext|>')")
checks.assert_equal(_encoded("abc", [(98, 99)], {}), [97, 256], name="encode_with_specials('abc', ..., {})",
                    hint="with no special tokens it is just encode().")

# Two specials, given out of id order, one with regex characters: each string keeps its own id.
SPECIALS = {"[SEP]": 1001, "<|endoftext|>": 1000}
checks.assert_equal(_encoded("S[SEP]x<|endoftext|>", MERGES, SPECIALS), [83, 1001, 120, 1000],
                    name="encode_with_specials('S[SEP]x<|endoftext|>') with [SEP] = 1001 and <|endoftext|> = 1000",
                    hint="every special string of the dict is cut out, with re.escape around each ('[' and ']' would "
                         "otherwise make a character class), and becomes specials[string].")
print("encode_with_specials: visible tests passed")

# %% id="test_encode_with_specials_hidden" nbgrader={"grade": true, "grade_id": "test_encode_with_specials_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for encode_with_specials run when your notebook is graded.
### BEGIN HIDDEN TESTS
import random
import re

from utils import checks

SPECIALS = {"<|endoftext|>": 5000, "<|im_start|>": 5001, "<|im_end|>": 5002}
MERGES = [(60, 124), (32, 104), (105, 109), (124, 62), (101, 110), (258, 95)]   # '<|' ' h' 'im' '|>' 'en' 'im_'
class _WORDS:
    """GPT-2's pre-tokenizer (\\p{L}, \\p{N}, Unicode's White_Space), written here: re over an ASCII stand-in."""

    @staticmethod
    def _kind(ch):
        import unicodedata

        if ch.isascii():
            return "!" if "\x1c" <= ch <= "\x1f" else ch
        category = unicodedata.category(ch)
        return "a" if category[0] == "L" else "0" if category[0] == "N" else "\t" if ch.isspace() else "!"

    @staticmethod
    def findall(text):
        shadow = "".join(_WORDS._kind(ch) for ch in text)
        pattern = r"'(?:[sdmt]|ll|ve|re)| ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+(?!\S)|\s+"
        return [text[m.start():m.end()] for m in re.finditer(pattern, shadow, flags=re.ASCII)]



def _encoded(text):
    got = encode_with_specials(text, MERGES, dict(SPECIALS))
    checks.assert_true(isinstance(got, list), name="encode_with_specials", problem=f"expected a list, got {type(got).__name__}.")
    return [int(i) for i in got]


def _reference(text):
    # Independent reference: cut at special strings by scanning, then GPT-2 words, bytes, merges in order.
    ids, stretch, i = [], "", 0
    while i <= len(text):
        special = next((s for s in SPECIALS if text.startswith(s, i)), None)
        if special is None and i < len(text):
            stretch += text[i]
            i += 1
            continue
        for word in _WORDS.findall(stretch):
            tokens = list(word.encode("utf-8"))
            for k, pair in enumerate(MERGES):
                out, j = [], 0
                while j < len(tokens):
                    if j + 1 < len(tokens) and (tokens[j], tokens[j + 1]) == pair:
                        out.append(256 + k)
                        j += 2
                    else:
                        out.append(tokens[j])
                        j += 1
                tokens = out
            ids += tokens
        stretch = ""
        if special is None:
            break
        ids.append(SPECIALS[special])
        i += len(special)
    return ids


# Values written here.
checks.assert_equal(_encoded("<|im_start|> hi<|im_end|>"), [5001, 257, 105, 5002],
                    name="encode_with_specials('<|im_start|> hi<|im_end|>')", hint="every special string in the dict counts, not only the first.")
checks.assert_equal(_encoded("him<|endoftext|>him"), [104, 258, 5000, 104, 258], name="encode_with_specials('him<|endoftext|>him')")
checks.assert_equal(_encoded(""), [], name="encode_with_specials('')")
checks.assert_equal(_encoded("<|endoftext"), [256, 260, 100, 111, 102, 116, 101, 120, 116],
                    name="encode_with_specials('<|endoftext')", hint="an unfinished special string is ordinary text.")
checks.assert_equal(_encoded("a <|endoftext|> h"), [97, 32, 5000, 257], name="encode_with_specials('a <|endoftext|> h')",
                    hint="the space before a special token stays with the text before it; the text after is encoded on its own.")
checks.assert_equal(_encoded("<|im_end|><|im_start|>"), [5002, 5001], name="encode_with_specials('<|im_end|><|im_start|>')")
checks.assert_equal(_encoded("im<|im_end|>_"), [258, 5002, 95], name="encode_with_specials('im<|im_end|>_')",
                    hint="no merge across a special token: 'im' and '_' are on different sides.")
# A special token between the two halves of a merge, where the text without it would be one word ('im', '<|').
checks.assert_equal(_encoded("i<|endoftext|>m"), [105, 5000, 109], name="encode_with_specials('i<|endoftext|>m')",
                    hint="encode the text on each side on its own: removing the special string first makes 'im' one word.")
checks.assert_equal(_encoded("<<|im_end|>|"), [60, 5002, 124], name="encode_with_specials('<<|im_end|>|')",
                    hint="no merge across a special token: '<' and '|' are on different sides.")

# Random texts made of pieces that tempt every mistake: parts of special strings, '|', '<', '>', spaces.
rng = random.Random(8)
pieces = ["x", "y", "im", "_", "|", "<", ">", " h", "en", "<|", "|>", " ", "\n", "endoftext"] + list(SPECIALS) * 2
for trial in range(40):
    sample = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 10)))
    checks.assert_equal(_encoded(sample), _reference(sample), name=f"encode_with_specials({sample!r})")
### END HIDDEN TESTS

# %% id="test_encode_with_specials_hidden_edges" nbgrader={"grade": true, "grade_id": "test_encode_with_specials_hidden_edges", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for encode_with_specials (edge cases) run when your notebook is graded.
### BEGIN HIDDEN TESTS
from utils import checks, probes

MERGES = [(195, 169), (32, 99), (97, 98)]                     # 'é' as one token, ' c', 'ab'
SPECIALS = {"[SEP]": 9001, "<s>": 17, "$x.*": 424242, "«fin»": 5000}


def _encoded(text, merges=MERGES, specials=SPECIALS):
    got = encode_with_specials(text, merges, dict(specials))
    checks.assert_true(isinstance(got, list) and all(type(i) is int for i in got), name=f"encode_with_specials({text!r})",
                       problem=f"expected a list of Python ints, got {got!r}.")
    return got


# Regular-expression characters in special strings are literal; ids are the dict's own.
checks.assert_equal(_encoded("ab[SEP]ab"), [258, 9001, 258], name="encode_with_specials('ab[SEP]ab')",
                    hint="escape every special string (re.escape), not only '|'.")
checks.assert_equal(_encoded("S"), [83], name="encode_with_specials('S')",
                    hint="'[SEP]' as a pattern would be a character class matching S, E or P: escape it.")
checks.assert_equal(_encoded("P.E"), [80, 46, 69], name="encode_with_specials('P.E')")
checks.assert_equal(_encoded("<s>café<s>"), [17, 99, 97, 102, 256, 17], name="encode_with_specials('<s>café<s>')",
                    hint="a special token's id is the one in the dict.")
checks.assert_equal(_encoded("$x.*$xy"), [424242, 36, 120, 121], name="encode_with_specials('$x.*$xy')")
checks.assert_equal(_encoded(" c«fin» cé"), [257, 5000, 257, 256], name="encode_with_specials(' c«fin» cé')",
                    hint="special strings may hold any character; the text on each side is encoded on its own.")
checks.assert_equal(_encoded("«fi»"), [194, 171, 102, 105, 194, 187], name="encode_with_specials('«fi»')")
# No specials: exactly encode(text, merges) (values written here).
checks.assert_equal(_encoded("ab cé [SEP]", specials={}), [258, 257, 256, 32, 91, 83, 69, 80, 93],
                    name="encode_with_specials('ab cé [SEP]', merges, {})", hint="with no special tokens it is just encode().")
checks.assert_equal(_encoded("", specials={}), [], name="encode_with_specials('', merges, {})")
checks.assert_equal(_encoded("[SEP]"), [9001], name="encode_with_specials('[SEP]')")
# The text is used as it is, line ends included: '\r\n' and '\r' are bytes 13 10 and 13.
checks.assert_equal(_encoded("a\r\n<s>\r"), [97, 13, 10, 17, 13], name="encode_with_specials('a\\r\\n<s>\\r')",
                    hint="encode each stretch as it is: no newline normalization ('\\r\\n' stays two bytes).")
# Literal means case too: '<S>' and '[sep]' are ordinary text when the specials are '<s>' and '[SEP]'.
checks.assert_equal(_encoded("<S>[sep]<s>"), [60, 83, 62, 91, 115, 101, 112, 93, 17], name="encode_with_specials('<S>[sep]<s>')",
                    hint="match the special strings exactly (no re.IGNORECASE): only '<s>' is special here.")
# The arguments are left as they were.
merges_given, specials_given = list(MERGES), dict(SPECIALS)      # not `merges`: the demos' names in this kernel
call = probes.traced_call(encode_with_specials, "ab<s>cé", merges_given, specials_given)
checks.assert_equal((call.args_after[1], call.args_after[2]), (MERGES, SPECIALS), name="merges and specials after the call",
                    hint="do not modify the merges or the specials.")
# Any character is text, a NUL too: a split at a sentinel character would cut the text there.
checks.assert_equal(_encoded("a\x00b<s>\x00"), [97, 0, 98, 17, 0], name="encode_with_specials of a text holding NUL characters",
                    hint="Split at the special strings themselves (re.split with a captured pattern), not at a sentinel "
                         "character that the text may contain.")
### END HIDDEN TESTS

# %% [markdown] id="c55"
# Why the first rule matters at training time too: glue documents together with `<|endoftext|>` and
# train on the result as plain text, and BPE happily spends merges on the separator's pieces (it is the
# most frequent "word" in the corpus), and even learns tokens that glue a document's last punctuation
# mark to the separator. Training on the stretches *between* special tokens keeps the vocabulary for
# the text, and the separator costs exactly one id. Below, 300 short paragraphs play the documents.

# %% id="c56"
documents = [p for p in text.split("\n") if 40 <= len(p) <= 120][:300]     # 300 short "documents"
glued = "<|endoftext|>".join(documents)
naive_merges, naive_vocab = train_bpe(glued, 100)
clean_merges, clean_vocab = train_bpe("".join(documents), 100)
specials = {"<|endoftext|>": 256 + len(clean_merges)}
spent = [show_token(naive_vocab[256 + k]) for k in range(len(naive_merges))
         if any(piece in naive_vocab[256 + k] for piece in (b"<", b"|", b">", b"endof", b"oftext"))]
print(f"trained on glued text: merges spent on the separator's pieces: {spent}")
ids = encode_with_specials(glued, clean_merges, specials)
print(f"with the special token: {ids.count(specials['<|endoftext|>'])} separators, one id each, "
      f"{len(ids):,} tokens in all")
decode_vocab = {**clean_vocab, specials["<|endoftext|>"]: b"<|endoftext|>"}
print("round trip:", decode(ids, decode_vocab) == glued)
claims.claim(f"Trained on the glued text, {len(spent)} of 100 merges go to the separator's pieces; with the special "
             f"token cut out first, each of the {len(documents) - 1} separators is one id and the text comes back exactly",
             holds=len(spent) > 0 and ids.count(specials["<|endoftext|>"]) == len(documents) - 1
             and decode(ids, decode_vocab) == glued)

# %% [markdown] id="c57"
# ## 7. A real tokenizer on real text
#
# Now 1,000 merges on the 300 KB training part of the prose corpus. The first merges are the most
# frequent byte pairs of English, and BPE learns whatever is frequent in *its* corpus: function words
# with their leading space (`␣the`, `␣of`), common endings (`tion`, `ing`), and, this being the Python
# documentation, quote marks and words like `␣object` and `␣function`. (Trained on the raw help text
# instead, the first merges would be runs of spaces from indented code and the dashes of table borders:
# cleaning the corpus is part of training a tokenizer.)

# %% id="c58"
print("first 24 merges:", " ".join(show_token(vocab[256 + k]) for k in range(24)))
longest = sorted(range(256, 256 + len(merges)), key=lambda i: -len(vocab[i]))[:12]
print("longest tokens: ", " ".join(show_token(vocab[i]) for i in longest))

# %% [markdown] id="c59"
# How much does each merge buy? We measure on the held-out text, as **bytes per token** (compression)
# and **tokens per word**, for tokenizers that keep only the first $k$ merges. (Counting each distinct
# held-out word once keeps this fast.)
#
# **Predict before you run.** Which shortens the held-out text more: the first 100 merges or the 900 after them?
#
# <details><summary>Answer</summary>
#
# The first 100, by far per merge, and here even in total: merges are learned in order of frequency, so the
# first ones replace pairs that occur everywhere (`␣t`, `he`, `in`) and each later one a rarer pair. The curve
# rises steeply, then flattens.
# </details>

# %% id="c60"
valid_counts = collections.Counter(split_words(valid_text))
valid_bytes = len(valid_text.encode("utf-8"))


def count_tokens(merges_k):
    return sum(n * len(encode(word, merges_k)) for word, n in valid_counts.items())


ks = [0, 50, 100, 250, 500, 1000]
tokens = [count_tokens(merges[:k]) for k in ks]
fig, ax1 = plt.subplots(figsize=(6.5, 3.6))
ax1.plot(ks, [valid_bytes / t for t in tokens], "o-", color="C0")
ax1.set_xlabel("number of merges k (vocabulary = 256 + k)")
ax1.set_ylabel("bytes per token (held-out)", color="C0")
ax2 = ax1.twinx()
ax2.plot(ks, [t / len(valid_words) for t in tokens], "s--", color="C1")
ax2.set_ylabel("tokens per word (held-out)", color="C1")
ax1.set_title("Compression grows quickly, then slowly, with the number of merges")
plt.tight_layout()
plt.show()

bpe_tokens_per_word = tokens[-1] / len(valid_words)
show_table(
    ["tokenizer", "vocabulary size", "tokens per word (held-out)", "unknown tokens (held-out)"],
    [["word-level", f"{len(word_vocab):,}", "1.00", f"{word_unknown:.1%}"],
     ["character-level", f"{len(char_vocab):,}", f"{chars_per_word:.2f}", f"{char_unknown:.1%}"],
     [f"byte-level BPE, {NUM_MERGES} merges", f"{256 + NUM_MERGES:,}", f"{bpe_tokens_per_word:.2f}", "0% (by construction)"]],
)
print("running sentence:", " ".join(show_token(vocab[i]) for i in encode(sentence, merges)).replace("`", ""))
gain_first = 1 - tokens[ks.index(100)] / tokens[0]
per_merge_first, per_merge_rest = gain_first / 100, (tokens[ks.index(100)] / tokens[0] - tokens[-1] / tokens[0]) / 900
claims.claim(f"With {256 + NUM_MERGES:,} tokens ({(256 + NUM_MERGES) / len(word_vocab):.0%} of the word-level vocabulary) "
             f"BPE needs {bpe_tokens_per_word / chars_per_word:.0%} of the character-level length ({bpe_tokens_per_word:.2f} "
             f"tokens per word); the first 100 merges shorten the held-out text by {gain_first:.0%}, and a merge among the "
             f"next 900 buys {per_merge_first / per_merge_rest:.0f} times less than one of the first 100",
             holds=bpe_tokens_per_word / chars_per_word < 0.45 and gain_first > 0.3 and per_merge_first > 5 * per_merge_rest
             and gain_first > 900 * per_merge_rest)

# %% [markdown] id="c61"
# With a vocabulary a fraction of the word-level one, BPE needs a fraction of the character-level sequence length
# and has no unknowns (the line above gives both fractions). The first 100 merges do most of the shortening;
# each of the next 900 buys much less: merges are learned in order of frequency, so each new token is rarer
# than the last. That is why real vocabularies are large (50k for GPT-2, 100k for GPT-4, 128k for
# Llama 3) and why they are trained on huge, varied corpora. On typical English prose GPT-2's
# tokenizer needs about 1.3 tokens per word (the "0.75 words per token" rule of thumb); our tiny
# tokenizer, trained on 300 KB, needs markedly more (printed above), and splits the running sentence into common
# fragments.
#
# ## 8. What the model sees: the "strawberry" problem
#
# Ask a chatbot how many r's are in *strawberry* and it has famously often answered 2. The model never
# sees the letters. It sees ids:

# %% id="c62"
rows = []
for s in ["strawberry", " strawberry", " Strawberry", " STRAWBERRY", " strawberries"]:
    ids = encode(s, merges)
    pieces = [vocab[i] for i in ids]
    rows.append([show_token(s), ids, " ".join(show_token(p) for p in pieces),
                 " ".join(str(p.count(b"r") + p.count(b"R")) for p in pieces), s.lower().count("r")])
show_table(["text", "ids (what the model sees)", "pieces", "r's per piece", "r's"], rows)
claims.claim(f"'strawberry' is cut into {len(encode('strawberry', merges))} pieces, and its five spellings get "
             f"{len({tuple(row[1]) for row in rows})} different id sequences",
             holds=len(encode("strawberry", merges)) > 1 and len({tuple(row[1]) for row in rows}) == len(rows))

# %% [markdown] id="c63"
# Our small tokenizer cuts *strawberry* into several pieces; GPT-class vocabularies cut it into two or three
# (such as `straw` + `berry`; the exact split depends on the tokenizer). Either way:
#
# * To count the r's the model must know **how each token is spelled**. Nothing in the id says so: the id
#   for `er` and the id for `ra` are just two rows of the embedding table, and their spelling can only be
#   learned indirectly from how they are used in the training text.
# * The **same word gets different ids** with a leading space, a capital letter, or in all caps, so
#   facts about spelling have to be learned several times over.
#
# That is why models struggle with letter counting, reversing strings, or the n-th character of a
# word, while being fluent with words. It is a consequence of the input representation, not of a lack of
# reasoning; asking the model to first spell the word out, one letter per token, often helps.

# %% [markdown] id="c64"
# ## 9. From ids to vectors: the embedding table
#
# The first layer of a transformer turns each id into a vector by looking up a row of a learned
# **embedding matrix** $E \in \mathbb{R}^{|V| \times d_{\text{model}}}$:
# $$X = E[\text{ids}] \in \mathbb{R}^{n \times d_{\text{model}}}, \qquad x_t = E_{\text{id}_t,\,:}.$$
#
# A lookup is not obviously a neural-network operation, but it is one in disguise. Write id $t$ as a
# **one-hot** row vector $o_t \in \{0, 1\}^{|V|}$, with a single 1 at position $t$. Then
# $o_t E$ picks out row $t$ of $E$, and for a whole sequence, with the one-hot rows stacked into
# $O \in \{0,1\}^{n \times |V|}$,
# $$E[\text{ids}] = O\,E.$$
# So the embedding is a linear layer without bias applied to one-hot inputs, and its gradient is the
# gradient of a matrix product: $\partial L / \partial E = O^\top\, \partial L / \partial X$, which is
# zero for every row whose token does not occur in the batch. Frameworks use the lookup because it costs
# $O(n\, d)$ instead of the $O(n\,|V|\,d)$ of the product.
#
# ### Exercise 9: one-hot vectors
#
# *Points: 1 visible, 2 hidden (ids of several shapes and integer dtypes, uint8 included, and ids not contiguous in memory; one_hot @ E against F.embedding), 1 hidden (edge cases: repeated ids, an empty tensor, a 0-d id, the result on the device of ids).*
#
# Build the one-hot matrix yourself (not with `F.one_hot`, which returns integers). Think of entry
# $(t, j)$ as the answer to a yes/no question about the id at position $t$ and the column $j$, asked for
# all positions and all columns at once by broadcasting, and then converted to numbers.
#
# **Predict before you run.** What is `one_hot(torch.tensor([2, 0]), 3)`, and what is its product with
# `E = torch.tensor([[1., 2.], [3., 4.], [5., 6.]])`?
#
# <details><summary>Answer</summary>
#
# `[[0., 0., 1.], [1., 0., 0.]]`, and the product is `[[5., 6.], [1., 2.]]`: rows 2 and 0 of `E`.
# </details>

# %% id="one_hot" nbgrader={"grade": false, "grade_id": "one_hot", "locked": false, "schema_version": 3, "solution": true, "task": false}
import torch


def one_hot(ids, vocab_size):
    """One-hot vectors for token ids.

    ids: integer tensor of any integer dtype (int64, int32, int16, uint8, ...) and any shape (...), contiguous
    in memory or not, with values in [0, vocab_size).
    Returns a new torch.float32 tensor of shape (..., vocab_size), on the device of `ids`, with 1.0 at
    position ids[...] and 0.0 elsewhere, so that one_hot(ids, V) @ E equals E[ids] for a float32 table E
    of shape (V, d). Columns for ids that do not occur are all zero (vocab_size may exceed the largest id).
    """
    ### BEGIN SOLUTION
    return (ids.unsqueeze(-1) == torch.arange(vocab_size, device=ids.device)).to(torch.float32)
    ### END SOLUTION


# %% id="test_one_hot" nbgrader={"grade": true, "grade_id": "test_one_hot", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
import torch
import torch.nn.functional as F

from utils import checks

ids = torch.tensor([2, 0, 3])
O = one_hot(ids, 5)
checks.assert_tensor(O, name="one_hot(tensor([2, 0, 3]), 5)", shape=(3, 5), dtype=torch.float32,
                     hint="one row per id, one column per vocabulary entry, as float32.")
expected = torch.tensor([[0.0, 0.0, 1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0, 0.0]])
checks.assert_close(O, expected, name="one_hot(tensor([2, 0, 3]), 5)")

E = torch.arange(15.0).reshape(5, 3)                  # float32; row t is [3t, 3t + 1, 3t + 2]
checks.assert_close(O @ E, E[ids], name="one_hot(ids, 5) @ E", hint="should pick rows 2, 0 and 3 of E.")
checks.assert_close(O @ E, F.embedding(ids, E), name="one_hot(ids, 5) @ E vs F.embedding")

batch = torch.tensor([[4, 1, 1], [0, 2, 4]])
checks.assert_tensor(one_hot(batch, 5), name="one_hot(ids of shape (2, 3), 5)", shape=(2, 3, 5), dtype=torch.float32,
                     hint="add the vocabulary dimension last.")
checks.assert_tensor(one_hot(torch.tensor([1]), 4), name="one_hot(tensor([1]), 4)", shape=(1, 4), dtype=torch.float32,
                     hint="the last dimension is vocab_size, whatever the largest id is.")
print("one_hot: visible tests passed")

# %% id="test_one_hot_hidden" nbgrader={"grade": true, "grade_id": "test_one_hot_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for one_hot run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
import torch.nn.functional as F

from utils import checks

g = torch.Generator().manual_seed(31)
V, d = 50, 16
for shape in [(7,), (4, 7), (2, 3, 5)]:
    for dtype in (torch.int64, torch.int32, torch.int16, torch.uint8):
        ids = torch.randint(0, 40, shape, generator=g).to(dtype)    # the largest id is below V - 1
        O = one_hot(ids, V)
        checks.assert_tensor(O, name=f"one_hot(ids of shape {shape}, dtype {dtype}, {V})", shape=(*shape, V), dtype=torch.float32,
                             hint="the last dimension is vocab_size; the dtype is float32 whatever the ids' dtype.")
        checks.assert_close(O, F.one_hot(ids.long(), V).float(), name=f"one_hot(ids of shape {shape}, {V})")
        E = torch.randn(V, d, generator=g)
        checks.assert_close(O @ E, F.embedding(ids.long(), E), name="one_hot(ids, V) @ E vs F.embedding", atol=1e-6)
# ids that are not contiguous in memory (a transposed batch): any integer tensor of shape (...) is allowed.
ids = torch.randint(0, V, (6, 4), generator=g).T
checks.assert_close(one_hot(ids, V), F.one_hot(ids, V).float(), name=f"one_hot(ids of shape (4, 6), transposed: not contiguous, {V})",
                    hint="ids.view(...) fails on ids that are not contiguous in memory: use reshape, or unsqueeze(-1) without flattening.")
### END HIDDEN TESTS

# %% id="b1005346" nbgrader={"grade": true, "grade_id": "test_one_hot_hidden_edges", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden tests for one_hot (edge cases: repeated ids, an empty tensor, a 0-d id, the result on the device of ids) run when your notebook is graded.
### BEGIN HIDDEN TESTS
import torch
import torch.nn.functional as F

from utils import checks

ids = torch.tensor([0, 9, 9, 0])
checks.assert_close(one_hot(ids, 10), F.one_hot(ids, 10).float(), name="one_hot(tensor([0, 9, 9, 0]), 10)")
checks.assert_tensor(one_hot(torch.zeros(0, dtype=torch.long), 6), name="one_hot(empty, 6)", shape=(0, 6), dtype=torch.float32)
for shape in [(2, 0), (0, 3)]:
    checks.assert_tensor(one_hot(torch.zeros(shape, dtype=torch.long), 6), name=f"one_hot(empty ids of shape {shape}, 6)",
                         shape=(*shape, 6), dtype=torch.float32, hint="the shape is (..., vocab_size) for empty ids too.")
checks.assert_tensor(one_hot(torch.tensor(3), 6), name="one_hot(tensor(3), 6)", shape=(6,), dtype=torch.float32,
                     hint="a 0-d id gives one vector.")
# uint8 ids with more columns than uint8 can count: the column numbers must not wrap around at 256.
checks.assert_close(one_hot(torch.tensor([0, 255, 7], dtype=torch.uint8), 300), F.one_hot(torch.tensor([0, 255, 7]), 300).float(),
                    name="one_hot of uint8 ids with vocab_size 300",
                    hint="Make the column numbers in int64 (torch.arange(vocab_size)), not in the dtype of ids: "
                         "uint8 counts only to 255, so column 256 would read as 0.")
# On the device of ids: ids on PyTorch's meta device (shapes, no values) stand in for ids on a GPU. A result
# built without device= comes back on the CPU; code that reads the ids' values cannot run there (the next check sees it).
from utils import probes
seen = probes.make("utils.meta_device.result_device_on_meta", one_hot, torch.tensor([[2, 0], [1, 3]]), 5)
checks.assert_kept_on_meta(seen, name="the device of one_hot(ids, 5) for ids on another device than the CPU (the meta device)",
                           hint="Build the result on ids.device (e.g. torch.arange(vocab_size, device=ids.device)): "
                                "with ids on a GPU, a tensor made without device= is on the CPU.")
# The same with the ids' values kept (ids labelled cuda:0, utils.fake_cuda): an answer that reads the ids (.tolist())
# and builds the vectors with torch.tensor(...) or torch.zeros(...) without device= shows its CPU result here.
seen = probes.make("utils.fake_cuda.result_device_on_fake_cuda", one_hot, torch.tensor([[2, 0], [1, 3]]), 5)
checks.assert_kept_on_fake_cuda(seen, name="the device of one_hot(ids, 5) for ids on a GPU (emulated, the values kept)",
                                hint="Build the result on ids.device (torch.tensor(..., device=ids.device), or compare ids "
                                     "with torch.arange(vocab_size, device=ids.device)).")

# float32 whatever the default dtype: a result built with torch.zeros or .float() would follow it.
with probes.default_dtype(torch.float64):
    in_float64_default = one_hot(torch.tensor([1, 0]), 3)
checks.assert_tensor(in_float64_default, name="one_hot(tensor([1, 0]), 3) with torch.set_default_dtype(torch.float64)",
                     shape=(2, 3), dtype=torch.float32,
                     hint="the contract says float32: give the dtype (dtype=torch.float32, .to(torch.float32)), do not "
                          "rely on the default dtype, which a user may have set to float64.")
### END HIDDEN TESTS

# %% [markdown] id="c68"
# How big is that table in a real model? GPT-2 small has $|V| = 50{,}257$ and $d_{\text{model}} = 768$:

# %% id="c69"
V, d, n_layers, context = 50_257, 768, 12, 1024
embedding = V * d
per_block = 2 * (2 * d) + (d * 3 * d + 3 * d) + (d * d + d) + (d * 4 * d + 4 * d) + (4 * d * d + d)
total = embedding + context * d + n_layers * per_block + 2 * d       # + position table + final LayerNorm
print(f"token embedding table: {V:,} x {d} = {embedding:,} parameters")
print(f"GPT-2 small in total: {total:,} parameters; the token embeddings are {embedding / total:.0%} of them")

E = torch.randn(V, d)
ids = torch.randint(0, V, (64,))
start = time.perf_counter(); X_lookup = E[ids]; t_lookup = time.perf_counter() - start
start = time.perf_counter(); X_product = one_hot(ids, V) @ E; t_product = time.perf_counter() - start
print(f"64 tokens: lookup {1e3 * t_lookup:.2f} ms, one-hot product {1e3 * t_product:.1f} ms, "
      f"same result: {torch.allclose(X_lookup, X_product)}")
claims.claim(f"The one-hot product gives the lookup's vectors, and takes {t_product / t_lookup:.0f} times as long",
             holds=torch.allclose(X_lookup, X_product) and t_product > t_lookup,
             why_it_may_not="timings on a busy machine vary")

# %% [markdown] id="c70"
# About 38.6 million parameters, almost a third of GPT-2 small, only to turn ids into vectors (GPT-2
# reuses the same matrix as its output layer). The vocabulary size is a real design trade-off: more
# merges mean shorter sequences but a bigger table, and rare tokens whose rows are seldom trained.
#
# ## Summary
#
# * Word-level tokenizers are short but brittle (`[UNK]`); character-level ones are robust but long, and
#   attention's cost grows with the square of the length. Subword tokenization sits between.
# * **Byte-level BPE** starts from the 256 byte values, so every Unicode string is representable, and
#   learns merges of the most frequent adjacent pairs, inside words, with a fixed tie-breaking rule.
# * **Encoding** applies the merges in the order learned; **decoding** concatenates bytes and decodes
#   UTF-8 once. `decode(encode(s)) == s` for every string, byte for byte (no normalization).
# * Training is fast only with **incremental** pair counts: each merge touches a small part of the corpus,
#   and an index from pairs to words finds that part without scanning.
# * **Pre-tokenization** (GPT-2's regex) keeps merges inside words and gives each word its leading space;
#   **special tokens** such as `<|endoftext|>` are cut out before it and never merged.
# * The model sees ids, not letters: spelling tasks (the *strawberry* problem) are hard by construction.
# * An **embedding** lookup $E[\text{ids}]$ is the product $\text{one\_hot}(\text{ids})\,E$; for GPT-2 small it
#   holds 38,597,376 parameters.
#
# Next: the vectors $X$ go into self-attention, where each token starts to look at the others.
