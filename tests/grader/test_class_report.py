"""The class report (``python -m autograder report OUT``) counts exactly what was planted.

A synthetic class of 20 graded submissions of the one-exercise fixture course: correct answers,
three named mistakes (the course's mutants of ``double``, planted 4, 3 and 2 times), a student whose
error message is hostile HTML, a timeout, a crash, an unreadable notebook, and a notebook in no
student's folder; one student's name is hostile HTML too. Checked:

* the numbers, exactly: the histogram sums to the class, full/partial/zero, median, points lost, one
  group per planted mistake with its count and the mutant's docstring as its name, statuses, ranks;
* the page shows every hostile string as text: no ``<script>``, no remote URL outside escaped text,
  and in a real headless browser (Debian's chromium) no script runs and no request leaves the page;

That a merge of shards gives the same report.json and report.html as one machine is checked on the small
class (``tests/grader/test_shards.py``), which is graded in shards anyway.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from autograder.course import conventions, submissions
from autograder.batch.class_report import REPORT_HTML, REPORT_JSON, histogram, message_pattern
from autograder.batch.class_report_page import render_page
from conftest import TEST_SANDBOX
from fixture_course import add_mutants, answer, make_course

MUTANTS = {
    "triples": '"""Multiplies by three instead of two."""\nimport torch\n\n\ndef double(x):\n    return 3 * x\n',
    "integers": '"""Returns an integer tensor, not floats."""\nimport torch\n\n\ndef double(x):\n    return (2 * x).long()\n',
    "flattens": '"""Flattens its input: right for a vector only."""\nimport torch\n\n\ndef double(x):\n    return 2 * x.flatten()\n',
}
HOSTILE_NAME = '"><img src=x onerror=alert(1)>'
HOSTILE_MESSAGE = "<script>document.title='pwned'</script><img src=http://127.0.0.1:9/leak.png>"
CLASS = {
    **{name: None for name in ("ada", "ben", "cat", "dov", "emma", "finn", "gia")},
    **{name: MUTANTS["triples"] for name in ("bob", "hugo", "ivy", HOSTILE_NAME)},
    **{name: MUTANTS["integers"] for name in ("kim", "lev", "max")},
    **{name: MUTANTS["flattens"] for name in ("dan", "ned")},
    "eve": f"def double(x):\n    raise RuntimeError({HOSTILE_MESSAGE!r})\n",
    "fay": "def double(x):\n    while True:\n        pass\n",
    "gus": "import os\n\ndef double(x):\n    os._exit(3)\n",
}
UNREADABLE = "hal"
UNTOUCHED = "ula"     # the notebook as released: reported apart, like the unreadable one
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def make_class(root: Path) -> Path:
    assignment = make_course(root)
    add_mutants(root, MUTANTS)
    submitted = root / "submitted"
    for student, code in CLASS.items():
        submissions.write(answer(assignment, root, code), submitted / student / "01_fixture" / "fixture.ipynb")
    (submitted / UNREADABLE / "01_fixture").mkdir(parents=True)
    (submitted / UNREADABLE / "01_fixture" / "fixture.ipynb").write_text("not json", encoding="utf-8")
    (submitted / UNTOUCHED / "01_fixture").mkdir(parents=True)
    shutil.copyfile(root / "notebooks" / "01_fixture" / "fixture.ipynb", submitted / UNTOUCHED / "01_fixture" / "fixture.ipynb")
    submissions.write(answer(assignment, root, None), submitted / "stray.ipynb")
    return submitted


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> Path:
    """The class graded on one machine, with its report."""
    root = tmp_path_factory.mktemp("class")
    submitted = make_class(root)
    _command("grade", str(submitted), "--out", str(root / "single"), "--solutions", str(root / "solutions"),
             "--cell-timeout", "3", "--notebook-timeout", "300", "--sandbox", TEST_SANDBOX, "--workers", "2",
             "--allow-self-grading-bundles", "--report")
    return root


def _command(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "autograder", *args], capture_output=True, text=True,
                          cwd=conventions.REPO_ROOT, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Report: " in done.stdout, done.stdout[-2000:]
    return done.stdout


def _report(out: Path) -> dict:
    return json.loads((out / REPORT_JSON).read_text(encoding="utf-8"))


@pytest.mark.slow
def test_the_numbers_are_exactly_what_was_planted(graded):
    data = _report(graded / "single")
    [section] = data["assignments"]
    [exercise] = section["exercises"]
    # The unreadable and the untouched notebook took no part: reported apart, not in the shares or the groups.
    assert (section["name"], section["students"], section["max_score"]) == ("01_fixture", 19, 3.0)
    assert section["not_taking_part"] == [{"student": UNREADABLE, "why": "invalid notebook"},
                                          {"student": UNTOUCHED, "why": "untouched"}]
    # 7 correct (3 points); 2 flatten (the visible test passes: 1 point); 4 + 3 wrong, eve, fay, gus: 0.
    assert exercise["histogram"] == [[0, 10], [1.0, 2], [2.0, 0], [3.0, 7]]
    assert sum(count for _, count in exercise["histogram"]) == section["students"] == 19
    assert (exercise["full"], exercise["partial"], exercise["zero"]) == (7, 2, 10)
    assert (exercise["median"], exercise["lost"], exercise["max_points"]) == (0.0, 34.0, 3.0)

    groups = {(g["mistake"], g["test"]): g for g in exercise["groups"]}
    named = {key: sorted(g["students"]) for key, g in groups.items() if key[0]}
    assert named == {("Multiplies by three instead of two", "test_double"): sorted(["bob", "hugo", "ivy", HOSTILE_NAME]),
                     ("Returns an integer tensor, not floats", "test_double"): ["kim", "lev", "max"],
                     ("Flattens its input: right for a vector only", "test_double_hidden"): ["dan", "ned"]}
    unnamed = {tuple(g["students"]): g for g in exercise["groups"] if not g["mistake"]}
    assert sorted(unnamed) == [("eve",), ("fay",), ("gus",)]
    assert sum(g["count"] for g in exercise["groups"]) == 12 and all(g["count"] == len(g["students"]) for g in exercise["groups"])
    assert all(g["examples"] == g["students"][:2] for g in exercise["groups"])
    assert [g["count"] for g in exercise["groups"]] == [4, 3, 2, 1, 1, 1]   # largest group first
    assert "did not finish within" in unnamed[("fay",)]["message"] and HOSTILE_MESSAGE in unnamed[("eve",)]["message"]

    statuses = {s["status"]: sorted(x["student"] for x in s["submissions"]) for s in data["statuses"]}
    assert statuses == {"timeout": ["fay"], "kernel died": ["gus"], "invalid notebook": [UNREADABLE],
                        "misplaced notebook": [""]}

    people = {p["student"]: p for p in data["students"]}
    assert len(people) == 21 and set(people) == set(CLASS) | {UNREADABLE, UNTOUCHED}
    assert {p["rank"] for s, p in people.items() if CLASS.get(s) is None and s not in (UNREADABLE, UNTOUCHED)} == {1}
    assert people[UNTOUCHED]["missed"] == [] and people[UNTOUCHED]["submissions"][0]["status"] == "ok"
    assert people["dan"]["rank"] == 8 and people["dan"]["total"] == 1.0 and people["bob"]["rank"] == 10
    assert people["kim"]["missed"] == [{"assignment": "01_fixture", "exercise": "double",
                                        "what": "Returns an integer tensor, not floats"}]
    assert people["ada"]["missed"] == [] and people["ada"]["submissions"][0]["feedback"] == ["feedback/ada/01_fixture/fixture.html"]
    for person in people.values():
        for page in person["submissions"][0]["feedback"]:
            assert (graded / "single" / page).is_file()
    assert data["hardest"] == [{"assignment": "01_fixture", "exercise": "double", "lost": 34.0, "max_points": 3.0,
                                "students": 19, "share_lost": 34.0 / 57}]


@pytest.mark.slow
def test_the_report_command_gives_the_same_page_again_from_its_cache(graded, tmp_path):
    before = (graded / "single" / REPORT_HTML).read_bytes()
    cache = sorted((graded / "single" / "report_cache").iterdir())
    assert [p.name for p in cache] == ["mutants-01_fixture.json"]
    stamp = cache[0].stat().st_mtime_ns
    _command("report", str(graded / "single"))
    assert (graded / "single" / REPORT_HTML).read_bytes() == before and cache[0].stat().st_mtime_ns == stamp


class _Elements(HTMLParser):
    """Every element's tag and attributes, and the page's text."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def _parse(page: str) -> _Elements:
    parser = _Elements()
    parser.feed(page)
    return parser


