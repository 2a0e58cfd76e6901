"""ONNX local functions, inlined at load time with scoped names.

Models may call functions defined in ``ModelProto.functions`` (the TorchScript exporter's
``export_modules_as_functions={LlamaRMSNorm, LlamaMLP}``, onnxscript models). pytest-trt
inlines every call when the model is loaded (:func:`inline_local_functions`), so the plan,
both realizations, the FP32 reference, locate and the layer reports all see one graph of
plain nodes, and each inner node gets its own precision per call.

Why inline rather than plan per inner node with the call as scope: one function body is
shared by every call (``LlamaRMSNorm`` serves four norms), so a plan that lowers one call's
Pow but not another's, or a realization that inserts Casts inside one call, needs a copy of
the body per call anyway; ONNX Runtime exposes no tensor inside a function (locate could
not compare them); and TensorRT's ONNX parser inlines functions itself, so the engine's
layers are the inner nodes. Inlining once, at load, gives every stage the same nodes.

Why not ``onnx.inliner.inline_local_functions``: it names the copies ``Pow_214__1``,
``Pow_214__2``, ... and the call's scope is lost. Here each inner node is named after its
call: the call's scope (its name up to the last ``/``, or the call's own name when it has
none) + the inner node's name, so the call ``/model/layers.0/input_layernorm/LlamaRMSNorm``
gives ``/model/layers.0/input_layernorm/Pow_214`` (as the plain TorchScript export names it:
``/model/layers.0/input_layernorm/Pow``). Each inlined node also gets the metadata entry
``pytest_trt.inlined_from`` (``{"call", "function", "classes"}``) and the call's own
``metadata_props`` (its dynamo ``name_scopes``, when it has them), from which
:mod:`pytest_trt.model.names` gives it the call's module and the function as its innermost
class (``transformers.models.llama.modeling_llama.LlamaRMSNorm``: the TorchScript exporter
names a function after the module class, in the class's Python module as domain; a
trailing variant number ``LlamaRMSNorm.1`` is dropped).

Inner values are renamed ``<call name>/<value>``; attributes referenced with
``ref_attr_name`` take the call's value or the function's default; calls inside function
bodies are inlined recursively. A model whose function imports an opset version other than
the model's is left as it is (calls stay calls, planned as fixed nodes: kept as written),
and :data:`NOT_INLINED_KEY` in ``metadata_props`` says why.
"""

from __future__ import annotations

import json
import re
from typing import Any

import onnx

from ..errors import ModelError
from .names import INLINED_KEY

__all__ = ["NOT_INLINED_KEY", "inline_local_functions"]

#: model metadata entry saying why local functions were left as calls
NOT_INLINED_KEY = "pytest_trt.functions_not_inlined"
_VARIANT_RE = re.compile(r"\.\d+$")


def _domain(domain: str) -> str:
    return "" if domain in ("", "ai.onnx") else domain


def _function_id(domain: str, name: str, overload: str = "") -> tuple[str, str, str]:
    return (_domain(domain), name, overload or "")


def _node_id(node: Any) -> tuple[str, str, str]:
    return _function_id(node.domain, node.op_type, getattr(node, "overload", ""))


def _function_class(function: Any) -> str:
    """The class a function stands for: ``domain.Name`` without a variant number."""
    name = _VARIANT_RE.sub("", function.name)
    return f"{function.domain}.{name}" if function.domain else name


def _opset_conflict(proto: onnx.ModelProto, functions: dict) -> str | None:
    """Why the functions cannot be inlined as they are (an opset version differing from the model's), else None."""
    model_opsets = {_domain(o.domain): o.version for o in proto.opset_import}
    for function in functions.values():
        for o in function.opset_import:
            domain = _domain(o.domain)
            if domain in model_opsets and model_opsets[domain] != o.version:
                return (f"function {function.name!r} imports opset {domain or 'ai.onnx'} {o.version}, the model "
                        f"{model_opsets[domain]}")
    return None


def inline_local_functions(proto: onnx.ModelProto) -> int:
    """Inline every call of a model-local function in ``proto``'s main graph, in place.

    Returns the number of calls inlined (0 when the model has no local functions, or when
    they cannot be inlined as they are: see the module docstring). Node names must be
    unique beforehand (``load_model`` names nodes first).
    """
    if not proto.functions:
        return 0
    functions = {_function_id(f.domain, f.name, getattr(f, "overload", "")): f for f in proto.functions}
    if not any(_node_id(n) in functions for n in proto.graph.node):
        return 0
    conflict = _opset_conflict(proto, functions)
    if conflict is not None:
        _set_model_metadata(proto, NOT_INLINED_KEY, f"local functions kept as calls: {conflict}")
        return 0
    inliner = _Inliner(proto, functions)
    new_nodes: list[Any] = []
    for node in proto.graph.node:
        if _node_id(node) in functions:
            new_nodes.extend(inliner.expand(node, node.name, (), 0))
        else:
            new_nodes.append(node)
    del proto.graph.node[:]
    proto.graph.node.extend(new_nodes)
    _drop_unused(proto, functions)
    return inliner.calls


