"""Every numeric threshold of an oracle, pinned from both sides through the call the suite makes,
by the calibration record in suites/oracle_thresholds.toml, never by the code's constants: a fault
PAST times the recorded threshold is caught, and the worst correct result the record keeps passes.
A constant widened (a fault past the record then passes) or tightened below the calibration (the
worst correct result then fails) fails here twice: its record no longer matches, and its fault
test lands on the wrong side. Each margin (threshold / worst correct) stays under its stated bound.

Faults are uniform: every element (or the whole mean) sits at the stated fraction of its
allowance, so "1.5x the threshold" is exact, not a worst case of a random draw.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import re
from collections.abc import Callable

import pytest
import torch
from kornia.augmentation import RandomPlanckianJitter

from fixtures.known_bugs.outcomes import BugObserved
from suites.kornia_2791_planckian_jitter import test_planckian_jitter_device as jitter_direct
from suites.kornia_2837_jpeg_device import chain
from suites.kornia_2837_jpeg_device import test_jpeg_device as codec
from suites.kornia_2867_random_jpeg import test_random_jpeg_device as random_jpeg
from suites.kornia_3028_gaussian_illumination import test_gaussian_illumination_device as illumination
from suites.kornia_4415_shear_range import test_shear_range_device as shear
from suites.kornia_sweeps import test_device_sweep as sweep
from suites.oracle_thresholds import record, recorded_thresholds
from suites.sam2_460_cudagraph import oracles as sam2
from suites.sam2_460_cudagraph import test_cudagraph_control as graph_control
from suites.sam2_460_cudagraph.position_encodings import CHANNELS, CachedSinePosition, encoder_and_eager_twin, frames
from suites.torchvision_8587_encode_jpeg.oracle import BLOCK, Where, check_decoded
from tests.conftest import REPO
from tests.faults.test_fault_kornia_oracles import WrongAfterFirstCall

PAST = 1.5  # the bound: a fault no further past the threshold than twice it
DOCUMENT = record()
UNCALIBRATED: dict[str, dict] = DOCUMENT.pop("uncalibrated")
RECORD: dict[str, dict] = DOCUMENT
THRESHOLD_NAME = re.compile(r"ATOL|RTOL|TOLERANCE|THRESHOLD|_DIFF$")
SIDES = [pytest.param(PAST, True, id="past-threshold"), pytest.param(None, False, id="worst-correct")]


def recorded(name: str, constant: str) -> float:
    """A constant's value as calibrated: the record's, whatever the code holds now."""
    (value,) = [value for key, value in RECORD[name]["constants"].items() if key.endswith(f":{constant}")]
    return value


def code_value(key: str) -> float:
    module, _, constant = key.partition(":")
    return getattr(importlib.import_module(module), constant)


@pytest.mark.parametrize("key", UNCALIBRATED)
def test_each_uncalibrated_threshold_in_the_code_is_the_recorded_one(key: str) -> None:
    assert code_value(key) == UNCALIBRATED[key]["value"], f"{key} is {code_value(key)}, recorded as {UNCALIBRATED[key]['value']}"
    assert UNCALIBRATED[key]["why"]


@pytest.mark.parametrize("name", RECORD)
def test_each_threshold_in_the_code_is_the_calibrated_one(name: str) -> None:
    for key, value in RECORD[name]["constants"].items():
        assert code_value(key) == value, (
            f"{key} is {code_value(key)}, calibrated at {value}: re-run {RECORD[name]['measured'].split(';')[0]} "
            "and write the new record in suites/oracle_thresholds.toml"
        )


def threshold_constants(root=REPO / "suites") -> dict[str, float]:
    """Every module-level numeric constant under root whose name says tolerance or threshold,
    as "module:NAME" -> value (a pair assigned together counts as two)."""
    found = {}
    for path in root.rglob("*.py"):
        module = ".".join(path.relative_to(REPO).with_suffix("").parts)
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if not isinstance(node, ast.Assign) or len(node.targets) != 1:
                continue
            target, value = node.targets[0], node.value
            names = [target] if isinstance(target, ast.Name) else target.elts if isinstance(target, ast.Tuple) else []
            values = [value] if isinstance(target, ast.Name) else value.elts if isinstance(value, ast.Tuple) else []
            for name, constant in zip(names, values):
                if isinstance(name, ast.Name) and THRESHOLD_NAME.search(name.id) and isinstance(constant, ast.Constant):
                    found[f"{module}:{name.id}"] = constant.value
    return found


def test_every_threshold_of_every_oracle_is_calibrated_or_says_why_not() -> None:
    calibrated = {key for entry in RECORD.values() for key in entry["constants"]}
    found = threshold_constants()
    assert len(found) >= 13, "the scan lost the suites' thresholds"
    unrecorded = sorted(set(found) - calibrated - set(UNCALIBRATED))
    assert not unrecorded, f"thresholds with no record in suites/oracle_thresholds.toml: {unrecorded}"
    stale = sorted((calibrated | set(UNCALIBRATED)) - set(found))
    assert not stale, f"records of thresholds the suites no longer have: {stale}"
    assert not calibrated & set(UNCALIBRATED)


def test_the_loader_bench_reads_gives_every_threshold_at_the_codes_value() -> None:
    """bench/oracle_calibration.py measures against recorded_thresholds(): the very values the suites hold."""
    assert recorded_thresholds() == {key: code_value(key) for key in threshold_constants()}


@pytest.mark.parametrize("name", RECORD)
def test_each_margin_is_between_the_worst_correct_result_and_its_stated_bound(name: str) -> None:
    entry = RECORD[name]
    assert 0 < entry["worst_correct"] < 1, f"{name}: the worst correct result must sit inside the threshold"
    margin = 1 / entry["worst_correct"]
    assert margin <= entry["max_margin"], f"{name}: threshold {margin:.0f}x the worst correct result, over its bound {entry['max_margin']}x"
    assert entry["why"] and entry["measured"]


def fraction_for(name: str, past: float | None) -> float:
    return RECORD[name]["worst_correct"] if past is None else past


def expect(caught: bool, match: str):
    return pytest.raises(BugObserved, match=match) if caught else contextlib.nullcontext()


def allowance_shift(expected: torch.Tensor, atol: float, rtol: float, fraction: float) -> torch.Tensor:
    """`expected` moved by `fraction` of allclose's allowance at every element."""
    return expected + fraction * (atol + rtol * expected.abs())


