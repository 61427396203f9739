"""pytest11 entry point: the harness's options typed with a space keep their values.

pytest looks for its configuration file (and so for the rootdir, `pythonpath`, `addopts` and the
root conftest that loads the harness's plugins) before any plugin has declared an option: in its
first pass over the arguments `--report-dir /ci/out` is an unknown word followed by a path, which
pytest takes for a test location. When that path lies outside the checkout, pytest finds no
configuration from it, never loads the harness's plugins, and stops with "unrecognized arguments:
--report-dir" (pytest issues 1471, 6904 and 8846; only the `--report-dir=/ci/out` form escapes).

No plugin can run before that pass: pytest loads its own plugins, then looks for the
configuration, then loads installed entry points like this one. So this plugin repairs the
pass's one wrong conclusion, before any conftest is loaded: when pytest found no configuration,
the invocation directory is in this harness's checkout, and a word that pytest took for a test
location directly follows an option pytest did not know yet, the configuration is looked for
again without those words, as it would have been had the option been declared, and put in
place. Everything after that is pytest's own: the final pass, with every option declared, reads
`--report-dir /ci/out` as the option and its value.

It also answers `--release-range` typed in a run of the suites (`pytest --release-range`) with one
line naming `pytest tests --release-range`: the option is the self-tests' (tests/conftest.py, which
a declaration at the root would clash with), and only this plugin sees the command line after the
conftests are loaded and before pytest rejects the word with no hint.

Outside a checkout of this harness (any other project in the same environment) it does nothing.
"""

from __future__ import annotations

import copy
import tomllib
from collections.abc import Generator, Sequence
from pathlib import Path

import pytest
from _pytest.config.findpaths import determine_setup, locate_config

DISTRIBUTION = "gpu-regression-harness"
# What pytest's Config holds of its configuration file (pytest 8.0 to 9.2): checked before any
# is touched, so a pytest that keeps them elsewhere gets a one-line error, never a half-repair.
_CONFIG_ATTRIBUTES = (
    "_rootpath",
    "_inipath",
    "_inicfg",
    "_inicache",
    "_ignored_config_files",
    "_validate_args",
    "_checkversion",
    "_configure_python_path",
)


def values_taken_for_paths(args: Sequence[str], positional: Sequence[str], known: set[str]) -> list[str]:
    """The words pytest's first pass put among the test locations although they follow an option
    it did not know (`--report-dir /ci/out`: "/ci/out"). `known`: the options pytest knew then."""
    taken = []
    for before, word in zip(args, args[1:]):
        unknown_option = before.startswith("--") and "=" not in before and before not in known
        if unknown_option and word in positional and word not in taken:
            taken.append(word)
    return taken


def is_harness_config(inipath: Path | None) -> bool:
    """Whether `inipath` is this harness's pyproject.toml."""
    if inipath is None or inipath.name != "pyproject.toml":
        return False
    try:
        project = tomllib.loads(inipath.read_text(encoding="utf-8")).get("project", {})
    except (OSError, tomllib.TOMLDecodeError):
        return False
    return project.get("name") == DISTRIBUTION


def _known_long_options(parser: pytest.Parser) -> set[str]:
    return {name for option in parser._anonymous.options for name in option.names() if name.startswith("--")} | {
        name for group in parser._groups for option in group.options for name in option.names() if name.startswith("--")
    }


RELEASE_RANGE = "--release-range"
RELEASE_RANGE_HINT = (
    "--release-range is an option of the self-tests: `pytest tests --release-range` runs their release-range rehearsals "
    "(to run the suites over releases: `python -m reports scan PACKAGE RELEASE...`)"
)


def typed_release_range(args: Sequence[str]) -> bool:
    """Whether the command line carries `--release-range` as an option (after `--` a word is a test location)."""
    words = args[: args.index("--")] if "--" in args else args
    return any(word == RELEASE_RANGE or word.startswith(f"{RELEASE_RANGE}=") for word in words)


def release_range_hint(args: Sequence[str], known: set[str], collects_self_tests: bool) -> str | None:
    """The one line for `--release-range` typed in a run of the suites, or None. `known`: the options
    declared once the initial conftests are loaded. The self-tests' conftest declares it, but
    `pytest --bug ID` loads that conftest too (pytest's first pass takes ID for a path), so the
    option declared is not enough: the run must also collect the self-tests."""
    if not typed_release_range(args) or (RELEASE_RANGE in known and collects_self_tests):
        return None
    return RELEASE_RANGE_HINT


