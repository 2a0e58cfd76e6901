"""Value ranges, common offsets and outliers: what values each input's feeds may take.

After shapes, the second half of what generation needs: every input's inclusive
``(min, max)`` (floats default to ``[-1, 1]``, bools to ``{0, 1}``, integer inputs must be
declared), checked against its dtype, plus the FP16-breaking regimes a test can ask for:
a common offset added to float inputs and single outlier elements. Both
:func:`~pytest_trt.inputs.make_feeds` and the Hypothesis strategies resolve ranges here.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InputError
from ..model.load import Model
from .declarations import ALL_INPUT_KEYS, ALL_INPUTS, check_input_names, check_range, is_finite_number
from .parsing import VAL_RANGE_OPTION, parse_val_range
from .specs import InputSpec, ModelSource, as_model, float_max, index_table_rows, input_specs

__all__ = [
    "DEFAULT_BOOL_RANGE",
    "DEFAULT_FLOAT_RANGE",
    "DEFAULT_OUTLIER_MAGNITUDE",
    "OutlierSpec",
    "check_index_range",
    "fit_to_dtype",
    "normalize_offset",
    "normalize_outliers",
    "per_float_input",
    "resolve_val_ranges",
    "resolve_val_ranges_for",
]

#: Range of float inputs without a declared range (inclusive).
DEFAULT_FLOAT_RANGE = (-1.0, 1.0)
#: Range of bool inputs without a declared range.
DEFAULT_BOOL_RANGE = (0, 1)
#: Default outlier value: one element >= ~256 overflows the ``Pow`` of a decomposed
#: LayerNorm computed in FP16 (``|x - mean|**2 > 65504``).
DEFAULT_OUTLIER_MAGNITUDE = 400.0

def _range_pair(value: Any, what: str) -> tuple[Any, Any]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise InputError(f"{what} must be a (min, max) pair, got {value!r}")
    pair = tuple(value)
    if len(pair) != 2:
        raise InputError(f"{what} must be a (min, max) pair, got {len(pair)} values: {value!r}")
    return check_range(pair[0], pair[1], what)


def _normalize_val_range(val_range: Any) -> dict[str, tuple[Any, Any]]:
    if val_range is None:
        return {}
    if isinstance(val_range, str) or (
        isinstance(val_range, (list, tuple)) and val_range and all(isinstance(v, str) for v in val_range)
    ):
        return parse_val_range(val_range)
    if isinstance(val_range, Mapping):
        out: dict[str, tuple[Any, Any]] = {}
        for k, v in val_range.items():
            key = ALL_INPUTS if k in ALL_INPUT_KEYS else k
            if key in out:
                raise InputError("val_range gives the all-inputs range twice (keys '' and '*')")
            out[key] = _range_pair(v, f"val_range[{k!r}]")
        return out
    return {ALL_INPUTS: _range_pair(val_range, "val_range")}


def _int_range_example(name: str, m: Model | None = None) -> str:
    """A range to declare for integer input ``name``: from the table it indexes when the model has
    one (token ids: ``[0, rows - 1]``), ``[0, 1]`` for masks, else a placeholder to fill in (a
    made-up vocabulary size would be copied as is)."""
    table = index_table_rows(m, name) if m is not None else None
    if table is not None:
        hi = table[1] - 1
        return (f"val_range={{{name!r}: (0, {hi})}} or {VAL_RANGE_OPTION} {name}:[0,{hi}] "
                f"(it indexes {table[0]!r}, which has {table[1]} rows)")
    if any(w in name.lower() for w in ("mask", "type")):
        return f"val_range={{{name!r}: (0, 1)}} or {VAL_RANGE_OPTION} {name}:[0,1]"
    return (f"val_range={{{name!r}: (0, <vocab_size - 1>)}} or {VAL_RANGE_OPTION} {name}:[0,<vocab_size-1>] "
            f"(the largest valid id; fill in yours)")


def _fit_integers(spec: InputSpec, lo: Any, hi: Any, what: str) -> tuple[int, int]:
    """An int or bool input's range: integer bounds inside the dtype's values."""
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
    ilo, ihi = vals
    if spec.kind == "bool":
        if ilo < 0 or ihi > 1:
            raise InputError(
                f"{what} [{ilo}, {ihi}] for input {spec.name!r} is outside bool's values [0, 1]; "
                f"declare {{{spec.name!r}: (0, 1)}} (or (1, 1) for all True)"
            )
    else:
        info = np.iinfo(spec.dtype)
        if ilo < int(info.min) or ihi > int(info.max):
            raise InputError(
                f"{what} [{ilo}, {ihi}] for input {spec.name!r} is outside {spec.dtype_name}'s range "
                f"[{int(info.min)}, {int(info.max)}]"
            )
    return (ilo, ihi)


def fit_to_dtype(spec: InputSpec, lo: Any, hi: Any, what: str) -> tuple[Any, Any]:
    """Check the range ``[lo, hi]`` against ``spec``'s dtype; return it typed (ints for int/bool inputs).

    ``what`` names where the range came from in the :class:`InputError` (``"val_range['x']"``).
    """
    if spec.kind in ("int", "bool"):
        return _fit_integers(spec, lo, hi, what)
    fmax = float_max(spec.dtype)
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


def resolve_val_ranges(model: ModelSource, val_range: Any = None) -> dict[str, tuple[Any, Any]]:
    """Every input's inclusive value range ``{input: (min, max)}``.

    ``val_range``: ``(min, max)`` for all inputs, ``{input: (min, max)}`` (key ``""``
    or ``"*"`` = all inputs not listed), or the ``--val-range`` string(s). Floats
    default to :data:`DEFAULT_FLOAT_RANGE`, bools to ``(0, 1)``; integer inputs need a
    declared range. Raises :class:`InputError` (all undeclared integer inputs at once).
    """
    m = as_model(model)
    specs = input_specs(m)
    return resolve_val_ranges_for(m, specs, val_range)


def _range_of(spec: InputSpec, given: dict[str, tuple[Any, Any]]) -> tuple[str, tuple[Any, Any]] | None:
    """Where ``spec``'s range comes from and the range: declared, all-inputs, default; None if none."""
    if spec.name in given:
        return f"val_range[{spec.name!r}]", given[spec.name]
    if ALL_INPUTS in given:
        return "the all-inputs val_range", given[ALL_INPUTS]
    if spec.kind == "float":
        return "the default range", DEFAULT_FLOAT_RANGE
    if spec.kind == "bool":
        return "the default range", DEFAULT_BOOL_RANGE
    return None


