"""What a trained policy network sees, and the rules' arithmetic its heads weigh.

* :class:`PolicyInputs`: the flat observation plus a few features of it (progress toward the upper bonus).
  The batched trainers' rollouts and the NumPy player (:class:`agents.policy.player.PolicyAgent`) both call
  it, so training and play feed a network the same numbers. NumPy only: the features carry no gradient,
  so they are computed once per step on the env's observations.
* :func:`keep_expected_points`: each keep's expected points per box after one reroll (``keep_points``).
* :class:`KeepBonus`: the upper bonus in those points (``keep_points_bonus``), its terms written once
  for NumPy arrays and torch tensors.

The heads that use them are :mod:`agents.policy.heads`.
"""

from __future__ import annotations

from math import comb
from typing import TYPE_CHECKING, Any

import numpy as np

from agents.policy.bonus import par_chance, par_points, points_needed
from agents.policy.observation import FlatObservation, as_index
from dice_poker_env.engine.combinatorics import (
    KEEP_COUNTS,
    KEEP_OF_ACTION,
    KEEP_SIZE,
    N_DICE,
    N_KEEP_ACTIONS,
    ROLL_COUNTS,
    TRANSITION,
)
from dice_poker_env.engine.tables import compile_rules
from dice_poker_env.envs.observation import flat_scales
from dice_poker_env.rules import Rules

if TYPE_CHECKING:
    from agents.policy.observation import ArrayT


def keep_expected_points(rules: Rules) -> np.ndarray:
    """``(252, 32, n_boxes)`` float32: from each sorted roll, for each keep bitmask, the points each box would
    score on average after the dice not kept are rolled once, divided by the flat layout's points scale (as the
    observation's ``potential_points``; keeping all five dice, bitmask 31, gives the points each box scores now).

    Read from the rules' score table and the dice's transition probabilities: what a player can work out from
    the rules alone (the box's plain score: no joker, no first-roll bonus), not the solver's values, which
    weigh every box of the scorecard at once. The ``keep_points`` option (:mod:`agents.policy.heads`) weighs
    these per state.
    """
    tables = compile_rules(rules)
    scale, _ = flat_scales(tables)
    keeps = KEEP_OF_ACTION.astype(np.int64)  # (252 rolls, 32 bitmasks) -> kept multiset
    points = tables.score.astype(np.float64)  # (252 rolls, n_boxes): the points of each roll
    return ((TRANSITION @ points)[keeps] / scale).astype(np.float32)  # expected points after one roll


