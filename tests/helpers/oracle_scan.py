"""Static (ast) scans behind the fault x oracle matrix: which functions of suites/ and fixtures/
are oracles, and which oracles the fault tests' `catches` markers name.

Static, not from collected items, so a `pytest tests -k ...` selection cannot hide a marker or an
oracle. An oracle ref is "path::function", the path relative to the repository root.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from pathlib import Path

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
# The ways the harness says "the bug is there": fixtures/known_bugs/outcomes.py's exception and helper, and
# fixtures/proxies/meta_proxy.py's proxy verdict. Aliases, subclasses and prebuilt instances of them are
# found too (finding_names), so renaming one does not hide an oracle.
FINDING_NAMES = frozenset({"BugObserved", "observe", "FINDING"})
# Where they are defined: the protocol itself, not an oracle.
PROTOCOL_FILES = frozenset({"fixtures/known_bugs/outcomes.py"})
# Proxies whose functions decide what a suite sees without raising (they return findings): every
# function of theirs that a suite imports is an oracle.
PROXY_MODULES = ("fixtures/proxies/meta_proxy.py", "fixtures/proxies/module_state.py", "fixtures/proxies/stream_proxy.py")
# Calls that test an exception's type rather than raise one.
TYPE_TESTS = frozenset({"isinstance", "issubclass", "errisinstance"})
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


def mentions(node: ast.AST, names: frozenset[str]) -> bool:
    """`node` uses one of `names` to produce a finding: a call, a raise, a reference handed on.
    Not counted: the type in `except X:`, `isinstance(e, X)`, a comparison (`kind == FINDING`
    reads a verdict), annotations."""
    if isinstance(node, ast.ExceptHandler):
        return any(mentions(statement, names) for statement in node.body)
    if isinstance(node, (ast.Compare, ast.arg)):
        return False
    if isinstance(node, ast.Call) and expr_name(node.func) in TYPE_TESTS:
        return False
    if isinstance(node, ast.Name) and node.id in names:
        return True
    if isinstance(node, ast.Attribute) and node.attr in names:
        return True
    if isinstance(node, ast.AnnAssign):
        return node.value is not None and mentions(node.value, names)
    return any(mentions(child, names) for child in ast.iter_child_nodes(node))


def aliases_in(tree: ast.Module, names: frozenset[str]) -> set[str]:
    """Module-level names that stand for a finding: `import ... as x` of one, `x = observe`,
    `x = BugObserved("...")` (raised later), `x = lambda ...: observe(...)`, `class X(BugObserved)`."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.alias) and node.asname and node.name.rsplit(".", 1)[-1] in names:
            found.add(node.asname)
    for statement in tree.body:
        if isinstance(statement, ast.ClassDef) and any(mentions(base, names) for base in statement.bases):
            found.add(statement.name)
        elif isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None and mentions(statement.value, names):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            found.update(target.id for target in targets if isinstance(target, ast.Name))
    return found


def finding_names(trees: Iterable[ast.Module]) -> frozenset[str]:
    """FINDING_NAMES and every alias, subclass or prebuilt instance of them in `trees`, to a
    fixed point (an alias of an alias counts; across modules, as suites import each other)."""
    trees = list(trees)
    names = FINDING_NAMES
    while True:
        grown = names.union(*(aliases_in(tree, names) for tree in trees))
        if grown == names:
            return names
        names = grown


def is_oracle(function: FunctionNode, names: frozenset[str] = FINDING_NAMES) -> bool:
    return any(mentions(statement, names) for statement in function.body)


def oracles_in_source(source: str, names: frozenset[str] | None = None) -> list[str]:
    """Names of the functions in `source` whose bodies produce a finding (raise BugObserved, call
    observe, return FINDING, or do so through an alias)."""
    tree = ast.parse(source)
    names = finding_names([tree]) if names is None else names
    return [name for name, function in top_level_functions(tree) if is_oracle(function, names)]


def defined_functions(source: str) -> set[str]:
    return {name for name, _ in top_level_functions(ast.parse(source))}


def python_files(root: Path, folder: str) -> list[Path]:
    return sorted((root / folder).rglob("*.py"))


def scanned_files(root: Path) -> dict[str, ast.Module]:
    """{path from root: parsed source} of suites/ and fixtures/, the protocol's own file left out."""
    paths = [*python_files(root, "suites"), *python_files(root, "fixtures")]
    return {
        path.relative_to(root).as_posix(): ast.parse(path.read_text())
        for path in paths
        if path.relative_to(root).as_posix() not in PROTOCOL_FILES
    }


def imported_proxy_functions(root: Path, files: dict[str, ast.Module]) -> list[str]:
    """Refs of the PROXY_MODULES functions that some suite imports."""
    refs: set[str] = set()
    for proxy in PROXY_MODULES:
        if not (root / proxy).is_file():
            continue
        module = proxy.removesuffix(".py").replace("/", ".")
        defined = defined_functions((root / proxy).read_text())
        for path, tree in files.items():
            if path.startswith("suites/"):
                refs.update(
                    ref(proxy, alias.name)
                    for node in ast.walk(tree)
                    if isinstance(node, ast.ImportFrom) and node.module == module
                    for alias in node.names
                    if alias.name in defined
                )
    return sorted(refs)


