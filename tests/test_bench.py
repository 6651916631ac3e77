"""The benchmark and ``dice-poker bench``: JSON interface, seeding, exact regret."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import agents
from agents.evaluation.benchmark import benchmark, game_seeds
from agents.players.optimal import VALUE_TOLERANCE

PER_AGENT_KEYS = {
    "mean",
    "ci95",
    "median",
    "std",
    "percent_of_optimal",
    "regret_mean",
    "regret_ci95",
    "regret_keep_mean",
    "regret_box_mean",
    "upper_bonus_rate",
    "five_of_a_kind_rate",
    "box_means",
    "mistakes",
}


@pytest.fixture(scope="module")
def solution():
    from dice_poker_env import load_rules, solver

    return solver.solve(load_rules("yacht"))


def test_bench_cli_json_without_torch():
    code = (
        "import io, json, sys, contextlib\n"
        "from dice_poker_env.cli import main\n"
        "buf = io.StringIO()\n"
        "with contextlib.redirect_stdout(buf):\n"
        "    rc = main(['bench', 'yacht', '--agents', 'greedy', 'random', '--games', '30', '--seed', '5', '--json'])\n"
        "assert rc == 0, rc\n"
        "assert 'torch' not in sys.modules, 'bench imported torch'\n"
        "print(buf.getvalue())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["rules"] == "yacht"
    optimal = data["optimal_expected_score"]
    assert optimal == pytest.approx(169.773889, abs=1e-5)  # the exact solve of yacht
    assert set(data["agents"]) == {"greedy", "random"}
    for row in data["agents"].values():
        assert PER_AGENT_KEYS <= set(row)
        assert row["games"] == 30
        assert list(row["box_means"]) == [
            "ones",
            "twos",
            "threes",
            "fours",
            "fives",
            "sixes",
            "full_house",
            "four_of_a_kind",
            "little_straight",
            "big_straight",
            "choice",
            "yacht",
        ]
        assert sum(row["box_means"].values()) == pytest.approx(row["mean"])  # yacht: no bonus, the boxes are the score
        assert row["upper_bonus_rate"] is None  # yacht has no upper bonus
        assert row["percent_of_optimal"] == pytest.approx(100 * row["mean"] / optimal)
        assert row["regret_mean"] == pytest.approx(
            row["regret_keep_mean"] + row["regret_box_mean"] + row["regret_illegal_mean"]
        )
        assert row["estimated_expected_score"] == pytest.approx(optimal - row["regret_mean"])
    assert data["agents"]["greedy"]["mean"] > data["agents"]["random"]["mean"]


def test_bench_is_seeded_and_worker_independent():
    kw = dict(games=24, seed=11, solution=False)  # no solver needed here
    one = benchmark("yatzy", ["greedy", "random"], **kw)
    again = benchmark("yatzy", ["greedy", "random"], **kw)
    split = benchmark("yatzy", ["greedy", "random"], workers=2, **kw)
    for name in ("greedy", "random"):
        assert np.array_equal(one.scores[name], again.scores[name])
        assert np.array_equal(one.scores[name], split.scores[name])
    assert 0.0 <= one.data["agents"]["greedy"]["upper_bonus_rate"] <= 1.0
    assert one.data["optimal_expected_score"] is None and one.data["agents"]["greedy"]["regret_mean"] is None


def test_game_seeds_are_stable():
    assert np.array_equal(game_seeds(3, 5), game_seeds(3, 10)[:5])


def test_optimal_agent_has_zero_regret_and_matches_the_solver(solution):
    """The agent's fast float32 path is optimal within VALUE_TOLERANCE of the float64
    values; a loss within it counts as none, so no decision is a mistake."""
    result = benchmark("yacht", ["optimal"], games=400, seed=2, solution=solution).data
    row = result["agents"]["optimal"]
    assert row["mistakes"] == []  # every decision within the tolerance
    for key in ("regret_mean", "regret_keep_mean", "regret_box_mean", "regret_illegal_mean"):
        assert row[key] == pytest.approx(0.0, abs=VALUE_TOLERANCE), key
    assert abs(row["mean"] - result["optimal_expected_score"]) <= row["ci95"]


class FirstLegal:
    """Always the first legal action (on yacht: reroll everything twice, then the first open box)."""

    name = "first"

    def reset(self):
        pass

    def act(self, observation, action_mask):
        return int(np.flatnonzero(action_mask)[0])


class FirstLegalCostsGap:
    """A stand-in yacht solution: every legal action is worth 0 but the first legal one, worth ``-gap``."""

    expected_score = 100.0
    score_std = 10.0

    def __init__(self, gap):
        self.gap = gap

    def action_values(self, observation):  # a batch of observations, as the benchmark asks
        filled = np.asarray(observation["filled"])
        q = np.full((len(filled), 32 + 12), -np.inf)
        q[np.asarray(observation["rolls_left"]) > 0, :31] = 0.0  # every keep but "keep all"
        q[:, 32:][filled == 0] = 0.0  # yacht: every open box
        q[np.arange(len(q)), np.isfinite(q).argmax(axis=1)] = -self.gap
        return q


@pytest.mark.parametrize("gap", [VALUE_TOLERANCE / 2, VALUE_TOLERANCE * 3])
def test_a_loss_within_the_value_tolerance_is_no_regret(gap):
    from agents.evaluation.benchmark import play_games
    from dice_poker_env import load_rules

    part = play_games(load_rules("yacht"), FirstLegal(), [1, 2], solution=FirstLegalCostsGap(gap))
    regret = np.add(part.regret_keep, part.regret_box)
    decisions = (part.keep_decisions + part.box_decisions) / 2
    assert decisions == 12 * 3  # two rerolls and a box every turn
    if gap <= VALUE_TOLERANCE:  # optimal within the tolerance: no loss, no mistake
        assert np.all(regret == 0.0) and not part.mistakes
    else:  # every decision loses gap, but the last box (the only action left: the best one)
        assert regret == pytest.approx([gap * (decisions - 1)] * 2, rel=1e-9)
        assert sum(count for _, count, *_ in part.mistakes.values()) == 2 * (decisions - 1)


def test_batched_regret_equals_one_action_values_call_per_decision(solution):
    """The regret is valued in batches after the games; replaying each recorded game
    and asking the solver one decision at a time gives the same best actions and losses,
    whatever the batch size."""
    from agents.evaluation.benchmark import play_games
    from agents.players.greedy import GreedyAgent
    from dice_poker_env import DicePokerEnv, load_rules

    rules = load_rules("yacht")
    seeds = [int(s) for s in game_seeds(5, 12)]
    parts, records = [], []
    for batch in (1, 7, 4096):
        record: list = []
        parts.append(play_games(rules, GreedyAgent(rules), seeds, solution, record, regret_batch=batch))
        records.append(record)
    for part, record in zip(parts[1:], records[1:]):
        assert record == records[0]
        assert part.regret_keep == parts[0].regret_keep and part.regret_box == parts[0].regret_box
        assert part.mistakes == parts[0].mistakes
    env = DicePokerEnv(rules)
    for game_seed, game, keep, box in zip(seeds, records[0], parts[0].regret_keep, parts[0].regret_box):
        obs, _ = env.reset(seed=game_seed)
        losses = {"keep": 0.0, "box": 0.0}
        for move in game["moves"]:
            q = solution.action_values(obs)
            action, best, loss = move[2], move[3], move[4]
            assert best == int(np.argmax(q))
            expected = float(q[best] - q[action])
            assert loss == pytest.approx(expected if expected > VALUE_TOLERANCE else 0.0, abs=1e-4)
            losses["box" if action >= 32 else "keep"] += loss
            obs, *_ = env.step(action)
        assert env.score == game["score"]
        assert (keep, box) == pytest.approx((losses["keep"], losses["box"]), abs=1e-3)
    assert sum(parts[0].regret_keep) + sum(parts[0].regret_box) > 0  # greedy makes mistakes


class IllegalOnTurnThree:
    """Greedy until the third turn, then the illegal "keep all" (action 31): the game ends there."""

    obs_mode = "dict"

    def __init__(self, rules):
        from agents.players.greedy import GreedyAgent

        self.greedy = GreedyAgent(rules)

    def act(self, observation, action_mask):
        return 31 if int(observation["turn"]) == 2 else self.greedy.act(observation, action_mask)

    def act_batch(self, observations, action_masks):
        return np.where(np.asarray(observations["turn"]) == 2, 31, self.greedy.act_batch(observations, action_masks))


def test_an_illegal_action_loses_the_best_value_less_the_points_so_far(solution):
    """An illegal action ends the game with the points scored so far, so it loses what the best action was
    worth (the expected final score, those points included) less those points, not the whole best value."""
    from agents.evaluation.benchmark import play_games
    from dice_poker_env import DicePokerEnv, load_rules

    rules = load_rules("yacht")
    seeds = [int(s) for s in game_seeds(6, 4)]
    record: list = []
    part = play_games(rules, IllegalOnTurnThree(rules), seeds, solution, record, regret_batch=7)
    assert part.illegal == len(seeds)
    env = DicePokerEnv(rules)
    for game_seed, game, regret in zip(seeds, record, part.regret_illegal):
        obs, _ = env.reset(seed=game_seed)
        for move in game["moves"]:
            if move[2] == 31:  # the illegal decision: valued at the observation the agent saw
                break
            obs, *_ = env.step(move[2])
        else:
            raise AssertionError("the agent played no illegal action")
        so_far = env.score
        assert so_far > 0  # two turns scored: the points so far count
        best = float(np.max(solution.action_values(obs)))
        assert regret == pytest.approx(best - so_far, abs=1e-4)
        assert move[4] == pytest.approx(best - so_far, abs=1e-4)  # the recorded move's loss too


def test_a_batch_agent_is_one_by_name_and_as_built(solution):
    """One owner decides which agents play in lockstep: a name says so exactly when the agent it builds
    does; a subclass (which may keep state) and the other agents play one by one."""
    from agents.players.greedy import GreedyAgent
    from agents.players.registry import AGENT_NAMES, is_batch_agent, make_agent
    from dice_poker_env import load_rules

    rules = load_rules("yacht")
    for name in AGENT_NAMES:
        if name == "winning":  # needs the reach table: tests/test_winning.py checks it on a small ruleset
            continue
        agent = make_agent(name, rules, solution=solution)
        assert is_batch_agent(name) == is_batch_agent(agent) == (name != "random"), name
    path = Path(agents.__file__).parent / "policies" / "yacht.npz"  # a shipped policy, as a model file
    assert is_batch_agent(f"model:{path}") and is_batch_agent(make_agent(f"model:{path}", rules))
    assert not is_batch_agent("model:run/final_model.zip")

    class StatefulGreedy(GreedyAgent):
        pass

    assert not is_batch_agent(StatefulGreedy(rules)) and not is_batch_agent(None)


@pytest.mark.parametrize("rules_name", ["yacht", "yahtzee", "school_poker"])
def test_lockstep_games_are_the_single_env_games(rules_name):
    """The batch agents play all games at once with each seed's dice as the single env deals
    them: every score, box, decision, regret and mistake is the one-by-one path's."""
    from agents.evaluation.benchmark import _Partial, play_games
    from agents.players.registry import make_agent
    from dice_poker_env import load_rules, solver

    rules = load_rules(rules_name)
    solution = solver.solve(rules)
    seeds = game_seeds(9, 40)
    agents = {name: make_agent(name, rules, solution=solution) for name in ("optimal", "greedy", "trained")}
    agents["illegal"] = IllegalOnTurnThree(rules)
    for name, agent in agents.items():
        parts = [
            play_games(rules, agent, seeds, solution, lockstep=lockstep, regret_batch=50) for lockstep in (False, True)
        ]
        for field in _Partial.__dataclass_fields__:
            one, both = (getattr(part, field) for part in parts)
            if field == "box_scores":
                one, both = np.asarray(one), np.asarray(both)
                assert one.shape == both.shape and np.array_equal(one, both), (name, field)
            else:
                assert one == both, (name, field)
        if name == "illegal":
            assert parts[1].illegal == len(seeds) and sum(parts[1].regret_illegal) > 0
            assert max(parts[1].scores) < 100  # two turns played
        else:
            assert parts[1].illegal == 0


