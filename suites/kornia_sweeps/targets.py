"""What the sweeps run: kornia's public modules and functions, each with small valid arguments.

Listing is by introspection: every public augmentation is swept; a public function is swept where
the arguments table below has it (`function_targets` names the others); arguments are made on the
device under test.
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

import pytest
import torch
from torch import nn

from fixtures.known_bugs.library_api import library_api
from fixtures.known_bugs.outcomes import Inconclusive
from fixtures.sweeps.tables import skip_if_older_than_table

kornia = library_api("kornia", first_release="0.1.0")
# The swept modules, each imported here: a submodule is an attribute of `kornia` once imported.
augmentation = library_api("kornia.augmentation", first_release="0.2.0")
enhance = library_api("kornia.enhance", first_release="0.4.0")
filters = library_api("kornia.filters", first_release="0.1.4")
geometry_transform = library_api("kornia.geometry.transform", first_release="0.1.4")
# The base whose apply_transform_mask raises NotImplementedError: a class without its own takes no mask.
_AugmentationBase = library_api("kornia.augmentation.base", "_AugmentationBase", first_release="0.6.0")

TABLE_WRITTEN_FOR = "0.9.0"  # the kornia release whose signatures the tables below follow
STATE_SWEPT_MODULES = (augmentation, enhance, filters)
FUNCTION_SWEPT_MODULES = (filters, enhance, geometry_transform)
# Containers and bases are no augmentations of their own; the dissolving ones need diffusers.
NOT_STANDALONE = ("Base", "Sequential", "Dispather", "Dissolving", "MixAugmentation")

# Constructor arguments for the classes that have required ones (all others: defaults).
CONSTRUCTOR_ARGS: dict[str, dict[str, object]] = {
    "CenterCrop": {"size": 8}, "CenterCrop3D": {"size": 4}, "PadTo": {"size": (20, 20)},
    "Denormalize": {"mean": 0.5, "std": 0.2}, "Normalize": {"mean": 0.5, "std": 0.2},
    "LongestMaxSize": {"max_size": 12}, "SmallestMaxSize": {"max_size": 12}, "Resize": {"size": 12},
    "RandomAffine": {"degrees": 10.0}, "RandomAffine3D": {"degrees": 10.0},
    "RandomRotation": {"degrees": 10.0}, "RandomRotation3D": {"degrees": 10.0},
    "RandomRotation90": {"times": (1, 2)}, "RandomShear": {"shear": 5.0},
    "RandomCrop": {"size": (8, 8)}, "RandomCrop3D": {"size": (2, 8, 8)}, "RandomResizedCrop": {"size": (8, 8)},
    "RandomFisheye": {"center_x": torch.tensor([-0.3, 0.3]), "center_y": torch.tensor([-0.3, 0.3]),
                      "gamma": torch.tensor([0.9, 1.0])},
    "RandomGaussianBlur": {"kernel_size": 3, "sigma": (0.5, 1.5)},
    # The default drops (5-20 px high) do not fit a 16 px image under every seed.
    "RandomRain": {"number_of_drops": (1, 3), "drop_height": (1, 4), "drop_width": (1, 3)},
    "RandomMotionBlur": {"kernel_size": 3, "angle": 35.0, "direction": 0.5},
    "RandomMotionBlur3D": {"kernel_size": 3, "angle": 35.0, "direction": 0.5},
    # Not required, but the default warns that it will change; the state is the same either way.
    "RandomCutMixV2": {"use_correct_lambda": True},
    "AddWeighted": {"alpha": 0.5, "beta": 0.5, "gamma": 0.0},
    "AdjustBrightness": {"brightness_factor": 0.2}, "AdjustBrightnessAccumulative": {"brightness_factor": 0.2},
    "AdjustContrast": {"contrast_factor": 0.8}, "AdjustContrastWithMeanSubtraction": {"contrast_factor": 0.8},
    "AdjustGamma": {"gamma": 0.8}, "AdjustHue": {"hue_factor": 0.2}, "AdjustSaturation": {"saturation_factor": 0.8},
    "AdjustSaturationWithGraySubtraction": {"saturation_factor": 0.8}, "Rescale": {"factor": 0.5},
    "Threshold": {"thresh": 0.5},
    "BilateralBlur": {"kernel_size": 3, "sigma_color": 0.1, "sigma_space": (1.0, 1.0)},
    "JointBilateralBlur": {"kernel_size": 3, "sigma_color": 0.1, "sigma_space": (1.0, 1.0)},
    "BlurPool2D": {"kernel_size": 3}, "BoxBlur": {"kernel_size": 3}, "EdgeAwareBlurPool2D": {"kernel_size": 3},
    "GaussianBlur2d": {"kernel_size": 3, "sigma": (1.0, 1.0)}, "GuidedBlur": {"kernel_size": 3, "eps": 0.1},
    "InRange": {"lower": (0.2, 0.2, 0.2), "upper": (0.8, 0.8, 0.8)}, "Laplacian": {"kernel_size": 3},
    "MaxBlurPool2D": {"kernel_size": 3}, "MedianBlur": {"kernel_size": 3},
    "MotionBlur": {"kernel_size": 3, "angle": 35.0, "direction": 0.5},
    "MotionBlur3D": {"kernel_size": 3, "angle": 35.0, "direction": 0.5},
    "UnsharpMask": {"kernel_size": 3, "sigma": (1.0, 1.0)},
}


MOVED = "module moved"  # built, then module.to(device), then called on the device's input
NOT_MOVED = "module not moved"  # built and left on the CPU, called on the device's input
# The probability blend: p=MIXED_P and a coin that transforms some elements of the batch and skips
# the others, so kornia blends transformed and untouched elements (and their matrices), where
# kornia-4151 lived; at p=1.0 kornia skips that blend. The module is left on the CPU (its coin and
# parameters drawn there, the input on the device: every blend site meets both devices); moved, a
# mixed batch found only what the p=1.0 moved way finds (0.7.1 to 0.9.0), at the cost of a way.
MIXED_BATCH = "mixed batch"
NOT_MOVED_MIXED = f"{NOT_MOVED}, {MIXED_BATCH}"
MIXED_P = 0.5
# An image and its mask through AugmentationSequential (data keys input, mask), at p=1.0, the
# module moved and not: kornia's mask paths (apply_transform_mask, the parameters they take, the
# sequential's own handling of masks: kornia-3066's and kornia-4151's mask blend lived there).
WITH_A_MASK = "with a mask"
MOVED_MASK, NOT_MOVED_MASK = f"{MOVED}, {WITH_A_MASK}", f"{NOT_MOVED}, {WITH_A_MASK}"


@dataclass(frozen=True)
class SweepCall:
    """A public kornia callable and how to call it on a device."""

    name: str  # dotted, e.g. kornia.filters.gaussian_blur2d
    call: Callable[[torch.device], object]
    way: str = ""  # for modules: MOVED, NOT_MOVED, NOT_MOVED_MIXED, MOVED_MASK or NOT_MOVED_MASK
    mixed: bool = False  # a mixed batch (p=MIXED_P): its own CPU run to compare with
    masked: bool = False  # an image and its mask through AugmentationSequential: its own CPU run too

    @property
    def reference(self) -> tuple[bool, bool]:
        """Which CPU run this call's output is compared with: one per (mixed, masked)."""
        return self.mixed, self.masked


