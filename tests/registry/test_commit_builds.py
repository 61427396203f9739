"""Commit builds placed by their history (fixtures/known_bugs/commits.py): a small git history
made here stands in for the package's, so placement is table-tested without reaching a git host:
a git URL (its host reachable, unreachable, or its history named with --history), a maintainer's
checkout (clean or with uncommitted changes), a plain source tree.

    root -- introduce -- middle -- fix -- after        (main)
        \\-- side -- copy -- side tag                  (a rewritten history: `copy` is introduce again)

The registry's own commits are checked against the packages' real histories where a session
names one, as a user does: $HARNESS_HISTORY="https://github.com/kornia/kornia=PATH".
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from fixtures.known_bugs import versions
from fixtures.known_bugs.commits import (
    AFFECTED,
    FIXED,
    PREDATES,
    GitBuild,
    HistoryError,
    HistoryOptionError,
    check_histories,
    checkout_build,
    commit_place,
    git_build,
    history,
    is_ancestor,
    normalized_url,
    parse_direct_url,
    parse_histories,
    release_bracket,
)
from fixtures.known_bugs.distributions import distribution_of
from fixtures.known_bugs.registry import load_registry
from fixtures.known_bugs.verdicts import NOT_AFFECTED, NOT_OBSERVED, OBSERVED, SIMULATED, TO_PLACE, Observation, bug_verdict
from fixtures.known_bugs.versions import affected_status, installed_version, place_release, version_is_affected

BUGS = load_registry()


@pytest.fixture(autouse=True)
def metadata_alone_places_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests fake a kornia distribution's metadata (fake_install) while the process imports
    the installed kornia's files: where the import comes from is test_imported_elsewhere's."""
    monkeypatch.setattr(versions, "imported_elsewhere", lambda distribution: None)


