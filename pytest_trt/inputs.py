"""Model inputs: specs, shapes and profiles, value ranges, generated and user feeds.

What a test feeds the engine decides which failures it can see. A LayerNorm kept in
FP16 by mistake looks fine on inputs drawn from ``[-1, 1]`` and breaks on a common
offset with small spread, or on one large element (see ``ARCHITECTURE.md``, "FP16
probes"). This module makes such inputs easy to ask for, reproducible, and refuses to
guess where a guess would be wrong:

* **Shapes.** Static dims come from the model. Dynamic dims (symbolic ``batch`` or
  unnamed) must be declared, per symbolic name (``dims={"batch": 2}``) or per input
  (``shapes={"x": (2, 128, 64)}``, CLI ``--input-shapes x:[2,128,64]``). An input
  that shares a symbolic dim with a declared one is inferred. TensorRT optimization
  profiles come from :func:`resolve_profile`.
* **Values.** Floats are uniform in ``[-1, 1]`` unless declared (Polygraphy defaults to
  ``[0, 1]``; a zero-mean range is closer to normalized activations and embeddings and
  does not hide sign cancellation). Booleans are uniform over ``{0, 1}``. Integer
  inputs have **no** default: token ids need ``[0, vocab_size - 1]``, a default like
  Polygraphy's ``[0, 1]`` silently tests a two-token vocabulary, so an undeclared
  integer range is an :class:`InputError`. Ranges are inclusive and use Polygraphy's
  ``--val-range`` spelling: ``x:[-1,1]`` for one input, ``[0,5]`` for all inputs
  (the key ``""`` in dicts, ``"*"`` also accepted).
* **FP16-breaking regimes.** ``offset={"x": 1000.0}`` adds a common offset to the
  declared range (so ``val_range={"x": (-0.05, 0.05)}`` plus that offset is the
  "1000 + small spread" probe); ``outliers={"x": {"count": 1, "magnitude": 400.0}}``
  sets single elements to that value (absolute: not added to an offset).
* **Reproducibility.** Every input draws from its own stream seeded by ``(seed, input
  name)``: the same seed gives the same feeds, adding outliers to one input changes
  only the outlier elements, and changing one input's shape leaves the others alone.

Errors: a malformed option string (``parse_val_range``, ``parse_input_shape``) raises
:class:`~pytest_trt.errors.UsageError`; anything that does not fit the model
(unknown input, undeclared dim or range, range outside the dtype, wrong feeds) raises
:class:`~pytest_trt.errors.InputError`. Both name the input and say what to write.

Example::

    from pytest_trt.inputs import make_feeds, check_feeds

    feeds = make_feeds("bert.onnx", dims={"batch": 2, "sequence": 128},
                       val_range={"input_ids": (0, 30521), "attention_mask": (1, 1)})
    check_feeds("bert.onnx", feeds)
"""

from __future__ import annotations

import difflib
import math
import numbers
import os
import re
import tempfile
import zipfile
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .errors import InputError, UsageError

__all__ = [
    "ALL_INPUTS",
    "DEFAULT_FLOAT_RANGE",
    "DEFAULT_BOOL_RANGE",
    "DEFAULT_OUTLIER_MAGNITUDE",
    "InputSpec",
    "FeedSet",
    "input_specs",
    "symbolic_dims",
    "resolve_shapes",
    "resolve_profile",
    "resolve_val_ranges",
    "profile_from_shapes",
    "parse_val_range",
    "parse_input_shape",
    "make_feeds",
    "check_feeds",
    "load_feeds",
    "save_feeds",
    "input_sets",
    "param_sets",
]

#: Key of a value-range dict that applies to every input not listed (Polygraphy's spelling).
ALL_INPUTS = ""
_ALL_KEYS = ("", "*")
#: Range of float inputs without a declared range (inclusive).
DEFAULT_FLOAT_RANGE = (-1.0, 1.0)
#: Range of bool inputs without a declared range.
DEFAULT_BOOL_RANGE = (0, 1)
#: Default outlier value: one element >= ~256 overflows the ``Pow`` of a decomposed
#: LayerNorm computed in FP16 (``|x - mean|**2 > 65504``).
DEFAULT_OUTLIER_MAGNITUDE = 400.0
#: Option spellings quoted in error messages (the CLI and the plugin use these names).
SHAPES_OPTION = "--input-shapes"
VAL_RANGE_OPTION = "--val-range"
#: A generated feed larger than this is refused (a typo like seq=1280000 would otherwise
#: end in a MemoryError far from its cause).
MAX_FEED_BYTES = 4 << 30

_MAKE_FEEDS_KEYS = ("shapes", "dims", "val_range", "seed", "outliers", "offset")


# --------------------------------------------------------------------------------------
# Specs
# --------------------------------------------------------------------------------------

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
        return None if self.shape is None else len(self.shape)

    @property
    def kind(self) -> str:
        """``"float"``, ``"int"``, ``"bool"`` or ``"other"`` (strings and the like)."""
        return _dtype_kind(self.dtype)

    @property
    def symbolic_dims(self) -> tuple[str, ...]:
        return tuple(d for d in (self.shape or ()) if isinstance(d, str))

    def describe(self) -> str:
        """``input_ids: int64[batch, sequence]``; ``?`` marks an unnamed dynamic dim."""
        return f"{self.name}: {self.dtype_name}{_shape_text(self.shape)}"

    @property
    def dtype_name(self) -> str:
        return _dtype_name(self.dtype)


def _shape_text(shape) -> str:
    if shape is None:
        return "[...]"
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def _dtype_name(dtype) -> str:
    return np.dtype(dtype).name


def _dtype_kind(dtype) -> str:
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return "bool"
    if dtype.kind in "iu":
        return "int"
    if dtype.kind == "f" or dtype.name.startswith(("bfloat", "float8", "float4", "float6")):
        return "float"
    return "other"


def _float_max(dtype) -> float:
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return float(np.finfo(dtype).max)
    import ml_dtypes  # onnx's own dependency for bfloat16 / float8

    return float(ml_dtypes.finfo(dtype).max)


def _model(model):
    from .model import Model, load_model

    return model if isinstance(model, Model) else load_model(model)


def input_specs(model) -> list[InputSpec]:
    """The model's inputs (graph inputs that are not initializers), in graph order.

    ``model``: a path, an ``onnx.ModelProto`` or a :class:`~pytest_trt.model.Model`.
    Non-tensor inputs (sequences, maps, optionals) raise :class:`InputError`.
    """
    from onnx import helper

    m = _model(model)
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


def symbolic_dims(model) -> dict[str, list[str]]:
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


# --------------------------------------------------------------------------------------
# Small helpers for messages and argument checking
# --------------------------------------------------------------------------------------

def _did_you_mean(name: str, candidates: Iterable[str]) -> str:
    close = difflib.get_close_matches(str(name), list(candidates), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _inputs_listing(specs: list[InputSpec]) -> str:
    if not specs:
        return "the model has no inputs"
    return "the model's inputs: " + ", ".join(s.describe() for s in specs)


def _check_names(given: Iterable[str], specs: list[InputSpec], what: str, label: str, *,
                 allow_all: bool = False) -> None:
    names = [s.name for s in specs]
    for key in given:
        if allow_all and key in _ALL_KEYS:
            continue
        if not isinstance(key, str):
            raise InputError(f"{what} keys must be input names (str), got {key!r}")
        if key not in names:
            raise InputError(
                f"{what} names {key!r}, which is not an input of {label}{_did_you_mean(key, names)}; "
                f"{_inputs_listing(specs)}"
            )


def _is_number(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))


