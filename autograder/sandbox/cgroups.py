"""Bounds the kernel enforces: each sandbox in a control group of its own (issue 47).

The judge's watch (``processes.watch_sandbox``) polls the sandbox's processes every 0.1 s, and kernel memory
is invisible to it by construction: data queued in sockets, tmpfs extended attributes, memfd pages whose
only descriptor is in flight in a socket (owned by no process). A memory control group counts all of it,
charged to the group of the process that made it, and the kernel stops the sandbox at the group's limit
before the host feels it. So every runner starts inside a new group:

* memory: ``memory.max`` (cgroup v2; ``memory.limit_in_bytes``, ``memory.memsw.limit_in_bytes`` and
  ``memory.kmem.tcp.limit_in_bytes`` on a v1 hierarchy), the sandbox's share (``sandbox_bytes``);
* tasks: ``pids.max``, processes and threads together;
* CPU: one core's worth (``cpu.max`` / ``cpu.cfs_quota_us``), so a notebook cannot take the cores the
  other workers grade on.

The runner joins its group before ``exec`` (``SandboxCgroup.join``, from the child's ``preexec_fn``), so
nothing it ever starts runs outside it. When the runner stops, the group's remaining processes are killed
and the group removed (``remove``); a group a killed judge left behind (its maker's pid is in its name) is
removed by ``reap_stale`` at the end of a batch. The watch stays as a second line: it names what it saw.

Where no group can be made (not root and nothing delegated), ``CgroupUnavailable`` says why and what
fixes it; grading then refuses unless ``--sandbox none`` (explicit: limits only) is given.
"""

from __future__ import annotations

import errno
import os
import signal
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

PREFIX = "course-sandbox-"
CPU_PERIOD_US = 100_000
FIX = ("grade as root, or in a delegated control group: systemd-run --user --scope -p Delegate=yes "
       "python -m autograder grade ...; or pass --sandbox none (limits only, no kernel-enforced bounds)")


class CgroupUnavailable(RuntimeError):
    """No control group can be made for a sandbox here; the message says why and what fixes it."""


def _mounts() -> dict[str, Path]:
    """Mount points by controller: "unified" for the v2 hierarchy, else each v1 controller's name."""
    found: dict[str, Path] = {}
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, rest = left.split(), right.split()
        if len(fields) < 5 or len(rest) < 3:
            continue
        point = Path(fields[4].replace("\\040", " "))
        if rest[0] == "cgroup2":
            found.setdefault("unified", point)
        elif rest[0] == "cgroup":
            for option in rest[2].split(","):
                if option in ("memory", "pids", "cpu"):
                    found.setdefault(option, point)
    return found


def _own_paths() -> dict[str, str]:
    """This process's group in each hierarchy, from ``/proc/self/cgroup``: "unified" or the v1 controller."""
    paths: dict[str, str] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return paths
    for line in lines:
        number, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if number == "0" and controllers == "":
            paths["unified"] = path
        for controller in controllers.split(","):
            if controller in ("memory", "pids", "cpu"):
                paths[controller] = path
    return paths


def _parents() -> tuple[str, dict[str, Path]]:
    """Where new groups go: ("v2", {"unified": dir}) when the v2 hierarchy has memory and pids to give,
    else ("v1", {"memory": dir, "pids": dir, "cpu": dir}) for the v1 controllers mounted (memory needed)."""
    mounts, own = _mounts(), _own_paths()
    if "unified" in mounts and "unified" in own:
        parent = mounts["unified"] / own["unified"].lstrip("/")
        try:
            available = (parent / "cgroup.controllers").read_text().split()
        except OSError:
            available = []
        if {"memory", "pids"} <= set(available):
            return "v2", {"unified": parent}
    parents = {name: mounts[name] / own.get(name, "/").lstrip("/") for name in ("memory", "pids", "cpu") if name in mounts}
    if "memory" in parents:
        return "v1", parents
    raise CgroupUnavailable("no memory control group can be made here: neither a cgroup v2 hierarchy with the memory "
                            f"and pids controllers nor a cgroup v1 memory hierarchy is mounted; {FIX}")


def _enable_controllers(parent: Path, controllers: set[str]) -> None:
    """Give ``controllers`` to ``parent``'s children. cgroup v2 refuses (EBUSY) while ``parent`` itself holds
    processes (a delegated scope holding the grader): the grader then moves into a leaf of its own first."""
    change = " ".join(f"+{c}" for c in sorted(controllers))
    try:
        _write(parent / "cgroup.subtree_control", change)
    except OSError as error:
        if error.errno != errno.EBUSY:
            raise
        leaf = parent / f"course-grader-{os.getpid()}"
        leaf.mkdir(exist_ok=True)
        for pid in (parent / "cgroup.procs").read_text().split():
            try:
                _write(leaf / "cgroup.procs", pid)
            except ProcessLookupError:
                pass
        _write(parent / "cgroup.subtree_control", change)


def _write(path: Path, value: str) -> None:
    with open(path, "w") as file:
        file.write(value)


