"""The conda and pip descriptions agree, CI runs the README's test command, the repository URL is
set in one place, and the README's student quick start installs what the notebooks import."""

from __future__ import annotations

import ast
import importlib.metadata
import os
import re
import subprocess
import sys
import tomllib
import warnings
from pathlib import Path

import nbformat
import pytest

from autograder.course import build as build_module
from autograder.course import conventions, mutant_edits, setup_cell
from autograder.__main__ import main as autograder_main
from utils import environment

CONDA_NAMES = {"pytorch": "torch"}
PROJECT = tomllib.loads((conventions.REPO_ROOT / "pyproject.toml").read_text())["project"]
README = (conventions.REPO_ROOT / "README.md").read_text()


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~ \[;]", requirement.strip(), maxsplit=1)[0].lower()


def _names(requirements) -> set[str]:
    """Requirement names, leaving out the project's references to its own extras."""
    return {_name(r) for r in requirements} - {PROJECT["name"]}


def _student_block() -> str:
    section = README[README.index("### Students"):README.index("### Instructors")]
    match = re.search(r"```(?:bash|sh)?\n(.+?)\n```", section, re.DOTALL)
    assert match, "README's Students section must show its commands in a code block"
    return match.group(1)


def test_environment_yml_matches_pyproject():
    pip_side = _names(PROJECT["dependencies"])
    for extra in PROJECT["optional-dependencies"].values():
        pip_side |= _names(extra)
    conda_side = set()
    text = (conventions.REPO_ROOT / "environment.yml").read_text()
    for line in text[text.index("\ndependencies:"):].splitlines():
        match = re.match(r"^  - ([A-Za-z0-9_.-]+)", line)
        if match and match.group(1) not in ("pip", "python"):
            conda_side.add(CONDA_NAMES.get(match.group(1), match.group(1)).lower())
    assert pip_side == conda_side, f"only in pyproject: {pip_side - conda_side}; only in environment.yml: {conda_side - pip_side}"


def test_ci_runs_the_readme_test_command():
    ci = (conventions.REPO_ROOT / ".ci" / "run").read_text()
    match = re.search(r"<!-- test-command -->\s*```(?:bash|sh)?\n(.+?)\n```", README, re.DOTALL)
    assert match, "README.md must show the test command in a code block after <!-- test-command -->"
    command = match.group(1).strip()
    assert command in ci, f".ci/run must run the README's test command {command!r}"


# --- one repository URL -------------------------------------------------------------------------

def test_readme_clone_command_uses_the_configured_repository():
    match = re.search(r"git clone (\S+) && cd (\S+)", _student_block())
    assert match, "README's student quick start must start with `git clone URL && cd FOLDER`"
    assert match.group(1) == setup_cell.REPOSITORY_URL, \
        f"README clones {match.group(1)}, autograder/course/setup_cell.py says {setup_cell.REPOSITORY_URL}"
    assert match.group(2) == setup_cell.REPOSITORY_URL.rstrip("/").rsplit("/", 1)[-1], "`cd` must enter the cloned folder"


def test_readme_colab_badges_use_the_configured_repository():
    links = re.findall(r"\]\((https://colab\.research\.google\.com/github/[^)\s]+)\)", README)
    for link in links:
        path = link.split(f"/blob/{setup_cell.BRANCH}/", 1)[-1]
        assert link == setup_cell.colab_url(path), f"badge {link} does not match setup_cell.colab_url({path!r})"
        assert (conventions.REPO_ROOT / path).exists(), f"badge {link} points to a notebook that does not exist"


