"""Exact solver: optimal play of any ruleset by dynamic programming.

>>> from dice_poker_env.solver import solve
>>> solution = solve("yahtzee")            # doctest: +SKIP
>>> round(solution.expected_score, 4)      # doctest: +SKIP
254.5877

See ``docs/solver.md`` for the method, the cache, the limits and the CLI, and
``docs/winning.md`` for :func:`solve_reach` (the best chance of reaching a target score) and
:func:`solve_duel` (the exact two-player solution of a small ruleset).
"""

from dice_poker_env.solver.cache import CacheWarning, cache_dir
from dice_poker_env.solver.duel import Duel, solve_duel
from dice_poker_env.solver.reach import Reach, ScoreDistribution, solve_reach
from dice_poker_env.solver.solution import Solution, SolverError, SolveTooLargeError, cached, solve

__all__ = [
    "CacheWarning",
    "Duel",
    "Reach",
    "ScoreDistribution",
    "Solution",
    "SolveTooLargeError",
    "SolverError",
    "cache_dir",
    "cached",
    "solve",
    "solve_duel",
    "solve_reach",
]
