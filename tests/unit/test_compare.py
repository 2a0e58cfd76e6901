"""pytest_trt.compare: semantics, failure message content, and the blocked scans against a
straightforward numpy reference."""

from __future__ import annotations

import contextlib
import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pytest_trt.compare import (
    CompareResult,
    assert_close,
    compare_outputs,
    cosine_similarity,
    default_min_cosine,
    default_tolerances,
    scan,
    snr_db,
)
from pytest_trt.errors import AccuracyError, UsageError

nan, inf = float("nan"), float("inf")


@contextlib.contextmanager
def block_bytes(n: int):
    old = scan.BLOCK_BYTES
    scan.BLOCK_BYTES = n
    try:
        yield
    finally:
        scan.BLOCK_BYTES = old


def f32(*values):
    return np.array(values, dtype=np.float32)


# ---------------------------------------------------------------------------------------
# The reference: the documented rules applied to whole arrays, no blocks, no shortcuts.
# ---------------------------------------------------------------------------------------


def reference(a, e, rtol, atol, equal_nan=False):
    W = np.float64 if np.float64 in (a.dtype, e.dtype) else np.float32
    A = a.astype(W).reshape(-1)
    E = e.astype(W).reshape(-1)
    with np.errstate(all="ignore"):
        d = np.abs(A - E)
        fin = np.isfinite(A) & np.isfinite(E)
        nan_a, nan_e = np.isnan(A), np.isnan(E)
        nan_any = nan_a | nan_e
        both_nan = nan_a & nan_e
        infc = ~fin & ~nan_any
        fail_fin = fin & (d > W(atol)) & (d > W(rtol) * np.abs(E))
        fail_nan = nan_any & ~both_nan if equal_nan else nan_any
        fail_inf = infc & (A != E)
        fail = fail_fin | fail_nan | fail_inf
        abs_err = np.where(infc & (A == E), 0, d)
        if equal_nan:
            abs_err = np.where(both_nan, 0, abs_err)
        rel = abs_err / np.abs(E)
        rel = np.where(abs_err == 0, 0, rel)
        rel = np.where(fail_inf, np.inf, rel)
        over_r = fin & (d > W(rtol) * np.abs(E))
        over_a = fin & (d > W(atol))

    def first_max(x, mask=None):
        x = np.where(np.isnan(x), -1, x)
        if mask is not None:
            x = np.where(mask, x, -1)
        if x.size == 0 or x.max() < 0:
            return None
        flat = int(np.argmax(x))
        return tuple(int(i) for i in np.unravel_index(flat, e.shape)) if e.shape else ()

    numeric_fail = fail & ~(fail_nan | fail_inf)
    nonnum = np.flatnonzero(fail_nan | fail_inf)
    order = np.flatnonzero(numeric_fail)
    order = order[np.lexsort((order, -abs_err[order]))]  # largest abs first, ties by index
    table = list(nonnum[:10]) + list(order)
    table = [tuple(int(i) for i in np.unravel_index(f, e.shape)) if e.shape else () for f in table[:10]]
    return {
        "mismatched": int(fail.sum()),
        "worst_abs_index": first_max(abs_err),
        "worst_rel_index": first_max(rel),
        "mm_worst_abs_index": first_max(abs_err, numeric_fail),
        "mm_worst_rel_index": first_max(rel, numeric_fail),
        "table": table,
        "needed_atol": float(d[over_r].max()) if over_r.any() else 0.0,
        "needed_rtol": float(rel[over_a].max()) if over_a.any() else 0.0,
        "unfixable": int((fail_nan | fail_inf).sum()),
        "nan": (int(nan_a.sum()), int(nan_e.sum())),
        "inf": (int((~np.isfinite(A) & ~nan_a).sum()), int((~np.isfinite(E) & ~nan_e).sum())),
        "max_abs": None if first_max(abs_err) is None else float(np.nanmax(abs_err)),
    }


# ---------------------------------------------------------------------------------------
# Property: the blocked scans agree with the reference
# ---------------------------------------------------------------------------------------

TOLS = [(1e-5, 1e-5), (1e-2, 1e-3), (5e-2, 1e-2), (0.0, 0.0), (0.0, 0.5), (0.5, 0.0), (1e-3, inf)]
SPECIAL = [0.0, -0.0, nan, inf, -inf, 1e-30, 65504.0]


