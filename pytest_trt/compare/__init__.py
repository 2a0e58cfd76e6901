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
  others). To rely on a metric alone, pass ``no_check=True`` with the floor
  (``min_cosine=0.999``): without ``no_check`` an infinite ``atol`` / ``rtol`` is a usage error,
  since it switches the element check off (and with it the default cosine floor, below).

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
The passing path is one blocked scan: each output is processed in blocks of
``scan.BLOCK_BYTES`` per buffer with preallocated scratch, so no full-size temporary is
ever made and the scratch stays in cache (C-contiguous inputs in the working dtype are
sliced without a copy; other layouts and dtypes are copied and upcast a block at a time by
``np.nditer``'s buffers, in memory order). Per block::

    d = a - e;  block passes if max(d) <= atol and min(d) >= -atol
    otherwise:  block passes if max(|d| - max(rtol * |e|, atol)) <= 0
    floors:     e.e, e.d, d.d in float64 (three dot products, BLAS held to one thread)

``max`` and ``min`` propagate NaN and an infinite difference exceeds any finite bound, so
every NaN and infinity lands in the "not proven to pass" branch; so does any violation.
The same pass gives the cosine / SNR floors their sums (``metrics``: float64 sums of exact
float32 products; the exact, scaled sums where these are not accurate enough), so the
floors are checked on every passing output for about the cost of the element check. An
output not proven to pass (or asked for ``details=True``) gets the exact, detailed pass:
the rules above applied element by element, in C order, collecting the figures. On the
shared 2-core Xeon of the development machine the passing path with the fp16 defaults
costs about 3-3.5x the time to read both arrays once, the element check alone (fp32, no
floor) about 1.3x, and is 10-30x faster than ``numpy.testing.assert_allclose``
(``python bench/compare.py``; bench/RESULTS.md). The detailed pass is much slower (~1-2 s
for 5e7 elements with most of them mismatched): it only runs when there is something to
report.

Layout
------
``tolerances`` (defaults per precision), ``arguments`` (outputs paired by name, settings
per output), ``scan`` (the blocked passing path), ``blas`` (its single-threaded dot
products), ``metrics`` (cosine, SNR),
``figures`` (what was measured), ``detail`` (the detailed pass), ``messages`` (the
failure message), ``verdict`` (:func:`compare_outputs`, :func:`assert_close` and the
result types). Import from ``pytest_trt.compare``: the names below are the public surface.
"""

from __future__ import annotations

from .figures import TABLE_ROWS, Element
from .metrics import cosine_similarity, snr_db
from .tolerances import (
    DEFAULT_MIN_COSINE,
    DEFAULT_TOLERANCES,
    SEMANTICS,
    default_min_cosine,
    default_tolerances,
)
from .verdict import CompareResult, OutputComparison, assert_close, compare_outputs

__all__ = [
    "DEFAULT_MIN_COSINE",
    "DEFAULT_TOLERANCES",
    "SEMANTICS",
    "TABLE_ROWS",
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