def test_release_build_refuses_a_placeholder_url(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(setup_cell, "REPOSITORY_URL", "https://github.com/OWNER/REPO")
    with pytest.raises(build_module.BuildError, match="placeholder"):
        build_module.build(tmp_path / "solutions", tmp_path / "notebooks", release=True)
    assert autograder_main(["build", "--release"]) == 1
    assert "refusing a release build" in capsys.readouterr().err
    assert not (tmp_path / "notebooks").exists(), "a refused release build must write nothing"


def test_release_check_accepts_a_real_address_only():
    assert setup_cell.release_problems("https://github.com/some-university/transformers-2026") == []
    for url in sorted(setup_cell.PLACEHOLDER_URLS) + ["https://gitlab.com/a/b", "https://github.com/a/b/", "github.com/a/b"]:
        assert setup_cell.release_problems(url), f"{url} must not pass as a release URL"


def test_setup_cell_names_the_real_distribution_and_extra():
    assert setup_cell.DISTRIBUTION == environment.DISTRIBUTION == PROJECT["name"]
    assert setup_cell.NOTEBOOKS_EXTRA == environment.NOTEBOOKS_EXTRA
    assert setup_cell.NOTEBOOKS_EXTRA in PROJECT["optional-dependencies"]
    assert f"{setup_cell.DISTRIBUTION}[{setup_cell.NOTEBOOKS_EXTRA}] @ " in setup_cell.setup_cell_source()


def test_setup_cell_explains_missing_helpers_instead_of_crashing():
    """Outside Colab with no helpers installed: one sentence saying what to run, not a ModuleNotFoundError."""
    code = ("import sys\nsys.modules['utils'] = None\nsys.modules['google.colab'] = None\n"
            "try:\n" + "".join(f"    {line}\n" for line in setup_cell.setup_cell_source().splitlines()) +
            "except Exception as error:\n    print(type(error).__name__, error._render_traceback_())\n")
    import subprocess

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("SetupError [") and "'Set-up failed: cannot import the course helpers (`utils`) in this Python" \
        in out.stdout.replace('"', "'"), out.stdout
    assert "pip install -e '.[notebooks]'" in out.stdout, out.stdout


def test_readme_and_set_up_cell_say_first_that_the_course_is_not_published_while_the_url_is_a_placeholder():
    quick_start_first_line = README.split("## Quick start", 1)[1].strip().splitlines()[0]
    cell_first_line = setup_cell.setup_cell_source().splitlines()[0]
    if setup_cell.published():
        assert "not published" not in (quick_start_first_line + cell_first_line).lower(), \
            "the course is published: remove the 'not published yet' notes (README's quick start)"
    else:
        assert quick_start_first_line.startswith("**Not published yet:**") and "placeholder" in quick_start_first_line
        assert cell_first_line.startswith("# NOT PUBLISHED YET") and "placeholder" in cell_first_line
        assert "pip wheel --no-deps ." in README.split("### Students", 1)[0]


def test_a_published_set_up_cell_installs_from_the_repository(monkeypatch):
    monkeypatch.setattr(setup_cell, "REPOSITORY_URL", "https://github.com/some-university/transformers-2026")
    cell = setup_cell.setup_cell_source()
    assert cell.startswith("# Set-up: run this cell first.")
    assert '"git+https://github.com/some-university/transformers-2026@main"' in cell and "glob" not in cell


def _run_setup_on_fake_colab(folder: Path, wheel: str | None) -> str:
    """The unpublished set-up cell on a fake Colab (no helpers) in ``folder``: its one-line SetupError."""
    if wheel:
        (folder / wheel).write_bytes(b"not a real wheel")
    code = ("import sys, types\nsys.modules['utils'] = None\nsys.modules['google'] = types.ModuleType('google')\n"
            "sys.modules['google.colab'] = types.ModuleType('google.colab')\n"
            "try:\n" + "".join(f"    {line}\n" for line in setup_cell.setup_cell_source().splitlines()) +
            "except Exception as error:\n    print(type(error).__name__, error._render_traceback_())\n")
    env = {k: v for k, v in os.environ.items() if k != setup_cell.INSTALL_SOURCE_VARIABLE} | {"PIP_NO_INDEX": "1"}
    out = subprocess.run([sys.executable, "-c", code], cwd=folder, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout.replace('"', "'")


@pytest.mark.skipif(setup_cell.published() or Path("/content").exists(), reason="only while the URL is a placeholder")
def test_unpublished_set_up_cell_on_colab_installs_an_uploaded_wheel_or_says_how(tmp_path):
    without = _run_setup_on_fake_colab(tmp_path, None)
    assert without.startswith("SetupError [") and "not published yet" in without and "pip wheel --no-deps ." in without
    with_wheel = _run_setup_on_fake_colab(tmp_path, "transformer_course-0.1.0-py3-none-any.whl")
    assert "could not install the course helpers from file://" in with_wheel, with_wheel
    assert str(tmp_path / "transformer_course-0.1.0-py3-none-any.whl") in with_wheel, with_wheel


# --- the student quick start ----------------------------------------------------------------------

def test_student_quick_start_installs_cpu_pytorch_first():
    lines = [line.split("#")[0].strip() for line in _student_block().splitlines()]
    cpu = next((i for i, line in enumerate(lines) if "download.pytorch.org/whl/cpu" in line), None)
    course = next((i for i, line in enumerate(lines) if re.match(r"pip install -e \"?\.\[", line)), None)
    assert cpu is not None, "the student quick start must install the CPU build of PyTorch (no multi-GB CUDA wheels on a laptop)"
    assert course is not None and cpu < course, "the CPU PyTorch line must come before the course's install line"
    assert "jupyter lab" in _student_block()


def _requirement_parser():
    try:
        from packaging.requirements import Requirement
    except ImportError:  # pragma: no cover
        from pip._vendor.packaging.requirements import Requirement
    return Requirement


def _installed_closure(requirements: list[str]) -> set[str]:
    """Distributions (canonical names) that installing ``requirements`` pulls in, read from this environment."""
    requirement = _requirement_parser()
    canonical = lambda name: re.sub(r"[-_.]+", "-", name).lower()  # noqa: E731
    seen, queue, found = set(), [requirement(r) for r in requirements], set()
    while queue:
        req = queue.pop()
        extras = tuple(sorted(req.extras))
        key = (canonical(req.name), extras)
        if key in seen:
            continue
        seen.add(key)
        if canonical(req.name) == canonical(PROJECT["name"]):
            deps = list(PROJECT["dependencies"])
            for extra in extras:
                deps += PROJECT["optional-dependencies"][extra]
            queue += [requirement(d) for d in deps]
            continue
        try:
            dist = importlib.metadata.distribution(req.name)
        except importlib.metadata.PackageNotFoundError:
            continue
        found.add(canonical(req.name))
        for text in dist.requires or []:
            sub = requirement(text)
            if sub.marker is None or any(sub.marker.evaluate({"extra": e}) for e in ("",) + extras):
                queue.append(sub)
    return found


def _notebook_imports(path) -> set[str]:
    nb = nbformat.read(str(path), as_version=4)
    modules = set()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        source = "\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!")))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes in a cell are not this test's business
            tree = ast.parse(source)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules.add(node.module.split(".")[0])
    return modules


