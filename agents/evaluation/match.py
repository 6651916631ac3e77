"""Head to head: two agents in duplicate two-player games, reported as a win rate with a 95% CI.

A match is ``N`` *deals*. A deal (:func:`dice_poker_env.dice_sources.deal_faces`) fixes the dice of
every seat, turn and roll: the turn's first roll takes all five faces of ``faces[seat, turn, 0]``,
a reroll of ``k`` dice the first ``k`` faces of ``faces[seat, turn, roll]``. Each deal is played
twice, agent A in seat 0 against B in seat 1, then with the seats swapped, so both agents play
both seats' dice and the luck of the dice cancels out of the pair: an agent playing itself wins
exactly half of every pair.

**Win rate.** A's result in a game is 1 for a win, 1/2 for a tie, 0 for a loss (the higher final
total wins); the win rate is the mean result. The two games of a deal share their dice and are
not independent; the deals are. So the 95% interval is a normal interval over the *deals*: each
deal's two results averaged, ``mean ± 1.96 s / sqrt(N)`` (``s`` the standard deviation of the
deal means). The games needed for a half-width ``w`` follow from ``s``: ``2 (1.96 s / w)**2``.
When every deal had the same result (``s`` = 0: all won, all lost or all split), that interval
would have no width; the Wilson score interval over the deals replaces it (:func:`wilson`).

**Lockstep.** Every game of a block of deals is played at once on the engine's batched step
(:func:`~dice_poker_env.engine.game.step_batch`): at each step, each game's player to move
decides; an agent that answers ``act_batch`` over independent rows and keeps no state (the
project's batch agents, :func:`~agents.players.registry.is_batch_agent`) gets one call for all
its games; any other agent gets ``act()`` per decision and its games are played one at a time
(it may keep state within a game), each after ``seed(...)`` (where it has one: the seat's seed,
:func:`seat_seed`) and ``reset()``. Observations are the multi-player env's
(:func:`dice_poker_env.multi.observations.encode_batch`, in the layout each agent reads), so a
match plays exactly the games the AEC env plays deal by deal
(:func:`agents.course.duplicate.play_game`, ``tests/test_match.py`` checks it). An agent that
answers an illegal action stops the match with an error naming it.

Layering: imports the core package and :mod:`agents` (the registry, the duplicate deals).

Size: one measurement: the lockstep play of the deals, the win rate's statistics (with the
auto mode's stopping rule) and its text, which are only used together.
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from agents.evaluation.benchmark import Z95  # the normal 97.5% quantile (95% two-sided intervals)
from agents.evaluation.limits import MAX_GAMES
from agents.players.registry import as_action, check_agent, is_batch_agent
from dice_poker_env.dice_sources import deal_faces
from dice_poker_env.engine.combinatorics import N_DICE, N_KEEP_ACTIONS, REROLLED_POSITIONS, roll_index_of_sorted
from dice_poker_env.engine.game import explain_illegal, new_batch, step_batch
from dice_poker_env.engine.masks import action_masks
from dice_poker_env.engine.state import ROLLS_PER_TURN, BatchState
from dice_poker_env.engine.tables import RuleTables, compile_rules
from dice_poker_env.envs.observation import observe_flat_batch
from dice_poker_env.multi.observations import PlayerLayout, encode_batch, multi_observation_space, player_layout
from dice_poker_env.rules import Rules, load_rules

#: deals played at once in lockstep (twice as many games): bounds the memory of a block
LOCKSTEP_DEALS = 2048
#: ``games="auto"``: the games of the first block, whose spread sizes the rest
AUTO_PILOT_GAMES = 2000
#: ``games="auto"``: the default cap on the games played
AUTO_MAX_GAMES = 1_000_000
#: ``games="auto"``: what the result records of the first block (``pilot``)
PILOT_KEYS = ("games", "win_rate", "win_rate_ci95_half_width", "win_rate_deal_sd", "games_for_half_width_1pp")
#: a seat's seed for agents that take one: a tag that keeps it apart from the dice's seed sequences
_SEAT_SEED_TAG = 0x6D61746368  # "match"

#: ``_FACE_OF[keep_bits, position]``: which face of a roll's dealt faces a rerolled position takes (the
#: ``k`` rerolled positions, in order, take the first ``k``; kept positions read face 0 and are ignored)
_FACE_OF = np.zeros((N_KEEP_ACTIONS, N_DICE), dtype=np.int64)
for _bits, _positions in enumerate(REROLLED_POSITIONS):
    _FACE_OF[_bits, list(_positions)] = np.arange(len(_positions))


def seat_seed(seed: int, deal: int, seat: int) -> int:
    """The seed of the agent in ``seat`` of ``deal`` (for agents with ``seed()``): the same in both
    games of the deal, whichever agent sits there, so an agent playing itself plays the same game twice."""
    state = np.random.SeedSequence([int(seed), int(deal), int(seat), _SEAT_SEED_TAG]).generate_state(1, np.uint32)
    return int(state[0])


@dataclass
class _Player:
    """An agent as a match plays it."""

    agent: Any
    name: str
    batch: bool
    layout: PlayerLayout

    def observe(self, tables: RuleTables, own: BatchState, other: BatchState) -> Any:
        """The observations of the games ``own`` (the player's), ``other`` the opponent's, in its layout."""
        if self.layout.obs_mode == "dict":
            return self.layout.cut(encode_batch(tables, own, [other], "dict"))  # type: ignore[arg-type]
        if self.layout.multi_flat:
            return encode_batch(tables, own, [other], "flat")
        return observe_flat_batch(tables, own)

    def decide(self, observations: Any, masks: np.ndarray) -> np.ndarray:
        """One action per row: one ``act_batch`` call, or ``act`` per row."""
        n = len(masks)
        if self.batch:
            actions = np.asarray(self.agent.act_batch(observations, masks))
            if actions.shape not in ((n,), (n, 1)) or not np.issubdtype(actions.dtype, np.integer):
                raise ValueError(
                    f"match: agent {self.name}'s act_batch returned {actions.dtype} {actions.shape}, "
                    f"not {n} action indices"
                )
            return actions.astype(np.int64).reshape(n)
        out = np.empty(n, dtype=np.int64)
        for i in range(n):
            row = {k: v[i] for k, v in observations.items()} if isinstance(observations, dict) else observations[i]
            out[i] = as_action(self.agent.act(row, masks[i].copy()), f"agent {self.name}")
        return out


def plays_batches(agent: Any, lockstep: bool | None = None) -> tuple[Any, bool]:
    """``(agent, batch)``: the agent a match calls (a custom spec's wrapper around one of the project's
    batch agents is unwrapped) and whether it gets whole batches (``act_batch``); ``lockstep`` forces it."""
    inner = getattr(agent, "agent", None)
    if is_batch_agent(inner):
        agent = inner
    return agent, is_batch_agent(agent) if lockstep is None else bool(lockstep)


def _player(agent: Any, name: str, multi_flat_shape: tuple[int, ...] | None, lockstep: bool | None) -> _Player:
    agent, batch = plays_batches(agent, lockstep)
    if batch and not callable(getattr(agent, "act_batch", None)):
        raise ValueError(f"match: agent {name} has no act_batch, so it cannot play in lockstep")
    return _Player(agent, name, batch, player_layout(agent, multi_flat_shape))


def play_deals(
    rules: str | os.PathLike[str] | Rules,
    agents: Sequence[Any],
    seed: int,
    deals: int,
    *,
    first: int = 0,
    names: Sequence[str] | None = None,
    lockstep: bool | None = None,
    progress: Callable[[int], None] | None = None,
) -> np.ndarray:
    """Play deals ``first .. first + deals - 1`` of seed ``seed`` twice each; the final scores.

    Args:
        rules: the ruleset.
        agents: ``(A, B)``, agent objects (``act``; ``act_batch`` for lockstep).
        seed: the match's seed (the dice: :func:`~dice_poker_env.dice_sources.deal_faces`).
        deals: how many deals.
        first: the first deal's index (a match played in blocks continues where it stopped).
        names: the agents' names for messages.
        lockstep: ``None``: lockstep for the project's batch agents, game by game for the others;
            ``True``/``False`` forces it for both.
        progress: called with the number of games just finished.

    Returns:
        ``(deals, 2, 2)`` int64: ``scores[d, g, s]`` is the final total of seat ``s`` in game ``g`` of
        deal ``first + d``; in game 0 A sits in seat 0, in game 1 in seat 1.

    Raises:
        ValueError: an agent answered something that is not a legal action.
    """
    rules = load_rules(rules)
    tables = compile_rules(rules)
    if len(agents) != 2:
        raise ValueError(f"a match has two agents, got {len(agents)}")
    names = list(names) if names is not None else [getattr(a, "name", type(a).__name__) for a in agents]
    shape = multi_observation_space(tables, 2, "flat").shape
    players = [_player(agent, name, shape, lockstep) for agent, name in zip(agents, names)]
    out = np.empty((int(deals), 2, 2), dtype=np.int64)
    if all(p.batch for p in players):
        for start in range(0, deals, LOCKSTEP_DEALS):
            count = min(LOCKSTEP_DEALS, deals - start)
            faces = np.stack([deal_faces(seed, first + start + d, 2, tables.turns) for d in range(count)])
            for p in players:
                _reset(p.agent)
            deal_of = np.repeat(np.arange(count), 2)
            swap = np.tile(np.arange(2), count)
            scores = _lockstep(tables, players, faces, deal_of, swap, first + start)
            out[start : start + count] = scores.reshape(count, 2, 2)
            if progress is not None:
                progress(2 * count)
        return out
    for d in range(deals):
        faces = deal_faces(seed, first + d, 2, tables.turns)[None]
        for order in (0, 1):
            for seat in (0, 1):
                agent = players[seat ^ order].agent
                if callable(getattr(agent, "seed", None)):
                    agent.seed(seat_seed(seed, first + d, seat))
                _reset(agent)
            out[d, order] = _lockstep(tables, players, faces, np.zeros(1, np.int64), np.array([order]), first + d)[0]
            if progress is not None:
                progress(1)
    return out


def _reset(agent: Any) -> None:
    reset = getattr(agent, "reset", None)
    if callable(reset):
        reset()


def _lockstep(
    tables: RuleTables, players: list[_Player], faces: np.ndarray, deal_of: np.ndarray, swap: np.ndarray, first: int
) -> np.ndarray:
    """Play games at once: game ``g`` on the dice ``faces[deal_of[g]]`` (``(2, turns, 3, 5)``), agent
    ``players[seat ^ swap[g]]`` in each seat. Returns the final totals, ``(games, 2)`` by seat.

    Seat ``s`` of game ``g`` is row ``2 g + s`` of one engine batch. Each step advances every
    unfinished game by its player to move; a score action starts that seat's next turn at once
    (its dice are the deal's, whenever they are rolled); the game ends with seat 1's last box.
    """
    masks = action_masks(tables)
    games = len(deal_of)
    first_faces = np.sort(faces[deal_of][:, :, 0, 0].reshape(2 * games, N_DICE), axis=1)
    state = new_batch(tables, roll_index_of_sorted(first_faces))
    current = np.zeros(games, dtype=np.int64)  # the seat to move in each game
    live = np.arange(games)
    last_turn = tables.turns - 1
    while len(live):
        seat = current[live]
        rows, other = 2 * live + seat, 2 * live + 1 - seat
        now = state.take(rows)
        mask = masks.of_batch(now)
        who = seat ^ swap[live]
        actions = np.empty(len(live), dtype=np.int64)
        for k, player in enumerate(players):
            mine = np.flatnonzero(who == k)
            if len(mine):
                observations = player.observe(tables, now.take(mine), state.take(other[mine]))
                actions[mine] = player.decide(observations, mask[mine])
        in_range = (actions >= 0) & (actions < tables.n_actions)
        legal = in_range & (mask[np.arange(len(live)), np.where(in_range, actions, 0)] != 0)
        if not legal.all():
            i = int(np.flatnonzero(~legal)[0])
            reason = explain_illegal(tables, now.game(i), int(actions[i]))
            raise ValueError(
                f"match: agent {players[who[i]].name} chose an illegal action in deal {first + int(deal_of[live[i]])} "
                f"(seat {int(seat[i])}): {reason}"
            )
        keep = actions < N_KEEP_ACTIONS
        turn = now.turn
        dealt = faces[
            deal_of[live],
            seat,
            np.where(keep, turn, np.minimum(turn + 1, last_turn)),  # a score rolls the seat's next turn
            np.where(keep, ROLLS_PER_TURN - now.rolls_left, 0),
        ]
        rolled = np.take_along_axis(dealt, _FACE_OF[np.where(keep, actions, 0)], axis=1)
        new, _, over = step_batch(tables, now, actions, rolled)
        for values, updated in zip(state, new):
            values[rows] = updated
        scored = ~keep
        current[live[scored]] = 1 - seat[scored]
        live = live[~(scored & over & (seat == 1))]
    return state.total.reshape(games, 2)


def summarize(scores: np.ndarray) -> dict[str, Any]:
    """The match's statistics from :func:`play_deals`' scores (``(deals, 2, 2)``), from A's side.

    ``win_rate`` = (wins + ties / 2) / games, with its 95% normal interval over the deals
    (``win_rate_ci95``, clipped to [0, 1]; ``win_rate_ci95_half_width``; when every deal had the
    same result, the :func:`wilson` interval, named in ``win_rate_ci95_method``); the win rate in each
    seat; the mean scores and the mean margin (A - B, with its interval over deals); ``split_deals``,
    the share of deals whose two games went one to each agent (or tied both); and
    ``games_for_half_width_1pp``, the games a half-width of one percentage point needs at this spread.
    """
    scores = np.asarray(scores, dtype=np.int64)
    deals = len(scores)
    game = np.arange(2)
    a = scores[:, game, game]  # A sits in seat g in game g
    b = scores[:, game, 1 - game]
    result = (np.sign(a - b) + 1) / 2.0  # 1 win, 1/2 tie, 0 loss
    per_deal = result.mean(axis=1)
    win_rate = float(per_deal.mean()) if deals else float("nan")
    spread = float(per_deal.std(ddof=1)) if deals > 1 else float("nan")
    half = Z95 * spread / math.sqrt(deals) if deals > 1 else float("nan")
    low, high = max(0.0, win_rate - half), min(1.0, win_rate + half)
    method = "normal over deals"
    if deals > 1 and spread == 0.0:  # every deal the same result: the normal interval would have no width
        low, high = wilson(win_rate, deals)
        half, method = max(win_rate - low, high - win_rate), "Wilson score over deals (every deal had the same result)"
    margin = (a - b).mean(axis=1)
    margin_half = Z95 * float(margin.std(ddof=1)) / math.sqrt(deals) if deals > 1 else float("nan")
    # (not from a spread of 0: every deal the same result tells nothing of the spread; the Wilson interval stands)
    needed = 2 * math.ceil((Z95 * spread / 0.01) ** 2) if deals > 1 and spread > 0 else None
    return {
        "games": 2 * deals,
        "deals": deals,
        "wins": int((a > b).sum()),
        "ties": int((a == b).sum()),
        "losses": int((a < b).sum()),
        "win_rate": win_rate,
        "win_rate_ci95": [low, high] if deals > 1 else None,
        "win_rate_ci95_half_width": half if deals > 1 else None,
        "win_rate_ci95_method": method if deals > 1 else None,
        "win_rate_deal_sd": spread if deals > 1 else None,
        "win_rate_seat": [float(result[:, 0].mean()), float(result[:, 1].mean())] if deals else None,
        "mean_score": [float(a.mean()), float(b.mean())] if deals else None,
        "margin_mean": float(margin.mean()) if deals else None,
        "margin_ci95_half_width": margin_half if deals > 1 else None,
        "split_deals": float(np.mean(per_deal == 0.5)) if deals else None,
        "games_for_half_width_1pp": needed,
    }


def wilson(rate: float, n: int) -> tuple[float, float]:
    """The 95% Wilson score interval of a proportion ``rate`` observed over ``n`` trials.

    Unlike the normal interval it keeps a width when every trial had the same outcome: after
    ``n`` lost deals the win rate is below ``Z95**2 / (n + Z95**2)``, not exactly 0.
    """
    z2 = Z95 * Z95
    centre = (rate + z2 / (2 * n)) / (1 + z2 / n)
    half = Z95 / (1 + z2 / n) * math.sqrt(rate * (1 - rate) / n + z2 / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def games_needed(deal_sd: float, half_width: float) -> int:
    """Games (two per deal) for a 95% half-width of ``half_width`` when the deal means spread ``deal_sd``."""
    return 2 * max(1, math.ceil((Z95 * deal_sd / half_width) ** 2))


def _check_games(games: Any) -> int:
    if isinstance(games, bool) or not isinstance(games, (int, np.integer)):
        raise ValueError(f"games must be an even integer >= 2 or 'auto', got {games!r}")
    if games < 2 or games % 2:
        raise ValueError(f"games must be an even number >= 2 (each deal is played twice, seats swapped), got {games}")
    if games > MAX_GAMES:
        raise ValueError(f"games of {games:,} is beyond the limit of {MAX_GAMES:,}; play more seeds in several runs")
    return int(games)


def _build(spec: str, rules: Rules, seed: int, solution: Any) -> Any:
    """The agent ``spec`` at a two-player table; a model trained at a table of another size is refused here,
    in one line (it would fail on its first observation with its library's message)."""
    from agents.players.registry import make_agent
    from dice_poker_env.engine.tables import compile_rules
    from dice_poker_env.multi.observations import table_problem

    agent = make_agent(spec, rules, seed=seed, solution=solution if spec == "optimal" else None)
    problem = table_problem(agent, compile_rules(rules), 2)
    if problem is not None:
        raise ValueError(f"--agents {spec}: {problem}")
    return agent


def match(
    rules: str | os.PathLike[str] | Rules,
    agent_a: str,
    agent_b: str,
    *,
    games: int | str = 2000,
    seed: int = 0,
    target_ci: float | None = None,
    max_games: int = AUTO_MAX_GAMES,
    lockstep: bool | None = None,
    progress: Callable[[int], None] | None = None,
    announce: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """A duplicate match of two agent specs (:mod:`agents.players.registry`), as a JSON-ready dict.

    Args:
        rules: ruleset name, rules file or :class:`Rules`.
        agent_a: agent A's spec (``optimal``, ``greedy``, ``model:PATH``, ``FILE.py:NAME``, ...).
        agent_b: agent B's spec.
        games: an even number of games (two per deal), or ``"auto"``: play blocks until the win
            rate's 95% half-width is at most ``target_ci`` or ``max_games`` are played.
        seed: the match's seed: the same seed, the same dice, the same result.
        target_ci: ``games="auto"``: the half-width to reach (a fraction: 0.01 is one point).
        max_games: ``games="auto"``: the cap.
        lockstep: as :func:`play_deals`.
        progress: called with the number of games just finished.
        announce: called with a line before the first game (how many games will be played).

    Returns:
        :func:`summarize`'s fields plus ``agents``, ``rules``, ``rules_options``, ``rules_fingerprint``,
        ``seed``, ``target_ci``, ``pilot`` (``games="auto"``: the first block's spread and the games it says
        a one-point half-width needs), ``lockstep``, ``wall_seconds``, ``games_per_second`` and ``library_version``.

    Raises:
        ValueError: a bad argument or agent spec, or an agent that answered an illegal action.
    """
    import dice_poker_env

    rules = load_rules(rules)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    auto = games == "auto"
    target, n_games = 0.0, 0
    if auto:
        if (
            not isinstance(target_ci, (int, float, np.floating))
            or isinstance(target_ci, bool)
            or not 0 < target_ci < 0.5
        ):
            raise ValueError(
                f"games='auto' needs target_ci, a half-width in (0, 0.5) (0.01 = one point), got {target_ci!r}"
            )
        target = float(target_ci)
        max_games = _check_games(max_games)
        if max_games < 4:
            raise ValueError(f"games='auto' needs max_games >= 4 (two deals, for a spread), got {max_games}")
    elif target_ci is not None:
        raise ValueError("target_ci is for games='auto'")
    else:
        n_games = _check_games(games)
    for spec in (agent_a, agent_b):
        check_agent(spec)
    solution = None
    if "optimal" in (agent_a, agent_b):
        from agents.evaluation.benchmark import load_solution

        solution = load_solution(rules, required=True)
    agents = [_build(agent_a, rules, seed, solution), _build(agent_b, rules, seed, solution)]
    if agent_b == agent_a and agents[1] is agents[0]:  # (an agent object named twice: give B its own)
        agents[1] = _build(agent_b, rules, seed, solution)
    names = [agent_a, agent_b] if agent_a != agent_b else [f"{agent_a} (A)", f"{agent_b} (B)"]
    start = time.perf_counter()
    pilot: dict[str, Any] | None = None
    if not auto:
        if announce is not None:
            deals = n_games // 2
            announce(
                f"plays {n_games:,} games ({deals:,} deal{'s' if deals != 1 else ''}, each with the seats swapped)"
            )
        scores = play_deals(rules, agents, seed, n_games // 2, names=names, lockstep=lockstep, progress=progress)
    else:
        if announce is not None:
            announce(
                f"plays {min(AUTO_PILOT_GAMES, max_games):,} games, then more until the 95% half-width is at most "
                f"{100 * target:.2f} points (at most {max_games:,} games)"
            )
        blocks: list[np.ndarray] = []
        played, want = 0, min(AUTO_PILOT_GAMES, max_games) // 2
        while True:
            blocks.append(
                play_deals(
                    rules, agents, seed, want - played, first=played, names=names, lockstep=lockstep, progress=progress
                )
            )
            played = want
            row = summarize(np.concatenate(blocks))
            if pilot is None:
                pilot = {key: row[key] for key in PILOT_KEYS}
            half = row["win_rate_ci95_half_width"]
            if half <= target or 2 * played >= max_games:
                break
            needed = games_needed(row["win_rate_deal_sd"], target) // 2
            if row["win_rate_deal_sd"] == 0:  # every deal alike so far: the deals Wilson's interval needs
                needed = math.ceil(Z95 * Z95 * (1 - target) / target)
            want = min(max_games // 2, max(needed, played + max(1, played // 10)))  # (at least 10% more)
            if announce is not None:
                announce(f"half-width {100 * half:.2f} points after {2 * played:,} games: playing to {2 * want:,}")
        scores = np.concatenate(blocks)
    wall = time.perf_counter() - start
    row = summarize(scores)
    return {
        "agents": [agent_a, agent_b],
        "rules": rules.name,
        "rules_options": dict(rules.options),
        "rules_fingerprint": rules.fingerprint,
        "seed": int(seed),
        **row,
        "target_ci": target if auto else None,
        "target_reached": (row["win_rate_ci95_half_width"] <= target) if auto else None,
        "pilot": pilot,
        "lockstep": all(plays_batches(agent, lockstep)[1] for agent in agents),
        "wall_seconds": wall,
        "games_per_second": row["games"] / wall if wall > 0 else None,
        "library_version": dice_poker_env.__version__,
    }


def render(result: dict[str, Any]) -> str:
    """The match as a few lines of text."""
    a, b = result["agents"]
    low, high = result["win_rate_ci95"] or (float("nan"), float("nan"))
    interval = (
        f"95% CI {100 * low:.2f} - {100 * high:.2f}"
        if np.isfinite(low) and np.isfinite(high)
        else "no interval from one deal: play at least 4 games"
    )
    if (result.get("win_rate_ci95_method") or "").startswith("Wilson"):
        interval += ", Wilson: every deal had the same result"
    deals = f"{result['deals']:,} deal{'s' if result['deals'] != 1 else ''}"
    lines = [
        f"{result['rules']}: {a} vs {b}, {result['games']:,} games ({deals}, seats swapped), seed {result['seed']}",
        f"win rate of {a}  {100 * result['win_rate']:.2f}%  ({interval})",
        f"wins / ties / losses  {result['wins']:,} / {result['ties']:,} / {result['losses']:,}",
        f"as first player {100 * result['win_rate_seat'][0]:.2f}%, as second {100 * result['win_rate_seat'][1]:.2f}%",
        f"mean scores  {result['mean_score'][0]:.2f} vs {result['mean_score'][1]:.2f}  (margin "
        f"{result['margin_mean']:+.2f}"
        + (
            f" ± {result['margin_ci95_half_width']:.2f})"
            if result["margin_ci95_half_width"] is not None
            else ", no interval from one deal)"
        ),
    ]
    if result.get("target_reached") is False:
        lines.append(
            f"the 95% half-width is {100 * result['win_rate_ci95_half_width']:.2f} points, short of the target "
            f"{100 * result['target_ci']:.2f}: --max-games stopped the match first"
        )
    if result.get("games_for_half_width_1pp"):
        lines.append(f"games for a 1-point half-width at this spread: {result['games_for_half_width_1pp']:,}")
    lines.append(f"{result['wall_seconds']:.1f} s ({result['games_per_second']:,.0f} games/s)")
    return "\n".join(lines)


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
