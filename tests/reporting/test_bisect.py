"""python -m reports bisect: the exit-code mapping as a table, git's answers read back, bad input as
one line, and end to end on a tiny package made in a temporary git repository (a bug planted at
one commit, a commit that does not build, a later fix), with uv, git bisect run and the harness's
own pytest plugins doing the real work."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures.known_bugs.verdicts import ERROR, INCONCLUSIVE, NOT_OBSERVED, OBSERVED, SKIPPED
from fixtures.known_bugs.versions import installed_version
from fixtures.plugins import HARNESS_PLUGINS
from reports.__main__ import main
from reports.bisect.answers import NEW, OLD, SKIP, git_answer, pull_request, step_answer
from reports.scan.run import install_into
from tests.helpers import warm_python

REPO = Path(__file__).resolve().parents[2]


def record(verdict: str, observation: str, evidence: str | None = "proxy") -> dict:
    return {"verdict": verdict, "observation": observation, "evidence": evidence, "detail": "why"}


@pytest.mark.parametrize(
    ("run", "kind", "fixed", "present", "status"),
    [
        (record("reproduced", OBSERVED), "deterministic", False, True, NEW),  # the bug: bad
        (record("regressed", OBSERVED), "deterministic", False, True, NEW),  # outside the registry's range: still the bug
        (record("fixed", NOT_OBSERVED), "deterministic", False, False, OLD),  # good
        (record("not-reproduced", NOT_OBSERVED), "deterministic", False, False, OLD),
        # A build between releases whose version the registry cannot place: the observation decides.
        (record(INCONCLUSIVE, NOT_OBSERVED), "deterministic", False, False, OLD),
        (record(INCONCLUSIVE, INCONCLUSIVE), "deterministic", False, None, SKIP),
        (record(SKIPPED, SKIPPED, None), "deterministic", False, None, SKIP),
        (record(ERROR, ERROR, None), "deterministic", False, None, SKIP),
        (None, "deterministic", False, None, SKIP),  # pytest crashed, or the install failed
        (record("reproduced", OBSERVED), "race", False, True, NEW),  # a race seen is seen
        (record("fixed", NOT_OBSERVED), "race", False, None, SKIP),  # a race not seen proves nothing
        # --fixed: the bug is the old term, its absence the new one.
        (record("reproduced", OBSERVED), "deterministic", True, True, OLD),
        (record("fixed", NOT_OBSERVED), "deterministic", True, False, NEW),
        (record(ERROR, ERROR, None), "deterministic", True, None, SKIP),
    ],
)
def test_what_a_step_tells_git(run: dict | None, kind: str, fixed: bool, present: bool | None, status: int) -> None:
    answer = step_answer(run, kind, fixed)
    assert (answer.bug_present, answer.exit_status) == (present, status)


HASH_A, HASH_B = "a" * 40, "b" * 40


@pytest.mark.parametrize(
    ("output", "term", "first", "candidates"),
    [
        (f"{HASH_A} is the first bad commit\ncommit {HASH_A}\n", "bad", HASH_A, ()),
        (f"{HASH_A} is the first fixed commit\n", "fixed", HASH_A, ()),
        (f"{HASH_A} is the first fixed commit\n", "bad", None, ()),  # another term's answer is none
        (
            "There are only 'skip'ped commits left to test.\nThe first bad commit could be any of:\n"
            f"{HASH_A}\n{HASH_B}\nWe cannot bisect more!\n",
            "bad", None, (HASH_A, HASH_B),
        ),
        ("bisect run failed:\nexit code 128 from 'python' is < 0 or >= 128\n", "bad", None, ()),
    ],
)
def test_gits_answer_is_read_back(output: str, term: str, first: str | None, candidates: tuple[str, ...]) -> None:
    answer = git_answer(output, term)
    assert (answer.first, answer.candidates) == (first, candidates)


@pytest.mark.parametrize(
    ("subject", "pr"),
    [
        ("fix device of the jitter (#2792)", "https://github.com/kornia/kornia/pull/2792"),
        ("Merge pull request #15 from someone/branch", "https://github.com/kornia/kornia/pull/15"),
        ("refactor the codec", None),
    ],
)
def test_the_pull_request_a_subject_names(subject: str, pr: str | None) -> None:
    assert pull_request(subject, "https://github.com/kornia/kornia/issues/2791") == pr


# The tiny package: tinybug.double() doubles, except where the bug is planted.
PYPROJECT = (
    '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n'
    '[project]\nname = "{name}"\nversion = "{version}"\n'
)
SOURCE = {"ok": "def double(x):\n    return 2 * x\n", "bug": "def double(x):\n    return 2 * x + 1\n"}
REGISTRY = """[tinybug-1]
title = "double() is off by one"
package = "tinybug"
affected = ">=0.0"
issue = "https://github.com/example/tinybug/issues/1"
kind = "deterministic"
symptom_device = "cpu"
"""
# The bug's suite: the harness's plugins, one proxy test raising the oracle's BugObserved.
SUITE = {
    "conftest.py": f"pytest_plugins = {list(HARNESS_PLUGINS)!r}\n",
    "test_tinybug.py": (
        "import pytest\nimport tinybug\nfrom fixtures.known_bugs.outcomes import observe\n\n\n"
        '@pytest.mark.known_bug("tinybug-1", evidence="proxy")\n'
        "def test_double():\n    observe(tinybug.double(2) != 4, f'double(2) gave {tinybug.double(2)}')\n"
    ),
}


def make_repository(
    path: Path, history: list[tuple[str, str]], name: str = "tinybug", pyproject: str = "", extra: dict[str, str] | None = None
) -> list[str]:
    """One commit per (state, subject): state "ok", "bug", or "broken" (a pyproject that does not
    parse, so the commit does not build); the distribution is `name`, `pyproject` is added to each
    one's, `extra` files to each tree. The commits' hashes, oldest first."""
    return commit_trees(path, [
        (
            subject,
            {
                "tinybug/__init__.py": SOURCE.get(state, SOURCE["ok"]),
                "pyproject.toml": "[project\n" if state == "broken" else version(number, name) + pyproject,
                **(extra or {}),
            },
        )
        for number, (state, subject) in enumerate(history)
    ])


def version(number: int, name: str = "tinybug") -> str:
    return PYPROJECT.format(name=name, version=f"0.{number}")


def commit_trees(path: Path, trees: list[tuple[str, dict[str, str]]]) -> list[str]:
    """One commit per (subject, files): the files are the commit's whole tree. Hashes, oldest first."""
    path.mkdir()
    def git(*arguments: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", *arguments], cwd=path, check=True, capture_output=True, text=True)
    git("init", "--quiet", "--initial-branch=main")
    commits = []
    for number, (subject, files) in enumerate(trees):
        git("rm", "-r", "--quiet", "--ignore-unmatch", ".")
        for name, text in files.items():
            (path / name).parent.mkdir(parents=True, exist_ok=True)
            (path / name).write_text(text)
        git("add", "-A")
        git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "--quiet", "-m", subject, "--date", f"2024-01-{number + 1:02d}T00:00:00")
        commits.append(git("rev-parse", "HEAD").stdout.strip())
    return commits