def _finite_number(v) -> bool:
    """A real, non-bool number that is finite as a float."""
    if not _is_number(v):
        return False
    try:
        return math.isfinite(float(v))
    except OverflowError:
        return False


def _as_dim(value, what: str) -> int:
    """A declared dim: a non-negative int (numpy ints accepted, bools and floats not)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise InputError(f"{what} must be a non-negative integer, got {value!r}")
    value = int(value)
    if value < 0:
        raise InputError(
            f"{what} is {value}: dims must be non-negative integers (write the size to use; "
            f"-1 does not mean 'dynamic' here)"
        )
    if value == 0:
        raise InputError(f"{what} is 0: zero-size dims are not supported (an empty tensor compares nothing); "
                         f"give a size >= 1")
    return value


def _as_shape(value, what: str) -> tuple[int, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise InputError(f"{what} must be a tuple of ints like (2, 128), got {value!r}")
    return tuple(_as_dim(d, f"{what} dim {i}") for i, d in enumerate(value))


def _fmt_shape(shape) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


# --------------------------------------------------------------------------------------
# Shapes and profiles
# --------------------------------------------------------------------------------------

@dataclass
class _Var:
    """One dynamic dimension: a symbolic name shared by inputs, or one unnamed dim."""

    key: tuple
    label: str                       # "'batch'" or "unnamed dim 1 of 'x'"
    point: int | None = None         # size of generated feeds
    point_src: str = ""
    lo: int | None = None            # profile range (intersection over contributors)
    hi: int | None = None
    opt: int | None = None
    range_src: str = ""


class _Solver:
    """Binds every dynamic dim from ``dims``, ``shapes`` and ``profile`` and checks them."""

    def __init__(self, model, specs: list[InputSpec], shapes=None, dims=None, profile=None):
        self.model = model
        self.label = model.label
        self.specs = specs
        self.by_name = {s.name: s for s in specs}
        self.vars: dict[tuple, _Var] = {}
        self.layout: dict[str, list[int | tuple] | None] = {}
        self.shapes = self._norm_shapes(shapes)
        self.dims = self._norm_dims(dims)
        self.profile = self._norm_profile(profile)
        self._build_layout()
        self._apply_dims()
        self._apply_shapes()
        self._apply_profile()

    # -- normalization ------------------------------------------------------------------
    def _norm_shapes(self, shapes) -> dict[str, tuple[int, ...]]:
        if shapes is None:
            return {}
        if isinstance(shapes, str) or (isinstance(shapes, (list, tuple)) and all(isinstance(s, str) for s in shapes)):
            shapes = parse_input_shape(shapes)
        if not isinstance(shapes, Mapping):
            raise InputError(f"shapes must be a dict {{input name: shape}}, e.g. {{'x': (2, 128, 64)}}, got {shapes!r}")
        _check_names(shapes, self.specs, "shapes", self.label)
        return {k: _as_shape(v, f"shapes[{k!r}]") for k, v in shapes.items()}

    def _norm_dims(self, dims) -> dict[str, int]:
        if dims is None:
            return {}
        if not isinstance(dims, Mapping):
            raise InputError(f"dims must be a dict {{symbolic dim name: size}}, e.g. {{'batch': 2}}, got {dims!r}")
        known: dict[str, list[str]] = {}
        for s in self.specs:
            for d in s.symbolic_dims:
                known.setdefault(d, [])
                if s.name not in known[d]:
                    known[d].append(s.name)
        out = {}
        for k, v in dims.items():
            if k not in known:
                listing = ", ".join(f"{d} ({', '.join(users)})" for d, users in known.items())
                raise InputError(
                    f"dims names {k!r}, which is no symbolic dim of {self.label}{_did_you_mean(str(k), known)}; "
                    + (f"its symbolic dims: {listing}" if known else "the model has no symbolic dims "
                       "(declare unnamed dynamic dims with shapes={input: shape})")
                )
            out[k] = _as_dim(v, f"dims[{k!r}]")
        return out

    def _norm_profile(self, profile) -> dict[str, tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]]:
        if profile is None:
            return {}
        if not isinstance(profile, Mapping):
            raise InputError(
                "profile must be a dict {input: {'min': shape, 'opt': shape, 'max': shape}}, got " + repr(profile)
            )
        _check_names(profile, self.specs, "profile", self.label)
        out = {}
        for name, entry in profile.items():
            what = f"profile[{name!r}]"
            if isinstance(entry, Mapping):
                unknown = set(entry) - {"min", "opt", "max"}
                missing = [k for k in ("min", "opt", "max") if k not in entry]
                if unknown or missing:
                    raise InputError(
                        f"{what} must have exactly the keys 'min', 'opt', 'max'"
                        + (f"; missing {', '.join(missing)}" if missing else "")
                        + (f"; unknown {', '.join(map(repr, sorted(map(str, unknown))))}" if unknown else "")
                    )
                triple = (entry["min"], entry["opt"], entry["max"])
            elif isinstance(entry, (list, tuple)) and len(entry) == 3 and all(
                isinstance(e, (list, tuple)) for e in entry
            ):
                triple = tuple(entry)
            else:
                raise InputError(f"{what} must be {{'min': shape, 'opt': shape, 'max': shape}}, got {entry!r}")
            mn, op, mx = (_as_shape(s, f"{what}[{k!r}]") for s, k in zip(triple, ("min", "opt", "max"), strict=True))
            if not len(mn) == len(op) == len(mx):
                raise InputError(f"{what}: min {_fmt_shape(mn)}, opt {_fmt_shape(op)} and max {_fmt_shape(mx)} differ in rank")
            for i, (a, b, c) in enumerate(zip(mn, op, mx, strict=True)):
                if not a <= b <= c:
                    raise InputError(
                        f"{what}: dim {i} needs min <= opt <= max, got min {a}, opt {b}, max {c}"
                    )
            out[name] = (mn, op, mx)
        return out

    # -- binding ------------------------------------------------------------------------
    def _var(self, key: tuple, label: str) -> tuple:
        if key not in self.vars:
            self.vars[key] = _Var(key, label)
        return key

    def _build_layout(self) -> None:
        for s in self.specs:
            shape = s.shape
            if shape is None:
                declared = self.shapes.get(s.name) or (self.profile[s.name][0] if s.name in self.profile else None)
                if declared is None:
                    self.layout[s.name] = None
                    continue
                shape = (None,) * len(declared)
            entries: list[int | tuple] = []
            for i, d in enumerate(shape):
                if isinstance(d, int):
                    entries.append(d)
                elif isinstance(d, str):
                    entries.append(self._var(("sym", d), repr(d)))
                else:
                    entries.append(self._var(("anon", s.name, i), f"unnamed dim {i} of {s.name!r}"))
            self.layout[s.name] = entries

    def _bind_point(self, key: tuple, value: int, src: str) -> None:
        var = self.vars[key]
        if var.point is not None and var.point != value:
            raise InputError(
                f"{self.label}: dim {var.label} is declared {var.point} by {var.point_src} "
                f"but {value} by {src}; a symbolic dim has one size in all inputs that use it"
            )
        if var.point is None:
            var.point, var.point_src = value, src

    def _apply_dims(self) -> None:
        for name, value in self.dims.items():
            self._bind_point(("sym", name), value, f"dims[{name!r}]")

    def _check_rank(self, name: str, shape: tuple[int, ...], what: str) -> list[int | tuple]:
        entries = self.layout[name]
        spec = self.by_name[name]
        if entries is None or len(entries) != len(shape):
            raise InputError(
                f"{what} = {_fmt_shape(shape)} has rank {len(shape)}, but {self.label} declares "
                f"{spec.describe()} (rank {len(entries) if entries is not None else '?'})"
            )
        return entries

    def _apply_shapes(self) -> None:
        for name, shape in self.shapes.items():
            what = f"shapes[{name!r}]"
            entries = self._check_rank(name, shape, what)
            for i, (e, v) in enumerate(zip(entries, shape, strict=True)):
                if isinstance(e, int):
                    if e != v:
                        raise InputError(
                            f"{what} = {_fmt_shape(shape)} contradicts {self.label}: dim {i} of input "
                            f"{name!r} is static {e} ({self.by_name[name].describe()})"
                        )
                else:
                    self._bind_point(e, v, f"{what} dim {i}")

    def _apply_profile(self) -> None:
        for name, (mn, op, mx) in self.profile.items():
            what = f"profile[{name!r}]"
            entries = self._check_rank(name, mn, what + "['min']")
            for i, e in enumerate(entries):
                a, b, c = mn[i], op[i], mx[i]
                if isinstance(e, int):
                    if not a == b == c == e:
                        raise InputError(
                            f"{what} contradicts {self.label}: dim {i} of input {name!r} is static {e}, "
                            f"the profile gives min {a}, opt {b}, max {c}"
                        )
                    continue
                var = self.vars[e]
                src = f"{what} dim {i}"
                lo = a if var.lo is None else max(var.lo, a)
                hi = c if var.hi is None else min(var.hi, c)
                if lo > hi:
                    raise InputError(
                        f"{self.label}: dim {var.label} has profile range [{var.lo}, {var.hi}] from "
                        f"{var.range_src} but [{a}, {c}] from {src}; the ranges do not overlap"
                    )
                if var.lo is None:
                    var.opt, var.range_src = b, src
                var.lo, var.hi = lo, hi
                var.opt = min(max(var.opt, lo), hi)
        for var in self.vars.values():
            if var.point is not None and var.lo is not None and not var.lo <= var.point <= var.hi:
                raise InputError(
                    f"{self.label}: dim {var.label} = {var.point} (from {var.point_src}) is outside the "
                    f"profile range [{var.lo}, {var.hi}] (from {var.range_src})"
                )

    # -- results ------------------------------------------------------------------------
    def undeclared_error(self, missing: dict[str, list[str]]) -> InputError:
        lines = [f"{self.label}: input shapes are not fully declared:"]
        for name, items in missing.items():
            spec = self.by_name[name]
            lines.append(f"  - input {name!r} {spec.dtype_name}{_shape_text(spec.shape)}: {', '.join(items)}")
        need = [n for n in missing]
        sym = []
        for n in need:
            for e in self.layout[n] or ():
                if isinstance(e, tuple) and e[0] == "sym" and self.vars[e].point is None and e[1] not in sym:
                    sym.append(e[1])

        def example(n):
            entries = self.layout[n]
            if entries is None:
                return None
            out = []
            for i, e in enumerate(entries):
                if isinstance(e, int):
                    out.append(str(e))
                elif self.vars[e].point is not None:
                    out.append(str(self.vars[e].point))
                else:
                    out.append(f"<{e[1]}>" if e[0] == "sym" else f"<dim{i}>")
            return out

        api_shapes = []
        cli_shapes = []
        for n in need:
            ex = example(n)
            if ex is None:
                api_shapes.append(f"{n!r}: (<d0>, <d1>, ...)")
                cli_shapes.append(f"{n}:[<d0>,<d1>,...]")
            else:
                api_shapes.append(f"{n!r}: ({', '.join(ex)}{',' if len(ex) == 1 else ''})")
                cli_shapes.append(f"{n}:[{','.join(ex)}]")
        lines.append("Declare the sizes to use, per symbolic dim or per input:")
        api = []
        if sym:
            api.append("dims={" + ", ".join(f"{d!r}: <{d}>" for d in sym) + "}")
        api.append("shapes={" + ", ".join(api_shapes) + "}")
        lines.append("  marker/API keyword arguments: " + "  or  ".join(api))
        lines.append(f"  pytest-trt command line: {SHAPES_OPTION} " + " ".join(cli_shapes))
        return InputError("\n".join(lines))

    def shapes_result(self) -> dict[str, tuple[int, ...]]:
        out: dict[str, tuple[int, ...]] = {}
        missing: dict[str, list[str]] = {}
        for s in self.specs:
            entries = self.layout[s.name]
            if entries is None:
                missing[s.name] = ["its rank is unknown (the model declares no shape)"]
                continue
            dims, items = [], []
            for i, e in enumerate(entries):
                if isinstance(e, int):
                    dims.append(e)
                elif self.vars[e].point is not None:
                    dims.append(self.vars[e].point)
                else:
                    items.append(f"dim {i} {e[1]!r}" if e[0] == "sym" else f"dim {i} (unnamed)")
            if items:
                missing[s.name] = ["no size declared for " + ", ".join(items)]
            else:
                out[s.name] = tuple(dims)
        if missing:
            raise self.undeclared_error(missing)
        return out

    def profile_result(self) -> dict[str, tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]]:
        out = {}
        missing: dict[str, list[str]] = {}
        for s in self.specs:
            if s.name in self.profile:
                out[s.name] = self.profile[s.name]
                continue
            entries = self.layout[s.name]
            if entries is None:
                missing[s.name] = ["its rank is unknown (the model declares no shape)"]
                continue
            mn, op, mx, items = [], [], [], []
            for i, e in enumerate(entries):
                if isinstance(e, int):
                    v = (e, e, e)
                else:
                    var = self.vars[e]
                    if var.lo is not None:
                        v = (var.lo, var.opt, var.hi)
                    elif var.point is not None:
                        v = (var.point,) * 3
                    else:
                        items.append(f"dim {i} {e[1]!r}" if e[0] == "sym" else f"dim {i} (unnamed)")
                        continue
                mn.append(v[0])
                op.append(v[1])
                mx.append(v[2])
            if items:
                missing[s.name] = ["no size declared for " + ", ".join(items)]
            else:
                out[s.name] = (tuple(mn), tuple(op), tuple(mx))
        if missing:
            err = self.undeclared_error(missing)
            raise InputError(str(err) + "\n  or a TensorRT profile: profile={input: {'min': shape, 'opt': shape, 'max': shape}}")
        return out

    def var_ranges(self) -> dict[tuple, tuple[int, int]]:
        """Every dynamic dim's ``(lo, hi)`` for drawing shapes; undeclared -> InputError."""
        self.profile_result()  # raises for undeclared dims
        out = {}
        for key, var in self.vars.items():
            if var.lo is not None:
                out[key] = (var.point, var.point) if var.point is not None else (var.lo, var.hi)
            elif var.point is not None:
                out[key] = (var.point, var.point)
        return out


