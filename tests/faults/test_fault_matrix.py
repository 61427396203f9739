"""The fault x oracle matrix is complete and well-formed.

Completeness is checked by reading the source (tests/helpers/oracle_scan.py), not the collected items, so
`pytest tests -k ...` cannot hide an unproven oracle or a marker naming nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.fault_matrix import (
    CAUGHT,
    MAX_FAULT_WIDTH,
    MISSED,
    NOT_RUN,
    FaultRow,
    catches_refs,
    fault_name,
    function_of,
    render,
    summary,
    verdict,
)
from tests.helpers.oracle_scan import (
    all_oracles,
    broken_refs,
    catches_in_source,
    defined_functions,
    fault_tests,
    oracles_in_source,
    ref,
    ref_exists,
    split_ref,
    unproven_oracles,
)

REPO = Path(__file__).resolve().parents[2]


def test_every_suite_oracle_is_caught_by_a_fault_test() -> None:
    unproven = unproven_oracles(REPO)
    assert not unproven, "oracles no catches marker names (write a fault test for each):\n" + "\n".join(unproven)


def test_every_catches_ref_names_an_existing_function() -> None:
    assert fault_tests(REPO), "no catches markers found under tests/"
    broken = broken_refs(REPO)
    assert not broken, "catches markers naming no oracle, or no such file or function:\n" + "\n".join(broken)


def test_the_completeness_checks_fail_on_an_unproven_oracle_and_a_broken_ref(tmp_path: Path) -> None:
    (tmp_path / "suites" / "s").mkdir(parents=True)
    (tmp_path / "tests").mkdir()
    (tmp_path / "suites" / "s" / "oracle.py").write_text(ORACLE_SOURCE)
    (tmp_path / "tests" / "test_f.py").write_text(MARKED_SOURCE.replace("a.py::f", "suites/s/oracle.py::raises_it"))
    assert unproven_oracles(tmp_path) == [
        f"suites/s/oracle.py::{name}" for name in ("observes_it", "via_module", "nested_belongs_to_outer", "Checker.check")
    ]
    assert broken_refs(tmp_path) == ["tests/test_f.py::test_fault_two: b.py::g", "tests/test_f.py::test_fault_none: (none)"]


def test_catches_markers_sit_on_fault_tests_and_every_fault_test_has_one() -> None:
    """`pytest tests -k fault` selects every marked test, and every test_fault_* names its oracles."""
    marked = set(fault_tests(REPO))
    unnamed = sorted(test for test in marked if "fault" not in split_ref(test)[1])
    unmarked = sorted(
        ref(path.relative_to(REPO).as_posix(), name)
        for path in sorted((REPO / "tests").rglob("test_*.py"))
        for name in defined_functions(path.read_text())
        if name.startswith("test_fault_") and ref(path.relative_to(REPO).as_posix(), name) not in marked
    )
    assert not unnamed, f"catches markers on tests without 'fault' in their names: {unnamed}"
    assert not unmarked, f"test_fault_* without a catches marker: {unmarked}"


# --- the scanners, on small sources ---

ORACLE_SOURCE = '''
from fixtures.known_bugs.outcomes import BugObserved, observe
import fixtures.known_bugs.outcomes as outcomes

def raises_it(x):
    if x:
        raise BugObserved(f"saw {x}")

def observes_it(x):
    observe(x > 1, "big")

def via_module(x):
    outcomes.observe(x, "seen")

def nested_belongs_to_outer():
    def inner():
        raise BugObserved("inner")
    return inner

def plain_assert(x):
    assert x, "harness"

def catches_it():
    try:
        pass
    except BugObserved:
        raise

class Checker:
    def check(self, x):
        observe(x, "method")
'''


def test_scanner_finds_oracles_by_raise_and_observe() -> None:
    assert oracles_in_source(ORACLE_SOURCE) == [
        "raises_it",
        "observes_it",
        "via_module",
        "nested_belongs_to_outer",
        "Checker.check",
    ]


ESCAPES = {
    "aliased observe": "from fixtures.known_bugs.outcomes import observe\nsee = observe\n\ndef oracle(x):\n    see(x, 'seen')\n",
    "observe imported as": "from fixtures.known_bugs.outcomes import observe as see\n\ndef oracle(x):\n    see(x, 'seen')\n",
    "prebuilt finding": (
        "from fixtures.known_bugs.outcomes import BugObserved\nFOUND = BugObserved('seen')\n\n"
        "def oracle(x):\n    if x:\n        raise FOUND\n"
    ),
    "subclass": (
        "from fixtures.known_bugs.outcomes import BugObserved\n\nclass Stale(BugObserved):\n    pass\n\n"
        "def oracle(x):\n    if x:\n        raise Stale('seen')\n"
    ),
    "subclass of a subclass": (
        "from fixtures.known_bugs.outcomes import BugObserved\nclass A(BugObserved):\n    pass\nclass B(A):\n    pass\n\n"
        "def oracle(x):\n    raise B()\n"
    ),
    "lambda": "from fixtures.known_bugs.outcomes import observe\ncheck = lambda x: observe(x, 'seen')\n\ndef oracle(x):\n    check(x)\n",
    "lambda in a table": (
        "from fixtures.known_bugs.outcomes import observe\nCHECKS = {'a': lambda x: observe(x, 'seen')}\n\n"
        "def oracle(x):\n    CHECKS['a'](x)\n"
    ),
    "module attribute": "import fixtures.known_bugs.outcomes as o\n\ndef oracle(x):\n    o.observe(x, 'seen')\n",
    "proxy verdict": "from fixtures.proxies.meta_proxy import FINDING, ProxyResult\n\ndef oracle(x):\n    return ProxyResult(FINDING, 'seen')\n",
}


@pytest.mark.parametrize("source", ESCAPES.values(), ids=ESCAPES.keys())
def test_the_scanner_is_not_escaped_by_renaming_the_finding(source: str) -> None:
    assert oracles_in_source(source) == ["oracle"]


NOT_ORACLES = {
    "caught, not raised": (
        "from fixtures.known_bugs.outcomes import BugObserved\n\n"
        "def f():\n    try:\n        pass\n    except BugObserved:\n        return 1\n"
    ),
    "type test": (
        "from fixtures.known_bugs.outcomes import BugObserved\n\n"
        "def f(errors):\n    return [e for e in errors if isinstance(e, BugObserved)]\n"
    ),
    "reads a proxy verdict": "from fixtures.proxies.meta_proxy import FINDING\n\ndef f(result):\n    return result.kind == FINDING\n",
}


@pytest.mark.parametrize("source", NOT_ORACLES.values(), ids=NOT_ORACLES.keys())
def test_reading_a_finding_does_not_make_an_oracle(source: str) -> None:
    assert oracles_in_source(source) == []


def test_aliases_reach_across_modules_and_fixtures_proxies_count(tmp_path: Path) -> None:
    """A subclass defined in one suite file and raised in another; a fixtures/ function returning
    the proxy verdict; a proxy function a suite imports (it returns findings without raising)."""
    files = {
        "suites/s/findings.py": "from fixtures.known_bugs.outcomes import BugObserved\n\nclass Stale(BugObserved):\n    pass\n",
        "suites/s/test_a.py": "from .findings import Stale\nfrom fixtures.proxies.module_state import held\n\ndef test_a():\n    raise Stale()\n",
        "fixtures/proxies/meta_proxy.py": "FINDING = 'finding'\n\ndef classify(x):\n    return (FINDING, x)\n\ndef helper():\n    return 1\n",
        "fixtures/proxies/module_state.py": "def held(m):\n    return []\n\ndef unused(m):\n    return []\n",
        "fixtures/known_bugs/outcomes.py": (
            "class BugObserved(AssertionError):\n    pass\n\n"
            "def observe(x, d):\n    if x:\n        raise BugObserved(d)\n"
        ),
    }
    for path, source in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(source)
    assert sorted(all_oracles(tmp_path)) == [
        "fixtures/proxies/meta_proxy.py::classify",
        "fixtures/proxies/module_state.py::held",
        "suites/s/test_a.py::test_a",
    ]


MARKED_SOURCE = '''
import pytest

@pytest.mark.catches("a.py::f", "b.py::g")
@pytest.mark.parametrize("x", [1])
def test_fault_two(x):
    pass

@pytest.mark.catches()
def test_fault_none():
    pass

@pytest.mark.parametrize("x", [1])
def test_unmarked(x):
    pass
'''


def test_scanner_reads_catches_markers() -> None:
    assert catches_in_source(MARKED_SOURCE) == {"test_fault_two": ["a.py::f", "b.py::g"], "test_fault_none": []}


FORMS_SOURCE = '''
import pytest

ORACLE = "suites/s/oracle.py"
CHECK = f"{ORACLE}::check"
BOTH = (CHECK, ORACLE + "::other")
CATCHES_CHECK = pytest.mark.catches(CHECK)

@pytest.mark.catches(f"{ORACLE}::literal_f", CHECK, *BOTH)
def test_fault_forms():
    pass

@CATCHES_CHECK
def test_fault_marker_constant():
    pass

@pytest.mark.catches(oracle_named_at_run_time())
def test_fault_unreadable():
    pass
'''


def test_scanner_reads_every_ordinary_form_and_names_what_it_cannot() -> None:
    """A catches argument may be a literal, a module constant, an f-string or `+` of those, or a
    tuple of them unpacked; the marker itself may be a module constant. Anything else (a call) is
    given as unreadable, so the completeness checks fail naming it rather than skipping it."""
    assert catches_in_source(FORMS_SOURCE) == {
        "test_fault_forms": ["suites/s/oracle.py::literal_f", "suites/s/oracle.py::check", "suites/s/oracle.py::check", "suites/s/oracle.py::other"],
        "test_fault_marker_constant": ["suites/s/oracle.py::check"],
        "test_fault_unreadable": ["(unreadable: oracle_named_at_run_time())"],
    }


def test_catches_markers_in_any_folder_under_tests_are_read(tmp_path: Path) -> None:
    (tmp_path / "tests" / "faults" / "deeper").mkdir(parents=True)
    (tmp_path / "tests" / "faults" / "deeper" / "test_f.py").write_text(MARKED_SOURCE)
    assert set(fault_tests(tmp_path)) == {"tests/faults/deeper/test_f.py::test_fault_two", "tests/faults/deeper/test_f.py::test_fault_none"}


def test_ref_exists_needs_the_file_and_the_function() -> None:
    assert ref_exists(REPO, "tests/helpers/oracle_scan.py::ref_exists")
    assert not ref_exists(REPO, "tests/helpers/oracle_scan.py::no_such_function")
    assert not ref_exists(REPO, "tests/no_such_file.py::ref_exists")
    with pytest.raises(ValueError, match="path::function"):
        split_ref("tests/helpers/oracle_scan.py")


# --- the matrix rendering ---


def test_the_fault_is_the_test_name_humanised() -> None:
    assert fault_name("tests/t.py::test_fault_lost_metadata") == "lost metadata"
    assert fault_name("tests/t.py::test_fault_stripped_subclass[Mask]") == "stripped subclass [Mask]"
    assert fault_name("tests/t.py::Class::test_fault_x_y") == "x y"
    long = fault_name("tests/t.py::test_fault_wording[" + "x" * 100 + "]")
    assert len(long) == MAX_FAULT_WIDTH and long.startswith("wording [xxx") and long.endswith("x...")


@pytest.mark.parametrize(
    ("outcomes", "expected"),
    [
        (["passed", "passed", "passed"], CAUGHT),
        (["passed", "failed", "passed"], MISSED),
        (["failed"], MISSED),
        (["passed", "passed", "failed"], MISSED),
        (["skipped", "passed"], NOT_RUN),
    ],
)
def test_verdict_from_phase_outcomes(outcomes: list[str], expected: str) -> None:
    assert verdict(outcomes) == expected


def test_catches_refs_come_from_user_properties() -> None:
    assert catches_refs([("iterations", 3), ("catches", "a.py::f"), ("catches", "b.py::g")]) == ("a.py::f", "b.py::g")
    assert catches_refs([("iterations", 3)]) == ()


def test_render_lists_missed_first_one_oracle_per_line_and_counts() -> None:
    rows = [
        FaultRow("noise bytes", ("o.py::check",), CAUGHT),
        FaultRow("stale frame", ("o.py::check", "o.py::compare"), MISSED),
    ]
    assert render(rows) == [
        "verdict  fault        oracle",
        "missed   stale frame  o.py::check",
        "                      o.py::compare",
        "caught   noise bytes  o.py::check",
        "2 faults in 2 runs (parametrizations) against 2 oracles: 1 caught, 1 missed",
    ]


def test_render_prints_nothing_without_rows() -> None:
    assert render([]) == []


def test_summary_counts_tests_not_run_only_when_there_are_some() -> None:
    rows = [FaultRow("a", ("x::f",), NOT_RUN), FaultRow("b", ("x::f",), CAUGHT)]
    assert summary(rows) == "2 faults in 2 runs (parametrizations) against 1 oracles: 1 caught, 0 missed, 1 not run"


def test_summary_counts_a_parametrized_fault_once() -> None:
    rows = [
        FaultRow("stale [5%]", ("o.py::f",), CAUGHT, "t.py::test_fault_stale"),
        FaultRow("stale [20%]", ("o.py::f", "o.py::g"), CAUGHT, "t.py::test_fault_stale"),
        FaultRow("noise", ("o.py::f",), MISSED, "t.py::test_fault_noise"),
    ]
    assert summary(rows) == "2 faults in 3 runs (parametrizations) against 2 oracles: 2 caught, 1 missed"
    assert function_of("t.py::test_fault_stale[5%-(64, 64)]") == "t.py::test_fault_stale"
