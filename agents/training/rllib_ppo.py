"""RLlib's PPO (new API stack) on the dice games, with action masking: ``train.py``'s ``algo: rllib_ppo``.

RLlib distributes one run's sampling over ``num_env_runners`` processes (on the
local machine or a Ray cluster); the learner updates the network in the
training process. What this module adds to RLlib:

* :class:`MaskedDiceEnv`: one game whose observation is a ``Dict`` of
  ``"observations"`` (the flat observation plus the policy features of
  :class:`agents.policy.inputs.PolicyInputs`, what the batched trainers' networks see)
  and ``"action_mask"`` (the legal actions, each distinct keep once with
  ``distinct_keeps``); :class:`MaskedDiceVectorEnv` is the same over the
  project's NumPy batched env, used as RLlib's vector env (``vec_env: batched``;
  RLlib's gymnasium vectorisation of single games is ``vec_env: dummy``, or
  ``subproc`` for one process per game). Both are registered for RLlib under
  :data:`ENV_NAME` (``ray.tune.registry``).
* :class:`MaskedPPOModule`: PPO's default torch RLModule whose action logits
  are pushed to the lowest float where the mask forbids, in inference,
  exploration and training, so PPO never samples an illegal action; the
  :class:`IllegalActionCount` callback counts the episodes ended by an illegal
  action anyway (they must be zero).
* :class:`RLlibTrainer`: the loop ``train.py`` runs, with the interface of
  :class:`agents.training.trainer.Trainer`: PPO iterations to ``total_timesteps``, an
  evaluation every ``eval_freq`` steps in percent of optimal, RLlib checkpoints,
  and the policy exported as a NumPy policy file (``final_model.npz``,
  :mod:`agents.policy.player`), so the evaluation and the final benchmark play
  the network exactly as they play the batched trainers' policies.

Needs the ``rllib`` extra (``ray[rllib]``, torch); imported only for ``algo: rllib_ppo``.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium import spaces
from gymnasium.vector.utils import batch_space
from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import DefaultPPOTorchRLModule
from ray.rllib.callbacks.callbacks import RLlibCallback
from ray.rllib.core.columns import Columns

from agents.players.sb3_agent import model_metadata
from agents.policy.inputs import PolicyInputs
from agents.policy.player import PolicyAgent, save_policy
from agents.training.evaluator import Evaluation, evaluate_trainer
from dice_poker_env.engine.combinatorics import distinct_keep_mask
from dice_poker_env.engine.tables import compile_rules
from dice_poker_env.envs.single import DicePokerEnv
from dice_poker_env.envs.vector import DicePokerVectorEnv
from dice_poker_env.rules import Rules, load_rules

if TYPE_CHECKING:
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.utils.metrics.metrics_logger import MetricsLogger
    from torch.utils.tensorboard import SummaryWriter

#: the envs' name in RLlib's registry (``config.environment(ENV_NAME, env_config=...)``)
ENV_NAME = "dice_poker_masked"
#: ``vec_env`` -> gymnasium's vectorisation mode of RLlib's env runners
VECTORIZE_MODES = {"dummy": "sync", "subproc": "async", "batched": "vector_entry_point"}
_LOWEST = torch.finfo(torch.float32).min


def env_config(config: Any) -> dict[str, Any]:
    """What the envs need of the ``rllib_ppo`` config section (:class:`agents.training.config.RLlibPPO`): the ruleset, masks, features and reward scale."""
    return {
        "rules": config.rules,
        "rules_options": dict(config.rules_options),
        "distinct_keeps": bool(config.distinct_keeps),
        "features": bool(config.features),
        "reward_scale": float(config.reward_scale),
    }


def _masked_spaces(rules: Rules, features: bool) -> tuple[spaces.Dict, PolicyInputs, int]:
    inputs = PolicyInputs(rules, features=features)
    n_actions = compile_rules(rules).n_actions
    space = spaces.Dict(
        {
            "action_mask": spaces.Box(0.0, 1.0, (n_actions,), np.float32),
            "observations": spaces.Box(-np.inf, np.inf, (inputs.size,), np.float32),
        }
    )
    return space, inputs, n_actions


class MaskedDiceEnv(gym.Env):
    """One game with the legal actions in the observation (see the module docstring).

    Args:
        config: :func:`env_config`'s mapping (RLlib passes it as the env config).
    """

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        config = dict(config or {})
        self.rules = load_rules(config.get("rules", "yacht"), **config.get("rules_options", {}))
        self.env = DicePokerEnv(self.rules, obs_mode="flat")
        self.distinct_keeps = bool(config.get("distinct_keeps", False))
        self.reward_scale = float(config.get("reward_scale", 1.0))
        self.observation_space, self.inputs, _ = _masked_spaces(self.rules, bool(config.get("features", True)))
        self.action_space = self.env.action_space

    def _observe(self, obs: np.ndarray, info: dict) -> dict[str, np.ndarray]:
        mask = info["action_mask"]
        if self.distinct_keeps and self.env.state is not None:
            mask = distinct_keep_mask(mask, self.env.state.roll)
        return {"action_mask": mask.astype(np.float32), "observations": self.inputs(obs)}

    def reset(
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        super().reset(seed=seed)  # (Gymnasium's contract, which check_env checks; the game's dice are the inner env's)
        obs, info = self.env.reset(seed=seed, options=options)
        return self._observe(obs, info), info

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(int(action))
        return self._observe(obs, info), reward * self.reward_scale, terminated, truncated, info


class MaskedDiceVectorEnv(gym.vector.VectorEnv):
    """:class:`MaskedDiceEnv` for ``num_envs`` games at once, on the NumPy batched env (``NEXT_STEP`` autoreset).

    Args:
        config: :func:`env_config`'s mapping plus ``num_envs`` (RLlib adds it).
    """

    metadata = {"autoreset_mode": gym.vector.AutoresetMode.NEXT_STEP}

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        config = dict(config or {})
        self.rules = load_rules(config.get("rules", "yacht"), **config.get("rules_options", {}))
        self.num_envs = int(config.get("num_envs", 1))
        self.env = DicePokerVectorEnv(self.num_envs, self.rules, obs_mode="flat")
        self.distinct_keeps = bool(config.get("distinct_keeps", False))
        self.reward_scale = float(config.get("reward_scale", 1.0))
        self.single_observation_space, self.inputs, _ = _masked_spaces(self.rules, bool(config.get("features", True)))
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.single_action_space = self.env.single_action_space
        self.action_space = self.env.action_space

    def _observe(self, obs: np.ndarray, info: dict) -> dict[str, np.ndarray]:
        mask = info["action_mask"]
        if self.distinct_keeps:
            assert self.env.state is not None  # observed after reset() or step()
            mask = distinct_keep_mask(mask, self.env.state.roll)
        return {"action_mask": mask.astype(np.float32), "observations": self.inputs(obs)}

    def reset(
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        obs, info = self.env.reset(seed=seed, options=options)
        return self._observe(obs, info), info

    def step(self, actions: Any) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(np.asarray(actions, dtype=np.int64))
        return self._observe(obs, info), reward * self.reward_scale, terminated, truncated, info

    def close_extras(self, **kwargs: Any) -> None:
        self.env.close()


def make_env(config: dict[str, Any]) -> MaskedDiceEnv | MaskedDiceVectorEnv:
    """RLlib's env creator: one game, or the batched env when RLlib asks for ``num_envs`` games."""
    if "num_envs" in config:
        return MaskedDiceVectorEnv(config)
    return MaskedDiceEnv(config)


