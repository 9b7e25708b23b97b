"""Helpers for the transformer course notebooks.

* ``utils.checks`` - assertion helpers with specific failure messages (used by the tests),
* ``utils.environment`` - Colab detection, device choice (cuda / mps / cpu), seeding,
* ``utils.corpus`` - offline and downloadable text corpora,
* ``utils.plotting`` - heatmaps, distributions and loss curves.

This package holds no exercise solution: students receive it as it is.
"""

from . import checks, corpus, environment, plotting
from .environment import choose_device, in_colab, seed_everything

__all__ = ["checks", "corpus", "environment", "plotting", "choose_device", "in_colab", "seed_everything"]
