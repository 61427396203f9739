"""`python -m reports acceptance`: every GPU test on every visible GPU, as the GPU workflow runs
them (one xdist worker per GPU, then a serial step for multi-GPU and isolated tests), with the
results kept under reports/observed/<date>-<gpu-model>/ and a summary per bug: verdict, evidence
and the GPUs its tests ran on, then one combined line per bug (the worse of the two steps).

Pure functions here (commands, folder name, summary); __main__.py runs them. No GPU was at hand
when this was written: it is argued from the workflow and the plugins, not run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from fixtures.verdicts import ERROR, FIXED, INCONCLUSIVE, NOT_REPRODUCED, REGRESSED, REPRODUCED, SKIPPED
from reports.scan_run import REPOSITORY

# The two steps' selections; tests/test_report_workflow.py checks the workflow uses the same.
PARALLEL_MARKERS = "not min_cuda_devices and not isolated_on_gpu"
SERIAL_MARKERS = "min_cuda_devices or isolated_on_gpu"
OBSERVED_ROOT = REPOSITORY / "reports" / "observed"
DEFAULT_RACE_BUDGET = "2000,300s"
# The combined verdict of a bug over both steps is the first of these that either step gave.
WORSE_FIRST = (ERROR, REGRESSED, NOT_REPRODUCED, REPRODUCED, FIXED, INCONCLUSIVE, SKIPPED)


@dataclass(frozen=True)
class Step:
    name: str  # "parallel" or "serial": also its report folder
    command: tuple[str, ...]


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
    ]


def observed_folder(date: str, gpu_names: list[str], root: Path = OBSERVED_ROOT) -> Path:
    """<repository>/reports/observed/2026-11-22-nvidia-h100-80gb-hbm3 (the first GPU's model; "x2" and
    "+a100" style suffixes when there are several)."""
    if not gpu_names:
        raise ValueError("no GPU name to name the folder by")
    models = list(dict.fromkeys(gpu_names))
    slug = "+".join(re.sub(r"[^a-z0-9]+", "-", model.lower()).strip("-") for model in models)
    count = f"-x{len(gpu_names)}" if len(gpu_names) > 1 else ""
    return root / f"{date}-{slug}{count}"


def gpus_by_bug(document: dict) -> dict[str, list[str]]:
    """Per bug id: the distinct `gpu` properties of its tests that ran on a GPU, sorted."""
    found: dict[str, set[str]] = {}
    for test in document["tests"]:
        properties = test.get("properties", {})
        if "known_bug" in properties and "gpu" in properties:
            found.setdefault(properties["known_bug"], set()).add(properties["gpu"])
    return {bug: sorted(gpus) for bug, gpus in found.items()}


def summary_lines(step: str, document: dict) -> list[str]:
    """One line per bug of one step's results.json: verdict, evidence, GPUs, what decided."""
    gpus = gpus_by_bug(document)
    lines = [f"[{step}] exit status {document['exit_status']}"]
    for record in document["verdicts"]:
        ran_on = ", ".join(gpus.get(record["bug_id"], [])) or "no GPU test ran"
        lines.append(
            f"  {record['bug_id']:<17} {record['verdict']:<15} {record['evidence'] or '-':<7} GPUs: {ran_on}"
            f" | {record['detail']}"
        )
    return lines


def missing_results_lines(step: str, problem: str) -> list[str]:
    """The summary of a step that left no readable results.json (pytest itself died)."""
    return [f"[{step}] no results.json (crashed?): {problem}"]


def worse(verdicts: list[str]) -> str:
    """The worst verdict; one these tools do not know counts as worst of all, to be looked at."""
    return min(verdicts, key=lambda verdict: WORSE_FIRST.index(verdict) if verdict in WORSE_FIRST else -1)


def combined_lines(documents: dict[str, dict | None]) -> list[str]:
    """One line per bug over every step (step name -> its results.json, None when it left none):
    the worse verdict wins, and a step without results counts as an error for every bug."""
    by_bug: dict[str, dict[str, str]] = {}
    for step, document in documents.items():
        for record in document["verdicts"] if document else []:
            by_bug.setdefault(record["bug_id"], {})[step] = record["verdict"]
    missing = [step for step, document in documents.items() if document is None]
    lines = ["[combined] the worse verdict of the steps" + (f"; {', '.join(missing)}: no results.json, counted as error" if missing else "")]
    for bug_id, verdicts in by_bug.items():
        each = {**verdicts, **dict.fromkeys(missing, ERROR)}
        parts = ", ".join(f"{step} {verdict}" for step, verdict in each.items())
        lines.append(f"  {bug_id:<17} {worse(list(each.values())):<15} ({parts})")
    return lines
