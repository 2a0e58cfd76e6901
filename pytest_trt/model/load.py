"""Loading and checking ONNX models.

A :class:`Model` is the one object every later stage (plan, realizations, baseline,
backends, inputs) receives: its structure (``proto``: nodes, initializer names, types and
shapes) and its weight store (``weights``, :class:`~pytest_trt.model.weights.WeightStore`: lazy,
memory-mapped access to the initializer values). A model read from a file never holds its
large weights in memory: external data stays in its files, and a big single-file model is
read through a memory map (:mod:`pytest_trt.model.weights.singlefile`). Its identity
(``sha256``, the model part of every cache key) is a hash over the structure and every
initializer's bytes (:mod:`pytest_trt.model.weights.identity`), so a changed file never reuses a
stale engine.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import onnx
from onnx.external_data_helper import ExternalDataInfo, uses_external_data

from ..errors import ModelError
from .functions import inline_local_functions
from .names import NodeNames
from .weights import WeightStore, current_memo, inline_small_external, model_identity, read_structure


@dataclass(eq=False)
class Model:
    """An ONNX model read from disk (or given in memory), checked, with stable node names.

    Attributes:
        proto: the ``onnx.ModelProto`` structure. Initializers stored as external data (and
            the large initializers of a big single-file model) stay references without their
            bytes; read values through ``weights``.
        path: the file it came from, or None for an in-memory model.
        weights: the model's :class:`~pytest_trt.model.weights.WeightStore` (the one weight store:
            nothing else copies or serializes a model's weights).
        derived_from: the model whose weights this one computes with (the FP32 upcast of an
            FP16 model); its identity then derives from that model's.
        names: every node's canonical scoped name, module path and module classes
            (:class:`~pytest_trt.model.names.NodeNames`), from node names and metadata only;
            derived from ``proto`` when not given.

    Nodes that had no name or a duplicate one are named when the model is loaded
    (``<op_type>_<index>``, ``<name>__2``); patterns and reports use those names.
    """

    proto: Any
    path: Path | None = None
    names: NodeNames = field(default=None, repr=False)  # type: ignore[assignment]  # set in __post_init__
    weights: WeightStore = field(default=None, repr=False)  # type: ignore[assignment]  # set in __post_init__
    derived_from: Model | None = field(default=None, repr=False)
    _sha256: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.names is None:
            self.names = NodeNames.of(self.proto.graph)
        if self.weights is None:
            self.weights = WeightStore(self.proto, self.path.parent if self.path is not None else None, self.label)

    @property
    def sha256(self) -> str:
        """The identity of the model: the model part of every cache key.

        Computed on first use (reading every weight byte unless this run's digest memo vouches
        for an unchanged file): see :mod:`pytest_trt.model.weights.identity`.
        """
        if self._sha256 is None:
            if self.derived_from is not None:
                h = hashlib.sha256(b"pytest-trt derived model v1\n" + self.derived_from.sha256.encode())
                h.update(self.proto.SerializeToString(deterministic=True))  # structure and small inline values
                self._sha256 = h.hexdigest()
            else:
                self._sha256 = model_identity(self.proto, self.weights, current_memo())
        return self._sha256

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

    @property
    def has_external_weights(self) -> bool:
        """Whether some initializers are held by reference (external data; a big single-file model)."""
        return bool(self.weights.external_names)

    def node_names(self) -> list[str]:
        return [n.name for n in self.proto.graph.node]

    def input_names(self) -> list[str]:
        inits = {i.name for i in self.proto.graph.initializer}
        return [i.name for i in self.proto.graph.input if i.name not in inits]

    def output_names(self) -> list[str]:
        return [o.name for o in self.proto.graph.output]

    def serialized(self) -> bytes:
        """The model as ONNX bytes, weights included: only for models whose weights are all inline.

        A model with external weights is never serialized whole (the protobuf limit, and a copy of
        every weight): bind it with :mod:`pytest_trt.realize.weight_sets` instead.
        """
        if self.has_external_weights:
            raise ModelError(f"{self.label} keeps its weights outside the model ({len(self.weights.external_names)} "
                             f"external initializers): it is not serialized with them (internal: use "
                             f"pytest_trt.realize.weight_sets to bind the weights)")
        return self.proto.SerializeToString()

    def __repr__(self) -> str:
        return f"Model({self.label!r})"


def derived_model(proto, source: Model, label: str) -> Model:
    """A model computed from ``source``'s weights (its references name ``source``'s initializers,
    see :mod:`pytest_trt.realize.weight_sets`): it shares ``source``'s weight store, and its identity is
    derived from ``source``'s and its own structure. ``label`` names it in messages."""
    proto.graph.name = label
    return Model(proto=proto, path=None, weights=source.weights,
                 derived_from=source)


