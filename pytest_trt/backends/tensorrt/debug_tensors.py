"""Debug tensors of a TensorRT engine, named as ONNX tensors through the engine's layer report.

Tensors marked with ``mark_unfused_tensors_as_debug_tensors`` reach the debug listener under
TensorRT's internal names; the real bindings' docstring (10.12 ... 11.4, checked by the
``trt_api`` tier) says: "DebugListener can only get internal tensor names instead of the
original tensor names in the NetworkDefinition for tensors marked this way. But the names
correspond to the names obtained by IEngineInspector. There is no guarantee that all unfused
tensors are marked." So a debug tensor is named through the inspector: the layer that outputs
it, and the ONNX node(s) that layer carries (its ``Metadata``).

* a name that is an ONNX float tensor is that tensor;
* else the layer producing it carries exactly one ONNX node, is that node's last layer in the
  engine, and the node has exactly one float output: it is that output;
* anything else (a fused layer of several nodes, an intermediate of a node split into several
  layers, a name the inspector does not list) cannot be mapped: kept under its engine name,
  with the reason, never compared as if it were an ONNX tensor.

:func:`expected_tensors` lists the ONNX float tensors the engine has at a layer boundary (so
they could be emitted); those missing from a capture make it partial.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class DebugMapping:
    """Engine tensor name -> ONNX tensor name, and the names that could not be mapped (with why)."""

    mapped: dict[str, str] = field(default_factory=dict)
    unmapped: dict[str, str] = field(default_factory=dict)


def _producers(report) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for layer in report.layers:
        for t in layer.outputs:
            out.setdefault(t.name, layer)
    return out


def _last_layer_of(report) -> dict[str, str]:
    last = {}
    for layer in report.layers:
        for n in layer.onnx_nodes:
            last[n] = layer.name
    return last


def _float_outputs(plan, float_names) -> dict[str, list[str]]:
    return {n.name: [o for o in n.output if o in float_names] for n in plan.model.proto.graph.node}


def map_debug_names(names, report, plan, float_names) -> DebugMapping:
    """Name the engine's debug tensors ``names`` as ONNX tensors (see the module docstring)."""
    producers = _producers(report)
    last = _last_layer_of(report)
    outputs = _float_outputs(plan, float_names)
    result = DebugMapping()
    taken: set[str] = set()
    for name in names:
        if name in float_names:
            target, why = name, None
        else:
            layer = producers.get(name)
            target, why = None, None
            if layer is None:
                why = "not an output of any layer the engine inspector lists"
            elif len(layer.onnx_nodes) != 1:
                why = (f"output of layer {layer.name!r}, which carries "
                       + (f"{len(layer.onnx_nodes)} ONNX nodes" if layer.onnx_nodes else "no ONNX node"))
            else:
                node = layer.onnx_nodes[0]
                if node not in outputs:
                    why = (f"output of layer {layer.name!r}, whose node {node!r} is not in the model (a Cast the "
                           f"strongly typed realization added)")
                elif last.get(node) != layer.name:
                    why = f"intermediate of ONNX node {node!r} (layer {layer.name!r} is not its last layer)"
                elif len(outputs.get(node, [])) != 1:
                    why = f"output of layer {layer.name!r}; ONNX node {node!r} has {len(outputs.get(node, []))} float outputs"
                else:
                    target = outputs[node][0]
        if target is not None and target in taken:
            target, why = None, f"a second engine tensor for ONNX tensor {target!r}"
        if target is None:
            result.unmapped[name] = why or "unmapped"
        else:
            result.mapped[name] = target
            taken.add(target)
    return result


def expected_tensors(report, plan, float_names) -> set[str]:
    """ONNX float tensors at a layer boundary of the engine: those a full capture would hold."""
    names = [t.name for layer in report.layers for t in layer.outputs]
    io = {t.get("name") for t in getattr(report, "io_tensors", []) or []}
    mapping = map_debug_names([n for n in names if n not in io], report, plan, float_names)
    return set(mapping.mapped.values())
