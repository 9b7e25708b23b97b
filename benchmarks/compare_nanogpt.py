"""The course's training script against nanoGPT's, side by side, on the same recipe and the same machine.

    python benchmarks/compare_nanogpt.py --nanogpt PATH_TO_A_NANOGPT_CHECKOUT [--rounds 3] [--max-iters 2000]

Both train the reference recipe of ``benchmarks/train_gpt.py`` (4 layers, 4 heads, width 128, context 64,
batch 12, no dropout, no biases, AdamW 1e-3 (0.9, 0.99), weight decay 0.1, 100 warm-up steps, cosine to
1e-4, clipping 1.0, float32) on the same characters (the Python help topics, split 90/10): nanoGPT with
its own ``model.py`` and ``train.py``, unmodified, given the data as the ``train.bin``/``val.bin``/
``meta.pkl`` its ``train.py`` reads and the recipe on its command line; the course with
``benchmarks/train_gpt.py --config reference``. The runs alternate (nanoGPT, course, nanoGPT, ...), each in
a fresh process with the same thread count, so drift on a shared machine hits both alike; the summary
prints each round's training tokens/s (steps after the 10th, evaluation steps left out), the ratio per
round and its median, and the validation losses, and warns when the load average passed the core count (other
work shared the machine: wall-time ratios are then noise, and ``step_cpu_time.py`` compares CPU time instead).

``--compile`` adds a compiled run of each to every round (nanoGPT eager, course eager, nanoGPT compiled, course
compiled; their compile time is in the first steps, left out of tokens/s, and printed apart) and prints three
labelled comparisons: eager against eager (nanoGPT's documented CPU recipe is ``--compile=False``), compiled
against compiled, and the course compiled against nanoGPT eager, which is not like for like and says so.
Without ``--nanogpt`` the script clones nanoGPT from GitHub when online. No code of nanoGPT is part of this
repository.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from train_gpt import load_corpus  # noqa: E402  (the course's own data: one reading of the corpus)

NANOGPT_URL = "https://github.com/karpathy/nanoGPT"
SKIP = 10                 # steps left out of tokens/s at the start (both scripts), as train_gpt.py does
DATASET = "course_python_docs"

# The reference recipe, spelled in nanoGPT's configuration names (its train.py reads --name=value).
RECIPE = {"batch_size": 12, "block_size": 64, "n_layer": 4, "n_head": 4, "n_embd": 128, "dropout": 0.0,
          "bias": False, "learning_rate": 1e-3, "min_lr": 1e-4, "beta1": 0.9, "beta2": 0.99,
          "weight_decay": 0.1, "warmup_iters": 100, "grad_clip": 1.0, "gradient_accumulation_steps": 1,
          "eval_iters": 20, "log_interval": 1, "always_save_checkpoint": False, "device": "cpu",
          "dtype": "float32"}

STEP_LINE = re.compile(r"^iter (\d+): loss [-\d.naif]+, time ([\d.]+)ms", re.MULTILINE)
EVAL_LINE = re.compile(r"^step (\d+): train loss ([\d.]+), val loss ([\d.]+)", re.MULTILINE)


def write_nanogpt_data(data_dir: Path) -> int:
    """Write the course's character data as nanoGPT's train.bin, val.bin (uint16 ids) and meta.pkl; return V.

    The same text, split and vocabulary as the course's run: ``train_gpt.load_corpus("python_docs")``.
    """
    train_ids, val_ids, chars = load_corpus("python_docs")
    data_dir.mkdir(parents=True, exist_ok=True)
    for name, ids in (("train", train_ids), ("val", val_ids)):
        ids.numpy().astype(np.uint16).tofile(data_dir / f"{name}.bin")
    with open(data_dir / "meta.pkl", "wb") as handle:
        pickle.dump({"vocab_size": len(chars), "itos": dict(enumerate(chars)),
                     "stoi": {ch: i for i, ch in enumerate(chars)}}, handle)
    return len(chars)


def nanogpt_command(max_iters: int, out_dir: Path, compile_: bool) -> list[str]:
    settings = dict(RECIPE, dataset=DATASET, out_dir=str(out_dir), max_iters=max_iters,
                    lr_decay_iters=max_iters, eval_interval=max_iters, compile=compile_)
    return [sys.executable, "train.py"] + [f"--{key}={value}" for key, value in settings.items()]


def read_nanogpt_log(log: str, max_iters: int, tokens_per_step: int) -> dict:
    """Training tokens/s from nanoGPT's per-step lines, and its final losses.

    Each ``iter N: ... time T ms`` is one step's wall time. Steps 0 and ``max_iters`` are left out (their
    time includes an evaluation), as are the first ``SKIP`` steps (warm-up, compiling)."""
    times = {int(step): float(ms) / 1e3 for step, ms in STEP_LINE.findall(log)}
    if not times:
        raise ValueError("no 'iter N: loss ..., time ...ms' lines in nanoGPT's output:\n" + log[-2000:])
    steady = [seconds for step, seconds in times.items() if SKIP <= step < max_iters]
    evaluations = {int(step): (float(train), float(val)) for step, train, val in EVAL_LINE.findall(log)}
    final = evaluations.get(max_iters, (float("nan"), float("nan")))
    return {"tokens_per_second": tokens_per_step * len(steady) / sum(steady), "timed_steps": len(steady),
            "warmup_seconds": sum(seconds for step, seconds in times.items() if 0 < step < SKIP),
            "train_loss": final[0], "val_loss": final[1]}


def run_nanogpt(workdir: Path, max_iters: int, compile_: bool, env: dict) -> dict:
    done = subprocess.run(nanogpt_command(max_iters, workdir / "out", compile_), cwd=workdir, env=env,
                          capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"nanoGPT failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return read_nanogpt_log(done.stdout, max_iters, RECIPE["batch_size"] * RECIPE["block_size"])


def run_course(max_iters: int, compile_: bool, env: dict, threads: int, scratch: Path) -> dict:
    out = scratch / "course.json"
    command = [sys.executable, str(ROOT / "benchmarks" / "train_gpt.py"), "--config", "reference", "--quiet",
               "--max-iters", str(max_iters), "--lr-decay-iters", str(max_iters), "--threads", str(threads),
               "--compile", str(compile_), "--json", str(out)]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"train_gpt.py failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    result = json.loads(out.read_text())
    return {key: result[key] for key in ("tokens_per_second", "timed_steps", "warmup_seconds", "train_loss", "val_loss")}


def prepare_nanogpt(source: Path | None, workdir: Path) -> str:
    """Copy nanoGPT's three files (``model.py``, ``train.py``, ``configurator.py``) next to the data; return
    the revision used. Clones from GitHub when no checkout is given."""
    if source is None:
        source = workdir / "checkout"
        cloned = subprocess.run(["git", "clone", "--quiet", "--depth", "1", NANOGPT_URL, str(source)],
                                capture_output=True, text=True)
        if cloned.returncode:
            raise SystemExit(f"could not clone {NANOGPT_URL} (offline?): pass --nanogpt PATH to a checkout\n"
                             + cloned.stderr[-1000:])
    for name in ("model.py", "train.py", "configurator.py"):
        if not (source / name).is_file():
            raise SystemExit(f"{source} is not a nanoGPT checkout: no {name}")
        shutil.copy(source / name, workdir / name)
    revision = subprocess.run(["git", "-C", str(source), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return revision.stdout.strip() or "unknown revision"


# The comparisons a summary prints: (label, course run, nanoGPT run); a run is "eager" or "compiled".
COMPARISONS = (
    ("both eager (nanoGPT's documented CPU recipe, --compile=False)", "eager", "eager"),
    ("both compiled (torch.compile in each)", "compiled", "compiled"),
    ("course compiled against nanoGPT eager (not like for like: only the course compiles)", "compiled", "eager"),
)


def ratios_of(rounds: list[dict]) -> dict[str, list[float]]:
    """Per comparison whose runs every round holds, the course / nanoGPT tokens/s of each round."""
    found = {}
    for label, course_mode, nano_mode in COMPARISONS:
        if all(course_mode in r["course"] and nano_mode in r["nanogpt"] for r in rounds):
            found[label] = [r["course"][course_mode]["tokens_per_second"] / r["nanogpt"][nano_mode]["tokens_per_second"]
                            for r in rounds]
    return found


def summarise(rounds: list[dict], revision: str, threads: int) -> dict:
    print(f"\nnanoGPT {revision} against benchmarks/train_gpt.py, reference recipe, float32, {threads} thread(s):")
    print(f"{'round':>5} | {'run':>8} | {'nanoGPT tokens/s':>16} | {'course tokens/s':>15} | val loss nanoGPT / course | load")
    for index, r in enumerate(rounds, 1):
        for mode in r["course"]:
            nano, course = r["nanogpt"][mode], r["course"][mode]
            print(f"{index:>5} | {mode:>8} | {nano['tokens_per_second']:>16,.0f} | {course['tokens_per_second']:>15,.0f} | "
                  f"{nano['val_loss']:.3f} / {course['val_loss']:.3f} | {r['load']:.2f}")
    medians = {}
    for label, ratios in ratios_of(rounds).items():
        medians[label] = statistics.median(ratios)
        print(f"course / nanoGPT training tokens/s, {label}: median {medians[label]:.2f}x "
              f"(rounds: {', '.join(f'{x:.2f}' for x in ratios)})")
    busiest = max(r["load"] for r in rounds)
    if busiest > (os.cpu_count() or 1):
        print(f"WARNING: load average up to {busiest:.1f} on {os.cpu_count()} cores: other work shared the machine, "
              "so these wall-time ratios are not reliable; benchmarks/step_cpu_time.py compares CPU time per step")
    return {"rounds": rounds, "median_ratios": medians, "nanogpt_revision": revision}


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nanogpt", type=Path, default=None, help="a nanoGPT checkout (default: clone it)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-iters", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=2, help="CPU threads of both runs (OMP_NUM_THREADS)")
    parser.add_argument("--compile", action="store_true", help="add a compiled run of each to every round (compile time reported apart)")
    parser.add_argument("--json", type=Path, default=None, help="write every figure here")
    return parser.parse_args(argv)


def main(argv=None) -> dict:
    args = parse_args(argv)
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), PYTHONPATH=str(ROOT))
    with tempfile.TemporaryDirectory(prefix="compare-nanogpt-") as scratch:
        workdir = Path(scratch)
        revision = prepare_nanogpt(args.nanogpt, workdir)
        write_nanogpt_data(workdir / "data" / DATASET)
        rounds = []
        modes = ["eager", "compiled"] if args.compile else ["eager"]
        for index in range(args.rounds):
            this_round = {"nanogpt": {}, "course": {}}
            for mode in modes:   # alternating: nanoGPT, course, nanoGPT, course
                this_round["nanogpt"][mode] = run_nanogpt(workdir, args.max_iters, mode == "compiled", env)
                this_round["course"][mode] = run_course(args.max_iters, mode == "compiled", env, args.threads, workdir)
                nano, course = this_round["nanogpt"][mode], this_round["course"][mode]
                print(f"round {index + 1}, {mode}: nanoGPT {nano['tokens_per_second']:,.0f} tokens/s, "
                      f"course {course['tokens_per_second']:,.0f} tokens/s"
                      + (f" (compiling and warm-up: {nano['warmup_seconds']:.1f} s / {course['warmup_seconds']:.1f} s)"
                         if mode == "compiled" else ""), flush=True)
            rounds.append(dict(this_round, load=os.getloadavg()[0]))
    summary = summarise(rounds, revision, args.threads)
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1))
    return summary


if __name__ == "__main__":
    main()
