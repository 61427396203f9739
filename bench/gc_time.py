"""The garbage collector's time in one pytest run, by phase: start-up (conftests, plugins, torch),
collection, the tests, the end (reports, pytest's closing collections). Each collection is timed
by a `gc.callbacks` hook; pytest runs in this process, as `pytest` would from the repository root.

    python bench/gc_time.py [PYTEST_ARGS ...]    # default: -p no:cacheprovider -q --no-reports

Prints, per phase, each generation's collections and seconds, then the total; exits with pytest's
status. Run it in a clone at another commit (`cd CLONE && python PATH/bench/gc_time.py`) to compare.
"""

from __future__ import annotations

import gc
import sys
import time
from collections import Counter

import pytest

DEFAULT_ARGS = ["-p", "no:cacheprovider", "-q", "--no-reports"]
PHASES = ("start-up", "collection", "tests", "end")


class CollectorClock:
    """The collections of each (phase, generation): how many, and their seconds."""

    def __init__(self) -> None:
        self.phase = PHASES[0]
        self.count: Counter[tuple[str, int]] = Counter()
        self.seconds: Counter[tuple[str, int]] = Counter()
        self._started = 0.0

    def on_collection(self, stage: str, info: dict) -> None:
        if stage == "start":
            self._started = time.perf_counter()
            return
        key = (self.phase, info["generation"])
        self.count[key] += 1
        self.seconds[key] += time.perf_counter() - self._started

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection(self) -> None:
        self.phase = "collection"

    @pytest.hookimpl(trylast=True)  # after the harness's freeze and its collection at collection's end
    def pytest_collection_finish(self) -> None:
        self.phase = "tests"

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self) -> None:
        self.phase = "end"

    def lines(self) -> list[str]:
        rows = [f"{'phase':<11}" + "".join(f"{f'gen {generation}':>16}" for generation in range(3)) + f"{'seconds':>10}"]
        for phase in PHASES:
            cells = "".join(f"{self.count[phase, g]:>7} {self.seconds[phase, g]:>6.2f} s" for g in range(3))
            rows.append(f"{phase:<11}{cells}{sum(self.seconds[phase, g] for g in range(3)):>8.2f} s")
        rows.append(f"{'total':<11}{'':>48}{sum(self.seconds.values()):>8.2f} s")
        return rows


def main(args: list[str]) -> int:
    clock = CollectorClock()
    gc.callbacks.append(clock.on_collection)
    try:
        status = pytest.main(args or DEFAULT_ARGS, plugins=[clock])
    finally:
        gc.callbacks.remove(clock.on_collection)
    print("\nthe garbage collector's time, by phase (collections, seconds):", *clock.lines(), sep="\n")
    return int(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
