"""docs/reference/options.md against the options the harness, simcuda and the self-tests register:
an option added to a plugin and not to the page fails here. How each option of the Options table
behaves when typed is tests/sessions/test_readme_options.py's."""

from __future__ import annotations

import importlib
import re

import conftest
from tests.conftest import REPO

OPTIONS_PAGE = REPO / "docs" / "reference" / "options.md"
# The modules whose pytest_addoption a session of this checkout runs: the root conftest's plugins,
# simcuda's (an entry point) and the self-tests' conftest (`pytest tests`).
REGISTERING = [*conftest.pytest_plugins, "simcuda.pytest_plugin", "tests.conftest"]


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


def registered_options() -> dict[str, str]:
    """Each `--option` a module of REGISTERING adds -> that module."""
    found = {}
    for name in REGISTERING:
        module = importlib.import_module(name)
        if hasattr(module, "pytest_addoption"):
            parser = RecordingParser()
            module.pytest_addoption(parser)
            found.update(dict.fromkeys(parser.names, name))
    return found


def documented_options(page: str) -> set[str]:
    """The options the page's tables give a row: each backticked `--option` form of a first cell."""
    first_cells = re.findall(r"^\| (.+?) \|", page, re.M)
    return {re.split(r"[ =]", form, maxsplit=1)[0] for cell in first_cells for form in re.findall(r"`([^`]+)`", cell) if form.startswith("--")}


def test_every_registered_option_has_a_row_on_the_options_page() -> None:
    options = registered_options()
    assert {"--device", "--simcuda", "--release-range"} <= set(options)  # the recorder reads all three kinds
    documented = documented_options(OPTIONS_PAGE.read_text(encoding="utf-8"))
    missing = {option: module for option, module in options.items() if option not in documented}
    assert not missing, f"registered but given no row on {OPTIONS_PAGE.name}: {missing}"
