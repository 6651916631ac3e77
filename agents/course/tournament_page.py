"""The tournament's leaderboard as one self-contained HTML page (:func:`render_html`).

In the grade report's style (:mod:`agents.course.grade_report`: its styles, its dice and its
safe embedding of data in a script) and, like it, offline: no server, no network, everything
in the file. It shows the standings (rating with its 95% interval drawn as a bar, games, wins,
mean score, failures), every failure of the submissions, the matches, and a replay of any game:
every player's dice and choices, move by move, with every player's scorecard.

Everything that comes from a submission (its name, which is the spec as given, failure
messages and tracebacks) is escaped by :func:`html.escape` in the page, and the replay's
script writes text only through ``textContent`` (``innerHTML`` only for the dice's SVG, made of numbers).
"""

from __future__ import annotations

import html
import json
from typing import Any

from agents.course.grade_report import _STYLE, _json_for_script, failure_where
from agents.course.ratings import PERFECT_NOTE
from dice_poker_env.envs.render_image import PIPS

_EXTRA_STYLE = """
#standings code,#matches td{word-break:break-all}
.bar{position:relative;width:12rem;height:.9rem;background:#f6f8fa;border:1px solid #d0d7de}
.bar span{position:absolute;top:0;height:100%;background:#9ecbff}.bar i{position:absolute;top:-2px;width:3px;
height:calc(100% + 4px);background:#0550ae}.anchor td:nth-child(2){font-style:italic}
#replay-table td.now{background:#ffe08a}#replay-table th.mover{background:#ffe08a}.forfeit{color:#cf222e}
"""

_SCRIPT = r"""
(function () {
  const data = JSON.parse(document.getElementById("replay-data").textContent);
  const games = data.games, boxes = data.box_names, names = data.agents, PIPS = data.pips;
  let game = 0, move = 0;
  const $ = (id) => document.getElementById(id);
  function cell(tag, text, cls) {
    const e = document.createElement(tag);
    e.textContent = text;
    if (cls) e.className = cls;
    return e;
  }
  function describe(action, dice) {
    if (action >= 32) return "score " + boxes[action - 32];
    const kept = [];
    for (let i = 0; i < 5; i++) if ((action >> i) & 1) kept.push(dice[i]);
    return kept.length ? "keep " + kept.join("-") : "reroll all";
  }
  function drawDice(box, dice, held) {
    // only numbers go into this markup: faces parsed as integers 1..6, sizes computed here
    const size = 44, gap = 9, width = 5 * size + 4 * gap;
    let s = '<svg width="' + width + '" height="' + size + '" viewBox="0 0 ' + width + ' ' + size + '">';
    for (let i = 0; i < 5; i++) {
      const face = Math.min(6, Math.max(1, parseInt(dice[i], 10) || 1));
      const x = i * (size + gap), isHeld = held >= 0 && ((held >> i) & 1);
      s += '<rect class="die' + (isHeld ? ' held' : '') + '" data-face="' + face + '" x="' + (x + 1) +
        '" y="1" width="' + (size - 2) + '" height="' + (size - 2) + '" rx="6" fill="' + (isHeld ? '#ffe08a' : '#fff') +
        '" stroke="#333" stroke-width="1.5"/>';
      for (const [c, r] of PIPS[face]) {
        s += '<circle cx="' + (x + size * (0.25 + 0.25 * c)).toFixed(1) + '" cy="' + (size * (0.25 + 0.25 * r)).toFixed(1) +
          '" r="' + (size * 0.08).toFixed(1) + '" fill="#222"/>';
      }
    }
    box.innerHTML = s + "</svg>";
  }
  function show() {
    const record = games[game], moves = record.moves, m = moves[move];
    const seat = m[0], dice = m[1], rollsLeft = m[2], action = m[3], forfeit = m[5];
    const n = record.seats.length, card = [], totals = [], turn = [];
    for (let s = 0; s < n; s++) { card.push({}); totals.push(0); turn.push(1); }
    for (let k = 0; k < move; k++) {
      const e = moves[k];
      if (e[4] !== null) { card[e[0]][e[3] - 32] = e[4]; totals[e[0]] += e[4]; turn[e[0]] += 1; }
    }
    $("replay-game").value = game;
    $("replay-position").textContent = "game " + record.id + " of " + games.length + " (match " + record.match +
      ", round " + (record.round + 1) + ", deal " + record.deal + ", rotation " + record.rotation + "), move " +
      (move + 1) + " of " + moves.length + ": seat " + seat + ", " + names[record.seats[seat]] + ", turn " +
      turn[seat] + ", " + rollsLeft + " reroll(s) left";
    const diceBox = $("replay-dice"), held = action < 31 ? action : -1;
    drawDice(diceBox, dice, held);
    diceBox.dataset.dice = dice;
    diceBox.dataset.held = held;
    $("replay-mover").textContent = names[record.seats[seat]];
    $("replay-mover").dataset.seat = seat;
    const act = $("replay-action");
    act.textContent = describe(action, dice) + (forfeit ? " (forfeited seat)" : "");
    act.dataset.action = action;
    act.className = forfeit ? "forfeit" : "";
    const table = $("replay-table");
    while (table.firstChild) table.removeChild(table.firstChild);
    const head = document.createElement("tr");
    head.appendChild(cell("th", "box"));
    for (let s = 0; s < n; s++) head.appendChild(cell("th", "seat " + s + ": " + names[record.seats[s]], s === seat ? "mover" : ""));
    table.appendChild(head);
    boxes.forEach(function (name, k) {
      const row = document.createElement("tr");
      row.dataset.box = name;
      row.appendChild(cell("td", name));
      for (let s = 0; s < n; s++) {
        const filled = Object.prototype.hasOwnProperty.call(card[s], k);
        const now = s === seat && action === 32 + k;
        row.appendChild(cell("td", filled ? String(card[s][k]) : "", "num" + (now ? " now" : "")));
      }
      table.appendChild(row);
    });
    const foot = document.createElement("tr");
    foot.id = "replay-totals";
    foot.appendChild(cell("th", "total (with bonuses)"));
    for (let s = 0; s < n; s++) foot.appendChild(cell("td", String(totals[s]), "num"));
    table.appendChild(foot);
    const end = document.createElement("tr");
    end.appendChild(cell("th", "final (forfeit: 0)"));
    for (let s = 0; s < n; s++) end.appendChild(cell("td", record.results[s] + " (place " + record.ranks[s] + ")", "num"));
    table.appendChild(end);
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
  $("replay-game").onchange = () => go(parseInt($("replay-game").value, 10) || 0, 0);
  $("replay-prev-game").onclick = () => go(game - 1, 0);
  $("replay-next-game").onclick = () => go(game + 1, 0);
  for (const link of document.querySelectorAll("a[data-game]")) {
    link.onclick = function (e) { e.preventDefault(); go(parseInt(link.dataset.game, 10), 0); $("replay").scrollIntoView(); };
  }
  document.addEventListener("keydown", function (e) {
    if (e.target && e.target.tagName === "INPUT") return;
    if (e.key === "ArrowRight") go(game, move + 1);
    if (e.key === "ArrowLeft") go(game, move - 1);
  });
  if (games.length) go(0, 0); else $("replay").hidden = true;
})();
"""


