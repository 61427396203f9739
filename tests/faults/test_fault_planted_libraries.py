"""The wiring, end to end: bugs planted into copies of the real libraries (tests/helpers/planted.py) and
the real suites run against them in fresh pytest processes, read back from results.json.

Each session plants every library it needs at once, to pay for torch's import once:
  baseline   nothing planted: the installed releases, every bug fixed
  regressed  kornia 0.9.0 with `pl` a plain attribute (PR 2792 undone) and gaussian()'s mean
             made without a device (PR 2838 undone); torchvision with pin_memory taken out of the
             re-wrapped operations (PR 8921 undone) and a CPU encode_jpeg that leaves the bottom
             tenth of each frame from the frame before; sam2 1.1.0 with PR 486 undone (no
             warm-up, the cache handed back as stored) relabelled 1.2.0
  variants   kornia with `pl` a non-persistent buffer (follows the module: not the bug); sam2
             not installed at all (where it is installed: `python -S`, a site without it)
  erroring   kornia whose Planckian coefficient table raises

A fault counts as caught only when the bug's verdict flipped from the baseline's, and the suite's
own oracle observed it (the observation the known_bug plugin records), not a crash. On CPU the
torchvision-8587 test is a control, so its flip is `skipped` (nothing decided) to `error` (the
control saw the bug: the library, or the harness, is broken).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fixtures.known_bugs.registry import load_registry
from fixtures.known_bugs.versions import installed_version
from suites.sam2_460_cudagraph.position_encodings import SAM2_INSTALL_HINT
from tests.helpers import warm_python
from tests.helpers.planted import (
    REPO,
    deciding_devices,
    edit,
    observations,
    plant,
    python_path,
    relabel,
    results,
    site_without,
    suite_command,
    verdict_of,
)

SUITES = {
    "kornia-2791": "suites/kornia_2791_planckian_jitter/test_planckian_jitter_state.py",
    "kornia-2837": "suites/kornia_2837_jpeg_device/test_jpeg_chain_meta.py",
    "torchvision-8587": "suites/torchvision_8587_encode_jpeg/test_consecutive_encodes.py",
    "torchvision-8855": "suites/torchvision_8855_pin_memory",  # the CPU proxy and the simulated pinning
    "sam2-460": "suites/sam2_460_cudagraph/test_position_cache_proxy.py",
}
# sam2 is an optional extra: without it nothing of sam2 can be planted, and its fault skips.
SAM2_INSTALLED = installed_version("sam2") is not None
needs_sam2 = pytest.mark.skipif(not SAM2_INSTALLED, reason=f"sam2 is not installed (the optional extra): {SAM2_INSTALL_HINT}")
JITTER = "augmentation/_2d/intensity/planckian_jitter.py"
PL_BUFFER = 'self.register_buffer("pl", _pl)'
SESSION_TIMEOUT_S = 300
REGISTRY = load_registry()


class Session:
    """One finished pytest run of the real suites: exit status, output, results.json."""

    def __init__(self, root: Path, site_dir: Path, bugs: tuple[str, ...], isolated_site: bool = False) -> None:
        report_dir = root / "report"
        arguments = [argument for bug in bugs for argument in ("--bug", bug)] + [str(REPO / SUITES[bug]) for bug in bugs]
        completed = warm_python.run(
            suite_command(report_dir, deciding_devices(REGISTRY[bug] for bug in bugs), *arguments, isolated_site=isolated_site),
            cwd=root, env={**os.environ, "PYTHONPATH": python_path(site_dir)}, timeout=SESSION_TIMEOUT_S,
        )
        self.exit_status, self.output = completed.returncode, completed.stdout + completed.stderr
        assert (report_dir / "results.json").is_file(), f"the session wrote no results.json:\n{self.output[-3000:]}"
        self.document = results(report_dir)

    def verdict(self, bug_id: str) -> dict:
        return verdict_of(self.document, bug_id)

    def observed_by(self, bug_id: str) -> list[str]:
        """The bug's tests whose oracle raised its finding."""
        return [nodeid for nodeid, seen in observations(self.document, bug_id).items() if seen == "observed"]


def new_site(factory: pytest.TempPathFactory, name: str) -> tuple[Path, Path]:
    root = factory.mktemp(name)
    (root / "site").mkdir()
    return root, root / "site"


