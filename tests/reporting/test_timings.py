"""The run's time by phase (reports/run/timings.py): the process's age read from /proc, the phases'
arithmetic and words, and which runs report them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reports.run.timings import Durations, Timeline, phase_lines, phases, process_age, slowest_files

# /proc/self/stat of a process whose name holds a space and a parenthesis; field 22 (starttime) is 5000.
STAT = "4242 (py (thon) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 10 5 0 0 20 0 1 0 5000 1000 100 18446744073709551615"


def test_the_process_age_is_uptime_less_its_start() -> None:
    assert process_age(STAT, "123.50 400.00", 100) == pytest.approx(123.5 - 50.0)


def timeline() -> Timeline:
    line = Timeline(
        start_up=6.04, collection=4.41, children=3, children_at_once=2, children_wall=44.4, in_process_wall=34.5, cuda_start=1.25, cuda_starts=4
    )
    for nodeid, when, seconds, in_child in [
        ("s/a.py::t[cuda:0]", "setup", 1.0, True),
        ("s/a.py::t[cuda:0]", "call", 10.0, True),
        ("s/b.py::u", "setup", 6.0, False),
        ("s/b.py::u", "call", 22.0, False),
        ("s/c.py::v", "teardown", 2.0, False),
    ]:
        line.add_report(nodeid, when, seconds, in_child)
    return line


def test_the_phases_split_what_the_tests_took_from_what_their_processes_did() -> None:
    document = phases(timeline(), reports=0.24)
    assert document["start_up_s"] == 6.0 and document["collection_s"] == 4.4 and document["reports_s"] == 0.2
    assert document["isolated_children"] == {"count": 3, "at_once": 2, "wall_s": 44.4, "tests_s": 11.0, "process_start_and_exit_s": 33.4}
    assert document["tests_in_process"] == {"wall_s": 34.5, "setup_s": 6.0, "call_s": 22.0, "teardown_s": 2.0, "between_tests_s": 4.5}
    assert document["cuda_start"] == {"processes": 4, "s": 1.2}
    assert document["slowest_files"] == [{"file": "s/b.py", "s": 28.0}, {"file": "s/a.py", "s": 11.0}, {"file": "s/c.py", "s": 2.0}]
    json.dumps(document)  # results.json takes it as it is


def test_the_terminal_lines() -> None:
    first, files = phase_lines(phases(timeline(), reports=0.24))
    assert first == (
        "start-up 6.0 s, collection 4.4 s, 3 isolated child process(es) 44.4 s (2 at once, their tests 11.0 s, process start and exit 33.4 s), "
        "tests in process 34.5 s (setup 6.0, call 22.0, teardown 2.0, between tests 4.5), CUDA start 1.2 s in 4 process(es) "
        "(within the tests' setup), "
        "verdicts and reports 0.2 s"
    )
    assert files == "the slowest test files (setup, call and teardown): s/b.py 28.0 s; s/a.py 11.0 s; s/c.py 2.0 s"


def test_the_simulated_devices_child_is_timed_apart_from_the_children_taking_turns() -> None:
    """It runs beside them: its tests are not theirs, and their start and exit is counted over their
    own span (to their last report), not over the pool's, which the simulated child may outlast."""
    line = Timeline(collection=1.0, children=3, children_at_once=3, children_wall=40.0, in_process_wall=5.0)
    line.gpu_children_wall, line.simulated_child_wall = 30.0, 39.5
    line.add_report("s/gpu.py::t[cuda:0]", "call", 12.0, True)
    line.add_report("s/sim.py::t[simcuda:1]", "setup", 2.0, True, simulated_child=True)
    line.add_report("s/sim.py::t[simcuda:1]", "call", 20.0, True, simulated_child=True)
    document = phases(line)
    assert document["isolated_children"] == {
        "count": 3, "at_once": 3, "wall_s": 40.0, "tests_s": 12.0, "process_start_and_exit_s": 18.0, "gpu_children_wall_s": 30.0,
        "simulated_child": {"wall_s": 39.5, "tests_s": 22.0},
    }
    assert phase_lines(document)[0].startswith(
        "collection 1.0 s, 3 isolated child process(es) 40.0 s (3 at once, the GPU children 30.0 s: their tests 12.0 s, "
        "process start and exit 18.0 s; the simulated devices' child 39.5 s, its tests 22.0 s), tests in process 5.0 s"
    )


def test_what_a_cpu_run_leaves_out() -> None:
    """No children, no CUDA started, no /proc, no reports yet: none of them is named."""
    (line,) = phase_lines(phases(Timeline(collection=1.0, in_process_wall=2.0)))
    assert line == "collection 1.0 s, tests in process 2.0 s (setup 0.0, call 0.0, teardown 0.0, between tests 2.0)"


def test_slowest_files_ties_go_by_name() -> None:
    assert slowest_files({"b": 1.0, "a": 1.0, "c": 3.0}, count=2) == [("c", 3.0), ("a", 1.0)]
    assert Durations(1.0, 2.0, 3.0).total == 6.0


SUITE = """
def test_x(device):
    pass
"""


@pytest.mark.parametrize(("arguments", "reported"), [([], True), (["-n", "2"], False)])
def test_a_serial_run_of_the_suites_reports_its_phases(harness, tmp_path: Path, arguments: list[str], reported: bool) -> None:
    """Above the verdicts and in results.json; an xdist run's phases are its workers', left out."""
    harness.mkdir("suites")
    harness.makepyfile(**{"suites/test_x": SUITE})
    result = harness.runpytest_subprocess("suites", "--device", "cpu", f"--report-dir={tmp_path}", *arguments)
    result.assert_outcomes(passed=1)
    document = json.loads((tmp_path / "results.json").read_text())
    assert ("timings" in document) == reported
    assert ("time by phase" in result.stdout.str()) == reported
    if reported:
        assert document["timings"]["slowest_files"] == [{"file": "suites/test_x.py", "s": pytest.approx(0.0, abs=0.5)}]
        result.stdout.fnmatch_lines(["*= time by phase =*", "start-up * s, collection * s, tests in process * s (setup *"])
