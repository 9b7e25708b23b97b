"""benchmarks/step_cpu_time.py: the speed ratios it prints are nanoGPT's step time over the course's, per
round, for every course run against every nanoGPT run, and the floor bound is nanoGPT's step over the floor.

The measurement itself needs nanoGPT's code (not part of this repository): it is run by hand (README,
"Training speed"), never timed in a test."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"benchmark_{name}", ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


step_cpu_time = _load("step_cpu_time")


def test_ratios_are_nanogpt_time_over_course_time_round_by_round(capsys):
    times = {"nanoGPT eager": [(0.070, 0.30), (0.072, 0.50), (0.080, 0.40)],
             "course eager": [(0.070, 0.20), (0.060, 0.50), (0.064, 0.80)],
             "nanoGPT compiled": [(0.070, 0.30), (0.070, 0.30), (0.070, 0.30)],
             "course compiled": [(0.056, 0.30), (0.056, 0.30), (0.056, 0.30)]}
    summary = step_cpu_time.summarise(times, floor=0.036, threads=1)
    eager = summary["course eager vs nanoGPT eager"]
    assert [round(r, 6) for r in eager["cpu"]] == [1.0, 1.2, 1.25]
    assert [round(r, 6) for r in eager["wall"]] == [1.5, 1.0, 0.5]
    assert [round(r, 6) for r in summary["course compiled vs nanoGPT compiled"]["cpu"]] == [1.25] * 3
    assert set(summary) == {"floor_ms", "course eager vs nanoGPT eager", "course eager vs nanoGPT compiled",
                            "course compiled vs nanoGPT eager", "course compiled vs nanoGPT compiled"}
    assert math.isclose(summary["floor_ms"], 36.0)
    printed = capsys.readouterr().out
    assert "course eager / nanoGPT eager speed: CPU time median 1.2 (range 1-1.25)x" in printed
    assert "at most 2.00x nanoGPT eager" in printed    # median nanoGPT eager step 72 ms over a 36 ms floor


def test_on_several_threads_the_floor_is_set_against_the_wall_time_of_nanogpt_step(capsys):
    # CPU time on two threads counts both threads (and OpenMP's spinning): the bound uses wall time there.
    times = {"nanoGPT eager": [(0.080, 0.030), (0.090, 0.050), (0.085, 0.040)],
             "course eager": [(0.080, 0.030), (0.090, 0.050), (0.085, 0.040)]}
    step_cpu_time.summarise(times, floor=0.020, threads=2)
    printed = capsys.readouterr().out
    assert "GEMM floor 20.0 ms wall per step (50 % of nanoGPT's eager step, 40.0 ms)" in printed
    assert "at most 2.00x nanoGPT eager" in printed
