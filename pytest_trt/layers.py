"""What an engine actually runs: layers, their boundary dtypes, and which ONNX nodes each carries.

A :class:`LayerReport` answers, per ONNX node of a :class:`~pytest_trt.plan.PrecisionPlan`:
did the engine run it in the planned precision? Sources:

* :meth:`LayerReport.from_inspector_json` -- TensorRT's engine inspector
  (``IEngineInspector.get_engine_information(LayerInformationFormat.JSON)`` of an engine
  built with ``ProfilingVerbosity.DETAILED``). Both schemas are parsed: TensorRT 10.x
  (``"Format/Datatype"`` per tensor, top-level ``Bindings``) and 11.x (format and data
  type split, top-level ``I/O Tensors``); see :mod:`pytest_trt.backends.trt_compat`.
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
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .backends.trt_compat import (
    FLOAT_PRECISIONS,
    METADATA_SEPARATORS,
    ONNX_LAYER_PREFIX,
    inspector_io_tensors,
    inspector_schema,
    split_tensor_entry,
)

if TYPE_CHECKING:  # pragma: no cover
    from .plan import PrecisionPlan

__all__ = [
    "EngineLayer",
    "LayerReport",
    "NodeObservation",
    "TensorInfo",
    "parse_metadata",
    "metadata_nodes",
]

STATUSES = ("ok", "mismatch", "unverifiable", "fixed")
#: How a node's precision is known (see the module docstring); fixed nodes have none.
EVIDENCE = ("observed", "inferred", "unverifiable", "emulated")
#: The detail of an inferred node that passes under strong typing.
STRONG_TYPING_CONSISTENT = "strong typing: typed in the network, boundary consistent"
_LOCAL_FUNCTION = "Local Function: "
_FOREIGN_RE = re.compile(r"^\{ForeignNode\[(.*)\]\}$", re.DOTALL)


# --------------------------------------------------------------------------------------
# Metadata
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MetadataEntry:
    """One ``[ONNX Layer: ...]`` entry, in either format the ONNX parser has written:

    * ``[ONNX Layer: <node> | <caller> (<function>) ...]``: the local-function call stack
      innermost first (newer onnx-tensorrt ``processMetadata``), so for a node inside an ONNX
      function the main-graph node is the last caller;
    * ``[ONNX Layer: <node> | Local Function: <function>]``: onnx-tensorrt 9.3, 10.0-GA and
      10.1-GA (``importerUtils.cpp`` / ``onnx2trt_utils.cpp`` ``processMetadata``, read in
      onnx/onnx-tensorrt at those branches): only the innermost function's name (the op type
      of the calling node, ``localFunctionStack().back().first``), no caller node. The caller
      is then the main-graph node of that op type when there is exactly one
      (:func:`metadata_nodes` with ``function_callers``); otherwise it is not known.
    """

    node: str
    callers: tuple[str, ...] = ()
    function: str | None = None

    @property
    def main_graph_node(self) -> str:
        return self.callers[-1] if self.callers else self.node

    def candidates(self, function_callers=None) -> tuple[str, ...]:
        if self.callers:
            return (self.main_graph_node, self.node)
        if self.function and function_callers:
            calls = function_callers.get(self.function, ())
            if len(calls) == 1:
                return (calls[0], self.node)
        return (self.node,)


def parse_metadata(metadata: str | None) -> list[MetadataEntry]:
    """Split a layer's ``Metadata`` into entries.

    Accepts the documented separators (``\\x1e``, ``\\x1f``), entries written back to back
    (``[ONNX Layer: a][ONNX Layer: b]``), and ignores anything that is not an
    ``[ONNX Layer: ...]`` entry (helper layers have ``""``).
    """
    if not metadata:
        return []
    text = str(metadata)
    for sep in METADATA_SEPARATORS:
        text = text.replace(sep, "\n")
    entries: list[MetadataEntry] = []
    starts = [m.start() for m in re.finditer(re.escape(ONNX_LAYER_PREFIX), text)]
    for i, start in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else len(text)
        chunk = text[start + len(ONNX_LAYER_PREFIX):end].strip()
        chunk = chunk.split("\n", 1)[0].rstrip()
        if chunk.endswith("]"):
            chunk = chunk[:-1]
        parts = [p.strip() for p in chunk.split(" | ")]
        node = parts[0]
        function = next((p[len(_LOCAL_FUNCTION):].strip() for p in parts[1:] if p.startswith(_LOCAL_FUNCTION)), None)
        callers = tuple(re.sub(r"\s*\([^()]*\)$", "", p) for p in parts[1:]
                        if p and not p.startswith(_LOCAL_FUNCTION))
        if node:
            entries.append(MetadataEntry(node, callers, function))
    return entries


class KnownNodes(set):
    """The plan's node names, plus ``function_callers``: local-function name (op type) ->
    the main-graph nodes calling it, for Metadata that names only the function."""

    function_callers: dict[str, list[str]]

    @classmethod
    def of(cls, plan) -> KnownNodes:
        known = cls(plan.nodes)
        proto = plan.model.proto
        functions = {f.name for f in proto.functions}
        known.function_callers = {}
        for n in proto.graph.node:
            if n.op_type in functions:
                known.function_callers.setdefault(n.op_type, []).append(n.name)
        return known


def metadata_nodes(metadata: str | None, known=None) -> list[str]:
    """Main-graph node names of a ``Metadata`` string, in order, without repeats.

    With ``known`` (a container of node names), each entry resolves to the first of its
    candidates (main-graph caller, then the inner node) found in ``known``; entries with
    no known candidate keep their main-graph name. ``known`` may be a :class:`KnownNodes`,
    whose ``function_callers`` resolve the older ``| Local Function: <function>`` format.
    """
    out: list[str] = []
    function_callers = getattr(known, "function_callers", None)
    for entry in parse_metadata(metadata):
        name = entry.main_graph_node
        if known is not None:
            for cand in entry.candidates(function_callers):
                if cand in known:
                    name = cand
                    break
        if name not in out:
            out.append(name)
    return out


# --------------------------------------------------------------------------------------
# Data classes
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TensorInfo:
    """A tensor at a layer boundary. ``dtype`` normalized (fp32/fp16/bf16/int32/...)."""

    name: str
    dtype: str | None
    format: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "dtype": self.dtype, "format": self.format}


@dataclass
class EngineLayer:
    """One layer (kernel) of a built engine, or of a network."""

    name: str
    layer_type: str | None
    tactic: str | None
    inputs: list[TensorInfo]
    outputs: list[TensorInfo]
    onnx_nodes: list[str]
    myelin: bool
    raw: dict = field(default_factory=dict, repr=False)
    #: ``(first, last)`` of a ``{ForeignNode[first...last]}`` layer, else None.
    foreign_range: tuple[str, str] | None = None

    def output_dtypes(self) -> list[str]:
        return [t.dtype for t in self.outputs if t.dtype is not None]

    def float_output_dtypes(self) -> list[str]:
        return [d for d in self.output_dtypes() if d in FLOAT_PRECISIONS]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "layer_type": self.layer_type,
            "tactic": self.tactic,
            "inputs": [t.to_json() for t in self.inputs],
            "outputs": [t.to_json() for t in self.outputs],
            "onnx_nodes": list(self.onnx_nodes),
            "myelin": self.myelin,
            "foreign_range": list(self.foreign_range) if self.foreign_range else None,
        }


@dataclass
class NodeObservation:
    """Planned vs observed precision of one ONNX node.

    ``status``: ``ok`` | ``mismatch`` | ``unverifiable`` | ``fixed`` (a node the plan
    leaves as written: shape/index/int math). ``observed`` is a precision, ``mixed`` (see
    ``observed_dtypes``), or None. ``layer`` names the carrying layer(s); ``detail`` says
    why when the status is not plainly ``ok``. ``evidence``: how the precision is known,
    ``observed`` | ``inferred`` | ``unverifiable`` | ``emulated`` (None for fixed nodes);
    see the module docstring.
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

    def to_json(self) -> dict[str, Any]:
        return {
            "node": self.node, "op_type": self.op_type, "planned": self.planned, "observed": self.observed,
            "observed_dtypes": list(self.observed_dtypes), "layer": self.layer, "layers": list(self.layers),
            "myelin": self.myelin, "status": self.status, "evidence": self.evidence, "detail": self.detail,
        }


