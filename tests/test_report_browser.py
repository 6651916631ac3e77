"""The grade report's replay in a real browser: headless Chromium opens report.html, steps through
a game with mouse clicks and the keyboard, and what it shows is checked against the game record:
the dice, the card with its upper subtotal and what the upper bonus needs, the best actions (opened
on demand), the costliest mistakes' links to their moves and the previous/next-mistake buttons and keys.

Skipped where no Chromium is installed (Debian: ``apt-get install chromium``; ``.ci/run`` installs
it). Chromium is driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``), so no
driver package is needed. A screenshot of the replay is kept: in ``$DICE_POKER_TEST_ARTIFACTS`` when
that is set (CI), else in the test's temporary folder.
"""

from __future__ import annotations

import base64
import copy
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agents.course.grade_report import describe, render_html

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
BROWSER = next((path for path in map(shutil.which, BROWSERS) if path), None)
# DevTools' answers to an evaluation that met a navigation: the page is still loading, ask again
NAVIGATING = ("Inspected target navigated or closed", "Cannot find context with specified id", "context was destroyed")
pytestmark = pytest.mark.skipif(BROWSER is None, reason="no Chromium installed (Debian: apt-get install chromium)")


class Browser:
    """Headless Chromium over the DevTools protocol on fds 3 (commands) and 4 (answers)."""

    def __init__(self, profile: Path, timeout: float = 120.0):
        self.timeout = timeout
        commands_read, self._write = os.pipe()
        self._read, answers_write = os.pipe()

        def child_fds():  # Chromium reads commands on fd 3 and writes on fd 4
            os.dup2(commands_read, 3)  # (commands_read may be 3 already: dup2 is then a no-op,
            os.dup2(answers_write, 4)  # and only set_inheritable clears close-on-exec)
            os.set_inheritable(3, True)
            os.set_inheritable(4, True)

        self.process = subprocess.Popen(
            [
                BROWSER,
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-extensions",
                "--disable-dev-shm-usage",
                "--remote-debugging-pipe",
                f"--user-data-dir={profile}",
                "--window-size=1200,1600",
                "about:blank",
            ],
            close_fds=False,
            preexec_fn=child_fds,  # (pass_fds would close 3 and 4 after child_fds)
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=dict(
                os.environ,
                HOME=str(profile),
                XDG_CONFIG_HOME=str(profile / "config"),
                XDG_CACHE_HOME=str(profile / "cache"),
            ),  # nothing written outside the test's folder
        )
        os.close(commands_read)
        os.close(answers_write)
        self._buffer = b""
        self._id = 0
        self.session = None

    def call(self, method: str, params: dict | None = None, session: bool = True) -> dict:
        self._id += 1
        message = {"id": self._id, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            while b"\0" not in self._buffer:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"no answer to {method}")
                chunk = os.read(self._read, 1 << 20)
                if not chunk:
                    raise RuntimeError("Chromium closed the DevTools pipe")
                self._buffer += chunk
            raw, self._buffer = self._buffer.split(b"\0", 1)
            answer = json.loads(raw)
            if answer.get("id") == self._id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer["result"]

    def open(self, url: str) -> None:
        target = self.call("Target.createTarget", {"url": url}, session=False)["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True}, session=False)[
            "sessionId"
        ]
        deadline = time.monotonic() + self.timeout
        while self.poll("document.readyState") != "complete" or not self.poll(
            "!!document.getElementById('replay-position') && "
            "document.getElementById('replay-position').textContent.length > 0"
        ):
            if time.monotonic() > deadline:
                raise TimeoutError("the page did not load")
            time.sleep(0.1)

    def evaluate(self, expression: str):
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def poll(self, expression: str):
        """``evaluate`` while a page may be navigating: None while its old document is torn down
        (Chromium answers "Inspected target navigated or closed" or "Cannot find context" then).
        """
        try:
            return self.evaluate(expression)
        except RuntimeError as error:
            if any(sign in str(error) for sign in NAVIGATING):
                return None
            raise

    def click(self, element_id: str) -> None:
        """A real mouse click in the middle of the element."""
        self.click_on(f"document.getElementById({json.dumps(element_id)})")

    def click_on(self, element: str) -> None:
        """A real mouse click in the middle of the element a JavaScript expression gives."""
        deadline = time.monotonic() + self.timeout
        while True:  # the middle of the element, once nothing covers it there and the page stopped moving
            box = self.evaluate(
                f"(() => {{ const e = {element}; "
                "e.scrollIntoView(); const r = e.getBoundingClientRect(); "
                "const x = r.left + r.width / 2, y = r.top + r.height / 2, hit = document.elementFromPoint(x, y); "
                "return [x, y, !!hit && (hit === e || e.contains(hit))]; })()"
            )
            if box[2] and self.evaluate(
                f"(() => {{ const r = ({element}).getBoundingClientRect(); "
                f"return r.left + r.width / 2 === {box[0]} && r.top + r.height / 2 === {box[1]}; }})()"
            ):
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"nothing clickable at the middle of {element}")
            time.sleep(0.05)
        self.evaluate(  # a click that lands elsewhere says so, rather than leaving the page as it was
            f"(() => {{ window.__clicked = false; ({element}).addEventListener("
            "'click', () => { window.__clicked = true; }, {once: true, capture: true}); })()"
        )
        for kind in ("mousePressed", "mouseReleased"):
            self.call(
                "Input.dispatchMouseEvent", {"type": kind, "x": box[0], "y": box[1], "button": "left", "clickCount": 1}
            )
        while self.poll("window.__clicked") is False:  # None: the click opened another page
            if time.monotonic() > deadline:
                raise TimeoutError(f"the click at the middle of {element} did not reach it")
            time.sleep(0.05)

    def until(self, expression: str, check: Callable[[Any], None], timeout: float = 30.0) -> Any:
        """The expression's value once ``check`` passes on it; an input event's effect may land a frame later.

        After ``timeout`` seconds the check's own AssertionError (naming the difference) goes up.
        """
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            try:
                check(value)
                return value
            except AssertionError:
                if time.monotonic() > deadline:
                    raise
            time.sleep(0.05)

    def key(self, key: str, code: int) -> None:
        for kind in ("keyDown", "keyUp"):
            self.call("Input.dispatchKeyEvent", {"type": kind, "key": key, "code": key, "windowsVirtualKeyCode": code})

    def screenshot(self, path: Path) -> None:
        data = self.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        try:
            self.call("Browser.close", session=False)
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._write)
        os.close(self._read)


