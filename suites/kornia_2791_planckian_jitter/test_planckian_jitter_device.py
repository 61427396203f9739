"""kornia-2791, direct: RandomPlanckianJitter built, moved to a device, must match a CPU run.

On cpu this is a control (the symptom needs a GPU). On simcuda:N the same body runs on the
simulated CUDA device (simulated evidence): kornia 0.6.10-0.7.1 build `pl` on cuda:0 whenever CUDA
is available (get_cuda_device_if_available(index=0)) and `.to("cuda:1")` leaves it there, so only
a GPU other than cuda:0 shows the bug; on cuda:0 a clean run is inconclusive. On a real GPU (argued,
not run here) the upstream symptom is wrong coefficients or a device error on cuda:1.
"""

from __future__ import annotations

import pytest
import torch

from fixtures.known_bugs.library_api import library_api
from fixtures.known_bugs.outcomes import BugObserved, Inconclusive, observe
from fixtures.proxies.meta_proxy import CLEAN, FINDING, classify_call, same_device
from fixtures.proxies.module_state import held_tensors
from simcuda import describe

RandomPlanckianJitter = library_api("kornia.augmentation", "RandomPlanckianJitter", first_release="0.6.4")

DEFAULT_GPU = torch.device("cuda:0")
# One multiply per channel and a clamp: a GPU may differ from the CPU by an FMA rounding, no more.
ATOL, RTOL = 1e-6, 1e-5
JITTER_CASES = [
    pytest.param("blackbody", None, id="blackbody-all"),
    pytest.param("blackbody", [23, 24, 1, 2], id="blackbody-subset"),
    pytest.param("CIED", None, id="CIED-all"),
    pytest.param("CIED", [0, 5, 22], id="CIED-subset"),
]


def moved_run_matches_cpu(
    mode: str, select_from: list[int] | None, batch: int, device: torch.device, simulation: object | None = None
) -> None:
    """Raise BugObserved when the moved module errs on devices, misplaces state, allocates on a
    device the test never asked for (simulated device only) or changes the output."""
    image = torch.rand(batch, 3, 16, 16)
    # The CPU reference is its own instance: a forward leaves caches (`_transform_matrix`) on the
    # input's device, which the moved module must not be blamed for.
    reference = RandomPlanckianJitter(mode=mode, select_from=select_from, p=1.0)
    params = reference.forward_parameters(image.shape)
    expected = reference(image, params=params)

    aug = RandomPlanckianJitter(mode=mode, select_from=select_from, p=1.0).to(device)
    misplaced = [name for name, tensor in held_tensors(aug).items() if not same_device(tensor.device, device)]
    observe(bool(misplaced), f"held tensors not on {device} after .to(): {', '.join(misplaced)}")
    device_params = {name: value.to(device) for name, value in params.items()}
    run = classify_call(lambda: aug(image.to(device), params=device_params), device)
    observe(run.kind == FINDING, f"RandomPlanckianJitter on {device}: {run.detail}")
    assert run.kind == CLEAN, f"harness: the call failed for another reason: {run.detail}"
    foreign = simulation.foreign_allocations({"cpu", str(device)}) if simulation else []
    observe(bool(foreign), f"RandomPlanckianJitter on {device}: {describe(foreign)}")
    actual = run.output.cpu()
    if not torch.allclose(actual, expected, atol=ATOL, rtol=RTOL):
        raise BugObserved(f"output on {device} differs from CPU by {(actual - expected).abs().max().item():.3g}")


@pytest.mark.known_bug("kornia-2791", evidence="direct")
@pytest.mark.parametrize("batch", [1, 4])
@pytest.mark.parametrize(("mode", "select_from"), JITTER_CASES)
def test_moved_jitter_matches_cpu(
    device: str, simulation: object | None, mode: str, select_from: list[int] | None, batch: int, monkeypatch
) -> None:
    if device == "cpu":
        # The control models a CPU-only machine: on a GPU runner the affected releases would build
        # `pl` on cuda:0 even here, and the control would fire on the very root cause that the
        # cuda:1 and simcuda:1 cases decide (a no-op where no GPU is visible).
        monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    moved_run_matches_cpu(mode, select_from, batch, torch.device(device), simulation)
    if torch.device(device) == DEFAULT_GPU:
        raise Inconclusive(
            "nothing misplaced on cuda:0, which cannot show kornia-2791: the affected releases build `pl` "
            "on cuda:0 themselves, so only another GPU reveals it"
        )


@pytest.mark.known_bug("kornia-2791", evidence="direct")
@pytest.mark.min_cuda_devices(2)
@pytest.mark.parametrize(("mode", "select_from"), JITTER_CASES)
def test_jitter_on_cuda1_while_cuda0_is_current(mode: str, select_from: list[int] | None) -> None:
    """The upstream report: cuda:0 is the current device, the module and input live on cuda:1."""
    with torch.cuda.device(0):
        moved_run_matches_cpu(mode, select_from, 4, torch.device("cuda:1"))
