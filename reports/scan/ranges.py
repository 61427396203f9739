"""Release-scan arithmetic: pure functions from one bug's verdicts across releases to the measured
affected range and its disagreements with the registry.

Verdicts are read generically: the words that say the bug was or was not seen are named here;
any other verdict (skipped, inconclusive, error, ...) decides nothing about that release, so the
release is unsettled: `error` (its run failed) or undecided (the bug could not be told). Nor do a
sighting on a build nothing could place (`unplaced`) or a race not seen within its budget,
inside the registry's range or outside it. The registry's range places each release as the
harness does (fixtures/known_bugs/versions.py): an `ambiguous` version or a source build is placed
by no version, so it disagrees only where the run's own placing (its probe, its commit)
contradicts what it saw: `regressed`, or a deterministic bug `not-reproduced`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from fixtures.known_bugs.verdicts import ERROR, FIXED, NOT_AFFECTED, NOT_REPRODUCED, REGRESSED, REPRODUCED, UNPLACED
from fixtures.known_bugs.versions import version_in_range

SEEN = frozenset({REPRODUCED, REGRESSED})  # sightings a version placed (UNPLACED is none)
# not-affected: a release before the bug, where it was not seen or its code had not shipped yet.
# A race not seen (any of these: not triggered within its budget) proves nothing, wherever the
# release lies: observation() says so, so a race's measured edges are its sightings alone.
NOT_SEEN = frozenset({FIXED, NOT_REPRODUCED, NOT_AFFECTED})


class ReleaseError(ValueError):
    """A release string that is not a PEP 440 version."""


def release_order(releases: list[str]) -> list[str]:
    """The releases once each, oldest first by PEP 440 (0.7.2.dev0 < 0.7.2rc1 < 0.7.2 < 0.7.2.post1)."""
    parsed: dict[Version, str] = {}
    for release in releases:
        try:
            parsed.setdefault(Version(release), release)
        except InvalidVersion:
            raise ReleaseError(f"{release!r} is not a PEP 440 version") from None
    return [parsed[version] for version in sorted(parsed)]


def observation(verdict: str | None, kind: str = "deterministic") -> bool | None:
    """True: the bug was seen; False: looked for and not seen; None: this verdict decides nothing
    (a race not seen included: not-reproduced, fixed or not-affected, its budget bounds no edge)."""
    if verdict in SEEN:
        return True
    if verdict in NOT_SEEN and kind != "race":
        return False
    return None


@dataclass(frozen=True)
class Window:
    """Consecutive scanned releases that showed the bug: from first_affected up to (not
    including) first_fixed; first_fixed None when no later release was seen without it (the
    newest scanned showed it, or the releases after last_seen decided nothing)."""

    first_affected: str
    first_fixed: str | None
    last_seen: str = field(default="", compare=False)  # the window's newest release that showed it


def window_words(window: Window, newest: str) -> str:
    """A window as the scan's summary and page say it: "0.7.2 up to 0.8.2", "0.21.0 up to the newest
    scanned", or, where the releases after its last sighting decided nothing (a race not seen),
    "0.21.0 through 0.21.0 (the releases after it decided nothing)"."""
    if window.first_fixed is not None:
        return f"{window.first_affected} up to {window.first_fixed}"
    if window.last_seen in ("", newest):
        return f"{window.first_affected} up to the newest scanned"
    return f"{window.first_affected} through {window.last_seen} (the releases after it decided nothing)"


def measured_windows(row: dict[str, str | None], kind: str = "deterministic") -> list[Window]:
    """The affected windows a verdict row (release -> verdict, oldest first) shows. A release
    whose verdict decides nothing neither opens nor closes a window."""
    windows: list[Window] = []
    opened: str | None = None
    last_seen = ""
    for release, verdict in row.items():
        seen = observation(verdict, kind)
        if seen is True:
            opened, last_seen = opened or release, release
        elif seen is False and opened is not None:
            windows.append(Window(opened, release, last_seen))
            opened = None
    if opened is not None:
        windows.append(Window(opened, None, last_seen))
    return windows


@dataclass(frozen=True)
class Disagreement:
    release: str
    verdict: str
    registry_affected: bool | None  # None: no version places the release (its run placed it)
    reason: str


def disagreement(release: str, verdict: str | None, registry_affected: bool | None, bug_kind: str) -> Disagreement | None:
    """Where the release's verdict and the registry's range cannot both be right. A race that did
    not trigger within its budget proves nothing, so it never disagrees. A release no version
    places (registry_affected None) disagrees where its run's placing (an ambiguous version's probe,
    a source build's commit) contradicts what the run saw: the verdict says so."""
    seen = observation(verdict, bug_kind)
    if registry_affected is None:
        if verdict == REGRESSED:
            return Disagreement(release, verdict, None, "seen where its run placed it outside the affected range")
        if verdict == NOT_REPRODUCED and seen is False:
            return Disagreement(release, verdict, None, "not seen where its run placed it inside the affected range")
        return None
    if verdict == REGRESSED or (seen is True and not registry_affected):
        return Disagreement(release, verdict, registry_affected, "seen outside the registry's affected range")
    if seen is False and registry_affected:
        return Disagreement(release, verdict, registry_affected, "not seen inside the registry's affected range")
    return None


