"""The meta-proxy classifier sorts real device mismatches from meta-device limits, using the
errors torch 2.14 really raises (each case below is a live torch call, not a copied string,
except the CUDA wordings, which need two real devices)."""

from __future__ import annotations

import pytest
import torch

from fixtures.proxies.meta_proxy import CLEAN, ERROR, FINDING, INCONCLUSIVE, classify_call, classify_error


def meta(*shape: int) -> torch.Tensor:
    return torch.rand(*shape, device="meta")


MISMATCHES = {
    "meta + cpu": lambda: meta(3) + torch.rand(3),
    "cat meta with cpu": lambda: torch.cat([meta(3), torch.rand(3)]),
    "where with a cpu branch": lambda: torch.where(meta(3) > 0, torch.rand(3), meta(3)),
    "cpu (1,1) tensor without device=": lambda: meta(1, 5) - torch.tensor([[0.0]]),
    "cpu arange without device=": lambda: meta(5) * torch.arange(5),
    "output left on cpu": lambda: (meta(3), torch.zeros(3)),
}
META_LIMITS = {
    ".item()": lambda: meta(3).sum().item(),
    "bool()": lambda: bool(meta(3).sum() > 0),
    ".tolist()": lambda: meta(3).tolist(),
    ".cpu()": lambda: meta(3).cpu(),
    "copy_ out of meta": lambda: torch.zeros(3).copy_(meta(3)),
    "nonzero (data-dependent size)": lambda: meta(3).nonzero(),
    "boolean mask": lambda: meta(3)[meta(3) > 0],
    "unique (no meta kernel)": lambda: torch.unique(meta(3)),
    "bincount (no meta kernel)": lambda: torch.bincount(torch.ones(3, dtype=torch.long, device="meta")),
    "repeat_interleave": lambda: torch.repeat_interleave(meta(3), torch.ones(3, dtype=torch.long, device="meta")),
}


@pytest.mark.catches("fixtures/proxies/meta_proxy.py::classify_call")
@pytest.mark.parametrize("case", list(MISMATCHES))
def test_fault_real_device_mismatch_is_a_finding(case: str) -> None:
    result = classify_call(MISMATCHES[case], "meta")
    assert result.kind == FINDING, result
    assert "meta" in result.detail or "cpu" in result.detail


@pytest.mark.parametrize("case", list(META_LIMITS))
def test_meta_limit_is_inconclusive(case: str) -> None:
    assert classify_call(META_LIMITS[case], "meta").kind == INCONCLUSIVE


def test_meta_only_work_is_clean() -> None:
    result = classify_call(lambda: {"out": [meta(2, 3) * 2, torch.nn.functional.pad(meta(1, 1, 4, 4), [1, 1, 1, 1])]})
    assert result.kind == CLEAN and result.detail == ""
    assert result.output["out"][0].device.type == "meta"


@pytest.mark.parametrize(
    "message",
    [
        "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!",
        "Expected all tensors to be on the same device, but got index is on cpu, different from other tensors on cuda:1",
    ],
    ids=["cuda:0 and cpu", "index on cpu, others on cuda:1"],
)
@pytest.mark.catches("fixtures/proxies/meta_proxy.py::classify_error")
def test_fault_cuda_mismatch_wordings_are_findings(message: str) -> None:
    assert classify_error(RuntimeError(message)).kind == FINDING


@pytest.mark.catches("fixtures/proxies/meta_proxy.py::classify_error")
def test_fault_mismatch_wins_over_a_limit_in_the_same_error() -> None:
    error = NotImplementedError("Tensor on device cpu is not on the expected device meta!")
    assert classify_error(error).kind == FINDING


def test_an_unrelated_failure_is_neither() -> None:
    assert classify_call(lambda: torch.rand(2, 3, device="meta").view(5)).kind == ERROR


def test_cuda_target_checks_the_index() -> None:
    """Placement on cuda:1 versus cuda:0 is what kornia-2791 is about; classify_result compares indices."""
    from fixtures.proxies.meta_proxy import same_device

    assert not same_device(torch.device("cuda:0"), torch.device("cuda:1"))
    assert same_device(torch.device("cuda:1"), torch.device("cuda:1"))
    assert same_device(torch.device("cuda:0"), torch.device("cuda"))


@pytest.mark.parametrize(
    ("error", "line"),
    [
        (RuntimeError("first\nsecond"), "RuntimeError: first"),
        (ValueError("  padded  "), "ValueError: padded"),
        (NotImplementedError(), "NotImplementedError: "),
    ],
)
def test_first_line_names_the_type_and_keeps_one_line(error: BaseException, line: str) -> None:
    from fixtures.proxies.meta_proxy import first_line

    assert first_line(error) == line


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (RuntimeError("Tensor on device cpu is not on the expected device meta!\nmore"), FINDING),
        (RuntimeError("Cannot copy out of meta tensor; no data!"), INCONCLUSIVE),
        (NotImplementedError("no kernel for this backend"), INCONCLUSIVE),
        (ValueError("shape '[5]' is invalid"), ERROR),
    ],
    ids=["mismatch", "meta limit", "not implemented", "unrelated"],
)
def test_every_verdict_keeps_the_errors_first_line(error: BaseException, kind: str) -> None:
    result = classify_error(error)
    assert (result.kind, result.detail) == (kind, f"{type(error).__name__}: {str(error).splitlines()[0]}")


