"""Image rendering of a game (``render_mode="rgb_array"``): the dice and the scorecard.

Drawn with Pillow, imported only when an image is asked for (the ``render``
extra), so the core package needs neither. Every frame of a ruleset has the
same size, ``(height, width, 3)`` ``uint8``, as Gymnasium's ``RecordVideo`` wants.
"""

from __future__ import annotations

from functools import lru_cache
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from dice_poker_env.engine.combinatorics import ROLL_DICE
from dice_poker_env.engine.state import GameState
from dice_poker_env.engine.tables import RuleTables
from dice_poker_env.envs.observation import potential_points

if TYPE_CHECKING:  # Pillow is the render extra, imported when a frame is drawn
    from PIL import ImageDraw, ImageFont

    Font = ImageFont.ImageFont | ImageFont.FreeTypeFont

WIDTH = 360
DIE = 52  # side of a die, pixels
GAP = 14  # between dice
TOP = 44  # title line
ROW = 20  # one scorecard line
MARGIN = 16

BACKGROUND = (18, 94, 56)  # card-table green
PAPER = (250, 247, 236)
INK = (30, 30, 30)
FAINT = (140, 140, 140)
HINT = (20, 120, 60)
DIE_FACE = (255, 255, 255)
DIE_EDGE = (60, 60, 60)
PIP = (20, 20, 20)

#: pip centres of each face on a 3 x 3 grid (column, row); the grade report's dice use them too
PIPS = {
    1: [(1, 1)],
    2: [(0, 0), (2, 2)],
    3: [(0, 0), (1, 1), (2, 2)],
    4: [(0, 0), (2, 0), (0, 2), (2, 2)],
    5: [(0, 0), (2, 0), (1, 1), (0, 2), (2, 2)],
    6: [(0, 0), (2, 0), (0, 1), (2, 1), (0, 2), (2, 2)],
}


def _pil() -> tuple[ModuleType, ModuleType, ModuleType]:
    try:
        from PIL import Image, ImageDraw, ImageFont
    except ImportError as error:  # pragma: no cover - Pillow is the render extra
        from gymnasium.error import DependencyNotInstalled

        raise DependencyNotInstalled(
            "render_mode='rgb_array' needs Pillow: pip install 'dice-poker-env[render]'"
        ) from error
    return Image, ImageDraw, ImageFont


@lru_cache(maxsize=4)
def _font(size: int) -> Font:
    _, _, image_font = _pil()
    try:
        return image_font.load_default(size=size)
    except TypeError:  # Pillow < 10.1: one bitmap size
        return image_font.load_default()


def image_size(tables: RuleTables) -> tuple[int, int]:
    """``(height, width)`` of every frame of this ruleset."""
    rows = tables.n_boxes + 4  # boxes, upper total, bonus, total, spacing
    return TOP + DIE + 28 + rows * ROW + MARGIN, WIDTH


def render_rgb(tables: RuleTables, state: GameState) -> np.ndarray:
    """The dice, rolls left and scorecard of one game (of a batch: ``render_rgb(tables, batch.game(i))``).

    Returns an ``(height, width, 3)`` ``uint8`` array (:func:`image_size`).
    """
    Image, ImageDraw, _ = _pil()
    rules = tables.rules
    height, width = image_size(tables)
    image = Image.new("RGB", (width, height), BACKGROUND)
    draw = ImageDraw.Draw(image)
    title, small = _font(16), _font(13)

    filled, scores, bonus = int(state.filled), np.asarray(state.scores), int(state.bonus)
    turns_done = bin(filled).count("1")
    over = turns_done >= tables.turns
    total = int(scores.sum()) + bonus

    name = rules.title
    while draw.textlength(name, font=title) > width - 2 * MARGIN and len(name) > 4:
        name = name[:-2].rstrip() + "…"
    draw.text((width // 2, 12), name, fill=PAPER, font=title, anchor="ma")

    # the dice
    left = (width - (5 * DIE + 4 * GAP)) // 2
    for i, face in enumerate(ROLL_DICE[int(state.roll)]):
        x, y = left + i * (DIE + GAP), TOP
        _draw_die(draw, x, y, int(face), faded=over)
    if over:
        status = f"game over: {total} points"
    else:
        rerolls = {0: "no rerolls left", 1: "1 reroll left", 2: "2 rerolls left"}[int(state.rolls_left)]
        status = f"turn {turns_done + 1}/{tables.turns}  ·  {rerolls}"
    draw.text((width // 2, TOP + DIE + 6), status, fill=PAPER, font=small, anchor="ma")

    # the scorecard
    card_top = TOP + DIE + 28
    draw.rounded_rectangle((MARGIN, card_top, width - MARGIN, height - MARGIN // 2), radius=6, fill=PAPER)
    potential = None if over else np.asarray(potential_points(tables, state)).reshape(-1)
    y = card_top + 6
    for k, name in enumerate(rules.box_names):
        if k > 0 and tables.is_upper[k - 1] and not tables.is_upper[k]:
            _line(draw, y, "upper total", str(int(state.upper_total)), FAINT, small, width)
            y += ROW
        if filled >> k & 1:
            _line(draw, y, name, str(int(scores[k])), INK, small, width)
        else:
            hint = f"({int(potential[k])})" if potential is not None and potential[k] else "·"
            _line(draw, y, name, hint, HINT if hint != "·" else FAINT, small, width, name_fill=INK)
        y += ROW
    _line(draw, y, "bonus", str(bonus), FAINT, small, width)
    y += ROW
    draw.line((MARGIN + 8, y + 2, width - MARGIN - 8, y + 2), fill=FAINT, width=1)
    _line(draw, y + 5, "TOTAL", str(total), INK, title, width)
    return np.asarray(image, dtype=np.uint8)


def _line(
    draw: ImageDraw.ImageDraw,
    y: int,
    name: str,
    value: str,
    fill: tuple[int, int, int],
    font: Font,
    width: int,
    name_fill: tuple[int, int, int] | None = None,
) -> None:
    draw.text((MARGIN + 10, y), name.replace("_", " "), fill=name_fill or fill, font=font)
    draw.text((width - MARGIN - 10, y), value, fill=fill, font=font, anchor="ra")


def _draw_die(draw: ImageDraw.ImageDraw, x: int, y: int, face: int, faded: bool) -> None:
    edge = FAINT if faded else DIE_EDGE
    draw.rounded_rectangle(
        (x, y, x + DIE, y + DIE), radius=9, fill=DIE_FACE if not faded else PAPER, outline=edge, width=2
    )
    step, r = DIE / 4, 5
    for col, row in PIPS[face]:
        cx, cy = x + step * (col + 1), y + step * (row + 1)
        draw.ellipse((cx - r, cy - r, cx + r, cy + r), fill=FAINT if faded else PIP)
