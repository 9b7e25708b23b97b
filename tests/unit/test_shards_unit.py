"""``autograder.batch.shards`` without grading: ``--shard I/K`` parsed and refused, every submission in
exactly one shard chosen by SHA-256 (the same on every machine, so pinned here), the finished-shard
marker, and a merge's checks and its CSV, state and folders (the gradebook merge, which needs
nbgrader's database, is exercised by tests/grader/test_shards.py)."""

from __future__ import annotations

import csv
import json
import os
import threading
import warnings

import pytest

from autograder.batch import shards
from autograder.batch.planning import GRADER_VERSION, STATE_FILE
from autograder.batch.report import GradeRow, write_csv
from autograder.batch.shards import MARKER, MERGED_MARKER, MergeReport, Shard, ShardsIncomplete, merge, read_shards
from autograder.batch.warnings_log import LOG_NAME, captured


@pytest.mark.parametrize("text, shard", [("0/1", Shard(0, 1)), ("3/4", Shard(3, 4)), (" 2/ 5", Shard(2, 5))])
def test_a_shard_is_i_of_k(text, shard):
    assert Shard.parse(text) == shard
    assert str(shard) == f"{shard.index}/{shard.count}"


@pytest.mark.parametrize("text, words", [
    ("4/4", "needs 0 <= I < K"), ("-1/4", "needs 0 <= I < K"), ("0/0", "needs 0 <= I < K"), ("2", "takes I/K"),
    ("a/4", "takes I/K"), ("1/4/2", "takes I/K"), ("", "takes I/K"),
])
def test_a_shard_that_is_not_i_of_k_is_refused_with_the_form_expected(text, words):
    with pytest.raises(ValueError, match=words):
        Shard.parse(text)


def test_shards_are_chosen_by_sha256_the_same_everywhere():
    # int(sha256(student \0 assignment)[:8], big-endian) % K, pinned: a change would move submissions between
    # shards and make a re-run of one shard regrade what another already graded.
    expected = {"ann": (0, 0, 0), "bob": (1, 0, 1), "chloé": (1, 1, 1), "dan": (1, 0, 3)}
    for student, indices in expected.items():
        for count, index in zip((2, 3, 4), indices):
            owners = [i for i in range(count) if Shard(i, count).owns(student, "01_next_token")]
            assert owners == [index], (student, count)


def test_every_submission_is_in_exactly_one_shard_including_names_that_are_not_valid_unicode():
    students = [f"s{i}" for i in range(200)] + ["\udcff-bytes"]
    for student in students:
        assert sum(Shard(i, 7).owns(student, "02_tokenization") for i in range(7)) == 1
    sizes = [sum(Shard(i, 4).owns(s, "02_tokenization") for s in students) for i in range(4)]
    assert min(sizes) > 25   # spread, not all in one


def test_the_marker_says_which_shard_finished_and_is_gone_while_it_is_regraded(tmp_path):
    shards.write_marker(tmp_path, Shard(2, 3), 17)
    assert json.loads((tmp_path / MARKER).read_text()) == \
        {"index": 2, "count": 3, "submissions": 17, "grader_version": GRADER_VERSION}
    assert not (tmp_path / (MARKER + ".part")).exists()
    shards.clear_marker(tmp_path)
    assert not (tmp_path / MARKER).exists()
    shards.clear_marker(tmp_path)   # twice is fine


def a_shard(root, index, count, rows, state=None, finished=True):
    folder = root / f"shard-{index}"
    folder.mkdir()
    write_csv(rows, folder / "grades.csv")
    if state is not None:
        (folder / STATE_FILE).write_text(json.dumps(state))
    if finished:
        shards.write_marker(folder, Shard(index, count), len(rows))
    return folder


def row(student, score, assignment="01_next_token"):
    return GradeRow(student, assignment, score, 10.0, "ok")


def test_read_shards_names_folders_that_are_not_finished_shards(tmp_path):
    done = a_shard(tmp_path, 0, 3, [])
    unfinished = a_shard(tmp_path, 1, 3, [], finished=False)
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / MARKER).write_text('{"index": "one"}')
    found, count, problems = read_shards([done, unfinished, broken])
    assert (found, count) == ({0: done}, 3)
    assert problems == [f"{unfinished}: no {MARKER} (the shard did not finish, or this is not a shard's --out)",
                        f"{broken}: unreadable {MARKER} (ValueError)"]


