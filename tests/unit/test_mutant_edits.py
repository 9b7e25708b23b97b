"""Mutants as edits of the current solution (``autograder.course.mutant_edits``) and the import of old-format
files (``autograder.course.mutant_import``): the format read back, edits that must apply exactly once, and the
converter giving back the old cell (fast, no kernel)."""

from __future__ import annotations

import pytest

from autograder.course import conventions, mutant_edits, mutant_import
from autograder.course.mutant_edits import Edit, MutantEdits, StaleMutant
from autograder.course.solution_source import load_solution

SOLUTION = '''import torch


def softmax(x, dim=-1):
    """Softmax along `dim`."""
    z = x - x.max(dim=dim, keepdim=True).values   # shift: exp never overflows
    e = z.exp()
    return e / e.sum(dim=dim, keepdim=True)'''


def entry(*edits, slug="m"):
    return MutantEdits("softmax", slug, "A mistake.", tuple(Edit(tuple(r), tuple(w)) for r, w in edits), None)


def test_an_edit_replaces_its_lines_and_keeps_the_rest():
    mutant = entry((["    e = z.exp()"], ["    e = x.exp()"]))
    assert mutant_edits.apply_edits(SOLUTION, mutant) == SOLUTION.replace("    e = z.exp()", "    e = x.exp()")
    deletion = entry((['    """Softmax along `dim`."""'], []))
    assert '"""' not in mutant_edits.apply_edits(SOLUTION, deletion)


@pytest.mark.parametrize("replace, why", [(["    e = x.exp()"], "is not in"), ([""], "occurs 2 times in"),
                                          (["    e = z.exp( )"], "is not in")])
def test_an_edit_that_does_not_find_its_lines_exactly_once_names_the_mutant(replace, why):
    with pytest.raises(StaleMutant, match=f"mutant softmax__stale .*edit 1 no longer applies: the text to replace {why}"):
        mutant_edits.apply_edits(SOLUTION, entry((replace, ["pass"]), slug="stale"))


def test_the_edit_format_reads_hunks_with_kept_replaced_and_new_lines():
    edits = mutant_edits.parse_edit(" def softmax(x, dim=-1):\n-    z = x\n+    z = -x\n@@\n-    e = z.exp()\n", "m")
    assert edits == (Edit(("def softmax(x, dim=-1):", "    z = x"), ("def softmax(x, dim=-1):", "    z = -x")),
                     Edit(("    e = z.exp()",), ()))
    for bad in ("+    only added\n", "?    z = x\n", " def softmax(x, dim=-1):\n"):
        with pytest.raises(StaleMutant, match="mutant m"):
            mutant_edits.parse_edit(bad, "m")


def test_a_file_is_read_in_order_and_a_malformed_entry_is_named(tmp_path):
    path = tmp_path / "01_x.toml"
    path.write_text("softmax.b = {mistake = \"B.\", edit = '''\n-    e = z.exp()\n+    e = x.exp()\n'''}\n"
                    "softmax.a = {mistake = \"A.\", edit = '''\n-    e = z.exp()\n'''}\n", encoding="utf-8")
    assert [(e.name, e.mistake) for e in mutant_edits.read_edits(path)] == [("softmax__b", "B."), ("softmax__a", "A.")]
    path.write_text("softmax.c = {mistake = \"C.\"}\n", encoding="utf-8")
    with pytest.raises(StaleMutant, match="mutant softmax__c"):
        mutant_edits.read_edits(path)
    assert mutant_edits.read_edits(tmp_path / "none.toml") == []


def _old(tmp_path, code: str):
    path = tmp_path / "softmax__no_shift.py"
    path.write_text('"""Forgets to subtract the maximum."""\n' + code + "\n", encoding="utf-8")
    return mutant_import.read_old(path)


def test_the_converter_gives_the_old_cell_back_and_writes_only_the_code_it_changes(tmp_path):
    stale_copy = SOLUTION.replace('    """Softmax along `dim`."""\n', "").replace("   # shift: exp never overflows", "")
    old = _old(tmp_path, stale_copy.replace("x - x.max(dim=dim, keepdim=True).values", "x"))
    exact = mutant_import.convert(old, SOLUTION, exact=True)
    assert mutant_edits.apply_edits(SOLUTION, exact) == "\n".join(old.code)
    code_only = mutant_import.convert(old, SOLUTION)
    assert code_only.edits == (Edit(("    z = x - x.max(dim=dim, keepdim=True).values   # shift: exp never overflows",),
                                    ("    z = x",)),)
    assert mutant_import.same_code(mutant_edits.apply_edits(SOLUTION, code_only), "\n".join(old.code))
    assert code_only.mistake == "Forgets to subtract the maximum."


def test_an_insertion_takes_the_lines_around_it_until_they_are_unique():
    old = SOLUTION.split("\n")
    new = old[:6] + ["    z = z * 2"] + old[6:]
    edits = mutant_import.hunk_edits(old, new)
    assert len(edits) == 1 and edits[0].replace and len(mutant_edits.occurrences(old, edits[0].replace)) == 1
    assert mutant_edits.apply_edits(SOLUTION, entry(*[(e.replace, e.with_) for e in edits])) == "\n".join(new)


def test_the_toml_written_reads_back_to_the_same_edits(tmp_path):
    tricky = entry((["    e = z.exp()"], ["    e = '''\\u0007'''", "    s = \"\\\\n\" + 'q'", "\tx"]),
                   (["    return e / e.sum(dim=dim, keepdim=True)"], []))
    path = tmp_path / "01_x.toml"
    path.write_text(mutant_import.entry_toml(tricky), encoding="utf-8")
    (read,) = mutant_edits.read_edits(path)
    assert read.edits == tricky.edits and read.mistake == tricky.mistake and read.name == "softmax__m"


def test_import_appends_to_the_notebooks_file_checks_it_and_deletes_the_files(tmp_path, monkeypatch):
    first = conventions.assignments()[0]
    nb = load_solution(first)
    exercise, solution = next(iter(mutant_edits.solution_cells(nb).items()))
    monkeypatch.setattr(conventions, "MUTANTS_DIR", tmp_path)
    folder = tmp_path / first.name
    folder.mkdir()
    lines = solution.split("\n")
    wrong = "\n".join(lines[:-1] + [lines[-1] + "  # a comment is not code", "x_added_by_the_mutant = 1"])
    (folder / f"{exercise}__adds_a_name.py").write_text(f'"""Adds a name."""\n{wrong}\n', encoding="utf-8")
    (out,) = mutant_import.import_files([folder / f"{exercise}__adds_a_name.py"])
    assert "1 mutants added" in out and not folder.exists()
    (mutant,) = mutant_edits.assignment_mutants(first, nb)[exercise]
    assert mutant.name == f"{exercise}__adds_a_name" and mutant.code.endswith("\nx_added_by_the_mutant = 1")
    (folder).mkdir()
    (folder / f"{exercise}__adds_a_name.py").write_text(f'"""Again."""\n{wrong}\n', encoding="utf-8")
    with pytest.raises(ValueError, match="already has mutants named"):
        mutant_import.import_files([folder / f"{exercise}__adds_a_name.py"])
    mutant_import.import_files([folder / f"{exercise}__adds_a_name.py"], replace=True)
    (mutant,) = mutant_edits.assignment_mutants(first, nb)[exercise]
    assert mutant.mistake == "Again."

