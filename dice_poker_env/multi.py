"""Multi-player games: a PettingZoo AEC environment and a one-seat Gymnasium view of it.

``env(rules="yacht", num_players=2)`` is the PettingZoo classic-game entry point
(wrapped: any illegal action, out of range or not an integer included, ends the
game; call order is enforced with clear errors); ``raw_env`` is the bare
environment. :class:`SeatEnv` presents one seat as a Gymnasium single-agent env
whose other seats are played by given agents, so Stable-Baselines3
(MaskablePPO) can train an agent to *win*.

Every player's game is one row of a batched engine
:class:`~dice_poker_env.engine.game.GameState`; the rules live in the engine
only. Example::

    from dice_poker_env import multi

    env = multi.env(rules="school_poker", num_players=3)
    env.reset(seed=0)
    for agent in env.agent_iter():
        obs, reward, termination, truncation, info = env.last()
        action = None if termination or truncation else env.action_space(agent).sample(obs["action_mask"])
        env.step(action)
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding

from dice_poker_env.dice_sources import DiceSource, RandomDice
from dice_poker_env.engine import game
from dice_poker_env.engine.masks import action_masks
from dice_poker_env.engine.state import GameState
from dice_poker_env.engine.combinatorics import N_DICE, N_KEEP_ACTIONS, roll_index_of_sorted
from dice_poker_env.engine.tables import compile_rules
from dice_poker_env.envs.arguments import as_action, require_choice, require_dice_source, require_finite
from dice_poker_env.envs.observation import (
    OBS_MODES,
    observation_space,
    observe_dict,
    observe_flat,
)
from dice_poker_env.envs.render import render_ansi
from dice_poker_env.envs.single import IllegalActionError
from dice_poker_env.rules import Rules, load_rules

try:  # PettingZoo is the optional ``multi`` extra; SeatEnv works without it.
    from pettingzoo import AECEnv
    from pettingzoo.utils import wrappers as _pz_wrappers
    from pettingzoo.utils.env_logger import EnvLogger as _EnvLogger
except ModuleNotFoundError:  # pragma: no cover - exercised only without the extra
    AECEnv = object  # type: ignore[assignment,misc]
    _pz_wrappers = _EnvLogger = None

REWARD_MODES = ("score", "relative", "win")
MIN_PLAYERS, MAX_PLAYERS = 2, 6

_REROLLED = [[i for i in range(N_DICE) if not bits >> i & 1] for bits in range(N_KEEP_ACTIONS)]

#: Keys of the single env's dict observation (what single-game agents and the solver read).
SINGLE_KEYS = ("dice", "rolls_left", "filled", "scores", "upper_total", "bonus", "five_kind_box", "turn")


def default_reward_mode(rules: Rules) -> str:
    """``"relative"`` for rulesets whose result is relative (school_poker), else ``"win"``."""
    return "relative" if rules.result == "relative" else "win"


def final_rewards(totals: Sequence[float], reward_mode: str) -> np.ndarray:
    """End-of-game rewards of every player from their final totals.

    ``"relative"``: own total minus the mean of all totals. ``"win"``: +1 split
    among the players with the highest total, -1 split among the others, 0 for
    everyone when all are tied. ``"score"`` pays nothing extra at the end. The
    first two sum to zero.
    """
    totals = np.asarray(totals, dtype=np.float64)
    if reward_mode == "relative":
        return totals - totals.mean()
    if reward_mode == "win":
        best = totals == totals.max()
        if best.all():
            return np.zeros_like(totals)
        return np.where(best, 1.0 / best.sum(), -1.0 / (~best).sum())
    if reward_mode == "score":
        return np.zeros_like(totals)
    raise ValueError(f"reward_mode must be one of {REWARD_MODES}, got {reward_mode!r}")


def multi_observation_space(tables, num_players: int, obs_mode: str) -> spaces.Space:
    """The space of the ``observation`` entry of a multi-player observation.

    ``"dict"``: the single env's dict keys (own game) plus, for the other
    players in turn order starting with the next one, ``opponent_filled``
    ``(P-1, n)``, ``opponent_scores`` ``(P-1, n)``, ``opponent_upper_total``,
    ``opponent_bonus`` and ``opponent_total`` (each ``(P-1,)``) — a superset of
    the single env's observation, so single-game agents read it unchanged.

    ``"flat"``: the single env's flat vector, then per opponent: filled flags
    (n), written scores / scale (n), upper total / upper scale (1), bonus / scale
    (1), (opponent total - own total) / (max_total - min_total) (1); all in
    [-1, 1], size ``45 + 3n + (P-1)(2n + 3)``.
    """
    n, others = tables.n_boxes, num_players - 1
    own = observation_space(tables, obs_mode)
    if obs_mode == "flat":
        return spaces.Box(-1.0, 1.0, shape=(own.shape[0] + others * (2 * n + 3),), dtype=np.float32)
    upper = own["upper_total"]
    items = dict(own.spaces)
    items.update(
        opponent_filled=spaces.MultiBinary((others, n)),
        opponent_scores=spaces.Box(tables.min_box_score, tables.max_box_score, shape=(others, n), dtype=np.int64),
        opponent_upper_total=spaces.Box(int(upper.low[0]), int(upper.high[0]), shape=(others,), dtype=np.int64),
        opponent_bonus=spaces.Box(0, max(tables.max_total, 1), shape=(others,), dtype=np.int64),
        opponent_total=spaces.Box(
            min(tables.min_total, 0), max(tables.max_total, 1), shape=(others,), dtype=np.int64
        ),
    )
    return spaces.Dict(items)


class raw_env(AECEnv):  # noqa: N801 - PettingZoo's naming convention
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
    API test passes arbitrary ones); anything else is an error.
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
    share the better rank).

    ## Arguments
    ``rules`` (name, path or :class:`Rules`), ``num_players``, ``reward_mode``
    (default per ruleset), ``obs_mode``, ``dice_source``, ``render_mode``
    (``"ansi"`` or ``"human"``), and rules options as keywords.

    ## Version History
    * v0: initial release.
    """

    metadata = {"render_modes": ["ansi", "human"], "name": "dice_poker_multi_v0", "is_parallelizable": False}

    def __init__(
        self,
        rules: str | Rules = "yacht",
        num_players: int = 2,
        reward_mode: str | None = None,
        *,
        obs_mode: str = "dict",
        dice_source: DiceSource | None = None,
        render_mode: str | None = None,
        **rule_options: Any,
    ):
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
        self._action_space = spaces.Discrete(self.tables.n_actions)
        self._obs_spaces = {mode: self._make_obs_space(mode) for mode in OBS_MODES}
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
    def observation_space(self, agent: str) -> spaces.Space:
        return self._obs_spaces[self.obs_mode]

    def action_space(self, agent: str) -> spaces.Space:
        return self._action_space

    # -------------------------------------------------------------- API
    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        if options is not None and not isinstance(options, Mapping):  # (a mapping's keys are ignored, as PettingZoo expects)
            raise ValueError(f"reset options: expected a dict or None, got {type(options).__name__}")
        if seed is not None:
            self.np_random, _ = seeding.np_random(seed)
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

    def step(self, action) -> None:
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
            rerolled = _REROLLED[action]
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

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        return self.observe_as(agent, self.obs_mode)

    def observe_as(self, agent: str, obs_mode: str) -> dict[str, np.ndarray]:
        """``agent``'s observation in either layout (``"dict"`` or ``"flat"``)."""
        if not self.games:
            raise gym.error.ResetNeeded("call reset() before observe()")
        if agent not in self.agent_name_mapping:
            raise KeyError(f"no agent {agent!r}; agents: {', '.join(self.possible_agents)}")
        i = self.agent_name_mapping[agent]
        order = [(i + k) % self.num_players for k in range(1, self.num_players)]
        mask = np.zeros(self.tables.n_actions, dtype=np.int8)
        if i == self.current and self._live(agent) and not game.is_over(self.tables, self.games[i]):
            mask = action_masks(self.tables).of_game(self.games[i]).copy()
        return {"observation": self._encode(i, order, obs_mode), "action_mask": mask}

    def observe_for(self, agent: str, player: Any) -> dict[str, Any]:
        """``agent``'s observation in the layout ``player`` (an agent or model) reads.

        ``player.obs_mode`` ``"dict"`` (default) gets the multi-player dict, a
        superset of the single env's, cut to the keys of ``player``'s (or its
        ``model``'s) ``observation_space`` when that is a ``Dict``. ``"flat"``
        gets the single env's flat vector, unless that space has the shape of
        this table's multi-player flat vector (a model trained with :class:`SeatEnv`).
        """
        space = getattr(player, "observation_space", None) or getattr(
            getattr(player, "model", None), "observation_space", None
        )
        if getattr(player, "obs_mode", "dict") != "flat":
            obs = self.observe_as(agent, "dict")
            if isinstance(space, spaces.Dict):  # a model wants exactly the keys it was trained on
                seen = obs["observation"]
                obs["observation"] = {key: seen[key] for key in space.spaces if key in seen}
            return obs
        obs = self.observe_as(agent, "flat")
        if getattr(space, "shape", None) != obs["observation"].shape:
            obs["observation"] = observe_flat(self.tables, self.games[self.agent_name_mapping[agent]])
        return obs

    def action_masks(self) -> np.ndarray:
        """The selected agent's legal actions (``np.int8``; all zeros once the game is over, however it ended)."""
        if not self.games:
            raise gym.error.ResetNeeded("call reset() before action_masks()")
        return self.observe_as(self.agent_selection, "dict")["action_mask"]

    def illegal_reason(self, action: Any) -> str | None:
        """Why ``action`` is illegal for the selected agent now, or ``None`` if it is legal."""
        return game.explain_illegal(self.tables, self.games[self.current], as_action(action))

    def end_by_illegal_action(self, agent: str, reason: str, reward: float) -> None:
        """End the game because ``agent`` chose an illegal action (:func:`env`'s handling).

        As PettingZoo's ``TerminateIllegalWrapper``: every agent terminates (and
        truncates), ``agent`` is paid ``reward``, the others 0; ``agent``'s info
        gets ``illegal_action`` and ``illegal_reason``.
        """
        self._cumulative_rewards[agent] = 0.0
        self.terminations = dict.fromkeys(self.agents, True)
        self.truncations = dict.fromkeys(self.agents, True)
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self.rewards[agent] = float(reward)
        self.infos[agent] = {**self.infos[agent], "illegal_action": True, "illegal_reason": reason}
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

    def render(self):
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
        return dict(zip(self.possible_agents, self._totals().tolist()))

    def scorecard(self, agent: str) -> dict[str, int | None]:
        """``agent``'s ``{box: points}`` with ``None`` for open boxes."""
        g = self.games[self.agent_name_mapping[agent]]
        filled, scores = g.filled, g.scores
        return {name: (int(scores[k]) if filled >> k & 1 else None) for k, name in enumerate(self.rules.box_names)}

    def render_text(self) -> str:
        """Every player's scorecard as text, the player to move first."""
        if not self.games:
            raise gym.error.ResetNeeded("call reset() before render()")
        parts = []
        for k in range(self.num_players):
            i = (self.current + k) % self.num_players
            title = f"== {self.possible_agents[i]}" + (" (to move)" if k == 0 else "") + " =="
            parts.append(title + "\n" + render_ansi(self.tables, self.games[i]))
        return "\n\n".join(parts)

    def _totals(self) -> np.ndarray:
        return np.array([int(g.total) for g in self.games], dtype=np.int64)

    def _start_turn(self, i: int) -> None:
        """Roll player ``i``'s five dice for a new turn."""
        faces = np.sort(self.dice_source.roll(self.np_random, (N_DICE,)))
        self.games[i] = self.games[i]._replace(
            roll=int(roll_index_of_sorted(faces)), rolls_left=game.ROLLS_PER_TURN - 1
        )

    def _encode(self, i: int, order: list[int], obs_mode: str):
        tables, games = self.tables, self.games
        totals = self._totals()
        if obs_mode == "flat":
            n = tables.n_boxes
            scale = float(max(abs(tables.max_box_score), abs(tables.min_box_score), 1))
            upper_scale = float(max(abs(tables.upper_bonus_threshold), 63))
            span = float(max(tables.max_total - min(tables.min_total, 0), 1))
            parts = [observe_flat(tables, games[i])]
            for j in order:
                g = games[j]
                parts += [
                    (g.filled >> np.arange(n)) & 1,
                    g.scores / scale,
                    [np.clip(g.upper_total / upper_scale, -1, 1)],
                    [np.clip(g.bonus / scale, 0, 1)],
                    [np.clip((totals[j] - totals[i]) / span, -1, 1)],
                ]
            return np.concatenate([np.asarray(p, dtype=np.float32).ravel() for p in parts])
        obs = observe_dict(tables, games[i])
        others = [observe_dict(tables, games[j]) for j in order]
        obs["opponent_filled"] = np.stack([o["filled"] for o in others])
        obs["opponent_scores"] = np.stack([o["scores"] for o in others])
        obs["opponent_upper_total"] = np.array([games[j].upper_total for j in order], dtype=np.int64)
        obs["opponent_bonus"] = np.array([games[j].bonus for j in order], dtype=np.int64)
        obs["opponent_total"] = totals[order]
        return obs

    def _info(self, i: int) -> dict[str, Any]:
        totals = self._totals()
        info: dict[str, Any] = {"score": int(totals[i])}
        if self.game_over:
            info["final_score"] = int(totals[i])
            info["scores"] = self.totals()
            info["rank"] = int(1 + (totals > totals[i]).sum())
        return info


