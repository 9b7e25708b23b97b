"""The feedback pages' exporter (autograder/batch/feedback_exporter.py) gives nbconvert's HTML exactly, and
compiles its Jinja templates once per process, not once per page."""

from __future__ import annotations

import jinja2
from nbconvert.exporters import HTMLExporter
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from autograder.batch.feedback_exporter import FeedbackExporter


def test_pages_are_nbconverts_and_the_second_compiles_no_template(monkeypatch):
    nb = new_notebook(cells=[new_markdown_cell("# A title\n\nSome *text*, and ünïcode."),
                             new_code_cell("x = 1\nprint(x)", outputs=[new_output("stream", name="stdout", text="1\n")])])
    plain, _ = HTMLExporter().from_notebook_node(nb)
    compiled = []
    compile_template = jinja2.Environment.compile
    monkeypatch.setattr(jinja2.Environment, "compile",
                        lambda self, *args, **kwargs: compiled.append(args) or compile_template(self, *args, **kwargs))
    first, _ = FeedbackExporter().from_notebook_node(nb)
    compiled_first = len(compiled)
    second, _ = FeedbackExporter().from_notebook_node(nb)
    assert first == second == plain
    assert len(compiled) == compiled_first, "the second page compiled its templates again"
    nb.cells[0].source = "# Another title"          # a changed page, the same templates: still none compiled
    third, _ = FeedbackExporter().from_notebook_node(nb)
    assert "Another title" in third and len(compiled) == compiled_first
