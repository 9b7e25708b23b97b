"""``autograder.batch.feedback_page``: a feedback page readable without scripts: formulas as text (the LaTeX
kept in the title), code and preformatted text left alone, no scripts, summary entries named after
their exercise."""

from __future__ import annotations

import pytest

from autograder.batch.feedback_page import PAGE_STYLE, cell_title, latex_to_text, readable_page


@pytest.mark.parametrize("latex, text", [
    (r"\alpha + \beta \le \infty", "α + β ≤ ∞"),
    (r"x_i^2", "x<sub>i</sub><sup>2</sup>"),
    (r"W_{q}^{\top}", "W<sub>q</sub><sup>⊤</sup>"),
    (r"\frac{QK^\top}{\sqrt{d_k}}", "(QK<sup>⊤</sup>)/(√d<sub>k</sub>)"),
    (r"\frac{1}{n}", "1/n"),
    (r"x \in \mathbb{R}^{d}", "x ∈ ℝ<sup>d</sup>"),
    (r"\text{softmax}(z)_i", "softmax(z)<sub>i</sub>"),
    (r"\mathrm{d}_{\text{model}}", "d<sub>model</sub>"),
    (r"a\,b~c", "a\u2009b\u00a0c"),
    (r"\unknown", "unknown"),
])
def test_latex_becomes_text(latex, text):
    assert latex_to_text(latex) == text


@pytest.mark.parametrize("grade_id, title", [
    ("test_softmax", "softmax: visible tests"),
    ("test_softmax_hidden", "softmax: hidden tests"),
    ("test_multi_head_attention_hidden_errors", "multi_head_attention: hidden tests (errors)"),
    ("test_top_k_hidden_edge_cases", "top_k: hidden tests (edge cases)"),
    ("setup", "setup: visible tests"),
])
def test_summary_entries_are_named_after_their_exercise(grade_id, title):
    assert cell_title(grade_id) == title


PAGE = """<html><head><title>t</title>
<!-- Loading mathjax macro --><script src="https://cdn/mathjax.js"></script><!-- End of mathjax configuration -->
</head><body>
<ul><li><a href="#test_softmax_hidden">Test cell</a></li></ul>
<p>The loss is $-\\log p_y$ and costs $5 or $6.</p>
<p>$$\\sum_i x_i$$</p>
<pre>keep $x_1$ here</pre><code>$y$</code>
<SCRIPT>alert(1)</SCRIPT>
</body></html>"""


def test_a_page_loses_its_scripts_and_shows_formulas_as_text():
    page = readable_page(PAGE)
    assert "script" not in page.lower() and "mathjax" not in page
    assert PAGE_STYLE + "\n</head>" in page
    assert '<a href="#test_softmax_hidden">softmax: hidden tests</a>' in page
    assert '<span class="math" title="-\\log p_y">-log p<sub>y</sub></span>' in page
    assert "costs $5 or $6." in page                          # money is not a formula
    assert '<span class="math display" title="\\sum_i x_i">∑<sub>i</sub> x<sub>i</sub></span>' in page
    assert "<pre>keep $x_1$ here</pre><code>$y$</code>" in page


def test_a_title_with_a_quote_stays_one_attribute_and_a_page_without_a_body_is_left_as_is():
    assert 'title="\\text{&quot;a&quot;}"' in readable_page('<body>$\\text{"a"}$</body>')
    assert readable_page("<p>$x$</p>") == "<p>$x$</p>"


# --------------------------------------------------------------------------------------------------
# What a page shows is bounded (feedback_bounds): a notebook built to blow up syntax highlighting (a
# million one-character tokens) took the grader to gigabytes and wrote a 25 MB page.

import nbformat  # noqa: E402
from nbformat.v4 import new_code_cell, new_notebook, new_output  # noqa: E402

from autograder.batch import feedback_bounds as bounds  # noqa: E402
from autograder.batch.feedback_exporter import FeedbackExporter  # noqa: E402


def page_of(*cells):
    return new_notebook(cells=list(cells), metadata={"language_info": {"name": "python"}})


def graded_cell(source, **outputs):
    cell = new_code_cell(source, metadata={"nbgrader": {"grade": True, "grade_id": "test_f", "points": 1}})
    cell.outputs = [new_output(kind, **fields) for kind, fields in outputs.items()]
    return cell


def test_a_long_cell_is_shown_as_plain_text_shortened_and_says_so():
    bomb = "a=1;" * 250_000                                  # 1,000,000 characters, as many tokens
    nb = page_of(new_code_cell("def f(x):\n    return 2 * x\n"), new_code_cell(bomb))
    bounds.bound_notebook(nb)
    answer, shown = nb.cells
    assert bounds.PLAIN_TEXT not in answer.metadata and answer.source == "def f(x):\n    return 2 * x\n"
    assert shown.metadata[bounds.PLAIN_TEXT] is True
    assert shown.source == bomb[:50_000] + (
        "\n# [shortened for this page: shown as plain text (a page highlights cells of up to 20,000 characters, "
        "50,000 tokens in all)]\n# [shortened for this page: 950,000 more characters of this cell are not shown "
        "(a page shows 50,000 of a cell)]")


def test_highlighting_stops_when_the_pages_tokens_are_spent():
    cells = [new_code_cell("a=1;" * 4_000) for _ in range(5)]   # 16,000 tokens each, under 20,000 characters
    bounds.bound_notebook(page_of(*cells))
    assert [bounds.PLAIN_TEXT in c.metadata for c in cells] == [False, False, False, True, True]


