"""The GPU runner, rehearsed on the CPU (issue 19). Each test emulates one condition that only a GPU
runner meets and that would change a verdict there, and checks that the verdict is the one a CPU
machine gives (or the one the bug deserves). Every emulation failed on the code before its fix;
the commit pairs are listed in the closing note of issue 19. The conditions:

- an intermittent race inside Hypothesis (fires on one example, not on Hypothesis's replay);
- a skipped or inconclusive test isolated in a fresh process (pytest-isolated, on a GPU runner);
- the serial step's parent process crashing after its isolated children ran;
- a sticky CUDA error, then tests with no device parameter that touch CUDA anyway;
- an old-release job of the matrix (kornia 0.7.1, 0.7.2) run with --strict-sweeps;
- the simulated device on a machine whose real CUDA device guard is in force (any GPU runner):
  tests/helpers/real_cuda_guard.py;
- real CUDA started (torch.cuda's `_initialized`), then the memory API inside the simulation;
- `pytest --simcuda` on a one-GPU runner, after collection;
- sam2-460's direct test where CUDA graphs run (the simulated CUDA-graph tree: simcuda/graphs.py)
  on a model with sam2 0.4.1's position cache, whose overwrite error fires before any graph is
  recorded;
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest
import torch

from fixtures.known_bugs.registry import load_registry
from fixtures.known_bugs.versions import affected_status
from fixtures.plugins import HARNESS_PLUGINS
from fixtures.sweeps.allowlist import DEFAULT_ALLOWLIST
from reports.acceptance.summary import combined_lines, missing_results_lines
from reports.run.loading import ResultsError, load_results
from reports.scan.run import install_into, release_folder
from simcuda import SimulationUnsupported, simulated_cuda
from tests.conftest import REPO
from tests.helpers import warm_python
from tests.helpers.simulated_runner import SEEN_AFTER_COLLECTION

ENTRY = """
[{bug_id}]
title = "a fake race of pytest"
package = "pytest"
affected = "{affected}"
first_fixed = "999"
issue = "https://example.invalid/issues/1"
kind = "race"
symptom_device = "cuda"
"""
# The installed pytest is inside ">=1" and outside "<1".
RACES = {"affected-race": ">=1", "fixed-race": "<1"}


@pytest.fixture
def race_registry(tmp_path: Path) -> Path:
    path = tmp_path / "bugs.toml"
    path.write_text("".join(ENTRY.format(bug_id=bug_id, affected=affected) for bug_id, affected in RACES.items()))
    return path


# A race that fires on the first generated example and never again: Hypothesis replays the
# failing example to shrink it, sees it pass, and raises FlakyFailure (an exception group)
# around the oracle's BugObserved. On a GPU runner the JPEG race tests meet exactly this.
FLAKY_RACE = """
import pytest
from hypothesis import given, settings, strategies as st

from fixtures.known_bugs.outcomes import BugObserved

CALLS = []


@pytest.mark.known_bug("{bug_id}", evidence="proxy")
@settings(max_examples=5, database=None, derandomize=True)
@given(st.integers(0, 10))
def test_race(frame):
    CALLS.append(frame)
    if len(CALLS) == 1:
        raise BugObserved(f"frame {{frame}} corrupted")
"""


@pytest.mark.parametrize(("bug_id", "verdict", "outcome"), [("affected-race", "reproduced", "xfailed"), ("fixed-race", "regressed", "failed")])
def test_an_intermittent_race_inside_hypothesis_is_a_sighting(harness, race_registry, bug_id, verdict, outcome) -> None:
    harness.makepyfile(FLAKY_RACE.format(bug_id=bug_id))
    result = harness.runpytest(f"--bug-registry={race_registry}", "-p", "no:cacheprovider")
    result.assert_outcomes(**{outcome: 1})
    result.stdout.fnmatch_lines([f"{bug_id}*{verdict}*proxy*frame * corrupted*"])


# What `isolated_on_gpu` becomes where its GPU is visible: pytest-isolated's fresh process.
ISOLATED_SKIPS = """
import pytest

from fixtures.known_bugs.outcomes import Inconclusive


@pytest.mark.isolated
def test_skipped_in_the_child():
    pytest.skip("no frame decoded on this GPU")


@pytest.mark.known_bug("kornia-2791", evidence="proxy")
@pytest.mark.isolated
def test_inconclusive_in_the_child():
    raise Inconclusive("no CUDA graph was recorded, so the bug could not show")