class KeepBonus:
    """The upper bonus in the points that ``keep_points`` weighs: option ``keep_points_bonus`` of
    the policy's heads (:mod:`agents.policy.heads`).

    A box action's points (the observation's ``potential_points``) include the upper bonus where writing the
    box reaches it now; :func:`keep_expected_points` counts each box's plain score only. So with the bonus
    within reach, writing four fours at once looked worth the bonus more than keeping them and rolling the
    fifth die, although the fours can still be written after the reroll and reach it all the same.

    ``par=False`` (``keep_points_bonus: true``): each keep's points for an open upper box also get the bonus's
    points times the chance that, after the dice not kept are rolled once, writing that box reaches the bonus:
    the box actions' arithmetic, one reroll ahead.

    ``par=True`` (``keep_points_bonus: par``): what writing an upper box does to the bonus's expected points,
    for the box actions and, after one reroll, for the keeps: the bonus's points times the chance that the
    other open upper boxes then bring the points still needed (1 where the box reaches the threshold), minus
    that chance now, the chances of the par model (:func:`agents.policy.bonus.par_chance`: each open box
    ``Binomial(5, 0.6)`` of its face). Writing three sixes early is then worth a little more than 18 points,
    two sixes a good deal less than 12.

    Both are arithmetic of the rules (the score table, the dice's probabilities), not the solver's values.
    An upper box scores by the count of its face, so a keep's chances depend only on how many of that face
    it keeps and how many dice it rolls (``combo``: ``6 * kept + rolled``).
    """

    def __init__(self, rules: Rules, par: bool = False) -> None:
        tables = compile_rules(rules)
        if not tables.has_upper_bonus:
            raise ValueError(f"keep_points_bonus: ruleset {rules.name!r} has no upper bonus")
        scale, _ = flat_scales(tables)
        self.upper = np.flatnonzero(tables.is_upper)
        faces = np.array([rules.boxes[k].face for k in self.upper]) - 1
        counts = ROLL_COUNTS[:, faces].astype(np.int64)  # (252, U): each upper box's face count in each roll
        count_value = np.zeros((len(self.upper), N_DICE + 1), dtype=np.float32)  # (U, 6): points at each count
        for j, k in enumerate(self.upper):
            for c in range(N_DICE + 1):
                found = np.unique(tables.score[counts[:, j] == c, k])
                if len(found) != 1:
                    raise ValueError(
                        f"keep_points_bonus: box {rules.boxes[k].name!r} does not score by the count of one face"
                    )
                count_value[j, c] = found[0]
        self.count_value = count_value
        keeps = KEEP_OF_ACTION.astype(np.int64)  # (252, 32): the kept multiset of each roll and bitmask
        kept = KEEP_COUNTS[keeps][:, :, faces].astype(np.int64)  # (252, 32, U)
        rolled = N_DICE - KEEP_SIZE[keeps].astype(np.int64)  # (252, 32)
        self.combo = kept * (N_DICE + 1) + rolled[:, :, None]  # (252, 32, U)
        # combo_chance[6 k + n, c]: n dice rolled beside k kept of the face end with c of it
        combo_chance = np.zeros(((N_DICE + 1) ** 2, N_DICE + 1), dtype=np.float32)
        for kept_n in range(N_DICE + 1):
            for n in range(N_DICE + 1 - kept_n):
                for j in range(n + 1):
                    combo_chance[kept_n * (N_DICE + 1) + n, kept_n + j] = comb(n, j) * (1 / 6) ** j * (5 / 6) ** (n - j)
        self.combo_chance = combo_chance
        self.points = float(tables.upper_bonus_points) / scale  # in the units of potential_points
        self.threshold = float(tables.upper_bonus_threshold)
        self.on_complete = bool(tables.upper_bonus_on_complete)
        self.par = bool(par)
        if self.par:  # chance[open upper boxes' bitmask, points needed]: they bring them at par
            if self.on_complete:
                raise ValueError(
                    f"keep_points_bonus=par: the par model needs an upper bonus paid at a total of "
                    f"face sums; {rules.name}'s is settled by the last upper box (use true)"
                )
            self.chance = par_chance(rules).astype(np.float32)
            self.bits = (1 << np.arange(len(self.upper))).astype(np.float32)

    def arrays(self) -> dict[str, np.ndarray]:
        """The tables :meth:`terms` reads, by name (``upper``: the upper boxes' indices), for torch buffers."""
        names = ("combo", "combo_chance", "count_value", "upper") + (("chance", "bits") if self.par else ())
        return {name: getattr(self, name) for name in names}

    def terms(self, t: Any, roll: ArrayT, upper_total: ArrayT, upper_open: ArrayT) -> tuple[ArrayT, ArrayT | None]:
        """``(keeps, boxes)``: the bonus points (``potential_points``' units) each keep ``(B, 32, U)`` adds to
        each upper box's, and with ``par`` each upper box action adds ``(B, U)`` (else ``None``).

        Written once for NumPy arrays and torch tensors (the NumPy player and the torch network): ``t`` holds
        this object's tables (:meth:`arrays`) as NumPy arrays (this object itself) or as torch buffers; ``roll`` ``(B,)`` sorted-roll
        indices, ``upper_total`` ``(B,)`` the upper total in points, ``upper_open`` ``(B, U)`` 1 where the box
        is open.
        """
        needed = points_needed(self.threshold, upper_total)  # (B,)
        reach = t.count_value[None] >= needed[:, None, None]  # (B, U, 6): the count's points reach the bonus
        if self.on_complete:  # only writing the last open upper box can earn it (par refuses such rulesets)
            eligible = upper_open * (upper_open.sum(-1) == 1)[:, None]
        else:  # not earned yet
            eligible = upper_open * (needed > 0)[:, None]
        if self.par:
            width = t.chance.shape[1] - 1
            mask = (upper_open * t.bits).sum(-1)  # (B,): the open upper boxes' bitmask
            rest = as_index(mask[:, None] - upper_open * t.bits)[:, :, None]  # (B, U, 1): without box j
            now = t.chance[as_index(mask), as_index(needed.clip(0, width))] * self.points  # (B,)
            after = t.chance[rest, as_index((needed[:, None, None] - t.count_value[None]).clip(0, width))]
            value = after * self.points - now[:, None, None]  # (B, U, 6)
        else:
            value = reach * self.points
        expected = (value * eligible[:, :, None]) @ t.combo_chance.T  # (B, U, 36): per kept count and dice rolled
        combo = t.combo[roll]  # (B, 32, U)
        keeps = _take_last(expected, combo.swapaxes(1, 2)).swapaxes(1, 2)  # (B, 32, U)
        if not self.par:
            return keeps, None
        # writing the box now: its points already hold the bonus where it reaches it (keeping all five = now)
        boxes = (
            keeps[:, N_KEEP_ACTIONS - 1]
            - _take_last(
                reach * (eligible * self.points)[:, :, None], combo[:, N_KEEP_ACTIONS - 1, :, None] // (N_DICE + 1)
            )[..., 0]
        )
        return keeps, boxes


