"""The known_bug marker end to end: pytest outcomes agree with the verdicts, and bad input is a
one-line error. The registry here ties fake bugs to the installed pytest, so "affected" is known."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ENTRY = """
[{bug_id}]
title = "a fake bug of pytest"
package = "pytest"
affected = "{affected}"
first_fixed = "999"
issue = "https://example.invalid/issues/1"
fix = "https://example.invalid/pull/2"
kind = "{kind}"
symptom_device = "cuda"
"""

# The installed pytest is inside ">=1" and outside "<1".
REGISTRY = "".join(
    ENTRY.format(bug_id=bug_id, affected=affected, kind=kind)
    for bug_id, affected, kind in [
        ("affected-det", ">=1", "deterministic"),
        ("fixed-det", "<1", "deterministic"),
        ("affected-race", ">=1", "race"),
    ]
)

TESTS = """
import pytest
from fixtures.known_bugs.outcomes import BugObserved, Inconclusive

SEEN = {seen}

@pytest.mark.known_bug("{bug_id}", evidence="proxy")
def test_proxy():
    if SEEN:
        raise BugObserved("the root cause is there")

@pytest.mark.known_bug("{bug_id}")
def test_direct_on_cpu_is_a_control(device):
    pass
"""


@pytest.fixture
def registry(tmp_path: Path) -> Path:
    path = tmp_path / "bugs.toml"
    path.write_text(REGISTRY)
    return path


def run(harness, registry: Path, bug_id: str, seen: bool, *args: str):
    harness.makepyfile(TESTS.format(bug_id=bug_id, seen=seen))
    return harness.runpytest(f"--bug-registry={registry}", "--device", "cpu", "-rxXs", *args)


@pytest.mark.parametrize(("simulable", "row"), [("true", "sim-det*reproduced*simulated*"), ("false", "sim-det*error*1 test(s) errored*")])
def test_under_pytest_simcuda_a_cuda_test_is_never_direct(harness, tmp_path: Path, simulable: str, row: str) -> None:
    """`pytest --simcuda` simulates cuda:1 on a CPU machine: the sighting read `reproduced direct`.
    On a bug the simulation can show it is simulated; on another a control, whose firing oracle is an error."""
    registry = tmp_path / "bugs.toml"
    registry.write_text(ENTRY.format(bug_id="sim-det", affected=">=1", kind="deterministic") + f"simulable = {simulable}\n")
    harness.makepyfile(
        """
        from fixtures.known_bugs.outcomes import BugObserved
        import pytest

        @pytest.mark.known_bug("sim-det")
        def test_direct(device):
            raise BugObserved("seen on " + device)
        """
    )
    result = harness.runpytest(f"--bug-registry={registry}", "--simcuda", "--device", "cuda:1", f"--report-dir={tmp_path / 'out'}")
    result.stdout.fnmatch_lines([row])
    document = json.loads((tmp_path / "out" / "results.json").read_text())
    assert [test["properties"]["evidence"] for test in document["tests"]] == ["simulated" if simulable == "true" else "control"]


def test_collect_only_charges_no_bug_with_the_tests_it_did_not_run(harness, registry) -> None:
    """Collected and never run is how a crashed child's tests look, except under --collect-only."""
    result = run(harness, registry, "affected-det", True, "--collect-only")
    assert result.ret == 0 and "error" not in result.stdout.str()


def test_observed_on_an_affected_release_is_an_expected_reproduction(harness, registry) -> None:
    result = run(harness, registry, "affected-det", True)
    result.assert_outcomes(passed=1, xfailed=1)
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*affected-det reproduced as known on pytest * (proxy): the root cause is there*"])
    result.stdout.fnmatch_lines(["affected-det*reproduced*proxy*pytest*"])


def test_observed_on_a_fixed_release_is_a_regression_that_fails_the_run(harness, registry) -> None:
    result = run(harness, registry, "fixed-det", True)
    result.assert_outcomes(passed=1, failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["*REGRESSED fixed-det: a fake bug of pytest. Observed on pytest *, outside the affected range <1*fixed in 999*"]
    )
    result.stdout.fnmatch_lines(["fixed-det*regressed*proxy*"])


