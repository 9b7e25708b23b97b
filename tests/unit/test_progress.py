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


class _Clock:
    """A clock that the loop advances: the first step takes ``first``, every later one ``pace``."""

    def __init__(self, first, pace):
        self.now, self.first, self.pace, self.ticks = 0.0, first, pace, 0

    def __call__(self):
        return self.now

    def step(self):
        self.now += self.first if self.ticks == 0 else self.pace
        self.ticks += 1


def test_a_run_predicts_its_time_from_its_first_steps_with_the_first_step_apart(capsys):
    """Every training cell shows a prediction made after a few steps (issue 51); the first step pays for set-up,
    so it is timed apart: predicting 100 steps from 11 at their mean pace would say 1,000 s, not 199."""
    clock = _Clock(first=10.0, pace=1.9)
    with progress.training_steps(101, "GPT") as steps:
        steps.clock = clock
        steps.began = 0.0
        for _ in steps:
            clock.step()
    out = capsys.readouterr().out.strip().splitlines()
    assert out[0] == "GPT: 101 steps, predicted 200 s (from its first 11 steps)", out
    assert out[1].startswith("GPT: 101 steps in 200 s (predicted 200 s)"), out


@pytest.mark.parametrize("total, calibrate, preset", [(29, 10, None), (100, None, None), (100, 10, 5.0)])
def test_no_prediction_for_a_short_run_when_asked_for_none_or_when_the_caller_made_one(capsys, total, calibrate, preset):
    with progress.training_steps(total, "x", calibrate_steps=calibrate, predicted_s=preset) as steps:
        for _ in steps:
            pass
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and ("(predicted 5 s)" in out[0]) == (preset is not None), out


def test_finished_runs_are_read_back_from_what_a_notebook_printed_bars_and_all():
    printed = ("noise\rGPT:  40%|####      | 4/10\rGPT: 10 steps, predicted 12 s (from its first 11 steps)\n"
               "\rGPT: 10 steps in 9 s (predicted 12 s), last loss 1.500\ncopy: 3 steps in 0 CPU s\n"
               "LSTM: 600 steps in 5 CPU s (predicted 6 CPU s)\n")
    assert progress.finished_runs(printed) == [
        {"desc": "GPT", "steps": 10, "took": 9, "predicted": 12, "unit": "s"},
        {"desc": "LSTM", "steps": 600, "took": 5, "predicted": 6, "unit": "CPU s"}]
