"""Root conftest: loads the harness's plugins for `pytest` (suites) and `pytest tests` alike."""

from fixtures.plugins import HARNESS_PLUGINS

pytest_plugins = list(HARNESS_PLUGINS)
