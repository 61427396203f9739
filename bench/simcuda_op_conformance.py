"""simcuda against PyTorch's own op database: every OpInfo of
`torch.testing._internal.common_methods_invocations.op_db`, each sample input run plainly on the
CPU and on the simulated `cuda:1`, compared result by result.

    python bench/simcuda_op_conformance.py [--ops NAME ...] [--samples N] [--out FILE]

The CPU run is the stand-in for a GPU: the simulation runs the CPU's kernels on the CPU data, so a
correct simulation gives the CPU's values exactly (random ops too: they draw from the CPU generator
under the same seed, simcuda's stated behaviour). Per output tensor it compares device (`cuda:1`
where the CPU's is `cpu`), dtype, shape, strides, layout, values (NaN equal to NaN),
`requires_grad`, whether a `grad_fn` is there, and the conjugate / negative bits; then, where the
op supports autograd and a float output requires grad, the input gradients of a backward through
the sum of those outputs, the same way. A sample whose CPU run raises is no case (it says nothing
of the simulation). Each op ends `matched`, `refused` (the simulation raised SimulationUnsupported
or the real CUDA answered: the feature named) or `diverging` (the first difference named), and the
known divergences, each explained, are data: bench/simcuda_op_conformance.toml. Prints one line
per op that did not match, then the counts by outcome and by reason; `--out` writes them as JSON.
Needs `expecttest` (torch's testing modules import it). The whole database takes minutes: the
self-test (tests/simcuda/test_simcuda_op_conformance.py) runs a fixed sample of it.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tomllib
import unittest.mock
import warnings
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NamedTuple

import torch
from torch.utils._pytree import tree_flatten, tree_map

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # simcuda from this checkout

from simcuda import REAL_CUDA_REACHED, is_refusal, reached_real_cuda, real_cpu, simulated_cuda

DEVICE = torch.device("cuda:1")
KNOWN = Path(__file__).with_suffix(".toml")
DTYPES = (torch.float32, torch.complex64, torch.int64, torch.bool)  # the first two an op supports run
MATCHED, REFUSED, DIVERGING, UNCOMPARED = "matched", "refused", "diverging", "uncompared"  # uncompared: no sample to pair


class Outcome(NamedTuple):
    op: str
    outcome: str  # MATCHED, REFUSED, DIVERGING or UNCOMPARED
    reason: str  # empty when matched: the feature refused, or the first difference
    samples: int  # the samples compared (those whose CPU run raised are not counted)


def op_database() -> list:
    """torch's OpInfos; deferred: importing them takes seconds and needs expecttest. That import
    freezes torch.backends' flags for the process (torch's test utilities call
    disable_global_flags); they are left as they were found."""
    frozen = torch.backends.flags_frozen()
    from torch.testing._internal.common_methods_invocations import op_db

    if not frozen:
        torch.backends.flags_frozen.__globals__["__allow_nonbracketed_mutation_flag"] = True  # disable_global_flags' switch, undone
    return op_db


def op_name(op) -> str:
    """The name the script prints and the policy keys by: a variant's full name (linalg.lstsq.grad_oriented)."""
    return getattr(op, "full_name", op.name)


def dtypes_for(op) -> list[torch.dtype]:
    supported = op.supported_dtypes("cpu")
    return [dtype for dtype in DTYPES if dtype in supported][:2]


def seeded(call: Callable[[], Any], seed: int) -> Any:
    torch.manual_seed(seed)
    return call()


