"""`python -m reports scan`: install each release into a folder of its own, run the suites in a
fresh pytest process with that folder first on PYTHONPATH, then write scan.json and scan.html.

Installs are `uv pip install --no-deps --target`: the environment's torch stays, and a release
installed once is reused from the cache folder (an interrupted install never counts as cached).
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import time
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TypeVar

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from fixtures.known_bugs.commits import harness_cache
from fixtures.known_bugs.distributions import distribution_of
from fixtures.known_bugs.registry import Bug, RegistryError, load_registry
from fixtures.known_bugs.versions import installed_version
from reports import REPOSITORY
from reports.run.loading import ResultsError, load_results
from reports.scan.page import scan_document, scan_html
from reports.scan.ranges import BugScan, ReleaseError, failed_runs, outcome_line, release_order, scan_bug, window_words

PACKAGES_TOML = Path(__file__).with_name("packages.toml")
# 1: the registry is contradicted or a run errored; 3: nothing contradicts it, but some release
# could not be decided (skipped, inconclusive, a race that did not trigger), so nothing confirms it.
AGREE, DISAGREE, BAD_INPUT, UNDECIDED = 0, 1, 2, 3
Run = TypeVar("Run")  # what one release's step returns (a scan's ReleaseRun, a census's ReleaseCensus)
# How a scan or a bisect says a line by default: flushed at once, so that a CI log shows it as it happens.
say_flushed = partial(print, flush=True)


class ScanError(ValueError):
    """Bad input: one line for the user; the releases scanned before it are kept."""


def default_cache() -> Path:
    """~/.cache/gpu-regression-harness/releases."""
    return harness_cache() / "releases"


def release_folder(cache: Path, package: str, release: str) -> Path:
    """One folder per Python ABI and release: a build for 3.11 is not reused by 3.12."""
    return cache / sysconfig.get_config_var("SOABI") / f"{package}-{release}"


@dataclass(frozen=True)
class Policy:
    """How the scan and bisect treat a package (packages.toml)."""

    bisect_refusal: str | None  # why bisect cannot build its commits, None where it can
    install_env: dict[str, str]
    # Per paired package, its release for each minor of this one; None: releases go in a folder
    # on PYTHONPATH over the environment's torch, not in environments of their own.
    pairs: dict[str, dict[str, str]] | None = None


def package_policy(package: str) -> Policy:
    policy = tomllib.loads(PACKAGES_TOML.read_text(encoding="utf-8"))
    refused = policy["no_bisect"].get(package)
    bisect_refusal = f"{package}: {refused['reason']}; {refused['instead']}" if refused else None
    environment = policy.get("environment", {}).get(package)
    return Policy(bisect_refusal, policy["install_env"].get(package, {}), environment["pairs"] if environment else None)


def environment_requirements(package: str, release: str, pairs: dict[str, dict[str, str]]) -> list[str]:
    """What a release's own environment installs besides the harness: the release and each
    paired package's release for its minor (setuptools too: triton 3.2, torch 2.6's, imports it).
    A minor newer than every one the table lists (a release that landed after it) takes the newest
    paired release the index admits beside it, which each verdict then names; an older one missing
    from the table is refused."""
    minor = ".".join(release.split(".")[:2])
    missing = [paired for paired, by_minor in pairs.items() if minor not in by_minor and not newer_than_listed(minor, by_minor)]
    if missing:
        raise ScanError(f"{package} {release}: no {', '.join(missing)} release paired with {package} {minor} (reports/scan/packages.toml)")
    paired_releases = [f"{paired}=={by_minor[minor]}.*" if minor in by_minor else paired for paired, by_minor in pairs.items()]
    return [f"{package}=={release}", *paired_releases, "setuptools"]


def newer_than_listed(minor: str, by_minor: dict[str, str]) -> bool:
    return Version(minor) > max(map(Version, by_minor))


def requirements_of(package: str, folder: Path) -> list[str]:
    """The Requires-Dist lines of the release installed in folder."""
    found = distribution_of(package, [str(folder)])
    return (found.requires or []) if found is not None else []


def torch_excluded(requires: Sequence[str], torch_version: str) -> str | None:
    """The release's requirement on torch where it excludes `torch_version` (torchvision 0.21.0's
    torch==2.6.0 beside torch 2.14.1; from 0.29.1 on torchvision admits torch>=2.14.0), else None.
    Requirements for an extra do not count, nor a line that does not parse (old releases' metadata
    has some), which cannot exclude anything."""
    for line in requires:
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue
        if canonicalize_name(requirement.name) != "torch" or (requirement.marker and not requirement.marker.evaluate({"extra": ""})):
            continue
        if torch_version and not requirement.specifier.contains(torch_version, prereleases=True):
            return str(requirement)
    return None


def last_line(text: str) -> str:
    """The line that says what went wrong: the last error line (uv ends with hints) with the `cause:` /
    `Caused by:` lines uv puts under it (why it failed), else the last line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [at for at, line in enumerate(lines) if line.startswith("error:")]
    if not errors:
        return (lines or ["(no output)"])[-1]
    causes = itertools.takewhile(lambda line: line.startswith(("cause:", "Caused by:")), lines[errors[-1] + 1 :])
    return ": ".join([lines[errors[-1]], *causes])


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


