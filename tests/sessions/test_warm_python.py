"""helpers/warm_python.py, which most sessions of these self-tests run through: a command forked
from the warm server gives what the same command started anew gives (output, exit status, a
signal, an exception's traceback, atexit and thread endings), a timeout ends the command's whole
process group, and every command a fork could run differently is started anew. So do the Pythons
such a command Popens (pytest-xdist's workers, pytest-isolated's children): their stand-in's
pipes, exit status and signal are the Python's, and killing it kills the Python."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.helpers import warm_python

PROBE = '''
import atexit, json, os, sys, threading, time
mode = sys.argv[1]
print(json.dumps({"argv": sys.argv, "path": sys.path[:2], "cwd": os.getcwd(), "name": __name__, "stdin": sys.stdin.read(),
                  "env": {k: v for k, v in os.environ.items() if k.startswith("PROBE")}, "globals": sorted(globals())}))
atexit.register(lambda: print("atexit ran"))
threading.Thread(target=lambda: (time.sleep(0.1), print("thread joined"))).start()
if mode == "exit-3":
    sys.exit(3)
if mode == "exit-text":
    sys.exit("leaving with words")
if mode == "raise":
    raise ValueError("boom")
if mode == "segfault":
    import signal
    os.kill(os.getpid(), signal.SIGSEGV)
if mode == "sleep-with-a-child":
    import subprocess
    child = subprocess.Popen(["sleep", "60"])
    print(child.pid, file=sys.stderr, flush=True)
    time.sleep(60)
print("to stderr", file=sys.stderr)
'''

# A command that Popens a Python as pytest-xdist does (`-u -c CODE`, its pipes), then reports it.
POPEN_PROBE = '''
import json, os, subprocess, sys, time
mode = sys.argv[1]
code = """
import json, os, sys, time
line = sys.stdin.readline()
print(json.dumps({"got": line.strip(), "argv": sys.argv, "path0": sys.path[0], "name": __name__, "cwd": os.getcwd(),
                  "env": os.environ.get("PROBE_CHILD"), "pid": os.getpid(), "unbuffered": sys.stdout.write_through,
                  "torch imported": "torch" in sys.modules}))
sys.stdout.flush()
print("to stderr", file=sys.stderr)
if sys.argv[1] == "segfault":
    import signal
    os.kill(os.getpid(), signal.SIGSEGV)
if sys.argv[1] == "sleep":
    time.sleep(60)
sys.exit(7)
"""
child = subprocess.Popen([sys.executable, "-u", "-c", code, mode], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env={**os.environ, "PROBE_CHILD": "yes"})
if mode == "sleep":
    child.stdin.write(b"go\\n")
    child.stdin.flush()
    pid = json.loads(child.stdout.readline())["pid"]
    child.kill()
    status = child.wait()
    time.sleep(0.2)
    gone = not os.path.exists(f"/proc/{pid}") or "zombie" in open(f"/proc/{pid}/status").read().lower()
    print(status, gone)
else:
    out, err = child.communicate(b"hello\\n", timeout=60)
    print(out.decode(), err.decode(), child.returncode)
'''


@pytest.fixture(autouse=True)
def warm(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about the forked path: a cold run of the self-tests must not skip it."""
    monkeypatch.delenv(warm_python.COLD, raising=False)


@pytest.fixture
def probe(tmp_path: Path) -> dict[str, str]:
    """An environment whose PYTHONPATH holds the `probe` module."""
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "probe.py").write_text(PROBE, encoding="utf-8")
    (tmp_path / "lib" / "popen_probe.py").write_text(POPEN_PROBE, encoding="utf-8")
    return {**os.environ, "PYTHONPATH": str(tmp_path / "lib"), "PROBE_VALUE": "1"}


