"""The winning agent: plays to finish first at a table of 2 to 6 players (docs/winning.md, "The winning agent").

At each decision the agent knows every player's scorecard. Each opponent ``j``
is between turns, and its final score is ``F_j = points so far + rest``, the rest
distributed as under the expected-score-optimal policy from its state (the
reach solver's policy table, :attr:`~dice_poker_env.solver.reach.Reach.policy_prob`),
independently across opponents. The agent's utility of a final score ``x`` is
its expected share of the win (ties split equally)::

    U(x) = integral over u in [0, 1] of prod_j (P(F_j < x) + u P(F_j = x))

(a polynomial in ``u``, integrated exactly). ``U`` is non-decreasing, so
``U(x) = sum_t w_t 1{x >= t}`` with ``w_t = U(t) - U(t - 1) >= 0``. Ending the
turn in the next state ``s'`` with ``p`` points (bonus included), ``a`` points so
far, is worth::

    V(s', p) = sum_t w_t R(s', t - a - p)

with ``R`` the expected-score policy's table (``future="expected"``, the default:
it plays for the expected score after this turn, a lower bound on its future) or
the reach table (``future="reach"``: after this turn the agent may pick the best
policy for each target, an upper bound). On yacht the two win equally often
against the optimal agent (docs/winning.md, 50,000 games each). Inside the turn everything is
exact: the three-roll widget (:func:`~dice_poker_env.solver.turn.widget`)
maximizes ``E[V]``. With every opponent finished (the last player's last turn)
``w`` is the exact utility and ``s'`` is terminal: the decision is exactly
optimal.

Without opponents (the single-player env) and with ``target=T``, ``w`` is a
point mass at ``T``: the agent plays the reach policy for ``T``
(:meth:`~dice_poker_env.solver.reach.Reach.action_probabilities`); without a
target it plays the expected-score-optimal action (the optimal agent).

Everything is batched over games: :meth:`WinningAgent.act_batch` takes stacked
observations (the vector env's, or multi-player ones with the opponent keys
stacked too); candidates are gathered per (box, roll class, game) and the
widget's columns are games. :meth:`WinningPolicy.turn_actions` gives the
two-player policy of whole turns for the exact two-player solver.

Size: one module because the agent (decoding observations, the memo) and its policy (utility,
candidate values, the widget's action values) are one computation split only to expose the
policy on solver states.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

import numpy as np

from agents.players.optimal import OptimalAgent, check_solution_rules
from dice_poker_env.engine.combinatorics import KEEP_ALL, KEEP_OF_ACTION, N_KEEP_ACTIONS, N_ROLLS
from dice_poker_env.engine.game import ROLLS_PER_TURN, five_kind_box_state
from dice_poker_env.rules import Rules, load_rules
from dice_poker_env.solver import Solution, SolverError, solve
from dice_poker_env.solver import cache as disk
from dice_poker_env.solver.keep_tables import ROLL_POS
from dice_poker_env.solver.reach import Reach, check_target, solve_reach
from dice_poker_env.solver.turn import widget

#: what ``future`` may be
FUTURES = ("reach", "expected")
#: default tail: utility weights below it at either end are dropped (each value moves by at most ``2 * tail``)
TAIL = 1e-12
#: a game whose legal actions' values all lie within this of each other is decided: played for points (the tail's
#: trimming moves a value by at most ``2 * tail``)
DECIDED = 1e-9
#: situations between turns whose candidate values are remembered (:class:`_Memo`; about 2 KiB each)
MEMO_ROWS = 1 << 15
#: situations whose whole turn :meth:`WinningPolicy.turn_actions` values at once (about 70 MiB of action values)
TURN_CHUNK = 256
#: the most gathered (candidate, game, target) cells at once
_CELLS = 1 << 22
#: the value of an illegal move: below every probability
_ILLEGAL = -1.0
#: (252, 31) keep index of each proper keep action of each roll
_KEEPS = np.ascontiguousarray(KEEP_OF_ACTION[:, :KEEP_ALL])


def check_tail(tail: Any) -> float:
    """``tail`` as a float in ``[0, 0.5)``, or a one-line ``ValueError`` naming it."""
    try:
        value = float(tail)
    except (TypeError, ValueError):
        value = float("nan")
    if not 0.0 <= value < 0.5:
        raise ValueError(f"tail must be a number in [0, 0.5), got {tail!r}")
    return value


class WinningPolicy:
    """The winning agent's computations on solver states (no observations): the engine behind
    :class:`WinningAgent` and the two-player turn policy :meth:`turn_actions`.

    Args:
        reach: the ruleset's reach table, with the expected-score policy's table (``policy_prob``).
        future: ``"expected"`` (default) or ``"reach"``: the table that values the state after this turn.
        tail: utility weights dropped at either end (each value is then within ``2 * tail``); 0 keeps all.
    """

    def __init__(self, reach: Reach, *, future: str = "expected", tail: float = TAIL) -> None:
        if future not in FUTURES:
            raise ValueError(f"future must be one of {', '.join(FUTURES)}, got {future!r}")
        self.reach = reach
        self.future = future
        self.tail = check_tail(tail)
        self.space = reach.space
        self.tables = reach.tables
        self.lo = reach.lo
        self.offset = reach.offset
        self.width = reach.width
        self.policy_table = _policy_table(reach)
        self.future_table = reach.prob if future == "reach" else self.policy_table
        classes = self.space.box_classes  # five-of-a-kind rolls apart: right for every state
        #: candidate rows of each box (:meth:`candidates`), and each roll's class per box
        self.base = np.concatenate([[0], np.cumsum([len(c.roll) for c in classes])]).astype(np.int64)
        self.n_candidates = int(self.base[-1])
        self.of_last = np.stack([c.of_last for c in classes])  # (n_boxes, 252)
        self.of_first = np.stack([c.of_first for c in classes])

    # ------------------------------------------------------------------ utility
    def opponent_at_least(self, positions: np.ndarray, points: np.ndarray, x: np.ndarray) -> np.ndarray:
        """``P(F >= x)`` of opponents at ``positions`` with ``points`` so far (broadcasting)."""
        return _row_read(self.policy_table, self.lo, self.offset, self.width, positions, x - points)

    def utility(self, opp_pos: np.ndarray, opp_points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(tlo, U)``: ``U[g, k]`` the expected win share of the final score ``tlo[g] + k`` in game ``g``.

        ``opp_pos``, ``opp_points``: ``(G, J)`` the opponents' states (positions) and points so far,
        ``J >= 1``. ``U`` is 0 below ``tlo`` (some opponent surely scores more) and 1 from its last column on.
        """
        opp_pos = np.asarray(opp_pos, dtype=np.int64)
        opp_points = np.asarray(opp_points, dtype=np.int64)
        least = self.lo[opp_pos] + opp_points  # each opponent's least final score
        most = least + self.width[opp_pos] - 2  # and its most
        tlo = least.max(axis=1)
        thi = most.max(axis=1) + 1  # U = 1 from here on
        n = int((thi - tlo).max()) + 1
        x = tlo[:, None] + np.arange(n)  # (G, n)
        coef = np.zeros((len(tlo), n, opp_pos.shape[1] + 1))
        coef[:, :, 0] = 1.0
        for j in range(opp_pos.shape[1]):  # prod_j (P(F_j < x) + u P(F_j = x)), as a polynomial in u
            pos, pts = opp_pos[:, j : j + 1], opp_points[:, j : j + 1]
            geq = self.opponent_at_least(pos, pts, x)
            eq = geq - self.opponent_at_least(pos, pts, x + 1)
            less = (1.0 - geq)[..., None]
            shifted = np.zeros_like(coef)
            shifted[..., 1:] = coef[..., :-1]
            coef = less * coef + eq[..., None] * shifted
        u = coef @ (1.0 / np.arange(1, opp_pos.shape[1] + 2))
        return tlo, np.clip(u, 0.0, 1.0)

    def weights(self, opp_pos: np.ndarray, opp_points: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(start, w, below)``: the utility as ``U(x) = below + sum_k w[g, k] 1{x >= start + k}``, trimmed.

        Weights at either end summing to at most :attr:`tail` are dropped (the ones below
        counted in ``below``, as if reached surely), so a value moves by at most ``2 * tail``.
        """
        tlo, u = self.utility(opp_pos, opp_points)
        n = u.shape[1]
        k0 = np.argmax(u > self.tail, axis=1)  # the first weight kept (U before it: at most tail)
        k1 = np.where((u >= 1.0 - self.tail).any(axis=1), np.argmax(u >= 1.0 - self.tail, axis=1), n - 1)
        w = np.diff(u, axis=1, prepend=0.0)
        length = k1 - k0 + 1
        cols = np.arange(int(length.max()))
        take = np.minimum(k0[:, None] + cols, n - 1)
        window = np.where(cols < length[:, None], np.take_along_axis(w, take, axis=1), 0.0)
        below = np.where(k0 > 0, np.take_along_axis(u, np.maximum(k0 - 1, 0)[:, None], axis=1)[:, 0], 0.0)
        return tlo + k0, window, below

    # ------------------------------------------------------------------ values
    def values(
        self,
        pos: np.ndarray,
        points: np.ndarray,
        game: np.ndarray,
        so_far: np.ndarray,
        start: np.ndarray,
        w: np.ndarray,
        below: np.ndarray,
    ) -> np.ndarray:
        """``V = below + sum_k w_k T(pos, start + k - so_far - points)`` of candidates (any shape), ``T`` the
        future table; ``game`` indexes the per-game ``so_far``, ``start``, ``w``, ``below``."""
        shape = pos.shape
        pos, points, game = (np.asarray(a, dtype=np.int64).reshape(-1) for a in (pos, points, game))
        table, lo, offset, width = self.future_table, self.lo, self.offset, self.width
        n_t = w.shape[1]
        # the row of a candidate starts at weight column k_first: the weights before it meet 1s, those
        # after its end 0s, so only its overlap with the weights is gathered
        k_first = lo[pos] + so_far[game] + points - start[game]
        k_start = np.clip(k_first, 0, n_t)
        k_end = np.clip(k_first + width[pos] - 1, 0, n_t)  # the row's last column (0) is not needed
        length = k_end - k_start
        cum = np.concatenate([np.zeros((len(w), 1)), np.cumsum(w, axis=1)], axis=1)  # cum[g, k]: weights before k
        out = below[game] + cum[game, k_start]
        order = np.argsort(-length, kind="stable")  # blocks of similar lengths: little padding
        pad = int(length.max(initial=0))
        w_ext = np.concatenate([w, np.zeros((len(w), pad))], axis=1).reshape(-1)
        stride = n_t + pad
        index = np.int32 if max(len(table), len(w_ext)) < 2**31 else np.int64  # less memory traffic
        done = 0
        while done < len(order) and length[order[done]] > 0:
            span = int(length[order[done]])
            block = order[done : done + max(1, _CELLS // span)]
            done += len(block)
            j = np.arange(span, dtype=index)
            row = offset[pos[block]]
            # the row's cells from the first gathered weight on; past the overlap its last cell (0)
            cell = (row + k_start[block] - k_first[block]).astype(index)[:, None] + j
            np.minimum(cell, (row + width[pos[block]] - 1).astype(index)[:, None], out=cell)
            weight = (game[block] * stride + k_start[block]).astype(index)[:, None] + j
            out[block] += np.einsum("ct,ct->c", table.take(cell), w_ext.take(weight))
        return out.reshape(shape)

    def candidates(self, my_pos: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(legal, points, pos)``, each ``(n_candidates, G)``: every (box, roll class) score move of each game.

        The layout is fixed (:attr:`base`: box ``b``'s classes are rows ``base[b]..base[b + 1]``, the
        state space's classes with five-of-a-kind rolls apart), so it does not depend on the batch;
        ``points`` include the bonus, ``pos`` is the next state's position (0 where illegal).
        """
        size = len(my_pos)
        legal = np.zeros((self.n_candidates, size), dtype=bool)
        points = np.zeros((self.n_candidates, size), dtype=np.int64)
        pos = np.zeros((self.n_candidates, size), dtype=np.int64)
        if size == 0:
            return legal, points, pos
        space = self.space
        moves = space.chunk_moves(*space.decode(self.reach.keys[my_pos]))
        for box in moves.open_boxes:
            ok, reward, key = moves.state_moves(box)
            rows = slice(int(self.base[box]), int(self.base[box + 1]))
            nxt = self.reach.index(np.where(ok, np.asarray(key, dtype=np.int64), self.reach.keys[0]))
            if np.any(ok & (nxt < 0)):  # pragma: no cover - the reach table holds every reachable state
                raise SolverError("winning agent: a legal move leads to a state outside the reach table")
            legal[rows] = ok
            points[rows] = np.rint(np.broadcast_to(reward, ok.shape)).astype(np.int64)
            pos[rows] = np.where(ok, nxt, 0)
        return legal, points, pos

    def candidate_values(
        self,
        my_pos: np.ndarray,
        so_far: np.ndarray,
        start: np.ndarray,
        w: np.ndarray,
        below: np.ndarray,
        need: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(legal, V)``, each ``(n_candidates, G)`` (:meth:`candidates`): the value of every legal score move
        (:data:`_ILLEGAL` elsewhere, and where ``need``, if given, is false)."""
        legal, points, pos = self.candidates(my_pos)
        c, g = np.nonzero(legal if need is None else legal & need)
        p, q = pos[c, g], points[c, g]
        v = np.full(legal.shape, _ILLEGAL)
        if self.space.n_full == 1:  # no five-of-a-kind classes apart: the candidates are distinct
            v[c, g] = self.values(p, q, g, so_far, start, w, below)
            return legal, v
        # each distinct (game, next state, points) once: classes apart for five-of-a-kind rolls often
        # score like their points class (the five-of-a-kind box still open)
        low = int(q.min(initial=0))
        span = int(q.max(initial=0)) - low + 1
        key = (g * len(self.lo) + p) * span + (q - low)
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        v[c, g] = self.values(p[first], q[first], g[first], so_far, start, w, below)[inverse.reshape(-1)]
        return legal, v

    def current_rows(self, roll: np.ndarray, rolls_left: np.ndarray) -> np.ndarray:
        """``(n_boxes, G)`` the candidate row of each box for each game's current roll."""
        first = (np.asarray(rolls_left) == ROLLS_PER_TURN - 1)[None, :]
        roll = np.asarray(roll, dtype=np.int64)[None, :]
        return self.base[:-1, None] + np.where(first, self.of_first[:, roll[0]], self.of_last[:, roll[0]])

    def _keep_tables(self, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(one_left, two_left)``: ``(210, G)`` keep values of the turn from its candidate values."""
        leaves: list[np.ndarray | None] = [v[self.base[b] : self.base[b + 1]] for b in range(self.tables.n_boxes)]
        return widget(self.space.max_tree[False].evaluate(leaves)[ROLL_POS])  # (engine roll order)

    def q_now(self, legal: np.ndarray, v: np.ndarray, roll: np.ndarray, rolls_left: np.ndarray) -> np.ndarray:
        """``(G, 32 + n)`` every action's value at each game's current roll (``-inf`` illegal)."""
        size = legal.shape[1]
        cols = np.arange(size)
        rows = self.current_rows(roll, rolls_left)
        q = np.full((size, N_KEEP_ACTIONS + self.tables.n_boxes), -np.inf)
        q[:, N_KEEP_ACTIONS:] = np.where(legal[rows, cols], v[rows, cols], -np.inf).T
        keeping = np.flatnonzero(np.asarray(rolls_left) > 0)
        if len(keeping):
            one_left, two_left = self._keep_tables(v[:, keeping])
            k = np.where((rolls_left[keeping] == 2)[None, :], two_left, one_left)
            q[keeping, :KEEP_ALL] = k[_KEEPS[roll[keeping]], np.arange(len(keeping))[:, None]]
        return q

    def q_every(self, legal: np.ndarray, v: np.ndarray) -> np.ndarray:
        """``(G, 3, 252, 32 + n)`` every action's value at every (rolls left, roll) of the turn."""
        size = legal.shape[1]
        q = np.full((size, ROLLS_PER_TURN, N_ROLLS, N_KEEP_ACTIONS + self.tables.n_boxes), -np.inf)
        for rl in range(ROLLS_PER_TURN):
            of = self.of_first if rl == ROLLS_PER_TURN - 1 else self.of_last
            rows = self.base[:-1, None] + of  # (n, 252)
            q[:, rl, :, N_KEEP_ACTIONS:] = np.where(legal[rows], v[rows], -np.inf).transpose(2, 1, 0)
        one_left, two_left = self._keep_tables(v)
        q[:, 1, :, :KEEP_ALL] = one_left[_KEEPS].transpose(2, 0, 1)
        q[:, 2, :, :KEEP_ALL] = two_left[_KEEPS].transpose(2, 0, 1)
        return q

    def action_values(
        self,
        my_pos: np.ndarray,
        so_far: np.ndarray,
        roll: np.ndarray,
        rolls_left: np.ndarray,
        start: np.ndarray,
        w: np.ndarray,
        below: np.ndarray,
    ) -> np.ndarray:
        """``(G, 32 + n)`` the value of every action (``-inf`` illegal) for every game's current roll.

        Games scoring now (no reroll left) value only their roll's candidates; the others the whole turn.
        """
        roll = np.asarray(roll, dtype=np.int64)
        rolls_left = np.asarray(rolls_left, dtype=np.int64)
        need = None
        if not np.any(rolls_left > 0):
            need = np.zeros((self.n_candidates, len(my_pos)), dtype=bool)
            need[self.current_rows(roll, rolls_left), np.arange(len(my_pos))] = True
        legal, v = self.candidate_values(my_pos, so_far, start, w, below, need)
        return self.q_now(legal, v, roll, rolls_left)

    # ------------------------------------------------------------------ two players
    def turn_actions(
        self, my_keys: np.ndarray, opp_keys: np.ndarray, diffs: np.ndarray, expected: Solution | None = None
    ) -> np.ndarray:
        """The two-player policy of whole turns: ``(m, 3, 252)`` int64 env actions per (rolls left, roll).

        Args:
            my_keys, opp_keys: ``(m,)`` solver state keys (as :attr:`Reach.keys`) of the player to move
                (between turns, at the start of its turn) and of its opponent.
            diffs: ``(m,)`` the mover's points so far minus the opponent's.
            expected: the rules' solution: where every legal action has the same value (the game is decided),
                its expected-score action, as :meth:`WinningAgent.act` plays; without it the first of the tie.

        The action at ``[i, r, roll]`` is the one :meth:`WinningAgent.act` takes with ``r`` rerolls
        left and dice ``roll`` in that situation (given ``expected``; :meth:`WinningAgent.turn_actions`).
        """
        my_pos = self._key_positions(my_keys)
        opp_pos = self._key_positions(opp_keys)[:, None]
        diffs = np.asarray(diffs, dtype=np.int64).reshape(-1)
        if not len(my_pos) == len(opp_pos) == len(diffs):
            raise ValueError("my_keys, opp_keys and diffs must have the same length")
        if len(my_pos) == 0:
            return np.zeros((0, ROLLS_PER_TURN, N_ROLLS), dtype=np.int64)
        out = np.empty((len(my_pos), ROLLS_PER_TURN, N_ROLLS), dtype=np.int64)
        decided = np.zeros(out.shape, dtype=bool)
        for a in range(0, len(my_pos), TURN_CHUNK):  # (chunk, 3, 252, 32 + n) action values at a time
            part = slice(a, a + TURN_CHUNK)
            start, w, below = self.weights(opp_pos[part], np.zeros_like(opp_pos[part]))
            legal, v = self.candidate_values(my_pos[part], diffs[part], start, w, below)
            q = self.q_every(legal, v)
            out[part] = np.argmax(q, axis=-1)
            if expected is not None:
                decided[part] = _decided(q)
        rows = np.flatnonzero(decided.any(axis=(1, 2)))
        if len(rows):  # a decided game is played for points
            from dice_poker_env.solver.duel import solitaire_policy

            assert expected is not None

            keys = np.asarray(my_keys, dtype=np.int64).reshape(-1)[rows]
            points = solitaire_policy(expected)(keys, keys, diffs[rows])  # (it ignores the opponent and diffs)
            out[rows] = np.where(decided[rows], points, out[rows])
        return out

    def _key_positions(self, keys: np.ndarray) -> np.ndarray:
        keys = np.asarray(keys, dtype=np.int64).reshape(-1)
        if np.any((keys < 0) | (keys >= self.space.size)):
            raise ValueError("state keys out of range")
        pos = self.reach.index(keys).astype(np.int64)
        if np.any(pos < 0):
            raise ValueError("a state key is not a reachable state of these rules")
        return pos


def _decided(q: np.ndarray) -> np.ndarray:
    """Where every legal action (finite value) of the last axis lies within :data:`DECIDED` of the best: a game
    decided whatever is played (``-inf`` marks an illegal action)."""
    lowest = np.where(np.isfinite(q), q, np.inf).min(axis=-1)
    result: np.ndarray = q.max(axis=-1) - lowest <= DECIDED
    return result


def _policy_table(reach: Reach) -> np.ndarray:
    """The expected-score policy's table of ``reach`` (rows laid out as ``prob``), or a one-line error."""
    table = getattr(reach, "policy_prob", None)
    if table is None or len(table) != len(reach.prob):
        raise SolverError(
            f"the reach table of {reach.rules.name} has no expected-score policy table: solve it with the distribution"
        )
    return np.asarray(table)


def _row_read(
    table: np.ndarray, lo: np.ndarray, offset: np.ndarray, width: np.ndarray, pos: np.ndarray, target: np.ndarray
) -> np.ndarray:
    """``table``'s rows at ``target`` (broadcasting): 1 below a row, 0 above it."""
    column = np.clip(target - lo[pos], 0, width[pos] - 1)
    out: np.ndarray = table[offset[pos] + column]
    return out


class WinningAgent:
    """Plays to win: the action of the highest probability of finishing first (module docstring).

    Args:
        rules: ruleset name, rules-file path or :class:`Rules`.
        target: play for a final score of at least ``target`` (ignores the opponents and ``future``:
            the reach policy for the target).
        future: ``"expected"`` (default) or ``"reach"`` (:class:`WinningPolicy`).
        tail: utility weights dropped at either end (:class:`WinningPolicy`).
        reach: an already solved :class:`~dice_poker_env.solver.reach.Reach` of the rules.
        solution: an already solved :class:`~dice_poker_env.solver.Solution` of the rules (default: solved or
            read from the cache).
        cache, progress: as :func:`~dice_poker_env.solver.reach.solve_reach` (which says on stderr
            when a table is solved: under a minute for yacht, about 70 minutes for yahtzee; then cached).
        **options: rules options.

    Observations are dict observations: the multi-player env's (own game plus the
    ``opponent_*`` keys) or the single env's (no opponents). :meth:`act_batch`
    takes a batch with a leading axis on every key and is stateless.
    """

    obs_mode = "dict"

    def __init__(
        self,
        rules: str | os.PathLike[str] | Rules = "yacht",
        *,
        target: int | None = None,
        future: str = "expected",
        tail: float = TAIL,
        reach: Reach | None = None,
        solution: Solution | None = None,
        cache: bool = True,
        progress: bool | None = None,
        **options: Any,
    ) -> None:
        if target is not None:
            check_target(target)  # (an integer within the int64 arithmetic of the lookups: a ValueError)
        if future not in FUTURES:
            raise ValueError(f"future must be one of {', '.join(FUTURES)}, got {future!r}")
        check_tail(tail)  # (before a reach table is solved: yahtzee's takes over an hour)
        if reach is None:
            rules = load_rules(rules, **options)
            check_solution_rules(solution, rules)  # (before the reach table: a wrong one was played silently)
            path = disk.cache_path(rules.name, rules.fingerprint, kind="reach")
            if progress is not False and not (cache and path.exists()):
                print(
                    f"the winning agent needs the reach table of {rules.name}: solved once, then cached "
                    "(yacht: under a minute; yahtzee: about 70 minutes on 2 cores, 3.4 GiB a worker, a 3.2 GB file)",
                    file=sys.stderr,
                    flush=True,
                )
            reach = solve_reach(rules, cache=cache, progress=progress)
        check_solution_rules(solution, reach.rules)
        self.reach = reach
        self.rules = reach.rules
        self.tables = reach.tables
        self.solution = solution if solution is not None else solve(self.rules, cache=cache, progress=progress)
        self.optimal = OptimalAgent(self.solution)
        self._memos: dict[int, _Memo] = {}
        # a target is played with the reach table: the reach policy for it, whatever ``future`` says
        self.policy = WinningPolicy(reach, future="reach" if target is not None else future, tail=tail)
        self.target = None if target is None else int(target)
        self.future = future
        extra = [f"target={self.target}"] if target is not None else []
        extra += [f"future={future}"] if future != "expected" else []
        self.name = f"winning[{self.rules.name}{''.join(', ' + e for e in extra)}]"

    def reset(self) -> None:
        """Nothing to forget between games (the policy is stateless)."""

    # ------------------------------------------------------------------ decoding
    def _decode(self, observations: Mapping[str, Any]) -> tuple[dict[str, np.ndarray], bool]:
        """My situation and the opponents' states of a batch (or of one observation)."""
        situation, batched = self.solution._situation(observations, points=True)
        filled, upper, full, roll, rolls_left, so_far = situation
        assert so_far is not None
        my_pos = self.solution._positions(filled, upper, full)
        out = {
            "my_pos": my_pos,
            "so_far": np.rint(so_far).astype(np.int64),
            "roll": roll,
            "rolls_left": rolls_left,
        }
        if "opponent_filled" in observations and self.target is None:
            out.update(self._opponents(observations, len(my_pos), batched))
        return out, batched

    def _opponents(self, obs: Mapping[str, Any], size: int, batched: bool) -> dict[str, np.ndarray]:
        tables, n = self.tables, self.tables.n_boxes
        flags = np.asarray(obs["opponent_filled"], dtype=np.int64)
        scores = np.asarray(obs["opponent_scores"], dtype=np.int64)
        upper = np.asarray(obs["opponent_upper_total"], dtype=np.int64)
        bonus = np.asarray(obs["opponent_bonus"], dtype=np.int64)
        if not batched:
            flags, scores, upper, bonus = flags[None], scores[None], upper[None], bonus[None]
        if flags.ndim != 3 or flags.shape[0] != size or flags.shape[2] != n or scores.shape != flags.shape:
            raise SolverError(f"observation: 'opponent_filled' and 'opponent_scores' must be (opponents, {n}) a game")
        opponents = flags.shape[1]
        upper, bonus = upper.reshape(size, opponents), bonus.reshape(size, opponents)
        if np.any((flags != 0) & (flags != 1)):
            raise SolverError("observation: 'opponent_filled' flags must be 0 or 1")
        mask = (flags << np.arange(n)).sum(axis=2).reshape(-1)
        flat_scores = scores.reshape(-1, n)
        if np.any((flat_scores != 0) & (flags.reshape(-1, n) == 0)):
            raise SolverError("observation: an opponent's open box holds points")
        if np.any(upper.reshape(-1) != flat_scores @ tables.is_upper.astype(np.int64)):
            raise SolverError("observation: an opponent's 'upper_total' does not match its scorecard")
        full = np.asarray(five_kind_box_state(tables, mask, flat_scores)) == 2
        full &= self.reach.space.n_full == 2
        canonical = self.reach.space.canonical_upper(mask, upper.reshape(-1))
        key = self.reach.space.key(mask, canonical, full)
        if np.any(tables.popcount(mask) > tables.turns):
            raise SolverError("observation: an opponent has more boxes filled than the game has turns")
        pos = self.reach.index(key).astype(np.int64)
        if np.any(pos < 0):
            raise SolverError("observation: an opponent's scorecard is not reachable under these rules")
        points = flat_scores.sum(axis=1) + bonus.reshape(-1)
        return {"opp_pos": pos.reshape(size, opponents), "opp_points": points.reshape(size, opponents)}

    # ------------------------------------------------------------------ values
    def _weights(self, d: dict[str, np.ndarray], games: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(start, w, below)`` of the games ``games`` (a point mass at the target, or the opponents' utility)."""
        if self.target is not None:
            return np.full(len(games), self.target, dtype=np.int64), np.ones((len(games), 1)), np.zeros(len(games))
        return self.policy.weights(d["opp_pos"][games], d["opp_points"][games])

    def _plays_expected(self, d: dict[str, np.ndarray]) -> bool:
        """Whether the agent plays the expected score (no target and no opponent)."""
        return self.target is None and ("opp_pos" not in d or d["opp_pos"].shape[1] == 0)

    def _values(self, d: dict[str, np.ndarray]) -> np.ndarray:
        """``(G, 32 + n)`` every action's value in every game (target or opponents present).

        A turn's candidate values depend only on the situation between turns (my state and points, the
        opponents' states and points), so they are remembered (:class:`_Memo`) for the turn's later
        decisions; a game scoring now values only its roll's candidates (not remembered).
        """
        my_pos, so_far, roll, rolls_left = d["my_pos"], d["so_far"], d["roll"], d["rolls_left"]
        size = len(my_pos)
        parts = [my_pos[:, None], so_far[:, None]]
        if self.target is None:
            parts += [d["opp_pos"], d["opp_points"]]
        rows = np.concatenate(parts, axis=1)
        memo = self._memos.setdefault(rows.shape[1], _Memo(self.policy.n_candidates))
        found = memo.find(rows)
        legal = np.empty((self.policy.n_candidates, size), dtype=bool)
        v = np.empty((self.policy.n_candidates, size))
        hit = np.flatnonzero(found >= 0)
        legal[:, hit] = memo.legal[found[hit]].T
        v[:, hit] = memo.values[found[hit]].T
        miss = np.flatnonzero(found < 0)
        if len(miss):
            start, w, below = self._weights(d, miss)
            whole = rolls_left[miss] > 0
            for part, keep in ((np.flatnonzero(whole), True), (np.flatnonzero(~whole), False)):
                if not len(part):
                    continue
                games = miss[part]
                need = None
                if not keep:  # scoring now: only this roll's candidates
                    need = np.zeros((self.policy.n_candidates, len(games)), dtype=bool)
                    need[self.policy.current_rows(roll[games], rolls_left[games]), np.arange(len(games))] = True
                legal[:, games], v[:, games] = self.policy.candidate_values(
                    my_pos[games], so_far[games], start[part], w[part], below[part], need
                )
                if keep:
                    memo.add(rows[games], legal[:, games].T, v[:, games].T)
        return self.policy.q_now(legal, v, roll, rolls_left)

    def turn_actions(self, my_keys: np.ndarray, opp_keys: np.ndarray, diffs: np.ndarray) -> np.ndarray:
        """Its two-player policy of whole turns, ``(m, 3, 252)`` int64 env actions per (rolls left, roll), as
        :meth:`act` plays them (:meth:`WinningPolicy.turn_actions`, a decided game played for points): a policy
        :class:`~dice_poker_env.solver.duel.Duel` evaluates."""
        return self.policy.turn_actions(my_keys, opp_keys, diffs, expected=self.solution)

    def action_values(self, observation: Mapping[str, Any]) -> np.ndarray:
        """Every action's value: the expected win share (probability of finishing first, ties split), or the
        probability of reaching ``target``, or without either the expected final score; ``-inf`` illegal."""
        d, batched = self._decode(observation)
        if self._plays_expected(d):
            return np.asarray(self.solution.action_values(observation), dtype=np.float64)
        q = self._values(d)
        return q if batched else q[0]

    def act(self, observation: Mapping[str, Any], action_mask: np.ndarray | None = None) -> int:
        """The best legal action for one observation."""
        if not isinstance(observation, Mapping):
            raise SolverError(
                f"observation must be a dict: the multi-player env's (obs_mode='dict'), got {type(observation).__name__}"
            )
        batch = {key: np.asarray(value)[None] for key, value in observation.items()}
        masks = None if action_mask is None else np.asarray(action_mask)[None, :]
        return int(self.act_batch(batch, masks)[0])

    def act_batch(self, observations: Mapping[str, Any], action_masks: np.ndarray | None = None) -> np.ndarray:
        """The best legal actions of a batch of observations (``(B,)`` int64); stateless (the memo of turn
        values only saves work: it never changes an answer)."""
        d, batched = self._decode(observations)
        if self._plays_expected(d):
            return self.optimal.act_batch(observations, action_masks)
        q = self._values(d)
        if action_masks is not None:
            masks = np.asarray(action_masks).reshape(q.shape)
            q = np.where(masks != 0, q, -np.inf)
        actions = np.argmax(q, axis=1).astype(np.int64)
        # a decided game (every legal action the same value: won, lost, or the target reached or out of reach
        # whatever happens) is played for points, not by the first action of the tie (rerolling a straight)
        decided = np.flatnonzero(_decided(q))
        if len(decided):  # (one unbatched observation is its own single row)
            rows = {key: np.asarray(value)[decided] for key, value in observations.items()} if batched else observations
            actions[decided] = self.optimal.act_batch(rows, None if action_masks is None else masks[decided])
        return actions


class _Memo:
    """Remembered candidate values of situations between turns: rows of int64 keys -> ``(legal, values)``.

    Lookups are vectorized (a 64-bit hash of each row, sorted, then the rows compared in full); when
    :data:`MEMO_ROWS` situations are held it is emptied.
    """

    def __init__(self, n_candidates: int) -> None:
        self.n = n_candidates
        self.keys = np.zeros((0, 0), dtype=np.int64)
        self.hashes = np.zeros(0, dtype=np.uint64)
        self.order = np.zeros(0, dtype=np.int64)
        self.legal = np.zeros((0, n_candidates), dtype=bool)
        self.values = np.zeros((0, n_candidates))

    @staticmethod
    def _hash(rows: np.ndarray) -> np.ndarray:
        h = np.full(len(rows), 0x9E3779B97F4A7C15, dtype=np.uint64)
        for column in rows.T.astype(np.uint64):
            h ^= column
            h *= np.uint64(0xBF58476D1CE4E5B9)
            h ^= h >> np.uint64(31)
        return h

    def find(self, rows: np.ndarray) -> np.ndarray:
        """The memo index of each row, -1 where absent."""
        if not len(self.hashes) or self.keys.shape[1] != rows.shape[1]:
            return np.full(len(rows), -1, dtype=np.int64)
        h = self._hash(rows)
        at = np.minimum(np.searchsorted(self.hashes, h), len(self.hashes) - 1)
        index = self.order[at]
        same = (self.hashes[at] == h) & (self.keys[index] == rows).all(axis=1)
        return np.where(same, index, -1)

    def add(self, rows: np.ndarray, legal: np.ndarray, values: np.ndarray) -> None:
        rows, first = np.unique(rows, axis=0, return_index=True)
        legal, values = legal[first], values[first]
        if len(self.keys) + len(rows) > max(MEMO_ROWS, 2 * len(rows)) or self.keys.shape[1] != rows.shape[1]:
            self.keys = np.zeros((0, rows.shape[1]), dtype=np.int64)
            self.legal, self.values = self.legal[:0], self.values[:0]
        self.keys = np.concatenate([self.keys, rows])
        self.legal = np.concatenate([self.legal, legal])
        self.values = np.concatenate([self.values, values])
        h = self._hash(self.keys)
        self.order = np.argsort(h, kind="stable")
        self.hashes = h[self.order]
