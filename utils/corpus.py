"""Text corpora for the notebooks, with an offline path that always works.

* ``python_docs()``: the English prose of the Python help topics, which ships with every CPython
  (``pydoc_data.topics``, about 460 KB). Always available, no network.
* ``tiny_shakespeare()``: the classic 1 MB character-level corpus. Downloaded once into a cache
  folder when the machine is online; otherwise (or when ``COURSE_OFFLINE=1``) it falls back to
  ``python_docs()`` and says so.
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from pathlib import Path

TINY_SHAKESPEARE_URL = "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt"


def cache_dir() -> Path:
    """Folder for downloaded corpora: ``$COURSE_DATA_DIR`` or ``~/.cache/transformer-course``."""
    return Path(os.environ.get("COURSE_DATA_DIR", Path.home() / ".cache" / "transformer-course"))


def python_docs() -> str:
    """The Python help topics as one string, topics in sorted order (deterministic)."""
    from pydoc_data.topics import topics

    return "\n\n".join(topics[name].strip() for name in sorted(topics))


def tiny_shakespeare(timeout: float = 10.0) -> str:
    """Tiny Shakespeare if it is cached or can be downloaded, else the Python docs (with a note)."""
    path = cache_dir() / "tinyshakespeare.txt"
    if path.exists():
        return path.read_text(encoding="utf-8")
    if os.environ.get("COURSE_OFFLINE") != "1":
        try:
            with urllib.request.urlopen(TINY_SHAKESPEARE_URL, timeout=timeout) as response:
                text = response.read().decode("utf-8")
        except (urllib.error.URLError, OSError) as error:
            print(f"Could not download Tiny Shakespeare ({error}); using the offline Python-docs corpus.")
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            return text
    else:
        print("COURSE_OFFLINE=1: using the offline Python-docs corpus instead of Tiny Shakespeare.")
    return python_docs()


def train_validation_split(text: str, validation_fraction: float = 0.1) -> tuple[str, str]:
    """Split a text into a training part and the held-out tail (no shuffling: no leakage across)."""
    if not 0.0 < validation_fraction < 1.0:
        raise ValueError(f"validation_fraction must lie strictly between 0 and 1, got {validation_fraction}")
    cut = int(len(text) * (1.0 - validation_fraction))
    return text[:cut], text[cut:]