def test_a_mistakes_worst_example_names_its_game_and_move(solution):
    """``worst_example["game"]``/``["move"]`` index the recorded games (the grade report links to them), in
    games settled in several batches and in games played in two halves and merged."""
    from agents.evaluation.benchmark import _Partial, play_games
    from agents.players.greedy import GreedyAgent
    from dice_poker_env import load_rules

    rules = load_rules("yacht")
    seeds = game_seeds(4, 30)
    record: list = []
    whole = play_games(rules, GreedyAgent(rules), seeds, solution, record, regret_batch=50)
    assert len(whole.mistakes) > 3
    for label, (_, _, _, worst, example) in whole.mistakes.items():
        dice, rolls_left, action, best, loss, _, _ = record[example["game"]]["moves"][example["move"]]
        assert dice == "".join(map(str, example["dice"])) and rolls_left == example["rolls_left"], label
        assert (action, best, loss) == (example["taken_action"], example["best_action"], example["loss"]), label
        assert loss == pytest.approx(worst, abs=1e-4)  # the record rounds to 4 decimals
    halves = _Partial()
    for part in (seeds[:13], seeds[13:]):
        halves.merge(play_games(rules, GreedyAgent(rules), part, solution, regret_batch=50))
    assert halves.mistakes == whole.mistakes