def resolve_shapes(model, shapes=None, dims=None) -> dict[str, tuple[int, ...]]:
    """The concrete shape of every input.

    Args:
        shapes: ``{input: shape}``, e.g. ``{"x": (2, 128, 64)}``, or the CLI string(s)
            ``"x:[2,128,64]"`` (:func:`parse_input_shape`).
        dims: ``{symbolic dim: size}``, e.g. ``{"batch": 2, "seq": 128}``.

    Static inputs need nothing. An input sharing symbolic dims with a declared one is
    inferred. Raises :class:`InputError` for an undeclared dynamic dim (naming the
    input, the dim's position and name, and both ways to declare it), for a declared
    shape that contradicts a static dim or the rank, for conflicting declarations of
    one symbolic dim, and for unknown input or dim names.
    """
    m = _model(model)
    return _Solver(m, input_specs(m), shapes, dims).shapes_result()


def resolve_profile(model, shapes=None, dims=None, profile=None):
    """A TensorRT optimization profile: ``{input: (min_shape, opt_shape, max_shape)}``.

    ``profile={"x": {"min": ..., "opt": ..., "max": ...}}`` is taken as given (checked
    against static dims and rank, min <= opt <= max). Inputs without an entry get
    ``min = opt = max`` from their static or declared shape (``shapes``/``dims``), or
    inherit the range of symbolic dims they share with a profiled input. A declared
    shape must lie inside the profile.
    """
    m = _model(model)
    return _Solver(m, input_specs(m), shapes, dims, profile).profile_result()


