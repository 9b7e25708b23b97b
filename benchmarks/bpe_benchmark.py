"""Benchmark: the course's reference byte-level BPE trainer against HF `tokenizers`.

Both train on the same offline corpus, the Python documentation's help text
(``utils.corpus.python_docs()``, about 460 KB, used raw here: the notebook trains on its prose only), for
the same number of merges. The script prints the
training time of each (best of ``--repeats`` runs), their ratio, and the compression each achieves on
the training corpus (UTF-8 bytes per token), and splits the reference's time into pre-tokenization,
counting (building the ``PairCounter``) and merging. It also times the straightforward trainer that recounts
every pair after every merge, for a smaller number of merges, to show what the incremental pair-count
update in the reference solution is worth.

The reference implementation is not copied here: it is read from the solution notebook
``solutions/02_tokenization/tokenization.py`` (its solution cells, with the nbgrader markers
dropped), so the notebook stays the single source of truth.

Usage::

    python benchmarks/bpe_benchmark.py [--merges 5000] [--naive-merges 300] [--repeats 3]
"""

from __future__ import annotations

import argparse
import ast
import collections
import sys
import time
from pathlib import Path

from autograder.course.conventions import strip_solution_markers
from autograder.course.solution_source import text_to_notebook

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "solutions" / "02_tokenization" / "tokenization.py"   # the notebook as text
CELLS = ("split_words", "count_pairs", "merge", "PairCounter", "train_bpe", "encode", "decode")
KEEP = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef, ast.Assign)


def load_reference(notebook: Path = NOTEBOOK) -> dict:
    """Execute the definitions of the notebook's BPE cells; return the resulting namespace.

    Only imports, assignments and definitions are kept from each cell (demo lines such as prints are
    dropped); the lines ``### BEGIN SOLUTION`` / ``### END SOLUTION`` are removed.
    """
    nb = text_to_notebook(Path(notebook).read_text(encoding="utf-8"))
    by_id = {cell.metadata.get("nbgrader", {}).get("grade_id"): cell for cell in nb.cells if cell.cell_type == "code"}
    missing = [grade_id for grade_id in CELLS if grade_id not in by_id]
    if missing:
        raise SystemExit(f"{notebook} has no cell with grade_id {missing}")
    namespace: dict = {"__name__": "bpe_reference"}
    for grade_id in CELLS:
        source = strip_solution_markers(by_id[grade_id].source)
        tree = ast.parse(source)
        tree.body = [node for node in tree.body if isinstance(node, KEEP)]
        exec(compile(tree, f"<{notebook.name}:{grade_id}>", "exec"), namespace)
    return namespace


def train_recount(ref: dict, text: str, num_merges: int) -> list:
    """The straightforward trainer (same tie rule): a full recount of all pairs before every merge."""
    words = collections.Counter(tuple(w.encode("utf-8")) for w in ref["split_words"](text))
    merges = []
    for k in range(num_merges):
        counts = ref["count_pairs"](words)
        if not counts:
            break
        pair = min(counts, key=lambda p: (-counts[p], p))
        words = {tuple(ref["merge"](list(w), pair, 256 + k)): n for w, n in words.items()}
        merges.append(pair)
    return merges


def train_hf(text: str, num_merges: int):
    """HF tokenizers with GPT-2 style byte-level pre-tokenization, all 256 bytes, no special tokens."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    trainer = trainers.BpeTrainer(vocab_size=256 + num_merges, min_frequency=0, special_tokens=[],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tokenizer.train_from_iterator([text], trainer=trainer)
    return tokenizer


def hf_bytes(piece: str) -> bytes:
    """Bytes of a string in HF's ByteLevel alphabet (GPT-2's table that shows each byte as a printable character)."""
    printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
    if not hasattr(hf_bytes, "table"):
        hf_bytes.table = {chr(b): b for b in printable}
        hf_bytes.table.update({chr(256 + i): b for i, b in enumerate(b for b in range(256) if b not in printable)})
    return bytes(hf_bytes.table[ch] for ch in piece)


def hf_merges_as_bytes(tokenizer) -> list:
    """HF's merges as pairs of byte strings."""
    import json

    merges = json.loads(tokenizer.to_str())["model"]["merges"]
    merges = [m.split(" ") if isinstance(m, str) else m for m in merges]
    return [tuple(hf_bytes(part) for part in m) for m in merges]


def best_of(repeats: int, function, *args):
    """(best wall-clock seconds, result of the last call)."""
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function(*args)
        best = min(best, time.perf_counter() - start)
    return best, result


