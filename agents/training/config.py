"""The config of a ``train.py`` run: one typed section per algorithm family, read by OmegaConf.

A config file stays one flat YAML mapping (``algo: batched_ppo``, ``n_envs: 1024``, ...); its ``algo`` picks
the family's dataclass. The batched families' defaults are their recipe; the others serve several algorithms
or another library, so their defaults are a quick start and each algorithm's recipe is its config file:

=====================  ============================================  ==========================================
dataclass              ``algo``                                      defaults
=====================  ============================================  ==========================================
:class:`BatchedPPO`    ``batched_ppo``, ``batched_a2c``              the shipped recipe,
                                                                     ``configs/batched_ppo_yacht.yaml``
:class:`BatchedPQN`    ``batched_pqn`` (alias ``pqn``)               ``configs/batched_pqn_yacht.yaml``
:class:`SB3`           ``maskable_ppo``, ``ppo``, ``a2c``, ``dqn``   a quick start (8 envs, 600k steps: the
                                                                     project's first MaskablePPO run); the
                                                                     recipes: ``configs/maskable_ppo_yacht.yaml``,
                                                                     ``ppo_yacht``, ``a2c_yacht``, ``dqn_yacht``
:class:`BC`            ``bc``                                        a quick start; ``configs/bc_yacht.yaml``
:class:`RLlibPPO`      ``rllib_ppo``                                 a quick start; ``configs/rllib_ppo_yacht.yaml``
=====================  ============================================  ==========================================

Every family shares :class:`Common` (the ruleset, evaluation, benchmark, hardware); the reinforcement-learning
families also :class:`RL` (the step budget, discount, reward scale, checkpoints); the batched torch trainers
:class:`Batched` (the batch shape and the policy network's heads). A key that the chosen algorithm does not use
is a one-line error naming it and the algorithm (:data:`UNUSED` lists the keys an algorithm of a family
ignores); a key of a retired option is a one-line error saying so (:data:`RETIRED`). Values are typed and
converted by OmegaConf (``OmegaConf.structured``), then range-checked (:func:`validate`).

Nothing here imports torch, SB3 or Ray: ``train.py --help`` and the checks before a run stay fast.

Size: one schema: every field of every section carries its documentation (the text of ``train.py --help``),
and the sections, their checks and their reader belong together.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from omegaconf import DictConfig

#: ``train.py`` with no ``--config`` runs this file (the defaults of :class:`BatchedPPO`)
DEFAULT_CONFIG_NAME = "batched_ppo_yacht.yaml"


def setting(default: Any, doc: str) -> Any:
    """A config field with its default and its documentation (``python train.py --help`` shows it)."""
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda: copy.deepcopy(default), metadata={"doc": doc})
    return field(default=default, metadata={"doc": doc})


# ----------------------------------------------------------------------------- the sections
@dataclass
class Common:
    """What every run has: the game, the algorithm, the network's size, evaluation, benchmark, hardware."""

    recipe: str = setting(
        "",
        "A label for this recipe: multi-seed results (python -m agents.evaluation.results) group runs by it (default: the algo).",
    )
    rules: str = setting(
        "yacht", "Ruleset name (yacht, dice_poker, school_poker, yahtzee, yatzy) or a rules file path."
    )
    rules_options: dict[str, Any] = setting({}, "Rules options, e.g. {joker: free} for yahtzee.")
    obs_mode: str = setting(
        "flat",
        'Observation layout: "flat" (normalized vector with per-box points) or "dict" (SB3\'s MultiInputPolicy; '
        "SB3 algorithms only).",
    )
    algo: str = setting(
        "batched_ppo",
        "The algorithm, which selects the config section (Stable-Baselines3's ppo, a2c and dqn are unmasked: "
        "illegal actions are replaced).",
    )
    learning_rate: float = setting(0.002, "Optimizer learning rate.")
    lr_schedule: str = setting("linear", '"constant" or "linear" (decays to 0 at the end of training).')
    max_grad_norm: float = setting(0.5, "Gradient clipping.")
    net_arch: list[int] = setting([256, 256], "Hidden layer sizes of the policy and value networks.")
    activation: str = setting("tanh", "Hidden activation: tanh or relu.")
    device: str = setting("cpu", "Torch device.")
    torch_threads: int = setting(1, "torch.set_num_threads (small MLPs are fastest on one thread).")
    seed: int = setting(0, "Seeds torch, NumPy, the envs and the evaluation/benchmark games.")
    eval_freq: int = setting(2_000_000, "Evaluate every this many timesteps (0: never).")
    eval_episodes: int = setting(2000, "Games per periodic evaluation.")
    bench_games: int = setting(2000, "Games per agent in the final benchmark (0: skip it).")
    bench_agents: list[str] = setting(["optimal", "greedy"], "Agents benchmarked beside the trained one.")
    bench_workers: int = setting(2, "Processes for the final benchmark.")
    solver: str = setting(
        "auto",
        "Exact solve of the ruleset (the yardstick: % of optimal, regret, the optimal "
        'agent): "auto" (solve; if the solver refuses the ruleset as too large, train on '
        'and evaluate in raw scores), "on" (a refused solve is an error) or "off" (no '
        "solve: raw scores only).",
    )
    progress_bar: bool = setting(True, "Show a progress bar.")
    runs_dir: str = setting("runs", "Parent folder of run folders when --run-dir is not given.")


