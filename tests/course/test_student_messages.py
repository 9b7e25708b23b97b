"""What a self-study or Colab student reads: whole failure messages, a clear word when the assignment
cannot be inferred, the real cause of a failed install, and feedback pages readable without scripts."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest

from autograder import selfgrade
from autograder.course import conventions, setup_cell
from autograder.__main__ import main
from autograder.judge.protocol import TestVerdict
from autograder.batch.feedback_page import PAGE_STYLE, cell_title, latex_to_text, readable_page

LONG_MESSAGE = ("CheckFailure: softmax: 3 of 12 values differ (largest difference 0.25 at [0, 1]: expected "
                "0.0900306, got 0.3400306); the rows must each sum to 1 over the last dimension, whatever their length\n"
                "Hint: subtract the row maximum before exp, and normalise over dim=-1.")


def _results():
    return [
        TestVerdict("softmax", "test_softmax", 1, True, ""),
        TestVerdict("softmax", "test_softmax_hidden", 2, False, LONG_MESSAGE),
        TestVerdict("softmax", "test_softmax_hidden_edges", 1, False, "ValueError: expected an error for dim=5"),
        TestVerdict("cross_entropy", "test_cross_entropy", 1, True, ""),
    ]


def test_self_grading_table_shows_every_failure_whole_with_its_hint():
    rows, earned, total = selfgrade.summarise(_results())
    table = selfgrade.format_table(rows, earned, total)
    first, hint = LONG_MESSAGE.splitlines()
    assert first in table, "the message must not be cut (it is longer than 160 characters)"
    assert hint in table, "the hint must be shown"
    assert "ValueError: expected an error for dim=5" in table, "every failed test of an exercise is shown"
    assert "Total: 2 / 5 points" in table
    assert re.search(r"^softmax\s+1 / 4\s+hidden tests failed$", table, re.M), table
    assert selfgrade.printed_total(table) == (2.0, 5.0)
    assert selfgrade.printed_total(table.replace("Total", "total")) is None


def test_self_grading_cell_does_not_echo_the_total(monkeypatch, capsys):
    """The cell's last line is the call: returning the score would print it again as Out[..]."""
    monkeypatch.setattr(selfgrade, "read_bundle", lambda name: {"names": [], "tests": []})
    monkeypatch.setattr(selfgrade, "run_tests", lambda bundle, namespace: _results())
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)   # no notebook file to find: the kernel's answers
    assert selfgrade.grade_this_notebook("01_anything") is None
    assert "Total: 2 / 5 points" in capsys.readouterr().out


def test_selfgrade_command_says_when_the_assignment_cannot_be_inferred(tmp_path, capsys):
    known = selfgrade.available_assignments()
    assert known, "the public edition ships self-grading bundles"
    stray = tmp_path / "Downloads" / "my copy.ipynb"
    stray.parent.mkdir()
    shutil.copy(next(p for p in (selfgrade.BUNDLE_DIR.parent.parent / "notebooks").glob("*/*.ipynb")), stray)
    assert main(["selfgrade", str(stray)]) == 2
    err = capsys.readouterr().err
    assert "Could not tell which assignment" in err and "switched off" not in err, err
    assert f"--assignment {known[0]}" in err, err
    assert main(["selfgrade", str(stray), "--assignment", "99_nothing"]) == 2
    assert "no assignment named '99_nothing'" in capsys.readouterr().err


def test_selfgrade_infers_the_assignment_from_the_file_name(tmp_path):
    name = selfgrade.available_assignments()[0]
    slug = name.split("_", 1)[1]
    assert selfgrade.infer_assignment(tmp_path / name / "anything.ipynb") == name
    assert selfgrade.infer_assignment(tmp_path / "Downloads" / f"{slug}.ipynb") == name
    assert selfgrade.infer_assignment(tmp_path / "Downloads" / "untitled.ipynb") is None


def test_kernel_start_up_notice_is_filtered():
    tcp = ("[IPKernelApp] WARNING | Kernel is running over TCP without encryption. All communication (including "
           "code and outputs) is sent in plain text and is susceptible to eavesdropping.")
    assert selfgrade._is_kernel_noise(tcp)
    assert not selfgrade._is_kernel_noise("Traceback (most recent call last):")