def public_module_classes(module: ModuleType) -> list[type[nn.Module]]:
    classes = [getattr(module, name) for name in dir(module) if not name.startswith("_")]
    return [
        cls for cls in classes
        if inspect.isclass(cls) and issubclass(cls, nn.Module) and not inspect.isabstract(cls)
        and not any(part in cls.__name__ for part in NOT_STANDALONE)
    ]


def build(cls: type[nn.Module], **extra: object) -> nn.Module:
    """The class with the table's arguments (and `extra`); on a kornia older than the table a
    signature change is a skip that says so, on the table's release or newer it is a harness error."""
    try:
        return cls(**CONSTRUCTOR_ARGS.get(cls.__name__, {}), **extra)
    except TypeError as error:
        skip_if_older_than_table("kornia", kornia.__version__, TABLE_WRITTEN_FOR, str(error))
        raise


def state_targets() -> dict[str, type[nn.Module]]:
    """Public name (first package exporting it) -> class; kornia.enhance re-exports a few."""
    found: dict[type[nn.Module], str] = {}
    for module in STATE_SWEPT_MODULES:
        for cls in public_module_classes(module):
            found.setdefault(cls, f"{module.__name__}.{cls.__name__}")
    return {name: cls for cls, name in sorted(found.items(), key=lambda item: item[1])}


def image(device: torch.device, batch: int = 2, size: tuple[int, int] = (16, 16)) -> torch.Tensor:
    """Inputs are drawn on the CPU (the same values on every device), then moved."""
    return torch.rand(batch, 3, *size).to(device)


def volume(device: torch.device) -> torch.Tensor:
    return torch.rand(2, 3, 4, 16, 16).to(device)


def tensor(device: torch.device, values: object) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float32).to(device)


def identity_affine(device: torch.device) -> torch.Tensor:
    return torch.eye(2, 3).expand(2, 2, 3).to(device)


def identity_homography(device: torch.device) -> torch.Tensor:
    return torch.eye(3).expand(2, 3, 3).to(device)


def boxes(device: torch.device) -> torch.Tensor:
    return tensor(device, [[[2, 2], [9, 2], [9, 9], [2, 9]]] * 2)


def identity_affine3d(device: torch.device) -> torch.Tensor:
    return torch.eye(3, 4).expand(2, 3, 4).to(device)


def identity_homography3d(device: torch.device) -> torch.Tensor:
    return torch.eye(4).expand(2, 4, 4).to(device)


