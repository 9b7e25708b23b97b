"""nbgrader's side of grading, in the grader's own process: the preprocessors that put the judge's
outputs into nbgrader's autograde (``ReplayExecution``), show hidden tests by name and verdict only and
student text as text in feedback, the course configuration that wires them in, and the stages that
use them: ``record`` (nbgrader scores the judged cells and writes the gradebook), ``write_feedback``,
and the zero and short page of a submission that could not be run.

Only this process opens the gradebook. The judge's result reaches ``ReplayExecution`` through a file,
``course/judged/<student>/<assignment>/<notebook>.json`` (``judged_path``), written by ``record`` just
before nbgrader runs and removed after.
"""

from __future__ import annotations

import html
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import nbformat
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Unicode

from ..course import conventions
from ..course.course_directory import course_config
from .feedback_bounds import MAX_FEEDBACK_PAGE_BYTES, shortened_count
from .feedback_page import readable_page
from ..judge.outputs import error_output
from ..judge.protocol import REFERENCE_NOTE_PATTERN, JudgeResult, Status
from .report import GradeRow
from ..course.text import clean_text

if TYPE_CHECKING:
    from .preparation import Job

CSP = ("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; "
       "style-src 'unsafe-inline'; font-src data:\">")


def escape_student_markdown(nb, release_sources: set) -> int:
    """Show the student's own markdown and raw cells as escaped text (in place), as the feedback page does,
    so that formgrader's view of the autograded notebook runs no ``<script>``, ``onerror`` or
    ``javascript:`` link. Returns how many cells were escaped."""
    return sum(_escape_student_cell(cell, release_sources) for cell in nb.cells)


def _escape_student_cell(cell, release_sources: set) -> bool:
    """Turn one markdown or raw cell the student wrote into escaped text (in place); whether it did."""
    if cell.cell_type not in ("markdown", "raw") or cell.source in release_sources:
        return False
    cell.cell_type = "markdown"
    cell.source = "<pre>" + html.escape(cell.source) + "</pre>"
    cell.pop("attachments", None)
    return True



JUDGED_DIR = "judged"   # under the course folder: the judge's result for each notebook, read by ReplayExecution


def judged_path(root: Path, student_id: str, assignment_name: str, notebook_name: str) -> Path:
    return Path(root) / JUDGED_DIR / student_id / assignment_name / f"{notebook_name}.json"


class ReplayExecution(NbGraderPreprocessor):
    """Stands in for nbgrader's ``Execute``: the outputs the judge produced, cell by cell, read from the
    result file ``record`` wrote (``judged_path``) for this student, assignment and notebook.

    A graded cell the judge did not reach gets an error (it scores 0, never "no output, full marks").
    """

    course_root = Unicode("", help="the nbgrader course folder (its judged/ folder holds the results)").tag(config=True)

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        path = judged_path(self.course_root, info["student"], info["assignment"], info["notebook"])
        result = JudgeResult.from_json(path.read_text(encoding="utf-8"))
        by_index = {cell.index: cell.outputs for cell in result.cells}
        count = 0
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            outputs = by_index.get(index)
            if outputs is None:
                cell.outputs = []
                cell.execution_count = None
                if conventions.is_graded_cell(cell):
                    cell.outputs = [nbformat.from_dict(error_output(
                        "NotExecuted", f"{result.status}: {result.detail or 'the tests did not run'}"))]
                continue
            count += 1
            cell.execution_count = count
            cell.outputs = [nbformat.from_dict(o) for o in outputs if isinstance(o, dict)]
        return nb, resources


class RedactHiddenTests(NbGraderPreprocessor):
    """Feedback shows a hidden-test cell as its name, points, verdict and the judge's message only."""

    def preprocess_cell(self, cell, resources, index):
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("grade") and conventions.BEGIN_HIDDEN in cell.source:
            failed = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
            verdict = f"failed ({failed[0].get('ename', 'error')})" if failed else "passed"
            cell.source = f"# Hidden tests '{meta.get('grade_id')}' ({meta.get('points', 0):g} points): {verdict}"
            from nbformat.v4 import new_output

            text = f"Hidden tests {verdict}."
            if failed:
                text += "\n" + str(failed[0].get("evalue", ""))[:2000]
            text += "".join("\n" + o["text"].rstrip("\n") for o in cell.get("outputs", [])[:1]
                            if not failed and _is_reference_note(o))
            cell.outputs = [new_output("stream", name="stdout", text=text + "\n")]
        return cell, resources


