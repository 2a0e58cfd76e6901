"""Precision plans: a policy resolved against one model.

A :class:`PrecisionPlan` says, for every node of the main graph, whether it computes
("compute") or only moves shapes, indices and constants ("fixed"), which precision a
compute node runs in, and which rule decided it. From the decisions it derives what
each node reads and writes (:attr:`PrecisionPlan.node_io`): the typing every
realization (strong ONNX, emulation graph, weak-typing hints) applies mechanically,
so "what was asked" and "what ran" can be compared node by node.

Typing rules (the realizations rely on them; see ``docs/DESIGN.md``):

* A compute node with precision ``p`` writes its float outputs that share the op's
  type variable with the first float output (the *primary* type variable) in ``p``
  and reads its inputs of that type variable in ``p``. Other outputs keep their
  declared types (LayerNormalization ``Mean``/``InvStdDev``).
* An input whose formal type is concrete (Resize ``scales`` is ``tensor(float)``) is
  read in that type.
* An input-only type variable (Pow's exponent ``T1``) is read in ``p`` when the op
  allows it; a type variable that allows every type (Shape, Cast's input) reads the
  tensor as it is stored.
* Fixed nodes read what they are given when the op allows it and inputs of one type
  variable agree (Greater(fp16, fp32) does not: both are read in their original type).
  Control flow, quantization, source and schema-less nodes are kept as written: their
  float inputs (and the outer-scope tensors their subgraphs read) are read in the
  model's original types.
* Graph inputs and outputs keep the model's types.
* Initializers and float ``Constant`` values are stored in the type each consumer
  reads, one copy per type (tied weights read by FP32 and FP16 nodes get two).
"""

from __future__ import annotations

import difflib
import fnmatch
import hashlib
import heapq
import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .dtypes import (
    ELEM_DOUBLE,
    ELEM_OF_PRECISION,
    FLOAT_ELEM_TYPES,
    FP32,
    LOW_PRECISIONS,
    PRECISION_OF_ELEM,
    PRECISIONS,
)
from .errors import ModelError, PatternError, PrecisionError
from .policy import PrecisionPolicy, Rule, validate_pattern

if TYPE_CHECKING:  # pragma: no cover
    from .model import Model

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

_ELEM_OF_TYPE_STR = {"tensor(float)": 1, "tensor(float16)": 10, "tensor(double)": 11, "tensor(bfloat16)": 16}
_TYPE_STR_OF_PRECISION = {"fp32": "tensor(float)", "fp16": "tensor(float16)", "bf16": "tensor(bfloat16)"}


# --------------------------------------------------------------------------------------
# public records
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class NodeDecision:
    """What the plan decided for one node.

    Attributes:
        name: node name (unique after :func:`~pytest_trt.model.load_model`).
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
        return {"name": self.name, "op_type": self.op_type, "precision": self.precision, "rule": self.rule}


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
    """

    node: str
    op_type: str
    precision: str
    pattern: str
    fix: str

    def line(self) -> str:
        return f"{self.node!r} ({self.op_type}) computes in {self.precision} [expect_fp32 {self.pattern!r}]: {self.fix}"

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "op_type": self.op_type, "precision": self.precision,
                "pattern": self.pattern, "fix": self.fix}


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


