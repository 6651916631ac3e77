"""Text rendering of a game: the dice and a readable scorecard."""

from __future__ import annotations

from dice_poker_env.engine.combinatorics import ROLL_DICE
from dice_poker_env.engine.state import GameState
from dice_poker_env.engine.tables import RuleTables
from dice_poker_env.envs.observation import potential_points

_PIPS = "⚀⚁⚂⚃⚄⚅"


def render_ansi(tables: RuleTables, state: GameState, *, dice: bool = True) -> str:
    """The dice, rolls left and scorecard of one game as plain text (of a batch: ``batch.game(i)``).

    ``dice=False``: the scorecard only, without the dice, rolls left and "would score" hints (a player of a
    multi-player game waiting for their turn, whose dice are placeholders until it starts).
    """
    rules = tables.rules
    filled = state.filled
    over = bin(filled).count("1") >= tables.turns
    show = dice and not over
    potential = potential_points(tables, state)
    lines = [f"{rules.title}   turn {min(bin(filled).count('1') + 1, tables.turns)}/{tables.turns}"]
    if show:
        rolled = ROLL_DICE[state.roll]
        faces = " ".join(str(int(d)) for d in rolled)
        pips = " ".join(_PIPS[int(d) - 1] for d in rolled)
        lines.append(f"dice: {faces}   {pips}   rolls left: {state.rolls_left}")
    width = max(len(n) for n in rules.box_names)
    lines.append("-" * (width + 22))
    for k, name in enumerate(rules.box_names):
        if filled >> k & 1:
            cell = f"{int(state.scores[k]):>5}"
        else:
            cell = "    ." + (f"   (would score {int(potential[k])})" if show and potential[k] else "")
        if k > 0 and tables.is_upper[k - 1] and not tables.is_upper[k]:
            upper = state.upper_total
            lines.append(f"{'upper total':<{width}} {upper:>5}")
        lines.append(f"{name:<{width}} {cell}")
    lines.append("-" * (width + 22))
    lines.append(f"{'bonus':<{width}} {state.bonus:>5}")
    lines.append(f"{'TOTAL':<{width}} {int(state.total):>5}")
    return "\n".join(lines)
