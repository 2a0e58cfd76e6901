"""What an engine actually runs: layers, their boundary dtypes, and which ONNX nodes each carries.

A :class:`LayerReport` answers, per ONNX node of a :class:`~pytest_trt.plan.PrecisionPlan`:
did the engine run it in the planned precision? Sources:

* :meth:`LayerReport.from_inspector_json` -- TensorRT's engine inspector
  (``IEngineInspector.get_engine_information(LayerInformationFormat.JSON)`` of an engine
  built with ``ProfilingVerbosity.DETAILED``). Both schemas are parsed: TensorRT 10.x
  (``"Format/Datatype"`` per tensor, top-level ``Bindings``) and 11.x (format and data
  type split, top-level ``I/O Tensors``); the parsing is :mod:`pytest_trt.layers.inspector`.
* :meth:`LayerReport.from_network` -- a TensorRT network before building (layer output
  dtypes of a strongly typed network; used where no engine can be loaded).
* :meth:`LayerReport.from_emulation` -- the ``emulate`` backend: emulated = planned by
  construction. Such a report says so (``source="emulation"``) and proves nothing about
  TensorRT.

How a node's precision is observed (and what cannot be):

* A node is *carried* by the layers whose ``Metadata`` names it (``[ONNX Layer: <node>]``
  entries joined by ``\\x1e`` or ``\\x1f``). The observed precision is the float dtype(s)
  of those layers' **outputs**, i.e. kernel-boundary dtypes: a fused kernel's internal
  math is not visible.
* A layer whose nodes are all planned in one precision ("uniform") must produce that
  precision: any other output dtype is a ``mismatch`` (e.g. a Myelin ``__myl_`` kernel
  carrying only ``*/LayerNorm/*`` nodes with ``Half`` outputs: the FP32 constraint was
  violated inside Myelin).
* A layer fusing nodes of different planned precisions (or the realization's Cast
  nodes) only shows its boundary; differing from it is ``unverifiable``, never a
  verdict about the node.
* A node named in no layer's ``Metadata`` is ``unverifiable``, never passed.

How each node's precision is known (``NodeObservation.evidence``, the words of the
project's verdicts):

* ``observed``: read from the engine (or parsed network): one of the node's own ONNX
  output tensors is an output of a carrying layer, or the layer carries this node alone.
* ``inferred``: known only from the boundary of a fused kernel that carries it with
  other nodes (a Myelin ``__myl_*`` kernel listing several nodes in its ``Metadata``, a
  ``PWN(...)`` or ``MatMul + Add`` fusion, or a ``{ForeignNode[first...last]}`` region,
  whose members are taken by graph order between ``first`` and ``last``). The kernel's
  internal math is not visible. Under **weak typing** TensorRT treats precision as a hint
  and is known to ignore it inside Myelin (NVIDIA/TensorRT #4505, #3889), so such a node
  is ``unverifiable`` even when the boundary matches. Under **strong typing** the
  network's types are the contract: a consistent boundary gives ``ok`` with the detail
  "strong typing: typed in the network, boundary consistent"; an inconsistent one (a
  planned FP32 node whose kernel outputs FP16) is a ``mismatch`` under either typing.
* ``unverifiable``: no layer shows anything about it.
* ``emulated``: the ``emulate`` backend; derived from the plan's realization, never
  ``observed``.
"""

from __future__ import annotations

import contextlib
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..core.evidence import (
    EMULATED,
    EMULATION_SOURCE,
    EVIDENCE,
    LAYER_SOURCE_LABELS,
    OBSERVED,
    checked,
    engine_evidence,
    observed_in_emulated,
)
from ..errors import BackendContractError
from .inspector import (
    FLOAT_PRECISIONS,
    EngineLayer,
    KnownNodes,
    MetadataEntry,
    TensorInfo,
    inspector_io_tensors,
    inspector_schema,
    load_inspector_json,
    metadata_nodes,
    parse_layers,
    parse_metadata,
)

if TYPE_CHECKING:  # pragma: no cover
    from ..plan import NodeDecision, PrecisionPlan

__all__ = [
    "EVIDENCE",
    "EngineLayer",
    "KnownNodes",
    "LayerReport",
    "MetadataEntry",
    "NodeObservation",
    "TensorInfo",
    "engine_layers",
    "parse_layers",
    "parse_metadata",
    "metadata_nodes",
]

