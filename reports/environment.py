"""The facts a reviewer needs to place a run: releases, Python, OS, CPU, CUDA and each GPU.

Read at the end of a session, after the tests: asking for GPU names initialises CUDA, which
must never happen during collection.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys

from fixtures.versions import installed_version

PACKAGES = ("torch", "torchvision", "kornia", "sam2", "numpy", "pillow", "pytest", "hypothesis")
CI_VARIABLES = (
    "CI",
    "GITHUB_REPOSITORY",
    "GITHUB_RUN_ID",
    "GITHUB_JOB",
    "GITHUB_SHA",
    "GITHUB_SERVER_URL",
    "RUNNER_NAME",
    "HARNESS_JOB_NAME",
    "HARNESS_REPORT_URL",
)


def nvidia_driver_version() -> str | None:
    """The driver version from nvidia-smi, or None where there is no NVIDIA driver."""
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        output = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=20, check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return output.splitlines()[0].strip() if output.strip() else None


def gpu_facts() -> list[dict]:
    import torch

    return [
        {
            "index": index,
            "name": torch.cuda.get_device_name(index),
            "memory_gib": round(torch.cuda.get_device_properties(index).total_memory / 2**30, 1),
            "capability": ".".join(map(str, torch.cuda.get_device_capability(index))),
        }
        for index in range(torch.cuda.device_count())
    ]


def environment_facts() -> dict:
    import torch

    gpus = gpu_facts()
    return {
        "packages": {name: installed_version(name) for name in PACKAGES},
        "python": platform.python_version(),
        "implementation": sys.implementation.name,
        "platform": platform.platform(),
        "cpu": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "torch_cuda_build": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if gpus else None,
        "nvidia_driver": nvidia_driver_version() if gpus else None,
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "gpus": gpus,
        "ci": {name: os.environ[name] for name in CI_VARIABLES if name in os.environ},
    }


def gpu_summary(environment: dict) -> str:
    """"2 x NVIDIA H100 80GB HBM3" or "CPU only": the title's device part."""
    names = [gpu["name"] for gpu in environment["gpus"]]
    if not names:
        return "CPU only"
    return ", ".join(f"{names.count(name)} x {name}" for name in dict.fromkeys(names))