@st.composite
def array_pairs(draw):
    e_dtype = draw(st.sampled_from([np.float32, np.float16, np.float64]))
    a_dtype = draw(st.sampled_from([e_dtype, e_dtype, np.float32, np.float16]))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=9))
    width = {np.float16: 16, np.float32: 32, np.float64: 64}[np.dtype(e_dtype).type]
    finite = st.floats(-1e3, 1e3, width=width)
    e = draw(hnp.arrays(e_dtype, shape, elements=finite | st.sampled_from(SPECIAL)))
    scale = draw(st.sampled_from([0.0, 1e-6, 1e-4, 1e-3, 1e-2, 1.0]))
    noise = draw(hnp.arrays(np.float64, shape, elements=st.floats(-1, 1)))
    offset = draw(hnp.arrays(np.float64, shape, elements=st.sampled_from([0.0, 0.0, 0.0, 1e-4, -1e-3, 2.0])))
    with np.errstate(all="ignore"):
        a = np.asarray(e.astype(np.float64) * (1 + scale * noise) + offset).astype(a_dtype)
    pick = draw(hnp.arrays(np.int8, shape, elements=st.integers(0, 30)))
    for k, v in enumerate(SPECIAL):  # sprinkle special values into actual too
        a[pick == k] = v
    layout = draw(st.sampled_from(["c", "c", "transposed", "strided", "mixed"]))
    if layout == "transposed" and e.ndim >= 2:
        a, e = np.ascontiguousarray(a.T).T, np.ascontiguousarray(e.T).T  # F-ordered, same shape
    elif layout in ("strided", "mixed"):
        big_e = np.repeat(e[..., None], 2, axis=-1)[..., 0]  # a strided view of a copy
        e = big_e
        if layout == "strided":
            a = np.repeat(a[..., None], 2, axis=-1)[..., 0]
    return a, e


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pair=array_pairs(),
    tols=st.sampled_from(TOLS),
    equal_nan=st.booleans(),
    block=st.sampled_from([8, 32, 256, 1 << 18]),  # bytes per scratch buffer: 2, 8, 64 float32 ...
)
def test_blocked_paths_agree_with_reference(pair, tols, equal_nan, block):
    a, e = pair
    rtol, atol = tols
    ref = reference(a, e, rtol, atol, equal_nan)
    with block_bytes(block):
        W = scan.working_dtype(a, e)
        fast = scan.passes_float(a, e, W, rtol, atol) if e.size else True
        no_check = math.isinf(rtol) or math.isinf(atol)  # an infinite tolerance needs it
        quick = compare_outputs(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan, no_check=no_check)
        full = compare_outputs(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan, details=True, no_check=no_check)
    # the fast scan is sound: "passes" is never said of an output with a mismatch
    if fast:
        assert ref["mismatched"] == 0
    if ref["mismatched"] == 0 and ref["nan"] == (0, 0) and ref["inf"] == (0, 0):
        assert fast  # ... and complete for finite outputs
    for res in (quick, full):
        oc = res.outputs["output"]
        assert res.passed == (ref["mismatched"] == 0)
        assert oc.passed == res.passed
    oc = full.outputs["output"]
    assert oc.mismatched == ref["mismatched"]
    assert oc.worst_abs_index == ref["worst_abs_index"]
    assert oc.worst_rel_index == ref["worst_rel_index"]
    assert (oc.nan_actual, oc.nan_expected) == ref["nan"]
    assert (oc.inf_actual, oc.inf_expected) == ref["inf"]
    assert oc.unfixable == ref["unfixable"]
    assert oc.needed_atol == ref["needed_atol"]
    assert oc.needed_rtol == ref["needed_rtol"]
    if ref["max_abs"] is not None:
        assert oc.max_abs == ref["max_abs"]
    mm_abs = None if oc.mismatch_worst_abs is None else oc.mismatch_worst_abs.index
    mm_rel = None if oc.mismatch_worst_rel is None else oc.mismatch_worst_rel.index
    assert mm_abs == ref["mm_worst_abs_index"]
    assert mm_rel == ref["mm_worst_rel_index"]
    assert [el.index for el in oc.table] == ref["table"]
    if ref["mismatched"]:
        q = quick.outputs["output"]  # a failing output always gets the details
        assert q.mismatched == ref["mismatched"] and q.worst_abs_index == ref["worst_abs_index"]
    json.dumps(full.to_json(), allow_nan=False)
    full.message()


