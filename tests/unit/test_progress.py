"""utils.progress: a finished run leaves one clean line; a stopped one says where it stopped, no traceback."""

from __future__ import annotations

import pytest

from utils import progress


def test_a_finished_run_leaves_one_line_with_steps_time_and_loss(capsys):
    seen = []
    with progress.training_steps(5, "GPT", predicted_s=3.0) as steps:
        for step in steps:
            seen.append(step)
            steps.show(loss=2.0 - step / 10)
    assert seen == [0, 1, 2, 3, 4]
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and out[0].startswith("GPT: 5 steps in ") and "(predicted 3 s), last loss 1.600" in out[0]


def test_a_run_resumed_from_a_step_counts_the_steps_it_ran(capsys):
    with progress.training_steps(10, "more", start=7) as steps:
        assert list(steps) == [7, 8, 9]
    assert capsys.readouterr().out.startswith("more: 3 steps in ")


def test_stopping_says_at_which_step_and_that_the_answers_still_grade():
    with pytest.raises(progress.TrainingStopped) as stopped:
        with progress.training_steps(750, "GPT") as steps:
            for step in steps:
                if step == 312:
                    raise KeyboardInterrupt
    message = str(stopped.value)
    assert "stopped by you at step 312 of 750" in message and "answers still grade" in message
    assert isinstance(stopped.value, KeyboardInterrupt)          # queued cells still do not run
    assert stopped.value._render_traceback_() == [message]       # IPython shows this line, not a traceback


def test_other_errors_pass_through_unchanged(capsys):
    with pytest.raises(ZeroDivisionError):
        with progress.training_steps(3, "x") as steps:
            for _ in steps:
                1 / 0
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("total, start", [(-1, 0), (3, 4), (3.0, 0), (3, -1)])
def test_bad_step_counts_are_refused(total, start):
    with pytest.raises(ValueError):
        progress.training_steps(total, "x", start=start)


def test_cpu_seconds_are_said_so(capsys):
    with progress.training_steps(2, "copy", cpu_seconds=True) as steps:
        for _ in steps:
            steps.predicted_s = 1.0
    assert "2 steps in 0 CPU s (predicted 1 CPU s)" in capsys.readouterr().out
