"""``autograder.course.check``'s report, without running a notebook: the lines printed (budget, failures,
missed mutants), what counts as passing, a mutant caught only when a test failed and its own cell
ran, and ``main``'s exit codes (with ``run_notebook`` replaced)."""

from __future__ import annotations

import types

import nbformat
import pytest

from autograder.course import check, conventions, mutant_edits
from autograder.course.check import MutantResult, NotebookReport, format_report
from autograder.course.mutant_edits import Mutant
from autograder.course.solution_source import load_solution


def mutant(name, failed, setup_error=""):
    return MutantResult("softmax", f"softmax__{name}", f"{name} mistake", failed, setup_error)


def test_a_mutant_is_caught_only_when_a_test_failed_and_its_own_cell_ran():
    assert mutant("a", ["test_softmax"]).caught
    assert not mutant("b", []).caught
    assert not mutant("c", ["test_softmax"], "SyntaxError: bad").caught


def test_the_first_error_output_is_the_cells_error_cut_to_400_characters():
    outputs = [{"output_type": "stream", "text": "x"}, {"output_type": "error", "ename": "E", "evalue": "v" * 500},
               {"output_type": "error", "ename": "Second", "evalue": ""}]
    assert check._error_of(outputs) == "E: " + "v" * 400
    assert check._error_of([{"output_type": "stream"}]) is None


def test_the_report_lines_say_time_budget_failures_and_the_missed_mutants():
    report = NotebookReport("03_attention", 71.25, 60, {4: "cell 4 (test_softmax): NameError: corpus"},
                            {9: "cell 9 (test_x): AssertionError: no"}, 12.0,
                            [mutant("axis", ["test_softmax"]), mutant("nomax", []), mutant("broken", [], "SyntaxError: x")])
    assert format_report(report) == [
        "03_attention: 71.2 s of its 60 s budget (OVER BUDGET); judged with mutants in 12.0 s; mutants caught 1/3 (33%)",
        "  fails in a kernel: cell 4 (test_softmax): NameError: corpus",
        "  fails in the judge: cell 9 (test_x): AssertionError: no",
        "  MISSED softmax__nomax: nomax mistake",
        "  MISSED softmax__broken: broken mistake (the mutant cell itself raised SyntaxError: x)"]
    assert not check.ok(report)


def test_a_clean_report_is_one_line_and_ok():
    report = NotebookReport("01_next_token", 9.0, 60, mutants=[mutant("axis", ["t"])])
    assert format_report(report) == ["01_next_token: 9.0 s of its 60 s budget (within budget); judged with mutants "
                                     "in 0.0 s; mutants caught 1/1 (100%)"]
    assert check.ok(report)
    assert format_report(NotebookReport("x", 1, 60))[0].endswith("mutants caught 0/0")


def test_a_mutant_is_judged_by_the_exercises_tests_unless_its_own_cell_fails():
    class FakeSession:
        def __init__(self, cell_error=None):
            self.cell_error = cell_error
            self.tests = []

        def run_cell(self, source, keep=True):
            outputs = [{"output_type": "error", "ename": "SyntaxError", "evalue": "bad"}] if self.cell_error else []
            return types.SimpleNamespace(outputs=outputs)

        def run_test_cell(self, source, grade_id):
            self.tests.append(grade_id)
            failed = grade_id.endswith("hidden")
            return types.SimpleNamespace(outputs=[{"output_type": "error", "ename": "E", "evalue": ""}] if failed else [])

    cell = lambda gid: nbformat.v4.new_code_cell("", metadata={"nbgrader": {"grade_id": gid}})  # noqa: E731
    nb = types.SimpleNamespace(cells=[cell("softmax"), cell("test_softmax"), cell("test_softmax_hidden")])
    exercise = types.SimpleNamespace(name="softmax", test_indices=[1, 2])
    mutant = Mutant("softmax", "softmax__axis", "axis mistake", "def softmax(x):\n    return x")
    session = FakeSession()
    result = check._try_mutant(session, nb, exercise, mutant)
    assert result.failed_cells == ["test_softmax_hidden"] and result.caught
    assert session.tests == ["test_softmax", "test_softmax_hidden"]
    broken = FakeSession(cell_error=True)
    result = check._try_mutant(broken, nb, exercise, mutant)
    assert result.setup_error == "SyntaxError: bad" and broken.tests == [] and not result.caught


def test_main_exits_2_on_an_unknown_assignment_and_1_when_a_notebook_has_problems(monkeypatch, capsys):
    known = {a.name for a in check.conventions.assignments()}
    first = sorted(known)[0]
    assert check.main(["99_nothing"]) == 2
    assert "check: no assignment 99_nothing in solutions/" in capsys.readouterr().out
    reports = {first: NotebookReport(first, 1.0, 60, {3: "cell 3 (t): E: x"})}
    monkeypatch.setattr(check, "run_notebook", lambda assignment, with_mutants: reports[assignment.name])
    assert check.main([first]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == f"check: problems in {first}"
    reports[first] = NotebookReport(first, 1.0, 60)
    assert check.main([first], with_mutants=False) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "check: all passed"


def test_a_stale_mutant_fails_check_by_name_before_any_kernel_starts(tmp_path, monkeypatch, capsys):
    """An edit whose lines are no longer in the solution cell makes ``check`` fail, naming the mutant."""
    first = conventions.assignments()[0]
    stale = ('softmax_like.stale_copy = {mistake = "A copy of an older solution.", edit = \'\'\'\n'
             '-    return "a line the solution no longer has"\n+    return None\n\'\'\'}\n')
    exercise = conventions.exercises(load_solution(first))[0].name
    (tmp_path / f"{first.name}.toml").write_text(
        first.mutants_path.read_text(encoding="utf-8") + stale.replace("softmax_like", exercise), encoding="utf-8")
    monkeypatch.setattr(conventions, "MUTANTS_DIR", tmp_path)
    monkeypatch.setattr(check, "_run_in_kernel", lambda *a: pytest.fail("a kernel started before the mutants were read"))
    assert check.main([first.name]) == 1
    out = capsys.readouterr().out
    assert f"mutant {exercise}__stale_copy" in out and "edit 1 no longer applies" in out
    assert out.splitlines()[-1] == f"check: problems in {first.name}"
    with pytest.raises(mutant_edits.StaleMutant, match=f"{exercise}__stale_copy"):
        check.run_notebook(first)
