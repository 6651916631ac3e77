"""The PettingZoo AEC environment of a multi-player game, and its wrapped entry point.

``env(rules="yacht", num_players=2)`` is the PettingZoo classic-game entry point
(wrapped: any illegal action, out of range or not an integer included, ends the
game; call order is enforced with clear errors); :class:`raw_env` is the bare
environment. Each player's game is a one-game engine
:class:`~dice_poker_env.engine.state.GameState`, kept in a list in seat order;
the rules live in the engine only.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding

from dice_poker_env.dice_sources import DiceSource, RandomDice
from dice_poker_env.engine import game
from dice_poker_env.engine.combinatorics import N_DICE, N_KEEP_ACTIONS, REROLLED_POSITIONS, roll_index_of_sorted
from dice_poker_env.engine.masks import action_masks
from dice_poker_env.engine.position import POSITION_KEYS
from dice_poker_env.engine.state import GameState
from dice_poker_env.engine.tables import compile_rules
from dice_poker_env.envs.arguments import as_action, require_choice, require_dice_source, require_finite
from dice_poker_env.envs.illegal import IllegalActionError, IllegalActions
from dice_poker_env.envs.observation import OBS_MODES, observe_flat
from dice_poker_env.envs.render import render_ansi
from dice_poker_env.multi.observations import encode, multi_observation_space, player_layout
from dice_poker_env.multi.rewards import REWARD_MODES, default_reward_mode, final_rewards
from dice_poker_env.rules import Rules, load_rules

try:  # PettingZoo is the optional ``multi`` extra; :class:`~dice_poker_env.multi.seat.SeatEnv` works without it.
    from pettingzoo import AECEnv
    from pettingzoo.utils import wrappers as _pz_wrappers
    from pettingzoo.utils.env_logger import EnvLogger as _EnvLogger
except ModuleNotFoundError:  # pragma: no cover - exercised only without the extra
    from dice_poker_env.multi.without_pettingzoo import AECEnv  # the helpers raw_env's own methods call

    _pz_wrappers = _EnvLogger = None

MIN_PLAYERS, MAX_PLAYERS = 2, 6


# PettingZoo ships no type information (no py.typed, no stubs): AECEnv and its wrappers are Any to mypy.
class raw_env(AECEnv):  # type: ignore[misc]  # noqa: N801 - PettingZoo's naming convention; subclassing Any (above)
    """A multi-player game of a Yahtzee-family dice game (PettingZoo AEC API).

    ## Description
    ``num_players`` (2 to 6) players, ``player_0`` first, each with their own
    scorecard, take whole turns in order: the selected agent keeps and rerolls
    until it writes its dice into a box; then the next player's turn starts
    with a fresh roll. The game ends when every player has filled every box.

    ## Action Space
    ``Discrete(32 + n_boxes)``, the single env's encoding: ``a < 32`` keeps the
    dice whose bit is set in ``a`` over the sorted dice and rerolls the others
    (``31`` never legal); ``32 + k`` writes the dice into box ``k``.

    ## Observation Space
    PettingZoo's classic convention, a dict: ``observation`` (own scorecard and
    dice plus every opponent's scorecard, layout in
    :func:`multi_observation_space`, ``obs_mode`` ``"dict"`` or ``"flat"``) and
    ``action_mask`` (``int8``; all zeros for agents other than the selected one).

    ## Starting State
    Empty scorecards; ``player_0`` has five fresh dice and two rerolls left.
    ``reset(options=...)`` takes a dict whose keys are ignored (PettingZoo's
    API test passes arbitrary ones); the single env's position keys (``dice``,
    ``scorecard``, ``rolls_left``, ``bonus``) are ignored with a warning;
    anything but a dict is an error.
    Other players roll when their turn starts (so a scripted dice source
    replays a real game in the order the dice were thrown).

    ## Rewards
    ``reward_mode``: ``"score"`` — the acting player's points as they come
    (each player's return is their final score); ``"relative"`` — own total
    minus the mean of all totals, paid to every player at the end (default for
    ``school_poker``, as its rules say); ``"win"`` — at the end +1 split among
    the players with the highest total, -1 split among the others, all tied 0
    (default for the other rulesets). ``relative`` and ``win`` are zero-sum.

    ## Episode End
    All agents terminate together after the last box of the last player. No
    truncation. The raw env raises :class:`IllegalActionError` (naming the
    reason) for an illegal action of the selected agent: one the mask forbids,
    out of range, or not an integer (``None``, ``True``, ``np.array([3])``);
    :func:`env` wraps it so the game ends with ``illegal_reward`` for the
    offender instead (PettingZoo's classic handling), and every mask is then
    all zeros. ``step`` before ``reset`` or after the game is over (every agent
    stepped out) raises ``gymnasium.error.ResetNeeded``. None of this uses
    ``assert``, so ``python -O`` changes nothing.

    ## Information
    ``infos[agent]``: ``score`` (that player's total so far); at the end also
    ``final_score``, ``scores`` ({agent: total}) and ``rank`` (1 = best, ties
    share the better rank), also when an illegal action ended the game (the
    totals then are those so far).

    ## Arguments
    ``rules`` (name, path or :class:`Rules`), ``num_players``, ``reward_mode``
    (default per ruleset), ``obs_mode``, ``dice_source``, ``render_mode``
    (``"ansi"`` or ``"human"``), and rules options as keywords.

    ## Version History
    * v0: initial release.
    """

    metadata: dict[str, Any] = {
        "render_modes": ["ansi", "human"],
        "name": "dice_poker_multi_v0",
        "is_parallelizable": False,
    }

    def __init__(
        self,
        rules: str | os.PathLike[str] | Rules = "yacht",
        num_players: int = 2,
        reward_mode: str | None = None,
        *,
        obs_mode: str = "dict",
        dice_source: DiceSource | None = None,
        render_mode: str | None = None,
        **rule_options: Any,
    ) -> None:
        super().__init__()
        if isinstance(num_players, bool) or not isinstance(num_players, (int, np.integer)):
            raise ValueError(f"num_players must be an integer, got {num_players!r}")
        if not MIN_PLAYERS <= num_players <= MAX_PLAYERS:
            raise ValueError(f"num_players must be {MIN_PLAYERS} to {MAX_PLAYERS}, got {num_players}")
        require_choice("obs_mode", obs_mode, OBS_MODES)
        require_choice("render_mode", render_mode, self.metadata["render_modes"], optional=True)
        require_dice_source("dice_source", dice_source)
        self.rules = load_rules(rules, **rule_options)
        self.tables = compile_rules(self.rules)
        self.reward_mode = default_reward_mode(self.rules) if reward_mode is None else reward_mode
        if self.reward_mode not in REWARD_MODES:
            raise ValueError(f"reward_mode must be one of {REWARD_MODES}, got {self.reward_mode!r}")
        self.num_players = int(num_players)
        self.obs_mode = obs_mode
        self.dice_source = dice_source if dice_source is not None else RandomDice()
        self.render_mode = render_mode
        self.possible_agents = [f"player_{i}" for i in range(self.num_players)]
        self.agent_name_mapping = {a: i for i, a in enumerate(self.possible_agents)}
        #: one space object per agent (as PettingZoo's classic games): seeding one agent's space leaves the others'
        self._action_spaces: dict[str, spaces.Space[Any]] = {
            a: spaces.Discrete(self.tables.n_actions) for a in self.possible_agents
        }
        self._obs_spaces = {mode: {a: self._make_obs_space(mode) for a in self.possible_agents} for mode in OBS_MODES}
        self._multi_flat_shape = self._obs_spaces["flat"][self.possible_agents[0]]["observation"].shape
        self.np_random, _ = seeding.np_random(None)
        #: one one-game engine state per player, in seat order
        self.games: list[GameState] = []
        self.current = 0

    def _make_obs_space(self, obs_mode: str) -> spaces.Dict:
        return spaces.Dict(
            {
                "observation": multi_observation_space(self.tables, self.num_players, obs_mode),
                "action_mask": spaces.Box(0, 1, shape=(self.tables.n_actions,), dtype=np.int8),
            }
        )

    # ----------------------------------------------------------- spaces
    def observation_space(self, agent: str) -> spaces.Dict:
        return self._obs_spaces[self.obs_mode][self._known(agent)]

    def action_space(self, agent: str) -> spaces.Space[Any]:
        return self._action_spaces[self._known(agent)]

    def _known(self, agent: str) -> str:
        if agent not in self.agent_name_mapping:
            raise KeyError(f"no agent {agent!r}; agents: {', '.join(self.possible_agents)}")
        return agent

    # -------------------------------------------------------------- API
    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        if options is not None and not isinstance(
            options, Mapping
        ):  # (a mapping's keys are ignored, as PettingZoo expects)
            raise ValueError(f"reset options: expected a dict or None, got {type(options).__name__}")
        ignored = [key for key in POSITION_KEYS if options and key in options]
        if ignored:  # the single env would apply them: say so, in one line (other keys pass silently, as PettingZoo's)
            gym.logger.warn(
                f"reset options: {', '.join(ignored)} ignored; a multi-player game always starts from empty "
                "scorecards and a fresh roll"
            )
        if seed is not None:
            if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
                raise TypeError(f"seed must be an int or None, got {seed!r}")
            self.np_random, _ = seeding.np_random(int(seed))  # (NumPy integers too, as the single env)
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.games = [game.new_game(self.tables, 0) for _ in range(self.num_players)]
        self.current = 0
        self.agent_selection = self.agents[0]
        self._start_turn(0)
        self.infos = {a: self._info(i) for i, a in enumerate(self.agents)}

    def step(self, action: Any) -> None:
        self._require_game()
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        action = as_action(action)
        me = self.current
        reason = self.illegal_reason(action)
        if reason is not None:
            raise IllegalActionError(f"{self.rules.name}, {agent}: {reason}")
        if action < N_KEEP_ACTIONS:
            faces = np.zeros(N_DICE, dtype=np.int64)
            rerolled = list(REROLLED_POSITIONS[action])
            faces[rerolled] = self.dice_source.roll(self.np_random, (len(rerolled),))
        else:
            faces = np.ones(N_DICE, dtype=np.int64)  # the next turn rolls when it starts
        self.games[me], reward, _ = game.step_one(self.tables, self.games[me], action, faces)
        self._cumulative_rewards[agent] = 0.0
        self._clear_rewards()
        if self.reward_mode == "score":
            self.rewards[agent] = float(reward)
        if action >= N_KEEP_ACTIONS:  # the turn is over
            if self.game_over:
                for i, final in enumerate(final_rewards(self._totals(), self.reward_mode)):
                    self.rewards[self.possible_agents[i]] += float(final)
                self.terminations = dict.fromkeys(self.agents, True)
            else:
                self.current = (me + 1) % self.num_players
                self.agent_selection = self.possible_agents[self.current]
                self._start_turn(self.current)
        self.infos = {a: self._info(i) for i, a in enumerate(self.possible_agents) if a in self.agents}
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    def last(self, observe: bool = True) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """PettingZoo's ``last``, with ``ResetNeeded`` before the first reset and once every agent has stepped
        out of the ended game (where PettingZoo's raises ``KeyError``)."""
        if not self.games:
            raise gym.error.ResetNeeded("call reset() before last()")
        self._require_game()
        return super().last(observe)

    def observe(self, agent: str) -> dict[str, Any]:
        return self.observe_as(agent, self.obs_mode)

    def observe_as(self, agent: str, obs_mode: str) -> dict[str, Any]:
        """``agent``'s observation in either layout (``"dict"`` or ``"flat"``)."""
        if not self.games:
            raise gym.error.ResetNeeded("call reset() before observe()")
        i = self.agent_name_mapping[self._known(agent)]
        mask = np.zeros(self.tables.n_actions, dtype=np.int8)
        if i == self.current and self._live(agent) and not game.is_over(self.tables, self.games[i]):
            mask = action_masks(self.tables).of_game(self.games[i]).copy()
        return {"observation": encode(self.tables, self.games, i, obs_mode), "action_mask": mask}

    def observe_for(self, agent: str, player: Any) -> dict[str, Any]:
        """``agent``'s observation in the layout ``player`` (an agent or model) reads.

        ``player.obs_mode`` ``"dict"`` (default) gets the multi-player dict, a
        superset of the single env's, cut to the keys of ``player``'s (or its
        ``model``'s) ``observation_space`` when that is a ``Dict``. ``"flat"``
        gets the single env's flat vector, unless that space has the shape of
        this table's multi-player flat vector (a model trained with
        :class:`~dice_poker_env.multi.seat.SeatEnv`).
        """
        layout = player_layout(player, self._multi_flat_shape)
        obs = self.observe_as(agent, layout.obs_mode)
        if layout.obs_mode == "dict":  # a model wants exactly the keys it was trained on
            obs["observation"] = layout.cut(obs["observation"])
        elif not layout.multi_flat:
            obs["observation"] = observe_flat(self.tables, self.games[self.agent_name_mapping[agent]])
        return obs

    def action_masks(self) -> np.ndarray:
        """The selected agent's legal actions (``np.int8``; all zeros once the game is over, however it ended)."""
        if not self.games:
            raise gym.error.ResetNeeded("call reset() before action_masks()")
        return self.observe_as(self.agent_selection, "dict")["action_mask"]

    def illegal_reason(self, action: Any) -> str | None:
        """Why ``action`` is illegal for the selected agent now, or ``None`` if it is legal."""
        if not self.games:
            raise gym.error.ResetNeeded("call reset() before illegal_reason()")
        return game.explain_illegal(self.tables, self.games[self.current], as_action(action))

    def end_by_illegal_action(self, agent: str, reason: str, reward: float) -> None:
        """End the game because ``agent`` chose an illegal action (:func:`env`'s handling).

        As PettingZoo's ``TerminateIllegalWrapper``: every agent terminates (and
        truncates), ``agent`` is paid ``reward``, the others 0. Every info has the
        end keys (:meth:`final_info`); ``agent``'s also ``illegal_action`` and
        ``illegal_reason``.
        """
        self._cumulative_rewards[agent] = 0.0
        self.terminations = dict.fromkeys(self.agents, True)
        self.truncations = dict.fromkeys(self.agents, True)
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self.rewards[agent] = float(reward)
        # the game is over: every end key, as at its end (the offender last)
        self.infos = {a: self.final_info(a, agent) for a in self.agents}
        self.infos[agent] = IllegalActions.mark(self.infos[agent], reason)
        self._accumulate_rewards()
        self._deads_step_first()

    def _live(self, agent: str) -> bool:
        """Whether ``agent`` is still in a game that is going on (not terminated, truncated or stepped out)."""
        return agent in self.terminations and not (self.terminations[agent] or self.truncations[agent])

    def _require_game(self) -> None:
        """``ResetNeeded`` before the first reset and once every agent has stepped out of the ended game."""
        if not self.games:
            raise gym.error.ResetNeeded("call reset() before step()")
        if not self.agents:
            raise gym.error.ResetNeeded("the game is over (every agent has stepped out); call reset()")

    def render(self) -> str | None:
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode='ansi' or 'human'")
            return None
        text = self.render_text()
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        pass

    # ---------------------------------------------------------- helpers
    @property
    def game_over(self) -> bool:
        """Whether every player has filled every box."""
        return bool(self.games) and all(game.is_over(self.tables, g) for g in self.games)

    def totals(self) -> dict[str, int]:
        """``{agent: total so far}``."""
        if not self.games:
            raise gym.error.ResetNeeded("call reset() before totals()")
        return dict(zip(self.possible_agents, self._totals().tolist()))

    def scorecard(self, agent: str) -> dict[str, int | None]:
        """``agent``'s ``{box: points}`` with ``None`` for open boxes."""
        if not self.games:
            raise gym.error.ResetNeeded("call reset() before scorecard()")
        g = self.games[self.agent_name_mapping[self._known(agent)]]
        filled, scores = g.filled, g.scores
        return {name: (int(scores[k]) if filled >> k & 1 else None) for k, name in enumerate(self.rules.box_names)}

    def render_text(self) -> str:
        """Every player's scorecard as text, the player to move first, with their dice, rolls left and "would
        score" hints (the others' dice are placeholders until their turn starts: scorecards only)."""
        if not self.games:
            raise gym.error.ResetNeeded("call reset() before render()")
        parts = []
        for k in range(self.num_players):
            i = (self.current + k) % self.num_players
            title = f"== {self.possible_agents[i]}" + (" (to move)" if k == 0 else "") + " =="
            parts.append(title + "\n" + render_ansi(self.tables, self.games[i], dice=k == 0))
        return "\n\n".join(parts)

    def _totals(self) -> np.ndarray:
        return np.array([g.total for g in self.games], dtype=np.int64)

    def _start_turn(self, i: int) -> None:
        """Roll player ``i``'s five dice for a new turn."""
        faces = np.sort(self.dice_source.roll(self.np_random, (N_DICE,)))
        self.games[i] = self.games[i]._replace(
            roll=int(roll_index_of_sorted(faces)), rolls_left=game.ROLLS_PER_TURN - 1
        )

    def final_info(self, agent: str, offender: str) -> dict[str, Any]:
        """``agent``'s info as at the end of a game (``score``, ``final_score``, ``scores``, ``rank``), from the
        totals so far: the info of a game that ``offender``'s illegal action ended. The offender ranks last,
        whatever its total (it lost the game, as its reward says); the others by their totals."""
        if not self.games:
            raise gym.error.ResetNeeded("call reset() before final_info()")
        return self._info(
            self.agent_name_mapping[self._known(agent)],
            over=True,
            offender=self.agent_name_mapping[self._known(offender)],
        )

    def _info(self, i: int, *, over: bool | None = None, offender: int | None = None) -> dict[str, Any]:
        """Player ``i``'s info; the end keys when the game is over (``over``: whether it is, default
        :attr:`game_over`; ``offender``: the player whose illegal action ended it, ranked last)."""
        totals = self._totals()
        info: dict[str, Any] = {"score": int(totals[i])}
        if self.game_over if over is None else over:
            info["final_score"] = int(totals[i])
            info["scores"] = self.totals()
            ahead = totals > totals[i]
            if offender is not None:
                ahead[offender] = False  # (behind everyone)
            info["rank"] = len(totals) if i == offender else int(1 + ahead.sum())
        return info


def env(
    rules: str | os.PathLike[str] | Rules = "yacht",
    num_players: int = 2,
    reward_mode: str | None = None,
    *,
    illegal_reward: float = -1.0,
    **kwargs: Any,
) -> Any:  # a PettingZoo wrapper (untyped) around raw_env
    """The wrapped PettingZoo env (classic-game wrappers), arguments as :class:`raw_env`.

    An illegal action ends the game for everyone with ``illegal_reward`` for the
    player who made it (PettingZoo's ``TerminateIllegalWrapper``).
    """
    if _pz_wrappers is None:  # pragma: no cover
        raise ModuleNotFoundError("the multi-player env needs PettingZoo: pip install 'dice-poker-env[multi]'")
    illegal_reward = require_finite("illegal_reward", illegal_reward)
    e = raw_env(rules, num_players, reward_mode, **kwargs)
    e = _TerminateIllegalWrapper(e, illegal_reward)
    return _OrderEnforcingWrapper(e)


if _pz_wrappers is not None:

    class _TerminateIllegalWrapper(_pz_wrappers.BaseWrapper):  # type: ignore[misc]  # PettingZoo: Any (above)
        """PettingZoo's classic illegal-move handling for every kind of bad action, with no ``assert``.

        In place of ``TerminateIllegalWrapper`` + ``AssertOutOfBoundsWrapper``: an
        action of the selected (live) agent that the mask forbids, that is out of
        range or that is not an integer ends the game with ``illegal_reward`` for
        that agent (:meth:`raw_env.end_by_illegal_action`).
        """

        def __init__(self, env: raw_env, illegal_reward: float) -> None:
            super().__init__(env)
            self._illegal_reward = illegal_reward

        def step(self, action: Any) -> None:
            raw = self.env.unwrapped
            raw._require_game()
            agent = raw.agent_selection
            if raw._live(agent):
                reason = raw.illegal_reason(action)
                if reason is not None:
                    _EnvLogger.warn_on_illegal_move()
                    raw.end_by_illegal_action(agent, reason, self._illegal_reward)
                    return
            self.env.step(action)

        def __str__(self) -> str:
            return str(self.env)

    class _OrderEnforcingWrapper(_pz_wrappers.OrderEnforcingWrapper):  # type: ignore[misc]  # PettingZoo: Any
        """PettingZoo's ``OrderEnforcingWrapper`` with ``gymnasium.error.ResetNeeded`` for calls before
        ``reset()`` (it raises ``AssertionError``) and for ``step`` after the game (it only warns)."""

        def _require_reset(self, call: str) -> None:
            if not self._has_reset:
                raise gym.error.ResetNeeded(f"call reset() before {call}()")

        def step(self, action: Any) -> None:
            self._require_reset("step")
            if not self.agents:
                raise gym.error.ResetNeeded("the game is over (every agent has stepped out); call reset()")
            super().step(action)

        def observe(self, agent: str) -> Any:
            self._require_reset("observe")
            return super().observe(agent)

        def last(self, observe: bool = True) -> Any:
            self._require_reset("last")
            if not self.agents:
                raise gym.error.ResetNeeded("the game is over (every agent has stepped out); call reset()")
            return super().last(observe)

        def render(self) -> Any:
            self._require_reset("render")
            return super().render()

        def agent_iter(self, max_iter: int = 2**63) -> Any:
            self._require_reset("agent_iter")
            return super().agent_iter(max_iter)
