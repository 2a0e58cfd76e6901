"""Locating a big model's divergence in segments: never every activation in memory at once (issue 29).

Above :data:`ACTIVATION_BUDGET` bytes of activations per side, :func:`~pytest_trt.locate.divergence.locate_divergence`
cuts the model's float tensors into segments in topological order (:func:`segment_tensors`), spills the
reference's segments to a temporary folder (:class:`SpilledValues`) and has the engine compute one
segment at a time as the comparison reaches it (:class:`SegmentedValues`); only per-tensor figures stay.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx

from ..reference.baseline import float_tensor_names

__all__ = ["ACTIVATION_BUDGET", "SegmentedValues", "SpilledValues", "activation_sizes", "segment_tensors",
           "segments_budget"]

#: Activation bytes one side of the comparison (engine or reference) may hold at once. Above it,
#: :func:`~pytest_trt.locate.divergence.locate_divergence` works segment by segment in topological order: the reference's
#: segments go to a temporary folder, the engine computes one segment at a time, and only the
#: per-tensor figures stay (a big model's activations are never all in memory together).
ACTIVATION_BUDGET = 512 << 20


def segments_budget() -> int:
    """The budget in force (:data:`ACTIVATION_BUDGET`, read when called: tests lower it)."""
    return ACTIVATION_BUDGET


def activation_sizes(model, feeds: dict) -> dict[str, int]:
    """Bytes (as float32) of every tensor shape inference can size for the feeds' input shapes."""
    proto = onnx.ModelProto()
    proto.CopyFrom(model.proto)  # the structure (a big model's weights are references: kilobytes)
    for vi in proto.graph.input:
        if vi.name in feeds and vi.type.HasField("tensor_type"):
            shape = vi.type.tensor_type.shape
            shape.Clear()
            for d in np.shape(feeds[vi.name]):
                shape.dim.add().dim_value = int(d)
    del proto.graph.value_info[:]
    try:
        inferred = onnx.shape_inference.infer_shapes(proto, check_type=False, strict_mode=False)
    except Exception:  # sizes are an estimate: without them, one pass as before
        return {}
    sizes = {}
    for vi in list(inferred.graph.value_info) + list(inferred.graph.output):
        dims = vi.type.tensor_type.shape.dim if vi.type.HasField("tensor_type") else []
        if dims and all(d.HasField("dim_value") for d in dims):
            sizes[vi.name] = 4 * int(np.prod([d.dim_value for d in dims], dtype=np.int64))
    return sizes


def segment_tensors(model, feeds: dict, budget: int | None = None) -> list[list[str]]:
    """The model's float tensors in topological order, cut into segments of at most ``budget`` bytes
    (default :data:`ACTIVATION_BUDGET`); one segment when everything fits. A tensor of unknown size
    counts as the largest known one."""
    budget = ACTIVATION_BUDGET if budget is None else budget
    names = float_tensor_names(model)
    sizes = activation_sizes(model, feeds)
    largest = max(sizes.values(), default=0)
    segments: list[list[str]] = [[]]
    used = 0
    for name in names:
        n = sizes.get(name, largest)
        if segments[-1] and used + n > budget:
            segments.append([])
            used = 0
        segments[-1].append(name)
        used += n
    return segments if segments[0] else []


class SpilledValues:
    """Reference tensors written to a folder as ``.npy`` files and read back memory-mapped, one at a time."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.files: dict[str, Path] = {}

    def add(self, values: dict) -> None:
        for name, arr in values.items():
            path = self.folder / f"{len(self.files)}.npy"
            np.save(path, np.asarray(arr))
            self.files[name] = path

    def __contains__(self, name: object) -> bool:
        return name in self.files

    def __getitem__(self, name: str) -> np.ndarray:
        return np.load(self.files[name], mmap_mode="r")


class SegmentedValues:
    """The engine's tensors, computed one segment at a time as :func:`compare_tensors` reaches them."""

    def __init__(self, engine, feeds: dict, segments: list[list[str]]) -> None:
        self.engine, self.feeds = engine, feeds
        self.where = {name: i for i, seg in enumerate(segments) for name in seg}
        self.segments = segments
        self.loaded: tuple[int, dict] = (-1, {})
        self.note = ""

    def get(self, name: str, default: Any = None) -> Any:
        index = self.where.get(name)
        if index is None:
            return default
        if self.loaded[0] != index:
            self.loaded = (-1, {})  # the previous segment goes first
            values, self.note = self.engine.run_layerwise_subset(self.feeds, self.segments[index])
            self.loaded = (index, values)
        return self.loaded[1].get(name, default)