def samples_of(op, device: torch.device | str, dtype: torch.dtype, limit: int) -> list:
    """The op's first `limit` samples of `dtype` made on `device` by the OpInfo's own sample
    function (which keeps on the CPU what must stay there, as torch's CUDA tests get them), under
    one seed (the simulated device draws from the CPU generator; where a sample function draws in
    another order on a CUDA device, `aligned` gives the CPU's values). They require grad where the
    op supports autograd in that dtype."""
    requires_grad = op.supports_autograd and dtype in op.supported_backward_dtypes("cpu")
    torch.manual_seed(0)
    # OpInfo looks for the unittest method calling it (none here) by inspect.stack(), which reads
    # every frame's source: a third of an op's time under pytest's deep stack. Deferred as in
    # op_database (an OpInfo exists only once it ran, so this import finds the module loaded).
    from torch.testing._internal.opinfo import core as opinfo_core

    with unittest.mock.patch.object(opinfo_core, "extract_test_fn", lambda: None):
        return list(itertools.islice(op.sample_inputs(device, dtype, requires_grad=requires_grad), limit))


def tensors(value: Any) -> list[torch.Tensor]:
    return [leaf for leaf in tree_flatten(value)[0] if isinstance(leaf, torch.Tensor)]


def comparable(tensor: torch.Tensor) -> torch.Tensor:
    """Its values, bits resolved, in a dtype torch.equal has a CPU kernel for (not complex32)."""
    tensor = tensor.detach().resolve_conj().resolve_neg()
    return tensor.to(torch.complex64) if tensor.dtype == torch.complex32 else tensor


def asked_device(sample) -> torch.device:
    """Where a simulated sample's outputs belong: the device its `device=` argument names (a
    factory's, `zeros_like(x, device="cpu")`), else the simulated device when a tensor of it is
    there, else the CPU (`torch.arange(2)`)."""
    named = sample.kwargs.get("device")
    if named is None:
        on_device = any(tensor.device.type == "cuda" for tensor in tensors((sample.input, sample.args, sample.kwargs)))
        return DEVICE if on_device else torch.device("cpu")
    device = torch.device(named)
    return torch.device("cuda", torch.cuda.current_device()) if device.type == "cuda" and device.index is None else device


def difference(expected: torch.Tensor, got: torch.Tensor, what: str, undefined_values: bool = False, device: torch.device = DEVICE) -> str | None:
    """The first way the simulated `got` differs from the CPU's `expected`, or None; a CPU output
    belongs on `device`."""
    if expected.device.type == "cpu" and got.device != device:
        return f"{what}: device {got.device}, expected {device}"
    data = real_cpu(got)
    pairs = (  # what the user sees: the simulated tensor's own dtype, shape and layout
        ("dtype", expected.dtype, got.dtype),
        ("shape", tuple(expected.shape), tuple(got.shape)),
        ("layout", expected.layout, got.layout),
        ("requires_grad", expected.requires_grad, got.requires_grad),
        ("grad_fn", expected.grad_fn is not None, got.grad_fn is not None),
        ("conj bit", expected.is_conj(), got.is_conj()),
        ("neg bit", expected.is_neg(), got.is_neg()),
    )
    for name, want, have in pairs:
        if want != have:
            return f"{what}: {name} {have}, expected {want}"
    if expected.layout == torch.strided and expected.numel() > 1 and expected.stride() != got.stride():
        return f"{what}: strides {got.stride()}, expected {expected.stride()}"
    if undefined_values or expected.layout != torch.strided:
        return None
    want, have = comparable(expected), comparable(data)
    if torch.equal(want, have):
        return None
    if want.is_floating_point() or want.is_complex():
        both_nan = torch.isnan(want) & torch.isnan(have)
        if torch.equal(want[~both_nan], have[~both_nan]):
            return None
    widest = torch.complex128 if want.is_complex() else torch.float64
    return f"{what}: values differ (max |difference| {(want.to(widest) - have.to(widest)).abs().max().item():.3g})"


def gradients(output: Any, sample) -> list[torch.Tensor | None]:
    """The gradients of the sample's inputs that require grad, through the sum of its float
    outputs that require grad (a complex one's real and imaginary parts)."""
    leaves = [leaf for leaf in tensors((sample.input, sample.args, sample.kwargs)) if leaf.requires_grad]
    outs = [out for out in tensors(output) if out.requires_grad and (out.dtype.is_floating_point or out.dtype.is_complex)]
    if not leaves or not outs:
        return []
    loss = sum((out.real.sum() + out.imag.sum() if out.is_complex() else out.sum()) for out in outs)
    return list(torch.autograd.grad(loss, leaves, allow_unused=True))


