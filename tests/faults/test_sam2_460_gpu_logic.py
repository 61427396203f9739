"""CPU-side checks of what sam2-460's GPU test decides by: the precision and tolerance of the
compiled-vs-eager comparison, the proof that CUDA graphs were in use, and the GPU the position
cache is warmed on. The GPU run itself is argued, not run, here."""

from __future__ import annotations

import contextlib

import pytest
import torch

from fixtures.determinism import precision
from fixtures.known_bugs.outcomes import BugObserved, Inconclusive
from suites.sam2_460_cudagraph import inductor_state
from suites.sam2_460_cudagraph import test_compiled_encoder as compiled_encoder
from suites.sam2_460_cudagraph.oracles import (
    ATOL,
    TF32_ATOL,
    check_against_eager,
    comparison_tolerance,
    cudagraph_use_problem,
)
from suites.sam2_460_cudagraph.position_encodings import CHANNELS, CachedSinePosition, encoder_and_eager_twin, frames

# ATen ops max-autotune benchmarks candidate kernels for (matrix products, convolutions).
_BENCHMARKED = ("mm", "conv", "linear", "baddbmm")


def test_tolerance_follows_the_precision_in_force() -> None:
    assert comparison_tolerance(False, False) == (ATOL, ATOL)
    assert comparison_tolerance(True, False) == comparison_tolerance(False, True) == (TF32_ATOL, TF32_ATOL)


def tf32_rounded(tensor: torch.Tensor) -> torch.Tensor:
    """float32 with its mantissa cut to TF32's 10 bits (what a TF32 kernel's products carry)."""
    return (tensor.view(torch.int32) & ~0x1FFF).view(torch.float32)