def profile_from_shapes(min_shapes, opt_shapes, max_shapes) -> dict[str, dict[str, tuple[int, ...]]]:
    """Combine Polygraphy-style ``--trt-min-shapes/--trt-opt-shapes/--trt-max-shapes``.

    Each argument is a dict or the option string(s), e.g. ``"x:[1,8]"``. Every input
    must appear in all three (:class:`UsageError` otherwise).
    """
    parts = {}
    for key, value, opt in (("min", min_shapes, "--trt-min-shapes"), ("opt", opt_shapes, "--trt-opt-shapes"),
                            ("max", max_shapes, "--trt-max-shapes")):
        if isinstance(value, Mapping):
            parts[key] = dict(value)
        else:
            parts[key] = parse_input_shape(value, option=opt)
    names = list(dict.fromkeys([*parts["min"], *parts["opt"], *parts["max"]]))
    out = {}
    for n in names:
        lacking = [k for k in ("min", "opt", "max") if n not in parts[k]]
        if lacking:
            raise UsageError(
                f"profile for input {n!r} lacks its {'/'.join(lacking)} shape: give min, opt and max "
                f"shapes for every profiled input"
            )
        out[n] = {k: tuple(parts[k][n]) for k in ("min", "opt", "max")}
    return out


# --------------------------------------------------------------------------------------
# Parsing Polygraphy-style option strings
# --------------------------------------------------------------------------------------

def _split_entries(arg, option: str) -> list[str]:
    """Entries of an option value: whitespace separates entries outside brackets."""
    if isinstance(arg, str):
        items = [arg]
    elif isinstance(arg, Iterable) and not isinstance(arg, (bytes, Mapping)):
        items = list(arg)
    else:
        raise UsageError(f"{option}: expected a string or a list of strings, got {arg!r}")
    entries: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise UsageError(f"{option}: expected strings, got {item!r}")
        depth, cur = 0, []
        for ch in item:
            if ch == "[":
                depth += 1
            elif ch == "]":
                depth = max(0, depth - 1)
            if ch.isspace() and depth == 0:
                if cur:
                    entries.append("".join(cur))
                cur = []
            else:
                cur.append(ch)
        if cur:
            entries.append("".join(cur))
    if not entries:
        raise UsageError(f"{option}: empty value")
    return entries


def _parse_number(text: str):
    text = text.strip()
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return None


_BRACKETS = re.compile(r"\[([^\[\]]*)\]", re.S)


def parse_val_range(arg, *, option: str = VAL_RANGE_OPTION) -> dict[str, tuple[Any, Any]]:
    """Parse Polygraphy's ``--val-range`` spelling into ``{input: (min, max)}``.

    ``"x:[-1,1]"`` -> ``{"x": (-1, 1)}``; ``"[0,5]"`` -> ``{"": (0, 5)}`` (all inputs,
    key :data:`ALL_INPUTS`). Several entries: a list of strings or one string with
    entries separated by spaces (``"[0,1] input_ids:[0,30521]"``). The name is what
    precedes the last ``:``, so names containing ``:`` work (``input:0:[0,1]``).
    Bounds are int or float literals, inclusive. Unlike Polygraphy (last one wins), an
    input given twice is an error.

    Raises :class:`UsageError` for malformed text and :class:`InputError` for a
    non-finite bound or min > max; messages quote the offending entry.
    """
    entries = _split_entries(arg, option)
    out: dict[str, tuple[Any, Any]] = {}
    for entry in entries:
        name, sep, val = entry.rpartition(":")
        name, val = name.strip(), val.strip()
        key = ALL_INPUTS if name in _ALL_KEYS else name
        hint = (f"expected NAME:[MIN,MAX] for one input or [MIN,MAX] for all inputs, "
                f"e.g. {option} input_ids:[0,30521] [-1,1]")
        m = _BRACKETS.fullmatch(val)
        if not m:
            raise UsageError(f"{option} {entry!r}: {hint}")
        parts = m.group(1).split(",")
        if len(parts) != 2:
            raise UsageError(f"{option} {entry!r}: a range has exactly 2 values (min and max), got {len(parts)}; {hint}")
        lo, hi = (_parse_number(p) for p in parts)
        if lo is None or hi is None:
            bad = parts[0] if lo is None else parts[1]
            raise UsageError(f"{option} {entry!r}: {bad.strip()!r} is not a number; {hint}")
        if key in out:
            who = "all inputs" if key == ALL_INPUTS else f"input {key!r}"
            raise UsageError(f"{option} {entry!r}: a range for {who} is given twice")
        out[key] = _check_range(lo, hi, f"{option} {entry!r}")
    return out


