"""`python -m reports census PACKAGE FIRST..LAST --repo REPO`: per release, the package's own tests
(exported from the release's tag in REPO) run twice, plainly on the CPU and with
`pytest --simcuda`, and the harness's sweeps of the package; the tests that pass plainly and fail
only simulated, and the sweeps' findings, grouped by cause into census.json, census.html and
census.md.

Releases are installed as the scan installs them (`uv pip install --no-deps --target`, cached per
release), so a census run twice installs nothing the second time.
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from fixtures.known_bugs.registry import RegistryError, load_registry
from fixtures.known_bugs.versions import installed_version
from fixtures.sweeps.allowlist import DEFAULT_ALLOWLIST, AllowlistError, load_allowlist
from fixtures.toml_files import read_toml
from reports import REPOSITORY
from reports.census.causes import cause_of
from reports.census.findings import CUDA_CASE, MATCHES_TOML, OWN_TESTS, SWEEP, Failure, MatchesError, group_findings, load_matches, place_of_test
from reports.census.junit import FAILING, Outcomes, compare, node_id, read_junit
from reports.census.page import CENSUS_SCHEMA_VERSION, census_document, census_html, census_markdown, console_lines
from reports.census.releases import ReleaseRangeError, census_releases, parse_tests_at, repository_tags, tagged_releases
from reports.run.loading import ResultsError, load_results
from reports.scan.run import ScanError, install_into, last_line, pytest_command, release_by_release, release_first, release_folder, say_flushed

SUITES_TOML = Path(__file__).with_name("suites.toml")
DONE, UNMATCHED, BAD_INPUT = 0, 1, 2
TEST_TIMEOUT_S = 300  # one test of a package's own suite; a hang must not stall a census of many releases


@dataclass(frozen=True)
class CensusSuite:
    tests: list[str]
    beside: list[str]
    groups: list[str]
    pytest_args: list[str]
    sweeps: list[str]
    helpers: list[str]  # the package's own test helpers, by path under its folder: never a failure's cause


def load_suite(package: str, path: Path = SUITES_TOML) -> CensusSuite:
    suites = read_toml(path, "the census's suites", ScanError)
    if package not in suites:
        raise ScanError(f"{package}: the census knows no tests of it (reports/census/suites.toml has {', '.join(suites)})")
    suite = suites[package] if isinstance(suites[package], dict) else {}
    lists = {field.name: suite.get(field.name, None if field.name in ("tests", "groups") else []) for field in fields(CensusSuite)}
    if not all(_strings(value) for value in lists.values()):
        raise ScanError(f"{path}: [{package}] needs tests and groups, and beside, pytest_args, sweeps and helpers if given, as arrays of strings")
    return CensusSuite(**lists)


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


@dataclass
class ReleaseCensus:
    release: str
    tests_from: str  # the ref the release's tests were exported from
    left_out: list[str]  # files of that ref the repository lacks (none in a folder the census runs)
    counts: dict[str, int]
    failures: list[Failure]
    install_s: float
    plain_s: float
    simulated_s: float
    sweeps_s: float


def top_level(repo: Path, ref: str) -> list[str]:
    done = subprocess.run(["git", "-C", str(repo), "ls-tree", "--name-only", ref], capture_output=True, text=True)
    if done.returncode != 0:
        raise ScanError(f"{ref}: not a commit of {repo}: {last_line(done.stderr)}")
    return done.stdout.split()


def export_tests(repo: Path, ref: str, suite: CensusSuite, into: Path) -> tuple[str, list[str]]:
    """The ref's tests folder and what lies beside it, written into `into`: the folder's name, and
    the files left out because the repository lacks their contents (a partial clone), none of them
    in a folder the census runs. Read blob by blob: `git archive` refuses a tree with any blob missing."""
    present = top_level(repo, ref)
    tests = next((name for name in suite.tests if name in present), None)
    if tests is None:
        raise ScanError(f"{ref}: none of {', '.join(suite.tests)} at the top of {repo}")
    listing = subprocess.run(
        ["git", "-C", str(repo), "ls-tree", "-r", "-z", ref, "--", tests, *(name for name in suite.beside if name in present)], capture_output=True
    )
    entries = [line.split(b"\t", 1) for line in listing.stdout.split(b"\0") if line]
    files = [(meta.split()[2].decode(), path.decode()) for meta, path in entries if meta.split()[1] == b"blob"]
    batch = subprocess.run(
        ["git", "-C", str(repo), "cat-file", "--batch"], input=b"".join(f"{sha}\n".encode() for sha, _ in files), capture_output=True
    )
    stream, left_out = batch.stdout, []
    for _, path in files:
        header, _, stream = stream.partition(b"\n")
        if header.endswith(b" missing"):
            left_out.append(path)
            continue
        size = int(header.split()[2])
        target = into / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(stream[:size])
        stream = stream[size + 1 :]  # the blob, then a newline
    running = [path for path in left_out if any(path.startswith(f"{tests}/{group}/") for group in suite.groups)]
    if running:
        raise ScanError(f"{ref}: {repo} lacks the contents of {len(running)} test file(s) the census runs, e.g. {running[0]} (a partial clone?)")
    return tests, left_out


def session(command: list[str], cwd: Path, folder: Path, log: Path) -> float:
    """A fresh pytest with the release's folder first on PYTHONPATH (the scan's release_first), on
    one torch thread unless OMP_NUM_THREADS says otherwise (its xdist workers would spin for each
    other's cores); its seconds."""
    started = time.perf_counter()
    release_first(folder, command, log, cwd, {"OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")})
    return round(time.perf_counter() - started, 1)


