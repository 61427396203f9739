"""python -m reports compare OLD.json NEW.json [-o compare.html] [--all]
python -m reports matrix RESULTS.json... [-o matrix.html]
python -m reports scan PACKAGE VERSION... [--bug ID] [--every-suite] [--out DIR] [--cache DIR] [--bug-registry=PATH] [-- PYTEST ARGS]
python -m reports census PACKAGE FIRST..LAST|VERSION... --repo REPO [--tests-at VERSION=REF] [--out DIR] [--cache DIR]
                                  [--suites PATH] [--matches PATH] [--workers N]
python -m reports census-redraw [--out DIR] [--matches PATH] [--suites PATH] [--cache DIR]   (a kept census analysed again)
python -m reports bisect PACKAGE --repo REPO --good REF --bad REF --bug ID [--fixed] [--out DIR] [--cache DIR] [-- PYTEST ARGS]
python -m reports acceptance [--race-budget N,Ss] [--out DIR]   (on a GPU machine, or rehearsed on the
                                                   simulated runner: SIMCUDA_RUNNER_GPUS=N; steps.py)

Exit status: 0 done (scan: every release's verdict was decided and agrees with the registry), 1 the
new run has a new regression, error or unplaced sighting (compare), a release disagrees with the
registry or its run errored (scan) or a pytest step failed (acceptance), 2 bad input (one line), 3
nothing fails but something was not decided: a bug the old run decided is skipped, inconclusive or
absent in the new one (compare), some release's verdict decided nothing (scan: skipped,
inconclusive, unplaced, a race that did not trigger).
census: 0 every finding is matched (a registered bug, an upstream report, or searched for and not
found), 1 a finding nobody has matched yet, or one the sweep allow-list would accept at a newer
release than it showed in (`wider`), 2 bad input (one line; the releases done are kept).
bisect: 0 the first bad (--fixed: first fixed) commit is named, 1 an end does not behave as claimed
(or git stopped without an answer), 2 bad input, 3 only skipped commits are left (the candidates
are printed).
"""

from __future__ import annotations

import argparse
import datetime
import os
import subprocess
import sys
from pathlib import Path

from fixtures.known_bugs.registry import DEFAULT_REGISTRY
from fixtures.races.budget import parse_race_budget
from reports import REPOSITORY
from reports.acceptance.gpus import GpuQueryError, visible_gpu_names
from reports.acceptance.steps import DEFAULT_RACE_BUDGET, acceptance_root, acceptance_steps, observed_folder
from reports.acceptance.summary import combined_lines, conformance_lines, missing_results_lines, summary_lines
from reports.across_runs.compare import EXAMPLES, compare, comparison_html, comparison_text, exit_status
from reports.across_runs.matrix import matrix_columns, matrix_html
from reports.bisect.run import bisect
from reports.census.findings import MATCHES_TOML
from reports.census.run import SUITES_TOML, census, redraw
from reports.run.loading import ResultsError, load_results
from reports.scan.run import default_cache, scan

BAD_INPUT = 2


def nonempty(text: str) -> str:
    """An argument's value; an empty one (a template that left it out) would be the working
    directory, or a default."""
    if not text:
        raise argparse.ArgumentTypeError("an empty value")
    return text


def a_path(text: str) -> Path:
    return Path(nonempty(text))