def test_student_quick_start_provides_every_import_of_the_notebooks():
    match = re.search(r"pip install -e \"?\.(\[[a-z,]+\])\"?", _student_block())
    assert match, "the student quick start must install the course with an extra: pip install -e \".[student]\""
    installed = _installed_closure([f"{PROJECT['name']}{match.group(1)}"])
    providers = importlib.metadata.packages_distributions()
    own = {name.split(".")[0] for name in _wheel_packages()}
    problems = []
    for path in sorted(conventions.NOTEBOOKS_DIR.glob("*/*.ipynb")):
        for module in sorted(_notebook_imports(path)):
            if module in sys.stdlib_module_names or module in own or module == "google":
                continue
            dists = {re.sub(r"[-_.]+", "-", d).lower() for d in providers.get(module, [])}
            if not dists & installed:
                problems.append(f"{path.relative_to(conventions.REPO_ROOT)} imports {module} "
                                f"(from {sorted(dists) or 'an unknown distribution'}), which the student quick start does not install")
    assert not problems, "\n".join(problems) + "\nAdd it to the `notebooks` extra in pyproject.toml (and environment.yml)."


def test_ci_installs_into_a_fresh_virtual_environment():
    """CI sets up as the README tells a maintainer: a new venv inside the clone, the package installed
    into it, the tests run with its Python; never the machine's own interpreter and its leftovers."""
    ci = (conventions.REPO_ROOT / ".ci" / "run").read_text()
    lines = [line.strip() for line in ci.splitlines() if line.strip() and not line.strip().startswith("#")]
    venv = next(i for i, line in enumerate(lines) if re.match(r"python3? -m venv \.venv$", line))
    activate = next(i for i, line in enumerate(lines) if line == "source .venv/bin/activate")
    install = next(i for i, line in enumerate(lines) if 'pip install --quiet -e ".[dev]"' in line)
    test = next(i for i, line in enumerate(lines) if line == "python -m pytest")
    assert any(line == "rm -rf .venv" for line in lines[:venv]), "the venv must be made afresh"
    assert venv < activate < install < test, lines
    assert "python -m venv .venv" in README and 'pip install -e ".[dev]"' in README


