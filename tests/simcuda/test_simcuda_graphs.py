"""The simulated CUDA-graph trees (simcuda/graphs.py) against torch's documented behaviour: each
misuse the torch.compiler docs ("CUDAGraph Trees") describe fires torch's own overwrite error,
naming the line that made the dead tensor, and correct code stays clean."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch
from torch import nn

from simcuda import simulated_cuda
from suites.sam2_460_cudagraph.oracles import is_overwrite_error
from suites.sam2_460_cudagraph.position_encodings import CHANNELS, CachedSinePosition, FrameEncoder, frames

GRAPHS = "reduce-overhead"


@pytest.fixture
def cuda1() -> Iterator[object]:
    with simulated_cuda(2) as simulation:
        simulation.set_device(1)
        yield simulation


def overwritten(read) -> str:
    """The overwrite error's text when reading raises it; AssertionError when it does not."""
    with pytest.raises(RuntimeError) as raised:
        read()
    assert is_overwrite_error(raised.value), str(raised.value)
    return str(raised.value)


def square(x: torch.Tensor) -> torch.Tensor:
    return x @ x


def inputs() -> tuple[torch.Tensor, torch.Tensor]:
    return torch.rand(4, 4, device="cuda"), torch.rand(4, 4, device="cuda")


# Misuse fires.


def test_an_output_kept_across_the_next_run_is_overwritten(cuda1) -> None:
    compiled = torch.compile(square, mode=GRAPHS)
    first, second = inputs()
    kept = compiled(first)
    compiled(second)
    message = overwritten(lambda: kept.sum().item())
    assert f'line {square.__code__.co_firstlineno + 1}, in square' in message  # the line that made it


def test_a_kept_view_of_an_output_is_overwritten(cuda1) -> None:
    compiled = torch.compile(square, mode=GRAPHS)
    first, second = inputs()
    view = compiled(first)[1:, :2]
    compiled(second)
    overwritten(lambda: view.clone())


def test_mark_step_with_the_old_output_kept_is_overwritten(cuda1) -> None:
    compiled = torch.compile(square, mode=GRAPHS)
    first, second = inputs()
    torch.compiler.cudagraph_mark_step_begin()
    kept = compiled(first)
    torch.compiler.cudagraph_mark_step_begin()
    compiled(second)
    overwritten(lambda: kept + 1)


def test_a_module_caching_a_compiled_output_is_overwritten_at_the_next_frame(cuda1) -> None:
    """SAM2 0.4.1's shape: the position map made in the first compiled call is cached, and read
    at the next: torch's error names the caching line's tensor."""
    encoder = torch.compile(FrameEncoder(CachedSinePosition(CHANNELS, fixed=False), CHANNELS).to("cuda").eval(), mode=GRAPHS)
    first, second, *_ = frames("cuda")
    with torch.no_grad():
        encoder(first)
        message = overwritten(lambda: encoder(second))
    assert "position_encodings.py" in message


def test_outputs_of_the_warm_up_and_the_recording_kept_in_a_list_fail(cuda1) -> None:
    """The failing half of the pattern in pytorch/pytorch issue 122192: outputs kept over the
    warm-up and recording runs (checked); the passing half is the next test."""
    compiled = torch.compile(square, mode=GRAPHS)
    x, _ = inputs()
    kept = [compiled(x) for _ in range(2)]
    overwritten(lambda: kept[0].sum().item())


# Correct code, and what torch does not check, stay clean.


def test_a_replay_output_kept_across_a_later_replay_is_not_checked(cuda1) -> None:
    """torch checks warm-up and recording outputs, not replay outputs (on a GPU such an output is
    silently overwritten; here it keeps its value: a false negative, never a false alarm)."""
    compiled = torch.compile(square, mode=GRAPHS)
    x, _ = inputs()
    compiled(x), compiled(x)  # warm-up, recording
    kept = compiled(x)  # a replay
    compiled(x)
    assert torch.allclose(kept.cpu(), square(x).cpu())
    assert cuda1.recorded_cuda_graphs(1) == 1


def test_clone_before_the_next_run_mark_step_and_reading_at_once_stay_clean(cuda1) -> None:
    compiled = torch.compile(square, mode=GRAPHS)
    first, second = inputs()
    cloned = compiled(first).clone()
    compiled(second)
    assert torch.allclose(cloned.cpu(), square(first).cpu())
    for x in (first, second, first, second):
        torch.compiler.cudagraph_mark_step_begin()
        assert torch.allclose(compiled(x).cpu(), square(x).cpu())


def test_a_model_run_many_times_with_its_outputs_used_at_once_stays_clean(cuda1) -> None:
    model = torch.compile(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).to("cuda"), mode=GRAPHS)
    with torch.no_grad():
        for step in range(6):
            x = torch.rand(3, 4, device="cuda")
            assert model(x).sum().item() == pytest.approx(model._orig_mod(x).sum().item(), rel=1e-5), step
    assert cuda1.recorded_cuda_graphs(1) == 1