@dataclass
class RL(Common):
    """What the reinforcement-learning families add: the step budget, the reward, the envs, checkpoints."""

    total_timesteps: int = setting(24_000_000, "Environment steps to train for (a yacht game is about 30 steps).")
    gamma: float = setting(1.0, "Discount factor; 1.0 because the undiscounted return is the final score.")
    reward_scale: float = setting(
        0.02, "Training rewards are multiplied by this (evaluation always reports raw scores)."
    )
    n_envs: int = setting(1024, "Parallel training envs (games).")
    checkpoint_freq: int = setting(2_000_000, "Save a checkpoint every this many timesteps (0: never).")


@dataclass
class Batched(RL):
    """The project's torch trainers on the NumPy batched env (agents/training/trainer.py): the batch and the network."""

    n_steps: int = setting(16, "Steps per env per rollout (n_envs x n_steps samples per update).")
    batch_size: int = setting(2048, "Minibatch size.")
    n_epochs: int = setting(2, "Passes over each rollout.")
    gae_lambda: float = setting(0.8, "Lambda of the rollout's lambda-returns (GAE for the policy gradients).")
    distinct_keeps: bool = setting(
        True, "Masks show each distinct keep once (bitmasks keeping equal dice are one move)."
    )
    features: bool = setting(True, "The policy also sees progress toward the upper bonus (agents/policy/inputs.py).")
    precision: str = setting(
        "auto",
        '"float32", "bfloat16" (autocast; faster on CPUs with AMX/AVX512-BF16 and on GPUs) or "auto" '
        "(bfloat16 where it is faster).",
    )
    compile: bool = setting(
        True,
        "Run the policy's forward pass and the loss under torch.compile (needs a C++ compiler on CPU; falls "
        "back to eager with a warning; 10-30 s to compile at the start).",
    )
    box_points: float = setting(
        4.0,
        "Each box's logit also gets a learnt weight (starting at this value) times the points the box would "
        "score now, from the observation (0: off; agents/training/actor_critic.py).",
    )
    keep_points: bool = setting(
        True,
        "The actor values each open box's points per state and adds them to the box logits (points now) and "
        "the keep logits (expected points after one reroll, from the rules' tables; agents/training/actor_critic.py).",
    )
    keep_points_bonus: bool | str = setting(
        False,
        "With keep_points: true = each keep's points for an open upper box also include the upper bonus times "
        "the chance that writing the box after the reroll reaches it; par = instead, for keeps and upper boxes, "
        "the change in the bonus's expected points under a par model (agents/policy/inputs.py, KeepBonus).",
    )
    players: int = setting(
        1,
        "1: the single-player game, rewarded by points. 2: self-play at two-player tables "
        "(agents/training/selfplay.py): one policy plays both seats, sees the opponent's scorecard and is paid "
        "+1 for a win, -1 for a loss, 0 for a tie (the multi-player env's reward_mode win); evaluated by "
        "duplicate matches against optimal (greedy without a solution) and benchmarked by matches against bench_agents.",
    )
    init_policy: str = setting(
        "",
        "A policy file (.npz) whose actor the run starts from (the critic starts fresh); a single-player policy "
        "starts a players=2 run with zero weights on the opponent's scorecard, so it first plays as the file does.",
    )
    critic_warmup: int = setting(
        0,
        "Steps at the start during which only the critic learns and the actor is held (with init_policy: a "
        "fresh critic's first guesses would otherwise move the policy at random).",
    )


@dataclass
class BatchedPPO(Batched):
    """batched_ppo and batched_a2c (agents/training/ppo.py, agents/training/a2c.py): the shipped recipe."""

    clip_range: float = setting(0.2, "PPO clip range.")
    ent_coef: float = setting(0.005, "Entropy bonus coefficient.")
    vf_coef: float = setting(0.5, "Value loss coefficient.")


