"""--device parsing, skip reasons, xdist pinning and isolated children's arithmetic (pure functions),
and the GPU children's turns (lock files)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from fixtures.devices.driver import driver_shortfall
from fixtures.devices.gpu_turns import (
    CHILDREN_AT_ONCE,
    SIMULATED_CHILD_MIN_CORES,
    child_timeouts,
    default_children_at_once,
    mark_ended,
    place_of,
    places_of,
    simulated_child_plan,
    wait_for_turn,
    write_order,
)
from fixtures.devices.gpus import (
    caller_visible_cuda_devices,
    gpu_for_new_worker,
    gpu_label,
    physical_gpu,
    xdist_worker_index,
)
from fixtures.devices.spec import (
    DeviceSpecError,
    body_device,
    cuda_slot_count,
    device_skip_reason,
    min_cuda_devices_skip_reason,
    parse_device_spec,
    simulated_index,
)
from tests.conftest import REPO


@pytest.mark.parametrize(
    ("spec", "slots", "expected"),
    [
        ("cpu", 2, ["cpu"]),
        ("all", 2, ["cpu", "cuda:0", "cuda:1", "simcuda:0", "simcuda:1"]),
        ("all", 4, ["cpu", "cuda:0", "cuda:1", "cuda:2", "cuda:3", "simcuda:0", "simcuda:1"]),
        ("sim", 2, ["simcuda:0", "simcuda:1"]),
        ("simcuda:1", 2, ["simcuda:1"]),
        ("cpu,SIMCUDA:01,sim", 2, ["cpu", "simcuda:1", "simcuda:0"]),
        ("cuda", 2, ["cuda:0", "cuda:1"]),
        ("cuda:1", 2, ["cuda:1"]),
        ("cuda:3", 2, ["cuda:3"]),
        (" CPU , cuda:01 ", 2, ["cpu", "cuda:1"]),
        ("cpu,cuda,cuda:0,cpu", 2, ["cpu", "cuda:0", "cuda:1"]),
    ],
)
def test_parse_device_spec(spec: str, slots: int, expected: list[str]) -> None:
    assert parse_device_spec(spec, slots) == expected


@pytest.mark.parametrize(
    "spec", ["gpu7", "cuda:", "cuda:-1", "cuda:x", "mps", "", " , ", "cpu;cuda", "simcuda", "simcuda:x", "sim:1"]
)
def test_malformed_device_spec_is_an_error_naming_the_token(spec: str) -> None:
    with pytest.raises(DeviceSpecError, match="--device"):
        parse_device_spec(spec, 2)


@pytest.mark.parametrize("spec", ["cuda:128", "cuda:1000000", "cpu,cuda:99999999999999999999999"])
def test_a_cuda_index_beyond_torchs_names_its_range(spec: str) -> None:
    """torch keeps a device index in an int8; a larger one hung the expansion."""
    with pytest.raises(DeviceSpecError, match=r": a CUDA device index is 0 to 127"):
        parse_device_spec(spec, 2)


def test_a_simulated_index_beyond_the_simulation_names_its_range() -> None:
    with pytest.raises(DeviceSpecError, match=r"'simcuda:2': the simulated device has 2 CUDA devices \(simcuda:0 to simcuda:1\)"):
        parse_device_spec("cpu,simcuda:2", 2)


@pytest.mark.parametrize(
    ("device_name", "index", "in_body"),
    [("simcuda:0", 0, "cuda:0"), ("simcuda:1", 1, "cuda:1"), ("cuda:1", None, "cuda:1"), ("cpu", None, "cpu")],
)
def test_a_simulated_id_runs_its_body_on_the_cuda_device_it_stands_for(device_name: str, index, in_body: str) -> None:
    assert (simulated_index(device_name), body_device(device_name)) == (index, in_body)


def test_cuda_slots_never_hide_the_second_gpu() -> None:
    assert [cuda_slot_count(n) for n in (0, 1, 2, 3, 8)] == [2, 2, 2, 3, 8]


@pytest.mark.parametrize(
    ("device_name", "visible", "reason"),
    [
        ("cpu", 0, None),
        ("cuda:0", 1, None),
        ("cuda:0", 0, "cuda:0 requested, 0 CUDA devices visible"),
        ("cuda:1", 1, "cuda:1 requested, 1 CUDA device visible"),
        ("cuda:1", 2, None),
        ("simcuda:1", 0, None),  # the simulation needs no GPU
        ("simcuda:1", 1, None),  # beside a real cuda:0 only
        ("simcuda:0", 1, "simcuda:0: cuda:0 is a real GPU here, whose direct test decides; a simulated cuda:0 beside it "
                         "would share the library's per-device caches with it"),
    ],
)
def test_device_skip_reason(device_name: str, visible: int, reason: str | None) -> None:
    assert device_skip_reason(device_name, visible) == reason


def test_min_cuda_devices_skip_reason() -> None:
    assert min_cuda_devices_skip_reason(2, 1) == "needs 2 CUDA devices, 1 CUDA device visible"
    assert min_cuda_devices_skip_reason(2, 2) is None


@pytest.mark.parametrize(
    ("env", "count", "expected"),
    [
        (None, 0, []),
        (None, 3, ["0", "1", "2"]),
        ("", 4, []),
        ("2,3", 2, ["2", "3"]),
        ("GPU-8f1c,GPU-77aa", 2, ["GPU-8f1c", "GPU-77aa"]),
        (" 5 , 1 ,", 2, ["5", "1"]),
    ],
)
def test_caller_visible_cuda_devices(env: str | None, count: int, expected: list[str]) -> None:
    assert caller_visible_cuda_devices(env, count) == expected


def start_workers(visible: list[str], count: int) -> dict[str, str]:
    """What the controller hands gw0..gw{count-1}, started one after another."""
    held: dict[str, str] = {}
    for index in range(count):
        held[f"gw{index}"] = gpu_for_new_worker(visible, held, index)
    return held


def test_workers_pin_round_robin_over_the_callers_restricted_list() -> None:
    # The user restricted the job to physical GPUs 2 and 3: workers must stay inside that list.
    visible = caller_visible_cuda_devices("2,3", 2)
    assert list(start_workers(visible, 5).values()) == ["2", "3", "2", "3", "2"]


@pytest.mark.parametrize("crashed", ["gw0", "gw1"])
def test_a_crashed_workers_replacement_takes_its_gpu(crashed: str) -> None:
    held = start_workers(["0", "1"], 2)
    freed = held.pop(crashed)
    # xdist names the replacement gw2: index 2 % 2 would pick "0" whichever worker crashed.
    assert gpu_for_new_worker(["0", "1"], held, xdist_worker_index("gw2")) == freed
    held["gw2"] = freed
    assert sorted(held.values()) == ["0", "1"]


def test_replacements_fill_the_least_loaded_gpu_when_workers_outnumber_gpus() -> None:
    held = start_workers(["0", "1"], 4)  # gw0, gw2 on "0"; gw1, gw3 on "1"
    del held["gw3"]
    assert gpu_for_new_worker(["0", "1"], held, 4) == "1"


def test_no_gpu_no_pin() -> None:
    assert gpu_for_new_worker([], {}, 0) is None
    assert xdist_worker_index("master") is None


def test_physical_gpu_and_its_label() -> None:
    assert physical_gpu(["3"], 0) == "3"  # a worker pinned to physical GPU 3 calls it cuda:0
    assert physical_gpu(["GPU-aa", "GPU-bb"], 1) == "GPU-bb"
    assert physical_gpu([], 1) == "1"
    assert gpu_label("3", "NVIDIA H100", "5d3e") == "3: NVIDIA H100 (5d3e)"


@pytest.mark.parametrize(
    ("driver", "cuda", "says"),
    [
        ("580.65.06", "13.0", None),
        ("580.126.09", "13.2", None),
        (
            "550.54.15",
            "13.2",
            "NVIDIA driver 550.54.15 cannot run torch's CUDA 13.2 build (it needs 580 or newer): "
            "update the driver, or install torch built for CUDA 12 (the cu12x wheels)",
        ),
        ("525.60.13", "12.6", None),  # the first of CUDA 12's minor-version compatibility
        (
            "525.60.12",
            "12.6",
            "NVIDIA driver 525.60.12 cannot run torch's CUDA 12.6 build (it needs 525.60.13 or newer): "
            "update the driver, or install torch built for CUDA 11 (the cu11x wheels)",
        ),
        (
            "418.39",
            "12.1",
            "NVIDIA driver 418.39 cannot run torch's CUDA 12.1 build (it needs 525.60.13 or newer): "
            "update the driver, or no listed CUDA release runs on it",
        ),
        (None, "13.0", None),  # no NVIDIA driver: a CPU machine
        ("550.54.15", None, None),  # a CPU build of torch
        ("550.54.15", "10.2", None),  # a CUDA release the table does not list
        ("not a version", "13.0", None),
    ],
)
def test_driver_shortfall_names_driver_build_minimum_and_remedy(driver: str | None, cuda: str | None, says: str | None) -> None:
    assert driver_shortfall(driver, cuda) == says


@pytest.mark.parametrize(
    ("reason", "short"),
    [
        ("cuda:1 requested, 1 CUDA device visible", True),
        ("needs 2 CUDA devices, 1 CUDA device visible", True),
        ("cuda:3 requested, 2 CUDA devices visible", True),
        ("cuda:0 requested, 0 CUDA devices visible", False),  # a CPU machine: nothing was short
        ("needs 2 CUDA devices, 0 CUDA devices visible", False),
        ("pinning needs a CUDA device", False),
    ],
)
def test_too_few_gpus_reads_the_device_skip_reasons(reason: str, short: bool) -> None:
    from fixtures.devices.spec import too_few_gpus

    assert too_few_gpus(reason) is short


def test_too_few_gpus_reads_the_reasons_the_device_plugin_writes() -> None:
    from fixtures.devices.spec import device_skip_reason, min_cuda_devices_skip_reason, too_few_gpus

    assert too_few_gpus(device_skip_reason("cuda:1", 1) or "") and too_few_gpus(min_cuda_devices_skip_reason(2, 1) or "")
    assert not too_few_gpus(device_skip_reason("cuda:1", 0) or "")


@pytest.mark.parametrize(
    ("own", "at_once", "limits"),
    [
        ({"a on cuda:0": 300, "b on cuda:0": 100}, 1, {"a on cuda:0": 300, "b on cuda:0": 100}),
        ({"a on cuda:0": 300, "b on cuda:0": 100}, 2, {"a on cuda:0": 300, "b on cuda:0": 400}),
        ({"a on cuda:0": 300, "a on cuda:1": 300, "b on cuda:0": 100}, 2, {"a on cuda:0": 300, "a on cuda:1": 600, "b on cuda:0": 700}),
        ({"a on cuda:0": 300}, 2, {"a on cuda:0": 300}),
        ({}, 2, {}),
    ],
)
def test_a_child_beside_others_has_the_time_of_those_before_it_too(own: dict[str, int], at_once: int, limits: dict[str, int]) -> None:
    assert child_timeouts(own, at_once) == limits


# A child that holds place 0 until it exits, after telling the test it holds it; its exit handler
# runs for a while first (as CUDA's teardown does), then leaves a mark.
HOLDER = """
import atexit, pathlib, sys, time
from fixtures.devices.gpu_turns import claim_place

