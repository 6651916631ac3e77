"""The benchmark protocol (docs/benchmark.md): the fixed evaluation set, the luck-free metric and
``dice-poker evaluate``."""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from agents.evaluation.protocol import (
    EVAL_GAMES,
    EVAL_SEED_BASE,
    TRAIN_SEED_LIMIT,
    check_training_seed,
    eval_seeds,
    evaluate,
    policy_track,
)

RULES = "yacht"  # the fastest ruleset to solve and play
GAMES = 300


def test_optimal_is_exactly_100_percent_luck_free():
    result = evaluate(RULES, "optimal", games=GAMES)
    assert result["regret_mean"] == 0.0
    assert result["luck_free_percent"] == 100.0
    assert result["luck_free_percent_ci95"] == 0.0
    assert result["track"] == "solver"


def test_same_agent_twice_gives_identical_numbers():
    first = evaluate(RULES, "greedy", games=GAMES)
    second = evaluate(RULES, "greedy", games=GAMES)
    assert first == second
    assert 0.0 < first["luck_free_percent"] < 100.0  # greedy loses points: the metric can move
    assert first["track"] == "rules"


def test_every_agent_plays_the_same_games():
    """A prefix of the set is the start of the whole set: the optimal agent's scores agree game by game."""
    from agents.evaluation.benchmark import load_solution, play_games
    from agents.players.optimal import OptimalAgent
    from dice_poker_env.rules import load_rules

    rules = load_rules(RULES)
    solution = load_solution(rules)
    short = play_games(rules, OptimalAgent(solution), eval_seeds(20).tolist())
    longer = play_games(rules, OptimalAgent(solution), eval_seeds(40).tolist())
    assert longer.scores[:20] == short.scores


def test_evaluation_set_is_disjoint_from_training_seeds():
    seeds = eval_seeds()
    assert len(seeds) == EVAL_GAMES and len(set(seeds.tolist())) == EVAL_GAMES
    # train.py derives env seeds up to seed + a few million (its periodic evaluation and benchmark games)
    assert seeds.min() == EVAL_SEED_BASE > TRAIN_SEED_LIMIT + 10**9
    check_training_seed(0)
    check_training_seed(TRAIN_SEED_LIMIT - 1)
    for seed in (TRAIN_SEED_LIMIT, int(seeds[0]), -1):
        with pytest.raises(ValueError, match="evaluation set"):
            check_training_seed(seed)


def test_train_refuses_a_seed_in_the_evaluation_range():
    import train

    with pytest.raises(ValueError, match="evaluation set"):
        train.make_config({"algo": "batched_ppo"}, [f"seed={EVAL_SEED_BASE + 5}"])
    assert train.make_config({"algo": "batched_ppo"}, ["seed=1000"]).seed == 1000


@pytest.mark.parametrize("games", [0, EVAL_GAMES + 1, 2.5, True])
def test_bad_game_counts_are_refused(games):
    with pytest.raises(ValueError, match="games must be"):
        eval_seeds(games)


@pytest.mark.parametrize(
    ("metadata", "track"),
    [
        ({"algorithm": "batched_ppo", "features": False, "box_points": 0.0, "keep_points": False}, "raw"),
        ({"algorithm": "batched_ppo", "features": True}, "rules"),
        ({"algorithm": "batched_ppo", "features": False, "keep_points_bonus": "par"}, "rules"),
        ({"algorithm": "batched_ppo", "bonus_shaping": 1.0}, "rules"),
        ({"algorithm": "bc", "features": True}, "solver"),  # a policy file from before dataset_agent
        ({"algorithm": "bc", "dataset_agent": "optimal"}, "solver"),
        ({"algorithm": "bc", "dataset_agent": "greedy"}, "rules"),
        ({"algorithm": "bc", "dataset_agent": "trained"}, "rules"),  # the shipped policy's track
        ({"algorithm": "bc", "dataset_agent": "random"}, "raw"),
        # an algorithm's declared TRACK raises the track, never lowers it
        ({"algorithm": "my_algo", "features": False, "track": "solver"}, "solver"),
        ({"algorithm": "my_algo", "features": True, "track": "raw"}, "rules"),
        ({"algorithm": "bc", "dataset_agent": "optimal", "track": "rules"}, "solver"),
    ],
)
def test_policy_track_from_metadata(metadata, track):
    assert policy_track(metadata) == track


def test_a_policy_declaring_an_unknown_track_is_refused():
    with pytest.raises(ValueError, match="declares the track 'hybrid'"):
        policy_track({"algorithm": "my_algo", "track": "hybrid"})


def test_a_trainer_records_its_algorithms_track(monkeypatch, tmp_path):
    """A batched algorithm module's TRACK goes into its policies' metadata, where evaluate reads it."""
    pytest.importorskip("torch")
    from agents.training import ppo
    from agents.training.trainer import Trainer
    from dice_poker_env.rules import load_rules

    sys.path.insert(0, str(Path(__file__).parent))
    from test_trainer import config

    monkeypatch.setattr(ppo, "TRACK", "solver", raising=False)
    trainer = Trainer(config(), load_rules(RULES), tmp_path / "run")
    assert trainer.metadata["track"] == "solver" and policy_track(trainer.metadata) == "solver"
    monkeypatch.setattr(ppo, "TRACK", "hybrid")  # refused before training, not when a policy is evaluated
    with pytest.raises(ValueError, match="agents.training.ppo.TRACK must be one of raw, rules, solver"):
        Trainer(config(), load_rules(RULES), tmp_path / "run2")