def all_oracles(root: Path) -> list[str]:
    """Every oracle ref under suites/ and fixtures/: functions that produce a finding, and the
    proxy functions the suites call."""
    files = scanned_files(root)
    names = finding_names(files.values())
    found = [
        ref(path, name) for path, tree in files.items() for name, function in top_level_functions(tree) if is_oracle(function, names)
    ]
    return found + [proxy for proxy in imported_proxy_functions(root, files) if proxy not in found]


class Unreadable(ValueError):
    """A catches argument whose value the scan cannot work out without running the module."""


def module_constants(tree: ast.Module) -> dict[str, ast.expr]:
    """`NAME = value` assignments at module level (the last one wins, as at import)."""
    constants: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            constants[node.targets[0].id] = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            constants[node.target.id] = node.value
    return constants


def static_strings(node: ast.expr, constants: dict[str, ast.expr]) -> list[str]:
    """The string(s) an expression stands for, read without running it: a literal, a module
    constant, an f-string or `+` of those, a tuple or list of them (`*REFS` unpacks one)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Name) and node.id in constants:
        return static_strings(constants[node.id], constants)
    if isinstance(node, ast.Starred) or (isinstance(node, (ast.Tuple, ast.List))):
        items = [node.value] if isinstance(node, ast.Starred) else node.elts
        return [text for item in items for text in static_strings(item, constants)]
    if isinstance(node, ast.JoinedStr):
        return ["".join(_one_string(part.value if isinstance(part, ast.FormattedValue) else part, constants) for part in node.values)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return [_one_string(node.left, constants) + _one_string(node.right, constants)]
    raise Unreadable(ast.unparse(node))


def _one_string(node: ast.expr, constants: dict[str, ast.expr]) -> str:
    texts = static_strings(node, constants)
    if len(texts) != 1:
        raise Unreadable(ast.unparse(node))
    return texts[0]


def catches_args(decorator: ast.expr, constants: dict[str, ast.expr] | None = None) -> list[str] | None:
    """The oracle refs of a `pytest.mark.catches(...)` decorator (or of a module constant bound to
    one); None for other decorators. An argument the scan cannot read is given as
    "(unreadable: <its source>)", which names no oracle, so the completeness checks report it."""
    constants = constants or {}
    if isinstance(decorator, ast.Name) and decorator.id in constants:
        decorator = constants[decorator.id]
    if not (isinstance(decorator, ast.Call) and isinstance(decorator.func, ast.Attribute)):
        return None
    marker = decorator.func
    if marker.attr != CATCHES_MARKER or not (isinstance(marker.value, ast.Attribute) and marker.value.attr == "mark"):
        return None
    refs: list[str] = []
    for arg in decorator.args:
        try:
            refs += static_strings(arg, constants)
        except Unreadable as error:
            refs.append(f"(unreadable: {error})")
    return refs


def catches_in_source(source: str) -> dict[str, list[str]]:
    """{test function: oracle refs} for every function in `source` carrying a catches marker."""
    marked: dict[str, list[str]] = {}
    tree = ast.parse(source)
    constants = module_constants(tree)
    for name, function in top_level_functions(tree):
        found = [catches_args(decorator, constants) for decorator in function.decorator_list]
        if any(refs is not None for refs in found):
            marked[name] = [oracle for refs in found for oracle in refs or []]
    return marked


def fault_tests(root: Path) -> dict[str, list[str]]:
    """{"tests/group/file.py::test": oracle refs} over every catches marker in tests/, at any depth."""
    return {
        ref(path.relative_to(root).as_posix(), name): refs
        for path in sorted((root / "tests").rglob("*.py"))
        for name, refs in catches_in_source(path.read_text()).items()
    }


def ref_exists(root: Path, oracle_ref: str) -> bool:
    """The ref's file exists under `root` and defines the function."""
    path, function = split_ref(oracle_ref)
    file = root / path
    return file.is_file() and function in defined_functions(file.read_text())


def unproven_oracles(root: Path) -> list[str]:
    """Oracles (suites/ and fixtures/) that no catches marker under tests/ names."""
    named = {oracle for refs in fault_tests(root).values() for oracle in refs}
    return [oracle for oracle in all_oracles(root) if oracle not in named]


def broken_refs(root: Path) -> list[str]:
    """"test: ref" for every catches ref whose file or function does not exist, and "test: (none)"
    for a marker naming nothing."""
    return [
        f"{test}: {oracle}"
        for test, refs in fault_tests(root).items()
        for oracle in refs or ["(none)"]
        if oracle == "(none)" or not ref_exists(root, oracle)
    ]