"""
REASONS = {
    "test_skipped_in_the_child": "no frame decoded on this GPU",
    "test_inconclusive_in_the_child": "inconclusive: no CUDA graph was recorded, so the bug could not show",
}


def test_an_isolated_tests_skip_reason_arrives_as_written(harness, tmp_path: Path) -> None:
    harness.makepyfile(ISOLATED_SKIPS)
    result = harness.runpytest_subprocess(f"--report-dir={tmp_path}", "-rs", "-p", "no:cacheprovider")
    result.assert_outcomes(skipped=2)
    tests = {test["nodeid"].rsplit("::", 1)[-1]: test for test in json.loads((tmp_path / "results.json").read_text())["tests"]}
    assert {name: test["message"] for name, test in tests.items()} == REASONS
    junit = {case.get("name"): case.find("skipped").get("message") for case in ElementTree.parse(tmp_path / "junit.xml").iter("testcase")}
    assert junit == REASONS
    verdict = next(v for v in json.loads((tmp_path / "results.json").read_text())["verdicts"] if v["bug_id"] == "kornia-2791")
    assert verdict["verdict"] == "inconclusive" and verdict["detail"].startswith("no CUDA graph was recorded"), verdict
    for reason in REASONS.values():
        result.stdout.fnmatch_lines([f"SKIPPED*{reason}"])
    page = (tmp_path / "report.html").read_text()
    assert f"('{harness.path}" not in page  # no stringified (path, line, reason) tuple
    assert all(f"<summary>1 &times; {reason}</summary>" in page for reason in REASONS.values())


# The serial step: isolated children run first, then the parent process dies (a segfault in a
# plain GPU test, an out-of-memory kill) before it can write its reports.
PARENT_CRASHES = """
import os

import pytest


@pytest.mark.known_bug("kornia-2791", evidence="proxy")
@pytest.mark.isolated
def test_isolated_child():
    pass


def test_z_parent_dies():
    os._exit(9)
"""


def test_isolated_children_never_write_the_parents_reports(harness, tmp_path: Path) -> None:
    harness.makepyfile(PARENT_CRASHES)
    serial = tmp_path / "serial"
    result = harness.runpytest_subprocess(f"--report-dir={serial}", "-p", "no:cacheprovider")
    assert result.ret == 9
    assert not (serial / "results.json").exists(), "an isolated child wrote the parent's results.json"
    with pytest.raises(ResultsError) as missing:
        load_results(serial / "results.json")
    assert missing_results_lines("serial", str(missing.value))[0].startswith("[serial] no results.json (crashed?)")
    assert combined_lines({"serial": None})[0].endswith("serial: no results.json, counted as error")


# On a GPU runner a sticky error (an illegal memory access) leaves the process's CUDA context
# unusable, and every later CUDA call fails with the same text: also in tests that take no device
# parameter but touch CUDA (sam2 1.1.0 warms its cache on CUDA in __init__, so its proxy does;
# kornia <= 0.7.1 builds `pl` on cuda:0 in its proxy and the state sweep).
AFTER_A_STICKY_ERROR = """
import pytest

from fixtures.known_bugs.outcomes import BugObserved

STICKY = "CUDA error: an illegal memory access was encountered"


@pytest.mark.known_bug("kornia-2791")
def test_a_poisons(device):
    if device == "cuda:0":
        raise RuntimeError(STICKY)


@pytest.mark.known_bug("kornia-2837", evidence="proxy")
def test_b_proxy_that_touches_cuda_in_its_library():
    raise RuntimeError(STICKY)  # what the library's CUDA call raises in the poisoned process
