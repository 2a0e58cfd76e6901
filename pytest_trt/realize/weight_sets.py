"""Weight sets and weight binding: realizations are graph rewrites, weights are shared.

A realization (strong, emulation, the FP32 upcast) of a model with external weights is a
*graph*: its large initializers are references, recorded in its ``metadata_props`` under
:data:`REFS_KEY` as ``{initializer: [source initializer, set]}``. ``set`` is ``"model"`` (the
model's own bytes, through its :class:`~pytest_trt.model.weights.WeightStore`) or a precision
(``"fp16"``, ``"bf16"``, ``"fp32"``): the model's external float initializers converted once to
that precision, a *weight set*, shared by every policy's realization. A realization therefore
adds only its graph (kilobytes) to the cache; the first FP16 (BF16) realization of a model adds
its FP16 (BF16) weight set, half the FP32 bytes. A reference whose declared element type
differs from its set's (the emulation graph's FP32 weights rounded through FP16; the upcast of
FP16 weights) is converted when bound.

Binding (:func:`bind`) turns a realization into what a runtime takes without a copy of the
weights on disk or in the protobuf:

* ONNX Runtime: the graph without the referenced initializers, each declared a graph input, and
  the weights passed as feeds on every run (:class:`BoundWeights`): memory-mapped arrays that
  ONNX Runtime reads in place. Measured on a 1.61 GB model (onnxruntime 1.32): a session from
  the path copies every weight into its own memory (1.61 GB anonymous + the mapped file: 3.2 GB
  peak when the weights are also given through ``add_external_initializers``, which copies
  too); weights as fed inputs: 0.07 s to create, 1.65 GB peak, all of it the file's pages.
* TensorRT (>= 10.13) and TensorRT-RTX: ``OnnxParser.load_model_proto`` + ``load_initializer``
  (a pointer to each mapped array) + ``parse_model_proto``; older TensorRT parses a temporary
  folder holding the graph and a data file (a copy; stated in the build record).

A weight set is the cache entry kind ``weights`` (files ``weights.<precision>.bin`` and
``index.json``); a hit on it is validated by size and the digest memo recorded when it was
sealed (weights are data, never deserialized as code). Without a cache, converted tensors are
made in memory when bound.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx
from onnx import TensorProto, helper

from ..cache.files import tree_size
from ..core.dtypes import ELEM_BFLOAT16, ELEM_OF_PRECISION, PRECISION_OF_ELEM, normalize_precision
from ..errors import ModelError
from ..model.weights import ALIGN, Slot, convert_values, set_file_name, set_layout
from ..model.weights.identity import copy_fields
from ..model.weights.store import map_range

if TYPE_CHECKING:  # pragma: no cover
    from ..cache import ArtifactCache
    from ..model import Model

__all__ = [
    "INDEX_FILE", "MODEL_SET", "REFS_KEY", "WEIGHTS_FORMAT", "WEIGHTS_KIND", "BoundWeights", "WeightSets", "bind",
    "read_refs", "reference", "save_with_weights", "set_parts", "write_refs",
]

WEIGHTS_KIND = "weights"
#: bumped when the content of a weight set changes for the same model (conversion rules, layout)
WEIGHTS_FORMAT = 1
INDEX_FILE = "index.json"
REFS_KEY = "pytest_trt.weights"
MODEL_SET = "model"
_CHUNK = 1 << 22  # elements converted at a time


# --------------------------------------------------------------------------------------
# references in realized graphs
# --------------------------------------------------------------------------------------
def read_refs(proto: onnx.ModelProto) -> dict[str, list[str]]:
    """``{initializer: [source initializer, set]}`` recorded in ``proto`` (empty when none)."""
    for prop in proto.metadata_props:
        if prop.key == REFS_KEY:
            return dict(json.loads(prop.value))
    return {}


def write_refs(proto: onnx.ModelProto, refs: dict[str, list[str]]) -> None:
    """Record ``refs`` in ``proto``'s metadata (replacing what was there); nothing when empty."""
    kept = [p for p in proto.metadata_props if p.key != REFS_KEY]
    del proto.metadata_props[:]
    proto.metadata_props.extend(kept)
    if refs:
        prop = proto.metadata_props.add()
        prop.key, prop.value = REFS_KEY, json.dumps(refs, sort_keys=True)