@settings(max_examples=60, deadline=None)
@given(pair=array_pairs(), tols=st.sampled_from(TOLS[:3]))
def test_needed_atol_is_the_smallest_atol_that_passes(pair, tols):
    a, e = pair
    rtol, atol = tols
    oc = compare_outputs(a, e, rtol=rtol, atol=atol, details=True).outputs["output"]
    if oc.unfixable or not math.isfinite(oc.needed_atol):
        return
    assert compare_outputs(a, e, rtol=rtol, atol=oc.needed_atol).passed
    if oc.needed_atol > 0:
        smaller = float(np.nextafter(scan.working_dtype(a, e).type(oc.needed_atol), -1))
        assert not compare_outputs(a, e, rtol=rtol, atol=smaller).passed


@settings(max_examples=60, deadline=None)
@given(
    dtypes=st.sampled_from([(np.int64, np.int64), (np.int32, np.int64), (np.uint8, np.int16), (bool, bool)]),
    shape=hnp.array_shapes(min_dims=1, max_dims=2, max_side=12),
    data=st.data(),
    block=st.sampled_from([8, 64, 1 << 18]),
)
def test_exact_outputs_agree_with_reference(dtypes, shape, data, block):
    a_dt, e_dt = dtypes
    e = data.draw(hnp.arrays(e_dt, shape, elements=st.integers(0, 3) if e_dt is not bool else None))
    a = data.draw(hnp.arrays(a_dt, shape, elements=st.integers(0, 3) if a_dt is not bool else None))
    if data.draw(st.booleans()) and e.ndim == 2:
        a, e = np.asfortranarray(a), np.asfortranarray(e)
    with block_bytes(block):
        oc = compare_outputs(a, e, details=True).outputs["output"]
    fail = a.astype(np.int64) != e.astype(np.int64)
    assert oc.passed == (not fail.any()) and oc.mismatched == int(fail.sum())
    d = np.abs(a.astype(np.float64) - e.astype(np.float64))
    assert oc.worst_abs_index == (np.unravel_index(int(np.argmax(d)), shape) if d.size else None)
    if fail.any():
        first = np.unravel_index(int(np.flatnonzero(fail & (d == d.max()))[0]), shape)
        assert oc.mismatch_worst_abs.index == tuple(int(i) for i in first)


def test_worst_index_found_in_a_late_block_of_a_large_array():
    e = np.linspace(-3, 3, 300_000, dtype=np.float32).reshape(3, 100_000)  # several 64K blocks
    a = e.copy()
    a[2, 99_998] += 1.0
    a[0, 5] += 0.5
    res = compare_outputs(a, e)
    oc = res.outputs["output"]
    assert oc.mismatched == 2
    assert oc.worst_abs_index == (2, 99_998)
    assert [el.index for el in oc.table] == [(2, 99_998), (0, 5)]


def test_non_contiguous_views_report_indices_of_the_view():
    base = np.zeros((4, 6), np.float32)
    e = base.T  # (6, 4), F-ordered view
    a = np.zeros((6, 4), np.float32)
    a[5, 1] = 1.0
    oc = compare_outputs(a, e).outputs["output"]
    assert oc.worst_abs_index == (5, 1)
    assert oc.worst_abs_values == (1.0, 0.0)
    a2 = np.zeros((6, 8), np.float32)[:, ::2]  # strided actual against the transposed view
    a2[4, 3] = np.nan
    oc = compare_outputs(a2, e).outputs["output"]
    assert oc.mismatched == 1 and oc.table[0].index == (4, 3) and oc.nan_actual == 1


# ---------------------------------------------------------------------------------------
# Element semantics
# ---------------------------------------------------------------------------------------


def test_fails_only_when_both_tolerances_are_exceeded():
    e = f32(100.0, 0.001, 1.0)
    # elem 0: abs err 0.5 > atol but within rtol; elem 1: rel err 1 > rtol but within atol
    a = f32(100.5, 0.002, 1.0)
    assert compare_outputs(a, e, rtol=1e-2, atol=2e-3).passed
    a = f32(100.0, 0.001, 1.15)  # 0.15 > 0.1 and > 0.1 * 1
    res = compare_outputs(a, e, rtol=0.1, atol=0.1)
    assert not res.passed and res.outputs["output"].mismatched == 1
    # numpy's additive rule would pass it: |a-e| <= atol + rtol*|e| = 0.2
    assert np.allclose(a, e, rtol=0.1, atol=0.1)


def test_expected_is_the_denominator():
    # rel err 1.0 against expected=1 (fails rtol 0.6), 0.5 against the other side
    e, a = f32(1.0), f32(2.0)
    assert not compare_outputs(a, e, rtol=0.6, atol=0.0).passed
    assert compare_outputs(e, a, rtol=0.6, atol=0.0).passed


