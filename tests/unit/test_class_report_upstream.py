"""The class report names a mistake only where the student made it (issue 51): a block whose tests fail
because the student's LayerNorm is wrong is not labelled with the block's own mutants, whatever its messages."""

from __future__ import annotations

from autograder.batch.class_report import ExerciseCells, Submission, assignment_section, label_failures
from autograder.batch.mutant_messages import MutantFailure
from autograder.batch.report import UNTOUCHED, GradeRow
from autograder.course import conventions
from autograder.course.solution_source import load_solution

BLOCK_MESSAGE = "PreLNBlock output differs from the reference at [0, 1, 2]: 1.5 vs 0.25"
NORM_MESSAGE = "LayerNorm: unbiased variance used: std differs by 0.866"


def _row(student: str, score: float, status: str = "ok", detail: str = "") -> GradeRow:
    return GradeRow(student, "07_block", score, 10.0, status, detail, "")


def _submission(student: str, norm_ok: bool, block_ok: bool, **row) -> Submission:
    points = {"test_LayerNorm": (2.0 if norm_ok else 0.0, 2.0), "test_LayerNorm_hidden": (2.0 if norm_ok else 0.0, 2.0),
              "test_PreLNBlock": (2.0 if block_ok else 0.0, 2.0), "test_PreLNBlock_hidden": (4.0 if block_ok else 0.0, 4.0)}
    messages = {} if norm_ok else {"test_LayerNorm": NORM_MESSAGE, "test_LayerNorm_hidden": NORM_MESSAGE}
    if not block_ok:
        messages.update({"test_PreLNBlock": BLOCK_MESSAGE, "test_PreLNBlock_hidden": BLOCK_MESSAGE})
    score = sum(p for p, _ in points.values())
    return Submission(_row(student, score, **row), points, messages)


def _cells() -> list[ExerciseCells]:
    cells = [ExerciseCells("LayerNorm", ["test_LayerNorm", "test_LayerNorm_hidden"]),
             ExerciseCells("PreLNBlock", ["test_PreLNBlock", "test_PreLNBlock_hidden"], ("LayerNorm",))]
    block_mutant = MutantFailure("PreLNBlock", "PreLNBlock__ffn_on_raw_stream", "Feeds the FFN the raw stream.",
                                 [("test_PreLNBlock", BLOCK_MESSAGE), ("test_PreLNBlock_hidden", BLOCK_MESSAGE)])
    label_failures(cells, [block_mutant])
    return cells


def test_a_block_failing_through_its_layernorm_is_not_named_by_the_blocks_mistakes():
    section = assignment_section("07_block", _cells(), [
        _submission("norm_only", norm_ok=False, block_ok=False),    # the one mistake: LayerNorm
        _submission("block_only", norm_ok=True, block_ok=False),    # the one mistake: the block's own
        _submission("right", norm_ok=True, block_ok=True)])
    block = next(e for e in section["exercises"] if e["name"] == "PreLNBlock")
    groups = {tuple(g["students"]): g for g in block["groups"]}
    assert groups[("block_only",)]["mistake"] == "Feeds the FFN the raw stream"
    assert groups[("block_only",)]["mutants"] == ["PreLNBlock__ffn_on_raw_stream"]
    assert groups[("norm_only",)]["mutants"] == [] and groups[("norm_only",)]["upstream"] == ["LayerNorm"]
    assert groups[("norm_only",)]["mistake"] == "an earlier exercise it uses lost points: LayerNorm"
    named = " ".join(str(g["mistake"]) for e in section["exercises"] for g in e["groups"] if "norm_only" in g["students"])
    assert "Feeds the FFN" not in named


def test_untouched_and_unreadable_notebooks_are_apart_from_the_shares():
    section = assignment_section("07_block", _cells(), [
        _submission("right", norm_ok=True, block_ok=True),
        _submission("blank", norm_ok=False, block_ok=False, detail=UNTOUCHED + "; nothing else"),
        Submission(_row("broken", 0.0, status="invalid notebook"))])
    assert section["students"] == 1
    assert section["not_taking_part"] == [{"student": "blank", "why": "untouched"},
                                          {"student": "broken", "why": "invalid notebook"}]
    assert all(e["lost"] == 0 and e["groups"] == [] for e in section["exercises"])


def test_dependencies_are_read_from_the_solutions():
    deps = {a.name: conventions.exercise_dependencies(load_solution(a)) for a in conventions.assignments()
            if a.name in ("01_next_token", "07_block", "12_encoder_decoder")}
    assert deps["07_block"]["PreLNBlock"] == ("LayerNorm", "FeedForward")
    assert deps["07_block"]["LayerNorm"] == ()
    assert deps["01_next_token"]["cross_entropy"] == ("log_softmax",)
    assert deps["12_encoder_decoder"]["Seq2Seq"] == ("CrossAttention", "EncoderBlock", "DecoderBlock")
