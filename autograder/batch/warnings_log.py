"""Python warnings raised in the grader's process while it grades or merges (nbgrader's SQLAlchemy
``SAWarning``s about objects "not in session", deprecations of the libraries it uses) go to a log
file in the output folder instead of the terminal, where they read as if something broke.

``captured()`` collects them (each place once, as Python's default filter does); ``write`` puts them
in ``OUT/warnings.log`` only when there were any, so the summary names the file only then.
"""

from __future__ import annotations

import contextlib
import threading
import warnings
from dataclasses import dataclass, field
from pathlib import Path

LOG_NAME = "warnings.log"
MAX_LOGGED = 1000   # warnings kept in the log; the rest are counted


@dataclass
class Captured:
    lines: list = field(default_factory=list)
    count: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, text: str) -> None:
        with self._lock:
            self.count += 1
            if len(self.lines) < MAX_LOGGED:
                self.lines.append(text)

    def write(self, folder: Path) -> Path | None:
        """The warnings as ``folder/warnings.log`` (an old one removed); the file, or None if there were none."""
        path = Path(folder) / LOG_NAME
        path.unlink(missing_ok=True)
        if not self.count:
            return None
        path.parent.mkdir(parents=True, exist_ok=True)
        more = self.count - len(self.lines)
        path.write_text("".join(self.lines) + (f"... and {more} more\n" if more > 0 else ""), encoding="utf-8")
        return path

    def summary(self, path: Path | None) -> str:
        """The line a summary prints: empty when nothing was logged."""
        return f"{self.count} warning(s) from nbgrader and its libraries, kept in {path}" if path else ""


@contextlib.contextmanager
def captured():
    """Within the block, warnings go to the ``Captured`` it yields, not to the terminal (threads included)."""
    log = Captured()

    def keep(message, category, filename, lineno, file=None, line=None):
        log.add(warnings.formatwarning(message, category, filename, lineno, line))

    with warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.showwarning = keep
        yield log
