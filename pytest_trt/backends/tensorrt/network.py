"""The parsed TensorRT network against the plan, before any engine exists.

Between parsing and building, the glue of the ``tensorrt`` backends reads the network that
TensorRT's ONNX parser made of the plan's realization: under strong typing every planned
compute node's layers must output the planned dtypes (:func:`check_network_dtypes`, judged
by the one rule of :mod:`pytest_trt.layers.network_rule`; a lowered node is a
:class:`LoweredPrecisionError`); under weak typing the plan's hints are set on the layers
carrying each node (:func:`apply_weak_hints`). A layer carries a node when its name is the
node's or its ``ILayer.metadata`` names it (:func:`pytest_trt.layers.inspector.metadata_nodes`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...errors import BuildError
from ...layers.inspector import FLOAT_PRECISIONS, metadata_nodes
from ...layers.network_rule import HIGHER, judge
from ...reference.baseline import float_tensor_names
from .compat import TrtCompat, dtype_name

if TYPE_CHECKING:  # pragma: no cover
    from ...plan import PrecisionPlan

__all__ = [
    "DtypeMismatch",
    "LoweredPrecisionError",
    "WeakHintResult",
    "apply_weak_hints",
    "check_network_dtypes",
    "computed_float_tensors",
    "lowered_message",
    "mark_float_outputs",
    "network_node_dtypes",
    "node_from_log",
]


def _layer_node(layer, known) -> str | None:
    """The plan node a network layer carries: its name, else its ``[ONNX Layer: ...]`` metadata."""
    name = str(getattr(layer, "name", ""))
    if name in known:
        return name
    nodes = metadata_nodes(getattr(layer, "metadata", "") or "", known)
    for n in nodes:
        if n in known:
            return n
    return None


@dataclass(frozen=True)
class DtypeMismatch:
    """A network layer output whose dtype differs from the plan.

    ``verdict`` is :func:`pytest_trt.layers.network_rule.judge` of planned vs actual: ``lower``
    (a failure) or ``higher`` (TensorRT computes it in higher precision than planned).
    """

    node: str
    layer: str
    tensor: str
    planned: str
    actual: str
    op_type: str = ""
    #: the node's canonical scoped name (pytest_trt.model.names): what the message shows
    canonical: str = ""

    @property
    def verdict(self) -> str:
        return judge(self.planned, self.actual)

    def describe(self) -> str:
        """One line naming the node, both dtypes and the layer output."""
        text = (f"{self.canonical or self.node}{f' ({self.op_type})' if self.op_type else ''}: planned {self.planned}, parsed "
                f"{self.actual} (layer {self.layer!r}, output {self.tensor!r})")
        if self.verdict == HIGHER:
            text += ": TensorRT computes this in higher precision than planned"
        return text

    def to_json(self) -> dict[str, str]:
        return {"node": self.node, "canonical": self.canonical or self.node, "op_type": self.op_type,
                "layer": self.layer, "tensor": self.tensor,
                "planned": self.planned, "actual": self.actual, "verdict": self.verdict}


def check_network_dtypes(network, plan: PrecisionPlan) -> list[DtypeMismatch]:
    """Compare a parsed (strongly typed) network with the plan, before building.

    For each layer carrying a planned compute node (layer name == node name, or its
    ``ILayer.metadata``), each float output tensor must have the planned dtype: the
    tensor's own entry in ``plan.tensor_precision`` when it is an ONNX tensor, else the
    node's precision (helper layers of the node). Layers of the realization's Cast nodes
    and helper layers without metadata are skipped. On a weakly typed network dtypes are
    not decided before the build, so use this with strong typing (TENSORRT_RTX.md: on
    TensorRT-RTX 1.7.1 layer output dtypes "follow the graph exactly").
    """
    known = plan.nodes
    tensor_precision = getattr(plan, "tensor_precision", {}) or {}
    out = []
    for i in range(int(network.num_layers)):
        layer = network.get_layer(i)
        node = _layer_node(layer, known)
        if node is None:
            continue
        decision = known[node]
        if decision.kind != "compute" or decision.precision is None:
            continue
        for j in range(int(layer.num_outputs)):
            t = layer.get_output(j)
            if t is None:
                continue
            actual = dtype_name(t.dtype)
            if actual not in FLOAT_PRECISIONS:
                continue
            planned = tensor_precision.get(str(t.name), decision.precision)
            if planned != actual:
                out.append(DtypeMismatch(node, str(layer.name), str(t.name), planned, actual, decision.op_type,
                                         plan.model.names.canonical(node)))
    return out


def network_node_dtypes(network, plan: PrecisionPlan) -> dict[str, str]:
    """Planned compute node -> the float dtype its layers output in the parsed network.

    ``mixed`` when its layers output several float types (e.g. a helper layer in FP32);
    nodes carried by no layer are absent (the parser folded them, e.g. into a constant).
    """
    known = plan.nodes
    seen: dict[str, set[str]] = {}
    for i in range(int(network.num_layers)):
        layer = network.get_layer(i)
        node = _layer_node(layer, known)
        if node is None or known[node].kind != "compute" or known[node].precision is None:
            continue
        for j in range(int(layer.num_outputs)):
            t = layer.get_output(j)
            actual = dtype_name(t.dtype) if t is not None else None
            if actual in FLOAT_PRECISIONS:
                seen.setdefault(node, set()).add(actual)
    return {n: (next(iter(d)) if len(d) == 1 else "mixed") for n, d in seen.items()}


class LoweredPrecisionError(BuildError):
    """Strong typing: a node planned FP32 was parsed in lower precision (the one rule,
    :mod:`pytest_trt.layers.network_rule`). ``mismatches`` are the offending layer outputs."""

    def __init__(self, message: str, mismatches: list[DtypeMismatch], nodes: dict[str, str] | None = None):
        super().__init__(message)
        self.mismatches = mismatches
        #: planned compute node -> parsed dtype (:func:`network_node_dtypes`)
        self.nodes = dict(nodes or {})


def lowered_message(label: str, lowered: list[DtypeMismatch]) -> str:
    """The message of :class:`LoweredPrecisionError`: the nodes parsed lower than planned, and the next step."""
    nodes = sorted({m.node for m in lowered})
    lines = [f"{label}: {len(nodes)} node(s) parsed in a different or lower precision than planned "
             f"(a precision request TensorRT would not honour):"]
    lines += [f"  {m.describe()}" for m in lowered[:20]]
    if len(lowered) > 20:
        lines.append(f"  ... {len(lowered) - 20} more")
    lines.append("The realization (pytest_trt.realize.realize_strong) should have typed these nodes as planned: "
                 "please report it with `pytest-trt plan MODEL ... --export-onnx OUT.onnx` attached.")
    return "\n".join(lines)


@dataclass
class WeakHintResult:
    """What :func:`apply_weak_hints` did: node -> layers hinted, and hints that found no layer."""

    applied: dict[str, list[str]] = field(default_factory=dict)
    output_types_set: int = 0
    unmatched: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"applied": self.applied, "output_types_set": self.output_types_set, "unmatched": self.unmatched}


def _node_outputs(plan: PrecisionPlan) -> dict[str, list[str]]:
    return {n.name: list(n.output) for n in plan.model.proto.graph.node}


def apply_weak_hints(compat: TrtCompat, network, hints, plan: PrecisionPlan) -> WeakHintResult:
    """Apply :class:`~pytest_trt.realize.WeakHints` to a weakly typed network (TensorRT <= 10.x).

    A layer carries node N when ``layer.name == N`` or its metadata names N (the ONNX
    parser may emit several layers for one node; Polygraphy's ``SetLayerPrecisions``
    matches exact names only). For each such layer with a float output:
    ``layer.precision = hints.layer_precision[N]``; an output that *is* N's ONNX output
    ``k`` gets ``hints.output_types[N][k]``, any other float output (a helper layer's
    intermediate) gets the node's precision. Shape, constant and cast layers are left
    alone. Hinted nodes that match no layer are reported (Polygraphy only warns).
    """
    layer_precision = dict(getattr(hints, "layer_precision", {}) or {})
    output_types = {k: dict(v) for k, v in (getattr(hints, "output_types", {}) or {}).items()}
    hinted = set(layer_precision) | set(output_types)
    outputs_of = _node_outputs(plan)
    result = WeakHintResult()
    for i in range(int(network.num_layers)):
        layer = network.get_layer(i)
        node = _layer_node(layer, hinted)
        if node is None or compat.skip_for_hints(layer):
            continue
        floats = []
        for j in range(int(layer.num_outputs)):
            t = layer.get_output(j)
            if t is not None and dtype_name(t.dtype) in FLOAT_PRECISIONS:
                floats.append((j, str(t.name)))
        if not floats:
            continue
        prec = layer_precision.get(node)
        if prec is not None:
            compat.set_layer_precision(layer, prec)
        onnx_outs = outputs_of.get(node, [])
        for j, tname in floats:
            want = None
            if tname in onnx_outs:
                want = output_types.get(node, {}).get(onnx_outs.index(tname), prec)
            else:
                want = prec
            if want is not None:
                compat.set_output_type(layer, j, want)
                result.output_types_set += 1
        result.applied.setdefault(node, []).append(str(layer.name))
    result.unmatched = sorted(n for n in hinted if n not in result.applied)
    return result


def mark_float_outputs(network, names: set[str]) -> int:
    """Layerwise builds: mark every layer output whose name is in ``names`` (float tensors that
    ONNX nodes produce) as a network output (Polygraphy's ``ModifyNetworkOutputs`` with
    ``MARK_ALL`` does the same for every tensor; marking changes fusion)."""
    marked = 0
    for i in range(int(network.num_layers)):
        layer = network.get_layer(i)
        ltype = getattr(getattr(layer, "type", None), "name", str(getattr(layer, "type", "")))
        if str(ltype).upper().endswith("CONSTANT"):
            continue  # constants carry no computation worth comparing
        for j in range(int(layer.num_outputs)):
            t = layer.get_output(j)
            if t is None or str(t.name) not in names or getattr(t, "is_network_output", False):
                continue
            if dtype_name(t.dtype) not in FLOAT_PRECISIONS:
                continue
            network.mark_output(t)
            marked += 1
    return marked


def node_from_log(lines: list[str], nodes) -> str | None:
    """The first plan node a TensorRT message names (``[ONNX Layer: X]`` first, then plain names)."""
    known = set(nodes)
    for line in lines:
        for n in metadata_nodes(line, known):
            if n in known:
                return n
    by_length = sorted(known, key=len, reverse=True)
    for line in lines:
        for n in by_length:
            if len(n) < 3 or n not in line:
                continue
            i = line.index(n)
            before = line[i - 1] if i > 0 else " "
            after = line[i + len(n)] if i + len(n) < len(line) else " "
            if not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_"):
                return n
    return None


def computed_float_tensors(plan: PrecisionPlan) -> set[str]:
    """Float tensors that ONNX nodes produce (graph inputs and initializers excluded)."""
    names = set(getattr(plan, "tensor_precision", {}) or {})
    if not names:
        names = set(float_tensor_names(plan.model))
    produced = {o for n in plan.model.proto.graph.node for o in n.output if o}
    return names & produced