@pytest.fixture(scope="module")
def baseline(tmp_path_factory) -> Session:
    root, site_dir = new_site(tmp_path_factory, "baseline")
    return Session(root, site_dir, tuple(SUITES))


@pytest.fixture(scope="module")
def regressed(tmp_path_factory) -> Session:
    root, site_dir = new_site(tmp_path_factory, "regressed")
    kornia = plant(site_dir, "kornia")
    edit(kornia / JITTER, PL_BUFFER, "self.pl = _pl")
    edit(kornia / "filters" / "kernels.py", "mean = _device_literal([[float(mean)]], device=sigma.device,", "mean = torch.tensor([[float(mean)]],")
    torchvision = plant(site_dir, "torchvision")
    edit(torchvision / "tv_tensors" / "_torch_function_helpers.py", "    torch.Tensor.pin_memory,\n}", "}")
    leave_stale_bottom_rows(torchvision / "io" / "image.py")
    if SAM2_INSTALLED:
        undo_sam2_pr_486(plant(site_dir, "sam2") / "modeling" / "position_encoding.py")
        relabel(site_dir, "sam2", "1.2.0")
    return Session(root, site_dir, tuple(SUITES))


STALE_ROWS = """

_PLANTED_PREVIOUS: list = []


def _planted_stale_bottom_rows(image):
    # planted: the bottom tenth of the frame comes from the frame before (8587's partial frame)
    previous, _PLANTED_PREVIOUS[:] = _PLANTED_PREVIOUS[:1], [image.clone()]
    if not previous:
        return image
    rows = min(max(1, image.shape[1] // 10), previous[0].shape[1])
    columns = min(image.shape[2], previous[0].shape[2])
    partial = image.clone()
    partial[:, -rows:, :columns] = previous[0][:, -rows:, :columns]
    return partial
"""


def leave_stale_bottom_rows(image_module: Path) -> None:
    """torchvision's single-image CPU encode_jpeg encodes a frame whose bottom tenth is the frame
    before's: a partial frame, which the whole-frame mean (1-3 here) does not see."""
    edit(
        image_module,
        "            return torch.ops.image.encode_jpeg(input, quality)\n",
        "            return torch.ops.image.encode_jpeg(_planted_stale_bottom_rows(input), quality)\n",
    )
    image_module.write_text(image_module.read_text() + STALE_ROWS)


def undo_sam2_pr_486(position_encoding: Path) -> None:
    """sam2 0.4.1's position cache: no warm-up (the constructor takes no warmup_cache), filled by
    the first forward, and a hit handed back as stored, on whatever device filled it."""
    edit(position_encoding, "        warmup_cache: bool = True,\n", "")
    edit(position_encoding, "if warmup_cache and torch.cuda.is_available():", "if False:")
    edit(position_encoding, "return self.cache[cache_key].to(device)[None]", "return self.cache[cache_key][None]")


@pytest.fixture(scope="module")
def variants(tmp_path_factory) -> Session:
    root, site_dir = new_site(tmp_path_factory, "variants")
    if SAM2_INSTALLED:  # taken away; else already absent, and a forked Python spares torch's import (4 s)
        site_without(site_dir, "sam2", "kornia")
    edit(plant(site_dir, "kornia") / JITTER, PL_BUFFER, 'self.register_buffer("pl", _pl, persistent=False)')
    return Session(root, site_dir, ("kornia-2791", "sam2-460"), isolated_site=SAM2_INSTALLED)


@pytest.fixture(scope="module")
def erroring(tmp_path_factory) -> Session:
    root, site_dir = new_site(tmp_path_factory, "erroring")
    edit(
        plant(site_dir, "kornia") / JITTER,
        "def get_planckian_coeffs(mode: str) -> torch.Tensor:\n",
        "def get_planckian_coeffs(mode: str) -> torch.Tensor:\n    raise RuntimeError('planted: the coefficient table is broken')\n",
    )
    return Session(root, site_dir, ("kornia-2791",))


def assert_flipped(baseline: Session, planted: Session, bug_id: str) -> None:
    assert baseline.verdict(bug_id)["verdict"] == "fixed", baseline.verdict(bug_id)
    assert planted.verdict(bug_id)["verdict"] == "regressed", planted.verdict(bug_id)
    assert planted.observed_by(bug_id), f"no oracle of {bug_id} observed the planted bug: {observations(planted.document, bug_id)}"
    assert not baseline.observed_by(bug_id)
    assert planted.exit_status == pytest.ExitCode.TESTS_FAILED


