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


def one_change_from(mutated: str, source: str) -> bool:
    """Whether some line of `source` becomes `mutated` by one change in one place that leaves
    most of the line as it was: what a Cosmic Ray operator does to a line (a number scaled, an
    operand or an operator replaced)."""
    wanted = tokens(mutated)
    for line in source.splitlines():
        original = tokens(line)
        if not original or original == wanted:
            continue
        opcodes = difflib.SequenceMatcher(None, original, wanted, autojunk=False).get_opcodes()
        kept = sum(end - start for code, start, end, *_ in opcodes if code == "equal")
        if len(opcodes) - sum(code == "equal" for code, *_ in opcodes) == 1 and kept >= max(3, len(original) // 2):
            return True
    return False


@pytest.mark.parametrize(
    ("mutated", "matches"),
    [
        ('names = [o.nodeid.rsplit("::", 10)[-1] for o in tests]', True),  # a number scaled
        ("if self.path_state in self.path_state:", True),  # an operand replaced by a longer one
        ('names = [o.nodeid.rsplit("::", 10)[0] for o in tests]', False),  # two changes
        ("def g(tests, seen):", False),  # one change, but most of the line new
        ("if state in OLD_STATES:", False),  # the line as it was before a refactor renamed both
    ],
)
def test_a_mutated_line_is_matched_to_the_line_it_came_from(mutated: str, matches: bool) -> None:
    source = 'def f(tests):\n    names = [o.nodeid.rsplit("::", 1)[-1] for o in tests]\n    if self.path_state in NEW_STATES:\n'
    assert one_change_from(mutated, source) is matches


def test_each_cosmic_ray_equivalent_is_one_change_from_a_line_of_its_file():
    """An entry whose line was rewritten (or moved to another file) sets aside nothing and keeps a
    reason about code that is gone: it is removed, or judged again on the new line."""
    equivalents = tomllib.loads((ROOT / "bench" / "cosmic-ray" / "equivalents.toml").read_text(encoding="utf-8"))
    stale = [
        f"{module}: {key}"
        for module, table in equivalents.items()
        for key in table
        if not one_change_from(key.split(": ", 1)[1], (ROOT / module).read_text(encoding="utf-8"))
    ]
    assert not stale, "equivalent mutants of lines the files no longer hold:\n" + "\n".join(stale)


def test_each_mutmut_equivalent_names_a_function_its_module_still_defines():
    """mutmut names a mutant after its function (`x_<function>__mutmut_<n>`): a function renamed or
    moved leaves its entries setting aside nothing."""
    equivalents = tomllib.loads((ROOT / "bench" / "mutation_equivalents.toml").read_text(encoding="utf-8"))
    missing = []
    for module, table in equivalents.items():
        tree = ast.parse((ROOT / (module.replace(".", "/") + ".py")).read_text(encoding="utf-8"))
        defined = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)}
        missing += [f"{module}: {name}" for name in table if name.removeprefix("x_").rpartition("__mutmut_")[0] not in defined]
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
