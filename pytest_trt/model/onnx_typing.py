"""ONNX typing facts of a model: inferred element types and what op schemas allow.

The stage between loading a model and planning it: :func:`infer_types` runs ONNX type
inference on a weight-less skeleton of the model, and :class:`GraphContext` holds what
every later step asks about the main graph (each node's schema at the model's opset,
the element type of each tensor, its inferred shape, the float constants, the
outer-scope tensors control-flow subgraphs read). The schema queries (:func:`formal`,
:func:`allowed_types`, :func:`is_type_var`, :func:`primary_type_var`, ...) say which
types an op's inputs and outputs may take. The plan (:mod:`pytest_trt.plan`), the
baseline's checks and the FP32 upcast (:mod:`pytest_trt.reference.upcast`) build on them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import onnx

from ..core.dtypes import ELEM_DOUBLE, FLOAT_ELEM_TYPES, PRECISION_OF_ELEM
from ..errors import ModelError

if TYPE_CHECKING:  # pragma: no cover
    from .load import Model

#: ONNX type strings of the float tensor types -> element type.
ELEM_OF_TYPE_STR = {"tensor(float)": 1, "tensor(float16)": 10, "tensor(double)": 11, "tensor(bfloat16)": 16}
#: precision name -> ONNX type string.
TYPE_STR_OF_PRECISION = {"fp32": "tensor(float)", "fp16": "tensor(float16)", "bf16": "tensor(bfloat16)"}
#: float element type -> the name ONNX type strings use (``tensor(float16)``).
TYPE_NAME = {1: "float", 10: "float16", 11: "double", 16: "bfloat16"}

_GRAPH, _GRAPHS = 5, 10  # onnx.AttributeProto.GRAPH / GRAPHS


# --------------------------------------------------------------------------------------
# type inference
# --------------------------------------------------------------------------------------
def infer_types(model: Model) -> tuple[set[str], dict[str, int], dict[str, Any]]:
    """Run ONNX type inference on a weight-less skeleton of the model.

    Returns the names of all typed tensors, ``{name: elem_type}`` for tensor-typed ones,
    and ``{name: ValueInfoProto}`` of the main graph. Big float initializers are replaced
    by typed graph inputs so neither the 2 GB protobuf limit nor copying weights matters.
    """
    skeleton = _skeleton(model.proto)
    try:
        inferred = onnx.shape_inference.infer_shapes(skeleton, check_type=False, strict_mode=False)
    except Exception as exc:  # inference itself failed, e.g. on malformed attributes
        raise ModelError(f"{model.label}: ONNX shape inference failed: {exc}. Fix or re-export the model.") from exc
    g = inferred.graph
    infos: dict[str, Any] = {}
    for vi in (*g.input, *g.value_info, *g.output):
        infos.setdefault(vi.name, vi)
    for init in model.proto.graph.initializer:
        infos[init.name] = onnx.helper.make_tensor_value_info(init.name, init.data_type, list(init.dims))
    for sparse in model.proto.graph.sparse_initializer:
        infos[sparse.values.name] = onnx.helper.make_tensor_value_info(
            sparse.values.name, sparse.values.data_type, list(sparse.dims))
    elem_types = {}
    known = set()
    for name, vi in infos.items():
        if vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type:
            elem_types[name] = vi.type.tensor_type.elem_type
            known.add(name)
        elif vi.type.WhichOneof("value") is not None and not vi.type.HasField("tensor_type"):
            known.add(name)  # sequences, optionals, maps: typed, not tensors
    return known, elem_types, infos


def _skeleton(proto: onnx.ModelProto) -> onnx.ModelProto:
    skel = onnx.ModelProto()
    skel.ir_version = proto.ir_version
    skel.opset_import.extend(proto.opset_import)
    skel.functions.extend(proto.functions)
    g, src = skel.graph, proto.graph
    g.name = src.name
    g.node.extend(src.node)
    g.input.extend(src.input)
    g.output.extend(src.output)
    g.value_info.extend(src.value_info)
    g.sparse_initializer.extend(src.sparse_initializer)
    listed = {i.name for i in src.input}
    for init in src.initializer:
        # Small tensors stay: shape inference reads values of shape-like inputs (Reshape).
        if init.data_type not in FLOAT_ELEM_TYPES or _numel(init.dims) <= 64:
            g.initializer.append(init)
        elif init.name not in listed:
            g.input.append(onnx.helper.make_tensor_value_info(init.name, init.data_type, list(init.dims)))
    return skel


def _numel(dims) -> int:
    n = 1
    for d in dims:
        n *= int(d)
    return n


# --------------------------------------------------------------------------------------
# the main graph's facts
# --------------------------------------------------------------------------------------
class GraphContext:
    """Facts about the main graph every planning step needs (see :func:`graph_context`)."""

    def __init__(self, model: Model, known: set[str], elem_types: dict[str, int], infos: dict | None = None):
        self.model = model
        self.infos = infos or {}
        self.graph = model.proto.graph
        self.known = known
        self.elem_types = elem_types
        self.inputs = [i.name for i in self.graph.input]
        self.outputs = [o.name for o in self.graph.output]
        self.output_set = set(self.outputs)
        self.initializers = {i.name for i in self.graph.initializer}
        # Tensors that exist before any node runs and are not constants the realization
        # may re-store: graph inputs (an initializer listed as input may be fed by the
        # user) and sparse initializers. Readers get Casts, not copies.
        self.sources = list(dict.fromkeys(
            [*self.inputs, *(s.values.name for s in self.graph.sparse_initializer)]))
        self.opsets = {imp.domain or "": int(imp.version) for imp in model.proto.opset_import}
        if "ai.onnx" in self.opsets:
            self.opsets.setdefault("", self.opsets["ai.onnx"])
        self.schemas = {node.name: self._schema(node) for node in self.graph.node}
        self.constants = self._constant_tensors()
        self.outer_refs = {node.name: outer_refs(node) for node in self.graph.node if has_subgraph(node)}

    # schemas ------------------------------------------------------------------------------
    def opset_of(self, node) -> int:
        """The opset the model imports for the node's domain (1 when it imports none)."""
        return self.opsets.get(domain_of(node), 1)

    def _schema(self, node) -> Any:
        domain = domain_of(node)
        if domain not in self.opsets:
            return None
        try:
            return onnx.defs.get_schema(node.op_type, self.opsets[domain], domain)
        except onnx.defs.SchemaError:
            return None

    # tensor facts -------------------------------------------------------------------------
    def is_float(self, name: str) -> bool:
        """Whether ``name`` is a float tensor (FP32/FP16/BF16/DOUBLE)."""
        return bool(name) and self.elem_types.get(name) in FLOAT_ELEM_TYPES

    def original(self, name: str) -> str:
        """The precision the model stores float tensor ``name`` in."""
        return PRECISION_OF_ELEM[self.elem_types[name]]

    def is_container(self, name: str) -> bool:
        """A sequence, optional or map value (not a tensor)."""
        vi = self.infos.get(name)
        return vi is not None and vi.type.WhichOneof("value") not in (None, "tensor_type", "sparse_tensor_type")

    def shape(self, name: str) -> tuple | None:
        """Inferred shape of a tensor (ints, symbolic dims as None), None when unknown."""
        vi = self.infos.get(name)
        if vi is None or not vi.type.HasField("tensor_type") or not vi.type.tensor_type.HasField("shape"):
            return None
        return tuple(d.dim_value if d.HasField("dim_value") else None for d in vi.type.tensor_type.shape.dim)

    def _constant_tensors(self) -> set[str]:
        """Float tensors whose values are known before running: initializers and float Constants.

        Realizations store them in the type each consumer reads instead of casting at run time.
        An initializer that is also a graph input is a default the user may override: not a constant.
        """
        inputs = set(self.inputs)
        consts = {n for n in self.initializers if self.is_float(n) and n not in inputs}
        for node in self.graph.node:
            if (node.op_type == "Constant" and domain_of(node) == "" and node.output
                    and self.is_float(node.output[0]) and node.output[0] not in self.output_set
                    and constant_attr(node) is not None):
                consts.add(node.output[0])
        return consts

    def check_types(self) -> None:
        """Every float tensor needs a known type; DOUBLE is not supported."""
        for name in (*self.inputs, *self.initializers):
            self._reject_double(name, None)
        for node in self.graph.node:
            for index, out in enumerate(node.output):
                if not out:
                    continue
                if out not in self.known:
                    self._type_from_schema(node, index)
                if out not in self.known and self._may_be_float(node, index):
                    raise ModelError(
                        f"{self.model.label}: cannot infer the element type of tensor {out!r} "
                        f"(output {index} of node {node.name!r}, op {qualified(node)}); pytest-trt must know "
                        f"every float tensor's type to place Casts. Add the tensor's type to the model's "
                        f"value_info or re-export the model with shape inference."
                    )
                self._reject_double(out, node)

    def _type_from_schema(self, node, index: int) -> None:
        """Type an output ONNX inference left untyped when the schema binds it to a typed
        input's variable (Dropout's ``mask`` at opset <= 9 is ``T``, like ``data``)."""
        schema = self.schemas[node.name]
        if schema is None:
            return
        out_formal = formal(schema.outputs, index)
        if out_formal is None or not is_type_var(schema, out_formal.type_str):
            return
        for slot, name in enumerate(node.input):
            f = formal(schema.inputs, slot)
            if name and f is not None and f.type_str == out_formal.type_str and name in self.elem_types:
                out = node.output[index]
                self.elem_types[out] = self.elem_types[name]
                self.known.add(out)
                self.infos[out] = onnx.helper.make_tensor_value_info(out, self.elem_types[name], None)
                return

    def _may_be_float(self, node, index: int) -> bool:
        schema = self.schemas[node.name]
        if schema is None:
            return True
        out_formal = formal(schema.outputs, index)
        if out_formal is None:
            return True
        allowed = allowed_types(schema, out_formal.type_str)
        return any(t in ELEM_OF_TYPE_STR for t in allowed)

    def _reject_double(self, name: str, node) -> None:
        if self.elem_types.get(name) == ELEM_DOUBLE:
            where = f" (output of node {node.name!r}, op {node.op_type})" if node is not None else ""
            raise ModelError(
                f"{self.model.label}: tensor {name!r}{where} is DOUBLE; pytest-trt plans FP32 models "
                f"(TensorRT has no FP64 compute). Export the model in float32."
            )