def make_environment(folder: Path, requirements: list[str], what: str, env: dict[str, str]) -> bool:
    """A virtual environment of its own in folder (the requirements and the harness, editable);
    False when a complete one was there. A folder without its completion mark is made anew."""
    complete = folder / ".scan-complete"
    if complete.is_file():
        return False
    from uv import find_uv_bin  # here, not at the top: the matrix-page job runs `reports` without uv

    shutil.rmtree(folder, ignore_errors=True)
    python = environment_python(folder)
    for command in (
        [find_uv_bin(), "venv", "--quiet", "--python", sys.executable, str(folder)],
        [find_uv_bin(), "pip", "install", "--quiet", "--native-tls", "--python", str(python), *requirements, "-e", str(REPOSITORY)],
    ):
        done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, **env})
        if done.returncode != 0:
            raise ScanError(f"{what}: environment failed: {last_line(done.stderr)}")
    complete.write_text(" ".join(requirements) + "\n", encoding="utf-8")
    return True


def environment_python(folder: Path) -> Path:
    return folder / "bin" / "python"


def pytest_command(
    bugs: list[Bug], registry: Path, report_dir: Path, pytest_args: list[str], every_suite: bool = False, python: str = sys.executable
) -> list[str]:
    """The scanned bugs' tests only, or with `every_suite` every suite (the sweeps included)."""
    selection = [] if every_suite else [f"--bug={bug.id}" for bug in bugs]
    return [
        python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *selection,
        f"--bug-registry={registry}", f"--report-dir={report_dir}", *pytest_args,
    ]


def run_suites(folder: Path | None, command: list[str], report_dir: Path) -> int:
    """A fresh pytest process, with the release's folder first on PYTHONPATH (None: the command's
    own environment holds the release); its output is kept in pytest.log beside the reports."""
    report_dir.mkdir(parents=True, exist_ok=True)
    return release_first(folder, command, report_dir / "pytest.log")


def release_first(folder: Path | None, command: list[str], log: Path, cwd: Path = REPOSITORY, env: dict[str, str] | None = None) -> int:
    """`command` (a fresh Python) with the release's folder first on PYTHONPATH and `env` over this
    process's environment, from `cwd`, its output kept in `log`; its exit status."""
    path = os.pathsep.join(filter(None, [str(folder) if folder else None, os.environ.get("PYTHONPATH")]))
    with log.open("w", encoding="utf-8") as output:
        done = subprocess.run(command, cwd=cwd, stdout=output, stderr=subprocess.STDOUT, env={**os.environ, **(env or {}), "PYTHONPATH": path})
    return done.returncode


def is_pep440(version: str) -> bool:
    try:
        Version(version)
    except InvalidVersion:
        return False
    return True


def bug_records(document: dict) -> dict[str, dict]:
    """A results.json's verdict records by bug id."""
    return {record["bug_id"]: record for record in document["verdicts"]}


def release_verdicts(document: dict, package: str, release: str, bugs: list[Bug]) -> dict[str, str | None]:
    """The run's verdict per bug, after checking that the run saw the release it was given
    (a package shadowing the folder would make every verdict about the wrong release)."""
    records = bug_records(document)
    for record in records.values():
        seen = record["installed"]
        if record["package"] != package:
            continue
        if seen is not None and not is_pep440(seen):
            raise ScanError(f"{package} {release}: the run saw {package} {seen!r}, which is not a PEP 440 version (a git build?)")
        if seen is None or not same_release(seen, release):
            raise ScanError(f"{package} {release}: the run saw {package} {seen or '(not installed)'}; is it shadowed on sys.path?")
    return {bug.id: records[bug.id]["verdict"] if bug.id in records else None for bug in bugs}


# The label a package index adds to a wheel built for a backend (torch 2.6.0+cpu, +cu130, +rocm6.2).
_PLATFORM_LABEL = re.compile(r"cpu|cu\d+|rocm\d+(\.\d+)*|xpu")


def same_release(seen: str, release: str) -> bool:
    """Whether the run saw the release it was given: a platform label the index added (2.6.0+cpu
    for 2.6.0, UV_TORCH_BACKEND's wheels) is the same release; any other label is another build."""
    seen_version, asked = Version(seen), Version(release)
    platform_build = asked.local is None and _PLATFORM_LABEL.fullmatch(seen_version.local or "") is not None
    return seen_version == asked or (platform_build and seen_version.public == asked.public)


