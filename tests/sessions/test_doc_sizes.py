"""Documents sized to their reader: simcuda's front door (simcuda/README.md, also the simcuda
distribution's long description) and bench/README.md (its scripts and their current results) stay
at most 12 KB. Reference and explanation go under docs/, replaced figures to CHANGELOG.md."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

LIMIT = 12 * 1024  # bytes, as `wc -c` counts them
SIZED = ["simcuda/README.md", "bench/README.md"]


@pytest.mark.parametrize("name", SIZED)
def test_the_document_is_at_most_12_kb(name: str) -> None:
    size = len((REPO / name).read_bytes())
    assert size <= LIMIT, (
        f"{name} is {size:,} bytes, over the limit of {LIMIT:,} (12 KB): move reference and explanation to a page under docs/, "
        "and replaced figures to CHANGELOG.md"
    )


def test_the_limit_reads_a_file_too_big(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check fails, naming the file and its size, on a document over the limit."""
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "README.md").write_bytes(b"x" * (LIMIT + 1))
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    with pytest.raises(AssertionError, match=r"bench/README\.md is 12,289 bytes, over the limit of 12,288"):
        test_the_document_is_at_most_12_kb("bench/README.md")
