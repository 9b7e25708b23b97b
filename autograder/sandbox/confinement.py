"""Where a submission's code runs: a sandboxed child process (the judge starts it, one per notebook).

With bubblewrap (``--sandbox auto`` where it works, or ``bwrap``):

* a user namespace with **every capability dropped**, so even when grading runs as root the code
  inside cannot mount, unmount or remount anything;
* its own mount, PID, IPC, UTS and network namespaces and a new session: no network, no host
  process visible, no terminal to inject into; processes it starts die with it;
* **a minimal root built from nothing**, all of it read-only: ``/usr`` and the system's ``/bin``,
  ``/sbin``, ``/lib*``; from ``/etc`` only ``ETC_ESSENTIALS`` and a made-up ``passwd``/``group``
  (one user, ``student``); a fresh ``/proc`` and a minimal ``/dev``; the Python environment
  (``python_environment_paths``: the interpreter's installation, the venv or conda environment
  wherever it lives, the standard library, the ``site-packages`` folders on ``sys.path``) and the two
  course packages (the ``autograder`` and ``utils`` folders alone, ``course_package_paths``). Nothing
  else of the host exists inside: no home folder beyond the interpreter's own installation, no
  ``/var``, ``/srv``, ``/run`` (so no Unix socket, ``docker.sock`` included), no other checkout (a
  checkout named by the editable install's ``.pth``/finder file is not bound; the course packages
  come from the bound folders, first on ``PYTHONPATH``), no grading output of this run or an earlier
  one, no submission, no solutions. A hidden path (output, submissions, solutions, repository) that
  lies inside a bound folder is covered by an empty read-only tmpfs;
* writable: only a private ``/tmp`` in memory capped at ``SANDBOX_TMP_BYTES`` (512 MB) and
  ``/dev/shm`` capped at ``SANDBOX_SHM_BYTES`` (64 MB) (sizes need bubblewrap 0.8+); the root,
  ``/dev`` and every hiding tmpfs are remounted read-only;
* the submission's own regular files (no links, no devices, nothing that would shadow the course's
  packages), bound read-only and copied by the runner into ``/tmp/work``, its working folder and
  ``HOME``: nothing a submission writes reaches the host's disk;
* an environment allow-list (``child_environment``): ``PATH``, ``LANG``, ``LANGUAGE``, ``TZ``,
  ``LC_*`` and the variables set here; no other variable of the grader's environment gets in.

Always (with or without bubblewrap): per process, limits on address space (``--memory-mb``), CPU
time, file size and core dumps; per sandbox, a watch in the judge (``_watch_sandbox``, every
``MEMORY_POLL_S`` = 0.1 s) that sums the memory of the runner and all its descendants
(``memory_watch``: resident memory, ``memfd`` files held open, System V shared memory of the
sandbox's own IPC namespace) and counts their tasks (processes and threads), and kills them all past
``--memory-mb`` or ``SANDBOX_MAX_TASKS`` (64), saying why (``kernel died``, the detail names the
memory and the limit); the runner's standard error (its log, on the host) kept to
``RUNNER_LOG_BYTES`` (1 MiB); a new session and a process-group kill when the notebook is done.
System V segments die with the sandbox's IPC namespace; with ``--sandbox none`` the runner gets its
own namespace where the kernel allows it (root), and otherwise the watch removes the segments its
processes made. With bubblewrap, ``RLIMIT_NPROC`` is also set to ``SANDBOX_MAX_TASKS``: inside the sandbox's own user
namespace the kernel (5.14+) counts only the sandbox's tasks, and refuses a fork past the cap, except
when the grader runs as root (the kernel exempts the host's root user from ``RLIMIT_NPROC``: then only
the watch holds). The bound on memory is therefore ``--memory-mb`` for the whole sandbox (resident,
memfd and System V shared memory together), exceeded at most for 0.1 s (and then by at most
``SANDBOX_MAX_TASKS`` processes of ``--memory-mb`` address space each), plus the two tmpfs (576 MB).
cgroups are not used: a memory cgroup would make the bound exact, and is not implemented yet.

Without bubblewrap the limits and the watch still apply but the file system, ``/tmp``, other
processes and the network are shared: ``--sandbox none`` must be asked for explicitly (``auto``
refuses to fall back).
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


class SandboxUnavailable(RuntimeError):
    """bubblewrap is missing or cannot make namespaces here, and ``--sandbox none`` was not chosen."""


class RunnerCannotStart(RuntimeError):
    """The student's process cannot start here at all (a problem of this machine, not of a submission)."""


