"""The pages as a reviewer sees them: report.html, the compare page and matrix.html opened in a
real headless Chromium, which runs pytest-html's script. Checks the DOM after the scripts ran
(--dump-dom), that the page logged nothing to the console (no script error, no failed fetch), and
saves a screenshot of each for a person to look at: in $HARNESS_SCREENSHOTS when set, else in the
test's temporary directory (a self-test leaves the checkout as it found it)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

import pytest

from reports.__main__ import main as reports_command
from tests.conftest import REPO
from tests.helpers import warm_python
from tests.helpers.report_session import BEFORE, BUGS, NOW, run_session

CHROMIUM = shutil.which("chromium")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium not installed: apt-get update && apt-get install -y chromium"
)
SCREENSHOTS_ENV = "HARNESS_SCREENSHOTS"
QUIET = [  # no network, no first-run work, no sandbox (containers), no GPU
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]


@dataclass(frozen=True)
class Rendered:
    dom: str
    console: list[str]  # every console message the page produced


def open_in_chromium(page: Path, screenshot: Path, profile: Path, window: tuple[int, int]) -> Rendered:
    """Load the page once, in a fresh profile: its DOM after the scripts ran, its console, and its picture."""
    dumped = subprocess.run(
        [CHROMIUM, *QUIET, "--virtual-time-budget=5000", f"--window-size={window[0]},{window[1]}", f"--user-data-dir={profile}",
         "--enable-logging=stderr", "--v=0", f"--screenshot={screenshot}", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=120, check=True,
    )
    assert screenshot.stat().st_size > 10_000, f"{screenshot}: no picture"
    console = [line for line in dumped.stderr.splitlines() if ":CONSOLE" in line]
    return Rendered(dumped.stdout, console)


@pytest.fixture
def runs(harness: pytest.Pytester, tmp_path: Path) -> dict[str, Path]:
    """Two runs of the same tests: 'old' where every bug still affects the release, 'new' where
    one bug stays, one came back and one is fixed. Each directory holds report.html and results.json."""
    for name, affected in (("old", BEFORE), ("new", NOW)):
        run_session(harness, tmp_path / name, affected)
    return {name: tmp_path / name for name in ("old", "new")}


@pytest.fixture
def screenshots(tmp_path: Path) -> Path:
    directory = Path(os.environ.get(SCREENSHOTS_ENV) or tmp_path / "screenshots")
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def test_report_page_shows_verdicts_columns_reasons_and_images(runs, screenshots: Path, tmp_path: Path) -> None:
    shown = open_in_chromium(runs["new"] / "report.html", screenshots / "report.png", tmp_path / "profile", (1400, 2400))
    dom = shown.dom
    assert shown.console == []
    assert re.search(r'<h1 id="title">GPU regression harness: torch \S+, torchvision \S+, kornia \S+ on CPU only</h1>', dom)
    rows = re.findall(r'<tr class="verdict-row verdict-([\w-]+)" data-bug="([\w-]+)">', dom)
    assert rows == [("reproduced", "fake-reproduced"), ("regressed", "fake-regressed"), ("fixed", "fake-fixed")]
    for number in (number for _, number in BUGS.values()):
        assert f'href="https://example.invalid/issues/{number}"' in dom and f'href="https://example.invalid/pull/{number}1"' in dom
    # pytest-html's script drew one row per test, with the harness's columns.
    # Skipped tests are no rows: they are listed, folded, by reason.
    tests = json.loads((runs["new"] / "results.json").read_text())["tests"]
    shown = [test for test in tests if test["outcome"] != "skipped"]
    assert len(re.findall(r'<tbody class="results-table-row \w+" id=', dom)) == len(shown)  # templates have no id
    assert re.search(r'<td class="col-known_bug">fake-regressed</td>.*?<td class="col-attempts">7</td>', dom, re.S)
    assert '<td class="col-device">cpu</td>' in dom and '<td class="col-device">cuda:0</td>' not in dom
    # Each bug's test list links to its tests' rows, which the script drew with their node ids as ids.
    lists = "".join(re.findall(r'<div class="bug-tests">(.*?)</div>', dom, re.S))
    targets = [unquote(href) for href in re.findall(r'<a href="#([^"]+)">', lists)]
    assert sorted(targets) == sorted(test["nodeid"] for test in shown if "known_bug" in test["properties"])
    assert all(re.search(rf'<tbody class="results-table-row \w+" id="{re.escape(target)}">', dom) for target in targets), targets
    skipped = sum(test["outcome"] == "skipped" for test in tests)
    assert f"<summary>{skipped} skipped tests," in dom
    assert re.search(r"<summary>\d+ × cuda:0 requested, 0 CUDA devices visible</summary>", dom)
    # The failing test's three images, embedded, side by side, in place of the one-at-a-time viewer.
    strip = re.search(r'<div class="thumbnails">(.*?)</div>', dom, re.S).group(1)
    assert re.findall(r'<img src="data:image/png;base64,[^"]+" alt="(\w+)">', strip) == ["source", "decoded", "difference"]
    assert "GPUs" in dom and "none visible" in dom  # the environment table, drawn by the script


def test_compare_page_leads_with_the_new_regression(runs, screenshots: Path, tmp_path: Path) -> None:
    page = tmp_path / "compare.html"
    old, new = runs["old"] / "results.json", runs["new"] / "results.json"
    assert reports_command(["compare", str(old), str(new), "-o", str(page)]) == 1
    shown = open_in_chromium(page, screenshots / "compare.png", tmp_path / "profile", (1400, 1000))
    assert shown.console == []
    assert '<span class="verdict verdict-regressed">1 new regression(s)</span>' in shown.dom
    regressions = shown.dom[shown.dom.index('id="new-regressions"') : shown.dom.index("Newly fixed")]
    assert re.findall(r'data-bug="([\w-]+)"', regressions) == ["fake-regressed"]
    fixed = shown.dom[shown.dom.index('id="newly-fixed"') : shown.dom.index("All verdict changes")]
    assert re.findall(r'data-bug="([\w-]+)"', fixed) == ["fake-fixed"]


def test_matrix_cells_link_to_each_jobs_report(runs, screenshots: Path, tmp_path: Path) -> None:
    page = tmp_path / "matrix.html"
    assert reports_command(["matrix", str(runs["old"] / "results.json"), str(runs["new"] / "results.json"), "-o", str(page)]) == 0
    shown = open_in_chromium(page, screenshots / "matrix.png", tmp_path / "profile", (1400, 600))
    assert shown.console == []
    cells = re.findall(r'<td class="cell verdict-([\w-]+)" data-bug="([\w-]+)"[^>]*><a href="([^"]+)">', shown.dom)
    assert len(cells) == 2 * len(BUGS)
    assert ("regressed", "fake-regressed", "new/report.html") in cells
    assert ("reproduced", "fake-regressed", "old/report.html") in cells
    assert all((page.parent / href).is_file() for _, _, href in cells)


PLANTED_FAILURE = 'def test_planted_failure():\n    assert 1 == 2, "planted failure"\n'
VIEWPORT = (1280, 800)
# Added to a copy of the page: once pytest-html's script has drawn the table, the boxes of the
# verdict table and of the failed rows, in CSS pixels from the top of the page.
LAYOUT_PROBE = """<script>window.addEventListener('load', () => setTimeout(() => {
  const box = (element) => element.getBoundingClientRect().toJSON();
  const probe = document.createElement('pre');
  probe.id = 'layout-probe';
  probe.textContent = JSON.stringify({
    verdicts: box(document.querySelector('table.verdict-table')),
    failed: [...document.querySelectorAll('tbody.failed')].map((row) => ({
      test: row.querySelector('.col-testId').textContent, row: box(row.querySelector('tr.collapsible')),
      log: box(row.querySelector('.log')),
    })),
  });
  document.body.appendChild(probe);
}, 500));</script>"""


def layout_of(page: Path, screenshot: Path, profile: Path) -> dict:
    """The probe's boxes, from a copy of the page, and its picture (the probe lies below the window)."""
    probed = page.with_name("probed.html")
    probed.write_text(page.read_text(encoding="utf-8").replace("</body>", LAYOUT_PROBE + "</body>"), encoding="utf-8")
    dom = open_in_chromium(probed, screenshot, profile, VIEWPORT).dom
    return json.loads(re.search(r'<pre id="layout-probe">(.*?)</pre>', dom, re.S).group(1))