def test_an_imitation_is_named_after_its_dataset_agent():
    from agents.training.bc import imitation_label

    assert imitation_label("optimal") == "imitation of the solver"
    assert imitation_label("greedy") == "imitation of the greedy agent"
    assert imitation_label(None) == "imitation"


def run_cli(args, capsys):
    from dice_poker_env.cli import main

    code = main(["evaluate", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_json_has_the_protocol_keys(capsys):
    code, out, _ = run_cli([RULES, "--agent", "greedy", "--games", "50", "--json"], capsys)
    assert code == 0
    data = json.loads(out)
    for key in (
        "luck_free_percent",
        "luck_free_percent_ci95",
        "mean",
        "mean_ci95",
        "median",
        "upper_bonus_rate",
        "games",
        "eval_set",
        "track",
        "env_id",
        "observation_layout_version",
        "rules_fingerprint",
        "library_version",
        "isolated",
        "hardware",
    ):
        assert key in data, key
    assert data["games"] == 50
    assert data["eval_set"] == "dice-poker-eval-v1/yacht/first-50"
    assert data["env_id"] == "DicePoker/Yacht-v0"
    assert np.isfinite(data["luck_free_percent"])
    assert data["timesteps"] is None  # a built-in agent trained no steps; a policy file says its own:
    code, out, _ = run_cli([RULES, "--agent", "trained", "--games", "4", "--json"], capsys)
    from agents.players.registry import make_agent

    assert json.loads(out)["timesteps"] == make_agent("trained", RULES).metadata["timesteps"] > 0


def test_a_rules_file_that_takes_a_shipped_name_is_labelled_custom(tmp_path, capsys):
    """A copy of Yacht's rules with another score, still named ``yacht``: its results say so (env id, evaluation set),
    and the shipped policy, trained on the real Yacht, is refused naming the rules, not options."""
    from dice_poker_env.rules import load_rules

    spec = dict(load_rules("yacht").raw_spec)
    spec["boxes"] = [dict(box, points=100) if box["name"] == "yacht" else box for box in spec["boxes"]]
    path = tmp_path / "house.json"
    path.write_text(json.dumps(spec))
    fingerprint = load_rules(str(path)).fingerprint
    code, out, _ = run_cli([str(path), "--agent", "greedy", "--games", "50", "--json"], capsys)
    data = json.loads(out)
    assert code == 0 and data["rules_fingerprint"] == fingerprint != load_rules("yacht").fingerprint
    assert data["env_id"] == f"DicePoker/Custom-v0(rules=yacht@{fingerprint})"
    assert data["eval_set"] == f"dice-poker-eval-v1/custom:yacht@{fingerprint}/first-50"
    code, _, err = run_cli([str(path), "--agent", "trained", "--games", "50"], capsys)
    assert code == 2 and "another fingerprint" in err and "options" not in err
    # the shipped ruleset, spelled out in a file of its own, is the shipped ruleset
    same = tmp_path / "yacht.json"
    same.write_text(json.dumps(load_rules("yacht").raw_spec))
    code, out, _ = run_cli([str(same), "--agent", "greedy", "--games", "50", "--json"], capsys)
    assert json.loads(out)["env_id"] == "DicePoker/Yacht-v0"


def test_a_shipped_ruleset_with_other_options_has_its_own_evaluation_set_name():
    """Another game, another optimum: dice_poker with 13 turns is not named as the default 15-turn game."""
    from agents.evaluation.protocol import eval_set_id
    from dice_poker_env.rules import load_rules

    assert eval_set_id(load_rules("dice_poker")) == "dice-poker-eval-v1/dice_poker"
    assert eval_set_id(load_rules("dice_poker", turns=15)) == "dice-poker-eval-v1/dice_poker"  # the default, given
    assert eval_set_id(load_rules("dice_poker", turns=13)) == "dice-poker-eval-v1/dice_poker[turns=13]"
    assert eval_set_id(load_rules("yahtzee", joker="free"), 500) == "dice-poker-eval-v1/yahtzee[joker=free]/first-500"


def test_cli_table_and_track_check(capsys):
    code, out, _ = run_cli([RULES, "--agent", "random", "--games", "20"], capsys)
    assert code == 0 and "luck-free percent of optimal" in out and "(raw)" in out
    code, _, err = run_cli([RULES, "--agent", "optimal", "--games", "5", "--track", "raw"], capsys)
    assert code != 0 and "solver track" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    # a raw agent may enter a more permissive track (raw, rules, solver: each admits the ones before it)
    code, out, _ = run_cli([RULES, "--agent", "random", "--games", "5", "--track", "solver", "--json"], capsys)
    assert code == 0 and json.loads(out)["track"] == "solver"
    from agents.evaluation.protocol import agent_track

    assert agent_track("winning", None) == agent_track("winning,target=150", None) == "solver"  # the reach tables


def test_cli_table_shows_illegal_actions_and_their_regret(tmp_path, capsys):
    """An agent whose every game ends at an illegal action: the table says so (it showed only a score of 0)."""
    (tmp_path / "illegal.py").write_text(
        "class KeepAll:\n    def act(self, observation, action_mask):\n        return 31\n"
    )
    code, out, _ = run_cli([RULES, "--agent", f"{tmp_path / 'illegal.py'}:KeepAll", "--games", "3"], capsys)
    assert code == 0
    assert re.search(r"illegal actions +3 +\(each ended its game there\)", out), out
    assert re.search(r"\(keeps 0\.000, boxes 0\.000, illegal or failed \d+\.\d{3}\)", out), out
    code, out, _ = run_cli([RULES, "--agent", "greedy", "--games", "3"], capsys)
    assert code == 0 and "illegal" not in out


def test_cli_records_the_training_seed_as_a_label(capsys):
    code, out, _ = run_cli([RULES, "--agent", "greedy", "--games", "20", "--seed", "1003", "--json"], capsys)
    labelled = json.loads(out)
    assert code == 0 and labelled.pop("seed") == 1003
    code, out, _ = run_cli([RULES, "--agent", "greedy", "--games", "20", "--json"], capsys)
    assert labelled == json.loads(out)  # a label: the same games, the same numbers
    code, out, _ = run_cli([RULES, "--agent", "greedy", "--games", "20", "--seed", "7"], capsys)
    assert "training seed 7" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--games", "0"], "--games"),
        (["--agent", "nobody"], "unknown"),
        (["--seed", "-1"], "--seed"),
        # a training seed is below 2**32 (train.py refuses others, compare.py refuses such a file): refused before
        # any game is played, not after the 10,000
        (["--seed", str(2**32)], "--seed must be a training seed in [0, 2**32)"),
    ],
)
def test_cli_bad_arguments_are_one_line_errors(args, message, capsys):
    base = [RULES, "--agent", "greedy", "--games", "5"]
    code, _, err = run_cli([*base, *args], capsys)
    assert code != 0 and message in err and len(err.strip().splitlines()) == 1


