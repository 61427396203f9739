"""simcuda on a machine with a real GPU, in one command: its self-tests, the harness's main job
(which mixes real cuda:N tests and simulated ones in one session) and, optionally, peers' test
folders under `pytest --simcuda`, each checked for what only a real GPU can show.

    python bench/simcuda_on_a_gpu.py                                # self-tests and the main job
    python bench/simcuda_on_a_gpu.py --peer kornia=DIR --peer torchvision=DIR

A peer's DIR is its tests exported beside the checkout (the GPU machine reaches no repository):
`git -C MIRROR archive COMMIT FILES... | tar -x -C DIR`, with the commit and files of
bench/peer_suites.toml. Each step's files go to reports/observed/<date>-<gpu-model>/simcuda/ (--out
elsewhere); summary.json lists what each step found. It exits 1 when a self-test fails or a
simulated case of the main job met a real CUDA tensor ("a real CUDA tensor meeting simulated
ones") or reached the real CUDA (simcuda's REAL_CUDA_REACHED: no simulated case of the main job
does on a CPU machine), else 0; 2 on a machine without a real GPU (the simulated runner
included), in one line.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the harness runs from its checkout

from reports import REPOSITORY
from reports.acceptance.gpus import gpu_check_folder
from reports.census.junit import FAILING, Outcomes, read_junit
from simcuda import REAL_CUDA_REACHED

MET_A_REAL_TENSOR = "a real CUDA tensor meeting simulated ones"
SELF_TEST_WORKERS = 8  # as the H200's run that found the order-dependent self-tests (-n 8)


def self_tests_command(python: str, junit: Path) -> list[str]:
    return [python, "-m", "pytest", "tests/simcuda", "-n", str(SELF_TEST_WORKERS), "-p", "no:cacheprovider", "-q", f"--junitxml={junit}"]


def main_job_command(python: str, report_dir: Path) -> list[str]:
    """The README's `pytest`, its report kept apart."""
    return [python, "-m", "pytest", "-p", "no:cacheprovider", f"--report-dir={report_dir}"]


def peer_command(python: str, peer: str, tests: Path, out: Path) -> list[str]:
    return [python, str(Path(__file__).with_name("simcuda_peer_suite.py")), peer, "--tests", str(tests), "--out", str(out)]


def self_test_findings(outcomes: Outcomes) -> list[str]:
    """Each failing self-test, with its first line."""
    return [f"self-test failed: {test}: {outcome.message}" for test, outcome in outcomes.items() if outcome.outcome in FAILING]


def main_job_findings(results: dict) -> list[str]:
    """Each simulated case of the main job that met a real CUDA tensor (the session did not keep
    its real and simulated devices apart) or reached the real CUDA (a GPU machine deciding it
    otherwise than a CPU one), with what the plugin saw."""
    findings = []
    for test in results.get("tests", []):
        message = test.get("message") or ""
        if MET_A_REAL_TENSOR in message:
            findings.append(f"met a real CUDA tensor: {test['nodeid']}")
        elif REAL_CUDA_REACHED in message:
            findings.append(f"reached the real CUDA: {test['nodeid']}: {message}")
    return findings


def parse_peer(text: str) -> tuple[str, Path]:
    name, _, folder = text.partition("=")
    if not name or not folder:
        raise argparse.ArgumentTypeError(f"{text!r}: give NAME=DIR (a table of peer_suites.toml and its exported tests)")
    if not Path(folder).is_dir():
        raise argparse.ArgumentTypeError(f"{folder}: no such folder (the peer's exported tests)")
    return name, Path(folder)


def arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--peer", type=parse_peer, action="append", default=[], help="NAME=DIR: a peer's exported tests (repeatable)")
    parser.add_argument("--out", type=Path, help="where the steps' files go (default reports/observed/<date>-<gpu-model>/simcuda)")
    return parser.parse_args(argv)


def run_step(name: str, command: list[str]) -> int:
    print(f"[{name}] $ {' '.join(command)}", flush=True)
    return subprocess.run(command, cwd=REPOSITORY, check=False).returncode


def main(argv: list[str] | None = None) -> int:
    options = arguments(argv)
    if (found := gpu_check_folder("simcuda_on_a_gpu", "on a CPU machine `pytest tests/simcuda` checks simcuda", options.out, "simcuda")) is None:
        return 2
    gpus, out = found
    out.mkdir(parents=True, exist_ok=True)
    summary: dict = {"gpus": gpus, "steps": {}}
    status = run_step("self-tests", self_tests_command(sys.executable, out / "self-tests.xml"))
    findings = self_test_findings(read_junit(out / "self-tests.xml")) if (out / "self-tests.xml").exists() else [f"no junit (exit status {status})"]
    summary["steps"]["self-tests"] = {"exit_status": status, "findings": findings}
    status = run_step("main job", main_job_command(sys.executable, out / "main"))
    results = out / "main" / "results.json"
    findings = main_job_findings(json.loads(results.read_text(encoding="utf-8"))) if results.exists() else [f"no results.json (exit status {status})"]
    summary["steps"]["main job"] = {"exit_status": status, "findings": findings}
    for name, tests in options.peer:  # the peer's own failures are its table's to read: listed, not judged
        status = run_step(f"peer {name}", peer_command(sys.executable, name, tests, out / f"peer-{name}"))
        summary["steps"][f"peer {name}"] = {"exit_status": status, "findings": []}
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    judged = [line for step in ("self-tests", "main job") for line in summary["steps"][step]["findings"]]
    print("\n".join(judged) or "simcuda on this GPU: every self-test passed; no simulated case met a real CUDA tensor or reached the real CUDA")
    print(f"summary: {out / 'summary.json'}")
    return 1 if judged else 0


if __name__ == "__main__":
    sys.exit(main())
