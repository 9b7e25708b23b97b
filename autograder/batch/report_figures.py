"""The class report's figures, drawn with matplotlib's Agg backend (no display, no pyplot state) and
returned as base64 PNG for an ``<img src="data:image/png;base64,...">``: the page needs no file,
script or request to show them. Only the course's own names (assignments, exercises) and numbers
are drawn; no text from students. The same numbers always give the same bytes."""

from __future__ import annotations

import base64
import io

_METADATA = {"Software": None}   # no version string in the file: the same report gives the same bytes
_BAR = "#4c72b0"
_LOST = "#c44e52"


def _figure(width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(figure)
    return figure


def _whole_counts(axes) -> None:
    from matplotlib.ticker import MaxNLocator

    axes.yaxis.set_major_locator(MaxNLocator(nbins=4, integer=True))


def _png(figure) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata=_METADATA)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def histogram_png(histogram: list[list[float]], max_points: float) -> str:
    """A small bar chart: how many students earned each number of points of one exercise."""
    figure = _figure(2.2, 1.1)
    axes = figure.add_axes((0.14, 0.3, 0.82, 0.62))
    values = [value for value, _ in histogram]
    counts = [count for _, count in histogram]
    width = max(max_points, 1) / max(len(values) + 1, 4)
    axes.bar(values, counts, width=width, color=[_BAR if v >= max_points else _LOST for v in values])
    axes.set_xticks(values, [f"{v:g}" for v in values], fontsize=6)
    axes.tick_params(axis="y", labelsize=6)
    axes.set_ylim(0, max(counts + [1]) * 1.1)
    _whole_counts(axes)
    axes.spines[["top", "right"]].set_visible(False)
    axes.set_xlabel("points", fontsize=6, labelpad=1)
    return _png(figure)


def lost_points_png(hardest: list[dict], limit: int = 15) -> str:
    """Horizontal bars: the share of the class's possible points lost on each exercise, worst first
    (``hardest`` is sorted by that share)."""
    shown = hardest[:limit]
    labels = [f"{e['assignment']}: {e['exercise']}" for e in shown]
    shares = [100 * e["share_lost"] for e in shown]
    return _percentage_bars(labels, shares, _LOST, "% of the class's points lost", left=0.38, width=0.58, height=0.6)


def totals_png(percentages: list[float]) -> str:
    """The class's totals, as a percentage of the points they could earn, in ten bins."""
    figure = _figure(4.0, 1.6)
    axes = figure.add_axes((0.1, 0.25, 0.86, 0.68))
    counts = [0] * 10
    for value in percentages:
        counts[min(int(value // 10), 9)] += 1
    axes.bar([5 + 10 * i for i in range(10)], counts, width=9, color=_BAR)
    axes.set_xticks(range(0, 101, 20), [f"{v}%" for v in range(0, 101, 20)], fontsize=7)
    axes.tick_params(axis="y", labelsize=7)
    axes.set_xlim(0, 100)
    axes.set_xlabel("total, % of the points available", fontsize=7)
    axes.set_ylabel("students", fontsize=7)
    _whole_counts(axes)
    axes.spines[["top", "right"]].set_visible(False)
    return _png(figure)


def progress_png(notebooks: list[str], percentages: list[float]) -> str:
    """One student's progress: the share of each notebook's points earned (self-study)."""
    colours = [_BAR if p >= 100 else _LOST for p in percentages]
    return _percentage_bars(notebooks, percentages, colours, "% of the notebook's points", left=0.3, width=0.64)


def _percentage_bars(labels: list[str], percentages: list[float], colour, xlabel: str, *, left: float, width: float,
                     **bar_options) -> str:
    """Horizontal bars from 0 to 100 %, one per label, the first at the top (the report's and the progress
    table's figures)."""
    figure = _figure(6.0, 0.6 + 0.28 * max(len(labels), 1))
    axes = figure.add_axes((left, 0.12 + 0.1 / max(len(labels), 1), width, 0.8))
    axes.barh(range(len(labels)), percentages, color=colour, **bar_options)
    axes.set_yticks(range(len(labels)), labels, fontsize=7)
    axes.invert_yaxis()
    axes.set_xlim(0, 100)
    axes.set_xlabel(xlabel, fontsize=7)
    axes.tick_params(axis="x", labelsize=7)
    axes.spines[["top", "right"]].set_visible(False)
    return _png(figure)
