"""Grade a submitted agent for a course: ``python -m agents.commands.grade student.py:MyAgent --rules yahtzee``.

:func:`grade` benchmarks the submission (``FILE.py:NAME`` or ``MODULE:NAME`` with
``,key=value`` arguments, :mod:`agents.players.registry`) on fixed seeds (the same games for
every student given the same ``seed``) against the optimal and greedy agents, with
the exact regret of every decision it takes. The submission runs in a separate,
isolated process under time and resource limits (:class:`agents.course.sandbox.SandboxedAgent`;
on Linux with bubblewrap; elsewhere grading refuses unless ``isolated=False``,
``--unisolated``, and the report then says so): one that raises, hangs, crashes,
returns malformed or illegal actions, floods its output or prints to standard output
gets a report that says so, with the traceback, under a failure kind of the fixed list
:class:`agents.course.sandbox.FailureKind`; the grader itself never fails because of it, and
the submission never sees the game seeds.

The report (:mod:`agents.course.grade_report`) is written as ``report.json``, ``report.md``
and ``report.html`` (one self-contained page, no network access: the costliest
mistakes with pictures of the dice, the score distribution against optimal, and a
replay of any graded game move by move). The same seed gives the same report,
byte for byte, for a submission that plays the same way (nothing in it depends on
time, except a failure that *is* a time limit).

Games and decisions are numbered from 1 wherever people read them (the summary, the pages, the
problems and failure messages); the JSON keeps the 0-based indices (``game``, ``decision``,
``stopped_at_game``, ``first_game``, the order of ``replays``: game ``i`` is played with the
``i``-th seed) beside the numbers (``game_number``, ``decision_number``, ``stopped_at_game_number``,
``first_game_number``, ``first_decision_number``).

The command line is :mod:`agents.commands.grade` (``dice-poker grade``, and
``python -m agents.commands.grade`` where the command is not installed).
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agents.course.isolation import isolation_method
from agents.course.replay import replay_detail
from agents.course.sandbox import SOLVER_POLICIES, FailureKind, Limits, SandboxedAgent
from agents.evaluation.benchmark import BenchmarkResult, benchmark, game_seeds, load_solution
from dice_poker_env.rules import Rules, load_rules

#: the report's format version
REPORT_FORMAT = 1
#: the files ``--out DIR`` writes
REPORT_FILES = ("report.json", "report.md", "report.html")
#: the agents every submission is compared with
REFERENCES = ("optimal", "greedy")
#: width of the score distribution's bins (points)
BIN_WIDTH = 10


@dataclass(frozen=True)
class Baselines:
    """The reference agents' games of one grading (:func:`reference_games`), played once for a whole class.

    Attributes:
        rules_fingerprint: the ruleset they were played on.
        games: games per agent.
        seed: the grading seed.
        top_mistakes: mistakes listed per agent.
        rows: per reference agent, its benchmark row (without the machine-dependent ``seconds``).
        scores: per reference agent, its final scores, game by game.
    """

    rules_fingerprint: str
    games: int
    seed: int
    top_mistakes: int
    rows: dict[str, dict[str, Any]]
    scores: dict[str, list[int]]


def reference_games(
    rules: str | os.PathLike[str] | Rules,
    *,
    games: int = 2000,
    seed: int = 0,
    top_mistakes: int = 10,
    solution: Any = None,
) -> Baselines:
    """Play the :data:`REFERENCES` on the grading's games once; :func:`grade` reuses them (``baselines=``)."""
    rules = load_rules(rules)
    solution = solution if solution is not None else load_solution(rules, required=True)
    result = benchmark(rules, list(REFERENCES), games=games, seed=seed, solution=solution, top_mistakes=top_mistakes)
    rows = {name: {k: v for k, v in row.items() if k != "seconds"} for name, row in result.data["agents"].items()}
    scores = {name: [int(v) for v in values] for name, values in result.scores.items()}
    return Baselines(rules.fingerprint, int(games), int(seed), int(top_mistakes), rows, scores)


