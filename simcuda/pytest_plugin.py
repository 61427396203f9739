"""pytest plugin: run a project's own tests on a simulated second GPU (`pytest --simcuda`).

Registered through this distribution's `pytest11` entry point and inactive unless asked: with
`--simcuda` (or on a test marked `simcuda`), each test's setup, call and teardown run inside one
`simulated_cuda()` context (runs.py) with the simulated device current, so "cuda" names it, and:

- the project's device choice becomes the simulated device: a `device` fixture (kornia's
  convention) answers it, and from before the first conftest is imported until collection ends
  `torch.cuda.is_available()` / `device_count()` answer as on a two-GPU machine, so device
  parametrizations and skips computed at collection (torchvision's `cpu_and_cuda()`,
  `needs_cuda`) collect their CUDA cases;
- a SimulationUnsupported anywhere in a phase, even one the test caught, makes that phase a skip
  naming the feature, never a pass;
- an allocation on a device the test never asked for (the default cuda:0 during a cuda:1 test)
  fails the test, naming the op and its caller (`--simcuda-foreign=report`: listed only);
- the terminal summary and a JSON file (`--simcuda-report`) count the tests run, passed, failed,
  refused by feature, and list the foreign allocations with their callers.

With `SIMCUDA_RUNNER_GPUS=N` in the environment the whole session runs on the simulated runner
(runner.py), started before the project's first conftest and said in the header; a refusal in a
test's phase is a skip naming the feature, as under --simcuda.

Nothing here imports torch until a test runs simulated or the environment asks for the runner:
the modules that import it (runner, runs, allocations, summary) are imported inside the functions
that use them, each marked "imports torch", since every pytest session of an environment that has
simcuda installed loads this plugin.
"""

from __future__ import annotations

import functools
import json
import os
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from _pytest.skipping import evaluate_skip_marks  # pytest's own reading of skip and skipif marks

from simcuda.devices import RUNNER_ENV, RunnerConfigError, describe_runner
from simcuda.state import Devices, ProcessRunner, running
from simcuda.unsupported import REAL_CUDA_REACHED, is_refusal, log_refusal, open_log, reached_real_cuda

if TYPE_CHECKING:
    from simcuda.runs import SimulatedRun

DEFAULT_DEVICE = "cuda:1"
DEFAULT_REPORT = "simcuda-report.json"
_RECORD = "simcuda"  # the user property carrying a test's record to the controller
_RUN = pytest.StashKey["SimulatedRun"]()
_PHASE_REFUSAL = pytest.StashKey[dict]()  # phase -> the first feature refused in it
_REAL_CUDA_SEEN = pytest.StashKey[dict]()  # phase -> what the real CUDA did in it, in words
_COLLECTION_VIEW = pytest.StashKey[list]()  # (owner, name, saved value) put back at the end
_STARTED_RUNNER = pytest.StashKey[bool]()  # this session started the process's runner (an inline pytester session did not)
_COLLECTION_REFUSALS = pytest.StashKey[list]()  # what a module's (class's) collection refused
_SHARED_REFUSALS = pytest.StashKey[dict]()  # a broader-scoped FixtureDef -> what its setup refused, while its value lives
_FOREIGN_FAILURE = pytest.StashKey[dict]()  # phase -> the foreign allocations that failed it, in words


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("simcuda", "simulated CUDA device (simcuda)")
    group.addoption(
        "--simcuda", action="store_true", help="run every test on a simulated CUDA device (cuda:1 unless --simcuda-device says)"
    )
    group.addoption(
        "--simcuda-device", default=DEFAULT_DEVICE, metavar="cuda:N", help=f"the simulated device tests run on (default {DEFAULT_DEVICE})"
    )
    group.addoption(
        "--simcuda-foreign",
        choices=("fail", "report"),
        default="fail",
        help="an allocation on a device the test never asked for: fail the test (default) or only report it",
    )
    group.addoption("--simcuda-report", default=None, metavar="PATH", help=f"the JSON summary (default with --simcuda: {DEFAULT_REPORT})")


