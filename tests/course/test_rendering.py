"""What students see: the numbers written on heatmaps must be readable on every cell.

The text colour of each annotated cell is compared with the colour the cell is actually rendered in
(pixels of the drawn figure), using the WCAG contrast ratio; 4.5 is the WCAG AA level for text, and
the better of black and white always reaches it.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.colors as mcolors  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from utils import plotting  # noqa: E402

MIN_CONTRAST = 4.5


def _luminance(rgb) -> float:
    """WCAG relative luminance, written here independently of utils.plotting."""
    channels = []
    for c in rgb[:3]:
        channels.append(c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4)
    r, g, b = channels
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _contrast(a, b) -> float:
    la, lb = sorted((_luminance(a), _luminance(b)))
    return (lb + 0.05) / (la + 0.05)


def _cells(ax, values):
    """(value, rendered cell colour, text colour) for every annotated cell of a drawn heatmap."""
    fig = ax.figure
    fig.canvas.draw()
    pixels = np.asarray(fig.canvas.buffer_rgba())[..., :3] / 255.0
    height = pixels.shape[0]
    texts = {(round(t.get_position()[1]), round(t.get_position()[0])): t for t in ax.texts}
    found = []
    for (i, j), v in np.ndenumerate(values):
        # a point inside the cell, away from the number written in its middle
        x, y = ax.transData.transform((j - 0.4, i - 0.4))
        cell_rgb = pixels[int(height - y), int(x)]
        found.append((v, cell_rgb, mcolors.to_rgb(texts[(i, j)].get_color())))
    return found


@pytest.mark.parametrize("cmap", ["Blues", "viridis", "magma", "RdBu", "Greys"])
def test_heatmap_numbers_contrast_with_their_cells(cmap):
    values = np.linspace(0.0, 1.0, 36).reshape(6, 6)
    ax = plotting.heatmap(values, cmap=cmap)
    try:
        for v, cell, text in _cells(ax, values):
            ratio = _contrast(cell, text)
            assert ratio >= MIN_CONTRAST, (f"{cmap}: the number {v:.2f} is drawn in {text} on a cell of colour "
                                           f"{tuple(round(c, 2) for c in cell)}: contrast {ratio:.2f} < {MIN_CONTRAST}")
    finally:
        plt.close(ax.figure)


@pytest.mark.parametrize("cmap, low_text, high_text", [("Blues", "black", "white"), ("viridis", "white", "black")])
def test_text_colour_follows_the_colormap(cmap, low_text, high_text):
    """Blues is pale at 0 and dark at 1; viridis is dark at 0 and bright at 1: the rule must follow each."""
    values = np.array([[0.0, 1.0]])
    ax = plotting.heatmap(values, cmap=cmap)
    try:
        colours = {t.get_text(): mcolors.to_rgb(t.get_color()) for t in ax.texts}
        assert colours["0.00"] == mcolors.to_rgb(low_text), f"{cmap}: text on the lowest value"
        assert colours["1.00"] == mcolors.to_rgb(high_text), f"{cmap}: text on the highest value"
    finally:
        plt.close(ax.figure)


def test_attention_heatmap_is_readable():
    weights = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
    ax = plotting.attention_heatmap(weights, ["a", "b", "c"])
    try:
        for v, cell, text in _cells(ax, weights):
            assert _contrast(cell, text) >= MIN_CONTRAST, f"attention weight {v:.2f} is unreadable"
    finally:
        plt.close(ax.figure)


def test_nan_cells_get_readable_text():
    values = np.array([[0.0, np.nan], [0.5, 1.0]])
    ax = plotting.heatmap(values, cmap="viridis")
    try:
        nan_text = next(t for t in ax.texts if t.get_text() == "nan")
        assert mcolors.to_rgb(nan_text.get_color()) == (0.0, 0.0, 0.0), "a NaN cell shows the white axes: black text"
    finally:
        plt.close(ax.figure)


@pytest.mark.slow
def test_failed_check_shows_its_message_first_without_the_checking_machinery(tmp_path):
    """In Jupyter, a failing check's traceback starts with the message and lists no frame of utils/checks.py."""
    import re

    import nbformat
    from nbclient import NotebookClient

    cells = [
        "import torch\nfrom utils import checks\n\ndef double(x):\n    return x * 3\n",
        'checks.assert_close(double(torch.tensor([1.0, 2.0])), torch.tensor([2.0, 4.0]), name="double", hint="times two")',
        'checks.assert_equal(sorted([3, 1]), [1, 2], name="sorted")',
        'def picky(x):\n    return x[5]\n\nchecks.assert_raises(ValueError, picky, [1], name="picky")',
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    NotebookClient(nb, kernel_name="python3", allow_errors=True, timeout=120,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    expected_first = {
        1: "CheckFailure: double: 2 of 2 values differ",
        2: "CheckFailure: sorted: expected 2 at [1], got 3.",
        3: "CheckFailure: picky: expected ValueError, but it raised IndexError",
    }
    for index, start in expected_first.items():
        (error,) = [o for o in nb.cells[index].outputs if o.output_type == "error"]
        shown = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(error.traceback))
        assert shown.startswith(start), f"cell {index}: the traceback should start with the message:\n{shown}"
        assert "checks.py" not in shown, f"cell {index}: the checking machinery's frames are shown:\n{shown}"
        assert f"Cell In[{index + 1}]" in shown, f"cell {index}: the failing line of the cell should still be shown:\n{shown}"
    student_frame = "\n".join(nb.cells[3].outputs[0].traceback)
    assert "return x[5]" in re.sub(r"\x1b\[[0-9;]*m", "", student_frame), "the student's own failing line must stay visible"
