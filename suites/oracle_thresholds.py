"""The oracles' thresholds as their calibration record keeps them (oracle_thresholds.toml here), by
"module:NAME": what bench/oracle_calibration.py measures against. The code's constants must equal
them (tests/faults/test_oracle_thresholds.py), so a measurement of the record is one of the code."""

from __future__ import annotations

import tomllib
from pathlib import Path

RECORD = Path(__file__).with_name("oracle_thresholds.toml")


def recorded_values(document: dict) -> dict[str, float]:
    """Every threshold the record's document holds, "module:NAME" -> value: each calibration's
    constants (a constant two calibrations share has one value) and each uncalibrated value."""
    uncalibrated = {key: entry["value"] for key, entry in document.get("uncalibrated", {}).items()}
    calibrated = {key: value for name, entry in document.items() if name != "uncalibrated" for key, value in entry["constants"].items()}
    return calibrated | uncalibrated


def record(path: Path = RECORD) -> dict:
    """The record's document: one table per calibration (its constants, its worst correct result)
    and the uncalibrated values with their reasons."""
    return tomllib.loads(path.read_text(encoding="utf-8"))


def recorded_thresholds(path: Path = RECORD) -> dict[str, float]:
    return recorded_values(record(path))
