"""Figures used across the notebooks: heatmaps, bar charts of distributions, loss curves."""

from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np


def _to_numpy(values) -> np.ndarray:
    if hasattr(values, "detach"):
        values = values.detach().cpu().numpy()
    return np.asarray(values, dtype=float)


def relative_luminance(colour) -> float:
    """WCAG relative luminance of an sRGB(A) colour with components in [0, 1] (0 black, 1 white)."""
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in np.asarray(colour, dtype=float)[:3]]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast_ratio(colour_a, colour_b) -> float:
    """WCAG contrast ratio of two colours, from 1 (same luminance) to 21 (black on white)."""
    a, b = sorted((relative_luminance(colour_a), relative_luminance(colour_b)))
    return (b + 0.05) / (a + 0.05)


def text_colour(cell_colour, background=(1.0, 1.0, 1.0, 1.0)) -> str:
    """Black or white, whichever reads better on ``cell_colour`` (an RGBA that may be transparent,
    e.g. a NaN cell, which shows ``background`` through)."""
    rgba = np.asarray(cell_colour, dtype=float)
    alpha = rgba[3] if rgba.shape[0] > 3 else 1.0
    shown = alpha * rgba[:3] + (1 - alpha) * np.asarray(background, dtype=float)[:3]
    return "black" if contrast_ratio(shown, (0, 0, 0)) >= contrast_ratio(shown, (1, 1, 1)) else "white"


def heatmap(matrix, row_labels: Sequence[str] | None = None, col_labels: Sequence[str] | None = None,
            *, title: str = "", ax=None, annotate: bool | None = None, cmap: str = "viridis",
            xlabel: str = "", ylabel: str = ""):
    """Draw a matrix (e.g. attention weights: rows are queries, columns keys) with its labels.

    Values are written into the cells when the matrix is small enough to read (``annotate``).
    Returns the axes.
    """
    values = _to_numpy(matrix)
    if values.ndim != 2:
        raise ValueError(f"heatmap needs a 2-D matrix, got shape {values.shape}")
    if ax is None:
        _, ax = plt.subplots(figsize=(1 + 0.6 * values.shape[1], 1 + 0.5 * values.shape[0]))
    image = ax.imshow(values, cmap=cmap, aspect="auto")
    ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    if row_labels is not None:
        ax.set_yticks(range(len(row_labels)), labels=list(row_labels))
    if col_labels is not None:
        ax.set_xticks(range(len(col_labels)), labels=list(col_labels), rotation=45, ha="right")
    if annotate is None:
        annotate = values.size <= 144
    if annotate:
        cell_colours = image.to_rgba(values)  # the colour each cell is drawn in, whatever the colormap
        for (i, j), v in np.ndenumerate(values):
            ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=8,
                    color=text_colour(cell_colours[i, j], background=ax.get_facecolor()))
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    return ax


def attention_heatmap(weights, query_tokens: Sequence[str], key_tokens: Sequence[str] | None = None,
                      *, title: str = "Attention weights", ax=None):
    """Heatmap of an attention matrix: row i shows how query token i spreads its attention."""
    return heatmap(weights, query_tokens, key_tokens if key_tokens is not None else query_tokens,
                   title=title, ax=ax, cmap="Blues", xlabel="key (attended to)", ylabel="query")


def bar_distribution(probabilities, labels: Sequence[str], *, title: str = "", ax=None, top_k: int | None = None):
    """Bar chart of a probability distribution over labelled outcomes (optionally the top k only)."""
    p = _to_numpy(probabilities)
    labels = list(labels)
    if p.shape != (len(labels),):
        raise ValueError(f"{len(labels)} labels for a distribution of shape {p.shape}")
    order = np.argsort(-p)[:top_k] if top_k else np.arange(len(p))
    if ax is None:
        _, ax = plt.subplots(figsize=(max(4, 0.35 * len(order)), 3))
    ax.bar(range(len(order)), p[order])
    ax.set_xticks(range(len(order)), labels=[labels[i] for i in order])
    ax.set_ylabel("probability")
    ax.set_title(title)
    return ax


def loss_curves(curves: dict[str, Sequence[float]], *, title: str = "Loss", xlabel: str = "step",
                ylabel: str = "loss", ax=None, reference: dict[str, float] | None = None):
    """Plot named loss curves, with optional horizontal reference lines (e.g. the bigram optimum)."""
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    for name, values in curves.items():
        ax.plot(list(values), label=name)
    for name, value in (reference or {}).items():
        ax.axhline(value, linestyle="--", color="gray")
        ax.annotate(name, (0, value), textcoords="offset points", xytext=(4, 4), color="gray")
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend()
    return ax