def run_locations(positional: Sequence[str], testpaths: Sequence[str], invocation: Path, rootpath: Path) -> list[Path]:
    """Where the run collects, as pytest decides it: the locations typed (a node id's file part), else
    `testpaths` when pytest runs from the root, else the invocation directory."""
    words = list(positional) or (list(testpaths) if invocation == rootpath else []) or ["."]
    return [(invocation / word.partition("::")[0]).resolve() for word in words]


def collects_under(locations: Sequence[Path], folder: Path) -> bool:
    """Whether any location lies in `folder`, or holds it (`pytest .` collects every folder)."""
    return any(path.is_relative_to(folder) or folder.is_relative_to(path) for path in locations)


@pytest.hookimpl(wrapper=True)  # its first part before pytest's own implementation loads the initial conftests, its second after
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> Generator[None, None, None]:
    _find_configuration_again(early_config, parser, args)
    yield
    if not (typed_release_range(args) and is_harness_config(early_config.inipath)):
        return
    namespace = parser.parse_known_args(args, namespace=copy.copy(early_config.option))  # the conftests' options declared now
    testpaths, invocation = early_config.getini("testpaths"), early_config.invocation_params.dir
    # --pyargs names modules, not paths: the run is taken to collect what it asks for
    collects = namespace.pyargs or collects_under(
        run_locations(namespace.file_or_dir, testpaths, invocation, early_config.rootpath), early_config.rootpath / "tests"
    )
    hint = release_range_hint(args, _known_long_options(parser), collects)
    if hint:
        raise pytest.UsageError(hint)


def _find_configuration_again(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    """Where pytest's first pass missed this configuration, find it again without the misread words."""
    invocation = early_config.invocation_params.dir
    if early_config.inipath is not None or not is_harness_config(locate_config(invocation, [invocation])[1]):
        return
    # Re-read now that installed plugins' options are known (pytest did: `-n 2`, `--timeout 60`),
    # and without the words that follow an option still unknown (the harness's own, declared by
    # the conftest this search is about).
    namespace = early_config.known_args_namespace
    taken = values_taken_for_paths(args, namespace.file_or_dir, _known_long_options(parser))
    positional = [word for word in namespace.file_or_dir if word not in taken]
    found = determine_setup(
        inifile=namespace.inifilename,
        override_ini=namespace.override_ini,
        args=positional,
        rootdir_cmd_arg=namespace.rootdir or None,
        invocation_dir=invocation,
    )
    if found[1] is None:  # the test locations asked for have no configuration either: pytest was right
        return
    missing = [name for name in _CONFIG_ATTRIBUTES if not hasattr(early_config, name)]
    if missing:
        raise pytest.UsageError(
            f"pytest {pytest.__version__} read an option's value as a test location before the harness's options were known "
            f"({', '.join(taken) or 'a path'}); write each option with '=' (e.g. --report-dir=DIR)"
        )
    _use_config(early_config, parser, args, found, taken)


def _use_config(config: pytest.Config, parser: pytest.Parser, args: list[str], found: tuple, taken: list[str]) -> None:
    """What pytest's Config.parse does with the configuration it found, done again with the right one:
    its addopts prepended, the arguments re-read, its minversion checked, its pythonpath added, the
    conftest search cut at its folder (unless --confcutdir said otherwise)."""
    config._rootpath, config._inipath, config._inicfg, config._ignored_config_files = found
    config._inicache.clear()
    parser.extra_info["rootdir"], parser.extra_info["inifile"] = str(config.rootpath), str(config.inipath)
    added = config._validate_args(config.getini("addopts"), "via addopts config")
    args[:] = added + args
    namespace = parser.parse_known_args(args, namespace=copy.copy(config.option))
    namespace.file_or_dir = [word for word in namespace.file_or_dir if word not in taken]
    if namespace.confcutdir is None:  # not given: pytest's own default, the configuration's folder
        namespace.confcutdir = str(config.inipath.parent)
    config.known_args_namespace = namespace
    config._checkversion()
    config._configure_python_path()
    config.pluginmanager.consider_preparse(added, exclude_only=False)
