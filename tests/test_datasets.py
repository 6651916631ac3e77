"""Minari datasets (issue 14): written per agent kind, read back through Minari, replayed, refused on bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from train_script import load_train

minari = pytest.importorskip("minari")
pytest.importorskip("h5py")

from agents.commands.dataset import main  # noqa: E402
from agents.evaluation import datasets  # noqa: E402
from agents.players.optimal import VALUE_TOLERANCE  # noqa: E402
from dice_poker_env import load_rules  # noqa: E402
from dice_poker_env.engine.combinatorics import N_KEEP_ACTIONS  # noqa: E402
from dice_poker_env.engine.tables import compile_rules  # noqa: E402

MINI = """
name = "mini"
title = "Mini"
boxes = [
  { name = "sixes", kind = "face_sum", face = 6 },
  { name = "trips", kind = "n_of_a_kind", n = 3, points = "matching", extra = 5 },
  { name = "run", kind = "straight", sets = [[1, 2, 3], [4, 5, 6]], points = "matching" },
  { name = "chance", kind = "chance" },
]
upper_bonus = { threshold = 12, points = 10 }
"""


@pytest.fixture(autouse=True)
def datasets_root(tmp_path, monkeypatch):
    """Every test writes its datasets under its own temporary folder."""
    root = tmp_path / "minari"
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(root))
    return root


def write(*argv: str) -> int:
    return main([*argv, "--quiet"])


def replay(dataset, episode, seed, **kwargs):
    """Step the recovered env through a stored episode; returns its final info. Asserts every step agrees."""
    env = dataset.recover_environment(**kwargs)
    obs, info = env.reset(seed=seed)
    same = (
        (lambda a, b: all(np.array_equal(np.asarray(a[k]).reshape(-1), np.asarray(b[k]).reshape(-1)) for k in a))
        if isinstance(obs, dict)
        else np.array_equal
    )
    stored = episode.observations
    at = (lambda t: {k: v[t] for k, v in stored.items()}) if isinstance(stored, dict) else (lambda t: stored[t])
    if "obs_mode" not in kwargs:
        assert same(obs, at(0))
    assert np.array_equal(info["action_mask"], episode.infos["action_mask"][0])
    for t, action in enumerate(episode.actions):
        obs, reward, terminated, truncated, info = env.step(int(action))
        if "obs_mode" not in kwargs:
            assert same(obs, at(t + 1)), f"episode {episode.id}, step {t}"
        assert reward == episode.rewards[t]
        assert terminated == episode.terminations[t] and truncated == episode.truncations[t]
        assert np.array_equal(info["action_mask"], episode.infos["action_mask"][t + 1])
    assert terminated
    return info


@pytest.fixture(scope="module")
def npz_policy(tmp_path_factory):
    """A policy file of the batched trainers' format (random weights), for ``model:PATH.npz`` and ``trained``."""
    from agents.players.sb3_agent import model_metadata
    from agents.policy.inputs import PolicyInputs
    from agents.policy.player import save_policy

    rules = load_rules("yacht")
    rng = np.random.default_rng(0)
    size = PolicyInputs(rules, features=True).size
    weights = {
        "w0": rng.normal(size=(size, 16)).astype(np.float32),
        "b0": np.zeros(16, np.float32),
        "w1": rng.normal(size=(16, compile_rules(rules).n_actions)).astype(np.float32),
        "b1": np.zeros(compile_rules(rules).n_actions, np.float32),
    }
    meta = {**model_metadata(rules, "flat", "batched_ppo"), "features": True, "activation": "tanh"}
    return save_policy(tmp_path_factory.mktemp("policy") / "yacht.npz", weights, meta)


@pytest.fixture(scope="module")
def sb3_model(tmp_path_factory):
    """A tiny SB3 MaskablePPO model (untrained): ``model:PATH.zip``, played one game at a time."""
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO

    from agents.players.sb3_agent import model_metadata, save_model
    from dice_poker_env.envs.single import DicePokerEnv

    rules = load_rules("yacht")
    model = MaskablePPO(
        "MlpPolicy",
        DicePokerEnv(rules, obs_mode="flat"),
        n_steps=64,
        seed=0,
        policy_kwargs=dict(net_arch=[8]),
        device="cpu",
    )
    return save_model(
        model, tmp_path_factory.mktemp("sb3") / "final_model.zip", model_metadata(rules, "flat", "maskable_ppo")
    )


@pytest.mark.parametrize(
    "agent", ["optimal", "greedy", "random", "optimal:eps=0.3", "trained", "model:npz", "model:zip"]
)
def test_a_dataset_of_each_agent_kind_reads_back_and_replays(agent, npz_policy, sb3_model, monkeypatch):
    if agent == "trained":
        monkeypatch.setattr("agents.policy.player.SHIPPED_DIR", npz_policy.parent)
    agent = {"model:npz": f"model:{npz_policy}", "model:zip": f"model:{sb3_model}"}.get(agent, agent)
    assert write("yacht", "--agent", agent, "--episodes", "6", "--seed", "4", "--id", "t/yacht/a-v0") == 0
    dataset = minari.load_dataset("t/yacht/a-v0")
    assert dataset.total_episodes == 6 and len(list(dataset.iterate_episodes())) == 6
    info = datasets.dataset_info(dataset)
    assert info["agent"] == agent and info["seed"] == 4 and info["rules"] == "yacht"
    seeds = datasets.episode_seeds(dataset)
    returns = []
    for episode, seed in zip(dataset.iterate_episodes(), seeds):
        t = len(episode.actions)
        assert episode.observations.shape == (t + 1, 81) and episode.observations.dtype == np.float32
        masks = episode.infos["action_mask"]
        assert masks.shape == (t + 1, 44) and not masks[-1].any()
        assert masks[np.arange(t), episode.actions].all()  # every action legal
        final = replay(dataset, episode, int(seed))
        assert episode.rewards.sum() == final["final_score"]  # the return is the final score
        returns.append(final["final_score"])
    assert info["mean_score"] == pytest.approx(np.mean(returns))
    assert dataset.total_steps == sum(len(e.actions) for e in dataset.iterate_episodes())