def test_not_observed_on_a_fixed_release_is_fixed(harness, registry) -> None:
    result = run(harness, registry, "fixed-det", False)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["fixed-det*fixed*proxy*"])


def test_deterministic_bug_missing_from_an_affected_release_means_a_stale_registry(harness, registry) -> None:
    result = run(harness, registry, "affected-det", False)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*NOT REPRODUCED affected-det: not observed on pytest *update [[]affected-det[]]*bugs.toml*"])


def test_race_that_did_not_trigger_is_reported_without_failing(harness, registry) -> None:
    result = run(harness, registry, "affected-race", False)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["affected-race*not-reproduced*proxy*"])


def test_inconclusive_is_neither_pass_nor_failure(harness, registry) -> None:
    harness.makepyfile(
        """
        import pytest
        from fixtures.known_bugs.outcomes import Inconclusive

        @pytest.mark.known_bug("fixed-det", evidence="proxy")
        def test_meta():
            raise Inconclusive("meta tensors have no data (.item())")
        """
    )
    result = harness.runpytest(f"--bug-registry={registry}", "-rs")
    result.assert_outcomes(skipped=1)
    # The verdict table comes last, after pytest's short summary, right above the final counts.
    result.stdout.fnmatch_lines([
        "SKIPPED*inconclusive: meta tensors have no data*",
        "*known-bug verdicts*",
        "bug*verdict*evidence*release*detail",
        "fixed-det*inconclusive*proxy*",
        "*1 skipped*",
    ])


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ('raise TypeError("a bug in the test, not the library")', "TypeError: a bug in the test, not the library"),
        # Only the oracle's BugObserved is a sighting; a bare assert in a test body is an error.
        ('assert 1 == 2, "a plain assert"', "AssertionError: a plain assert*"),
        # Hypothesis's several distinct failures, or a threaded test's: a sighting hides no error.
        (
            'raise ExceptionGroup("two examples", [BugObserved("seen again"), RuntimeError("boom")])',
            "RuntimeError: boom (beside a sighting: seen again)",
        ),
        ('pytest.xfail("flaky on this GPU")', "an xfail (mark or pytest.xfail()) on a known_bug test, whose outcome the harness decides: flaky*"),
    ],
)
def test_a_plain_error_is_an_error_verdict_that_fails_the_run(harness, registry, body: str, error: str) -> None:
    harness.makepyfile(
        f"""
        import pytest
        from fixtures.known_bugs.outcomes import BugObserved

        @pytest.mark.known_bug("affected-det", evidence="proxy")
        def test_sees_it():
            raise BugObserved("the root cause is there")

        @pytest.mark.known_bug("affected-det", evidence="proxy")
        def test_broken():
            {body}
        """
    )
    result = harness.runpytest(f"--bug-registry={registry}")
    result.assert_outcomes(failed=1, xfailed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([f"affected-det*error*1 test(s) errored: {error}", "*errored: *::test_broken"])


def test_an_xfail_mark_on_a_known_bug_test_hides_no_regression(harness, registry) -> None:
    """pytest's xfail counted the sighting on a fixed release as an expected failure (the verdict
    read `fixed`): the harness decides a known_bug test's outcome, an xfail of pytest's own is an error."""
    harness.makepyfile(
        """
        import pytest
        from fixtures.known_bugs.outcomes import BugObserved

        @pytest.mark.known_bug("fixed-det", evidence="proxy")
        @pytest.mark.xfail(reason="known to fail")
        def test_sees_it():
            raise BugObserved("the root cause is back")
        """
    )
    result = harness.runpytest(f"--bug-registry={registry}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["fixed-det*error*an xfail (mark or pytest.xfail()) on a known_bug test*known to fail"])


@pytest.mark.parametrize(
    ("mark", "body"),
    [
        ('xfail(strict=True, reason="known to fail")', "pass"),  # pytest: a strict XPASS, which has no wasxfail
        ('xfail(raises=ValueError, reason="known to fail")', 'raise BugObserved("the root cause is back")'),  # raises names another
    ],
    ids=["strict-xpass", "raises-another"],
)
def test_an_xfail_mark_pytest_did_not_apply_is_an_error_too(harness, registry, mark: str, body: str) -> None:
    """The verdict read `fixed` for the strict XPASS and `regressed` for the other, while pytest
    showed both failed: the mark itself is the error, whatever pytest made of it."""
    harness.makepyfile(
        f"""
        import pytest
        from fixtures.known_bugs.outcomes import BugObserved

        @pytest.mark.known_bug("fixed-det", evidence="proxy")
        @pytest.mark.{mark}
        def test_marked():
            {body}
        """
    )
    result = harness.runpytest(f"--bug-registry={registry}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["fixed-det*error*an xfail (mark or pytest.xfail()) on a known_bug test*an xfail mark"])


@pytest.mark.parametrize(
    ("marks", "body", "outcome", "row"),
    [
        ('@pytest.mark.skip(reason="no GPU")\n@pytest.mark.xfail', "pass", {"skipped": 1}, "fixed-det*skipped*no GPU*"),
        ("@pytest.mark.xfail", 'pytest.skip("no GPU")', {"skipped": 1}, "fixed-det*skipped*no GPU*"),
        ('@pytest.mark.xfail(False, reason="not here")', "pass", {"passed": 1}, "fixed-det*fixed*"),
    ],
    ids=["skip-mark", "skip-call", "condition-false"],
)
def test_an_xfail_mark_pytest_did_not_apply_leaves_the_outcome(harness, registry, marks: str, body: str, outcome: dict, row: str) -> None:
    """A skip is a skip and a mark whose condition is false changes nothing: neither is an error."""
    harness.makepyfile(
        f"""
        import pytest

        @pytest.mark.known_bug("fixed-det", evidence="proxy")
        {marks.replace(chr(10), chr(10) + "        ")}
        def test_marked():
            {body}
        """
    )
    result = harness.runpytest(f"--bug-registry={registry}", "-rs")
    result.assert_outcomes(**outcome)
    result.stdout.fnmatch_lines([row])
    assert result.ret == 0


@pytest.mark.parametrize("phase", ["setup", "teardown"])
def test_a_fixture_error_is_an_error_verdict(harness, registry, phase: str) -> None:
    harness.makepyfile(
        f"""
        import pytest

        @pytest.fixture
        def broken():
            if "{phase}" == "setup":
                raise OSError("no such dataset")
            yield
            raise OSError("no such dataset")

        @pytest.mark.known_bug("fixed-det", evidence="proxy")
        def test_uses_it(broken):
            pass
        """
    )
    result = harness.runpytest(f"--bug-registry={registry}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([f"fixed-det*error*1 test(s) errored: {phase}: OSError: no such dataset"])


@pytest.fixture
def absent_registry(tmp_path: Path) -> Path:
    """A registry whose one bug belongs to a package that is not installed."""
    path = tmp_path / "absent.toml"
    path.write_text(
        ENTRY.format(bug_id="absent-det", affected=">=1", kind="deterministic").replace(
            'package = "pytest"', 'package = "no-such-distribution-for-the-harness"'
        )
    )
    return path


def test_no_package_no_verdict_and_a_stand_in_is_a_control(harness, absent_registry: Path) -> None:
    harness.makepyfile(
        """
        import pytest

        @pytest.mark.known_bug("absent-det", evidence="proxy")
        def test_needs_the_package():
            pytest.skip("the package is not installed")

        @pytest.mark.known_bug("absent-det")
        def test_runs_the_stand_in(as_control):
            as_control("the harness's stand-in for the package")
        """
    )
    result = harness.runpytest(f"--bug-registry={absent_registry}", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    assert result.ret == 0
    result.stdout.fnmatch_lines(["absent-det*skipped*-*(not installed)*no-such-distribution-for-the-harness not installed"])


def test_a_test_that_concludes_without_its_package_is_an_error(harness, absent_registry: Path) -> None:
    harness.makepyfile(
        """
        import pytest

        @pytest.mark.known_bug("absent-det", evidence="proxy")
        def test_forgot_as_control():
            pass
        """
    )
    result = harness.runpytest(f"--bug-registry={absent_registry}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*ERROR absent-det: this test ran to a conclusion but * not installed*as_control*"])
    result.stdout.fnmatch_lines(["absent-det*error*"])


def test_a_control_that_fires_is_an_error(harness, registry) -> None:
    harness.makepyfile(
        """
        import pytest
        from fixtures.known_bugs.outcomes import BugObserved

        @pytest.mark.known_bug("fixed-det")
        def test_direct(device):
            raise BugObserved("seen on cpu")
        """
    )
    result = harness.runpytest(f"--bug-registry={registry}", "--device", "cpu")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*CONTROL FIRED fixed-det*", "fixed-det*error*1 test(s) errored: seen on cpu"])


def test_a_direct_test_naming_no_device_decides_nothing_for_a_cuda_symptom(harness, registry) -> None:
    """It ran wherever the machine put it (here a CPU): a control, never `fixed direct`; one marked
    min_cuda_devices runs only where CUDA devices are, and skips here."""
    harness.makepyfile(
        """
        import pytest

        @pytest.mark.known_bug("fixed-det")
        def test_direct_without_a_device():
            pass

        @pytest.mark.known_bug("fixed-det")
        @pytest.mark.min_cuda_devices(2)
        def test_on_two_gpus():
            pass
        """
    )
    result = harness.runpytest(f"--bug-registry={registry}", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["fixed-det*skipped*needs 2 CUDA devices*; 1 control(s) ran: they check the oracle and decide nothing"])


def test_mixed_evidence_is_a_sighting_naming_both_sets(harness, registry) -> None:
    harness.makepyfile(
        """
        import pytest
        from fixtures.known_bugs.outcomes import BugObserved, Inconclusive

        @pytest.mark.known_bug("fixed-det", evidence="proxy")
        @pytest.mark.parametrize("case", ["seen", "clean", "meta"])
        def test_proxy(case):
            if case == "seen":
                raise BugObserved("the root cause is there")
            if case == "meta":
                raise Inconclusive("meta cannot run it")
        """
    )
    result = harness.runpytest(f"--bug-registry={registry}", "-rs")
    result.assert_outcomes(passed=1, failed=1, skipped=1)
    result.stdout.fnmatch_lines(
        ["fixed-det*regressed*proxy*the root cause is there; observed in test_proxy[[]seen[]]; "
         "not observed in test_proxy[[]clean[]]; inconclusive in test_proxy[[]meta[]]"]
    )


PROBE = """
def says_fix_absent():
    return False
"""


def test_a_disagreeing_probe_never_reads_reproduced(harness, tmp_path: Path) -> None:
    """A release past first_fixed whose probe says the old code is back: the version decides,
    a sighting is a regression, and both facts are in the message."""
    harness.makepyfile(probe_module=PROBE)
    harness.syspathinsert()
    registry = tmp_path / "probed.toml"
    registry.write_text(ENTRY.format(bug_id="probed", affected="<1", kind="deterministic") + 'probe = "probe_module:says_fix_absent"\n')
    harness.makepyfile(TESTS.format(bug_id="probed", seen=True))
    result = harness.runpytest(f"--bug-registry={registry}", "--device", "cpu")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["*REGRESSED probed: * (decided by version *; probe probe_module:says_fix_absent says the fix is absent, against version *)*"]
    )
    result.stdout.no_fnmatch_line("*reproduced as known*")


def test_bug_option_selects_that_bugs_tests(harness, registry) -> None:
    harness.makepyfile(
        """
        import pytest

        @pytest.mark.known_bug("fixed-det", evidence="proxy")
        def test_a():
            pass

        @pytest.mark.known_bug("affected-race", evidence="proxy")
        def test_b():
            pass

        def test_untied():
            pass
        """
    )
    result = harness.runpytest(f"--bug-registry={registry}", "--bug", "fixed-det", "-v")
    result.assert_outcomes(passed=1, deselected=2)
    result.stdout.fnmatch_lines(["*test_a PASSED*"])


@pytest.mark.parametrize("listing", [(), ("--list-bugs",)], ids=["run", "--list-bugs"])  # --list-bugs exited 0
def test_unknown_bug_option_is_a_one_line_usage_error(harness, registry, listing: tuple[str, ...]) -> None:
    harness.makepyfile("def test_x():\n    pass\n")
    result = harness.runpytest(f"--bug-registry={registry}", "--bug", "nope-1", *listing)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    (result.stdout if listing else result.stderr).fnmatch_lines(
        ["ERROR: --bug: unknown bug id(s) nope-1; known: affected-det, fixed-det, affected-race"]
    )


def test_unknown_marker_id_is_a_collection_error_naming_test_and_registry(harness, registry) -> None:
    harness.makepyfile('import pytest\n\n@pytest.mark.known_bug("nope-2")\ndef test_x():\n    pass\n')
    result = harness.runpytest(f"--bug-registry={registry}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: *::test_x: known_bug('nope-2') is not in {registry}*"])


def test_broken_registry_stops_the_run_with_its_path(harness, tmp_path: Path) -> None:
    broken = tmp_path / "broken.toml"
    broken.write_text(REGISTRY.replace('kind = "race"', 'kind = "sometimes"'))
    harness.makepyfile("def test_x():\n    pass\n")
    result = harness.runpytest(f"--bug-registry={broken}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --bug-registry: {broken}: [[]affected-race[]]: kind = 'sometimes'*"])


def test_list_bugs_prints_what_each_outcome_would_mean(harness, registry) -> None:
    result = harness.runpytest(f"--bug-registry={registry}", "--list-bugs")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["affected-det*pytest*>=1*reproduced*not-reproduced*", "fixed-det*pytest*<1*regressed*fixed*"])


