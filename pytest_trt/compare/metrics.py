"""Whole-output metrics: cosine similarity and signal-to-noise ratio.

Accumulated in float64 over the elements finite on both sides, block by block
(:class:`MetricSums`), on one of two paths:

* the fast path (:meth:`MetricSums.folder`): three dot products per block of the
  reference ``e`` and the difference ``d = a - e`` taken in the working precision (the
  element rule's own difference, so the verdict scan gets the sums for two conversions to
  float64 and three single-threaded dots; :mod:`pytest_trt.compare.blas`). For float32
  working data every product is exact in float64 and no sum can overflow or underflow;
  for float64 data a block whose sums are not finite, underflow or are near the top of the
  range takes the exact path instead. The rounding of ``d`` to the working precision moves
  the cosine by at most ``2**-24 * |d| / |a|`` (float32), so the fast sums are kept only
  where ``|d|**2 <= 2**-14 * |a|**2`` over the whole output (the cosine then within 5e-10
  of the exact value, the SNR within 5.2e-7 dB); otherwise the output is summed again on
  the exact path.
* the exact path (:meth:`MetricSums.add`): every block scaled by powers of two before
  squaring, the sums kept as mantissa and exponent, the difference taken in float64.

Used by the verdict for the ``min_cosine`` / ``min_snr_db`` checks and by the public
:func:`cosine_similarity` and :func:`snr_db`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core.formatting import fmt_shape
from ..errors import UsageError
from .arguments import as_array
from .blas import single_threaded_dot
from .scan import block_elems, iter_blocks, working_dtype

__all__ = ["MetricSums", "cosine_similarity", "exact_metric_sums", "metric_sums", "snr_db"]

#: Fast-path sums are kept when ``sum(d**2) <= FAST_LIMIT * sum(a**2)``: the rounding of a
#: float32 difference then moves the cosine by at most 2**-24 * 2**-7 = 2**-31 (5e-10).
FAST_LIMIT = 2.0 ** -14
#: Float64 block sums below this are too close to underflow to trust (products < 2**-1022
#: lose bits): such a block takes the exact path. Float32 products never get there (>= 2**-298).
_TINY = 2.0 ** -900
#: Float64 block sums above this take the exact path, so that the fast totals cannot overflow.
_HUGE = 2.0 ** 900


def cosine_similarity(actual: Any, expected: Any) -> float:
    """Cosine similarity of two arrays (as flat vectors), accumulated in float64.

    Over the elements finite on both sides; NaN if there are none. Both all-zero: 1.0;
    one all-zero: 0.0.
    """
    a, e = _metric_args(actual, expected)
    return metric_sums(a, e).cosine()


def snr_db(actual: Any, expected: Any) -> float:
    """Signal-to-noise ratio ``10*log10(sum(e^2) / sum((a-e)^2))`` in dB, ``inf`` when equal.

    Over the elements finite on both sides; NaN if there are none.
    """
    a, e = _metric_args(actual, expected)
    return metric_sums(a, e).snr_db()


class MetricSums:
    """Float64 sums of ``a*e``, ``a*a``, ``e*e`` and ``(a-e)^2`` for cosine and SNR, overflow- and underflow-proof.

    Blocks come in by the fast path (:meth:`folder`, totals in plain floats until
    :meth:`settle`) or the exact one (:meth:`add`). On the exact path each sum is kept as
    ``mantissa * 2**exponent``: a block is scaled by powers of two (exact) so its largest
    element is in [0.5, 1) before squaring, and its partial sums are merged at the larger
    exponent. Plain float64 sums overflow for |x| > 1e154 (``[1e200]`` vs
    ``[1.0]`` made the SNR ``log10(0)``, a ValueError) and underflow to zero for |x| < 1e-162
    (two opposite tiny vectors looked "equal": cosine 1, SNR inf).
    """

    __slots__ = ("m", "k", "n", "fast", "fast_n", "_scratch")

    AE, AA, EE, DD = range(4)

    def __init__(self) -> None:
        self.m = [0.0, 0.0, 0.0, 0.0]
        self.k = [0, 0, 0, 0]
        self.n = 0
        self.fast = [0.0, 0.0, 0.0, 0.0]  # plain float64 totals of the fast path (AE, AA, EE, DD)
        self.fast_n = 0
        self._scratch: tuple[np.ndarray, ...] | None = None

    def folder(self, block: int, W: np.dtype,
               dot: Callable[[np.ndarray, np.ndarray], float]) -> Callable[..., None]:
        """The fast path: a function ``fold(a_w, e_w, d_w, d_zero)`` that folds one block of
        at most ``block`` elements, all finite, into the sums, given ``d_w = a_w - e_w``
        computed in the working precision ``W`` (float32 or float64); ``d_zero``: every
        element of ``d_w`` is 0. Call :meth:`settle` after the last block.

        Per block: ``sum(e*e)``, ``sum(e*d)``, ``sum(d*d)`` by ``dot`` on float64 copies,
        ``sum(a*a)`` and ``sum(a*e)`` from them. Float32 products are exact in float64 and
        cannot overflow or underflow there; a float64 block whose sums are not finite, near
        underflow or near the top of the range goes to the exact path (:meth:`add`).
        """
        f = self.fast
        AE, AA, EE, DD = self.AE, self.AA, self.EE, self.DD
        wide = W == np.float64
        pair = np.empty((0 if wide else 2, block), np.float64)
        copyto = np.copyto

        def fold(a_w: np.ndarray, e_w: np.ndarray, d_w: np.ndarray, d_zero: bool) -> None:
            m = e_w.shape[0]
            if wide:
                y, z = e_w, d_w
            else:  # float32 values: every product below is exact in float64
                y, z = (pair[0], pair[1]) if m == block else (pair[0, :m], pair[1, :m])
                copyto(y, e_w)
                copyto(z, d_w)
            ee = float(dot(y, y))
            ez, zz = (0.0, 0.0) if d_zero else (float(dot(y, z)), float(dot(z, z)))
            aa = ee + 2.0 * ez + zz
            if wide and not _trusted(ee, ez, zz, aa, y, d_zero):
                self.add(a_w, e_w)  # float64 near the edges of its range: scaled, exact
                return
            f[AE] += ee + ez
            f[AA] += aa
            f[EE] += ee
            f[DD] += zz
            self.fast_n += m

        return fold

    def settle(self) -> bool:
        """Fold the fast-path totals into the sums; False when they are not accurate enough
        (``sum(d**2) > FAST_LIMIT * sum(a**2)``): then sum the output again with
        :func:`exact_metric_sums`."""
        if not self.fast_n:
            return True
        f = self.fast
        if not f[self.DD] <= FAST_LIMIT * f[self.AA]:
            return False
        for i in range(4):
            self._merge(i, f[i], 0)
        self.n += self.fast_n
        self.fast = [0.0, 0.0, 0.0, 0.0]
        self.fast_n = 0
        return True

    def _merge(self, i: int, value: float, exp: int) -> None:
        if value == 0.0:
            return
        if self.m[i] == 0.0:
            self.m[i], self.k[i] = value, exp
        else:
            k = max(self.k[i], exp)
            self.m[i] = math.ldexp(self.m[i], self.k[i] - k) + math.ldexp(value, exp - k)
            self.k[i] = k
        if self.m[i] != 0.0:
            frac, e = math.frexp(self.m[i])
            self.m[i], self.k[i] = frac, self.k[i] + e

    def add(self, a64: np.ndarray, e64: np.ndarray) -> None:
        """Fold in one block of float64 values (non-finite pairs are left out)."""
        m = a64.shape[0]
        if m == 0:
            return
        if self._scratch is None or self._scratch[0].shape[0] < m:
            self._scratch = tuple(np.empty(m, np.float64) for _ in range(3))
        x, y, s = (buf[:m] for buf in self._scratch)
        np.abs(a64, out=x)
        np.abs(e64, out=y)
        ma, me = float(x.max()), float(y.max())
        if not (math.isfinite(ma) and math.isfinite(me)):
            fin = np.isfinite(a64) & np.isfinite(e64)
            self.add(a64[fin], e64[fin])  # compressed copies: finite only
            return
        ka = math.frexp(ma)[1] if ma else 0
        ke = math.frexp(me)[1] if me else 0
        _scale2(a64, -ka, x)
        _scale2(e64, -ke, y)
        self._merge(self.AA, _sum_of(x, x, s), 2 * ka)
        self._merge(self.EE, _sum_of(y, y, s), 2 * ke)
        self._merge(self.AE, _sum_of(x, y, s), ka + ke)
        # the difference as is (exact for subnormal differences), or at a common scale when it overflows;
        # then scaled by its own largest element
        c = 0
        np.subtract(a64, e64, out=x)
        np.abs(x, out=y)
        md = float(y.max())
        if not math.isfinite(md):
            c = max(ka, ke)
            _scale2(a64, -c, x)
            _scale2(e64, -c, y)
            np.subtract(x, y, out=x)
            np.abs(x, out=y)
            md = float(y.max())
        if md:
            kd = math.frexp(md)[1]
            _scale2(x, -kd, x)
            self._merge(self.DD, _sum_of(x, x, s), 2 * (kd + c))
        self.n += m

    def mean_square_e_exceeds(self, t: float) -> bool:
        """Whether ``sum(e*e) / n > (t * 1.004)**2``: then some element of ``e`` exceeds ``t`` in
        magnitude (the margin covers ``t`` rounded to float16 and the sum's own rounding).
        False says nothing. Call after :meth:`settle`."""
        ee = self.m[self.EE]
        if self.n == 0 or ee <= 0.0 or not t < math.inf:
            return False
        if t <= 0.0:
            return True
        return math.log2(ee) + self.k[self.EE] > math.log2(self.n) + 2.0 * math.log2(t * 1.004)

    def cosine(self) -> float:
        """Cosine similarity of what was added (NaN when nothing was)."""
        if self.n == 0:
            return float("nan")
        aa, ee = self.m[self.AA], self.m[self.EE]
        if aa == 0.0 and ee == 0.0:
            return 1.0
        if aa == 0.0 or ee == 0.0:
            return 0.0
        # ae / sqrt(aa * ee), mantissas in [0.5, 1) and the exponents apart: nothing overflows
        ae = self.m[self.AE]
        if ae == 0.0:
            return 0.0
        exp = self.k[self.AE] - (self.k[self.AA] + self.k[self.EE]) / 2.0  # near 0: |ae| <= sqrt(aa * ee)
        try:
            c = ae / math.sqrt(aa * ee) * 2.0 ** exp if exp > -1100 else 0.0
        except OverflowError:  # only by rounding at the very edge: the bound says |c| <= 1
            c = math.copysign(1.0, ae)
        return max(-1.0, min(1.0, c))

    def snr_db(self) -> float:
        """SNR in dB of what was added (NaN when nothing was, inf when equal)."""
        if self.n == 0:
            return float("nan")
        if self.m[self.DD] == 0.0:
            return float("inf")
        if self.m[self.EE] == 0.0:
            return float("-inf")
        return 10.0 * (math.log10(self.m[self.EE] / self.m[self.DD])
                       + (self.k[self.EE] - self.k[self.DD]) * math.log10(2.0))


def _trusted(ee: float, ez: float, zz: float, aa: float, y: np.ndarray, d_zero: bool) -> bool:
    """Whether float64 block sums are accurate: finite, clear of underflow (an exact 0 only
    where every term is 0) and clear of the top of the range."""
    if not (math.isfinite(aa) and math.isfinite(ez) and max(ee, zz, aa) <= _HUGE):
        return False
    if zz < _TINY and not (zz == 0.0 and d_zero):
        return False
    if ee < _TINY and not (ee == 0.0 and not y.any()):
        return False
    return True


def _scale2(src: np.ndarray, k: int, out: np.ndarray) -> None:
    """``out = src * 2**k``, exact (a power of two) unless the result underflows; ``np.ldexp``
    does the same about 15x slower. Two steps where ``2**k`` itself is out of range."""
    if -1000 <= k <= 1000:
        np.multiply(src, 2.0 ** k, out=out)
    else:
        half = k // 2
        np.multiply(src, 2.0 ** half, out=out)
        np.multiply(out, 2.0 ** (k - half), out=out)


def _sum_of(x: np.ndarray, y: np.ndarray, scratch: np.ndarray) -> float:
    """``sum(x * y)``, pairwise-summed (``np.dot`` is a single pass but slower here under BLAS threading)."""
    np.multiply(x, y, out=scratch)
    return float(np.add.reduce(scratch))


def _metric_args(actual: Any, expected: Any) -> tuple[np.ndarray, np.ndarray]:
    a = as_array(actual, "actual", "array")
    e = as_array(expected, "expected", "array")
    if a.shape != e.shape:
        raise UsageError(f"shape mismatch: actual {fmt_shape(a.shape)} vs expected {fmt_shape(e.shape)}")
    return a, e


def metric_sums(a: np.ndarray, e: np.ndarray) -> MetricSums:
    """Float64 sums over the elements finite on both sides, blocked: the fast path where it
    is accurate enough, else the exact one (see the module docstring)."""
    W = working_dtype(a, e)
    f64 = np.dtype(np.float64)
    B = block_elems(f64, e.size)
    sums = MetricSums()
    d = np.empty(B, W)
    with np.errstate(all="ignore"), single_threaded_dot(B) as dot:
        fold = sums.folder(B, W, dot)
        for _, ab, eb in iter_blocks(a, e, W, B, "K"):
            dd = d[: ab.shape[0]]
            np.subtract(ab, eb, out=dd)
            hi, lo = float(np.maximum.reduce(dd)), float(np.minimum.reduce(dd))
            if math.isfinite(hi) and math.isfinite(lo):  # a finite difference: both sides finite
                fold(ab, eb, dd, hi == 0.0 and lo == 0.0)
            else:
                sums.add(ab.astype(f64), eb.astype(f64))  # the finite pairs only, exactly
    return sums if sums.settle() else exact_metric_sums(a, e)


def exact_metric_sums(a: np.ndarray, e: np.ndarray) -> MetricSums:
    """The exact path over a whole output: float64 sums with per-block scaling, blocked."""
    f64 = np.dtype(np.float64)
    B = block_elems(f64, e.size)
    sums = MetricSums()
    with np.errstate(all="ignore"):
        for _, ab, eb in iter_blocks(a, e, f64, B, "K"):
            sums.add(ab, eb)
    return sums
