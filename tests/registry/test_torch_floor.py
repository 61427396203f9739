"""The torch floor the two pyproject files state is true: no lower than the first torch release of
any torch API the code calls. On an older torch every test errored (torch.get_default_device, 2.3)
or every simulated test failed (torch.accelerator, 2.6), while the floor said 2.1."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

REPO = Path(__file__).resolve().parents[2]
CODE = ("fixtures", "reports", "simcuda", "suites")
# torch APIs newer than torch 2.1 that the code calls, and the first torch release with each
# (torch's release notes). A new such call adds its row; the floor must follow.
NEWER_TORCH_APIS = {
    "torch.get_default_device": "2.3",
    "torch.accelerator": "2.6",
}


def torch_floor(pyproject: Path) -> Version:
    """The lowest torch release a pyproject's dependencies allow."""
    dependencies = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["dependencies"]
    (torch,) = [Requirement(line) for line in dependencies if Requirement(line).name == "torch"]
    (lowest,) = [Version(spec.version) for spec in torch.specifier if spec.operator == ">="]
    return lowest


def apis_called(roots: tuple[str, ...]) -> set[str]:
    """Which of NEWER_TORCH_APIS appear in the code outside comments."""
    pattern = re.compile("|".join(re.escape(api) for api in NEWER_TORCH_APIS))
    found = set()
    for root in roots:
        for path in (REPO / root).rglob("*.py"):
            for line in path.read_text(encoding="utf-8").splitlines():
                found.update(pattern.findall(line.split("#", 1)[0]))
    return found


def test_the_code_calls_the_apis_the_table_names() -> None:
    assert apis_called(CODE) == set(NEWER_TORCH_APIS), "a row of NEWER_TORCH_APIS no code calls any more: drop it"


def test_each_pyproject_torch_floor_has_every_api_the_code_calls() -> None:
    needed = max(Version(NEWER_TORCH_APIS[api]) for api in apis_called(CODE))
    for pyproject in (REPO / "pyproject.toml", REPO / "simcuda" / "pyproject.toml"):
        assert torch_floor(pyproject) >= needed, f"{pyproject.relative_to(REPO)}: torch>={torch_floor(pyproject)}, the code needs {needed}"


def test_the_floor_reader_takes_the_lower_bound(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project]\ndependencies = ["pytest>=8", "torch>=2.1,<3"]\n', encoding="utf-8")
    assert torch_floor(pyproject) == Version("2.1")
