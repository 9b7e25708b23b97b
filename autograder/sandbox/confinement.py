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
time, file size and core dumps; per sandbox, a watch in the judge (``processes.watch_sandbox``, every
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
import subprocess
import sys
from pathlib import Path

from .bubblewrap import INSIDE_SEED, INSIDE_WORK, bwrap_prefix, course_package_paths, use_bwrap
from .limits import RUNNER_LOG_BYTES, SANDBOX_MAX_TASKS, Limits
from .processes import copy_capped, start_thread, watch_sandbox
from . import cgroups
from .memory_watch import sandbox_mb
from .audit import AUDIT_FD_VARIABLE


class RunnerCannotStart(RuntimeError):
    """The student's process cannot start here at all (a problem of this machine, not of a submission)."""


# Environment variables the runner gets from the grader's environment (all others are dropped).
PASSED_VARIABLES = ("PATH", "LANG", "LANGUAGE", "TZ")


def course_import_paths() -> list[str]:
    """The folders holding the ``autograder`` and ``utils`` packages this process imports.

    The judge and the runner get them first on ``PYTHONPATH``, so they import the same course code as
    the grader whatever the working folder, even when the install Python knows of is stale (an
    editable install of a checkout that has moved) or missing (grading straight from a checkout).
    """
    paths: list[str] = []
    for package in course_package_paths():
        if str(package.parent) not in paths:
            paths.append(str(package.parent))
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
    try:
        group = sandbox_cgroup(limits)
    except cgroups.CgroupUnavailable as error:
        raise RunnerCannotStart(f"no sandbox can be bounded here, so nothing was graded: {error}") from error
    with tempfile.TemporaryDirectory(prefix="course-check-") as tmp:
        scratch = Path(tmp) / "work"     # the sandbox's made-up /etc goes beside it, inside tmp
        scratch.mkdir()
        command, env = _sandboxed(command, scratch, limits, hide)
        try:
            completed = subprocess.run(command, cwd=scratch, env=env, capture_output=True, text=True, timeout=120,
                                       preexec_fn=_limit_resources(limits, group))
        except (OSError, subprocess.TimeoutExpired) as error:
            raise RunnerCannotStart(f"the student's process could not start here: {error}") from error
        finally:
            if group is not None:
                group.remove()
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
    """Copy a submission's own regular files (no notebooks, compiled ``.pyc`` files or ``__pycache__``
    folders, links, devices, or module-shadowing names).

    Returns notes on what was left out.
    """
    skipped: list[str] = []
    for path in sorted(source.rglob("*")):
        relative = path.relative_to(source)
        if path.suffix == ".ipynb" or ".ipynb_checkpoints" in relative.parts:
            continue
        if path.suffix == ".pyc" or "__pycache__" in relative.parts:
            continue   # compiled code names its own source file: the audit hook would take it for the library's
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


def sandbox_cgroup(limits: Limits) -> cgroups.SandboxCgroup | None:
    """A new control group bounding one sandbox (memory of every kind, tasks, one core): see ``cgroups``.
    With bubblewrap one is required (``cgroups.CgroupUnavailable`` says why and the fix); with
    ``--sandbox none`` (limits only, by choice) the runner goes without one where none can be made."""
    try:
        return cgroups.SandboxCgroup.create(sandbox_mb(limits.memory_mb, use_bwrap(limits)) * 2**20,
                                            SANDBOX_MAX_TASKS + CGROUP_EXTRA_TASKS)
    except cgroups.CgroupUnavailable:
        if limits.sandbox == "none":
            return None
        raise


# bubblewrap's own processes (its parent and the namespace's init), in the group but outside RLIMIT_NPROC's count
CGROUP_EXTRA_TASKS = 4


def _limit_resources(limits: Limits, group: cgroups.SandboxCgroup | None = None):
    def apply() -> None:
        import resource

        if group is not None:
            group.join()    # before exec: nothing the runner starts is ever outside its group

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
        command = bwrap_prefix(scratch, list(hide)) + command
    return command, child_environment(scratch, seeded=isolated)


def start_runner(scratch: Path, limits: Limits, hide: list[Path], log) -> subprocess.Popen:
    """Start ``python -m autograder.sandbox.runner`` in ``scratch``, sandboxed as ``limits.sandbox`` says.

    Its standard error (``log``, a file open for writing) keeps at most ``RUNNER_LOG_BYTES``: the
    process writes into a pipe that a thread of this process copies, then drains. Another thread sums
    the resident memory and counts the tasks of every process of the sandbox, and kills them all past
    ``limits.memory_mb`` or ``SANDBOX_MAX_TASKS``.
    """
    command, env = _sandboxed([sys.executable, "-m", "autograder.sandbox.runner"], scratch, limits, hide)
    group = sandbox_cgroup(limits)
    read_end, write_end = os.pipe()
    audit_read, audit_write = os.pipe()   # the runner's audit hook speaks on it (sandbox/audit.py)
    os.set_blocking(audit_read, False)
    env[AUDIT_FD_VARIABLE] = str(audit_write)
    try:
        process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=write_end,
                                   cwd=scratch, env=env, start_new_session=True, pass_fds=(audit_write,),
                                   preexec_fn=_limit_resources(limits, group))
    except BaseException:
        os.close(read_end)
        os.close(audit_read)
        if group is not None:
            group.remove()
        raise
    finally:
        os.close(write_end)
        os.close(audit_write)
    process.cgroup = group     # processes.kill_group removes it; the session reads why the kernel stopped it
    process.audit_fd = audit_read   # read by the session (judge.session.AuditPipe), closed by processes.kill_group
    start_thread(copy_capped, read_end, os.dup(log.fileno()), RUNNER_LOG_BYTES)
    start_thread(watch_sandbox, process, limits.memory_mb * 1024 * 1024, SANDBOX_MAX_TASKS)
    return process