def test_the_optimal_agent_values_and_actions_agree_with_the_solver(datasets_root):
    from dice_poker_env.solver import solve

    assert write("yacht", "--agent", "optimal", "--episodes", "30", "--with-values", "--obs-mode", "dict") == 0
    dataset = minari.load_dataset("dice_poker/yacht/optimal-dict-v0")
    solution = solve(load_rules("yacht"))
    info = datasets.dataset_info(dataset)
    assert info["optimal_expected_score"] == solution.expected_score
    assert dataset.storage.metadata["ref_max_score"] == solution.expected_score
    # ref_min_score is random play (measured), so minari's normalized score runs from random (0) to optimal (1)
    ref_min = dataset.storage.metadata["ref_min_score"]
    assert ref_min == datasets.random_play_score(load_rules("yacht"))
    assert 0.0 < ref_min < 0.5 * solution.expected_score
    assert minari.get_normalized_score(dataset, np.array([ref_min, solution.expected_score])) == pytest.approx([0, 1])
    checked = 0
    for episode in dataset.iterate_episodes():
        t = len(episode.actions)
        obs = {k: v[:t] for k, v in episode.observations.items()}
        exact = solution.action_values(obs)  # float64, (T, n_actions)
        stored = episode.infos["action_values"]
        assert stored.dtype == np.float32 and stored.shape == (t + 1, 44)
        assert np.array_equal(np.isfinite(stored[:t]), np.isfinite(exact))
        assert np.array_equal(np.isfinite(stored[:t]), episode.infos["action_mask"][:t] == 1)
        assert not np.isfinite(stored[t]).any()
        legal = np.isfinite(exact)
        assert np.allclose(stored[:t][legal], exact[legal], rtol=0, atol=1e-3)
        taken = exact[np.arange(t), episode.actions]
        assert (taken >= exact.max(axis=1) - VALUE_TOLERANCE).all()  # optimal actions
        assert (datasets.episode_regret(episode) <= VALUE_TOLERANCE).all()  # so zero regret
        checked += t
    assert checked > 500
    assert abs(info["mean_regret"]) <= VALUE_TOLERANCE
    assert minari.get_normalized_score(dataset, np.array([solution.expected_score])) == pytest.approx(1.0)


def test_imperfect_agents_have_positive_regret_that_telescopes_to_the_score_gap(datasets_root):
    assert write("yacht", "--agent", "greedy", "--episodes", "40", "--with-values") == 0
    dataset = minari.load_dataset("dice_poker/yacht/greedy-v0")
    regrets = [datasets.episode_regret(e) for e in dataset.iterate_episodes()]
    assert all((r >= -VALUE_TOLERANCE).all() for r in regrets)
    total = np.array([r.sum() for r in regrets])
    assert total.mean() > 5  # greedy loses points to the solver
    # optimal value of the first state minus the regret = the expected score given the dice that fell:
    # for each episode, score + regret - (luck) averages to the optimum; with 40 games only the sign is sure
    assert datasets.dataset_info(dataset)["mean_regret"] == pytest.approx(total.mean(), rel=1e-6)


def test_options_and_dict_observations_replay_and_the_same_seed_gives_the_same_data(datasets_root, monkeypatch):
    monkeypatch.setattr(
        "agents.evaluation.benchmark.load_solution", lambda rules, required=False, progress=None: None
    )  # no 12 s solve here
    for name in ("a", "b"):
        assert (
            write(
                "yahtzee",
                "--option",
                "joker=free",
                "--agent",
                "random",
                "--episodes",
                "5",
                "--seed",
                "9",
                "--obs-mode",
                "dict",
                "--id",
                f"t/yahtzee/{name}-v0",
            )
            == 0
        )
    a, b = minari.load_dataset("t/yahtzee/a-v0"), minari.load_dataset("t/yahtzee/b-v0")
    assert a.env_spec.kwargs == {"rules": "yahtzee", "obs_mode": "dict", "joker": "free"}
    assert datasets.dataset_info(a)["rules_fingerprint"] == load_rules("yahtzee", joker="free").fingerprint
    assert datasets.dataset_info(a)["optimal_expected_score"] is None  # no solution: none recorded
    for ea, eb, seed in zip(a.iterate_episodes(), b.iterate_episodes(), datasets.episode_seeds(a)):
        assert np.array_equal(ea.actions, eb.actions)
        assert all(np.array_equal(ea.observations[k], eb.observations[k]) for k in ea.observations)
        replay(a, ea, int(seed))
    env = a.recover_environment()
    assert env.unwrapped.rules.fingerprint == load_rules("yahtzee", joker="free").fingerprint


def test_a_rules_file_dataset_is_recovered_from_its_path(tmp_path):
    path = tmp_path / "mini.toml"
    path.write_text(MINI)
    assert write(str(path), "--agent", "optimal", "--episodes", "8", "--with-values") == 0
    dataset = minari.load_dataset("dice_poker/mini/optimal-v0")
    assert dataset.env_spec.id == "DicePoker/Custom-v0" and dataset.env_spec.kwargs["rules"] == str(path.resolve())
    for episode, seed in zip(dataset.iterate_episodes(), datasets.episode_seeds(dataset)):
        replay(dataset, episode, int(seed))
        assert (datasets.episode_regret(episode) <= VALUE_TOLERANCE).all()


def _read_back(store, n: int) -> tuple[list[dict], list[dict]]:
    """Every episode of a Minari storage, decoded by Minari, and its episode metadata."""
    return list(store.get_episodes(range(n))), list(store.get_episode_metadata(range(n)))


def _assert_same_episodes(a_episodes: list[dict], b_episodes: list[dict]) -> None:
    """Every field of every episode equal bit for bit, with the same dtype (-inf included)."""
    assert len(a_episodes) == len(b_episodes)
    for a, b in zip(a_episodes, b_episodes):
        assert a.keys() == b.keys()
        for key in a:
            if isinstance(a[key], dict):
                assert a[key].keys() == b[key].keys()
                for k in a[key]:
                    assert a[key][k].dtype == b[key][k].dtype and a[key][k].shape == b[key][k].shape
                    assert a[key][k].tobytes() == b[key][k].tobytes(), (key, k)
            elif isinstance(a[key], np.ndarray):
                assert a[key].dtype == b[key].dtype and a[key].shape == b[key].shape, key
                assert a[key].tobytes() == b[key].tobytes(), key
            else:
                assert a[key] == b[key]


