"""simcuda's layers (docs/reference/simcuda-modules.md): `lint-imports` keeps the contract in
pyproject.toml on this checkout, and breaks it on a copy with an import planted upward, sideways
or inside a function; every import a simcuda module makes inside a function says why; the module
map has a row for every module, in the layer the contract puts it."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import simcuda
from tests.helpers.this_python import tool_of_this_python

REPO = Path(__file__).resolve().parents[2]
SIMCUDA = REPO / "simcuda"
LINT_IMPORTS = tool_of_this_python("lint-imports") or "lint-imports"  # a missing one fails the run, naming it


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    """`lint-imports` with the repository's contract, over the `simcuda` found in `root`."""
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", str(REPO / "pyproject.toml")],
        cwd=root, env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=60,
    )


def test_the_checkout_keeps_the_layers() -> None:
    result = lint_imports(REPO)
    assert result.returncode == 0 and "1 kept, 0 broken" in result.stdout, result.stdout + result.stderr


PLANTED = {
    # a state module importing the wiring above it, as `from package import module`
    "upward": ("tensor.py", "from simcuda import runner\n", "simcuda.tensor -> simcuda.runner"),
    # a sibling of the same layer (functions and stand_ins share one)
    "sideways": ("stand_ins.py", "from simcuda.functions import SimulatedFunctions\n", "simcuda.stand_ins -> simcuda.functions"),
    # the deferred kind that tied the old circle: inside a function, never run at import time
    "inside a function": (
        "serialization.py", "def _later():\n    from simcuda.context import simulated_cuda\n", "simcuda.serialization -> simcuda.context",
    ),
}


@pytest.mark.parametrize("kind", PLANTED)
def test_an_import_against_the_layers_breaks_the_contract(tmp_path: Path, kind: str) -> None:
    module, planted, arrow = PLANTED[kind]
    copy = tmp_path / "simcuda"
    shutil.copytree(SIMCUDA, copy, ignore=shutil.ignore_patterns("__pycache__"))
    with (copy / module).open("a", encoding="utf-8") as file:
        file.write("\n\n" + planted)
    result = lint_imports(tmp_path)
    assert result.returncode == 1 and "0 kept, 1 broken" in result.stdout, result.stdout + result.stderr
    assert arrow in result.stdout


def test_a_type_only_import_upward_breaks_the_contract(tmp_path: Path) -> None:
    """Under TYPE_CHECKING an import never runs, yet it ties the lower module's meaning to the upper
    one's: the contract counts it (exclude_type_checking_imports = false)."""
    copy = tmp_path / "simcuda"
    shutil.copytree(SIMCUDA, copy, ignore=shutil.ignore_patterns("__pycache__"))
    with (copy / "rules.py").open("a", encoding="utf-8") as file:
        file.write("\n\nfrom typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from simcuda.runner import Runner\n")
    result = lint_imports(tmp_path)
    assert result.returncode == 1 and "simcuda.rules -> simcuda.runner" in result.stdout, result.stdout + result.stderr


