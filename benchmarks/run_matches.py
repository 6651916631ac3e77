"""Play the head-to-head matches of the two-player track and save them in results/winning/.

Each entry of :data:`MATCHUPS` is one match (:func:`agents.evaluation.match.match`): agent A against
agent B on a ruleset, in duplicate two-player games, played until the 95% interval of A's win rate
has a half-width of at most ``target_ci`` (``games="auto"``: a pilot block of 2,000 games measures
the spread of the deals, which says how many games the target needs; then blocks up to that many).
Its result goes to ``results/winning/match_<rules>_<A>_vs_<B>.json`` with the command that
reproduces it and the hardware; ``benchmarks/leaderboard.py`` renders them as the two-player track.
A match whose agent does not exist yet (``winning`` before its branch lands) is skipped with a
message; a match already saved is skipped unless ``--force``.

    python benchmarks/run_matches.py                       # every match not yet saved
    python benchmarks/run_matches.py --only yacht --force  # again, the yacht matches only
    python benchmarks/run_matches.py --list
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's agents package

from benchmarks.run_baselines import cpu_model  # noqa: E402 - after the path

RESULTS = ROOT / "results" / "winning"


@dataclass(frozen=True)
class Matchup:
    """Agent ``a`` against agent ``b`` on ``rules``, to a 95% half-width of ``target_ci`` (or ``games`` games)."""

    rules: str
    a: str
    b: str
    target_ci: float = 0.01
    games: int | None = None  # a fixed number of games instead of a target
    max_games: int = 400_000
    seed: int = 0
    group: str | None = None  # matches of several training seeds of one recipe: their mean is printed


#: self-play policies trained for the win (docs/winning.md "Self-play for the win"): one per ruleset and seed,
#: ``python train.py --config configs/selfplay_ppo_R.yaml seed=S bench_games=0 --run-dir runs-selfplay/R_sS``,
#: then the run's ``final_model.npz`` copied here
SELFPLAY = "results/winning/selfplay"
SELFPLAY_SEEDS = (0, 1, 2)


#: the matches of the two-player track: adding one is one line
MATCHUPS = (
    Matchup("yacht", "optimal", "greedy"),
    Matchup("yahtzee", "optimal", "greedy"),
    Matchup("yacht", "trained", "optimal"),  # the shipped RL policy (expected-score trained)
    Matchup("yahtzee", "trained", "optimal"),
    Matchup("yacht", "winning", "optimal"),
    Matchup("yahtzee", "winning", "optimal", target_ci=0.005),  # the edge is about 1 point: a half-width of 0.5
    Matchup("yacht", "trained", "winning"),  # where self-play for the win starts from
    Matchup("yahtzee", "trained", "winning"),
    *(
        Matchup(rules, f"model:{SELFPLAY}/{rules}_s{seed}.npz", opponent, group=f"selfplay_ppo vs {opponent}")
        for rules in ("yacht", "yahtzee")
        for opponent in ("optimal", "winning")
        for seed in SELFPLAY_SEEDS
    ),
)


def slug(spec: str) -> str:
    """An agent spec as a file-name part (``model:runs/x.npz`` -> ``model_runs_x.npz``)."""
    return re.sub(r"[^A-Za-z0-9.-]+", "_", spec).strip("_")


def result_path(m: Matchup) -> Path:
    return RESULTS / f"match_{m.rules}_{slug(m.a)}_vs_{slug(m.b)}.json"


def command(m: Matchup) -> str:
    """The ``dice-poker match`` command that plays the same games."""
    games = f"--games {m.games}" if m.games else f"--games auto --target-ci {m.target_ci:g} --max-games {m.max_games}"
    return f"dice-poker match {m.rules} --agents {m.a} {m.b} {games} --seed {m.seed} --json"


def resolved(spec: str) -> str:
    """An agent spec with a policy file named relative to the checkout (``model:results/...``) made absolute,
    so the script runs from any folder (the saved command keeps the relative name)."""
    if spec.startswith("model:") and not Path(spec[len("model:") :]).is_absolute():
        return f"model:{ROOT / spec[len('model:') :]}"
    return spec


def play(m: Matchup) -> dict:
    from agents.evaluation.match import match

    def announce(line: str) -> None:
        print(f"  {line}", flush=True)

    result = match(
        m.rules,
        resolved(m.a),
        resolved(m.b),
        games=m.games if m.games else "auto",
        target_ci=None if m.games else m.target_ci,
        max_games=m.max_games,
        seed=m.seed,
        announce=announce,
    )
    result["agents"] = [m.a, m.b]  # as named in the command
    result["command"] = command(m)
    result["script"] = "python benchmarks/run_matches.py"
    result["hardware"] = cpu_model()
    result["finished_utc"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return result


def missing_agent(m: Matchup) -> str | None:
    """Why a matchup cannot be played yet (an agent that does not exist), or ``None``."""
    from agents.players.registry import check_agent

    for spec in (m.a, m.b):
        try:
            check_agent(resolved(spec))
        except ValueError as error:
            return str(error)
        if spec.startswith("model:") and not Path(resolved(spec)[len("model:") :]).is_file():
            return f"{spec[len('model:') :]}: no such policy file"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", metavar="RULESET", help="only the matches on this ruleset")
    parser.add_argument("--force", action="store_true", help="play again matches already saved")
    parser.add_argument("--list", action="store_true", help="list the matches and whether each is saved")
    args = parser.parse_args(argv)
    chosen = [m for m in MATCHUPS if args.only is None or m.rules == args.only]
    if not chosen:
        parser.error(f"no match on {args.only!r}; rulesets: {', '.join(sorted({m.rules for m in MATCHUPS}))}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    for m in chosen:
        path = result_path(m)
        label = f"{m.rules}: {m.a} vs {m.b}"
        if args.list:
            print(f"{label}: {'saved in ' + str(path.relative_to(ROOT)) if path.exists() else 'not played'}")
            continue
        if path.exists() and not args.force:
            print(f"{label}: already saved ({path.relative_to(ROOT)}; --force plays it again)")
            continue
        reason = missing_agent(m)
        if reason is not None:
            print(f"{label}: skipped, the agent does not exist yet ({reason})")
            continue
        print(f"{label}: {command(m)}", flush=True)
        result = play(m)
        path.write_text(json.dumps(result, indent=1) + "\n")
        low, high = result["win_rate_ci95"]
        pilot = result.get("pilot") or {}
        if pilot.get("games_for_half_width_1pp"):
            print(
                f"  pilot of {pilot['games']:,} games: deal sd {pilot['win_rate_deal_sd']:.4f}, "
                f"{pilot['games_for_half_width_1pp']:,} games for a 1-point half-width"
            )
        print(
            f"  win rate {100 * result['win_rate']:.2f}% (95% CI {100 * low:.2f} - {100 * high:.2f}), "
            f"{result['games']:,} games, {result['games_per_second']:,.0f} games/s -> {path.relative_to(ROOT)}",
            flush=True,
        )
    summarize_groups(chosen)
    return 0


def summarize_groups(chosen: list[Matchup]) -> None:
    """The mean win rate over the training seeds of each group of saved matches (and each seed's)."""
    groups: dict[tuple[str, str], list[float]] = {}
    for m in chosen:
        if m.group is not None and result_path(m).exists():
            groups.setdefault((m.rules, m.group), []).append(json.loads(result_path(m).read_text())["win_rate"])
    for (rules, group), rates in groups.items():
        each = ", ".join(f"{100 * r:.2f}%" for r in rates)
        print(f"{rules}: {group}: mean win rate {100 * sum(rates) / len(rates):.2f}% over {len(rates)} seeds ({each})")


if __name__ == "__main__":
    from dice_poker_env.cli import run_script

    run_script(main)