# --------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------
def _is_myelin(name: str, layer_type: str | None) -> bool:
    """Myelin regions: ``{ForeignNode[...]}`` (LayerType ``Myelin``), or at DETAILED the
    ``kgen``/``gemm`` kernels named ``__myl_...`` / ``..._myl<N>_<M>`` (trex colors.py lists
    the ``Myelin`` and ``kgen`` layer types; NVIDIA's trt_perf ``layer_info.py`` strips the
    ``__myl_`` prefix and ``_myl<N>`` suffix of kgen kernel names)."""
    lt = (layer_type or "").strip().lower()
    if name.startswith("{ForeignNode[") or lt in ("myelin", "kgen", "gemm"):
        return True
    return name.startswith("__myl") or re.search(r"_myl\d+(?:_\d+)?$", name) is not None


def _tensor_list(entries) -> list[TensorInfo]:
    out = []
    if not isinstance(entries, list):
        return out
    for e in entries:
        if isinstance(e, dict):
            dtype, fmt = split_tensor_entry(e)
            out.append(TensorInfo(str(e.get("Name", "")), dtype, fmt))
        elif isinstance(e, str):
            out.append(TensorInfo(e, None, None))
    return out


def _split_foreign(name: str) -> tuple[str, str] | None:
    m = _FOREIGN_RE.match(name)
    if not m:
        return None
    inner = m.group(1)
    if "..." in inner:
        first, last = inner.split("...", 1)
    else:
        first = last = inner
    return first.strip(), last.strip()