def test_list_bugs_says_not_affected_for_a_release_before_the_range(harness, tmp_path: Path) -> None:
    registry = tmp_path / "later.toml"
    registry.write_text(
        ENTRY.format(bug_id="later-det", affected=">=999,<1000", kind="deterministic").replace('first_fixed = "999"', 'first_fixed = "1000"')
    )
    result = harness.runpytest(f"--bug-registry={registry}", "--list-bugs")
    result.stdout.fnmatch_lines(["later-det*pytest*regressed*not-affected*below the affected range*"])


# A broken run reads `error`, never `skipped`; a module that skips whole explains its bug's verdict.

STOPPED_REGISTRY = REGISTRY + ENTRY.format(bug_id="fake-11", affected=">=1", kind="deterministic") + ENTRY.format(
    bug_id="fake-12", affected=">=1", kind="deterministic"
)
SUITE_TEST = """
import pytest
from fixtures.known_bugs.outcomes import BugObserved

@pytest.mark.known_bug("{bug_id}", evidence="proxy")
def test_proxy():
    raise BugObserved("seen")
"""


def suites_session(harness, tmp_path: Path, broken_module: str, *args: str):
    """Two bugs' suite folders, fake_11_one/ fine and fake_12_two/ holding `broken_module`."""
    registry = tmp_path / "stopped.toml"
    registry.write_text(STOPPED_REGISTRY)
    (harness.path / "suites" / "fake_11_one").mkdir(parents=True, exist_ok=True)
    (harness.path / "suites" / "fake_11_one" / "test_one.py").write_text(SUITE_TEST.format(bug_id="fake-11"))
    (harness.path / "suites" / "fake_12_two").mkdir()
    (harness.path / "suites" / "fake_12_two" / "test_two.py").write_text(broken_module)
    return harness.runpytest(
        f"--bug-registry={registry}", "--bug=fake-11", "--bug=fake-12", "--device", "cpu",
        f"--report-dir={tmp_path / 'out'}", "suites", *args,
    )


