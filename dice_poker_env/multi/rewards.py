"""The rewards of a multi-player game: per point, relative to the table, or for winning."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dice_poker_env.rules import Rules

REWARD_MODES = ("score", "relative", "win")


def default_reward_mode(rules: Rules) -> str:
    """``"relative"`` for rulesets whose result is relative (school_poker), else ``"win"``."""
    return "relative" if rules.result == "relative" else "win"


def final_rewards(totals: Sequence[float] | np.ndarray, reward_mode: str) -> np.ndarray:
    """End-of-game rewards of every player from their final totals.

    ``"relative"``: own total minus the mean of all totals. ``"win"``: +1 split
    among the players with the highest total, -1 split among the others, 0 for
    everyone when all are tied. ``"score"`` pays nothing extra at the end. The
    first two sum to zero.
    """
    values = np.asarray(totals, dtype=np.float64)
    if reward_mode == "relative":
        return values - values.mean()
    if reward_mode == "win":
        best = values == values.max()
        if best.all():
            return np.zeros_like(values)
        return np.where(best, 1.0 / best.sum(), -1.0 / (~best).sum())
    if reward_mode == "score":
        return np.zeros_like(values)
    raise ValueError(f"reward_mode must be one of {REWARD_MODES}, got {reward_mode!r}")
