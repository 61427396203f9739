"""A package imported from somewhere other than its installed distribution's files (a source tree
ahead of it on PYTHONPATH) cannot be placed by that distribution's version: the suites test the
tree's code, not the release's (fixtures/known_bugs/versions.imported_elsewhere)."""

from __future__ import annotations

import importlib
import json
from dataclasses import replace
from pathlib import Path

import pytest

from fixtures.known_bugs.registry import load_registry
from fixtures.known_bugs.versions import affected_status, imported_elsewhere

PACKAGE = "harness_shadow_probe"  # a name nothing else imports: find_spec must find it anew
BUG = replace(load_registry()["kornia-2791"], package=PACKAGE)  # affected ">=0.6.10,<0.7.2"


def metadata(site: Path, direct_url: dict | None = None) -> Path:
    """The distribution's metadata in `site`, as pip leaves it."""
    info = site / f"{PACKAGE}-0.7.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {PACKAGE}\nVersion: 0.7.1\n")
    if direct_url is not None:
        (info / "direct_url.json").write_text(json.dumps(direct_url))
    return site


def package(folder: Path) -> Path:
    """The package's folder in `folder`: an install's, a source tree's or a checkout's."""
    (folder / PACKAGE).mkdir(parents=True)
    (folder / PACKAGE / "__init__.py").write_text("")
    return folder


def installed(site: Path) -> Path:
    """The package and its metadata side by side in `site`, as pip leaves them."""
    return metadata(package(site))


def on_path(monkeypatch: pytest.MonkeyPatch, *folders: Path) -> None:
    for folder in reversed(folders):  # the first named ends up first
        monkeypatch.syspath_prepend(str(folder))
    importlib.invalidate_caches()


def test_the_installed_files_are_placed_by_their_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    on_path(monkeypatch, installed(tmp_path / "site"))
    assert imported_elsewhere(PACKAGE) is None
    assert affected_status(BUG).affected is True  # 0.7.1 inside kornia-2791's range


def test_a_source_tree_ahead_of_the_install_cannot_be_placed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before, the install's 0.7.1 placed the tree: a clean run read `fixed` or `not-reproduced`
    by a version the tested code never had."""
    on_path(monkeypatch, package(tmp_path / "tree"), installed(tmp_path / "site"))
    assert imported_elsewhere(PACKAGE) == tmp_path / "tree" / PACKAGE
    status = affected_status(BUG)
    assert (status.affected, status.version) == (None, "0.7.1")
    assert status.basis == (
        f"{PACKAGE} is imported from {tmp_path / 'tree' / PACKAGE}, not from the installed 0.7.1's files: its version does not "
        "place that tree (pip install -e it, and its commit places it)"
    )


def test_an_editable_install_maps_the_import_to_its_checkout_itself(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    editable = {"url": f"file://{tmp_path / 'checkout'}", "dir_info": {"editable": True}}
    on_path(monkeypatch, package(tmp_path / "checkout"), metadata(tmp_path / "site", editable))
    assert imported_elsewhere(PACKAGE) is None


def test_a_distribution_whose_package_cannot_be_found_is_left_to_its_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Metadata without an importable top-level package of its name (a distribution whose module is
    named otherwise): nothing tells where its code is imported from, so its version places it."""
    on_path(monkeypatch, metadata(tmp_path / "site"))
    assert imported_elsewhere(PACKAGE) is None
    assert affected_status(BUG).affected is True
