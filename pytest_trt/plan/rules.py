"""Precision rules: the pattern syntax, one rule, and matching rules to a graph's nodes.

The lowest layer of the precision pipeline: a :class:`Rule` is ``PATTERN=PRECISION``, where
the pattern is a shell glob over ONNX node names (``*/LayerNorm/*``) or ``op:TYPE`` over op
types (``op:Softmax``). :mod:`pytest_trt.plan.policy` orders rules into a policy;
:mod:`pytest_trt.plan` matches them against a model's nodes (:func:`match_rules`) and
says, when a pattern matches nothing, which names come closest (:func:`no_match_message`).

Imports neither onnx nor numpy: the plugin parses options with it. Nodes are anything
with ``.name`` and ``.op_type``.
"""

from __future__ import annotations

import difflib
import fnmatch
import heapq
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.dtypes import normalize_precision
from ..errors import PatternError, UsageError

OP_PREFIX = "op:"
# ONNX op types are identifiers (Softmax, LayerNormalization, com.microsoft ops too).
_OP_TYPE_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_GLOB_CHARS = set("*?[")


def validate_pattern(pattern: str) -> str:
    """Return ``pattern`` if it is a well-formed pattern, else raise :class:`PatternError`.

    Accepted: a non-empty shell glob over node names without surrounding whitespace, or
    ``op:TYPE`` with an exact op type (an identifier, no glob characters).

    >>> validate_pattern("*/LayerNorm/*")
    '*/LayerNorm/*'
    """
    if not isinstance(pattern, str):
        raise PatternError(f"a precision pattern must be a string, got {type(pattern).__name__} {pattern!r}")
    if not pattern.strip():
        raise PatternError(
            "empty precision pattern: give a shell glob over node names (e.g. '*/LayerNorm/*') "
            "or an op type (e.g. 'op:Softmax')"
        )
    if pattern != pattern.strip():
        raise PatternError(
            f"precision pattern {pattern!r} has leading or trailing whitespace; remove it "
            f"(node names rarely contain spaces, so this is most likely a typo)"
        )
    if pattern.startswith(OP_PREFIX):
        op_type = pattern[len(OP_PREFIX):]
        if not op_type:
            raise PatternError(
                f"precision pattern {pattern!r} names no op type: write e.g. 'op:LayerNormalization'"
            )
        if _GLOB_CHARS & set(op_type):
            raise PatternError(
                f"precision pattern {pattern!r}: 'op:' takes one exact op type, not a glob; "
                f"list each type (e.g. 'op:ReduceMean', 'op:Pow') or use a node-name glob"
            )
        if not _OP_TYPE_RE.match(op_type):
            raise PatternError(
                f"precision pattern {pattern!r}: {op_type!r} is not an ONNX op type "
                f"(op types look like 'Softmax' or 'LayerNormalization')"
            )
    elif "=" in pattern and pattern.rpartition("=")[2].strip().lower() in _PRECISION_WORDS:
        # "x=fp32" given where a bare pattern is expected (keep_fp32, expect_fp32, match()).
        raise PatternError(
            f"precision pattern {pattern!r} looks like a rule 'PATTERN=PRECISION'; pass "
            f"{pattern.rpartition('=')[0]!r} here, or give the rule to rules=[...]"
        )
    return pattern


_PRECISION_WORDS = {"fp32", "fp16", "bf16", "float32", "float16", "half", "bfloat16", "float", "f16", "f32"}