def test_the_shipped_policy_is_a_rules_track_agent_and_evaluates_reproducibly():
    first = evaluate(RULES, "trained", games=100)
    assert first["track"] == "rules"  # its network sees rules-derived inputs (keep_points and the like)
    assert 90.0 < first["luck_free_percent"] < 100.0
    assert evaluate(RULES, "trained", games=100) == first


def test_the_rules_heuristic_beats_greedy_and_declares_the_rules_track():
    spec = "agents.players.heuristic:LookaheadAgent"
    heuristic = evaluate(RULES, spec, games=100)
    greedy = evaluate(RULES, "greedy", games=100)
    assert heuristic["track"] == "rules" and heuristic["illegal_actions"] == 0
    assert heuristic["luck_free_percent"] > greedy["luck_free_percent"] + 10


def test_the_rules_heuristic_plays_the_same_in_lockstep_and_one_by_one():
    from agents.evaluation.benchmark import play_games
    from agents.players.heuristic import LookaheadAgent
    from dice_poker_env.rules import load_rules

    for name, games in (("yahtzee", 12), ("yacht", 300)):  # (yacht: 2 of these 300 games differed in float32)
        rules = load_rules(name)
        seeds = eval_seeds(games).tolist()
        batch = play_games(rules, LookaheadAgent(rules), seeds, lockstep=True)
        single = play_games(rules, LookaheadAgent(rules), seeds, lockstep=False)
        assert batch.scores == single.scores


def test_the_rules_heuristic_s_par_is_a_turn_played_for_one_box_with_both_rerolls():
    """``box_par``: a box's mean points over a whole turn (two rerolls) played for it alone: the choice box's
    70/3 (keep 5s and 6s, then 4s up), the yacht box's 50 x P(five of a kind in three rolls) = 50 x 0.0460286."""
    from agents.players.heuristic import LookaheadAgent
    from dice_poker_env.rules import load_rules

    par = dict(zip(load_rules("yacht").box_names, LookaheadAgent("yacht").par))
    assert par["choice"] == pytest.approx(70 / 3, abs=1e-9)
    assert par["yacht"] == pytest.approx(50 * 0.0460286, abs=1e-5)


def test_the_rules_heuristic_looks_through_every_reroll_left():
    """The last turn with only the choice box open is a sum to maximize: with two rerolls left the heuristic
    keeps only the 6 of 1 2 3 4 6 (a rerolled die is worth 4.25 then), with one left the 4 and the 6 (3.5)."""
    from agents.players.heuristic import LookaheadAgent
    from dice_poker_env.envs.single import DicePokerEnv
    from dice_poker_env.rules import load_rules

    rules = load_rules("yacht")
    agent = LookaheadAgent(rules)
    env = DicePokerEnv(rules)
    card = {name: 0 for name in rules.box_names if name != "choice"}
    for rolls_left, keep in ((2, 0b10000), (1, 0b11000)):
        obs, info = env.reset(options={"scorecard": card, "dice": [1, 2, 3, 4, 6], "rolls_left": rolls_left})
        assert agent.act(obs, info["action_mask"]) == keep


