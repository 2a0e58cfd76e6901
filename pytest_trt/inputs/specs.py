"""What the model declares about its inputs: :class:`InputSpec` (name, dtype, shape) per input.

The first step of the inputs pipeline: every later step (shape solving, value ranges,
generation, checking user feeds) starts from the specs read here from the ONNX graph.
Also the dtype facts those steps share (kind of a dtype, largest finite float).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from onnx import helper

from ..core.lazy import lazy_import
from ..errors import InputError
from ..model.load import Model, load_model

if TYPE_CHECKING:
    import ml_dtypes
else:  # onnx's own dependency for bfloat16 / float8
    ml_dtypes = lazy_import("ml_dtypes")

__all__ = ["InputSpec", "ModelSource", "as_model", "dtype_kind", "float_max", "index_table_rows", "input_specs", "shape_text", "symbolic_dims"]

#: A model as the public functions accept it: a path, an ``onnx.ModelProto`` or a Model.
ModelSource = Any


@dataclass(frozen=True)
class InputSpec:
    """One model input: name, numpy dtype and shape as the model declares it.

    ``shape`` holds an ``int`` per static dim, a ``str`` per symbolic dim (``"batch"``)
    and ``None`` per unnamed dynamic dim. ``shape`` itself is ``None`` when the model
    does not declare the rank.
    """

    name: str
    dtype: np.dtype
    shape: tuple[int | str | None, ...] | None

    @property
    def is_dynamic(self) -> bool:
        """True when some dim (or the rank) is not fixed by the model."""
        return self.shape is None or any(not isinstance(d, int) for d in self.shape)

    @property
    def rank(self) -> int | None:
        """The number of dims, or None when the model does not declare the rank."""
        return None if self.shape is None else len(self.shape)

    @property
    def kind(self) -> str:
        """``"float"``, ``"int"``, ``"bool"`` or ``"other"`` (strings and the like)."""
        return dtype_kind(self.dtype)

    @property
    def symbolic_dims(self) -> tuple[str, ...]:
        """The names of the symbolic dims, in order (``("batch", "sequence")``)."""
        return tuple(d for d in (self.shape or ()) if isinstance(d, str))

    def describe(self) -> str:
        """``input_ids: int64[batch, sequence]``; ``?`` marks an unnamed dynamic dim."""
        return f"{self.name}: {self.dtype_name}{shape_text(self.shape)}"

    @property
    def dtype_name(self) -> str:
        """The numpy name of the dtype (``"float32"``, ``"int64"``)."""
        return _dtype_name(self.dtype)


def shape_text(shape: tuple[int | str | None, ...] | None) -> str:
    """A declared shape as ``[batch, 128, ?]`` (``?``: unnamed dynamic dim; ``[...]``: unknown rank)."""
    if shape is None:
        return "[...]"
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def _dtype_name(dtype: Any) -> str:
    return np.dtype(dtype).name


def dtype_kind(dtype: Any) -> str:
    """``"bool"``, ``"int"``, ``"float"`` (bfloat16 and the float8 family included) or ``"other"``."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return "bool"
    if dtype.kind in "iu":
        return "int"
    if dtype.kind == "f" or dtype.name.startswith(("bfloat", "float8", "float4", "float6")):
        return "float"
    return "other"


def float_max(dtype: Any) -> float:
    """The largest finite value of a float dtype (numpy's own or ml_dtypes' bfloat16 / float8)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return float(np.finfo(dtype).max)
    return float(ml_dtypes.finfo(dtype).max)


def as_model(model: ModelSource) -> Model:
    """``model`` as a :class:`~pytest_trt.model.load.Model`: a Model as is, a path or ModelProto loaded."""
    return model if isinstance(model, Model) else load_model(model)


#: Ops that carry an index tensor's values unchanged to a Gather (only their first input does).
_INDEX_PASS_THROUGH = frozenset({"Cast", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Expand",
                                 "Transpose"})


def index_table_rows(model: ModelSource, name: str) -> tuple[str, int] | None:
    """The table an integer input indexes, for a range hint: ``(table, rows)`` of a ``Gather`` whose
    data is an initializer and whose indices are ``name`` (through shape-only ops such as
    ``Reshape``), the smallest table when there are several; None when there is none.

    Token ids index an embedding table: their range is ``[0, rows - 1]``.
    """
    m = as_model(model)
    tables = {t.name: list(t.dims) for t in m.graph.initializer}
    consumers: dict[str, list[Any]] = {}
    for node in m.graph.node:
        for i, inp in enumerate(node.input):
            consumers.setdefault(inp, []).append((i, node))
    found: list[tuple[int, str]] = []
    frontier, seen = [name], {name}
    while frontier:
        tensor = frontier.pop()
        for index, node in consumers.get(tensor, ()):
            if node.op_type == "Gather" and index == 1 and node.input[0] in tables:
                dims = tables[node.input[0]]
                axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
                if dims and -len(dims) <= axis < len(dims):
                    found.append((int(dims[axis]), node.input[0]))
            elif node.op_type in _INDEX_PASS_THROUGH and index == 0:
                for out in node.output:
                    if out and out not in seen:
                        seen.add(out)
                        frontier.append(out)
    if not found:
        return None
    rows, table = min(found)
    return table, rows


def input_specs(model: ModelSource) -> list[InputSpec]:
    """The model's inputs (graph inputs that are not initializers), in graph order.

    ``model``: a path, an ``onnx.ModelProto`` or a :class:`~pytest_trt.model.load.Model`.
    Non-tensor inputs (sequences, maps, optionals) raise :class:`InputError`.
    """
    m = as_model(model)
    inits = {i.name for i in m.graph.initializer}
    specs: list[InputSpec] = []
    for vi in m.graph.input:
        if vi.name in inits:
            continue
        kind = vi.type.WhichOneof("value")
        if kind != "tensor_type":
            raise InputError(
                f"{m.label}: input {vi.name!r} is a {kind or 'untyped'} value; pytest-trt generates and "
                f"checks tensor inputs only"
            )
        tt = vi.type.tensor_type
        if tt.elem_type == 0:
            raise InputError(f"{m.label}: input {vi.name!r} has no element type; re-export the model with typed inputs")
        try:
            dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tt.elem_type))
        except Exception as exc:  # unknown / unsupported element type
            raise InputError(
                f"{m.label}: input {vi.name!r} has element type {tt.elem_type}, which numpy cannot hold"
            ) from exc
        shape: tuple[int | str | None, ...] | None
        if not tt.HasField("shape"):
            shape = None
        else:
            dims: list[int | str | None] = []
            for d in tt.shape.dim:
                which = d.WhichOneof("value")
                if which == "dim_value" and d.dim_value >= 0:
                    dims.append(int(d.dim_value))
                elif which == "dim_param" and d.dim_param:
                    dims.append(d.dim_param)
                else:
                    dims.append(None)
            shape = tuple(dims)
        specs.append(InputSpec(vi.name, dtype, shape))
    return specs


def symbolic_dims(model: ModelSource) -> dict[str, list[str]]:
    """``{symbolic dim name: [inputs using it]}``, e.g. ``{"batch": ["input_ids", "attention_mask"]}``.

    Useful to pick, from session-wide ``dims``, the ones a given model knows.
    """
    out: dict[str, list[str]] = {}
    for spec in input_specs(model):
        for d in spec.symbolic_dims:
            users = out.setdefault(d, [])
            if spec.name not in users:
                users.append(spec.name)
    return out

