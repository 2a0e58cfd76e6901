"""Blocked scans over two arrays: the passing path of the verdict.

An output is walked in blocks of ``BLOCK_BYTES`` per working-precision buffer with
preallocated scratch (:func:`iter_blocks`), so no full-size temporary is made. The scans
here only answer "proven to pass?" (:func:`passes_float`, :func:`passes_exact`); an output
not proven to pass gets the detailed pass of :mod:`pytest_trt.compare.detail`. Also here:
what kind of output a dtype is (:func:`category`) and the precision the arithmetic runs in
(:func:`working_dtype`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

import numpy as np

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
    """Whether some finite element of the reference exceeds ``atol`` in magnitude."""
    with np.errstate(invalid="ignore", over="ignore"):
        mag = np.abs(np.asarray(e, dtype=np.float64) if e.dtype.kind == "V" else e)
        return bool(np.any(np.isfinite(mag) & (mag > atol)))


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


def passes_float(a: np.ndarray, e: np.ndarray, W: np.dtype, rtol: float, atol: float) -> bool:
    """True iff every element is proven to pass. False means "maybe not": NaN, Inf or a
    violation somewhere; the detailed pass decides."""
    B = block_elems(W, e.size)
    sub, ab_, mul, mx = np.subtract, np.abs, np.multiply, np.maximum
    with np.errstate(all="ignore"):  # also: tolerances beyond float32's range become inf
        d = np.empty(B, W)
        t = np.empty(B, W)
        c = np.full(B, atol, W)
        r = W.type(rtol)
        for _, ab, eb in iter_blocks(a, e, W, B, "K"):
            m = ab.shape[0]
            dd = d[:m]
            tt = t[:m]
            sub(ab, eb, out=dd)
            ab_(dd, out=dd)
            ab_(eb, out=tt)
            mul(tt, r, out=tt)
            mx(tt, c[:m], out=tt)  # array, not scalar: numpy's scalar maximum is not vectorized
            sub(dd, tt, out=tt)
            if not tt.max() <= 0:  # NaN-propagating
                return False
    return True


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

