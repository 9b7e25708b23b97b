"""benchmarks/compare_nanogpt.py: nanoGPT gets the course's recipe and data, and its log is read right.

The comparison itself needs nanoGPT's code (not part of this repository) and a quiet machine: it is run
by hand (README, "Training speed"), never timed in a test."""

from __future__ import annotations

import importlib.util
import math
import pickle
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"benchmark_{name}", ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module   # dataclasses look their module up while the file runs
    spec.loader.exec_module(module)
    return module


compare, train_gpt = _load("compare_nanogpt"), _load("train_gpt")


def test_nanogpt_is_given_the_reference_recipe_of_train_gpt():
    reference = train_gpt.PRESETS["reference"]
    same_name = ("batch_size", "block_size", "n_layer", "n_head", "n_embd", "dropout", "bias", "min_lr",
                 "beta1", "beta2", "weight_decay", "warmup_iters", "grad_clip", "eval_iters", "dtype")
    for name in same_name:
        assert compare.RECIPE[name] == getattr(reference, name), name
    assert compare.RECIPE["learning_rate"] == reference.lr
    assert compare.RECIPE["gradient_accumulation_steps"] == 1   # nanoGPT's default is 40 micro-batches a step
    command = compare.nanogpt_command(300, Path("/tmp/out"), False)
    assert "--max_iters=300" in command and "--lr_decay_iters=300" in command and "--compile=False" in command
    assert f"--dataset={compare.DATASET}" in command and "--device=cpu" in command


def test_the_data_is_the_course_text_as_nanogpt_reads_it(tmp_path):
    vocabulary = compare.write_nanogpt_data(tmp_path)
    meta = pickle.loads((tmp_path / "meta.pkl").read_bytes())
    assert meta["vocab_size"] == vocabulary
    train_ids, val_ids, chars = train_gpt.load_corpus("python_docs")
    assert [meta["itos"][i] for i in range(vocabulary)] == chars
    for name, ids in (("train", train_ids), ("val", val_ids)):
        written = np.fromfile(tmp_path / f"{name}.bin", dtype=np.uint16)
        assert np.array_equal(written.astype(np.int64), ids.numpy()), name


def test_tokens_per_second_leaves_out_warm_up_and_evaluation_steps():
    lines = ["step 0: train loss 4.6000, val loss 4.6000"]
    for step in range(21):
        milliseconds = 1000.0 if step in (0, 20) else (500.0 if step < compare.SKIP else 48.0)
        lines.append(f"iter {step}: loss {4.0 - step / 10:.4f}, time {milliseconds:.2f}ms, mfu -100.00%")
        if step == 19:
            lines.append("step 20: train loss 2.1000, val loss 2.2500")
    result = compare.read_nanogpt_log("\n".join(lines), max_iters=20, tokens_per_step=768)
    assert result["timed_steps"] == 10                       # steps 10..19
    assert math.isclose(result["tokens_per_second"], 768 / 0.048)
    assert math.isclose(result["warmup_seconds"], 9 * 0.5)   # steps 1..9 (step 0 holds an evaluation)
    assert (result["train_loss"], result["val_loss"]) == (2.1, 2.25)


def _run(tokens_per_second: float) -> dict:
    return {"tokens_per_second": tokens_per_second, "val_loss": 1.5, "train_loss": 1.4, "warmup_seconds": 1.0,
            "timed_steps": 10}


def test_a_compiled_course_is_compared_with_nanogpt_compiled_and_eager_each_labelled(capsys):
    rounds = [{"nanogpt": {"eager": _run(100.0), "compiled": _run(125.0)},
               "course": {"eager": _run(90.0), "compiled": _run(150.0)}, "load": 1.0},
              {"nanogpt": {"eager": _run(200.0), "compiled": _run(250.0)},
               "course": {"eager": _run(200.0), "compiled": _run(250.0)}, "load": 1.0},
              {"nanogpt": {"eager": _run(100.0), "compiled": _run(100.0)},
               "course": {"eager": _run(80.0), "compiled": _run(130.0)}, "load": 1.0}]
    summary = compare.summarise(rounds, "abc1234", 2)
    labels = {label: (course, nano) for label, course, nano in compare.COMPARISONS}
    medians = summary["median_ratios"]
    assert set(medians) == set(labels)
    by_modes = {labels[label]: median for label, median in medians.items()}
    assert math.isclose(by_modes[("eager", "eager")], 0.9)          # 0.9, 1.0, 0.8
    assert math.isclose(by_modes[("compiled", "compiled")], 1.2)    # 1.2, 1.0, 1.3
    assert math.isclose(by_modes[("compiled", "eager")], 1.3)       # 1.5, 1.25, 1.3
    printed = capsys.readouterr().out
    for label in labels:
        assert label in printed
    assert "not like for like" in printed


def test_without_compiled_runs_only_the_eager_comparison_is_printed(capsys):
    rounds = [{"nanogpt": {"eager": _run(100.0)}, "course": {"eager": _run(110.0)}, "load": 1.0}]
    summary = compare.summarise(rounds, "abc1234", 2)
    (label, median), = summary["median_ratios"].items()
    assert label == compare.COMPARISONS[0][0] and math.isclose(median, 1.1)
    assert "compiled" not in capsys.readouterr().out


def test_a_load_above_the_core_count_is_flagged_as_making_the_ratios_unreliable(capsys, monkeypatch):
    monkeypatch.setattr(compare.os, "cpu_count", lambda: 2)
    quiet = [{"nanogpt": {"eager": _run(100.0)}, "course": {"eager": _run(110.0)}, "load": 1.5}]
    compare.summarise(quiet, "abc1234", 2)
    assert "not reliable" not in capsys.readouterr().out
    busy = quiet + [{"nanogpt": {"eager": _run(100.0)}, "course": {"eager": _run(300.0)}, "load": 8.5}]
    compare.summarise(busy, "abc1234", 2)
    assert "WARNING: load average up to 8.5 on 2 cores" in capsys.readouterr().out
