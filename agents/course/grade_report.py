"""Render a grade report (:func:`agents.course.grader.grade`) as text, Markdown and one self-contained HTML page.

The HTML page needs no server and no network: its styles, pictures (inline SVG) and
script are in the file, and the games are embedded as JSON. It shows the headline
(percent of optimal with its 95% confidence interval), the comparison with the
optimal and greedy agents, the exact regret split into keep and box decisions, the
costliest mistakes with a picture of the dice and the better move, the score
distribution against optimal, every failure of the submission with its traceback,
and a replay of any graded game, move by move: the dice (held dice marked), the
scorecard with the upper subtotal and what the upper bonus still needs, the move made,
the solver's best move and the points lost, and on demand the best actions with their
expected final scores (:mod:`agents.course.replay`); each costliest mistake links to its
move (``#replay-game-G-move-M``), and buttons or keys step from mistake to mistake.

Everything that comes from the submission (its file name, names, messages, tracebacks,
printed output) is escaped: in HTML by :func:`html.escape`; in Markdown by :func:`md_text`
(HTML's special characters as entities, Markdown's punctuation backslash-escaped, one
line) and :func:`md_fence` (a code fence longer than any run of backticks in the text).

Size: one report in its three renderings (terminal, Markdown, the HTML page with its replay script), which
must show the same figures worded the same way (the regret's parts, the luck note, the numbering), so they
share their helpers here.
"""

from __future__ import annotations

import html
import json
import math
import re
from typing import Any

from dice_poker_env.engine.combinatorics import kept_dice
from dice_poker_env.envs.render_image import PIPS  # the pip layout has one owner

N_KEEP_ACTIONS = 32


def _pct(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}%"


def _num(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def describe(action: int | None, dice: str, box_names: list[str], points: int | None = None) -> str:
    """``keep 2-2-6``, ``reroll all``, ``score full house``, ``scratch yahtzee (0 points)`` or ``illegal
    action 99`` for an action on sorted dice (``points``: what a score action wrote, when known)."""
    if action is None:
        return "n/a"
    if action < 0 or action >= N_KEEP_ACTIONS + len(box_names) or action == N_KEEP_ACTIONS - 1:
        return f"illegal action {action}"
    if action >= N_KEEP_ACTIONS:
        box = box_names[action - N_KEEP_ACTIONS].replace("_", " ")
        if points is None:
            return f"score {box}"
        return (
            f"scratch {box} (0 points)" if points == 0 else f"score {box} ({points} point{'' if points == 1 else 's'})"
        )
    kept = kept_dice(dice, action)
    return f"keep {'-'.join(kept)}" if kept else "reroll all"


#: the parts of the exact regret, as the report names them: (label, field of the benchmark's row)
REGRET_PARTS = (
    ("keeps", "regret_keep_mean"),
    ("boxes", "regret_box_mean"),
    ("illegal actions", "regret_illegal_mean"),
    ("failed games", "regret_failure_mean"),
)

#: what the two percents mean (the report's explanation of the luck in the dice)
LUCK_NOTE = (
    "Percent of optimal is the mean score of these games over the optimal expected score: the dice of a finite "
    "set of games can be kinder than average, so it can exceed 100% (the optimal agent's own row shows how lucky "
    "these games were). The luck-free percent is 100 × (optimal expected score − exact regret) / optimal expected "
    "score: it counts only the expected points the decisions lost, which the dice cannot change, so it never "
    "exceeds 100% (100% is optimal play)."
)


def split_shown(parts: list[float], digits: int = 2) -> tuple[str, list[str]]:
    """``parts`` and their total, each rounded to ``digits`` decimals so that the parts shown add up to the
    total shown (the largest remainders round up)."""
    scale = 10**digits
    exact = [max(float(p), 0.0) * scale for p in parts]
    total = round(sum(exact))
    shown = [math.floor(x) for x in exact]
    for i in sorted(range(len(exact)), key=lambda i: shown[i] - exact[i])[: max(total - sum(shown), 0)]:
        shown[i] += 1
    text = lambda cents: f"{cents / scale:.{digits}f}"  # noqa: E731
    return text(total), [text(c) for c in shown]


def regret_split(row: dict[str, Any]) -> tuple[str, list[tuple[str, str]]] | None:
    """The exact regret of a benchmark row and its parts, as shown: ``("12.34", [("keeps", "8.00"), ...])``;
    None without a regret. The parts add up to the total, both as numbers and as shown."""
    if row.get("regret_mean") is None:
        return None
    total, parts = split_shown([row.get(field) or 0.0 for _, field in REGRET_PARTS])
    return total, [(label, part) for (label, _), part in zip(REGRET_PARTS, parts)]


def _split_text(split: tuple[str, list[tuple[str, str]]]) -> str:
    return ", ".join(f"{label} {value}" for label, value in split[1])


def _lucky(report: dict[str, Any], agents: tuple[str, ...] | None = None) -> bool:
    """Whether some agent's (of ``agents``, default all) percent of optimal is above 100 (luck in the dice)."""
    rows = [row for name, row in report["agents"].items() if agents is None or name in agents]
    return any((row.get("percent_of_optimal") or 0.0) > 100.0 for row in rows)


def failure_where(failure: dict[str, Any]) -> str:
    """``game 3, decision 7``, ``game 3, at its start`` or ``loading``: numbered from 1."""
    if failure["game"] < 0:
        return "loading"
    at = f"decision {failure['decision'] + 1}" if failure["decision"] >= 0 else "at its start"
    return f"game {failure['game'] + 1}, {at}"


def _headline(report: dict[str, Any]) -> dict[str, Any]:
    row = report["agents"].get("submission")
    if row is None:
        return {"percent": 0.0, "ci": 0.0, "mean": 0.0, "ci95": 0.0, "luck_free": None, "split": None}
    return {
        "percent": row["percent_of_optimal"],
        "ci": row["percent_of_optimal_ci95"],
        "mean": row["mean"],
        "ci95": row["ci95"],
        "luck_free": row.get("estimated_percent_of_optimal"),
        "split": regret_split(row),
    }


def _limits(report: dict[str, Any]) -> str:
    """The submission's limits in a sentence (``""`` where the report has none)."""
    limits = report.get("limits") or {}
    parts = [
        ("decision_seconds", "{:g} s a decision"),
        ("game_seconds", "{:g} s a game"),
        ("load_seconds", "{:g} s to load"),
        ("total_seconds", "{:g} s in all"),
        ("memory_mb", "{:g} MiB of memory"),
        ("output_kb", "{:g} KiB of output"),
        ("max_failures", "{:g} failed games"),
    ]
    said = [text.format(limits[key]) for key, text in parts if isinstance(limits.get(key), (int, float))]
    return f" Limits: {', '.join(said)}." if said else ""


def _isolation(report: dict[str, Any]) -> str:
    """``Isolated (bubblewrap 0.8.0, seccomp)`` or ``UNISOLATED``."""
    isolation = report.get("isolation") or {}
    if isolation.get("isolated"):
        return f"Isolated ({isolation.get('method', 'bubblewrap')})"
    return "UNISOLATED" if isolation else "Isolation not recorded"


# ------------------------------------------------------------------ text and Markdown
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~])")


