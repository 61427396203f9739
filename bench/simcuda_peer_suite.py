"""A peer's own test suite on the simulated device: its tests run plainly on the CPU and with
`pytest --simcuda` (the simulated cuda:1), group by group, compared test by test.

    python bench/simcuda_peer_suite.py PEER --repo PATH [--commit REF] [--groups ...] [--pythonpath DIR] [--repeat N]
    python bench/simcuda_peer_suite.py PEER --tests DIR ...    # the files already exported

PEER is a table of bench/peer_suites.toml (kornia, timm, torchvision, pyg, monai): the files its tests need,
the commit to take them from, its groups (one pytest session per side each), extra pytest
arguments and environment. PATH is the peer's git repository (a clone, or the bare mirror `fetch`
brings); the files are exported from it to a temporary folder and run against the installed
release (`--pythonpath DIR` puts a `pip install --target DIR` of the peer, or of its test-only
dependencies, first on the path). Per group it prints: the tests passing on the CPU, of them passed
on both, failing only simulated (each with its first line: a false alarm of the simulation unless
the cause says otherwise), refused by feature; the cases that run only simulated (CUDA cases the
CPU run skips): passed, failing (first lines), refused; each side's wall time and the ratios of
wall time and of CPU time (user + system: what other load on the machine changes least) over the
whole session. With `--repeat N` each side runs N times per group, alternating, and the fastest of
each counts; the last column is the ratio of the tests' own times over the tests passed on both
sides (junit's), for a session that also runs cases of one side only. Not a test: it takes
minutes (bench/README.md has the figures).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections import Counter
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the harness runs from its checkout

from reports.census.junit import Outcomes, compare, read_junit

PEERS = Path(__file__).with_name("peer_suites.toml")
PLUGINS = Path(__file__).with_name("peer_plugins")  # pytest plugins a peer's runs may name with -p


def export_tests(repo: Path, commit: str, paths: list[str], into: Path) -> None:
    archive = subprocess.run(["git", "-C", str(repo), "archive", commit, *paths], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)


class Timing(NamedTuple):
    wall: float  # seconds, as the target is set
    cpu: float  # the run's user + system seconds: what a busy machine changes least


class Peer(NamedTuple):
    commit: str
    export: list[str]
    groups: dict[str, list[str]]
    pytest_args: list[str]
    plain_env: dict[str, str]
    simulated_env: dict[str, str]


def load_peer(name: str, table: Path = PEERS) -> Peer:
    peers = tomllib.loads(table.read_text())
    if name not in peers:
        raise SystemExit(f"{name}: not a peer of {table.name} (one of: {', '.join(peers)})")
    peer = peers[name]
    return Peer(peer["commit"], peer["export"], peer["groups"], peer.get("pytest_args", []),
                peer.get("plain_env", {}), peer.get("simulated_env", {}))


def session_env(pythonpath: list[Path], extra: dict[str, str]) -> dict[str, str]:
    """This process's environment with the peer's extra variables, PYTHONPATH led by `pythonpath`
    and the bench's peer plugins."""
    path = [str(entry) for entry in pythonpath] + [str(PLUGINS)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])
    return {**os.environ, **extra, "PYTHONPATH": os.pathsep.join(path)}


def run(checkout: Path, peer: Peer, group: str, out: Path, simulated: bool, pythonpath: list[Path]) -> tuple[Outcomes, Timing, dict]:
    """(test id -> (outcome, first line)), the run's times, simcuda's JSON (simulated)."""
    side = "sim" if simulated else "cpu"
    junit, report = out / f"{group}-{side}.xml", out / f"{group}-simcuda.json"
    command = [sys.executable, "-m", "pytest", *peer.groups[group], *peer.pytest_args, "-q", "-p", "no:cacheprovider",
               "--color=no", f"--junitxml={junit}", "-o", "addopts=", "-o", "faulthandler_timeout=300"]
    if simulated:
        command += ["--simcuda", f"--simcuda-report={report}"]
    env = session_env(pythonpath, peer.simulated_env if simulated else peer.plain_env)
    start, used = time.monotonic(), _children_cpu()
    with (out / f"{group}-{side}.log").open("w") as log:
        done = subprocess.run(command, cwd=checkout, env=env, stdout=log, stderr=subprocess.STDOUT, check=False)
    timing = Timing(time.monotonic() - start, _children_cpu() - used)
    if not junit.exists():
        raise SystemExit(f"{group} ({'simulated' if simulated else 'cpu'}): pytest exit {done.returncode} wrote no junit; see {log.name}")
    return read_junit(junit), timing, json.loads(report.read_text()) if simulated and report.exists() else {}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def fastest(timings: list[Timing]) -> Timing:
    """Each time's least over repeats: what the code costs, the machine's other load removed as far as it can be."""
    return Timing(min(t.wall for t in timings), min(t.cpu for t in timings))


COLUMNS = ("cpu pass", "both", "sim only", "refused", "own skip", "cuda pass", "cuda fail", "cuda ref", "cpu s", "sim s", "ratio",
           "cpu-time ratio", "both-tests ratio")