@dataclass
class BatchedPQN(Batched):
    """batched_pqn (agents/training/pqn.py): Q-learning without replay buffer or target network."""

    algo: str = setting("batched_pqn", Common.__dataclass_fields__["algo"].metadata["doc"])

    start_e: float = setting(1.0, "Epsilon (the chance of a random legal action) at the start.")
    end_e: float = setting(0.01, "Epsilon after exploration_fraction of training.")
    exploration_fraction: float = setting(0.2, "Fraction of training over which epsilon decays linearly.")
    temperature: float = setting(
        0.0,
        "Boltzmann exploration: outside epsilon's random actions, a legal action drawn with probability "
        "softmax(Q / temperature) instead of the best (Q in reward_scale units: 0.01 is one point at reward_scale "
        "0.01); 0: the best.",
    )
    layer_norm: bool = setting(True, "LayerNorm in the Q-network's hidden layers (what makes PQN stable).")
    dueling: bool = setting(
        False,
        "Dueling Q-network: Q(s, a) = V(s) + A(s, a) - the mean of A over the legal actions, V a separate MLP "
        "with LayerNorm (the policy file holds A, whose best legal action is Q's).",
    )
    learning_rate: float = setting(0.001, "Optimizer learning rate.")
    max_grad_norm: float = setting(10.0, "Gradient clipping.")
    box_points: float = setting(
        1.0,
        "Each box's Q-value also gets a learnt weight (starting at this value) times the points the box would "
        "score now (1.0 with reward_scale 0.02: the box's reward itself; 0: off).",
    )
    total_timesteps: int = setting(5_000_000, "Environment steps to train for (a yacht game is about 30 steps).")
    eval_freq: int = setting(1_000_000, "Evaluate every this many timesteps (0: never).")
    checkpoint_freq: int = setting(1_000_000, "Save a checkpoint every this many timesteps (0: never).")


#: the flat config's former defaults, which SB3, BC and RLlib configs written for it rely on
_LEGACY = {
    "learning_rate": 3e-4,
    "lr_schedule": "constant",
    "eval_freq": 50_000,
    "eval_episodes": 200,
    "bench_agents": ["optimal", "greedy", "random"],
    "bench_workers": 1,
    "total_timesteps": 600_000,
    "n_envs": 8,
    "checkpoint_freq": 100_000,
    "n_steps": 256,
    "batch_size": 512,
    "n_epochs": 5,
    "gae_lambda": 0.95,
    "ent_coef": 0.01,
}


def _doc(name: str) -> str:
    for cls in (Common, RL, Batched, BatchedPPO):
        if name in cls.__dataclass_fields__:
            return cls.__dataclass_fields__[name].metadata["doc"]
    raise KeyError(name)


def _legacy(name: str) -> Any:
    return setting(_LEGACY[name], _doc(name))


#: the fields the classic trainers (SB3, BC, RLlib) keep at their :data:`_LEGACY` defaults
_CLASSIC = ("learning_rate", "lr_schedule", "eval_freq", "eval_episodes", "bench_agents", "bench_workers")
#: ... and those the classic RL trainers (SB3, RLlib) also keep
_CLASSIC_RL = (*_CLASSIC, "total_timesteps", "n_envs", "checkpoint_freq")


def _classic_defaults(*names: str) -> Any:
    """A class decorator (under ``@dataclass``) giving the fields ``names`` their :data:`_LEGACY` defaults.

    Each is a field of a base class: overriding its default keeps its place and its type.
    """

    def override(cls: type) -> type:
        for name in names:
            base: Any = next(b for b in cls.__mro__[1:] if name in getattr(b, "__dataclass_fields__", {}))
            cls.__annotations__[name] = base.__dataclass_fields__[name].type
            setattr(cls, name, _legacy(name))
        return cls

    return override


