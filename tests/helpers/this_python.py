"""A command as the docs write it (`python ...`, `pytest ...`), run by a self-test with this
interpreter's environment: its folders first on PATH, as an activated venv has them. Without it,
`.venv/bin/python -m pytest tests` run without activating sends `python` to whichever Python PATH
names first (one without torch, or none at all)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Mapping
from pathlib import Path

from tests.conftest import REPO


def this_pythons_folders() -> list[str]:
    """Where this interpreter is and where its installs put their commands (one folder in a venv)."""
    return list(dict.fromkeys([str(Path(sys.executable).parent), sysconfig.get_path("scripts")]))


def tool_of_this_python(name: str) -> str | None:
    """A command this environment's install put beside its interpreter (zizmor, lint-imports), or
    None: never one of the same name from another environment on PATH."""
    return shutil.which(name, path=os.pathsep.join(this_pythons_folders()))


def environment_of_this_python(environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` as an activated environment of this interpreter has it: its folders first on PATH
    (and nowhere further on), VIRTUAL_ENV naming it if it is a venv (uv installs there), else unset."""
    folders = this_pythons_folders()
    rest = [entry for entry in environ.get("PATH", "").split(os.pathsep) if entry and entry not in folders]
    changed = {key: value for key, value in environ.items() if key != "VIRTUAL_ENV"} | {"PATH": os.pathsep.join([*folders, *rest])}
    return changed | ({"VIRTUAL_ENV": sys.prefix} if sys.prefix != sys.base_prefix else {})


def run_as_written(command: str, *, env: Mapping[str, str] | None = None, timeout: float) -> subprocess.CompletedProcess[str]:
    """A documented command line (a leading VAR=value, pipes and all) in a shell at the repository
    root, this process's environment with `env` over it, run by this interpreter's environment."""
    environ = environment_of_this_python({**os.environ, **(env or {})})
    return subprocess.run(["bash", "-c", command], cwd=REPO, env=environ, capture_output=True, text=True, timeout=timeout, check=False)