def installed_versions(document: dict, bugs: list[Bug]) -> dict[str, str | None]:
    """Per bug, the release of its package the run saw (a paired package's, in an environment scan)."""
    records = bug_records(document)
    return {bug.id: records[bug.id]["installed"] if bug.id in records else None for bug in bugs}


@dataclass
class ReleaseRun:
    release: str
    verdicts: dict[str, str | None]
    installed_now: bool
    install_s: float
    pytest_s: float
    pytest_exit: int
    # Per bug, the release of its package the run held: the scanned release itself, or in an
    # environment scan the paired package's (torchvision 0.21.0 in torch 2.6.0's environment).
    installed: dict[str, str | None]
    # In an environment scan, the paired packages' releases it held ("torchvision 0.29.2").
    paired: tuple[str, ...] = ()


def paired_releases(folder: Path, pairs: dict[str, dict[str, str]]) -> tuple[str, ...]:
    """The release of each paired package an environment holds, as "torchvision 0.29.2"."""
    site = [str(path) for path in folder.glob("lib/python*/site-packages")]
    return tuple(f"{paired} {installed_version(paired, site) or '(not installed)'}" for paired in pairs)


def scan_release(
    package: str, release: str, bugs: list[Bug], *, out: Path, cache: Path, registry: Path, pytest_args: list[str], policy: Policy,
    every_suite: bool = False,
) -> ReleaseRun:
    started = time.perf_counter()
    folder = release_folder(cache, package, release)
    what = f"{package} {release}"
    paired: tuple[str, ...] = ()
    if policy.pairs is None:
        installed_now = install_into(folder, f"{package}=={release}", what, policy.install_env)
        torch_here = installed_version("torch") or ""
        if excluded := torch_excluded(requirements_of(package, folder), torch_here):
            raise ScanError(
                f"{what} requires {excluded} and this environment has torch {torch_here}: it would be judged over a torch "
                "it was not built for (install a torch it admits beside the harness, or scan torch releases: python -m reports scan torch "
                "RELEASE, each in an environment with its torchvision pair)"
            )
        on_path, python = folder, sys.executable
    else:
        requirements = environment_requirements(package, release, policy.pairs)
        installed_now = make_environment(folder, requirements, what, policy.install_env)
        on_path, python = None, str(environment_python(folder))
        paired = paired_releases(folder, policy.pairs)
    installed = time.perf_counter()
    report_dir = out / f"{package}-{release}"
    exit_code = run_suites(on_path, pytest_command(bugs, registry, report_dir, pytest_args, every_suite, python), report_dir)
    finished = time.perf_counter()
    if exit_code not in (0, 1):  # 0 all as expected, 1 a test failed: both leave verdicts
        raise ScanError(f"{package} {release}: pytest exit status {exit_code}: {last_line((report_dir / 'pytest.log').read_text(encoding='utf-8'))}")
    try:
        document = load_results(report_dir / "results.json")
    except ResultsError as error:
        raise ScanError(str(error)) from None
    verdicts = release_verdicts(document, package, release, bugs)
    return ReleaseRun(
        release, verdicts, installed_now, round(installed - started, 2), round(finished - installed, 2), exit_code,
        installed_versions(document, bugs), paired,
    )


def progress_line(package: str, run: ReleaseRun) -> str:
    verdicts = ", ".join(f"{bug_id} {verdict or '(no verdict)'}" for bug_id, verdict in run.verdicts.items())
    install = "installed" if run.installed_now else "cached"
    held = f" with {', '.join(run.paired)}" if run.paired else ""
    took = f"{run.install_s + run.pytest_s:.1f} s: {install} {run.install_s:.1f} s, pytest {run.pytest_s:.1f} s"
    return f"{package} {run.release}{held}: {verdicts} ({took})"


def selected_bugs(registry: dict[str, Bug], package: str, bug_ids: list[str], paired: tuple[str, ...] = ()) -> list[Bug]:
    """The given bugs (each of the package or a package paired with it), or every such bug."""
    judged = (package, *paired)
    packages = sorted({bug.package for bug in registry.values()})
    if package not in packages:
        raise ScanError(f"unknown package {package!r}: the registry's packages are {', '.join(packages)}")
    unknown = [bug_id for bug_id in bug_ids if bug_id not in registry]
    if unknown:
        raise ScanError(f"--bug: unknown bug id(s) {', '.join(unknown)}; known: {', '.join(registry)}")
    foreign = [bug_id for bug_id in bug_ids if registry[bug_id].package not in judged]
    if foreign:
        raise ScanError(f"--bug: {', '.join(foreign)} is not a bug of {' or '.join(judged)}")
    chosen = [registry[bug_id] for bug_id in bug_ids] or [bug for bug in registry.values() if bug.package in judged]
    if not chosen:
        raise ScanError(f"the registry has no bug of {' or '.join(judged)}")
    return chosen


