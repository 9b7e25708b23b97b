"""Your parts, carried forward: load classes and functions you wrote in an earlier notebook.

``load("../07_block/block.ipynb", "LayerNorm")`` reads *your saved notebook file* (the course folder
on your machine, or a file you uploaded on Colab), runs its exercise cells (the cells you filled in;
never its demos) in a fresh namespace, then runs that notebook's **visible tests** of the exercise that
defines each name. If the file is missing, a cell fails, or a visible test fails, it prints one line
saying which part and why, and returns None, so the caller falls back to PyTorch's equivalent.

It never reads ``solutions/``: it reads only the path you give it. This module holds no solution.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import torch

# Where each notebook lives, relative to this notebook's folder (the course layout).
NOTEBOOKS = {
    "02": "../02_tokenization/tokenization.ipynb",
    "05": "../05_multi_head/multi_head.ipynb",
    "06": "../06_positions/positions.ipynb",
    "07": "../07_block/block.ipynb",
}


def _cells(path: Path) -> list[dict]:
    notebook = json.loads(path.read_text(encoding="utf-8"))
    return [c for c in notebook["cells"] if c.get("cell_type") == "code"]


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _grade_id(cell: dict) -> str | None:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def load(path, *names: str, quiet: bool = False, instead: str = "PyTorch's") -> dict | None:
    """Your definitions of ``names`` from the notebook file at ``path``, after its visible tests pass.

    Returns ``{name: object}``, or None (after printing one line that ends "using <instead> instead") when
    the file is missing, an exercise cell fails to run, a name is not defined, or a visible test of the
    exercise defining it fails.
    """
    path = Path(path)
    label = ", ".join(names)
    if "solutions" in path.resolve().parts:
        print(f"your parts: {label}: {path} is in the course's solutions folder, not your work; using {instead} instead.")
        return None
    if not path.is_file():
        print(f"your parts: {label}: no file {path}; using {instead} instead.")
        return None
    try:
        cells = _cells(path)
    except (OSError, ValueError) as error:
        print(f"your parts: {label}: cannot read {path} ({error}); using {instead} instead.")
        return None
    namespace: dict = {"__name__": "your_parts", "device": torch.device("cpu")}
    defined_by: dict[str, str] = {}
    for cell in cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if not meta.get("solution"):
            continue
        before = {n: namespace.get(n) for n in names}
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(_source(cell), f"{path.name}:{meta.get('grade_id')}", "exec"), namespace)
        except Exception as error:  # the student's cell: any error means "not usable"
            print(f"your parts: {label}: exercise {meta.get('grade_id')!r} of {path.name} fails to run "
                  f"({type(error).__name__}: {error}); using {instead} instead.")
            return None
        for name in names:
            if name in namespace and namespace[name] is not before[name]:
                defined_by[name] = meta.get("grade_id")
    missing = [n for n in names if n not in namespace]
    if missing:
        print(f"your parts: {', '.join(missing)} not defined in {path.name}; using {instead} instead.")
        return None
    tests = {f"test_{defined_by[n]}" for n in names}
    for cell in cells:
        if _grade_id(cell) in tests:
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    exec(compile(_source(cell), f"{path.name}:{_grade_id(cell)}", "exec"), namespace)
            except Exception as error:  # a failing visible test: do not use the part
                first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
                print(f"your parts: {label}: {_grade_id(cell)} of {path.name} fails ({first}); using {instead} instead.")
                return None
    if not quiet:
        print(f"your parts: {label} from {path.name} (its visible tests pass).")
    return {n: namespace[n] for n in names}
