"""Text corpora for the notebooks, with an offline path that always works.

* ``python_docs()``: the English prose of the Python help topics, which ships with every CPython
  (``pydoc_data.topics``, about 460 KB). Always available, no network.
* ``tiny_shakespeare()``: the classic 1 MB character-level corpus. Downloaded once into a cache
  folder when the machine is online; otherwise (or when ``COURSE_OFFLINE=1``) it falls back to
  ``python_docs()`` and says so.
* ``download_corpus(name)``: Tiny Shakespeare or WikiText-2 (raw), downloaded once, checked against a
  pinned SHA-256, cached; when the download is impossible or the file does not match, a message says
  why and the Python docs are returned instead (``fallback=False`` raises instead).
"""

from __future__ import annotations

import hashlib
import io
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
    """Tiny Shakespeare if it is cached or can be downloaded, else the Python docs (with a note).

    The same checked path as ``download_corpus("tiny_shakespeare")``: the cached file and a fresh
    download must both match the pinned SHA-256, so a truncated or tampered cache is fetched again
    (or, offline, replaced by the Python docs), never returned.
    """
    return download_corpus("tiny_shakespeare", timeout=timeout)


# Each download: where from, the SHA-256 of the exact bytes, and how to turn them into text.
CORPORA = {
    "tiny_shakespeare": {
        "url": TINY_SHAKESPEARE_URL,
        "sha256": "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed",  # 1,115,394 bytes
        "file": "tinyshakespeare.txt",
    },
    "wikitext2": {
        # The raw (untokenised) WikiText-2 archive, pinned to one commit of a public mirror.
        "url": "https://huggingface.co/datasets/ggml-org/ci/resolve/927b3642933080f1b0e811e2f916e14c292992f9/"
               "wikitext-2-raw-v1.zip",
        "sha256": "ef7edb566e3e2b2d31b29c1fdb0c89a4cc683597484c3dc2517919c615435a11",  # 4,721,645 bytes
        "file": "wikitext-2-raw-v1.zip",
        "member": "wikitext-2-raw/wiki.train.raw",
    },
}


class CorpusUnavailable(RuntimeError):
    """A corpus could not be downloaded or did not match its checksum (and no fallback was asked for)."""


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _text_from(name: str, raw: bytes) -> str:
    spec = CORPORA[name]
    if "member" in spec:
        import zipfile

        with zipfile.ZipFile(io.BytesIO(raw)) as archive:
            raw = archive.read(spec["member"])
    return raw.decode("utf-8")


def _fetch(name: str, timeout: float) -> bytes:
    """The corpus's bytes from the cache or the network, checked; raises CorpusUnavailable."""
    spec = CORPORA[name]
    path = cache_dir() / spec["file"]
    if path.exists():
        raw = path.read_bytes()
        if _sha256(raw) == spec["sha256"]:
            return raw
        path.unlink()  # a damaged or partial cached file: fetch it again
    if os.environ.get("COURSE_OFFLINE") == "1":
        raise CorpusUnavailable("COURSE_OFFLINE=1 is set, so nothing is downloaded")
    try:
        with urllib.request.urlopen(spec["url"], timeout=timeout) as response:
            raw = response.read()
    except (urllib.error.URLError, OSError) as error:
        raise CorpusUnavailable(f"the download from {spec['url']} failed ({error})") from error
    digest = _sha256(raw)
    if digest != spec["sha256"]:
        raise CorpusUnavailable(f"the file from {spec['url']} has SHA-256 {digest}, expected {spec['sha256']}")
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(path.suffix + ".part")
    partial.write_bytes(raw)
    partial.replace(path)  # never leave a half-written file under the final name
    return raw


def download_corpus(name: str, *, timeout: float = 30.0, fallback: bool = True) -> str:
    """The text of ``name`` ("tiny_shakespeare" or "wikitext2": its training split), downloaded once.

    The file is cached in ``cache_dir()`` and checked against a pinned SHA-256 both after the
    download and when read from the cache. When the machine is offline (or ``COURSE_OFFLINE=1``), the
    download fails, or the checksum does not match, a message says why and the offline
    ``python_docs()`` corpus is returned; with ``fallback=False`` a ``CorpusUnavailable`` is raised.
    """
    if name not in CORPORA:
        raise ValueError(f"unknown corpus {name!r}; choose one of {sorted(CORPORA)}")
    try:
        return _text_from(name, _fetch(name, timeout))
    except CorpusUnavailable as error:
        if not fallback:
            raise
        print(f"{name} is not available: {error}. Using the offline Python-docs corpus instead.")
        return python_docs()


def train_validation_split(text: str, validation_fraction: float = 0.1) -> tuple[str, str]:
    """Split a text into a training part and the held-out tail (no shuffling: no leakage across)."""
    if not 0.0 < validation_fraction < 1.0:
        raise ValueError(f"validation_fraction must lie strictly between 0 and 1, got {validation_fraction}")
    cut = int(len(text) * (1.0 - validation_fraction))
    return text[:cut], text[cut:]
