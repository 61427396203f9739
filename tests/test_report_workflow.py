"""The GPU workflow cannot run here; this checks it is well-formed and has the jobs and steps the
matrix page relies on. PyYAML is not in the harness's environment, so the check reads the
block-style YAML the file is written in: indentation, keys, and the lines that matter."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

WORKFLOW = Path(__file__).resolve().parents[1] / ".github" / "workflows" / "gpu-regression.yml"
_KEY = re.compile(r"^(?P<indent> *)(?P<item>- )?(?P<key>[\w-]+):(?: (?P<value>.*))?$")


def key_paths(text: str) -> dict[str, str]:
    """'jobs.regression.runs-on' -> its value, for every mapping key (list items count as one
    more level of indentation, as YAML reads them); raises on tabs or odd indentation."""
    paths: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        assert "\t" not in line, f"line {number}: a tab"
        match = _KEY.match(line)
        if match is None:
            continue  # a list item value or a block scalar's text
        indent = len(match["indent"]) + (2 if match["item"] else 0)
        assert indent % 2 == 0, f"line {number}: indentation {indent} is not a multiple of 2"
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, match["key"]))
        paths.setdefault(".".join(key for _, key in stack), (match["value"] or "").strip())
    return paths


def test_workflow_is_block_yaml_with_balanced_expressions() -> None:
    text = WORKFLOW.read_text(encoding="utf-8")
    key_paths(text)
    assert text.count("${{") == text.count("}}"), "an unclosed ${{ expression }}"
    for expression in re.findall(r"\$\{\{(.*?)\}\}", text):
        assert re.fullmatch(r" [\w.\-]+ ", expression), f"unexpected expression ${{{{{expression}}}}}"


def test_matrix_over_releases_and_gpu_runners_runs_the_suites_with_require_gpu() -> None:
    text = WORKFLOW.read_text(encoding="utf-8")
    paths = key_paths(text)
    releases = paths["jobs.regression.strategy.matrix.release"]
    tox_envs = re.findall(r"^\[testenv:([\w-]+)\]", (WORKFLOW.parents[2] / "tox.ini").read_text(), re.M)
    assert releases.startswith("[") and set(releases.strip("[]").replace(" ", "").split(",")) <= set(tox_envs)
    assert paths["jobs.regression.strategy.matrix.gpu"].startswith("[")
    assert "${{ matrix.gpu }}" in paths["jobs.regression.runs-on"]
    assert paths["jobs.regression.strategy.fail-fast"] == "false"  # one regressed job must not cancel the rest
    assert re.search(r"run: tox -e \"\$\{\{ matrix.release \}\}\" -- --require-gpu", text)
    assert "path: reports/out/${{ matrix.release }}/" in text  # where tox.ini puts each env's reports


def test_final_job_builds_the_matrix_from_every_jobs_upload() -> None:
    text = WORKFLOW.read_text(encoding="utf-8")
    paths = key_paths(text)
    assert paths["jobs.matrix-page.needs"] == "regression" and paths["jobs.matrix-page.if"] == "always()"
    final = text[text.index("  matrix-page:") :]
    assert "uses: actions/download-artifact@v4" in final and "pattern: reports-*" in final
    assert "run: python -m reports matrix all-reports/*/results.json -o all-reports/matrix.html" in final
    assert "uses: actions/upload-artifact@v4" in final and "name: regression-matrix" in final
    assert "name: reports-${{ matrix.release }}-${{ matrix.gpu }}" in text  # what pattern reports-* downloads


@pytest.mark.catches("tests/test_report_workflow.py::key_paths")
def test_fault_key_paths_catches_bad_indentation_and_tabs() -> None:
    with pytest.raises(AssertionError, match="indentation 3"):
        key_paths("jobs:\n   build:\n")
    with pytest.raises(AssertionError, match="a tab"):
        key_paths("jobs:\n\tbuild:\n")
