"""A sweep's arguments table against the installed release (fixtures/sweeps/tables.py): older
than the table is a skip naming both releases; the table's own release, a local build of it or a
newer one is not (the sweep then raises its harness error)."""

from __future__ import annotations

import pytest

from fixtures.sweeps.tables import older_than_table, skip_if_older_than_table


@pytest.mark.parametrize(("installed", "older"), [("0.8.1", True), ("0.9.0rc1", True), ("0.9.0", False), ("0.9.0+cu130", False), ("0.10.0", False)])
def test_older_than_the_table(installed: str, older: bool) -> None:
    assert older_than_table(installed, "0.9.0") is older


def test_an_older_release_is_a_skip_naming_both_releases() -> None:
    with pytest.raises(pytest.skip.Exception, match=r"^kornia 0\.8\.1: Resize: bad size \(arguments table written for 0\.9\.0\)$"):
        skip_if_older_than_table("kornia", "0.8.1", "0.9.0", "Resize: bad size")


def test_the_tables_release_is_no_skip() -> None:
    assert skip_if_older_than_table("torchvision", "0.29.1+cu130", "0.29.1", "RandomPosterize: bits") is None
