"""bench/simcuda_peer_suite.py's own parts: its table of peers, its one-line refusals and which time
of repeated runs counts (the figures the README quotes). What counts as a false alarm, a refusal or
the test's own CUDA skip is reports/census/junit.py's, tested in tests/reporting/test_census.py."""

from __future__ import annotations

import pytest

from tests.conftest import REPO, load_script

bench = load_script(REPO / "bench" / "simcuda_peer_suite.py")


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


def test_the_fastest_of_each_time_counts_over_repeats() -> None:
    timings = [bench.Timing(wall=30.0, cpu=20.0), bench.Timing(wall=25.0, cpu=22.0)]
    assert bench.fastest(timings) == bench.Timing(wall=25.0, cpu=20.0)


def test_no_runs_at_all_is_refused_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        bench.main(["kornia", "--repo", str(REPO), "--repeat", "0"])
    assert "--repeat: 0 runs; give 1 or more" in capsys.readouterr().err
