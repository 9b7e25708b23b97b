"""A simulated Colab runtime, built once per session without downloading anything.

* a virtual environment with no system site-packages, whose site-packages holds symbolic links to
  only what Colab preinstalls that the course relies on (``COLAB_PACKAGES`` and their dependencies,
  taken from the Python running the tests) plus ipykernel, and a stub ``google.colab`` package;
* a folder of wheels ("wheelhouse"): this repository built as a wheel, and every package of the
  ``notebooks`` extra that Colab lacks (``hypothesis``, ...) repacked from the current environment;
* pip in the kernel sees only that folder (``PIP_NO_INDEX``, ``PIP_FIND_LINKS``), and the set-up
  cell installs from the course wheel (``COURSE_INSTALL_SOURCE``) instead of the repository.

``run_alone`` executes one notebook there, alone in an empty folder, cell by cell on the CPU clock: the
suite's one full run of each notebook (tests/conftest.py, ``notebook_run``), read by
test_colab_simulation.py (it ran alone) and test_solutions_and_mutants.py (it ran clean, its CPU time).
Between notebooks, whatever the set-up cell installed is removed again, so each one installs afresh.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from autograder import selfgrade
from autograder.course import conventions, setup_cell
from autograder.course.check import _error_of
from autograder.sandbox import cpu_time
from autograder.sandbox.cpu_time import ONE_THREAD
from utils import claims

# What a fresh Colab runtime already has, among the packages the course uses (with their
# dependencies). Not hypothesis: Colab does not ship it, so the set-up cell must install it.
COLAB_PACKAGES = ("torch", "numpy", "matplotlib", "tqdm", "tokenizers", "pip", "ipykernel", "matplotlib-inline")

KERNEL_NAME = "simulated-colab"


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_parser():
    try:
        from packaging.requirements import Requirement
    except ImportError:  # pragma: no cover - pip always vendors it
        from pip._vendor.packaging.requirements import Requirement
    return Requirement


def _closure(roots: list[tuple[str, tuple[str, ...]]]) -> dict[str, importlib.metadata.Distribution]:
    """Installed distributions needed by ``roots`` (name, extras), following requirements recursively."""
    requirement = _requirement_parser()
    found: dict[str, importlib.metadata.Distribution] = {}
    seen: set[tuple[str, tuple[str, ...]]] = set()
    queue = list(roots)
    while queue:
        name, extras = queue.pop()
        key = (_canonical(name), tuple(sorted(extras)))
        if key in seen:
            continue
        seen.add(key)
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        found[_canonical(name)] = dist
        for text in dist.requires or []:
            req = requirement(text)
            wanted = ("",) + tuple(extras)
            if req.marker is None or any(req.marker.evaluate({"extra": extra}) for extra in wanted):
                queue.append((req.name, tuple(req.extras)))
    return found


def _dist_info_dir(dist: importlib.metadata.Distribution) -> str:
    for path in dist.files or []:
        if path.parts and path.parts[0].endswith(".dist-info"):
            return path.parts[0]
    raise RuntimeError(f"{dist.metadata['Name']} has no .dist-info folder")


def _top_level_entries(dist: importlib.metadata.Distribution) -> set[str]:
    """The site-packages entries a distribution installed (packages, modules, its .dist-info)."""
    if dist.files is None:
        raise RuntimeError(f"{dist.metadata['Name']} lists no files (RECORD); cannot link it")
    entries = set()
    for path in dist.files:
        top = path.parts[0] if path.parts else ""
        if not top or top in ("..", "__pycache__") or top.endswith(".pth"):
            continue
        entries.add(top)
    return entries


def _repack_wheel(dist: importlib.metadata.Distribution, wheelhouse: Path) -> Path:
    """Rebuild an installed (pip-installed) distribution as a wheel, so pip can install it offline."""
    tags = [line.split(":", 1)[1].strip() for line in (dist.read_text("WHEEL") or "").splitlines()
            if line.startswith("Tag:")]
    parts = [tag.split("-") for tag in tags] or [["py3", "none", "any"]]
    tag = "-".join(".".join(dict.fromkeys(p[i] for p in parts)) for i in range(3))  # py2-none-any + py3-none-any: py2.py3-none-any
    name = re.sub(r"[-_.]+", "_", dist.metadata["Name"])
    target = wheelhouse / f"{name}-{dist.version}-{tag}.whl"
    info = _dist_info_dir(dist)
    records = []
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in dist.files or []:
            if not path.parts or path.parts[0] == ".." or "__pycache__" in path.parts or path.suffix == ".pyc":
                continue
            if path.parts[0] == info and path.name in ("RECORD", "INSTALLER", "REQUESTED", "direct_url.json"):
                continue
            source = Path(dist.locate_file(path))
            if not source.is_file():
                continue
            data = source.read_bytes()
            arcname = path.as_posix()
            archive.writestr(arcname, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            records.append(f"{arcname},sha256={digest},{len(data)}")
        records.append(f"{info}/RECORD,,")
        archive.writestr(f"{info}/RECORD", "\n".join(records) + "\n")
    return target


def _build_course_wheel(wheelhouse: Path, scratch: Path) -> Path:
    """This repository as a wheel, built from a copy (nothing is written into the checkout)."""
    source = scratch / "course-source"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(conventions.REPO_ROOT / name, source / name)
    for package in ("utils", "autograder"):
        shutil.copytree(conventions.REPO_ROOT / package, source / package, ignore=ignore)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--no-index", "-w", str(wheelhouse), str(source)], check=True, capture_output=True)
    (wheel,) = wheelhouse.glob("transformer_course-*.whl")
    return wheel


@dataclass
class SimulatedColab:
    python: Path
    site_packages: Path
    kernels: Path
    wheel: Path
    wheelhouse: Path
    baseline: frozenset[str]  # site-packages entries before any notebook ran

    def environment(self, **extra: str) -> dict[str, str]:
        env = {
            setup_cell.INSTALL_SOURCE_VARIABLE: self.wheel.as_uri(),
            "PIP_NO_INDEX": "1",
            "PIP_FIND_LINKS": str(self.wheelhouse),
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "PIP_NO_CACHE_DIR": "1",
            "PYTHONPATH": "",
            "PYTHONNOUSERSITE": "1",
            "COURSE_OFFLINE": "1",
            claims.STRICT: "1",     # a claim of the prose that does not hold fails the notebook's run
            "MPLBACKEND": "module://matplotlib_inline.backend_inline",
            **ONE_THREAD,   # Colab has 2 threads; on a busy test machine their spin-waiting cost 12 CPU minutes (issue 35)
        }
        env.update(extra)
        return env

    def write_kernel(self, **extra: str) -> None:
        spec = {"argv": [str(self.python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "Simulated Colab", "language": "python", "env": self.environment(**extra)}
        folder = self.kernels / KERNEL_NAME
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "kernel.json").write_text(json.dumps(spec, indent=1))

    def reset(self) -> None:
        """Remove what the set-up cell installed (real files only: the links stay)."""
        for entry in self.site_packages.iterdir():
            if entry.name in self.baseline:
                continue
            if entry.is_symlink() or entry.is_file():
                entry.unlink()
            else:
                shutil.rmtree(entry)


@pytest.fixture(scope="session")
def colab(tmp_path_factory) -> SimulatedColab:
    root = tmp_path_factory.mktemp("colab")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    site_packages = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                        check=True, capture_output=True, text=True).stdout.strip())

    allowed = _closure([(name, ()) for name in COLAB_PACKAGES])
    for dist in allowed.values():
        for entry in _top_level_entries(dist):
            link = site_packages / entry
            target = Path(dist.locate_file(entry))
            if not link.exists() and not link.is_symlink() and target.exists():
                link.symlink_to(target, target_is_directory=target.is_dir())
    stub = root / "stub" / "google" / "colab"  # a namespace package `google` holding `colab`
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text('"""Stand-in for Google Colab\'s module: only its presence matters."""\n')
    (site_packages / "simulated_colab.pth").write_text(str(root / "stub") + "\n")

    wheelhouse = root / "wheelhouse"
    wheelhouse.mkdir()
    wheel = _build_course_wheel(wheelhouse, root)
    project = tomllib.loads((conventions.REPO_ROOT / "pyproject.toml").read_text())["project"]
    requirement = _requirement_parser()
    extras = [requirement(r) for r in project["optional-dependencies"][setup_cell.NOTEBOOKS_EXTRA]]
    for name, dist in _closure([(r.name, tuple(r.extras)) for r in extras]).items():
        if name not in allowed:
            _repack_wheel(dist, wheelhouse)

    env = SimulatedColab(python, site_packages, root / "kernels", wheel, wheelhouse,
                         frozenset(p.name for p in site_packages.iterdir()))
    env.write_kernel()
    return env