@pytest.mark.parametrize("mode", ["plain", "exit-3", "exit-text", "raise", "segfault"])
def test_a_forked_command_gives_what_a_fresh_one_gives(probe: dict[str, str], tmp_path: Path, mode: str) -> None:
    command = [sys.executable, "-m", "probe", mode]
    fresh = subprocess.run(command, cwd=tmp_path, env=probe, capture_output=True, text=True, timeout=60, check=False)
    warm = warm_python.run(command, cwd=tmp_path, env=probe, timeout=60)
    assert (warm.returncode, warm.stdout, warm.stderr) == (fresh.returncode, fresh.stdout, fresh.stderr)
    assert warm_python.eligible(command, probe, warm_python._CLIENT._base_env)  # it did run forked


@pytest.mark.parametrize("mode", ["plain", "segfault"])
def test_a_python_a_forked_command_popens_gives_what_a_fresh_one_gives(probe: dict[str, str], tmp_path: Path, mode: str) -> None:
    """Its argv, `sys.path[0]`, `__main__`, working directory, environment, unbuffered stdout (`-u`),
    pipes both ways, exit status and signal, as pytest-xdist's workers need them."""
    command = [sys.executable, "-m", "popen_probe", mode]
    fresh = subprocess.run(command, cwd=tmp_path, env=probe, capture_output=True, text=True, timeout=60, check=False)
    warm = warm_python.run(command, cwd=tmp_path, env=probe, timeout=60)
    fresh_child, warm_child = (json.loads(done.stdout.splitlines()[0]) for done in (fresh, warm))
    assert fresh_child.pop("pid") != warm_child.pop("pid")
    assert (fresh_child.pop("torch imported"), warm_child.pop("torch imported")) == (False, True)  # forked from the server
    assert (warm_child, warm.stdout.splitlines()[1:], warm.stderr) == (fresh_child, fresh.stdout.splitlines()[1:], fresh.stderr)


@pytest.mark.parametrize(("warm_site", "forked"), [(True, True), (False, False)])
def test_a_python_started_by_a_forked_commands_other_child_forks_its_pythons_where_warm_site_is_loaded(
    probe: dict[str, str], tmp_path: Path, warm_site: bool, forked: bool
) -> None:
    """git bisect run's steps: a forked command starts git (no Python: started as it is), git a fresh
    Python; with helpers/warm_site/ on its PYTHONPATH, the Pythons that one Popens fork from the server."""
    folders = [str(REPO), str(REPO / "tests" / "helpers" / "warm_site")] if warm_site else []
    env = {**probe, "PYTHONPATH": os.pathsep.join([probe["PYTHONPATH"], *folders])}
    relay = f"import subprocess, sys; sys.exit(subprocess.run(['sh', '-c', '{sys.executable} -m popen_probe plain']).returncode)"
    (tmp_path / "lib" / "relay.py").write_text(relay, encoding="utf-8")
    warm = warm_python.run([sys.executable, "-m", "relay"], cwd=tmp_path, env=env, timeout=60)
    assert json.loads(warm.stdout.splitlines()[0])["torch imported"] is forked, warm.stdout + warm.stderr


def test_killing_a_popened_python_kills_it(probe: dict[str, str], tmp_path: Path) -> None:
    """pytest-xdist and pytest-isolated end a worker with Popen.kill(): its stand-in dies, and the
    Python forked for it with it (-9, as for a fresh one)."""
    warm = warm_python.run([sys.executable, "-m", "popen_probe", "sleep"], cwd=tmp_path, env=probe, timeout=60)
    assert warm.stdout.split() == ["-9", "True"], warm.stdout + warm.stderr


