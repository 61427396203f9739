"""Root conftest: loads the harness's plugins for `pytest` (suites) and `pytest tests` alike."""

pytest_plugins = [
    "fixtures.devices.plugin",
    "fixtures.determinism.plugin",
    "fixtures.known_bugs.plugin",
    "fixtures.races.plugin",
    "reports.run.plugin_results",
    "reports.run.plugin_html",
    "reports.run.plugin_timings",
    "fixtures.evidence.plugin",
    "fixtures.sweeps.plugin",
]
