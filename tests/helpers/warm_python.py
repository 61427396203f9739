"""`python -m <module> ...` for the self-tests, in a process forked from a warm one.

Most self-tests start pytest (or `python -m reports`) anew, as a user types it, and each such
process spends most of its time importing torch and torchvision (`pytest --bug kornia-2791`:
1.8-2.2 s forked from a server holding both, 5.2-6.7 s from one holding torch alone). `run()`
takes the place of `subprocess.run` for those commands: a server process per test process imports
them (and numpy, Pillow, jinja2, pytest itself) once, never runs an op and starts no Python
thread, then forks one child per command. Not kornia: its import adds little after torchvision's,
and a planted kornia on PYTHONPATH (the fault tests, bisect's commits) would send every such
command to a fresh interpreter.
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
PYTHONPATH entry holding a module the server imported (another torch, a planted torchvision);
stdin input. The differences left: the children share the server's string-hash seed instead of
drawing their own, and the preloaded modules' objects sit in the garbage collector's permanent
generation (`gc.freeze()`), never collected.

The Pythons a forked command starts itself the same way (pytest-xdist's workers `-u -c ...`,
pytest-isolated's children `-u -m pytest ...`, a `python -m pytest` the harness runs) fork from the
server too: in a forked command `subprocess.Popen` starts, for such a Python, a small stand-in
process (this file with `--popen`) that hands its stdin, stdout and stderr to the server over a
Unix socket; a waiter forked from the server forks the Python, passes on the signals the stand-in
gets, kills the Python when the stand-in is killed, and sends back its exit status, with which the
stand-in ends (a signal as the same signal). A child that is no such Python (git) carries the
server's address (ADDRESS) instead; a Python it starts in turn (git bisect run's steps) forks its
own Pythons from the server where helpers/warm_site/ is on its PYTHONPATH.

Plugins are not imported by the server: pytest rewrites assertions only in modules it imports
itself, and warns when a plugin was imported before it.
"""

from __future__ import annotations

import atexit
import gc
import io
import itertools
import json
import os
import runpy
import select
import signal
import socket
import struct
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

PRELOADED = ("torch", "torchvision", "numpy", "PIL.Image", "jinja2", "pytest")
# Set (to anything but empty), every command starts anew: to compare, or to rule the server out.
COLD = "HARNESS_SELF_TESTS_COLD"
# Read by torch (or the libraries it loads) at import; a child must get them from its own start.
IMPORT_TIME_PREFIXES = ("TORCH", "PYTORCH", "OMP_", "MKL_", "KMP_", "CUDA_MODULE_LOADING", "LD_")
# ... except inductor's and triton's, read when a compile first needs them (never at torch's
# import), which inductor itself sets in the test process (TORCHINDUCTOR_CACHE_DIR).
READ_AT_FIRST_COMPILE = ("TORCHINDUCTOR_", "TRITON_")
_POLL = 0.005  # seconds between looks at a running child
# A forked command's child that is no Python the server forks (git, say) carries the server's
# address here: a Python that child starts in turn (git bisect run's steps) forks its own Pythons
# from the server too, when it loads helpers/warm_site/ (on its PYTHONPATH) at start-up.
ADDRESS = "HARNESS_WARM_PYTHON"


def eligible(command: Sequence[str], env: Mapping[str, str], base_env: Mapping[str, str]) -> bool:
    """Whether the command runs the same forked from the warm server as started anew."""
    if os.environ.get(COLD) or len(command) < 2 or command[0] != sys.executable or not command[1].startswith("-m"):
        return False
    if command[1] == "-m" and len(command) < 3:
        return False
    return forkable_environment(env, base_env)


def forkable_environment(env: Mapping[str, str], base_env: Mapping[str, str]) -> bool:
    """Whether a Python started with `env` starts as one forked from a server started with
    `base_env` would: the same start-up and import-time variables, no PYTHONPATH holding another
    copy of a preloaded module."""
    if startup_variables(env) != startup_variables(base_env):
        return False
    return not any(_holds_a_preloaded_module(Path(entry)) for entry in env.get("PYTHONPATH", "").split(os.pathsep) if entry)


# Interpreter options a Popen'd Python may carry and still start forked (pytest-xdist's workers:
# `-u -c <bootstrap>`; pytest-isolated's children: `-u -m pytest ...`).
POPEN_OPTIONS = frozenset({"-u", "-B"})