def execute(nb, folder: Path, colab: SimulatedColab, timeout: int):
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    km = KernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(colab.kernels)]))
    client = NotebookClient(nb, km=km, timeout=timeout, allow_errors=True, kernel_name=KERNEL_NAME,
                            resources={"metadata": {"path": str(folder)}})
    try:
        client.execute()
    finally:
        # nbclient shuts down only kernels it created itself; this one is ours. Left running, each
        # notebook's kernel kept ~500 MB and its PyTorch threads for the rest of the session.
        if km.has_kernel:
            km.shutdown_kernel(now=True)
    return nb


def errors(nb) -> list[str]:
    found = []
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                first_line = cell.source.strip().splitlines()[0] if cell.source.strip() else ""
                found.append(f"cell {index} ({first_line[:60]!r}): {output.get('ename')}: {output.get('evalue', '')[:300]}")
    return found


def text(cell) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")


@dataclass
class AloneRun:
    """One notebook run alone on the simulated Colab: the executed notebook, its CPU seconds (the
    self-grading cell left out, as budgets are set without it), its longest cell's, each error."""
    executed: object
    seconds: float = 0.0
    heaviest_cell_seconds: float = 0.0
    cell_errors: dict[int, str] = field(default_factory=dict)


def run_alone(nb, folder: Path, colab: SimulatedColab, *, wall_timeout_s: int, cell_cpu_limit_s: float) -> AloneRun:
    """Execute ``nb`` (not changed) in ``folder`` on the simulated Colab, cell by cell, each timed in the
    kernel's CPU seconds and interrupted past ``cell_cpu_limit_s`` of them (or ``wall_timeout_s`` on the clock)."""
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    colab.reset()
    run = AloneRun(copy.deepcopy(nb))
    km = KernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(colab.kernels)]))
    client = NotebookClient(run.executed, km=km, timeout=wall_timeout_s, allow_errors=True, kernel_name=KERNEL_NAME,
                            interrupt_on_timeout=True, resources={"metadata": {"path": str(folder)}})
    try:
        with client.setup_kernel():
            clock = cpu_time.CellClock(getattr(km.provisioner, "pid", None), cell_cpu_limit_s)
            for index, cell in enumerate(run.executed.cells):
                if cell.cell_type == "code":
                    _run_cell(client, clock, cell, index, run)
    finally:
        if km.has_kernel:        # nbclient shuts down only kernels it created itself; this one is ours
            km.shutdown_kernel(now=True)
    return run


def _run_cell(client, clock: cpu_time.CellClock, cell, index: int, run: AloneRun) -> None:
    with clock.cell() as watch:
        client.execute_cell(cell, index)
    if not selfgrade.is_self_grading_cell(cell):
        run.seconds += watch.seconds
        run.heaviest_cell_seconds = max(run.heaviest_cell_seconds, watch.seconds)
    error = _error_of(cell.get("outputs", []))
    if error:
        run.cell_errors[index] = f"cell {index} ({conventions.grade_id(cell) or 'no grade_id'}): {error}"
