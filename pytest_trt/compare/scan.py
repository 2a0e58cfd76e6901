"""Blocked scans over two arrays: the passing path of the verdict.

An output is walked in blocks of ``BLOCK_BYTES`` per buffer with preallocated scratch
(:func:`iter_blocks`), so no full-size temporary is made. The scans here answer "proven to
pass?" (:func:`passes_float`, :func:`passes_exact`); an output not proven to pass gets the
detailed pass of :mod:`pytest_trt.compare.detail`. :func:`passes_float` also folds every
block into the metric sums of the cosine / SNR floors on the same pass (the fast path of
:mod:`pytest_trt.compare.metrics`). Per float block::

    d = a - e  (working precision);  passes if max(d) <= atol and min(d) >= -atol,
    else if max(|d| - max(rtol * |e|, atol)) <= 0  (the full rule);
    metrics: e and d to float64, then e.e, e.d, d.d

Also here: what kind of output a dtype is (:func:`category`), the precision the arithmetic
runs in (:func:`working_dtype`) and the default floor's zero check (:func:`beyond_atol`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from .blas import single_threaded_dot

if TYPE_CHECKING:
    from .metrics import MetricSums

__all__ = [
    "BLOCK_BYTES",
    "beyond_atol",
    "block_elems",
    "category",
    "iter_blocks",
    "passes_exact",
    "passes_float",
    "working_dtype",
]

#: Bytes per scratch buffer of the blocked scans (65536 float32 elements). Tuned on a
#: 2-core Xeon with 1 MiB L2 per core: 32K..64K elements are best, 256K noticeably worse.
#: Read at every call, so a test may set it to force many small blocks.
BLOCK_BYTES = 1 << 18

_ML_FLOAT_PREFIXES = ("bfloat16", "float8", "float6", "float4")


def category(dt: np.dtype) -> str | None:
    """``"float"`` (ml_dtypes' bfloat16, float8_* included), ``"int"``, ``"bool"``, or None:
    a dtype that cannot be compared."""
    if dt.kind == "b":
        return "bool"
    if dt.kind in "iu":
        return "int"
    if dt.kind == "f":
        return "float"
    if dt.kind == "V" and dt.name.startswith(_ML_FLOAT_PREFIXES):
        return "float"  # ml_dtypes: bfloat16, float8_*, ...
    return None


def working_dtype(a: np.ndarray, e: np.ndarray) -> np.dtype:
    """The precision the arithmetic runs in: float64 if either side is float64, else float32."""
    if any(x.dtype.kind == "f" and x.dtype.itemsize >= 8 for x in (a, e)):
        return np.dtype(np.float64)
    return np.dtype(np.float32)


def block_elems(dt: np.dtype, n: int | None = None) -> int:
    """Elements per block for working dtype ``dt``; no more than ``n`` (small outputs get
    small scratch buffers)."""
    b = max(1, BLOCK_BYTES // dt.itemsize)
    return b if n is None else max(1, min(b, n))


def beyond_atol(e: np.ndarray, atol: float) -> bool:
    """Whether some finite element of the reference exceeds ``atol`` in magnitude (compared
    in the reference's dtype; ml_dtypes' in float64). Blocked: no full-size temporary."""
    W = np.dtype(np.float64) if e.dtype.kind == "V" else e.dtype
    B = block_elems(W, e.size)
    buf = np.empty(B, W)
    with np.errstate(invalid="ignore", over="ignore"):
        for _, eb, _ in iter_blocks(e, e, W, B, "K"):
            mag = buf[: eb.shape[0]]
            np.abs(eb, out=mag)
            mag[np.isinf(mag)] = 0  # finite elements only; NaN is skipped by fmax
            if np.fmax.reduce(mag) > atol:
                return True
    return False


def iter_blocks(a: np.ndarray, e: np.ndarray, W: np.dtype | None, block: int,
                order: Literal["C", "K"]) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """Yield ``(start, a_block, e_block)``: 1-D contiguous blocks of at most ``block``.

    ``W`` (None: no cast) is the dtype both blocks are cast to. ``order="C"`` walks the
    elements in C order (``start`` is then the flat C index of the block's first element);
    ``order="K"`` in memory order (verdict-only scans; ``start`` is meaningless).
    No copy is made for C-contiguous inputs already in ``W``; others are copied one block
    at a time by ``np.nditer``'s buffers.
    """
    n = e.size
    if n == 0:
        return
    same = W is None or (a.dtype == W and e.dtype == W)
    if same and a.flags.c_contiguous and e.flags.c_contiguous:
        af = a.reshape(-1)
        ef = e.reshape(-1)
        for s in range(0, n, block):
            yield s, af[s:s + block], ef[s:s + block]
        return
    kw: dict[str, Any] = {}
    if W is not None:
        kw = {"op_dtypes": [W, W], "casting": "unsafe"}
    it = np.nditer(
        [a, e], flags=["external_loop", "buffered", "zerosize_ok"],
        # numpy's stubs lack the op flag "contig" (valid since numpy 1.7)
        op_flags=[["readonly", "contig"], ["readonly", "contig"]],  # type: ignore[list-item]
        buffersize=block, order=order, **kw,
    )
    s = 0
    for ab, eb in it:
        m = ab.shape[0]
        for k in range(0, m, block):  # nditer never exceeds buffersize here; guard anyway
            yield s + k, ab[k:k + block], eb[k:k + block]
        s += m


def passes_float(a: np.ndarray, e: np.ndarray, W: np.dtype, rtol: float, atol: float,
                 sums: MetricSums | None = None) -> bool:
    """True iff every element is proven to pass. False means "maybe not": NaN, Inf or a
    violation somewhere; the detailed pass decides.

    With ``sums``, the same pass also folds every block into the metric sums (the fast path
    of :meth:`~pytest_trt.compare.metrics.MetricSums.folder`); they are complete only when
    this returns True, and the caller then calls ``sums.settle()``.
    """
    B = block_elems(np.dtype(np.float64) if sums is not None else W, e.size)
    sub, high, low = np.subtract, np.maximum.reduce, np.minimum.reduce
    with np.errstate(all="ignore"):  # also: tolerances beyond float32's range become inf
        r = W.type(rtol)
        at = W.type(atol)
        lim = float(min(at, np.finfo(W).max))  # the shortcut's bound: finite, so an infinite difference fails it
        d = np.empty(B, W)
        full = _FullRule(B, W, r, at)
        with single_threaded_dot(B if sums is not None else 0) as dot:
            fold = sums.folder(B, W, dot) if sums is not None else None
            for _, ab, eb in iter_blocks(a, e, W, B, "K"):
                dd = d if ab.shape[0] == B else d[: ab.shape[0]]
                sub(ab, eb, out=dd)
                hi, lo = float(high(dd)), float(low(dd))
                # |a - e| <= atol everywhere passes the block at once; else (or NaN/Inf) the full rule
                if not (hi <= lim and lo >= -lim) and not full.passes(eb, dd):
                    return False
                if fold is not None:
                    fold(ab, eb, dd, hi == 0.0 and lo == 0.0)
    return True


class _FullRule:
    """The element rule on one block, ``|d| <= max(rtol * |e|, atol)`` everywhere, in the working
    precision, with scratch made on first use (most blocks pass on ``|d| <= atol`` alone)."""

    def __init__(self, B: int, W: np.dtype, r: Any, at: Any) -> None:
        self.B, self.W, self.r, self.at = B, W, r, at
        self.t: np.ndarray | None = None

    def passes(self, eb: np.ndarray, dd: np.ndarray) -> bool:
        if self.t is None:
            self.t = np.empty(self.B, self.W)
            self.u = np.empty(self.B, self.W)
            self.c = np.full(self.B, self.at, self.W)
        m = dd.shape[0]
        tt, uu = self.t[:m], self.u[:m]
        np.abs(dd, out=tt)
        np.abs(eb, out=uu)
        np.multiply(uu, self.r, out=uu)
        np.maximum(uu, self.c[:m], out=uu)  # array, not scalar: numpy's scalar maximum is not vectorized
        np.subtract(tt, uu, out=uu)
        return bool(uu.max() <= 0)  # NaN-propagating: NaN and inf - inf fail


def passes_exact(a: np.ndarray, e: np.ndarray) -> bool:
    """True iff every element of an integer or bool output equals the reference's."""
    if e.size == 0:
        return True
    B = block_elems(np.dtype(np.float32), e.size)
    buf = np.empty(B, bool)
    for _, ab, eb in iter_blocks(a, e, None, B, "K"):
        bb = buf[: ab.shape[0]]
        np.not_equal(ab, eb, out=bb)
        if bb.any():
            return False
    return True

