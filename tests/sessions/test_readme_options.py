"""Every option of the harness's options table in docs/reference/options.md (its `pytest` section),
typed as that page writes it (a value after a space, no path after it), writes its reports. That
form is what a newcomer types, and the one pytest's first pass over the arguments misreads: it takes
the value for a path, finds none, and loads the conftests of the root's `test*` folders, the
self-tests' among them. A conftest there that switched the reports off for the whole process at import
left `pytest --bug kornia-2791` with no report. And where the value is an existing directory outside
the checkout (`--report-dir /ci/out`, the natural CI use), pytest looked for its configuration from
that directory, found none, and never declared the harness's options ("unrecognized arguments"):
harness_command_line.py repairs it, so each spaced form is also run with such a directory as its
value.

The commands run in a copy of the checkout whose suites/ holds two quick tests (the options, not
the suites, are under test), so the real checkout and its reports/out stay as they were.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from reports.run.plugin_results import SELF_TEST_ENV
from tests.conftest import REPO
from tests.helpers import warm_python

OPTIONS_PAGE = REPO / "docs" / "reference" / "options.md"
HARNESS_OPTIONS = "\n## `pytest`: the harness's options\n"  # the heading of the table run here
REPORT_FILES = {"report.html", "results.json", "junit.xml"}
# The value each form of the options page is typed with; a form the page adds without one here fails
# test_every_readme_form_has_a_value, so the table and this test move together.
VALUES = {
    "--device LIST": "cpu",
    "--device simcuda:N": "simcuda:1",
    "--threads LIST": "1,2",
    "--race-budget N[,Ss]": "2,5s",
    "--seed N": "3",
    "--hypothesis-profile NAME": "dev",
    "--bug ID": "kornia-2791",
    "--bug-registry PATH": "fixtures/known_bugs/bugs.toml",
    "--history URL=PATH": f"https://github.com/kornia/kornia={REPO}",  # a history that is there
    "--sweep-allowlist PATH": "suites/kornia_sweeps/allowlist.toml",
    "--report-dir DIR": "elsewhere",
    "-m min_cuda_devices": "min_cuda_devices",
    "-n N": "2",
    "--timeout S": "60",
}
# Options whose run, by design, writes no reports or stops before the tests (checked apart).
NO_REPORTS = {"--no-reports", "--list-bugs", "--require-gpu"}
QUICK_SUITE = """
import pytest

@pytest.mark.known_bug("kornia-2791", evidence="proxy")
def test_tied_to_a_bug():
    pass

def test_on_each_device(device):
    pass
"""


def readme_option_forms(readme: str = OPTIONS_PAGE.read_text(encoding="utf-8")) -> list[str]:
    """The backticked option forms of the harness's options table's first column (docs/reference/options.md, the
    `pytest` section): `--device LIST`, `--bug-registry=PATH`."""
    table = readme.split(HARNESS_OPTIONS, 1)[1].split("\n## ", 1)[0]
    forms: list[str] = []
    for row in re.findall(r"^\| (.+?) \|", table, re.M)[2:]:
        forms += [form for form in re.findall(r"`([^`]+)`", row) if form.startswith("-")]
    return forms


def option_name(form: str) -> str:
    return re.split(r"[ =]", form, maxsplit=1)[0]


def as_typed(form: str) -> list[str]:
    """The command-line words of one form of the options page, its placeholder replaced by its value and the
    page's separator kept: `--device LIST` -> ["--device", "cpu"]; `--bug-registry=PATH` -> one word."""
    name = option_name(form)
    if name == form:
        return [name]
    return [name, VALUES[form]] if form[len(name)] == " " else [f"{name}={VALUES[form]}"]


def test_every_readme_form_has_a_value() -> None:
    forms = readme_option_forms()
    assert len(forms) >= 15, f"the Options table was not found or shrank: {forms}"
    untried = [form for form in forms if option_name(form) != form and form not in VALUES]
    assert not untried, f"give these options-page forms a value in VALUES: {untried}"


