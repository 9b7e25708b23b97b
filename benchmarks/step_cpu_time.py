"""One training step of the course against one of nanoGPT, in one process, by CPU time: what a shared machine allows.

    python benchmarks/step_cpu_time.py --nanogpt PATH_TO_A_NANOGPT_CHECKOUT [--threads 1] [--rounds 7] [--steps 20]
                                       [--compile]

``compare_nanogpt.py`` is the comparison to quote: both scripts whole, each with its own loop, by wall time.
On a machine that other work keeps busy (load average above its core count) wall times swing several-fold
within minutes and a two-thread OpenMP step can stall whenever one of its threads is descheduled, so its
ratios are noise. This script measures what such a machine can still measure: the *CPU time* one step
costs (``time.process_time``), with PyTorch on one thread (the default), where the time a process spends
descheduled is not counted.

Both steps are built here from their own parts: nanoGPT's ``model.py`` imported unmodified from the checkout
(``GPT``, ``GPTConfig``, its ``configure_optimizers`` for the CPU: foreach AdamW) and its ``train.py`` step
(``logits, loss = model(X, Y)``, ``backward``, ``clip_grad_norm_(1.0)``, ``step``, ``zero_grad(set_to_none=True)``);
the course's ``GPT``, ``configure_optimizer``, ``lm_loss`` from ``train_gpt.py``, in its loop's order. The
same recipe (``compare_nanogpt.RECIPE``), the same batches, float32. The runs alternate, ``--steps`` steps each,
``--rounds`` times; each round's figure is the median step, and the summary prints per-round ratios, their
median and range, for CPU and for wall time.

It ends with the *GEMM floor* (``train_gpt.matmul_floor_seconds``; in CPU time on one thread, wall time on more): the step's matrix products,
which both models compute alike, timed alone. nanoGPT's step divided by that floor is the most any change
outside the products could gain over nanoGPT.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import train_gpt  # noqa: E402
from compare_nanogpt import RECIPE  # noqa: E402


def nanogpt_step(checkout: Path, vocabulary: int, compile_: bool):
    """nanoGPT's training step, from its unmodified ``model.py``, in its ``train.py``'s order, and its parameter count."""
    spec = importlib.util.spec_from_file_location("nanogpt_model", checkout / "model.py")
    nano = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(nano)
    torch.manual_seed(1337)
    model = nano.GPT(nano.GPTConfig(block_size=RECIPE["block_size"], vocab_size=vocabulary, n_layer=RECIPE["n_layer"],
                                    n_head=RECIPE["n_head"], n_embd=RECIPE["n_embd"], dropout=RECIPE["dropout"],
                                    bias=RECIPE["bias"]))
    optimizer = model.configure_optimizers(RECIPE["weight_decay"], RECIPE["learning_rate"],
                                           (RECIPE["beta1"], RECIPE["beta2"]), "cpu")
    forward = torch.compile(model) if compile_ else model

    def step(x, y, lr):
        for group in optimizer.param_groups:
            group["lr"] = lr
        _, loss = forward(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), RECIPE["grad_clip"])
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss
    return step, sum(p.numel() for p in model.parameters())


def course_step(cfg: train_gpt.Config, vocabulary: int, compile_: bool):
    """The course's training step, as ``train_gpt.main`` runs it (float32, no scaler, one process), and its parameter
    count (nanoGPT's plus the 1,152 shifts of its nine LayerNorms, which nanoGPT leaves out with ``bias=False``)."""
    torch.manual_seed(cfg.seed)
    model = train_gpt.GPT(cfg, vocabulary)
    optimizer = train_gpt.configure_optimizer(model, cfg, torch.device("cpu"))
    forward = torch.compile(model) if compile_ else model

    def step(x, y, lr):
        for group in optimizer.param_groups:
            group["lr"] = lr
        loss = train_gpt.lm_loss(forward(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        optimizer.step()
        return loss
    return step, sum(p.numel() for p in model.parameters())


def time_round(step, batches) -> tuple[float, float]:
    """The median CPU seconds and the median wall seconds of one step over ``batches``."""
    cpu, wall = [], []
    for index, (x, y) in enumerate(batches):
        wall_start, cpu_start = time.perf_counter(), time.process_time()
        step(x, y, RECIPE["learning_rate"] * (1 - index / 1000))
        cpu.append(time.process_time() - cpu_start)
        wall.append(time.perf_counter() - wall_start)
    return statistics.median(cpu), statistics.median(wall)


def spread(values: list[float]) -> str:
    return f"median {statistics.median(values):.3g} (range {min(values):.3g}-{max(values):.3g})"


def summarise(times: dict[str, list[tuple[float, float]]], floor: float, threads: int) -> dict:
    """Print per-run medians and the course / nanoGPT speed ratios (nanoGPT's step time over the course's)."""
    print(f"\nmedian step per round, {threads} thread(s), ms (CPU / wall): "
          + " | ".join(f"{name}: " + ", ".join(f"{1e3 * c:.1f}/{1e3 * w:.1f}" for c, w in rounds)
                       for name, rounds in times.items()))
    summary = {"floor_ms": 1e3 * floor}
    for name in times:
        if name.startswith("nanoGPT"):
            continue
        for base in (b for b in times if b.startswith("nanoGPT")):
            cpu = [n[0] / c[0] for n, c in zip(times[base], times[name])]
            wall = [n[1] / c[1] for n, c in zip(times[base], times[name])]
            summary[f"{name} vs {base}"] = {"cpu": cpu, "wall": wall}
            print(f"{name} / {base} speed: CPU time {spread(cpu)}x, wall time {spread(wall)}x")
    # One thread: CPU time against CPU time. More threads: CPU time counts every thread (and OpenMP's spinning),
    # so the floor and the step are both wall time.
    clock = 0 if threads == 1 else 1
    nano = statistics.median(t[clock] for t in times["nanoGPT eager"])
    print(f"GEMM floor {1e3 * floor:.1f} ms {('CPU', 'wall')[clock]} per step ({100 * floor / nano:.0f} % of nanoGPT's eager step, "
          f"{1e3 * nano:.1f} ms): with every operation but the products free, the course could reach at most "
          f"{nano / floor:.2f}x nanoGPT eager here", flush=True)
    return summary


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nanogpt", type=Path, required=True, help="a nanoGPT checkout (its model.py is imported)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--compile", action="store_true", help="add compiled runs of both (compile time printed apart)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    cfg = train_gpt.Config()
    train_ids, _, chars = train_gpt.load_corpus(cfg.corpus)
    generator = torch.Generator().manual_seed(cfg.seed + 1)
    batches = [train_gpt.get_batch(train_ids, cfg.block_size, cfg.batch_size, generator) for _ in range(args.steps)]
    steps = {}
    for compile_ in (False, True) if args.compile else (False,):
        mode = "compiled" if compile_ else "eager"
        for name, build in ((f"nanoGPT {mode}", nanogpt_step), (f"course {mode}", course_step)):
            started = time.perf_counter()
            steps[name], size = build(args.nanogpt if build is nanogpt_step else cfg, len(chars), compile_)
            for x, y in batches[:3]:   # warm-up, and torch.compile's compiling
                steps[name](x, y, RECIPE["learning_rate"])
            print(f"{name}: {size:,} parameters; building it and 3 warm-up steps (compiling included) "
                  f"{time.perf_counter() - started:.1f} s wall", flush=True)
    times = {name: [] for name in steps}
    for index in range(args.rounds):
        for name, step in steps.items():
            times[name].append(time_round(step, batches))
        print(f"round {index + 1}: " + ", ".join(f"{name} {1e3 * t[-1][0]:.1f} ms CPU" for name, t in times.items())
              + f" | load {os.getloadavg()[0]:.1f}", flush=True)
    model = train_gpt.GPT(cfg, len(chars))   # the shapes of the course's products (nanoGPT's are the same)
    floor = train_gpt.matmul_floor_seconds(model, cfg, cfg.batch_size, torch.device("cpu"), torch.float32,
                                           clock=time.process_time if args.threads == 1 else time.perf_counter)
    return summarise(times, floor, args.threads)


if __name__ == "__main__":
    main()