def test_a_module_that_fails_to_collect_makes_every_bug_whose_tests_did_not_run_an_error(harness, tmp_path: Path) -> None:
    result = suites_session(harness, tmp_path, "from no_such_library import SomeClass\n")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines([
        "*known-bug verdicts*",
        (
            "fake-11*error*the session stopped before this bug's tests all ran: 1 error(s) during collection: "
            "suites/fake_12_two/test_two.py: ModuleNotFoundError: No module named 'no_such_library'"
        ),
        "fake-12*error*collection error: ModuleNotFoundError: No module named 'no_such_library'",  # its own error names more
    ])
    document = json.loads((tmp_path / "out" / "results.json").read_text())
    assert {v["bug_id"]: v["verdict"] for v in document["verdicts"]} == {"fake-11": "error", "fake-12": "error"}
    assert {t["nodeid"]: t["outcome"] for t in document["tests"]} == {"suites/fake_12_two/test_two.py": "error"}
    page = (tmp_path / "out" / "report.html").read_text()
    assert page.count('class="verdict-row verdict-error"') == 2 and "the session stopped before this bug" in page


def test_with_collection_errors_let_through_only_the_broken_suites_bug_is_an_error(harness, tmp_path: Path) -> None:
    result = suites_session(harness, tmp_path, "from no_such_library import SomeClass\n", "--continue-on-collection-errors")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["fake-11*reproduced*proxy*", "fake-12*error*collection error: *No module named 'no_such_library'*"])


