"""Elo ratings with bootstrap intervals from pairwise results, in NumPy (the tournament's ratings).

The ratings are the Bradley-Terry model's maximum a posteriori estimate on the Elo scale:
agent ``i`` beats agent ``j`` with probability ``1 / (1 + 10 ** ((r_j - r_i) / 400))``; a draw
counts half a win for each. Every result is known when the ratings are computed, so they are
fitted to all of them at once (Newton's method on the log-likelihood), not updated game by
game: the order in which matches were played changes nothing, unlike online Elo or
OpenSkill's Bayesian updates (which model a skill that drifts between games; an agent's
program does not). A Gaussian prior of :data:`PRIOR_SD` Elo points on every rating keeps the
ratings finite when an agent wins (or loses) every comparison.

The scale's origin is one agent's rating, fixed (the tournament fixes the greedy agent at
:data:`ANCHOR_RATING`): every other rating is a difference from it. The 95% interval of each
rating is the percentile interval of a bootstrap over matches (whole matches are resampled
with replacement, keeping the comparisons of one match together, and the ratings refitted).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: Elo points per natural-log unit of the odds (400 points = odds of 10 to 1)
ELO_PER_LOGIT = 400.0 / math.log(10.0)
#: standard deviation of the Gaussian prior on every rating, in Elo points
PRIOR_SD = 400.0
#: the anchor's rating: every other rating is a difference from it
ANCHOR_RATING = 1000.0


@dataclass(frozen=True)
class Comparisons:
    """Pairwise results: ``first[k]`` against ``second[k]`` scored ``result[k]`` (1 win, 0.5 draw, 0 loss).

    ``match[k]`` numbers the match the comparison comes from (the bootstrap resamples matches).
    """

    first: np.ndarray
    second: np.ndarray
    result: np.ndarray
    match: np.ndarray

    @classmethod
    def of(cls, rows: Sequence[tuple[int, int, float, int]]) -> Comparisons:
        """From ``(first, second, result, match)`` rows."""
        data = np.asarray(rows, dtype=np.float64).reshape(-1, 4)
        return cls(
            data[:, 0].astype(np.int64), data[:, 1].astype(np.int64), data[:, 2].copy(), data[:, 3].astype(np.int64)
        )

    def __len__(self) -> int:
        return len(self.result)


def fit(comparisons: Comparisons, n_agents: int, weights: np.ndarray | None = None) -> np.ndarray:
    """The ratings (Elo points, mean 0 before anchoring) that best explain ``comparisons``.

    Args:
        comparisons: the pairwise results.
        n_agents: how many agents (numbered ``0 .. n_agents - 1``).
        weights: how many times each comparison counts (the bootstrap's resampling), default once.

    Returns:
        ``(n_agents,)`` float64 ratings; an agent without comparisons gets the prior's mean, 0.
    """
    w = np.ones(len(comparisons)) if weights is None else np.asarray(weights, dtype=np.float64)
    i, j, s = comparisons.first, comparisons.second, comparisons.result
    wins = np.zeros((n_agents, n_agents))  # wins[a, b]: a's (weighted) score against b
    np.add.at(wins, (i, j), w * s)
    np.add.at(wins, (j, i), w * (1.0 - s))
    games = wins + wins.T
    precision = (ELO_PER_LOGIT / PRIOR_SD) ** 2  # the prior in logit units
    theta = np.zeros(n_agents)
    for _ in range(100):  # Newton's method: the penalized log-likelihood is strictly concave
        p = 1.0 / (1.0 + np.exp(theta[None, :] - theta[:, None]))  # p[a, b]: a beats b
        gradient = (wins - games * p).sum(axis=1) - precision * theta
        curvature = games * p * (1.0 - p)
        hessian = curvature - np.diag(curvature.sum(axis=1)) - precision * np.eye(n_agents)
        step = np.linalg.solve(hessian, -gradient)
        theta += step
        if np.abs(step).max() < 1e-10:
            break
    return theta * ELO_PER_LOGIT


#: what the standings say of an agent that won, or lost, every comparison (:attr:`Ratings.perfect`)
PERFECT_NOTE = {
    "unbeaten": "unbeaten: the prior sets its rating, a lower bound",
    "winless": "winless: the prior sets its rating, an upper bound",
}


@dataclass(frozen=True)
class Ratings:
    """Ratings with 95% bootstrap intervals, anchored (module docstring).

    Attributes:
        rating: ``(n,)`` the fitted ratings.
        low: ``(n,)`` the 2.5th percentile of the bootstrap's ratings (NaN without intervals).
        high: ``(n,)`` the 97.5th percentile (NaN without intervals).
        bootstrap: how many resamples the intervals come from (0: none).
        perfect: ``(n,)`` +1 for an agent that won every comparison, -1 for one that lost every one, else 0:
            the data alone put its rating at infinity, so the prior sets it (a lower, or an upper, bound of
            its strength) and every resample keeps the perfect record (an interval of the prior, not of it).
    """

    rating: np.ndarray
    low: np.ndarray
    high: np.ndarray
    bootstrap: int
    perfect: np.ndarray


def rate(comparisons: Comparisons, n_agents: int, anchor: int, *, bootstrap: int = 1000, seed: int = 0) -> Ratings:
    """Ratings of ``n_agents`` agents with 95% intervals from ``bootstrap`` resamples of the matches.

    Args:
        comparisons: the pairwise results.
        n_agents: how many agents.
        anchor: the agent whose rating is fixed at :data:`ANCHOR_RATING`.
        bootstrap: resamples (0: no intervals, ``low`` and ``high`` NaN; with fewer than two
            matches there is nothing to resample, and no intervals either).
        seed: the resampling's seed (the same seed, the same intervals).

    Raises:
        ValueError: ``anchor`` out of range or ``bootstrap`` negative.
    """
    if not 0 <= anchor < n_agents:
        raise ValueError(f"anchor must be an agent 0..{n_agents - 1}, got {anchor}")
    if isinstance(bootstrap, bool) or not isinstance(bootstrap, int) or bootstrap < 0:
        raise ValueError(f"bootstrap must be an integer >= 0, got {bootstrap!r}")

    def anchored(ratings: np.ndarray) -> np.ndarray:
        return ratings - ratings[anchor] + ANCHOR_RATING

    rating = anchored(fit(comparisons, n_agents))
    played = np.bincount(comparisons.first, minlength=n_agents) + np.bincount(comparisons.second, minlength=n_agents)
    scored = np.bincount(comparisons.first, weights=comparisons.result, minlength=n_agents) + np.bincount(
        comparisons.second, weights=1.0 - comparisons.result, minlength=n_agents
    )
    perfect = np.select([played == 0, scored == played, scored == 0], [0, 1, -1], 0).astype(np.int8)
    matches, index = np.unique(comparisons.match, return_inverse=True)
    if bootstrap == 0 or len(matches) < 2:  # resampling one match gives it back: a zero-width interval
        unknown = np.full(n_agents, np.nan)
        return Ratings(rating, unknown, unknown.copy(), 0, perfect)
    rng = np.random.default_rng(seed)
    samples = np.empty((bootstrap, n_agents))
    for b in range(bootstrap):
        counts = np.bincount(rng.integers(0, len(matches), size=len(matches)), minlength=len(matches))
        samples[b] = anchored(fit(comparisons, n_agents, weights=counts[index]))
    low, high = np.percentile(samples, [2.5, 97.5], axis=0)
    return Ratings(rating, low, high, bootstrap, perfect)