def test_read_shards_refuses_doubles_disagreement_and_nothing(tmp_path):
    first = a_shard(tmp_path, 0, 2, [])
    (tmp_path / "copy").mkdir()
    (tmp_path / "copy" / MARKER).write_text((first / MARKER).read_text())
    with pytest.raises(ShardsIncomplete, match="shard 0 given twice"):
        read_shards([first, tmp_path / "copy"])
    other = a_shard(tmp_path, 1, 3, [])
    with pytest.raises(ShardsIncomplete, match=r"disagree on the number of shards: \[2, 3\]"):
        read_shards([first, other])
    with pytest.raises(ShardsIncomplete, match=r"disagree on the number of shards: \[2, 4\]"):
        read_shards([first], expect=4)
    with pytest.raises(ShardsIncomplete, match="no finished shard among the folders given"):
        read_shards([tmp_path / "nowhere"])


def test_a_merge_with_a_missing_shard_names_it_and_writes_nothing(tmp_path):
    shard0 = a_shard(tmp_path, 0, 3, [row("ann", 5)])
    shard2 = a_shard(tmp_path, 2, 3, [row("bob", 7)])
    with pytest.raises(ShardsIncomplete) as refused:
        merge([shard0, shard2], tmp_path / "merged")
    assert str(refused.value) == ("merged 2 of 3 shards: 0 submissions\n"
                                  "missing or unfinished shards: 1 (re-run them with --shard I/3, then merge again)\n"
                                  "Nothing was merged (pass --allow-missing for a partial result).")
    assert not (tmp_path / "merged").exists()


def test_a_merge_into_one_of_its_shards_is_refused(tmp_path):
    shard0 = a_shard(tmp_path, 0, 1, [row("ann", 5)])
    with pytest.raises(ShardsIncomplete, match="is one of the shards"):
        merge([shard0], shard0)
    assert (shard0 / MARKER).exists()


@pytest.fixture
def no_gradebook(monkeypatch):
    """Shards made of a CSV alone: the gradebook merge, and the check of each CSV against its
    gradebook, are left out (both are tested below on a real gradebook)."""
    merged = []
    monkeypatch.setattr(shards, "_merge_gradebooks", lambda folders, target: merged.append((folders, target)))
    monkeypatch.setattr(shards, "csv_against_gradebook", lambda folder: [])
    return merged


def test_a_merge_rebuilds_one_csv_state_and_folders_from_the_shards(tmp_path, no_gradebook):
    shard0 = a_shard(tmp_path, 0, 2, [row("bob", 7), row("ann", None)], state={"bob/01": "f1"})
    shard1 = a_shard(tmp_path, 1, 2, [row("ann", 5, "02_tokenization")], state={"ann/02": "f2"})
    (shard0 / "feedback" / "bob").mkdir(parents=True)
    (shard0 / "feedback" / "bob" / "page.html").write_text("bob's")
    (shard1 / "course" / "autograded" / "ann").mkdir(parents=True)
    (shard1 / "course" / "autograded" / "ann" / "nb.ipynb").write_text("{}")
    (shard0 / "course").mkdir()
    os.symlink("/somewhere/solutions", shard0 / "course" / "source")
    out = tmp_path / "merged"
    out.mkdir()
    (out / "stale.txt").write_text("from an earlier merge")
    report = merge([shard1, shard0], out)
    assert report == MergeReport(2, [0, 1], [], [], 3)
    assert report.summary() == "merged 2 of 2 shards: 3 submissions"
    with open(out / "grades.csv", newline="", encoding="utf-8") as handle:
        merged_rows = [(r["student_id"], r["assignment"], r["score"]) for r in csv.DictReader(handle)]
    assert merged_rows == [("ann", "01_next_token", ""), ("ann", "02_tokenization", "5"), ("bob", "01_next_token", "7")]
    assert json.loads((out / STATE_FILE).read_text()) == {"bob/01": "f1", "ann/02": "f2"}
    assert (out / "feedback" / "bob" / "page.html").read_text() == "bob's"
    assert (out / "course" / "autograded" / "ann" / "nb.ipynb").exists()
    assert os.readlink(out / "course" / "source") == "/somewhere/solutions"
    assert json.loads((out / MERGED_MARKER).read_text()) == {"count": 2, "merged": [0, 1], "missing": []}
    assert not (out / "stale.txt").exists() and not (tmp_path / "merged.merging").exists()
    assert no_gradebook == [([shard0, shard1], tmp_path / "merged.merging" / "gradebook.db")]


def test_a_partial_merge_when_allowed_says_what_is_missing(tmp_path, no_gradebook):
    shard1 = a_shard(tmp_path, 1, 3, [row("ann", 5)])
    report = merge([shard1, tmp_path / "nowhere"], tmp_path / "merged", allow_missing=True)
    assert (report.merged, report.missing, report.rows) == ([1], [0, 2], 1)
    assert report.summary().splitlines()[1:] == [
        "missing or unfinished shards: 0, 2 (re-run them with --shard I/3, then merge again)",
        f"not a finished shard: {tmp_path / 'nowhere'}: no {MARKER} (the shard did not finish, or this is not a shard's --out)"]
    assert json.loads((tmp_path / "merged" / MERGED_MARKER).read_text())["missing"] == [0, 2]