"""


def test_after_a_sticky_cuda_error_no_later_test_is_charged_with_it(harness, monkeypatch) -> None:
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    harness.makepyfile(AFTER_A_STICKY_ERROR)
    result = harness.runpytest("--device", "cpu,cuda:0", "-rs", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1, skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED*CUDA context unusable in this process since *test_a_poisons?cuda:0? hit a sticky error*"])
    result.stdout.fnmatch_lines(["kornia-2837*skipped*CUDA context unusable*"])
    result.stdout.fnmatch_lines(["kornia-2791*error*"])  # the test that hit it is the one charged


# The GPU workflow runs every tox environment with --strict-sweeps; on an old release the sweeps
# meet that release's own registered bug (kornia 0.7.1: kornia-2791) and findings the allow-list
# triaged for that release only. Both must pass; a finding nobody triaged must still fail.
OLD_RELEASE_SUITES = ["suites/kornia_sweeps", "suites/kornia_2791_planckian_jitter"]


@pytest.fixture(scope="module")
def kornia_releases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """kornia 0.7.1 and 0.7.2, installed without dependencies (as the release scan does)."""
    cache = tmp_path_factory.mktemp("releases")
    folders = {release: release_folder(cache, "kornia", release) for release in ("0.7.1", "0.7.2")}
    for release, folder in folders.items():
        if not install_into(folder, f"kornia=={release}", f"kornia {release}", dict(os.environ)):
            pytest.fail(f"kornia {release} did not install from PyPI")
    return folders


def strict_sweeps_run(folder: Path, report_dir: Path, *arguments: str) -> subprocess.CompletedProcess:
    return warm_python.run(
        [sys.executable, "-m", "pytest", "--strict-sweeps", "-p", "no:cacheprovider", f"--report-dir={report_dir}", *arguments],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(folder)}, timeout=900,
    )


@pytest.mark.release_range
@pytest.mark.parametrize("release", ["0.7.1", "0.7.2"])
def test_an_old_release_job_with_strict_sweeps_passes_on_its_own_bugs_and_triage(kornia_releases, release, tmp_path: Path) -> None:
    done = strict_sweeps_run(kornia_releases[release], tmp_path, *OLD_RELEASE_SUITES)
    assert done.returncode == 0, "\n".join(line for line in done.stdout.splitlines() if line.startswith(("FAILED", "ERROR")))
    document = json.loads((tmp_path / "results.json").read_text())
    findings = [row for row in document["sweeps"] if row["result"] == "finding"]
    assert findings and all(row.get("triaged") for row in findings), [row for row in findings if not row.get("triaged")]
    charged = {row["callable"] for row in findings if row.get("charged") == "kornia-2791"}
    assert charged == ({"kornia.augmentation.RandomPlanckianJitter"} if release == "0.7.1" else set())


@pytest.mark.release_range
def test_a_finding_no_one_triaged_for_the_release_still_fails(kornia_releases, tmp_path: Path) -> None:
    text = DEFAULT_ALLOWLIST.read_text(encoding="utf-8")
    narrowed = tmp_path / "allowlist.toml"
    narrowed.write_text(_without_table(text, '[state."kornia.enhance.Normalize"]'), encoding="utf-8")
    done = strict_sweeps_run(
        kornia_releases["0.7.2"], tmp_path / "report", f"--sweep-allowlist={narrowed}", "suites/kornia_sweeps/test_state_sweep.py"
    )
    assert done.returncode == 1
    failed = [line for line in done.stdout.splitlines() if line.startswith("FAILED")]
    assert len(failed) == 1 and "kornia.enhance.Normalize" in failed[0], failed


def _without_table(toml: str, header: str) -> str:
    """The allow-list's text without one table (its header line and the entry lines under it)."""
    kept, skipping = [], False
    for line in toml.splitlines():
        if line.startswith("["):
            skipping = line.strip() == header
        if not skipping:
            kept.append(line)
    return "\n".join(kept) + "\n"


def verdicts_of(report_dir: Path) -> dict[str, tuple[str, str | None]]:
    return {v["bug_id"]: (v["verdict"], v["evidence"]) for v in json.loads((report_dir / "results.json").read_text())["verdicts"]}


def suites_run(report_dir: Path, *arguments: str) -> subprocess.CompletedProcess:
    return warm_python.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--report-dir={report_dir}", *arguments], cwd=REPO, timeout=900,
    )


def test_the_simulated_device_never_reaches_the_real_cuda_guard(tmp_path: Path) -> None:
    """kornia-2791 and kornia-2837 get the verdicts of a CPU-only machine (reproduced where the
    registry places the installed kornia as affected, else fixed; simulated evidence either way),
    and the simulated sweep finds nothing new, with torch's real CUDA device guard in force (as on
    every GPU runner)."""
    bugs = ["kornia-2791", "kornia-2837"]
    guarded = suites_run(tmp_path / "guarded", "-p", "tests.helpers.real_cuda_guard", *(word for bug in bugs for word in ("--bug", bug)))
    assert guarded.returncode == 0, guarded.stdout[-3000:] + guarded.stderr[-2000:]
    registry = load_registry()
    expected = {bug: ("reproduced" if affected_status(registry[bug]).affected else "fixed", "simulated") for bug in bugs}
    assert verdicts_of(tmp_path / "guarded") == expected
    sweep = suites_run(
        tmp_path / "sweep", "-p", "tests.helpers.real_cuda_guard", "--strict-sweeps", "--device", "simcuda:1",
        "suites/kornia_sweeps/test_device_sweep.py",
    )
    assert sweep.returncode == 0, (
        "\n".join(line for line in sweep.stdout.splitlines() if line.startswith(("FAILED", "ERROR")))[-3000:] + sweep.stderr[-2000:]
    )


