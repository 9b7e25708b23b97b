"""Where a submission's code runs: a sandboxed child process (the judge starts it, one per notebook).

With bubblewrap (``--sandbox auto`` where it works, or ``bwrap``):

* a user namespace with **every capability dropped**, so even when grading runs as root the code
  inside cannot mount, unmount or remount anything;
* its own mount, PID, IPC, UTS and network namespaces: no network; a private ``/tmp`` in memory,
  capped at 512 MB (bubblewrap 0.8+), which is all it can write to; processes it starts die with it
  (the namespace's first process is killed with the runner);
* the file system read-only, with the grading output, the submissions, the solutions and the
  course repository hidden; the Python environment (wherever it lives: a ``.venv`` inside the
  repository, a venv under ``/tmp``, conda) and the course packages bound back read-only;
* the submission's own regular files (no links, no devices, nothing that would shadow the course's
  packages), bound read-only and copied by the runner into ``/tmp/work``, its working folder and
  ``HOME``: nothing a submission writes reaches the host's disk.

Always (with or without bubblewrap): limits on memory (address space), CPU time, file size and core
dumps, a new session, and a process-group kill when the notebook is done.

Without bubblewrap the limits still apply but the file system, ``/tmp``, other processes and the
network are shared: ``--sandbox none`` must be asked for explicitly (``auto`` refuses to fall back).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Limits:
    cell_timeout_s: int = 120      # one student cell, or one call made by a test (unless the test states its own)
    notebook_timeout_s: int = 900  # the whole notebook, judge included
    memory_mb: int = 4096
    max_file_mb: int = 256
    sandbox: str = "auto"   # "auto": bwrap, and refuse to grade without it; "bwrap": the same; "none": limits only


class SandboxUnavailable(RuntimeError):
    """bubblewrap is missing or cannot make namespaces here, and ``--sandbox none`` was not chosen."""


class RunnerCannotStart(RuntimeError):
    """The student's process cannot start here at all (a problem of this machine, not of a submission)."""


_BWRAP_WORKS: bool | None = None
_BWRAP_SIZES: bool | None = None
SANDBOX_TMP_BYTES = 512 * 1024 * 1024   # the private /tmp (memory-backed): the student's files and whatever they write
INSIDE_SEED = "/tmp/submission"         # the submission's files, read-only, as the runner finds them
INSIDE_WORK = "/tmp/work"               # the runner's working folder and HOME: a copy of them


