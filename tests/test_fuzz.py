"""Acceptance fuzz test: random masked games on random valid rulesets, every front end and the solver.

Seeded (same seed, same rulesets, dice and actions). Each case draws small
rulesets (at most 6 boxes, see ``random_rules``) and checks, at every step:

* observations lie in the declared space (dict and flat);
* the mask is exactly the engine's legality (``explain_illegal``) and, in the
  single env, exactly the solver's finite action values;
* the return of an episode is its final score, and after the end (normal or by
  an illegal action) the mask is all zeros;
* solver and env agree: a score action's value is the state value of the
  position it leads to (env rewards, bonuses and transitions = the solver's);
  the expected score is the first roll's best action values on average; every
  position reached in play (its bonus included) is accepted back by
  ``reset(options=...)`` and gives the same observation.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from random_rules import random_rules

from dice_poker_env import multi
from dice_poker_env.engine import game
from dice_poker_env.engine.combinatorics import FIRST_ROLL_PROBABILITY, N_KEEP_ACTIONS, ROLL_DICE
from dice_poker_env.envs import DicePokerEnv
from dice_poker_env.envs.vector import DicePokerVectorEnv
from dice_poker_env.solver import solve

SEEDS = range(20)
RULESETS_PER_SEED = 3


class LoadedDice:
    """Dice that often all show one face: five of a kind (jokers, bonuses) comes up in short games."""

    def roll(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        if rng.random() < 0.5:
            return np.full(shape, rng.integers(1, 7), dtype=np.int64)
        return rng.integers(1, 7, size=shape)


def _choose(rng: np.random.Generator, mask: np.ndarray, dice: np.ndarray, tables, greedy_for_five: bool) -> int:
    """A random legal action; with ``greedy_for_five``, five of a kind is scored at once (in the
    five-of-a-kind box while it is open), so that five-of-a-kind bonuses and jokers come up."""
    legal = np.flatnonzero(mask)
    if greedy_for_five and (dice == dice[0]).all():
        k = tables.five_kind_box
        if k >= 0 and mask[N_KEEP_ACTIONS + k]:
            return N_KEEP_ACTIONS + k
        scores = legal[legal >= N_KEEP_ACTIONS]
        if len(scores):
            return int(rng.choice(scores))
    return int(rng.choice(legal))


def _legal_by_engine(env: DicePokerEnv) -> np.ndarray:
    return np.array(
        [game.explain_illegal(env.tables, env.state, a) is None for a in range(env.tables.n_actions)], dtype=np.int8
    )


def _position(env: DicePokerEnv, obs: dict) -> dict:
    """The reset options that rebuild the env's current position."""
    card = {k: v for k, v in env.scorecard().items() if v is not None}
    return {
        "scorecard": card,
        "dice": obs["dice"].tolist(),
        "rolls_left": int(obs["rolls_left"]),
        "bonus": int(obs["bonus"][0]),
    }


