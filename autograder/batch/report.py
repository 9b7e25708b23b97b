"""What a grading run reports: one ``GradeRow`` per submission, the CSV, the table the command
prints and the warnings under it (how far these grades can be trusted)."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from ..sandbox.limits import Limits

# The start of the detail of a notebook graded as released, nothing answered: the class report keeps it apart
# from the shares and the mistakes (autograder/batch/class_report.py), the student reads why every test failed.
UNTOUCHED = "untouched: no answer was filled in (the notebook as released)"
from ..course.text import clean_text

CSV_COLUMNS = ["student_id", "assignment", "score", "max_score", "status", "detail", "flags"]


@dataclass
class GradeRow:
    student_id: str
    assignment: str
    score: float | None
    max_score: float | None
    status: str
    detail: str = ""
    flags: str = ""

    def as_dict(self) -> dict:
        fmt = lambda v: "" if v is None else f"{v:g}"  # noqa: E731
        return {"student_id": clean_text(self.student_id), "assignment": clean_text(self.assignment),
                "score": fmt(self.score), "max_score": fmt(self.max_score), "status": clean_text(self.status),
                "detail": clean_text(self.detail), "flags": clean_text(self.flags)}

    @classmethod
    def from_dict(cls, data: dict) -> "GradeRow":
        number = lambda v: None if v in ("", None) else float(v)  # noqa: E731
        return cls(data["student_id"], data["assignment"], number(data["score"]), number(data["max_score"]),
                   data["status"], data.get("detail", ""), data.get("flags", ""))



def spreadsheet_safe(value: str) -> str:
    """A cell value no spreadsheet will run as a formula: leading = + - @ (and tab/CR) get a quote;
    control characters and bytes that are not text never reach the file (``clean_text``)."""
    text = clean_text(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t") else text


def write_csv(rows: list[GradeRow], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8", errors="backslashreplace") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        for row in rows:
            values = row.as_dict()
            writer.writerow({k: v if k in ("score", "max_score") else spreadsheet_safe(v) for k, v in values.items()})


def self_grading_bundles() -> list[Path]:
    """The public edition's self-grading bundles in the installed grader (they hold the hidden tests and the
    course's code of the exercises later ones use, and the sandbox can read the grader's own package)."""
    return sorted((Path(__file__).resolve().parents[1] / "selfgrade").glob("*.bin"))


BUNDLES_REFUSAL = ("this is the public edition of the course: autograder/selfgrade/*.bin ({count} file(s)) hold the "
                   "hidden tests and some of the course's answers, and a student's code can read them from inside "
                   "the sandbox. For a graded class, build the private edition first: python -m autograder build "
                   "--no-self-grading (it removes them), or pass --allow-self-grading-bundles to grade anyway "
                   "(self-study, trusted code).")
NO_SANDBOX_WARNING = ("WARNING: graded with --sandbox none: each student's code ran with the grader's own rights. "
                      "One student can rewrite the grader's files and zero the next student, and read the "
                      "solutions. Trust these grades only for code you trust, or inside a container.")


def summary_warnings(limits: Limits, bundles: list[Path]) -> list[str]:
    """Lines the ``grade`` command prints under its table: how far these grades can be trusted."""
    lines = []
    if limits.sandbox == "none":
        lines.append(NO_SANDBOX_WARNING)
    if bundles:
        lines.append(f"WARNING: graded with the self-grading bundles present ({len(bundles)} file(s) in "
                     f"{bundles[0].parent}): students could read the hidden tests and some answers. For a graded "
                     "class: "
                     "python -m autograder build --no-self-grading")
    return lines


def format_table(rows: list[GradeRow]) -> str:
    header = ["student_id", "assignment", "score", "status"]
    body = [[clean_text(r.student_id), clean_text(r.assignment),
             "-" if r.score is None else f"{r.score:g} / {r.max_score:g}",
             clean_text(r.status + (f" ({r.detail})" if r.detail else "") + (f" [flagged: {r.flags}]" if r.flags else ""))]
            for r in rows]
    widths = [max(len(str(x)) for x in column) for column in zip(header, *body)]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in body])
