"""``dice-poker evaluate``: the benchmark protocol's metrics of one agent (``docs/benchmark.md``).

Plays the ruleset's fixed evaluation set (10,000 games whose dice are fixed by the published env
seeds ``2**40 + i``) and prints the luck-free percent of optimal with its 95% interval, the mean
score with its interval, the median, the upper bonus rate, the track and what the result was
measured on (env id, observation layout version, ruleset fingerprint, library version). The logic
lives in :mod:`agents.evaluation.protocol`. With ``--isolated`` an agent's own code (``FILE.py:NAME``,
``MODULE:NAME``) runs in the grader's isolated process (:class:`agents.course.sandbox.SandboxedAgent`)
while the games and the regret are computed here: an agent you did not write cannot change its measurement.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from agents.commands.grade import LIMIT_FLAGS, add_limit_arguments, checked_limits, given_limits
from dice_poker_env.cli.rules_arguments import add_rules_arguments, load_rules_from

if TYPE_CHECKING:
    from agents.course.sandbox import Limits
    from dice_poker_env.rules import Rules

HELP = "the benchmark protocol's metrics of an agent on the fixed evaluation set (docs/benchmark.md)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Play the ruleset's fixed evaluation set (10,000 games, the same dice for every agent) and "
        "report the protocol's metrics: luck-free percent of optimal (100 x (1 - mean exact regret / "
        "optimal expected score)) with its 95% CI, mean score with its CI, median and upper bonus rate."
    )
    add_rules_arguments(parser)
    parser.add_argument(
        "--agent",
        required=True,
        metavar="SPEC",
        help="the agent: optimal, greedy, random, trained, winning[,target=T], model:PATH, FILE.py:NAME or MODULE:NAME",
    )
    parser.add_argument(
        "--games",
        type=int,
        default=None,
        help="play only the first N games of the set (default: all 10,000, as the protocol reports)",
    )
    parser.add_argument(
        "--track",
        choices=("raw", "rules", "solver"),
        help="the track the agent is submitted to (when the agent declares none; checked when it does)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help="the training seed of the agent, in [0, 2**32), recorded in the result as a label "
        "(benchmarks/compare.py pairs seeds across rulesets by it); it changes no game",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    group = parser.add_argument_group("verifying an agent you did not write")
    group.add_argument(
        "--isolated",
        action="store_true",
        help="run the agent's own code (FILE.py:NAME or MODULE:NAME) in an isolated process (Linux, bubblewrap: "
        "no network, read-only files) under the limits below, the games and the regret computed outside it "
        "(docs/benchmark.md); the result records isolated: true. Without it the agent runs in this process, "
        "where it could change the measurement",
    )
    group.add_argument(
        "--share-folder",
        action="store_true",
        help="with --isolated: show the agent its whole folder, read-only, as its working folder (sibling "
        "modules, data files such as NAME,weights=w.npz, relative to it); everything in it becomes readable "
        "to the agent, so use a folder holding the submission alone. Without it the agent sees its file only",
    )
    group.add_argument(
        "--solver",
        choices=("allow", "flag", "forbid"),
        help="with --isolated: the library's solver and agents (optimal, heuristic, greedy, trained policies...) in "
        "the agent's process: allowed, recorded in the result's solver_imports (the default), or refused (a "
        "raw or rules track claim can be held to it)",
    )
    add_limit_arguments(
        group,
        who="the agent",
        total="time the agent may use in all, with --isolated (default {default:g}); then its games score 0",
        failures="failed games (it raised, hung, crashed: each game's loss counts as regret) after which the "
        "remaining games score 0 (default {default})",
    )


def run(args: argparse.Namespace) -> int:
    from agents.evaluation.protocol import EVAL_GAMES, TRAIN_SEED_LIMIT, evaluate

    games = EVAL_GAMES if args.games is None else args.games
    if not 1 <= games <= EVAL_GAMES:
        raise ValueError(f"--games must be in 1..{EVAL_GAMES} (the evaluation set's size), got {games}")
    if args.seed is not None and not 0 <= args.seed < TRAIN_SEED_LIMIT:  # (train.py's range; compare.py refuses others)
        raise ValueError(f"--seed must be a training seed in [0, 2**32), got {args.seed}")
    given = given_limits(args)
    if given and not args.isolated:
        raise ValueError(f"{LIMIT_FLAGS[next(iter(given))]} limits an isolated agent: it goes with --isolated")
    if args.share_folder and not args.isolated:
        raise ValueError("--share-folder shows an isolated agent its folder: it goes with --isolated")
    if args.solver is not None and not args.isolated:
        raise ValueError("--solver watches an isolated agent's imports: it goes with --isolated")
    rules = load_rules_from(args)
    if args.isolated:
        limits = checked_limits({}, args)
        result = _evaluate_isolated(
            rules, args.agent, games, args.track, limits, share_folder=args.share_folder, solver=args.solver or "flag"
        )
    else:
        result = evaluate(rules, args.agent, games=games, track=args.track)
    if args.seed is not None:
        result["seed"] = args.seed
    if args.json:
        print(json.dumps(result), flush=True)
        return 0
    lines = [
        f"{result['eval_set']}: {result['agent']} ({result['track'] or 'no track declared'}), {result['games']} games"
        + ("" if args.seed is None else f", training seed {args.seed}"),
        f"luck-free percent of optimal  {result['luck_free_percent']:8.3f} ± {result['luck_free_percent_ci95']:.3f}",
        f"mean regret                   {result['regret_mean']:8.3f} ± {result['regret_ci95']:.3f}"
        f"  (keeps {result['regret_keep_mean']:.3f}, boxes {result['regret_box_mean']:.3f}"
        + (f", illegal or failed {other:.3f})" if (other := _other_regret(result)) > 1e-9 else ")"),
        f"mean score                    {result['mean']:8.2f} ± {result['mean_ci95']:.2f}"
        f"  (optimal expected {result['optimal_expected_score']:.2f})",
        f"median score                  {result['median']:8.1f}",
    ]
    if result["illegal_actions"]:  # an illegal action ends its game: the rest of the game is lost
        lines.append(f"illegal actions               {result['illegal_actions']:8d}  (each ended its game there)")
    if result["failed_games"]:  # an isolated agent raised, hung, crashed... (or was stopped): those games ended
        kinds = ", ".join(f"{kind} {count}" for kind, count in result["failed_games"].items())
        lines.append(f"games its failures ended      {sum(result['failed_games'].values()):8d}  ({kinds})")
    if result.get("solver_imports"):  # (isolated: what of the library's solver and agents the agent imported)
        lines.append(f"imported of the library's      {', '.join(result['solver_imports'])}")
    if result["upper_bonus_rate"] is not None:
        lines.append(f"upper bonus rate              {100 * result['upper_bonus_rate']:7.2f}%")
    lines.append(
        f"{result['env_id']}, observation layout v{result['observation_layout_version']}, "
        f"ruleset {result['rules_fingerprint'][:12]}, dice_poker_env {result['library_version']}"
        + (", the agent isolated" if result["isolated"] else "")
    )
    print("\n".join(lines))
    return 0


def _evaluate_isolated(
    rules: Rules,
    spec: str,
    games: int,
    track: str | None,
    limits: Limits,
    *,
    share_folder: bool = False,
    solver: str = "flag",
) -> dict:
    """:func:`~agents.evaluation.protocol.evaluate` with the agent's code in an isolated process."""
    from agents.course.isolation import isolation_problem
    from agents.course.sandbox import SandboxedAgent
    from agents.evaluation.protocol import evaluate
    from agents.players.registry import check_agent, parse_agent_spec

    check_agent(
        spec, load=False
    )  # an unknown spec or a missing file, said before a sandbox starts (never imported here)
    parsed = parse_agent_spec(spec)
    if parsed is None:
        raise ValueError(
            f"--isolated runs an agent's own code (FILE.py:NAME or MODULE:NAME); {spec} runs only the library's"
        )
    if share_folder and not parsed.is_file:
        raise ValueError(f"--share-folder shows an agent file's folder; {spec} names a module")
    problem = isolation_problem()
    if problem is not None:
        raise ValueError(f"--isolated: {problem}")
    # the evaluation set is public: the agent's seed(s) gets what it gets in process, so it plays the same games
    try:
        sandboxed = SandboxedAgent(
            spec,
            rules,
            limits=limits,
            isolated=True,
            solver=solver,
            forward_seeds=True,
            share_folder=share_folder,
        )
    except ValueError as error:  # (a folder it must not share)
        raise ValueError(f"--share-folder: {error}" if share_folder else str(error)) from None
    with sandboxed as agent:
        if agent.load_error is not None:
            raise ValueError(f"agent {spec} did not load in isolation: {agent.load_error.message}")
        result = evaluate(rules, spec, games=games, track=track, player=agent)
    result["solver_policy"] = solver  # (allow: imports not watched, solver_imports is None)
    if solver == "allow":
        result["solver_imports"] = None
    if share_folder:  # what the agent could read: every file of its folder (agent_sha256 covers its file only)
        result["folder_sha256"] = folder_sha256(Path(os.path.abspath(parsed.source)).parent)
    return result


def folder_sha256(folder: Path) -> str:
    """The SHA-256 of a folder's files: each regular file's path (relative, sorted) and SHA-256, links as their
    targets' text; a rerun with ``--share-folder`` on the same files gives the same digest."""
    import hashlib

    from agents.evaluation.protocol import _file_sha256

    whole = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_symlink() or p.is_file()):
        whole.update(path.relative_to(folder).as_posix().encode() + b"\0")
        if path.is_symlink():
            whole.update(b"link:" + os.readlink(path).encode() + b"\0")
            continue
        digest = _file_sha256(str(path)) or hashlib.sha256().hexdigest()  # (None: an empty file)
        whole.update(digest.encode() + b"\0")
    return whole.hexdigest()


def _other_regret(result: dict) -> float:
    """The mean regret of illegal actions and failures: what keeps and boxes leave of the total."""
    return float(result["regret_mean"] - result["regret_keep_mean"] - result["regret_box_mean"])
