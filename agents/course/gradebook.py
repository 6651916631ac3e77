"""The class's files (:func:`write_class`): a gradebook CSV, Gradescope results, a class page.

* ``DIR/gradebook.csv``: one row per student (:data:`COLUMNS`, then one column per rubric
  criterion): status, percent of optimal with its 95% CI, mean score, the exact regret and its
  keep, box and illegal parts, the upper bonus rate, failed games and failures by kind, the flags, and
  the points. A cell that a spreadsheet would read as a formula (starting with ``=``, ``+``,
  ``-``, ``@``, a tab or a carriage return) is prefixed with ``'``.
* ``DIR/<student>/results.json``: the student's result in Gradescope's autograder format (without
  the grading seed: students may see it before the deadline), for a student with a grade only (none for
  :data:`agents.course.classroom.NO_GRADE`: Gradescope would read its ``score`` as a zero)
  (``score``, ``output``, ``tests``: one per rubric criterion with ``name``, ``score``,
  ``max_score``, ``status`` and ``output``; without a rubric one test, the luck-free percent of optimal
  out of 100; ``leaderboard``: the luck-free percent of optimal, the percent of optimal, mean score,
  regret; ``extra_data``: the status and the rubric's total).
* ``DIR/index.html``: the class page, one self-contained page (no network, no script): the
  games and references, and a table of the students in the gradebook's order, each linking to their
  ``report.html``, with the luck-free percent of optimal (the bar: what the rubric's main criterion and
  the terminal rank by) before the percent of optimal;
  everything from a submission (file names, messages) HTML-escaped, in the report's style.
* ``DIR/class.json``: everything above as data, and the files of the class's folders not graded (``skipped``:
  ``path`` and ``why``, also on the class page).
"""

from __future__ import annotations

import csv
import html
import io
import json
import os
import shutil
import signal
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from agents.course.classroom import CLASS_FILES, NO_GRADE, ClassResult, StudentResult, flags, similar_to
from agents.course.grade_report import _STYLE as REPORT_STYLE
from agents.course.grader import REPORT_FILES, write_whole
from agents.course.rubric import Earned, failed_games

#: the gradebook's columns before the rubric's
COLUMNS = (
    "student",
    "file",
    "status",
    "games",
    "failed_games",
    "percent_of_optimal",
    "percent_of_optimal_ci95",
    "luck_free_percent",
    "mean",
    "mean_ci95",
    "regret",
    "regret_keep",
    "regret_box",
    "regret_illegal",
    "regret_failure",
    "upper_bonus_rate",
    "failures",
    "failure_kinds",
    "flags",
    "report",
)
#: Gradescope's per-submission file
GRADESCOPE_FILE = "results.json"
#: the files the class writes in a student's folder
STUDENT_FILES = (*REPORT_FILES, GRADESCOPE_FILE)
_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: Any) -> str:
    """A CSV cell: numbers as written, text that could start a formula prefixed with ``'``."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    text = str(value)
    return "'" + text if text.startswith(_FORMULA) else text


def _row(result: ClassResult, student: StudentResult) -> dict[str, Any]:
    """The gradebook's fields of one student (numbers stay numbers)."""
    s = student.submission
    report = student.report or {}
    row = report.get("agents", {}).get("submission") or {}
    failures = report.get("failures", {})
    earned = {e.name: e.points for e in student.earned}
    out: dict[str, Any] = {
        "student": s.student,
        "file": s.file or os.path.basename(s.path),
        "status": student.status,
        "games": report.get("games"),
        "failed_games": failed_games(report) if report else None,
        "percent_of_optimal": row.get("percent_of_optimal"),
        "percent_of_optimal_ci95": row.get("percent_of_optimal_ci95"),
        "luck_free_percent": row.get("estimated_percent_of_optimal"),
        "mean": row.get("mean"),
        "mean_ci95": row.get("ci95"),
        "regret": row.get("regret_mean"),
        "regret_keep": row.get("regret_keep_mean"),
        "regret_box": row.get("regret_box_mean"),
        "regret_illegal": row.get("regret_illegal_mean"),
        "regret_failure": row.get("regret_failure_mean"),
        "upper_bonus_rate": row.get("upper_bonus_rate"),
        "failures": failures.get("count"),
        "failure_kinds": ";".join(f"{k}:{n}" for k, n in sorted(failures.get("by_kind", {}).items()))
        or (student.error or ""),
        "flags": ";".join(
            filter(
                None,
                [flags(report), *(f"similar:{other}({share:.0%})" for other, share in similar_to(result, student))],
            )
        ),
        "report": f"{s.folder}/report.html" if student.files else "",
    }
    # not graded (an interrupted class): blank points, not zeros a spreadsheet would take for a grade
    for name, points in earned.items():
        out[f"points: {name}"] = points if student.graded else None
    if student.earned:
        out["points"] = round(sum(e.points for e in student.earned), 2) if student.graded else None
        out["max_points"] = round(sum(e.max_points for e in student.earned), 2)
    return out


