"""train.py: config loading and overrides, the smoke run (subprocess), resume, saved models."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from train_script import load_train

ROOT = Path(__file__).resolve().parents[1]
pytest.importorskip("yaml")


def test_every_config_field_is_documented():
    import dataclasses

    train = load_train()
    for section in config_sections():
        docs = train.field_docs(section)
        missing = [f.name for f in dataclasses.fields(section) if not docs.get(f.name)]
        assert not missing, f"{section.__name__}: fields without a docstring: {missing}"


def config_sections():
    from agents.training.config import FAMILIES

    return list(FAMILIES)


def test_the_default_run_folder_stays_inside_runs_dir_whatever_the_ruleset_is_named(tmp_path):
    """A rules file's name is any text: name = "../escaped" put train.py's run folder beside runs_dir (and an
    absolute name anywhere on disk)."""
    from agents.training.run import default_run_dir
    from dice_poker_env import load_rules

    boxes = [{"name": "c", "kind": "chance"}]
    for name, folder in (("../escaped", "___escaped"), ("/tmp/x", "_tmp_x"), ("", "rules"), ("mini_yacht", None)):
        run_dir = default_run_dir(tmp_path / "runs", load_rules({"name": name, "boxes": boxes}), "bc", 3, "STAMP")
        assert run_dir.parent == tmp_path / "runs"
        assert run_dir.name == f"{folder or name}__bc__s3__STAMP"


def test_an_algorithm_is_registered_in_one_place():
    """SECTIONS alone says which trainer runs an algorithm and where --help lists it; each batched algorithm
    has its update rule in the module its algo names (CONTRIBUTING.md, "Add an algorithm")."""
    import importlib

    from agents.training import config
    from agents.training.trainer import update_module

    runners = (config.BATCHED_ALGORITHMS, config.SB3_ALGORITHMS, config.IMITATION_ALGORITHMS, config.RLLIB_ALGORITHMS)
    assert sorted(a for runner in runners for a in runner) == sorted(config.SECTIONS)  # each in exactly one
    assert sorted(a for algos in config.FAMILIES.values() for a in algos) == sorted(config.SECTIONS)
    for algo in config.BATCHED_ALGORITHMS:
        assert callable(importlib.import_module(update_module(algo)).update), algo
    assert (
        update_module("batched_pqn") == "agents.training.pqn" and update_module("my_algo") == "agents.training.my_algo"
    )
    assert set(config.UNUSED) <= set(config.SECTIONS)
    with pytest.raises(ValueError, match="algo must be one of .* \\(or pqn for batched_pqn\\), got 'x'"):
        config.section("x")


def test_help_lists_every_field_with_its_type_default_and_doc_by_section(capsys):
    import dataclasses

    from agents.training.config import Common

    train = load_train()
    with pytest.raises(SystemExit) as exit_info:
        train.parse_args(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    common = {f.name for f in dataclasses.fields(Common)}
    for section in config_sections():
        defaults = section()
        for f in dataclasses.fields(section):
            if f.name in common:
                continue
            line = f"  {f.name}: {f.type} = {getattr(defaults, f.name)!r}\n      {f.metadata['doc']}\n"
            assert line in out, (section.__name__, f.name)
    recipe, docs = train.Config(), train.field_docs(Common)  # (algo's doc ends with the registered algorithms)
    for f in dataclasses.fields(Common):
        assert f"  {f.name}: {f.type} = {getattr(recipe, f.name)!r}\n      {docs[f.name]}\n" in out, f.name


def test_help_follows_the_registry_and_names_every_redeclared_default(monkeypatch):
    """A new algorithm is listed in algo's doc once registered in SECTIONS; "defaults changed:" names the defaults a
    section redeclares, of the common fields and of its base sections' (PQN's total_timesteps, box_points)."""
    from agents.training import config

    monkeypatch.setitem(config.SECTIONS, "my_algo", config.BatchedPQN)
    assert "batched_pqn, my_algo (BatchedPQN)" in config.field_docs(config.Common)["algo"]
    text = config.help_text()
    pqn = text.split("algo: batched_pqn")[1].split("\n\nalgo: ")[0]
    changed = pqn.split("defaults changed: ")[1].splitlines()[0]
    for default in ("max_grad_norm=10.0", "total_timesteps=5000000", "checkpoint_freq=1000000", "box_points=1.0"):
        assert default in changed, default
    assert "defaults changed" not in text.split("algo: batched_ppo | batched_a2c")[1].split("\n\nalgo: ")[0]
    assert "algo=" not in text  # a section's algo is in its heading, not a changed default


def test_the_defaults_are_the_shipped_recipe():
    import yaml

    train = load_train()
    recipe = train.make_config(yaml.safe_load((ROOT / "configs" / "batched_ppo_yacht.yaml").read_text()))
    assert train.make_config({}) == train.Config() == type(recipe)(**{**vars(recipe), "recipe": ""})
    assert type(recipe).__name__ == "BatchedPPO" and recipe.algo == "batched_ppo"


def test_a_section_of_one_algorithm_has_its_shipped_config_as_its_defaults():
    """A batched section's defaults are its recipe (agents/training/config.py): python train.py algo=X and --config
    configs/X_yacht.yaml, when shipped, train the same (batched_pqn; a new algorithm with a section of its own)."""
    import yaml

    from agents.training.config import FAMILIES, Batched

    train = load_train()
    for cls, algos in FAMILIES.items():
        shipped = ROOT / "configs" / f"{algos[0]}_yacht.yaml"
        if not issubclass(cls, Batched) or len(algos) > 1 or not shipped.is_file():
            continue  # (the others' defaults are a quick start; a shared section's recipes are its algorithms' files)
        recipe = train.make_config(yaml.safe_load(shipped.read_text()))
        defaults = train.make_config({"algo": algos[0]})
        differ = {
            k: (v, getattr(defaults, k)) for k, v in vars(recipe).items() if k != "recipe" and v != getattr(defaults, k)
        }
        assert not differ, f"{shipped.name} differs from {type(recipe).__name__}'s defaults (file, default): {differ}"


def test_a_field_the_algorithm_does_not_use_is_a_one_line_error():
    train = load_train()
    with pytest.raises(ValueError, match=r"config field 'buffer_size' is not used by algo batched_ppo"):
        train.make_config({"buffer_size": 1000})
    with pytest.raises(ValueError, match=r"config field 'clip_range' is not used by algo batched_a2c"):
        train.make_config({"algo": "batched_a2c"}, ["clip_range=0.1"])
    with pytest.raises(ValueError, match=r"config field 'keep_points' is not used by algo maskable_ppo"):
        train.make_config({"algo": "maskable_ppo", "keep_points": True})
    with pytest.raises(ValueError, match=r"config field 'n_steps' is not used by algo dqn"):
        train.make_config({"algo": "dqn", "n_steps": 8})
    # the algo of an override picks the section: the file's keys are checked against it
    with pytest.raises(ValueError, match=r"config field 'ent_coef' is not used by algo batched_pqn"):
        train.make_config({"algo": "batched_ppo", "ent_coef": 0.01}, ["algo=pqn"])
    assert train.make_config({}, ["algo=pqn"]).algo == "batched_pqn"  # pqn: another name of batched_pqn


def test_a_field_the_algorithm_does_not_use_in_its_own_config_gets_no_hint_to_start_from_that_config(
    monkeypatch, capsys
):
    """Another algo's file is told of the algo's own config; the algo's own config (a new algorithm's, grown from
    configs/smoke_batched.yaml) is not told to start from itself."""
    train = load_train()
    own = ROOT / "configs" / "batched_pqn_yacht.yaml"
    with pytest.raises(ValueError, match=r"remove it \(or start from batched_pqn's own config"):
        train.make_config({"algo": "batched_pqn", "clip_range": 0.2}, base_file=ROOT / "configs" / "smoke.yaml")
    with pytest.raises(ValueError, match=r"'clip_range' is not used by algo batched_pqn; remove it$"):
        train.make_config({"algo": "batched_pqn", "clip_range": 0.2}, base_file=own)
    read = train.read_config_file
    monkeypatch.setattr(train, "read_config_file", lambda path: {**read(path), "clip_range": 0.2})
    err = refused(train, ["algo=batched_pqn"], capsys)  # (no --config: the algo's own recipe)
    assert (
        err
        == f"train.py: error: {own}: config file: config field 'clip_range' is not used by algo batched_pqn; remove it\n"
    )


@pytest.mark.parametrize("option", ["keep_head", "keep_points_rerolls", "bonus_shaping"])
def test_a_retired_option_is_a_one_line_error(option):
    train = load_train()
    with pytest.raises(ValueError, match=rf"option '{option}' was retired \("):
        train.make_config({option: 1})


def test_a_run_folder_config_of_the_flat_config_still_resumes():
    import dataclasses

    from agents.training.config import saved_run_config

    train = load_train()
    old = {**{f.name: getattr(train.Config(), f.name) for f in dataclasses.fields(train.Config)}}
    old.update(buffer_size=200_000, vec_env="dummy", keep_head=0, keep_points_rerolls=1, bonus_shaping=0.0)
    assert train.make_config(saved_run_config(old)) == train.Config()
    with pytest.raises(ValueError, match="'keep_head' was retired"):
        train.make_config(saved_run_config({**old, "keep_head": 32}))


def test_overrides_replace_whole_values_and_dotted_keys_reach_into_mappings():
    train = load_train()
    base = {
        "algo": "maskable_ppo",
        "rules": "yahtzee",
        "rules_options": {"joker": "free"},
        "algo_kwargs": {"target_kl": 0.02},
    }
    config = train.make_config(base, ["algo_kwargs={}", "rules_options.joker=none", "learning_rate=1e-3"])
    assert config.algo_kwargs == {} and config.rules_options == {"joker": "none"} and config.learning_rate == 0.001
    assert train.make_config(base).algo_kwargs == {"target_kl": 0.02}
    with pytest.raises(ValueError, match=r"override n_envs=2\.5: config field 'n_envs' expects int, got 2\.5"):
        train.make_config({}, ["n_envs=2.5"])
    with pytest.raises(ValueError, match=r"config field 'net_arch' expects list\[int\], got \[64, 'x'\]"):
        train.make_config({"net_arch": [64, "x"]})


def test_overrides_are_typed_and_checked():
    train = load_train()
    config = train.make_config(
        {"algo": "ppo", "net_arch": [32]},
        ["total_timesteps=5000", "net_arch=[64, 64]", "progress_bar=false", "rules_options={joker: free}"],
    )
    assert config.algo == "ppo" and config.total_timesteps == 5000 and config.net_arch == [64, 64]
    assert config.progress_bar is False and config.rules_options == {"joker": "free"}
    with pytest.raises(ValueError, match="unknown config field 'totl_timesteps'"):
        train.make_config({}, ["totl_timesteps=5"])
    with pytest.raises(ValueError, match="expects int"):
        train.make_config({}, ["n_envs=two"])
    with pytest.raises(ValueError, match="algo must be one of"):
        train.make_config({"algo": "sac"})
    with pytest.raises(ValueError, match="distinct_keeps needs a masked algorithm"):
        train.make_config({"algo": "dqn", "distinct_keeps": True})
    # a true-or-false field: OmegaConf reads any number as a bool (compile=2 was true without a word)
    for bad in ("compile=2", "progress_bar=-1", "compile=0.5"):
        with pytest.raises(ValueError, match=f"override {bad}: config field '.*' is true or false, got "):
            train.make_config({}, [bad])
    with pytest.raises(ValueError, match="config file: config field 'compile' is true or false, got 3"):
        train.make_config({"compile": 3})
    assert train.make_config({}, ["compile=1", "progress_bar=0"]).compile is True  # 0 and 1 are read as ever
    with pytest.raises(ValueError, match=r"got 'true' \(quoted: a text; write true or false without quotes\)"):
        train.make_config({"keep_points": True, "keep_points_bonus": "true"})


@pytest.mark.parametrize("path", sorted((ROOT / "configs").glob("*.yaml")), ids=lambda p: p.stem)
def test_shipped_configs_load(path):
    import yaml

    train = load_train()
    config = train.make_config(yaml.safe_load(path.read_text()))
    from dice_poker_env import load_rules

    load_rules(config.rules, **config.rules_options)


@pytest.mark.parametrize("path", sorted((ROOT / "configs").rglob("*.yaml")), ids=lambda p: p.stem)
def test_saved_run_config_is_a_config_file(path):
    """A run folder's config.yaml (``as_dict``) is a file ``--config`` takes back, for every algorithm: it names no
    field its algorithm does not use (a PQN run once saved ``players``, which ``--config`` refuses)."""
    import yaml

    train = load_train()
    data = yaml.safe_load(path.read_text())
    if not isinstance(data, dict) or "algo" not in data and path.parent.name == "sweeps":
        pytest.skip("a sweep file, not a config")
    config = train.make_config(data)
    saved = yaml.safe_load(yaml.safe_dump(train.as_dict(config), sort_keys=False))
    assert train.make_config(saved) == config


def test_required_configs_exist():
    names = {p.stem for p in (ROOT / "configs").glob("*.yaml")}
    from dice_poker_env import RULESET_NAMES

    for rules in RULESET_NAMES:
        assert f"maskable_ppo_{rules}" in names
    assert {"ppo_yacht", "a2c_yacht", "dqn_yacht", "smoke"} <= names


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    pytest.importorskip("sb3_contrib")
    run_dir = tmp_path_factory.mktemp("smoke")
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "train.py"),
            "--config",
            str(ROOT / "configs" / "smoke.yaml"),
            "--run-dir",
            str(run_dir),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-4000:]
    return run_dir, out.stdout


def test_smoke_config_runs_end_to_end(smoke_run):
    run_dir, stdout = smoke_run
    for name in ("config.yaml", "final_model.zip", "evaluations.csv", "results.json"):
        assert (run_dir / name).is_file(), name
    assert list((run_dir / "checkpoints").glob("model_*_steps.zip"))
    assert list((run_dir / "tb").rglob("events.out.tfevents.*"))
    results = json.loads((run_dir / "results.json").read_text())
    assert results["algorithm"] == "maskable_ppo" and results["rules"] == "yacht"
    assert results["timesteps"] >= 2048
    optimal = results["optimal_expected_score"]
    assert optimal == pytest.approx(169.773889, abs=1e-5)  # the exact solve of yacht (solver=auto)
    assert set(results["agents"]) == {"optimal", "greedy", "random", "model"}
    model = results["agents"]["model"]
    assert all(results[key] == model[key] for key in model)  # the trained agent's row, at the top level
    assert model["games"] == 30 and model["ci95"] > 0
    assert model["percent_of_optimal"] == pytest.approx(100 * model["mean"] / optimal)
    assert model["regret_mean"] > 0 and model["regret_ci95"] > 0  # an agent trained this briefly loses value
    assert model["regret_mean"] == pytest.approx(
        model["regret_keep_mean"] + model["regret_box_mean"] + model["regret_illegal_mean"]
    )
    assert "[eval]" in stdout and "% of optimal" in stdout
    assert "mean ± 95% CI" in stdout  # the rich table


def test_a_run_without_rich_writes_its_results_without_the_table(smoke_run, tmp_path, monkeypatch, capsys):
    """The benchmark table needs rich (the cli extra): without it the finished run's results.json is still written
    (it raised ModuleNotFoundError after the benchmark, before the write)."""
    import yaml

    from agents.training.config import make_config
    from agents.training.run import finish
    from dice_poker_env.rules import load_rules

    run_dir, _ = smoke_run
    config = make_config(
        yaml.safe_load((ROOT / "configs" / "smoke.yaml").read_text()), ["bench_agents=[random]", "bench_games=4"]
    )
    for name in ["rich", *(m for m in sys.modules if m.startswith("rich."))]:  # as if it were not installed (a
        monkeypatch.setitem(sys.modules, name, None)  # submodule imported by an earlier test would still import)
    results = finish(config, load_rules("yacht"), tmp_path, None, None, run_dir / "final_model.zip", 2048, 1.0)
    assert "no table (rich" in capsys.readouterr().out
    assert json.loads((tmp_path / "results.json").read_text())["agents"].keys() == results["agents"].keys()
    assert set(results["agents"]) == {"random", "model"} and results["games"] == 4


def test_resume_continues_from_the_latest_checkpoint(smoke_run, tmp_path):
    import shutil

    run_dir, _ = smoke_run
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "train.py"),
            "--run-dir",
            str(copy),
            "--resume",
            "total_timesteps=2560",
            "bench_games=0",
            "eval_freq=0",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr[-4000:]
    assert "resumed from" in out.stdout and "model_2048_steps.zip" in out.stdout
    results = json.loads((copy / "results.json").read_text())
    assert results["timesteps"] >= 2560


def test_an_sb3_resume_keeps_the_learning_curve_its_seconds_and_best(smoke_run, tmp_path):
    """Killed after the evaluation at 2,048 but before its checkpoint: the resumed run drops that row and
    makes it again, counts its seconds on from the checkpoint's, and a worse policy is not saved as best."""
    import csv
    import shutil

    from agents.players.sb3_agent import read_metadata

    run_dir, _ = smoke_run
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    for name in ("checkpoints/model_2048_steps.zip", "final_model.zip", "results.json"):
        (copy / name).unlink()
    with (copy / "evaluations.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [row["timesteps"] for row in rows] == ["1024", "2048"]
    rows[0]["mean_score"] = "999.0"  # a best no policy reaches: best_model.zip must stay as it is
    with (copy / "evaluations.csv").open("w", newline="") as handle:
        out = csv.DictWriter(handle, fieldnames=list(rows[0]))
        out.writeheader()
        out.writerows(rows)
    best = (copy / "best_model.zip").read_bytes()
    seconds = read_metadata(copy / "checkpoints" / "model_1024_steps.zip")["train_seconds"]
    out = subprocess.run(
        [sys.executable, str(ROOT / "train.py"), "--run-dir", str(copy), "--resume", "bench_games=0"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr[-4000:]
    with (copy / "evaluations.csv").open(newline="") as handle:
        after = list(csv.DictReader(handle))
    assert [row["timesteps"] for row in after] == ["1024", "2048"]
    assert float(after[1]["seconds"]) >= seconds > 0
    assert (copy / "best_model.zip").read_bytes() == best
    assert read_metadata(copy / "final_model.zip")["train_seconds"] >= seconds


def test_an_sb3_checkpoint_lies_between_rollouts_so_a_resumed_run_ends_at_its_budget(tmp_path):
    """Checkpoints every 700 steps of 512-step rollouts: taken at a rollout's start (1,024) and at the end
    (1,536), not mid-rollout (700, 1,400). Resumed from 1,024 the run stops at 1,536, as it did unstopped; a
    checkpoint at 700 resumed would have collected two whole rollouts, to 1,724 (past the budget)."""
    run_dir = tmp_path / "run"
    command = [sys.executable, str(ROOT / "train.py"), "--run-dir", str(run_dir)]
    budget = ["total_timesteps=1536", "checkpoint_freq=700", "eval_freq=0", "bench_games=0", "solver=off"]
    out = subprocess.run(
        [*command, "--config", str(ROOT / "configs" / "smoke.yaml"), *budget],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr[-4000:]
    checkpoints = sorted(p.name for p in (run_dir / "checkpoints").glob("*.zip"))
    assert checkpoints == ["model_1024_steps.zip", "model_1536_steps.zip"]
    for name in ("checkpoints/model_1536_steps.zip", "final_model.zip", "results.json"):
        (run_dir / name).unlink()
    out = subprocess.run([*command, "--resume"], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-4000:]
    assert "model_1024_steps.zip" in out.stdout
    assert json.loads((run_dir / "results.json").read_text())["timesteps"] == 1536


def test_an_sb3_run_on_the_batched_env_resumes_bit_for_bit(tmp_path):
    """vec_env=batched: the checkpoint holds the games, the last observation and the generators
    (agents/training/sb3_resume.py), so a run stopped at 1,024 steps and resumed ends with the weights, bit
    for bit, of the run that never stopped."""
    import io
    import zipfile

    torch = pytest.importorskip("torch")
    run_dir = tmp_path / "run"
    command = [sys.executable, str(ROOT / "train.py"), "--run-dir", str(run_dir)]
    budget = ["total_timesteps=1536", "checkpoint_freq=1024", "eval_freq=0", "bench_games=0", "solver=off"]
    out = subprocess.run(
        [*command, "--config", str(ROOT / "configs" / "smoke.yaml"), "vec_env=batched", *budget],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-4000:]

    def weights(path):
        with zipfile.ZipFile(path) as archive:
            return torch.load(io.BytesIO(archive.read("policy.pth")), weights_only=True)

    straight = weights(run_dir / "final_model.zip")
    with zipfile.ZipFile(run_dir / "checkpoints" / "model_1024_steps.zip") as archive:
        assert {"dice_poker_resume.json", "dice_poker_resume.npz"} <= set(archive.namelist())
    for name in ("checkpoints/model_1536_steps.zip", "final_model.zip", "results.json"):
        (run_dir / name).unlink(missing_ok=True)
    out = subprocess.run([*command, "--resume"], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-4000:]
    assert "model_1024_steps.zip" in out.stdout
    resumed = weights(run_dir / "final_model.zip")
    assert straight.keys() == resumed.keys()
    assert all(torch.equal(straight[key], resumed[key]) for key in straight)
    # a resume state naming a bit generator outside the allow-list is refused before anything is restored
    checkpoint = run_dir / "checkpoints" / "model_1024_steps.zip"
    with zipfile.ZipFile(checkpoint) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    members["dice_poker_resume.json"] = members["dice_poker_resume.json"].replace(b'"PCG64"', b'"Evil"')
    with zipfile.ZipFile(checkpoint, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    (run_dir / "final_model.zip").unlink()
    out = subprocess.run([*command, "--resume", str(checkpoint)], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert out.returncode == 2 and "names no known bit generator" in out.stderr, out.stderr[-2000:]


def test_saved_model_reloads_and_reproduces_its_actions(tmp_path):
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO

    from agents.players.sb3_agent import SB3Agent, model_metadata, save_model
    from dice_poker_env import load_rules
    from dice_poker_env.envs.single import DicePokerEnv

    rules = load_rules("yacht")
    env = DicePokerEnv(rules, obs_mode="flat")
    model = MaskablePPO("MlpPolicy", env, n_steps=64, batch_size=64, seed=1, policy_kwargs=dict(net_arch=[32]))
    model.learn(128)
    path = save_model(model, tmp_path / "m", model_metadata(rules, "flat", "maskable_ppo"))
    original = SB3Agent(model, model_metadata(rules, "flat", "maskable_ppo"), rules)
    loaded = SB3Agent.load(path, rules="yacht")
    obs, info = env.reset(seed=3)
    for _ in range(60):
        a, b = original.act(obs, info["action_mask"]), loaded.act(obs, info["action_mask"])
        assert a == b and info["action_mask"][a] == 1
        obs, _, done, _, info = env.step(a)
        if done:
            obs, info = env.reset()


def test_distinct_keeps_model_only_picks_the_lowest_bitmask_of_a_keep():
    """A model trained with distinct_keeps gets the same masks when it plays (SB3Agent)."""
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO

    from agents.players.sb3_agent import SB3Agent, model_metadata
    from agents.training.wrappers import DistinctKeepWrapper
    from dice_poker_env import load_rules
    from dice_poker_env.engine.combinatorics import CANONICAL_KEEP_ACTION, N_KEEP_ACTIONS
    from dice_poker_env.envs.single import DicePokerEnv

    rules = load_rules("yacht")
    model = MaskablePPO(
        "MlpPolicy",
        DistinctKeepWrapper(DicePokerEnv(rules, obs_mode="flat")),
        n_steps=64,
        batch_size=64,
        seed=1,
        policy_kwargs=dict(net_arch=[16]),
    )
    agent = SB3Agent(
        model, model_metadata(rules, "flat", "maskable_ppo", distinct_keeps=True), rules, deterministic=False
    )
    assert agent.distinct_keeps
    env = DicePokerEnv(rules, obs_mode="flat")  # full masks, as the benchmark plays
    obs, info = env.reset(seed=5)
    keeps = 0
    for _ in range(400):
        action = agent.act(obs, info["action_mask"])
        if action < N_KEEP_ACTIONS:
            keeps += 1
            assert CANONICAL_KEEP_ACTION[env.state.roll, action]
        obs, _, done, _, info = env.step(action)
        if done:
            obs, info = env.reset()
    assert keeps > 50 and agent.fallbacks == 0


def test_model_refuses_another_ruleset(tmp_path):
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO

    from agents.players.registry import make_agent
    from agents.players.sb3_agent import RulesetMismatchError, SB3Agent, model_metadata, save_model
    from dice_poker_env import load_rules
    from dice_poker_env.envs.single import DicePokerEnv

    rules = load_rules("yahtzee")
    model = MaskablePPO("MlpPolicy", DicePokerEnv(rules, obs_mode="flat"), n_steps=64, policy_kwargs=dict(net_arch=[8]))
    path = save_model(model, tmp_path / "yahtzee_model.zip", model_metadata(rules, "flat", "maskable_ppo"))
    with pytest.raises(RulesetMismatchError, match=r"trained on ruleset 'yahtzee'.*cannot play ruleset 'yatzy'"):
        SB3Agent.load(path, rules="yatzy")
    with pytest.raises(RulesetMismatchError, match="joker"):  # same boxes, another option
        make_agent(f"model:{path}", load_rules("yahtzee", joker="free"))
    assert SB3Agent.load(path, rules="yahtzee").obs_mode == "flat"
    from agents.policy.files import check_ruleset

    other = {**model_metadata(rules, "flat", "maskable_ppo"), "rules_fingerprint": "deadbeef"}
    with pytest.raises(RulesetMismatchError, match="another ruleset named 'yahtzee'"):
        check_ruleset(other, rules)
    with pytest.raises(RulesetMismatchError, match="records no ruleset fingerprint"):
        check_ruleset({**other, "rules_fingerprint": None}, rules)


def test_unmasked_algorithm_trains_through_the_fallback_wrapper(tmp_path):
    pytest.importorskip("stable_baselines3")
    train = load_train()
    config = train.make_config({"algo": "a2c", "n_envs": 2, "n_steps": 8, "total_timesteps": 64})
    rules = __import__("dice_poker_env").load_rules("yacht")
    env = train.make_vec_env(config, rules, 2, 0, training=True)
    model = train.build_model(config, env, tmp_path)
    model.learn(64)
    obs = env.reset()
    for _ in range(50):
        obs, _, _, infos = env.step(np.array([31, 31]))  # never legal: replaced, games go on
        assert not any(i.get("illegal_action") for i in infos)
    env.close()


def test_bench_cli_plays_the_trained_model_and_refuses_another_ruleset(smoke_run, capsys):
    from dice_poker_env.cli import main

    run_dir, _ = smoke_run
    model = str(run_dir / "final_model.zip")
    assert main(["bench", "yacht", "--agents", "greedy", "--model", model, "--games", "4", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data["agents"]) == {"greedy", "model"}
    assert main(["bench", "yatzy", "--agents", "greedy", "--model", model, "--games", "4", "--json"]) == 2
    err = capsys.readouterr().err
    assert "trained on ruleset 'yacht'" in err and "cannot play ruleset 'yatzy'" in err


# ----------------------------------------------------------------------------- bad input, failed commands
SMOKE = str(ROOT / "configs" / "smoke.yaml")


def folder_state(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` and its bytes (to prove a failed command changed nothing)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def refused(train, argv, capsys) -> str:
    """Run ``train.main(argv)``; it must exit with code 2 and one line on stderr, which is returned."""
    with pytest.raises(SystemExit) as exit_info:
        train.main(argv)
    assert exit_info.value.code == 2
    out, err = capsys.readouterr()
    assert err.startswith("train.py: error: ") and err.count("\n") == 1, err
    return err


def test_solver_field_reads_yaml_on_off():
    """YAML 1.1 reads on/off as booleans: solver takes them as the words."""
    train = load_train()
    assert train.make_config({}, ["solver=off"]).solver == "off"
    assert train.make_config({"solver": True}).solver == "on"
    assert train.make_config({}).solver == "auto"
    with pytest.raises(ValueError, match="solver must be auto, on or off"):
        train.make_config({}, ["solver=maybe"])


@pytest.mark.parametrize(
    "numeric",
    [
        "net_arch=[-5]",
        "net_arch=[0]",
        "net_arch=[64, 1.5]",
        "net_arch=[true]",
        "learning_rate=0",
        "learning_rate=-1e-3",
        "learning_rate=.nan",
        "n_steps=0",
        "batch_size=-1",
        "n_epochs=0",
        "gamma=1.5",
        "gamma=-0.1",
        "gae_lambda=2",
        "clip_range=0",
        "ent_coef=-0.1",
        "max_grad_norm=0",
        "reward_scale=0",
        "seed=-1",
        "eval_episodes=0",
        "n_envs=0",
        "total_timesteps=0",
        "bench_workers=0",
        "exploration_final_eps=1.5",
        "start_e=1.5",
        "end_e=-0.1",
        "n_envs=true",
        "bench_games=100000000000",
        "eval_episodes=100000000000",
        "box_points=-1",
        "box_points=.nan",
        "box_points=true",
        "box_points=big",
        "keep_points=[true]",
        "keep_points=maybe",
        "keep_points_bonus=maybe",
        "keep_points_bonus=1",
    ],
)
def test_numeric_fields_are_range_checked(numeric):
    train = load_train()
    name = numeric.partition("=")[0]
    algo = {"exploration_final_eps": "dqn", "start_e": "batched_pqn", "end_e": "batched_pqn"}.get(name, "batched_ppo")
    with pytest.raises(ValueError, match=rf"{name}'? (must|expects)"):
        train.make_config({"algo": algo}, [numeric])


def test_keep_points_bonus_without_keep_points_is_refused_when_the_config_is_read():
    """keep_points_bonus needs keep_points: the config's own check refuses it before a run starts (the
    policy's check would refuse it only once the trainer builds its network)."""
    from agents.training.config import make_config

    for bonus in ("true", "par"):
        with pytest.raises(ValueError, match="keep_points_bonus needs keep_points=true"):
            make_config({"algo": "batched_ppo"}, ["keep_points=false", f"keep_points_bonus={bonus}"])
    assert make_config({}, ["keep_points=false", "keep_points_bonus=false"]).keep_points_bonus is False


@pytest.mark.parametrize(
    "override, message",
    [
        ("net_arch=[64,", "override net_arch=[64,: not valid YAML"),
        ("rules=nosuch", "unknown ruleset 'nosuch'"),
        ("rules_options={foo: 1}", "unknown rules option 'foo'"),
        ("net_arch=[-5]", "net_arch must list positive layer sizes"),
        ("solver=maybe", "solver must be auto, on or off"),
        ("bench_agents=[optimal, wizard]", "unknown agent 'wizard'"),
        ("bench_agents=[greedy, model:nowhere.npz]", "bench_agents: model:nowhere.npz: nowhere.npz: no such policy"),
        ("bench_games=100000000000", "bench_games must be in [0, 1,000,000]"),
        ("bench_workers=100000", "bench_workers must be in [1, 256]"),
        (["vec_env=batched", "algo=ppo", "distinct_keeps=false"], "vec_env='batched' supports masked algorithms only"),
    ],
)
def test_bad_config_is_a_one_line_error_and_leaves_no_run_folder(override, message, tmp_path, capsys):
    train = load_train()
    run_dir = tmp_path / "run"
    err = refused(
        train,
        ["--config", SMOKE, "--run-dir", str(run_dir), *(override if isinstance(override, list) else [override])],
        capsys,
    )
    assert message in err
    assert not run_dir.exists()


def test_yahtzee_options_of_the_wrong_type_are_a_one_line_error(tmp_path, capsys):
    train = load_train()
    err = refused(
        train,
        ["--config", SMOKE, "--run-dir", str(tmp_path / "run"), "rules=yahtzee", "rules_options={joker: [1]}"],
        capsys,
    )
    assert "rules='yahtzee' rules_options={'joker': [1]}" in err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    "content, message",
    [
        (b"rules: [yacht\n", "not valid YAML (expected ',' or ']'"),
        (b"\x7fELF\x02\x01\x01\x00\xff\xfe\x00\x00binary", "not a text file"),
        (b"- rules\n- yacht\n", "expected a mapping of config fields"),
        (b"1: 2\n", "unknown config field '1'"),
        (b"", "empty (a YAML mapping of config fields expected)"),
        (b"# nothing yet\n", "empty (a YAML mapping of config fields expected)"),
        (b"seed: 1\nn_envs: 64\nseed: 2\n", "not valid YAML (duplicate key 'seed' at line 3, column 1)"),
        pytest.param(  # a traceback before
            b"net_arch: " + b"[" * 100_000 + b"]" * 100_000, "not valid YAML (nested too deep to read)", id="deep"
        ),
        pytest.param(  # a "billion laughs": 10**9 values from 9 lines (a MemoryError traceback after gigabytes)
            b"algo_kwargs:\n  l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n"
            + b"".join(b"  l%d: &l%d [%s]\n" % (i, i, b", ".join([b"*l%d" % (i - 1)] * 10)) for i in range(1, 9)),
            "not valid YAML (it expands to more than 100,000 values (aliases of aliases)",
            id="aliases",
        ),
    ],
)
def test_broken_config_files_are_one_line_errors(content, message, tmp_path, capsys):
    train = load_train()
    config = tmp_path / "config.yaml"
    config.write_bytes(content)
    err = refused(train, ["--config", str(config), "--run-dir", str(tmp_path / "run")], capsys)
    assert message in err
    assert not (tmp_path / "run").exists()


def test_a_model_that_cannot_be_built_is_refused_before_the_run_folder(tmp_path, capsys):
    pytest.importorskip("sb3_contrib")
    train = load_train()
    err = refused(
        train, ["--config", SMOKE, "--run-dir", str(tmp_path / "run"), "algo_kwargs={no_such_arg: 1}"], capsys
    )
    assert "the model cannot be built" in err and "no_such_arg" in err
    assert not (tmp_path / "run").exists()


def test_cli_error_exit_code_no_traceback_no_runs_folder(tmp_path):
    """As a script: exit code 2, one line, and no default runs/ folder left in the working directory."""
    out = subprocess.run(
        [sys.executable, str(ROOT / "train.py"), "--config", SMOKE, "net_arch=[-5]"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert out.returncode == 2
    assert out.stderr.strip() == (
        "train.py: error: override net_arch=[-5]: net_arch must list positive layer sizes (integers), got [-5]"
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "override, message",
    [
        ("total_timesteps=-5", "override total_timesteps=-5: total_timesteps must be >= 1, got -5"),
        ("learning_rate=-1", "override learning_rate=-1: learning_rate must be > 0"),
        ("lr_schedule=cosine", "override lr_schedule=cosine: lr_schedule must be constant or linear"),
        ("eval_freq=-1", "override eval_freq=-1: eval_freq must be >= 0"),
        ("bench_agents=[nosuch]", "override bench_agents=[nosuch]: bench_agents: unknown agent 'nosuch'"),
    ],
)
def test_a_bad_value_of_the_command_line_names_its_override_not_the_file(override, message, capsys):
    train = load_train()
    err = refused(train, [override], capsys)
    assert err == f"train.py: error: {message}" + err.split(message)[1] and "batched_ppo_yacht.yaml" not in err


@pytest.mark.parametrize("algo", ["batched_pqn", "pqn", "batched_a2c", "maskable_ppo"])
def test_algo_on_the_command_line_alone_starts_from_its_own_recipe(algo):
    """No --config: algo=X runs X's shipped config, not the default batched_ppo file (whose clip_range PQN refuses)."""
    import yaml

    train = load_train()
    args, config = train.parse_args([f"algo={algo}", "seed=3"])
    name = {"pqn": "batched_pqn"}.get(algo, algo)
    assert args.config == ROOT / "configs" / f"{name}_yacht.yaml"
    assert config == train.make_config(yaml.safe_load(args.config.read_text()), ["seed=3"])
    assert train.parse_args(["seed=3"])[0].config == ROOT / "configs" / "batched_ppo_yacht.yaml"


def test_a_bad_value_of_the_file_names_the_file(tmp_path, capsys):
    config = tmp_path / "config.yaml"
    config.write_text("total_timesteps: -5\n")
    train = load_train()
    err = refused(train, ["--config", str(config), "seed=1"], capsys)
    assert err == f"train.py: error: {config}: total_timesteps must be >= 1, got -5\n"


@pytest.fixture
def old_run(smoke_run, tmp_path):
    """A copy of the smoke run to fail commands on, and its files' bytes."""
    import shutil

    run_dir, _ = smoke_run
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    return copy, folder_state(copy)


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["rules=yahtzee"], "was trained on ruleset 'yacht'"),
        (["algo=ppo", "distinct_keeps=false"], "trained with algo='maskable_ppo', the config says algo='ppo'"),
        (["obs_mode=dict"], "trained with obs_mode='flat', the config says obs_mode='dict'"),
        (["distinct_keeps=false"], "trained with distinct_keeps=True"),
        (["net_arch=[32]", "total_timesteps=5000"], "net_arch=[32] differs from the run's net_arch=[64, 64]"),
        (["learning_rate=0.1"], "learning_rate=0.1 differs from the run's learning_rate=0.0003"),
        (["total_timesteps=1000"], "is at 2,048 timesteps, past total_timesteps=1,000; resume with a larger"),
        (["seed=5", "total_timesteps=5000"], "seed=5 differs from the run's seed=0"),
        (["n_envs=8", "total_timesteps=5000"], "n_envs=8 differs from the run's n_envs="),
        # every field of the section but the few that may change (run.RESUME_MAY_CHANGE), not a list to keep up
        (["reward_scale=0.5"], "reward_scale=0.5 differs from the run's reward_scale="),
    ],
)
def test_failed_resume_writes_nothing(old_run, overrides, message, capsys):
    run_dir, before = old_run
    train = load_train()
    err = refused(train, ["--run-dir", str(run_dir), "--resume", *overrides], capsys)
    assert message in err
    assert folder_state(run_dir) == before  # config.yaml byte for byte, and every other file


def test_resume_from_a_truncated_checkpoint_writes_nothing(old_run, capsys):
    run_dir, _ = old_run
    latest = run_dir / "checkpoints" / "model_2048_steps.zip"
    latest.write_bytes(latest.read_bytes()[: latest.stat().st_size // 2])
    before = folder_state(run_dir)
    train = load_train()
    err = refused(train, ["--run-dir", str(run_dir), "--resume", "total_timesteps=5000", "net_arch=[64, 64]"], capsys)
    assert "model_2048_steps.zip: truncated or corrupt model file" in err
    assert "an earlier checkpoint can be given as --resume PATH" in err
    assert folder_state(run_dir) == before


def test_a_folder_of_other_files_is_not_a_run(tmp_path, capsys):
    train = load_train()
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    err = refused(train, ["--config", SMOKE, "--run-dir", str(other)], capsys)
    assert "is not a train.py run folder" in err and "--overwrite only replaces runs" in err


def test_a_resumed_checkpoint_never_goes_on_in_a_folder_of_other_files(tmp_path, capsys):
    """``--resume PATH --run-dir D``: D not a run folder, yet not empty, got the run's config.yaml, checkpoints and
    results among its own files (a fresh run is refused there)."""
    train = load_train()
    other = tmp_path / "other"
    other.mkdir()
    (other / "results.json").write_text("mine")
    checkpoint = tmp_path / "kept" / "model_2048_steps.pt"
    checkpoint.parent.mkdir()
    checkpoint.write_bytes(b"not read: the folder is refused first")
    err = refused(train, ["--config", SMOKE, "--resume", str(checkpoint), "--run-dir", str(other)], capsys)
    assert "is not a train.py run folder" in err and "a resumed run goes on in its own folder" in err
    assert sorted(p.name for p in other.iterdir()) == ["results.json"]
    assert (other / "results.json").read_text() == "mine"


def test_resume_needs_the_run_and_a_checkpoint(tmp_path, capsys):
    train = load_train()
    assert "needs --run-dir" in refused(train, ["--resume"], capsys)
    assert "config.yaml is missing" in refused(train, ["--run-dir", str(tmp_path / "nowhere"), "--resume"], capsys)
    assert "give one of them" in refused(train, ["--run-dir", str(tmp_path), "--resume", "--overwrite"], capsys)
    assert not (tmp_path / "nowhere").exists()


def test_a_fresh_run_refuses_an_existing_run_folder(old_run, tmp_path, capsys):
    run_dir, before = old_run
    train = load_train()
    err = refused(train, ["--config", SMOKE, "--run-dir", str(run_dir)], capsys)
    assert "holds an earlier run" in err and "--resume" in err and "--overwrite" in err
    assert folder_state(run_dir) == before
    other = tmp_path / "not_a_run"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    err = refused(train, ["--config", SMOKE, "--run-dir", str(other), "--overwrite"], capsys)
    assert "not a train.py run folder" in err
    assert (other / "notes.txt").read_text() == "mine"


def test_overwrite_replaces_the_old_run_and_solver_off_trains_in_raw_scores(old_run):
    """--overwrite: nothing of the old run mixes in (checkpoints, evaluations, results); solver=off: no solve."""
    run_dir, before = old_run
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "train.py"),
            "--config",
            SMOKE,
            "--run-dir",
            str(run_dir),
            "--overwrite",
            "solver=off",
            "total_timesteps=512",
            "n_steps=128",
            "batch_size=128",
            "eval_freq=256",
            "checkpoint_freq=256",
            "bench_games=4",
            "bench_agents=[optimal, greedy]",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr[-4000:]
    assert "solver=off: no exact solve" in out.stdout
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir()) == ["model_256_steps.zip", "model_512_steps.zip"]
    rows = (run_dir / "evaluations.csv").read_text().splitlines()
    assert [row.split(",")[0] for row in rows] == ["timesteps", "256", "512"]
    assert all(row.split(",")[3] == "" for row in rows[1:])  # no % of optimal
    results = json.loads((run_dir / "results.json").read_text())
    assert results["timesteps"] == 512 and results["config"]["solver"] == "off"
    assert results["optimal_expected_score"] is None and results["percent_of_optimal"] is None
    assert set(results["agents"]) == {"greedy", "model"}  # no optimal agent without a solve
    assert results["regret_mean"] is None
    assert (run_dir / "config.yaml").read_bytes() != before["config.yaml"]
    assert not list(run_dir.rglob("*.partial.zip"))  # models are written whole, then renamed


def refuse_to_solve(monkeypatch):
    import dice_poker_env.solver as solver  # (tests/conftest.py imported the modules that bind solve before)

    def too_large(rules, *args, **kwargs):
        raise MemoryError("the solve needs about 80 GB, 12 GB are available")

    monkeypatch.setattr(solver, "solve", too_large)


def test_solver_on_refused_is_an_error_before_the_run_folder(tmp_path, monkeypatch, capsys):
    pytest.importorskip("sb3_contrib")
    refuse_to_solve(monkeypatch)
    train = load_train()
    err = refused(train, ["--config", SMOKE, "--run-dir", str(tmp_path / "run"), "solver=on"], capsys)
    assert "solver=on: the exact solve of 'yacht' is not possible (the solve needs about 80 GB" in err
    assert not (tmp_path / "run").exists()


def test_solver_auto_trains_in_raw_scores_when_the_solve_is_refused(tmp_path, monkeypatch, capsys):
    pytest.importorskip("sb3_contrib")
    refuse_to_solve(monkeypatch)
    train = load_train()
    run_dir = tmp_path / "run"
    results = train.main(
        [
            "--config",
            SMOKE,
            "--run-dir",
            str(run_dir),
            "total_timesteps=256",
            "n_steps=128",
            "batch_size=128",
            "eval_freq=256",
            "checkpoint_freq=0",
            "bench_games=3",
        ]
    )
    out = capsys.readouterr().out
    assert "solver=auto: the exact solve of 'yacht' is not possible" in out and "raw scores" in out
    assert "[eval]" in out and "% of optimal" not in out.split("[eval]")[1].splitlines()[0]
    assert results["optimal_expected_score"] is None and set(results["agents"]) == {"greedy", "random", "model"}
    assert json.loads((run_dir / "results.json").read_text())["optimal_expected_score"] is None


@pytest.mark.parametrize("cut", [0.1, 0.5, 0.9, 0.999])
def test_a_truncated_model_file_is_reported_as_such(smoke_run, tmp_path, cut):
    from agents.players.sb3_agent import read_metadata

    data = (smoke_run[0] / "final_model.zip").read_bytes()
    damaged = tmp_path / "model.zip"
    damaged.write_bytes(data[: int(len(data) * cut)])
    with pytest.raises(ValueError, match="truncated or corrupt model file"):
        read_metadata(damaged)


def test_resume_from_a_checkpoint_path_checks_against_its_own_run(old_run, tmp_path, capsys):
    """--resume PATH into a new folder: the checkpoint's run config is the reference, and the new folder stays unmade."""
    run_dir, before = old_run
    train = load_train()
    new_dir = tmp_path / "continued"
    err = refused(
        train,
        ["--run-dir", str(new_dir), "--resume", str(run_dir / "checkpoints" / "model_1024_steps.zip"), "net_arch=[32]"],
        capsys,
    )
    assert "net_arch=[32] differs from the run's net_arch=[64, 64]" in err
    assert not new_dir.exists() and folder_state(run_dir) == before


def test_an_sb3_checkpoint_kept_outside_its_run_is_checked_against_the_config_it_holds(old_run, tmp_path, capsys):
    """An SB3 ``.zip`` copied out of its run folder had only its metadata (algo, seed, ...) to check against: a
    config file with another learning rate resumed it silently under that rate. Its metadata holds its run's config."""
    import shutil

    import yaml

    from agents.players.sb3_agent import read_metadata

    run_dir, _ = old_run
    kept = tmp_path / "kept" / "model_1024_steps.zip"
    kept.parent.mkdir()
    shutil.copy(run_dir / "checkpoints" / "model_1024_steps.zip", kept)
    assert read_metadata(kept)["config"]["learning_rate"] == 0.0003
    other = tmp_path / "other.yaml"
    other.write_text(yaml.safe_dump({**yaml.safe_load(Path(SMOKE).read_text()), "learning_rate": 0.01}))
    train = load_train()
    new_dir = tmp_path / "continued"
    err = refused(train, ["--config", str(other), "--run-dir", str(new_dir), "--resume", str(kept)], capsys)
    assert "learning_rate=0.01 differs from the run's learning_rate=0.0003" in err
    assert not new_dir.exists()


def test_a_config_that_is_a_folder_says_so(tmp_path, capsys):
    train = load_train()
    err = refused(train, ["--config", str(tmp_path)], capsys)
    assert f"config {tmp_path}: is a folder; name a YAML file" in err


def test_an_unusable_runs_dir_is_refused(tmp_path, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    train = load_train()
    err = refused(train, ["--config", SMOKE, f"runs_dir={blocker / 'runs'}"], capsys)
    assert "is not a folder" in err


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc (a folder no one, root included, can write)")
def test_a_run_dir_where_nothing_can_be_written_is_refused_before_the_run(capsys):
    """Probed with a file, not os.access (which lets root through on a read-only filesystem): one line, no
    traceback from mkdir after the solve."""
    train = load_train()
    err = refused(train, ["--config", SMOKE, "--run-dir", "/proc/self/no_run"], capsys)
    assert "run folder /proc/self/no_run: /proc/self is not writable" in err
