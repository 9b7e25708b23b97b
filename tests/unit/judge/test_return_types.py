"""autograder.judge.return_types: the declared return types of contracts, parsed and checked in the judge."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from autograder.judge.return_types import BadDeclaration, mismatch, parse


@pytest.mark.parametrize("declared, value", [
    ("float", 0.5), ("int", 3), ("bool", True), ("str", ""), ("None", None), ("tensor", torch.zeros(())),
    ("tensor", torch.nn.Parameter(torch.ones(2))), ("list[int]", []), ("list[float]", [1.0, 2.0]),
    ("tuple[tensor, float]", (torch.ones(1), 2.0)), ("dict[str, tensor]", {"k": torch.ones(1)}),
    ("int | None", None), ("int | None", 4), ("tuple[list[tuple[int, int]], dict[int, bytes]]", ([(1, 2)], {256: b"ab"})),
])
def test_values_of_the_declared_type_pass(declared, value):
    assert mismatch(value, parse(declared)) is None


@pytest.mark.parametrize("declared, value, said", [
    ("float", np.float64(0.5), "a numpy.float64, where a Python float is declared"),
    ("float", torch.tensor(0.5), "a tensor (0-d), where a Python float is declared"),
    ("float", 1, "an int, where a Python float is declared"),
    ("int", True, "a bool, where a Python int is declared"),
    ("int", np.int64(3), "a numpy.int64, where a Python int is declared"),
    ("tensor", [1.0], "a list, where a tensor is declared"),
    ("list[float]", [1.0, torch.tensor(2.0)], "item [1]: a tensor (0-d), where a Python float is declared"),
    ("list[int]", (1, 2), "a tuple, where a list is declared"),
    ("tuple[tensor, tensor]", [torch.ones(1), torch.ones(1)], "a list, where a tuple of 2 is declared"),
    ("tuple[tensor, tensor]", (torch.ones(1),), "a tuple, where a tuple of 2 is declared"),
    ("tuple[tensor, float]", (torch.ones(1), np.float32(1)), "item [1]: a numpy.float32, where a Python float is declared"),
    ("dict[str, tensor]", {"k": 1.0}, "item [value 0]: a float, where a tensor is declared"),
    ("int | None", 1.0, "a float, where a Python int is declared"),
])
def test_values_of_another_type_are_named(declared, value, said):
    assert mismatch(value, parse(declared)) == said


@pytest.mark.parametrize("declared", ["Float", "list", "list[int, int]", "dict[str]", "tuple[int", "int |", "torch.Tensor"])
def test_a_declaration_outside_the_grammar_is_refused(declared):
    with pytest.raises(BadDeclaration):
        parse(declared)
