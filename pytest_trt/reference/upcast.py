"""The FP32 reference of a model that arrives with its own precision.

A mixed FP16/FP32 export (torch autocast, ModelOpt AutoCast, onnxconverter-common) or an
explicitly quantized (Q/DQ) model has no FP32 original next to it. Two references can
be computed from it, both on ONNX Runtime CPU, and a test picks one with
``@pytest.mark.trt(baseline=...)`` (``pytest-trt compare --baseline ...``):

``baseline="fp32"`` (the default): **the model upcast to FP32** (:func:`upcast_to_fp32`)
    * low-precision initializers and Constants are widened to FP32 (exact: every FP16 or
      BF16 value is an FP32 value);
    * a Cast to FP16/BF16 of a float tensor becomes ``Identity`` (a Cast of an integer
      tensor becomes a Cast to FP32); a Cast from FP16/BF16 to FP32 becomes ``Identity``;
      ops whose attribute picks a low output type (ConstantOfShape, EyeLike, Random*,
      DequantizeLinear ``output_dtype``) are set to FP32;
    * graph inputs keep their types (the same feeds run both references), followed by a
      Cast to FP32 when low; graph outputs become FP32; value_info is rewritten; the
      result passes ``onnx.checker.check_model(full_check=True)``;
    * **Q/DQ models**: fake quantization is removed, so ``fp32`` is the *unquantized*
      model: a QuantizeLinear -> DequantizeLinear pair becomes ``Identity`` of the
      QuantizeLinear's input, and a DequantizeLinear of a quantized initializer (a
      weight stored in INT8) becomes an FP32 initializer holding the dequantized values.
      The FP32 weights such a model was quantized from are not in the file, so those
      weights keep their rounding: the reference is "FP32 activations, the model's
      weights". Everything else (a Q/DQ on a graph input or output, block quantization)
      stays as written and is listed in the notes.

    It answers "how far is the engine from what the network computes in FP32?": the
    total cost of the model's low-precision and quantization choices plus the engine's.
    Node and tensor names are kept (Casts and Q/DQ nodes become ``Identity`` under their
    own names), so layerwise comparison maps tensor by tensor.

``baseline="as-written"``: **ONNX Runtime on the model as written** (for Q/DQ models:
the fake-quant reference, Q/DQ executed exactly). It answers "does the engine compute
what the model says?", isolating the engine's own error from the model's choices.
Caveat: ONNX Runtime's CPU provider has few FP16 kernels and runs most FP16 nodes in
FP32 between Casts it inserts itself, dropping rounding steps the model implies
(ARCHITECTURE.md: an FP16 LayerNorm showed error 0.0). So on CPU "as-written" is
*not* bit-exact FP16 math: it usually sits between the FP32 reference and true FP16.

Which to use when:

* an FP32 source model (the usual case, a precision policy applied by pytest-trt): the
  two are the same model; keep the default ``fp32``;
* a mixed FP16/FP32 model tested ``as_is``: ``as-written`` with FP16 tolerances to check
  the engine honours the model (tight); ``fp32`` with looser tolerances to bound the
  model's total FP16 error (does its FP32 island do its job?);
* a Q/DQ model: ``as-written`` to check the engine's INT8 kernels reproduce the
  fake-quant math (tolerance: about one quantization step of the output); ``fp32`` to
  measure the quantization loss against the unquantized network (tolerances in the
  range of the quantization error, typically 1e-2 relative or more).

Both references are cached like the FP32 baseline (:mod:`pytest_trt.reference.baseline`).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ..core import runstate
from ..core.dtypes import ELEM_BFLOAT16, ELEM_FLOAT, ELEM_FLOAT16, FLOAT_ELEM_TYPES
from ..model.load import Model, derived_model, load_model
from ..model.onnx_typing import infer_types
from ..realize.graph_names import all_tensor_names, fresh_name, rename_outer_refs
from ..realize.strong import REALIZATION_KEY, is_reference, tensor_to_fp32
from ..realize.widen import widen_attribute_types, widened_tensor

# Bump when the transformation changes (the upcast model's hash is its cache key anyway).
UPCAST_VERSION = 1
NOTES_KEY = "pytest_trt.upcast.notes"
REFERENCE_KEY = "pytest_trt.reference"

_LOW = (ELEM_FLOAT16, ELEM_BFLOAT16)
# Run-wide memo tables (pytest_trt.core.runstate): one per pytest session, reset() outside pytest.
_MODELS_TABLE = "upcast.reference_models"  # (sha256, remove_qdq, version) -> Model, LRU
_MAX_MODELS = 8
_NEEDS_TABLE = "upcast.needs_upcast"  # sha256 -> bool


def needs_upcast(model) -> bool:
    """True when the FP32 reference differs from the model: some tensor is FP16/BF16
    (stored, cast to, or produced) or the model has Q/DQ nodes."""
    model = load_model(model)
    known: dict[str, bool] = runstate.current().table(_NEEDS_TABLE)
    if model.sha256 in known:  # type inference is not free on large models: once per content
        return known[model.sha256]
    if any(n.op_type in ("QuantizeLinear", "DequantizeLinear") for n in _all_nodes(model.graph)):
        answer = True
    else:
        _, elem_types, _ = infer_types(model)
        answer = any(e in _LOW for e in elem_types.values()) or any(_mentions_low(n) for n in _all_nodes(model.graph))
    known[model.sha256] = answer
    return answer


def _mentions_low(node) -> bool:
    for attr in node.attribute:
        if attr.type == 2 and attr.name in ("to", "dtype", "output_dtype") and attr.i in _LOW:  # INT
            return True
        if attr.type == 4 and attr.t.data_type in _LOW:  # TENSOR
            return True
    return False


def _all_nodes(graph):
    for node in graph.node:
        yield node
        for attr in node.attribute:
            if attr.type == 5:
                yield from _all_nodes(attr.g)
            elif attr.type == 10:
                for sub in attr.graphs:
                    yield from _all_nodes(sub)


def upcast_notes(proto) -> list[str]:
    """What :func:`upcast_to_fp32` did to ``proto`` (from its metadata), empty if not an upcast."""
    for prop in proto.metadata_props:
        if prop.key == NOTES_KEY:
            return list(json.loads(prop.value))
    return []


def upcast_to_fp32(model, *, remove_qdq: bool = True) -> onnx.ModelProto:
    """The model computed in FP32: the ``fp32`` reference of a mixed or quantized model.

    ``remove_qdq=False`` keeps Q/DQ as written ("the fake-quant model in FP32"). The
    result passes ``onnx.checker.check_model(full_check=True)``; what was changed is in
    :func:`upcast_notes`. See the module docstring for the exact rules.
    """
    model = load_model(model)
    return _Upcast(model, remove_qdq).run()


def fp32_reference_model(model, *, remove_qdq: bool = True) -> Model:
    """The upcast model as a :class:`~pytest_trt.model.load.Model` (the model itself when
    nothing needs upcasting), memoized per model hash."""
    model = load_model(model)
    key = (model.sha256, remove_qdq, UPCAST_VERSION)
    state = runstate.current()
    cache: OrderedDict = state.table(_MODELS_TABLE, OrderedDict)
    with state.lock():
        if key in cache:
            cache.move_to_end(key)
            return cache[key]
    if not needs_upcast(model):
        # Not memoized: another Model with the same content may carry another path/label.
        return model
    proto = upcast_to_fp32(model, remove_qdq=remove_qdq)
    # An in-memory Model is labelled by its graph name: say what it is in messages.
    label = f"{model.label} upcast to FP32{' (Q/DQ removed)' if remove_qdq else ''}"
    if model.has_external_weights:  # its references still name the model's weights: share its store
        result = derived_model(proto, model, label)
    else:
        proto.graph.name = label
        result = load_model(proto)
    with state.lock():
        cache[key] = result
        while len(cache) > _MAX_MODELS:
            cache.popitem(last=False)
    return result


class _Upcast:
    """The upcast of one model: a copy of its proto rewritten step by step (see :func:`upcast_to_fp32`)."""

    def __init__(self, model: Model, remove_qdq: bool):
        self.source = model
        self.remove_qdq = remove_qdq
        self.proto = onnx.ModelProto()
        self.proto.CopyFrom(model.proto)
        _, self.elem_types, self.infos = infer_types(model)
        self.notes: list[str] = []
        self.counts: dict[str, int] = {}
        self.names = all_tensor_names(self.proto.graph)
        self._node_names: set[str] | None = None

    def _value(self, tensor) -> Any:
        """Values of an initializer of the model: through its weight store when a reference."""
        if is_reference(tensor):
            return self.source.weights.array(tensor.name)
        return tensor_to_fp32(tensor) if tensor.data_type in _LOW else numpy_helper.to_array(tensor)

    def _count(self, what: str) -> None:
        self.counts[what] = self.counts.get(what, 0) + 1

    def _fresh(self, base: str) -> str:
        return fresh_name(base, self.names)

    def run(self):
        graph = self.proto.graph
        self._upcast_graph(graph, main=True)
        self._upcast_inputs(graph)  # after: its entry Casts must stay Casts
        if self.remove_qdq:
            self._remove_qdq(graph)
        self._finish(graph)
        return self.proto

    # -- graph inputs: keep their types (same feeds), widen right after -------------------
    def _upcast_inputs(self, graph) -> None:
        inits = {i.name for i in graph.initializer}
        renames: dict[str, str] = {}
        casts = []
        for vi in graph.input:
            elem = vi.type.tensor_type.elem_type if vi.type.HasField("tensor_type") else 0
            if elem not in _LOW or vi.name in inits:
                continue
            wide = self._fresh(f"{vi.name}__fp32")
            casts.append(helper.make_node("Cast", [vi.name], [wide], name=self._fresh_node(f"{vi.name}/Upcast"),
                                          to=ELEM_FLOAT))
            renames[vi.name] = wide
            self._count("low-precision graph inputs cast to FP32 on entry")
        if renames:
            for node in graph.node:
                for slot, name in enumerate(node.input):
                    if name in renames:
                        node.input[slot] = renames[name]
                rename_outer_refs(node, renames)
            nodes = list(graph.node)
            del graph.node[:]
            graph.node.extend(casts + nodes)

    def _fresh_node(self, base: str) -> str:
        if self._node_names is None:
            self._node_names = {n.name for n in _all_nodes(self.proto.graph)}
        return fresh_name(base, self._node_names)

    # -- every graph: initializers, Constants, Casts, attribute types, value_info ----------
    def _upcast_graph(self, graph, *, main: bool) -> None:
        for index, init in enumerate(graph.initializer):
            if init.data_type in _LOW and is_reference(init):
                # a reference to the model's weights stays one, declared FP32: widened when bound
                # (pytest_trt.realize.weight_sets), never copied here
                init.data_type = ELEM_FLOAT
                self._count("low-precision initializers widened to FP32")
            elif init.data_type in _LOW:
                graph.initializer[index].CopyFrom(widened_tensor(init, init.name))
                self._count("low-precision initializers widened to FP32")
        for sparse in graph.sparse_initializer:
            if sparse.values.data_type in _LOW:
                sparse.values.CopyFrom(widened_tensor(sparse.values, sparse.values.name))
                self._count("low-precision initializers widened to FP32")
        for node in graph.node:
            self._upcast_node(node)
            for attr in node.attribute:
                if attr.type == 5:
                    self._upcast_graph(attr.g, main=False)
                elif attr.type == 10:
                    for sub in attr.graphs:
                        self._upcast_graph(sub, main=False)
        if not main:
            for vi in (*graph.input, *graph.output):
                _widen_value_info(vi)

    def _upcast_node(self, node) -> None:
        if node.domain not in ("", "ai.onnx"):
            return
        if node.op_type == "Cast":
            to = next((a.i for a in node.attribute if a.name == "to"), None)
            source = self.elem_types.get(node.input[0]) if node.input else None
            if to in _LOW or (to == ELEM_FLOAT and source in _LOW):
                if source in FLOAT_ELEM_TYPES - {11} or source is None and to == ELEM_FLOAT:
                    identity = helper.make_node("Identity", list(node.input), list(node.output), name=node.name)
                    node.CopyFrom(identity)
                    self._count("Casts between float types made Identity")
                else:
                    for attr in node.attribute:
                        if attr.name == "to":
                            attr.i = ELEM_FLOAT
                    self._count("Casts to FP16/BF16 made Casts to FP32")
            return
        if node.op_type == "Constant":
            for attr in node.attribute:
                if attr.name == "value" and attr.t.data_type in _LOW:
                    attr.t.CopyFrom(widened_tensor(attr.t, attr.t.name))
                    self._count("low-precision Constants widened to FP32")
            return
        if widen_attribute_types(node):
            self._count(f"{node.op_type} output types set to FP32")

    # -- Q/DQ -> the unquantized model ----------------------------------------------------
    def _remove_qdq(self, graph) -> None:
        qdq = _QdqGraph(graph)
        kept: list[str] = []
        removed_q: set[str] = set()
        new_inits: list[onnx.TensorProto] = []
        for node in graph.node:
            if node.domain not in ("", "ai.onnx") or node.op_type != "DequantizeLinear":
                continue
            source = node.input[0]
            q = qdq.producers.get(source)
            if q is not None and q.op_type == "QuantizeLinear" and q.domain in ("", "ai.onnx"):
                reason = self._pair_to_identity(node, q, qdq)
                if reason is None:
                    removed_q.add(q.name)
            elif source in qdq.inits and source not in qdq.graph_inputs:
                reason = self._dequantize_initializer(node, qdq, new_inits)
            else:
                reason = f"{node.name!r} (reads {source!r}, not a QuantizeLinear or an initializer)"
            if reason is not None:
                kept.append(reason)
        if removed_q:
            nodes = [n for n in graph.node if n.name not in removed_q]
            del graph.node[:]
            graph.node.extend(nodes)
        graph.initializer.extend(new_inits)
        _drop_unused_initializers(graph, qdq)
        if kept:
            self.notes.append("Q/DQ kept as written: " + "; ".join(kept))

    def _pair_to_identity(self, node, q, qdq: _QdqGraph) -> str | None:
        """DequantizeLinear(QuantizeLinear(x)) -> Identity(x); the reason it stays, or None."""
        source = node.input[0]
        readers = qdq.consumers.get(source, [])
        if source in qdq.outputs or any(r.op_type != "DequantizeLinear" for r in readers):
            return f"{node.name!r} (its QuantizeLinear {q.name!r} has other readers)"
        node.CopyFrom(helper.make_node("Identity", [q.input[0]], list(node.output), name=node.name))
        self._count("Q/DQ pairs removed (DequantizeLinear made Identity of the QuantizeLinear input)")
        return None

    def _dequantize_initializer(self, node, qdq: _QdqGraph, new_inits: list) -> str | None:
        """DequantizeLinear(quantized weight) -> Identity(FP32 weight); the reason it stays, or None."""
        values = _dequantize(node, qdq.inits, self._value)
        if values is None:
            return f"{node.name!r} (block or unsupported quantization)"
        name = self._fresh(f"{node.output[0]}__dequantized")
        new_inits.append(numpy_helper.from_array(values, name))
        node.CopyFrom(helper.make_node("Identity", [name], list(node.output), name=node.name))
        self._count("quantized initializers dequantized into FP32 initializers")
        return None

    # -- value_info, outputs, metadata ----------------------------------------------------
    def _finish(self, graph) -> None:
        for vi in graph.output:
            if _widen_value_info(vi):
                self._count("low-precision graph outputs made FP32")
        self._rewrite_value_info(graph)
        self.notes[:0] = [f"{count} {what}" for what, count in self.counts.items()]
        meta = {p.key: p.value for p in self.proto.metadata_props}
        meta[REFERENCE_KEY] = "fp32-upcast" + ("" if self.remove_qdq else " (Q/DQ kept)")
        meta[NOTES_KEY] = json.dumps(self.notes)
        meta.pop(REALIZATION_KEY, None)
        del self.proto.metadata_props[:]
        for key, value in meta.items():
            prop = self.proto.metadata_props.add()
            prop.key, prop.value = key, value

    def _rewrite_value_info(self, graph) -> None:
        """value_info from the source's inference, every float type as FP32, only for tensors
        that still exist (removed Q outputs go)."""
        produced = {o for n in graph.node for o in n.output if o}
        io = {i.name for i in graph.input} | {o.name for o in graph.output}
        entries = []
        for node in graph.node:
            for out in node.output:
                if not out or out in io:
                    continue
                template = self.infos.get(out)
                if template is None or not template.type.HasField("tensor_type"):
                    continue
                vi = type(template)()
                vi.CopyFrom(template)
                if vi.type.tensor_type.elem_type in _LOW:
                    vi.type.tensor_type.elem_type = ELEM_FLOAT
                entries.append(vi)
        del graph.value_info[:]
        graph.value_info.extend(e for e in entries if e.name in produced)


class _QdqGraph:
    """Who produces and reads what in a graph, taken before Q/DQ nodes are rewritten."""

    def __init__(self, graph) -> None:
        self.producers = {o: n for n in graph.node for o in n.output if o}
        self.consumers: dict[str, list] = {}
        for n in graph.node:
            for i in n.input:
                self.consumers.setdefault(i, []).append(n)
        self.outputs = {o.name for o in graph.output}
        self.inits = {i.name: i for i in graph.initializer}
        self.graph_inputs = {i.name for i in graph.input}


def _drop_unused_initializers(graph, qdq: _QdqGraph) -> None:
    """Initializers nobody reads any more (quantized weights, scales, zero points)."""
    used = {i for n in _all_nodes(graph) for i in n.input} | qdq.outputs
    unused = [i for i in graph.initializer if i.name not in used and i.name not in qdq.graph_inputs]
    if unused:
        keep = [i for i in graph.initializer if i.name in used or i.name in qdq.graph_inputs]
        del graph.initializer[:]
        graph.initializer.extend(keep)


def _widen_value_info(vi) -> bool:
    if vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type in _LOW:
        vi.type.tensor_type.elem_type = ELEM_FLOAT
        return True
    return False


def _dequantize(node, inits, value) -> Any:
    """FP32 values of DequantizeLinear over an initializer (per-tensor or per-axis), None otherwise.

    ``value(tensor)``: the values of an initializer (through the model's weight store)."""
    attrs = {a.name: a for a in node.attribute}
    if attrs.get("block_size") is not None and attrs["block_size"].i:
        return None
    if len(node.input) < 2 or node.input[1] not in inits:
        return None
    try:
        q = np.asarray(value(inits[node.input[0]])).astype(np.float32)
    except Exception:  # INT4 / FP8 storage numpy cannot widen here
        return None
    scale = np.asarray(value(inits[node.input[1]])).astype(np.float32)
    zero = np.zeros_like(scale)
    if len(node.input) > 2 and node.input[2]:
        if node.input[2] not in inits:
            return None
        zero = np.asarray(value(inits[node.input[2]])).astype(np.float32)
    if scale.size > 1:
        axis = attrs["axis"].i if "axis" in attrs else 1
        axis = axis + q.ndim if axis < 0 else axis
        shape = [1] * q.ndim
        shape[axis] = scale.size
        scale, zero = scale.reshape(shape), zero.reshape(shape)
    return ((q - zero) * scale).astype(np.float32)


__all__ = ["upcast_to_fp32", "fp32_reference_model", "needs_upcast", "upcast_notes", "widen_attribute_types"]