def test_greedy_regret_agrees_with_its_measured_gap(solution):
    result = benchmark("yacht", ["greedy"], games=400, seed=3, solution=solution).data
    row = result["agents"]["greedy"]
    gap = result["optimal_expected_score"] - row["mean"]
    assert row["regret_mean"] > 10  # greedy is far from optimal
    assert abs(row["regret_mean"] - gap) <= row["regret_ci95"] + row["ci95"]
    assert row["regret_mean"] == pytest.approx(row["regret_keep_mean"] + row["regret_box_mean"])
    assert row["mistakes"] and row["mistakes"][0]["loss_per_game"] > 0
    assert row["regret_ci95"] < row["ci95"]  # the point of the regret estimate


def test_bench_cli_writes_results_and_plot(tmp_path):
    pytest.importorskip("matplotlib")
    from dice_poker_env.cli import main

    assert main(["bench", "yacht", "--agents", "random", "--games", "20", "--out", str(tmp_path), "--no-regret"]) == 0
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["agents"]["random"]["games"] == 20
    assert data["agents"]["random"]["regret_mean"] is None  # --no-regret: not computed, not zero
    assert (tmp_path / "score_distribution.png").stat().st_size > 1000


def test_agent_names_are_distinct_and_recognisable():
    from agents.evaluation.benchmark import agent_names

    assert agent_names(
        ["optimal", "model:runs/a/final_model.zip", "model:runs/b/final_model.zip", "model:runs/b/best_model.zip"]
    ) == ["optimal", "a/final_model", "b/final_model", "best_model"]
    assert agent_names(["greedy", "model:x/greedy.zip"]) == ["greedy", "x/greedy"]  # never shadows an agent
    assert agent_names([("model", "model:m.zip"), "model:runs/model.zip"]) == ["model", "runs/model"]
    # a policy file's stem too; a .zip and a .npz of one stem in one folder keep their suffixes
    assert agent_names(["model:a/final_model.npz", "model:b/final_model.zip"]) == ["a/final_model", "b/final_model"]
    assert agent_names(["model:a/final_model.npz", "model:a/final_model.zip"]) == ["final_model.npz", "final_model.zip"]
    for twice in (["greedy", "greedy"], ["model:m.zip", "model:./m.zip"], [("a", "greedy"), ("a", "random")]):
        with pytest.raises(ValueError, match="distinct names"):
            agent_names(twice)