def parse_input_shape(arg, *, option: str = SHAPES_OPTION) -> dict[str, tuple[int, ...]]:
    """Parse Polygraphy's ``--input-shapes`` spelling into ``{input: shape}``.

    ``"x:[1,3,224,224]"`` -> ``{"x": (1, 3, 224, 224)}``; ``"x:[]"`` is a scalar.
    Several entries: a list of strings or one string separated by spaces. trtexec's
    ``x:1x3x224x224`` is not Polygraphy's spelling and is refused with the bracket form
    to write instead. Dims must be positive integers (the size to generate).

    Raises :class:`UsageError`, quoting the offending entry.
    """
    entries = _split_entries(arg, option)
    out: dict[str, tuple[int, ...]] = {}
    for entry in entries:
        name, sep, val = entry.rpartition(":")
        name, val = name.strip(), val.strip()
        hint = f"expected NAME:[D0,D1,...], e.g. {option} input_ids:[2,128] pixel_values:[2,3,224,224]"
        if not sep or not name:
            raise UsageError(f"{option} {entry!r}: no input name; {hint}")
        if re.fullmatch(r"\d+(?:x\d+)*", val):
            fixed = "[" + ",".join(val.split("x")) + "]"
            raise UsageError(
                f"{option} {entry!r}: write shapes in brackets (Polygraphy's spelling; 1x3x224x224 is "
                f"trtexec's): {name}:{fixed}"
            )
        m = _BRACKETS.fullmatch(val)
        if not m:
            raise UsageError(f"{option} {entry!r}: {hint}")
        inner = m.group(1)
        dims: list[int] = []
        if inner.strip():
            for i, part in enumerate(inner.split(",")):
                text = part.strip()
                if not re.fullmatch(r"[+-]?\d+", text, re.ASCII):
                    raise UsageError(
                        f"{option} {entry!r}: dim {i} {text!r} is not an integer; give the size to use "
                        f"for every dim; {hint}"
                    )
                try:
                    value = int(text)
                except ValueError as exc:  # more digits than int() accepts
                    raise UsageError(f"{option} {entry!r}: dim {i} is not a usable size") from exc
                if value < 0:
                    raise UsageError(
                        f"{option} {entry!r}: dim {i} is {value}; give the size to use (-1 does not mean "
                        f"'dynamic' here)"
                    )
                if value == 0:
                    raise UsageError(f"{option} {entry!r}: dim {i} is 0; zero-size dims are not supported (an "
                                     f"empty tensor compares nothing): give a size >= 1")
                dims.append(value)
        if name in out:
            raise UsageError(f"{option} {entry!r}: input {name!r} is given twice")
        out[name] = tuple(dims)
    return out


# --------------------------------------------------------------------------------------
# Value ranges
# --------------------------------------------------------------------------------------

def _check_range(lo, hi, what: str):
    for v in (lo, hi):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
            raise InputError(f"{what}: range bounds must be numbers, got {v!r}")
        if not isinstance(v, numbers.Integral) and not math.isfinite(float(v)):
            raise InputError(f"{what}: range bounds must be finite, got {v!r}")
    if lo > hi:
        raise InputError(f"{what}: min {lo} is greater than max {hi}; write [min, max]")
    return (lo, hi)


def _range_pair(value, what: str):
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise InputError(f"{what} must be a (min, max) pair, got {value!r}")
    pair = tuple(value)
    if len(pair) != 2:
        raise InputError(f"{what} must be a (min, max) pair, got {len(pair)} values: {value!r}")
    return _check_range(pair[0], pair[1], what)


def _normalize_val_range(val_range) -> dict[str, tuple]:
    if val_range is None:
        return {}
    if isinstance(val_range, str) or (
        isinstance(val_range, (list, tuple)) and val_range and all(isinstance(v, str) for v in val_range)
    ):
        return parse_val_range(val_range)
    if isinstance(val_range, Mapping):
        out = {}
        for k, v in val_range.items():
            key = ALL_INPUTS if k in _ALL_KEYS else k
            if key in out:
                raise InputError("val_range gives the all-inputs range twice (keys '' and '*')")
            out[key] = _range_pair(v, f"val_range[{k!r}]")
        return out
    return {ALL_INPUTS: _range_pair(val_range, "val_range")}


def _int_range_example(name: str) -> str:
    lo, hi = (0, 1) if any(w in name.lower() for w in ("mask", "type")) else (0, 30521)
    return f"val_range={{{name!r}: ({lo}, {hi})}} or {VAL_RANGE_OPTION} {name}:[{lo},{hi}]"


def _fits(spec: InputSpec, lo, hi, what: str) -> tuple:
    """Check a range against the dtype; return it typed (ints for int/bool inputs)."""
    kind = spec.kind
    if kind in ("int", "bool"):
        vals = []
        for v in (lo, hi):
            if isinstance(v, numbers.Integral):
                vals.append(int(v))
            elif float(v).is_integer():
                vals.append(int(float(v)))
            else:
                raise InputError(
                    f"{what} [{lo}, {hi}] for input {spec.name!r} ({spec.dtype_name}) has a non-integer bound; "
                    f"declare an integer range for it, e.g. {_int_range_example(spec.name)}"
                )
        lo, hi = vals
        if kind == "bool":
            if lo < 0 or hi > 1:
                raise InputError(
                    f"{what} [{lo}, {hi}] for input {spec.name!r} is outside bool's values [0, 1]; "
                    f"declare {{{spec.name!r}: (0, 1)}} (or (1, 1) for all True)"
                )
        else:
            info = np.iinfo(spec.dtype)
            if lo < int(info.min) or hi > int(info.max):
                raise InputError(
                    f"{what} [{lo}, {hi}] for input {spec.name!r} is outside {spec.dtype_name}'s range "
                    f"[{int(info.min)}, {int(info.max)}]"
                )
        return (lo, hi)
    fmax = _float_max(spec.dtype)
    try:
        outside = abs(float(lo)) > fmax or abs(float(hi)) > fmax
    except OverflowError:  # an int beyond any float
        outside = True
    if outside:
        raise InputError(
            f"{what} [{lo}, {hi}] for input {spec.name!r} is outside {spec.dtype_name}'s finite range "
            f"[-{fmax:g}, {fmax:g}]"
        )
    return (float(lo), float(hi))


def resolve_val_ranges(model, val_range=None) -> dict[str, tuple]:
    """Every input's inclusive value range ``{input: (min, max)}``.

    ``val_range``: ``(min, max)`` for all inputs, ``{input: (min, max)}`` (key ``""``
    or ``"*"`` = all inputs not listed), or the ``--val-range`` string(s). Floats
    default to :data:`DEFAULT_FLOAT_RANGE`, bools to ``(0, 1)``; integer inputs need a
    declared range. Raises :class:`InputError` (all undeclared integer inputs at once).
    """
    m = _model(model)
    specs = input_specs(m)
    return _resolve_ranges(m, specs, val_range)


def _resolve_ranges(m, specs: list[InputSpec], val_range) -> dict[str, tuple]:
    given = _normalize_val_range(val_range)
    _check_names(given, specs, "val_range", m.label, allow_all=True)
    out: dict[str, tuple] = {}
    undeclared: list[InputSpec] = []
    for s in specs:
        kind = s.kind
        if kind == "other":
            raise InputError(
                f"{m.label}: input {s.name!r} is {s.dtype_name}; pytest-trt cannot generate it: "
                f"pass your own feeds (load_feeds / --load-inputs)"
            )
        if s.name in given:
            what = f"val_range[{s.name!r}]"
            lo, hi = given[s.name]
        elif ALL_INPUTS in given:
            what = "the all-inputs val_range"
            lo, hi = given[ALL_INPUTS]
        elif kind == "float":
            what, (lo, hi) = "the default range", DEFAULT_FLOAT_RANGE
        elif kind == "bool":
            what, (lo, hi) = "the default range", DEFAULT_BOOL_RANGE
        else:
            undeclared.append(s)
            continue
        out[s.name] = _fits(s, lo, hi, what)
    if undeclared:
        lines = [
            f"input {s.name!r} is {s.dtype_name}: declare its range, e.g. {_int_range_example(s.name)}"
            for s in undeclared
        ]
        raise InputError(
            f"{m.label}: integer inputs need a declared value range (inclusive; token ids: "
            f"[0, vocab_size - 1], masks: [0, 1] or [1, 1]):\n  " + "\n  ".join(lines)
        )
    return out


