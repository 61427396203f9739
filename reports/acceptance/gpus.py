"""The visible GPUs' names for `python -m reports acceptance`, asked of a child Python process.

The parent never starts CUDA: on a runner in exclusive-process compute mode a GPU serves one
process's context at a time, and a context the parent held would lock out every step's pytest.
The child exits, and frees whatever it opened, before the first step starts; it honours
CUDA_VISIBLE_DEVICES as the steps do.
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

from reports.acceptance.steps import observed_folder

# On the simulated runner (SIMCUDA_RUNNER_GPUS) the child starts it first, as its pytest steps do.
ASK = (
    "import json, torch, simcuda; simcuda.start_from_environment(); "
    "print(json.dumps([torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]))"
)


class GpuQueryError(Exception):
    """The child could not list the GPUs (torch failed to import, the driver refused)."""


def visible_gpu_names(python: str) -> list[str]:
    """torch.cuda's name for each visible GPU, in index order, as a fresh `python` process sees them."""
    done = subprocess.run([python, "-c", ASK], capture_output=True, text=True, check=False, timeout=300)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        reason = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        raise GpuQueryError(reason)
    return json.loads(lines[-1])


class NoRealGpu(Exception):
    """Why a tool that measures a real GPU cannot run here, in one line."""


def real_gpu_names(python: str) -> list[str]:
    """The visible real GPUs' names (visible_gpu_names); NoRealGpu on the simulated runner, where
    the GPUs cannot be listed, or where none is visible."""
    if os.environ.get("SIMCUDA_RUNNER_GPUS"):
        raise NoRealGpu("the simulated runner (SIMCUDA_RUNNER_GPUS) is no real GPU")
    try:
        gpus = visible_gpu_names(python)
    except GpuQueryError as error:
        raise NoRealGpu(f"cannot list the GPUs: {error}") from None
    if not gpus:
        raise NoRealGpu("no GPU is visible")
    return gpus


def gpu_check_folder(tool: str, hint: str, out: Path | None, kind: str) -> tuple[list[str], Path] | None:
    """For a tool that checks a real GPU: the real GPUs (real_gpu_names, asked of this Python) and
    where the check of `kind` writes its files (`out`, else reports/observed/<today>-<gpu model>/<kind>);
    None where there is no real GPU, said in one line on stderr ("TOOL: refused: WHY; HINT")."""
    try:
        gpus = real_gpu_names(sys.executable)
    except NoRealGpu as refusal:
        print(f"{tool}: refused: {refusal}; {hint}", file=sys.stderr)
        return None
    return gpus, (out or observed_folder(datetime.date.today().isoformat(), gpus) / kind).resolve()
