"""The grade and the visible test agree on every exercise: each visible test cell, run on the solution and
on each mutant, passes or fails alike in the student's kernel and in the judge (``autograder.course.agreement``).

A disagreement means a student sees a visible test pass and still loses its points, or the other way round:
a value whose type changed on the wire, a device lost, a test cell that reads a notebook variable.

Known disagreements would be listed one by one below; there are none. The one kind there was: a mutant
that modifies its argument in place fails in the judge (which checks every call's by-value arguments) but
passed the visible test in the kernel, where a plain call cannot see it (CONTRIBUTING.md, "How test cells
run", 5). Every exercise with such a mutant now has its visible test call it once through
``probes.traced_call`` on fresh inputs and check the arguments afterwards. A listed pair that agrees, or
that no longer disagrees for this reason, fails this test.
"""

from __future__ import annotations

import pytest

from autograder.course.agreement import visible_verdicts

pytestmark = pytest.mark.slow

IN_PLACE = "modified its argument"
KNOWN_IN_PLACE_ONLY_IN_THE_JUDGE: dict[str, set[str]] = {}


def _known(assignment: str, verdict) -> bool:
    return (verdict.mutant in KNOWN_IN_PLACE_ONLY_IN_THE_JUDGE.get(assignment, set())
            and verdict.kernel_error is None and IN_PLACE in (verdict.judge_error or ""))


def test_each_visible_test_gives_the_same_verdict_in_the_kernel_and_in_the_judge(assignment, report):
    verdicts = visible_verdicts(assignment, report)   # the judge's verdicts: the judge run of test_solutions_and_mutants.py
    assert verdicts, "no visible test ran"
    differ = [f"{v.exercise} with {v.mutant or 'the solution'}: in the kernel {v.kernel_error or 'passes'}; "
              f"in the judge {v.judge_error or 'passes'}" for v in verdicts if not v.agree and not _known(assignment.name, v)]
    assert not differ, "visible tests whose verdict differs between the kernel and the judge:\n" + "\n".join(differ)
    stale = KNOWN_IN_PLACE_ONLY_IN_THE_JUDGE.get(assignment.name, set()) - {
        v.mutant for v in verdicts if not v.agree and _known(assignment.name, v)}
    assert not stale, f"listed as known disagreements but now agreeing (remove them from the list): {sorted(stale)}"
    solution_fails = [f"{v.exercise}: {v.kernel_error or v.judge_error}" for v in verdicts
                      if not v.mutant and (v.kernel_error or v.judge_error)]
    assert not solution_fails, "the solution fails its own visible tests:\n" + "\n".join(solution_fails)
    known = sum(_known(assignment.name, v) for v in verdicts)
    print(f"{assignment.name}: {len(verdicts) - known} of {len(verdicts)} visible-test runs agree "
          f"({sum(v.kernel_error is not None and v.agree for v in verdicts)} failures in both), "
          f"{known} known in-place disagreements")