def test_one_agent_alone_is_benchmarked_as_a_list_of_one(solution):
    """``benchmark("yacht", "optimal")`` (one name, not a list) was read letter by letter: "unknown agent 'o'", and
    "greedy" was "agents must have distinct names; given more than once: e". One name or object is one agent."""
    from agents.players.registry import make_agent

    alone = benchmark("yacht", "optimal", games=3, seed=0, solution=solution)
    assert list(alone.data["agents"]) == ["optimal"]
    assert (
        alone.scores["optimal"].tolist()
        == benchmark("yacht", ["optimal"], games=3, solution=solution).scores["optimal"].tolist()
    )
    assert list(benchmark("yacht", "random", games=2, solution=solution).data["agents"]) == ["random"]
    greedy = make_agent("greedy", "yacht")
    assert list(benchmark("yacht", greedy, games=2, solution=solution).data["agents"]) == [greedy.name]


@pytest.fixture(scope="module")
def two_models(tmp_path_factory):
    """Two untrained yacht models saved as run_a/final_model.zip and run_b/final_model.zip."""
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO

    from agents.players.sb3_agent import model_metadata, save_model
    from dice_poker_env import load_rules
    from dice_poker_env.envs.single import DicePokerEnv

    rules = load_rules("yacht")
    root = tmp_path_factory.mktemp("models")
    paths = []
    for seed, run in enumerate(("run_a", "run_b")):
        model = MaskablePPO(
            "MlpPolicy", DicePokerEnv(rules, obs_mode="flat"), n_steps=64, seed=seed, policy_kwargs=dict(net_arch=[8])
        )
        paths.append(save_model(model, root / run / "final_model.zip", model_metadata(rules, "flat", "maskable_ppo")))
    return paths