@dataclass(eq=False)
class PrecisionPlan:
    """A :class:`~pytest_trt.policy.PrecisionPolicy` resolved against a :class:`~pytest_trt.model.Model`.

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
    policy: PrecisionPolicy
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
        """Planned precision of a node (None for fixed nodes)."""
        try:
            return self.nodes[node_name].precision
        except KeyError:
            close = _closest(node_name, list(self.nodes))
            raise PatternError(
                f"{self.model.label} has no node named {node_name!r}; closest names: "
                f"{', '.join(map(repr, close)) or '(the graph has no nodes)'}"
            ) from None

    def match(self, pattern: str) -> list[str]:
        """Names of the nodes ``pattern`` selects, in graph order.

        Raises :class:`PatternError` (with the closest names) when nothing matches.
        """
        rule = Rule(validate_pattern(pattern), FP32)
        names = [d.name for d in self.nodes.values() if rule.matches(d)]
        if not names:
            raise PatternError(_no_match_message(rule, self.model, list(self.nodes.values())))
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
            counts[decision.precision if decision.kind == COMPUTE else FIXED] += 1
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
        """``{"model", "policy", "nodes": [{"name","op_type","precision","rule"}], "counts"}``
        (plus ``notes`` and ``expectation_failures`` when there are any)."""
        data = {
            "model": self.model.label,
            "policy": self.policy.to_json(),
            "nodes": [d.to_json() for d in self.nodes.values()],
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


# --------------------------------------------------------------------------------------
# resolution
# --------------------------------------------------------------------------------------
def resolve_plan(model: Model, policy: PrecisionPolicy) -> PrecisionPlan:
    """Resolve ``policy`` against ``model`` (``policy.resolve(model)`` calls this)."""
    if policy.as_is:
        return resolve_as_is(model, policy)
    graph = model.proto.graph
    known, elem_types, value_info = _infer_types(model)
    graph_ctx = _GraphContext(model, known, elem_types, value_info)
    graph_ctx.check_types()
    _check_quantization(graph_ctx)

    rules = policy.rules_in_order()
    deciding = _match_rules(rules, graph.node, model)
    decisions: dict[str, NodeDecision] = {}
    for node in graph.node:
        decisions[node.name] = _decide(node, deciding.get(node.name), policy, graph_ctx)
    _check_supported(decisions, graph_ctx)

    node_io = _type_nodes(graph_ctx, decisions)
    return _assemble(model, policy, graph_ctx, decisions, node_io, elem_types, value_info)


# --------------------------------------------------------------------------------------
# as-is plans: read from the model's own types
# --------------------------------------------------------------------------------------
AS_WRITTEN = "as written"


def resolve_as_is(model: Model, policy: PrecisionPolicy) -> PrecisionPlan:
    """The plan of a model that arrives with its own precision (``PrecisionPolicy(as_is=True)``).

    Nothing is decided: every compute node computes in the type of its primary float
    output as the model (after ONNX type inference) writes it, so the model's own Casts
    decide; rule ``"as written"``. Fixed nodes (Q/DQ, shape math, ...) are fixed as in
    any plan. Every tensor is read and stored in its own type, so there are no
    boundaries and the strong realization is the model itself.

    Raises :class:`~pytest_trt.errors.ModelError` naming the node when the model binds
    one type variable to different types (``Add(fp16, fp32)``: ONNX Runtime and
    TensorRT reject it) or a Q/DQ node's scale / zero point has the wrong shape.
    """
    if policy.default != FP32 or policy.rules_in_order():
        raise ModelError(  # PrecisionPolicy refuses this at construction; kept for hand-made policies
            f"as-is policy {policy.describe()!r} also rewrites precision; see PrecisionPolicy(as_is=True)")
    known, elem_types, value_info = _infer_types(model)
    ctx = _GraphContext(model, known, elem_types, value_info)
    ctx.check_types()
    _check_as_written(ctx)
    _check_quantization(ctx)

    decisions: dict[str, NodeDecision] = {}
    node_io: dict[str, NodeIO] = {}
    for node in ctx.graph.node:
        reason = _fixed_reason(node, ctx)
        if reason is not None:
            decisions[node.name] = NodeDecision(node.name, node.op_type, None, f"fixed: {reason}", FIXED)
        else:
            decisions[node.name] = NodeDecision(node.name, node.op_type, _written_precision(node, ctx),
                                                AS_WRITTEN, COMPUTE)
        node_io[node.name] = NodeIO(
            tuple(ctx.original(n) if ctx.is_float(n) else None for n in node.input),
            tuple(ctx.original(o) if ctx.is_float(o) else None for o in node.output),
            tuple((n, ctx.original(n)) for n in ctx.outer_refs.get(node.name, ()) if ctx.is_float(n)),
        )
    plan = _assemble(model, policy, ctx, decisions, node_io, elem_types, value_info)
    assert not plan.boundaries, f"as-is plan needs Casts: {plan.boundaries}"  # every read is as stored
    return plan


def _assemble(model, policy, ctx, decisions, node_io, elem_types, value_info) -> PrecisionPlan:
    """The plan from the decisions and what each node reads and writes (both resolutions end here)."""
    tensor_precision, boundaries = _storage(ctx, node_io)
    return PrecisionPlan(
        model=model,
        policy=policy,
        nodes=decisions,
        tensor_precision=tensor_precision,
        boundaries=boundaries,
        node_io=node_io,
        elem_types=elem_types,
        value_info=value_info,
        constant_tensors=frozenset(ctx.constants),
        notes=_source_notes(ctx, policy),
        expectation_failures=_expectations(policy, decisions, node_io, ctx),
    )


def check_as_written(model: Model) -> None:
    """The checks an as-is plan runs, without a plan: every type variable bound to one
    allowed type, Q/DQ scale and zero-point shapes. ModelError naming the node. (Unlike
    planning, unknown and DOUBLE tensor types are fine here: references run them.)"""
    known, elem_types, value_info = _infer_types(model)
    ctx = _GraphContext(model, known, elem_types, value_info)
    _check_as_written(ctx)
    _check_quantization(ctx)


def _written_precision(node, ctx: _GraphContext) -> str:
    """The precision a node computes in as written: the type of its primary float output."""
    schema = ctx.schemas[node.name]
    primary = _primary_type_var(node, schema, ctx)
    for index, out in enumerate(node.output):
        formal = _formal(schema.outputs, index)
        if ctx.is_float(out) and formal is not None and formal.type_str == primary:
            return ctx.original(out)
    return next(ctx.original(o) for o in node.output if ctx.is_float(o))


def _check_as_written(ctx: _GraphContext) -> None:
    """Every type variable of every node is bound to one allowed type (what ONNX Runtime checks on load).

    ONNX type inference (run without type checking so that every model gets a plan) does
    not catch ``Add(fp16, fp32)``; an as-is plan takes the types as they are, so they must
    be consistent.
    """
    from .dtypes import elem_type_name

    for node in ctx.graph.node:
        schema = ctx.schemas[node.name]
        if schema is None:
            continue
        bound: dict[str, list[tuple[str, int]]] = {}
        slots = [(name, _formal(schema.inputs, i)) for i, name in enumerate(node.input)]
        slots += [(name, _formal(schema.outputs, i)) for i, name in enumerate(node.output)]
        for name, formal in slots:
            if not name or formal is None or name not in ctx.elem_types or not formal.is_homogeneous:
                continue  # heterogeneous variadics (Loop/Scan/If values) may mix types
            bound.setdefault(formal.type_str, []).append((name, ctx.elem_types[name]))
        for type_str, tensors in bound.items():
            elems = {e for _, e in tensors}
            listing = ", ".join(f"{n!r} {elem_type_name(e)}" for n, e in tensors)
            if len(elems) > 1 and _is_type_var(schema, type_str):
                low = [n for n, e in tensors if e in (10, 16)]
                hint = (f"insert a Cast so they agree (e.g. Cast {low[0]!r} to FLOAT, or the FLOAT tensor to "
                        f"{elem_type_name(next(e for _, e in tensors if e in (10, 16)))})" if low else
                        "insert a Cast so they agree")
                raise ModelError(
                    f"{ctx.model.label}: node {node.name!r} ({_qualified(node)}) binds its type {type_str} to "
                    f"different types: {listing}. ONNX Runtime and TensorRT reject such a model; {hint}, "
                    f"or re-export it."
                )
            elem = next(iter(elems))
            allowed = _allowed(schema, type_str)
            wanted = f"tensor({_TYPE_NAME.get(elem, '?')})"
            if elem in FLOAT_ELEM_TYPES and wanted not in allowed and any(t in _ELEM_OF_TYPE_STR for t in allowed):
                raise ModelError(
                    f"{ctx.model.label}: node {node.name!r} ({_qualified(node)}, opset {ctx.opset_of(node)}) reads or "
                    f"writes {listing}, but its {type_str} allows only {', '.join(allowed)}. Cast around the node "
                    f"or re-export at an opset that has that type."
                )


_TYPE_NAME = {1: "float", 10: "float16", 11: "double", 16: "bfloat16"}


def _check_quantization(ctx: _GraphContext) -> None:
    """QuantizeLinear/DequantizeLinear scale and zero-point shapes (ONNX inference does not check them).

    Per-tensor: scale is a scalar (or a 1-element vector); per-axis (opset >= 13): a 1-D
    scale as long as the input's dimension ``axis``; block quantization (``block_size``,
    opset >= 21): scale has the input's rank. A zero point has the scale's shape.
    """
    for node in ctx.graph.node:
        if _domain(node) != "" or node.op_type not in ("QuantizeLinear", "DequantizeLinear") or len(node.input) < 2:
            continue
        x, scale = node.input[0], node.input[1]
        zero = node.input[2] if len(node.input) > 2 and node.input[2] else None
        x_shape, s_shape = ctx.shape(x), ctx.shape(scale)
        where = f"{ctx.model.label}: {node.op_type} node {node.name!r}"
        if s_shape is None:
            continue
        attrs = {a.name: a for a in node.attribute}
        block = attrs["block_size"].i if "block_size" in attrs else 0
        axis = attrs["axis"].i if "axis" in attrs else 1
        opset = ctx.opset_of(node)
        if block:
            if x_shape is not None and len(s_shape) != len(x_shape):
                raise ModelError(f"{where}: block quantization (block_size {block}) needs a scale of the input's rank "
                                 f"{len(x_shape)}; scale {scale!r} has shape {list(s_shape)}.")
        elif len(s_shape) > 1 or (opset < 13 and s_shape not in ((), (1,))):
            raise ModelError(
                f"{where}: scale {scale!r} has shape {list(s_shape)}; it must be a scalar (per-tensor)"
                + (" or a 1-D tensor with one value per channel of axis `axis` (per-axis)" if opset >= 13 else
                   f" at opset {opset} (per-axis quantization needs opset >= 13)")
                + ". Fix the scale (or the quantization export).")
        elif len(s_shape) == 1 and s_shape[0] not in (1, None) and x_shape is not None:
            rank = len(x_shape)
            ax = axis + rank if axis < 0 else axis
            if not 0 <= ax < rank:
                raise ModelError(f"{where}: axis {axis} is out of range for input {x!r} of rank {rank}.")
            dim = x_shape[ax]
            if isinstance(dim, int) and dim != s_shape[0]:
                raise ModelError(
                    f"{where}: per-axis scale {scale!r} has {s_shape[0]} values but input {x!r} has {dim} on axis "
                    f"{axis} (shape {list(x_shape)}). One scale per channel of that axis is needed; for per-tensor "
                    f"quantization use a scalar scale.")
        if zero is not None:
            z_shape = ctx.shape(zero)
            if z_shape is not None and tuple(z_shape) != tuple(s_shape) and not (
                    {tuple(z_shape), tuple(s_shape)} <= {(), (1,)}):
                raise ModelError(f"{where}: zero point {zero!r} has shape {list(z_shape)} but scale {scale!r} has "
                                 f"shape {list(s_shape)}; they must match.")


def _source_notes(ctx: _GraphContext, policy: PrecisionPolicy) -> list[str]:
    """What the plan should say about a source model that is not plain FP32."""
    low: dict[str, list[str]] = {}
    names = [*ctx.inputs, *ctx.initializers]
    names += [o for n in ctx.graph.node for o in n.output if o]
    for name in dict.fromkeys(names):
        elem = ctx.elem_types.get(name)
        if elem in (10, 16):
            low.setdefault(PRECISION_OF_ELEM[elem], []).append(name)
    quant = [n.name for n in ctx.graph.node if n.op_type in QUANTIZATION_OPS and _domain(n) == ""]
    notes = []
    if low:
        what = "; ".join(f"{len(v)} tensor(s) in {p} (e.g. {', '.join(map(repr, v[:3]))})" for p, v in sorted(low.items()))
        if policy.as_is:
            notes.append(f"source model is mixed precision: {what}; planned as written (as_is)")
        else:
            notes.append(
                f"source model is mixed precision: {what}. This policy re-types every node, the model's own "
                f"Casts included: realizations start from the model's values (low-precision initializers widen "
                f"exactly) and lower them per the plan, so the model's FP16/BF16 choices are replaced. To test the "
                f"model in its own precision use as_is=True (--trt-as-is); to apply a policy, an FP32 source "
                f"model is the better input.")
    if quant:
        notes.append(f"model has {len(quant)} Q/DQ node(s) (explicit quantization): kept as written by every plan")
    return notes


def _expectations(policy: PrecisionPolicy, decisions: dict[str, NodeDecision], node_io: dict[str, NodeIO],
                  ctx: _GraphContext) -> list[ExpectationFailure]:
    """Nodes ``expect_fp32`` patterns select that compute in low precision (PatternError: a pattern matches nothing).

    Fixed nodes (Q/DQ, shape math) and Cast nodes are not checked: ``expect_fp32=["/norm/*"]``
    must not fail on the island's own exit Cast to FP16.
    """
    if not policy.expect_fp32:
        return []
    rules = tuple(Rule(p, FP32, source="expect_fp32") for p in policy.expect_fp32)
    selected: dict[str, list[str]] = {}
    matched = [False] * len(rules)
    for node in ctx.graph.node:
        for index, rule in enumerate(rules):
            if rule.matches(node):
                matched[index] = True
                selected.setdefault(node.name, []).append(rule.pattern)
    for index, rule in enumerate(rules):
        if not matched[index]:
            raise PatternError(_no_match_message(rule, ctx.model, list(ctx.graph.node)))
    producers = {o: n.name for n in ctx.graph.node for o in n.output if o}
    failures = []
    for node in ctx.graph.node:
        decision = decisions[node.name]
        if node.name not in selected or decision.kind != COMPUTE or decision.precision not in LOW_PRECISIONS:
            continue
        if node.op_type == "Cast" and _domain(node) == "":
            continue  # a boundary, not a computation: an island's exit Cast to FP16 is how a model keeps it FP32
        if policy.as_is:
            fix = _cast_fix(node, node_io[node.name], ctx, producers)
        else:
            fix = (f"decided by rule {decision.rule!r}; keep it FP32 with keep_fp32=[{node.name!r}] "
                   f"(or a later rule '{node.name}=fp32')")
        failures.append(ExpectationFailure(node.name, node.op_type, decision.precision,
                                           selected[node.name][0], fix))
    return failures


def _cast_fix(node, io: NodeIO, ctx: _GraphContext, producers: dict[str, str]) -> str:
    """The Casts that would make an as-written low-precision node compute in FP32."""
    steps = []
    for name, precision in zip(node.input, io.inputs, strict=True):
        if precision not in LOW_PRECISIONS:
            continue
        if name in ctx.constants:
            steps.append(f"store {name!r} as FLOAT (it is {precision})")
        else:
            src = f" (from {producers[name]!r})" if name in producers else " (a graph input)"
            steps.append(f"Cast {name!r}{src} to FLOAT before it")
    low_out = [o for o, p in zip(node.output, io.outputs, strict=True) if p in LOW_PRECISIONS]
    if low_out:
        back = {"fp16": "FLOAT16", "bf16": "BFLOAT16"}[io.outputs[list(node.output).index(low_out[0])]]
        steps.append(f"let it write {', '.join(map(repr, low_out))} as FLOAT, with a Cast back to {back} "
                     f"where low-precision readers need it")
    text = "; ".join(steps) or "its inputs and outputs are FLOAT already"
    return (f"to keep it FP32 the model needs: {text} (i.e. move it inside the FP32 island, e.g. put it on "
            f"the exporter's FP32 block list)")


def _infer_types(model: Model) -> tuple[set[str], dict[str, int], dict[str, Any]]:
    """Run ONNX type inference on a weight-less skeleton of the model.

    Returns the names of all typed tensors, ``{name: elem_type}`` for tensor-typed ones,
    and ``{name: ValueInfoProto}`` of the main graph. Big float initializers are replaced
    by typed graph inputs so neither the 2 GB protobuf limit nor copying weights matters.
    """
    import onnx

    skeleton = _skeleton(model.proto)
    try:
        inferred = onnx.shape_inference.infer_shapes(skeleton, check_type=False, strict_mode=False)
    except Exception as exc:  # inference itself failed, e.g. on malformed attributes
        raise ModelError(f"{model.label}: ONNX shape inference failed: {exc}. Fix or re-export the model.") from exc
    g = inferred.graph
    infos: dict[str, Any] = {}
    for vi in (*g.input, *g.value_info, *g.output):
        infos.setdefault(vi.name, vi)
    for init in model.proto.graph.initializer:
        infos[init.name] = onnx.helper.make_tensor_value_info(init.name, init.data_type, list(init.dims))
    for sparse in model.proto.graph.sparse_initializer:
        infos[sparse.values.name] = onnx.helper.make_tensor_value_info(
            sparse.values.name, sparse.values.data_type, list(sparse.dims))
    elem_types = {}
    known = set()
    for name, vi in infos.items():
        if vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type:
            elem_types[name] = vi.type.tensor_type.elem_type
            known.add(name)
        elif vi.type.WhichOneof("value") is not None and not vi.type.HasField("tensor_type"):
            known.add(name)  # sequences, optionals, maps: typed, not tensors
    return known, elem_types, infos


def _skeleton(proto):
    import onnx

    skel = onnx.ModelProto()
    skel.ir_version = proto.ir_version
    skel.opset_import.extend(proto.opset_import)
    skel.functions.extend(proto.functions)
    g, src = skel.graph, proto.graph
    g.name = src.name
    g.node.extend(src.node)
    g.input.extend(src.input)
    g.output.extend(src.output)
    g.value_info.extend(src.value_info)
    g.sparse_initializer.extend(src.sparse_initializer)
    listed = {i.name for i in src.input}
    for init in src.initializer:
        # Small tensors stay: shape inference reads values of shape-like inputs (Reshape).
        if init.data_type not in FLOAT_ELEM_TYPES or _numel(init.dims) <= 64:
            g.initializer.append(init)
        elif init.name not in listed:
            g.input.append(onnx.helper.make_tensor_value_info(init.name, init.data_type, list(init.dims)))
    return skel


def _numel(dims) -> int:
    n = 1
    for d in dims:
        n *= int(d)
    return n


class _GraphContext:
    """Facts about the main graph every resolution step needs."""

    def __init__(self, model: Model, known: set[str], elem_types: dict[str, int], infos: dict | None = None):
        self.model = model
        self.infos = infos or {}
        self.graph = model.proto.graph
        self.known = known
        self.elem_types = elem_types
        self.inputs = [i.name for i in self.graph.input]
        self.outputs = [o.name for o in self.graph.output]
        self.output_set = set(self.outputs)
        self.initializers = {i.name for i in self.graph.initializer}
        # Tensors that exist before any node runs and are not constants the realization
        # may re-store: graph inputs (an initializer listed as input may be fed by the
        # user) and sparse initializers. Readers get Casts, not copies.
        self.sources = list(dict.fromkeys(
            [*self.inputs, *(s.values.name for s in self.graph.sparse_initializer)]))
        self.opsets = {imp.domain or "": int(imp.version) for imp in model.proto.opset_import}
        if "ai.onnx" in self.opsets:
            self.opsets.setdefault("", self.opsets["ai.onnx"])
        self.schemas = {node.name: self._schema(node) for node in self.graph.node}
        self.constants = self._constant_tensors()
        self.outer_refs = {node.name: _outer_refs(node) for node in self.graph.node if _has_subgraph(node)}

    # schemas ------------------------------------------------------------------------------
    def opset_of(self, node) -> int:
        return self.opsets.get(_domain(node), 1)

    def _schema(self, node):
        import onnx

        domain = _domain(node)
        if domain not in self.opsets:
            return None
        try:
            return onnx.defs.get_schema(node.op_type, self.opsets[domain], domain)
        except onnx.defs.SchemaError:
            return None

    # tensor facts -------------------------------------------------------------------------
    def is_float(self, name: str) -> bool:
        return bool(name) and self.elem_types.get(name) in FLOAT_ELEM_TYPES

    def original(self, name: str) -> str:
        return PRECISION_OF_ELEM[self.elem_types[name]]

    def is_container(self, name: str) -> bool:
        """A sequence, optional or map value (not a tensor)."""
        vi = self.infos.get(name)
        return vi is not None and vi.type.WhichOneof("value") not in (None, "tensor_type", "sparse_tensor_type")

    def shape(self, name: str) -> tuple | None:
        """Inferred shape of a tensor (ints, symbolic dims as None), None when unknown."""
        vi = self.infos.get(name)
        if vi is None or not vi.type.HasField("tensor_type") or not vi.type.tensor_type.HasField("shape"):
            return None
        return tuple(d.dim_value if d.HasField("dim_value") else None for d in vi.type.tensor_type.shape.dim)

    def _constant_tensors(self) -> set[str]:
        """Float tensors whose values are known before running: initializers and float Constants.

        Realizations store them in the type each consumer reads instead of casting at run time.
        An initializer that is also a graph input is a default the user may override: not a constant.
        """
        inputs = set(self.inputs)
        consts = {n for n in self.initializers if self.is_float(n) and n not in inputs}
        for node in self.graph.node:
            if (node.op_type == "Constant" and _domain(node) == "" and node.output
                    and self.is_float(node.output[0]) and node.output[0] not in self.output_set
                    and _constant_attr(node) is not None):
                consts.add(node.output[0])
        return consts

    def check_types(self) -> None:
        """Every float tensor needs a known type; DOUBLE is not supported."""
        for name in (*self.inputs, *self.initializers):
            self._reject_double(name, None)
        for node in self.graph.node:
            for index, out in enumerate(node.output):
                if not out:
                    continue
                if out not in self.known:
                    self._type_from_schema(node, index)
                if out not in self.known and self._may_be_float(node, index):
                    raise ModelError(
                        f"{self.model.label}: cannot infer the element type of tensor {out!r} "
                        f"(output {index} of node {node.name!r}, op {_qualified(node)}); pytest-trt must know "
                        f"every float tensor's type to place Casts. Add the tensor's type to the model's "
                        f"value_info or re-export the model with shape inference."
                    )
                self._reject_double(out, node)

    def _type_from_schema(self, node, index: int) -> None:
        """Type an output ONNX inference left untyped when the schema binds it to a typed
        input's variable (Dropout's ``mask`` at opset <= 9 is ``T``, like ``data``)."""
        import onnx

        schema = self.schemas[node.name]
        if schema is None:
            return
        formal = _formal(schema.outputs, index)
        if formal is None or not _is_type_var(schema, formal.type_str):
            return
        for slot, name in enumerate(node.input):
            f = _formal(schema.inputs, slot)
            if name and f is not None and f.type_str == formal.type_str and name in self.elem_types:
                out = node.output[index]
                self.elem_types[out] = self.elem_types[name]
                self.known.add(out)
                self.infos[out] = onnx.helper.make_tensor_value_info(out, self.elem_types[name], None)
                return

    def _may_be_float(self, node, index: int) -> bool:
        schema = self.schemas[node.name]
        if schema is None:
            return True
        formal = _formal(schema.outputs, index)
        if formal is None:
            return True
        allowed = _allowed(schema, formal.type_str)
        return any(t in _ELEM_OF_TYPE_STR for t in allowed)

    def _reject_double(self, name: str, node) -> None:
        if self.elem_types.get(name) == ELEM_DOUBLE:
            where = f" (output of node {node.name!r}, op {node.op_type})" if node is not None else ""
            raise ModelError(
                f"{self.model.label}: tensor {name!r}{where} is DOUBLE; pytest-trt plans FP32 models "
                f"(TensorRT has no FP64 compute). Export the model in float32."
            )


def _domain(node) -> str:
    return "" if node.domain in ("", "ai.onnx") else node.domain


def _qualified(node) -> str:
    domain = _domain(node)
    return f"{domain}::{node.op_type}" if domain else node.op_type


def _constant_attr(node):
    """The float value attribute of a Constant node (value / value_float / value_floats), else None."""
    for attr in node.attribute:
        if attr.name in ("value", "value_float", "value_floats"):
            return attr
    return None


def _has_subgraph(node) -> bool:
    return any(a.type in (5, 10) for a in node.attribute)  # GRAPH, GRAPHS


def _subgraphs(node):
    for attr in node.attribute:
        if attr.type == 5:
            yield attr.g
        elif attr.type == 10:
            yield from attr.graphs


def _outer_refs(node) -> tuple[str, ...]:
    """Names that ``node``'s subgraphs read from enclosing scopes, in first-use order."""
    refs: dict[str, None] = {}
    for graph in _subgraphs(node):
        for name in _graph_outer_refs(graph):
            refs.setdefault(name)
    return tuple(refs)


