"""The race record (fixtures/races/trials.toml): every row read again from the run it names, rows
checked as they load, and the pieces that make a row (the case without its device, the GPU model)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from fixtures.devices.gpus import gpu_model
from fixtures.known_bugs.listing import bug_listing
from fixtures.known_bugs.plugin import race_record_for
from fixtures.known_bugs.registry import load_registry
from fixtures.known_bugs.verdicts import Observation, bug_verdict
from fixtures.known_bugs.versions import AffectedStatus
from fixtures.races.miss import Hunt
from fixtures.races.record import (
    RecordError,
    Tally,
    Trial,
    case_of,
    load_record,
    pooled,
    record_summary,
    record_text,
    tallies,
    trials_from_results,
)
from tests.conftest import REPO

RACE_BUGS = {bug.id for bug in load_registry().values() if bug.kind == "race"}
RECORD = load_record()


@pytest.mark.parametrize("source", sorted({trial.source for trial in RECORD}))
def test_every_row_is_what_its_source_run_shows(source: str) -> None:
    document = json.loads((REPO / source).read_text(encoding="utf-8"))
    assert [trial for trial in RECORD if trial.source == source] == trials_from_results(document, source, RACE_BUGS)


def test_the_record_holds_only_real_gpu_runs_of_race_bugs() -> None:
    assert RECORD and {trial.bug for trial in RECORD} <= RACE_BUGS
    assert all(trial.source.startswith("reports/observed/") and "simcuda" not in trial.gpu for trial in RECORD)


def test_a_session_reads_the_rows_of_its_registrys_race_bugs() -> None:
    """A --bug-registry of other bugs (the self-tests' fakes) has no use for the rest."""
    registry = load_registry()
    assert race_record_for(registry, RECORD) == RECORD
    del registry["torchvision-9606"]
    registry["torchvision-9060"] = replace(registry["torchvision-9060"], kind="deterministic")
    assert {trial.bug for trial in race_record_for(registry, RECORD)} == {"torchvision-8587"}


ROW = {
    "bug": "torchvision-9606",
    "case": "suites/x.py::test_x",
    "gpu": "NVIDIA H200",
    "release": "0.26.0",
    "attempts": 5,
    "sightings": 1,
    "first_sighting": 5,
    "seed": 7,
    "source": "reports/observed/x/results.json",
}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"attempts": None}, "trial 1: missing: attempts"),
        ({"colour": "red"}, "trial 1: unknown: colour"),
        ({"gpu": ""}, "must be non-empty strings: gpu"),
        ({"attempts": 2.5}, "must be whole numbers, 0 or more: attempts"),
        ({"sightings": True}, "must be whole numbers, 0 or more: sightings"),
        ({"sightings": 6}, "6 sightings in 5 attempts"),
        ({"attempts": 0, "sightings": 0, "first_sighting": None}, "0 sightings in 0 attempts (need 1 or more attempts"),
        ({"first_sighting": None}, "first_sighting None does not fit 1 sightings in 5 attempts"),
        ({"first_sighting": 6}, "first_sighting 6 does not fit"),
        ({"sightings": 0}, "first_sighting 5 does not fit 0 sightings"),
        ({"attempts": None, "seed": None, "colour": "red"}, "trial 1: missing: attempts, seed; unknown: colour"),
        ({"gpu": "", "sightings": -1}, "trial 1: must be non-empty strings: gpu; must be whole numbers, 0 or more: sightings"),
    ],
)
def test_a_malformed_row_is_one_line_naming_it(tmp_path: Path, change: dict, message: str) -> None:
    row = {key: value for key, value in {**ROW, **change}.items() if value is not None}
    path = tmp_path / "trials.toml"
    path.write_text(record_text([]) + "[[trial]]\n" + "\n".join(f"{key} = {json.dumps(value)}" for key, value in row.items()) + "\n")
    with pytest.raises(RecordError, match=f"^{path}: .*{message.replace('(', '.').replace(')', '.')}") as raised:
        load_record(path)
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[trial]\n", "not valid TOML"),
        ("[other]\nx = 1\n", "unknown table\\(s\\) other;"),
        ("[other]\n[more]\n", "unknown table\\(s\\) more, other;"),
        ("trial = 3\n", "array of tables"),
        ("trial = [3]\n", "trial 1: must be a table of fields$"),
    ],
)
def test_a_malformed_file_is_one_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "trials.toml"
    path.write_text(text)
    with pytest.raises(RecordError, match=message):
        load_record(path)
    with pytest.raises(RecordError, match="cannot read the race record"):
        load_record(tmp_path / "absent.toml")