def assert_inert(page: str) -> None:
    """No script, no event handler, no image but an embedded PNG, no link but a relative one to a page under OUT."""
    parsed = _parse(page)
    tags = {tag for tag, _ in parsed.elements}
    assert "script" not in tags and "iframe" not in tags and "object" not in tags and "embed" not in tags, tags
    for tag, attrs in parsed.elements:
        assert not [name for name in attrs if name.startswith("on")], (tag, attrs)
        if tag == "img":
            assert attrs["src"].startswith("data:image/png;base64,"), attrs["src"][:80]
        if tag == "a":
            assert re.fullmatch(r"feedback/[^:]+\.html", attrs["href"]), attrs["href"]
        if tag == "link" or (tag == "meta" and attrs.get("http-equiv", "").lower() == "refresh"):
            raise AssertionError((tag, attrs))
    outside_text = re.sub(r">[^<]*<", "><", page)   # markup only: a URL may appear only as escaped text
    assert not re.search(r"https?:", outside_text), re.findall(r".{40}https?:.{40}", outside_text)


@pytest.mark.slow
def test_hostile_names_and_messages_render_as_text(graded):
    page = (graded / "single" / REPORT_HTML).read_text(encoding="utf-8")
    assert_inert(page)
    text = "".join(_parse(page).text)
    assert HOSTILE_NAME in text and HOSTILE_MESSAGE in text
    assert html.escape(HOSTILE_NAME) in page and "<script" not in page.lower()
    assert "Content-Security-Policy" in page and "default-src 'none'" in page


