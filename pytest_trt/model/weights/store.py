"""The weight store: the one place a model's initializer values are read from.

A :class:`~pytest_trt.model.Model` is its structure (``Model.proto``: every node, every
initializer's name, type and shape) plus a :class:`WeightStore`. Initializers stored outside
the structure (ONNX external data, and the large tensors of a big single-file model, which
:func:`~pytest_trt.model.weights.singlefile.read_structure` turns into references into the ``.onnx``
file itself) are *references*: the store validates them when the model is loaded (relative
path inside the model's folder, regular file, range inside the file) and maps them on demand,
read-only (:meth:`WeightStore.array`), so nothing is read until a value is needed and nothing
is copied that the work does not need. Tensors kept in the structure (small ones; every tensor
of a model given as an in-memory ``ModelProto``) are read from the proto.

Rule (CONVENTIONS "Weights"): nothing else in pytest-trt copies or serializes a model's
weights. Realizations refer to them (:mod:`pytest_trt.realize.weight_sets` binds the references to
ONNX Runtime sessions and TensorRT parsers); anything that needs a value asks the store.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

from ...errors import ModelError

__all__ = ["INLINE_BYTES", "ExternalRef", "WeightStore", "external_info", "map_range", "pread_into", "tensor_nbytes"]

#: External tensors smaller than this are read into the structure when a model is loaded:
#: shape inference, constant folding and the LayerNorm/probe analyses read small constants
#: (epsilons, exponents, shapes); the weights that matter for memory are far larger.
INLINE_BYTES = 64 * 1024

_ITEM: dict[int, int] = {TensorProto.FLOAT: 4, TensorProto.FLOAT16: 2, TensorProto.BFLOAT16: 2, TensorProto.DOUBLE: 8,
         TensorProto.INT8: 1, TensorProto.UINT8: 1, TensorProto.INT16: 2, TensorProto.UINT16: 2,
         TensorProto.INT32: 4, TensorProto.UINT32: 4, TensorProto.INT64: 8, TensorProto.UINT64: 8,
         TensorProto.BOOL: 1, TensorProto.COMPLEX64: 8, TensorProto.COMPLEX128: 16}


def tensor_nbytes(tensor: TensorProto) -> int | None:
    """Bytes of a tensor's values as stored (raw, little-endian); None for strings and sub-byte types."""
    size = _ITEM.get(tensor.data_type)
    if size is None:
        return None
    n = 1
    for d in tensor.dims:
        n *= int(d)
    return n * size


def external_info(tensor: TensorProto) -> dict[str, str]:
    """The ``external_data`` key/value pairs of a tensor."""
    return {e.key: e.value for e in tensor.external_data}


@dataclass(frozen=True)
class ExternalRef:
    """Where an initializer's bytes are: ``length`` bytes at ``offset`` of ``path`` (absolute)."""

    path: Path
    location: str
    offset: int
    length: int


def map_range(path: Path, offset: int, length: int) -> np.ndarray:
    """``length`` bytes at ``offset`` of ``path``, mapped read-only (a uint8 array; the mapping is
    released with the last array viewing it). The kernel is asked to read the range ahead
    (``MADV_WILLNEED``): a session's first run then streams it instead of faulting page by page."""
    if length == 0:
        return np.zeros(0, dtype=np.uint8)
    start = offset - offset % mmap.ALLOCATIONGRANULARITY
    with open(path, "rb") as f:
        mm = mmap.mmap(f.fileno(), length + offset - start, offset=start, access=mmap.ACCESS_READ)
    if hasattr(mm, "madvise") and hasattr(mmap, "MADV_WILLNEED"):
        with contextlib.suppress(OSError):
            mm.madvise(mmap.MADV_WILLNEED)
    return np.frombuffer(mm, dtype=np.uint8, count=length, offset=offset - start)


