"""The GPU configuration of a notebook runs in CI, on the CPU: with COURSE_GPU_CONFIG_ON_CPU=1 the
`if ON_GPU:` branches execute the same code (bfloat16 autocast, the grad scaler, the memory report)
with a few small steps, so a typo in a branch no maintainer can run fails the suite."""

from __future__ import annotations

import copy
import json
import math

import nbformat
import pytest
from nbclient import NotebookClient

from autograder.course import conventions
from utils import precision
from autograder.course.solution_source import load_solution

pytestmark = pytest.mark.slow

PROBE_MARK = "GPU-CONFIGURATION-PROBE "

# Read in the notebook's kernel after every cell has run: what the GPU branch did.
NOTEBOOK_08_PROBE = """
import json
import torch

with PRECISION.autocast():
    logits = gpt(torch.zeros(1, 8, dtype=torch.long, device=device))
print("GPU-CONFIGURATION-PROBE " + json.dumps({
    "on_gpu": ON_GPU, "precision": str(PRECISION.dtype), "logits": str(logits.dtype), "reason": PRECISION.reason,
    "scaler": [type(r.scaler).__name__ for r in [run, *results.values()]], "steps": [run.step, RUN["max_steps"]],
    "train": run.history["train"], "val": run.history["val"], "peak_bytes": peak_bytes,
    "book": {name: r.history["train"] for name, r in results.items()}}))
"""


def _execute_with_probe(name: str, probe: str, monkeypatch) -> tuple[dict, list[str], str]:
    """Run the solution notebook ``name`` with the GPU configuration simulated; (probe, cell errors, text output)."""
    monkeypatch.setenv(precision.GPU_CONFIG_ON_CPU, "1")
    monkeypatch.setenv("COURSE_OFFLINE", "1")
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    assignment = conventions.assignment(name)
    nb = copy.deepcopy(load_solution(assignment))
    nb.cells.append(nbformat.v4.new_code_cell(probe))
    client = NotebookClient(nb, timeout=1200, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(assignment.source_path.parent)}})
    client.execute()
    errors, texts = [], []
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                errors.append(f"cell {index}: {output.get('ename')}: {output.get('evalue')}")
            texts.append(output.get("text", ""))
    text = "".join(texts)
    lines = [line for line in text.splitlines() if line.startswith(PROBE_MARK)]
    assert lines, f"the probe printed nothing; errors: {errors}"
    return json.loads(lines[-1][len(PROBE_MARK):]), errors, text


def _falls(losses: list[float]) -> bool:
    """Finite, and the mean of the last three steps is below the first step's loss."""
    return all(math.isfinite(x) for x in losses) and sum(losses[-3:]) / 3 < losses[0]


def test_notebook_08_gpu_configuration_runs_on_the_cpu_in_bfloat16(monkeypatch):
    probe, errors, text = _execute_with_probe("08_train_gpt", NOTEBOOK_08_PROBE, monkeypatch)
    assert not errors, errors
    assert probe["on_gpu"] and "(GPU configuration)" in text
    assert probe["precision"] == probe["logits"] == "torch.bfloat16", probe
    assert "bfloat16 autocast on the CPU" in text and "peak memory" in text
    assert probe["scaler"] == ["GradScaler"] * 3
    steps, smoke_steps = probe["steps"]
    assert steps == smoke_steps <= 20, probe["steps"]           # a few steps, not the GPU's 3000
    assert len(probe["train"]) == steps and probe["val"] and all(math.isfinite(v) for v in probe["val"])
    assert _falls(probe["train"]) and probe["train"][-1] < probe["train"][0] - 0.3, probe["train"]
    for name, losses in probe["book"].items():
        assert len(losses) == steps and _falls(losses), (name, losses)
    assert probe["peak_bytes"] > 0