@pytest.mark.parametrize(
    "change",
    [
        {"attempts": 1, "sightings": 1, "first_sighting": 1},  # seen at once
        {"attempts": 1, "sightings": 0, "first_sighting": None},  # one clean attempt
        {"attempts": 3, "sightings": 3, "first_sighting": 1},  # three threads, each saw it
    ],
)
def test_a_row_at_the_edges_of_its_counts_loads(tmp_path: Path, change: dict) -> None:
    row = {key: value for key, value in {**ROW, **change}.items() if value is not None}
    path = tmp_path / "trials.toml"
    path.write_text("[[trial]]\n" + "\n".join(f"{key} = {json.dumps(value)}" for key, value in row.items()) + "\n")
    assert load_record(path) == (Trial(**row),)


def test_a_record_without_rows_is_empty(tmp_path: Path) -> None:
    path = tmp_path / "trials.toml"
    path.write_text(record_text([]))
    assert record_text([]) == "" and load_record(path) == ()


def test_rows_written_read_back_as_they_were(tmp_path: Path) -> None:
    path = tmp_path / "trials.toml"
    path.write_text(record_text(RECORD))
    assert load_record(path) == RECORD


@pytest.mark.parametrize(
    ("nodeid", "device_id", "case"),
    [
        ("s/t.py::test_x[cuda:0]", "cuda:0", "s/t.py::test_x"),
        ("s/t.py::test_x[cuda:1-threads8]", "cuda:1", "s/t.py::test_x[threads8]"),
        ("s/t.py::test_x[cpu-reduce-overhead]", "cpu", "s/t.py::test_x[reduce-overhead]"),
        ("s/t.py::test_x[single-cuda:0]", "cuda:0", "s/t.py::test_x[single]"),
        ("s/t.py::test_x[threads8]", None, "s/t.py::test_x[threads8]"),
        ("s/t.py::test_x", "cuda:0", "s/t.py::test_x"),
        ("s/t.py::test_x[threads8]", "cuda:0", "s/t.py::test_x[threads8]"),  # the device from a fixture, not an id
        ("s/t.py::TestX::test_x[cuda:0-big]", "cuda:0", "s/t.py::TestX::test_x[big]"),
        # Brackets in a folder's name, in an id of its own, "::" in an id: the ids begin at the
        # first bracket after the path.
        ("s/odd[1]/t.py::test_x[cuda:0-size[64]]", "cuda:0", "s/odd[1]/t.py::test_x[size[64]]"),
        ("s/odd[1]/t.py::test_x", "cuda:0", "s/odd[1]/t.py::test_x"),
        ("s/t.py::test_x[cuda:1-a::b]", "cuda:1", "s/t.py::test_x[a::b]"),
    ],
)
def test_a_case_is_its_test_without_the_device(nodeid: str, device_id: str | None, case: str) -> None:
    assert case_of(nodeid, device_id) == case


@pytest.mark.parametrize(
    ("label", "model"),
    [
        ("0: NVIDIA H200 (81127b78-cdb6-061d-7960-d89ea8bfb274)", "NVIDIA H200"),
        ("GPU-5d3e: NVIDIA H100 80GB HBM3 (GPU-5d3e)", "NVIDIA H100 80GB HBM3"),
        ("0: simcuda simulated GPU (no real GPU) (GPU-00)", "simcuda simulated GPU (no real GPU)"),
        (None, None),
        ("garbled", None),
    ],
)
def test_the_gpu_model_is_read_from_a_tests_gpu_property(label: str | None, model: str | None) -> None:
    assert gpu_model(label) == model