@dataclass
@_classic_defaults(*_CLASSIC_RL)
class SB3(RL):
    """Stable-Baselines3's maskable_ppo (sb3-contrib), ppo, a2c and dqn (agents/training/sb3.py)."""

    algo: str = setting("maskable_ppo", Common.__dataclass_fields__["algo"].metadata["doc"])

    n_steps: int = setting(256, "Steps per env per rollout (PPO, A2C).")
    batch_size: int = setting(512, "Minibatch size (PPO, DQN).")
    n_epochs: int = setting(5, "Optimization epochs per rollout (PPO).")
    gae_lambda: float = setting(0.95, "GAE lambda (PPO, A2C).")
    clip_range: float = setting(0.2, "PPO clip range.")
    ent_coef: float = setting(0.01, "Entropy bonus coefficient (PPO, A2C).")
    vf_coef: float = setting(0.5, "Value loss coefficient (PPO, A2C).")
    buffer_size: int = setting(200_000, "DQN: replay buffer size.")
    learning_starts: int = setting(10_000, "DQN: steps before learning starts.")
    train_freq: int = setting(4, "DQN: gradient step every this many env steps.")
    target_update_interval: int = setting(5_000, "DQN: env steps between target network updates.")
    exploration_fraction: float = setting(0.2, "DQN: fraction of training over which epsilon decays.")
    exploration_final_eps: float = setting(0.02, "DQN: final epsilon.")
    save_replay_buffer: bool = setting(
        False, "DQN: also save the replay buffer with checkpoints (exact resume, large files)."
    )
    distinct_keeps: bool = setting(
        False, "maskable_ppo: masks show each distinct keep once (bitmasks keeping equal dice are one move)."
    )
    illegal_penalty: float = setting(
        0.0, "ppo, a2c, dqn (unmasked): points subtracted when an illegal action is replaced by the fallback."
    )
    vec_env: str = setting(
        "dummy",
        'Vector env: "dummy" (DummyVecEnv, one process), "subproc" (SubprocVecEnv) or "batched" (the '
        "project's NumPy batched env; maskable_ppo only).",
    )
    algo_kwargs: dict[str, Any] = setting({}, "Extra keyword arguments passed to the algorithm's constructor as is.")
    verbose: int = setting(0, "SB3 verbosity (0 quiet, 1 info).")


@dataclass
@_classic_defaults(*_CLASSIC)
class BC(Common):
    """Behaviour cloning from a Minari dataset of the solver's games (agents/training/bc.py): imitation, not RL."""

    algo: str = setting("bc", Common.__dataclass_fields__["algo"].metadata["doc"])

    dataset: str = setting(
        "", "The Minari dataset id to imitate, written by `dice-poker dataset` (e.g. dice_poker/yacht/optimal-v0)."
    )
    bc_epochs: int = setting(10, "Passes over the dataset (a policy evaluation after each when eval_freq > 0).")
    batch_size: int = setting(512, "Minibatch size.")
    distinct_keeps: bool = setting(
        False, "The policy sees each distinct keep once (bitmasks keeping equal dice are one move)."
    )
    features: bool = setting(True, "The policy also sees progress toward the upper bonus (agents/policy/inputs.py).")


@dataclass
@_classic_defaults(*_CLASSIC_RL)
class RLlibPPO(RL):
    """RLlib's PPO with action masking, sampling spread over env runner processes (agents/training/rllib_ppo.py)."""

    algo: str = setting("rllib_ppo", Common.__dataclass_fields__["algo"].metadata["doc"])

    n_steps: int = setting(256, "Steps per env per rollout.")
    batch_size: int = setting(512, "Minibatch size.")
    n_epochs: int = setting(5, "Optimization epochs per rollout.")
    gae_lambda: float = setting(0.95, "GAE lambda.")
    clip_range: float = setting(0.2, "PPO clip range.")
    ent_coef: float = setting(0.01, "Entropy bonus coefficient.")
    vf_coef: float = setting(0.5, "Value loss coefficient.")
    distinct_keeps: bool = setting(
        False, "Masks show each distinct keep once (bitmasks keeping equal dice are one move)."
    )
    features: bool = setting(True, "The policy also sees progress toward the upper bonus (agents/policy/inputs.py).")
    num_env_runners: int = setting(
        0, "RLlib env runner processes sampling in parallel, n_envs / num_env_runners games each (0: in-process)."
    )
    vec_env: str = setting(
        "dummy",
        'How each env runner steps its games: "dummy" (gymnasium\'s SyncVectorEnv of single games), "subproc" '
        '(AsyncVectorEnv) or "batched" (the NumPy batched env as RLlib\'s vector env).',
    )
    ray_address: str = setting(
        "", 'The Ray cluster the env runners run on ("auto" or HOST:PORT; empty: a Ray started for the run).'
    )
    algo_kwargs: dict[str, Any] = setting({}, "Extra keyword arguments passed to RLlib's PPOConfig.training as is.")


