"""Stable-Baselines3's algorithms in ``train.py`` (``maskable_ppo``, ``ppo``, ``a2c``, ``dqn``): the envs, the
model, the callbacks (periodic evaluation through :class:`agents.training.evaluator.Evaluation`, checkpoints,
the hyper-parameters to TensorBoard) and the training call.

The envs: one :class:`~dice_poker_env.envs.single.DicePokerEnv` per game, with the illegal-action fallback for the
unmasked algorithms (:class:`agents.training.wrappers.LegalActionWrapper`), SB3's Monitor (raw scores) and the reward
scale, stepped by SB3's DummyVecEnv or SubprocVecEnv, or all games in the NumPy batched env (``vec_env:
batched``, masked algorithms only). SB3 and sb3-contrib are imported inside the functions (the ``train`` extra).
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gymnasium as gym

from agents.training.config import SB3, as_dict, one_line
from agents.training.evaluator import EVAL_SEED_OFFSET, Evaluation
from agents.training.run import UsageError, fail

if TYPE_CHECKING:
    from collections.abc import Callable

    from stable_baselines3.common.base_class import BaseAlgorithm
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper
    from stable_baselines3.common.vec_env.base_vec_env import VecEnvObs, VecEnvStepReturn

    from dice_poker_env.rules import Rules


def make_env(config: SB3, rules: Rules, rank: int, *, training: bool) -> Callable[[], gym.Env]:
    """A thunk building env ``rank``: the game, the illegal-action fallback for unmasked
    algorithms, SB3's Monitor (raw scores), and (training only) the reward scale."""
    from stable_baselines3.common.monitor import Monitor

    from agents.players.sb3_agent import ALGORITHMS
    from agents.training.wrappers import DistinctKeepWrapper, LegalActionWrapper, ScaleReward
    from dice_poker_env.envs.single import DicePokerEnv

    masked = ALGORITHMS[config.algo][2]

    def thunk() -> gym.Env:
        env: gym.Env = DicePokerEnv(rules, obs_mode=config.obs_mode)
        if not masked:
            env = LegalActionWrapper(env, penalty=config.illegal_penalty if training else 0.0)
        elif config.distinct_keeps:
            env = DistinctKeepWrapper(env)
        env = Monitor(env)
        if training and config.reward_scale != 1.0:
            env = ScaleReward(env, config.reward_scale)
        env.action_space.seed(config.seed + rank)
        return env

    return thunk


def make_vec_env(config: SB3, rules: Rules, n_envs: int, seed: int, *, training: bool) -> VecEnv:
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    if config.vec_env == "batched":
        return _batched_vec_env(config, rules, n_envs, seed, training=training)
    thunks = [make_env(config, rules, rank, training=training) for rank in range(n_envs)]
    if config.vec_env == "subproc" and n_envs > 1:
        vec: DummyVecEnv | SubprocVecEnv = SubprocVecEnv(thunks, start_method="spawn")
    else:
        vec = DummyVecEnv(thunks)
    vec.seed(seed)
    return vec


def _batched_vec_env(config: SB3, rules: Rules, n_envs: int, seed: int, *, training: bool) -> VecEnvWrapper:
    """The project's NumPy batched env behind SB3's VecEnv API (imported only here).

    All games live in one process, stepped together; masked algorithms only (the
    illegal-action fallback wrapper is per game).
    """
    from stable_baselines3.common.vec_env import VecEnvWrapper, VecMonitor

    from agents.players.sb3_agent import ALGORITHMS
    from dice_poker_env.integrations.sb3 import make_sb3_vec_env

    if not ALGORITHMS[config.algo][2]:
        fail("vec_env='batched' supports masked algorithms only (maskable_ppo); use dummy or subproc")
    vec = VecMonitor(
        make_sb3_vec_env(
            "DicePoker/Custom-v0",
            n_envs,
            seed=seed,
            rules=rules,
            obs_mode=config.obs_mode,
            distinct_keeps=config.distinct_keeps,
            full_infos=False,  # (MaskablePPO and VecMonitor read only an ended game's keys: the cheaper infos)
        )
    )
    if not training or config.reward_scale == 1.0:
        return vec

    class ScaleVecReward(VecEnvWrapper):
        def reset(self) -> VecEnvObs:
            return self.venv.reset()

        def step_wait(self) -> VecEnvStepReturn:
            obs, reward, done, info = self.venv.step_wait()
            return obs, reward * config.reward_scale, done, info

    return ScaleVecReward(vec)