def popen_plan(args: object, env: Mapping[str, str] | None, base_env: Mapping[str, str]) -> tuple[list[str], list[str]] | None:
    """(interpreter options, the rest) when a forked command's `Popen(args, env=env)` starts a
    Python that a fork from the server runs the same: `sys.executable`, options among
    POPEN_OPTIONS, then `-c CODE` or `-m MODULE`, an eligible environment; else None."""
    if not isinstance(args, (list, tuple)) or not all(isinstance(arg, str) for arg in args) or not args or args[0] != sys.executable:
        return None
    options = list(itertools.takewhile(POPEN_OPTIONS.__contains__, args[1:]))
    rest = list(args[1 + len(options) :])
    if len(rest) < 2 or rest[0] not in ("-c", "-m"):
        return None
    forkable = not os.environ.get(COLD) and forkable_environment(os.environ if env is None else env, base_env)
    return (options, rest) if forkable else None


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

# The Unix socket a forked command's Popen'd Pythons reach the server through (made by _serve).
_LISTENER: list[socket.socket] = []
_SOCKET_PATH: list[str] = []
_WAITERS: set[int] = set()  # forked to look after one Popen'd Python each (_start_worker)
_LENGTH = struct.Struct("!I")
_STATUS = struct.Struct("!i")  # an exit status, or a signal's number sent on to the worker


def _serve() -> None:
    for name in PRELOADED:
        __import__(name)
    # No Python thread may run at a fork. The one native thread numpy's import starts is OpenBLAS's
    # pool, which stops itself before a fork and starts again in the child (pthread_atfork);
    # torch's own pools start at the first parallel op, which the server never runs.
    if threading.active_count() != 1:
        raise SystemExit("warm Python: importing the preloaded modules started a Python thread; forking would be unsafe")
    base_path = sys.path[1:]  # a fresh interpreter's, less its first entry (this script's folder)
    base_env = dict(os.environ)
    # The preloaded modules' objects out of every later collection: a child's first collection
    # would otherwise write to each of them and copy nearly every page the fork shares (the
    # README-options and plugin sessions, against the server before the stand-ins: 0.66x the time
    # with it, 0.88x without, torch alone preloaded).
    gc.freeze()
    answers = sys.stdout
    # Removed in `finally`, not by atexit or a TemporaryDirectory (whose finalizer is an atexit
    # hook): each forked child runs the interpreter's exit steps, and would remove it.
    folder = Path(tempfile.mkdtemp(prefix="warm-python-"))
    try:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(folder / "popen"))
        listener.listen(16)
        _LISTENER.append(listener)
        _SOCKET_PATH.append(listener.getsockname())
        for line in sys.stdin:
            request = json.loads(line)
            pid = os.fork()
            if pid == 0:
                _become(request, base_path, base_env)
            answers.write(json.dumps(_wait(pid, request["timeout"], base_path, base_env)) + "\n")
            answers.flush()
    finally:
        (folder / "popen").unlink(missing_ok=True)
        folder.rmdir()


