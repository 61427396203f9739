"""kornia-2791, CPU proxy: `pl` must be registered state that follows `.to()`.

This is the root cause, observable without a GPU: on 0.6.10-0.7.1 `pl` is a plain attribute,
absent from named_buffers()/named_parameters(), and stays float32 after `.to(torch.float64)`.
What is judged is `pl` only (another loose tensor is the state sweep's business, not this bug),
and only what makes it follow the module: a non-persistent buffer follows `.to()` and is not
the bug, so absence from `state_dict()` is no evidence.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from fixtures.known_bugs.library_api import library_api
from fixtures.known_bugs.outcomes import Inconclusive, observe
from fixtures.proxies.meta_proxy import ERROR, INCONCLUSIVE, classify_call, same_device
from fixtures.proxies.module_state import held_tensors, registered_state

RandomPlanckianJitter = library_api("kornia.augmentation", "RandomPlanckianJitter", first_release="0.6.4")

MODES = ["blackbody", "CIED"]
STATE = "pl"


def held_pl(aug: nn.Module) -> torch.Tensor:
    """The module's `pl` tensor, however it is held; without one this proxy cannot tell."""
    tensor = held_tensors(aug).get(STATE)
    if tensor is None:
        raise Inconclusive(f"{type(aug).__name__} holds no tensor {STATE!r}: this proxy cannot judge it")
    return tensor


@pytest.mark.known_bug("kornia-2791", evidence="proxy")
@pytest.mark.parametrize("mode", MODES)
def test_pl_is_registered_state(mode: str) -> None:
    aug = RandomPlanckianJitter(mode=mode, select_from=[1, 2])
    held_pl(aug)
    observe(
        STATE not in registered_state(aug),
        f"{STATE} is a plain tensor attribute, not in named_buffers()/named_parameters(): .to() leaves it behind",
    )


@pytest.mark.known_bug("kornia-2791", evidence="proxy")
@pytest.mark.parametrize("mode", MODES)
def test_state_follows_to_float64(mode: str) -> None:
    aug = RandomPlanckianJitter(mode=mode)
    held_pl(aug)
    aug.to(torch.float64)
    observe(held_pl(aug).dtype != torch.float64, f"after .to(torch.float64): {STATE} is {held_pl(aug).dtype}")


@pytest.mark.known_bug("kornia-2791", evidence="proxy")
@pytest.mark.parametrize("mode", MODES)
def test_state_follows_to_meta(mode: str) -> None:
    aug = RandomPlanckianJitter(mode=mode)
    held_pl(aug)
    moved = classify_call(lambda: aug.to("meta"), "meta")
    if moved.kind == INCONCLUSIVE:
        raise Inconclusive(f"module.to('meta') cannot run: {moved.detail}")
    assert moved.kind != ERROR, f"harness: module.to('meta') failed: {moved.detail}"
    where = held_pl(aug).device
    observe(not same_device(where, torch.device("meta")), f"after .to('meta'): {STATE} is on {where}")
