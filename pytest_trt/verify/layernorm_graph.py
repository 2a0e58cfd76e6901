"""Finding LayerNorms in an ONNX graph, in both forms an exporter writes.

The probes (:mod:`pytest_trt.verify.probes`) test a model's LayerNorms numerically, one at a time;
this module finds them: ``LayerNormalization`` nodes over the last axis (opset >= 17
exports), and the decomposed pattern torch writes for older opsets,
``(x - mean) / sqrt(mean((x - mean)^2) + eps)`` optionally followed by ``* gamma + beta``,
matched on the graph's structure (producers, consumers, constants), never on node names.
Each is a :class:`LayerNormInstance`: its scope, its nodes (Constants included), input and
output tensor.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

if TYPE_CHECKING:  # pragma: no cover
    from ..plan import PrecisionPlan

__all__ = ["LayerNormInstance", "attribute", "constant_value", "find_layernorms"]


# --------------------------------------------------------------------------------------
# Finding LayerNorms
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LayerNormInstance:
    """One LayerNorm of the model.

    Attributes:
        label: its scope (common prefix of its node names, e.g.
            ``/encoder/layer.0/attention/output/LayerNorm``) or the LayerNormalization
            node's name.
        form: ``decomposed`` or ``LayerNormalization``.
        nodes: its compute and constant nodes, in graph order (Constants included).
        input: the normalized float tensor ``x``.
        output: the tensor the LayerNorm produces (``Add_1``'s output, or the node's).
    """

    label: str
    form: str
    nodes: tuple[str, ...]
    input: str
    output: str

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "form": self.form, "nodes": list(self.nodes), "input": self.input,
                "output": self.output}


def attribute(node, name: str, default: Any = None) -> Any:
    """The value of ``node``'s attribute ``name``, else ``default``."""
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def constant_value(graph, producers, name: str) -> Any:
    """numpy value of an initializer or a Constant node's output, else None."""
    for init in graph.initializer:
        if init.name == name:
            if init.HasField("data_location") and init.data_location == onnx.TensorProto.EXTERNAL:
                return None  # a large weight held by the weight store: not a LayerNorm constant
            return numpy_helper.to_array(init)
    node = producers.get(name)
    if node is not None and node.op_type == "Constant":
        value = attribute(node, "value")
        if value is not None:
            return numpy_helper.to_array(value)
        for key in ("value_float", "value_int"):
            v = attribute(node, key)
            if v is not None:
                return v
    return None


def _rank_of(plan: PrecisionPlan, tensor: str) -> int | None:
    vi = (getattr(plan, "value_info", None) or {}).get(tensor)
    if vi is None:
        for v in plan.model.graph.input:
            if v.name == tensor:
                vi = v
    if vi is None or not vi.type.HasField("tensor_type") or not vi.type.tensor_type.HasField("shape"):
        return None
    return len(vi.type.tensor_type.shape.dim)


def _last_axis(axes, rank: int | None) -> bool:
    if axes is None:
        return False
    axes = [int(a) for a in np.asarray(axes).reshape(-1)]
    if len(axes) != 1:
        return False
    return axes[0] == -1 or (rank is not None and axes[0] == rank - 1)


def _reduce_axes(node, graph, producers):
    axes = attribute(node, "axes")
    if axes is None and len(node.input) > 1 and node.input[1]:
        axes = constant_value(graph, producers, node.input[1])
    return axes


class _GraphIndex:
    """Producers, consumers and graph order of a model's main graph, for matching LayerNorm patterns."""

    def __init__(self, graph) -> None:
        self.graph = graph
        self.producers = {o: n for n in graph.node for o in n.output if o}
        self.consumers: dict[str, list] = {}
        for n in graph.node:
            for i in n.input:
                if i:
                    self.consumers.setdefault(i, []).append(n)
        self.order = {n.name: k for k, n in enumerate(graph.node)}

    def only(self, tensor: str, op: str, pred=lambda _n: True):
        """The one consumer of ``tensor`` of type ``op`` (satisfying ``pred``), else None."""
        found = [c for c in self.consumers.get(tensor, []) if c.op_type == op and pred(c)]
        return found[0] if len(found) == 1 else None

    def const_producers(self, node) -> list:
        """The Constant nodes feeding ``node``."""
        out = []
        for i in node.input:
            p = self.producers.get(i)
            if p is not None and p.op_type == "Constant":
                out.append(p)
        return out

    def const(self, name: str):
        return constant_value(self.graph, self.producers, name)

    def reduces_last_axis(self, node, rank: int | None) -> bool:
        return _last_axis(_reduce_axes(node, self.graph, self.producers), rank)

    def is_square(self, n, d: str) -> bool:
        """``Pow(d, 2)`` or ``Mul(d, d)``."""
        if n.op_type == "Pow":
            e = self.const(n.input[1]) if len(n.input) > 1 else None
            return n.input[0] == d and e is not None and bool(np.allclose(np.asarray(e, dtype=np.float64), 2.0))
        return n.op_type == "Mul" and list(n.input) == [d, d]

    def sorted_names(self, nodes) -> tuple[str, ...]:
        """Names of ``nodes`` and the Constants feeding them, in graph order."""
        every = list(nodes)
        for n in nodes:
            every.extend(self.const_producers(n))
        return tuple(sorted({n.name for n in every}, key=lambda name: self.order[name]))