@pytest.fixture(scope="module")
def checkout_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tracked files of the checkout, with suites/ reduced to one quick test file (the sweeps'
    allow-list stays: it is read at start-up)."""
    listed = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=False)
    if listed.returncode != 0:
        pytest.skip(f"not a git checkout: {listed.stderr.strip()}")
    copy = tmp_path_factory.mktemp("checkout")
    for name in listed.stdout.splitlines():
        if name.startswith("suites/") and name != "suites/kornia_sweeps/allowlist.toml":
            continue
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, copy / name)
    (copy / "suites" / "test_quick.py").write_text(QUICK_SUITE, encoding="utf-8")
    return copy


def run_pytest(copy: Path, words: list[str]) -> subprocess.CompletedProcess:
    environment = {key: value for key, value in os.environ.items() if key != SELF_TEST_ENV}
    shutil.rmtree(copy / "reports" / "out", ignore_errors=True)
    shutil.rmtree(copy / "elsewhere", ignore_errors=True)
    return warm_python.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *words], cwd=copy, env=environment, timeout=300)


@pytest.mark.parametrize("form", [form for form in readme_option_forms() if option_name(form) not in NO_REPORTS])
def test_readme_option_as_written_writes_every_report(checkout_copy: Path, form: str) -> None:
    words = as_typed(form)
    done = run_pytest(checkout_copy, words)
    assert done.returncode == 0, f"pytest {' '.join(words)}: exit {done.returncode}\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
    folder = checkout_copy / ("elsewhere" if option_name(form) == "--report-dir" else "reports/out")
    written = {path.name for path in folder.iterdir()} if folder.is_dir() else set()
    assert REPORT_FILES <= written, f"pytest {' '.join(words)} wrote {sorted(written)} in {folder}"


@pytest.mark.parametrize("form", [form for form in readme_option_forms() if option_name(form) != form and form[len(option_name(form))] == " "])
def test_readme_spaced_option_takes_an_existing_directory_outside_the_checkout_as_its_value(checkout_copy: Path, tmp_path: Path, form: str) -> None:
    """The directory is the option's value, never a test location: --report-dir writes there, any
    other option rejects it with its own one-line usage error naming the option and the value."""
    outside = tmp_path / "ci-out"
    outside.mkdir()
    done = run_pytest(checkout_copy, [option_name(form), str(outside)])
    output = done.stdout + done.stderr
    assert "unrecognized arguments" not in output and "Traceback" not in output, output[-3000:]
    if option_name(form) == "--report-dir":
        assert done.returncode == 0, output[-3000:]
        assert REPORT_FILES <= {path.name for path in outside.iterdir()}
        assert f"rootdir: {checkout_copy}" in done.stdout
    else:
        assert done.returncode == pytest.ExitCode.USAGE_ERROR, output[-3000:]
        error = next(line for line in output.splitlines() if str(outside) in line)
        assert option_name(form) in error, error


def test_no_reports_list_bugs_and_require_gpu_as_written(checkout_copy: Path) -> None:
    assert {option_name(form) for form in readme_option_forms()} >= NO_REPORTS
    done = run_pytest(checkout_copy, ["--no-reports"])
    assert done.returncode == 0 and not (checkout_copy / "reports" / "out").exists(), done.stdout[-2000:]
    done = run_pytest(checkout_copy, ["--list-bugs"])
    assert done.returncode == 0 and "kornia-2791" in done.stdout, done.stdout[-2000:]
    done = run_pytest(checkout_copy, ["--require-gpu"])
    if "CUDA device" in done.stdout and done.returncode == 1:
        assert "--require-gpu: no CUDA device is visible" in done.stdout
    else:  # a machine with a GPU: the session runs and writes its reports
        assert done.returncode == 0, done.stdout[-2000:]