STATUSES = ("ok", "mismatch", "unverifiable", "fixed")
# How a node's precision is known (see the module docstring; fixed nodes have none): the one set of
# evidence values, :data:`pytest_trt.core.evidence.EVIDENCE` (re-exported here, its old home)
#: The detail of an inferred node that passes under strong typing.
STRONG_TYPING_CONSISTENT = "strong typing: typed in the network, boundary consistent"


# --------------------------------------------------------------------------------------
# Observations
# --------------------------------------------------------------------------------------
@dataclass
class NodeObservation:
    """Planned vs observed precision of one ONNX node.

    ``status``: ``ok`` | ``mismatch`` | ``unverifiable`` | ``fixed`` (a node the plan
    leaves as written: shape/index/int math). ``observed`` is a precision, ``mixed`` (see
    ``observed_dtypes``), or None. ``layer`` names the carrying layer(s); ``detail`` says
    why when the status is not plainly ``ok``. ``evidence``: how the precision is known,
    ``observed`` | ``inferred`` | ``unverifiable`` | ``emulated`` (None for fixed nodes);
    see the module docstring. ``canonical``, ``module``, ``module_class``: the node's canonical
    scoped name, module path and qualified module class (:mod:`pytest_trt.model.names`), what
    the table and reports show beside the raw ``node`` name TensorRT's metadata uses.
    """

    node: str
    op_type: str
    planned: str | None
    observed: str | None
    layer: str | None
    myelin: bool
    status: str
    detail: str = ""
    observed_dtypes: tuple[str, ...] = ()
    layers: tuple[str, ...] = ()
    evidence: str | None = None
    canonical: str = ""
    module: str | None = None
    module_class: str | None = None

    @property
    def label(self) -> str:
        """The node as reports name it: its canonical scoped name."""
        return self.canonical or self.node

    @property
    def realized(self) -> str | None:
        """The precision the node ran in, as far as the report can tell: None for a fixed node,
        ``unknown`` where the report cannot show it (an unverifiable node's kernel boundary says
        nothing about the node: its dtype is not its precision), ``mixed`` for anything but one
        float precision. The one rule the ledger (issue 32) and saved runs (issue 31) both read."""
        if self.status == "fixed":
            return None
        if self.status == "unverifiable" or not self.observed:
            return "unknown"
        return self.observed if self.observed in ("fp32", "fp16", "bf16") else "mixed"

    def to_json(self) -> dict[str, Any]:
        return {
            "node": self.node, "canonical": self.label, "module": self.module, "module_class": self.module_class,
            "op_type": self.op_type, "planned": self.planned, "observed": self.observed,
            "observed_dtypes": list(self.observed_dtypes), "layer": self.layer, "layers": list(self.layers),
            "myelin": self.myelin, "status": self.status, "evidence": self.evidence, "detail": self.detail,
        }



