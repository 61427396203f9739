"""The device options end to end, in small pytest sessions with simulated GPU counts."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import torch

from fixtures.devices import gpu_turns
from fixtures.devices import plugin as devices_plugin
from fixtures.plugins import HARNESS_PLUGINS
from reports.run import environment
from tests.conftest import REPO
from tests.helpers import warm_python

DEVICE_TEST = """
def test_body(device):
    assert isinstance(device, str)
"""


@pytest.fixture
def gpus(monkeypatch: pytest.MonkeyPatch):
    """Simulate `n` visible CUDA devices for in-process sessions."""

    def simulate(count: int) -> None:
        monkeypatch.setattr(torch.cuda, "device_count", lambda: count)

    return simulate


TWO_DEVICE_TESTS = """
def test_a(device):
    pass


def test_b(device):
    pass
"""


def test_simulated_device_tests_run_after_every_other_test(harness, gpus) -> None:
    """A library's per-device cache filled by a simcuda:N test would hand a simulated tensor to a
    later real cuda:N test (kornia 0.9.0's JPEG tables): in each process every real test runs first."""
    gpus(1)
    harness.makepyfile(TWO_DEVICE_TESTS)
    result = harness.runpytest("--device", "cpu,cuda:0,simcuda:0", "--collect-only", "-q")
    ids = [line.split("::", 1)[1] for line in result.stdout.lines if "::" in line]
    assert ids == ["test_a[cpu]", "test_a[cuda:0]", "test_b[cpu]", "test_b[cuda:0]", "test_a[simcuda:0]", "test_b[simcuda:0]"]


def test_all_devices_collects_cpu_two_cuda_slots_and_the_simulation_and_skips_with_reasons(harness, gpus) -> None:
    gpus(1)
    harness.makepyfile(DEVICE_TEST)
    result = harness.runpytest("-rs", "-v")
    result.assert_outcomes(passed=2, skipped=3)
    result.stdout.fnmatch_lines(["*test_body?cpu? PASSED*", "*test_body?cuda:0? PASSED*", "*cuda:1 requested, 1 CUDA device visible*"])
    result.stdout.fnmatch_lines(["*test_body?simcuda:0? SKIPPED*", "*test_body?simcuda:1? SKIPPED*"])
    result.stdout.fnmatch_lines(["*simcuda:0: not marked simulable*"])


def test_cuda_expands_to_every_visible_device(harness, gpus) -> None:
    gpus(3)
    harness.makepyfile(DEVICE_TEST)
    result = harness.runpytest("--device", "cuda", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["*test_body?cuda:0?", "*test_body?cuda:1?", "*test_body?cuda:2?"])
    assert "cpu" not in result.stdout.str()


def test_environment_variable_selects_devices(harness, gpus, monkeypatch) -> None:
    gpus(0)
    monkeypatch.setenv("HARNESS_DEVICE", "cpu")
    harness.makepyfile(DEVICE_TEST)
    harness.runpytest().assert_outcomes(passed=1)


def test_malformed_device_is_a_one_line_usage_error(harness) -> None:
    harness.makepyfile(DEVICE_TEST)
    result = harness.runpytest_subprocess("--device", "gpu7")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.strip()]
    assert errors == [
        "ERROR: --device: 'gpu7' is not a device; use cpu, cuda, cuda:N, simcuda:N, sim or all, "
        "comma-separated (e.g. --device cpu,cuda:1,sim)"
    ]
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


@pytest.mark.parametrize(
    ("option", "value"), [("--threads", "1,zero"), ("--threads", "0"), ("--threads", "1,1"), ("--race-budget", "x"), ("--race-budget", "20,90")]
)
def test_other_malformed_options_are_usage_errors(harness, option: str, value: str) -> None:
    harness.makepyfile(DEVICE_TEST)
    result = harness.runpytest(option, value)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {option}*"])


def test_require_gpu_fails_a_session_without_gpus(harness, gpus) -> None:
    gpus(0)
    harness.makepyfile(DEVICE_TEST)
    result = harness.runpytest("--require-gpu")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "--require-gpu: no CUDA device is visible" in result.stdout.str() + result.stderr.str()


