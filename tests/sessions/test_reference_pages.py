"""The reference pages that state what the code or the tree holds, held to it: the verdict table of
docs/reference/verdicts.md (its one place) against the verdicts the code defines,
docs/reference/layout.md against the repository's folders, docs/reference/speed.md's figures
stated there alone (other pages link to it), and the default race budgets as fixtures/races/choice.py
gives them, on the two pages that state them (the options page's --race-budget row among them; its
other rows are test_options_page.py's)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from fixtures.known_bugs.registry import load_registry
from fixtures.known_bugs.verdicts import VERDICTS
from fixtures.known_bugs.versions import has_the_bug
from fixtures.races.choice import CPU_BUDGET, MISS_TARGET, SIZED_SECONDS, UNRECORDED_RATE, UNRECORDED_SECONDS, gpu_choice
from fixtures.races.odds import attempts_for
from fixtures.races.record import load_record, tallies
from tests.conftest import REPO
from tests.helpers.checkout import checkout_files

VERDICTS_PAGE = REPO / "docs" / "reference" / "verdicts.md"
LAYOUT_PAGE = REPO / "docs" / "reference" / "layout.md"
SPEED_PAGE = REPO / "docs" / "reference" / "speed.md"
VERDICT_TABLE_HEADER = "| verdict | release | bug observed | pytest shows |"
# A bug's suite folder (`suites/<bug>/`): <package>_<upstream number>_<slug>.
BUG_FOLDER = re.compile(r"[a-z0-9]+_[0-9]+_[a-z0-9_]+")


def table_rows(page: str, header: str) -> list[str]:
    """The first cells of the table under `header`, backticks dropped."""
    table = page.split(header + "\n", 1)[1].split("\n\n", 1)[0]
    return [cell.strip("`") for cell in re.findall(r"^\| ([^|]+?) \|", table, re.M)[1:]]  # past the |---| line


def test_the_verdict_table_has_one_row_per_verdict_the_code_defines() -> None:
    rows = table_rows(VERDICTS_PAGE.read_text(encoding="utf-8"), VERDICT_TABLE_HEADER)
    assert len(rows) == len(set(rows)), f"{VERDICTS_PAGE.name}: a verdict with two rows: {rows}"
    assert set(rows) == set(VERDICTS), f"{VERDICTS_PAGE.name}: rows {sorted(rows)}, verdicts.py defines {sorted(VERDICTS)}"


def test_the_verdict_table_is_written_once() -> None:
    copies = [page.relative_to(REPO).as_posix() for page in checkout_files(".md") if VERDICT_TABLE_HEADER in page.read_text(encoding="utf-8")]
    assert copies == ["docs/reference/verdicts.md"], f"the verdict table belongs to docs/reference/verdicts.md alone (link to it): {copies}"


def layout_rows(page: str) -> dict[str, list[str]]:
    """Each folder the layout table names (`suites/<bug>/` as `suites/<bug>`) -> the subfolders its row
    names for it (`devices/`, ...). A file's row (`tox.ini`) names no folder and is left out."""
    rows: dict[str, list[str]] = {}
    for where, what in re.findall(r"^\| `([^`]+)/` \| (.+) \|$", page, re.M):
        rows[where] = re.findall(r"`([\w.-]+)/`", what)
    return rows


def folders(files: Iterable[str]) -> set[str]:
    """Every folder that holds one of `files` (paths relative to the root), at any depth."""
    return {"/".join(parts[:depth]) for parts in (file.split("/") for file in files) for depth in range(1, len(parts))}


def layout_gaps(rows: dict[str, list[str]], tree: set[str]) -> list[str]:
    """What the layout table and the tree disagree on: a top-level folder without a row or a row for a
    folder that is gone, and under a row naming subfolders, one it leaves out or one that is gone
    (under `X/<placeholder>`, a folder it leaves out must be one of the placeholder's: a bug's suite)."""
    gaps = [f"{folder}/: no row" for folder in sorted({path for path in tree if "/" not in path} - {where.split("/")[0] for where in rows})]
    for where, named in rows.items():
        folder, placeholder = re.subn(r"/<[^>]+>$", "", where)
        if folder not in tree:
            gaps.append(f"{where}/: no such folder")
            continue
        if not named:
            continue
        present = {path.removeprefix(folder + "/") for path in tree if path.startswith(folder + "/") and "/" not in path.removeprefix(folder + "/")}
        gaps += [f"{folder}/{name}/: no such folder" for name in sorted(set(named) - present)]
        unnamed = sorted(present - set(named))
        gaps += [f"{folder}/{name}/: not named in its row" for name in unnamed if not (placeholder and BUG_FOLDER.fullmatch(name))]
    return gaps