# --------------------------------------------------------------------------------------
# The report
# --------------------------------------------------------------------------------------
@dataclass
class LayerReport:
    """Layers of an engine and the observed precision of every ONNX node of the plan.

    ``source``: ``inspector`` (TensorRT engine inspector), ``network`` (TensorRT network
    before building), ``emulation`` (the ``emulate`` backend: not TensorRT).
    ``typing``: ``strong`` / ``weak`` / ``emulated``. ``backend``: the backend name.
    """

    layers: list[EngineLayer]
    nodes: dict[str, NodeObservation]
    source: str
    typing: str
    backend: str
    notes: list[str] = field(default_factory=list)
    schema: str = "unknown"
    io_tensors: list[dict] = field(default_factory=list)
    #: the plan's node names (``Model.names``), for patterns over the report (not in its JSON)
    names: Any = field(default=None, repr=False)

    # -- constructors -----------------------------------------------------------------
    @classmethod
    def from_inspector_json(cls, data, plan: PrecisionPlan, *, typing: str = "?", backend: str = "tensorrt",
                            source: str = "inspector") -> LayerReport:
        """Parse inspector JSON (either schema) and observe every node of ``plan``."""
        data = load_inspector_json(data)
        known = KnownNodes.of(plan)
        layers, notes = parse_layers(data, known)
        schema = inspector_schema(data)
        if isinstance(data, dict) and data.get("_pytest_trt_source"):
            source = str(data["_pytest_trt_source"])
        nodes = _named(_observe(plan, layers, notes, strong=typing == "strong"), plan)
        return cls(layers=layers, nodes=nodes, source=source, typing=typing, backend=backend, notes=notes,
                   schema=schema, io_tensors=inspector_io_tensors(data), names=_names_of(plan))

    @classmethod
    def from_network(cls, network_info, plan: PrecisionPlan, *, typing: str = "strong",
                     backend: str | None = None) -> LayerReport:
        """From a TensorRT network before building.

        ``network_info``: the dict of :meth:`TrtCompat.network_as_inspector`, or a
        ``(TrtCompat, INetworkDefinition)`` pair. Output dtypes of a weakly typed network
        are not decided until the build, so this is meaningful for strong typing only.
        """
        if isinstance(network_info, tuple):
            compat, network = network_info
            backend = backend or compat.backend_name
            network_info = compat.network_as_inspector(network)
        report = cls.from_inspector_json(network_info, plan, typing=typing, backend=backend or "tensorrt",
                                         source="network")
        report.notes.insert(0, "from the TensorRT network before building: layer output dtypes as typed, "
                               "not the built engine's kernels (no fusion, no Myelin)")
        return report

    @classmethod
    def from_emulation(cls, plan: PrecisionPlan, *, backend: str = "emulate") -> LayerReport:
        """An emulating backend's report (``emulate``, or a plugin's wrapping it): each compute node
        emulated in its planned precision, by construction."""
        nodes = {}
        for name, d in plan.nodes.items():
            if d.precision is None or d.kind != "compute":
                nodes[name] = NodeObservation(name, d.op_type, None, None, None, False, "fixed",
                                              "left as written by the plan (no float compute)")
            else:
                nodes[name] = NodeObservation(
                    name, d.op_type, d.precision, d.precision, None, False, "ok",
                    "emulated: the emulation graph rounds this node's outputs to the planned precision",
                    (d.precision,), (), "emulated",
                )
        return cls(layers=[], nodes=_named(nodes, plan), source=EMULATION_SOURCE, typing="emulated", backend=backend,
                   names=_names_of(plan),
                   notes=["EMULATED on ONNX Runtime CPU: derived from the plan's realization (emulated = planned by "
                          "construction), not observed; this says nothing about what TensorRT would run (fusion, "
                          "Myelin, tactics)"])

    # -- queries ----------------------------------------------------------------------
    @property
    def emulated(self) -> bool:
        return self.source == EMULATION_SOURCE

    def myelin_layers(self) -> list[EngineLayer]:
        return [layer for layer in self.layers if layer.myelin]

    def nodes_matching(self, names) -> list[NodeObservation]:
        """Observations of the given node names (e.g. ``plan.match("*/LayerNorm/*")``), in that order."""
        if isinstance(names, str):
            names = [names]
        missing = [n for n in names if n not in self.nodes]
        if missing:
            raise KeyError(f"not nodes of this plan: {', '.join(missing[:5])}")
        return [self.nodes[n] for n in names]

    def by_status(self, status: str) -> list[NodeObservation]:
        return [o for o in self.nodes.values() if o.status == status]

    def layer(self, name: str) -> EngineLayer:
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise KeyError(name)

    def summary(self) -> dict[str, int]:
        counts = Counter(o.status for o in self.nodes.values())
        out = {s: counts.get(s, 0) for s in STATUSES}
        out["nodes"] = len(self.nodes)
        out["layers"] = len(self.layers)
        out["myelin_layers"] = len(self.myelin_layers())
        return out

    def evidence_counts(self, names=None) -> dict[str, int]:
        """How the precision of the compute nodes (or of ``names``) is known:
        ``{"observed", "inferred", "unverifiable", "emulated"}`` (fixed nodes are not counted)."""
        rows = self.nodes.values() if names is None else [self.nodes[n] for n in names if n in self.nodes]
        counts = Counter(checked(o.evidence, backend=self.backend, what=f"evidence of node {o.node!r}")
                         for o in rows if o.status != "fixed")
        return {e: counts.get(e, 0) for e in EVIDENCE}

    def checked(self) -> LayerReport:
        """This report, once every node's evidence is one of :data:`~pytest_trt.core.evidence.EVIDENCE`
        (a fixed node may have none): else :class:`~pytest_trt.errors.BackendContractError` naming the
        backend, the node and the value. Every reader of a backend's report goes through it
        (:func:`engine_layers`, ``assert_precision``, the ledger), so nothing unknown is counted."""
        for o in self.nodes.values():
            if o.evidence is None and o.status == "fixed":
                continue
            checked(o.evidence, backend=self.backend, what=f"evidence of node {o.node!r}")
        return self

    # -- output -----------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "emulated": self.emulated,
            "typing": self.typing,
            "backend": self.backend,
            "schema": self.schema,
            "summary": self.summary(),
            "evidence": self.evidence_counts(),
            "notes": list(self.notes),
            "nodes": [o.to_json() for o in self.nodes.values()],
            "layers": [layer.to_json() for layer in self.layers],
            "io_tensors": list(self.io_tensors),
        }

    def headline(self) -> str:
        s = self.summary()
        what = LAYER_SOURCE_LABELS.get(self.source, self.source)
        return (f"{what}, {self.backend}, typing {self.typing}: {s['nodes']} nodes: {s['ok']} ok, "
                f"{s['mismatch']} mismatch, {s['unverifiable']} unverifiable, {s['fixed']} fixed; "
                f"{s['layers']} layers ({s['myelin_layers']} Myelin); evidence: "
                f"{evidence_text(self.evidence_counts())}")

    def table(self, *, statuses=None, max_width: int = 60) -> str:
        """A readable text table, one row per node (optionally only some statuses)."""
        rows = [o for o in self.nodes.values() if statuses is None or o.status in statuses]
        header = ("node", "op", "planned", "observed", "status", "evidence", "layer", "class")
        body = [_table_row(o, max_width) for o in rows]
        widths = [max(len(str(r[i])) for r in [header, *body]) for i in range(len(header))]
        lines = [self.headline()]
        lines.extend(f"note: {n}" for n in self.notes)
        fmt = "  ".join(f"{{:<{w}}}" for w in widths)
        lines.append(fmt.format(*header))
        lines.append(fmt.format(*("-" * w for w in widths)))
        lines.extend(fmt.format(*r).rstrip() for r in body)
        details = [o for o in rows if o.detail and o.status != "fixed" and not self.emulated]
        if details:
            lines.append("")
            lines.extend(f"{o.label}: {o.detail}" for o in details)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


