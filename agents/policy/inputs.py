"""What a trained policy network sees: the flat observation plus a few features of it.

The batched trainers (``agents/training/ppo.py``, ``agents/training/a2c.py``) and the NumPy player of
their policies (:class:`agents.policy.player.PolicyAgent`) both call
:class:`PolicyInputs`, so training and play feed a network the same numbers.
NumPy only: the features carry no gradient, so they are computed once per
step on the env's observations.
"""

from __future__ import annotations

from math import comb

import numpy as np

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
from dice_poker_env.envs.observation import flat_layout, flat_scales, flat_size
from dice_poker_env.rules import Rules


def keep_expected_points(rules: Rules, rerolls: int = 1) -> np.ndarray:
    """``(252, 32, n_boxes)`` float32: from each sorted roll, for each keep bitmask, the points each box would
    score on average after the dice not kept are rolled, divided by the flat layout's points scale (as the
    observation's ``potential_points``).

    ``rerolls=1``: the dice not kept are rolled once (keeping all five dice, bitmask 31, gives the points each
    box scores now). ``rerolls=2``: they are rolled, and then once more after the best keep *for that box
    alone* (each box's own best second keep, as if it were the only box open).

    Read from the rules' score table and the dice's transition probabilities: what a player can work out from
    the rules alone (the box's plain score: no joker, no first-roll bonus), not the solver's values, which
    weigh every box of the scorecard at once. The ``keep_points`` option of
    :class:`agents.training.actor_critic.ActorCritic` weighs these per state.
    """
    return _keep_tables(rules, rerolls)[-1]


def _keep_tables(rules: Rules, rerolls: int) -> list[np.ndarray]:
    """:func:`keep_expected_points` for 1 to ``rerolls`` rerolls, each built on the one before."""
    if rerolls not in (1, 2):
        raise ValueError(f"rerolls must be 1 or 2, got {rerolls!r}")
    tables = compile_rules(rules)
    scale, _ = flat_scales(tables)
    keeps = KEEP_OF_ACTION.astype(np.int64)  # (252 rolls, 32 bitmasks) -> kept multiset
    points = tables.score.astype(np.float64)  # (252 rolls, n_boxes): the points of each roll
    out = []
    for _ in range(rerolls):
        per_roll = (TRANSITION @ points)[keeps]  # (252, 32, n_boxes): expected points after one roll
        out.append((per_roll / scale).astype(np.float32))
        points = per_roll.max(axis=1)  # each box's best keep from each roll, for the next horizon
    return out


def keep_points_tables(rules: Rules, rerolls: int = 1) -> np.ndarray:
    """The ``keep_points`` table(s) of a horizon: ``rerolls=1`` the one-reroll table ``(252, 32, n_boxes)``;
    ``rerolls=2`` both, stacked ``(2, 252, 32, n_boxes)``: index 0 where one reroll is left, 1 where two are."""
    found = _keep_tables(rules, rerolls)
    return found[0] if rerolls == 1 else np.stack(found)


