"""train.py runs of the batched trainer, in process: which checkpoint --resume may continue, and the checks that
come before the exact solve."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from test_train import folder_state, load_train, refused  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SMALL = str(ROOT / "configs" / "smoke_batched.yaml")
#: two updates of 1,024 steps, a checkpoint after each, no benchmark
QUICK = ["n_envs=64", "total_timesteps=2048", "eval_freq=1024", "checkpoint_freq=1024", "bench_games=0"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two finished runs of the small batched config: ``a`` (learning_rate=0.01, lr_schedule=linear, seed=9) and
    ``b`` (its defaults)."""
    train = load_train()
    folder = tmp_path_factory.mktemp("runs")
    argv = ["--config", SMALL, "--run-dir", str(folder / "a"), *QUICK, "learning_rate=0.01", "seed=9"]
    with pytest.MonkeyPatch.context() as patch:  # as train.py is run, so that its policies record the command
        patch.setattr(sys, "argv", ["train.py", *argv[:-1], "lr_schedule=linear", argv[-1]])
        train.main(sys.argv[1:])
    train.main(["--config", SMALL, "--run-dir", str(folder / "b"), *QUICK])
    return folder / "a", folder / "b"


@pytest.fixture
def copies(runs, tmp_path):
    """Copies of both runs, to fail commands on."""
    return tuple(Path(shutil.copytree(run, tmp_path / run.name)) for run in runs)


def no_solve(monkeypatch):
    """Make the exact solve fail the test: a check meant to come before it must stop the run first."""
    import agents.evaluation.benchmark as benchmark

    def solve(*args, **kwargs):
        raise AssertionError("the exact solve started")

    monkeypatch.setattr(benchmark, "load_solution", solve)


def test_a_checkpoint_of_another_run_is_refused_naming_what_differs(copies, monkeypatch, capsys):
    """--run-dir B --resume A's checkpoint: B's run is not A's (another seed and learning rate), so nothing of B is
    rewritten; the reference is the checkpoint's own run, not B's config.yaml."""
    a, b = copies
    before = folder_state(b)
    no_solve(monkeypatch)
    train = load_train()
    err = refused(train, ["--run-dir", str(b), "--resume", str(a / "checkpoints" / "model_1024_steps.pt")], capsys)
    assert f"checkpoint {a / 'checkpoints' / 'model_1024_steps.pt'} is of another run than {b}'s" in err
    assert "the checkpoint's learning_rate=0.01, lr_schedule='linear', seed=9" in err
    assert "learning_rate=0.0003, lr_schedule='constant', seed=0" in err
    assert folder_state(b) == before


def test_a_lone_checkpoint_is_checked_against_the_config_it_holds(copies, tmp_path, monkeypatch, capsys):
    """A checkpoint outside any run folder: the config stored in it is the reference (here seed=9, lr=0.01)."""
    a, _ = copies
    lone = tmp_path / "lone.pt"
    shutil.copy(a / "checkpoints" / "model_1024_steps.pt", lone)
    no_solve(monkeypatch)
    train = load_train()
    argv = ["--config", SMALL, "--run-dir", str(tmp_path / "new"), "--resume", str(lone), *QUICK, "seed=9"]
    err = refused(train, argv, capsys)
    assert "learning_rate=0.0003, lr_schedule='constant' differs from the run's learning_rate=0.01" in err
    assert not (tmp_path / "new").exists()


def test_a_network_of_another_shape_is_one_line_naming_the_layer_before_the_solve(copies, monkeypatch, capsys):
    """A run folder whose config.yaml no longer describes its checkpoints' network (edited by hand)."""
    _, b = copies
    config = b / "config.yaml"
    config.write_text(config.read_text().replace("- 64\n- 64\n", "- 32\n"))
    before = folder_state(b)
    no_solve(monkeypatch)
    train = load_train()
    err = refused(train, ["--run-dir", str(b), "--resume"], capsys)
    assert "layer actor." in err and "is [64, " in err and "there, [32, " in err and "net_arch=[32]" in err
    assert folder_state(b) == before


@pytest.mark.parametrize("override", ["eval_episodes=5", "solver=off"])
def test_what_an_evaluation_measures_cannot_change_on_resume(copies, override, monkeypatch, capsys):
    """evaluations.csv's rows and the best model are chosen across them: all of the run's own games and yardstick."""
    _, b = copies
    before = folder_state(b)
    no_solve(monkeypatch)
    train = load_train()
    err = refused(train, ["--run-dir", str(b), "--resume", "total_timesteps=4096", override], capsys)
    assert f"{override.replace('off', repr('off'))} differs from the run's " in err
    assert "the run's evaluations (evaluations.csv, the best model) measure with its own" in err
    assert folder_state(b) == before