SHOWN = """(() => {
  const $ = (id) => document.getElementById(id);
  const card = {};
  for (const row of document.querySelectorAll('#replay-card tr[data-box]')) card[row.dataset.box] = row.cells[1].textContent;
  return {position: $('replay-position').textContent, dice: $('replay-dice').dataset.dice,
          held: parseInt($('replay-dice').dataset.held, 10),
          held_dice: document.querySelectorAll('#replay-dice rect.held').length,
          faces: Array.from(document.querySelectorAll('#replay-dice rect')).map(r => r.dataset.face).join(''),
          action: $('replay-action').textContent, best: $('replay-best').textContent,
          loss: $('replay-loss').dataset.loss, card: card, total: $('replay-total').textContent,
          upper: $('replay-upper').textContent, bonus: $('replay-bonus').textContent,
          alternatives: Array.from(document.querySelectorAll('#replay-alt-rows tr')).map(
            r => [parseInt(r.dataset.action, 10), r.cells[1].textContent, r.cells[2].textContent, r.className]),
          hash: location.hash};
})()"""


def expected(report: dict, game: int, move: int) -> dict:
    """What the replay must show at ``move`` of ``game``, from the game record alone."""
    boxes = report["box_names"]
    moves = report["replays"][game]["moves"]
    dice, _, action, best, loss, _, points = moves[move]
    card = {name: "" for name in boxes}
    for earlier in moves[:move]:
        if earlier[6] is not None:
            card[boxes[earlier[2] - 32]] = str(earlier[6])
    held = action if 0 <= action < 31 else -1
    return {
        "dice": dice,
        "held": held,
        "held_dice": bin(held).count("1") if held > 0 else 0,
        "faces": dice,
        "action": describe(action, dice, boxes, points),
        "best": describe(best, dice, boxes),
        "loss": "" if loss is None else loss,
        "card": card,
        "total": str(sum(m[5] for m in moves[:move])),
        "upper": f"{upper_total(report, game, move)}/63",
    }


