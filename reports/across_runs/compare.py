"""What changed between two runs (the last release and the candidate, say): pure functions over
two results documents, and their text and HTML views."""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

from fixtures.known_bugs.verdicts import INCONCLUSIVE, SIGHTINGS, SKIPPED
from reports.pages.html import standalone_page, verdict_badge
from reports.run.environment import gpu_summary, release_summary

REGRESSED = "regressed"
FIXED = "fixed"
ERROR = "error"  # a test of the bug errored: the candidate cannot be judged on it
UNPLACED = "unplaced"  # seen on a build nothing could place: judged by no one yet
# Verdicts that decided nothing (None: the bug is not in that run); one that OLD decided and NEW
# did not is evidence lost (a runner without its GPU, a package gone), never a pass.
UNDECIDED = (SKIPPED, INCONCLUSIVE, None)
FAILING = frozenset({"failed", "error"})  # the test outcomes that fail a pytest run
UNJUDGED = 3  # compare's exit status where nothing new fails, but NEW decided nothing of a bug OLD had decided
EXAMPLES = 5  # test lines the terminal shows per kind of change: a two-bug run against a full one removes a thousand


@dataclass(frozen=True)
class VerdictChange:
    bug_id: str
    old: str | None  # None: the bug was not in that run
    new: str | None
    old_release: str
    new_release: str
    old_evidence: str | None  # direct, simulated, proxy; None: no evidence, or the bug was not in that run
    new_evidence: str | None
    reason: str  # NEW's one-line detail: why the bug has its new verdict ("" when absent or empty)


@dataclass(frozen=True)
class OutcomeChange:
    nodeid: str
    old: str
    new: str


@dataclass(frozen=True)
class Comparison:
    old_run: str
    new_run: str
    verdict_changes: tuple[VerdictChange, ...]
    outcome_changes: tuple[OutcomeChange, ...]
    tests_added: tuple[str, ...]
    tests_removed: tuple[str, ...]

    @property
    def new_regressions(self) -> tuple[VerdictChange, ...]:
        return tuple(change for change in self.verdict_changes if change.new == REGRESSED)

    @property
    def new_errors(self) -> tuple[VerdictChange, ...]:
        return tuple(change for change in self.verdict_changes if change.new == ERROR)

    @property
    def new_unplaced(self) -> tuple[VerdictChange, ...]:
        return tuple(change for change in self.verdict_changes if change.new == UNPLACED)

    @property
    def undecided_in_new(self) -> tuple[VerdictChange, ...]:
        return tuple(change for change in self.verdict_changes if change.new in UNDECIDED and change.old not in (*UNDECIDED, ERROR))

    @property
    def newly_fixed(self) -> tuple[VerdictChange, ...]:
        # Only where OLD saw the bug: not after a release before it, a package not installed, an error or an undecided run.
        return tuple(change for change in self.verdict_changes if change.new == FIXED and change.old in SIGHTINGS)


def run_label(document: dict) -> str:
    """'torch 2.14.1, torchvision 0.29.1, kornia 0.9.0 on CPU only'."""
    environment = document["environment"]
    return f"{release_summary(environment)} on {gpu_summary(environment)}"


def _release(record: dict | None) -> str:
    if record is None:
        return ""
    return f"{record['package']} {record['installed'] or '(not installed)'}"


def _evidence(record: dict | None) -> str | None:
    return record.get("evidence") if record else None


def verdict_changes(old: dict, new: dict) -> tuple[VerdictChange, ...]:
    """Every bug whose verdict differs, in the new run's order, then bugs only the old run had."""
    old_records = {record["bug_id"]: record for record in old["verdicts"]}
    new_records = {record["bug_id"]: record for record in new["verdicts"]}
    changes = []
    for bug_id in [*new_records, *(bug_id for bug_id in old_records if bug_id not in new_records)]:
        before, after = old_records.get(bug_id), new_records.get(bug_id)
        old_verdict = before["verdict"] if before else None
        new_verdict = after["verdict"] if after else None
        if old_verdict != new_verdict:
            changes.append(
                VerdictChange(
                    bug_id, old_verdict, new_verdict, _release(before), _release(after),
                    _evidence(before), _evidence(after), (after or {}).get("detail") or "",
                )
            )
    return tuple(changes)


