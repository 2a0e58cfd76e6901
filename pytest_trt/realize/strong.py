"""Strongly typed realization: the plan written into the ONNX graph as element types and Casts.

TensorRT 10.x with strong typing (the default from 10.0), 11.x and TensorRT-RTX build exactly the types the
graph states, so this is the realization that is honoured inside fused (Myelin)
regions. The algorithm is plan-driven and owned here (not onnxconverter-common, whose
``convert_float_to_float16`` breaks tied weights, clamps initializers at 1e4 and
mishandles Resize; see ARCHITECTURE.md):

1. float ``Constant`` nodes become initializers (so they are stored, not cast);
2. every node reads each input in the precision ``plan.node_io`` gives; where the
   stored precision differs one Cast per (tensor, precision) is inserted right before
   the first reader and reused by later readers;
3. compute nodes write their primary outputs in their planned precision (source
   ``Cast`` nodes to a float type get ``to`` = that precision);
4. float initializers are stored in the precision their readers need, one copy per
   precision (``W`` and ``W__fp16`` for a weight tied between FP32 and FP16 nodes);
   FP16 saturates at +-65504 and BF16 rounds to nearest even (and saturates);
5. graph inputs and outputs keep the model's types: an output computed in low
   precision is produced as ``<out>__fp16`` and Cast back under its own name;
6. value_info is rewritten for every main-graph tensor so the result passes
   ``onnx.checker.check_model(full_check=True)``.

Names of what is inserted: cast tensors ``<tensor>__cast_<p>``, their nodes
``<tensor>/Cast_to_<p>``, initializer copies ``<name>__<p>``, graph outputs computed
in low precision ``<out>__<p>`` with the Cast back ``<out>/Cast_to_fp32``. A name
that is taken gets ``_2``, ``_3``, ... appended.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ..core.dtypes import (
    ELEM_BFLOAT16,
    ELEM_FLOAT,
    ELEM_FLOAT16,
    ELEM_OF_PRECISION,
    FP16,
    FP32,
    PRECISION_OF_ELEM,
)
from ..model.weights import BF16_MAX, FP16_MAX, bf16_bits_to_fp32, round_to, to_bf16_bits, to_fp16  # noqa: F401  (re-exported: their home until issue 29)
from ..plan import COMPUTE
from .graph_names import all_tensor_names, fresh_name, rename_outer_refs
from .weight_sets import read_refs, ref_set, reference, write_refs

if TYPE_CHECKING:  # pragma: no cover
    from ..plan import PrecisionPlan

NOTES_KEY = "pytest_trt.notes"
REALIZATION_KEY = "pytest_trt.realization"
PLAN_KEY = "pytest_trt.plan"


@dataclass
class Realized:
    """A realized model plus what a derived realization needs to know about it.

    Attributes:
        model: the ONNX model.
        types: element type of every float tensor of the realized main graph.
        origin: ``{tensor: original tensor}`` for tensors the realization created
            (casts, copies, renamed outputs): the value they carry.
        notes: human-readable realization notes (clamped values, ...).
    """

    model: Any
    types: dict[str, int]
    origin: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def realize_strong(plan: PrecisionPlan) -> onnx.ModelProto:
    """The plan as a strongly typed ONNX model (Casts at precision boundaries).

    Graph inputs and outputs keep the model's types; the result passes
    ``onnx.checker.check_model(full_check=True)``. Notes (e.g. how many initializer
    values were clamped to the FP16 range) are in ``metadata_props``; read them with
    :func:`realization_notes`.
    """
    return build_strong(plan).model


def build_strong(plan: PrecisionPlan) -> Realized:
    """:func:`realize_strong` with the typing facts the emulation derives from."""
    return _StrongBuilder(plan).build()


def realization_notes(model) -> list[str]:
    """The notes a realization recorded in ``model.metadata_props`` (empty if none)."""
    for prop in model.metadata_props:
        if prop.key == NOTES_KEY:
            return list(json.loads(prop.value))
    return []


# --------------------------------------------------------------------------------------
# numeric conversion of stored values (the conversions live in pytest_trt.model.weights.convert)
# --------------------------------------------------------------------------------------
def is_reference(tensor) -> bool:
    """Whether a TensorProto is a reference to weights held outside the graph (external data)."""
    return tensor.HasField("data_location") and tensor.data_location == onnx.TensorProto.EXTERNAL


def tensor_to_fp32(tensor) -> np.ndarray:
    """Values of a float TensorProto (FP32/FP16/BF16) as FP32."""
    if tensor.data_type == ELEM_BFLOAT16:
        if tensor.raw_data:
            bits = np.frombuffer(tensor.raw_data, dtype="<u2")
        else:  # stored in int32_data, one value per element
            bits = np.asarray(tensor.int32_data, dtype=np.uint32).astype(np.uint16)
        return bf16_bits_to_fp32(bits).reshape(tuple(tensor.dims))
    return numpy_helper.to_array(tensor).astype(np.float32)


def convert_tensor(tensor, precision: str, name: str):
    """A float TensorProto converted to ``precision`` under ``name``; returns (tensor, clamped)."""
    values = tensor_to_fp32(tensor)
    dims = list(tensor.dims)
    if precision == FP32:
        return numpy_helper.from_array(values, name), 0
    if precision == FP16:
        half, clamped = to_fp16(values)
        return numpy_helper.from_array(half, name), clamped
    bits, clamped = to_bf16_bits(values)
    out = helper.make_tensor(name, ELEM_BFLOAT16, dims, bits.astype("<u2").tobytes(), raw=True)
    return out, clamped


# --------------------------------------------------------------------------------------
# graph surgery
# --------------------------------------------------------------------------------------
class _StrongBuilder:
    def __init__(self, plan: PrecisionPlan):
        self.plan = plan
        self.model = onnx.ModelProto()
        self.model.CopyFrom(plan.model.proto)
        self.graph = self.model.graph
        self.outputs = {o.name for o in self.graph.output}
        self.node_names = {n.name for n in self.graph.node}
        self.tensor_names = all_tensor_names(self.graph)
        # Tensors that exist before any node runs keep their types (constants are re-stored below).
        sources = [i.name for i in self.graph.input] + [s.values.name for s in self.graph.sparse_initializer]
        self.types: dict[str, int] = {
            name: plan.elem_types[name] for name in sources
            if plan.elem_types.get(name) in (ELEM_FLOAT, ELEM_FLOAT16, ELEM_BFLOAT16)
        }
        self.origin: dict[str, str] = {}
        self.casts: dict[tuple[str, str], str] = {}  # (tensor, precision) -> cast output
        self.copies: dict[tuple[str, str], str] = {}  # (initializer, precision) -> stored name
        self.internal: dict[str, str] = {}  # graph output -> name it is computed under
        self.initial_values: dict[str, Any] = {}  # constant -> TensorProto as written (or its index)
        self.clamped: dict[tuple[str, str], int] = {}
        self.new_nodes: list = []
        #: initializers that are references to the model's weights: ``{name: [source, set]}`` (pytest_trt.realize.weight_sets)
        self.refs: dict[str, list[str]] = read_refs(self.model)

    def build(self) -> Realized:
        folded = self._fold_constants()
        self._store_constants()
        for node in self.graph.node:
            if node.name in folded:
                continue
            self._realize_node(node)
        del self.graph.node[:]
        self.graph.node.extend(self.new_nodes)
        self._write_value_info()
        self._import_default_domain()
        notes = self._notes()
        self._write_metadata(notes)
        write_refs(self.model, self.refs)
        return Realized(self.model, self.types, self.origin, notes)

    # -- constants -------------------------------------------------------------------------
    def _fold_constants(self) -> set[str]:
        """Float Constant nodes -> initializers, so their values are stored per reader precision."""
        folded: set[str] = set()
        for node in self.graph.node:
            if node.op_type != "Constant" or not node.output or node.output[0] not in self.plan.constant_tensors:
                continue
            name = node.output[0]
            attr = next(a for a in node.attribute if a.name in ("value", "value_float", "value_floats"))
            if attr.name == "value":
                tensor = type(attr.t)()
                tensor.CopyFrom(attr.t)
                tensor.name = name
            elif attr.name == "value_float":
                tensor = helper.make_tensor(name, ELEM_FLOAT, [], [attr.f])
            else:
                tensor = helper.make_tensor(name, ELEM_FLOAT, [len(attr.floats)], list(attr.floats))
            self._add_initializer(tensor)
            folded.add(node.name)
        return folded

    def _store_constants(self) -> None:
        """Convert initializers whose readers all need another precision in place."""
        for index, init in enumerate(self.graph.initializer):
            if init.name not in self.plan.constant_tensors:
                continue
            target = self.plan.tensor_precision[init.name]
            self.types[init.name] = ELEM_OF_PRECISION[target]
            if PRECISION_OF_ELEM[init.data_type] == target:
                self.initial_values[init.name] = index  # copies are made from the graph's own tensor
                continue
            # Copies for other readers must come from the values as written, not from the converted ones.
            snapshot = type(init)()
            snapshot.CopyFrom(init)  # (a reference carries no bytes: a small copy)
            self.initial_values[init.name] = snapshot
            converted = self._converted(snapshot, target, init.name)
            self.graph.initializer[index].CopyFrom(converted)
            if self.model.ir_version < 4:  # its graph input entry (IR < 4 lists every initializer) follows
                for vi in self.graph.input:
                    if vi.name == init.name and vi.type.HasField("tensor_type"):
                        vi.type.tensor_type.elem_type = converted.data_type

    def _as_written(self, name: str):
        value = self.initial_values[name]
        return self.graph.initializer[value] if isinstance(value, int) else value

    def _constant_in(self, name: str, precision: str) -> str:
        if self.plan.tensor_precision[name] == precision:
            return name
        key = (name, precision)
        if key not in self.copies:
            copy_name = self._unique_tensor(f"{name}__{precision}")
            converted = self._converted(self._as_written(name), precision, copy_name)
            self._add_initializer(converted)
            self.types[copy_name] = ELEM_OF_PRECISION[precision]
            self.origin[copy_name] = name
            self.copies[key] = copy_name
        return self.copies[key]

    def _converted(self, tensor, precision: str, name: str):
        """``tensor`` (as written) in ``precision`` under ``name``: converted here when inline, else a
        reference into the model's ``precision`` weight set (converted once per model, shared)."""
        if is_reference(tensor):
            source = self.refs.get(tensor.name, [tensor.name])[0]
            ref = reference(self.plan.model, source, precision, name)
            self.refs[name] = [source, ref_set(self.plan.model, source, precision)]
            return ref
        converted, clamped = convert_tensor(tensor, precision, name)
        self._count_clamped(tensor.name, precision, clamped)
        return converted

    def _add_initializer(self, tensor) -> None:
        self.graph.initializer.append(tensor)
        self.tensor_names.add(tensor.name)
        if self.model.ir_version < 4:  # IR < 4: every initializer must also be a graph input
            self.graph.input.append(helper.make_tensor_value_info(tensor.name, tensor.data_type, list(tensor.dims)))

    def _count_clamped(self, name: str, precision: str, clamped: int) -> None:
        if clamped:
            self.clamped[(name, precision)] = self.clamped.get((name, precision), 0) + clamped

    # -- nodes -----------------------------------------------------------------------------
    def _realize_node(self, source) -> None:
        node = onnx.NodeProto()
        node.CopyFrom(source)
        io = self.plan.node_io[node.name]
        for slot, name in enumerate(node.input):
            want = io.inputs[slot] if slot < len(io.inputs) else None
            node.input[slot] = self._read(name, want)
        renames = {name: self._read(name, want) for name, want in io.implicit}
        renames = {old: new for old, new in renames.items() if old != new}
        if renames:
            rename_outer_refs(node, renames)
        decision = self.plan.nodes[node.name]
        if decision.kind == COMPUTE and node.op_type == "Cast" and io.outputs and io.outputs[0]:
            _set_int_attr(node, "to", ELEM_OF_PRECISION[io.outputs[0]])
        cast_back = []
        for slot, out in enumerate(node.output):
            precision = io.outputs[slot] if slot < len(io.outputs) else None
            if not out or precision is None:
                continue
            elem = ELEM_OF_PRECISION[precision]
            if out in self.outputs and elem != self.plan.elem_types[out]:
                internal = self._unique_tensor(f"{out}__{precision}")
                node.output[slot] = internal
                self.internal[out] = internal
                self.origin[internal] = out
                self.types[internal] = elem
                cast_back.append((internal, out))
            else:
                self.types[out] = elem
        self.new_nodes.append(node)
        for internal, out in cast_back:
            # Graph outputs keep the model's type: compute in low precision, Cast back.
            original = PRECISION_OF_ELEM[self.plan.elem_types[out]]
            self._emit_cast(internal, original, out, node_base=f"{out}/Cast_to_{original}")
            self.casts[(internal, original)] = out
            self.types[out] = self.plan.elem_types[out]

    def _read(self, name: str, want: str | None) -> str:
        """The name under which ``name`` is available in precision ``want`` (inserting a Cast if needed)."""
        if not name or want is None:
            return name
        if name in self.plan.constant_tensors:
            return self._constant_in(name, want)
        source = self.internal.get(name, name)
        if PRECISION_OF_ELEM.get(self.types.get(source, 0)) == want:
            return source
        key = (source, want)
        if key not in self.casts:
            self.casts[key] = self._emit_cast(source, want, self._unique_tensor(f"{source}__cast_{want}"))
        return self.casts[key]

    def _emit_cast(self, source: str, precision: str, output: str, node_base: str | None = None) -> str:
        node_name = self._unique_node(node_base or f"{source}/Cast_to_{precision}")
        self.new_nodes.append(helper.make_node("Cast", [source], [output], name=node_name,
                                               to=ELEM_OF_PRECISION[precision]))
        self.types[output] = ELEM_OF_PRECISION[precision]
        self.origin.setdefault(output, self.origin.get(source, source))
        return output

    # -- names -----------------------------------------------------------------------------
    def _unique_tensor(self, base: str) -> str:
        return fresh_name(base, self.tensor_names)

    def _unique_node(self, base: str) -> str:
        return fresh_name(base, self.node_names)

    # -- bookkeeping -----------------------------------------------------------------------
    def _write_value_info(self) -> None:
        write_value_info(self.graph, self.types, self.plan.value_info, self.origin)

    def _import_default_domain(self) -> None:
        """Inserted Casts are default-domain ops: a model that imports only ``ai.onnx.ml`` (or
        another domain) gets the default-domain opset of its IR version (at least 13 for bf16)."""
        if any(imp.domain in ("", "ai.onnx") for imp in self.model.opset_import):
            return
        if not any(n.op_type == "Cast" and n.domain in ("", "ai.onnx") for n in self.graph.node):
            return
        ir = self.model.ir_version
        versions = [row[2] for row in helper.VERSION_TABLE if row[1] <= ir] or [1]
        version = max(versions)
        if any(t == ELEM_BFLOAT16 for t in self.types.values()):
            version = max(version, 13)
            self.model.ir_version = max(ir, 7)
        self.model.opset_import.append(helper.make_opsetid("", version))

    def _notes(self) -> list[str]:
        notes = []
        for (name, precision), count in sorted(self.clamped.items()):
            limit = "65504" if precision == FP16 else f"{BF16_MAX:.4g}"
            notes.append(f"initializer {name!r}: {count} value(s) outside the {precision} range were "
                         f"clamped to +-{limit} (inf and NaN are kept)")
        return notes

    def _write_metadata(self, notes: list[str]) -> None:
        meta = {p.key: p.value for p in self.model.metadata_props}
        meta[REALIZATION_KEY] = "strong"
        meta[PLAN_KEY] = self.plan.fingerprint()
        meta[NOTES_KEY] = json.dumps(notes)
        del self.model.metadata_props[:]
        for key, value in meta.items():
            prop = self.model.metadata_props.add()
            prop.key, prop.value = key, value


def write_value_info(graph, types: dict[str, int], inferred: dict[str, Any], origin: dict[str, str]) -> None:
    """Rewrite ``graph.value_info``: every node output with its realized type and inferred shape."""
    io_names = {i.name for i in graph.input} | {o.name for o in graph.output}
    entries = []
    seen: set[str] = set()
    for node in graph.node:
        for out in node.output:
            if not out or out in io_names or out in seen:
                continue
            seen.add(out)
            template = inferred.get(out) or inferred.get(origin.get(out, ""))
            if out in types:
                vi = onnx.ValueInfoProto()
                if template is not None and template.type.HasField("tensor_type"):
                    vi.type.CopyFrom(template.type)
                vi.name = out
                vi.type.tensor_type.elem_type = types[out]
                entries.append(vi)
            elif template is not None and template.name == out:
                entries.append(template)
    del graph.value_info[:]
    graph.value_info.extend(entries)


def _set_int_attr(node, name: str, value: int) -> None:
    for attr in node.attribute:
        if attr.name == name:
            attr.i = value
            return
    node.attribute.append(helper.make_attribute(name, value))
