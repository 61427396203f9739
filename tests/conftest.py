"""Self-tests of the harness. `pytester` runs small pytest sessions with the harness plugins;
tests/plugin_fault_matrix.py adds the `catches` marker and prints the fault x oracle matrix."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import pytest_plugins as HARNESS_PLUGINS
from reports.plugin_results import SELF_TEST_ENV

pytest_plugins = ["pytester", "tests.plugin_fault_matrix"]


REPO = Path(__file__).resolve().parents[1]
# Every session the self-tests start inherits this: none writes over the suites' reports/out/.
os.environ[SELF_TEST_ENV] = "1"


@pytest.fixture
def harness(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A pytester whose sessions, in process or in a subprocess, load the harness plugins as the
    repository's conftest does."""
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    pytester.makeconftest(f"pytest_plugins = {list(HARNESS_PLUGINS)!r}")
    return pytester