def compare(old: dict, new: dict) -> Comparison:
    old_outcomes = {test["nodeid"]: test["outcome"] for test in old["tests"]}
    new_outcomes = {test["nodeid"]: test["outcome"] for test in new["tests"]}
    return Comparison(
        old_run=run_label(old),
        new_run=run_label(new),
        verdict_changes=verdict_changes(old, new),
        outcome_changes=tuple(
            OutcomeChange(nodeid, old_outcomes[nodeid], outcome)
            for nodeid, outcome in new_outcomes.items()
            if nodeid in old_outcomes and old_outcomes[nodeid] != outcome
        ),
        tests_added=tuple(nodeid for nodeid in new_outcomes if nodeid not in old_outcomes),
        tests_removed=tuple(nodeid for nodeid in old_outcomes if nodeid not in new_outcomes),
    )


def exit_status(comparison: Comparison) -> int:
    """1 when the new run has a regression, an error or a sighting on an unplaced build the old one
    did not: the candidate must not ship (an error or an unplaced build means a bug was not judged).
    Else 3 when a bug OLD decided is undecided in NEW (skipped, inconclusive, absent): the candidate
    was not judged on it. Else 0."""
    if comparison.new_regressions or comparison.new_errors or comparison.new_unplaced:
        return 1
    return UNJUDGED if comparison.undecided_in_new else 0


def _verdict_word(verdict: str | None) -> str:
    return verdict or "(absent)"


def _shift(old: str, new: str) -> str:
    """'old -> new', or one word when nothing moved."""
    return old if old == new else f"{old} -> {new}"


def _change_line(change: VerdictChange) -> str:
    releases = _shift(change.old_release or "-", change.new_release or "-")
    evidence = _shift(change.old_evidence or "-", change.new_evidence or "-")
    return f"  {change.bug_id:<20} {_verdict_word(change.old):>15} -> {_verdict_word(change.new):<15} evidence {evidence}; {releases}"


def _severity(change: VerdictChange) -> int:
    """Regressions, then sightings on unplaced builds, then errors (each fails the comparison), then
    evidence lost, then fixes, then the rest."""
    order = (REGRESSED, UNPLACED, ERROR, *UNDECIDED, FIXED)
    return order.index(change.new) if change.new in order else len(order)


def verdict_lines(comparison: Comparison) -> list[str]:
    """The headline and one line per changed verdict, the worst first, each with NEW's reason."""
    lines = [
        f"verdict changes: {len(comparison.verdict_changes)}; NEW REGRESSIONS: {len(comparison.new_regressions)}, "
        f"NEW ERRORS: {len(comparison.new_errors)}, "
        + (f"NEW UNPLACED: {len(comparison.new_unplaced)}, " if comparison.new_unplaced else "")
        + (f"UNDECIDED IN NEW: {len(comparison.undecided_in_new)}, " if comparison.undecided_in_new else "")
        + f"newly fixed: {len(comparison.newly_fixed)}"
    ]
    for change in sorted(comparison.verdict_changes, key=_severity):
        lines.append(_change_line(change))
        lines.extend([f"      why: {change.reason}"] if change.reason else [])
    return lines


@dataclass(frozen=True)
class OutcomeGroup:
    kind: str  # "newly failing", "only in old", ...
    lines: tuple[str, ...]


def _outcome_kind(change: OutcomeChange) -> str:
    if change.new in FAILING and change.old not in FAILING:
        return "newly failing"
    if change.old in FAILING and change.new == "passed":
        return "newly passing"
    return "outcome changed"  # skipped -> passed, failed -> skipped, xfailed -> xpassed, failed -> error, ...


def outcome_groups(comparison: Comparison) -> tuple[OutcomeGroup, ...]:
    """Test-level changes by kind, in the order a reviewer acts on them: what fails now and did not,
    what passes now and failed, the tests only one run has, every other change of outcome."""

    def changed(kind: str) -> tuple[str, ...]:
        return tuple(f"{c.nodeid}: {c.old} -> {c.new}" for c in comparison.outcome_changes if _outcome_kind(c) == kind)

    return (
        OutcomeGroup("newly failing", changed("newly failing")),
        OutcomeGroup("newly passing", changed("newly passing")),
        OutcomeGroup("only in old", comparison.tests_removed),
        OutcomeGroup("only in new", comparison.tests_added),
        OutcomeGroup("outcome changed", changed("outcome changed")),
    )


def outcome_lines(groups: tuple[OutcomeGroup, ...], examples: int | None) -> list[str]:
    """The counts on one line, then each kind that has any: its first `examples` tests (None: all)
    and how many more."""
    lines = [f"test changes: {sum(len(g.lines) for g in groups)}; " + ", ".join(f"{g.kind}: {len(g.lines)}" for g in groups)]
    for group in (group for group in groups if group.lines):
        shown = group.lines if examples is None else group.lines[:examples]
        lines.append(f"{group.kind}: {len(group.lines)}")
        lines.extend(f"  {line}" for line in shown)
        more = len(group.lines) - len(shown)
        lines.extend([f"  and {more} more (--all lists every test)"] if more else [])
    return lines


