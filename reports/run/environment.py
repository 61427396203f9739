"""The facts a reviewer needs to place a run: releases, Python, OS, CPU, CUDA and each GPU.

Read at the end of a session, after the tests: asking for GPU names initialises CUDA, which
must never happen during collection.
"""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Sequence

from packaging.version import InvalidVersion, Version

from fixtures.devices.driver import nvidia_driver_version
from fixtures.known_bugs.versions import installed_version

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


def gpu_facts() -> list[dict]:
    import torch

    return [
        {
            "index": index,
            "name": torch.cuda.get_device_name(index),
            "uuid": str(torch.cuda.get_device_properties(index).uuid),
            "memory_gib": round(torch.cuda.get_device_properties(index).total_memory / 2**30, 1),
            "capability": ".".join(map(str, torch.cuda.get_device_capability(index))),
        }
        for index in range(torch.cuda.device_count())
    ]


def fp32_precision_facts() -> dict[str, str]:
    """The session's fp32 precision settings (torch's new API, readable whatever API set them):
    "tf32" lets cuBLAS/cuDNN round products to TF32 on Ampere and later; "none" inherits."""
    import torch

    backends = torch.backends
    readers = {
        "generic": lambda: backends.fp32_precision,
        "cuda.matmul": lambda: backends.cuda.matmul.fp32_precision,
        "cudnn.conv": lambda: backends.cudnn.conv.fp32_precision,
        "cudnn.rnn": lambda: backends.cudnn.rnn.fp32_precision,
    }
    facts = {}
    for name, read in readers.items():
        try:
            facts[name] = str(read())
        except (AttributeError, RuntimeError):  # a torch older than the fp32_precision API
            facts[name] = "n/a"
    return facts


def environment_facts(workers: dict[str, dict] | None = None) -> dict:
    """`workers`: what each xdist worker was pinned to and saw (fixtures/devices/plugin.py)."""
    import torch

    from simcuda import describe_runner, running

    gpus = gpu_facts()
    runner = running()
    return {
        # Set on the simulated GPU runner (simcuda/runner.py): the GPUs below are simulated.
        "simulated_runner": describe_runner(runner) if runner is not None else None,
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
        "fp32_precision": fp32_precision_facts(),
        "workers": workers or {},
        "ci": {name: os.environ[name] for name in CI_VARIABLES if name in os.environ},
    }


def gpu_summary(environment: dict) -> str:
    """"2 x NVIDIA H100 80GB HBM3", "CPU only" or the simulated runner: the title's device part."""
    if environment.get("simulated_runner"):
        return environment["simulated_runner"]  # "simulated 2-GPU runner: no real GPU"
    names = [gpu["name"] for gpu in environment.get("gpus", [])]
    if not names:
        return "CPU only"
    return ", ".join(f"{names.count(name)} x {name}" for name in dict.fromkeys(names))


def environment_rows(environment: dict) -> dict[str, str | dict[str, str]]:
    """The environment table of the HTML report: one row per fact, in the order a reviewer reads
    them; a dict value shows as a list. Plain text: whoever puts it in a page escapes it."""
    absent = "n/a (no GPU visible)"
    rows: dict[str, str | dict[str, str]] = {
        **({"Simulated GPU runner": environment["simulated_runner"]} if environment.get("simulated_runner") else {}),
        "Packages": {name: version or "not installed" for name, version in environment["packages"].items()},
        "Python": f"{environment['python']} ({environment['implementation']})",
        "OS": environment["platform"],
        "CPU": f"{environment['cpu']}, {environment['cpu_count']} logical cores",
        "CUDA runtime (torch build)": environment["torch_cuda_build"] or "none (CPU-only torch build)",
        "cuDNN": str(environment["cudnn"]) if environment["cudnn"] else absent,
        "NVIDIA driver": environment["nvidia_driver"] or absent,
        "GPUs": {
            f"cuda:{gpu['index']}": f"{gpu['name']}, {gpu['memory_gib']} GiB, compute capability {gpu['capability']}"
            + (f", {gpu['uuid']}" if gpu.get("uuid") else "")
            for gpu in environment["gpus"]
        }
        or "none visible",
        "fp32 precision (session default)": environment.get("fp32_precision", {}),
    }
    if environment.get("workers"):
        rows["xdist workers"] = {worker: worker_summary(seen) for worker, seen in environment["workers"].items()}
    if environment["cuda_visible_devices"] is not None:
        rows["CUDA_VISIBLE_DEVICES"] = environment["cuda_visible_devices"]
    if environment["ci"]:
        rows["CI"] = dict(environment["ci"])
    return rows


def worker_summary(seen: dict) -> str:
    """"CUDA_VISIBLE_DEVICES=1; saw 0: NVIDIA H100 (...); crashed: ..." for one xdist worker."""
    parts = [f"CUDA_VISIBLE_DEVICES={seen.get('cuda_visible_devices') or '<unpinned>'}"]
    parts.append("saw " + ", ".join(seen["gpus"]) if seen.get("gpus") else "reported no GPU")
    if seen.get("crashed"):
        parts.append(f"crashed: {seen['crashed']}")
    return "; ".join(parts)


def releases(environment: dict) -> list[str]:
    """["torch 2.14.1", "torchvision 0.29.1", "kornia 0.9.0"]: the releases a run tested, and
    sam2's where installed (the optional extra)."""
    packages = environment["packages"]
    always = [f"{name} {packages.get(name) or '(not installed)'}" for name in ("torch", "torchvision", "kornia")]
    return always + ([f"sam2 {packages['sam2']}"] if packages.get("sam2") else [])


def release_sort_key(named: Sequence[str]) -> tuple:
    """Releases ("torch 2.10.0", ...) in PEP 440 order, not as text (2.6.0 before 2.10.0)."""
    return tuple((name, _version_or_last(version)) for name, _, version in (release.partition(" ") for release in named))


def _version_or_last(version: str) -> tuple:
    try:
        return (0, Version(version))
    except InvalidVersion:  # "(not installed)"
        return (1, version)


def release_summary(environment: dict) -> str:
    return ", ".join(releases(environment))
