"""The release examples of the docs (docs/tutorial.md and docs/how-to/release-scan.md, the README's
links) are a contract: run as written, in a throwaway folder of releases from the package index, they
print what the page says; the release-range command is the one .ci/run runs, and its table of
verdicts is what the registry predicts."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from uv import find_uv_bin

from fixtures.known_bugs.registry import load_registry
from fixtures.known_bugs.verdicts import FIXED, NOT_AFFECTED, REPRODUCED
from fixtures.known_bugs.versions import place_release
from tests.conftest import REPO
from tests.helpers.this_python import run_as_written

TUTORIAL = (REPO / "docs" / "tutorial.md").read_text(encoding="utf-8")
SCAN_PAGE = (REPO / "docs" / "how-to" / "release-scan.md").read_text(encoding="utf-8")
RANGE_HEADING = "## The release range, as CI runs it"


def section(heading: str) -> str:
    """The release-scan page's text from a heading to the next heading."""
    start = SCAN_PAGE.index(heading) + len(heading)
    following = re.search(r"^#{1,3} ", SCAN_PAGE[start:], re.M)
    return SCAN_PAGE[start : start + following.start()] if following else SCAN_PAGE[start:]


def first_command(text: str) -> str:
    """The first line of the first bash block."""
    return re.search(r"```bash\n(.+?)\n", text)[1].strip()


def verdict_table(text: str) -> dict[tuple[str, str], str]:
    """(release, bug id) -> verdict, from the range table (a row may name several releases)."""
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    header = [cell.strip() for cell in rows[0].strip("|").split("|")]
    table = {}
    for row in rows[2:]:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        for release in cells[0].split(", "):
            table.update({(release, f"kornia-{number}"): verdict for number, verdict in zip(header[1:], cells[1:])})
    return table


def test_the_range_command_is_what_ci_runs() -> None:
    command = first_command(section(RANGE_HEADING))
    assert command.startswith("python -m reports scan kornia ") and "--every-suite" in command and "--strict-sweeps" in command
    assert command in (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()


def test_the_range_table_is_what_the_registry_predicts_for_every_release_the_command_scans() -> None:
    registry = load_registry()
    command = first_command(section(RANGE_HEADING))
    releases = command.split(" kornia ", 1)[1].split(" --", 1)[0].split()
    table = verdict_table(section(RANGE_HEADING))
    kornia_bugs = [bug for bug in registry.values() if bug.package == "kornia"]
    assert {release for release, _ in table} == set(releases) and {bug for _, bug in table} == {bug.id for bug in kornia_bugs}
    for (release, bug_id), verdict in table.items():
        status = place_release(registry[bug_id], release, None)
        predicted = REPRODUCED if status.affected else NOT_AFFECTED if status.predates else FIXED
        assert verdict == predicted, f"kornia {release}, {bug_id}: the release-scan page says {verdict}, the registry predicts {predicted}"


@pytest.fixture(scope="module")
def kornia_071(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """kornia 0.7.1 from the package index in a folder of its own, as the tutorial's /tmp/k071."""
    folder = tmp_path_factory.mktemp("k071")
    subprocess.run(
        [
            find_uv_bin(), "pip", "install", "--quiet", "--native-tls", "--no-deps", "--python", sys.executable, "--target", str(folder),
            "kornia==0.7.1",
        ],
        check=True, capture_output=True, timeout=300,
    )
    return folder


@pytest.mark.release_range
def test_the_kornia_071_example_as_written(kornia_071: Path) -> None:
    row = next(line for line in TUTORIAL.splitlines() if line.startswith("| `PYTHONPATH=/tmp/k071 pytest"))
    command, said = re.findall(r"`([^`]+)`", row)[:2]
    done = run_as_written(command.replace("/tmp/k071", str(kornia_071)), timeout=600)
    assert done.returncode == 0, done.stdout[-3000:]
    lines = [" ".join(line.split()) for line in done.stdout.splitlines()]
    assert any(line.startswith(said) for line in lines), f"no line starts {said!r}:\n" + "\n".join(lines[-20:])


@pytest.mark.release_range
def test_the_scan_example_as_written(tmp_path: Path) -> None:
    row = next(line for line in SCAN_PAGE.splitlines() if line.startswith("| `scan kornia 0.6.10 0.7.0 0.7.1 0.7.2 0.8.1 --bug kornia-2791`"))
    command = "python -m reports " + re.findall(r"`([^`]+)`", row)[0]
    assert command in section("# Release scan: which releases have a bug")
    said = row.split("|")[2].split(";")[0].strip().split(", ")
    done = run_as_written(f"{command} --out {tmp_path / 'out'} --cache {tmp_path / 'cache'}", timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    progress = [line for line in done.stdout.splitlines() if re.match(r"kornia \d", line)]
    assert [re.search(r"kornia-2791 (\S+) \(", line)[1].rstrip(",") for line in progress] == said
    assert "scan agrees with the registry: every release decided" in done.stdout
