"""The detailed pass: every figure of an output not proven to pass (or asked for details).

The element rule applied element by element, in C order, block by block
(:func:`detail_float` for float outputs, :func:`detail_exact` for integer and bool ones),
filling an :class:`~pytest_trt.compare.figures.OutputFigures`: the mismatched count, the
worst elements over all and over the mismatched ones, mean and p99 of the mismatched abs
errors, NaN/Inf counts, the tolerances that would have passed, cosine and SNR, and the
first ``TABLE_ROWS`` mismatches. Slower than the scans of :mod:`pytest_trt.compare.scan`:
it runs only when there is something to report.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .figures import TABLE_ROWS, Element, OutputFigures
from .metrics import MetricSums
from .scan import block_elems, iter_blocks

__all__ = ["detail_exact", "detail_float"]


class _Acc:
    """Accumulates the figures of one output over C-ordered blocks.

    Element records are ``(flat_index, actual, expected, abs_err, rel_err)``; "best" slots
    hold ``(key, record)``. Blocks arrive in C order and only a strictly larger key
    replaces a best, so ties resolve to the first element in C order (``np.argmax``'s rule).
    """

    def __init__(self, shape: tuple[int, ...], a_type: Callable[[Any], Any], e_type: Callable[[Any], Any]) -> None:
        self.shape = shape
        self.a_type = a_type  # python converters for the values
        self.e_type = e_type
        self.mismatched = 0
        self.worst_abs = None
        self.worst_rel = None
        self.mm_worst_abs = None
        self.mm_worst_rel = None
        self.mm_sum = 0.0
        self.mm_count = 0
        self.mm_vals: list[np.ndarray] = []
        self.nan_rows: list[tuple] = []
        self.top: list[tuple] = []
        self.nan_a = self.nan_e = self.inf_a = self.inf_e = 0
        self.need_atol = 0.0
        self.need_rtol = 0.0
        self.unfixable = 0

    def element(self, rec) -> Element:
        flat, av, ev, abs_err, rel = rec
        idx = tuple(int(i) for i in np.unravel_index(flat, self.shape)) if self.shape else ()
        return Element(idx, av, ev, abs_err, rel)

    def _rec(self, start, i, ab, eb, abs_err, rel):
        i = int(i)
        return (start + i, self.a_type(ab[i]), self.e_type(eb[i]), float(abs_err[i]), float(rel[i]))

    def _best(self, slot, key_arr, positions, start, ab, eb, abs_err, rel):
        """Update ``slot`` with the largest non-NaN value of ``key_arr`` (first on ties)."""
        m = np.fmax.reduce(key_arr)
        if math.isnan(m) or (slot is not None and not m > slot[0]):
            return slot
        j = int(np.argmax(key_arr == m))
        i = j if positions is None else positions[j]
        return (float(m), self._rec(start, i, ab, eb, abs_err, rel))

    def add(self, start, ab, eb, abs_err, rel, fail, nonnum=None):
        """Fold one block in. ``fail``: mismatched elements; ``nonnum``: those of them that
        are NaN/Inf mismatches (kept out of the statistics, listed first in the table)."""
        self.worst_abs = self._best(self.worst_abs, abs_err, None, start, ab, eb, abs_err, rel)
        self.worst_rel = self._best(self.worst_rel, rel, None, start, ab, eb, abs_err, rel)
        nfail = int(np.count_nonzero(fail))
        if not nfail:
            return
        self.mismatched += nfail
        if nonnum is not None:
            nn = np.flatnonzero(nonnum)
            if nn.size:
                self.unfixable += nn.size
                room = max(TABLE_ROWS - len(self.nan_rows), 0)
                self.nan_rows += [self._rec(start, i, ab, eb, abs_err, rel) for i in nn[:room]]
                fail = fail & ~nonnum
        pos = np.flatnonzero(fail)
        if not pos.size:
            return
        ea = abs_err[pos]
        er = rel[pos]
        self.mm_vals.append(ea)
        self.mm_sum += float(np.add.reduce(ea, dtype=np.float64))
        self.mm_count += pos.size
        self.mm_worst_abs = self._best(self.mm_worst_abs, ea, pos, start, ab, eb, abs_err, rel)
        self.mm_worst_rel = self._best(self.mm_worst_rel, er, pos, start, ab, eb, abs_err, rel)
        # table candidates: the largest abs errors of the block, ties by position (C order);
        # a block whose largest error cannot enter a full table (later blocks lose ties) is skipped
        if len(self.top) == TABLE_ROWS and not ea.max() > self.top[-1][3]:
            return
        if pos.size > TABLE_ROWS:
            k = pos.size - TABLE_ROWS
            thr = np.partition(ea, k)[k]
            above = np.flatnonzero(ea > thr)
            ties = np.flatnonzero(ea == thr)[: TABLE_ROWS - above.size]
            sel = np.concatenate([above, ties])
        else:
            sel = np.arange(pos.size)
        cands = [self._rec(start, pos[j], ab, eb, abs_err, rel) for j in sel]
        self.top = sorted(self.top + cands, key=lambda r: (-r[3], r[0]))[:TABLE_ROWS]

    def finish(self, oc: OutputFigures) -> None:
        def el(slot):
            return None if slot is None else self.element(slot[1])

        oc.detailed = True
        oc.mismatched = self.mismatched
        oc.worst_abs = el(self.worst_abs)
        oc.worst_rel = el(self.worst_rel)
        oc.nan_actual, oc.nan_expected = self.nan_a, self.nan_e
        oc.inf_actual, oc.inf_expected = self.inf_a, self.inf_e
        oc.unfixable = self.unfixable
        if self.mismatched:
            oc.mismatch_worst_abs = el(self.mm_worst_abs)
            oc.mismatch_worst_rel = el(self.mm_worst_rel)
            if self.mm_count:
                vals = np.concatenate(self.mm_vals)
                oc.mismatch_mean_abs = self.mm_sum / self.mm_count
                if not math.isfinite(oc.mismatch_mean_abs):  # the float64 sum overflowed (errors ~1e308)
                    top = float(vals.max())
                    if math.isfinite(top) and top > 0:
                        with np.errstate(all="ignore"):
                            oc.mismatch_mean_abs = float(np.mean(vals / top, dtype=np.float64)) * top
                # the smallest value that 99% of the mismatched abs errors do not exceed
                oc.mismatch_p99_abs = float(np.percentile(vals, 99, method="inverted_cdf"))
            rows = self.nan_rows[:TABLE_ROWS] + self.top
            oc.table = [self.element(r) for r in rows[:TABLE_ROWS]]
        oc.passed = oc.passed and self.mismatched == 0

def _scalar_converter(dt: np.dtype) -> Callable[[Any], Any]:
    if dt.kind == "b":
        return bool
    if dt.kind in "iu":
        return int
    return float


def detail_float(oc: OutputFigures, a: np.ndarray, e: np.ndarray, W: np.dtype, rtol: float, atol: float,
                 equal_nan: bool) -> None:
    """Fill ``oc`` with the figures of a float output, computed in the working dtype ``W``."""
    B = block_elems(W, e.size)
    with np.errstate(all="ignore"):
        r = W.type(rtol)
        at = W.type(atol)
    acc = _Acc(tuple(e.shape), float, float)
    sums = MetricSums()
    f64 = np.dtype(np.float64)
    d = np.empty(B, W)
    ae = np.empty(B, W)
    rel = np.empty(B, W)
    a64 = np.empty(B, f64)
    e64 = np.empty(B, f64)
    inf = W.type(np.inf)
    element_ratio = 0.0
    with np.errstate(all="ignore"):
        for start, ab, eb in iter_blocks(a, e, W, B, "C"):
            m = ab.shape[0]
            dd, aee, rr = d[:m], ae[:m], rel[:m]
            np.subtract(ab, eb, out=dd)
            np.abs(dd, out=dd)
            np.abs(eb, out=aee)
            tol = aee * r
            if np.isinf(r):  # inf * 0 is NaN: rtol * |0| is 0 whatever rtol, so such an element needs atol
                tol[aee == 0] = 0
            fail = (dd > at) & (dd > tol)  # NaN compares False: finite elements only
            fin_a = np.isfinite(ab)
            fin_e = np.isfinite(eb)
            both = fin_a & fin_e
            allfin = bool(both.all())
            if not allfin:
                nan_a = np.isnan(ab)
                nan_e = np.isnan(eb)
                acc.nan_a += int(np.count_nonzero(nan_a))
                acc.nan_e += int(np.count_nonzero(nan_e))
                acc.inf_a += int(np.count_nonzero(~fin_a & ~nan_a))
                acc.inf_e += int(np.count_nonzero(~fin_e & ~nan_e))
                nan_any = nan_a | nan_e
                both_nan = nan_a & nan_e
                infc = ~both & ~nan_any  # an infinity involved, no NaN
                eq = ab == eb
                fail &= both
                fail_nan = nan_any & ~both_nan if equal_nan else nan_any
                fail_inf = infc & ~eq
                nonfin_fail = fail_nan | fail_inf
                fail |= nonfin_fail
                dd[infc & eq] = 0  # inf - inf
                if equal_nan:
                    dd[both_nan] = 0
            np.divide(dd, aee, out=rr)
            rr[dd == 0] = 0  # 0/0
            ovf = np.isinf(dd) if allfin else np.isinf(dd) & both
            if ovf.any():  # |a - e| overflowed between finite values: |a/|e| - e/|e||, finite unless it overflows too
                rr[ovf] = np.abs(ab[ovf] / aee[ovf] - eb[ovf] / aee[ovf])
            if not allfin:
                rr[fail_inf] = inf  # finite vs inf: inf/inf
                # needed tolerances over the finite elements only
                tol_f = np.where(both, tol, inf)
                fin_dd = np.where(both, dd, 0)
            else:
                tol_f, fin_dd = tol, dd
            over_r = fin_dd > tol_f
            if over_r.any():
                acc.need_atol = max(acc.need_atol, float(fin_dd[over_r].max()))
            over_a = fin_dd > at
            if over_a.any():
                acc.need_rtol = max(acc.need_rtol, float(rr[over_a].max()))
            # each finite element's error over the tolerance it is judged against, max(atol, rtol*|e|):
            # > 1 exactly where it fails (fail = d > atol and d > rtol*|e|); 0/0 (an exact zero) is 0
            limit = np.maximum(tol_f, at)
            usage = np.divide(fin_dd, limit, out=np.zeros(m, np.float64), where=fin_dd > 0, dtype=np.float64)
            element_ratio = max(element_ratio, float(usage.max()) if m else 0.0)
            acc.add(start, ab, eb, dd, rr, fail, None if allfin else nonfin_fail)
            # metrics in float64
            x = a64[:m]
            y = e64[:m]
            x[...] = ab
            y[...] = eb
            sums.add(x, y)
    acc.finish(oc)
    oc.element_ratio = element_ratio
    oc.needed_atol = acc.need_atol
    oc.needed_rtol = acc.need_rtol
    oc.cosine, oc.snr_db, oc.metric_elements = sums.cosine(), sums.snr_db(), sums.n


def detail_exact(oc: OutputFigures, a: np.ndarray, e: np.ndarray) -> None:
    """Fill ``oc`` with the figures of an integer or bool output (compared exactly)."""
    f64 = np.dtype(np.float64)
    B = block_elems(f64, e.size)
    acc = _Acc(tuple(e.shape), _scalar_converter(a.dtype), _scalar_converter(e.dtype))
    with np.errstate(all="ignore"):
        for start, ab, eb in iter_blocks(a, e, None, B, "C"):
            fail = ab != eb
            dd = np.abs(ab.astype(f64) - eb.astype(f64))
            ae = np.abs(eb.astype(f64))
            rr = dd / ae
            rr[dd == 0] = 0
            acc.add(start, ab, eb, dd, rr, fail)
    acc.finish(oc)
    oc.element_ratio = math.inf if acc.mismatched else 0.0  # compared exactly: no tolerance
    oc.nan_actual = oc.nan_expected = oc.inf_actual = oc.inf_expected = None