def own_tests_command(paths: list[str], suite: CensusSuite, junit: Path, simcuda_report: Path | None, workers: str = "auto") -> list[str]:
    """One side's session, on `workers` xdist workers (auto: one per core; a census is hours of sessions). Native
    tracebacks, so that a failure's innermost frame can be read; xunit1 junit, which names each
    test's file; the package's own addopts dropped (plugins it may name are not installed here)."""
    command = [
        sys.executable, "-m", "pytest", *paths, *suite.pytest_args, "-n", workers, "-q", "-p", "no:cacheprovider", "--color=no", "--tb=native",
        "--continue-on-collection-errors", f"--timeout={TEST_TIMEOUT_S}", f"--junitxml={junit}", "-o", "junit_family=xunit1", "-o", "addopts=",
    ]
    return command + (["--simcuda", f"--simcuda-report={simcuda_report}"] if simcuda_report else [])


def read_side(junit: Path, log: Path, side: str) -> Outcomes:
    if not junit.is_file():
        said = last_line(log.read_text(encoding="utf-8")) if log.is_file() else "(no log either)"
        raise ScanError(f"{side}: pytest wrote no junit: {said} ({log})")
    try:
        return read_junit(junit)
    except ElementTree.ParseError as error:
        raise ScanError(f"{junit}: not a junit XML file ({error})") from None


def read_simcuda_report(path: Path) -> dict:
    """simcuda's JSON report of the simulated session, {} where the session wrote none."""
    if not path.is_file():
        return {}
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ScanError(f"{path}: not JSON ({error})") from None
    if not isinstance(report, dict):
        raise ScanError(f"{path}: not simcuda's report (a JSON object)")
    return report


