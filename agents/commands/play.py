"""``dice-poker play``: play a dice game in the terminal against the agents.

The human sits in the first seat of a :class:`dice_poker_env.multi.raw_env` game;
each other seat is an agent built by name (:func:`agents.players.registry.make_agent`:
``random``, ``greedy``, ``optimal``, ``trained``, ``model:PATH``). ``--opponents none``
plays alone (:class:`SoloTable`, the single-player env) to practise for the best score.
Commands, typed naturally::

    keep 2 2 6   | k 226 | hold 2,2,6   keep these faces, reroll the others
    reroll 1 3   | r 13                 reroll the dice showing these faces
    keep #2 4 5  | k #245               keep the dice in these positions (#1 is the leftmost)
    reroll #1 3  | r #13                reroll the dice in these positions
    roll all     | reroll | r           reroll all five dice
    score full   | s ful  | s full house  write the dice into a box (unique prefix)
    hint, board, help, quit

Digits are faces; with ``#`` they are positions (the prompt says so). After a reroll
the new dice are marked; the upper total is shown against the bonus threshold
(``upper 48/63``); the hints list every open box's points now.

Bad input is explained and asked again; the end of input (EOF) ends the game
cleanly. With ``--hints`` the solver's expected values of the best actions are
shown before each decision, and at the end every decision is graded against the
solver (expected points lost), unless the solver cannot solve the ruleset (a
ruleset too large for the machine's memory): then the game goes on without them.
Input may come from a script on standard input (each line is echoed).

Size: one interactive command: the parser of typed moves, the screen, the solver's coach
and the game loop, which are only used together.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
import textwrap
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from agents.players.random_agent import RandomAgent
from agents.players.registry import AgentError, make_agent
from dice_poker_env.cli.rules_arguments import add_rules_arguments, load_rules_from
from dice_poker_env.engine import game
from dice_poker_env.engine.combinatorics import KEEP_ALL, N_DICE, N_KEEP_ACTIONS
from dice_poker_env.engine.position import secured_upper_bonus
from dice_poker_env.engine.state import ROLLS_PER_TURN
from dice_poker_env.engine.tables import RuleTables, compile_rules
from dice_poker_env.multi.observations import table_problem
from dice_poker_env.rules import Rules

if TYPE_CHECKING:
    from dice_poker_env.multi import raw_env

MAX_OPPONENTS = 5
KEEP_WORDS = ("keep", "k", "hold")
REROLL_WORDS = ("roll", "reroll", "r")
SCORE_WORDS = ("score", "s", "write", "w")
COMMANDS_HELP = """\
Commands: digits are the faces on the dice; after # they are positions (#1 is the leftmost die)
  keep 2 2 6    (or: k 226, hold 2,2,6)   keep these faces and reroll the others
  reroll 1 3    (or: r 13)                reroll the dice showing 1 and 3, keep the rest
  keep #2 4 5   (or: k #245)              keep the dice in positions 2, 4 and 5
  reroll #1 3   (or: r #13)               reroll the first and the third die
  roll all      (or: reroll, r)           reroll all five dice
  score full    (or: s ful, s full house) write the dice into a box; any unique
                                          start of the box name will do
  hint     every open box's points now and the solver's best actions
  board    show the scorecards again         help    this text         quit    leave the game"""
#: the prompt while rerolls are left: it says that digits are faces and ``#`` digits positions
PROMPT_REROLL = "faces: r 12 · positions: r #12 · score: s BOX > "
#: the prompt without rerolls
PROMPT_SCORE = "score: s BOX > "


# ------------------------------------------------------------------ parsing
@dataclass
class Command:
    """What a line of input asks for: an env ``action``, a ``special`` word, or an ``error``."""

    action: int | None = None
    special: str | None = None
    error: str | None = None


def match_box(
    query: str, box_names: Sequence[str], legal: Sequence[int] | None = None
) -> tuple[int | None, str | None]:
    """``(box index, None)`` for a unique prefix of a box name, else ``(None, why not)``.

    Spaces and hyphens count as underscores (``full house``); an exact name wins
    over longer names it starts. A prefix shared by several boxes is still
    accepted when only one of them is in ``legal`` (``s tw`` once ``twos`` is filled).
    """
    q = re.sub(r"[\s\-]+", "_", query.strip().lower())
    if not q:
        return None, "which box? e.g. `score " + box_names[-1] + "`"
    if q in box_names:
        return box_names.index(q), None
    found = [k for k, name in enumerate(box_names) if name.startswith(q)]
    if not found:  # also accept the name without underscores: "fullhouse", "fh" is too short
        squeezed = q.replace("_", "")
        found = [k for k, name in enumerate(box_names) if name.replace("_", "").startswith(squeezed)]
    if len(found) > 1 and legal is not None:
        open_now = [k for k in found if k in legal]
        found = open_now if len(open_now) == 1 else found
    if len(found) == 1:
        return found[0], None
    if found:
        names = ", ".join(box_names[k] for k in found)
        return None, f"`{query.strip()}` could be {names}: type more of the name"
    return None, f"no box is called `{query.strip()}`; the boxes are: {', '.join(box_names)}"


def parse_faces(text: str) -> tuple[list[int] | None, str | None]:
    """Die faces from ``"2 2 6"``, ``"226"``, ``"2,2,6"``: ``(faces, None)`` or ``(None, why not)``."""
    chars = re.sub(r"[\s,;/\-]+", "", text)
    if not chars.isdigit():
        return None, f"`{text.strip()}` is not a list of dice: give faces 1 to 6, e.g. `keep 2 2 6` or `k 226`"
    faces = [int(c) for c in chars]
    bad = sorted({f for f in faces if not 1 <= f <= 6})
    if bad:
        return None, f"dice show 1 to 6, not {', '.join(map(str, bad))}"
    return faces, None


def parse_positions(text: str) -> tuple[list[int] | None, str | None]:
    """Die positions (0-based) from ``"#13"``, ``"#1 3"``, ``"#1,#3"``: ``(positions, None)`` or ``(None, why not)``."""
    chars = re.sub(r"[\s,;/\-#]+", "", text)
    if not chars:
        return None, "which positions? e.g. `r #13` rerolls the first and the third die"
    if not chars.isdigit():
        return None, f"`{text.strip()}` is not a list of positions: give positions 1 to 5 after #, e.g. `r #13`"
    positions = [int(c) for c in chars]
    bad = sorted({p for p in positions if not 1 <= p <= N_DICE})
    if bad:
        return None, f"positions are 1 to {N_DICE} (#1 is the leftmost die), not {', '.join(map(str, bad))}"
    twice = sorted({p for p in positions if positions.count(p) > 1})
    if twice:
        return None, f"position {', '.join(map(str, twice))} given twice"
    return [p - 1 for p in positions], None


def keep_action(kept: Sequence[int], dice: Sequence[int]) -> tuple[int | None, str | None]:
    """The keep bitmask over the sorted ``dice`` that keeps the faces ``kept``."""
    have, want = Counter(int(d) for d in dice), Counter(kept)
    shown = " ".join(str(int(d)) for d in dice)
    for face, n in sorted(want.items()):
        if have[face] < n:
            if have[face] == 0:
                return None, f"there is no {face} among your dice ({shown})"
            times = {1: "one", 2: "two", 3: "three", 4: "four"}[have[face]]
            return None, f"you have only {times} {face}{'s' if have[face] > 1 else ''} ({shown}), not {n}"
    bits, used = 0, set()
    for face in kept:
        i = next(i for i, d in enumerate(dice) if int(d) == face and i not in used)
        used.add(i)
        bits |= 1 << i
    return bits, None


def parse_command(
    text: str,
    dice: Sequence[int],
    rolls_left: int,
    rules: Rules,
    mask: np.ndarray,
    scorecard: dict[str, int | None] | None = None,
) -> Command:
    """Turn one line of input into a legal action, a special word or an explanation.

    ``scorecard`` (``{box: points or None}``) lets a refusal name a box's points.
    """
    words = text.strip().lower().split()
    if not words:
        return Command(error="type a command: `keep 2 2 6`, `roll all`, `score chance` (or `help`)")
    verb, rest = words[0], " ".join(words[1:])
    if verb in ("help", "?", "h"):
        return Command(special="help")
    if verb in ("quit", "exit", "q"):
        return Command(special="quit")
    if verb in ("board", "card", "show"):
        return Command(special="board")
    if verb in ("hint", "hints"):
        return Command(special="hint")
    if verb in SCORE_WORDS:
        return _score_command(rest, rules, mask, scorecard)
    if verb in KEEP_WORDS or verb in REROLL_WORDS:
        if rolls_left <= 0:
            return Command(error="no rerolls left this turn: score a box, e.g. `score chance`")
        if "#" in rest:  # positions
            positions, why = parse_positions(rest)
            if why:
                return Command(error=why)
            assert positions is not None  # parse_positions gives positions or a reason
            chosen = sum(1 << p for p in positions)
            keep_bits = chosen if verb in KEEP_WORDS else KEEP_ALL & ~chosen
            if keep_bits == KEEP_ALL:
                return Command(error="keeping all five dice is not a roll; to stop, score a box")
            return Command(action=keep_bits)
        if verb in REROLL_WORDS:
            if rest in ("", "all", "everything", "all dice"):
                return Command(action=0)
            faces, why = parse_faces(rest)
            if why:
                return Command(error=why)
            assert faces is not None  # parse_faces gives faces or a reason
            kept = list((Counter(int(d) for d in dice) - Counter(faces)).elements())
            if len(kept) + len(faces) != N_DICE:
                bits, why = keep_action(faces, dice)  # names the face that is missing
                assert why is not None  # the faces are not all among the dice
                return Command(error=why.replace("among your dice", "to reroll among your dice"))
        else:
            if rest == "":  # not "reroll all": a player who types "k" may mean to stand
                return Command(error=f"{verb} which dice? e.g. `{verb} 6 6 6`; `{verb} none` rerolls all five")
            if rest in ("none", "nothing"):
                return Command(action=0)
            if rest in ("all", "everything"):
                return Command(error="keeping all five dice is not a roll; to stop, score a box")
            parsed, why = parse_faces(rest)
            if why:
                return Command(error=why)
            assert parsed is not None  # parse_faces gives faces or a reason
            kept = parsed
            if len(kept) > N_DICE:
                return Command(error=f"you have only five dice; `{rest}` keeps {len(kept)}")
        bits, why = keep_action(kept, dice)
        if why:
            return Command(error=why)
        if bits == KEEP_ALL:
            return Command(error="keeping all five dice is not a roll; to stop, score a box")
        return Command(action=bits)
    box, _ = match_box(text, rules.box_names)  # a bare box name also scores
    if box is not None and len(words) <= 4:
        return _score_command(text, rules, mask, scorecard)
    return Command(error=f"`{text.strip()}` is not a command: try `keep 2 2 6`, `roll all`, `score chance` or `help`")


def _score_command(query: str, rules: Rules, mask: np.ndarray, scorecard: dict | None) -> Command:
    box, why = match_box(query, rules.box_names, np.flatnonzero(mask[N_KEEP_ACTIONS:]).tolist())
    if why:
        return Command(error=why)
    assert box is not None  # match_box gives a box or a reason
    if mask[N_KEEP_ACTIONS + box]:
        return Command(action=N_KEEP_ACTIONS + box)
    name = rules.box_names[box]
    legal = ", ".join(rules.box_names[k] for k in np.flatnonzero(mask[N_KEEP_ACTIONS:]))
    if scorecard is not None and scorecard.get(name) is not None:
        return Command(error=f"`{name}` is already filled ({scorecard[name]}); open now: {legal}")
    tables = compile_rules(rules)
    if tables.sections_in_order and not tables.is_upper[box]:
        return Command(error=f"`{name}` must wait: the upper boxes come first in these rules; open now: {legal}")
    return Command(error=f"you cannot score `{name}` now (the five-of-a-kind joker rule); allowed: {legal}")


def describe_action(action: int, dice: Sequence[int], box_names: Sequence[str]) -> str:
    """``"keep 2 2 6"``, ``"reroll all"`` or ``"score full_house"``."""
    if action >= N_KEEP_ACTIONS:
        return f"score {box_names[action - N_KEEP_ACTIONS]}"
    kept = [int(d) for i, d in enumerate(dice) if action >> i & 1]
    return "keep " + " ".join(map(str, kept)) if kept else "reroll all"


# ---------------------------------------------------------------- drawing
_PIPS = {
    1: ["     ", "  ●  ", "     "],
    2: ["●    ", "     ", "    ●"],
    3: ["●    ", "  ●  ", "    ●"],
    4: ["●   ●", "     ", "●   ●"],
    5: ["●   ●", "  ●  ", "●   ●"],
    6: ["●   ●", "●   ●", "●   ●"],
}


def dice_art(dice: Sequence[int], new: Sequence[bool] | None = None) -> str:
    """Five dice drawn with box characters, side by side, each with its face and position
    (``#1`` the leftmost); the dice marked in ``new`` (just rolled) are drawn double and labelled."""
    new = list(new) if new is not None else [False] * len(dice)
    rows = ["  ".join("╔═══════╗" if n else "╭───────╮" for n in new)]
    for r in range(3):
        rows.append("  ".join(f"{'║' if n else '│'} {_PIPS[int(d)][r]} {'║' if n else '│'}" for d, n in zip(dice, new)))
    rows.append("  ".join("╚═══════╝" if n else "╰───────╯" for n in new))
    rows.append("  ".join(f"{int(d):^9}" for d in dice))
    rows.append("  ".join(f"{f'#{i + 1}' + (' new' if n else ''):^9}" for i, n in enumerate(new)))
    return "\n".join(rows)


def new_dice(dice: Sequence[int], kept: Sequence[int] | None) -> list[bool]:
    """Which of the sorted ``dice`` were just rolled, after the faces ``kept`` were kept (``None``: a turn's
    first roll, nothing marked). Of equal faces the leftmost count as kept."""
    if kept is None:
        return [False] * len(dice)
    left = Counter(int(face) for face in kept)
    marks = []
    for face in dice:
        marks.append(left[int(face)] == 0)
        left[int(face)] -= 1 if left[int(face)] else 0
    return marks


def upper_progress(tables: RuleTables, state: game.GameState) -> str:
    """``upper 48/63`` (the upper total against the bonus threshold), ``upper 65/63, bonus +35``
    once the bonus is secured, or ``upper 48`` for rules without an upper bonus."""
    total = int(state.upper_total)
    if not tables.has_upper_bonus:
        return f"upper {total}"
    text = f"upper {total}/{tables.upper_bonus_threshold}"
    if secured_upper_bonus(tables, state.filled, total):
        text += f", bonus +{tables.upper_bonus_points}"
    return text


def points_now(tables: RuleTables, state: game.GameState, mask: np.ndarray) -> list[tuple[int, int, int]]:
    """``[(box, points, bonus), ...]`` of every box the dice may be written in now: the points the box
    takes and the bonuses writing them pays (the upper bonus, a five-of-a-kind bonus)."""
    box_full = game.five_kind_box_full(tables.one_game, state.filled, state.scores)
    first_roll = state.rolls_left == ROLLS_PER_TURN - 1
    out = []
    for box in np.flatnonzero(mask[N_KEEP_ACTIONS:]):
        k = int(box)
        points, bonus, _ = game.score_points(
            tables.one_game, state.filled, state.upper_total, box_full, state.roll, first_roll, k
        )
        out.append((k, int(points), int(bonus)))
    return out


class Screen:
    """All terminal output (rich), so the game logic stays plain."""

    def __init__(self, rules: Rules, names: list[str]) -> None:
        from rich.console import Console

        self.console = Console(highlight=False)
        self.rules, self.tables, self.names = rules, compile_rules(rules), names
        self.echo = sys.stdin is None or not sys.stdin.isatty()

    def say(self, text: str = "", style: str | None = None) -> None:
        self.console.print(text, style=style, markup=False)

    def ask(self, prompt: str) -> str:
        """One line of input (raises ``EOFError`` at the end of input)."""
        self.console.print(prompt, end="", style="bold", markup=False)
        line = input()
        if self.echo:
            self.console.print(line, markup=False)
        return line

    def board(self, games: list[game.GameState], to_move: int, potential: np.ndarray | None) -> None:
        from rich.table import Table

        table = Table(title=f"{self.rules.title}", show_lines=False, header_style="bold")
        table.add_column("box")
        for i, name in enumerate(self.names):
            table.add_column(name + (" ◀" if i == to_move else ""), justify="right")
        if potential is not None:
            table.add_column("now", justify="right", style="green")
        upper_done = False
        for k, box in enumerate(self.rules.box_names):
            if not self.tables.is_upper[k] and not upper_done:
                upper_done = True
                cells = [upper_progress(self.tables, g)[len("upper ") :] for g in games]
                cells += [""] if potential is not None else []
                table.add_row("upper total", *cells, style="dim", end_section=False)
            cells = [str(int(g.scores[k])) if g.filled >> k & 1 else "·" for g in games]
            if potential is not None:
                cells.append(str(int(potential[k])) if not games[0].filled >> k & 1 and potential[k] else "")
            table.add_row(box, *cells)
        cells = [str(g.bonus) for g in games] + ([""] if potential is not None else [])
        table.add_row("bonus", *cells, style="dim", end_section=True)
        cells = [str(int(g.total)) for g in games] + ([""] if potential is not None else [])
        table.add_row("TOTAL", *cells, style="bold")
        self.console.print(table)

    def dice(
        self, dice: Sequence[int], rolls_left: int, turn: int, new: Sequence[bool] | None = None, upper: str = ""
    ) -> None:
        """The dice (those in ``new`` marked as just rolled), the turn, the rerolls left and ``upper``."""
        self.say(dice_art(dice, new), style="bold cyan")
        rerolls = {0: "no rerolls left", 1: "1 reroll left", 2: "2 rerolls left"}[int(rolls_left)]
        rolled = sum(bool(n) for n in new or ())
        self.say(
            f"turn {turn}/{self.tables.turns}, {rerolls}"
            + (f", {upper}" if upper else "")
            + (f"; rerolled {rolled} {'die' if rolled == 1 else 'dice'}, marked new" if rolled else "")
        )


# ------------------------------------------------------------------ solver
class Coach:
    """The solver's action values, solved on first use; ``unavailable`` says why there are none."""

    def __init__(self, rules: Rules, screen: Screen) -> None:
        self.rules, self.screen = rules, screen
        self.solution: Any = None
        self.unavailable: str | None = None
        self._tried = False

    def load(self) -> bool:
        if not self._tried:
            self._tried = True
            from dice_poker_env.solver import solve

            if not _solution_cached(self.rules):
                self.screen.say(f"(solving {self.rules.name} exactly for hints and grading; this is done once)", "dim")
            try:
                self.solution = solve(self.rules)
            except Exception as error:  # noqa: BLE001 - any solver failure only disables coaching
                self.solution = None
                self.unavailable = f"the solver could not solve {self.rules.name}: {error}"
        return self.solution is not None

    def values(self, observation: dict[str, Any]) -> np.ndarray | None:
        if not self.load():
            return None
        from dice_poker_env.envs.observation import DICT_KEYS

        single = {key: observation[key] for key in DICT_KEYS}
        try:
            return np.asarray(self.solution.action_values(single), dtype=np.float64)
        except Exception as error:  # noqa: BLE001
            self.unavailable = f"the solver failed on this position: {error}"
            self.solution = None
            return None


def top_actions(
    values: np.ndarray, mask: np.ndarray, dice: Sequence[int], box_names: Sequence[str], n: int = 5
) -> list[tuple[str, float, int]]:
    """The ``n`` best distinct decisions: ``[(description, value, action)]``, best first."""
    seen: dict[str, tuple[float, int]] = {}
    for action in np.flatnonzero(mask):
        text = describe_action(int(action), dice, box_names)
        if text not in seen and np.isfinite(values[action]):
            seen[text] = (float(values[action]), int(action))
    ranked = sorted(seen.items(), key=lambda item: -item[1][0])
    return [(text, value, action) for text, (value, action) in ranked[:n]]


@dataclass
class Decision:
    turn: int
    dice: tuple[int, ...]
    rolls_left: int
    chosen: str
    best: str
    lost: float


@dataclass
class Grades:
    decisions: list[Decision] = field(default_factory=list)

    @property
    def lost(self) -> float:
        return sum(d.lost for d in self.decisions)


# ------------------------------------------------------------------- game
def _solution_cached(rules: Rules) -> bool:
    """Whether the solver's cache holds this ruleset's solution (then nothing is solved, and nothing is said)."""
    from dice_poker_env.solver.cache import cache_path

    return cache_path(rules.name, rules.fingerprint).is_file()


def load_opponents(names: Sequence[str], rules: Rules, seed: int | None, screen: Screen) -> list[Any]:
    """Agents by name; one whose optional dependencies are missing (``model:PATH`` without
    the ``train`` extra) is replaced by a random player, with a message."""
    opponents = []
    for k, name in enumerate(names):
        agent_seed = None if seed is None else seed + 1 + k
        if name == "optimal" and not _solution_cached(rules):
            screen.say("(the optimal agent solves the game exactly first; this is done once)", "dim")
        try:
            opponents.append(make_agent(name, rules, seed=agent_seed))
        except ImportError as error:
            screen.say(f"opponent {name!r} is not available ({error}); a random player takes the seat", "yellow")
            opponents.append(RandomAgent(agent_seed))
    return opponents


class SoloTable:
    """``--opponents none``: the one-seat game, :class:`~dice_poker_env.envs.single.DicePokerEnv`
    behind the few calls the game loop makes of the multi-player env (one seat, ``player_0``)."""

    possible_agents = ("player_0",)
    agent_selection = "player_0"
    current = 0

    def __init__(self, rules: Rules) -> None:
        from dice_poker_env.envs.single import DicePokerEnv

        self.env = DicePokerEnv(rules, obs_mode="dict")
        self.tables = self.env.tables

    def reset(self, seed: int | None = None) -> None:
        self.seen, _ = self.env.reset(seed=seed)

    @property
    def games(self) -> list[game.GameState]:
        assert self.env.state is not None  # (after reset)
        return [self.env.state]

    @property
    def game_over(self) -> bool:
        return game.is_over(self.tables, self.games[0])

    def observe(self, agent: str) -> dict[str, Any]:
        return {"observation": self.seen, "action_mask": self.env.action_masks()}

    def step(self, action: int) -> None:
        self.seen = self.env.step(action)[0]

    def scorecard(self, agent: str) -> dict[str, int | None]:
        return self.env.scorecard()

    def totals(self) -> dict[str, int]:
        return {"player_0": self.env.score}


def seat_names(player: str, opponents: Sequence[str]) -> list[str]:
    names = [player]
    for name in opponents:
        label = name.split(":", 1)[0] if name.startswith("model:") else name
        base, n = label, 2
        while label in names:
            label, n = f"{base} {n}", n + 1
        names.append(label)
    return names


def play(args: argparse.Namespace) -> int:
    from dice_poker_env import multi

    if importlib.util.find_spec("pettingzoo") is None:  # multi.raw_env is a PettingZoo AECEnv
        raise ValueError(
            "PettingZoo is not installed (the game's table is dice_poker_env.multi's PettingZoo env): pip install 'dice-poker-env[cli]'"
        )
    solo = [name.lower() for name in args.opponents] == ["none"]
    if "none" in (name.lower() for name in args.opponents) and not solo:
        raise ValueError("--opponents none plays alone: give it alone, not with other agents")
    if not solo and not 1 <= len(args.opponents) <= MAX_OPPONENTS:
        raise ValueError(f"--opponents takes 1 to {MAX_OPPONENTS} agents, got {len(args.opponents)}")
    if args.seed is not None and args.seed < 0:
        raise ValueError(f"--seed must be >= 0, got {args.seed}")
    if sys.stdin is None or sys.stdin.closed:
        raise ValueError("standard input is closed: play reads your commands from it (a terminal or a script)")
    rules = load_rules_from(args)
    names = seat_names(args.name, [] if solo else args.opponents)
    screen = Screen(rules, names)
    opponents = [] if solo else load_opponents(args.opponents, rules, args.seed, screen)
    env: Any = SoloTable(rules) if solo else multi.raw_env(rules, len(names), obs_mode="dict")
    for spec, opponent in zip(args.opponents, opponents):  # refused now, not at its first move
        problem = table_problem(opponent, env.tables, len(names))
        if problem is not None:
            raise ValueError(f"--opponents {spec}: {problem}")
    env.reset(seed=args.seed)
    coach = Coach(rules, screen)
    grading = not args.no_grade
    grades = Grades()
    box_names = rules.box_names
    who = "you" if names[0] == "you" else f"you ({names[0]})"
    against = f"against {', '.join(names[1:])}" if names[1:] else "alone, for the best score"
    screen.say(f"{rules.title}: {who} {against}. Type `help` for the commands.", "bold")
    last_turn_shown = -1
    kept: list[int] | None = None  # the faces the human kept at the last reroll: the others are new
    names_agent = env.possible_agents[0]
    while not env.game_over:
        i = env.current
        obs = env.observe(env.agent_selection)
        view, mask = obs["observation"], obs["action_mask"]
        dice = [int(d) for d in view["dice"]]
        if i != 0:
            action = opponent_action(env, opponents, i, names, screen)
            what = describe_action(action, dice, box_names)
            env.step(action)
            after = env.games[i]
            if action >= N_KEEP_ACTIONS:
                points = int(after.scores[action - N_KEEP_ACTIONS])
                screen.say(f"{names[i]}: {' '.join(map(str, dice))} → {what} for {points}")
            else:
                screen.say(f"{names[i]}: {' '.join(map(str, dice))} → {what}")
            continue
        turn = int(view["turn"]) + 1
        if turn != last_turn_shown:
            last_turn_shown = turn
            screen.board(env.games, 0, None)
        marks, upper = new_dice(dice, kept), upper_progress(screen.tables, env.games[0])
        screen.dice(dice, int(view["rolls_left"]), turn, marks, upper)
        values = coach.values(view) if (args.hints or grading) else None
        boxes_now = points_now(screen.tables, env.games[0], mask)
        if args.hints:
            show_hints(screen, coach, values, mask, dice, box_names, boxes_now)
        while True:
            try:
                line = screen.ask(PROMPT_REROLL if int(view["rolls_left"]) > 0 else PROMPT_SCORE)
            except EOFError:
                screen.say("\ninput ended (EOF): the game is abandoned.", "yellow")
                report_grades(screen, coach, grades, grading)
                return 1
            command = parse_command(line, dice, int(view["rolls_left"]), rules, mask, env.scorecard(names_agent))
            if command.error:
                screen.say(command.error, "red")
                continue
            if command.special == "help":
                screen.say(COMMANDS_HELP)
                continue
            if command.special == "board":
                screen.board(env.games, 0, potential_now(env))
                screen.dice(dice, int(view["rolls_left"]), turn, marks, upper)
                continue
            if command.special == "hint":
                show_hints(screen, coach, coach.values(view), mask, dice, box_names, boxes_now)
                continue
            if command.special == "quit":
                screen.say("you left the game.", "yellow")
                report_grades(screen, coach, grades, grading)
                return 0
            break
        assert command.action is not None  # neither an error nor a special word: an action
        action = command.action
        if values is not None:
            best = top_actions(values, mask, dice, box_names, n=1)[0]
            lost = max(0.0, best[1] - float(values[action]))
            chosen = describe_action(action, dice, box_names)
            grades.decisions.append(Decision(turn, tuple(dice), int(view["rolls_left"]), chosen, best[0], lost))
        env.step(action)
        kept = [dice[k] for k in range(N_DICE) if action >> k & 1] if action < N_KEEP_ACTIONS else None
        if action >= N_KEEP_ACTIONS:
            points = int(env.games[0].scores[action - N_KEEP_ACTIONS])
            screen.say(f"you write {points} in {box_names[action - N_KEEP_ACTIONS]}", "green")
    finish(screen, env, names, rules, coach if solo else None)
    report_grades(screen, coach, grades, grading)
    return 0


def opponent_action(env: raw_env, opponents: list[Any], i: int, names: list[str], screen: Screen) -> int:
    """Seat ``i``'s agent's action; an agent that fails or cheats is replaced by a random player."""
    mask = env.observe(env.agent_selection)["action_mask"]
    try:
        seen = env.observe_for(env.agent_selection, opponents[i - 1])["observation"]
        action = int(opponents[i - 1].act(seen, mask))
        if not (0 <= action < len(mask) and mask[action]):
            raise ValueError(f"it chose the illegal action {action}")
        return action
    except Exception as error:  # noqa: BLE001 - a broken agent must not end the human's game
        cause = error.__cause__ if isinstance(error, AgentError) else None  # the agent's own exception
        screen.say(f"{names[i]} failed ({cause or error}); a random player takes over the seat", "yellow")
        opponents[i - 1] = RandomAgent(i)
        names[i] = f"random (for {names[i]})"  # the seat's moves and standing are the random player's now
        return int(opponents[i - 1].act(None, mask))


def potential_now(env: raw_env | SoloTable) -> np.ndarray:
    from dice_poker_env.envs.observation import potential_points

    return potential_points(env.tables, env.games[0])


def show_hints(
    screen: Screen,
    coach: Coach,
    values: np.ndarray | None,
    mask: np.ndarray,
    dice: Sequence[int],
    box_names: Sequence[str],
    boxes_now: Sequence[tuple[int, int, int]] = (),
) -> None:
    """Every open box's points now (``boxes_now``, :func:`points_now`), then the solver's best actions."""
    if boxes_now:
        parts = [f"{box_names[k]} {points}" + (f" (+{bonus} bonus)" if bonus else "") for k, points, bonus in boxes_now]
        screen.say("points now: " + ", ".join(parts), "magenta")
    if values is None:
        screen.say(f"(no hints: {coach.unavailable})", "dim")
        return
    screen.say("solver's expected final score of the best actions:", "magenta")
    best = None
    for text, value, _ in top_actions(values, mask, dice, box_names):
        best = value if best is None else best
        gap = "" if value == best else f"  ({value - best:+.2f})"
        screen.say(f"  {text:<28} {value:8.2f}{gap}", "magenta")


def finish(screen: Screen, env: Any, names: list[str], rules: Rules, coach: Coach | None = None) -> None:
    """The final board and result; alone (``coach`` given), the score against the solver's expected one."""
    screen.board(env.games, -1, None)
    totals = np.array(list(env.totals().values()))
    if len(totals) == 1:
        line = f"Final score: {int(totals[0])}"
        if coach is not None and coach.load():
            line += f" (optimal play averages {coach.solution.expected_score:.2f} over all dice)"
        screen.say(line, "bold")
        return
    order = np.argsort(-totals, kind="stable")
    screen.say("Final result:", "bold")
    mean = totals.mean()
    for place, i in enumerate(order, start=1):
        extra = f"   ({totals[i] - mean:+.1f} against the mean)" if rules.result == "relative" else ""
        screen.say(f"  {place}. {names[i]:<12} {int(totals[i]):>5}{extra}")
    best = totals.max()
    if totals[0] == best and (totals == best).sum() == 1:
        screen.say("You win!", "bold green")
    elif totals[0] == best:
        screen.say("A shared win!", "bold green")
    else:
        rank = int(1 + (totals > totals[0]).sum())
        screen.say(f"You finish {rank}{_suffix(rank)} of {len(totals)}.", "bold")


def _suffix(n: int) -> str:
    return {1: "st", 2: "nd", 3: "rd"}.get(n, "th")


def report_grades(screen: Screen, coach: Coach, grades: Grades, grading: bool) -> None:
    if not grading:
        return
    if coach.unavailable and not grades.decisions:
        screen.say(f"(no grading: {coach.unavailable})", "dim")
        return
    if not grades.decisions:
        return
    n = len(grades.decisions)
    screen.say(
        f"Your decisions against the solver: {n} decision{'s' if n != 1 else ''}, {grades.lost:.2f} expected points lost "
        f"in total, {grades.lost / n:.2f} per decision.",
        "bold",
    )
    mistakes = sorted((d for d in grades.decisions if d.lost > 0.005), key=lambda d: -d.lost)
    if not mistakes:
        screen.say("Every decision was optimal.", "green")
        return
    from rich.table import Table

    table = Table(title="costliest decisions", header_style="bold")
    for column in ("turn", "dice", "rerolls", "you", "best", "lost"):
        table.add_column(column, justify="right" if column in ("turn", "rerolls", "lost") else "left")
    for d in mistakes[:8]:
        table.add_row(str(d.turn), " ".join(map(str, d.dice)), str(d.rolls_left), d.chosen, d.best, f"{d.lost:.2f}")
    screen.console.print(table)


HELP = "play a game in the terminal against the agents"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = textwrap.fill(
        "Play a dice game in the terminal against agents (one seat each), or alone "
        "(--opponents none). Dice and "
        "scorecards are drawn in the terminal; type commands as below. With --hints the "
        "solver's expected final score of the best actions is shown before each decision; "
        "at the end your decisions are graded against the solver. Reads a script of "
        "commands from standard input when it is not a terminal.",
        78,
    )
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = COMMANDS_HELP
    add_rules_arguments(parser)
    parser.add_argument(
        "--opponents",
        nargs="+",
        default=["greedy"],
        metavar="AGENT",
        help="one agent per opponent seat: random, greedy, optimal, trained, winning[,target=T|,future=reach], "
        "model:PATH, FILE.py:NAME or MODULE:NAME (default: greedy); none: play alone for the best score",
    )
    parser.add_argument("--hints", action="store_true", help="coach mode: show the solver's best actions")
    parser.add_argument("--seed", type=int, default=None, help="seed of the dice (same seed, same dice)")
    parser.add_argument("--name", default="you", help="your name on the scorecard")
    parser.add_argument("--no-grade", action="store_true", help="skip grading your decisions at the end")


run = play