def test_the_writer_stores_what_minaris_own_writer_stores(tmp_path):
    """The fast compressed HDF5 writer against Minari's ``update_episodes`` and against the same writer
    uncompressed, on the same episodes (with values, flat and dict observations): the same data back, bit for
    bit, through Minari's reader and through ``load_transitions``' reader."""
    from minari.data_collector.episode_buffer import EpisodeBuffer
    from minari.dataset.minari_storage import MinariStorage

    from agents.evaluation.benchmark import game_seeds
    from dice_poker_env.envs.observation import observation_space
    from dice_poker_env.solver import solve

    rules = load_rules("yacht")
    solution = solve(rules)
    policy = datasets.make_policy(datasets.parse_agent("greedy:eps=0.2"), rules, solution)
    for obs_mode in ("flat", "dict"):
        block = datasets.play_block(rules, policy, game_seeds(1, 5), obs_mode=obs_mode, solution=solution)
        space = observation_space(compile_rules(rules), obs_mode)
        stores = {}
        for name in ("fast", "plain", "minari"):
            (tmp_path / obs_mode).mkdir(exist_ok=True)
            storage = MinariStorage.new(
                tmp_path / obs_mode / name,
                observation_space=space,
                action_space=datasets._action_space(rules),
                data_format="hdf5",
            )
            episodes = [block.episode(e) for e in range(len(block))]
            if name == "minari":
                storage.update_episodes([EpisodeBuffer(**episode) for episode in episodes])
            else:
                writer = datasets._EpisodeWriter(tmp_path / obs_mode / name / "main_data.hdf5", compress=name == "fast")
                writer.write_many(episodes[:3])
                for episode in episodes[3:]:
                    writer.write(episode)
                writer.close()
            stores[name] = MinariStorage.read(tmp_path / obs_mode / name)
        fast, plain, slow = (_read_back(stores[name], 5) for name in ("fast", "plain", "minari"))
        for other in (plain, slow):
            _assert_same_episodes(fast[0], other[0])
            assert fast[1] == other[1]  # episode metadata: id, seed, total_steps
        for episode in fast[0]:
            assert all(space.contains(_row(episode["observations"], t)) for t in range(len(episode["rewards"]) + 1))

        class Ids:
            episode_indices = np.arange(5)
            observation_space, action_space = space, datasets._action_space(rules)

        read = {name: datasets._read_hdf5(tmp_path / obs_mode / name / "main_data.hdf5", Ids) for name in stores}
        for key, value in read["fast"].items():
            for name in ("plain", "minari"):
                other = read[name][key]
                pairs = [(value[k], other[k]) for k in value] if isinstance(value, dict) else [(value, other)]
                assert all(x.dtype == y.dtype and x.tobytes() == y.tobytes() for x, y in pairs), (name, key)


def _row(observations, t: int):
    return {k: v[t] for k, v in observations.items()} if isinstance(observations, dict) else observations[t]


def test_the_dataset_file_is_compressed_and_readable_without_the_header_hint(tmp_path):
    """Every non-empty dataset is one deflated chunk; the file is several times smaller than the uncompressed
    writer's; without the header hint (another HDF5 build) it is larger but reads back the same."""
    import h5py

    from agents.evaluation.benchmark import game_seeds
    from dice_poker_env.solver import solve

    rules = load_rules("yacht")
    solution = solve(rules)
    policy = datasets.make_policy(datasets.parse_agent("optimal:eps=0.1"), rules, solution)
    block = datasets.play_block(rules, policy, game_seeds(2, 60), solution=solution)
    episodes = [block.episode(e) for e in range(len(block))]
    sizes, read = {}, {}

    from dice_poker_env.envs.observation import observation_space as space_of

    class Ids:
        episode_indices = np.arange(len(episodes))
        observation_space, action_space = space_of(compile_rules(rules), "flat"), datasets._action_space(rules)

    for name, compress, hint in (("plain", False, True), ("fast", True, True), ("no_hint", True, False)):
        path = tmp_path / f"{name}.hdf5"
        writer = datasets._EpisodeWriter(path, compress=compress, minimal_headers=hint)
        writer.write_many(episodes)
        writer.close()
        sizes[name] = path.stat().st_size
        read[name] = datasets._read_hdf5(path, Ids)
    for name in ("fast", "no_hint"):
        assert read[name].keys() == read["plain"].keys()
        for key, value in read["plain"].items():
            assert value.dtype == read[name][key].dtype and value.tobytes() == read[name][key].tobytes(), key
    assert sizes["fast"] * 3 < sizes["plain"], sizes
    assert sizes["fast"] < sizes["no_hint"], sizes
    with h5py.File(tmp_path / "fast.hdf5", "r") as file:
        group = file["episode_7"]
        for name in ("observations", "actions", "rewards", "infos/action_mask", "infos/action_values"):
            assert group[name].compression == "gzip" and group[name].chunks == group[name].shape, name
        assert group["actions"].shuffle and not group["infos/action_values"].shuffle
        assert group["infos/action_values"].dtype == np.float32 and np.isneginf(group["infos/action_values"][-1]).all()


def test_minari_lists_and_shows_the_dataset():
    from minari.cli import app
    from typer.testing import CliRunner

    assert write("yacht", "--agent", "random", "--episodes", "3") == 0
    assert "dice_poker/yacht/random-v0" in minari.list_local_datasets()
    shown = CliRunner().invoke(app, ["show", "dice_poker/yacht/random-v0"])
    assert shown.exit_code == 0 and "DicePoker/Yacht-v0" in shown.output
    listed = CliRunner().invoke(app, ["list", "local"])
    assert listed.exit_code == 0 and "dice_poker/yacht/random-v0" in listed.output


def test_author_email_and_code_permalink_reach_minari_and_the_agent_file_is_digested(npz_policy):
    """Minari's publishing fields (author, author_email, code_permalink) come from the command, as minari show
    lists them; a model's file digest and the code's commit are recorded as dice-poker evaluate records them."""
    from minari.cli import app
    from typer.testing import CliRunner

    from agents.evaluation.protocol import agent_sha256

    argv = ["--agent", f"model:{npz_policy}:eps=0.1", "--episodes", "2", "--id", "t/yacht/m-v0"]
    people = ["--author", "Ada", "--author", "Bob", "--author-email", "ada@example.org"]
    assert write("yacht", *argv, *people, "--code-permalink", "https://example.org/code/abc") == 0
    dataset = minari.load_dataset("t/yacht/m-v0")
    metadata = dataset.storage.metadata
    assert metadata["author"] == {"Ada", "Bob"} and metadata["author_email"] == {"ada@example.org"}
    assert metadata["code_permalink"] == "https://example.org/code/abc"
    info = datasets.dataset_info(dataset)
    assert info["agent_sha256"] == agent_sha256(f"model:{npz_policy}") is not None and "git_commit" in info
    shown = CliRunner().invoke(app, ["show", "t/yacht/m-v0"])
    assert shown.exit_code == 0 and "https://example.org/code/abc" in shown.output and "Ada" in shown.output
    assert write("yacht", "--agent", "greedy", "--episodes", "2", "--id", "t/yacht/g-v0") == 0
    plain = minari.load_dataset("t/yacht/g-v0").storage.metadata
    assert "author" not in plain and "code_permalink" not in plain
    assert datasets.dataset_info(minari.load_dataset("t/yacht/g-v0"))["agent_sha256"] is None
    with pytest.raises(datasets.DatasetError, match="author must be a non-empty string"):
        datasets.write_dataset("yacht", "greedy", 1, dataset_id="t/yacht/x-v0", author=["Ada", " "])


