"""``dice-poker play``: command parsing, and whole games played from a script on stdin."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("rich")
pytest.importorskip("pettingzoo")

from agents.commands.play import match_box, parse_command  # noqa: E402
from dice_poker_env import load_rules  # noqa: E402

YACHT = load_rules("yacht")
DICE = [1, 2, 2, 4, 6]
ALL_LEGAL = np.ones(32 + YACHT.n_boxes, dtype=np.int8)
ALL_LEGAL[31] = 0


def command(text, dice=DICE, rolls_left=2, rules=YACHT, mask=ALL_LEGAL, scorecard=None):
    return parse_command(text, dice, rolls_left, rules, mask, scorecard)


@pytest.mark.parametrize(
    "text",
    ["keep 2 2 6", "k 226", "K 2 2 6", "hold 2,2,6", "keep 6 2 2", "reroll 1 4", "r 41", "roll 1 4"],
)
def test_keeps_typed_naturally(text):
    # sorted dice 1 2 2 4 6: keeping 2, 2, 6 sets bits 1, 2 and 4
    assert command(text).action == 0b10110


@pytest.mark.parametrize("text", ["roll all", "reroll", "r", "reroll all", "keep", "keep none"])
def test_reroll_everything(text):
    assert command(text).action == 0


@pytest.mark.parametrize(
    "text, box",
    [
        ("score full", "full_house"),
        ("s ful", "full_house"),
        ("score full house", "full_house"),
        ("s fullhouse", "full_house"),
        ("s fours", "fours"),
        ("s four of", "four_of_a_kind"),
        ("s four-of-a-kind", "four_of_a_kind"),
        ("s y", "yacht"),
        ("w ch", "choice"),
        ("choice", "choice"),
    ],
)
def test_boxes_by_unique_prefix(text, box):
    assert command(text).action == 32 + YACHT.box_names.index(box)


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "type a command"),
        ("blah", "is not a command"),
        ("keep 3", "no 3 among your dice"),
        ("keep 2 2 2", "only two 2s"),
        ("k 66", "only one 6"),
        ("keep 7", "not 7"),
        ("keep two", "not a list of dice"),
        ("keep 1 2 2 4 6", "keeping all five dice is not a roll"),
        ("keep all", "keeping all five dice is not a roll"),
        ("k 122466", "only"),
        ("reroll 5", "no 5 to reroll"),
        ("s f", "could be fours, fives, full_house, four_of_a_kind"),
        ("score four", "could be fours, four_of_a_kind"),
        ("score", "which box"),
        ("s xyz", "no box is called `xyz`"),
    ],
)
def test_bad_input_is_explained(text, message):
    result = command(text)
    assert result.action is None and result.special is None
    assert message in result.error


def test_no_rerolls_left():
    assert "no rerolls left" in command("keep 2 2", rolls_left=0).error
    assert "no rerolls left" in command("roll all", rolls_left=0).error
    assert command("s choice", rolls_left=0).action == 32 + 10


def test_filled_and_out_of_order_boxes():
    mask = ALL_LEGAL.copy()
    mask[32 + 11] = 0
    result = command("s yacht", mask=mask, scorecard={"yacht": 50})
    assert "already filled (50)" in result.error
    school = load_rules("school_poker")
    mask = np.zeros(32 + school.n_boxes, dtype=np.int8)
    mask[:31] = 1
    mask[32:38] = 1  # only the upper boxes are open at the start
    result = command("s chance", rules=school, mask=mask, scorecard=dict.fromkeys(school.box_names))
    assert "upper boxes come first" in result.error
    assert command("s six", rules=school, mask=mask).action == 32 + 5


@pytest.mark.parametrize(
    "text, special",
    [("help", "help"), ("?", "help"), ("quit", "quit"), ("q", "quit"), ("board", "board"), ("hint", "hint")],
)
def test_special_words(text, special):
    assert command(text).special == special


def test_match_box_prefers_exact_names():
    names = ("four", "fours")
    assert match_box("four", names) == (0, None)


# ------------------------------------------------------------ whole games
def run_play(args, script, timeout=120):
    env = dict(os.environ, PYTHONIOENCODING="utf-8", COLUMNS="100")
    return subprocess.run(
        [sys.executable, "-m", "dice_poker_env", "play", *args],
        input=script,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        encoding="utf-8",
    )


# Every yacht box by a unique prefix, one per turn, after two full rerolls.
PREFIXES = ["on", "tw", "th", "fours", "fi", "si", "fu", "four of", "l", "b", "c", "y"]
MISTAKES = ["help", "k 7", "blah", "s f", "score four", "keep all", "roll all", "reroll", "roll all"]


def whole_game_script() -> str:
    lines = list(MISTAKES)  # the first turn: bad input, then two rerolls and one more (refused)
    for k, prefix in enumerate(PREFIXES):
        if k:
            lines += ["r", "reroll"]
        lines.append(f"s {prefix}")
        if k == 0:
            lines.append("s on")  # already filled on the next turn: refused, asked again
    return "\n".join(lines) + "\n"


def test_a_whole_game_from_a_script():
    result = run_play(["yacht", "--opponents", "greedy", "random", "--seed", "3"], whole_game_script())
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert "Traceback" not in result.stderr
    for message in [
        "Commands:",
        "dice show 1 to 6, not 7",
        "is not a command",
        "could be fours, fives",
        "keeping all five dice is not a roll",
        "no rerolls left",
        "`ones` is already filled",
    ]:
        assert message in out
    assert "Final result:" in out
    assert out.count("you write") == 12
    assert "greedy" in out and "random" in out
    assert "expected points lost" in out  # graded against the solver
    # same seed, same game
    again = run_play(["yacht", "--opponents", "greedy", "random", "--seed", "3"], whole_game_script())
    assert again.stdout == out


def test_end_of_input_ends_the_game_cleanly():
    result = run_play(["yacht", "--opponents", "random", "--seed", "1", "--no-grade"], "keep 9\nroll all\n")
    assert result.returncode == 1
    assert "input ended (EOF)" in result.stdout
    assert "Traceback" not in result.stderr


def test_quit():
    result = run_play(["yatzy", "--opponents", "random", "--seed", "1", "--no-grade"], "quit\n")
    assert result.returncode == 0 and "you left the game" in result.stdout


def test_hints_show_the_solver_values():
    result = run_play(["yacht", "--opponents", "random", "--seed", "2", "--hints"], "hint\nquit\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("solver's expected final score of the best actions") == 2


def test_unknown_opponent_is_a_clear_error():
    result = run_play(["yacht", "--opponents", "wizard"], "")
    assert result.returncode == 2
    assert result.stderr == (
        "dice-poker play: error: unknown agent 'wizard': use one of optimal, greedy, random, "
        "trained, model:PATH, FILE.py:NAME or MODULE:NAME\n"
    )


def test_too_many_opponents():
    result = run_play(["yacht", "--opponents", *["random"] * 6], "")
    assert result.returncode == 2 and "1 to 5" in result.stderr


def test_closed_stdin_is_a_clear_error():
    """``dice-poker play <&-``: no standard input at all is a one-line error, not an AttributeError."""
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "dice_poker_env", "play", "yacht", "--seed", "1"],
        stdin=None,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        encoding="utf-8",
        preexec_fn=lambda: os.close(0),  # as the shell's <&- does
    )
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.strip() == (
        "dice-poker play: error: standard input is closed: play reads your commands from it (a terminal or a script)"
    )


def test_negative_seed_is_a_clear_error():
    result = run_play(["yacht", "--seed", "-1"], "quit\n")
    assert result.returncode == 2
    assert result.stderr.strip() == "dice-poker play: error: --seed must be >= 0, got -1"


def test_a_shared_prefix_picks_the_only_open_box():
    mask = ALL_LEGAL.copy()
    mask[32 + YACHT.box_names.index("fours")] = 0  # fours filled: `s four` can only be four_of_a_kind
    assert command("s four", mask=mask).action == 32 + YACHT.box_names.index("four_of_a_kind")
    assert "could be" in command("s f", mask=mask).error  # fives, full_house, four_of_a_kind still open


def test_an_opponent_without_its_dependencies_is_replaced_by_a_random_player(monkeypatch):
    """``model:PATH`` without the ``train`` extra (an ImportError) seats a random player, and says so."""
    from agents.commands import play
    from agents.players.random_agent import RandomAgent

    class Screen:
        def __init__(self):
            self.said = []

        def say(self, text, style=None):
            self.said.append(text)

    def make_agent(name, rules, **kwargs):
        if name.startswith("model:"):
            raise ModuleNotFoundError("No module named 'stable_baselines3'")
        return RandomAgent(kwargs.get("seed"))

    monkeypatch.setattr(play, "make_agent", make_agent)
    screen = Screen()
    players = play.load_opponents(["model:m.zip", "random"], YACHT, 0, screen)
    assert len(players) == 2 and all(isinstance(p, RandomAgent) for p in players)
    assert screen.said == [
        "opponent 'model:m.zip' is not available (No module named 'stable_baselines3'); a random player takes the seat"
    ]
    # the stand-in plays with the seat's own seed: the same game as a random opponent in that seat
    same_seat = RandomAgent(1)  # seed 0, first opponent seat: seed + 1
    assert [players[0].act(None, ALL_LEGAL) for _ in range(20)] == [same_seat.act(None, ALL_LEGAL) for _ in range(20)]
