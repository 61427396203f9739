"""What the simulated CUDA device costs per call: the same kornia calls on plain CPU and on the
simulated cuda:1 (module moved with `.to`), median of several calls, plus the ATen ops per call;
then one small op on the CPU, on cuda:1, and on the CPU inside a simulation as a test's run opens it.

Times are this process's CPU time with one torch thread, so a machine shared with other jobs
changes them less than wall time would (`--clock wall` for wall time).

    python bench/simulated_cuda_overhead.py [--calls 7] [--shape 8,3,64,64] [--clock cpu|wall]

Run from the repository root with the project's environment active.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch.utils._python_dispatch import TorchDispatchMode

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simcuda import simulated_cuda


def kornia_calls() -> dict[str, Callable[[], Callable[[torch.Tensor], torch.Tensor]]]:
    import kornia
    import kornia.augmentation as K

    return {
        "ColorJiggle": lambda: K.ColorJiggle(0.2, 0.2, 0.2, 0.1, p=1.0),
        "RandomAffine": lambda: K.RandomAffine(degrees=30.0, p=1.0),
        "RandomJPEG": lambda: K.RandomJPEG(jpeg_quality=(30.0, 70.0), p=1.0),
        "gaussian_blur2d": lambda: lambda x: kornia.filters.gaussian_blur2d(x, (5, 5), (1.5, 1.5)),
    }


class OpCounter(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.ops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops += 1
        return func(*args, **(kwargs or {}))


CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}
clock = CLOCKS["cpu"]


def median_ms(call: Callable[[torch.Tensor], torch.Tensor], image: torch.Tensor, calls: int) -> float:
    call(image.clone())  # warm-up: first-call caches are not the per-call cost
    times = []
    for _ in range(calls):
        start = clock()
        call(image.clone())
        times.append(clock() - start)
    return statistics.median(times) * 1000


def placed(make: Callable[[], Callable[[torch.Tensor], torch.Tensor]], device: str) -> Callable[[torch.Tensor], torch.Tensor]:
    call = make()
    return call.to(device) if isinstance(call, torch.nn.Module) else call


def single_op_us(device: str, calls: int = 2000) -> float:
    """One small ATen op (`x + x` on 8x8): median microseconds per op over batches of 100."""
    x = torch.rand(8, 8).to(device)
    times = []
    for _ in range(calls // 100):
        start = clock()
        for _ in range(100):
            x + x
        times.append((clock() - start) * 1e4)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=7)
    parser.add_argument("--shape", default="8,3,64,64", help="input batch shape, comma-separated")
    parser.add_argument("--clock", choices=CLOCKS, default="cpu", help="cpu: process CPU time, one torch thread")
    options = parser.parse_args()
    if options.calls < 1:
        parser.error(f"--calls {options.calls}: time at least one call")
    try:
        shape = tuple(int(side) for side in options.shape.split(","))
    except ValueError:
        shape = ()
    if not shape or min(shape) < 1:
        parser.error(f"--shape {options.shape!r}: positive sides, comma-separated (e.g. 8,3,64,64)")
    global clock  # one switch for the whole script
    clock = CLOCKS[options.clock]
    if options.clock == "cpu":
        torch.set_num_threads(1)
    image = torch.rand(shape, generator=torch.Generator().manual_seed(0))
    print(f"torch {torch.__version__}, input {shape}, median of {options.calls} calls after one warm-up, {options.clock} time")
    print(f"{'call':<16} {'cpu ms':>8} {'sim ms':>8} {'ratio':>6} {'ops':>5} {'extra us/op':>11}")
    for name, make in kornia_calls().items():
        cpu_call = placed(make, "cpu")
        cpu_ms = median_ms(cpu_call, image, options.calls)
        with OpCounter() as counter:
            cpu_call(image.clone())
        with simulated_cuda():
            sim_ms = median_ms(placed(make, "cuda:1"), image.to("cuda:1"), options.calls)
        extra_us = (sim_ms - cpu_ms) * 1000 / counter.ops
        print(f"{name:<16} {cpu_ms:8.1f} {sim_ms:8.1f} {sim_ms / cpu_ms:6.1f} {counter.ops:5d} {extra_us:11.0f}")
    cpu_us = single_op_us("cpu")
    with simulated_cuda():
        sim_us = single_op_us("cuda:1")
    with simulated_cuda() as sim:
        sim.log_only_outside({"cpu", "cuda:1"})  # as a --simcuda test's run logs
        in_test_us = single_op_us("cpu")
    print(f"one small op (x + x, 8x8): cpu {cpu_us:.1f} us, simulated cuda:1 {sim_us:.1f} us, cpu inside a test's simulation {in_test_us:.1f} us")


if __name__ == "__main__":
    main()
