"""Planted copies of the real libraries, and the real suites run against them.

A planted site is a folder put on PYTHONPATH ahead of site-packages, holding one installed
package (and its dist-info, so importlib.metadata reads the planted version) with a bug put
back or a fix taken out. Files are symlinked, and only the edited ones are real copies, so
planting torchvision (15 MB, compiled parts) costs milliseconds. The suites then run in a
fresh pytest process, and results.json says what they decided.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import site
import sys
from collections.abc import Iterable
from pathlib import Path

from fixtures.known_bugs.registry import Bug

REPO = Path(__file__).resolve().parents[2]


def site_packages() -> Path:
    """The site-packages the running interpreter installs into (the venv's)."""
    return Path(site.getsitepackages()[0])


def _dist_info(distribution: str) -> Path:
    files = importlib.metadata.distribution(distribution).files or []
    folders = {file.parts[0] for file in files if file.parts[0].endswith(".dist-info")}
    if len(folders) != 1:
        raise LookupError(f"no single dist-info for {distribution}: {sorted(folders)}")
    return site_packages() / folders.pop()


def plant(site_dir: Path, package: str, distribution: str | None = None) -> Path:
    """Mirror the installed `package` (and its distribution's dist-info) into `site_dir` as
    symlinks; the mirrored package folder."""
    source = site_packages() / package
    target = site_dir / package
    shutil.copytree(source, target, symlinks=True, copy_function=os.symlink, ignore=shutil.ignore_patterns("__pycache__"))
    dist_info = _dist_info(distribution or package)
    shutil.copytree(dist_info, site_dir / dist_info.name)
    return target


def edit(file: Path, old: str, new: str) -> None:
    """Replace the one occurrence of `old` in a planted file (a real copy replaces the symlink).
    LookupError when `old` is not there exactly once: the upstream code changed, so the plant
    must be rewritten rather than silently plant nothing."""
    text = file.read_text()
    if text.count(old) != 1:
        raise LookupError(f"{file}: expected one occurrence of {old!r}, found {text.count(old)}")
    file.unlink()
    file.write_text(text.replace(old, new))


def relabel(site_dir: Path, distribution: str, version: str) -> None:
    """The planted distribution reports `version` to importlib.metadata."""
    (metadata,) = site_dir.glob(f"{distribution}-*.dist-info/METADATA")
    installed = importlib.metadata.version(distribution)
    edit(metadata, f"\nVersion: {installed}\n", f"\nVersion: {version}\n")


def site_without(site_dir: Path, *packages: str) -> Path:
    """A site folder mirroring site-packages (symlinks) minus `packages` and their dist-infos:
    with `python -S` and this folder on PYTHONPATH, those packages are truly not installed."""
    site_dir.mkdir(parents=True, exist_ok=True)
    for entry in site_packages().iterdir():
        name = entry.name.split("-")[0].lower()
        if name not in packages and not entry.name.endswith(".pth"):
            (site_dir / entry.name).symlink_to(entry)
    return site_dir


def deciding_devices(bugs: Iterable[Bug]) -> str:
    """The --device value under which a CPU machine decides these bugs: the CPU (proxies and
    controls) and, where the registry calls a bug simulable, the simulated second GPU."""
    return "cpu,simcuda:1" if any(bug.simulable for bug in bugs) else "cpu"


def suite_command(report_dir: Path, devices: str, *args: str, isolated_site: bool = False) -> list[str]:
    """The pytest command line that runs the real suites (REPO's config and conftest) on `devices`."""
    interpreter = [sys.executable, "-S"] if isolated_site else [sys.executable]
    return [
        *interpreter, "-m", "pytest", f"--rootdir={REPO}", "-c", str(REPO / "pyproject.toml"), "-p", "no:cacheprovider",
        "-p", "no:randomly", "--device", devices, f"--report-dir={report_dir}", "-q", *args,
    ]


def python_path(site_dir: Path) -> str:
    return os.pathsep.join([str(site_dir), str(REPO)])


def results(report_dir: Path) -> dict:
    return json.loads((report_dir / "results.json").read_text())


def verdict_of(document: dict, bug_id: str) -> dict:
    (record,) = [record for record in document["verdicts"] if record["bug_id"] == bug_id]
    return record


def observations(document: dict, bug_id: str) -> dict[str, str]:
    """{test nodeid: what its oracle reported} for the bug's tests."""
    return {
        test["nodeid"]: test["properties"].get("observation", "")
        for test in document["tests"]
        if test["properties"].get("known_bug") == bug_id
    }
