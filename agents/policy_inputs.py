"""What a trained policy network sees: the flat observation plus a few features of it.

The batched trainers (``agents/ppo.py``, ``agents/a2c.py``) and the NumPy player of
their policies (:class:`agents.policy_agent.PolicyAgent`) both call
:class:`PolicyInputs`, so training and play feed a network the same numbers.
NumPy only: the features carry no gradient, so they are computed once per
step on the env's observations.
"""

from __future__ import annotations

import numpy as np

from dice_poker_env.engine.combinatorics import KEEP_OF_ACTION, TRANSITION
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
    :class:`agents.actor_critic.ActorCritic` weighs these per state.
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
    """The upper bonus a keep may still bring: the ``keep_points_bonus`` option of
    :class:`agents.actor_critic.ActorCritic`.

    A box action's points (the observation's ``potential_points``) include the upper bonus where writing the
    box reaches it now; :func:`keep_expected_points` counts the box's plain score only. So with the bonus
    within reach, writing four fours at once looked worth the bonus more than keeping them and rolling the
    fifth die, although the fours can still be written after the reroll and reach it all the same. This adds
    to each keep's points for each open upper box the bonus's points times the chance that, after the dice
    not kept are rolled once, writing that box reaches the bonus: the same arithmetic as the box actions',
    one reroll ahead.

    ``dist`` ``(252, 32, U, V)``: from each sorted roll, for each keep bitmask, the chance that upper box ``u``
    (the ruleset's ``U`` upper boxes, in order) scores its ``v``-th possible value after one reroll;
    ``values`` ``(U, V)`` those values (padded with a value no threshold needs, at chance 0). Read from the
    rules' score table and the dice's transition probabilities.
    """

    def __init__(self, rules: Rules, par: bool = False):
        tables = compile_rules(rules)
        if not tables.has_upper_bonus:
            raise ValueError(f"keep_points_bonus: ruleset {rules.name!r} has no upper bonus")
        scale, self.upper_scale = flat_scales(tables)
        self.upper = np.flatnonzero(tables.is_upper)
        score = tables.score[:, self.upper].astype(np.int64)  # (252, U)
        found = [np.unique(score[:, j]) for j in range(len(self.upper))]
        width = max(len(v) for v in found)
        values = np.full((len(self.upper), width), 10 ** 6, dtype=np.int64)  # padding: never enough
        for j, v in enumerate(found):
            values[j, :len(v)] = v
        hit = (score[:, :, None] == values[None]).astype(np.float64)  # (252, U, V): roll r scores value v
        per_keep = TRANSITION @ hit.reshape(len(score), -1)  # (462 kept multisets, U * V)
        self.dist = per_keep[KEEP_OF_ACTION.astype(np.int64)].reshape(
            *KEEP_OF_ACTION.shape, *values.shape).astype(np.float32)
        self.values = values.astype(np.float32)
        self.points = float(tables.upper_bonus_points) / scale  # in the units of potential_points
        self.threshold = float(tables.upper_bonus_threshold)
        self.on_complete = bool(tables.upper_bonus_on_complete)
        self.par = bool(par)
        if self.par:  # chance[open upper boxes' bitmask, points needed] that they bring them at par
            from agents.shaping import BonusPotential
            self.chance = BonusPotential(rules).chance.astype(np.float32)
            self.bits = (1 << np.arange(len(self.upper))).astype(np.int64)
            self.score = tables.score[:, self.upper].astype(np.float32)  # (252, U): each upper box's points now

    def points_of(self, dist, values, roll, upper_total, upper_open):
        """``(B, 32, U)``: each keep's bonus points (potential_points' units) for each upper box.

        Written once for both NumPy arrays and torch tensors (the NumPy player and the torch network):
        ``dist`` and ``values`` this object's tables (or their tensors), ``roll`` ``(B,)`` sorted-roll indices,
        ``upper_total`` ``(B,)`` the upper total in points, ``upper_open`` ``(B, U)`` 1 where the box is open.
        """
        needed = self.threshold - upper_total  # (B,)
        reach = values[None] >= needed[:, None, None]  # (B, U, V): the value reaches the threshold
        chance = (dist[roll] * reach[:, None]).sum(-1)  # (B, 32, U)
        if self.on_complete:  # only writing the last open upper box can earn it
            eligible = upper_open * (upper_open.sum(-1) == 1)[:, None]
        else:  # not earned yet
            eligible = upper_open * (needed > 0)[:, None]
        return chance * (eligible * self.points)[:, None, :]

    def par_points_of(self, dist, values, score, chance_table, bits, roll, upper_total, upper_open):
        """``par``: the change in the bonus's expected points (par model) ``(B, 32, U)`` for each keep and upper
        box, and ``(B, U)`` for writing each upper box now (beyond the bonus the box's points already hold).

        After writing value ``v`` in open upper box ``j``, the bonus is worth its points times the chance
        (:class:`agents.shaping.BonusPotential`'s par model) that the other open upper boxes bring the points
        still needed (1 where ``v`` reaches the threshold); minus what it is worth now.
        """
        needed = self.threshold - upper_total  # (B,)
        width = chance_table.shape[1] - 1
        mask = (upper_open * bits).sum(-1)  # (B,): the open upper boxes' bitmask
        rest = mask[:, None] - upper_open * bits  # (B, U): without box j
        rest_i = _as_index(rest)
        now = chance_table[_as_index(mask), _as_index((needed.clip(0, width)))] * self.points  # (B,)
        after_v = chance_table[rest_i[:, :, None], _as_index((needed[:, None, None] - values[None]).clip(0, width))]
        delta_v = after_v * self.points - now[:, None, None]  # (B, U, V)
        live = upper_open * (needed > 0)[:, None]  # (B, U)
        keeps = (dist[roll] * delta_v[:, None]).sum(-1) * live[:, None, :]
        x = score[roll]  # (B, U)
        after_x = chance_table[rest_i, _as_index((needed[:, None] - x).clip(0, width))]
        boxes = (after_x * self.points - now[:, None] - self.points * (x >= needed[:, None])) * live
        return keeps, boxes


def _as_index(x):
    """Integer indices of a NumPy array or a torch tensor of whole numbers."""
    return x.astype(np.int64) if isinstance(x, np.ndarray) else x.round().long()


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
