"""Precision policies: what the user asks for, before it meets a model.

A :class:`PrecisionPolicy` is a default precision plus ordered :class:`Rule` objects.
A rule's pattern is a shell glob over ONNX node names (``*/LayerNorm/*``) or
``op:TYPE`` over op types (``op:Softmax``). Rules are applied in order and the LATER
rule wins, so ``keep_fp32`` entries (which come first) can be overridden by an
explicit rule::

    PrecisionPolicy("fp16", keep_fp32=["*/LayerNorm/*"], rules=["*/LayerNorm/Add_1=fp16"])

``policy.resolve(model)`` turns the policy into a :class:`~pytest_trt.plan.PrecisionPlan`
(every node -> precision, and which rule decided it). A pattern that matches no node
of the model is an error there, never silently ignored.

The pattern syntax and :class:`Rule` live in :mod:`pytest_trt.plan.rules` (re-exported
here). This module imports neither onnx nor numpy: the plugin parses options with it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..core.dtypes import FP32, LOW_PRECISIONS, normalize_precision
from ..errors import UsageError
from .rules import OP_PREFIX, Rule, parse_rule, validate_pattern

if TYPE_CHECKING:  # pragma: no cover
    from . import PrecisionPlan

def _as_rule(item: Any, source: str) -> Rule:
    if isinstance(item, Rule):
        return item
    if isinstance(item, str):
        return parse_rule(item, source=source)
    if isinstance(item, (tuple, list)) and len(item) == 2:
        return Rule(item[0], item[1], source=source)
    raise UsageError(
        f"cannot use {item!r} as a precision rule: give a Rule, a (pattern, precision) pair "
        f"or a 'PATTERN=PRECISION' string"
    )


def _as_patterns(value: Any, what: str) -> tuple[str, ...]:
    # A single string is one pattern, not a sequence of one-character patterns.
    if value is None:
        return ()
    if isinstance(value, str):
        value = (value,)
    try:
        items = tuple(value)
    except TypeError:
        raise UsageError(f"{what} must be a pattern or a list of patterns, got {value!r}") from None
    return tuple(validate_pattern(p) for p in items)


def _as_rules(value: Any) -> tuple[Rule, ...]:
    if value is None:
        return ()
    if isinstance(value, (str, Rule)):
        value = (value,)
    elif isinstance(value, Mapping):
        value = tuple(value.items())
    return tuple(_as_rule(item, "api") for item in value)


@dataclass(frozen=True)
class PrecisionPolicy:
    """A default precision plus ordered rules; resolved against a model into a plan.

    Args:
        default: precision of every compute node no rule selects (``fp32``, ``fp16``, ``bf16``).
        keep_fp32: patterns whose nodes stay FP32 (applied first, so later rules override them).
        rules: ordered rules, each a :class:`Rule`, a ``(pattern, precision)`` pair, a
            ``"PATTERN=PRECISION"`` string, or a mapping ``{pattern: precision}``.
        as_is: test a model that arrives with its own precision (mixed FP16/FP32 with
            Casts, Q/DQ) as written: the plan is READ from the model's types, nothing is
            rewritten. Cannot be combined with ``keep_fp32``, ``rules`` or a ``default``
            other than fp32 (those rewrite precision): :class:`UsageError`.
        expect_fp32: patterns the model (as_is) or the plan must keep in FP32. An
            assertion, not a rewrite: a selected node computed in FP16/BF16 is recorded in
            ``plan.expectation_failures`` and ``plan.assert_expectations()`` (called by
            ``trt.check()``) fails naming it. A pattern matching no node is a PatternError.

    A policy may use fp16 or bf16 but not both: a plan has one low precision, which
    picks the comparison tolerances.
    """

    default: str = FP32
    keep_fp32: tuple[str, ...] = ()
    rules: tuple[Rule, ...] = ()
    as_is: bool = False
    expect_fp32: tuple[str, ...] = ()

    def __post_init__(self):
        set_ = object.__setattr__
        set_(self, "default", normalize_precision(self.default, what="default precision"))
        set_(self, "keep_fp32", _as_patterns(self.keep_fp32, "keep_fp32"))
        set_(self, "rules", _as_rules(self.rules))
        set_(self, "as_is", bool(self.as_is))
        set_(self, "expect_fp32", _as_patterns(self.expect_fp32, "expect_fp32"))
        if self.as_is and (self.default != FP32 or self.keep_fp32 or self.rules):
            asked = []
            if self.default != FP32:
                asked.append(f"default={self.default!r}")
            if self.keep_fp32:
                asked.append(f"keep_fp32={list(self.keep_fp32)!r}")
            if self.rules:
                asked.append(f"rules={[r.text() for r in self.rules]!r}")
            raise UsageError(
                f"as_is=True tests the model in its own precision (its Casts and storage types, as written), "
                f"but this policy also asks to rewrite it: {', '.join(asked)}. Either keep as_is and drop those "
                f"(state what the model must keep FP32 with expect_fp32=[...], an assertion that rewrites "
                f"nothing), or drop as_is and apply the policy to an FP32 source model (the export before "
                f"autocast / quantization)."
            )
        lows = sorted({p for p in (self.default, *(r.precision for r in self.rules)) if p in LOW_PRECISIONS})
        if len(lows) > 1:
            raise UsageError(
                f"precision policy {self.describe()!r} mixes {' and '.join(lows)}: a plan uses one "
                f"low precision; pick fp16 or bf16"
            )

    # -- views -----------------------------------------------------------------------------
    def rules_in_order(self) -> tuple[Rule, ...]:
        """keep_fp32 entries first (as fp32 rules), then ``rules``; the later rule wins."""
        keep = tuple(Rule(p, FP32, source="keep_fp32") for p in self.keep_fp32)
        return keep + self.rules

    @property
    def low_precision(self) -> str | None:
        """fp16 or bf16 if the policy asks for either anywhere, else None."""
        for p in (self.default, *(r.precision for r in self.rules)):
            if p in LOW_PRECISIONS:
                return p
        return None

    def describe(self) -> str:
        """One line: ``"fp16; fp32: */LayerNorm/*, op:Softmax"``.

        Consecutive rules of one precision are grouped; groups keep their order because
        the later rule wins.
        """
        if self.as_is:
            head = "as-is"
        else:
            head = self.default
        parts = [head]
        for precision, patterns in _grouped(self.rules_in_order()):
            parts.append(f"{precision}: {', '.join(patterns)}")
        if self.expect_fp32:
            parts.append(f"expect fp32: {', '.join(self.expect_fp32)}")
        return "; ".join(parts)

    def __str__(self) -> str:
        return self.describe()

    def to_json(self) -> dict[str, Any]:
        """Canonical JSON form (cache keys, reports).

        ``keep_fp32`` is folded into the ordered rule list, so two policies that mean
        the same thing (``keep_fp32=["x"]`` vs ``rules=["x=fp32"]``) serialize equally.
        """
        return {
            "default": self.default,
            "rules": [{"pattern": r.pattern, "precision": r.precision} for r in self.rules_in_order()],
            "as_is": self.as_is,
            "expect_fp32": list(self.expect_fp32),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PrecisionPolicy:
        """Inverse of :meth:`to_json`."""
        rules = tuple(Rule(r["pattern"], r["precision"]) for r in data.get("rules", ()))
        return cls(
            default=data.get("default", FP32),
            rules=rules,
            as_is=bool(data.get("as_is", False)),
            expect_fp32=tuple(data.get("expect_fp32", ())),
        )

    # -- derivation ------------------------------------------------------------------------
    def with_default(self, precision: str) -> PrecisionPolicy:
        """The same rules with another default precision (e.g. from ``--trt-fp16``)."""
        return replace(self, default=precision)

    def with_rules(self, rules: Iterable[Any]) -> PrecisionPolicy:
        """This policy with ``rules`` appended (they win over the existing ones)."""
        return replace(self, rules=self.rules + _as_rules(tuple(rules)))

    def resolve(self, model: Any) -> PrecisionPlan:
        """Resolve against ``model`` (a :class:`~pytest_trt.model.load.Model`, path or ModelProto).

        Raises :class:`PatternError` for a pattern that matches no node and
        :class:`~pytest_trt.errors.ModelError` for a plan the model cannot carry. An
        ``as_is`` policy reads the plan from the model's own types
        (:func:`pytest_trt.plan.resolve_as_is`).
        """
        # Function-level on purpose (plugin load path): the plugin parses options with this
        # module, which must not import onnx; model and plan do. plan does not import policy.
        from ..model.load import load_model
        from . import resolve_plan

        return resolve_plan(load_model(model), self)


def _grouped(rules: Iterable[Rule]) -> list[tuple[str, list[str]]]:
    groups: list[tuple[str, list[str]]] = []
    for rule in rules:
        if groups and groups[-1][0] == rule.precision:
            groups[-1][1].append(rule.pattern)
        else:
            groups.append((rule.precision, [rule.pattern]))
    return groups


__all__ = ["OP_PREFIX", "PrecisionPolicy", "Rule", "parse_rule", "validate_pattern"]
