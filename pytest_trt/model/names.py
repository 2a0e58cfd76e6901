"""Node names in the user's words: one canonical scoped name and one module class per node.

Every surface that names a node (patterns, ``pytest-trt plan``, locate, suggest, the layer
report, the terminal summary, the JSON and HTML reports) reads it from here; nothing else
invents a node label. A :class:`NodeNames` is computed once per model at load time
(:func:`~pytest_trt.model.load.load_model` sets ``Model.names``) from the graph's node names
and ``metadata_props`` only, never from weights.

Where a node's module comes from (:attr:`NodeName.source`):

``name_scopes``
    The dynamo exporter (``torch.onnx.export(..., dynamo=True)``, the default since torch
    2.9) names nodes after torch.fx nodes (``node_pow_1``) and records the module stack in
    node metadata: ``pkg.torch.onnx.name_scopes`` (``['', 'model', 'model.layers.0',
    'model.layers.0.input_layernorm', 'pow_1']``: the root module ``''``, each call level's
    full dotted path, then the fx node) and ``pkg.torch.onnx.class_hierarchy`` (the module
    classes, position by position; its LAST entry is the op, ``aten.pow.Tensor_Scalar``,
    and is dropped by position, never by an ``aten.`` test: a few shape nodes end in
    ``<built-in function floordiv>``).
``torchscript``
    The TorchScript exporter writes the scope into the name (``/model/layers.0/input_layernorm/Pow``):
    the module path is the name up to its last ``/``. No class information.
``function``
    A node inlined from an ONNX local function at load time
    (:mod:`pytest_trt.model.functions`): its module is the call's, its class chain the call's
    plus the function's (``transformers.models.llama.modeling_llama.LlamaRMSNorm``).
``none``
    Nothing says: a name without scope and no metadata (hand-made models, graph optimizers
    that rename nodes, TorchScript's unscoped ``Constant_12``), or the dynamo exporter's
    ``_empty_nn_module_stack_from_metadata_hook`` stack (the symbolic-size nodes
    ``torch.export`` inserts outside any module).

The canonical name (:attr:`NodeName.canonical`):

* a node with a module path: ``/`` + the path's segments + ``/`` + the ONNX node name, each
  segment being a ``name_scopes`` entry minus the one before it, so ``layers.0`` stays one
  segment: ``/model/layers.0/input_layernorm/node_rsqrt``. A node of the root module is
  ``/node_arange``. TorchScript names already are canonical (``canonical == raw``).
* a node without a module: its raw name (``node_Shape_0``, ``Constant_12``), so exact names
  keep working and nothing pretends to know a scope.

Canonical names are unique per graph: a collision (only possible when a raw name spells
another node's canonical name) is resolved by suffixing ``__2``, ``__3``, as
:func:`~pytest_trt.model.load.load_model` does for duplicate raw names.

Imports only the standard library: the plugin's option parsing reads patterns through
:mod:`pytest_trt.plan.rules`, which uses these types.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

__all__ = [
    "CLASS_HIERARCHY_KEY",
    "EMPTY_MODULE_STACK",
    "INLINED_KEY",
    "NAME_SCOPES_KEY",
    "NodeName",
    "NodeNames",
    "short_class",
]

NAME_SCOPES_KEY = "pkg.torch.onnx.name_scopes"
CLASS_HIERARCHY_KEY = "pkg.torch.onnx.class_hierarchy"
#: the dynamo exporter's module stack of nodes outside any module: "no module", not a module so named
EMPTY_MODULE_STACK = "_empty_nn_module_stack_from_metadata_hook"
#: metadata :mod:`pytest_trt.model.functions` writes on every node it inlines (JSON)
INLINED_KEY = "pytest_trt.inlined_from"

SOURCES = ("name_scopes", "torchscript", "function", "none")


def short_class(qualified: str) -> str:
    """``LlamaRMSNorm`` for ``transformers.models.llama.modeling_llama.LlamaRMSNorm``."""
    return qualified.rpartition(".")[2] or qualified


@dataclass(frozen=True)
class NodeName:
    """One node's names.

    Attributes:
        raw: the ONNX node name (unique after loading): what TensorRT's layer metadata and
            ONNX Runtime use.
        canonical: the scoped name every report shows and patterns match (module docstring).
        module: the dotted module path (``model.layers.0.input_layernorm``), ``""`` for the
            root module, None when unknown.
        module_classes: the module classes, qualified, outermost first (no op entry).
        source: ``name_scopes`` | ``torchscript`` | ``function`` | ``none``.
    """

    raw: str
    canonical: str
    module: str | None = None
    module_classes: tuple[str, ...] = ()
    source: str = "none"

    @property
    def module_class(self) -> str | None:
        """The node's own module class (innermost), qualified; None when unknown."""
        return self.module_classes[-1] if self.module_classes else None

    @property
    def short_class(self) -> str | None:
        """:attr:`module_class` without its Python module (``LlamaRMSNorm``)."""
        return short_class(self.module_classes[-1]) if self.module_classes else None

    @property
    def scope(self) -> str | None:
        """The canonical name's scope (``/model/layers.0/input_layernorm/``); None without a module."""
        if self.module is None:
            return None
        head, sep, _ = self.canonical.rpartition("/")
        return head + "/" if sep and head.strip("/") else None

    def describe(self) -> str:
        """``/model/layers.0/input_layernorm/node_pow_1 (LlamaRMSNorm)``: the name a person reads."""
        cls = self.short_class
        return f"{self.canonical} ({cls})" if cls else self.canonical

    def matches_class(self, glob: str) -> bool:
        """True when ``glob`` matches one of the node's module classes, qualified or short."""
        return any(fnmatchcase(c, glob) or fnmatchcase(short_class(c), glob) for c in self.module_classes)

    def to_json(self) -> dict[str, Any]:
        """``{"canonical", "module", "module_class"}`` (the keys reports add beside a raw name)."""
        return {"canonical": self.canonical, "module": self.module, "module_class": self.module_class}