def _snapshot(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--agent", "nobody", "--episodes", "3"], "unknown agent 'nobody'"),
        (["--agent", "optimal:eps=1.5", "--episodes", "3"], "eps must be a number in [0, 1]"),
        (["--agent", "random", "--episodes", "0"], "episodes must be an integer >= 1, got 0"),
        (["--agent", "random", "--episodes", "3", "--id", "not an id"], "malformed dataset id 'not an id'"),
        (["--agent", "random", "--episodes", "3", "--id", "dice_poker/yacht/random-v0"], "already exists"),
        (["--agent", "model:/no/such/policy.npz", "--episodes", "3"], "no such policy file"),
        (["--agent", "random", "--episodes", "3", "--option", "joker=free"], "joker"),
        (["--agent", "winning", "--episodes", "3"], "plays to finish first at a table"),
    ],
)
def test_bad_input_is_one_line_and_leaves_datasets_untouched(argv, message, datasets_root, capsys):
    assert write("yacht", "--agent", "random", "--episodes", "3") == 0
    before = _snapshot(datasets_root)
    capsys.readouterr()
    assert write("yacht", *argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("dice-poker dataset: error: ") and message in err and err.count("\n") == 1
    assert _snapshot(datasets_root) == before  # nothing changed, no partial dataset left


def test_an_unwritable_datasets_folder_is_refused(tmp_path, monkeypatch, capsys):
    (tmp_path / "file").write_text("not a folder")
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "file" / "datasets"))
    assert write("yacht", "--agent", "random", "--episodes", "3") == 2
    err = capsys.readouterr().err
    assert "is not a folder" in err and err.count("\n") == 1
    if Path("/proc/self").is_dir():  # a folder no one can write in (os.access lets root through on some)
        monkeypatch.setenv("MINARI_DATASETS_PATH", "/proc/self/datasets")
        assert write("yacht", "--agent", "random", "--episodes", "3") == 2
        err = capsys.readouterr().err
        assert "/proc/self is not writable" in err and "MINARI_DATASETS_PATH" in err and err.count("\n") == 1


def test_usage_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["yacht", "--episodes", "3"])  # no --agent
    assert exit_info.value.code == 2


def test_overwrite_replaces_only_a_complete_dataset(datasets_root, monkeypatch):
    assert write("yacht", "--agent", "random", "--episodes", "3") == 0
    before = _snapshot(datasets_root)

    def broken(*args, **kwargs):
        raise OSError("disk full")

    with monkeypatch.context() as patch:  # a failure while the new dataset is written
        patch.setattr(datasets, "play_block", broken)
        assert write("yacht", "--agent", "random", "--episodes", "5", "--overwrite") == 2
    assert _snapshot(datasets_root) == before
    assert not [p for p in datasets_root.rglob(".*")]  # no hidden partial folder left
    assert write("yacht", "--agent", "random", "--episodes", "5", "--overwrite") == 0
    assert minari.load_dataset("dice_poker/yacht/random-v0").total_episodes == 5
    assert not [p for p in datasets_root.rglob(".*")]


def test_overwrite_refuses_a_folder_that_is_not_a_dataset(datasets_root, capsys):
    (datasets_root / "dice_poker" / "yacht" / "random-v0").mkdir(parents=True)
    (datasets_root / "dice_poker" / "yacht" / "random-v0" / "mine.txt").write_text("keep me")
    assert write("yacht", "--agent", "random", "--episodes", "3", "--overwrite") == 2
    assert "is not a Minari dataset" in capsys.readouterr().err
    assert (datasets_root / "dice_poker" / "yacht" / "random-v0" / "mine.txt").read_text() == "keep me"


def test_default_ids_and_agent_specs():
    rules = load_rules("yacht")
    assert datasets.default_dataset_id(rules, "optimal") == "dice_poker/yacht/optimal-v0"
    assert datasets.default_dataset_id(rules, "optimal:eps=0.2") == "dice_poker/yacht/optimal-eps0_2-v0"
    assert datasets.default_dataset_id(rules, "model:runs/a/final_model.npz") == "dice_poker/yacht/model-final_model-v0"
    free = load_rules("yahtzee", joker="free")  # another game: never the default game's id
    assert datasets.default_dataset_id(free, "optimal") == "dice_poker/yahtzee-joker_free/optimal-v0"
    assert (
        datasets.default_dataset_id(load_rules("yahtzee", joker="forced"), "optimal") == "dice_poker/yahtzee/optimal-v0"
    )
    assert datasets.parse_agent("greedy:eps=0.5") == datasets.DatasetAgentSpec("greedy:eps=0.5", "greedy", 0.5)
    # the observation layout: the default's id unchanged, the other's its own (a dict and a flat dataset collided)
    assert datasets.default_dataset_id(rules, "greedy", "flat") == "dice_poker/yacht/greedy-v0"
    assert datasets.default_dataset_id(rules, "greedy", "dict") == "dice_poker/yacht/greedy-dict-v0"


def test_a_dict_and_a_flat_dataset_of_one_agent_do_not_collide(datasets_root):
    """Without --id, --obs-mode dict wrote dice_poker/yacht/greedy-v0 too: refused as existing, or with --overwrite
    silently replacing the flat one."""
    assert write("yacht", "--agent", "random", "--episodes", "3") == 0
    assert write("yacht", "--agent", "random", "--episodes", "3", "--obs-mode", "dict") == 0
    flat, layered = (
        minari.load_dataset("dice_poker/yacht/random-v0"),
        minari.load_dataset("dice_poker/yacht/random-dict-v0"),
    )
    assert flat.env_spec.kwargs["obs_mode"] == "flat" and layered.env_spec.kwargs["obs_mode"] == "dict"
    with pytest.raises(datasets.DatasetError, match="eps must be"):
        datasets.parse_agent("optimal:eps=x")
    with pytest.raises(datasets.DatasetError, match="unknown agent 'model:'"):
        datasets.parse_agent("model:")


def test_the_core_package_never_imports_minari():
    code = (
        "import sys, dice_poker_env, gymnasium as gym; from dice_poker_env.solver import solve; "
        "gym.make('DicePoker/Yacht-v0'); print(json.dumps([m for m in ('minari', 'h5py', 'agents') if m in sys.modules]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", "import json; " + code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ},
        timeout=600,
    )
    assert json.loads(out.stdout) == []


# ------------------------------------------------------------------ the imitation baseline (algo: bc)
BC_SMALL = [
    "bc_epochs=2",
    "batch_size=256",
    "eval_episodes=40",
    "bench_games=40",
    "bench_agents=[greedy]",
    "bench_workers=1",
    "progress_bar=false",
    "net_arch=[32]",
]


