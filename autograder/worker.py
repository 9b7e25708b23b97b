"""Child process that executes one submission notebook (``python -m autograder.worker``).

The grader starts this in a scratch folder that holds only the submission's own files, under
resource limits, and sends it the notebook to run (the submission with the course's test cells put
back) on standard input. Nothing with hidden tests is ever written to the scratch folder. The
result goes back as one JSON object on the standard output that the worker saved before the kernel
started: the kernel's own standard output and error are sent elsewhere, so student code cannot
write into the result.

Statuses: ``ok``; ``timeout`` (a cell ran past the per-cell limit); ``kernel died`` (the kernel
exited or crashed: ``sys.exit`` in a kernel is harmless, ``os._exit``/segfault/out-of-memory kill is
not); ``error: ...`` (the worker itself failed). Every graded cell that did not run to completion
gets an error output, so it scores 0 and never counts as "no output, full marks".
"""

from __future__ import annotations

import argparse
import json
import os
import sys

MAX_OUTPUT_CHARS = 20_000  # per output text; a student's print loop must not bloat the gradebook
MAX_CELL_OUTPUT_BYTES = 2_000_000  # per cell, while running: past this, further output is dropped


def error_output(ename: str, evalue: str):
    from nbformat.v4 import new_output

    return new_output("error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])


def _truncate(nb) -> None:
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream" and len(output.get("text", "")) > MAX_OUTPUT_CHARS:
                output["text"] = output["text"][:MAX_OUTPUT_CHARS] + "\n... [output truncated by the grader]\n"
            data = output.get("data", {})
            for mime, value in list(data.items()):
                if isinstance(value, str) and len(value) > 50 * MAX_OUTPUT_CHARS:
                    data[mime] = "[output too large, removed by the grader]" if mime.startswith("text") else ""
                    if not mime.startswith("text"):
                        del data[mime]


def _capped_client_class():
    from nbclient import NotebookClient

    class CappedClient(NotebookClient):
        """Drops a cell's output past MAX_CELL_OUTPUT_BYTES, so a print loop cannot exhaust memory."""

        _sizes: dict = {}

        def output(self, outs, msg, display_id, cell_index):
            size = self._sizes.get(cell_index, 0)
            if size > MAX_CELL_OUTPUT_BYTES:
                return None
            size += len(json.dumps(msg.get("content", {})))
            self._sizes[cell_index] = size
            if size > MAX_CELL_OUTPUT_BYTES:
                from nbformat.v4 import new_output

                outs.append(new_output("stream", name="stdout", text="\n... [further output dropped by the grader]\n"))
                return None
            return super().output(outs, msg, display_id, cell_index)

    return CappedClient


def _out_of_memory(nb) -> bool:
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error" and (
                    output.get("ename") == "MemoryError" or "can't allocate memory" in output.get("evalue", "")
                    or "not enough memory" in output.get("evalue", "")):
                return True
    return False


def execute(nb, scratch: str, cell_timeout: int) -> tuple[str, str]:
    from nbclient.exceptions import DeadKernelError

    completed: set[int] = set()
    timed_out: list[int] = []

    def on_cell_executed(cell, cell_index, execute_reply):
        completed.add(cell_index)
        content = execute_reply.get("content", {})
        if content.get("status") != "error":
            return
        if content.get("ename") == "CellTimeoutError":
            timed_out.append(cell_index)
        # An error the kernel reported only in its reply (a timeout) must show in the outputs too,
        # or the cell would look like it passed.
        if not any(o.get("output_type") == "error" and o.get("ename") == content.get("ename") for o in cell.outputs):
            cell.outputs.append(error_output(content.get("ename", "Error"), content.get("evalue", "")))

    client = _capped_client_class()(
        nb,
        timeout=cell_timeout,
        startup_timeout=120,
        interrupt_on_timeout=True,
        allow_errors=True,
        kernel_name="python3",
        record_timing=False,
        extra_arguments=["--HistoryManager.hist_file=:memory:"],
        error_on_timeout={"ename": "CellTimeoutError", "evalue": f"cell ran longer than {cell_timeout} s",
                          "traceback": [f"CellTimeoutError: the cell ran longer than {cell_timeout} s"]},
        resources={"metadata": {"path": scratch}},
        on_cell_executed=on_cell_executed,
    )
    status, detail = "ok", ""
    try:
        client.execute()
    except DeadKernelError as error:
        status, detail = "kernel died", str(error).splitlines()[0][:200] if str(error) else "kernel died"
    except Exception as error:  # noqa: BLE001 - any failure of the machinery is reported, not raised
        status, detail = "kernel died", f"{type(error).__name__}: {str(error)[:200]}"

    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        if index in timed_out and status == "ok":
            status, detail = "timeout", f"cell {index} ran past {cell_timeout} s"
        graded = cell.get("metadata", {}).get("nbgrader", {}).get("grade")
        if graded and index not in completed:
            cell.setdefault("outputs", []).append(error_output(
                "NotExecuted", "the kernel stopped before this cell finished, so its tests did not run"))
    if status == "ok" and _out_of_memory(nb):
        status, detail = "memory limit", "a cell ran out of memory (the limit is set by --memory-mb)"
    _truncate(nb)
    return status, detail


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scratch", required=True)
    parser.add_argument("--cell-timeout", type=int, required=True)
    args = parser.parse_args(argv)

    payload = sys.stdin.read()
    # Keep the real stdout for the result; everything else (kernel included) writes to stderr.
    result_stream = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    import nbformat

    try:
        nb = nbformat.reads(payload, as_version=4)
        status, detail = execute(nb, args.scratch, args.cell_timeout)
        result = {"status": status, "detail": detail, "notebook": nb}
    except Exception as error:  # noqa: BLE001
        result = {"status": "error", "detail": f"{type(error).__name__}: {error}"[:300], "notebook": None}
    result_stream.write(json.dumps(result))
    result_stream.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