_BWRAP_WORKS: bool | None = None
_BWRAP_SIZES: bool | None = None
SANDBOX_TMP_BYTES = 512 * 1024 * 1024   # the private /tmp (memory-backed): the student's files and whatever they write
INSIDE_SEED = "/tmp/submission"         # the submission's files, read-only, as the runner finds them
INSIDE_WORK = "/tmp/work"               # the runner's working folder and HOME: a copy of them
SANDBOX_SHM_BYTES = 64 * 1024 * 1024    # /dev/shm (memory-backed): enough for a DataLoader's workers
SANDBOX_MAX_TASKS = 64                  # processes and threads of the whole sandbox (RLIMIT_NPROC inside its user namespace)
RUNNER_LOG_BYTES = 1024 * 1024          # the runner's stderr kept on the host; the rest is read and dropped
MEMORY_POLL_S = 0.1                     # how often the resident memory of the whole sandbox is summed
# /etc entries Python, the C library and PyTorch read; nothing else of the host's /etc is shown.
ETC_ESSENTIALS = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone", "nsswitch.conf")
# Environment variables the runner gets from the grader's environment (all others are dropped).
PASSED_VARIABLES = ("PATH", "LANG", "LANGUAGE", "TZ")


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
    """Folders the runner needs to run Python and import the libraries (not the course packages).

    The interpreter's installation (``sys.base_prefix``), the environment (``sys.prefix``: a venv,
    conda), the folder of the executable, the standard library and every ``site-packages`` or
    ``dist-packages`` folder on ``sys.path``. A ``sys.path`` entry that is none of these (a checkout
    added by an editable install's ``.pth`` file, ``PYTHONPATH``, the working folder) is left out:
    the course packages come from ``course_package_paths()`` only.
    """
    paths = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix), Path(sys.base_exec_prefix),
             Path(sys.executable).resolve().parent}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        value = sysconfig.get_paths().get(key)
        if value:
            paths.add(Path(value))
    for entry in sys.path:
        if entry and {"site-packages", "dist-packages"} & set(Path(entry).parts) and Path(entry).is_dir():
            paths.add(Path(entry))
    resolved = sorted({p.resolve() for p in paths if p.exists()}, key=lambda p: len(p.parts))
    return [p for p in resolved if p != Path("/")]


def course_package_paths() -> list[Path]:
    """The ``autograder`` and ``utils`` package folders this process imported (bound read-only, alone)."""
    import autograder
    import utils

    return [Path(package.__file__).resolve().parent for package in (autograder, utils)]


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

    command = command or [sys.executable, "-c", "import autograder.sandbox.runner"]  # quick: no torch yet
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


_ETC_DIR: Path | None = None


def _made_up_etc() -> Path:
    """A host folder (made once per process) with the sandbox's own ``passwd`` and ``group``: one user,
    ``student``, with this process's ids, so nothing about the host's accounts is shown."""
    global _ETC_DIR
    if _ETC_DIR is None or not _ETC_DIR.is_dir():
        import atexit
        import tempfile

        folder = Path(tempfile.mkdtemp(prefix="course-sandbox-etc-"))
        uid, gid = os.getuid(), os.getgid()
        (folder / "passwd").write_text(f"student:x:{uid}:{gid}:student:{INSIDE_WORK}:/usr/sbin/nologin\n"
                                       + ("" if uid == 65534 else "nobody:x:65534:65534:nobody:/:/usr/sbin/nologin\n"))
        (folder / "group").write_text(f"student:x:{gid}:\n" + ("" if gid == 65534 else "nogroup:x:65534:\n"))
        atexit.register(shutil.rmtree, folder, True)
        _ETC_DIR = folder
    return _ETC_DIR