def comparison_text(comparison: Comparison, old_name: str, new_name: str, examples: int | None = EXAMPLES) -> str:
    """The terminal view: the runs, the bugs whose verdict changed, then the tests that changed, a
    few of each kind unless `examples` is None."""
    lines = [f"old: {old_name}: {comparison.old_run}", f"new: {new_name}: {comparison.new_run}"]
    return "\n".join(lines + verdict_lines(comparison) + outcome_lines(outcome_groups(comparison), examples))


def _change_rows(changes: tuple[VerdictChange, ...]) -> str:
    return "".join(
        f'<tr class="verdict-{escape(change.new or "none")}" data-bug="{escape(change.bug_id)}">'
        f"<td><code>{escape(change.bug_id)}</code></td><td>{verdict_badge(change.old)}</td>"
        f"<td>{verdict_badge(change.new)}</td><td>{escape(change.old_release)}</td><td>{escape(change.new_release)}</td></tr>"
        for change in changes
    )


def _change_table(changes: tuple[VerdictChange, ...], css_id: str) -> str:
    if not changes:
        return '<p class="muted">None.</p>'
    header = "<tr><th>Bug</th><th>Old verdict</th><th>New verdict</th><th>Old release</th><th>New release</th></tr>"
    return f'<table class="harness-table" id="{css_id}"><thead>{header}</thead><tbody>{_change_rows(changes)}</tbody></table>'


def _test_list(nodeids: list[str], css_id: str) -> str:
    if not nodeids:
        return '<p class="muted">None.</p>'
    return f'<ul id="{css_id}">' + "".join(f"<li><code>{escape(nodeid)}</code></li>" for nodeid in nodeids) + "</ul>"


def comparison_html(comparison: Comparison, old_name: str, new_name: str) -> str:
    """The compare page: new regressions on top, in red, then everything else that changed."""
    regressions, errors = len(comparison.new_regressions), len(comparison.new_errors)
    alarms = [
        f'<span class="verdict verdict-{verdict}">{count} {words}</span>'
        for verdict, words, count in (
            (REGRESSED, "new regression(s)", regressions),
            (UNPLACED, "new sighting(s) on an unplaced build", len(comparison.new_unplaced)),
            (ERROR, "new error(s)", errors),
            (INCONCLUSIVE, "bug(s) OLD decided and NEW did not", len(comparison.undecided_in_new)),
        )
        if count
    ]
    calm = '<span class="verdict verdict-fixed">no new regression</span>'
    headline = f'<p class="headline">{" ".join(alarms) or calm}</p>'
    runs = (
        '<table class="harness-table"><tr><th>old</th>'
        f"<td><code>{escape(old_name)}</code></td><td>{escape(comparison.old_run)}</td></tr>"
        f"<tr><th>new</th><td><code>{escape(new_name)}</code></td><td>{escape(comparison.new_run)}</td></tr></table>"
    )
    outcome_items = [f"{change.nodeid}: {change.old} -> {change.new}" for change in comparison.outcome_changes]
    body = "".join(
        [
            headline,
            runs,
            f"<h2>New regressions ({regressions})</h2>",
            _change_table(comparison.new_regressions, "new-regressions"),
            *([f"<h2>New errors ({errors})</h2>", _change_table(comparison.new_errors, "new-errors")] if errors else []),
            *(
                [f"<h2>Undecided in NEW ({len(comparison.undecided_in_new)})</h2>", _change_table(comparison.undecided_in_new, "undecided-in-new")]
                if comparison.undecided_in_new
                else []
            ),
            f"<h2>Newly fixed ({len(comparison.newly_fixed)})</h2>",
            _change_table(comparison.newly_fixed, "newly-fixed"),
            f"<h2>All verdict changes ({len(comparison.verdict_changes)})</h2>",
            _change_table(comparison.verdict_changes, "verdict-changes"),
            f"<h2>Test outcome changes ({len(outcome_items)})</h2>",
            _test_list(outcome_items, "outcome-changes"),
            f"<h2>Tests added ({len(comparison.tests_added)})</h2>",
            _test_list(list(comparison.tests_added), "tests-added"),
            f"<h2>Tests removed ({len(comparison.tests_removed)})</h2>",
            _test_list(list(comparison.tests_removed), "tests-removed"),
        ]
    )
    return standalone_page("What changed between two runs", body)
