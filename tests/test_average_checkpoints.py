"""benchmarks/average_checkpoints.py: the mean of a run's checkpoints' weights, as a policy file that plays."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from agents.policy.player import PolicyAgent, load_policy  # noqa: E402
from agents.training.trainer import Trainer, evaluate  # noqa: E402
from dice_poker_env.rules import load_rules  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from test_trainer import config  # noqa: E402


def tool():
    spec = importlib.util.spec_from_file_location("average_checkpoints", ROOT / "benchmarks" / "average_checkpoints.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def exported(run_dir: Path, steps: int) -> dict[str, np.ndarray]:
    """The policy weights of one checkpoint, exported by the trainer itself."""
    trainer = Trainer(config(algo="batched_pqn", layer_norm=True), load_rules("yacht"), run_dir)
    trainer.load_checkpoint(run_dir / "checkpoints" / f"model_{steps}_steps.pt")
    return trainer.model.export()


def test_averages_the_windows_checkpoints_into_a_policy_that_plays(tmp_path):
    run_dir = tmp_path / "run"
    run = config(algo="batched_pqn", layer_norm=True, checkpoint_freq=256, total_timesteps=256 * 3)
    Trainer(run, load_rules("yacht"), run_dir).run(progress=False)
    average = tool().average

    path, steps = average(run_dir, tmp_path / "one.npz", 500, 600)  # one checkpoint: its own weights, exactly
    weights, metadata = load_policy(path)
    assert steps == [512] and metadata["averaged_checkpoints"] == [512] and metadata["timesteps"] == 512
    one = exported(run_dir, 512)
    assert weights.keys() == one.keys() and all(np.array_equal(weights[k], one[k]) for k in one)

    path, steps = average(run_dir, tmp_path / "two.npz", 0, 512)
    weights, metadata = load_policy(path)
    assert steps == [256, 512] and metadata["averaged_checkpoints"] == [256, 512]
    first = exported(run_dir, 256)
    assert not all(np.array_equal(first[k], one[k]) for k in one)  # the two checkpoints differ
    for key in one:
        np.testing.assert_allclose(weights[key], (first[key].astype(np.float64) + one[key]) / 2, rtol=1e-6, atol=1e-7)
    scores = evaluate(PolicyAgent(weights, metadata, load_rules("yacht")), load_rules("yacht"), 20, seed=3)
    assert scores.shape == (20,) and scores.min() >= 0  # the NumPy agent plays the averaged network

    with pytest.raises(ValueError, match="no checkpoint from 1,000 to 2,000 steps"):
        average(run_dir, tmp_path / "none.npz", 1000, 2000)
    with pytest.raises(ValueError, match="no checkpoints/ folder"):
        average(tmp_path / "nowhere", tmp_path / "none.npz", 0, 10)
    assert not (tmp_path / "none.npz").exists()


def test_the_command_checks_out_before_reading_checkpoints(tmp_path, capsys):
    """OUT: an existing file is kept (--overwrite replaces it), a folder refused; one line each."""
    main = tool().main
    (tmp_path / "kept.npz").write_bytes(b"kept")
    for out, message in (
        (tmp_path / "kept.npz", "exists; choose another name or pass --overwrite"),
        (tmp_path, "is a folder; name the policy file to write"),
    ):
        with pytest.raises(SystemExit) as stop:
            main([str(tmp_path / "no_run"), str(out)])
        assert stop.value.code == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and message in err
    assert (tmp_path / "kept.npz").read_bytes() == b"kept"
    with pytest.raises(SystemExit):  # past the check: the run folder's own error
        main([str(tmp_path / "no_run"), str(tmp_path / "kept"), "--overwrite"])
    assert "no checkpoints/ folder" in capsys.readouterr().err