def test_a_result_names_the_bytes_of_the_agent_file_it_played(tmp_path):
    """``agent_sha256``: the SHA-256 of the policy file (or of the agent source file, name and arguments)
    evaluated, so a reported number points at one exact agent; a changed file gives another; built-in agents
    have none."""
    import hashlib
    import shutil
    from pathlib import Path

    import agents
    from agents.evaluation.protocol import agent_sha256

    policy = tmp_path / "yacht.npz"
    shutil.copyfile(Path(agents.__file__).parent / "policies" / "yacht.npz", policy)
    result = evaluate(RULES, f"model:{policy}", games=20)
    assert result["agent_sha256"] == hashlib.sha256(policy.read_bytes()).hexdigest()
    source = tmp_path / "mine.py"
    source.write_text("from agents.players.greedy import GreedyAgent as Mine, GreedyAgent as Other\n")
    digest = evaluate(RULES, f"{source}:Mine", games=20)["agent_sha256"]
    assert digest == agent_sha256(f"{source}:Mine") and digest is not None
    assert agent_sha256(f"{source}:Other") != digest  # two classes of one file
    source.write_text(source.read_text() + "# changed\n")
    assert agent_sha256(f"{source}:Mine") != digest  # the file's bytes
    assert evaluate(RULES, "greedy", games=20)["agent_sha256"] is None
    # the shipped policy is a data file a version of the package may change: its digest ties the result to it
    shipped = Path(agents.__file__).parent / "policies" / f"{RULES}.npz"
    assert evaluate(RULES, "trained", games=20)["agent_sha256"] == hashlib.sha256(shipped.read_bytes()).hexdigest()
    for unread in ("/proc/self/pagemap", "/dev/zero", str(tmp_path)):  # never read: not a regular file
        assert agent_sha256(f"model:{unread}") is None


def test_a_result_names_the_commit_of_the_code_that_measured_it(monkeypatch, tmp_path):
    """``git_commit``: the evaluating code's commit where it runs from a git checkout (``-dirty`` when its files
    differ), never the commit of some other repository around an installed copy."""
    import shutil
    import subprocess

    from agents.evaluation import protocol

    commit = protocol.code_commit()
    if shutil.which("git") and (protocol.CHECKOUT / ".git").exists():
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=protocol.CHECKOUT, capture_output=True, text=True, check=True
        ).stdout.strip()
        assert commit is not None and commit.removesuffix("-dirty") == head
    assert evaluate(RULES, "greedy", games=5)["git_commit"] == commit
    monkeypatch.setattr(protocol, "CHECKOUT", tmp_path / "site-packages")  # an installed copy
    assert protocol.code_commit() is None
    if not shutil.which("git"):
        return
    repo = tmp_path / "checkout"  # dirty only where the code differs: results written meanwhile do not count
    for name in ("agents/a.py", "results/runs.csv"):
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text("x\n")
    run = lambda *args: subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)  # noqa: E731
    run("init", "-q")
    run("add", "-A")
    run("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c")
    monkeypatch.setattr(protocol, "CHECKOUT", repo)
    head = run("rev-parse", "HEAD").stdout.strip()
    (repo / "results" / "runs.csv").write_text("y\n")
    assert protocol.code_commit() == head
    (repo / "agents" / "a.py").write_text("y\n")
    assert protocol.code_commit() == head + "-dirty"


def test_an_agent_files_arguments_are_part_of_its_digest(tmp_path):
    """One agent file, each seed with its own weights file: the digests differ (the weights' bytes are in them),
    and the same weights give the same digest."""
    from agents.evaluation.protocol import agent_sha256

    source = tmp_path / "net.py"
    source.write_text("class Net:\n    def __init__(self, weights):\n        self.weights = weights\n")
    for seed in (0, 1):
        (tmp_path / f"w{seed}.npz").write_bytes(bytes([seed]) * 10)
    digests = {seed: agent_sha256(f"{source}:Net,weights={tmp_path / f'w{seed}.npz'}") for seed in (0, 1)}
    assert None not in digests.values() and digests[0] != digests[1]
    assert agent_sha256(f"{source}:Net,weights={tmp_path / 'w0.npz'}") == digests[0]
    assert agent_sha256(f"{source}:Net,weights=other") not in (None, *digests.values())
    (tmp_path / "f1").write_bytes(b"W1\0z=1")  # no framing trick makes two argument lists collide
    (tmp_path / "f2").write_bytes(b"W1")
    assert agent_sha256(f"{source}:Net,w={tmp_path / 'f1'}") != agent_sha256(f"{source}:Net,w={tmp_path / 'f2'},z=1")


