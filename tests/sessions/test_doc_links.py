"""Every relative link of the checkout's Markdown pages reaches its file, and its `#anchor` a
heading of that page as GitHub names headings: a page moved or a heading renamed breaks the
pages that pointed to it, which nobody reads again until a user follows the link."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCED = re.compile(r"^```.*?^```", re.S | re.M)
INLINE_CODE = re.compile(r"`[^`\n]*`")


def heading_anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, code marks and punctuation dropped (hyphens and
    underscores kept), each space a hyphen."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", "")).replace(" ", "-")


def anchors(page: str) -> set[str]:
    """The anchors of a page's headings; a repeated heading's later ones get -1, -2, ..."""
    seen: dict[str, int] = {}
    found = set()
    for heading in re.findall(r"^#{1,6} (.+)$", FENCED.sub("", page), re.M):
        anchor = heading_anchor(heading)
        found.add(f"{anchor}-{seen[anchor]}" if anchor in seen else anchor)
        seen[anchor] = seen.get(anchor, 0) + 1
    return found


def broken_links(page: Path) -> list[str]:
    """The page's relative links (outside code) whose file or heading is missing."""
    text = INLINE_CODE.sub("", FENCED.sub("", page.read_text(encoding="utf-8")))
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:: another site's business
            continue
        path, _, anchor = target.partition("#")
        destination = (page.parent / path).resolve() if path else page
        if not destination.exists():
            broken.append(f"{target}: no such file")
        elif anchor and destination.suffix == ".md" and anchor not in anchors(destination.read_text(encoding="utf-8")):
            broken.append(f"{target}: no heading with that anchor")
    return broken


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("The budget a GPU gets", "the-budget-a-gpu-gets"),
        ("4. Try an older release", "4-try-an-older-release"),
        ("Not faithful, and not refused", "not-faithful-and-not-refused"),
        ("`pytest --simcuda`: the options", "pytest---simcuda-the-options"),
        ("simcuda_on_a_gpu.py", "simcuda_on_a_gpupy"),
    ],
)
def test_a_headings_anchor_is_githubs(heading: str, anchor: str) -> None:
    assert heading_anchor(heading) == anchor


def test_a_repeated_heading_gets_a_numbered_anchor_and_fenced_lines_are_no_headings() -> None:
    assert anchors("# Usage\n## Usage\n```bash\n# a comment\n```\n") == {"usage", "usage-1"}


def test_a_missing_file_and_a_missing_heading_are_found(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other\n## A part\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](other.md#a-part) [gone](missing.md) [renamed](other.md#the-part) [site](https://example.com/x.md#y)\n"
        "`[code](not-a-link.md)` [here](#top)\n# Top\n",
        encoding="utf-8",
    )
    assert broken_links(page) == ["missing.md: no such file", "other.md#the-part: no heading with that anchor"]


def test_every_relative_link_of_the_checkouts_pages_resolves() -> None:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.md"], cwd=REPO, capture_output=True, text=True, check=False
    )
    if listed.returncode != 0:
        pytest.skip(f"not a git checkout: {listed.stderr.strip()}")
    pages = [REPO / name for name in listed.stdout.splitlines() if (REPO / name).is_file()]
    assert len(pages) >= 40, f"the checkout's pages were not found: {len(pages)}"
    broken = [f"{page.relative_to(REPO)}: {problem}" for page in pages for problem in broken_links(page)]
    assert not broken, "links that lead nowhere:\n" + "\n".join(broken)
