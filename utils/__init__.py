"""Helpers for the transformer course notebooks.

* ``utils.checks`` - assertion helpers with specific failure messages (used by the tests),
* ``utils.environment`` - Colab detection, device choice (cuda / mps / cpu), seeding,
* ``utils.corpus`` - offline and downloadable text corpora,
* ``utils.precision`` - the precision of a run (float16 / bfloat16 / float32 from the device), the
  GPU configuration's switch (``COURSE_GPU_CONFIG_ON_CPU=1`` runs it on the CPU in CI), peak memory,
* ``utils.plotting`` - heatmaps, distributions and loss curves.

This package holds no exercise solution: students receive it as it is.
"""

from . import checks, corpus, environment, plotting, precision
from .environment import choose_device, in_colab, seed_everything

__all__ = ["checks", "corpus", "environment", "plotting", "precision", "choose_device", "in_colab", "seed_everything"]
