"""TensorRT's engine-inspector JSON, parsed into per-layer records (no TensorRT import).

The verification source of the pipeline: ``IEngineInspector.get_engine_information(
LayerInformationFormat.JSON)`` of an engine built with ``ProfilingVerbosity.DETAILED`` (or a
network before building, in the same shape) becomes a list of :class:`EngineLayer`, each with
its boundary tensors (:class:`TensorInfo`, dtype normalized to ``fp32``/``fp16``/...) and the
ONNX nodes its ``Metadata`` names. Both schemas are read: TensorRT 10.x (one
``"Format/Datatype"`` string per tensor, top-level ``Bindings``) and 11.x (format and data
type split, top-level ``I/O Tensors``). The TensorRT backend (names of layers in build logs,
debug tensors) and the domain (:class:`~pytest_trt.layers.report.LayerReport`, which judges every
plan node against these records) both read the engine through this module; it knows the
JSON, not the TensorRT API.

Sources: ``tools/experimental/trt-engine-explorer/trex/parser.py`` and ``activations.py``
(NVIDIA/TensorRT ``release/10.16``): Metadata separators and the data-type strings of the
inspector; onnx/onnx-tensorrt ``onnx2trt_utils.cpp`` ``processMetadata``: the
``[ONNX Layer: <node> | <caller> (<function>) ...]`` format of ``ILayer.metadata``; the
TensorRT 11.0 migration guide (``tensorrt-10x-to-11x-IEngineInspector.html``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ..core.dtypes import PRECISIONS

__all__ = [
    "EngineLayer",
    "FLOAT_PRECISIONS",
    "KnownNodes",
    "METADATA_SEPARATORS",
    "MetadataEntry",
    "ONNX_LAYER_PREFIX",
    "TensorInfo",
    "dtype_from_text",
    "inspector_io_tensors",
    "inspector_schema",
    "load_inspector_json",
    "metadata_nodes",
    "myelin_region",
    "parse_layers",
    "parse_metadata",
    "split_tensor_entry",
]

#: the float precisions a plan assigns (and a kernel boundary can show)
FLOAT_PRECISIONS = PRECISIONS
_LOCAL_FUNCTION = "Local Function: "
_FOREIGN_RE = re.compile(r"^\{ForeignNode\[(.*)\]\}$", re.DOTALL)


# --------------------------------------------------------------------------------------
# Data types
# --------------------------------------------------------------------------------------
#: Inspector data-type strings, tested in this order (first match wins). They cover the
#: 10.x ``Format/Datatype`` strings ("Row major linear FP32", "Channel major FP16 format
#: where channel % 8 == 0", "Row major linear BFloat16 format", "Row major Int8 format",
#: "Row major linear BOOL") and the plain Myelin/kgen names ("Half", "Float", "BFloat16",
#: "Int64", ...) listed in trex ``activations.py`` (release/10.16), and 11.x's split
#: ``DataType`` values ("Float" in the migration guide's I/O Tensors example), and
#: trt.DataType member names ("HALF", "DataType.FLOAT").
_DTYPE_PATTERNS = [(re.compile(p, re.IGNORECASE), name) for p, name in (
    (r"\b(?:bfloat16|bf16)\b", "bf16"),
    (r"\b(?:fp16|half|float16)\b", "fp16"),
    (r"\b(?:fp32|float|float32)\b", "fp32"),
    (r"\b(?:double|fp64|float64)\b", "fp64"),
    (r"\b(?:fp8|fp8e4m3|e4m3)\b", "fp8"),
    (r"\b(?:fp4|fp4e2m1)\b", "fp4"),
    (r"\be8m0\b", "e8m0"),
    (r"\buint8\b", "uint8"),
    (r"\bint8\b", "int8"),
    (r"\buint16\b", "uint16"),
    (r"\bint16\b", "int16"),
    (r"\buint32\b", "uint32"),
    (r"\bint32\b", "int32"),
    (r"\buint64\b", "uint64"),
    (r"\bint64\b", "int64"),
    (r"\bint4\b", "int4"),
    (r"\bbool(?:ean)?\b", "bool"),
)]


def dtype_from_text(text) -> str | None:
    """Normalize an inspector data-type / format string; None for "Unknown format", "N/A", ""."""
    if text is None:
        return None
    s = str(text).replace(".", " ")
    for pattern, name in _DTYPE_PATTERNS:
        if pattern.search(s):
            return name
    return None


# --------------------------------------------------------------------------------------
# Inspector JSON schema (10.x vs 11.x)
# --------------------------------------------------------------------------------------
#: Layer ``Metadata`` joins the entries of fused layers with \x1e (record separator; trex
#: parser.py ``fix_metadata``: "TensorRT 8.6 introduced the Metadata field, with a non-ASCII
#: character") and, since 10.0, also \x1f (trex ``fix_unicode``, NVIDIA/TensorRT#2779).
METADATA_SEPARATORS = ("\x1e", "\x1f")
ONNX_LAYER_PREFIX = "[ONNX Layer: "


def split_tensor_entry(entry: dict) -> tuple[str | None, str | None]:
    """``(dtype, format)`` of one inspector ``Inputs``/``Outputs`` entry, either schema.

    10.x: one ``"Format/Datatype"`` string ("Row major linear FP32", or "Half" for kgen).
    11.x: the field is split (11.0 migration guide); the data type key is spelled
    ``DataType`` in the guide's I/O Tensors example, ``Datatype`` appears in NVIDIA's
    ``.agents/skills/trt-perf-analysis/scripts/trt_perf/data.py`` (TensorRT main), so both
    spellings (and ``Data Type``) are accepted. The exact 11.x per-layer key is NOT
    verified on a real engine.
    """
    combined = entry.get("Format/Datatype")
    if combined is not None:
        return dtype_from_text(combined), str(combined)
    dtype_text = None
    for key in ("DataType", "Datatype", "Data Type", "Type"):
        if entry.get(key) is not None:
            dtype_text = entry[key]
            break
    fmt = entry.get("Format")
    dtype = dtype_from_text(dtype_text) if dtype_text is not None else dtype_from_text(fmt)
    return dtype, (str(fmt) if fmt is not None else None)


def inspector_schema(data) -> str:
    """``"10.x"`` (top-level ``Bindings``), ``"11.x"`` (``I/O Tensors``) or ``"unknown"``."""
    if isinstance(data, dict):
        if "I/O Tensors" in data:
            return "11.x"
        if "Bindings" in data:
            return "10.x"
    return "unknown"


def inspector_io_tensors(data) -> list[dict[str, Any]]:
    """Engine I/O tensors from either schema: ``[{"name", "mode", "dtype"}]`` (mode/dtype may be None)."""
    if not isinstance(data, dict):
        return []
    if isinstance(data.get("I/O Tensors"), list):
        out = []
        for t in data["I/O Tensors"]:
            if isinstance(t, dict):
                dtype, _ = split_tensor_entry(t)
                out.append({"name": str(t.get("Name", "")), "mode": t.get("IOMode"), "dtype": dtype})
            else:
                out.append({"name": str(t), "mode": None, "dtype": None})
        return out
    if isinstance(data.get("Bindings"), list):
        return [{"name": str(b), "mode": None, "dtype": None} for b in data["Bindings"]]
    return []


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
    if lt:  # another known type: a reformat named after the kgen kernel it feeds ("... to __myl_X_myl0_30") is not one
        return name.startswith("__myl")
    return name.startswith("__myl") or re.search(r"_myl\d+(?:_\d+)?$", name) is not None


_MYL_RE = re.compile(r"_myl(\d+)_\d+$")


def myelin_region(layer: str | None) -> str | None:
    """The Myelin region a layer belongs to: ``myl<N>`` for ``..._myl<N>_<M>`` kernels, else the layer name."""
    if not layer:
        return None
    first = layer.split(" | ")[0]
    m = _MYL_RE.search(first)
    return f"myl{m.group(1)}" if m else first


def _tensor_list(entries) -> list[TensorInfo]:
    out: list[TensorInfo] = []
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


def load_inspector_json(data: Any) -> Any:
    """Inspector JSON as Python data: text and bytes are decoded, a dict or list is returned as is."""
    if isinstance(data, (bytes, bytearray)):
        data = data.decode("utf-8", "replace")
    if isinstance(data, str):
        data = json.loads(data)
    return data


def _layer_record(raw: dict, known_nodes) -> EngineLayer:
    """One layer entry of the inspector JSON (a dict) as an :class:`EngineLayer`."""
    name = str(raw.get("Name", ""))
    ltype = raw.get("LayerType")
    layer_type = str(ltype) if ltype is not None else None
    tactic = raw.get("TacticName") or raw.get("TacticValue")
    return EngineLayer(
        name=name,
        layer_type=layer_type,
        tactic=str(tactic) if tactic is not None else None,
        inputs=_tensor_list(raw.get("Inputs")),
        outputs=_tensor_list(raw.get("Outputs")),
        onnx_nodes=metadata_nodes(raw.get("Metadata"), known_nodes),
        myelin=_is_myelin(name, layer_type),
        raw=raw,
        foreign_range=_split_foreign(name),
    )


def parse_layers(data, known_nodes=None) -> tuple[list[EngineLayer], list[str]]:
    """Inspector JSON (str, dict or list of layers) -> ``(layers, notes)``."""
    notes: list[str] = []
    data = load_inspector_json(data)
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
        if raw.get("Metadata") is not None:
            any_metadata = True
        layers.append(_layer_record(raw, known_nodes))
    if names_only:
        notes.append(
            f"{names_only} layer(s) are names only: the engine was built without ProfilingVerbosity.DETAILED, "
            f"so no dtypes or node metadata are available"
        )
    elif layers and not any_metadata:
        notes.append("no layer has Metadata (TensorRT < 8.6?): nodes cannot be mapped to layers")
    return layers, notes

