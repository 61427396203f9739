"""Per-file mutation scores of Cosmic Ray sessions (bench/README.md, "Mutation score (Cosmic Ray)").

    python bench/mutation_scores.py SESSION.sqlite [SESSION.sqlite ...]

Reads the sessions Cosmic Ray wrote, sets aside the survivors judged equivalent in
bench/cosmic-ray/equivalents.toml, and prints one Markdown row per mutated file, then every other
survivor with its diff: those are the gaps.
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

EQUIVALENTS = Path(__file__).parent / "cosmic-ray" / "equivalents.toml"


@dataclass(frozen=True)
class Mutant:
    module: str
    operator: str
    # The mutated line as the diff shows it: what equivalents.toml is keyed by.
    line: str
    outcome: str  # killed, survived, incompetent, or the worker's failure
    diff: str


def equivalence_key(mutant: Mutant) -> str:
    return f"{mutant.operator}: {mutant.line}"


def mutated_line(diff: str) -> str:
    added = [line[1:].strip() for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    return " / ".join(added)


def read_session(path: Path) -> list[Mutant]:
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome

    mutants = []
    with use_db(str(path), WorkDB.Mode.open) as db:
        for item, result in db.completed_work_items:
            if result.worker_outcome == WorkerOutcome.SKIPPED:
                continue  # an operator the session's filter left out
            (mutation,) = item.mutations
            outcome = result.test_outcome.value if result.worker_outcome == WorkerOutcome.NORMAL else result.worker_outcome.value
            diff = result.diff or ""
            mutants.append(Mutant(str(mutation.module_path), mutation.operator_name.split("/")[-1], mutated_line(diff), outcome, diff))
    return mutants


KILLED = ("killed", "incompetent")  # Cosmic Ray's is_killed: every test outcome but survived


def is_equivalent(mutant: Mutant, equivalents: Mapping[str, Mapping[str, str]]) -> bool:
    """A survivor listed in equivalents.toml (a killed mutant needs no reason)."""
    return mutant.outcome == "survived" and equivalence_key(mutant) in equivalents.get(mutant.module, {})


def score_rows(mutants: Iterable[Mutant], equivalents: Mapping[str, Mapping[str, str]]) -> list[tuple[str, int, int, int]]:
    """(module, killed, non-equivalent, equivalent) per module, in first-seen order."""
    killed: Counter[str] = Counter()
    non_equivalent: Counter[str] = Counter()
    equivalent: Counter[str] = Counter()
    modules: dict[str, None] = {}
    for mutant in mutants:
        modules[mutant.module] = None
        if is_equivalent(mutant, equivalents):
            equivalent[mutant.module] += 1
            continue
        non_equivalent[mutant.module] += 1
        killed[mutant.module] += mutant.outcome in KILLED
    return [(m, killed[m], non_equivalent[m], equivalent[m]) for m in modules]


def gaps(mutants: Iterable[Mutant], equivalents: Mapping[str, Mapping[str, str]]) -> list[Mutant]:
    return [m for m in mutants if m.outcome not in KILLED and not is_equivalent(m, equivalents)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sessions", nargs="+", type=Path, metavar="SESSION.sqlite")
    args = parser.parse_args(argv)
    missing = [str(s) for s in args.sessions if not s.is_file()]
    if missing:
        parser.error(f"no Cosmic Ray session at {', '.join(missing)}")
    try:
        import cosmic_ray  # noqa: F401 - imported only to learn whether it is installed
    except ImportError:
        parser.error("Cosmic Ray is not installed: pip install -e '.[mutation]' -e bench/mutation_operators")
    equivalents = tomllib.loads(EQUIVALENTS.read_text(encoding="utf-8"))
    mutants = [m for session in args.sessions for m in read_session(session)]
    rows = score_rows(mutants, equivalents)
    print("| file | killed / non-eq. (eq.) |\n| --- | --- |")
    for module, killed, non_equivalent, equivalent in rows:
        print(f"| `{module}` | {killed} / {non_equivalent} ({equivalent}) |")
    total_killed, total = sum(r[1] for r in rows), sum(r[2] for r in rows)
    print(f"| all | **{total_killed} / {total} = {100 * total_killed / max(total, 1):.1f}%** ({sum(r[3] for r in rows)}) |")
    outcomes = Counter(m.outcome for m in mutants)
    print(f"\noutcomes: {dict(outcomes)}")
    for mutant in gaps(mutants, equivalents):
        print(f"\n## {mutant.outcome}: {mutant.module} {equivalence_key(mutant)}\n{mutant.diff}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