def test_nan_never_equals_nan_unless_equal_nan():
    a, e = f32(1.0, nan), f32(1.0, nan)
    res = compare_outputs(a, e)
    assert not res.passed
    oc = res.outputs["output"]
    assert oc.mismatched == 1 and oc.nan_actual == 1 and oc.nan_expected == 1
    assert compare_outputs(a, e, equal_nan=True).passed
    # NaN on one side only fails even with equal_nan and infinite tolerances
    assert not compare_outputs(f32(nan), f32(1.0), equal_nan=True, atol=inf, no_check=True, rtol=inf).passed
    assert not compare_outputs(f32(1.0), f32(nan), equal_nan=True, atol=inf, no_check=True).passed


def test_infinities():
    assert compare_outputs(f32(inf, -inf, 1.0), f32(inf, -inf, 1.0)).passed
    assert not compare_outputs(f32(inf), f32(-inf)).passed
    # inf against finite fails whatever the tolerances
    assert not compare_outputs(f32(inf), f32(1.0), atol=inf, no_check=True, rtol=inf).passed
    assert not compare_outputs(f32(1.0), f32(inf), atol=inf, no_check=True, rtol=inf).passed
    oc = compare_outputs(f32(1.0, 2.0), f32(inf, 2.0)).outputs["output"]
    assert oc.unfixable == 1 and oc.inf_expected == 1 and oc.inf_actual == 0
    assert oc.table[0].index == (0,) and oc.table[0].rel_err == inf


def test_zero_expected_needs_atol():
    e = f32(0.0, 0.0, 1.0)
    assert compare_outputs(f32(5e-4, -5e-4, 1.0), e, rtol=0.5, atol=1e-3).passed
    res = compare_outputs(f32(2e-3, 0.0, 1.0), e, rtol=0.5, atol=1e-3)
    oc = res.outputs["output"]
    assert not res.passed and oc.mismatched == 1
    assert oc.mismatch_worst_rel.rel_err == inf
    assert oc.needed_rtol == inf
    msg = res.message()
    assert "no finite rtol" in msg and "atol >= 0.002" in msg


def test_exact_comparison_of_ints_and_bools():
    res = compare_outputs({"ids": np.array([1, 2, 3], np.int64), "m": np.array([True, False])},
                          {"ids": np.array([1, 2, 4], np.int32), "m": np.array([True, True])},
                          atol=100.0, rtol=100.0)
    assert res.failed_outputs == ["ids", "m"]
    ids = res.outputs["ids"]
    assert ids.kind == "int" and ids.mismatched == 1 and ids.worst_abs_values == (3, 4)
    m = res.outputs["m"]
    assert m.mismatched == 1 and m.table[0].index == (1,)
    assert m.table[0].actual is False and m.table[0].expected is True
    assert compare_outputs(np.arange(5, dtype=np.int32), np.arange(5, dtype=np.int64)).passed
    msg = res.message()
    assert "compared exactly" in msg and "'ids'" in msg and "'m'" in msg


def test_float16_actual_against_float32_reference():
    e = np.linspace(-2, 2, 1000, dtype=np.float32)
    a = e.astype(np.float16)
    assert not compare_outputs(a, e).passed  # fp32 defaults: fp16 rounding is 4.9e-4
    res = compare_outputs(a, e, precision="fp16")
    assert res.passed
    oc = compare_outputs(a, e, precision="fp16", details=True).outputs["output"]
    assert oc.actual_dtype == "float16" and oc.dtype == "float32"
    assert 0 < oc.max_abs <= 2.0 ** -10  # half an ulp of fp16 at [1, 2)


def test_bfloat16_outputs():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    e = np.linspace(-2, 2, 100, dtype=np.float32)
    a = e.astype(ml_dtypes.bfloat16)
    assert not compare_outputs(a, e).passed
    assert compare_outputs(a, e, precision="bf16").passed
    assert compare_outputs(a, a.copy(), precision="fp32").passed


def test_empty_and_zero_dim():
    assert compare_outputs(np.zeros((0, 3), np.float32), np.zeros((0, 3), np.float32), min_cosine=0.9).passed
    res = compare_outputs(np.float32(2.0), np.float32(1.0))
    oc = res.outputs["output"]
    assert not res.passed and oc.worst_abs_index == () and oc.shape == ()
    assert "at ():" in res.message()