def gradebook_csv(result: ClassResult) -> str:
    """The gradebook as CSV text (module docstring)."""
    columns = list(COLUMNS)
    if result.rubric is not None:
        columns += [f"points: {c.name}" for c in result.rubric.criteria] + ["points", "max_points"]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for student in result.students:
        row = _row(result, student)
        writer.writerow([_cell(row.get(column)) for column in columns])
    return buffer.getvalue()


def gradescope_results(result: ClassResult, student: StudentResult) -> dict[str, Any]:
    """One student's ``results.json`` in Gradescope's autograder format (module docstring)."""
    report = student.report or {}
    row = report.get("agents", {}).get("submission")
    if row is not None:
        output = (
            f"{row['percent_of_optimal']:.2f}% of optimal (95% CI ± {row['percent_of_optimal_ci95']:.2f}), "
            f"mean score {row['mean']:.2f} on {report['games']} games; status {student.status}."
        )
    else:
        why = student.error or student.status
        if student.status == "no_agent":  # the reason without its advice to the instructor (--class)
            why = why.split("; ")[0] + " (one agent class is graded per file: name it as the assignment asks)"
        output = f"Not scored: {why}."
    problems = report.get("problems", [])
    if problems:
        output += "\n" + "\n".join(f"Problem: {line}" for line in problems)
    earned = student.earned or [_percent_only(row)]
    tests = [
        {
            "name": e.name,
            "score": e.points,
            "max_score": e.max_points,
            "status": "passed" if e.points >= e.max_points else "failed",
            "output": e.detail,
            "visibility": "visible",
        }
        for e in earned
    ]
    out: dict[str, Any] = {
        "score": round(sum(e.points for e in earned), 2),
        "output": output,
        "tests": tests,
        "extra_data": {"status": student.status, "max_score": round(sum(e.max_points for e in earned), 2)},
    }
    if row is not None:
        leaderboard = []  # the luck-free percent first: the dice's luck (or dice known ahead) does not move it
        if row.get("estimated_percent_of_optimal") is not None:
            leaderboard.append(
                {"name": "luck-free percent of optimal", "value": round(row["estimated_percent_of_optimal"], 3)}
            )
        leaderboard.append({"name": "percent of optimal", "value": round(row["percent_of_optimal"], 3)})
        leaderboard.append({"name": "mean score", "value": round(row["mean"], 3)})
        if row.get("regret_mean") is not None:
            leaderboard.append(
                {"name": "regret (points a game)", "value": round(row["regret_mean"], 3), "order": "asc"}
            )
        out["leaderboard"] = leaderboard
    return out


def _percent_only(row: dict[str, Any] | None) -> Earned:
    """Without a rubric: one test, the luck-free percent of optimal as points out of 100 (0 unscored; the
    percent of optimal where the grading computed no regret). Neither the dice's luck nor dice known in
    advance move it (docs/grading.md, Seeds)."""
    luck_free = None if row is None else row.get("estimated_percent_of_optimal")
    if luck_free is not None:
        name, percent, what = "luck-free percent of optimal", luck_free, "% of optimal, luck-free"
    else:
        name, percent, what = "percent of optimal", 0.0 if row is None else row["percent_of_optimal"], "% of optimal"
    value = round(min(100.0, max(0.0, percent)), 2)
    return Earned(name, value, 100.0, f"{percent:.2f}{what} (no rubric: the percent is the score)")