def upper_total(report: dict, game: int, move: int) -> int:
    """The upper subtotal (yahtzee: aces to sixes, boxes 0 to 5) before ``move``, from the game record."""
    return sum(m[6] for m in report["replays"][game]["moves"][:move] if m[6] is not None and m[2] - 32 < 6)


def shows(browser: Browser, want: dict) -> dict:
    """What the replay shows once it shows ``want``; an AssertionError naming the first difference otherwise."""
    return browser.until(SHOWN, lambda shown: check(shown, want))


def _equal(value: Any, want: Any) -> None:
    assert value == want, (value, want)


def check(shown: dict, want: dict) -> None:
    for key in ("dice", "held", "held_dice", "faces", "action", "best", "card", "total", "upper"):
        assert shown[key] == want[key], (key, shown[key], want[key])
    if want["loss"] == "":
        assert shown["loss"] == ""
    else:
        assert float(shown["loss"]) == pytest.approx(want["loss"], abs=1e-9)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    from agents.course.grader import grade
    from agents.course.sandbox import Limits

    folder = tmp_path_factory.mktemp("browser")
    (folder / "student.py").write_text(
        "import numpy as np\n\nfrom dice_poker_env.engine import score\n\n\nclass Keeper:\n"
        "    def __init__(self, rules):\n        self.rules = rules\n\n"
        "    def act(self, observation, action_mask):\n"
        "        dice = observation['dice']\n"
        "        if observation['rolls_left'] > 0 and observation['turn'] % 2 == 0:\n"
        "            return int(np.flatnonzero(action_mask[:31])[-1])\n"
        "        boxes = np.flatnonzero(action_mask[32:])\n"
        "        return 32 + int(max(boxes, key=lambda k: score(self.rules, dice.tolist(), int(k))))\n"
    )
    return grade(
        f"{folder / 'student.py'}:Keeper",
        "yahtzee",
        games=3,
        seed=11,
        limits=Limits(decision_seconds=60, game_seconds=600, load_seconds=300),
    )


def test_the_replay_shows_the_recorded_game(report, tmp_path):
    page = tmp_path / "report.html"
    page.write_text(render_html(report), encoding="utf-8")
    artifacts = Path(os.environ.get("DICE_POKER_TEST_ARTIFACTS", tmp_path))
    artifacts.mkdir(parents=True, exist_ok=True)
    browser = Browser(tmp_path / "profile")
    try:
        browser.open(page.as_uri())
        assert browser.evaluate("document.getElementById('percent').textContent").endswith("%")
        moves = report["replays"][0]["moves"]
        shows(browser, expected(report, 0, 0))
        for move in range(1, len(moves)):  # every move of game 0 with the "move" button
            browser.click("replay-next")
            shows(browser, expected(report, 0, move))
        browser.click("replay-next")  # past the end: stays at the last move
        shows(browser, expected(report, 0, len(moves) - 1))
        browser.screenshot(artifacts / "replay_game0_last_move.png")
        browser.click("replay-next-game")
        shows(browser, expected(report, 1, 0))
        for move in (1, 2):  # the keyboard steps too
            browser.key("ArrowRight", 39)
            shows(browser, expected(report, 1, move))
        browser.key("ArrowLeft", 37)
        shows(browser, expected(report, 1, 1))
        browser.evaluate(
            "(() => { const e = document.getElementById('replay-game'); e.value = '3'; "  # numbered from 1
            "e.dispatchEvent(new Event('change')); })()"
        )
        shows(browser, expected(report, 2, 0))
        browser.click("replay-last")
        last = len(report["replays"][2]["moves"]) - 1
        shows(browser, expected(report, 2, last))
        position = browser.evaluate("document.getElementById('replay-position').textContent")
        assert f"final score {report['replays'][2]['score']}" in position and position.startswith("game 3 of 3")
        browser.screenshot(artifacts / "replay_game2_last_move.png")
    finally:
        browser.close()
    shot = artifacts / "replay_game2_last_move.png"
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 5000


def test_the_page_needs_no_network(report):
    page = render_html(report)
    for marker in ("http://", "https://", "<link", 'src="//', "@import"):
        assert marker not in page