def _wait(pid: int, timeout: float | None, base_path: list[str], base_env: dict[str, str]) -> dict:
    """The command's exit, starting the Pythons it Popens meanwhile (_start_worker)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            _reap_waiters()
            return {"returncode": os.waitstatus_to_exitcode(status)}
        if deadline is not None and time.monotonic() > deadline:
            os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return {"timed_out": True}
        if select.select(_LISTENER, [], [], _POLL)[0]:
            _start_worker(_LISTENER[0].accept()[0], base_path, base_env)
        _reap_waiters()


def _reap_waiters() -> None:
    for waiter in list(_WAITERS):
        if os.waitpid(waiter, os.WNOHANG)[0]:
            _WAITERS.discard(waiter)


def _become(request: dict, base_path: list[str], base_env: dict[str, str]) -> None:
    """In the forked child: become `python -m <module> <arguments>`; never returns."""
    try:
        os.setpgid(0, 0)
        for fd, path, flags in ((0, os.devnull, os.O_RDONLY), (1, request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                                (2, request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):
            opened = os.open(path, flags)
            os.dup2(opened, fd)
            os.close(opened)
        _LISTENER[0].close()  # the command reaches the server by the socket's path (_warm_popen)
    except BaseException:  # noqa: BLE001 - never back into the server's loop
        os._exit(1)
    _run_as_main(request["cwd"], request["env"], base_path, base_env, [request["module"], *request["arguments"]])


def _run_as_main(cwd: str, env: dict[str, str], base_path: list[str], base_env: dict[str, str], command: list[str]) -> None:
    """Become `python -m MODULE ARGS` (command: [MODULE, *ARGS]) or `python -c CODE ARGS` (["-c",
    CODE, *ARGS]) in `cwd` with `env`, then the interpreter's exit steps; never returns. The
    Pythons it Popens (xdist's workers, pytest-isolated's children) fork from the server too."""
    code = 1
    try:
        subprocess.Popen = _warm_popen(_SOCKET_PATH[0], base_env)
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        pythonpath = [entry for entry in env.get("PYTHONPATH", "").split(os.pathsep) if entry]
        # `python -m` puts the working directory first, `python -c` an empty string.
        sys.path[:] = [os.getcwd() if command[0] != "-c" else "", *map(os.path.abspath, pythonpath), *base_path]
        try:
            # A fresh, empty __main__ (not this server's), as the interpreter makes it.
            main = sys.modules["__main__"] = types.ModuleType("__main__")
            main.__annotations__ = {}
            if command[0] == "-c":
                sys.argv = ["-c", *command[2:]]
                main.__builtins__ = __builtins__
                exec(compile(command[1], "<string>", "exec"), main.__dict__)
            else:
                sys.argv = command
                runpy._run_module_as_main(command[0], alter_argv=True)  # what `python -m` itself calls
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


# --- a forked command's Popen'd Pythons ---


def _warm_popen(socket_path: str, base_env: Mapping[str, str]) -> type[subprocess.Popen]:
    """`subprocess.Popen` for a forked command: a Python that popen_plan accepts starts as a small
    stand-in process (this file, `--popen`) that hands its stdin, stdout and stderr to the server,
    which forks the Python from its warm state; the stand-in lives as long as that Python, passes
    the signals it gets on to it, and ends with its exit status (a signal as the same signal), so
    waiting, polling and killing it is waiting, polling and killing the Python."""

    class WarmPopen(subprocess.Popen):
        def __init__(self, args: Any, *positional: Any, **options: Any) -> None:
            plain = not positional and not {"executable", "shell", "preexec_fn", "start_new_session", "process_group", "pass_fds"} & {
                name for name, value in options.items() if value
            }
            if plain and popen_plan(args, options.get("env"), base_env) is not None:
                args = [sys.executable, "-S", "-E", __file__, "--popen", socket_path, *args[1:]]
            else:
                address = json.dumps({"socket": socket_path, "startup": startup_variables(base_env)})
                options["env"] = {**(os.environ if options.get("env") is None else options["env"]), ADDRESS: address}
            super().__init__(args, *positional, **options)

    return WarmPopen


def startup_variables(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables `forkable_environment` compares: what a Python reads at its start and torch at import."""
    return {
        name: value for name, value in environ.items()
        if (name.startswith("PYTHON") and name != "PYTHONPATH")
        or (name.startswith(IMPORT_TIME_PREFIXES) and not name.startswith(READ_AT_FIRST_COMPILE))
    }


def fork_from_the_address(address: str) -> None:
    """In a Python a forked command's child started (helpers/warm_site/sitecustomize.py): the Pythons
    it Popens fork from the server at `address` (ADDRESS's value), where their environment lets them."""
    found = json.loads(address)
    subprocess.Popen = _warm_popen(found["socket"], found["startup"])


def _start_worker(connection: socket.socket, base_path: list[str], base_env: dict[str, str]) -> None:
    """A stand-in's request: fork a waiter, which forks the Python and looks after it."""
    message, fds, _, _ = socket.recv_fds(connection, 1 << 16, 3)
    while len(message) < _LENGTH.size or len(message) < _LENGTH.size + _LENGTH.unpack_from(message)[0]:
        message += connection.recv(1 << 16)
    request = json.loads(message[_LENGTH.size :])
    waiter = os.fork()
    if waiter:
        _WAITERS.add(waiter)
        connection.close()
        for fd in fds:
            os.close(fd)
        return
    try:
        _LISTENER[0].close()
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1):  # the server's request and answer pipes: only the server keeps them
            os.dup2(devnull, fd)
        worker = os.fork()
        if worker == 0:
            connection.close()
            _become_worker(request, fds, base_path, base_env)
        for fd in fds:
            os.close(fd)
        _look_after(worker, connection)
    finally:
        os._exit(1)  # only an error gets here: neither may return to the server's loop


