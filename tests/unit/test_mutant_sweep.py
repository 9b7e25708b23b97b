"""autograder.course.mutant_sweep: operator mutants of a solution cell (the judge run is check's, tested there)."""

from __future__ import annotations

import ast
import subprocess
import sys

from autograder.course import conventions
from autograder.course.mutant_sweep import operator_mutants

SOLUTION = '''import torch


def scaled_rows(x, eps=1e-5):
    """Each row of x divided by its norm.

    dim=-1 in this docstring is never edited.
    """
    # dim=-1 in a comment is never edited either
    norms = x.norm(dim=-1, keepdim=True)
    mask = torch.ones(3, dtype=torch.bool, device=x.device)
    if x.shape[0] <= 0:
        raise ValueError(f"need a row, not {x.shape[0] - 1 + 1} (dim=-1 <= 0)")
    return x / (norms + eps)
'''


def _by_operator(mutants):
    found = {}
    for m in mutants:
        found.setdefault(m.operator, []).append(m)
    return found


def test_each_operator_mutant_is_one_edit_that_compiles_and_differs_from_the_solution_and_the_others():
    mutants = operator_mutants("scaled_rows", SOLUTION)
    programs = [ast.dump(ast.parse(m.mutant.code)) for m in mutants]
    assert mutants and len(set(programs)) == len(programs) and ast.dump(ast.parse(SOLUTION)) not in programs
    for m in mutants:
        changed = [(a, b) for a, b in zip(SOLUTION.split("\n"), m.mutant.code.split("\n")) if a != b]
        assert changed == [(SOLUTION.split("\n")[m.line - 1], m.mutant.code.split("\n")[m.line - 1])]
        assert m.mutant.exercise == "scaled_rows" and m.mutant.name.startswith("scaled_rows__sweep_")


def test_the_operators_that_apply_are_made_and_docstrings_comments_and_headers_are_left_alone():
    found = _by_operator(operator_mutants("scaled_rows", SOLUTION))
    assert [m.after for m in found["device dropped to the CPU"]] == [
        "mask = torch.ones(3, dtype=torch.bool, device='cpu')"]
    assert [m.after for m in found["last axis made the first"]] == ["norms = x.norm(dim=0, keepdim=True)"]
    assert [m.after for m in found["<= made <"]] == ["if x.shape[0] < 0:"]
    assert [m.after for m in found["error type changed"]] == ['raise TypeError(f"need a row, not {x.shape[0] - 1 + 1} (dim=-1 <= 0)")']
    assert len(found["<= made <"]) == 1 and "- 1 dropped" not in found    # edits inside a message are not programs
    assert {m.before for m in found["statement deleted"]} == {"norms = x.norm(dim=-1, keepdim=True)",
                                                              "mask = torch.ones(3, dtype=torch.bool, device=x.device)"}
    assert all(m.line not in (5, 6, 7, 8, 9) for ms in found.values() for m in ms)   # docstring and comment lines


def test_the_command_names_an_unknown_exercise_and_lists_the_ones_there_are():
    name = conventions.assignments()[0].name
    done = subprocess.run([sys.executable, "-m", "autograder", "mutants", "sweep", name, "--exercise", "no_such"],
                          capture_output=True, text=True, cwd=conventions.REPO_ROOT, timeout=120)
    assert done.returncode == 2 and "no exercise no_such" in done.stderr and "(it has " in done.stderr, done.stderr


SHARED_CLASSES = '''import torch


def masked(ids, n_tokens, generator=None):
    """Ids with some masked."""
    if n_tokens < 1:
        raise ValueError("need a token")
    if ids.numel() <= 0:
        return list(ids)
    u = torch.rand(ids.shape, generator=generator)
    return ids.clone()
'''


def test_the_shared_clauses_each_get_an_operator_a_global_draw_an_alias_and_a_one_sided_error():
    found = _by_operator(operator_mutants("masked", SHARED_CLASSES))
    assert [m.after for m in found["generator dropped: a global draw"]] == ["u = torch.rand(ids.shape)"]
    assert {m.after for m in found["copy dropped"]} == {"return ids"}
    assert [m.after for m in found["error condition made one-sided"]] == ["if n_tokens == 0:", "if ids.numel() == 0:"]


def test_every_survivor_judged_the_same_program_is_still_a_mutant_of_the_current_solution():
    """mutants/judged/NN_slug.toml records reasons for operator mutants of today's solutions: an entry that no longer
    matches one (the solution line changed) is stale and must be judged again."""
    from autograder.course import mutant_edits
    from autograder.course.mutant_sweep import judged_same
    from autograder.course.solution_source import load_solution

    for assignment in conventions.assignments():
        judged = judged_same(assignment)
        if not judged:
            continue
        cells = mutant_edits.solution_cells(load_solution(assignment))
        made = {(m.mutant.exercise, m.operator, m.before, m.after) for exercise in {k[0] for k in judged}
                for m in operator_mutants(exercise, cells[exercise])}
        stale = sorted(set(judged) - made)
        assert not stale, f"{assignment.name}: judged entries that match no operator mutant now: {stale}"
        assert all(len(why) > 20 for why in judged.values()), f"{assignment.name}: each judgement says why"