def time_split(ref: dict, text: str, total_seconds: float, repeats: int) -> tuple:
    """(pre-tokenization, counting, merging) seconds of the reference trainer.

    Pre-tokenization: split_words and the Counter of distinct words as UTF-8 byte tuples; counting:
    building the PairCounter (the one full count and its index); merging: the rest of train_bpe's
    best time (picking the top pair and the incremental updates of every merge)."""
    def pre_tokenize():
        return collections.Counter(tuple(word.encode("utf-8")) for word in ref["split_words"](text))

    pre_seconds, words = best_of(repeats, pre_tokenize)
    count_seconds, _ = best_of(repeats, ref["PairCounter"], words)
    return pre_seconds, count_seconds, max(0.0, total_seconds - pre_seconds - count_seconds)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--merges", type=int, default=5000, help="merges for the reference and HF (default 5000)")
    parser.add_argument("--naive-merges", type=int, default=300,
                        help="merges for the recounting trainer (default 300; 0 skips it)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per trainer; the best is reported")
    args = parser.parse_args(argv)

    sys.path.insert(0, str(ROOT))
    from utils import corpus

    import tokenizers

    text = corpus.python_docs()
    n_bytes = len(text.encode("utf-8"))
    ref = load_reference()
    ours_words = ref["split_words"](text)
    print(f"corpus: Python documentation, {n_bytes:,} bytes, {len(ours_words):,} words "
          f"({len(set(ours_words)):,} distinct); Python {sys.version.split()[0]}, tokenizers {tokenizers.__version__}")

    ours_seconds, (merges, vocab) = best_of(args.repeats, ref["train_bpe"], text, args.merges)
    hf_seconds, hf = best_of(args.repeats, train_hf, text, args.merges)
    ours_tokens = len(ref["encode"](text, merges))
    hf_tokens = len(hf.encode(text).ids)
    assert ref["decode"](ref["encode"](text, merges), vocab) == text, "reference round trip failed"

    ours_pairs = [(vocab[a], vocab[b]) for a, b in merges]
    hf_pairs = hf_merges_as_bytes(hf)
    agree = next((k for k, (x, y) in enumerate(zip(ours_pairs, hf_pairs)) if x != y), min(len(ours_pairs), len(hf_pairs)))
    same_words = [hf_bytes(p) for p, _ in hf.pre_tokenizer.pre_tokenize_str(text)] == [w.encode("utf-8") for w in ours_words]
    tie_note = ""
    if agree < min(len(ours_pairs), len(hf_pairs)):
        # Counts of both candidates at the first difference (the corpus after the shared merges).
        id_of = {token: i for i, token in vocab.items() if i < 256 + agree}
        words = collections.Counter(tuple(ref["encode"](w, merges[:agree])) for w in ours_words)
        counts = ref["count_pairs"](words)
        ours_n = counts.get(merges[agree], 0)
        hf_n = counts.get(tuple(id_of[part] for part in hf_pairs[agree]), 0)
        tie_note = (f"; there the reference merges {ours_pairs[agree]} and HF {hf_pairs[agree]}, "
                    f"counts {ours_n} and {hf_n}" + (" (a tie)" if ours_n == hf_n else ""))

    rows = [("reference train_bpe (incremental, Python)", len(merges), ours_seconds, n_bytes / ours_tokens),
            ("HF tokenizers BpeTrainer (Rust)", len(hf_pairs), hf_seconds, n_bytes / hf_tokens)]
    if args.naive_merges:
        naive_seconds, _ = best_of(1, train_recount, ref, text, args.naive_merges)
        small_seconds, _ = best_of(args.repeats, ref["train_bpe"], text, args.naive_merges)
        rows.append(("recount after every merge (Python)", args.naive_merges, naive_seconds, None))
        rows.append(("reference train_bpe, same merges", args.naive_merges, small_seconds, None))

    print()
    print(f"{'trainer':44s} {'merges':>7s} {'seconds':>9s} {'bytes/token':>12s}")
    for name, n, seconds, compression in rows:
        shown = f"{compression:12.3f}" if compression else f"{'':12s}"
        print(f"{name:44s} {n:7d} {seconds:9.3f} {shown}")
    print()
    print(f"reference / HF time ratio at {args.merges} merges: {ours_seconds / hf_seconds:.2f}x")
    pre_seconds, count_seconds, merge_seconds = time_split(ref, text, ours_seconds, args.repeats)
    print(f"reference split: pre-tokenization {pre_seconds:.3f} s, counting (PairCounter) {count_seconds:.3f} s, "
          f"merging {merge_seconds:.3f} s (top-pair selection and updates, {args.merges} merges)")
    if args.naive_merges:
        per_merge = naive_seconds / args.naive_merges
        print(f"recount / incremental time ratio at {args.naive_merges} merges: {naive_seconds / small_seconds:.1f}x "
              f"(recount: {1e3 * per_merge:.1f} ms per merge, about {per_merge * args.merges:.0f} s for "
              f"{args.merges} merges if extrapolated linearly)")
    print(f"pre-tokenization identical to HF's GPT-2 regex on this corpus: {'yes' if same_words else 'no'}")
    print(f"identical merges before the first difference: {agree} of {min(len(ours_pairs), len(hf_pairs))}{tie_note}")


if __name__ == "__main__":
    main()