@pytest.mark.catches("suites/sam2_460_cudagraph/oracles.py::comparison_tolerance")
def test_fault_tf32_rounding_is_a_false_alarm_at_fp32_tolerance_only() -> None:
    """One side rounded as TF32 (eager cuDNN on Ampere+ by default) fails the fp32 tolerance,
    which is why both sides run in full fp32; the TF32 tolerance accepts it, and still catches a
    stale output."""
    weight = torch.randn(16, 3, 1, 1, generator=torch.Generator().manual_seed(3))

    def eager(frame: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.conv2d(frame, weight)

    def rounded(frame: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.conv2d(tf32_rounded(frame), tf32_rounded(weight))

    with pytest.raises(BugObserved, match="differs from eager"):
        check_against_eager(rounded, eager, frames("cpu"), comparison_tolerance(False, False))
    check_against_eager(rounded, eager, frames("cpu"), comparison_tolerance(False, True))
    stale = frames("cpu")
    with pytest.raises(BugObserved, match="differs from eager"):
        check_against_eager(
            lambda frame: eager(stale[0]) if frame.shape == stale[0].shape else eager(frame),
            eager,
            frames("cpu"),
            comparison_tolerance(True, True),
        )


def test_full_fp32_turns_tf32_off_and_restores_it() -> None:
    before = precision.tf32_flags()
    torch.backends.cuda.matmul.allow_tf32 = True
    try:
        with precision.full_fp32():
            assert precision.tf32_flags() == (False, False)
        assert precision.tf32_flags() == (True, before[1])
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before[0]


@pytest.mark.parametrize(
    ("skips", "recorded", "problem"),
    [(0, 2, None), (1, 2, "skipped CUDA graphs 1 time"), (0, 0, "no CUDA graph was recorded")],
)
def test_cudagraph_use_needs_no_skip_and_a_recorded_graph(skips: int, recorded: int, problem: str | None) -> None:
    found = cudagraph_use_problem(skips, recorded)
    assert found is None if problem is None else problem in found


def test_the_position_cache_is_warmed_on_the_tests_own_gpu() -> None:
    assert isinstance(inductor_state.warm_on("cpu"), contextlib.nullcontext)
    assert inductor_state.warm_on("cuda:1").idx == 1  # torch.cuda.device(1): nothing starts CUDA until entered
    assert inductor_state.warm_on("cuda:0").idx == 0


def test_no_skip_counter_and_no_tree_read_zero_on_a_machine_without_graphs() -> None:
    assert inductor_state.cudagraph_skips() >= 0
    assert inductor_state.recorded_cuda_graphs(0) == 0


def fake_gpu_run(monkeypatch: pytest.MonkeyPatch, skips_after: int, recorded: int, compare) -> None:
    """The GPU test's glue, on cuda:1 with torch's GPU parts faked and `compare` as the oracle."""
    counts = iter([0, skips_after])
    monkeypatch.setattr(compiled_encoder, "cudagraph_skips", lambda: next(counts))
    monkeypatch.setattr(compiled_encoder, "recorded_cuda_graphs", lambda index: recorded)
    monkeypatch.setattr(compiled_encoder, "check_against_eager", compare)
    monkeypatch.setattr(compiled_encoder, "frames", lambda device: [])
    monkeypatch.setattr(compiled_encoder, "warm_on", lambda device: contextlib.nullcontext())
    monkeypatch.setattr(compiled_encoder, "encoder_and_eager_twin", lambda position, device: (torch.nn.Identity(), torch.nn.Identity()))


def run_glue(record_property) -> None:
    """The GPU test on cuda:1; whether the position encoding is the stand-in (a control) is no
    matter to the glue under test."""
    compiled_encoder.test_compiled_encoder_matches_eager("cuda:1", "reduce-overhead", record_property, lambda source: None, runnable_gpus=["cuda:1"])


@pytest.mark.parametrize(("skips_after", "recorded", "verdict"), [(0, 0, Inconclusive), (1, 3, Inconclusive), (0, 3, None)])
def test_a_direct_run_without_cuda_graphs_is_inconclusive_never_a_pass(monkeypatch, skips_after, recorded, verdict) -> None:
    """Nothing seen wrong and no CUDA graph in use must not pass."""
    fake_gpu_run(monkeypatch, skips_after, recorded, lambda *args: None)
    properties: dict = {}

    def run() -> None:
        run_glue(lambda k, v: properties.update({k: v}))

    if verdict is None:
        run()
    else:
        with pytest.raises(verdict, match="cuda:1 reduce-overhead"):
            run()
    assert properties["cuda_graphs_recorded"] == recorded


def mismatching(*args) -> None:
    raise BugObserved("frame 1 differs from eager by 0.5")


@pytest.mark.parametrize(
    ("skips_after", "recorded", "verdict", "says"),
    [
        (0, 0, Inconclusive, "differs from eager by 0.5, but no CUDA graph was recorded"),
        (1, 3, Inconclusive, "differs from eager by 0.5, but inductor skipped CUDA graphs"),
        (0, 3, BugObserved, "differs from eager by 0.5"),
    ],
)
def test_a_mismatch_without_cuda_graphs_is_inconclusive_not_the_bug(monkeypatch, skips_after, recorded, verdict, says) -> None:
    """A wrong output counts against sam2-460 only where inductor really ran CUDA graphs."""
    fake_gpu_run(monkeypatch, skips_after, recorded, mismatching)
    with pytest.raises(verdict, match=says) as raised:
        run_glue(lambda k, v: None)
    assert raised.type is verdict  # Inconclusive is no BugObserved, and the other way round


def overwrite_seen(*args) -> None:
    from suites.sam2_460_cudagraph.oracles import torch_overwrite_text

    error = RuntimeError(torch_overwrite_text() + 'File "position_encoding.py", line 1')
    raise BugObserved(f"frame 1 (1, 3, 32, 32): {error}") from error


@pytest.mark.parametrize(("skips_after", "recorded"), [(0, 0), (1, 0), (0, 3)])
def test_torchs_overwrite_error_is_a_sighting_whatever_was_recorded(monkeypatch, skips_after, recorded) -> None:
    """The error only the CUDA-graph tree raises proves the tree ran: on sam2 0.4.1 it fires at
    the second frame, before a graph is recorded (GPU-runner rehearsal, prediction 2)."""
    fake_gpu_run(monkeypatch, skips_after, recorded, overwrite_seen)
    with pytest.raises(BugObserved, match="accessing tensor output of CUDAGraphs") as raised:
        run_glue(lambda k, v: None)
    assert raised.type is BugObserved


@pytest.mark.parametrize(
    ("runnable", "sam2_installed", "left_out_because"),
    [
        (["cuda:0"], True, "cuda:0 runs the direct test in this session"),
        ([], False, "sam2 is not installed, so it would compile the harness's stand-in"),
        (["cuda:0"], False, "cuda:0 runs the direct test"),
        ([], True, None),
    ],
)
def test_the_cpu_twin_runs_only_where_it_compiles_sam2_and_no_gpu_runs_the_direct_test(
    monkeypatch, runnable: list[str], sam2_installed: bool, left_out_because: str | None
) -> None:
    """The twin is a control that compiles with inductor (64 s cold on an H200): where the session
    runs the direct test on a GPU it adds nothing, and without sam2 it would compile only the
    harness's stand-in; each says so. With sam2 and no GPU it runs."""
    compared: list[str] = []
    fake_gpu_run(monkeypatch, skips_after=0, recorded=0, compare=lambda *args: compared.append("compared"))
    position = (torch.nn.Identity(), "sam2's own") if sam2_installed else (CachedSinePosition(CHANNELS, fixed=True), "the stand-in")
    monkeypatch.setattr(compiled_encoder, "position_encoding", lambda channels: position)

    def twin() -> None:
        compiled_encoder.test_compiled_encoder_matches_eager("cpu", "reduce-overhead", lambda *item: None, lambda source: None, runnable)

    if left_out_because is None:
        twin()
    else:
        with pytest.raises(pytest.skip.Exception, match=f"CPU twin .* left out: .*{left_out_because}"):
            twin()
    assert compared == ([] if left_out_because else ["compared"])


@pytest.mark.parametrize(
    ("sam2_installed", "mode", "runs"),
    [(False, "reduce-overhead", True), (False, "max-autotune", False), (True, "reduce-overhead", True), (True, "max-autotune", True)],
)
def test_without_sam2_a_gpu_case_compiles_one_cuda_graph_mode(monkeypatch, sam2_installed: bool, mode: str, runs: bool) -> None:
    """The stand-in is a control (it decides nothing): its max-autotune compile, seconds of tuning on
    a GPU, checks nothing reduce-overhead's does not; it skips, saying so. With sam2 both modes run."""
    compared: list[str] = []
    controls: list[str] = []
    fake_gpu_run(monkeypatch, skips_after=0, recorded=3, compare=lambda *args: compared.append("compared"))
    position = (torch.nn.Identity(), "sam2's own") if sam2_installed else (CachedSinePosition(CHANNELS, fixed=True), "the stand-in")
    monkeypatch.setattr(compiled_encoder, "position_encoding", lambda channels: position)

    def gpu_case() -> None:
        compiled_encoder.test_compiled_encoder_matches_eager("cuda:1", mode, lambda *item: None, controls.append, ["cuda:1"])

    if runs:
        gpu_case()
    else:
        said = "sam2 is not installed: the stand-in, a control, compiles one CUDA-graph mode only, reduce-overhead; both run with sam2"
        with pytest.raises(pytest.skip.Exception, match=said):
            gpu_case()
    assert (compared, controls) == ((["compared"], [] if sam2_installed else ["the stand-in"]) if runs else ([], []))


def test_the_encoder_around_the_position_cache_leaves_max_autotune_no_matrix_product_to_benchmark() -> None:
    """max-autotune benchmarks matrix products and convolutions: with a 1x1 convolution there, its two
    tests took 23 s of the folder's 33 s on an H200 with a cold cache. The encoder's features are
    pointwise work instead (max-autotune's coordinate descent still tunes their kernels); traced to
    the ATen ops inductor receives, none is a matrix product or a convolution."""
    from torch.fx.experimental.proxy_tensor import make_fx  # the tracer, for this test only

    encoder, _ = encoder_and_eager_twin(CachedSinePosition(CHANNELS, fixed=True), "cpu")
    with torch.no_grad():
        traced = make_fx(encoder)(frames("cpu")[0])
    ops = {str(node.target) for node in traced.graph.nodes if node.op == "call_function"}
    assert ops and not [op for op in ops if any(kind in op for kind in _BENCHMARKED)], sorted(ops)