# ---------------------------------------------------------------------------------------
# Tolerances and arguments
# ---------------------------------------------------------------------------------------


def test_default_tolerances():
    assert default_tolerances("fp32") == (1e-5, 1e-5)
    assert default_tolerances("fp16") == (2e-2, 1e-2)
    assert default_tolerances("bf16") == (1e-1, 5e-2)
    assert default_tolerances("half") == default_tolerances("FP16")
    with pytest.raises(UsageError, match="unknown precision"):
        default_tolerances("int8")
    with pytest.raises(UsageError):
        compare_outputs(f32(1), f32(1), precision="fp8")


def test_default_cosine_floor_fails_a_wrong_direction_the_element_rule_passes():
    # every element within the FP16 element rule (|err| <= atol = 1e-2), but the output
    # points elsewhere: the precision's default cosine floor (0.9999) fails it
    e = np.full(1000, 0.02, np.float32)
    e[::2] = -0.02
    a = e + np.float32(0.009) * np.sign(np.arange(1000) % 3 - 1, dtype=np.float32)
    res = compare_outputs(a, e, precision="fp16")
    oc = res.outputs["output"]
    assert not res.passed and oc.mismatched == 0
    assert oc.min_cosine == default_min_cosine("fp16") == 0.9999
    assert "default floor" in res.message()
    assert compare_outputs(a, e, precision="fp16", min_cosine=-1).passed  # explicit value replaces it
    assert compare_outputs(a, e, precision="fp32", atol=1e-2).passed  # fp32 has no floor
    assert default_min_cosine("fp32") is None


def test_default_cosine_floor_skips_outputs_numerically_zero():
    # a reference within atol of zero everywhere has no direction: only the element rule applies
    e = np.zeros(100, np.float32)
    a = np.full(100, 1e-4, np.float32)
    res = compare_outputs(a, e, precision="bf16")
    assert res.passed and res.outputs["output"].min_cosine is None
    # an explicit floor still applies
    assert not compare_outputs(a, e, precision="bf16", min_cosine=0.9).passed


def test_precision_selects_defaults_and_explicit_values_win():
    e = f32(1.0)
    a = f32(1.015)
    assert not compare_outputs(a, e).passed
    assert compare_outputs(a, e, precision="fp16").passed
    assert not compare_outputs(a, e, precision="fp16", rtol=1e-3).passed
    oc = compare_outputs(a, e, precision="fp16", rtol=1e-3).outputs["output"]
    assert (oc.rtol, oc.atol) == (1e-3, 1e-2)


def test_per_output_tolerances_fall_back_to_defaults():
    e = {"x": f32(1.0), "y": f32(1.0)}
    a = {"x": f32(1.05), "y": f32(1.05)}
    res = compare_outputs(a, e, rtol={"x": 0.1})
    assert res.failed_outputs == ["y"]
    assert res.outputs["x"].rtol == 0.1 and res.outputs["y"].rtol == 1e-5
    res = compare_outputs(a, e, rtol={"x": 0.1}, atol={"y": 0.1})
    assert res.passed
    # the criterion says which output got which tolerance, and where each came from
    assert "rtol per output: 'x' 0.1 (argument), 'y' 1e-05 (fp32 default)" in compare_outputs(
        a, e, rtol={"x": 0.1}).message()


def test_tolerance_dict_with_unknown_name_is_a_usage_error():
    with pytest.raises(UsageError, match=r"'lgits'.*outputs compared: 'logits'"):
        compare_outputs({"logits": f32(1)}, {"logits": f32(1)}, atol={"lgits": 1.0})


@pytest.mark.parametrize("bad", [-1e-3, nan, True, "0.1"])
@pytest.mark.parametrize("which", ["rtol", "atol"])
def test_invalid_tolerances_name_the_output(which, bad):
    with pytest.raises(UsageError, match=rf"{which} for output 'logits'"):
        compare_outputs({"logits": f32(1)}, {"logits": f32(1)}, **{which: bad})
    with pytest.raises(UsageError, match=rf"{which} for output 'pooled'"):
        assert_close({"logits": f32(1), "pooled": f32(1)}, {"logits": f32(1), "pooled": f32(1)},
                     **{which: {"pooled": bad}})