def engine_layers(engine: Any) -> LayerReport:
    """``engine.layers()``, checked against the backend contract (docs/DESIGN.md "Backends"):
    the engine's ``layer_evidence`` is one of :data:`~pytest_trt.core.evidence.LAYER_EVIDENCE`,
    every node's evidence one of :data:`~pytest_trt.core.evidence.EVIDENCE`, and an engine that
    says its report is emulated claims no node as observed. Else
    :class:`~pytest_trt.errors.BackendContractError` naming the backend and the value."""
    stated = engine_evidence(engine)
    report = engine.layers().checked()
    if stated == EMULATED:
        claimed = [o.node for o in report.nodes.values() if o.evidence == OBSERVED]
        if claimed:
            raise BackendContractError(observed_in_emulated(engine, claimed))
    return report


def _names_of(plan: Any) -> Any:
    """The plan's ``Model.names``, None for a plan without a model (hand-made in tests)."""
    return getattr(getattr(plan, "model", None), "names", None)


def _named(nodes: dict[str, NodeObservation], plan: Any) -> dict[str, NodeObservation]:
    """Observations with their canonical name, module and class (:mod:`pytest_trt.model.names`)."""
    names = _names_of(plan)
    if names is None:
        return nodes
    for name, o in nodes.items():
        entry = names.get(name)
        if entry is not None:
            o.canonical, o.module, o.module_class = entry.canonical, entry.module, entry.module_class
    return nodes


def _cut(text: str | None, max_width: int) -> str:
    """``text`` shortened from the left to ``max_width`` characters (names differ at their ends)."""
    text = text or ""
    return text if len(text) <= max_width else "..." + text[-(max_width - 3):]


def _table_row(o: NodeObservation, max_width: int) -> tuple[str, ...]:
    """One row of :meth:`LayerReport.table`."""
    layer = (o.layer or "-") + (" [myelin]" if o.myelin else "")
    cls = o.module_class.rpartition(".")[2] if o.module_class else "-"
    return (_cut(o.label, max_width), o.op_type, o.planned or "-", o.observed or "-", o.status,
            o.evidence or "-", _cut(layer, max_width), cls)


