"""Hypothesis profiles: ci under CI, dev elsewhere, and each selectable by name."""

from __future__ import annotations

import pytest
from hypothesis import settings

from fixtures.determinism.hypothesis_profiles import PROFILES, default_profile


@pytest.mark.parametrize(("environ", "profile"), [({"CI": "true"}, "ci"), ({}, "dev"), ({"CI": ""}, "dev")])
def test_profile_chosen_from_the_environment(environ: dict, profile: str) -> None:
    assert default_profile(environ) == profile


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_every_profile_is_registered(name: str) -> None:
    assert settings.get_profile(name).max_examples == PROFILES[name]["max_examples"]


def test_gpu_profile_has_no_deadline() -> None:
    assert settings.get_profile("gpu").deadline is None


def test_profile_option_selects_a_profile(harness) -> None:
    harness.makepyfile(
        """
        from hypothesis import settings

        def test_loaded():
            assert settings().max_examples == 200
        """
    )
    harness.runpytest("--hypothesis-profile", "stress").assert_outcomes(passed=1)