def resolve_val_ranges_for(m: Model, specs: list[InputSpec], val_range: Any) -> dict[str, tuple[Any, Any]]:
    """:func:`resolve_val_ranges` for a loaded model and its :func:`~.specs.input_specs`."""
    given = _normalize_val_range(val_range)
    check_input_names(given, specs, "val_range", m.label, allow_all=True)
    out: dict[str, tuple[Any, Any]] = {}
    undeclared: list[InputSpec] = []
    for s in specs:
        if s.kind == "other":
            raise InputError(
                f"{m.label}: input {s.name!r} is {s.dtype_name}; pytest-trt cannot generate it: "
                f"pass your own feeds (load_feeds / --load-inputs)"
            )
        found = _range_of(s, given)
        if found is None:
            undeclared.append(s)
            continue
        what, (lo, hi) = found
        out[s.name] = fit_to_dtype(s, lo, hi, what)
        if s.kind == "int":
            check_index_range(m, s.name, *out[s.name], what)
    if undeclared:
        lines = [
            f"input {s.name!r} is {s.dtype_name}: declare its range, e.g. {_int_range_example(s.name, m)}"
            for s in undeclared
        ]
        raise InputError(
            f"{m.label}: integer inputs need a declared value range (inclusive; token ids: "
            f"[0, vocab_size - 1], masks: [0, 1] or [1, 1]):\n  " + "\n  ".join(lines)
        )
    return out


def check_index_range(m: Model, name: str, lo: int, hi: int, what: str) -> None:
    """An integer input that indexes a table (token ids into an embedding: :func:`~.specs.index_table_rows`)
    must stay inside its rows, ``[-rows, rows - 1]`` as ``Gather`` accepts them; else an
    :class:`InputError` naming the input, the range and the table, before anything runs (ONNX
    Runtime's own message came from deep inside the run: "Gather node ... idx=294 must be within ...")."""
    table = index_table_rows(m, name)
    if table is None or (-table[1] <= lo and hi <= table[1] - 1):
        return
    top = table[1] - 1
    raise InputError(
        f"{m.label}: {what} [{lo}, {hi}] for input {name!r} is outside the {table[1]} rows of {table[0]!r}, "
        f"the table it indexes (valid ids: 0 to {top}); use val_range={{{name!r}: (0, {top})}} or "
        f"{VAL_RANGE_OPTION} {name}:[0,{top}]"
    )