def pread_into(path: Path, offset: int, out: Any, *, what: str = "") -> int:
    """Fill the writable buffer ``out`` from ``path`` at ``offset`` with ``preadv`` (no mapping: the
    bytes pass through the page cache, not this process's resident memory); returns bytes read.
    Raises ModelError when the file ends first (``what`` names the tensor)."""
    view = memoryview(out).cast("B")
    done = 0
    with open(path, "rb", buffering=0) as f:
        while done < len(view):
            n = os.preadv(f.fileno(), [view[done:]], offset + done)
            if n <= 0:
                raise ModelError(f"{path.name} ended while reading {what or 'weights'} (truncated while in use?)")
            done += n
    return done


def _uses_external(tensor: TensorProto) -> bool:
    return tensor.HasField("data_location") and tensor.data_location == TensorProto.EXTERNAL


class WeightStore:
    """Lazy, memory-mapped, read-only access to the initializers of one model's main graph.

    ``proto`` is the model's structure; ``folder`` the directory external data is relative to
    (None for an in-memory model, which has no external data). Construction validates every
    reference (a :class:`~pytest_trt.errors.ModelError` names the tensor and the file) and reads
    nothing else.

    >>> store = load_model("decoder.onnx").weights          # doctest: +SKIP
    >>> store.nbytes, store.external_nbytes, len(store.names)  # doctest: +SKIP
    (2667802624, 2667798528, 216)
    >>> store.array("model.norm.weight")[:3]                # doctest: +SKIP
    memmap([1.02, 0.97, 1.01], dtype=float32)
    """

    def __init__(self, proto: onnx.ModelProto, folder: Path | None, label: str = "model") -> None:
        self.folder = folder
        self.label = label
        self._tensors: dict[str, TensorProto] = {t.name: t for t in proto.graph.initializer}
        self._refs: dict[str, ExternalRef] = {}
        for t in proto.graph.initializer:
            if _uses_external(t):
                self._refs[t.name] = self._reference(t)

    # -- what there is ----------------------------------------------------------------------
    @property
    def names(self) -> tuple[str, ...]:
        """Every initializer of the main graph, in graph order."""
        return tuple(self._tensors)

    @property
    def external_names(self) -> tuple[str, ...]:
        """The initializers held by reference (external data), in graph order."""
        return tuple(self._refs)

    def tensor(self, name: str) -> TensorProto:
        """The structure of an initializer (name, element type, dims; the values only when inline)."""
        try:
            return self._tensors[name]
        except KeyError:
            raise ModelError(f"{self.label} has no initializer {name!r}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._tensors

    def is_external(self, name: str) -> bool:
        """Whether ``name`` is held by reference (its bytes are in a file, not in the structure)."""
        return name in self._refs

    def ref(self, name: str) -> ExternalRef:
        """Where an external initializer's bytes are."""
        return self._refs[name]

    def nbytes_of(self, name: str) -> int:
        """Bytes of one initializer's values as stored (0 for strings)."""
        if name in self._refs:
            return self._refs[name].length
        return tensor_nbytes(self.tensor(name)) or 0

    @property
    def nbytes(self) -> int:
        """Bytes of all initializer values."""
        return sum(self.nbytes_of(n) for n in self._tensors)

    @property
    def external_nbytes(self) -> int:
        """Bytes held by reference (what realizations, sessions and parsers map instead of copying)."""
        return sum(r.length for r in self._refs.values())

    def data_files(self) -> list[Path]:
        """The files external data lives in (absolute, sorted)."""
        return sorted({r.path for r in self._refs.values()})

    def external_tensors(self) -> Iterator[TensorProto]:
        """The structures of the external initializers, in graph order (weight-set layouts follow it)."""
        return (self._tensors[n] for n in self._refs)

    # -- values -----------------------------------------------------------------------------
    def raw(self, name: str) -> np.ndarray:
        """The stored bytes of an initializer as a read-only uint8 array (memory-mapped when external).

        The mapping lives as long as the returned array (and arrays viewing it): drop them to give
        the memory back.
        """
        if name in self._refs:
            ref = self._refs[name]
            return map_range(ref.path, ref.offset, ref.length)
        tensor = self.tensor(name)
        if tensor.HasField("raw_data") or not tensor_nbytes(tensor):
            return np.frombuffer(tensor.raw_data, dtype=np.uint8)
        return np.ascontiguousarray(numpy_helper.to_array(tensor)).reshape(-1).view(np.uint8)

    def array(self, name: str) -> np.ndarray:
        """The values of an initializer (read-only; memory-mapped when external).

        BFLOAT16 comes back as ``ml_dtypes.bfloat16`` (what ``onnx.numpy_helper`` returns), other
        types as their numpy dtype.
        """
        tensor = self.tensor(name)
        if name not in self._refs:
            return numpy_helper.to_array(tensor)
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type)
        return self.raw(name).view(dtype).reshape(tuple(int(d) for d in tensor.dims))

    def read_into(self, name: str, out: Any, start: int = 0) -> int:
        """Copy stored bytes of an external initializer from ``start`` into the writable buffer ``out``
        with ``pread`` (no mapping: the page cache holds them, this process does not); returns the
        number of bytes read."""
        ref = self._refs[name]
        view = memoryview(out).cast("B")
        want = min(len(view), ref.length - start)
        return pread_into(ref.path, ref.offset + start, view[:want], what=f"initializer {name!r} of {self.label}")

    # -- checks -----------------------------------------------------------------------------
    def _reference(self, tensor: TensorProto) -> ExternalRef:
        """The validated reference of an external tensor; ModelError naming what is wrong and what to do."""
        where = f"{self.label}: initializer {tensor.name!r}"
        info = external_info(tensor)
        location = info.get("location", "")
        if self.folder is None:
            raise ModelError(f"{where} is stored as external data ({location!r}), but the model was given in "
                             f"memory: pass the model's path so its external data can be found beside it")
        if not location:
            raise ModelError(f"{where} is stored as external data without a location: re-export the model")
        if os.path.isabs(location) or location.startswith(("/", "\\")) or ".." in Path(location).parts:
            raise ModelError(f"{where}: its external data location {location!r} points outside the model's folder "
                             f"{self.folder} (ONNX Runtime and onnx refuse that too): keep the data files beside the "
                             f"model and re-export with relative locations")
        path = self.folder / location
        try:
            offset = int(info.get("offset", "0") or 0)
            length_text = info.get("length")
            st = os.lstat(path)
        except ValueError:
            raise ModelError(f"{where}: malformed external data offset/length {info}: re-export the model") from None
        except FileNotFoundError:
            raise ModelError(f"{self.label} stores weights as external data, but a data file is missing: {path} "
                             f"(initializer {tensor.name!r}). Keep the external data files next to the model."
                             ) from None
        except OSError as exc:
            raise ModelError(f"{where}: cannot read its external data {path}: {exc.strerror or exc}") from None
        if stat.S_ISLNK(st.st_mode) or not stat.S_ISREG(st.st_mode):
            raise ModelError(f"{where}: its external data {path} is "
                             f"{'a symbolic link' if stat.S_ISLNK(st.st_mode) else 'not a regular file'}: onnx "
                             f"and ONNX Runtime refuse that; copy the data file next to the model")
        expected = tensor_nbytes(tensor)
        length = int(length_text) if length_text not in (None, "") else (expected if expected is not None
                                                                          else st.st_size - offset)
        if expected is not None and length != expected:
            raise ModelError(f"{where}: its external data length {length} does not match its shape and type "
                             f"({expected} bytes): re-export the model")
        if offset < 0 or offset + length > st.st_size:
            raise ModelError(f"{self.label}: external data file {path} is truncated: initializer {tensor.name!r} "
                             f"needs bytes {offset}..{offset + length} but the file has {st.st_size}. Copy the "
                             f"complete file again (was it written completely?)")
        return ExternalRef(path, location, offset, length)