#: algo -> its section; ``pqn`` is another name of ``batched_pqn``
SECTIONS: dict[str, type[Common]] = {
    "batched_ppo": BatchedPPO,
    "batched_a2c": BatchedPPO,
    "batched_pqn": BatchedPQN,
    "maskable_ppo": SB3,
    "ppo": SB3,
    "a2c": SB3,
    "dqn": SB3,
    "bc": BC,
    "rllib_ppo": RLlibPPO,
}
ALIASES = {"pqn": "batched_pqn"}
# Everything below follows from SECTIONS: an algorithm is registered there alone (a batched one's update rule is
# in the module its algo names: agents.training.trainer.update_module).
#: the algorithms each trainer runs, by the kind of their section
BATCHED_ALGORITHMS = tuple(a for a, cls in SECTIONS.items() if issubclass(cls, Batched))
SB3_ALGORITHMS = tuple(a for a, cls in SECTIONS.items() if issubclass(cls, SB3))
IMITATION_ALGORITHMS = tuple(a for a, cls in SECTIONS.items() if issubclass(cls, BC))
RLLIB_ALGORITHMS = tuple(a for a, cls in SECTIONS.items() if issubclass(cls, RLlibPPO))
#: the sections in the order ``--help`` shows them (their first algorithm's place in SECTIONS), with their algorithms
FAMILIES: dict[type[Common], tuple[str, ...]] = {
    cls: tuple(a for a, c in SECTIONS.items() if c is cls) for cls in dict.fromkeys(SECTIONS.values())
}
_DQN_ONLY: tuple[str, ...] = (
    "buffer_size",
    "learning_starts",
    "train_freq",
    "target_update_interval",
    "exploration_fraction",
)
_DQN_ONLY += ("exploration_final_eps", "save_replay_buffer")
_ON_POLICY = ("n_steps", "gae_lambda", "ent_coef", "vf_coef")
#: keys of its section that an algorithm does not use
UNUSED: dict[str, tuple[str, ...]] = {
    "batched_a2c": ("batch_size", "n_epochs", "clip_range"),
    "batched_pqn": ("players", "init_policy", "critic_warmup"),
    "maskable_ppo": (*_DQN_ONLY, "illegal_penalty"),
    "ppo": _DQN_ONLY,
    "a2c": (*_DQN_ONLY, "batch_size", "n_epochs", "clip_range"),
    "dqn": (*_ON_POLICY, "n_epochs", "clip_range"),
}
#: options that measured worse and were taken out, with where the evidence is
RETIRED = {
    "keep_head": "the keep head measured worse than keep_points (docs/training.md)",
    "keep_points_rerolls": "keep_points_rerolls: 2 measured no better than 1 (docs/training.md)",
    "bonus_shaping": "the bonus shaping measured no better than keep_points_bonus (docs/training.md)",
}

#: the default config's type (``train.py`` with no config file: the shipped recipe)
Config = BatchedPPO


def section(algo: str) -> type[Common]:
    """The config section of ``algo`` (a one-line error for an unknown one)."""
    algo = ALIASES.get(algo, algo)
    if algo not in SECTIONS:
        aliases = ", ".join(f"{alias} for {name}" for alias, name in ALIASES.items())
        raise ValueError(f"algo must be one of {', '.join(SECTIONS)} (or {aliases}), got {algo!r}")
    return SECTIONS[algo]


def all_fields() -> set[str]:
    """Every config key of every section (what a sweep file may set)."""
    return {f.name for cls in FAMILIES for f in dataclasses.fields(cls)}


def field_docs(cls: type | None = None) -> dict[str, str]:
    """The documentation of each field of ``cls`` (default: of every section)."""
    classes = [cls] if cls is not None else list(FAMILIES)
    return {f.name: _describe(f) for c in classes for f in dataclasses.fields(c)}


def _describe(f: dataclasses.Field) -> str:
    """A field's documentation; ``algo``'s ends with the registered algorithms, from :data:`SECTIONS` as it is now."""
    doc = f.metadata.get("doc", "")
    if f.name != "algo":
        return doc
    families: dict[type, list[str]] = {}
    for algo, cls in SECTIONS.items():
        families.setdefault(cls, []).append(algo)
    aliases = "".join(f"; {alias} is {name}" for alias, name in ALIASES.items())
    return (
        f"{doc} One of: " + "; ".join(f"{', '.join(a)} ({cls.__name__})" for cls, a in families.items()) + aliases + "."
    )


