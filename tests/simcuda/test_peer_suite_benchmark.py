"""bench/simcuda_peer_suite.py's arithmetic: what counts as a false alarm, a refusal or the test's
own CUDA skip, and which time of repeated runs counts (the figures the README quotes)."""

from __future__ import annotations

import pytest

from tests.conftest import REPO, load_script

bench = load_script(REPO / "bench" / "simcuda_peer_suite.py")


def test_only_tests_passing_on_cpu_are_compared_and_each_lands_in_one_bin() -> None:
    cpu = {"t.A::ok": bench.Outcome("passed", ""), "t.A::alarm": bench.Outcome("passed", ""), "t.A::refused": bench.Outcome("passed", ""),
           "t.A::own": bench.Outcome("passed", ""),
           "t.A::broken": bench.Outcome("failure", "boom")}
    sim = {"t.A::ok": bench.Outcome("passed", ""), "t.A::alarm": bench.Outcome("failure", "AssertionError: x"),
           "t.A::refused": bench.Outcome("skipped", "simulated CUDA cannot"),
           "t.A::own": bench.Outcome("skipped", "CPU only"), "t.A::broken": bench.Outcome("failure", "boom")}
    simcuda = {"results": {"t/A.py::refused": "refused", "t/A.py::ok": "passed"}, "refused_by_feature": {"CUDA graphs": 1}}
    result = bench.compare(cpu, sim, simcuda)
    assert result["passing_on_cpu"] == 4 and result["passed_on_both"] == 1
    assert result["failing_only_simulated"] == {"t.A::alarm": "AssertionError: x"}
    assert result["refused"] == 1 and result["skipped_by_the_test_on_cuda"] == {"t.A::own": "CPU only"}


def test_cuda_cases_only_the_simulated_run_runs_are_counted_apart() -> None:
    """torchvision's `cpu_and_cuda()` cases: the CPU run skips the cuda ones (or, under another
    device variable, has none); they are neither compared nor lost."""
    cpu = {"t.A::f[cpu]": bench.Outcome("passed", ""), "t.A::f[cuda]": bench.Outcome("skipped", "CUDA not available")}
    sim = {"t.A::f[cpu]": bench.Outcome("passed", ""), "t.A::f[cuda]": bench.Outcome("passed", ""),
           "t.A::g[cuda]": bench.Outcome("failure", "AssertionError: y"),
           "t.A::h[cuda]": bench.Outcome("skipped", "simulated CUDA cannot run this: nvJPEG"),
           "t.A::k[cuda]": bench.Outcome("skipped", "needs two GPUs")}
    simcuda = {"results": {"t/A.py::h[cuda]": "refused"}}
    result = bench.compare(cpu, sim, simcuda)
    assert (result["passing_on_cpu"], result["passed_on_both"]) == (1, 1)
    assert result["both_seconds"] == (0.0, 0.0)
    assert result["only_simulated_passed"] == 1 and result["only_simulated_failing"] == {"t.A::g[cuda]": "AssertionError: y"}
    assert result["only_simulated_refused"] == 1


def test_every_peer_of_the_table_names_its_commit_files_and_groups() -> None:
    for name in ("kornia", "timm", "torchvision"):
        peer = bench.load_peer(name)
        assert peer.commit and peer.export and peer.groups and all(peer.groups.values())


def test_an_unknown_peer_or_group_is_refused_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit, match="jax: not a peer of peer_suites.toml"):
        bench.main(["jax", "--repo", str(REPO)])
    with pytest.raises(SystemExit):
        bench.main(["kornia", "--repo", str(REPO), "--groups", "colour"])
    assert "--groups: colour: not a group of kornia" in capsys.readouterr().err


def test_the_both_sides_time_ratio_counts_only_tests_passed_on_both() -> None:
    cpu = {"t.A::f[cpu]": bench.Outcome("passed", "", 1.0), "t.A::g[cpu]": bench.Outcome("passed", "", 5.0)}
    sim = {"t.A::f[cpu]": bench.Outcome("passed", "", 1.5), "t.A::g[cpu]": bench.Outcome("failure", "x", 0.1),
           "t.A::f[cuda]": bench.Outcome("passed", "", 30.0)}
    assert bench.compare(cpu, sim, {})["both_seconds"] == (1.0, 1.5)


@pytest.mark.parametrize(("nodeid", "junit"), [("tests/a/b.py::T::f[x]", "tests.a.b.T::f[x]"), ("tests/c.py::g", "tests.c::g")])
def test_pytest_ids_are_read_in_junit_form(nodeid: str, junit: str) -> None:
    assert bench.junit_id(nodeid) == junit


def test_the_fastest_of_each_time_counts_over_repeats() -> None:
    timings = [bench.Timing(wall=30.0, cpu=20.0), bench.Timing(wall=25.0, cpu=22.0)]
    assert bench.fastest(timings) == bench.Timing(wall=25.0, cpu=20.0)


def test_no_runs_at_all_is_refused_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        bench.main(["kornia", "--repo", str(REPO), "--repeat", "0"])
    assert "--repeat: 0 runs; give 1 or more" in capsys.readouterr().err