folder = pathlib.Path(sys.argv[1])
claim_place(folder, 0)
atexit.register(lambda: (time.sleep(0.5), (folder / "exit-handler-done").touch()))
print("held", flush=True)
time.sleep(0.5)
"""


def test_the_next_child_waits_for_every_child_before_it_to_end(tmp_path: Path) -> None:
    """Place 2 waits for place 0 (holding its place through its exit handlers) and place 1 (died
    before claiming its place: the parent marked it ended)."""
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path)], stdout=subprocess.PIPE, text=True, cwd=REPO)
    assert holder.stdout.readline() == "held\n"
    mark_ended(tmp_path, 1)
    begun = time.monotonic()
    wait_for_turn(tmp_path, 2, grace=30)
    assert (tmp_path / "exit-handler-done").exists()
    assert time.monotonic() - begun < 15  # place 1's mark spared the grace
    assert holder.wait(timeout=30) == 0
    wait_for_turn(tmp_path, 0)  # the first child waits for none


def test_a_child_before_that_never_claimed_its_place_is_waited_for_a_grace_only(tmp_path: Path) -> None:
    begun = time.monotonic()
    wait_for_turn(tmp_path, 1, grace=0.3)
    assert 0.3 <= time.monotonic() - begun < 5


def test_a_child_finds_its_place_by_its_node_ids(tmp_path: Path) -> None:
    write_order(tmp_path, places_of([["a.py::t[cuda:0]", "a.py::u[cuda:0]"], ["b.py::t[cuda:0]"]]))
    assert [place_of(tmp_path, ids) for ids in (["a.py::u[cuda:0]"], ["b.py::t[cuda:0]"], ["c.py::plain"])] == [0, 1, None]



@pytest.mark.parametrize(
    ("plain_isolated", "capture_off", "at_once"),
    [(False, False, CHILDREN_AT_ONCE), (True, False, 1), (False, True, 1), (True, True, 1)],
)
def test_children_run_one_after_the_other_beside_others_isolation_and_without_capture(plain_isolated: bool, capture_off: bool, at_once: int) -> None:
    assert default_children_at_once(plain_isolated, capture_off) == at_once


@pytest.mark.parametrize(
    ("given", "default", "cores", "simulated", "plan"),
    [
        (None, CHILDREN_AT_ONCE, SIMULATED_CHILD_MIN_CORES, True, (CHILDREN_AT_ONCE + 1, True)),
        (None, CHILDREN_AT_ONCE, SIMULATED_CHILD_MIN_CORES - 1, True, (CHILDREN_AT_ONCE, False)),
        (None, CHILDREN_AT_ONCE, 16, False, (CHILDREN_AT_ONCE, False)),
        (None, 1, 16, True, (1, False)),
        (CHILDREN_AT_ONCE, CHILDREN_AT_ONCE, 16, True, (CHILDREN_AT_ONCE, False)),
        (1, CHILDREN_AT_ONCE, 16, True, (1, False)),
        (CHILDREN_AT_ONCE + 1, CHILDREN_AT_ONCE, 16, True, (CHILDREN_AT_ONCE + 1, True)),
        (CHILDREN_AT_ONCE + 1, CHILDREN_AT_ONCE, 2, True, (CHILDREN_AT_ONCE + 1, False)),
        (CHILDREN_AT_ONCE + 1, 1, 16, True, (CHILDREN_AT_ONCE + 1, False)),
    ],
    ids=[
        "roomy", "few-cores", "no-simulated-tests", "one-after-the-other",
        "told-two", "told-one", "told-three", "told-three-few-cores", "told-three-one-after-the-other",
    ],
)
def test_the_simulated_tests_get_a_child_beside_the_gpu_children_only_with_room_for_a_third(given, default, cores, simulated, plan) -> None:
    """A third child on a machine with the cores: the default two side by side become three; a
    count the run gives is kept, and leaves room only if it is above two."""
    assert simulated_child_plan(given, default, cores, simulated) == plan