def grade(
    submission: str,
    rules: str | os.PathLike[str] | Rules = "yahtzee",
    *,
    games: int = 2000,
    seed: int = 0,
    limits: Limits | None = None,
    top_mistakes: int = 10,
    progress: bool = False,
    isolated: bool = True,
    solver: str = "allow",
    baselines: Baselines | None = None,
    own_folder: bool = True,
) -> dict[str, Any]:
    """Grade ``submission`` on ``games`` seeded games of ``rules`` (module docstring).

    Args:
        submission: the agent spec, e.g. ``"student.py:MyAgent"``.
        rules: ruleset name, rules file or :class:`Rules`.
        games: games per agent (at least 1).
        seed: the grading seed: the same seed, the same games.
        limits: time and memory limits of the submission (:class:`agents.course.sandbox.Limits`).
        top_mistakes: how many costliest mistakes to list.
        progress: a line per finished agent on stderr.
        isolated: run the submission isolated (:mod:`agents.course.sandbox`); ``False`` only for trusted code
            (the report says it ran unisolated).
        solver: the library's solver and agents in the submission: ``allow``, ``flag`` (reported) or ``forbid``.
        baselines: the reference agents' games, already played (:func:`reference_games`, with the same
            rules, games, seed and ``top_mistakes``): the same report, without playing them again.
        own_folder: whether the files beside the submission are its author's
            (:class:`agents.course.sandbox.SandboxedAgent`: a class folder's are not).

    Returns:
        The report as a JSON-ready dict (``agents.course.grade_report`` renders it).

    Raises:
        ValueError: a bad argument or ruleset, or no isolation here while ``isolated``
            (never for what the submission does).
    """
    rules = load_rules(rules)
    for what, value, least in (("games", games, 1), ("seed", seed, 0), ("top_mistakes", top_mistakes, 0)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
            raise ValueError(f"{what} must be an integer >= {least}, got {value!r}")
    limits = limits or Limits()
    if baselines is not None and (
        (baselines.rules_fingerprint, baselines.games, baselines.seed, baselines.top_mistakes)
        != (rules.fingerprint, int(games), int(seed), int(top_mistakes))
    ):
        raise ValueError("baselines: played on other rules, games, seed or top_mistakes than this grading")
    solution = load_solution(rules, required=True)
    interrupted = False
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
    try:
        agent.start()
        entries: list[Any] = ([("submission", agent)] if agent.load_error is None else []) + (
            [] if baselines is not None else list(REFERENCES)
        )
        result = benchmark(
            rules,
            entries,
            games=games,
            seed=seed,
            solution=solution,
            top_mistakes=top_mistakes,
            progress=progress,
            record_games=agent.load_error is None,
        )
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: a report all the same, marked partial
        interrupted = True
        empty = {"optimal_expected_score": float(solution.expected_score), "optimal_std": float(solution.score_std)}
        result = BenchmarkResult(data={**empty, "agents": {}}, scores={}, games={})
    finally:
        agent.close()
    data = result.data
    if baselines is not None and not interrupted:  # the references' rows and scores, in the order benchmark gives
        data["agents"].update({name: dict(row) for name, row in baselines.rows.items()})
        result.scores.update({name: np.asarray(values) for name, values in baselines.scores.items()})
    for row in data["agents"].values():
        row.pop("seconds", None)  # the only field that depends on the machine
    failures = ([agent.load_error] if agent.load_error is not None else []) + agent.failures
    kinds = Counter(FailureKind(f.kind).value for f in failures)
    if agent.failure_count > len(agent.failures):
        kinds["unrecorded"] = agent.failure_count - len(agent.failures)
    report: dict[str, Any] = {
        "format": REPORT_FORMAT,
        "submission": submission,
        "agent_name": agent.agent_name if agent.load_error is None and not interrupted else None,
        "rules": rules.name,
        "rules_title": rules.title,
        "rules_options": dict(rules.options),
        "rules_fingerprint": rules.fingerprint,
        "box_names": list(rules.box_names),
        "games": int(games),
        "seed": int(seed),
        "status": _status(agent, interrupted),
        "complete": agent.load_error is None and agent.stopped_at_game is None and not interrupted,
        "interrupted": interrupted,
        "games_asked": max(agent.game + 1, 0),
        "isolation": {"isolated": agent.isolated, "method": isolation_method() if agent.isolated else "none"},
        "solver": {"policy": agent.solver, "imported": list(agent.solver_imports)},
        "limits": asdict(limits),
        "optimal_expected_score": data["optimal_expected_score"],
        "optimal_std": data["optimal_std"],
        "agents": data["agents"],
        "failures": {
            "count": agent.failure_count + (agent.load_error is not None),
            "by_kind": dict(sorted(kinds.items())),
            "stopped_at_game": agent.stopped_at_game,
            "stopped_at_game_number": None if agent.stopped_at_game is None else agent.stopped_at_game + 1,
            "stopped_because": agent.stopped_because,
            "recorded": [f.to_json() for f in failures],
        },
        "stdout": {
            "bytes": agent.printed.bytes,
            "first_game": agent.printed.first_game,
            "first_decision": agent.printed.first_decision,
            "first_game_number": _number(agent.printed.first_game),
            "first_decision_number": _number(agent.printed.first_decision),
            "sample": agent.printed.sample,
        },
        "stderr": {"bytes": agent.printed.stderr_bytes},  # (not kept: it counts toward the output limit)
        "problems": _problems(agent, games, interrupted),
        "score_distribution": _distribution(result.scores),
        "replays": result.games.get("submission", []),
    }
    mistakes = data["agents"].get("submission", {}).get("mistakes", [])
    report["replay_detail"] = replay_detail(rules, solution, game_seeds(seed, games), report["replays"], mistakes)
    return report


def _number(index: int | None) -> int | None:
    """A 0-based index as the number people read (from 1); None for none (or -1: loading, a game's start)."""
    return None if index is None or index < 0 else index + 1


def _status(agent: SandboxedAgent, interrupted: bool = False) -> str:
    """``not_loaded``, ``partial`` (it stopped being asked before the last game), ``failures`` or ``ok``."""
    if agent.load_error is not None:
        return "not_loaded"
    if agent.stopped_at_game is not None or interrupted:
        return "partial"
    return "failures" if agent.failure_count else "ok"


def _problems(agent: SandboxedAgent, games: int, interrupted: bool = False) -> list[str]:
    """One line per kind of problem, for the report's summary."""
    lines = []
    if not agent.isolated:
        lines.append(
            "the submission ran UNISOLATED (--unisolated): it could read and change anything the grader's user "
            "can, so this grade is only as trustworthy as the submission"
        )
    if agent.solver_imports:
        verb = "tried to import (forbidden)" if agent.solver == "forbid" else "imported"
        lines.append(f"the submission {verb} the library's solver or agents: {', '.join(agent.solver_imports)}")
    if interrupted:
        lines.append(
            f"partial: the grading was interrupted during game {agent.game + 1} of the submission's {games}; "
            "no scores are reported"
        )
    if agent.load_error is not None:
        error = agent.load_error
        lines.append(f"the submission did not load ({error.kind}): {error.message}; it scores 0 in every game")
        return lines
    if agent.failure_count:
        kinds = Counter(FailureKind(f.kind).value for f in agent.failures)
        detail = ", ".join(f"{count} {kind}" for kind, count in sorted(kinds.items()))
        if agent.failure_count > len(agent.failures):  # beyond MAX_RECORDED_FAILURES: counted, not kept
            detail += f", {agent.failure_count - len(agent.failures)} more not recorded in detail"
        lines.append(
            f"{agent.failure_count} game(s) ended early because of the submission ({detail}); "
            "each such game counts the points written until then"
        )
    if agent.stopped_at_game is not None:
        left = games - agent.stopped_at_game - 1
        why = (
            f"its total time of {agent.limits.total_seconds:g} s was spent"
            if agent.stopped_because == "budget"
            else f"{agent.limits.max_failures} failures"
        )
        lines.append(
            f"partial: after {why} (game {agent.stopped_at_game + 1}) no more decisions "
            f"were asked for: the {left} remaining game(s) score 0"
        )
    if agent.printed.bytes:
        first_game, first_decision = _number(agent.printed.first_game), _number(agent.printed.first_decision)
        if first_game is None:
            where = "while loading"
        else:
            where = f"game {first_game}, " + (
                f"decision {first_decision}" if first_decision is not None else "at the game's start"
            )
        lines.append(
            f"the submission printed {agent.printed.bytes} bytes to standard output (first in {where}); "
            "agents should print nothing (remove the prints, or log at debug level)"
        )
    return lines


def _distribution(scores: dict[str, np.ndarray]) -> dict[str, Any]:
    """Histograms of the final scores of every agent on common bins of :data:`BIN_WIDTH` points."""
    values = np.concatenate([np.asarray(v, dtype=np.int64) for v in scores.values()]) if scores else np.zeros(1)
    low = int(np.floor(values.min() / BIN_WIDTH) * BIN_WIDTH)
    high = int(np.floor(values.max() / BIN_WIDTH) * BIN_WIDTH) + BIN_WIDTH
    edges = list(range(low, high + 1, BIN_WIDTH))
    return {
        "bin_width": BIN_WIDTH,
        "edges": edges,
        "counts": {name: np.histogram(np.asarray(v), bins=edges)[0].astype(int).tolist() for name, v in scores.items()},
    }


# ------------------------------------------------------------------ files and settings
def report_json(report: dict[str, Any]) -> str:
    """The report as JSON text: indented, except the replays and their detail, one game a line (they are most of it)."""
    body = {key: value for key, value in report.items() if key not in ("replays", "replay_detail")}
    text = json.dumps(body, indent=1, sort_keys=True)

    def one_a_line(games: list[Any]) -> str:
        return ",\n".join("  " + json.dumps(game, separators=(",", ":"), sort_keys=True) for game in games)

    if "replay_detail" in report:
        detail = dict(report["replay_detail"])
        games = detail.pop("games", [])
        head = json.dumps(detail, separators=(",", ":"), sort_keys=True)[1:-1]  # its other fields, on one line
        head += "," if head else ""
        text = text[: -len("\n}")] + f',\n "replay_detail": {{{head}"games":[\n{one_a_line(games)}\n ]}}\n}}'
    return text[: -len("\n}")] + f',\n "replays": [\n{one_a_line(report.get("replays", []))}\n ]\n}}\n'


def write_report(report: dict[str, Any], out: Path) -> list[Path]:
    """``report.json``, ``report.md`` and ``report.html`` in ``out``, each written whole, then renamed into place."""
    from agents.course.grade_report import render_html, render_markdown

    texts = {
        "report.json": report_json(report),
        "report.md": render_markdown(report),
        "report.html": render_html(report),
    }
    return [write_whole(out / name, text) for name, text in texts.items()]


def write_whole(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` whole (:func:`dice_poker_env.files.write_whole`: a reader never sees half a
    file; an interrupted write leaves the old one). Returns ``path``."""
    from dice_poker_env.files import write_whole as whole

    return whole(path, text)


#: the settings a grading config (``--config FILE``, TOML) may hold, with their defaults and types
SETTINGS: dict[str, tuple[Any, type]] = {
    "rules": ("yahtzee", str),
    "options": ({}, dict),
    "games": (2000, int),
    "seed": (0, int),
    "decision_seconds": (Limits.decision_seconds, float),
    "game_seconds": (Limits.game_seconds, float),
    "load_seconds": (Limits.load_seconds, float),
    "total_seconds": (Limits.total_seconds, float),
    "memory_mb": (Limits.memory_mb, int),
    "cpu_seconds": (Limits.cpu_seconds, int),
    "processes": (Limits.processes, int),
    "child_processes": (Limits.child_processes, bool),
    "file_mb": (Limits.file_mb, int),
    "scratch_mb": (Limits.scratch_mb, int),
    "open_files": (Limits.open_files, int),
    "output_kb": (Limits.output_kb, int),
    "max_failures": (Limits.max_failures, int),
    "solver": ("allow", str),
}

#: the settings that are :class:`agents.course.sandbox.Limits`
LIMIT_SETTINGS = tuple(name for name in SETTINGS if hasattr(Limits, name))


def read_toml(path: str | os.PathLike, option: str = "--config") -> dict[str, Any]:
    """A TOML file's table; ``option`` names the file in the one-line ``ValueError`` when it cannot be read."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except OSError as error:
        raise ValueError(f"{option} {path}: cannot read it ({error.strerror or error})") from None
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"{option} {path}: not valid TOML: {error}") from None
    except UnicodeDecodeError:  # (a binary file: tomllib decodes UTF-8 before parsing)
        raise ValueError(f"{option} {path}: not a TOML file (not UTF-8 text)") from None
    except RecursionError:  # (arrays or inline tables nested past the parser's stack: a traceback before)
        raise ValueError(f"{option} {path}: not valid TOML: nested too deep to read") from None
    except ValueError as error:  # (an integer of more digits than Python converts: the message named no file)
        raise ValueError(f"{option} {path}: not valid TOML: {' '.join(str(error).split())[:200]}") from None


def read_config(path: str | os.PathLike) -> dict[str, Any]:
    """The settings of a grading config file (TOML; see :data:`SETTINGS`), checked.

    A relative ``rules`` path is read next to the config file.

    Raises:
        ValueError: not readable as TOML, an unknown key, or a value of the wrong type.
    """
    data = read_toml(path)
    unknown = sorted(set(data) - set(SETTINGS))
    if unknown:
        raise ValueError(f"--config {path}: unknown setting(s) {', '.join(unknown)}; known: {', '.join(SETTINGS)}")
    for key, value in data.items():
        kind = SETTINGS[key][1]
        number = kind is float and isinstance(value, int)
        if (isinstance(value, bool) and kind is not bool) or not (isinstance(value, kind) or number):
            raise ValueError(f"--config {path}: {key} must be {kind.__name__}, got {value!r}")
    if "solver" in data and data["solver"] not in SOLVER_POLICIES:
        raise ValueError(f"--config {path}: solver must be one of {', '.join(SOLVER_POLICIES)}, got {data['solver']!r}")
    rules = data.get("rules")
    if rules is not None and (Path(rules).suffix or "/" in rules) and not Path(rules).is_absolute():
        data["rules"] = str(Path(path).parent / rules)
    return data


def settings(config: str | os.PathLike | None = None, **given: Any) -> dict[str, Any]:
    """The defaults, then the settings of the ``config`` file, then those ``given`` (``None``: not given).

    ``options`` are merged: the config file's, then the given ones; ``rules`` given of another game than the
    config's drops the config's options (they are that game's).
    """
    chosen = {key: default for key, (default, _) in SETTINGS.items()}
    if config:
        chosen.update(read_config(config))
        if given.get("rules") is not None and given["rules"] != chosen["rules"]:
            chosen["options"] = {}
    for key, value in given.items():
        if key not in SETTINGS:
            raise TypeError(f"unknown setting {key!r}")
        if key != "options" and value is not None:
            chosen[key] = value
    chosen["options"] = {**chosen["options"], **(given.get("options") or {})}
    return chosen


def protect_process() -> None:
    """Linux: mark this process non-dumpable, so that other processes of its user (the
    submission included) cannot read its memory unless they run as root."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    except (OSError, AttributeError):  # pragma: no cover - no libc
        pass