def evidence_text(counts: dict[str, int]) -> str:
    """``"5 observed, 4 inferred from a kernel boundary, 0 unverifiable"`` (emulated only when present)."""
    parts = [f"{counts.get('observed', 0)} observed",
             f"{counts.get('inferred', 0)} inferred from a kernel boundary",
             f"{counts.get('unverifiable', 0)} unverifiable"]
    if counts.get("emulated"):
        parts.append(f"{counts['emulated']} emulated")
    return ", ".join(parts)


# --------------------------------------------------------------------------------------
# Observation
# --------------------------------------------------------------------------------------
_REALIZED_RE = re.compile(r"__(?:cast_)?(fp32|fp16|bf16)$")


def _realized_storage(tensor: str) -> str | None:
    """Storage precision of a tensor the strong realization inserted (``<t>__cast_fp16``, ``<out>__fp16``)."""
    m = _REALIZED_RE.search(tensor)
    return m.group(1) if m else None


def _planned_compute(plan: PrecisionPlan, name: str) -> str | None:
    """The planned precision of a compute node of the plan; None for fixed nodes and non-plan nodes."""
    d = plan.nodes.get(name)
    if d is None or d.kind != "compute":
        return None
    return d.precision


@dataclass
class _Carriage:
    """Which engine layers carry which plan nodes: the facts every node's verdict reads.

    ``members``: layer id -> the nodes it carries (its Metadata, or for a
    ``{ForeignNode[first...last]}`` region without metadata, the plan nodes between first and
    last that no layer names); ``span``: node -> the region taken to carry it that way;
    ``uniform``: layer id -> the one precision all its planned compute nodes share, else None.
    """

    carriers: dict[str, list[EngineLayer]]
    members: dict[int, list[str]]
    span: dict[str, EngineLayer]
    foreign_layers: list[EngineLayer]
    uniform: dict[int, str | None]
    producer: dict[str, str]
    tensor_precision: dict[str, str]

    @classmethod
    def of(cls, plan: PrecisionPlan, layers: list[EngineLayer]) -> _Carriage:
        carriers: dict[str, list[EngineLayer]] = {}
        for layer in layers:
            for n in layer.onnx_nodes:
                carriers.setdefault(n, []).append(layer)
        foreign_layers = [layer for layer in layers if layer.foreign_range is not None and not layer.onnx_nodes]
        members, span = _foreign_members(plan, layers, foreign_layers, carriers)
        return cls(carriers=carriers, members=members, span=span, foreign_layers=foreign_layers,
                   uniform={id(layer): _uniform_precision(plan, members[id(layer)]) for layer in layers},
                   producer=_producers(plan), tensor_precision=getattr(plan, "tensor_precision", {}) or {})

    def expected_of(self, layer: EngineLayer, tensor: str) -> str | None:
        """The plan's storage of a kernel-boundary tensor, when the plan or the realization says it."""
        if tensor in self.tensor_precision:
            return self.tensor_precision[tensor]
        realized = _realized_storage(tensor)
        if realized is not None:
            return realized
        return self.uniform[id(layer)]


def _foreign_members(plan: PrecisionPlan, layers: list[EngineLayer], foreign_layers: list[EngineLayer],
                     carriers: dict[str, list[EngineLayer]]) -> tuple[dict[int, list[str]], dict[str, EngineLayer]]:
    """``(members, span)`` of :class:`_Carriage`.

    A {ForeignNode[first...last]} region without per-node metadata: its members are taken by graph
    order between first and last (TensorRT names a region by its extent), for nodes no layer names.
    """
    order = list(plan.nodes)
    position = {n: i for i, n in enumerate(order)}
    members: dict[int, list[str]] = {id(layer): list(layer.onnx_nodes) for layer in layers}
    span: dict[str, EngineLayer] = {}
    for layer in foreign_layers:
        assert layer.foreign_range is not None  # foreign_layers are those with a range
        first, last = layer.foreign_range
        if first in position and last in position:
            i, j = sorted((position[first], position[last]))
            inside = [n for n in order[i:j + 1] if n not in carriers]
        else:
            inside = [n for n in (first, last) if n in position and n not in carriers]
        members[id(layer)] = inside
        for n in inside:
            span.setdefault(n, layer)
    return members, span


