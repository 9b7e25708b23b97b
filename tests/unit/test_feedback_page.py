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
