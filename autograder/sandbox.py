"""Run one notebook in an isolated child process with resource limits (the parent side).

Isolation here is what an unprivileged process on Linux/macOS can do for itself:

* a fresh scratch folder as the working directory, holding only a copy of the submission's own
  non-notebook files (never ``solutions/``, the gradebook, or other students' work), and ``HOME``
  pointing into it;
* the child and the kernel it starts get limits on address space (memory), CPU seconds, file size
  and open files (``resource.setrlimit``, inherited by the kernel);
* a wall-clock limit for the whole notebook, after which the process group is killed;
* no network for Python code that honours the proxy variables (set to a dead address); real
  network isolation needs a container (see ``autograder/README.md``).

The notebook with hidden tests travels over a pipe and is never written to the scratch folder.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import nbformat


@dataclass(frozen=True)
class Limits:
    cell_timeout_s: int = 120
    notebook_timeout_s: int = 900
    memory_mb: int = 4096
    max_file_mb: int = 256


@dataclass
class ExecutionResult:
    status: str          # ok | timeout | kernel died | error
    detail: str
    notebook: object     # the executed NotebookNode (None only when nothing came back)


def _limit_resources(limits: Limits):
    def apply() -> None:
        import resource

        memory = limits.memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        cpu = limits.notebook_timeout_s + 30
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
        size = limits.max_file_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply


def _child_environment(scratch: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("JPY_", "JUPYTER_", "NBGRADER_", "COURSE_GRADER_"))}
    env.update({
        "HOME": str(scratch),
        "COURSE_OFFLINE": "1",
        "PYTHONHASHSEED": "0",
        "MPLCONFIGDIR": str(scratch / ".matplotlib"),
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "http_proxy": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9",
        "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9",
        "NBGRADER_EXECUTION": "autograde",
    })
    return env


def run_isolated(nb, submission_dir: Path | None, limits: Limits = Limits()) -> ExecutionResult:
    """Execute ``nb`` in a sandboxed child; return the executed notebook and a status."""
    with tempfile.TemporaryDirectory(prefix="course-grade-") as tmp:
        scratch = Path(tmp) / "work"
        scratch.mkdir()
        if submission_dir is not None:
            for path in submission_dir.rglob("*"):
                if path.is_file() and not path.is_symlink() and path.suffix != ".ipynb":
                    target = scratch / path.relative_to(submission_dir)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(path, target)
        log_path = Path(tmp) / "worker.log"  # outside the scratch folder
        with open(log_path, "wb") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "autograder.worker", "--scratch", str(scratch),
                 "--cell-timeout", str(limits.cell_timeout_s)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, cwd=scratch,
                env=_child_environment(scratch), start_new_session=True,
                preexec_fn=_limit_resources(limits),
            )
            try:
                out, _ = process.communicate(nbformat.writes(nb).encode("utf-8"), timeout=limits.notebook_timeout_s)
            except subprocess.TimeoutExpired:
                _kill_group(process)
                return ExecutionResult("timeout", f"notebook ran past {limits.notebook_timeout_s} s", None)
            finally:
                _kill_group(process)
        try:
            result = json.loads(out.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            tail = log_path.read_bytes()[-500:].decode("utf-8", "replace")
            reason = "memory limit" if "MemoryError" in tail else "error"
            return ExecutionResult(reason, f"worker returned no result (exit {process.returncode}): {tail.strip()[-200:]}", None)
        notebook = nbformat.from_dict(result["notebook"]) if result.get("notebook") else None
        return ExecutionResult(result["status"], result.get("detail", ""), notebook)


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    process.wait()
