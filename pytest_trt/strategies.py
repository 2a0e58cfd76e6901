"""Hypothesis strategies for model feeds (Hypothesis is a dependency of pytest-trt).

:func:`feeds` draws feed dicts that :func:`pytest_trt.inputs.check_feeds` accepts:
shapes inside the TensorRT profile (one size per symbolic dim across inputs), values
inside the declared ranges (same rules and defaults as
:func:`pytest_trt.inputs.make_feeds`), integer inputs inside their ranges, optional
outlier elements and common offsets. Hypothesis then shrinks a failure to a small
example: fewest outliers, smallest magnitudes, simplest values, smallest shapes.

Example property test::

    from hypothesis import given, settings
    from pytest_trt import strategies
    from pytest_trt.strategies import save_falsifying_example

    MODEL = "models/encoder.onnx"

    @settings(max_examples=50, deadline=None)
    @given(feeds=strategies.feeds(
        MODEL,
        profile={"input_ids": {"min": (1, 1), "opt": (2, 64), "max": (4, 128)}},
        val_range={"input_ids": (0, 30521), "attention_mask": (1, 1)},
        outliers=True,                    # 0..3 elements of magnitude 256..1024 per float input
    ))
    def test_fp16_encoder_is_close(trt, feeds, tmp_path_factory):
        try:
            trt.check(feeds)
        except AssertionError:
            # Hypothesis replays the minimal failing example last, so the file holds it.
            saved = save_falsifying_example(feeds, "artifacts/falsifying", model=MODEL)
            print("replay:", saved.command)
            raise

``fp16_safe=True`` (default): every value is finite in FP16; without an offset every
value is also exactly representable in FP16 and never subnormal, so a difference
between the FP32 baseline and an FP16 engine comes from the computation, not from
rounding the inputs. With an offset the values are ``offset + d`` with ``d`` FP16-exact:
the small spread around a large offset is the point of that regime and would not
survive rounding to FP16.
"""

from __future__ import annotations

import numbers
import os
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, NamedTuple

import numpy as np

try:
    from hypothesis import strategies as st
    from hypothesis.extra.numpy import arrays
except ImportError as exc:  # pragma: no cover - exercised only without hypothesis
    raise ImportError(
        "pytest_trt.strategies needs Hypothesis (a dependency of pytest-trt): pip install hypothesis"
    ) from exc

from .core.dtypes import FP32, normalize_precision
from .errors import InputError, UsageError
from .inputs.declarations import check_input_names, is_finite_number
from .inputs.files import comment_text, save_feeds, write_replay_script
from .inputs.shapes import ShapeSolver
from .inputs.specs import InputSpec, ModelSource, as_model, float_max, input_specs
from .inputs.values import per_float_input, resolve_val_ranges_for

__all__ = ["feeds", "save_falsifying_example", "SavedExample", "DEFAULT_OUTLIERS"]

#: What ``outliers=True`` means: per float input 0..3 elements (0 lets Hypothesis show
#: whether outliers matter) of magnitude in [256, 1024] (the FP16 overflow threshold of a
#: decomposed LayerNorm's ``Pow`` is ~256) and either sign.
DEFAULT_OUTLIERS = {"count": (0, 3), "magnitude": (256.0, 1024.0), "sign": "random"}
_OUTLIER_KEYS = ("count", "magnitude", "sign")
_FP16_MAX = 65504.0
#: The float widths Hypothesis draws at.
Width = Literal[16, 32, 64]
_WIDTH_DTYPE: dict[int, type[np.floating[Any]]] = {16: np.float16, 32: np.float32, 64: np.float64}


def _width(dtype: np.dtype, fp16_safe: bool) -> Width | None:
    """Bit width Hypothesis draws floats at; None for dtypes it cannot hold (bfloat16, fp8)."""
    if dtype.kind != "f":
        return None
    if fp16_safe or dtype.itemsize == 2:
        return 16
    return 32 if dtype.itemsize == 4 else 64