def class_data(result: ClassResult) -> dict[str, Any]:
    """The class as JSON-ready data (``class.json``)."""
    return {
        "rules": result.rules.name,
        "rules_options": dict(result.rules.options),
        "rules_fingerprint": result.rules.fingerprint,
        "games": result.games,
        "seed": result.seed,
        "isolated": result.isolated,
        "solver": result.solver,
        "interrupted": result.interrupted,
        "optimal_expected_score": result.optimal_expected_score,
        "references": result.baselines.rows,
        "rubric": None
        if result.rubric is None
        else {
            "title": result.rubric.title,
            "max_points": result.rubric.max_points,
            "criteria": [{"name": c.name, "kind": c.kind, "points": c.points} for c in result.rubric.criteria],
        },
        "similar": [
            {
                "students": [pair.first, pair.second],
                "shares": [pair.share_first, pair.share_second],
                "shared_fingerprints": pair.shared,
            }
            for pair in result.similar
        ],
        "skipped": [{"path": skipped.path, "why": skipped.why} for skipped in result.skipped],
        "students": [
            {
                **_row(result, student),
                "folder": student.submission.folder,
                "spec": student.submission.spec,
                "error": student.error,
                "earned": [e.__dict__ for e in student.earned],
            }
            for student in result.students
        ],
    }


def _fmt(value: float | None, digits: int = 2, suffix: str = "") -> str:
    return "n/a" if value is None else f"{value:.{digits}f}{suffix}"


_CLASS_STYLE = ".bar{display:inline-block;height:.7rem;background:#0969da;vertical-align:middle;margin-right:.4rem}"


def _similar_html(result: ClassResult) -> str:
    """The class page's pairs of similar submissions (nothing when there are none)."""
    if not result.similar:
        return ""
    e = html.escape
    names = {s.submission.folder: s for s in result.students}

    def who(folder: str) -> str:
        student = names[folder]
        path = e(student.submission.file or os.path.basename(student.submission.path))
        return f'<a href="{e(quote(folder))}/report.html">{path}</a>' if student.files else path

    rows = "".join(
        f"<tr><td>{who(p.first)}</td><td>{who(p.second)}</td>"
        f'<td class="num">{p.share_first:.0%}</td><td class="num">{p.share_second:.0%}</td></tr>'
        for p in result.similar
    )
    return (
        "<h2>Similar code</h2><p>Pairs of submissions that share much of their code once names, comments and "
        "layout are set aside (and the starter code given to everyone, when named): a hint to read the two files, "
        "not a verdict.</p><table><tr><th>file</th><th>file</th><th>of the first in the second</th>"
        f"<th>of the second in the first</th></tr>{rows}</table>"
    )