def test_a_driver_too_old_for_torchs_cuda_build_is_one_line_naming_it(harness, gpus, tmp_path, monkeypatch) -> None:
    """A GPU runner whose NVIDIA driver predates torch's CUDA build (the default wheels' CUDA 13
    needs driver 580): torch sees no GPU, nvidia-smi sees the driver. The run says which driver,
    which build, what it needs and what to do, not only that no GPU is visible."""
    gpus(0)
    smi = tmp_path / "bin" / "nvidia-smi"
    smi.parent.mkdir()
    smi.write_text("#!/bin/sh\necho 550.54.15\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{smi.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(torch.version, "cuda", "13.0")
    harness.makepyfile(DEVICE_TEST)
    result = harness.runpytest("--require-gpu")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    named = [line for line in (result.stdout.str() + result.stderr.str()).splitlines() if "550.54.15" in line]
    assert len(named) == 1 and "CUDA 13.0" in named[0] and "580 or newer" in named[0] and "cu12" in named[0], named


def test_require_gpu_passes_with_a_gpu(harness, gpus) -> None:
    gpus(2)
    harness.makepyfile(DEVICE_TEST)
    harness.runpytest("--require-gpu").assert_outcomes(passed=3, skipped=2)


def test_min_cuda_devices_marker_skips_with_a_reason(harness, gpus) -> None:
    gpus(1)
    harness.makepyfile(
        """
        import pytest

        @pytest.mark.min_cuda_devices(2)
        def test_two_gpus():
            pass
        """
    )
    result = harness.runpytest("-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*needs 2 CUDA devices, 1 CUDA device visible*"])


def test_second_gpu_parametrizations_select_with_the_multi_gpu_marker(harness, gpus) -> None:
    gpus(0)
    harness.makepyfile(DEVICE_TEST)
    result = harness.runpytest("-m", "min_cuda_devices", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["*test_body?cuda:1?", "*1/5 tests collected (4 deselected)*"])


def test_threads_parametrization(harness) -> None:
    harness.makepyfile("def test_t(threads):\n    assert threads in (1, 3)\n")
    result = harness.runpytest("--threads", "1,3", "-v")
    result.stdout.fnmatch_lines(["*test_t?threads1? PASSED*", "*test_t?threads3? PASSED*"])


def test_xdist_workers_pin_to_the_callers_restricted_gpus(harness, tmp_path: Path, monkeypatch) -> None:
    # No GPU here: the wiring is checked through the environment each worker ends up with.
    harness.makepyfile(
        f"""
        import os, pathlib
        import pytest

        @pytest.mark.parametrize("n", range(4))
        def test_record(n, worker_id):
            pathlib.Path({str(tmp_path)!r}, worker_id).write_text(os.environ.get("CUDA_VISIBLE_DEVICES", "<unset>"))
        """
    )
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    result = harness.runpytest_subprocess("-n", "2")
    assert result.ret == 0, result.stdout.str()
    assert {p.name: p.read_text() for p in tmp_path.iterdir() if p.name.startswith("gw")} == {"gw0": "2", "gw1": "3"}


TRIPWIRE = """
import pathlib
import torch

def _tripwire(*args, **kwargs):
    pathlib.Path({flag!r}).write_text("CUDA initialised")
    raise RuntimeError("CUDA initialisation during collection")

torch.cuda._lazy_init = _tripwire
torch.cuda.init = _tripwire

def pytest_collection_finish(session):
    if torch.cuda.is_initialized():
        pathlib.Path({flag!r}).write_text("CUDA initialised")
"""