def _graph_outer_refs(graph) -> list[str]:
    defined = {i.name for i in graph.input} | {i.name for i in graph.initializer}
    defined |= {i.values.name for i in graph.sparse_initializer}
    refs: dict[str, None] = {}
    for node in graph.node:
        for name in node.input:
            if name and name not in defined:
                refs.setdefault(name)
        for sub in _subgraphs(node):
            for name in _graph_outer_refs(sub):
                if name not in defined:
                    refs.setdefault(name)
        defined.update(o for o in node.output if o)
    for out in graph.output:
        if out.name not in defined:
            refs.setdefault(out.name)
    return list(refs)


def _formal(params, index: int):
    """The formal parameter of slot ``index`` (the last one repeats when variadic)."""
    import onnx

    if index < len(params):
        return params[index]
    if params and params[-1].option == onnx.defs.OpSchema.FormalParameterOption.Variadic:
        return params[-1]
    return None


def _allowed(schema, type_str: str) -> tuple[str, ...]:
    for constraint in schema.type_constraints:
        if constraint.type_param_str == type_str:
            return tuple(constraint.allowed_type_strs)
    return (type_str,)  # a concrete type such as tensor(float)


def _is_type_var(schema, type_str: str) -> bool:
    return any(c.type_param_str == type_str for c in schema.type_constraints)


