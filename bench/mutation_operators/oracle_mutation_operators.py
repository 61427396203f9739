"""Cosmic Ray operators for the changes that loosen an oracle unnoticed (bench/README.md).

Cosmic Ray's own operators add or subtract one and swap comparison operators; a tolerance made
ten times looser, or a comparison of a value with itself, is neither. These two operators make
those changes, through Cosmic Ray's operator-provider entry point (this folder's pyproject.toml).
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal, InvalidOperation

import parso
from cosmic_ray.operators.operator import Example, Operator

Position = tuple[tuple[int, int], tuple[int, int]]

# Scaling a threshold by these makes it ten times looser or stricter, whichever way it points.
FACTORS = (Decimal(10), Decimal("0.1"))

# Calls that compare their first two positional arguments.
COMPARING_CALLS = frozenset({"equal", "allclose", "isclose", "assert_close", "array_equal"})


def _scaled_literal(literal: str, factor: Decimal) -> str | None:
    """`literal` times `factor` as Python source, or None where scaling changes nothing."""
    text = literal.replace("_", "")
    if text[-1:] in "jJ" or text[:2].lower() in ("0x", "0o", "0b"):
        return None
    try:
        value = Decimal(text)
    except InvalidOperation:
        return None
    if value == 0:
        return None
    scaled = (value * factor).normalize()
    if "." not in text and "e" not in text.lower() and scaled == scaled.to_integral_value():
        return str(int(scaled))
    return repr(float(scaled))


def _scalings(literal: str) -> list[str]:
    """The literal's mutants, one per factor that changes it."""
    return [scaled for factor in FACTORS if (scaled := _scaled_literal(literal, factor)) is not None]


def _leaf(code: str, like: parso.tree.NodeOrLeaf) -> parso.tree.NodeOrLeaf:
    """`code` parsed as an expression, with `like`'s leading whitespace and comments."""
    node = parso.parse(code).children[0]
    node.get_first_leaf().prefix = like.get_first_leaf().prefix
    return node


class ScaleNumber(Operator):
    """Multiplies a non-zero numeric literal by 10, then (second occurrence) by 0.1."""

    def mutation_positions(self, node) -> Iterator[Position]:
        if isinstance(node, parso.python.tree.Number):
            for _ in _scalings(node.value):
                yield (node.start_pos, node.end_pos)

    def mutate(self, node, index):
        return _leaf(_scalings(node.value)[index], node)

    @classmethod
    def examples(cls):
        return (
            Example("x = 1e-06", "x = 1e-05"),
            Example("x = 1e-06", "x = 1e-07", occurrence=1),
            Example("x = 4", "x = 40"),
            Example("x = 4", "x = 0.4", occurrence=1),
            Example("x = 2.5", "x = 25.0"),
            Example("x = 1_000", "x = 10000"),
        )


Compared = tuple[parso.tree.BaseNode, parso.tree.NodeOrLeaf, parso.tree.NodeOrLeaf]


def _compared(node) -> list[Compared]:
    """(the node holding them, first, second) for each pair of operands `node` compares: adjacent
    operands of a comparison, or the first two positional arguments of a comparing call."""
    if node.type == "comparison":
        return [(node, node.children[i - 1], node.children[i + 1]) for i in range(1, len(node.children), 2)]
    if node.type not in ("power", "atom_expr"):
        return []
    pairs = []
    for callee, trailer in zip(node.children, node.children[1:]):
        name = callee.children[-1] if callee.type == "trailer" else callee
        if trailer.type == "trailer" and trailer.children[0].value == "(" and getattr(name, "value", None) in COMPARING_CALLS:
            arguments = _positional_arguments(trailer)
            if len(arguments) >= 2:
                pairs.append((trailer.children[1], arguments[0], arguments[1]))
    return pairs


def _positional_arguments(trailer) -> list:
    arglist = trailer.children[1]
    if arglist.type != "arglist":
        return []
    arguments = [child for child in arglist.children if child.type != "operator"]
    return [a for a in arguments if a.type != "argument" and not a.get_code().lstrip().startswith("*")]


class ReplaceComparedOperand(Operator):
    """Replaces one side of a comparison by the other: `a < b` becomes `a < a`, then `b < b`.

    Calls that compare (`torch.equal(a, b)`, `torch.allclose(a, b, ...)`) count as comparisons of
    their first two positional arguments, so a refactor that compares a tensor with itself is one.
    """

    def mutation_positions(self, node) -> Iterator[Position]:
        for _pair in _compared(node):
            yield (node.start_pos, node.end_pos)  # the second one into the first's place
            yield (node.start_pos, node.end_pos)  # the first one into the second's place

    def mutate(self, node, index):
        holder, first, second = _compared(node)[index // 2]
        source, target = (first, second) if index % 2 == 0 else (second, first)
        position = next(i for i, child in enumerate(holder.children) if child is target)
        holder.children[position] = _leaf(source.get_code(include_prefix=False), target)
        return node

    @classmethod
    def examples(cls):
        return (
            Example("x = a < b", "x = a < a"),
            Example("x = a < b", "x = b < b", occurrence=1),
            Example("x = a.y <= b[0] < c", "x = a.y <= b[0] < b[0]", occurrence=2),
            Example("ok = torch.equal(pinned, fresh)", "ok = torch.equal(pinned, pinned)"),
            Example("ok = torch.allclose(out, ref, atol=1e-3)", "ok = torch.allclose(ref, ref, atol=1e-3)", occurrence=1),
        )


_OPERATORS = {op.__name__: op for op in (ScaleNumber, ReplaceComparedOperand)}


class OperatorProvider:
    """Cosmic Ray's provider protocol: iterates names, looks operator classes up by name."""

    def __iter__(self):
        return iter(_OPERATORS)

    def __getitem__(self, name: str) -> type[Operator]:
        return _OPERATORS[name]
