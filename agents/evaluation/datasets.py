"""Offline-RL and imitation datasets in Minari format, with the solver's value of every action.

:func:`write_dataset` plays ``episodes`` seeded games with an agent and writes
them as a `Minari <https://minari.farama.org>`_ dataset that
``minari.load_dataset(dataset_id)`` reads like any other (default id
``dice_poker/<ruleset>/<agent>-v0``, under ``MINARI_DATASETS_PATH``, default
``~/.minari/datasets``). Layout of one episode of ``T`` steps (see
``docs/datasets.md``):

* ``observations``: ``T + 1`` observations (the last one after the final step),
  the env's flat layout (``obs_mode="flat"``, default) or its dict layout;
* ``actions`` (``T``, int64), ``rewards`` (``T``, float64: the env's rewards, so
  they sum to the final score), ``terminations`` (True at the last step),
  ``truncations`` (all False);
* ``infos["action_mask"]`` (``T + 1``, ``32 + n_boxes`` int8): the legal actions
  of each observation (all zeros after the last step);
* with ``with_values``, ``infos["action_values"]`` (``T + 1``, ``32 + n_boxes``
  float32): the solver's expected final score of every action at each
  observation, ``-inf`` for illegal ones (every one after the last step). The
  regret of the action taken at step ``t`` is
  ``values[t].max() - values[t, actions[t]]`` (:func:`episode_regret`).

Each episode's ``seed`` (Minari's episode metadata) replays it:
``env = dataset.recover_environment()`` (this library's env, same rules, options
and observation layout), ``env.reset(seed=seed)``, then the stored actions give
the stored observations and rewards. Episode ``i`` gets the ``i``-th word of
``numpy.random.SeedSequence(seed)`` (:func:`agents.evaluation.benchmark.game_seeds`, the
benchmark's games). The dataset's metadata holds, under ``"dice_poker"``, the
ruleset (name, options, fingerprint), the agent, the seed, the library version
and the optimal expected score (also Minari's ``ref_max_score``; ``ref_min_score``
is the random agent's mean score, :func:`random_play_score`, so
``minari.get_normalized_score`` is 0 for random play and 1 for optimal play).

Writing is batched: a block of games is played at once on the engine the vector
env runs (the same functions, the same observations), one array operation per
step for the whole block, with the optimal agent's batched fast path and the
solver's batched action values; each game draws its dice from its own seeded
stream exactly as the single env does, which is what makes every episode
replayable alone. Agents with ``act_batch`` (optimal, greedy, random, the NumPy
policies of ``trained`` and ``model:PATH.npz``) play a whole block per call; an
SB3 ``model:PATH.zip`` plays one game at a time (a Python loop over the live
games of each step). Episodes are stored through h5py's low-level API in the
layout of Minari's HDF5 storage (one group per episode, as Minari writes it),
each array compressed with HDF5's standard deflate filter (any HDF5 reader,
Minari's included, decompresses it; the dtypes and values are the ones above):
100,000 optimal yahtzee games with values take about 0.53 GB (2.67 GB
uncompressed).

``AGENT:eps=E`` mixes in exploration: at each decision, with probability ``E``, a
uniformly random legal action instead of the agent's (e.g. ``optimal:eps=0.2``),
since offline RL needs imperfect data too.

Layering: the core package never imports this module; Minari and h5py (the
``datasets`` extra) are imported only when a dataset is written or read.

Size: one file format: the writer (play blocks, the Minari episode writer, the atomic
replace) and the readers (dataset_info, load_transitions) share the layout above.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import math
import os
import re
import secrets
import shutil
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

try:  # the lock that tells a live writer's temporary folder from a dead one's (POSIX)
    import fcntl
except ImportError:  # pragma: no cover - Windows: temporary folders are kept, not guessed at
    fcntl = None  # type: ignore[assignment]

from agents.evaluation.benchmark import game_seeds
from agents.evaluation.limits import MAX_EPISODES, check_count
from agents.players.registry import AGENT_NAMES
from dice_poker_env.dice_sources import RandomDice
from dice_poker_env.engine import game
from dice_poker_env.engine.combinatorics import N_DICE, N_KEEP_ACTIONS, REROLLED_POSITIONS, roll_index_of_faces
from dice_poker_env.engine.masks import action_masks
from dice_poker_env.engine.state import BatchState
from dice_poker_env.engine.tables import compile_rules
from dice_poker_env.envs.observation import observation_space, observe_dict_batch, observe_flat_batch
from dice_poker_env.files import cannot_write
from dice_poker_env.rules import RULESET_NAMES, Rules, load_rules
from dice_poker_env.solver.cache import lock_state

if TYPE_CHECKING:
    from gymnasium import spaces
    from gymnasium.envs.registration import EnvSpec

    from dice_poker_env.engine.tables import RuleTables
    from dice_poker_env.solver import Solution

#: the namespace of the default dataset ids: ``dice_poker/<ruleset>/<agent>-v0``
NAMESPACE = "dice_poker"
#: version of this module's layout, recorded in the metadata (``dice_poker.format``): 1 uncompressed,
#: 2 the same fields and dtypes, each dataset one deflated chunk in the HDF5 1.10 format (:class:`_EpisodeWriter`),
#: 3 the same file, the random agent's and the exploration's draws per game (:func:`decision_draws`; format 2
#: drew them from one generator, so ``--block`` changed them)
DATASET_FORMAT = 3
#: games played at once (memory: about 50 KB a game for yahtzee with values)
BLOCK = 8192
#: the registered env id of each shipped ruleset (recover_environment makes it)
_ENV_ID = {
    "yacht": "DicePoker/Yacht-v0",
    "dice_poker": "DicePoker/DicePoker-v0",
    "school_poker": "DicePoker/SchoolPoker-v0",
    "yahtzee": "DicePoker/Yahtzee-v0",
    "yatzy": "DicePoker/Yatzy-v0",
}
_CUSTOM_ENV_ID = "DicePoker/Custom-v0"
#: per keep bitmask and die position: which of the step's new faces the die takes
#: (the k-th rerolled position takes the k-th face, as the single env rolls them)
_FACE_RANK = np.zeros((N_KEEP_ACTIONS, N_DICE), dtype=np.int64)
for _bits, _positions in enumerate(REROLLED_POSITIONS):
    _FACE_RANK[_bits, list(_positions)] = np.arange(len(_positions))
_N_REROLLED = np.array([len(p) for p in REROLLED_POSITIONS], dtype=np.int64)


class DatasetError(ValueError):
    """A dataset cannot be written or read as asked (the message says why)."""


# ----------------------------------------------------------------------- agents
@dataclasses.dataclass(frozen=True)
class DatasetAgentSpec:
    """An agent of a dataset: a base agent, with a probability of a random legal action instead (the spec syntax
    ``NAME[:eps=E]`` of ``dice-poker dataset --agent``; not :class:`agents.registry.AgentSpec`, the benchmark's
    agent names and files)."""

    text: str  #: as given, e.g. ``optimal:eps=0.2``
    base: str  #: ``optimal``, ``greedy``, ``random``, ``trained`` or ``model:PATH``
    eps: float = 0.0  #: probability of a uniformly random legal action at each decision

    @property
    def slug(self) -> str:
        """The agent's part of a default dataset id (letters, digits, ``-`` and ``_`` only)."""
        base = self.base
        if base.startswith("model:"):
            base = "model-" + Path(base[len("model:") :]).stem
        text = base if not self.eps else f"{base}-eps{self.eps:g}"
        return re.sub(r"[^A-Za-z0-9_-]+", "_", text.replace(".", "_"))


#: the built-in agents a dataset plays (one player's games: not ``winning``, which plays to finish first)
DATASET_AGENTS = tuple(name for name in AGENT_NAMES if name != "winning")


