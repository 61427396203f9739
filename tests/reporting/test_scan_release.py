"""python -m reports scan end to end: two real kornia releases installed from PyPI (needs network)
into a temporary cache, each run by a fresh pytest, checked against the registry."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fixtures.known_bugs.registry import DEFAULT_REGISTRY, load_registry
from reports.__main__ import main
from reports.scan.run import (
    ReleaseRun,
    ScanError,
    bug_scans,
    environment_requirements,
    install_into,
    last_line,
    package_policy,
    paired_releases,
    progress_line,
    release_folder,
    release_verdicts,
    scan,
    selected_bugs,
    summary_lines,
    torch_excluded,
)

REPO = Path(__file__).resolve().parents[2]
# Only the suite's folder is collected: the scan's own speed, not the sweeps', is under test.
SUITE = ["--", "suites/kornia_2791_planckian_jitter"]


@pytest.mark.release_range
def test_two_kornia_releases_agree_with_the_registry(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, cache = tmp_path / "scan", tmp_path / "cache"
    status = main(["scan", "kornia", "0.7.2", "0.7.1", "--bug", "kornia-2791", "--out", str(out), "--cache", str(cache), *SUITE])
    printed = capsys.readouterr().out
    assert status == 0, printed
    progress = [line for line in printed.splitlines() if line.startswith("kornia 0.7.")]
    assert [line.split(":")[0] for line in progress] == ["kornia 0.7.1", "kornia 0.7.2"]  # oldest first, one line each
    assert "kornia-2791 reproduced" in progress[0] and "kornia-2791 fixed" in progress[1]
    assert all("installed" in line for line in progress)
    document = json.loads((out / "scan.json").read_text(encoding="utf-8"))
    (bug,) = document["bugs"]
    assert [(cell["release"], cell["verdict"], cell["registry_affected"]) for cell in bug["row"]] == [
        ("0.7.1", "reproduced", True), ("0.7.2", "fixed", False),
    ]
    assert bug["measured"] == {
        "first_affected": "0.7.1", "first_fixed": "0.7.2", "windows": [{"first_affected": "0.7.1", "first_fixed": "0.7.2", "last_seen": "0.7.1"}],
    }
    assert bug["disagreements"] == [] and document["exit_status"] == 0
    for release in ("0.7.1", "0.7.2"):  # the run saw the scanned release, not the environment's kornia
        results = json.loads((out / f"kornia-{release}" / "results.json").read_text(encoding="utf-8"))
        assert {record["installed"] for record in results["verdicts"] if record["package"] == "kornia"} == {release}
        assert (out / f"kornia-{release}" / "report.html").is_file()
    page = (out / "scan.html").read_text(encoding="utf-8")
    assert 'data-release="0.7.1" data-verdict="reproduced"' in page and 'class="scan-tick scan-disagrees"' not in page
    assert len(list(cache.glob("*/kornia-0.7.*"))) == 2 and not list(cache.glob("*/*.partial"))


@pytest.mark.release_range
def test_a_release_pypi_lacks_stops_the_scan_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines: list[str] = []
    status = scan(
        "kornia", ["0.0.0"], ["kornia-2791"], out=tmp_path / "scan", cache=tmp_path / "cache",
        registry_path=DEFAULT_REGISTRY, pytest_args=[], say=lines.append,
    )
    error = capsys.readouterr().err.strip().splitlines()
    assert status == 2
    assert len(error) == 1 and error[0].startswith("error: kornia 0.0.0: install failed:"), error
    document = json.loads((tmp_path / "scan" / "scan.json").read_text(encoding="utf-8"))
    assert document["stopped"] == error[0].removeprefix("error: ") and document["releases"] == []
    assert not list((tmp_path / "cache").rglob("kornia-0.0.0*"))  # a failed install leaves nothing to reuse


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("error: No solution found when resolving dependencies\n  cause: Because there is no version of kornia==0.0.99, ...\n",
         "error: No solution found when resolving dependencies: cause: Because there is no version of kornia==0.0.99, ..."),
        ("error: Failed to build `sam2`\n  Caused by: The build backend returned an error\n  Caused by: no CUDA_HOME\n\n[stderr]\nTraceback\n",
         "error: Failed to build `sam2`: Caused by: The build backend returned an error: Caused by: no CUDA_HOME"),
        ("warning: old cache\nerror: first\nerror: last\nhint: try --prerelease\n", "error: last"),
        ("fatal: repository 'x' not found\n", "fatal: repository 'x' not found"),
        ("", "(no output)"),
    ],
)
def test_the_line_that_says_what_went_wrong_keeps_uvs_causes(text: str, line: str) -> None:
    assert last_line(text) == line


def test_a_failed_install_says_why_in_one_line(tmp_path: Path) -> None:
    """uv's own words, offline: the error and its cause, on one line."""
    with pytest.raises(ScanError) as raised:
        install_into(tmp_path / "target", "kornia==0.0.99", "kornia 0.0.99", {"UV_OFFLINE": "1"})
    message = str(raised.value)
    assert "\n" not in message and message.startswith("kornia 0.0.99: install failed: error: "), message
    assert ": cause: " in message and "kornia" in message.split(": cause: ", 1)[1], message
    assert not (tmp_path / "target").exists() and not (tmp_path / "target.partial").exists()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["numpy", "2.0"], "unknown package 'numpy'"),
        (["kornia", "0.7.1", "--bug", "sam2-460"], "sam2-460 is not a bug of kornia"),
        (["torch", "2.6.0", "--bug", "kornia-2791"], "kornia-2791 is not a bug of torch or torchvision"),
        (["torch", "2.5.1"], "torch 2.5.1: no torchvision release paired with torch 2.5"),
        (["kornia", "0.7.1", "--bug", "kornia-9999"], "unknown bug id(s) kornia-9999"),
        (["kornia", "seven"], "'seven' is not a PEP 440 version"),
        (["kornia", "0.7.1", "--bug-registry=/nonexistent.toml"], "cannot read the bug registry"),
        (["kornia", "0.7.1", "--out", "/dev/null/scan"], "--out /dev/null/scan: Not a directory"),
    ],
)
def test_bad_input_is_one_line_before_any_install(arguments: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["scan", "--out", str(tmp_path / "scan"), "--cache", str(tmp_path / "cache"), *arguments])
    error = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(error) == 1 and message in error[0], error
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        # An empty value (a template that left it out) was the working directory: the checkout.
        (["scan", "kornia", "0.7.1", "--out", ""], "argument --out: an empty value"),
        (["census", "kornia", "0.9.0", "--repo", ""], "argument --repo: an empty value"),
        (["bisect", "kornia", "--repo", "", "--good", "a", "--bad", "b", "--bug", "kornia-2791"], "argument --repo: an empty value"),
        (["compare", "old.json", "new.json", "-o", ""], "argument -o/--output: an empty value"),
        # Checked before a release is installed: pytest-xdist refused it after each session had started.
        (["census", "kornia", "0.9.0", "--repo", ".", "--workers", "abc"], "argument --workers: 'abc' is not auto, logical or a count of workers"),
    ],
)
def test_an_empty_or_malformed_argument_is_refused_before_anything_runs(arguments: list[str], message: str, capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        main(arguments)
    assert exited.value.code == 2 and capsys.readouterr().err.strip().splitlines()[-1].endswith(f"error: {message}")


@pytest.mark.parametrize(
    ("requires", "torch", "excluded"),
    [
        (["numpy", "torch==2.6.0", "pillow!=8.3.*,>=5.3.0"], "2.14.1+cu130", "torch==2.6.0"),  # torchvision 0.21.0
        (["numpy", "torch (>=2.14.0)"], "2.14.1+cu130", None),  # torchvision 0.29.1 and 0.29.2, as their METADATA spells it
        (["torch (>=2.14.0)"], "2.15.0", None),
        (["torch (>=2.14.0)"], "2.16.0rc1", None),  # a torch release candidate is a torch
        (["torch==2.14.1"], "2.14.1+cu130", None),  # the index's CUDA label is the same release
        (["Torch==2.6.0"], "2.14.1", "Torch==2.6.0"),
        (["torch>=1.9.1", "kornia_rs>=0.1.9"], "2.14.1", None),  # kornia
        (["torch<2; extra == 'old'"], "2.14.1", None),  # only for an extra
        (['torch<2; python_version < "3"'], "2.14.1", None),  # not for this Python
        (["numpy"], "2.14.1", None),
        (["typing (>=3.6.*)", "torch==2.6.0"], "2.14.1", "torch==2.6.0"),  # a line that does not parse is passed over
    ],
)
def test_a_release_is_judged_only_over_a_torch_it_admits(requires: list[str], torch: str, excluded: str | None) -> None:
    assert torch_excluded(requires, torch) == excluded


def test_a_release_that_excludes_this_torch_stops_the_scan_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """torchvision 0.21.0 names torch 2.6.0: its operators would load over another torch, so no verdict (exit 2, before pytest)."""
    cache = tmp_path / "cache"
    info = release_folder(cache, "torchvision", "0.21.0") / "torchvision-0.21.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torchvision\nVersion: 0.21.0\nRequires-Dist: numpy\nRequires-Dist: torch==2.6.0\n")
    status = main(["scan", "torchvision", "0.21.0", "--bug", "torchvision-8855", "--out", str(tmp_path / "scan"), "--cache", str(cache)])
    error = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(error) == 1, error
    assert error[0].startswith("error: torchvision 0.21.0 requires torch==2.6.0 and this environment has torch "), error
    assert "python -m reports scan torch RELEASE" in error[0] and not (tmp_path / "scan" / "torchvision-0.21.0").exists()