def _accepts_anything(schema, type_str: str) -> bool:
    # A type variable that also allows bool/string (Shape's T, Cast's T1) places no
    # constraint worth a Cast: the tensor is read as it is stored.
    allowed = _allowed(schema, type_str)
    return "tensor(bool)" in allowed or "tensor(string)" in allowed


# --------------------------------------------------------------------------------------
# rules -> decisions
# --------------------------------------------------------------------------------------
def _match_rules(rules: tuple[Rule, ...], nodes, model: Model) -> dict[str, Rule]:
    """``{node_name: deciding rule}`` (the last matching rule); every rule must match a node."""
    deciding: dict[str, Rule] = {}
    matched = [False] * len(rules)
    for node in nodes:
        for index, rule in enumerate(rules):
            if rule.matches(node):
                deciding[node.name] = rule
                matched[index] = True
    for index, rule in enumerate(rules):
        if not matched[index]:
            raise PatternError(_no_match_message(rule, model, list(nodes)))
    return deciding


def _no_match_message(rule: Rule, model: Model, nodes: list) -> str:
    source = f" (from {rule.source})" if rule.source not in ("api", "") else ""
    head = f"precision pattern {rule.pattern!r}{source} matches no node of {model.label} ({len(nodes)} nodes)."
    hints: list[str] = []
    op_type = rule.op_type
    if op_type is not None:
        types = sorted({n.op_type for n in nodes})
        close = _closest(op_type, types)
        lower = [t for t in types if t.lower() == op_type.lower()]
        hints.append(f"Closest op types in the model: {', '.join(close) or '(none)'}.")
        if lower:
            hints.append(f"Op types are case-sensitive: did you mean 'op:{lower[0]}'?")
        fix = "Write the op type exactly as in the model, or remove the rule."
    else:
        names = [n.name for n in nodes]
        close = _closest_names(rule.pattern, names)
        hints.append(f"Closest node names: {', '.join(map(repr, close)) or '(none)'}.")
        if not rule.pattern.startswith("*"):
            prefixed = [n for n in names if fnmatch.fnmatchcase(n, "*" + rule.pattern)]
            if prefixed:
                hints.append(f"'*{rule.pattern}' would match {len(prefixed)} node(s), e.g. {prefixed[0]!r}: "
                             f"a pattern must match the WHOLE node name.")
        folded = [n for n in names if fnmatch.fnmatch(n.lower(), rule.pattern.lower())]
        if folded:
            hints.append(f"Ignoring case it would match {len(folded)} node(s), e.g. {folded[0]!r}: "
                         f"patterns are case-sensitive.")
        fix = ("Patterns are shell globs over full node names ('*/LayerNorm/*'); fix or remove the "
               "pattern (`pytest-trt plan MODEL` lists the node names).")
    return " ".join([head, *hints, fix])