def test_argument_shapes():
    with pytest.raises(UsageError, match="both be arrays or both be dicts"):
        compare_outputs({"x": f32(1)}, f32(1))
    with pytest.raises(UsageError, match="cannot be compared"):
        compare_outputs(np.array(["a"]), np.array(["a"]))
    with pytest.raises(UsageError, match="complex|cannot be compared"):
        compare_outputs(np.ones(2, np.complex64), np.ones(2, np.complex64))
    res = compare_outputs([1.0, 2.0], [1.0, 2.0], names="logits")
    assert list(res.outputs) == ["logits"]
    with pytest.raises(UsageError, match="names lists 'nope'"):
        compare_outputs({"x": f32(1)}, {"x": f32(1)}, names=["nope"])
    with pytest.raises(UsageError, match="nothing to compare"):
        compare_outputs({"x": f32(1)}, {"x": f32(1)}, names=[])
    with pytest.raises(UsageError, match="nothing to compare"):
        compare_outputs({}, {})
    with pytest.raises(UsageError, match="one output name"):
        compare_outputs(f32(1), f32(1), names=["a", "b"])


def test_names_restrict_and_order_the_outputs():
    e = {"a": f32(1), "b": f32(2), "c": f32(3)}
    a = {"a": f32(1), "b": f32(9), "c": f32(3), "extra": f32(0)}
    res = compare_outputs(a, e, names=["c", "a"])
    assert list(res.outputs) == ["c", "a"] and res.passed


# ---------------------------------------------------------------------------------------
# Structural mismatches
# ---------------------------------------------------------------------------------------


def test_structural_mismatches_have_their_own_messages():
    e = {"logits": np.zeros((1, 10), np.float32), "ids": np.zeros(3, np.int64),
         "mask": np.zeros((2, 3), np.float32), "gone": np.zeros(4, np.float32)}
    a = {"logits": np.zeros((1, 11), np.float32), "ids": np.zeros(3, np.float32),
         "mask": np.zeros((3, 2), np.float32), "new": np.zeros(2, np.float16)}
    res = compare_outputs(a, e)
    assert res.failed_outputs == ["logits", "ids", "mask", "gone", "new"]
    problems = {n: o.problem for n, o in res.outputs.items()}
    assert problems == {"logits": "shape", "ids": "dtype", "mask": "shape", "gone": "missing", "new": "extra"}
    msg = res.message()
    assert "5 of 5 output(s) differ" in msg
    assert "output 'logits': shape mismatch: actual (1, 11) vs expected (1, 10)" in msg
    assert "output 'ids': dtype kind mismatch: actual float32 (float) vs expected int64 (int)" in msg
    assert "actual (3, 2) vs expected (2, 3) (same number of elements" in msg
    assert "output 'gone': missing from actual; expected has it: shape (4,) float32" in msg
    assert "output 'new': present in actual (shape (2,) float16) but not in expected" in msg
    with pytest.raises(AccuracyError):
        assert_close(a, e)


# ---------------------------------------------------------------------------------------
# The failure message
# ---------------------------------------------------------------------------------------


def _two_failing_outputs():
    rng = np.random.default_rng(1)
    e = {
        "logits": rng.standard_normal((2, 50)).astype(np.float32),
        "pooled": rng.standard_normal((2, 8)).astype(np.float32),
        "hidden": rng.standard_normal((3, 4)).astype(np.float32),
    }
    a = {k: v.copy() for k, v in e.items()}
    e["logits"][1, 7] = 0.25
    a["logits"][1, 7] = 0.75  # abs 0.5, rel 2
    e["logits"][0, 3] = 0.0
    a["logits"][0, 3] = 0.01  # rel inf
    a["logits"][1, 20] = np.nan
    a["hidden"][2, 1] += 3.0
    return a, e


