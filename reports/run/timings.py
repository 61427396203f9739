"""Where a run's time went, by phase: what pytest's own durations leave out (start-up, collection,
the start and exit of pytest-isolated's children, CUDA's start, the reports) beside the tests'
own setup, call and teardown. Pure: the plugin (plugin_timings.py) feeds it what it measured."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

SLOWEST_FILES = 3


@dataclass
class Durations:
    """The phases' seconds of the tests that ran in one place (in process, or in isolated children)."""

    setup: float = 0.0
    call: float = 0.0
    teardown: float = 0.0

    def add(self, when: str, seconds: float) -> None:
        setattr(self, when, getattr(self, when) + seconds)

    @property
    def total(self) -> float:
        return self.setup + self.call + self.teardown


@dataclass
class Timeline:
    """What a serial run measured, in seconds (None: not measured)."""

    start_up: float | None = None  # process start to pytest_configure: the interpreter, torch, the plugins
    collection: float = 0.0
    children: int = 0  # pytest-isolated's child processes
    children_at_once: int = 1  # side by side, taking turns on the GPUs (fixtures/devices/gpu_turns.py)
    children_wall: float = 0.0
    in_children: Durations = field(default_factory=Durations)
    # The simulated-device tests' child, beside the GPU children and taking no turn: from the start
    # of the children to each kind's last report (pytest-isolated reports a child once it has reaped it).
    simulated_child_wall: float | None = None
    in_simulated_child: Durations = field(default_factory=Durations)
    gpu_children_wall: float | None = None
    in_process_wall: float = 0.0
    in_process: Durations = field(default_factory=Durations)
    cuda_start: float = 0.0  # torch.cuda.init(), in this process and in the children
    cuda_starts: int = 0
    by_file: dict[str, float] = field(default_factory=dict)  # every test's setup, call and teardown

    def add_report(self, nodeid: str, when: str, seconds: float, in_child: bool, simulated_child: bool = False) -> None:
        (self.in_simulated_child if simulated_child else self.in_children if in_child else self.in_process).add(when, seconds)
        path = nodeid.split("::")[0]
        self.by_file[path] = self.by_file.get(path, 0.0) + seconds


def process_age(stat: str, uptime: str, ticks_per_second: int) -> float:
    """Seconds since this process started, from Linux's /proc/self/stat (field 22, starttime, in
    clock ticks since boot) and /proc/uptime; the command name in field 2 may hold spaces."""
    after_name = stat.rpartition(")")[2].split()
    return float(uptime.split()[0]) - int(after_name[19]) / ticks_per_second


def slowest_files(by_file: Mapping[str, float], count: int = SLOWEST_FILES) -> list[tuple[str, float]]:
    return sorted(by_file.items(), key=lambda item: (-item[1], item[0]))[:count]


def phases(timeline: Timeline, reports: float | None = None) -> dict[str, object]:
    """The phases as results.json and the terminal give them (seconds, rounded to 0.1)."""

    def seconds(value: float) -> float:
        return round(value, 1)

    document: dict[str, object] = {}
    if timeline.start_up is not None:
        document["start_up_s"] = seconds(timeline.start_up)
    document["collection_s"] = seconds(timeline.collection)
    if timeline.children:
        # Beside a simulated child, the GPU children's own span: the simulated child may outlast them.
        beside = timeline.simulated_child_wall is not None and timeline.gpu_children_wall is not None
        span = timeline.gpu_children_wall if beside else timeline.children_wall
        document["isolated_children"] = {
            "count": timeline.children,
            "at_once": timeline.children_at_once,
            "wall_s": seconds(timeline.children_wall),
            "tests_s": seconds(timeline.in_children.total),
            "process_start_and_exit_s": seconds(span - timeline.in_children.total),
        }
        if timeline.simulated_child_wall is not None:
            document["isolated_children"]["gpu_children_wall_s"] = seconds(span)
            document["isolated_children"]["simulated_child"] = {
                "wall_s": seconds(timeline.simulated_child_wall),
                "tests_s": seconds(timeline.in_simulated_child.total),
            }
    document["tests_in_process"] = {
        "wall_s": seconds(timeline.in_process_wall),
        "setup_s": seconds(timeline.in_process.setup),
        "call_s": seconds(timeline.in_process.call),
        "teardown_s": seconds(timeline.in_process.teardown),
        "between_tests_s": seconds(timeline.in_process_wall - timeline.in_process.total),
    }
    document["cuda_start"] = {"processes": timeline.cuda_starts, "s": seconds(timeline.cuda_start)}
    if reports is not None:
        document["reports_s"] = seconds(reports)
    document["slowest_files"] = [{"file": path, "s": seconds(total)} for path, total in slowest_files(timeline.by_file)]
    return document


def phase_lines(document: Mapping[str, object]) -> list[str]:
    """The terminal's few lines for phases()."""
    parts = []
    if "start_up_s" in document:
        parts.append(f"start-up {document['start_up_s']} s")
    parts.append(f"collection {document['collection_s']} s")
    if children := document.get("isolated_children"):
        at_once = f"{children['at_once']} at once, " if children["at_once"] > 1 else ""
        simulated = children.get("simulated_child")
        whose = f"the GPU children {children['gpu_children_wall_s']} s: their" if simulated else "their"
        beside = f"; the simulated devices' child {simulated['wall_s']} s, its tests {simulated['tests_s']} s" if simulated else ""
        parts.append(
            f"{children['count']} isolated child process(es) {children['wall_s']} s "
            f"({at_once}{whose} tests {children['tests_s']} s, process start and exit {children['process_start_and_exit_s']} s{beside})"
        )
    tests = document["tests_in_process"]
    parts.append(
        f"tests in process {tests['wall_s']} s (setup {tests['setup_s']}, call {tests['call_s']}, "
        f"teardown {tests['teardown_s']}, between tests {tests['between_tests_s']})"
    )
    cuda = document["cuda_start"]
    if cuda["processes"]:
        parts.append(f"CUDA start {cuda['s']} s in {cuda['processes']} process(es) (within the tests' setup)")
    if "reports_s" in document:
        parts.append(f"verdicts and reports {document['reports_s']} s")
    files = "; ".join(f"{row['file']} {row['s']} s" for row in document["slowest_files"])
    return [", ".join(parts), f"the slowest test files (setup, call and teardown): {files}"] if files else [", ".join(parts)]
