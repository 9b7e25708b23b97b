"""Self-grading charges a mistake where it is made, as the grader does (``autograder.selfgrade.second_pass``):
a wrong ``double`` costs ``quadruple``, which uses it, nothing; a wrong ``quadruple`` keeps its failure and is
told that ``double`` failed too; the student's ``double`` is back in the namespace afterwards. A real judge
process answers from a namespace, as in a student's kernel."""

from __future__ import annotations

from autograder import selfgrade
from autograder.judge.protocol import REFERENCE_NOTE


def _test(exercise: str, factor: int, hidden: bool = False) -> dict:
    body = f"from utils import checks\nchecks.assert_equal({exercise}(3), {3 * factor}, name='{exercise}(3)')\n"
    if hidden:
        body = f"### BEGIN HIDDEN TESTS\n{body}### END HIDDEN TESTS\n"
    return {"exercise": exercise, "grade_id": f"test_{exercise}" + ("_hidden" if hidden else ""), "points": 1,
            "source": body}


BUNDLE = {"names": ["double", "quadruple"],
          "tests": [_test("double", 2), _test("double", 2, True), _test("quadruple", 4), _test("quadruple", 4, True)],
          "references": {"double": "def double(x):\n    return 2 * x\n"}, "upstream": {"quadruple": ["double"]}}


def _namespace(quadruple: str) -> dict:
    namespace: dict = {}
    exec("def double(x):\n    return 3 * x\n" + quadruple, namespace)  # noqa: S102 - the test's own answers
    return namespace


def test_a_wrong_part_costs_only_its_own_points_and_comes_back():
    namespace = _namespace("def quadruple(x):\n    return double(double(x))\n")
    student_double = namespace["double"]
    verdicts = {v.grade_id: v for v in selfgrade.run_tests(BUNDLE, namespace)}
    assert [g for g, v in verdicts.items() if not v.passed] == ["test_double", "test_double_hidden"]
    assert verdicts["test_quadruple_hidden"].message == (
        REFERENCE_NOTE + "double, since yours lost points in test_double: your quadruple passes this test with it.")
    assert namespace["double"] is student_double
    rows, earned, total = selfgrade.summarise(list(verdicts.values()))
    assert (earned, total) == (2, 4) and REFERENCE_NOTE in selfgrade.format_table(rows, earned, total)


def test_a_wrong_dependent_keeps_its_failure_and_is_told_of_the_other():
    namespace = _namespace("def quadruple(x):\n    return 3 * double(x)\n")
    verdicts = {v.grade_id: v for v in selfgrade.run_tests(BUNDLE, namespace)}
    assert sorted(g for g, v in verdicts.items() if not v.passed) == [
        "test_double", "test_double_hidden", "test_quadruple", "test_quadruple_hidden"]
    assert verdicts["test_quadruple"].message.endswith(
        "double, which quadruple uses, lost points too (test_double); this test fails with the course's double as "
        "well, so the failure is quadruple's own.")
