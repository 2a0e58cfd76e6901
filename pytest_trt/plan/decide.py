"""Decisions: which nodes compute, in which precision, and which precision an op can take.

The step of resolution between matching rules and typing the nodes. :func:`fixed_reason`
says why a node keeps its types as written (control flow, sources, quantization, ops
without a schema, ops whose attribute picks their output type); :func:`decide` turns the
deciding rule (or the policy's default) into a :class:`~pytest_trt.plan.NodeDecision`;
:func:`check_supported` then lets a low-precision decision stand only where the op has
that precision at the model's opset (:func:`precision_gap`).
"""

from __future__ import annotations

from ..core.dtypes import FP32, LOW_PRECISIONS
from ..errors import ModelError
from ..model.onnx_typing import (
    ELEM_OF_TYPE_STR,
    TYPE_STR_OF_PRECISION,
    GraphContext,
    accepts_anything,
    allowed_types,
    domain_of,
    formal,
    has_subgraph,
    is_type_var,
    primary_type_var,
    qualified,
)
from .records import (
    COMPUTE,
    FIXED,
    QUANTIZATION_OPS,
    SOURCE_OPS,
    NodeDecision,
    PolicyView,
    UnsupportedPrecisionError,
)
from .rules import Rule

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


def fixed_reason(node, ctx: GraphContext) -> str | None:
    """Why a node is fixed (keeps its types as written), or None for a compute node."""
    op, schema = node.op_type, ctx.schemas[node.name]
    domain = domain_of(node)
    if has_subgraph(node):
        return "control flow is kept as written (fp32)"
    if domain == "" and op in SOURCE_OPS:
        return f"{op} is a source node"
    if domain == "" and op in QUANTIZATION_OPS:
        return "quantization nodes are kept as written"
    if schema is None:
        return f"no ONNX schema for {qualified(node)} at opset {ctx.opset_of(node)}; kept as written"
    if domain != "":
        # ai.onnx.ml (TreeEnsemble's float attributes hold thresholds and leaf values in FP32),
        # training ops: their float math is not re-typed, readers get Casts
        return f"ops of domain {domain} are kept as written (fp32 by design)"
    float_outputs = [i for i, o in enumerate(node.output) if ctx.is_float(o)]
    if not float_outputs:
        return "no float output"
    primary = primary_type_var(node, schema, ctx)
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


def written_precision(node, ctx: GraphContext) -> str:
    """The precision a node computes in as written: the type of its primary float output."""
    schema = ctx.schemas[node.name]
    primary = primary_type_var(node, schema, ctx)
    for index, out in enumerate(node.output):
        param = formal(schema.outputs, index)
        if ctx.is_float(out) and param is not None and param.type_str == primary:
            return ctx.original(out)
    return next(ctx.original(o) for o in node.output if ctx.is_float(o))


def decide(node, rule: Rule | None, policy: PolicyView, ctx: GraphContext) -> NodeDecision:
    """The decision for one node: fixed (with any rule it ignores), the deciding rule, or the default."""
    reason = fixed_reason(node, ctx)
    if reason is not None:
        text = f"fixed: {reason}"
        if rule is not None and rule.precision in LOW_PRECISIONS:
            if has_subgraph(node):
                shown = ctx.model.names.canonical(node.name)
                raise ModelError(
                    f"rule {rule.text()!r} asks for {rule.precision} on node {shown!r} ({node.op_type}), "
                    f"but control flow is kept as written; remove the rule or keep it fp32 (add a later "
                    f"rule '{shown}=fp32')"
                )
            text += f" (ignored rule {rule.text()})"
        return NodeDecision(node.name, node.op_type, None, text, FIXED)
    if rule is None:
        return NodeDecision(node.name, node.op_type, policy.default, "default", COMPUTE)
    return NodeDecision(node.name, node.op_type, rule.precision, rule.text(), COMPUTE)


