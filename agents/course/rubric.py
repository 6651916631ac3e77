"""A grading rubric: the points a grade report (:func:`agents.course.grader.grade`) earns.

A rubric is a TOML file (``examples/course/instructor/rubric.toml``; the format in ``docs/grading.md``)
with a list of criteria, each worth some points::

    title = "Assignment 3: an agent for Yahtzee"

    [[criterion]]
    name = "legal play"
    kind = "legal_play"          # every game played without a failure
    points = 10

    [[criterion]]
    name = "percent of optimal"
    kind = "percent_of_optimal"
    points = 70
    curve = "linear"             # or "steps"
    thresholds = [[80, 0.0], [90, 0.5], [100, 1.0]]   # [percent, fraction of the points]

The kinds (:data:`KINDS`):

* ``legal_play``: the games that ended without a failure of the submission. With
  ``partial = true`` (the default) the points are proportional to the games that did not
  fail (190 of 200 games: 95% of the points); ``partial = false``: all or nothing.
* ``beats_greedy``: the submission's luck-free expected score (the optimal expected score
  minus its exact regret) is above the greedy agent's by more than ``margin`` points (default
  0); all or nothing. Without regret figures, the mean scores on the same games.
* ``percent_of_optimal``: the mean score in percent of the optimal expected score, through
  the criterion's ``thresholds`` (below).
* ``luck_free_percent``: the luck-free percent of optimal, 100 x (optimal expected score -
  exact regret) / optimal expected score, through the ``thresholds``: the dice's luck is
  out of it (a grade of 2,000 games moves less), and so is what an agent that learnt the
  dice in advance (a guessed grading seed) would score beyond its play's worth.
* ``upper_bonus``: the percent of games in which the upper bonus was secured, through the
  ``thresholds`` (a ruleset without an upper bonus earns the criterion's full points).

``thresholds`` are ``[value, fraction]`` pairs with increasing values and fractions
between 0 and 1; the values are percents (0 to 100), and a criterion whose values are all at most 1
(fractions, as the gradebook's ``upper_bonus_rate``) is refused: ``curve = "linear"`` (the default) interpolates between them and holds
the end fractions outside; ``curve = "steps"`` gives the fraction of the highest value
reached (0 below the first).

Failed games count in the performance criteria as the report counts them (the points
written before the failure; games no longer asked for score 0), so a failure that affects
only some games costs only the points those games lose there. A submission that did not
load, or a grading interrupted before any score, earns 0 points on every criterion.
Rules are pure functions of the report: :func:`score_report`.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

#: the criterion kinds and whether each uses ``thresholds``
KINDS = {
    "legal_play": False,
    "beats_greedy": False,
    "percent_of_optimal": True,
    "luck_free_percent": True,
    "upper_bonus": True,
}
#: the curves of a criterion with thresholds
CURVES = ("linear", "steps")
#: the keys a criterion may have
CRITERION_KEYS = ("name", "kind", "points", "thresholds", "curve", "partial", "margin")


@dataclass(frozen=True)
class Criterion:
    """One line of a rubric (module docstring).

    Attributes:
        name: shown in the gradebook and to the student.
        kind: one of :data:`KINDS`.
        points: the most it earns (> 0).
        thresholds: ``(value, fraction)`` pairs, values increasing (kinds with thresholds).
        curve: ``linear`` or ``steps``.
        partial: ``legal_play``: points proportional to the games without a failure.
        margin: ``beats_greedy``: points the score must exceed the greedy agent's by.
    """

    name: str
    kind: str
    points: float
    thresholds: tuple[tuple[float, float], ...] = ()
    curve: str = "linear"
    partial: bool = True
    margin: float = 0.0


@dataclass(frozen=True)
class Rubric:
    """A rubric: a title and its criteria."""

    title: str
    criteria: tuple[Criterion, ...]

    @property
    def max_points(self) -> float:
        """The points of a perfect submission."""
        return float(sum(c.points for c in self.criteria))


@dataclass(frozen=True)
class Earned:
    """What one criterion gave a submission: ``points`` of ``max_points``, and why (one line)."""

    name: str
    points: float
    max_points: float
    detail: str


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def parse_rubric(data: dict[str, Any], source: str = "rubric") -> Rubric:
    """A :class:`Rubric` from the TOML's table, checked.

    Raises:
        ValueError: one line naming the problem (``source`` and the criterion).
    """
    unknown = sorted(set(data) - {"title", "criterion"})
    if unknown:
        raise ValueError(f"{source}: unknown key(s) {', '.join(unknown)}; expected title and [[criterion]]")
    title = data.get("title", "")
    if not isinstance(title, str):
        raise ValueError(f"{source}: title must be a string")
    items = data.get("criterion")
    if not isinstance(items, list) or not items:
        raise ValueError(f"{source}: no [[criterion]]: a rubric needs at least one")
    criteria = []
    for number, item in enumerate(items, 1):
        where = f"{source}: criterion {number}"
        if not isinstance(item, dict):
            raise ValueError(f"{where}: must be a table")
        bad = sorted(set(item) - set(CRITERION_KEYS))
        if bad:
            raise ValueError(f"{where}: unknown key(s) {', '.join(bad)}; known: {', '.join(CRITERION_KEYS)}")
        name, kind = item.get("name"), item.get("kind")
        points: Any = item.get("points")
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"{where}: name must be a non-empty string")
        where = f"{source}: criterion {name!r}"
        if kind not in KINDS:
            raise ValueError(f"{where}: kind must be one of {', '.join(KINDS)}, got {kind!r}")
        if not _number(points) or points <= 0:
            raise ValueError(f"{where}: points must be a number > 0, got {points!r}")
        curve = item.get("curve", "linear")
        if curve not in CURVES:
            raise ValueError(f"{where}: curve must be one of {', '.join(CURVES)}, got {curve!r}")
        partial = item.get("partial", True)
        if not isinstance(partial, bool):
            raise ValueError(f"{where}: partial must be true or false, got {partial!r}")
        margin = item.get("margin", 0.0)
        if not _number(margin):
            raise ValueError(f"{where}: margin must be a number, got {margin!r}")
        thresholds = _thresholds(item.get("thresholds"), where) if KINDS[kind] else ()
        if thresholds and all(value <= 1 for value, _ in thresholds):
            written = ", ".join(f"[{100 * value:g}, {fraction:g}]" for value, fraction in thresholds)
            raise ValueError(
                f"{where}: a {kind} criterion's threshold values are percents (0 to 100), and every one given is "
                f"at most 1, as if written as fractions (the gradebook's upper_bonus_rate is one); write "
                f"thresholds = [{written}]"
            )
        if not KINDS[kind] and "thresholds" in item:
            raise ValueError(f"{where}: a {kind} criterion takes no thresholds")
        criteria.append(Criterion(name, kind, float(points), thresholds, curve, partial, float(margin)))
    names = [c.name for c in criteria]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"{source}: criteria must have distinct names; given more than once: {', '.join(twice)}")
    return Rubric(title, tuple(criteria))


def _thresholds(value: Any, where: str) -> tuple[tuple[float, float], ...]:
    shape = "thresholds must be a list of [value, fraction] pairs"
    if not isinstance(value, list) or not value:
        raise ValueError(f"{where}: {shape}, got {value!r}")
    pairs = []
    for pair in value:
        if not (isinstance(pair, list) and len(pair) == 2 and all(_number(x) for x in pair)):
            raise ValueError(f"{where}: {shape}, got {pair!r}")
        if not 0 <= pair[1] <= 1:
            raise ValueError(f"{where}: a threshold's fraction must be between 0 and 1, got {pair[1]!r}")
        pairs.append((float(pair[0]), float(pair[1])))
    if any(b[0] <= a[0] for a, b in zip(pairs, pairs[1:])):
        raise ValueError(f"{where}: the thresholds' values must increase")
    return tuple(pairs)


def load_rubric(path: str | os.PathLike) -> Rubric:
    """Read a rubric file (TOML, module docstring).

    Raises:
        ValueError: not readable, not TOML, or not a rubric (one line naming the problem).
    """
    from agents.course.grader import read_toml

    data = read_toml(path, "--rubric")
    return parse_rubric(data, f"--rubric {path}")


def curve_fraction(value: float, thresholds: tuple[tuple[float, float], ...], curve: str = "linear") -> float:
    """The fraction of a criterion's points ``value`` earns through ``thresholds`` (module docstring)."""
    if curve == "steps":
        reached = [fraction for at, fraction in thresholds if value >= at]
        return reached[-1] if reached else 0.0
    if value <= thresholds[0][0]:
        return thresholds[0][1]
    for (x0, y0), (x1, y1) in zip(thresholds, thresholds[1:]):
        if value <= x1:
            return y0 + (y1 - y0) * (value - x0) / (x1 - x0)
    return thresholds[-1][1]


