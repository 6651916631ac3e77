"""Rollouts of the batched trainers: a torch policy playing the NumPy-batched env.

:class:`BaseRollout` holds what every rollout shares: ``n_steps x n_envs`` buffers that
:meth:`BaseRollout.collect` fills with one policy forward pass per step for the whole
batch (no Python loop over games), then GAE advantages, and checkpoints. One
:class:`Rollout` owns a :class:`~dice_poker_env.envs.vector.DicePokerVectorEnv` of
``n_envs`` games (``SAME_STEP`` autoreset: every stored step is a real transition,
the step after a game's end already belongs to the next game); the self-play
rollout (:mod:`agents.training.selfplay`) keeps two-player tables instead.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from gymnasium.vector import AutoresetMode

from agents.policy.inputs import PolicyInputs
from agents.training.actor_critic import ActorCritic, Compiled, sample
from dice_poker_env.engine.combinatorics import distinct_keep_mask
from dice_poker_env.engine.tables import compile_rules
from dice_poker_env.envs.vector import DicePokerVectorEnv
from dice_poker_env.rules import Rules

#: picks one action per row from masked logits ``(B, n_actions)`` with a generator (or None on a GPU)
Choose = Callable[[torch.Tensor, "torch.Generator | None"], torch.Tensor]


@dataclass
class Batch:
    """One rollout, flattened to ``n_steps * n_envs`` samples."""

    inputs: torch.Tensor  #: (B, in_dim) float32 policy inputs
    masks: torch.Tensor  #: (B, n_actions) bool legal actions
    actions: torch.Tensor  #: (B,) int64
    log_probs: torch.Tensor  #: (B,) the behaviour policy's log-probabilities
    values: torch.Tensor  #: (B,) the critic's values at collection
    advantages: torch.Tensor  #: (B,) GAE advantages
    returns: torch.Tensor  #: (B,) advantages + values (the critic's targets)


class BaseRollout:
    """What every rollout of the batched trainers shares: ``n_steps x n_envs`` buffers, one policy forward pass
    per step for all games (:meth:`collect`), the sampling generator, the score tally and checkpoints.

    A rollout says how its games start (:meth:`_start`: the games, ``_obs`` and ``_mask`` of the first
    decisions, the ``_rewards`` and ``_dones`` buffers), how they advance (:meth:`_advance`: store the step's
    rewards and ends, then the next inputs and masks), the critic's values after the last step
    (:meth:`_last_values`), its advantages (:meth:`_gae`) and how its games are saved (:meth:`_env_state`,
    :meth:`_restore_env`).

    Args:
        rules: the ruleset.
        n_envs, n_steps: batch shape of one rollout.
        seed: seeds the games (all of them) and the action sampling.
        distinct_keeps: the policy sees each distinct keep once
            (:func:`~dice_poker_env.engine.combinatorics.distinct_keep_mask`).
        reward_scale: training rewards are the game's times this.
        gamma, gae_lambda: discount and GAE lambda.
        features: policy inputs with the upper-bonus features (:class:`PolicyInputs`).
        device: where the batches go.
    """

    _obs: np.ndarray
    _mask: np.ndarray
    _rewards: np.ndarray
    _dones: np.ndarray

    #: the players whose observation a policy input holds (:class:`PolicyInputs`)
    players = 1

    def __init__(
        self,
        rules: Rules,
        n_envs: int,
        n_steps: int,
        seed: int,
        *,
        distinct_keeps: bool = True,
        reward_scale: float = 1.0,
        gamma: float = 1.0,
        gae_lambda: float = 0.95,
        features: bool = True,
        device: str | torch.device = "cpu",
    ) -> None:
        self.rules = rules
        self.n_envs, self.n_steps = int(n_envs), int(n_steps)
        self.distinct_keeps = distinct_keeps
        self.reward_scale, self.gamma, self.gae_lambda = float(reward_scale), float(gamma), float(gae_lambda)
        self.device = torch.device(device)
        self.inputs = PolicyInputs(rules, features=features, players=self.players)
        self.generator = torch.Generator().manual_seed(int(seed))
        T, N, A = self.n_steps, self.n_envs, int(compile_rules(rules).n_actions)
        self._inputs = np.zeros((T, N, self.inputs.size), dtype=np.float32)
        self._masks = np.zeros((T, N, A), dtype=bool)
        self._actions = torch.zeros((T, N), dtype=torch.int64)
        self._log_probs = torch.zeros((T, N))
        self._values = torch.zeros((T, N))
        #: final scores of the games that ended since the last :meth:`take_scores`
        self.scores: list[np.ndarray] = []
        self.steps = 0  #: env steps taken (all games)
        self.illegal = 0  #: illegal actions taken (ends of games by an illegal action)
        self._start(int(seed))

    @property
    def current_inputs(self) -> np.ndarray:
        """The policy inputs of the games' current decisions, ``(n_envs, in_dim)`` float32 (a copy)."""
        return self._obs.copy()

    @torch.no_grad()
    def collect(self, model: ActorCritic | Compiled, choose: Choose = sample) -> Batch:
        """Play ``n_steps`` steps of every game with ``model``: ``choose`` picks the actions from its masked
        logits (default: sampled from the softmax, as policy gradients do; :mod:`agents.training.pqn` passes
        epsilon-greedy over its Q-values, its "values" then the best legal action's)."""
        for t in range(self.n_steps):
            self._record(t)
            x = torch.from_numpy(self._obs).to(self.device)
            logits, value = model(x, torch.from_numpy(self._mask).to(self.device))
            action = choose(logits, self.generator if self.device.type == "cpu" else None)
            self._log_probs[t] = torch.log_softmax(logits, dim=1).gather(1, action[:, None]).squeeze(1).cpu()
            self._values[t] = value.cpu()
            self._actions[t] = action.cpu()
            self._advance(t, self._actions[t].numpy())
        self.steps += self.n_steps * self.n_envs
        advantages = self._gae(self._last_values(model))
        return flat_batch(
            self._inputs, self._masks, self._actions, self._log_probs, self._values, advantages, self.device
        )

    def _record(self, t: int) -> None:
        """Store what step ``t`` decides from."""
        self._inputs[t] = self._obs
        self._masks[t] = self._mask

    def _start(self, seed: int) -> None:
        raise NotImplementedError

    def _advance(self, t: int, actions: np.ndarray) -> None:
        raise NotImplementedError

    def _last_values(self, model: ActorCritic | Compiled) -> torch.Tensor:
        raise NotImplementedError

    def _gae(self, last_value: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def _env_state(self) -> object:
        raise NotImplementedError

    def _restore_env(self, env: object) -> None:
        raise NotImplementedError

    def state(self) -> dict:
        """What :meth:`collect` continues from (for checkpoints): the games and their dice generator, the
        current inputs and masks, the sampling generator, the step count and the scores not yet taken."""
        return {
            "env": self._env_state(),
            "obs": self._obs,
            "mask": self._mask,
            "generator": self.generator.get_state(),
            "steps": self.steps,
            "scores": self.scores,
            "illegal": self.illegal,
        }

    def restore(self, state: dict) -> None:
        """Continue from :meth:`state`."""
        self._restore_env(state["env"])
        self._obs, self._mask = state["obs"], state["mask"]
        self.generator.set_state(state["generator"])
        self.steps, self.scores, self.illegal = state["steps"], list(state["scores"]), state["illegal"]

    def take_scores(self) -> np.ndarray:
        """Final scores of the games that ended since the last call."""
        scores, self.scores = concat_scores(self.scores), []
        return scores


class Rollout(BaseRollout):
    """Steps ``n_envs`` games of the single-player vector env with a policy, ``n_steps`` steps per
    :meth:`collect` (arguments: :class:`BaseRollout`'s; the env's rewards, times ``reward_scale``)."""

    def _start(self, seed: int) -> None:
        self.env = DicePokerVectorEnv(self.n_envs, self.rules, obs_mode="flat", autoreset_mode=AutoresetMode.SAME_STEP)
        obs, info = self.env.reset(seed=seed)
        self._obs, self._mask = self.inputs(obs), self._policy_mask(info["action_mask"])
        self._rewards = np.zeros((self.n_steps, self.n_envs), dtype=np.float32)
        self._dones = np.zeros((self.n_steps, self.n_envs), dtype=np.float32)

    def _policy_mask(self, mask: np.ndarray) -> np.ndarray:
        if self.distinct_keeps:
            assert self.env.state is not None  # the env is reset on construction
            mask = distinct_keep_mask(mask, self.env.state.roll)
        return mask.astype(bool)

    def _advance(self, t: int, actions: np.ndarray) -> None:
        obs, reward, terminated, truncated, info = self.env.step(actions)
        done = terminated | truncated
        self._rewards[t] = reward * self.reward_scale
        self._dones[t] = done
        if done.any():
            final = info["final_info"]
            self.scores.append(np.asarray(final["final_score"])[final["_final_score"]])
            if "illegal_action" in final:  # never, with the masks: counted so that tests can say so
                self.illegal += int(np.count_nonzero(final["illegal_action"]))
        self._obs, self._mask = self.inputs(obs), self._policy_mask(info["action_mask"])

    def _last_values(self, model: ActorCritic | Compiled) -> torch.Tensor:
        x, mask = torch.from_numpy(self._obs).to(self.device), torch.from_numpy(self._mask).to(self.device)
        return model.value(x, mask).cpu()

    def _gae(self, last_value: torch.Tensor) -> torch.Tensor:
        """Generalized advantage estimates (Schulman et al. 2016), ``(n_steps, n_envs)``."""
        rewards, dones = torch.from_numpy(self._rewards), torch.from_numpy(self._dones)
        advantages = torch.zeros_like(rewards)
        running = torch.zeros(self.n_envs)
        next_value = last_value
        for t in reversed(range(self.n_steps)):
            live = 1.0 - dones[t]  # a step that ended its game bootstraps from nothing
            delta = rewards[t] + self.gamma * next_value * live - self._values[t]
            running = delta + self.gamma * self.gae_lambda * live * running
            advantages[t] = running
            next_value = self._values[t]
        return advantages

    def _env_state(self) -> dict:
        """The env (games and generator) as :meth:`DicePokerVectorEnv.snapshot` saves it."""
        return self.env.snapshot()

    def _restore_env(self, env: object) -> None:
        """Checkpoints of earlier versions hold the env object itself."""
        if isinstance(env, dict):
            self.env.restore(env)
        else:
            assert isinstance(env, DicePokerVectorEnv)
            self.env = env


def flat_batch(
    inputs: np.ndarray,
    masks: np.ndarray,
    actions: torch.Tensor,
    log_probs: torch.Tensor,
    values: torch.Tensor,
    advantages: torch.Tensor,
    device: torch.device,
) -> Batch:
    """A rollout's ``(n_steps, n_envs, ...)`` buffers as one :class:`Batch` on ``device`` (returns: advantages
    plus values); both rollouts (:class:`Rollout`, :class:`~agents.training.selfplay.SelfPlayRollout`) end so."""
    size = values.shape[0] * values.shape[1]
    flat = lambda a: a.reshape(size, *a.shape[2:]).to(device)  # noqa: E731
    return Batch(
        inputs=flat(torch.from_numpy(inputs)),
        masks=flat(torch.from_numpy(masks)),
        actions=flat(actions),
        log_probs=flat(log_probs),
        values=flat(values),
        advantages=flat(advantages),
        returns=flat(advantages + values),
    )


def concat_scores(scores: list[np.ndarray]) -> np.ndarray:
    """The final scores gathered in ``scores``, one array (empty without any)."""
    return np.concatenate(scores) if scores else np.zeros(0, dtype=np.int64)
