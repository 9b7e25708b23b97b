"""The grader finds the course's packages (to bind them into the sandbox and put them on the judge's and the
runner's path) without importing them: ``utils`` imports PyTorch, two CPU seconds the grader's own process,
one per graded batch, never needs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import autograder
import utils


def test_the_course_packages_are_found_where_they_are_imported_from_and_torch_stays_out(tmp_path):
    probe = ("import json, sys\n"
             "from autograder.sandbox import bubblewrap, confinement\n"
             "print(json.dumps([[str(p) for p in bubblewrap.course_package_paths()], confinement.course_import_paths(),\n"
             "                  'torch' in sys.modules, 'utils' in sys.modules]))\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    packages, import_paths, torch_imported, utils_imported = json.loads(done.stdout)
    expected = [Path(autograder.__file__).resolve().parent, Path(utils.__file__).resolve().parent]
    assert [Path(p) for p in packages] == expected
    assert import_paths == list(dict.fromkeys(str(p.parent) for p in expected))
    assert not torch_imported and not utils_imported
