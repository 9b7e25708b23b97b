"""Command line for instructors and maintainers: ``python -m autograder {build,grade,merge,report,selfgrade,demo,check,mutants,source}`` (``mutants`` has ``import`` and ``sweep``)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .sandbox.limits import Limits


def main(argv: list[str] | None = None) -> int:
    parser = make_parser()
    args = parser.parse_args(argv)
    return COMMANDS[args.command](args, parser)


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m autograder", description="Build and grade the course's notebooks.")
    commands = parser.add_subparsers(dest="command", required=True)
    for add_command in (_add_build, _add_selfgrade, _add_grade, _add_merge, _add_report, _add_demo, _add_check,
                        _add_mutants, _add_source):
        add_command(commands)
    return parser


def _add_build(commands) -> None:
    build_parser = commands.add_parser("build", help="regenerate notebooks/ (student versions) from solutions/")
    build_parser.add_argument("--assignment", action="append",
                              help="build only this assignment, e.g. 03_attention (repeatable; default: all)")
    build_parser.add_argument("--no-self-grading", action="store_true",
                              help="private edition for a graded class: no self-grading cell, no test bundles")
    build_parser.add_argument("--release", action="store_true",
                              help="building a course to publish: refuse while the repository URL "
                                   "(autograder/course/setup_cell.py) is a placeholder")
    build_parser.add_argument("--force", action="store_true",
                              help="replace student versions that hold someone's work (answers, outputs) after "
                                   "moving each to notebooks-backup-<date>-<time>/ (without it the build refuses)")


def _add_selfgrade(commands) -> None:
    selfgrade_parser = commands.add_parser("selfgrade", help="run a saved notebook (or every notebook in a folder), then "
                                           "grade it with every test (self-study)")
    selfgrade_parser.add_argument("notebook", type=Path, help="a notebook, or a folder: every notebook in it and a "
                                  "progress table across the course")
    selfgrade_parser.add_argument("--html", type=Path, help="with a folder: also write the progress as a page with a figure")
    selfgrade_parser.add_argument("--assignment", help="assignment name (default: the notebook's folder name)")


def _add_grade(commands) -> None:
    grade_parser = commands.add_parser("grade", help="autograde SUBMISSIONS/<student_id>/<assignment>/<notebook>.ipynb")
    grade_parser.add_argument("submissions", type=Path, help="folder of submissions, nbgrader's submitted/ layout")
    grade_parser.add_argument("--out", type=Path, required=True, help="where grades.csv, feedback/ and gradebook.db go")
    grade_parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="notebooks graded at once (default: all cores)")
    grade_parser.add_argument("--cell-timeout", type=int, default=Limits.cell_timeout_s,
                              help=f"seconds one cell may run (default {Limits.cell_timeout_s})")
    grade_parser.add_argument("--notebook-timeout", type=int, default=Limits.notebook_timeout_s,
                              help=f"seconds one notebook may run (default {Limits.notebook_timeout_s})")
    grade_parser.add_argument("--memory-mb", type=int, default=Limits.memory_mb,
                              help=f"memory limit of one notebook's kernel (default {Limits.memory_mb})")
    grade_parser.add_argument("--host-memory-mb", type=int, default=None,
                              help="what all notebooks graded at once may hold together (default: 80%% of the host's "
                                   "memory); fewer workers run when their bounds would add up to more")
    grade_parser.add_argument("--student", action="append", help="grade only this student (repeatable); others keep earlier results")
    grade_parser.add_argument("--assignment", action="append", help="grade only this assignment (repeatable)")
    grade_parser.add_argument("--force", action="store_true", help="regrade even submissions unchanged since the last run")
    grade_parser.add_argument("--sandbox", choices=["auto", "bwrap", "none"], default="auto",
                              help="isolation: bubblewrap namespaces when available (auto), required (bwrap), or limits only (none)")
    grade_parser.add_argument("--allow-self-grading-bundles", action="store_true",
                              help="grade even though autograder/selfgrade/*.bin (the public edition's hidden tests, "
                                   "readable from the sandbox) are present; for a graded class build with --no-self-grading")
    grade_parser.add_argument("--solutions", type=Path, default=None,
                              help="the course's source notebooks (default: solutions/ of this checkout)")
    grade_parser.add_argument("--shard", metavar="I/K",
                              help="grade only shard I of K (0-based): the submissions whose stable hash of "
                                   "(student, assignment) falls there; --out then holds that shard alone")
    grade_parser.add_argument("--report", action="store_true", help="then write OUT/report.html and report.json (see report)")


def _add_merge(commands) -> None:
    merge_parser = commands.add_parser("merge", help="merge the --out folders of grade --shard I/K into one")
    merge_parser.add_argument("shards", type=Path, nargs="+", help="the shards' output folders")
    merge_parser.add_argument("--out", type=Path, required=True, help="the merged output folder (rebuilt each time)")
    merge_parser.add_argument("--expect", type=int, help="the number of shards K (default: what the shards say)")
    merge_parser.add_argument("--allow-missing", action="store_true",
                              help="merge the finished shards even when some are missing or failed")
    merge_parser.add_argument("--report", action="store_true", help="then write OUT/report.html and report.json (see report)")


def _add_report(commands) -> None:
    report_parser = commands.add_parser("report", help="what the class got wrong: OUT/report.html and report.json "
                                        "from a graded (or merged) output folder")
    report_parser.add_argument("out", type=Path, help="the --out folder of grade or merge")
    report_parser.add_argument("--solutions", type=Path, default=None,
                               help="the course's source notebooks (default: those the class was graded against)")
    report_parser.add_argument("--mutants", type=Path, default=None,
                               help="the named mistakes (default: mutants/ beside the solutions)")
    report_parser.add_argument("--no-mutants", action="store_true",
                               help="do not run the mutants: failures are grouped but not named")


def _add_demo(commands) -> None:
    demo_parser = commands.add_parser("demo", help="build in a scratch copy of the course, then grade sample "
                                      "submissions (offline); notebooks/ is not touched")
    demo_parser.add_argument("--out", type=Path, default=Path("grading/demo"), help="output folder (default grading/demo)")
    demo_parser.add_argument("--workers", type=int, default=None)
    which = demo_parser.add_mutually_exclusive_group()
    which.add_argument("--assignment", action="append",
                       help="demonstrate this assignment (repeatable, or a comma list; default: the shortest "
                            "to grade, named in autograder/course/demo.py)")
    which.add_argument("--all", action="store_true", help="demonstrate every assignment (11 notebooks, many minutes)")


def _add_check(commands) -> None:
    check_parser = commands.add_parser("check", help="maintainers: run solution notebooks in a kernel and through the "
                                       "judge with every mutant; print time, failures and catch rate")
    check_parser.add_argument("assignment", nargs="*", help="assignments to check (default: all)")
    check_parser.add_argument("--no-mutants", action="store_true", help="skip the mutants (time and tests only)")


def _add_mutants(commands) -> None:
    mutants_parser = commands.add_parser("mutants", help="maintainers: bring old-format mutant files into mutants/NN_slug.toml")
    actions = mutants_parser.add_subparsers(dest="action", required=True)
    import_parser = actions.add_parser("import", help="turn mutants/NN_slug/<exercise>__<mistake>.py files (a whole "
                                       "answer cell) into edits of the current solution in mutants/NN_slug.toml")
    import_parser.add_argument("files", nargs="+", type=Path, help="old-format mutant files")
    import_parser.add_argument("--exact", action="store_true", help="keep every difference from the solution, "
                               "comments and docstrings too (default: code lines only, the same program)")
    import_parser.add_argument("--keep", action="store_true", help="do not delete the files once imported")
    import_parser.add_argument("--replace", action="store_true", help="take out mutants of the same name already "
                               "in the .toml first (an old-format file edited on another branch)")
    sweep_parser = actions.add_parser("sweep", help="run every operator mutant of a solution (a statement deleted, "
                                      "device= dropped, an axis or comparison changed, ...) through the judge and "
                                      "print those that every test passes, for a person to judge")
    sweep_parser.add_argument("assignment", help="the assignment, e.g. 10_attention_at_scale")
    sweep_parser.add_argument("--exercise", action="append", default=[], help="only this exercise (repeatable)")
    sweep_parser.add_argument("--operator", action="append", default=[], help="only operators whose name contains "
                              "this, e.g. 'one-sided', 'generator', 'copy', 'device' (repeatable)")


def _add_source(commands) -> None:
    source_parser = commands.add_parser("source", help="maintainers: the solution notebooks as text (solutions/NN_slug/slug.py)")
    actions = source_parser.add_subparsers(dest="action", required=True)
    import_parser = actions.add_parser("import", help="turn solutions/NN_slug/slug.ipynb into its text source "
                                       "slug.py beside it (outputs dropped), checked to give the notebook back")
    import_parser.add_argument("notebooks", nargs="+", type=Path, help="solution notebooks (.ipynb)")
    import_parser.add_argument("--keep", action="store_true", help="do not delete the .ipynb once imported")
    import_parser.add_argument("--replace", action="store_true", help="replace a text source that says otherwise "
                               "(a notebook edited as .ipynb on another branch)")


def run_source(args, parser) -> int:
    from .course.solution_source import import_notebook

    for path in args.notebooks:
        if path.suffix != ".ipynb" or not path.is_file():
            parser.error(f"{path} is not a notebook file (.ipynb)")
        try:
            print(f"{path} -> {import_notebook(path, keep=args.keep, replace=args.replace)}")
        except ValueError as error:
            print(f"source import: {error}", file=sys.stderr)
            return 1
    return 0


def run_mutants(args, parser) -> int:
    from .course.mutant_edits import StaleMutant
    from .course.mutant_import import import_files

    if args.action == "sweep":
        return run_sweep(args, parser)

    try:
        for line in import_files(args.files, exact=args.exact, keep=args.keep, replace=args.replace):
            print(line)
    except (ValueError, SyntaxError, StaleMutant) as error:
        print(f"mutants import: {error}", file=sys.stderr)
        return 1
    return 0


def run_sweep(args, parser) -> int:
    from .course.mutant_sweep import main as sweep_main

    try:
        return sweep_main(args.assignment, args.exercise, args.operator)
    except (KeyError, ValueError) as error:     # an unknown assignment or exercise
        parser.error(f"mutants sweep: {error}")


def run_check(args, parser) -> int:
    from .course.check import main as check_main

    return check_main(args.assignment, with_mutants=not args.no_mutants)


def run_build(args, parser) -> int:
    from .course.build import BuildError, build
    from .course.student_work import WorkWouldBeLost

    try:
        changed = build(only=set(args.assignment) if args.assignment else None, release=args.release,
                        self_grading=not args.no_self_grading, force=args.force)
    except (BuildError, WorkWouldBeLost) as error:
        print(f"build: {error}", file=sys.stderr)
        return 1
    for original, backup in changed.backups:
        print(f"kept {original} (it held someone's work) as {backup}")
    for path in changed:
        print(f"removed {path}" if path in changed.removed else f"updated {path}")
    print(f"build: {len(changed)} file(s) changed" if changed else "build: notebooks/ already up to date")
    return 0


def limits_from(args, parser) -> Limits:
    """The grading limits the command line asked for; a value that cannot grade is a usage error
    naming the flag the user typed."""
    try:
        return Limits(cell_timeout_s=args.cell_timeout, notebook_timeout_s=args.notebook_timeout,
                      memory_mb=args.memory_mb, sandbox=args.sandbox)
    except ValueError as error:
        message = str(error)
        for field_name, flag in {"memory_mb": "--memory-mb", "cell_timeout_s": "--cell-timeout",
                                 "notebook_timeout_s": "--notebook-timeout"}.items():
            message = message.replace(field_name, flag)
        parser.error(message)


def run_grade(args, parser) -> int:
    from .batch.grading import grade
    from .batch.intake import NoSubmissions
    from .batch.report import BUNDLES_REFUSAL, format_table, self_grading_bundles, summary_warnings
    from .sandbox.confinement import RunnerCannotStart
    from .sandbox.bubblewrap import SandboxUnavailable
    from .batch.shards import Shard
    from .batch.warnings_log import LOG_NAME

    if args.workers < 1:
        parser.error("--workers must be at least 1")
    limits = limits_from(args, parser)
    if not args.submissions.is_dir():
        parser.error(f"{args.submissions} is not a folder; expected SUBMISSIONS/<student_id>/<assignment>/<notebook>.ipynb")
    try:
        shard = Shard.parse(args.shard) if args.shard else None
    except ValueError as error:
        parser.error(str(error))
    bundles = self_grading_bundles()
    if bundles and not args.allow_self_grading_bundles:
        print(f"grade: refused: {BUNDLES_REFUSAL.format(count=len(bundles))}", file=sys.stderr)
        return 1
    try:
        rows = grade(args.submissions, args.out, workers=args.workers, limits=limits, force=args.force,
                     host_memory_mb=args.host_memory_mb,
                     students=set(args.student) if args.student else None,
                     assignments=set(args.assignment) if args.assignment else None, shard=shard,
                     **({"solutions_dir": args.solutions.resolve()} if args.solutions else {}))
    except (SandboxUnavailable, RunnerCannotStart, NoSubmissions) as error:
        print(f"grade: {error}", file=sys.stderr)
        return 1
    print(format_table(rows))
    print(f"\nGrades: {args.out / 'grades.csv'}\nFeedback: {args.out / 'feedback'}\nGradebook: {args.out / 'gradebook.db'}")
    if (args.out / LOG_NAME).exists():
        print(f"Python warnings from nbgrader and its libraries (not grading errors): {args.out / LOG_NAME}")
    for line in summary_warnings(limits, bundles):
        print(f"\n{line}")
    return write_class_report(args.out, solutions=args.solutions) if args.report else 0


def run_merge(args, parser) -> int:
    from .batch.shards import ShardsIncomplete, merge

    try:
        report = merge(args.shards, args.out, allow_missing=args.allow_missing, expect=args.expect)
    except ShardsIncomplete as error:
        print(f"merge: {error}", file=sys.stderr)
        return 1
    print(report.summary())
    print(f"\nGrades: {args.out / 'grades.csv'}\nFeedback: {args.out / 'feedback'}\nGradebook: {args.out / 'gradebook.db'}")
    status = write_class_report(args.out) if args.report else 0
    return 3 if report.missing or report.problems else status


def write_class_report(out: Path, solutions: Path | None = None, mutants: Path | None = None,
                       with_mutants: bool = True) -> int:
    from .batch.class_report import write_report

    html_path, json_path = write_report(out, solutions, mutants, with_mutants)
    print(f"Report: {html_path}\n        {json_path}")
    return 0


def run_report(args, parser) -> int:
    if not (args.out / "grades.csv").is_file():
        parser.error(f"{args.out} holds no grades.csv: give the --out folder of grade or merge")
    return write_class_report(args.out, args.solutions, args.mutants, not args.no_mutants)


def run_selfgrade(args, parser) -> int:
    from .selfgrade import grade_saved_notebook

    if args.notebook.is_dir():
        from .selfgrade.progress import grade_folder

        return grade_folder(args.notebook, args.html)
    if not args.notebook.is_file():
        parser.error(f"{args.notebook} is not a notebook file or a folder")
    return grade_saved_notebook(args.notebook, args.assignment)


def run_demo_command(args, parser) -> int:
    from .course.demo import run_demo, selected_assignments
    from .sandbox.confinement import RunnerCannotStart
    from .sandbox.bubblewrap import SandboxUnavailable

    try:
        assignments = selected_assignments(args.assignment, args.all)
    except ValueError as error:
        parser.error(f"demo --assignment: {error}")
    try:
        return run_demo(args.out, args.workers, assignments)
    except (SandboxUnavailable, RunnerCannotStart) as error:
        print(f"demo: {error}", file=sys.stderr)
        return 1


COMMANDS = {"check": run_check, "build": run_build, "grade": run_grade, "merge": run_merge, "report": run_report,
            "selfgrade": run_selfgrade, "demo": run_demo_command, "mutants": run_mutants,
            "source": run_source}


if __name__ == "__main__":
    sys.exit(main())
