"""The simulated device end to end: simcuda:N ids run their body on "cuda:N" inside the simulation,
decide a simulable bug as `simulated` evidence, skip a bug the simulation cannot show, and turn
what the simulation refuses into inconclusive, never a pass. The registry ties fake bugs to pytest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.registry.test_known_bug_sessions import ENTRY

REGISTRY = (
    ENTRY.format(bug_id="placement", affected=">=1", kind="deterministic") + "simulable = true\n"
    + ENTRY.format(bug_id="fixed-placement", affected="<1", kind="deterministic") + "simulable = true\n"
    + ENTRY.format(bug_id="race", affected=">=1", kind="race")
)

TESTS = """
import pytest
import torch
from fixtures.known_bugs.outcomes import BugObserved

@pytest.mark.known_bug("{bug_id}")
def test_direct(device, simulation):
    made = torch.ones(2, device=device)
    assert str(made.device) == device and (simulation is not None) == device.startswith("cuda")
    if simulation is not None and {seen}:
        raise BugObserved(f"left behind on {{device}}")
"""


@pytest.fixture
def registry(harness) -> Path:
    return harness.makefile(".toml", bugs=REGISTRY)


def run(harness, registry: Path, bug_id: str, seen: bool, *args: str):
    """The direct test on cpu, simcuda:0 and simcuda:1, seeing the bug on the simulated device or not."""
    harness.makepyfile(TESTS.format(bug_id=bug_id, seen=seen))
    return harness.runpytest(f"--bug-registry={registry}", "--device", "cpu,sim", "-rxXs", "-v", *args)


def test_a_simulated_symptom_reproduces_an_affected_release_as_simulated_evidence(harness, registry) -> None:
    result = run(harness, registry, "placement", True, f"--report-dir={harness.path / 'out'}")
    result.assert_outcomes(passed=1, xfailed=2)
    result.stdout.fnmatch_lines(["*test_direct?cpu? PASSED*", "*test_direct?simcuda:0? XFAIL*"])
    result.stdout.fnmatch_lines(["placement*reproduced*simulated*pytest*"])
    result.stdout.fnmatch_lines(["*placement reproduced as known on pytest * (simulated): left behind on cuda:1*"])
    results = json.loads((harness.path / "out" / "results.json").read_text())
    verdicts = {v["bug_id"]: (v["verdict"], v["evidence"]) for v in results["verdicts"]}
    assert verdicts["placement"] == ("reproduced", "simulated")
    properties = {t["nodeid"].rsplit("[", 1)[1]: t["properties"] for t in results["tests"]}
    assert (properties["simcuda:1]"]["device"], properties["simcuda:1]"]["evidence"]) == ("simcuda:1", "simulated")
    assert properties["cpu]"]["evidence"] == "control"


@pytest.mark.parametrize(
    ("seen", "outcomes", "lines"),
    [
        (False, {"passed": 3}, ["fixed-placement*fixed*simulated*"]),
        (True, {"passed": 1, "failed": 2}, ["*REGRESSED fixed-placement*", "fixed-placement*regressed*simulated*"]),
    ],
    ids=["clean-is-fixed", "seen-is-regressed"],
)
def test_a_fixed_release_is_decided_by_the_simulated_run(harness, registry, seen: bool, outcomes: dict, lines: list[str]) -> None:
    result = run(harness, registry, "fixed-placement", seen)
    result.assert_outcomes(**outcomes)
    for line in lines:
        result.stdout.fnmatch_lines([line])


def test_a_bug_the_simulation_cannot_show_is_skipped_there_with_the_reason(harness, registry) -> None:
    result = run(harness, registry, "race", True)
    result.assert_outcomes(passed=1, skipped=2)
    result.stdout.fnmatch_lines(["race*skipped*"])
    result.stdout.fnmatch_lines(["*race cannot be simulated: fixtures/known_bugs/bugs.toml does not mark it simulable*"])


def test_a_refusal_the_test_catches_itself_is_still_inconclusive(harness, registry) -> None:
    """A broad `except` around a refused call lets the test pass: the phase still refused a
    feature the simulation could not imitate, so it is a skip naming it, never "not observed"."""
    harness.makepyfile(
        """
        import pytest
        import torch

        @pytest.mark.known_bug("placement")
        def test_swallows_the_refusal(device):
            try:
                torch.Generator(device=device)
            except Exception:
                pass
        """
    )
    result = harness.runpytest(f"--bug-registry={registry}", "--device", "simcuda:1", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["placement*inconclusive*simulated*the simulated device cannot run this: torch.Generator(device='cuda')*"])


def test_what_the_simulation_refuses_is_inconclusive_never_a_pass(harness, registry) -> None:
    harness.makepyfile(
        """
        import pytest
        import torch

        @pytest.mark.known_bug("placement")
        def test_needs_cuda_random_streams(device):
            torch.Generator(device=device)

        @pytest.mark.simulable
        def test_untied(device):
            torch.Generator(device=device)
        """
    )
    result = harness.runpytest(f"--bug-registry={registry}", "--device", "simcuda:1", "-rs")
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(["placement*inconclusive*simulated*"])
    result.stdout.fnmatch_lines(["*inconclusive: *torch.Generator(device='cuda')*"])


def test_torch_is_itself_again_after_a_simulated_test(harness) -> None:
    harness.makepyfile(
        """
        import pytest
        import torch

        @pytest.mark.simulable
        def test_simulated(device):
            assert torch.cuda.is_available() and torch.cuda.device_count() == 2
            raise RuntimeError("a failing simulated test must restore torch too")

        def test_after():
            assert not torch.cuda.is_available()
            assert torch.ones(1).device.type == "cpu"
        """
    )
    result = harness.runpytest("--device", "simcuda:0", "-p", "no:randomly")
    result.assert_outcomes(failed=1, passed=1)


def test_list_bugs_says_which_bugs_the_simulation_decides(harness, registry) -> None:
    result = harness.runpytest(f"--bug-registry={registry}", "--list-bugs")
    result.stdout.fnmatch_lines(["placement *", "*", "*", "*simcuda:N: decides (simulated evidence)", "fixed-placement *"])
    result.stdout.fnmatch_lines(["race *", "*", "*", "*simcuda:N: skipped (cannot be simulated)"])