@dataclass(frozen=True)
class Rule:
    """One precision rule: nodes matching ``pattern`` run in ``precision``.

    Attributes:
        pattern: shell glob over node names, or ``op:TYPE`` (exact op type).
        precision: ``fp32``, ``fp16`` or ``bf16`` (aliases are normalized).
        source: where the rule came from (``api``, ``keep_fp32``, ``marker``, ``ini``,
            ``cli``); shown in messages, not part of the policy's identity in cache keys.
    """

    pattern: str
    precision: str
    source: str = field(default="api", compare=False)

    def __post_init__(self):
        validate_pattern(self.pattern)
        object.__setattr__(self, "precision", normalize_precision(self.precision, what="rule precision"))

    @property
    def op_type(self) -> str | None:
        """The op type of an ``op:TYPE`` rule, None for a node-name glob."""
        return self.pattern[len(OP_PREFIX):] if self.pattern.startswith(OP_PREFIX) else None

    def matches(self, node: Any) -> bool:
        """True if ``node`` (anything with ``.name`` and ``.op_type``) is selected by this rule."""
        op_type = self.op_type
        if op_type is not None:
            return node.op_type == op_type
        return fnmatch.fnmatchcase(node.name, self.pattern)

    def text(self) -> str:
        """The rule as users write it: ``*/LayerNorm/*=fp32``."""
        return f"{self.pattern}={self.precision}"

    def __str__(self) -> str:
        return self.text()


def parse_rule(text: str, *, source: str = "cli") -> Rule:
    """Parse ``"PATTERN=PRECISION"`` (CLI, ini, marker spelling) into a :class:`Rule`.

    The LAST ``=`` separates pattern and precision, so a pattern may itself contain ``=``.
    Whitespace around both parts is stripped.

    >>> parse_rule("*/LayerNorm/*=fp32")
    Rule(pattern='*/LayerNorm/*', precision='fp32', source='cli')
    """
    if not isinstance(text, str) or "=" not in text:
        raise PatternError(
            f"cannot parse precision rule {text!r}: write PATTERN=PRECISION, "
            f"e.g. '*/LayerNorm/*=fp32' or 'op:Softmax=fp32'"
        )
    pattern, _, precision = text.rpartition("=")
    pattern, precision = pattern.strip(), precision.strip()
    if not precision:
        raise PatternError(f"precision rule {text!r} has no precision after '=': add fp32, fp16 or bf16")
    try:
        return Rule(pattern, precision, source=source)
    except UsageError as exc:
        raise PatternError(f"precision rule {text!r}: {exc}") from exc



# --------------------------------------------------------------------------------------
# rules against the nodes of a graph
# --------------------------------------------------------------------------------------
def match_rules(rules: Sequence[Rule], nodes: Sequence[Any], label: str) -> dict[str, Rule]:
    """``{node_name: deciding rule}`` (the last matching rule wins); every rule must match a node.

    ``label`` names the model in the :class:`PatternError` raised for a rule that matches nothing.
    """
    deciding: dict[str, Rule] = {}
    matched = [False] * len(rules)
    for node in nodes:
        for index, rule in enumerate(rules):
            if rule.matches(node):
                deciding[node.name] = rule
                matched[index] = True
    for index, rule in enumerate(rules):
        if not matched[index]:
            raise PatternError(no_match_message(rule, label, list(nodes)))
    return deciding


def no_match_message(rule: Rule, label: str, nodes: list[Any]) -> str:
    """Why ``rule`` matches no node of the model ``label``, with the closest names and the fix."""
    source = f" (from {rule.source})" if rule.source not in ("api", "") else ""
    head = f"precision pattern {rule.pattern!r}{source} matches no node of {label} ({len(nodes)} nodes)."
    op_type = rule.op_type
    if op_type is not None:
        hints, fix = _op_type_hints(op_type, nodes)
    else:
        hints, fix = _name_hints(rule.pattern, [n.name for n in nodes])
    return " ".join([head, *hints, fix])


