"""The class page (``index.html`` of a class grade) in a real browser: headless Chromium opens it,
reads the students' table, runs no script (a student named ``<script>...`` is text), and a mouse click
on a student's name opens their report, whose replay works.

Skipped where no Chromium is installed, as ``tests/test_report_browser.py`` (whose DevTools client
it uses). A screenshot of the class page is kept in ``$DICE_POKER_TEST_ARTIFACTS`` when that is set.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from test_report_browser import BROWSER, Browser

pytestmark = pytest.mark.skipif(BROWSER is None, reason="no Chromium installed (Debian: apt-get install chromium)")

SCRIPT_NAME = "<script>alert(1)<script>"
AGENT = (
    Path(__file__).resolve().parents[1] / "examples" / "course" / "instructor" / "class_example" / "curie.py"
).read_text()


class PageBrowser(Browser):
    """The report test's browser, waiting for any page (not only a report's replay)."""

    def open(self, url: str) -> None:
        target = self.call("Target.createTarget", {"url": url}, session=False)["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True}, session=False)[
            "sessionId"
        ]
        self.wait("document.readyState === 'complete' && !!document.getElementById('students')")

    def wait(self, condition: str) -> None:
        deadline = time.monotonic() + self.timeout
        while not self.poll(condition):
            if time.monotonic() > deadline:
                raise TimeoutError(f"waited for {condition}")
            time.sleep(0.1)


@pytest.fixture(scope="module")
def class_dir(tmp_path_factory):
    from agents.course.classroom import find_submissions, grade_class
    from agents.course.gradebook import write_class
    from agents.course.rubric import load_rubric
    from agents.course.sandbox import Limits, isolation_problem

    folder = tmp_path_factory.mktemp("class")
    for name in ("good", SCRIPT_NAME):
        (folder / f"{name}.py").write_text(AGENT)
    (folder / "nothing.py").write_text("x = 1\n")  # no agent class: a row without a link
    out = tmp_path_factory.mktemp("grades")
    result = grade_class(
        find_submissions([str(folder)]),
        "yacht",
        out,
        games=3,
        seed=11,
        limits=Limits(decision_seconds=60, game_seconds=600, load_seconds=300),
        isolated=isolation_problem() is None,
        jobs=1,
        rubric=load_rubric(Path(__file__).resolve().parents[1] / "examples" / "course" / "instructor" / "rubric.toml"),
    )
    write_class(result, out)
    return out


ROWS = """Array.from(document.querySelectorAll('#students tr[data-student]')).map(r => ({
  folder: r.dataset.student, name: r.cells[0].textContent,
  link: r.querySelector('a') ? r.querySelector('a').getAttribute('href') : null, status: r.cells[1].textContent}))"""


def test_the_class_page_lists_the_students_and_opens_a_report(class_dir, tmp_path):
    artifacts = Path(os.environ.get("DICE_POKER_TEST_ARTIFACTS", tmp_path))
    artifacts.mkdir(parents=True, exist_ok=True)
    browser = PageBrowser(tmp_path / "profile")
    try:
        browser.open((class_dir / "index.html").as_uri())
        rows = browser.evaluate(ROWS)
        assert [row["name"] for row in rows] == [SCRIPT_NAME, "good", "nothing"]  # the name as text
        assert rows[0]["link"] == "_script_alert_1__script_/report.html"
        assert rows[2]["link"] is None and rows[2]["status"].startswith("no_agent")
        assert browser.evaluate("document.scripts.length") == 0
        assert browser.evaluate("document.querySelectorAll('#students a').length") == 2
        browser.screenshot(artifacts / "class_page.png")
        browser.click_on("document.querySelector('#students tr[data-student=\"good\"] a')")  # a real click
        browser.wait(
            "location.href.endsWith('/good/report.html') && document.readyState === 'complete' && "
            "!!document.getElementById('replay-position') && "
            "document.getElementById('replay-position').textContent.length > 0"
        )
        report = json.loads((class_dir / "good" / "report.json").read_text(encoding="utf-8"))
        percent = report["agents"]["submission"]["percent_of_optimal"]
        assert browser.evaluate("document.getElementById('percent').textContent") == f"{percent:.1f}%"
    finally:
        browser.close()
    shot = artifacts / "class_page.png"
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 5000
