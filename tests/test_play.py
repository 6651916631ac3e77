"""``dice-poker play``: command parsing, and whole games played from a script on stdin."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("rich")
pytest.importorskip("pettingzoo")

from agents.commands.play import (  # noqa: E402
    dice_art,
    match_box,
    new_dice,
    parse_command,
    points_now,
    upper_progress,
)
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


@pytest.mark.parametrize(
    "text", ["r #13", "reroll #1 3", "roll #1,#3", "r #31", "k #245", "keep #2 4 5", "hold #5,4,2", "K #2#4#5"]
)
def test_positions_after_a_hash(text):
    # the dice 1 2 2 4 6 in positions #1 to #5: rerolling #1 and #3 keeps #2, #4 and #5 (bits 1, 3 and 4)
    assert command(text).action == 0b11010


def test_digits_are_faces_without_a_hash():
    """``r 25``: faces 2 and 5 (there is no 5 among 1 2 2 4 6); ``r #25``: the dice in positions 2 and 5."""

    def kept(text):
        action = command(text).action
        return [d for i, d in enumerate(DICE) if action >> i & 1]

    assert "no 5 to reroll" in command("r 25").error
    assert kept("r #25") == [1, 2, 4] == kept("r 26")  # positions 2 and 5 show the faces 2 and 6
    assert kept("r 12") == [2, 4, 6] == kept("r #12")
    assert kept("k 4") == [4] == kept("k #4") and kept("k #1") == [1]
    assert command("r #12345").action == 0  # every position: reroll all


@pytest.mark.parametrize(
    "text, message",
    [
        ("r #", "which positions?"),
        ("k #6", "positions are 1 to 5 (#1 is the leftmost die), not 6"),
        ("k #0", "not 0"),
        ("r #11", "position 1 given twice"),
        ("k #12345", "keeping all five dice is not a roll"),
        ("k #a", "not a list of positions"),
    ],
)
def test_bad_positions_are_explained(text, message):
    result = command(text)
    assert result.action is None and message in result.error


def test_new_dice_are_those_not_kept():
    assert new_dice([1, 3, 5, 5, 6], None) == [False] * 5  # a turn's first roll: nothing marked
    assert new_dice([1, 3, 5, 5, 6], [3, 5, 6]) == [True, False, False, True, False]  # of two 5s, the left one kept
    assert new_dice([2, 2, 2, 4, 6], []) == [True] * 5
    art = dice_art([1, 3, 5, 5, 6], [True, False, False, True, False])
    assert "#1 new" in art and "#4 new" in art and "#2 new" not in art and art.count("╔") == 2
    assert "#3" in dice_art(DICE) and "new" not in dice_art(DICE)


def test_upper_total_against_the_bonus_threshold():
    from dice_poker_env.engine.state import GameState
    from dice_poker_env.engine.tables import compile_rules

    yahtzee = compile_rules(load_rules("yahtzee"))
    scores = np.zeros(yahtzee.n_boxes, dtype=np.int64)
    state = GameState(filled=0b111110, scores=scores, upper_total=48, bonus=0, roll=0, rolls_left=2)
    assert upper_progress(yahtzee, state) == "upper 48/63"
    assert upper_progress(yahtzee, state._replace(upper_total=66, bonus=35)) == "upper 66/63, bonus +35"
    assert upper_progress(compile_rules(YACHT), state._replace(scores=scores[:12])) == "upper 48"  # no bonus


def test_points_now_of_every_open_box():
    from dice_poker_env.engine.combinatorics import roll_index
    from dice_poker_env.engine.state import GameState
    from dice_poker_env.engine.tables import compile_rules

    rules = load_rules("yahtzee")
    tables = compile_rules(rules)
    scores = np.zeros(tables.n_boxes, dtype=np.int64)
    scores[[0, 2, 3, 4, 5]] = [3, 9, 12, 15, 18]  # 57: two 6s... or three 2s reach 63
    state = GameState(
        filled=0b111101, scores=scores, upper_total=57, bonus=0, roll=roll_index([2, 2, 2, 5, 6]), rolls_left=0
    )
    mask = np.zeros(32 + tables.n_boxes, dtype=np.int8)
    mask[32 + 1 :] = 1
    mask[32 + 2 : 32 + 6] = 0  # the filled upper boxes
    now = {rules.box_names[k]: (points, bonus) for k, points, bonus in points_now(tables, state, mask)}
    assert now["twos"] == (6, 35)  # 57 + 6 = 63: the bonus comes with it
    assert now["three_of_a_kind"] == (17, 0) and now["full_house"] == (0, 0) and now["chance"] == (17, 0)
    assert set(now) == {"twos", *rules.box_names[6:]}


@pytest.mark.parametrize("text", ["roll all", "reroll", "r", "reroll all", "keep none"])
def test_reroll_everything(text):
    assert command(text).action == 0


@pytest.mark.parametrize("text", ["keep", "k", "hold"])
def test_a_bare_keep_asks_which_dice(text):
    """A player who types ``k`` may mean to stand: nothing is rerolled, and the message says how to."""
    done = command(text)
    assert done.action is None and "which dice?" in done.error and "none` rerolls all five" in done.error


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
    # same seed, same game (the second run reads the solution the first cached: no "solving" line)
    again = run_play(["yacht", "--opponents", "greedy", "random", "--seed", "3"], whole_game_script())
    assert "(solving yacht exactly" not in again.stdout
    assert again.stdout == "".join(
        line for line in out.splitlines(True) if not line.startswith("(solving yacht exactly")
    )