def _deferred_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """The imports made inside a function body (TYPE_CHECKING blocks sit at module level)."""
    functions = [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return [node for function in functions for node in ast.walk(function) if isinstance(node, (ast.Import, ast.ImportFrom))]


def test_every_import_inside_a_function_says_why() -> None:
    unexplained = []
    for path in sorted(SIMCUDA.glob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        for node in _deferred_imports(ast.parse("\n".join(lines))):
            if "#" not in lines[node.lineno - 1]:
                unexplained.append(f"{path.name}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    assert not unexplained, "an import inside a function with no comment saying why:\n" + "\n".join(unexplained)


def test_a_session_that_asks_nothing_of_simcuda_never_imports_torch(tmp_path: Path) -> None:
    """The plugin is loaded by every pytest session of an environment that has simcuda; without
    --simcuda and SIMCUDA_RUNNER_GPUS it reads only torch-free modules (devices, unsupported)."""
    (tmp_path / "test_plain.py").write_text("def test_plain():\n    assert True\n", encoding="utf-8")
    probe = (
        "import sys, pytest; status = pytest.main(['-q', '-p', 'no:cacheprovider']); "
        "print('simcuda.pytest_plugin' in sys.modules, 'torch' in sys.modules, status)"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert result.stdout.split()[-3:] == ["True", "False", "0"], result.stdout + result.stderr  # loaded, no torch, passed


# The harness: everything of this checkout outside simcuda/ and its own self-tests.
HARNESS = ("conftest.py", "harness_command_line.py", "fixtures", "reports", "suites", "bench")


def private_simcuda_imports(source: str) -> list[str]:
    """The imports and attribute reads in `source` that reach past simcuda's public names (its
    `__all__`, and its version): a module of the package, or a name the package does not export."""
    public = {*simcuda.__all__, "__version__"}
    tree = ast.parse(source)
    # `simcuda.NAME` is the package's only where the source imports the package by that name.
    imports_the_package = any(
        isinstance(node, ast.Import) and any(alias.name == "simcuda" and alias.asname is None for alias in node.names) for node in ast.walk(tree)
    )
    found = []
    for node in ast.walk(tree):
        read_of_the_package = isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "simcuda"
        if imports_the_package and read_of_the_package and node.attr not in public:
            found.append(f"simcuda.{node.attr}")
        elif isinstance(node, ast.Import):
            found += [f"import {alias.name}" for alias in node.names if alias.name.startswith("simcuda.")]
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.module.split(".")[0] == "simcuda":
            private = [alias.name for alias in node.names if node.module != "simcuda" or alias.name not in public]
            found += [f"from {node.module} import {name}" for name in private]
    return found


def _harness_files() -> list[Path]:
    files = [REPO / name for name in HARNESS if name.endswith(".py")]
    return files + sorted(path for name in HARNESS if not name.endswith(".py") for path in (REPO / name).rglob("*.py"))


def test_the_harness_imports_only_simcudas_public_names() -> None:
    found = [f"{path.relative_to(REPO)}: {line}" for path in _harness_files() for line in private_simcuda_imports(path.read_text(encoding="utf-8"))]
    assert not found, "the harness reaches into simcuda's modules (export the name from simcuda/__init__.py):\n" + "\n".join(found)


@pytest.mark.parametrize(
    "planted",
    [
        "from simcuda.streams import StreamTable",
        "import simcuda.runner",
        "from simcuda import _LAZY",
        "from simcuda.tensor import wrap as w",
        "import simcuda\n    simcuda.runner.start_from_environment()",
    ],
)
def test_an_import_past_the_public_names_is_found(planted: str) -> None:
    assert private_simcuda_imports(f"import os\n\ndef later():\n    {planted}\n") != []


def test_no_public_name_is_also_a_module_of_the_package() -> None:
    """Importing `simcuda.NAME` sets the package's attribute NAME to that module: a public function
    of the same name would read as the module once anything imported it (as `runner_gpus` did)."""
    modules = {path.stem for path in SIMCUDA.glob("*.py")}
    assert not modules & set(simcuda.__all__), "public names that a module of simcuda would shadow"


MODULE_MAP = REPO / "docs" / "reference" / "simcuda-modules.md"


def contract_layers() -> dict[str, int]:
    """Each module the contract names -> its layer, counted from the bottom (0)."""
    layers = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"][0]["layers"]
    return {module.strip(): height for height, layer in enumerate(reversed(layers)) for module in layer.split("|")}


def test_the_module_map_has_a_row_for_every_module_in_its_contract_layer() -> None:
    """A row is `| L<n> ... | `module.py` | ...`; a module the map puts lower than another the
    contract puts lower too (the map may join two contract layers under one number: L0)."""
    page = MODULE_MAP.read_text(encoding="utf-8")
    rows = {module: int(level) for level, module in re.findall(r"^\| L(\d+)[^|]*\| `(\w+)\.py` \|", page, re.M)}
    modules = {path.stem for path in SIMCUDA.glob("*.py") if path.stem != "__init__"}
    assert set(rows) == modules, f"{MODULE_MAP.name}: rows for {sorted(set(rows) - modules)} (no such module), none for {sorted(modules - set(rows))}"
    layers = contract_layers()
    assert set(layers) == modules, f"the contract names {sorted(set(layers) ^ modules)} otherwise than the package holds"
    contradicting = [
        f"{low} L{rows[low]} below {high} L{rows[high]}, the contract the other way"
        for low in modules for high in modules if rows[low] < rows[high] and layers[low] >= layers[high]
    ]
    assert not contradicting, "\n".join(contradicting)
