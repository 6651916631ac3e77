"""The periodic evaluation of every trainer family, written once.

Every ``eval_freq`` steps a trainer plays ``eval_episodes`` fixed games (the seed ``seed + EVAL_SEED_OFFSET``,
the same games at every evaluation) with its greedy policy and hands the final scores to
:meth:`Evaluation.record`, which writes the learning curve's row to ``evaluations.csv``, the scalars to
TensorBoard (or SB3's logger), one line to the console, and says whether the policy is the best so far (the
trainer then saves it as ``best_model``). The batched trainers, behaviour cloning and RLlib's PPO export a NumPy
:class:`~agents.policy.player.PolicyAgent` and call :func:`evaluate_trainer` (their games: :func:`play`, all at
once in the batched env); SB3's callback plays its own model and records through the same
:meth:`Evaluation.record` (``agents/training/sb3.py``).
"""

from __future__ import annotations

import csv
import io
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from dice_poker_env.envs.vector import DicePokerVectorEnv
from dice_poker_env.files import write_whole
from dice_poker_env.rules import Rules

EVAL_SEED_OFFSET = 1_000_003  # evaluation games: seed + this, the same games at every evaluation
CSV_COLUMNS = ("timesteps", "mean_score", "std_score", "percent_of_optimal", "seconds")
#: self-play runs (``players: 2``) also record the win rate of the evaluation's duplicate games
WIN_RATE_COLUMN = "win_rate"


def play(agent: Any, rules: Rules, games: int, seed: int) -> np.ndarray:
    """Final scores of ``games`` seeded games played by ``agent`` (``act_batch`` over flat observations and
    masks), all at once in the batched env."""
    env = DicePokerVectorEnv(games, rules, obs_mode="flat")
    obs, info = env.reset(seed=seed)
    scores = np.zeros(games, dtype=np.int64)
    over = np.zeros(games, dtype=bool)
    while not over.all():
        obs, _, terminated, _, info = env.step(agent.act_batch(obs, info["action_mask"]))
        first = terminated & ~over  # a game's later episodes (autoreset) are not counted
        if first.any():
            scores[first] = info["final_score"][first]
            over |= terminated
    return scores


#: the former name of :func:`play`
evaluate = play


class Evaluation:
    """The learning curve of one run: ``evaluations.csv``, scalars, console lines and the best mean so far.

    Args:
        run_dir: the run folder (``evaluations.csv`` is written there).
        optimal: the solver's optimal expected score (percent of optimal), or None.
        log: where the console lines go.
    """

    def __init__(self, run_dir: str | os.PathLike, optimal: float | None, log: Callable[[str], None] = print) -> None:
        self.csv = Path(run_dir) / "evaluations.csv"
        self.optimal, self.log = optimal, log
        self.best = -math.inf  #: the best mean score (self-play: win rate) so far (kept in checkpoints)
        #: self-play: the evaluation's opponent (built at the first evaluation) and its name
        self.opponent: Any = None
        self.opponent_name = ""

    def record(
        self,
        timesteps: int,
        scores: np.ndarray,
        seconds: float,
        scalar: Callable[[str, float], None] | None = None,
        win_rate: float | None = None,
    ) -> bool:
        """Record one evaluation's final ``scores`` at ``timesteps`` (``seconds`` of training so far);
        ``scalar(name, value)`` logs ``eval/mean_score``, ``eval/std_score`` and ``eval/percent_of_optimal``.
        ``win_rate``: a self-play run's win rate in the evaluation's two-player games (``eval/win_rate`` and the
        CSV's ``win_rate`` column; the best policy is then the one that wins most). Returns whether the policy
        is the best so far (the caller then saves it as the best)."""
        mean, std = float(np.mean(scores)), float(np.std(scores))
        percent = 100.0 * mean / self.optimal if self.optimal else None
        new = not self.csv.exists()
        self.csv.parent.mkdir(parents=True, exist_ok=True)
        extra = [] if win_rate is None else [f"{win_rate:.5f}"]
        with self.csv.open("a", newline="") as handle:
            out = csv.writer(handle)
            if new:
                out.writerow(CSV_COLUMNS + (() if win_rate is None else (WIN_RATE_COLUMN,)))
            out.writerow(
                [timesteps, f"{mean:.4f}", f"{std:.4f}", "" if percent is None else f"{percent:.4f}", f"{seconds:.1f}"]
                + extra
            )
        if scalar is not None:
            scalar("eval/mean_score", mean)
            scalar("eval/std_score", std)
            if percent is not None:
                scalar("eval/percent_of_optimal", percent)
            if win_rate is not None:
                scalar("eval/win_rate", win_rate)
        text = f"[eval] {timesteps:>11,} steps: mean score {mean:7.2f} ± {std:5.2f}"
        if percent is not None:
            text += f"  ({percent:5.1f}% of optimal {self.optimal:.2f})"
        if win_rate is not None:
            text += f"  win rate {100 * win_rate:5.2f}% against {self.opponent_name}"
        self.log(text)
        value = mean if win_rate is None else win_rate
        best = value > self.best
        self.best = max(self.best, value)
        return best

    def rewind(self, timesteps: int) -> list[dict[str, str]]:
        """A resumed run: drop the rows past ``timesteps`` (evaluated after the checkpoint it resumes
        from; they will be evaluated again) and return the rows kept.

        The file is rewritten whole under a temporary name, then renamed into place.
        """
        if not self.csv.is_file():
            return []
        with self.csv.open(newline="") as handle:
            reader = csv.DictReader(handle)
            columns, rows = reader.fieldnames or list(CSV_COLUMNS), list(reader)
        kept = [row for row in rows if row.get("timesteps", "").isdigit() and int(row["timesteps"]) <= timesteps]
        if len(kept) < len(rows):
            text = io.StringIO(newline="")
            out = csv.DictWriter(text, fieldnames=columns)
            out.writeheader()
            out.writerows(kept)
            write_whole(self.csv, text.getvalue())
        return kept

    def recorded(self, timesteps: int) -> bool:
        """Whether ``evaluations.csv`` already has a row at ``timesteps``."""
        if not self.csv.is_file():
            return False
        with self.csv.open(newline="") as handle:
            return any(row.get("timesteps") == str(timesteps) for row in csv.DictReader(handle))


