"""A rough FLOPs estimate per ONNX node, from the tensor shapes of one run.

Used to say how much of a model's *work* a precision plan leaves in FP32 (the node count
alone treats a reshape-sized ``Add`` like a ``MatMul``). The estimate is deliberately
simple and stated as such wherever it is shown:

* ``MatMul``: ``2 * elements(output) * K`` (K = the last dim of the first input);
* ``Gemm``: the same, with K from ``transA``;
* ``Conv`` / ``ConvTranspose``: ``2 * elements(output) * (C_in / group) * prod(kernel)``;
* every other node: ``elements`` of its largest float input or output (one operation per
  element: element-wise ops, reductions, normalizations, casts).

Shapes come from a dict ``{tensor: array}`` holding the feeds, the initializers and the
FP32 intermediates of one run (``baseline.fp32_intermediates``); a node whose shapes are
unknown counts 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from onnx import helper

__all__ = ["node_flops"]

#: A tensor's shape, None when unknown.
Shape = Sequence[int] | None


def _elements(shape: Shape) -> int:
    return int(math.prod(int(d) for d in shape)) if shape is not None else 0


def node_flops(model: Any, shapes: dict[str, tuple[int, ...]]) -> dict[str, int]:
    """``{node name: estimated FLOPs}`` for every node of ``model`` (a :class:`~pytest_trt.model.load.Model`).

    ``shapes``: ``{tensor name: shape}`` of one run (feeds, initializers, intermediates).
    """
    out: dict[str, int] = {}
    for node in model.proto.graph.node:
        ins: list[Shape] = [shapes.get(name) for name in node.input if name]
        outs: list[Shape] = [shapes.get(name) for name in node.output if name]
        first_out = outs[0] if outs else None
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        estimate = _ESTIMATES.get(node.op_type)
        flops = estimate(node.op_type, ins, first_out, attrs) if estimate is not None else None
        if flops is None:  # other ops, or shapes unknown: one operation per element
            flops = max((_elements(s) for s in ins + outs if s is not None), default=0)
        out[node.name] = int(flops)
    return out


def _matmul(op: str, ins: list[Shape], first_out: Shape, attrs: dict[str, Any]) -> int | None:
    if ins and ins[0] is not None and first_out is not None and len(ins[0]):
        return 2 * _elements(first_out) * int(ins[0][-1])
    return None


def _gemm(op: str, ins: list[Shape], first_out: Shape, attrs: dict[str, Any]) -> int | None:
    if ins and ins[0] is not None and first_out is not None and len(ins[0]) == 2:
        k = ins[0][0] if attrs.get("transA", 0) else ins[0][1]
        return 2 * _elements(first_out) * int(k)
    return None


def _conv(op: str, ins: list[Shape], first_out: Shape, attrs: dict[str, Any]) -> int | None:
    weight = ins[1] if len(ins) > 1 else None
    if weight is None or first_out is None:
        return None
    group = int(attrs.get("group", 1)) or 1
    c_in = int(weight[1]) if op == "Conv" else int(weight[0]) // group
    return 2 * _elements(first_out) * c_in * _elements(weight[2:])


#: The ops estimated by their reduction size (None from an estimate: shapes unknown).
_ESTIMATES: dict[str, Callable[[str, list[Shape], Shape, dict[str, Any]], int | None]] = {
    "MatMul": _matmul,
    "Gemm": _gemm,
    "Conv": _conv,
    "ConvTranspose": _conv,
}
