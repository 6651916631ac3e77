"""The benchmark protocol's fixed evaluation set and metrics (``docs/benchmark.md``).

Every agent is evaluated on the same games: game ``i`` (``0 <= i < 10,000``) of the
evaluation set ``v1`` is the game the single env deals after ``reset(seed=EVAL_SEED_BASE + i)``,
whatever the ruleset (the ruleset decides how many dice a turn uses). Training seeds are below
:data:`TRAIN_SEED_LIMIT` (``train.py`` refuses others), so no training env, periodic evaluation or
in-training benchmark is ever seeded inside the evaluation range.

The primary metric is the **luck-free percent of optimal**, ``100 * (1 - mean regret / optimal
expected score)``, with the exact regret of :mod:`agents.evaluation.benchmark` (the solver's value lost at each
decision, summed per game): the dice luck cancels, so its 95% interval is far narrower than the mean
score's. The optimal agent scores exactly 100 (regret exactly 0).

Layering: imports :mod:`agents.evaluation.benchmark` and the core package; ``torch`` only for an SB3 model.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import numpy as np

from agents.evaluation.benchmark import Z95, _build, load_solution, play_games, summarize
from agents.players.registry import check_agent, is_batch_agent, one_line, parse_agent_spec
from dice_poker_env.cli import machine_description
from dice_poker_env.rules import Rules, load_rules

#: the evaluation set's version: bumped (with a new seed range) if the set ever changes
EVAL_SET_VERSION = "v1"
#: games in the evaluation set
EVAL_GAMES = 10_000
#: env seed of the evaluation set's game 0 (2**40): game i is reset with EVAL_SEED_BASE + i
EVAL_SEED_BASE = 2**40
#: training seeds are in [0, TRAIN_SEED_LIMIT); with every offset train.py adds (at most a few
#: million), they stay far below EVAL_SEED_BASE
TRAIN_SEED_LIMIT = 2**32
#: the fewest seeds (per ruleset) an interval over seeds is computed from: a 95% percentile-bootstrap interval
#: of 2, 3 or 4 seeds holds the true value in about 51%, 74% and 87% of cases, of 5 in 91%
#: (``python benchmarks/interval_coverage.py``: results/bench/interval_coverage.json); below, only the range
MIN_SEEDS_FOR_INTERVAL = 5
#: the tracks of the protocol, by how much of the game's machinery an agent may use
TRACKS = ("raw", "rules", "solver")
#: policy-file options that put rules knowledge into a trained policy (the rules track)
RULES_OPTIONS = ("features", "box_points", "keep_points", "keep_points_bonus", "bonus_shaping")


def eval_seeds(games: int = EVAL_GAMES) -> np.ndarray:
    """The env seeds of the first ``games`` games of the evaluation set (int64)."""
    if isinstance(games, bool) or not isinstance(games, (int, np.integer)) or not 1 <= games <= EVAL_GAMES:
        raise ValueError(f"games must be an integer in 1..{EVAL_GAMES} (the evaluation set's size), got {games!r}")
    return EVAL_SEED_BASE + np.arange(int(games), dtype=np.int64)


def is_shipped(rules: Rules) -> bool:
    """Whether ``rules`` are the shipped ruleset of their name (with their options): a rules file may take a shipped
    name (``name = "yacht"``) and change the play, and then it is a custom ruleset."""
    from dice_poker_env.rules import RULESET_NAMES, load_rules

    if rules.name not in RULESET_NAMES:
        return False
    try:
        return load_rules(rules.name, **rules.options).fingerprint == rules.fingerprint
    except ValueError:  # options the shipped ruleset does not have
        return False


def ruleset_label(rules: Rules) -> str:
    """The ruleset's name in results: a shipped ruleset's name, with the options that differ from its defaults
    (``dice_poker[turns=13]``: another game, whose results are not the default's), or ``custom:NAME@FINGERPRINT``."""
    if not is_shipped(rules):
        return f"custom:{rules.name}@{rules.fingerprint}"
    from dice_poker_env.rules import load_rules

    default = load_rules(rules.name)
    changed = {k: v for k, v in sorted(rules.options.items()) if default.options.get(k) != v}
    if not changed or load_rules(rules.name).fingerprint == rules.fingerprint:
        return rules.name
    return f"{rules.name}[{','.join(f'{k}={v}' for k, v in changed.items())}]"


def eval_set_id(rules: Rules, games: int = EVAL_GAMES) -> str:
    """The evaluation set's name, e.g. ``dice-poker-eval-v1/yahtzee`` (``.../first-500`` for a prefix); a shipped
    ruleset's names its options off their defaults (``dice-poker-eval-v1/dice_poker[turns=13]``), a custom
    ruleset's its fingerprint (``dice-poker-eval-v1/custom:NAME@FINGERPRINT``)."""
    name = f"dice-poker-eval-{EVAL_SET_VERSION}/{ruleset_label(rules)}"
    return name if games == EVAL_GAMES else f"{name}/first-{games}"


def check_training_seed(seed: int) -> None:
    """Refuse a training seed outside ``[0, TRAIN_SEED_LIMIT)`` (the evaluation set's games are above).

    Raises:
        ValueError: one line naming the seed and the range.
    """
    if not 0 <= int(seed) < TRAIN_SEED_LIMIT:
        raise ValueError(
            f"seed must be in [0, 2**32) so training never plays the evaluation set's games "
            f"(env seeds from 2**40, docs/benchmark.md), got {seed}"
        )


def policy_track(metadata: dict[str, Any]) -> str:
    """The track of a trained policy from its metadata: an imitation (``bc``) is on its dataset agent's track
    (the optimal agent's: ``solver``; greedy's or a trained policy's: ``rules``; random's: ``raw``; another or
    unknown agent's: ``solver``, the track that allows anything); else ``rules`` when any of
    :data:`RULES_OPTIONS` is on, else ``raw``. A ``track`` the metadata declares (an algorithm's ``TRACK``:
    one that uses the rules engine or the solver in its update) raises it, never lowers it."""
    if metadata.get("algorithm", metadata.get("algo")) == "bc":
        imitated = {"optimal": "solver", "greedy": "rules", "trained": "rules", "random": "raw"}
        inferred = imitated.get(str(metadata.get("dataset_agent")), "solver")
    else:
        inferred = "rules" if any(metadata.get(name) for name in RULES_OPTIONS) else "raw"
    declared = metadata.get("track")  # an algorithm's own TRACK (agents/training/trainer.py records it)
    if declared is None:
        return inferred
    if declared not in TRACKS:
        raise ValueError(f"the policy's metadata declares the track {declared!r}, not one of {', '.join(TRACKS)}")
    return max(inferred, declared, key=TRACKS.index)  # the more permissive of the two


def _trained_steps(agent: Any) -> int | None:
    """The env steps a policy or model file's agent trained (its metadata's ``timesteps``); ``None`` for an
    agent that does not record them (built-ins, your own classes)."""
    metadata = getattr(agent, "metadata", None)
    steps = metadata.get("timesteps") if isinstance(metadata, dict) else None
    return int(steps) if isinstance(steps, (int, np.integer)) and not isinstance(steps, bool) else None


def agent_track(spec: str, agent: Any) -> str | None:
    """The track an agent declares: the built-in agents' own (optimal and winning: solver, greedy: rules,
    random: raw, policy files from their metadata), else the agent's ``track`` attribute (``None``
    when it declares none).

    Raises:
        ValueError: a declared track that is not one of :data:`TRACKS`.
    """
    builtin = {"optimal": "solver", "greedy": "rules", "random": "raw", "winning": "solver"}  # winning: reach tables
    if spec.split(",", 1)[0] in builtin:  # (winning,target=T)
        return builtin[spec.split(",", 1)[0]]
    metadata = getattr(agent, "metadata", None)
    if (spec == "trained" or spec.startswith("model:")) and isinstance(metadata, dict):
        return policy_track(metadata)
    try:
        track = getattr(agent, "track", None)
    except Exception as error:  # an agent's property
        raise ValueError(f"agent {spec}: reading its track raised {one_line(error)}") from None
    if track is not None and (type(track) is not str or track not in TRACKS):  # (no __eq__ of the agent's runs)
        shown = track if type(track) is str else f"a {type(track).__name__}"
        raise ValueError(f"agent {spec}: track must be one of {', '.join(TRACKS)}, got {shown[:100]!r}")
    return track


#: the folder above the ``agents`` package: a git checkout when the code runs in place or installed editable
CHECKOUT = Path(__file__).resolve().parents[2]


#: the paths of a checkout whose changes change a measurement (results and pages do not: a checkout whose
#: drivers are writing results/ measures with its committed code)
CODE_PATHS = ("agents", "dice_poker_env", "benchmarks", "tools", "configs", "train.py", "pyproject.toml")


def code_commit() -> str | None:
    """The git commit of the code in use (``-dirty`` where its code, :data:`CODE_PATHS`, differs from it) when it
    runs from a git checkout; ``None`` for an installed copy (there ``library_version`` identifies it) or
    without git."""
    if not (CHECKOUT / ".git").exists():  # an installed copy: never a commit of whatever repository is around
        return None

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=CHECKOUT, capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()

    try:
        head = git("rev-parse", "HEAD")
        changed = git("--no-optional-locks", "status", "--porcelain", "--untracked-files=no", "--", *CODE_PATHS)
    except (OSError, subprocess.SubprocessError):
        return None
    return (head + "-dirty" * bool(changed)) or None


def agent_sha256(agent: str, rules: Rules | None = None) -> str | None:
    """The SHA-256 that ties a result to the exact agent played: for ``model:PATH`` the file's bytes; for
    ``FILE.py:NAME[,key=value,...]`` a canonical JSON of the file's digest, the name and each argument (a file an
    argument names, ``weights=w.npz``, by its digest: the seeds of one agent file with their own weights differ;
    another value by its text), so two classes of one file, or two argument lists, never share a digest.
    ``MODULE:NAME`` likewise, by the module's own source file (its package's other files are not covered).
    ``trained`` (with ``rules``) by its shipped policy file's bytes, as ``model:`` that file: a version of the package
    that ships another policy gives another digest. ``None`` for the other built-in agents (their code is the
    library's: ``git_commit`` and the version name it), and for a path that is not a regular file (a FIFO, a device,
    ``/proc``: never read)."""
    if agent.startswith("model:"):
        return _file_sha256(agent[len("model:") :])
    if agent == "trained" and rules is not None:
        from agents.policy.player import SHIPPED_DIR

        return _file_sha256(str(SHIPPED_DIR / f"{rules.name}.npz"))
    spec = parse_agent_spec(agent)
    if spec is None:
        return None
    source = _file_sha256(spec.source) if spec.is_file else _module_sha256(spec.source)
    if source is None:
        return None
    arguments = {
        key: ({"file": _file_sha256(value)} if isinstance(value, str) and _file_sha256(value) else repr(value))
        for key, value in spec.kwargs
    }
    described = json.dumps({"file": source, "name": spec.attr, "arguments": arguments}, sort_keys=True)
    return hashlib.sha256(described.encode()).hexdigest()


def _module_sha256(module: str) -> str | None:
    """The SHA-256 of a module's source file, found on ``sys.path`` as the import finds it, package by package,
    without importing anything (an agent evaluated isolated never runs here: ``importlib.util.find_spec`` would
    run its packages' ``__init__``); ``None`` where it has no source file (or is already imported another way)."""
    from importlib.machinery import PathFinder

    found: Any = None
    locations: list[str] | None = None  # (None: sys.path)
    parts = module.split(".")
    for depth in range(1, len(parts) + 1):
        try:
            found = PathFinder.find_spec(".".join(parts[:depth]), locations)
        except (ImportError, ValueError, OSError):
            return None
        if found is None:
            return None
        locations = list(found.submodule_search_locations or [])
    origin = getattr(found, "origin", None)
    return _file_sha256(origin) if isinstance(origin, str) and origin.endswith(".py") else None


def _file_sha256(path: str) -> str | None:
    """The SHA-256 of a regular, non-empty file outside ``/proc`` and ``/sys``, else ``None`` (nothing read)."""
    try:
        real = os.path.realpath(path)
        info = os.stat(real)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(info.st_mode) or info.st_size == 0 or real.startswith(("/proc/", "/sys/")):
        return None
    digest = hashlib.sha256()
    with open(real, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def versions(rules: Rules) -> dict[str, Any]:
    """What every result records: env id (with its version), observation layout version,
    ruleset fingerprint and library version."""
    import dice_poker_env
    from dice_poker_env.envs.observation import OBSERVATION_LAYOUT_VERSION
    from dice_poker_env.registration import env_id_for

    shipped = is_shipped(rules)  # (loads the shipped ruleset: once)
    env_id, _ = env_id_for(rules.name if shipped else rules)
    if not shipped:
        env_id += f"(rules={rules.name}@{rules.fingerprint})"
    elif rules.options:  # options are keywords of the ruleset's id
        env_id += "(" + ", ".join(f"{k}={v}" for k, v in sorted(rules.options.items())) + ")"
    return {
        "env_id": env_id,
        "observation_layout_version": OBSERVATION_LAYOUT_VERSION,
        "rules_fingerprint": rules.fingerprint,
        "library_version": dice_poker_env.__version__,
    }


def evaluate(
    rules: str | os.PathLike[str] | Rules,
    agent: str,
    *,
    games: int = EVAL_GAMES,
    solution: Any = None,
    track: str | None = None,
    player: Any = None,
) -> dict[str, Any]:
    """Play the evaluation set with ``agent`` (an agent spec of :mod:`agents.players.registry`) and return the
    protocol's metrics.

    Args:
        rules: ruleset name, rules file or :class:`Rules`.
        agent: ``optimal``, ``greedy``, ``random``, ``trained``, ``model:PATH`` or a custom spec.
        games: the first ``games`` games of the set (the protocol reports all 10,000).
        solution: an already solved ``Solution`` of ``rules`` (default: solved or read from the cache).
        track: the track a custom agent is submitted to (checked against what the agent declares).
        player: what plays a custom spec in its place, already loaded: ``dice-poker evaluate --isolated`` gives
            a :class:`~agents.course.sandbox.SandboxedAgent` (the agent's code in an isolated process, the
            games and the regret here); the result's ``isolated`` is its ``isolated``.

    Returns:
        ``{"luck_free_percent", "luck_free_percent_ci95", "regret_mean", "regret_ci95", "mean",
        "mean_ci95", "median", "upper_bonus_rate", "games", "eval_set", "track", "agent_sha256", "git_commit",
        "isolated", "failed_games", "solver_imports", "hardware", ...}``; the ``_ci95`` fields are half-widths
        of 95% normal intervals over the games; ``agent_sha256`` is the agent file's (:func:`agent_sha256`),
        ``git_commit`` the evaluating code's (:func:`code_commit`).

    Raises:
        ValueError: a bad agent spec, track or game count; no exact solution of the ruleset.
    """
    rules = load_rules(rules)
    seeds = eval_seeds(games)
    if track is not None and track not in TRACKS:
        raise ValueError(f"track must be one of {', '.join(TRACKS)}, got {track!r}")
    check_agent(agent, load=player is None)  # (a player given: the agent's code runs there only, never here)
    sha256 = agent_sha256(agent, rules)  # of the bytes about to be loaded
    if solution is None:
        solution = load_solution(rules)
    if solution is None:
        raise ValueError(f"the protocol's metric needs the exact solution of {rules.name!r}, which is not available")
    if player is None:
        player, isolated = _build(agent, rules, solution), False
    elif parse_agent_spec(agent) is None:
        raise ValueError(f"player: plays a custom agent spec (FILE.py:NAME or MODULE:NAME) in its place, not {agent!r}")
    else:
        isolated = bool(getattr(player, "isolated", False))
    declared = agent_track(agent, player)
    if track is not None and declared is not None and TRACKS.index(track) < TRACKS.index(declared):
        raise ValueError(  # a track admits the agents of the stricter ones before it (raw, rules, solver)
            f"agent {agent} belongs to the {declared} track, not {track} (it may enter a more permissive one)"
        )
    inner = getattr(player, "agent", None)  # a custom spec's wrapper around one of the project's batch agents
    if is_batch_agent(inner):  # (exact types only): all games in lockstep, the same results, far faster
        player = inner
    part = play_games(rules, player, seeds.tolist(), solution)
    optimal = float(solution.expected_score)
    row = summarize(rules, part, optimal, 0.0, top=0)
    regret = (
        np.asarray(part.regret_keep)
        + np.asarray(part.regret_box)
        + np.asarray(part.regret_illegal)
        + np.asarray(part.regret_failure)
    )
    regret_mean = float(regret.mean())
    regret_ci = Z95 * float(regret.std(ddof=1)) / np.sqrt(len(regret)) if len(regret) > 1 else 0.0
    return {
        "agent": agent,
        "agent_sha256": sha256,
        "track": track if track is not None else declared,
        "rules": rules.name,
        "rules_options": dict(rules.options),
        "eval_set": eval_set_id(rules, games),
        "games": int(games),
        "optimal_expected_score": optimal,
        "luck_free_percent": 100.0 * (1.0 - regret_mean / optimal),
        "luck_free_percent_ci95": float(100.0 * regret_ci / optimal),
        "regret_mean": regret_mean,
        "regret_ci95": float(regret_ci),
        "regret_keep_mean": row["regret_keep_mean"],
        "regret_box_mean": row["regret_box_mean"],
        "mean": row["mean"],
        "mean_ci95": row["ci95"],
        "median": row["median"],
        "std": row["std"],
        "upper_bonus_rate": row["upper_bonus_rate"],
        "five_of_a_kind_rate": row["five_of_a_kind_rate"],
        "illegal_actions": row["illegal_actions"],
        "failed_games": row["failed_games"],  # games an isolated agent's failure ended, by kind (it raised, hung...)
        "isolated": isolated,
        # isolated: the library's solver and agent modules the agent imported (its process's import watch)
        "solver_imports": sorted(getattr(player, "solver_imports", [])) if isolated else None,
        "timesteps": _trained_steps(player),
        **versions(rules),
        "git_commit": code_commit(),
        "hardware": machine_description(),  # a float policy's actions can differ between CPU models
    }