def help_text() -> str:
    """Every field with its type, default and documentation, the common ones first, then each section's own."""

    def lines(cls: type, names: list[str]) -> str:
        defaults, fields = cls(), {f.name: f for f in dataclasses.fields(cls)}
        return "\n".join(
            f"  {n}: {fields[n].type} = {getattr(defaults, n)!r}\n      {_describe(fields[n])}" for n in names
        )

    new = object()  # a field no base section declares

    def before(cls: type, name: str) -> Any:  # a common field's default in the shipped recipe, else in a base section
        bases = [b for b in cls.__mro__[1:] if name in getattr(b, "__dataclass_fields__", {})]
        return getattr(BatchedPPO(), name) if name in common else getattr(bases[0](), name) if bases else new

    common = [f.name for f in dataclasses.fields(Common)]
    text = "common fields (defaults of the shipped recipe, batched_ppo; a section may change a default):\n"
    text += lines(BatchedPPO, common)
    for cls, algos in FAMILIES.items():
        only = set(UNUSED.get(algos[0], ())) if len(algos) == 1 else set()  # a section's fields its one algo ignores
        own = [f.name for f in dataclasses.fields(cls) if f.name not in common and f.name not in only]
        # a default the section redeclares: of a common field (against the shipped recipe's) or of a base section's;
        # not its algo, which the heading names
        changed = [
            f.name
            for f in dataclasses.fields(cls)
            if f.name != "algo" and before(cls, f.name) not in (new, getattr(cls(), f.name))
        ]
        text += f"\n\nalgo: {' | '.join(algos)}  ({(cls.__doc__ or '').strip()})\n" + lines(cls, own)
        if changed:
            text += "\n  defaults changed: " + ", ".join(f"{n}={getattr(cls(), n)!r}" for n in changed)
        for algo in algos:
            unused = [n for n in UNUSED.get(algo, ()) if n in common or len(algos) > 1]
            if unused:
                text += f"\n  not used by {algo}: {', '.join(unused)}"
    return text


# ----------------------------------------------------------------------------- reading
def make_config(
    base: dict[str, Any] | None = None, overrides: list[str] | None = None, *, base_file: str | Path | None = None
) -> Common:
    """Defaults <- ``base`` mapping (a YAML file, ``base_file`` where it was read from one) <- ``key=value``
    overrides, then the range checks.

    The section is the one of the final ``algo`` (an override's, else the file's, else ``batched_ppo``).
    OmegaConf types the config (``OmegaConf.structured``): each value is converted to its field's type or
    refused, ``key=value`` overrides are parsed by OmegaConf's dotlist grammar (YAML values:
    ``net_arch=[64, 64]``, ``rules_options={joker: free}``; dotted keys reach into a mapping:
    ``rules_options.joker=free``), and a value replaces the one before it whole.

    Raises:
        ValueError: one line naming the field (or override) and the problem.
    """
    import yaml
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    parsed: list[tuple[str, Any, str]] = []
    for key, value in (base or {}).items():
        parsed.append((key, value, "config file"))
    for text in overrides or []:
        key, sep, rest = text.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"override {text!r}: expected key=value")
        try:
            value = OmegaConf.select(OmegaConf.from_dotlist([text]), key) if rest.strip() else ""
        except yaml.YAMLError as error:
            raise ValueError(f"override {text}: not valid YAML ({yaml_problem(error)})") from None
        except OmegaConfBaseException as error:  # the dotlist grammar, an interpolation that does not resolve
            raise ValueError(f"override {text}: {one_line(error)}") from None
        parsed.append((key, value, f"override {text}"))
    algo = "batched_ppo"
    for key, value, _ in parsed:
        if key == "algo":
            algo = value if isinstance(value, str) else algo if value is None else str(value)
    cls = section(algo)
    algo = ALIASES.get(algo, algo)
    config = OmegaConf.structured(cls)
    for key, value, source in parsed:
        if key == "algo":
            value = algo
        _set_field(config, cls, algo, key, value, source, base_file)
    try:
        result = OmegaConf.to_object(config)
    except OmegaConfBaseException as error:  # e.g. ${...} in a value that does not resolve
        raise ValueError(one_line(error)) from None
    assert isinstance(result, Common)  # a structured config of a Common subclass
    try:
        validate(result)
    except ValueError as error:  # a value of the command line is named as such, not blamed on the file
        named = {name for name in re.findall(r"[a-z][a-z0-9_]*", str(error)) if name in fields_of(cls)}
        given = {key.split(".")[0]: source for key, _, source in parsed if source.startswith("override")}
        blamed = [given[name] for name in sorted(named) if name in given]
        if blamed:
            raise ValueError(f"{', '.join(blamed)}: {error}") from None
        raise
    return result


def fields_of(cls: type) -> set[str]:
    """The names of the fields of a config section."""
    return {f.name for f in dataclasses.fields(cls)}


