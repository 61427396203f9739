"""Calibration of the oracles' numeric tolerances: the worst result a correct run gives, as a
fraction of each threshold (1.0 = exactly at it). tests/faults/test_oracle_thresholds.py pins each
threshold from both sides with these figures.

    python bench/oracle_calibration.py
    python bench/oracle_calibration.py --device cuda     # on a GPU machine: each direct oracle's GPU against its CPU

What "a correct run" is, per oracle: the suites compare a device's result with the CPU's, so a
correct device differs only by float rounding (another summation order, FMA, TF32 where the
suites allow it). Measured here by the same call in float32 against float64 (rounded error of a
correct float32 implementation), by inductor's compiled code against eager (sam2-460: the very
comparison it makes), by TF32-rounded operands against fp32 (the TF32 tolerance), and by the
simulated device against the CPU (the device sweep's value check, which only runs there).
The JPEG thresholds (torchvision-8587) have their own script: bench/jpeg_block_calibration.py.

With `--device cuda` the script measures what only a GPU can: each direct oracle's very comparison
(a correct release's GPU result against its CPU result under the same parameters), over several
random draws, as a fraction of its threshold; kornia-2867, 3028, 4415 and 4536 are calibrated only so.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the harness runs from its checkout

from fixtures.determinism.precision import full_fp32
from suites.kornia_2791_planckian_jitter import test_planckian_jitter_device as jitter
from suites.kornia_2837_jpeg_device import chain
from suites.kornia_2837_jpeg_device import test_jpeg_device as codec
from suites.kornia_2837_jpeg_device.chain import CHAIN_PIECES
from suites.kornia_sweeps import test_device_sweep as sweep
from suites.oracle_thresholds import recorded_thresholds
from suites.sam2_460_cudagraph import oracles as sam2
from suites.sam2_460_cudagraph import test_cudagraph_control as graph_control
from suites.sam2_460_cudagraph.position_encodings import CHANNELS, CachedSinePosition, encoder_and_eager_twin, frames

RECORDED = recorded_thresholds()


def recorded(module: ModuleType, name: str) -> float:
    """A suite module's threshold as its calibration record keeps it (suites/oracle_thresholds.toml):
    a calibration re-run measures against the record, which the code's constant must equal."""
    return RECORDED[f"{module.__name__}:{name}"]


def atol_rtol(module: ModuleType, prefix: str = "") -> tuple[float, float]:
    """A suite module's allclose pair (`{prefix}ATOL`, `{prefix}RTOL`) as recorded."""
    return recorded(module, f"{prefix}ATOL"), recorded(module, f"{prefix}RTOL")


def allclose_fraction(actual: torch.Tensor, expected: torch.Tensor, atol: float, rtol: float) -> float:
    """How much of allclose's allowance the worst element uses: max |a - e| / (atol + rtol |e|)."""
    actual, expected = actual.double(), expected.double()
    return ((actual - expected).abs() / (atol + rtol * expected.abs())).max().item()


def tf32(tensor: torch.Tensor) -> torch.Tensor:
    """float32 with its mantissa rounded to TF32's 10 bits (what a TF32 matmul reads)."""
    bits = tensor.float().contiguous().view(torch.int32)
    return ((bits + 0x1000) & ~0x1FFF).view(torch.float32)


def planckian_jitter() -> float:
    from kornia.augmentation import RandomPlanckianJitter

    worst = 0.0
    for case in jitter.JITTER_CASES:
        mode, select_from = case.values
        for batch in (1, 4):
            image = torch.rand(batch, 3, 16, 16)
            aug = RandomPlanckianJitter(mode=mode, select_from=select_from, p=1.0)
            params = aug.forward_parameters(image.shape)
            single = aug(image, params=params)
            double = aug.double()(image.double(), params={k: v.double() if v.is_floating_point() else v for k, v in params.items()})
            worst = max(worst, allclose_fraction(single, double, *atol_rtol(jitter)))
    return worst


