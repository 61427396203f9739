"""python -m reports compare / matrix: the pure comparison and grid, and one-line errors."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

from reports.__main__ import main
from reports.across_runs.compare import OutcomeGroup, compare, comparison_html, comparison_text, exit_status, outcome_groups, outcome_lines
from reports.across_runs.matrix import matrix_columns, matrix_html, report_href
from tests.conftest import REPO
from tests.helpers import warm_python

ENVIRONMENT = {
    "packages": {"torch": "2.6.0", "torchvision": "0.21.0", "kornia": "0.7.1"},
    "gpus": [{"index": 0, "name": "NVIDIA A100", "memory_gib": 39.4, "capability": "8.0"}],
    "ci": {},
}


def verdict(bug_id: str, value: str, installed: str = "0.7.1") -> dict:
    return {
        "bug_id": bug_id, "verdict": value, "title": f"title of {bug_id}", "package": "kornia", "installed": installed,
        "evidence": "direct", "detail": "", "affected_range": "<0.7.2", "first_fixed": "0.7.2",
    }


def document(verdicts: dict[str, str], tests: dict[str, str], environment: dict = ENVIRONMENT) -> dict:
    return {
        "schema_version": 1,
        "environment": environment,
        "verdicts": [verdict(bug_id, value) for bug_id, value in verdicts.items()],
        "tests": [{"nodeid": nodeid, "outcome": outcome} for nodeid, outcome in tests.items()],
    }


OLD = document(
    {"a-1": "reproduced", "b-2": "reproduced", "c-3": "regressed", "gone-4": "fixed"},
    {"t::one": "xfailed", "t::two": "passed", "t::removed": "passed"},
)
NEW = document(
    {"a-1": "regressed", "b-2": "fixed", "c-3": "regressed", "new-5": "regressed"},
    {"t::one": "failed", "t::two": "passed", "t::added": "skipped"},
)


@pytest.mark.parametrize(
    ("old", "newly_fixed"),
    [
        ("reproduced", True), ("regressed", True), ("unplaced", True),
        # OLD never saw the bug: a release before it, a package not installed, a run that could not tell.
        ("not-affected", False), ("skipped", False), ("error", False), ("inconclusive", False),
        ("not-reproduced", False),  # a race OLD did not see within its budget
    ],
)
def test_newly_fixed_only_where_the_old_run_saw_the_bug(old: str, newly_fixed: bool) -> None:
    comparison = compare(document({"a-1": old}, {}), document({"a-1": "fixed"}, {}))
    assert bool(comparison.newly_fixed) is newly_fixed


def test_new_regressions_are_those_not_regressed_before() -> None:
    comparison = compare(OLD, NEW)
    assert [c.bug_id for c in comparison.new_regressions] == ["a-1", "new-5"]  # c-3 was regressed already
    assert [c.bug_id for c in comparison.newly_fixed] == ["b-2"]
    assert [(c.bug_id, c.old, c.new) for c in comparison.verdict_changes] == [
        ("a-1", "reproduced", "regressed"), ("b-2", "reproduced", "fixed"), ("new-5", None, "regressed"), ("gone-4", "fixed", None),
    ]
    assert exit_status(comparison) == 1


def test_a_new_error_fails_the_comparison_and_leads_the_page() -> None:
    comparison = compare(OLD, document({"a-1": "reproduced", "b-2": "error", "c-3": "regressed"}, {}))
    assert [c.bug_id for c in comparison.new_errors] == ["b-2"] and not comparison.new_regressions
    assert exit_status(comparison) == 1
    assert "NEW ERRORS: 1" in comparison_text(comparison, "a.json", "b.json")
    page = comparison_html(comparison, "a.json", "b.json")
    assert '<span class="verdict verdict-error">1 new error(s)</span>' in page and 'id="new-errors"' in page
    assert exit_status(compare(document({"b-2": "error"}, {}), document({"b-2": "error"}, {}))) == 0


@pytest.mark.parametrize(
    ("old", "new", "lost"),
    [
        # OLD decided the bug, NEW could not: a runner without its GPU, a package gone, a bug dropped.
        ("regressed", "skipped", True), ("reproduced", "inconclusive", True), ("fixed", None, True),
        ("not-affected", "skipped", True), ("not-reproduced", "inconclusive", True), ("unplaced", "skipped", True),
        # OLD decided nothing either, or NEW decided.
        ("skipped", "inconclusive", False), ("error", "skipped", False), (None, "skipped", False), ("inconclusive", "fixed", False),
    ],
)
def test_a_bug_old_decided_and_new_did_not_is_evidence_lost_exit_3(old: str | None, new: str | None, lost: bool) -> None:
    """A compare that lost its GPU turned an open regression into a green "no new regression"."""
    comparison = compare(document({"a-1": old} if old else {}, {}), document({"a-1": new} if new else {}, {}))
    assert bool(comparison.undecided_in_new) is lost
    assert exit_status(comparison) == (3 if lost else 0)
    text, page = comparison_text(comparison, "a.json", "b.json"), comparison_html(comparison, "a.json", "b.json")
    assert ("UNDECIDED IN NEW: 1" in text) is lost and ('id="undecided-in-new"' in page) is lost
    assert ("no new regression" in page) is not lost


def test_a_new_regression_outranks_evidence_lost() -> None:
    comparison = compare(document({"a-1": "reproduced", "b-2": "fixed"}, {}), document({"a-1": "regressed", "b-2": "skipped"}, {}))
    assert exit_status(comparison) == 1
    lines = comparison_text(comparison, "a.json", "b.json").splitlines()
    assert "a-1" in lines[3] and "b-2" in lines[4]


def test_a_new_unplaced_sighting_heads_the_text_and_the_page() -> None:
    comparison = compare(document({"a-1": "reproduced", "b-2": "fixed"}, {}), document({"a-1": "unplaced", "b-2": "skipped"}, {}))
    assert comparison_text(comparison, "a.json", "b.json").splitlines()[2] == (
        "verdict changes: 2; NEW REGRESSIONS: 0, NEW ERRORS: 0, NEW UNPLACED: 1, UNDECIDED IN NEW: 1, newly fixed: 0"
    )
    page = comparison_html(comparison, "a.json", "b.json")
    assert (
        '<p class="headline"><span class="verdict verdict-unplaced">1 new sighting(s) on an unplaced build</span> '
        '<span class="verdict verdict-inconclusive">1 bug(s) OLD decided and NEW did not</span></p>'
    ) in page
    assert "<h2>New errors" not in page and '<h2>Undecided in NEW (1)</h2><table class="harness-table" id="undecided-in-new">' in page


def test_the_page_shows_every_section_with_its_rows() -> None:
    page = comparison_html(compare(OLD, NEW), "old.json", "new.json")
    assert "<title>What changed between two runs</title>" in page
    assert (
        '<p class="headline"><span class="verdict verdict-regressed">2 new regression(s)</span> '
        '<span class="verdict verdict-inconclusive">1 bug(s) OLD decided and NEW did not</span></p>'
    ) in page
    assert "<h2>New errors" not in page and "<h2>Newly fixed (1)</h2>" in page
    assert "<tr><th>old</th><td><code>old.json</code></td>" in page and "<tr><th>new</th><td><code>new.json</code></td>" in page
    rows = {
        "newly-fixed": 'data-bug="b-2"', "verdict-changes": 'data-bug="gone-4"', "tests-added": "<li><code>t::added</code></li>",
        "outcome-changes": "<li><code>t::one: xfailed -&gt; failed</code></li>", "tests-removed": "<li><code>t::removed</code></li>",
    }
    for css_id, row in rows.items():
        assert row in section(page, css_id), css_id
    calm = comparison_html(compare(NEW, NEW), "a.json", "b.json")
    assert '<p class="headline"><span class="verdict verdict-fixed">no new regression</span></p>' in calm


def section(page: str, css_id: str) -> str:
    """The page from the element with this id up to the next heading."""
    start = page.index(f'id="{css_id}"')
    end = page.find("<h2>", start)
    return page[start : end if end != -1 else len(page)]


def test_tests_added_removed_and_changed() -> None:
    comparison = compare(OLD, NEW)
    assert comparison.tests_added == ("t::added",) and comparison.tests_removed == ("t::removed",)
    assert [(c.nodeid, c.old, c.new) for c in comparison.outcome_changes] == [("t::one", "xfailed", "failed")]


def test_same_run_twice_changes_nothing_and_exits_zero() -> None:
    comparison = compare(NEW, NEW)
    assert comparison.verdict_changes == () == comparison.tests_added == comparison.outcome_changes
    assert exit_status(comparison) == 0
    assert "NEW REGRESSIONS: 0" in comparison_text(comparison, "a.json", "b.json")
    assert "no new regression" in comparison_html(comparison, "a.json", "b.json")


def test_text_and_page_lead_with_the_regressions() -> None:
    comparison = compare(OLD, NEW)
    text = comparison_text(comparison, "old.json", "new.json")
    assert text.splitlines()[2] == "verdict changes: 4; NEW REGRESSIONS: 2, NEW ERRORS: 0, UNDECIDED IN NEW: 1, newly fixed: 1"
    assert "a-1" in text.splitlines()[3] and "reproduced -> regressed" in text.splitlines()[3]
    page = comparison_html(comparison, "old.json", "new.json")
    assert "2 new regression(s)" in page
    regressions = page[page.index('id="new-regressions"') : page.index("Newly fixed")]
    assert 'data-bug="a-1"' in regressions and 'data-bug="new-5"' in regressions and 'data-bug="c-3"' not in regressions


def with_record(bug_id: str, value: str | None, evidence: str | None = "direct", detail: str = "", installed: str = "0.7.1") -> dict:
    """A one-bug document (no bug when value is None) whose record has this evidence and detail."""
    records = [] if value is None else [{**verdict(bug_id, value, installed), "evidence": evidence, "detail": detail}]
    return {**document({}, {}), "verdicts": records}


@pytest.mark.parametrize(
    "old, new, line, why",
    [
        (
            with_record("a-1", "fixed", detail="2 test(s)"),
            with_record("a-1", "regressed", detail="max abs diff 0.4", installed="0.7.2"),
            "  a-1                            fixed -> regressed       evidence direct; kornia 0.7.1 -> kornia 0.7.2",
            ["      why: max abs diff 0.4"],
        ),
        (
            with_record("a-1", "skipped", evidence=None, detail="no GPU"),
            with_record("a-1", "reproduced", evidence="simulated", detail="3 test(s)"),
            "  a-1                          skipped -> reproduced      evidence - -> simulated; kornia 0.7.1",
            ["      why: 3 test(s)"],
        ),
        (  # gone from NEW: OLD's detail is not a reason for the change
            with_record("a-1", "fixed", detail="2 test(s)"),
            with_record("a-1", None),
            "  a-1                            fixed -> (absent)        evidence direct -> -; kornia 0.7.1 -> -",
            [],
        ),
        (  # new in NEW, with no detail: no why line
            with_record("a-1", None),
            with_record("a-1", "error", evidence=None),
            "  a-1                         (absent) -> error           evidence -; - -> kornia 0.7.1",
            [],
        ),
    ],
)
def test_a_verdict_change_is_one_line_with_evidence_and_news_reason(old: dict, new: dict, line: str, why: list[str]) -> None:
    assert comparison_text(compare(old, new), "a.json", "b.json").splitlines()[3:-1] == [line, *why]


def test_verdict_changes_print_worst_first() -> None:
    old = document({"na-0": "skipped", "lost-1": "reproduced", "fix-2": "reproduced", "err-3": "fixed", "reg-4": "fixed"}, {})
    new = document({"na-0": "not-affected", "lost-1": "skipped", "fix-2": "fixed", "err-3": "error", "reg-4": "regressed"}, {})
    lines = comparison_text(compare(old, new), "a.json", "b.json").splitlines()[3:8]
    assert [line.split()[0] for line in lines] == ["reg-4", "err-3", "lost-1", "fix-2", "na-0"]


@pytest.mark.parametrize(
    "old_outcome, new_outcome, kind",
    [
        ("passed", "failed", "newly failing"),
        ("xfailed", "failed", "newly failing"),
        ("skipped", "error", "newly failing"),
        ("failed", "passed", "newly passing"),
        ("error", "passed", "newly passing"),
        ("failed", "error", "outcome changed"),  # failing before and after
        ("failed", "skipped", "outcome changed"),  # not failing, but not passing either
        ("skipped", "passed", "outcome changed"),
        ("xfailed", "xpassed", "outcome changed"),
    ],
)
def test_each_outcome_change_has_one_kind(old_outcome: str, new_outcome: str, kind: str) -> None:
    groups = outcome_groups(compare(document({}, {"t::x": old_outcome}), document({}, {"t::x": new_outcome})))
    assert {group.kind: group.lines for group in groups if group.lines} == {kind: (f"t::x: {old_outcome} -> {new_outcome}",)}


def test_tests_only_one_run_has_are_their_own_kinds() -> None:
    groups = outcome_groups(compare(OLD, NEW))
    assert [(group.kind, group.lines) for group in groups] == [
        ("newly failing", ("t::one: xfailed -> failed",)), ("newly passing", ()), ("only in old", ("t::removed",)),
        ("only in new", ("t::added",)), ("outcome changed", ()),
    ]


SEVEN = OutcomeGroup("only in new", tuple(f"t::{n}" for n in range(7)))
FIVE = OutcomeGroup("only in old", tuple(f"t::{n}" for n in range(5)))
EMPTY = OutcomeGroup("newly failing", ())


@pytest.mark.parametrize(
    "groups, examples, lines",
    [
        ((EMPTY,), 5, ["test changes: 0; newly failing: 0"]),
        ((FIVE,), 5, ["test changes: 5; only in old: 5", "only in old: 5", *(f"  t::{n}" for n in range(5))]),
        (
            (EMPTY, SEVEN), 5,
            [
                "test changes: 7; newly failing: 0, only in new: 7", "only in new: 7", *(f"  t::{n}" for n in range(5)),
                "  and 2 more (--all lists every test)",
            ],
        ),
        ((SEVEN,), None, ["test changes: 7; only in new: 7", "only in new: 7", *(f"  t::{n}" for n in range(7))]),
    ],
)
def test_test_changes_are_counted_and_a_few_of_each_kind_shown(groups: tuple[OutcomeGroup, ...], examples: int | None, lines: list[str]) -> None:
    assert outcome_lines(groups, examples) == lines


def test_matrix_has_a_column_per_job_sorted_by_release_and_gpu(tmp_path: Path) -> None:
    newer = {**ENVIRONMENT, "packages": {**ENVIRONMENT["packages"], "kornia": "0.7.2"}, "gpus": [], "ci": {"HARNESS_JOB_NAME": "k072-cpu"}}
    documents = [
        (tmp_path / "k072" / "results.json", document({"a-1": "fixed"}, {}, newer)),
        (tmp_path / "k071" / "results.json", document({"a-1": "reproduced", "b-2": "skipped"}, {})),
    ]
    columns = matrix_columns(documents, tmp_path / "matrix.html")
    assert [(c.releases[-1], c.gpu, c.job) for c in columns] == [
        ("kornia 0.7.1", "1 x NVIDIA A100", "k071"), ("kornia 0.7.2", "CPU only", "k072-cpu")
    ]
    page = matrix_html(columns)
    assert page.count('<tr data-bug="a-1">') == 1 and page.count('<tr data-bug="b-2">') == 1
    assert '<a href="k071/report.html"><span class="verdict verdict-reproduced">reproduced</span></a>' in page
    assert '<a href="k072/report.html"><span class="verdict verdict-fixed">fixed</span></a>' in page
    assert 'title="not in this run"' in page  # b-2 in the 0.7.2 job


def test_matrix_columns_follow_release_order_not_text_and_name_sam2(tmp_path: Path) -> None:
    """torch 2.6.0 before 2.10.0 (text order put it after), and two sam2 jobs told apart."""
    def job(torch: str, sam2: str | None, name: str) -> tuple[Path, dict]:
        packages = {**ENVIRONMENT["packages"], "torch": torch, "sam2": sam2}
        return tmp_path / name / "results.json", document({"a-1": "fixed"}, {}, {**ENVIRONMENT, "packages": packages})

    columns = matrix_columns([job("2.10.0", None, "t210"), job("2.6.0", "1.1.0", "sam2-110"), job("2.6.0", "0.4.1", "sam2-041")], tmp_path / "m.html")
    assert [column.releases[0] for column in columns] == ["torch 2.6.0", "torch 2.6.0", "torch 2.10.0"]
    assert [column.releases[3:] for column in columns] == [("sam2 0.4.1",), ("sam2 1.1.0",), ()]


def test_matrix_links_to_the_ci_report_url_when_set(tmp_path: Path) -> None:
    environment = {**ENVIRONMENT, "ci": {"HARNESS_REPORT_URL": "https://ci.invalid/run/7/report.html"}}
    href = report_href(tmp_path / "a" / "results.json", document({}, {}, environment), tmp_path / "out" / "m.html")
    assert href == "https://ci.invalid/run/7/report.html"
    assert report_href(tmp_path / "a" / "results.json", document({}, {}), tmp_path / "out" / "m.html") == "../a/report.html"


def write(path: Path, content: object) -> Path:
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def test_compare_command_exits_1_on_a_new_regression_and_writes_the_page(tmp_path: Path, capsys) -> None:
    old, new = write(tmp_path / "old.json", OLD), write(tmp_path / "new.json", NEW)
    assert main(["compare", str(old), str(new), "-o", str(tmp_path / "c.html")]) == 1
    assert "NEW REGRESSIONS: 2" in capsys.readouterr().out
    assert "2 new regression(s)" in (tmp_path / "c.html").read_text()
    assert main(["compare", str(new), str(new), "-o", str(tmp_path / "c.html")]) == 0


def test_compare_command_lists_every_test_with_all_and_keeps_its_exit_status(tmp_path: Path, capsys) -> None:
    old = write(tmp_path / "old.json", document({"a-1": "fixed"}, {}))
    new = write(tmp_path / "new.json", document({"a-1": "regressed"}, {f"t::{n}": "passed" for n in range(8)}))
    page = str(tmp_path / "c.html")
    assert main(["compare", str(old), str(new), "-o", page]) == 1
    short = capsys.readouterr().out.splitlines()
    assert main(["compare", str(old), str(new), "-o", page, "--all"]) == 1
    every = capsys.readouterr().out.splitlines()
    assert "  and 3 more (--all lists every test)" in short and "  t::7" not in short
    assert [line for line in every if line.startswith("  t::")] == [f"  t::{n}" for n in range(8)]
    assert main(["compare", str(new), str(new), "-o", page, "--all"]) == 0


def test_compare_help_describes_the_flag(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    assert re.search(r"--all\s+print every test whose outcome changed or that only\s+one run has", capsys.readouterr().out)


README = (REPO / "reports" / "README.md").read_text(encoding="utf-8")


def test_the_documented_example_prints_what_the_readme_shows(tmp_path: Path, monkeypatch, capsys) -> None:
    console = re.search(r"```console\n\$ python -m reports compare (.+?)\n(.*?)```", README, re.S)
    old_text, new_text = re.findall(r"```json\n(.*?)```", README[console.end() :], re.S)[:2]
    write(tmp_path / "old.json", old_text)
    write(tmp_path / "new.json", new_text)
    monkeypatch.chdir(tmp_path)
    assert console[1] == "old.json new.json" and "it exits 1" in README
    assert main(["compare", *console[1].split()]) == 1
    assert capsys.readouterr().out == console[2]


def test_matrix_command_writes_the_grid(tmp_path: Path, capsys) -> None:
    (tmp_path / "job").mkdir()
    results = write(tmp_path / "job" / "results.json", NEW)
    assert main(["matrix", str(results), "-o", str(tmp_path / "matrix.html")]) == 0
    assert '<a href="job/report.html">' in (tmp_path / "matrix.html").read_text()


GPUS_PROBLEM = "'environment' 'gpus' must be a JSON array of objects with a 'name' string"
FIELD_TYPES = "package, detail: strings; installed, evidence: strings or null; title, if given: a string"


def test_a_run_that_lists_no_gpus_reads_as_cpu_only(tmp_path: Path, capsys) -> None:
    """`gpus` absent was accepted, then a KeyError in the page's title."""
    bare = write(tmp_path / "bare.json", {**NEW, "environment": {"packages": ENVIRONMENT["packages"]}})
    assert main(["compare", str(bare), str(bare), "-o", str(tmp_path / "c.html")]) == 0
    assert "torch 2.6.0, torchvision 0.21.0, kornia 0.7.1 on CPU only" in capsys.readouterr().out


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "cannot read: No such file or directory"),
        ("{not json", "not JSON (Expecting property name enclosed in double quotes: line 1 column 2 (char 1))"),
        ([1, 2], "not a harness results file (no schema_version)"),
        ({"verdicts": []}, "not a harness results file (no schema_version)"),
        ({**NEW, "schema_version": 2}, "schema_version 2; these tools read 1"),
        ({**NEW, "verdicts": {}}, "'verdicts' must be a JSON array"),
        # Records the pages read: a KeyError exited 1, as a regression does.
        ({**NEW, "environment": {}}, "'environment' has no 'packages' object"),
        ({**NEW, "schema_version": True}, "schema_version True; these tools read 1"),  # True == 1 in Python
        ({**NEW, "environment": {**ENVIRONMENT, "gpus": "H100"}}, GPUS_PROBLEM),
        ({**NEW, "environment": {**ENVIRONMENT, "gpus": [{"index": 0}]}}, GPUS_PROBLEM),
        ({**NEW, "environment": {**ENVIRONMENT, "ci": None}}, "'environment' 'ci' must be a JSON object of strings"),
        ({**NEW, "environment": {**ENVIRONMENT, "ci": {"HARNESS_JOB_NAME": 3}}}, "'environment' 'ci' must be a JSON object of strings"),
        ({**NEW, "environment": {**ENVIRONMENT, "simulated_runner": 2}}, "'environment' 'simulated_runner' must be a string or null"),
        (
            {**NEW, "verdicts": [{key: value for key, value in verdict("a-1", "fixed").items() if key != "package"} | {"detail": None}]},
            f"a-1: package, detail missing or of another type ({FIELD_TYPES})",
        ),
        ("[" * 100_000, "not a harness results file (JSON nested too deeply to read)"),
        (
            {**NEW, "verdicts": [verdict("a-1", "fixed") | {"title": 7}]},
            f"a-1: title missing or of another type ({FIELD_TYPES})",
        ),
        ({**NEW, "verdicts": [{}]}, "a 'verdicts' entry without a 'bug_id' string: {}"),
        ({**NEW, "verdicts": [{"bug_id": "a-1", "verdict": None}]}, "a-1: verdict None is none of reproduced, fixed, regressed, "
         "unplaced, not-reproduced, not-affected, inconclusive, skipped, error"),
        ({**NEW, "verdicts": [{"bug_id": "a-1", "verdict": "banana"}]}, "a-1: verdict 'banana' is none of reproduced, fixed, "
         "regressed, unplaced, not-reproduced, not-affected, inconclusive, skipped, error"),
        ({**NEW, "tests": [{}]}, "a 'tests' entry without 'nodeid' and 'outcome' strings: {}"),
        ({**NEW, "verdicts": [verdict("a-1", "error"), verdict("a-1", "fixed")]}, "more than one verdict for a-1"),  # the last won
        ({**NEW, "verdicts": [verdict(bug, "fixed") for bug in ("b-2", "a-1", "b-2", "a-1")]}, "more than one verdict for a-1, b-2"),
        ({**NEW, "environment": []}, "'environment' must be a JSON object"),
        ({**NEW, "verdicts": [{"x": "a" * 100}]}, "a 'verdicts' entry without a 'bug_id' string: " + json.dumps({"x": "a" * 100})[:80]),
        (b"\xff", "not JSON (not UTF-8 text)"),
    ],
)
@pytest.mark.parametrize("command", ["compare", "matrix"])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, capsys, content, message, command) -> None:
    bad = tmp_path / "bad.json"
    if content is not None:
        write(bad, content)
    good = write(tmp_path / "good.json", NEW)
    arguments = [str(good), str(bad)] if command == "compare" else [str(bad)]
    assert main([command, *arguments, "-o", str(tmp_path / "page.html")]) == 2
    assert capsys.readouterr().err == f"error: {bad}: {message}\n"
    assert not (tmp_path / "page.html").exists()


def test_unwritable_page_is_one_line_and_exit_2(tmp_path: Path, capsys) -> None:
    good = write(tmp_path / "good.json", NEW)
    assert main(["compare", str(good), str(good), "-o", str(tmp_path / "no" / "dir" / "c.html")]) == 2
    assert capsys.readouterr().err == f"error: {tmp_path / 'no' / 'dir' / 'c.html'}: cannot write: No such file or directory\n"


def test_module_runs_as_a_command_without_traceback(tmp_path: Path) -> None:
    done = warm_python.run(
        [sys.executable, "-m", "reports", "compare", str(tmp_path / "a.json"), str(tmp_path / "b.json")],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 2 and done.stderr == f"error: {tmp_path / 'a.json'}: cannot read: No such file or directory\n"