def _active(config: pytest.Config) -> bool:
    return bool(config.getoption("simcuda", False))


@pytest.hookimpl(wrapper=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]):
    """Before the project's first conftest is imported: the simulated runner the environment asks
    for, and the CUDA view that collection reads."""
    _start_runner(early_config)
    if getattr(early_config.known_args_namespace, "simcuda", False):
        early_config.stash[_COLLECTION_VIEW] = _install_collection_view(early_config.known_args_namespace.simcuda_device)
    return (yield)


def _start_runner(config: pytest.Config) -> None:
    if not os.environ.get(RUNNER_ENV, "").strip() or running() is not None:
        return
    from simcuda.runner import start_from_environment  # imports torch

    try:
        start_from_environment()
    except RunnerConfigError as error:
        raise pytest.UsageError(str(error)) from None
    config.stash[_STARTED_RUNNER] = True


def pytest_report_header(config: pytest.Config) -> str | None:
    runner = running()
    if runner is None:
        return None
    return f"simcuda: {describe_runner(runner)} ({RUNNER_ENV}={runner.gpus}; cuda:N tensors hold CPU data)"


def _install_collection_view(device_text: str) -> list[tuple[Any, str, Any]]:
    """torch.cuda.is_available() True, device_count() and get_device_properties() (so the
    capability and name too) as the simulated machine has, while the project collects; the
    simulation's own stand-ins take over inside each test."""
    import torch  # asked for: --simcuda

    from simcuda.runs import parse_simulated_device  # imports torch
    from simcuda.stand_ins import properties_of  # imports torch

    try:
        device = parse_simulated_device(device_text)
    except ValueError as error:
        raise pytest.UsageError(str(error)) from None
    devices = Devices(max(2, device.index + 1))
    devices.current = device.index
    view = {"is_available": lambda: True, "device_count": lambda: devices.count, "get_device_properties": properties_of(devices)}
    saved = [(torch.cuda, name, getattr(torch.cuda, name)) for name in view]
    for name, stand_in in view.items():
        setattr(torch.cuda, name, stand_in)
    return saved


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "simcuda(device='cuda:1', foreign='fail'): run this test on the simulated CUDA device (as --simcuda does for every test)",
    )
    if config.getoption("simcuda_report") == "":  # a template that left it out: never the default file
        raise pytest.UsageError("--simcuda-report is empty; give the JSON file's path")
    asked = _active(config) or config.getoption("simcuda_report")
    if asked and not hasattr(config, "workerinput"):  # workers' records reach the controller's summary
        if _report_path(config).is_dir():
            raise pytest.UsageError(f"--simcuda-report: {_report_path(config)} is a directory; give the JSON file's path")
        config.pluginmanager.register(SimulatedSessionSummary(config), "simcuda-summary")


def _report_path(config: pytest.Config) -> Path:
    return config.invocation_params.dir / (config.getoption("simcuda_report") or DEFAULT_REPORT)


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session):
    """The view ends with collection: on a one-GPU machine torch's lazy init would otherwise
    check a GPU 1 that does not exist, and real CUDA could never start in this session. Each
    test's simulation answers the same questions while it runs."""
    try:
        return (yield)
    finally:
        _remove_collection_view(session.config)


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector):
    """A test module (or class) collected under --simcuda makes its module-level CUDA tensors on the
    simulated device, as on a GPU it makes them at import (MONAI's case lists: `torch.tensor(...,
    device=device)` after `device = "cuda:0" if torch.cuda.is_available() else "cpu"`): a
    simulation is open while the module is imported and parametrized. Its tensors outlive it, as a
    GPU's memory outlives a test, and each test's simulation takes them. The names the module
    imports from torch stay torch's own (context.simulated_imports). What the import refused, its
    code caught (a probe at module level), is refused again in each of the module's tests: which
    of them depend on it no one can tell. An import that fails on a refusal (or on an error raised
    while handling one) makes the module (class) a skip naming it: a collection error would stop the
    whole session. The real CUDA started or allocated meanwhile (a GPU machine) is such a refusal too."""
    if not isinstance(collector, (pytest.Module, pytest.Class)) or not _active(collector.config):
        return (yield)
    from simcuda.context import simulated_imports  # imports torch (asked for: --simcuda)
    from simcuda.runs import parse_simulated_device  # imports torch (as above)

    device = parse_simulated_device(collector.config.getoption("simcuda_device"))
    with simulated_imports(max(2, device.index + 1), device.index) as simulation:
        try:
            report: pytest.CollectReport = yield
            if seen := simulation.real_cuda.change():
                log_refusal(f"{REAL_CUDA_REACHED} ({seen})")  # the simulation's log: it is open
            _skip_a_refused_import(collector, report, simulation.refusals)
            return report
        finally:
            if simulation.refusals:
                collector.stash[_COLLECTION_REFUSALS] = list(simulation.refusals)