@dataclass
class SandboxCgroup:
    """One sandbox's control group (one folder per hierarchy); ``join`` in the child, ``remove`` after."""

    version: str
    folders: dict[str, Path]
    limit_bytes: int
    removed: bool = field(default=False)

    @classmethod
    def create(cls, limit_bytes: int, max_tasks: int, cpus: float = 1.0) -> "SandboxCgroup":
        """A new group with these bounds; ``CgroupUnavailable`` (saying why and what fixes it) if none can be made."""
        version, parents = _parents()
        name = f"{PREFIX}{os.getpid()}-{uuid.uuid4().hex[:12]}"
        group = cls(version, {}, limit_bytes)
        try:
            if version == "v2":
                parent = parents["unified"]
                enabled = set((parent / "cgroup.subtree_control").read_text().split())
                wanted = {"memory", "pids"} | ({"cpu"} if "cpu" in (parent / "cgroup.controllers").read_text().split() else set())
                if not wanted <= enabled:
                    _enable_controllers(parent, wanted - enabled)
                folder = parent / name
                folder.mkdir()
                group.folders["unified"] = folder
                _write(folder / "memory.max", str(limit_bytes))
                if (folder / "memory.swap.max").exists():
                    _write(folder / "memory.swap.max", "0")
                _write(folder / "pids.max", str(max_tasks))
                if (folder / "cpu.max").exists():
                    _write(folder / "cpu.max", f"{int(cpus * CPU_PERIOD_US)} {CPU_PERIOD_US}")
            else:
                for controller, parent in parents.items():
                    folder = parent / name
                    folder.mkdir()
                    group.folders[controller] = folder
                memory = group.folders["memory"]
                _write(memory / "memory.limit_in_bytes", str(limit_bytes))
                for extra in ("memory.memsw.limit_in_bytes", "memory.kmem.tcp.limit_in_bytes"):
                    if (memory / extra).exists():
                        _write(memory / extra, str(limit_bytes))
                if "pids" in group.folders:
                    _write(group.folders["pids"] / "pids.max", str(max_tasks))
                if "cpu" in group.folders:
                    _write(group.folders["cpu"] / "cpu.cfs_period_us", str(CPU_PERIOD_US))
                    _write(group.folders["cpu"] / "cpu.cfs_quota_us", str(int(cpus * CPU_PERIOD_US)))
        except OSError as error:
            group.remove()
            raise CgroupUnavailable(f"a control group for the sandbox could not be made ({error}); {FIX}") from error
        return group

    def join(self) -> None:
        """Move the calling process into the group (called in the child before ``exec``)."""
        pid = str(os.getpid())
        for folder in self.folders.values():
            _write(folder / "cgroup.procs", pid)

    def _memory_folder(self) -> Path | None:
        return self.folders.get("unified" if self.version == "v2" else "memory")

    def _events(self) -> dict[str, int]:
        folder = self._memory_folder()
        name = "memory.events" if self.version == "v2" else "memory.oom_control"
        try:
            pairs = [line.split() for line in (folder / name).read_text().splitlines()]
        except (OSError, TypeError):
            return {}
        return {pair[0]: int(pair[1]) for pair in pairs if len(pair) == 2 and pair[1].isdigit()}

    def oom_killed(self) -> bool:
        """Whether the kernel killed a process of the group for reaching its memory limit."""
        return self._events().get("oom_kill", 0) > 0

    def peak_bytes(self) -> int | None:
        """The most memory the group held at once (kernel-counted), if the kernel tells."""
        folder = self._memory_folder()
        name = "memory.peak" if self.version == "v2" else "memory.max_usage_in_bytes"
        try:
            return int((folder / name).read_text().split()[0])
        except (OSError, ValueError, IndexError, TypeError):
            return None

    def pids(self) -> list[int]:
        found: set[int] = set()
        for folder in self.folders.values():
            try:
                found.update(int(p) for p in (folder / "cgroup.procs").read_text().split())
            except (OSError, ValueError):
                pass
        return sorted(found)

    def remove(self, wait_s: float = 5.0) -> None:
        """Kill every process still in the group, then remove its folders (idempotent)."""
        if self.removed:
            return
        deadline = time.monotonic() + wait_s
        while (pids := self.pids()) and time.monotonic() < deadline:
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            time.sleep(0.02)
        for folder in self.folders.values():
            _remove_folder(folder)
        self.removed = True


def _remove_folder(folder: Path) -> None:
    for _ in range(50):     # the kernel frees a group a moment after its last process has been reaped
        try:
            folder.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.02)


def available() -> str | None:
    """None when a sandbox's group can be made here, else the reason and the fix (made and removed once)."""
    try:
        SandboxCgroup.create(64 * 2**20, 8).remove()
    except CgroupUnavailable as error:
        return str(error)
    return None


def reap_stale() -> int:
    """Remove this course's groups whose maker has died (a judge killed before it could remove its runner's
    group: its pid is in the group's name), killing anything left in them; returns how many were removed.
    A live judge's groups are left alone: it removes its own."""
    try:
        _, parents = _parents()
    except CgroupUnavailable:
        return 0
    removed = 0
    for parent in parents.values():
        try:
            leftovers = [p for p in parent.iterdir() if p.name.startswith(PREFIX) and p.is_dir()]
        except OSError:
            continue
        for folder in leftovers:
            maker = folder.name[len(PREFIX):].split("-", 1)[0]
            if maker.isdigit() and not _alive(int(maker)):
                SandboxCgroup("", {"leftover": folder}, 0).remove()
                removed += not folder.exists()
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
