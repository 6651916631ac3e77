"""Upper limits on the counts commands accept, checked before any work.

A count beyond its limit would not finish in any reasonable time, or would
exhaust memory (``--games 1e11`` once failed with NumPy's ``_ArrayMemoryError``
after the solve, and in ``train.py`` after the whole training): it is refused up
front with a one-line ``ValueError`` naming the field, its value and the limit.

Limits, and why:

* :data:`MAX_GAMES` (10 million) games per agent in ``dice-poker bench``,
  ``dice-poker grade`` and ``train.py``'s ``bench_games``: the benchmark keeps
  a seed and a score per game (and a regret per game and decision), about
  100 bytes a game, 1 GiB at the limit; at about 10,000 games per second for the
  fastest agents, 10 million games take a quarter of an hour per agent.
* :data:`MAX_EPISODES` (1 million) episodes in ``dice-poker dataset``: a stored
  game of Yahtzee takes about 30 KB with its action values, 30 GB at the limit.
"""

from __future__ import annotations

from typing import Any

import numpy as np

MAX_GAMES = 10_000_000
MAX_EPISODES = 1_000_000


def check_count(what: str, value: Any, *, least: int = 1, most: int = MAX_GAMES) -> int:
    """``value`` as an int if it is an integer in ``[least, most]``; else a one-line ``ValueError``.

    Args:
        what: the name the message gives the count (``"--games"``, ``"bench_games"``).
        value: the count (floats such as ``1e11`` from a YAML file are refused as not integers unless whole).
        least: the smallest count accepted.
        most: the largest count accepted (the stated limit).
    """
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
        raise ValueError(f"{what} must be an integer >= {least}, got {value!r}")
    if value > most:
        raise ValueError(
            f"{what} of {value:,} is beyond the limit of {most:,} (it would run out of memory or time); "
            f"play at most {most:,}, in several runs with other seeds if you need more"
        )
    return int(value)