def _take_last(values: ArrayT, index: ArrayT) -> ArrayT:
    """``values`` gathered along the last axis at ``index`` (NumPy arrays or torch tensors)."""
    if isinstance(values, np.ndarray):
        return np.take_along_axis(values, index, axis=-1)
    return values.gather(-1, index)


class PolicyInputs:
    """The flat observation followed by three features of progress toward the upper bonus.

    * ``upper_needed``: points still missing to the upper-bonus threshold (0 once
      reached, or where the ruleset has no upper bonus);
    * ``upper_above_par``: the filled upper boxes' points minus their "par" (the
      points for three of the box's face), summed;
    * ``upper_open_par``: the open upper boxes' par, summed (what is still to come at par).

    Each is divided by the threshold. They come from the observation's
    ``filled``, ``scores`` and ``upper_total`` slices and the ruleset's fixed box
    definitions: what a human player tracks, nothing the env does not show.

    At a two-player table (``players=2``) the observation is the multi-player env's flat vector: the single
    env's, then the opponent's scorecard (:func:`~dice_poker_env.multi.observations.multi_observation_space`);
    the features still read the player's own game, which comes first.

    Args:
        rules: the ruleset of the observations.
        features: append the features (``False``: the flat observation alone).
        players: 1 (the single env's observation) or 2 (a two-player table's).
    """

    n_features = 3

    def __init__(self, rules: Rules, features: bool = True, players: int = 1) -> None:
        tables = compile_rules(rules)
        self.obs = FlatObservation(rules)
        self.features = bool(features)
        self.players = int(players)
        #: the observation's length: the player's own game, then per opponent its scorecard (2 n + 3 values)
        self.obs_size = self.obs.size + (self.players - 1) * (2 * tables.n_boxes + 3)
        self.size = self.obs_size + (self.n_features if self.features else 0)
        self._threshold = float(tables.upper_bonus_threshold) if tables.has_upper_bonus else 0.0
        self._norm = max(self._threshold, 1.0)
        # the upper boxes scored by one face, and their points at par
        counted = [box.section == "upper" and box.kind in ("face_sum", "relative_face") for box in rules.boxes]
        self._counted = np.array(counted, dtype=np.float32)
        self._par = np.array([par_points(box) for box in rules.boxes], dtype=np.float32)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        """``(B, obs_size)`` or ``(obs_size,)`` float32 observations -> network inputs (float32)."""
        obs = np.asarray(obs, dtype=np.float32)
        if not self.features:
            return obs
        single = obs.ndim == 1
        obs = obs.reshape(-1, self.obs_size)
        filled = self.obs.filled(obs)
        if self._threshold:
            needed = np.clip(points_needed(self._threshold, self.obs.upper_total(obs)), 0.0, None)
        else:
            needed = np.zeros(len(obs), dtype=np.float32)
        above = ((self.obs.scores(obs) - self._par) * filled) @ self._counted
        open_par = (1.0 - filled) @ (self._par * self._counted)
        extra = np.column_stack([needed, above, open_par]) / self._norm
        out = np.concatenate([obs, extra.astype(np.float32)], axis=1)
        return out[0] if single else out
