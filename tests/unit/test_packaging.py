"""The wheel the simulated Colab installs (and any pip install that is not editable) must hold every
package of the course: a subpackage left out breaks only the non-editable installs, which the quick
subset never makes."""

from __future__ import annotations

import tomllib

from setuptools import find_namespace_packages

from autograder import conventions


def test_every_python_package_of_the_course_is_in_the_wheel():
    config = tomllib.loads((conventions.REPO_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    found = config.get("packages")
    if not isinstance(found, list):
        found = find_namespace_packages(where=str(conventions.REPO_ROOT), **config["packages"]["find"])
    for top in ("autograder", "utils"):
        for init in sorted((conventions.REPO_ROOT / top).rglob("__init__.py")):
            package = ".".join(init.parent.relative_to(conventions.REPO_ROOT).parts)
            assert package in found, f"{package} would be left out of the wheel (pyproject.toml)"
