"""Head-to-head matches (agents/evaluation/match.py, dice-poker match, benchmarks/run_matches.py).

The lockstep driver must play exactly the games the PettingZoo AEC env plays deal by deal
(agents.course.duplicate.play_game): same dice, same observations (checked through agents whose
every choice depends on every byte of what they see), same scores.
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

from agents.course.duplicate import deal_faces, play_game
from agents.evaluation.match import games_needed, match, play_deals, seat_seed, summarize, wilson
from agents.players.greedy import GreedyAgent
from agents.players.registry import make_agent
from dice_poker_env.engine.state import BatchState
from dice_poker_env.engine.tables import compile_rules
from dice_poker_env.multi import raw_env
from dice_poker_env.multi.observations import encode, encode_batch
from dice_poker_env.players import RandomAgent
from dice_poker_env.rules import load_rules

pytest.importorskip("pettingzoo")  # the reference games are dice_poker_env.multi's AEC env

ROOT = Path(__file__).resolve().parents[1]
YACHT = load_rules("yacht")


def _digest(observation) -> int:
    """A checksum of everything an observation holds (keys, dtypes, shapes, bytes)."""
    if isinstance(observation, dict):
        parts = [f"{k}:{np.asarray(observation[k]).dtype}:{np.shape(observation[k])}" for k in sorted(observation)]
        data = b"".join(np.ascontiguousarray(observation[k]).tobytes() for k in sorted(observation))
    else:
        parts, data = [f"{observation.dtype}:{observation.shape}"], np.ascontiguousarray(observation).tobytes()
    return zlib.crc32("|".join(parts).encode() + data)


class Fingerprint:
    """Plays the legal action that a checksum of its whole observation picks: any difference in what it
    sees (an opponent's scorecard included) changes the game. ``act_batch`` does the same row by row."""

    def __init__(self, obs_mode: str = "dict", salt: int = 0):
        self.obs_mode, self.salt, self.name = obs_mode, salt, f"fingerprint[{obs_mode}]"

    def reset(self) -> None:
        pass

    def act(self, observation, action_mask) -> int:
        legal = np.flatnonzero(action_mask)
        return int(legal[(_digest(observation) + self.salt) % len(legal)])

    def act_batch(self, observations, action_masks) -> np.ndarray:
        rows = range(len(action_masks))
        if isinstance(observations, dict):
            picked = [self.act({k: v[i] for k, v in observations.items()}, action_masks[i]) for i in rows]
        else:
            picked = [self.act(observations[i], action_masks[i]) for i in rows]
        return np.array(picked, dtype=np.int64)


def reference(rules, a, b, seed: int, deals: int) -> np.ndarray:
    """The deals played one by one through the AEC env (duplicate.play_game), seats as play_deals seats them."""
    turns = compile_rules(rules).turns
    out = np.empty((deals, 2, 2), dtype=np.int64)
    for d in range(deals):
        faces = deal_faces(seed, d, 2, turns)
        for swap in (0, 1):
            seats = [a, b] if swap == 0 else [b, a]
            for seat, agent in enumerate(seats):
                if callable(getattr(agent, "seed", None)):
                    agent.seed(seat_seed(seed, d, seat))
            record = play_game(rules, seats, faces)
            assert not record.forfeits
            out[d, swap] = record.scores
    return out


@pytest.mark.parametrize(
    ("rules", "pair", "lockstep"),
    [
        ("yacht", ("optimal", "greedy"), None),  # both batch agents: lockstep
        ("yahtzee", ("fingerprint", "greedy"), True),  # act_batch on the multi-player dict observation
        ("yahtzee", ("fingerprint_flat", "fingerprint"), True),  # the single env's flat vector, batched
        ("school_poker", ("greedy", "random"), None),  # a seeded agent without batches: game by game
        ("yahtzee", ("fingerprint", "random"), None),
    ],
)
def test_lockstep_plays_the_games_of_the_aec_env(rules, pair, lockstep):
    rules = load_rules(rules)
    made = {
        "fingerprint": lambda: Fingerprint("dict"),
        "fingerprint_flat": lambda: Fingerprint("flat", salt=7),
        "random": lambda: RandomAgent(3),
    }
    a, b = (made[name]() if name in made else make_agent(name, rules) for name in pair)
    got = play_deals(rules, [a, b], 11, 3, lockstep=lockstep)
    assert np.array_equal(got, reference(rules, a, b, 11, 3))
    assert len(np.unique(got)) > 4  # real games, not a degenerate path


@pytest.mark.parametrize("obs_mode", ["dict", "flat"])
def test_encode_batch_rows_are_the_aec_observations(obs_mode):
    tables = compile_rules(load_rules("yahtzee"))
    env = raw_env("yahtzee", 2)
    env.reset(seed=4)
    rng = np.random.default_rng(0)
    snapshots = []
    while not env.game_over:
        snapshots.append(list(env.games))
        mask = env.action_masks()
        env.step(int(rng.choice(np.flatnonzero(mask))))
    batch = [BatchState.of_games([games[s] for games in snapshots]) for s in (0, 1)]
    for seat in (0, 1):
        got = encode_batch(tables, batch[seat], [batch[1 - seat]], obs_mode)
        for i, games in enumerate(snapshots):
            want = encode(tables, games, seat, obs_mode)
            row = {k: v[i] for k, v in got.items()} if obs_mode == "dict" else got[i]
            assert _digest(row) == _digest(want)


def test_an_agent_against_itself_wins_exactly_half_of_every_deal():
    for pair in ((GreedyAgent(YACHT), GreedyAgent(YACHT)), (RandomAgent(1), RandomAgent(2))):
        scores = play_deals(YACHT, list(pair), 5, 12)
        row = summarize(scores)
        assert row["win_rate"] == 0.5 and row["split_deals"] == 1.0
        low, high = row["win_rate_ci95"]  # every deal split: Wilson's interval, not a zero-width one
        assert low < 0.5 < high and row["win_rate_ci95_method"].startswith("Wilson")
        a, b = scores[:, [0, 1], [0, 1]], scores[:, [0, 1], [1, 0]]
        per_deal = ((np.sign(a - b) + 1) / 2).sum(axis=1)
        assert np.all(per_deal == 1.0)  # a win and a loss, or two ties, in every pair
        assert row["wins"] == row["losses"] > 0


def test_optimal_against_optimal_and_against_random():
    same = match(YACHT, "optimal", "optimal", games=200, seed=1)
    low, high = same["win_rate_ci95"]
    assert low <= 0.5 <= high and same["win_rate"] == 0.5 and same["lockstep"]
    strong = match(YACHT, "optimal", "random", games=20, seed=1)
    assert strong["win_rate"] >= 0.9 and strong["win_rate_ci95"][0] > 0.7 and not strong["lockstep"]
    assert strong["mean_score"][0] > strong["mean_score"][1] + 50


def test_a_match_won_or_lost_in_every_deal_has_an_interval_with_a_width():
    """n deals all lost: the normal interval is [0, 0]; Wilson's upper end is z**2 / (n + z**2)."""
    z = 1.959963984540054
    lost = np.array([[[5, 10], [10, 5]]] * 20)  # A loses in both seats, 20 deals
    row = summarize(lost)
    assert row["win_rate"] == 0.0 and row["win_rate_ci95"][0] == 0.0
    assert row["win_rate_ci95"][1] == pytest.approx(z * z / (20 + z * z))
    assert row["win_rate_ci95_method"].startswith("Wilson") and row["win_rate_ci95_half_width"] > 0.1
    won = summarize(lost[:, :, ::-1])
    assert won["win_rate"] == 1.0 and won["win_rate_ci95"] == pytest.approx([20 / (20 + z * z), 1.0])
    assert wilson(0.3, 100) == pytest.approx((0.2189, 0.3958), abs=1e-4)  # the textbook value


def test_summarize_counts_and_interval():
    # three deals: A wins both games; A wins one, loses one; A ties one, loses one
    scores = np.array(
        [
            [[10, 5], [5, 10]],  # game 0: A seat 0 scores 10 vs 5; game 1: A seat 1 scores 10 vs 5
            [[10, 5], [10, 5]],  # game 1: B in seat 0 wins
            [[7, 7], [9, 3]],  # a tie, then B wins
        ]
    )
    row = summarize(scores)
    assert (row["wins"], row["ties"], row["losses"], row["games"], row["deals"]) == (3, 1, 2, 6, 3)
    per_deal = np.array([1.0, 0.5, 0.25])
    assert row["win_rate"] == pytest.approx(per_deal.mean())
    half = 1.959963984540054 * per_deal.std(ddof=1) / np.sqrt(3)
    assert row["win_rate_ci95_half_width"] == pytest.approx(half)
    assert row["win_rate_ci95"] == pytest.approx([per_deal.mean() - half, min(1.0, per_deal.mean() + half)])
    assert row["win_rate_ci95_method"] == "normal over deals"
    assert row["win_rate_seat"] == pytest.approx([(1 + 1 + 0.5) / 3, (1 + 0 + 0) / 3])
    assert row["games_for_half_width_1pp"] == games_needed(per_deal.std(ddof=1), 0.01)


def test_the_margin_is_a_s_points_minus_b_s_over_the_deals():
    """``margin_mean``: A's final total minus B's, A's seat read from each game (positive when A scores more)."""
    scores = np.array([[[120, 100], [90, 130]], [[80, 95], [100, 100]]])  # A: 120, 130, 80, 100; B: 100, 90, 95, 100
    row = summarize(scores)
    assert row["margin_mean"] == pytest.approx((20 + 40 - 15 + 0) / 4)
    assert row["mean_score"] == pytest.approx([107.5, 96.25])
    per_deal = np.array([30.0, -7.5])
    assert row["margin_ci95_half_width"] == pytest.approx(1.959963984540054 * per_deal.std(ddof=1) / np.sqrt(2))


def test_seeded_agents_play_the_same_deals_when_a_match_continues_in_blocks():
    """Game by game, each seat's agent is seeded by the deal's own index (``first + d``): deals played as a later
    block are the same games as in one long run."""
    whole = play_deals(YACHT, [RandomAgent(1), RandomAgent(2)], 3, 4)
    tail = play_deals(YACHT, [RandomAgent(1), RandomAgent(2)], 3, 2, first=2)
    assert np.array_equal(tail, whole[2:])


def test_a_match_is_deterministic_and_auto_mode_stops_at_the_target(monkeypatch):
    import agents.evaluation.match as module

    monkeypatch.setattr(module, "AUTO_PILOT_GAMES", 200)
    first = match(YACHT, "greedy", "optimal", games=400, seed=9)
    again = match(YACHT, "greedy", "optimal", games=400, seed=9)
    keys = ("win_rate", "wins", "ties", "losses", "mean_score", "win_rate_ci95")
    assert {k: first[k] for k in keys} == {k: again[k] for k in keys}
    other = match(YACHT, "greedy", "optimal", games=400, seed=10)
    assert other["mean_score"] != first["mean_score"]
    auto = match(YACHT, "greedy", "optimal", games="auto", target_ci=0.03, seed=9)
    assert auto["win_rate_ci95_half_width"] <= 0.03 and auto["pilot"]["games"] == 200 < auto["games"]
    assert auto["target_reached"] is True and fixed_games_target_missed()
    fixed = match(YACHT, "greedy", "optimal", games=auto["games"], seed=9)  # the same deals, in other blocks
    assert {k: fixed[k] for k in keys} == {k: auto[k] for k in keys}


def test_auto_mode_when_every_deal_is_won_plays_the_deals_wilson_needs(monkeypatch):
    """No spread to extrapolate from: the next block is the deals Wilson's interval needs."""
    import agents.evaluation.match as module

    played = []

    def won(rules, agents, seed, deals, first=0, **kwargs):
        played.append(deals)
        return np.array([[[10, 5], [5, 10]]] * deals)

    monkeypatch.setattr(module, "play_deals", won)
    monkeypatch.setattr(module, "AUTO_PILOT_GAMES", 200)
    row = match(YACHT, "greedy", "greedy", games="auto", target_ci=0.01, seed=0)
    assert played[0] == 100 and len(played) == 2 and row["target_reached"] is True
    assert row["deals"] == math.ceil(1.959963984540054**2 * 0.99 / 0.01) and row["win_rate_ci95_half_width"] <= 0.01


def fixed_games_target_missed():
    """A cap below what the target needs: the result and its text say the target was missed."""
    from agents.evaluation.match import render

    capped = match(YACHT, "optimal", "greedy", games="auto", target_ci=0.01, max_games=100, seed=0)
    assert capped["games"] == 100 and capped["target_reached"] is False
    assert "short of the target 1.00: --max-games stopped the match first" in render(capped)
    one = render(match(YACHT, "optimal", "greedy", games=2, seed=0))
    assert "(1 deal, seats swapped)" in one and "no interval from one deal" in one and "nan" not in one
    return True


class Cheater:
    name = "cheater"

    def act(self, observation, action_mask):
        return 31  # keep all five: never legal


def test_an_illegal_action_stops_the_match_naming_the_agent():
    with pytest.raises(ValueError, match="agent cheater chose an illegal action in deal 0.*31"):
        play_deals(YACHT, [GreedyAgent(YACHT), Cheater()], 0, 1, names=["greedy", "cheater"])


def cli(args, capsys):
    from agents.commands.match import main

    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_json(tmp_path, capsys):
    out_file = tmp_path / "m.json"
    code, out, err = cli(
        ["yacht", "--agents", "optimal", "greedy", "--games", "40", "--json", "--out", str(out_file)], capsys
    )
    assert code == 0, err
    assert "plays 40 games" in err
    data = json.loads(out)
    for key in (
        "win_rate",
        "win_rate_ci95",
        "games",
        "deals",
        "ties",
        "agents",
        "rules",
        "seed",
        "command",
        "library_version",
    ):
        assert key in data, key
    assert data["games"] == 40 and data["deals"] == 20 and data["agents"] == ["optimal", "greedy"]
    assert data["command"].startswith("dice-poker match yacht --agents optimal greedy --games 40")
    assert json.loads(out_file.read_text())["win_rate"] == data["win_rate"]
    code, out, _ = cli(["yacht", "--agents", "greedy", "greedy", "--games", "4", "--quiet"], capsys)
    assert code == 0 and "win rate of greedy" in out and "50.00%" in out
    # an earlier file is kept, refused before any game; --overwrite replaces it
    before = out_file.read_bytes()
    code, out, err = cli(["yacht", "--agents", "greedy", "greedy", "--games", "4", "--out", str(out_file)], capsys)
    assert code == 2 and "exists; choose another name or pass --overwrite" in err and "plays" not in err
    assert out_file.read_bytes() == before
    code, out, err = cli(
        ["yacht", "--agents", "greedy", "greedy", "--games", "4", "--quiet", "--out", str(out_file), "--overwrite"],
        capsys,
    )
    assert code == 0 and json.loads(out_file.read_text())["games"] == 4


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--games", "3"], "even number"),
        (["--games", "0"], "even number"),
        (["--games", "many"], "--games must be"),
        (["--games", "auto"], "--target-ci"),
        (["--games", "4", "--target-ci", "0.01"], "--games auto"),
        (["--games", "auto", "--target-ci", "2"], "half-width"),
        (["--games", "auto", "--target-ci", "0"], "--target-ci must be a half-width in (0, 0.5)"),
        (["--games", "auto", "--target-ci", "0.01", "--max-games", "2"], "--max-games must be at least 4"),
        (["--seed", "-1"], "seed"),
        (["--out", "/no/such/folder/m.json"], "--out /no/such/folder/m.json: the folder /no/such/folder does not"),
        (["--out", "."], "--out .: is a folder; name a file"),
    ],
)
def test_cli_bad_input_is_one_line(args, message, capsys):
    code, _, err = cli(["yacht", "--agents", "greedy", "greedy", "--quiet", *args], capsys)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_cli_an_empty_out_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as stop:
        cli(["yacht", "--agents", "greedy", "greedy", "--out", ""], capsys)
    assert stop.value.code == 2 and "argument --out: must not be empty" in capsys.readouterr().err