def md_text(value: Any) -> str:
    """``value`` as inert Markdown text on one line: no HTML, no links, no emphasis, no table cells."""
    text = " ".join(str(value).split())
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", text)


def md_fence(text: str, info: str = "text") -> list[str]:
    """``text`` as a fenced code block whose fence no line of it can close."""
    longest = max((len(run) for run in re.findall(r"`+|~+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + info, text.rstrip("\n"), fence]


#: control characters, and the bidirectional controls that reorder what a terminal shows (U+202E makes
#: ``evil\u202eyp.txt`` read ``eviltxt.py``)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def summary_text(report: dict[str, Any]) -> str:
    """A few lines for the terminal (control characters, e.g. escape sequences, replaced by ``?``)."""
    return "\n".join(_CONTROL.sub("?", line) for line in _summary(report).split("\n"))


def summary_text_line(line: str) -> str:
    """One line for the terminal: control characters (escape sequences, line breaks) replaced by ``?``."""
    return _CONTROL.sub("?", line)


def _summary(report: dict[str, Any]) -> str:
    head = _headline(report)
    lines = [
        f"{report['submission']} on {report['rules']} ({report['games']} games, seed {report['seed']}): "
        f"{_pct(head['percent'])} of optimal (95% CI ± {_num(head['ci'], 1)})"
        + (f"; luck-free {_pct(head['luck_free'], 2)}" if head["luck_free"] is not None else ""),
        f"mean score {_num(head['mean'])} ± {_num(head['ci95'])}; optimal expected {_num(report['optimal_expected_score'])}",
    ]
    if head["split"] is not None:
        lines.append(f"exact regret {head['split'][0]} points a game: {_split_text(head['split'])}")
    failed = report["agents"].get("submission", {}).get("failed_games") or {}
    if failed:
        detail = ", ".join(f"{count} {kind}" for kind, count in failed.items())
        lines.append(
            f"failed games {sum(failed.values())} ({detail}); illegal actions "
            f"{report['agents']['submission']['illegal_actions']}"
        )
    if _lucky(report, ("submission",)):  # the only agent this summary shows
        lines.append(
            "note: a percent of optimal above 100 is luck in the dice (the mean of finitely many games can "
            "exceed the optimal expectation); the luck-free percent (optimal - regret) cannot"
        )
    lines += [f"problem: {line}" for line in report["problems"]]
    return "\n".join(lines)


#: the regret parts in a sentence
_REGRET_WORDS = {
    "keeps": "in keep decisions",
    "boxes": "in box choices",
    "illegal actions": "by illegal actions",
    "failed games": "in games a failure ended",
}


def _regret_cells(row: dict[str, Any]) -> list[str]:
    """The table's regret, keeps, boxes, illegal-actions and failed-games cells (parts that add up as shown;
    the counts of illegal actions and failed games beside their points)."""
    split = regret_split(row)
    values = [split[0], *(value for _, value in split[1])] if split is not None else ["n/a"] * 5
    failed = sum((row.get("failed_games") or {}).values())
    values[3] += f" ({row['illegal_actions']})"
    values[4] += f" ({failed})"
    return values


def _dice_text(dice: list[int] | str) -> str:
    faces = "⚀⚁⚂⚃⚄⚅"
    return " ".join(faces[int(d) - 1] for d in dice) + f" ({'-'.join(str(d) for d in dice)})"


def render_markdown(report: dict[str, Any]) -> str:
    """The report as Markdown."""
    head = _headline(report)
    out = [
        f"# Grade report: {md_text(report['submission'])}",
        "",
        f"{md_text(report['rules_title'])} ({md_text(report['rules'])}"
        + (
            f", options `{json.dumps(report['rules_options'], sort_keys=True).replace('`', '')}`"
            if report["rules_options"]
            else ""
        )
        + f"), {report['games']} games, seed {report['seed']}. {_isolation(report)}.{_limits(report)}",
        "",
        f"**{_pct(head['percent'])} of optimal** (95% CI ± {_num(head['ci'], 1)}): mean score "
        f"{_num(head['mean'])} ± {_num(head['ci95'])}, optimal expected score {_num(report['optimal_expected_score'])}."
        + (f" Luck-free: **{_pct(head['luck_free'], 2)}**." if head["luck_free"] is not None else ""),
        "",
    ]
    if head["split"] is not None:
        out += [
            f"Exact regret: **{head['split'][0]}** expected points lost a game: "
            + ", ".join(f"{value} {_REGRET_WORDS[label]}" for label, value in head["split"][1])
            + ".",
            "",
        ]
    out += [md_text(LUCK_NOTE), ""]
    if report["problems"]:
        out += ["## Problems", ""] + [f"* {md_text(line)}" for line in report["problems"]] + [""]
    out += [
        "## Compared with the optimal and greedy agents",
        "",
        "| agent | mean (95% CI) | percent of optimal | luck-free percent | regret | keeps | boxes "
        "| illegal actions | failed games |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, row in report["agents"].items():
        cells = _regret_cells(row)
        out.append(
            f"| {md_text(name)} | {_num(row['mean'])} ± {_num(row['ci95'])} | {_pct(row['percent_of_optimal'])} "
            f"| {_pct(row.get('estimated_percent_of_optimal'), 2)} | " + " | ".join(cells) + " |"
        )
    out.append("")
    mistakes = report["agents"].get("submission", {}).get("mistakes", [])
    if mistakes:
        out += [
            "## Costliest mistakes",
            "",
            "| mistake | points lost a game | times a game | worst example |",
            "|---|---|---|---|",
        ]
        for m in mistakes:
            ex = m["worst_example"]
            out.append(
                f"| {m['mistake']} | {m['loss_per_game']:.2f} | {m['count_per_game']:.2f} | "
                f"{_dice_text(ex['dice'])}, {ex['rolls_left']} reroll(s) left: {ex['taken']}; better "
                f"{ex['best']} (-{ex['loss']:.2f}) |"
            )
        out.append("")
    dist = report["score_distribution"]
    if dist["counts"]:
        names = list(dist["counts"])
        out += ["## Score distribution", "", "| score | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
        for i, low in enumerate(dist["edges"][:-1]):
            if not any(dist["counts"][n][i] for n in names):
                continue  # (an empty bin is no row: a few far scores would otherwise add dozens of zero rows)
            out.append(
                f"| {low}-{low + dist['bin_width'] - 1} | "
                + " | ".join(str(dist["counts"][n][i]) for n in names)
                + " |"
            )
        out.append("")
    failures = report["failures"]["recorded"]
    if failures:
        out += ["## Failures", ""]
        for f in failures:
            out += [f"### {md_text(f['kind'])} ({failure_where(f)})", "", md_text(f["message"]), ""]
            if f["traceback"]:
                out += [*md_fence(f["traceback"]), ""]
    if report["stdout"]["bytes"]:
        out += [
            "## Standard output",
            "",
            f"{report['stdout']['bytes']} bytes; the start:",
            "",
            *md_fence(report["stdout"]["sample"]),
            "",
        ]
    if _stderr_bytes(report):
        out += ["## Standard error", "", _stderr_text(report), ""]
    return "\n".join(out).rstrip("\n") + "\n"


def _stderr_bytes(report: dict[str, Any]) -> int:
    """The bytes the submission wrote to standard error (0 in a report from before they were recorded)."""
    return int((report.get("stderr") or {}).get("bytes") or 0)


def _stderr_text(report: dict[str, Any]) -> str:
    """What the submission wrote to standard error, in a sentence (the pages say it alike)."""
    limit = (report.get("limits") or {}).get("output_kb")
    of = f" of {limit:g} KiB" if isinstance(limit, (int, float)) else ""
    return (
        f"{_stderr_bytes(report)} bytes, not kept; they count toward the output limit{of} "
        "(standard output and error each), past which every game fails."
    )


# ------------------------------------------------------------------ HTML
def dice_svg(dice: list[int] | str, held: int = 0, best_held: int | None = None, size: int = 34) -> str:
    """Inline SVG of the dice; dice whose bit is set in ``held`` are filled, in ``best_held`` outlined in green."""
    gap = size // 5
    width = 5 * size + 4 * gap
    parts = [
        f'<svg class="dice" width="{width}" height="{size}" viewBox="0 0 {width} {size}" role="img" '
        f'aria-label="dice {"-".join(str(d) for d in dice)}">'
    ]
    for i, face in enumerate(dice):
        x = i * (size + gap)
        fill = "#ffe08a" if held >> i & 1 else "#ffffff"
        stroke = "#1a7f37" if best_held is not None and best_held >> i & 1 else "#333333"
        width_stroke = 3 if best_held is not None and best_held >> i & 1 else 1.5
        parts.append(
            f'<rect x="{x + 1}" y="1" width="{size - 2}" height="{size - 2}" rx="5" fill="{fill}" '
            f'stroke="{stroke}" stroke-width="{width_stroke}"/>'
        )
        for col, row in PIPS[int(str(face))]:  # an int, or a digit of a dice string
            cx = x + size * (0.25 + 0.25 * col)
            cy = size * (0.25 + 0.25 * row)
            parts.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{size * 0.08:.1f}" fill="#222"/>')
    parts.append("</svg>")
    return "".join(parts)


def _distribution_svg(dist: dict[str, Any]) -> str:
    names = [n for n in ("submission", "optimal", "greedy") if n in dist["counts"]] + [
        n for n in dist["counts"] if n not in ("submission", "optimal", "greedy")
    ]
    if not names:
        return ""
    colors = {"submission": "#d97706", "optimal": "#1a7f37", "greedy": "#6e7781"}
    bins = len(dist["edges"]) - 1
    top = max(max(c) for c in dist["counts"].values()) or 1
    width, height, left, bottom = 640, 220, 40, 30
    slot = (width - left) / max(bins, 1)
    bar = slot / (len(names) + 1)
    parts = [
        f'<svg class="distribution" width="{width}" height="{height + bottom}" '
        f'viewBox="0 0 {width} {height + bottom}" role="img" aria-label="score distribution">'
    ]
    for i in range(bins):
        for j, name in enumerate(names):
            count = dist["counts"][name][i]
            h = height * count / top
            parts.append(
                f'<rect x="{left + i * slot + j * bar:.1f}" y="{height - h:.1f}" width="{bar:.1f}" '
                f'height="{h:.1f}" fill="{colors.get(name, "#8250df")}"><title>{html.escape(name)}: '
                f"{count} games with {dist['edges'][i]}-{dist['edges'][i + 1] - 1}</title></rect>"
            )
        if i % max(1, bins // 10) == 0:
            parts.append(f'<text x="{left + i * slot:.1f}" y="{height + 16}" font-size="11">{dist["edges"][i]}</text>')
    parts.append(f'<text x="0" y="12" font-size="11">{top}</text>')
    parts.append(f'<line x1="{left}" y1="{height}" x2="{width}" y2="{height}" stroke="#999"/>')
    parts.append("</svg>")
    legend = " ".join(
        f'<span class="swatch" style="background:{colors.get(n, "#8250df")}"></span>{html.escape(n)}' for n in names
    )
    return "".join(parts) + f'<p class="legend">{legend} (games per {dist["bin_width"]}-point bin)</p>'


_STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:60rem;color:#1f2328;
padding:0 1rem}
h1{font-size:1.6rem}h2{margin-top:2rem;border-bottom:1px solid #d0d7de}
table{border-collapse:collapse;margin:.5rem 0}td,th{border:1px solid #d0d7de;padding:.25rem .6rem;text-align:left}
th{background:#f6f8fa}.num{text-align:right}
.headline{font-size:1.3rem;background:#f6f8fa;border:1px solid #d0d7de;border-radius:6px;padding:1rem}
.big{font-size:2rem;font-weight:700}.problem{color:#9a3412}
pre{background:#f6f8fa;padding:.6rem;overflow-x:auto;font-size:.85rem}
.swatch{display:inline-block;width:.8rem;height:.8rem;margin:0 .2rem 0 .8rem;vertical-align:middle}
.mistake{border:1px solid #d0d7de;border-radius:6px;padding:.6rem 1rem;margin:.6rem 0}
#replay-controls button{margin-right:.3rem}#replay-card td.filled{background:#f6f8fa}
#replay-card td.now{background:#ffe08a}.good{color:#1a7f37}.bad{color:#cf222e}
#replay-card tr.subtotal td{font-style:italic;border-top:2px solid #d0d7de}#replay-bonus{font-weight:600}
#replay-alternatives tr.chosen td{background:#ffe08a;font-weight:600}.keys{color:#57606a;font-size:.85rem}
#replay-mistake-note{color:#57606a}.replay-link{font-size:.9rem}
"""

_SCRIPT = r"""
(function () {
  const data = JSON.parse(document.getElementById("replay-data").textContent);
  const games = data.games, boxes = data.box_names, PIPS = data.pips, upper = data.upper;
  const detailed = {};  // game -> per move, the best distinct actions [[action, value], ...]
  for (const entry of data.detailed) detailed[entry.game] = entry.alternatives;
  let game = 0, move = 0;
  const $ = (id) => document.getElementById(id);
  function describe(action, dice, points) {
    if (action === null || action === undefined) return "n/a";
    if (action < 0 || action >= 32 + boxes.length || action === 31) return "illegal action " + action;
    if (action >= 32) {
      const box = boxes[action - 32].replace(/_/g, " ");
      if (points === null || points === undefined) return "score " + box;
      return points === 0 ? "scratch " + box + " (0 points)" : "score " + box + " (" + points + (points === 1 ? " point)" : " points)");
    }
    const kept = [];
    for (let i = 0; i < 5; i++) if ((action >> i) & 1) kept.push(dice[i]);
    return kept.length ? "keep " + kept.join("-") : "reroll all";
  }
  function diceSvg(dice, held, best) {
    const size = 44, gap = 9, width = 5 * size + 4 * gap;
    let s = '<svg width="' + width + '" height="' + size + '" viewBox="0 0 ' + width + ' ' + size + '">';
    for (let i = 0; i < 5; i++) {
      const x = i * (size + gap), isHeld = held >= 0 && ((held >> i) & 1), isBest = best >= 0 && ((best >> i) & 1);
      s += '<rect class="die' + (isHeld ? ' held' : '') + '" data-face="' + dice[i] + '" x="' + (x + 1) +
        '" y="1" width="' + (size - 2) + '" height="' + (size - 2) + '" rx="6" fill="' + (isHeld ? '#ffe08a' : '#fff') +
        '" stroke="' + (isBest ? '#1a7f37' : '#333') + '" stroke-width="' + (isBest ? 3 : 1.5) + '"/>';
      for (const [c, r] of PIPS[dice[i]]) {
        s += '<circle cx="' + (x + size * (0.25 + 0.25 * c)).toFixed(1) + '" cy="' + (size * (0.25 + 0.25 * r)).toFixed(1) +
          '" r="' + (size * 0.08).toFixed(1) + '" fill="#222"/>';
      }
    }
    return s + "</svg>";
  }
  function upperProgress(points) {
    // the upper subtotal before this move, and what the upper bonus still needs
    if (!upper || !upper.boxes.length) return null;
    let total = 0, most = 0;
    const open = [];
    upper.boxes.forEach(function (k, i) {
      if (Object.prototype.hasOwnProperty.call(points, k)) total += points[k];
      else { most += upper.most[i]; open.push(boxes[k] + " (up to " + upper.most[i] + ")"); }
    });
    if (upper.threshold === null) return {short: String(total), text: "upper " + total + " (these rules have no upper bonus)"};
    const short = total + "/" + upper.threshold, need = upper.threshold - total, bonus = "bonus +" + upper.bonus;
    let text;
    if (need <= 0 && (!upper.on_complete || !open.length)) text = bonus + " earned";
    else if (!open.length) text = bonus + " missed: the upper section ended " + need + " short";
    else if (need > most) text = bonus + " out of reach: " + need + " more needed, the open upper boxes add at most " + most;
    else if (need <= 0) text = bonus + " once the upper section is complete: open " + open.join(", ");
    else text = bonus + " needs " + need + " more from " + open.join(", ");
    return {short: short, text: "upper " + short + ": " + text};
  }
  function isMistake(g, m) {
    const loss = games[g].moves[m][4];
    return loss !== null && loss > 0;
  }
  function findMistake(step) {
    // the next (step 1) or previous (step -1) move that lost points, in this game then the next ones
    let g = game, m = move + step;
    while (g >= 0 && g < games.length) {
      for (; m >= 0 && m < games[g].moves.length; m += step) if (isMistake(g, m)) return [g, m];
      g += step;
      if (g >= 0 && g < games.length) m = step > 0 ? 0 : games[g].moves.length - 1;
    }
    return null;
  }
  function showAlternatives(m, dice) {
    const action = m[2], best = m[3], loss = m[4], table = $("replay-alt-rows");
    let list = detailed[game] ? detailed[game][move] : null;
    const note = $("replay-alt-note");
    table.textContent = "";
    if (list) note.textContent = "";
    else {
      // the record alone: the solver's best move and the move made, with its loss
      list = best === null ? [[action, null]] : [[best, null]].concat(action === best ? [] : [[action, null]]);
      note.textContent = "The values of every action are kept for the first " + data.detailed_first +
        " games and the games of the costliest mistakes; this game's record has the best move and the move made.";
    }
    const top = list[0][1];
    list.forEach(function (item, i) {
      const row = document.createElement("tr");
      row.dataset.action = item[0];
      if (item[0] === action) row.className = "chosen";
      let against;
      if (item[1] !== null) against = i === 0 ? "best" : (item[1] - top).toFixed(2);
      else against = item[0] === best ? "best" : (loss === null ? "n/a" : (loss > 0 ? "-" + loss.toFixed(2) : "best"));
      const cells = [describe(item[0], dice) + (item[0] === action ? " (move made)" : ""),
                     item[1] === null ? "" : item[1].toFixed(2), against];
      cells.forEach(function (text, c) {
        const cell = document.createElement("td");
        cell.textContent = text;
        if (c) cell.className = "num";
        row.appendChild(cell);
      });
      table.appendChild(row);
    });
  }
  function show() {
    const record = games[game], moves = record.moves, m = moves[move];
    const dice = m[0], rollsLeft = m[1], action = m[2], best = m[3], loss = m[4];
    const points = {};
    let total = 0, turn = 1;
    for (let k = 0; k < move; k++) {
      total += moves[k][5];
      if (moves[k][6] !== null) { points[moves[k][2] - 32] = moves[k][6]; turn += 1; }
    }
    $("replay-game").value = game + 1;
    $("replay-position").textContent = "game " + (game + 1) + " of " + games.length + " (final score " +
      record.score + "), move " + (move + 1) + " of " + moves.length + ", turn " + turn + ", " + rollsLeft +
      " reroll(s) left";
    $("replay-position").dataset.game = game;
    $("replay-position").dataset.move = move;
    let mistakes = 0, lostHere = 0;
    moves.forEach(function (mv) { if (mv[4] !== null && mv[4] > 0) { mistakes += 1; lostHere += mv[4]; } });
    $("replay-position").textContent += "; " + mistakes + " mistake(s) in this game, " + lostHere.toFixed(2) + " points lost";
    $("replay-mistake-note").textContent = "";
    const heldAction = action >= 0 && action < 31 ? action : -1, bestHeld = best !== null && best < 31 ? best : -1;
    const diceBox = $("replay-dice");
    diceBox.innerHTML = diceSvg(dice, heldAction, bestHeld);
    diceBox.dataset.dice = dice;
    diceBox.dataset.held = heldAction;
    const failed = record.failure && move === moves.length - 1 && !(action >= 0 && action < 32 + boxes.length);
    $("replay-action").textContent = failed ? "no move: a failure ended the game (" + record.failure + ")" :
      describe(action, dice, m[6]);
    $("replay-action").dataset.failure = failed ? record.failure : "";
    $("replay-action").dataset.action = action;
    $("replay-best").textContent = describe(best, dice);
    $("replay-best").dataset.action = best === null ? "" : best;
    const lost = $("replay-loss");
    lost.dataset.loss = loss === null ? "" : loss;
    lost.textContent = loss === null ? "n/a" : (loss > 0 ? "-" + loss.toFixed(2) + " points" : "the best move");
    lost.className = loss > 0 ? "bad" : "good";
    let rows = "";
    const progress = upperProgress(points), lastUpper = upper && upper.boxes.length ? Math.max.apply(null, upper.boxes) : -1;
    boxes.forEach(function (name, k) {
      const filled = Object.prototype.hasOwnProperty.call(points, k);
      const now = action === 32 + k;
      rows += '<tr data-box="' + name + '"><td>' + name + '</td><td class="num' + (filled ? ' filled' : '') +
        (now ? ' now' : '') + '">' + (filled ? points[k] : "") + "</td></tr>";
      if (k === lastUpper) rows += '<tr class="subtotal" id="replay-upper-row"><td>upper subtotal</td><td class="num" id="replay-upper"></td></tr>';
    });
    $("replay-card").innerHTML = rows;
    if (progress) $("replay-upper").textContent = progress.short;
    $("replay-bonus").textContent = progress ? progress.text : "";
    showAlternatives(m, dice);
    $("replay-total").textContent = total;
  }
  function go(g, m) {
    game = Math.max(0, Math.min(games.length - 1, g));
    move = Math.max(0, Math.min(games[game].moves.length - 1, m));
    show();
  }
  $("replay-first").onclick = () => go(game, 0);
  $("replay-prev").onclick = () => go(game, move - 1);
  $("replay-next").onclick = () => go(game, move + 1);
  $("replay-last").onclick = () => go(game, games[game].moves.length - 1);
  $("replay-game").onchange = () => go((parseInt($("replay-game").value, 10) || 1) - 1, 0);
  $("replay-prev-game").onclick = () => go(game - 1, 0);
  $("replay-next-game").onclick = () => go(game + 1, 0);
  function goMistake(step) {
    const found = findMistake(step);
    if (found) go(found[0], found[1]);
    else $("replay-mistake-note").textContent = step > 0 ? "no later mistake" : "no earlier mistake";
  }
  $("replay-next-mistake").onclick = () => goMistake(1);
  $("replay-prev-mistake").onclick = () => goMistake(-1);
  function openHash(hash) {
    // #replay-game-G-move-M (both from 1), the links of the costliest mistakes
    const found = /^#replay-game-(\d+)-move-(\d+)$/.exec(hash || "");
    if (!found || !games.length) return false;
    go(parseInt(found[1], 10) - 1, parseInt(found[2], 10) - 1);
    $("replay").scrollIntoView();
    return true;
  }
  for (const link of document.querySelectorAll("a.replay-link")) {
    // a link to another move changes the address, and its hashchange opens the move (opening it here too
    // let that late event undo what was done in between); the move already in the address has no hashchange
    link.addEventListener("click", () => {
      if (link.getAttribute("href") === location.hash) openHash(location.hash);
    });
  }
  window.addEventListener("hashchange", () => openHash(location.hash));
  document.addEventListener("keydown", function (e) {
    if (e.target && e.target.tagName === "INPUT") return;  // typing a game number
    if (e.key === "ArrowRight") go(game, move + 1);
    if (e.key === "ArrowLeft") go(game, move - 1);
    if (e.key === "n") goMistake(1);
    if (e.key === "p") goMistake(-1);
    if (e.key === "a") $("replay-alternatives").open = !$("replay-alternatives").open;
  });
  if (!games.length) $("replay").hidden = true;
  else if (!openHash(location.hash)) go(0, 0);
})();
"""


def _json_for_script(value: Any) -> str:
    """JSON that is safe inside ``<script>``: no ``<``, ``>`` or ``&`` can end or open a tag."""
    text = json.dumps(value, separators=(",", ":"), sort_keys=True)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _replay_link(example: dict[str, Any], replays: list[dict[str, Any]]) -> str:
    """A link to the example's move in the replay (``#replay-game-G-move-M``, from 1), where the replay has it."""
    game, move = example.get("game"), example.get("move")
    if not (isinstance(game, int) and isinstance(move, int) and 0 <= game < len(replays)):
        return ""
    if not 0 <= move < len(replays[game]["moves"]):
        return ""
    return (
        f'<br><a class="replay-link" href="#replay-game-{game + 1}-move-{move + 1}">see it in the replay: game '
        f"{game + 1}, move {move + 1}</a>"
    )


def _replay_data(report: dict[str, Any]) -> dict[str, Any]:
    """What the replay's script reads: the games, the boxes, the upper section and the detailed games' values."""
    detail = report.get("replay_detail") or {}
    return {
        "games": report["replays"],
        "box_names": report["box_names"],
        "pips": {str(k): v for k, v in PIPS.items()},
        "upper": detail.get("upper"),
        "detailed": detail.get("games", []),
        "detailed_first": detail.get("first", 0),
    }


def render_html(report: dict[str, Any]) -> str:
    """The report as one self-contained HTML page (module docstring)."""
    e = html.escape
    head = _headline(report)
    body = [
        f"<h1>Grade report: <code>{e(report['submission'])}</code></h1>",
        f"<p>{e(report['rules_title'])} (<code>{e(report['rules'])}</code>"
        + (
            f", options <code>{e(json.dumps(report['rules_options'], sort_keys=True))}</code>"
            if report["rules_options"]
            else ""
        )
        + f"), {report['games']} games, seed {report['seed']}. {e(_isolation(report))}.{e(_limits(report))} "
        f'Status: <strong id="status">{e(report["status"])}'
        "</strong>.</p>",
        f'<div class="headline"><span class="big" id="percent">{_pct(head["percent"])}</span> of optimal '
        f"(95% CI ± {_num(head['ci'], 1)})"
        + (
            f'; luck-free <strong id="luck-free">{_pct(head["luck_free"], 2)}</strong>'
            if head["luck_free"] is not None
            else ""
        )
        + f"<br>mean score {_num(head['mean'])} ± {_num(head['ci95'])}; the optimal "
        f"expected score is {_num(report['optimal_expected_score'])}"
        + (
            f'<br>exact regret <strong id="regret">{head["split"][0]}</strong> points a game: '
            + ", ".join(
                f'<span class="part" data-part="{e(label)}">{value}</span> {_REGRET_WORDS[label]}'
                for label, value in head["split"][1]
            )
            if head["split"] is not None
            else ""
        )
        + "</div>",
        f'<p class="luck" id="luck">{e(LUCK_NOTE)}</p>',
    ]
    if report["problems"]:
        body.append(
            "<h2>Problems</h2><ul>" + "".join(f'<li class="problem">{e(p)}</li>' for p in report["problems"]) + "</ul>"
        )
    body.append(
        "<h2>Compared with the optimal and greedy agents</h2><table><tr><th>agent</th><th>mean (95% CI)</th>"
        "<th>percent of optimal</th><th>luck-free percent</th><th>regret</th><th>keeps</th><th>boxes</th>"
        "<th>illegal actions (points (count))</th><th>failed games (points (count))</th></tr>"
    )
    for name, row in report["agents"].items():
        body.append(
            f'<tr data-agent="{e(name)}"><td>{e(name)}</td><td class="num">{_num(row["mean"])} ± {_num(row["ci95"])}'
            f'</td><td class="num">{_pct(row["percent_of_optimal"])}</td>'
            f'<td class="num">{_pct(row.get("estimated_percent_of_optimal"), 2)}</td>'
            + "".join(f'<td class="num">{cell}</td>' for cell in _regret_cells(row))
            + "</tr>"
        )
    body.append(
        "</table><p>The regret's parts add up to it: keeps + boxes + illegal actions + failed games (the points "
        "lost in games that a failure of the submission ended: an exception, a time limit, a crash, or the games "
        "left unplayed once grading stopped asking).</p>"
    )
    mistakes = report["agents"].get("submission", {}).get("mistakes", [])
    if mistakes:
        body.append(
            "<h2>Costliest mistakes</h2><p>Held dice are yellow; the dice the better move keeps are outlined "
            "in green.</p>"
        )
        for m in mistakes:
            ex = m["worst_example"]
            taken, best = ex.get("taken_action"), ex.get("best_action")
            held = taken if isinstance(taken, int) and 0 <= taken < N_KEEP_ACTIONS - 1 else 0
            best_held = best if isinstance(best, int) and 0 <= best < N_KEEP_ACTIONS - 1 else None
            body.append(
                f'<div class="mistake"><strong>{e(m["mistake"])}</strong>: {m["loss_per_game"]:.2f} points a game '
                f"({m['count_per_game']:.2f} times a game, {m['mean_loss']:.2f} each)<br>"
                f"{dice_svg(ex['dice'], held, best_held)}<br>worst case, turn {ex['turn'] + 1}, "
                f"{ex['rolls_left']} reroll(s) left: {e(ex['taken'])}; better: <strong>{e(ex['best'])}</strong> "
                f"(-{ex['loss']:.2f} points){_replay_link(ex, report['replays'])}</div>"
            )
    body.append("<h2>Score distribution</h2>" + _distribution_svg(report["score_distribution"]))
    failures = report["failures"]["recorded"]
    if failures:
        body.append("<h2>Failures</h2>")
        for f in failures:
            where = "while loading" if f["game"] < 0 else failure_where(f)
            body.append(
                f'<div class="failure" data-kind="{e(f["kind"])}"><h3>{e(f["kind"])} ({where})</h3>'
                f"<p>{e(f['message'])}</p>"
                + (
                    f"<details open><summary>traceback</summary><pre>{e(f['traceback'])}</pre></details>"
                    if f["traceback"]
                    else ""
                )
                + "</div>"
            )
    if report["stdout"]["bytes"]:
        body.append(
            f"<h2>Standard output</h2><p>{report['stdout']['bytes']} bytes; the start:</p>"
            f'<pre id="stdout">{e(report["stdout"]["sample"])}</pre>'
        )
    if _stderr_bytes(report):
        body.append(f'<h2>Standard error</h2><p id="stderr">{e(_stderr_text(report))}</p>')
    if report["replays"]:
        body.append(
            '<h2>Replay</h2><section id="replay"><div id="replay-controls">'
            '<button id="replay-prev-game">&#9664;&#9664; game</button>'
            f'<label>game <input id="replay-game" type="number" min="1" max="{len(report["replays"])}" '
            'value="1"></label>'
            '<button id="replay-next-game">game &#9654;&#9654;</button> '
            '<button id="replay-first">first</button><button id="replay-prev">&#9664; move</button>'
            '<button id="replay-next">move &#9654;</button><button id="replay-last">last</button> '
            '<button id="replay-prev-mistake">&#9664; mistake</button>'
            '<button id="replay-next-mistake">mistake &#9654;</button> <span id="replay-mistake-note"></span></div>'
            '<p class="keys">Keys: &larr; &rarr; a move; p, n the previous, next mistake (a move that lost '
            "points); a the best actions.</p>"
            '<p id="replay-position"></p><div id="replay-dice"></div>'
            '<table><tr><th>move made</th><td id="replay-action"></td></tr>'
            '<tr><th>solver\'s best move</th><td id="replay-best"></td></tr>'
            '<tr><th>points lost</th><td id="replay-loss"></td></tr></table>'
            '<details id="replay-alternatives"><summary>the best actions here, '
            "with the solver's expected final score</summary><table><tr><th>action</th><th>expected final score</th>"
            '<th>against the best</th></tr><tbody id="replay-alt-rows"></tbody></table><p id="replay-alt-note"></p>'
            "</details>"
            '<p id="replay-bonus"></p>'
            '<table><tr><th>box</th><th>points</th></tr><tbody id="replay-card"></tbody>'
            '<tr><th>total (with bonuses)</th><td id="replay-total" class="num"></td></tr></table></section>'
            f'<script type="application/json" id="replay-data">'
            f"{_json_for_script(_replay_data(report))}"
            f"</script><script>{_SCRIPT}</script>"
        )
    title = f"Grade report: {report['submission']}"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(title)}</title><style>{_STYLE}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n"
    )
