"""State sweep (CPU proxy of the kornia-2791 class): every public kornia module, built with default
arguments, must keep its tensors where `.to(torch.float64)` and `.to("meta")` put them.

Registered parameters and buffers follow `.to()` by nn.Module's contract; the question is the
plain tensor attributes. A finding names each tensor left behind and lists the unregistered ones; its site is the names of
those left behind ("mean, std"), so a triage of one attribute does not take another's.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from fixtures.proxies.meta_proxy import CLEAN, FINDING, INCONCLUSIVE, ProxyResult
from fixtures.proxies.module_state import device_move_check, tensors_not_following_dtype, unregistered_tensors
from suites.kornia_sweeps.targets import build, state_targets

TARGETS = state_targets()
LEFT_BEHIND = "state-left-behind"


def state_result(module: nn.Module) -> ProxyResult:
    """Finding when a held tensor does not follow .to(); inconclusive when unregistered tensors
    followed the dtype move but the meta move cannot run, so their device move is untested."""
    loose = sorted(unregistered_tensors(module))
    not_following = tensors_not_following_dtype(module, torch.float64)
    problems = [f"after .to(torch.float64): {name} is {dtype}" for name, dtype in not_following.items()]
    left_behind = set(not_following)
    moved = device_move_check(module, "meta")
    if moved.kind == FINDING:
        problems.append(moved.detail)
        left_behind |= set(moved.site.split(", ")) if moved.site else set()  # a mismatch .to() raised names no tensor
    if problems:
        detail = "; ".join(problems) + f" (not registered: {', '.join(loose)})"
        return ProxyResult(FINDING, detail, found=LEFT_BEHIND, site=", ".join(sorted(left_behind)))
    if loose and moved.kind != CLEAN:
        return ProxyResult(INCONCLUSIVE, f"unregistered {', '.join(loose)}; module.to('meta') cannot run: {moved.detail}")
    return ProxyResult(CLEAN, f"unregistered but following .to(): {', '.join(loose)}" if loose else "")


@pytest.mark.parametrize("name", list(TARGETS))
def test_module_state_follows_to(name: str, sweep_record) -> None:
    sweep_record("state", name, "cpu", state_result(build(TARGETS[name])))