def parse_agent(text: str) -> DatasetAgentSpec:
    """``optimal``, ``greedy``, ``random``, ``trained``, ``model:PATH``, each optionally ``:eps=E``.

    Raises:
        DatasetError: an unknown agent, or ``eps`` not a number in [0, 1].
    """
    base, eps = str(text), 0.0
    match = re.fullmatch(r"(.+):eps=(.*)", base)
    if match:
        base = match.group(1)
        try:
            eps = float(match.group(2))
        except ValueError:
            eps = math.nan
        if not 0.0 <= eps <= 1.0:
            raise DatasetError(f"agent {text!r}: eps must be a number in [0, 1], got {match.group(2)!r}")
    if base == "winning":
        raise DatasetError(
            f"agent {text!r}: the winning agent plays to finish first at a table of players; a dataset's games are "
            "one player's (use optimal for the best score)"
        )
    if base not in DATASET_AGENTS and not (base.startswith("model:") and len(base) > len("model:")):
        raise DatasetError(
            f"unknown agent {text!r}: use one of {', '.join(DATASET_AGENTS)} or model:PATH, "
            "optionally with :eps=E (e.g. optimal:eps=0.2)"
        )
    return DatasetAgentSpec(str(text), base, eps)


def default_dataset_id(rules: Rules, agent: DatasetAgentSpec | str, obs_mode: str = "flat") -> str:
    """``dice_poker/<ruleset>/<agent>-v0``: the ruleset's name, with the options that differ from its defaults
    (``dice_poker/yahtzee-joker_free/optimal-v0``) or, for a rules file that takes a shipped ruleset's name, its
    fingerprint: another game never takes the default game's id. An ``obs_mode`` other than ``"flat"`` (the
    default) follows the agent (``dice_poker/yacht/optimal-dict-v0``): the two layouts never share an id."""
    from agents.evaluation.protocol import is_shipped

    agent = parse_agent(agent) if isinstance(agent, str) else agent
    if is_shipped(rules):
        defaults = load_rules(rules.name).options
        changed = "".join(f"-{k}_{v}" for k, v in sorted(rules.options.items()) if defaults.get(k) != v)
    else:  # a rules file: its fingerprint, unless its name is its own (a file named yacht is not yacht)
        from dice_poker_env.rules import RULESET_NAMES

        changed = f"-{rules.fingerprint[:12]}" if rules.name in RULESET_NAMES else ""
    ruleset = re.sub(r"[^A-Za-z0-9_-]+", "_", rules.name + changed)
    layout = "" if obs_mode == "flat" else "-" + re.sub(r"[^A-Za-z0-9_-]+", "_", obs_mode)
    return f"{NAMESPACE}/{ruleset}/{agent.slug}{layout}-v0"


#: a policy over a block of live games: (state, observations by layout, masks, draws) -> actions; ``draws``
#: are each live game's two uniforms of this decision (:func:`decision_draws`)
Policy = Callable[[BatchState, Callable[[str], Any], np.ndarray, np.ndarray], np.ndarray]

_SPLITMIX = tuple(np.uint64(c) for c in (0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB))


def _splitmix(z: np.ndarray) -> np.ndarray:
    """SplitMix64's output function of each uint64 (a bijection that scatters neighbouring inputs)."""
    golden, mix1, mix2 = _SPLITMIX
    z = z + golden
    z = (z ^ (z >> np.uint64(30))) * mix1
    z = (z ^ (z >> np.uint64(27))) * mix2
    return z ^ (z >> np.uint64(31))


def decision_draws(game_seeds: np.ndarray, step: int) -> np.ndarray:
    """``(G, 2)`` uniforms in [0, 1) for decision ``step`` of the games of ``game_seeds`` (their env seeds): a
    hash of (seed, step, k). A game's draws depend on its seed and the decision alone, not on the games that
    share its block, so ``--block`` and ``--episodes`` change no action of the random agent or the exploration."""
    game = _splitmix(np.asarray(game_seeds).astype(np.uint64))
    out = np.empty((len(game), 2))
    for k in range(2):
        z = _splitmix(game ^ np.uint64(2 * step + k))
        out[:, k] = (z >> np.uint64(11)).astype(np.float64) * 2.0**-53
    return out