def _set_field(
    config: DictConfig, cls: type, algo: str, key: Any, value: Any, source: str, base_file: str | Path | None = None
) -> None:
    """Set field ``key`` (a dotted path reaches into a mapping) of the OmegaConf ``config`` to ``value`` (``base_file``:
    the config file the value comes from, if any)."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    fields = {f.name: f for f in dataclasses.fields(cls)}
    name = str(key).split(".")[0]
    where = "command line" if source.startswith("override") else source
    if isinstance(key, str) and name in RETIRED:
        raise ValueError(f"{where}: option {name!r} was retired ({RETIRED[name]}); remove it")
    if isinstance(key, str) and (name in all_fields() and name not in fields or name in UNUSED.get(algo, ())):
        hint = ""
        shipped = Path(__file__).resolve().parents[2] / "configs" / f"{algo}_yacht.yaml"
        own = base_file is not None and Path(base_file).resolve() == shipped  # (no hint to start from itself)
        if not source.startswith("override") and not own:  # another algo's file: name the algo's own, if shipped
            hint = f" (or start from {algo}'s own config: --config configs/{shipped.name})" if shipped.is_file() else ""
        raise ValueError(f"{where}: config field {name!r} is not used by algo {algo}; remove it{hint}")
    if not isinstance(key, str) or name not in fields:
        close = difflib.get_close_matches(str(key), fields, n=3, cutoff=0.6)
        raise ValueError(
            f"{where}: unknown config field {str(key)!r}" + (f" (did you mean {', '.join(close)}?)" if close else "")
        )
    if key == "solver" and isinstance(value, bool):
        value = "on" if value else "off"  # YAML 1.1 reads on/off (yes/no, true/false) as booleans
    if value is None and fields[name].default == "":  # null for a text field whose default is empty ("none")
        value = ""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if key == name and fields[name].type in (bool, "bool") and number and value not in (0, 1):
        # (OmegaConf reads any number as a bool: compile=2 was true without a word)
        prefix = f"{source}: " if source.startswith("override") else f"{where}: "
        raise ValueError(f"{prefix}config field {key!r} is true or false, got {value!r}")
    try:
        OmegaConf.update(config, key, value, merge=False)
    except OmegaConfBaseException as error:
        got = "nothing" if value is None else repr(value)
        inner = str(error.full_key)
        detail = f" ({inner} is {error.value!r})" if inner not in ("", key) else ""
        prefix = f"{source}: " if source.startswith("override") else ""
        raise ValueError(f"{prefix}config field {key!r} expects {fields[name].type}, got {got}{detail}") from None


def yaml_problem(error: Exception) -> str:
    """A YAML parse error on one line: what is wrong, and where."""
    problem = getattr(error, "problem", None) or (str(error).splitlines() or ["unreadable"])[0]
    mark = getattr(error, "problem_mark", None)
    return f"{problem} at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else problem


def one_line(error: BaseException) -> str:
    """An exception as one line of text (its message's whitespace runs made one space; 300 characters at most)."""
    from agents.players.registry import cut

    return cut(" ".join(str(error).split()) or type(error).__name__, 300)


# ----------------------------------------------------------------------------- checks
#: the most games a final benchmark or an evaluation may ask for (beyond it the arrays do not fit in memory)
MAX_GAMES = 1_000_000
#: numeric fields and the values they take: (lowest, highest, lowest allowed itself)
NUMERIC_RANGES: dict[str, tuple[float, float, bool]] = {
    **{
        name: (1, math.inf, True)
        for name in (
            "total_timesteps",
            "n_envs",
            "n_steps",
            "batch_size",
            "n_epochs",
            "buffer_size",
            "train_freq",
            "target_update_interval",
            "torch_threads",
            "bc_epochs",
        )
    },
    "bench_workers": (1, 256, True),
    "eval_episodes": (1, MAX_GAMES, True),
    "bench_games": (0, MAX_GAMES, True),
    **{
        name: (0, math.inf, True)
        for name in (
            "learning_starts",
            "critic_warmup",
            "seed",
            "eval_freq",
            "checkpoint_freq",
            "ent_coef",
            "vf_coef",
            "num_env_runners",
            "illegal_penalty",
            "temperature",
        )
    },
    **{name: (0, math.inf, False) for name in ("learning_rate", "clip_range", "max_grad_norm", "reward_scale")},
    **{
        name: (0, 1, True)
        for name in ("gamma", "gae_lambda", "exploration_fraction", "exploration_final_eps", "start_e", "end_e")
    },
    "verbose": (0, 2, True),
}


def _choice(c: Common, name: str, choices: tuple[str, ...]) -> None:
    if getattr(c, name) not in choices:
        raise ValueError(f"{name} must be {', '.join(choices[:-1])} or {choices[-1]}, got {getattr(c, name)!r}")


def validate(c: Common) -> None:
    """Range and consistency checks of a typed config, and every name the run will need (``bench_agents``).

    Raises:
        ValueError: one line naming the field and the problem.
    """
    from agents.players.registry import check_agent

    for name, (low, high, low_ok) in NUMERIC_RANGES.items():
        if not hasattr(c, name):
            continue
        value = getattr(c, name)
        if not (math.isfinite(value) and (value >= low if low_ok else value > low) and value <= high):
            bound = f"{'>=' if low_ok else '>'} {low}" if high == math.inf else f"in [{low}, {high:,}]"
            raise ValueError(f"{name} must be {bound}, got {value!r}")
    from agents.evaluation.protocol import check_training_seed

    check_training_seed(c.seed)  # the benchmark's evaluation set lies above every training seed
    if not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in c.net_arch):
        raise ValueError(f"net_arch must list positive layer sizes (integers), got {c.net_arch!r}")
    for agent in c.bench_agents:
        try:
            check_agent(agent)
        except ValueError as error:
            raise ValueError(f"bench_agents: {error}") from None
    _choice(c, "solver", ("auto", "on", "off"))
    _choice(c, "obs_mode", ("flat", "dict"))
    _choice(c, "activation", ("tanh", "relu"))
    _choice(c, "lr_schedule", ("constant", "linear"))
    if c.obs_mode != "flat" and not isinstance(c, SB3):
        raise ValueError(f"{c.algo} uses the flat observation; set obs_mode=flat")
    if isinstance(c, Batched):
        if not c.net_arch:
            raise ValueError(f"net_arch must list at least one hidden layer for {c.algo}, got []")
        _choice(c, "precision", ("float32", "bfloat16", "auto"))
        if not isinstance(c.keep_points_bonus, bool) and c.keep_points_bonus != "par":
            quoted = (
                " (quoted: a text; write true or false without quotes)"
                if c.keep_points_bonus in ("true", "false", "True", "False")
                else ""
            )
            raise ValueError(f"keep_points_bonus must be true, false or par, got {c.keep_points_bonus!r}{quoted}")
        if c.keep_points_bonus and not c.keep_points:
            raise ValueError("keep_points_bonus needs keep_points=true")
        if not 0 <= c.box_points < 1e6:
            raise ValueError(f"box_points must be a non-negative number (0 = off), got {c.box_points!r}")
        if c.players not in (1, 2):
            raise ValueError(f"players must be 1 (the single-player game) or 2 (self-play), got {c.players!r}")
        if c.init_policy and not c.init_policy.endswith(".npz"):
            raise ValueError(
                f"init_policy must be a policy file (.npz, written by a batched trainer), got {c.init_policy!r}"
            )
    if isinstance(c, BatchedPQN) and c.end_e > c.start_e:
        raise ValueError(f"end_e ({c.end_e}) must not be above start_e ({c.start_e}): epsilon decays")
    if isinstance(c, BC) and not c.dataset:
        raise ValueError(f"{c.algo} imitates a dataset: set dataset=ID (written by dice-poker dataset)")
    if isinstance(c, (SB3, RLlibPPO)):
        _choice(c, "vec_env", ("dummy", "subproc", "batched"))
    if isinstance(c, RLlibPPO) and c.n_envs % max(c.num_env_runners, 1):
        raise ValueError(
            f"n_envs ({c.n_envs}) must be a multiple of num_env_runners ({c.num_env_runners}): "
            "each env runner steps n_envs / num_env_runners games"
        )
    if isinstance(c, SB3):
        masked = c.algo == "maskable_ppo"
        if c.distinct_keeps and not masked:
            raise ValueError(f"distinct_keeps needs a masked algorithm (maskable_ppo); {c.algo} does not use masks")
        if c.vec_env == "batched" and not masked:
            raise ValueError("vec_env='batched' supports masked algorithms only (maskable_ppo); use dummy or subproc")


