"""Self-play rollouts: one policy plays both seats of two-player tables and is paid for winning.

``players: 2`` in a batched trainer's config (:mod:`agents.training.trainer`) swaps the single-player
:class:`~agents.training.rollout.Rollout` for :class:`SelfPlayRollout`. It keeps ``n_envs`` two-player tables
on the engine's batched step (:func:`~dice_poker_env.engine.game.step_batch`), seat ``s`` of table ``i`` in
row ``2 i + s`` of one :class:`~dice_poker_env.engine.state.BatchState`. At every step each table's player
to move decides, all tables in one policy forward pass; a decision is one env step, as in the single
env. The player sees the multi-player env's flat observation
(:func:`~dice_poker_env.multi.observations.encode_batch`): its own game, then the opponent's scorecard.
Seat 0 plays a whole turn (up to three decisions), then seat 1; the game ends with seat 1's last box and
the table starts a new one at once.

**Rewards** are the multi-player env's ``reward_mode="win"`` (:func:`dice_poker_env.multi.rewards.final_rewards`):
at the end of a game +1 to the winner, -1 to the loser, 0 to both on a tie; nothing before. Each seat's
decisions are its own trajectory: the return of a seat's decision is its own result, and GAE runs along
each seat's decisions (:meth:`SelfPlayRollout._gae`). The loser's last decision was a box written before the
winner's last turn; its -1 is paid to that decision.

**Bootstrapping** at the end of a rollout: a seat's trajectory continues from the critic's value of its
next decision. For the seat to move that is its observation now; for the other seat it is its game now
(its next turn's dice already rolled) seen beside the opponent's scorecard now, which the opponent's turn
will still change. A game that ends in the next rollout pays the seat that wrote its last box in this
one nothing: its return is the bootstrap. Both are the usual truncation of GAE, per seat.

The dice are drawn from the rollout's NumPy generator (fair, independent of the policy), so a run is
reproducible from its seed and resumes exactly from :meth:`SelfPlayRollout.state`.
"""

from __future__ import annotations

import numpy as np
import torch

from agents.training.actor_critic import ActorCritic, Compiled
from agents.training.rollout import BaseRollout
from dice_poker_env.engine.combinatorics import N_DICE, N_KEEP_ACTIONS, distinct_keep_mask, roll_index_of_sorted
from dice_poker_env.engine.game import new_batch, step_batch
from dice_poker_env.engine.masks import action_masks
from dice_poker_env.engine.state import BatchState
from dice_poker_env.engine.tables import compile_rules
from dice_poker_env.multi.observations import encode_batch
from dice_poker_env.multi.rewards import final_rewards

#: the players at a self-play table
PLAYERS = 2


