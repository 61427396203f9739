"""`python -m <module> ...` for the self-tests, in a process forked from a warm one.

Most self-tests start pytest (or `python -m reports`) anew, as a user types it, and each such
process spends about 2.5 s of its 4 importing torch. `run()` takes the place of `subprocess.run`
for those commands: a server process per test process imports torch (and numpy, Pillow, jinja2,
pytest itself) once, never runs an op and starts no Python thread, then forks one child per
command.
The child becomes what `python -m <module> <args>` would have been: its own process group, the
command's working directory and whole environment, `sys.path` as a fresh interpreter builds it
from them (the directory, PYTHONPATH, then site-packages), stdin from /dev/null, stdout and
stderr to their own files, the module run as `__main__`, and at its end the interpreter's exit
steps (non-daemon threads joined, atexit handlers run, streams flushed) and its exit status (a
signal as a negative return code, as `subprocess.run` reports it).

What a fresh interpreter does that a fork cannot, and where `run()` therefore starts one instead
(so nothing it runs can differ): any command that is not `sys.executable -m <module>`; an
environment whose Python start-up variables (PYTHON*, other than PYTHONPATH) differ from this
process's, or which sets variables torch reads at import (TORCH*, PYTORCH*, OMP_*, MKL_*); a
PYTHONPATH entry holding a module the server imported (another torch); stdin input. The one
difference left: the children share the server's string-hash seed instead of drawing their own.

Plugins are not imported by the server: pytest rewrites assertions only in modules it imports
itself, and warns when a plugin was imported before it.
"""

from __future__ import annotations

import atexit
import io
import json
import os
import runpy
import signal
import subprocess
import sys
import tempfile
import threading
import time
import types
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest import Pytester

PRELOADED = ("torch", "numpy", "PIL.Image", "jinja2", "pytest")
# Set (to anything but empty), every command starts anew: to compare, or to rule the server out.
COLD = "HARNESS_SELF_TESTS_COLD"
# Read by torch (or the libraries it loads) at import; a child must get them from its own start.
IMPORT_TIME_PREFIXES = ("TORCH", "PYTORCH", "OMP_", "MKL_", "KMP_", "CUDA_MODULE_LOADING", "LD_")
# ... except inductor's and triton's, read when a compile first needs them (never at torch's
# import), which inductor itself sets in the test process (TORCHINDUCTOR_CACHE_DIR).
READ_AT_FIRST_COMPILE = ("TORCHINDUCTOR_", "TRITON_")
_POLL = 0.005  # seconds between looks at a running child


def eligible(command: Sequence[str], env: Mapping[str, str], base_env: Mapping[str, str]) -> bool:
    """Whether the command runs the same forked from the warm server as started anew."""
    if os.environ.get(COLD) or len(command) < 2 or command[0] != sys.executable or not command[1].startswith("-m"):
        return False
    if command[1] == "-m" and len(command) < 3:
        return False
    startup = {
        name for name in {*env, *base_env}
        if (name.startswith("PYTHON") and name != "PYTHONPATH")
        or (name.startswith(IMPORT_TIME_PREFIXES) and not name.startswith(READ_AT_FIRST_COMPILE))
    }
    if any(env.get(name) != base_env.get(name) for name in startup):
        return False
    return not any(_holds_a_preloaded_module(Path(entry)) for entry in env.get("PYTHONPATH", "").split(os.pathsep) if entry)


def _holds_a_preloaded_module(folder: Path) -> bool:
    tops = {name.split(".")[0] for name in PRELOADED}
    return any((folder / top).exists() or (folder / f"{top}.py").exists() for top in tops)


def module_and_arguments(command: Sequence[str]) -> tuple[str, list[str]]:
    """("pytest", [...]) of `python -m pytest ...` and of `python -mpytest ...`."""
    if command[1] == "-m":
        return command[2], list(command[3:])
    return command[1][2:], list(command[2:])


