"""A tournament between students' agents: duplicate multi-player matches, Elo ratings with intervals.

``python -m agents.commands.tournament a.py:A b.py:B ... --rules yacht --players 2 --games 4 --out DIR``
(:mod:`agents.commands.tournament`). The optimal and greedy agents always take part, as fixed
anchors: the greedy agent's rating is the scale's origin (:data:`agents.course.ratings.ANCHOR_RATING`)
and the optimal agent shows the ceiling.

**Matches.** A group of agents meets at one table (2 to 6 seats, the PettingZoo env
:mod:`dice_poker_env.multi`) for ``games`` *deals* in duplicate (:mod:`agents.course.duplicate`);
a *match* is one deal played at as many tables as the group has agents, the seats rotated one
place at each table, so every agent plays every seat's dice once and the seat order once. A
match's result for each agent is the sum of its points over those tables; two agents of a match
are compared by these sums (win, draw or loss). With ``objective="wins"`` it is instead the number
of those games it finished first (ties for first place included): a tournament for agents that
play to win, as the ``winning`` agent does. Every match has its own deal.

**Schedule** (:func:`choose_format`). Round-robin (one round: every group of ``players``
agents meets once) while it needs at most :data:`ROUND_ROBIN_MAX_GROUPS` groups; otherwise
Swiss: :func:`default_rounds` rounds (``--rounds``); before each round the agents are ordered
by their ratings so far (the first round: a seeded shuffle) and seated from the top, table by
table (:func:`swiss_tables`): each table takes the best-placed agent left, then, among the next
``2 x size`` agents left, those it has met least often. Tables seat ``players`` agents, or one
more or fewer where the number of agents does not divide (:func:`table_sizes`).

**Ratings** (:mod:`agents.course.ratings`): Elo points from a Bradley-Terry fit to every
pairwise comparison of every match, with 95% intervals from a bootstrap over matches.

**Failures.** Submissions run isolated exactly as in grading (:class:`agents.course.sandbox.SandboxedAgent`:
each in its own sandbox, started once and reused for every game, under the grading limits).
An agent that fails in a game forfeits that seat (0 points and last place at that table; the
others play on, :mod:`agents.course.duplicate`); a submission that does not load, or that has
spent its failures or its time, forfeits every later seat. Nothing a submission does stops
the tournament.

Output (:func:`write_outputs`): ``standings.csv``, ``standings.json`` (standings, matches and
failures), ``games.json`` (every game, move by move) and ``leaderboard.html``
(:mod:`agents.course.tournament_page`). Ctrl-C or SIGTERM end the tournament with the matches complete
so far: partial standings, marked ``"interrupted": true`` (a match cut short is left out whole).

Size: one tournament from schedule to standings (the pure schedule, entries, the match loop with its interrupt and
progress, the standings and their files); the ratings, the deals and the page are modules of their own.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from agents.course.duplicate import GameRecord, deal_faces, play_game
from agents.course.grade_report import summary_text_line
from agents.course.ratings import ANCHOR_RATING, PERFECT_NOTE, PRIOR_SD, Comparisons, rate
from agents.course.sandbox import Limits, SandboxedAgent
from agents.evaluation.limits import MAX_GAMES
from dice_poker_env.engine.tables import compile_rules
from dice_poker_env.multi.aec import MAX_PLAYERS, MIN_PLAYERS
from dice_poker_env.multi.observations import table_problem
from dice_poker_env.rules import Rules, load_rules

#: the agents that always take part
ANCHORS = ("optimal", "greedy")
#: the anchor whose rating is fixed
ANCHOR = "greedy"
#: the schedules
FORMATS = ("auto", "round-robin", "swiss")
#: what a match compares two agents by: their points summed over its games, or the games each finished first
OBJECTIVES = ("points", "wins")
#: ``auto`` plays a round-robin up to this many groups, else Swiss
ROUND_ROBIN_MAX_GROUPS = 60
#: the files ``--out DIR`` gets
OUTPUT_FILES = ("standings.csv", "standings.json", "games.json", "leaderboard.html")
#: the most bootstrap resamples of the ratings (each refits every rating; 1,000 is the default) and Swiss rounds
MAX_BOOTSTRAP, MAX_ROUNDS = 100_000, 1_000
#: the standings' columns (``standings.csv``, in this order)
COLUMNS = tuple(
    "rank agent kind rating rating_low rating_high games wins mean_score failures status record solver_imports".split()
)
#: the output's format version
FORMAT_VERSION = 1
#: seconds between two progress lines within a round
PROGRESS_SECONDS = 15.0


# ------------------------------------------------------------------ the schedule (pure)
def table_sizes(agents: int, players: int) -> list[int]:
    """How many agents sit at each table of a round: ``players``, or one more or fewer to seat everyone.

    Tables as equal as possible, of :data:`MIN_PLAYERS` to :data:`MAX_PLAYERS` seats, their number chosen so
    that no table is further from ``players`` than it must be (5 agents at tables of 4: one table of 5, not
    3 + 2), then the number of tables closest to ``agents / players``.
    """
    best: tuple[tuple[float, float], list[int]] | None = None
    for tables in range(1, agents // MIN_PLAYERS + 1):
        base, extra = divmod(agents, tables)
        sizes = [base + 1] * extra + [base] * (tables - extra)
        if sizes[-1] < MIN_PLAYERS or sizes[0] > MAX_PLAYERS:
            continue
        key = (max(abs(size - players) for size in sizes), abs(tables - agents / players))
        if best is None or key < best[0]:
            best = (key, sizes)
    assert best is not None, (agents, players)  # two agents or more always seat
    return best[1]


def choose_format(agents: int, players: int, fmt: str = "auto") -> str:
    """``round-robin`` or ``swiss``: ``auto`` is round-robin up to :data:`ROUND_ROBIN_MAX_GROUPS` groups."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if fmt != "auto":
        return fmt
    return "round-robin" if math.comb(agents, players) <= ROUND_ROBIN_MAX_GROUPS else "swiss"