def _uniform_precision(plan: PrecisionPlan, members: list[str]) -> str | None:
    """The precision of a uniform layer, else None.

    A layer is uniform when every node it carries is a plan node and all planned compute
    nodes among them share one precision (fixed nodes do not count). Nodes of the
    realization (Casts), unknown to the plan, make it non-uniform.
    """
    precs = set()
    for n in members:
        if n not in plan.nodes:
            return None
        p = _planned_compute(plan, n)
        if p is not None:
            precs.add(p)
    return next(iter(precs)) if len(precs) == 1 else None


def _producers(plan: PrecisionPlan) -> dict[str, str]:
    """ONNX tensor -> the node producing it (empty for a plan without a model proto)."""
    producer: dict[str, str] = {}
    with contextlib.suppress(AttributeError):
        for n in plan.model.proto.graph.node:
            for o in n.output:
                if o:
                    producer[o] = n.name
    return producer


def _carriage_notes(plan: PrecisionPlan, layers: list[EngineLayer], foreign_layers: list[EngineLayer]) -> list[str]:
    """Report notes about what the layers cannot show: regions without metadata, non-plan node names."""
    notes = []
    if foreign_layers:
        notes.append(
            f"{len(foreign_layers)} Myelin region(s) without per-node metadata "
            f"({', '.join(layer.name for layer in foreign_layers[:2])}{', ...' if len(foreign_layers) > 2 else ''}): "
            f"their nodes are known only from the region's boundary (taken by graph order between its first and "
            f"last node); build with ProfilingVerbosity.DETAILED"
        )
    unknown = sorted({n for layer in layers for n in layer.onnx_nodes if n not in plan.nodes})
    if unknown:
        notes.append(f"{len(unknown)} node name(s) in layer Metadata are not nodes of the plan (e.g. Cast nodes "
                     f"of the realization): {', '.join(unknown[:3])}{', ...' if len(unknown) > 3 else ''}")
    return notes


def _observe(plan: PrecisionPlan, layers: list[EngineLayer], notes: list[str], *,
             strong: bool = False) -> dict[str, NodeObservation]:
    """Per plan node: status, evidence and detail (see the module docstring).

    ``strong``: the engine was built strongly typed (the network's types are the contract),
    so a node inferred from a consistent kernel boundary is ``ok``; otherwise it is
    ``unverifiable``.
    """
    carriage = _Carriage.of(plan, layers)
    notes.extend(_carriage_notes(plan, layers, carriage.foreign_layers))
    return {name: _observe_node(carriage, name, d, strong=strong) for name, d in plan.nodes.items()}


#: evidence from one float output of a carrying layer that is the node's own:
#: (layer, tensor, dtype, expected storage)
_Own = tuple[str, str, str, str]
#: evidence from the boundary of a kernel fusing the node with others:
#: (layer, tensor, dtype, expected storage or None, whether the kernel is uniform)
_Boundary = tuple[str, str, str, str | None, bool]


def _observe_node(carriage: _Carriage, name: str, d: NodeDecision, *, strong: bool) -> NodeObservation:
    """The observation of one plan node from the layers carrying it."""
    op = d.op_type
    lays = carriage.carriers.get(name, [])
    lnames = tuple(layer.name for layer in lays)
    myelin = any(layer.myelin for layer in lays)
    label = " | ".join(lnames) if lnames else None
    if d.kind != "compute" or d.precision is None:
        return NodeObservation(name, op, None, None, label, myelin, "fixed",
                               "left as written by the plan (no float compute)", (), lnames)
    planned = d.precision
    if not lays and name in carriage.span:
        lays = [carriage.span[name]]
        label, myelin = carriage.span[name].name, True
    if not lays:
        if carriage.foreign_layers:
            detail = ("in no layer's Metadata; the engine has Myelin region(s) without per-node metadata "
                      "that may contain it")
        else:
            detail = "in no layer's Metadata (fused away, or the engine lacks DETAILED layer information)"
        return NodeObservation(name, op, planned, None, label, myelin, "unverifiable", detail, (), lnames,
                               "unverifiable")
    own, boundary = _output_evidence(carriage, name, planned, lays)
    all_dtypes = tuple(sorted({c[2] for c in own} | {b[2] for b in boundary}))
    if not all_dtypes:
        return NodeObservation(name, op, planned, None, label, myelin, "unverifiable",
                               "no float dtype at the boundary of its layer(s)", (), lnames, "unverifiable")
    where = " inside a Myelin region" if myelin else ""
    if own:
        own_dtypes = sorted({c[2] for c in own})
        observed = own_dtypes[0] if len(own_dtypes) == 1 else "mixed"
        status, detail = _judge_own(own, planned, all_dtypes, where)
        return NodeObservation(name, op, planned, observed, label, myelin, status, detail, all_dtypes, lnames,
                               "observed")
    observed_any = all_dtypes[0] if len(all_dtypes) == 1 else "mixed"
    status, detail = _judge_inferred(boundary, planned, all_dtypes, where, strong=strong)
    return NodeObservation(name, op, planned, observed_any, label, myelin, status, detail, all_dtypes, lnames,
                           "inferred")


