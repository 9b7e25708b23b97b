"""A training run's progress on the screen: a bar while it runs, one clean line when it ends.

``tqdm.auto`` draws a widget in JupyterLab, VS Code and Colab when ``ipywidgets`` is installed (the
``student`` extra installs it) and text elsewhere. Left as it is, a finished bar stays on the screen frozen
at the step of its last redraw ("5/750"), and the stop button leaves a 40-line traceback that hides how far
training got. ``training_steps`` fixes both::

    with progress.training_steps(750, "GPT", predicted_s=guess) as steps:
        for step in steps:
            loss = ...
            steps.show(loss=loss)

* after its first few steps (``calibrate_steps``, 10 by default; the first step, which pays for one-time set-up,
  timed apart): one line with the time the whole run will take, ``GPT: 750 steps, predicted 150 s (from its first
  11 steps)``, unless the caller set its own ``predicted_s`` by then;
* while it runs: the bar (steps, rate, time left) and the last loss;
* when it ends: the bar is removed and one line stays: ``GPT: 750 steps in 141 s (predicted 150 s), last
  loss 1.734``;
* when you stop it (the stop button, Ctrl-C): one line says at which step it stopped and that your answers
  still grade (grading never runs these cells), and the cell ends with ``TrainingStopped``, a
  ``KeyboardInterrupt`` shown without a traceback, so cells queued after it do not run.
"""

from __future__ import annotations

import re
import time

from tqdm.auto import tqdm


class TrainingStopped(KeyboardInterrupt):
    """A training run stopped by its user; shown as its one-line message, not a traceback."""

    def _render_traceback_(self):   # IPython shows this instead of a traceback
        return [str(self)]


class TrainingSteps:
    """The steps ``start .. total - 1`` of a run, iterated once, inside a ``with`` block (``training_steps``)."""

    def __init__(self, total: int, desc: str, *, start: int = 0, predicted_s: float | None = None,
                 cpu_seconds: bool = False, calibrate_steps: int | None = 10):
        if not isinstance(total, int) or not isinstance(start, int) or not 0 <= start <= total:
            raise ValueError(f"training_steps: need 0 <= start <= total (whole numbers), got start={start!r}, "
                             f"total={total!r}")
        self.total, self.desc, self.start, self.predicted_s = total, desc, start, predicted_s
        self.clock = time.process_time if cpu_seconds else time.perf_counter   # what the prediction counts
        self.unit = "CPU s" if cpu_seconds else "s"
        self.done = start                 # steps finished so far (the next step's index)
        self.last: dict[str, float] = {}  # what ``show`` was given last
        self.bar = None
        self.began = 0.0
        self.calibrate_steps = calibrate_steps
        self.first_step_s = 0.0           # the first step's time: set-up that the later steps do not repeat

    def __enter__(self) -> "TrainingSteps":
        self.began = self.clock()
        self.bar = tqdm(total=self.total, initial=self.start, desc=self.desc, mininterval=1.0, leave=False,
                        unit="step", dynamic_ncols=True)
        return self

    def __iter__(self):
        for step in range(self.done, self.total):
            yield step
            self.done = step + 1
            self.bar.update(1)
            self._calibrate()

    def _calibrate(self) -> None:
        """Predict the run's time from its first steps: the first step as it took, every later one at the pace
        of steps 2 to ``calibrate_steps + 1``. Not for a run too short to be worth it (under 3 times that)."""
        steps, k = self.done - self.start, self.calibrate_steps
        if k is None or self.total - self.start < 3 * k or self.predicted_s is not None:
            return
        if steps == 1:
            self.first_step_s = self.seconds()
        elif steps == k + 1:
            pace = (self.seconds() - self.first_step_s) / k
            self.predicted_s = self.first_step_s + pace * (self.total - self.start - 1)
            self.bar.write(f"{self.desc}: {self.total - self.start} steps, predicted {self.predicted_s:.0f} {self.unit} "
                           f"(from its first {steps} steps)")

    def show(self, **values: float) -> None:
        """Show these figures beside the bar (e.g. ``loss=2.1``) and in the final line."""
        self.last = {name: float(value) for name, value in values.items()}
        self.bar.set_postfix({name: _figure(value) for name, value in self.last.items()}, refresh=False)

    def seconds(self) -> float:
        return self.clock() - self.began

    def summary(self) -> str:
        """The line a finished run leaves: steps, time (and the prediction), the last figures shown."""
        predicted = f" (predicted {self.predicted_s:.0f} {self.unit})" if self.predicted_s is not None else ""
        figures = "".join(f", last {name} {_figure(value)}" for name, value in self.last.items())
        return f"{self.desc}: {self.done - self.start} steps in {self.seconds():.0f} {self.unit}{predicted}{figures}"

    def __exit__(self, kind, error, trace) -> bool:
        self.bar.close()
        if kind is None:
            print(self.summary(), flush=True)
            return False
        if issubclass(kind, KeyboardInterrupt) and not issubclass(kind, TrainingStopped):
            raise TrainingStopped(
                f"{self.desc}: stopped by you at step {self.done} of {self.total} after {self.seconds():.0f} {self.unit}. "
                "Your answers still grade: grading runs your answer cells and the tests, never this cell. "
                "Run the cell again to train from the start.") from None
        return False


def _figure(value: float) -> str:
    """A loss with three decimals, a rate such as tokens per second as a whole number with separators."""
    return f"{value:.3f}" if abs(value) < 1000 else f"{value:,.0f}"


def training_steps(total: int, desc: str, *, start: int = 0, predicted_s: float | None = None,
                   cpu_seconds: bool = False, calibrate_steps: int | None = 10) -> TrainingSteps:
    """Steps ``start`` to ``total - 1`` with a bar; see the module's docstring. ``predicted_s`` (settable later,
    ``steps.predicted_s = ...``, once a few steps are timed) is what the final line compares with; ``cpu_seconds``:
    the run is timed in the process's CPU seconds (as the notebooks' predictions are), not wall-clock ones;
    ``calibrate_steps``: how many steps after the first the prediction is made from (``None``: none made).
    ``ValueError`` unless ``0 <= start <= total`` are whole numbers."""
    return TrainingSteps(total, desc, start=start, predicted_s=predicted_s, cpu_seconds=cpu_seconds,
                         calibrate_steps=calibrate_steps)


# The final line of a run that had a prediction, as ``TrainingSteps.summary`` writes it.
_FINISHED_RUN = re.compile(r"^(?P<desc>[^\r\n]+?): (?P<steps>\d+) steps in (?P<took>\d+) (?P<unit>CPU s|s) "
                           r"\(predicted (?P<predicted>\d+) (?:CPU s|s)\)", re.MULTILINE)


def finished_runs(printed: str) -> list[dict]:
    """``{"desc", "steps", "took", "predicted", "unit"}`` for each finished run with a prediction in ``printed``
    (what a notebook's cells wrote): for the suite's check and ``benchmarks/training_predictions.py``."""
    lines = printed.replace("\r", "\n")   # a text bar redraws itself after carriage returns
    return [{"desc": m["desc"].strip(), "steps": int(m["steps"]), "took": int(m["took"]),
             "predicted": int(m["predicted"]), "unit": m["unit"]} for m in _FINISHED_RUN.finditer(lines)]