def _inward(lo: float, hi: float, width: int, what: str, *, allow_subnormal: bool = False) -> tuple[float, float]:
    """Round ``[lo, hi]`` inward to values representable at ``width`` (normal ones only)."""
    ftype = _WIDTH_DTYPE[width]
    tiny = float(np.finfo(ftype).tiny)
    with np.errstate(over="ignore"):
        lo_w, hi_w = ftype(lo), ftype(hi)
    if float(lo_w) < lo:
        lo_w = np.nextafter(lo_w, ftype(np.inf))
    if float(hi_w) > hi:
        hi_w = np.nextafter(hi_w, ftype(-np.inf))
    lo_f, hi_f = float(lo_w), float(hi_w)
    if not allow_subnormal:
        if 0 < lo_f < tiny:
            lo_f = tiny
        elif -tiny < lo_f < 0:
            lo_f = -0.0
        if 0 < hi_f < tiny:
            hi_f = 0.0
        elif -tiny < hi_f < 0:
            hi_f = -tiny
    if not (np.isfinite(lo_f) and np.isfinite(hi_f)) or lo_f > hi_f:
        raise InputError(
            f"{what} [{lo}, {hi}] holds no finite normal float{width} value; widen it"
            + (" or pass fp16_safe=False" if width == 16 else "")
        )
    return lo_f, hi_f


def _pair(value: Any, what: str, integer: bool = False) -> tuple[Any, Any]:
    if isinstance(value, (list, tuple)) and len(value) == 2:
        lo, hi = value
    else:
        lo = hi = value
    for v in (lo, hi):
        if integer:
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 0:
                raise InputError(f"{what} must be a non-negative integer or a (min, max) pair of them, got {value!r}")
        elif not is_finite_number(v):
            raise InputError(f"{what} must be a finite number or a (min, max) pair, got {value!r}")
    if lo > hi:
        raise InputError(f"{what}: min {lo} is greater than max {hi}")
    return (int(lo), int(hi)) if integer else (float(lo), float(hi))


def _normalize_offsets(offset: Any, specs: list[InputSpec], label: str) -> dict[str, tuple[Any, Any]]:
    if offset is None:
        return {}
    if isinstance(offset, (list, tuple)):
        offset = {"*": offset}
    per = per_float_input(offset, specs, "offset", label)
    return {name: _pair(v, f"offset for input {name!r}") for name, v in per.items()}


def _normalize_outliers(outliers: Any, specs: list[InputSpec], label: str) -> dict[str, tuple[Any, Any, Any]]:
    if outliers is None or outliers is False:
        return {}
    if outliers is True:
        outliers = {"*": dict(DEFAULT_OUTLIERS)}
    if not isinstance(outliers, Mapping):
        raise InputError(f"outliers must be True, False or {{input: {{'count': ..., 'magnitude': ...}}}}, got {outliers!r}")
    names = {s.name for s in specs}
    if outliers and set(outliers) <= set(_OUTLIER_KEYS) | {"fraction"} and not set(outliers) & names:
        raise InputError(
            f"outliers={dict(outliers)!r} looks like one outlier spec: key it by input, e.g. "
            f"{{'x': {dict(outliers)!r}}}, or {{'*': ...}} for every float input"
        )
    check_input_names(outliers, specs, "outliers", label, allow_all=True)
    per = per_float_input(outliers, specs, "outliers", label)
    out = {}
    for name, spec in per.items():
        what = f"outliers[{name!r}]"
        if spec is True:
            spec = dict(DEFAULT_OUTLIERS)
        if not isinstance(spec, Mapping):
            raise InputError(f"{what} must be a dict like {DEFAULT_OUTLIERS!r}, got {spec!r}")
        if "fraction" in spec:
            raise InputError(f"{what}: strategies take 'count' (an int or (min, max)), not 'fraction'")
        unknown = sorted(map(str, set(spec) - set(_OUTLIER_KEYS)))
        if unknown:
            raise InputError(f"{what}: unknown key(s) {', '.join(map(repr, unknown))}; known: {', '.join(_OUTLIER_KEYS)}")
        count = _pair(spec.get("count", DEFAULT_OUTLIERS["count"]), f"{what}['count']", integer=True)
        mag = _pair(spec.get("magnitude", DEFAULT_OUTLIERS["magnitude"]), f"{what}['magnitude']")
        if mag[0] <= 0:
            raise InputError(f"{what}['magnitude'] must be > 0, got {mag!r}")
        sign = spec.get("sign", DEFAULT_OUTLIERS["sign"])
        if sign not in ("+", "-", "random"):
            raise InputError(f"{what}['sign'] must be '+', '-' or 'random', got {sign!r}")
        out[name] = (count, mag, sign)
    return out


