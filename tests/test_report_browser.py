"""The grade report's replay in a real browser: headless Chromium opens report.html, steps through
a game with mouse clicks and the keyboard, and what it shows is checked against the game record.

Skipped where no Chromium is installed (Debian: ``apt-get install chromium``; ``.ci/run`` installs
it). Chromium is driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``), so no
driver package is needed. A screenshot of the replay is kept: in ``$DICE_POKER_TEST_ARTIFACTS`` when
that is set (CI), else in the test's temporary folder.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from agents.course.grade_report import describe, render_html

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
BROWSER = next((path for path in map(shutil.which, BROWSERS) if path), None)
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
        while self.evaluate("document.readyState") != "complete" or not self.evaluate(
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

    def click(self, element_id: str) -> None:
        """A real mouse click in the middle of the element."""
        box = self.evaluate(
            f"(() => {{ const e = document.getElementById({json.dumps(element_id)}); "
            "e.scrollIntoView(); const r = e.getBoundingClientRect(); "
            "return [r.left + r.width / 2, r.top + r.height / 2]; })()"
        )
        for kind in ("mousePressed", "mouseReleased"):
            self.call(
                "Input.dispatchMouseEvent", {"type": kind, "x": box[0], "y": box[1], "button": "left", "clickCount": 1}
            )

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
  for (const row of document.querySelectorAll('#replay-card tr')) card[row.dataset.box] = row.cells[1].textContent;
  return {position: $('replay-position').textContent, dice: $('replay-dice').dataset.dice,
          held: parseInt($('replay-dice').dataset.held, 10),
          held_dice: document.querySelectorAll('#replay-dice rect.held').length,
          faces: Array.from(document.querySelectorAll('#replay-dice rect')).map(r => r.dataset.face).join(''),
          action: $('replay-action').textContent, best: $('replay-best').textContent,
          loss: $('replay-loss').dataset.loss, card: card, total: $('replay-total').textContent};
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
    }


def check(shown: dict, want: dict) -> None:
    for key in ("dice", "held", "held_dice", "faces", "action", "best", "card", "total"):
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
        check(browser.evaluate(SHOWN), expected(report, 0, 0))
        for move in range(1, len(moves)):  # every move of game 0 with the "move" button
            browser.click("replay-next")
            check(browser.evaluate(SHOWN), expected(report, 0, move))
        browser.click("replay-next")  # past the end: stays at the last move
        check(browser.evaluate(SHOWN), expected(report, 0, len(moves) - 1))
        browser.screenshot(artifacts / "replay_game0_last_move.png")
        browser.click("replay-next-game")
        check(browser.evaluate(SHOWN), expected(report, 1, 0))
        for move in (1, 2):  # the keyboard steps too
            browser.key("ArrowRight", 39)
            check(browser.evaluate(SHOWN), expected(report, 1, move))
        browser.key("ArrowLeft", 37)
        check(browser.evaluate(SHOWN), expected(report, 1, 1))
        browser.evaluate(
            "(() => { const e = document.getElementById('replay-game'); e.value = '3'; "  # numbered from 1
            "e.dispatchEvent(new Event('change')); })()"
        )
        check(browser.evaluate(SHOWN), expected(report, 2, 0))
        browser.click("replay-last")
        last = len(report["replays"][2]["moves"]) - 1
        check(browser.evaluate(SHOWN), expected(report, 2, last))
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