def test_cli_bad_agent_or_ruleset(capsys):
    code, _, err = cli(["yacht", "--agents", "greedy", "no_such_agent", "--games", "2"], capsys)
    assert code == 2 and "unknown agent 'no_such_agent'" in err and len(err.strip().splitlines()) == 1
    code, _, err = cli(["no_such_rules", "--agents", "greedy", "greedy"], capsys)
    assert code == 2 and "no_such_rules" in err


def test_run_matches_saves_results_and_skips_missing_agents(tmp_path, monkeypatch, capsys):
    spec = importlib.util.spec_from_file_location("benchmarks_run_matches", ROOT / "benchmarks" / "run_matches.py")
    driver = importlib.util.module_from_spec(spec)
    sys.modules["benchmarks_run_matches"] = driver  # dataclasses look their module up there
    spec.loader.exec_module(driver)
    monkeypatch.setattr(driver, "RESULTS", tmp_path)
    monkeypatch.setattr(driver, "ROOT", tmp_path)
    monkeypatch.setattr(
        driver,
        "MATCHUPS",
        (driver.Matchup("yacht", "greedy", "random", games=20), driver.Matchup("yacht", "nobody", "optimal")),
    )
    assert driver.main([]) == 0
    out = capsys.readouterr().out
    assert "yacht: nobody vs optimal: skipped, the agent does not exist yet" in out
    saved = json.loads((tmp_path / "match_yacht_greedy_vs_random.json").read_text())
    assert saved["games"] == 20 and saved["command"].startswith(
        "dice-poker match yacht --agents greedy random --games 20"
    )
    assert driver.main([]) == 0 and "already saved" in capsys.readouterr().out


