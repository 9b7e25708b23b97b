"""Where is this notebook running, and on what device? Seeding for reproducible results."""

from __future__ import annotations

import importlib.metadata
import os
import random
import re
import sys

import numpy as np
import torch


def in_colab() -> bool:
    """True when the code runs inside Google Colab."""
    return "google.colab" in sys.modules


def choose_device(prefer: str | None = None) -> torch.device:
    """Pick the best available device: CUDA, then Apple's MPS, then the CPU.

    ``prefer`` (or the environment variable ``COURSE_DEVICE``) forces a choice, e.g. ``"cpu"`` to
    compare timings. Asking for a device that is not present raises a ``ValueError`` that says which
    ones are.
    """
    prefer = prefer or os.environ.get("COURSE_DEVICE") or None
    available = ["cpu"]
    if torch.cuda.is_available():
        available.insert(0, "cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        available.insert(0 if "cuda" not in available else 1, "mps")
    if prefer is None:
        return torch.device(available[0])
    if torch.device(prefer).type not in available:
        raise ValueError(f"device {prefer!r} is not available here; choose one of {available}")
    return torch.device(prefer)


def seed_everything(seed: int = 0) -> None:
    """Seed Python's, NumPy's and PyTorch's random generators (all devices)."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device


def describe(device: torch.device) -> str:
    """One line about the device, for the top of a notebook."""
    if device.type == "cuda":
        return f"Using GPU: {torch.cuda.get_device_name(device)} (torch {torch.__version__})"
    if device.type == "mps":
        return f"Using Apple GPU (MPS) (torch {torch.__version__})"
    return f"Using CPU with {torch.get_num_threads()} threads (torch {torch.__version__})"


# The course's pip distribution and the extra listing what notebook cells import beyond the core
# dependencies (pyproject.toml; autograder/course/setup_cell.py names the same two).
DISTRIBUTION = "transformer-course"
NOTEBOOKS_EXTRA = "notebooks"


def missing_packages() -> list[str]:
    """Packages of the course's ``notebooks`` extra that are not installed in this Python.

    Read from the installed course's metadata; empty when the course itself is not installed as a
    package (then there is nothing to compare with).
    """
    try:
        requirements = importlib.metadata.requires(DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:
        return []
    missing = []
    for requirement in requirements:
        name, _, marker = requirement.partition(";")
        if not re.search(rf"""extra\s*==\s*["']{NOTEBOOKS_EXTRA}["']""", marker):
            continue
        name = re.split(r"[\s\[(<>=!~]", name.strip(), maxsplit=1)[0]
        try:
            importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            missing.append(name)
    return missing


def warn_missing_packages() -> None:
    """Print one line naming the notebooks' packages this Python lacks, and the command that installs them."""
    missing = missing_packages()
    if missing:
        print(f"Some notebooks also use {', '.join(missing)}, not installed here: from the course folder run "
              f'`pip install -e ".[{NOTEBOOKS_EXTRA}]"`, then restart the kernel.')
