"""The pytest-html report as written: title, verdict table (legend, expandable titles and details,
each bug's tests), sweeps, environment, extra columns, skip reasons, thumbnails; the same under
pytest-xdist. (What a browser shows: test_report_browser.)"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from fixtures.known_bugs.verdicts import CONTROL, EVIDENCE_KINDS, VERDICTS
from reports.pages.html import (
    VERDICTS_CSS,
    bug_tests,
    counted,
    skipped_tests_by_reason,
    sweeps_summary,
    upstream_label,
    verdict_legend,
    verdict_table,
)
from reports.run.environment import environment_rows
from reports.run.plugin_html import escaped_rows, thumbnail_strip
from tests.helpers.report_session import BUGS, NOW, OUTCOMES, run_session


def report_data(page: str) -> dict:
    """The test data pytest-html embeds for its script to draw the results table from."""
    blob = re.search(r'data-jsonblob="(.*?)"', page, re.S)
    assert blob, "no data-jsonblob in report.html"
    return json.loads(html.unescape(blob.group(1)))


def first_row(data: dict, nodeid_end: str) -> dict:
    (nodeid,) = [nodeid for nodeid in data["tests"] if nodeid.endswith(nodeid_end)]
    return data["tests"][nodeid][0]


@pytest.fixture
def written(harness: pytest.Pytester, tmp_path: Path) -> tuple[str, dict]:
    result = run_session(harness, tmp_path / "out")
    result.assert_outcomes(**OUTCOMES)
    page = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    return page, report_data(page)


def test_title_names_the_releases_and_cpu_only(written) -> None:
    page, _ = written
    title = re.search(r'<h1 id="title">(.*?)</h1>', page).group(1)
    assert re.fullmatch(r"GPU regression harness: torch \S+, torchvision \S+, kornia \S+ on CPU only", title), title


def test_verdict_table_has_one_row_per_bug_with_its_verdict_class_and_links(written) -> None:
    page, _ = written
    rows = re.findall(r'<tr class="verdict-row verdict-([\w-]+)" data-bug="([\w-]+)">', page)
    assert rows == [("reproduced", "fake-reproduced"), ("regressed", "fake-regressed"), ("fixed", "fake-fixed")]
    assert '<a href="https://example.invalid/issues/21" target="_blank" rel="noopener">issue 21</a>' in page
    assert '<a href="https://example.invalid/pull/211" target="_blank" rel="noopener">fix PR 211</a>' in page
    # pytest-html's template puts the environment first; the harness's CSS draws the verdicts above it.
    assert page.index("Known-bug verdicts") < page.index('id="results-table"') and ".summary { order: 1; }" in page


def verdict_row_of(page: str, bug_id: str) -> str:
    return re.search(rf'<tr class="verdict-row [^"]+" data-bug="{bug_id}">(.*?)</tr>', page, re.S).group(1)


def test_the_legend_is_folded_on_the_headings_line_before_the_table(written) -> None:
    page, _ = written
    heading = re.search(r'<div class="verdicts-heading"><h2>Known-bug verdicts</h2><details class="verdict-legend">(.*?)</details></div>', page, re.S)
    assert heading and page.index(heading.group(0)) < page.index('<table class="harness-table verdict-table">')
    assert "<summary>Legend: verdicts and evidence</summary>" in heading.group(1)


def test_titles_and_details_open_whole_and_each_bug_lists_its_tests(written) -> None:
    page, _ = written
    fixed = verdict_row_of(page, "fake-fixed")
    title = BUGS["fake-fixed"][0]
    assert f'<details class="bug-title"><summary title="{title}">{title}</summary></details>' in fixed
    assert re.search(r'<details class="detail"><summary><span class="detail-text">[^<]+</span></summary><div class="bug-tests">', fixed)
    # Clamped while closed only: a click shows the whole text.
    assert ".bug-title:not([open]) > summary { white-space: nowrap;" in page and "details.detail:not([open]) .detail-text {" in page
    tests = re.search(r'<div class="bug-tests"><p>(.*?)</p><ul>(.*?)</ul></div>', fixed, re.S)
    assert tests.group(1) == "5 tests: 3 passed, 2 skipped; 1 decided the verdict."
    items = re.findall(r'<li class="test-(\w+)">(.*?)</li>', tests.group(2))
    assert [outcome for outcome, _ in items] == ["passed", "passed", "passed", "skipped", "skipped"]
    decided, *others = [item for _, item in items]
    assert '<span class="evidence evidence-proxy">proxy</span> <b class="decided">decided</b> <a href="#test_fake.py::test_fixed">' in decided
    assert '<a href="#test_fake.py::test_direct%5Bcpu-threads1%5D">test_fake.py::test_direct[cpu-threads1]</a>' in others[0]
    assert "evidence-control" in others[0] and "decided" not in "".join(others)
    # A skipped test has no row to link to: its reason stands beside it.
    assert "<a " not in others[-1] and "cuda:0 requested, 0 CUDA devices visible" in others[-1]
    assert 'test_fake.py::test_reproduced' in verdict_row_of(page, "fake-reproduced")
    assert 'test_fake.py::test_fixed' not in verdict_row_of(page, "fake-reproduced")


def test_a_module_skipped_whole_is_counted_and_listed_as_pytest_counts_it(harness: pytest.Pytester, tmp_path: Path) -> None:
    harness.makepyfile(
        test_whole='import pytest\npytest.skip("this release lacks the API", allow_module_level=True)\n',
        test_some='import pytest\n\ndef test_ok():\n    pass\n\ndef test_skip():\n    pytest.skip("no GPU")\n',
    )
    result = harness.runpytest(f"--report-dir={tmp_path}")
    result.assert_outcomes(passed=1, skipped=2)
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert '<details class="skipped-tests"><summary>2 skipped tests, 2 reasons</summary>' in page
    assert "<li><code>test_whole.py</code> <span class=\"muted\">(the whole module)</span></li>" in page
    assert "1 &times; this release lacks the API" in page


def test_sweep_findings_are_summarised(written) -> None:
    page, _ = written
    section = page[page.index("<h2>Sweep findings</h2>") : page.index('class="run-count"')]
    assert "3 sweep results (callable x sweep x device x way): 1 finding, 1 inconclusive, 1 clean." in section
    assert section.index("New findings (1)") < section.index("fake.gaussian_blur2d")
    assert section.index("<summary>Inconclusive (1)</summary>") < section.index("fake.rgb_to_hsv")
    assert "fake.rotate" not in section  # clean ones are only counted


def test_environment_table_holds_the_harness_facts(written) -> None:
    _, data = written
    environment = data["environment"]
    assert environment["GPUs"] == "none visible"
    assert environment["NVIDIA driver"] == "n/a (no GPU visible)"
    assert set(environment["Packages"]) >= {"torch", "torchvision", "kornia", "sam2"}
    assert {"Python", "OS", "CPU", "CUDA runtime (torch build)", "cuDNN"} <= set(environment)


def test_result_rows_carry_bug_device_size_threads_evidence_attempts(written) -> None:
    _, data = written
    regressed = "".join(first_row(data, "test_regressed")["resultsTableRow"])
    assert '<td class="col-known_bug">fake-regressed</td>' in regressed
    assert '<td class="col-evidence">proxy</td>' in regressed and '<td class="col-attempts">7</td>' in regressed
    assert '<td class="col-size">64x64</td>' in "".join(first_row(data, "test_reproduced")["resultsTableRow"])
    control = "".join(first_row(data, "test_direct[cpu-threads2]")["resultsTableRow"])
    assert '<td class="col-device">cpu</td>' in control and '<td class="col-threads">2</td>' in control
    assert '<td class="col-evidence">control</td>' in control


def test_skips_are_grouped_by_reason_and_expected_failures_open_with_theirs(written) -> None:
    page, data = written
    assert not [nodeid for nodeid, rows in data["tests"].items() if "cuda:0" in nodeid and rows]  # no skip row
    group = re.search(r"<details class=\"skip-reason\"><summary>(\d+) &times; cuda:0 requested, 0 CUDA devices visible</summary><ul>(.*?)</ul>", page)
    assert group and int(group.group(1)) == len(re.findall(r"<li>", group.group(2))) >= 2, page[-3000:]
    assert "test_direct[cuda:0-threads1]" in group.group(2)
    assert first_row(data, "test_reproduced")["log"].startswith(
        '<span class="outcome-reason">Expected failure: fake-reproduced reproduced as known on pytest'
    )


def test_attached_images_become_one_strip_of_embedded_thumbnails(written) -> None:
    _, data = written
    extras = first_row(data, "test_regressed")["extras"]
    assert [extra["format_type"] for extra in extras] == ["html"]
    strip = extras[0]["content"]
    assert re.findall(r'<img src="data:image/png;base64,[A-Za-z0-9+/=]+" alt="(\w+)">', strip) == [
        "source",
        "decoded",
        "difference",
    ]


def test_page_fetches_nothing(written) -> None:
    page, _ = written
    assert not re.search(r'<(script|img|link|iframe)[^>]+(src|href)="(https?:)?//', page)


def test_xdist_run_writes_the_same_rows_and_verdicts(harness: pytest.Pytester, tmp_path: Path) -> None:
    serial = run_session(harness, tmp_path / "serial")
    # One worker is enough to prove the data crosses from worker to controller (and a second costs
    # another torch import, several seconds).
    parallel = run_session(harness, tmp_path / "parallel", NOW, "-n", "1", subprocess=True)
    parallel.assert_outcomes(**OUTCOMES)
    pages = {name: (tmp_path / name / "report.html").read_text(encoding="utf-8") for name in ("serial", "parallel")}
    data = {name: report_data(page) for name, page in pages.items()}
    assert sorted(data["parallel"]["tests"]) == sorted(data["serial"]["tests"])
    assert all(len(rows) <= 1 for rows in data["parallel"]["tests"].values())  # nothing duplicated (a skip has no row)
    verdict_rows = {name: re.findall(r'<tr class="verdict-row [^"]+" data-bug="[^"]+">', page) for name, page in pages.items()}
    assert verdict_rows["parallel"] == verdict_rows["serial"] and len(verdict_rows["serial"]) == 3
    regressed = "".join(first_row(data["parallel"], "test_regressed")["resultsTableRow"])
    assert '<td class="col-attempts">7</td>' in regressed  # properties made it back from the worker
    assert first_row(data["parallel"], "test_regressed")["extras"][0]["content"].count("<img") == 3
    assert serial.ret == parallel.ret == pytest.ExitCode.TESTS_FAILED


# Pure pieces.


def test_verdict_table_escapes_what_it_shows() -> None:
    record = {
        "bug_id": "x-1", "title": "<script>alert(1)</script>", "verdict": "fixed", "evidence": None,
        "package": "kornia", "installed": None, "affected_range": "<0.7.2", "affected": None,
        "decided_by": "kornia not installed", "first_fixed": "0.7.2", "issue": "https://e.invalid/i?a=1&b=2",
        "fix": "https://e.invalid/p/2", "detail": "a & b", "tests": [],
    }
    table = verdict_table([record])
    assert "<script>" not in table and "&lt;script&gt;" in table
    assert 'href="https://e.invalid/i?a=1&amp;b=2"' in table and "kornia not installed" in table
    assert "cannot tell" in table and "a &amp; b" in table


def test_an_error_row_is_red_and_lists_the_tests_that_errored_and_a_disagreement_shows() -> None:
    record = {
        "bug_id": "x-1", "title": "t", "verdict": "error", "evidence": None, "package": "sam2", "installed": "1.2.0",
        "affected_range": "<1.1.0", "affected": False, "decided_by": "version 1.2.0",
        "disagreement": "probe p:f says the fix is absent, against version 1.2.0", "first_fixed": "1.1.0",
        "issue": "https://e.invalid/i/1", "fix": "https://e.invalid/p/2", "detail": "1 test(s) errored: TypeError: <x>",
        "tests": ["suites/a.py::test_b[<cpu>]"],
    }
    table = verdict_table([record])
    assert 'class="verdict-row verdict-error"' in table and '<span class="verdict verdict-error">error</span>' in table
    assert '<ul class="errored-tests"><li><code>suites/a.py::test_b[&lt;cpu&gt;]</code></li></ul>' in table
    assert '<div class="disagreement">probe p:f says the fix is absent, against version 1.2.0</div>' in table
    css = VERDICTS_CSS.read_text()
    assert ".verdict.verdict-error {" in css and "tr.verdict-error td" in css


def test_verdict_table_labels_the_evidence_kind() -> None:
    record = {
        "bug_id": "kornia-2791", "title": "t", "verdict": "reproduced", "evidence": "simulated",
        "package": "kornia", "installed": "0.7.1", "affected_range": "<0.7.2", "affected": True,
        "decided_by": "version 0.7.1", "first_fixed": "0.7.2", "issue": "https://e.invalid/i", "fix": "https://e.invalid/p",
        "detail": "held tensors not on cuda:1 after .to(): pl", "tests": [],
    }
    assert '<span class="evidence evidence-simulated">simulated</span>' in verdict_table([record])
    assert ".evidence.evidence-simulated" in VERDICTS_CSS.read_text(encoding="utf-8")


def test_sweeps_summary_handles_absence_and_odd_shapes() -> None:
    assert "No sweep results" in sweeps_summary(None)
    assert "No sweep results" in sweeps_summary({"not": "a list"})
    mixed = sweeps_summary(
        [
            {"sweep": "s", "callable": "f", "device": "cpu", "result": "finding", "detail": "d", "triaged": "known <x>"},
            {"callable": "g", "outcome": "finding", "detail": "new"},
            {"callable": "h", "kind": "inconclusive", "detail": "meta"},
            {"sweep": "device", "callable": "k.convolve2d", "device": "", "result": "unswept", "detail": "no arguments for it"},
            "junk",
        ]
    )
    assert "4 sweep results (callable x sweep x device x way): 2 findings, 1 inconclusive, 0 clean, 1 unswept." in mixed
    assert mixed.index("New findings (1)") < mixed.index("<code>g</code>") < mixed.index("Triaged findings (1)")
    assert mixed.index("Triaged findings (1)") < mixed.index("triaged: known &lt;x&gt;") < mixed.index("Inconclusive (1)")
    assert mixed.index("Inconclusive (1)") < mixed.index("Not swept (1)") < mixed.index("<code>k.convolve2d</code>")
    clean = sweeps_summary([{"callable": "h", "result": "clean"}])
    assert "No new finding." in clean and "<table" not in clean
    way = sweeps_summary([{"callable": "K.RandomJPEG", "device": "simcuda:1", "way": "module not moved", "result": "finding"}])
    assert '<code>K.RandomJPEG</code><div class="muted">module not moved</div>' in way and "simcuda:1" in way


def test_upstream_links_say_what_they_link() -> None:
    assert upstream_label("https://github.com/pytorch/vision/issues/8587") == "issue 8587"
    assert upstream_label("https://github.com/pytorch/vision/pull/9606/") == "PR 9606"
    assert upstream_label("https://github.com/pytorch/vision/pull/8929", "fix") == "fix PR 8929"
    assert upstream_label("https://github.com/kornia/kornia/commit/d6e1485aa0b1", "fix") == "fix commit d6e1485"
    assert upstream_label("https://example.invalid/12") == "12"


def test_the_legend_explains_every_verdict_and_evidence_kind() -> None:
    legend = verdict_legend()
    shown = re.findall(r'<dt><span class="verdict verdict-([\w-]+)">', legend)
    assert sorted(shown) == sorted(VERDICTS)
    assert re.findall(r'<dt><span class="evidence evidence-(\w+)">', legend) == [*EVIDENCE_KINDS, CONTROL]  # strongest first
    assert "a release before the bug" in legend and "decides nothing" in legend and "docs/reference/verdicts.md" in legend


def test_counts_agree_with_their_nouns() -> None:
    assert (counted(1, "finding"), counted(7, "finding"), counted(0, "test")) == ("1 finding", "7 findings", "0 tests")
    assert "<summary>1 skipped test, 1 reason</summary>" in skipped_tests_by_reason({"no GPU": ["t.py::a"]})
    assert "1 finding, 0 inconclusive, 0 clean" in sweeps_summary([{"callable": "f", "result": "finding"}])
    assert bug_tests([], ()) == '<p class="bug-tests muted">No test of this bug ran.</p>'


def test_a_bug_test_list_escapes_and_links_by_node_id() -> None:
    test = {"nodeid": 'suites/a/t.py::test_x[<"q">]', "outcome": "failed", "message": "boom <b>", "properties": {}}
    listed = bug_tests([test], ())
    assert '<a href="#suites/a/t.py::test_x%5B%3C%22q%22%3E%5D">t.py::test_x[&lt;&quot;q&quot;&gt;]</a>' in listed
    assert '<span class="muted">boom &lt;b&gt;</span>' in listed and "evidence" not in listed


def test_environment_rows_name_each_gpu_and_ci_variable() -> None:
    environment = {
        "packages": {"torch": "2.6.0", "sam2": None}, "python": "3.11.7", "implementation": "cpython",
        "platform": "Linux", "cpu": "x86_64", "cpu_count": 16, "torch_cuda_build": "12.4", "cudnn": 90100,
        "nvidia_driver": "550.54", "cuda_visible_devices": "0,1",
        "gpus": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "memory_gib": 79.1, "capability": "9.0"},
                 {"index": 1, "name": "NVIDIA <A100>", "memory_gib": 39.4, "capability": "8.0"}],
        "ci": {"GITHUB_RUN_ID": "42"},
    }
    rows = escaped_rows(environment_rows(environment))
    assert rows["GPUs"] == {
        "cuda:0": "NVIDIA H100 80GB HBM3, 79.1 GiB, compute capability 9.0",
        "cuda:1": "NVIDIA &lt;A100&gt;, 39.4 GiB, compute capability 8.0",
    }
    assert rows["Packages"]["sam2"] == "not installed" and rows["cuDNN"] == "90100"
    assert rows["CI"] == {"GITHUB_RUN_ID": "42"} and rows["CUDA_VISIBLE_DEVICES"] == "0,1"
    assert "xdist workers" not in rows  # a serial run


def test_environment_rows_show_precision_and_what_each_worker_saw() -> None:
    environment = {
        "packages": {}, "python": "3.11.7", "implementation": "cpython", "platform": "Linux", "cpu": "x86_64",
        "cpu_count": 16, "torch_cuda_build": "13.2", "cudnn": 91000, "nvidia_driver": "580.1", "cuda_visible_devices": None,
        "gpus": [{"index": 0, "name": "NVIDIA H100", "uuid": "GPU-aa", "memory_gib": 79.1, "capability": "9.0"}],
        "fp32_precision": {"generic": "none", "cuda.matmul": "none", "cudnn.conv": "tf32", "cudnn.rnn": "tf32"},
        "workers": {
            "gw0": {"cuda_visible_devices": "0", "gpus": ["0: NVIDIA H100 (GPU-aa)"]},
            "gw1": {"cuda_visible_devices": "1", "gpus": [], "crashed": "Not properly terminated"},
            "gw2": {"cuda_visible_devices": "1", "gpus": ["1: NVIDIA H100 (GPU-bb)"]},
        },
        "ci": {},
    }
    rows = environment_rows(environment)
    assert rows["GPUs"] == {"cuda:0": "NVIDIA H100, 79.1 GiB, compute capability 9.0, GPU-aa"}
    assert rows["fp32 precision (session default)"]["cudnn.conv"] == "tf32"
    assert rows["xdist workers"] == {
        "gw0": "CUDA_VISIBLE_DEVICES=0; saw 0: NVIDIA H100 (GPU-aa)",
        "gw1": "CUDA_VISIBLE_DEVICES=1; reported no GPU; crashed: Not properly terminated",
        "gw2": "CUDA_VISIBLE_DEVICES=1; saw 1: NVIDIA H100 (GPU-bb)",
    }


def test_thumbnail_strip_captions_each_image() -> None:
    strip = thumbnail_strip([{"content": "AAAA", "mime_type": "image/png", "name": "a<b"}])
    assert strip == (
        '<div class="thumbnails"><figure><img src="data:image/png;base64,AAAA" alt="a&lt;b">'
        "<figcaption>a&lt;b</figcaption></figure></div>"
    )


def test_a_collection_error_still_gives_a_report(harness, tmp_path) -> None:
    # A suite whose library fails to import reaches pytest-html as a CollectReport.
    harness.makepyfile(test_broken="import a_library_that_is_not_installed", test_fine="def test_ok():\n    pass\n")
    result = harness.runpytest(f"--report-dir={tmp_path}", "--continue-on-collection-errors")
    result.assert_outcomes(passed=1, errors=1)
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    assert "a_library_that_is_not_installed" in (tmp_path / "report.html").read_text()
