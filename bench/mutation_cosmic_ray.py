"""Cosmic Ray sessions over the oracle modules, one per file (bench/README.md, "Mutation score
(Cosmic Ray)"): writes each session's config from bench/cosmic-ray/sessions.toml, starts Cosmic
Ray's HTTP workers (cr-http-workers: one git clone of HEAD each, so the checkout is never
mutated), and runs `cosmic-ray baseline`, `init`, `cr-filter-operators` and `exec`.

    python bench/mutation_cosmic_ray.py [--out DIR] [FILE ...]

A session already in DIR resumes where it stopped. Then `python bench/mutation_scores.py DIR/*.sqlite`.
Commit first: the workers test HEAD.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
SESSIONS = ROOT / "bench" / "cosmic-ray" / "sessions.toml"
THRESHOLD_NAME = re.compile(r"ATOL|RTOL|TOLERANCE|THRESHOLD|_DIFF\b")


def session_name(module: str) -> str:
    return module.removesuffix(".py").replace("/", ".")


def session_config(module: str, tests: list[str], settings: dict) -> dict:
    """Cosmic Ray's configuration of one file's session (its `[cosmic-ray]` table)."""
    return {
        "module-path": module,
        "timeout": settings["timeout"],
        "test-command": shlex.join(["python", "-m", "pytest", *settings["pytest-options"], *tests]),
        "distributor": {"name": "http", "http": {"worker-urls": settings["worker-urls"]}},
        "filters": {"operators-filter": {"exclude-operators": settings["exclude-operators"]}},
    }


def wait_for_workers(urls: list[str], seconds: float = 300) -> None:
    """Until every worker's port accepts a connection (each clones the repository first)."""
    deadline = time.monotonic() + seconds
    for url in map(urlsplit, urls):
        while True:
            try:
                socket.create_connection((url.hostname, url.port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit(f"no Cosmic Ray worker answers at {url.geturl()} after {seconds:.0f} s") from None
                time.sleep(1)


@contextlib.contextmanager
def http_workers(config: Path, urls: list[str]) -> Iterator[None]:
    # One torch thread per worker: the workers share the machine's cores.
    workers = subprocess.Popen(["cr-http-workers", str(config), str(ROOT)], env={**os.environ, "OMP_NUM_THREADS": "1"},
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_for_workers(urls)
        yield
    finally:
        os.killpg(workers.pid, signal.SIGTERM)
        workers.wait()


def is_threshold_line(line: str) -> bool:
    """Whether a source line assigns an oracle threshold (the names suites/oracle_thresholds.toml's
    scan reads: ATOL, RTOL, *TOLERANCE, *THRESHOLD, *_DIFF)."""
    target = line.split("=", 1)[0] if "=" in line else ""
    return bool(THRESHOLD_NAME.search(target))


def skip_all_but_thresholds(module: str, session: Path) -> None:
    """Mark skipped every pending mutant of `module` off its threshold lines: in a suite's test
    module the other numbers are the test's inputs (shapes, probabilities), not its oracle."""
    from cosmic_ray.work_db import WorkDB, use_db  # deferred: Cosmic Ray is an optional install
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    lines = (ROOT / module).read_text(encoding="utf-8").splitlines()
    with use_db(session, WorkDB.Mode.open) as work_db:
        for item in work_db.pending_work_items:
            if not all(is_threshold_line(lines[mutation.start_pos[0] - 1]) for mutation in item.mutations):
                work_db.set_result(item.job_id, WorkResult(output="not a threshold line", worker_outcome=WorkerOutcome.SKIPPED))


def run_session(module: str, config: Path, session: Path, thresholds_only: bool) -> None:
    if not session.exists():
        # Unmutated, the tests must pass in the workers' clones: else every mutant reads as killed.
        if subprocess.run(["cosmic-ray", "baseline", str(config)], cwd=ROOT, check=False).returncode != 0:
            raise SystemExit(f"{module}: its tests fail on unmutated HEAD in the workers' clones; no session started")
        subprocess.run(["cosmic-ray", "init", str(config), str(session)], cwd=ROOT, check=True)
        subprocess.run(["cr-filter-operators", str(session), str(config)], cwd=ROOT, check=True)
        if thresholds_only:
            skip_all_but_thresholds(module, session)
    start = time.monotonic()
    subprocess.run(["cosmic-ray", "exec", str(config), str(session)], cwd=ROOT, check=True)
    print(f"{module}: {time.monotonic() - start:.0f} s", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", metavar="FILE", help="files of sessions.toml to run (default: all)")
    parser.add_argument("--out", type=Path, default=Path("cosmic-ray-sessions"), help="where sessions and configs go (default: %(default)s)")
    args = parser.parse_args(argv)
    table = tomllib.loads(SESSIONS.read_text(encoding="utf-8"))
    unknown = [m for m in args.modules if m not in table["tests"]]
    if unknown:
        parser.error(f"not in {SESSIONS.relative_to(ROOT)}: {', '.join(unknown)}")
    try:
        from cosmic_ray.config import serialize_config
    except ImportError:
        parser.error("Cosmic Ray is not installed: pip install -e '.[mutation]' -e bench/mutation_operators")
    args.out.mkdir(parents=True, exist_ok=True)
    configs = {}
    for module in args.modules or list(table["tests"]):
        configs[module] = args.out / f"{session_name(module)}.toml"
        configs[module].write_text(serialize_config(session_config(module, table["tests"][module], table["cosmic-ray"])), encoding="utf-8")
    with http_workers(next(iter(configs.values())), table["cosmic-ray"]["worker-urls"]):
        for module, config in configs.items():
            thresholds_only = module in table["thresholds-only"]["modules"]
            run_session(module, config.resolve(), (args.out / f"{session_name(module)}.sqlite").resolve(), thresholds_only)
    return 0


if __name__ == "__main__":
    sys.exit(main())