def test_a_module_skipped_whole_gives_its_reason_to_its_bug_and_to_results_json(harness, tmp_path: Path) -> None:
    skipped = 'import pytest\npytest.skip("pytest 9 has no pytest.Thing (first shipped in 99)", allow_module_level=True)\n'
    result = suites_session(harness, tmp_path, skipped)
    assert result.ret == 0
    result.stdout.fnmatch_lines(["fake-11*reproduced*", "fake-12*skipped*-*pytest 9 has no pytest.Thing (first shipped in 99)"])
    document = json.loads((tmp_path / "out" / "results.json").read_text())
    assert [(t["outcome"], t["message"]) for t in document["tests"] if t["nodeid"].endswith("test_two.py")] == [
        ("skipped", "pytest 9 has no pytest.Thing (first shipped in 99)")
    ]


def test_a_run_stopped_by_x_charges_the_bugs_it_did_not_reach(harness, tmp_path: Path) -> None:
    failing_first = 'import pytest\n@pytest.mark.known_bug("fake-11", evidence="proxy")\ndef test_broken():\n    assert False, "broken"\n'
    (harness.path / "suites" / "fake_11_one").mkdir(parents=True)
    (harness.path / "suites" / "fake_11_one" / "test_0_first.py").write_text(failing_first)
    result = suites_session(harness, tmp_path, SUITE_TEST.format(bug_id="fake-12"), "-x")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "fake-11*error*1 test(s) errored*",
        "fake-12*error*the session stopped before this bug's tests all ran: stopping after 1 failures*",
    ])