def read_census(path: Path) -> dict:
    """A kept census.json, with the fields redraw reads."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ScanError(f"{path}: not JSON ({error})") from None
    fields = ("package", "repository", "date", "releases", "stopped")
    if not isinstance(document, dict) or any(field not in document for field in fields) or not all(
        isinstance(run, dict) and isinstance(run.get("release"), str) for run in document["releases"]
    ):
        raise ScanError(f"{path}: not a census ({', '.join(fields)}; each release a table with its 'release')")
    if (version := document.get("census_schema_version")) != CENSUS_SCHEMA_VERSION:
        raise ScanError(f"{path}: census_schema_version {version!r}; this tool reads {CENSUS_SCHEMA_VERSION}")
    return document


def own_test_failures(release: str, sim: Outcomes, compared: dict, folder: Path, helpers: tuple[str, ...]) -> list[Failure]:
    """The tests passing plainly and failing simulated, and the CUDA cases only the simulated run
    runs that fail, each with its cause (cause_of: the release's folder, and the frames of
    Python's and the harness's own files skipped where the test's own code is looked for)."""
    installed = tuple(dict.fromkeys((sys.prefix, sys.base_prefix, str(REPOSITORY))))
    chosen = [(OWN_TESTS, test) for test in compared["failing_only_simulated"]] + [(CUDA_CASE, test) for test in compared["only_simulated_failing"]]
    failures = []
    for kind, test in chosen:
        outcome = sim[test]
        where, error = cause_of(outcome.text, (str(folder),), installed, outcome.message, helpers)
        node = node_id(test, outcome.file)
        failures.append(Failure(release, kind, f"(test) {place_of_test(node)}" if where.startswith("(test) ") else where, error, node))
    return failures


def sweep_failures(release: str, document: dict) -> list[Failure]:
    """The sweeps' findings (the device, state and stream sweeps' rows), with the allow-list's triage."""
    failures = []
    for row in document.get("sweeps", []):
        if row["result"] != "finding":
            continue
        triage = {key: value for key, value in (("bug", row.get("charged")), ("reason", row.get("triaged"))) if value}
        where, test = f"{row['sweep']}: {row['callable']}", f"{row['sweep']} sweep on {row['device']}"
        failures.append(Failure(release, SWEEP, where, row["finding"], test, triage, row.get("site", "")))
    return failures


def release_census(
    package: str, release: str, ref: str, *, repo: Path, suite: CensusSuite, out: Path, cache: Path, registry: Path, workers: str = "auto"
) -> ReleaseCensus:
    started = time.perf_counter()
    folder = release_folder(cache, package, release)
    install_into(folder, f"{package}=={release}", f"{package} {release}", {})
    held = installed_version(package, [str(folder)])  # the release's folder's, never the environment's
    if held != release:
        raise ScanError(f"{package} {release}: its folder holds {package} {held or '(nothing)'}: remove {folder} and run again")
    installed = time.perf_counter()
    reports = out / f"{package}-{release}"
    reports.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="census-tests-") as scratch:
        checkout = Path(scratch)
        tests, left_out = export_tests(repo, ref, suite, checkout)
        paths = [f"{tests}/{group}" for group in suite.groups if (checkout / tests / group).is_dir()]
        plain_s = session(own_tests_command(paths, suite, reports / "plain.xml", None, workers), checkout, folder, reports / "plain.log")
        simulated_s = session(
            own_tests_command(paths, suite, reports / "simulated.xml", reports / "simcuda.json", workers), checkout, folder, reports / "simulated.log"
        )
    sweeps_s = 0.0
    if suite.sweeps:
        command = pytest_command([], registry, reports / "sweeps", suite.sweeps, every_suite=True)  # the scan's, on the sweeps' folders
        sweeps_s = session(command, REPOSITORY, folder, reports / "sweeps.log")
    counts, failures = release_findings(reports, package, release, folder, suite)
    return ReleaseCensus(release, ref, left_out, counts, failures, round(installed - started, 1), plain_s, simulated_s, sweeps_s)


def release_findings(reports: Path, package: str, release: str, folder: Path, suite: CensusSuite) -> tuple[dict[str, int], list[Failure]]:
    """What a release's kept sessions say (their junit files, simcuda's report, the sweeps'
    results.json under `reports`): its counts and its failures with their causes. Read again by
    census-redraw."""
    cpu = read_side(reports / "plain.xml", reports / "plain.log", "plain")
    sim = read_side(reports / "simulated.xml", reports / "simulated.log", "simulated")
    simcuda = read_simcuda_report(reports / "simcuda.json")
    compared = compare(cpu, sim, simcuda)
    failures = own_test_failures(release, sim, compared, folder, tuple(suite.helpers))
    if suite.sweeps:
        try:
            failures += sweep_failures(release, load_results(reports / "sweeps" / "results.json"))
        except ResultsError as error:
            raise ScanError(f"{package} {release}: the sweeps left no results: {error} ({reports / 'sweeps.log'})") from None
    counts = {
        "passing_plainly": compared["passing_on_cpu"],
        "passed_on_both": compared["passed_on_both"],
        "failing_only_simulated": len(compared["failing_only_simulated"]),
        "refused": compared["refused"],
        "cuda_cases_passed": compared["only_simulated_passed"],
        "cuda_cases_failing": len(compared["only_simulated_failing"]),
        "plain_failures": sum(1 for outcome in cpu.values() if outcome.outcome in FAILING),
        "sweep_findings": sum(1 for failure in failures if failure.kind == SWEEP),
    }
    return counts, failures


def progress_line(package: str, run: ReleaseCensus) -> str:
    counts = run.counts
    causes = len({(failure.kind, failure.where, failure.error) for failure in run.failures})
    seconds = run.install_s + run.plain_s + run.simulated_s + run.sweeps_s
    return (
        f"{package} {run.release} (tests from {run.tests_from}{left_out_words(run)}): {counts['passing_plainly']} pass plainly, "
        f"{counts['failing_only_simulated']} of them fail only simulated; CUDA cases {counts['cuda_cases_passed']} passed, "
        f"{counts['cuda_cases_failing']} failing; {counts['sweep_findings']} sweep finding(s); {causes} cause(s) "
        f"({seconds:.0f} s: install {run.install_s:.0f}, plain {run.plain_s:.0f}, simulated {run.simulated_s:.0f}, sweeps {run.sweeps_s:.0f})"
    )


