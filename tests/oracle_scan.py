"""Static (ast) scans behind the fault x oracle matrix: which suite functions are oracles, and which
oracles the fault tests' `catches` markers name.

Static, not from collected items, so a `pytest tests -k ...` selection cannot hide a marker or an
oracle. An oracle ref is "path::function", the path relative to the repository root.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
# The two ways a suite says "the bug is there" (fixtures/outcomes.py).
RAISED_FINDING = "BugObserved"
OBSERVE_CALL = "observe"
CATCHES_MARKER = "catches"


def ref(path: str, function: str) -> str:
    return f"{path}::{function}"


def split_ref(oracle_ref: str) -> tuple[str, str]:
    """("path", "function") of "path::function"; ValueError when it is not of that form."""
    path, separator, function = oracle_ref.partition("::")
    if not (path and separator and function):
        raise ValueError(f"not a 'path::function' ref: {oracle_ref!r}")
    return path, function


def top_level_functions(tree: ast.Module) -> Iterator[tuple[str, FunctionNode]]:
    """Module-level functions and class methods ("Class.method"); nested defs stay inside their
    outer function."""
    for node in tree.body:
        if isinstance(node, FunctionNode):
            yield node.name, node
        elif isinstance(node, ast.ClassDef):
            for member in node.body:
                if isinstance(member, FunctionNode):
                    yield f"{node.name}.{member.name}", member


def expr_name(expr: ast.expr) -> str | None:
    """`f` for `f` and `module.f`; None for other expressions."""
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        return expr.attr
    return None


def called_name(call: ast.Call) -> str | None:
    return expr_name(call.func)


def raises_finding(node: ast.AST) -> bool:
    """`raise BugObserved(...)` (or the bare class)."""
    if not isinstance(node, ast.Raise) or node.exc is None:
        return False
    raised = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
    return expr_name(raised) == RAISED_FINDING


def is_oracle(function: FunctionNode) -> bool:
    return any(
        raises_finding(node) or (isinstance(node, ast.Call) and called_name(node) == OBSERVE_CALL)
        for node in ast.walk(function)
    )


def oracles_in_source(source: str) -> list[str]:
    """Names of the functions in `source` whose bodies raise BugObserved or call observe()."""
    return [name for name, function in top_level_functions(ast.parse(source)) if is_oracle(function)]


def defined_functions(source: str) -> set[str]:
    return {name for name, _ in top_level_functions(ast.parse(source))}


def python_files(root: Path, folder: str) -> list[Path]:
    return sorted((root / folder).rglob("*.py"))


def suite_oracles(root: Path) -> list[str]:
    """Every oracle ref under suites/."""
    return [
        ref(path.relative_to(root).as_posix(), name)
        for path in python_files(root, "suites")
        for name in oracles_in_source(path.read_text())
    ]


def catches_args(decorator: ast.expr) -> list[str] | None:
    """The string arguments of a `pytest.mark.catches(...)` decorator; None for other decorators."""
    if not (isinstance(decorator, ast.Call) and isinstance(decorator.func, ast.Attribute)):
        return None
    marker = decorator.func
    if marker.attr != CATCHES_MARKER or not (isinstance(marker.value, ast.Attribute) and marker.value.attr == "mark"):
        return None
    return [arg.value for arg in decorator.args if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]


def catches_in_source(source: str) -> dict[str, list[str]]:
    """{test function: oracle refs} for every function in `source` carrying a catches marker."""
    marked: dict[str, list[str]] = {}
    for name, function in top_level_functions(ast.parse(source)):
        refs = [found for decorator in function.decorator_list for found in catches_args(decorator) or []]
        if refs or any(catches_args(decorator) is not None for decorator in function.decorator_list):
            marked[name] = refs
    return marked


def fault_tests(root: Path) -> dict[str, list[str]]:
    """{"tests/file.py::test": oracle refs} over every catches marker in tests/*.py."""
    return {
        ref(path.relative_to(root).as_posix(), name): refs
        for path in sorted((root / "tests").glob("*.py"))
        for name, refs in catches_in_source(path.read_text()).items()
    }


def ref_exists(root: Path, oracle_ref: str) -> bool:
    """The ref's file exists under `root` and defines the function."""
    path, function = split_ref(oracle_ref)
    file = root / path
    return file.is_file() and function in defined_functions(file.read_text())


def unproven_oracles(root: Path) -> list[str]:
    """Suite oracles that no catches marker under tests/ names."""
    named = {oracle for refs in fault_tests(root).values() for oracle in refs}
    return [oracle for oracle in suite_oracles(root) if oracle not in named]


def broken_refs(root: Path) -> list[str]:
    """"test: ref" for every catches ref whose file or function does not exist, and "test: (none)"
    for a marker naming nothing."""
    return [
        f"{test}: {oracle}"
        for test, refs in fault_tests(root).items()
        for oracle in refs or ["(none)"]
        if oracle == "(none)" or not ref_exists(root, oracle)
    ]