def _closest(word: str, candidates: list[str], n: int = 3) -> list[str]:
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


def _closest_names(pattern: str, names: list[str], n: int = 3) -> list[str]:
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


def _fixed_reason(node, ctx: _GraphContext) -> str | None:
    """Why a node is fixed (keeps its types as written), or None for a compute node."""
    op, schema = node.op_type, ctx.schemas[node.name]
    domain = _domain(node)
    if _has_subgraph(node):
        return "control flow is kept as written (fp32)"
    if domain == "" and op in SOURCE_OPS:
        return f"{op} is a source node"
    if domain == "" and op in QUANTIZATION_OPS:
        return "quantization nodes are kept as written"
    if schema is None:
        return f"no ONNX schema for {_qualified(node)} at opset {ctx.opset_of(node)}; kept as written"
    if domain != "":
        # ai.onnx.ml (TreeEnsemble's float attributes hold thresholds and leaf values in FP32),
        # training ops: their float math is not re-typed, readers get Casts
        return f"ops of domain {domain} are kept as written (fp32 by design)"
    float_outputs = [i for i, o in enumerate(node.output) if ctx.is_float(o)]
    if not float_outputs:
        return "no float output"
    primary = _primary_type_var(node, schema, ctx)
    if primary is None:
        return f"{op} defines its float output types"
    if op != "Cast" and primary not in {f.type_str for f in schema.inputs}:
        # HannWindow/MelWeightMatrix (output_datatype), BitCast (to: a bit reinterpretation),
        # SequenceAt/ConcatFromSequence/OptionalGetElement (the container's element type):
        # ONNX infers the output type from an attribute or a container, so lowering the
        # output alone would declare a type the node does not produce. Readers get Casts.
        return f"{op} takes its output type from {_output_type_source(schema)}; kept as written"
    return None


