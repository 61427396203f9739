"""No suite can break another bug's verdict: every import a suite makes from a library it tests
is guarded (`fixtures/known_bugs/library_api.py`), and an API an older release lacks is a
module-level skip naming the first release that has it, never a collection error (which stops
pytest before any test of any bug runs)."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest

from fixtures.known_bugs.library_api import absent_api_release, absent_reason, library_api
from fixtures.known_bugs.registry import load_registry
from tests.helpers import warm_python
from tests.helpers.absent_api_collection import REPO, SUITES, api_uses

# The libraries the suites test (the registry's packages); torch is the environment itself.
LIBRARIES = sorted({bug.package for bug in load_registry().values()} - {"torch"})


def unguarded_imports(source: str, libraries: list[str]) -> list[int]:
    """Lines of `import lib...` / `from lib... import` outside any function: they run at
    collection, where a missing name is an error of the whole session."""
    tree = ast.parse(source)
    inside_functions = {
        id(inner) for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) for inner in ast.walk(node)
    }
    lines = []
    for node in ast.walk(tree):
        if id(node) in inside_functions:
            continue
        names = (
            [alias.name for alias in node.names] if isinstance(node, ast.Import)
            else [node.module or ""] if isinstance(node, ast.ImportFrom)
            else []
        )
        if any(name.partition(".")[0] in libraries for name in names):
            lines.append(node.lineno)
    return lines


def test_unguarded_import_finder_sees_module_level_imports_only() -> None:
    source = "import kornia\nfrom torchvision.io import encode_jpeg\nimport torch\nif True:\n    import sam2\n\ndef f():\n    import kornia.filters\n"
    assert unguarded_imports(source, ["kornia", "torchvision", "sam2"]) == [1, 2, 5]


def test_suites_import_the_libraries_they_test_only_through_library_api() -> None:
    found = {
        f"{path.relative_to(REPO)}:{line}"
        for path in SUITES.rglob("*.py")
        for line in unguarded_imports(path.read_text(encoding="utf-8"), LIBRARIES)
    }
    assert not found, (
        f"import these through fixtures.known_bugs.library_api (a plain import breaks collection on releases without them): {sorted(found)}"
    )


def test_absent_reason_names_the_first_release_and_reads_back() -> None:
    reason = absent_reason("kornia", "0.7.1", "kornia.augmentation.RandomJPEG", "0.7.2")
    assert reason == "kornia 0.7.1 has no kornia.augmentation.RandomJPEG (first shipped in 0.7.2)"
    assert absent_api_release(reason) == "0.7.2"
    assert absent_api_release("cuda:1 requested, 0 CUDA devices visible") is None
    # A missing distribution is the registry's "not installed", never "predates".
    assert absent_api_release(absent_reason("sam2", None, "sam2.build_sam", "0.4.1")) is None


def test_library_api_returns_the_names_asked_for() -> None:
    assert library_api("json", first_release="1") is json
    assert library_api("json", "dumps", first_release="1") is json.dumps
    assert library_api("json", "dumps", "loads", first_release="1") == (json.dumps, json.loads)


@pytest.mark.parametrize(
    ("module", "names", "expected"),
    [
        ("pytest", ("no_such_function",), f"pytest {pytest.__version__} has no pytest.no_such_function (first shipped in 9.9)"),
        ("pytest.no_such_module", ("main",), f"pytest {pytest.__version__} has no pytest.no_such_module.main (first shipped in 9.9)"),
        ("no_such_distribution.api", (), "no_such_distribution is not installed (needed for no_such_distribution.api)"),
    ],
)
def test_library_api_skips_the_module_naming_what_is_missing(module: str, names: tuple[str, ...], expected: str) -> None:
    with pytest.raises(pytest.skip.Exception) as skipped:
        library_api(module, *names, first_release="9.9")
    assert skipped.value.allow_module_level
    assert skipped.value.msg.endswith(expected)


def test_a_module_whose_dependency_is_missing_is_no_older_release(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "wraps_missing.py").write_text("import no_such_dependency\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(pytest.skip.Exception) as skipped:
        library_api("wraps_missing", "anything", first_release="1.0")
    assert skipped.value.msg.startswith("cannot import wraps_missing: No module named 'no_such_dependency'")
    assert absent_api_release(skipped.value.msg) is None


def test_each_library_api_made_absent_is_a_named_skip_never_a_collection_error() -> None:
    """Each API the suites take from a library, made absent in turn (a fault shaped like a
    release before it shipped), then suites/ collected whole: no collection error, and a
    module-level skip that names the API and the first release that has it."""
    done = warm_python.run([sys.executable, "-m", "tests.helpers.absent_api_collection"], cwd=REPO, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    outcomes = [json.loads(line.removeprefix("RESULT ")) for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    faulted = [outcome for outcome in outcomes if outcome["exit"] is not None]
    assert {(use.module, use.name) for use in api_uses()} == {(o["module"], o["name"]) for o in outcomes}
    assert len(faulted) >= 20, "the kornia and torchvision APIs must be faulted here; both are installed"
    for outcome in faulted:
        api = f"{outcome['module']}.{outcome['name']}" if outcome["name"] else outcome["module"]
        assert outcome["errors"] == {}, f"{api} absent: collection errors {outcome['errors']}"
        assert outcome["exit"] in (0, 5), f"{api} absent: pytest exit {outcome['exit']}"
        named = [reason for reason in outcome["skips"].values() if f"has no {api}" in reason and absent_api_release(reason)]
        assert named, f"{api} absent: no skip names it with its first release: {outcome['skips']}"
