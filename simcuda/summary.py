"""What a session on the simulated device adds up to, from the per-test records of runs.py: the
terminal summary's lines and the JSON document. Pure functions of plain data."""

from __future__ import annotations

from collections import Counter

from simcuda.allocations import SHOWN

OUTCOMES = ("passed", "failed", "xfailed", "skipped", "refused")


def summary_document(records: dict[str, dict]) -> dict:
    """nodeid -> record (runs.SimulatedRun.record) as one JSON-able document."""
    outcomes = Counter(record["outcome"] for record in records.values())
    refused = Counter(feature for record in records.values() for feature in record["refused"])
    return {
        "simcuda_schema_version": 1,
        "devices": sorted({device for record in records.values() for device in (record["device"], *record.get("named", ()))}),
        "tests": len(records),
        **{outcome: outcomes.get(outcome, 0) for outcome in OUTCOMES},
        "refused_by_feature": dict(refused.most_common()),
        "foreign_allocations": [
            {"test": nodeid, "allocations": record["foreign"]} for nodeid, record in records.items() if record["foreign"]
        ],
        "results": {nodeid: record["outcome"] for nodeid, record in records.items()},
    }


def summary_lines(document: dict) -> list[str]:
    """The terminal summary: the counts, the refusals by feature, each test that allocated on a
    device it never asked for with the first allocations' callers."""
    counts = ", ".join(f"{document[outcome]} {outcome}" for outcome in OUTCOMES if document[outcome])
    lines = [f"{document['tests']} tests run on the simulated {', '.join(document['devices'])}: {counts or 'none'}"]
    if document["refused_by_feature"]:
        lines.append("refused (inconclusive, shown as skips), by feature:")
        lines += [f"  {count:>5}  {feature}" for feature, count in document["refused_by_feature"].items()]
    if document["foreign_allocations"]:
        lines.append("allocations on a device the test never asked for:")
        for entry in document["foreign_allocations"]:
            allocations = entry["allocations"]
            lines.append(f"  {entry['test']}: {len(allocations)}")
            lines += [f"      {a['op']} {a['shape']} on {a['device']} at {a['caller']}" for a in allocations[:SHOWN]]
            if len(allocations) > SHOWN:
                lines.append(f"      (+{len(allocations) - SHOWN} more)")
    return lines