def _skip_a_refused_import(collector: pytest.Collector, report: pytest.CollectReport, refusals: list[str]) -> None:
    """A module (class) whose collection failed on a refusal (a SimulationUnsupported, or the real
    CUDA's answer while the simulation is open), or on an error raised while handling one, is a
    skip naming the first refused feature, as a test's phase is, at the module's line that met it.
    Any other error stays a collection error, whatever refusal the module caught before it."""
    call = getattr(report, "call", None)  # pytest's CallInfo: collect_one_node takes it off the report after this hook
    refusal = _refusal_in_chain(call.excinfo.value) if report.failed and call is not None and call.excinfo is not None else None
    if refusal is None:
        return
    lines = [frame.lineno for frame in traceback.extract_tb(refusal.__traceback__) if Path(frame.filename) == collector.path]
    feature = refusals[0] if refusals else REAL_CUDA_REACHED
    report.outcome = "skipped"
    report.longrepr = (str(collector.path), lines[-1] if lines else 1, f"simulated CUDA cannot run this: {feature} (when its module was collected)")


def _refusal_in_chain(error: BaseException | None) -> BaseException | None:
    """The refusal the error is, or was raised from or while handling (pytest's CollectError wraps
    an import's error), else None."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if is_refusal(error):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


def pytest_unconfigure(config: pytest.Config) -> None:
    _remove_collection_view(config)  # a session that stopped before collecting
    if config.stash.get(_STARTED_RUNNER, False):
        from simcuda.runner import stop  # imports torch: loaded already, the runner ran

        stop()


def _remove_collection_view(config: pytest.Config) -> None:
    for owner, name, value in config.stash.get(_COLLECTION_VIEW, []):
        setattr(owner, name, value)
    config.stash[_COLLECTION_VIEW] = []


def start_simulated_run(item: pytest.Item, device: str, foreign: str = "fail", shared_generator: bool = False) -> SimulatedRun:
    """Open `item`'s simulated run now (from a fixture, or at setup for --simcuda); the plugin
    closes it after the test's teardown and turns what it saw into the test's outcome."""
    from simcuda.runs import SimulatedRun, named_cuda_devices, parse_simulated_device  # imports torch

    parameters = item.callspec.params.values() if hasattr(item, "callspec") else ()
    run = SimulatedRun(parse_simulated_device(device), foreign, str(item.path), named_cuda_devices(parameters),
                       _named_by_code(item), shared_generator)
    item.stash[_RUN] = run
    return run


def _named_by_code(item: pytest.Item) -> frozenset[str]:
    """The CUDA devices `item`'s own code names, reading its class's attributes where its code
    reads them by name."""
    from simcuda.runs import cuda_devices_in_code  # imports torch (as start_simulated_run)

    cls = getattr(item, "cls", None)
    return cuda_devices_in_code(getattr(item, "obj", None), _class_attributes(cls) if cls is not None else None)


@functools.cache  # per class, not per test: a unittest class's MRO holds TestCase's hundred names
def _class_attributes(cls: type) -> dict[str, object]:
    """A class's attributes as its instances find them (along the MRO)."""
    return {name: value for klass in reversed(cls.__mro__) for name, value in vars(klass).items()}


