"""Weak-typing hints: the plan as per-layer precision constraints (TensorRT <= 10.x).

TensorRT's ONNX parser names each layer after the ONNX node it comes from (helper
layers it adds get other names), so the hints are keyed by node name:
``layer_precision`` for ``ILayer.precision`` and ``output_types`` for
``ILayer.set_output_type``, both honoured only with OBEY_PRECISION_CONSTRAINTS and even
then not inside every fused region (ARCHITECTURE.md): results built from these hints
must be verified against the engine's layer report, never trusted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..plan import COMPUTE

if TYPE_CHECKING:  # pragma: no cover
    from ..plan import PrecisionPlan


@dataclass(frozen=True)
class WeakHints:
    """Per-layer precision hints for a weakly typed TensorRT build.

    Attributes:
        default: the policy's default precision (the builder flag to set: fp16 -> FP16, ...).
        layer_precision: ``{node name: precision}`` for every compute node, FP32 ones included
            (with FP16 enabled, an FP32 node needs an explicit constraint).
        output_types: ``{node name: {output index: precision}}`` for the float outputs of
            compute nodes. Outputs that are graph outputs are FP32 (the model's I/O type).
    """

    default: str
    layer_precision: dict[str, str] = field(default_factory=dict)
    output_types: dict[str, dict[int, str]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "default": self.default,
            "layer_precision": dict(self.layer_precision),
            "output_types": {n: {str(i): p for i, p in t.items()} for n, t in self.output_types.items()},
        }


def weak_hints(plan: PrecisionPlan) -> WeakHints:
    """The plan as TensorRT weak-typing hints (compute nodes only)."""
    graph_outputs = {o.name: o for o in plan.model.proto.graph.output}
    layer_precision: dict[str, str] = {}
    output_types: dict[str, dict[int, str]] = {}
    for node in plan.model.proto.graph.node:
        decision = plan.nodes[node.name]
        if decision.kind != COMPUTE or decision.precision is None:
            continue
        layer_precision[node.name] = decision.precision
        io = plan.node_io[node.name]
        types = {}
        for index, (out, precision) in enumerate(zip(node.output, io.outputs, strict=True)):
            if not out or precision is None:
                continue
            types[index] = plan.tensor_precision[out] if out in graph_outputs else precision
        if types:
            output_types[node.name] = types
    return WeakHints(plan.policy.default, layer_precision, output_types)