def _look_after(worker: int, connection: socket.socket) -> None:
    """The waiter: pass the stand-in's signals on; its end (killed) ends the worker's process
    group; the worker's end is sent back as its exit status. Never returns."""
    while True:
        done, status = os.waitpid(worker, os.WNOHANG)
        if done:
            try:
                connection.sendall(_STATUS.pack(os.waitstatus_to_exitcode(status)))
            except OSError:
                pass  # the stand-in is gone already
            os._exit(0)
        if select.select([connection], [], [], _POLL)[0]:
            received = _read_exactly(connection, _STATUS.size)
            if received is None:  # the stand-in was killed
                os.killpg(worker, signal.SIGKILL)
                os.waitpid(worker, 0)
                os._exit(0)
            os.kill(worker, _STATUS.unpack(received)[0])  # as a signal to a Popen'd child reaches it


def _read_exactly(connection: socket.socket, size: int) -> bytes | None:
    """`size` bytes, or None when the other end closed first."""
    received = b""
    while len(received) < size:
        chunk = connection.recv(size - len(received))
        if not chunk:
            return None
        received += chunk
    return received


def _become_worker(request: dict, fds: list[int], base_path: list[str], base_env: dict[str, str]) -> None:
    """The Popen'd Python: the stand-in's stdin, stdout and stderr, the options' streams; never returns."""
    try:
        os.setpgid(0, 0)
        for target, fd in zip((0, 1, 2), fds):
            os.dup2(fd, target)
            os.close(fd)
        options, rest = request["options"], request["rest"]
        sys.dont_write_bytecode = "-B" in options
        unbuffered = "-u" in options
        encoding, _, errors = request["env"].get("PYTHONIOENCODING", "").partition(":")
        sys.stdin = sys.__stdin__ = io.TextIOWrapper(
            io.BufferedReader(io.FileIO(0, "rb", closefd=False)), encoding=encoding or None, errors=errors or None
        )
        sys.stdout = sys.__stdout__ = _output_stream(1, unbuffered, encoding or None, errors or "strict")
        sys.stderr = sys.__stderr__ = _output_stream(2, unbuffered, encoding or None, "backslashreplace")
    except BaseException:  # noqa: BLE001 - never back into the waiter's code
        os._exit(1)
    _run_as_main(request["cwd"], request["env"], base_path, base_env, rest if rest[0] == "-c" else rest[1:])


def _output_stream(fd: int, unbuffered: bool, encoding: str | None, errors: str) -> io.TextIOWrapper:
    """stdout or stderr as a fresh interpreter opens them: text over a buffer (stderr, and a
    terminal, line-buffered), or with `-u` over the file itself, written through."""
    raw = io.FileIO(fd, "wb", closefd=False)
    line_buffered = fd == 2 or os.isatty(fd)
    binary = raw if unbuffered else io.BufferedWriter(raw)
    return io.TextIOWrapper(binary, encoding=encoding, errors=errors, write_through=unbuffered, line_buffering=line_buffered)


def _stand_in(socket_path: str, args: list[str]) -> None:
    """`--popen SOCKET ARGS`: hand this process's stdin, stdout and stderr and ARGS to the server,
    pass signals on, end as the Python it started ends. Runs with -S -E: nothing imported but these."""
    plan = popen_plan([sys.executable, *args], None, os.environ)
    if plan is None:  # not a command the server forks after all: the interpreter itself
        os.execv(sys.executable, [sys.executable, *args])
    request = json.dumps({"options": plan[0], "rest": plan[1], "cwd": os.getcwd(), "env": dict(os.environ)}).encode()
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(socket_path)
    socket.send_fds(connection, [_LENGTH.pack(len(request)) + request], [0, 1, 2])

    def pass_on(number: int, frame: object) -> None:
        try:
            connection.sendall(_STATUS.pack(number))
        except OSError:
            pass

    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(number, pass_on)
    received = _read_exactly(connection, _STATUS.size)
    if received is None:
        os._exit(1)  # the server ended
    status = _STATUS.unpack(received)[0]
    if status < 0:
        signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
    os._exit(status)


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
    if sys.argv[1:2] == ["--popen"]:
        _stand_in(sys.argv[2], sys.argv[3:])
    else:
        _serve()