def _bar(row: dict[str, Any], low: float, high: float) -> str:
    """The rating's interval (light) and the rating (dark line) on the page's common scale."""
    span = max(high - low, 1e-9)

    def at(value: float) -> float:
        return 100.0 * (value - low) / span

    mark = f'<i style="left:calc({at(row["rating"]):.1f}% - 1px)"></i>'
    if row["rating_low"] is None:  # no interval: the rating alone
        return f'<div class="bar" title="{row["rating"]:.1f}, no interval">{mark}</div>'
    left, right = at(row["rating_low"]), at(row["rating_high"])
    return (
        f'<div class="bar" title="{row["rating_low"]:.1f} to {row["rating_high"]:.1f}">'
        f'<span style="left:{left:.1f}%;width:{max(right - left, 0.5):.1f}%"></span>{mark}</div>'
    )


def render_html(result: dict[str, Any]) -> str:
    """The leaderboard page (module docstring) of a tournament's result (:func:`agents.course.tournament.tournament`)."""
    e = html.escape
    rating = result["rating"]
    standings = result["standings"]
    low = min(r["rating"] if r["rating_low"] is None else r["rating_low"] for r in standings)
    high = max(r["rating"] if r["rating_high"] is None else r["rating_high"] for r in standings)
    options = (
        f", options <code>{e(json.dumps(result['rules_options'], sort_keys=True))}</code>"
        if result["rules_options"]
        else ""
    )
    isolation = "Submissions isolated" if result["isolation"]["isolated"] else "Submissions UNISOLATED"
    body = [
        "<h1>Tournament leaderboard</h1>",
        f"<p>{e(result['rules_title'])} (<code>{e(result['rules'])}</code>{options}); {len(result['agents'])} "
        f"agents, {e(result['format'])}, {result['rounds']} round(s), {result['players']} seats a table, "
        f"{result['games']} deal(s) for each group, each played at every rotation of the seats (duplicate), "
        f"{len(result['matches'])} matches, {len(result['games_played'])} games, seed {result['seed']}. "
        f"{isolation}.</p>",
        *(
            ['<p class="problem">INTERRUPTED: partial standings, from the matches complete before it.</p>']
            if result.get("interrupted")
            else []
        ),
        '<div class="headline">Ratings: Elo points from a Bradley-Terry fit to every pairwise duplicate comparison '
        + (
            "of games finished first in a match (objective: wins), "
            if result.get("objective") == "wins"
            else "of points summed over a match, "
        )
        + f"{e(rating['anchor'])} fixed at {rating['anchor_rating']:g}, "
        + (
            f"with 95% intervals from {rating['bootstrap']} bootstrap resamples of the matches"
            if rating["bootstrap"]
            else f"without 95% intervals: {e(rating['interval'])}"
        )
        + f" (prior sd {rating['prior_sd']:g}). "
        "A forfeited game counts 0 points and last place.</div>",
        '<h2>Standings</h2><table id="standings"><tr><th>rank</th><th>agent</th><th>rating</th>'
        "<th>95% interval</th><th></th><th>games</th><th>wins</th><th>mean score</th><th>failures</th>"
        "<th>status</th></tr>",
    ]
    for row in standings:
        mean = "n/a" if row["mean_score"] is None else f"{row['mean_score']:.2f}"
        body.append(
            f'<tr class="{e(row["kind"])}" data-agent="{e(row["agent"])}"><td class="num">{row["rank"]}</td>'
            f"<td><code>{e(row['agent'])}</code>{' (anchor)' if row['kind'] == 'anchor' else ' (built-in)' if row['kind'] == 'builtin' else ''}</td>"
            f'<td class="num rating">{row["rating"]:.1f}</td>'
            + (
                '<td class="num">fixed</td>'
                if row["agent"] == rating["anchor"]
                else '<td class="num">none</td>'
                if row["rating_low"] is None
                else f'<td class="num">{row["rating_low"]:.1f} to {row["rating_high"]:.1f}</td>'
            )
            + f"<td>{_bar(row, low, high)}</td>"
            f'<td class="num">{row["games"]}</td><td class="num">{row["wins"]}</td><td class="num">{mean}</td>'
            f'<td class="num">{row["failures"]}</td><td>{e(row["status"])}'
            + (f" ({e(PERFECT_NOTE[row['record']])})" if row.get("record") else "")
            + (f" (imported {e(row['solver_imports'].replace(';', ', '))})" if row.get("solver_imports") else "")
            + "</td></tr>"
        )
    body.append("</table>")
    if result["failures"]:
        body.append("<h2>Failures</h2>")
        for name, failures in result["failures"].items():
            body.append(f"<h3><code>{e(name)}</code></h3>")
            for f in failures:
                where = "while loading" if f["game"] < 0 else f"its {failure_where(f)}"
                if f.get("game_id") is not None:  # the replay's game number (games.json's id)
                    where += f"; replay game {f['game_id']}"
                body.append(
                    f'<div class="failure" data-kind="{e(f["kind"])}"><strong>{e(f["kind"])}</strong> ({where}): '
                    f"{e(f['message'])}"
                    + (
                        f"<details><summary>traceback</summary><pre>{e(f['traceback'])}</pre></details>"
                        if f["traceback"]
                        else ""
                    )
                    + "</div>"
                )
    names = result["agents"]
    body.append(
        "<h2>Matches</h2><p>Each match's totals are the sums over its games (one per rotation of the seats); "
        'follow a game\'s link to replay it.</p><table id="matches"><tr><th>match</th><th>round</th><th>deal</th>'
        "<th>totals</th><th>games</th></tr>"
    )
    for m in result["matches"]:
        totals = ", ".join(f"{e(names[a])} {t}" for a, t in zip(m["agents"], m["totals"]))
        links = " ".join(f'<a href="#replay" data-game="{g}">{g}</a>' for g in m["games"])
        body.append(
            f'<tr><td class="num">{m["id"]}</td><td class="num">{m["round"] + 1}</td><td class="num">{m["deal"]}</td>'
            f"<td>{totals}</td><td>{links}</td></tr>"
        )
    body.append("</table>")
    if result["games_played"]:
        data = {
            "games": result["games_played"],
            "agents": names,
            "box_names": result["box_names"],
            "pips": {str(k): v for k, v in PIPS.items()},
        }
        body.append(
            '<h2>Replay</h2><section id="replay"><div id="replay-controls">'
            '<button id="replay-prev-game">&#9664;&#9664; game</button>'
            f'<label>game <input id="replay-game" type="number" min="0" max="{len(result["games_played"]) - 1}" '
            'value="0"></label>'
            '<button id="replay-next-game">game &#9654;&#9654;</button> '
            '<button id="replay-first">first</button><button id="replay-prev">&#9664; move</button>'
            '<button id="replay-next">move &#9654;</button><button id="replay-last">last</button></div>'
            '<p id="replay-position"></p><div id="replay-dice"></div>'
            '<table><tr><th>to move</th><td id="replay-mover"></td></tr>'
            '<tr><th>move made</th><td id="replay-action"></td></tr></table>'
            '<table id="replay-table"></table></section>'
            f'<script type="application/json" id="replay-data">{_json_for_script(data)}</script>'
            f"<script>{_SCRIPT}</script>"
        )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>Tournament leaderboard: {e(result['rules'])}</title><style>{_STYLE}{_EXTRA_STYLE}</style>"
        "</head><body>\n" + "\n".join(body) + "\n</body></html>\n"
    )