def codec_means() -> tuple[float, float]:
    """(output, input gradient) mean |float32 - float64| of the codec over the suite's cases."""
    worst_output = worst_gradient = 0.0
    for case in codec.CODEC_CASES:
        shape, qualities = case.values
        image, quality = torch.rand(shape), torch.tensor(qualities)
        worst_output = max(worst_output, codec._mean_abs_difference(
            codec.jpeg_codec_differentiable(image, quality), codec.jpeg_codec_differentiable(image.double(), quality.double()).float()))
        worst_gradient = max(worst_gradient, codec._mean_abs_difference(
            codec._codec_input_grad(image, quality), codec._codec_input_grad(image.double(), quality.double()).float()))
    return worst_output / recorded(codec, "MEAN_ABS_TOLERANCE"), worst_gradient / recorded(codec, "MEAN_ABS_TOLERANCE")


def chain_pieces() -> float:
    """Each piece in float32 against float64 on the same random image (drawn in float32, then cast:
    the pieces make their tensors in the default dtype)."""
    worst = 0.0
    draw = chain._image

    def drawn_in_float32(device: torch.device) -> torch.Tensor:
        # torch.rand in float64 draws other values from the same seed: draw as the suite does.
        torch.set_default_dtype(torch.float32)
        try:
            return draw(device).double()
        finally:
            torch.set_default_dtype(torch.float64)

    for piece in CHAIN_PIECES.values():
        torch.manual_seed(0)
        single = piece(torch.device("cpu"))
        torch.manual_seed(0)
        torch.set_default_dtype(torch.float64)
        chain._image = drawn_in_float32
        try:
            double = piece(torch.device("cpu"))
        finally:
            torch.set_default_dtype(torch.float32)
            chain._image = draw
        worst = max(worst, codec._mean_abs_difference(single, double.float()))
    return worst / recorded(codec, "CHAIN_MEAN_ABS_TOLERANCE")


def sam2_compiled_against_eager() -> tuple[float, float]:
    """(compiled fp32 vs eager, TF32-rounded vs fp32) as fractions of the fp32 and TF32 tolerances."""
    encoder, eager = encoder_and_eager_twin(CachedSinePosition(CHANNELS, fixed=True), "cpu")
    compiled = torch.compile(encoder, mode="reduce-overhead")
    worst_fp32 = worst_tf32 = 0.0
    with torch.no_grad():
        for frame in frames("cpu"):
            expected = eager(frame)
            worst_fp32 = max(worst_fp32, allclose_fraction(compiled(frame).clone(), expected, *atol_rtol(sam2)))
            worst_tf32 = max(worst_tf32, allclose_fraction(eager(tf32(frame)), expected, *atol_rtol(sam2, "TF32_")))
    return worst_fp32, worst_tf32


def control_read_back() -> float:
    """sam2-460's controls: `x @ x` (fp32) against float64, as a fraction of `close`'s tolerance."""
    first, _ = graph_control.inputs("cpu")
    return allclose_fraction(graph_control.square(first), graph_control.square(first.double()), *atol_rtol(graph_control, "CLOSE_"))


def sweep_values() -> float:
    """The device sweep's value check (simulated device only): every simulated call's outputs
    against the CPU run's, as a fraction of its tolerance."""
    from fixtures.proxies.meta_proxy import output_tensors
    from simcuda import simulated_cuda

    worst = 0.0
    for calls in sweep.SIMULATED_CALLS.values():
        for call in calls:
            torch.manual_seed(0)
            try:
                expected = call.call(torch.device("cpu"))
                # The CPU's generator, as the sweep's simcuda:N runs draw (the device fixture's
                # shared_generator): a device's own would give other random draws, not other values.
                with simulated_cuda(2, shared_generator=True):
                    torch.manual_seed(0)
                    actual = call.call(torch.device("cuda:1"))
                    actual = [tensor.detach().cpu() for tensor in output_tensors(actual)]
            except Exception:  # noqa: BLE001 - a call the sweep cannot run is its own finding, not calibration
                continue
            for on_device, on_cpu in zip(actual, output_tensors(expected)):
                if on_cpu.is_floating_point() and on_device.shape == on_cpu.shape:
                    worst = max(worst, allclose_fraction(on_device.nan_to_num(), on_cpu.detach().nan_to_num(), *atol_rtol(sweep)))
    return worst