def register_env() -> None:
    """Register :data:`ENV_NAME` with Ray Tune's registry (every env runner finds it there)."""
    from ray.tune.registry import register_env as register

    register(ENV_NAME, make_env)


class MaskedPPOModule(DefaultPPOTorchRLModule):
    """PPO's default torch module on ``obs["observations"]``, its logits masked by ``obs["action_mask"]``.

    The networks are built for the ``"observations"`` part alone; each forward
    pass takes the mask out of the batch and sets the logits of forbidden
    actions to the lowest float32, so their probability is zero.
    """

    def __init__(self, *, observation_space: gym.Space | None = None, **kwargs: Any) -> None:
        if not isinstance(observation_space, spaces.Dict) or set(observation_space) != {"action_mask", "observations"}:
            raise ValueError(
                f"{type(self).__name__} needs a Dict observation space of action_mask and observations, "
                f"got {observation_space}"
            )
        self._full_space = observation_space
        super().__init__(observation_space=observation_space["observations"], **kwargs)

    def setup(self) -> None:
        super().setup()
        self.observation_space = self._full_space  # what the env runners' connectors see

    @staticmethod
    def _split(batch: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        obs = batch[Columns.OBS]
        return obs["action_mask"], {**batch, Columns.OBS: obs["observations"]}

    @staticmethod
    def _mask(out: dict[str, Any], mask: torch.Tensor) -> dict[str, Any]:
        logits = out[Columns.ACTION_DIST_INPUTS]
        out[Columns.ACTION_DIST_INPUTS] = torch.where(mask > 0.5, logits, torch.full_like(logits, _LOWEST))
        return out

    def _forward_inference(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        mask, batch = self._split(batch)
        return self._mask(super()._forward_inference(batch, **kwargs), mask)

    def _forward_exploration(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        mask, batch = self._split(batch)
        return self._mask(super()._forward_exploration(batch, **kwargs), mask)

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        mask, batch = self._split(batch)
        return self._mask(super()._forward_train(batch, **kwargs), mask)

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> Any:
        if embeddings is None and isinstance(batch[Columns.OBS], dict):
            _, batch = self._split(batch)
        return super().compute_values(batch, embeddings)


def actor_weights(module: Any) -> dict[str, np.ndarray]:
    """The actor network of a :class:`MaskedPPOModule` as policy-file weights ``w0, b0, w1, b1, ...``
    (``x @ w + b``; :class:`agents.policy.player.PolicyAgent`'s layout)."""
    encoder = module.encoder
    actor = getattr(encoder, "actor_encoder", encoder)
    linears = [m for m in actor.modules() if isinstance(m, torch.nn.Linear)]
    linears += [m for m in module.pi.modules() if isinstance(m, torch.nn.Linear)]
    weights: dict[str, np.ndarray] = {}
    for i, m in enumerate(linears):
        weights[f"w{i}"] = m.weight.detach().cpu().numpy().T.astype(np.float32).copy()
        weights[f"b{i}"] = m.bias.detach().cpu().numpy().astype(np.float32).copy()
    return weights


class IllegalActionCount(RLlibCallback):
    """Counts the episodes, and those an illegal action ended (over the run); logs the raw final scores."""

    def on_episode_end(self, *, episode: Any, metrics_logger: MetricsLogger | None = None, **kwargs: Any) -> None:
        info = episode.get_infos(-1)
        if metrics_logger is None or not isinstance(info, dict):
            return
        metrics_logger.log_value("illegal_actions", int(bool(info.get("illegal_action", False))), reduce="lifetime_sum")
        metrics_logger.log_value("episodes_ended", 1, reduce="lifetime_sum")
        if "final_score" in info:
            metrics_logger.log_value("final_score", float(info["final_score"]), reduce="mean", window=100)


def ppo_config(config: Any, rules: Rules) -> PPOConfig:
    """RLlib's ``PPOConfig`` for the ``rllib_ppo`` config section (hyper-parameters mapped one to one)."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    runners = int(config.num_env_runners)
    per_runner = config.n_envs // max(runners, 1)
    lr: Any = config.learning_rate
    if config.lr_schedule == "linear":
        lr = [[0, config.learning_rate], [config.total_timesteps, 0.0]]
    ppo = (
        PPOConfig()
        .environment(ENV_NAME, env_config=env_config(config))
        .env_runners(
            num_env_runners=runners,
            num_envs_per_env_runner=per_runner,
            rollout_fragment_length=config.n_steps,
            gym_env_vectorize_mode=VECTORIZE_MODES[config.vec_env],
            num_cpus_per_env_runner=1,
            sample_timeout_s=None,
        )  # a slow runner is waited for, not dropped
        .learners(num_learners=0, num_gpus_per_learner=1 if str(config.device).startswith("cuda") else 0)
        .training(
            lr=lr,
            gamma=config.gamma,
            lambda_=config.gae_lambda,
            clip_param=config.clip_range,
            entropy_coeff=config.ent_coef,
            vf_loss_coeff=config.vf_coef,
            grad_clip=config.max_grad_norm,
            grad_clip_by="global_norm",
            num_epochs=config.n_epochs,
            minibatch_size=config.batch_size,
            train_batch_size_per_learner=per_runner * max(runners, 1) * config.n_steps,
            use_kl_loss=False,
            vf_clip_param=math.inf,
        )
        .rl_module(
            rl_module_spec=RLModuleSpec(
                module_class=MaskedPPOModule,
                model_config={
                    "fcnet_hiddens": list(config.net_arch),
                    "fcnet_activation": config.activation,
                    "vf_share_layers": False,
                    "head_fcnet_hiddens": [],
                },
            )
        )
        .callbacks(IllegalActionCount)
        .debugging(seed=config.seed, log_level="ERROR")
        .reporting(metrics_num_episodes_for_smoothing=100)
    )
    ppo.update_from_dict(dict(config.algo_kwargs))
    return ppo


class RLlibTrainer:
    """One ``rllib_ppo`` run (the interface of :class:`agents.training.trainer.Trainer`; see the module docstring).

    Building it starts Ray (``config.ray_address``: a cluster; empty: a local Ray
    sized for the env runners) and RLlib's algorithm; nothing is written to the
    run folder until :meth:`run`.
    """

    def __init__(
        self,
        config: Any,
        rules: Rules,
        run_dir: str | os.PathLike,
        *,
        optimal: float | None = None,
        metadata: dict[str, Any] | None = None,
        log: Callable[[str], None] = print,
    ) -> None:
        import ray

        self.config, self.rules, self.run_dir = config, rules, Path(run_dir)
        self.optimal, self.log = optimal, log
        self.metadata = {
            **model_metadata(rules, "flat", config.algo, seed=config.seed),
            **(metadata or {}),
            "algorithm": config.algo,
            "obs_mode": "flat",
            "masked": True,
            "distinct_keeps": bool(config.distinct_keeps),
            "features": bool(config.features),
            "activation": config.activation,
            "net_arch": list(config.net_arch),
        }
        self._own_ray = not ray.is_initialized()
        if self._own_ray:
            if config.ray_address:
                from agents.training.ray_reaper import unreachable

                why = unreachable(config.ray_address)  # (else Ray tries it 20 times, about 40 s each)
                if why:
                    raise ConnectionError(f"ray_address {config.ray_address}: {why}")
                # ray.init's annotation says int; it takes a level name too (logging's own convention)
                ray.init(address=config.ray_address, log_to_driver=False, logging_level="ERROR")  # type: ignore[arg-type]
            else:
                ray.init(
                    address="local",
                    num_cpus=max(int(config.num_env_runners), 1) + 1,
                    include_dashboard=False,
                    _node_ip_address="127.0.0.1",  # a local node: advertised on the loopback only
                    log_to_driver=False,
                    logging_level="ERROR",  # type: ignore[arg-type]  # a level name (see above)
                )
                from agents.training.ray_reaper import reap_on_exit

                reap_on_exit()  # its processes end with this driver, even if it is killed
        try:
            register_env()
            self.algo: Any = ppo_config(config, rules).build_algo()  # RLlib's Algorithm (None once closed)
        except BaseException:
            self.close()
            raise
        self.num_timesteps = 0
        self.iterations = 0
        self.illegal_actions = 0
        self.episodes = 0
        self.train_seconds = 0.0
        self.evaluation = Evaluation(self.run_dir, optimal, log)  #: evaluations.csv and the best mean so far

    # ------------------------------------------------------------------ policy
    def agent(self) -> PolicyAgent:
        """The current policy as the NumPy agent that evaluations and the benchmark play."""
        return PolicyAgent(actor_weights(self.algo.get_module()), {**self.metadata}, self.rules, name=self.config.algo)

    def save_policy(self, path: str | os.PathLike) -> Path:
        return save_policy(
            path,
            actor_weights(self.algo.get_module()),
            {**self.metadata, "timesteps": self.num_timesteps, "illegal_actions": self.illegal_actions},
        )

    @property
    def results_extra(self) -> dict[str, Any]:
        """Fields for ``results.json``: what RLlib's sampling did."""
        return {
            "illegal_actions": self.illegal_actions,
            "training_episodes": self.episodes,
            "num_env_runners": int(self.config.num_env_runners),
            "vec_env": self.config.vec_env,
            "rllib_iterations": self.iterations,
        }

    # ------------------------------------------------------------------ evaluation
    def evaluate(self, writer: SummaryWriter | None = None) -> float:
        """The evaluation of every trainer family (:func:`agents.training.evaluator.evaluate_trainer`)."""
        return evaluate_trainer(self, writer)

    # ------------------------------------------------------------------ the loop
    def run(self, progress: bool = True) -> Path:
        """PPO iterations to ``total_timesteps``; returns the final policy file (``final_model.npz``)."""
        from ray.rllib.utils.metrics import ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME
        from torch.utils.tensorboard import SummaryWriter

        c = self.config
        writer = SummaryWriter(str(self.run_dir / "tb" / "run"))
        config = asdict(c) if is_dataclass(c) and not isinstance(c, type) else dict(vars(c))
        writer.add_text("config", "\n".join(f"    {k}: {v}" for k, v in config.items()))
        started = time.perf_counter()
        empty = 0
        try:
            while self.num_timesteps < c.total_timesteps:
                before = self.num_timesteps
                result = self.algo.train()
                self.iterations += 1
                self.train_seconds = time.perf_counter() - started
                runners = result.get(ENV_RUNNER_RESULTS, {})
                self.num_timesteps = int(runners.get(NUM_ENV_STEPS_SAMPLED_LIFETIME, self.num_timesteps))
                self.illegal_actions = int(runners.get("illegal_actions", self.illegal_actions))
                self.episodes = int(runners.get("episodes_ended", self.episodes))
                empty = empty + 1 if self.num_timesteps <= before else 0
                if empty >= 3:  # e.g. every env runner lost
                    raise RuntimeError(f"RLlib sampled no steps in iterations {self.iterations - 2}-{self.iterations}")
                if empty:
                    continue
                step = self.num_timesteps
                if "final_score" in runners:
                    writer.add_scalar("rollout/score_mean", float(runners["final_score"]), step)
                writer.add_scalar("rollout/illegal_actions", self.illegal_actions, step)
                writer.add_scalar("time/steps_per_second", step / max(self.train_seconds, 1e-9), step)
                if progress:
                    self.log(
                        f"[rllib] iteration {self.iterations}: {step:,} steps, "
                        f"{step / max(self.train_seconds, 1e-9):,.0f} steps/s, illegal actions {self.illegal_actions}"
                    )
                if c.eval_freq > 0 and step // c.eval_freq > before // c.eval_freq:
                    self.evaluate(writer)
                if c.checkpoint_freq > 0 and step // c.checkpoint_freq > before // c.checkpoint_freq:
                    self.algo.save_to_path(str((self.run_dir / "checkpoints" / f"rllib_{step}_steps").resolve()))
            if c.eval_freq > 0 and not self.evaluation.recorded(self.num_timesteps):
                self.evaluate(writer)  # the end point of the learning curve
            self.algo.save_to_path(str((self.run_dir / "rllib_checkpoint").resolve()))
            return self.save_policy(self.run_dir / "final_model.npz")
        finally:
            writer.close()
            self.close()

    def close(self) -> None:
        """Stop RLlib's algorithm and the Ray this trainer started."""
        import ray

        algo = getattr(self, "algo", None)
        if algo is not None:
            logdir = getattr(algo, "logdir", None)
            algo.stop()
            self.algo = None
            _remove_empty_logdir(logdir)
        if self._own_ray and ray.is_initialized():
            ray.shutdown()


def _remove_empty_logdir(logdir: Any) -> None:
    """RLlib's algorithm makes a folder of its own under ``~/ray_results`` (Tune's default storage, with no
    setting to move it) that this trainer never writes to: removed again when it is empty, so that a run
    writes nothing outside its run folder."""
    from ray.train.constants import DEFAULT_STORAGE_PATH

    if not isinstance(logdir, str):
        return
    folder = Path(logdir)
    if folder.parent == Path(DEFAULT_STORAGE_PATH) and folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
