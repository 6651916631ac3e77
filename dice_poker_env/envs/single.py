"""The single-game Gymnasium environment (a thin wrapper over the engine)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from dice_poker_env.dice_sources import DiceSource, RandomDice
from dice_poker_env.engine import game
from dice_poker_env.engine.combinatorics import (
    N_DICE,
    N_KEEP_ACTIONS,
    REROLLED_POSITIONS,
    roll_of_faces,
)
from dice_poker_env.engine.masks import action_masks
from dice_poker_env.engine.position import check_options, position_from_options, rolls_dice
from dice_poker_env.engine.state import GameState
from dice_poker_env.engine.tables import RuleTables, compile_rules
from dice_poker_env.envs.arguments import as_action, require_choice, require_dice_source
from dice_poker_env.envs.illegal import IllegalActions, IllegalActionSettings
from dice_poker_env.envs.observation import OBS_MODES, Observation, observation_space, observe_dict, observe_flat
from dice_poker_env.envs.render import render_ansi
from dice_poker_env.rules import Rules, load_rules

_NO_DICE = [1] * N_DICE
_N_REROLLED = [len(positions) for positions in REROLLED_POSITIONS]


# Observations are typed Any at the env's surface: an array or a dict of arrays by obs_mode, chosen at run time
# (the functions that build them return Observation).
class DicePokerEnv(IllegalActionSettings, gym.Env[Any, int]):
    """One player's game of a Yahtzee-family dice game.

    ## Description
    Five dice, up to three rolls a turn, one scorecard box filled per turn; the
    ruleset (``rules``) decides the boxes, their scores, bonuses and jokers. See
    ``docs/rules.md`` (the rules of every shipped ruleset) and
    ``dice_poker_env.load_rules``.

    ## Action Space
    ``Discrete(32 + n_boxes)``:

    * ``a`` in ``0..30``: keep the dice whose bit is set in ``a`` (bit ``i`` = die
      ``i`` of the sorted ``dice`` in the observation) and reroll the others.
      ``0`` rerolls all five. ``31`` (keep all) is never legal. Legal while
      ``rolls_left > 0``. Bitmasks that keep equal multisets are all legal.
    * ``32 + k``: write the dice into box ``k`` (order of ``rules.box_names``).
      Legal for open boxes, within the current section when sections are played
      in order, and as the forced joker allows.

    The legal actions are ``env.action_masks()`` (the name sb3-contrib's
    MaskablePPO calls) and ``info["action_mask"]``, both ``np.int8``.

    ## Observation Space
    ``obs_mode="dict"`` (default) or ``"flat"``; layouts in
    :mod:`dice_poker_env.envs.observation`.

    ## Starting State
    An empty scorecard and five freshly rolled dice with two rerolls left.
    ``reset(options={"scorecard": {box: points}, "dice": [...], "rolls_left": r,
    "bonus": b})`` starts from any position instead (validated; a clear
    ``PositionError`` names an inconsistent field: dice must be five integers
    1..6, the bonus one that play can have paid with that scorecard). A key
    given as ``None`` counts as not given: ``"dice": None`` deals fresh dice.

    ## Rewards
    The points the step added to the final score: 0 for a reroll; the box's
    points plus any bonus that became certain for a score action (upper bonus in
    the step that reaches the threshold, or fills the last upper box for
    ``on_complete`` bonuses; five-of-a-kind bonus in the step that scores the
    dice). The undiscounted return of a legal episode equals its final score.

    ## Episode End
    Terminates after the ruleset's last turn (``rules.turns`` boxes filled).
    An illegal action with ``illegal_action="terminate"`` (default) ends the
    episode at once with reward ``illegal_penalty`` (default 0) and
    ``info["illegal_action"] = True`` (the mask is then all zeros, as after a
    normal end) — the outcome Gymnasium's ``check_env``
    and unmasked agents need; ``illegal_action="raise"`` raises
    :class:`~dice_poker_env.envs.illegal.IllegalActionError` naming the action and why it is illegal,
    without changing the game. No truncation.

    ## Information
    ``info`` always holds ``action_mask`` (int8) and ``score`` (final score so
    far); at the end also ``final_score`` and ``scorecard`` ({box: points}).

    ## Arguments
    * ``rules``: ruleset name, rules-file path or :class:`Rules`.
    * ``obs_mode``: ``"dict"`` or ``"flat"``.
    * ``illegal_action``: ``"terminate"`` or ``"raise"``; ``illegal_penalty``: reward then.
    * ``dice_source``: a :class:`~dice_poker_env.dice_sources.DiceSource` (default fair
      dice from the seeded ``np_random``; :class:`~dice_poker_env.dice_sources.ScriptedDice`
      replays given faces).
    * ``render_mode``: ``"ansi"`` or ``"human"`` (text), ``"rgb_array"`` (image).
    * any other keyword: a rules option, e.g. ``joker="free"`` for Yahtzee.

    ## Version History
    * v0: initial release.
    """

    metadata = {"render_modes": ["ansi", "human", "rgb_array"], "render_fps": 2}

    def __init__(
        self,
        rules: str | os.PathLike[str] | Rules = "yacht",
        *,
        obs_mode: str = "dict",
        illegal_action: str = "terminate",
        illegal_penalty: float = 0.0,
        dice_source: DiceSource | None = None,
        render_mode: str | None = None,
        **rule_options: Any,
    ) -> None:
        require_choice("obs_mode", obs_mode, OBS_MODES)
        self._illegal_actions = IllegalActions.from_arguments(illegal_action, illegal_penalty)
        require_choice("render_mode", render_mode, self.metadata["render_modes"], optional=True)
        require_dice_source("dice_source", dice_source)
        self.rules = load_rules(rules, **rule_options)
        self.tables = compile_rules(self.rules)
        self._masks = action_masks(self.tables)
        self._n_actions = self.tables.n_actions
        self._observe: Callable[[RuleTables, GameState], Observation] = (
            observe_flat if obs_mode == "flat" else observe_dict
        )
        self.obs_mode = obs_mode
        # RandomDice keeps a block of faces drawn from one env's generator: an instance handed to several envs
        # (gymnasium.make_vec passes the same kwargs to each) would make them throw away each other's blocks
        self.dice_source = RandomDice() if dice_source is None or type(dice_source) is RandomDice else dice_source
        self.render_mode = render_mode
        self.action_space = spaces.Discrete(self.tables.n_actions)
        self.observation_space = observation_space(self.tables, obs_mode)
        self.state: GameState | None = None
        self._mask: np.ndarray | None = None
        self._done = False
        self._score = 0

    # ------------------------------------------------------------------ API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        options = check_options(options)
        if isinstance(seed, bool) or not (seed is None or isinstance(seed, (int, np.integer))):
            raise TypeError(f"seed must be an int or None, got {seed!r}")
        if options:  # a position that is refused changes nothing: checked before the seed and the dice
            position_from_options(self.tables, options, 0)
        super().reset(seed=None if seed is None else int(seed))
        if options:
            random_roll = int(self._roll_fresh()) if rolls_dice(options) else 0
            self.state = position_from_options(self.tables, options, random_roll)
        else:
            self.state = game.new_game(self.tables, self._roll_fresh())
        self._done = False
        self._score = int(self.state.total)
        self._mask = self._masks.of_game(self.state)  # a shared read-only row: copied when handed out
        if self.render_mode == "human":  # as Gymnasium's own envs: the first position too
            self.render()
        return self._observation(), self._info()

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        if self._done or self.state is None:
            raise gym.error.ResetNeeded("call reset() before step() (the episode is over or never started)")
        assert self._mask is not None  # set with the state by reset()
        if type(action) is not int:
            action = as_action(action)
        if not (type(action) is int and 0 <= action < self._n_actions and self._mask[action]):
            return self._illegal(action)
        state = self.state
        if action < N_KEEP_ACTIONS:  # one face per rerolled die, in position order
            faces = self.dice_source.roll(self.np_random, (_N_REROLLED[action],))
        elif state.filled.bit_count() + 1 < self.tables.turns:
            faces = self.dice_source.roll(self.np_random, (N_DICE,))
        else:
            faces = _NO_DICE  # the game ends: no dice are rolled
        self.state, reward, over = game.step_one(self.tables, state, action, faces)
        self._done = over
        self._score += reward
        self._mask = self._masks.of_game(self.state)
        info = self._info()
        if self.render_mode == "human":
            self.render()
        return self._observe(self.tables, self.state), float(reward), over, False, info

    def action_masks(self) -> np.ndarray:
        """The legal actions now, ``np.int8`` of length ``32 + n_boxes`` (sb3-contrib's hook)."""
        if self._mask is None:
            raise gym.error.ResetNeeded("call reset() before action_masks()")
        return self._mask.copy()

    # gymnasium types render() with a method-level TypeVar (RenderFrame); the frame here is text or an RGB array
    def render(self) -> str | np.ndarray | None:  # type: ignore[override]
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode='ansi', 'human' or 'rgb_array'")
            return None
        if self.state is None:
            raise gym.error.ResetNeeded("call reset() before render()")
        if self.render_mode == "rgb_array":
            from dice_poker_env.envs.render_image import render_rgb

            return render_rgb(self.tables, self.state)
        text = render_ansi(self.tables, self.state)
        if self.render_mode == "human":
            print(text)
            return None
        return text

    # -------------------------------------------------------------- helpers
    @property
    def score(self) -> int:
        """The final score so far (written points plus bonuses)."""
        return self._score

    def scorecard(self) -> dict[str, int | None]:
        """``{box: points}`` with ``None`` for open boxes."""
        if self.state is None:
            raise gym.error.ResetNeeded("call reset() before scorecard()")
        filled, scores = self.state.filled, self.state.scores
        return {name: (int(scores[k]) if filled >> k & 1 else None) for k, name in enumerate(self.rules.box_names)}

    def _roll_fresh(self) -> int:
        return roll_of_faces(self.dice_source.roll(self.np_random, (N_DICE,)))

    def _observation(self) -> Observation:
        assert self.state is not None  # called once reset() has set it
        return self._observe(self.tables, self.state)

    def _info(self) -> dict[str, Any]:
        assert self._mask is not None  # set with the state by reset()
        info: dict[str, Any] = {"action_mask": self._mask.copy(), "score": self._score}
        if self._done:
            info["final_score"] = self.score
            info["scorecard"] = self._written()
        return info

    def _written(self) -> dict[str, int]:
        """The end's ``info["scorecard"]``: ``{box: points}`` of the filled boxes, an open one (a game cut short
        by ``turns`` or an illegal action) left out: every value an int, so Gymnasium's vector envs stack it as
        the batched env's ``{box: (N,) int64}`` with ``_box`` masks (a ``None`` broke their int arrays)."""
        return {name: points for name, points in self.scorecard().items() if points is not None}

    def _illegal(self, action: Any) -> tuple[Observation, float, bool, bool, dict[str, Any]]:
        assert self.state is not None  # step() checked it
        reason = self._illegal_actions.judge(self.tables, self.state, action, self.rules.name)
        # raises in "raise" mode
        self._done = True
        self._mask = np.zeros(self._n_actions, dtype=np.int8)  # the episode is over: nothing is legal
        info = self._illegal_actions.mark(self._info(), reason)  # (done: with final_score and scorecard)
        return self._observation(), self.illegal_penalty, True, False, info