def _root_entries() -> list[str]:
    """``/usr`` and the top-level folders of the host's system (``/bin``, ``/lib*``, ``/sbin``): links
    stay links (a merged ``/usr``), folders are bound read-only."""
    args = ["--ro-bind", "/usr", "/usr"]
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = Path("/") / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            args += ["--ro-bind", str(path), str(path)]
    etc = Path("/etc")
    for name in ETC_ESSENTIALS:
        path = etc / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), str(path)]
        elif path.exists():
            args += ["--ro-bind", str(path), str(path)]
    made_up = _made_up_etc()
    args += ["--ro-bind", str(made_up / "passwd"), "/etc/passwd", "--ro-bind", str(made_up / "group"), "/etc/group"]
    return args


def _bwrap_prefix(scratch: Path, hide: list[Path]) -> list[str]:
    """bubblewrap's arguments: a minimal root, read-only, built from nothing (see the module docstring)."""
    sized = bwrap_sizes_tmpfs()

    def tmpfs(path: str, size: int) -> list[str]:
        return (["--size", str(size)] if sized else []) + ["--tmpfs", path]

    args = ["bwrap", "--unshare-user", "--cap-drop", "ALL", "--unshare-net", "--unshare-pid", "--unshare-ipc",
            "--unshare-uts", "--die-with-parent", "--new-session", *_root_entries(),
            "--dev", "/dev", *tmpfs("/dev/shm", SANDBOX_SHM_BYTES), "--proc", "/proc",
            # /tmp is private and memory-backed, capped so that writing files cannot exhaust the memory
            # (the address-space limit does not count tmpfs pages).
            *tmpfs("/tmp", SANDBOX_TMP_BYTES)]
    environment, covered = _environment_mounts(hide, tmpfs)
    # The submission's files come in read-only; the runner works on a copy inside the private /tmp,
    # so nothing it writes reaches the host's disk.
    args += environment + ["--ro-bind", str(scratch), INSIDE_SEED]
    for path in ["/", "/dev"] + covered:
        args += ["--remount-ro", path]
    return args + ["--chdir", "/tmp"]


def _environment_mounts(hide: list[Path], tmpfs) -> tuple[list[str], list[str]]:
    """The Python environment and the course packages, each bound alone and read-only; a hidden path
    (grading output, submissions, solutions, the repository) that lies inside one of them is covered
    by an empty tmpfs (returned too, to be remounted read-only), and whatever is needed inside a
    hidden path is bound back on top: mounts are made outermost first."""
    wanted = python_environment_paths() + course_package_paths()
    hidden = [(path, "hide") for path in {p.resolve() for p in hide if p.exists()}
              if path != Path("/") and any(b == path or b in path.parents for b in wanted)]
    binds = [(path, "bind") for path in set(wanted)
             if not any(_covered(path, outer, [h for h, _ in hidden]) for outer in wanted)]
    args: list[str] = []
    covered: list[str] = []
    for path, what in sorted(set(binds + hidden), key=lambda item: (len(item[0].parts), item[1] == "hide")):
        if what == "bind":
            args += ["--ro-bind", str(path), str(path)]
        else:
            args += tmpfs(str(path), 4096)
            covered.append(str(path))
    return args, covered


def _covered(path: Path, outer: Path, hidden: list[Path]) -> bool:
    """Whether binding ``outer`` already shows ``path`` (inside it, with no hidden folder in between)."""
    return outer in path.parents and not any(outer in h.parents and (h == path or h in path.parents) for h in hidden)


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
        if limits.sandbox == "none":
            # System V segments then die with the runner, as in bubblewrap's --unshare-ipc (where the
            # kernel allows it: root); otherwise the watch removes those its processes made.
            from .memory_watch import new_ipc_namespace

            new_ipc_namespace()
        else:
            # Counted per user: inside the sandbox's own user namespace that is every process and
            # thread of this sandbox, and nothing else (Linux 5.14+ counts per namespace; without
            # capabilities it cannot be raised).
            resource.setrlimit(resource.RLIMIT_NPROC, (SANDBOX_MAX_TASKS, SANDBOX_MAX_TASKS))

    return apply


