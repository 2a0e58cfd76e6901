"""Compare engine outputs with reference outputs: verdicts, figures and failure messages.

Element semantics (Polygraphy's elementwise check, the same for every caller)
------------------------------------------------------------------------------
``expected`` is the reference (the FP32 ONNX Runtime baseline); it is the denominator of
the relative error. For one element with ``abs_err = |actual - expected|`` and
``rel_err = abs_err / |expected|``::

    the element FAILS  iff  abs_err > atol  AND  abs_err > rtol * |expected|

i.e. an element passes when it is within *either* tolerance. This is Polygraphy's
``check_error_stat="elemwise"`` rule; it is not numpy's ``|a - e| <= atol + rtol * |e|``
(the two differ by at most a factor of 2 in the allowed error). The test is evaluated as
written, ``abs_err > rtol * |expected|`` (no division), so ``expected == 0`` needs no
special case: such an element passes iff ``abs_err <= atol``.

* NaN never equals anything, NaN included, unless ``equal_nan=True`` (then NaN on both sides
  passes; NaN on one side still fails).
* ``+inf == +inf`` and ``-inf == -inf`` pass; an infinity against anything else (a finite
  value, the other infinity) fails whatever the tolerances.
* Arithmetic runs in the *working precision*: float64 if either side is float64, otherwise
  float32 (float16 and bfloat16 outputs are upcast exactly, block by block). Tolerances are
  rounded to the working precision.
* Integer and bool outputs are compared exactly; tolerances do not apply to them.
* Structural differences are failures with their own message: an output missing from
  ``actual``, an output of ``actual`` that ``expected`` lacks, a shape mismatch (no
  broadcasting), a dtype *kind* mismatch (float against integer or bool). int32 against
  int64 or float16 against float32 are compared by value.
* Optional whole-output checks: ``min_cosine`` (cosine similarity) and ``min_snr_db``
  (``10*log10(sum(e^2) / sum((a-e)^2))``) are checked *in addition* to the element check.
  Both are computed over the elements finite on both sides (the element check judges the
  others). To rely on a metric alone, pass ``atol=float("inf")``.

Default tolerances (``default_tolerances``, ``default_min_cosine``)
-----------------------------------------------------------------
===========  ======  ======  ==========  ===================================================
precision    rtol    atol    min_cosine  why
===========  ======  ======  ==========  ===================================================
fp32         1e-5    1e-5    (none)      TensorRT FP32 (TF32 off) differs from ONNX Runtime
                                         FP32 at about 1e-6 relative (other kernels, other
                                         summation orders); one decade of headroom. Leave
                                         TF32 on and you need ~1e-3.
fp16         2e-2    1e-2    0.9999      calibrated (bench/calibration.py, README
                                         "Default tolerances"): healthy real exports pass
                                         the element rule with >= 2x margin (worst: a ViT,
                                         max abs error 5e-3, factor 0.24) and 1 - cosine
                                         <= 3.2e-7 (310x below the floor).
bf16         1e-1    5e-2    0.999       calibrated the same way: worst healthy element
                                         factor 0.28 (max abs 3.6e-2), 1 - cosine <= 1.7e-5
                                         (58x below the floor).
===========  ======  ======  ==========  ===================================================

Why a cosine floor beside the element rule: an element rule wide enough for healthy
low-precision networks (>= 2x margin) is too wide to fail a real precision loss by 10x (a
BF16 LayerNorm fed a large common offset misses it by ~7x), while a whole-output cosine
separates the two by more than 300x in FP16 and 50x in BF16 on the corpus. A default floor
applies only to float outputs whose reference is not within ``atol`` of zero everywhere (an
output that is numerically zero at this tolerance has no direction to compare; the element
rule judges it). An explicit ``min_cosine`` replaces the default; ``min_cosine=-1`` turns
it off.

These are starting points for whole networks, not guarantees: deep networks, large
reductions and ill-conditioned ops (LayerNorm of a large common offset, Softmax without
max subtraction) need the FP32 islands that the precision policy provides, not wider
tolerances. Per-output tolerances: pass ``rtol={"logits": 2e-2}``; outputs not named fall
back to the precision defaults.

Figures (``OutputComparison``, the failure message, ``to_json``)
---------------------------------------------------------------
For every failing output: mismatched count and share; the worst abs error and the worst
rel error *among the mismatched elements* (index as a tuple, actual and expected there);
max / mean / p99 of the abs error over the mismatched elements (p99: the smallest value
that 99% of them do not exceed; NaN/Inf mismatches are counted apart, not averaged);
the worst abs / rel error over *all* elements when that is a different element (it can be
one within tolerance, labelled so); NaN and Inf counts on each side; the tolerance that
would have passed (``needed_atol`` at the given rtol: the largest abs error among the
elements beyond ``rtol * |expected|``; ``needed_rtol`` at the given atol: the largest rel
error among the elements beyond atol); cosine similarity and SNR; and a table of the
first ``TABLE_ROWS`` mismatches, NaN/Inf ones first, then by largest abs error, ties in C
order. Passing outputs get one line each. A passing output is only scanned for its
verdict: its figures are ``None`` unless ``details=True``; ``min_cosine`` / ``min_snr_db``
compute the metrics (only) for every float output.

Speed
-----
The passing path is a blocked scan: each output is processed in blocks of
``_BLOCK_BYTES`` per working-precision buffer with preallocated scratch, so no
full-size temporary is ever made and the scratch stays in cache (C-contiguous inputs in the
working dtype are sliced without a copy; other layouts and dtypes are copied and upcast a
block at a time by ``np.nditer``'s buffers, in memory order). Per block::

    d = |a - e|;  t = max(rtol * |e|, atol);  block passes iff max(d - t) <= 0

That is six ufunc passes over cache-resident data plus one reduction. ``max`` propagates
NaN, and ``inf - inf`` is NaN, so every NaN and infinity lands in the "not proven to pass"
branch; so does any violation. An output not proven to pass (or asked for
``details=True``) gets the exact, detailed pass: the rules above applied element by
element, in C order, collecting the figures. On the 2-core Xeon of the development
machine the passing path over two 5e7-element float32 arrays costs about 2.2-2.6x the time
to read both arrays once and is 10-20x faster than ``numpy.testing.assert_allclose``
(``python bench/compare.py``). The detailed pass is much slower (~1-2 s for 5e7 elements
with most of them mismatched): it only runs when there is something to report.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .dtypes import BF16, FP16, FP32, normalize_precision
from .errors import AccuracyError, UsageError
from .jsonsafe import json_number

__all__ = [
    "DEFAULT_MIN_COSINE",
    "DEFAULT_TOLERANCES",
    "SEMANTICS",
    "CompareResult",
    "Element",
    "OutputComparison",
    "assert_close",
    "compare_outputs",
    "cosine_similarity",
    "default_min_cosine",
    "default_tolerances",
    "snr_db",
]

DEFAULT_TOLERANCES: dict[str, tuple[float, float]] = {
    FP32: (1e-5, 1e-5),
    FP16: (2e-2, 1e-2),  # calibrated: bench/calibration.py (issue 15 item 6)
    BF16: (1e-1, 5e-2),
}

#: Whole-output cosine floor checked beside the element rule (None: no floor). Calibrated
#: with the tolerances above; see the module docstring for when it applies.
DEFAULT_MIN_COSINE: dict[str, float | None] = {
    FP32: None,
    FP16: 0.9999,
    BF16: 0.999,
}

SEMANTICS = (
    "an element fails when |actual - expected| > atol and > rtol * |expected| "
    "(expected is the reference)"
)

#: Bytes per scratch buffer of the blocked scans (65536 float32 elements). Tuned on a
#: 2-core Xeon with 1 MiB L2 per core: 32K..64K elements are best, 256K noticeably worse.
_BLOCK_BYTES = 1 << 18
#: Rows of the mismatch table in the failure message.
TABLE_ROWS = 10

_ML_FLOAT_PREFIXES = ("bfloat16", "float8", "float6", "float4")


def default_tolerances(precision: str = FP32) -> tuple[float, float]:
    """``(rtol, atol)`` for ``fp32``, ``fp16`` or ``bf16`` (see the module docstring for why).

    >>> default_tolerances("fp16")
    (0.02, 0.01)
    """
    return DEFAULT_TOLERANCES[normalize_precision(precision)]


def default_min_cosine(precision: str = FP32) -> float | None:
    """The default whole-output cosine floor of ``precision`` (None for fp32).

    >>> default_min_cosine("bf16")
    0.999
    """
    return DEFAULT_MIN_COSINE[normalize_precision(precision)]


# --------------------------------------------------------------------------------------
# Result types
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Element:
    """One element of an output: its index, both values and its errors."""

    index: tuple[int, ...]
    actual: Any
    expected: Any
    abs_err: float
    rel_err: float

    def to_json(self) -> dict[str, Any]:
        return {
            "index": list(self.index),
            "actual": _json_num(self.actual),
            "expected": _json_num(self.expected),
            "abs_err": _json_num(self.abs_err),
            "rel_err": _json_num(self.rel_err),
        }


@dataclass
class OutputComparison:
    """The comparison of one named output.

    ``worst_abs`` / ``worst_rel`` are over *all* elements (their value, index and both
    values are also reachable as ``max_abs``, ``worst_abs_index``, ``worst_abs_values``,
    ...); ``mismatch_worst_abs`` / ``mismatch_worst_rel`` and the ``mismatch_*`` statistics
    are over the mismatched elements only. Figures are ``None`` when not computed: a
    passing output is only scanned for its verdict unless ``details=True`` (or a metric
    threshold) was asked.
    """

    name: str
    shape: tuple[int, ...] | None  # expected's shape (actual's for an extra output)
    dtype: str | None  # expected's dtype (actual's for an extra output)
    passed: bool
    mismatched: int
    total: int
    atol: float
    rtol: float
    kind: str | None = "float"  # "float" | "int" | "bool"
    actual_shape: tuple[int, ...] | None = None
    actual_dtype: str | None = None
    problem: str | None = None  # None | "missing" | "extra" | "shape" | "dtype"
    problem_detail: str | None = None
    detailed: bool = False
    worst_abs: Element | None = None
    worst_rel: Element | None = None
    needed_atol: float | None = None
    needed_rtol: float | None = None
    unfixable: int = 0  # NaN / Inf mismatches: no tolerance makes them pass
    nan_actual: int | None = None
    nan_expected: int | None = None
    inf_actual: int | None = None
    inf_expected: int | None = None
    cosine: float | None = None
    snr_db: float | None = None
    metric_elements: int | None = None  # elements the metrics were computed over
    min_cosine: float | None = None
    min_snr_db: float | None = None
    metric_failures: list[str] = field(default_factory=list)
    mismatch_worst_abs: Element | None = None
    mismatch_worst_rel: Element | None = None
    mismatch_mean_abs: float | None = None
    mismatch_p99_abs: float | None = None
    table: list[Element] = field(default_factory=list)

    # --- flat accessors (the names of docs/DESIGN.md) ---------------------------------
    @property
    def max_abs(self) -> float | None:
        return None if self.worst_abs is None else self.worst_abs.abs_err

    @property
    def max_rel(self) -> float | None:
        return None if self.worst_rel is None else self.worst_rel.rel_err

    @property
    def worst_abs_index(self) -> tuple[int, ...] | None:
        return None if self.worst_abs is None else self.worst_abs.index

    @property
    def worst_rel_index(self) -> tuple[int, ...] | None:
        return None if self.worst_rel is None else self.worst_rel.index

    @property
    def worst_abs_values(self) -> tuple[Any, Any] | None:
        return None if self.worst_abs is None else (self.worst_abs.actual, self.worst_abs.expected)

    @property
    def worst_rel_values(self) -> tuple[Any, Any] | None:
        return None if self.worst_rel is None else (self.worst_rel.actual, self.worst_rel.expected)

    @property
    def mismatched_fraction(self) -> float:
        return self.mismatched / self.total if self.total else 0.0

    # --- rendering -------------------------------------------------------------------
    def summary_line(self) -> str:
        """One line: how passing outputs are listed in the message."""
        head = f"{self.name!r}"
        if self.shape is not None:
            head += f" {_fmt_shape(self.shape)} {self.dtype}"
        if self.problem is not None:
            return f"{head}: {self.problem_detail}"
        parts = [f"{self.mismatched} of {self.total} mismatched"]
        if self.worst_abs is not None:
            parts.append(f"max abs err {_fmt_err(self.worst_abs.abs_err)} at {_fmt_index(self.worst_abs.index)}")
        if self.worst_rel is not None:
            parts.append(f"max rel err {_fmt_err(self.worst_rel.rel_err)}")
        if self.cosine is not None:
            parts.append(f"cosine {_fmt_cos(self.cosine)}")
        if self.snr_db is not None:
            parts.append(f"SNR {_fmt_db(self.snr_db)}")
        return f"{head}: " + ", ".join(parts)

    def report(self) -> str:
        """The multi-line section of a failing output in the message."""
        if self.problem is not None:
            return f"output {self.name!r}: {self.problem_detail}"
        ind = "  "
        dt = self.dtype if self.actual_dtype in (None, self.dtype) else f"{self.dtype} (actual {self.actual_dtype})"
        lines = [
            f"output {self.name!r}: shape {_fmt_shape(self.shape)} {dt}: {self.mismatched} of "
            f"{self.total} elements mismatched ({_fmt_pct(100.0 * self.mismatched_fraction)})"
        ]
        if self.kind == "float":
            lines.append(f"{ind}tolerances: rtol={_fmt_tol(self.rtol)}, atol={_fmt_tol(self.atol)}")
        else:
            lines.append(f"{ind}{self.kind} output: compared exactly")
        for label, el, first, other in (
            ("worst abs error:", self.mismatch_worst_abs, "abs_err", "rel"),
            ("worst rel error:", self.mismatch_worst_rel, "rel_err", "abs"),
        ):
            if el is not None:
                second = el.rel_err if other == "rel" else el.abs_err
                lines.append(
                    f"{ind}{label} {_fmt_err(getattr(el, first))} at {_fmt_index(el.index)}: "
                    f"actual {self._v(el.actual, True)}, expected {self._v(el.expected, False)} "
                    f"({other} err {_fmt_err(second)})"
                )
        if self.mismatch_mean_abs is not None:
            lines.append(
                f"{ind}abs error of the mismatched elements: max "
                f"{_fmt_err(self.mismatch_worst_abs.abs_err)}, mean {_fmt_err(self.mismatch_mean_abs)}, "
                f"p99 {_fmt_err(self.mismatch_p99_abs)}"
            )
        # The worst elements over ALL elements can be ones within tolerance (a large abs
        # error within rtol, a large rel error within atol): shown apart, labelled so.
        extra = []
        shown = {el.index for el in self.table}
        if self.worst_abs is not None and self.worst_abs.index not in shown and (
            self.mismatch_worst_abs is None or self.worst_abs.index != self.mismatch_worst_abs.index
        ):
            el = self.worst_abs
            extra.append(f"max abs err {_fmt_err(el.abs_err)} at {_fmt_index(el.index)} "
                         f"(actual {self._v(el.actual, True)}, expected {self._v(el.expected, False)})")
        if self.worst_rel is not None and self.worst_rel.index not in shown and (
            self.mismatch_worst_rel is None or self.worst_rel.index != self.mismatch_worst_rel.index
        ):
            el = self.worst_rel
            extra.append(f"max rel err {_fmt_err(el.rel_err)} at {_fmt_index(el.index)} "
                         f"(actual {self._v(el.actual, True)}, expected {self._v(el.expected, False)})")
        if extra:
            lines.append(f"{ind}over all elements, incl. those within tolerance: " + "; ".join(extra))
        if self.nan_actual is not None:
            lines.append(
                f"{ind}NaN: actual {self.nan_actual}, expected {self.nan_expected}; "
                f"Inf: actual {self.inf_actual}, expected {self.inf_expected}"
            )
        if self.kind == "float" and self.detailed:
            lines.append(f"{ind}{self._would_pass()}")
        metrics = []
        if self.cosine is not None:
            metrics.append(f"cosine similarity {_fmt_cos(self.cosine)}")
        if self.snr_db is not None:
            metrics.append(f"SNR {_fmt_db(self.snr_db)}")
        if metrics:
            over = ""
            if self.metric_elements is not None and self.metric_elements != self.total:
                over = f" (over the {self.metric_elements} elements finite on both sides)"
            lines.append(f"{ind}" + ", ".join(metrics) + over)
        for failure in self.metric_failures:
            lines.append(f"{ind}FAILED: {failure}")
        if self.table:
            shown = len(self.table)
            what = f"all {shown}" if shown == self.mismatched else f"first {shown} of {self.mismatched}"
            lines.append(f"{ind}mismatches ({what}; NaN/Inf first, then largest abs error first):")
            lines.extend(ind * 2 + row for row in self._table_rows())
        return "\n".join(lines)

    def _v(self, value, actual_side: bool) -> str:
        return _fmt_val(value, self.actual_dtype if actual_side else self.dtype)

    def _would_pass(self) -> str:
        opts = []
        if self.needed_atol is not None and math.isfinite(self.needed_atol):
            opts.append(f"atol >= {_fmt_up(self.needed_atol)} at rtol={_fmt_tol(self.rtol)}")
        if self.needed_rtol is not None and math.isfinite(self.needed_rtol):
            opts.append(f"rtol >= {_fmt_up(self.needed_rtol)} at atol={_fmt_tol(self.atol)}")
        elif self.needed_rtol is not None:
            opts.append(f"(no finite rtol: expected is 0, or the rel error overflows, where abs err > "
                        f"atol={_fmt_tol(self.atol)})")
        txt = "would pass with " + ", or ".join(opts) if opts else "no finite tolerance passes (abs error overflows)"
        if self.unfixable:
            return (
                f"no tolerance passes the {self.unfixable} NaN/Inf mismatch(es); "
                + ("the other mismatches " + txt if self.unfixable < self.mismatched else "")
            ).rstrip("; ")
        return txt

    def _table_rows(self) -> list[str]:
        header = ("index", "actual", "expected", "abs err", "rel err")
        rows = [
            (
                _fmt_index(el.index),
                self._v(el.actual, True),
                self._v(el.expected, False),
                _fmt_err(el.abs_err),
                _fmt_err(el.rel_err),
            )
            for el in self.table
        ]
        widths = [max(len(header[i]), *(len(r[i]) for r in rows)) for i in range(5)]
        out = ["  ".join(h.rjust(w) for h, w in zip(header, widths, strict=True))]
        out += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
        if self.mismatched > len(self.table):
            out.append(f"... {self.mismatched - len(self.table)} more mismatched element(s)")
        return out

    def to_json(self) -> dict[str, Any]:
        """Plain JSON types only. Non-finite floats become the strings "inf", "-inf", "nan"."""
        def el(e: Element | None):
            return None if e is None else e.to_json()

        return {
            "name": self.name,
            "kind": self.kind,
            "shape": None if self.shape is None else list(self.shape),
            "dtype": self.dtype,
            "actual_shape": None if self.actual_shape is None else list(self.actual_shape),
            "actual_dtype": self.actual_dtype,
            "passed": bool(self.passed),
            "problem": self.problem,
            "problem_detail": self.problem_detail,
            "detailed": self.detailed,
            "mismatched": int(self.mismatched),
            "total": int(self.total),
            "mismatched_fraction": _json_num(self.mismatched_fraction),
            "atol": _json_num(self.atol),
            "rtol": _json_num(self.rtol),
            "max_abs": _json_num(self.max_abs),
            "worst_abs_index": None if self.worst_abs is None else list(self.worst_abs.index),
            "worst_abs_values": None if self.worst_abs is None else [
                _json_num(self.worst_abs.actual), _json_num(self.worst_abs.expected)],
            "max_rel": _json_num(self.max_rel),
            "worst_rel_index": None if self.worst_rel is None else list(self.worst_rel.index),
            "worst_rel_values": None if self.worst_rel is None else [
                _json_num(self.worst_rel.actual), _json_num(self.worst_rel.expected)],
            # NaN/Inf mismatches: no tolerance passes, so no "needed" figure (null) and the reason
            "needed_atol": None if self.unfixable else _json_num(self.needed_atol),
            "needed_rtol": None if self.unfixable else _json_num(self.needed_rtol),
            "needed_reason": (f"no tolerance passes the {self.unfixable} NaN/Inf mismatch(es)"
                              if self.unfixable else None),
            "advice": self._would_pass() if not self.passed and self.mismatched else None,
            "unfixable": int(self.unfixable),
            "nan_actual": self.nan_actual,
            "nan_expected": self.nan_expected,
            "inf_actual": self.inf_actual,
            "inf_expected": self.inf_expected,
            "cosine": _json_num(self.cosine),
            "snr_db": _json_num(self.snr_db),
            "metric_elements": self.metric_elements,
            "min_cosine": _json_num(self.min_cosine),
            "min_snr_db": _json_num(self.min_snr_db),
            "metric_failures": list(self.metric_failures),
            "mismatch": None if self.mismatch_mean_abs is None and not self.table else {
                "worst_abs": el(self.mismatch_worst_abs),
                "worst_rel": el(self.mismatch_worst_rel),
                "mean_abs": _json_num(self.mismatch_mean_abs),
                "p99_abs": _json_num(self.mismatch_p99_abs),
                "first": [el(e) for e in self.table],
            },
        }


@dataclass
class CompareResult:
    """All outputs of one comparison. ``bool(result)`` is ``result.passed``."""

    outputs: dict[str, OutputComparison]
    precision: str = FP32
    equal_nan: bool = False

    @property
    def passed(self) -> bool:
        return all(o.passed for o in self.outputs.values())

    @property
    def failed_outputs(self) -> list[str]:
        """Names of the failing outputs, in order."""
        return [n for n, o in self.outputs.items() if not o.passed]

    def __bool__(self) -> bool:
        return self.passed

    def message(self) -> str:
        """The failure message (or a summary when everything passed)."""
        outs = list(self.outputs.values())
        failed = [o for o in outs if not o.passed]
        tols = {(o.rtol, o.atol) for o in outs if o.kind == "float" or o.kind is None}
        if len(tols) == 1:
            rtol, atol = next(iter(tols))
            dflt = " (defaults)" if (rtol, atol) == DEFAULT_TOLERANCES[self.precision] else ""
            tol_txt = f"rtol={_fmt_tol(rtol)}, atol={_fmt_tol(atol)}{dflt}"
        elif tols:
            tol_txt = "per-output tolerances (see each output)"
        else:
            tol_txt = "exact comparison"
        nan_txt = "NaN equals NaN (equal_nan=True)" if self.equal_nan else "NaN never equals NaN"
        if failed:
            head = f"{len(failed)} of {len(outs)} output(s) differ from the reference"
        else:
            head = f"all {len(outs)} output(s) match the reference"
        lines = [
            f"{head} [precision {self.precision}; {tol_txt}]",
            f"{SEMANTICS}; {nan_txt}; +-inf equals only itself",
        ]
        for o in failed:
            lines.append("")
            lines.append(o.report())
        passing = [o for o in outs if o.passed]
        if passing:
            lines.append("")
            for o in passing:
                lines.append(f"passed: {o.summary_line()}")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        """Plain JSON types (``json.dumps`` works with ``allow_nan=False``)."""
        return {
            "passed": bool(self.passed),
            "precision": self.precision,
            "equal_nan": bool(self.equal_nan),
            "semantics": SEMANTICS,
            "outputs_total": len(self.outputs),
            "outputs_failed": len(self.failed_outputs),
            "failed_outputs": self.failed_outputs,
            "outputs": {n: o.to_json() for n, o in self.outputs.items()},
        }

    def __str__(self) -> str:
        return self.message()


# --------------------------------------------------------------------------------------
# Public entry points
# --------------------------------------------------------------------------------------


def assert_close(
    actual,
    expected,
    *,
    rtol=None,
    atol=None,
    precision: str = FP32,
    equal_nan: bool = False,
    min_cosine=None,
    min_snr_db=None,
    names=None,
    details: bool = False,
) -> CompareResult:
    """Assert that ``actual`` matches the reference ``expected``; return the CompareResult.

    ``actual`` and ``expected`` are two arrays (named ``names`` or ``"output"``) or two
    mappings of output name to array (``names`` then restricts and orders the outputs to
    compare). ``rtol`` / ``atol`` / ``min_cosine`` / ``min_snr_db``: a number, or a dict
    ``{output name: value}`` (outputs not named get the precision defaults / no check).
    ``details=True`` computes the figures (max errors, metrics) of passing outputs too.

    Raises :class:`~pytest_trt.errors.AccuracyError` (an ``AssertionError``) carrying the
    result when any output fails, :class:`~pytest_trt.errors.UsageError` for invalid
    arguments (negative or NaN tolerances, unknown names, unsupported dtypes).
    """
    result = compare_outputs(
        actual, expected, rtol=rtol, atol=atol, precision=precision, equal_nan=equal_nan,
        min_cosine=min_cosine, min_snr_db=min_snr_db, names=names, details=details,
    )
    if not result.passed:
        raise AccuracyError(result.message(), result)
    return result


def compare_outputs(
    actual,
    expected,
    *,
    rtol=None,
    atol=None,
    precision: str = FP32,
    equal_nan: bool = False,
    min_cosine=None,
    min_snr_db=None,
    names=None,
    details: bool = False,
) -> CompareResult:
    """Like :func:`assert_close` but never raises on a mismatch: returns the result."""
    precision = normalize_precision(precision)
    d_rtol, d_atol = DEFAULT_TOLERANCES[precision]
    pairs = _pair_up(actual, expected, names)
    all_names = [p[0] for p in pairs]
    rtols = _per_output("rtol", rtol, d_rtol, all_names, tolerance=True)
    atols = _per_output("atol", atol, d_atol, all_names, tolerance=True)
    cosines = _per_output("min_cosine", min_cosine, None, all_names)
    snrs = _per_output("min_snr_db", min_snr_db, None, all_names)
    d_cosine = DEFAULT_MIN_COSINE[precision]
    outputs: dict[str, OutputComparison] = {}
    for name, a, e in pairs:
        given = cosines[name]
        outputs[name] = _compare_one(
            name, a, e, rtol=rtols[name], atol=atols[name], equal_nan=bool(equal_nan),
            min_cosine=given if given is not None else d_cosine, min_snr_db=snrs[name], details=details,
            default_cosine=given is None and d_cosine is not None,
        )
    return CompareResult(outputs=outputs, precision=precision, equal_nan=bool(equal_nan))


def cosine_similarity(actual, expected) -> float:
    """Cosine similarity of two arrays (as flat vectors), accumulated in float64.

    Over the elements finite on both sides; NaN if there are none. Both all-zero: 1.0;
    one all-zero: 0.0.
    """
    a, e = _metric_args(actual, expected)
    return _metric_sums(a, e).cosine()


def snr_db(actual, expected) -> float:
    """Signal-to-noise ratio ``10*log10(sum(e^2) / sum((a-e)^2))`` in dB, ``inf`` when equal.

    Over the elements finite on both sides; NaN if there are none.
    """
    a, e = _metric_args(actual, expected)
    return _metric_sums(a, e).snr_db()


# --------------------------------------------------------------------------------------
# Argument handling
# --------------------------------------------------------------------------------------


def _pair_up(actual, expected, names) -> list[tuple[str, np.ndarray | None, np.ndarray | None]]:
    a_map = isinstance(actual, Mapping)
    e_map = isinstance(expected, Mapping)
    if a_map != e_map:
        raise UsageError(
            "actual and expected must both be arrays or both be dicts of named outputs; got "
            f"{type(actual).__name__} and {type(expected).__name__}"
        )
    if not a_map:
        if names is None:
            name = "output"
        elif isinstance(names, str):
            name = names
        else:
            seq = list(names)
            if len(seq) != 1 or not isinstance(seq[0], str):
                raise UsageError(f"names must be one output name when comparing two arrays, got {names!r}")
            name = seq[0]
        return [(name, _as_array(actual, "actual", name), _as_array(expected, "expected", name))]

    for side, mp in (("actual", actual), ("expected", expected)):
        bad = [k for k in mp if not isinstance(k, str)]
        if bad:
            raise UsageError(f"output names must be strings; {side} has {bad[:3]!r}")
    if names is not None:
        wanted = [names] if isinstance(names, str) else list(names)
        unknown = [n for n in wanted if n not in expected]
        if unknown:
            raise UsageError(
                f"names lists {_names(unknown)} that expected does not have; expected has {_names(list(expected))}"
            )
        if len(set(wanted)) != len(wanted):
            raise UsageError(f"names lists an output twice: {wanted!r}")
        if not wanted:
            raise UsageError("names is empty: nothing to compare")
        order = wanted
        extras: list[str] = []
    else:
        if not expected:
            raise UsageError("expected has no outputs: nothing to compare")
        order = list(expected)
        extras = [n for n in actual if n not in expected]
    pairs = []
    for n in order:
        a = _as_array(actual[n], "actual", n) if n in actual else None
        pairs.append((n, a, _as_array(expected[n], "expected", n)))
    for n in extras:
        pairs.append((n, _as_array(actual[n], "actual", n), None))
    return pairs


def _as_array(x, side: str, name: str) -> np.ndarray:
    if isinstance(x, np.ndarray):
        arr = x
    else:
        try:
            arr = np.asarray(x)
        except Exception as exc:  # e.g. a CUDA tensor
            raise UsageError(
                f"{side} output {name!r} ({type(x).__name__}) cannot be read as a numpy array: {exc}"
            ) from exc
    if _category(arr.dtype) is None:
        raise UsageError(
            f"{side} output {name!r} has dtype {arr.dtype}, which cannot be compared: "
            "only float (incl. bfloat16), integer and bool outputs are supported"
        )
    return arr


def _names(names: Iterable[str]) -> str:
    return ", ".join(repr(n) for n in names) or "(none)"


def _per_output(what: str, value, default, names: list[str], *, tolerance: bool = False) -> dict[str, Any]:
    if isinstance(value, Mapping):
        unknown = [k for k in value if k not in names]
        if unknown:
            raise UsageError(
                f"{what} names {_names(unknown)}, which {'is' if len(unknown) == 1 else 'are'} not "
                f"compared; outputs compared: {_names(names)}"
            )
        # None for a name means "the default", like leaving the name out
        out = {n: (default if value.get(n) is None else value[n]) for n in names}
    else:
        out = {n: (default if value is None else value) for n in names}
    for n, v in out.items():
        if v is None:
            if tolerance:  # a tolerance always has a value: None here would compare against NaN
                raise UsageError(f"{what} for output {n!r} is missing (None): give a number")
            continue
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise UsageError(f"{what} for output {n!r} must be a number, got {v!r}")
        v = float(v)
        if math.isnan(v) or (tolerance and v < 0):
            raise UsageError(
                f"{what} for output {n!r} must be a {'non-negative ' if tolerance else ''}number, "
                f"not {v!r}"
            )
        out[n] = v
    return out


def _category(dt: np.dtype) -> str | None:
    if dt.kind == "b":
        return "bool"
    if dt.kind in "iu":
        return "int"
    if dt.kind == "f":
        return "float"
    if dt.kind == "V" and dt.name.startswith(_ML_FLOAT_PREFIXES):
        return "float"  # ml_dtypes: bfloat16, float8_*, ...
    return None


def _working_dtype(a: np.ndarray, e: np.ndarray) -> np.dtype:
    if any(x.dtype.kind == "f" and x.dtype.itemsize >= 8 for x in (a, e)):
        return np.dtype(np.float64)
    return np.dtype(np.float32)


def _block_elems(dt: np.dtype, n: int | None = None) -> int:
    """Elements per block for working dtype ``dt``; no more than ``n`` (small outputs get
    small scratch buffers)."""
    b = max(1, _BLOCK_BYTES // dt.itemsize)
    return b if n is None else max(1, min(b, n))


# --------------------------------------------------------------------------------------
# One output
# --------------------------------------------------------------------------------------


def _compare_one(name, a, e, *, rtol, atol, equal_nan, min_cosine, min_snr_db, details,
                 default_cosine: bool = False) -> OutputComparison:
    if a is None or e is None:
        present = a if a is not None else e
        oc = OutputComparison(
            name=name, shape=tuple(present.shape), dtype=str(present.dtype), passed=False,
            mismatched=0, total=int(present.size), atol=atol, rtol=rtol, kind=_category(present.dtype),
        )
        if a is None:
            oc.problem = "missing"
            oc.problem_detail = (
                f"missing from actual; expected has it: shape {_fmt_shape(e.shape)} {e.dtype}"
            )
        else:
            oc.problem = "extra"
            oc.actual_shape, oc.actual_dtype = oc.shape, oc.dtype
            oc.problem_detail = (
                f"present in actual (shape {_fmt_shape(a.shape)} {a.dtype}) but not in expected: "
                "no reference to compare with"
            )
        return oc

    ka, ke = _category(a.dtype), _category(e.dtype)
    oc = OutputComparison(
        name=name, shape=tuple(e.shape), dtype=str(e.dtype), passed=True, mismatched=0,
        total=int(e.size), atol=atol, rtol=rtol, kind=ke,
        actual_shape=tuple(a.shape), actual_dtype=str(a.dtype),
        min_cosine=min_cosine, min_snr_db=min_snr_db,
    )
    if ka != ke:
        oc.passed = False
        oc.problem = "dtype"
        oc.problem_detail = (
            f"dtype kind mismatch: actual {a.dtype} ({ka}) vs expected {e.dtype} ({ke})"
        )
        return oc
    if a.shape != e.shape:
        oc.passed = False
        oc.problem = "shape"
        hint = " (same number of elements: reshape if intended)" if a.size == e.size else ""
        oc.problem_detail = (
            f"shape mismatch: actual {_fmt_shape(a.shape)} vs expected {_fmt_shape(e.shape)}{hint}"
        )
        return oc
    if ke != "float":
        oc.atol = oc.rtol = 0.0
        ok = _fast_exact(a, e)
        if not ok or details:
            _detail_exact(oc, a, e)
        return oc

    if default_cosine and e.size and not _beyond_atol(e, atol):
        # numerically zero at this tolerance: no direction to compare, the element rule judges it
        min_cosine = oc.min_cosine = None
    W = _working_dtype(a, e)
    want_metrics = details or min_cosine is not None or min_snr_db is not None
    ok = _fast_float(a, e, W, rtol, atol) if e.size else True
    if not ok or details:
        _detail_float(oc, a, e, W, rtol, atol, equal_nan)
    elif want_metrics:
        sums = _metric_sums(a, e)
        oc.cosine, oc.snr_db, oc.metric_elements = sums.cosine(), sums.snr_db(), sums.n
    # Metric thresholds need something finite to measure; an empty or all-non-finite
    # output is left to the element check.
    if oc.metric_elements:
        if min_cosine is not None and not oc.cosine >= min_cosine:
            what = " (the precision's default floor)" if default_cosine else ""
            oc.metric_failures.append(f"cosine similarity {_fmt_cos(oc.cosine)} < min_cosine {min_cosine:g}{what}")
        if min_snr_db is not None and not oc.snr_db >= min_snr_db:
            oc.metric_failures.append(f"SNR {_fmt_db(oc.snr_db)} < min_snr_db {min_snr_db:g} dB")
    if oc.metric_failures:
        oc.passed = False
    return oc


def _beyond_atol(e: np.ndarray, atol: float) -> bool:
    """Whether some finite element of the reference exceeds ``atol`` in magnitude."""
    with np.errstate(invalid="ignore", over="ignore"):
        mag = np.abs(np.asarray(e, dtype=np.float64) if e.dtype.kind == "V" else e)
        return bool(np.any(np.isfinite(mag) & (mag > atol)))


# --------------------------------------------------------------------------------------
# Block iteration
# --------------------------------------------------------------------------------------


def _iter_blocks(a: np.ndarray, e: np.ndarray, W: np.dtype | None, block: int, order: str):
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
    kw = {}
    if W is not None:
        kw = {"op_dtypes": [W, W], "casting": "unsafe"}
    it = np.nditer(
        [a, e], flags=["external_loop", "buffered", "zerosize_ok"],
        op_flags=[["readonly", "contig"], ["readonly", "contig"]],
        buffersize=block, order=order, **kw,
    )
    s = 0
    for ab, eb in it:
        m = ab.shape[0]
        for k in range(0, m, block):  # nditer never exceeds buffersize here; guard anyway
            yield s + k, ab[k:k + block], eb[k:k + block]
        s += m


def _fast_float(a, e, W, rtol, atol) -> bool:
    """True iff every element is proven to pass. False means "maybe not": NaN, Inf or a
    violation somewhere; the detailed pass decides."""
    B = _block_elems(W, e.size)
    sub, ab_, mul, mx = np.subtract, np.abs, np.multiply, np.maximum
    with np.errstate(all="ignore"):  # also: tolerances beyond float32's range become inf
        d = np.empty(B, W)
        t = np.empty(B, W)
        c = np.full(B, atol, W)
        r = W.type(rtol)
        for _, ab, eb in _iter_blocks(a, e, W, B, "K"):
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


def _fast_exact(a, e) -> bool:
    if e.size == 0:
        return True
    B = _block_elems(np.dtype(np.float32), e.size)
    buf = np.empty(B, bool)
    for _, ab, eb in _iter_blocks(a, e, None, B, "K"):
        bb = buf[: ab.shape[0]]
        np.not_equal(ab, eb, out=bb)
        if bb.any():
            return False
    return True


# --------------------------------------------------------------------------------------
# Detailed pass
# --------------------------------------------------------------------------------------


class _Acc:
    """Accumulates the figures of one output over C-ordered blocks.

    Element records are ``(flat_index, actual, expected, abs_err, rel_err)``; "best" slots
    hold ``(key, record)``. Blocks arrive in C order and only a strictly larger key
    replaces a best, so ties resolve to the first element in C order (``np.argmax``'s rule).
    """

    def __init__(self, shape, a_type, e_type):
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
            sel = range(pos.size)
        cands = [self._rec(start, pos[j], ab, eb, abs_err, rel) for j in sel]
        self.top = sorted(self.top + cands, key=lambda r: (-r[3], r[0]))[:TABLE_ROWS]

    def finish(self, oc: OutputComparison) -> None:
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


class _MetricSums:
    """Float64 sums of ``a*e``, ``a*a``, ``e*e`` and ``(a-e)^2`` for cosine and SNR, overflow- and underflow-proof.

    Each sum is kept as ``mantissa * 2**exponent``: a block is scaled by powers of two (exact)
    so its largest element is in [0.5, 1) before squaring, and its partial sums are merged
    at the larger exponent. Plain float64 sums overflow for |x| > 1e154 (``[1e200]`` vs
    ``[1.0]`` made the SNR ``log10(0)``, a ValueError) and underflow to zero for |x| < 1e-162
    (two opposite tiny vectors looked "equal": cosine 1, SNR inf).
    """

    __slots__ = ("m", "k", "n", "_scratch")

    AE, AA, EE, DD = range(4)

    def __init__(self):
        self.m = [0.0, 0.0, 0.0, 0.0]
        self.k = [0, 0, 0, 0]
        self.n = 0
        self._scratch = None

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


def _metric_args(actual, expected):
    a = _as_array(actual, "actual", "array")
    e = _as_array(expected, "expected", "array")
    if a.shape != e.shape:
        raise UsageError(f"shape mismatch: actual {_fmt_shape(a.shape)} vs expected {_fmt_shape(e.shape)}")
    return a, e


def _metric_sums(a: np.ndarray, e: np.ndarray) -> _MetricSums:
    """Float64 sums over the elements finite on both sides, blocked."""
    f64 = np.dtype(np.float64)
    B = _block_elems(f64, e.size)
    sums = _MetricSums()
    with np.errstate(all="ignore"):
        for _, ab, eb in _iter_blocks(a, e, f64, B, "K"):
            sums.add(ab, eb)
    return sums


def _scalar_converter(dt: np.dtype):
    if dt.kind == "b":
        return bool
    if dt.kind in "iu":
        return int
    return float


def _detail_float(oc, a, e, W, rtol, atol, equal_nan) -> None:
    B = _block_elems(W, e.size)
    with np.errstate(all="ignore"):
        r = W.type(rtol)
        at = W.type(atol)
    acc = _Acc(tuple(e.shape), float, float)
    sums = _MetricSums()
    f64 = np.dtype(np.float64)
    d = np.empty(B, W)
    ae = np.empty(B, W)
    rel = np.empty(B, W)
    a64 = np.empty(B, f64)
    e64 = np.empty(B, f64)
    inf = W.type(np.inf)
    with np.errstate(all="ignore"):
        for start, ab, eb in _iter_blocks(a, e, W, B, "C"):
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
            acc.add(start, ab, eb, dd, rr, fail, None if allfin else nonfin_fail)
            # metrics in float64
            x = a64[:m]
            y = e64[:m]
            x[...] = ab
            y[...] = eb
            sums.add(x, y)
    acc.finish(oc)
    oc.needed_atol = acc.need_atol
    oc.needed_rtol = acc.need_rtol
    oc.cosine, oc.snr_db, oc.metric_elements = sums.cosine(), sums.snr_db(), sums.n


def _detail_exact(oc, a, e) -> None:
    f64 = np.dtype(np.float64)
    B = _block_elems(f64, e.size)
    acc = _Acc(tuple(e.shape), _scalar_converter(a.dtype), _scalar_converter(e.dtype))
    with np.errstate(all="ignore"):
        for start, ab, eb in _iter_blocks(a, e, None, B, "C"):
            fail = ab != eb
            dd = np.abs(ab.astype(f64) - eb.astype(f64))
            ae = np.abs(eb.astype(f64))
            rr = dd / ae
            rr[dd == 0] = 0
            acc.add(start, ab, eb, dd, rr, fail)
    acc.finish(oc)
    oc.nan_actual = oc.nan_expected = oc.inf_actual = oc.inf_expected = None


# --------------------------------------------------------------------------------------
# Formatting
# --------------------------------------------------------------------------------------


def _fmt_shape(shape) -> str:
    return "(" + ", ".join(str(int(s)) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def _fmt_index(index) -> str:
    return _fmt_shape(index)


def _fmt_pct(p: float) -> str:
    return f"{p:.3g}%"


def _fmt_tol(x: float) -> str:
    return f"{x:g}"


def _fmt_err(x) -> str:
    if x is None:
        return "n/a"
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.3g}"


def _fmt_up(x: float) -> str:
    """3 significant digits, rounded up: a tolerance that surely suffices."""
    if x == 0 or not math.isfinite(x):
        return _fmt_err(x)
    q = 10.0 ** (math.floor(math.log10(x)) - 2)
    for digits in (3, 4, 6, 9, 17):
        txt = f"{math.ceil(x / q) * q:.{digits}g}"
        if float(txt) >= x:
            return txt
    return repr(x)


def _fmt_cos(x) -> str:
    if x is None or math.isnan(x):
        return "nan"
    return f"{x:.8g}"


def _fmt_db(x) -> str:
    if x is None or math.isnan(x):
        return "nan dB"
    if math.isinf(x):
        return ("inf" if x > 0 else "-inf") + " dB"
    return f"{x:.1f} dB"


def _fmt_val(value, dtype_name: str | None) -> str:
    """Shortest repr that round-trips in the output's own dtype (float32 shows 1.0000001)."""
    if isinstance(value, bool | np.bool_):
        return str(bool(value))
    if isinstance(value, numbers.Integral):
        return str(int(value))
    v = float(value)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    try:
        dt = np.dtype(dtype_name) if dtype_name else np.dtype(np.float64)
        if dt.kind != "f":
            dt = np.dtype(np.float32)
    except TypeError:
        dt = np.dtype(np.float32)
    x = dt.type(v)
    if v == 0 or 1e-4 <= abs(v) < 1e7:
        return np.format_float_positional(x, unique=True, trim="-")
    return np.format_float_scientific(x, unique=True, trim="-")


def _json_num(x):
    return json_number(x)