# sam2 0.4.1's caching pattern (the cache filled by the compiled call, handed back as stored), not
# the harness's stand-in itself, which the suite runs as a control: as sam2's own module would be.
SAM2_041_DIRECT = """
import pytest
import torch

from suites.sam2_460_cudagraph import test_compiled_encoder as suite
from suites.sam2_460_cudagraph.position_encodings import CachedSinePosition

test_compiled_encoder_matches_eager = suite.test_compiled_encoder_matches_eager


class Sam2041PositionCache(torch.nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.inner = CachedSinePosition(channels, fixed=False)

    def forward(self, features):
        return self.inner(features)


@pytest.fixture(autouse=True)
def sam2_041_position_cache(monkeypatch):
    monkeypatch.setattr(suite, "position_encoding", lambda channels: (Sam2041PositionCache(channels), "sam2 0.4.1's cache"))
"""
SAM2_ENTRY = """
[sam2-460]
title = "sam2 0.4.1's cache, under a package that is installed"
package = "pytest"
affected = ">=1"
first_fixed = "999"
issue = "https://example.invalid/issues/460"
kind = "deterministic"
symptom_device = "cuda"
simulable = true
"""


def test_sam2_460_direct_oracle_sees_the_overwrite_that_fires_before_a_graph_is_recorded(harness, tmp_path: Path) -> None:
    registry = tmp_path / "bugs.toml"
    registry.write_text(SAM2_ENTRY)
    harness.makepyfile(SAM2_041_DIRECT)
    # A process of its own: the simulated tree imports torch._inductor, which must not be dropped
    # from this process's modules by an in-process session's cleanup (it registers C++ operators).
    result = harness.runpytest_subprocess(
        f"--bug-registry={registry}", "--device", "simcuda:1", "-p", "no:cacheprovider", f"--report-dir={tmp_path / 'report'}"
    )
    (verdict,) = json.loads((tmp_path / "report" / "results.json").read_text())["verdicts"]
    assert (verdict["verdict"], verdict["evidence"]) == ("reproduced", "simulated"), verdict
    assert "accessing tensor output of CUDAGraphs that has been overwritten" in verdict["detail"]
    result.assert_outcomes(xfailed=2)  # both CUDA-graph modes


# A GPU runner after any real cuda:N test: CUDA is initialised and each GPU's generator state is
# Philox's seed and offset, 16 bytes. The autouse seeded_rng saves those states before a simcuda:N
# test's `device` fixture opens the simulation, and restores them at its teardown.
AFTER_A_REAL_CUDA_TEST = """
import pytest
import torch

REAL_STATES = [torch.arange(16, dtype=torch.uint8) + i for i in range(2)]
RESTORED = []


@pytest.fixture(autouse=True, scope="session")
def cuda_started_as_on_a_gpu_runner():
    saved = torch.cuda.is_initialized, torch.cuda.get_rng_state_all, torch.cuda.set_rng_state_all
    torch.cuda.is_initialized = lambda: True
    torch.cuda.get_rng_state_all = lambda: [state.clone() for state in REAL_STATES]
    torch.cuda.set_rng_state_all = lambda states: RESTORED.append([state.clone() for state in states])
    yield
    torch.cuda.is_initialized, torch.cuda.get_rng_state_all, torch.cuda.set_rng_state_all = saved


def pytest_terminal_summary(terminalreporter):  # after every test: simulated ones run last
    restored = bool(RESTORED) and all(torch.equal(a, b) for states in RESTORED for a, b in zip(states, REAL_STATES))
    terminalreporter.write_line(f"afterwards: default dtype {torch.get_default_dtype()}, real CUDA states restored {restored}")
"""
SIMULATED_TEST = """
import torch

from fixtures.known_bugs.outcomes import observe


@pytest.mark.known_bug("kornia-2791")
def test_a_simulated_body(device):
    torch.set_default_dtype(torch.float64)  # a global flag the harness must put back
    observe(torch.zeros(1, device=device).device.type != "cuda", "not on the simulated CUDA device")

"""