def document(properties: dict, simulated_runner: str | None = None) -> dict:
    return {
        "environment": {"simulated_runner": simulated_runner},
        "verdicts": [{"bug_id": "torchvision-9606", "installed": "0.26.0"}],
        "tests": [
            {
                "nodeid": "s/t.py::test_x[cuda:0]",
                "properties": {"known_bug": "torchvision-9606", "device": "cuda:0", "gpu": "0: G (u)", "seed": 3, **properties},
            }
        ],
    }


@pytest.mark.parametrize(
    ("properties", "attempts", "sightings", "first"),
    [
        ({"observation": "observed", "attempts": 5}, 5, 1, 5),
        ({"observation": "not-observed", "attempts": 40}, 40, 0, None),
        ({"observation": "observed", "attempts": 24, "sightings": 3}, 24, 3, 24),  # threads: one each
        ({"observation": "observed", "iterations": 4}, 5, 1, 5),  # written before attempts were counted
        ({"observation": "not-observed", "iterations": 3}, 3, 0, None),
    ],
)
def test_trials_are_read_from_a_runs_results(properties: dict, attempts: int, sightings: int, first: int | None) -> None:
    assert trials_from_results(document(properties), "r.json", {"torchvision-9606"}) == [
        Trial("torchvision-9606", "s/t.py::test_x", "G", "0.26.0", attempts, sightings, 3, "r.json", first)
    ]


@pytest.mark.parametrize(
    "properties",
    [
        {"observation": "inconclusive", "attempts": 1},
        {"observation": "not-observed"},
        {"observation": "error", "attempts": 2},
        {"observation": "not-observed", "attempts": 0},
    ],
)
def test_what_is_no_trial(properties: dict) -> None:
    """Refused, erred or uncounted hunts are no attempts at the race."""
    assert trials_from_results(document(properties), "r.json", {"torchvision-9606"}) == []


def test_a_run_that_recorded_no_tests_or_verdicts_holds_no_trials() -> None:
    assert trials_from_results({}, "r.json", {"torchvision-9606"}) == []
    assert trials_from_results({"verdicts": [], "tests": [{"nodeid": "s/t.py::test_x"}]}, "r.json", {"torchvision-9606"}) == []


def test_a_trial_keeps_its_seed_and_first_sighting_or_their_defaults() -> None:
    """Each test's own figures; a run before seeds were recorded ran seed 0, every default run's,
    and one before first sightings were saw it at its last attempt (the hunt stops there)."""
    seen_first = document({"observation": "observed", "attempts": 24, "sightings": 3, "first_sighting": 2})
    assert [trial.first_sighting for trial in trials_from_results(seen_first, "r.json", {"torchvision-9606"})] == [2]
    unseeded = document({"observation": "not-observed", "attempts": 4})
    del unseeded["tests"][0]["properties"]["seed"]
    assert [trial.seed for trial in trials_from_results(unseeded, "r.json", {"torchvision-9606"})] == [0]


def test_an_uncounted_test_is_skipped_not_the_end_of_the_run() -> None:
    run = document({"observation": "not-observed"})
    run["tests"].append({**run["tests"][0], "properties": {**run["tests"][0]["properties"], "attempts": 6}})
    assert [trial.attempts for trial in trials_from_results(run, "r.json", {"torchvision-9606"})] == [6]


def test_a_rehearsal_on_the_simulated_runner_is_never_a_trial() -> None:
    rehearsal = document({"observation": "not-observed", "attempts": 7}, simulated_runner="simulated 1-GPU runner: no real GPU")
    assert trials_from_results(rehearsal, "r.json", {"torchvision-9606"}) == []