def test_bc_trains_from_a_dataset_into_the_usual_run_folder(tmp_path):
    pytest.importorskip("torch")
    from pathlib import Path

    from agents.policy.player import PolicyAgent

    assert write("yacht", "--agent", "optimal", "--episodes", "60") == 0
    train = load_train()
    config = str(Path(__file__).resolve().parents[1] / "configs" / "bc_yacht.yaml")
    run_dir = tmp_path / "run"
    results = train.main(["--config", config, "--run-dir", str(run_dir), *BC_SMALL])
    for name in ("config.yaml", "final_model.npz", "best_model.npz", "evaluations.csv", "results.json"):
        assert (run_dir / name).is_file(), name
    assert results["algorithm"] == "bc" and results["label"] == "bc (imitation of the solver)"
    assert set(results["agents"]) == {"greedy", "bc (imitation of the solver)"}
    assert json.loads((run_dir / "results.json").read_text())["label"] == "bc (imitation of the solver)"
    assert len((run_dir / "evaluations.csv").read_text().splitlines()) == 3  # header and one row an epoch
    agent = PolicyAgent.load(run_dir / "final_model.npz", "yacht")
    assert agent.metadata["algorithm"] == "bc" and agent.metadata["label"] == "imitation of the solver"
    assert agent.metadata["dataset"] == "dice_poker/yacht/optimal-v0" and agent.distinct_keeps
    assert results["timesteps"] == 2 * minari.load_dataset("dice_poker/yacht/optimal-v0").total_steps


@pytest.mark.parametrize(
    "setup, overrides, message",
    [
        (None, [], "not found under MINARI_DATASETS_PATH"),
        (["yatzy", "--agent", "random", "--episodes", "3", "--id", "dice_poker/yacht/optimal-v0"], [], "not of yacht"),
        (
            [
                "yacht",
                "--agent",
                "random",
                "--episodes",
                "3",
                "--obs-mode",
                "dict",
                "--id",
                "dice_poker/yacht/optimal-v0",
            ],
            [],
            "bc needs flat ones",
        ),
        (None, ["dataset="], "bc imitates a dataset: set dataset=ID"),
        (None, ["obs_mode=dict"], "bc uses the flat observation"),
    ],
)
def test_bc_refuses_a_missing_or_unfit_dataset_before_the_run_folder(
    setup, overrides, message, tmp_path, capsys, monkeypatch
):
    pytest.importorskip("torch")
    from pathlib import Path

    monkeypatch.setattr("agents.evaluation.benchmark.load_solution", lambda rules, required=False, progress=None: None)
    if setup:
        assert write(*setup) == 0
    train = load_train()
    config = str(Path(__file__).resolve().parents[1] / "configs" / "bc_yacht.yaml")
    run_dir = tmp_path / "run"
    with pytest.raises(SystemExit) as exit_info:
        train.main(["--config", config, "--run-dir", str(run_dir), "solver=off", *BC_SMALL, *overrides])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert message in err and err.startswith("train.py: error: ") and err.count("\n") == 1
    assert not run_dir.exists()


def test_canonical_actions_keep_the_same_dice_with_the_lowest_bitmask():
    from agents.training.bc import canonical_actions
    from dice_poker_env.engine.combinatorics import CANONICAL_KEEP_ACTION, KEEP_OF_ACTION, N_ROLLS

    rng = np.random.default_rng(0)
    rolls = rng.integers(0, N_ROLLS, 5000)
    actions = rng.integers(0, 44, 5000)
    actions[actions == 31] = 32
    out = canonical_actions(actions, rolls)
    keep = actions < N_KEEP_ACTIONS
    assert np.array_equal(out[~keep], actions[~keep])
    assert np.array_equal(KEEP_OF_ACTION[rolls[keep], out[keep]], KEEP_OF_ACTION[rolls[keep], actions[keep]])
    assert CANONICAL_KEEP_ACTION[rolls[keep], out[keep]].all() and (out[keep] <= actions[keep]).all()


@pytest.mark.parametrize("obs_mode", ["flat", "dict"])
def test_load_transitions_reads_what_iterate_episodes_reads(obs_mode, monkeypatch):
    monkeypatch.setattr("agents.evaluation.benchmark.load_solution", lambda rules, required=False, progress=None: None)
    assert write("yacht", "--agent", "greedy:eps=0.5", "--episodes", "7", "--obs-mode", obs_mode) == 0
    dataset_id = "dice_poker/yacht/greedy-eps0_5" + ("-dict" if obs_mode == "dict" else "") + "-v0"
    steps = datasets.load_transitions(dataset_id)
    episodes = list(minari.load_dataset(dataset_id).iterate_episodes())
    cut = lambda e, v: v[: len(e.actions)]  # noqa: E731
    assert np.array_equal(steps["actions"], np.concatenate([e.actions for e in episodes]))
    assert np.array_equal(steps["rewards"], np.concatenate([e.rewards for e in episodes]))
    assert np.array_equal(steps["action_mask"], np.concatenate([cut(e, e.infos["action_mask"]) for e in episodes]))
    assert np.array_equal(steps["episode"], np.concatenate([np.full(len(e.actions), e.id) for e in episodes]))
    if obs_mode == "flat":
        assert np.array_equal(steps["observations"], np.concatenate([cut(e, e.observations) for e in episodes]))
    else:
        for key in episodes[0].observations:
            assert np.array_equal(
                steps["observations"][key], np.concatenate([cut(e, e.observations[key]) for e in episodes])
            )
    assert "action_values" not in steps
    with pytest.raises(datasets.DatasetError, match="not found"):
        datasets.load_transitions("dice_poker/yacht/nothing-v0")


def test_a_damaged_or_hand_made_dataset_is_a_one_line_error(datasets_root, monkeypatch):
    """Episodes whose arrays do not fit each other (more actions than rewards: rows were left unread, and
    training crashed on them) and metadata without the keys every reader needs: DatasetError, one line."""
    import h5py

    monkeypatch.setattr("agents.evaluation.benchmark.load_solution", lambda rules, required=False, progress=None: None)
    dataset_id = "dice_poker/yacht/greedy-eps0_5-v0"
    assert write("yacht", "--agent", "greedy:eps=0.5", "--episodes", "3") == 0
    data = datasets_root / dataset_id / "data"
    with h5py.File(data / "main_data.hdf5", "a") as file:
        actions = file["episode_0/actions"][()]
        longer = np.concatenate([actions, actions[:1]])  # (one more than it has rewards: a game's length still)
        del file["episode_0/actions"]
        file["episode_0/actions"] = longer
    with pytest.raises(datasets.DatasetError, match="episode 0 holds .* actions but its .* has shape") as info:
        datasets.load_transitions(dataset_id)
    assert "\n" not in str(info.value)
    metadata = json.loads((data / "metadata.json").read_text())
    info_text = metadata["dice_poker"]
    stored = json.loads(info_text) if isinstance(info_text, str) else info_text
    stored.pop("rules_fingerprint")
    metadata["dice_poker"] = json.dumps(stored) if isinstance(info_text, str) else stored
    (data / "metadata.json").write_text(json.dumps(metadata))
    with pytest.raises(datasets.DatasetError, match="metadata lacks rules_fingerprint"):
        datasets.dataset_info(minari.load_dataset(dataset_id))