def record(installed: str | None, verdict: str = "reproduced") -> dict:
    return {"bug_id": "kornia-2791", "package": "kornia", "installed": installed, "verdict": verdict}


@pytest.mark.parametrize(
    ("installed", "error"),
    [
        ("0.7.1", None),
        ("0.7.1.0", None),  # the same release, spelt another way
        ("0.9.0", "the run saw kornia 0.9.0"),  # the environment's kornia won over the scanned folder
        (None, "the run saw kornia (not installed)"),
        ("0.7.1.git-abc", "the run saw kornia '0.7.1.git-abc', which is not a PEP 440 version"),  # a git build
        ("0.7.1+git.abc", "the run saw kornia 0.7.1+git.abc"),  # a local build of it is another build
        ("0.7.1+cpu", None),  # a platform label the index added (UV_TORCH_BACKEND=cpu's torch 2.6.0+cpu)
        ("0.7.1+cu130", None),
        ("0.7.1+rocm6.2", None),
    ],
)
def test_a_run_must_see_the_release_it_scans(installed: str | None, error: str | None) -> None:
    bugs = selected_bugs(load_registry(DEFAULT_REGISTRY), "kornia", ["kornia-2791"])
    document = {"verdicts": [record(installed)]}
    if error is None:
        assert release_verdicts(document, "kornia", "0.7.1", bugs) == {"kornia-2791": "reproduced"}
    else:
        with pytest.raises(ScanError, match=re.escape(error)):
            release_verdicts(document, "kornia", "0.7.1", bugs)