def test_bench_reports_every_model_under_its_own_name(two_models, capsys):
    from dice_poker_env.cli import main

    a, b = two_models
    assert (
        main(
            [
                "bench",
                "yacht",
                "--agents",
                "greedy",
                f"model:{a}",
                f"model:{b}",
                "--games",
                "3",
                "--no-regret",
                "--json",
            ]
        )
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert list(data["agents"]) == ["greedy", "run_a/final_model", "run_b/final_model"]
    assert all(row["games"] == 3 for row in data["agents"].values())


def run_bench(args, capsys):
    from dice_poker_env.cli import main

    code = main(["bench", "yacht", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    "args, message",
    [
        (["--seed", "-1"], "--seed must be >= 0, got -1"),
        (["--games", "0"], "--games must be at least 1"),
        (["--top-mistakes", "-2"], "--top-mistakes must be >= 0, got -2"),
        (["--agents", "greedy", "wizard"], "unknown agent 'wizard'"),
        (["--agents", "greedy", "greedy"], "given more than once: greedy"),
        (["--overwrite"], "--overwrite goes with --out DIR"),
    ],
)
def test_bench_bad_arguments_are_one_line_errors(args, message, capsys):
    code, out, err = run_bench(["--agents", "greedy", "--games", "5", *args], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("dice-poker bench: error: ") and message in err
    assert "done" not in err  # refused before any game was played


def test_bench_out_is_checked_before_any_game(tmp_path, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    code, out, err = run_bench(["--agents", "greedy", "--games", "5", "--out", str(blocker / "results")], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "cannot write there" in err and "done" not in err
    code, out, err = run_bench(["--agents", "greedy", "--games", "5", "--out", str(blocker)], capsys)
    assert code == 2 and "exists and is not a folder" in err
    assert blocker.read_text() == "not a folder"


def test_bench_without_rich_refuses_the_table_before_any_game(tmp_path, capsys, monkeypatch):
    """The table needs rich (the cli extra): refused up front, not after the games with a traceback and the
    ``--out`` results unwritten; ``--json`` needs no rich."""
    monkeypatch.setitem(sys.modules, "rich", None)  # as if it were not installed
    out_dir = tmp_path / "results"
    code, out, err = run_bench(["--agents", "greedy", "--games", "5", "--out", str(out_dir)], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1 and "done" not in err
    assert "needs rich" in err and "dice-poker-env[cli]" in err and "--json" in err
    assert not out_dir.exists()
    code, out, err = run_bench(["--agents", "greedy", "--games", "5", "--json", "--out", str(out_dir)], capsys)
    assert code == 0, err
    assert json.loads((out_dir / "results.json").read_text()) == json.loads(out)


def test_bench_out_refuses_earlier_results_without_overwrite(tmp_path, capsys):
    (tmp_path / "results.json").write_text('{"earlier": true}\n')
    code, out, err = run_bench(["--agents", "random", "--games", "4", "--no-regret", "--out", str(tmp_path)], capsys)
    assert code == 2 and "holds results already (results.json)" in err and "--overwrite" in err
    assert json.loads((tmp_path / "results.json").read_text()) == {"earlier": True}
    code, out, err = run_bench(
        ["--agents", "random", "--games", "4", "--no-regret", "--json", "--out", str(tmp_path), "--overwrite"], capsys
    )
    assert code == 0, err
    assert json.loads((tmp_path / "results.json").read_text()) == json.loads(out)


def test_bench_failed_nested_out_leaves_no_folder(tmp_path, capsys):
    out_dir = tmp_path / "new" / "deeper"
    code, _, err = run_bench(["--agents", "greedy", "wizard", "--games", "3", "--out", str(out_dir)], capsys)
    assert code == 2 and "unknown agent" in err
    assert not (tmp_path / "new").exists()  # the folders made for the check are gone again


@pytest.mark.parametrize("as_json", [True, False])
def test_bench_results_reach_stdout_when_writing_fails_at_the_end(as_json, tmp_path, capsys, monkeypatch):
    from agents.commands import bench

    blocker = tmp_path / "a_file"
    blocker.write_text("")
    monkeypatch.setattr(bench, "check_out_dir", lambda out, overwrite: [])  # the folder breaks after the check
    code, out, err = run_bench(
        [
            "--agents",
            "random",
            "--games",
            "4",
            "--no-regret",
            "--out",
            str(blocker / "x"),
            *(["--json"] if as_json else []),
        ],
        capsys,
    )
    assert code == 1
    assert "could not write the results" in err and "printed above" in err and "Traceback" not in err
    if as_json:
        assert json.loads(out)["agents"]["random"]["games"] == 4
    else:
        assert "random" in out and "mean ± 95% CI" in out


def test_a_refused_solve_means_no_optimal_reference(monkeypatch):
    """A ruleset the solver refuses (a MemoryError such as SolveTooLargeError) is benchmarked in raw scores."""
    import dice_poker_env.solver as solver
    from agents.evaluation.benchmark import SolutionUnavailableWarning

    def too_large(rules, *args, **kwargs):
        raise MemoryError("the solve needs about 80 GB, 16 GB are available")

    monkeypatch.setattr(solver, "solve", too_large)
    with pytest.warns(SolutionUnavailableWarning, match="80 GB"):
        data = benchmark("yacht", ["greedy"], games=3).data
    assert data["optimal_expected_score"] is None and data["agents"]["greedy"]["regret_mean"] is None
    with pytest.warns(SolutionUnavailableWarning), pytest.raises(ValueError, match="optimal agent needs"):
        benchmark("yacht", ["optimal", "greedy"], games=3)


def test_bench_benchmark_script_times_both_paths_and_they_agree():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_benchmark.py"
    spec = importlib.util.spec_from_file_location("bench_benchmark", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result = module.main(["--games", "30", "--agents", "optimal", "greedy", "--json"])
    assert set(result["agents"]) == {"optimal", "greedy"}
    for row in result["agents"].values():
        assert row["one_by_one_seconds"] > 0 and row["lockstep_seconds"] > 0 and row["mean_score"] > 50


def _bench_benchmark_script():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_benchmark.py"
    spec = importlib.util.spec_from_file_location("bench_benchmark", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_benchmark_script_starts_each_path_from_an_empty_turn_cache(monkeypatch):
    # the lockstep path, timed second, looked up the turn tables the one-by-one path had just solved
    from agents.evaluation import benchmark as bench_module

    module = _bench_benchmark_script()
    real, cached = bench_module.play_games, []

    def spy(rules, agent, seeds, solution, **kwargs):
        cached.append((solution._used, solution._act_used))
        return real(rules, agent, seeds, solution, **kwargs)

    monkeypatch.setattr(bench_module, "play_games", spy)
    result = module.main(["--games", "5", "--agents", "optimal", "--json"])
    assert cached == [(0, 0), (0, 0)] and result["turn_cache"] == "emptied before each path"


def test_bench_benchmark_script_refuses_paths_whose_games_differ_with_the_same_mean(monkeypatch):
    # only the mean score was compared: two different games with the same total passed
    from agents.evaluation import benchmark as bench_module

    module = _bench_benchmark_script()
    real = bench_module.play_games

    def swapped(rules, agent, seeds, solution, **kwargs):
        part = real(rules, agent, seeds, solution, **kwargs)
        if kwargs["lockstep"]:
            part.scores[0], part.scores[1] = part.scores[0] + 1, part.scores[1] - 1
        return part

    monkeypatch.setattr(bench_module, "play_games", swapped)
    with pytest.raises(SystemExit, match="disagree in game 0 \\(score"):
        module.main(["--games", "4", "--agents", "greedy", "--json"])

    def regret_moved(rules, agent, seeds, solution, **kwargs):
        part = real(rules, agent, seeds, solution, **kwargs)
        if kwargs["lockstep"]:
            part.regret_box[1] += 0.5
        return part

    monkeypatch.setattr(bench_module, "play_games", regret_moved)
    with pytest.raises(SystemExit, match="disagree in game 1 \\(regret_box"):
        module.main(["--games", "4", "--agents", "greedy", "--json"])