@pytest.mark.catches("fixtures/proxies/meta_proxy.py::classify_call", "fixtures/proxies/meta_proxy.py::output_tensors")
@pytest.mark.parametrize(
    "result",
    [{"image": meta(3), "mask": torch.zeros(3)}, [meta(3), [torch.zeros(3)]]],
    ids=["mapping", "nested list"],
)
def test_fault_output_left_on_cpu_inside_a_container_is_named(result: object) -> None:
    classified = classify_call(lambda: result, "meta")
    assert (classified.kind, classified.detail) == (FINDING, "output tensor #1 is on cpu, expected meta")
    assert classified.output is result


def test_an_unindexed_device_matches_any_index_both_ways() -> None:
    from fixtures.proxies.meta_proxy import same_device

    assert same_device(torch.device("cuda"), torch.device("cuda:1"))
    assert not same_device(torch.device("cpu"), torch.device("meta"))


def test_every_misplaced_output_is_in_the_site() -> None:
    classified = classify_call(lambda: [torch.zeros(3), meta(3), torch.zeros(3)], "meta")
    assert (classified.detail, classified.site) == ("output tensor #0 is on cpu, expected meta", "outputs #0, #2")
    assert classify_call(lambda: (meta(3), torch.zeros(3)), "meta").site == "output #1"


# A package of two modules: its __init__'s function calls a submodule's, which hands torch the
# mismatched tensors (as kornia's AugmentationSequential calls base.py's _blend_by_prob).
PLANTED_PACKAGE = {
    "planted/__init__.py": (
        "from planted.inner.blend import blend\n\ndef forward(a, b):\n    return blend(a, b)\n\ndef own(a, b):\n    return a + b\n"
    ),
    "planted/inner/__init__.py": "",
    "planted/inner/blend.py": "import torch\n\ndef blend(a, b):\n    return torch.where(a > 0, a, b)\n",
}


@pytest.fixture
def planted(tmp_path, monkeypatch: pytest.MonkeyPatch):
    import importlib
    import sys

    for name, text in PLANTED_PACKAGE.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    for module in ("planted", "planted.inner", "planted.inner.blend"):
        monkeypatch.delitem(sys.modules, module, raising=False)
    return importlib.import_module("planted")


@pytest.mark.catches("fixtures/proxies/meta_proxy.py::error_site")
@pytest.mark.parametrize(
    ("function", "package", "site"),
    [
        ("forward", "planted", "planted/inner/blend.py:blend"),  # the innermost of the package's frames
        ("own", "planted", "planted/__init__.py:own"),  # a package's own module is its __init__.py
        ("forward", "plant", ""),  # a package whose name only starts the same is another
        ("forward", "", ""),  # no package named: no site
    ],
)
def test_fault_a_device_error_is_placed_at_the_packages_innermost_frame(planted, function: str, package: str, site: str) -> None:
    result = classify_call(lambda: getattr(planted, function)(meta(3), torch.rand(3)), "meta", package)
    assert (result.kind, result.site) == (FINDING, site)


def test_an_error_nothing_places_keeps_its_site_for_the_caller(planted) -> None:
    """The sweep calls a call failing on the device and running on the CPU a device error: its site too."""
    result = classify_call(lambda: planted.forward(meta(3), "not a tensor"), "meta", "planted")
    assert (result.kind, result.site) == (ERROR, "planted/inner/blend.py:blend")


@pytest.mark.catches("fixtures/proxies/meta_proxy.py::place_site")
@pytest.mark.parametrize(
    ("where", "site"),
    [
        (("{root}/fixtures/proxies/meta_proxy.py", 12, "classify_call"), "fixtures/proxies/meta_proxy.py:classify_call"),
        (("{root}/suites/device_oracle.py", 3, "check"), None),  # another package beside it
        (None, None),  # simcuda found no caller outside torch
    ],
)
def test_fault_a_place_simcuda_recorded_is_placed_in_the_package(where: tuple | None, site: str | None) -> None:
    """A foreign allocation's or a race's caller (file, line, function), as the census writes a cause."""
    from fixtures.proxies.meta_proxy import place_site
    from tests.conftest import REPO

    recorded = None if where is None else (where[0].format(root=REPO), *where[1:])
    assert place_site(recorded, "fixtures") == site