class KeepBonus:
    """The upper bonus in the points that ``keep_points`` weighs: option ``keep_points_bonus`` of
    :class:`agents.training.actor_critic.ActorCritic`.

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
    that chance now, the chances of :class:`agents.training.shaping.BonusPotential`'s par model (each open box
    ``Binomial(5, 0.6)`` of its face). Writing three sixes early is then worth a little more than 18 points,
    two sixes a good deal less than 12.

    Both are arithmetic of the rules (the score table, the dice's probabilities), not the solver's values.
    An upper box scores by the count of its face, so a keep's chances depend only on how many of that face
    it keeps and how many dice it rolls (``combo``: ``6 * kept + rolled``).
    """

    def __init__(self, rules: Rules, par: bool = False):
        tables = compile_rules(rules)
        if not tables.has_upper_bonus:
            raise ValueError(f"keep_points_bonus: ruleset {rules.name!r} has no upper bonus")
        scale, self.upper_scale = flat_scales(tables)
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
        for k in range(N_DICE + 1):
            for n in range(N_DICE + 1 - k):
                for j in range(n + 1):
                    combo_chance[k * (N_DICE + 1) + n, k + j] = comb(n, j) * (1 / 6) ** j * (5 / 6) ** (n - j)
        self.combo_chance = combo_chance
        self.points = float(tables.upper_bonus_points) / scale  # in the units of potential_points
        self.threshold = float(tables.upper_bonus_threshold)
        self.on_complete = bool(tables.upper_bonus_on_complete)
        self.par = bool(par)
        if self.par:  # chance[open upper boxes' bitmask, points needed]: they bring them at par
            from agents.training.shaping import BonusPotential

            if self.on_complete:
                raise ValueError(
                    f"keep_points_bonus=par: the par model needs an upper bonus paid at a total of "
                    f"face sums; {rules.name}'s is settled by the last upper box (use true)"
                )
            self.chance = BonusPotential(rules).chance.astype(np.float32)
            self.bits = (1 << np.arange(len(self.upper))).astype(np.float32)

    def terms(self, t, roll, upper_total, upper_open):
        """``(keeps, boxes)``: the bonus points (``potential_points``' units) each keep ``(B, 32, U)`` adds to
        each upper box's, and with ``par`` each upper box action adds ``(B, U)`` (else ``None``).

        Written once for NumPy arrays and torch tensors (the NumPy player and the torch network): ``t`` holds
        this object's tables ``combo``, ``combo_chance``, ``count_value`` and with ``par`` ``chance`` and
        ``bits``, as NumPy arrays (this object itself) or as torch buffers; ``roll`` ``(B,)`` sorted-roll
        indices, ``upper_total`` ``(B,)`` the upper total in points, ``upper_open`` ``(B, U)`` 1 where the box
        is open.
        """
        needed = self.threshold - upper_total  # (B,)
        reach = t.count_value[None] >= needed[:, None, None]  # (B, U, 6): the count's points reach the bonus
        if self.on_complete:  # only writing the last open upper box can earn it (par refuses such rulesets)
            eligible = upper_open * (upper_open.sum(-1) == 1)[:, None]
        else:  # not earned yet
            eligible = upper_open * (needed > 0)[:, None]
        if self.par:
            width = t.chance.shape[1] - 1
            mask = (upper_open * t.bits).sum(-1)  # (B,): the open upper boxes' bitmask
            rest = _as_index(mask[:, None] - upper_open * t.bits)[:, :, None]  # (B, U, 1): without box j
            now = t.chance[_as_index(mask), _as_index(needed.clip(0, width))] * self.points  # (B,)
            after = t.chance[rest, _as_index((needed[:, None, None] - t.count_value[None]).clip(0, width))]
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


def _as_index(x):
    """Integer indices of a NumPy array or a torch tensor of whole numbers."""
    return np.rint(x).astype(np.int64) if isinstance(x, np.ndarray) else x.round().long()


def _take_last(values, index):
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

    Args:
        rules: the ruleset of the observations.
        features: append the features (``False``: the flat observation alone).
    """

    n_features = 3

    def __init__(self, rules: Rules, features: bool = True):
        tables = compile_rules(rules)
        layout = flat_layout(tables)
        self.features = bool(features)
        self.obs_size = flat_size(tables)
        self.size = self.obs_size + (self.n_features if self.features else 0)
        self._filled, self._scores, self._upper_total = layout["filled"], layout["scores"], layout["upper_total"]
        self._score_scale, self._upper_scale = flat_scales(tables)
        self._threshold = float(tables.upper_bonus_threshold) if tables.has_upper_bonus else 0.0
        self._norm = max(self._threshold, 1.0)
        par = np.zeros(tables.n_boxes, dtype=np.float32)
        counted = np.zeros(tables.n_boxes, dtype=np.float32)  # upper boxes scored by one face
        for k, box in enumerate(rules.boxes):
            if box.section == "upper" and box.kind in ("face_sum", "relative_face"):
                par[k] = (3 - (box.base if box.kind == "relative_face" else 0)) * box.face
                counted[k] = 1.0
        self._par, self._counted = par, counted

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        """``(B, obs_size)`` or ``(obs_size,)`` float32 observations -> network inputs (float32)."""
        obs = np.asarray(obs, dtype=np.float32)
        if not self.features:
            return obs
        single = obs.ndim == 1
        obs = obs.reshape(-1, self.obs_size)
        filled = obs[:, self._filled]
        scores = obs[:, self._scores] * self._score_scale
        total = obs[:, self._upper_total] * self._upper_scale
        needed = np.clip(self._threshold - total, 0.0, None) if self._threshold else np.zeros_like(total)
        above = ((scores - self._par) * filled) @ self._counted
        open_par = (1.0 - filled) @ (self._par * self._counted)
        extra = np.column_stack([needed[:, 0], above, open_par]) / self._norm
        out = np.concatenate([obs, extra.astype(np.float32)], axis=1)
        return out[0] if single else out