def test_message_lists_every_failing_output_with_figures():
    a, e = _two_failing_outputs()
    with pytest.raises(AccuracyError) as info:  # the pre-calibration FP16 tolerances: figures below depend on them
        assert_close(a, e, precision="fp16", rtol=1e-2, atol=1e-3)
    err = info.value
    assert isinstance(err, AssertionError)
    res = err.result
    assert isinstance(res, CompareResult) and res.failed_outputs == ["logits", "hidden"]
    msg = str(err)
    assert msg.startswith("2 of 3 output(s) differ from the reference [precision fp16; rtol=0.01, atol=0.001")
    assert "fails when |actual - expected| > atol and > rtol * |expected|" in msg
    assert "NaN never equals NaN" in msg
    # logits
    assert "output 'logits': shape (2, 50) float32: 3 of 100 elements mismatched (3%)" in msg
    assert "worst abs error: 0.5 at (1, 7): actual 0.75, expected 0.25 (rel err 2)" in msg
    assert "worst rel error: inf at (0, 3): actual 0.01, expected 0 (abs err 0.01)" in msg
    assert "NaN: actual 1, expected 0; Inf: actual 0, expected 0" in msg
    assert "no tolerance passes the 1 NaN/Inf mismatch(es)" in msg
    assert "atol >= 0.5 at rtol=0.01" in msg
    assert "abs error of the mismatched elements: max 0.5, mean 0.255, p99 0.5" in msg
    assert "cosine similarity" in msg and "SNR" in msg
    # table: NaN first, then by abs error
    lines = msg.splitlines()
    head = next(i for i, line in enumerate(lines) if "mismatches (all 3" in line)
    assert lines[head + 1].split() == ["index", "actual", "expected", "abs", "err", "rel", "err"]
    assert lines[head + 2].split()[:3] == ["(1,", "20)", "nan"]
    assert lines[head + 3].split()[:4] == ["(1,", "7)", "0.75", "0.25"]
    assert lines[head + 4].split()[:4] == ["(0,", "3)", "0.01", "0"]
    # hidden: listed too, not only the first failing output
    assert "output 'hidden': shape (3, 4) float32: 1 of 12 elements mismatched" in msg
    assert "at (2, 1)" in msg
    # passing outputs: one line each
    assert "passed: 'pooled' (2, 8) float32: 0 of 16 mismatched" in msg


def test_message_values_use_the_dtype_shortest_repr():
    e = f32(1.0)
    a = f32(np.nextafter(np.float32(1.0), np.float32(2.0)) * 1.0)
    msg = compare_outputs(a, e, rtol=0, atol=0).message()
    assert "actual 1.0000001, expected 1" in msg


def test_table_is_capped():
    e = np.zeros(50, np.float32)
    a = np.arange(50, dtype=np.float32)
    oc = compare_outputs(a, e).outputs["output"]
    assert len(oc.table) == 10 and oc.table[0].index == (49,) and oc.table[-1].index == (40,)
    msg = compare_outputs(a, e).message()
    assert "mismatches (first 10 of 49" in msg
    assert "... 39 more mismatched element(s)" in msg


def test_worst_over_all_elements_is_labelled_when_within_tolerance():
    e = f32(1000.0, 0.5, 1e-9)
    a = f32(1005.0, 0.8, 1e-6)  # 5.0 within rtol; 0.3 fails; rel 999 within atol
    res = compare_outputs(a, e, rtol=0.01, atol=1e-3)
    oc = res.outputs["output"]
    assert oc.worst_abs_index == (0,) and oc.mismatch_worst_abs.index == (1,)
    assert oc.worst_rel_index == (2,)
    assert "over all elements, incl. those within tolerance: max abs err 5 at (0,)" in res.message()


def test_metric_thresholds():
    e = np.linspace(1, 2, 100, dtype=np.float32)
    a = e * np.float32(1.001)  # noise = 1e-3 * signal: SNR 60 dB
    res = compare_outputs(a, e, atol=inf, no_check=True, min_cosine=0.99, min_snr_db=65)
    oc = res.outputs["output"]
    assert not res.passed and oc.mismatched == 0
    assert oc.cosine == pytest.approx(1.0) and oc.snr_db == pytest.approx(60.0, abs=0.1)
    assert oc.metric_failures == ["SNR 60.0 dB < min_snr_db 65 dB"]
    assert "FAILED: SNR 60.0 dB < min_snr_db 65 dB" in res.message()
    assert compare_outputs(a, e, atol=inf, no_check=True, min_cosine=0.99, min_snr_db=50).passed
    assert compare_outputs(a, e, atol=inf, no_check=True, min_snr_db={"output": 50}).passed
    assert not compare_outputs(-a, e, atol=inf, no_check=True, min_cosine=0.5).passed  # cosine -1
    # metric thresholds add to the element check, they do not replace it
    assert not compare_outputs(a, e, min_snr_db=50).passed


def test_metric_helpers():
    assert cosine_similarity(f32(1, 0), f32(0, 1)) == 0.0
    assert cosine_similarity(f32(1, 2), f32(2, 4)) == pytest.approx(1.0)
    assert cosine_similarity(f32(0, 0), f32(0, 0)) == 1.0
    assert snr_db(f32(1, 2), f32(1, 2)) == inf
    assert snr_db(f32(2, 4), f32(1, 2)) == pytest.approx(0.0)
    assert snr_db(f32(1.1, 2.2), f32(1, 2)) == pytest.approx(20.0)
    assert cosine_similarity(f32(1, nan, 3), f32(1, 5, 3)) == pytest.approx(1.0)  # finite only
    assert math.isnan(snr_db(f32(nan), f32(1)))