def bwrap_available() -> bool:
    """Whether bubblewrap exists and can make the namespaces used here (checked once)."""
    global _BWRAP_WORKS
    if _BWRAP_WORKS is None:
        path = shutil.which("bwrap")
        _BWRAP_WORKS = bool(path) and subprocess.run(
            [path, "--unshare-user", "--cap-drop", "ALL", "--ro-bind", "/", "/", "--unshare-net", "--unshare-pid",
             "--dev", "/dev", "--proc", "/proc", "true"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0
    return _BWRAP_WORKS


def bwrap_sizes_tmpfs() -> bool:
    """Whether this bubblewrap can cap a tmpfs (``--size``, bubblewrap 0.8 and newer)."""
    global _BWRAP_SIZES
    if _BWRAP_SIZES is None:
        _BWRAP_SIZES = bwrap_available() and subprocess.run(
            ["bwrap", "--unshare-user", "--ro-bind", "/", "/", "--size", "1048576", "--tmpfs", "/tmp", "true"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0
    return _BWRAP_SIZES


def use_bwrap(limits: Limits) -> bool:
    """Decide the isolation for ``limits.sandbox``; raise ``SandboxUnavailable`` rather than fall back."""
    if limits.sandbox == "none":
        return False
    if not bwrap_available():
        raise SandboxUnavailable(
            "bubblewrap (bwrap) is missing or cannot create namespaces here, so submissions cannot be isolated. "
            "Install it (Debian/Ubuntu: apt-get install bubblewrap), grade in the container described in "
            "autograder/README.md, or pass --sandbox none to grade WITHOUT isolation (only for code you trust).")
    return True


def python_environment_paths() -> list[Path]:
    """Folders the runner needs to import Python, the libraries and the course packages."""
    import autograder
    import utils

    paths = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).resolve().parent,
             Path(utils.__file__).resolve().parent, Path(autograder.__file__).resolve().parent}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        value = sysconfig.get_paths().get(key)
        if value:
            paths.add(Path(value))
    for entry in sys.path:
        if entry and Path(entry).is_dir() and Path(entry).resolve() != Path.cwd().resolve():
            paths.add(Path(entry))
    return sorted({p.resolve() for p in paths if p.exists()}, key=lambda p: len(p.parts))


def course_import_paths() -> list[str]:
    """The folders holding the ``autograder`` and ``utils`` packages this process imported.

    The judge and the runner get them first on ``PYTHONPATH``, so they import the same course code as
    the grader whatever the working folder, even when the install Python knows of is stale (an
    editable install of a checkout that has moved) or missing (grading straight from a checkout).
    """
    import autograder
    import utils

    paths: list[str] = []
    for package in (autograder, utils):
        parent = str(Path(package.__file__).resolve().parent.parent)
        if parent not in paths:
            paths.append(parent)
    return paths


def with_course_on_path(env: dict[str, str]) -> dict[str, str]:
    """``env`` with ``course_import_paths()`` at the front of ``PYTHONPATH``."""
    rest = [entry for entry in env.get("PYTHONPATH", "").split(os.pathsep) if entry]
    paths = course_import_paths()
    return dict(env, PYTHONPATH=os.pathsep.join(paths + [entry for entry in rest if entry not in paths]))


def check_runner_starts(limits: Limits, hide: list[Path],
                        command: list[str] | None = None) -> None:
    """Start the runner's Python once, sandboxed as it will be, and raise ``RunnerCannotStart`` with its
    error if it cannot import what it needs, so that a broken machine stops grading with the reason
    instead of failing every submission in turn."""
    import tempfile

    command = command or [sys.executable, "-c", "import autograder.runner"]  # quick: no torch yet
    with tempfile.TemporaryDirectory(prefix="course-check-") as tmp:
        scratch = Path(tmp)
        command, env = _sandboxed(command, scratch, limits, hide)
        try:
            completed = subprocess.run(command, cwd=scratch, env=env, capture_output=True, text=True, timeout=120,
                                       preexec_fn=_limit_resources(limits))
        except (OSError, subprocess.TimeoutExpired) as error:
            raise RunnerCannotStart(f"the student's process could not start here: {error}") from error
    if completed.returncode != 0:
        lines = [line for line in (completed.stderr or completed.stdout).strip().splitlines() if line.strip()]
        reason = lines[-1] if lines else f"exit status {completed.returncode}"
        if "MemoryError" in reason:
            advice = (f"The memory limit ({limits.memory_mb} MB, --memory-mb) is too small for Python and "
                      "PyTorch to start; raise it.")
        elif "ImportError" in reason or "ModuleNotFoundError" in reason:
            advice = ("Install the course and its packages in the Python that runs the grader "
                      "(python -m pip install -e . in the course folder).")
        else:
            advice = "Fix that first; with --sandbox none the same check runs without bubblewrap."
        raise RunnerCannotStart(f"the student's process cannot start here, so nothing was graded: {reason}. {advice}")


def _bwrap_prefix(scratch: Path, hide: list[Path]) -> list[str]:
    # /tmp is private and memory-backed; capped where bubblewrap can, so that writing files cannot
    # exhaust the machine's memory (the address-space limit does not count tmpfs pages).
    tmp = (["--size", str(SANDBOX_TMP_BYTES)] if bwrap_sizes_tmpfs() else []) + ["--tmpfs", "/tmp"]
    args = ["bwrap", "--unshare-user", "--cap-drop", "ALL", "--ro-bind", "/", "/", "--dev", "/dev",
            "--proc", "/proc", *tmp, "--unshare-net", "--unshare-pid", "--unshare-ipc",
            "--unshare-uts", "--die-with-parent"]
    hidden = sorted({p.resolve() for p in hide if p.exists()}, key=lambda p: len(p.parts))
    for path in hidden:
        if path != Path("/") and Path("/tmp") not in path.parents and path != Path("/tmp"):
            args += ["--tmpfs", str(path)]
    # The environment comes back on top of whatever was hidden (a venv in the repository or under /tmp).
    for path in python_environment_paths():
        if path == Path("/"):
            continue
        if Path("/tmp") in path.parents or any(h == path or h in path.parents for h in hidden):
            args += ["--ro-bind", str(path), str(path)]
    # The submission's files come in read-only; the runner works on a copy inside the private /tmp,
    # so nothing it writes reaches the host's disk.
    args += ["--ro-bind", str(scratch), INSIDE_SEED, "--chdir", "/tmp"]
    return args


def _shadows_a_module(name: str) -> bool:
    """Would a top-level file or folder called ``name`` shadow an installed module (``utils``, ``torch``...)?"""
    module = name[:-3] if name.endswith(".py") else name
    if not module.isidentifier():
        return False
    if module in sys.builtin_module_names or module in ("utils", "autograder"):
        return True
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def copy_submission_files(source: Path, target: Path) -> list[str]:
    """Copy a submission's own regular files (no notebooks, links, devices, or module-shadowing names).

    Returns notes on what was left out.
    """
    skipped: list[str] = []
    for path in sorted(source.rglob("*")):
        relative = path.relative_to(source)
        if path.suffix == ".ipynb" or ".ipynb_checkpoints" in relative.parts:
            continue
        if any((source / Path(*relative.parts[:i])).is_symlink() for i in range(1, len(relative.parts))):
            continue  # inside a linked folder: the link itself is reported below
        top = relative.parts[0]
        if _shadows_a_module(top):
            if len(relative.parts) == 1:
                skipped.append(f"{relative} (would shadow the installed module {top.removesuffix('.py')!r})")
            continue
        if path.is_symlink():
            skipped.append(f"{relative} (a link)")
        elif path.is_dir():
            continue
        elif not _regular(path):
            skipped.append(f"{relative} (not a regular file)")
        else:
            destination = target / relative
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, destination)
    return skipped


def _regular(path: Path) -> bool:
    import stat

    return stat.S_ISREG(os.lstat(path).st_mode)


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


def child_environment(scratch: Path, seeded: bool = False) -> dict[str, str]:
    """The runner's environment; ``seeded``: it copies ``INSIDE_SEED`` to ``INSIDE_WORK`` and works there."""
    home = Path(INSIDE_WORK) if seeded else scratch
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("JPY_", "JUPYTER_", "NBGRADER_", "COURSE_GRADER_", "PYTHONSTARTUP"))}
    env.update({
        "HOME": str(home),
        "COURSE_OFFLINE": "1",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": str(home / ".matplotlib"),
        "IPYTHONDIR": str(home / ".ipython"),
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "http_proxy": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9",
        "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9",
        "NBGRADER_EXECUTION": "autograde",
    })
    env = with_course_on_path(env)
    if seeded:
        env["COURSE_RUNNER_SEED"] = INSIDE_SEED
        env["COURSE_RUNNER_WORK"] = INSIDE_WORK
    return env


