"""Precision rules: the pattern syntax, one rule, and matching rules to a graph's nodes.

The lowest layer of the precision pipeline: a :class:`Rule` is ``PATTERN=PRECISION``, where
the pattern is one of

* ``op:TYPE``: the exact ONNX op type (``op:Softmax``);
* ``class:GLOB``: a shell glob over the node's module classes (``class:*RMSNorm``): it
  matches when ANY module class of the node's hierarchy matches, tried against the qualified
  (``transformers.models.llama.modeling_llama.LlamaRMSNorm``) and the short name
  (``LlamaRMSNorm``); the trailing op entry of the exporter's hierarchy is not a class. So
  ``class:LlamaDecoderLayer`` selects everything inside decoder layers;
* anything else: a shell glob over the node's canonical scoped name
  (``/model/layers.0/input_layernorm/node_pow_1``) or its raw ONNX name (``node_pow_1``),
  :mod:`pytest_trt.model.names`. ``*/input_layernorm/*`` therefore selects the same module
  in the TorchScript and the dynamo export of one model.

:mod:`pytest_trt.plan.policy` orders rules into a policy (the last matching rule decides);
:mod:`pytest_trt.plan` matches them against a model's nodes (:func:`match_rules`) and
says, when a pattern matches nothing, which names, module scopes and classes come closest
and what the model lacks (:func:`no_match_message`).

Imports neither onnx nor numpy: the plugin parses options with it. Nodes are anything
with ``.name`` and ``.op_type``; their scoped names and classes come from a
:class:`~pytest_trt.model.names.NodeNames` (``Model.names``).
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
from ..model.names import NodeName, NodeNames, short_class

OP_PREFIX = "op:"
CLASS_PREFIX = "class:"
# ONNX op types are identifiers (Softmax, LayerNormalization, com.microsoft ops too).
_OP_TYPE_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_GLOB_CHARS = set("*?[")


def validate_pattern(pattern: str) -> str:
    """Return ``pattern`` if it is a well-formed pattern, else raise :class:`PatternError`.

    Accepted: a non-empty shell glob over node names without surrounding whitespace,
    ``op:TYPE`` with an exact op type (an identifier, no glob characters), or ``class:GLOB``
    with a non-empty glob over module class names.

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
    elif pattern.startswith(CLASS_PREFIX):
        glob = pattern[len(CLASS_PREFIX):]
        if not glob or any(c.isspace() for c in glob):
            raise PatternError(
                f"precision pattern {pattern!r} names no module class: write e.g. 'class:LlamaRMSNorm' or "
                f"'class:*RMSNorm' (a glob over qualified or short class names, no spaces)"
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
        pattern: shell glob over canonical or raw node names, ``op:TYPE`` (exact op type) or
            ``class:GLOB`` (module classes; see the module docstring).
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

    @property
    def class_glob(self) -> str | None:
        """The glob of a ``class:GLOB`` rule, None otherwise."""
        return self.pattern[len(CLASS_PREFIX):] if self.pattern.startswith(CLASS_PREFIX) else None

    def matches(self, node: Any, name: NodeName | None = None) -> bool:
        """True if ``node`` (anything with ``.name`` and ``.op_type``) is selected by this rule.

        ``name`` is the node's :class:`~pytest_trt.model.names.NodeName` (``model.names[node.name]``):
        without it a glob matches the raw name only and a ``class:`` pattern matches nothing.
        """
        op_type = self.op_type
        if op_type is not None:
            return node.op_type == op_type
        glob = self.class_glob
        if glob is not None:
            return name is not None and name.matches_class(glob)
        if fnmatch.fnmatchcase(node.name, self.pattern):
            return True
        return name is not None and name.canonical != node.name and fnmatch.fnmatchcase(name.canonical, self.pattern)

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
def match_rules(rules: Sequence[Rule], nodes: Sequence[Any], label: str,
                names: NodeNames | None = None) -> dict[str, Rule]:
    """``{node_name: deciding rule}`` (the last matching rule wins); every rule must match a node.

    ``label`` names the model in the :class:`PatternError` raised for a rule that matches nothing;
    ``names`` (``Model.names``) gives the scoped names and classes patterns also match.
    """
    deciding: dict[str, Rule] = {}
    matched = [False] * len(rules)
    for node in nodes:
        info = names.get(node.name) if names is not None else None
        for index, rule in enumerate(rules):
            if rule.matches(node, info):
                deciding[node.name] = rule
                matched[index] = True
    for index, rule in enumerate(rules):
        if not matched[index]:
            raise PatternError(no_match_message(rule, label, list(nodes), names))
    return deciding


def no_match_message(rule: Rule, label: str, nodes: list[Any], names: NodeNames | None = None) -> str:
    """Why ``rule`` matches no node of the model ``label``: the closest names, module scopes and
    classes, what the model lacks (scopes, classes), and the fix."""
    source = f" (from {rule.source})" if rule.source not in ("api", "") else ""
    head = f"precision pattern {rule.pattern!r}{source} matches no node of {label} ({len(nodes)} nodes)."
    op_type = rule.op_type
    glob = rule.class_glob
    if op_type is not None:
        hints, fix = _op_type_hints(op_type, nodes)
    elif glob is not None:
        hints, fix = _class_hints(glob, names, len(nodes))
    else:
        hints, fix = _name_hints(rule.pattern, nodes, names)
    return " ".join([head, *hints, fix])


def fixed_only_message(rule: Rule, label: str, matched: list[Any], reasons: dict[str, str],
                       names: NodeNames | None = None) -> str:
    """Why ``rule`` changes nothing in the model ``label``: every node it matches is fixed.

    Fixed nodes (shape and integer math, Q/DQ, control flow, ...) keep their types as written
    under every plan, so a pattern that selects only them selects no float computation: like a
    pattern that matches no node, it is an error rather than a silent no-op.
    """
    source = f" (from {rule.source})" if rule.source not in ("api", "") else ""
    first = matched[0]
    why = reasons.get(first.name, "fixed")
    shown = names.canonical(first.name) if names is not None else first.name
    return (f"precision pattern {rule.pattern!r}{source} selects no float computation in {label}: it matches "
            f"{len(matched)} node(s), all fixed (e.g. {shown!r}: {why.removeprefix('fixed: ')}), whose types "
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


def _class_hints(glob: str, names: NodeNames | None, total: int) -> tuple[list[str], str]:
    """Hints for a ``class:`` pattern matching nothing: the closest classes, or what the model lacks."""
    if names is None or not names.has_classes:
        examples = _scope_examples(glob, names)
        if examples:
            return (["This export has no class information (its module scopes come from node names, as the "
                     "TorchScript exporter writes them; torch.onnx.export(..., dynamo=True) records classes)."],
                    f"Use a scope pattern like {' or '.join(map(repr, examples))} (`pytest-trt plan MODEL` lists "
                    f"every node's module).")
        return (["This model has no class information and no module scopes (no scoped node names, no "
                 "pkg.torch.onnx name_scopes/class_hierarchy metadata)."],
                "Select nodes with 'op:TYPE' or exact node names (`pytest-trt plan MODEL` lists them).")
    shorts = {short_class(c): c for c in names.classes()}
    shown = [f"{c!r} ({shorts[c]})" for c in closest_classes(glob, list(shorts))]
    hints = [f"Closest module classes: {', '.join(shown) or '(none)'}."]
    known = sum(1 for e in names.values() if e.module_classes)
    if known < total:
        inlined = any(e.source == "function" for e in names.values())
        hints.append(f"{known} of {total} nodes know their module class"
                     + (" (the nodes inlined from ONNX local functions)." if inlined else "."))
    folded = [s for s in shorts if fnmatch.fnmatch(s.lower(), glob.lower())]
    if folded:
        hints.append(f"Ignoring case it would match {folded[0]!r}: patterns are case-sensitive.")
    fix = ("'class:' globs match qualified or short module class names ('class:LlamaRMSNorm', 'class:*RMSNorm'); "
           "fix or remove the pattern (`pytest-trt plan MODEL` lists every node's class).")
    return hints, fix


def _scope_examples(glob: str, names: NodeNames | None, n: int = 3) -> list[str]:
    """Scope patterns (``*/input_layernorm/*``) whose last module segment shares the longest piece
    with the class ``glob`` (``*RMSNorm``: ``norm``), the most repeated first."""
    if names is None or not names.has_scopes:
        return []
    counts: dict[str, int] = {}
    for scope in names.scopes():
        last = scope.rstrip("/").rpartition("/")[2]
        if last:
            counts[last] = counts.get(last, 0) + 1
    word = glob.strip("*?[]").lower() or glob.lower()

    def score(last: str) -> tuple[int, int, int]:
        lower = last.lower()
        common = difflib.SequenceMatcher(None, word, lower).find_longest_match(0, len(word), 0, len(lower)).size
        return common, counts[last], -len(last)

    best = heapq.nlargest(n, counts, key=score)
    return [f"*/{escape(x)}/*" for x in best if score(x)[0] >= 3]


def escape(text: str) -> str:
    """``text`` as a shell glob that matches exactly ``text`` (``[`` ``*`` ``?`` escaped)."""
    return "".join(f"[{c}]" if c in "[*?" else c for c in text)


def _name_hints(pattern: str, nodes: list[Any], names: NodeNames | None = None) -> tuple[list[str], str]:
    shown = [names.canonical(n.name) if names is not None else n.name for n in nodes]
    close = closest_names(pattern, shown)
    hints = [f"Closest node names: {', '.join(map(repr, close)) or '(none)'}."]
    hints.extend(_module_hints(pattern, names))
    raw = [n.name for n in nodes]
    pool = list(dict.fromkeys(shown + raw))
    if not pattern.startswith("*"):
        prefixed = [n for n in pool if fnmatch.fnmatchcase(n, "*" + pattern)]
        if prefixed:
            hints.append(f"'*{pattern}' would match {len(prefixed)} node(s), e.g. {prefixed[0]!r}: "
                         f"a pattern must match the WHOLE node name.")
    folded = [n for n in pool if fnmatch.fnmatch(n.lower(), pattern.lower())]
    if folded:
        hints.append(f"Ignoring case it would match {len(folded)} node(s), e.g. {folded[0]!r}: "
                     f"patterns are case-sensitive.")
    fix = ("Patterns are shell globs over full scoped node names ('*/input_layernorm/*', '*/LayerNorm/*'), "
           "'class:GLOB' over module classes or 'op:TYPE'; fix or remove the pattern (`pytest-trt plan MODEL` "
           "lists every node's name, module and class).")
    return hints, fix


def _module_hints(pattern: str, names: NodeNames | None) -> list[str]:
    """The closest module scopes (as patterns) and classes, or what the model lacks."""
    if names is None or not names.has_scopes:
        return ["This model's nodes carry no module scopes (no '/a/b/' scope in their names, no pkg.torch.onnx "
                "name_scopes metadata): select nodes by exact name or 'op:TYPE'."]
    hints = []
    scopes = names.scopes()
    close = closest_names(pattern, [s + "*" for s in scopes])
    if close:
        hints.append(f"Closest module scopes: {', '.join(map(repr, close))}.")
    dotted = [m for m in names.modules() if fnmatch.fnmatchcase(m, pattern) or fnmatch.fnmatchcase(m, pattern + ".*")]
    if dotted:
        entry = next(e for e in names.values() if e.module == dotted[0])
        hints.append(f"Patterns match scoped names with '/', not dotted module paths: module {dotted[0]!r} is "
                     f"{(entry.scope or '') + '*'!r}.")
    if names.has_classes:
        hints.extend(_nearby_class_hints(pattern, names))
    return hints


def _nearby_class_hints(pattern: str, names: NodeNames) -> list[str]:
    """A glob that names a module class, or classes like it: the ``class:`` pattern to write."""
    shorts = {short_class(c) for c in names.classes()}
    as_class = sorted(s for s in shorts if fnmatch.fnmatchcase(s, pattern.strip("/")))
    if as_class:
        return [f"{as_class[0]!r} is a module class: select it with 'class:{as_class[0]}'."]
    by_lower = {c.lower(): c for c in shorts}
    word = pattern.strip("*?[]/").lower() or pattern
    near = [by_lower[c] for c in difflib.get_close_matches(word, list(by_lower), n=2, cutoff=0.6)]
    return [f"Module classes nearby: {', '.join(repr('class:' + c) for c in near)}."] if near else []


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


def closest_classes(glob: str, classes: list[str], n: int = 3) -> list[str]:
    """The ``n`` short module class names closest to a ``class:`` glob (without its prefix): its literal
    part against the names, case-insensitively (``*RMSNrom`` -> ``Qwen3RMSNorm``). One ranking for the
    per-model PatternError and the session's unmatched-pattern message."""
    word = glob.strip("*?[]").lower()
    lowered = {c.lower(): c for c in classes}
    return [lowered[c] for c in closest(word, list(lowered), n=n)] if word else []


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
    "CLASS_PREFIX",
    "OP_PREFIX",
    "Rule",
    "closest",
    "closest_classes",
    "closest_names",
    "match_rules",
    "no_match_message",
    "parse_rule",
    "validate_pattern",
]
