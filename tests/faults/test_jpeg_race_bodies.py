"""The JPEG encode race tests (torchvision-8587, -9060) do not synchronize before encoding: a synchronize (or a read back
to the host) between building a frame and `encode_jpeg` lets the frame finish first, which hides
the race the tests exist for. Checked by reading the suite's source (ast), so a new test or an
edited body is held to it too. What it sees: waiting calls written lexically before the first
`encode_jpeg` call in the same function; a wait inside a helper that function calls is not seen
(only the frame builders in images.py are checked on their own, for any synchronize)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SUITES = Path(__file__).resolve().parents[2] / "suites"
SUITE = SUITES / "torchvision_8587_encode_jpeg"
RACE_SUITES = (SUITE, SUITES / "torchvision_9060_threaded_encode")
ENCODE = "encode_jpeg"
# Calls that wait for the device's queued work: an explicit synchronize or a read to the host.
WAITING_CALLS = frozenset({"synchronize", "wait_stream", "wait_event", "cpu", "item", "tolist", "numpy"})
# The bodies that must be found, so the check cannot pass by scanning nothing.
RACE_BODIES = {
    "test_consecutive_encodes.py::test_consecutive_encodes_decode_to_their_source",
    "test_list_input.py::test_list_encode_decodes_each_frame_to_its_source",
    "test_sizes.py::test_encode_decodes_to_source_at_any_size",
    "test_threaded_encodes.py::encode_frames",
}


def call_name(call: ast.Call) -> str | None:
    function = call.func
    return function.id if isinstance(function, ast.Name) else function.attr if isinstance(function, ast.Attribute) else None


def waits_before_encoding(source: str) -> dict[str, list[str]]:
    """{function that calls encode_jpeg: ["line N: name()" for each waiting call above its first
    encode]} for every function in `source`."""
    found: dict[str, list[str]] = {}
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        calls = sorted((node for node in ast.walk(function) if isinstance(node, ast.Call)), key=lambda n: (n.lineno, n.col_offset))
        encodes = [call.lineno for call in calls if call_name(call) == ENCODE]
        if encodes:
            found[function.name] = [
                f"line {call.lineno}: {call_name(call)}()"
                for call in calls
                if call.lineno < min(encodes) and call_name(call) in WAITING_CALLS
            ]
    return found


def test_no_race_test_waits_for_the_device_before_encoding() -> None:
    scanned = {
        f"{path.name}::{name}": waits
        for suite in RACE_SUITES
        for path in sorted(suite.glob("*.py"))
        for name, waits in waits_before_encoding(path.read_text()).items()
    }
    assert RACE_BODIES <= set(scanned), f"race bodies not found (renamed?): {sorted(RACE_BODIES - set(scanned))}"
    offending = {name: waits for name, waits in scanned.items() if waits}
    assert not offending, f"these wait for the device before encode_jpeg, which hides the race: {offending}"


def test_the_frame_builders_never_synchronize() -> None:
    """The images are built right before the encode, by the helpers in images.py."""
    tree = ast.parse((SUITE / "images.py").read_text())
    waits = [
        f"line {node.lineno}: {call_name(node)}()"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and call_name(node) in {"synchronize", "wait_stream", "wait_event"}
    ]
    assert not waits, f"images.py waits for the device: {waits}"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("image = make()\ntorch.cuda.synchronize()\nencode_jpeg(image)", ["line 3: synchronize()"]),
        ("image = make()\nimage.cpu()\nencode_jpeg(image)", ["line 3: cpu()"]),
        ("image = make()\nsynchronize(device)\nencode_jpeg(image)", ["line 3: synchronize()"]),
        ("image = make()\ndata = encode_jpeg(image)\ntorch.cuda.synchronize()", []),
    ],
    ids=["torch.cuda.synchronize", "cpu", "suite-helper", "after-is-fine"],
)
def test_the_check_sees_a_wait_before_the_encode(body: str, expected: list[str]) -> None:
    source = "def test_race(device):\n" + "".join(f"    {line}\n" for line in body.splitlines())
    assert waits_before_encoding(source) == {"test_race": expected}