def workers(text: str) -> str:
    """pytest-xdist's -n value: auto, logical, or a count (0: one process), checked before any install."""
    if text in ("auto", "logical") or (text.isascii() and text.isdecimal()):
        return text
    raise argparse.ArgumentTypeError(f"{text!r} is not auto, logical or a count of workers")


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(
        prog="python -m reports",
        description="The harness's tools around its pytest runs: compare two runs, draw the verdict matrix of many, scan "
        "releases against the registry, bisect a package's history for a bug, run the GPU acceptance run.",
    )
    commands = root.add_subparsers(dest="command", required=True)
    compare_command = commands.add_parser(
        "compare", help="what changed between two runs; exit 1 on a new regression, 3 on evidence lost",
        description="Compare two runs' results.json, bug by bug and test by test, and write an HTML page of the changes. "
        "Prints the bugs whose verdict changed (worst first, with evidence and NEW's reason), then the test-level changes: "
        "counts by kind (newly failing, newly passing, only in old, only in new, outcome changed) and the first "
        f"{EXAMPLES} tests of each. Exit 0: nothing new fails and nothing decided was lost; 1: a bug regressed, errored or was "
        "seen on an unplaced build in NEW that was not in OLD; 2: bad input; 3: no such bug, but a bug OLD decided is skipped, "
        "inconclusive or absent in NEW.",
    )
    compare_command.add_argument("old", type=a_path, metavar="OLD.json", help="the earlier run's results.json (the last release, say)")
    compare_command.add_argument("new", type=a_path, metavar="NEW.json", help="the later run's results.json")
    compare_command.add_argument("-o", "--output", type=a_path, default=Path("compare.html"), help="HTML page (default: compare.html)")
    compare_command.add_argument(
        "--all", action="store_true", dest="every_test",
        help=f"print every test whose outcome changed or that only one run has (default: the first {EXAMPLES} of each kind and how many more)",
    )
    matrix_command = commands.add_parser(
        "matrix", help="one grid of verdicts, bugs x (release x GPU), from many jobs",
        description="Draw one HTML grid of verdicts from many runs' results.json (a CI matrix's jobs): a row per bug, a column "
        "per job, each cell linking to that job's report.",
    )
    matrix_command.add_argument("results", type=a_path, nargs="+", metavar="RESULTS.json", help="one results.json per job")
    matrix_command.add_argument("-o", "--output", type=a_path, default=Path("matrix.html"), help="HTML page (default: matrix.html)")
    scan_command = commands.add_parser(
        "scan", help="each release's verdicts against the registry's ranges; exit 1 on a disagreement or an errored run",
        description="Install each release with no dependencies into a cached folder (a torch release: an environment of its own "
        "with its torchvision pair) and run its bugs' suites in a fresh pytest; "
        "arguments after -- go to pytest. Exit 0: every release's verdict was decided and agrees with the registry; "
        "1: a release disagrees or its run errored; 2: bad input; 3: none disagrees, but some release is undecided "
        "(skipped, inconclusive, unplaced, a race that did not trigger).",
    )
    scan_command.add_argument("package", help="a package the registry names (kornia, sam2), or torch (each release in an environment of its own)")
    scan_command.add_argument(
        "releases", nargs="+", metavar="VERSION", help="releases to scan, as the package index names them (0.7.1); scanned oldest first",
    )
    scan_command.add_argument(
        "--bug", action="append", default=[], metavar="ID", help="scan only this bug (repeatable; default: all of the package's bugs)",
    )
    scan_command.add_argument(
        "--every-suite", action="store_true",
        help="run every suite and sweep on each release, not only the scanned bugs' tests (a failure no verdict explains fails the scan)",
    )
    scan_command.add_argument(
        "--out", type=a_path, default=REPOSITORY / "reports" / "out" / "scan",
        help="scan.json, scan.html and one PACKAGE-VERSION/ report folder per release (default: reports/out/scan)",
    )
    scan_command.add_argument(
        "--cache", type=a_path, default=default_cache(), help=f"installed releases, one folder each (default: {default_cache()})"
    )
    scan_command.add_argument(
        "--bug-registry", type=a_path, default=DEFAULT_REGISTRY, metavar="PATH", help="bug registry TOML (default fixtures/known_bugs/bugs.toml)",
    )
    census_command = commands.add_parser(
        "census", help="a package's own tests and the harness's sweeps at each release, plainly and simulated: what fails only simulated, by cause",
        description="For each release (installed as the scan installs it, cached): the package's own tests, exported from the "
        "release's tag in REPO, run plainly on the CPU and with pytest --simcuda, and the harness's sweeps of the package. The tests "
        "that pass plainly and fail only simulated (and the CUDA cases only the simulated run runs that fail), and the sweeps' "
        "findings, are grouped by cause (the innermost frame in the package and the error) with their first and last release and "
        "what upstream knows of them (reports/census/matches.toml): census.json, census.html, census.md. Exit 0: every finding "
        "is matched; 1: a finding nobody has matched yet; 2: bad input.",
    )
    census_command.add_argument("package", help="a package of reports/census/suites.toml (kornia)")
    census_command.add_argument(
        "releases", nargs="+", metavar="FIRST..LAST|VERSION",
        help="a range (both ends included: the tagged final releases in it, and those --tests-at names) or single releases",
    )
    census_command.add_argument("--repo", type=a_path, required=True, help="the package's git repository (a clone or a bare mirror; never modified)")
    census_command.add_argument(
        "--tests-at", action="append", default=[], metavar="VERSION=REF",
        help="take a release's tests from REF, for a release with no tag vVERSION or VERSION in REPO (repeatable)",
    )
    census_command.add_argument(
        "--out", type=a_path, default=REPOSITORY / "reports" / "out" / "census",
        help="census.json, census.html, census.md and one PACKAGE-VERSION/ folder of logs per release (default: reports/out/census)",
    )
    census_command.add_argument(
        "--cache", type=a_path, default=default_cache(), help=f"installed releases, one folder each (default: {default_cache()})"
    )
    census_command.add_argument(
        "--suites", type=a_path, default=SUITES_TOML, metavar="PATH",
        help="where each package's tests are and how they run (default reports/census/suites.toml; a package of your own: a table of yours)",
    )
    census_command.add_argument(
        "--matches", type=a_path, default=MATCHES_TOML, metavar="PATH",
        help="what upstream knows of each finding (default reports/census/matches.toml)",
    )
    census_command.add_argument(
        "--workers", type=workers, default="auto", metavar="N", help="pytest-xdist workers per session (default auto: one per core; 0: one process)"
    )
    census_command.add_argument(
        "--bug-registry", type=a_path, default=DEFAULT_REGISTRY, metavar="PATH", help="bug registry TOML (default fixtures/known_bugs/bugs.toml)",
    )
    redraw_command = commands.add_parser(
        "census-redraw", help="a kept census analysed again (its sessions' files, the current matches.toml); nothing runs",
        description="Read census.json under --out and each release's kept sessions beside it (junit files, simcuda's report, "
        "the sweeps' results.json), find the causes again, group and match them with the current suites.toml, matches.toml and "
        "registry, and write census.json, census.html and census.md anew: the triage after a census, without running it again. "
        "Exit statuses as the census's.",
    )
    redraw_command.add_argument(
        "--out", type=a_path, default=REPOSITORY / "reports" / "out" / "census", help="the census's folder (default: reports/out/census)"
    )
    redraw_command.add_argument(
        "--matches", type=a_path, default=MATCHES_TOML, metavar="PATH",
        help="what upstream knows of each finding (default reports/census/matches.toml)",
    )
    redraw_command.add_argument(
        "--suites", type=a_path, default=SUITES_TOML, metavar="PATH", help="as the census's (default reports/census/suites.toml)"
    )
    redraw_command.add_argument(
        "--cache", type=a_path, default=default_cache(), help=f"the census's installed releases (default: {default_cache()})"
    )
    redraw_command.add_argument(
        "--bug-registry", type=a_path, default=DEFAULT_REGISTRY, metavar="PATH", help="bug registry TOML (default fixtures/known_bugs/bugs.toml)",
    )
    bisect_command = commands.add_parser(
        "bisect", help="which commit brought a known bug (or, with --fixed, took it away), by git bisect run",
        description="Clone REPO into a temporary folder and let git bisect run test each commit it picks: install that commit "
        "with uv (--no-deps, cached per commit), run the bug's suites in a fresh pytest; arguments after -- go to pytest. "
        "Bug observed: bad, not observed: good, anything undecided (skip, error, inconclusive, a race not seen, a failed install): "
        "git's skip. Exit 0: the first bad (--fixed: first fixed) commit is named; 1: an end does not behave as claimed; "
        "2: bad input; 3: only skipped commits are left (the candidates are printed).",
    )
    bisect_command.add_argument("package", help="a package the registry names (kornia, sam2)")
    bisect_command.add_argument(
        "--repo", type=nonempty, required=True, help="the package's git repository: a URL, a clone or a bare mirror (never modified)"
    )
    bisect_command.add_argument("--good", required=True, metavar="REF", help="a commit without the bug")
    bisect_command.add_argument("--bad", required=True, metavar="REF", help="a commit with the bug")
    bisect_command.add_argument("--bug", required=True, metavar="ID", help="the registry's bug id")
    bisect_command.add_argument("--fixed", action="store_true", help="find the first commit without the bug: --bad is then the older end")
    bisect_command.add_argument(
        "--out", type=a_path, default=REPOSITORY / "reports" / "out" / "bisect",
        help="bisect.json, bisect.html, steps.jsonl and one report folder per step (default: reports/out/bisect)",
    )
    bisect_command.add_argument(
        "--cache", type=a_path, default=default_cache(), help=f"installed commits, one folder each (default: {default_cache()})",
    )
    bisect_command.add_argument(
        "--bug-registry", type=a_path, default=DEFAULT_REGISTRY, metavar="PATH", help="bug registry TOML (default fixtures/known_bugs/bugs.toml)",
    )
    acceptance_command = commands.add_parser(
        "acceptance", help="every GPU test on every visible GPU (xdist + serial), kept under reports/observed/",
        description="On a GPU machine: the GPU workflow's two steps (one xdist worker per GPU, then the multi-GPU and "
        "isolated tests serially), then the simulated device's conformance on the real GPU; reports and summary.txt "
        "in a dated folder under reports/observed/. Exit 0: every step passed; 1: a step failed; 2: bad input or no GPU.",
    )
    acceptance_command.add_argument("--race-budget", default=DEFAULT_RACE_BUDGET, help=f"as pytest's (default {DEFAULT_RACE_BUDGET})")
    acceptance_command.add_argument(
        "--out", type=a_path, default=None,
        help="where the run's dated folder goes (default reports/observed/; on the simulated runner, SIMCUDA_RUNNER_GPUS, "
        "reports/out/acceptance-rehearsal/, and never reports/observed/)",
    )
    return root


