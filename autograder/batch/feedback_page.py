"""The feedback page's own look, made readable without scripts.

nbgrader's feedback template loads MathJax from a CDN, which the page's Content-Security-Policy
forbids (no scripts, no remote loads), so formulas would show as raw LaTeX. ``readable_page`` renders
them here, offline, as text (Greek letters and operators in Unicode, sub- and superscripts, fractions
as a/b; the LaTeX source stays in the span's title; a tag's attributes are left alone, so a heading's anchor
keeps its formula as text rather than a span), removes the script tags and nbgrader's empty comment boxes,
names each entry of the summary box after its exercise, and makes long message lines wrap.
"""

from __future__ import annotations

import html
import re


PAGE_STYLE = """<style>
pre, .output_text pre, .output_area pre { white-space: pre-wrap; overflow-wrap: anywhere; word-break: normal; }
span.math { font-family: "Cambria Math", "STIX Two Math", "Latin Modern Math", "Times New Roman", serif;
            font-style: italic; white-space: nowrap; }
span.math.display { display: block; text-align: center; margin: 0.6em 0; white-space: normal; }
span.math sub, span.math sup { font-size: 75%; }
</style>"""

_MATHJAX = re.compile(r"<!-- Loading mathjax macro -->.*?<!-- End of mathjax configuration -->", re.DOTALL)
_SCRIPTS = re.compile(r"<script\b[^>]*>.*?</script>", re.DOTALL | re.IGNORECASE)
_MATH_OR_VERBATIM = re.compile(
    r"(?P<verbatim><(?P<tag>pre|code|style|textarea)\b.*?</(?P=tag)>|<[A-Za-z/!][^<>]*>)"
    r"|\$\$(?P<display>[^<>]+?)\$\$|\\\[(?P<display2>[^<>]+?)\\\]"
    r"|(?<![\\$\w])\$(?=\S)(?P<inline>[^$<>]*?[^\s\\$])\$(?![\w$])|\\\((?P<inline2>[^<>]+?)\\\)",
    re.DOTALL | re.IGNORECASE)
_NO_COMMENT = re.compile(r'<div class="panel-footer">\s*<div>\s*<b>Comments:</b>\s*<p>No response\.</p>\s*</div>\s*</div>')
_COMMENT_ANCHOR = re.compile(r'<a name="comment-([A-Za-z0-9_-]+)"></a>')
_TOC_ENTRY = re.compile(r'(<li><a href="#)([A-Za-z0-9_-]+)(">)Test cell(</a>)')

_SYMBOLS = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "varepsilon": "ε", "zeta": "ζ",
    "eta": "η", "theta": "θ", "iota": "ι", "kappa": "κ", "lambda": "λ", "mu": "μ", "nu": "ν", "xi": "ξ",
    "pi": "π", "rho": "ρ", "sigma": "σ", "tau": "τ", "phi": "φ", "varphi": "φ", "chi": "χ", "psi": "ψ",
    "omega": "ω", "Gamma": "Γ", "Delta": "Δ", "Theta": "Θ", "Lambda": "Λ", "Pi": "Π", "Sigma": "Σ",
    "Phi": "Φ", "Psi": "Ψ", "Omega": "Ω", "cdot": "·", "times": "×", "le": "≤", "leq": "≤", "ge": "≥",
    "geq": "≥", "ne": "≠", "neq": "≠", "approx": "≈", "sim": "∼", "propto": "∝", "infty": "∞", "to": "→",
    "rightarrow": "→", "leftarrow": "←", "Rightarrow": "⇒", "mapsto": "↦", "in": "∈", "notin": "∉",
    "subset": "⊂", "subseteq": "⊆", "cup": "∪", "cap": "∩", "sum": "∑", "prod": "∏", "int": "∫",
    "partial": "∂", "nabla": "∇", "sqrt": "√", "pm": "±", "mp": "∓", "ldots": "…", "cdots": "⋯",
    "dots": "…", "odot": "⊙", "otimes": "⊗", "oplus": "⊕", "top": "⊤", "forall": "∀", "exists": "∃",
    "lfloor": "⌊", "rfloor": "⌋", "lceil": "⌈", "rceil": "⌉", "langle": "⟨", "rangle": "⟩", "|": "‖",
    "quad": " ", "qquad": "  ", ",": " ", ";": " ", "!": "", " ": " ",
    "log": "log", "exp": "exp", "max": "max", "min": "min", "arg": "arg", "sin": "sin", "cos": "cos",
    "tanh": "tanh", "det": "det", "lim": "lim", "left": "", "right": "", "big": "", "Big": "", "bigg": "",
    "mid": "∣", "vert": "|", "Vert": "‖", "lVert": "‖", "rVert": "‖", "lvert": "|", "rvert": "|", "ell": "ℓ",
    "equiv": "≡", "circ": "∘", "ast": "∗", "star": "⋆", "prime": "′", "neg": "¬", "land": "∧", "lor": "∨",
    "leftrightarrow": "↔", "iff": "⇔", "implies": "⇒", "triangleq": "≜", "coloneqq": "≔", "gets": "←",
    "ll": "≪", "gg": "≫", "varsigma": "ς", "sup": "sup", "inf": "inf", "argmax": "argmax", "argmin": "argmin",
    "{": "{", "}": "}", "%": "%", "_": "_", "#": "#", "&amp;": "&amp;",
}
_LETTERS = {"R": "ℝ", "N": "ℕ", "Z": "ℤ", "E": "𝔼", "Q": "ℚ", "C": "ℂ", "P": "ℙ"}