# ----------------------------------------------------------------------------- model
def build_model(config: SB3, env: VecEnv, run_dir: Path) -> BaseAlgorithm:
    import torch

    from agents.players.sb3_agent import algorithm_class

    cls = algorithm_class(config.algo)
    activation = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}[config.activation]
    policy = "MultiInputPolicy" if config.obs_mode == "dict" else "MlpPolicy"
    lr: Any = config.learning_rate
    if config.lr_schedule == "linear":
        lr = lambda progress: config.learning_rate * progress  # noqa: E731 - SB3 passes remaining progress 1 -> 0
    common = dict(
        learning_rate=lr,
        gamma=config.gamma,
        seed=config.seed,
        device=config.device,
        verbose=config.verbose,
        tensorboard_log=str(run_dir / "tb"),
    )
    if config.algo == "dqn":
        kwargs = dict(
            buffer_size=config.buffer_size,
            learning_starts=config.learning_starts,
            batch_size=config.batch_size,
            train_freq=config.train_freq,
            target_update_interval=max(config.target_update_interval // max(config.n_envs, 1), 1),
            exploration_fraction=config.exploration_fraction,
            exploration_final_eps=config.exploration_final_eps,
            max_grad_norm=config.max_grad_norm,
            policy_kwargs=dict(net_arch=list(config.net_arch), activation_fn=activation),
        )
    else:
        kwargs = dict(
            n_steps=config.n_steps,
            gae_lambda=config.gae_lambda,
            ent_coef=config.ent_coef,
            vf_coef=config.vf_coef,
            max_grad_norm=config.max_grad_norm,
            policy_kwargs=dict(
                net_arch=dict(pi=list(config.net_arch), vf=list(config.net_arch)), activation_fn=activation
            ),
        )
        if config.algo in ("maskable_ppo", "ppo"):
            kwargs.update(batch_size=config.batch_size, n_epochs=config.n_epochs, clip_range=config.clip_range)
    kwargs.update(config.algo_kwargs)
    return cls(policy, env, **common, **kwargs)


# ----------------------------------------------------------------------------- callbacks
def make_callbacks(
    config: SB3,
    rules: Rules,
    run_dir: Path,
    optimal: float | None,
    metadata: dict,
    *,
    seconds_before: float = 0.0,
    best: float = -math.inf,
) -> tuple[list[BaseCallback], Any]:
    """Periodic evaluation (mean score, percent of optimal -> TensorBoard, console,
    evaluations.csv, best_model.zip) and checkpoints (with the ruleset metadata and the training
    seconds so far). A resumed run passes the seconds and the best mean score it had reached."""
    from stable_baselines3.common.callbacks import BaseCallback

    from agents.players.sb3_agent import ALGORITHMS, save_model
    from agents.training.sb3_resume import capture

    masked = ALGORITHMS[config.algo][2]

    class ScoreEval(BaseCallback):
        """Like sb3-contrib's MaskableEvalCallback, recording game scores and % of optimal through the
        evaluation of every trainer family (:class:`agents.training.evaluator.Evaluation`)."""

        def __init__(self) -> None:
            super().__init__()
            self.next_eval = config.eval_freq
            self.eval_env: VecEnv | None = None
            self.evaluation = Evaluation(run_dir, optimal, lambda text: print(text, flush=True))
            self.evaluation.best = best

        def _on_training_start(self) -> None:
            self.next_eval = (self.num_timesteps // config.eval_freq + 1) * config.eval_freq

        def _on_step(self) -> bool:
            if self.num_timesteps >= self.next_eval:
                self.next_eval += config.eval_freq
                self.evaluate()
            return True

        def evaluate(self) -> float:
            import numpy as np

            if self.eval_env is None:
                self.eval_env = make_vec_env(
                    dataclasses.replace(config, vec_env="dummy"),
                    rules,
                    1,
                    config.seed + EVAL_SEED_OFFSET,
                    training=False,
                )
            self.eval_env.seed(config.seed + EVAL_SEED_OFFSET)  # the same games at every evaluation
            evaluate_policy: Any  # sb3-contrib's (masked) or SB3's: the same call
            if masked:
                from sb3_contrib.common.maskable.evaluation import evaluate_policy

                extra = {"use_masking": True}
            else:
                from stable_baselines3.common.evaluation import evaluate_policy

                extra = {}
            rewards, _ = evaluate_policy(
                self.model,
                self.eval_env,
                n_eval_episodes=config.eval_episodes,
                deterministic=True,
                return_episode_rewards=True,
                **extra,
            )
            seconds = seconds_before + time.perf_counter() - clock.started
            if self.evaluation.record(self.num_timesteps, np.asarray(rewards), seconds, self.logger.record):
                save_model(self.model, run_dir / "best_model.zip", {**metadata, "timesteps": self.num_timesteps})
            self.logger.dump(self.num_timesteps)
            return float(np.mean(rewards))

    class Checkpoint(BaseCallback):
        """A checkpoint once ``checkpoint_freq`` steps have passed, taken between two rollouts (after one
        trained, before the next is collected) and at the end. A run resumed from it goes on along the same rollouts as
        one never stopped and ends at the same step; a checkpoint taken mid-rollout holds the weights of
        the rollout's start with a later step count, and resumed from it a run collects whole rollouts from
        there, past its budget."""

        def __init__(self) -> None:
            super().__init__()
            self.next_save = config.checkpoint_freq

        def _on_training_start(self) -> None:
            self.next_save = (self.num_timesteps // config.checkpoint_freq + 1) * config.checkpoint_freq

        def _on_rollout_start(self) -> None:
            self.save()

        def _on_training_end(self) -> None:
            self.save()

        def save(self) -> None:
            steps = self.model.num_timesteps
            if steps < self.next_save:
                return
            self.next_save = (steps // config.checkpoint_freq + 1) * config.checkpoint_freq
            path = run_dir / "checkpoints" / f"model_{steps}_steps.zip"
            seconds = seconds_before + time.perf_counter() - clock.started
            resume = capture(self.model)  # (the batched env's games and the generators: an exact resume)
            save_model(self.model, path, {**metadata, "timesteps": steps, "train_seconds": seconds}, resume)
            if config.save_replay_buffer and hasattr(self.model, "save_replay_buffer"):
                self.model.save_replay_buffer(path.with_suffix(".replay.pkl"))

        def _on_step(self) -> bool:
            return True

    class LogConfig(BaseCallback):
        """The hyper-parameters to TensorBoard's HPARAMS tab, once per run."""

        def _on_training_start(self) -> None:
            from stable_baselines3.common.logger import HParam

            hparams = {
                k: (v if isinstance(v, (int, float, str, bool)) else json.dumps(v))
                for k, v in dataclasses.asdict(config).items()
            }
            self.logger.record(
                "hparams",
                HParam(hparams, {"eval/mean_score": 0.0, "eval/percent_of_optimal": 0.0}),
                exclude=("stdout", "log", "json", "csv"),
            )

        def _on_step(self) -> bool:
            return True

    class Clock(BaseCallback):
        """When this session's training started (the evaluations' and checkpoints' seconds count from it)."""

        def __init__(self) -> None:
            super().__init__()
            self.started = time.perf_counter()

        def _on_training_start(self) -> None:
            self.started = time.perf_counter()

        def _on_step(self) -> bool:
            return True

    clock = Clock()
    callbacks: list = [clock, LogConfig()]
    evaluator = ScoreEval() if config.eval_freq > 0 else None
    if evaluator is not None:
        callbacks.append(evaluator)
    if config.checkpoint_freq > 0:
        callbacks.append(Checkpoint())
    return callbacks, evaluator


def sb3_model(
    config: SB3, rules: Rules, run_dir: Path, resume_from: Path | None
) -> tuple[VecEnv, BaseAlgorithm, dict[str, Any]]:
    """SB3's training envs and model (fresh, or loaded from a checkpoint); nothing written yet."""
    from stable_baselines3.common.utils import set_random_seed

    from agents.players.sb3_agent import load_model, model_metadata, trusted_by_default

    set_random_seed(config.seed)
    try:
        env = make_vec_env(config, rules, config.n_envs, config.seed, training=True)
    except Exception as error:  # noqa: BLE001 - the run has not started
        fail(f"the training envs cannot be built: {type(error).__name__}: {one_line(error)}")
    metadata = model_metadata(  # (the run's config too: a checkpoint kept outside its run folder is checked by it)
        rules,
        config.obs_mode,
        config.algo,
        seed=config.seed,
        distinct_keeps=config.distinct_keeps,
        config=as_dict(config),
    )
    try:
        if resume_from is not None:
            replay = resume_from.with_suffix(".replay.pkl")
            if replay.is_file() and config.algo == "dqn" and not trusted_by_default():
                env.close()
                fail(
                    f"--resume: {replay} is a pickle file, which runs code when loaded; pass --trust-model-files "
                    "if you trust it, or remove it to resume without the replay buffer"
                )
            lr: Any = config.learning_rate
            if config.lr_schedule == "linear":
                lr = lambda progress: config.learning_rate * progress  # noqa: E731 - as build_model's
            schedules = {"learning_rate": lr, "lr_schedule": lr}
            if config.algo in ("maskable_ppo", "ppo"):
                schedules["clip_range"] = config.clip_range
            if config.algo == "dqn":
                schedules["train_freq"] = config.train_freq
            model = load_model(
                resume_from,
                config.algo,
                rules,
                config.obs_mode,
                overrides=schedules,
                env=env,
                device=config.device,
                tensorboard_log=str(run_dir / "tb"),
            )
            if replay.is_file() and hasattr(model, "load_replay_buffer"):
                model.load_replay_buffer(replay)
            from agents.training.sb3_resume import restore

            restore(model, resume_from)  # the games and generators where the checkpoint left them
        else:
            model = build_model(config, env, run_dir)
    except UsageError:
        raise  # (its own line already: not "checkpoint ... cannot be loaded: UsageError: ...")
    except Exception as error:  # noqa: BLE001 - whatever SB3/torch raise, the run has not started
        env.close()
        what = f"checkpoint {resume_from} cannot be loaded" if resume_from is not None else "the model cannot be built"
        fail(f"{what}: {type(error).__name__}: {one_line(error)}")
    return env, model, metadata


def sb3_learn(
    config: SB3,
    rules: Rules,
    run_dir: Path,
    optimal: float | None,
    env: VecEnv,
    model: BaseAlgorithm,
    metadata: dict,
    *,
    resume_from: Path | None = None,
) -> tuple[Path, int, float]:
    """Train an SB3 model with the evaluation and checkpoint callbacks; save the final model.

    A resumed run (``resume_from``, the checkpoint) drops the learning curve's rows past the
    checkpoint and continues its training seconds (the checkpoint's, else the last row's) and its
    best mean score; returns the final model, the timesteps and the training seconds of the whole run.
    """
    from agents.players.sb3_agent import read_metadata, save_model

    resumed = resume_from is not None
    seconds_before, best = 0.0, -math.inf
    if resume_from is not None:
        kept = Evaluation(run_dir, optimal).rewind(model.num_timesteps)
        key = "win_rate" if kept and kept[-1].get("win_rate") else "mean_score"
        best = max((float(row[key]) for row in kept if row.get(key)), default=-math.inf)
        seconds = read_metadata(resume_from).get("train_seconds")
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):  # a checkpoint of an earlier version
            seconds = float(kept[-1]["seconds"]) if kept and kept[-1].get("seconds") else 0.0
        seconds_before = float(seconds)
    callbacks, evaluator = make_callbacks(
        config, rules, run_dir, optimal, metadata, seconds_before=seconds_before, best=best
    )
    remaining = max(config.total_timesteps - model.num_timesteps, 0)
    started = time.perf_counter()
    if remaining:
        model.learn(
            remaining,
            callback=callbacks,
            progress_bar=config.progress_bar,
            reset_num_timesteps=not resumed,
            tb_log_name="run",
        )
    train_seconds = seconds_before + time.perf_counter() - started
    final_path = save_model(
        model,
        run_dir / "final_model.zip",
        {**metadata, "timesteps": model.num_timesteps, "train_seconds": train_seconds},
    )
    if evaluator is not None and not evaluator.evaluation.recorded(model.num_timesteps):
        evaluator.evaluate()  # the end point of the learning curve
    env.close()
    return final_path, int(model.num_timesteps), train_seconds