def test_the_container_copies_the_mutants_its_demo_needs():
    """The demo's 'partly wrong' student is built from mutants: an image without them would grade an
    all-correct sample and call it partly wrong."""
    dockerfile = (conventions.REPO_ROOT / "autograder" / "container" / "Dockerfile").read_text(encoding="utf-8")
    assert "COPY mutants/ mutants/" in dockerfile
    assert "COPY contracts/ contracts/" in dockerfile   # the judge checks the declared return types
    assert conventions.MUTANTS_DIR == conventions.REPO_ROOT / "mutants"
    for assignment in conventions.assignments():
        assert mutant_edits.read_edits(assignment.mutants_path), f"no mutants for {assignment.name} in {conventions.MUTANTS_DIR}"


def test_the_demo_refuses_to_build_without_mutants(tmp_path, monkeypatch):
    from autograder.course import demo

    monkeypatch.setattr(conventions, "MUTANTS_DIR", tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError, match="partly wrong"):
        demo.make_samples(tmp_path / "samples")


def test_check_command_reports_and_fails_on_a_missed_mutant(monkeypatch, capsys):
    """``python -m autograder check`` prints a line per notebook and exits 1 when a mutant is missed."""
    from autograder.course import check

    caught = check.MutantResult("f", "f__a", "a", ["test_f"])
    missed = check.MutantResult("f", "f__b", "b", [])
    report = check.NotebookReport("01_next_token", 2.0, 60.0, mutants=[caught, missed])
    monkeypatch.setattr(check, "run_notebook", lambda assignment, with_mutants=True: report)
    assert autograder_main(["check", "01_next_token"]) == 1
    out = capsys.readouterr().out
    assert "01_next_token: 2.0 s of its 60 s budget (within budget)" in out and "mutants caught 1/2 (50%)" in out
    assert "MISSED f__b: b" in out
    report.mutants = [caught]
    assert autograder_main(["check", "01_next_token"]) == 0
    assert autograder_main(["check", "no_such_assignment"]) == 2


def _wheel_packages() -> list[str]:
    """The packages a non-editable install of the course holds, as setuptools finds them from pyproject.toml."""
    from setuptools import find_namespace_packages

    config = tomllib.loads((conventions.REPO_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    return find_namespace_packages(where=str(conventions.REPO_ROOT), **config["packages"]["find"])


def test_every_python_package_of_the_course_is_in_the_wheel():
    """Simulated Colab (and any pip install that is not editable) gets only what the wheel holds: a
    subpackage left out (autograder.judge once was) breaks self-grading there, and nowhere else."""
    found = _wheel_packages()
    for top in ("autograder", "utils"):
        for init in sorted((conventions.REPO_ROOT / top).rglob("__init__.py")):
            package = ".".join(init.parent.relative_to(conventions.REPO_ROOT).parts)
            assert package in found, f"{package} would be left out of the wheel (pyproject.toml)"