def mistakes_in(report: dict) -> list[tuple[int, int]]:
    """``(game, move)`` of every move that lost points, in order."""
    return [
        (g, m)
        for g, record in enumerate(report["replays"])
        for m, move in enumerate(record["moves"])
        if move[4] is not None and move[4] > 0
    ]


def open_move(browser: Browser, game: int, move: int) -> None:
    """Go to a move by the page's address (``#replay-game-G-move-M``, from 1), and wait until it shows."""
    browser.evaluate(f"location.hash = '#replay-game-{game + 1}-move-{move + 1}'")
    deadline = time.monotonic() + 10
    shown = (
        "(() => { const p = document.getElementById('replay-position'); return [+p.dataset.game, +p.dataset.move]; })()"
    )
    while browser.evaluate(shown) != [game, move]:  # hashchange is an event: it comes after the evaluation
        assert time.monotonic() < deadline, f"the replay did not open game {game}, move {move}"
        time.sleep(0.05)


def visible(browser: Browser, selector: str, want: bool | None = None) -> bool:
    """Whether the element shows; with ``want``, once it does (or not) after the last input event."""
    expression = f"document.querySelector({json.dumps(selector)}).checkVisibility()"
    if want is None:
        return browser.evaluate(expression)
    return browser.until(expression, lambda shown: _equal(shown, want))


def test_mistake_links_jump_to_their_move_and_next_mistake_walks_the_mistakes(report, tmp_path):
    page = tmp_path / "report.html"
    page.write_text(render_html(report), encoding="utf-8")
    examples = [m["worst_example"] for m in report["agents"]["submission"]["mistakes"]]
    assert examples
    browser = Browser(tmp_path / "profile")
    try:
        browser.open(page.as_uri())
        assert browser.evaluate("document.querySelectorAll('a.replay-link').length") == len(examples)
        for k, example in enumerate(examples):  # each mistake card's link: a real click
            browser.click_on(f"document.querySelectorAll('a.replay-link')[{k}]")
            shown = shows(browser, expected(report, example["game"], example["move"]))
            assert shown["hash"] == f"#replay-game-{example['game'] + 1}-move-{example['move'] + 1}"
            assert float(shown["loss"]) == pytest.approx(example["loss"], abs=1e-9)
            top = browser.evaluate("document.getElementById('replay').getBoundingClientRect().top")
            assert 0 <= top < browser.evaluate("window.innerHeight")  # the replay scrolled into view
        # the link of the move the address already names (no hashchange) opens it again after a move away
        browser.click("replay-first")
        last = examples[-1]
        browser.click_on(f"document.querySelectorAll('a.replay-link')[{len(examples) - 1}]")
        shows(browser, expected(report, last["game"], last["move"]))
        walk = mistakes_in(report)
        assert len(walk) >= 3
        browser.click("replay-first")
        browser.evaluate(
            "(() => { const e = document.getElementById('replay-game'); e.value = '1'; "
            "e.dispatchEvent(new Event('change')); })()"
        )
        start = 1 if walk[0] == (0, 0) else 0
        for g, m in walk[start:]:  # from game 0, move 0: every mistake of every game with the button
            browser.click("replay-next-mistake")
            shows(browser, expected(report, g, m))
        browser.click("replay-next-mistake")  # none after the last: it stays, and says so
        shows(browser, expected(report, *walk[-1]))
        browser.until(
            "document.getElementById('replay-mistake-note').textContent", lambda note: _equal(note, "no later mistake")
        )
        browser.key("p", 80)  # the keyboard: p back, n forward
        shows(browser, expected(report, *walk[-2]))
        browser.click("replay-prev-mistake")
        shows(browser, expected(report, *walk[-3]))
        browser.key("n", 78)
        shows(browser, expected(report, *walk[-2]))
    finally:
        browser.close()
    browser = Browser(tmp_path / "profile2")
    try:  # a link opened from outside the page (a bookmark, a message) opens its move
        g, m = walk[1]
        browser.open(page.as_uri() + f"#replay-game-{g + 1}-move-{m + 1}")
        shows(browser, expected(report, g, m))
    finally:
        browser.close()


