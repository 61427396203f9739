"""A peer's own test suite on the simulated device: kornia's tests run plainly on the CPU and with
`pytest --simcuda` (the simulated cuda:1), folder by folder, compared test by test.

    python bench/simcuda_peer_suite.py --kornia-repo PATH [--commit b4f5a78a1] [--folders ...] [--repeat N]

PATH is a kornia git repository (a clone, or the bare mirror `fetch` brings); its tests, `testing/`
and conftest at the commit are exported to a temporary folder and run against the installed
kornia, with `--dtype float32`. Per folder it prints: tests passing on the CPU, of them passed
on both, failing only simulated (each with its first line: a false alarm of the simulation unless
the cause says otherwise), refused by feature, and each side's wall time and the ratios of wall
time and of CPU time (user + system: what other load on the machine changes least). With
`--repeat N` each side runs N times per folder, alternating, and the fastest of each counts. Not
a test: it takes minutes (bench/README.md has the figures).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from collections import Counter
from pathlib import Path
from typing import NamedTuple

FOLDERS = ("augmentation", "color", "enhance", "filters", "geometry")


def export_tests(repo: Path, commit: str, into: Path) -> None:
    archive = subprocess.run(["git", "-C", str(repo), "archive", commit, "tests", "testing", "conftest.py", "pyproject.toml"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)


class Timing(NamedTuple):
    wall: float  # seconds, as the target is set
    cpu: float  # the run's user + system seconds: what a busy machine changes least


def run(checkout: Path, folder: str, out: Path, simulated: bool) -> tuple[dict[str, tuple[str, str]], Timing, dict]:
    """(test id -> (outcome, first line of the failure)), the run's times, simcuda's JSON (simulated)."""
    junit = out / f"{folder}-{'sim' if simulated else 'cpu'}.xml"
    report = out / f"{folder}-simcuda.json"
    command = [sys.executable, "-m", "pytest", f"tests/{folder}", "--dtype", "float32", "-q", "-p", "no:cacheprovider",
               "--color=no", f"--junitxml={junit}", "-o", "addopts=", "-o", "faulthandler_timeout=300"]
    if simulated:
        command += ["--simcuda", f"--simcuda-report={report}"]
    start, used = time.monotonic(), _children_cpu()
    with (out / f"{folder}-{'sim' if simulated else 'cpu'}.log").open("w") as log:
        done = subprocess.run(command, cwd=checkout, stdout=log, stderr=subprocess.STDOUT, check=False)
    timing = Timing(time.monotonic() - start, _children_cpu() - used)
    if not junit.exists():
        raise SystemExit(f"{folder} ({'simulated' if simulated else 'cpu'}): pytest exit {done.returncode} wrote no junit; see {log.name}")
    outcomes = {}
    for case in ElementTree.parse(junit).iter("testcase"):
        test = f"{case.get('classname')}::{case.get('name')}"
        problem = next((child for child in case if child.tag in ("failure", "error", "skipped")), None)
        outcome = "passed" if problem is None else problem.tag
        message = (problem.get("message") or "").strip().splitlines()[0][:200] if problem is not None and problem.get("message") else ""
        outcomes[test] = (outcome, message)
    return outcomes, timing, json.loads(report.read_text()) if simulated and report.exists() else {}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def fastest(timings: list[Timing]) -> Timing:
    """Each time's least over repeats: what the code costs, the machine's other load removed as far as it can be."""
    return Timing(min(t.wall for t in timings), min(t.cpu for t in timings))


def junit_id(nodeid: str) -> str:
    """pytest's node id in junit's classname::name form."""
    path, _, rest = nodeid.partition("::")
    *classes, name = rest.split("::")
    return f"{'.'.join([path.removesuffix('.py').replace('/', '.'), *classes])}::{name}"


def compare(cpu: dict, sim: dict, simcuda: dict) -> dict:
    """Over the tests passing on the CPU: passed on both, failing only simulated (with the first
    line), refused by the simulation (simcuda's own word), skipped by the test itself on a CUDA
    device (kornia skips some CUDA cases: neither a refusal nor a pass)."""
    passing = [test for test, (outcome, _) in cpu.items() if outcome == "passed"]
    refused = {junit_id(test) for test, outcome in simcuda.get("results", {}).items() if outcome == "refused"}
    skipped = [test for test in passing if test in sim and sim[test][0] == "skipped"]
    return {
        "passing_on_cpu": len(passing),
        "passed_on_both": sum(1 for test in passing if sim.get(test, ("",))[0] == "passed"),
        "failing_only_simulated": {test: sim[test][1] for test in passing if test in sim and sim[test][0] in ("failure", "error")},
        "refused": sum(1 for test in skipped if test in refused),
        "skipped_by_the_test_on_cuda": {test: sim[test][1] for test in skipped if test not in refused},
        "refused_by_feature": simcuda.get("refused_by_feature", {}),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kornia-repo", type=Path, required=True)
    parser.add_argument("--commit", default="b4f5a78a1")
    parser.add_argument("--folders", nargs="+", default=list(FOLDERS))
    parser.add_argument("--out", type=Path, default=None, help="where the junit and JSON files go (default: a temporary folder)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each side per folder, alternating; the fastest counts (default 1)")
    arguments = parser.parse_args(argv)
    if arguments.repeat < 1:
        parser.error(f"--repeat: {arguments.repeat} runs; give 1 or more")
    with tempfile.TemporaryDirectory() as scratch:
        checkout = Path(scratch) / "kornia"
        checkout.mkdir()
        export_tests(arguments.kornia_repo, arguments.commit, checkout)
        out = arguments.out or Path(scratch) / "out"
        out.mkdir(parents=True, exist_ok=True)
        totals: Counter = Counter()
        print(f"{'folder':<13} {'cpu pass':>8} {'both':>6} {'sim only':>8} {'refused':>7} {'own skip':>8} {'cpu s':>7} {'sim s':>7} {'ratio':>5} {'cpu-time ratio':>14}")
        for folder in arguments.folders:
            cpu_times, sim_times, results = [], [], []
            for _ in range(arguments.repeat):  # alternating, so a slow spell of the machine hits both sides
                cpu, cpu_time, _ = run(checkout, folder, out, simulated=False)
                sim, sim_time, simcuda = run(checkout, folder, out, simulated=True)
                cpu_times.append(cpu_time)
                sim_times.append(sim_time)
                results.append(compare(cpu, sim, simcuda))
            result, cpu_time, sim_time = results[0], fastest(cpu_times), fastest(sim_times)
            if any(other != result for other in results[1:]):
                print(f"    {folder}: the repeats compare differently (a flaky test); the first is shown")
            own = result["skipped_by_the_test_on_cuda"]
            totals.update({"cpu": result["passing_on_cpu"], "both": result["passed_on_both"], "only": len(result["failing_only_simulated"]),
                           "refused": result["refused"], "own": len(own), "cpu_s": cpu_time.wall, "sim_s": sim_time.wall,
                           "cpu_cpu": cpu_time.cpu, "sim_cpu": sim_time.cpu})
            print(f"{folder:<13} {result['passing_on_cpu']:>8} {result['passed_on_both']:>6} {len(result['failing_only_simulated']):>8} "
                  f"{result['refused']:>7} {len(own):>8} {cpu_time.wall:>7.1f} {sim_time.wall:>7.1f} {sim_time.wall / cpu_time.wall:>5.2f} "
                  f"{sim_time.cpu / cpu_time.cpu:>14.2f}")
            for test, message in result["failing_only_simulated"].items():
                print(f"    failing only simulated: {test}: {message}")
            for feature, count in result["refused_by_feature"].items():
                print(f"    refused {count} x {feature}")
            for reason, count in Counter(own.values()).items():
                print(f"    skipped by the test on CUDA {count} x: {reason}")
        print(f"{'all':<13} {totals['cpu']:>8} {totals['both']:>6} {totals['only']:>8} {totals['refused']:>7} {totals['own']:>8} "
              f"{totals['cpu_s']:>7.1f} {totals['sim_s']:>7.1f} {totals['sim_s'] / max(totals['cpu_s'], 1e-9):>5.2f} "
              f"{totals['sim_cpu'] / max(totals['cpu_cpu'], 1e-9):>14.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
