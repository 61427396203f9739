"""`pytest tests suites` (a contributor's whole run, mutmut's selection) collects both folders. A
conftest.py outside a package is imported under the bare name `conftest`, the root's and
suites/'s alike, so a module importing `conftest` by name gets whichever was loaded last: the
harness's plugin list lives in fixtures/plugins.py for that reason."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO


def imports_of_a_bare_conftest(source: str) -> list[int]:
    """The lines of `import conftest` and `from conftest import ...` (not `tests.conftest`)."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if (isinstance(node, ast.Import) and any(alias.name == "conftest" for alias in node.names))
        or (isinstance(node, ast.ImportFrom) and node.module == "conftest" and node.level == 0)
    ]


def test_the_scan_finds_both_forms_and_leaves_a_packages_conftest() -> None:
    source = "import conftest\nfrom conftest import x\nimport tests.conftest\nfrom tests.conftest import REPO\ntext = 'import conftest'\n"
    assert imports_of_a_bare_conftest(source) == [1, 2]


def test_no_module_of_the_checkout_imports_a_conftest_by_its_bare_name() -> None:
    modules: list[Path] = [path for folder in ("tests", "suites", "fixtures", "reports") for path in (REPO / folder).rglob("*.py")]
    found = [
        f"{path.relative_to(REPO)}:{line}"
        for path in sorted(modules + [REPO / "conftest.py"])
        for line in imports_of_a_bare_conftest(path.read_text(encoding="utf-8"))
    ]
    assert not found, "import the harness's plugin list from fixtures.plugins instead:\n" + "\n".join(found)
