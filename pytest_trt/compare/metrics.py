"""Whole-output metrics: cosine similarity and signal-to-noise ratio.

Accumulated in float64 over the elements finite on both sides, block by block, with
overflow- and underflow-proof sums (:class:`MetricSums`). Used by the verdict for the
``min_cosine`` / ``min_snr_db`` checks and by the public :func:`cosine_similarity` and
:func:`snr_db`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import UsageError
from .arguments import as_array
from .messages import fmt_shape
from .scan import block_elems, iter_blocks

__all__ = ["MetricSums", "cosine_similarity", "metric_sums", "snr_db"]


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

    Each sum is kept as ``mantissa * 2**exponent``: a block is scaled by powers of two (exact)
    so its largest element is in [0.5, 1) before squaring, and its partial sums are merged
    at the larger exponent. Plain float64 sums overflow for |x| > 1e154 (``[1e200]`` vs
    ``[1.0]`` made the SNR ``log10(0)``, a ValueError) and underflow to zero for |x| < 1e-162
    (two opposite tiny vectors looked "equal": cosine 1, SNR inf).
    """

    __slots__ = ("m", "k", "n", "_scratch")

    AE, AA, EE, DD = range(4)

    def __init__(self) -> None:
        self.m = [0.0, 0.0, 0.0, 0.0]
        self.k = [0, 0, 0, 0]
        self.n = 0
        self._scratch: tuple[np.ndarray, ...] | None = None

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
    """Float64 sums over the elements finite on both sides, blocked."""
    f64 = np.dtype(np.float64)
    B = block_elems(f64, e.size)
    sums = MetricSums()
    with np.errstate(all="ignore"):
        for _, ab, eb in iter_blocks(a, e, f64, B, "K"):
            sums.add(ab, eb)
    return sums
