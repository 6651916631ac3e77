"""What a solve will cost, known before it allocates anything: states, memory and time.

The solver's memory grows with the number of boxes: it keeps a few arrays over
every filled-box bitmask (``2 ** n_boxes``), a dense index over every
``(bitmask, upper total, five-of-a-kind flag)`` key, a few float64 values per
reachable state and, in the forward pass, a few KiB per (bitmask, flag) pair of
the widest layer. :func:`estimate` computes each of these from the rules' tables
alone (a cheap upper bound on the reachable states, no solve), with constants
measured on the solver (see ``docs/solver.md``, "Limits"); :func:`available_memory`
reads what the machine (or its cgroup) can still give.
:func:`~dice_poker_env.solver.solve` refuses a solve whose estimate exceeds it
(:class:`~dice_poker_env.solver.SolveTooLargeError`) unless forced.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dice_poker_env.engine.tables import RuleTables

MiB = 1 << 20
GiB = 1 << 30

#: interpreter, numpy, the package and the engine's tables
BASE_BYTES = 48 * MiB
#: per filled-box bitmask: the state space's per-mask arrays (int64 and bool)
MASK_BYTES = 64
#: per bitmask and 64-bit word of upper totals: the forward pass's dense OR table (two flags)
MASK_WORD_BYTES = 16
#: per state key of the dense index (int32), held once at a time
INDEX_BYTES = 4
#: per reachable state: keys (and the layers they are built from), values and second
#: moments in shared memory, their private copies, and the solution's turn-cache slots
STATE_BYTES = 64
#: per (bitmask, flag) pair of the widest layer and per box: the forward pass's
#: legality, points and move arrays
PAIR_BOX_BYTES = 224
#: per box and worker process: the backward pass's score candidates of one block of 4096 states
BLOCK_BOX_BYTES = 3 * MiB
#: seconds per state and box (backward pass) and per pair and box (engine calls),
#: one core of the reference machine (docs/solver.md)
STATE_BOX_SECONDS = 0.9e-6
PAIR_BOX_SECONDS = 3.0e-6

#: above this many upper boxes the state bound enumerates no upper masks (the
#: cruder bound is astronomically large by then anyway)
_MAX_UPPER_ENUMERATED = 20


@dataclass(frozen=True)
class SolveEstimate:
    """Cost of solving one ruleset, estimated from its tables before solving.

    Attributes:
        rules: the ruleset's name.
        n_boxes: boxes on the scorecard.
        states: upper bound on the reachable between-turn states (exact for yacht, about 12% above
            for yahtzee, yatzy and dice_poker; far above for school_poker, whose ordering rules
            reach few states).
        index_keys: size of the solver's dense state index.
        memory_bytes: estimated peak memory of the solving process.
        seconds: estimated wall time on one core of the reference machine (an
            order of magnitude: machines differ by 2-3x).
    """

    rules: str
    n_boxes: int
    states: int
    index_keys: int
    memory_bytes: int
    seconds: float

    def describe(self) -> str:
        """One line: states, memory and time."""
        return (
            f"{self.rules} ({self.n_boxes} boxes): about {_count(self.states)} states, "
            f"{format_bytes(self.memory_bytes)} of memory and {format_duration(self.seconds)} of computing"
        )


def space_shape(tables: RuleTables) -> tuple[int, int, int]:
    """``(n_masks, n_slots, n_full)`` of the solver's state space, without building it.

    Mirrors :class:`~dice_poker_env.solver.state_space.StateSpace` (``size`` is their
    product): upper totals are clipped to ``[T - max_rest - 1, T - min_rest]``,
    whose union over all bitmasks is ``[T - sum of maxima - 1, T - sum of the
    negative minima]`` (0 included); the five-of-a-kind flag doubles the keys when
    a joker or a five-of-a-kind bonus exists.
    """
    n_slots = 1
    if tables.has_upper_bonus:
        upper = np.flatnonzero(tables.is_upper)
        most = sum(int(tables.possible_scores[k].max()) for k in upper)
        least = sum(min(int(tables.possible_scores[k].min()), 0) for k in upper)
        threshold = int(tables.upper_bonus_threshold)
        lo = min(0, threshold - most - 1)
        hi = max(0, threshold - least)
        n_slots = hi - lo + 1
    n_full = 2 if tables.five_kind_box >= 0 and (tables.joker != 0 or tables.five_kind_bonus > 0) else 1
    return 1 << tables.n_boxes, n_slots, n_full


def state_bound(tables: RuleTables) -> int:
    """An upper bound on the reachable between-turn states, without a forward pass.

    For each set of filled upper boxes, the upper totals a game can have lie in
    ``[sum of their least points, sum of their most points]``, clipped to the
    canonical range of that set; every set of filled lower boxes (as many as the
    turns allow) combines with each, twice where the five-of-a-kind flag can be set.
    """
    _, n_slots, n_full = space_shape(tables)
    upper = np.flatnonzero(tables.is_upper)
    n_up, n_low = len(upper), tables.n_boxes - len(upper)
    if n_up > _MAX_UPPER_ENUMERATED:
        return sum(math.comb(tables.n_boxes, k) for k in range(tables.turns + 1)) * n_slots * n_full
    most = np.array([int(tables.possible_scores[k].max()) for k in upper], dtype=np.int64)
    least = np.array([int(tables.possible_scores[k].min()) for k in upper], dtype=np.int64)
    # per upper mask (bit i = i-th upper box filled), built by doubling: no (2**u, u) matrix
    low_in = high_in = count = np.zeros(1, dtype=np.int64)
    for k in range(n_up):
        low_in = np.concatenate([low_in, low_in + least[k]])
        high_in = np.concatenate([high_in, high_in + most[k]])
        count = np.concatenate([count, count + 1])
    if tables.has_upper_bonus:
        threshold = int(tables.upper_bonus_threshold)
        lo = threshold - (int(most.sum()) - high_in) - 1  # T - max_rest - 1
        hi = threshold - (int(least.sum()) - low_in)  # T - min_rest
        totals = np.clip(high_in, lo, hi) - np.clip(low_in, lo, hi) + 1
        totals[-1] = 1  # every upper box filled: the total no longer matters
    else:
        totals = np.ones(len(count), dtype=np.int64)
    per_count = np.bincount(count, weights=totals, minlength=n_up + 1)  # summed over masks of each size
    five = tables.five_kind_box
    five_lower = n_full == 2 and not tables.is_upper[five]
    total = 0
    for filled_low in range(n_low + 1):
        if five_lower:  # the flag can be set only once the five-of-a-kind box is filled
            ways = math.comb(n_low - 1, filled_low) + 2 * (math.comb(n_low - 1, filled_low - 1) if filled_low else 0)
        else:
            ways = math.comb(n_low, filled_low) * n_full
        allowed = max(0, min(n_up, tables.turns - filled_low) + 1)
        total += ways * int(per_count[:allowed].sum())
    return int(total)


def estimate(tables: RuleTables, workers: int = 1) -> SolveEstimate:
    """Estimated states, peak memory and time of solving ``tables`` (nothing is solved).

    Forked workers share the big arrays; each adds its own block of candidates
    (:data:`BLOCK_BOX_BYTES`) and divides the time.
    """
    n = tables.n_boxes
    n_masks, n_slots, n_full = space_shape(tables)
    states = state_bound(tables)
    widest = max(math.comb(n, k) for k in range(min(n, tables.turns) + 1)) * n_full
    pairs = sum(math.comb(n, k) for k in range(min(n, tables.turns) + 1)) * n_full
    n_words = -(-n_slots // 64)
    index_keys = n_masks * n_slots * n_full
    fixed = BASE_BYTES + n_masks * (MASK_BYTES + MASK_WORD_BYTES * n_words) + INDEX_BYTES * index_keys
    forward = widest * n * PAIR_BOX_BYTES + 16 * states  # temporaries and the layers' keys
    backward = STATE_BYTES * states + BLOCK_BOX_BYTES * n * max(1, workers)
    memory = fixed + max(forward, backward)
    seconds = (STATE_BOX_SECONDS * states * n + PAIR_BOX_SECONDS * pairs * n) / max(1.0, workers**0.8)
    return SolveEstimate(tables.rules.name, n, int(states), int(index_keys), int(memory), float(seconds))


def available_memory() -> int | None:
    """Bytes of memory this process can still use; ``None`` when unknown.

    ``MemAvailable`` of ``/proc/meminfo`` (Linux), else free physical pages
    (``sysconf``), lowered to what the process's cgroup (v2 or v1) still allows.
    """
    found = []
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                found.append(int(line.split()[1]) * 1024)
                break
    except (OSError, ValueError, IndexError):
        pass
    if not found:
        try:
            found.append(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
        except (ValueError, OSError, AttributeError):
            pass
    limit = _cgroup_room()
    if limit is not None:
        found.append(limit)
    return min(found) if found else None


def _cgroup_room() -> int | None:
    """Room left under this process's cgroup memory limit (v2, then v1); ``None`` without one."""
    pairs = [("memory.max", "memory.current"), ("memory.limit_in_bytes", "memory.usage_in_bytes")]
    for base in (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/memory")):
        for limit_name, usage_name in pairs:
            try:
                limit = (base / limit_name).read_text().strip()
                usage = int((base / usage_name).read_text().strip())
            except (OSError, ValueError):
                continue
            if not limit.isdigit() or int(limit) >= 1 << 60:  # "max" or v1's "no limit"
                return None
            return max(0, int(limit) - usage)
    return None


def _count(n: int) -> str:
    if n >= 10**9:
        return f"{n / 1e9:.1f} billion"
    if n >= 10**6:
        return f"{n / 1e6:.1f} million"
    return f"{n:,}"


def format_bytes(n: int) -> str:
    """``n`` bytes for people: ``"412 MiB"``, ``"3.1 GiB"``."""
    if n >= GiB:
        return f"{n / GiB:.1f} GiB"
    return f"{n / MiB:.0f} MiB"


def format_duration(seconds: float) -> str:
    """A time as a person reads it in an estimate: ``8.0 s``, ``12 min``, ``3.5 h``."""
    if seconds < 90:
        return f"{seconds:.1f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