def simulated_run_of(item: pytest.Item) -> SimulatedRun | None:
    return item.stash.get(_RUN, None)


def phase_refusal(item: pytest.Item, when: str) -> str | None:
    """The first feature the simulation refused in this phase of the test, or None."""
    return item.stash.get(_PHASE_REFUSAL, {}).get(when)


def _wanted(item: pytest.Item) -> tuple[str, str] | None:
    """(device, foreign policy) when the test runs simulated from its setup on."""
    marker = item.get_closest_marker("simcuda")
    config = item.config
    if marker is None and not _active(config):
        return None
    options = marker.kwargs if marker is not None else {}
    return options.get("device", config.getoption("simcuda_device")), options.get("foreign", config.getoption("simcuda_foreign"))


@pytest.hookimpl(wrapper=True, tryfirst=True)  # before every fixture and every other plugin's setup
def pytest_runtest_setup(item: pytest.Item):
    if (runner := running()) is not None:
        runner.real_cuda_change()  # the test's watch starts here: another test's teardown is not this test's
    wanted = _wanted(item)
    # A skip marker, or a skipif that holds, makes pytest skip before any fixture: nothing would
    # run simulated (the summary counted such tests as simulated ones), and opening the simulation
    # costs about a millisecond (kornia marks 3,000 tests so). pytest's own evaluation decides.
    if wanted is not None and evaluate_skip_marks(item) is None:
        try:
            start_simulated_run(item, *wanted)
        except ValueError as error:
            raise pytest.UsageError(str(error)) from None
    try:
        return (yield)
    finally:  # a shared fixture's cached refusal is raised again before this test's own code runs
        if (run := simulated_run_of(item)) is not None:
            for feature in (feature for node in item.listchain() for feature in node.stash.get(_COLLECTION_REFUSALS, ())):
                log_refusal(f"{feature} (when its module was collected)")
            if shared := _shared_device_fixture(item, run):
                log_refusal(shared)  # the test would run where the fixture said, and pass as a simulated one
        if run is not None or runner is not None:
            for feature in _shared_fixture_refusals(item):
                log_refusal(feature)  # its value (or error) is what the simulation could not make


def _shared_fixture_refusals(item: pytest.Item) -> list[str]:
    """What the setup of a fixture of broader scope that the test uses refused, for this test or an
    earlier one: every test that shares its value inherits the refusal."""
    refused = item.config.stash.get(_SHARED_REFUSALS, {})
    if not refused:
        return []
    return [feature for name in item.fixturenames for fixturedef in _used(item, name) for feature in refused.get(fixturedef, ())]


def _used(item: pytest.Item, name: str) -> list[pytest.FixtureDef]:
    """The definitions of fixture `name` the test runs, closest first: the closest one, and the one
    it overrides only where it asks for its own name (pytest's way to extend a fixture)."""
    used = []
    for fixturedef in reversed(getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {}).get(name, ())):
        used.append(fixturedef)
        if name not in fixturedef.argnames:
            break
    return used


def _device_chosen_by_the_test(node: pytest.Item | pytest.Collector, fixturedef: pytest.FixtureDef) -> bool:
    """Whether the test names its `device` itself: pytest's pseudo-fixture of a direct
    parametrization (a mark, or a pytest_generate_tests hook), or a parametrize mark naming it
    `indirect`, which wins over the fixture's own `params`."""
    if fixturedef.func.__name__ == "get_direct_param_fixture_func":  # pytest 8 and 9 alike
        return True
    for marker in node.iter_markers("parametrize") if isinstance(node, pytest.Item) else ():
        names = marker.args[0] if marker.args else marker.kwargs.get("argnames", ())
        names = [name.strip() for name in names.split(",")] if isinstance(names, str) else list(names)
        indirect = marker.kwargs.get("indirect", False)
        if "device" in names and (indirect is True or (isinstance(indirect, (list, tuple)) and "device" in indirect)):
            return True
    return False