@pytest.mark.catches(
    "suites/kornia_2791_planckian_jitter/test_planckian_jitter_state.py::test_pl_is_registered_state",
    "suites/kornia_2791_planckian_jitter/test_planckian_jitter_state.py::test_state_follows_to_float64",
    "fixtures/proxies/module_state.py::registered_state",
    "fixtures/proxies/module_state.py::held_tensors",
)
def test_fault_kornia_pl_a_plain_attribute_again(baseline, regressed) -> None:
    assert_flipped(baseline, regressed, "kornia-2791")
    assert regressed.verdict("kornia-2791")["installed"] == "0.9.0"
    assert "pl" in regressed.verdict("kornia-2791")["detail"]


@pytest.mark.catches(
    "suites/torchvision_8855_pin_memory/test_pin_memory_cpu_proxy.py::test_pin_memory_keeps_tv_tensor_cpu_proxy",
    "suites/torchvision_8855_pin_memory/oracle.py::check_kept",
)
def test_fault_torchvision_pin_memory_not_rewrapped(baseline, regressed) -> None:
    assert_flipped(baseline, regressed, "torchvision-8855")
    assert "subclass lost" in regressed.verdict("torchvision-8855")["detail"]


@pytest.mark.catches(
    "suites/sam2_460_cudagraph/oracles.py::check_position_cache_follows_device",
    "fixtures/proxies/meta_proxy.py::classify_result",
)
@needs_sam2
def test_fault_sam2_pr_486_undone_in_a_later_release(baseline, regressed) -> None:
    assert_flipped(baseline, regressed, "sam2-460")
    record = regressed.verdict("sam2-460")
    assert record["installed"] == "1.2.0"
    assert "expected meta" in record["detail"]


@pytest.mark.catches(
    "suites/kornia_2837_jpeg_device/test_jpeg_chain_meta.py::test_chain_piece_stays_on_meta",
    "fixtures/proxies/meta_proxy.py::classify_call",
    "fixtures/proxies/meta_proxy.py::classify_error",
)
def test_fault_kornia_gaussian_mean_made_on_the_cpu_again(baseline, regressed) -> None:
    assert_flipped(baseline, regressed, "kornia-2837")
    assert "not on the expected device meta" in regressed.verdict("kornia-2837")["detail"]


@pytest.mark.catches(
    "suites/torchvision_8587_encode_jpeg/test_consecutive_encodes.py::test_consecutive_encodes_decode_to_their_source",
    "suites/torchvision_8587_encode_jpeg/oracle.py::check_jpeg",
    "suites/torchvision_8587_encode_jpeg/oracle.py::check_decoded",
)
def test_fault_torchvision_encode_leaves_the_previous_frames_bottom_rows(baseline, regressed) -> None:
    assert baseline.verdict("torchvision-8587")["verdict"] == "skipped", baseline.verdict("torchvision-8587")
    record = regressed.verdict("torchvision-8587")
    assert record["verdict"] == "error", record
    assert regressed.observed_by("torchvision-8587"), observations(regressed.document, "torchvision-8587")
    assert "8x8 block" in regressed.output


def test_planted_kornia_pl_a_non_persistent_buffer_is_fixed(variants) -> None:
    """A non-persistent buffer follows .to() like any buffer; only state_dict() leaves it out."""
    record = variants.verdict("kornia-2791")
    assert record["verdict"] == "fixed", record
    assert not variants.observed_by("kornia-2791")


def test_planted_sam2_absent_is_skipped_not_fixed(variants) -> None:
    record = variants.verdict("sam2-460")
    assert record["verdict"] == "skipped", record
    assert record["installed"] is None
    assert "sam2" in record["detail"]
    assert variants.exit_status == pytest.ExitCode.OK, variants.output[-3000:]


def test_planted_library_that_raises_is_an_error_that_fails_the_run(erroring) -> None:
    record = erroring.verdict("kornia-2791")
    assert record["verdict"] == "error", record
    assert "planted: the coefficient table is broken" in erroring.output
    assert erroring.exit_status == pytest.ExitCode.TESTS_FAILED
    assert not erroring.observed_by("kornia-2791")
