"""A pytest session's junit XML read back, and two sessions of the same tests compared: plainly on
the CPU and with `pytest --simcuda`. Pure: shared by the census and bench/simcuda_peer_suite.py."""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import NamedTuple


class Outcome(NamedTuple):
    outcome: str  # passed, failure, error, skipped (junit's words)
    message: str = ""  # the first line of the failure or skip
    seconds: float = 0.0  # the test's own time (setup, call, teardown)
    text: str = ""  # the failure's whole text (a traceback under --tb=native)
    file: str = ""  # the test's file, relative to the session's root (junit_family=xunit1 writes it)


Outcomes = dict[str, Outcome]  # junit test id -> its outcome
FAILING = ("failure", "error")


def read_junit(junit: Path) -> Outcomes:
    outcomes = {}
    for case in ElementTree.parse(junit).iter("testcase"):
        problem = next((child for child in case if child.tag in ("failure", "error", "skipped")), None)
        message = (problem.get("message") or "").strip() if problem is not None else ""
        outcomes[f"{case.get('classname')}::{case.get('name')}"] = Outcome(
            "passed" if problem is None else problem.tag,
            message.splitlines()[0][:200] if message else "",
            float(case.get("time") or 0.0),
            (problem.text or "") if problem is not None else "",
            case.get("file") or "",
        )
    return outcomes


def junit_id(nodeid: str) -> str:
    """pytest's node id in junit's classname::name form."""
    path, _, rest = nodeid.partition("::")
    *classes, name = rest.split("::")
    return f"{'.'.join([path.removesuffix('.py').replace('/', '.'), *classes])}::{name}"


def node_id(test: str, file: str) -> str:
    """junit's classname::name back in pytest's form, given the test's file (xunit1's `file`):
    what a reproducer's command line names. Without the file, the junit id itself."""
    if not file:
        return test
    classname, _, name = test.partition("::")
    module = file.removesuffix(".py").replace("/", ".")
    classes = classname.removeprefix(module).strip(".")
    return "::".join([file, *filter(None, classes.split(".")), name])


def compare(cpu: Outcomes, sim: Outcomes, simcuda: dict) -> dict:
    """Over the tests passing on the CPU: passed on both, failing only simulated (with the first
    line), refused by the simulation (simcuda's own word), skipped by the test itself on a CUDA
    device (kornia skips some CUDA cases: neither a refusal nor a pass). Apart: the cases only the
    simulated run runs (a CUDA case the CPU run skips, or does not have): passed, failing, refused.
    `both_seconds`: the tests' own times, CPU and simulated, over the tests passed on both (the
    ratio the target is set on where a session also runs cases of one side only)."""
    passing = [test for test, result in cpu.items() if result.outcome == "passed"]
    refused = {junit_id(test) for test, outcome in simcuda.get("results", {}).items() if outcome == "refused"}
    skipped = [test for test in passing if test in sim and sim[test].outcome == "skipped"]
    only_simulated = [test for test, result in sim.items() if result.outcome != "skipped" and cpu.get(test, Outcome("skipped")).outcome == "skipped"]
    only_simulated_refused = [test for test in sim if test in refused and cpu.get(test, Outcome("skipped")).outcome == "skipped"]
    both = [test for test in passing if test in sim and sim[test].outcome == "passed"]
    return {
        "passing_on_cpu": len(passing),
        "passed_on_both": len(both),
        "both_seconds": (sum(cpu[test].seconds for test in both), sum(sim[test].seconds for test in both)),
        "failing_only_simulated": {test: sim[test].message for test in passing if test in sim and sim[test].outcome in FAILING},
        "refused": sum(1 for test in skipped if test in refused),
        "skipped_by_the_test_on_cuda": {test: sim[test].message for test in skipped if test not in refused},
        "only_simulated_passed": sum(1 for test in only_simulated if sim[test].outcome == "passed"),
        "only_simulated_failing": {test: sim[test].message for test in only_simulated if sim[test].outcome in FAILING},
        "only_simulated_refused": len(only_simulated_refused),
        "refused_by_feature": simcuda.get("refused_by_feature", {}),
    }