# torch releases: each in an environment of its own, with its torchvision pair.

def test_a_torch_release_brings_its_torchvision_pair_and_setuptools() -> None:
    policy = package_policy("torch")
    assert policy.bisect_refusal is None and set(policy.pairs) == {"torchvision"}
    assert environment_requirements("torch", "2.6.0", policy.pairs) == ["torch==2.6.0", "torchvision==0.21.*", "setuptools"]
    assert environment_requirements("torch", "2.10.1", policy.pairs) == ["torch==2.10.1", "torchvision==0.25.*", "setuptools"]
    # torchvision 0.29.2 admits torch>=2.14.0 and is torch 2.15's pair: no 0.30 exists.
    assert environment_requirements("torch", "2.15.0", policy.pairs) == ["torch==2.15.0", "torchvision==0.29.*", "setuptools"]
    assert package_policy("kornia").pairs is None  # a folder over the environment's torch


@pytest.mark.parametrize(
    ("release", "paired"),
    [
        ("2.16.0", "torchvision"),  # landed after the table: the newest torchvision the index admits beside it
        ("2.16.0rc1", "torchvision"),
        ("3.0.0", "torchvision"),
        ("2.9.1", "torchvision==0.24.*"),
    ],
)
def test_a_torch_release_newer_than_the_pairs_table_takes_the_resolvers_torchvision(release: str, paired: str) -> None:
    assert environment_requirements("torch", release, package_policy("torch").pairs) == [f"torch=={release}", paired, "setuptools"]


def test_a_torch_scan_judges_torchvision_bugs_by_the_torchvision_each_environment_held() -> None:
    registry = load_registry(DEFAULT_REGISTRY)
    assert [bug.id for bug in selected_bugs(registry, "torch", [], ("torchvision",))] == [
        bug.id for bug in registry.values() if bug.package in ("torch", "torchvision")
    ]
    bug = registry["torchvision-8855"]
    runs = [
        ReleaseRun("2.6.0", {bug.id: "reproduced"}, True, 1.0, 1.0, 0, {bug.id: "0.21.0"}),
        ReleaseRun("2.7.0", {bug.id: "fixed"}, True, 1.0, 1.0, 0, {bug.id: "0.22.0"}),
    ]
    (scanned,) = bug_scans([bug], runs)
    assert scanned.registry_affected == {"2.6.0": True, "2.7.0": False}  # torchvision's range, not torch's
    assert (scanned.disagreements, scanned.unsettled, scanned.first_affected, scanned.first_fixed) == ((), (), "2.6.0", "2.7.0")
    assert summary_lines(Path("out"), [scanned])[0].endswith(
        "registry affected <0.22.0,>=0.16.0, first fixed 0.22.0 (of the release each held: 2.6.0 0.21.0, 2.7.0 0.22.0)"
    )


def test_a_torch_releases_line_names_the_torchvision_its_environment_held(tmp_path: Path) -> None:
    """A torch release newer than the pairs table takes the resolver's torchvision: its line says which."""
    info = tmp_path / "lib" / "python3.11" / "site-packages" / "torchvision-0.29.2.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torchvision\nVersion: 0.29.2\n")
    paired = paired_releases(tmp_path, {"torchvision": {}})
    assert paired == ("torchvision 0.29.2",)
    run = ReleaseRun("2.16.0", {"torch-48419": "fixed"}, True, 9.0, 20.0, 0, {"torch-48419": "2.16.0"}, paired)
    assert progress_line("torch", run) == "torch 2.16.0 with torchvision 0.29.2: torch-48419 fixed (29.0 s: installed 9.0 s, pytest 20.0 s)"
    assert paired_releases(tmp_path / "empty", {"torchvision": {}}) == ("torchvision (not installed)",)
