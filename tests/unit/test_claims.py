"""utils.claims: a sentence about an outcome, checked where it is printed; strict where the course checks itself."""

from __future__ import annotations

import nbformat
import pytest
from nbclient import NotebookClient

from utils import claims, precision


@pytest.fixture
def lenient(monkeypatch):
    monkeypatch.delenv(claims.STRICT, raising=False)
    monkeypatch.delenv(claims.GPU_CONFIG_ON_CPU, raising=False)


def test_a_claim_that_holds_is_printed_with_a_tick(lenient, capsys):
    assert claims.claim("ALiBi beats chance: 0.26 against 0.06", holds=0.26 > 0.06) is True
    assert capsys.readouterr().out == "✓ ALiBi beats chance: 0.26 against 0.06\n"
    assert claims.RECORD[-1] == ("ALiBi beats chance: 0.26 against 0.06", True)


def test_a_claim_that_fails_in_a_students_kernel_says_so_and_goes_on(lenient, capsys):
    import numpy as np
    assert claims.claim("the loss falls", holds=np.bool_(False), why_it_may_not="your own parts run here") is False
    out = capsys.readouterr().out
    assert out.startswith("✗ Not on this run: the loss falls (your own parts run here)")


def test_a_claim_that_fails_where_the_course_checks_itself_raises_naming_it(monkeypatch):
    monkeypatch.setenv(claims.STRICT, "1")
    monkeypatch.delenv(claims.GPU_CONFIG_ON_CPU, raising=False)
    with pytest.raises(claims.ClaimNotHeld, match="the loss falls"):
        claims.claim("the loss falls", holds=False)


def test_the_gpu_configuration_run_on_the_cpu_checks_no_claims(monkeypatch):
    # Its few smoke-sized steps say nothing about the full GPU run the claims describe.
    assert claims.GPU_CONFIG_ON_CPU == precision.GPU_CONFIG_ON_CPU
    monkeypatch.setenv(claims.STRICT, "1")
    monkeypatch.setenv(claims.GPU_CONFIG_ON_CPU, "1")
    assert claims.claim("the loss falls", holds=False) is False


@pytest.mark.parametrize("sentence", ["", "   ", None])
def test_a_claim_needs_a_sentence(lenient, sentence):
    with pytest.raises(TypeError):
        claims.claim(sentence, holds=True)


def test_a_falsified_claim_fails_an_executed_notebook(monkeypatch, tmp_path):
    """The suite's notebook runs set STRICT (tests/conftest.py, the simulated Colab, `autograder check`): a claim
    that does not hold stops the run at its cell, with the claim named, as any error in a cell does."""
    monkeypatch.setenv(claims.STRICT, "1")
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("from utils import claims\naccuracy = 0.26"),
        nbformat.v4.new_code_cell('claims.claim(f"accuracy {accuracy} is four times chance", holds=accuracy > 0.9)'),
    ])
    import os
    from pathlib import Path
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    client = NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(tmp_path)}})
    with client.setup_kernel(env=env):
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
    errors = [o for o in nb.cells[1].outputs if o.output_type == "error"]
    assert errors and errors[0].ename == "ClaimNotHeld"
    assert "accuracy 0.26 is four times chance" in errors[0].evalue