@dataclass(frozen=True)
class Unsettled:
    """A release that neither agrees nor disagrees with the registry: its run errored, or the
    bug could not be decided there."""

    release: str
    verdict: str | None
    reason: str


def unsettled(release: str, verdict: str | None, bug_kind: str) -> Unsettled | None:
    """Why the release's verdict cannot confirm the registry, or None when it can."""
    if verdict == ERROR:
        return Unsettled(release, verdict, "its run errored")
    if verdict == UNPLACED:
        return Unsettled(release, verdict, "seen on a build nothing could place")
    if bug_kind == "race" and verdict in NOT_SEEN:
        return Unsettled(release, verdict, "a race that did not trigger within its budget proves nothing")
    if observation(verdict, bug_kind) is None:
        return Unsettled(release, verdict, f"the bug was not decided ({verdict or 'no verdict'})")
    return None


@dataclass(frozen=True)
class BugScan:
    """One bug across the scanned releases, beside what the registry says."""

    bug_id: str
    title: str
    registry_affected_range: str
    registry_first_fixed: str
    verdicts: dict[str, str | None]  # release -> verdict (None: no verdict for this bug), oldest first
    registry_affected: dict[str, bool | None]  # None: no version places it (ambiguous, a source build)
    # Per release, the release of the bug's own package the registry judged, where that is
    # another package's (a torch scan's torchvision); empty where each release is the bug's own.
    placed_by: dict[str, str]
    windows: tuple[Window, ...]
    disagreements: tuple[Disagreement, ...]
    unsettled: tuple[Unsettled, ...]

    @property
    def errors(self) -> tuple[Unsettled, ...]:
        return tuple(item for item in self.unsettled if item.verdict == ERROR)

    @property
    def undecided(self) -> tuple[Unsettled, ...]:
        return tuple(item for item in self.unsettled if item.verdict != ERROR)

    @property
    def first_affected(self) -> str | None:
        return self.windows[0].first_affected if self.windows else None

    @property
    def first_fixed(self) -> str | None:
        return self.windows[0].first_fixed if self.windows else None


def scan_bug(
    *, bug_id: str, title: str, affected: SpecifierSet, first_fixed: str, kind: str, verdicts: dict[str, str | None],
    placed_by: dict[str, str] | None = None, ambiguous: SpecifierSet | None = None,
) -> BugScan:
    """The row for one bug: verdicts in release order, measured windows and disagreements.
    placed_by: per scanned release, the release of the bug's own package it held, where that is
    another package (torchvision 0.21.0 in torch 2.6.0's environment); default the release itself."""
    row = {release: verdicts.get(release) for release in release_order(list(verdicts))}
    # Placed as the harness places them: an ambiguous version or a source build by no version (None).
    in_range = {release: version_in_range(affected, ambiguous, (placed_by or {}).get(release, release)) for release in row}
    found = [disagreement(release, verdict, in_range[release], kind) for release, verdict in row.items()]
    left_open = [unsettled(release, verdict, kind) for release, verdict in row.items()]
    return BugScan(
        bug_id=bug_id,
        title=title,
        registry_affected_range=str(affected),
        registry_first_fixed=first_fixed,
        verdicts=row,
        registry_affected=in_range,
        placed_by={release: placed for release, placed in (placed_by or {}).items() if placed != release},
        windows=tuple(measured_windows(row, kind)),
        disagreements=tuple(item for item in found if item is not None),
        unsettled=tuple(item for item in left_open if item is not None),
    )


def failed_runs(scans: list[BugScan], exits: dict[str, int]) -> list[str]:
    """Releases whose pytest run failed (exit 1) where no scanned bug disagrees, errored or was seen
    unplaced (each fails a run): a failure no verdict explains (an untriaged sweep finding under
    --strict-sweeps, another suite's broken test), which must not pass as agreement."""
    unplaced = (item for bug in scans for item in bug.undecided if item.verdict == UNPLACED)
    explained = {item.release for bug in scans for item in (*bug.disagreements, *bug.errors, *unplaced)}
    return [release for release, code in exits.items() if code != 0 and release not in explained]


def outcome_line(scans: list[BugScan], stopped: str | None = None, failed: Sequence[str] = ()) -> str:
    """The scan's one-line outcome: agreement only when every release of every bug was scanned
    and decided, and every release's run passed."""
    if stopped:
        return f"stopped before every release was scanned ({stopped}): confirms nothing"
    counts = {
        "disagreement(s)": sum(len(bug.disagreements) for bug in scans),
        "errored release(s)": sum(len(bug.errors) for bug in scans),
        "failed run(s) no verdict explains": len(failed),
        "undecided release(s)": sum(len(bug.undecided) for bug in scans),
    }
    problems = ", ".join(f"{count} {what}" for what, count in counts.items() if count)
    return f"does not confirm the registry: {problems}" if problems else "agrees with the registry: every release decided"
