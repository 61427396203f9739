"""bench/race_trigger_rates.py, the command that measures the race bugs' trigger rates on a GPU and
writes the race record's rows: its rounds' command lines, its table, and its refusals where no real
GPU is visible (the rest needs one: run on a GPU machine, reports/observed/README.md)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import torch

from fixtures.races.choice import gpu_choice
from fixtures.races.odds import rate_at_least, rate_at_most
from fixtures.races.record import Trial, pooled
from tests.conftest import REPO
from tests.helpers import warm_python

sys.path.insert(0, str(REPO / "bench"))
import race_trigger_rates  # bench/ is no package: its scripts are imported from their folder

COMMAND = [sys.executable, "bench/race_trigger_rates.py"]
CASE = "suites/torchvision_9606_decode_freed_memory/test_decode_after_free.py::test_decode_after_caller_freed_memory"


def test_a_round_is_the_race_suites_on_every_gpu_with_its_own_seed(tmp_path: Path) -> None:
    command = race_trigger_rates.round_command("py", ["torchvision-9606", "torchvision-9060"], "200,5s", 3, tmp_path)
    assert command == [
        "py", "-m", "pytest", "--bug", "torchvision-9606", "--bug", "torchvision-9060", "--device", "cuda", "--require-gpu",
        "--race-budget=200,5s", "--seed=3", "-p", "no:cacheprovider", f"--report-dir={tmp_path}",
    ]  # fmt: skip
    # A user's default run draws seed 0's frames, and the record counts one seed once: every measurement draws anew.
    seeds = {race_trigger_rates.fresh_seed() for _ in range(20)}
    assert 0 not in seeds and len(seeds) > 1


def test_the_table_gives_each_case_its_count_its_rate_and_the_budget_it_would_now_get() -> None:
    trials = [Trial("torchvision-9606", CASE, "NVIDIA H100", "0.29.1", attempts, 1, seed, "s", attempts) for attempts, seed in ((4, 9), (2, 10))]
    header, row = race_trigger_rates.summary_lines(trials, record=())
    assert header.split() == ["bug", "case", "gpu", "attempts", "seen", "rate", "(95%)", "default", "budget"]
    budget = gpu_choice("NVIDIA H100", pooled(trials), [pooled(trials)]).budget
    rate = f"{rate_at_least(2, 6):.1%}-{rate_at_most(2, 6):.1%}"
    assert row.split() == ["torchvision-9606", "test_decode_after_caller_freed_memory", "NVIDIA", "H100", "6", "2", rate, str(budget)]


@pytest.mark.parametrize(
    ("arguments", "environ", "message"),
    [
        ([], {"SIMCUDA_RUNNER_GPUS": "1"}, "race_trigger_rates: refused: the simulated runner (SIMCUDA_RUNNER_GPUS) is no real GPU"),
        (["--rounds", "0"], {}, "race_trigger_rates.py: error: --rounds 0: one or more"),
        (["--race-budget", "ten"], {}, "race_trigger_rates.py: error: --race-budget: 'ten' is not a positive count"),
        (["--record", "--out", "/tmp/elsewhere"], {}, "--record with --out /tmp/elsewhere: each row names its results.json"),
    ],
)
def test_a_run_it_cannot_make_is_one_line(arguments: list[str], environ: dict[str, str], message: str) -> None:
    done = warm_python.run([*COMMAND, *arguments], cwd=REPO, env={**os.environ, **environ}, timeout=300)
    assert done.returncode == 2
    last = done.stderr.strip().splitlines()[-1]
    assert message in last, done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is visible here: the script would measure it, not refuse")
def test_without_a_gpu_it_refuses_in_one_line() -> None:
    done = warm_python.run(COMMAND, cwd=REPO, env={key: value for key, value in os.environ.items() if key != "SIMCUDA_RUNNER_GPUS"}, timeout=300)
    assert (done.returncode, done.stderr.strip()) == (2, "race_trigger_rates: refused: no GPU is visible; trigger rates come from a real GPU")