def fixed_only_message(rule: Rule, label: str, matched: list[Any], reasons: dict[str, str]) -> str:
    """Why ``rule`` changes nothing in the model ``label``: every node it matches is fixed.

    Fixed nodes (shape and integer math, Q/DQ, control flow, ...) keep their types as written
    under every plan, so a pattern that selects only them selects no float computation: like a
    pattern that matches no node, it is an error rather than a silent no-op.
    """
    source = f" (from {rule.source})" if rule.source not in ("api", "") else ""
    first = matched[0]
    why = reasons.get(first.name, "fixed")
    return (f"precision pattern {rule.pattern!r}{source} selects no float computation in {label}: it matches "
            f"{len(matched)} node(s), all fixed (e.g. {first.name!r}: {why.removeprefix('fixed: ')}), whose types "
            f"every plan keeps as written, so the pattern changes nothing. Remove it, or name nodes that compute "
            f"in float (`pytest-trt plan MODEL` lists every node; fixed ones show 'fixed').")


def _op_type_hints(op_type: str, nodes: list[Any]) -> tuple[list[str], str]:
    types = sorted({n.op_type for n in nodes})
    close = closest(op_type, types)
    lower = [t for t in types if t.lower() == op_type.lower()]
    hints = [f"Closest op types in the model: {', '.join(close) or '(none)'}."]
    if lower:
        hints.append(f"Op types are case-sensitive: did you mean 'op:{lower[0]}'?")
    return hints, "Write the op type exactly as in the model, or remove the rule."


def _name_hints(pattern: str, names: list[str]) -> tuple[list[str], str]:
    close = closest_names(pattern, names)
    hints = [f"Closest node names: {', '.join(map(repr, close)) or '(none)'}."]
    if not pattern.startswith("*"):
        prefixed = [n for n in names if fnmatch.fnmatchcase(n, "*" + pattern)]
        if prefixed:
            hints.append(f"'*{pattern}' would match {len(prefixed)} node(s), e.g. {prefixed[0]!r}: "
                         f"a pattern must match the WHOLE node name.")
    folded = [n for n in names if fnmatch.fnmatch(n.lower(), pattern.lower())]
    if folded:
        hints.append(f"Ignoring case it would match {len(folded)} node(s), e.g. {folded[0]!r}: "
                     f"patterns are case-sensitive.")
    fix = ("Patterns are shell globs over full node names ('*/LayerNorm/*'); fix or remove the "
           "pattern (`pytest-trt plan MODEL` lists the node names).")
    return hints, fix


def closest(word: str, candidates: list[str], n: int = 3) -> list[str]:
    """The ``n`` candidates most like ``word`` (difflib), fast on graphs with thousands of nodes."""
    matcher = difflib.SequenceMatcher()
    matcher.set_seq2(word)
    scored = []
    for candidate in candidates:
        matcher.set_seq1(candidate)
        scored.append((matcher.quick_ratio(), candidate))
    # quick_ratio bounds ratio from above: the full comparison on the best few suffices.
    shortlist = [c for _, c in heapq.nlargest(max(25, n), scored)]
    return difflib.get_close_matches(word, shortlist, n=n, cutoff=0.0)


def closest_names(pattern: str, names: list[str], n: int = 3) -> list[str]:
    """Node names closest to a glob: its literal pieces against the names' path components.

    ``*/LayerNrom/*`` should suggest ``.../LayerNorm/Pow`` however long the prefix, so
    pieces are compared with components (case-insensitively), whole names break ties.
    """
    pieces = [p.lower() for p in re.split(r"[*?/\[\]]+", pattern) if p]
    if not pieces:
        return names[:n]
    component_score: dict[str, float] = {}

    def score(name: str) -> tuple[float, float]:
        best = 0.0
        for comp in name.lower().split("/"):
            if comp and comp not in component_score:
                component_score[comp] = max(difflib.SequenceMatcher(None, p, comp).ratio() for p in pieces)
            best = max(best, component_score.get(comp, 0.0))
        return best, difflib.SequenceMatcher(None, pattern.lower(), name.lower()).quick_ratio()

    return heapq.nlargest(n, names, key=score)


__all__ = [
    "OP_PREFIX",
    "Rule",
    "closest",
    "closest_names",
    "match_rules",
    "no_match_message",
    "parse_rule",
    "validate_pattern",
]