def reference(model: Model, source: str, precision: str, name: str, elem_type: int | None = None) -> TensorProto:
    """An external-data TensorProto named ``name`` holding ``source`` (an external initializer of
    ``model``) in ``precision``'s weight set (its slot's offset/length in ``weights.<p>.bin``), or
    ``model``'s own bytes when ``precision`` is the stored one; declared as ``elem_type`` (default:
    the set's type). Record it with :func:`write_refs` as ``[source, set]`` (see :func:`ref_set`)."""
    src = model.weights.tensor(source)
    stored = PRECISION_OF_ELEM.get(src.data_type)
    t = TensorProto()
    t.name = name
    t.dims.extend(src.dims)
    t.data_location = TensorProto.EXTERNAL
    if stored == precision:
        ref = model.weights.ref(source)
        location, offset, length = ref.location, ref.offset, ref.length
        t.data_type = src.data_type if elem_type is None else elem_type
    else:
        slot = set_layout(model.weights.external_tensors(), precision)[source]
        location, offset, length = set_file_name(precision), slot.offset, slot.length
        t.data_type = ELEM_OF_PRECISION[precision] if elem_type is None else elem_type
    for key, value in (("location", location), ("offset", str(offset)), ("length", str(length))):
        entry = t.external_data.add()
        entry.key, entry.value = key, value
    return t


def ref_set(model: Model, source: str, precision: str) -> str:
    """The set a reference to ``source`` in ``precision`` reads: ``"model"`` when stored so, else the precision."""
    stored = PRECISION_OF_ELEM.get(model.weights.tensor(source).data_type)
    return MODEL_SET if stored == precision else precision


# --------------------------------------------------------------------------------------
# weight sets
# --------------------------------------------------------------------------------------
def set_parts(model: Model, precision: str) -> dict[str, Any]:
    """Cache key parts of ``model``'s ``precision`` weight set (docs/DESIGN.md "Cache keys")."""
    return {"what": "weight-set", "model": model.sha256, "precision": precision, "format": WEIGHTS_FORMAT}