HISTORY = [
    ("ok", "start"), ("ok", "docs"), ("ok", "tests"), ("broken", "half a refactor"), ("ok", "finish the refactor"),
    ("bug", "speed up double"), ("bug", "more docs"), ("ok", "double is exact again (#7)"), ("ok", "release"),
]
PLANTED, BROKEN, FIX = 5, 3, 7


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("bisect")
    commits = make_repository(root / "tinybug", HISTORY)
    for name, text in SUITE.items():
        (root / "suite").mkdir(exist_ok=True)
        (root / "suite" / name).write_text(text)
    (root / "bugs.toml").write_text(REGISTRY)
    return {"root": root, "commits": commits}


@pytest.fixture
def run_bisect(tiny: dict, tmp_path: Path):
    """`python -m reports bisect tinybug ...` as a user types it, forked from the self-tests' warm
    Python (helpers/warm_python.py), as are the pytest runs it starts itself at both ends; the
    steps git bisect run starts begin anew (git starts them), and the pytest each step runs forks
    from the warm Python too (helpers/warm_site/ on their PYTHONPATH)."""
    folders = [str(REPO), str(REPO / "tests" / "helpers" / "warm_site"), os.environ.get("PYTHONPATH")]

    def run(*arguments: str, repo: Path | None = None, beside: Path | None = None) -> tuple[int, dict | None, str, str]:
        """`beside`: a folder on the path after the harness's (another copy of the package)."""
        environ = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [*folders, str(beside) if beside else None]))}
        out = tmp_path / "out"
        done = warm_python.run(
            [
                sys.executable, "-m", "reports", "bisect", "tinybug", "--repo", str(repo or tiny["root"] / "tinybug"), *arguments,
                "--out", str(out), "--cache", str(tiny["root"] / "cache"), f"--bug-registry={tiny['root'] / 'bugs.toml'}",
                "--", str(tiny["root"] / "suite"),
            ],
            cwd=REPO, env=environ, timeout=600,
        )
        document = json.loads((out / "bisect.json").read_text()) if (out / "bisect.json").exists() else None
        return done.returncode, document, done.stdout, done.stderr

    return run


