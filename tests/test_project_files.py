"""The conda and pip descriptions agree, and CI runs the README's test command."""

from __future__ import annotations

import re
import tomllib

from autograder.conventions import REPO_ROOT

CONDA_NAMES = {"pytorch": "torch"}


def _names(requirements) -> set[str]:
    return {re.split(r"[<>=!~ ]", r.strip(), maxsplit=1)[0].lower() for r in requirements}


def test_environment_yml_matches_pyproject():
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    pip_side = _names(project["dependencies"]) | _names(project["optional-dependencies"]["dev"])
    conda_side = set()
    text = (REPO_ROOT / "environment.yml").read_text()
    for line in text[text.index("\ndependencies:"):].splitlines():
        match = re.match(r"^  - ([A-Za-z0-9_.-]+)", line)
        if match and match.group(1) not in ("pip", "python"):
            conda_side.add(CONDA_NAMES.get(match.group(1), match.group(1)).lower())
    assert pip_side == conda_side, f"only in pyproject: {pip_side - conda_side}; only in environment.yml: {conda_side - pip_side}"


def test_ci_runs_the_readme_test_command():
    readme = (REPO_ROOT / "README.md").read_text()
    ci = (REPO_ROOT / ".ci" / "run").read_text()
    match = re.search(r"<!-- test-command -->\s*```(?:bash|sh)?\n(.+?)\n```", readme, re.DOTALL)
    assert match, "README.md must show the test command in a code block after <!-- test-command -->"
    command = match.group(1).strip()
    assert command in ci, f".ci/run must run the README's test command {command!r}"