def parse_layers(data, known_nodes=None) -> tuple[list[EngineLayer], list[str]]:
    """Inspector JSON (str, dict or list of layers) -> ``(layers, notes)``."""
    notes: list[str] = []
    if isinstance(data, (bytes, bytearray)):
        data = data.decode("utf-8", "replace")
    if isinstance(data, str):
        data = json.loads(data)
    if isinstance(data, list):
        raw_layers = data
    elif isinstance(data, dict):
        raw_layers = data.get("Layers", [])
        if not isinstance(raw_layers, list):
            raw_layers = []
    else:
        raise TypeError(f"inspector data must be JSON text, a dict or a list, not {type(data).__name__}")
    layers: list[EngineLayer] = []
    names_only = 0
    any_metadata = False
    for raw in raw_layers:
        if isinstance(raw, str):
            names_only += 1
            foreign = _split_foreign(raw)
            layers.append(EngineLayer(raw, None, None, [], [], [], _is_myelin(raw, None), {"Name": raw}, foreign))
            continue
        if not isinstance(raw, dict):
            continue
        name = str(raw.get("Name", ""))
        ltype = raw.get("LayerType")
        tactic = raw.get("TacticName") or raw.get("TacticValue")
        md = raw.get("Metadata")
        if md is not None:
            any_metadata = True
        nodes = metadata_nodes(md, known_nodes)
        layers.append(EngineLayer(
            name=name,
            layer_type=str(ltype) if ltype is not None else None,
            tactic=str(tactic) if tactic is not None else None,
            inputs=_tensor_list(raw.get("Inputs")),
            outputs=_tensor_list(raw.get("Outputs")),
            onnx_nodes=nodes,
            myelin=_is_myelin(name, str(ltype) if ltype is not None else None),
            raw=raw,
            foreign_range=_split_foreign(name),
        ))
    if names_only:
        notes.append(
            f"{names_only} layer(s) are names only: the engine was built without ProfilingVerbosity.DETAILED, "
            f"so no dtypes or node metadata are available"
        )
    elif layers and not any_metadata:
        notes.append("no layer has Metadata (TensorRT < 8.6?): nodes cannot be mapped to layers")
    return layers, notes


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

    # -- constructors -----------------------------------------------------------------
    @classmethod
    def from_inspector_json(cls, data, plan: PrecisionPlan, *, typing: str = "?", backend: str = "tensorrt",
                            source: str = "inspector") -> LayerReport:
        """Parse inspector JSON (either schema) and observe every node of ``plan``."""
        if isinstance(data, (bytes, bytearray)):
            data = data.decode("utf-8", "replace")
        if isinstance(data, str):
            data = json.loads(data)
        known = KnownNodes.of(plan)
        layers, notes = parse_layers(data, known)
        schema = inspector_schema(data)
        if isinstance(data, dict) and data.get("_pytest_trt_source"):
            source = str(data["_pytest_trt_source"])
        nodes = _observe(plan, layers, notes, strong=typing == "strong")
        return cls(layers=layers, nodes=nodes, source=source, typing=typing, backend=backend, notes=notes,
                   schema=schema, io_tensors=inspector_io_tensors(data))

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
    def from_emulation(cls, plan: PrecisionPlan) -> LayerReport:
        """The emulate backend's report: each compute node emulated in its planned precision, by construction."""
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
        return cls(layers=[], nodes=nodes, source="emulation", typing="emulated", backend="emulate",
                   notes=["EMULATED on ONNX Runtime CPU: derived from the plan's realization (emulated = planned by "
                          "construction), not observed; this says nothing about what TensorRT would run (fusion, "
                          "Myelin, tactics)"])

    # -- queries ----------------------------------------------------------------------
    @property
    def emulated(self) -> bool:
        return self.source == "emulation"

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
        counts = Counter(o.evidence for o in rows if o.status != "fixed")
        return {e: counts.get(e, 0) for e in EVIDENCE}

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
        what = {"inspector": "TensorRT engine inspector", "network": "TensorRT network (before build)",
                "emulation": "EMULATION (not TensorRT)"}.get(self.source, self.source)
        return (f"{what}, {self.backend}, typing {self.typing}: {s['nodes']} nodes: {s['ok']} ok, "
                f"{s['mismatch']} mismatch, {s['unverifiable']} unverifiable, {s['fixed']} fixed; "
                f"{s['layers']} layers ({s['myelin_layers']} Myelin); evidence: "
                f"{evidence_text(self.evidence_counts())}")

    def table(self, *, statuses=None, max_width: int = 60) -> str:
        """A readable text table, one row per node (optionally only some statuses)."""
        rows = [o for o in self.nodes.values() if statuses is None or o.status in statuses]

        def cut(text: str) -> str:
            text = text or ""
            return text if len(text) <= max_width else "..." + text[-(max_width - 3):]

        header = ("node", "op", "planned", "observed", "status", "evidence", "layer")
        body = [
            (cut(o.node), o.op_type, o.planned or "-", o.observed or "-", o.status, o.evidence or "-",
             cut((o.layer or "-") + (" [myelin]" if o.myelin else "")))
            for o in rows
        ]
        widths = [max(len(str(r[i])) for r in [header, *body]) for i in range(len(header))]
        lines = [self.headline()]
        lines.extend(f"note: {n}" for n in self.notes)
        fmt = "  ".join(f"{{:<{w}}}" for w in widths)
        lines.append(fmt.format(*header))
        lines.append(fmt.format(*("-" * w for w in widths)))
        lines.extend(fmt.format(*r) for r in body)
        details = [o for o in rows if o.detail and o.status != "fixed" and not self.emulated]
        if details:
            lines.append("")
            lines.extend(f"{o.node}: {o.detail}" for o in details)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


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