def _shared_device_fixture(item: pytest.Item, run: SimulatedRun) -> str:
    """The refusal of a project's `device` fixture of broader scope than the test that answered
    another device than the simulated one: its value is cached for every test, so simcuda cannot
    answer it per test; "" where none."""
    import torch  # a simulated test set up: loaded already

    fixturedef = next(iter(_used(item, "device")), None)
    value = getattr(item, "funcargs", {}).get("device")
    if fixturedef is None or fixturedef.scope == "function" or _device_chosen_by_the_test(item, fixturedef):
        return ""
    if not isinstance(value, (str, torch.device)):
        return ""  # not a device (an ordinal, a handle): the project's own business
    try:
        answered = torch.device(value)
    except (TypeError, RuntimeError):
        return ""
    if answered in (torch.device("cuda"), run.device):
        return ""
    return f"a {fixturedef.scope}-scoped `device` fixture answering {answered} (simcuda answers the simulated device from a function-scoped one)"


@pytest.hookimpl(wrapper=True, tryfirst=True)  # after every fixture's finalizer
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None):
    try:
        return (yield)
    finally:
        if (run := simulated_run_of(item)) is not None:
            run.close()


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef, request: pytest.FixtureRequest):
    """A project's own `device` fixture answers the simulated device, in the type it chose; a
    test's own parametrization of `device` (pytest's pseudo-fixture for it, or the project's
    fixture parametrized `indirect=True`) names the device the case wants and is kept: its "cpu"
    cases stay on the CPU, and "cuda" is the simulated device. What a fixture of broader scope
    refused while it was set up is kept for every test that shares its value."""
    log, shared = open_log(), fixturedef.scope != "function"
    before = len(log) if log is not None else 0
    try:
        value = yield
    finally:
        if shared and log is not None and len(log) > before:
            request.config.stash.setdefault(_SHARED_REFUSALS, {})[fixturedef] = log[before:]
    if fixturedef.argname != "device" or _device_chosen_by_the_test(request.node, fixturedef):
        return value
    run = simulated_run_of(request.node) if _wanted(request.node) else None
    if run is None or value is None:
        return value
    simulated = type(value)(str(run.device)) if isinstance(value, str) else run.device
    if fixturedef.cached_result is not None:
        fixturedef.cached_result = (simulated, fixturedef.cached_result[1], None)
    return simulated


def pytest_fixture_post_finalizer(fixturedef: pytest.FixtureDef, request: pytest.FixtureRequest) -> None:
    request.config.stash.get(_SHARED_REFUSALS, {}).pop(fixturedef, None)  # its value is gone; a new setup decides anew


def _note_refusals(item: pytest.Item, run: SimulatedRun | ProcessRunner, when: str, error: BaseException | None) -> None:
    """The phase's first refused feature into the item's stash (the run's refusals read). The real
    CUDA reached from C++ in setup or call is one: without a GPU it is the driver's error; with one,
    the real CUDA started or allocated since the phase before (since the test's simulation opened,
    or, for the runner's, since the test's setup began). A teardown refuses nothing: a test's own
    simulation has closed, and the runner's log would hand it to the runner's next test."""
    happened = run.real_cuda_change()
    if when != "teardown" and (happened or error is not None and reached_real_cuda(error)):
        log_refusal(REAL_CUDA_REACHED)  # the run's context is open until teardown: its log takes it
        if happened:  # the skip says what the watch saw, so a refusal on a GPU machine can be checked
            item.stash.setdefault(_REAL_CUDA_SEEN, {}).setdefault(when, happened)
    refused = run.new_refusals()
    if refused and when != "teardown":
        item.stash.setdefault(_PHASE_REFUSAL, {}).setdefault(when, refused[0])


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """A call the simulation refused ends in pytest's own skip, raised here: pytest then reports
    it without formatting the refused call's traceback (deep in torch: 50 ms a test on the
    simulated runner), which the skip's report would throw away."""
    try:
        return (yield)
    except Exception as error:
        if (run := simulated_run_of(item) or running()) is not None:
            _note_refusals(item, run, "call", error)
        if phase_refusal(item, "call") is None:
            raise
    # Raised outside the handler, so the refused call's error is not its context (which
    # reached_real_cuda would read again).
    raise pytest.skip.Exception(f"simulated CUDA cannot run this: {phase_refusal(item, 'call')}")