def test_the_layout_reader_and_its_comparison() -> None:
    page = "| where | what |\n| --- | --- |\n| `suites/<bug>/` | plus `kornia_sweeps/` |\n| `docs/` | `how-to/`, `tutorial.md` |\n| `tox.ini` | x |\n"
    rows = layout_rows(page)
    assert rows == {"suites/<bug>": ["kornia_sweeps"], "docs": ["how-to"]}
    tree = folders(["suites/kornia_sweeps/a.py", "suites/kornia_2791_planckian_jitter/t.py", "docs/how-to/x.md", "docs/images/y.png", "bench/b.py"])
    assert layout_gaps(rows, tree) == ["bench/: no row", "docs/images/: not named in its row"]
    tree -= {"docs/how-to"}
    assert "docs/how-to/: no such folder" in layout_gaps(rows, tree)
    assert layout_gaps({"gone": []}, folders(["gone2/a"])) == ["gone2/: no row", "gone/: no such folder"]


def test_the_layout_page_names_the_folders_the_tree_has() -> None:
    rows = layout_rows(LAYOUT_PAGE.read_text(encoding="utf-8"))
    assert {"fixtures", "reports", "docs"} <= {where for where, named in rows.items() if named}, f"the layout table was not read: {rows}"
    gaps = layout_gaps(rows, folders(path.relative_to(REPO).as_posix() for path in checkout_files()))
    assert not gaps, f"{LAYOUT_PAGE.relative_to(REPO)} and the tree disagree:\n" + "\n".join(gaps)


def user_pages() -> list[Path]:
    """The pages a user reads: README, CONTRIBUTING, docs/, and every folder's README but two
    records: reports/observed/ (the runs, each with the figures it had then) and bench/README.md
    (the benchmarks' own results, whose figures can equal speed.md's by chance)."""
    pages = checkout_files(".md")
    readmes = [page for page in pages if page.name == "README.md" and page.parent != REPO]
    kept = [page for page in readmes if page != REPO / "bench" / "README.md" and "observed" not in page.relative_to(REPO).parts]
    return [REPO / "README.md", REPO / "CONTRIBUTING.md", *sorted(page for page in pages if page.is_relative_to(REPO / "docs")), *sorted(kept)]


def measured_figures(page: str) -> set[str]:
    """The figures of a page's tables with two digits or more and a unit: "38.0 s", "5.7 GB", "181 s" (not "5 s",
    too common to mean one fact)."""
    rows = "\n".join(line for line in page.splitlines() if line.startswith("|"))
    return {figure for figure in re.findall(r"(?<![\w.])[0-9]+(?:\.[0-9]+)? (?:s|GB|MB|min)\b", rows) if len(re.sub(r"\D", "", figure)) >= 2}


def test_the_figure_reader() -> None:
    assert measured_figures("| a | 38.0 s, 5 s, 5.7 GB, H100s, 300 s |\nprose 99 s\n") == {"38.0 s", "5.7 GB", "300 s"}


def test_speeds_figures_are_stated_on_speed_md_alone() -> None:
    """The pages a user reads link to docs/reference/speed.md for a time or a size; a copy goes stale
    when the page is measured again (CHANGELOG.md keeps the replaced ones, as history)."""
    figures = measured_figures(SPEED_PAGE.read_text(encoding="utf-8"))
    assert len(figures) >= 20, f"speed.md's table was not read: {sorted(figures)}"
    copies = [
        f"{page.relative_to(REPO)}: {figure}"
        for page in user_pages()
        if page != SPEED_PAGE
        for figure in sorted(figures)
        if re.search(rf"(?<![\w.]){re.escape(figure)}\b", page.read_text(encoding="utf-8"))
    ]
    assert not copies, "figures of docs/reference/speed.md repeated elsewhere (link to it instead):\n" + "\n".join(copies)


