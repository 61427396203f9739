"""simcuda as a distribution of its own (simcuda/pyproject.toml): the wheel `pip install ./simcuda`
builds holds the package and its pytest11 plugin and nothing of the harness, depends on torch and
pytest only, and carries the version simcuda.__version__ and CHANGELOG.md name. Built from a copy,
so the checkout gets no build folders."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile

import pytest
from uv import find_uv_bin

import simcuda
from tests.conftest import REPO

PACKAGE = REPO / "simcuda"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    source = tmp_path_factory.mktemp("source") / "simcuda"
    shutil.copytree(PACKAGE, source, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
    out = tmp_path_factory.mktemp("wheel")
    # uv, a dependency of the harness's install: an environment uv made has no pip.
    built = subprocess.run(
        [find_uv_bin(), "build", "--wheel", "--no-build-isolation", "--python", sys.executable, "--out-dir", str(out), "-q", str(source)],
        capture_output=True, text=True, check=False, timeout=300,
    )
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    (path,) = out.glob("simcuda-*.whl")
    return zipfile.ZipFile(path)


def metadata(wheel: zipfile.ZipFile, suffix: str) -> str:
    (name,) = [name for name in wheel.namelist() if name.endswith(f".dist-info/{suffix}")]
    return wheel.read(name).decode()


def test_it_depends_on_torch_and_pytest_only(wheel: zipfile.ZipFile) -> None:
    requires = [line.split(": ", 1)[1] for line in metadata(wheel, "METADATA").splitlines() if line.startswith("Requires-Dist: ")]
    assert [re.split(r"[<>=!~ ;\[]", requirement, maxsplit=1)[0] for requirement in requires] == ["torch", "pytest"], requires


def test_it_holds_the_package_and_its_plugin_and_nothing_of_the_harness(wheel: zipfile.ZipFile) -> None:
    version = simcuda.__version__
    outside = [name for name in wheel.namelist() if not name.startswith(("simcuda/", f"simcuda-{version}.dist-info/"))]
    assert outside == []
    modules = {f"simcuda/{path.name}" for path in PACKAGE.glob("*.py")}
    assert modules <= set(wheel.namelist()), modules - set(wheel.namelist())
    assert "[pytest11]\nsimcuda = simcuda.pytest_plugin" in metadata(wheel, "entry_points.txt")


def test_its_version_is_the_changelogs_newest(wheel: zipfile.ZipFile) -> None:
    newest = re.search(r"^## (\S+)", (PACKAGE / "CHANGELOG.md").read_text(encoding="utf-8"), re.M)
    assert newest is not None, "CHANGELOG.md has no version heading"
    assert f"\nVersion: {simcuda.__version__}\n" in metadata(wheel, "METADATA")
    assert newest[1] == simcuda.__version__