def graph_context(model: Model) -> GraphContext:
    """:func:`infer_types` of ``model`` wrapped in a :class:`GraphContext` (types not yet checked)."""
    known, elem_types, value_info = infer_types(model)
    return GraphContext(model, known, elem_types, value_info)


# --------------------------------------------------------------------------------------
# nodes
# --------------------------------------------------------------------------------------
def domain_of(node) -> str:
    """The node's domain, with the default domain (``""`` or ``ai.onnx``) as ``""``."""
    return "" if node.domain in ("", "ai.onnx") else node.domain


def qualified(node) -> str:
    """The op type as messages show it: ``Softmax``, ``com.microsoft::Attention``."""
    domain = domain_of(node)
    return f"{domain}::{node.op_type}" if domain else node.op_type


def constant_attr(node) -> Any:
    """The float value attribute of a Constant node (value / value_float / value_floats), else None."""
    for attr in node.attribute:
        if attr.name in ("value", "value_float", "value_floats"):
            return attr
    return None


def has_subgraph(node) -> bool:
    """Whether the node carries subgraphs (If, Loop, Scan, ...)."""
    return any(a.type in (_GRAPH, _GRAPHS) for a in node.attribute)


def subgraphs(node) -> Iterator[Any]:
    """The node's subgraphs (GraphProto), in attribute order."""
    for attr in node.attribute:
        if attr.type == _GRAPH:
            yield attr.g
        elif attr.type == _GRAPHS:
            yield from attr.graphs


