"""The class report as one self-contained HTML page: inline CSS, figures as embedded PNG, no script,
no request (its Content-Security-Policy forbids both, as the feedback pages' does), links to the
students' feedback pages relative to ``OUT``. Every value from the report is escaped here
(``_e``, ``_href``): a student's name, output or message shows as text, never as markup."""

from __future__ import annotations

import html
from urllib.parse import quote

from .gradebook import CSP
from .report_figures import histogram_png, lost_points_png, totals_png

STYLE = """<style>
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 1.5em auto; max-width: 70em;
       padding: 0 1em; color: #222; line-height: 1.35; }
h1 { margin-bottom: 0.2em; } h2 { margin-top: 1.6em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 0.5em 0 1em; } th, td { padding: 0.25em 0.6em; vertical-align: top; }
th { text-align: left; background: #f2f2f2; } tr + tr td { border-top: 1px solid #eee; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: 0.2em 0; font-size: 0.85em; background: #f7f7f7;
      padding: 0.3em 0.5em; max-height: 12em; overflow: auto; }
.mistake { font-weight: 600; color: #8a1c1c; } .unnamed { color: #555; font-style: italic; }
.muted { color: #666; font-size: 0.9em; } img { display: block; }
ul.groups { list-style: none; padding-left: 0; margin: 0; } ul.groups > li { margin-bottom: 0.6em; }
</style>"""


def _e(value) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _href(path: str) -> str:
    """A relative link to a file under OUT: each part percent-encoded (no scheme, no markup can form)."""
    return _e(quote(path, safe="/"))


def _points(value) -> str:
    return "–" if value is None else f"{value:g}"


def _img(png: str, alt: str) -> str:
    return f'<img src="data:image/png;base64,{png}" alt="{_e(alt)}">'


def render_page(data: dict) -> str:
    """The whole page of a report made by ``class_report.build_report``."""
    people = data["students"]
    sections = [_overview(data), *(_assignment(a) for a in data["assignments"]), _statuses(data["statuses"]),
                _students(people)]
    title = f"Class report: {len(people)} students, {len(data['assignments'])} assignment(s)"
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head>\n" + CSP + "\n<meta charset=\"utf-8\">\n"
            f"<title>{_e(title)}</title>\n{STYLE}\n</head>\n<body>\n<h1>{_e(title)}</h1>\n"
            + "\n".join(sections) + "\n</body></html>\n")


def _overview(data: dict) -> str:
    people = data["students"]
    percentages = [100 * p["total"] / p["max_score"] for p in people if p["max_score"]]
    rows = "".join(f"<tr><td>{_e(e['assignment'])}</td><td>{_e(e['exercise'])}</td>"
                   f"<td class=num>{100 * e['share_lost']:.0f}%</td><td class=num>{_points(e['lost'])}</td>"
                   f"<td class=num>{_points(e['max_points'] * e['students'])}</td></tr>" for e in data["hardest"][:10])
    parts = ["<h2>Where the class lost points</h2>",
             "<p class=muted>Over the submissions that took part: untouched, missing and unreadable notebooks are "
             "listed under each assignment and under the statuses, not counted here.</p>"]
    if data["hardest"]:
        parts.append(_img(lost_points_png(data["hardest"]), "share of the class's points lost per exercise"))
        parts.append("<table><tr><th>assignment</th><th>exercise</th><th>share lost</th><th>points lost</th><th>of</th></tr>"
                     f"{rows}</table>")
    if percentages:
        parts.append(_img(totals_png(percentages), "distribution of the students' totals"))
    return "\n".join(parts)


