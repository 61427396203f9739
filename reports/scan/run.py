"""`python -m reports scan`: install each release into a folder of its own, run the suites in a
fresh pytest process with that folder first on PYTHONPATH, then write scan.json and scan.html.

Installs are `uv pip install --no-deps --target`: the environment's torch stays, and a release
installed once is reused from the cache folder (an interrupted install never counts as cached).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version

from fixtures.known_bugs.registry import Bug, RegistryError, load_registry
from reports import REPOSITORY
from reports.run.loading import ResultsError, load_results
from reports.scan.page import scan_document, scan_html
from reports.scan.ranges import BugScan, ReleaseError, failed_runs, outcome_line, release_order, scan_bug

PACKAGES_TOML = Path(__file__).with_name("packages.toml")
# 1: the registry is contradicted or a run errored; 3: nothing contradicts it, but some release
# could not be decided (skipped, inconclusive, a race that did not trigger), so nothing confirms it.
AGREE, DISAGREE, BAD_INPUT, UNDECIDED = 0, 1, 2, 3


class ScanError(ValueError):
    """Bad input: one line for the user; the releases scanned before it are kept."""


def default_cache() -> Path:
    """~/.cache/gpu-regression-harness/releases (XDG_CACHE_HOME respected)."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "gpu-regression-harness" / "releases"


def release_folder(cache: Path, package: str, release: str) -> Path:
    """One folder per Python ABI and release: a build for 3.11 is not reused by 3.12."""
    return cache / sysconfig.get_config_var("SOABI") / f"{package}-{release}"


def package_policy(package: str) -> tuple[str | None, dict[str, str]]:
    """Why the package cannot be scanned (None: it can), and its install's environment variables."""
    policy = tomllib.loads(PACKAGES_TOML.read_text(encoding="utf-8"))
    refused = policy["refused"].get(package)
    refusal = None
    if refused:
        envs = " or ".join(f"tox -e {env}" for env in refused["tox_envs"])
        refusal = f"{package}: {refused['reason']}; a scan keeps the environment's torch, so use {envs}"
    return refusal, policy["install_env"].get(package, {})


def last_line(text: str) -> str:
    """The line that says what went wrong: the last error line (uv ends with hints), else the last."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    return (errors or lines or ["(no output)"])[-1]


def install_into(folder: Path, requirement: str, what: str, env: dict[str, str], uv_options: tuple[str, ...] = ()) -> bool:
    """Install `requirement` without dependencies into folder; False when it was cached.
    Built without isolation, so a source build (sam2, a git commit) uses the environment's torch
    and setuptools instead of downloading others. `what` names it in the one-line error."""
    if folder.is_dir():
        return False
    from uv import find_uv_bin  # here, not at the top: the matrix-page job runs `reports` without uv

    partial = folder.with_name(folder.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    command = [
        # --native-tls: the platform's trust store, which pip's configuration points at here; uv
        # reads neither pip.conf nor, without SSL_CERT_FILE, a site's own certificate authority.
        find_uv_bin(), "pip", "install", "--quiet", "--native-tls", "--no-deps", "--no-build-isolation", *uv_options,
        "--python", sys.executable, "--target", str(partial), requirement,
    ]
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, **env})
    if done.returncode != 0:
        shutil.rmtree(partial, ignore_errors=True)
        raise ScanError(f"{what}: install failed: {last_line(done.stderr)}")
    partial.rename(folder)
    return True


def pytest_command(bugs: list[Bug], registry: Path, report_dir: Path, pytest_args: list[str], every_suite: bool = False) -> list[str]:
    """The scanned bugs' tests only, or with `every_suite` every suite (the sweeps included)."""
    selection = [] if every_suite else [f"--bug={bug.id}" for bug in bugs]
    return [
        sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *selection,
        f"--bug-registry={registry}", f"--report-dir={report_dir}", *pytest_args,
    ]