def per_float_input(value: Any, specs: list[InputSpec], what: str, label: str) -> dict[str, Any]:
    """Expand ``{input or '*' / '': v}`` over float inputs; names must be float inputs.

    A value that is not a dict applies to every float input. ``what`` names the argument
    in the :class:`InputError` (``"offset"``), ``label`` the model.
    """
    if not isinstance(value, Mapping):
        return {s.name: value for s in specs if s.kind == "float"}
    check_input_names(value, specs, what, label, allow_all=True)
    default = None
    for k in ALL_INPUT_KEYS:
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


def normalize_offset(offset: Any, specs: list[InputSpec], label: str) -> dict[str, float]:
    """make_feeds' ``offset``: ``{float input: offset}`` (a number for all, or per input / ``"*"``)."""
    if offset is None:
        return {}
    per = per_float_input(offset, specs, "offset", label)
    out = {}
    for name, v in per.items():
        if not is_finite_number(v):
            raise InputError(f"offset for input {name!r} must be a finite number, got {v!r}")
        out[name] = float(v)
    return out


_OUTLIER_KEYS = ("fraction", "count", "magnitude", "sign")


@dataclass(frozen=True)
class OutlierSpec:
    """make_feeds' outliers for one input: ``count`` elements, or a ``fraction`` of them (one
    of the two is set), set to ``magnitude`` with ``sign`` ``"+"``, ``"-"`` or ``"random"``."""

    count: int | None
    fraction: float | None
    magnitude: float
    sign: str

    def elements(self, size: int) -> int:
        """How many of ``size`` elements become outliers (a fraction rounds, to at least one)."""
        if self.count is not None:
            return min(self.count, size)
        return min(max(1, round((self.fraction or 0.0) * size)), size)


def _outlier_count(spec: Mapping[str, Any], what: str) -> tuple[int | None, float | None]:
    """``(count, fraction)`` of one outlier spec, checked; count 1 when neither is given."""
    count, fraction = spec.get("count"), spec.get("fraction")
    if count is not None and fraction is not None:
        raise InputError(f"{what}: give 'count' or 'fraction', not both")
    if count is not None and (isinstance(count, bool) or not isinstance(count, numbers.Integral) or count < 1):
        raise InputError(f"{what}: 'count' must be an integer >= 1, got {count!r}")
    if fraction is not None and (not is_finite_number(fraction) or not 0 < float(fraction) <= 1):
        raise InputError(f"{what}: 'fraction' must be a number in (0, 1], got {fraction!r}")
    if count is None and fraction is None:
        count = 1
    return (None if count is None else int(count), None if fraction is None else float(fraction))


def _outlier_spec(spec: Any, what: str) -> OutlierSpec:
    """One input's outlier spec (``True`` = the defaults), checked."""
    if spec is True:
        spec = {}
    if not isinstance(spec, Mapping):
        raise InputError(f"{what} must be a dict like {{'fraction': 0.001, 'magnitude': 400.0}}, got {spec!r}")
    unknown = sorted(map(str, set(spec) - set(_OUTLIER_KEYS)))
    if unknown:
        raise InputError(f"{what}: unknown key(s) {', '.join(map(repr, unknown))}; known: {', '.join(_OUTLIER_KEYS)}")
    count, fraction = _outlier_count(spec, what)
    magnitude = spec.get("magnitude", DEFAULT_OUTLIER_MAGNITUDE)
    if not is_finite_number(magnitude) or magnitude <= 0:
        raise InputError(f"{what}: 'magnitude' must be a finite number > 0, got {magnitude!r}")
    sign = spec.get("sign", "+")
    if sign not in ("+", "-", "random"):
        raise InputError(f"{what}: 'sign' must be '+', '-' or 'random', got {sign!r}")
    return OutlierSpec(count, fraction, float(magnitude), sign)


def normalize_outliers(outliers: Any, specs: list[InputSpec], label: str) -> dict[str, OutlierSpec]:
    """make_feeds' ``outliers``: ``{float input: OutlierSpec}`` (see :func:`~.generation.make_feeds`)."""
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
    per = per_float_input(outliers, specs, "outliers", label)
    return {name: _outlier_spec(spec, f"outliers[{name!r}]") for name, spec in per.items()}