def _assignment(section: dict) -> str:
    head = (f"<h2 id=\"{_e(section['name'])}\">{_e(section['name'])}</h2>\n<p>{section['students']} graded submissions, "
            f"median {_points(section['median_score'])} of {_points(section['max_score'])} points. "
            "Exercises in the order of the points the class lost.</p>")
    apart = section.get("not_taking_part", [])
    if apart:
        head += ("\n<p class=muted>Not counted above (no answer ran): "
                 + ", ".join(f"{_e(a['student'])} ({_e(a['why'])})" for a in apart) + ".</p>")
    rows = "\n".join(_exercise(e) for e in section["exercises"])
    return (head + "\n<table><tr><th>exercise</th><th>points</th><th>full / partial / zero</th><th>median</th>"
            f"<th>lost</th><th>what went wrong (first failing test, grouped)</th></tr>\n{rows}\n</table>")


def _exercise(exercise: dict) -> str:
    n = exercise["students"] or 1
    shares = " / ".join(f"{exercise[k]} ({100 * exercise[k] / n:.0f}%)" for k in ("full", "partial", "zero"))
    figure = _img(histogram_png(exercise["histogram"], exercise["max_points"]),
                  "students per points: " + ", ".join(f"{v:g}: {c}" for v, c in exercise["histogram"]))
    groups = "".join(_group(g) for g in exercise["groups"]) or "<li class=muted>nobody lost points</li>"
    return (f"<tr><td><b>{_e(exercise['name'])}</b><br><span class=muted>{_points(exercise['max_points'])} points</span></td>"
            f"<td>{figure}</td><td>{shares}</td><td class=num>{_points(exercise['median'])}</td>"
            f"<td class=num>{_points(exercise['lost'])}</td><td><ul class=groups>{groups}</ul></td></tr>")


def _group(group: dict) -> str:
    students = "student" if group["count"] == 1 else "students"
    if group["mistake"]:
        name = f"<span class=mistake>{_e(group['mistake'])}</span>: {group['count']} {students}"
    else:
        name = f"<span class=unnamed>unnamed mistake</span>: {group['count']} {students}"
    examples = ", ".join(_e(s) for s in group["examples"])
    more = f" and {group['count'] - len(group['examples'])} more" if group["count"] > len(group["examples"]) else ""
    test = f" in <code>{_e(group['test'])}</code>" if group["test"] else ""
    return f"<li>{name}{test} (e.g. {examples}{more})<pre>{_e(group['message'])}</pre></li>"


def _statuses(items: list[dict]) -> str:
    if not items:
        return "<h2>Statuses</h2>\n<p>Every submission's tests ran to a verdict.</p>"
    rows = "\n".join(
        f"<tr><td>{_e(item['status'])}</td><td class=num>{item['count']}</td><td>"
        + "<br>".join(f"{_e(s['student'] or '(no student folder)')} / {_e(s['assignment'])}"
                      + (f" <span class=muted>{_e(s['detail'])}</span>" if s["detail"] else "") for s in item["submissions"])
        + "</td></tr>" for item in items)
    return ("<h2>Statuses</h2>\n<p>Submissions whose tests did not all run cleanly, or that were not graded.</p>\n"
            f"<table><tr><th>status</th><th>count</th><th>student / assignment</th></tr>\n{rows}\n</table>")


def _students(people: list[dict]) -> str:
    rows = "\n".join(_student(p) for p in people)
    return ("<h2>Students</h2>\n<table><tr><th>rank</th><th>student</th><th>total</th><th>submissions (feedback)</th>"
            f"<th>missed</th></tr>\n{rows}\n</table>")


def _student(person: dict) -> str:
    links = []
    for item in person["submissions"]:
        label = f"{_e(item['assignment'])}: {_points(item['score'])}/{_points(item['max_score'])}"
        if item["status"] != "ok":
            label += f" ({_e(item['status'])})"
        pages = item["feedback"]
        links.append(f"<a href=\"{_href(pages[0])}\">{label}</a>" if pages else label)
    missed = "<br>".join(f"{_e(m['assignment'])} {_e(m['exercise'])}: {_e(m['what'])}" for m in person["missed"])
    return (f"<tr><td class=num>{person['rank']}</td><td>{_e(person['student'])}</td>"
            f"<td class=num>{_points(person['total'])}/{_points(person['max_score'])}</td>"
            f"<td>{'<br>'.join(links)}</td><td>{missed}</td></tr>")