def test_a_graph_break_stays_clean(cuda1) -> None:
    def broken(x: torch.Tensor) -> torch.Tensor:
        y = x.sin()
        torch._dynamo.graph_break()
        return y.cos()

    compiled = torch.compile(broken, mode=GRAPHS)
    x, _ = inputs()
    for _ in range(4):
        assert torch.allclose(compiled(x).cpu(), x.sin().cos().cpu())


def test_no_cuda_graphs_mode_keeps_every_output(cuda1) -> None:
    compiled = torch.compile(square, mode="max-autotune-no-cudagraphs")
    x, _ = inputs()
    kept = [compiled(x) for _ in range(3)]
    assert all(torch.allclose(k.cpu(), square(x).cpu()) for k in kept)
    assert cuda1.recorded_cuda_graphs(1) == 0


def test_outputs_aliasing_an_input_or_a_parameter_are_not_graph_memory(cuda1) -> None:
    class Weight(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.ones(3))

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return x.view(-1), self.weight

    compiled = torch.compile(Weight().to("cuda"), mode=GRAPHS)
    x = torch.rand(2, 2, device="cuda")
    kept = [compiled(x) for _ in range(3)]
    assert all(torch.equal(view.cpu(), x.view(-1).cpu()) and weight.sum().item() == 3 for view, weight in kept)


# What inductor would not run as CUDA graphs is not simulated, and torch's counter says so.


def skips() -> int:
    from torch._dynamo.utils import counters

    return counters["inductor"]["cudagraph_skips"]


def test_a_cpu_input_or_a_mutated_input_skips_cuda_graphs(cuda1) -> None:
    before = skips()
    on_cpu = torch.compile(lambda x, y: x + y.to(x.device), mode=GRAPHS)
    kept = [on_cpu(torch.rand(2, device="cuda"), torch.rand(2)) for _ in range(3)]
    assert kept[0].sum().item() > 0 and skips() == before + 1

    def mutates(x: torch.Tensor) -> torch.Tensor:
        x.add_(1)
        return x * 2

    compiled = torch.compile(mutates, mode=GRAPHS)
    x = torch.zeros(2, device="cuda")
    kept = [compiled(x) for _ in range(3)]
    assert kept[0].sum().item() == 4 and skips() == before + 2 and cuda1.recorded_cuda_graphs(1) == 0


# What the tree simulates at all, and the pieces it decides with.


@pytest.mark.parametrize(
    ("backend", "mode", "options", "uses"),
    [
        ("inductor", "reduce-overhead", None, True),
        ("cudagraphs", None, None, True),
        ("inductor", None, {"triton.cudagraphs": True}, True),
        ("inductor", "reduce-overhead", {"max_autotune": False}, True),  # options without the key: the mode decides
        ("inductor", "max-autotune-no-cudagraphs", None, False),
        ("aot_eager", "reduce-overhead", None, False),  # only inductor reads the mode's graph option
        ("eager", "reduce-overhead", None, False),
        (lambda gm, example_inputs: gm, "reduce-overhead", None, False),
    ],
)
def test_only_inductor_modes_with_graphs_and_the_cudagraphs_backend_use_cuda_graphs(backend, mode, options, uses) -> None:
    from simcuda.graphs import uses_cuda_graphs

    assert uses_cuda_graphs(backend, mode, options) is uses


def test_a_run_notes_cpu_outputs_but_not_cpu_scalars() -> None:
    from simcuda.graphs import Capture

    capture = Capture()
    capture.add(torch.tensor(2.0), on_cpu=True)  # a 0-dim CPU tensor: CUDA graphs take those
    assert capture.cpu_outputs == []
    capture.add(torch.zeros(3), on_cpu=True)
    assert len(capture.cpu_outputs) == 1 and capture.cpu_outputs[0].startswith("[3], ")


def test_inputs_on_two_devices_skip_cuda_graphs_and_a_cpu_scalar_does_not(cuda1) -> None:
    before = skips()
    across = torch.compile(lambda x, y: x + y.to(x.device), mode=GRAPHS)
    x, y = torch.rand(2, device="cuda:1"), torch.rand(2, device="cuda:0")
    kept = [across(x, y) for _ in range(3)]
    assert kept[0].sum().item() > 0 and skips() == before + 1 and cuda1.recorded_cuda_graphs(1) == 0

    scaled = torch.compile(lambda x, s: x * s, mode=GRAPHS)
    for _ in range(3):
        scaled(x, torch.tensor(2.0))
    assert skips() == before + 1 and cuda1.recorded_cuda_graphs(1) == 1


def test_a_compiled_call_inside_a_compiled_call_is_one_graph(cuda1) -> None:
    """Dynamo inlines the inner compiled function: one generation, one graph, not two."""
    inner = torch.compile(square, mode=GRAPHS)
    outer = torch.compile(lambda x: inner(x) + 1, mode=GRAPHS)
    x, _ = inputs()
    for _ in range(3):
        out = outer(x)
        assert torch.allclose(out.cpu(), square(x).cpu() + 1)
    assert cuda1.recorded_cuda_graphs(1) == 1