@pytest.mark.parametrize(
    ("field", "shape", "message"),
    [
        (
            "actions",
            (10**13,),
            r"episode 0 has actions of shape \(10000000000000,\); a game of its ruleset is at most 36",
        ),
        (
            "actions",
            (2_000_000_000,),
            r"actions of shape \(2000000000,\); a game of its ruleset is at most 36 decisions",
        ),
        (
            "observations",
            (13, 10**9),
            r"its observations have rows of shape \(1000000000,\) .* not numbers of shape \(81,\)",
        ),
        ("infos/action_mask", (13, 44, 10**6), r"its infos/action_mask have rows of shape \(44, 1000000\)"),
    ],
)
def test_a_dataset_declaring_arrays_larger_than_a_game_is_refused_before_they_are_allocated(
    datasets_root, monkeypatch, field, shape, message
):
    """An HDF5 dataset of unwritten chunks reads as its fill value: a 54 KB dataset declaring 200 million actions
    took 3.1 GB of memory before a MemoryError traceback from train.py's bc (10**13: 72.8 TiB at once). The
    shapes are checked against the game (two keeps and a box a turn, one turn a box; its spaces' rows) first."""
    import h5py

    monkeypatch.setattr("agents.evaluation.benchmark.load_solution", lambda rules, required=False, progress=None: None)
    dataset_id = "dice_poker/yacht/greedy-v0"
    assert write("yacht", "--agent", "greedy", "--episodes", "2") == 0
    assert len(datasets.load_transitions(dataset_id)["actions"]) > 0  # as written, it reads
    with h5py.File(datasets_root / dataset_id / "data" / "main_data.hdf5", "a") as file:
        del file[f"episode_0/{field}"]
        chunks = tuple(min(n, 1024) for n in shape)  # (none written: a few bytes of file)
        file.create_dataset(f"episode_0/{field}", shape=shape, dtype=np.int64, chunks=chunks)
    assert (datasets_root / dataset_id / "data" / "main_data.hdf5").stat().st_size < 1_000_000
    with pytest.raises(datasets.DatasetError, match=message) as info:
        datasets.load_transitions(dataset_id)
    assert "\n" not in str(info.value)


def _dead_pid() -> int:
    pid = 4_000_000
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        except PermissionError:
            pass
        pid += 1


def test_a_killed_writer_leaves_nothing_behind_once_the_next_one_runs(datasets_root):
    assert write("yacht", "--agent", "random", "--episodes", "3") == 0
    before = minari.load_dataset("dice_poker/yacht/random-v0").total_episodes
    pid = _dead_pid()
    (datasets_root / f".partial-dice_poker__yacht__greedy-v0-{pid}" / "data").mkdir(parents=True)
    namespace = datasets_root / "dice_poker" / "yacht"
    (namespace / "random-v0").rename(namespace / f".replaced-random-v0-{pid}")  # killed between its two renames
    assert write("yacht", "--agent", "greedy", "--episodes", "3") == 0
    assert not list(datasets_root.glob(".partial-*"))
    assert minari.load_dataset("dice_poker/yacht/random-v0").total_episodes == before  # moved back
    assert not list(namespace.glob(".replaced-*"))


def test_a_terminated_command_removes_its_partial_dataset(datasets_root):
    import signal
    import time

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agents.commands.dataset",
            "yacht",
            "--agent",
            "random",
            "--episodes",
            "200000",
            "--block",
            "50",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 300
    while not list(datasets_root.glob(".partial-*/data/main_data.hdf5")) and time.monotonic() < deadline:
        time.sleep(0.2)
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=300)
    assert process.returncode == 130 and "interrupted; nothing was written" in err, (
        process.returncode,
        out,
        err[-2000:],
    )
    assert (
        not list(datasets_root.glob(".partial-*"))
        and not (datasets_root / "dice_poker" / "yacht" / "random-v0").exists()
    )


class _SignalInDel:
    """Sends SIGTERM to this process from inside ``__del__``, where Python swallows the handler's exception."""

    def __del__(self) -> None:
        import signal

        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(1000):  # the handler runs between these bytecodes, inside __del__
            pass