def test_a_simulated_test_after_real_cuda_started_restores_the_real_cuda_rng_and_every_flag(harness, tmp_path: Path) -> None:
    harness.makeconftest(f"pytest_plugins = {list(HARNESS_PLUGINS)!r}\n" + AFTER_A_REAL_CUDA_TEST)
    harness.makepyfile("import pytest\n" + SIMULATED_TEST)
    result = harness.runpytest_subprocess("--device", "simcuda:1", "-p", "no:cacheprovider", f"--report-dir={tmp_path}")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["afterwards: default dtype torch.float32, real CUDA states restored True"])
    assert verdicts_of(tmp_path)["kornia-2791"][0] != "error"


# A GPU runner after any real CUDA use: torch.cuda's `_initialized` is True (what `is_initialized()`
# reads, in torch.cuda and in torch.cuda.memory alike), so the memory API goes straight to the real
# caching allocator. Inside the simulation it must never get there with a simulated device index
# (an invalid device on a 1-GPU runner, physical GPU 1's figures on a 2-GPU one).
ALLOCATOR_ENTRIES = (
    "_cuda_memoryStats", "_cuda_emptyCache", "_cuda_resetPeakMemoryStats", "_cuda_resetAccumulatedMemoryStats",
    "_cuda_memorySnapshot", "_cuda_hostMemoryStats", "_cuda_setMemoryFraction", "_cuda_getMemoryFraction",
)
# Each read, keyed by what its refusal must name.
MEMORY_READS = {
    "memory_stats": lambda: torch.cuda.memory_stats(),
    "memory_allocated": lambda: torch.cuda.memory_allocated(1),
    "max_memory_*": lambda: torch.cuda.max_memory_allocated("cuda:1"),
    "memory_reserved": lambda: torch.cuda.memory_reserved(),
    "memory_summary": lambda: torch.cuda.memory_summary(),
    "mem_get_info": lambda: torch.cuda.mem_get_info(),
    "memory_snapshot": lambda: torch.cuda.memory_snapshot(),
}


@pytest.fixture
def real_cuda_started(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, tuple]]:
    """torch.cuda as after real CUDA use, its allocator's C entries recording each call."""
    reached: list[tuple[str, tuple]] = []
    monkeypatch.setattr(torch.cuda, "_initialized", True)
    for name in ALLOCATOR_ENTRIES:
        monkeypatch.setattr(torch._C, name, lambda *args, name=name: reached.append((name, args)) or {}, raising=False)
    monkeypatch.setattr(torch.cuda, "cudart", lambda: pytest.fail("the real CUDA runtime was reached (cudart)"))
    return reached


def test_inside_the_simulation_cuda_has_started_and_the_real_allocator_is_never_reached(real_cuda_started) -> None:
    with simulated_cuda(device_count=2) as simulation:
        simulation.set_device(1)
        assert torch.cuda.is_initialized() and torch.cuda.memory.is_initialized()
        torch.cuda.empty_cache()  # nothing cached to release: a no-op, as on a fresh GPU
        torch.cuda.reset_peak_memory_stats(1)
        refused = {}
        for name, read in MEMORY_READS.items():
            with pytest.raises(SimulationUnsupported) as error:
                read()
            refused[name] = str(error.value)
    assert real_cuda_started == [], f"the real caching allocator was reached: {real_cuda_started}"
    assert all(name in reason for name, reason in refused.items()), refused


# `pytest --simcuda` on a one-GPU runner: the collection view (two GPUs, so that a project's
# collection-time device lists gather their cuda:1 cases) must be gone once collection ends. Left
# in place, torch's lazy init would check the capability of a GPU 1 that does not exist, and real
# CUDA could never start in that session (every later real call: DeferredCudaCallError).
ONE_GPU_CONFTEST = SEEN_AFTER_COLLECTION.format(seen="(torch.cuda.is_available(), torch.cuda.device_count())")
COLLECTION_TIME_DEVICES = """
import torch

DEVICES = [f"cuda:{index}" for index in range(torch.cuda.device_count())]


def test_collection_saw_the_simulated_machine():
    assert len(DEVICES) == 2, DEVICES
"""


def test_simcuda_on_a_one_gpu_runner_hands_real_cuda_back_after_collection(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # the runner: one real GPU
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    pytester.makeconftest(ONE_GPU_CONFTEST)
    pytester.makepyfile(COLLECTION_TIME_DEVICES)
    result = pytester.runpytest("--simcuda", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)  # collection saw the simulated machine's two GPUs
    result.stdout.fnmatch_lines(["after collection: (True, 1)"])  # ... and the real one after it
