"""Check a submission's interface before it is handed in: ``dice-poker check my_agent.py:MyAgent``.

:func:`check` plays a few games (default :data:`GAMES`) with the submission in the same sandbox and
under the same limits as grading (:class:`agents.course.sandbox.SandboxedAgent`), and reports only
what would make grading fail: it cannot be loaded, ``act`` is missing or raises, returns something
that is not an action or an illegal action, is too slow, or prints to standard output. It computes no
regret and needs no solver, so it takes seconds. How well the agent plays is ``dice-poker grade``'s
business.

The games are seeded by ``seed`` (:func:`agents.evaluation.benchmark.game_seeds`, as grading): a
practice seed, never the hidden grading seed.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from typing import Any

from agents.course.grade_report import failure_where, summary_text_line
from agents.course.isolation import isolation_method
from agents.course.sandbox import Failure, Limits, SandboxedAgent
from agents.evaluation.benchmark import game_seeds
from dice_poker_env.envs.single import DicePokerEnv
from dice_poker_env.rules import Rules, load_rules

#: games a check plays by default
GAMES = 3
#: the most games a check plays
MOST_GAMES = 10_000
#: failures listed in full (the rest are counted)
LISTED = 5
#: the failure kinds of a decision that was answered, wrongly (the others end it without an answer)
ANSWERS = ("illegal", "malformed")


@dataclass
class CheckResult:
    """What :func:`check` found.

    Attributes:
        submission: the agent spec checked.
        rules: the ruleset's name.
        games: the games asked for.
        isolation: ``"bubblewrap ..."`` or ``"none"`` (unisolated).
        loaded: whether the submission loaded.
        load_seconds: the time it took to start and load.
        games_played: games in which it was asked for decisions.
        games_failed: games a failure ended.
        decisions: decisions it answered (an illegal or malformed answer too).
        slowest: the slowest answered decision, in seconds.
        unanswered: per failure kind, decisions a failure ended without an answer (a timeout, an exception, a crash):
            not timed, so not in ``slowest``.
        limits: the limits it ran under.
        failures: every recorded failure (loading included).
        failure_count: all failures, recorded or not.
        printed: bytes it wrote to standard output.
        printed_sample: the start of it.
        stderr_bytes: bytes it wrote to standard error.
        load_output: the bytes it had written to standard output and error once loaded: written once, with one
            game played not multiplied by the grading's games.
        first_game_output: the bytes it had written to standard output and error by the end of the first game
            (loading included): what it writes once, which the projection to the grading's games leaves out.
        graded_games: the games of the grading the check prepares for (the config's), to project the output to.
        solver_imports: the solver modules it imported (or tried to).
        solver: the solver policy.
    """

    submission: str
    rules: str
    games: int
    isolation: str
    loaded: bool = False
    load_seconds: float = 0.0
    games_played: int = 0
    games_failed: int = 0
    decisions: int = 0
    slowest: float = 0.0
    unanswered: dict[str, int] = field(default_factory=dict)
    limits: Limits = field(default_factory=Limits)
    failures: list[Failure] = field(default_factory=list)
    failure_count: int = 0
    printed: int = 0
    printed_sample: str = ""
    stderr_bytes: int = 0
    load_output: tuple[int, int] | None = None
    first_game_output: tuple[int, int] | None = None
    graded_games: int | None = None
    solver_imports: list[str] = field(default_factory=list)
    solver: str = "allow"

    @property
    def problems(self) -> list[str]:
        """One line per interface problem (empty: the interface is fine)."""
        groups: dict[tuple[str, str], list[Failure]] = {}
        for failure in self.failures:  # the same failure in every game: one line (its numbers aside)
            groups.setdefault((str(failure.kind), re.sub(r"\d+", "#", failure.message)), []).append(failure)
        lines = []
        for (kind, _), same in list(groups.items())[:LISTED]:
            message = same[0].message
            where = (
                failure_where(same[0].to_json())
                if len(same) == 1
                else f"{len(same)} games, first {failure_where(same[0].to_json())}"
            )
            line = _line_in_submission(same[0].traceback, self.submission)
            lines.append(f"{kind} ({where}): {message}" + (f" (at {line})" if line else ""))
        more = self.failure_count - sum(len(same) for same in list(groups.values())[:LISTED])
        if more > 0:
            lines.append(f"... and {more} more failure(s)")
        if self.printed:
            lines.append(
                f"printed {self.printed} bytes to standard output (agents should print nothing: remove the prints, "
                f"or log at debug level); the start: {self.printed_sample[:80]!r}"
            )
        projected = self.projected_output
        if projected is not None and projected > self.limits.output_kb * 1024:
            growth = self.output_growth
            rate = (
                f", {_size(growth)} a game after the first"
                if growth is not None
                else " (one game: play more to tell a one-time write from one that grows)"
            )
            lines.append(
                f"wrote {self.printed} bytes to standard output and {self.stderr_bytes} to standard error in "
                f"{self.games_played} game(s){rate}: at that rate the grading's {self.graded_games} games write about "
                f"{_size(projected)} to one of them, past the limit of {self.limits.output_kb} KiB for the whole "
                "grading, after which every game fails; write less (logging's debug and info are off by default)"
            )
        if self.solver_imports and self.solver == "flag":
            lines.append(
                f"imported the library's solver or agents ({', '.join(self.solver_imports)}): grading reports it"
            )
        named = any(name in line for line in lines for name in self.solver_imports)  # (a load failure names it)
        if self.solver_imports and self.solver == "forbid" and not named:  # it caught the ImportError
            lines.append(
                f"tried to import the library's solver or agents ({', '.join(self.solver_imports)}), which this grading "
                "forbids: grading reports the attempt"
            )
        return lines

    @property
    def output_growth(self) -> float | None:
        """The bytes a game adds to the busier of standard output and error after the first game (what loading
        and the first game write once is not in it); ``None`` with fewer than two games played."""
        if self.first_game_output is None or self.games_played < 2:
            return None
        after = self.games_played - 1
        return max(self.printed - self.first_game_output[0], self.stderr_bytes - self.first_game_output[1]) / after

    @property
    def projected_output(self) -> float | None:
        """The bytes the grading's games would write to the busier of standard output and error: what loading and
        the first game wrote, then each further game at the rate of the games after the first here (a log line
        written once is not multiplied; with one game played, what loading wrote once and that game's output as
        the rate). ``None`` without the grading's game count or a game played."""
        if self.graded_games is None or not self.games_played:
            return None
        if self.first_game_output is None or self.games_played < 2:
            once = self.load_output or (0, 0)
            return max(
                first + (total - first) * self.graded_games / self.games_played
                for first, total in zip(once, (self.printed, self.stderr_bytes))
            )
        after = self.games_played - 1
        return max(
            first + (total - first) * (self.graded_games - 1) / after
            for first, total in zip(self.first_game_output, (self.printed, self.stderr_bytes))
        )

    @property
    def ok(self) -> bool:
        """Whether the interface is fine (no problem at all)."""
        return not self.problems


def check(
    submission: str,
    rules: str | os.PathLike[str] | Rules = "yahtzee",
    *,
    games: int = GAMES,
    seed: int = 0,
    limits: Limits | None = None,
    isolated: bool = True,
    solver: str = "allow",
    graded_games: int | None = None,
    own_folder: bool = True,
) -> CheckResult:
    """Play ``games`` games of ``rules`` with ``submission`` in the grading sandbox; its interface problems.

    Args:
        submission: the agent spec, e.g. ``"my_agent.py:MyAgent"``.
        rules: ruleset name, rules file or :class:`Rules`.
        games: games to play (at least 1).
        seed: the games' seed (a practice seed).
        limits: the grading limits (:class:`agents.course.sandbox.Limits`).
        isolated: run the submission isolated, as grading does (``False``: trusted code only).
        solver: the solver policy, as grading's: ``allow``, ``flag`` or ``forbid``.
        graded_games: the grading's games (the config's): output that would pass the limit over them is a problem.
        own_folder: whether the files beside the submission are its author's (``own_folder`` of
            :class:`agents.course.sandbox.SandboxedAgent`).

    Returns:
        A :class:`CheckResult`.

    Raises:
        ValueError: a bad argument, spec or ruleset, or no isolation here while ``isolated``.
    """
    rules = load_rules(rules)
    if isinstance(games, bool) or not isinstance(games, int) or not 1 <= games <= MOST_GAMES:
        raise ValueError(f"games must be an integer from 1 to {MOST_GAMES}, got {games!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    limits = limits or Limits()
    agent = SandboxedAgent(
        submission,
        rules,
        seed=seed,
        limits=limits,
        isolated=isolated,
        solver=solver,
        start=False,
        own_folder=own_folder,
    )
    result = CheckResult(
        submission=submission,
        rules=rules.name,
        games=games,
        isolation=isolation_method() if agent.isolated else "none",
        limits=limits,
        solver=solver,
        graded_games=graded_games,
    )
    env = DicePokerEnv(rules)
    try:
        start = time.monotonic()
        agent.start()
        result.load_seconds = time.monotonic() - start
        result.loaded = agent.load_error is None
        result.load_output = (agent.printed.bytes, agent.printed.stderr_bytes)
        if result.loaded:
            for game_seed in game_seeds(seed, games):
                agent.reset()
                if not agent.playing:
                    break
                result.games_played += 1
                observation, info = env.reset(seed=int(game_seed))
                done = agent.game_failure is not None  # (its reset failed: no decision asked)
                while not done:
                    start = time.monotonic()
                    action = agent.act(observation, info["action_mask"])
                    seconds = time.monotonic() - start
                    kind = agent.game_failure
                    if kind is not None and kind not in ANSWERS:  # the game ends here: a failure, not an answer
                        result.unanswered[kind] = result.unanswered.get(kind, 0) + 1
                        break
                    result.decisions += 1
                    result.slowest = max(result.slowest, seconds)
                    if kind is not None:  # an illegal or malformed answer ends the game too
                        break
                    observation, _, done, _, info = env.step(action)
                result.games_failed += agent.game_failure is not None
                if result.games_played == 1:
                    result.first_game_output = (agent.printed.bytes, agent.printed.stderr_bytes)
    finally:
        agent.close()
    result.failures = ([agent.load_error] if agent.load_error is not None else []) + agent.failures
    result.failure_count = agent.failure_count + (agent.load_error is not None)
    result.printed = agent.printed.bytes
    result.printed_sample = agent.printed.sample
    result.stderr_bytes = agent.printed.stderr_bytes
    result.solver_imports = list(agent.solver_imports)
    return result


def _line_in_submission(traceback: str, submission: str) -> str | None:
    """``my_agent.py:12 in act``: the innermost frame of ``traceback`` in the submission's own file, its path as given
    (the sandbox's messages name it so) or the absolute one, never another file of its name (``pool.py`` of
    ``multiprocessing`` for a submission ``pool.py``), or ``None``."""
    from agents.players.registry import parse_agent_spec

    try:
        spec = parse_agent_spec(submission)
    except ValueError:
        return None
    if spec is None or not spec.is_file or not traceback:
        return None
    name, own = os.path.basename(spec.source), os.path.abspath(spec.source)
    frames = [f for f in re.findall(r'File "([^"]+)", line (\d+), in (\S+)', traceback) if os.path.abspath(f[0]) == own]
    return f"{name}:{frames[-1][1]} in {frames[-1][2]}" if frames else None


def _size(count: float) -> str:
    """A byte count for people: ``3.4 MB``, ``820 KB``."""
    return f"{count / 1e6:.1f} MB" if count >= 1e6 else f"{count / 1e3:.0f} KB"


def check_text(result: CheckResult) -> str:
    """The result on one screen (control characters from the submission replaced by ``?``)."""
    isolation = f"isolated ({result.isolation})" if result.isolation != "none" else "UNISOLATED"
    verdict = "interface OK" if result.ok else f"{len(result.problems)} interface problem(s)"
    games = f"{result.games} game{'s' if result.games != 1 else ''}"
    lines = [f"check {result.submission} on {result.rules} ({games}, {isolation}): {verdict}"]
    limits = result.limits
    if result.loaded:
        lines.append(
            f"  loaded in {result.load_seconds:.2f} s (limit {limits.load_seconds:g} s); "
            f"{result.games_played} game(s) played, {result.games_played - result.games_failed} finished"
        )
        unanswered = sum(result.unanswered.values())
        kinds = ", ".join(f"{count} {kind}" for kind, count in sorted(result.unanswered.items()))
        lines.append(
            f"  {result.decisions} decision(s) answered"
            + (f", the slowest in {result.slowest:.3f} s" if result.decisions else "")
            + (f"; {unanswered} not answered ({kinds}), not in the slowest" if unanswered else "")
            + f" (limits: {limits.decision_seconds:g} s a decision, {limits.game_seconds:g} s a game, "
            f"{limits.memory_mb:g} MiB of memory)"
        )
    lines += [f"  problem: {line}" for line in result.problems]
    if result.ok:
        lines.append("  no output on standard output; every action legal")
        if result.stderr_bytes:
            lines.append(f"  {result.stderr_bytes} bytes on standard error (it counts against the output limit)")
    lines.append(
        "This checks the interface only (no regret, no solver); `dice-poker grade` measures how well it plays."
    )
    return "\n".join(summary_text_line(line) for line in lines)


def check_json(result: CheckResult) -> dict[str, Any]:
    """The result as a JSON-ready dict."""
    return {
        "submission": result.submission,
        "rules": result.rules,
        "games": result.games,
        "isolation": result.isolation,
        "ok": result.ok,
        "loaded": result.loaded,
        "games_played": result.games_played,
        "games_failed": result.games_failed,
        "decisions": result.decisions,
        "unanswered": dict(sorted(result.unanswered.items())),
        "problems": result.problems,
        "failures": [f.to_json() for f in result.failures],
        "failure_count": result.failure_count,
        "stdout_bytes": result.printed,
        "stderr_bytes": result.stderr_bytes,
        "solver": result.solver,
        "solver_imports": result.solver_imports,
    }
