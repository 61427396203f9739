"""The Cosmic Ray mutation benchmark (bench/README.md): its configs mutate exactly mutmut's
`only_mutate` files and name tests that exist; its operators make the mutations they promise; its
score script counts what it should; every equivalent mutant either tool's list sets aside is still
one of the code as it is (a reason written for a line that has changed no longer holds)."""

from __future__ import annotations

import ast
import difflib
import io
import shlex
import socket
import tokenize
import tomllib
from decimal import Decimal, InvalidOperation
from pathlib import Path

import pytest

from suites.oracle_thresholds import recorded_thresholds
from tests.conftest import load_script

ROOT = Path(__file__).resolve().parents[2]
SESSIONS = tomllib.loads((ROOT / "bench" / "cosmic-ray" / "sessions.toml").read_text(encoding="utf-8"))


def test_the_sessions_mutate_exactly_the_mutmut_only_mutate_files():
    only_mutate = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mutmut"]["only_mutate"]
    assert sorted(SESSIONS["tests"]) == sorted(only_mutate)


@pytest.mark.parametrize("module", sorted(SESSIONS["tests"]))
def test_each_session_runs_existing_tests_stopping_at_the_first_failure(module):
    tests = SESSIONS["tests"][module]
    assert tests and all((ROOT / path).exists() for path in tests), tests
    assert "-x" in SESSIONS["cosmic-ray"]["pytest-options"]


def test_a_session_config_runs_the_files_tests_with_only_the_oracle_operators():
    runner = load_script(ROOT / "bench" / "mutation_cosmic_ray.py")
    module = "simcuda/rules.py"
    config = runner.session_config(module, SESSIONS["tests"][module], SESSIONS["cosmic-ray"])
    assert config["module-path"] == module
    assert shlex.split(config["test-command"])[-len(SESSIONS["tests"][module]):] == SESSIONS["tests"][module]
    assert config["filters"]["operators-filter"]["exclude-operators"] == ["core/.*"]
    assert config["distributor"] == {"name": "http", "http": {"worker-urls": SESSIONS["cosmic-ray"]["worker-urls"]}}
    assert runner.session_name(module) == "simcuda.rules"


@pytest.mark.parametrize("module", SESSIONS["thresholds-only"]["modules"])
def test_a_thresholds_only_session_mutates_exactly_the_recorded_thresholds_lines(module):
    """Its threshold lines are those holding a constant suites/oracle_thresholds.toml records (a
    calibration or an uncalibrated value); every other line is a test's input, skipped."""
    runner = load_script(ROOT / "bench" / "mutation_cosmic_ray.py")
    keys = set(recorded_thresholds())
    dotted = module.removesuffix(".py").replace("/", ".")
    recorded = {key.split(":")[1] for key in keys if key.split(":")[0] == dotted}
    lines = (ROOT / module).read_text(encoding="utf-8").splitlines()
    marked = [line for line in lines if runner.is_threshold_line(line)]
    assert recorded and module in SESSIONS["tests"]
    assert {name.strip() for line in marked for name in line.split("=", 1)[0].split(",")} == recorded, marked


def test_a_session_config_reads_back_through_cosmic_ray():
    pytest.importorskip("cosmic_ray", reason="Cosmic Ray is not installed (pip install -e '.[mutation]')")
    from cosmic_ray.config import deserialize_config, serialize_config

    runner = load_script(ROOT / "bench" / "mutation_cosmic_ray.py")
    config = runner.session_config("simcuda/rules.py", ["tests/a b.py"], {**SESSIONS["cosmic-ray"], "pytest-options": ["-k", 'x and "y"']})
    read = deserialize_config(serialize_config(config))
    assert (read.test_command, read.distributor_name, read.timeout) == (config["test-command"], "http", 300.0)


def test_the_runner_waits_for_workers_and_says_which_one_never_answered():
    runner = load_script(ROOT / "bench" / "mutation_cosmic_ray.py")
    with socket.create_server(("localhost", 0)) as server:
        url = f"http://localhost:{server.getsockname()[1]}"
        runner.wait_for_workers([url], seconds=5)
    with pytest.raises(SystemExit, match=rf"^no Cosmic Ray worker answers at {url} after 0 s$"):
        runner.wait_for_workers([url], seconds=0.2)


def test_equivalents_are_keyed_by_files_the_sessions_mutate():
    equivalents = tomllib.loads((ROOT / "bench" / "cosmic-ray" / "equivalents.toml").read_text(encoding="utf-8"))
    assert set(equivalents) <= set(SESSIONS["tests"])
    assert all(reason.strip() for table in equivalents.values() for reason in table.values())