def random_legal(masks: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """The legal action of each row that a uniform draw in [0, 1) picks (the ``k``-th legal one, ``k`` the draw
    times the number of legal actions, rounded down)."""
    legal = masks.astype(bool)
    k = np.minimum((draws * legal.sum(axis=1)).astype(np.int64), legal.sum(axis=1) - 1)
    return np.argmax(np.cumsum(legal, axis=1) > k[:, None], axis=1).astype(np.int64)


def make_policy(spec: DatasetAgentSpec, rules: Rules, solution: Any) -> Policy:
    """The batched policy of ``spec`` (see the module docstring for which agents are batched).

    The policy is called with the engine state of the live games, a function
    giving their observations in a layout (``"dict"`` or ``"flat"``, computed once
    per step), their masks and their draws (:func:`decision_draws`: the random agent's and the exploration's
    only randomness), and returns their actions.
    """
    from agents.players.registry import make_agent

    base: Callable[[BatchState, Callable[[str], Any], np.ndarray], np.ndarray]
    if spec.base == "optimal":
        from agents.players.optimal import OptimalAgent

        agent = OptimalAgent(solution)
        tables = compile_rules(rules)

        def base(state: BatchState, observe: Callable[[str], Any], masks: np.ndarray) -> np.ndarray:
            full = game.five_kind_box_full(tables, state.filled, state.scores)
            return agent.act_situation(
                state.filled, state.upper_total, full, state.roll, state.rolls_left, action_masks=masks
            )
    elif spec.base == "random":
        return lambda state, observe, masks, draws: random_legal(masks, draws[:, 1])  # noqa: E731
    else:
        agent = make_agent(spec.base, rules)
        players = getattr(agent, "players", 1)
        if isinstance(players, int) and players > 1:
            raise ValueError(f"it was trained at a {players}-player table; a dataset's games are one player's")
        mode = getattr(agent, "obs_mode", "dict")
        if hasattr(agent, "act_batch"):
            base = lambda state, observe, masks: np.asarray(agent.act_batch(observe(mode), masks), dtype=np.int64)  # noqa: E731
        else:  # one game at a time (SB3 models)

            def base(state: BatchState, observe: Callable[[str], Any], masks: np.ndarray) -> np.ndarray:
                obs = observe(mode)
                one = (lambda i: {k: v[i] for k, v in obs.items()}) if isinstance(obs, Mapping) else (lambda i: obs[i])
                return np.array([agent.act(one(i), masks[i]) for i in range(len(masks))], dtype=np.int64)

    def mixed(state: BatchState, observe: Callable[[str], Any], masks: np.ndarray, draws: np.ndarray) -> np.ndarray:
        actions = base(state, observe, masks)
        chosen = draws[:, 0] < spec.eps
        if chosen.any():
            actions[chosen] = random_legal(masks[chosen], draws[chosen, 1])
        return actions

    return mixed


# ------------------------------------------------------------------- generation
class _Observer:
    """The live games' observations in a layout, each computed at most once a step."""

    def __init__(self, tables: RuleTables, state: BatchState, mode: str, observation: Any) -> None:
        self.tables, self.state, self.cache = tables, state, {mode: observation}

    def __call__(self, mode: str) -> Any:
        if mode not in self.cache:
            self.cache[mode] = (observe_flat_batch if mode == "flat" else observe_dict_batch)(self.tables, self.state)
        return self.cache[mode]


@dataclasses.dataclass
class EpisodeBlock:
    """Finished episodes of one block, padded to the longest (``E`` episodes, ``L`` = longest + 1 rows).

    Episode ``e`` has ``lengths[e]`` steps: rows ``0..lengths[e]`` of
    ``observations``, ``action_mask`` and ``action_values``, rows
    ``0..lengths[e] - 1`` of ``actions`` and ``rewards``.
    """

    seeds: np.ndarray  #: (E,) each episode's env seed
    lengths: np.ndarray  #: (E,) steps
    scores: np.ndarray  #: (E,) final scores
    observations: np.ndarray | dict[str, np.ndarray]  #: (E, L, ...) float32 flat, or a dict of int64 arrays
    actions: np.ndarray  #: (E, L - 1) int64
    rewards: np.ndarray  #: (E, L - 1) float64
    action_mask: np.ndarray  #: (E, L, n_actions) int8
    action_values: np.ndarray | None  #: (E, L, n_actions) float32, or None without values

    def __len__(self) -> int:
        return len(self.seeds)

    def episode(self, e: int) -> dict[str, Any]:
        """Episode ``e`` as Minari's episode fields (views, no copies)."""
        t = int(self.lengths[e])
        obs = self.observations
        infos = {"action_mask": self.action_mask[e, : t + 1]}
        if self.action_values is not None:
            infos["action_values"] = self.action_values[e, : t + 1]
        return {
            "seed": int(self.seeds[e]),
            "observations": {k: v[e, : t + 1] for k, v in obs.items()} if isinstance(obs, dict) else obs[e, : t + 1],
            "actions": self.actions[e, :t],
            "rewards": self.rewards[e, :t],
            "terminations": np.arange(t) == t - 1,
            "truncations": np.zeros(t, dtype=bool),
            "infos": infos,
        }


def episode_faces(seeds: np.ndarray, n_faces: int) -> np.ndarray:
    """``(E, n_faces)`` int8: the faces each game's dice show, in order, after ``env.reset(seed=seed)``.

    The single env's default dice (:class:`~dice_poker_env.dice.RandomDice`)
    draw a block of ``RandomDice.BLOCK`` faces from the generator that
    ``reset(seed=...)`` creates and hand them out in order: five for a new roll,
    one per rerolled die. One generator per game (a loop over games, not steps).
    """
    from gymnasium.utils import seeding

    if n_faces > RandomDice.BLOCK:
        raise DatasetError(
            f"a game of these rules may roll {n_faces} faces, more than the "
            f"{RandomDice.BLOCK} the env draws at a time: not supported"
        )
    out = np.empty((len(seeds), n_faces), dtype=np.int8)
    for i, seed in enumerate(np.asarray(seeds).tolist()):
        out[i] = seeding.np_random(int(seed))[0].integers(1, 7, size=RandomDice.BLOCK)[:n_faces]
    return out


def play_block(
    rules: Rules, policy: Policy, seeds: np.ndarray, *, obs_mode: str = "flat", solution: Any = None
) -> EpisodeBlock:
    """Play one game per seed with ``policy``, all at once on the engine; record every step.

    With a ``solution``, every observation's action values are recorded too.
    Games run in step: at step ``t`` every live game is at its own step ``t``;
    finished games are dropped from the batch, so a step costs what its live
    games cost.
    """
    tables = compile_rules(rules)
    size = len(seeds)
    turns = int(tables.turns)
    max_steps = turns * game.ROLLS_PER_TURN  # two keeps and a score per turn at most
    faces = episode_faces(seeds, N_DICE * max_steps)  # five for the first roll, at most five a step, none at the last
    n_actions = int(tables.n_actions)
    rows = max_steps + 1
    if obs_mode == "flat":
        obs_buf: Any = np.zeros(
            (size, rows, observe_flat_batch(tables, game.new_batch(tables, np.zeros(1, np.int64))).shape[1]),
            dtype=np.float32,
        )
    else:
        first = observe_dict_batch(tables, game.new_batch(tables, np.zeros(1, np.int64)))
        obs_buf = {k: np.zeros((size, rows, *v.shape[1:]), dtype=v.dtype) for k, v in first.items()}
    mask_buf = np.zeros((size, rows, n_actions), dtype=np.int8)
    values_buf = np.full((size, rows, n_actions), -np.inf, dtype=np.float32) if solution is not None else None
    actions_buf = np.zeros((size, max_steps), dtype=np.int64)
    rewards_buf = np.zeros((size, max_steps), dtype=np.float64)
    lengths = np.zeros(size, dtype=np.int64)
    scores = np.zeros(size, dtype=np.int64)

    live = np.arange(size)
    game_seeds_of_block = np.asarray(seeds, dtype=np.uint64)
    state = game.new_batch(tables, roll_index_of_faces(faces[:, :N_DICE]).astype(np.int64))
    used = np.full(size, N_DICE, dtype=np.int64)  # faces each game has rolled
    over = np.zeros(size, dtype=bool)
    for t in range(rows):
        obs = observe_flat_batch(tables, state) if obs_mode == "flat" else observe_dict_batch(tables, state)
        if isinstance(obs_buf, dict):
            assert isinstance(obs, dict)  # obs_mode "dict"
            for key, value in obs.items():
                obs_buf[key][live, t] = value
        else:
            obs_buf[live, t] = obs
        masks = action_masks(tables).of_batch(state)
        mask_buf[live, t] = masks
        if over.any():  # games that ended at the last step: their final observation is in; drop them
            ended, going = live[over], ~over
            lengths[ended], scores[ended] = t, state.total[over]
            live, used, masks = live[going], used[going], masks[going]
            state = state.take(going)
            obs = {k: v[going] for k, v in obs.items()} if isinstance(obs, dict) else obs[going]
        if not len(live):
            break
        observe = _Observer(tables, state, obs_mode, obs)
        if values_buf is not None:
            full = game.five_kind_box_full(tables, state.filled, state.scores)
            q = solution.future_action_values(state.filled, state.upper_total, full, state.roll, state.rolls_left)
            values_buf[live, t] = q + state.total[:, None]
        actions = policy(state, observe, masks, decision_draws(game_seeds_of_block[live], t))
        actions_buf[live, t] = actions
        keep = actions < N_KEEP_ACTIONS
        bits = np.where(keep, actions, 0)
        at = used[:, None] + np.where(keep[:, None], _FACE_RANK[bits], np.arange(N_DICE))
        new_faces = faces[live[:, None], np.minimum(at, faces.shape[1] - 1)]
        state, reward, over = game.step_batch(tables, state, actions, new_faces)
        rewards_buf[live, t] = reward
        used = used + np.where(keep, _N_REROLLED[bits], np.where(over, 0, N_DICE))
    longest = int(lengths.max()) if size else 0
    obs_out = (
        {k: v[:, : longest + 1] for k, v in obs_buf.items()} if isinstance(obs_buf, dict) else obs_buf[:, : longest + 1]
    )
    return EpisodeBlock(
        seeds=np.asarray(seeds, dtype=np.int64),
        lengths=lengths,
        scores=scores,
        observations=obs_out,
        actions=actions_buf[:, :longest],
        rewards=rewards_buf[:, :longest],
        action_mask=mask_buf[:, : longest + 1],
        action_values=None if values_buf is None else values_buf[:, : longest + 1],
    )


# ---------------------------------------------------------------------- storage
#: deflate level of each compressed field (zlib's 1-9): 5 is within 1-4% of 9's size at a tenth of its time
COMPRESSION_LEVEL = 5


def _shuffled(dtype: np.dtype) -> bool:
    """Whether a field's bytes go through HDF5's shuffle filter before deflate: integers wider than a byte (the
    int64 actions and dict observations, mostly zero bytes; floats deflate better unshuffled: their repeated
    values are repeated 4-byte strings)."""
    return dtype.kind in "iu" and dtype.itemsize > 1


def _shuffle(data: np.ndarray) -> bytes:
    """The bytes of ``data`` as HDF5's shuffle filter orders them (byte 0 of every element, then byte 1, ...)."""
    return data.view(np.uint8).reshape(-1, data.itemsize).T.tobytes()


def _compress(episodes: list[list[np.ndarray]], level: int) -> list[list[bytes]]:
    """Each field of each episode as one deflated chunk (shuffled first where :func:`_shuffled` says), the bytes
    HDF5's filters would write."""
    import zlib

    return [
        [zlib.compress(_shuffle(data) if _shuffled(data.dtype) else data.tobytes(), level) for data in fields]
        for fields in episodes
    ]


@functools.lru_cache(maxsize=1)
def _no_attrs_hint() -> Callable[[int], bool] | None:
    """``H5Pset_dset_no_attrs_hint`` of the HDF5 library h5py runs on (h5py does not wrap it), or None.

    The hint (HDF5 1.10.5+) makes a dataset's object header as small as its
    messages instead of reserving about 140 bytes for attributes this writer
    never adds: 1 KB an episode of its 7 datasets. The library is the one
    loaded in this process (Linux: ``/proc/self/maps``; elsewhere the copy
    inside h5py's wheel), so the ids h5py hands out are its own; anything
    unexpected gives None and the datasets are written without the hint
    (files about 27% larger, read the same).
    """
    import ctypes

    import h5py

    if h5py.version.hdf5_version_tuple < (1, 10, 5):
        return None
    candidates: list[str] = []
    try:
        with open("/proc/self/maps") as maps:
            candidates = sorted({line.split()[-1] for line in maps if re.search(r"/libhdf5[-.]", line)})
    except OSError:
        folder = Path(h5py.__file__).parent
        candidates = [str(p) for p in (*folder.glob(".dylibs/libhdf5.*dylib"), *folder.glob("hdf5.dll"))]
    if len(candidates) != 1:
        return None
    try:
        library = ctypes.CDLL(candidates[0])
        setter, getter = library.H5Pset_dset_no_attrs_hint, library.H5Pget_dset_no_attrs_hint
    except (OSError, AttributeError):
        return None
    setter.argtypes, setter.restype = [ctypes.c_int64, ctypes.c_bool], ctypes.c_int
    getter.argtypes, getter.restype = [ctypes.c_int64, ctypes.POINTER(ctypes.c_bool)], ctypes.c_int

    def hint(plist_id: int) -> bool:
        flag = ctypes.c_bool(False)
        return setter(plist_id, True) >= 0 and getter(plist_id, ctypes.byref(flag)) >= 0 and flag.value

    probe = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    return hint if hint(probe.id) else None


class _EpisodeWriter:
    """Appends episodes to a Minari HDF5 data file, in the layout of Minari's ``HDF5Storage``.

    One group ``episode_<id>`` per episode with the attributes ``id``, ``seed``
    and ``total_steps``, the datasets ``observations`` (a group of one dataset per
    key for dict observations), ``actions``, ``rewards``, ``terminations``,
    ``truncations`` and the group ``infos``: what Minari's own writer stores,
    through h5py's low-level calls (Minari's writer spends several milliseconds
    an episode in h5py's high-level layer; this one about a tenth of that).

    Storage (the same arrays, dtypes and shapes; any HDF5 reader decompresses
    them): every dataset is one chunk compressed with HDF5's standard deflate
    filter (gzip, :data:`COMPRESSION_LEVEL`; the int64 actions shuffled first),
    in the HDF5 1.10 file format (``libver=("v110", "v110")``: one-chunk
    datasets need no chunk index, groups keep their links in their header,
    readable by HDF5 1.10 and later, i.e. every h5py wheel since 2.9), without
    modification times and with minimal dataset headers (:func:`_no_attrs_hint`).
    A block's chunks are compressed on a thread pool (zlib releases the GIL)
    and written as they are (``write_direct_chunk``). ``compress=False``
    writes contiguous, uncompressed datasets (the file format before this one,
    kept for comparison); ``minimal_headers=False`` leaves the header hint out
    (what happens where the HDF5 library cannot be reached).
    """

    def __init__(
        self,
        path: Path,
        *,
        compress: bool = True,
        level: int = COMPRESSION_LEVEL,
        workers: int = 2,
        minimal_headers: bool = True,
    ) -> None:
        import h5py

        self.h5py = h5py
        self.compress, self.level, self.workers = compress, int(level), max(1, int(workers))
        libver = {"libver": ("v110", "v110")} if compress else {}
        if os.path.exists(path) and os.path.getsize(path) > 0:
            self.file = h5py.File(path, "a", track_order=True, **libver)  # track_order as Minari opens it
        else:  # (Minari leaves an empty file): made here, without the root group's modification times
            fcpl = h5py.h5p.create(h5py.h5p.FILE_CREATE)
            order = h5py.h5p.CRT_ORDER_TRACKED | h5py.h5p.CRT_ORDER_INDEXED  # track_order=True
            fcpl.set_link_creation_order(order)
            fcpl.set_attr_creation_order(order)
            fcpl.set_obj_track_times(False)
            fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
            fapl.set_fclose_degree(h5py.h5f.CLOSE_STRONG)
            if compress:
                fapl.set_libver_bounds(h5py.h5f.LIBVER_V110, h5py.h5f.LIBVER_V110)
            self.file = h5py.File(h5py.h5f.create(os.fsencode(path), h5py.h5f.ACC_TRUNC, fcpl=fcpl, fapl=fapl))
        self.count = len(self.file.keys())
        self.steps = 0
        self._types: dict[Any, Any] = {}
        self._plists: dict[Any, Any] = {}
        self._scalar = h5py.h5s.create(h5py.h5s.SCALAR)
        self._hint = _no_attrs_hint() if compress and minimal_headers else None
        self._gcpl = None
        if compress:
            self._gcpl = h5py.h5p.create(h5py.h5p.GROUP_CREATE)
            self._gcpl.set_obj_track_times(False)

    def _type(self, dtype: np.dtype) -> Any:
        if dtype not in self._types:
            self._types[dtype] = self.h5py.h5t.py_create(dtype, logical=True)  # bool: h5py's enum, as Minari's
        return self._types[dtype]

    def _plist(self, dtype: np.dtype, shape: tuple[int, ...]) -> Any:
        """The creation property list of a compressed dataset of ``dtype`` and ``shape`` (one chunk)."""
        key = (_shuffled(dtype), shape)
        if key not in self._plists:
            h5py = self.h5py
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            dcpl.set_obj_track_times(False)
            if self._hint is not None:
                self._hint(dcpl.id)
            if all(shape):
                dcpl.set_chunk(shape)
                if _shuffled(dtype):
                    dcpl.set_shuffle()
                dcpl.set_deflate(self.level)
            self._plists[key] = dcpl
        return self._plists[key]

    def _dataset(self, group: Any, name: str, data: np.ndarray, chunk: bytes | None = None) -> None:
        h5py = self.h5py
        space = h5py.h5s.create_simple(data.shape)
        if self.compress:
            dataset = h5py.h5d.create(
                group, name.encode(), self._type(data.dtype), space, dcpl=self._plist(data.dtype, data.shape)
            )
            if data.size:
                dataset.write_direct_chunk((0,) * data.ndim, chunk)
        else:
            dataset = h5py.h5d.create(group, name.encode(), self._type(data.dtype), space)
            if data.size:
                dataset.write(h5py.h5s.ALL, h5py.h5s.ALL, data)

    def _attribute(self, group: Any, name: str, value: int) -> None:
        attribute = self.h5py.h5a.create(group, name.encode(), self._type(np.dtype(np.int64)), self._scalar)
        attribute.write(np.array(value, dtype=np.int64))

    def _group(self, parent: Any, name: str) -> Any:
        if self._gcpl is None:
            return self.h5py.h5g.create(parent, name.encode())
        return self.h5py.h5g.create(parent, name.encode(), gcpl=self._gcpl)

    @staticmethod
    def _fields(episode: Mapping[str, Any]) -> list[tuple[str, np.ndarray]]:
        """The episode's datasets in the order they are written: (path in the episode group, array)."""
        observations = episode["observations"]
        if isinstance(observations, Mapping):
            fields = [(f"observations/{k}", v) for k, v in observations.items()]
        else:
            fields = [("observations", observations)]
        fields += [(key, episode[key]) for key in ("actions", "rewards", "terminations", "truncations")]
        fields += [(f"infos/{k}", v) for k, v in episode["infos"].items()]
        return [(name, np.ascontiguousarray(data)) for name, data in fields]

    def write(self, episode: Mapping[str, Any]) -> None:
        """Append one episode (the fields of :meth:`EpisodeBlock.episode`)."""
        self.write_many([episode])

    def write_many(self, episodes: Sequence[Mapping[str, Any]]) -> None:
        """Append episodes in order (their chunks compressed on :attr:`workers` threads first)."""
        fields = [self._fields(episode) for episode in episodes]
        chunks: list[list[bytes] | None] = [None] * len(episodes)
        if self.compress:
            jobs = [[data for name, data in episode_fields if data.size] for episode_fields in fields]
            parts = [jobs[i : i + 64] for i in range(0, len(jobs), 64)]
            if self.workers > 1 and len(parts) > 1:
                from concurrent.futures import ThreadPoolExecutor

                with ThreadPoolExecutor(self.workers) as pool:
                    done = list(pool.map(functools.partial(_compress, level=self.level), parts))
            else:
                done = [_compress(part, self.level) for part in parts]
            compressed = iter([chunk for part in done for episode_chunks in part for chunk in episode_chunks])
            chunks = [[next(compressed) if data.size else b"" for name, data in f] for f in fields]
        for episode, episode_fields, episode_chunks in zip(episodes, fields, chunks):
            group = self._group(self.file.id, f"episode_{self.count}")
            steps = len(episode["rewards"])
            self._attribute(group, "id", self.count)
            self._attribute(group, "seed", int(episode["seed"]))
            self._attribute(group, "total_steps", steps)
            subgroups: dict[str, Any] = {}
            for i, (name, data) in enumerate(episode_fields):
                parent = group
                if "/" in name:
                    folder, name = name.split("/", 1)
                    if folder not in subgroups:
                        subgroups[folder] = self._group(group, folder)
                    parent = subgroups[folder]
                self._dataset(parent, name, data, None if episode_chunks is None else episode_chunks[i])
            if "infos" not in subgroups:
                self._group(group, "infos")
            self.count += 1
            self.steps += steps

    def close(self) -> None:
        self.file.close()


def _env_spec(rules: Rules, obs_mode: str) -> EnvSpec | None:
    """The env spec ``recover_environment`` makes: this library's env, these rules, options and layout.

    A shipped ruleset is recovered by name; a rules file by its absolute path
    (recoverable while the file is there; the fingerprint in the metadata says
    whether it still holds the same rules). Rules given as a mapping have no spec.
    """
    import gymnasium as gym

    import dice_poker_env  # noqa: F401  (registers the DicePoker/* ids)

    if rules.name in RULESET_NAMES and load_rules(rules.name, **rules.options).fingerprint == rules.fingerprint:
        env_id, source = _ENV_ID[rules.name], rules.name
    elif rules.source not in ("<mapping>", "") and Path(rules.source).is_file():
        env_id, source = _CUSTOM_ENV_ID, str(Path(rules.source).resolve())
    else:
        return None
    spec = gym.spec(env_id)
    return dataclasses.replace(spec, kwargs={**spec.kwargs, "rules": source, "obs_mode": obs_mode, **rules.options})


def dataset_path(dataset_id: str) -> Path:
    """The folder of ``dataset_id`` under ``MINARI_DATASETS_PATH`` (default ``~/.minari/datasets``); checks the id.

    Raises:
        DatasetError: a malformed id.
    """
    from minari.dataset.minari_dataset import parse_dataset_id

    try:
        parse_dataset_id(dataset_id)
    except (ValueError, TypeError):
        raise DatasetError(
            f"malformed dataset id {dataset_id!r}: Minari takes [NAMESPACE/]NAME-vVERSION, a namespace part of at least "
            "two characters, letters, digits, _ and - (e.g. dice_poker/yacht/optimal-v0)"
        ) from None
    root = os.environ.get("MINARI_DATASETS_PATH")  # as minari.load_dataset finds it (a relative one from here)
    if root is None:
        root = os.path.join(os.path.expanduser("~"), ".minari", "datasets")
    return Path(root).absolute() / dataset_id


def _check_writable(root: Path) -> None:
    """A clear error unless ``root`` (the datasets folder) exists as a writable folder or can be made."""
    existing = next((p for p in (root, *root.parents) if p.exists()), None)
    if existing is None or not existing.is_dir():
        raise DatasetError(f"datasets folder {root}: {existing} is not a folder (set MINARI_DATASETS_PATH)")
    problem = cannot_write(existing)
    if problem is not None:
        raise DatasetError(f"datasets folder {root}: {existing} is not writable ({problem}; set MINARI_DATASETS_PATH)")


def write_dataset(
    rules: str | os.PathLike | Rules,
    agent: str,
    episodes: int,
    *,
    dataset_id: str | None = None,
    seed: int = 0,
    obs_mode: str = "flat",
    with_values: bool = False,
    overwrite: bool = False,
    block: int = BLOCK,
    progress: bool = False,
    description: str | None = None,
    author: str | Sequence[str] | None = None,
    author_email: str | Sequence[str] | None = None,
    code_permalink: str | None = None,
    stop: Callable[[], bool] | None = None,
    **options: Any,
) -> Path:
    """Play ``episodes`` seeded games with ``agent`` and write them as a Minari dataset.

    Args:
        rules: ruleset name, rules file or :class:`Rules`; ``options`` switch its options.
        agent: ``optimal``, ``greedy``, ``random``, ``trained`` or ``model:PATH``,
            optionally with ``:eps=E`` (:func:`parse_agent`).
        episodes: games to play (at least 1).
        dataset_id: Minari id (default :func:`default_dataset_id`).
        seed: episode ``i`` is played with env seed ``game_seeds(seed, episodes)[i]``.
        obs_mode: ``"flat"`` (the env's vector layout) or ``"dict"``.
        with_values: store the solver's expected final score of every action.
        overwrite: replace an existing dataset of this id (only once the new one is complete).
        block: games played at once.
        progress: a line per block on stderr.
        description: Minari's ``description`` (default: one generated from the arguments).
        author, author_email: Minari's ``author`` and ``author_email`` (a name or several; ``minari show``
            lists them, ``minari combine`` merges them), none by default.
        code_permalink: Minari's ``code_permalink``: a link to the code that generated the dataset (none by
            default; the metadata records this library's version and, from a git checkout, its ``git_commit``).
        stop: asked after every block and once more before the dataset is moved
            into place; ``True`` ends the write as an interrupt does
            (``KeyboardInterrupt``, nothing written). A signal handler that
            raises can be swallowed by Python (when it runs inside a ``__del__``
            or weakref callback); one that also sets a flag read here cannot.

    Returns:
        The dataset's folder. Everything is checked before a game is played;
        the dataset is written under a hidden temporary name and renamed into
        place when complete, so a failure or an interrupt leaves no partial
        dataset and never touches an existing one.

    Raises:
        DatasetError: bad arguments, an existing id without ``overwrite``, an
            unwritable datasets folder, a ruleset the solver cannot solve with
            ``with_values`` or the optimal agent.
    """
    import minari  # the datasets extra: fail before any work without it
    from minari.dataset.minari_storage import MinariStorage

    from agents.evaluation.benchmark import load_solution

    spec = parse_agent(agent)
    try:
        check_count("episodes", episodes, most=MAX_EPISODES)
    except ValueError as error:
        raise DatasetError(str(error)) from None
    for what, value, least in (("episodes", episodes, 1), ("seed", seed, 0), ("block", block, 1)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
            raise DatasetError(f"{what} must be an integer >= {least}, got {value!r}")
    if obs_mode not in ("flat", "dict"):
        raise DatasetError(f"obs_mode must be flat or dict, got {obs_mode!r}")
    authors, emails = _names("author", author), _names("author_email", author_email)
    if code_permalink is not None and (not isinstance(code_permalink, str) or not code_permalink.strip()):
        raise DatasetError(f"code_permalink must be a non-empty string, got {code_permalink!r}")
    try:
        rules = load_rules(rules, **options)
    except (ValueError, TypeError, KeyError, OSError) as error:
        raise DatasetError(f"rules: {error}") from None
    dataset_id = dataset_id or default_dataset_id(rules, spec, obs_mode)
    final = dataset_path(dataset_id)
    root = final.parents[len(Path(dataset_id).parts) - 1]
    _check_writable(root)
    root.mkdir(parents=True, exist_ok=True)
    _remove_stale(root)  # first: a dataset a killed --overwrite had moved aside is back before the check
    if final.exists() or final.is_symlink():
        if not overwrite:
            raise DatasetError(
                f"dataset {dataset_id} already exists ({final}); use --overwrite to replace it or choose another --id"
            )
        if not (final / "data" / "metadata.json").is_file():
            raise DatasetError(f"{final} exists and is not a Minari dataset: --overwrite only replaces datasets")

    def build_policy(solution: Solution | None) -> Policy:
        try:
            return make_policy(spec, rules, solution)
        except (ValueError, OSError) as error:  # a missing or foreign model, no shipped policy, ...
            raise DatasetError(f"agent {spec.text!r}: {error}") from None

    policy = None if spec.base == "optimal" else build_policy(None)  # the agent is checked before any solve
    try:  # the solver: the optimal agent and the values need it; the metadata records its optimum when it has one
        solution = load_solution(
            rules, required=spec.base == "optimal" or with_values, progress=None if progress else False
        )
    except (ImportError, MemoryError) as error:
        raise DatasetError(
            f"{rules.name}: the exact solve is not possible ({error}); the optimal agent and --with-values need it"
        ) from None
    policy = policy or build_policy(solution)
    env_spec = _env_spec(rules, obs_mode)
    token, lock = _hold_writer_lock(root)
    partial = root / f".partial-{dataset_id.replace('/', '__')}-{token}"
    started = time.perf_counter()
    try:
        partial.mkdir()
        storage = MinariStorage.new(
            partial / "data",
            observation_space=observation_space(compile_rules(rules), obs_mode),
            action_space=_action_space(rules),
            env_spec=env_spec,
            data_format="hdf5",
        )
        writer = _EpisodeWriter(partial / "data" / "main_data.hdf5")
        seeds = game_seeds(seed, episodes)
        scores = []
        regrets = []
        play_seconds = write_seconds = 0.0
        try:
            for start in range(0, episodes, block):
                clock = time.perf_counter()
                part = play_block(
                    rules,
                    policy,
                    seeds[start : start + block],
                    obs_mode=obs_mode,
                    solution=solution if with_values else None,
                )
                play_seconds += time.perf_counter() - clock
                clock = time.perf_counter()
                writer.write_many([part.episode(e) for e in range(len(part))])
                write_seconds += time.perf_counter() - clock
                scores.append(part.scores)
                if part.action_values is not None:
                    regrets.append(block_regret(part))
                if progress:
                    print(
                        f"dataset {dataset_id}: {start + len(part):,}/{episodes:,} episodes "
                        f"({time.perf_counter() - started:.1f} s)",
                        file=sys.stderr,
                        flush=True,
                    )
                _check_stop(stop)
        finally:
            writer.close()
        seconds = time.perf_counter() - started
        all_scores = np.concatenate(scores)
        optimal = float(solution.expected_score) if solution is not None else None
        from agents.evaluation.protocol import agent_sha256, code_commit
        from dice_poker_env import __version__

        info = {
            "format": DATASET_FORMAT,
            "rules": rules.name,
            "rules_options": dict(rules.options),
            "rules_fingerprint": rules.fingerprint,
            "rules_source": rules.source,
            "agent": spec.text,
            "agent_base": spec.base,
            "eps": spec.eps,
            "seed": int(seed),
            "episode_seeds": "episode i: numpy.random.SeedSequence(seed).generate_state(episodes, uint32)[i]",
            "obs_mode": obs_mode,
            "with_values": bool(with_values),
            "info_keys": ["action_mask", "action_values"] if with_values else ["action_mask"],
            "library": "dice-poker-env",
            "library_version": __version__,
            "git_commit": code_commit(),
            "agent_sha256": agent_sha256(spec.base, rules),
            "optimal_expected_score": optimal,
            "optimal_std": float(solution.score_std) if solution is not None else None,
            "mean_score": float(all_scores.mean()),
            "percent_of_optimal": 100.0 * float(all_scores.mean()) / optimal if optimal else None,
            "mean_regret": float(np.concatenate(regrets).mean()) if regrets else None,
            "recoverable": env_spec is not None,
            "seconds": {"total": round(seconds, 2), "play": round(play_seconds, 2), "write": round(write_seconds, 2)},
        }
        what = f"{spec.text} agent" + (
            " (the exact solver's optimal play)" if spec.base == "optimal" and not spec.eps else ""
        )
        metadata: dict[str, Any] = {
            "dataset_id": dataset_id,
            "minari_version": minari.__version__,
            "algorithm_name": spec.text,
            "description": description
            or (
                f"{episodes:,} games of {rules.name}{_options_text(rules)} played by the {what}, seed {seed}; "
                f"{obs_mode} observations, action masks"
                + (", the solver's value of every action" if with_values else "")
                + f". Mean score {info['mean_score']:.2f}"
                + (
                    f" ({info['percent_of_optimal']:.2f}% of the optimal expected score {optimal:.4f})."
                    if optimal
                    else "."
                )
            ),
            "requirements": [f"dice-poker-env>={__version__}"],
            "total_episodes": int(writer.count),
            "total_steps": int(writer.steps),
            "dice_poker": info,
        }
        if authors:
            metadata["author"] = authors
        if emails:
            metadata["author_email"] = emails
        if code_permalink is not None:
            metadata["code_permalink"] = code_permalink.strip()
        if optimal is not None:  # minari.get_normalized_score: 0 for random play, 1 for optimal play
            metadata.update(ref_max_score=optimal, ref_min_score=random_play_score(rules))
        storage.update_metadata(metadata)
        storage.update_metadata({"dataset_size": storage.get_size()})
        _create_namespaces(dataset_id)
        final.parent.mkdir(parents=True, exist_ok=True)
        _check_stop(stop)
        _replace(partial, final, token, overwrite)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    finally:
        _release_writer_lock(root, token, lock)
    return final


def _names(what: str, value: str | Sequence[str] | None) -> set[str]:
    """Minari's ``author`` or ``author_email`` (a set of names) from a name or several; checked."""
    names = [value] if isinstance(value, str) else list(value or ())
    if not all(isinstance(name, str) and name.strip() for name in names):
        raise DatasetError(f"{what} must be a non-empty string or a list of them, got {value!r}")
    return {name.strip() for name in names}


#: games the uniformly random agent plays to measure ``ref_min_score``
RANDOM_REFERENCE_GAMES = 10_000


@functools.lru_cache(maxsize=16)
def _random_play_score(rules: Rules, games: int) -> float:
    from agents.evaluation.benchmark import game_seeds, play_games
    from agents.players.random_agent import RandomAgent

    part = play_games(rules, RandomAgent(seed=0), game_seeds(0, games).tolist(), None, lockstep=True)
    return float(np.mean(part.scores))


def random_play_score(rules: Rules, games: int = RANDOM_REFERENCE_GAMES) -> float:
    """Minari's ``ref_min_score``: the mean score of the uniformly random agent (``RandomAgent(seed=0)``) over
    ``games`` games seeded as the benchmark's seed 0 (deterministic; about 46.0 on yahtzee, whose
    optimal expected score 254.59 is ``ref_max_score``)."""
    return _random_play_score(rules, int(games))


def _check_stop(stop: Callable[[], bool] | None) -> None:
    if stop is not None and stop():
        raise KeyboardInterrupt


def _options_text(rules: Rules) -> str:
    return f" ({', '.join(f'{k}={v}' for k, v in rules.options.items())})" if rules.options else ""


def _action_space(rules: Rules) -> spaces.Discrete:
    from gymnasium import spaces

    return spaces.Discrete(int(compile_rules(rules).n_actions))


def _create_namespaces(dataset_id: str) -> None:
    """Minari's namespace records for the id's namespace (and its parents), as ``create_dataset_from_buffers`` makes them."""
    from minari.dataset.minari_dataset import parse_dataset_id
    from minari.namespace import create_namespace, list_local_namespaces

    namespace = parse_dataset_id(dataset_id)[0]
    if namespace is not None and namespace not in list_local_namespaces():
        create_namespace(namespace)


def _hold_writer_lock(root: Path) -> tuple[str, Any]:
    """A new writer's token (random, so writers on other hosts or in other PID namespaces sharing the folder
    never collide) and its lock file ``root/.lock-<token>``, held (``flock``) until the writer ends: the
    kernel drops the lock when the writer dies however it dies, which is how the next writer tells a stale
    temporary folder from a live one (:func:`_writer_alive`)."""
    token = f"w{secrets.token_hex(8)}"
    if fcntl is None:  # no flock (Windows): no lock file; temporary folders are then kept, never guessed at
        return token, None
    making = root / f".locktmp-{token}"
    handle = open(making, "w")  # noqa: SIM115 - held open for the whole write
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # a filesystem without locks: the file stays unlocked, and others' probe fails: alive
        pass
    os.rename(making, root / f".lock-{token}")  # locked before another writer can see it
    return token, handle


def _release_writer_lock(root: Path, token: str, handle: Any) -> None:
    if handle is not None:
        handle.close()
        (root / f".lock-{token}").unlink(missing_ok=True)


def _writer_alive(root: Path, token: str) -> bool:
    """Whether the writer of a temporary name's token still runs. A token of digits is a PID (names of earlier
    versions): alive unless that process is gone. Otherwise the writer is alive while its lock file is
    locked; where ``flock`` is missing or refused (a filesystem without locks) it counts as alive, so that
    nothing is deleted on a guess."""
    if token.isdigit():
        try:
            os.kill(int(token), 0)
        except ProcessLookupError:
            return False
        except (ValueError, PermissionError, OverflowError):
            return True
        return True
    # the writer removes its lock only after its temporary folder; a lock that cannot be judged keeps it
    return lock_state(root / f".lock-{token}") in ("held", "unknown")


def _remove_stale(root: Path) -> None:
    """Clean up after writers killed outright (SIGKILL, power loss): their partial datasets go, and an
    existing dataset a killed ``--overwrite`` had moved aside comes back if nothing replaced it."""
    for path in root.glob(".partial-*-*"):
        if path.is_dir() and not path.is_symlink() and not _writer_alive(root, path.name.rsplit("-", 1)[1]):
            shutil.rmtree(path, ignore_errors=True)
    for path in root.rglob(".replaced-*-*"):
        original = path.name[len(".replaced-") :].rsplit("-", 1)[0]
        if original in ("", ".", "..") or not path.is_dir() or path.is_symlink():
            continue  # not a name _replace makes
        if _writer_alive(root, path.name.rsplit("-", 1)[1]):
            continue
        name = path.with_name(original)
        with contextlib.suppress(OSError):  # (one that cannot be moved back stays; writing goes on)
            if name.exists() or name.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.rename(path, name)
    for lock in root.glob(".lock-*"):
        if not _writer_alive(root, lock.name[len(".lock-") :]):
            lock.unlink(missing_ok=True)
    for making in root.glob(".locktmp-*"):  # a writer killed between making its lock file and naming it
        with contextlib.suppress(OSError):
            if time.time() - making.stat().st_mtime > 3600:
                making.unlink()


def _replace(partial: Path, final: Path, token: str, overwrite: bool) -> None:
    """Move the complete dataset into place; an existing one goes only with ``overwrite``, and only once the new
    one is there. Without it, a dataset another writer put there meanwhile stays, and this one is refused."""
    if not (final.exists() or final.is_symlink()):
        try:
            os.rename(partial, final)  # (a folder that appeared meanwhile is not empty: refused, not replaced)
        except OSError as error:
            if final.exists() or final.is_symlink():
                raise DatasetError(
                    f"dataset {final} was written meanwhile by another writer; nothing was written "
                    "(use --overwrite to replace it)"
                ) from None
            raise error
        return
    if not overwrite:
        raise DatasetError(
            f"dataset {final} was written meanwhile by another writer; nothing was written (use --overwrite to "
            "replace it)"
        )
    old = final.with_name(f".replaced-{final.name}-{token}")
    os.rename(final, old)
    try:
        os.rename(partial, final)
    except BaseException:
        os.rename(old, final)
        raise
    shutil.rmtree(old, ignore_errors=True)


# ---------------------------------------------------------------------- reading
def block_regret(block: EpisodeBlock) -> np.ndarray:
    """``(E,)`` each episode's regret (points lost to the solver's best action, summed), from its stored values."""
    assert block.action_values is not None, "block_regret needs a dataset written with action values"
    values = block.action_values[:, :-1]
    steps = np.arange(values.shape[1])
    taken = np.take_along_axis(values, block.actions[:, :, None], axis=2)[:, :, 0]
    with np.errstate(invalid="ignore"):  # -inf - -inf in the rows after an episode's end
        loss = np.where(steps[None, :] < block.lengths[:, None], values.max(axis=2) - taken, 0.0)
    return loss.astype(np.float64).sum(axis=1)


def episode_regret(episode: Any) -> np.ndarray:
    """``(T,)`` the regret of each action of a stored episode: best action's value minus the taken one's.

    ``episode``: a Minari ``EpisodeData`` of a dataset written ``with_values``
    (float32 values: a loss below :data:`agents.players.optimal.VALUE_TOLERANCE` is no loss).
    """
    infos = episode.infos if hasattr(episode, "infos") else episode["infos"]
    actions = np.asarray(episode.actions if hasattr(episode, "actions") else episode["actions"])
    if "action_values" not in infos:
        raise DatasetError("this dataset has no action values: write it with --with-values")
    values = np.asarray(infos["action_values"], dtype=np.float64)[: len(actions)]
    return values.max(axis=1) - values[np.arange(len(actions)), actions]


def dataset_info(dataset: Any) -> dict[str, Any]:
    """The ``dice_poker`` metadata of a loaded Minari dataset (ruleset, agent, seed, optimum, ...)."""
    info = dataset.storage.metadata.get("dice_poker")
    if not isinstance(info, dict):
        raise DatasetError(f"{dataset.id}: not a dice_poker_env dataset (no 'dice_poker' metadata){_combined(dataset)}")
    missing = [key for key in INFO_KEYS if key not in info]
    if missing:
        raise DatasetError(f"{dataset.id}: its 'dice_poker' metadata lacks {', '.join(missing)} (damaged or hand-made)")
    return info


#: what every reader of a dataset's ``dice_poker`` metadata relies on
INFO_KEYS = ("rules", "rules_options", "rules_fingerprint", "obs_mode")


def episode_seeds(dataset: Any) -> np.ndarray:
    """Each episode's env seed (``env.reset(seed=...)`` replays it), in episode order.

    Raises:
        DatasetError: an episode without a seed (a combined dataset: ``minari.combine_datasets`` drops them).
    """
    seeds = []
    for metadata in dataset.storage.get_episode_metadata(dataset.episode_indices):
        if metadata.get("seed") is None:
            raise DatasetError(f"{dataset.id}: episode {int(metadata['id'])} has no seed{_combined(dataset)}")
        seeds.append(int(metadata["seed"]))
    return np.array(seeds, dtype=np.int64)


def _combined(dataset: Any) -> str:
    """Why a dataset lacks this library's metadata, when it is Minari's combination of datasets ("" otherwise)."""
    parts = dataset.storage.metadata.get("combined_datasets")
    if not parts:
        return ""
    return (
        f": it combines {', '.join(map(str, parts))} (minari.combine_datasets), which keeps neither their "
        "'dice_poker' metadata nor their episode seeds; read those from the datasets it combines "
        "(load_transitions reads the combination)"
    )


def check_metadata(dataset_id: str) -> None:
    """Refuse a dataset whose ``metadata.json`` would make Minari run code: one without its
    ``observation_space`` and ``action_space`` (Minari then builds the env its ``env_spec`` names to find them),
    or whose ``env_spec`` or ``eval_env_spec`` names an entry point other than this library's registered env, or
    any wrapper (``recover_environment`` imports and calls them with the spec's arguments). Nothing of the file
    is run; a missing file passes (Minari says it is not found).

    Raises:
        DatasetError: what the file would do, in one line.
    """
    import gymnasium as gym

    import dice_poker_env  # noqa: F401  (registers the DicePoker/* ids)

    path = dataset_path(dataset_id) / "data" / "metadata.json"

    def refused(why: str) -> DatasetError:
        return DatasetError(f"dataset {dataset_id!r} cannot be opened ({why}); is {path} damaged or hand-made?")

    try:
        metadata = json.loads(path.read_bytes())
    except FileNotFoundError:
        return
    except (OSError, ValueError) as error:
        raise refused(type(error).__name__) from None
    if not isinstance(metadata, dict):
        raise refused("not a JSON object")
    missing = [key for key in ("observation_space", "action_space") if key not in metadata]
    if missing:
        raise refused(
            f"no {' or '.join(missing)}: Minari would build the env its env_spec names to find them, running its code"
        )
    ours = {
        spec.entry_point
        for name, spec in gym.registry.items()
        if name.startswith("DicePoker/") and isinstance(spec.entry_point, str)
    }
    for key in ("env_spec", "eval_env_spec"):
        spec = metadata.get(key)
        if spec is None:
            continue
        try:
            parsed: Any = json.loads(spec) if isinstance(spec, str) else None
            entry, wrappers = parsed.get("entry_point"), parsed.get("additional_wrappers") or []
        except (ValueError, AttributeError, TypeError):
            raise refused(f"a {key} that is not a Gymnasium spec") from None
        if entry not in ours:
            raise refused(
                f"its {key} names the entry point {str(entry)[:80]!r}, not this library's env "
                f"({', '.join(sorted(ours))}): recover_environment would run it"
            )
        if wrappers:
            raise refused(f"its {key} wraps the env (additional_wrappers): recover_environment would run them")


def open_dataset(dataset_id: str, missing_hint: str = "") -> Any:
    """``minari.load_dataset(dataset_id)``, every failure a one-line :class:`DatasetError`: not found (with
    ``missing_hint``), or what Minari could not read (a damaged or hand-made ``metadata.json``, a foreign
    folder, a malformed id), with its cause."""
    import minari

    check_metadata(dataset_id)  # before Minari reads it: a hand-made one can make it run code
    try:
        return minari.load_dataset(dataset_id)
    except FileNotFoundError:
        raise DatasetError(
            f"dataset {dataset_id!r} not found under MINARI_DATASETS_PATH "
            f"({dataset_path(dataset_id).parents[len(Path(dataset_id).parts) - 1]}){missing_hint}"
        ) from None
    except Exception as error:  # noqa: BLE001 - whatever Minari raises on a file it cannot read
        text = " ".join(str(error).split())[:200]
        raise DatasetError(
            f"dataset {dataset_id!r} cannot be opened ({type(error).__name__}: {text}); is "
            f"{dataset_path(dataset_id) / 'data' / 'metadata.json'} damaged or hand-made?"
        ) from None


def load_transitions(dataset_id: str) -> dict[str, Any]:
    """Every decision of a dataset as arrays (for training): ``observations`` ``(N, ...)`` (a dict of
    arrays for dict observations), ``actions``, ``rewards``, ``action_mask``, ``action_values`` (if
    stored) and ``episode`` (each row's episode index), the ``T`` decisions of each episode in order
    (the final observations are left out).

    Reads Minari's HDF5 file directly, each episode's arrays straight into their rows (Minari's
    ``iterate_episodes`` decodes every field of every episode, about six times slower); other
    storages go through ``iterate_episodes``.

    Raises:
        DatasetError: no such dataset.
    """
    dataset = open_dataset(dataset_id)
    try:
        return _transitions(dataset)
    except DatasetError:
        raise
    except (IndexError, KeyError, TypeError, ValueError, OSError) as error:  # arrays that do not fit each other
        text = " ".join(str(error).split())[:200]
        raise DatasetError(
            f"dataset {dataset_id!r} is damaged or hand-made: its arrays do not fit ({type(error).__name__}: {text})"
        ) from None


def _transitions(dataset: Any) -> dict[str, Any]:
    """:func:`load_transitions` of a loaded dataset (any error: arrays that do not fit each other)."""
    metadata = dataset.storage.metadata
    if metadata.get("data_format") == "hdf5":
        return _read_hdf5(Path(dataset.storage.data_path) / "main_data.hdf5", dataset)
    columns: dict[str, list] = {
        "observations": [],
        "actions": [],
        "rewards": [],
        "action_mask": [],
        "action_values": [],
        "episode": [],
    }
    for episode in dataset.iterate_episodes():
        t = len(episode.actions)
        obs = episode.observations
        columns["observations"].append({k: v[:t] for k, v in obs.items()} if isinstance(obs, dict) else obs[:t])
        columns["actions"].append(episode.actions)
        columns["rewards"].append(episode.rewards)
        columns["action_mask"].append(episode.infos["action_mask"][:t])
        columns["episode"].append(np.full(t, episode.id, dtype=np.int64))
        if "action_values" in episode.infos:
            columns["action_values"].append(episode.infos["action_values"][:t])
    if len(columns["action_values"]) != len(columns["actions"]):  # not in every episode (a combined dataset)
        columns["action_values"] = []
    out: dict[str, Any] = {}
    for key, parts in columns.items():
        if parts and isinstance(parts[0], dict):
            out[key] = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
        elif parts:
            out[key] = np.concatenate(parts)
    return out


def _read_hdf5(path: Path, dataset: Any) -> dict[str, Any]:
    """:func:`load_transitions` from Minari's HDF5 file through h5py's low-level calls."""
    import h5py

    episodes = [int(i) for i in dataset.episode_indices]
    n_actions = int(dataset.action_space.n)
    # the most decisions a game has: at most two keeps and a box a turn, at most one turn a box. Every array is
    # allocated from the shapes the file declares, which a few bytes can make terabytes (an HDF5 dataset of
    # unwritten chunks reads as its fill value): each is checked against the game before it is allocated.
    most = 3 * (n_actions - N_KEEP_ACTIONS)
    with h5py.File(path, "r") as file:
        actions = []
        for e in episodes:  # the actions first: their lengths place every other field
            file_id = h5py.h5d.open(file.id, f"episode_{e}/actions".encode())
            if len(file_id.shape) != 1 or file_id.shape[0] > most:
                raise DatasetError(
                    f"{dataset.id}: episode {e} has actions of shape {tuple(file_id.shape)}; a game of its ruleset "
                    f"is at most {most} decisions (damaged or hand-made)"
                )
            actions.append(np.empty(file_id.shape, dtype=np.int64))
            file_id.read(h5py.h5s.ALL, h5py.h5s.ALL, actions[-1])
        lengths = np.array([len(a) for a in actions], dtype=np.int64)
        total = int(lengths.sum())
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        out: dict[str, Any] = {
            "episode": np.repeat(np.asarray(episodes, dtype=np.int64), lengths),
            "actions": np.concatenate(actions) if actions else np.zeros(0, dtype=np.int64),
        }
        if not episodes:
            return out
        first = file[f"episode_{episodes[0]}"]
        # (name in the episode group, key of the result, rows stored: T + 1 or T)
        fields = [("rewards", "rewards", 0), ("infos/action_mask", "action_mask", 1)]
        if "action_values" in first["infos"] and all(  # (not in every one: combined with a dataset without)
            "action_values" in file[f"episode_{e}/infos"] for e in episodes
        ):
            fields.append(("infos/action_values", "action_values", 1))
        if isinstance(first["observations"], h5py.Group):
            fields += [(f"observations/{k}", f"observations/{k}", 1) for k in first["observations"]]
        else:
            fields.append(("observations", "observations", 1))
        space = dataset.observation_space
        rows = {"rewards": (), "action_mask": (n_actions,), "action_values": (n_actions,)}
        for name, key, extra in fields:
            sample = first[name]
            if key.startswith("observations/"):
                sub = space.spaces.get(key.split("/", 1)[1]) if hasattr(space, "spaces") else None
                row = None if sub is None else tuple(sub.shape or ())
            else:
                row = tuple(space.shape or ()) if key == "observations" else rows[key]
            if tuple(sample.shape[1:]) != row or sample.dtype.kind not in "biuf" or sample.dtype.itemsize > 8:
                raise DatasetError(
                    f"{dataset.id}: its {name} have rows of shape {tuple(sample.shape[1:])} and dtype {sample.dtype}, "
                    f"not numbers of shape {row} as its spaces say (damaged or hand-made)"
                )
            # one spare row: an episode's extra last row is overwritten by the next episode's first
            array = np.empty((total + extra, *sample.shape[1:]), dtype=sample.dtype)
            for e, start, length in zip(episodes, starts.tolist(), lengths.tolist()):
                file_id = h5py.h5d.open(file.id, f"episode_{e}/{name}".encode())
                if tuple(file_id.shape) != (length + extra, *sample.shape[1:]):  # (a short one would leave rows unread)
                    raise DatasetError(
                        f"{dataset.id}: episode {e} holds {length} actions but its {name} has shape "
                        f"{tuple(file_id.shape)}, not {(length + extra, *sample.shape[1:])} (damaged or hand-made)"
                    )
                file_id.read(h5py.h5s.ALL, h5py.h5s.ALL, array[start : start + length + extra])
            array = array[:total]
            if key.startswith("observations/"):
                out.setdefault("observations", {})[key.split("/", 1)[1]] = array
            else:
                out[key] = array
    return out