def test_colour_codes_are_removed_once_the_pages_are_spent_and_outputs_past_the_page_are_left_out():
    coloured = new_code_cell("print(...)")
    coloured.outputs = [new_output("stream", name="stdout", text="\x1b[31mx" * 6_000) for _ in range(2)]
    big = new_code_cell("print(...)")
    big.outputs = [new_output("stream", name="stdout", text="y" * 4_000_000) for _ in range(2)]
    verdict = graded_cell("check(f)", error={"ename": "CheckFailure", "evalue": "f: wrong",
                                             "traceback": ["CheckFailure: f: wrong"]})
    bounds.bound_notebook(page_of(coloured, big, verdict))
    assert [o.text.count("\x1b[") for o in coloured.outputs] == [6_000, 0]
    assert [o.text[:30] for o in big.outputs] == ["y" * 30, "[shortened for this page: outp"]
    assert verdict.outputs[0].evalue == "f: wrong", "a test's verdict is always shown"


def render(nb) -> str:
    body, _ = FeedbackExporter().from_notebook_node(nb)
    return body


def test_the_page_of_a_highlighting_bomb_has_no_span_per_token_and_stays_small():
    bomb = "a=1;" * 250_000
    nb = page_of(new_code_cell("def f(x):\n    return 2 * x\n"), new_code_cell(bomb))
    bounds.bound_notebook(nb)
    page = render(nb)
    assert len(page.encode()) < 2 * 2**20 and page.count("<span") < 100, (len(page), page.count("<span"))
    assert bounds.shortened_count(page) == 2 and '<span class="k">def</span>' in page
    assert "a=1;" * 100 in page


def test_plain_text_is_escaped():
    nb = page_of(new_code_cell("print('<script>alert(1)</script>') # " + "x" * 30_000))
    bounds.bound_notebook(nb)
    page = render(nb)
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_a_page_over_the_cap_is_never_written_a_short_one_is(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from autograder.batch import gradebook
    from autograder.batch.report import GradeRow

    root, out = tmp_path / "course", tmp_path / "out"
    page = root / "feedback" / "ann" / "01_a" / "a.html"
    page.parent.mkdir(parents=True)
    page.write_text("<html><head></head><body>" + "x" * 5_000 + "</body></html>", encoding="utf-8")

    class Api:
        def generate_feedback(self, *args, **kwargs):
            return {"success": True}

    job = SimpleNamespace(student_id="ann", assignment=SimpleNamespace(name="01_a"),
                          row=GradeRow("ann", "01_a", 3.0, 3.0, "ok", ""))
    monkeypatch.setattr(gradebook, "MAX_FEEDBACK_PAGE_BYTES", 4_000)
    gradebook.write_feedback(job, Api(), root, out)
    text = (out / "feedback" / "ann" / "01_a" / "a.html").read_text(encoding="utf-8")
    assert len(text) < 4_000 and "its feedback page would have been" in text and "Content-Security-Policy" in text
    assert job.row.detail == "feedback page shortened in 1 place(s) (what a page shows is bounded)"


def test_the_readme_states_the_pages_bounds():
    from pathlib import Path

    text = " ".join((Path(bounds.__file__).parents[1] / "README.md").read_text(encoding="utf-8").split())
    for phrase in (f"up to {bounds.MAX_HIGHLIGHTED_CELL_CHARS:,} characters and while the page's "
                   f"{bounds.MAX_HIGHLIGHTED_TOKENS:,} tokens last",
                   f"at most {bounds.MAX_SHOWN_CELL_CHARS:,} characters of it",
                   f"colour codes become markup for {bounds.MAX_ANSI_SEQUENCES:,} of them",
                   f"code and outputs take at most {bounds.MAX_PAGE_TEXT_BYTES // 2**20} MB",
                   f"A page over {bounds.MAX_FEEDBACK_PAGE_BYTES // 2**20} MB is never written"):
        assert phrase in text, phrase


def test_a_formula_in_a_heading_is_rendered_in_its_text_and_left_alone_in_its_anchor():
    """nbconvert names a heading's anchor after its text, formula included: rendering the formula inside
    the ``id`` and ``href`` attributes put a span's markup there, which broke the tag and showed the
    URL-encoded LaTeX in the heading (issue 51)."""
    heading = ('<h1 id="Why-divide-by-$%5Csqrt%7Bd_k%7D$">Why divide by $\\sqrt{d_k}$'
               '<a class="anchor-link" href="#Why-divide-by-$%5Csqrt%7Bd_k%7D$">¶</a></h1>')
    page = readable_page(f"<html><head></head><body>{heading}</body></html>")
    h1 = page[page.index("<h1"):page.index("</h1>")]
    assert 'id="Why-divide-by-$%5Csqrt%7Bd_k%7D$"' in h1 and 'href="#Why-divide-by-$%5Csqrt%7Bd_k%7D$"' in h1
    assert h1.count('<span class="math"') == 1 and "√d<sub>k</sub></span>" in h1


def test_empty_comment_boxes_and_their_summary_entries_go_and_a_written_comment_stays():
    """nbgrader gives every answer cell a manual-comment box; an autograded page showed six empty
    "Comment" entries and "Comments: No response." footers (issue 51)."""
    def panel(grade_id, comment):
        return (f'<a name="comment-{grade_id}"></a><div class="panel-heading">answer</div>'
                f'<div class="panel-body">code</div><div class="panel-footer"> <div> <b>Comments:</b> '
                f'<p>{comment}</p> </div> </div>')
    toc = '<ol><li><a href="#comment-a">Comment</a></li><li><a href="#comment-b">Comment</a></li></ol>'
    page = readable_page(f'<html><head></head><body>{toc}{panel("a", "No response.")}{panel("b", "Good work.")}</body></html>')
    assert 'href="#comment-a"' not in page and "No response." not in page and '<a name="comment-a">' in page
    assert 'href="#comment-b">Comment</a>' in page and "Good work." in page