def failed_games(report: dict[str, Any]) -> int:
    """The games of a report that a failure of the submission affected: each failed game, and every game
    after it stopped being asked (they score 0); all of them when it did not load."""
    games = int(report["games"])
    if report["status"] == "not_loaded":
        return games
    failures = report["failures"]
    stopped = failures.get("stopped_at_game")
    count = int(failures["count"]) + (games - int(stopped) - 1 if stopped is not None else 0)
    return min(games, count)


def curve_text(criterion: Criterion) -> str:
    """The criterion's curve in words, for a student reading the points: ``"points: 0 at 60, 75% at 85,
    all at 95, linear between"``."""
    parts = [f"{'0' if f == 0 else 'all' if f == 1 else f'{100 * f:g}%'} at {v:g}" for v, f in criterion.thresholds]
    how = "linear between" if criterion.curve == "linear" else "the step reached"
    return f"points: {', '.join(parts)}, {how}"


def score_report(rubric: Rubric, report: dict[str, Any]) -> list[Earned]:
    """The points each criterion of ``rubric`` gives ``report`` (a grade report's dict)."""
    row = report["agents"].get("submission")
    games = int(report["games"])
    if row is None or report.get("interrupted"):
        why = "did not load" if report["status"] == "not_loaded" else "the grading was interrupted"
        return [Earned(c.name, 0.0, c.points, f"no score: {why}") for c in rubric.criteria]
    failed = failed_games(report)
    out = []
    for c in rubric.criteria:
        if c.kind == "legal_play":
            clean = games - failed
            fraction = clean / games if c.partial else float(failed == 0)
            detail = f"{clean} of {games} games without a failure" + (
                " (points proportional to them)" if c.partial and failed else ""
            )
        elif c.kind == "beats_greedy":
            greedy_row = report["agents"]["greedy"]
            margin = f" + {c.margin:g}" if c.margin else ""
            mine, theirs = row.get("estimated_expected_score"), greedy_row.get("estimated_expected_score")
            if mine is not None and theirs is not None:  # what the play is worth: no luck of the dice in it
                fraction = float(mine > theirs + c.margin)
                detail = f"luck-free expected score {mine:.2f} against greedy's {theirs:.2f}{margin}"
            else:  # no regret computed: the mean scores on the same games
                fraction = float(row["mean"] > greedy_row["mean"] + c.margin)
                detail = f"mean {row['mean']:.2f} against greedy's {greedy_row['mean']:.2f}{margin}"
        elif c.kind == "percent_of_optimal":
            value = row["percent_of_optimal"]
            fraction = curve_fraction(value, c.thresholds, c.curve)
            detail = f"{value:.2f}% of optimal; {curve_text(c)}"
        elif c.kind == "luck_free_percent":
            value = row.get("estimated_percent_of_optimal")
            if value is None:
                fraction, detail = 0.0, "no luck-free percent (the grading computed no regret)"
            else:
                fraction = curve_fraction(value, c.thresholds, c.curve)
                detail = f"{value:.2f}% of optimal, luck-free; {curve_text(c)}"
        else:  # upper_bonus
            rate = row.get("upper_bonus_rate")
            if rate is None:
                fraction, detail = 1.0, "this ruleset has no upper bonus"
            else:
                fraction = curve_fraction(100.0 * rate, c.thresholds, c.curve)
                detail = f"upper bonus in {100.0 * rate:.1f}% of games; {curve_text(c)}"
        out.append(Earned(c.name, round(c.points * fraction, 2), c.points, detail))
    return out