def test_bisect_names_the_commit_that_planted_the_bug_and_skips_the_one_that_does_not_build(tiny: dict, run_bisect, tmp_path: Path) -> None:
    commits = tiny["commits"]
    status, document, printed, _ = run_bisect("--good", commits[0], "--bad", commits[6], "--bug", "tinybug-1")
    assert status == 0, printed
    assert document["first_bad"]["commit"] == commits[PLANTED] and document["first_bad"]["subject"] == "speed up double"
    steps = {step["commit"]: step for step in document["steps"]}
    assert steps[commits[0]]["term"] == "good" and steps[commits[6]]["term"] == "bad"  # the ends, tested first
    assert steps[commits[BROKEN]]["term"] == "skip" and "install failed" in steps[commits[BROKEN]]["reason"]
    assert all(
        step["term"] == ("bad" if commits.index(step["commit"]) >= PLANTED else "good") for step in document["steps"] if step["term"] != "skip"
    )
    assert {step["evidence"] for step in document["steps"] if step["term"] != "skip"} == {"proxy"}
    assert f"first_bad: {commits[PLANTED]} speed up double" in printed
    assert sum(line.startswith("bisect step") for line in printed.splitlines()) == len(document["steps"])  # a line per step
    page = (tmp_path / "out" / "bisect.html").read_text()
    assert f"<code>{commits[PLANTED]}</code> speed up double" in page
    assert all((tmp_path / "out" / step["report"] / "report.html").is_file() for step in document["steps"] if step["report"])


def test_fixed_names_the_commit_that_removes_it(tiny: dict, run_bisect) -> None:
    commits = tiny["commits"]
    status, document, printed, _ = run_bisect("--bad", commits[6], "--good", commits[8], "--bug", "tinybug-1", "--fixed")
    assert status == 0, printed
    assert document["first_fixed"]["commit"] == commits[FIX] and "first_bad" not in document
    assert document["first_fixed"]["pull_request"] == "https://github.com/example/tinybug/pull/7"
    assert document["terms"] == {"old": "present", "new": "fixed"}


def test_only_skipped_commits_left_gives_the_candidates_and_exit_3(tmp_path: Path, tiny: dict, run_bisect) -> None:
    commits = make_repository(tmp_path / "short", [("ok", "start"), ("broken", "half a refactor"), ("bug", "speed up double")])
    status, document, printed, _ = run_bisect("--good", commits[0], "--bad", commits[2], "--bug", "tinybug-1", repo=tmp_path / "short")
    assert status == 3, printed
    assert document["first_bad"] is None and [c["commit"] for c in document["candidates"]] == commits[1:]
    assert "only skipped commits left" in document["outcome"]


def test_a_commits_build_takes_nothing_from_the_build_before_it(tmp_path: Path, run_bisect) -> None:
    """`core` a package, then a module (the bug planted in it), then a package again: the build/
    folder an earlier commit's wheel left in the clone went into the next wheel, the stale package
    won the import, and bisect named the last commit (exit 0)."""
    def tree(core: dict[str, str]) -> dict[str, str]:
        return {"pyproject.toml": version(1), "tinybug/__init__.py": "from tinybug.core import double\n", **core}

    commits = commit_trees(tmp_path / "flip", [
        ("core is a package", tree({"tinybug/core/__init__.py": SOURCE["ok"]})),
        ("core is a module", tree({"tinybug/core.py": SOURCE["ok"]})),
        ("speed up double", tree({"tinybug/core.py": SOURCE["bug"]})),
        ("core is a package again", tree({"tinybug/core/__init__.py": SOURCE["bug"]})),
    ])
    status, document, printed, _ = run_bisect("--good", commits[0], "--bad", commits[3], "--bug", "tinybug-1", repo=tmp_path / "flip")
    assert status == 0, printed
    assert document["first_bad"]["commit"] == commits[2], printed