def _output_type_source(schema) -> str:
    names = {a for a in schema.attributes}
    for attr in ("output_datatype", "to", "dtype"):
        if attr in names:
            return f"attribute {attr!r}"
    if any("seq(" in t or "optional(" in t for c in schema.type_constraints for t in c.allowed_type_strs):
        return "its sequence/optional input's element type"
    return "its attributes (not its float inputs)"


def _primary_type_var(node, schema, ctx: _GraphContext) -> str | None:
    """Type variable of the first float output that is typed by a variable (the node's 'compute' type)."""
    for index, out in enumerate(node.output):
        if not ctx.is_float(out):
            continue
        formal = _formal(schema.outputs, index)
        if formal is not None and _is_type_var(schema, formal.type_str):
            return formal.type_str
    return None


def _decide(node, rule: Rule | None, policy: PrecisionPolicy, ctx: _GraphContext) -> NodeDecision:
    reason = _fixed_reason(node, ctx)
    if reason is not None:
        text = f"fixed: {reason}"
        if rule is not None and rule.precision in LOW_PRECISIONS:
            if _has_subgraph(node):
                raise ModelError(
                    f"rule {rule.text()!r} asks for {rule.precision} on node {node.name!r} ({node.op_type}), "
                    f"but control flow is kept as written; remove the rule or keep it fp32 (add a later "
                    f"rule '{node.name}=fp32')"
                )
            text += f" (ignored rule {rule.text()})"
        return NodeDecision(node.name, node.op_type, None, text, FIXED)
    if rule is None:
        return NodeDecision(node.name, node.op_type, policy.default, "default", COMPUTE)
    return NodeDecision(node.name, node.op_type, rule.precision, rule.text(), COMPUTE)


