"""The workflows cannot run here; this parses them as YAML and checks what they promise. The GPU
one: the fork gate, both pytest steps (one xdist worker per GPU; serial for multi-GPU and isolated
tests) and that together they leave no GPU test unrun, --strict-sweeps, the release matrix, the
matrix page. The CPU one: the same release matrix on hosted runners, open to every pull request,
the simulated device's and the proxies' evidence, the matrix page. Both pass zizmor, the security
linter for GitHub Actions (pinned actions, no persisted credentials, no template injection)."""

from __future__ import annotations

import configparser
import importlib.metadata
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from reports.run.results import results_document
from tests.conftest import REPO
from tests.helpers import warm_python
from tests.helpers.this_python import tool_of_this_python
from tests.reporting.test_report_compare import ENVIRONMENT

WORKFLOWS = REPO / ".github" / "workflows"
WORKFLOW = WORKFLOWS / "gpu-regression.yml"
CPU_WORKFLOW = WORKFLOWS / "cpu-regression.yml"


def load_workflow(path: Path = WORKFLOW) -> dict:
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    document["on"] = document.pop(True)  # YAML 1.1 reads the bare key `on` as true
    return document


def regression_steps(workflow: dict) -> dict[str, dict]:
    return {step["name"]: step for step in workflow["jobs"]["regression"]["steps"] if "name" in step}


def pytest_run_of(step: dict) -> list[str]:
    """The step's command as words (after `tox -e ENV --`), with its folded lines joined."""
    words = shlex.split(step["run"])
    assert words[:2] == ["tox", "-e"] and words[3] == "--", step["run"]
    return words[4:]


def marker_expression(words: list[str]) -> str:
    return words[words.index("-m") + 1]


def parallel_and_serial_steps(workflow: dict) -> tuple[list[str], list[str]]:
    steps = [pytest_run_of(step) for step in regression_steps(workflow).values() if step.get("run", "").startswith("tox")]
    parallel = [words for words in steps if "-n" in words]
    serial = [words for words in steps if "-n" not in words]
    assert len(parallel) == 1 and len(serial) == 1, "expected one xdist step and one serial step"
    return parallel[0], serial[0]


class Context(SimpleNamespace):
    """A GitHub expression context: a missing property is null, as GitHub evaluates it."""

    def __getattr__(self, name: str) -> object:
        return None


def as_context(value: object) -> object:
    return Context(**{key: as_context(item) for key, item in value.items()}) if isinstance(value, dict) else value


def evaluate_if(expression: str, github: dict) -> bool:
    """The job's `if:` for one event: GitHub's operators as Python's (the expression uses only
    property paths, string literals, ==, !=, &&, || and parentheses)."""
    assert re.fullmatch(r"[\w.\s'()=!&|-]+", expression) and "__" not in expression, f"unexpected syntax in {expression!r}"
    python = expression.replace("&&", " and ").replace("||", " or ")
    return bool(eval(python, {"__builtins__": {}}, {"github": as_context(github)}))


def pull_request(head_repo: str, action: str = "synchronize", label: str | None = None) -> dict:
    event = {"action": action, "pull_request": {"head": {"repo": {"full_name": head_repo}}}}
    if label:
        event["label"] = {"name": label}
    return {"event_name": "pull_request", "repository": "team/harness", "event": event}


@pytest.mark.parametrize(
    ("github", "runs"),
    [
        ({"event_name": "push", "repository": "team/harness", "event": {}}, True),
        ({"event_name": "schedule", "repository": "team/harness", "event": {}}, True),
        ({"event_name": "workflow_dispatch", "repository": "team/harness", "event": {}}, True),
        (pull_request("team/harness"), True),  # a branch of this repository
        (pull_request("stranger/harness"), False),  # a fork: its code would run on our machines
        (pull_request("stranger/harness", "opened"), False),
        (pull_request("stranger/harness", "labeled", "gpu-ci"), True),  # a maintainer's label
        (pull_request("stranger/harness", "labeled", "docs"), False),
    ],
)
def test_self_hosted_runs_gate_pull_requests_from_forks(github: dict, runs: bool) -> None:
    workflow = load_workflow()
    assert "labeled" in workflow["on"]["pull_request"]["types"]
    assert {"push", "schedule", "workflow_dispatch"} <= set(workflow["on"])
    assert "self-hosted" in workflow["jobs"]["regression"]["runs-on"]
    assert evaluate_if(workflow["jobs"]["regression"]["if"], github) is runs


def test_both_steps_require_a_gpu_and_fail_on_new_sweep_findings() -> None:
    workflow = load_workflow()
    shared = workflow["jobs"]["regression"]["env"]["HARNESS_GPU_OPTIONS"].split()
    assert {"--require-gpu", "--strict-sweeps"} <= set(shared)
    for words in parallel_and_serial_steps(workflow):
        assert words[0] == "$HARNESS_GPU_OPTIONS"