def env(
    rules: str | Rules = "yacht",
    num_players: int = 2,
    reward_mode: str | None = None,
    *,
    illegal_reward: float = -1.0,
    **kwargs: Any,
):
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

    class _TerminateIllegalWrapper(_pz_wrappers.BaseWrapper):
        """PettingZoo's classic illegal-move handling for every kind of bad action, with no ``assert``.

        In place of ``TerminateIllegalWrapper`` + ``AssertOutOfBoundsWrapper``: an
        action of the selected (live) agent that the mask forbids, that is out of
        range or that is not an integer ends the game with ``illegal_reward`` for
        that agent (:meth:`raw_env.end_by_illegal_action`).
        """

        def __init__(self, env: raw_env, illegal_reward: float):
            super().__init__(env)
            self._illegal_reward = illegal_reward

        def step(self, action) -> None:
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

    class _OrderEnforcingWrapper(_pz_wrappers.OrderEnforcingWrapper):
        """PettingZoo's ``OrderEnforcingWrapper`` with ``gymnasium.error.ResetNeeded`` for calls before
        ``reset()`` (it raises ``AssertionError``) and for ``step`` after the game (it only warns)."""

        def _require_reset(self, call: str) -> None:
            if not self._has_reset:
                raise gym.error.ResetNeeded(f"call reset() before {call}()")

        def step(self, action) -> None:
            self._require_reset("step")
            if not self.agents:
                raise gym.error.ResetNeeded("the game is over (every agent has stepped out); call reset()")
            super().step(action)

        def observe(self, agent: str):
            self._require_reset("observe")
            return super().observe(agent)

        def render(self):
            self._require_reset("render")
            return super().render()

        def agent_iter(self, max_iter: int = 2**63):
            self._require_reset("agent_iter")
            return super().agent_iter(max_iter)