def test_collecting_every_suite_never_initialises_cuda(tmp_path: Path) -> None:
    flag = tmp_path / "cuda-initialised"
    (tmp_path / "cuda_tripwire.py").write_text(TRIPWIRE.format(flag=str(flag)))
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    run = warm_python.run(
        [sys.executable, "-m", "pytest", "-p", "cuda_tripwire", "--collect-only", "-q", "-p", "no:cacheprovider", "suites"],
        cwd=REPO, env=env, timeout=300,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert not flag.exists()
    assert "tests collected" in run.stdout


def test_risky_gpu_tests_are_isolated_only_on_a_visible_gpu(harness, gpus) -> None:
    gpus(1)
    harness.makepyfile(
        """
        import pytest

        @pytest.mark.isolated_on_gpu(timeout=30)
        def test_risky(device):
            pass

        def test_plain(device):
            pass
        """
    )
    items, _ = harness.inline_genitems("--device", "cpu,cuda:0,cuda:1")
    isolated = {item.name: item.get_closest_marker("isolated") for item in items}
    assert {name for name, marker in isolated.items() if marker} == {"test_risky[cuda:0]"}
    assert isolated["test_risky[cuda:0]"].kwargs == {"group": "test_risky_gpu_tests_are_isolated_only_on_a_visible_gpu.py on cuda:0", "timeout": 30}


@pytest.mark.parametrize("options", [["-p", "no:isolated"], ["--no-isolation"]], ids=["plugin-off", "no-isolation"])
def test_without_isolation_the_risky_gpu_tests_run_in_process(harness, gpus, options: list[str]) -> None:
    gpus(1)
    harness.makepyfile(ISOLATED_SECOND)
    result = harness.runpytest("--device", "cuda:0", "--strict-markers", *options)
    assert result.ret == pytest.ExitCode.OK, result.outlines[-20:]
    result.assert_outcomes(passed=1)


# Every worker, the replacement too (it may get no test left to run), records its pin at start.
RECORD_PINS = """
import os, pathlib
import torch

torch.cuda.device_count = lambda: 2  # a simulated 2-GPU runner, in every process

def pytest_sessionstart(session):
    workerinput = getattr(session.config, "workerinput", None)
    if workerinput is not None:
        pathlib.Path({out!r}, workerinput["workerid"]).write_text(os.environ.get("CUDA_VISIBLE_DEVICES", "<unset>"))
"""

# gw1's first test crashes it (round robin would then put gw2 on gw0's GPU); the others wait
# until the replacement has recorded its pin, so gw0 is still alive, holding its GPU, when it starts.
CRASH_ONCE = """
import os, pathlib, time
import pytest

@pytest.mark.parametrize("n", range(8))
def test_crash_once(n, worker_id):
    out = pathlib.Path({out!r})
    if worker_id == "gw1" and not (out / "crashed").exists():
        (out / "crashed").write_text(worker_id)
        os._exit(1)  # the worker dies mid-test, as a segfault would end it
    deadline = time.monotonic() + 60
    while not (out / "gw2").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
"""


def test_a_crashed_workers_replacement_is_pinned_to_the_freed_gpu(harness, tmp_path: Path, monkeypatch) -> None:
    """Two simulated GPUs, two workers; gw1 crashes: xdist starts gw2, which must take gw1's GPU
    (pinning by index % 2 would put it beside gw0)."""
    harness.makeconftest(f"pytest_plugins = {list(HARNESS_PLUGINS)!r}\n" + RECORD_PINS.format(out=str(tmp_path)))
    harness.makepyfile(CRASH_ONCE.format(out=str(tmp_path)))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    result = harness.runpytest_subprocess("-n", "2", "-p", "no:randomly")
    result.stdout.fnmatch_lines(["*replacing crashed worker gw*"])
    pins = {path.name: path.read_text() for path in tmp_path.iterdir() if path.name.startswith("gw")}
    assert pins == {"gw0": "0", "gw1": "1", "gw2": "1"}


ISOLATED_FIRST = """
import pytest


@pytest.mark.isolated_on_gpu(timeout=100)
@pytest.mark.parametrize("n", [1, 2])
def test_a(device, n):
    pass


@pytest.mark.isolated_on_gpu(timeout=100)
def test_b(device):
    pass


def test_c(device):
    pass
"""
ISOLATED_SECOND = """
import pytest


@pytest.mark.isolated_on_gpu(timeout=100)
def test_d(device):
    pass
"""
PRINT_CHILDREN = """
import pytest


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    for item in items:
        marker = item.get_closest_marker("isolated")
        if marker is not None:
            print("CHILD", marker.kwargs["group"], marker.kwargs["timeout"], item.nodeid.split("::")[1])
"""


def test_isolated_tests_share_one_child_per_file_and_gpu(harness, gpus) -> None:
    """A child costs seconds of imports: a file's isolated tests on one GPU share one, and nothing
    else does (another file, another GPU, the CPU, an unmarked test); its timeout is theirs together."""
    gpus(2)
    harness.makeconftest(f"pytest_plugins = {list(HARNESS_PLUGINS)!r}\n{PRINT_CHILDREN}")
    harness.makepyfile(test_first=ISOLATED_FIRST, test_second=ISOLATED_SECOND)
    result = harness.runpytest("--device", "cpu,cuda:0,cuda:1", "--collect-only", "-q", "-s")
    children = sorted(line.split(" ", 1)[1] for line in result.outlines if line.startswith("CHILD "))
    assert children == sorted(
        [
            *(f"test_first.py on cuda:{gpu} 300 {test}" for gpu in (0, 1) for test in (f"test_a[cuda:{gpu}-1]", f"test_a[cuda:{gpu}-2]")),
            "test_first.py on cuda:0 300 test_b[cuda:0]",
            "test_first.py on cuda:1 300 test_b[cuda:1]",
            "test_second.py on cuda:0 100 test_d[cuda:0]",
            "test_second.py on cuda:1 100 test_d[cuda:1]",
        ]
    )


# The limits pytest-isolated would give its children, written down where it would launch them; then
# the run loop ends there (True: pluggy calls no later implementation), so no child is launched.
RECORD_LIMITS = """
import json, pathlib
import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session):
    limits = getattr(session.config, "_subprocess_group_timeouts")
    pathlib.Path({out!r}).write_text(json.dumps({{group: limits[group] for group in sorted(limits)}}))
    return True
"""
# The session's final order reversed after every plugin's collection hook, as --ff reorders it.
REVERSE_ORDER = """
@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(items):
    result = yield
    items.reverse()
    return result
"""


@pytest.mark.parametrize(
    ("turns", "limits"),
    [
        (True, {"test_first.py on cuda:0": 400, "test_second.py on cuda:0": 100}),
        (False, {"test_first.py on cuda:0": 300, "test_second.py on cuda:0": 100}),
    ],
    ids=["turns", "no-file-locks"],
)
def test_a_gpu_child_taking_turns_has_the_time_of_those_launched_before_it(harness, gpus, tmp_path: Path, monkeypatch, turns, limits) -> None:
    """Limits in the order pytest-isolated launches the children, the session's final one (here
    test_second first): each waits for those before it. Without POSIX file locks, no turns."""
    gpus(1)
    if not turns:
        monkeypatch.setattr(gpu_turns, "fcntl", None)
    out = tmp_path / "limits.json"
    harness.makeconftest(f"pytest_plugins = {list(HARNESS_PLUGINS)!r}\n" + RECORD_LIMITS.format(out=str(out)) + REVERSE_ORDER)
    harness.makepyfile(test_first=ISOLATED_FIRST, test_second=ISOLATED_SECOND)
    harness.runpytest("--device", "cuda:0", "-q", "--isolated-numprocesses", "2")
    assert json.loads(out.read_text()) == limits


OWN_ISOLATION = """
import pytest


@pytest.mark.isolated(group="mine", timeout=50)
@pytest.mark.isolated_on_gpu(timeout=100)
def test_own(device):
    pass
"""


def test_a_gpu_test_isolated_by_its_own_mark_is_left_to_it(harness, gpus, tmp_path: Path) -> None:
    """Its own `isolated` group decides where pytest-isolated runs it: the harness neither gives it
    a child of its own nor a place among the GPU children's turns."""
    gpus(1)
    out = tmp_path / "limits.json"
    harness.makeconftest(f"pytest_plugins = {list(HARNESS_PLUGINS)!r}\n" + RECORD_LIMITS.format(out=str(out)))
    harness.makepyfile(test_own=OWN_ISOLATION, test_second=ISOLATED_SECOND)
    harness.runpytest("--device", "cuda:0", "-q", "--isolated-numprocesses", "2")
    assert json.loads(out.read_text()) == {"mine": 50, "test_second.py on cuda:0": 100}


# Each child records when it started and its test's span; a child sees the one GPU its parent does.
TURN_CONFTEST = """
import os, pathlib, time
import torch

OUT = pathlib.Path({out!r})
if os.environ.get("PYTEST_RUNNING_IN_SUBPROCESS") == "1":
    torch.cuda.device_count = lambda: 1
    (OUT / f"started-{{os.getpid()}}").write_text(repr(time.time()))
"""
TURN_TEST = """
import os, pathlib, time
import pytest

from conftest import OUT


@pytest.mark.isolated_on_gpu(timeout={timeout})
@pytest.mark.parametrize("device", ["cuda:0"])
def test_on_the_gpu(device):
    assert "GPU_HARNESS_TURNS" not in os.environ  # what the test starts takes no turn
    begun = time.time()
    time.sleep({seconds})
    (OUT / f"tested-{{__name__}}").write_text(f"{{begun!r}} {{time.time()!r}}")
"""


def test_isolated_children_start_side_by_side_and_take_turns_on_the_gpus(harness, gpus, tmp_path: Path) -> None:
    """The next child starts while one child's tests run (its start is most of its cost), but never
    do two children's tests run at once, and they run in collection order: a race's attempts meet
    the GPU as when its rate was recorded, with the children one after the other."""
    gpus(1)
    harness.makeconftest(f"pytest_plugins = {list(HARNESS_PLUGINS)!r}\n" + TURN_CONFTEST.format(out=str(tmp_path)))
    harness.makepyfile(test_one=TURN_TEST.format(timeout=60, seconds=2), test_two=TURN_TEST.format(timeout=60, seconds=2))
    harness.runpytest("--device", "cuda:0", "-p", "no:cacheprovider", "--strict-config").assert_outcomes(passed=2)
    starts = [float(path.read_text()) for path in tmp_path.glob("started-*")]
    spans = {path.name: tuple(map(float, path.read_text().split())) for path in tmp_path.glob("tested-*")}
    first, second = spans["tested-test_one"], spans["tested-test_two"]
    assert len(starts) == 2
    assert max(starts) < first[1], (starts, spans)  # both children had started before the first test ended
    assert first[1] <= second[0], spans  # the second child's test began after the first one's ended



def test_a_child_that_hangs_costs_its_own_tests_only(harness, gpus, tmp_path: Path) -> None:
    """A hang that nothing inside the child ends (pytest-timeout off here; a native call holding
    the GIL on a GPU) ends at the child's own limit, as with the children one after the other; the
    child after it, started beside it, runs its tests once it has gone."""
    gpus(1)
    harness.makeconftest(f"pytest_plugins = {list(HARNESS_PLUGINS)!r}\n" + TURN_CONFTEST.format(out=str(tmp_path)))
    harness.makepyfile(test_1=TURN_TEST.format(timeout=10, seconds=300), test_2=TURN_TEST.format(timeout=60, seconds=0))
    result = harness.runpytest("--device", "cuda:0", "-p", "no:cacheprovider", "--timeout", "0")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["Subprocess group='test_1.py on cuda:0' timed out after 10 seconds*"])
    assert (tmp_path / "tested-test_2").exists()