class _Inliner:
    """Expands calls; remembers every name in use so new names never collide."""

    def __init__(self, proto: onnx.ModelProto, functions: dict):
        self.proto = proto
        self.functions = functions
        self.calls = 0
        self.node_names = {n.name for n in proto.graph.node}
        self.values = _all_value_names(proto.graph)

    def expand(self, call: Any, call_name: str, classes: tuple[str, ...], depth: int) -> list[Any]:
        """The nodes replacing ``call`` (named ``call_name``), calls inside inlined recursively."""
        if depth > 64:
            raise ModelError(f"local function calls nested deeper than 64 at {call_name!r}: a recursive function?")
        function = self.functions[_node_id(call)]
        self.calls += 1
        classes = classes + (_function_class(function),)
        rename = self._value_map(call, call_name, function)
        attributes = {a.name: a for a in function.attribute_proto}
        attributes.update({a.name: a for a in call.attribute})
        head, sep, _ = call_name.rpartition("/")
        prefix = head + "/" if sep and head.strip("/") else call_name + "/"
        info = json.dumps({"call": call_name, "function": function.name, "classes": list(classes)})
        out: list[Any] = []
        for index, inner in enumerate(function.node):
            node = onnx.NodeProto()
            node.CopyFrom(inner)
            node.name = self._node_name(prefix, call_name, inner.name or f"{inner.op_type}_{index}")
            _rename_io(node, rename)
            _resolve_attributes(node, attributes)
            if _node_id(node) in self.functions:
                out.extend(self.expand(node, node.name, classes, depth + 1))
                continue
            _set_metadata(node, INLINED_KEY, info)
            for entry in call.metadata_props:  # the call's module (dynamo name_scopes), unless the body has its own
                if entry.key not in {p.key for p in node.metadata_props}:
                    node.metadata_props.add(key=entry.key, value=entry.value)
            out.append(node)
        return out

    def _value_map(self, call: Any, call_name: str, function: Any) -> dict[str, str]:
        """Formal inputs/outputs -> the call's actual names; every other value of the body -> a new name."""
        rename: dict[str, str] = {}
        for k, formal in enumerate(function.input):
            rename[formal] = call.input[k] if k < len(call.input) else ""
        for k, formal in enumerate(function.output):
            if k < len(call.output) and call.output[k]:
                rename[formal] = call.output[k]
        for inner in function.node:
            for name in list(inner.input) + list(inner.output):
                if name and name not in rename:
                    rename[name] = self._value_name(f"{call_name}/{name}")
        return rename

    def _node_name(self, prefix: str, call_name: str, inner: str) -> str:
        inner = inner.lstrip("/")  # a nested call's own scope ('/inner/Scale') continues the caller's
        for candidate in (prefix + inner, f"{call_name}/{inner}"):
            if candidate not in self.node_names:
                self.node_names.add(candidate)
                return candidate
        k = 2
        while f"{call_name}/{inner}__{k}" in self.node_names:
            k += 1
        self.node_names.add(f"{call_name}/{inner}__{k}")
        return f"{call_name}/{inner}__{k}"

    def _value_name(self, name: str) -> str:
        candidate, k = name, 1
        while candidate in self.values:
            k += 1
            candidate = f"{name}__{k}"
        self.values.add(candidate)
        return candidate


def _rename_io(node: Any, rename: dict[str, str]) -> None:
    """Inputs and outputs renamed, and outer-scope references inside the node's subgraphs."""
    for k, name in enumerate(node.input):
        if name in rename:
            node.input[k] = rename[name]
    for k, name in enumerate(node.output):
        if name in rename:
            node.output[k] = rename[name]
    for attr in node.attribute:
        for graph in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
            for inner in graph.node:
                _rename_io(inner, rename)
            for out in graph.output:
                if out.name in rename:
                    out.name = rename[out.name]


def _resolve_attributes(node: Any, attributes: dict[str, Any]) -> None:
    """``ref_attr_name`` attributes replaced by the call's value (or the function's default), or dropped."""
    kept = []
    for attr in node.attribute:
        if attr.ref_attr_name:
            given = attributes.get(attr.ref_attr_name)
            if given is None:
                continue  # an optional attribute the call does not set
            value = onnx.AttributeProto()
            value.CopyFrom(given)
            value.name = attr.name
            kept.append(value)
        else:
            kept.append(attr)
    if any(a.ref_attr_name for a in node.attribute):
        del node.attribute[:]
        node.attribute.extend(kept)


def _set_metadata(node: Any, key: str, value: str) -> None:
    for entry in node.metadata_props:
        if entry.key == key:
            entry.value = value
            return
    node.metadata_props.add(key=key, value=value)


def _set_model_metadata(proto: onnx.ModelProto, key: str, value: str) -> None:
    for entry in proto.metadata_props:
        if entry.key == key:
            entry.value = value
            return
    proto.metadata_props.add(key=key, value=value)


def _all_value_names(graph: Any) -> set[str]:
    names = {i.name for i in graph.input} | {o.name for o in graph.output} | {t.name for t in graph.initializer}
    names |= {v.name for v in graph.value_info}
    for node in graph.node:
        names.update(n for n in node.input if n)
        names.update(n for n in node.output if n)
    return names


def _drop_unused(proto: onnx.ModelProto, functions: dict) -> None:
    """Remove the inlined functions, and opset imports of their domains no node uses any more;
    add the default-domain (or other) imports the inlined bodies need."""
    used_domains = {_domain(n.domain) for n in proto.graph.node}
    for function in functions.values():
        for o in function.opset_import:
            domain = _domain(o.domain)
            if domain in used_domains and domain not in {_domain(i.domain) for i in proto.opset_import}:
                proto.opset_import.add(domain=o.domain, version=o.version)
    function_domains = {_domain(f.domain) for f in functions.values()}
    keep = [o for o in proto.opset_import
            if _domain(o.domain) not in function_domains or _domain(o.domain) in used_domains]
    del proto.opset_import[:]
    proto.opset_import.extend(keep)
    del proto.functions[:]
