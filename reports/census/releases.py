"""Which releases a census runs and where each release's own tests come from: the git tag the
package's repository gives it (v0.8.2 or 0.8.2), or a commit the user names for a release with no
tag there (--tests-at 0.9.0=b4f5a78a1)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from packaging.version import InvalidVersion, Version


class ReleaseRangeError(ValueError):
    """Bad input: one line for the user."""


def parse_tests_at(items: list[str]) -> dict[str, str]:
    """RELEASE=REF pairs, each release a PEP 440 version."""
    refs = {}
    for item in items:
        release, sep, ref = item.partition("=")
        if not sep or not release or not ref:
            raise ReleaseRangeError(f"--tests-at {item!r}: give RELEASE=REF, e.g. 0.9.0=b4f5a78a1")
        version(release, "--tests-at")
        refs[release] = ref
    return refs


def version(text: str, what: str) -> Version:
    try:
        return Version(text)
    except InvalidVersion:
        raise ReleaseRangeError(f"{what}: {text!r} is not a release (PEP 440, e.g. 0.8.2)") from None


def repository_tags(repo: Path) -> list[str]:
    done = subprocess.run(["git", "-C", str(repo), "tag", "--list"], capture_output=True, text=True)
    if done.returncode != 0:
        why = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "git failed"
        raise ReleaseRangeError(f"--repo {repo}: not a git repository ({why})")
    return done.stdout.split()


def tagged_releases(tags: list[str]) -> dict[str, str]:
    """Final releases among the tags (v0.8.2 and 0.8.2 alike), release -> tag; a release tagged
    both ways takes the v-tag, as the repositories that have both moved to it."""
    releases: dict[str, str] = {}
    for tag in sorted(tags, key=lambda tag: tag.startswith("v")):
        try:
            parsed = Version(tag.removeprefix("v"))
        except InvalidVersion:
            continue
        if not parsed.is_prerelease and not parsed.is_devrelease:
            releases[str(parsed)] = tag
    return releases


def census_releases(arguments: list[str], tagged: dict[str, str], named: dict[str, str]) -> dict[str, str]:
    """Release -> the ref its tests come from, oldest first. Each argument is a release or a range
    FIRST..LAST (both ends included: the repository's tagged final releases in it, and the releases
    --tests-at names in it)."""
    refs = {**tagged, **named}
    chosen: dict[str, str] = {}
    for argument in arguments:
        first, dots, last = argument.partition("..")
        if dots:
            low, high = version(first, argument), version(last, argument)
            if low > high:
                raise ReleaseRangeError(f"{argument}: the first release is newer than the last")
            for end in (first, last):  # an end left out silently would be a shorter census than asked for
                ref_of(end, refs)
            chosen.update((release, ref) for release, ref in refs.items() if low <= Version(release) <= high)
        else:
            version(argument, "release")
            chosen[argument] = ref_of(argument, refs)
    return dict(sorted(chosen.items(), key=lambda item: Version(item[0])))


def ref_of(release: str, refs: dict[str, str]) -> str:
    if release not in refs:
        raise ReleaseRangeError(
            f"{release}: no tag v{release} or {release} in the repository; name the commit its tests come from: --tests-at {release}=REF"
        )
    return refs[release]
