"""A census's findings: each release's failures grouped by cause across releases, with the first
and last release seen and what upstream knows of it (matches.toml, or the sweep allow-list's
triage, and whether that triage is wider than the releases the finding showed in). Pure, but for
reading matches.toml."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from fixtures.known_bugs.versions import version_in_range
from fixtures.sweeps.allowlist import AllowList, at_site, triages_for
from fixtures.toml_files import read_toml

MATCHES_TOML = Path(__file__).with_name("matches.toml")
OWN_TESTS, CUDA_CASE, SWEEP = "fails only simulated", "CUDA case fails", "sweep finding"
MATCH_KINDS = ("bug", "upstream", "not_found", "not_a_bug")
EXAMPLES = 3  # tests named per finding


class MatchesError(ValueError):
    """matches.toml is malformed: one line naming the entry."""


def place_of_test(node: str) -> str:
    """A test's node id as a cause's place: without its parameters and its top folder (kornia's
    tests/ was test/), so one test class's failure is one cause across releases and apart from
    another class's test of the same name."""
    path, _, rest = node.partition("[")[0].partition("::")
    return "::".join(filter(None, [path.split("/", 1)[-1], rest]))


@dataclass(frozen=True)
class Match:
    where: str
    error: str  # the start of the cause's error line
    kind: str  # bug, upstream, not_found, not_a_bug
    value: str  # the registry id, the upstream address, what was searched, or why it is no device bug
    how: str  # how it was matched
    test: str = ""  # where the cause is shared by other tests: only this test's failure (place_of_test's form)

    def covers(self, where: str, error: str, tests: Iterable[str] = ()) -> bool:
        mine = not self.test or any(place_of_test(test) == self.test for test in tests)
        return where == self.where and error.startswith(self.error) and mine


def load_matches(package: str, path: Path = MATCHES_TOML, known_bugs: frozenset[str] | None = None) -> list[Match]:
    entries = read_toml(path, "the census's upstream matches", MatchesError).get(package, [])
    if not isinstance(entries, list) or not all(isinstance(entry, dict) for entry in entries):
        raise MatchesError(f"{path.name}: {package} must be an array of tables ([[{package}]])")
    matches = []
    for number, entry in enumerate(entries, 1):
        kinds = [kind for kind in MATCH_KINDS if kind in entry]
        what = f"{path.name}: [[{package}]] #{number} ({entry.get('where', '?')})"
        if len(kinds) != 1 or not entry.get("where") or not entry.get("error") or not entry.get("how"):
            raise MatchesError(f"{what}: needs where, error, how and one of {', '.join(MATCH_KINDS)}")
        value = entry[kinds[0]]
        if kinds[0] == "bug" and known_bugs is not None and value not in known_bugs:
            raise MatchesError(f"{what}: bug {value!r} is not in the registry")
        matches.append(Match(entry["where"], entry["error"], kinds[0], value, entry["how"], entry.get("test", "")))
    return matches


@dataclass(frozen=True)
class Failure:
    """One test's failure at one release, or one sweep finding (where: the callable, error: what it found)."""

    release: str
    kind: str  # OWN_TESTS, CUDA_CASE, SWEEP
    where: str
    error: str
    test: str  # the pytest node id
    triage: dict[str, str] = field(default_factory=dict)  # a sweep finding's allow-list triage: bug / reason
    site: str = ""  # where a sweep finding showed (its row's `site`: kornia/enhance/jpeg.py:_quantize)


@dataclass
class Finding:
    kind: str
    where: str
    error: str
    releases: list[str]
    tests: dict[str, list[str]]  # release -> test node ids (the first few)
    triage: dict[str, str]  # a sweep finding's allow-list triage (bug / reason), the same at each of its releases
    match: dict[str, str]  # {"kind": bug|upstream|not_found|not_a_bug|triaged|wider|unmatched, "value": ..., "how": ...}
    site: str = ""  # a sweep finding's site, the same at each of its releases ("" in a census kept before sites)

    @property
    def first(self) -> str:
        return self.releases[0]

    @property
    def last(self) -> str:
        return self.releases[-1]


def match_of(where: str, error: str, triage: dict[str, str], matches: list[Match], tests: Iterable[str] = ()) -> dict[str, str]:
    """A registered bug the allow-list charges it to, else the census's match, else the
    allow-list's reason, else unmatched."""
    if triage.get("bug"):
        return {"kind": "bug", "value": triage["bug"], "how": f"the sweep allow-list charges it: {triage['reason']}"}
    found = next((match for match in matches if match.covers(where, error, tests)), None)
    if found:
        return {"kind": found.kind, "value": found.value, "how": found.how}
    if triage.get("reason"):
        return {"kind": "triaged", "value": "", "how": f"the sweep allow-list: {triage['reason']}"}
    return {"kind": "unmatched", "value": "", "how": "nobody has looked for it upstream yet"}


def wider_than_seen(finding: Finding, newest: str, allowlist: AllowList) -> bool:
    """A sweep finding the census last saw before its newest release which a triage of the
    allow-list (a reason, not a registered bug's charge) would still accept at that newest release
    (every release, or a range holding it): a return there would be accepted unseen. Its triage
    wants the releases the finding shows in."""
    if finding.kind != SWEEP or finding.last == newest:
        return False
    sweep, _, name = finding.where.partition(": ")
    return any(
        # A census kept before sites says none: any triage's site may be the finding's.
        triage.bug is None and (not finding.site or at_site(triage, finding.site))
        and (triage.releases is None or version_in_range(triage.releases, None, newest) is True)
        for triage in triages_for(allowlist, sweep, name, finding.error)
    )


def group_findings(failures: list[Failure], release_order: list[str], matches: list[Match], allowlist: AllowList) -> list[Finding]:
    """One finding per (kind, where, error, site, allow-list triage), its releases in `release_order`;
    oldest first seen first. The allow-list triages a finding at the releases of its entry only
    (a bug's affected range): where it comes back outside them (after the fix) it is a finding of
    its own, never hidden behind the registered bug. A finding gone before the newest release
    that a triage would still accept there is `wider` (wider_than_seen), whatever else matched it,
    which fails the census as an unmatched finding does."""
    grouped: dict[tuple[str, str, str, str, tuple[tuple[str, str], ...]], list[Failure]] = {}
    for failure in failures:
        grouped.setdefault((failure.kind, failure.where, failure.error, failure.site, tuple(sorted(failure.triage.items()))), []).append(failure)
    findings = []
    for (kind, where, error, site, triaged), members in grouped.items():
        releases = [release for release in release_order if any(member.release == release for member in members)]
        tests = {release: sorted({member.test for member in members if member.release == release})[:EXAMPLES] for release in releases}
        triage = dict(triaged)
        every_test = [member.test for member in members]
        finding = Finding(kind, where, error, releases, tests, triage, match_of(where, error, triage, matches, every_test), site)
        if wider_than_seen(finding, release_order[-1], allowlist):
            finding.match = {
                "kind": "wider", "value": "",
                "how": f"the sweep allow-list would accept it at {release_order[-1]}, but it was last seen at {finding.last}: "
                "give the triage the releases it shows in (`releases`), so that a return is a new finding",
            }
        findings.append(finding)
    position = {release: index for index, release in enumerate(release_order)}
    return sorted(findings, key=lambda finding: (position[finding.first], finding.kind, finding.where, finding.error))
