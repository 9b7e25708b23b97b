"""What one feedback page may show, so that the grader's own memory is bounded on any notebook.

nbconvert renders a code cell by syntax highlighting (pygments: one ``<span>`` per token), turns the
colour codes of printed text into ``<span>``s (``ansi2html``), then parses the whole page into a
tree (BeautifulSoup), one object per element. A notebook built for it (a student's cell of a million
one-character tokens, ``a=1;`` repeated) took the grader's process to gigabytes and wrote a page of
tens of megabytes. ``BoundFeedback``, the last of nbgrader's feedback preprocessors, bounds what
reaches nbconvert, cell by cell in the page's order:

* a code cell is highlighted if it has at most ``MAX_HIGHLIGHTED_CELL_CHARS`` characters and the
  page's ``MAX_HIGHLIGHTED_TOKENS`` are not spent (the course's longest notebook has about 14,400);
  otherwise it is shown as plain, escaped text (``PlainOrHighlighted``), and at most
  ``MAX_SHOWN_CELL_CHARS`` of it;
* colour codes in outputs become markup until ``MAX_ANSI_SEQUENCES`` are spent, then are removed;
* code and outputs take at most ``MAX_PAGE_TEXT_BYTES`` of the page together (escaped, each span
  counted); past that, what does not fit is left out. A test cell's verdict (its error output) is
  always shown: the judge bounds it;
* each shortening says so on the page, in a line that starts with ``SHORTENED``.

``write_feedback`` also refuses to keep a page over ``MAX_FEEDBACK_PAGE_BYTES``.
"""

from __future__ import annotations

import functools
import html
from itertools import islice

from nbconvert.filters.ansi import strip_ansi
from nbconvert.filters.highlight import Highlight2HTML
from nbgrader.preprocessors import NbGraderPreprocessor

from ..course import conventions

MAX_HIGHLIGHTED_CELL_CHARS = 20_000        # a longer code cell is shown as plain text
MAX_HIGHLIGHTED_TOKENS = 50_000            # tokens highlighted on one page
MAX_SHOWN_CELL_CHARS = 50_000              # characters of one code cell shown
MAX_ANSI_SEQUENCES = 10_000                # colour codes turned into markup on one page
MAX_PAGE_TEXT_BYTES = 6 * 1024 * 1024      # code and outputs on one page, escaped, markup counted
MAX_FEEDBACK_PAGE_BYTES = 8 * 1024 * 1024  # a whole page, as written
SPAN_BYTES = 40                            # what one highlighted token or colour code adds to the page

PLAIN_TEXT = "autograder_plain_text"       # cell metadata: show this cell's code without highlighting
SHORTENED = "shortened for this page:"     # how every note of a shortening starts


class _Budget:
    """What is left of the page's bounds."""

    def __init__(self):
        self.tokens, self.ansi, self.bytes = MAX_HIGHLIGHTED_TOKENS, MAX_ANSI_SEQUENCES, MAX_PAGE_TEXT_BYTES

    def take(self, size: int, always: bool = False) -> bool:
        """Spend ``size`` bytes if they fit (or ``always``); whether they were spent."""
        if size > self.bytes and not always:
            return False
        self.bytes = max(0, self.bytes - size)
        return True


@functools.lru_cache(maxsize=1)
def _lexer():
    from pygments.lexers import PythonLexer

    return PythonLexer()


def _tokens_within(source: str, budget: _Budget) -> int | None:
    """The tokens highlighting ``source`` makes, or None when more than the page has left (lexed only so far)."""
    count = sum(1 for _ in islice(_lexer().get_tokens(source), budget.tokens + 1))
    return count if count <= budget.tokens else None


