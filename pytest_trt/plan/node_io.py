"""Typing the nodes: from decisions to what each node reads and writes, and where Casts go.

The last step of resolution, the typing rules of :mod:`pytest_trt.plan` applied node by
node in graph order: :func:`type_nodes` gives every node a
:class:`~pytest_trt.plan.NodeIO` (a compute node reads and writes its primary type
variable in its precision; a fixed node reads what it is given where the op allows it);
:func:`storage` derives from them the precision every float tensor is stored in and the
``(tensor, from, to)`` Casts a realization inserts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import onnx

from ..core.dtypes import ELEM_OF_PRECISION, PRECISION_OF_ELEM
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
)
from .records import COMPUTE, QUANTIZATION_OPS, NodeDecision, NodeIO

#: tensor name -> the precision it is stored in so far (in graph order)
Current = Callable[[str], str]


def type_nodes(ctx: GraphContext, decisions: dict[str, NodeDecision]) -> dict[str, NodeIO]:
    """``{node name: NodeIO}``: the precision each node reads each input and writes each output in."""
    stored: dict[str, str] = {n: ctx.original(n) for n in ctx.sources if ctx.is_float(n)}
    node_io: dict[str, NodeIO] = {}

    def current(name: str) -> str:
        # Constants are stored in whatever their reader needs; "as stored" means as written.
        return stored.get(name) or ctx.original(name)

    for node in ctx.graph.node:
        decision = decisions[node.name]
        schema = ctx.schemas[node.name]
        if decision.kind == COMPUTE and decision.precision is not None:
            io = compute_io(node, decision.precision, schema, ctx, current)
        else:
            io = fixed_io(node, schema, ctx, current)
        for out, precision in zip(node.output, io.outputs, strict=True):
            if out and precision is not None:
                stored[out] = precision
        node_io[node.name] = io
    return node_io


# --------------------------------------------------------------------------------------
# compute nodes
# --------------------------------------------------------------------------------------
def compute_io(node, p: str, schema, ctx: GraphContext, current: Current) -> NodeIO:
    """What a compute node of precision ``p`` reads and writes."""
    primary = primary_type_var(node, schema, ctx)
    outputs, inferred_slots = _compute_outputs(node, p, schema, ctx, primary)
    output_formals = [formal(schema.outputs, i) for i in range(len(node.output))]
    output_vars = {f.type_str for f, o in zip(output_formals, node.output, strict=True) if o and f is not None}
    inputs: list[str | None] = [None] * len(node.input)
    for type_str, slots in input_groups(node, schema, ctx).items():
        names = [node.input[i] for i in slots]
        wanted = _compute_group(names, type_str, p, primary, output_vars, schema, ctx, current)
        for slot, precision in zip(slots, wanted, strict=True):
            inputs[slot] = precision if precision is not None else ctx.original(node.input[slot])
    if inferred_slots:
        inferred = _infer_node(node, schema, ctx, inputs)
        for index in inferred_slots:
            elem = inferred.get(node.output[index])
            if elem is not None and elem in PRECISION_OF_ELEM:
                outputs[index] = PRECISION_OF_ELEM[elem]
    return NodeIO(tuple(inputs), tuple(outputs))


def _compute_outputs(node, p: str, schema, ctx: GraphContext,
                     primary: str | None) -> tuple[list[str | None], list[int]]:
    """The output precisions, and the slots whose type ONNX inference decides (output-only variables)."""
    input_vars = {f.type_str for f in (formal(schema.inputs, i) for i, n in enumerate(node.input) if n)
                  if f is not None}
    p_type = TYPE_STR_OF_PRECISION[p]
    outputs: list[str | None] = []
    inferred_slots = []
    for index, out in enumerate(node.output):
        param = formal(schema.outputs, index)
        if not ctx.is_float(out):
            outputs.append(None)
        elif param is not None and param.type_str == primary:
            outputs.append(p)
        elif (param is not None and is_type_var(schema, param.type_str) and param.type_str in input_vars
              and p_type in allowed_types(schema, param.type_str)):
            # a second value path through the node (Attention's V -> present_value, a KV
            # cache): one precision per path, the node's
            outputs.append(p)
        elif param is not None and is_type_var(schema, param.type_str):
            # output-only variable: ONNX infers it (LayerNormalization's Mean from stash_type,
            # LinearAttention's present_state from the query): decided below from inference
            outputs.append(ctx.original(out))
            inferred_slots.append(index)
        else:
            outputs.append(ctx.original(out))
    return outputs, inferred_slots


def _compute_group(names: list[str], type_str: str, p: str, primary: str | None, output_vars: set[str],
                   schema, ctx: GraphContext, current: Current) -> list[str | None]:
    """The precisions a compute node of precision ``p`` reads the inputs of one formal type in."""
    p_type = TYPE_STR_OF_PRECISION[p]
    if not is_type_var(schema, type_str):
        return [PRECISION_OF_ELEM.get(ELEM_OF_TYPE_STR.get(type_str, 0))] * len(names)
    if type_str == primary:
        return [p] * len(names)
    if type_str in output_vars:
        # shared with a non-primary output: the same path as that output (see above)
        return [p if p_type in allowed_types(schema, type_str) else ctx.original(n) for n in names]
    if accepts_anything(schema, type_str):
        allowed = allowed_types(schema, type_str)
        return [current(n) if TYPE_STR_OF_PRECISION[current(n)] in allowed else ctx.original(n) for n in names]
    if p_type in allowed_types(schema, type_str):
        return [p] * len(names)  # input-only variable, e.g. Pow's exponent
    return list(_agreeing(names, schema, type_str, ctx, current))


def _infer_node(node, schema, ctx: GraphContext, inputs: list[str | None]) -> dict[str, int]:
    """ONNX's type inference of one node with its inputs typed as planned: ``{output: elem_type}``."""
    types: dict[str, Any] = {}
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