def test_a_step_whose_pytest_leaves_no_results_is_skipped_not_read_from_an_earlier_run(tiny: dict, run_bisect, tmp_path: Path) -> None:
    """A second run into the same --out, its pytest ending before it writes results.json (a hung
    test ended by os._exit(1)): every step read the first run's results and named a commit."""
    commits = tiny["commits"]
    assert run_bisect("--good", commits[0], "--bad", commits[6], "--bug", "tinybug-1")[0] == 0
    (tiny["root"] / "suite" / "test_tinybug.py").rename(tiny["root"] / "kept.py")
    dies = 'import os\nimport pytest\n\n\n@pytest.mark.known_bug("tinybug-1", evidence="proxy")\ndef test_dies():\n    os._exit(1)\n'
    (tiny["root"] / "suite" / "test_dies.py").write_text(dies)
    try:
        status, document, printed, _ = run_bisect("--good", commits[0], "--bad", commits[6], "--bug", "tinybug-1")
    finally:
        (tiny["root"] / "suite" / "test_dies.py").unlink()
        (tiny["root"] / "kept.py").rename(tiny["root"] / "suite" / "test_tinybug.py")
    assert status == 1, printed
    assert [step["term"] for step in document["steps"]] == ["skip", "skip"] and document.get("first_bad") is None


def test_a_build_without_the_package_is_a_skip(tmp_path: Path, run_bisect) -> None:
    """Its wheel held no tinybug: the run imported another copy (a buggy one on the path) and its
    verdict counted, naming that commit."""
    elsewhere = tmp_path / "elsewhere" / "tinybug"
    elsewhere.mkdir(parents=True)
    (elsewhere / "__init__.py").write_text(SOURCE["bug"])
    empty = version(1) + "\n[tool.setuptools]\npackages = []\n"
    commits = commit_trees(tmp_path / "empty", [
        ("start", {"pyproject.toml": version(0), "tinybug/__init__.py": SOURCE["ok"]}),
        ("list no package", {"pyproject.toml": empty, "tinybug/__init__.py": SOURCE["bug"]}),
        ("speed up double", {"pyproject.toml": version(2), "tinybug/__init__.py": SOURCE["bug"]}),
    ])
    status, document, printed, _ = run_bisect(
        "--good", commits[0], "--bad", commits[2], "--bug", "tinybug-1", repo=tmp_path / "empty", beside=tmp_path / "elsewhere"
    )
    steps = {step["commit"]: step for step in document["steps"]}
    assert steps[commits[1]]["term"] == "skip" and "the build holds no tinybug to import" in steps[commits[1]]["reason"], printed
    assert status == 3 and [c["commit"] for c in document["candidates"]] == commits[1:]


def test_ends_that_do_not_behave_as_claimed_exit_1(tiny: dict, run_bisect) -> None:
    commits = tiny["commits"]
    status, document, _, _ = run_bisect("--good", commits[PLANTED], "--bad", commits[6], "--bug", "tinybug-1")
    assert status == 1 and "the bug is observed at --good" in document["problem"]
    status, document, _, _ = run_bisect("--good", commits[0], "--bad", commits[2], "--bug", "tinybug-1")
    assert status == 1 and "the bug is not observed at --bad" in document["problem"]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--good", "nosuchref", "--bad", "{6}"], "--good nosuchref: unknown ref in the repository"),
        (["--good", "{6}", "--bad", "{0}"], "--good {6} is not an ancestor of --bad {0}"),
        (["--good", "{6}", "--bad", "{6}"], "--good {6} and --bad {6} are the same commit: nothing lies between them"),
        (["--good", "{0}", "--bad", "{6}", "--fixed"], "--bad {6} is not an ancestor of --good {0}"),
        (["--good", "{0}", "--bad", "{6}", "--bug", "kornia-2791"], "--bug: unknown bug id kornia-2791; known: tinybug-1"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tiny: dict, run_bisect, arguments: list[str], message: str) -> None:
    commits = tiny["commits"]
    arguments = [argument.format(*commits) for argument in arguments]
    if "--bug" not in arguments:
        arguments += ["--bug", "tinybug-1"]
    status, _, _, error = run_bisect(*arguments)
    assert status == 2 and error.strip().splitlines() == [f"error: {message.format(*commits)}"]


def test_a_commit_that_builds_with_hatchling_installs(tmp_path: Path) -> None:
    """kornia's commits from 0.8.3 on build with hatchling, and bisect builds without isolation (over
    the environment's torch): the install brings the backend (before, every step of a bisect past
    0.8.3 was "No module named 'hatchling'", both ends a skip)."""
    project = tmp_path / "hatched"
    (project / "tinybug").mkdir(parents=True)
    (project / "tinybug" / "__init__.py").write_text(SOURCE["ok"])
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n[project]\nname = "tinybug"\nversion = "0.1"\n'
    )
    assert install_into(tmp_path / "built", str(project), "tinybug at a hatchling commit", {"UV_OFFLINE": "1"})
    assert installed_version("tinybug", [str(tmp_path / "built")]) == "0.1"