def tokens(line: str) -> list[str]:
    """A line of Python as its tokens, comments and layout left out."""
    skipped = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}
    try:
        return [token.string for token in tokenize.generate_tokens(io.StringIO(line.strip()).readline) if token.type not in skipped]
    except (tokenize.TokenError, SyntaxError):  # a line that opens a bracket it closes on the next
        return line.split()


def is_scaled(original: list[str], mutated: list[str]) -> bool:
    """ScaleNumber's change: one number, ten times larger or smaller."""
    try:
        ratio = Decimal(mutated[0]) / Decimal(original[0]) if len(original) == len(mutated) == 1 else None
    except (InvalidOperation, ZeroDivisionError):
        return False
    return ratio in (Decimal(10), Decimal("0.1"))


def comes_from(operator: str, mutated: str, source: str) -> bool:
    """Whether `operator` makes `mutated` from some line of `source`, changing one place: a number
    scaled tenfold (ScaleNumber), or a compared operand replaced by the line's other operand
    (ReplaceComparedOperand: what it puts in is already elsewhere in the mutated line)."""
    wanted = tokens(mutated)
    for line in source.splitlines():
        original = tokens(line)
        changes = [opcode for opcode in difflib.SequenceMatcher(None, original, wanted, autojunk=False).get_opcodes() if opcode[0] != "equal"]
        if len(changes) != 1 or changes[0][0] != "replace":
            continue
        _, start, end, new_start, new_end = changes[0]
        put_in = wanted[new_start:new_end]
        if operator == "ScaleNumber" and is_scaled(original[start:end], put_in):
            return True
        if operator == "ReplaceComparedOperand" and (occurs_in(put_in, wanted[:new_start]) or occurs_in(put_in, wanted[new_end:])):
            return True
    return False


def occurs_in(part: list[str], tokens: list[str]) -> bool:
    """Whether `part` is a run of whole tokens of `tokens`."""
    return any(tokens[start : start + len(part)] == part for start in range(len(tokens) - len(part) + 1))


@pytest.mark.parametrize(
    ("operator", "mutated", "matches"),
    [
        ("ScaleNumber", 'names = [o.nodeid.rsplit("::", 10)[-1] for o in tests]', True),  # 1 -> 10
        ("ScaleNumber", "limit = 0.1", True),  # 1 -> 0.1
        ("ScaleNumber", 'names = [o.nodeid.rsplit("::", 20)[-1] for o in tests]', False),  # 1 -> 20: not the operator's
        ("ScaleNumber", 'names = [o.nodeid.rsplit("::", 10)[0] for o in tests]', False),  # two changes
        ("ScaleNumber", "rank: int = 10", False),  # another name's line
        ("ReplaceComparedOperand", "if self.path_state in self.path_state:", True),  # an operand by the other
        ("ReplaceComparedOperand", "if NEW_STATES in NEW_STATES:", True),
        ("ReplaceComparedOperand", "if self.path_state in OLD_STATES:", False),  # a name from nowhere: not the operator's
        ("ReplaceComparedOperand", "if self.path_state in path:", False),  # part of a token: not the line's other operand
        ("ReplaceComparedOperand", "if state in OLD_STATES:", False),  # the line as it was before a refactor renamed both
    ],
)
def test_a_mutated_line_is_matched_to_the_line_it_came_from(operator: str, mutated: str, matches: bool) -> None:
    source = 'def f(tests):\n    names = [o.nodeid.rsplit("::", 1)[-1] for o in tests]\n    if self.path_state in NEW_STATES:\n    limit = 1\n'
    assert comes_from(operator, mutated, source) is matches


def test_each_cosmic_ray_equivalent_is_its_operators_change_of_a_line_of_its_file():
    """An entry whose line was rewritten (or moved to another file) sets aside nothing and keeps a
    reason about code that is gone: it is removed, or judged again on the new line. (An entry
    whose line still exists but now means something else is the reviewer's to catch.)"""
    equivalents = tomllib.loads((ROOT / "bench" / "cosmic-ray" / "equivalents.toml").read_text(encoding="utf-8"))
    stale = [
        f"{module}: {key}"
        for module, table in equivalents.items()
        for key in table
        if not comes_from(*key.split(": ", 1), (ROOT / module).read_text(encoding="utf-8"))
    ]
    assert not stale, "equivalent mutants of lines the files no longer hold:\n" + "\n".join(stale)


def mutmut_function(name: str) -> tuple[str | None, str]:
    """(class or None, function) a mutmut 3 mutant name points to: `x_<function>__mutmut_<n>`,
    or `xǁ<Class>ǁ<method>__mutmut_<n>` for a method."""
    target = name.rpartition("__mutmut_")[0]
    if target.startswith("xǁ"):
        cls, _, method = target.removeprefix("xǁ").partition("ǁ")
        return cls, method
    return None, target.removeprefix("x_")


