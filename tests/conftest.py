"""Self-tests of the harness. `pytester` runs small pytest sessions with the harness plugins;
tests/plugin_fault_matrix.py adds the `catches` marker and prints the fault x oracle matrix."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import pytest_plugins as HARNESS_PLUGINS

pytest_plugins = ["pytester", "tests.plugin_fault_matrix"]


REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def harness(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A pytester whose sessions, in process or in a subprocess, load the harness plugins as the
    repository's conftest does."""
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    pytester.makeconftest(f"pytest_plugins = {list(HARNESS_PLUGINS)!r}")
    return pytester
