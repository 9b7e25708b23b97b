"""Notebook 09 trained on other people's parts: bits per byte of each set of saved notebooks against a reference.

    python benchmarks/your_parts_bpb.py solutions=solutions A=path/to/variant_A B=path/to/variant_B [--jobs 3]

Each argument is LABEL=FOLDER, where FOLDER holds saved notebooks laid out as the course is
(``02_tokenization/tokenization.ipynb``, ``05_multi_head/multi_head.ipynb``, ``06_positions/positions.ipynb``,
``07_block/block.ipynb``): the course's ``solutions``, a class's held-out implementations, one student's
folder. For each, notebook 09's solution runs in a
course-shaped temporary folder with those notebooks beside it as "the student's", PyTorch on one thread.
The table gives the "your parts" line's verdict, the validation bits per byte of the student's model on
characters, the gap between its mean training loss and the PyTorch-parts control's over the control's last 20
steps (the control trains the first sixth of the run on the same batches), the BPE run's bits per byte, and the kernel's CPU seconds; the last column is the
difference from the first (reference) label, against the bar of 0.05 bits per byte (issue 34). Instructor
material: it runs ``solutions/09_your_gpt``.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autograder.course import conventions  # noqa: E402
from autograder.course.cell_runner import printed_and_errors  # noqa: E402
from autograder.course.solution_source import load_solution  # noqa: E402
from autograder.sandbox.cpu_time import ONE_THREAD  # noqa: E402

PART_NOTEBOOKS = {"02_tokenization": "tokenization.ipynb", "05_multi_head": "multi_head.ipynb",
                  "06_positions": "positions.ipynb", "07_block": "block.ipynb"}
BAR_BITS_PER_BYTE = 0.05
CPU_PROBE = ("import resource as _r\n_u = _r.getrusage(_r.RUSAGE_SELF)\n"
             "print(f'kernel CPU seconds: {_u.ru_utime + _u.ru_stime:.1f}')\n")


@dataclass
class Result:
    label: str
    parts_line: str = ""
    student_bpb: float | None = None
    control_gap: float | None = None
    bpe_bpb: float | None = None
    logits_difference: float | None = None
    cpu_seconds: float | None = None
    wall_seconds: float = 0.0
    errors: list[str] = field(default_factory=list)

    @property
    def all_yours(self) -> bool:
        return self.parts_line.endswith("| fell back: none")


def course_folder(parts: Path, where: Path) -> Path:
    """A course-shaped folder under ``where`` with the four part notebooks of ``parts`` beside 09."""
    for folder, name in PART_NOTEBOOKS.items():
        (where / folder).mkdir(parents=True)
        source = parts / folder / name
        if source.is_file():                       # a missing notebook falls back in 09, as for a student
            shutil.copy(source, where / folder / name)
    (where / "09_your_gpt").mkdir()
    return where / "09_your_gpt"


def run_notebook_09(here: Path) -> tuple[str, list[str]]:
    """Notebook 09's solution (from its text source) executed in ``here`` with a last cell that prints the
    kernel's CPU time: (what it printed, the errors)."""
    import nbformat

    nb = load_solution(conventions.assignment("09_your_gpt"))
    nb.cells.append(nbformat.v4.new_code_cell(CPU_PROBE))
    return printed_and_errors(nb, here, timeout_s=3600)


def _number(pattern: str, text: str, group: int = 1) -> float | None:
    found = re.search(pattern, text)
    return float(found.group(group)) if found else None


def _control_gap(printed: str) -> float | None:
    """Your mean training loss over the control's last 20 steps less the control's (nats; > 0: yours trains slower)."""
    found = re.search(r"control \(PyTorch's parts\), its first \d+ steps on the same batches: .*?; mean of steps "
                      r"\d+-\d+ (\d+\.\d+) nats, yours (\d+\.\d+)", printed)
    return float(found.group(2)) - float(found.group(1)) if found else None


def parse(label: str, printed: str, errors: list[str]) -> Result:
    """The figures of one run, read from what notebook 09 printed."""
    lines = [line for line in printed.splitlines() if line.startswith("your parts: yours:")]
    return Result(
        label=label, parts_line=lines[0] if lines else "(no 'your parts' line)", errors=errors,
        student_bpb=_number(r"= (\d+\.\d+) bits per byte; counted trigram", printed),
        control_gap=_control_gap(printed),
        bpe_bpb=_number(r"your GPT \(same steps\)\s+\S+\s+(\d+\.\d+)", printed),
        logits_difference=_number(r"logits of the control and of your parts, same weights: (\S+)", printed),
        cpu_seconds=_number(r"kernel CPU seconds: (\d+\.\d+)", printed))


def measure(label: str, parts: Path) -> Result:
    with tempfile.TemporaryDirectory(prefix=f"your_parts_{label}_") as tmp:
        start = time.perf_counter()
        printed, errors = run_notebook_09(course_folder(parts, Path(tmp)))
        result = parse(label, printed, errors)
        result.wall_seconds = time.perf_counter() - start
    return result


def _fmt(value: float | None, spec: str = ".3f") -> str:
    return "-" if value is None else format(value, spec)


def table(results: list[Result]) -> str:
    reference = results[0]
    rows = [f"{'parts':<12} {'all yours':>9} {'bpb yours':>10} {'control gap':>12} {'bpb BPE':>8} "
            f"{'|diff| vs ' + reference.label:>20} {'bar':>5} {'CPU s':>7} {'wall s':>7}"]
    for r in results:
        diff = None if r.student_bpb is None or reference.student_bpb is None else abs(r.student_bpb - reference.student_bpb)
        verdict = "-" if diff is None else ("ok" if diff <= BAR_BITS_PER_BYTE else "OVER")
        rows.append(f"{r.label:<12} {'yes' if r.all_yours else 'NO':>9} {_fmt(r.student_bpb):>10} "
                    f"{_fmt(r.control_gap, '.4f'):>12} {_fmt(r.bpe_bpb):>8} {_fmt(diff):>20} {verdict:>5} "
                    f"{_fmt(r.cpu_seconds, '.0f'):>7} {r.wall_seconds:7.0f}")
    for r in results:
        rows.append(f"\n{r.label}: {r.parts_line}")
        rows.append(f"{r.label}: logits of the control and of the parts, same weights: {_fmt(r.logits_difference, '.2e')}")
        rows.extend(f"{r.label}: ERROR {e}" for e in r.errors)
    return "\n".join(rows)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", help="LABEL=FOLDER; the first is the reference")
    parser.add_argument("--jobs", type=int, default=1, help="runs at once (each is one kernel on one thread)")
    args = parser.parse_args(argv)
    pairs = [item.split("=", 1) if "=" in item else (Path(item).name, item) for item in args.folders]
    os.environ.update(ONE_THREAD, COURSE_OFFLINE="1")
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(lambda pair: measure(pair[0], Path(pair[1]).resolve()), pairs))
    print(table(results))
    return 0 if all(r.all_yours and not r.errors for r in results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
