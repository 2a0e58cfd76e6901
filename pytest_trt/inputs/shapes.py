"""Shapes and TensorRT optimization profiles: binding every dynamic dim of the model's inputs.

Static dims come from the model (:mod:`.specs`). Dynamic dims (symbolic ``batch`` or
unnamed) are bound by :class:`ShapeSolver` from the user's ``dims`` (per symbolic name),
``shapes`` (per input) and ``profile`` (min/opt/max per input); an input sharing a
symbolic dim with a declared one is inferred. The solver yields the concrete shapes that
generation uses, the profile a TensorRT build uses, and the ranges a Hypothesis strategy
draws from; contradictions and undeclared dims are an :class:`~pytest_trt.errors.InputError`
saying what to write.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core.formatting import fmt_shape
from ..errors import InputError
from ..model.load import Model
from .declarations import as_dim, as_shape, check_input_names, did_you_mean
from .parsing import SHAPES_OPTION, parse_input_shape
from .specs import InputSpec, ModelSource, as_model, input_specs, shape_text

__all__ = ["DimKey", "DynamicDim", "Profile", "ShapeSolver", "resolve_profile", "resolve_shapes"]

#: A dynamic dim's identity: ``("sym", name)`` for a symbolic dim shared by inputs,
#: ``("anon", input, index)`` for one unnamed dim.
DimKey = tuple
#: ``{input: (min_shape, opt_shape, max_shape)}``
Profile = dict[str, tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]]


@dataclass
class DynamicDim:
    """One dynamic dimension: a symbolic name shared by inputs, or one unnamed dim.

    ``point`` is the size of generated feeds (from ``dims`` or ``shapes``), ``lo``/``opt``/``hi``
    the profile range (the intersection over every profiled input using the dim; set
    together); ``*_src`` name the declaration that set them, for messages.
    """

    key: DimKey
    label: str                       # "'batch'" or "unnamed dim 1 of 'x'"
    point: int | None = None         # size of generated feeds
    point_src: str = ""
    lo: int | None = None            # profile range (intersection over contributors)
    hi: int | None = None
    opt: int | None = None
    range_src: str = ""

    def profile_range(self) -> tuple[int, int, int] | None:
        """``(min, opt, max)``: the profile range, else the declared size thrice; None when undeclared."""
        if self.lo is not None and self.opt is not None and self.hi is not None:
            return (self.lo, self.opt, self.hi)
        if self.point is not None:
            return (self.point, self.point, self.point)
        return None


def _profile_triple(entry: Any, what: str) -> tuple[Any, Any, Any]:
    """The (min, opt, max) of a profile entry written as a dict or as three shapes."""
    if isinstance(entry, Mapping):
        unknown = set(entry) - {"min", "opt", "max"}
        missing = [k for k in ("min", "opt", "max") if k not in entry]
        if unknown or missing:
            raise InputError(
                f"{what} must have exactly the keys 'min', 'opt', 'max'"
                + (f"; missing {', '.join(missing)}" if missing else "")
                + (f"; unknown {', '.join(map(repr, sorted(map(str, unknown))))}" if unknown else "")
            )
        return (entry["min"], entry["opt"], entry["max"])
    if isinstance(entry, (list, tuple)) and len(entry) == 3 and all(isinstance(e, (list, tuple)) for e in entry):
        return (entry[0], entry[1], entry[2])
    raise InputError(f"{what} must be {{'min': shape, 'opt': shape, 'max': shape}}, got {entry!r}")


def _profile_entry(entry: Any, what: str) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """One input's profile entry, checked: three shapes of one rank with min <= opt <= max per dim."""
    triple = _profile_triple(entry, what)
    mn, op, mx = (as_shape(s, f"{what}[{k!r}]") for s, k in zip(triple, ("min", "opt", "max"), strict=True))
    if not len(mn) == len(op) == len(mx):
        raise InputError(f"{what}: min {fmt_shape(mn)}, opt {fmt_shape(op)} and max {fmt_shape(mx)} differ in rank")
    for i, (a, b, c) in enumerate(zip(mn, op, mx, strict=True)):
        if not a <= b <= c:
            raise InputError(
                f"{what}: dim {i} needs min <= opt <= max, got min {a}, opt {b}, max {c}"
            )
    return (mn, op, mx)