def test_a_report_page_escapes_what_it_is_given():
    """The page alone, from a report holding hostile strings everywhere a student's text can be."""
    evil = '<script>alert(1)</script>"\'><img src=http://127.0.0.1:9/x onerror=alert(2)>'
    group = {"test": "test_double", "pattern": evil, "count": 1, "mistake": None, "mutants": [], "message": evil,
             "examples": [evil], "students": [evil]}
    exercise = {"name": "double", "max_points": 3.0, "students": 1, "histogram": [[0, 1], [3.0, 0]], "full": 0,
                "partial": 0, "zero": 1, "median": 0.0, "lost": 3.0, "groups": [group]}
    data = {"assignments": [{"name": "01_fixture", "students": 1, "max_score": 3.0, "median_score": 0.0,
                             "exercises": [exercise]}],
            "hardest": [{"assignment": "01_fixture", "exercise": "double", "lost": 3.0, "max_points": 3.0, "students": 1,
                         "share_lost": 1.0}],
            "statuses": [{"status": "timeout", "count": 1, "submissions": [{"student": evil, "assignment": "01_fixture",
                                                                            "detail": evil}]}],
            "students": [{"student": evil, "total": 0.0, "max_score": 3.0, "rank": 1, "missed": [
                {"assignment": "01_fixture", "exercise": "double", "what": evil}],
                "submissions": [{"assignment": "01_fixture", "score": 0.0, "max_score": 3.0, "status": "timeout",
                                 "feedback": [f"feedback/{evil}/01_fixture/fixture.html"]}]}]}
    page = render_page(data)
    assert_inert(page)
    assert "".join(_parse(page).text).count(evil) >= 6


def test_message_patterns_take_out_numbers_quoted_names_and_the_student():
    first = "CheckFailure: double: 2 of 2 values differ. expected: [2, -4] (shape (2,)) got: [3, -6] in 'ada_fn' by ada"
    second = "CheckFailure: double: 5 of 6 values differ. expected: [0.5, 1e-3, 7] (shape (2, 3)) got: [1, 2] in 'x' by bob"
    assert message_pattern(first, "ada") == message_pattern(second, "bob")
    assert message_pattern(first) != message_pattern("CheckFailure: double: expected a floating-point tensor")
    assert message_pattern("object at 0x7f3a9c, don't") == "object at # don't"   # a trailing comma goes with its number


def test_the_histogram_has_a_bar_for_every_total_one_can_earn():
    assert histogram([0.0, 1.0, 3.0, 3.0], [1.0, 2.0]) == [[0, 1], [1.0, 1], [2.0, 0], [3.0, 2]]
    assert histogram([0.5], [1.0]) == [[0, 0], [0.5, 1], [1.0, 0]]   # a manual score between the cells' totals


# --------------------------------------------------------------------------------------------------
# A real browser: Debian's chromium, headless. Without it these skip (CI: apt-get install chromium).