def _sandboxed(command: list[str], scratch: Path, limits: Limits, hide: list[Path]) -> tuple[list[str], dict[str, str]]:
    """``command`` wrapped as ``limits.sandbox`` says, and the environment it runs with."""
    isolated = use_bwrap(limits)
    if isolated:
        command = _bwrap_prefix(scratch, list(hide)) + command
    return command, child_environment(scratch, seeded=isolated)


def start_runner(scratch: Path, limits: Limits, hide: list[Path], log) -> subprocess.Popen:
    """Start ``python -m autograder.runner`` in ``scratch``, sandboxed as ``limits.sandbox`` says."""
    command, env = _sandboxed([sys.executable, "-m", "autograder.runner"], scratch, limits, hide)
    return subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, cwd=scratch,
                            env=env, start_new_session=True, preexec_fn=_limit_resources(limits))


def kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def become_subreaper() -> None:
    """Linux: orphans of our children are re-parented to us, so ``kill_descendants`` finds daemons."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


def kill_descendants() -> None:
    """Kill every process descended from this one (daemons a submission left behind)."""
    me = os.getpid()
    for _ in range(5):
        children = _children(me)
        if not children:
            return
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        for pid in children:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass


def _children(pid: int) -> list[int]:
    found: list[int] = []
    stack = [pid]
    while stack:
        current = stack.pop()
        task_dir = Path(f"/proc/{current}/task")
        if not task_dir.exists():
            continue
        for task in task_dir.iterdir():
            try:
                kids = [int(x) for x in (task / "children").read_text().split()]
            except (OSError, ValueError):
                continue
            found.extend(kids)
            stack.extend(kids)
    return found