def bug_scans(bugs: list[Bug], runs: list[ReleaseRun]) -> list[BugScan]:
    return [
        scan_bug(
            bug_id=bug.id, title=bug.title, affected=bug.affected, first_fixed=str(bug.first_fixed or "no release yet"), kind=bug.kind,
            verdicts={run.release: run.verdicts[bug.id] for run in runs},
            placed_by={run.release: run.installed[bug.id] or run.release for run in runs}, ambiguous=bug.ambiguous,
        )
        for bug in bugs
    ]


def scan_status(scans: list[BugScan], stopped: str | None, failed: Sequence[str] = ()) -> int:
    if stopped:
        return BAD_INPUT
    if failed or any(bug.disagreements or bug.errors for bug in scans):
        return DISAGREE
    return UNDECIDED if any(bug.undecided for bug in scans) else AGREE


def write_scan(
    out: Path, package: str, registry: Path, scans: list[BugScan], runs: list[ReleaseRun], stopped: str | None, failed: list[str]
) -> int:
    status = scan_status(scans, stopped, failed)
    runs_data = [vars(run) for run in runs]
    document = scan_document(package, str(registry), runs_data, scans, stopped, status, failed)
    (out / "scan.json").write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    (out / "scan.html").write_text(scan_html(document), encoding="utf-8")
    return status


def summary_lines(out: Path, scans: list[BugScan], stopped: str | None = None, failed: Sequence[str] = ()) -> list[str]:
    lines = []
    for bug in scans:
        lines.append(
            f"{bug.bug_id}: measured first affected {bug.first_affected or '-'}, first fixed {bug.first_fixed or '-'}"
            + "".join(f", seen again from {window_words(w, next(reversed(bug.verdicts), ''))}" for w in bug.windows[1:])
            + "; "
            f"registry affected {bug.registry_affected_range}, first fixed {bug.registry_first_fixed}"
            + (f" (of the release each held: {', '.join(f'{r} {v}' for r, v in bug.placed_by.items())})" if bug.placed_by else "")
        )
        lines.extend(f"  DISAGREES {item.release}: {item.verdict}, {item.reason}" for item in bug.disagreements)
        lines.extend(f"  ERROR {item.release}: {item.reason}" for item in bug.errors)
        lines.extend(f"  UNDECIDED {item.release}: {item.reason}" for item in bug.undecided)
    lines.extend(
        f"FAILED RUN {release}: pytest failed where no scanned bug's verdict explains it: {out}/*-{release}/pytest.log" for release in failed
    )
    return [*lines, f"scan {outcome_line(scans, stopped, failed)}", f"scan: {out / 'scan.json'}, {out / 'scan.html'}"]


def release_by_release(releases: Sequence[str], step: Callable[[str], Run], said: Callable[[Run], None]) -> tuple[list[Run], str | None]:
    """`step` of each release in turn, `said` of each as it ends; the first bad input (ScanError)
    is printed and stops the rest: the runs done, and that line (None when none stopped them)."""
    runs = []
    for release in releases:
        try:
            run = step(release)
        except ScanError as error:
            print(f"error: {error}", file=sys.stderr)
            return runs, str(error)
        runs.append(run)
        said(run)
    return runs, None


def scan(
    package: str, releases: list[str], bug_ids: list[str], *, out: Path, cache: Path, registry_path: Path,
    pytest_args: list[str], say: Callable[[str], None] = say_flushed, every_suite: bool = False,
) -> int:
    """Scan the releases oldest first; bad input stops the scan with one line (exit 2), keeping
    what was scanned so far in scan.json / scan.html. Each line is flushed as it is said, so a CI
    log shows every release as it finishes."""
    try:
        registry = load_registry(registry_path)
        policy = package_policy(package)
        bugs = selected_bugs(registry, package, bug_ids, tuple(policy.pairs or ()))
        ordered = release_order(releases)
        out.mkdir(parents=True, exist_ok=True)
    except (RegistryError, ReleaseError, ScanError) as error:
        print(f"error: {error}", file=sys.stderr)
        return BAD_INPUT
    except OSError as error:
        print(f"error: --out {out}: {error.strerror}", file=sys.stderr)
        return BAD_INPUT
    runs, stopped = release_by_release(
        ordered,
        lambda release: scan_release(
            package, release, bugs, out=out, cache=cache, registry=registry_path, pytest_args=pytest_args, policy=policy, every_suite=every_suite
        ),
        lambda run: say(progress_line(package, run)),
    )
    scans = bug_scans(bugs, runs)
    failed = failed_runs(scans, {run.release: run.pytest_exit for run in runs})
    status = write_scan(out, package, registry_path, scans, runs, stopped, failed)
    for line in summary_lines(out, scans, stopped, failed):
        say(line)
    return status