def test_alone_for_the_best_score():
    """``--opponents none``: one scorecard, the final score against the solver's expected one, the same grading."""
    lines = []
    for prefix in PREFIXES:
        lines += ["r", "reroll", f"s {prefix}"]
    result = run_play(["yacht", "--opponents", "none", "--seed", "3"], "\n".join(lines) + "\n")
    out = result.stdout
    assert result.returncode == 0 and "Traceback" not in result.stderr, out + result.stderr
    assert "alone, for the best score" in out and out.count("you write") == 12
    assert "Final result:" not in out and "greedy" not in out
    final = re.search(r"Final score: (\d+) \(optimal play averages 169\.77 over all dice\)", out)
    written = sum(int(n) for n in re.findall(r"you write (\d+) in", out))
    assert final and int(final.group(1)) >= written  # the boxes, plus any bonus
    assert "expected points lost" in out
    again = run_play(["yacht", "--opponents", "none", "--seed", "3"], "\n".join(lines) + "\n")
    solving = "(solving yacht exactly"  # only the run that solved it first says so
    assert again.stdout == "".join(line for line in out.splitlines(True) if not line.startswith(solving))
    mixed = run_play(["yacht", "--opponents", "none", "greedy"], "")
    assert mixed.returncode == 2 and "--opponents none plays alone" in mixed.stderr


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
    assert result.stdout.count("points now: ones ") == 2  # every open box's points, in box order


def test_the_prompt_positions_new_dice_and_upper_total():
    """The prompt says digits are faces and ``#`` digits positions; a reroll marks the new dice; the upper total
    is shown against the bonus threshold, on the dice's line and the board."""
    script = "help\nr #13\nk #1\nr 1\ns chance\nquit\n"
    result = run_play(["yahtzee", "--opponents", "random", "--seed", "1", "--no-grade"], script)
    out = result.stdout
    assert result.returncode == 0 and "Traceback" not in result.stderr, out + result.stderr
    # rerolls left: `help`, `r #13`, `k #1`, and `quit` on turn 2; none left: `r 1` (refused) and `s chance`
    assert out.count("faces: r 12 · positions: r #12 · score: s BOX > ") == 4
    assert [line for line in out.splitlines() if line.startswith("score: s BOX > ")] == [
        "score: s BOX > r 1",
        "score: s BOX > s chance",
    ]
    assert "reroll #1 3   (or: r #13)" in out and "after # they are positions" in out  # help
    assert "no rerolls left this turn" in out
    assert "turn 1/13, 2 rerolls left, upper 0/63\n" in out
    # the seed's first roll is 1 3 4 5 6; `r #13` rerolls the 1 and the 4: two new dice, #1 and #4 here
    assert "turn 1/13, 1 reroll left, upper 0/63; rerolled 2 dice, marked new" in out
    assert " #1 new       #2         #3       #4 new       #5" in out
    assert "rerolled 4 dice, marked new" in out  # `k #1`
    assert "│ upper total     │  0/63 │   0/63 │" in out  # the board


def test_unknown_opponent_is_a_clear_error():
    result = run_play(["yacht", "--opponents", "wizard"], "")
    assert result.returncode == 2
    assert result.stderr == (
        "dice-poker play: error: unknown agent 'wizard': use one of optimal, greedy, random, "
        "trained, winning, model:PATH, FILE.py:NAME or MODULE:NAME\n"
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


def test_an_opponent_that_cannot_read_the_table_is_refused_before_the_game(tmp_path):
    """A self-play policy reads a two-player table: at a three-player table it is refused at the start (it used
    to fail at its first move and have a random player play under its name)."""
    pytest.importorskip("torch")
    from agents.policy.heads import PolicyHeads, PolicyOptions
    from agents.policy.player import save_policy
    from agents.training.actor_critic import ActorCritic
    from dice_poker_env import load_rules

    yacht = load_rules("yacht")
    two = ActorCritic(PolicyHeads(yacht, PolicyOptions(players=2)), [8]).export()
    metadata = {
        "rules": "yacht",
        "rules_fingerprint": yacht.fingerprint,
        "activation": "tanh",
        "features": True,
        "players": 2,
    }
    path = save_policy(tmp_path / "two", two, metadata)
    result = run_play(["yacht", "--opponents", f"model:{path}", "greedy", "--seed", "1"], "quit\n")
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stdout + result.stderr
    assert "--opponents model:" in result.stderr and "reads a 2-player table's flat observation" in result.stderr


def test_a_seat_taken_over_by_a_random_player_plays_under_that_name(tmp_path):
    agent = tmp_path / "broken.py"
    agent.write_text("class Broken:\n    def act(self, observation, action_mask):\n        raise RuntimeError('no')\n")
    result = run_play(["yacht", "--opponents", f"{agent}:Broken", "--seed", "1", "--no-grade"], "s on\nquit\n")
    assert "Traceback" not in result.stderr, result.stderr
    out = " ".join(result.stdout.split())  # (the long path wraps)
    assert "failed (no); a random player takes over the seat" in out
    assert re.search(r"random \(for \S*broken\.py:Broken\): [1-6 ]+ → ", out)  # its moves are the random player's
