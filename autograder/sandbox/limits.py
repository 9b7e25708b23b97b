"""What one notebook may use when graded (``Limits``, validated; the command line reads its defaults
from here), and the fixed bounds of every sandbox: its memory-backed ``/tmp`` and ``/dev/shm``, its
tasks, the runner's log kept on the host, and how often the judge sums its memory."""

from __future__ import annotations

from dataclasses import dataclass

MEMORY_FLOOR_MB = 1024   # Python with PyTorch needs about 768 MB of address space before a notebook runs
SANDBOX_CHOICES = ("auto", "bwrap", "none")


@dataclass(frozen=True)
class Limits:
    """What one notebook may use when graded. The command line reads its defaults from here; values
    that could never grade anything (a floor the interpreter cannot start under, a zero timeout) raise
    ``ValueError`` with the reason."""

    cell_timeout_s: int = 120      # one student cell, or one call made by a test (unless the test states its own)
    notebook_timeout_s: int = 900  # the whole notebook, judge included
    memory_mb: int = 4096
    max_file_mb: int = 256
    sandbox: str = "auto"   # "auto": bwrap, and refuse to grade without it; "bwrap": the same; "none": limits only

    def __post_init__(self):
        for name in ("cell_timeout_s", "notebook_timeout_s", "max_file_mb"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"{name} must be a positive number, got {value!r}")
        if isinstance(self.memory_mb, bool) or not isinstance(self.memory_mb, int) or self.memory_mb < MEMORY_FLOOR_MB:
            raise ValueError(f"memory_mb {self.memory_mb!r} is too small: Python with PyTorch needs about 768 MB of "
                             f"address space before a notebook runs; give at least {MEMORY_FLOOR_MB} (default {Limits.memory_mb})")
        if self.sandbox not in SANDBOX_CHOICES:
            raise ValueError(f"sandbox must be one of {', '.join(SANDBOX_CHOICES)}, got {self.sandbox!r}")


SANDBOX_TMP_BYTES = 512 * 1024 * 1024   # the private /tmp (memory-backed): the student's files and whatever they write
SANDBOX_SHM_BYTES = 64 * 1024 * 1024    # /dev/shm (memory-backed): enough for a DataLoader's workers
SANDBOX_MAX_TASKS = 64                  # processes and threads of the whole sandbox (RLIMIT_NPROC inside its user namespace)
RUNNER_LOG_BYTES = 1024 * 1024          # the runner's stderr kept on the host; the rest is read and dropped
MEMORY_POLL_S = 0.1                     # how often the resident memory of the whole sandbox is summed
