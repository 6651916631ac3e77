"""The loop of the batched torch trainers: rollouts, updates, evaluation, checkpoints, resume.

``train.py`` runs it for every batched algorithm (``batched_NAME``: its update rule is in
``agents/training/NAME.py``, :func:`update_module`: ``batched_ppo``, :mod:`agents.training.ppo`;
``batched_a2c``, :mod:`agents.training.a2c`; ``batched_pqn``, :mod:`agents.training.pqn`); each
algorithm file holds only its update rule (and its hooks, :func:`update_module`'s docstring). The
loop, read top to bottom in :meth:`Trainer.run`:

1. collect a rollout of ``n_steps`` steps of ``n_envs`` games in the NumPy
   batched env (:class:`agents.training.rollout.Rollout`), one policy forward per step
   for all games (with ``players: 2``, of ``n_envs`` two-player tables in self-play, paid
   for winning: :class:`agents.training.selfplay.SelfPlayRollout`);
2. update the network with the algorithm's rule;
3. log to TensorBoard; every ``eval_freq`` steps play ``eval_episodes`` fixed
   games with the greedy policy (the NumPy :class:`~agents.policy.player.PolicyAgent`
   that the benchmark and the shipped policies use; with ``players: 2``, duplicate two-player
   games against a fixed opponent) and write ``evaluations.csv`` and ``best_model.npz``;
   every ``checkpoint_freq`` steps write a checkpoint.

A checkpoint (``checkpoints/model_<steps>_steps.pt``) holds everything the run
depends on at an update boundary: the network, the optimizer, the env's games
and random generator, the sampling and shuffling generators and the loop's
counters, so a resumed run continues exactly as if it had never stopped.
Checkpoints and policy files are written atomically (a temporary file renamed
into place).

A checkpoint never runs code when it is read: it holds only tensors, plain data
(dicts, lists, numbers, strings) and NumPy arrays stored as raw bytes with their
dtype and shape, and is read with ``torch.load(weights_only=True)``, which
refuses anything else. Its first line names the format, its second holds the
SHA-256 of the rest, checked before anything is read: a truncated or changed
file is a one-line error (``ValueError``), never a silent resume.
"""

from __future__ import annotations

import copy
import hashlib
import importlib
import inspect
import io
import os
import time
import zipfile
from collections.abc import Callable
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from agents.evaluation.protocol import TRACKS
from agents.players.sb3_agent import model_metadata
from agents.policy.files import MAX_CHECKPOINT_BYTES, check_unpacked
from agents.policy.heads import PolicyHeads, PolicyOptions
from agents.policy.player import PolicyAgent, load_policy, save_policy
from agents.training.actor_critic import ActorCritic, Compiled, resolve_precision
from agents.training.evaluator import EVAL_SEED_OFFSET, Evaluation, evaluate, evaluate_trainer  # noqa: F401
from agents.training.rollout import BaseRollout, Rollout
from agents.training.selfplay import SelfPlayRollout
from dice_poker_env.envs.vector import BIT_GENERATORS
from dice_poker_env.files import write_whole
from dice_poker_env.rules import Rules

if TYPE_CHECKING:
    from torch.utils.tensorboard import SummaryWriter


def update_module(algo: str) -> str:
    """The module of a batched algorithm's update rule: ``agents.training.NAME`` for algo ``batched_NAME`` (or ``NAME``).

    It holds ``update(model, optimizer, batch, config, generator)`` and optionally ``NETWORK``, the network class,
    default ActorCritic; ``network_options(config)``, more keyword arguments of the network, recorded in the
    policy's metadata; ``behaviour(config, progress)``, the rollout's action choice at a fraction of training done,
    default sampling from the policy; ``TRACK``, the benchmark track its policies belong to when its update uses the
    rules engine or the solver: ``"rules"`` or ``"solver"``. An algorithm is registered by its config section
    alone (``SECTIONS`` of :mod:`agents.training.config`): this name follows from its ``algo``.
    """
    return f"agents.training.{algo.removeprefix('batched_')}"


