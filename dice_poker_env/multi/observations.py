"""What each player of a multi-player game sees: the observation space and its encoding.

A player's observation is their own game in the single env's layout (dict or
flat, :mod:`dice_poker_env.envs.observation`) followed by every opponent's
scorecard, in turn order starting with the next player.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from gymnasium import spaces

from dice_poker_env.engine.state import BatchState, GameState
from dice_poker_env.engine.tables import RuleTables
from dice_poker_env.envs.observation import (
    filled_flags,
    filled_flags_batch,
    flat_scales,
    observation_space,
    observe_dict,
    observe_dict_batch,
    observe_flat,
    observe_flat_batch,
)


def multi_observation_space(tables: RuleTables, num_players: int, obs_mode: str) -> spaces.Space[Any]:
    """The space of the ``observation`` entry of a multi-player observation.

    ``"dict"``: the single env's dict keys (own game) plus, for the other
    players in turn order starting with the next one, ``opponent_filled``
    ``(P-1, n)``, ``opponent_scores`` ``(P-1, n)``, ``opponent_upper_total``,
    ``opponent_bonus`` and ``opponent_total`` (each ``(P-1,)``) — a superset of
    the single env's observation, so single-game agents read it unchanged.

    ``"flat"``: the single env's flat vector, then per opponent: filled flags
    (n), written scores / scale (n), upper total / upper scale (1), bonus / scale
    (1), (opponent total - own total) / (max_total - min_total) (1); all in
    [-1, 1], size ``45 + 3n + (P-1)(2n + 3)``.
    """
    n, others = tables.n_boxes, num_players - 1
    own = observation_space(tables, obs_mode)
    if obs_mode == "flat":
        assert isinstance(own, spaces.Box)  # observation_space's flat layout
        return spaces.Box(-1.0, 1.0, shape=(own.shape[0] + others * (2 * n + 3),), dtype=np.float32)
    assert isinstance(own, spaces.Dict)  # observation_space's dict layout
    upper = own["upper_total"]
    assert isinstance(upper, spaces.Box)
    items = dict(own.spaces)
    items.update(
        opponent_filled=spaces.MultiBinary((others, n)),
        opponent_scores=spaces.Box(tables.min_box_score, tables.max_box_score, shape=(others, n), dtype=np.int64),
        opponent_upper_total=spaces.Box(int(upper.low[0]), int(upper.high[0]), shape=(others,), dtype=np.int64),
        opponent_bonus=spaces.Box(0, max(tables.max_total, 1), shape=(others,), dtype=np.int64),
        opponent_total=spaces.Box(min(tables.min_total, 0), max(tables.max_total, 1), shape=(others,), dtype=np.int64),
    )
    return spaces.Dict(items)


def encode(
    tables: RuleTables, games: Sequence[GameState], seat: int, obs_mode: str
) -> np.ndarray | dict[str, np.ndarray]:
    """The observation of player ``seat`` (:func:`multi_observation_space`'s layout).

    ``games`` holds every player's game, in seat order.
    """
    num_players = len(games)
    order = [(seat + k) % num_players for k in range(1, num_players)]
    totals = np.array([g.total for g in games], dtype=np.int64)
    if obs_mode == "flat":
        scale, upper_scale = flat_scales(tables)  # the single env's scaling, for the opponents' scorecards too
        span = float(max(tables.max_total - min(tables.min_total, 0), 1))
        parts: list[npt.ArrayLike] = [observe_flat(tables, games[seat])]
        for j in order:
            g = games[j]
            parts += [
                filled_flags(tables, g.filled),
                g.scores / scale,
                [np.clip(g.upper_total / upper_scale, -1, 1)],
                [np.clip(g.bonus / scale, 0, 1)],
                [np.clip((totals[j] - totals[seat]) / span, -1, 1)],
            ]
        return np.concatenate([np.asarray(p, dtype=np.float32).ravel() for p in parts])
    obs = observe_dict(tables, games[seat])
    others = [observe_dict(tables, games[j]) for j in order]
    obs["opponent_filled"] = np.stack([o["filled"] for o in others])
    obs["opponent_scores"] = np.stack([o["scores"] for o in others])
    obs["opponent_upper_total"] = np.array([games[j].upper_total for j in order], dtype=np.int64)
    obs["opponent_bonus"] = np.array([games[j].bonus for j in order], dtype=np.int64)
    obs["opponent_total"] = totals[order]
    return obs


def encode_batch(
    tables: RuleTables, own: BatchState, others: Sequence[BatchState], obs_mode: str
) -> np.ndarray | dict[str, np.ndarray]:
    """:func:`encode` of ``B`` tables at once: every value with a leading batch axis.

    ``own`` holds the game of the player to observe at each table, ``others[k]`` the game of
    the ``k``-th player after them in turn order (``len(others) = P - 1``). Row ``i`` equals
    ``encode(tables, games_i, seat_i, obs_mode)`` of table ``i`` (its values sliced at ``i``).
    """
    totals = own.total
    if obs_mode == "flat":
        scale, upper_scale = flat_scales(tables)
        span = float(max(tables.max_total - min(tables.min_total, 0), 1))
        parts: list[np.ndarray] = [observe_flat_batch(tables, own)]
        for g in others:
            parts += [
                filled_flags_batch(tables, g.filled).astype(np.float32),
                (g.scores / scale).astype(np.float32),
                np.clip(g.upper_total / upper_scale, -1, 1).astype(np.float32)[:, None],
                np.clip(g.bonus / scale, 0, 1).astype(np.float32)[:, None],
                np.clip((g.total - totals) / span, -1, 1).astype(np.float32)[:, None],
            ]
        return np.concatenate(parts, axis=1)
    obs = observe_dict_batch(tables, own)
    obs["opponent_filled"] = np.stack([filled_flags_batch(tables, g.filled) for g in others], axis=1)
    obs["opponent_scores"] = np.stack([np.asarray(g.scores, dtype=np.int64) for g in others], axis=1)
    obs["opponent_upper_total"] = np.stack([np.asarray(g.upper_total, dtype=np.int64) for g in others], axis=1)
    obs["opponent_bonus"] = np.stack([np.asarray(g.bonus, dtype=np.int64) for g in others], axis=1)
    obs["opponent_total"] = np.stack([np.asarray(g.total, dtype=np.int64) for g in others], axis=1)
    return obs


@dataclass(frozen=True)
class PlayerLayout:
    """The observation layout a player (an agent or model) reads at a multi-player table.

    Attributes:
        obs_mode: ``"dict"`` (the default) or ``"flat"`` (the player's ``obs_mode``).
        keys: dict layout: the keys of the player's (or its ``model``'s) ``Dict`` observation
            space, which it gets alone (those the multi-player dict has); ``None``: every key.
        multi_flat: flat layout: the multi-player vector (the player's space has its shape: a
            model trained with :class:`~dice_poker_env.multi.seat.SeatEnv`) instead of the
            single env's.
    """

    obs_mode: str
    keys: tuple[str, ...] | None = None
    multi_flat: bool = False

    def cut(self, observation: dict[str, Any]) -> dict[str, Any]:
        """A dict observation cut to :attr:`keys` (in their order; as is without keys)."""
        if self.keys is None:
            return observation
        return {key: observation[key] for key in self.keys if key in observation}


def player_layout(player: Any, multi_flat_shape: tuple[int, ...] | None) -> PlayerLayout:
    """What ``player`` reads (:class:`PlayerLayout`); ``multi_flat_shape``: the table's multi-player
    flat vector's shape (:func:`multi_observation_space`'s, ``"flat"``)."""
    space = getattr(player, "observation_space", None) or getattr(
        getattr(player, "model", None), "observation_space", None
    )
    if getattr(player, "obs_mode", "dict") != "flat":
        return PlayerLayout("dict", tuple(space.spaces) if isinstance(space, spaces.Dict) else None)
    shape = getattr(space, "shape", None)
    return PlayerLayout("flat", None, shape is not None and shape == multi_flat_shape)


def table_problem(player: Any, tables: RuleTables, num_players: int) -> str | None:
    """Why ``player`` cannot read the observations of a ``num_players``-player table, or ``None``.

    A flat reader whose observation space is neither the single env's flat vector nor this table's
    (:func:`player_layout`), or a dict reader whose opponents' entries are of another number of opponents: a
    model trained at a table of another size.
    """
    space = getattr(player, "observation_space", None) or getattr(
        getattr(player, "model", None), "observation_space", None
    )
    players = space_players(space, tables)  # (1 for a one-game reader, which reads any table)
    if getattr(player, "obs_mode", "dict") != "flat":  # a dict reader of opponents' entries reads a table's size
        if players in (1, num_players):
            return None
        return f"it reads a {players}-player table's dict observation; this table has {num_players} players"
    shape = getattr(space, "shape", None)
    single = observation_space(tables, "flat").shape
    table = multi_observation_space(tables, num_players, "flat").shape
    if not shape or shape in (single, table) or single is None or table is None:
        return None
    reads = (
        f"a {players}-player table's flat observation ({shape[0]} values)"
        if players > 1
        else f"flat observations of shape {tuple(shape)}"
    )
    return f"it reads {reads}; this table has {num_players} players ({table[0]} values, one game's {single[0]})"


def space_players(space: Any, tables: RuleTables) -> int:
    """The number of players at the table whose observation ``space`` is (1: the single env's): from a dict
    space's opponents' entries, or a flat space's length."""
    if isinstance(space, spaces.Dict):
        opponents = space.spaces.get("opponent_filled")
        return 1 + int(opponents.shape[0]) if opponents is not None and opponents.shape else 1
    shape = getattr(space, "shape", None)
    return flat_players(shape[0], tables) if shape and len(shape) == 1 else 1


def flat_players(length: int, tables: RuleTables) -> int:
    """The number of players at the table whose flat observation is ``length`` long: the single env's
    length and ``2 * n_boxes + 3`` more per opponent; 1 for any other length."""
    single = observation_space(tables, "flat").shape
    if not single:
        return 1
    others, rest = divmod(int(length) - single[0], 2 * tables.n_boxes + 3)
    return 1 + others if others > 0 and rest == 0 else 1