class WeightSets:
    """The weight sets of one model: from ``cache`` (built on first use), or made in memory without one.

    ``written`` counts the bytes of sets this object built (what a realization added to the cache).
    """

    def __init__(self, model: Model, cache: ArtifactCache | None = None, *, rebuild: bool = False) -> None:
        self.model = model
        self.cache = cache
        self.rebuild = rebuild
        self.written = 0
        self._layouts: dict[str, dict[str, Slot]] = {}
        self._files: dict[str, Path] = {}

    def layout(self, precision: str) -> dict[str, Slot]:
        if precision not in self._layouts:
            self._layouts[precision] = set_layout(self.model.weights.external_tensors(), precision)
        return self._layouts[precision]

    def file(self, precision: str) -> Path | None:
        """The set's data file in the cache (built now when missing); None without a cache."""
        precision = normalize_precision(precision)
        if self.cache is None:
            return None
        if precision not in self._files:
            layout = self.layout(precision)
            result = self.cache.get_or_build(
                WEIGHTS_KIND, set_parts(self.model, precision),
                lambda tmp: self._build(tmp, precision, layout), rebuild=self.rebuild,
                label=f"{self.model.label} weights {precision}")
            if not result.cache_hit:
                self.written += tree_size(result.path)
            self._files[precision] = result.path / set_file_name(precision)
        return self._files[precision]

    def raw(self, precision: str, name: str) -> np.ndarray:
        """The bytes of ``name`` in the ``precision`` set (uint8; mapped from the cache, or converted now)."""
        slot = self.layout(precision).get(name)
        if slot is None:
            raise ModelError(f"{self.model.label}: initializer {name!r} has no place in the {precision} weight set "
                             f"(not an external float initializer of another precision)")
        path = self.file(precision)
        if path is None:
            return convert_values(self.model.weights.raw(name), slot.source_elem, precision)[0]
        return map_range(path, slot.offset, slot.length)

    def _build(self, tmp: Path, precision: str, layout: dict[str, Slot]) -> dict:
        """Write the set: each slot converted chunk by chunk from the model's stored bytes, hashed as written."""
        store = self.model.weights
        index: dict[str, Any] = {}
        clamped_total = 0
        start = time.perf_counter()
        digest = hashlib.sha256()
        zeros = bytes(ALIGN)
        with open(tmp / set_file_name(precision), "wb") as out:
            end = 0
            for name, slot in layout.items():
                pad = slot.offset - end
                if pad:  # (the alignment gap: written, so the file is hashed as it lies)
                    out.write(zeros[:pad])
                    digest.update(zeros[:pad])
                src_item = _itemsize(slot.source_elem)
                n = slot.length // _itemsize(ELEM_OF_PRECISION[precision])
                clamped = 0
                buf = np.empty(min(n, _CHUNK) * src_item, dtype=np.uint8)
                for first in range(0, n, _CHUNK):
                    k = min(_CHUNK, n - first)
                    got = store.read_into(name, buf[:k * src_item], first * src_item)
                    converted, c = convert_values(buf[:got], slot.source_elem, precision)
                    clamped += c
                    out.write(converted.data)
                    digest.update(converted.data)
                index[name] = {"offset": slot.offset, "length": slot.length, "clamped": clamped}
                clamped_total += clamped
                end = slot.offset + slot.length
        (tmp / INDEX_FILE).write_text(json.dumps({
            "model": self.model.label, "precision": precision, "tensors": index, "clamped": clamped_total,
            "convert_seconds": round(time.perf_counter() - start, 3)}, indent=0, sort_keys=True))
        return {"digests": {set_file_name(precision): digest.hexdigest()}}

    def clamped(self, precision: str) -> int:
        """Values the conversion saturated (FP16 at +-65504, BF16 at its largest finite), from the set's index."""
        path = self.file(precision)
        if path is None:
            return 0
        try:
            return int(json.loads((path.parent / INDEX_FILE).read_text()).get("clamped", 0))
        except (OSError, ValueError):
            return 0


def _itemsize(elem: int) -> int:
    return int(np.dtype(helper.tensor_dtype_to_np_dtype(elem)).itemsize)


# --------------------------------------------------------------------------------------
# binding
# --------------------------------------------------------------------------------------
@dataclass
class BoundWeights:
    """A graph whose referenced initializers became graph inputs, and their values.

    ``arrays``: ``{name: array}`` in the declared element type (BFLOAT16 as uint16 bit patterns),
    mapped from files where no conversion was needed. Keep this object alive as long as the
    session or parser that reads the arrays.
    """

    proto: onnx.ModelProto
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    elem_types: dict[str, int] = field(default_factory=dict)
    #: the ``reuse`` table of :func:`bind` (an engine's weights shared by its sessions), if any: emptied
    #: with the sessions when a run releases its heavy sessions
    shared: dict[str, np.ndarray] | None = None

    @property
    def nbytes(self) -> int:
        return sum(int(a.nbytes) for a in self.arrays.values())

    def ort_feeds(self, ort: Any) -> dict[str, Any]:
        """The weights as ONNX Runtime feeds (OrtValues over the arrays for BFLOAT16; no copy)."""
        feeds: dict[str, Any] = {}
        for name, arr in self.arrays.items():
            if self.elem_types[name] == ELEM_BFLOAT16:
                feeds[name] = ort.OrtValue.ortvalue_from_numpy_with_onnx_type(arr, ELEM_BFLOAT16)
            else:
                feeds[name] = arr
        return feeds