@pytest.mark.parametrize(
    ("plain", "options", "at_once"),
    [
        (False, [], "2"),
        (True, [], "1"),
        (True, ["--deselect", "test_plain.py::test_plain"], "2"),
        (False, ["--isolated"], "1"),
        (False, ["-s"], "1"),
        (True, ["--isolated-numprocesses", "3"], "3"),
    ],
    ids=["alone", "beside-own-marks", "own-marks-deselected", "isolated-flag", "capture-off", "as-told"],
)
def test_gpu_children_stay_one_after_the_other_beside_others_isolation_and_without_capture(harness, gpus, plain, options, at_once) -> None:
    """Children of a test's own `isolated` mark (or of --isolated) take no turns, so they would run
    beside a GPU child's tests; with -s the next child would print into a running one's output."""
    gpus(1)
    harness.makepyfile(test_first=ISOLATED_FIRST, test_second=ISOLATED_SECOND)
    if plain:
        harness.makepyfile(test_plain="import pytest\n\n\n@pytest.mark.isolated(timeout=10)\ndef test_plain():\n    pass\n")
    items, _ = harness.inline_genitems("--device", "cuda:0", *options)
    assert items[0].config.option.isolated_numprocesses == at_once


# The first child dies before its plugins load, so before it could claim its place.
DIES_AT_START = """
import os, sys

if os.environ.get("PYTEST_RUNNING_IN_SUBPROCESS") == "1" and any("test_1.py" in argument for argument in sys.argv):
    os._exit(3)
"""


