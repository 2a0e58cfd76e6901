"""Emulation realization: an FP32 graph that stores every low-precision tensor rounded.

ONNX Runtime's CPU provider computes FP16 graphs in FP32 and drops the FP16 stores
(ARCHITECTURE.md: an FP16 decomposed LayerNorm fed values of 400 showed error 0.0), so
running the strong realization on CPU says nothing about FP16 accuracy. This graph
makes the rounding explicit instead: every node computes in FP32, and every tensor the
strong realization stores in FP16/BF16 is rounded through that type by a
Cast(fp32 -> low) -> Cast(low -> fp32) pair. That resembles TensorRT's FP16 kernels,
which mostly accumulate in FP32 and round when they store. It does NOT model
kernel-internal math, tactic choice or fusion (a fused kernel may keep intermediates
in FP32 that this graph rounds).

The graph is derived mechanically from :func:`~pytest_trt.realize.strong.build_strong`,
so the two realizations agree on which tensor is rounded where:

* a node whose output is low precision in the strong graph writes ``<t>__unrounded``
  and the rounded value carries the ORIGINAL name ``<t>``, so a run with every tensor
  as an output maps 1:1 onto the FP32 baseline's tensors;
* Casts to a low type become round trips; Casts from a low type to FP32 become Identity;
* low-precision initializers become FP32 initializers holding the rounded values (a reference to a
  weight set stays one, declared FP32: its values are widened when bound, never stored twice);
* graph inputs and outputs keep the model's types: an FP16 input is widened on entry,
  an FP16 output is the rounded FP32 value Cast back under its own name (both exact).

Run it with graph optimizations disabled (``ORT_DISABLE_ALL``): optimizers may remove
Cast pairs.

An **as-is** plan (a model that arrives with its own FP16/BF16 tensors and Casts) has the
model itself as its strong realization, so its emulation is the model upcast to FP32
(low-precision initializers widened exactly, Casts between float types made Identity or
round trips) with a round trip at every tensor the model stores in low precision. Q/DQ
nodes are kept as written: ONNX Runtime executes QuantizeLinear/DequantizeLinear exactly.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import onnx
from onnx import helper, numpy_helper

from ..core.dtypes import ELEM_BFLOAT16, ELEM_FLOAT, ELEM_FLOAT16, PRECISION_OF_ELEM
from .graph_names import all_tensor_names, fresh_name, rename_outer_refs
from .strong import (
    NOTES_KEY,
    PLAN_KEY,
    REALIZATION_KEY,
    build_strong,
    is_reference,
    tensor_to_fp32,
    write_value_info,
)
from .widen import widen_attribute_types

if TYPE_CHECKING:  # pragma: no cover
    from ..plan import PrecisionPlan

_LOW = (ELEM_FLOAT16, ELEM_BFLOAT16)


def realize_emulation(plan: PrecisionPlan) -> onnx.ModelProto:
    """The plan as an all-FP32 ONNX model with explicit rounding of low-precision tensors."""
    realized = build_strong(plan)
    model, types = realized.model, dict(realized.types)
    graph = model.graph
    names = _Names(graph)
    origin = dict(realized.origin)

    strong = dict(types)  # decisions read the strong graph's types, not the ones being rewritten
    nodes = []
    for node in graph.node:
        nodes.extend(_emulate_node(node, strong, types, names, origin))
    del graph.node[:]
    graph.node.extend(nodes)

    _widen_initializers(graph, types)
    initializers = {i.name for i in graph.initializer}
    for vi in graph.input:  # IR < 4 lists initializers as inputs
        if vi.name in initializers and vi.type.tensor_type.elem_type in _LOW:
            vi.type.tensor_type.elem_type = ELEM_FLOAT
    _keep_low_io(graph, types, names, origin, initializers)
    write_value_info(graph, types, plan.value_info, origin)
    _set_meta(model, "emulation")
    return model


def _emulate_node(node, strong: dict[str, int], types: dict[str, int], names: _Names,
                  origin: dict[str, str]) -> list:
    """The node rewritten to compute in FP32, followed by the rounding of its low outputs."""
    if node.op_type == "Cast" and node.domain in ("", "ai.onnx"):
        to = next(a.i for a in node.attribute if a.name == "to")
        if to == ELEM_FLOAT and strong.get(node.input[0]) in _LOW:
            # The value was already rounded where it was stored: widening is exact.
            identity = helper.make_node("Identity", list(node.input), list(node.output), name=node.name)
            types[node.output[0]] = ELEM_FLOAT
            return [identity]
    # Ops whose attribute picks a low output type (ConstantOfShape's value, EyeLike/Random*
    # dtype) compute in FP32 like every other node; their outputs are rounded below.
    widen_attribute_types(node)
    out_nodes = [node]
    for slot, out in enumerate(node.output):
        elem = strong.get(out)
        if not out or elem not in _LOW:
            continue
        precision = PRECISION_OF_ELEM[elem]
        raw = names.tensor(f"{out}__unrounded")
        low = names.tensor(f"{out}__as_{precision}")
        base = origin.get(out, out)
        if node.op_type == "Cast" and node.domain in ("", "ai.onnx"):
            # A Cast to a low type already rounds: only the way back to FP32 is added.
            node.output[slot] = low
            types[low] = elem
            origin[low] = base
        else:
            node.output[slot] = raw
            types[raw] = ELEM_FLOAT
            origin[raw] = base
            out_nodes.append(helper.make_node("Cast", [raw], [low], name=names.node(f"{out}/Round_to_{precision}"),
                                              to=elem))
            types[low] = elem
            origin[low] = base
        out_nodes.append(helper.make_node("Cast", [low], [out], name=names.node(f"{out}/Round_back_fp32"),
                                          to=ELEM_FLOAT))
        types[out] = ELEM_FLOAT
    return out_nodes


def _keep_low_io(graph, types: dict[str, int], names: _Names, origin: dict[str, str], initializers) -> None:
    """Graph inputs and outputs keep the model's FP16/BF16 types (the same feeds run every
    backend and reference): a low input is widened by a Cast on entry (exact), a low output
    is the FP32-computed, already rounded value Cast back under its own name (exact)."""
    renames: dict[str, str] = {}
    entry = []
    for vi in graph.input:
        elem = vi.type.tensor_type.elem_type if vi.type.HasField("tensor_type") else 0
        if vi.name in initializers or elem not in _LOW:
            continue
        wide = names.tensor(f"{vi.name}__fp32")
        entry.append(helper.make_node("Cast", [vi.name], [wide], name=names.node(f"{vi.name}/Widen_fp32"),
                                      to=ELEM_FLOAT))
        types[vi.name], types[wide] = elem, ELEM_FLOAT
        origin[wide] = vi.name
        renames[vi.name] = wide
    exits = []
    for vi in graph.output:
        elem = vi.type.tensor_type.elem_type if vi.type.HasField("tensor_type") else 0
        if elem not in _LOW or vi.name in renames or vi.name in initializers:
            continue
        wide = names.tensor(f"{vi.name}__fp32")
        for node in graph.node:
            for slot, out in enumerate(node.output):
                if out == vi.name:
                    node.output[slot] = wide
        exits.append(helper.make_node("Cast", [wide], [vi.name], name=names.node(f"{vi.name}/Cast_to_output_type"),
                                      to=elem))
        types[wide], types[vi.name] = ELEM_FLOAT, elem
        origin[wide] = vi.name
        renames[vi.name] = wide
    if not renames:
        return
    for node in graph.node:
        for slot, name in enumerate(node.input):
            if name in renames:
                node.input[slot] = renames[name]
        rename_outer_refs(node, renames)
    nodes = entry + list(graph.node) + exits
    del graph.node[:]
    graph.node.extend(nodes)


def _widen_initializers(graph, types: dict[str, int]) -> None:
    for index, init in enumerate(graph.initializer):
        if init.data_type in _LOW and is_reference(init):
            # A reference to a weight set stays one: declared FP32, its stored FP16/BF16 values are
            # widened when bound (pytest_trt.realize.weight_sets), so the rounded FP32 copy is never stored.
            init.data_type = ELEM_FLOAT
            types[init.name] = ELEM_FLOAT
        elif init.data_type in _LOW:
            widened = numpy_helper.from_array(tensor_to_fp32(init), init.name)
            graph.initializer[index].CopyFrom(widened)
            types[init.name] = ELEM_FLOAT


def _set_meta(model, realization: str) -> None:
    meta = {p.key: p.value for p in model.metadata_props}
    meta[REALIZATION_KEY] = realization
    meta.setdefault(NOTES_KEY, json.dumps([]))
    meta.setdefault(PLAN_KEY, "")
    del model.metadata_props[:]
    for key, value in meta.items():
        prop = model.metadata_props.add()
        prop.key, prop.value = key, value


class _Names:
    """Fresh node and tensor names that collide with nothing in the graph."""

    def __init__(self, graph):
        self.tensors = all_tensor_names(graph)
        self.nodes = {n.name for n in graph.node}

    def tensor(self, base: str) -> str:
        return fresh_name(base, self.tensors)

    def node(self, base: str) -> str:
        return fresh_name(base, self.nodes)