def compare_outputs(expected: Any, got: Any, expected_grads: list, got_grads: list, undefined_values: bool, device: torch.device) -> str | None:
    """The first difference between the CPU's outputs and gradients and the simulated ones (the
    outputs on `device`, each gradient on its input's)."""
    if len(tensors(expected)) != len(tensors(got)):
        return f"{len(tensors(got))} output tensors, expected {len(tensors(expected))}"
    for index, (want, have) in enumerate(zip(tensors(expected), tensors(got), strict=True)):
        found = difference(want, have, f"output {index}", undefined_values, device)
        if found:
            return found
    for index, (want, have) in enumerate(zip(expected_grads, got_grads, strict=True)):
        if (want is None) != (have is None):
            return f"gradient {index}: {'none' if have is None else 'one'}, expected {'none' if want is None else 'one'}"
        found = None if want is None else difference(want, have, f"gradient {index}", undefined_values, have.device)
        if found:
            return found
    return None


def signature(sample) -> str:
    """What a sample asks, its tensors' values aside: the arguments, and each tensor's shape, dtype,
    layout and strides. A sample function may give a CUDA device other samples than the CPU (sort's stable
    ones are the CPU's alone): pairs are made by this, not by position."""

    def mark(leaf: Any) -> Any:
        if isinstance(leaf, torch.Tensor):
            return ("tensor", tuple(leaf.shape), leaf.dtype, leaf.layout, leaf.stride() if leaf.layout == torch.strided else None)
        return "a device" if isinstance(leaf, torch.device) or isinstance(leaf, str) and leaf in ("cpu", "cuda", str(DEVICE)) else leaf

    return repr(tree_map(mark, (sample.input, sample.args, sample.kwargs)))


def aligned(on_device, values: list[torch.Tensor]) -> None:
    """The device sample given the CPU sample's values as its run found them (its tensors stay
    where the sample function put them): a sample function may draw in another order on a CUDA
    device (linalg.ldl_solve's right-hand side does), and samples may share a tensor an earlier
    run changed in place (batch_norm's running statistics)."""
    mine_all, theirs_all = tensors((on_device.input, on_device.args, on_device.kwargs)), values
    with torch.no_grad():
        for mine, theirs in zip(mine_all, theirs_all, strict=True):
            if not torch.equal(comparable(real_cpu(mine)), comparable(theirs)):  # only where the draws differ: a copy bumps versions
                mine.copy_(theirs)


def pairs(on_device: list, on_cpu: list) -> list[tuple[int, Any]]:
    """(the CPU sample's position, the device sample asking the same), each CPU sample once."""
    unused: dict[str, list[int]] = {}
    for position, sample in enumerate(on_cpu):
        unused.setdefault(signature(sample), []).append(position)
    found = []
    for sample in on_device:
        positions = unused.get(signature(sample))
        if positions:
            found.append((positions.pop(0), sample))
    return found


def cpu_run(op, sample, seed: int) -> tuple[Any, list, list[torch.Tensor]] | None:
    """The op's outputs and gradients on the CPU, and the sample's tensors' values before it ran;
    None when it raised (no case)."""
    values = [tensor.detach().clone() for tensor in tensors((sample.input, sample.args, sample.kwargs))]
    try:
        output = seeded(lambda: op(sample.input, *sample.args, **sample.kwargs), seed)
        return output, gradients(output, sample), values
    except Exception:  # noqa: BLE001 - a sample the CPU cannot run says nothing of the simulation
        return None


