"""Every relative link of the checkout's Markdown pages reaches its file, and its `#anchor` a
heading of that page as GitHub names headings: a page moved or a heading renamed breaks the
pages that pointed to it, which nobody reads again until a user follows the link."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

from tests.helpers.checkout import REPO, checkout_files

# A link or image: [text](target) with an optional <...> around the target and an optional "title".
LINK = re.compile(r'!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)')
FENCED = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
INLINE_CODE = re.compile(r"`[^`\n]*`")


def heading_anchor(heading: str) -> str:
    """GitHub's anchor for a heading: a closing run of #s, links (their text kept), HTML tags and
    code marks dropped; lower case; every character but letters, digits, _, - and spaces dropped;
    each space a hyphen."""
    text = re.sub(r"\s+#+\s*$", "", heading.strip())
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"<[^>]+>", "", text).replace("`", "")
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def anchors(page: str) -> set[str]:
    """The anchors of a page's `#` headings (the pages write no other kind), numbered as GitHub
    numbers repeats: a taken anchor gets the next free -1, -2, ... of its own count."""
    counts: dict[str, int] = {}
    found: set[str] = set()
    for heading in re.findall(r"^#{1,6} (.+)$", FENCED.sub("", page), re.M):
        base = anchor = heading_anchor(heading)
        while anchor in found:
            counts[base] = counts.get(base, 0) + 1
            anchor = f"{base}-{counts[base]}"
        found.add(anchor)
    return found


def broken_links(page: Path) -> list[str]:
    """The page's relative links (outside code) whose file or heading is missing."""
    text = INLINE_CODE.sub("", FENCED.sub("", page.read_text(encoding="utf-8")))
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:: another site's business
            continue
        path, _, anchor = target.partition("#")
        destination = (page.parent / unquote(path)).resolve() if path else page
        if not destination.exists():
            broken.append(f"{target}: no such file")
        elif anchor and destination.suffix == ".md" and unquote(anchor) not in anchors(destination.read_text(encoding="utf-8")):
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
        ("See [the guide](docs/x.md)", "see-the-guide"),
        ("a <code>b</code>", "a-b"),
        ("Heading ##", "heading"),
    ],
)
def test_a_headings_anchor_is_githubs(heading: str, anchor: str) -> None:
    assert heading_anchor(heading) == anchor


def test_repeated_headings_are_numbered_as_github_numbers_them_and_fenced_lines_are_no_headings() -> None:
    page = "# Usage\n## Usage 1\n## Usage\n```bash\n# a comment\n```\n~~~\n# another\n~~~\n"
    assert anchors(page) == {"usage", "usage-1", "usage-2"}


def test_a_missing_file_and_a_missing_heading_are_found(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other\n## A part\n", encoding="utf-8")
    (tmp_path / "two words.md").write_text("# Two\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        '[ok](other.md#a-part) [gone](missing.md) [renamed](other.md#the-part) [site](https://example.com/x.md#y)\n'
        '`[code](not-a-link.md)` [here](#top) [titled](gone.md "a title") [spaced](two%20words.md) [angled](<other.md#nope>)\n# Top\n',
        encoding="utf-8",
    )
    assert broken_links(page) == [
        "missing.md: no such file",
        "other.md#the-part: no heading with that anchor",
        "gone.md: no such file",
        "other.md#nope: no heading with that anchor",
    ]


def test_every_relative_link_of_the_checkouts_pages_resolves() -> None:
    pages = checkout_files(".md")
    assert len(pages) >= 40, f"the checkout's pages were not found: {len(pages)}"
    broken = [f"{page.relative_to(REPO)}: {problem}" for page in pages for problem in broken_links(page)]
    assert not broken, "links that lead nowhere:\n" + "\n".join(broken)
