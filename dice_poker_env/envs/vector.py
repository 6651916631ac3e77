"""The NumPy-batched vector environment: ``num_envs`` games over one engine state.

Every game of the batch is the single :class:`~dice_poker_env.envs.single.DicePokerEnv`
(same spaces, scoring, legal actions and reward timing, same engine); a step is
a fixed number of array operations over the whole batch, with no Python loop
over games on the default path.

Size: it is one class, and each of its parts (reset with
positions and masks, the three autoreset modes, illegal actions per game,
Gymnasium's paired info keys, per-game dice sources) works on the same batch
state, advanced in place; the rules themselves are the engine's.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from gymnasium.vector import VectorEnv
from gymnasium.vector.utils import batch_space
from gymnasium.vector.vector_env import AutoresetMode

from dice_poker_env.dice_sources import DiceExhaustedError, DiceSource, RandomDice, ScriptedDice
from dice_poker_env.engine import game
from dice_poker_env.engine.combinatorics import (
    KEEP_ALL,
    N_DICE,
    N_KEEP_ACTIONS,
    N_SEQUENCES,
    REROLLED_POSITIONS,
    ROLL_OF_SEQUENCE,
    reroll_batch,
    reroll_sequence,
    roll_index_of_sorted,
)
from dice_poker_env.engine.masks import action_masks
from dice_poker_env.engine.position import (
    POSITION_KEYS,
    PositionError,
    check_options,
    position_from_options,
    rolls_dice,
)
from dice_poker_env.engine.state import BatchState
from dice_poker_env.engine.tables import compile_rules
from dice_poker_env.envs.arguments import require_choice, require_dice_source
from dice_poker_env.envs.illegal import IllegalActions, IllegalActionSettings, illegal_reason
from dice_poker_env.envs.observation import (
    OBS_MODES,
    Observation,
    observation_space,
    observe_batch,
    observe_dict_batch,
)
from dice_poker_env.rules import Rules, load_rules

_POSITION_KEYS = POSITION_KEYS
#: the NumPy bit generators a snapshot may name (:meth:`DicePokerVectorEnv.restore`; the checkpoints that hold a
#: snapshot check against it before restoring anything)
BIT_GENERATORS = frozenset({"PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64"})


def _take_rows(rows: np.ndarray, *arrays: np.ndarray | None) -> list[np.ndarray | None]:
    return [None if a is None else a[rows] for a in arrays]


def _autoreset_mode(mode: AutoresetMode | str) -> AutoresetMode:
    if isinstance(mode, AutoresetMode):
        return mode
    for member in AutoresetMode:
        if str(mode).lower().replace("_", "") in (member.value.lower(), member.name.lower().replace("_", "")):
            return member
    raise ValueError(f"autoreset_mode must be one of {[m.value for m in AutoresetMode]}, got {mode!r}")


# Observations are typed Any at the env's surface, as in DicePokerEnv (an array or a dict of arrays by obs_mode).
#: the keys of a :meth:`DicePokerVectorEnv.snapshot`
_SNAPSHOT_KEYS = (
    "snapshot_format",
    "rules_fingerprint",
    "num_envs",
    "state",
    "ended",
    "score",
    "box_full",
    "mask_index",
    "mask",
    "np_random",
)


class DicePokerVectorEnv(IllegalActionSettings, VectorEnv[Any, np.ndarray, np.ndarray]):
    """``num_envs`` independent games of a Yahtzee-family dice game, batched in NumPy.

    ## Description
    The single env (:class:`~dice_poker_env.envs.single.DicePokerEnv`) ``num_envs``
    times, stepped together: one :class:`~dice_poker_env.engine.state.BatchState`
    (a leading batch axis), advanced by the engine's batched functions. Made by
    ``gymnasium.make_vec(id, num_envs=N, vectorization_mode="vector_entry_point")``
    for every registered ``DicePoker/*`` id.

    ## Action Space
    ``MultiDiscrete([32 + n_boxes] * N)`` (``single_action_space`` is the single
    env's ``Discrete(32 + n_boxes)``, same encoding). Legal actions:
    ``action_masks()`` (``(N, 32 + n_boxes)`` ``np.int8``) and ``info["action_mask"]``.

    ## Observation Space
    The single env's space batched (``batch_space``): for ``obs_mode="dict"`` a
    ``Dict`` whose values have a leading axis ``N``; for ``"flat"`` a ``(N, D)``
    ``float32`` ``Box``. Layouts in :mod:`dice_poker_env.envs.observation`.

    ## Starting State
    Empty scorecards and freshly rolled dice. ``reset(options=...)`` takes the
    single env's position keys (``scorecard``, ``dice``, ``rolls_left``,
    ``bonus``; ``None`` counts as not given, so ``"dice": None`` deals fresh
    dice) for every game reset, ``"positions"``: a sequence of ``N`` such
    dicts (or ``None``) for one position per game, and Gymnasium's
    ``"reset_mask"`` (``(N,)`` bool) to reset only some games.

    ## Rewards
    Per game exactly the single env's: the points the step added to the final
    score, bonuses in the step they become certain, so the undiscounted return of
    each legal episode equals its final score. ``float64`` ``(N,)``.

    ## Episode End and Autoreset
    A game terminates after its last turn (or at an illegal action, see below);
    it never truncates. ``autoreset_mode`` (``metadata["autoreset_mode"]``):

    * ``NEXT_STEP`` (default, Gymnasium's default): the step after a game
      terminated resets it; that step's action for the game is ignored, its
      reward is 0, terminated is False, and the observation is the new game's.
    * ``SAME_STEP`` (what Stable-Baselines3 expects): a game that terminates is
      reset in the same step; the returned observation is the new game's, the
      last one is in ``info["final_obs"]`` (object array, ``None`` elsewhere) and
      the ended game's info in ``info["final_info"]`` (masks ``_final_obs`` /
      ``_final_info``).
    * ``DISABLED``: the user resets ended games with
      ``reset(options={"reset_mask": ...})``; stepping an ended game raises.

    Illegal actions, as in the single env: with ``illegal_action="terminate"``
    (default) the game ends at once, unchanged, with reward ``illegal_penalty``
    and ``info["illegal_action"]`` / ``info["illegal_reason"]`` set for it,
    and its mask is all zeros, as after a normal end (an action out of range,
    of any integer dtype, is illegal and reported as given); with ``"raise"``
    an :class:`~dice_poker_env.envs.illegal.IllegalActionError` names the game,
    the action and the reason, and no game changes. Actions of games awaiting
    a ``NEXT_STEP`` autoreset are ignored.

    ## Information
    Gymnasium's vector convention (every key ``k`` paired with a bool mask
    ``_k``), with the single env's keys: ``action_mask`` ``(N, 32 + n)`` int8
    and ``score`` ``(N,)`` int64 for every game; for games that ended this step
    ``final_score`` and ``scorecard`` (``{box: (N,) int64}``, ``_box`` set where
    the game ended with that box filled).

    ## Dice and Seeding
    ``reset(seed=s)`` seeds the env's one generator, which fixes all N games.
    The default dice (:class:`~dice_poker_env.dice_sources.RandomDice`) draw ``(N, 5)``
    faces per step from it in one call (kept dice ignore theirs, and a game's
    new first roll uses them). Another single ``dice_source`` is asked for
    ``(N, 5)`` faces per step in the same way. A *sequence* of ``N`` dice
    sources gives each game its own source, consumed exactly as the single env
    consumes it (five faces per new roll, one per rerolled die): a
    :class:`~dice_poker_env.dice_sources.ScriptedDice` per game replays the same games as
    N single envs with those scripts. That mode loops over games in Python (for
    tests and replays, not speed).

    ## Arguments
    * ``num_envs``: N, the number of games.
    * ``rules``, ``obs_mode``, ``illegal_action``, ``illegal_penalty``,
      ``render_mode`` (``"ansi"``: ``render()`` returns one text per game) and
      rule options as keywords (e.g. ``joker="free"``): as the single env.
    * ``dice_source``: one source for the batch or a sequence of N (above).
    * ``autoreset_mode``: an :class:`~gymnasium.vector.AutoresetMode` or its name.

    ## Version History
    * v0: initial release.
    """

    metadata = {"render_modes": ["ansi"], "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(
        self,
        num_envs: int = 1,
        rules: str | os.PathLike[str] | Rules = "yacht",
        *,
        obs_mode: str = "dict",
        illegal_action: str = "terminate",
        illegal_penalty: float = 0.0,
        dice_source: DiceSource | Sequence[DiceSource] | None = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        render_mode: str | None = None,
        max_episode_steps: int | None = None,
        **rule_options: Any,
    ):
        if isinstance(num_envs, (str, os.PathLike, Rules)):  # DicePokerEnv's order: the rules first
            raise ValueError(
                f"num_envs must be a positive integer, got {num_envs!r}: the number of games comes first, "
                "DicePokerVectorEnv(num_envs, rules) (or dice_poker_env.make_vec(rules, num_envs))"
            )
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive integer, got {num_envs!r}")
        require_choice("obs_mode", obs_mode, OBS_MODES)
        self._illegal_actions = IllegalActions.from_arguments(illegal_action, illegal_penalty)
        require_choice("render_mode", render_mode, self.metadata["render_modes"], optional=True)
        self.num_envs = int(num_envs)
        self.rules = load_rules(rules, **rule_options)
        self.tables = compile_rules(self.rules)
        longest = game.ROLLS_PER_TURN * int(self.tables.turns)  # two rerolls and a score a turn, at most
        if max_episode_steps is not None and (
            isinstance(max_episode_steps, bool)
            or not isinstance(max_episode_steps, (int, np.integer))
            or max_episode_steps < longest
        ):  # (gym.make_vec passes a registration's; one at least a game's length changes nothing)
            raise ValueError(
                f"max_episode_steps={max_episode_steps!r}: the batched env does not cut games short; a game of "
                f"{self.rules.name} ends by itself within {longest} steps (give None or at least {longest})"
            )
        self.obs_mode = obs_mode
        self.autoreset_mode = _autoreset_mode(autoreset_mode)
        self.metadata = {**type(self).metadata, "autoreset_mode": self.autoreset_mode}
        self.render_mode = render_mode

        self._sources: list[DiceSource] | None = None
        if dice_source is None:
            dice_source = RandomDice()
        if isinstance(dice_source, Sequence) and not isinstance(dice_source, (str, bytes)):
            if len(dice_source) != self.num_envs:
                raise ValueError(
                    f"dice_source: a sequence needs one source per game ({self.num_envs}), got {len(dice_source)}"
                )
            for i, source in enumerate(dice_source):
                require_dice_source(f"dice_source[{i}]", source)
            self._sources = list(dice_source)
        else:
            require_dice_source("dice_source", dice_source)
        self.dice_source = dice_source
        self._fast_dice = type(dice_source) is RandomDice

        self.single_action_space = spaces.Discrete(self.tables.n_actions)
        self.single_observation_space = observation_space(self.tables, obs_mode)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)

        self.state: BatchState | None = None
        #: the legal actions now: the mask row index per game (rulesets with mask tables), or a private mask
        self._mask_index: np.ndarray | None = None
        self._mask: np.ndarray | None = None
        #: games whose episode ended in the last step (awaiting autoreset/reset)
        self._ended = np.zeros(self.num_envs, dtype=bool)
        self._rows = np.arange(self.num_envs)
        self._all = np.ones(self.num_envs, dtype=bool)
        self._score = np.zeros(self.num_envs, dtype=np.int64)
        self._any_ended = False
        self._flat_rows = self._rows * self.tables.n_actions
        #: the engine's masks of this ruleset (with tables up to 15 boxes: a mask is a row index)
        self._masks = action_masks(self.tables)
        #: the five-kind box holds points (0/1), per game, as of the last mask update (the state since)
        self._box_full: np.ndarray | None = None
        #: keep bits of each action: its own for keeps, 0 (reroll all five) for score actions
        self._keep_bits = np.where(
            np.arange(self.tables.n_actions) < N_KEEP_ACTIONS, np.arange(self.tables.n_actions), 0
        )
        #: the reason of an illegal action whose words depend on the action alone, by kind x n_actions + action
        #: (keeps all five dice, a keep with no reroll left, a box already filled): filled as they first occur
        self._reason_text = np.full(3 * self.tables.n_actions, None, dtype=object)
        self._reason_known = np.zeros(3 * self.tables.n_actions, dtype=bool)

    # ------------------------------------------------------------------ API
    def reset(self, *, seed: int | None = None, options: Mapping[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Reset all games (or those in ``options["reset_mask"]``); see the class docstring."""
        if seed is not None:
            if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
                raise TypeError(f"seed must be an int (one seed fixes all {self.num_envs} games), got {seed!r}")
        options = check_options(options)
        reset_mask = options.pop("reset_mask", None)
        positions = options.pop("positions", None)
        if positions is not None:
            if isinstance(positions, (str, bytes, Mapping)) or not isinstance(positions, (Sequence, np.ndarray)):
                raise PositionError(
                    f"reset options: 'positions' must be a list of one position dict (or None) per game, got {positions!r}"
                )
            if len(positions) != self.num_envs:
                raise PositionError(
                    f"reset options: 'positions' needs one entry per game ({self.num_envs}), got {len(positions)}"
                )
            for i, position in enumerate(positions):
                check_options(position, f"reset options: positions[{i}]")
        unknown = sorted(set(options) - set(_POSITION_KEYS))
        if unknown:
            raise PositionError(
                f"reset options: unknown key {unknown[0]!r}; known keys: "
                f"{', '.join(sorted((*_POSITION_KEYS, 'positions', 'reset_mask')))}"
            )
        if reset_mask is None:
            reset_mask = self._all.copy()
        else:
            reset_mask = np.asarray(reset_mask)
            if reset_mask.shape != (self.num_envs,) or reset_mask.dtype != np.bool_:
                raise ValueError(f"options['reset_mask'] must be a bool array of shape ({self.num_envs},)")
            if self.state is None and not reset_mask.all():
                raise gym.error.ResetNeeded("the first reset() must reset every game (no reset_mask)")
        if positions is not None:
            if options:
                raise PositionError("reset options: give either 'positions' or the position keys, not both")
        rows = np.flatnonzero(reset_mask)
        if options or positions is not None:  # a refused position changes nothing: checked before the seed and dice
            for i in rows.tolist():
                opts = options if positions is None else positions[i]
                if not opts:
                    continue
                try:
                    position_from_options(self.tables, opts, 0)
                except PositionError as error:  # name the game whose position is refused
                    if positions is None:
                        raise
                    raise PositionError(f"reset options: positions[{i}]: {error}") from None
        if seed is not None:
            self._np_random, self._np_random_seed = seeding.np_random(int(seed))
        if self.state is None:
            state = game.new_batch(self.tables, np.zeros(self.num_envs, dtype=np.int64))
        else:  # new arrays, so that a rejected position (PositionError below) changes nothing
            state = self.state.copy()
        if self._sources is None:
            fresh = self._first_rolls(rows, *self._draw(len(rows)))
        else:  # as the single env: a game whose position gives its dice rolls none
            fresh = np.zeros(len(rows), dtype=np.int64)
            rolling = np.array([rolls_dice(options if positions is None else positions[i]) for i in rows], dtype=bool)
            fresh[rolling] = self._first_rolls(rows[rolling], None, None)
        self._reset_rows(state, rows, fresh, options, positions)  # may raise PositionError: nothing changed yet
        self.state = state
        self._score[rows] = self._total(state, rows)
        self._ended[rows] = False
        self._any_ended = bool(self._ended.any())
        mask, box_state = self._update_mask(self.state)
        info = {
            "action_mask": mask,
            "_action_mask": reset_mask.copy(),
            "score": np.where(reset_mask, self._score, 0),
            "_score": reset_mask.copy(),
        }
        return self._observe(self.state, box_state), info

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every game; see the class docstring for autoreset and illegal actions.

        The state is advanced in place (:func:`~dice_poker_env.engine.game.advance`);
        everything handed out (observations, masks, infos) is a fresh array.
        """
        if self.state is None:
            raise gym.error.ResetNeeded("call reset() before step()")
        actions = given = np.asarray(actions)
        if actions.shape != (self.num_envs,):
            raise ValueError(f"actions must have shape ({self.num_envs},), got {actions.shape}")
        if actions.dtype.kind not in "iu":
            raise TypeError(f"actions must be integers, got dtype {actions.dtype}")
        if actions.dtype.kind == "u" and actions.dtype.itemsize >= 8:  # (uint64 above 2**63 would wrap to negative)
            actions = np.minimum(actions, np.uint64(self.tables.n_actions))
        actions = actions.astype(np.int64, copy=False)
        tables, state, n_actions = self.tables, self.state, self.tables.n_actions

        ended = self._ended
        any_ended = self._any_ended
        if any_ended and self.autoreset_mode == AutoresetMode.DISABLED:
            raise gym.error.ResetNeeded(
                f"games {np.flatnonzero(ended)[:10].tolist()} are over; reset them with options={{'reset_mask': ...}}"
            )
        if actions.view(np.uint64).max() >= n_actions:  # a negative action is a huge unsigned one
            in_range = (actions >= 0) & (actions < n_actions)
            safe = np.where(in_range, actions, 0)
            legal = self._is_legal(safe) & in_range
        else:
            safe = actions
            legal = self._is_legal(safe)
        if any_ended:  # NEXT_STEP: these games' (in-range) actions are ignored: their reset below overwrites the step
            legal |= ended
        illegal = None
        if not legal.all():
            illegal = ~legal
            if self.illegal_action == "raise":
                i = int(np.flatnonzero(illegal)[0])
                self._illegal_actions.judge(tables, state.game(i), given[i].item(), f"{self.rules.name}: game {i}")
            safe = np.where(legal, safe, 0)  # illegal games: a placeholder keep, undone below

        # the dice: one sequence index per game (fair dice), else faces from the source(s)
        keep_bits = np.take(self._keep_bits, safe)
        faces: np.ndarray | None
        if self._sources is not None:
            faces, draw = self._scripted_faces(state, safe, legal), None
            new_roll = reroll_batch(state.roll, keep_bits, faces)
        else:
            faces, draw = self._draw(self.num_envs)
            if draw is not None:
                new_roll = reroll_sequence(state.roll, keep_bits, draw)
            else:
                new_roll = reroll_batch(state.roll, keep_bits, np.asarray(faces, dtype=np.int64))
        if illegal is not None:
            illegal_rows = np.flatnonzero(illegal)
            before = [field[illegal_rows].copy() for field in state]
        points, over = game.advance(tables, state, safe, new_roll, self._box_full)  # placeholders are keeps: 0 points
        self._score += points
        reward = points.astype(np.float64)
        terminated = over
        if illegal is not None:  # these games end unchanged
            for field, old in zip(state, before):
                field[illegal_rows] = old
            reward[illegal_rows] = self.illegal_penalty
            terminated[illegal_rows] = True
        if any_ended:  # NEXT_STEP: these games start over now
            rows = np.flatnonzero(ended)
            self._reset_rows(state, rows, self._first_rolls(rows, *_take_rows(rows, faces, draw)))
            self._score[rows] = 0  # fresh games
            reward[rows] = 0.0
            terminated[rows] = False

        info: dict[str, Any] = {}
        done_rows = np.flatnonzero(terminated)
        if self.autoreset_mode == AutoresetMode.SAME_STEP and len(done_rows):
            info["final_obs"] = self._final_obs(state, done_rows)
            info["_final_obs"] = terminated.copy()
            # an ended game has no legal action, however it ended
            final_mask = np.zeros((self.num_envs, n_actions), dtype=np.int8)
            info["final_info"] = self._info(
                state, final_mask, terminated, done_rows, illegal, given, present=terminated
            )
            info["_final_info"] = terminated.copy()
            self._reset_rows(state, done_rows, self._first_rolls(done_rows, *_take_rows(done_rows, faces, draw)))
            self._score[done_rows] = 0  # fresh games
            self._ended[:] = False
            self._any_ended = False
            mask, box_state = self._update_mask(state)
            info.update(self._info(state, mask, None, (), None, actions))
        else:
            self._ended = terminated.copy()
            self._any_ended = len(done_rows) > 0
            mask, box_state = self._update_mask(state)
            if illegal is not None:  # ended by an illegal action: nothing is legal, as after a normal end
                self._clear_masks(illegal)
                mask[illegal] = 0
            info.update(self._info(state, mask, terminated, done_rows, illegal, given))
        obs = self._observe(state, box_state)
        return obs, reward, terminated, np.zeros(self.num_envs, dtype=bool), info

    def action_masks(self) -> np.ndarray:
        """The legal actions of every game, ``(N, 32 + n_boxes)`` ``np.int8`` (sb3-contrib's hook)."""
        if self._mask is None and self._mask_index is None:
            raise gym.error.ResetNeeded("call reset() before action_masks()")
        if self._mask_index is not None:
            assert self._masks.rows is not None  # a mask index exists with the mask table only
            return np.take(self._masks.rows, self._mask_index, axis=0)
        assert self._mask is not None  # checked above
        return self._mask.copy()

    # gymnasium types render() with a method-level TypeVar (RenderFrame); the frames here are texts
    def render(self) -> tuple[str, ...] | None:  # type: ignore[override]
        """One text per game (``render_mode="ansi"``)."""
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode='ansi'")
            return None
        if self.state is None:
            raise gym.error.ResetNeeded("call reset() before render()")
        from dice_poker_env.envs.render import render_ansi

        return tuple(render_ansi(self.tables, self.state.game(i)) for i in range(self.num_envs))

    @property
    def score(self) -> np.ndarray:
        """The final score so far of every game, ``(N,)`` int64."""
        return self._score.copy()

    def snapshot(self) -> dict[str, Any]:
        """Every game of the batch and the random generator, as NumPy arrays and plain dicts.

        What a checkpoint needs to continue the batch exactly (:meth:`restore`):
        it holds no object of this package, so a later version with moved or
        renamed modules still reads it. Default fair dice only.
        """
        if self.state is None:
            raise gym.error.ResetNeeded("call reset() before snapshot()")
        if not self._fast_dice or self._sources is not None:
            raise ValueError("snapshot(): only a batch rolling the default fair dice (RandomDice) can be saved")
        return {
            "snapshot_format": 1,
            "rules_fingerprint": self.rules.fingerprint,
            "num_envs": self.num_envs,
            "state": {name: value.copy() for name, value in self.state._asdict().items()},
            "ended": self._ended.copy(),
            "score": self._score.copy(),
            "box_full": None if self._box_full is None else self._box_full.copy(),
            "mask_index": None if self._mask_index is None else self._mask_index.copy(),
            "mask": None if self._mask is None else self._mask.copy(),
            "np_random": self.np_random.bit_generator.state,
        }

    def restore(self, snapshot: Mapping[str, Any]) -> None:
        """Continue from :meth:`snapshot` (of a batch of the same ruleset and size)."""
        if not isinstance(snapshot, Mapping) or snapshot.get("snapshot_format") != 1:
            given = snapshot.get("snapshot_format") if isinstance(snapshot, Mapping) else type(snapshot).__name__
            raise ValueError(f"restore(): not a vector-env snapshot of format 1 (format {given!r})")
        missing = [key for key in _SNAPSHOT_KEYS if key not in snapshot]
        if missing:
            raise ValueError(f"restore(): the snapshot lacks {', '.join(missing)} (damaged or hand-made)")
        if snapshot["rules_fingerprint"] != self.rules.fingerprint or snapshot["num_envs"] != self.num_envs:
            raise ValueError(
                f"restore(): the snapshot is of another ruleset or batch size "
                f"({snapshot['num_envs']} games), not {self.rules.name} with {self.num_envs}"
            )
        if not self._fast_dice or self._sources is not None:
            raise ValueError("restore(): only a batch rolling the default fair dice (RandomDice) can be restored")
        generator_state = snapshot["np_random"]
        name = generator_state.get("bit_generator") if isinstance(generator_state, Mapping) else None
        if name not in BIT_GENERATORS:  # (never a name looked up in numpy from a file unchecked)
            raise ValueError(f"restore(): the snapshot names no known bit generator ({name!r})")
        fields = snapshot["state"]
        if not isinstance(fields, Mapping) or set(fields) != set(BatchState._fields):
            given = sorted(fields) if isinstance(fields, Mapping) else type(fields).__name__
            raise ValueError(f"restore(): the snapshot's state holds {given}, not {', '.join(BatchState._fields)}")
        arrays = {key: np.asarray(value) for key, value in fields.items()}
        arrays |= {key: np.asarray(snapshot[key]) for key in ("ended", "score", "box_full", "mask_index", "mask")}
        for key, array in arrays.items():
            if array.ndim == 0 and array.item() is None and key in ("box_full", "mask_index", "mask"):
                continue
            if array.ndim == 0 or array.shape[0] != self.num_envs or array.dtype.kind not in "biu":
                raise ValueError(
                    f"restore(): the snapshot's {key} is not one integer row a game ({array.dtype} {array.shape}, "
                    f"{self.num_envs} games)"
                )
        self.state = BatchState(**{key: np.array(value) for key, value in fields.items()})
        self._ended, self._score = np.array(snapshot["ended"]), np.array(snapshot["score"])
        self._any_ended = bool(self._ended.any())
        self._box_full = None if snapshot["box_full"] is None else np.array(snapshot["box_full"])
        self._mask_index = None if snapshot["mask_index"] is None else np.array(snapshot["mask_index"])
        self._mask = None if snapshot["mask"] is None else np.array(snapshot["mask"])
        rng = np.random.Generator(getattr(np.random, name)())
        rng.bit_generator.state = generator_state
        self._np_random = rng

    # -------------------------------------------------------------- helpers
    def _draw(self, games: int) -> tuple[np.ndarray | None, np.ndarray | None]:
        """``(faces, sequence)``: fresh dice for ``games`` games from the batch's dice source.

        Fair dice draw one index into the 6**5 face sequences per game
        (``SEQUENCE_FACES[sequence]`` are the faces, never built: the rolls come
        from tables indexed by the sequence) and return ``(None, sequence)``;
        another single source returns ``((games, 5) faces, None)``. With per-game
        sources there is nothing to draw here (``(None, None)``).
        """
        if self._sources is not None:
            return None, None
        if self._fast_dice:
            return None, self.np_random.integers(0, N_SEQUENCES, size=games)
        assert isinstance(self.dice_source, DiceSource)  # one source for the batch (no per-game sources)
        return np.asarray(self.dice_source.roll(self.np_random, (games, N_DICE))), None

    def _first_rolls(self, rows: np.ndarray, faces: np.ndarray | None, draw: np.ndarray | None) -> np.ndarray:
        """Roll indices of the new games in ``rows`` from their faces (and draw), both given for ``rows`` only.

        With per-game sources each game rolls its five faces now instead.
        """
        if self._sources is not None:  # five faces each, as the single env rolls them
            if not len(rows):
                return np.zeros(0, dtype=np.int64)
            faces = np.stack([np.asarray(self._sources[i].roll(self.np_random, (N_DICE,))) for i in rows])
            return roll_index_of_sorted(np.sort(faces, axis=1))
        if draw is not None:
            return ROLL_OF_SEQUENCE[draw]
        assert faces is not None  # one source without a draw gives faces
        return roll_index_of_sorted(np.sort(faces, axis=1))

    @staticmethod
    def _total(state: BatchState, rows: np.ndarray) -> np.ndarray:
        """Final score so far of games ``rows`` (written points plus bonuses)."""
        return state.scores[rows].sum(axis=1, dtype=np.int64) + state.bonus[rows]

    def _update_mask(self, state: BatchState) -> tuple[np.ndarray, np.ndarray]:
        """Remember the legal actions of ``state``: ``(fresh mask the caller may hand out, five-kind box state)``.

        The five-kind box state (the observation's ``five_kind_box``) is computed
        once here: whether the box holds points picks the mask, and the next
        step's :func:`~dice_poker_env.engine.game.advance` needs it too. With the
        engine's mask tables a game's mask is a row index (two lookups).
        """
        box_state = game.five_kind_box_state(self.tables, state.filled, state.scores)
        full = box_state == 2
        self._box_full = full
        if not self._masks.tabled:
            mask = self._masks.of_batch(state, full)
            self._mask, self._mask_index = mask.copy(), None
            return mask, box_state
        index = self._masks.index(state, full)
        self._mask_index = index
        assert self._masks.rows is not None  # tabled
        return np.take(self._masks.rows, index, axis=0), box_state

    def _clear_masks(self, games: np.ndarray) -> None:
        """Make the remembered masks of ``games`` (a bool mask) all zeros (their episode is over)."""
        if self._mask_index is not None:
            self._mask_index[games] = 0  # row 0 of the mask table: no legal box, no reroll left
        else:
            assert self._mask is not None  # one of the two is set by _update_mask
            self._mask[games] = 0

    def _observe(self, state: BatchState, box_state: np.ndarray) -> Observation:
        """The observations of ``state`` (``box_state``: its five-kind box state)."""
        if self.obs_mode == "dict":
            return observe_dict_batch(self.tables, state, box_state=box_state)
        return observe_batch(self.tables, state, self.obs_mode)

    def _final_obs(self, state: BatchState, rows: np.ndarray) -> np.ndarray:
        """``info["final_obs"]``: the observations of games ``rows`` in an ``(N,)`` object array (``None`` elsewhere).

        Gymnasium's format holds one observation object per ended game, so one is
        built per game here (rows of one batched observation, no per-game encoding):
        the one Python-level pass over games on the default path, as the format needs
        one object per game.
        """
        final_obs = np.full(self.num_envs, None, dtype=object)
        ended = observe_batch(self.tables, state.take(rows), self.obs_mode)
        if self.obs_mode == "flat":
            final_obs[rows] = np.fromiter(ended, dtype=object, count=len(rows))
            return final_obs
        assert isinstance(ended, dict)  # obs_mode "dict"
        keys = tuple(ended)  # DICT_KEYS
        columns = [list(value) for value in ended.values()]  # rows (views) or NumPy scalars
        games = (dict(zip(keys, values)) for values in zip(*columns))
        final_obs[rows] = np.fromiter(games, dtype=object, count=len(rows))
        return final_obs

    def _is_legal(self, actions: np.ndarray) -> np.ndarray:
        """Whether each game's (in-range) action is legal now."""
        if self._mask_index is not None:  # (uint16 row index: the product is taken in int64)
            offset = np.multiply(self._mask_index, self.tables.n_actions, dtype=np.int64)
            assert self._masks.legal is not None  # tabled
            return np.take(self._masks.legal, np.add(offset, actions, out=offset))
        assert self._mask is not None  # one of the two is set by _update_mask
        return np.take(self._mask, self._flat_rows + actions) != 0

    def _reset_rows(
        self,
        state: BatchState,
        rows: np.ndarray,
        fresh: np.ndarray,
        options: Mapping[str, Any] | None = None,
        positions: Sequence[Mapping[str, Any] | None] | None = None,
    ) -> None:
        """Start new games in ``rows`` of ``state`` (in place): fresh, or given positions."""
        if not len(rows):
            return
        filled, scores, upper_total, bonus, roll, rolls_left = state
        filled[rows] = 0
        scores[rows] = 0
        upper_total[rows] = 0
        bonus[rows] = 0
        roll[rows] = fresh
        rolls_left[rows] = game.ROLLS_PER_TURN - 1
        if not options and positions is None:
            return
        for j, i in enumerate(rows):
            opts = options if positions is None else positions[i]
            if not opts:
                continue
            one = position_from_options(self.tables, opts, int(fresh[j]))  # a GameState
            for field, value in zip(state, one):
                field[i] = value

    def _scripted_faces(self, state: BatchState, actions: np.ndarray, legal: np.ndarray) -> np.ndarray:
        """Faces drawn game by game from per-game sources, exactly as the single env draws."""
        faces = np.ones((self.num_envs, N_DICE), dtype=np.int64)
        turns = state.turn
        sources = self._sources
        assert sources is not None  # called with per-game sources only
        needs: list[tuple[int, list[int]]] = []  # (game, the positions it rolls)
        for i in np.flatnonzero(legal & ~self._ended).tolist():
            a = int(actions[i])
            if a < N_KEEP_ACTIONS:
                needs.append((i, list(REROLLED_POSITIONS[a])))
            elif turns[i] + 1 < self.tables.turns:
                needs.append((i, list(range(N_DICE))))
        for i, positions in needs:  # a script that runs out stops the step before any game has drawn
            source = sources[i]
            if isinstance(source, ScriptedDice) and not source.then_random and source.remaining < len(positions):
                raise DiceExhaustedError(
                    f"game {i}: scripted dice exhausted: {len(positions)} faces needed, {source.remaining} left"
                )
        for i, positions in needs:
            faces[i, positions] = sources[i].roll(self.np_random, (len(positions),))
        return faces

    def _info(
        self,
        state: BatchState,
        mask: np.ndarray,
        terminated: np.ndarray | None,
        done_rows: Sequence[int] | np.ndarray,
        illegal: np.ndarray | None,
        actions: np.ndarray,
        present: np.ndarray | None = None,
    ) -> dict[str, Any]:
        """The single env's info keys, batched (``present``: games the info is for, default all)."""
        present = self._all if present is None else present
        info: dict[str, Any] = {
            "action_mask": mask,
            "_action_mask": present.copy(),
            "score": self._score.copy(),
            "_score": present.copy(),
        }
        if terminated is None or not len(done_rows):
            return info
        done = terminated.copy()
        n = self.tables.n_boxes
        final_score = np.zeros(self.num_envs, dtype=np.int64)
        final_score[done_rows] = self._score[done_rows]
        info["final_score"], info["_final_score"] = final_score, done
        # rows of two box-major (n, N) arrays (each box's values contiguous): written
        # points and "filled" flags of the ended games
        ended_scores = np.zeros((n, self.num_envs), dtype=np.int64)
        ended_scores[:, done_rows] = state.scores[done_rows].T
        ended_filled = np.zeros((n, self.num_envs), dtype=bool)
        ended_filled[:, done_rows] = ((state.filled[done_rows] >> np.arange(n)[:, None]) & 1) == 1
        scorecard: dict[str, Any] = {}
        for k, name in enumerate(self.rules.box_names):
            scorecard[name] = ended_scores[k]
            scorecard[f"_{name}"] = ended_filled[k]
        info["scorecard"], info["_scorecard"] = scorecard, done.copy()
        if illegal is not None:
            info["illegal_action"], info["_illegal_action"] = illegal.copy(), illegal.copy()
            info["illegal_reason"], info["_illegal_reason"] = (
                self._illegal_reasons(state, actions, illegal),
                illegal.copy(),
            )
        return info

    def _illegal_reasons(self, state: BatchState, actions: np.ndarray, illegal: np.ndarray) -> np.ndarray:
        """Why each game's action is illegal (``None`` where it is not), in the single env's words (``illegal_reason``).

        Most reasons depend on the action alone (an unmasked agent's usual mistakes): those are looked up in
        ``_reason_text`` (each worded once, by ``illegal_reason`` on the first game that needs it); the rest (out of
        range, the upper section first, the joker rule) are worded game by game.
        """
        n_actions = self.tables.n_actions
        rows = np.flatnonzero(illegal)
        given = actions[rows]
        in_range = (given >= 0) & (given < n_actions)
        acts = np.where(in_range, given, 0).astype(np.int64)
        keep = in_range & (acts < N_KEEP_ACTIONS)
        box = np.maximum(acts - N_KEEP_ACTIONS, 0)
        filled = in_range & ~keep & ((state.filled[rows] >> box) & 1 == 1)
        kind = np.where(
            keep & (acts == KEEP_ALL),
            0,
            np.where(keep & (state.rolls_left[rows] == 0), 1, np.where(filled, 2, -1)),
        )
        key = np.where(kind >= 0, kind * n_actions + acts, -1)
        table = self._reason_text
        wanted = np.unique(key[key >= 0])
        for k in wanted[~self._reason_known[wanted]]:  # (the first time each occurs)
            i = int(rows[np.flatnonzero(key == k)[0]])
            table[k] = illegal_reason(self.tables, state.game(i), int(k % n_actions))
            self._reason_known[k] = True
        reasons = np.full(self.num_envs, None, dtype=object)
        looked_up = key >= 0
        reasons[rows[looked_up]] = table[key[looked_up]]
        for i in rows[~looked_up]:
            reasons[i] = illegal_reason(self.tables, state.game(int(i)), actions[i].item())
        return reasons
