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
* :meth:`LayerReport.from_emulation` -- the ``emulate`` backend: observed = planned by
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
  nodes) only shows its boundary: matching it is reported ``ok`` with that caveat,
  differing from it is ``unverifiable``, never a verdict about the node.
* A node named in no layer's ``Metadata`` is ``unverifiable``, never passed. A Myelin
  region shown as one ``{ForeignNode[first...last]}`` layer without per-node metadata
  (lower profiling verbosity) names only its first and last node: those, and every other
  node it may contain, are unverifiable.
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
    why when the status is not plainly ``ok``.
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

    def to_json(self) -> dict[str, Any]:
        return {
            "node": self.node, "op_type": self.op_type, "planned": self.planned, "observed": self.observed,
            "observed_dtypes": list(self.observed_dtypes), "layer": self.layer, "layers": list(self.layers),
            "myelin": self.myelin, "status": self.status, "detail": self.detail,
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
        nodes = _observe(plan, layers, notes)
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
        """The emulate backend's report: each compute node observed = planned, by construction."""
        nodes = {}
        for name, d in plan.nodes.items():
            if d.precision is None or d.kind != "compute":
                nodes[name] = NodeObservation(name, d.op_type, None, None, None, False, "fixed",
                                              "left as written by the plan (no float compute)")
            else:
                nodes[name] = NodeObservation(
                    name, d.op_type, d.precision, d.precision, None, False, "ok",
                    "emulated: the emulation graph rounds this node's outputs to the planned precision",
                    (d.precision,), (),
                )
        return cls(layers=[], nodes=nodes, source="emulation", typing="emulated", backend="emulate",
                   notes=["EMULATED on ONNX Runtime CPU: observed = planned by construction; this says nothing "
                          "about what TensorRT would run (fusion, Myelin, tactics)"])

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

    # -- output -----------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "emulated": self.emulated,
            "typing": self.typing,
            "backend": self.backend,
            "schema": self.schema,
            "summary": self.summary(),
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
                f"{s['layers']} layers ({s['myelin_layers']} Myelin)")

    def table(self, *, statuses=None, max_width: int = 60) -> str:
        """A readable text table, one row per node (optionally only some statuses)."""
        rows = [o for o in self.nodes.values() if statuses is None or o.status in statuses]

        def cut(text: str) -> str:
            text = text or ""
            return text if len(text) <= max_width else "..." + text[-(max_width - 3):]

        header = ("node", "op", "planned", "observed", "status", "layer")
        body = [
            (cut(o.node), o.op_type, o.planned or "-", o.observed or "-", o.status,
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


# --------------------------------------------------------------------------------------
# Observation
# --------------------------------------------------------------------------------------
def _observe(plan: PrecisionPlan, layers: list[EngineLayer], notes: list[str]) -> dict[str, NodeObservation]:
    carriers: dict[str, list[EngineLayer]] = {}
    for layer in layers:
        for n in layer.onnx_nodes:
            carriers.setdefault(n, []).append(layer)

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
        for n in layer.onnx_nodes:
            if n not in plan.nodes:
                foreign_nodes = True
                continue
            p = planned_of(n)
            if p is not None:
                precs.add(p)
        uniform[id(layer)] = next(iter(precs)) if (len(precs) == 1 and not foreign_nodes) else None

    foreign_layers = [layer for layer in layers if layer.foreign_range is not None and not layer.onnx_nodes]
    if foreign_layers:
        notes.append(
            f"{len(foreign_layers)} Myelin region(s) without per-node metadata "
            f"({', '.join(layer.name for layer in foreign_layers[:2])}{', ...' if len(foreign_layers) > 2 else ''}): "
            f"the nodes inside cannot be verified; build with ProfilingVerbosity.DETAILED"
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
        if not lays:
            in_range = [layer for layer in foreign_layers if name in layer.foreign_range]
            if in_range:
                detail = (f"named only by the range of Myelin region {in_range[0].name} (no per-node metadata): "
                          f"its precision inside the region is not visible")
                myelin = True
                label = in_range[0].name
            elif foreign_layers:
                detail = ("in no layer's Metadata; the engine has Myelin region(s) without per-node metadata "
                          "that may contain it")
            else:
                detail = "in no layer's Metadata (fused away, or the engine lacks DETAILED layer information)"
            out[name] = NodeObservation(name, op, planned, None, label, myelin, "unverifiable", detail, (), lnames)
            continue
        # Evidence per float output of each carrying layer:
        #   exact    - the output is this node's own ONNX output: expected = its planned storage;
        #   layer    - the layer carries only nodes planned like this one: expected = the tensor's
        #              planned storage if it is an ONNX tensor, else the node's precision;
        #   boundary - a layer fusing nodes of several precisions: says nothing definite.
        checked: list[tuple[str, str, str, str]] = []  # (layer, tensor, dtype, expected)
        boundary: list[tuple[str, str, str]] = []
        for layer in lays:
            for t in layer.outputs:
                if t.dtype not in FLOAT_PRECISIONS:
                    continue
                if producer.get(t.name) == name or uniform[id(layer)] is not None:
                    checked.append((layer.name, t.name, t.dtype, tensor_precision.get(t.name, planned)))
                else:
                    boundary.append((layer.name, t.name, t.dtype))
        all_dtypes = tuple(sorted({c[2] for c in checked} | {b[2] for b in boundary}))
        observed = all_dtypes[0] if len(all_dtypes) == 1 else ("mixed" if all_dtypes else None)
        bad = [c for c in checked if c[2] != c[3]]
        if not all_dtypes:
            status, detail = "unverifiable", "no float dtype at the boundary of its layer(s)"
        elif bad:
            lay, tensor, dt, exp = bad[0]
            status = "mismatch"
            if producer.get(tensor) == name:
                detail = f"planned {exp}, but its output {tensor!r} is {dt} (layer {lay})"
            else:
                detail = (f"planned {planned}, but layer {lay}, which carries only nodes planned {planned}, "
                          f"outputs {tensor!r} in {dt}")
            detail += " inside a Myelin region" if myelin else ""
            if len(all_dtypes) > 1:
                detail += f"; boundary dtypes are mixed: {', '.join(all_dtypes)}"
        elif checked:
            status = "ok"
            odd = [c for c in checked if c[3] != planned]
            detail = ("; ".join(f"output {c[1]!r} is planned {c[3]} (plan storage, e.g. a graph output)"
                                for c in odd[:2]))
        elif all(b[2] == planned for b in boundary):
            status, detail = "ok", "boundary dtype only: fused with nodes of other precisions"
        else:
            status = "unverifiable"
            detail = (f"fused into {boundary[0][0]} with nodes planned in other precisions (or Cast nodes of the "
                      f"realization); its boundary dtypes ({', '.join(sorted({b[2] for b in boundary}))}) cannot "
                      f"show this node's precision")
        out[name] = NodeObservation(name, op, planned, observed, label, myelin, status, detail, all_dtypes, lnames)
    return out