def shifted_on_move(base: type, shift: Callable[[torch.Tensor], torch.Tensor]) -> type:
    """`base`, an augmentation whose output is `shift(output)` once `.to()` moved it: where the
    suites call the library, the moved instance's result is the device's."""

    class ShiftedOnMove(base):
        def _apply(self, fn, *args, **kwargs):
            self.moved = True
            return super()._apply(fn, *args, **kwargs)

        def forward(self, *args, **kwargs):
            out = super().forward(*args, **kwargs)
            return shift(out) if getattr(self, "moved", False) else out

    return ShiftedOnMove


@pytest.mark.catches("suites/kornia_2791_planckian_jitter/test_planckian_jitter_device.py::moved_run_matches_cpu")
@pytest.mark.parametrize(("past", "caught"), SIDES)
def test_fault_kornia_2791_output_tolerance(monkeypatch: pytest.MonkeyPatch, past: float | None, caught: bool) -> None:
    allowance = recorded("kornia-2791 moved output", "ATOL"), recorded("kornia-2791 moved output", "RTOL")
    fraction = fraction_for("kornia-2791 moved output", past)
    shifted = shifted_on_move(RandomPlanckianJitter, lambda out: allowance_shift(out, *allowance, fraction))
    monkeypatch.setattr(jitter_direct, "RandomPlanckianJitter", shifted)
    with expect(caught, "differs from CPU"):
        jitter_direct.moved_run_matches_cpu("blackbody", None, 4, torch.device("cpu"))


# The shared device oracle's thresholds (suites/device_oracle.py), each through its suite's test:
# record, the constant, the augmentation the suite calls, how the oracle measures, the call.
DEVICE_ORACLE_CASES = {
    "kornia-2867": (
        "kornia-2867 RandomJPEG output", "MEAN_ABS_TOLERANCE", random_jpeg, "RandomJPEG", "mean_abs",
        lambda: random_jpeg.test_random_jpeg_on_device_matches_cpu("cpu", None, moved=True),
    ),
    "kornia-4415": (
        "kornia-4415 sheared output", "ATOL", shear, "RandomShear", "max_abs",
        lambda: shear.test_sheared_augmentation_moved_to_device_matches_cpu("cpu", None, lambda: shear.RandomShear(5.0, p=1.0)),
    ),
}


