"""The comparator at the edges of every float type (issue 15 item 7).

``compare_outputs`` / ``assert_close`` raise nothing but their documented errors
(``AccuracyError`` on a mismatch, ``UsageError`` on bad arguments): float16, float32,
float64 and bfloat16 outputs at extreme magnitudes (1e300, subnormals, inf, nan) give a
verdict, and every figure is finite or stated (JSON strings "inf"/"nan", the message says
so). Verdicts are checked against an exact oracle (``fractions.Fraction``) away from the
tolerance boundary, cosine and SNR against sums in extended precision.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from pytest_trt.compare import assert_close, compare_outputs, cosine_similarity, snr_db
from pytest_trt.errors import AccuracyError

try:
    import ml_dtypes

    BF16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover - onnx depends on ml_dtypes
    BF16 = None

DTYPES = [np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)] + ([BF16] if BF16 is not None else [])
EDGES = [0.0, -0.0, 1.0, -1.0, 5e-324, -5e-324, 1e-310, 1e-300, 1e-200, 1e-45, 6e-8, 65504.0, 65520.0, 3.4e38,
         1e155, 1e200, -1e200, 1e300, -1e300, 1.7976931348623157e308, -1.7976931348623157e308,
         math.inf, -math.inf, math.nan]
LONG_RANGE = np.finfo(np.longdouble).maxexp > 2000  # x86-64's 80-bit long double: the metric oracle's range

values64 = st.one_of(
    st.sampled_from(EDGES),
    st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True, width=64),
    st.floats(-10.0, 10.0),
)


@st.composite
def pairs(draw):
    dtype = draw(st.sampled_from(DTYPES))
    n = draw(st.integers(1, 12))
    a = np.array(draw(st.lists(values64, min_size=n, max_size=n)), dtype=np.float64)
    how = draw(st.sampled_from(["independent", "close", "same"]))
    if how == "independent":
        e = np.array(draw(st.lists(values64, min_size=n, max_size=n)), dtype=np.float64)
    elif how == "close":
        with np.errstate(all="ignore"):
            e = a * (1.0 + draw(st.floats(-1e-3, 1e-3)))
    else:
        e = a.copy()
    with np.errstate(all="ignore"):  # values beyond a type's range saturate to inf, as a cast does
        return a.astype(dtype), e.astype(dtype)


tolerances = st.one_of(st.sampled_from([0.0, 1e-5, 1e-3, 1e-2, 1.0, 1e300, math.inf]),
                       st.floats(0.0, 1e308, allow_subnormal=True))


def _finite_or_stated(result) -> None:
    text = json.dumps(result.to_json(), allow_nan=False)  # non-finite figures are the strings "inf"/"nan"
    assert text
    message = result.message()
    for oc in result.outputs.values():
        for figure in (oc.max_abs, oc.max_rel, oc.needed_atol, oc.needed_rtol, oc.mismatch_mean_abs,
                       oc.mismatch_p99_abs, oc.snr_db):
            assert figure is None or isinstance(figure, float)
        if oc.cosine is not None:
            assert math.isnan(oc.cosine) == (oc.metric_elements == 0)
            assert math.isnan(oc.cosine) or -1.0 <= oc.cosine <= 1.0
        if oc.snr_db is not None:
            assert math.isnan(oc.snr_db) == (oc.metric_elements == 0)
        if not oc.passed and oc.detailed:
            assert "no tolerance passes" in message or "would pass with" in message \
                or "no finite tolerance passes" in message or oc.metric_failures


def _exact_verdict(a: float, e: float, rtol: float, atol: float, equal_nan: bool) -> bool | None:
    """Does this element pass? None when it is too close to the boundary to say (the
    comparator rounds to the working precision)."""
    if math.isnan(a) or math.isnan(e):
        return equal_nan and math.isnan(a) and math.isnan(e)
    if math.isinf(a) or math.isinf(e):
        return a == e
    d = abs(Fraction(a) - Fraction(e))
    limits = [Fraction(atol)] if math.isfinite(atol) else []
    if math.isfinite(rtol):
        limits.append(Fraction(rtol) * abs(Fraction(e)))
    if not math.isfinite(atol) or (not math.isfinite(rtol) and e != 0):
        return True
    limit = max(limits)
    if d == 0 or limit == 0:
        return d <= limit
    ratio = d / limit
    if Fraction(99, 100) < ratio < Fraction(101, 100):
        return None
    return ratio <= 1


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pairs(), tolerances, tolerances, st.booleans(), st.booleans())
# found by Hypothesis: a subnormal needed atol (5e-324) made the "would pass with" rounding divide by 0
@example(pair=(np.array([0.0]), np.array([5e-324])), rtol=0.0, atol=0.0, details=False, equal_nan=False)
def test_any_float_dtype_at_any_magnitude_gives_a_verdict_and_stated_figures(pair, rtol, atol, details, equal_nan):
    a, e = pair
    no_check = math.isinf(rtol) or math.isinf(atol)  # an infinite tolerance needs it
    result = compare_outputs(a, e, rtol=rtol, atol=atol, details=details, equal_nan=equal_nan, no_check=no_check)
    _finite_or_stated(result)
    oc = result.outputs["output"]
    # the verdict against the exact rule, element by element, where the rule is unambiguous
    W = np.float64 if a.dtype == np.float64 else np.float32
    rt, at = float(W(rtol)) if rtol < 3.4e38 or W is np.float64 else math.inf, \
        float(W(atol)) if atol < 3.4e38 or W is np.float64 else math.inf
    verdicts = [_exact_verdict(float(x), float(y), rt, at, equal_nan) for x, y in zip(a.astype(np.float64), e.astype(np.float64), strict=True)]
    if all(v is not None for v in verdicts):
        assert oc.passed == all(verdicts), (a, e, rtol, atol, verdicts, result.message())
    # assert_close agrees with compare_outputs and raises only AccuracyError
    if oc.passed:
        assert_close(a, e, rtol=rtol, atol=atol, details=details, equal_nan=equal_nan, no_check=no_check)
    else:
        with pytest.raises(AccuracyError):
            assert_close(a, e, rtol=rtol, atol=atol, details=details, equal_nan=equal_nan, no_check=no_check)


@pytest.mark.skipif(not LONG_RANGE, reason="np.longdouble has float64's range here: no oracle for the metrics")
@settings(max_examples=300, deadline=None)
@given(pairs())
def test_cosine_and_snr_match_extended_precision_sums_at_any_magnitude(pair):
    a, e = pair
    fin = np.isfinite(a.astype(np.float64)) & np.isfinite(e.astype(np.float64))
    x, y = a.astype(np.float64)[fin].astype(np.longdouble), e.astype(np.float64)[fin].astype(np.longdouble)
    cos, snr = cosine_similarity(a, e), snr_db(a, e)
    if not fin.any():
        assert math.isnan(cos) and math.isnan(snr)
        return
    aa, ee, ae, dd = (x * x).sum(), (y * y).sum(), (x * y).sum(), ((x - y) ** 2).sum()
    assume(all(v == 0 or v > np.longdouble("1e-4900") for v in (aa, ee, dd)))  # the oracle's own underflow
    if aa == 0 and ee == 0:
        assert cos == 1.0
    elif aa == 0 or ee == 0:
        assert cos == 0.0
    else:
        assert cos == pytest.approx(float(ae / np.sqrt(aa * ee)), abs=1e-9)
    if dd == 0:
        assert snr == math.inf
    elif ee == 0:
        assert snr == -math.inf
    else:
        assert snr == pytest.approx(float(10 * np.log10(ee / dd)), abs=1e-6)


def test_float64_beyond_float32_range_no_longer_raises_math_domain_error():
    """Before: ``ValueError: math domain error`` from the SNR (float64 sums overflowed)."""
    result = compare_outputs(np.array([1e200]), np.array([1.0]), details=True)
    oc = result.outputs["output"]
    assert not result.passed
    assert oc.max_abs == pytest.approx(1e200) and oc.cosine == 1.0 and oc.snr_db == pytest.approx(-4000.0)
    assert "SNR -4000.0 dB" in result.message()
    with pytest.raises(AccuracyError, match="1 of 1 output"):
        assert_close(np.array([1e200]), np.array([1.0]))


def test_tiny_opposite_vectors_fail_min_cosine_instead_of_looking_equal():
    """Before: float64 sums underflowed to 0, so [1e-200, 2e-200] against its negation had
    cosine 1 and SNR inf: within atol elementwise, the metric check passed too (a false green)."""
    a = np.array([1e-200, 2e-200])
    result = compare_outputs(a, -a, min_cosine=0.99, min_snr_db=20)
    oc = result.outputs["output"]
    assert oc.cosine == pytest.approx(-1.0) and oc.snr_db == pytest.approx(-6.0206, abs=1e-3)
    assert not result.passed and len(oc.metric_failures) == 2


def test_overflowing_difference_is_stated():
    result = compare_outputs(np.array([1.7e308]), np.array([-1.7e308]), details=True)
    oc = result.outputs["output"]
    assert oc.max_abs == math.inf and oc.max_rel == pytest.approx(2.0) and not result.passed
    assert "would pass with rtol >= 2 at atol=1e-05" in result.message()
    assert compare_outputs(np.array([1.7e308]), np.array([-1.7e308]), rtol=2.0).passed
    assert json.loads(json.dumps(result.to_json(), allow_nan=False))["outputs"]["output"]["max_abs"] == "inf"


def test_infinite_rtol_does_not_pass_an_expected_zero_beyond_atol():
    """``inf * 0`` is NaN, and NaN compares False: an element whose reference is 0 passed
    whatever its error under ``rtol=inf``. The rule says it needs ``atol``."""
    for dtype in (np.float32, np.float64):
        result = compare_outputs(np.array([1.0, 5.0], dtype), np.array([0.0, 1.0], dtype), rtol=math.inf, atol=0.5, no_check=True)
        assert not result.passed and result.outputs["output"].mismatched == 1, result.message()