def test_a_module_agent_is_tied_to_its_source_file(tmp_path, monkeypatch):
    """MODULE:NAME: the digest of its module's file (with the name and arguments), as a FILE.py:NAME spec."""
    from agents.evaluation.protocol import agent_sha256

    (tmp_path / "my_module_agent.py").write_text("class A:\n    pass\n\n\nclass B:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    module_a = agent_sha256("my_module_agent:A")
    assert module_a is not None and module_a == agent_sha256(f"{tmp_path / 'my_module_agent.py'}:A")
    assert module_a != agent_sha256("my_module_agent:B") != agent_sha256("my_module_agent:A,depth=2")
    assert agent_sha256("no_such_module_anywhere:A") is None and agent_sha256("greedy") is None


#: an agent that forges its own measurement where it runs in the evaluator's process: it replaces the protocol's
#: game loop with one that plays the optimal agent, then plays badly itself (its last legal action)
FORGER = """
import numpy as np

import agents.evaluation.protocol as protocol
from agents.players.registry import make_agent


class Forger:
    track = "raw"

    def __init__(self, rules):
        real = protocol.play_games

        def forged(rules, agent, seeds, solution, *args, **kwargs):
            return real(rules, make_agent("optimal", rules, solution=solution), seeds, solution, *args, **kwargs)

        protocol.play_games = forged

    def act(self, observation, action_mask):
        return int(np.flatnonzero(action_mask)[-1])


class Honest(Forger):
    def __init__(self, rules):
        pass
"""


def isolation_missing() -> str | None:
    from agents.course.isolation import isolation_problem

    return isolation_problem()


@pytest.fixture
def isolation():
    """Skips a test of ``--isolated`` where this machine cannot isolate (no bubblewrap, not Linux)."""
    problem = isolation_missing()
    if problem is not None:
        pytest.skip(f"no isolation on this machine: {problem}")


def test_an_isolated_agent_cannot_change_its_measurement(tmp_path, monkeypatch, capsys, isolation):
    """In the evaluator's process an agent's code can rewrite the measurement (here it plays the optimal agent in
    its place: 100%); ``--isolated`` runs it in a process of its own and measures what it played, as the honest
    twin of the same play is measured in process."""
    from agents.evaluation import protocol

    monkeypatch.setattr(protocol, "play_games", protocol.play_games)  # the forgery, undone after the test
    path = tmp_path / "forger.py"
    path.write_text(FORGER)
    forged = evaluate(RULES, f"{path}:Forger", games=40)
    assert forged["luck_free_percent"] == 100.0 and not forged["isolated"]  # the threat, in process
    monkeypatch.undo()
    honest = evaluate(RULES, f"{path}:Honest", games=40)
    code, out, _ = run_cli([RULES, "--agent", f"{path}:Forger", "--games", "40", "--isolated", "--json"], capsys)
    isolated = json.loads(out)
    assert code == 0 and isolated["isolated"] is True and honest["isolated"] is False
    assert isolated["luck_free_percent"] < 50.0 and isolated["track"] == "raw"  # declared inside the sandbox
    for key in ("luck_free_percent", "regret_mean", "mean", "median", "games", "eval_set", "illegal_actions"):
        assert isolated[key] == honest[key], key
    assert isolated["agent_sha256"] != honest["agent_sha256"] and isolated["failed_games"] == {}
    code, out, _ = run_cli([RULES, "--agent", f"{path}:Forger", "--games", "5", "--isolated"], capsys)
    assert code == 0 and out.rstrip().endswith("the agent isolated")


IMPORT_FORGER = """
import os
from pathlib import Path

try:
    Path({marker!r}).write_text(str(os.getpid()))  # it succeeds in the evaluator's process only
except OSError:
    pass  # (the sandbox: that folder is not there)
if not os.path.isdir("/submission") and os.path.isfile({marker!r}):  # (the grader's process, were it imported there)
    import agents.evaluation.protocol as P
    P.play_games = lambda rules, player, seeds, solution, _p=P.play_games: _p(
        rules, P._build("optimal", rules, solution), seeds, solution
    )


class Agent:
    def act(self, observation, action_mask):
        return 32 + next(i for i, legal in enumerate(action_mask[32:]) if legal)
"""


def test_an_isolated_agents_file_never_runs_in_the_evaluators_process(tmp_path, monkeypatch, capsys, isolation):
    """``evaluate --isolated`` checked the spec by importing the file in its own process: code at the file's top
    level (the red team's) then replaced the game loop and scored 100% "isolated, solver forbidden". The file is
    now only looked at here (it exists, its bytes hashed); it runs in the sandbox alone."""
    from agents.evaluation import protocol

    monkeypatch.setattr(protocol, "play_games", protocol.play_games)  # (undone after the test, were it replaced)
    marker = tmp_path / "ran_here"
    path = tmp_path / "import_forger.py"
    path.write_text(IMPORT_FORGER.format(marker=str(marker)))
    code, out, err = run_cli(
        [RULES, "--agent", f"{path}:Agent", "--games", "20", "--isolated", "--solver", "forbid", "--json"], capsys
    )
    assert code == 0, err
    result = json.loads(out)
    assert not marker.exists()  # (the sandbox's /tmp is its own: the line ran there only)
    assert result["isolated"] and result["luck_free_percent"] < 60.0  # its own play, not the optimal agent's
    assert protocol.play_games is monkeypatch._setattr[0][2]  # (the evaluator's game loop untouched)


def test_a_modules_digest_imports_none_of_its_packages(tmp_path, monkeypatch):
    """``MODULE:NAME``'s digest is its source file's, found package by package on ``sys.path`` without running
    any ``__init__`` (``importlib.util.find_spec`` ran the parent packages' code in the evaluator's process)."""
    from agents.evaluation.protocol import _file_sha256, agent_sha256

    package = tmp_path / "redpkg" / "inner"
    package.mkdir(parents=True)
    marker = tmp_path / "ran_here"
    for folder in (package.parent, package):
        (folder / "__init__.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    (package / "agent.py").write_text("class Agent:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    digest = agent_sha256("redpkg.inner.agent:Agent")
    assert digest is not None and not marker.exists()
    source = _file_sha256(str(package / "agent.py"))
    expected = json.dumps({"file": source, "name": "Agent", "arguments": {}}, sort_keys=True)
    assert digest == hashlib.sha256(expected.encode()).hexdigest()
    assert agent_sha256("redpkg.nowhere:Agent") is None and not marker.exists()


def test_a_randomized_agent_plays_the_same_games_isolated_and_in_process(tmp_path, capsys, isolation):
    """On the public evaluation set an isolated agent's ``seed(s)`` gets what it gets in process, so a randomized
    agent's isolated result is its in-process result to the last digit: a verifier's rerun checks a submitted
    number exactly (a grading still never forwards its seeds: tests/test_hostile.py)."""
    path = tmp_path / "dice.py"
    path.write_text(
        "import numpy as np\n\n\nclass Dice:\n"
        "    def seed(self, seed):\n        self.rng = np.random.default_rng(seed)\n"
        "    def act(self, observation, action_mask):\n"
        "        return int(self.rng.choice(np.flatnonzero(action_mask)))\n"
    )
    spec = f"{path}:Dice"
    in_process = evaluate(RULES, spec, games=30)
    code, out, _ = run_cli([RULES, "--agent", spec, "--games", "30", "--isolated", "--json"], capsys)
    isolated = json.loads(out)
    assert code == 0 and isolated["isolated"] and not in_process["isolated"]
    for key in ("luck_free_percent", "regret_mean", "mean", "median", "regret_keep_mean", "regret_box_mean"):
        assert isolated[key] == in_process[key], key
    from agents.course.sandbox import SandboxedAgent
    from dice_poker_env.rules import load_rules

    with SandboxedAgent(spec, load_rules(RULES)) as own_seeds:  # a grading's seeds (agent_seed): other games
        assert evaluate(RULES, spec, games=30, player=own_seeds)["mean"] != in_process["mean"]


def test_an_agent_of_several_files_is_evaluated_isolated_with_its_folder(tmp_path, capsys, monkeypatch, isolation):
    """``--share-folder``: the agent's folder (a sibling module, a data file named by a relative argument) is
    visible, read-only, to the isolated agent, which plays as in process; without it only the file is, and a
    folder that is not the submission's alone is refused."""
    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / "helper.py").write_text("def last(mask):\n    return max(i for i, legal in enumerate(mask) if legal)\n")
    (folder / "weights.txt").write_text("0\n")
    (folder / "agent.py").write_text(
        "from pathlib import Path\n\nfrom helper import last\n\n\nclass A:\n"
        "    def __init__(self, rules, weights='weights.txt'):\n        self.first = int(Path(weights).read_text())\n"
        "    def act(self, observation, action_mask):\n        return last(action_mask)\n"
    )
    monkeypatch.chdir(folder)  # relative arguments: read from the working folder in process, the folder isolated
    spec = "agent.py:A,weights=weights.txt"
    in_process = evaluate(RULES, spec, games=10)
    code, out, _ = run_cli([RULES, "--agent", spec, "--games", "10", "--isolated", "--share-folder", "--json"], capsys)
    assert code == 0 and json.loads(out)["luck_free_percent"] == in_process["luck_free_percent"]
    code, _, err = run_cli([RULES, "--agent", spec, "--games", "10", "--isolated"], capsys)  # the file alone
    assert code != 0 and "did not load in isolation" in err and "helper" in err
    code, _, err = run_cli([RULES, "--agent", spec, "--games", "10", "--share-folder"], capsys)
    assert code != 0 and "goes with --isolated" in err
    # its own package named like the library's: the agent imports it, the worker is still the library's (it
    # starts outside the folder; a shadowing worker would skip the limits and the import watch)
    (folder / "agents" / "course").mkdir(parents=True)
    (folder / "agents" / "__init__.py").write_text("")
    (folder / "agents" / "course" / "__init__.py").write_text("")
    (folder / "agents" / "course" / "sandbox_worker.py").write_text("raise SystemExit('shadowed')\n")
    code, out, _ = run_cli([RULES, "--agent", spec, "--games", "10", "--isolated", "--share-folder", "--json"], capsys)
    shared = json.loads(out)
    assert code == 0 and shared["luck_free_percent"] == in_process["luck_free_percent"]
    assert len(shared["folder_sha256"]) == 64 and shared["solver_policy"] == "flag"
    (folder / "weights.txt").write_text("1\n")  # another file of the folder: another digest
    code, out, _ = run_cli([RULES, "--agent", spec, "--games", "2", "--isolated", "--share-folder", "--json"], capsys)
    assert json.loads(out)["folder_sha256"] != shared["folder_sha256"]
    for home in (folder, folder / "inner"):  # the home folder, or a folder that holds it: refused
        monkeypatch.setenv("HOME", str(home))
        code, _, err = run_cli([RULES, "--agent", spec, "--games", "10", "--isolated", "--share-folder"], capsys)
        assert code != 0 and "holds the home folder" in err and len(err.strip().splitlines()) == 1, err


def test_an_isolated_agent_that_plays_the_library_s_agents_is_seen(tmp_path, capsys, isolation):
    """An agent declaring the raw track that plays the shipped policy inside: the isolated result records the
    library's modules it imported (``--solver flag``, the default); ``--solver forbid`` refuses them."""
    path = tmp_path / "borrowed.py"
    path.write_text(
        "from agents.players.registry import make_agent\n\n\nclass Borrowed:\n    track = 'raw'\n\n"
        "    def __init__(self, rules):\n        self.inner = make_agent('trained', rules)\n\n"
        "    def act(self, observation, action_mask):\n        return self.inner.act(observation, action_mask)\n"
    )
    spec = f"{path}:Borrowed"
    code, out, _ = run_cli([RULES, "--agent", spec, "--games", "5", "--isolated", "--json"], capsys)
    result = json.loads(out)
    assert code == 0 and result["track"] == "raw" and "agents.policy" in result["solver_imports"]
    assert evaluate(RULES, "greedy", games=5)["solver_imports"] is None  # in process: not watched
    code, out, _ = run_cli([RULES, "--agent", spec, "--games", "5", "--isolated"], capsys)
    assert "imported of the library's      agents.policy" in out
    code, out, _ = run_cli(
        [RULES, "--agent", spec, "--games", "5", "--isolated", "--solver", "allow", "--json"], capsys
    )
    unwatched = json.loads(out)  # imports not watched: nothing to read in an empty list
    assert unwatched["solver_policy"] == "allow" and unwatched["solver_imports"] is None
    code, _, err = run_cli([RULES, "--agent", spec, "--games", "5", "--isolated", "--solver", "forbid"], capsys)
    assert code != 0 and "did not load in isolation" in err and len(err.strip().splitlines()) == 1
    code, _, err = run_cli([RULES, "--agent", "greedy", "--games", "5", "--solver", "forbid"], capsys)
    assert code != 0 and "--solver watches an isolated agent's imports" in err


def test_an_isolated_agents_failures_end_its_games_and_are_counted(tmp_path, capsys, isolation):
    """An isolated agent that raises loses those games (their regret counts) and the result says how many; a track
    it declares is checked as in process; one that does not load is a one-line error."""
    path = tmp_path / "flaky.py"
    path.write_text(
        "class Flaky:\n"
        "    track = 'lunar'\n"
        "    def __init__(self, rules):\n        self.games = 0\n"
        "    def reset(self):\n        self.games += 1\n"
        "    def act(self, observation, action_mask):\n"
        "        if self.games % 2 == 0:\n            raise RuntimeError('odd')\n"
        "        return next(i for i, legal in enumerate(action_mask) if legal)\n"
        "class Fine(Flaky):\n    track = None\n"
        "class Broken:\n    def __init__(self, rules):\n        raise ImportError('no torch here')\n"
    )
    code, _, err = run_cli([RULES, "--agent", f"{path}:Flaky", "--games", "6", "--isolated"], capsys)
    assert code != 0 and "track must be one of" in err and len(err.strip().splitlines()) == 1
    code, out, _ = run_cli([RULES, "--agent", f"{path}:Fine", "--games", "6", "--isolated", "--json"], capsys)
    result = json.loads(out)
    assert code == 0 and result["failed_games"] == {"exception": 3} and result["illegal_actions"] == 0
    assert result["regret_mean"] > result["regret_keep_mean"] + result["regret_box_mean"]  # the lost games' loss
    code, out, _ = run_cli([RULES, "--agent", f"{path}:Fine", "--games", "6", "--isolated"], capsys)
    assert re.search(r"games its failures ended +3 +\(exception 3\)", out), out
    code, _, err = run_cli([RULES, "--agent", f"{path}:Broken", "--games", "6", "--isolated"], capsys)
    assert code != 0 and "did not load in isolation" in err and "no torch here" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--agent", "greedy", "--isolated"], "runs only the library's"),
        (["--agent", "model:x.npz", "--isolated"], "runs only the library's"),
        (["--agent", "greedy", "--decision-seconds", "2"], "--decision-seconds limits an isolated agent"),
        (["--agent", "nowhere.py:Agent", "--isolated"], "nowhere.py"),
        (["--agent", "mine.py", "--isolated"], "unknown agent 'mine.py'"),  # a file needs its class: FILE.py:NAME
        (["--agent", f"{__file__}:X", "--isolated", "--decision-seconds", "0"], "--decision-seconds must be a posit"),
        (["--agent", f"{__file__}:X", "--isolated", "--memory-mb", str(10**14)], "--memory-mb must be an integer in"),
        (["--agent", f"{__file__}:X", "--isolated", "--max-failures", str(10**17)], "in 1..2**40, got 1000000"),
    ],
)
def test_isolation_arguments_are_one_line_errors(args, message, capsys):
    code, _, err = run_cli([RULES, "--games", "5", *args], capsys)
    assert code != 0 and message in err and len(err.strip().splitlines()) == 1, err