def run_suites(folder: Path, command: list[str], report_dir: Path) -> int:
    """A fresh pytest process with the release's folder first on PYTHONPATH; its output is kept
    in pytest.log beside the reports."""
    report_dir.mkdir(parents=True, exist_ok=True)
    path = os.pathsep.join(filter(None, [str(folder), os.environ.get("PYTHONPATH")]))
    with (report_dir / "pytest.log").open("w", encoding="utf-8") as log:
        done = subprocess.run(command, cwd=REPOSITORY, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONPATH": path})
    return done.returncode


def is_pep440(version: str) -> bool:
    try:
        Version(version)
    except InvalidVersion:
        return False
    return True


def release_verdicts(document: dict, package: str, release: str, bugs: list[Bug]) -> dict[str, str | None]:
    """The run's verdict per bug, after checking that the run saw the release it was given
    (a package shadowing the folder would make every verdict about the wrong release)."""
    records = {record["bug_id"]: record for record in document["verdicts"]}
    for record in records.values():
        seen = record["installed"]
        if record["package"] != package:
            continue
        if seen is not None and not is_pep440(seen):
            raise ScanError(f"{package} {release}: the run saw {package} {seen!r}, which is not a PEP 440 version (a git build?)")
        if seen is None or Version(seen) != Version(release):
            raise ScanError(f"{package} {release}: the run saw {package} {seen or '(not installed)'}; is it shadowed on sys.path?")
    return {bug.id: records[bug.id]["verdict"] if bug.id in records else None for bug in bugs}


@dataclass
class ReleaseRun:
    release: str
    verdicts: dict[str, str | None]
    installed_now: bool
    install_s: float
    pytest_s: float
    pytest_exit: int


def scan_release(  # noqa: PLR0913
    package: str, release: str, bugs: list[Bug], *, out: Path, cache: Path, registry: Path, pytest_args: list[str], env: dict[str, str],
    every_suite: bool = False,
) -> ReleaseRun:
    started = time.perf_counter()
    folder = release_folder(cache, package, release)
    installed_now = install_into(folder, f"{package}=={release}", f"{package} {release}", env)
    installed = time.perf_counter()
    report_dir = out / f"{package}-{release}"
    exit_code = run_suites(folder, pytest_command(bugs, registry, report_dir, pytest_args, every_suite), report_dir)
    finished = time.perf_counter()
    if exit_code not in (0, 1):  # 0 all as expected, 1 a test failed: both leave verdicts
        raise ScanError(f"{package} {release}: pytest exit status {exit_code}: {last_line((report_dir / 'pytest.log').read_text(encoding='utf-8'))}")
    try:
        document = load_results(report_dir / "results.json")
    except ResultsError as error:
        raise ScanError(str(error)) from None
    verdicts = release_verdicts(document, package, release, bugs)
    return ReleaseRun(release, verdicts, installed_now, round(installed - started, 2), round(finished - installed, 2), exit_code)


def progress_line(package: str, run: ReleaseRun) -> str:
    verdicts = ", ".join(f"{bug_id} {verdict or '(no verdict)'}" for bug_id, verdict in run.verdicts.items())
    install = "installed" if run.installed_now else "cached"
    return f"{package} {run.release}: {verdicts} ({run.install_s + run.pytest_s:.1f} s: {install} {run.install_s:.1f} s, pytest {run.pytest_s:.1f} s)"


def selected_bugs(registry: dict[str, Bug], package: str, bug_ids: list[str]) -> list[Bug]:
    """The given bugs (each must be the package's), or every bug of the package."""
    packages = sorted({bug.package for bug in registry.values()})
    if package not in packages:
        raise ScanError(f"unknown package {package!r}: the registry's packages are {', '.join(packages)}")
    unknown = [bug_id for bug_id in bug_ids if bug_id not in registry]
    if unknown:
        raise ScanError(f"--bug: unknown bug id(s) {', '.join(unknown)}; known: {', '.join(registry)}")
    foreign = [bug_id for bug_id in bug_ids if registry[bug_id].package != package]
    if foreign:
        raise ScanError(f"--bug: {', '.join(foreign)} is not a {package} bug")
    return [registry[bug_id] for bug_id in bug_ids] or [bug for bug in registry.values() if bug.package == package]


def bug_scans(bugs: list[Bug], runs: list[ReleaseRun]) -> list[BugScan]:
    return [
        scan_bug(
            bug_id=bug.id, title=bug.title, affected=bug.affected, first_fixed=str(bug.first_fixed or "no release yet"), kind=bug.kind,
            verdicts={run.release: run.verdicts[bug.id] for run in runs},
        )
        for bug in bugs
    ]


def scan_status(scans: list[BugScan], stopped: str | None, failed: list[str] = ()) -> int:
    if stopped:
        return BAD_INPUT
    if failed or any(bug.disagreements or bug.errors for bug in scans):
        return DISAGREE
    return UNDECIDED if any(bug.undecided for bug in scans) else AGREE


def write_scan(  # noqa: PLR0913
    out: Path, package: str, registry: Path, scans: list[BugScan], runs: list[ReleaseRun], stopped: str | None, failed: list[str]
) -> int:
    status = scan_status(scans, stopped, failed)
    runs_data = [vars(run) for run in runs]
    document = scan_document(package, str(registry), runs_data, scans, stopped, status, failed)
    (out / "scan.json").write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    (out / "scan.html").write_text(scan_html(document), encoding="utf-8")
    return status


def summary_lines(out: Path, scans: list[BugScan], stopped: str | None = None, failed: list[str] = ()) -> list[str]:
    lines = []
    for bug in scans:
        lines.append(
            f"{bug.bug_id}: measured first affected {bug.first_affected or '-'}, first fixed {bug.first_fixed or '-'}; "
            f"registry affected {bug.registry_affected_range}, first fixed {bug.registry_first_fixed}"
        )
        lines.extend(f"  DISAGREES {item.release}: {item.verdict}, {item.reason}" for item in bug.disagreements)
        lines.extend(f"  ERROR {item.release}: {item.reason}" for item in bug.errors)
        lines.extend(f"  UNDECIDED {item.release}: {item.reason}" for item in bug.undecided)
    lines.extend(f"FAILED RUN {release}: pytest failed where no scanned bug's verdict explains it: {out}/*-{release}/pytest.log" for release in failed)
    return [*lines, f"scan {outcome_line(scans, stopped, failed)}", f"scan: {out / 'scan.json'}, {out / 'scan.html'}"]


def scan(  # noqa: PLR0913
    package: str, releases: list[str], bug_ids: list[str], *, out: Path, cache: Path, registry_path: Path,
    pytest_args: list[str], say: Callable[[str], None] = print, every_suite: bool = False,
) -> int:
    """Scan the releases oldest first; bad input stops the scan with one line (exit 2), keeping
    what was scanned so far in scan.json / scan.html."""
    try:
        registry = load_registry(registry_path)
        bugs = selected_bugs(registry, package, bug_ids)
        refusal, env = package_policy(package)
        if refusal:
            raise ScanError(refusal)
        ordered = release_order(releases)
        out.mkdir(parents=True, exist_ok=True)
    except (RegistryError, ReleaseError, ScanError) as error:
        print(f"error: {error}", file=sys.stderr)
        return BAD_INPUT
    except OSError as error:
        print(f"error: --out {out}: {error.strerror}", file=sys.stderr)
        return BAD_INPUT
    runs: list[ReleaseRun] = []
    stopped = None
    for release in ordered:
        try:
            run = scan_release(
                package, release, bugs, out=out, cache=cache, registry=registry_path, pytest_args=pytest_args, env=env, every_suite=every_suite
            )
        except ScanError as error:
            stopped = str(error)
            print(f"error: {stopped}", file=sys.stderr)
            break
        runs.append(run)
        say(progress_line(package, run))
    scans = bug_scans(bugs, runs)
    failed = failed_runs(scans, {run.release: run.pytest_exit for run in runs})
    status = write_scan(out, package, registry_path, scans, runs, stopped, failed)
    for line in summary_lines(out, scans, stopped, failed):
        say(line)
    return status
