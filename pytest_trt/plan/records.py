"""The plan's records: :class:`PrecisionPlan` and what it says about each node.

A :class:`PrecisionPlan` is the output of resolution (:mod:`pytest_trt.plan.resolve`) and
the input of every realization: per node a :class:`NodeDecision` (compute or fixed, which
precision, which rule) and a :class:`NodeIO` (the precision each input is read and each
output written in). :class:`ExpectationFailure` and :class:`UnsupportedPrecisionError`
report what a plan cannot or must not do. The typing rules are in :mod:`pytest_trt.plan`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..core.dtypes import FP32, LOW_PRECISIONS, PRECISIONS
from ..errors import ModelError, PatternError, PrecisionError
from .rules import Rule, closest, no_match_message, validate_pattern

if TYPE_CHECKING:  # pragma: no cover
    from ..model.load import Model
    from ..model.names import NodeNames

# Bump when the typing rules or a realization change what gets built: the plan
# fingerprint is part of engine cache keys.
PLAN_FORMAT = 2

COMPUTE, FIXED = "compute", "fixed"
CONTROL_FLOW_OPS = frozenset({"If", "Loop", "Scan"})
SOURCE_OPS = frozenset({
    "Constant", "ConstantOfShape", "EyeLike", "RandomNormal", "RandomUniform",
    "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli",
})
QUANTIZATION_OPS = frozenset({"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear"})

#: the rule of every compute node of an as-is plan (read from the model, not decided)
AS_WRITTEN = "as written"


# --------------------------------------------------------------------------------------
# public records
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class NodeDecision:
    """What the plan decided for one node.

    Attributes:
        name: node name (unique after :func:`~pytest_trt.model.load.load_model`).
        op_type: ONNX op type.
        precision: ``fp32``/``fp16``/``bf16`` for compute nodes, None for fixed nodes.
        rule: what decided: ``default``, a rule ``PATTERN=PRECISION``, or
            ``fixed: <why>`` (with any rule that was ignored for this node).
        kind: ``compute`` or ``fixed``.
    """

    name: str
    op_type: str
    precision: str | None
    rule: str
    kind: str

    def to_json(self) -> dict[str, Any]:
        """``{"name", "op_type", "precision", "rule"}``; ``precision`` is ``"fixed"`` for a fixed node, the
        word ``counts``, the ``plan`` table and the layer report use (``rule`` says why it is fixed)."""
        precision = self.precision if self.kind == COMPUTE and self.precision is not None else FIXED
        return {"name": self.name, "op_type": self.op_type, "precision": precision, "rule": self.rule}


@dataclass(frozen=True)
class NodeIO:
    """Precision in which one node reads each input and writes each output.

    ``inputs[i]`` / ``outputs[i]`` is a precision name for float tensors and None for
    anything else (ints, bools, absent optional slots). ``implicit`` maps outer-scope
    tensors read inside the node's subgraphs (control flow) to the precision the
    subgraph expects.
    """

    inputs: tuple[str | None, ...]
    outputs: tuple[str | None, ...]
    implicit: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class ExpectationFailure:
    """A node an ``expect_fp32`` pattern selects that the plan computes in low precision.

    Only compute nodes other than Casts are checked (a Cast is an island boundary).

    Attributes:
        node: node name.
        op_type: its op type.
        precision: the precision it computes in (``fp16``/``bf16``).
        pattern: the ``expect_fp32`` pattern that selected it.
        fix: what would make it FP32 (the Cast to insert, or the rule to add).
        canonical: its canonical scoped name (:mod:`pytest_trt.model.names`), shown in the message.
    """

    node: str
    op_type: str
    precision: str
    pattern: str
    fix: str
    canonical: str = ""

    def line(self) -> str:
        name = self.canonical or self.node
        return f"{name!r} ({self.op_type}) computes in {self.precision} [expect_fp32 {self.pattern!r}]: {self.fix}"

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "canonical": self.canonical or self.node, "op_type": self.op_type,
                "precision": self.precision, "pattern": self.pattern, "fix": self.fix}


class UnsupportedPrecisionError(ModelError):
    """Compute nodes were planned in a precision their op (at the model's opset) does not allow.

    Attributes:
        precision: the precision asked for.
        nodes: ``{node_name: op_type}`` of the offending nodes.
        op_types: the offending op types, sorted: ``keep_fp32=[f"op:{t}" for t in op_types]`` fixes it.
    """

    def __init__(self, message: str, *, precision: str, nodes: dict[str, str]):
        super().__init__(message)
        self.precision = precision
        self.nodes = dict(nodes)
        self.op_types = sorted(set(nodes.values()))


class PolicyView(Protocol):
    """What a plan reads of its :class:`~pytest_trt.plan.policy.PrecisionPolicy` (the type of
    :attr:`PrecisionPlan.policy`). A protocol, so that the plan does not import the policy
    module: ``PrecisionPolicy.resolve`` imports the plan."""

    @property
    def default(self) -> str: ...
    @property
    def keep_fp32(self) -> tuple[str, ...]: ...
    @property
    def rules(self) -> tuple[Rule, ...]: ...
    @property
    def as_is(self) -> bool: ...
    @property
    def expect_fp32(self) -> tuple[str, ...]: ...
    @property
    def low_precision(self) -> str | None: ...

    def rules_in_order(self) -> tuple[Rule, ...]: ...
    def describe(self) -> str: ...
    def to_json(self) -> dict[str, Any]: ...


@dataclass(eq=False)
class PrecisionPlan:
    """A :class:`~pytest_trt.plan.policy.PrecisionPolicy` resolved against a :class:`~pytest_trt.model.load.Model`.

    Build it with ``policy.resolve(model)``. Attributes:

    * ``nodes``: ``{name: NodeDecision}`` for every main-graph node, in topological order.
    * ``tensor_precision``: every float tensor -> the precision it is stored in. Graph
      inputs and outputs keep the model's types; an initializer read in several
      precisions is listed in the precision of its original name (copies get suffixes).
    * ``boundaries``: ``(tensor, from, to)`` for every Cast a realization inserts.
    * ``node_io``: ``{name: NodeIO}`` the precision each node reads and writes.
    * ``elem_types``: ONNX element type of every typed main-graph tensor in the model
      as given (after shape inference).
    * ``value_info``: ``{tensor: ValueInfoProto}`` from that inference (shapes for the
      realizations' value_info).
    * ``constant_tensors``: float initializers and float Constant outputs, which
      realizations store per reader precision instead of casting.
    * ``notes``: what a reader of the plan should know (a mixed-precision source model
      re-typed by a policy, Q/DQ nodes kept as written, ...).
    * ``expectation_failures``: nodes the policy's ``expect_fp32`` patterns select that
      the plan computes in low precision. Resolution records them and never raises for
      them; :meth:`assert_expectations` (called by ``trt.check()``) turns them into a
      :class:`~pytest_trt.errors.PrecisionError`.

    An **as-is** plan (``PrecisionPolicy(as_is=True)``) is read from the model instead of
    decided by rules: every compute node computes in the type the model gives its
    outputs (its own Casts decide), with rule ``"as written"``; ``tensor_precision`` is
    the model's own storage types and ``boundaries`` is empty (a realization inserts no
    Cast: the strong realization is the model itself).
    """

    model: Model
    policy: PolicyView
    nodes: dict[str, NodeDecision]
    tensor_precision: dict[str, str]
    boundaries: list[tuple[str, str, str]]
    node_io: dict[str, NodeIO]
    elem_types: dict[str, int]
    value_info: dict[str, Any] = field(default_factory=dict, repr=False)
    constant_tensors: frozenset[str] = frozenset()
    notes: list[str] = field(default_factory=list)
    expectation_failures: list[ExpectationFailure] = field(default_factory=list)

    # -- queries ---------------------------------------------------------------------------
    def precision_of(self, node_name: str) -> str | None:
        """Planned precision of a node, by raw or canonical name (None for fixed nodes)."""
        entry = self.model.names.by_canonical(node_name) if node_name not in self.nodes else None
        if entry is not None:
            node_name = entry.raw
        try:
            return self.nodes[node_name].precision
        except KeyError:
            close = closest(node_name, list(self.nodes))
            raise PatternError(
                f"{self.model.label} has no node named {node_name!r}; closest names: "
                f"{', '.join(map(repr, close)) or '(the graph has no nodes)'}"
            ) from None

    @property
    def names(self) -> NodeNames:
        """The model's node names (canonical scoped name, module, classes): ``self.model.names``."""
        return self.model.names

    def match(self, pattern: str) -> list[str]:
        """Raw names of the nodes ``pattern`` selects (a glob over canonical or raw names,
        ``class:GLOB``, ``op:TYPE``), in graph order.

        Raises :class:`PatternError` (with the closest names) when nothing matches.
        """
        rule = Rule(validate_pattern(pattern), FP32)
        known = self.model.names
        names = [d.name for d in self.nodes.values() if rule.matches(d, known.get(d.name))]
        if not names:
            raise PatternError(no_match_message(rule, self.model.label, list(self.nodes.values()), known))
        return names

    @property
    def as_is(self) -> bool:
        """True when the plan was read from the model's own types (``as_is`` policy)."""
        return bool(self.policy.as_is)

    @property
    def quantized(self) -> bool:
        """True when the model has QuantizeLinear/DequantizeLinear nodes (kept as written)."""
        return any(d.op_type in QUANTIZATION_OPS for d in self.nodes.values())

    def assert_expectations(self) -> None:
        """Raise :class:`~pytest_trt.errors.PrecisionError` naming every node an ``expect_fp32``
        pattern selects that the plan computes in low precision (no-op when there is none)."""
        failures = self.expectation_failures
        if not failures:
            return
        if self.as_is:
            head = (f"{self.model.label} [{self.policy.describe()}]: the model itself computes {len(failures)} "
                    f"node(s) expected to stay FP32 in low precision:")
        else:
            head = (f"{self.model.label} [{self.policy.describe()}]: the plan lowers {len(failures)} node(s) "
                    f"expected to stay FP32:")
        raise PrecisionError("\n".join([head, *(f"  {f.line()}" for f in failures)]), failures)

    @property
    def low_precision(self) -> str | None:
        """fp16 or bf16 when some compute node runs in it, else None."""
        for decision in self.nodes.values():
            if decision.precision in LOW_PRECISIONS:
                return decision.precision
        return None

    def counts(self) -> dict[str, int]:
        """``{"fp32": n, "fp16": n, "bf16": n, "fixed": n}`` over all nodes."""
        counts = {p: 0 for p in PRECISIONS}
        counts[FIXED] = 0
        for decision in self.nodes.values():
            key = decision.precision if decision.kind == COMPUTE and decision.precision is not None else FIXED
            counts[key] += 1
        return counts

    def fingerprint(self) -> str:
        """sha256 over the model hash and the decisions: the plan part of cache keys.

        Rule texts are left out on purpose: two policies that decide the same
        precisions share engines.
        """
        payload = {
            "format": PLAN_FORMAT,
            "model": self.model.sha256,
            "nodes": [[d.name, d.op_type, d.kind, d.precision] for d in self.nodes.values()],
        }
        if self.as_is:
            payload["as_is"] = True  # read from the model, not decided: never shares a key with a policy
        data = json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()
        return hashlib.sha256(data).hexdigest()

    def to_json(self) -> dict[str, Any]:
        """``{"model", "policy", "nodes": [{"name", "canonical", "module", "module_class", "op_type",
        "precision", "rule"}], "counts"}`` (plus ``notes`` and ``expectation_failures`` when there are
        any); a node's ``precision`` is one of the keys of ``counts`` (``"fixed"`` for fixed nodes).
        ``name`` is the raw ONNX node name; ``canonical``, ``module`` (dotted path, None when
        unknown) and ``module_class`` (qualified, innermost) come from ``Model.names``."""
        names = self.model.names
        data = {
            "model": self.model.label,
            "policy": self.policy.to_json(),
            "nodes": [{**d.to_json(), **names.info(d.name)} for d in self.nodes.values()],
            "counts": self.counts(),
        }
        if self.notes:
            data["notes"] = list(self.notes)
        if self.expectation_failures:
            data["expectation_failures"] = [f.to_json() for f in self.expectation_failures]
        return data

    def summary(self) -> str:
        """One line, e.g. ``bert.onnx [fp16; fp32: */LayerNorm/*]: 120 fp16, 18 fp32, 40 fixed; 12 casts``."""
        counts = self.counts()
        parts = [f"{counts[p]} {p}" for p in (*PRECISIONS, FIXED) if counts[p]]
        return (f"{self.model.label} [{self.policy.describe()}]: {', '.join(parts) or 'no nodes'}; "
                f"{len(self.boundaries)} casts")

    def __repr__(self) -> str:
        return f"PrecisionPlan({self.model.label!r}, {self.policy.describe()!r}, {self.counts()})"




__all__ = [
    "AS_WRITTEN",
    "COMPUTE",
    "CONTROL_FLOW_OPS",
    "ExpectationFailure",
    "FIXED",
    "NodeDecision",
    "NodeIO",
    "PLAN_FORMAT",
    "PolicyView",
    "PrecisionPlan",
    "QUANTIZATION_OPS",
    "SOURCE_OPS",
    "UnsupportedPrecisionError",
]
