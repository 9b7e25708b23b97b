"""Self-grading's second pass: a mistake charged where it is made, as the grader charges it (``judge.second_pass``).

After the tests ran, each exercise that failed a test while an exercise it uses failed one too is tested again
(its failed tests only, in a judge of their own) with the course's code for those parts bound in the
namespace in place of the student's (from the bundle's ``references``), then the student's are put back. A test
that passes so counts as passed, with the grader's note; one that fails again keeps its message with the
grader's line naming the part that failed too.

One difference from the grader, which reruns the answer cells in a fresh runner with the course's code in
place: here the student's own cells are not run again, so an answer that took the earlier part when its cell
ran (a class that subclasses ``LayerNorm``, a default argument made from it) still uses the student's; one that
looks the name up when called (every solution of the course) uses the course's.
"""

from __future__ import annotations

import contextlib

from ..judge.protocol import TestVerdict, failed_line, passed_note

_MISSING = object()


def plan(bundle: dict, verdicts: list[TestVerdict]) -> tuple[dict[str, list[str]], dict[str, str]]:
    """The exercises to test again, each with the failed upstream exercises it is tested with, and each
    failed exercise's first failed test."""
    first_failure: dict[str, str] = {}
    for verdict in verdicts:
        if not verdict.passed:
            first_failure.setdefault(verdict.exercise, verdict.grade_id)
    references, upstream = bundle.get("references", {}), bundle.get("upstream", {})
    again = {}
    for exercise in first_failure:
        culprits = [u for u in upstream.get(exercise, []) if u in first_failure and u in references]
        if culprits:
            again[exercise] = culprits
    return again, first_failure


@contextlib.contextmanager
def course_parts(namespace: dict, references: dict, names: list[str]):
    """``namespace`` with the names the course's code for ``names`` defines bound to it while the block runs (in
    notebook order, so a later part's code sees an earlier part's), the student's put back after."""
    saved: dict = {}
    try:
        for name in names:
            scope = dict(namespace)   # the course's code sees the notebook's imports and the other answers
            exec(compile(references[name], f"<the course's {name}>", "exec"), scope)  # noqa: S102 - the course's
            for key, value in scope.items():
                if namespace.get(key, _MISSING) is not value:
                    saved.setdefault(key, namespace.get(key, _MISSING))
                    namespace[key] = value
        yield
    finally:
        for key, value in saved.items():
            if value is _MISSING:
                namespace.pop(key, None)
            else:
                namespace[key] = value


def second_pass(bundle: dict, namespace: dict, verdicts: list[TestVerdict], run) -> list[TestVerdict]:
    """``verdicts`` with the failed tests of each exercise whose upstream part failed tested again (``run``: the
    bundle's judge, as ``selfgrade.run_tests`` runs it), in place."""
    again, first_failure = plan(bundle, verdicts)
    for exercise, culprits in again.items():
        failed = [v for v in verdicts if v.exercise == exercise and not v.passed]
        tests = [t for t in bundle["tests"] if t["grade_id"] in {v.grade_id for v in failed}]
        why = "self-grading's second run gave no verdict"
        try:
            with course_parts(namespace, bundle["references"], culprits):
                second = {v.grade_id: v for v in run(dict(bundle, tests=tests), namespace)}
        except Exception as error:  # noqa: BLE001 - the course's code failed here: the first verdicts stand
            second, why = {}, f"{type(error).__name__}: {str(error)[:100]}"
        for verdict in failed:
            new = second.get(verdict.grade_id)
            if new is not None and new.passed:
                verdict.passed, verdict.message = True, passed_note(exercise, culprits, first_failure).strip()
            else:
                line = failed_line(exercise, culprits, first_failure, None if new is not None else why)
                verdict.message = f"{verdict.message}\n{line}"
    return verdicts