def _chromium(page: Path, work: Path) -> tuple[str, list[str]]:
    """The DOM after chromium loaded ``page``, and the URLs of the requests the page itself made."""
    netlog = work / "netlog.json"
    done = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                           "--no-first-run", f"--user-data-dir={work / 'profile'}", f"--log-net-log={netlog}",
                           "--virtual-time-budget=3000", "--dump-dom", page.as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout, page_requests(json.loads(netlog.read_text(encoding="utf-8")))


def page_requests(netlog: dict) -> list[str]:
    """The non-local URLs requested on behalf of a ``file://`` page (chromium's own background requests,
    to its update and account services, are attributed to other origins and left out)."""
    by_source: dict = {}
    for event in netlog.get("events", []):
        by_source.setdefault(event.get("source", {}).get("id"), []).append(event.get("params") or {})
    found = set()
    for params in by_source.values():
        from_page = any("file://" in json.dumps(p) for p in params)
        urls = [p["url"] for p in params if isinstance(p.get("url"), str)]
        found.update(u for u in urls if from_page and not u.startswith(("file:", "data:")))
    return sorted(found)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Debian: apt-get install -y chromium)")
def test_the_browser_check_sees_a_script_run_and_a_request_leave(tmp_path):
    """The check below is able to fail: a page that runs a script and loads a remote image is caught."""
    page = tmp_path / "control.html"
    page.write_text("<!DOCTYPE html><html><head><title>quiet</title></head><body><p>x</p>"
                    "<img src=\"http://127.0.0.1:9/leak.png\"><script>document.title='pwned';"
                    "document.body.appendChild(document.createElement('aside'));</script></body></html>")
    dom, requests = _chromium(page, tmp_path)
    assert "<title>pwned</title>" in dom and "<aside>" in dom
    assert requests == ["http://127.0.0.1:9/leak.png"]


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Debian: apt-get install -y chromium)")
def test_in_a_real_browser_no_script_runs_and_no_request_leaves(graded, tmp_path):
    page = graded / "single" / REPORT_HTML
    source = page.read_text(encoding="utf-8")
    dom, requests = _chromium(page, tmp_path)
    assert requests == []
    title = re.search(r"<title>(.*?)</title>", source).group(1)
    assert f"<title>{title}</title>" in dom and "pwned" not in title
    parsed, loaded = _parse(source), _parse(dom)
    assert [tag for tag, _ in loaded.elements if tag not in ("html", "head", "body", "tbody")] == \
        [tag for tag, _ in parsed.elements if tag not in ("html", "head", "body", "tbody")]   # nothing injected
    assert_inert(dom)
    text = "".join(loaded.text)
    assert HOSTILE_NAME in text and HOSTILE_MESSAGE in text


def test_report_command_refuses_a_folder_without_grades(tmp_path):
    done = subprocess.run([sys.executable, "-m", "autograder", "report", str(tmp_path)], capture_output=True, text=True,
                          cwd=conventions.REPO_ROOT, timeout=120)
    assert done.returncode == 2 and "holds no grades.csv" in done.stderr


def test_mistakes_that_read_alike_without_numbers_are_told_apart_by_their_exact_messages():
    from autograder.batch.class_report import ExerciseCells, Submission, failure_groups, label_failures
    from autograder.batch.mutant_messages import MutantFailure
    from autograder.batch.report import GradeRow

    transposed = MutantFailure("f", "f__transposed", "Stores counts[next, previous].", [("test_f", "CheckFailure: expected 1 at [0, 2], got 0")])
    rolls = MutantFailure("f", "f__rolls", "Pairs the last token with the first.", [("test_f", "CheckFailure: expected 0 at [3, 0], got 1")])
    cells = [ExerciseCells("f", ["test_f", "test_f_hidden"])]
    label_failures(cells, [transposed, rolls])
    students = {"a": transposed.failures[0][1], "b": transposed.failures[0][1], "c": rolls.failures[0][1],
                "d": "CheckFailure: expected 5 at [1, 1], got 7", "e": "NameError: name 'np' is not defined"}
    lost = [Submission(GradeRow(s, "01_x", 0.0, 1.0, "ok"), messages={"test_f": m}) for s, m in students.items()]
    groups = {tuple(g["students"]): (g["mistake"], g["mutants"]) for g in failure_groups(cells[0], lost)}
    assert groups == {("a", "b"): ("Stores counts[next, previous]", ["f__transposed"]),
                      ("c",): ("Pairs the last token with the first", ["f__rolls"]),
                      ("d",): ("Pairs the last token with the first / Stores counts[next, previous]", ["f__rolls", "f__transposed"]),
                      ("e",): (None, [])}
