"""Cosmic Ray sessions over the oracle modules, one per file (bench/README.md, "Mutation score
(Cosmic Ray)"): writes each session's config from bench/cosmic-ray/sessions.toml, starts Cosmic
Ray's HTTP workers (cr-http-workers: one git clone of HEAD each, so the checkout is never
mutated), and runs `cosmic-ray init`, `cr-filter-operators` and `cosmic-ray exec`.

    python bench/mutation_cosmic_ray.py [--out DIR] [FILE ...]

A session already in DIR resumes where it stopped. Then `python bench/mutation_scores.py DIR/*.sqlite`.
Commit first: the workers test HEAD.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SESSIONS = ROOT / "bench" / "cosmic-ray" / "sessions.toml"


def session_name(module: str) -> str:
    return module.removesuffix(".py").replace("/", ".")


def session_config(module: str, tests: list[str], settings: dict) -> str:
    """Cosmic Ray's TOML for one file's session."""
    command = shlex.join(["python", "-m", "pytest", *settings["pytest-options"], *tests])
    urls = ", ".join(f'"{url}"' for url in settings["worker-urls"])
    excluded = ", ".join(f'"{pattern}"' for pattern in settings["exclude-operators"])
    return (
        f'[cosmic-ray]\nmodule-path = "{module}"\ntimeout = {settings["timeout"]}\ntest-command = "{command}"\n\n'
        f'[cosmic-ray.distributor]\nname = "http"\n\n[cosmic-ray.distributor.http]\nworker-urls = [{urls}]\n\n'
        f"[cosmic-ray.filters.operators-filter]\nexclude-operators = [{excluded}]\n"
    )


@contextlib.contextmanager
def http_workers(config: Path) -> Iterator[None]:
    # One torch thread per worker: the workers share the machine's cores.
    workers = subprocess.Popen(["cr-http-workers", str(config), str(ROOT)], env={**os.environ, "OMP_NUM_THREADS": "1"},
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        time.sleep(15)  # clones made, servers listening
        yield
    finally:
        os.killpg(workers.pid, 15)
        workers.wait()


def run_session(module: str, config: Path, session: Path) -> None:
    if not session.exists():
        subprocess.run(["cosmic-ray", "init", str(config), str(session)], cwd=ROOT, check=True)
        subprocess.run(["cr-filter-operators", str(session), str(config)], cwd=ROOT, check=True)
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
    args.out.mkdir(parents=True, exist_ok=True)
    configs = {}
    for module in args.modules or list(table["tests"]):
        configs[module] = args.out / f"{session_name(module)}.toml"
        configs[module].write_text(session_config(module, table["tests"][module], table["cosmic-ray"]), encoding="utf-8")
    with http_workers(next(iter(configs.values()))):
        for module, config in configs.items():
            run_session(module, config.resolve(), (args.out / f"{session_name(module)}.sqlite").resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
