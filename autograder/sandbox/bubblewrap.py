"""bubblewrap: whether it works here, and the minimal read-only root it builds for the runner.

A user namespace with every capability dropped, its own mount, PID, IPC, UTS and network namespaces,
and a root built from nothing: ``/usr`` and the system's ``/bin``, ``/sbin``, ``/lib*``; from ``/etc``
only ``ETC_ESSENTIALS`` and a made-up ``passwd``/``group``; a fresh ``/proc``, a minimal ``/dev``; the
Python environment (``python_environment_paths``) and the two course packages
(``course_package_paths``), each bound alone and read-only; a hidden path inside one of them covered by
an empty read-only tmpfs; a private ``/tmp`` and ``/dev/shm`` in memory, capped (``limits``). The
whole picture, and what runs without bubblewrap, is in ``confinement``'s docstring.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from .limits import SANDBOX_SHM_BYTES, SANDBOX_TMP_BYTES, Limits

class SandboxUnavailable(RuntimeError):
    """bubblewrap is missing or cannot make namespaces here, and ``--sandbox none`` was not chosen."""


_BWRAP_WORKS: bool | None = None
_BWRAP_SIZES: bool | None = None
INSIDE_SEED = "/tmp/submission"         # the submission's files, read-only, as the runner finds them
INSIDE_WORK = "/tmp/work"               # the runner's working folder and HOME: a copy of them


# /etc entries Python, the C library and PyTorch read; nothing else of the host's /etc is shown.
ETC_ESSENTIALS = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone", "nsswitch.conf")


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
    """The ``autograder`` and ``utils`` package folders this process imports (bound read-only, alone).

    Found, not imported: ``utils`` imports PyTorch (two CPU seconds), which the grader's own process never
    needs; an imported package is found where it was imported from."""
    import importlib.util

    folders = []
    for name in ("autograder", "utils"):
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            raise ModuleNotFoundError(f"the course package {name!r} cannot be found from this Python")
        folders.append(Path(list(spec.submodule_search_locations)[0]).resolve())
    return folders


def _made_up_etc(scratch: Path) -> Path:
    """A host folder with the sandbox's own ``passwd`` and ``group``: one user, ``student``, with this
    process's ids, so nothing about the host's accounts is shown. It lies beside ``scratch``, in the
    caller's private folder, and goes when that folder goes: a folder of its own, removed at exit, was left
    in the temporary folder by every judge forked from one server (they end by ``os._exit``, 157 after one
    batch). Written once, read by every runner started on the same scratch folder."""
    folder = scratch.parent / f".{scratch.name}-etc"
    if not (folder / "group").is_file():
        uid, gid = os.getuid(), os.getgid()
        folder.mkdir(mode=0o755, exist_ok=True)
        (folder / "passwd").write_text(f"student:x:{uid}:{gid}:student:{INSIDE_WORK}:/usr/sbin/nologin\n"
                                       + ("" if uid == 65534 else "nobody:x:65534:65534:nobody:/:/usr/sbin/nologin\n"))
        (folder / "group").write_text(f"student:x:{gid}:\n" + ("" if gid == 65534 else "nogroup:x:65534:\n"))
    return folder


def _root_entries(scratch: Path) -> list[str]:
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
    made_up = _made_up_etc(scratch)
    args += ["--ro-bind", str(made_up / "passwd"), "/etc/passwd", "--ro-bind", str(made_up / "group"), "/etc/group"]
    return args


def bwrap_prefix(scratch: Path, hide: list[Path]) -> list[str]:
    """bubblewrap's arguments: a minimal root, read-only, built from nothing (see the module docstring).
    ``scratch`` is bound read-only at ``INSIDE_SEED``; its parent must be a private folder the caller
    removes: the made-up ``/etc`` is written there."""
    sized = bwrap_sizes_tmpfs()

    def tmpfs(path: str, size: int) -> list[str]:
        return (["--size", str(size)] if sized else []) + ["--tmpfs", path]

    args = ["bwrap", "--unshare-user", "--cap-drop", "ALL", "--unshare-net", "--unshare-pid", "--unshare-ipc",
            "--unshare-uts", "--die-with-parent", "--new-session", *_root_entries(scratch),
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