@pytest.mark.catches("suites/kornia_3028_gaussian_illumination/test_gaussian_illumination_device.py::test_unmoved_illumination_on_device_matches_cpu")
@pytest.mark.parametrize(("past", "caught"), [pytest.param(PAST, True, id="past-threshold"), pytest.param(0.5, False, id="inside")])
def test_fault_kornia_3028_tolerance(monkeypatch: pytest.MonkeyPatch, past: float, caught: bool) -> None:
    """Uncalibrated (a correct device is exact): a fault past the recorded value is caught, one
    inside it passes."""
    shift = past * UNCALIBRATED["suites.kornia_3028_gaussian_illumination.test_gaussian_illumination_device:ATOL"]["value"]

    class Shifted(illumination.RandomGaussianIllumination):
        def forward(self, image, *args, **kwargs):  # the unmoved module's output, on the image's device
            out = super().forward(image, *args, **kwargs)
            return out + shift if getattr(self, "called", False) else out

        def __call__(self, *args, **kwargs):
            out = super().__call__(*args, **kwargs)
            self.called = True
            return out

    monkeypatch.setattr(illumination, "RandomGaussianIllumination", Shifted)
    with expect(caught, "differs from CPU: max_abs"):
        illumination.test_unmoved_illumination_on_device_matches_cpu("cpu", None, (1, 3, 16, 16))


@pytest.mark.catches(
    "suites/kornia_2867_random_jpeg/test_random_jpeg_device.py::test_random_jpeg_on_device_matches_cpu",
    "suites/kornia_4415_shear_range/test_shear_range_device.py::test_sheared_augmentation_moved_to_device_matches_cpu",
)
@pytest.mark.parametrize("case", DEVICE_ORACLE_CASES.values(), ids=DEVICE_ORACLE_CASES.keys())
@pytest.mark.parametrize(("past", "caught"), SIDES)
def test_fault_device_oracle_tolerance(monkeypatch: pytest.MonkeyPatch, case: tuple, past: float | None, caught: bool) -> None:
    name, constant, suite, augmentation, measure, call = case
    shift = fraction_for(name, past) * recorded(name, constant)
    monkeypatch.setattr(suite, augmentation, shifted_on_move(getattr(suite, augmentation), lambda out: out + shift))
    with expect(caught, f"differs from CPU: {measure}"):
        call()


@pytest.mark.catches(
    "suites/kornia_2837_jpeg_device/test_jpeg_device.py::test_codec_on_device_matches_cpu",
    "suites/kornia_2837_jpeg_device/test_jpeg_device.py::test_codec_gradient_on_device_matches_cpu",
    "suites/kornia_2837_jpeg_device/test_jpeg_device.py::_observe_close",
)
@pytest.mark.parametrize(
    ("name", "test", "fault"),
    [
        pytest.param("kornia-2837 codec output", "test_codec_on_device_matches_cpu", lambda out, image, quality, shift: out + shift, id="output"),
        pytest.param(
            "kornia-2837 codec gradient", "test_codec_gradient_on_device_matches_cpu",
            lambda out, image, quality, shift: out + shift * (image - image.detach()), id="gradient",  # zero forward, + shift per gradient element
        ),
    ],
)
@pytest.mark.parametrize(("past", "caught"), SIDES)
def test_fault_kornia_2837_codec_mean_tolerance(
    monkeypatch: pytest.MonkeyPatch, name: str, test: str, fault: Callable, past: float | None, caught: bool
) -> None:
    shift = fraction_for(name, past) * recorded(name, "MEAN_ABS_TOLERANCE")
    wrong = WrongAfterFirstCall(codec.jpeg_codec_differentiable, lambda out, image, quality: fault(out, image, quality, shift))
    monkeypatch.setattr(codec, "jpeg_codec_differentiable", wrong)
    with expect(caught, "differs from CPU: mean"):
        getattr(codec, test)("cpu", None, (1, 3, 16, 16), [50.0])


@pytest.mark.catches("suites/kornia_2837_jpeg_device/test_jpeg_device.py::test_chain_piece_on_device_matches_cpu")
@pytest.mark.parametrize(("past", "caught"), SIDES)
def test_fault_kornia_2837_chain_tolerance(monkeypatch: pytest.MonkeyPatch, past: float | None, caught: bool) -> None:
    shift = fraction_for("kornia-2837 chain pieces", past) * recorded("kornia-2837 chain pieces", "CHAIN_MEAN_ABS_TOLERANCE")
    monkeypatch.setitem(
        chain.CHAIN_PIECES, "gaussian_blur2d", WrongAfterFirstCall(chain.CHAIN_PIECES["gaussian_blur2d"], lambda out, device: out + shift)
    )
    with expect(caught, "gaussian_blur2d on cpu differs from CPU"):
        codec.test_chain_piece_on_device_matches_cpu("cpu", None, "gaussian_blur2d")