def row(name: str, counts: list[int], cpu: Timing, sim: Timing, both_seconds: tuple[float, float]) -> str:
    return (f"{name:<20} " + " ".join(f"{count:>{len(column)}}" for count, column in zip(counts, COLUMNS)) +
            f" {cpu.wall:>5.1f} {sim.wall:>5.1f} {sim.wall / max(cpu.wall, 1e-9):>5.2f} {sim.cpu / max(cpu.cpu, 1e-9):>14.2f}"
            f" {both_seconds[1] / max(both_seconds[0], 1e-9):>16.2f}")


def counts_of(result: dict) -> list[int]:
    return [result["passing_on_cpu"], result["passed_on_both"], len(result["failing_only_simulated"]), result["refused"],
            len(result["skipped_by_the_test_on_cuda"]), result["only_simulated_passed"], len(result["only_simulated_failing"]),
            result["only_simulated_refused"]]


def report(group: str, result: dict, cpu: Timing, sim: Timing) -> None:
    print(row(group, counts_of(result), cpu, sim, result["both_seconds"]))
    for test, message in result["failing_only_simulated"].items():
        print(f"    failing only simulated: {test}: {message}")
    for test, message in result["only_simulated_failing"].items():
        print(f"    cuda case failing: {test}: {message}")
    for feature, count in result["refused_by_feature"].items():
        print(f"    refused {count} x {feature}")
    for reason, count in Counter(result["skipped_by_the_test_on_cuda"].values()).items():
        print(f"    skipped by the test on CUDA {count} x: {reason}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("peer", help=f"a table of {PEERS.name}")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--repo", type=Path, help="the peer's git repository")
    source.add_argument("--tests", type=Path, help="the peer's files already exported (a machine that reaches no repository)")
    parser.add_argument("--commit", default=None, help="where its tests are taken from (default: the table's)")
    parser.add_argument("--groups", nargs="+", default=None, help="the table's groups to run (default: all)")
    parser.add_argument("--pythonpath", type=Path, action="append", default=[], help="first on the runs' path (repeatable)")
    parser.add_argument("--out", type=Path, default=None, help="where the junit and JSON files go (default: a temporary folder)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each side per group, alternating; the fastest counts (default 1)")
    arguments = parser.parse_args(argv)
    if arguments.tests is not None and not arguments.tests.is_dir():
        parser.error(f"--tests: {arguments.tests}: no such folder")
    if arguments.tests is not None and arguments.commit is not None:
        parser.error("--commit: the files of --tests are exported already; give --repo to export them from a commit")
    if arguments.repeat < 1:
        parser.error(f"--repeat: {arguments.repeat} runs; give 1 or more")
    peer = load_peer(arguments.peer)
    groups = arguments.groups or list(peer.groups)
    if unknown := [group for group in groups if group not in peer.groups]:
        parser.error(f"--groups: {', '.join(unknown)}: not a group of {arguments.peer} (one of: {', '.join(peer.groups)})")
    with tempfile.TemporaryDirectory() as scratch:
        checkout = Path(scratch) / arguments.peer
        if arguments.tests is not None:
            shutil.copytree(arguments.tests, checkout)  # the runs write beside the tests; the folder stays as given
        else:
            checkout.mkdir()
            export_tests(arguments.repo, arguments.commit or peer.commit, peer.export, checkout)
        out = arguments.out or Path(scratch) / "out"
        out.mkdir(parents=True, exist_ok=True)
        totals, cpu_total, sim_total, both_total = [0] * 8, Timing(0.0, 0.0), Timing(0.0, 0.0), (0.0, 0.0)
        print(f"{'group':<20} " + " ".join(COLUMNS))
        for group in groups:
            cpu_times, sim_times, results = [], [], []
            for _ in range(arguments.repeat):  # alternating, so a slow spell of the machine hits both sides
                cpu, cpu_time, _ = run(checkout, peer, group, out, False, arguments.pythonpath)
                sim, sim_time, simcuda = run(checkout, peer, group, out, True, arguments.pythonpath)
                cpu_times.append(cpu_time)
                sim_times.append(sim_time)
                results.append(compare(cpu, sim, simcuda))
            result, cpu_time, sim_time = results[0], fastest(cpu_times), fastest(sim_times)
            if any(other != result for other in results[1:]):
                print(f"    {group}: the repeats compare differently (a flaky test); the first is shown")
            report(group, result, cpu_time, sim_time)
            totals = [total + count for total, count in zip(totals, counts_of(result))]
            cpu_total = Timing(cpu_total.wall + cpu_time.wall, cpu_total.cpu + cpu_time.cpu)
            sim_total = Timing(sim_total.wall + sim_time.wall, sim_total.cpu + sim_time.cpu)
            both_total = (both_total[0] + result["both_seconds"][0], both_total[1] + result["both_seconds"][1])
        print(row("all", totals, cpu_total, sim_total, both_total))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