@pytest.fixture
def readme_only(tmp_path: Path) -> Path:
    """A repository of one commit that holds no package."""
    empty = tmp_path / "empty"
    empty.mkdir()
    subprocess.run(["git", "init", "--quiet"], cwd=empty, check=True)
    (empty / "README").write_text("no package here\n")
    subprocess.run(["git", "add", "-A"], cwd=empty, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "--quiet", "-m", "only a readme"], cwd=empty, check=True)
    return empty


def test_a_repository_without_the_package_and_a_bug_of_another_package_are_bad_input(
    readme_only: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["bisect", "kornia", "--repo", str(readme_only), "--good", "HEAD", "--bad", "HEAD", "--out", str(tmp_path / "out")]
    assert main([*base, "--bug", "kornia-2791"]) == 2
    assert capsys.readouterr().err.strip() == "error: --good HEAD: the repository has no kornia package there (no kornia/__init__.py)"
    assert main([*base, "--bug", "sam2-460"]) == 2
    assert capsys.readouterr().err.strip() == "error: --bug: sam2-460 is a sam2 bug, not a kornia one"


@pytest.mark.parametrize("fixed", [[], ["--fixed"]])
def test_a_race_bug_is_bad_input_before_anything_is_cloned(readme_only: Path, tmp_path: Path, capsys, fixed: list[str]) -> None:
    """A step that does not see a race is a skip, so neither end "without the bug" could ever be
    confirmed: before, two installs and two race budgets were spent to exit 1 ("cannot tell")."""
    registry = tmp_path / "bugs.toml"
    registry.write_text(REGISTRY.replace("tinybug", "kornia").replace('kind = "deterministic"', 'kind = "race"'))
    arguments = ["bisect", "kornia", "--repo", str(readme_only), "--good", "HEAD", "--bad", "HEAD", "--bug", "kornia-1", *fixed]
    assert main([*arguments, "--out", str(tmp_path / "out"), f"--bug-registry={registry}"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "error: --bug: kornia-1 is a race: a run that does not see it proves nothing, so no commit can be shown without it"
    ]


def test_a_distribution_named_otherwise_in_a_repository_holding_the_harness_s_top_level_names(tmp_path: Path, run_bisect) -> None:
    """sam2 built from git is the distribution `SAM-2`: a build is found by the import package it
    installs (before, every step read "sam2 not installed" and bisect could never answer). git
    bisect runs each step inside the clone: a top-level `fixtures/` package there shadows nothing
    of the harness's (before, each step's import failed, exit 1, read as "bad": a wrong commit,
    exit 0), and the clone's conftest.py is never loaded."""
    loaded = tmp_path / "the clone's conftest.py was loaded"
    commits = make_repository(
        tmp_path / "renamed", HISTORY, name="Tiny-Bug",  # as sam2's `SAM-2`
        pyproject='[tool.setuptools]\npackages = ["tinybug"]\n',
        extra={"fixtures/__init__.py": "", "conftest.py": f"open({str(loaded)!r}, 'w').close()\n"},
    )
    status, document, printed, _ = run_bisect("--good", commits[0], "--bad", commits[6], "--bug", "tinybug-1", repo=tmp_path / "renamed")
    assert status == 0, printed
    assert document["first_bad"]["commit"] == commits[PLANTED]
    decided = [step for step in document["steps"] if step["term"] != "skip"]
    assert len(decided) >= 3 and all(step["version"] == f"0.{commits.index(step['commit'])}" for step in decided)
    assert not loaded.exists()


@pytest.mark.parametrize(
    ("package", "bug", "message"),
    [
        ("torchvision", "torchvision-8855", "torchvision: each commit builds C++ and CUDA operators against the torch of its day"),
        ("torch", "torch-48419", "torch: bisect builds commits over the environment's torch; torch brings its own"),
    ],
)
def test_a_package_whose_commits_cannot_build_over_this_torch_is_bad_input(
    readme_only: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], package: str, bug: str, message: str
) -> None:
    arguments = ["bisect", package, "--repo", str(readme_only), "--good", "HEAD", "--bad", "HEAD", "--bug", bug, "--out", str(tmp_path / "out")]
    assert main(arguments) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"error: {message}"), line