def test_one_xdist_worker_per_gpu_and_a_serial_step_that_runs_after_a_failure() -> None:
    workflow = load_workflow()
    parallel, serial = parallel_and_serial_steps(workflow)
    assert parallel[parallel.index("-n") + 1] == "$GPU_COUNT"
    counting = regression_steps(workflow)["Show the GPUs"]["run"]
    # torch's count in the release's environment (CUDA_VISIBLE_DEVICES and MIG honoured), never nvidia-smi's lines.
    assert 'tox exec -e "$RELEASE"' in counting and "torch.cuda.device_count()" in counting and "--list-gpus" not in counting
    assert 'echo "GPU_COUNT=$count"' in counting and '[ "$count" -lt 1 ]' in counting
    serial_step = next(
        step for step in regression_steps(workflow).values()
        if step.get("run", "").startswith("tox") and "-n" not in pytest_run_of(step)
    )
    assert serial_step["if"] == "success() || failure()"
    report_dirs = {words[-1] for words in (parallel, serial)}
    assert report_dirs == {"--report-dir=reports/out/$RELEASE/parallel", "--report-dir=reports/out/$RELEASE/serial"}
    assert workflow["jobs"]["regression"]["env"]["RELEASE"] == "${{ matrix.release }}"


SPLIT_SESSION = """
import pytest

def test_plain(device):
    pass

@pytest.mark.isolated_on_gpu
def test_risky(device):
    pass

@pytest.mark.min_cuda_devices(2)
def test_two_gpus():
    pass
"""


def selected(harness: pytest.Pytester, *options: str) -> set[str]:
    """The node ids a session with these options would run (after -m deselects)."""
    recorder = harness.inline_run("--collect-only", "--device", "cuda", *options)
    return {item.nodeid for item in recorder.getcalls("pytest_collection_finish")[0].session.items}


def test_the_two_steps_split_every_gpu_test_between_them(harness, monkeypatch) -> None:
    """On a (simulated) 2-GPU runner: the serial step takes every cuda:1 test, every multi-GPU
    test and every isolated one; the xdist step the rest; no test is in both or in neither."""
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    parallel, serial = parallel_and_serial_steps(load_workflow())
    harness.makepyfile(SPLIT_SESSION)
    everything = selected(harness)
    in_serial = selected(harness, "-m", marker_expression(serial))
    in_parallel = selected(harness, "-m", marker_expression(parallel))
    assert in_serial | in_parallel == everything and not in_serial & in_parallel
    assert {nodeid for nodeid in everything if "cuda:1" in nodeid} <= in_serial
    assert in_serial == {nodeid for nodeid in everything if "cuda:1" in nodeid or "risky" in nodeid or "two_gpus" in nodeid}


