"""A peer's own test suite on the simulated device: kornia's tests run plainly on the CPU and with
`pytest --simcuda` (the simulated cuda:1), folder by folder, compared test by test.

    python bench/simcuda_peer_suite.py --kornia-repo PATH [--commit b4f5a78a1] [--folders ...]

PATH is a kornia git repository (a clone, or the bare mirror `fetch` brings); its tests, `testing/`
and conftest at the commit are exported to a temporary folder and run against the installed
kornia, with `--dtype float32`. Per folder it prints: tests passing on the CPU, of them passed
on both, failing only simulated (each with its first line: a false alarm of the simulation unless
the cause says otherwise), refused by feature, and the wall time of each run. Not a test: it
takes minutes (bench/README.md has the figures).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from collections import Counter
from pathlib import Path

FOLDERS = ("augmentation", "color", "enhance", "filters", "geometry")


def export_tests(repo: Path, commit: str, into: Path) -> None:
    archive = subprocess.run(["git", "-C", str(repo), "archive", commit, "tests", "testing", "conftest.py", "pyproject.toml"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)


def run(checkout: Path, folder: str, out: Path, simulated: bool) -> tuple[dict[str, tuple[str, str]], float, dict]:
    """(test id -> (outcome, first line of the failure)), wall seconds, simcuda's JSON (simulated)."""
    junit = out / f"{folder}-{'sim' if simulated else 'cpu'}.xml"
    report = out / f"{folder}-simcuda.json"
    command = [sys.executable, "-m", "pytest", f"tests/{folder}", "--dtype", "float32", "-q", "-p", "no:cacheprovider",
               "--color=no", f"--junitxml={junit}", "-o", "addopts=", "-o", "faulthandler_timeout=300"]
    if simulated:
        command += ["--simcuda", f"--simcuda-report={report}"]
    start = time.monotonic()
    with (out / f"{folder}-{'sim' if simulated else 'cpu'}.log").open("w") as log:
        done = subprocess.run(command, cwd=checkout, stdout=log, stderr=subprocess.STDOUT, check=False)
    wall = time.monotonic() - start
    if not junit.exists():
        raise SystemExit(f"{folder} ({'simulated' if simulated else 'cpu'}): pytest exit {done.returncode} wrote no junit; see {log.name}")
    outcomes = {}
    for case in ElementTree.parse(junit).iter("testcase"):
        test = f"{case.get('classname')}::{case.get('name')}"
        problem = next((child for child in case if child.tag in ("failure", "error", "skipped")), None)
        outcome = "passed" if problem is None else problem.tag
        message = (problem.get("message") or "").strip().splitlines()[0][:200] if problem is not None and problem.get("message") else ""
        outcomes[test] = (outcome, message)
    return outcomes, wall, json.loads(report.read_text()) if simulated and report.exists() else {}


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
    arguments = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        checkout = Path(scratch) / "kornia"
        checkout.mkdir()
        export_tests(arguments.kornia_repo, arguments.commit, checkout)
        out = arguments.out or Path(scratch) / "out"
        out.mkdir(parents=True, exist_ok=True)
        totals: Counter = Counter()
        print(f"{'folder':<13} {'cpu pass':>8} {'both':>6} {'sim only':>8} {'refused':>7} {'own skip':>8} {'cpu s':>7} {'sim s':>7} {'ratio':>5}")
        for folder in arguments.folders:
            cpu, cpu_wall, _ = run(checkout, folder, out, simulated=False)
            sim, sim_wall, simcuda = run(checkout, folder, out, simulated=True)
            result = compare(cpu, sim, simcuda)
            own = result["skipped_by_the_test_on_cuda"]
            totals.update({"cpu": result["passing_on_cpu"], "both": result["passed_on_both"], "only": len(result["failing_only_simulated"]),
                           "refused": result["refused"], "own": len(own), "cpu_s": cpu_wall, "sim_s": sim_wall})
            print(f"{folder:<13} {result['passing_on_cpu']:>8} {result['passed_on_both']:>6} {len(result['failing_only_simulated']):>8} "
                  f"{result['refused']:>7} {len(own):>8} {cpu_wall:>7.1f} {sim_wall:>7.1f} {sim_wall / cpu_wall:>5.2f}")
            for test, message in result["failing_only_simulated"].items():
                print(f"    failing only simulated: {test}: {message}")
            for feature, count in result["refused_by_feature"].items():
                print(f"    refused {count} x {feature}")
            for reason, count in Counter(own.values()).items():
                print(f"    skipped by the test on CUDA {count} x: {reason}")
        print(f"{'all':<13} {totals['cpu']:>8} {totals['both']:>6} {totals['only']:>8} {totals['refused']:>7} {totals['own']:>8} "
              f"{totals['cpu_s']:>7.1f} {totals['sim_s']:>7.1f} {totals['sim_s'] / max(totals['cpu_s'], 1e-9):>5.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
