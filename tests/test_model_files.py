"""Model and policy files never run code and fail in one line: SB3 zips read without unpickling, policy files
truncated, flipped, malformed or holding NaN weights."""

from __future__ import annotations

import base64
import json
import os
import re
import zipfile
from pathlib import Path

import numpy as np
import pytest

from agents.policy.player import SHIPPED_DIR, PolicyAgent, load_policy
from dice_poker_env import load_rules


class Marker:
    """Unpickling this creates a marker file (as a hostile model's payload would run anything)."""

    def __init__(self, path: Path):
        self.path = str(path)

    def __reduce__(self):
        return (os.system, (f"touch {self.path}",))


def _trained_zip(tmp_path: Path, algo: str = "maskable_ppo", obs_mode: str = "flat", learn: int = 0) -> Path:
    pytest.importorskip("sb3_contrib")
    import torch

    from agents.players.sb3_agent import algorithm_class, model_metadata, save_model
    from dice_poker_env.envs.single import DicePokerEnv

    rules = load_rules("yacht")
    env = DicePokerEnv(rules, obs_mode=obs_mode)
    if algo == "dqn":
        from agents.training.wrappers import LegalActionWrapper

        env = LegalActionWrapper(env)
    kwargs = dict(n_steps=32, batch_size=32) if algo != "dqn" else dict(learning_starts=0, buffer_size=100)
    policy = "MultiInputPolicy" if obs_mode == "dict" else "MlpPolicy"
    model = algorithm_class(algo)(
        policy,
        env,
        seed=0,
        learning_rate=lambda progress: 1e-3 * progress,  # a lambda: cloudpickled by value
        policy_kwargs=dict(net_arch=[8], activation_fn=torch.nn.Tanh),
        **kwargs,
    )
    if learn:
        model.learn(learn)
    return save_model(model, tmp_path / f"{algo}_{obs_mode}.zip", model_metadata(rules, obs_mode, algo))


def _with_data(path: Path, out: Path, change) -> Path:
    """A copy of a model zip with its ``data`` JSON changed by ``change(dict)``."""
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    data = json.loads(members["data"])
    change(data)
    members["data"] = json.dumps(data).encode()
    with zipfile.ZipFile(out, "w") as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    return out


def _payload(marker: Path) -> dict:
    import cloudpickle

    return {
        ":type:": "<class 'function'>",
        ":serialized:": base64.b64encode(cloudpickle.dumps(Marker(marker))).decode(),
    }


@pytest.mark.parametrize(("algo", "obs_mode", "learn"), [("maskable_ppo", "flat", 64), ("dqn", "dict", 0)])
def test_models_saved_by_train_py_load_and_play_without_unpickling(tmp_path, monkeypatch, algo, obs_mode, learn):
    import cloudpickle

    from agents.players.sb3_agent import SB3Agent

    path = _trained_zip(tmp_path, algo, obs_mode, learn)

    def refuse(*args, **kwargs):
        raise AssertionError("cloudpickle.loads called on a model file")

    monkeypatch.setattr(cloudpickle, "loads", refuse)
    agent = SB3Agent.load(path)
    from dice_poker_env.envs.single import DicePokerEnv

    env = DicePokerEnv(load_rules("yacht"), obs_mode=obs_mode)
    obs, info = env.reset(seed=0)
    action = agent.act(obs, info["action_mask"])
    assert info["action_mask"][action]


@pytest.mark.parametrize("key", ["lr_schedule", "policy_class", "observation_space", "unknown_entry"])
def test_a_malicious_model_zip_runs_no_code(tmp_path, key, capsys):
    from agents.players.sb3_agent import SB3Agent, UntrustedModelError
    from dice_poker_env.cli import main

    marker = tmp_path / "pwned"
    evil = _with_data(_trained_zip(tmp_path), tmp_path / "evil.zip", lambda data: data.update({key: _payload(marker)}))
    if key in ("lr_schedule", "observation_space"):  # replaced by rebuilt objects: loads, runs nothing
        SB3Agent.load(evil)
    else:
        with pytest.raises(UntrustedModelError, match="--trust-model-files"):
            SB3Agent.load(evil)
        assert main(["bench", "yacht", "--agents", f"model:{evil}", "--games", "2", "--no-regret"]) != 0
        err = capsys.readouterr().err
        assert "--trust-model-files" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not marker.exists()


