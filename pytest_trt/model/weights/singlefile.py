"""Reading a model file's structure without its weights.

An external-data model's ``.onnx`` file is its structure already: it is parsed as it is, and
only its small external tensors (under :data:`~pytest_trt.model.weights.store.INLINE_BYTES`;
attribute and subgraph tensors of any size) are read into it. A *single-file* model of
:data:`SCAN_BYTES` or more holds its weights inside the protobuf; parsing it would copy every
weight into this process (and a realization or a serialization would copy them again). It is
read from a memory map instead: :func:`read_structure` walks the protobuf wire format of the
model and its graph (field numbers of ``onnx.proto``: ``ModelProto.graph`` = 7,
``GraphProto.initializer`` = 5, ``TensorProto.raw_data`` = 9), parses everything except the
``raw_data`` of large initializers, and makes each of those an external-data reference into
the ``.onnx`` file itself (``location`` = the file's name, ``offset``/``length`` of the bytes).
From then on a single-file model is handled exactly like an external-data one: one code path,
weights mapped on demand, never parsed or copied.
"""

from __future__ import annotations

import mmap
import os
from pathlib import Path

import onnx
from onnx import TensorProto
from onnx.external_data_helper import load_external_data_for_tensor

from ...errors import ModelError
from .store import INLINE_BYTES, external_info, tensor_nbytes

__all__ = ["SCAN_BYTES", "inline_small_external", "read_structure"]

#: single-file models at least this large are read by the wire-format scan (smaller ones are parsed)
SCAN_BYTES = 64 << 20
_MODEL_GRAPH, _GRAPH_INITIALIZER, _TENSOR_RAW_DATA = 7, 5, 9


class _WireError(Exception):
    pass


def _varint(buf, pos: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise _WireError("truncated varint")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _fields(buf, start: int, end: int):
    """``(field number, wire type, field start, payload start, payload end)`` of a message region."""
    pos = start
    while pos < end:
        field_start = pos
        tag, pos = _varint(buf, pos, end)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            _, pos = _varint(buf, pos, end)
            payload = pos
        elif wire == 1:
            payload, pos = pos, pos + 8
        elif wire == 2:
            size, payload = _varint(buf, pos, end)
            pos = payload + size
        elif wire == 5:
            payload, pos = pos, pos + 4
        else:
            raise _WireError(f"unsupported wire type {wire}")
        if pos > end:
            raise _WireError("field runs past the end of its message")
        yield number, wire, field_start, payload, pos


def _len_field(number: int, payload: bytes) -> bytes:
    return _encode_varint(number << 3 | 2) + _encode_varint(len(payload)) + payload


def _scan(buf, size: int) -> tuple[bytes, list[tuple[int, int, int]]]:
    """The model's bytes without the ``raw_data`` of large initializers, and ``(initializer index,
    offset, length)`` of each ``raw_data`` left out."""
    out = bytearray()
    moved: list[tuple[int, int, int]] = []
    index = 0
    for number, wire, fstart, pstart, pend in _fields(buf, 0, size):
        if number != _MODEL_GRAPH or wire != 2:
            out += buf[fstart:pend]
            continue
        graph = bytearray()
        for gnum, gwire, gstart, gp, gend in _fields(buf, pstart, pend):
            if gnum != _GRAPH_INITIALIZER or gwire != 2:
                graph += buf[gstart:gend]
                continue
            tensor = bytearray()
            for tnum, twire, tstart, tp, tend in _fields(buf, gp, gend):
                if tnum == _TENSOR_RAW_DATA and twire == 2 and tend - tp >= INLINE_BYTES:
                    moved.append((index, tp, tend - tp))
                else:
                    tensor += buf[tstart:tend]
            graph += _len_field(_GRAPH_INITIALIZER, bytes(tensor))
            index += 1
        out += _len_field(_MODEL_GRAPH, bytes(graph))
    return bytes(out), moved


def read_structure(path: Path, data: bytes | None = None) -> onnx.ModelProto:
    """The ``ModelProto`` of the file at ``path``, weights left where they are (see the module docstring).

    Raises :class:`~pytest_trt.errors.ModelError` for a file that is not a valid ONNX protobuf.
    """
    size = path.stat().st_size
    proto = onnx.ModelProto()
    if size < SCAN_BYTES:
        proto.ParseFromString(data if data is not None else path.read_bytes())
    else:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            try:
                stripped, moved = _scan(buf, size)
            except _WireError as exc:
                raise ModelError(f"{path} is not a valid ONNX model (protobuf: {exc}); it may be truncated or a "
                                 f"different file format") from None
        proto.ParseFromString(stripped)
        inits = proto.graph.initializer
        for index, offset, length in moved:
            t = inits[index]
            t.data_location = TensorProto.EXTERNAL
            for key, value in (("location", path.name), ("offset", str(offset)), ("length", str(length))):
                entry = t.external_data.add()
                entry.key, entry.value = key, value
    return proto


def _nested_tensors(nodes):
    """Tensors of node attributes and of subgraph initializers, recursively."""
    for node in nodes:
        for attr in node.attribute:
            if attr.HasField("t"):
                yield attr.t
            yield from attr.tensors
            for graph in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
                yield from graph.initializer
                yield from _nested_tensors(graph.node)


def inline_small_external(proto: onnx.ModelProto, folder: Path) -> None:
    """Read into the structure what later stages read as values: small external main-graph
    initializers, and external tensors anywhere else (attributes, subgraphs, functions: ONNX
    Runtime and TensorRT are given the main graph's references only)."""
    small = [t for t in proto.graph.initializer if (tensor_nbytes(t) or INLINE_BYTES) < INLINE_BYTES]
    nested = list(_nested_tensors(proto.graph.node))
    for function in proto.functions:
        nested.extend(_nested_tensors(function.node))
    for tensor in small + nested:
        if not (tensor.HasField("data_location") and tensor.data_location == TensorProto.EXTERNAL):
            continue
        location = external_info(tensor).get("location", "")
        if os.path.isabs(location) or ".." in Path(location).parts:
            continue  # left as a reference: the store names the fault
        try:
            load_external_data_for_tensor(tensor, str(folder))
        except (OSError, ValueError, onnx.checker.ValidationError):
            continue  # left as a reference: the store's check says what is wrong
        tensor.data_location = TensorProto.DEFAULT
        del tensor.external_data[:]
