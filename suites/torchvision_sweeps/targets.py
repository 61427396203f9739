"""What the torchvision stream sweep runs: every public transform of `torchvision.transforms.v2`
(by introspection: a new one is swept or named as not swept, never silently missed), each on a
small sample of TV tensors that reaches the device the way a data loader's batch does: pinned
(`pin_memory`), then copied with `non_blocking=True`; its outputs come back the same way, read
after the stream's synchronize.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

import torch

from fixtures.known_bugs.library_api import library_api
from fixtures.proxies.meta_proxy import output_tensors

torchvision = library_api("torchvision", first_release="0.1.6")
tv_tensors = library_api("torchvision.tv_tensors", first_release="0.16.0")
v2 = library_api("torchvision.transforms.v2", first_release="0.15.1")

TABLE_WRITTEN_FOR = "0.29.1"  # the torchvision release whose signatures the tables below follow
# Containers run other transforms; Lambda runs the user's function; ToPILImage leaves the device.
NOT_SWEPT = {
    "Compose": "a container", "RandomApply": "a container", "RandomChoice": "a container", "RandomOrder": "a container",
    "Lambda": "runs the user's function", "ToPILImage": "returns a PIL image (host memory by design)",
}
CONSTRUCTOR_ARGS: dict[str, dict[str, object]] = {
    "CenterCrop": {"size": 16}, "ColorJitter": {"brightness": 0.2, "contrast": 0.2, "saturation": 0.2, "hue": 0.1},
    "ConvertBoundingBoxFormat": {"format": "CXCYWH"}, "FiveCrop": {"size": 16},
    "GaussianBlur": {"kernel_size": 3}, "JPEG": {"quality": 50}, "Normalize": {"mean": [0.5] * 3, "std": [0.2] * 3},
    "Pad": {"padding": 2}, "RandomAdjustSharpness": {"sharpness_factor": 2.0}, "RandomAffine": {"degrees": 10.0},
    "RandomCrop": {"size": 16}, "RandomPosterize": {"bits": 4}, "RandomResize": {"min_size": 16, "max_size": 40},
    "RandomIoUCrop": {"trials": 4},  # its default 40 trials cost a quarter of the sweep
    "RandomResizedCrop": {"size": 16}, "RandomRotation": {"degrees": 10.0}, "RandomShortestSize": {"min_size": 24},
    "RandomSolarize": {"threshold": 100.0}, "Resize": {"size": 24}, "ScaleJitter": {"target_size": (32, 32)},
    "SetClampingMode": {"clamping_mode": "soft"}, "TenCrop": {"size": 16}, "ToDtype": {"dtype": torch.float32},
    "UniformTemporalSubsample": {"num_samples": 2}, "CutMix": {"num_classes": 4}, "MixUp": {"num_classes": 4},
}

# Tensors a transform keeps as plain attributes (no buffers `.to()` would move): made on the device.
DEVICE_CONSTRUCTOR_ARGS: dict[str, Callable[[torch.device], dict[str, object]]] = {
    "LinearTransformation": lambda device: {
        "transformation_matrix": torch.eye(3 * 32 * 32, device=device), "mean_vector": torch.zeros(3 * 32 * 32, device=device),
    },
}


def detection_sample() -> dict[str, torch.Tensor]:
    """Two uint8 images with boxes, masks and labels: what most transforms take."""
    generator = torch.Generator().manual_seed(0)
    return {
        "image": tv_tensors.Image(torch.randint(0, 256, (2, 3, 32, 32), dtype=torch.uint8, generator=generator)),
        "boxes": tv_tensors.BoundingBoxes(torch.tensor([[2.0, 3.0, 20.0, 24.0], [5.0, 5.0, 30.0, 12.0]]), format="XYXY", canvas_size=(32, 32)),
        "masks": tv_tensors.Mask(torch.zeros(2, 32, 32, dtype=torch.uint8)),
        "labels": torch.tensor([0, 1]),
    }


def image_sample() -> dict[str, torch.Tensor]:
    """The images alone: the auto-augment policies and the multi-crops take no boxes."""
    return {"image": detection_sample()["image"]}


def float_sample() -> dict[str, torch.Tensor]:
    """Float images and class labels: normalization, noise, and the batch mixes (MixUp, CutMix)."""
    sample = detection_sample()
    return {"image": tv_tensors.Image(sample["image"].float() / 255), "labels": sample["labels"]}


def keypoint_sample() -> dict[str, torch.Tensor]:
    return {"image": detection_sample()["image"], "keypoints": tv_tensors.KeyPoints(torch.tensor([[4.0, 5.0], [20.0, 9.0]]), canvas_size=(32, 32))}


SAMPLE_OF: dict[str, Callable[[], dict[str, torch.Tensor]]] = {
    **dict.fromkeys(("AugMix", "AutoAugment", "RandAugment", "TrivialAugmentWide", "FiveCrop", "TenCrop"), image_sample),
    **dict.fromkeys(("Normalize", "GaussianNoise", "CutMix", "MixUp"), float_sample),
    "SanitizeKeyPoints": keypoint_sample,
}


def transform_names() -> list[str]:
    """Every public transform class of torchvision.transforms.v2, sorted."""
    return sorted(
        name for name in dir(v2)
        if not name.startswith("_") and inspect.isclass(getattr(v2, name)) and issubclass(getattr(v2, name), v2.Transform)
        and getattr(v2, name) is not v2.Transform
    )


def swept_names() -> list[str]:
    return [name for name in transform_names() if name not in NOT_SWEPT]


def swept_groups() -> dict[str, list[str]]:
    """The swept transforms by the v2 module that defines them (`geometry`, `color`, ...): one test
    each, a test's own cost outweighing one transform's call on the simulated device."""
    groups: dict[str, list[str]] = {}
    for name in swept_names():
        groups.setdefault(getattr(v2, name).__module__.rpartition(".")[2].lstrip("_"), []).append(name)
    return groups


def pinned(sample: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Each tensor in page-locked memory, its TV tensor class and metadata kept by `wrap` (whether
    `pin_memory` keeps them is torchvision-8855's question, judged by its own suite)."""
    return {key: tv_tensors.wrap(value.pin_memory(), like=value) if isinstance(value, tv_tensors.TVTensor) else value.pin_memory()
            for key, value in sample.items()}


def transform_call(name: str) -> Callable[[torch.device], object]:
    """The transform on a pinned sample copied to `device` without blocking; its outputs copied back
    the same way and read once the stream is synchronized. Returns the device outputs (their
    placement is checked by the caller)."""

    def call(device: torch.device) -> object:
        torch.manual_seed(0)
        transform = getattr(v2, name)(**CONSTRUCTOR_ARGS.get(name, {}), **DEVICE_CONSTRUCTOR_ARGS.get(name, lambda _: {})(device))
        source = pinned(SAMPLE_OF.get(name, detection_sample)())  # pinning needs the (simulated) CUDA
        outputs = transform({key: value.to(device, non_blocking=True) for key, value in source.items()})
        back = [tensor.to("cpu", non_blocking=True) for tensor in output_tensors(outputs)]
        if device.type == "cuda":
            torch.cuda.current_stream(device).synchronize()
        for tensor in back:
            tensor.sum()  # the host reads what the stream wrote
        return outputs

    return call

