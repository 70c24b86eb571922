"""`briefroom ui` clicked through in headless Chromium, as a person uses it: a whole run
with the deterministic test provider on the cloud-market corpus. Start it with the plan
review, accept the plan, follow the agents live, read the report, click a citation and
see the passage it rests on; a second run to compare with; then past runs, memory
(forget one) and the job queue.
Screenshots must not be blank; the page makes no request off loopback and logs no error."""

from __future__ import annotations

import json
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.conftest import REPO, SCENARIOS
from tests.e2e.browser import Browser, luminance_spread

pytestmark = pytest.mark.e2e
QUESTION = "How big is the 2026 public cloud market and who is growing fastest?"


def start_ui(tmp_path: Path, data_dir: Path) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "briefroom.cli", "ui", "--port", "0",
                             "--corpus-root", str(SCENARIOS / "cloud-market"), "--runs-dir", str(tmp_path / "runs"),
                             "--data-dir", str(data_dir), "--model", "test"],
                            cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline, seen = time.monotonic() + 60, ""
    assert proc.stderr is not None
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stderr], [], [], 1)
        if ready:
            line = proc.stderr.readline()
            seen += line
            found = re.search(r"workbench: (http://127\.0\.0\.1:\d+/)", line)
            if found:
                return proc, found.group(1)
            if not line:
                break
    proc.kill()
    raise AssertionError(f"briefroom ui did not start:\n{seen}")


def not_blank(browser: Browser, path: Path) -> None:
    shot = browser.screenshot(path, scale=0.5)
    variance, levels = luminance_spread(shot)
    assert variance > 200 and levels > 20, f"{path.name} looks blank (variance {variance:.0f}, {levels} levels)"