def readable_page(text: str) -> str:
    """A feedback page made readable without scripts: formulas as text, named summary entries,
    wrapped long lines, and no MathJax loader (the page's CSP would block it anyway)."""
    text = _MATHJAX.sub("", text)
    text = _SCRIPTS.sub("", text)
    text = text.replace("</head>", PAGE_STYLE + "\n</head>", 1)
    text = without_empty_comments(text)
    text = _TOC_ENTRY.sub(lambda m: m.group(1) + m.group(2) + m.group(3) + html.escape(cell_title(m.group(2)))
                          + m.group(4), text)
    head, marker, body = text.partition("<body")
    if not marker:
        return text
    return head + marker + _MATH_OR_VERBATIM.sub(_math_span, body)


def without_empty_comments(text: str) -> str:
    """The page without nbgrader's empty comment boxes: each answer cell gets a "Comments: No response."
    footer and a "Comment" entry in the summary for an instructor's manual comment, which an autograded
    course never writes (six empty entries on a page, issue 51). A comment someone wrote is kept, with its
    entry."""
    parts = _COMMENT_ANCHOR.split(text)   # [before, id, panel..., id, panel..., ...]
    empty = []
    for at in range(1, len(parts), 2):
        panel = parts[at + 1]
        footer = panel.find('<div class="panel-footer">')
        match = _NO_COMMENT.match(panel, footer) if footer >= 0 else None
        if match:
            parts[at + 1] = panel[:match.start()] + panel[match.end():]
            empty.append(parts[at])
        parts[at] = f'<a name="comment-{parts[at]}"></a>'
    text = "".join(parts)
    for grade_id in empty:
        text = text.replace(f'<li><a href="#comment-{grade_id}">Comment</a></li>', "", 1)
    return text


def cell_title(grade_id: str) -> str:
    """How the summary box names a graded cell: ``test_softmax_hidden_edges`` -> ``softmax: hidden
    tests (edges)``."""
    name = grade_id[5:] if grade_id.startswith("test_") else grade_id
    if "_hidden" in name:
        exercise, _, part = name.partition("_hidden")
        part = part.lstrip("_").replace("_", " ")
        return f"{exercise}: hidden tests" + (f" ({part})" if part else "")
    return f"{name}: visible tests"


def _math_span(match) -> str:
    if match.group("verbatim"):
        return match.group("verbatim")
    display = match.group("display") or match.group("display2")
    source = display or match.group("inline") or match.group("inline2")
    return (f'<span class="math{" display" if display else ""}" title="{source.strip().replace(chr(34), "&quot;")}">'
            f"{latex_to_text(source)}</span>")


def latex_to_text(source: str) -> str:
    """Simple LaTeX as HTML text: Greek letters and operators as Unicode, sub- and superscripts,
    fractions as a/b, \\text{...} and \\mathrm{...} as their content. Input is HTML-escaped already."""
    text = source.strip()
    for _ in range(8):   # innermost first: \frac{a}{b}, \mathbb{R}, \text{...}
        before = text
        text = re.sub(r"\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}", lambda m: f"{_paren(m.group(1))}/{_paren(m.group(2))}", text)
        text = re.sub(r"\\sqrt\s*\{([^{}]*)\}", lambda m: f"√{_paren(m.group(1))}", text)
        text = re.sub(r"\\mathbb\s*\{([A-Z])\}", lambda m: _LETTERS.get(m.group(1), m.group(1)), text)
        text = re.sub(r"\\(?:text|mathrm|mathbf|mathit|operatorname|textrm|textbf|mathcal|boldsymbol|bm|hat|tilde|bar|vec|overline)"
                      r"\s*\{([^{}]*)\}", lambda m: "{" + m.group(1) + "}" if m.start() and text[m.start() - 1] in "_^"
                      else m.group(1), text)
        text = re.sub(r"\^\s*\{([^{}]*)\}", r"<sup>\1</sup>", text)
        text = re.sub(r"_\s*\{([^{}]*)\}", r"<sub>\1</sub>", text)
        if text == before:
            break
    text = re.sub(r"\^\s*(\\[A-Za-z]+|[^\s\\{}])", r"<sup>\1</sup>", text)
    text = re.sub(r"_\s*(\\[A-Za-z]+|[^\s\\{}<])", r"<sub>\1</sub>", text)
    text = re.sub(r"\\([A-Za-z]+|[,;! {}%_#|])", lambda m: _SYMBOLS.get(m.group(1), m.group(1)), text)
    text = text.replace("{", "").replace("}", "").replace("~", "\u00a0")
    return text


def _paren(part: str) -> str:
    return part if re.fullmatch(r"[\w.\\]+", part.strip()) else f"({part})"

