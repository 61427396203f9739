"""`python -m reports acceptance`'s pytest steps: the GPU workflow's two (one xdist worker per GPU,
then a serial step for multi-GPU and isolated tests), then the simulated device's conformance on
the real GPU (its race shapes under torch's CUDA sanitizer, and their symptoms); the folder under
reports/observed/<date>-<gpu-model>/ that keeps their reports. summary.py reads them back.

Pure functions; __main__.py runs them. Run on one real GPU (reports/observed/2026-11-25-nvidia-h200/);
several GPUs are argued from the workflow and the plugins, not run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from reports import REPOSITORY

# The two steps' selections; tests/runner/test_report_workflow.py checks the workflow uses the same.
PARALLEL_MARKERS = "not min_cuda_devices and not isolated_on_gpu"
SERIAL_MARKERS = "min_cuda_devices or isolated_on_gpu"
OBSERVED_ROOT = REPOSITORY / "reports" / "observed"
REHEARSAL_ROOT = REPOSITORY / "reports" / "out" / "acceptance-rehearsal"
DEFAULT_RACE_BUDGET = "2000,300s"
# What the simulated device's stream rules claim, checked against the real GPU's (docs/reference/simcuda-streams.md).
CONFORMANCE_TESTS = "tests/simcuda/test_stream_shapes_on_a_real_gpu.py"
CONFORMANCE = "conformance"
# CUDA_LAUNCH_BLOCKING serializes every launch, so the racy twins compute right values; torch reads
# PYTORCH_NO_CUDA_MEMORY_CACHING as set whatever its value, and without the caching allocator the
# freed-block twin gets no recycled block. Either would fail the symptom tests as a false finding.
CONFORMANCE_CLEARS = ("CUDA_LAUNCH_BLOCKING", "PYTORCH_NO_CUDA_MEMORY_CACHING")


@dataclass(frozen=True)
class Step:
    name: str  # "parallel", "serial" or "conformance": also its report folder
    command: tuple[str, ...]
    # Variables set for it: the conformance step runs its file whatever PYTEST_ADDOPTS selects of
    # the bugs (`--bug` would deselect all of it).
    environment: tuple[tuple[str, str], ...] = ()
    # Variables removed for it, whatever their value: they change what the step means.
    removed: tuple[str, ...] = ()

    def environment_from(self, base: dict[str, str]) -> dict[str, str]:
        """The step's process environment, from the caller's."""
        return {name: value for name, value in {**base, **dict(self.environment)}.items() if name not in self.removed}

    @property
    def judges_bugs(self) -> bool:
        """Its results.json holds the bugs' verdicts (the conformance step's decide nothing)."""
        return self.name != CONFORMANCE


def acceptance_steps(python: str, gpu_count: int, out_dir: Path, race_budget: str = DEFAULT_RACE_BUDGET) -> list[Step]:
    """The pytest runs, in order: the xdist step needs at least one GPU (one worker each)."""
    if gpu_count < 1:
        raise ValueError("the acceptance run needs a visible GPU (nvidia-smi / torch.cuda.device_count() saw none)")
    shared = (
        python, "-m", "pytest", "suites", "--device", "cuda", "--require-gpu", "--strict-sweeps",
        "--hypothesis-profile=gpu", f"--race-budget={race_budget}", "-p", "no:cacheprovider",
    )
    return [
        Step("parallel", (*shared, "-n", str(gpu_count), "-m", PARALLEL_MARKERS, f"--report-dir={out_dir / 'parallel'}")),
        Step("serial", (*shared, "-m", SERIAL_MARKERS, f"--report-dir={out_dir / 'serial'}")),
        Step(
            CONFORMANCE,
            (python, "-m", "pytest", CONFORMANCE_TESTS, "-p", "no:cacheprovider", f"--report-dir={out_dir / CONFORMANCE}"),
            (("PYTEST_ADDOPTS", ""),),
            CONFORMANCE_CLEARS,
        ),
    ]


def acceptance_root(out: Path | None, simulated_runner: bool) -> Path:
    """Where the run's folder goes: reports/observed/ (or `out`) on real GPUs; on the simulated
    runner `out` or reports/out/acceptance-rehearsal/, never reports/observed/, which keeps
    real-GPU evidence only (ValueError, one line)."""
    if not simulated_runner:
        return out or OBSERVED_ROOT
    root = out or REHEARSAL_ROOT
    if root.resolve().is_relative_to(OBSERVED_ROOT.resolve()):
        raise ValueError(f"--out {root}: reports/observed/ keeps real-GPU runs only, and this is the simulated runner (SIMCUDA_RUNNER_GPUS)")
    return root


def observed_folder(date: str, gpu_names: list[str], root: Path = OBSERVED_ROOT) -> Path:
    """<repository>/reports/observed/2026-11-22-nvidia-h100-80gb-hbm3 (the first GPU's model; "x2" and
    "+a100" style suffixes when there are several)."""
    if not gpu_names:
        raise ValueError("no GPU name to name the folder by")
    models = list(dict.fromkeys(gpu_names))
    slug = "+".join(re.sub(r"[^a-z0-9]+", "-", model.lower()).strip("-") for model in models)
    count = f"-x{len(gpu_names)}" if len(gpu_names) > 1 else ""
    return root / f"{date}-{slug}{count}"