def default_rounds(agents: int) -> int:
    """Swiss rounds by default: ``ceil(log2(agents)) + 2``."""
    return math.ceil(math.log2(max(agents, 2))) + 2


def round_robin_groups(agents: int, players: int) -> list[tuple[int, ...]]:
    """Every group of ``players`` agents, once."""
    return list(itertools.combinations(range(agents), players))


def swiss_tables(order: list[int], met: np.ndarray, players: int) -> list[tuple[int, ...]]:
    """One Swiss round's tables (module docstring): ``order`` is the agents best first, ``met[a, b]`` meetings so far."""
    left = list(order)
    tables = []
    for size in table_sizes(len(order), players):
        table = [left.pop(0)]
        while len(table) < size:
            window = left[: 2 * size]
            best = min(window, key=lambda a: (sum(met[a, b] for b in table), left.index(a)))
            table.append(best)
            left.remove(best)
        tables.append(tuple(table))
    return tables


# ------------------------------------------------------------------ entries and matches
@dataclass
class Entry:
    """An agent of the tournament: a submission (sandboxed) or an anchor (in process)."""

    name: str
    kind: str
    player: Any

    def status(self) -> str:
        """``ok``, ``failures``, ``stopped`` (no more decisions asked for) or ``not_loaded``."""
        if self.kind != "submission":  # an anchor or a built-in agent, played in this process
            return "ok"
        if self.player.load_error is not None:
            return "not_loaded"
        if self.player.stopped_at_game is not None:
            return "stopped"
        return "failures" if self.player.failure_count else "ok"


@dataclass
class Match:
    """A group of agents playing one deal at every rotation of its seats."""

    id: int
    round: int
    deal: int
    agents: tuple[int, ...]
    games: list[int] = field(default_factory=list)
    totals: list[int] = field(default_factory=list)
    #: each agent's games of the match finished first (ties for first place included; a forfeited seat never)
    firsts: list[int] = field(default_factory=list)

    def comparisons(self, objective: str = "points") -> list[tuple[int, int, float, int]]:
        """``(a, b, result, match)`` for every pair of the group, by the totals (``objective="wins"``: the games
        finished first)."""
        by = self.totals if objective == "points" else self.firsts
        rows = []
        for x, y in itertools.combinations(range(len(self.agents)), 2):
            result = 0.5 if by[x] == by[y] else float(by[x] > by[y])
            rows.append((self.agents[x], self.agents[y], result, self.id))
        return rows