def check_supported(decisions: dict[str, NodeDecision], ctx: GraphContext) -> None:
    """Every low-precision compute node's op must allow that type at the model's opset.

    A node lowered only by the policy's *default* falls back to fp32, and the plan says
    so in its rule ("default bf16 -> fp32: MaxPool has no bfloat16 form at opset 17"):
    ``--trt-bf16`` on a model with such ops still tests everything else. A node an
    explicit rule lowered is an error (the user asked for something that cannot exist).
    """
    bad: dict[str, str] = {}
    precision = FP32
    for node in ctx.graph.node:
        decision = decisions[node.name]
        if decision.precision not in LOW_PRECISIONS or decision.precision is None:
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
    if bad:
        raise _unsupported(bad, precision, ctx)


def _unsupported(bad: dict[str, str], precision: str, ctx: GraphContext) -> UnsupportedPrecisionError:
    by_op: dict[str, list[str]] = {}
    for name, op in bad.items():
        by_op.setdefault(op, []).append(name)
    lines = []
    for op, names in sorted(by_op.items()):
        node = next(n for n in ctx.graph.node if n.name == names[0])
        shown = ", ".join(repr(ctx.model.names.canonical(n)) for n in names[:3]) + (
            f" and {len(names) - 3} more" if len(names) > 3 else "")
        lines.append(f"{op} (opset {ctx.opset_of(node)}): {shown}")
    keep = ", ".join(f"'op:{op}'" for op in sorted(by_op))
    return UnsupportedPrecisionError(
        f"{ctx.model.label}: {len(bad)} node(s) a rule asked to run in {precision} cannot: their ONNX op has no "
        f"{precision} type at the model's opset: " + "; ".join(lines)
        + f". Keep them fp32 with keep_fp32=[{keep}] (or export at a newer opset).",
        precision=precision,
        nodes=bad,
    )


def precision_gap(node, schema, ctx: GraphContext, precision: str) -> str | None:
    """Why ``node`` cannot compute in ``precision`` at the model's opset, or None.

    Three kinds (the schema scan ``tests/onnx_corpus/schema_gaps.py`` lists every one):
    the node's own type has no such form (MaxPool at opset < 22 in bf16); an operand read
    through a variable of its own that lacks it (:data:`OPERAND_INPUTS`: Pow's exponent
    ``T1`` at opset 13-14 has no bfloat16, so the realization would leave it FLOAT and
    TensorRT then runs the layer in FP32); or the op's function body does not type-check
    in it (:data:`FUNCTION_BODY_GAPS`: MVN).
    """
    wanted = TYPE_STR_OF_PRECISION[precision]
    opset = ctx.opset_of(node)
    primary = primary_type_var(node, schema, ctx)
    if wanted not in allowed_types(schema, primary):
        return f"{node.op_type} has no {precision} form at opset {opset}"
    output_vars = {f.type_str for f in schema.outputs}
    for slot, name in enumerate(node.input):
        param = formal(schema.inputs, slot)
        if not ctx.is_float(name) or param is None or not is_type_var(schema, param.type_str):
            continue
        var = param.type_str
        if var == primary or var in output_vars or accepts_anything(schema, var):
            continue
        if param.name not in OPERAND_INPUTS.get(node.op_type, ()):
            continue  # a parameter (Resize roi): read as FLOAT, the node keeps its precision
        allowed = allowed_types(schema, var)
        if wanted not in allowed and any(t in ELEM_OF_TYPE_STR for t in allowed):
            return (f"{node.op_type}'s input {param.name!r} ({var}) has no {precision} type at opset {opset}, "
                    f"so it would stay FLOAT and TensorRT would run the layer in fp32")
    if node.op_type in FUNCTION_BODY_GAPS and domain_of(node) == "":
        return f"{node.op_type}: " + FUNCTION_BODY_GAPS[node.op_type].format(precision=precision)
    return None


__all__ = [
    "FUNCTION_BODY_GAPS",
    "OPERAND_INPUTS",
    "check_supported",
    "decide",
    "fixed_reason",
    "precision_gap",
    "written_precision",
]