class NodeNames(Mapping[str, NodeName]):
    """Raw node name -> :class:`NodeName` for every node of a graph, in graph order."""

    def __init__(self, entries: Iterable[NodeName]):
        self._by_raw: dict[str, NodeName] = {}
        for entry in entries:
            self._by_raw[entry.raw] = entry
        self._by_canonical = {e.canonical: e for e in self._by_raw.values()}

    # -- construction -----------------------------------------------------------------
    @classmethod
    def of(cls, graph: Any) -> NodeNames:
        """The names of ``graph``'s nodes (a ``GraphProto``, or a ``ModelProto``: its main graph).

        Raw names must already be unique (``load_model`` makes them so)."""
        graph = getattr(graph, "graph", graph)
        entries = [_derive(node) for node in graph.node]
        return cls(_unique(entries))

    # -- mapping ----------------------------------------------------------------------
    def __getitem__(self, raw: str) -> NodeName:
        return self._by_raw[raw]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_raw)

    def __len__(self) -> int:
        return len(self._by_raw)

    def __repr__(self) -> str:
        return f"NodeNames({len(self)} nodes, scopes={self.has_scopes}, classes={self.has_classes})"

    # -- queries ----------------------------------------------------------------------
    def canonical(self, raw: str) -> str:
        """The canonical name of node ``raw`` (``raw`` itself for a name not in the graph, e.g. a
        Cast a realization inserted)."""
        entry = self._by_raw.get(raw)
        return entry.canonical if entry is not None else raw

    def describe(self, raw: str) -> str:
        """:meth:`NodeName.describe` of ``raw`` (``raw`` itself when unknown)."""
        entry = self._by_raw.get(raw)
        return entry.describe() if entry is not None else raw

    def info(self, raw: str) -> dict[str, Any]:
        """``{"canonical", "module", "module_class"}`` of ``raw`` (canonical = raw, None, None when unknown)."""
        entry = self._by_raw.get(raw)
        return entry.to_json() if entry is not None else {"canonical": raw, "module": None, "module_class": None}

    def by_canonical(self, canonical: str) -> NodeName | None:
        """The node whose canonical name is ``canonical``."""
        return self._by_canonical.get(canonical)

    @property
    def has_scopes(self) -> bool:
        """Some node knows its module (the pattern ``*/input_layernorm/*`` can select something)."""
        return any(e.module for e in self._by_raw.values())

    @property
    def has_classes(self) -> bool:
        """Some node knows its module classes (``class:`` patterns can select something)."""
        return any(e.module_classes for e in self._by_raw.values())

    @property
    def sources(self) -> dict[str, int]:
        """How many nodes got their module from each source (``{"name_scopes": 182, "none": 4}``)."""
        counts: dict[str, int] = {}
        for e in self._by_raw.values():
            counts[e.source] = counts.get(e.source, 0) + 1
        return counts

    def modules(self) -> list[str]:
        """Distinct module paths (``""`` the root excluded), in graph order."""
        return list(dict.fromkeys(e.module for e in self._by_raw.values() if e.module))

    def scopes(self) -> list[str]:
        """Distinct canonical scopes (``/model/layers.0/input_layernorm/``), in graph order."""
        return list(dict.fromkeys(s for s in (e.scope for e in self._by_raw.values()) if s))

    def classes(self) -> list[str]:
        """Distinct module classes, qualified, in order of first appearance."""
        return list(dict.fromkeys(c for e in self._by_raw.values() for c in e.module_classes))

    def class_pattern(self, qualified: str) -> str:
        """The ``class:`` pattern of a class: its short name when no other class of the model has
        it (``class:LlamaRMSNorm``), else the qualified name."""
        short = short_class(qualified)
        same = [c for c in self.classes() if short_class(c) == short]
        return f"class:{short}" if len(same) <= 1 else f"class:{qualified}"


