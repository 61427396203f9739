"""The race shapes the simulated device flags (tests/helpers/stream_race_shapes.py), on a real GPU: what
torch's own CUDA sanitizer says of each twin, and that a racy twin held behind queued work really
computes a wrong value where its ordered twin does not; the same symptom bodies on the simulated
device, where the racy twin raises. The real-GPU tests skip without one (the simulated runner is
none); their results are kept under reports/observed/."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from simcuda import simulated_cuda
from simcuda.devices import RUNNER_ENV
from simcuda.ordering import StreamRace
from tests.helpers.stream_race_shapes import SHAPES

REPOSITORY = Path(__file__).resolve().parents[2]
ELEMENTS = 1 << 22  # 16 MB of float32: a copy or kernel long enough to still be queued
SPIN_CYCLES = 200_000_000  # torch.cuda._sleep: about 0.1 s of GPU clock, queued before the work
SANITIZED_TWIN = (
    "import sys, torch\n"
    "from torch.cuda._sanitizer import enable_cuda_sanitizer\n"
    "from tests.helpers.stream_race_shapes import SHAPES\n"
    "enable_cuda_sanitizer()\n"
    "SHAPES[sys.argv[1]].body(sys.argv[2] == 'ordered')\n"
    "torch.cuda.synchronize()\n"
)


def real_gpu_missing() -> str | None:
    if os.environ.get(RUNNER_ENV):
        return f"needs a real CUDA GPU: this is the simulated runner ({RUNNER_ENV})"
    if not torch.cuda.is_available():
        return "needs a real CUDA GPU: torch.cuda.is_available() is False"
    return None


MISSING = real_gpu_missing()
real_gpu = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")
TWINS = pytest.mark.parametrize("ordered", [False, True], ids=["racy", "ordered"])


@real_gpu
@TWINS
@pytest.mark.parametrize("name", SHAPES)
def test_the_sanitizer_flags_the_racy_twins_it_can_see(name: str, ordered: bool) -> None:
    """A fresh process per twin: the sanitizer, once enabled, stays for the process."""
    done = subprocess.run(
        [sys.executable, "-c", SANITIZED_TWIN, name, "ordered" if ordered else "racy"],
        cwd=REPOSITORY, capture_output=True, text=True, timeout=300, check=False,
    )
    flagged = "CSAN detected a possible data race" in done.stderr
    assert done.returncode == 0 or flagged, done.stderr[-2000:]
    assert flagged == (SHAPES[name].sanitizer_sees and not ordered), done.stderr[-2000:]


# Each returns True when the result is what the ordered program computes. The work the race is
# about is queued behind torch.cuda._sleep, so the racy twin meets it not yet done. Every buffer a
# stream writes is made before that: a new block from cudaMalloc can wait for the device and so
# order the race away. Every value is fresh (a nonce): a block the caching allocators hand back
# still holds the last one's.


def host_reads_a_non_blocking_copy(ordered: bool, nonce: float) -> bool:
    """PyTorch issue 127612."""
    x = torch.full((ELEMENTS,), nonce, device="cuda")
    torch.cuda._sleep(SPIN_CYCLES)
    y = x.to("cpu", non_blocking=True)
    if ordered:
        torch.cuda.synchronize()
    return bool((y == nonce).all())


def event_recorded_before_the_work(ordered: bool, nonce: float) -> bool:
    """torchvision-8587's shape."""
    x = torch.full((ELEMENTS,), nonce, device="cuda")
    result = torch.empty_like(x)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        doubled = torch.empty_like(x)
    side.wait_stream(torch.cuda.current_stream())
    done = torch.cuda.Event()
    if not ordered:
        done.record(side)
    with torch.cuda.stream(side):
        torch.cuda._sleep(SPIN_CYCLES)
        torch.mul(x, 2, out=doubled)
    if ordered:
        done.record(side)
    torch.cuda.current_stream().wait_event(done)
    torch.add(doubled, 1, out=result)
    return bool((result == 2 * nonce + 1).all())


def pinned_source_overwritten(ordered: bool, nonce: float) -> bool:
    source = torch.full((ELEMENTS,), nonce).pin_memory()
    torch.cuda._sleep(SPIN_CYCLES)
    moved = source.to("cuda", non_blocking=True)
    if ordered:
        torch.cuda.current_stream().synchronize()
    source.fill_(nonce + 1)
    return bool((moved == nonce).all())


def freed_while_another_stream_reads_it(ordered: bool, nonce: float) -> bool:
    """torchvision-9606's sibling: the default stream's next allocation takes the freed block."""
    x = torch.full((ELEMENTS,), nonce, device="cuda")
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        doubled = torch.empty_like(x)
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        torch.cuda._sleep(SPIN_CYCLES)
        torch.mul(x, 2, out=doubled)
    if ordered:
        x.record_stream(side)
    del x
    torch.zeros(ELEMENTS, device="cuda")
    side.synchronize()
    return bool((doubled == 2 * nonce).all())


SYMPTOMS: dict[str, Callable[[bool, float], bool]] = {
    "non_blocking .to('cpu') read before synchronize (127612)": host_reads_a_non_blocking_copy,
    "event recorded before the work (8587)": event_recorded_before_the_work,
    "pinned source overwritten before its copy is ordered": pinned_source_overwritten,
    "freed without record_stream, then reused": freed_while_another_stream_reads_it,
}


def fresh_nonce(name: str, ordered: bool) -> float:
    return float(random.Random(f"{name} {ordered}").randint(3, 1 << 20))


@real_gpu
@TWINS
@pytest.mark.parametrize("name", SYMPTOMS)
def test_the_racy_twin_computes_a_wrong_value_on_a_real_gpu(name: str, ordered: bool) -> None:
    # The ordered twin once first: CUDA loads a kernel at its first launch (lazy loading), and
    # loading waits for the device, which would order the race away (seen on an H200).
    SYMPTOMS[name](True, fresh_nonce(name, ordered) + 1)
    right = SYMPTOMS[name](ordered, fresh_nonce(name, ordered))
    torch.cuda.synchronize()
    assert right == ordered


@pytest.mark.parametrize("name", SYMPTOMS)
def test_the_simulated_device_flags_each_racy_symptom_body(name: str) -> None:
    assert name in SHAPES  # the shape whose self-tests name both accesses
    with simulated_cuda(2):
        assert SYMPTOMS[name](True, fresh_nonce(name, True))
        with pytest.raises(StreamRace):
            SYMPTOMS[name](False, fresh_nonce(name, False))