def _is_reference_note(output) -> bool:
    """The judge's note on a hidden test passed with the course's code for an earlier part (``judge.second_pass``)."""
    return (output.get("output_type") == "stream" and isinstance(output.get("text"), str)
            and REFERENCE_NOTE_PATTERN.fullmatch(output["text"]) is not None)


class EscapeStudentText(NbGraderPreprocessor):
    """Markdown the student wrote is shown as text, never as HTML (no scripts in feedback pages): every
    cell whose text is not one of the release notebook's (under the course folder's release/)."""

    course_root = Unicode("", help="the nbgrader course folder (its release/ folder holds the release notebooks)").tag(config=True)

    def preprocess(self, nb, resources):
        info = resources.get("nbgrader", {})
        release = Path(self.course_root) / "release" / str(info.get("assignment")) / f"{info.get('notebook')}.ipynb"
        self._release_text = {c.source for c in conventions.read_notebook(release).cells} if release.is_file() else set()
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, index):
        if not _escaped(cell.source):   # escape_student_markdown already did it before nbgrader saw the cell
            _escape_student_cell(cell, self._release_text)
        return cell, resources


def _escaped(source: str) -> bool:
    """Already shown as plain text by ``escape_student_markdown`` (no markup left inside the ``<pre>``)."""
    inner = source[len("<pre>"):-len("</pre>")]
    return source.startswith("<pre>") and source.endswith("</pre>") and "<" not in inner and ">" not in inner


def nbgrader_config(root: Path, db_path: Path):
    from nbconvert.preprocessors import ClearMetadataPreprocessor, CSSHTMLHeaderPreprocessor
    from nbgrader.preprocessors import (AssignLatePenalties, CheckCellMetadata, GetGrades, IgnorePattern,
                                        LimitOutput, SaveAutoGrades)

    from .feedback_bounds import BoundFeedback
    from .feedback_exporter import FeedbackExporter

    config = course_config(root, db_path)
    config.ReplayExecution.course_root = config.EscapeStudentText.course_root = str(root)
    config.Autograde.autograde_preprocessors = [ReplayExecution, IgnorePattern, ClearMetadataPreprocessor,
                                                LimitOutput, SaveAutoGrades, AssignLatePenalties, CheckCellMetadata]
    config.GenerateFeedback.preprocessors = [GetGrades, RedactHiddenTests, EscapeStudentText, BoundFeedback,
                                             CSSHTMLHeaderPreprocessor]
    config.GenerateFeedback.exporter_class = FeedbackExporter   # its templates compiled once per process
    return config


def record(job: Job, api, root: Path) -> None:
    """nbgrader scores the cells the judge produced and writes the gradebook (this process only)."""
    row = job.row
    result = job.result
    if result.status != Status.OK:
        row.status = result.status
    row.detail = "; ".join(x for x in (row.detail, result.detail) if x)
    judged = judged_path(root, job.student_id, job.assignment.name, job.assignment.notebook_name)
    judged.parent.mkdir(parents=True, exist_ok=True)
    judged.write_text(result.to_json(), encoding="utf-8")
    try:
        outcome = api.autograde(job.assignment.name, job.student_id, force=True, create=True)
    finally:
        judged.unlink(missing_ok=True)
    if not outcome["success"]:
        row.status, row.detail = Status.GRADER_ERROR, _last_line(outcome)


def write_feedback(job: Job, api, root: Path, out_dir: Path) -> None:
    outcome = api.generate_feedback(job.assignment.name, job.student_id, force=True)
    if not outcome["success"]:
        return
    source = root / "feedback" / job.student_id / job.assignment.name
    target = out_dir / "feedback" / job.student_id / job.assignment.name
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target)
    shortened = 0
    for page in target.rglob("*.html"):
        text = readable_page(page.read_text(encoding="utf-8").replace("<head>", "<head>\n" + CSP, 1))
        shortened += shortened_count(text)
        if len(text.encode("utf-8")) > MAX_FEEDBACK_PAGE_BYTES:
            too_large_page(job.row, page, len(text.encode("utf-8")))
            shortened += 1
        else:
            page.write_text(text, encoding="utf-8")
    if shortened:
        job.row.detail = "; ".join(x for x in (job.row.detail, f"feedback page shortened in {shortened} place(s) "
                                                               "(what a page shows is bounded)") if x)