# ====================================================================== one seat
class MaskedRandomAgent:
    """Uniformly random legal actions (built in, so :class:`SeatEnv` needs no other module)."""

    name = "random"

    def __init__(self, seed: int | None = None):
        self.rng = np.random.default_rng(seed)

    def seed(self, seed: int | None) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, observation: Any, action_mask: np.ndarray) -> int:
        return int(self.rng.choice(np.flatnonzero(action_mask)))

    def reset(self) -> None:
        pass


class ModelAgent:
    """Plays with a trained model that has ``predict(obs, action_masks=..., deterministic=...)`` (SB3)."""

    def __init__(self, model: Any, *, obs_mode: str | None = None, deterministic: bool = True, name: str = "model"):
        self.model, self.deterministic, self.name = model, deterministic, name
        self.observation_space = getattr(model, "observation_space", None)
        if obs_mode is None:  # the layout the model was trained on
            obs_mode = "flat" if isinstance(self.observation_space, spaces.Box) else "dict"
        self.obs_mode = obs_mode

    def act(self, observation: Any, action_mask: np.ndarray) -> int:
        try:
            action, _ = self.model.predict(observation, action_masks=action_mask, deterministic=self.deterministic)
        except TypeError:  # a model without masking support
            action, _ = self.model.predict(observation, deterministic=self.deterministic)
        action = int(np.asarray(action).reshape(-1)[0])
        return action if action_mask[action] else int(np.flatnonzero(action_mask)[0])

    def reset(self) -> None:
        pass


