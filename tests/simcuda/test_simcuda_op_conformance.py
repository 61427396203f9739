"""simcuda against PyTorch's op database (bench/simcuda_op_conformance.py) on a fixed sample of
OpInfos, one or more of each kind: each matches the CPU run or is an explained divergence of
bench/simcuda_op_conformance.toml. The oracle can fail: each fault the database found in simcuda,
put back, diverges, and so does a result handed out on the CPU."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch

from simcuda import dispatch, functions, real_cpu
from tests.conftest import REPO, load_script
from tests.helpers.this_python import run_as_written

pytest.importorskip("expecttest", reason="torch's op database imports expecttest (pip install -e . installs it)")
conformance = load_script(REPO / "bench" / "simcuda_op_conformance.py")

# Elementwise, broadcasting, reductions, convolution, indexing and scatter, views and strides,
# complex bits, the *_like and new_* factories, random draws, sparse, linear algebra, data-dependent shapes.
SAMPLE = (
    "add", "mul", "where", "clamp", "sum", "mean", "amax", "cumsum", "nn.functional.conv2d", "nn.functional.linear",
    "index_select", "gather", "scatter_add", "index_put", "masked_fill", "transpose", "permute", "as_strided", "expand",
    "conj", "view_as_real", "zeros_like", "randint_like", "new_zeros", "bernoulli", "nn.functional.dropout", "to_sparse",
    "linalg.solve", "nonzero", "unique", "cat", "stack", "softmax", "nn.functional.embedding", "nn.functional.embedding_bag", "to",
)
SAMPLES = 2


@pytest.fixture(scope="module")
def database() -> list:
    return conformance.op_database()


@pytest.mark.parametrize("name", SAMPLE)
def test_the_op_matches_the_cpu_or_its_divergence_is_explained(database: list, name: str) -> None:
    (op,) = [op for op in database if op.name == name and not op.variant_test_name]
    outcome = conformance.conform(op, SAMPLES)
    assert outcome.samples > 0, f"{name}: no sample the CPU could run"
    assert outcome.outcome == conformance.MATCHED or outcome.op in conformance.known()["explained"], outcome


def test_every_explained_divergence_names_an_op_of_the_database(database: list) -> None:
    names = {conformance.op_name(op) for op in database}
    assert not set(conformance.known()["explained"]) - names


def forward_only_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dispatch, "DIFFERENTIABLE_TWINS", {})


def copy_passed_to_the_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(functions, "_without_copy", lambda positional: (positional, False))


def like_handed_out_on_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(functions.SimulatedFunctions, "_like", lambda self, func, args, kwargs: real_cpu(func(*args, **kwargs)))


# The faults simcuda had before the op database found them, put back where the simulation runs them.
FAULTS = {
    "embedding_bag forward-only op with grad": (forward_only_kept, "nn.functional.embedding_bag", "Autograd not support dtype"),
    "Tensor.to's positional copy": (copy_passed_to_the_parser, "to", "does not accept copy argument"),
    "a *_like result handed out on the CPU": (like_handed_out_on_the_cpu, "zeros_like", "device cpu"),
}


@pytest.mark.parametrize(("plant", "name", "found"), FAULTS.values(), ids=FAULTS.keys())
def test_a_simulation_fault_diverges(database: list, monkeypatch: pytest.MonkeyPatch, plant, name: str, found: str) -> None:
    plant(monkeypatch)
    (op,) = [op for op in database if op.name == name and not op.variant_test_name]
    outcome = conformance.conform(op, 4)
    assert outcome.outcome == conformance.DIVERGING and found in outcome.reason, outcome


@pytest.mark.skipif(functions._REDISPATCH is None, reason="torch < 2.14 has no torch.overrides.redispatch_function: such ops are refused")
@pytest.mark.parametrize("name", ["unravel_index", "nn.functional.fractional_max_pool2d"])
def test_a_python_level_function_matches_and_is_refused_with_the_mode_popped(database: list, monkeypatch, name: str) -> None:
    """A Python-level torch function whose body makes tensors on its input's device matches the
    CPU; with its body run as torch runs a mode's handler (the mode popped), it is refused."""
    (op,) = [op for op in database if op.name == name and not op.variant_test_name]
    assert conformance.conform(op, SAMPLES).outcome == conformance.MATCHED
    monkeypatch.setattr(functions, "_REDISPATCH", None)
    outcome = conformance.conform(op, SAMPLES)
    assert outcome.outcome == conformance.REFUSED and "CUDA entry point" in outcome.reason, outcome


def test_the_database_leaves_torchs_flags_as_it_found_them(database: list) -> None:
    """torch's test utilities freeze torch.backends' flags at import: the harness's own fixtures
    and the simulation set them in every later test of the process."""
    assert not torch.backends.flags_frozen()


def test_the_documented_command_prints_each_op_and_the_counts() -> None:
    """The command docs/explanation/simcuda-known-divergences.md gives ("Op by op"), as written, from the repository root."""
    command = "python bench/simcuda_op_conformance.py --samples 8 --ops add nn.functional.conv2d --out /tmp/outcomes.json"
    assert command in (REPO / "docs" / "explanation" / "simcuda-known-divergences.md").read_text(encoding="utf-8")
    done = run_as_written(command, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert re.search(r"^torch \S+: 2 ops, 2 matched, 0 refused, 0 diverging, 0 uncompared; 0 diverging unexplained$", done.stdout, re.M), done.stdout
    outcomes = json.loads(Path("/tmp/outcomes.json").read_text(encoding="utf-8"))
    assert [(outcome["op"], outcome["outcome"]) for outcome in outcomes] == [("add", "matched"), ("nn.functional.conv2d", "matched")]
    assert all(outcome["samples"] > 0 for outcome in outcomes)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--samples", "0"], "--samples 0: at least one"),
        (["--out", "/nonexistent/outcomes.json"], "--out /nonexistent/outcomes.json: a file in an existing folder"),
    ],
)
def test_an_argument_it_cannot_use_is_one_line_before_any_op_runs(
    arguments: list[str], message: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.argv", ["simcuda_op_conformance.py", *arguments])
    monkeypatch.setattr(conformance, "op_database", lambda: pytest.fail("the ops ran before the arguments were checked"))
    with pytest.raises(SystemExit) as exit_status:
        conformance.main()
    assert exit_status.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == f"simcuda_op_conformance.py: error: {message}"