def test_to_json_is_plain_json():
    a, e = _two_failing_outputs()
    data = compare_outputs(a, e, precision="fp16", rtol=1e-2, atol=1e-3).to_json()
    text = json.dumps(data, allow_nan=False)
    back = json.loads(text)
    assert back["passed"] is False and back["failed_outputs"] == ["logits", "hidden"]
    lg = back["outputs"]["logits"]
    for key in ("shape", "dtype", "passed", "mismatched", "total", "max_abs", "max_rel", "worst_abs_index",
                "worst_rel_index", "worst_abs_values", "worst_rel_values", "atol", "rtol", "needed_atol",
                "needed_rtol", "nan_actual", "nan_expected", "inf_actual", "inf_expected", "cosine", "snr_db"):
        assert key in lg
    assert lg["shape"] == [2, 50] and lg["mismatched"] == 3 and lg["max_rel"] == "inf"
    assert lg["mismatch"]["worst_abs"]["index"] == [1, 7]
    assert lg["mismatch"]["first"][0]["actual"] == "nan"
    # passing outputs: verdict only, figures null unless details were asked; the cosine is
    # computed for the precision's default floor (fp16: 0.9999)
    assert back["outputs"]["pooled"]["max_abs"] is None and back["outputs"]["pooled"]["cosine"] == 1.0
    assert back["outputs"]["pooled"]["min_cosine"] == 0.9999
    plain = compare_outputs(a, e, rtol=1e-2, atol=1e-3).to_json()  # fp32: no floor, nothing computed
    assert plain["outputs"]["pooled"]["cosine"] is None
    det = compare_outputs(a, e, precision="fp16", details=True).to_json()["outputs"]["pooled"]
    assert det["max_abs"] == 0.0 and det["cosine"] == 1.0 and det["snr_db"] == "inf"


def test_compare_outputs_never_raises_and_result_is_truthy():
    res = compare_outputs(f32(1.0), f32(2.0))
    assert not res and not res.passed
    assert compare_outputs(f32(1.0), f32(1.0))
    assert assert_close(f32(1.0), f32(1.0)).passed


# ---------------------------------------------------------------------------------------
# Infinite tolerances: refused unless no_check=True (issue 28, newcomer defect 2)
# ---------------------------------------------------------------------------------------
def _overflowed():
    """A LayerNorm-like output where two rows broke (max abs error ~9, cosine ~0.94)."""
    e = np.linspace(-2, 2, 256, dtype=np.float32).reshape(16, 16)
    a = e.copy()
    a[4] = 9.0
    return a, e


@pytest.mark.parametrize("kwargs", [{"atol": inf}, {"rtol": inf}, {"atol": {"output": inf}},
                                    {"rtol": inf, "atol": 1e-2}])
def test_an_infinite_tolerance_is_a_usage_error_naming_no_check(kwargs):
    """Before: compare_outputs/assert_close with atol=inf passed an output with a real overflow
    (the element rule passes every finite element, and the default cosine floor is dropped)."""
    a, e = _overflowed()
    for call in (compare_outputs, assert_close):
        with pytest.raises(UsageError, match=r"=inf \(output 'output'\) switches the accuracy check off.*"
                                             r"Pass no_check=True"):
            call(a, e, precision="fp16", **kwargs)


def test_no_check_gives_the_figures_without_a_tolerance_verdict():
    a, e = _overflowed()
    assert not compare_outputs(a, e, precision="fp16").passed
    result = assert_close(a, e, precision="fp16", no_check=True, details=True)
    oc = result.outputs["output"]
    assert result.no_check and result.to_json()["no_check"] is True
    assert oc.atol == inf and oc.rtol == inf and oc.max_abs > 5 and oc.cosine < 0.99
    assert "figures only" in result.message() and "no_check: no tolerance verdict" in result.message()
    # NaN/Inf mismatches, missing outputs and explicit floors still fail
    nan = a.copy()
    nan[0, 0] = np.nan
    assert not compare_outputs(nan, e, no_check=True).passed
    assert not compare_outputs({}, {"output": e}, no_check=True).passed
    assert not compare_outputs(a, e, no_check=True, min_cosine=0.99).passed
    # a tolerance given beside no_check keeps its element check for that output
    assert not compare_outputs(a, e, no_check=True, atol=1e-2, rtol=1e-2).passed