def _per_input(value, specs: list[InputSpec], what: str, label: str) -> dict[str, Any]:
    """Expand ``{input or '*' / '': v}`` over float inputs; names must be float inputs."""
    if not isinstance(value, Mapping):
        return {s.name: value for s in specs if s.kind == "float"}
    _check_names(value, specs, what, label, allow_all=True)
    default = None
    for k in _ALL_KEYS:
        if k in value:
            default = value[k]
    out = {}
    for s in specs:
        if s.name in value:
            if s.kind != "float":
                raise InputError(
                    f"{what}[{s.name!r}]: input {s.name!r} is {s.dtype_name}; {what} applies to float inputs only"
                )
            out[s.name] = value[s.name]
        elif default is not None and s.kind == "float":
            out[s.name] = default
    return out


def _normalize_offset(offset, specs, label) -> dict[str, float]:
    if offset is None:
        return {}
    per = _per_input(offset, specs, "offset", label)
    out = {}
    for name, v in per.items():
        if not _finite_number(v):
            raise InputError(f"offset for input {name!r} must be a finite number, got {v!r}")
        out[name] = float(v)
    return out


_OUTLIER_KEYS = ("fraction", "count", "magnitude", "sign")


@dataclass(frozen=True)
class _Outliers:
    count: int | None
    fraction: float | None
    magnitude: float
    sign: str


def _normalize_outliers(outliers, specs, label) -> dict[str, _Outliers]:
    if outliers is None or outliers is False:
        return {}
    if outliers is True:
        outliers = {"*": {}}
    if not isinstance(outliers, Mapping):
        raise InputError(
            "outliers must be a dict {input: {'count': 1, 'magnitude': 400.0}} "
            f"(or {{'*': ...}} for every float input), got {outliers!r}"
        )
    names = {s.name for s in specs}
    if outliers and set(outliers) <= set(_OUTLIER_KEYS) and not set(outliers) & names:
        raise InputError(
            f"outliers={dict(outliers)!r} looks like one outlier spec: key it by input, e.g. "
            f"{{'x': {dict(outliers)!r}}}, or {{'*': ...}} for every float input"
        )
    per = _per_input(outliers, specs, "outliers", label)
    out = {}
    for name, spec in per.items():
        what = f"outliers[{name!r}]"
        if spec is True:
            spec = {}
        if not isinstance(spec, Mapping):
            raise InputError(f"{what} must be a dict like {{'fraction': 0.001, 'magnitude': 400.0}}, got {spec!r}")
        unknown = sorted(map(str, set(spec) - set(_OUTLIER_KEYS)))
        if unknown:
            raise InputError(f"{what}: unknown key(s) {', '.join(map(repr, unknown))}; known: {', '.join(_OUTLIER_KEYS)}")
        count, fraction = spec.get("count"), spec.get("fraction")
        if count is not None and fraction is not None:
            raise InputError(f"{what}: give 'count' or 'fraction', not both")
        if count is not None and (isinstance(count, bool) or not isinstance(count, numbers.Integral) or count < 1):
            raise InputError(f"{what}: 'count' must be an integer >= 1, got {count!r}")
        if fraction is not None and (not _finite_number(fraction) or not 0 < float(fraction) <= 1):
            raise InputError(f"{what}: 'fraction' must be a number in (0, 1], got {fraction!r}")
        if count is None and fraction is None:
            count = 1
        magnitude = spec.get("magnitude", DEFAULT_OUTLIER_MAGNITUDE)
        if not _finite_number(magnitude) or magnitude <= 0:
            raise InputError(f"{what}: 'magnitude' must be a finite number > 0, got {magnitude!r}")
        sign = spec.get("sign", "+")
        if sign not in ("+", "-", "random"):
            raise InputError(f"{what}: 'sign' must be '+', '-' or 'random', got {sign!r}")
        out[name] = _Outliers(None if count is None else int(count), None if fraction is None else float(fraction),
                              float(magnitude), sign)
    return out


# --------------------------------------------------------------------------------------
# Generated feeds
# --------------------------------------------------------------------------------------

def _check_seed(seed) -> int:
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise InputError(f"seed must be a non-negative integer, got {seed!r}")
    return int(seed)


def _rng(seed: int, *parts: str) -> np.random.Generator:
    words = [seed] + [zlib.crc32(p.encode("utf-8", "surrogatepass")) for p in parts]
    return np.random.default_rng(np.random.SeedSequence(words))


def _sample(rng: np.random.Generator, spec: InputSpec, shape: tuple[int, ...], lo, hi, offset: float = 0.0):
    kind = spec.kind
    if kind == "bool":
        return rng.integers(lo, hi, size=shape, dtype=np.int8, endpoint=True).astype(np.bool_)
    if kind == "int":
        return rng.integers(lo, hi, size=shape, dtype=spec.dtype, endpoint=True)
    u = rng.random(size=shape)
    values = lo * (1.0 - u) + hi * u  # lerp: no overflow even for [-max, max] of float64
    if offset:
        values = values + offset
    return values.astype(spec.dtype)