def test_an_interrupted_run_says_where_it_stopped_and_how_it_goes_on(tmp_path, monkeypatch, capsys):
    """Ctrl-C after the first checkpoint names it and the resume command; before it, that nothing can be resumed,
    and --resume on such a run points to --overwrite (not back to --resume)."""
    from agents.training.trainer import Trainer

    save = Trainer.save_checkpoint

    def save_then_stop(self, *args, **kwargs):
        save(self, *args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(Trainer, "save_checkpoint", save_then_stop)
    train = load_train()
    run = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        train.main(["--config", SMALL, "--run-dir", str(run), *QUICK])
    err = capsys.readouterr().err
    checkpoint = run / "checkpoints" / "model_1024_steps.pt"
    assert err == (
        f"train.py: interrupted at 1,024 steps; last checkpoint {checkpoint}; resume with python train.py --run-dir "
        f"{run} --resume\n"
    )

    def stop(self, *args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(Trainer, "save_checkpoint", stop)
    fresh = tmp_path / "fresh"
    with pytest.raises(KeyboardInterrupt):
        train.main(["--config", SMALL, "--run-dir", str(fresh), *QUICK])
    err = capsys.readouterr().err
    assert err.startswith("train.py: interrupted at 1,024 steps, before its first checkpoint: nothing can be resumed")
    assert f"--config {fresh / 'config.yaml'} --run-dir {fresh} --overwrite" in err
    err = refused(train, ["--run-dir", str(fresh), "--resume"], capsys)
    assert "nothing can be resumed; start it again with --overwrite" in err


def test_sigterm_says_where_the_run_stopped_and_still_kills_it(tmp_path):
    """SIGTERM (a timeout, a scheduler) prints the same line, then the process dies of the signal as before."""
    import signal
    import subprocess
    import sys
    import time

    run = tmp_path / "run"
    argv = [sys.executable, str(ROOT / "train.py"), "--config", SMALL, "--run-dir", str(run), *QUICK]
    process = subprocess.Popen(
        [*argv, "total_timesteps=100000000", "eval_freq=0", "solver=off"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 300
        while not list(run.glob("checkpoints/model_*_steps.pt")) and time.monotonic() < deadline:
            assert process.poll() is None, process.stderr.read()
            time.sleep(0.1)
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == -signal.SIGTERM
    assert err.startswith("train.py: interrupted at ") and "last checkpoint " in err and err.count("\n") == 1, err
    assert f"resume with python train.py --run-dir {run} --resume" in err


@pytest.mark.parametrize(
    "override, message",
    [
        ("net_arch=[]", "override net_arch=[]: net_arch must list at least one hidden layer for batched_ppo, got []"),
        ("init_policy=/nonexistent.npz", "the trainer cannot be built: FileNotFoundError: /nonexistent.npz"),
    ],
)
def test_a_network_that_cannot_be_built_is_refused_before_the_solve(override, message, tmp_path, monkeypatch, capsys):
    no_solve(monkeypatch)
    train = load_train()
    err = refused(train, ["--config", SMALL, "--run-dir", str(tmp_path / "run"), *QUICK, override], capsys)
    assert message in err
    assert not (tmp_path / "run").exists()


def test_a_longer_resume_says_the_schedule_stretches_and_its_policy_keeps_every_command(copies, monkeypatch, capsys):
    from agents.policy.player import load_policy

    a, _ = copies
    argv = ["--run-dir", str(a), "--resume", "total_timesteps=4096"]
    monkeypatch.setattr(sys, "argv", ["train.py", *argv])
    train = load_train()
    train.main(argv)
    out = capsys.readouterr().out
    assert (
        "lr_schedule=linear: the learning rate now decays to 0 at total_timesteps=4,096, not the run's 2,048: at "
        "2,048 steps it goes from 0 to 0.005\n"
    ) in out
    commands = load_policy(a / "final_model.npz")[1]["commands"]
    assert [c.split(" --run-dir")[0] for c in commands] == ["python train.py --config " + SMALL, "python train.py"]
    assert commands[1].endswith("--resume total_timesteps=4096")


def test_the_commands_an_interrupted_run_prints_can_be_pasted(tmp_path):
    """A run folder with a space: the printed commands quote it (pasted unquoted, it was two arguments)."""
    import shlex

    from agents.training.run import interrupted

    run_dir = tmp_path / "my run"
    line = interrupted(run_dir, 10, "batched_ppo")  # before any checkpoint: the --overwrite command
    command = line.split("start it again with ", 1)[1]
    assert shlex.split(command)[-3:] == ["--run-dir", str(run_dir), "--overwrite"]
    assert shlex.split(command)[3] == str(run_dir / "config.yaml")