def test_tallies_pool_runs_per_gpu_over_the_releases_that_have_the_bug() -> None:
    rows = [
        Trial("b", "c", "G", "1.0", 5, 1, 1, "s", 5),
        Trial("b", "c", "G", "1.0", 3, 0, 2, "s"),
        Trial("b", "c", "G", "2.0", 900, 0, 3, "s"),  # a fixed release: says nothing of the rate
        Trial("b", "c", "H", "1.0", 10, 2, 1, "s", 10),
        Trial("b", "other", "G", "1.0", 10, 10, 1, "s", 1),
        Trial("another bug", "c", "G", "1.0", 10, 10, 1, "s", 1),  # the same case of another bug's
    ]
    by_gpu = tallies(rows, "b", "c", lambda release: release == "1.0")
    assert by_gpu["G"] == pooled(rows[:2]) == pooled([rows[1], rows[0]]) == Tally("G", attempts=8, sightings=1, first_sighting=5)
    assert set(by_gpu) == {"G", "H"}
    assert pooled([]) is None


def test_replays_of_one_seed_count_every_attempt_and_their_sightings_once() -> None:
    """torchvision-9606 on the H200: three runs of one seed (5 attempts seen at the fifth, twice; 3
    clean) are 1 sighting in 13 attempts: each attempt drew the timing again, the inputs that
    showed it count once. Neither 1 in 5 (the luckiest run) nor 2 in 13."""
    replays = [Trial("b", "c", "G", "1.0", 5, 1, 7, "s", 5), Trial("b", "c", "G", "1.0", 3, 0, 7, "s"), Trial("b", "c", "G", "1.0", 5, 1, 7, "s", 5)]
    assert pooled(replays) == Tally("G", attempts=13, sightings=1, first_sighting=5)
    assert pooled([*replays, Trial("b", "c", "G", "1.0", 4, 2, 8, "s", 3)]) == Tally("G", attempts=17, sightings=3, first_sighting=5)


def test_a_longer_clean_replay_never_erases_a_sighting() -> None:
    """A default run on cuda:0 replays the seed of the record's 9606 sighting: 200 clean attempts
    after it lower the rate (1 in 205), they do not make the bug unseen on that GPU."""
    rows = [Trial("b", "c", "G", "1.0", 5, 1, 1230484511, "s", 5), Trial("b", "c", "G", "1.0", 200, 0, 1230484511, "s")]
    assert pooled(rows) == pooled(rows[::-1]) == Tally("G", attempts=205, sightings=1, first_sighting=5)


def test_the_latest_first_sighting_of_any_run_is_the_floor() -> None:
    """A run that needed 300 attempts keeps the floor at 300, though a longer clean replay of its
    seed and a quick sighting under another seed come after it."""
    rows = [
        Trial("b", "c", "G", "1.0", 300, 1, 1, "s", 300),
        Trial("b", "c", "G", "1.0", 301, 0, 1, "s"),
        Trial("b", "c", "G", "1.0", 100, 60, 2, "s", 1),
    ]
    assert pooled(rows) == Tally("G", attempts=701, sightings=61, first_sighting=300)
    alike = [Trial("b", "c", "G", "1.0", 24, 1, 7, "s", 20), Trial("b", "c", "G", "1.0", 24, 1, 7, "s", 9)]
    assert pooled(alike) == pooled(alike[::-1]) == Tally("G", attempts=48, sightings=1, first_sighting=20)


