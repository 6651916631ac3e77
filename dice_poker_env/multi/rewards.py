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
    """End-of-game rewards of every player from their final totals: one game's totals, or rows of
    games (the players on the last axis).

    ``"relative"``: own total minus the mean of all totals. ``"win"``: +1 split
    among the players with the highest total, -1 split among the others, 0 for
    everyone when all are tied. ``"score"`` pays nothing extra at the end. The
    first two sum to zero.
    """
    values = np.asarray(totals, dtype=np.float64)
    if reward_mode == "relative":
        return values - values.mean(axis=-1, keepdims=True)
    if reward_mode == "win":
        best = values == values.max(axis=-1, keepdims=True)
        winners = best.sum(axis=-1, keepdims=True)
        losers = values.shape[-1] - winners
        split = np.where(best, 1.0 / winners, -1.0 / np.maximum(losers, 1))
        return np.where(losers == 0, 0.0, split)  # all tied: nothing
    if reward_mode == "score":
        return np.zeros_like(values)
    raise ValueError(f"reward_mode must be one of {REWARD_MODES}, got {reward_mode!r}")