def test_foreseeing_the_public_evaluation_set_raises_the_mean_not_the_luck_free_percent(tmp_path):
    """The evaluation set's seeds are public, so an agent can know every die of its games (here
    ``tests/hostile/clairvoyant.py``'s turn search, told the faces from the seeds). It outscores the optimal agent
    on the same games, yet its luck-free percent stays where its decisions' worth puts it: each is judged by its
    expected value under optimal play (docs/benchmark.md)."""
    hostile = Path(__file__).resolve().parent / "hostile"
    (tmp_path / "foresight.py").write_text(
        f"import sys\nsys.path.insert(0, {str(hostile)!r})\n"
        "from clairvoyant import Agent as Clairvoyant\n"
        "from dice_poker_env.dice_sources import RandomDice\n"
        "from dice_poker_env.engine import game\n"
        "from dice_poker_env.engine.combinatorics import N_KEEP_ACTIONS, roll_of_faces\n\n\n"
        "class Foresight(Clairvoyant):\n"
        "    def reset(self):\n"
        "        super().reset()\n"
        f"        self.faces = RandomDice.game_faces([{EVAL_SEED_BASE} + self.game], RandomDice.BLOCK)[0].tolist()\n"
        "        self.state, self.at = game.new_game(self.tables, roll_of_faces(self.faces[:5])), 5\n\n"
        "    def act(self, observation, action_mask):\n"
        "        action = self.best(self.state, self.at)[1]\n"
        "        n = 5 - bin(action).count('1') if action < N_KEEP_ACTIONS else 5\n"
        "        self.state = game.step_one(self.tables, self.state, action, self.faces[self.at : self.at + n])[0]\n"
        "        self.at += n\n"
        "        return action\n"
    )
    foresight = evaluate(RULES, f"{tmp_path / 'foresight.py'}:Foresight", games=12)
    optimal = evaluate(RULES, "optimal", games=12)
    assert foresight["illegal_actions"] == 0 and foresight["mean"] > optimal["mean"] + 20  # it saw the dice
    assert foresight["luck_free_percent"] < 90.0  # its decisions' worth: far from optimal play
    worth = foresight["optimal_expected_score"] - foresight["regret_mean"]
    assert foresight["mean"] > worth + 50  # the foresight shows as luck, outside the primary metric