def with_a_twos_scratch(report: dict) -> dict:
    """The report with a made-up fourth game: the upper boxes but twos hold 59, then twos are scratched."""
    report = copy.deepcopy(report)
    moves = [
        ["11236", 0, 32, 32, 0.0, 2, 2],  # aces 2
        ["33335", 0, 34, 34, 0.0, 12, 12],  # threes 12
        ["14445", 0, 35, 35, 0.0, 12, 12],  # fours 12
        ["12555", 0, 36, 36, 0.0, 15, 15],  # fives 15
        ["13666", 0, 37, 37, 0.0, 18, 18],  # sixes 18: upper 59/63
        ["13456", 0, 33, 41, 23.9, 0, 0],  # twos scratched instead of the small straight
        ["12345", 0, 44, 44, 0.0, 15, 15],  # chance
    ]
    report["replays"].append({"score": 74, "moves": moves})
    alternatives = [[[move[2], 200.0]] for move in moves]
    alternatives[5] = [[41, 230.5], [44, 220.1], [33, 206.6]]
    report["replay_detail"]["games"].append({"game": len(report["replays"]) - 1, "alternatives": alternatives})
    return report


def test_the_card_shows_the_upper_bonus_and_the_best_actions_open_on_demand(report, tmp_path):
    made_up = with_a_twos_scratch(report)
    game = len(made_up["replays"]) - 1
    undetailed = 2  # a game without the values of its actions: the record's best move and move made
    made_up["replay_detail"]["games"] = [e for e in made_up["replay_detail"]["games"] if e["game"] != undetailed]
    page = tmp_path / "report.html"
    page.write_text(render_html(made_up), encoding="utf-8")
    browser = Browser(tmp_path / "profile")
    try:
        browser.open(page.as_uri())
        shown = browser.evaluate(SHOWN)
        assert shown["upper"] == "0/63" and visible(browser, "#replay-upper") and visible(browser, "#replay-bonus")
        assert shown["bonus"] == (
            "upper 0/63: bonus +35 needs 63 more from aces (up to 5), twos (up to 10), threes (up to 15), "
            "fours (up to 20), fives (up to 25), sixes (up to 30)"
        )
        for move in range(len(made_up["replays"][0]["moves"])):  # game 0: the subtotal at every move
            open_move(browser, 0, move)
            shows(browser, expected(made_up, 0, move))
        open_move(browser, game, 5)
        shown = shows(browser, expected(made_up, game, 5))
        assert shown["upper"] == "59/63"
        assert shown["bonus"] == "upper 59/63: bonus +35 needs 4 more from twos (up to 10)"
        # the best actions: closed until asked for, then the move made highlighted with its loss
        assert not browser.evaluate("document.getElementById('replay-alternatives').open")
        assert not visible(browser, "#replay-alt-rows")
        browser.click_on("document.querySelector('#replay-alternatives summary')")
        assert visible(browser, "#replay-alt-rows", want=True)
        assert browser.evaluate("document.getElementById('replay-alternatives').open")
        assert browser.evaluate(SHOWN)["alternatives"] == [
            [41, "230.50", "best", ""],
            [44, "220.10", "-10.40", ""],
            [33, "206.60", "-23.90", "chosen"],
        ]
        assert browser.evaluate("document.querySelector('#replay-alt-rows tr.chosen td').textContent") == (
            "score twos (move made)"
        )
        browser.key("ArrowRight", 39)  # the upper section complete at 59: the bonus is missed
        shown = shows(browser, expected(made_up, game, 6))
        assert shown["bonus"] == "upper 59/63: bonus +35 missed: the upper section ended 4 short"
        assert shown["alternatives"] == [[44, "200.00", "best", "chosen"]]  # still open on the next move
        browser.key("a", 65)  # the keyboard closes them
        assert not visible(browser, "#replay-alt-rows", want=False)
        browser.key("a", 65)
        lost = next(m for g, m in mistakes_in(made_up) if g == undetailed)
        open_move(browser, undetailed, lost)
        shown = browser.evaluate(SHOWN)
        _, _, action, best, loss, _, _ = made_up["replays"][undetailed]["moves"][lost]
        assert shown["alternatives"] == [[best, "", "best", ""], [action, "", f"-{loss:.2f}", "chosen"]]
        assert "kept for the first 20 games" in browser.evaluate(
            "document.getElementById('replay-alt-note').textContent"
        )
        browser.screenshot(tmp_path / "alternatives.png")
    finally:
        browser.close()