@pytest.hookimpl(wrapper=True, trylast=True)  # innermost: other plugins see the outcome it sets
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report: pytest.TestReport = yield
    run = simulated_run_of(item) or running()  # a simcuda:N test's own simulation, else the runner's
    if run is None:
        return report
    _note_refusals(item, run, call.when, call.excinfo.value if call.excinfo is not None else None)
    if (refused := phase_refusal(item, call.when)) is not None:
        report.outcome = "skipped"
        seen = item.stash.get(_REAL_CUDA_SEEN, {}).get(call.when)
        reason = f"simulated CUDA cannot run this: {refused}" + (f" ({seen})" if seen and refused == REAL_CUDA_REACHED else "")
        report.longrepr = (str(item.path), (item.location[1] or 0) + 1, reason)
    elif call.when in ("call", "teardown") and run is simulated_run_of(item):
        _judge_foreign_allocations(item, run, report)
    return report


@pytest.hookimpl(wrapper=True, tryfirst=True, specname="pytest_runtest_makereport")  # outermost: after pytest's xfail handling
def pytest_runtest_makereport_outcome(item: pytest.Item, call: pytest.CallInfo):
    """The phase's outcome as pytest reports it (an expected failure is xfailed, never failed): a
    second wrapper of the same hook, outside pytest's xfail handling (`specname`; pytest reads
    only names that start with pytest_)."""
    report: pytest.TestReport = yield
    if (run := simulated_run_of(item)) is not None:
        if report.passed and hasattr(report, "wasxfail") and (failure := item.stash.get(_FOREIGN_FAILURE, {}).get(call.when)):
            # An XPASS: pytest's xfail handling reads the call's error alone, and made the pass the
            # foreign allocation failed again. No expected failure excuses where memory went.
            report.outcome, report.longrepr = "failed", failure
            del report.wasxfail
        run.outcomes[call.when] = "xfailed" if hasattr(report, "wasxfail") else report.outcome
        if call.when == "teardown":
            report.user_properties.append((_RECORD, run.record()))
    return report


def _judge_foreign_allocations(item: pytest.Item, run: SimulatedRun, report: pytest.TestReport) -> None:
    from simcuda.allocations import describe  # imports torch (a simulated test ran: loaded already)
    from simcuda.runs import FAIL  # imports torch (as above)

    judged = run.foreign  # the call's, where this is the teardown: each allocation is judged once
    run.foreign = run.foreign_allocations()
    new = [entry for entry in run.foreign if entry not in judged]
    if not new:
        return
    message = f"simcuda: {describe(new)}"
    if run.foreign_policy == FAIL and report.passed:
        report.outcome = "failed"
        report.longrepr = message
        item.stash.setdefault(_FOREIGN_FAILURE, {})[report.when] = message
    else:
        report.sections.append(("simcuda", message))


class SimulatedSessionSummary:
    """On the controller: every simulated test's record (xdist workers' too), then the summary
    in the terminal and in the JSON file."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.records: dict[str, dict] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        for name, value in report.user_properties:
            if name == _RECORD:
                self.records[report.nodeid] = value

    def pytest_terminal_summary(self, terminalreporter) -> None:
        from simcuda.summary import summary_document, summary_lines  # imports torch (via allocations)

        document = summary_document(self.records)
        terminalreporter.section("simcuda: the simulated CUDA device")
        for line in summary_lines(document):
            terminalreporter.line(line)
        path = _report_path(self.config)
        path.write_text(json.dumps(document, indent=1), encoding="utf-8")
        terminalreporter.line(f"summary: {path}")