def render_class_html(result: ClassResult) -> str:
    """The class page (module docstring)."""
    e = html.escape
    rules = result.rules
    options = f", options <code>{e(json.dumps(dict(rules.options), sort_keys=True))}</code>" if rules.options else ""
    isolation = "each submission isolated" if result.isolated else "UNISOLATED (trusted code only)"
    body = [
        f"<h1>Class grades: {e(rules.title)}</h1>",
        f"<p>{e(rules.title)} (<code>{e(rules.name)}</code>{options}), {result.games} games per agent, seed "
        f"{result.seed}, {len(result.students)} submissions, {e(isolation)}"
        + (f"; rubric <strong>{e(result.rubric.title or 'rubric')}</strong>" if result.rubric else "")
        + ".</p>",
    ]
    if result.interrupted:
        body.append('<p class="problem">The grading was interrupted: some students are not (fully) graded.</p>')
    body.append(
        "<h2>References</h2><table><tr><th>agent</th><th>mean (95% CI)</th><th>percent of optimal</th></tr>"
        f'<tr><td>optimal expected score</td><td class="num">{result.optimal_expected_score:.2f}</td>'
        '<td class="num">100.0%</td></tr>'
    )
    for name, row in result.baselines.rows.items():
        body.append(
            f'<tr><td>{e(name)}</td><td class="num">{_fmt(row["mean"])} ± {_fmt(row["ci95"])}</td>'
            f'<td class="num">{_fmt(row["percent_of_optimal"], 1, "%")}</td></tr>'
        )
    body.append("</table>")
    head = (
        "<th>student</th><th>status</th><th>luck-free percent of optimal</th><th>percent of optimal (95% CI)</th>"
        "<th>mean</th><th>regret: keeps</th><th>boxes</th><th>illegal and failed</th><th>upper bonus</th>"
        "<th>failed games</th>"
    )
    if result.rubric is not None:
        head += f"<th>points (of {result.rubric.max_points:g})</th>"
    body.append(f'<h2>Students</h2><table id="students"><tr>{head}</tr>')
    for student in result.students:
        row = _row(result, student)
        name = e(student.submission.student)
        link = f'<a href="{e(quote(student.submission.folder))}/report.html">{name}</a>' if student.files else name
        percent, luck_free = row["percent_of_optimal"], row["luck_free_percent"]
        barred = luck_free if luck_free is not None else percent  # the grade's measure: no luck of the dice in it
        bar = (
            f'<span class="bar" style="width:{max(0.0, min(barred, 100.0)) * 0.8:.1f}px"></span>'
            if barred is not None
            else ""
        )
        status = e(student.status) + (f'<br><span class="problem">{e(student.error)}</span>' if student.error else "")
        if row["flags"]:
            status += f'<br><span class="problem">{e(row["flags"].replace(";", ", "))}</span>'
        bonus = row["upper_bonus_rate"]
        cells = [
            link,
            status,
            (bar if luck_free is not None else "") + _fmt(luck_free, 1, "%"),
            (bar if luck_free is None else "")
            + _fmt(percent, 1, "%")
            + (f" ± {row['percent_of_optimal_ci95']:.1f}" if row["percent_of_optimal_ci95"] is not None else ""),
            _fmt(row["mean"]),
            _fmt(row["regret_keep"]),
            _fmt(row["regret_box"]),
            _fmt(
                None
                if row["regret_illegal"] is None and row["regret_failure"] is None
                else (row["regret_illegal"] or 0.0) + (row["regret_failure"] or 0.0)
            ),
            _fmt(None if bonus is None else 100 * bonus, 1, "%"),
            "n/a" if row["failed_games"] is None else f"{row['failed_games']} of {row['games']}",
        ]
        if result.rubric is not None:
            detail = "; ".join(f"{x.name}: {x.points:g}/{x.max_points:g}" for x in student.earned)
            shown = "not graded" if row.get("points") is None else f"{row['points']:g}"
            cells.append(f'<span title="{e(detail)}">{shown}</span>')
        body.append(
            f'<tr data-student="{e(student.submission.folder)}">'
            + "".join(f"<td>{cell}</td>" if i < 2 else f'<td class="num">{cell}</td>' for i, cell in enumerate(cells))
            + "</tr>"
        )
    body.append("</table>")
    body.append(_similar_html(result))
    if result.skipped:
        items = "".join(f"<li><code>{e(s.path)}</code>: {e(s.why)}</li>" for s in result.skipped)
        body.append(f"<h2>Not graded</h2><p>Files of the class's folders that are not submissions:</p><ul>{items}</ul>")
    body.append(
        "<p>Each student's report (percent of optimal, the exact regret, the costliest mistakes, failures "
        'and a replay of every game) is linked from their name; <a href="gradebook.csv">gradebook.csv</a> holds '
        'this table, <a href="class.json">class.json</a> all of it as data, '
        "<code>&lt;student&gt;/results.json</code> the Gradescope results.</p>"
    )
    title = f"Class grades: {rules.title}"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(title)}</title><style>{REPORT_STYLE}{_CLASS_STYLE}</style></head><body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )


