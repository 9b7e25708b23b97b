"""A real one-node Slurm cluster on localhost for the tests: munged, slurmctld and slurmd, started in a
private folder with their own ports and sockets, and stopped afterwards.

Debian's packages (`apt-get install slurmctld slurmd slurm-client munge`, which `.ci/run` installs)
provide the daemons; `available()` says why not where they are missing, and the tests skip with that.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo", "scontrol")


def available() -> str | None:
    """None when a cluster can be started here, else the reason it cannot."""
    missing = [name for name in DAEMONS if not shutil.which(name)]
    if missing:
        return f"Slurm is not installed ({', '.join(missing)} missing: apt-get install slurmctld slurmd slurm-client munge)"
    if os.geteuid() != 0:
        return "a test cluster's slurmd must run as root"
    return None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Cluster:
    """``with Cluster(folder) as cluster:`` a running one-node cluster; ``cluster.env`` for its clients."""

    def __init__(self, folder: Path, cpus: int = 2):
        self.folder, self.cpus = Path(folder), cpus
        self.node = socket.gethostname().split(".")[0]
        self.env = dict(os.environ, SLURM_CONF=str(self.folder / "slurm.conf"))

    def _config(self) -> str:
        f = self.folder
        return "\n".join([
            "ClusterName=coursetest", f"SlurmctldHost={self.node}(127.0.0.1)",
            "SlurmUser=root", "SlurmdUser=root",
            "AuthType=auth/munge", f"AuthInfo=socket={f / 'munge.socket'}", "CredType=cred/munge",
            f"SlurmctldPort={_free_port()}", f"SlurmdPort={_free_port()}",
            f"StateSaveLocation={f / 'state'}", f"SlurmdSpoolDir={f / 'spool'}",
            f"SlurmctldPidFile={f / 'slurmctld.pid'}", f"SlurmdPidFile={f / 'slurmd.pid'}",
            f"SlurmctldLogFile={f / 'slurmctld.log'}", f"SlurmdLogFile={f / 'slurmd.log'}",
            "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none", "SchedulerType=sched/backfill",
            "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core", "ReturnToService=2", "MpiDefault=none",
            "SchedulerParameters=sched_interval=1", "MinJobAge=600",
            f"NodeName={self.node} NodeAddr=127.0.0.1 CPUs={self.cpus} RealMemory=16000 State=UNKNOWN",
            "PartitionName=grading Nodes=ALL Default=YES MaxTime=INFINITE State=UP", ""])

    def __enter__(self) -> "Cluster":
        for sub in ("state", "spool"):
            (self.folder / sub).mkdir(parents=True, exist_ok=True)
        (self.folder / "slurm.conf").write_text(self._config())
        f = self.folder
        key = f / "munge.key"   # the cluster's own key: nothing of the machine's munge set-up is used
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        subprocess.run(["munged", "--force", f"--key-file={key}", f"--socket={f / 'munge.socket'}", f"--pid-file={f / 'munged.pid'}",
                        f"--log-file={f / 'munged.log'}", f"--seed-file={f / 'munge.seed'}"], check=True)
        subprocess.run(["slurmctld"], env=self.env, check=True)
        subprocess.run(["slurmd"], env=self.env, check=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            state = subprocess.run(["sinfo", "-h", "-o", "%t"], env=self.env, capture_output=True, text=True).stdout
            if state.strip() in ("idle", "mix", "alloc"):
                return self
            time.sleep(0.5)
        self.__exit__()
        raise RuntimeError(f"the test cluster did not come up: sinfo says {state!r}; see {self.folder}/*.log")

    def __exit__(self, *exc) -> None:
        for name in ("slurmd.pid", "slurmctld.pid", "munged.pid"):
            try:
                os.kill(int((self.folder / name).read_text().split()[0]), signal.SIGTERM)
            except (OSError, ValueError):
                pass
        time.sleep(1)

    def wait_for(self, job_id: str, timeout: float) -> str:
        """Wait until ``job_id`` (and all its array tasks) leave the queue; return its final state."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            queued = subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%T"], env=self.env,
                                    capture_output=True, text=True).stdout.split()
            if not queued:
                break
            time.sleep(1)
        else:
            raise TimeoutError(f"job {job_id} still queued after {timeout:.0f} s")
        shown = subprocess.run(["scontrol", "show", "job", job_id], env=self.env, capture_output=True, text=True).stdout
        states = {part.split("=", 1)[1] for part in shown.split() if part.startswith("JobState=")}
        return ",".join(sorted(states))