CHECKPOINT_FORMAT = 2
#: first line of a checkpoint file; the second is the hex SHA-256 of everything after it
CHECKPOINT_MAGIC = b"DICE-POKER-CHECKPOINT 2\n"
#: the dtypes a NumPy array in a checkpoint may have (numbers and booleans; never objects)
_ARRAY_KINDS = frozenset("biufc")


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_whole(path, data)


class Trainer:
    """One batched training run (see the module docstring).

    Args:
        config: the run's config section (:class:`agents.training.config.BatchedPPO` or
            :class:`~agents.training.config.BatchedPQN`).
        rules: the ruleset.
        run_dir: the run folder (TensorBoard logs, checkpoints, policies, ``evaluations.csv``).
        optimal: the solver's optimal expected score (percent of optimal in logs), or None.
        metadata: recorded in every policy file (ruleset, config, command, version, code commit).
        log: where progress lines go.
        resuming: a checkpoint will be loaded next: ``init_policy`` is not read (the checkpoint holds the actor
            the run became, and a relative path may no longer resolve).
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
        resuming: bool = False,
    ) -> None:
        module = update_module(config.algo)
        try:  # (a config section names the algo, or it would not have been read)
            algorithm = importlib.import_module(module)
        except ModuleNotFoundError as error:
            if error.name != module:  # the algorithm's own file failed to import something
                raise
            algorithm = None
        if not callable(getattr(algorithm, "update", None)):
            path = module.replace(".", "/") + ".py"
            raise ValueError(
                f"algo {config.algo!r} has a config section but no update rule: write "
                f"update(model, optimizer, batch, config, generator) in {path}"
            )
        assert algorithm is not None
        self.config, self.rules, self.run_dir = config, rules, Path(run_dir)
        self.log = log
        self.device = torch.device(config.device)
        torch.manual_seed(config.seed)
        self.update_rule = algorithm.update
        try:  # (a wrong signature would otherwise fail at the first update, after the run folder is written)
            inspect.signature(self.update_rule).bind("model", "optimizer", "batch", "config", "generator")
        except TypeError:
            raise ValueError(
                f"{algorithm.__name__}.update must take (model, optimizer, batch, config, generator), not "
                f"{inspect.signature(self.update_rule)}"
            ) from None
        self.behaviour = getattr(algorithm, "behaviour", None)
        rollout = SelfPlayRollout if getattr(config, "players", 1) > 1 else Rollout
        self.rollout: BaseRollout = rollout(
            rules,
            config.n_envs,
            config.n_steps,
            config.seed,
            distinct_keeps=config.distinct_keeps,
            reward_scale=config.reward_scale,
            gamma=config.gamma,
            gae_lambda=config.gae_lambda,
            features=config.features,
            device=self.device,
        )
        options = PolicyOptions.from_config(config)
        network_options = algorithm.network_options(config) if hasattr(algorithm, "network_options") else {}
        self.model = getattr(algorithm, "NETWORK", ActorCritic)(
            PolicyHeads(rules, options),
            config.net_arch,
            config.activation,
            resolve_precision(config.precision, self.device),
            **network_options,
        ).to(self.device)
        if getattr(config, "init_policy", "") and not resuming:  # (a checkpoint holds the actor it became)
            self.model.load_actor(*load_policy(config.init_policy), source=f"init_policy {config.init_policy}")
        #: what the rollouts call: the model, or with ``compile`` its forward under torch.compile
        self.policy = Compiled(self.model) if config.compile else self.model
        # the fused Adam kernel (CPU and CUDA): the same update rule, about 14% faster PPO updates measured here
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=config.learning_rate, eps=1e-5, fused=True)
        self.generator = torch.Generator().manual_seed(config.seed + 1)  # minibatch order
        track = getattr(algorithm, "TRACK", None)
        if track is not None and track not in TRACKS:  # (before any training: every policy file records it)
            raise ValueError(f"{algorithm.__name__}.TRACK must be one of {', '.join(TRACKS)}, got {track!r}")
        self.metadata = {
            **model_metadata(rules, "flat", config.algo, seed=config.seed),
            **(metadata or {}),
            "algorithm": config.algo,
            # an algorithm that uses the rules engine or the solver in its update declares its track (TRACK)
            **({"track": track} if track is not None else {}),
            "obs_mode": "flat",
            "masked": True,
            "distinct_keeps": bool(config.distinct_keeps),
            "activation": config.activation,
            "net_arch": list(config.net_arch),
            "precision": self.model.precision,
            **options.metadata(),
            **{
                name: value for name, value in network_options.items() if value
            },  # e.g. layer_norm (PolicyAgent reads it)
        }
        self.updates = 0
        self.evaluation = Evaluation(self.run_dir, optimal, log)
        self.train_seconds = 0.0  # training time over all sessions of the run (resumes add up)

    @property
    def optimal(self) -> float | None:
        """The solver's optimal expected score (percent of optimal), or None; ``train.py`` sets it after the
        solve, which comes after the trainer and its checkpoint are checked."""
        return self.evaluation.optimal

    @optimal.setter
    def optimal(self, value: float | None) -> None:
        self.evaluation.optimal = value

    @property
    def num_timesteps(self) -> int:
        """Env steps (decisions) taken so far, counted across all the batch's games."""
        return self.rollout.steps

    @property
    def planned_timesteps(self) -> int:
        """The steps the run trains in all: whole rollouts of ``n_envs x n_steps``, the last one past
        ``total_timesteps`` where it does not divide it (at least the steps already taken)."""
        rollout = int(self.config.n_envs) * int(self.config.n_steps)
        return max(-(-int(self.config.total_timesteps) // rollout) * rollout, self.num_timesteps)

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict[str, Any]:
        """Everything a checkpoint holds to resume exactly: the config, the network (its parameters and
        registered buffers: where an algorithm keeps state of its own between updates), the optimizer, the
        generators, the games of the batch and the loop's counters."""
        config = (
            asdict(self.config)
            if is_dataclass(self.config) and not isinstance(self.config, type)
            else dict(vars(self.config))
        )
        return {
            "format": CHECKPOINT_FORMAT,
            "algo": self.config.algo,
            "config": config,
            "metadata": self.metadata,
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "generator": self.generator.get_state(),
            "rollout": to_plain(self.rollout.state()),
            "updates": self.updates,
            "best": self.evaluation.best,
            "train_seconds": self.train_seconds,
        }

    def save_checkpoint(self, path: str | os.PathLike | None = None) -> Path:
        """Write :meth:`state_dict` whole or not at all (default ``checkpoints/model_<steps>_steps.pt``), with a
        magic line and its SHA-256 (:meth:`load_checkpoint` checks both and loads no code); its path."""
        path = Path(path) if path is not None else self.run_dir / "checkpoints" / f"model_{self.num_timesteps}_steps.pt"
        buffer = io.BytesIO()
        torch.save(to_plain(self.state_dict()), buffer)
        payload = buffer.getvalue()
        _atomic_write(path, CHECKPOINT_MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload)
        return path

    def load_checkpoint(self, path: str | os.PathLike) -> None:
        """Continue from a checkpoint of this ruleset and algorithm (checked before anything changes)."""
        state = read_checkpoint(path)
        if state["algo"] != self.config.algo:
            raise ValueError(f"checkpoint {path} was written by algo {state['algo']!r}, not {self.config.algo!r}")
        if state["metadata"].get("rules_fingerprint") != self.metadata.get("rules_fingerprint"):
            raise ValueError(f"checkpoint {path} is of another ruleset ({state['metadata'].get('rules')!r})")
        self._check_layers(state["model"], path)
        rollout = state["rollout"]
        try:
            bit_generator = rollout["env"]["np_random"]["bit_generator"]
            if bit_generator not in BIT_GENERATORS:
                raise ValueError(f"unknown random generator {bit_generator!r}")
            counters = [state[name] for name in ("updates", "best", "train_seconds")]
            if not all(isinstance(value, (int, float)) and not isinstance(value, bool) for value in counters):
                raise ValueError(f"counters {counters!r} are not numbers")
            model, optimizer = copy.deepcopy(self.model.state_dict()), copy.deepcopy(self.optimizer.state_dict())
            generator = self.generator.get_state()
            try:
                self.model.load_state_dict(state["model"])
                self.optimizer.load_state_dict(state["optimizer"])
                self.generator.set_state(state["generator"])
                self.rollout.restore(rollout)
            except BaseException:  # nothing half-loaded stays behind
                self.model.load_state_dict(model)
                self.optimizer.load_state_dict(optimizer)
                self.generator.set_state(generator)
                raise
        except (KeyError, TypeError, ValueError, RuntimeError, IndexError, AttributeError) as error:
            raise ValueError(f"checkpoint {path} does not fit this run ({type(error).__name__}: {error})") from None
        self.updates, self.evaluation.best, self.train_seconds = counters
        earlier = state["metadata"].get("commands") or [state["metadata"].get("command")]
        now = self.metadata.get("command")
        self.metadata["commands"] = [c for c in (*earlier, now) if isinstance(c, str)]  # the run's first command too

    def _check_layers(self, saved: Any, path: str | os.PathLike) -> None:
        """A checkpoint's network has this config's layers, each of its shape (else a one-line ``ValueError`` naming
        the first layer that differs, before anything is loaded)."""
        if not isinstance(saved, dict):
            raise ValueError(f"checkpoint {path} does not fit this run (its network is not a mapping of layers)")
        ours = self.model.state_dict()
        arch = f"net_arch={list(self.config.net_arch)}"
        for name, tensor in ours.items():
            theirs = saved.get(name)
            if not isinstance(theirs, torch.Tensor):
                raise ValueError(f"checkpoint {path} has no layer {name}, which this config's network has ({arch})")
            if theirs.shape != tensor.shape:
                raise ValueError(
                    f"checkpoint {path}: layer {name} is {list(theirs.shape)} there, {list(tensor.shape)} in this "
                    f"config's network ({arch}); resume with the run's own network"
                )
        extra = sorted(set(saved) - set(ours))
        if extra:
            raise ValueError(f"checkpoint {path} has a layer {extra[0]} that this config's network has not ({arch})")

    def _hold_actor(self, held: bool) -> None:
        """``critic_warmup``: while ``held``, only the critic's parameters get gradients (and move)."""
        for name, param in self.model.named_parameters():
            if not name.startswith("critic."):
                param.requires_grad_(not held)

    # ------------------------------------------------------------------ policy
    def agent(self) -> PolicyAgent:
        """The current policy as the NumPy agent that benchmarks and shipped policies use."""
        return PolicyAgent(self.model.export(), {**self.metadata}, self.rules, name=self.config.algo)

    def save_policy(self, path: str | os.PathLike) -> Path:
        """The actor's weights as a policy file (``.npz``: no code, what ``model:PATH`` plays), with the run's
        metadata and its steps; its path."""
        return save_policy(path, self.model.export(), {**self.metadata, "timesteps": self.num_timesteps})

    # ------------------------------------------------------------------ evaluation
    def evaluate(self, writer: SummaryWriter | None = None) -> float:
        """Play the fixed evaluation games with the current policy (:func:`agents.training.evaluator.evaluate_trainer`)."""
        return evaluate_trainer(self, writer)

    # ------------------------------------------------------------------ the loop
    def run(self, progress: bool = True, *, stop_at: int | None = None) -> Path | None:
        """Train to ``total_timesteps``; returns the final policy file (``final_model.npz``).

        ``stop_at``: stop at the first update boundary at or past this many steps
        instead (an interrupted run: no final evaluation or policy; returns None).
        """
        from torch.utils.tensorboard import SummaryWriter

        c = self.config
        # a resumed run: what was logged past its checkpoint is logged again, so it goes (TensorBoard's
        # purge_step, the CSV's rewind); the seconds and the best so far are the checkpoint's
        resumed_at = self.num_timesteps
        writer = SummaryWriter(str(self.run_dir / "tb" / "run"), purge_step=resumed_at + 1 if resumed_at else None)
        self.evaluation.rewind(resumed_at)
        if self.updates == 0:
            writer.add_text("config", "\n".join(f"    {k}: {v}" for k, v in self.state_dict()["config"].items()))
        bar = None
        if progress:
            try:
                from tqdm import tqdm

                bar = tqdm(
                    total=self.planned_timesteps,
                    initial=min(self.num_timesteps, self.planned_timesteps),
                    unit="step",
                    unit_scale=True,
                    dynamic_ncols=True,
                )
            except ModuleNotFoundError:
                pass
        session_start = time.perf_counter()
        seconds_before = self.train_seconds
        while self.num_timesteps < c.total_timesteps:
            if stop_at is not None and self.num_timesteps >= stop_at:
                writer.close()
                return None
            before = self.num_timesteps
            fraction_left = 1.0 - before / c.total_timesteps
            lr = c.learning_rate * (fraction_left if c.lr_schedule == "linear" else 1.0)
            for group in self.optimizer.param_groups:
                group["lr"] = lr
            self._hold_actor(before < getattr(c, "critic_warmup", 0))
            if self.behaviour is None:
                batch = self.rollout.collect(self.policy)
            else:
                batch = self.rollout.collect(self.policy, self.behaviour(c, before / c.total_timesteps))
            stats = self.update_rule(self.model, self.optimizer, batch, c, self.generator)
            self.updates += 1
            self.train_seconds = seconds_before + time.perf_counter() - session_start
            step = self.num_timesteps
            scores = self.rollout.take_scores()
            if len(scores):
                writer.add_scalar("rollout/score_mean", float(scores.mean()), step)
            for key, value in stats.items():
                writer.add_scalar(f"train/{key}", value, step)
            writer.add_scalar("train/learning_rate", lr, step)
            writer.add_scalar("time/steps_per_second", step / max(self.train_seconds, 1e-9), step)
            if bar is not None:
                bar.update(step - before)
            if c.eval_freq > 0 and step // c.eval_freq > before // c.eval_freq:
                self.evaluate(writer)
            if c.checkpoint_freq > 0 and step // c.checkpoint_freq > before // c.checkpoint_freq:
                self.save_checkpoint()
        if bar is not None:
            bar.close()
        if c.eval_freq > 0 and not self.evaluation.recorded(self.num_timesteps):
            self.evaluate(writer)  # the end point of the learning curve
        if c.checkpoint_freq > 0 and self.num_timesteps % c.checkpoint_freq:
            self.save_checkpoint()  # the end point too: --resume with a larger total goes on from here
        writer.close()
        return self.save_policy(self.run_dir / "final_model.npz")


def read_checkpoint(path: str | os.PathLike) -> dict[str, Any]:
    """A checkpoint's contents, read without running any code from the file.

    Raises:
        FileNotFoundError: no such file.
        ValueError: (one line) not a checkpoint of this format, truncated, changed (checksum), or holding
            anything but tensors, plain data and NumPy arrays.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such checkpoint")
    data = path.read_bytes()
    if not data.startswith(CHECKPOINT_MAGIC):
        if data.startswith(b"PK") and path.suffix in (".npz", ".zip"):  # a policy file or an SB3 model
            raise ValueError(
                f"{path}: a policy or model file, not a checkpoint of the batched trainers; resume from the run's "
                "checkpoints/model_N_steps.pt (or start a new run from a policy with init_policy=PATH)"
            )
        if data.startswith(b"PK"):  # a torch.save zip: the pickled checkpoints of format 1 (before 2026-12)
            raise ValueError(
                f"{path}: a checkpoint of an older format (pickled objects, which can run code when loaded); "
                "it is not read: resume it with the version that wrote it, or start a new run"
            )
        raise ValueError(f"{path}: truncated or corrupt checkpoint (not a batched-trainer checkpoint file)")
    head = len(CHECKPOINT_MAGIC)
    digest, payload = data[head : head + 65], data[head + 65 :]
    if len(digest) != 65 or digest[-1:] != b"\n" or hashlib.sha256(payload).hexdigest().encode() != digest[:-1]:
        raise ValueError(f"{path}: truncated or corrupt checkpoint (its SHA-256 checksum does not match its contents)")
    try:
        with zipfile.ZipFile(io.BytesIO(payload)) as archive:  # torch's own zip: its tensors' bytes first
            check_unpacked(archive, path, "a checkpoint", MAX_CHECKPOINT_BYTES)
    except zipfile.BadZipFile:
        raise ValueError(f"{path}: truncated or corrupt checkpoint (its contents are not torch's archive)") from None
    try:
        state = from_plain(torch.load(io.BytesIO(payload), map_location="cpu", weights_only=True))
    except Exception as error:  # noqa: BLE001 - torch raises several types for refused or corrupt contents
        text = " ".join(str(error).split())[:200]
        raise ValueError(f"{path}: truncated or corrupt checkpoint ({type(error).__name__}: {text})") from None
    if not isinstance(state, dict) or state.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"{path}: not a batched-trainer checkpoint of format {CHECKPOINT_FORMAT}")
    missing = [key for key in ("algo", "config", "metadata", "model", "optimizer", "rollout") if key not in state]
    if missing or not isinstance(state["metadata"], dict) or not isinstance(state["rollout"], dict):
        raise ValueError(f"{path}: truncated or corrupt checkpoint (no {', '.join(missing) or 'metadata'})")
    return state


def to_plain(value: Any) -> Any:
    """``value`` as what ``torch.load(weights_only=True)`` reads back: tensors and plain data, each NumPy array
    as ``{"__ndarray__": dtype, "shape": [...], "data": uint8 tensor}`` (:func:`from_plain` undoes it)."""
    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in _ARRAY_KINDS:
            raise TypeError(f"a checkpoint holds no arrays of dtype {value.dtype}")
        raw = np.frombuffer(np.ascontiguousarray(value).tobytes(), dtype=np.uint8)
        return {"__ndarray__": value.dtype.str, "shape": list(value.shape), "data": torch.from_numpy(raw.copy())}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {key: to_plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(to_plain(item) for item in value)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"a checkpoint holds no objects of type {type(value).__name__}")


def from_plain(value: Any) -> Any:
    """Undo :func:`to_plain` (``ValueError`` for an array entry that does not describe an array)."""
    if isinstance(value, dict):
        if "__ndarray__" in value:
            if set(value) != {"__ndarray__", "shape", "data"} or not isinstance(value["data"], torch.Tensor):
                raise ValueError("malformed array entry")
            dtype = np.dtype(str(value["__ndarray__"]))
            shape = [int(n) for n in value["shape"]]
            if dtype.kind not in _ARRAY_KINDS or value["data"].dtype != torch.uint8 or min(shape, default=0) < 0:
                raise ValueError(f"malformed array entry (dtype {dtype}, shape {shape})")
            if value["data"].untyped_storage().nbytes() < value["data"].numel():  # a view repeating fewer bytes
                raise ValueError("array entry whose bytes are a view of fewer bytes (a file that would fill memory)")
            raw = value["data"].numpy().tobytes()
            if len(raw) != int(np.prod(shape, dtype=np.int64)) * dtype.itemsize:
                raise ValueError(f"array entry of shape {shape} holds {len(raw)} bytes")
            return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()
        return {key: from_plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(from_plain(item) for item in value)
    return value