def write_class(result: ClassResult, out: str | os.PathLike) -> list[Path]:
    """Write the class files and each graded student's Gradescope ``results.json`` (module docstring), each whole."""
    out = Path(out)
    written = []
    for student in result.students:
        if student.status in NO_GRADE:  # no grade, no score: Gradescope would take one of 0 for a grade
            continue
        folder = out / student.submission.folder
        folder.mkdir(parents=True, exist_ok=True)
        text = json.dumps(gradescope_results(result, student), indent=1, sort_keys=True) + "\n"
        written.append(write_whole(folder / GRADESCOPE_FILE, text))
    written.append(write_whole(out / "gradebook.csv", gradebook_csv(result)))
    written.append(write_whole(out / "index.html", render_class_html(result)))
    written.append(write_whole(out / "class.json", json.dumps(class_data(result), indent=1, sort_keys=True) + "\n"))
    return written


# ------------------------------------------------------------------ an earlier grade in the folder
def _named_folders(out: Path) -> set[str]:
    """The students' folders ``out``'s ``class.json`` names (plain names only; none where it cannot be read)."""
    try:
        earlier = json.loads((out / "class.json").read_text())
        names = {str(student["folder"]) for student in earlier["students"]}
    except (OSError, ValueError, KeyError, TypeError):
        return set()
    return {name for name in names if name not in ("", ".", "..") and "/" not in name and os.sep not in name}


def class_folders(out: Path) -> set[str]:
    """The students' folders an earlier grade of a class wrote in ``out`` (from its ``class.json``): only folders
    of ``out`` that hold a report or a ``results.json``, so that nothing else is ever removed."""
    return {name for name in _named_folders(out) if any((out / name / file).is_file() for file in STUDENT_FILES)}


def student_folder_problem(out: Path, single: bool) -> str | None:
    """Why ``--out`` cannot take a grade (``single``: one report; else a class), or ``None``.

    A student's folder of a class (named by its parent's ``class.json``) would hold a report unlike the
    gradebook's row and the ``results.json`` beside it; a class's folder would get a report beside its
    gradebook (one report only).
    """
    again = "; to regrade a resubmission, grade it into another folder (or grade the class again)"
    if single:
        held = [name for name in CLASS_FILES if (out / name).exists()]
        if held:
            return f"--out {out}: holds a class's grades ({', '.join(held)}): one report does not go there{again}"
    parent = out.resolve().parent
    if out.resolve() != parent and out.resolve().name in _named_folders(parent):
        return f"--out {out}: is a student's folder of the class graded in {out.parent}{again}"
    return None


def replace_class(new: Path, out: Path, gone: Sequence[str]) -> set[signal.Signals]:
    """Move a complete class grade written in ``new`` into ``out``, over an earlier one: each student's
    :data:`STUDENT_FILES` replace those in their folder (one this grade did not write goes: the old report of a
    student who is ``no_agent`` now, every file of one the grader failed on), then the class files; the folders
    ``gone`` (students of the earlier grade no longer in the class, :func:`class_folders`) go, and so does
    ``new``. Ctrl-C and SIGTERM wait until it is done, so that ``out`` never holds two grades at once; those that
    came are returned (taken: the class is complete)."""
    # every student of the new grade: a staged folder, or none (the grader failed on them: ``error``, no files),
    # whose earlier report and results.json must go all the same
    students = {path.name for path in new.iterdir() if path.is_dir()} | _named_folders(new)
    arrived: set[signal.Signals] = set()

    def hold(number: int, frame: object) -> None:  # (a Python handler: whichever thread the kernel picks)
        arrived.add(signal.Signals(number))

    previous = {number: signal.signal(number, hold) for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        for student in sorted(students):
            (out / student).mkdir(exist_ok=True)
            for name in STUDENT_FILES:
                if (new / student / name).is_file():
                    os.replace(new / student / name, out / student / name)
                else:
                    (out / student / name).unlink(missing_ok=True)
        for name in CLASS_FILES:
            os.replace(new / name, out / name)
        for name in gone:
            shutil.rmtree(out / name, ignore_errors=True)
        shutil.rmtree(new, ignore_errors=True)
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    return arrived
