"""Checks of a model's typing that ONNX's own inference does not make.

Run before a plan is resolved (and before a reference runs the model as written): every
type variable of every node is bound to one allowed type (``Add(fp16, fp32)`` is
rejected by ONNX Runtime and TensorRT), and QuantizeLinear/DequantizeLinear scales and
zero points have the shapes their quantization mode needs. Each failure is a
:class:`~pytest_trt.errors.ModelError` naming the node and the fix.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.dtypes import FLOAT_ELEM_TYPES, elem_type_name
from ..errors import ModelError
from ..model.onnx_typing import (
    ELEM_OF_TYPE_STR,
    TYPE_NAME,
    GraphContext,
    allowed_types,
    domain_of,
    formal,
    graph_context,
    is_type_var,
    qualified,
)

if TYPE_CHECKING:  # pragma: no cover
    from ..model.load import Model

_LOW_ELEMS = (10, 16)  # FLOAT16, BFLOAT16


def check_as_written(model: Model) -> None:
    """The checks an as-is plan runs, without a plan: every type variable bound to one
    allowed type, Q/DQ scale and zero-point shapes. ModelError naming the node. (Unlike
    planning, unknown and DOUBLE tensor types are fine here: references run them.)"""
    ctx = graph_context(model)
    check_bindings(ctx)
    check_quantization(ctx)


# --------------------------------------------------------------------------------------
# type variables
# --------------------------------------------------------------------------------------
def check_bindings(ctx: GraphContext) -> None:
    """Every type variable of every node is bound to one allowed type (what ONNX Runtime checks on load).

    ONNX type inference (run without type checking so that every model gets a plan) does
    not catch ``Add(fp16, fp32)``; an as-is plan takes the types as they are, so they must
    be consistent.
    """
    for node in ctx.graph.node:
        schema = ctx.schemas[node.name]
        if schema is None:
            continue
        for type_str, tensors in _bound_types(node, schema, ctx).items():
            _check_binding(ctx, node, schema, type_str, tensors)


def _bound_types(node, schema, ctx: GraphContext) -> dict[str, list[tuple[str, int]]]:
    """``{type string: [(tensor, elem_type), ...]}`` over the node's typed homogeneous slots."""
    bound: dict[str, list[tuple[str, int]]] = {}
    slots = [(name, formal(schema.inputs, i)) for i, name in enumerate(node.input)]
    slots += [(name, formal(schema.outputs, i)) for i, name in enumerate(node.output)]
    for name, param in slots:
        if not name or param is None or name not in ctx.elem_types or not param.is_homogeneous:
            continue  # heterogeneous variadics (Loop/Scan/If values) may mix types
        bound.setdefault(param.type_str, []).append((name, ctx.elem_types[name]))
    return bound


def _check_binding(ctx: GraphContext, node, schema, type_str: str, tensors: list[tuple[str, int]]) -> None:
    elems = {e for _, e in tensors}
    listing = ", ".join(f"{n!r} {elem_type_name(e)}" for n, e in tensors)
    if len(elems) > 1 and is_type_var(schema, type_str):
        low = [n for n, e in tensors if e in _LOW_ELEMS]
        hint = (f"insert a Cast so they agree (e.g. Cast {low[0]!r} to FLOAT, or the FLOAT tensor to "
                f"{elem_type_name(next(e for _, e in tensors if e in _LOW_ELEMS))})" if low else
                "insert a Cast so they agree")
        raise ModelError(
            f"{ctx.model.label}: node {node.name!r} ({qualified(node)}) binds its type {type_str} to "
            f"different types: {listing}. ONNX Runtime and TensorRT reject such a model; {hint}, "
            f"or re-export it."
        )
    elem = next(iter(elems))
    allowed = allowed_types(schema, type_str)
    wanted = f"tensor({TYPE_NAME.get(elem, '?')})"
    if elem in FLOAT_ELEM_TYPES and wanted not in allowed and any(t in ELEM_OF_TYPE_STR for t in allowed):
        raise ModelError(
            f"{ctx.model.label}: node {node.name!r} ({qualified(node)}, opset {ctx.opset_of(node)}) reads or "
            f"writes {listing}, but its {type_str} allows only {', '.join(allowed)}. Cast around the node "
            f"or re-export at an opset that has that type."
        )


# --------------------------------------------------------------------------------------
# Q/DQ scales and zero points
# --------------------------------------------------------------------------------------
def check_quantization(ctx: GraphContext) -> None:
    """QuantizeLinear/DequantizeLinear scale and zero-point shapes (ONNX inference does not check them).

    Per-tensor: scale is a scalar (or a 1-element vector); per-axis (opset >= 13): a 1-D
    scale as long as the input's dimension ``axis``; block quantization (``block_size``,
    opset >= 21): scale has the input's rank. A zero point has the scale's shape.
    """
    for node in ctx.graph.node:
        if domain_of(node) != "" or node.op_type not in ("QuantizeLinear", "DequantizeLinear") or len(node.input) < 2:
            continue
        s_shape = ctx.shape(node.input[1])
        if s_shape is None:
            continue
        where = f"{ctx.model.label}: {node.op_type} node {node.name!r}"
        _check_scale(ctx, node, s_shape, where)
        zero = node.input[2] if len(node.input) > 2 and node.input[2] else None
        if zero is not None:
            _check_zero_point(ctx, node.input[1], s_shape, zero, where)


def _check_scale(ctx: GraphContext, node, s_shape: tuple, where: str) -> None:
    x, scale = node.input[0], node.input[1]
    x_shape = ctx.shape(x)
    attrs: dict[str, Any] = {a.name: a for a in node.attribute}
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
        _check_per_axis(x, x_shape, scale, s_shape, axis, where)


def _check_per_axis(x: str, x_shape: tuple, scale: str, s_shape: tuple, axis: int, where: str) -> None:
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


def _check_zero_point(ctx: GraphContext, scale: str, s_shape: tuple, zero: str, where: str) -> None:
    z_shape = ctx.shape(zero)
    if z_shape is not None and tuple(z_shape) != tuple(s_shape) and not (
            {tuple(z_shape), tuple(s_shape)} <= {(), (1,)}):
        raise ModelError(f"{where}: zero point {zero!r} has shape {list(z_shape)} but scale {scale!r} has "
                         f"shape {list(s_shape)}; they must match.")


__all__ = ["check_as_written", "check_bindings", "check_quantization"]