def test_an_interrupt_swallowed_inside_a_finalizer_still_stops_the_write(datasets_root, monkeypatch, capsys):
    """The CI failure of the ninth session: SIGTERM's KeyboardInterrupt landed in an h5py finalizer, was
    printed as "Exception ignored" and lost, and the command wrote the whole dataset and returned 0."""
    assert write("yacht", "--agent", "random", "--episodes", "3", "--seed", "1") == 0
    before = minari.load_dataset("dice_poker/yacht/random-v0").total_episodes
    played = datasets.play_block
    calls = []

    def play_and_signal(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            _SignalInDel()  # dropped at once: its __del__ runs, the handler raises there, Python prints and goes on
        return played(*args, **kwargs)

    swallowed = []
    monkeypatch.setattr(datasets, "play_block", play_and_signal)
    monkeypatch.setattr(sys, "unraisablehook", lambda unraisable: swallowed.append(unraisable.exc_type))
    assert write("yacht", "--agent", "random", "--episodes", "40", "--block", "10", "--overwrite") == 130
    assert swallowed == [KeyboardInterrupt]  # the raise itself was lost, as in CI
    assert "interrupted; nothing was written" in capsys.readouterr().err
    assert len(calls) == 1  # stopped after the block during which the signal came
    assert not list(datasets_root.glob(".partial-*"))
    assert minari.load_dataset("dice_poker/yacht/random-v0").total_episodes == before  # the old one is untouched


def test_write_dataset_stops_when_asked_and_leaves_nothing(datasets_root):
    with pytest.raises(KeyboardInterrupt):
        datasets.write_dataset("yacht", "random", 20, block=5, stop=lambda: True)
    assert not list(datasets_root.rglob("*random*")) and not list(datasets_root.glob(".partial-*"))


def test_a_live_writers_temporary_folder_is_kept_whatever_its_process_id_says(datasets_root):
    """Writers sharing a folder across hosts or PID namespaces: a temporary folder is stale only when its
    writer's lock is free, not when a process of its number is missing here."""
    import fcntl

    token = "w0123456789abcdef"
    partial = datasets_root / f".partial-dice_poker__yacht__greedy-v0-{token}"
    (partial / "data").mkdir(parents=True)
    lock = datasets_root / f".lock-{token}"
    with open(lock, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # another writer, still writing
        assert write("yacht", "--agent", "random", "--episodes", "3") == 0
        assert partial.is_dir() and lock.is_file()
    assert write("yacht", "--agent", "random", "--episodes", "3", "--overwrite") == 0  # its writer died
    assert not partial.exists() and not lock.exists()
    assert not list(datasets_root.glob(".lock*"))  # a writer leaves no lock file of its own


@pytest.mark.parametrize("agent", ["random", "greedy:eps=0.3"])
def test_block_and_episodes_change_no_random_or_exploring_action(agent, datasets_root):
    """The random agent's and the exploration's draws come from each game's seed and decision: the same games
    whatever --block, and a larger --episodes starts with the same ones."""
    runs = {"a": ["--block", "7"], "b": ["--block", "50"], "c": ["--episodes", "30"]}
    for name, extra in runs.items():
        argv = ["yacht", "--agent", agent, "--episodes", "20", "--seed", "4", "--id", f"t/yacht/{name}-v0", *extra]
        assert write(*argv) == 0
    episodes = {name: list(minari.load_dataset(f"t/yacht/{name}-v0").iterate_episodes()) for name in runs}
    assert len(episodes["c"]) == 30
    for other in ("b", "c"):
        for ea, eb in zip(episodes["a"], episodes[other][:20]):
            assert np.array_equal(ea.actions, eb.actions) and np.array_equal(ea.rewards, eb.rewards)
    actions = np.concatenate([e.actions for e in episodes["a"]])
    assert len(np.unique(actions)) > 10  # (random play, not one action)


def test_every_decision_draw_of_a_game_is_its_own():
    """A decision's two draws (explore or not, which random action) are distinct from every other decision's:
    no draw is reused as the next decision's, which would tie the exploration to the last random action."""
    seeds = np.arange(1000, 1050)
    draws = np.stack([datasets.decision_draws(seeds, step) for step in range(12)], axis=1)  # (games, steps, 2)
    assert np.all((draws >= 0.0) & (draws < 1.0))
    assert len(np.unique(draws)) == draws.size
    assert np.array_equal(datasets.decision_draws(seeds[10:20], 5), draws[10:20, 5])  # a game's own, any block


def test_a_relative_datasets_path_is_read_from_the_working_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MINARI_DATASETS_PATH", "relative")
    assert write("yacht", "--agent", "random", "--episodes", "3") == 0
    assert (tmp_path / "relative" / "dice_poker" / "yacht" / "random-v0").is_dir()
    assert minari.load_dataset("dice_poker/yacht/random-v0").total_episodes == 3


def test_a_missing_h5py_is_one_line(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "h5py", None)
    assert write("yacht", "--agent", "random", "--episodes", "3") == 2
    err = capsys.readouterr().err
    assert "h5py is not installed" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_bc_is_named_after_the_agent_its_dataset_records_not_its_id(tmp_path):
    pytest.importorskip("torch")
    from pathlib import Path

    assert write("yacht", "--agent", "greedy", "--episodes", "30", "--id", "mine/yacht/optimal-v0") == 0
    train = load_train()
    config = str(Path(__file__).resolve().parents[1] / "configs" / "bc_yacht.yaml")
    argv = ["--config", config, "--run-dir", str(tmp_path / "run"), *BC_SMALL, "dataset=mine/yacht/optimal-v0"]
    results = train.main(argv)
    assert results["label"] == "bc (imitation of the greedy agent)"


def test_a_combined_dataset_with_and_without_values_loads_without_them(datasets_root):
    """minari.combine_datasets of a dataset with action values and one without: every field is read, the
    values (not in every episode) are left out, on both read paths."""
    assert write("yacht", "--agent", "optimal", "--episodes", "4", "--with-values", "--id", "t/yacht/v-v0") == 0
    assert write("yacht", "--agent", "greedy", "--episodes", "3", "--id", "t/yacht/g-v0") == 0
    parts = [minari.load_dataset("t/yacht/v-v0"), minari.load_dataset("t/yacht/g-v0")]
    minari.combine_datasets(parts, "t/yacht/mixed-v0")
    steps = datasets.load_transitions("t/yacht/mixed-v0")
    episodes = list(minari.load_dataset("t/yacht/mixed-v0").iterate_episodes())
    assert len(episodes) == 7 and "action_values" not in steps
    assert np.array_equal(steps["actions"], np.concatenate([e.actions for e in episodes]))
    generic = datasets._transitions(
        type("NotHdf5", (), {"storage": type("S", (), {"metadata": {}})(), "iterate_episodes": lambda self: episodes})()
    )
    assert "action_values" not in generic and np.array_equal(generic["actions"], steps["actions"])


def test_a_combined_datasets_lost_metadata_and_seeds_are_one_line_errors_naming_the_combination(datasets_root):
    """minari.combine_datasets keeps neither the 'dice_poker' metadata nor the episode seeds: dataset_info,
    episode_seeds and bc's reader say so in one line (not a KeyError), naming the datasets it combines."""
    assert write("yacht", "--agent", "optimal", "--episodes", "2", "--id", "t/yacht/o-v0") == 0
    assert write("yacht", "--agent", "optimal:eps=0.5", "--episodes", "2", "--id", "t/yacht/e-v0") == 0
    parts = [minari.load_dataset("t/yacht/o-v0"), minari.load_dataset("t/yacht/e-v0")]
    combined = minari.combine_datasets(parts, "t/yacht/both-v0")
    for read in (datasets.dataset_info, datasets.episode_seeds):
        with pytest.raises(datasets.DatasetError, match=r"combines t/yacht/o-v0, t/yacht/e-v0 \(minari\.combine") as e:
            read(combined)
        assert "\n" not in str(e.value)
    assert len(datasets.episode_seeds(parts[0])) == 2
    assert len(datasets.load_transitions("t/yacht/both-v0")["actions"]) > 0


def test_a_damaged_metadata_file_is_a_one_line_error(datasets_root):
    assert write("yacht", "--agent", "random", "--episodes", "3") == 0
    metadata = datasets_root / "dice_poker" / "yacht" / "random-v0" / "data" / "metadata.json"
    for damaged in (metadata.read_text()[:40], "{}", "[]"):
        metadata.write_text(damaged)
        with pytest.raises(datasets.DatasetError, match=r"cannot be opened \(.*metadata\.json damaged or hand-made"):
            datasets.load_transitions("dice_poker/yacht/random-v0")
        with pytest.raises(datasets.DatasetError, match="cannot be opened"):
            datasets.open_dataset("dice_poker/yacht/random-v0")


def test_a_dataset_that_would_run_code_is_refused_before_minari_reads_it(datasets_root, tmp_path):
    """A hand-made metadata.json without its spaces made Minari build the env its env_spec names (``os:system``
    with a command: the red team's code ran as the user, before any error); one naming a foreign entry point
    would run it in ``recover_environment``. Both are refused, nothing of them run."""
    assert write("yacht", "--agent", "random", "--episodes", "3") == 0
    metadata = datasets_root / "dice_poker" / "yacht" / "random-v0" / "data" / "metadata.json"
    honest = json.loads(metadata.read_text())
    marker = tmp_path / "ran"
    evil = json.loads(honest["env_spec"]) | {"entry_point": "os:system", "kwargs": {"command": f"touch {marker}"}}
    for spaces in ((), ("observation_space",), ("action_space",)):
        hand_made = {k: v for k, v in honest.items() if k not in spaces} | {"env_spec": json.dumps(evil)}
        metadata.write_text(json.dumps(hand_made))
        for load in (datasets.open_dataset, datasets.load_transitions):
            with pytest.raises(datasets.DatasetError, match="cannot be opened") as refused:
                load("dice_poker/yacht/random-v0")
            message = str(refused.value)
            assert ("running its code" if spaces else "names the entry point 'os:system'") in message, message
    wrapped = json.loads(honest["env_spec"]) | {"additional_wrappers": [{"name": "W", "entry_point": "os:system"}]}
    metadata.write_text(json.dumps(honest | {"env_spec": json.dumps(wrapped)}))
    with pytest.raises(datasets.DatasetError, match="its env_spec wraps the env"):
        datasets.open_dataset("dice_poker/yacht/random-v0")
    # the evaluation env's spec too, and an entry point of the library that is not its env (the reviewer's: the
    # command line's main would run any command through an agent spec)
    metadata.write_text(json.dumps(honest | {"eval_env_spec": json.dumps(evil)}))
    with pytest.raises(datasets.DatasetError, match="its eval_env_spec names the entry point 'os:system'"):
        datasets.open_dataset("dice_poker/yacht/random-v0")
    cli = json.loads(honest["env_spec"]) | {"entry_point": "dice_poker_env.cli:main"}
    metadata.write_text(json.dumps(honest | {"env_spec": json.dumps(cli)}))
    with pytest.raises(datasets.DatasetError, match="names the entry point 'dice_poker_env.cli:main', not this"):
        datasets.open_dataset("dice_poker/yacht/random-v0")
    assert not marker.exists()
    metadata.write_text(json.dumps(honest))  # the library's own: opens
    assert datasets.open_dataset("dice_poker/yacht/random-v0").total_episodes == 3


@pytest.mark.filterwarnings("ignore:Failed to make env")  # (Minari's words once os.system has run)
def test_minari_show_builds_the_env_and_minari_list_does_not_as_the_docs_warn(datasets_root, tmp_path):
    """docs/datasets.md tells a user to check a dataset they did not write before ``minari show``: Minari's show
    builds the env its env_spec names (runs its entry point) whatever the spaces, while ``minari list`` does not,
    and ``open_dataset`` refuses the same file without running it."""
    from minari.cli import app
    from typer.testing import CliRunner

    assert write("yacht", "--agent", "random", "--episodes", "2") == 0
    metadata = datasets_root / "dice_poker" / "yacht" / "random-v0" / "data" / "metadata.json"
    honest = json.loads(metadata.read_text())
    marker = tmp_path / "ran"
    evil = json.loads(honest["env_spec"]) | {"entry_point": "os:system", "kwargs": {"command": f"touch {marker}"}}
    metadata.write_text(json.dumps(honest | {"env_spec": json.dumps(evil)}))
    with pytest.raises(datasets.DatasetError, match="names the entry point 'os:system'"):
        datasets.open_dataset("dice_poker/yacht/random-v0")
    assert CliRunner().invoke(app, ["list", "local"]).exit_code == 0 and not marker.exists()
    CliRunner().invoke(app, ["show", "dice_poker/yacht/random-v0"])
    assert marker.exists()  # (if Minari stops doing this, the warning in docs/datasets.md can go)
    docs = (Path(__file__).resolve().parents[1] / "docs" / "datasets.md").read_text()
    assert "or `minari show` (which\ndescribes its env by building it)" in docs


def test_the_same_arguments_write_the_same_bytes(tmp_path, monkeypatch):
    """No modification time anywhere in the HDF5 file (the root group's too): a dataset's hash identifies it."""
    import time

    files = []
    for name in ("a", "b"):
        monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / name))
        assert write("yacht", "--agent", "greedy:eps=0.2", "--episodes", "5", "--quiet") == 0
        files.append(tmp_path / name / "dice_poker" / "yacht" / "greedy-eps0_2-v0" / "data" / "main_data.hdf5")
        time.sleep(1.1)  # (HDF5 times are in seconds)
    assert files[0].read_bytes() == files[1].read_bytes()


