"""utils.corpus.python_stdlib_corpus: the standard library's sources as a GPU-sized offline corpus,
identical files once, split into training and validation by file, the same on every call."""

from __future__ import annotations

import pytest

from utils import corpus


def _tree(root, files):
    for relative, content in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return root


@pytest.fixture
def small_stdlib(tmp_path):
    """A standard library of 40 distinct modules, two copies, an installed package, a cache and a non-UTF-8 file."""
    files = {f"pkg{i % 4}/mod{i:02d}.py": f"# module {i}\nVALUE_{i} = {i * i}\n" for i in range(40)}
    files.update({
        "copy_a/same.py": "SHARED = 'identical bytes'\n",
        "copy_b/same.py": "SHARED = 'identical bytes'\n",
        "site-packages/thirdparty.py": "THIRD_PARTY = 1\n",
        "pkg0/__pycache__/cached.py": "CACHED = 1\n",
        "latin1.py": b"# caf\xe9\n",
        "notes.txt": "not Python\n",
    })
    return _tree(tmp_path / "lib", files)


def test_identical_files_are_kept_once_and_foreign_files_left_out(small_stdlib):
    names = [name for name, _ in corpus.python_stdlib_files(small_stdlib)]
    assert names == sorted(names) and len(names) == len(set(names))
    assert "copy_a/same.py" in names and "copy_b/same.py" not in names    # the first in path order stays
    assert not any(name.startswith(("site-packages", "latin1")) or "__pycache__" in name or name.endswith(".txt")
                   for name in names), names
    assert len(names) == 41


def test_the_split_is_by_file_and_covers_every_file_once(small_stdlib):
    train, validation = corpus.python_stdlib_corpus(0.25, root=small_stdlib)
    files = corpus.python_stdlib_files(small_stdlib)
    sides = {name: corpus.is_validation_file(name, 0.25) for name, _ in files}
    assert 0 < sum(sides.values()) < len(sides)                           # both sides hold files
    for name, text in files:
        assert (text in validation) == sides[name] and (text in train) != sides[name], name
    assert len(train) + len(validation) == sum(len(text.rstrip("\n")) + 2 for _, text in files)


def test_the_side_of_a_file_depends_on_its_path_alone(small_stdlib, tmp_path):
    first = corpus.python_stdlib_corpus(0.25, root=small_stdlib)
    assert corpus.python_stdlib_corpus(0.25, root=str(small_stdlib)) == first
    # Another tree holding some of the same paths (and others) puts those paths on the same sides.
    other = _tree(tmp_path / "other", {f"pkg{i % 4}/mod{i:02d}.py": f"# changed {i}\n" for i in range(0, 40, 3)}
                  | {"zzz/extra.py": "EXTRA = 1\n"})
    for name, text in corpus.python_stdlib_files(other):
        assert (text in corpus.python_stdlib_corpus(0.25, root=other)[1]) == corpus.is_validation_file(name, 0.25)
    assert [corpus.is_validation_file(f"a/{i}.py", 0.5) for i in range(50)] == \
           [corpus.is_validation_file(f"a/{i}.py", 0.5) for i in range(50)]
    with pytest.raises(ValueError):
        corpus.python_stdlib_corpus(1.0, root=small_stdlib)


def test_the_real_standard_library_is_gpu_sized_and_split_by_file():
    train, validation = corpus.python_stdlib_corpus()
    train_mb, validation_mb = len(train.encode()) / 1e6, len(validation.encode()) / 1e6
    # About 31 MB on a full CPython 3.11, about 12 MB without the `test` package (Debian, Ubuntu).
    assert train_mb + validation_mb > 8, (train_mb, validation_mb)
    assert 0.03 < validation_mb / (train_mb + validation_mb) < 0.25, (train_mb, validation_mb)
    names = [name for name, _ in corpus.python_stdlib_files()]
    assert corpus.HELP_TOPICS_NAME in names and "pydoc_data/topics.py" not in names
    assert "os.py" in names and not any("site-packages" in name for name in names)
    assert corpus.python_stdlib_corpus() is corpus.python_stdlib_corpus()   # cached