def _name_nodes(proto) -> None:
    """Give unnamed nodes a name and make duplicate names unique.

    Patterns and engine layer names refer to nodes by name, so every node needs one.
    TensorRT's ONNX parser names layers after nodes too; a model whose nodes are
    unnamed gets ``<op_type>_<index>`` names here, which is also what ``plan`` shows.
    """
    seen: set[str] = set()
    for index, node in enumerate(proto.graph.node):
        if not node.name:
            base = f"{node.op_type}_{index}"
        elif node.name in seen:
            base = node.name
        else:
            seen.add(node.name)
            continue
        name, k = base, 1
        while name in seen:
            k += 1
            name = f"{base}__{k}"
        node.name = name
        seen.add(name)


def load_model(source: Any, *, check: bool = True, origin: str | None = None) -> Model:
    """Read and check an ONNX model.

    ``source`` may be a path, a :class:`Model` (returned as is) or an
    ``onnx.ModelProto``. Errors name the file and say what to do: a missing file, a
    file that is not ONNX, missing, truncated or outside-the-folder external data, a model
    ``onnx.checker`` rejects. A file is checked by path (``onnx.checker.check_model(path)``:
    works above the 2 GiB protobuf limit, and checks where external data points); its weights
    are not read (see :class:`Model`). ``origin`` says where the path came from and how a relative one was resolved, for the
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
        proto.CopyFrom(source)  # (an in-memory model is under the protobuf limit, and is renamed in place below)
    elif isinstance(source, (str, os.PathLike)):
        path = Path(source)
        proto = _read_proto(path, origin)
        _check_extents(proto, path)
        inline_small_external(proto, path.parent)
    else:
        raise ModelError(f"expected a path to an ONNX file or an onnx.ModelProto, got {type(source).__name__}")

    where = str(path) if path else (proto.graph.name or "in-memory model")
    if check:
        _check(proto, path, where)
    _name_nodes(proto)
    inline_local_functions(proto)  # local functions' nodes, named after their call (model/functions.py)
    # (the weight store validates every external reference)
    return Model(proto=proto, path=path, names=NodeNames.of(proto.graph))


def _check(proto, path: Path | None, where: str) -> None:
    """onnx.checker on the file (external data checked where it lies) or on the in-memory proto."""
    try:
        onnx.checker.check_model(str(path) if path is not None else proto)
    except onnx.checker.ValidationError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
        if path is not None and ("should be stored in" in first or "points outside" in first
                                 or "should be a relative path" in first or "symbolic link" in first
                                 or "hard links" in first):
            raise ModelError(f"{where} stores weights as external data, and onnx.checker refuses it: {first}. Keep "
                             f"the external data files (regular files, not links) next to the model.") from exc
        raise ModelError(f"{where} fails onnx.checker: {first}. Fix or re-export the model.") from exc
    except ValueError as exc:  # protobuf's EncodeError: an in-memory model over the 2 GiB limit
        raise ModelError(f"{where} cannot be checked in memory ({exc}): a model over 2 GiB must be saved with "
                         f"external data (onnx.save_model(..., save_as_external_data=True)) and passed by "
                         f"path") from exc


def _read_proto(path: Path, origin: str | None = None) -> onnx.ModelProto:
    """The structure in ``path`` (weights left in their files); ModelError saying what is wrong with the file."""
    if not path.exists():
        raise ModelError(f"ONNX model not found: {path} (check the path; {origin or not_found_hint(path)})")
    if path.is_dir():
        raise ModelError(f"ONNX model path is a directory, not a file: {path}")
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise ModelError(f"cannot read ONNX model {path}: {exc.strerror or exc}") from exc
    if not size:
        raise ModelError(f"ONNX model {path} is empty (0 bytes): was it written completely?")
    try:
        proto = read_structure(path)
    except ModelError:
        raise
    except OSError as exc:
        raise ModelError(f"cannot read ONNX model {path}: {exc.strerror or exc}") from exc
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


def _check_extents(proto: onnx.ModelProto, path: Path) -> None:
    """:func:`_check_external_extents`, a malformed offset or length a ModelError too."""
    try:
        _check_external_extents(proto, path)
    except ValueError as exc:  # onnx's own checks: a negative or non-numeric offset/length
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