class Evaluated(Protocol):
    """A trainer whose greedy policy is a NumPy policy agent (batched trainers, BC, RLlib's PPO)."""

    rules: Rules
    config: Any
    run_dir: Path
    evaluation: Evaluation
    train_seconds: float

    @property
    def num_timesteps(self) -> int: ...

    def agent(self) -> Any: ...

    def save_policy(self, path: str | os.PathLike) -> Path: ...


def evaluate_trainer(trainer: Evaluated, writer: Any = None) -> float:
    """One evaluation of ``trainer``'s current policy (:func:`play` on the fixed evaluation games, then
    :meth:`Evaluation.record`; TensorBoard scalars through ``writer``); a new best is saved as
    ``best_model.npz``. Returns the mean score.

    A self-play policy (``players: 2``) plays ``eval_episodes`` duplicate two-player games
    (:func:`agents.evaluation.match.play_deals`, the same deals at every evaluation) against ``optimal``
    (``greedy`` where the run has no solution); its scores there are the mean score's, and its win rate
    picks the best policy."""
    config, step = trainer.config, trainer.num_timesteps
    seed = config.seed + EVAL_SEED_OFFSET
    win_rate = None
    if getattr(config, "players", 1) > 1:
        scores, win_rate = _play_match(trainer, seed)
    else:
        scores = play(trainer.agent(), trainer.rules, config.eval_episodes, seed)
    scalar = None if writer is None else (lambda name, value: writer.add_scalar(name, value, step))
    if trainer.evaluation.record(step, scores, trainer.train_seconds, scalar, win_rate=win_rate):
        trainer.save_policy(trainer.run_dir / "best_model.npz")
    return float(np.mean(scores))


def _play_match(trainer: Evaluated, seed: int) -> tuple[np.ndarray, float]:
    """A self-play policy's evaluation: its final scores and win rate in duplicate games against the
    evaluation's opponent (built once per run)."""
    from agents.evaluation.match import play_deals, summarize
    from agents.players.registry import make_agent

    evaluation = trainer.evaluation
    if evaluation.opponent is None:
        evaluation.opponent_name = "optimal" if evaluation.optimal else "greedy"
        evaluation.opponent = make_agent(evaluation.opponent_name, trainer.rules)
    deals = max(1, trainer.config.eval_episodes // 2)
    names = ["model", evaluation.opponent_name]
    scores = play_deals(trainer.rules, [trainer.agent(), evaluation.opponent], seed, deals, names=names)
    return scores[:, [0, 1], [0, 1]].ravel(), float(summarize(scores)["win_rate"])
