"""benchmarks/train_gpt.py: two CPU processes under DDP (gloo) train exactly like one process with the
same global batch; and utils.corpus.download_corpus: cache, checksum and the offline fallback (no network)."""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from utils import corpus

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "train_gpt.py"


def _run(command: list[str], tmp_path: Path, name: str) -> dict:
    out = tmp_path / f"{name}.json"
    env = dict(os.environ, OMP_NUM_THREADS="1", COURSE_OFFLINE="1", PYTHONPATH=str(ROOT))
    completed = subprocess.run(command + ["--config", "tiny", "--device", "cpu", "--quiet", "--json", str(out)],
                               cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, f"{name} failed:\n{completed.stdout[-2000:]}\n{completed.stderr[-4000:]}"
    return json.loads(out.read_text())


@pytest.mark.slow
def test_two_gloo_processes_match_one_process_with_the_same_global_batch(tmp_path):
    single = _run([sys.executable, str(SCRIPT)], tmp_path, "single")
    ddp = _run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", str(SCRIPT)],
               tmp_path, "ddp")
    assert single["processes"] == 1 and ddp["processes"] == 2
    assert len(single["loss_curve"]) == len(ddp["loss_curve"]) == single["config"]["max_iters"]
    # Each process averages the loss of its half of the batch; DDP averages the gradients, which is the
    # gradient of the mean over the whole batch: the same steps, up to float32 rounding.
    for step, (a, b) in enumerate(zip(single["loss_curve"], ddp["loss_curve"])):
        assert abs(a - b) < 1e-4, f"step {step}: one process {a:.6f}, two processes {b:.6f}"
    assert abs(single["parameter_checksum"] - ddp["parameter_checksum"]) < 1e-6 * abs(single["parameter_checksum"]) + 1e-4
    assert abs(single["val_loss"] - ddp["val_loss"]) < 1e-4
    for key in ("tokens_per_second", "mfu", "peak_memory_mb", "train_loss", "val_loss", "wall_seconds",
                "matmul_floor_ms", "tokens_per_second_ceiling"):
        assert single[key] == single[key] and single[key] > 0, key  # present, not NaN, positive


