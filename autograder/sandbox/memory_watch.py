"""How much host memory one sandbox holds, whatever the mechanism (issue 28), for the judge's watch.

``processes.watch_sandbox`` sums this every ``MEMORY_POLL_S`` over the runner and all its descendants
and kills them all past ``--memory-mb``. Counted:

* the resident memory of every process (``/proc/PID/statm``; shared pages count once per process
  that maps them, so the sum errs high, never low);
* ``memfd`` files held open by a descriptor (``memfd_create``, written, unmapped, the descriptor
  kept): resident in no process, and the address-space limit does not see them; each counted once
  (by device and inode) at its allocated size;
* System V shared memory (``shmget``) of the sandbox's own IPC namespace (bubblewrap's
  ``--unshare-ipc``; with ``--sandbox none`` the runner gets one too where the kernel allows it,
  ``new_ipc_namespace``). A segment outlives every process attached to it; the namespace's segments
  die with its last process. The watch thread joins the namespace (``setns``, which needs
  ``CAP_SYS_ADMIN``: grading as root) to read ``/proc/sysvipc/shm``; where it cannot, and the runner
  shares the grader's namespace, the segments whose creator is one of the sandbox's processes are
  counted, and removed when the sandbox ends (``remove_segments``).

Not counted here because bounded elsewhere: the sandbox's ``/tmp`` and ``/dev/shm`` (tmpfs with a
size, ``SANDBOX_TMP_BYTES`` + ``SANDBOX_SHM_BYTES``).
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

CLONE_NEWIPC = 0x08000000
IPC_RMID = 0
_PAGE = os.sysconf("SC_PAGE_SIZE")


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def new_ipc_namespace() -> bool:
    """In a child before ``exec``: its own System V IPC namespace, if the kernel allows it here (root)."""
    try:
        return _libc().unshare(CLONE_NEWIPC) == 0
    except (OSError, AttributeError):
        return False


def ipc_namespace(pid: int) -> int | None:
    """The inode of ``pid``'s IPC namespace, or None when it cannot be read."""
    try:
        return os.stat(f"/proc/{pid}/ns/ipc").st_ino
    except OSError:
        return None


class SandboxMemory:
    """Reads the memory of one sandbox; one instance per watch thread (it may join the sandbox's IPC
    namespace, which only that thread then sees)."""

    def __init__(self):
        self.own_namespace = ipc_namespace(os.getpid())
        self.joined = False           # this thread now reads the sandbox's own IPC namespace
        self.shared_namespace = True  # the sandbox's System V segments are the host's (no namespace of its own)
        self.created: set[int] = set()   # segment ids made by the sandbox's processes (shared namespace only)

    def total(self, pids: list[int]) -> tuple[int, int]:
        """(bytes of memory the sandbox holds, tasks counted) for the processes ``pids``."""
        memory, tasks, memfds = 0, 0, {}
        for pid in pids:
            try:
                memory += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * _PAGE
                tasks += int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[17])
            except (OSError, ValueError, IndexError):
                tasks += 1
            memfds.update(_memfds_held(pid))
        return memory + sum(memfds.values()) + self._segments(pids), tasks

    def _segments(self, pids: list[int]) -> int:
        """Bytes of System V shared memory the sandbox holds."""
        if self.shared_namespace:   # until the sandbox's own namespace is seen (then joined once, or not at all)
            self._join(pids)
        if not self.shared_namespace:   # its own namespace: all of it, if this thread could join it
            return sum(rss for _, _, rss in _segment_rows()) if self.joined else 0
        rows = _segment_rows()
        mine = set(pids)
        self.created.update(ident for ident, creator, _ in rows if creator in mine)
        return sum(rss for ident, _, rss in rows if ident in self.created)

    def _join(self, pids: list[int]) -> None:
        """Join the IPC namespace of the sandbox's processes, if it is not ours (once it is seen)."""
        for pid in reversed(pids):
            namespace = ipc_namespace(pid)
            if namespace is None or namespace == self.own_namespace:
                continue
            self.shared_namespace = False
            try:
                fd = os.open(f"/proc/{pid}/ns/ipc", os.O_RDONLY)
            except OSError:
                return
            try:
                self.joined = _libc().setns(fd, CLONE_NEWIPC) == 0
            finally:
                os.close(fd)
            return

    def remove_segments(self) -> int:
        """Remove the segments the sandbox's processes made in the host's namespace; how many."""
        removed = 0
        for ident in sorted(self.created):
            removed += _libc().shmctl(ident, IPC_RMID, None) == 0
        self.created.clear()
        return removed


