"""Record what every shipped policy does at a few thousand states: the behaviour-identity fixture.

``tests/test_policy_fixture.py`` checks that the NumPy player of each shipped policy
(``agents/policies/<ruleset>.npz``) still takes the recorded action at every recorded
state, with logits within 1e-5, and that the torch actor built from the same file agrees:
a refactoring of the policy code must not change what a shipped policy plays.

The states come from 200 seeded games per ruleset in the batched env: 100 played by the
policy itself (greedy), 100 by a mix (each step: the policy's action with chance 1/2, a
random legal action with chance 1/4, the legal box with the most points now otherwise), so
that positions the policy would not reach are there too. 2,000 of them per ruleset are kept
(seeded draw), with each state's flat observation, action mask, the player's logits
(float32) and its action, in ``tests/data/policy_actions.npz`` (about 2 MB).

Rerun only on purpose (a deliberately changed policy or a new shipped one)::

    python tests/policy_fixture.py [--out tests/data/policy_actions.npz]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = Path(__file__).resolve().parent / "data" / "policy_actions.npz"
GAMES = 200  # per ruleset: half played by the policy, half by the mix
STATES = 2000  # kept per ruleset
SEED = 20261203


def record_ruleset(name: str, games: int = GAMES, states: int = STATES, seed: int = SEED) -> dict[str, np.ndarray]:
    """``obs``, ``mask``, ``logits`` and ``action`` of ``states`` states of ``games`` seeded games of ``name``."""
    from agents.policy.player import shipped_policy
    from dice_poker_env.engine.combinatorics import N_KEEP_ACTIONS
    from dice_poker_env.engine.tables import compile_rules
    from dice_poker_env.envs.observation import flat_layout
    from dice_poker_env.envs.vector import DicePokerVectorEnv

    agent = shipped_policy(name)
    points = flat_layout(compile_rules(agent.rules))["potential_points"]
    rng = np.random.default_rng(seed)
    env = DicePokerVectorEnv(games, agent.rules, obs_mode="flat")
    obs, info = env.reset(seed=seed)
    mixed = np.arange(games) >= games // 2
    over = np.zeros(games, dtype=bool)
    seen_obs, seen_mask = [], []
    while not over.all():
        mask = np.asarray(info["action_mask"]).astype(bool)
        live = ~over
        seen_obs.append(obs[live].astype(np.float32))
        seen_mask.append(mask[live])
        actions = agent.act_batch(obs, mask)
        legal_random = np.argmax(np.where(mask, rng.random(mask.shape), -1.0), axis=1)
        best_box = N_KEEP_ACTIONS + np.argmax(np.where(mask[:, N_KEEP_ACTIONS:], obs[:, points], -np.inf), axis=1)
        draw = rng.random(games)
        other = np.where(draw < 0.75, legal_random, best_box)
        actions = np.where(mixed & (draw >= 0.5), other, actions)
        obs, _, terminated, truncated, info = env.step(actions)
        over |= terminated | truncated
    all_obs, all_mask = np.concatenate(seen_obs), np.concatenate(seen_mask)
    keep = np.sort(rng.choice(len(all_obs), size=min(states, len(all_obs)), replace=False))
    obs, mask = all_obs[keep], all_mask[keep]
    return {
        "obs": obs,
        "mask": mask,
        "logits": agent.logits(obs).astype(np.float32),
        "action": agent.act_batch(obs, mask).astype(np.int16),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=FIXTURE)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from agents.policy.player import SHIPPED_DIR

    arrays: dict[str, np.ndarray] = {}
    for path in sorted(SHIPPED_DIR.glob("*.npz")):
        found = record_ruleset(path.stem)
        for key, value in found.items():
            arrays[f"{path.stem}/{key}"] = value
        print(f"{path.stem}: {len(found['obs'])} states")
    meta = {"games": GAMES, "states": STATES, "seed": SEED, "made_by": "python tests/policy_fixture.py"}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out, metadata=np.array(json.dumps(meta)), **arrays)
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