def conform_dtype(op, dtype: torch.dtype, limit: int, undefined_values: bool) -> tuple[int, tuple[str, str] | None]:
    """(samples compared, the first (outcome, reason) that is not a match) for one dtype."""
    cpu_samples = samples_of(op, "cpu", dtype, limit)
    expected = [cpu_run(op, sample, seed) for seed, sample in enumerate(cpu_samples)]
    compared = 0
    with simulated_cuda(2):
        try:
            for seed, sample in pairs(samples_of(op, DEVICE, dtype, limit), cpu_samples):
                cpu = expected[seed]
                if cpu is None:
                    continue
                output, grads, values = cpu
                aligned(sample, values)
                compared += 1
                got = seeded(lambda sample=sample: op(sample.input, *sample.args, **sample.kwargs), seed)
                found = compare_outputs(output, got, grads, gradients(got, sample), undefined_values, asked_device(sample))
                if found:
                    return compared, (DIVERGING, found)
        except Exception as error:  # noqa: BLE001 - every failure is sorted: refusal or divergence
            if is_refusal(error):  # the feature and where it was met
                return compared, (REFUSED, (REAL_CUDA_REACHED if reached_real_cuda(error) else str(error).splitlines()[0])[:160])
            return compared, (DIVERGING, f"raised {type(error).__name__}: {str(error).splitlines()[0][:120] if str(error) else ''}")
    return compared, None


def conform(op, limit: int, policy: dict | None = None) -> Outcome:
    """The op's outcome over its samples of each dtype: the first refusal or divergence decides."""
    policy = policy or known()
    name = op_name(op)
    compared = 0
    for dtype in dtypes_for(op):
        count, found = conform_dtype(op, dtype, limit, name in policy["undefined_values"])
        compared += count
        if found:
            return Outcome(name, found[0], f"{dtype}: {found[1]}", compared)
    return Outcome(name, MATCHED, "", compared) if compared else Outcome(name, UNCOMPARED, "no sample the CPU runs and the device pairs", 0)


def known(path: Path = KNOWN) -> dict:
    """The policy: `undefined_values` (ops whose values no device defines: compared in all but
    values) and `explained` (op name -> why it diverges, each a limit or a fault left on purpose)."""
    return tomllib.loads(path.read_text(encoding="utf-8"))


def select(database: Iterable, names: list[str] | None) -> list:
    ops = list(database)
    if names:
        wanted = set(names)
        ops = [op for op in ops if op_name(op) in wanted or op.name in wanted]
        missing = wanted - {op_name(op) for op in ops} - {op.name for op in ops}
        if missing:
            raise SystemExit(f"error: no OpInfo named {', '.join(sorted(missing))} in torch {torch.__version__}'s op_db")
    return ops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", nargs="+", help="only these OpInfos (by name, e.g. add nn.functional.conv2d)")
    parser.add_argument("--samples", type=int, default=4, help="samples per op and dtype (default 4)")
    parser.add_argument("--out", type=Path, help="write every op's outcome as JSON here")
    args = parser.parse_args()
    if args.samples < 1:
        parser.error(f"--samples {args.samples}: at least one")
    if args.out and (args.out.is_dir() or not args.out.parent.is_dir()):
        parser.error(f"--out {args.out}: a file in an existing folder")  # before the minute the ops take
    warnings.simplefilter("ignore")  # the samples' own deprecation warnings, thousands of them
    policy = known()
    explained = policy["explained"]
    outcomes = [conform(op, args.samples, policy) for op in select(op_database(), args.ops)]
    for outcome in outcomes:
        if outcome.outcome != MATCHED:
            note = f"  [explained: {explained[outcome.op]}]" if outcome.op in explained else ""
            print(f"{outcome.outcome:<9} {outcome.op:<40} {outcome.reason}{note}")
    counts = Counter(outcome.outcome for outcome in outcomes)
    unexplained = [outcome.op for outcome in outcomes if outcome.outcome == DIVERGING and outcome.op not in explained]
    kinds = ", ".join(f"{counts[kind]} {kind}" for kind in (MATCHED, REFUSED, DIVERGING, UNCOMPARED))
    print(f"torch {torch.__version__}: {len(outcomes)} ops, {kinds}; {len(unexplained)} diverging unexplained")
    if args.out:
        args.out.write_text(json.dumps([outcome._asdict() for outcome in outcomes], indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