def collected_ids(*options: str) -> set[str]:
    run = warm_python.run(
        [sys.executable, "-m", "pytest", "suites", "--collect-only", "-q", "-p", "no:cacheprovider", "--device", "cuda:0,cuda:1", *options],
        cwd=REPO, timeout=600,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return {line for line in run.stdout.splitlines() if "::" in line}


def test_the_serial_step_selects_every_cuda1_test_of_the_suites() -> None:
    _, serial = parallel_and_serial_steps(load_workflow())
    # The real cuda:1, not the simulated simcuda:1 (which needs no GPU and runs in the xdist step).
    cuda1 = {nodeid for nodeid in collected_ids() if re.search(r"[\[-]cuda:1[\]-]", nodeid)}
    assert cuda1, "the suites have no cuda:1 test: the check would prove nothing"
    assert cuda1 <= collected_ids("-m", marker_expression(serial))


def steps_using(job: dict, action: str) -> list[dict]:
    """The job's steps that use `action` (owner/name), at whatever pinned commit."""
    return [step for step in job["steps"] if step.get("uses", "").partition("@")[0] == action]


def tox_environments() -> list[str]:
    return re.findall(r"^\[testenv:([\w-]+)\]", (REPO / "tox.ini").read_text(), re.M)


def test_matrix_over_releases_and_gpu_runners_includes_the_kornia_commit() -> None:
    regression = load_workflow()["jobs"]["regression"]
    releases = regression["strategy"]["matrix"]["release"]
    assert set(releases) <= set(tox_environments()) and "kornia-2837-commit" in releases
    assert regression["strategy"]["matrix"]["gpu"]
    assert "${{ matrix.gpu }}" in regression["runs-on"]
    assert regression["strategy"]["fail-fast"] is False  # one regressed job must not cancel the rest
    (upload,) = steps_using(regression, "actions/upload-artifact")
    assert upload["with"]["path"] == "reports/out/${{ matrix.release }}/"  # both steps' report dirs
    assert upload["with"]["name"] == "reports-${{ matrix.release }}-${{ matrix.gpu }}"


@pytest.mark.parametrize("path", [WORKFLOW, CPU_WORKFLOW], ids=lambda path: path.stem)
def test_final_job_builds_the_matrix_from_every_steps_results(path: Path) -> None:
    page = load_workflow(path)["jobs"]["matrix-page"]
    assert page["needs"] == "regression" and page["if"] == "always()"
    runs = [step.get("run", "") for step in page["steps"]]
    assert "python -m reports matrix all-reports/*/*/results.json -o all-reports/matrix.html" in runs
    assert [step["with"] for step in steps_using(page, "actions/download-artifact")] == [{"pattern": "reports-*", "path": "all-reports"}]


def test_the_cpu_workflow_runs_the_same_release_matrix_on_hosted_runners_for_every_pull_request() -> None:
    workflow = load_workflow(CPU_WORKFLOW)
    regression = workflow["jobs"]["regression"]
    assert regression["runs-on"] == "ubuntu-latest" and "self-hosted" not in json.dumps(workflow)
    assert "if" not in regression and workflow["on"]["pull_request"] is None  # forks included, every event type
    assert regression["strategy"]["matrix"]["release"] == load_workflow()["jobs"]["regression"]["strategy"]["matrix"]["release"]
    assert set(regression["strategy"]["matrix"]["release"]) <= set(tox_environments())
    assert regression["strategy"]["fail-fast"] is False
    (run,) = [shlex.split(step["run"]) for step in regression["steps"] if step.get("run", "").startswith("tox")]
    assert run[:4] == ["tox", "-e", "$RELEASE", "--"]
    options = run[4:]
    assert options[options.index("--device") + 1] == "cpu,sim"  # simulated and proxy evidence
    assert "--report-dir=reports/out/$RELEASE/cpu" in options
    (upload,) = steps_using(regression, "actions/upload-artifact")
    assert upload["if"] == "always()" and upload["with"]["path"] == "reports/out/${{ matrix.release }}/"
    assert regression["env"]["UV_TORCH_BACKEND"] == "cpu" and "UV_*" in (REPO / "tox.ini").read_text()


ZIZMOR = tool_of_this_python("zizmor")
needs_zizmor = pytest.mark.skipif(ZIZMOR is None, reason="zizmor not installed: python -m pip install -e . (it is a dependency)")


def zizmor(path: Path) -> subprocess.CompletedProcess:
    """zizmor's default persona, offline (no GitHub API): unpinned actions, credentials persisted
    into artifacts, template injection, dangerous triggers and the rest of its audits."""
    return subprocess.run([ZIZMOR, "--offline", "--no-progress", str(path)], capture_output=True, text=True, timeout=120, check=False)


@needs_zizmor
def test_zizmor_finds_nothing_in_the_workflows() -> None:
    done = zizmor(WORKFLOWS)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert {path.name for path in WORKFLOWS.glob("*.yml")} == {"gpu-regression.yml", "cpu-regression.yml"}


@needs_zizmor
@pytest.mark.parametrize(
    ("old", "new", "audit"),
    [
        ("actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1  # v7.0.1", "actions/checkout@v7", "unpinned-uses"),
        ("        with:\n          persist-credentials: false\n", "", "artipacked"),  # checkout's default persists them
        ('tox -e "$RELEASE"', 'tox -e "${{ github.event.pull_request.title }}"', "template-injection"),
    ],
    ids=["unpinned", "credentials", "injection"],
)
def test_zizmor_flags_each_weakness_put_back(tmp_path: Path, old: str, new: str, audit: str) -> None:
    text = CPU_WORKFLOW.read_text(encoding="utf-8")
    assert old in text
    weakened = tmp_path / CPU_WORKFLOW.name
    weakened.write_text(text.replace(old, new, 1), encoding="utf-8")
    done = zizmor(weakened)
    assert done.returncode != 0 and audit in done.stdout + done.stderr, done.stdout[-3000:] + done.stderr[-3000:]


@pytest.mark.catches("tests/runner/test_report_workflow.py::evaluate_if")
def test_fault_an_ungated_workflow_lets_a_fork_run() -> None:
    assert evaluate_if("github.event_name != 'pull_request' || github.event_name == 'pull_request'", pull_request("stranger/x"))
    with pytest.raises(AssertionError, match="unexpected syntax"):
        evaluate_if("github.event.__class__", pull_request("stranger/x"))


def distributions_installed_by(names: list[str]) -> set[str]:
    """What `pip install NAMES` brings into a fresh Python: the names and their requirements'
    closure (markers evaluated here, extras left out), read from this environment's metadata."""
    found: set[str] = set()
    pending = [canonicalize_name(name) for name in names]
    while pending:
        name = pending.pop()
        if name in found:
            continue
        found.add(name)
        for line in importlib.metadata.requires(name) or []:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                pending.append(canonicalize_name(requirement.name))
    return found


# Run `python -m reports ARGS` where only the stdlib, the checkout and the given top-level
# modules can be imported: any other import fails as it would in the matrix-page job.
ONLY_THESE_MODULES = """
import runpy, sys
allowed = set(sys.argv[1].split(",")) | set(sys.stdlib_module_names) | {"reports", "fixtures"}
class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] not in allowed:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, NotInstalled())
sys.argv = ["python -m reports", *sys.argv[2:]]
runpy.run_module("reports", run_name="__main__", alter_sys=True)
"""


def reports_command_with_only(modules: set[str], *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-c", ONLY_THESE_MODULES, ",".join(sorted(modules)), *args]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("path", [WORKFLOW, CPU_WORKFLOW], ids=lambda path: path.stem)
def test_the_matrix_page_job_installs_what_reports_matrix_and_compare_import(path: Path, tmp_path: Path) -> None:
    page = load_workflow(path)["jobs"]["matrix-page"]
    installs = [shlex.split(step["run"]) for step in page["steps"] if step.get("run", "").startswith("python -m pip install")]
    assert len(installs) == 1 and installs[0][:4] == ["python", "-m", "pip", "install"]
    distributions = distributions_installed_by(installs[0][4:])
    modules = {module for module, owners in importlib.metadata.packages_distributions().items()
               if distributions & {canonicalize_name(owner) for owner in owners}}
    results = tmp_path / "results.json"
    results.write_text(json.dumps(results_document(
        started="s", finished="f", exit_status=0, environment=ENVIRONMENT, verdicts=[], tests=[], sections={})))
    for args in (["matrix", str(results), "-o", str(tmp_path / "matrix.html")],
                 ["compare", str(results), str(results), "-o", str(tmp_path / "compare.html")],
                 ["scan", "--help"], ["acceptance", "--help"]):
        done = reports_command_with_only(modules, *args)
        assert done.returncode == 0, f"{args[0]}: {done.stderr.strip().splitlines()[-1:]}"
    assert (tmp_path / "matrix.html").is_file() and (tmp_path / "compare.html").is_file()


@pytest.mark.catches("tests/runner/test_report_workflow.py::reports_command_with_only")
def test_fault_a_module_the_job_lacks_fails_the_command(tmp_path: Path) -> None:
    done = reports_command_with_only({"pytest", "_pytest", "pluggy", "iniconfig", "pygments", "py"}, "matrix", "--help")
    assert done.returncode == 1 and "No module named 'packaging" in done.stderr


def test_a_tox_environment_on_torch_2_6_or_older_seeds_setuptools() -> None:
    """triton 3.2 (torch 2.6's) imports setuptools; torch declares it only for Python 3.12+ and
    tox-uv seeds nothing, so without it every inductor compile fails there (sam2-460 `error`)."""
    tox = configparser.ConfigParser(interpolation=None)
    tox.read(REPO / "tox.ini")
    for section in tox.sections():
        deps = [line.strip() for line in tox[section].get("deps", "").splitlines() if line.strip()]
        torch_pins = [Requirement(line) for line in deps if Requirement(line).name == "torch"]
        old = [pin for pin in torch_pins if any(Version(v) < Version("2.7") for v in re.findall(r"\d+\.\d+", str(pin.specifier)))]
        if old:
            assert "setuptools" in [Requirement(line).name for line in deps], f"[{section}] pins {old[0]} without setuptools"


@pytest.mark.parametrize(("torch_says", "status", "count"), [("2", 0, "GPU_COUNT=2"), ("0", 1, None)])
def test_the_gpu_count_step_takes_torchs_count_and_fails_on_none(tmp_path: Path, torch_says: str, status: int, count: str | None) -> None:
    """The step's script as written, with tox and nvidia-smi faked: tox's own chatter before the
    count is ignored, and a runner where torch sees no GPU fails here, not later."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nvidia-smi").write_text("#!/bin/sh\necho 'GPU 0: NVIDIA H200'\n")
    (bin_dir / "tox").write_text(f"#!/bin/sh\necho 'tox: building the environment'\necho {torch_says}\n")
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    github_env = tmp_path / "github_env"
    script = regression_steps(load_workflow())["Show the GPUs"]["run"]
    environment = {"PATH": f"{bin_dir}:/usr/bin:/bin", "RUNNER_TEMP": str(tmp_path), "GITHUB_ENV": str(github_env), "RELEASE": "current"}
    done = subprocess.run(["bash", "-e", "-c", script], capture_output=True, text=True, env=environment, check=False)
    assert done.returncode == status, done.stdout + done.stderr
    assert (github_env.read_text().strip() if github_env.exists() else None) == count
    if status:
        assert "::error::torch sees no GPU (CUDA_VISIBLE_DEVICES=unset)" in done.stdout
