"""benchmarks/your_parts_bpb.py reads notebook 09's printed figures and lays out the comparison table."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("your_parts_bpb", ROOT / "benchmarks" / "your_parts_bpb.py")
your_parts_bpb = importlib.util.module_from_spec(_spec)
sys.modules["your_parts_bpb"] = your_parts_bpb      # dataclasses look their module up there
_spec.loader.exec_module(your_parts_bpb)

PRINTED = """largest difference between the logits of the control and of your parts, same weights: 2.38e-07
your parts: yours: LayerNorm (07), feed-forward (07), attention (05), RoPE (06), BPE tokenizer (02), and this notebook's GPT, AdamW, clipping and train_step | fell back: none
your GPT {'n_layer': 2, 'n_head': 4, 'n_embd': 128}, 600 steps in 61.2 s: validation 1.401 nats/char = 2.034 bits per byte; counted trigram 2.512 -> beats it by 0.478
control (PyTorch's parts), its first 150 steps on the same batches: first loss 4.61234, yours 4.61234; mean of steps 131-150 2.317 nats, yours 2.329; 64 ms a step, yours 68 ms

bits per byte           characters   BPE 512
counted trigram              2.512     2.700
your GPT (same steps)        2.034     2.310
kernel CPU seconds: 301.5
"""


def test_parse_reads_every_figure_of_a_run():
    r = your_parts_bpb.parse("A", PRINTED, [])
    assert (r.student_bpb, r.bpe_bpb, r.cpu_seconds) == (2.034, 2.310, 301.5)
    assert abs(r.control_gap - 0.012) < 1e-12
    assert r.logits_difference == 2.38e-07 and r.all_yours


def test_table_measures_each_run_against_the_first_and_the_bar():
    reference = your_parts_bpb.parse("solutions", PRINTED, [])
    close = your_parts_bpb.parse("A", PRINTED.replace("= 2.034 bits", "= 2.070 bits"), [])
    far = your_parts_bpb.parse("B", PRINTED.replace("= 2.034 bits", "= 2.100 bits").replace("fell back: none", "fell back: RoPE (06) (x)"), [])
    rows = {line.split()[0]: line.split() for line in your_parts_bpb.table([reference, close, far]).splitlines()[1:4]}
    assert rows["solutions"][1] == "yes" and rows["solutions"][5:7] == ["0.000", "ok"]
    assert rows["A"][5:7] == ["0.036", "ok"]
    assert rows["B"][1] == "NO" and rows["B"][5:7] == ["0.066", "OVER"]


def test_a_run_without_figures_shows_dashes_not_a_crash():
    r = your_parts_bpb.parse("broken", "", ["cell 3: NameError: x"])
    assert r.student_bpb is None and not r.all_yours
    text = your_parts_bpb.table([r])
    assert "broken: ERROR cell 3: NameError: x" in text and " - " in text.splitlines()[1]