def child_environment(scratch: Path, seeded: bool = False) -> dict[str, str]:
    """The runner's environment; ``seeded``: it copies ``INSIDE_SEED`` to ``INSIDE_WORK`` and works there.

    An allow-list: ``PASSED_VARIABLES`` and ``LC_*`` from the grader's environment, and the variables set
    here (``PYTHONPATH`` is the course packages' folders only). Nothing else of the grader's environment
    (tokens, keys, ``PYTHONSTARTUP``, Jupyter's variables) reaches the student's code.
    """
    home = Path(INSIDE_WORK) if seeded else scratch
    env = {key: value for key, value in os.environ.items() if key in PASSED_VARIABLES or key.startswith("LC_")}
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
    env["PYTHONPATH"] = os.pathsep.join(course_import_paths())
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
    """Start ``python -m autograder.sandbox.runner`` in ``scratch``, sandboxed as ``limits.sandbox`` says.

    Its standard error (``log``, a file open for writing) keeps at most ``RUNNER_LOG_BYTES``: the
    process writes into a pipe that a thread of this process copies, then drains. Another thread sums
    the resident memory and counts the tasks of every process of the sandbox, and kills them all past
    ``limits.memory_mb`` or ``SANDBOX_MAX_TASKS``.
    """
    command, env = _sandboxed([sys.executable, "-m", "autograder.sandbox.runner"], scratch, limits, hide)
    read_end, write_end = os.pipe()
    try:
        process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=write_end,
                                   cwd=scratch, env=env, start_new_session=True, preexec_fn=_limit_resources(limits))
    except BaseException:
        os.close(read_end)
        raise
    finally:
        os.close(write_end)
    _thread(_copy_capped, read_end, os.dup(log.fileno()), RUNNER_LOG_BYTES)
    _thread(_watch_sandbox, process, limits.memory_mb * 1024 * 1024, SANDBOX_MAX_TASKS)
    return process


def _thread(target, *args) -> None:
    import threading

    threading.Thread(target=target, args=args, daemon=True).start()


def _copy_capped(source: int, target: int, cap: int) -> None:
    """Copy ``source`` into ``target`` up to ``cap`` bytes, then read and drop the rest until the end."""
    kept = 0
    try:
        while chunk := os.read(source, 65536):
            if kept < cap:
                os.write(target, chunk[:cap - kept])
                kept += len(chunk)
                if kept >= cap:
                    os.write(target, f"\n[log cut at {cap} bytes by the grader]\n".encode())
    except OSError:
        pass
    finally:
        os.close(source)
        os.close(target)


def _watch_sandbox(process: subprocess.Popen, cap: int, max_tasks: int) -> None:
    """Every ``MEMORY_POLL_S``, sum the memory (``memory_watch.SandboxMemory``: resident memory, memfds
    held by descriptors, System V shared memory) and count the tasks (processes and threads) of
    ``process`` and all its descendants (every process of the sandbox); past ``cap`` bytes or
    ``max_tasks``, kill them all and say why in ``process.killed_for`` (the session reports it)."""
    import time

    from .memory_watch import SandboxMemory

    watch = SandboxMemory()
    try:
        while process.poll() is None:
            pids = [process.pid] + _children(process.pid)
            memory, tasks = watch.total(pids)
            if memory > cap or tasks > max_tasks:
                process.killed_for = (f"the notebook's processes held {memory / 2**20:,.0f} MB of memory (resident, "
                                      f"memfd and shared memory together), past the {cap / 2**20:,.0f} MB limit"
                                      if memory > cap else f"the notebook started more than {max_tasks} processes "
                                      "and threads")
                _kill_all(pids)
                return
            time.sleep(MEMORY_POLL_S)
    finally:
        watch.remove_segments()


def _kill_all(pids: list[int]) -> None:
    for pid in reversed(pids):
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


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
