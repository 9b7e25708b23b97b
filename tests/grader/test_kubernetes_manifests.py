"""The Kubernetes manifests ask for what the instructor guide says, in fields the Job API has.

No cluster is available to the test suite, so this checks the manifests against the batch/v1 Job,
PodSpec and Container fields they rely on (written here from the Kubernetes API reference), and runs
each container's shell command as Kubernetes would start it (its `$(VAR)` expansion, then `sh -c`,
with a stand-in `python` that prints its arguments), for a chosen shard index.
"""

from __future__ import annotations

import os
import re
import subprocess

import yaml

from autograder.course import conventions

FOLDER = conventions.REPO_ROOT / "autograder" / "cluster" / "kubernetes"
JOB_SPEC = {"activeDeadlineSeconds", "backoffLimit", "backoffLimitPerIndex", "completionMode", "completions",
            "managedBy", "manualSelector", "maxFailedIndexes", "parallelism", "podFailurePolicy", "podReplacementPolicy",
            "selector", "successPolicy", "suspend", "template", "ttlSecondsAfterFinished"}
POD_SPEC = {"automountServiceAccountToken", "containers", "restartPolicy", "securityContext", "volumes",
            "nodeSelector", "tolerations", "affinity", "serviceAccountName", "imagePullSecrets", "initContainers"}
CONTAINER = {"name", "image", "command", "args", "env", "resources", "securityContext", "volumeMounts",
             "workingDir", "imagePullPolicy"}


def _load(name: str) -> dict:
    return yaml.safe_load((FOLDER / name).read_text())


def _kubernetes_expand(text: str, env: dict[str, str]) -> str:
    """Kubernetes' expansion of command/args: $(VAR) for defined variables, $$ for a literal $."""
    return re.sub(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)",
                  lambda m: "$" if m.group(0) == "$$" else env.get(m.group(1), m.group(0)), text)


def _run_container(job: dict, index: int, tmp_path) -> list[str]:
    container = job["spec"]["template"]["spec"]["containers"][0]
    env = {item["name"]: item["value"] for item in container.get("env", [])}
    env["JOB_COMPLETION_INDEX"] = str(index)
    stand_in = tmp_path / "bin"
    stand_in.mkdir(exist_ok=True)
    (stand_in / "python").write_text('#!/bin/sh\nprintf "%s\\n" "$@"\n')
    (stand_in / "python").chmod(0o755)
    command = [_kubernetes_expand(part, env) for part in container["command"] + container["args"]]
    done = subprocess.run(command, capture_output=True, text=True, timeout=30,
                          env={**os.environ, **env, "PATH": f"{stand_in}:{os.environ['PATH']}"})
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_the_grading_job_is_an_indexed_job_with_one_shard_per_index(tmp_path):
    job = _load("grade-job.yaml")
    assert (job["apiVersion"], job["kind"]) == ("batch/v1", "Job")
    spec = job["spec"]
    assert set(spec) <= JOB_SPEC, set(spec) - JOB_SPEC
    pod = spec["template"]["spec"]
    assert set(pod) <= POD_SPEC and pod["restartPolicy"] == "Never"   # backoffLimitPerIndex needs Never
    container = pod["containers"][0]
    assert set(container) <= CONTAINER, set(container) - CONTAINER
    shards = int({e["name"]: e["value"] for e in container["env"]}["SHARDS"])
    assert spec["completionMode"] == "Indexed" and spec["completions"] == shards
    assert 1 <= spec["parallelism"] <= shards
    assert _run_container(job, 2, tmp_path) == [
        "-m", "autograder", "grade", "/shared/submitted", "--out", "/shared/out/shard-2",
        "--shard", f"2/{shards}", "--workers", "2", "--sandbox", "none"]
    claims = {v["persistentVolumeClaim"]["claimName"] for v in pod["volumes"]}
    assert claims == {_load("course-volumes.yaml")["metadata"]["name"]}
    assert "ReadWriteMany" in _load("course-volumes.yaml")["spec"]["accessModes"]


def test_the_merge_job_merges_every_shard_and_expects_k(tmp_path):
    job, grading = _load("merge-job.yaml"), _load("grade-job.yaml")
    assert (job["apiVersion"], job["kind"]) == ("batch/v1", "Job") and set(job["spec"]) <= JOB_SPEC
    shards = grading["spec"]["completions"]
    assert _run_container(job, 0, tmp_path) == [
        "-m", "autograder", "merge", *(f"/shared/out/shard-{i}" for i in range(shards)),
        "--out", "/shared/out/merged", "--expect", str(shards)]
