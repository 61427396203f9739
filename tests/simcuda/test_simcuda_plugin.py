"""`pytest --simcuda` on peer-style suites, each in a fresh pytest process as a peer project runs
it: kornia's convention (a `device` fixture from a `--device` option) and torchvision's (device
parametrizations and skips computed at collection from `torch.cuda.is_available()`). Each suite
holds a clean test, a real device bug, a planted allocation on cuda:0 made by library code during
the cuda:1 test, and a planted refusal the test catches. Without `--simcuda` nothing changes."""

from __future__ import annotations

import json
import re
from xml.etree import ElementTree

import _pytest.nodes
import pytest
import torch

# Library code under test, shared by both suites: `scaled` is right on every device but builds
# its table on the default GPU first (the kornia-2791 shape), which only the allocation log sees.
PEER_LIBRARY = '''
import torch


def default_table():
    return torch.ones(3, device="cuda:0")


def scaled(x):
    table = default_table() if torch.cuda.is_available() else torch.ones(3)
    return x * table.to(x.device)


def shifted(x):
    return x + torch.ones(3)
'''
def simcuda_results(pytester: pytest.Pytester) -> dict[str, str]:
    """Each test's outcome as the session's simcuda report (simcuda-report.json) records it."""
    return json.loads((pytester.path / "simcuda-report.json").read_text())["results"]


# One body per case, shared by both conventions; `device` is what the convention hands over.
CASES = '''
def test_clean(device):
    x = torch.rand(3, device=device)
    assert (x * 2).device == torch.device(device) if str(device) != "cuda" else (x * 2).is_cuda


def test_device_mismatch_is_a_real_failure(device):
    peerlib.shifted(torch.rand(3, device=device))


def test_foreign_allocation_fails_naming_op_and_caller(device):
    assert torch.equal(peerlib.scaled(torch.ones(3, device=device)).cpu(), torch.ones(3))


def test_caught_refusal_is_a_skip_never_a_pass(device):
    try:
        torch.cuda.CUDAGraph()
    except Exception:
        pass
'''
KORNIA_CONFTEST = '''
import pytest
import torch

TEST_DEVICES = {"cpu": torch.device("cpu")}


def pytest_addoption(parser):
    parser.addoption("--device", default="cpu")


def pytest_generate_tests(metafunc):
    if "device_name" in metafunc.fixturenames:
        metafunc.parametrize("device_name", metafunc.config.getoption("--device").split(","))


@pytest.fixture
def device(device_name):
    return TEST_DEVICES[device_name]
'''
TORCHVISION_CONFTEST = '''
import pytest
import torch


def pytest_configure(config):
    config.addinivalue_line("markers", "needs_cuda: needs a CUDA device")


def pytest_collection_modifyitems(items):
    for item in items:
        if item.get_closest_marker("needs_cuda") is not None and not torch.cuda.is_available():
            item.add_marker(pytest.mark.skip(reason="CUDA not available"))


def cpu_and_cuda():
    return ("cpu", pytest.param("cuda", marks=pytest.mark.needs_cuda))
'''
TORCHVISION_TESTS = '''
import pytest
import torch

import peerlib
from conftest import cpu_and_cuda

pytestmark = pytest.mark.parametrize("device", cpu_and_cuda())

''' + CASES + '''

@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_only_at_collection(device):
    assert torch.zeros(2).cuda().device == torch.device("cuda:1")
'''
KORNIA_TESTS = "import torch\n\nimport peerlib\n" + CASES


@pytest.fixture(params=["kornia", "torchvision"])
def peer(request: pytest.FixtureRequest, pytester: pytest.Pytester) -> str:
    conftest, tests = {"kornia": (KORNIA_CONFTEST, KORNIA_TESTS), "torchvision": (TORCHVISION_CONFTEST, TORCHVISION_TESTS)}[request.param]
    pytester.makeconftest(conftest)
    pytester.makepyfile(peerlib=PEER_LIBRARY, test_peer=tests)
    pytester.makeini("[pytest]\npythonpath = .\n")
    return request.param


def outcomes_by_test(result: pytest.RunResult) -> dict[str, str]:
    """test name (without parameters) and its parameter -> PASSED / FAILED / SKIPPED, from -rA."""
    found = {}
    for line in result.outlines:
        if match := re.match(r"(PASSED|FAILED|SKIPPED|ERROR) (?:\[\d+\] )?test_peer\.py:{0,2}(?:\d+:)?:?(\w+)\[?([\w:]*)\]?", line):
            found[f"{match[2]}[{match[3]}]"] = match[1]
    return found


def passed_and_failed(result: pytest.RunResult) -> dict[str, str]:
    """node id -> PASSED / FAILED, from -rA's summary lines."""
    return {line.split(" ")[1]: line.split(" ")[0] for line in result.outlines if line.startswith(("PASSED ", "FAILED "))}