def test_a_whole_run_clicked_through_in_the_workbench(tmp_path, data_dir):
    server, url = start_ui(tmp_path, data_dir)
    browser = None
    try:
        browser = Browser()
        browser.open(url)
        browser.wait_for("document.querySelectorAll('#corpus option').length > 0")
        folders = browser.evaluate("[...document.querySelectorAll('#corpus option')].map(o => o.value)")
        assert "corpus" in folders and not any(f.startswith("..") for f in folders), folders
        browser.evaluate("document.querySelector('#corpus').value = 'corpus'")  # a pick from the list
        browser.type("#question", QUESTION)
        browser.click("#review-plan")
        not_blank(browser, tmp_path / "1-start.png")
        browser.click("#start")

        # the run pauses at its plan: the sub-questions are shown, with their task ids
        browser.wait_for("!document.querySelector('#review').hidden && "
                         "document.querySelectorAll('#review-tasks [data-task]').length > 0", timeout=180)
        tasks = browser.evaluate("[...document.querySelectorAll('#review-tasks [data-task]')]"
                                 ".map(i => i.dataset.task + ' ' + i.value)")
        assert tasks and all(re.match(r"t1\.\d+ \S", t) for t in tasks), tasks
        assert browser.evaluate("document.querySelector('#status').textContent") == "waiting"
        not_blank(browser, tmp_path / "2-review.png")
        # the Writer's draft must be on screen while the run is still going
        browser.evaluate("""new MutationObserver(() => {
            if (document.querySelector('#draft').textContent.includes('Report draft (revision 0)') &&
                !document.querySelector('#draft-box').hidden &&
                document.querySelector('#status').textContent !== 'done') window.draftBeforeDone = true;
        }).observe(document.querySelector('#draft-box'), {subtree: true, childList: true, characterData: true,
                                                          attributes: true})""")
        browser.click("#review-accept")

        # followed live to the end: the whiteboard, tokens per section, the report
        browser.wait_for("document.querySelector('#status').textContent === 'done' && "
                         "document.querySelectorAll('#report a.cite').length > 0", timeout=240)
        senders = set(browser.evaluate("[...document.querySelectorAll('#board .who')].map(e => e.textContent)"))
        assert {"planner", "searcher", "critic", "writer"} <= senders, senders
        assert browser.evaluate("[...document.querySelectorAll('#board li')].some(li => "
                                "li.textContent.startsWith('plan review: accepted'))")
        rows = browser.evaluate("[...document.querySelectorAll('#sections tr')].slice(1)"
                                ".map(r => r.firstChild.textContent)")
        assert {"planner", "searcher", "writer"} <= set(rows), rows
        assert re.search(r"[\d,]+ tokens", browser.evaluate("document.querySelector('#budget span').textContent"))
        assert browser.evaluate("window.draftBeforeDone === true"), "no draft was shown before the run ended"
        assert browser.evaluate("document.querySelector('#draft-box').hidden")  # the report replaced it
        not_blank(browser, tmp_path / "3-report.png")

        # a citation opens the passage it rests on: the quoted claim is in that passage
        claim = browser.evaluate("(() => { const a = document.querySelector('#report a.cite'); "
                                 "return a.parentElement.textContent; })()")
        browser.click("#report a.cite")
        passage = browser.wait_for("(() => { const q = document.querySelector('#passage blockquote.passage'); "
                                   "return q && q.firstChild.textContent; })()", timeout=20)
        quoted = re.search(r"“([^”]+)”", claim)
        assert quoted, claim
        assert " ".join(quoted.group(1).split()) in " ".join(passage.split()), (quoted.group(1), passage)
        not_blank(browser, tmp_path / "4-passage.png")

        # a second run, without the review, to compare with the first
        browser.click("#tabs [data-tab=start]")
        browser.click("#review-plan")
        browser.evaluate("document.querySelector('#question').value = ''")
        browser.type("#question", "Who is growing fastest among the cloud providers?")
        browser.click("#start")
        browser.wait_for("document.querySelector('#run-title').textContent.includes('who-is-growing-fastest')")
        browser.wait_for("document.querySelector('#status').textContent === 'done' && "
                         "document.querySelectorAll('#report a.cite').length > 0", timeout=240)

        # past runs list both; compare shows them side by side with their numbers
        browser.click("#tabs [data-tab=runs]")
        browser.wait_for("document.querySelectorAll('#runs-list tr.pick').length === 2")
        listed = browser.evaluate("[...document.querySelectorAll('#runs-list tr.pick')].map(r => r.textContent)")
        assert all("done" in row for row in listed), listed
        browser.click("#tabs [data-tab=compare]")
        browser.wait_for("document.querySelector('#compare-b').value && "
                         "document.querySelector('#compare-a').value !== document.querySelector('#compare-b').value")
        browser.click("#compare-go")
        sides = browser.wait_for("(() => { const s = document.querySelectorAll('#compare-out > div'); "
                                 "return s.length === 2 && [...s].map(d => d.querySelector('p').textContent); })()")
        assert set(sides) == {QUESTION, "Who is growing fastest among the cloud providers?"}, sides
        assert browser.evaluate("document.querySelectorAll('#compare-out th').length") >= 20  # key numbers
        assert browser.evaluate("document.querySelectorAll('#compare-out a.cite').length") > 0
        not_blank(browser, tmp_path / "5-compare.png")

        # memory lists what the runs kept, and forgets one
        browser.click("#tabs [data-tab=memory]")
        browser.click("#memory-load")
        count = browser.wait_for("document.querySelectorAll('#memory-list li').length", timeout=60)
        browser.click("#memory-list li button")
        browser.wait_for(f"document.querySelectorAll('#memory-list li').length === {count - 1}", timeout=60)
        browser.click("#tabs [data-tab=jobs]")
        message = browser.wait_for("document.querySelector('#jobs-out').textContent")
        assert "no job queue" in message and "--database-url" in message
        not_blank(browser, tmp_path / "6-jobs.png")

        assert browser.console_errors == [], browser.console_errors
        origin = urlsplit(url).netloc
        off_loopback = [u for u in browser.requests if urlsplit(u).scheme not in ("data", "about")
                        and urlsplit(u).netloc != origin]
        assert off_loopback == [], off_loopback
        assert browser.requests, "the browser recorded no request at all"
    finally:
        if browser is not None:
            browser.close()
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
    for run in (tmp_path / "runs").iterdir():
        assert json.loads((run / "run.json").read_text())["status"] == "done", run
    print(f"screenshots: {tmp_path}")