def test_a_child_that_died_before_claiming_its_place_is_not_waited_for(harness, gpus, tmp_path: Path) -> None:
    """The parent marks a child ended once pytest-isolated has reported it, so the next child runs
    at once, not after the grace (120 s, beyond its limit here)."""
    gpus(1)
    harness.makeconftest(DIES_AT_START + f"pytest_plugins = {list(HARNESS_PLUGINS)!r}\n" + TURN_CONFTEST.format(out=str(tmp_path)))
    harness.makepyfile(test_1=TURN_TEST.format(timeout=30, seconds=0), test_2=TURN_TEST.format(timeout=30, seconds=0))
    result = harness.runpytest("--device", "cuda:0", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    assert (tmp_path / "tested-test_2").exists()


SIMULATED_AND_GPU = """
import pytest


@pytest.mark.simulable
def test_simulated(device):
    pass


def test_unmarked(device):
    pass
"""
# The groups pytest-isolated would launch, in its launch order (the session's), with their limits
# and how many run at once; then the run loop ends there, so no child is launched.
RECORD_GROUPS = """
import json, pathlib
import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session):
    config = session.config
    groups = getattr(config, "_subprocess_groups")
    grouped = {{item.nodeid: name for name, items in groups.items() for item in items}}
    order = list(dict.fromkeys(grouped[item.nodeid] for item in session.items if item.nodeid in grouped))
    limits = getattr(config, "_subprocess_group_timeouts")
    members = {{name: sorted(item.nodeid.split("::")[1] for item in groups[name]) for name in order}}
    pathlib.Path({out!r}).write_text(json.dumps([config.option.isolated_numprocesses, [(name, limits[name], members[name]) for name in order]]))
    return True
"""


@pytest.mark.parametrize(
    ("cores", "options", "at_once", "simulated_child"),
    [
        (16, [], "3", True),
        (2, [], "2", False),
        (16, ["--isolated-numprocesses", "2"], "2", False),
        (16, ["--device", "cuda:0,simcuda:0"], "2", False),
        (16, ["-s", "--isolated-numprocesses", "3"], "3", False),
        (16, ["--isolated", "--isolated-numprocesses", "3"], "3", False),
        (16, ["-k", "not test_d"], None, False),
        (16, ["--maxfail", "1"], "2", False),
    ],
    ids=["many-cores", "two-cores", "told-two", "beside-its-real-gpu", "capture-off", "isolated-flag", "no-gpu-child-left", "maxfail"],
)
def test_the_simulated_tests_run_in_a_child_launched_first_beside_the_gpu_children(
    harness, gpus, tmp_path: Path, monkeypatch, cores, options, at_once, simulated_child
) -> None:
    """With the cores for a third child, the simulated-device tests that would run (marked
    simulable, no real GPU of their index) go to a child launched before the GPU children, which
    takes no turn; where the GPU children would not run two side by side, the run keeps two at
    once, no GPU child is left after the selection, or a failure in that child would stop the
    in-process tests (--maxfail), they stay in process."""
    gpus(1)
    monkeypatch.setattr(devices_plugin, "usable_cores", lambda: cores)
    out = tmp_path / "groups.json"
    harness.makeconftest(f"pytest_plugins = {list(HARNESS_PLUGINS)!r}\n" + RECORD_GROUPS.format(out=str(out)))
    harness.makepyfile(test_second=ISOLATED_SECOND, test_simulated=SIMULATED_AND_GPU)
    devices = [] if "--device" in options else ["--device", "cuda:0,simcuda:1"]
    result = harness.runpytest(*devices, "-q", *options)
    assert result.ret == pytest.ExitCode.OK, result.outlines[-20:]
    recorded_at_once, groups = json.loads(out.read_text())
    names = [name for name, _, _ in groups]
    assert (recorded_at_once, "simulated devices" in names) == (at_once, simulated_child)
    if simulated_child:
        assert groups == [["simulated devices", 600, ["test_simulated[simcuda:1]"]], ["test_second.py on cuda:0", 100, ["test_d[cuda:0]"]]]


# Each test waits (at most 30 s) for the other to have begun: they pass only if they run at the same time.
MEETS = """
import os, pathlib, time
import pytest

from conftest import OUT


def meet(mine, theirs):
    (OUT / mine).write_text(f"{{os.getpid()}} {{time.time()!r}}")
    deadline = time.monotonic() + 30
    while not (OUT / theirs).exists():
        assert time.monotonic() < deadline, f"{{theirs}} never began beside {{mine}}"
        time.sleep(0.05)


@pytest.mark.isolated_on_gpu(timeout=60)
@pytest.mark.parametrize("device", ["cuda:0"])
def test_on_the_gpu(device):
    import torch
    assert torch.get_num_threads() == 2  # the run's own (OMP_NUM_THREADS)
    meet("gpu-began", "simulated-began")


@pytest.mark.simulable
@pytest.mark.parametrize("device", ["simcuda:1"], indirect=True)
def test_simulated(device):
    import torch
    assert device == "cuda:1" and torch.get_num_threads() == 1  # the cores stay with the GPU child's race
    meet("simulated-began", "gpu-began")
    time.sleep(0.5)
"""


def test_the_simulated_child_runs_its_tests_while_a_gpu_child_runs_its_own(harness, gpus, tmp_path: Path, monkeypatch) -> None:
    """The simulated test runs in a process of its own, not the session's, on one torch thread,
    while the GPU child's test runs: it waits for no turn. The run's time by phase names that
    child apart."""
    gpus(1)
    monkeypatch.setattr(devices_plugin, "usable_cores", lambda: 16)
    monkeypatch.setattr(environment, "gpu_facts", lambda: [])  # the faked GPU has no name to read
    monkeypatch.setenv("OMP_NUM_THREADS", "2")  # the children's torch threads, where the simulated one takes one
    harness.makeconftest(f"pytest_plugins = {list(HARNESS_PLUGINS)!r}\n" + TURN_CONFTEST.format(out=str(tmp_path)))
    harness.mkdir("suites")
    harness.makepyfile(**{"suites/test_meets": MEETS.format()})
    reports = tmp_path / "reports"
    result = harness.runpytest("suites", "-p", "no:cacheprovider", "--strict-config", f"--report-dir={reports}")
    result.assert_outcomes(passed=2)
    simulated_pid, gpu_pid = ((tmp_path / name).read_text().split()[0] for name in ("simulated-began", "gpu-began"))
    assert len({int(simulated_pid), int(gpu_pid), os.getpid()}) == 3
    children = json.loads((reports / "results.json").read_text())["timings"]["isolated_children"]
    assert (children["count"], children["at_once"]) == (2, 2), children
    assert 0.5 <= children["simulated_child"]["tests_s"] < children["simulated_child"]["wall_s"] <= children["wall_s"], children