def find_layernorms(plan: PrecisionPlan) -> list[LayerNormInstance]:
    """Every LayerNorm of the plan's model (both forms), in graph order."""
    g = _GraphIndex(plan.model.graph)
    found: list[LayerNormInstance] = []
    for node in g.graph.node:
        if node.op_type == "LayerNormalization":
            inst = _layernormalization(plan, g, node)
        elif node.op_type == "ReduceMean" and int(attribute(node, "keepdims", 1)) == 1:
            inst = _decomposed_layernorm(plan, g, node)
        else:
            inst = None
        if inst is not None:
            found.append(inst)
    found.sort(key=lambda inst: g.order[inst.nodes[0]])
    return found


def _layernormalization(plan: PrecisionPlan, g: _GraphIndex, node) -> LayerNormInstance | None:
    """A ``LayerNormalization`` node over the last axis."""
    x = node.input[0]
    axis = int(attribute(node, "axis", -1))
    if not _last_axis([axis], _rank_of(plan, x)):
        return None
    return LayerNormInstance(node.name, "LayerNormalization", g.sorted_names([node]), x, node.output[0])


def _decomposed_layernorm(plan: PrecisionPlan, g: _GraphIndex, r1) -> LayerNormInstance | None:
    """The decomposed LayerNorm starting at ReduceMean ``r1`` (torch's opset < 17 export), else None:
    ``(x - mean) / sqrt(mean((x - mean)^2) + eps)``, then an optional ``* gamma + beta``."""
    x = r1.input[0]
    rank = _rank_of(plan, x)
    if not g.reduces_last_axis(r1, rank):
        return None
    chain = _normalization_chain(g, r1, x, rank)
    if chain is None:
        return None
    chain.extend(_affine_tail(g, chain[-1].output[0]))
    names = g.sorted_names(chain)
    return LayerNormInstance(_scope(names), "decomposed", names, x, chain[-1].output[0])


def _normalization_chain(g: _GraphIndex, r1, x: str, rank: int | None) -> list | None:
    """``[ReduceMean, Sub, Pow|Mul, ReduceMean, Add, Sqrt, Div]`` from ``r1``, else None."""
    mean = r1.output[0]
    sub = g.only(mean, "Sub", lambda n: list(n.input) == [x, mean])
    if sub is None:
        return None
    d = sub.output[0]
    squares = [c for c in g.consumers.get(d, []) if g.is_square(c, d)]
    divs = [c for c in g.consumers.get(d, []) if c.op_type == "Div" and c.input[0] == d]
    if len(squares) != 1 or len(divs) != 1:
        return None
    sq, div = squares[0], divs[0]
    r2 = g.only(sq.output[0], "ReduceMean")
    if r2 is None or not g.reduces_last_axis(r2, rank):
        return None
    add_eps = g.only(r2.output[0], "Add")
    if add_eps is None:
        return None
    sqrt = g.only(add_eps.output[0], "Sqrt")
    if sqrt is None or div.input[1] != sqrt.output[0]:
        return None
    return [r1, sub, sq, r2, add_eps, sqrt, div]


def _affine_tail(g: _GraphIndex, out: str) -> list:
    """``Mul`` by a constant gamma, then ``Add`` of a constant beta, as far as present."""
    tail = []
    mul = g.only(out, "Mul")
    if mul is not None and g.const(_other(mul, out)) is not None:
        tail.append(mul)
        out = mul.output[0]
        add_b = g.only(out, "Add")
        if add_b is not None and g.const(_other(add_b, out)) is not None:
            tail.append(add_b)
    return tail


def _other(node, tensor):
    ins = [i for i in node.input if i != tensor]
    return ins[0] if len(ins) == 1 else ""


def _scope(names) -> str:
    prefix = os.path.commonprefix(list(names))
    if "/" in prefix:
        prefix = prefix[: prefix.rindex("/")]
    return prefix or names[0]