def _elements(spec: InputSpec, lo: Any, hi: Any, fp16_safe: bool, what: str) -> tuple[Any, np.dtype]:
    """(elements strategy, dtype to draw the array in) for one input."""
    kind = spec.kind
    if kind == "bool":
        if lo == hi:
            return st.just(bool(lo)), spec.dtype
        return st.booleans(), spec.dtype
    if kind == "int":
        return st.integers(int(lo), int(hi)), spec.dtype
    width = _width(spec.dtype, fp16_safe)
    draw_dtype = spec.dtype
    if width is None:  # bfloat16 / float8: draw float32 (FP16-exact when fp16_safe), cast after
        width = 16 if fp16_safe else 32
        draw_dtype = np.dtype(np.float32)
    if spec.dtype == np.float16:
        width = 16
    lo_w, hi_w = _inward(lo, hi, width, what)
    return (
        st.floats(lo_w, hi_w, width=width, allow_nan=False, allow_infinity=False, allow_subnormal=False),
        draw_dtype,
    )


def _relative_to_caller(model: ModelSource, depth: int = 2) -> ModelSource:
    """A relative model path is relative to the file that called :func:`feeds` (the test module,
    as for ``@pytest.mark.trt(model=...)``), not to the current directory."""
    if not isinstance(model, (str, os.PathLike)) or os.path.isabs(model):
        return model
    caller = sys._getframe(depth).f_globals.get("__file__")
    if not caller:
        return model
    return os.path.join(os.path.dirname(os.path.abspath(caller)), os.fspath(model))


def feeds(model: ModelSource, *, shapes: Any = None, dims: Any = None, profile: Any = None, val_range: Any = None,
          outliers: Any = False, offset: Any = None, fp16_safe: bool = True) -> st.SearchStrategy[dict[str, np.ndarray]]:
    """A strategy of feed dicts ``{input name: array}`` for ``model``.

    Args:
        model: a loaded model or a path; a relative path is relative to the calling file
            (the test module), like the ``trt`` marker's ``model=``.
        shapes, dims: fixed sizes, as in :func:`pytest_trt.inputs.resolve_shapes`.
        profile: ``{input: {"min": shape, "opt": shape, "max": shape}}``: dynamic dims are
            drawn between min and max (a symbolic dim once, shared by every input using
            it; inputs without an entry inherit shared dims). ``shapes``/``dims``
            pin sizes inside it.
        val_range: as in :func:`pytest_trt.inputs.make_feeds` (floats default to
            ``[-1, 1]``, bools ``{0, 1}``, integer inputs must be declared).
        outliers: ``True`` (= :data:`DEFAULT_OUTLIERS` for every float input) or
            ``{input or "*": {"count": n | (min, max), "magnitude": m | (min, max),
            "sign": "+" | "-" | "random"}}``. Drawn counts are capped at the size.
        offset: a common offset added to float inputs: a number, a ``(min, max)`` range
            to draw it from, or ``{input or "*": either}``. Use with a small
            ``val_range`` for the "offset with small spread" regime.
        fp16_safe: values finite in FP16, FP16-exact and not subnormal (see the module
            docstring for offsets). Subnormals are never drawn.

    Raises :class:`InputError` at once (not at the first draw) for what does not fit the
    model: undeclared dims or integer ranges, unknown names, ranges outside the dtype or
    (``fp16_safe``) outside FP16.
    """
    m = as_model(_relative_to_caller(model))
    specs = input_specs(m)
    solver = ShapeSolver(m, specs, shapes, dims, profile)
    var_ranges = solver.var_ranges()
    ranges = resolve_val_ranges_for(m, specs, val_range)
    offsets = _normalize_offsets(offset, specs, m.label)
    outs = _normalize_outliers(outliers, specs, m.label)

    plans = []
    for s in specs:
        lo, hi = ranges[s.name]
        off = offsets.get(s.name)
        if s.kind == "float":
            limit = min(_FP16_MAX, float_max(s.dtype)) if fp16_safe else float_max(s.dtype)
            where = " (fp16_safe=True: FP16's finite range)" if fp16_safe else ""
            reach = max(abs(lo), abs(hi)) + (max(abs(off[0]), abs(off[1])) if off else 0.0)
            if reach > limit:
                raise InputError(
                    f"input {s.name!r}: values reach {reach:g} (val_range [{lo:g}, {hi:g}]"
                    + (f" + offset [{off[0]:g}, {off[1]:g}]" if off else "")
                    + f"), beyond {limit:g}{where}; narrow the range"
                    + (" or pass fp16_safe=False" if fp16_safe else "")
                )
            if s.name in outs and outs[s.name][1][1] > limit:
                raise InputError(
                    f"outliers[{s.name!r}]: magnitude up to {outs[s.name][1][1]:g} is beyond {limit:g}{where}"
                )
        elements, draw_dtype = _elements(s, lo, hi, fp16_safe, f"val_range for input {s.name!r}")
        off_st = None
        if off is not None:
            off_st = st.just(off[0]) if off[0] == off[1] else st.floats(
                off[0], off[1], allow_nan=False, allow_infinity=False, allow_subnormal=False)
        out_st = None
        if s.name in outs:
            (c_lo, c_hi), (m_lo, m_hi), sign = outs[s.name]
            width: Width = 16 if fp16_safe or s.dtype == np.float16 else 32 if s.dtype.itemsize <= 4 else 64
            m_lo, m_hi = _inward(m_lo, m_hi, width, f"outliers[{s.name!r}] magnitude")
            out_st = (c_lo, c_hi, st.floats(m_lo, m_hi, width=width, allow_nan=False, allow_infinity=False,
                                            allow_subnormal=False), sign)
        layout = solver.layout[s.name]
        assert layout is not None  # an unknown rank was an InputError in var_ranges() above
        plans.append((s, layout, elements, draw_dtype, off_st, out_st))

    @st.composite
    def _feeds(draw):
        sizes = {}
        for key, (lo, hi) in var_ranges.items():
            sizes[key] = lo if lo == hi else draw(st.integers(lo, hi))
        out = {}
        for s, layout, elements, draw_dtype, off_st, out_st in plans:
            shape = tuple(e if isinstance(e, int) else sizes[e] for e in layout)
            arr = np.array(draw(arrays(draw_dtype, shape, elements=elements)), copy=True)
            if off_st is not None:
                arr = (arr.astype(np.float64) + draw(off_st)).astype(s.dtype)
            elif arr.dtype != s.dtype:
                arr = arr.astype(s.dtype)
            if out_st is not None and arr.size:
                c_lo, c_hi, mag_st, sign = out_st
                n = min(draw(st.integers(c_lo, c_hi)) if c_lo != c_hi else c_lo, arr.size)
                if n:
                    positions = draw(st.lists(st.integers(0, arr.size - 1), min_size=n, max_size=n, unique=True))
                    flat = arr.reshape(-1)
                    for pos in positions:
                        value = draw(mag_st)
                        if sign == "-" or (sign == "random" and draw(st.booleans())):
                            value = -value
                        flat[pos] = value
            out[s.name] = arr
        return out

    return _feeds()


