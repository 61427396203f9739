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


def test_an_unknown_profile_is_a_one_line_usage_error(harness) -> None:
    harness.makepyfile("def test_never_run():\n    pass\n")
    result = harness.runpytest("--hypothesis-profile", "nightly")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --hypothesis-profile: 'nightly' is not a profile; use dev, ci, gpu, stress"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
