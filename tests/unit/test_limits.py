"""``Limits``: the defaults the command line shows, and values that could never grade anything refused."""

from __future__ import annotations

import pytest

from autograder.__main__ import main as autograder_main
from autograder.sandbox.limits import MEMORY_FLOOR_MB, Limits


def test_defaults_are_valid_and_shown_by_the_command_line(capsys):
    limits = Limits()
    assert (limits.cell_timeout_s, limits.notebook_timeout_s, limits.memory_mb, limits.sandbox) == (120, 900, 4096, "auto")
    with pytest.raises(SystemExit):
        autograder_main(["grade", "--help"])
    help_text = capsys.readouterr().out
    assert "(default 120)" in help_text and "(default 900)" in help_text and "(default 4096)" in help_text


@pytest.mark.parametrize("fields, words", [
    (dict(cell_timeout_s=0), "cell_timeout_s must be a positive number"),
    (dict(notebook_timeout_s=-5), "notebook_timeout_s must be a positive number"),
    (dict(max_file_mb=0), "max_file_mb must be a positive number"),
    (dict(cell_timeout_s=True), "cell_timeout_s must be a positive number"),
    (dict(memory_mb=MEMORY_FLOOR_MB - 1), f"give at least {MEMORY_FLOOR_MB}"),
    (dict(memory_mb=2048.5), "memory_mb 2048.5 is too small"),
    (dict(sandbox="docker"), "sandbox must be one of auto, bwrap, none"),
])
def test_values_that_cannot_grade_are_refused(fields, words):
    with pytest.raises(ValueError, match=words):
        Limits(**fields)


def test_the_command_line_names_the_flag(tmp_path, capsys):
    with pytest.raises(SystemExit) as exited:
        autograder_main(["grade", str(tmp_path), "--out", str(tmp_path / "out"), "--cell-timeout", "0"])
    assert exited.value.code == 2
    assert "--cell-timeout must be a positive number" in capsys.readouterr().err