def boxes3d(device: torch.device) -> torch.Tensor:
    """Two boxes of `volume`, eight (x, y, z) corners each, kornia's order."""
    corners = [[2, 2, 0], [9, 2, 0], [9, 9, 0], [2, 9, 0], [2, 2, 1], [9, 2, 1], [9, 9, 1], [2, 9, 1]]
    return tensor(device, [corners] * 2)


def pixels(device: torch.device) -> torch.Tensor:
    """Each pixel's x coordinate of a (2, 16, 16) batch (its transpose: y), a remap to itself."""
    return torch.arange(16.0).expand(2, 16, 16).to(device)


def meshgrid(device: torch.device, *sizes: int) -> torch.Tensor:
    """kornia's normalized meshgrid (x first, in [-1, 1]), made here: kornia 0.8.3 deprecated
    kornia.utils.create_meshgrid (a warning per call) for kornia.geometry's, which older releases lack."""
    axes = torch.meshgrid(*(torch.linspace(-1, 1, size) for size in sizes), indexing="ij")
    return torch.stack(axes[::-1], dim=-1)[None].to(device)


def tps_points(device: torch.device) -> torch.Tensor:
    return tensor(device, [[[-0.5, -0.5], [0.5, -0.5], [0.5, 0.5], [-0.5, 0.5], [0.0, 0.0]]] * 2)