# --------------------------------------------------------------------------------------
# fixed nodes
# --------------------------------------------------------------------------------------
def fixed_io(node, schema, ctx: GraphContext, current: Current) -> NodeIO:
    """What a fixed node reads and writes: its outputs as written, its inputs as stored where the op allows."""
    outputs = tuple(ctx.original(o) if ctx.is_float(o) else None for o in node.output)
    inputs: list[str | None] = [None] * len(node.input)
    # A node that builds or reads a sequence/optional stores tensors in a container whose
    # element type the model declares: read as written, so the container keeps its type.
    as_written = (schema is None or has_subgraph(node) or node.op_type in QUANTIZATION_OPS
                  or domain_of(node) != "" or any(ctx.is_container(n) for n in (*node.input, *node.output) if n))
    if as_written:
        for slot, name in enumerate(node.input):
            if ctx.is_float(name):
                inputs[slot] = ctx.original(name)
    else:
        for type_str, slots in input_groups(node, schema, ctx).items():
            names = [node.input[i] for i in slots]
            wanted: list[str | None]
            if is_type_var(schema, type_str):
                wanted = list(_agreeing(names, schema, type_str, ctx, current))
            else:
                wanted = [PRECISION_OF_ELEM.get(ELEM_OF_TYPE_STR.get(type_str, 0))] * len(slots)
            for slot, precision in zip(slots, wanted, strict=True):
                inputs[slot] = precision if precision is not None else ctx.original(node.input[slot])
    implicit = tuple((name, ctx.original(name)) for name in ctx.outer_refs.get(node.name, ())
                     if ctx.is_float(name))
    return NodeIO(tuple(inputs), outputs, implicit)


def input_groups(node, schema, ctx: GraphContext) -> dict[str, list[int]]:
    """Float input slots grouped by their formal type (a variable or a concrete type)."""
    groups: dict[str, list[int]] = {}
    for slot, name in enumerate(node.input):
        if not ctx.is_float(name):
            continue
        param = formal(schema.inputs, slot)
        type_str = param.type_str if param is not None else f"<slot {slot}>"
        groups.setdefault(type_str, []).append(slot)
    return groups


def _agreeing(names: list[str], schema, type_str: str, ctx: GraphContext, current: Current) -> list[str]:
    """Read as stored when the op allows the stored types and they agree, else as written.

    Constants have no stored type of their own (they are stored as their readers need),
    so they follow the other inputs: Greater(fp16 tensor, 0.0) compares in fp16.
    """
    stored = {current(n) for n in names if n not in ctx.constants}
    if len(stored) == 1:
        (precision,) = stored
        if TYPE_STR_OF_PRECISION[precision] in allowed_types(schema, type_str):
            return [precision] * len(names)
    return [ctx.original(n) for n in names]


# --------------------------------------------------------------------------------------
# storage and boundaries
# --------------------------------------------------------------------------------------
def storage(ctx: GraphContext, node_io: dict[str, NodeIO]) -> tuple[dict[str, str], list[tuple[str, str, str]]]:
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


__all__ = ["compute_io", "fixed_io", "input_groups", "storage", "type_nodes"]