_UNREADABLE_ADVICE = {
    Status.MISSING_NOTEBOOK: "No notebook was found in your submission, so none of its tests ran. Upload the notebook itself.",
    Status.INVALID_NOTEBOOK: "The file could not be read as a notebook, so none of its tests ran. "
                             "If Jupyter still opens your copy, save it there and resubmit that file; if the file is cut "
                             "short or damaged (Jupyter cannot open it either), resubmit your last good copy: JupyterLab "
                             "keeps one beside the notebook in the hidden .ipynb_checkpoints folder.",
    Status.INVALID_SUBMISSION: "The grader could not use the folder you submitted, so none of the notebook's tests ran. "
                               "Submit the notebook and the files it reads, not a whole folder tree, and resubmit.",
}


def too_large_page(row: GradeRow, path: Path, size: int) -> None:
    """In place of a feedback page over ``MAX_FEEDBACK_PAGE_BYTES`` (which ``feedback_bounds`` should never
    let happen): a short page with the score, saying so."""
    title = html.escape(f"{clean_text(row.assignment)}: {clean_text(row.student_id)}")
    text = (f"<!DOCTYPE html>\n<html><head>\n{CSP}\n<meta charset=\"utf-8\"><title>{title}</title></head>\n"
            f"<body><h1>{title}</h1>\n<p>Your notebook was graded ({html.escape(row.status)}), but its feedback page "
            f"would have been {size / 2**20:.0f} MB, over the {MAX_FEEDBACK_PAGE_BYTES // 2**20} MB the grader writes. "
            "Ask your instructor for your test results.</p>\n</body></html>\n")
    path.write_text(text, encoding="utf-8")


def unreadable_page(row: GradeRow, path: Path) -> None:
    """A short feedback page for a submission that could not be read or run: what happened, in plain words."""
    title = html.escape(f"{clean_text(row.assignment)}: {clean_text(row.student_id)}")
    what = _UNREADABLE_ADVICE.get(row.status, _UNREADABLE_ADVICE[Status.INVALID_NOTEBOOK])
    text = (f"<!DOCTYPE html>\n<html><head>\n{CSP}\n<meta charset=\"utf-8\"><title>{title}</title></head>\n"
            f"<body><h1>{title}</h1>\n<p>Your submission could not be graded: <b>{html.escape(row.status)}</b>.</p>\n"
            f"<p>{html.escape(clean_text(row.detail))}</p>\n"
            f"<p>Score: 0. {html.escape(what)}</p>\n</body></html>\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")



def _last_line(result: dict) -> str:
    text = (result.get("error") or result.get("log") or "").strip().splitlines()
    return text[-1][:200] if text else "nbgrader autograde failed"



def record_zero(db_url: str, assignment_name: str, student_id: str) -> None:
    """A submission that cannot be run still gets a gradebook entry: zero on every cell, no manual grading."""
    from nbgrader.api import Gradebook

    with Gradebook(db_url) as gradebook:
        gradebook.update_or_create_student(student_id)
        submission = gradebook.update_or_create_submission(assignment_name, student_id)
        for notebook in submission.notebooks:
            for grade_entry in notebook.grades:
                grade_entry.auto_score = 0
                grade_entry.manual_score = None
                grade_entry.needs_manual_grade = False
        gradebook.db.commit()


def fill_scores(rows: dict[tuple[str, str], GradeRow], db_url: str) -> None:
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(db_url) as gradebook:
        for (student_id, assignment_name), row in rows.items():
            if row.status == Status.UNKNOWN_ASSIGNMENT:
                continue
            try:
                submission = gradebook.find_submission(assignment_name, student_id)
            except MissingEntry:
                row.status = row.status if row.status != Status.OK else Status.GRADER_ERROR
                continue
            row.score = float(submission.score)
            row.max_score = float(submission.max_score)