def _output_evidence(carriage: _Carriage, name: str, planned: str,
                     lays: list[EngineLayer]) -> tuple[list[_Own], list[_Boundary]]:
    """Evidence per float output of each carrying layer.

    own      - the output is this node's own ONNX output, or the layer carries this node alone:
               the node's precision is read (observed); expected = its planned storage;
    boundary - the output of a kernel fusing this node with others: the node's precision is
               inferred; expected = the tensor's planned storage (plan or realization), or the
               shared precision of a uniform kernel, else unknown.
    """
    own: list[_Own] = []
    boundary: list[_Boundary] = []
    for layer in lays:
        alone = carriage.members[id(layer)] == [name]
        for t in layer.outputs:
            if t.dtype not in FLOAT_PRECISIONS:
                continue
            if carriage.producer.get(t.name) == name or alone:
                own.append((layer.name, t.name, t.dtype, carriage.tensor_precision.get(t.name)
                            or _realized_storage(t.name) or planned))
            else:
                boundary.append((layer.name, t.name, t.dtype, carriage.expected_of(layer, t.name),
                                 carriage.uniform[id(layer)] is not None))
    return own, boundary


def _judge_own(own: list[_Own], planned: str, all_dtypes: tuple[str, ...], where: str) -> tuple[str, str]:
    """``(status, detail)`` of a node whose own outputs are visible (evidence ``observed``)."""
    bad = [c for c in own if c[2] != c[3]]
    if bad:
        lay, tensor, dt, exp = bad[0]
        detail = f"planned {exp}, but its output {tensor!r} is {dt} (layer {lay}){where}"
        if len(all_dtypes) > 1:
            detail += f"; boundary dtypes are mixed: {', '.join(all_dtypes)}"
        return "mismatch", detail
    odd = [c for c in own if c[3] != planned]
    return "ok", "; ".join(f"output {c[1]!r} is planned {c[3]} (plan storage, e.g. a graph output)" for c in odd[:2])


def _judge_inferred(boundary: list[_Boundary], planned: str, all_dtypes: tuple[str, ...], where: str, *,
                    strong: bool) -> tuple[str, str]:
    """``(status, detail)`` of a node known only from the boundary of a fused kernel (evidence ``inferred``)."""
    kernel = boundary[0][0]
    dts = ", ".join(sorted({b[2] for b in boundary}))
    checkable = [b for b in boundary if b[3] is not None]
    inconsistent = [b for b in checkable if b[2] != b[3]]
    if inconsistent and all(b[4] for b in inconsistent):
        lay, tensor, dt, _, _ = inconsistent[0]
        detail = (f"planned {planned}, but layer {lay}, which carries only nodes planned {planned}, "
                  f"outputs {tensor!r} in {dt}{where} (inferred from the kernel boundary)")
        if len(all_dtypes) > 1:
            detail += f"; boundary dtypes are mixed: {', '.join(all_dtypes)}"
        return "mismatch", detail
    if inconsistent or (not checkable and any(b[2] != planned for b in boundary)):
        return "unverifiable", (f"fused into {kernel} with nodes planned in other precisions (or Cast nodes of the "
                                f"realization); its boundary dtypes ({dts}) cannot show this node's precision")
    if strong:
        return "ok", f"{STRONG_TYPING_CONSISTENT} (kernel {kernel}: {dts})"
    return "unverifiable", (f"inferred from the kernel boundary: fused into {kernel}, whose outputs are {dts}; its "
                            f"precision inside the kernel is not visible, and without strong typing TensorRT treats "
                            f"precision as a hint that fused (Myelin) kernels are known to ignore")
