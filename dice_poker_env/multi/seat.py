"""One seat of a multi-player game as a Gymnasium single-agent env (:class:`SeatEnv`).

The other seats are played by given agents, so Stable-Baselines3 (MaskablePPO)
can train an agent to *win*. An agent is any object with
``act(observation, action_mask)``; the random player is built in
(:class:`~dice_poker_env.players.RandomAgent`); the others (greedy, optimal,
trained models) live in the ``agents`` package, which sits above this one:
construct them there and pass them in.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from dice_poker_env.dice_sources import DiceSource
from dice_poker_env.envs.arguments import as_action, require_choice
from dice_poker_env.envs.illegal import IllegalActionError, IllegalActions, IllegalActionSettings
from dice_poker_env.multi.aec import MAX_PLAYERS, MIN_PLAYERS, raw_env
from dice_poker_env.multi.observations import table_problem
from dice_poker_env.players import RandomAgent
from dice_poker_env.rules import Rules


class Player(Protocol):
    """What :func:`as_agent` returns: an object that picks a legal action (``reset``/``seed`` optional)."""

    def act(self, observation: Any, action_mask: np.ndarray) -> int: ...


def as_agent(opponent: Any, *, seed: int | None = None) -> Player:
    """An object with ``act(observation, action_mask)`` from an agent, a plain callable or ``"random"``.

    Named agents other than ``"random"`` (greedy, optimal) and trained models live
    in the ``agents`` package, which sits above this one: construct them there
    and pass them in (a model as ``agents.players.registry.make_agent("model:PATH", rules)``
    or ``agents.players.sb3_agent.SB3Agent(model, metadata)``).
    """
    if isinstance(opponent, str):
        if opponent == "random":
            return RandomAgent(seed)
        raise ValueError(
            f"opponent {opponent!r}: only 'random' is built in; pass an agent object "
            "(e.g. agents.players.greedy.GreedyAgent(...) or agents.players.optimal.OptimalAgent(...))"
        )
    if hasattr(opponent, "act"):
        return opponent
    if hasattr(opponent, "predict"):
        raise TypeError(
            f"opponent {opponent!r} is a model (it has predict(), not act()): play it through an agent, "
            "e.g. agents.players.registry.make_agent('model:PATH', rules) or agents.players.sb3_agent.SB3Agent(model, metadata)"
        )
    if callable(opponent):
        return _CallableAgent(opponent)
    raise TypeError(f"an opponent must be an agent with act(), a callable or 'random', got {opponent!r}")


class _CallableAgent:
    def __init__(self, fn: Callable[[Any, np.ndarray], int]):
        self.fn, self.name = fn, getattr(fn, "__name__", "callable")

    def act(self, observation: Any, action_mask: np.ndarray) -> Any:
        return self.fn(observation, action_mask)  # judged by SeatEnv as any opponent's answer

    def reset(self) -> None:
        pass


class SeatEnv(IllegalActionSettings, gym.Env[Any, int]):
    """One seat of a multi-player game as a Gymnasium single-agent env.

    ## Description
    The learner plays seat ``seat`` of a :class:`raw_env` game; the other seats
    are played by ``opponents``, ``opponents[k]`` taking the ``k``-th seat after
    the learner's in turn order (so their order does not depend on ``seat``): agents
    with ``act(observation, action_mask)`` (``agents.players.greedy.GreedyAgent``,
    ``agents.players.optimal.OptimalAgent``, trained models through ``agents.players.registry.make_agent``),
    plain callables ``(observation, action_mask) -> action``, or ``"random"``
    (:class:`~dice_poker_env.players.RandomAgent`). An opponent gets its seat's
    observation in the layout it reads (:meth:`raw_env.observe_for`: by default
    the multi-player dict, a superset of the single env's).

    ## Action Space
    ``Discrete(32 + n_boxes)``, the single env's encoding.

    ## Observation Space
    The ``observation`` part of the multi-player observation
    (:func:`~dice_poker_env.multi.observations.multi_observation_space`); the mask is ``action_masks()`` and
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
    ``"raise"`` raises :class:`~dice_poker_env.envs.illegal.IllegalActionError`
    (:class:`~dice_poker_env.envs.illegal.IllegalActions`, as the single env).

    ## Information
    ``action_mask``, ``score``; at the end ``final_score``, ``scores``
    ({agent: total}) and ``rank``, also when an illegal action ended it (the
    totals so far; the learner, whose action it was, ranks last).

    ## Arguments
    ``rules``, ``opponents`` (default one ``"random"``; the number of players is
    ``len(opponents) + 1``), ``seat`` (an int, or ``"random"`` for a new seat
    each episode), ``reward_mode``, ``obs_mode``, ``illegal_action``,
    ``illegal_penalty``, ``dice_source``, ``render_mode`` (``"ansi"``,
    ``"human"``), rules options as keywords.

    Not registered with Gymnasium, on purpose (its task depends on the opponent
    objects, which no id names; ``spec`` is ``None``): vectorise it by
    construction, ``SyncVectorEnv([lambda: SeatEnv(...)] * n)`` or SB3's
    ``make_vec_env(SeatEnv, n_envs=n, env_kwargs=...)`` (docs/multiplayer.md).
    """

    metadata = {"render_modes": ["ansi", "human"], "render_fps": 2}

    def __init__(
        self,
        rules: str | os.PathLike[str] | Rules = "yacht",
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
        self._illegal_actions = IllegalActions.from_arguments(illegal_action, illegal_penalty)
        require_choice("render_mode", render_mode, self.metadata["render_modes"], optional=True)
        num_players = len(opponents) + 1
        if not MIN_PLAYERS <= num_players <= MAX_PLAYERS:
            raise ValueError(
                f"opponents: {MIN_PLAYERS - 1} to {MAX_PLAYERS - 1} agents ({MIN_PLAYERS} to {MAX_PLAYERS} players with "
                f"the learner), got {len(opponents)}"
            )
        self.game = raw_env(rules, num_players, reward_mode, obs_mode=obs_mode, dice_source=dice_source, **rule_options)
        if not (seat == "random" or (isinstance(seat, (int, np.integer)) and 0 <= seat < num_players)):
            raise ValueError(f"seat must be 0..{num_players - 1} or 'random', got {seat!r}")
        self.seat_option = seat
        self.seat = 0 if seat == "random" else int(seat)
        self.opponents = [as_agent(o, seed=k) for k, o in enumerate(opponents)]
        self.rules, self.tables = self.game.rules, self.game.tables
        for k, opponent in enumerate(self.opponents):  # refused now, not at its first move
            problem = table_problem(opponent, self.tables, num_players)
            if problem is not None:
                raise ValueError(f"opponents[{k}] ({getattr(opponent, 'name', type(opponent).__name__)}): {problem}")
        self.reward_mode, self.obs_mode = self.game.reward_mode, obs_mode
        self.render_mode = render_mode
        self.action_space = spaces.Discrete(self.tables.n_actions)
        self.observation_space = self.game.observation_space(self.game.possible_agents[0])["observation"]
        self._done = True
        self._started = False

    @property
    def me(self) -> str:
        """The learner's agent name in the underlying game."""
        return self.game.possible_agents[self.seat]

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        if options is not None and (not isinstance(options, Mapping) or options):
            raise ValueError(f"reset options: SeatEnv takes none (every game starts empty), got {options!r}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))):
            raise TypeError(f"seed must be an int or None, got {seed!r}")
        super().reset(seed=None if seed is None else int(seed))  # (NumPy integers too, as the single env)
        game_seed = int(self.np_random.integers(2**31 - 1))
        if self.seat_option == "random":
            self.seat = int(self.np_random.integers(self.game.num_players))
        self.game.reset(seed=game_seed)
        for k, opponent in enumerate(self.opponents):
            seed_opponent, reset_opponent = getattr(opponent, "seed", None), getattr(opponent, "reset", None)
            if callable(seed_opponent):  # seeded opponents: same seed, same game
                seed_opponent(game_seed + 1 + k)
            if callable(reset_opponent):
                reset_opponent()
        self._done = False
        self._started = True
        self._play_opponents()
        return self._observation(), self._info()

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        if not self._started:
            raise gym.error.ResetNeeded("call reset() before step()")
        if self._done:
            raise gym.error.ResetNeeded("the episode is over; call reset() before step()")
        action = as_action(action)
        mask = self.action_masks()
        if not (type(action) is int and 0 <= action < len(mask) and mask[action]):
            reason = self._illegal_actions.judge(self.tables, self.game.games[self.seat], action, self.rules.name)
            self._done = True  # (the mask is all zeros from now on)
            info = self._illegal_actions.mark(self._info(ended=True), reason)
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

    # gymnasium types render() with a method-level TypeVar (RenderFrame); the frame here is text
    def render(self) -> str | None:  # type: ignore[override]
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
            action = as_action(opponent.act(obs["observation"], obs["action_mask"]))
            name = getattr(opponent, "name", type(opponent).__name__)
            if isinstance(action, bool) or not isinstance(action, int):
                text = repr(action) if len(repr(action)) <= 80 else repr(action)[:77] + "..."
                raise IllegalActionError(
                    f"opponent {name!r} at seat {i} returned {text} ({type(action).__name__}), not an action index"
                )
            if not (0 <= action < len(obs["action_mask"]) and obs["action_mask"][action]):
                raise IllegalActionError(f"opponent {name!r} at seat {i} chose illegal action {action}")
            g.step(action)
            reward += g.rewards[self.me]
        return reward

    def _observation(self) -> Any:
        return self.game.observe_as(self.me, self.obs_mode)["observation"]

    def _info(self, *, ended: bool = False) -> dict[str, Any]:
        """The learner's info now; ``ended``: the episode ended early (by its illegal action), with the end keys
        (the learner ranked last)."""
        info = self.game.final_info(self.me, self.me) if ended else dict(self.game.infos[self.me])
        info["action_mask"] = self.action_masks()
        return info