TABLE_STARTS_WITHIN = 160  # px: the page's title and the run's line above it (139 at 1280 wide)
FAILURE_FOLLOWS_WITHIN = 200  # px: the sweep findings' summary, the results' counts and filter lines, the header row (190 at 1280 wide)


@pytest.mark.runner_day  # a whole run of the suites: `pytest tests --runner-day` (tests/conftest.py)
def test_a_cpu_run_opens_on_its_verdicts_and_its_failure(screenshots: Path, tmp_path: Path, record_property) -> None:
    """The suites as a CPU machine runs them (every device the machine lacks a skip), plus one
    planted failure: in a 1280x800 window the page opens on the verdict table, right under its
    title, and that failure (its row and first log lines) follows the table with only the sweep
    findings' three-line summary and the results table's head between. Each registered bug adds a
    row to the table, so every position is measured from the page's top or from the table, never
    from the window's bottom edge: a new bug cannot break it."""
    planted = tmp_path / "planted" / "test_planted_failure.py"
    planted.parent.mkdir()
    planted.write_text(PLANTED_FAILURE, encoding="utf-8")
    report = tmp_path / "report"
    run = warm_python.run(
        [sys.executable, "-m", "pytest", "suites", str(planted), f"--rootdir={REPO}", "-p", "no:cacheprovider", "-q", f"--report-dir={report}"],
        cwd=REPO, timeout=900,
    )
    assert run.returncode == 1 and "1 failed" in run.stdout, run.stdout[-3000:]
    page = report / "report.html"
    record_property("report_bytes", page.stat().st_size)
    layout = layout_of(page, screenshots / "report-cpu-run-1280x800.png", tmp_path / "profile")
    assert 0 <= layout["verdicts"]["top"] <= TABLE_STARTS_WITHIN, layout["verdicts"]
    (failure,) = layout["failed"]
    assert failure["test"].endswith("test_planted_failure")
    assert (
        layout["verdicts"]["bottom"] < failure["row"]["top"] <= layout["verdicts"]["bottom"] + FAILURE_FOLLOWS_WITHIN
    ), (layout["verdicts"], failure)
    assert failure["log"]["top"] - failure["row"]["top"] <= 40, failure  # its log opens right under its row