def _same_obs(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def _check_first_roll(solution, obs: dict) -> None:
    """E[max_a Q(first roll, a)] over the 252 first rolls is the expected score."""
    batch = {k: np.repeat(np.asarray(v)[None], len(ROLL_DICE), axis=0) for k, v in obs.items()}
    batch["dice"] = ROLL_DICE.astype(np.int64)
    batch["rolls_left"] = np.full(len(ROLL_DICE), 2, dtype=np.int64)
    q = solution.action_values(batch)
    mean = float(FIRST_ROLL_PROBABILITY @ q.max(axis=1))
    assert mean == pytest.approx(solution.expected_score, rel=1e-5, abs=1e-3)
    assert solution.state_value({}) == pytest.approx(solution.expected_score, rel=1e-9, abs=1e-9)


def _play_single_with_solver(rules, solution, rng: np.random.Generator, seed: int, dice=None) -> None:
    env = DicePokerEnv(rules, illegal_penalty=-3, dice_source=dice)
    twin = DicePokerEnv(rules)
    obs, info = env.reset(seed=seed)
    assert env.observation_space.contains(obs)
    _check_first_roll(solution, obs)
    total, done = 0.0, False
    illegal_at = int(rng.integers(0, 6 * rules.turns + 5))  # now and then, end the game with an illegal action
    for step in range(10 * rules.turns + 10):
        mask = info["action_mask"]
        np.testing.assert_array_equal(mask, env.action_masks())
        np.testing.assert_array_equal(mask, _legal_by_engine(env))
        q = solution.action_values(obs)
        np.testing.assert_array_equal(np.isfinite(q), mask == 1)
        assert mask.any(), "a live game always has a legal action"
        assert _same_obs(twin.reset(options=_position(env, obs))[0], obs)  # the position (bonus too) is valid
        if step == illegal_at:
            illegal = int(rng.choice(np.append(np.flatnonzero(mask == 0), [env.tables.n_actions, -1])))
            obs, reward, terminated, _, info = env.step(illegal)
            assert terminated and reward == -3 and info["illegal_action"]
            assert not env.action_masks().any() and not info["action_mask"].any()
            assert env.observation_space.contains(obs)
            return
        action = _choose(rng, mask, obs["dice"], env.tables, greedy_for_five=dice is not None)
        obs, reward, done, _, info = env.step(action)
        assert env.observation_space.contains(obs) and "illegal_action" not in info
        total += reward
        if action >= N_KEEP_ACTIONS:
            if done:
                assert total == info["final_score"] == pytest.approx(q[action], abs=1e-9)
            else:  # the value of the position the env moved to is the solver's value of the action
                card = {k: v for k, v in env.scorecard().items() if v is not None}
                assert solution.state_value(card, bonus=int(obs["bonus"][0])) == pytest.approx(
                    q[action], rel=1e-5, abs=1e-4
                )
        if done:
            break
    assert done and total == env.score
    assert not env.action_masks().any() and not info["action_mask"].any()


def _play_flat(rules, rng: np.random.Generator, seed: int) -> None:
    env = DicePokerEnv(rules, obs_mode="flat")
    obs, info = env.reset(seed=seed)
    total, done = 0.0, False
    while not done:
        assert env.observation_space.contains(obs)
        obs, reward, done, _, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
        total += reward
    assert env.observation_space.contains(obs)
    assert total == info["final_score"] and not env.action_masks().any()


def _play_vector(rules, rng: np.random.Generator, seed: int) -> None:
    n = 6
    obs_mode = str(rng.choice(["dict", "flat"]))
    env = DicePokerVectorEnv(n, rules, obs_mode=obs_mode)
    obs, info = env.reset(seed=seed)
    returns, finished = np.zeros(n), np.zeros(n, dtype=bool)
    for _ in range(3 * rules.turns + 2):
        assert env.observation_space.contains(obs)
        masks = env.action_masks()
        np.testing.assert_array_equal(masks, info["action_mask"])
        assert masks[~finished].any(axis=1).all()
        actions = np.array([int(rng.choice(np.flatnonzero(m))) if m.any() else 0 for m in masks])
        obs, reward, terminated, _, info = env.step(actions)
        assert "illegal_action" not in info
        returns += np.where(finished, 0.0, reward)
        for i in np.flatnonzero(terminated & ~finished):
            assert returns[i] == info["final_score"][i]
            assert not info["action_mask"][i].any() and not env.action_masks()[i].any()
        finished |= terminated
        if finished.all():
            break
    assert finished.all()


def _play_multi(rules, rng: np.random.Generator, seed: int) -> None:
    players = int(rng.integers(2, 4))
    env = multi.env(rules, players, reward_mode="score", obs_mode=str(rng.choice(["dict", "flat"])))
    env.reset(seed=seed)
    returns = dict.fromkeys(env.possible_agents, 0.0)
    for agent in env.agent_iter():
        obs, reward, termination, truncation, info = env.last()
        returns[agent] += reward
        assert env.observation_space(agent).contains(obs)
        for other in env.possible_agents:  # only the selected live agent may act
            if other != agent or termination or truncation:
                assert not env.observe(other)["action_mask"].any()
        if termination or truncation:
            assert info["final_score"] == returns[agent]
            env.step(None)
            continue
        mask = obs["action_mask"]
        np.testing.assert_array_equal(mask, env.unwrapped.action_masks())
        env.step(int(rng.choice(np.flatnonzero(mask))))
    assert not env.agents


@pytest.mark.parametrize("seed", SEEDS)
def test_fuzz_random_rulesets(seed, tmp_path, monkeypatch):
    monkeypatch.setenv("DICE_POKER_CACHE", str(tmp_path / "cache"))
    rng = np.random.default_rng(seed)
    for case in range(RULESETS_PER_SEED):
        rules = random_rules(rng, solvable=True)
        solution = solve(rules, progress=False, workers=1)
        for game_seed in range(3):
            dice = LoadedDice() if game_seed else None
            _play_single_with_solver(rules, solution, rng, 100 * case + game_seed, dice)
        _play_flat(rules, rng, case)
        _play_vector(rules, rng, case)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _play_multi(rules, rng, case)