def git(repository: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repository), *args], capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture(scope="module")
def commits(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The history above, its commits by name; the repository's path under "path"."""
    repository = tmp_path_factory.mktemp("history")
    git(repository, "init", "-q", "-b", "main")
    named = {"path": str(repository)}
    for name in ("root", "introduce", "middle", "fix", "after"):
        (repository / "package.py").write_text(f"STATE = {name!r}\n")  # a tracked file: a checkout of it is a package's tree
        git(repository, "add", "package.py")
        git(repository, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", name)
        named[name] = git(repository, "rev-parse", "HEAD")
    git(repository, "checkout", "-q", "-b", "side", named["root"])
    git(repository, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "side")
    named["side"] = git(repository, "rev-parse", "HEAD")
    # The introducing change again on the side branch, as a history rewrite copies it (kornia's tags
    # up to 0.7.1 hold other commits of its PRs than those from 0.7.2 on).
    git(repository, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "introduce, rewritten")
    named["copy"] = git(repository, "rev-parse", "HEAD")
    git(repository, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "tagged on the side")
    named["side tag"] = git(repository, "rev-parse", "HEAD")
    return named


@pytest.mark.parametrize(
    ("build", "place"),
    [("root", PREDATES), ("introduce", AFFECTED), ("middle", AFFECTED), ("fix", FIXED), ("after", FIXED), ("side", PREDATES)],
)
def test_a_build_is_affected_between_its_introducing_and_fixing_commits(commits: dict[str, str], build: str, place: str) -> None:
    repository = Path(commits["path"])
    assert commit_place(repository, commits[build], (commits["introduce"],), commits["fix"])[0] == place


def test_a_bug_with_no_fix_yet_affects_every_build_after_its_commit(commits: dict[str, str]) -> None:
    repository = Path(commits["path"])
    assert commit_place(repository, commits["after"], (commits["introduce"],), None) == (AFFECTED, commits["introduce"])
    assert commit_place(repository, commits["side"], (commits["introduce"],), None) == (PREDATES, "")


def test_a_build_holding_any_copy_of_the_introducing_change_is_affected(commits: dict[str, str]) -> None:
    """kornia 0.7.1 from git: PR 2177's commit in its history is not the one tags from 0.7.2 hold.
    Named by one copy only, the build read `predates`, so its sighting read `regressed`."""
    repository, both = Path(commits["path"]), (commits["introduce"], commits["copy"])
    assert commit_place(repository, commits["side tag"], (commits["introduce"],), commits["fix"]) == (PREDATES, "")
    assert commit_place(repository, commits["side tag"], both, commits["fix"]) == (AFFECTED, commits["copy"])
    assert commit_place(repository, commits["after"], both, commits["fix"]) == (FIXED, commits["introduce"])
    assert commit_place(repository, commits["side"], both, commits["fix"]) == (PREDATES, "")
    absent = "0" * 40  # a copy this clone lacks (kornia's old history, cloned without its tags)
    assert commit_place(repository, commits["after"], (absent, commits["introduce"]), commits["fix"]) == (FIXED, commits["introduce"])
    with pytest.raises(HistoryError, match="cannot compare"):  # no copy known: nothing places it
        commit_place(repository, commits["after"], (absent,), commits["fix"])


@pytest.mark.parametrize("bug_id", [bug.id for bug in BUGS.values() if bug.introduced_by])
def test_the_registry_commits_place_every_release_tag_as_its_version_does(bug_id: str) -> None:
    """A git install of a release tag must get the verdict its version gets. kornia-2791 named the
    copy of its PR that only tags from 0.7.2 on hold, so kornia 0.7.1 from git read `predates` and
    its sighting `regressed`."""
    bug = BUGS[bug_id]
    url = "/".join(bug.issue.split("/")[:5])  # https://github.com/OWNER/NAME of its issue or pull request
    repository = parse_histories(os.environ.get("HARNESS_HISTORY", "").split()).get(normalized_url(url))
    if repository is None:
        pytest.skip(f"needs {bug.package}'s git history: HARNESS_HISTORY='{url}=PATH' (a clone or mirror)")
    wrong = []
    for tag in git(repository, "tag", "--list", "v*").split():
        by_version = version_is_affected(bug, tag.removeprefix("v"))
        place = commit_place(repository, tag, bug.introduced_by, bug.fixed_by)[0] if by_version is not None else None
        if place is not None and (place == AFFECTED) != by_version:
            wrong.append(f"{tag}: {place} by its commit, {'' if by_version else 'not '}affected by its version")
    assert not wrong, "\n".join(wrong)


def test_a_commit_the_history_lacks_is_a_history_error(commits: dict[str, str]) -> None:
    with pytest.raises(HistoryError, match="cannot compare"):
        is_ancestor(Path(commits["path"]), "0" * 40, commits["after"])


@pytest.fixture(scope="module")
def tagged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """root (v0.1.0) - a - b (v0.2.0rc1) - c - d (v0.2.0, and a tag that is no version) - e (a tag PEP
    440 would read as 2b0, which spells no release); and a
    rewritten copy of root's history (v0.0.9 on it, as kornia's tags up to 0.7.1), merged into c."""
    repository = tmp_path_factory.mktemp("tagged")
    git(repository, "init", "-q", "-b", "main")
    named = {"path": str(repository)}
    for name in ("root", "a", "b", "c", "d", "e"):
        git(repository, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", name)
        named[name] = git(repository, "rev-parse", "HEAD")
    for tag, name in (("v0.1.0", "root"), ("v0.2.0rc1", "b"), ("v0.2.0", "d"), ("nightly", "d"), ("v2-beta", "e")):
        git(repository, "tag", tag, named[name])
    git(repository, "checkout", "-q", "--orphan", "rewritten")
    git(repository, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "old history")
    named["old"] = git(repository, "rev-parse", "HEAD")
    git(repository, "tag", "0.0.9", named["old"])
    return named


@pytest.mark.parametrize(
    ("commit", "bracket"),
    [
        ("a", ("0.1.0", "0.2.0rc1")),  # between two releases
        ("c", ("0.2.0rc1", "0.2.0")),  # a candidate is a release
        ("b", ("0.2.0rc1", "0.2.0rc1")),  # tagged at the commit itself
        ("e", ("0.2.0", None)),  # after the newest release: the newest in its history
        ("old", ("0.0.9", "0.0.9")),  # a tag without "v"
        ("root", ("0.1.0", "0.1.0")),
    ],
)
def test_a_commit_lies_between_the_releases_tagged_around_it(tagged: dict[str, str], commit: str, bracket: tuple) -> None:
    before, after = release_bracket(Path(tagged["path"]), tagged[commit])
    assert (str(before) if before else None, str(after) if after else None) == bracket


def test_a_commit_of_a_rewritten_history_is_placed_by_the_release_after_it(tagged: dict[str, str], tmp_path: Path) -> None:
    """kornia master at d6e14859 holds no tag in its history (0.7.1's commits were rewritten), while 0.7.2's history holds it."""
    repository = tmp_path / "rewritten"
    git(tmp_path, "clone", "-q", tagged["path"], str(repository))
    git(repository, "checkout", "-q", "--orphan", "fresh")
    git(repository, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "0.2.1's development")
    fresh = git(repository, "rev-parse", "HEAD")
    git(repository, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "release")
    git(repository, "tag", "v0.2.1")
    before, after = release_bracket(repository, fresh)
    assert (str(before), str(after)) == ("0.2.0", "0.2.1")
    with pytest.raises(HistoryError, match="cannot list its tags"):
        release_bracket(repository, "0" * 40)


@pytest.mark.parametrize(
    ("text", "build"),
    [
        ('{"url": "https://github.com/kornia/kornia", "vcs_info": {"vcs": "git", "commit_id": "d6e14859"}}',
         GitBuild("https://github.com/kornia/kornia", "d6e14859")),
        ('{"url": "file:///tmp/kornia", "dir_info": {"editable": true}}', None),  # a directory, no commit
        ('{"url": "https://x/y.zip", "archive_info": {}}', None),
        ('{"url": "https://x/y", "vcs_info": {"vcs": "hg", "commit_id": "1"}}', None),
        ("not json", None),
        ("", None),
    ],
)
def test_pep_610_records_read(text: str, build: GitBuild | None) -> None:
    assert parse_direct_url(text) == build


def test_a_local_history_is_used_where_it_is_and_a_missing_one_is_one_line(commits: dict[str, str], tmp_path: Path) -> None:
    assert history(f"file://{commits['path']}", tmp_path) == Path(commits["path"])
    with pytest.raises(HistoryError, match="no such repository"):
        history(f"file://{tmp_path / 'gone'}", tmp_path)
    with pytest.raises(HistoryError, match=r"cannot clone .*'s history"):
        history(f"{tmp_path / 'not-a-url-git-can-clone'}", tmp_path)


def fake_install(site: Path, version: str, direct_url: dict | None) -> None:
    """A kornia distribution's metadata, as pip leaves it, for importlib.metadata to find."""
    info = site / f"kornia-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: kornia\nVersion: {version}\n", encoding="utf-8")
    if direct_url is not None:
        (info / "direct_url.json").write_text(json.dumps(direct_url), encoding="utf-8")


def test_a_build_whose_distribution_is_named_otherwise_is_found_by_its_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """sam2 built from git is the distribution `SAM-2` (its top_level.txt: sam2, training): found
    by the import package, installed and placed by its commit, never "not installed"."""
    info = tmp_path / "fake_two-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: Fake-Two\nVersion: 1.0\n", encoding="utf-8")
    (info / "top_level.txt").write_text("faketwo\ntraining\n", encoding="utf-8")
    (info / "direct_url.json").write_text(json.dumps({"url": UNREACHABLE, "vcs_info": {"vcs": "git", "commit_id": "393ae33"}}), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert installed_version("faketwo") == "1.0" and git_build("faketwo") == GitBuild(UNREACHABLE, "393ae33")
    assert distribution_of("fake_two").metadata["Name"] == "Fake-Two"  # its own name, as pip normalises it
    assert distribution_of("training", [str(tmp_path)]).metadata["Name"] == "Fake-Two"  # a build folder (bisect's)
    assert distribution_of("fake", [str(tmp_path)]) is None and installed_version("fake") is None


@pytest.mark.parametrize(
    ("build", "fixed", "affected", "predates", "basis"),
    [
        ("middle", "recorded", True, False, "has {introduce}, which brought the bug, not {fix}, which fixed it"),
        ("after", "recorded", False, False, "has {fix}, which fixed the bug"),
        ("root", "recorded", False, True, "predates {introduce}, which brought the bug"),
        ("after", "open", True, False, "has {introduce}, which brought the bug (no fix yet)"),
        # Released (first_fixed) with no fixed_by: this commit may come after the fix, as 0.8.2 did.
        ("after", "unrecorded", None, False, "has {introduce}, which brought the bug; no fixed_by records the fix 0.8.2 released"),
    ],
)
def test_an_installed_git_build_is_placed_by_its_commit_not_its_dev_version(
    commits: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    build: str, fixed: str, affected: bool | None, predates: bool, basis: str,
) -> None:
    bug = replace(
        BUGS["kornia-2867"], introduced_by=(commits["introduce"],), fixed_by=commits["fix"] if fixed == "recorded" else None,
        first_fixed=None if fixed == "open" else "0.8.2",
    )
    url = f"file://{commits['path']}"
    fake_install(tmp_path, "0.7.2.dev0", {"url": url, "vcs_info": {"vcs": "git", "commit_id": commits[build]}})
    monkeypatch.syspath_prepend(str(tmp_path))
    status = affected_status(bug, cache=tmp_path / "cache")
    short = {name: value[:9] for name, value in commits.items()}
    assert (status.affected, status.predates, status.version) == (affected, predates, "0.7.2.dev0")
    assert status.basis == f"commit {short[build]} of {url} (0.7.2.dev0) " + basis.format(**short)


def test_the_d6e1485_verdicts_follow_the_commit(commits: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """kornia-2867 at a commit after RandomJPEG came and before its fix: a sighting is
    `reproduced` (PEP 440 alone called 0.7.2.dev0 unaffected: a false `regressed`)."""
    bug = replace(BUGS["kornia-2867"], introduced_by=(commits["introduce"],), fixed_by=commits["fix"])
    fake_install(tmp_path, "0.7.2.dev0", {"url": f"file://{commits['path']}", "vcs_info": {"vcs": "git", "commit_id": commits["middle"]}})
    monkeypatch.syspath_prepend(str(tmp_path))
    seen = Observation("t.py::t", SIMULATED, OBSERVED, "device mismatch")
    assert bug_verdict(bug, affected_status(bug, cache=tmp_path), [seen]).verdict == "reproduced"
    before = replace(bug, introduced_by=(commits["after"],), fixed_by=None)  # this build predates the bug
    assert bug_verdict(before, affected_status(before, cache=tmp_path), [replace(seen, observation=NOT_OBSERVED)]).verdict == NOT_AFFECTED


# A dev version, and release numbers below, inside and above kornia-2867's >=0.7.2,<0.8.2: kornia's
# tree keeps the last release's number until the next is tagged, so none of them places the commit.
@pytest.mark.parametrize("version", ["0.7.2.dev0", "0.7.1", "0.7.3", "0.8.2"])
def test_a_git_build_whose_history_cannot_be_read_is_unplaced_and_says_why(version: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_install(tmp_path, version, {"url": f"file://{tmp_path / 'gone'}", "vcs_info": {"vcs": "git", "commit_id": "d6e14859"}})
    monkeypatch.syspath_prepend(str(tmp_path))
    bug = BUGS["kornia-2867"]
    status = affected_status(bug, cache=tmp_path)
    assert (status.affected, status.predates) == (None, False)
    assert status.basis == f"commit d6e14859 of file://{tmp_path / 'gone'} ({version}) not placed: file://{tmp_path / 'gone'}: no such repository"
    # Seen: a failure naming what would place it, never `regressed`; clean: never `fixed` or `not-affected`.
    assert bug_verdict(bug, status, [Observation("t.py::t", SIMULATED, OBSERVED)]).verdict == "unplaced"
    assert bug_verdict(bug, status, [Observation("t.py::t", SIMULATED, NOT_OBSERVED)]).verdict == "inconclusive"


@pytest.mark.parametrize("version", ["0.7.1", "0.7.3", "0.8.2"])  # below, inside and above kornia-2867's range
def test_a_git_build_of_a_bug_without_recorded_commits_is_placed_by_no_version(
    commits: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str
) -> None:
    """kornia's tree says 0.9.0rc1 from that candidate until 0.9.0: a fix merged between them is in
    a build that says 0.9.0rc1. Without the bug's commits nothing but a probe places the build."""
    fake_install(tmp_path, version, {"url": f"file://{commits['path']}", "vcs_info": {"vcs": "git", "commit_id": commits["middle"]}})
    monkeypatch.syspath_prepend(str(tmp_path))
    bug = replace(BUGS["kornia-2867"], introduced_by=(), fixed_by=None)
    status = affected_status(bug, cache=tmp_path / "cache")
    assert (status.affected, status.predates) == (None, False)
    assert status.basis == (
        f"commit {commits['middle'][:9]} of file://{commits['path']} ({version}): its version does not place it, "
        "and no introduced_by / fixed_by is recorded, and no probe could tell"
    )
    assert bug_verdict(bug, status, [Observation("t.py::t", SIMULATED, OBSERVED)]).verdict == "unplaced"
    assert bug_verdict(bug, status, [Observation("t.py::t", SIMULATED, NOT_OBSERVED)]).verdict == "inconclusive"


def test_a_probe_places_a_git_build_of_a_bug_without_recorded_commits(
    commits: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """sam2 from git says 1.0 before and after its fix: its probe decides, as for any version that cannot place it."""
    fake_install(tmp_path, "0.7.3", {"url": f"file://{commits['path']}", "vcs_info": {"vcs": "git", "commit_id": commits["middle"]}})
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(versions, "run_probe", lambda reference: True)  # the fix is present
    bug = replace(BUGS["kornia-2867"], introduced_by=(), fixed_by=None, probe="fake:probe")
    status = affected_status(bug, cache=tmp_path / "cache")
    assert (status.affected, status.predates) == (False, False)
    assert status.basis.startswith("probe fake:probe says the fix is present (commit ")


def test_a_dev_version_without_a_recorded_commit_cannot_be_placed() -> None:
    status = place_release(BUGS["kornia-2867"], "0.7.2.dev0", None)
    assert (status.affected, status.predates) == (None, False)
    # A sighting there fails loudly without claiming a regression (rule 3); a clean run is inconclusive, never fixed.
    seen = bug_verdict(BUGS["kornia-2867"], status, [Observation("t.py::t", SIMULATED, OBSERVED)])
    assert seen.verdict == "unplaced" and seen.detail.endswith(TO_PLACE)
    assert bug_verdict(BUGS["kornia-2867"], status, [Observation("t.py::t", SIMULATED, NOT_OBSERVED)]).verdict == "inconclusive"


def test_the_registry_reads_and_checks_the_commit_fields(tmp_path: Path) -> None:
    from fixtures.known_bugs.registry import RegistryError, parse_bug

    entry = {
        "title": "t", "package": "kornia", "affected": ">=1,<2", "first_fixed": "2", "issue": "https://x/1",
        "kind": "deterministic", "symptom_device": "cuda", "introduced_by": "04434501a", "fixed_by": "a14319cc8",
    }
    assert (parse_bug(tmp_path, "k-1", entry).introduced_by, parse_bug(tmp_path, "k-1", entry).fixed_by) == (("04434501a",), "a14319cc8")
    copies = {**entry, "introduced_by": ["04434501a", "ec4fc08ca"]}  # one change, two histories
    assert parse_bug(tmp_path, "k-1", copies).introduced_by == ("04434501a", "ec4fc08ca")
    for bad in ([], ["04434501a", "PR 2177"], 7):
        with pytest.raises(RegistryError, match=r"\[k-1\]: field\(s\) must be git commit hashes .*: introduced_by"):
            parse_bug(tmp_path, "k-1", {**entry, "introduced_by": bad})
    with pytest.raises(RegistryError, match=r"\[k-1\]: field\(s\) must be git commit hashes .*: fixed_by"):
        parse_bug(tmp_path, "k-1", {**entry, "fixed_by": "PR 2838"})
    without = {key: value for key, value in entry.items() if key != "introduced_by"}
    with pytest.raises(RegistryError, match=r"\[k-1\]: fixed_by needs introduced_by"):
        parse_bug(tmp_path, "k-1", without)


# --- builds as maintainers make them, and hosts this machine cannot reach (no network here) ---

UNREACHABLE = "http://127.0.0.1:9/kornia/kornia"  # the discard port: git's connection is refused at once


def kornia_2867(commits: dict[str, str]):
    return replace(BUGS["kornia-2867"], introduced_by=(commits["introduce"],), fixed_by=commits["fix"])


def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, direct_url: dict) -> None:
    site = tmp_path / "site"
    fake_install(site, "0.7.2.dev0", direct_url)
    monkeypatch.syspath_prepend(str(site))


def verdict_if_seen(bug, status) -> str:
    return bug_verdict(bug, status, [Observation("t.py::t", SIMULATED, OBSERVED, "device mismatch")]).verdict


def test_a_git_url_whose_host_is_unreachable_is_placed_by_the_history_named_for_it(commits, tmp_path, monkeypatch) -> None:
    bug = kornia_2867(commits)
    installed(tmp_path, monkeypatch, {"url": UNREACHABLE, "vcs_info": {"vcs": "git", "commit_id": commits["middle"]}})
    named = parse_histories([f"git+{UNREACHABLE}.git={commits['path']}"])  # pip's URL, written as pip takes it
    status = affected_status(bug, cache=tmp_path / "cache", named=named)
    assert status.affected is True and status.basis.startswith(f"commit {commits['middle'][:9]} of {UNREACHABLE} (0.7.2.dev0) has ")
    assert verdict_if_seen(bug, status) == "reproduced"


def test_without_it_a_sighting_is_unplaced_never_regressed(commits, tmp_path, monkeypatch) -> None:
    bug = kornia_2867(commits)
    installed(tmp_path, monkeypatch, {"url": UNREACHABLE, "vcs_info": {"vcs": "git", "commit_id": commits["middle"]}})
    status = affected_status(bug, cache=tmp_path / "cache")
    assert status.affected is None and f"not placed: cannot clone {UNREACHABLE}'s history" in status.basis
    seen = bug_verdict(bug, status, [Observation("t.py::t", SIMULATED, OBSERVED, "device mismatch")])
    assert seen.verdict == "unplaced" and "--history URL=PATH" in seen.detail
    assert bug_verdict(bug, status, [Observation("t.py::t", SIMULATED, NOT_OBSERVED)]).verdict == "inconclusive"


@pytest.mark.parametrize("where", ["empty", "inside another repository"])
def test_a_history_named_where_there_is_none_is_one_line(commits, tmp_path, where: str) -> None:
    folder = tmp_path / "empty" if where == "empty" else Path(commits["path"]) / "not-a-repository"
    folder.mkdir()
    try:
        with pytest.raises(HistoryError, match=f"^{folder}, named for {UNREACHABLE} by --history, holds no git repository$"):
            history(UNREACHABLE, tmp_path / "cache", parse_histories([f"{UNREACHABLE}={folder}"]))
    finally:
        folder.rmdir()


DIRTY = "; uncommitted changes: placed by its HEAD"


def checkout_at(commits: dict[str, str], tmp_path: Path, name: str) -> Path:
    checkout = tmp_path / "kornia"
    subprocess.run(["git", "clone", "-q", commits["path"], str(checkout)], check=True)
    git(checkout, "checkout", "-q", commits[name])
    return checkout


def placed_at_middle(commits: dict[str, str], checkout: Path, status, words: str = "") -> bool:
    short = {name: value[:9] for name, value in commits.items()}
    return status.affected is True and status.basis == (
        f"HEAD {short['middle']} of the checkout {checkout} (0.7.2.dev0{words}) has {short['introduce']}, which brought the bug, "
        f"not {short['fix']}, which fixed it"
    )


@pytest.mark.parametrize(("change", "words"), [(None, ""), ("modified", DIRTY), ("untracked", DIRTY)])
def test_an_editable_checkout_is_placed_by_its_head(commits, tmp_path, monkeypatch, change, words) -> None:
    """`pip install -e .`: the checkout's own files run, so its HEAD (and whether the tree has
    changes beside it) is what was installed."""
    checkout = checkout_at(commits, tmp_path, "middle")
    if change == "modified":
        (checkout / "package.py").write_text("STATE = 'edited'\n")
    elif change == "untracked":
        (checkout / "new_module.py").write_text("NEW = True\n")
    installed(tmp_path, monkeypatch, {"url": f"file://{checkout}", "dir_info": {"editable": True}})
    bug = kornia_2867(commits)
    status = affected_status(bug, cache=tmp_path / "cache")
    assert placed_at_middle(commits, checkout, status, words), status.basis
    assert verdict_if_seen(bug, status) == "reproduced"


def record_line(path: str, content: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(content).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(content)}"


@pytest.mark.parametrize(
    ("after_install", "placed", "why"),
    [
        (None, True, ""),
        ("checkout fix", False, "the installed package.py differs from the checkout's: it has moved since it was built"),
        ("a file only in the copy", False, "none of its installed files is in the checkout to compare"),
    ],
)
def test_a_copy_of_a_checkout_is_placed_by_its_head_while_the_checkout_holds_its_files(
    commits, tmp_path, monkeypatch, after_install: str | None, placed: bool, why: str
) -> None:
    """`pip install .`: a copy. Its RECORD's hashes must match the checkout's files, or the HEAD
    now (after a `git checkout` since) is not what was built, and nothing places it."""
    checkout = checkout_at(commits, tmp_path, "middle")
    installed(tmp_path, monkeypatch, {"url": f"file://{checkout}", "dir_info": {}})
    copied = "only_in_copy.py" if after_install == "a file only in the copy" else "package.py"
    (tmp_path / "site" / "kornia-0.7.2.dev0.dist-info" / "RECORD").write_text(record_line(copied, (checkout / "package.py").read_bytes()) + "\n")
    if after_install == "checkout fix":
        git(checkout, "checkout", "-q", commits["fix"])
    bug = kornia_2867(commits)
    status = affected_status(bug, cache=tmp_path / "cache")
    if placed:
        assert placed_at_middle(commits, checkout, status), status.basis
    else:
        head = commits["fix" if after_install == "checkout fix" else "middle"][:9]
        assert status.affected is None and status.basis.endswith(f"HEAD {head} of the checkout {checkout} (0.7.2.dev0) not placed: {why}")
        assert verdict_if_seen(bug, status) == "unplaced"


def test_a_checkout_at_a_path_with_spaces_is_found(commits, tmp_path, monkeypatch) -> None:
    """pip percent-encodes the directory in its file URL."""
    checkout = tmp_path / "my src" / "kornia"
    checkout.parent.mkdir()
    subprocess.run(["git", "clone", "-q", commits["path"], str(checkout)], check=True)
    git(checkout, "checkout", "-q", commits["middle"])
    installed(tmp_path, monkeypatch, {"url": checkout.as_uri(), "dir_info": {"editable": True}})
    assert "%20" in checkout.as_uri()
    assert placed_at_middle(commits, checkout, affected_status(kornia_2867(commits), cache=tmp_path / "cache"))


def test_a_package_in_a_checkouts_subfolder_is_placed_by_the_checkouts_head(commits, tmp_path) -> None:
    checkout = tmp_path / "mono"
    subprocess.run(["git", "clone", "-q", commits["path"], str(checkout)], check=True)
    (checkout / "sub").mkdir()
    (checkout / "sub" / "setup.py").write_text("")
    git(checkout, "add", "sub/setup.py")
    git(checkout, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "sub")
    build = checkout_build(checkout / "sub")
    assert (build.checkout, build.commit, build.dirty) == (checkout, git(checkout, "rev-parse", "HEAD"), False)


def test_a_plain_source_tree_cannot_be_placed_even_inside_another_repository(commits, tmp_path, monkeypatch) -> None:
    """An unpacked sdist or a copied tree has no history of its own; an enclosing repository that
    does not track its files (a home folder kept in git) is not its history."""
    plain = Path(commits["path"]) / "unpacked-sdist"  # untracked, inside the history's own work tree
    plain.mkdir()
    (plain / "package.py").write_text("STATE = 'copied'\n")
    assert checkout_build(plain) is None and checkout_build(tmp_path) is None
    installed(tmp_path, monkeypatch, {"url": f"file://{plain}", "dir_info": {}})
    bug = kornia_2867(commits)
    status = affected_status(bug, cache=tmp_path / "cache")
    assert status.affected is None and status.basis.startswith("version '0.7.2.dev0' cannot be placed")
    assert verdict_if_seen(bug, status) == "unplaced"
    (plain / "package.py").unlink()
    plain.rmdir()


@pytest.mark.parametrize(
    ("url", "normal"),
    [
        ("https://github.com/kornia/kornia", "github.com/kornia/kornia"),
        ("git+https://GitHub.com/kornia/kornia.git/", "github.com/kornia/kornia"),
        ("git@github.com:kornia/kornia.git", "github.com/kornia/kornia"),
        ("ssh://git@github.com/kornia/kornia", "github.com/kornia/kornia"),
        ("github.com/kornia/kornia", "github.com/kornia/kornia"),
        ("https://host:8080/x/y.git", "host:8080/x/y"),
        ("file:///srv/mirrors/kornia.git/", "/srv/mirrors/kornia.git"),
        ("/srv/mirrors/kornia.git", "/srv/mirrors/kornia.git"),  # a local path, as written
        ("file:///srv/my%20mirrors/k", "/srv/my mirrors/k"),
    ],
)
def test_urls_are_compared_as_pip_and_users_write_them(url: str, normal: str) -> None:
    assert normalized_url(url) == normal


def test_history_entries_are_url_equals_path(tmp_path: Path) -> None:
    assert parse_histories([f"https://github.com/kornia/kornia={tmp_path}", "git@host:a/b=~/b.git"]) == {
        "github.com/kornia/kornia": tmp_path,
        "host/a/b": Path("~/b.git").expanduser(),
    }
    for entry in ("no-equals", "=/path", "https://x/y="):
        with pytest.raises(HistoryOptionError, match="is not URL=PATH"):
            parse_histories([entry])

    with pytest.raises(HistoryOptionError, match=r"^'https://x/y=~nosuchuser/b.git': Could not determine home directory"):
        parse_histories(["https://x/y=~nosuchuser/b.git"])


def test_a_history_named_where_no_repository_is_refused(commits: dict[str, str], tmp_path: Path) -> None:
    check_histories({"github.com/kornia/kornia": Path(commits["path"])})  # a work tree's history: accepted
    for where in (tmp_path / "nonexistent", tmp_path):  # nothing there; a folder git does not know
        with pytest.raises(HistoryOptionError) as refused:
            check_histories({"github.com/kornia/kornia": where})
        assert str(refused.value) == f"{where}, named for github.com/kornia/kornia, holds no git repository"


def test_a_history_git_cannot_look_at_is_refused_in_words(commits: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")  # no git to run
    with pytest.raises(HistoryOptionError, match=r"^/.*, named for github.com/kornia/kornia: No such file or directory$"):
        check_histories({"github.com/kornia/kornia": Path(commits["path"])})


# --- the option and the variable, end to end: --list-bugs and a run's verdict ---

SESSION_REGISTRY = """
[fake-2867]
title = "a fake bug of a package built from git"
package = "fakekornia"
affected = "==0.7.2.dev0"
first_fixed = "0.7.2"
issue = "https://example.invalid/issues/1"
kind = "deterministic"
symptom_device = "cuda"
introduced_by = "{introduce}"
fixed_by = "{fix}"
"""
SEEN_BY_PROXY = """
import pytest
from fixtures.known_bugs.outcomes import BugObserved

@pytest.mark.known_bug("fake-2867", evidence="proxy")
def test_seen():
    raise BugObserved("device mismatch")
"""


@pytest.mark.parametrize("named_by", ["--history", "HARNESS_HISTORY", None])
def test_a_session_places_a_build_by_the_history_the_option_or_the_variable_names(harness, commits, tmp_path, monkeypatch, named_by) -> None:
    site = tmp_path / "site"
    info = site / "fakekornia-0.7.2.dev0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fakekornia\nVersion: 0.7.2.dev0\n")
    (info / "direct_url.json").write_text(json.dumps({"url": UNREACHABLE, "vcs_info": {"vcs": "git", "commit_id": commits["middle"]}}))
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # no clone of the user's cache is read or made
    registry = tmp_path / "bugs.toml"
    registry.write_text(SESSION_REGISTRY.format(introduce=commits["introduce"], fix=commits["fix"]))
    entry = f"{UNREACHABLE}={commits['path']}"
    options = ["--history", entry] if named_by == "--history" else []
    if named_by == "HARNESS_HISTORY":
        monkeypatch.setenv("HARNESS_HISTORY", entry)
    listing = harness.runpytest(f"--bug-registry={registry}", "--list-bugs", *options)
    harness.makepyfile(SEEN_BY_PROXY)
    run = harness.runpytest(f"--bug-registry={registry}", "--no-reports", *options)
    middle, introduce = commits["middle"][:9], commits["introduce"][:9]
    if named_by:
        listing.stdout.fnmatch_lines([f"fake-2867*reproduced*commit {middle} of {UNREACHABLE} (0.7.2.dev0) has {introduce}*"])
        run.stdout.fnmatch_lines(["fake-2867*reproduced*proxy*"])
        assert run.ret == 0
    else:
        listing.stdout.fnmatch_lines([f"fake-2867*unplaced*inconclusive*not placed: cannot clone {UNREACHABLE}'s history*"])
        run.stdout.fnmatch_lines(
            ["*OBSERVED, RELEASE NOT PLACED fake-2867*", "fake-2867*unplaced*proxy*observed; release not placed: to place it*--history URL=PATH*"]
        )
        assert run.ret == pytest.ExitCode.TESTS_FAILED
