"""`faultline serve` in a real headless Chromium driven by Playwright (issue
33): from the campaign list to a campaign of 20 runs with its trend over two
nights, to an invalid run's counterexample; and two runs side by side."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.browser_results import two_nights

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
playwright = pytest.importorskip("playwright.sync_api", reason="needs playwright (test extras)")
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium "
                                 "(scripts/setup.sh installs it as root)")]


def serve(results: Path) -> tuple[subprocess.Popen, str]:
    """`faultline serve` as a user starts it, on a free port; its URL."""
    proc = subprocess.Popen([sys.executable, "-m", "harness", "serve", "--results",
                             str(results), "--port", "0"], stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    line = proc.stderr.readline()
    assert " at http://127.0.0.1:" in line, line
    return proc, line.split(" at ", 1)[1].split()[0]


def test_from_the_campaign_list_to_a_counterexample_and_a_diff(tmp_path):
    results = tmp_path / "results"
    first, second = two_nights(results)
    proc, url = serve(results)
    try:
        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM,
                                        args=["--no-sandbox", "--disable-dev-shm-usage"])
            page = browser.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(url)
            assert page.locator("table.campaigns tr.campaign").count() == 2
            assert page.locator("table.runs tr.run").count() == 26
            # The newest night: 20 runs, a trend over both nights.
            page.locator("a.campaign-link").first.click()
            page.wait_for_load_state()
            assert page.locator("table.entries tr.entry").count() == 20
            nights = page.locator("table.trend tr.night")
            assert nights.count() == 2
            first_night, second_night = nights.nth(0).inner_text(), nights.nth(1).inner_text()
            assert "2026-11-24" in first_night and "2/2" in first_night     # 2 of 6 caught
            assert "2026-11-25" in second_night and "5/5" in second_night   # 5 of 20
            assert " ms" in second_night                                    # p99 latency
            # An invalid run: to its counterexample.
            page.locator("tr.entry", has=page.locator("td.invalid")).first \
                .locator("a.counterexample-link").click()
            page.wait_for_load_state()
            assert page.url.endswith("/linearizability.html#failure")
            assert page.locator("#failure").count() == 1
            assert page.locator(".failing-op").first.inner_text() == "read -> 1"
            # Back to the list, filtered to the switch's runs, and two runs compared.
            page.goto(url + "?switch=no-pre-vote")
            assert page.locator("table.runs tr.run").count() == 7
            page.goto(url)
            page.locator(f"tr.run[data-run='{second[1].name}'] input[name=a]").check()
            page.locator(f"tr.run[data-run='{second[0].name}'] input[name=b]").check()
            page.locator("button.diff-button").click()
            page.wait_for_load_state()
            assert "/diff?" in page.url
            changed = page.locator("table.verdict-diff tr.changed").all_inner_texts()
            assert any(t.startswith("linearizability") and "INVALID" in t for t in changed)
            config = page.locator("table.config-diff").inner_text()
            assert "seed" in config and "bugs" in config
            assert page.locator("table.schedule-diff tr.only-b").count() == 1  # seed 1's kill
            assert errors == []
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert proc.returncode in (0, -15)
