"""nbconvert's HTML exporter for the feedback pages, its Jinja templates compiled once per process.

nbgrader makes a new exporter for every feedback page, and nbconvert a new Jinja environment for every
exporter: compiling the feedback template and the eight it builds on took 0.2 CPU seconds per
submission, a quarter of what the grader's own process spends on one. The compiled templates are kept
in memory here (Jinja's bytecode cache), keyed by template and checked against the template's source,
so a changed template is compiled again.

Its ``highlight_code`` filter shows a cell that ``feedback_bounds`` marked as plain text without
syntax highlighting (``PlainOrHighlighted``): the grader's memory is bounded on any notebook.
"""

from __future__ import annotations

import jinja2
from nbconvert.exporters import HTMLExporter

from .feedback_bounds import PlainOrHighlighted


class _CompiledInMemory(jinja2.BytecodeCache):
    def __init__(self) -> None:
        self._compiled: dict[str, bytes] = {}

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        code = self._compiled.get(bucket.key)
        if code is not None:
            bucket.bytecode_from_string(code)     # Jinja drops it if the template's source changed

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        self._compiled[bucket.key] = bucket.bytecode_to_string()


COMPILED_TEMPLATES = _CompiledInMemory()


class FeedbackExporter(HTMLExporter):
    """``HTMLExporter`` whose Jinja environment shares this process's compiled templates, and whose
    ``highlight_code`` leaves cells marked as plain text unhighlighted."""

    def from_notebook_node(self, nb, resources=None, **kw):
        info = nb.metadata.get("language_info", {})   # the lexer as HTMLExporter picks it
        lexer = info.get("pygments_lexer", info.get("name", None))
        self.filters = {**self.filters, "highlight_code": PlainOrHighlighted(pygments_lexer=lexer, parent=self)}
        return super().from_notebook_node(nb, resources, **kw)

    def _create_environment(self):
        environment = super()._create_environment()
        environment.bytecode_cache = COMPILED_TEMPLATES
        return environment