def test_simcuda_runs_a_peer_suite_on_the_simulated_cuda1(peer: str, pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--simcuda", "-rA", "-p", "no:cacheprovider", "--junitxml=junit.xml")
    text = result.stdout.str()
    report = json.loads((pytester.path / "simcuda-report.json").read_text())
    # The summary, before pytest's own last line.
    assert "simcuda: the simulated CUDA device" in text
    assert text.index("tests run on the simulated cuda:1") < text.rindex(" in ")
    simulated = "cuda" if peer == "torchvision" else ""
    clean = [name for name, outcome in report["results"].items() if "test_clean" in name]
    assert clean and all(report["results"][name] == "passed" for name in clean), report["results"]
    # A real device bug fails as on a GPU, with PyTorch's text.
    assert "Expected all tensors to be on the same device" in text
    mismatch = [outcome for name, outcome in report["results"].items() if "device_mismatch" in name]
    assert "failed" in mismatch
    # The planted allocation on cuda:0: a failure naming the op and its caller outside torch.
    foreign = [entry for entry in report["foreign_allocations"] if "test_foreign_allocation" in entry["test"]]
    assert foreign, report
    (allocation,) = foreign[0]["allocations"][:1]
    assert allocation["device"] == "cuda:0" and allocation["op"] == "torch.ones"
    assert re.search(r"peerlib\.py:\d+ in default_table$", allocation["caller"]), allocation
    assert re.search(
        r"simcuda: 1 allocation\(s\) on a device the test never asked for: torch\.ones \[3\] on cuda:0 at \S*peerlib\.py:\d+ in default_table",
        text,
    )
    assert all(report["results"][entry["test"]] == "failed" for entry in foreign)
    # The planted refusal, caught by the test: a skip naming the feature, never a pass.
    refused = [name for name in report["results"] if "caught_refusal" in name]
    assert refused and all(report["results"][name] == "refused" for name in refused)
    # ... and in pytest's own outcome, which a user's summary and junit count: a skip, never a pass.
    cases = ElementTree.parse(pytester.path / "junit.xml").iter("testcase")
    by_pytest = {case.get("name"): [child.tag for child in case if child.tag in ("failure", "error", "skipped")] for case in cases}
    assert {str(outcome) for name, outcome in by_pytest.items() if name.startswith("test_caught_refusal")} == {"['skipped']"}, by_pytest
    assert report["refused_by_feature"] == {"CUDA graphs (torch.cuda.CUDAGraph)": len(refused)}
    assert "simulated CUDA cannot run this: CUDA graphs (torch.cuda.CUDAGraph)" in text
    if simulated:  # collected at collection time from torch.cuda.is_available(): not skipped
        assert report["results"]["test_peer.py::test_cuda_only_at_collection[cuda]"] == "passed"
        assert report["results"]["test_peer.py::test_clean[cuda]"] == "passed"
    assert report["devices"] == ["cuda:1"]
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_without_simcuda_nothing_changes(peer: str, pytester: pytest.Pytester) -> None:
    if peer == "torchvision" and torch.cuda.is_available():
        pytest.skip("torchvision's peer tests skip their CUDA cases only on a machine without a GPU; one is visible here")
    result = pytester.runpytest_subprocess("-rA", "-p", "no:cacheprovider")
    text = result.stdout.str()
    assert "simulated CUDA" not in text and not (pytester.path / "simcuda-report.json").exists()
    if peer == "torchvision":  # the CUDA cases are skipped at collection, as on any CPU machine
        assert "CUDA not available" in text and "needs CUDA" in text
    assert "Expected all tensors to be on the same device" not in text
    result.assert_outcomes(passed=4, skipped=0 if peer == "kornia" else 6)


def test_report_only_lists_the_foreign_allocation_without_failing(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(KORNIA_CONFTEST)
    pytester.makepyfile(peerlib=PEER_LIBRARY, test_peer=KORNIA_TESTS)
    pytester.makeini("[pytest]\npythonpath = .\n")
    result = pytester.runpytest_subprocess(
        "--simcuda", "--simcuda-foreign=report", "--simcuda-device=cuda:0", "-p", "no:cacheprovider",
        "-k", "foreign", "--simcuda-report=elsewhere.json",
    )
    # On cuda:0 the table is made on the test's own device: nothing foreign, a pass.
    result.assert_outcomes(passed=1)
    report = json.loads((pytester.path / "elsewhere.json").read_text())
    assert report["devices"] == ["cuda:0"] and report["foreign_allocations"] == []
    result = pytester.runpytest_subprocess("--simcuda", "--simcuda-foreign=report", "-p", "no:cacheprovider", "-k", "foreign")
    result.assert_outcomes(passed=1)
    report = json.loads((pytester.path / "simcuda-report.json").read_text())
    assert [entry["test"] for entry in report["foreign_allocations"]] == ["test_peer.py::test_foreign_allocation_fails_naming_op_and_caller[cpu]"]


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("--simcuda-device=cpu", "--simcuda-device: 'cpu' is not a CUDA device with an index (e.g. cuda:1)"),
        ("--simcuda-report=.", "--simcuda-report: {path} is a directory; give the JSON file's path"),
        ("--simcuda-device=cuda:128", "--simcuda-device: 'cuda:128': a CUDA device index is 0 to 127"),  # torch wraps it to -128
        ("--simcuda-report=", "--simcuda-report is empty; give the JSON file's path"),
    ],
)
def test_bad_simcuda_input_is_a_one_line_usage_error(pytester: pytest.Pytester, option: str, message: str) -> None:
    pytester.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    result = pytester.runpytest_subprocess("--simcuda", option, "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message.format(path=pytester.path / ".") in result.stderr.str()
    assert "Traceback" not in result.stderr.str()


# A test's own `@pytest.mark.parametrize("device", [...])` (torchvision's convention) names the
# device it wants: its "cpu" cases stay on the CPU under --simcuda, its "cuda" cases run on the
# simulated device, and a real device bug in the CUDA case still fails (the twin).
DIRECT_DEVICE_PARAMETRIZATION = '''
import pytest
import torch


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_runs_where_its_parameter_says(device):
    assert device in ("cpu", "cuda"), device
    assert torch.zeros(2, device=device).device.type == device


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_a_device_bug_fails_on_cuda_only(device):
    assert (torch.rand(3, device=device) + torch.ones(3)).shape == (3,)
'''


def test_a_tests_own_device_parametrization_is_kept(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_direct=DIRECT_DEVICE_PARAMETRIZATION)
    result = pytester.runpytest_subprocess("--simcuda", "-rA", "-p", "no:cacheprovider")
    outcomes = passed_and_failed(result)
    assert outcomes == {
        "test_direct.py::test_runs_where_its_parameter_says[cpu]": "PASSED",
        "test_direct.py::test_runs_where_its_parameter_says[cuda]": "PASSED",
        "test_direct.py::test_a_device_bug_fails_on_cuda_only[cpu]": "PASSED",
        "test_direct.py::test_a_device_bug_fails_on_cuda_only[cuda]": "FAILED",
    }, result.stdout.str()[-3000:]
    result.stdout.fnmatch_lines(["*Expected all tensors to be on the same device*"])


INDIRECT_DEVICE_PARAMETRIZATION = {
    "conftest": """
import pytest
import torch


@pytest.fixture
def device(request):
    return torch.device(getattr(request, "param", "cpu"))
""",
    "test_indirect": """
import pytest
import torch


@pytest.mark.parametrize(("device", "asked"), [("cpu", "cpu"), ("cuda:0", "cuda:0")], indirect=["device"])
def test_runs_where_its_parameter_says(device, asked):
    assert torch.ones(2, device=device).device == torch.device(asked)


def test_without_a_parameter_gets_the_simulated_device(device):
    assert torch.ones(2, device=device).device == torch.device("cuda:1")
""",
}


def test_a_tests_indirect_device_parametrization_is_kept(pytester: pytest.Pytester) -> None:
    """Both cases ran on the simulated cuda:1: the "cpu" one left the CPU it asked for."""
    pytester.makeconftest(INDIRECT_DEVICE_PARAMETRIZATION["conftest"])
    pytester.makepyfile(test_indirect=INDIRECT_DEVICE_PARAMETRIZATION["test_indirect"])
    result = pytester.runpytest_subprocess("--simcuda", "-rA", "-p", "no:cacheprovider")
    assert passed_and_failed(result) == {
        "test_indirect.py::test_runs_where_its_parameter_says[cpu-cpu]": "PASSED",
        "test_indirect.py::test_runs_where_its_parameter_says[cuda:0-cuda:0]": "PASSED",
        "test_indirect.py::test_without_a_parameter_gets_the_simulated_device": "PASSED",
    }, result.stdout.str()[-3000:]


SHARED_DEVICE_FIXTURE = """
import pytest
import torch


@pytest.fixture(scope="session")
def device(request):
    return getattr(request, "param", {answer!r})
"""
SHARED_DEVICE_TESTS = """
import pytest
import torch


def test_placement(device):
    assert torch.ones(1, device=device).device.type == torch.device(device).type


@pytest.mark.parametrize("device", ["cpu"], indirect=True)
def test_asks_for_the_cpu_itself(device):
    assert torch.ones(1, device=device).device == torch.device("cpu")
"""


@pytest.mark.parametrize(
    ("answer", "outcomes"),
    [("cpu", {"skipped": 1, "passed": 1}), ("cuda:0", {"skipped": 1, "passed": 1}), ("cuda", {"passed": 2}), (0, {"passed": 2})],
)
def test_a_device_fixture_shared_across_tests_is_refused_where_it_answers_another_device(
    pytester: pytest.Pytester, answer: object, outcomes: dict[str, int]
) -> None:
    """A session-scoped fixture answering "cpu" ran the test on the CPU, counted as a simulated
    pass: its cached value cannot follow the simulation. "cuda" is the simulated device; a value
    that is no device name (an ordinal) is the project's business; a case the test parametrizes
    `indirect` asks for its device itself."""
    pytester.makeconftest(SHARED_DEVICE_FIXTURE.format(answer=answer))
    pytester.makepyfile(test_shared=SHARED_DEVICE_TESTS)
    result = pytester.runpytest_subprocess("--simcuda", "-rs", "-p", "no:cacheprovider")
    result.assert_outcomes(**outcomes)
    if "skipped" in outcomes:
        result.stdout.fnmatch_lines([f"*simulated CUDA cannot run this: a session-scoped `device` fixture answering {answer}*"])


def test_an_indirect_case_wins_over_the_fixtures_own_params(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        "import pytest\n\n\n@pytest.fixture(params=['cpu', 'cuda'])\ndef device(request):\n    return request.param\n"
    )
    pytester.makepyfile(test_params=SHARED_DEVICE_TESTS.replace("def test_placement", "def _placement"))
    result = pytester.runpytest_subprocess("--simcuda", "-rA", "-p", "no:cacheprovider")
    assert passed_and_failed(result) == {"test_params.py::test_asks_for_the_cpu_itself[cpu]": "PASSED"}, result.stdout.str()[-3000:]


TEARDOWN_ALLOCATION = {
    "conftest": """
import pytest
import torch


def default_scratch():
    return torch.zeros(2, device="cuda:0")


@pytest.fixture
def scratch():
    yield
    default_scratch()  # library code in a fixture's teardown, on the default GPU


@pytest.fixture
def device():
    return torch.device("cpu")
""",
    "test_teardown": """
def test_clean_call(scratch, device):
    pass
""",
}


@pytest.mark.parametrize(("policy", "outcomes"), [("fail", {"passed": 1, "errors": 1}), ("report", {"passed": 1})])
def test_a_foreign_allocation_in_teardown_is_judged_too(pytester: pytest.Pytester, policy: str, outcomes: dict[str, int]) -> None:
    """A fixture's teardown made a tensor on cuda:0 during a cuda:1 test: no summary, no report, a pass."""
    pytester.makeconftest(TEARDOWN_ALLOCATION["conftest"])
    pytester.makepyfile(test_teardown=TEARDOWN_ALLOCATION["test_teardown"])
    result = pytester.runpytest_subprocess("--simcuda", f"--simcuda-foreign={policy}", "-p", "no:cacheprovider")
    result.assert_outcomes(**outcomes)
    report = json.loads((pytester.path / "simcuda-report.json").read_text())
    assert [entry["test"] for entry in report["foreign_allocations"]] == ["test_teardown.py::test_clean_call"]


# PyTorch Geometric's `withCUDA` parametrizes `torch.device("cuda:0")`: a device the test names is
# asked for, so a library allocating where its input lives is no foreign allocation. The twin: the
# same library choosing cuda:0 by itself for a test on cuda:1 still fails, as on a real GPU.
NAMED_DEVICES_LIBRARY = '''
import torch


def where_the_input_lives(x):
    return torch.zeros(1, device=x.device) + x.max()


def on_the_default_gpu_first(x):
    return torch.arange(3, device=DEFAULT_GPU).to(x.device)


DEFAULT_GPU = "cuda:0"
'''
NAMED_DEVICES = '''
import pytest
import torch

from namedlib import on_the_default_gpu_first, where_the_input_lives


@pytest.mark.parametrize("device", [torch.device("cuda:0"), "cuda:1"])
def test_the_library_allocates_where_its_input_lives(device):
    assert where_the_input_lives(torch.rand(3, device=device)).device == torch.device(device)


@pytest.mark.parametrize("device", [torch.device("cuda:0"), "cuda:1"])
def test_the_library_chooses_cuda0_itself(device):
    assert on_the_default_gpu_first(torch.rand(3, device=device)).device == torch.device(device)
'''


def test_a_device_the_test_names_is_asked_for(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(namedlib=NAMED_DEVICES_LIBRARY, test_named=NAMED_DEVICES)
    pytester.makeini("[pytest]\npythonpath = .\n")
    result = pytester.runpytest_subprocess("--simcuda", "-rA", "-p", "no:cacheprovider")
    outcomes = passed_and_failed(result)
    assert outcomes == {
        "test_named.py::test_the_library_allocates_where_its_input_lives[device0]": "PASSED",
        "test_named.py::test_the_library_allocates_where_its_input_lives[cuda:1]": "PASSED",
        "test_named.py::test_the_library_chooses_cuda0_itself[device0]": "PASSED",
        "test_named.py::test_the_library_chooses_cuda0_itself[cuda:1]": "FAILED",
    }, result.stdout.str()[-3000:]
    result.stdout.fnmatch_lines(["*torch.arange * on cuda:0 at *namedlib.py*"])
    # The summary names both simulated devices the tests ran on, not only the run's cuda:1.
    result.stdout.fnmatch_lines(["4 tests run on the simulated cuda:0, cuda:1: 3 passed, 1 failed"])


# MONAI's convention: unittest cases whose devices come from module-level case lists through
# `parameterized.expand` (its wrapper holds the case's arguments in a closure, not as pytest
# parameters), from a case list the test reads, or from a literal in the test's body. A device so
# named is asked for, and never adds a device to the simulation; the twin, the library choosing
# cuda:0 itself in a test that names no device (its constant imported beside the test, never
# read by it), still fails.
EXPAND = '''
import sys


def expand(cases):
    \"\"\"parameterized.expand's shape: one method per case, the case held in the method's closure.\"\"\"
    def made(test):
        for index, case in enumerate(cases):
            sys._getframe(1).f_locals[f"{test.__name__}_{index}"] = bound(test, tuple(case))
    return made


def bound(test, case):
    def one(self):
        return test(self, *case)
    return one
'''
EXPANDED_CASES = '''
import unittest

import pytest
import torch

from expand import expand
from namedlib import DEFAULT_GPU, on_the_default_gpu_first, where_the_input_lives  # noqa: F401 (DEFAULT_GPU never read)


class TestNamed(unittest.TestCase):
    @expand([[{"sw_device": "cuda:0"}, (3,)], [{"sw_device": "cpu"}, (3,)]])
    def test_case_list(self, options, shape):
        x = torch.rand(*shape, device=options["sw_device"])
        assert where_the_input_lives(x).device == x.device

    def test_literal_in_the_body(self):
        device = "cuda:0" if torch.cuda.is_available() else "cpu"
        assert where_the_input_lives(torch.rand(3, device=device)).device == torch.device(device)

    def test_the_library_chooses_cuda0_itself(self):
        assert on_the_default_gpu_first(torch.rand(3, device="cuda")).device == torch.device("cuda:1")

    def test_a_device_past_the_count_is_still_cudas_error(self):
        with pytest.raises(RuntimeError, match="invalid device ordinal"):
            torch.zeros(1, device="cuda:7")
'''
MODULE_CASES = '''
import unittest

import torch

from expand import expand
from namedlib import where_the_input_lives

CASES = [[torch.device("cuda:0")], ["cpu"]]


class TestModuleList(unittest.TestCase):
    @expand([["first"]])
    def test_module_list(self, _):
        for (device,) in CASES:
            assert where_the_input_lives(torch.rand(3, device=device)).device == torch.device(device)

    @expand([[torch.ones(3, device="cuda:0" if torch.cuda.is_available() else "cpu")]])
    def test_case_tensor(self, x):
        assert where_the_input_lives(x).device == x.device
'''


def test_a_device_the_tests_own_code_names_is_asked_for(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(namedlib=NAMED_DEVICES_LIBRARY, expand=EXPAND, test_expanded=EXPANDED_CASES, test_module_list=MODULE_CASES)
    pytester.makeini("[pytest]\npythonpath = .\n")
    result = pytester.runpytest_subprocess("--simcuda", "-rA", "-p", "no:cacheprovider")
    outcomes = passed_and_failed(result)
    assert outcomes == {
        "test_expanded.py::TestNamed::test_case_list_0": "PASSED",
        "test_expanded.py::TestNamed::test_case_list_1": "PASSED",
        "test_expanded.py::TestNamed::test_literal_in_the_body": "PASSED",
        "test_expanded.py::TestNamed::test_the_library_chooses_cuda0_itself": "FAILED",
        "test_expanded.py::TestNamed::test_a_device_past_the_count_is_still_cudas_error": "PASSED",
        "test_module_list.py::TestModuleList::test_module_list_0": "PASSED",
        "test_module_list.py::TestModuleList::test_case_tensor_0": "PASSED",
    }, result.stdout.str()[-3000:]
    result.stdout.fnmatch_lines(["*torch.arange * on cuda:0 at *namedlib.py*"])


# MONAI's convention: module-level case tensors made on CUDA at import when CUDA is available.
MODULE_LEVEL_TENSORS = '''
import pytest
import torch

DEVICE = "cuda:0" if torch.cuda.is_available() else "cpu"
CASES = [torch.tensor([1.0, 2.0], device=DEVICE), torch.ones(2, device="cuda")]
CAPTURED = torch.cuda.current_device  # imported while the module is collected: torch's own, never a stand-in


def test_a_name_taken_at_import_is_torchs_own():
    assert CAPTURED.__module__ == "torch.cuda"


@pytest.mark.parametrize("case", CASES)
def test_case(case):
    assert (case * torch.ones(2, device=case.device)).device == case.device


def test_module_tensor_meets_a_new_one():
    assert torch.equal((CASES[0] + torch.ones(2, device=DEVICE)).cpu(), torch.tensor([2.0, 3.0]))
'''


def test_module_level_cuda_tensors_are_made_on_the_simulated_device(pytester: pytest.Pytester) -> None:
    """Collection imports the module: on a GPU its CUDA tensors are made there and then; under
    --simcuda they were made with no simulation open, the real CUDA's lazy init ("Found no NVIDIA
    driver", 39 of MONAI 1.5.0's simulated-only cases as collection errors)."""
    pytester.makepyfile(test_module_tensors=MODULE_LEVEL_TENSORS)
    result = pytester.runpytest_subprocess("--simcuda", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)
    report = json.loads((pytester.path / "simcuda-report.json").read_text())
    assert report["foreign_allocations"] == [], report["foreign_allocations"]


# A refusal module-level code catches while pytest collects (a probe of what the device can do)
# is refused again in each of the module's tests: their results rest on what the probe decided
# (before, they passed). The twin: a module beside it whose import refused nothing runs.
PROBED_AT_IMPORT = '''
import torch

try:
    torch.zeros(2, device="cuda").resize_(10)
    GROWS = True
except Exception:
    GROWS = False


def test_after_the_probe():
    assert not GROWS


class TestGrouped:
    def test_in_a_class(self):
        assert torch.ones(1, device="cuda").is_cuda
'''
NOT_PROBED = '''
import torch


def test_elsewhere():
    assert torch.ones(1, device="cuda").is_cuda
'''


def test_a_refusal_caught_at_collection_makes_the_modules_tests_skips(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_probed=PROBED_AT_IMPORT, test_not_probed=NOT_PROBED)
    result = pytester.runpytest_subprocess("--simcuda", "-rs", "-p", "no:cacheprovider")
    result.assert_outcomes(skipped=2, passed=1)
    result.stdout.fnmatch_lines(["*simulated CUDA cannot run this: growing a simulated tensor in place* (when its module was collected)"])
    assert simcuda_results(pytester) == {
        "test_not_probed.py::test_elsewhere": "passed",
        "test_probed.py::test_after_the_probe": "refused",
        "test_probed.py::TestGrouped::test_in_a_class": "refused",
    }


# torch.cuda at a test module's import, under --simcuda: the device queries a skip reads answer as
# in a test, a case list made under `torch.cuda.device(0)` is made there, and what would reach the
# real CUDA is refused as in a test, caught by the module (each of its tests a skip) or not (the
# module a skip, and the session goes on). Before: the capability was the real CUDA's lazy init,
# a collection error that stopped the session ("Found no NVIDIA driver"), as was a refusal the
# module let raise; a caught CUDAGraph probe passed, and memory_allocated() answered a made-up 0.
CUDA_AT_IMPORT = {
    "test_queried": '''
import pytest
import torch

SM80 = torch.cuda.get_device_capability() >= (8, 0)
with torch.cuda.device(0):
    ON_0 = torch.ones(2, device="cuda")


@pytest.mark.skipif(not SM80, reason="needs sm80")
def test_on_an_h100():
    assert torch.cuda.get_device_name().startswith("simcuda") and ON_0.device == torch.device("cuda:0")
''',
    "test_graph_probe": '''
import torch

try:
    torch.cuda.CUDAGraph()
    GRAPHS = True
except Exception:
    GRAPHS = False


def test_without_graphs():
    assert not GRAPHS
''',
    "test_memory_baseline": '''
import torch

BASELINE = torch.cuda.memory_allocated()


def test_no_leak():
    assert BASELINE == 0
''',
    "test_raised_at_import": '''
import torch

GROWN = torch.zeros(2, device="cuda").resize_(10)


def test_grown():
    assert GROWN.numel() == 10
''',
}


def test_torch_cuda_at_import_is_answered_or_refused_as_in_a_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(**CUDA_AT_IMPORT)
    result = pytester.runpytest_subprocess("--simcuda", "-rs", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, skipped=3)
    result.stdout.fnmatch_lines_random([
        "SKIPPED * test_graph_probe.py:*: simulated CUDA cannot run this: CUDA graphs (torch.cuda.CUDAGraph) (when its module was collected)",
        "SKIPPED * test_memory_baseline.py:3: simulated CUDA cannot run this: *memory_allocated* (when its module was collected)",
        "SKIPPED * test_raised_at_import.py:3: simulated CUDA cannot run this: growing a simulated tensor in place* (when its module was collected)",
    ])
    assert simcuda_results(pytester) == {
        "test_queried.py::test_on_an_h100": "passed",
        "test_graph_probe.py::test_without_graphs": "refused",
    }


# A module that caught a refusal and then failed on something else entirely: its own error, never a
# skip (the refusal did not cause it); one that fails while handling the refusal is the refusal's.
AFTER_A_CAUGHT_REFUSAL = {
    "test_probe_then_typo": """
import torch

try:
    torch.cuda.CUDAGraph()
except Exception:
    pass
from os import no_such_name


def test_never_collected():
    pass
""",
    "test_probe_then_needs_it": """
import torch

try:
    torch.cuda.CUDAGraph()
except Exception:
    raise ImportError("this module needs CUDA graphs")


def test_never_collected():
    pass
""",
}


def test_an_error_a_caught_refusal_did_not_cause_stays_a_collection_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(**AFTER_A_CAUGHT_REFUSAL)
    result = pytester.runpytest_subprocess("--simcuda", "-rs", "-p", "no:cacheprovider", "--continue-on-collection-errors")
    result.assert_outcomes(errors=1, skipped=1)
    result.stdout.fnmatch_lines_random([
        "*ERROR collecting test_probe_then_typo.py*",
        "E   ImportError: cannot import name 'no_such_name' from 'os'*",
        # the module's line that met the refusal, not pytest's own
        "SKIPPED * test_probe_then_needs_it.py:4: simulated CUDA cannot run this: CUDA graphs (torch.cuda.CUDAGraph) (when its module was collected)",
    ])


# A refusal met while a fixture of module, class or session scope is set up is every sharing test's:
# each runs on the value (or the error) the simulation could not make. Before, only the first test
# was a skip: the later ones passed, or failed with the cached refusal. The twin: a shared fixture
# that refused nothing.
SHARED_FIXTURES = '''
import pytest
import torch


def _graph_or_none():
    try:
        return torch.cuda.CUDAGraph()
    except Exception:
        return None


@pytest.fixture(scope="module")
def caught():
    return _graph_or_none()


@pytest.fixture(scope="module")
def raised():
    return torch.cuda.CUDAGraph()


@pytest.fixture(scope="module")
def clean():
    return torch.ones(1, device="cuda")


@pytest.fixture
def uses_caught(caught):
    return caught


def test_caught_first(caught):
    pass


def test_caught_second(caught):
    pass


def test_caught_through_another_fixture(uses_caught):
    pass


def test_raised_first(raised):
    pass


def test_raised_second(raised):
    pass


def test_clean_first(clean):
    assert clean.is_cuda


def test_clean_second(clean):
    assert clean.is_cuda
'''


def test_a_refusal_in_a_shared_fixture_makes_every_test_sharing_it_a_skip(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_shared=SHARED_FIXTURES)
    result = pytester.runpytest_subprocess("--simcuda", "-rs", "-p", "no:cacheprovider")
    result.assert_outcomes(skipped=5, passed=2)
    assert simcuda_results(pytester) == {
        **{f"test_shared.py::test_{name}": "refused" for name in ("caught_first", "caught_second", "caught_through_another_fixture")},
        **{f"test_shared.py::test_{name}": "refused" for name in ("raised_first", "raised_second")},
        **{f"test_shared.py::test_{name}": "passed" for name in ("clean_first", "clean_second")},
    }


# Only the fixture definitions a test runs count: a module that overrides a shared fixture with its
# own runs none of the shared one's refusal; one that extends it (asks for its own name) runs both.
SHARED_GRAPH = '''
import pytest
import torch


@pytest.fixture(scope="session")
def graph():
    try:
        return torch.cuda.CUDAGraph()
    except Exception:
        return None
'''
OVERRIDES = {
    "test_a_uses": "def test_uses_the_session_graph(graph):\n    pass\n",
    "test_b_overrides": (
        "import pytest\n\n\n@pytest.fixture\ndef graph():\n    return 'mine'\n\n\ndef test_own_graph(graph):\n    assert graph == 'mine'\n"
    ),
    "test_c_extends": "import pytest\n\n\n@pytest.fixture\ndef graph(graph):\n    return graph\n\n\ndef test_extended_graph(graph):\n    pass\n",
}


def test_a_shared_fixture_a_test_overrides_refuses_nothing_in_it(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(SHARED_GRAPH)
    pytester.makepyfile(**OVERRIDES)
    result = pytester.runpytest_subprocess("--simcuda", "-rs", "-p", "no:cacheprovider")
    result.assert_outcomes(skipped=2, passed=1)
    assert simcuda_results(pytester) == {
        "test_a_uses.py::test_uses_the_session_graph": "refused",
        "test_b_overrides.py::test_own_graph": "passed",
        "test_c_extends.py::test_extended_graph": "refused",
    }


# A shared fixture set up again (a module-scoped one, per module) is judged by what its new setup
# refused: module one's refusal is not module two's.
PROBED_IN_ONE_MODULE = '''
import pytest
import torch


@pytest.fixture(scope="module")
def probed(request):
    if request.module.__name__ == "test_one":
        try:
            torch.cuda.CUDAGraph()
        except Exception:
            pass
    return torch.ones(1, device="cuda")
'''


def test_a_shared_fixture_set_up_again_is_judged_by_its_new_setup(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(PROBED_IN_ONE_MODULE)
    pytester.makepyfile(test_one="def test_in_one(probed):\n    pass\n", test_two="def test_in_two(probed):\n    assert probed.is_cuda\n")
    result = pytester.runpytest_subprocess("--simcuda", "-p", "no:cacheprovider")
    result.assert_outcomes(skipped=1, passed=1)
    assert simcuda_results(pytester) == {"test_one.py::test_in_one": "refused", "test_two.py::test_in_two": "passed"}


# Expected failures, by marker or by pytest.xfail() in the body, are counted as pytest counts them;
# a failure that was not expected stays a failure (the twin).
XFAILS = '''
import pytest
import torch


@pytest.mark.xfail(reason="known", strict=True)
def test_marked():
    raise AssertionError("known")


def test_imperative():
    pytest.xfail("known here")


def test_plain_failure():
    assert torch.zeros(1, device="cuda").sum() == 1
'''


def test_expected_failures_are_counted_as_xfailed(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_xfails=XFAILS)
    result = pytester.runpytest_subprocess("--simcuda", "-p", "no:cacheprovider")
    result.assert_outcomes(xfailed=2, failed=1)
    report = json.loads((pytester.path / "simcuda-report.json").read_text())
    assert (report["xfailed"], report["failed"], report["passed"]) == (2, 1, 0), report
    result.stdout.fnmatch_lines(["3 tests run on the simulated cuda:1: 1 failed, 2 xfailed"])


# An expected failure excuses no foreign allocation: a test marked xfail that passes while the
# library allocated on cuda:0 fails (pytest's xfail handling read it as XPASS, exit 0), strict or not.
XPASS_FOREIGN = '''
import pytest
import torch

import peerlib


@pytest.mark.xfail(reason="unrelated")
def test_xpass_allocating_on_cuda0():
    peerlib.scaled(torch.ones(3, device="cuda"))


@pytest.mark.xfail(reason="unrelated", strict=True)
def test_strict_xpass_allocating_on_cuda0():
    peerlib.scaled(torch.ones(3, device="cuda"))


@pytest.mark.xfail(reason="known")
def test_expected_failure_allocating_on_cuda0():
    peerlib.scaled(torch.ones(3, device="cuda"))
    raise AssertionError("known")
'''


def test_an_xpass_that_allocated_on_a_foreign_device_fails(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(peerlib=PEER_LIBRARY, test_xpass=XPASS_FOREIGN)
    pytester.makeini("[pytest]\npythonpath = .\n")
    result = pytester.runpytest_subprocess("--simcuda", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=2, xfailed=1)
    result.stdout.fnmatch_lines(["*test_xpass_allocating_on_cuda0*", "*simcuda: 1 allocation(s) on a device the test never asked for*"])
    assert simcuda_results(pytester) == {
        "test_xpass.py::test_xpass_allocating_on_cuda0": "failed",
        "test_xpass.py::test_strict_xpass_allocating_on_cuda0": "failed",
        "test_xpass.py::test_expected_failure_allocating_on_cuda0": "xfailed",
    }


# A skip marker, or a skipif that holds, skips before any fixture: no simulation is opened for it
# and the summary does not count it (kornia marks 3,000 tests so; opening one costs about a
# millisecond), while a skipif that does not hold and a skip from the body stay simulated tests.
SKIPS = '''
import pytest
import torch


@pytest.fixture
def on_the_device():
    return torch.ones(1, device="cuda")


@pytest.mark.skip(reason="to be deprecated")
def test_marked(on_the_device):
    raise AssertionError("never runs")


@pytest.mark.skipif(False, reason="does not hold")
def test_runs(on_the_device):
    assert on_the_device.device == torch.device("cuda:1")


@pytest.mark.skipif("sys.platform != 'never'", reason="holds")
def test_skipped_by_its_own_condition(on_the_device):
    raise AssertionError("never runs")


def test_skips_itself(on_the_device):
    pytest.skip("from the body")
'''


def test_a_test_skipped_by_its_marks_opens_no_simulation(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_skips=SKIPS)
    result = pytester.runpytest_subprocess("--simcuda", "-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(passed=1, skipped=3)
    result.stdout.fnmatch_lines(["*to be deprecated", "*holds", "*from the body"])
    report = json.loads((pytester.path / "simcuda-report.json").read_text())
    assert sorted(name.split("::")[1] for name in report["results"]) == ["test_runs", "test_skips_itself"], report
    result.stdout.fnmatch_lines(["2 tests run on the simulated cuda:1: 1 passed, 1 skipped"])


# timm's test_optim.py imports torch.testing._internal.common_utils, which calls
# torch.backends.disable_global_flags(): from then on assigning a cuDNN flag raises. The
# simulation's own switches must still work, and the flags come back as they were.
FLAGS_FROZEN = '''
import torch

torch.backends.disable_global_flags()
BEFORE = torch.backends.cudnn.enabled


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line(f"cudnn before {BEFORE}, after {torch.backends.cudnn.enabled}")
'''


def test_a_session_that_froze_torchs_global_flags_runs(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(FLAGS_FROZEN)
    pytester.makepyfile(
        test_frozen=(
            "import torch\n\n\n"
            "def test_on_the_simulated_device():\n    assert torch.ones(2, device='cuda').device == torch.device('cuda:1')\n"
        )
    )
    result = pytester.runpytest_subprocess("--simcuda", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["cudnn before True, after True"])


# torchvision's scripted kernels move a tensor with `.to(img.device)` inside TorchScript's
# interpreter, which initializes the real CUDA itself before the op reaches the simulation: on a
# machine without a GPU that is the driver's error, a refusal (a skip naming it), never a failure;
# on one with a GPU the real CUDA starts, which the plugin's watch of it refuses the same way
# (test_simcuda_real_cuda.py fakes that machine). A scripted function with a bug of its own still fails.
SCRIPTED = '''
import torch


@torch.jit.script
def displaced(img: torch.Tensor, displacement: torch.Tensor) -> torch.Tensor:
    return img + displacement.to(img.device)


@torch.jit.script
def out_of_range(img: torch.Tensor) -> torch.Tensor:
    return img[img.shape[0]]


def test_scripted_move_to_the_images_device():
    img = torch.rand(2, 3, device="cuda")
    assert displaced(img, torch.zeros(2, 3)).device == img.device


def test_scripted_bug_of_its_own():
    out_of_range(torch.rand(2, 3, device="cuda"))
'''


def test_torchscript_reaching_the_real_cuda_is_a_refusal_and_its_own_bugs_fail(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_scripted=SCRIPTED)
    result = pytester.runpytest_subprocess("--simcuda", "-p", "no:cacheprovider", "-W", "ignore::FutureWarning", "-rsf")
    result.assert_outcomes(skipped=1, failed=1)
    result.stdout.fnmatch_lines([
        "*simulated CUDA cannot run this: the real CUDA, reached from C++ where the simulation's modes do not see (TorchScript*",
        "FAILED *test_scripted_bug_of_its_own*",
    ])
    report = json.loads((pytester.path / "simcuda-report.json").read_text())
    assert report["refused_by_feature"] == {
        "the real CUDA, reached from C++ where the simulation's modes do not see (TorchScript's `.to(device)`, "
        "or a binding inside a Python-level torch function)": 1
    }


def test_the_driver_error_is_a_refusal_wherever_errors_are_sorted() -> None:
    """The sweeps' classify_call re-raises refusals (fixtures/proxies/meta_proxy.py): the driver's
    error, even wrapped as TorchScript wraps it, is one; an error of the call's own is not."""
    from simcuda.unsupported import is_refusal

    driver = RuntimeError("Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU")
    try:
        raise RuntimeError("The following operation failed in the TorchScript interpreter.") from driver
    except RuntimeError as wrapped:
        assert is_refusal(wrapped)
    assert not is_refusal(RuntimeError("index 2 is out of bounds for dimension 0 with size 2"))


REFUSED_AND_FAILED = '''
import torch


def test_refused():
    torch.cuda.CUDAGraph()


def test_fails():
    assert torch.ones(1, device="cuda").sum() == 2
'''


def test_a_refused_call_is_a_skip_whose_traceback_is_never_formatted(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """The skip throws the refused call's traceback away: formatting it (deep in torch's frames)
    would cost tens of milliseconds a test. A real failure's is formatted as always."""
    formatted = []
    format_failure = _pytest.nodes.Node._repr_failure_py

    def counted(node: pytest.Item, excinfo: pytest.ExceptionInfo, style: str | None = None) -> object:
        formatted.append(node.name)
        return format_failure(node, excinfo, style)

    monkeypatch.setattr(_pytest.nodes.Node, "_repr_failure_py", counted)
    pytester.makepyfile(REFUSED_AND_FAILED)
    result = pytester.runpytest("--simcuda", "-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(skipped=1, failed=1)
    result.stdout.fnmatch_lines(["*simulated CUDA cannot run this: CUDA graphs (torch.cuda.CUDAGraph)*"])
    assert formatted == ["test_fails"]
