"""Exact solver: optimal play of any ruleset by dynamic programming.

>>> from dice_poker_env.solver import solve
>>> solution = solve("yahtzee")            # doctest: +SKIP
>>> round(solution.expected_score, 4)      # doctest: +SKIP
254.5877

See ``docs/solver.md`` for the method, the cache, the limits and the CLI.
"""

from dice_poker_env.solver.cache import CacheWarning, cache_dir
from dice_poker_env.solver.solution import Solution, SolverError, SolveTooLargeError, cached, solve

__all__ = ["CacheWarning", "Solution", "SolveTooLargeError", "SolverError", "cache_dir", "cached", "solve"]
