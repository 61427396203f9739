"""Every guard that must say "cannot tell", made to face what it cannot judge: each would let the
test pass (a clean verdict) without it. And the registry's probe answering both ways (and "cannot
tell") from sam2's real signature check, for the git build whose version `1.0` is ambiguous.

Guards covered elsewhere: the sam2 meta check (tests/faults/test_sam2_oracle_findings.py,
tests/faults/test_fault_sam2_460.py), the sam2 graph-use checks (tests/faults/test_sam2_460_gpu_logic.py), and
the kornia-2791 proxy without a `pl` (tests/faults/test_fault_kornia_oracles.py).
"""

from __future__ import annotations

import inspect
import sys
import types

import pytest
import torch
from kornia.augmentation import RandomPlanckianJitter

from fixtures.known_bugs import versions
from fixtures.known_bugs.outcomes import Inconclusive
from fixtures.known_bugs.registry import load_registry
from fixtures.known_bugs.versions import affected_status
from simcuda import simulated_cuda
from suites.kornia_2791_planckian_jitter import test_planckian_jitter_device as jitter_direct
from suites.kornia_2791_planckian_jitter import test_planckian_jitter_state as jitter_state
from suites.kornia_2837_jpeg_device import test_jpeg_chain_meta as chain_meta

BUGS = load_registry()


def test_a_chain_piece_that_cannot_run_on_meta_is_inconclusive(monkeypatch: pytest.MonkeyPatch) -> None:
    """A piece reading a value (`.item()`) cannot run on meta: neither clean nor a finding."""
    monkeypatch.setitem(
        chain_meta.CHAIN_PIECES, "reads_a_value", lambda device: torch.ones(2, device=device) * torch.ones(1, device=device).sum().item()
    )
    with pytest.raises(Inconclusive, match="^reads_a_value cannot run on meta: "):
        chain_meta.test_chain_piece_stays_on_meta("reads_a_value")


class JitterThatCannotMoveToMeta(RandomPlanckianJitter):
    """Its `.to()` reads a value, as kornia 0.9.0's sampler does on meta."""

    def _apply(self, fn, *args, **kwargs):
        moved = super()._apply(fn, *args, **kwargs)
        torch.zeros(1, device=fn(torch.zeros(1)).device).item()
        return moved


def test_a_module_that_cannot_move_to_meta_is_inconclusive(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jitter_state, "RandomPlanckianJitter", JitterThatCannotMoveToMeta)
    with pytest.raises(Inconclusive, match=r"^module.to\('meta'\) cannot run: "):
        jitter_state.test_state_follows_to_meta("blackbody")


@pytest.mark.parametrize(("gpu", "undecided"), [("cuda:0", True), ("cuda:1", False)])
def test_a_clean_run_on_the_default_gpu_is_inconclusive(monkeypatch: pytest.MonkeyPatch, gpu: str, undecided: bool) -> None:
    """kornia-2791's affected releases build `pl` on cuda:0 themselves: a clean cuda:0 run proves
    nothing, a clean cuda:1 run is a pass."""
    with simulated_cuda(2) as simulation:
        simulation.set_device(int(gpu[-1]))
        if undecided:
            with pytest.raises(Inconclusive, match="^nothing misplaced on cuda:0"):
                jitter_direct.test_moved_jitter_matches_cpu(gpu, simulation, "blackbody", None, 1, monkeypatch)
        else:
            jitter_direct.test_moved_jitter_matches_cpu(gpu, simulation, "blackbody", None, 1, monkeypatch)


def position_encoding_module(parameters: tuple[str, ...]) -> types.ModuleType:
    """A stand-in `sam2.modeling.position_encoding` whose PositionEmbeddingSine.__init__ takes
    these parameters (sam2 1.1.0's, 0.4.1's, or neither), as `inspect.signature` reads them."""

    class PositionEmbeddingSine:
        def __init__(self, *args: object, **kwargs: object) -> None: ...

    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    PositionEmbeddingSine.__init__.__signature__ = inspect.Signature([inspect.Parameter(name, kind) for name in ("self", *parameters)])
    module = types.ModuleType("sam2.modeling.position_encoding")
    module.PositionEmbeddingSine = PositionEmbeddingSine
    return module


@pytest.mark.parametrize(
    ("parameters", "affected", "says"),
    [
        (("num_pos_feats", "temperature", "normalize", "scale", "warmup_cache", "image_size", "strides"), False, "says the fix is present"),
        (("num_pos_feats", "temperature", "normalize", "scale"), True, "says the fix is absent"),
        (("channels",), None, "no probe could tell"),
    ],
    ids=["sam2-1.1.0-signature", "sam2-0.4.1-signature", "unknown-signature"],
)
def test_the_sam2_probe_places_an_ambiguous_git_build_both_ways(
    monkeypatch: pytest.MonkeyPatch, parameters: tuple[str, ...], affected: bool | None, says: str
) -> None:
    monkeypatch.setitem(sys.modules, "sam2.modeling.position_encoding", position_encoding_module(parameters))
    monkeypatch.setattr(versions, "installed_version", lambda name: "1.0")
    status = affected_status(BUGS["sam2-460"])
    assert status.affected is affected and says in status.basis