RACE_PAGE = REPO / "docs" / "explanation" / "race-verdicts.md"
OPTIONS_PAGE = REPO / "docs" / "reference" / "options.md"
# The race page's worked example: the budget 9606's test gets on an H200 from the record.
EXAMPLE = (
    "torchvision-9606",
    "suites/torchvision_9606_decode_freed_memory/test_decode_after_free.py::test_decode_after_caller_freed_memory",
    "NVIDIA H200",
)


def race_budget_statements() -> dict[str, list[str]]:
    """The default budgets as the two pages write them, from choice.py and the record: the race page's
    table row by row (its first cell), the options page's --race-budget row."""
    bug, case, gpu = EXAMPLE
    by_gpu = tallies(load_record(), bug, case, has_the_bug(load_registry()[bug]))
    example = gpu_choice(gpu, by_gpu.get(gpu), by_gpu.values()).budget.max_iterations
    miss, sized = f"{MISS_TARGET * 100:g}% or less", f"at most {SIZED_SECONDS:g} s"  # the percent as --race-budget's help writes it
    unrecorded = attempts_for(UNRECORDED_RATE, MISS_TARGET)
    return {
        "CPU (`cpu`)": [f"| `{CPU_BUDGET}` |"],
        "a GPU whose model the record saw the bug on": [miss, sized, f"(9606 on an H200: {example} attempts)"],
        "a case no GPU has shown": [f"| {unrecorded} attempts, {UNRECORDED_SECONDS:g} s or less |", f"with {100 - MISS_TARGET * 100:g}% chance"],
        "`--race-budget N[,Ss]`": [f"`{CPU_BUDGET}` on `cpu`", f"({sized} a test)", miss, f"or {unrecorded} attempts ({UNRECORDED_SECONDS:g} s)"],
    }


def table_row(page: str, first_cell: str) -> str:
    found = re.search(rf"^\| {re.escape(first_cell)} \|.*$", page, re.M)
    return found.group(0) if found else ""


def test_the_default_race_budgets_are_the_ones_the_code_gives() -> None:
    """docs/explanation/race-verdicts.md's budget table and the options page state what
    fixtures/races/choice.py gives (and the example what the race record gives): a changed
    constant or a new record row that moves the example fails here until the pages say it."""
    pages = RACE_PAGE.read_text(encoding="utf-8") + "\n" + OPTIONS_PAGE.read_text(encoding="utf-8")
    wrong = [
        f"{first_cell}: {statement!r} not in {table_row(pages, first_cell) or 'no such row'!r}"
        for first_cell, statements in race_budget_statements().items()
        for statement in statements
        if statement not in table_row(pages, first_cell)
    ]
    assert not wrong, "the default race budgets as the pages state them and as the code gives them differ:\n" + "\n".join(wrong)


def test_the_default_race_budgets_are_stated_on_those_two_pages_alone() -> None:
    """The other pages link to the race page for the figures: a copy goes stale when a constant or the record moves."""
    figures = {
        f"`{CPU_BUDGET}`": rf"`{re.escape(str(CPU_BUDGET))}`",
        f"{attempts_for(UNRECORDED_RATE, MISS_TARGET)} attempts": rf"(?<![\d.]){attempts_for(UNRECORDED_RATE, MISS_TARGET)} attempts",
        f"{MISS_TARGET * 100:g}% miss": rf"(?<![\d.]){MISS_TARGET * 100:g}% (?:miss|or less)",
    }
    copies = [
        f"{page.relative_to(REPO)}: {figure}"
        for page in user_pages()
        if page not in (RACE_PAGE, OPTIONS_PAGE)
        for figure, pattern in figures.items()
        if re.search(pattern, page.read_text(encoding="utf-8"))
    ]
    assert not copies, "default race budgets repeated (link to docs/explanation/race-verdicts.md instead):\n" + "\n".join(copies)