class SelfPlayRollout(BaseRollout):
    """Steps ``n_envs`` two-player tables with one policy in both seats, ``n_steps`` decisions per table per
    :meth:`collect` (:class:`~agents.training.rollout.BaseRollout`'s; the trainer uses this or
    :class:`~agents.training.rollout.Rollout`).

    Args:
        rules: the ruleset.
        n_envs: tables (each step is one decision at every table).
        n_steps: steps per rollout.
        seed: seeds the dice and the action sampling.
        distinct_keeps: the policy sees each distinct keep once.
        reward_scale: training rewards are the results (+1, 0, -1) times this.
        gamma, gae_lambda: discount and GAE lambda, along each seat's own decisions.
        features: policy inputs with the upper-bonus features (:class:`PolicyInputs`).
    """

    players = PLAYERS

    def _start(self, seed: int) -> None:
        self.tables = compile_rules(self.rules)
        self.masks_of = action_masks(self.tables)
        self.rng = np.random.default_rng(seed)
        self.games = new_batch(self.tables, self._first_rolls(PLAYERS * self.n_envs))
        self.current = np.zeros(self.n_envs, dtype=np.int64)  #: the seat to move at each table
        self._obs, self._mask = self._observe(self.current)
        T, N = self.n_steps, self.n_envs
        self._seats = np.zeros((T, N), dtype=np.int64)
        self._rewards = np.zeros((T, N, PLAYERS), dtype=np.float32)  #: each seat's result where a game ended
        self._dones = np.zeros((T, N), dtype=bool)
        # self.scores: final totals (both seats) of the games that ended; self.illegal stays 0 (legal moves only)

    # ------------------------------------------------------------------ the tables
    def _first_rolls(self, games: int) -> np.ndarray:
        return roll_index_of_sorted(np.sort(self.rng.integers(1, 7, size=(games, N_DICE)), axis=1))

    def _rows(self, seat: np.ndarray) -> np.ndarray:
        return PLAYERS * np.arange(self.n_envs) + seat

    def _observe(self, seat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Policy inputs and masks of seat ``seat[i]`` at each table ``i``: its game, then the other seat's."""
        rows = self._rows(seat)
        own, other = self.games.take(rows), self.games.take(rows ^ 1)
        obs = encode_batch(self.tables, own, [other], "flat")
        assert isinstance(obs, np.ndarray)  # the flat layout
        mask = self.masks_of.of_batch(own)
        if self.distinct_keeps:
            mask = distinct_keep_mask(mask, own.roll)
        return self.inputs(obs), mask.astype(bool)

    def _step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Play each table's move; ``(ended, results)``: the tables whose game ended and each seat's result
        there ``(N, 2)`` (zeros elsewhere). Ended tables start a new game."""
        seat = self.current
        rows = self._rows(seat)
        faces = self.rng.integers(1, 7, size=(self.n_envs, N_DICE))  # a keep's rerolled dice, or the next turn's
        new, _, over = step_batch(self.tables, self.games.take(rows), actions, faces)
        for values, updated in zip(self.games, new):
            values[rows] = updated
        scored = actions >= N_KEEP_ACTIONS
        ended = scored & over & (seat == PLAYERS - 1)
        self.current = np.where(scored, (seat + 1) % PLAYERS, seat)
        results = np.zeros((self.n_envs, PLAYERS), dtype=np.float64)
        if ended.any():
            totals = self.games.total.reshape(self.n_envs, PLAYERS)[ended]
            results[ended] = final_rewards(totals, "win")
            self.scores.append(totals.ravel())
            tables = np.flatnonzero(ended)
            fresh = new_batch(self.tables, self._first_rolls(PLAYERS * len(tables)))
            both = (PLAYERS * tables[:, None] + np.arange(PLAYERS)).ravel()
            for values, started in zip(self.games, fresh):
                values[both] = started
            self.current[ended] = 0
        return ended, results

    # ------------------------------------------------------------------ rollouts
    def _record(self, t: int) -> None:
        super()._record(t)
        self._seats[t] = self.current

    def _advance(self, t: int, actions: np.ndarray) -> None:
        ended, results = self._step(actions)
        self._dones[t] = ended
        self._rewards[t] = results * self.reward_scale
        self._obs, self._mask = self._observe(self.current)

    def _last_values(self, model: ActorCritic | Compiled) -> torch.Tensor:
        """Each seat's value at its next decision ``(n_envs, 2)`` (the seat to move: its observation now)."""
        last = torch.zeros((self.n_envs, PLAYERS))
        for seat in range(PLAYERS):
            inputs, mask = self._observe(np.full(self.n_envs, seat))
            x = torch.from_numpy(inputs).to(self.device)
            last[:, seat] = model.value(x, torch.from_numpy(mask).to(self.device)).cpu()
        return last

    def _gae(self, last_value: torch.Tensor) -> torch.Tensor:
        """GAE along each seat's own decisions, ``(n_steps, n_envs)``: read backwards, a step's advantage
        continues the chain of the seat that moved; a game's end pays each seat's last decision before it and
        cuts both chains."""
        N = self.n_envs
        table = torch.arange(N)
        rewards, dones = torch.from_numpy(self._rewards), torch.from_numpy(self._dones)
        seats = torch.from_numpy(self._seats)
        advantages = torch.zeros((self.n_steps, N))
        running = torch.zeros((N, PLAYERS))
        next_value = last_value.clone()
        owed = torch.zeros((N, PLAYERS))  # the result a seat's latest decision (read backwards: next) earns
        cut = torch.zeros((N, PLAYERS))  # 1 where a game ended after the seat's decision: no bootstrap
        for t in reversed(range(self.n_steps)):
            end = dones[t]
            owed = torch.where(end[:, None], rewards[t], owed)
            cut = torch.where(end[:, None], torch.ones_like(cut), cut)
            s = seats[t]
            live = 1.0 - cut[table, s]
            delta = owed[table, s] + self.gamma * next_value[table, s] * live - self._values[t]
            running[table, s] = delta + self.gamma * self.gae_lambda * live * running[table, s]
            advantages[t] = running[table, s]
            next_value[table, s] = self._values[t]
            owed[table, s] = 0.0
            cut[table, s] = 0.0
        return advantages

    # ------------------------------------------------------------------ checkpoints
    def _env_state(self) -> dict:
        """The tables, the dice generator and the seats to move."""
        return {
            "np_random": self.rng.bit_generator.state,
            "games": {name: values.copy() for name, values in self.games._asdict().items()},
            "current": self.current.copy(),
        }

    def _restore_env(self, env: object) -> None:
        assert isinstance(env, dict)
        games = BatchState(**{name: np.asarray(env["games"][name], dtype=np.int64) for name in BatchState._fields})
        if games.size != PLAYERS * self.n_envs or len(env["current"]) != self.n_envs:
            raise ValueError(f"the checkpoint holds {games.size // PLAYERS} tables, this run {self.n_envs}")
        rng = np.random.default_rng()
        rng.bit_generator.state = env["np_random"]
        self.rng, self.games = rng, games
        self.current = np.asarray(env["current"], dtype=np.int64)