def test_the_summary_says_where_each_gpu_saw_the_bug_and_where_it_only_looked() -> None:
    rows = [
        Trial("b", "s/t.py::c1", "G", "1.0", 5, 1, 1, "s", 5),
        Trial("b", "s/t.py::c1", "G", "1.0", 3, 0, 1, "s"),  # the same seed again: its attempts count
        Trial("b", "s/t.py::c2", "G", "1.0", 8, 0, 2, "s"),
        Trial("b", "s/t.py::c1", "G", "2.0", 900, 0, 3, "s"),
        Trial("b", "s/t.py::c1", "H", "2.0", 40, 0, 4, "s"),
        Trial("other", "s/t.py::c1", "G", "1.0", 3, 3, 1, "s", 1),
    ]
    assert record_summary(rows, "b", lambda release: release == "1.0") == (
        "G: c1: 1 sighting in 8 attempts on 1.0, 2 runs of 1 seed; c2: no sightings in 8 attempts on 1.0; "
        "900 attempts in 1 case on 2.0, outside the affected range; H: 40 attempts in 1 case on 2.0, outside the affected range"
    )
    assert record_summary(rows, "none", lambda release: True) == "no GPU run recorded"


def test_the_summary_names_a_case_by_its_test_and_every_release() -> None:
    rows = [
        Trial("b", "s/t.py::TestX::c1", "G", "1.0", 5, 1, 1, "s", 5),
        Trial("b", "s/t.py::TestX::c1", "G", "1.1", 6, 0, 2, "s"),
        Trial("b", "s/t.py::TestX::c1", "G", "1.1", 2, 0, 2, "s"),
        Trial("b", "s/t.py::TestX::c1", "G", "2.0", 7, 0, 3, "s"),
        Trial("b", "s/t.py::TestX::c2", "G", "2.1", 8, 0, 3, "s"),
    ]
    assert record_summary(rows, "b", lambda release: release < "2") == (
        "G: c1: 1 sighting in 13 attempts on 1.0, 1.1, 3 runs of 2 seeds; 15 attempts in 2 cases on 2.0, 2.1, outside the affected range"
    )


def test_the_bug_listing_gives_each_race_bug_its_record() -> None:
    listing = bug_listing(load_registry(), RECORD)
    assert listing.count("race record (real GPUs): ") == len(RACE_BUGS)
    nine_six_oh_six = "NVIDIA H200: test_decode_after_caller_freed_memory: 4 sightings in 44 attempts on 0.26.0, 10 runs of 4 seeds"
    assert f"race record (real GPUs): {nine_six_oh_six}" in listing


MAIN_JOB = "reports/observed/2026-11-28-nvidia-h200/main/results.json"


def main_job_detail(bug_id: str) -> str:
    """The clean verdict's detail that run's hunts of `bug_id` give against the record as it stands
    (attempts as that run counted them: its clean iterations)."""
    document = json.loads((REPO / MAIN_JOB).read_text(encoding="utf-8"))
    clean = [
        (test["nodeid"], test["properties"])
        for test in document["tests"]
        if test["properties"].get("known_bug") == bug_id and test["properties"].get("observation") == "not-observed" and "[cuda:" in test["nodeid"]
    ]
    hunts = [
        Observation(nodeid, "direct", "not-observed", "", Hunt(case_of(nodeid, properties["device"]), "NVIDIA H200", properties["iterations"]))
        for nodeid, properties in clean
    ]
    return bug_verdict(load_registry()[bug_id], AffectedStatus(True, "0.26.0", "version 0.26.0"), hunts, RECORD).detail


@pytest.mark.parametrize("bug_id", ["torchvision-9606", "torchvision-9060"])
def test_the_docs_race_verdicts_are_what_the_h200_main_jobs_hunts_give(bug_id: str) -> None:
    """docs/explanation/race-verdicts.md's example lines, drawn again from that run's clean hunts."""
    line = f"{bug_id}  not-reproduced  direct  torchvision 0.26.0  {main_job_detail(bug_id)}"
    assert line in (REPO / "docs" / "explanation" / "race-verdicts.md").read_text(encoding="utf-8")


def test_the_readmes_race_example_is_what_the_h200_main_jobs_hunts_give() -> None:
    """The README quotes 9606's detail (wrapped over lines): the record as it stands gives it."""
    readme = " ".join((REPO / "README.md").read_text(encoding="utf-8").split())
    assert f"`{main_job_detail('torchvision-9606')}`" in readme