def test_a_run_stopped_by_x_charges_no_bug_whose_tests_were_not_selected(harness, tmp_path: Path) -> None:
    """-k left fake-12 no test: the stop cut none of its tests, so it is skipped as without -x."""
    failing_first = 'import pytest\n@pytest.mark.known_bug("fake-11", evidence="proxy")\ndef test_broken():\n    assert False, "broken"\n'
    (harness.path / "suites" / "fake_11_one").mkdir(parents=True)
    (harness.path / "suites" / "fake_11_one" / "test_0_first.py").write_text(failing_first)
    result = suites_session(harness, tmp_path, SUITE_TEST.format(bug_id="fake-12"), "-x", "-k", "not test_two")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["fake-11*error*1 test(s) errored*", "fake-12*skipped*no test for this bug ran*"])


def test_a_run_interrupted_while_collecting_charges_every_bug(harness, tmp_path: Path) -> None:
    """Stopped before collection finished: no bug's tests are known to be all, none is skipped."""
    interrupt = '\nimport pytest\ndef pytest_collectstart(collector):\n    if collector.nodeid.endswith("test_two.py"):\n'
    interrupt += '        pytest.exit("stop", 2)\n'
    harness.makeconftest(harness.path.joinpath("conftest.py").read_text() + interrupt)
    result = suites_session(harness, tmp_path, SUITE_TEST.format(bug_id="fake-12"))
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["fake-11*error*the session stopped before*interrupted*", "fake-12*error*the session stopped before*interrupted*"])