def make_feeds(model, *, shapes=None, dims=None, val_range=None, seed: int = 0, outliers=None,
               offset=None) -> dict[str, np.ndarray]:
    """Random feeds for every model input, reproducible from ``seed``.

    Args:
        shapes, dims: see :func:`resolve_shapes`.
        val_range: see :func:`resolve_val_ranges`. Floats default to ``[-1, 1]``, bools
            to ``{0, 1}``; integer inputs must be declared.
        seed: non-negative int. Each input draws from its own stream seeded by ``(seed,
            input name)``.
        offset: a number added to every float input, or ``{input: number}`` (``"*"`` =
            all float inputs). With a small ``val_range`` this is the "common offset,
            small spread" regime that breaks an FP16 LayerNorm.
        outliers: ``{input: {"count": n | "fraction": f, "magnitude": m, "sign": s}}``
            (``"*"`` = all float inputs; ``True`` = one element of magnitude 400 in
            every float input). ``count`` (default 1) or ``fraction`` of the elements
            (at least one) are set to ``magnitude`` (default 400.0; an absolute value,
            not added to ``offset``), ``sign`` ``"+"``
            (default), ``"-"`` or ``"random"``. Outlier positions come from a separate
            stream: the other elements are identical to the feeds without outliers.

    Returns:
        ``{input name: array}`` in model input order.
    """
    m = _model(model)
    specs = input_specs(m)
    seed = _check_seed(seed)
    resolved = _Solver(m, specs, shapes, dims).shapes_result()
    ranges = _resolve_ranges(m, specs, val_range)
    offsets = _normalize_offset(offset, specs, m.label)
    outs = _normalize_outliers(outliers, specs, m.label)
    for s in specs:
        shape = resolved[s.name]
        nbytes = math.prod(shape) * s.dtype.itemsize
        if nbytes > MAX_FEED_BYTES:
            raise InputError(
                f"input {s.name!r} of shape {_fmt_shape(shape)} would take {nbytes / 2**30:.1f} GiB; "
                f"check the declared shapes/dims (limit {MAX_FEED_BYTES / 2**30:.0f} GiB per input)"
            )
        if s.name in offsets:
            lo, hi = ranges[s.name]
            _fits(s, lo + offsets[s.name], hi + offsets[s.name], f"val_range + offset {offsets[s.name]:g}")
        if s.name in outs:
            mag = outs[s.name].magnitude
            _fits(s, -mag, mag, f"outliers[{s.name!r}] magnitude")
    feeds: dict[str, np.ndarray] = {}
    for s in specs:
        lo, hi = ranges[s.name]
        arr = _sample(_rng(seed, s.name), s, resolved[s.name], lo, hi, offsets.get(s.name, 0.0))
        spec = outs.get(s.name)
        if spec is not None and arr.size:
            _apply_outliers(_rng(seed, s.name, "outliers"), arr, spec)
        feeds[s.name] = arr
    return feeds


def _apply_outliers(rng: np.random.Generator, arr: np.ndarray, spec: _Outliers) -> None:
    n = spec.count if spec.count is not None else max(1, round(spec.fraction * arr.size))
    n = min(n, arr.size)
    flat = arr.reshape(-1)
    positions = rng.choice(arr.size, size=n, replace=False)
    if spec.sign == "+":
        signs = np.ones(n)
    elif spec.sign == "-":
        signs = -np.ones(n)
    else:
        signs = rng.choice(np.array([-1.0, 1.0]), size=n)
    flat[positions] = (signs * spec.magnitude).astype(arr.dtype)


# --------------------------------------------------------------------------------------
# User feeds: check, load, save
# --------------------------------------------------------------------------------------

def check_feeds(model, feeds, *, shapes=None, dims=None, allow_nonfinite: bool = False) -> None:
    """Check that ``feeds`` fit the model; raise one :class:`InputError` listing every problem.

    Checks: missing and extra input names (listing the model's inputs), arrays only,
    dtype (expected vs got, and the cast to write), rank, static dims, declared
    ``shapes``/``dims``, one size per symbolic dim across inputs, and no NaN/Inf in
    float feeds unless ``allow_nonfinite=True``.
    """
    m = _model(model)
    specs = input_specs(m)
    if not isinstance(feeds, Mapping):
        raise InputError(f"feeds must be a dict {{input name: numpy array}}, got {type(feeds).__name__}")
    solver = _Solver(m, specs, shapes, dims)
    names = [s.name for s in specs]
    problems: list[str] = []
    missing = [n for n in names if n not in feeds]
    extra = [n for n in feeds if n not in names]
    for n in missing:
        problems.append(f"input {n!r} is missing")
    for n in extra:
        problems.append(f"{n!r} is not an input of the model{_did_you_mean(str(n), names)}")
    seen: dict[tuple, tuple[int, str]] = {}
    for s in specs:
        if s.name not in feeds:
            continue
        arr = feeds[s.name]
        if not isinstance(arr, np.ndarray):
            problems.append(
                f"input {s.name!r} is a {type(arr).__name__}, not a numpy array: pass "
                f"np.asarray(value, dtype=np.{s.dtype_name})"
            )
            continue
        if arr.dtype != s.dtype:
            problems.append(
                f"input {s.name!r} expects {s.dtype_name}, got {arr.dtype.name}: cast it with "
                f"feeds[{s.name!r}] = feeds[{s.name!r}].astype(np.{s.dtype_name})"
            )
        if 0 in arr.shape:
            problems.append(f"input {s.name!r} has a zero-size dim (shape {_fmt_shape(arr.shape)}): zero-size "
                            f"dims are not supported (an empty tensor compares nothing)")
            continue
        entries = solver.layout[s.name]
        if entries is not None:
            if arr.ndim != len(entries):
                problems.append(
                    f"input {s.name!r} expects rank {len(entries)} ({s.describe()}), got shape {_fmt_shape(arr.shape)}"
                )
            else:
                for i, (e, v) in enumerate(zip(entries, arr.shape, strict=True)):
                    if isinstance(e, int):
                        if e != v:
                            problems.append(
                                f"input {s.name!r} dim {i} must be {e} ({s.describe()}), got shape "
                                f"{_fmt_shape(arr.shape)}"
                            )
                        continue
                    var = solver.vars[e]
                    if var.point is not None and var.point != v:
                        problems.append(
                            f"input {s.name!r} dim {i} ({var.label}) is {v}, but {var.point_src} declares "
                            f"{var.point}; got shape {_fmt_shape(arr.shape)}"
                        )
                    elif e[0] == "sym":
                        if e in seen and seen[e][0] != v:
                            problems.append(
                                f"input {s.name!r} dim {i} ({var.label}) is {v}, but it is {seen[e][0]} in "
                                f"input {seen[e][1]!r}; a symbolic dim has one size in all inputs"
                            )
                        seen.setdefault(e, (v, s.name))
        if not allow_nonfinite and _dtype_kind(arr.dtype) == "float" and arr.size:
            as_float = arr.astype(np.float64) if arr.dtype.kind != "f" else arr
            bad = ~np.isfinite(as_float)
            if bad.any():
                n_nan = int(np.isnan(as_float).sum())
                n_inf = int(bad.sum()) - n_nan
                first = tuple(int(i) for i in np.argwhere(bad)[0])
                problems.append(
                    f"input {s.name!r} holds {n_nan} NaN and {n_inf} Inf value(s) (first at index {first}); "
                    f"pass allow_nonfinite=True if that is intended"
                )
    if problems:
        tail = f"\n{_inputs_listing(specs)}" if (missing or extra) else ""
        raise InputError(f"feeds do not fit {m.label}:\n  - " + "\n  - ".join(problems) + tail)


