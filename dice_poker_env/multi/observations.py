"""What each player of a multi-player game sees: the observation space and its encoding.

A player's observation is their own game in the single env's layout (dict or
flat, :mod:`dice_poker_env.envs.observation`) followed by every opponent's
scorecard, in turn order starting with the next player.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from gymnasium import spaces

from dice_poker_env.engine.state import GameState
from dice_poker_env.engine.tables import RuleTables
from dice_poker_env.envs.observation import filled_flags, flat_scales, observation_space, observe_dict, observe_flat


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