def _check_supported(decisions: dict[str, NodeDecision], ctx: _GraphContext) -> None:
    """Every low-precision compute node's op must allow that type at the model's opset.

    A node lowered only by the policy's *default* falls back to fp32, and the plan says
    so in its rule ("default bf16 -> fp32: MaxPool has no bfloat16 form at opset 17"):
    ``--trt-bf16`` on a model with such ops still tests everything else. A node an
    explicit rule lowered is an error (the user asked for something that cannot exist).
    """
    bad: dict[str, str] = {}
    precision = None
    for node in ctx.graph.node:
        decision = decisions[node.name]
        if decision.precision not in LOW_PRECISIONS:
            continue
        schema = ctx.schemas[node.name]
        gap = precision_gap(node, schema, ctx, decision.precision)
        if gap is not None:
            if decision.rule == "default":
                decisions[node.name] = NodeDecision(
                    node.name, node.op_type, FP32,
                    f"default {decision.precision} -> fp32: {gap}", COMPUTE,
                )
                continue
            bad[node.name] = node.op_type
            precision = decision.precision
    if not bad:
        return
    by_op: dict[str, list[str]] = {}
    for name, op in bad.items():
        by_op.setdefault(op, []).append(name)
    lines = []
    for op, names in sorted(by_op.items()):
        node = next(n for n in ctx.graph.node if n.name == names[0])
        shown = ", ".join(repr(n) for n in names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        lines.append(f"{op} (opset {ctx.opset_of(node)}): {shown}")
    keep = ", ".join(f"'op:{op}'" for op in sorted(by_op))
    raise UnsupportedPrecisionError(
        f"{ctx.model.label}: {len(bad)} node(s) a rule asked to run in {precision} cannot: their ONNX op has no "
        f"{precision} type at the model's opset: " + "; ".join(lines)
        + f". Keep them fp32 with keep_fp32=[{keep}] (or export at a newer opset).",
        precision=precision,
        nodes=bad,
    )


#: Ops whose schema allows FP16/BF16 but whose ONNX function body does not type-check in
#: them (a FLOAT Constant inside): ``check_model(full_check=True)`` rejects the lowered node.
FUNCTION_BODY_GAPS = {
    "MeanVarianceNormalization": "its ONNX function body adds a FLOAT Constant (epsilon) to the input, "
                                 "so ONNX type inference rejects it in {precision}",
}


#: Inputs read through a type variable of their own that are operands of the node's
#: arithmetic (not parameters such as Resize's roi or Dropout's ratio): where the variable
#: lacks the planned type the input stays FLOAT and TensorRT runs the layer in FP32.
OPERAND_INPUTS = {"Pow": ("Y",)}


def precision_gap(node, schema, ctx: _GraphContext, precision: str) -> str | None:
    """Why ``node`` cannot compute in ``precision`` at the model's opset, or None.

    Three kinds (the schema scan ``tests/onnx_corpus/schema_gaps.py`` lists every one):
    the node's own type has no such form (MaxPool at opset < 22 in bf16); an operand read
    through a variable of its own that lacks it (:data:`OPERAND_INPUTS`: Pow's exponent
    ``T1`` at opset 13-14 has no bfloat16, so the realization would leave it FLOAT and
    TensorRT then runs the layer in FP32); or the op's function body does not type-check
    in it (:data:`FUNCTION_BODY_GAPS`: MVN).
    """
    wanted = _TYPE_STR_OF_PRECISION[precision]
    opset = ctx.opset_of(node)
    primary = _primary_type_var(node, schema, ctx)
    if wanted not in _allowed(schema, primary):
        return f"{node.op_type} has no {precision} form at opset {opset}"
    output_vars = {f.type_str for f in schema.outputs}
    for slot, name in enumerate(node.input):
        formal = _formal(schema.inputs, slot)
        if not ctx.is_float(name) or formal is None or not _is_type_var(schema, formal.type_str):
            continue
        var = formal.type_str
        if var == primary or var in output_vars or _accepts_anything(schema, var):
            continue
        if formal.name not in OPERAND_INPUTS.get(node.op_type, ()):
            continue  # a parameter (Resize roi): read as FLOAT, the node keeps its precision
        allowed = _allowed(schema, var)
        if wanted not in allowed and any(t in _ELEM_OF_TYPE_STR for t in allowed):
            return (f"{node.op_type}'s input {formal.name!r} ({var}) has no {precision} type at opset {opset}, "
                    f"so it would stay FLOAT and TensorRT would run the layer in fp32")
    if node.op_type in FUNCTION_BODY_GAPS and _domain(node) == "":
        return f"{node.op_type}: " + FUNCTION_BODY_GAPS[node.op_type].format(precision=precision)
    return None


# --------------------------------------------------------------------------------------
# decisions -> what each node reads and writes
# --------------------------------------------------------------------------------------
def _type_nodes(ctx: _GraphContext, decisions: dict[str, NodeDecision]) -> dict[str, NodeIO]:
    stored: dict[str, str] = {n: ctx.original(n) for n in ctx.sources if ctx.is_float(n)}
    node_io: dict[str, NodeIO] = {}

    def current(name: str) -> str:
        # Constants are stored in whatever their reader needs; "as stored" means as written.
        return stored.get(name) or ctx.original(name)

    for node in ctx.graph.node:
        decision = decisions[node.name]
        schema = ctx.schemas[node.name]
        if decision.kind == COMPUTE:
            io = _compute_io(node, decision.precision, schema, ctx, current)
        else:
            io = _fixed_io(node, schema, ctx, current)
        for out, precision in zip(node.output, io.outputs, strict=True):
            if out and precision is not None:
                stored[out] = precision
        node_io[node.name] = io
    return node_io


def _compute_io(node, p: str, schema, ctx: _GraphContext, current) -> NodeIO:
    primary = _primary_type_var(node, schema, ctx)
    output_formals = [_formal(schema.outputs, i) for i in range(len(node.output))]
    output_vars = {f.type_str for f, o in zip(output_formals, node.output, strict=True) if o and f is not None}
    input_vars = {_formal(schema.inputs, i).type_str for i, n in enumerate(node.input)
                  if n and _formal(schema.inputs, i) is not None}
    p_type = _TYPE_STR_OF_PRECISION[p]
    outputs: list[str | None] = []
    inferred_slots = []
    for index, out in enumerate(node.output):
        formal = output_formals[index]
        if not ctx.is_float(out):
            outputs.append(None)
        elif formal is not None and formal.type_str == primary:
            outputs.append(p)
        elif (formal is not None and _is_type_var(schema, formal.type_str) and formal.type_str in input_vars
              and p_type in _allowed(schema, formal.type_str)):
            # a second value path through the node (Attention's V -> present_value, a KV
            # cache): one precision per path, the node's
            outputs.append(p)
        elif formal is not None and _is_type_var(schema, formal.type_str):
            # output-only variable: ONNX infers it (LayerNormalization's Mean from stash_type,
            # LinearAttention's present_state from the query): decided below from inference
            outputs.append(ctx.original(out))
            inferred_slots.append(index)
        else:
            outputs.append(ctx.original(out))

    groups = _input_groups(node, schema, ctx)
    inputs: list[str | None] = [None] * len(node.input)
    for type_str, slots in groups.items():
        names = [node.input[i] for i in slots]
        if not _is_type_var(schema, type_str):
            wanted = [PRECISION_OF_ELEM.get(_ELEM_OF_TYPE_STR.get(type_str, 0))] * len(slots)
        elif type_str == primary:
            wanted = [p] * len(slots)
        elif type_str in output_vars:
            # shared with a non-primary output: the same path as that output (see above)
            wanted = [p if p_type in _allowed(schema, type_str) else ctx.original(n) for n in names]
        elif _accepts_anything(schema, type_str):
            allowed = _allowed(schema, type_str)
            wanted = [current(n) if _TYPE_STR_OF_PRECISION[current(n)] in allowed else ctx.original(n)
                      for n in names]
        elif _TYPE_STR_OF_PRECISION[p] in _allowed(schema, type_str):
            wanted = [p] * len(slots)  # input-only variable, e.g. Pow's exponent
        else:
            wanted = _agreeing(names, schema, type_str, ctx, current)
        for slot, precision in zip(slots, wanted, strict=True):
            inputs[slot] = precision if precision is not None else ctx.original(node.input[slot])
    if inferred_slots:
        inferred = _infer_node(node, schema, ctx, inputs)
        for index in inferred_slots:
            elem = inferred.get(node.output[index])
            if elem in PRECISION_OF_ELEM:
                outputs[index] = PRECISION_OF_ELEM[elem]
    return NodeIO(tuple(inputs), tuple(outputs))


def _infer_node(node, schema, ctx: _GraphContext, inputs) -> dict[str, int]:
    """ONNX's type inference of one node with its inputs typed as planned: ``{output: elem_type}``."""
    import onnx

    types = {}
    for name, precision in zip(node.input, inputs, strict=True):
        if not name:
            continue
        vi = ctx.infos.get(name)
        if precision is not None:
            types[name] = onnx.helper.make_tensor_type_proto(ELEM_OF_PRECISION[precision], None)
        elif vi is not None:
            types[name] = vi.type
        else:
            return {}
    try:
        out = onnx.shape_inference.infer_node_outputs(
            schema, node, types, opset_imports=list(ctx.model.proto.opset_import))
    except Exception:  # inference needs what it cannot have here (e.g. constant values): as written
        return {}
    return {name: t.tensor_type.elem_type for name, t in out.items() if t.HasField("tensor_type")}


def _fixed_io(node, schema, ctx: _GraphContext, current) -> NodeIO:
    outputs = tuple(ctx.original(o) if ctx.is_float(o) else None for o in node.output)
    inputs: list[str | None] = [None] * len(node.input)
    # A node that builds or reads a sequence/optional stores tensors in a container whose
    # element type the model declares: read as written, so the container keeps its type.
    as_written = (schema is None or _has_subgraph(node) or node.op_type in QUANTIZATION_OPS
                  or _domain(node) != "" or any(ctx.is_container(n) for n in (*node.input, *node.output) if n))
    if as_written:
        for slot, name in enumerate(node.input):
            if ctx.is_float(name):
                inputs[slot] = ctx.original(name)
    else:
        for type_str, slots in _input_groups(node, schema, ctx).items():
            names = [node.input[i] for i in slots]
            if _is_type_var(schema, type_str):
                wanted = _agreeing(names, schema, type_str, ctx, current)
            else:
                wanted = [PRECISION_OF_ELEM.get(_ELEM_OF_TYPE_STR.get(type_str, 0))] * len(slots)
            for slot, precision in zip(slots, wanted, strict=True):
                inputs[slot] = precision if precision is not None else ctx.original(node.input[slot])
    implicit = tuple((name, ctx.original(name)) for name in ctx.outer_refs.get(node.name, ())
                     if ctx.is_float(name))
    return NodeIO(tuple(inputs), outputs, implicit)


def _input_groups(node, schema, ctx: _GraphContext) -> dict[str, list[int]]:
    """Float input slots grouped by their formal type (a variable or a concrete type)."""
    groups: dict[str, list[int]] = {}
    for slot, name in enumerate(node.input):
        if not ctx.is_float(name):
            continue
        formal = _formal(schema.inputs, slot)
        type_str = formal.type_str if formal is not None else f"<slot {slot}>"
        groups.setdefault(type_str, []).append(slot)
    return groups


def _agreeing(names, schema, type_str, ctx: _GraphContext, current) -> list[str]:
    """Read as stored when the op allows the stored types and they agree, else as written.

    Constants have no stored type of their own (they are stored as their readers need),
    so they follow the other inputs: Greater(fp16 tensor, 0.0) compares in fp16.
    """
    stored = {current(n) for n in names if n not in ctx.constants}
    if len(stored) == 1:
        (precision,) = stored
        if _TYPE_STR_OF_PRECISION[precision] in _allowed(schema, type_str):
            return [precision] * len(names)
    return [ctx.original(n) for n in names]


def _storage(ctx: _GraphContext, node_io: dict[str, NodeIO]):
    """Stored precision of every float tensor, and the Casts a realization inserts."""
    stored: dict[str, str] = {n: ctx.original(n) for n in ctx.sources if ctx.is_float(n)}
    reads: dict[str, list[str]] = {}  # constant tensor -> precisions its readers need
    boundaries: dict[tuple[str, str], str] = {}

    def read(name: str, precision: str) -> None:
        if name in ctx.constants:
            reads.setdefault(name, []).append(precision)
        elif stored.get(name, precision) != precision:
            boundaries.setdefault((name, precision), stored[name])

    for node in ctx.graph.node:
        io = node_io[node.name]
        for name, precision in zip(node.input, io.inputs, strict=True):
            if precision is not None:
                read(name, precision)
        for name, precision in io.implicit:
            read(name, precision)
        for out, precision in zip(node.output, io.outputs, strict=True):
            if out and precision is not None:
                stored[out] = precision
                if out in ctx.output_set and precision != ctx.original(out):
                    boundaries.setdefault((out, ctx.original(out)), precision)

    tensor_precision: dict[str, str] = {}
    for name, precision in stored.items():
        tensor_precision[name] = ctx.original(name) if name in ctx.output_set else precision
    for name in ctx.constants:
        tensor_precision[name] = _constant_storage(ctx.original(name), reads.get(name, ()),
                                                  name in ctx.output_set)
    return tensor_precision, [(t, src, dst) for (t, dst), src in boundaries.items()]


def _constant_storage(original: str, reads, pinned: bool = False) -> str:
    """Precision a constant tensor's own name is stored in: as written if anyone reads that
    (or nobody reads it, or it is a graph output), else the one precision its readers need."""
    wanted = set(reads)
    if pinned or not wanted or original in wanted:
        return original
    return sorted(wanted)[0]


__all__ = [
    "AS_WRITTEN",
    "COMPUTE",
    "ExpectationFailure",
    "FIXED",
    "NodeDecision",
    "NodeIO",
    "PrecisionPlan",
    "UnsupportedPrecisionError",
    "check_as_written",
    "resolve_as_is",
    "resolve_plan",
]
