"""Duplicate play: one game of a tournament table, with dice dealt per seat, turn and roll.

In duplicate play (as in duplicate bridge) the same dice are dealt again at several tables
with the agents in other seats, so that luck cancels out of the comparison. Here a *deal*
fixes, for every seat of a table, every turn and every roll of the turn, the five faces that
roll takes (:func:`deal_faces`): the turn's first roll takes all five, a reroll of ``k``
dice takes the first ``k``. The faces a seat gets depend only on the deal, the seat, the
turn and the roll, never on what anyone chose before, so the agent in seat ``k`` faces the
same dice whichever agent sits there, and two agents that make the same choices see the
same outcomes. The env (:class:`dice_poker_env.multi.raw_env`) draws its dice through a
:class:`DuplicateDice` source that :func:`play_game` points at the right seat, turn and
roll before every step.

**Forfeits.** An agent that fails in a game (it raises, crashes, hangs, answers with
something that is not a legal action; a sandboxed agent's failures are decided by
:class:`agents.course.sandbox.SandboxedAgent`) forfeits its seat: from then on the seat
writes its dice into the first legal box without rerolling (:func:`forfeit_action`), so the
other players finish their game on their own dice, and the forfeiting agent's result for the
game is 0 points and last place.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agents.players.registry import one_line
from dice_poker_env.dice_sources import DuplicateDice, deal_faces
from dice_poker_env.engine.combinatorics import N_KEEP_ACTIONS, ROLL_DICE
from dice_poker_env.engine.masks import action_masks
from dice_poker_env.engine.state import ROLLS_PER_TURN
from dice_poker_env.rules import Rules

__all__ = ["DuplicateDice", "GameRecord", "deal_faces", "forfeit_action", "play_game"]


def forfeit_action(mask: np.ndarray) -> int:
    """A forfeited seat's move: the first legal box (never a reroll)."""
    return N_KEEP_ACTIONS + int(np.flatnonzero(np.asarray(mask)[N_KEEP_ACTIONS:])[0])


@dataclass
class Forfeit:
    """Why a seat forfeited a game."""

    seat: int
    move: int
    kind: str
    message: str


@dataclass
class GameRecord:
    """One game at a table.

    Attributes:
        seats: the index of the agent in each seat (seat order = playing order).
        scores: each seat's final total (a forfeited seat's as played, before it counts 0).
        forfeits: the seats that forfeited, with why.
        moves: every decision in order: ``[seat, dice, rolls_left, action, points, forfeited]``,
            ``dice`` the sorted dice as a string of digits, ``points`` what the move wrote
            (bonuses included; ``None`` for a reroll), ``forfeited`` 1 for a forfeit's move.
    """

    seats: list[int]
    scores: list[int]
    forfeits: list[Forfeit] = field(default_factory=list)
    moves: list[list[Any]] = field(default_factory=list)

    @property
    def results(self) -> list[int]:
        """Each seat's points for the tournament: its score, or 0 for a forfeited seat."""
        out = list(self.scores)
        for forfeit in self.forfeits:
            out[forfeit.seat] = 0
        return out

    @property
    def forfeited(self) -> set[int]:
        return {f.seat for f in self.forfeits}

    def ranks(self) -> list[int]:
        """Each seat's place (1 = best; ties share the better place). A forfeited seat takes the last place, the
        number of seats, whatever the others did: a game every seat forfeited has no first place (they are not
        tied for first), as the standings' wins and a match's ``firsts`` count it."""
        n, forfeited = len(self.seats), self.forfeited
        played = [self.results[seat] for seat in range(n) if seat not in forfeited]
        return [
            n if seat in forfeited else 1 + sum(other > self.results[seat] for other in played) for seat in range(n)
        ]

    def firsts(self) -> list[bool]:
        """Each seat: whether it finished first (ties for first place included; a forfeited seat never): the
        standings' wins and a match's ``firsts``."""
        forfeited = self.forfeited
        return [rank == 1 and seat not in forfeited for seat, rank in enumerate(self.ranks())]


def _failure_of(agent: Any, before: int) -> tuple[str, str]:
    """The kind and message of the failure a sandboxed agent recorded in this game (it had ``before`` at its start)."""
    count, failures = getattr(agent, "failure_count", 0), getattr(agent, "failures", [])
    if count > before:
        if count > len(failures):  # past the failures a sandbox records in full
            return "failure", "a failure past the recorded ones"
        last = failures[count - 1]
        return str(getattr(last.kind, "value", last.kind)), str(last.message)
    load_error = getattr(agent, "load_error", None)
    if load_error is not None:
        return str(getattr(load_error.kind, "value", load_error.kind)), str(load_error.message)
    if not getattr(agent, "playing", True):
        return "stopped", f"no more decisions are asked for ({getattr(agent, 'stopped_because', None)})"
    return "illegal", "the agent answered with an action the mask forbids"


def play_game(rules: Rules, players: Sequence[Any], faces: np.ndarray) -> GameRecord:
    """Play one game with ``players[k]`` in seat ``k`` on the dice ``faces`` (:func:`deal_faces`).

    Every player is ``reset()`` first. A player whose ``act`` raises or returns anything but a
    legal action forfeits its seat (module docstring); nothing a player does stops the game.
    """
    from dice_poker_env.multi import raw_env

    seats = len(players)
    source = DuplicateDice(faces)
    env = raw_env(rules, seats, obs_mode="dict", dice_source=source)
    masks = action_masks(env.tables)
    source.expect(0, 0, 0)
    env.reset()
    record = GameRecord(seats=list(range(seats)), scores=[0] * seats)
    forfeited: set[int] = set()
    failures_before = [getattr(player, "failure_count", 0) for player in players]  # (a reset may fail too)
    for seat, player in enumerate(players):
        try:
            player.reset()
        except Exception as error:  # noqa: BLE001 - a player's failure forfeits its seat, whatever it is
            forfeited.add(seat)
            record.forfeits.append(Forfeit(seat, -1, "exception", f"reset() raised {one_line(error)}"))
    while not env.game_over:
        seat = env.current
        state = env.games[seat]
        mask = masks.of_game(state)
        player = players[seat]
        forfeit = seat in forfeited
        if not forfeit:
            failure: tuple[str, str] | None = None
            try:
                observation = env.observe_for(env.agent_selection, player)["observation"]
                action: Any = player.act(observation, mask.copy())  # (the engine's table stays untouched)
            except Exception as error:  # noqa: BLE001 - as above
                action, failure = None, ("exception", f"act() raised {one_line(error)}")
            legal = (
                not isinstance(action, bool)
                and isinstance(action, (int, np.integer))
                and 0 <= int(action) < len(mask)
                and mask[int(action)]
            )
            if not legal:
                forfeit = True
                forfeited.add(seat)
                kind, message = failure or _failure_of(player, failures_before[seat])
                record.forfeits.append(Forfeit(seat, len(record.moves), kind, message))
        if forfeit:
            action = forfeit_action(mask)
        action = int(action)
        if action < N_KEEP_ACTIONS:
            source.expect(seat, state.turn, ROLLS_PER_TURN - state.rolls_left)
        else:
            following = (seat + 1) % seats
            source.expect(following, env.games[following].turn, 0)
        total = state.total
        dice = "".join(str(d) for d in ROLL_DICE[state.roll])
        env.step(action)
        points = env.games[seat].total - total if action >= N_KEEP_ACTIONS else None
        record.moves.append([seat, dice, state.rolls_left, action, points, int(forfeit)])
    record.scores = [g.total for g in env.games]
    return record