def defined_functions(source: str) -> set[tuple[str | None, str]]:
    """(None, name) of the module's own functions, (class, name) of its classes' methods."""
    functions: set[tuple[str | None, str]] = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            functions.add((None, node.name))
        elif isinstance(node, ast.ClassDef):
            functions |= {(node.name, item.name) for item in node.body if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)}
    return functions


def test_mutmut_names_point_to_module_functions_and_methods() -> None:
    source = "def f():\n    def inner():\n        pass\nclass C:\n    def m(self):\n        pass\n"
    assert defined_functions(source) == {(None, "f"), ("C", "m")}
    assert mutmut_function("x_f__mutmut_3") == (None, "f") and mutmut_function("xǁCǁm__mutmut_12") == ("C", "m")
    assert mutmut_function("x_inner__mutmut_1") not in defined_functions(source)  # a nested function is no mutmut target


def test_each_mutmut_equivalent_names_a_function_its_module_still_defines():
    """mutmut names a mutant after its function: a function renamed or moved leaves its entries
    setting aside nothing. (Its number moves when the function's body changes, which only
    `mutmut show NAME` can tell: the entries are re-read when the benchmark runs.)"""
    equivalents = tomllib.loads((ROOT / "bench" / "mutation_equivalents.toml").read_text(encoding="utf-8"))
    missing = [
        f"{module}: {name}"
        for module, table in equivalents.items()
        for name in table
        if mutmut_function(name) not in defined_functions((ROOT / (module.replace(".", "/") + ".py")).read_text(encoding="utf-8"))
    ]
    assert not missing, "mutmut equivalents of functions the modules no longer define:\n" + "\n".join(missing)


@pytest.fixture(scope="module")
def scores():
    return load_script(ROOT / "bench" / "mutation_scores.py")


def test_scores_set_aside_listed_equivalents_and_count_every_other_survivor(scores):
    def mutant(outcome, line):
        return scores.Mutant("a.py", "ScaleNumber", line, outcome, f"+++ b/a.py\n+{line}")

    mutants = [mutant("killed", "x = 40"), mutant("survived", "y = 0.1"), mutant("survived", "z = 30"), mutant("incompetent", "w = 2")]
    equivalents = {"a.py": {"ScaleNumber: y = 0.1": "a log line's width"}}
    assert scores.score_rows(mutants, equivalents) == [("a.py", 2, 3, 1)]
    assert [m.line for m in scores.gaps(mutants, equivalents)] == ["z = 30"]
    assert scores.mutated_line("--- a/a.py\n+++ b/a.py\n-x = 4\n+x = 40\n") == "x = 40"


def test_scores_refuse_a_missing_session_in_one_line(scores, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        scores.main([str(tmp_path / "nothing.sqlite")])
    assert exit_info.value.code == 2
    assert "no Cosmic Ray session at" in capsys.readouterr().err


@pytest.fixture(scope="module")
def operators():
    pytest.importorskip("cosmic_ray", reason="Cosmic Ray is not installed (pip install -e '.[mutation]')")
    return load_script(ROOT / "bench" / "mutation_operators" / "oracle_mutation_operators.py")


@pytest.mark.parametrize("name", ["ScaleNumber", "ReplaceComparedOperand"])
def test_operator_examples_mutate_as_documented(operators, name):
    from cosmic_ray.mutating import mutate_code

    operator = operators.OperatorProvider()[name]
    for example in operator.examples():
        assert mutate_code(example.pre_mutation_code, operator(), example.occurrence) == example.post_mutation_code


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("ScaleNumber", "x = 0"),  # zero scaled is zero: an equivalent mutant nobody needs
        ("ScaleNumber", "x = 0x10"),
        ("ReplaceComparedOperand", "x = max(a, b)"),  # not a comparison
        ("ReplaceComparedOperand", "x = torch.equal(a)"),  # one operand only
        ("ReplaceComparedOperand", "x = torch.allclose(a, other=b)"),  # the second is a keyword
    ],
)
def test_operators_leave_what_they_cannot_meaningfully_change(operators, name, code):
    from cosmic_ray.mutating import mutate_code

    assert mutate_code(code, operators.OperatorProvider()[name](), 0) is None


def test_the_operators_are_registered_where_cosmic_ray_looks(operators):
    import cosmic_ray.plugins

    if "oracle" not in cosmic_ray.plugins.OPERATOR_PROVIDERS:
        pytest.skip("bench/mutation_operators is not installed (pip install -e bench/mutation_operators)")
    assert {"oracle/ScaleNumber", "oracle/ReplaceComparedOperand"} <= set(cosmic_ray.plugins.operator_names())