def test_profile_prints_where_the_time_went_and_keeps_those_steps_out_of_tokens_per_second(tmp_path):
    out = tmp_path / "profiled.json"
    env = dict(os.environ, OMP_NUM_THREADS="1", COURSE_OFFLINE="1", PYTHONPATH=str(ROOT))
    completed = subprocess.run([sys.executable, str(SCRIPT), "--config", "tiny", "--device", "cpu", "--max-iters", "12",
                                "--profile", "2", "--json", str(out)], cwd=ROOT, env=env, capture_output=True,
                               text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr[-4000:]
    assert "aten::mm" in completed.stdout and "Self CPU time total" in completed.stdout, completed.stdout[-3000:]
    assert "matmul floor" in completed.stdout
    result = json.loads(out.read_text())
    # 12 steps, the first 6 are warm-up, 2 are profiled: tokens/s comes from the other 4.
    assert result["timed_steps"] == 4, result["timed_steps"]
    assert result["tokens_per_second"] > 0 and result["tokens_per_second_ceiling"] > 0
    assert len(result["loss_curve"]) == 12


def test_dtype_auto_takes_the_gpu_precision_when_the_gpu_configuration_is_simulated(tmp_path):
    out = tmp_path / "simulated.json"
    env = dict(os.environ, OMP_NUM_THREADS="1", COURSE_OFFLINE="1", PYTHONPATH=str(ROOT), COURSE_GPU_CONFIG_ON_CPU="1")
    completed = subprocess.run([sys.executable, str(SCRIPT), "--config", "tiny", "--device", "cpu", "--dtype", "auto",
                                "--json", str(out)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr[-4000:]
    result = json.loads(out.read_text())
    assert result["config"]["dtype"] == "bfloat16" and "simulated" in result["precision"], result["precision"]
    assert "bfloat16 autocast on the CPU" in completed.stdout
    assert all(loss == loss for loss in result["loss_curve"]) and result["val_loss"] == result["val_loss"]
    assert result["peak_memory_mb"] > 0 and "resident" in result["peak_memory_source"]


@pytest.fixture
def fake_corpus(tmp_path, monkeypatch):
    """A corpus entry whose bytes we know, in a fresh cache folder."""
    content = "To be, or not to be.\n".encode()
    monkeypatch.setenv("COURSE_DATA_DIR", str(tmp_path / "cache"))
    monkeypatch.setitem(corpus.CORPORA, "fake", {"url": "https://example.invalid/fake.txt",
                                                 "sha256": hashlib.sha256(content).hexdigest(), "file": "fake.txt"})
    return content


def test_offline_download_falls_back_to_python_docs_with_a_message(fake_corpus, monkeypatch, capsys):
    monkeypatch.setenv("COURSE_OFFLINE", "1")
    text = corpus.download_corpus("fake")
    assert text == corpus.python_docs()
    assert "COURSE_OFFLINE=1" in capsys.readouterr().out
    with pytest.raises(corpus.CorpusUnavailable):
        corpus.download_corpus("fake", fallback=False)
    for name in ("tiny_shakespeare", "wikitext2"):  # the real entries take the same path offline
        assert corpus.download_corpus(name) == corpus.python_docs()
    with pytest.raises(ValueError):
        corpus.download_corpus("no_such_corpus")


def test_cached_file_is_used_offline_only_when_its_checksum_matches(fake_corpus, monkeypatch):
    monkeypatch.setenv("COURSE_OFFLINE", "1")
    path = corpus.cache_dir() / "fake.txt"
    path.parent.mkdir(parents=True)
    path.write_bytes(fake_corpus)
    assert corpus.download_corpus("fake", fallback=False) == fake_corpus.decode()
    path.write_bytes(b"truncated")
    with pytest.raises(corpus.CorpusUnavailable):
        corpus.download_corpus("fake", fallback=False)
    assert not path.exists(), "a damaged cached file is removed"


def test_download_is_checked_before_it_is_cached(fake_corpus, monkeypatch, capsys):
    monkeypatch.delenv("COURSE_OFFLINE", raising=False)
    served = {"bytes": b"something else entirely"}
    monkeypatch.setattr(corpus.urllib.request, "urlopen", lambda url, timeout: io.BytesIO(served["bytes"]))
    assert corpus.download_corpus("fake") == corpus.python_docs()
    assert "SHA-256" in capsys.readouterr().out
    assert not (corpus.cache_dir() / "fake.txt").exists()
    served["bytes"] = fake_corpus
    assert corpus.download_corpus("fake") == fake_corpus.decode()
    assert (corpus.cache_dir() / "fake.txt").read_bytes() == fake_corpus

    def unreachable(url, timeout):
        raise corpus.urllib.error.URLError("no route to host")

    monkeypatch.setattr(corpus.urllib.request, "urlopen", unreachable)
    (corpus.cache_dir() / "fake.txt").unlink()
    assert corpus.download_corpus("fake") == corpus.python_docs()
    assert "no route to host" in capsys.readouterr().out


def test_tiny_shakespeare_never_returns_a_cache_that_fails_its_checksum(monkeypatch, tmp_path, capsys):
    """``tiny_shakespeare()`` shares ``download_corpus``'s checked path: a truncated cache is not text."""
    monkeypatch.setenv("COURSE_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("COURSE_OFFLINE", "1")
    cached = tmp_path / corpus.CORPORA["tiny_shakespeare"]["file"]
    cached.write_text("First Citizen:\nBefore we proceed any further, hear me spe")
    assert corpus.tiny_shakespeare() == corpus.python_docs()
    assert "tiny_shakespeare is not available" in capsys.readouterr().out
    assert not cached.exists(), "the damaged cache is removed, so the next online run fetches it again"
