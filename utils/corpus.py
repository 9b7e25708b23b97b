"""Text corpora for the notebooks, with an offline path that always works.

* ``python_docs()``: the English prose of the Python help topics, which ships with every CPython
  (``pydoc_data.topics``, about 460 KB). Always available, no network.
* ``tiny_shakespeare()``: the classic 1 MB character-level corpus. Downloaded once into a cache
  folder when the machine is online; otherwise (or when ``COURSE_OFFLINE=1``) it falls back to
  ``python_docs()`` and says so.
* ``python_stdlib_corpus()``: a GPU-sized offline corpus, the Python standard library's own ``.py``
  sources (tens of MB on a full install, about 12 MB where the ``test`` package is left out, as in
  Debian's and Ubuntu's Pythons) plus the help topics, identical files once, split into training and
  validation *by file*, so no file has lines on both sides. Same Python version, same corpus.
* ``download_corpus(name)``: Tiny Shakespeare or WikiText-2 (raw), downloaded once, checked against a
  pinned SHA-256, cached; when the download is impossible or the file does not match, a message says
  why and the Python docs are returned instead (``fallback=False`` raises instead).
"""

from __future__ import annotations

import functools
import hashlib
import io
import os
import sysconfig
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


# --- the Python standard library as a corpus -------------------------------------------------------

# Folders of the standard library that are not the standard library's own source.
_NOT_STDLIB = {"site-packages", "dist-packages", "__pycache__"}
# pydoc_data/topics.py is the help topics as a Python dict literal: the corpus takes their prose instead.
_HELP_TOPICS_SOURCE = "pydoc_data/topics.py"
HELP_TOPICS_NAME = "pydoc_data/topics (help text)"


def stdlib_root() -> Path:
    """The folder of this Python's standard library (``sysconfig``'s ``stdlib`` path)."""
    return Path(sysconfig.get_paths()["stdlib"])


@functools.lru_cache(maxsize=4)
def python_stdlib_files(root: str | Path | None = None) -> tuple[tuple[str, str], ...]:
    """``(relative path, text)`` of every distinct ``.py`` file under the standard library, sorted by path.

    Installed packages (``site-packages``) and caches are left out, so are files that are not UTF-8;
    a file whose bytes equal an earlier one's (in path order) is kept once. The help topics' prose
    (``python_docs()``) stands in for ``pydoc_data/topics.py`` under the name ``HELP_TOPICS_NAME``.
    ``root`` (default: ``stdlib_root()``) is for tests. Cached: a second call reads nothing.
    """
    base = Path(root) if root is not None else stdlib_root()
    files, seen = [], set()
    for relative in _python_sources(base):
        raw = (base / relative).read_bytes()
        digest = hashlib.sha256(raw).digest()
        if digest in seen:
            continue
        seen.add(digest)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            continue
        files.append((HELP_TOPICS_NAME, python_docs()) if relative == _HELP_TOPICS_SOURCE else (relative, text))
    return tuple(sorted(files))


def _python_sources(base: Path) -> list[str]:
    """Relative POSIX paths of the ``.py`` files under ``base``, sorted; installed packages not entered."""
    found = []
    for folder, subfolders, names in os.walk(base):
        subfolders[:] = [name for name in subfolders if name not in _NOT_STDLIB]
        where = Path(folder).relative_to(base)
        found += [(where / name).as_posix() for name in names if name.endswith(".py")]
    return sorted(found)


def is_validation_file(relative_path: str, validation_fraction: float = 0.1) -> bool:
    """Whether a file belongs to the validation side: decided by a hash of its path alone.

    The same path always lands on the same side, whatever else the folder holds, on every machine.
    """
    position = int.from_bytes(hashlib.sha256(relative_path.encode("utf-8")).digest()[:8], "big") / 2.0**64
    return position < validation_fraction


@functools.lru_cache(maxsize=4)
def python_stdlib_corpus(validation_fraction: float = 0.1, root: str | Path | None = None) -> tuple[str, str]:
    """``(train_text, validation_text)``: the standard library's sources split by file (no file on both sides).

    The files of ``python_stdlib_files(root)`` in path order, each followed by a blank line; a file
    goes to validation when ``is_validation_file(path, validation_fraction)``, so the validation share
    of the *bytes* is near ``validation_fraction`` but not exactly it (files differ in size).
    Deterministic for a given Python installation; cached in memory.
    """
    if not 0.0 < validation_fraction < 1.0:
        raise ValueError(f"validation_fraction must lie strictly between 0 and 1, got {validation_fraction}")
    train, validation = [], []
    for relative, text in python_stdlib_files(root):
        (validation if is_validation_file(relative, validation_fraction) else train).append(text.rstrip("\n") + "\n\n")
    return "".join(train), "".join(validation)