class ShapeSolver:
    """Binds every dynamic dim from ``dims``, ``shapes`` and ``profile`` and checks them.

    Construction raises :class:`InputError` for a declaration that contradicts the model or
    another declaration. Then ``layout[input]`` lists, per dim, the static size (``int``)
    or the :data:`DimKey` of its :class:`DynamicDim` in ``vars`` (``None``: rank unknown),
    and :meth:`shapes_result`, :meth:`profile_result` and :meth:`var_ranges` give the
    results (raising for dims left undeclared).
    """

    def __init__(self, model: Model, specs: list[InputSpec], shapes: Any = None, dims: Any = None,
                 profile: Any = None) -> None:
        self.model = model
        self.label = model.label
        self.specs = specs
        self.by_name = {s.name: s for s in specs}
        self.vars: dict[DimKey, DynamicDim] = {}
        self.layout: dict[str, list[int | DimKey] | None] = {}
        self.shapes = self._norm_shapes(shapes)
        self.dims = self._norm_dims(dims)
        self.profile = self._norm_profile(profile)
        self._build_layout()
        self._apply_dims()
        self._apply_shapes()
        self._apply_profile()

    # -- normalization ------------------------------------------------------------------
    def _norm_shapes(self, shapes: Any) -> dict[str, tuple[int, ...]]:
        if shapes is None:
            return {}
        if isinstance(shapes, str) or (isinstance(shapes, (list, tuple)) and all(isinstance(s, str) for s in shapes)):
            shapes = parse_input_shape(shapes)
        if not isinstance(shapes, Mapping):
            raise InputError(f"shapes must be a dict {{input name: shape}}, e.g. {{'x': (2, 128, 64)}}, got {shapes!r}")
        check_input_names(shapes, self.specs, "shapes", self.label)
        return {k: as_shape(v, f"shapes[{k!r}]") for k, v in shapes.items()}

    def _norm_dims(self, dims: Any) -> dict[str, int]:
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
                    f"dims names {k!r}, which is no symbolic dim of {self.label}{did_you_mean(str(k), known)}; "
                    + (f"its symbolic dims: {listing}" if known else "the model has no symbolic dims "
                       "(declare unnamed dynamic dims with shapes={input: shape})")
                )
            out[k] = as_dim(v, f"dims[{k!r}]")
        return out

    def _norm_profile(self, profile: Any) -> Profile:
        if profile is None:
            return {}
        if not isinstance(profile, Mapping):
            raise InputError(
                "profile must be a dict {input: {'min': shape, 'opt': shape, 'max': shape}}, got " + repr(profile)
            )
        check_input_names(profile, self.specs, "profile", self.label)
        return {name: _profile_entry(entry, f"profile[{name!r}]") for name, entry in profile.items()}

    # -- binding ------------------------------------------------------------------------
    def _var(self, key: DimKey, label: str) -> DimKey:
        if key not in self.vars:
            self.vars[key] = DynamicDim(key, label)
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
            entries: list[int | DimKey] = []
            for i, d in enumerate(shape):
                if isinstance(d, int):
                    entries.append(d)
                elif isinstance(d, str):
                    entries.append(self._var(("sym", d), repr(d)))
                else:
                    entries.append(self._var(("anon", s.name, i), f"unnamed dim {i} of {s.name!r}"))
            self.layout[s.name] = entries

    def _bind_point(self, key: DimKey, value: int, src: str) -> None:
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

    def _check_rank(self, name: str, shape: tuple[int, ...], what: str) -> list[int | DimKey]:
        entries = self.layout[name]
        spec = self.by_name[name]
        if entries is None or len(entries) != len(shape):
            raise InputError(
                f"{what} = {fmt_shape(shape)} has rank {len(shape)}, but {self.label} declares "
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
                            f"{what} = {fmt_shape(shape)} contradicts {self.label}: dim {i} of input "
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
                self._narrow(self.vars[e], (a, b, c), f"{what} dim {i}")
        for var in self.vars.values():
            if (var.point is not None and var.lo is not None and var.hi is not None
                    and not var.lo <= var.point <= var.hi):
                raise InputError(
                    f"{self.label}: dim {var.label} = {var.point} (from {var.point_src}) is outside the "
                    f"profile range [{var.lo}, {var.hi}] (from {var.range_src})"
                )

    def _narrow(self, var: DynamicDim, triple: tuple[int, int, int], src: str) -> None:
        """Intersect ``var``'s profile range with one profiled input's ``(min, opt, max)``."""
        a, b, c = triple
        lo = a if var.lo is None else max(var.lo, a)
        hi = c if var.hi is None else min(var.hi, c)
        if lo > hi:
            raise InputError(
                f"{self.label}: dim {var.label} has profile range [{var.lo}, {var.hi}] from "
                f"{var.range_src} but [{a}, {c}] from {src}; the ranges do not overlap"
            )
        opt = var.opt
        if var.lo is None or opt is None:  # the first profile entry using the dim sets opt
            opt, var.range_src = b, src
        var.lo, var.hi = lo, hi
        var.opt = min(max(opt, lo), hi)

    # -- results ------------------------------------------------------------------------
    def undeclared_error(self, missing: dict[str, list[str]]) -> InputError:
        """The error for inputs with undeclared dims: ``missing`` maps each to what it lacks.

        The message lists them and shows both ways to declare the sizes (``dims=``/``shapes=``
        keyword arguments and the ``--input-shapes`` command line), filled in where known.
        """
        lines = [f"{self.label}: input shapes are not fully declared:"]
        for name, items in missing.items():
            spec = self.by_name[name]
            lines.append(f"  - input {name!r} {spec.dtype_name}{shape_text(spec.shape)}: {', '.join(items)}")
        need = [n for n in missing]
        sym = []
        for n in need:
            for e in self.layout[n] or ():
                if isinstance(e, tuple) and e[0] == "sym" and self.vars[e].point is None and e[1] not in sym:
                    sym.append(e[1])

        api_shapes = []
        cli_shapes = []
        for n in need:
            ex = self._example_shape(n)
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

    def _example_shape(self, name: str) -> list[str] | None:
        """Input ``name``'s dims as text for a message: sizes where known, ``<batch>``/``<dim1>`` where not."""
        entries = self.layout[name]
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

    def shapes_result(self) -> dict[str, tuple[int, ...]]:
        """The concrete shape of every input (:func:`resolve_shapes`); undeclared dims -> InputError."""
        out: dict[str, tuple[int, ...]] = {}
        missing: dict[str, list[str]] = {}
        for s in self.specs:
            entries = self.layout[s.name]
            if entries is None:
                missing[s.name] = ["its rank is unknown (the model declares no shape)"]
                continue
            dims: list[int] = []
            items: list[str] = []
            for i, e in enumerate(entries):
                if isinstance(e, int):
                    dims.append(e)
                    continue
                point = self.vars[e].point
                if point is not None:
                    dims.append(point)
                else:
                    items.append(_undeclared_text(i, e))
            if items:
                missing[s.name] = ["no size declared for " + ", ".join(items)]
            else:
                out[s.name] = tuple(dims)
        if missing:
            raise self.undeclared_error(missing)
        return out

    def profile_result(self) -> Profile:
        """The optimization profile of every input (:func:`resolve_profile`); undeclared dims -> InputError."""
        out: Profile = {}
        missing: dict[str, list[str]] = {}
        for s in self.specs:
            if s.name in self.profile:
                out[s.name] = self.profile[s.name]
                continue
            entries = self.layout[s.name]
            if entries is None:
                missing[s.name] = ["its rank is unknown (the model declares no shape)"]
                continue
            mn: list[int] = []
            op: list[int] = []
            mx: list[int] = []
            items: list[str] = []
            for i, e in enumerate(entries):
                if isinstance(e, int):
                    v = (e, e, e)
                else:
                    found = self.vars[e].profile_range()
                    if found is None:
                        items.append(_undeclared_text(i, e))
                        continue
                    v = found
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

    def var_ranges(self) -> dict[DimKey, tuple[int, int]]:
        """Every dynamic dim's ``(lo, hi)`` for drawing shapes; undeclared -> InputError.

        A declared size (``dims``/``shapes``) pins the dim (``lo == hi``); otherwise the
        profile's ``[min, max]``.
        """
        self.profile_result()  # raises for undeclared dims
        out: dict[DimKey, tuple[int, int]] = {}
        for key, var in self.vars.items():
            if var.point is not None:
                out[key] = (var.point, var.point)
            elif var.lo is not None and var.hi is not None:
                out[key] = (var.lo, var.hi)
        return out


def _undeclared_text(i: int, key: DimKey) -> str:
    """``dim 0 'batch'`` or ``dim 1 (unnamed)``: an undeclared dim in a message."""
    return f"dim {i} {key[1]!r}" if key[0] == "sym" else f"dim {i} (unnamed)"


def resolve_shapes(model: ModelSource, shapes: Any = None, dims: Any = None) -> dict[str, tuple[int, ...]]:
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
    m = as_model(model)
    return ShapeSolver(m, input_specs(m), shapes, dims).shapes_result()


def resolve_profile(model: ModelSource, shapes: Any = None, dims: Any = None, profile: Any = None) -> Profile:
    """A TensorRT optimization profile: ``{input: (min_shape, opt_shape, max_shape)}``.

    ``profile={"x": {"min": ..., "opt": ..., "max": ...}}`` is taken as given (checked
    against static dims and rank, min <= opt <= max). Inputs without an entry get
    ``min = opt = max`` from their static or declared shape (``shapes``/``dims``), or
    inherit the range of symbolic dims they share with a profiled input. A declared
    shape must lie inside the profile.
    """
    m = as_model(model)
    return ShapeSolver(m, input_specs(m), shapes, dims, profile).profile_result()