FAILURE = 'import pytest\n@pytest.mark.known_bug("fake-12", evidence="proxy")\ndef test_broken():\n    assert False, "broken"\n'


def test_under_xdist_a_run_stopped_by_x_keeps_the_verdicts_of_bugs_whose_tests_all_ran(harness, tmp_path: Path) -> None:
    """The worker collects, the controller learns only node ids: their suite folders name the
    bugs, so fake-11, whose test reported before fake-12's failure stopped the run (one worker
    runs the files in order), keeps its verdict."""
    result = suites_session(harness, tmp_path, FAILURE, "-x", "-n", "1")
    assert result.ret == pytest.ExitCode.INTERRUPTED  # how pytest-xdist ends a run -x stopped
    result.stdout.fnmatch_lines(["fake-11*reproduced*proxy*", "fake-12*error*1 test(s) errored*"])


def test_an_internal_error_still_prints_the_verdict_table_every_bug_an_error(harness, tmp_path: Path) -> None:
    harness.makeconftest(
        harness.path.joinpath("conftest.py").read_text() + "\ndef pytest_runtestloop(session):\n    raise RuntimeError('a plugin broke')\n"
    )
    result = suites_session(harness, tmp_path, SUITE_TEST.format(bug_id="fake-12"))
    assert result.ret == pytest.ExitCode.INTERNAL_ERROR
    result.stdout.fnmatch_lines([
        "*known-bug verdicts*",
        "fake-11*error*an internal error of pytest or a plugin*",
        "fake-12*error*an internal error*",
    ])
    document = json.loads((tmp_path / "out" / "results.json").read_text())
    assert {v["verdict"] for v in document["verdicts"]} == {"error"}


# pytest's "no tests ran" (exit 5) where every selected bug was decided by its modules' skips
# (`pytest --bug kornia-2867` on kornia 0.7.1, which has no RandomJPEG): the verdicts pass the run.

PREDATED = ENTRY.format(bug_id="fake-13", affected=">=999,<1000", kind="deterministic").replace('first_fixed = "999"', 'first_fixed = "1000"')
INSIDE = ENTRY.format(bug_id="fake-13", affected=">=1", kind="deterministic")
ABSENT_API = 'import pytest\npytest.skip("pytest 9 has no pytest.Thing (first shipped in 999)", allow_module_level=True)\n'


@pytest.mark.parametrize(
    ("entry", "verdict", "status"),
    [(PREDATED, "not-affected", pytest.ExitCode.OK), (INSIDE, "skipped", pytest.ExitCode.NO_TESTS_COLLECTED)],
)
def test_a_run_its_module_skips_alone_decided_passes(harness, tmp_path: Path, entry: str, verdict: str, status: int) -> None:
    """Decided (a release before the code the suite imports): exit 0. Nothing decided (a skip inside
    the affected range says nothing): pytest's exit 5 stands."""
    registry = tmp_path / "skips.toml"
    registry.write_text(entry)
    (harness.path / "suites" / "fake_13_three").mkdir(parents=True)
    (harness.path / "suites" / "fake_13_three" / "test_three.py").write_text(ABSENT_API)
    result = harness.runpytest(f"--bug-registry={registry}", "--bug=fake-13", "--device", "cpu", "--no-reports", "suites")
    assert result.ret == status
    result.stdout.fnmatch_lines([f"fake-13*{verdict}*pytest 9 has no pytest.Thing (first shipped in 999)*"])