class SavedExample(NamedTuple):
    """Where :func:`save_falsifying_example` wrote: the feeds, the replay script, the command."""

    feeds_path: Path
    command_path: Path
    command: str


def save_falsifying_example(feeds: Mapping[str, Any], path: str | os.PathLike[str], command: str | None = None, *,
                            model: ModelSource = None, precision: str | None = "fp16") -> SavedExample:
    """Save a failing example as ``PATH.npz`` plus ``PATH.sh`` holding the replay command.

    ``command``: the command to write; ``{path}`` in it is replaced by the (quoted) feeds
    path. Without it, ``model`` (a path, or a Model read from a file) gives
    ``pytest-trt compare MODEL --fp16 --load-inputs PATH`` (``--bf16`` for
    ``precision="bf16"``, no flag for ``None``/``"fp32"``).
    """
    feeds_path = save_feeds(path, feeds)
    quoted = shlex.quote(str(feeds_path))
    if command is None:
        if model is None:
            raise UsageError("save_falsifying_example needs command= or model= to write the replay command")
        model_path = getattr(model, "path", model)
        if not isinstance(model_path, (str, os.PathLike)):
            raise UsageError("save_falsifying_example: the model has no file path; pass command= instead")
        flag = ""
        if precision is not None:
            p = normalize_precision(precision)
            flag = "" if p == FP32 else f" --{p}"
        command = f"pytest-trt compare {shlex.quote(str(model_path))}{flag} --load-inputs {quoted}"
    elif not isinstance(command, str):
        raise UsageError(f"save_falsifying_example: command must be a string, got {command!r}")
    else:
        command = command.replace("{path}", quoted)
    command_path = write_replay_script(feeds_path.with_suffix(".sh"), command, [
        "Replays a falsifying example found by Hypothesis (pytest-trt).", f"Inputs: {comment_text(feeds_path.name)}"])
    return SavedExample(feeds_path, command_path, command)