def tps_weights(device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """A thin-plate spline's kernel and affine weights for the identity map."""
    return torch.zeros(2, 5, 2).to(device), tensor(device, [[[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]] * 2)


def mask(device: torch.device) -> torch.Tensor:
    """A binary one-channel mask of `image`'s size, drawn on the CPU, then moved."""
    return (torch.rand(2, 1, 16, 16) > 0.5).float().to(device)


def labels(device: torch.device, shape: tuple[int, ...]) -> torch.Tensor:
    return torch.randint(0, 3, shape).to(device)


def augmentation_inputs(cls: type[nn.Module], device: torch.device) -> tuple[torch.Tensor, ...]:
    """An image (a volume for the 3D ones); the transplantations also need a label mask."""
    data = volume(device) if cls.__name__.endswith("3D") else image(device)
    if "Transplantation" in cls.__name__:
        return data, labels(device, (data.shape[0], *data.shape[2:]))
    return (data,)


def always_applied(cls: type[nn.Module]) -> dict[str, float]:
    """p=1.0 where the class has a probability: a device bug in the transform must not hide
    behind a coin that skipped every image of the batch."""
    return {"p": 1.0} if "p" in inspect.signature(cls).parameters else {}


class CoinNotMixed(Inconclusive):
    """A mixed-batch call whose coin transformed every element of the batch or none: the blend
    it exists for did not select between the two."""


def batch_wide_probability(cls: type[nn.Module]) -> str | None:
    """Why `cls` never mixes a batch (its `p` is the whole batch's: kornia passes it on as
    `p_batch`, or fixes `same_on_batch=True`), or None where each element has its own coin (or
    the class cannot be built here: then its mixed-batch call says what happens)."""
    if "p" not in inspect.signature(cls).parameters:
        return "no probability"
    try:
        module = cls(**CONSTRUCTOR_ARGS.get(cls.__name__, {}), p=MIXED_P)
    except (TypeError, ValueError):  # an older release's signature: the mixed-batch call skips, naming it
        return None
    if getattr(module, "p_batch", 1.0) != 1.0 or getattr(module, "p", MIXED_P) != MIXED_P:
        return f"p is the whole batch's probability (p={getattr(module, 'p', None)}, p_batch={getattr(module, 'p_batch', None)})"
    if getattr(module, "same_on_batch", False):
        return "one coin for the whole batch (same_on_batch=True, fixed by the class)"
    return None


def seed_a_mixed_coin(batch: int) -> int:
    """Reseed the CPU generator (a module left on the CPU draws its coin there) with the first seed, from
    one drawn off the current state (so --seed still varies it), whose first `batch` draws give
    kornia's coin (`torch.rand(batch, device=...) < p`, its first draw in forward) both heads and
    tails; the seed. At p=0.5 a seed misses with odds 2**(1 - batch): two tries on average."""
    if batch < 2:
        raise ValueError(f"a batch of {batch} cannot be mixed")
    start = int(torch.randint(0, 2**62, ()))
    seed = next(
        seed for seed in itertools.count(start)
        if 0 < int((torch.rand(batch, generator=torch.Generator().manual_seed(seed)) < MIXED_P).sum()) < batch
    )
    torch.default_generator.manual_seed(seed)
    return seed


def check_coin_mixed(module: nn.Module, batch: int) -> None:
    """CoinNotMixed unless the call's `batch_prob` (kept in `_params`) transformed some elements
    and skipped others: a kornia whose coin is not the first draw of forward, or not
    `torch.rand(batch) < p`, may not (0.7 and 0.8 sample a Bernoulli: on the CPU the same coin)."""
    gate = getattr(module, "_params", None) or {}
    if not isinstance(gate.get("batch_prob"), torch.Tensor):
        raise CoinNotMixed(f"{type(module).__name__} kept no batch_prob: whether its coin mixed the batch is unknown")
    applied = int((gate["batch_prob"].detach().reshape(-1) > 0.5).sum().cpu())
    if not 0 < applied < batch:
        raise CoinNotMixed(f"the coin transformed {applied} of {batch} elements: no mixed batch, the blend selected nothing")


def maskless(cls: type[nn.Module]) -> str | None:
    """Why the mask ways leave `cls` out, or None where AugmentationSequential takes it with an
    image and its mask (read from the class)."""
    if cls.__name__.endswith("3D"):
        return "a 3D augmentation: the sweep's mask is a 2D image's"
    if "Transplantation" in cls.__name__:
        return "its label mask is an input of its own (the other ways pass it)"
    if any(base.__name__.startswith("MixAugmentationBase") for base in cls.__mro__):
        # Releases differ (0.9.0 refuses every one; 0.9.0rc1 takes one for all five): asked of the installed one.
        return mask_refused(cls)
    if getattr(cls, "apply_transform_mask", None) is _AugmentationBase.apply_transform_mask:
        return "no apply_transform_mask of its own: kornia raises NotImplementedError for a mask"
    return None


def mask_refused(cls: type[nn.Module]) -> str | None:
    """Why the installed kornia refuses `cls` a mask, from one call through AugmentationSequential
    on the CPU (the global RNG left as it was), or None where it takes one. A refusal is kornia's
    NotImplementedError (0.9.0's for every mix augmentation); any other failure is no refusal: the
    mask ways run and their CPU reference says what failed (the harness's error on the table's
    release, a skip on an older one), as does a class whose signature refuses the table."""
    with torch.random.fork_rng(devices=[]):
        try:
            sequential = kornia.augmentation.AugmentationSequential(build(cls, **always_applied(cls)), data_keys=["input", "mask"])
            sequential(image(torch.device("cpu")), mask(torch.device("cpu")))
        except NotImplementedError as refusal:
            said = f": {str(refusal).strip().splitlines()[0]}" if str(refusal).strip() else ""
            return f"a mix augmentation: kornia {kornia.__version__} refuses a mask for it on the CPU (NotImplementedError{said})"
        except (Exception, pytest.skip.Exception):  # noqa: BLE001 - no refusal: the ways run and report it
            return None
    return None


def augmentation_call(cls: type[nn.Module], way: str = MOVED) -> SweepCall:
    mixed, masked = way == NOT_MOVED_MIXED, way in (MOVED_MASK, NOT_MOVED_MASK)

    def call(device: torch.device) -> object:
        module = build(cls, p=MIXED_P) if mixed else build(cls, **always_applied(cls))
        if masked:
            module = kornia.augmentation.AugmentationSequential(module, data_keys=["input", "mask"])
        module = module.to(device) if way in (MOVED, MOVED_MASK) else module
        inputs = (image(device), mask(device)) if masked else augmentation_inputs(cls, device)
        if not mixed:
            return module(*inputs)
        seed_a_mixed_coin(inputs[0].shape[0])
        output = module(*inputs)
        check_coin_mixed(module, inputs[0].shape[0])
        return output

    return SweepCall(f"kornia.augmentation.{cls.__name__}", call, way, mixed, masked)


# Functions: name -> call on a device. A public function missing here is reported as unswept
# (test_device_sweep.py's test_every_public_function_has_sweep_arguments).
FUNCTION_CALLS: dict[str, Callable[[torch.device], object]] = {
    # kornia.filters
    "bilateral_blur": lambda d: kornia.filters.bilateral_blur(image(d), 3, 0.1, (1.0, 1.0)),
    "blur_pool2d": lambda d: kornia.filters.blur_pool2d(image(d), 3),
    "box_blur": lambda d: kornia.filters.box_blur(image(d), 3),
    "canny": lambda d: kornia.filters.canny(image(d)),
    "filter2d": lambda d: kornia.filters.filter2d(image(d), torch.ones(1, 3, 3).to(d) / 9),
    "filter2d_separable": lambda d: kornia.filters.filter2d_separable(
        image(d), torch.ones(1, 3).to(d) / 3, torch.ones(1, 3).to(d) / 3),
    "filter3d": lambda d: kornia.filters.filter3d(volume(d), torch.ones(1, 3, 3, 3).to(d) / 27),
    "gaussian": lambda d: kornia.filters.gaussian(5, tensor(d, [[1.0]])),
    "gaussian_blur2d": lambda d: kornia.filters.gaussian_blur2d(image(d), (5, 5), (1.5, 1.5)),
    "get_gaussian_kernel1d": lambda d: kornia.filters.get_gaussian_kernel1d(5, tensor(d, [[1.0]])),
    "get_gaussian_kernel2d": lambda d: kornia.filters.get_gaussian_kernel2d((5, 5), tensor(d, [[1.0, 1.0]])),
    "get_gaussian_kernel3d": lambda d: kornia.filters.get_gaussian_kernel3d((3, 3, 3), tensor(d, [[1.0, 1.0, 1.0]])),
    "get_gaussian_discrete_kernel1d": lambda d: kornia.filters.get_gaussian_discrete_kernel1d(5, tensor(d, [[1.0]])),
    "get_gaussian_erf_kernel1d": lambda d: kornia.filters.get_gaussian_erf_kernel1d(5, tensor(d, [[1.0]])),
    "guided_blur": lambda d: kornia.filters.guided_blur(image(d), image(d), 3, 0.1),
    "in_range": lambda d: kornia.filters.in_range(image(d), (0.2, 0.2, 0.2), (0.8, 0.8, 0.8)),
    "joint_bilateral_blur": lambda d: kornia.filters.joint_bilateral_blur(image(d), image(d), 3, 0.1, (1.0, 1.0)),
    "laplacian": lambda d: kornia.filters.laplacian(image(d), 3),
    "max_blur_pool2d": lambda d: kornia.filters.max_blur_pool2d(image(d), 3),
    "median_blur": lambda d: kornia.filters.median_blur(image(d), 3),
    "motion_blur": lambda d: kornia.filters.motion_blur(image(d), 3, tensor(d, [35.0, 10.0]), tensor(d, [0.5, -0.5])),
    "motion_blur3d": lambda d: kornia.filters.motion_blur3d(
        volume(d), 3, tensor(d, [[35.0, 10.0, 5.0]] * 2), tensor(d, [0.5, -0.5])),
    "otsu_threshold": lambda d: kornia.filters.otsu_threshold(image(d)),
    "sobel": lambda d: kornia.filters.sobel(image(d)),
    "spatial_gradient": lambda d: kornia.filters.spatial_gradient(image(d)),
    "spatial_gradient3d": lambda d: kornia.filters.spatial_gradient3d(volume(d)),
    "unsharp_mask": lambda d: kornia.filters.unsharp_mask(image(d), (3, 3), (1.0, 1.0)),
    # kernels made where the caller asks (`device=`): one left on the CPU is the 2837 class
    "convolve2d": lambda d: kornia.filters.convolve2d(image(d), torch.ones(1, 3, 3).to(d) / 9),
    "convolve3d": lambda d: kornia.filters.convolve3d(volume(d), torch.ones(1, 3, 3, 3).to(d) / 27),
    "correlate2d": lambda d: kornia.filters.correlate2d(image(d), torch.ones(1, 3, 3).to(d) / 9),
    "correlate3d": lambda d: kornia.filters.correlate3d(volume(d), torch.ones(1, 3, 3, 3).to(d) / 27),
    "edge_aware_blur_pool2d": lambda d: kornia.filters.edge_aware_blur_pool2d(image(d), 3),
    "fft_conv": lambda d: kornia.filters.fft_conv(image(d), torch.ones(1, 3, 3).to(d) / 9),
    "get_binary_kernel2d": lambda d: kornia.filters.get_binary_kernel2d(3, device=d),
    "get_box_kernel1d": lambda d: kornia.filters.get_box_kernel1d(3, device=d),
    "get_box_kernel2d": lambda d: kornia.filters.get_box_kernel2d(3, device=d),
    "get_diff_kernel2d": lambda d: kornia.filters.get_diff_kernel2d(device=d),
    "get_hanning_kernel1d": lambda d: kornia.filters.get_hanning_kernel1d(5, device=d),
    "get_hanning_kernel2d": lambda d: kornia.filters.get_hanning_kernel2d((5, 5), device=d),
    "get_laplacian_kernel1d": lambda d: kornia.filters.get_laplacian_kernel1d(3, device=d),
    "get_laplacian_kernel2d": lambda d: kornia.filters.get_laplacian_kernel2d(3, device=d),
    "get_motion_kernel2d": lambda d: kornia.filters.get_motion_kernel2d(5, tensor(d, [35.0, 10.0]), tensor(d, [0.5, -0.5])),
    "get_motion_kernel3d": lambda d: kornia.filters.get_motion_kernel3d(5, tensor(d, [[35.0, 10.0, 5.0]] * 2), tensor(d, [0.5, -0.5])),
    "get_sobel_kernel2d": lambda d: kornia.filters.get_sobel_kernel2d(device=d),
    "get_spatial_gradient_kernel2d": lambda d: kornia.filters.get_spatial_gradient_kernel2d("sobel", 1, device=d),
    "get_spatial_gradient_kernel3d": lambda d: kornia.filters.get_spatial_gradient_kernel3d("diff", 1, device=d),
    "laplacian_1d": lambda d: kornia.filters.laplacian_1d(5, device=d),
    # older releases' own (to 0.9.0rc1): the tensor-sigma spellings, later folded into the functions above
    "gaussian_blur2d_t": lambda d: kornia.filters.gaussian_blur2d_t(image(d), (5, 5), tensor(d, [[1.5, 1.5]] * 2)),
    "get_gaussian_kernel1d_t": lambda d: kornia.filters.get_gaussian_kernel1d_t(5, tensor(d, [[1.0]])),
    "get_gaussian_kernel2d_t": lambda d: kornia.filters.get_gaussian_kernel2d_t((5, 5), tensor(d, [[1.0, 1.0]])),
    "get_gaussian_kernel3d_t": lambda d: kornia.filters.get_gaussian_kernel3d_t((3, 3, 3), tensor(d, [[1.0, 1.0, 1.0]])),
    # kornia.enhance
    "adjust_brightness": lambda d: kornia.enhance.adjust_brightness(image(d), tensor(d, [0.1, 0.2])),
    "adjust_contrast": lambda d: kornia.enhance.adjust_contrast(image(d), tensor(d, [0.8, 1.2])),
    "adjust_gamma": lambda d: kornia.enhance.adjust_gamma(image(d), tensor(d, [0.8, 1.2])),
    "adjust_hue": lambda d: kornia.enhance.adjust_hue(image(d), tensor(d, [0.1, -0.1])),
    "adjust_log": lambda d: kornia.enhance.adjust_log(image(d)),
    "adjust_saturation": lambda d: kornia.enhance.adjust_saturation(image(d), tensor(d, [0.8, 1.2])),
    "adjust_sigmoid": lambda d: kornia.enhance.adjust_sigmoid(image(d)),
    "denormalize": lambda d: kornia.enhance.denormalize(image(d), tensor(d, [0.5] * 3), tensor(d, [0.2] * 3)),
    "equalize": lambda d: kornia.enhance.equalize(image(d)),
    "equalize_clahe": lambda d: kornia.enhance.equalize_clahe(image(d, size=(32, 32))),
    "image_histogram2d": lambda d: kornia.enhance.image_histogram2d(image(d)),
    "integral_image": lambda d: kornia.enhance.integral_image(image(d)),
    "invert": lambda d: kornia.enhance.invert(image(d)),
    "jpeg_codec_differentiable": lambda d: kornia.enhance.jpeg_codec_differentiable(image(d), tensor(d, [50.0])),
    "normalize": lambda d: kornia.enhance.normalize(image(d), tensor(d, [0.5] * 3), tensor(d, [0.2] * 3)),
    "normalize_min_max": lambda d: kornia.enhance.normalize_min_max(image(d)),
    "posterize": lambda d: kornia.enhance.posterize(image(d), 3),
    "sharpness": lambda d: kornia.enhance.sharpness(image(d), 0.5),
    "shift_rgb": lambda d: kornia.enhance.shift_rgb(
        image(d), tensor(d, [0.1, 0.0]), tensor(d, [0.0, 0.1]), tensor(d, [0.1, 0.1])),
    "solarize": lambda d: kornia.enhance.solarize(image(d), 0.5),
    "threshold": lambda d: kornia.enhance.threshold(image(d), 0.5),
    "add_weighted": lambda d: kornia.enhance.add_weighted(image(d), tensor(d, [0.5]), image(d), tensor(d, [0.5]), tensor(d, [0.1])),
    "adjust_brightness_accumulative": lambda d: kornia.enhance.adjust_brightness_accumulative(image(d), tensor(d, [0.1, 0.2])),
    "adjust_contrast_with_mean_subtraction": lambda d: kornia.enhance.adjust_contrast_with_mean_subtraction(image(d), tensor(d, [0.8, 1.2])),
    "adjust_hue_raw": lambda d: kornia.enhance.adjust_hue_raw(kornia.color.rgb_to_hsv(image(d)), tensor(d, [0.1, -0.1])),
    "adjust_saturation_raw": lambda d: kornia.enhance.adjust_saturation_raw(kornia.color.rgb_to_hsv(image(d)), tensor(d, [0.8, 1.2])),
    "adjust_saturation_with_gray_subtraction": lambda d: kornia.enhance.adjust_saturation_with_gray_subtraction(image(d), tensor(d, [0.8, 1.2])),
    "equalize3d": lambda d: kornia.enhance.equalize3d(volume(d)),
    "histogram": lambda d: kornia.enhance.histogram(torch.rand(2, 32).to(d), torch.linspace(0, 1, 8).to(d), tensor(d, 0.9)),
    "histogram2d": lambda d: kornia.enhance.histogram2d(
        torch.rand(2, 32).to(d), torch.rand(2, 32).to(d), torch.linspace(0, 1, 8).to(d), tensor(d, 0.9)),
    "integral_tensor": lambda d: kornia.enhance.integral_tensor(image(d), (2, 3)),
    "linear_transform": lambda d: kornia.enhance.linear_transform(torch.rand(10, 3).to(d), torch.eye(3).to(d), torch.zeros(1, 3).to(d)),
    "zca_mean": lambda d: kornia.enhance.zca_mean(torch.rand(10, 3).to(d)),
    "zca_whiten": lambda d: kornia.enhance.zca_whiten(torch.rand(10, 3).to(d)),
    # kornia.geometry.transform
    "affine": lambda d: kornia.geometry.transform.affine(image(d), identity_affine(d)),
    "center_crop": lambda d: kornia.geometry.transform.center_crop(image(d), (8, 8)),
    "crop_and_resize": lambda d: kornia.geometry.transform.crop_and_resize(image(d), boxes(d), (6, 6)),
    "elastic_transform2d": lambda d: kornia.geometry.transform.elastic_transform2d(
        image(d), torch.rand(2, 2, 16, 16).to(d)),
    "get_perspective_transform": lambda d: kornia.geometry.transform.get_perspective_transform(
        boxes(d), boxes(d) + 1.0),
    "get_rotation_matrix2d": lambda d: kornia.geometry.transform.get_rotation_matrix2d(
        tensor(d, [[8.0, 8.0]] * 2), tensor(d, [30.0, 45.0]), tensor(d, [[1.0, 1.0]] * 2)),
    "hflip": lambda d: kornia.geometry.transform.hflip(image(d)),
    "vflip": lambda d: kornia.geometry.transform.vflip(image(d)),
    "rot180": lambda d: kornia.geometry.transform.rot180(image(d)),
    "invert_affine_transform": lambda d: kornia.geometry.transform.invert_affine_transform(identity_affine(d)),
    "pyrdown": lambda d: kornia.geometry.transform.pyrdown(image(d)),
    "pyrup": lambda d: kornia.geometry.transform.pyrup(image(d)),
    "build_pyramid": lambda d: kornia.geometry.transform.build_pyramid(image(d), 2),
    "build_laplacian_pyramid": lambda d: kornia.geometry.transform.build_laplacian_pyramid(image(d), 2),
    "rescale": lambda d: kornia.geometry.transform.rescale(image(d), 0.5, antialias=True),
    "resize": lambda d: kornia.geometry.transform.resize(image(d), (8, 8), antialias=True),
    "rotate": lambda d: kornia.geometry.transform.rotate(image(d), tensor(d, [30.0, 45.0])),
    "scale": lambda d: kornia.geometry.transform.scale(image(d), tensor(d, [[1.2, 1.2]] * 2)),
    "shear": lambda d: kornia.geometry.transform.shear(image(d), tensor(d, [[0.1, 0.0]] * 2)),
    "translate": lambda d: kornia.geometry.transform.translate(image(d), tensor(d, [[1.0, 2.0]] * 2)),
    "warp_affine": lambda d: kornia.geometry.transform.warp_affine(image(d), identity_affine(d), (16, 16)),
    "warp_perspective": lambda d: kornia.geometry.transform.warp_perspective(
        image(d), identity_homography(d), (16, 16)),
    "upscale_double": lambda d: kornia.geometry.transform.upscale_double(image(d)),  # to 0.8.2
    # 3D twins, boxes, matrices, thin-plate splines
    "affine3d": lambda d: kornia.geometry.transform.affine3d(volume(d), identity_affine3d(d)),
    "center_crop3d": lambda d: kornia.geometry.transform.center_crop3d(volume(d), (2, 8, 8)),
    "crop_and_resize3d": lambda d: kornia.geometry.transform.crop_and_resize3d(volume(d), boxes3d(d), (2, 6, 6)),
    "crop_by_boxes": lambda d: kornia.geometry.transform.crop_by_boxes(image(d), boxes(d), boxes(d) - 2.0),
    "crop_by_boxes3d": lambda d: kornia.geometry.transform.crop_by_boxes3d(volume(d), boxes3d(d), boxes3d(d)),
    "crop_by_indices": lambda d: kornia.geometry.transform.crop_by_indices(image(d), boxes(d), (6, 6)),
    "crop_by_transform_mat": lambda d: kornia.geometry.transform.crop_by_transform_mat(image(d), identity_homography(d), (8, 8)),
    "crop_by_transform_mat3d": lambda d: kornia.geometry.transform.crop_by_transform_mat3d(volume(d), identity_homography3d(d), (2, 8, 8)),
    "get_affine_matrix2d": lambda d: kornia.geometry.transform.get_affine_matrix2d(
        tensor(d, [[1.0, 2.0]] * 2), tensor(d, [[8.0, 8.0]] * 2), tensor(d, [[1.0, 1.0]] * 2), tensor(d, [30.0, 45.0])),
    "get_affine_matrix3d": lambda d: kornia.geometry.transform.get_affine_matrix3d(
        tensor(d, [[1.0, 2.0, 0.0]] * 2), tensor(d, [[8.0, 8.0, 2.0]] * 2), tensor(d, [[1.0, 1.0, 1.0]] * 2), tensor(d, [[30.0, 0.0, 0.0]] * 2)),
    "get_perspective_transform3d": lambda d: kornia.geometry.transform.get_perspective_transform3d(boxes3d(d), boxes3d(d) + 1.0),
    "get_projective_transform": lambda d: kornia.geometry.transform.get_projective_transform(
        tensor(d, [[8.0, 8.0, 2.0]] * 2), tensor(d, [[30.0, 0.0, 0.0]] * 2), tensor(d, [[1.0, 1.0, 1.0]] * 2)),
    "get_shear_matrix2d": lambda d: kornia.geometry.transform.get_shear_matrix2d(tensor(d, [[8.0, 8.0]] * 2), tensor(d, [0.1, 0.2])),
    "get_shear_matrix3d": lambda d: kornia.geometry.transform.get_shear_matrix3d(tensor(d, [[8.0, 8.0, 2.0]] * 2), tensor(d, [0.1, 0.2])),
    "get_tps_transform": lambda d: kornia.geometry.transform.get_tps_transform(tps_points(d), tps_points(d) + 0.05),
    "get_translation_matrix2d": lambda d: kornia.geometry.transform.get_translation_matrix2d(tensor(d, [[1.0, 2.0]] * 2)),
    "homography_warp": lambda d: kornia.geometry.transform.homography_warp(image(d), identity_homography(d), (16, 16)),
    "homography_warp3d": lambda d: kornia.geometry.transform.homography_warp3d(volume(d), identity_homography3d(d), (4, 16, 16)),
    "projection_from_Rt": lambda d: kornia.geometry.transform.projection_from_Rt(torch.eye(3).expand(2, 3, 3).to(d), torch.ones(2, 3, 1).to(d)),
    "remap": lambda d: kornia.geometry.transform.remap(image(d), pixels(d), pixels(d).transpose(1, 2)),
    "resize_to_be_divisible": lambda d: kornia.geometry.transform.resize_to_be_divisible(image(d), 5),
    "rotate3d": lambda d: kornia.geometry.transform.rotate3d(volume(d), tensor(d, [30.0, 45.0]), tensor(d, [0.0, 10.0]), tensor(d, [5.0, 0.0])),
    "warp_affine3d": lambda d: kornia.geometry.transform.warp_affine3d(volume(d), identity_affine3d(d), (4, 16, 16)),
    "warp_grid": lambda d: kornia.geometry.transform.warp_grid(meshgrid(d, 16, 16), identity_homography(d)),
    "warp_grid3d": lambda d: kornia.geometry.transform.warp_grid3d(meshgrid(d, 4, 16, 16), identity_homography3d(d)),
    "warp_image_tps": lambda d: kornia.geometry.transform.warp_image_tps(image(d), tps_points(d), *tps_weights(d)),
    "warp_perspective3d": lambda d: kornia.geometry.transform.warp_perspective3d(volume(d), identity_homography3d(d), (4, 16, 16)),
    "warp_points_tps": lambda d: kornia.geometry.transform.warp_points_tps(tps_points(d), tps_points(d), *tps_weights(d)),
}


def function_targets() -> tuple[list[SweepCall], list[str]]:
    """(swept functions, public functions with no arguments table entry)."""
    swept, unswept = [], []
    for module in FUNCTION_SWEPT_MODULES:
        for name in sorted(dir(module)):
            if name.startswith("_") or not inspect.isfunction(getattr(module, name)):
                continue
            dotted = f"{module.__name__}.{name}"
            if name in FUNCTION_CALLS:
                swept.append(SweepCall(dotted, FUNCTION_CALLS[name]))
            else:
                unswept.append(dotted)
    return swept, unswept


def unmixed_augmentations() -> dict[str, str]:
    """Augmentations with no mixed-batch call: dotted name -> why kornia never mixes their batch."""
    classes = sorted(public_module_classes(kornia.augmentation), key=lambda cls: cls.__name__)
    return {f"kornia.augmentation.{cls.__name__}": why for cls in classes if (why := batch_wide_probability(cls))}


def maskless_augmentations() -> dict[str, str]:
    """Augmentations with no mask ways: dotted name -> why (maskless)."""
    classes = sorted(public_module_classes(kornia.augmentation), key=lambda cls: cls.__name__)
    return {f"kornia.augmentation.{cls.__name__}": why for cls in classes if (why := maskless(cls))}


def device_targets(ways: tuple[str, ...] = (MOVED,)) -> list[SweepCall]:
    """Every augmentation called each of these ways (the mixed batch only where each element has
    its own coin, the mask ways only where kornia takes a mask), then every function with an
    arguments entry."""
    classes = sorted(public_module_classes(kornia.augmentation), key=lambda cls: cls.__name__)
    unmixed = unmixed_augmentations() if NOT_MOVED_MIXED in ways else {}
    masks = MOVED_MASK in ways or NOT_MOVED_MASK in ways
    without_masks = maskless_augmentations() if masks else {}
    calls = [augmentation_call(cls, way) for cls in classes for way in ways]
    kept = [call for call in calls if not (call.mixed and call.name in unmixed) and not (call.masked and call.name in without_masks)]
    return kept + function_targets()[0]