ODD_AGENTS = """
class Base:
    def act(self, observation, action_mask):
        return 32 + next(i for i, legal in enumerate(action_mask[32:]) if legal)

class TrackRaises(Base):
    @property
    def track(self):
        raise RuntimeError("no track today")

class TrackHuge(Base):
    track = "raw" * 100_000

class WeirdText(str):
    def __eq__(self, other):
        raise RuntimeError("compared")
    __hash__ = str.__hash__

class TrackCompares(Base):
    track = WeirdText("raw")

class ObsRaises(Base):
    @property
    def obs_mode(self):
        raise RuntimeError("no mode")

class ObsJunk(Base):
    obs_mode = WeirdText("dict")

class BigInt(Base):
    def act(self, observation, action_mask):
        return 2**100

class Mute(Exception):
    def __str__(self):
        raise RuntimeError("no text")

class ActMute(Base):
    def act(self, observation, action_mask):
        raise Mute()

class TrackMute(Base):
    @property
    def track(self):
        raise Mute()

class ActLong(Base):
    def act(self, observation, action_mask):
        raise ValueError("x" * 100_000)
"""


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("TrackRaises", "reading its track raised RuntimeError: no track today"),
        ("TrackHuge", "track must be one of raw, rules, solver, got 'rawrawraw"),
        ("TrackCompares", "track must be one of raw, rules, solver, got 'a WeirdText'"),
        ("ObsRaises", "reading obs_mode raised RuntimeError: no mode"),
        ("ObsJunk", "obs_mode must be 'dict' or 'flat', got"),
        ("BigInt", "returned 1267650600228229401496703205376, not an action index (beyond int64)"),
        ("ActMute", "act raised Mute: <its message raised> (odd.py, line"),  # an exception whose __str__ raises
        ("TrackMute", "reading its track raised Mute: <its message raised>"),
        ("ActLong", "act raised ValueError: xxxxx"),
    ],
)
def test_an_agents_odd_attributes_are_one_line_errors_in_process(tmp_path, capsys, name, message):
    """What an agent's own attributes do (a property that raises, a huge or self-comparing value, an action no
    integer type holds) is a one-line error naming it, never a traceback or a line of 300 KB."""
    (tmp_path / "odd.py").write_text(ODD_AGENTS)
    code, _, err = run_cli([RULES, "--agent", f"{tmp_path / 'odd.py'}:{name}", "--games", "2"], capsys)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1 and len(err) < 600, err
    if name in ("TrackRaises", "ObsRaises") and isolation_missing() is None:  # the same inside the sandbox
        code, _, err = run_cli(
            [RULES, "--agent", f"{tmp_path / 'odd.py'}:{name}", "--games", "2", "--isolated"], capsys
        )
        assert code == 2 and "did not load in isolation" in err and len(err.strip().splitlines()) == 1, err
