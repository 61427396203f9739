"""Every feature the simulated device cannot imitate raises SimulationUnsupported naming it, rather
than running silently on the CPU (a test meeting it is inconclusive, never a pass)."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
import torch
import torchvision

from simcuda import SimulationUnsupported, simulated_cuda


def jpeg_bytes(x: torch.Tensor) -> torch.Tensor:
    return torchvision.io.encode_jpeg((x[0].cpu() * 255).to(torch.uint8))


def in_another_thread(x: torch.Tensor) -> None:
    """A DataLoader worker thread's factory call: modes are thread-local, so it would reach real CUDA."""
    errors: list[BaseException] = []

    def work() -> None:
        try:
            torch.zeros(2, device="cuda:1")
        except BaseException as error:  # noqa: BLE001 - carried back to the test's thread
            errors.append(error)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    raise errors[0]


FEATURES: dict[str, tuple[Callable[[torch.Tensor], object], str]] = {
    "CUDAGraph": (lambda x: torch.cuda.CUDAGraph(), "CUDA graphs"),
    "torch.cuda.graph": (lambda x: torch.cuda.graph(None), "CUDA graphs"),
    "make_graphed_callables": (lambda x: torch.cuda.make_graphed_callables(torch.sin, (x,)), "CUDA graphs"),
    "encode_jpeg on cuda": (lambda x: torchvision.io.encode_jpeg((x[0] * 255).to(torch.uint8)), "nvJPEG"),
    "decode_jpeg on cuda": (lambda x: torchvision.io.decode_jpeg(jpeg_bytes(x), device="cuda"), "nvJPEG"),
    "factory in another thread": (in_another_thread, "CUDA used from another thread"),
    "CUDA generator": (lambda x: torch.Generator(device="cuda"), "torch.Generator"),
    "growing a tensor in place": (lambda x: x.flatten().resize_(10_000), "growing a simulated tensor"),
    "event timing": (lambda x: torch.cuda.Event(enable_timing=True).elapsed_time(torch.cuda.Event()), "event timing"),
}


@pytest.mark.parametrize(("call", "named"), FEATURES.values(), ids=FEATURES.keys())
def test_unsupported_feature_is_refused_by_name(call: Callable[[torch.Tensor], object], named: str) -> None:
    with simulated_cuda():
        x = torch.rand(1, 3, 16, 16, device="cuda:1")
        with pytest.raises(SimulationUnsupported, match=named):
            call(x)


def test_a_compiled_function_made_before_the_context_is_refused() -> None:
    """Dynamo would skip every frame under the dispatch mode and run eagerly without a word; one
    compiled inside the simulation runs there (tests/test_simcuda_graphs.py)."""
    compiled = torch.compile(torch.sin, backend="eager")
    compiled(torch.zeros(1))  # Dynamo imported and the function compiled outside
    with simulated_cuda(), pytest.raises(SimulationUnsupported, match="compiled before the simulation started"):
        compiled(torch.zeros(1, device="cuda:1"))


def test_supported_neighbours_still_run() -> None:
    """The refusals are narrow: autograd (tests/test_simcuda_autograd.py), streams, events, CPU generators run."""
    with simulated_cuda():
        x = torch.rand(3, device="cuda:1", requires_grad=True)
        assert (x * 2).requires_grad
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            torch.cuda.current_stream().synchronize()
        torch.cuda.Event().record()
        torch.cuda.synchronize()
        assert isinstance(torch.Generator(), torch.Generator)
        assert torch.rand(2, generator=torch.Generator().manual_seed(0)).shape == (2,)
