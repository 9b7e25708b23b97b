"""Claims: a sentence about an experiment's outcome, checked by the code that measured it.

Prose that states an outcome ("the encoder-decoder copies almost every source, the LSTM few") outlives a
change to the experiment unless something ties it to the numbers. A notebook states each conclusion as a
claim printed beside its figure::

    from utils import claims
    claims.claim(f"The encoder-decoder copies 12-digit sources: {em:.1%} exact match, the LSTM {lstm:.1%}",
                 holds=em > 0.9 > lstm)

and the surrounding prose reasons about it without restating the numbers. ``claim`` prints the sentence
with a tick when ``holds`` is true, and a cross with a note when it is not. In a student's kernel a claim
that does not hold never stops the notebook (their own parts may differ from the course's, or their machine
may run another configuration): the note says so. Where the course checks itself (``python -m autograder
check``, the test suite: ``STRICT`` set in the environment to ``1``) a claim that does not hold raises
``ClaimNotHeld`` naming it, so the run fails at that cell.
"""

from __future__ import annotations

import os

STRICT = "COURSE_STRICT_CLAIMS"
GPU_CONFIG_ON_CPU = "COURSE_GPU_CONFIG_ON_CPU"   # utils.precision.GPU_CONFIG_ON_CPU (not imported: no torch here)

# Every claim this kernel has checked, in order: (sentence, held). A notebook may print them at its end.
RECORD: list[tuple[str, bool]] = []


class ClaimNotHeld(AssertionError):
    """A claim the prose makes did not hold on this run (raised only where ``STRICT`` is set)."""


def strict() -> bool:
    """Whether a claim that does not hold raises (the course checking itself) rather than printing a note.
    Not under ``COURSE_GPU_CONFIG_ON_CPU=1``: the GPU configuration then runs a few smoke-sized steps, and its
    claims are about the full run, checked where it runs (on a GPU)."""
    return os.environ.get(STRICT, "") == "1" and os.environ.get(GPU_CONFIG_ON_CPU, "") != "1"


def claim(sentence: str, holds: bool, *, why_it_may_not: str = "") -> bool:
    """Print ``sentence`` as a checked claim and return whether it holds (a Python ``bool``).

    ``holds`` is what the code measured, reduced to one truth value (a NumPy or PyTorch boolean is read with
    ``bool``). ``why_it_may_not``: what would make it fail on a student's run (their own parts, another
    seed, a GPU configuration), printed only when it does not hold. Raises ``ClaimNotHeld`` when it does not
    hold and ``STRICT`` is set; ``TypeError`` when ``sentence`` is not a non-empty string.
    """
    if not isinstance(sentence, str) or not sentence.strip():
        raise TypeError("claim: the sentence must be a non-empty string")
    held = bool(holds)
    RECORD.append((sentence, held))
    if held:
        print(f"✓ {sentence}")
        return True
    if strict():
        raise ClaimNotHeld(f"the notebook claims: {sentence!r}, and on this run it does not hold")
    note = f" ({why_it_may_not})" if why_it_may_not else ""
    print(f"✗ Not on this run: {sentence}{note}. The prose around this cell assumes it; "
          f"read it with this run's numbers in mind.")
    return False