def run_acceptance(race_budget: str, out: Path | None) -> int:
    """Run the steps from the repository root, then print (and keep in summary.txt) each bug's
    verdict, evidence and GPUs per bug step, the worse of those steps, and the conformance step's
    outcomes."""
    from simcuda import runner_gpus  # here: the matrix page's job installs only pytest and packaging

    try:
        parse_race_budget(race_budget)  # before any step runs: each would refuse it, after the GPUs were listed
        simulated = runner_gpus(os.environ) is not None
        root = acceptance_root(out, simulated)
    except ValueError as error:  # RaceBudgetError and RunnerConfigError included
        print(f"error: {error}", file=sys.stderr)
        return BAD_INPUT
    try:
        names = visible_gpu_names(sys.executable)  # never torch.cuda here: acceptance/gpus.py says why
    except GpuQueryError as error:
        print(f"error: the GPUs could not be listed: {error}", file=sys.stderr)
        return BAD_INPUT
    if not names:
        print("error: the acceptance run needs a visible GPU; torch.cuda.device_count() is 0", file=sys.stderr)
        return BAD_INPUT
    folder = observed_folder(datetime.date.today().isoformat(), names, root)
    steps = acceptance_steps(sys.executable, len(names), folder, race_budget)
    statuses = []
    for step in steps:
        print(f"$ {' '.join(step.command)}", flush=True)
        cleared = [name for name in step.removed if name in os.environ]
        if cleared:
            print(f"[{step.name}] cleared for this step: {', '.join(f'{name}={os.environ[name]}' for name in cleared)}", flush=True)
        statuses.append(subprocess.run(step.command, check=False, cwd=REPOSITORY, env=step.environment_from(dict(os.environ))).returncode)
    lines = [f"GPUs: {', '.join(names)}"]
    documents: dict[str, dict | None] = {}  # the bug steps': the combined verdicts come from them
    conformance: list[str] = []
    for step in steps:
        try:
            document, missing = load_results(folder / step.name / "results.json"), []
        except ResultsError as error:
            document, missing = None, missing_results_lines(step.name, str(error))
        if step.judges_bugs:
            documents[step.name] = document
            lines += missing or summary_lines(step.name, document)
        else:
            conformance += missing or conformance_lines(step.name, document)
    lines += combined_lines(documents) + conformance
    folder.mkdir(parents=True, exist_ok=True)  # a step that crashed before writing may not have made it
    (folder / "summary.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    if simulated:
        print(f"kept under {folder}/: a rehearsal on the simulated runner, no GPU evidence (never under reports/observed/)")
    else:
        print(f"kept under {folder}/: commit it (results.json, summary.txt) with what you corrected")
    return 0 if all(status == 0 for status in statuses) else 1


def run_compare(old: Path, new: Path, output: Path, every_test: bool) -> int:
    comparison = compare(load_results(old), load_results(new))
    output.write_text(comparison_html(comparison, str(old), str(new)), encoding="utf-8")
    print(comparison_text(comparison, str(old), str(new), None if every_test else EXAMPLES))
    print(f"page: {output}")
    return exit_status(comparison)


def run_matrix(results: list[Path], output: Path) -> int:
    documents = [(path, load_results(path)) for path in results]
    output.write_text(matrix_html(matrix_columns(documents, output)), encoding="utf-8")
    print(f"matrix of {len(documents)} run(s): {output}")
    return 0


def split_at_dashes(argv: list[str]) -> tuple[list[str], list[str]]:
    """The command's own arguments, and what follows `--` (scan passes it to pytest)."""
    if "--" not in argv:
        return argv, []
    at = argv.index("--")
    return argv[:at], argv[at + 1 :]


def main(argv: list[str] | None = None) -> int:
    own, pytest_args = split_at_dashes(sys.argv[1:] if argv is None else argv)
    arguments = parser().parse_args(own)
    if arguments.command == "scan":
        return scan(
            arguments.package, arguments.releases, arguments.bug, out=arguments.out.resolve(), cache=arguments.cache.resolve(),
            registry_path=arguments.bug_registry.resolve(), pytest_args=pytest_args, every_suite=arguments.every_suite,
        )
    if arguments.command == "census":
        return census(
            arguments.package, arguments.releases, repo=arguments.repo.resolve(), tests_at=arguments.tests_at, out=arguments.out.resolve(),
            cache=arguments.cache.resolve(), registry_path=arguments.bug_registry.resolve(), workers=arguments.workers,
            suites=arguments.suites.resolve(), matches_file=arguments.matches.resolve(),
        )
    if arguments.command == "census-redraw":
        return redraw(
            arguments.out.resolve(), cache=arguments.cache.resolve(), registry_path=arguments.bug_registry.resolve(),
            suites=arguments.suites.resolve(), matches_file=arguments.matches.resolve(),
        )
    if arguments.command == "bisect":
        return bisect(
            arguments.package, arguments.repo, arguments.good, arguments.bad, arguments.bug, fixed=arguments.fixed,
            out=arguments.out.resolve(), cache=arguments.cache.resolve(), registry_path=arguments.bug_registry.resolve(), pytest_args=pytest_args,
        )
    try:
        if arguments.command == "compare":
            return run_compare(arguments.old, arguments.new, arguments.output, arguments.every_test)
        if arguments.command == "acceptance":
            return run_acceptance(arguments.race_budget, arguments.out)
        return run_matrix(arguments.results, arguments.output)
    except ResultsError as error:
        print(f"error: {error}", file=sys.stderr)
    except OSError as error:  # reads are ResultsErrors already: this is the page
        print(f"error: {error.filename}: cannot write: {error.strerror}", file=sys.stderr)
    return BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