def test_a_submission_graded_by_two_shards_stops_the_merge(tmp_path, no_gradebook):
    shard0 = a_shard(tmp_path, 0, 2, [row("ann", 5)])
    shard1 = a_shard(tmp_path, 1, 2, [row("ann", 6)])
    with pytest.raises(ShardsIncomplete, match="ann/01_next_token was graded by two shards"):
        merge([shard0, shard1], tmp_path / "merged")
    assert not (tmp_path / "merged").exists()


def a_gradebook(folder, scores: dict) -> None:
    """An nbgrader gradebook in ``folder`` with one notebook of 3 points and these students' scores."""
    from nbgrader.api import Gradebook

    from autograder.course.course_directory import put_scripts_on_path

    put_scripts_on_path()
    with Gradebook(f"sqlite:///{folder / 'gradebook.db'}") as gradebook:
        gradebook.add_assignment("01_fixture")
        gradebook.add_notebook("fixture", "01_fixture")
        gradebook.add_grade_cell("test_double", "fixture", "01_fixture", max_score=3, cell_type="code")
        for student, score in scores.items():
            gradebook.add_student(student)
            gradebook.add_submission("01_fixture", student)
            gradebook.find_grade("test_double", "fixture", "01_fixture", student).auto_score = score
        gradebook.db.commit()


def fixture_row(student, score, status="ok"):
    return GradeRow(student, "01_fixture", score, None if score is None else 3.0, status)


def test_a_shard_whose_csv_disagrees_with_its_gradebook_is_refused_by_name(tmp_path):
    agrees = a_shard(tmp_path, 0, 2, [fixture_row("ann", 3), fixture_row("ivy", None, "invalid name")])
    a_gradebook(agrees, {"ann": 3})
    disagrees = a_shard(tmp_path, 1, 2, [fixture_row("bob", 3), fixture_row("cy", 1)])
    a_gradebook(disagrees, {"bob": 1, "cy": 1, "dee": 0})
    assert shards.csv_against_gradebook(agrees) == []
    assert shards.csv_against_gradebook(disagrees) == ["bob/01_fixture: grades.csv 3/3, gradebook 1/3",
                                                       "dee/01_fixture: grades.csv no score, gradebook 0/3"]
    with pytest.raises(ShardsIncomplete) as refused:
        merge([agrees, disagrees], tmp_path / "merged")
    assert str(refused.value) == (f"shard 1 ({disagrees}): its grades.csv disagrees with its gradebook: "
                                  "bob/01_fixture: grades.csv 3/3, gradebook 1/3; dee/01_fixture: grades.csv no score, "
                                  "gradebook 0/3. Nothing was merged (grade that shard again).")
    assert not (tmp_path / "merged").exists()
    (disagrees / "gradebook.db").unlink()
    assert shards.csv_against_gradebook(disagrees) == ["bob/01_fixture: grades.csv 3/3, gradebook no submission",
                                                       "cy/01_fixture: grades.csv 1/3, gradebook no submission"]


def test_shards_whose_csvs_agree_with_their_gradebooks_merge(tmp_path):
    first = a_shard(tmp_path, 0, 2, [fixture_row("ann", 3)])
    a_gradebook(first, {"ann": 3})
    second = a_shard(tmp_path, 1, 2, [fixture_row("bob", 1.5)])
    a_gradebook(second, {"bob": 1.5})
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        report = merge([first, second], tmp_path / "merged")
    assert report.rows == 2
    assert shards.csv_against_gradebook(tmp_path / "merged") == []
    # nbgrader's SQLAlchemy warnings ("... not in session ...") went to the log, not to the terminal.
    assert shown == []
    log = tmp_path / "merged" / LOG_NAME
    assert "SAWarning" in log.read_text(encoding="utf-8")
    assert report.summary().splitlines()[-1].endswith(f"warning(s) from nbgrader and its libraries, kept in {log}")


def test_warnings_are_kept_in_a_log_only_when_there_are_any(tmp_path, capsys):
    with captured() as logged:
        warnings.warn("from the main thread", DeprecationWarning)
        worker = threading.Thread(target=lambda: warnings.warn("from a worker", UserWarning))
        worker.start()
        worker.join()
    assert capsys.readouterr().err == ""
    path = logged.write(tmp_path)
    text = path.read_text(encoding="utf-8")
    assert logged.count == 2 and "DeprecationWarning: from the main thread" in text and "UserWarning: from a worker" in text
    assert logged.summary(path) == f"2 warning(s) from nbgrader and its libraries, kept in {path}"
    with captured() as quiet:
        pass
    assert quiet.write(tmp_path) is None and not path.exists(), "an old log is removed, no empty one written"
    assert quiet.summary(None) == ""