def _gpu_rows(device: torch.device, draws: int) -> list[tuple[str, float]]:
    """Each direct oracle's comparison, a correct GPU result against the CPU's, worst of `draws`
    random draws, as a fraction of its threshold (mean or max |difference| as the oracle reads it)."""
    from suites.device_oracle import max_abs, mean_abs
    from suites.kornia_2867_random_jpeg import test_random_jpeg_device as random_jpeg
    from suites.kornia_3028_gaussian_illumination import test_gaussian_illumination_device as illumination
    from suites.kornia_4415_shear_range import test_shear_range_device as shear
    from suites.kornia_4536_linear_illumination import test_linear_illumination_device as linear

    def worst(measure: Callable[[], float]) -> float:
        return max(measure() for _ in range(draws))

    def jitter_on_gpu() -> float:
        fraction = 0.0
        for case in jitter.JITTER_CASES:
            mode, select_from = case.values
            for batch in (1, 4):
                image = torch.rand(batch, 3, 16, 16)
                reference = jitter.RandomPlanckianJitter(mode=mode, select_from=select_from, p=1.0)
                params = reference.forward_parameters(image.shape)
                moved = jitter.RandomPlanckianJitter(mode=mode, select_from=select_from, p=1.0).to(device)
                actual = moved(image.to(device), params={k: v.to(device) for k, v in params.items()}).cpu()
                fraction = max(fraction, allclose_fraction(actual, reference(image, params=params), *atol_rtol(jitter)))
        return fraction

    def codec_on_gpu(gradient: bool) -> float:
        run = codec._codec_input_grad if gradient else codec.jpeg_codec_differentiable
        fraction = 0.0
        for case in codec.CODEC_CASES:
            shape, qualities = case.values
            image, quality = torch.rand(shape), torch.tensor(qualities)
            fraction = max(fraction, codec._mean_abs_difference(run(image.to(device), quality.to(device)), run(image, quality)))
        return fraction / recorded(codec, "MEAN_ABS_TOLERANCE")

    def chain_on_gpu() -> float:
        fraction = 0.0
        for piece in CHAIN_PIECES.values():
            seed = int(torch.randint(1 << 30, ()))
            torch.manual_seed(seed)
            expected = piece(torch.device("cpu"))
            torch.manual_seed(seed)
            fraction = max(fraction, codec._mean_abs_difference(piece(device), expected))
        return fraction / recorded(codec, "CHAIN_MEAN_ABS_TOLERANCE")

    def random_jpeg_on_gpu() -> float:
        image = torch.rand(2, 3, 32, 32)
        augmentation = random_jpeg.RandomJPEG(jpeg_quality=(30.0, 90.0), p=1.0)
        params = augmentation.forward_parameters(image.shape)
        expected = augmentation(image.clone(), params=params)
        actual = augmentation.to(device)(image.to(device), params=params)
        return mean_abs(actual.cpu() - expected) / recorded(random_jpeg, "MEAN_ABS_TOLERANCE")

    def illumination_on_gpu() -> float:
        fraction = 0.0
        for shape in ((1, 3, 16, 16), (4, 3, 24, 32)):
            image = torch.rand(shape)
            module = illumination.RandomGaussianIllumination(p=1.0)
            params = module.forward_parameters(image.shape)
            expected = module(image.clone(), params=params)
            # The fixed releases move the CPU pattern to the image; the oracle's call, as the suite makes it.
            fraction = max(fraction, max_abs(module(image.to(device), params=params).cpu() - expected) / recorded(illumination, "ATOL"))
        return fraction

    def shear_on_gpu() -> float:
        fraction = 0.0
        for case in shear.CASES:
            (make,) = case.values
            image = torch.rand(2, 3, 16, 16)
            augmentation = make()
            params = augmentation.forward_parameters(image.shape)
            expected = augmentation(image.clone(), params=params)
            moved = {key: value.to(device) for key, value in params.items()}
            fraction = max(fraction, max_abs(augmentation.to(device)(image.to(device), params=moved).cpu() - expected) / recorded(shear, "ATOL"))
        return fraction

    def linear_illumination_on_gpu() -> float:
        fraction = 0.0
        for case in linear.CASES:
            (make,) = case.values
            image = torch.rand(2, 3, 16, 24)
            moved = make().to(device)
            params = moved.forward_parameters(image.shape)  # drawn on the GPU, as the suite draws them
            expected = make()(image.clone(), params=linear.on_cpu(params))
            fraction = max(fraction, max_abs(moved(image.to(device), params=params).cpu() - expected) / recorded(linear, "ATOL"))
        return fraction

    def sam2_on_gpu() -> tuple[float, float]:
        torch._dynamo.reset()
        encoder, eager = encoder_and_eager_twin(CachedSinePosition(CHANNELS, fixed=True), device)
        compiled = torch.compile(encoder, mode="reduce-overhead")
        worst_fp32 = worst_tf32 = 0.0
        with torch.no_grad():
            for frame in frames(device):
                expected = eager(frame)
                worst_fp32 = max(worst_fp32, allclose_fraction(compiled(frame).clone(), expected, *atol_rtol(sam2)))
                torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
                try:  # TF32 really in force: the GPU's own rounding, against its fp32 result
                    worst_tf32 = max(worst_tf32, allclose_fraction(eager(frame), expected, *atol_rtol(sam2, "TF32_")))
                finally:
                    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
        return worst_fp32, worst_tf32

    def control_on_gpu() -> float:
        first, _ = graph_control.inputs(str(device))
        return allclose_fraction(graph_control.square(first).cpu(), graph_control.square(first.double()).cpu(), *atol_rtol(graph_control, "CLOSE_"))

    sam2_runs = [sam2_on_gpu() for _ in range(max(1, draws // 4))]  # a compile each: fewer draws
    sam2_fp32, sam2_tf32 = (max(column) for column in zip(*sam2_runs))
    return [
        ("kornia-2791 moved output (ATOL 1e-6, RTOL 1e-5)", worst(jitter_on_gpu)),
        ("kornia-2837 codec output mean", worst(lambda: codec_on_gpu(gradient=False))),
        ("kornia-2837 codec gradient mean", worst(lambda: codec_on_gpu(gradient=True))),
        ("kornia-2837 chain pieces mean (1e-6)", worst(chain_on_gpu)),
        ("kornia-2867 RandomJPEG mean (1e-3)", worst(random_jpeg_on_gpu)),
        ("kornia-3028 illumination max (ATOL 1e-6)", worst(illumination_on_gpu)),
        ("kornia-4415 shear max (ATOL 1e-5)", worst(shear_on_gpu)),
        ("kornia-4536 linear illumination max (ATOL 1e-6)", worst(linear_illumination_on_gpu)),
        ("sam2-460 compiled vs eager (fp32)", sam2_fp32),
        ("sam2-460 TF32 operands vs fp32 (TF32 tolerance)", sam2_tf32),
        ("sam2-460 control read-back (close)", worst(control_on_gpu)),
    ]


def _cpu_rows() -> list[tuple[str, float]]:
    return [
        ("kornia-2791 moved output (ATOL 1e-6, RTOL 1e-5)", planckian_jitter()),
        *zip(("kornia-2837 codec output mean", "kornia-2837 codec gradient mean"), codec_means()),
        ("kornia-2837 chain pieces mean (1e-6)", chain_pieces()),
        *zip(("sam2-460 compiled vs eager (fp32)", "sam2-460 TF32 operands vs fp32 (TF32 tolerance)"), sam2_compiled_against_eager()),
        ("sam2-460 control read-back (close)", control_read_back()),
        ("kornia sweeps simulated vs cpu", sweep_values()),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", help="a GPU (cuda, cuda:1): each direct oracle's comparison of it with the CPU")
    parser.add_argument("--draws", type=int, default=20, help="random draws per oracle on the GPU (default 20)")
    args = parser.parse_args()
    if args.draws < 1:
        parser.error(f"--draws {args.draws}: at least one")
    if args.device and not (args.device.startswith("cuda") and torch.cuda.is_available()):
        parser.error(f"--device {args.device}: needs a CUDA GPU (torch.cuda.is_available() is {torch.cuda.is_available()})")
    with full_fp32():
        rows = _gpu_rows(torch.device(args.device), args.draws) if args.device else _cpu_rows()
    for name, fraction in rows:
        print(f"{name:<52} worst correct = {fraction:.3g} of the threshold")


if __name__ == "__main__":
    main()