@pytest.mark.parametrize("member", ["policy.pth", "policy.optimizer.pth", "pytorch_variables.pth"])
def test_pickled_objects_in_the_weights_are_a_one_line_refusal(tmp_path, capsys, member):
    """A ``.pth`` member holding a pickled object (torch's weights-only load refuses it): no code runs, and the
    command says so in one line naming the member and the object, not with torch's traceback (the optimizer's
    state or the variables were reported as "its weights (policy.pth)")."""
    import io

    import torch

    from dice_poker_env.cli import main

    marker = tmp_path / "pwned"
    path = _trained_zip(tmp_path)
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    buffer = io.BytesIO()
    torch.save({"weights": Marker(marker)}, buffer)
    members[member] = buffer.getvalue()
    evil = tmp_path / "evil_pth.zip"
    with zipfile.ZipFile(evil, "w") as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    assert main(["bench", "yacht", "--agents", f"model:{evil}", "--games", "2", "--no-regret"]) != 0
    err = capsys.readouterr().err
    assert re.search(rf"its {re.escape(member)} holds pickled objects \((posix|nt)\.system\)", err), err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert not marker.exists()


def test_a_dqn_replay_buffer_is_resumed_only_when_trusted(tmp_path, capsys, monkeypatch):
    """docs/reliability.md: a DQN replay buffer (``.replay.pkl``) is a pickle, which ``--resume`` loads only with
    ``--trust-model-files``: untested until now, and its refusal read "checkpoint ... cannot be loaded: UsageError:
    --resume: ...". One line of its own; nothing runs, nothing in the run folder changes."""
    import pickle

    from train_script import load_train

    pytest.importorskip("stable_baselines3")
    monkeypatch.delenv("DICE_POKER_TRUST_MODEL_FILES", raising=False)
    train = load_train()
    run = tmp_path / "run"
    small = ["algo=dqn", "total_timesteps=256", "learning_starts=64", "buffer_size=512", "eval_freq=0"]
    small += ["checkpoint_freq=256", "bench_games=2", "bench_agents=[greedy]", "progress_bar=false", "net_arch=[8]"]
    train.main([*small, "save_replay_buffer=true", "solver=off", "--run-dir", str(run)])
    replay = run / "checkpoints" / "model_256_steps.replay.pkl"
    assert replay.is_file()
    marker = tmp_path / "pwned"
    replay.write_bytes(pickle.dumps(Marker(marker)))
    before = {p: p.read_bytes() for p in sorted(run.rglob("*")) if p.is_file()}
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        train.main(["--run-dir", str(run), "--resume", "total_timesteps=512"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and err.count("\n") == 1, err
    assert err.startswith(f"train.py: error: --resume: {replay} is a pickle file, which runs code when loaded"), err
    assert "--trust-model-files" in err and not marker.exists()
    assert {p: p.read_bytes() for p in sorted(run.rglob("*")) if p.is_file()} == before


def test_a_folder_or_a_checkpoint_given_as_a_model_says_what_it_is(tmp_path, capsys):
    from dice_poker_env.cli import main

    checkpoint = tmp_path / "checkpoints" / "model_2048_steps.pt"
    checkpoint.parent.mkdir()
    checkpoint.write_bytes(b"DPCK")
    for path, message in ((tmp_path, "a folder; give the model file in it"), (checkpoint, "a training checkpoint")):
        assert main(["bench", "yacht", "--agents", f"model:{path}", "--games", "2", "--no-regret"]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1, err


def test_a_hostile_policy_kwargs_entry_is_refused(tmp_path):
    from agents.players.sb3_agent import SB3Agent, UntrustedModelError

    marker = tmp_path / "pwned"

    def change(data):
        entry = _payload(marker)
        entry["activation_fn"] = "<class 'os.system'>"
        data["policy_kwargs"] = entry

    evil = _with_data(_trained_zip(tmp_path), tmp_path / "evil.zip", change)
    with pytest.raises(UntrustedModelError, match="activation_fn"):
        SB3Agent.load(evil)
    assert not marker.exists()


def test_trusted_files_load_with_sb3s_unpickling(tmp_path, monkeypatch):
    """The opt-in is explicit, and it does unpickle (so the flag means what it says)."""
    from agents.players.sb3_agent import TRUST_ENV, SB3Agent

    marker = tmp_path / "ran"
    evil = _with_data(_trained_zip(tmp_path), tmp_path / "evil.zip", lambda d: d.update(extra=_payload(marker)))
    monkeypatch.setenv(TRUST_ENV, "1")
    SB3Agent.load(evil)
    assert marker.exists()


# ----------------------------------------------------------------------------- policy files (.npz)
def _shipped() -> Path:
    files = sorted(SHIPPED_DIR.glob("*.npz"))
    if not files:
        pytest.skip("no shipped policy")
    return files[0]


def test_truncated_or_flipped_policy_files_are_one_line_errors(tmp_path):
    data = _shipped().read_bytes()
    cases = {"truncated": data[: len(data) // 2], "empty": b"", "short": data[:10]}
    for position in range(0, len(data), max(1, len(data) // 40)):
        changed = bytearray(data)
        changed[position] ^= 0x04
        cases[f"flip{position}"] = bytes(changed)
    for name, content in cases.items():
        path = tmp_path / f"{name}.npz"
        path.write_bytes(content)
        try:
            weights, metadata = load_policy(path)
            PolicyAgent(weights, metadata)
        except ValueError as error:
            assert str(path) in str(error) and "\n" not in str(error), (name, error)
        # a flip the zip format cannot see (e.g. in a member's name padding) loads an equal policy: fine


def test_trained_agent_reports_a_damaged_shipped_policy_in_one_line(tmp_path, monkeypatch, capsys):
    import agents.policy.player as policy_agent
    from dice_poker_env.cli import main

    source = _shipped()
    folder = tmp_path / "policies"
    folder.mkdir()
    (folder / source.name).write_bytes(source.read_bytes()[:-100])
    monkeypatch.setattr(policy_agent, "SHIPPED_DIR", folder)
    assert main(["bench", source.stem, "--agents", "trained", "--games", "2", "--no-regret"]) != 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1 and source.name in err


@pytest.mark.parametrize(
    ("metadata", "match"),
    [("[1, 2]", "not a JSON object"), ("{", "not valid JSON"), ('"text"', "not a JSON object")],
)
def test_policy_metadata_that_is_not_a_json_object_is_a_one_line_error(tmp_path, metadata, match):
    weights, _ = load_policy(_shipped())
    path = tmp_path / "bad.npz"
    np.savez(path, metadata=np.array(metadata), **weights)
    with pytest.raises(ValueError, match=match) as info:
        load_policy(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_weights_are_refused(tmp_path, bad):
    from agents.policy.player import save_policy

    weights, metadata = load_policy(_shipped())
    weights["w0"] = weights["w0"].copy()
    weights["w0"][0, 0] = bad
    path = save_policy(tmp_path / "nan.npz", weights, metadata)
    with pytest.raises(ValueError, match="w0.*not finite") as info:
        load_policy(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("activation", "gelu", "activation must be one of tanh, relu, got 'gelu'"),
        ("keep_head", "x", "keep_head='x' was retired"),
    ],
)
def test_unclear_policy_metadata_is_a_clear_one_line_error(tmp_path, capsys, field, value, match):
    from agents.policy.player import save_policy
    from dice_poker_env.cli import main

    weights, metadata = load_policy(_shipped())
    path = save_policy(tmp_path / "odd.npz", weights, {**metadata, field: value})
    rules = metadata["rules"]
    assert main(["bench", rules, "--agents", f"model:{path}", "--games", "2", "--no-regret"]) == 2
    err = capsys.readouterr().err
    assert match in err and len(err.strip().splitlines()) == 1


def _policy_variant(tmp_path, name, change_weights=None, metadata_text=None):
    from agents.policy.player import save_policy

    weights, metadata = load_policy(_shipped())
    if change_weights is not None:
        change_weights(weights)
    if metadata_text is not None:
        path = tmp_path / f"{name}.npz"
        np.savez(path, metadata=np.array(metadata_text), **weights)
        return path
    return save_policy(tmp_path / f"{name}.npz", weights, metadata)


@pytest.mark.parametrize(
    ("case", "match"),
    [
        ("short_bias", "layer 0's w0 .* and b0 .* are not a layer's shapes"),
        ("scalar_weights", "layer 0's w0 \\(\\) and b0"),
        ("next_layer_misfit", "layer 1 takes 3 inputs, layer 0 gives"),
        ("no_bias", "layer 1 has weights w1 but no bias b1"),
        ("deep_metadata", "nested too deep"),
        ("activation_list", "activation must be one of tanh, relu, got \\['x'\\]"),
    ],
)
def test_a_hand_made_policy_file_is_a_one_line_error_at_load(tmp_path, capsys, case, match):
    """Shapes that only failed mid-game (a NumPy broadcast error) or metadata that raised a TypeError or
    RecursionError: refused when the file loads, in one line."""
    from dice_poker_env.cli import main

    _, metadata = load_policy(_shipped())
    changes = {
        "short_bias": lambda w: w.update(b0=w["b0"][:3]),
        "scalar_weights": lambda w: w.update(w0=np.float32(1.0)),
        "next_layer_misfit": lambda w: w.update(w1=w["w1"][:3]),
        "no_bias": lambda w: w.pop("b1"),
    }
    if case == "deep_metadata":
        path = _policy_variant(tmp_path, case, metadata_text="[" * 100_000 + "]" * 100_000)
    elif case == "activation_list":
        from agents.policy.player import save_policy

        path = save_policy(tmp_path / "list.npz", load_policy(_shipped())[0], {**metadata, "activation": ["x"]})
    else:
        path = _policy_variant(tmp_path, case, change_weights=changes[case])
    assert main(["bench", metadata["rules"], "--agents", f"model:{path}", "--games", "2", "--no-regret"]) == 2
    err = capsys.readouterr().err
    assert re.search(match, err) and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err


@pytest.mark.parametrize(
    "case",
    [
        "bogus_policy_kwargs",
        "net_arch_text",
        "weights_not_torch",
        "deep_data",
        "plain_attribute",
        "shape_int",
        "wide",
        "wide_plain",
    ],
)
def test_a_hand_made_model_zip_is_a_one_line_error(tmp_path, capsys, case):
    """policy_kwargs the policy does not take, weights that are not torch's archive, JSON nested past the parser:
    SB3 and torch raised TypeError, RuntimeError or RecursionError with a traceback."""
    from dice_poker_env.cli import main

    model = _trained_zip(tmp_path)
    out = tmp_path / f"{case}.zip"
    if case == "bogus_policy_kwargs":
        _with_data(model, out, lambda d: d["policy_kwargs"].update(bogus=1))
    elif case == "net_arch_text":
        _with_data(model, out, lambda d: d["policy_kwargs"].update(net_arch="abc"))
    elif case == "plain_attribute":  # SB3 sets every entry on the model: predict=1 broke play with a traceback
        _with_data(model, out, lambda d: d.update(predict=1))
    elif case == "shape_int":
        _with_data(model, out, lambda d: d["observation_space"].update(_shape=5))
    elif case == "wide":  # 44 KB of file built a network of a gigabyte before the weights were compared
        _with_data(model, out, lambda d: d["policy_kwargs"].update(net_arch=[6000, 6000]))
    elif case == "wide_plain":  # policy_kwargs without a class: stored as plain JSON, not pickled
        _with_data(model, out, lambda d: d.update(policy_kwargs={"net_arch": [6000, 6000]}))
    else:
        with zipfile.ZipFile(model) as archive:
            members = {name: archive.read(name) for name in archive.namelist()}
        if case == "weights_not_torch":
            members["policy.pth"] = b"not a torch archive" * 10
        else:
            members["data"] = b"[" * 100_000 + b"]" * 100_000
        with zipfile.ZipFile(out, "w") as archive:
            for name, content in members.items():
                archive.writestr(name, content)
    assert main(["bench", "yacht", "--agents", f"model:{out}", "--games", "2", "--no-regret"]) == 2
    err = capsys.readouterr().err
    assert str(out) in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    if case.startswith("wide"):  # refused from the sizes, before any network is built
        assert "needs at least 144,0" in err, err


def test_an_agent_returning_none_is_a_one_line_error_naming_it(tmp_path, capsys):
    from dice_poker_env.cli import main

    source = tmp_path / "lazy.py"
    source.write_text(
        "class Lazy:\n    def reset(self):\n        pass\n\n    def act(self, observation, mask):\n        return None\n"
    )
    assert main(["bench", "yacht", "--agents", f"{source}:Lazy", "--games", "2", "--no-regret"]) == 2
    err = capsys.readouterr().err
    assert "Lazy returned None" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "argv",
    [
        ["bench", "yacht", "--agents", "greedy", "--games", "100000000000"],
        ["dataset", "yacht", "--agent", "greedy", "--episodes", "100000000000"],
        ["grade", "nothing.py", "--rules", "yacht", "--games", "100000000000"],
    ],
)
def test_counts_beyond_the_limit_are_refused_before_any_work(argv, capsys, monkeypatch):
    import dice_poker_env.solver.solution as solution

    monkeypatch.setattr(solution, "solve_dp", lambda *a, **k: pytest.fail("solved before refusing the count"))
    assert main_status(argv) == 2
    err = capsys.readouterr().err
    assert "beyond the limit of" in err and len(err.strip().splitlines()) == 1


def main_status(argv):
    from dice_poker_env.cli import main

    return main(argv)


def test_check_count_states_its_limit():
    from agents.evaluation.limits import MAX_GAMES, check_count

    assert check_count("games", 5) == 5 and check_count("games", 10.0) == 10
    assert check_count("games", MAX_GAMES) == MAX_GAMES
    for bad, match in ((MAX_GAMES + 1, "beyond the limit"), (0, "integer >= 1"), (2.5, "integer"), (True, "integer")):
        with pytest.raises(ValueError, match=match):
            check_count("games", bad)


def test_a_model_that_only_plays_builds_no_buffer_of_the_files_size(tmp_path):
    """n_steps and n_envs of the file (3,000,000 x 64) would allocate a rollout buffer of gigabytes: a model
    loaded to play takes small ones; a resumed run (train.py --resume, which passes its env) keeps the file's."""
    from agents.players.sb3_agent import SB3Agent

    big = _with_data(_trained_zip(tmp_path), tmp_path / "big.zip", lambda d: d.update(n_steps=3_000_000, n_envs=64))
    agent = SB3Agent.load(big)
    assert agent.model.n_steps * agent.model.n_envs <= 2


def test_a_policy_file_that_unpacks_past_the_limit_is_refused_before_it_is_read(tmp_path, monkeypatch):
    """A zip bomb (778 KB of file, 800 MB of deflated zeros, 1.3 GB of memory before): the members' declared
    sizes are summed first."""
    from agents.policy import files

    monkeypatch.setattr(files, "MAX_POLICY_BYTES", 10_000)  # (the shipped policy unpacks to more)
    with pytest.raises(ValueError, match=r"not a policy file: it unpacks to [\d,]+ bytes, more than a policy holds"):
        files.load_policy(_shipped())
    monkeypatch.undo()
    import io

    header = io.BytesIO()  # a tiny member whose header declares 2**37 float64 (1 TiB): np.load would allocate it
    np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False, "shape": (2**37,)})
    bomb = tmp_path / "bomb.npz"
    with zipfile.ZipFile(bomb, "w") as archive:
        archive.writestr("w0.npy", header.getvalue())
    with pytest.raises(ValueError, match=r"unpacks to 1,099,511,627,776 bytes"):
        files.load_policy(bomb)


@pytest.mark.parametrize("name", ["w9", "metadata"])
def test_an_array_member_without_the_npy_suffix_counts_with_what_it_declares(tmp_path, name):
    """np.load reads any member that starts as a ``.npy`` does as an array, whatever its name: a member
    ``w9`` (or ``metadata``, in place of ``metadata.npy``) declaring 1 TiB was not counted and np.load
    allocated it (a MemoryError traceback, or 1 TiB of address space)."""
    from agents.policy import files

    bomb = tmp_path / f"{name}.npz"
    with zipfile.ZipFile(_shipped()) as shipped, zipfile.ZipFile(bomb, "w") as archive:
        for info in shipped.infolist():
            if info.filename != f"{name}.npy":
                archive.writestr(info, shipped.read(info))
        archive.writestr(name, _huge_npy())
    with pytest.raises(ValueError, match=r"not a policy file: it unpacks to 1,099,5[\d,]+ bytes"):
        files.load_policy(bomb)


def test_a_policy_member_that_is_not_an_array_is_a_one_line_error(tmp_path, capsys):
    """A member np.load hands back as bytes (no ``.npy`` header: a text file, a symlink entry) raised
    ``AttributeError: 'bytes' object has no attribute 'dtype'`` with a traceback from dice-poker bench."""
    from dice_poker_env.cli import main

    path = tmp_path / "extra.npz"
    with zipfile.ZipFile(_shipped()) as shipped, zipfile.ZipFile(path, "w") as archive:
        for info in shipped.infolist():
            archive.writestr(info, shipped.read(info))
        archive.writestr("README.txt", "notes")
    with pytest.raises(ValueError, match=r"its member 'README.txt' is not an array"):
        load_policy(path)
    rules = load_policy(_shipped())[1]["rules"]
    assert main(["bench", rules, "--agents", f"model:{path}", "--games", "2", "--no-regret"]) == 2
    err = capsys.readouterr().err
    assert "is not an array" in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err


def _huge_npy() -> bytes:
    """A tiny ``.npy`` member whose header declares 2**37 float64 (1 TiB): np.load would allocate it."""
    import io

    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False, "shape": (2**37,)})
    return header.getvalue()


def test_a_model_or_checkpoint_that_unpacks_past_the_limit_is_refused_before_it_is_read(tmp_path):
    """Zip bombs in an SB3 model (a 5 MB member of 1.2 GB of deflated zeros: SB3 reads every member whole),
    and an SB3 checkpoint's resume state (an array declaring 1 TiB): each a one-line refusal before anything
    is read (tests/test_trainer.py: the batched trainers' checkpoints)."""
    import io

    from agents.players.sb3_agent import SB3Agent, read_metadata
    from agents.training.sb3_resume import ARRAYS_NAME, JSON_NAME, restore

    model = _trained_zip(tmp_path)
    bomb = tmp_path / "bomb.zip"
    bomb.write_bytes(model.read_bytes())
    with zipfile.ZipFile(bomb, "a", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        with archive.open("padding", "w", force_zip64=True) as member:
            for _ in range(70):
                member.write(bytes(1 << 24))
    assert bomb.stat().st_size < 10_000_000
    for load in (read_metadata, SB3Agent.load):
        with pytest.raises(ValueError, match=r"not a model file: it unpacks to 1,17[\d,]+ bytes, more than a model"):
            load(bomb)

    checkpoint = tmp_path / "model_512_steps.zip"
    checkpoint.write_bytes(model.read_bytes())
    state = io.BytesIO()
    with zipfile.ZipFile(state, "w") as arrays:
        arrays.writestr("a9.npy", _huge_npy())  # named by no entry of the state: read all the same before
    with zipfile.ZipFile(checkpoint, "a") as archive:
        archive.writestr(JSON_NAME, "{}")
        archive.writestr(ARRAYS_NAME, state.getvalue())
    with pytest.raises(ValueError, match=r"not a checkpoint file: it unpacks to 1,099,51[\d,]+ bytes"):
        restore(None, checkpoint)  # (the 1 TiB array inside the state's .npz, with the model's own members)


def test_an_archive_inside_a_model_counts_with_what_it_unpacks_to(tmp_path):
    """An SB3 model's ``policy.pth`` is itself torch's zip, which torch reads deflated too: a 1.2 GB member of
    zeros hidden inside it (a 3.5 MB model file) is counted and refused before SB3 reads it."""
    import io

    from agents.players.sb3_agent import SB3Agent, read_metadata

    model = _trained_zip(tmp_path)
    with zipfile.ZipFile(model) as archive:
        members = {info.filename: archive.read(info) for info in archive.infolist()}
    inner = io.BytesIO(members["policy.pth"])
    with zipfile.ZipFile(inner, "a", zipfile.ZIP_DEFLATED, compresslevel=1) as weights:
        with weights.open("policy/data/99", "w", force_zip64=True) as member:
            for _ in range(70):
                member.write(bytes(1 << 24))
    members["policy.pth"] = inner.getvalue()
    bomb = tmp_path / "nested.zip"
    with zipfile.ZipFile(bomb, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    assert bomb.stat().st_size < 10_000_000
    for load in (read_metadata, SB3Agent.load):
        with pytest.raises(ValueError, match=r"not a model file: it unpacks to 1,17[\d,]+ bytes"):
            load(bomb)
    assert read_metadata(model)["rules"] == "yacht"  # the model as saved passes


def test_a_resume_state_reads_each_array_once_however_often_it_is_named():
    """A resume state's JSON naming one array many times (1.4 KB of JSON, 64 copies of 16 MiB) reads it once."""
    from agents.training.sb3_resume import read_state

    reads = []

    class Arrays(dict):
        def __getitem__(self, name):
            reads.append(name)
            return super().__getitem__(name)

    text = json.dumps({"many": [{"__array__": "a0"}] * 64, "other": {"__array__": "a1"}})
    state = read_state(text, Arrays(a0=np.arange(3), a1=np.ones(2)))
    assert reads == ["a0", "a1"] and len(state["many"]) == 64 and state["other"].tolist() == [1.0, 1.0]


def test_model_metadata_takes_a_ruleset_name_as_the_docs_write_it():
    """docs/multiplayer.md: ``save_model(model, path, model_metadata(rules, "flat", "maskable_ppo"))``; a name
    reads as that ruleset with its default options (was ``AttributeError: 'str' object has no attribute 'name'``)."""
    from agents.players.sb3_agent import model_metadata
    from dice_poker_env.rules import RulesError

    assert model_metadata("yahtzee", "flat", "maskable_ppo") == model_metadata(
        load_rules("yahtzee"), "flat", "maskable_ppo"
    )
    free = model_metadata(load_rules("yahtzee", joker="free"), "flat", "maskable_ppo")
    assert free["rules_options"] == {"joker": "free"}
    with pytest.raises(RulesError, match="unknown ruleset 'yahtze'"):
        model_metadata("yahtze", "flat", "maskable_ppo")


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("masked", "no", "masked must be true or false, got 'no'"),  # bool("no") was True: an unmasked model masked
        ("distinct_keeps", 1, "distinct_keeps must be true or false, got 1"),
        ("obs_mode", "image", "obs_mode must be dict or flat, got 'image'"),
    ],
)
def test_a_models_metadata_switches_are_what_they_say(field, value, match):
    from agents.players.sb3_agent import SB3Agent, model_metadata

    metadata = model_metadata("yacht", "flat", "maskable_ppo") | {field: value}
    with pytest.raises(ValueError, match=f"^model metadata: {match}$"):
        SB3Agent(None, metadata)