def test_a_filesystem_without_locks_or_flock_itself_still_writes(datasets_root, monkeypatch):
    """flock refused (ENOLCK: a filesystem without locks) or missing (Windows): the dataset is written, and an
    unlockable writer's folder counts as alive, so nothing is deleted on a guess."""
    import errno

    def refuse(handle, operation):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(datasets.fcntl, "flock", refuse)
    assert write("yacht", "--agent", "random", "--episodes", "3") == 0
    token = "w00000000000000ff"
    (datasets_root / f".partial-x-{token}").mkdir()
    (datasets_root / f".lock-{token}").write_text("")
    datasets._remove_stale(datasets_root)
    assert (datasets_root / f".partial-x-{token}").is_dir()
    monkeypatch.setattr(datasets, "fcntl", None)
    assert write("yacht", "--agent", "greedy", "--episodes", "3") == 0
    assert not list(datasets_root.glob(".locktmp-*"))


def test_a_dataset_is_never_replaced_without_overwrite(datasets_root, tmp_path):
    """Another writer's dataset that appears while this one writes stays, and this one is refused; a dataset a
    killed --overwrite had moved aside is put back before the existence check, so it is not replaced either."""
    partial, final = tmp_path / "partial", datasets_root / "t" / "done-v0"
    (partial / "data").mkdir(parents=True)
    (final / "data").mkdir(parents=True)
    (final / "data" / "mine").write_text("theirs")
    with pytest.raises(datasets.DatasetError, match="written meanwhile by another writer"):
        datasets._replace(partial, final, "wtoken", overwrite=False)
    assert (final / "data" / "mine").read_text() == "theirs"
    assert write("yacht", "--agent", "random", "--episodes", "3", "--seed", "1") == 0
    namespace = datasets_root / "dice_poker" / "yacht"
    (namespace / "random-v0").rename(namespace / ".replaced-random-v0-w0123456789abcdef")  # its writer was killed
    assert write("yacht", "--agent", "random", "--episodes", "3", "--seed", "2") == 2  # refused: it is back
    assert datasets.dataset_info(minari.load_dataset("dice_poker/yacht/random-v0"))["seed"] == 1


def test_hostile_names_in_the_datasets_folder_stop_no_writer(datasets_root):
    """A FIFO as a lock file (opening it would block), .replaced- folders with names _replace never makes, and
    one whose original name is a dangling symlink: the writer goes on, and none of them is touched."""
    datasets_root.mkdir(parents=True, exist_ok=True)
    os.mkfifo(datasets_root / ".lock-wfifo")
    (datasets_root / ".partial-x-wfifo").mkdir()
    (datasets_root / ".replaced-.-wdead").mkdir()
    (datasets_root / ".replaced-Y-wdead").mkdir()
    (datasets_root / "Y").symlink_to("/nonexistent")
    assert write("yacht", "--agent", "random", "--episodes", "3") == 0
    assert (datasets_root / ".partial-x-wfifo").is_dir() and (datasets_root / ".replaced-.-wdead").is_dir()
    assert (datasets_root / "Y").is_symlink()