@pytest.mark.parametrize(
    ("arguments", "changes", "forked"),
    [
        (["-u", "-c", "pass"], {}, True),  # pytest-xdist's worker
        (["-u", "-m", "pytest", "-q"], {}, True),  # pytest-isolated's child
        (["-B", "-c", "pass"], {}, True),
        (["-X", "dev", "-c", "pass"], {}, False),  # an interpreter option it does not play
        (["script.py"], {}, False),
        (["-c", "pass"], {"PYTHONHASHSEED": "7"}, False),
    ],
)
def test_a_popened_python_a_fork_could_run_differently_starts_anew(arguments: list[str], changes: dict[str, str], forked: bool) -> None:
    base = {name: value for name, value in os.environ.items() if not name.startswith("PYTHONHASHSEED")}
    assert (warm_python.popen_plan([sys.executable, *arguments], {**base, **changes}, base) is not None) is forked
    assert warm_python.popen_plan(["/usr/bin/python3", *arguments], base, base) is None


def test_a_timeout_ends_the_command_and_its_children(probe: dict[str, str], tmp_path: Path) -> None:
    with pytest.raises(subprocess.TimeoutExpired) as expired:
        warm_python.run([sys.executable, "-m", "probe", "sleep-with-a-child"], cwd=tmp_path, env=probe, timeout=1)
    grandchild = int(expired.value.stderr.split()[0])
    time.sleep(0.2)
    assert not Path(f"/proc/{grandchild}").exists() or "zombie" in Path(f"/proc/{grandchild}/status").read_text().lower()


@pytest.mark.parametrize(
    ("command", "changes", "forked"),
    [
        (["-m", "pytest"], {}, True),
        (["-mpytest", "-q"], {}, True),
        (["-m", "pytest"], {"PYTHONPATH": "/nowhere"}, True),
        (["-c", "print(1)"], {}, False),  # not `-m`
        (["script.py"], {}, False),
        (["-m", "pytest"], {"PYTHONHASHSEED": "7"}, False),  # read at the interpreter's start
        (["-m", "pytest"], {"PYTHONWARNINGS": "error"}, False),
        (["-m", "pytest"], {"TORCH_LOGS": "dynamo"}, False),  # read by torch at import
        (["-m", "pytest"], {"OMP_NUM_THREADS": "1"}, False),
        (["-m", "pytest"], {"TORCHINDUCTOR_CACHE_DIR": "/tmp/x"}, True),  # read at the first compile
    ],
)
def test_a_command_a_fork_could_run_differently_starts_anew(command: list[str], changes: dict[str, str], forked: bool) -> None:
    base = {name: value for name, value in os.environ.items() if not name.startswith(("PYTHONHASHSEED", "PYTHONWARNINGS", "TORCH", "OMP_"))}
    assert warm_python.eligible([sys.executable, "-m", "pytest"], base, base)  # the unchanged environment forks
    assert warm_python.eligible([sys.executable, *command], {**base, **changes}, base) is forked


def test_a_pythonpath_holding_another_torch_starts_anew(tmp_path: Path) -> None:
    (tmp_path / "torch").mkdir()
    assert not warm_python.eligible([sys.executable, "-m", "pytest"], {"PYTHONPATH": str(tmp_path)}, {})
    assert warm_python.eligible([sys.executable, "-m", "pytest"], {"PYTHONPATH": str(tmp_path / "elsewhere")}, {})


def test_the_cold_switch_starts_every_command_anew(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(warm_python.COLD, "1")
    assert not warm_python.eligible([sys.executable, "-m", "pytest"], {}, {})


def test_another_interpreter_starts_anew() -> None:
    assert not warm_python.eligible(["/usr/bin/python3", "-m", "pytest"], {}, {})


def test_pytesters_subprocess_sessions_run_forked_with_its_pythonpath(pytester: pytest.Pytester) -> None:
    """The `pytester` fixture (tests/conftest.py) runs runpytest_subprocess through the server:
    pytester's own PYTHONPATH (its folder first) reaches the session, as with pytester's Popen."""
    pytester.makepyfile(helper_module="VALUE = 5\n")
    pytester.makepyfile(test_uses_it="import helper_module\n\ndef test_it():\n    assert helper_module.VALUE == 5\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", timeout=120)
    result.assert_outcomes(passed=1)
