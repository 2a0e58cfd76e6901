"""Loading and checking ONNX models.

A :class:`Model` is the one object every later stage (plan, realizations, baseline,
backends, inputs) receives. It is created once per file and carries the content hash
used in cache keys, so a changed file never reuses a stale engine.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import onnx
from onnx.external_data_helper import ExternalDataInfo, load_external_data_for_model, uses_external_data

from ..errors import ModelError
from .functions import inline_local_functions
from .names import NodeNames


@dataclass(eq=False)
class Model:
    """An ONNX model read from disk (or given in memory), checked, with stable node names.

    Attributes:
        proto: the ``onnx.ModelProto`` (external data loaded).
        path: the file it came from, or None for an in-memory model.
        sha256: hash of the serialized model: the model part of every cache key.
        renamed_nodes: ``{new_name: reason}`` for nodes that had no name or a duplicate
            name; patterns and reports use the new names.
        names: every node's canonical scoped name, module path and module classes
            (:class:`~pytest_trt.model.names.NodeNames`), from node names and metadata only;
            derived from ``proto`` when not given.
    """

    proto: Any
    path: Path | None = None
    sha256: str = ""
    renamed_nodes: dict[str, str] = field(default_factory=dict)
    names: NodeNames = field(default=None, repr=False)  # type: ignore[assignment]  # set in __post_init__

    def __post_init__(self) -> None:
        if self.names is None:
            self.names = NodeNames.of(self.proto.graph)

    @property
    def label(self) -> str:
        """Short human name: the file name, or the graph name for in-memory models."""
        if self.path is not None:
            return self.path.name
        return self.proto.graph.name or "<in-memory model>"

    @property
    def graph(self):
        return self.proto.graph

    @property
    def opset(self) -> int:
        """The default-domain opset version."""
        for imp in self.proto.opset_import:
            if imp.domain in ("", "ai.onnx"):
                return int(imp.version)
        return 1

    def node_names(self) -> list[str]:
        return [n.name for n in self.proto.graph.node]

    def input_names(self) -> list[str]:
        inits = {i.name for i in self.proto.graph.initializer}
        return [i.name for i in self.proto.graph.input if i.name not in inits]

    def output_names(self) -> list[str]:
        return [o.name for o in self.proto.graph.output]

    def serialized(self) -> bytes:
        return self.proto.SerializeToString()

    def __repr__(self) -> str:
        return f"Model({self.label!r}, sha256={self.sha256[:12]})"


def _name_nodes(proto) -> dict[str, str]:
    """Give unnamed nodes a name and make duplicate names unique.

    Patterns and engine layer names refer to nodes by name, so every node needs one.
    TensorRT's ONNX parser names layers after nodes too; a model whose nodes are
    unnamed gets ``<op_type>_<index>`` names here, which is also what ``plan`` shows.
    """
    renamed: dict[str, str] = {}
    seen: set[str] = set()
    for index, node in enumerate(proto.graph.node):
        if not node.name:
            base = f"{node.op_type}_{index}"
            reason = "node had no name"
        elif node.name in seen:
            base = node.name
            reason = f"duplicate node name {node.name!r}"
        else:
            seen.add(node.name)
            continue
        name, k = base, 1
        while name in seen:
            k += 1
            name = f"{base}__{k}"
        node.name = name
        seen.add(name)
        renamed[name] = reason
    return renamed


def load_model(source: Any, *, check: bool = True, origin: str | None = None) -> Model:
    """Read and check an ONNX model.

    ``source`` may be a path, a :class:`Model` (returned as is) or an
    ``onnx.ModelProto``. Errors name the file and say what to do: a missing file, a
    file that is not ONNX, missing external data, a model ``onnx.checker`` rejects.
    ``origin`` says where the path came from and how a relative one was resolved, for the
    "not found" message (``"model='m.onnx' in the trt marker is relative to the test file
    /p/test_a.py"``); without it a relative path is said to be resolved against the current
    directory, which is what ``open`` does.

    >>> model = load_model("models/encoder.onnx")   # doctest: +SKIP
    """
    if isinstance(source, Model):
        return source
    path: Path | None = None
    if isinstance(source, onnx.ModelProto):
        proto = onnx.ModelProto()
        proto.CopyFrom(source)
    elif isinstance(source, (str, os.PathLike)):
        path = Path(source)
        proto = _read_proto(path, origin)
        _load_external_data(proto, path)
    else:
        raise ModelError(f"expected a path to an ONNX file or an onnx.ModelProto, got {type(source).__name__}")

    where = str(path) if path else (proto.graph.name or "in-memory model")
    if check:
        try:
            onnx.checker.check_model(proto)
        except onnx.checker.ValidationError as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
            raise ModelError(f"{where} fails onnx.checker: {first}. Fix or re-export the model.") from exc
    digest = hashlib.sha256(proto.SerializeToString(deterministic=True)).hexdigest()
    renamed = _name_nodes(proto)
    inline_local_functions(proto)  # local functions' nodes, named after their call (model/functions.py)
    return Model(proto=proto, path=path, sha256=digest, renamed_nodes=renamed, names=NodeNames.of(proto.graph))


def _read_proto(path: Path, origin: str | None = None) -> onnx.ModelProto:
    """The ModelProto in ``path`` (external data not loaded yet); ModelError saying what is wrong with the file."""
    if not path.exists():
        raise ModelError(f"ONNX model not found: {path} (check the path; {origin or not_found_hint(path)})")
    if path.is_dir():
        raise ModelError(f"ONNX model path is a directory, not a file: {path}")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ModelError(f"cannot read ONNX model {path}: {exc.strerror or exc}") from exc
    if not data:
        raise ModelError(f"ONNX model {path} is empty (0 bytes): was it written completely?")
    proto = onnx.ModelProto()
    try:
        proto.ParseFromString(data)
    except Exception as exc:  # google.protobuf.message.DecodeError and friends
        raise ModelError(
            f"{path} is not a valid ONNX model (protobuf parse failed: {exc}); "
            f"it may be truncated or a different file format"
        ) from exc
    if not proto.graph.node and not proto.graph.output:
        raise ModelError(f"{path} parsed as an empty ONNX model (no graph): is it really an .onnx file?")
    return proto


def not_found_hint(path: Path) -> str:
    """How a path given to ``open`` was resolved: against the current directory when relative."""
    if path.is_absolute():
        return "the path is absolute"
    return f"relative paths are resolved against the current directory {Path.cwd()}"


def _load_external_data(proto: onnx.ModelProto, path: Path) -> None:
    """Load the weights ``proto`` keeps in files next to ``path``; ModelError naming a missing one."""
    try:
        if any(uses_external_data(t) for t in proto.graph.initializer):
            _check_external_extents(proto, path)
            load_external_data_for_model(proto, str(path.parent))
    except (FileNotFoundError, onnx.checker.ValidationError) as exc:
        # onnx raises ValidationError ("... should be stored in ..., but it is not regular file")
        # for a missing data file, FileNotFoundError in older versions
        missing = getattr(exc, "filename", None) or str(exc).strip().splitlines()[0]
        raise ModelError(
            f"{path} stores weights as external data, but a data file is missing: {missing}. "
            f"Keep the external data files next to the model."
        ) from exc
    except OSError as exc:
        raise ModelError(f"{path}: cannot read its external data: {exc}") from exc
    except ValueError as exc:  # onnx's own checks: a negative or non-numeric offset/length, data past the end
        raise ModelError(f"{path}: its external data is malformed: {exc}. Re-export the model "
                         f"(onnx.save(..., save_as_external_data=True)).") from exc


def _check_external_extents(proto: onnx.ModelProto, path: Path) -> None:
    """ModelError when a tensor's external ``offset + length`` reaches past the end of its data file.

    Checked from the file's size before anything is read, whatever the onnx version does: a
    damaged or hostile ``length`` (2**62) must not become an allocation. Locations that are not a
    regular file next to the model are left to onnx, which refuses them with its own message.
    """
    for tensor in proto.graph.initializer:
        if not uses_external_data(tensor):
            continue
        info = ExternalDataInfo(tensor)
        data_file = path.parent / info.location
        try:
            size = data_file.stat().st_size
        except (OSError, ValueError):  # missing, unreadable, or a location with a NUL byte: onnx says which
            continue
        offset = info.offset or 0
        end = offset + (info.length if info.length is not None else 0)
        if offset > size or end > size:
            raise ModelError(
                f"{path}: tensor {tensor.name!r} declares external data at offset {offset} with length "
                f"{info.length} in {info.location!r}, but that file holds {size} bytes: the data file is "
                f"truncated or belongs to another export. Re-export the model, or keep its data file next to it.")
