"""How often the race bugs' tests see their bug on this machine's GPU: the race suites run in rounds,
each round with its own --seed (other frames, other sizes; the first drawn anew each time), under a long budget; every test's
attempts and sightings become rows of the race record (fixtures/races/trials.toml), which the
default GPU budget and every clean race verdict read.

    python bench/race_trigger_rates.py                      # 4 rounds, --race-budget 200,5s, the three race bugs
    python bench/race_trigger_rates.py --rounds 8 --bug torchvision-9606 --race-budget 400,20s
    python bench/race_trigger_rates.py --record             # also append the rows to the record

Each round is one `pytest --bug ... --device cuda` session, exactly as a user's run makes its
attempts (the suites' own bodies, isolated children and all). A test stops at its first sighting,
so a round gives each case its attempts up to the first sighting; the rounds' seeds make those
independent draws. The rounds' results.json files and the rows (`trials.toml`) are written to
reports/observed/<date>-<gpu-model>/trigger-rates/ (--out elsewhere), which the rows name as their
source. Real GPUs only: on a machine without one, or on the simulated runner, it refuses in one line.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the harness runs from its checkout

from fixtures.known_bugs.registry import load_registry
from fixtures.known_bugs.versions import has_the_bug
from fixtures.races.budget import RaceBudgetError, parse_race_budget
from fixtures.races.choice import gpu_choice
from fixtures.races.odds import rate_at_least, rate_at_most
from fixtures.races.record import DEFAULT_RECORD, Trial, load_record, pooled, record_text, short_case, tallies, trials_from_results
from reports import REPOSITORY
from reports.acceptance.gpus import gpu_check_folder
from reports.acceptance.steps import OBSERVED_ROOT

RACE_BUGS = tuple(bug.id for bug in load_registry().values() if bug.kind == "race")
DEFAULT_ROUNDS = 4
DEFAULT_BUDGET = "200,5s"


def fresh_seed() -> int:
    """The first round's --seed: drawn anew each time, so no two measurements replay one set of
    inputs (the record counts a seed's sightings once); never 0, every user's default run."""
    return random.SystemRandom().randrange(1, 2**31 - DEFAULT_ROUNDS * 1000)


def round_command(python: str, bugs: list[str], budget: str, seed: int, report_dir: Path) -> list[str]:
    """One round: the bugs' suites on every visible GPU, the given budget and seed."""
    selected = [word for bug in bugs for word in ("--bug", bug)]
    return [
        python, "-m", "pytest", *selected, "--device", "cuda", "--require-gpu", f"--race-budget={budget}",
        f"--seed={seed}", "-p", "no:cacheprovider", f"--report-dir={report_dir}",
    ]  # fmt: skip


def summary_lines(trials: list[Trial], record: tuple[Trial, ...]) -> list[str]:
    """Per bug, case and GPU model: this run's attempts and sightings, the rate they bound, and the
    budget the record with these rows would give that case by default."""
    registry = load_registry()
    lines = [f"{'bug':<17} {'case':<58} {'gpu':<20} {'attempts':>8} {'seen':>5} {'rate (95%)':<16} default budget"]
    keys = list(dict.fromkeys((trial.bug, trial.case, trial.gpu) for trial in trials))
    for bug_id, case, gpu in keys:
        mine = pooled(trial for trial in trials if (trial.bug, trial.case, trial.gpu) == (bug_id, case, gpu))
        bug = registry[bug_id]
        by_gpu = tallies((*record, *trials), bug_id, case, has_the_bug(bug))
        choice = gpu_choice(gpu, by_gpu.get(gpu), by_gpu.values())
        low, high = rate_at_least(mine.sightings, mine.attempts), rate_at_most(mine.sightings, mine.attempts)
        lines.append(
            f"{bug_id:<17} {short_case(case)[:58]:<58} {gpu[:20]:<20} {mine.attempts:>8} {mine.sightings:>5} "
            f"{f'{low:.1%}-{high:.1%}':<16} {choice.budget}"
        )
    return lines


def arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS, help=f"sessions, each with its own --seed (default {DEFAULT_ROUNDS})")
    parser.add_argument("--race-budget", default=DEFAULT_BUDGET, help=f"each test's budget in a round (default {DEFAULT_BUDGET})")
    parser.add_argument("--bug", action="append", choices=RACE_BUGS, help="a race bug to measure (repeatable; default all)")
    parser.add_argument("--out", type=Path, help="where the rounds and rows go (default reports/observed/<date>-<gpu-model>/trigger-rates)")
    parser.add_argument("--record", action="store_true", help=f"append the rows to {DEFAULT_RECORD.relative_to(REPOSITORY)}")
    parser.add_argument("--first-seed", type=int, default=None, help="the first round's --seed (default: drawn anew; rounds count up from it)")
    options = parser.parse_args(argv)
    try:
        parse_race_budget(options.race_budget)
    except RaceBudgetError as error:
        parser.error(str(error))
    if options.rounds < 1:
        parser.error(f"--rounds {options.rounds}: one or more")
    if options.record and options.out and not options.out.resolve().is_relative_to(OBSERVED_ROOT.resolve()):
        parser.error(f"--record with --out {options.out}: each row names its results.json, which the record needs under reports/observed/")
    return options


def main(argv: list[str] | None = None) -> int:
    options = arguments(argv)
    if (found := gpu_check_folder("race_trigger_rates", "trigger rates come from a real GPU", options.out, "trigger-rates")) is None:
        return 2
    _, out = found
    bugs = options.bug or list(RACE_BUGS)
    trials: list[Trial] = []
    first = options.first_seed if options.first_seed is not None else fresh_seed()
    print(f"rounds' seeds: --seed {first} to {first + options.rounds - 1}", flush=True)
    for seed in range(first, first + options.rounds):
        report_dir = out / f"seed-{seed}"
        command = round_command(sys.executable, bugs, options.race_budget, seed, report_dir)
        print("$", " ".join(command), flush=True)
        done = subprocess.run(command, cwd=REPOSITORY, check=False)
        results = report_dir / "results.json"
        if not results.exists():
            print(f"race_trigger_rates: round {seed} wrote no results.json (exit status {done.returncode}); stopping", file=sys.stderr)
            return 1
        source = results.relative_to(REPOSITORY).as_posix() if results.is_relative_to(REPOSITORY) else str(results)
        trials += trials_from_results(json.loads(results.read_text(encoding="utf-8")), source, bugs)
    (out / "trials.toml").write_text(record_text(trials), encoding="utf-8")
    print("\n".join(summary_lines(trials, load_record())))
    print(f"rows: {out / 'trials.toml'}")
    if options.record:
        with DEFAULT_RECORD.open("a", encoding="utf-8") as record:
            record.write("\n" + record_text(trials))
        print(f"appended {len(trials)} rows to {DEFAULT_RECORD.relative_to(REPOSITORY)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