def test_dice_poker_match_runs_through_the_command_line(monkeypatch, capsys):
    """As installed (pyproject's entry point ``match = agents.commands.match``): ``dice-poker match``."""
    import importlib.metadata

    from dice_poker_env import cli

    found = [importlib.metadata.EntryPoint("match", "agents.commands.match", cli.ENTRY_POINT_GROUP)]
    monkeypatch.setattr(cli, "plugin_entry_points", lambda: found)
    assert cli.main(["match", "yacht", "--agents", "greedy", "random", "--games", "4", "--json", "--quiet"]) == 0
    assert json.loads(capsys.readouterr().out)["games"] == 4
    assert cli.main(["match", "yacht", "--agents", "greedy", "random", "--games", "5"]) == 2
    assert "dice-poker match: error: games must be an even number" in capsys.readouterr().err


def test_a_model_of_another_table_size_is_refused_in_one_line(tmp_path, capsys):
    """A reader of a three-player table's observation in a match, a two-player policy at a tournament's tables
    of three: refused before any game, as `dice-poker play` refuses them (the match failed on its first
    observation with the model library's shape message; the tournament forfeited every game, "ok")."""
    from dice_poker_env import load_rules
    from dice_poker_env.engine.tables import compile_rules
    from dice_poker_env.multi.observations import multi_observation_space

    width = multi_observation_space(compile_rules(load_rules("yacht")), 3, "flat").shape[0]
    (tmp_path / "seat3.py").write_text(
        "import gymnasium as gym\nimport numpy as np\n\n\nclass Seat3:\n    obs_mode = 'flat'\n"
        f"    observation_space = gym.spaces.Box(0.0, 1.0, ({width},), np.float32)\n\n"
        "    def act(self, observation, action_mask):\n        return int(np.flatnonzero(action_mask)[0])\n"
    )
    code, _, err = cli(["yacht", "--agents", f"{tmp_path / 'seat3.py'}:Seat3", "greedy", "--games", "2"], capsys)
    assert code == 2 and "reads a 3-player table's flat observation" in err and len(err.strip().splitlines()) == 1

    pytest.importorskip("torch")
    from agents.course.tournament import tournament
    from agents.policy.heads import PolicyHeads, PolicyOptions
    from agents.policy.player import save_policy
    from agents.training.actor_critic import ActorCritic

    yacht = load_rules("yacht")
    two = ActorCritic(PolicyHeads(yacht, PolicyOptions(players=2)), [8]).export()
    metadata = {"rules": "yacht", "rules_fingerprint": yacht.fingerprint, "activation": "tanh", "features": True}
    path = save_policy(tmp_path / "two", two, {**metadata, "players": 2})
    with pytest.raises(ValueError, match="reads a 2-player table's flat observation.*tables of 3"):
        tournament([f"model:{path}"], "yacht", players=3, games=1, bootstrap=0, isolated=False)
    # a round-robin seats groups of `players` alone: five agents at --players 2 meet two by two, where Swiss
    # rounds would seat them 3 + 2 (it was refused: "this table has 3 players (tables of 3 in this tournament)")
    entries = [f"model:{path}", "random", "trained"]
    result = tournament(entries, "yacht", players=2, games=1, seed=1, bootstrap=0, isolated=False)
    games = {row["agent"]: row["games"] for row in result["standings"]}
    assert games[f"model:{path}"] == 8  # four opponents, one deal each at both rotations
