"""Root conftest: loads the harness's plugins for `pytest` (suites) and `pytest tests` alike."""

pytest_plugins = [
    "fixtures.plugin_devices",
    "fixtures.plugin_determinism",
    "fixtures.plugin_known_bugs",
    "reports.plugin_results",
    "reports.plugin_html",
    "fixtures.plugin_evidence",
    "fixtures.plugin_sweeps",
]