def outer_refs(node) -> tuple[str, ...]:
    """Names that ``node``'s subgraphs read from enclosing scopes, in first-use order."""
    refs: dict[str, None] = {}
    for graph in subgraphs(node):
        for name in _graph_outer_refs(graph):
            refs.setdefault(name)
    return tuple(refs)


def _graph_outer_refs(graph) -> list[str]:
    defined = {i.name for i in graph.input} | {i.name for i in graph.initializer}
    defined |= {i.values.name for i in graph.sparse_initializer}
    refs: dict[str, None] = {}
    for node in graph.node:
        for name in node.input:
            if name and name not in defined:
                refs.setdefault(name)
        for sub in subgraphs(node):
            for name in _graph_outer_refs(sub):
                if name not in defined:
                    refs.setdefault(name)
        defined.update(o for o in node.output if o)
    for out in graph.output:
        if out.name not in defined:
            refs.setdefault(out.name)
    return list(refs)


# --------------------------------------------------------------------------------------
# schema queries
# --------------------------------------------------------------------------------------
def formal(params, index: int) -> Any:
    """The formal parameter of slot ``index`` (the last one repeats when variadic), or None."""
    if index < len(params):
        return params[index]
    if params and params[-1].option == onnx.defs.OpSchema.FormalParameterOption.Variadic:
        return params[-1]
    return None


def allowed_types(schema, type_str: str | None) -> tuple[str, ...]:
    """The type strings a type variable allows; a concrete type (``tensor(float)``) allows itself."""
    for constraint in schema.type_constraints:
        if constraint.type_param_str == type_str:
            return tuple(constraint.allowed_type_strs)
    return (type_str,) if type_str is not None else ()


def is_type_var(schema, type_str: str) -> bool:
    """Whether ``type_str`` is one of the schema's type variables (not a concrete type)."""
    return any(c.type_param_str == type_str for c in schema.type_constraints)


def accepts_anything(schema, type_str: str) -> bool:
    """A type variable that also allows bool/string (Shape's T, Cast's T1): it places no
    constraint worth a Cast, the tensor is read as it is stored."""
    allowed = allowed_types(schema, type_str)
    return "tensor(bool)" in allowed or "tensor(string)" in allowed


def primary_type_var(node, schema, ctx: GraphContext) -> str | None:
    """Type variable of the first float output that is typed by a variable (the node's 'compute' type)."""
    for index, out in enumerate(node.output):
        if not ctx.is_float(out):
            continue
        out_formal = formal(schema.outputs, index)
        if out_formal is not None and is_type_var(schema, out_formal.type_str):
            return out_formal.type_str
    return None


__all__ = [
    "ELEM_OF_TYPE_STR",
    "GraphContext",
    "TYPE_NAME",
    "TYPE_STR_OF_PRECISION",
    "accepts_anything",
    "allowed_types",
    "constant_attr",
    "domain_of",
    "formal",
    "graph_context",
    "has_subgraph",
    "infer_types",
    "is_type_var",
    "outer_refs",
    "primary_type_var",
    "qualified",
    "subgraphs",
]