@pytest.mark.catches("suites/sam2_460_cudagraph/oracles.py::check_against_eager", "suites/sam2_460_cudagraph/oracles.py::compare_output")
@pytest.mark.parametrize(
    ("name", "tf32"),
    [pytest.param("sam2-460 compiled vs eager (fp32)", False, id="fp32"), pytest.param("sam2-460 TF32 operands vs fp32", True, id="tf32")],
)
@pytest.mark.parametrize(("past", "caught"), SIDES)
@torch.no_grad()
def test_fault_sam2_460_compiled_against_eager_tolerance(name: str, tf32: bool, past: float | None, caught: bool) -> None:
    """The tolerance test_compiled_encoder passes (comparison_tolerance under the precision in force)."""
    encoder, eager = encoder_and_eager_twin(CachedSinePosition(CHANNELS, fixed=True), "cpu")
    prefix = "TF32_" if tf32 else ""
    atol, rtol = recorded(name, f"{prefix}ATOL"), recorded(name, f"{prefix}RTOL")
    fraction = fraction_for(name, past)
    with expect(caught, "differs from eager"):
        sam2.check_against_eager(
            lambda frame: allowance_shift(encoder(frame), atol, rtol, fraction), eager, frames("cpu"), sam2.comparison_tolerance(tf32, False)
        )


@pytest.mark.catches("suites/sam2_460_cudagraph/test_cudagraph_control.py::close")
@pytest.mark.parametrize(("past", "caught"), SIDES)
def test_fault_sam2_460_control_read_back_tolerance(past: float | None, caught: bool) -> None:
    """The controls tell an intact first output from an overwritten one by `close`: a read-back
    just past its tolerance is overwritten, the worst correct one intact."""
    first, _ = graph_control.inputs("cpu")
    expected = graph_control.square(first)
    name = "sam2-460 control read-back"
    read_back = allowance_shift(expected, recorded(name, "CLOSE_ATOL"), recorded(name, "CLOSE_RTOL"), fraction_for(name, past))
    assert graph_control.close(read_back, expected) is not caught


@pytest.mark.catches("suites/kornia_sweeps/test_device_sweep.py::value_mismatch")
@pytest.mark.parametrize(("past", "caught"), SIDES)
def test_fault_sweep_value_tolerance(past: float | None, caught: bool) -> None:
    expected = torch.rand(2, 3, 8, 8) * 4 - 2
    name = "kornia sweeps simulated vs cpu"
    actual = allowance_shift(expected, recorded(name, "ATOL"), recorded(name, "RTOL"), fraction_for(name, past))
    assert (sweep.value_mismatch((actual, expected.long()), (expected, expected.long())) is not None) is caught


@pytest.mark.catches("suites/torchvision_8587_encode_jpeg/oracle.py::check_decoded")
@pytest.mark.parametrize(("past", "caught"), SIDES)
def test_fault_torchvision_8587_block_threshold(past: float | None, caught: bool) -> None:
    """One 8x8 block off by `fraction` of the block threshold, in levels of 255, the rest exact."""
    source = torch.full((3, 32, 48), 128, dtype=torch.uint8)
    decoded = source.clone()
    levels = fraction_for("torchvision-8587 8x8 block", past) * recorded("torchvision-8587 8x8 block", "MAX_BLOCK_ABS_DIFF")
    # Whole levels where they can be: part of the block at ceil, the rest at floor, mean = levels.
    block = decoded[:, 8 : 8 + BLOCK, 16 : 16 + BLOCK].reshape(-1)
    low, extra = int(levels), levels - int(levels)
    raised = round(extra * block.numel())
    block += low
    block[:raised] += 1
    decoded[:, 8 : 8 + BLOCK, 16 : 16 + BLOCK] = block.reshape(3, BLOCK, BLOCK)
    with expect(caught, "worst 8x8 block"):
        check_decoded(source, decoded, Where("cpu", 32, 48, 0), "planted")
