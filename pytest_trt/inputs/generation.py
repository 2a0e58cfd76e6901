"""Generated feeds: random inputs for every model input, reproducible from a seed.

The last step of the inputs pipeline for generated data: shapes from :mod:`.shapes`,
ranges, offsets and outliers from :mod:`.values`, then one random stream per input seeded
by ``(seed, input name)``, so the same seed gives the same feeds and changing one input's
declaration leaves the others alone.
"""

from __future__ import annotations

import math
import numbers
import zlib
from typing import Any

import numpy as np

from ..core.formatting import fmt_shape
from ..errors import InputError
from .shapes import ShapeSolver
from .specs import InputSpec, ModelSource, as_model, input_specs
from .values import OutlierSpec, fit_to_dtype, normalize_offset, normalize_outliers, resolve_val_ranges_for

__all__ = ["MAKE_FEEDS_KEYS", "MAX_FEED_BYTES", "check_seed", "make_feeds"]

#: A generated feed larger than this is refused (a typo like seq=1280000 would otherwise
#: end in a MemoryError far from its cause).
MAX_FEED_BYTES = 4 << 30
#: The keyword arguments of :func:`make_feeds` (an input set's generation spec uses these).
MAKE_FEEDS_KEYS = ("shapes", "dims", "val_range", "seed", "outliers", "offset")


def check_seed(seed: Any) -> int:
    """``seed`` as an int: a non-negative integer (numpy ints accepted, bools not), else InputError."""
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise InputError(f"seed must be a non-negative integer, got {seed!r}")
    return int(seed)


def _rng(seed: int, *parts: str) -> np.random.Generator:
    words = [seed] + [zlib.crc32(p.encode("utf-8", "surrogatepass")) for p in parts]
    return np.random.default_rng(np.random.SeedSequence(words))


def _sample(rng: np.random.Generator, spec: InputSpec, shape: tuple[int, ...], lo: Any, hi: Any,
            offset: float = 0.0) -> np.ndarray:
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


def make_feeds(model: ModelSource, *, shapes: Any = None, dims: Any = None, val_range: Any = None, seed: int = 0,
               outliers: Any = None, offset: Any = None) -> dict[str, np.ndarray]:
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
    m = as_model(model)
    specs = input_specs(m)
    seed = check_seed(seed)
    resolved = ShapeSolver(m, specs, shapes, dims).shapes_result()
    ranges = resolve_val_ranges_for(m, specs, val_range)
    offsets = normalize_offset(offset, specs, m.label)
    outs = normalize_outliers(outliers, specs, m.label)
    for s in specs:
        shape = resolved[s.name]
        nbytes = math.prod(shape) * s.dtype.itemsize
        if nbytes > MAX_FEED_BYTES:
            raise InputError(
                f"input {s.name!r} of shape {fmt_shape(shape)} would take {nbytes / 2**30:.1f} GiB; "
                f"check the declared shapes/dims (limit {MAX_FEED_BYTES / 2**30:.0f} GiB per input)"
            )
        if s.name in offsets:
            lo, hi = ranges[s.name]
            fit_to_dtype(s, lo + offsets[s.name], hi + offsets[s.name], f"val_range + offset {offsets[s.name]:g}")
        if s.name in outs:
            mag = outs[s.name].magnitude
            fit_to_dtype(s, -mag, mag, f"outliers[{s.name!r}] magnitude")
    feeds: dict[str, np.ndarray] = {}
    for s in specs:
        lo, hi = ranges[s.name]
        arr = _sample(_rng(seed, s.name), s, resolved[s.name], lo, hi, offsets.get(s.name, 0.0))
        spec = outs.get(s.name)
        if spec is not None and arr.size:
            _apply_outliers(_rng(seed, s.name, "outliers"), arr, spec)
        feeds[s.name] = arr
    return feeds


def _apply_outliers(rng: np.random.Generator, arr: np.ndarray, spec: OutlierSpec) -> None:
    n = spec.elements(arr.size)
    flat = arr.reshape(-1)
    positions = rng.choice(arr.size, size=n, replace=False)
    if spec.sign == "+":
        signs = np.ones(n)
    elif spec.sign == "-":
        signs = -np.ones(n)
    else:
        signs = rng.choice(np.array([-1.0, 1.0]), size=n)
    flat[positions] = (signs * spec.magnitude).astype(arr.dtype)

