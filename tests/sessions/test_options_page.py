"""docs/reference/options.md against the options the harness, simcuda and the self-tests register:
an option added to a plugin and not to the page fails here, and so does one the page puts under the
wrong command (`pytest` for the suites, `pytest tests` for the self-tests alone) or a row no plugin
registers. How each option of the `pytest` table behaves when typed is tests/sessions/test_readme_options.py's."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import re
import tomllib
from pathlib import Path

import pytest

import tests.conftest
from fixtures.plugins import HARNESS_PLUGINS
from tests.conftest import REPO

OPTIONS_PAGE = REPO / "docs" / "reference" / "options.md"
SUITES, SELF_TESTS = "pytest", "pytest tests"
# The plugins a session of this checkout loads, by the command that loads them: the root conftest and
# its plugins, and the install's entry points (simcuda's), in every run (`pytest`, and so `pytest
# tests` too); the self-tests' conftest and its plugins only in a run of tests/ (`pytest tests`).
ENTRY_POINTS = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["entry-points"]["pytest11"]
LOADED_BY = {
    **dict.fromkeys(["conftest", *HARNESS_PLUGINS, *ENTRY_POINTS.values()], SUITES),
    **dict.fromkeys(["tests.conftest", *tests.conftest.pytest_plugins], SELF_TESTS),
}
# The page's rows for options other installed plugins register (`-n`, pytest-xdist's, is short): the plugin each.
OTHER_PLUGINS = {"--timeout": "pytest_timeout", "--hypothesis-profile": "_hypothesis_pytestplugin"}


class RecordingParser:
    """What pytest_addoption hands over, keeping only the options' names."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def addoption(self, *names: str, **settings: object) -> None:
        self.names += [name for name in names if name.startswith("--")]

    def getgroup(self, *args: object, **kwargs: object) -> RecordingParser:
        return self

    def addini(self, *args: object, **kwargs: object) -> None:
        pass


def is_the_harness(plugin: str) -> bool:
    """Whether the plugin is a module of this checkout (`pytester`, pytest's own plugin the self-tests load, is not)."""
    spec = importlib.util.find_spec(plugin)
    return spec is not None and spec.origin is not None and Path(spec.origin).resolve().is_relative_to(REPO)


def options_of(plugin: str) -> list[str]:
    """The `--options` the plugin's pytest_addoption adds."""
    parser = RecordingParser()
    hook = getattr(importlib.import_module(plugin), "pytest_addoption", None)
    if hook is not None:  # given what it asks for, as pluggy gives it
        arguments = {"parser": parser, "pluginmanager": pytest.PytestPluginManager()}
        hook(**{name: arguments[name] for name in inspect.signature(hook).parameters})
    return parser.names


def registered_options() -> dict[str, str]:
    """Each `--option` a plugin of LOADED_BY adds -> the command that loads that plugin."""
    return {option: command for plugin, command in LOADED_BY.items() if is_the_harness(plugin) for option in options_of(plugin)}


def documented_options(page: str) -> dict[str, str]:
    """Each `--option` the page's tables give a row (a backticked form of a first cell) -> the command
    its section's heading starts with; "" for a row under a heading that names none."""
    documented: dict[str, str] = {}
    for section in re.split(r"^(?=## )", page, flags=re.M):
        heading = re.match(r"## `(pytest[^`]*)`", section)
        for cell in re.findall(r"^\| (.+?) \|", section, re.M):
            for form in re.findall(r"`([^`]+)`", cell):
                if form.startswith("--"):
                    documented[re.split(r"[ =]", form, maxsplit=1)[0]] = heading[1] if heading else ""
    return documented


def test_the_page_reader_takes_each_rows_command_from_its_heading() -> None:
    page = "intro `--not-a-row`\n## `pytest`: a\n| `--a N` | x |\n## `pytest tests` only\n| `--b=V`, `-c` | y |\n## Other\n| `--d` | z |\n"
    assert documented_options(page) == {"--a": SUITES, "--b": SELF_TESTS, "--d": ""}


def test_the_loaded_plugins_are_found_and_the_other_plugins_options_are_theirs() -> None:
    assert "simcuda.pytest_plugin" in LOADED_BY and "fixtures.devices.plugin" in LOADED_BY
    assert not is_the_harness("pytester")
    for option, plugin in OTHER_PLUGINS.items():
        assert option in options_of(plugin), f"{plugin} no longer registers {option}"


def test_every_registered_option_has_a_row_under_its_command_on_the_options_page() -> None:
    options = registered_options()
    assert {"--device": SUITES, "--simcuda": SUITES, "--release-range": SELF_TESTS}.items() <= options.items()  # all three kinds read
    documented = documented_options(OPTIONS_PAGE.read_text(encoding="utf-8"))
    missing = sorted(set(options) - set(documented))
    assert not missing, f"registered but given no row on {OPTIONS_PAGE.name}: {missing}"
    misplaced = {
        option: f"`{documented[option] or 'no command'}`, declared in `{command}`"
        for option, command in options.items()
        if documented[option] != command
    }
    assert not misplaced, f"{OPTIONS_PAGE.name} puts these under another command than the one that declares them: {misplaced}"
    stale = sorted(set(documented) - set(options) - set(OTHER_PLUGINS))
    assert not stale, f"{OPTIONS_PAGE.name} has rows for options no plugin registers: {stale}"


@pytest.mark.parametrize("command", [SUITES, SELF_TESTS])
def test_each_command_has_its_section(command: str) -> None:
    headings = re.findall(r"^## `(pytest[^`]*)`", OPTIONS_PAGE.read_text(encoding="utf-8"), re.M)
    assert command in headings, f"{OPTIONS_PAGE.name}: no section heading starts with `{command}`: {headings}"
