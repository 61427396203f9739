"""kornia-2791, CPU proxy: the module's tensor state must be registered and follow `.to()`.

This is the root cause, observable without a GPU: on 0.6.10-0.7.1 `pl` is absent from
named_buffers()/state_dict() and stays float32 after `.to(torch.float64)`.
"""

from __future__ import annotations

import pytest
import torch
from kornia.augmentation import RandomPlanckianJitter

from fixtures.meta_proxy import ERROR, FINDING, INCONCLUSIVE
from fixtures.module_state import device_move_check, tensors_not_following_dtype, unregistered_tensors
from fixtures.outcomes import Inconclusive, observe

MODES = ["blackbody", "CIED"]


@pytest.mark.known_bug("kornia-2791", evidence="proxy")
@pytest.mark.parametrize("mode", MODES)
def test_pl_is_registered_state(mode: str) -> None:
    aug = RandomPlanckianJitter(mode=mode, select_from=[1, 2])
    loose = sorted(unregistered_tensors(aug))
    observe(bool(loose), f"tensor attributes outside buffers/parameters: {', '.join(loose)}")
    missing = {"pl"} - set(dict(aug.named_buffers())) | ({"pl"} - set(aug.state_dict()))
    observe(bool(missing), "pl is missing from named_buffers()/state_dict()")


@pytest.mark.known_bug("kornia-2791", evidence="proxy")
@pytest.mark.parametrize("mode", MODES)
def test_state_follows_to_float64(mode: str) -> None:
    left = tensors_not_following_dtype(RandomPlanckianJitter(mode=mode), torch.float64)
    observe(bool(left), f"after .to(torch.float64): {'; '.join(left)}")


@pytest.mark.known_bug("kornia-2791", evidence="proxy")
@pytest.mark.parametrize("mode", MODES)
def test_state_follows_to_meta(mode: str) -> None:
    check = device_move_check(RandomPlanckianJitter(mode=mode), "meta")
    observe(check.kind == FINDING, check.detail)
    if check.kind == INCONCLUSIVE:
        raise Inconclusive(f"module.to('meta') cannot run: {check.detail}")
    assert check.kind != ERROR, f"harness: module.to('meta') failed: {check.detail}"