def _value(model: Model, sets: WeightSets | None, tensor: TensorProto, source: str, set_name: str) -> np.ndarray:
    if sets is None:
        sets = WeightSets(model)
    stored = model.weights.tensor(source).data_type if set_name == MODEL_SET else ELEM_OF_PRECISION[set_name]
    declared = tensor.data_type
    dtype = np.uint16 if declared == ELEM_BFLOAT16 else helper.tensor_dtype_to_np_dtype(declared)
    shape = tuple(int(d) for d in tensor.dims)
    if declared == stored:  # mapped, not copied
        raw = model.weights.raw(source) if set_name == MODEL_SET else sets.raw(set_name, source)
        return raw.view(dtype).reshape(shape)
    # converted (an emulation graph's FP32 weights, rounded through FP16): the stored tensor is mapped
    # and converted in one pass (ONNX Runtime's Cast where installed) straight into the result, the
    # one array that stays; the mapping goes with this call
    raw = model.weights.raw(source) if set_name == MODEL_SET else sets.raw(set_name, source)
    return convert_values(raw, stored, PRECISION_OF_ELEM[declared])[0].view(dtype).reshape(shape)


def bind(proto: onnx.ModelProto, model: Model, sets: WeightSets | None = None, *, as_inputs: bool = True,
         reuse: dict[str, np.ndarray] | None = None) -> BoundWeights:
    """Resolve the references of ``proto`` (a realization of ``model``, or ``model.proto`` itself).

    ``as_inputs``: the returned graph declares every referenced initializer a graph input (what
    ONNX Runtime is given); otherwise it keeps them as external-data initializers (TensorRT's
    ``load_model_proto`` + ``load_initializer``). ``reuse``: arrays bound before for the same
    realization (``{initializer: array}``), taken instead of mapping or converting again, and
    filled with what this call binds (several sessions of one engine share one set of weights).
    """
    refs = read_refs(proto)
    bound = BoundWeights(onnx.ModelProto(), shared=reuse)
    out = bound.proto
    copy_fields(proto, out, skip="graph")
    copy_fields(proto.graph, out.graph, skip="initializer")
    listed = {vi.name for vi in out.graph.input}
    for t in proto.graph.initializer:
        if not (t.HasField("data_location") and t.data_location == TensorProto.EXTERNAL):
            out.graph.initializer.append(t)
            continue
        source, set_name = refs.get(t.name, (t.name, MODEL_SET))
        if reuse is not None and t.name in reuse:
            bound.arrays[t.name] = reuse[t.name]
        else:
            bound.arrays[t.name] = _value(model, sets, t, source, set_name)
            if reuse is not None:
                reuse[t.name] = bound.arrays[t.name]
        bound.elem_types[t.name] = t.data_type
        if as_inputs:
            if t.name not in listed:
                out.graph.input.append(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
        else:
            out.graph.initializer.append(t)
    return bound


def save_with_weights(proto: onnx.ModelProto, model: Model, path: Path, sets: WeightSets | None = None) -> None:
    """Write ``proto`` to ``path`` as a self-contained ONNX model: its referenced weights copied into
    ``<path>.data`` beside it (an export is the one place weights are copied on purpose)."""
    path = Path(path)
    data_name = path.name + ".data"
    bound = bind(proto, model, sets, as_inputs=False)
    out = bound.proto
    write_refs(out, {})
    offset = 0
    with open(path.parent / data_name, "wb") as f:
        for t in out.graph.initializer:
            if t.name not in bound.arrays:
                continue
            arr = bound.arrays[t.name]
            offset += -offset % 4096
            f.seek(offset)
            f.write(np.ascontiguousarray(arr).data)
            del t.external_data[:]
            for key, value in (("location", data_name), ("offset", str(offset)), ("length", str(arr.nbytes))):
                entry = t.external_data.add()
                entry.key, entry.value = key, value
            offset += arr.nbytes
        f.truncate(offset)
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_bytes(out.SerializeToString())
    os.replace(tmp, path)
