"""The checkout's files as git lists them: tracked or new, never the ignored ones (.venv,
reports/out, __pycache__, .pytest_cache), for the self-tests that read every page of the tree."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def checkout_files(suffix: str = "") -> list[Path]:
    """Every file of the checkout whose name ends with `suffix`; a copy that is not a git
    checkout skips the test asking, saying so."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=REPO, capture_output=True, text=True, check=False)
    if listed.returncode != 0:
        pytest.skip(f"not a git checkout: {listed.stderr.strip()}")
    return [REPO / name for name in listed.stdout.splitlines() if name.endswith(suffix) and (REPO / name).is_file()]