@pytest.mark.slow
def test_selfgrade_command_prints_the_table_and_no_kernel_warning(tmp_path):
    # The notebook with the smallest CPU budget (the command grades an untouched copy: 12's took a minute).
    releases = [next((selfgrade.BUNDLE_DIR.parent.parent / "notebooks" / name).glob("*.ipynb"))
                for name in selfgrade.available_assignments()]
    release = min(releases, key=lambda path: conventions.cpu_budget_seconds(conventions.read_notebook(path)))
    name = release.parent.name
    copy = tmp_path / name / release.name
    copy.parent.mkdir()
    shutil.copy(release, copy)
    done = subprocess.run([sys.executable, "-m", "autograder", "selfgrade", str(copy)], capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr
    assert "TCP" not in done.stderr and "TCP" not in done.stdout, done.stderr
    assert done.stdout.lstrip().startswith("exercise"), f"the table comes first:\n{done.stdout[:500]}"
    assert re.search(r"Total: 0 / [0-9.]+ points", done.stdout), done.stdout


# --------------------------------------------------------------------------------------------------
# A failed Colab install names its real cause

ANSI_NOTICE = ("\x1b[1m[\x1b[0m\x1b[34;49mnotice\x1b[0m\x1b[1;39;49m]\x1b[0m\x1b[39;49m A new release of pip is available: "
               "\x1b[0m\x1b[31;49m23.1.2\x1b[0m\x1b[39;49m -> \x1b[0m\x1b[32;49m24.0\x1b[0m\n"
               "\x1b[1m[\x1b[0m\x1b[34;49mnotice\x1b[0m\x1b[1;39;49m]\x1b[0m\x1b[39;49m To update, run: "
               "\x1b[0m\x1b[32;49mpip install --upgrade pip\x1b[0m\n")
GIT_OFFLINE = ("  Running command git clone --filter=blob:none --quiet https://github.com/o/r /tmp/pip-req-build-x\n"
               "  fatal: unable to access 'https://github.com/o/r/': Could not resolve host: github.com\n"
               "  error: subprocess-exited-with-error\n\n"
               "  \u00d7 git clone --filter=blob:none --quiet https://github.com/o/r /tmp/pip-req-build-x did not run "
               "successfully.\n  \u2502 exit code: 128\n  \u2570\u2500> See above for output.\n\n"
               "  note: This error originates from a subprocess, and is likely not a problem with pip.\n"
               "\x1b[1;31merror\x1b[0m: \x1b[1msubprocess-exited-with-error\x1b[0m\n")
INDEX_OFFLINE = ("WARNING: Retrying (Retry(total=4, connect=None, read=None, redirect=None, status=None)) after "
                 "connection broken by 'NewConnectionError('<pip._vendor.urllib3.connection.HTTPSConnection object at "
                 "0x7f3>: Failed to establish a new connection: [Errno -3] Temporary failure in name resolution')': "
                 "/simple/hypothesis/\nERROR: Could not find a version that satisfies the requirement hypothesis "
                 "(from versions: none)\nERROR: No matching distribution found for hypothesis\n")
MISSING_WHEEL = ("WARNING: Requirement '/tmp/x/missing.whl' looks like a filename, but the file does not exist\n"
                 "ERROR: Could not install packages due to an OSError: [Errno 2] No such file or directory: "
                 "'/tmp/x/missing.whl'\n")


@pytest.mark.parametrize("output, cause", [
    (GIT_OFFLINE + ANSI_NOTICE, "unable to access 'https://github.com/o/r/': Could not resolve host: github.com"),
    (INDEX_OFFLINE + ANSI_NOTICE, "Temporary failure in name resolution"),
    (MISSING_WHEEL + ANSI_NOTICE, "Could not install packages due to an OSError: [Errno 2] No such file or directory: "
                                  "'/tmp/x/missing.whl'"),
    ("ERROR: something new went wrong\n" + ANSI_NOTICE, "something new went wrong"),
    ("ERROR: missing.whl is not a valid wheel filename.\n" + ANSI_NOTICE, "missing.whl is not a valid wheel filename."),
    (ANSI_NOTICE, "pip failed"),
])
def test_failed_install_shows_the_real_cause(output, cause):
    assert setup_cell._pip_failure_cause(output) == cause
    # the set-up cell carries the same function: run its copy too
    source = setup_cell.setup_cell_source()
    helpers = source[:source.index("def _install_course_helpers")]
    namespace: dict = {}
    exec(compile(helpers, "<set-up cell>", "exec"), namespace)  # noqa: S102 - the course's own cell
    assert namespace["_pip_failure_cause"](output) == cause
    assert "\x1b" not in namespace["_pip_failure_cause"](output)


# --------------------------------------------------------------------------------------------------
# Feedback pages

PAGE = """<html><head><meta charset="utf-8">
<!-- Loading mathjax macro -->
<script src="https://cdnjs.cloudflare.com/ajax/libs/mathjax/2.7.7/latest.js"> </script>
<script type="text/x-mathjax-config">init_mathjax();</script>
<!-- End of mathjax configuration -->
</head><body>
<div id="toc"><ol>
<li><a href="#test_softmax">Test cell</a> (Score: 1.0 / 1.0)</li>
<li><a href="#test_softmax_hidden">Test cell</a> (Score: 0.0 / 2.0)</li>
<li><a href="#test_softmax_hidden_edges">Test cell</a> (Score: 0.0 / 1.0)</li>
</ol></div>
<div class="text_cell_render"><p>The softmax is $\\mathrm{softmax}(z)_i = \\frac{e^{z_i}}{\\sum_j e^{z_j}}$, and
$$\\text{Attention}(Q, K, V) = \\mathrm{softmax}\\left(\\frac{QK^\\top}{\\sqrt{d_k}}\\right) V$$
costs $O(T^2 d)$ for $\\alpha \\in \\mathbb{R}$. A price of $5 stays as it is.</p></div>
<pre>x = "$not math$"  # in code, dollars stay</pre>
</body></html>"""


def test_feedback_page_renders_formulas_without_scripts():
    page = readable_page(PAGE)
    assert "<script" not in page and "mathjax" not in page.lower()
    assert '<span class="math" title="\\mathrm{softmax}(z)_i = \\frac{e^{z_i}}{\\sum_j e^{z_j}}">softmax(z)<sub>i</sub> = ' \
           "(e<sup>z<sub>i</sub></sup>)/(∑<sub>j</sub> e<sup>z<sub>j</sub></sup>)</span>" in page, page
    assert ">Attention(Q, K, V) = softmax((QK<sup>⊤</sup>)/(√d<sub>k</sub>)) V</span>" in page
    assert '<span class="math display"' in page
    assert ">O(T<sup>2</sup> d)</span>" in page and ">α ∈ ℝ</span>" in page
    assert "A price of $5 stays" in page and '"$not math$"' in page
    assert "\\frac" not in re.sub(r'title="[^"]*"', "", page), "no raw LaTeX left in the text"


def test_feedback_page_names_the_summary_entries_and_wraps_long_lines():
    page = readable_page(PAGE)
    entries = re.findall(r'<li><a href="#([^"]+)">([^<]+)</a>', page)
    assert entries == [("test_softmax", "softmax: visible tests"), ("test_softmax_hidden", "softmax: hidden tests"),
                       ("test_softmax_hidden_edges", "softmax: hidden tests (edges)")]
    assert PAGE_STYLE in page and "white-space: pre-wrap" in PAGE_STYLE and "overflow-wrap: anywhere" in PAGE_STYLE
    assert cell_title("test_multi_head_attention_hidden_errors") == "multi_head_attention: hidden tests (errors)"


@pytest.mark.parametrize("latex, text", [
    ("d_\\text{model}^{-1/2}", "d<sub>model</sub><sup>-1/2</sup>"),
    ("p(b \\mid a)", "p(b ∣ a)"),
    ("-\\log p_\\theta(x)", "-log p<sub>θ</sub>(x)"),
    ("10^{-5}", "10<sup>-5</sup>"),
    ("1/\\sqrt{d_k}", "1/√d<sub>k</sub>"),
])
def test_simple_latex_reads_as_text(latex, text):
    assert latex_to_text(latex) == text
