"""Every command the docs give in a ```bash block (README.md, docs/) is held to what they say:
run here as written, run as written by CI or by a named self-test, or listed with why no
self-test runs it and what runs it instead (doc_commands.toml); a verdict line the docs' tables
state for a command run here is the one it prints."""

from __future__ import annotations

import ast
import os
import re
import shlex
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest

from fixtures.known_bugs.registry import load_registry
from reports.run.plugin_results import SELF_TEST_ENV
from tests.conftest import REPO
from tests.helpers.this_python import environment_of_this_python, run_as_written, this_pythons_folders, tool_of_this_python

# The front doors and the docs: the folders' READMEs that give commands to run (simcuda's is also its
# distribution's long description).
PAGES = [REPO / "README.md", REPO / "simcuda" / "README.md", REPO / "bench" / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
LISTED = tomllib.loads((Path(__file__).with_name("doc_commands.toml")).read_text(encoding="utf-8"))["command"]
BY_TEXT = {entry["text"]: entry for entry in LISTED}
HOWS = {"here", "ci", "test", "not-run"}


def block_commands(markdown: str) -> list[str]:
    """The commands of the ```bash / ```sh blocks: continuation lines joined, comments dropped."""
    commands: list[str] = []
    for block in re.findall(r"^```(?:bash|sh|shell)\n(.*?)^```", markdown, re.S | re.M):
        joined = re.sub(r"\\\n\s*", "", block)
        for line in joined.splitlines():
            command = re.sub(r"\s+#.*$", "", line).strip()
            if command and not command.startswith("#"):
                commands.append(re.sub(r"\s+", " ", command))
    return commands


def documented() -> dict[str, list[str]]:
    """Each command, with the pages that give it."""
    found: dict[str, list[str]] = {}
    for page in PAGES:
        for command in block_commands(page.read_text(encoding="utf-8")):
            found.setdefault(command, []).append(page.relative_to(REPO).as_posix())
    return found


def test_the_block_reader_joins_continuations_and_drops_comments() -> None:
    page = "text\n```bash\n# a comment\nFOO=1 pytest -n 2 \\\n    -m \"a or b\"   # why\n```\n```python\nprint(1)\n```\n"
    assert block_commands(page) == ['FOO=1 pytest -n 2 -m "a or b"']


def test_every_documented_command_is_listed_and_every_listed_one_documented() -> None:
    found = documented()
    assert len(found) >= 20, f"the docs' command blocks were not found: {sorted(found)}"
    unlisted = sorted(set(found) - set(BY_TEXT))
    assert not unlisted, "documented commands doc_commands.toml does not list (say how a self-test holds each):\n" + "\n".join(
        f"{command}  ({', '.join(found[command])})" for command in unlisted
    )
    gone = sorted(set(BY_TEXT) - set(found))
    assert not gone, f"doc_commands.toml lists commands no page gives any more: {gone}"


def test_every_listing_says_how_and_names_what_exists() -> None:
    ci_lines = {line.strip() for line in (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()}
    for entry in LISTED:
        how = entry["how"]
        assert how in HOWS, entry
        if how == "ci":
            assert entry["text"] in ci_lines, f"not a line of .ci/run: {entry['text']}"
        elif how == "test":
            path, function = entry["test"].split("::")
            names = {node.name for node in ast.walk(ast.parse((REPO / path).read_text(encoding="utf-8"))) if isinstance(node, ast.FunctionDef)}
            assert function in names, f"{entry['test']}: no such function"
        elif how == "not-run":
            assert entry.get("why") and entry.get("instead"), f"say why it is not run and what runs it instead: {entry}"


def stated_verdict_lines(command: str) -> dict[str, str]:
    """{release: verdict line} from the docs' table rows `| \\`command\\` (release) | \\`line\\` |`."""
    stated: dict[str, str] = {}
    pattern = re.compile(r"^\| `" + re.escape(command) + r"` \(([0-9.]+)[;)][^|]*\| `([^`]+)` \|", re.M)
    for page in PAGES:
        for release, line in pattern.findall(page.read_text(encoding="utf-8")):
            stated[release] = line
    return stated


def test_a_command_as_written_runs_this_python_whatever_path_says() -> None:
    """`python` and `pytest` in a documented command are this interpreter's even where PATH names none
    of its folders (`.venv/bin/python -m pytest tests` run without activating): never another Python."""
    done = run_as_written('python -c "import sys; print(sys.prefix)" && command -v pytest', env={"PATH": "/usr/bin:/bin"}, timeout=60)
    assert done.returncode == 0, done.stderr
    prefix, pytest_command = done.stdout.split()
    assert prefix == sys.prefix
    assert str(Path(pytest_command).parent) in this_pythons_folders()


def test_a_tool_is_the_one_beside_this_python_whatever_path_says(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    found = tool_of_this_python("pytest")
    assert found is not None and str(Path(found).parent) in this_pythons_folders()
    assert tool_of_this_python("no-such-tool-anywhere") is None


def test_this_pythons_folders_lead_path_once_and_its_venv_is_named() -> None:
    folders = this_pythons_folders()
    environ = environment_of_this_python({"PATH": os.pathsep.join(["/usr/bin", folders[0], "/bin"]), "VIRTUAL_ENV": "/another/venv", "KEPT": "1"})
    assert environ["PATH"].split(os.pathsep) == [*folders, "/usr/bin", "/bin"]
    assert environ["KEPT"] == "1"
    assert environ.get("VIRTUAL_ENV") == (sys.prefix if sys.prefix != sys.base_prefix else None)


@pytest.mark.parametrize("command", [entry["text"] for entry in LISTED if entry["how"] == "here"])
def test_a_command_run_here_does_what_the_docs_say(command: str) -> None:
    done = run_as_written(command, env={SELF_TEST_ENV: "1"}, timeout=600)  # the self-tests' rule: no reports over the suites'
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    stated = stated_verdict_lines(command)
    words = shlex.split(command)
    bug = words[words.index("--bug") + 1] if "--bug" in words else None
    installed = version(load_registry()[bug].package) if bug else None
    if installed in stated:
        printed = " ".join(next(line for line in done.stdout.splitlines() if line.startswith(stated[installed].split()[0] + " ")).split())
        assert printed.startswith(stated[installed]), f"the docs state `{stated[installed]}`, it printed `{printed}`"