class WarmPython:
    """The client: one server, started at the first eligible command, ended with this process."""

    def __init__(self) -> None:
        self._server: subprocess.Popen | None = None
        self._lock = threading.Lock()
        self._base_env = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}

    def run(
        self, command: Sequence[str], *, cwd: str | os.PathLike, env: Mapping[str, str] | None = None,
        timeout: float | None = None, check: bool = False,
    ) -> subprocess.CompletedProcess:
        """As `subprocess.run(command, cwd=, env=, timeout=, check=, capture_output=True, text=True)`."""
        environ = dict(os.environ if env is None else env)
        if not eligible(command, environ, self._base_env):
            return subprocess.run(list(command), cwd=cwd, env=environ, timeout=timeout, check=check, capture_output=True, text=True)
        module, arguments = module_and_arguments(command)
        with self._lock, tempfile.TemporaryDirectory(prefix="warm-python-") as folder:
            request = {
                "module": module, "arguments": arguments, "cwd": os.path.abspath(cwd), "env": environ, "timeout": timeout,
                "stdout": str(Path(folder) / "stdout"), "stderr": str(Path(folder) / "stderr"),
            }
            answer = self._ask(request)
            stdout, stderr = (_as_text(Path(request[name]).read_bytes()) for name in ("stdout", "stderr"))
        if answer.get("timed_out"):
            raise subprocess.TimeoutExpired(list(command), timeout, output=stdout, stderr=stderr)
        done = subprocess.CompletedProcess(list(command), answer["returncode"], stdout, stderr)
        if check:
            done.check_returncode()
        return done

    def _ask(self, request: dict) -> dict:
        if self._server is None or self._server.poll() is not None:
            self._server = subprocess.Popen(
                [sys.executable, __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=self._base_env, text=True,
                cwd=Path(__file__).parent,
            )
            atexit.register(self.close)
        self._server.stdin.write(json.dumps(request) + "\n")
        self._server.stdin.flush()
        line = self._server.stdout.readline()
        if not line:
            raise RuntimeError(f"the warm Python server ended (exit {self._server.wait()}): run the command with subprocess.run to see why")
        return json.loads(line)

    def close(self) -> None:
        if self._server is not None and self._server.poll() is None:
            self._server.stdin.close()
            self._server.wait(timeout=30)
        self._server = None


def _as_text(data: bytes) -> str:
    """Bytes decoded as `subprocess.run(text=True)` decodes them (locale encoding, universal newlines)."""
    return io.TextIOWrapper(io.BytesIO(data)).read()


_CLIENT = WarmPython()


def run(
    command: Sequence[str], *, cwd: str | os.PathLike, env: Mapping[str, str] | None = None, timeout: float | None = None, check: bool = False,
) -> subprocess.CompletedProcess:
    """`subprocess.run(command, ..., capture_output=True, text=True)`, forked from the warm server
    where that runs the same (module docstring)."""
    return _CLIENT.run(command, cwd=cwd, env=env, timeout=timeout, check=check)


class DeferredPopen:
    """What `Pytester.run` asks of the Popen it starts (stdin, wait, kill), for a command `run()`
    runs when waited for, its output written to the files pytester gave."""

    def __init__(self, command: Sequence[str], environ: dict[str, str], stdout: IO[str], stderr: IO[str]) -> None:
        self.command, self.environ, self.cwd = list(command), environ, os.getcwd()
        self.stdout, self.stderr = stdout, stderr
        self.stdin = None
        self.returncode: int | None = None

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            try:
                done = run(self.command, cwd=self.cwd, env=self.environ, timeout=timeout)
            except subprocess.TimeoutExpired as expired:
                self.returncode = -signal.SIGKILL
                self.stdout.write(expired.output or "")
                self.stderr.write(expired.stderr or "")
                raise
            self.stdout.write(done.stdout)
            self.stderr.write(done.stderr)
            self.returncode = done.returncode
        return self.returncode

    def kill(self) -> None:
        """Nothing left to end: a timed-out command's process group was killed inside wait()."""


def pytester_popen(pytester: Pytester) -> Callable[..., Any]:
    """A replacement for `pytester.popen` whose pytest sessions fork from the warm server: the
    same environment (PYTHONPATH led by the working directory, as pytester sets it), stdin
    closed; any other use (stdin given, a pipe asked for) goes to pytester's own."""
    started = pytester.popen

    def popen(
        cmdargs: Sequence[str], stdout: Any = subprocess.PIPE, stderr: Any = subprocess.PIPE, stdin: Any = pytester.CLOSE_STDIN, **kw: Any
    ) -> Any:
        if stdin is not pytester.CLOSE_STDIN or kw or stdout is subprocess.PIPE or stderr is subprocess.PIPE:
            return started(cmdargs, stdout=stdout, stderr=stderr, stdin=stdin, **kw)
        environ = os.environ.copy()
        environ["PYTHONPATH"] = os.pathsep.join(filter(None, [os.getcwd(), environ.get("PYTHONPATH", "")]))
        return DeferredPopen([os.fspath(arg) for arg in cmdargs], environ, stdout, stderr)

    return popen


# --- the server (this file run as a script) ---


def _serve() -> None:
    for name in PRELOADED:
        __import__(name)
    # No Python thread may run at a fork. The one native thread numpy's import starts is OpenBLAS's
    # pool, which stops itself before a fork and starts again in the child (pthread_atfork);
    # torch's own pools start at the first parallel op, which the server never runs.
    if threading.active_count() != 1:
        raise SystemExit("warm Python: importing the preloaded modules started a Python thread; forking would be unsafe")
    base_path = sys.path[1:]  # a fresh interpreter's, less its first entry (this script's folder)
    answers = sys.stdout
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _become(request, base_path)
        answers.write(json.dumps(_wait(pid, request["timeout"])) + "\n")
        answers.flush()


def _wait(pid: int, timeout: float | None) -> dict:
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return {"returncode": os.waitstatus_to_exitcode(status)}
        if deadline is not None and time.monotonic() > deadline:
            os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return {"timed_out": True}
        time.sleep(_POLL)


def _become(request: dict, base_path: list[str]) -> None:
    """In the forked child: become `python -m <module> <arguments>`; never returns."""
    code = 1
    try:
        os.setpgid(0, 0)
        for fd, path, flags in ((0, os.devnull, os.O_RDONLY), (1, request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                                (2, request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):
            opened = os.open(path, flags)
            os.dup2(opened, fd)
            os.close(opened)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        pythonpath = [entry for entry in request["env"].get("PYTHONPATH", "").split(os.pathsep) if entry]
        sys.path[:] = [os.getcwd(), *map(os.path.abspath, pythonpath), *base_path]
        sys.argv = [request["module"], *request["arguments"]]
        try:
            # `python -m` runs the module in the __main__ module's namespace: a fresh, empty one here,
            # not this server's.
            main = sys.modules["__main__"] = types.ModuleType("__main__")
            main.__annotations__ = {}  # as the interpreter makes its __main__
            runpy._run_module_as_main(request["module"], alter_argv=True)  # what `python -m` itself calls
            code = 0
        except SystemExit as exit_:
            code = _exit_code(exit_.code)
        except BaseException as error:  # noqa: BLE001 - as the interpreter does: print it, exit 1
            _print_from_the_module(error)
            code = 1
        threading._shutdown()  # the interpreter's exit steps, in its order
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001 - a closed stream: nothing left to write
                pass
        os._exit(code)


def _print_from_the_module(error: BaseException) -> None:
    """The traceback without this file's frames, which a fresh interpreter has not."""
    import traceback  # deferred: only a failing command prints one

    frames = error.__traceback__
    while frames is not None and frames.tb_frame.f_code.co_filename == __file__:
        frames = frames.tb_next
    traceback.print_exception(type(error), error, frames)


def _exit_code(code: object) -> int:
    """The exit status `raise SystemExit(code)` gives: None 0, an int itself, anything else printed and 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


if __name__ == "__main__":
    _serve()
