"""``autograder.judge.changes.changed_inputs``: a call that changed a by-value argument fails with a
message naming the argument, the part, what changed and how to avoid it; the runner's report is only a
pointer, so a forged or mistaken entry that points at an unchanged part (or nowhere) fails nothing."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from autograder.judge import wire
from autograder.judge.changes import MAX_CHANGES_READ, changed_inputs


def entry(arg, after, path=(), name=None):
    return {"arg": arg, "name": name, "path": list(path), "after": None if after is None else wire.encode(after)}


HINT = "\nHint: the caller's inputs must be left as they were (the exercise's docstring says so)."


def test_a_tensor_changed_in_place_is_named_counted_and_advised():
    x = torch.arange(12.0).reshape(3, 4)
    after = x.clone()
    after[0, :3] = -1
    message = changed_inputs("your softmax", (x,), {}, [entry(0, after, name="x")])
    assert message == ("softmax modified its argument `x` in place (3 of 12 values changed); return a new tensor "
                       "instead (work on a copy such as x.clone(), or write x = x * 2 rather than x *= 2)." + HINT)


@pytest.mark.parametrize("after, words", [
    (torch.zeros(2, 3), "its shape changed from (3, 4) to (2, 3)"),
    (torch.zeros(3, 4, dtype=torch.float64), "its dtype changed from torch.float32 to torch.float64"),
    (torch.zeros(3, 4).requires_grad_(), "its requires_grad changed from False to True"),
    ([1, 2], "it was replaced by a list"),
    (None, "it now holds something the grader cannot read"),
])
def test_how_a_tensor_changed_is_said_in_words(after, words):
    message = changed_inputs("f", (torch.zeros(3, 4),), {}, [entry(0, after, name="t")])
    assert message.startswith(f"f modified its argument `t` in place ({words}); return a new tensor")


def test_nans_that_stay_nans_are_not_a_change():
    x = torch.tensor([1.0, float("nan"), 3.0])
    assert changed_inputs("f", (x,), {}, [entry(0, x.clone(), name="x")]) is None
    a = np.array([np.nan, 2.0])
    assert changed_inputs("f", (a,), {}, [entry(0, a.copy(), name="a")]) is None
    moved = np.array([np.nan, 5.0])
    assert "(1 of 2 values changed); return a new array instead (work on a copy, a.copy())" in \
        changed_inputs("f", (a,), {}, [entry(0, moved, name="a")])


def test_a_forged_report_about_an_unchanged_argument_fails_nothing():
    x = torch.ones(4)
    assert changed_inputs("f", (x,), {}, [entry(0, torch.ones(4), name="x")]) is None
    assert changed_inputs("f", (x,), {}, "everything changed") is None
    assert changed_inputs("f", (x,), {}, [entry(3, torch.zeros(4))]) is None          # no argument 3
    assert changed_inputs("f", (x,), {}, [entry("y", torch.zeros(4))]) is None        # no keyword y
    assert changed_inputs("f", (x,), {}, [entry(0, torch.zeros(4), path=["0"])]) is None   # steps are integers
    assert changed_inputs("f", (x,), {}, [{"arg": 0, "path": [], "after": {"$": "tensor"}}]) is None  # undecodable
    assert changed_inputs("f", (x,), {}, [{"arg": 0, "path": "0", "after": None}, 7]) is None


def test_a_part_inside_nested_lists_and_dicts_is_named_by_its_subscripts():
    batch = {"ids": [[1, 2], [3, 4]], "mask": torch.ones(2)}
    message = changed_inputs("your collate", (), {"batch": batch},
                             [entry("batch", [3, 9], path=[0, 1], name="batch")])
    assert message.startswith("collate modified its argument `batch['ids'][1]` in place (1 of 2 items changed); "
                              "build and return a new list instead of changing the caller's.")


def test_a_dict_with_keys_added_or_removed_says_which():
    counts = {"a": 1, "b": 2}
    grown = changed_inputs("f", (counts,), {}, [entry(0, {"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "g": 6}, name="counts")])
    assert "(4 keys added ('c', 'd', 'e', ...)); build and return a new dict instead" in grown
    shrunk = changed_inputs("f", (counts,), {}, [entry(0, {"a": 1, "z": 0}, name="counts")])
    assert "(1 key added ('z'), 1 removed ('b'))" in shrunk
    edited = changed_inputs("f", (counts,), {}, [entry(0, {"a": 1, "b": 7}, name="counts")])
    assert "(1 of 2 entries changed)" in edited
    assert "it was replaced by a list" in changed_inputs("f", (counts,), {}, [entry(0, [1], name="counts")])


def test_sequences_report_length_and_items_and_scalars_their_values():
    xs = [1, 2, 3]
    assert "(its length changed from 3 to 2)" in changed_inputs("f", (xs,), {}, [entry(0, [1, 2], name="xs")])
    assert "(it was replaced by a str)" in changed_inputs("f", (xs,), {}, [entry(0, "123", name="xs")])
    assert "`xs[2]` in place (3 became 'three')" in changed_inputs("f", (xs,), {}, [entry(0, "three", path=[2], name="xs")])
    long = "w" * 60
    assert f"({long[:37]!r}"[:38] in changed_inputs("f", ([long],), {}, [entry(0, "short", path=[0], name="xs")])


def test_a_name_that_is_not_plain_is_replaced_by_the_position_or_keyword():
    x = [0]
    assert "argument `#2`" in changed_inputs("f", (1, x), {}, [entry(1, [5], name="x; rm -rf /")])
    assert "argument `opts`" in changed_inputs("f", (), {"opts": x}, [entry("opts", [5], name="é")])
    assert "argument `#1`" in changed_inputs("f", (x,), {}, [entry(0, [5], name=None)])


def test_more_changed_parts_are_counted_and_only_the_first_twenty_read():
    xs = [torch.zeros(1) for _ in range(30)]
    report = [entry(0, torch.ones(1), path=[i], name="xs") for i in range(30)]
    message = changed_inputs("f", (xs,), {}, report)
    assert message.startswith("f modified its argument `xs[0]` in place (1 of 1 value changed)")
    assert f"({MAX_CHANGES_READ - 1} more parts of its arguments changed too.)" in message
    two = changed_inputs("f", (xs,), {}, report[:2])
    assert "(1 more part of its arguments changed too.)" in two


def test_generators_and_references_may_change():
    g = torch.Generator().manual_seed(0)
    assert changed_inputs("f", (g,), {}, [entry(0, torch.Generator().manual_seed(1), name="g")]) is None


def test_in_a_hidden_test_the_message_names_no_value_the_argument_held():
    """Issue 47: keys and values of a hidden test's arguments are its inputs: named by position, counted."""
    from utils import checks

    counts = {"quiet": 1, "words": 2}
    with checks.values_withheld():
        key = changed_inputs("f", (counts,), {}, [entry(0, 5, path=[1], name="counts")])
        added = changed_inputs("f", (counts,), {}, [entry(0, {"quiet": 1, "words": 2, "secret": 3}, name="counts")])
        number = changed_inputs("f", (7.25,), {}, [entry(0, 8.5, name="alpha")])
    assert key.startswith("f modified its argument `counts[key 2 of 2]` in place (its value changed)")
    assert added.startswith("f modified its argument `counts` in place (1 key added (not shown in a hidden test))")
    assert number.startswith("f modified its argument `alpha` in place (its value changed)")
    shown = changed_inputs("f", (counts,), {}, [entry(0, 5, path=[1], name="counts")])
    assert shown.startswith("f modified its argument `counts['words']` in place (2 became 5)")