def rotation(group: tuple[int, ...], k: int) -> tuple[int, ...]:
    """The agents of ``group`` by seat at the ``k``-th table of a deal: the group's agent ``i`` sits in seat ``(i + k) % n``."""
    n = len(group)
    seats = [0] * n
    for i, agent in enumerate(group):
        seats[(i + k) % n] = agent
    return tuple(seats)


def _check_int(name: str, value: Any, least: int, most: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
        raise ValueError(f"{name} must be an integer >= {least}, got {value!r}")
    if most is not None and value > most:
        raise ValueError(f"{name} must be at most {most}, got {value}")
    return int(value)


def entry_names(submissions: list[str]) -> list[str]:
    """The submissions' names in the standings (their specs as given); refuses repeats and anchors' names."""
    seen: set[str] = set()
    for spec in submissions:
        if not isinstance(spec, str) or not spec:
            raise ValueError(f"a submission must be an agent spec FILE.py:NAME, got {spec!r}")
        if spec in ANCHORS:
            raise ValueError(f"{spec!r} is an anchor: the optimal and greedy agents always take part")
        if spec in seen:
            raise ValueError(f"submission {spec!r} is given twice")
        seen.add(spec)
    return list(submissions)


def is_builtin(name: str) -> bool:
    """Whether an entrant is one of the library's own agents, played in the grader's process: ``random``,
    ``trained``, ``winning[,ARGS]`` or a policy or model file (``model:PATH``, read without running code)."""
    return name in ("random", "trained") or name.split(",", 1)[0] == "winning" or name.startswith("model:")


# ------------------------------------------------------------------ the tournament
def _folder(spec: str) -> str | None:
    """The folder of an entry's file (``FILE.py:NAME``), else ``None``."""
    from agents.players.registry import parse_agent_spec

    try:
        parsed = parse_agent_spec(spec)
    except ValueError:
        return None
    return os.path.dirname(os.path.abspath(parsed.source)) if parsed is not None and parsed.is_file else None


def tournament(
    submissions: list[str],
    rules: str | os.PathLike[str] | Rules = "yacht",
    *,
    players: int = 2,
    games: int = 4,
    seed: int = 0,
    fmt: str = "auto",
    rounds: int | None = None,
    limits: Limits | None = None,
    isolated: bool = True,
    solver: str = "allow",
    bootstrap: int = 1000,
    objective: str = "points",
    progress: bool = False,
    started: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Play a tournament (module docstring) and return its results as a JSON-ready dict.

    Args:
        submissions: agent specs (``student.py:MyAgent``), at least one.
        rules: ruleset name, rules file or :class:`Rules`.
        players: seats per table (2 to 6; at most the number of agents).
        games: deals each group plays, i.e. matches per group (each deal at every rotation of the seats).
        seed: the tournament's seed: the same seed, the same dice and schedule.
        fmt: ``auto``, ``round-robin`` or ``swiss``.
        rounds: Swiss rounds (default :func:`default_rounds`); refused for a round-robin.
        limits: the submissions' limits (:class:`agents.course.sandbox.Limits`), per submission for
            the whole tournament.
        isolated: run the submissions isolated (``False``: trusted code only).
        solver: the library's solver and agents in submissions: ``allow``, ``flag`` or ``forbid``.
        bootstrap: resamples for the ratings' intervals.
        objective: ``points`` (two agents of a match compared by their points summed over its games) or ``wins``
            (by the games each finished first): :data:`OBJECTIVES`.
        progress: a line per round on standard error.
        started: called once the arguments passed their checks, before the agents load and play (the
            command says its seed there).

    Raises:
        ValueError: a bad argument (never for what a submission does).
    """
    from agents.evaluation.benchmark import load_solution
    from agents.players.registry import check_agent, make_agent

    rules = load_rules(rules)
    names = entry_names(list(submissions))
    if not names:
        raise ValueError("a tournament needs at least one submission")
    agents = len(names) + len(ANCHORS)
    if (
        isinstance(players, bool)
        or not isinstance(players, (int, np.integer))
        or not MIN_PLAYERS <= players <= MAX_PLAYERS
    ):
        raise ValueError(f"players must be an integer {MIN_PLAYERS} to {MAX_PLAYERS}, got {players!r}")
    if players > agents:  # a table seats distinct agents: the submissions and the anchors
        raise ValueError(
            f"players must be at most {agents}, the tournament's agents ({len(names)} submission(s) and the "
            f"anchors {' and '.join(ANCHORS)}), got {players}"
        )
    players = int(players)
    games = _check_int("games", games, 1, MAX_GAMES)
    seed = _check_int("seed", seed, 0)
    bootstrap = _check_int("bootstrap", bootstrap, 0, MAX_BOOTSTRAP)
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
    chosen, fmt = fmt, choose_format(agents, players, fmt)
    if fmt == "round-robin" and rounds is not None:
        raise ValueError(
            "--rounds is for a Swiss tournament; a round-robin has one round"
            + (
                ""
                if chosen == "round-robin"  # (auto chose it: say why, and how to play Swiss rounds)
                else f" (auto: {agents} agents at {players} seats make {math.comb(agents, players)} groups, a "
                f"round-robin up to {ROUND_ROBIN_MAX_GROUPS}); --format swiss plays Swiss rounds"
            )
        )
    rounds = (
        1
        if fmt == "round-robin"
        else _check_int("rounds", default_rounds(agents) if rounds is None else rounds, 1, MAX_ROUNDS)
    )
    # every deal is played at every rotation of its table: games x the seats of a round's tables x rounds
    seats = sum(len(group) for group in round_robin_groups(agents, players)) if fmt == "round-robin" else agents
    if games * seats * rounds > MAX_GAMES:
        raise ValueError(
            f"the tournament would play {games * seats * rounds:,} games ({games:,} deal(s) x {seats} seats x "
            f"{rounds} round(s)), beyond the limit of {MAX_GAMES:,}: fewer --games or --rounds"
        )
    for name in names:  # a typo of a built-in, a FILE.py that is not there: refused as grade refuses them, before
        check_agent(name, load=False)  # any sandbox starts (an isolated submission's code never runs here)
    tables = compile_rules(rules)
    turns = tables.turns
    solution = load_solution(rules, required=True)
    if started is not None:
        started()
    entries = [
        Entry("optimal", "anchor", make_agent("optimal", rules, solution=solution)),
        Entry("greedy", "anchor", make_agent("greedy", rules)),
    ]
    folders = [_folder(name) for name in names]  # (a folder of several entries' files is a class's, not a student's)
    try:
        for k, name in enumerate(names):
            if is_builtin(name):  # the library's own agents (winning, random, trained, model:PATH): no sandbox
                # seeded from the tournament's seed: the same seed, the same random agent's moves
                agent_seed = int(np.random.SeedSequence([seed, 0xA6E17, k]).generate_state(1, np.uint64)[0] >> 1)
                builtin = make_agent(name, rules, solution=solution, seed=agent_seed)
                # (a model trained at another table size): a round-robin's groups are of `players`, Swiss tables vary
                sizes = [players] if fmt == "round-robin" else sorted(set(table_sizes(agents, players)))
                for size in sizes:
                    problem = table_problem(builtin, tables, size)
                    if problem is not None:
                        raise ValueError(f"{name}: {problem} (tables of {size} in this tournament)")
                entries.append(Entry(name, "builtin", builtin))
                continue
            agent = SandboxedAgent(
                name,
                rules,
                seed=seed,
                limits=limits,
                isolated=isolated,
                solver=solver,
                start=False,
                own_folder=folders[k] is not None and folders.count(folders[k]) == 1,
            )
            entries.append(Entry(name, "submission", agent))
            agent.start()  # (one at a time: a sandbox dies with the thread that started it)
            if agent.load_error is not None and progress:
                said = f"{name} did not load: {agent.load_error.message}; it forfeits its games"
                print(summary_text_line(said), file=sys.stderr)
        plan = _Plan(rules, players, games, seed, fmt, rounds, turns, objective, progress)
        records, matches, interrupted = _play(entries, plan)
    finally:
        for entry in entries:
            if entry.kind == "submission":
                entry.player.close()
    if interrupted and not matches:
        raise KeyboardInterrupt  # (no match complete: no standings to give)
    comparisons = Comparisons.of([row for m in matches for row in m.comparisons(objective)])
    anchor = [e.name for e in entries].index(ANCHOR)
    ratings = rate(comparisons, len(entries), anchor, bootstrap=bootstrap, seed=seed)
    return {
        "format_version": FORMAT_VERSION,
        "rules": rules.name,
        "rules_title": rules.title,
        "rules_options": dict(rules.options),
        "rules_fingerprint": rules.fingerprint,
        "box_names": list(rules.box_names),
        "players": players,
        "games": games,
        "seed": seed,
        "format": fmt,
        "rounds": rounds,
        "objective": objective,
        "interrupted": interrupted,
        "rating": {
            "method": "Bradley-Terry (Elo scale) fitted to every pairwise duplicate comparison "
            + ("of points summed over a match" if objective == "points" else "of games finished first in a match"),
            "anchor": ANCHOR,
            "anchor_rating": ANCHOR_RATING,
            "prior_sd": PRIOR_SD,
            "interval": "95% percentile bootstrap over matches"
            if ratings.bootstrap
            else "none (--bootstrap 0)"
            if bootstrap == 0
            else "none (fewer than two matches to resample)",
            "bootstrap": ratings.bootstrap,
        },
        "isolation": {
            "isolated": bool(isolated),
            "solver": solver,
            "limits": asdict(limits if limits is not None else Limits()),  # (what applied)
        },
        "agents": [e.name for e in entries],
        "standings": _standings(entries, records, ratings),
        "matches": [
            {
                "id": m.id,
                "round": m.round,
                "deal": m.deal,
                "agents": list(m.agents),
                "games": m.games,
                "totals": m.totals,
                "firsts": m.firsts,
            }
            for m in matches
        ],
        "failures": {
            e.name: [
                _failure_json(f, [p.id for p in records if i in p.agents])
                for f in ([e.player.load_error] if e.player.load_error else []) + e.player.failures
            ]
            for i, e in enumerate(entries)
            if e.kind == "submission" and (e.player.load_error is not None or e.player.failures)
        },
        "games_played": [_game_json(g) for g in records],
    }


@dataclass
class _Played:
    """A game record with where it was played."""

    id: int
    match: int
    round: int
    deal: int
    rotation: int
    agents: tuple[int, ...]
    record: GameRecord


@dataclass(frozen=True)
class _Plan:
    """What :func:`_play` plays (:func:`tournament`'s checked arguments; ``turns``: a game's)."""

    rules: Rules
    players: int
    games: int
    seed: int
    fmt: str
    rounds: int
    turns: int
    objective: str
    progress: bool


def _play(entries: list[Entry], plan: _Plan) -> tuple[list[_Played], list[Match], bool]:
    """Every round's matches, played: the game records, the matches and whether Ctrl-C or SIGTERM stopped them
    (then the matches complete before it, with their games: a match cut short is left out whole, its tables
    not all played)."""
    records: list[_Played] = []
    matches: list[Match] = []
    try:
        _play_rounds(entries, plan, records, matches)
    except KeyboardInterrupt:
        del records[sum(len(m.games) for m in matches) :]
        return records, matches, True
    return records, matches, False


def _play_rounds(entries: list[Entry], plan: _Plan, records: list[_Played], matches: list[Match]) -> None:
    """:func:`_play`'s rounds, appending to ``records`` and ``matches`` (a match once all its tables are played)."""
    rules, players, games, seed, fmt, progress = (
        plan.rules,
        plan.players,
        plan.games,
        plan.seed,
        plan.fmt,
        plan.progress,
    )
    n = len(entries)
    met = np.zeros((n, n), dtype=np.int64)
    shuffle = np.random.default_rng(np.random.SeedSequence([seed, 1])).permutation(n).tolist()
    for round_ in range(plan.rounds):
        if fmt == "round-robin":
            groups = round_robin_groups(n, players)
        else:
            if matches:
                fitted = rate(
                    Comparisons.of([r for m in matches for r in m.comparisons(plan.objective)]), n, 0, bootstrap=0
                )
                order = sorted(range(n), key=lambda a: (-fitted.rating[a], shuffle.index(a)))
            else:
                order = shuffle
            groups = swiss_tables(order, met, players)
        in_round = games * sum(len(g) for g in groups)  # every deal at every rotation of its table
        start = len(records)
        if progress:
            print(f"round {round_ + 1} of {plan.rounds}: {len(groups)} table(s), {in_round:,} games", file=sys.stderr)
        last = time.monotonic()
        for group in groups:
            for a, b in itertools.combinations(group, 2):
                met[a, b] += 1
                met[b, a] += 1
            for _ in range(games):
                # every match its own deal: a submission keeps its memory from game to game, and a deal it met
                # before (another group's, the same round) would be dice it knows in advance
                match = Match(
                    len(matches), round_, len(matches), group, totals=[0] * len(group), firsts=[0] * len(group)
                )
                faces = deal_faces(seed, match.deal, len(group), plan.turns)
                for k in range(len(group)):
                    seated = rotation(group, k)
                    record = play_game(rules, [entries[a].player for a in seated], faces)
                    record.seats = list(seated)
                    for seat, (points, first) in enumerate(zip(record.results, record.firsts())):
                        match.totals[group.index(seated[seat])] += points
                        match.firsts[group.index(seated[seat])] += first
                    played = _Played(len(records), match.id, round_, match.deal, k, seated, record)
                    records.append(played)
                    match.games.append(played.id)
                    if progress and time.monotonic() - last >= PROGRESS_SECONDS:
                        last = time.monotonic()
                        print(f"  {len(records) - start:,} of {in_round:,} games", file=sys.stderr, flush=True)
                matches.append(match)


def _standings(entries: list[Entry], records: list[_Played], ratings: Any) -> list[dict[str, Any]]:
    """One row per agent (:data:`COLUMNS`), best rating first."""
    n = len(entries)
    games, wins, failures = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    points = np.zeros(n, dtype=np.int64)
    for played in records:
        record = played.record
        firsts = record.firsts()
        for seat, agent in enumerate(played.agents):
            games[agent] += 1
            points[agent] += record.results[seat]
            wins[agent] += firsts[seat]
            failures[agent] += seat in record.forfeited
    order = sorted(range(n), key=lambda a: (-ratings.rating[a], entries[a].name))
    rows = []
    for place, a in enumerate(order, start=1):
        rows.append(
            {
                "rank": place,
                "agent": entries[a].name,
                "kind": entries[a].kind,
                "rating": round(float(ratings.rating[a]), 1),
                "rating_low": round(float(ratings.low[a]), 1) if ratings.bootstrap else None,
                "rating_high": round(float(ratings.high[a]), 1) if ratings.bootstrap else None,
                "games": int(games[a]),
                "wins": int(wins[a]),
                "mean_score": round(float(points[a] / games[a]), 2) if games[a] else None,
                "failures": int(failures[a]),
                "status": entries[a].status(),
                # won or lost every comparison: the prior, not the games, sets the rating (ratings.Ratings.perfect)
                "record": {1: "unbeaten", -1: "winless"}.get(int(ratings.perfect[a]), ""),
                # the library's solver or agents it imported (or tried to): what --solver flag reports
                "solver_imports": ";".join(entries[a].player.solver_imports) if entries[a].kind == "submission" else "",
            }
        )
    return rows


def _failure_json(failure: Any, seated: list[int]) -> dict[str, Any]:
    """A submission's failure as JSON; its ``game`` counts that submission's own games (from 0), and ``game_id``
    is the game's ``id`` in ``games.json`` (None while loading)."""
    data = failure.to_json()
    data["game_id"] = seated[failure.game] if 0 <= failure.game < len(seated) else None
    return data


def _game_json(played: _Played) -> dict[str, Any]:
    record = played.record
    return {
        "id": played.id,
        "match": played.match,
        "round": played.round,
        "deal": played.deal,
        "rotation": played.rotation,
        "seats": list(played.agents),
        "scores": record.scores,
        "results": record.results,
        "ranks": record.ranks(),
        "forfeits": [
            {"seat": f.seat, "move": f.move, "kind": f.kind, "message": f.message[:2000]} for f in record.forfeits
        ],
        "moves": record.moves,
    }


# ------------------------------------------------------------------ files
def standings_csv(result: dict[str, Any]) -> str:
    """The standings as CSV (:data:`COLUMNS`); a cell a spreadsheet would read as a formula is quoted with ``'``."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(COLUMNS)
    for row in result["standings"]:
        cells = ["" if row.get(c) is None else row[c] for c in COLUMNS]  # (standings of older files lack a few)
        writer.writerow(["'" + c if isinstance(c, str) and c[:1] in ("=", "+", "-", "@") else c for c in cells])
    return buffer.getvalue()


def standings_json(result: dict[str, Any]) -> str:
    """Everything but the games, as indented JSON."""
    return json.dumps({k: v for k, v in result.items() if k != "games_played"}, indent=1, sort_keys=True) + "\n"


def games_json(result: dict[str, Any]) -> str:
    """Every game, one a line."""
    body = ",\n".join(json.dumps(g, separators=(",", ":"), sort_keys=True) for g in result["games_played"])
    return (
        '{"agents": '
        + json.dumps(result["agents"])
        + ', "box_names": '
        + json.dumps(result["box_names"])
        + (', "interrupted": true' if result.get("interrupted") else "")
        + (f', "games": [\n{body}\n]}}\n')
    )


def write_outputs(result: dict[str, Any], out: Path) -> list[Path]:
    """:data:`OUTPUT_FILES` in ``out``, each written whole, then renamed into place."""
    from agents.course.grader import write_whole
    from agents.course.tournament_page import render_html

    texts = {
        "standings.csv": standings_csv(result),
        "standings.json": standings_json(result),
        "games.json": games_json(result),
        "leaderboard.html": render_html(result),
    }
    return [write_whole(out / name, text) for name, text in texts.items()]


def summary_text(result: dict[str, Any]) -> str:
    """The standings for the terminal (control characters replaced by ``?``)."""
    sizes = sorted({len(m["agents"]) for m in result["matches"]} or {result["players"]}, reverse=True)
    seats = f"{sizes[0]} seats a table" if len(sizes) == 1 else f"tables of {' and '.join(map(str, sizes))} seats"
    lines = [
        *(
            [f"INTERRUPTED: partial standings, from the {len(result['matches'])} match(es) complete before it"]
            if result.get("interrupted")
            else []
        ),
        f"{result['rules']}: {len(result['agents'])} agents, {result['format']}, {result['rounds']} round(s), "
        f"{len(result['matches'])} match{'es' if len(result['matches']) != 1 else ''}, "
        f"{len(result['games_played']):,} games, {seats}, "
        # (the same agents rate differently by each objective: the line says which these ratings are)
        + (
            "rated by games finished first (--objective wins)"
            if result.get("objective") == "wins"
            else "rated by points"
        ),
        f"{'rank':>4}  {'rating':>7}  {'95% interval':>15}  {'games':>5}  {'wins':>4}  {'mean':>7}  {'fail':>4}  agent",
    ]
    for row in result["standings"]:
        mean = "n/a" if row["mean_score"] is None else f"{row['mean_score']:.2f}"
        interval = (
            f"{'fixed':>7}  {'':<7}"
            if row["agent"] == result["rating"]["anchor"]
            else f"{'none':>7}  {'':<7}"
            if row["rating_low"] is None
            else f"{row['rating_low']:>7.1f}..{row['rating_high']:<7.1f}"
        )
        lines.append(
            f"{row['rank']:>4}  {row['rating']:>7.1f}  {interval} "
            f"{row['games']:>5}  {row['wins']:>4}  {mean:>7}  {row['failures']:>4}  {row['agent']}"
            + ("" if row["status"] == "ok" else f" ({row['status']})")
            + (f" ({PERFECT_NOTE[row['record']]})" if row.get("record") else "")
            + (f" [imported {row['solver_imports'].replace(';', ', ')}]" if row.get("solver_imports") else "")
        )
    if not result["rating"]["bootstrap"]:
        lines.append(f"95% intervals: {result['rating']['interval']}")
    for row in result["standings"]:  # why a submission played no game: the reason, not only its status
        failures = result.get("failures", {}).get(row["agent"]) or []
        if row["status"] == "not_loaded" and failures:
            lines.append(f"{row['agent']} did not load: {failures[0]['message']}")
    return "\n".join(summary_text_line(line) for line in lines)