def as_agent(opponent: Any, *, seed: int | None = None):
    """An object with ``act(observation, action_mask)`` from an agent, a model or ``"random"``.

    Named agents other than ``"random"`` (greedy, optimal) live in the ``agents``
    package, which sits above this one: construct them there and pass them in.
    """
    if isinstance(opponent, str):
        if opponent == "random":
            return MaskedRandomAgent(seed)
        raise ValueError(
            f"opponent {opponent!r}: only 'random' is built in; pass an agent object "
            "(e.g. agents.greedy.GreedyAgent(...) or agents.optimal.OptimalAgent(...)) or a trained model"
        )
    if hasattr(opponent, "act"):
        return opponent
    if hasattr(opponent, "predict"):
        return ModelAgent(opponent)
    if callable(opponent):
        return _CallableAgent(opponent)
    raise TypeError(f"an opponent must be an agent with act(), a model with predict() or 'random', got {opponent!r}")


class _CallableAgent:
    def __init__(self, fn: Callable[[Any, np.ndarray], int]):
        self.fn, self.name = fn, getattr(fn, "__name__", "callable")

    def act(self, observation: Any, action_mask: np.ndarray) -> int:
        return int(self.fn(observation, action_mask))

    def reset(self) -> None:
        pass


class SeatEnv(gym.Env):
    """One seat of a multi-player game as a Gymnasium single-agent env.

    ## Description
    The learner plays seat ``seat`` of a :class:`raw_env` game; the other seats
    are played by ``opponents``, ``opponents[k]`` taking the ``k``-th seat after
    the learner's in turn order (so their order does not depend on ``seat``): agents
    with ``act(observation, action_mask)`` (``agents.GreedyAgent``,
    ``agents.OptimalAgent``, ...), trained models with ``predict`` (SB3, wrapped
    by :class:`ModelAgent`), plain callables, or ``"random"``. An opponent gets
    its seat's observation in the layout it reads (:meth:`raw_env.observe_for`:
    by default the multi-player dict, a superset of the single env's).

    ## Action Space
    ``Discrete(32 + n_boxes)``, the single env's encoding.

    ## Observation Space
    The ``observation`` part of the multi-player observation
    (:func:`multi_observation_space`); the mask is ``action_masks()`` and
    ``info["action_mask"]`` (``np.int8``), as sb3-contrib's MaskablePPO wants.

    ## Starting State
    A new game; the opponents before the learner's seat have played their first turn.

    ## Rewards
    The learner's rewards under ``reward_mode`` (see :class:`raw_env`),
    including those paid while opponents move (the end-of-game reward when an
    opponent moves last).

    ## Episode End
    When the game ends. An illegal action with ``illegal_action="terminate"``
    (default) ends the episode with reward ``illegal_penalty`` and
    ``info["illegal_action"] = True`` (what ``check_env`` needs);
    ``"raise"`` raises :class:`IllegalActionError`.

    ## Information
    ``action_mask``, ``score``; at the end ``final_score``, ``scores``
    ({agent: total}) and ``rank``.

    ## Arguments
    ``rules``, ``opponents`` (default one ``"random"``; the number of players is
    ``len(opponents) + 1``), ``seat`` (an int, or ``"random"`` for a new seat
    each episode), ``reward_mode``, ``obs_mode``, ``illegal_action``,
    ``illegal_penalty``, ``dice_source``, ``render_mode`` (``"ansi"``,
    ``"human"``), rules options as keywords.
    """

    metadata = {"render_modes": ["ansi", "human"], "render_fps": 2}

    def __init__(
        self,
        rules: str | Rules = "yacht",
        opponents: Sequence[Any] = ("random",),
        *,
        seat: int | str = 0,
        reward_mode: str | None = None,
        obs_mode: str = "dict",
        illegal_action: str = "terminate",
        illegal_penalty: float = -1.0,
        dice_source: DiceSource | None = None,
        render_mode: str | None = None,
        **rule_options: Any,
    ):
        if isinstance(opponents, (str, bytes)) or not hasattr(opponents, "__len__"):
            opponents = [opponents]
        if illegal_action not in ("terminate", "raise"):
            raise ValueError(f"illegal_action must be 'terminate' or 'raise', got {illegal_action!r}")
        require_choice("render_mode", render_mode, self.metadata["render_modes"], optional=True)
        illegal_penalty = require_finite("illegal_penalty", illegal_penalty)
        num_players = len(opponents) + 1
        self.game = raw_env(
            rules, num_players, reward_mode, obs_mode=obs_mode, dice_source=dice_source, **rule_options
        )
        if not (seat == "random" or (isinstance(seat, (int, np.integer)) and 0 <= seat < num_players)):
            raise ValueError(f"seat must be 0..{num_players - 1} or 'random', got {seat!r}")
        self.seat_option = seat
        self.seat = 0 if seat == "random" else int(seat)
        self.opponents = [as_agent(o, seed=k) for k, o in enumerate(opponents)]
        self.rules, self.tables = self.game.rules, self.game.tables
        self.reward_mode, self.obs_mode = self.game.reward_mode, obs_mode
        self.illegal_action, self.illegal_penalty = illegal_action, float(illegal_penalty)
        self.render_mode = render_mode
        self.action_space = spaces.Discrete(self.tables.n_actions)
        self.observation_space = self.game.observation_space(self.game.possible_agents[0])["observation"]
        self._done = True
        self._started = False

    @property
    def me(self) -> str:
        """The learner's agent name in the underlying game."""
        return self.game.possible_agents[self.seat]

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        if options is not None and (not isinstance(options, Mapping) or options):
            raise ValueError(f"reset options: SeatEnv takes none (every game starts empty), got {options!r}")
        super().reset(seed=seed)
        game_seed = int(self.np_random.integers(2**31 - 1))
        if self.seat_option == "random":
            self.seat = int(self.np_random.integers(self.game.num_players))
        self.game.reset(seed=game_seed)
        for k, opponent in enumerate(self.opponents):
            if callable(getattr(opponent, "seed", None)):  # seeded opponents: same seed, same game
                opponent.seed(game_seed + 1 + k)
            if callable(getattr(opponent, "reset", None)):
                opponent.reset()
        self._done = False
        self._started = True
        self._play_opponents()
        return self._observation(), self._info()

    def step(self, action):
        if not self._started:
            raise gym.error.ResetNeeded("call reset() before step()")
        if self._done:
            raise gym.error.ResetNeeded("the episode is over; call reset() before step()")
        action = as_action(action)
        mask = self.action_masks()
        if not (type(action) is int and 0 <= action < len(mask) and mask[action]):
            reason = game.explain_illegal(self.tables, self.game.games[self.seat], action)
            reason = reason or f"action {action!r} is illegal"
            if self.illegal_action == "raise":
                raise IllegalActionError(f"{self.rules.name}: {reason}")
            self._done = True  # (the mask is all zeros from now on)
            info = self._info()
            info.update(illegal_action=True, illegal_reason=reason)
            return self._observation(), self.illegal_penalty, True, False, info
        self.game.step(action)
        reward = self.game.rewards[self.me]
        reward += self._play_opponents()
        self._done = bool(self.game.terminations[self.me])
        if self.render_mode == "human":
            self.render()
        return self._observation(), float(reward), self._done, False, self._info()

    def action_masks(self) -> np.ndarray:
        """The learner's legal actions now (``np.int8``; all zeros once the game is over)."""
        if not self._started:
            raise gym.error.ResetNeeded("call reset() before action_masks()")
        if self._done:  # over, normally or by an illegal action
            return np.zeros(self.tables.n_actions, dtype=np.int8)
        return self.game.observe_as(self.me, "dict")["action_mask"]

    def render(self):
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode='ansi' or 'human'")
            return None
        text = self.game.render_text()
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def _play_opponents(self) -> float:
        """Let the other seats move until it is the learner's turn or the game ends.

        Returns the learner's rewards paid meanwhile.
        """
        reward = 0.0
        g = self.game
        while not all(g.terminations.values()) and g.agent_selection != self.me:
            i = g.current
            opponent = self.opponents[(i - self.seat - 1) % g.num_players]
            obs = g.observe_for(g.agent_selection, opponent)
            action = int(opponent.act(obs["observation"], obs["action_mask"]))
            if not (0 <= action < len(obs["action_mask"]) and obs["action_mask"][action]):
                name = getattr(opponent, "name", type(opponent).__name__)
                raise IllegalActionError(f"opponent {name!r} at seat {i} chose illegal action {action}")
            g.step(action)
            reward += g.rewards[self.me]
        return reward

    def _observation(self):
        return self.game.observe_as(self.me, self.obs_mode)["observation"]

    def _info(self) -> dict[str, Any]:
        info = dict(self.game.infos[self.me])
        info["action_mask"] = self.action_masks()
        return info
