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

__all__ = ["node_flops"]


def _elements(shape) -> int:
    return int(math.prod(int(d) for d in shape)) if shape is not None else 0


def node_flops(model, shapes: dict[str, tuple[int, ...]]) -> dict[str, int]:
    """``{node name: estimated FLOPs}`` for every node of ``model`` (a :class:`~pytest_trt.model.Model`).

    ``shapes``: ``{tensor name: shape}`` of one run (feeds, initializers, intermediates).
    """
    from onnx import helper

    out: dict[str, int] = {}
    for node in model.proto.graph.node:
        ins = [shapes.get(name) for name in node.input if name]
        outs = [shapes.get(name) for name in node.output if name]
        first_out = outs[0] if outs else None
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        flops = 0
        if node.op_type == "MatMul" and ins and ins[0] is not None and first_out is not None and len(ins[0]):
            flops = 2 * _elements(first_out) * int(ins[0][-1])
        elif node.op_type == "Gemm" and ins and ins[0] is not None and first_out is not None and len(ins[0]) == 2:
            k = ins[0][0] if attrs.get("transA", 0) else ins[0][1]
            flops = 2 * _elements(first_out) * int(k)
        elif node.op_type in ("Conv", "ConvTranspose") and len(ins) > 1 and ins[1] is not None \
                and first_out is not None:
            weight = ins[1]
            group = int(attrs.get("group", 1)) or 1
            c_in = int(weight[1]) if node.op_type == "Conv" else int(weight[0]) // group
            flops = 2 * _elements(first_out) * c_in * _elements(weight[2:])
        else:
            flops = max((_elements(s) for s in ins + outs if s is not None), default=0)
        out[node.name] = int(flops)
    return out