#: the values of the retired options when they were off
RETIRED_OFF = {"keep_head": 0, "keep_points_rerolls": 1, "bonus_shaping": 0.0}


def saved_run_config(base: dict[str, Any]) -> dict[str, Any]:
    """A run folder's ``config.yaml`` as :func:`make_config` reads it. Runs written before the config had sections
    saved every field of every algorithm: the keys their algorithm never read are dropped, and so are retired
    options that were off (a retired option that was on stays, and is refused)."""
    try:
        fields = used_fields(str(base.get("algo", "batched_ppo")))
    except ValueError:
        return base
    return {
        key: value
        for key, value in base.items()
        if (key in fields or key in RETIRED or key not in all_fields())
        and not (key in RETIRED and value == RETIRED_OFF[key])
    }


def used_fields(algo: str) -> set[str]:
    """The fields of ``algo``'s section that it reads: the section's, less its :data:`UNUSED` keys."""
    algo = ALIASES.get(algo, algo)
    return {f.name for f in dataclasses.fields(section(algo))} - set(UNUSED.get(algo, ()))


def as_dict(config: Common) -> dict[str, Any]:
    """The config as a plain mapping (its section's fields that its algorithm uses), as a run's ``config.yaml``
    holds it: a file :func:`make_config` takes back as ``--config``."""
    used = used_fields(config.algo)
    return {key: value for key, value in dataclasses.asdict(config).items() if key in used}