def _bound_source(cell, budget: _Budget) -> None:
    """The cell's code as the page shows it: highlighted within the bounds, else plain (``PLAIN_TEXT``),
    shortened past ``MAX_SHOWN_CELL_CHARS``, left out past the page's bytes; a note for each."""
    source, notes = cell.source, []
    if len(source) > MAX_SHOWN_CELL_CHARS:
        notes.append(f"{len(source) - MAX_SHOWN_CELL_CHARS:,} more characters of this cell are not shown "
                     f"(a page shows {MAX_SHOWN_CELL_CHARS:,} of a cell)")
        source = source[:MAX_SHOWN_CELL_CHARS]
    tokens = _tokens_within(source, budget) if len(source) <= MAX_HIGHLIGHTED_CELL_CHARS else None
    if tokens is None:
        notes.insert(0, f"shown as plain text (a page highlights cells of up to {MAX_HIGHLIGHTED_CELL_CHARS:,} "
                        f"characters, {MAX_HIGHLIGHTED_TOKENS:,} tokens in all)")
        cell.metadata[PLAIN_TEXT] = True
    if not budget.take(len(html.escape(source)) + SPAN_BYTES * (tokens or 0)):
        source, tokens = "", None
        notes = [f"this cell's code is not shown (a page shows {MAX_PAGE_TEXT_BYTES // 2**20} MB of code and output)"]
        cell.metadata[PLAIN_TEXT] = True
    budget.tokens -= tokens or 0
    cell.source = source + "".join(f"\n# [{SHORTENED} {note}]" for note in notes)


def _text_of(output) -> str:
    if output.get("output_type") == "stream":
        return str(output.get("text", ""))
    if output.get("output_type") == "error":
        return "\n".join(str(line) for line in output.get("traceback", []))
    return "".join(str(v) for v in output.get("data", {}).values())


def _bound_output(output, budget: _Budget, verdict: bool) -> bool:
    """Colour codes removed once the page's are spent (in place); whether the output fits the page."""
    colours = _text_of(output).count("\x1b[")
    if colours > budget.ansi:
        if output.get("output_type") == "stream":
            output["text"] = strip_ansi(str(output.get("text", "")))
        elif output.get("output_type") == "error":
            output["traceback"] = [strip_ansi(str(line)) for line in output.get("traceback", [])]
        colours = 0
    budget.ansi -= colours
    return budget.take(len(html.escape(_text_of(output))) + SPAN_BYTES * colours, always=verdict)


def _bound_outputs(cell, budget: _Budget) -> None:
    graded = conventions.is_graded_cell(cell)
    kept = [o for o in cell.get("outputs", [])
            if _bound_output(o, budget, verdict=graded and o.get("output_type") == "error")]
    if len(kept) < len(cell.get("outputs", [])):
        from nbformat.v4 import new_output

        kept.append(new_output("stream", name="stdout", text=f"[{SHORTENED} output not shown (a page shows "
                                                             f"{MAX_PAGE_TEXT_BYTES // 2**20} MB of code and output)]\n"))
        cell.outputs = kept


def bound_notebook(nb) -> None:
    """Every code cell of ``nb`` (in place) within the page's bounds, in the page's order."""
    budget = _Budget()
    for cell in nb.cells:
        if cell.cell_type == "code":
            _bound_source(cell, budget)
            _bound_outputs(cell, budget)


class BoundFeedback(NbGraderPreprocessor):
    """nbgrader's last feedback preprocessor: ``bound_notebook``."""

    def preprocess(self, nb, resources):
        bound_notebook(nb)
        return nb, resources


class PlainOrHighlighted(Highlight2HTML):
    """nbconvert's ``highlight_code`` filter, except that a cell marked ``PLAIN_TEXT`` is shown as escaped
    text in one ``<pre>``, without a span per token."""

    def __call__(self, source, language=None, metadata=None):
        if metadata and metadata.get(PLAIN_TEXT):
            return f'<div class="highlight hl-text"><pre>{html.escape(source, quote=False)}\n</pre></div>'
        return super().__call__(source, language, metadata)


def shortened_count(page: str) -> int:
    """How many notes of a shortening a rendered page holds."""
    return page.count(SHORTENED)