def left_out_words(run: ReleaseCensus) -> str:
    return f"; {len(run.left_out)} file(s) the repository lacks left out: {', '.join(run.left_out[:3])}" if run.left_out else ""


def census(
    package: str, arguments: list[str], *, repo: Path, tests_at: list[str], out: Path, cache: Path, registry_path: Path,
    say: Callable[[str], None] = say_flushed, suites: Path = SUITES_TOML, matches_file: Path = MATCHES_TOML, workers: str = "auto",
) -> int:
    """Oldest release first, a progress line each; bad input stops with one line (exit 2), keeping
    what was done in census.json / census.html / census.md. Exit 1 when a finding is unmatched
    (nobody has looked for it upstream, nor registered it) or triaged wider than it shows."""
    try:
        suite = load_suite(package, suites)
        matches = load_matches(package, matches_file, frozenset(load_registry(registry_path)))
        allowlist = load_allowlist(DEFAULT_ALLOWLIST)  # the one the census's sweeps run with
        releases = census_releases(arguments, tagged_releases(repository_tags(repo)), parse_tests_at(tests_at))
        out.mkdir(parents=True, exist_ok=True)
    except (ScanError, MatchesError, RegistryError, ReleaseRangeError, AllowlistError) as error:
        print(f"error: {error}", file=sys.stderr)
        return BAD_INPUT
    except OSError as error:
        print(f"error: --out {out}: {error.strerror}", file=sys.stderr)
        return BAD_INPUT
    runs, stopped = release_by_release(
        list(releases),
        lambda release: release_census(
            package, release, releases[release], repo=repo, suite=suite, out=out, cache=cache, registry=registry_path, workers=workers
        ),
        lambda run: say(progress_line(package, run)),
    )
    findings = group_findings([failure for run in runs for failure in run.failures], [run.release for run in runs], matches, allowlist)
    entries = [census_run_entry(run) for run in runs]
    document = census_document(package, str(repo), datetime.date.today().isoformat(), entries, findings, stopped, suite.pytest_args, suite.sweeps)
    return write_census(out, document, say)


def write_census(out: Path, document: dict, say: Callable[[str], None]) -> int:
    """census.json, census.html, census.md and the console's summary; the exit status."""
    (out / "census.json").write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    (out / "census.html").write_text(census_html(document), encoding="utf-8")
    (out / "census.md").write_text(census_markdown(document), encoding="utf-8")
    for line in console_lines(document):
        say(line)
    say(f"census: {out / 'census.json'}, {out / 'census.html'}, {out / 'census.md'}")
    if document["stopped"]:
        return BAD_INPUT
    return UNMATCHED if any(finding["match"]["kind"] in ("unmatched", "wider") for finding in document["findings"]) else DONE


def redraw(
    out: Path, *, cache: Path, registry_path: Path, suites: Path = SUITES_TOML, matches_file: Path = MATCHES_TOML,
    say: Callable[[str], None] = say_flushed,
) -> int:
    """A kept census read again: each release's kept sessions (under `out`) analysed anew, the
    findings grouped and matched with the current suites.toml and matches.toml, the files written
    anew. Nothing runs: for the triage after a census (match a finding upstream, redraw)."""
    try:
        document = read_census(out / "census.json")
        package = document["package"]
        suite = load_suite(package, suites)
        matches = load_matches(package, matches_file, frozenset(load_registry(registry_path)))
        allowlist = load_allowlist(DEFAULT_ALLOWLIST)
        failures = []
        for run in document["releases"]:
            folder = release_folder(cache, package, run["release"])
            run["counts"], found = release_findings(out / f"{package}-{run['release']}", package, run["release"], folder, suite)
            failures += found
    except OSError as error:
        print(f"error: {error.filename}: cannot read: {error.strerror}", file=sys.stderr)
        return BAD_INPUT
    except (MatchesError, RegistryError, ScanError, AllowlistError) as error:
        print(f"error: {error}", file=sys.stderr)
        return BAD_INPUT
    findings = group_findings(failures, [run["release"] for run in document["releases"]], matches, allowlist)
    redrawn = census_document(
        package, document["repository"], document["date"], document["releases"], findings, document["stopped"], suite.pytest_args, suite.sweeps
    )
    return write_census(out, redrawn, say)


def census_run_entry(run: ReleaseCensus) -> dict:
    entry = asdict(run)
    del entry["failures"]
    return entry