def _observe(plan: PrecisionPlan, layers: list[EngineLayer], notes: list[str], *,
             strong: bool = False) -> dict[str, NodeObservation]:
    """Per plan node: status, evidence and detail (see the module docstring).

    ``strong``: the engine was built strongly typed (the network's types are the contract),
    so a node inferred from a consistent kernel boundary is ``ok``; otherwise it is
    ``unverifiable``.
    """
    order = list(plan.nodes)
    position = {n: i for i, n in enumerate(order)}
    carriers: dict[str, list[EngineLayer]] = {}
    for layer in layers:
        for n in layer.onnx_nodes:
            carriers.setdefault(n, []).append(layer)

    foreign_layers = [layer for layer in layers if layer.foreign_range is not None and not layer.onnx_nodes]
    # A {ForeignNode[first...last]} region without per-node metadata: its members are taken by graph
    # order between first and last (TensorRT names a region by its extent), for nodes no layer names.
    members: dict[int, list[str]] = {id(layer): list(layer.onnx_nodes) for layer in layers}
    span: dict[str, EngineLayer] = {}
    for layer in foreign_layers:
        first, last = layer.foreign_range
        if first in position and last in position:
            i, j = sorted((position[first], position[last]))
            inside = [n for n in order[i:j + 1] if n not in carriers]
        else:
            inside = [n for n in (first, last) if n in position and n not in carriers]
        members[id(layer)] = inside
        for n in inside:
            span.setdefault(n, layer)

    def planned_of(name: str) -> str | None:
        d = plan.nodes.get(name)
        if d is None or d.kind != "compute":
            return None
        return d.precision

    # A layer is uniform when every node it carries is a plan node and all planned compute
    # nodes among them share one precision (fixed nodes do not count). Nodes of the
    # realization (Casts), unknown to the plan, make it non-uniform.
    uniform: dict[int, str | None] = {}
    for layer in layers:
        precs = set()
        foreign_nodes = False
        for n in members[id(layer)]:
            if n not in plan.nodes:
                foreign_nodes = True
                continue
            p = planned_of(n)
            if p is not None:
                precs.add(p)
        uniform[id(layer)] = next(iter(precs)) if (len(precs) == 1 and not foreign_nodes) else None

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

    tensor_precision = getattr(plan, "tensor_precision", {}) or {}
    producer: dict[str, str] = {}
    with contextlib.suppress(AttributeError):
        for n in plan.model.proto.graph.node:
            for o in n.output:
                if o:
                    producer[o] = n.name

    def expected_of(layer: EngineLayer, tensor: str) -> str | None:
        """The plan's storage of a kernel-boundary tensor, when the plan or the realization says it."""
        if tensor in tensor_precision:
            return tensor_precision[tensor]
        realized = _realized_storage(tensor)
        if realized is not None:
            return realized
        return uniform[id(layer)]

    out: dict[str, NodeObservation] = {}
    for name, d in plan.nodes.items():
        op = d.op_type
        lays = carriers.get(name, [])
        lnames = tuple(layer.name for layer in lays)
        myelin = any(layer.myelin for layer in lays)
        label = " | ".join(lnames) if lnames else None
        if d.kind != "compute" or d.precision is None:
            out[name] = NodeObservation(name, op, None, None, label, myelin, "fixed",
                                        "left as written by the plan (no float compute)", (), lnames)
            continue
        planned = d.precision
        if not lays and name in span:
            lays = [span[name]]
            label, myelin = span[name].name, True
        if not lays:
            if foreign_layers:
                detail = ("in no layer's Metadata; the engine has Myelin region(s) without per-node metadata "
                          "that may contain it")
            else:
                detail = "in no layer's Metadata (fused away, or the engine lacks DETAILED layer information)"
            out[name] = NodeObservation(name, op, planned, None, label, myelin, "unverifiable", detail, (), lnames,
                                        "unverifiable")
            continue
        # Evidence per float output of each carrying layer:
        #   own      - the output is this node's own ONNX output, or the layer carries this node alone:
        #              the node's precision is read (observed); expected = its planned storage;
        #   boundary - the output of a kernel fusing this node with others: the node's precision is
        #              inferred; expected = the tensor's planned storage (plan or realization), or the
        #              shared precision of a uniform kernel, else unknown.
        own: list[tuple[str, str, str, str]] = []  # (layer, tensor, dtype, expected)
        boundary: list[tuple[str, str, str, str | None, bool]] = []  # (layer, tensor, dtype, expected, uniform)
        for layer in lays:
            alone = members[id(layer)] == [name]
            for t in layer.outputs:
                if t.dtype not in FLOAT_PRECISIONS:
                    continue
                if producer.get(t.name) == name or alone:
                    own.append((layer.name, t.name, t.dtype, tensor_precision.get(t.name)
                                or _realized_storage(t.name) or planned))
                else:
                    boundary.append((layer.name, t.name, t.dtype, expected_of(layer, t.name),
                                     uniform[id(layer)] is not None))
        all_dtypes = tuple(sorted({c[2] for c in own} | {b[2] for b in boundary}))
        if own:
            observed = tuple(sorted({c[2] for c in own}))
            observed = observed[0] if len(observed) == 1 else "mixed"
        else:
            observed = all_dtypes[0] if len(all_dtypes) == 1 else ("mixed" if all_dtypes else None)
        where = " inside a Myelin region" if myelin else ""
        if not all_dtypes:
            out[name] = NodeObservation(name, op, planned, None, label, myelin, "unverifiable",
                                        "no float dtype at the boundary of its layer(s)", (), lnames, "unverifiable")
            continue
        if own:
            bad = [c for c in own if c[2] != c[3]]
            if bad:
                lay, tensor, dt, exp = bad[0]
                status = "mismatch"
                detail = f"planned {exp}, but its output {tensor!r} is {dt} (layer {lay}){where}"
                if len(all_dtypes) > 1:
                    detail += f"; boundary dtypes are mixed: {', '.join(all_dtypes)}"
            else:
                status = "ok"
                odd = [c for c in own if c[3] != planned]
                detail = ("; ".join(f"output {c[1]!r} is planned {c[3]} (plan storage, e.g. a graph output)"
                                    for c in odd[:2]))
            out[name] = NodeObservation(name, op, planned, observed, label, myelin, status, detail, all_dtypes,
                                        lnames, "observed")
            continue
        # Inferred from the boundary of a fused kernel.
        kernel = boundary[0][0]
        dts = ", ".join(sorted({b[2] for b in boundary}))
        checkable = [b for b in boundary if b[3] is not None]
        inconsistent = [b for b in checkable if b[2] != b[3]]
        if inconsistent and all(b[4] for b in inconsistent):
            lay, tensor, dt, exp, _ = inconsistent[0]
            status = "mismatch"
            detail = (f"planned {planned}, but layer {lay}, which carries only nodes planned {planned}, "
                      f"outputs {tensor!r} in {dt}{where} (inferred from the kernel boundary)")
            if len(all_dtypes) > 1:
                detail += f"; boundary dtypes are mixed: {', '.join(all_dtypes)}"
        elif inconsistent or (not checkable and any(b[2] != planned for b in boundary)):
            status = "unverifiable"
            detail = (f"fused into {kernel} with nodes planned in other precisions (or Cast nodes of the "
                      f"realization); its boundary dtypes ({dts}) cannot show this node's precision")
        elif strong:
            status = "ok"
            detail = f"{STRONG_TYPING_CONSISTENT} (kernel {kernel}: {dts})"
        else:
            status = "unverifiable"
            detail = (f"inferred from the kernel boundary: fused into {kernel}, whose outputs are {dts}; its "
                      f"precision inside the kernel is not visible, and without strong typing TensorRT treats "
                      f"precision as a hint that fused (Myelin) kernels are known to ignore")
        out[name] = NodeObservation(name, op, planned, observed, label, myelin, status, detail, all_dtypes, lnames,
                                    "inferred")
    return out
