"""The judge: decides every graded test of a notebook in a process that never runs student code.

``python -m autograder.judge`` (one process per notebook, started by the grader) reads a job on its
standard input, starts the sandboxed runner (``autograder.sandbox.runner``) in a scratch folder holding the
submission's files, and walks the notebook:

* the set-up cell, the answer cells and the student's own cells run **in the runner**, in order (the
  course's demo and figure cells are not re-run: they teach, they don't grade);
* each graded test cell runs **here**, with the exercise names bound to handles (``Handle``): calling
  one sends the arguments to the runner and brings the result back by value (``autograder.judge.wire``);
  expected values and comparisons are computed here, with the judge's own ``torch`` and ``checks``.

Nothing the runner says is believed beyond "the student's code returned this": every reply is parsed
strictly and bounded in size; a malformed one is that submission's error. A call that overruns its
limit is interrupted (the runner's own alarm) or the runner is killed and started again, replaying the
set-up and answer cells, so one slow or crashing answer costs only its own tests.

The result goes back to the grader as one JSON object, authenticated with a key the grader sent, so
even a runner that could reach the judge's output could not forge it (``autograder.judge.protocol``).

The modules, one concern each: ``transport`` (requests and replies over the pipes), ``handles`` (the
exercise names in a test cell), ``changes`` (arguments changed in place), ``session`` (the runner's
life, student cells, test cells), ``outputs`` (what is kept of them), ``notebook`` (the walk over a
notebook) and ``__main__`` (the two entry points).
"""

