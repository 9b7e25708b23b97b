"""`demo` builds in a scratch copy of the course and never touches the repository (issue 28): not
`notebooks/`, not `solutions/`, not the bundles; it grades one short assignment unless told others."""

from __future__ import annotations

import subprocess

import pytest

from autograder.course import conventions, demo
from autograder.__main__ import main as autograder_main
from autograder.batch.report import GradeRow

ROOT = conventions.REPO_ROOT


def repository_state() -> tuple[str, dict]:
    """`git status` and the size and modification time of every tracked file."""
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    stats = {}
    for name in filter(None, tracked.split("\0")):
        path = ROOT / name
        stats[name] = (path.stat().st_mtime_ns, path.stat().st_size) if path.exists() else None
    return status, stats


def test_the_demo_leaves_the_repository_untouched(tmp_path, monkeypatch, capsys):
    """The build and the samples, with the grading replaced by a stand-in (no kernel runs)."""
    graded = {}

    def fake_grade(samples, results_dir, *, workers, solutions_dir, limits):
        graded.update(samples=sorted(p.relative_to(samples).as_posix() for p in samples.rglob("*.ipynb")),
                      solutions=solutions_dir)
        return [GradeRow("alice_correct", demo.DEFAULT_ASSIGNMENT, 1.0, 1.0, "ok")]

    monkeypatch.setattr(demo, "grade", fake_grade)
    before = repository_state()
    assert demo.run_demo(tmp_path / "out", 1, demo.selected_assignments(None)) == 0
    assert repository_state() == before, "the demo changed files in the repository"
    name = conventions.assignment(demo.DEFAULT_ASSIGNMENT).source_path.name
    assert graded["samples"] == [f"{student}/{demo.DEFAULT_ASSIGNMENT}/{name}" for student in
                                 ("alice_correct", "bob_partial", "carol_untouched", "dave_broken", "erin_crash")]
    assert ROOT not in graded["solutions"].parents, "graded against the scratch copy's solutions"
    assert "notebooks/ is not touched" in capsys.readouterr().out


def test_demo_assignment_choices():
    assert [a.name for a in demo.selected_assignments(None)] == [demo.DEFAULT_ASSIGNMENT]
    assert [a.name for a in demo.selected_assignments(["03_attention,01_next_token", "05_multi_head"])] == \
        ["01_next_token", "03_attention", "05_multi_head"]
    assert demo.selected_assignments(None, every=True) == conventions.assignments()
    with pytest.raises(ValueError, match="no assignment named 99_nothing; there are: 01_next_token"):
        demo.selected_assignments(["99_nothing"])


def test_the_demo_command_refuses_an_unknown_assignment(capsys):
    with pytest.raises(SystemExit) as exited:
        autograder_main(["demo", "--assignment", "99_nothing"])
    assert exited.value.code == 2 and "no assignment named 99_nothing" in capsys.readouterr().err