def load_feeds(path) -> dict[str, np.ndarray]:
    """Read feeds from an ``.npz`` file (``np.savez(path, input_ids=..., ...)``)."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"feeds file not found: {p} (relative paths are resolved against {Path.cwd()})")
    if p.is_dir():
        raise InputError(f"feeds path is a directory, not an .npz file: {p}")
    try:
        data = np.load(p, allow_pickle=False)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise InputError(
            f"cannot read feeds file {p}: not a readable .npz archive ({exc}); write feeds with "
            f"np.savez(path, **feeds) or pytest_trt.inputs.save_feeds"
        ) from exc
    if isinstance(data, np.ndarray):
        raise InputError(
            f"feeds file {p} holds a single array (.npy), but feeds need a name per input: "
            f"np.savez(path, input_ids=..., attention_mask=...)"
        )
    try:
        with data:
            feeds = {k: data[k] for k in data.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, KeyError) as exc:
        raise InputError(f"cannot read feeds file {p}: an array in it is unreadable ({exc})") from exc
    if not feeds:
        raise InputError(f"feeds file {p} holds no arrays")
    for k, v in feeds.items():
        if not isinstance(v, np.ndarray):
            raise InputError(f"feeds file {p}: member {k!r} is not a .npy array; is this an .npz written by np.savez?")
    return feeds


def save_feeds(path, feeds) -> Path:
    """Write feeds to an ``.npz`` file (``.npz`` appended when missing); return the path.

    Written atomically (a temporary file renamed into place), any input name works
    (also ``file``, which ``np.savez(**feeds)`` cannot take).
    """
    if not isinstance(feeds, Mapping) or not feeds:
        raise InputError("save_feeds needs a non-empty dict {input name: numpy array}")
    p = Path(path)
    if p.suffix != ".npz":
        p = p.with_name(p.name + ".npz")
    arrays = {}
    for k, v in feeds.items():
        if not isinstance(k, str) or not k:
            raise InputError(f"save_feeds: input names must be non-empty strings, got {k!r}")
        arr = np.asanyarray(v)
        if arr.dtype.hasobject:
            raise InputError(f"save_feeds: input {k!r} is an object array; .npz feeds hold numeric arrays only")
        arrays[k] = np.ascontiguousarray(arr)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".feeds-", suffix=".npz.tmp", dir=p.parent)
    try:
        with os.fdopen(fd, "wb") as fh, zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
            for k, arr in arrays.items():
                with zf.open(k + ".npy", "w", force_zip64=True) as member:
                    np.lib.format.write_array(member, arr, allow_pickle=False)
        os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return p


# --------------------------------------------------------------------------------------
# Named input sets for parametrized tests
# --------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class FeedSet:
    """Named feeds: ``name`` (the test id), ``feeds``, the ``seed`` that generated them
    (None for loaded data) and ``source`` (a file path or a generation summary)."""

    name: str
    feeds: dict[str, np.ndarray] = field(repr=False)
    seed: int | None = None
    source: str | None = None

    def describe(self) -> str:
        shapes = ", ".join(f"{k}{_fmt_shape(v.shape)}" for k, v in self.feeds.items())
        origin = f" seed={self.seed}" if self.seed is not None else ""
        origin += f" from {self.source}" if self.source else ""
        return f"{self.name}:{origin} {shapes}".strip()


def _feedset_from(name: str, spec, model, common: dict, check: bool) -> FeedSet:
    if isinstance(spec, FeedSet):
        fs = FeedSet(name, spec.feeds, spec.seed, spec.source)
        loaded = True
    elif isinstance(spec, (str, os.PathLike)):
        fs = FeedSet(name, load_feeds(spec), None, str(spec))
        loaded = True
    elif isinstance(spec, Mapping) and spec and all(isinstance(v, np.ndarray) for v in spec.values()):
        fs = FeedSet(name, dict(spec), None, "given arrays")
        loaded = True
    elif isinstance(spec, Mapping) and all(k in _MAKE_FEEDS_KEYS for k in spec):
        if model is None:
            raise UsageError(f"input set {name!r} is generated ({dict(spec)!r}): pass the model to generate it")
        kwargs = {**common, **spec}
        fs = FeedSet(name, make_feeds(model, **kwargs), kwargs.get("seed", 0),
                     "make_feeds(" + ", ".join(f"{k}={v!r}" for k, v in spec.items()) + ")")
        loaded = False
    else:
        raise InputError(
            f"input set {name!r}: expected make_feeds keyword arguments (keys among "
            f"{', '.join(_MAKE_FEEDS_KEYS)}), a dict of numpy arrays, an .npz path or a FeedSet; got {spec!r}"
        )
    if check and loaded and model is not None:
        try:
            check_feeds(model, fs.feeds)
        except InputError as exc:
            raise InputError(f"input set {name!r}" + (f" ({fs.source})" if fs.source else "") + f": {exc}") from exc
    return fs


def input_sets(sets, model=None, *, shapes=None, dims=None, val_range=None, seed: int = 0,
               check: bool = True) -> list[FeedSet]:
    """Build named feed sets.

    ``sets`` is one of:

    * a dict ``{name: spec}``; a spec is make_feeds keyword overrides
      (``{}``, ``{"seed": 3}``, ``{"outliers": {"x": {"count": 1}}}``; the keyword
      arguments here are the common defaults, so sets differ only where they say so),
      a dict of arrays, an ``.npz`` path or a :class:`FeedSet`;
    * a directory: one set per ``*.npz`` file, named by the file stem, sorted;
    * an iterable of :class:`FeedSet`.

    Loaded sets are checked against ``model`` when given (without ``shapes``/``dims``:
    real data may come in several sizes).
    """
    common = {"shapes": shapes, "dims": dims, "val_range": val_range, "seed": seed}
    items: list[tuple[str, Any]]
    if isinstance(sets, (str, os.PathLike)):
        p = Path(sets)
        if p.is_dir():
            files = sorted(p.glob("*.npz"))
            if not files:
                raise InputError(f"no .npz files in {p}: write feeds with save_feeds(path, feeds)")
            items = [(f.stem, f) for f in files]
        elif p.exists():
            items = [(p.stem, p)]
        else:
            raise InputError(f"input sets directory not found: {p}")
    elif isinstance(sets, Mapping):
        items = list(sets.items())
    elif isinstance(sets, Iterable):
        items = []
        for fs in sets:
            if not isinstance(fs, FeedSet):
                raise InputError(f"input sets: expected FeedSet objects, got {type(fs).__name__}")
            items.append((fs.name, fs))
    else:
        raise InputError(f"input sets must be a dict, a directory or FeedSets, got {type(sets).__name__}")
    if not items:
        raise InputError("input sets: no sets given")
    m = _model(model) if model is not None else None
    out: list[FeedSet] = []
    seen: set[str] = set()
    for name, spec in items:
        if not isinstance(name, str) or not name:
            raise InputError(f"input set names must be non-empty strings, got {name!r}")
        if name in seen:
            raise InputError(f"input set name {name!r} is used twice")
        seen.add(name)
        out.append(_feedset_from(name, spec, m, common, check))
    return out


def param_sets(sets, model=None, *, marks=(), as_feedset: bool = False, **kwargs) -> list:
    """``pytest.param`` objects, one per input set, with the set name as the test id.

    ::

        @pytest.mark.parametrize("feeds", param_sets(
            {"normal": {}, "offset": {"offset": 1000.0, "val_range": (-0.05, 0.05)},
             "outlier": {"outliers": {"*": {"count": 1, "magnitude": 400.0}}}},
            "encoder.onnx", dims={"batch": 2, "seq": 16}))
        def test_fp16(trt, feeds): ...

    The value is the feeds dict (``as_feedset=True``: the :class:`FeedSet`, which
    also carries the seed). ``sets`` and ``kwargs`` as in :func:`input_sets`.
    """
    import pytest

    return [
        pytest.param(fs if as_feedset else fs.feeds, id=fs.name, marks=marks)
        for fs in input_sets(sets, model, **kwargs)
    ]