# --------------------------------------------------------------------------------------
# derivation
# --------------------------------------------------------------------------------------
def _metadata(node: Any) -> dict[str, str]:
    return {p.key: p.value for p in getattr(node, "metadata_props", ())}


def _literal_list(text: str | None) -> list[str] | None:
    """A Python-literal list of strings as the dynamo exporter writes them (single quotes), else None."""
    if not text:
        return None
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        return None
    return list(value)


def _segments(modules: list[str]) -> list[str]:
    """Each module path minus the one before it: ``['', 'model', 'model.layers.0']`` -> ``['model', 'layers.0']``.

    An entry that does not extend the previous one (never seen in the exporters' output)
    becomes one segment of its own, whole.
    """
    out = []
    previous = ""
    for entry in modules:
        if not entry:
            previous = ""
            continue
        if previous and entry.startswith(previous + "."):
            out.append(entry[len(previous) + 1:])
        else:
            out.append(entry)
        previous = entry
    return out


def _from_scopes(raw: str, scopes: list[str], classes: list[str] | None) -> NodeName | None:
    """The name of a node with dynamo ``name_scopes`` metadata (None when it is unusable)."""
    if len(scopes) < 2:
        return None
    modules = scopes[:-1]  # the last entry is the fx node, not a module
    if modules[0] == EMPTY_MODULE_STACK:
        return NodeName(raw, raw, None, (), "none")
    module_classes: tuple[str, ...] = ()
    if classes is not None and len(classes) == len(scopes):
        module_classes = tuple(classes[:-1])  # the op entry, dropped by position
    segments = _segments(modules)
    canonical = "/" + "".join(s + "/" for s in segments) + raw
    return NodeName(raw, canonical, modules[-1], module_classes, "name_scopes")


def _from_name(raw: str) -> NodeName:
    """The name of a node whose scope is in its name (``/a/b/Op``), or of one without any."""
    head, sep, _ = raw.rpartition("/")
    if sep and head.strip("/"):
        return NodeName(raw, raw, ".".join(p for p in head.split("/") if p), (), "torchscript")
    if sep and raw.startswith("/"):
        return NodeName(raw, raw, "", (), "torchscript")  # '/Add': the root module
    return NodeName(raw, raw, None, (), "none")


def _inlined(raw: str, meta: dict[str, str], base: NodeName) -> NodeName:
    """A node inlined from a local function: the call's module, classes + the function's."""
    try:
        info = json.loads(meta[INLINED_KEY])
        added = tuple(str(c) for c in info.get("classes", ()))
    except (ValueError, TypeError, AttributeError):
        return base
    return NodeName(raw, base.canonical, base.module, base.module_classes + added, "function")


def _derive(node: Any) -> NodeName:
    raw = node.name
    meta = _metadata(node)
    base: NodeName | None = None
    scopes = _literal_list(meta.get(NAME_SCOPES_KEY))
    if scopes is not None:
        base = _from_scopes(raw, scopes, _literal_list(meta.get(CLASS_HIERARCHY_KEY)))
    if base is None:
        base = _from_name(raw)
    if INLINED_KEY in meta:
        return _inlined(raw, meta, base)
    return base


def _unique(entries: list[NodeName]) -> list[NodeName]:
    """Canonical names made unique: a later node whose canonical name is taken gets ``__2``, ``__3``."""
    taken = {e.canonical for e in entries}
    if len(taken) == len(entries):
        return entries
    seen: set[str] = set()
    out = []
    for e in entries:
        name = e.canonical
        if name in seen:
            k = 2
            while f"{e.canonical}__{k}" in taken or f"{e.canonical}__{k}" in seen:
                k += 1
            name = f"{e.canonical}__{k}"
            e = NodeName(e.raw, name, e.module, e.module_classes, e.source)
        seen.add(name)
        out.append(e)
    return out
