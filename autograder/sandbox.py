"""Run one notebook in an isolated child process with resource limits (the parent side).

Isolation here is what an unprivileged process on Linux/macOS can do for itself:

* a fresh scratch folder as the working directory, holding only a copy of the submission's own
  non-notebook files (never ``solutions/``, the gradebook, or other students' work), and ``HOME``
  pointing into it;
* the child and the kernel it starts get limits on address space (memory), CPU seconds, file size
  and open files (``resource.setrlimit``, inherited by the kernel);
* a wall-clock limit for the whole notebook, after which the process group is killed;
* where bubblewrap (``bwrap``) works, the child runs in its own mount, PID and network namespaces:
  the file system is read-only, ``/tmp`` is empty and private, the course repository shows only
  ``utils/`` and ``autograder/``, the grading output, the submissions folder and the solutions are
  not there at all, and there is no network. Without bwrap (macOS, a locked-down host) the limits
  above still apply and the network is discouraged through dead proxy settings only; grade in the
  container described in ``autograder/README.md`` for the full isolation.

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
    sandbox: str = "auto"   # "auto": bwrap when it works here; "bwrap": required; "none": limits only


_BWRAP_WORKS: bool | None = None


def bwrap_available() -> bool:
    """Whether bubblewrap exists and can make namespaces on this machine (checked once)."""
    global _BWRAP_WORKS
    if _BWRAP_WORKS is None:
        path = shutil.which("bwrap")
        _BWRAP_WORKS = bool(path) and subprocess.run(
            [path, "--ro-bind", "/", "/", "--unshare-net", "--unshare-pid", "--dev", "/dev", "--proc", "/proc", "true"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0
    return _BWRAP_WORKS


def _bwrap_prefix(scratch: Path, hide: list[Path]) -> list[str]:
    """bubblewrap arguments: read-only root, private /tmp holding only the scratch folder, hidden paths."""
    import autograder
    import utils

    packages = [Path(utils.__file__).resolve().parent, Path(autograder.__file__).resolve().parent]
    args = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
            "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent", "--new-session"]
    for path in sorted({p.resolve() for p in hide}, key=lambda p: len(p.parts)):
        if path.exists() and Path("/tmp") not in path.parents and path != Path("/"):
            args += ["--tmpfs", str(path)]
    for package in packages:
        if any(h.resolve() in package.parents for h in hide):
            args += ["--ro-bind", str(package), str(package)]
    args += ["--bind", str(scratch), str(scratch), "--chdir", str(scratch)]
    return args


@dataclass
class ExecutionResult:
    status: str          # ok | timeout | kernel died | error
    detail: str
    notebook: object     # the executed NotebookNode (None only when nothing came back)


def copy_submission_files(source: Path, target: Path) -> None:
    """Copy a submission's own files, minus notebooks and links, from ``source`` into ``target``."""
    for path in sorted(source.rglob("*")):
        if path.is_file() and not path.is_symlink() and path.suffix != ".ipynb":
            destination = target / path.relative_to(source)
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, destination)


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


def run_isolated(nb, submission_dir: Path | None, limits: Limits = Limits(), hide: list[Path] = ()) -> ExecutionResult:
    """Execute ``nb`` in a sandboxed child; return the executed notebook and a status.

    ``hide``: folders the child must not see (with bwrap): the grading output, the submissions,
    the solutions, the repository.
    """
    use_bwrap = limits.sandbox == "bwrap" or (limits.sandbox == "auto" and bwrap_available())
    if limits.sandbox == "bwrap" and not bwrap_available():
        raise RuntimeError("--sandbox bwrap was asked for, but bubblewrap is missing or cannot create namespaces here")
    with tempfile.TemporaryDirectory(prefix="course-grade-") as tmp:
        scratch = Path(tmp) / "work"
        scratch.mkdir()
        if submission_dir is not None:
            copy_submission_files(submission_dir, scratch)
        log_path = Path(tmp) / "worker.log"  # outside the scratch folder
        with open(log_path, "wb") as log:
            command = [sys.executable, "-m", "autograder.worker", "--scratch", str(scratch),
                       "--cell-timeout", str(limits.cell_timeout_s)]
            if use_bwrap:
                command = _bwrap_prefix(scratch, list(hide)) + command
            process = subprocess.Popen(
                command,
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