def _memfds_held(pid: int) -> dict:
    """(device, inode) -> allocated bytes of each memfd ``pid`` holds a descriptor to."""
    found = {}
    folder = f"/proc/{pid}/fd"
    try:
        names = os.listdir(folder)
    except OSError:
        return found
    for name in names:
        try:
            if not os.readlink(f"{folder}/{name}").startswith("/memfd:"):
                continue
            info = os.stat(f"{folder}/{name}")
        except OSError:
            continue
        found[(info.st_dev, info.st_ino)] = info.st_blocks * 512
    return found


def _segment_rows() -> list[tuple[int, int, int]]:
    """(shmid, creator pid, resident bytes) of each System V segment this thread's namespace shows."""
    try:
        lines = Path("/proc/sysvipc/shm").read_text().splitlines()[1:]
    except OSError:
        return []
    rows = []
    for line in lines:
        fields = line.split()
        try:
            rows.append((int(fields[1]), int(fields[4]), int(fields[14])))
        except (IndexError, ValueError):
            continue
    return rows


# --------------------------------------------------------------------------------------------------
# The sum across workers: each notebook is bounded, so the batch is bounded by how many run at once.

JUDGE_MB = 512          # one judge process (Python, PyTorch, the test's own tensors), not student code
AHEAD_MB = 1024         # the next judge and runner a worker starts ahead (imports only, no student code)
HOST_SHARE = 0.8        # of the host's memory, the default budget of a batch


def host_memory_mb() -> int:
    """The host's memory (``MemTotal``), in MB; 0 when it cannot be read."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def sandbox_mb(memory_mb: int, isolated: bool) -> int:
    """One sandbox's share of the host: ``--memory-mb``, plus its memory-backed ``/tmp`` and ``/dev/shm``
    with bubblewrap. Its control group's memory limit (``cgroups``) is this."""
    from .limits import SANDBOX_SHM_BYTES, SANDBOX_TMP_BYTES

    return memory_mb + ((SANDBOX_TMP_BYTES + SANDBOX_SHM_BYTES) // 2**20 if isolated else 0)


def notebook_bound_mb(memory_mb: int, isolated: bool) -> int:
    """The most host memory one notebook being graded can hold: its sandbox (``sandbox_mb``), its judge, and
    the judge and runner started ahead of the next."""
    return sandbox_mb(memory_mb, isolated) + JUDGE_MB + AHEAD_MB


def workers_within(workers: int, budget_mb: int | None, memory_mb: int, isolated: bool) -> tuple[int, str]:
    """How many notebooks may be graded at once so that their bounds add up to at most ``budget_mb``
    (default ``HOST_SHARE`` of the host's memory), at least one; and a note when that is fewer than
    ``workers`` (empty otherwise)."""
    budget = budget_mb if budget_mb is not None else int(host_memory_mb() * HOST_SHARE)
    if budget <= 0:
        return workers, ""
    each = notebook_bound_mb(memory_mb, isolated)
    allowed = max(1, min(workers, budget // each))
    if allowed == workers:
        return workers, ""
    over = " (one notebook alone may exceed it: lower --memory-mb)" if budget < each else ""
    return allowed, (f"grading {allowed} notebook(s) at once instead of {workers}: each may hold up to {each:,} MB "
                     f"(--memory-mb {memory_mb:,} and the sandbox's tmpfs, its judge, the next one started ahead), "
                     f"and the host's budget is {budget:,} MB (--host-memory-mb){over}")
