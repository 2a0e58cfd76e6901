"""The comparator's one-pass fast path (issue 33): the element verdict and the metric sums of
a passing output from one blocked scan, with float64 sums of float32 products, and the exact
path wherever that is not accurate enough.

The fast sums are checked against the exact, scaled sums (``exact_metric_sums``) for float16,
float32, float64 and bfloat16 outputs at extreme magnitudes, with blocks small enough that
every output spans many of them, on both dot functions (BLAS held to one thread, and
numpy's einsum). Timing is not asserted anywhere: ``bench/compare.py`` measures it.
"""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_trt.compare import blas, compare_outputs, scan, verdict
from pytest_trt.compare.metrics import exact_metric_sums, metric_sums

try:
    import ml_dtypes

    BF16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover - onnx depends on ml_dtypes
    BF16 = None

DTYPES = [np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)] + ([BF16] if BF16 is not None else [])


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of 4 float64 (8 float32) elements, on the BLAS dot (no einsum shortcut for small blocks)."""
    monkeypatch.setattr(scan, "BLOCK_BYTES", 32)
    monkeypatch.setattr(blas, "SMALL_BLOCK", 0)


@st.composite
def close_pairs(draw):
    dtype = draw(st.sampled_from(DTYPES))
    n = draw(st.integers(1, 60))
    exp_range = {2: (-20, 12), 4: (-140, 120), 8: (-1000, 1000)}[dtype.itemsize if dtype != BF16 else 4]
    scale = 2.0 ** draw(st.integers(*exp_range))
    e = np.array(draw(st.lists(st.floats(-4, 4), min_size=n, max_size=n)), np.float64) * scale
    rel = draw(st.sampled_from([0.0, 1e-7, 1e-5, 1e-3, 1e-2, 0.3, 2.0]))
    noise = np.array(draw(st.lists(st.floats(-1, 1), min_size=n, max_size=n)), np.float64)
    with np.errstate(all="ignore"):
        a = e * (1 + rel * noise)
        zeros = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
        if draw(st.booleans()):
            e[zeros] = 0.0
        return a.astype(dtype), e.astype(dtype)


def _agree(fast, exact):
    assert fast.n == exact.n
    cf, ce = fast.cosine(), exact.cosine()
    assert (math.isnan(cf) and math.isnan(ce)) or abs(cf - ce) <= 1e-9, (cf, ce)
    sf, se = fast.snr_db(), exact.snr_db()
    assert sf == se or abs(sf - se) <= 1e-6, (sf, se)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pair=close_pairs())
def test_fast_sums_match_the_exact_sums_across_many_blocks(small_blocks, pair):
    a, e = pair
    _agree(metric_sums(a, e), exact_metric_sums(a, e))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pair=close_pairs(), tiny=st.booleans())
def test_the_passing_path_reports_the_exact_metrics(monkeypatch, pair, tiny):
    """compare_outputs' passing path (verdict and sums in one pass) against the exact sums."""
    if tiny:
        monkeypatch.setattr(scan, "BLOCK_BYTES", 32)
        monkeypatch.setattr(blas, "SMALL_BLOCK", 0)
    a, e = pair
    oc = compare_outputs(a, e, rtol=math.inf, atol=math.inf, min_cosine=-1, min_snr_db=-1e9,
                         no_check=True).outputs["output"]
    exact = exact_metric_sums(a, e)
    if oc.mismatched:  # an infinity or NaN (a float16/bfloat16 cast overflowed): the element rule fails it
        assert not (np.isfinite(a.astype(np.float64)).all() and np.isfinite(e.astype(np.float64)).all())
        return
    assert not oc.detailed  # decided on the one pass
    assert oc.metric_elements == exact.n
    assert abs(oc.cosine - exact.cosine()) <= 1e-9
    assert oc.snr_db == exact.snr_db() or abs(oc.snr_db - exact.snr_db()) <= 1e-6


def test_an_output_within_the_element_rule_fails_the_cosine_floor_without_the_detailed_pass(monkeypatch):
    """Over many blocks, every element within the fp16 element rule, the direction off: the
    default floor fails it, without the detailed pass."""
    monkeypatch.setattr(verdict, "detail_float", _must_not_run)
    rng = np.random.default_rng(3)
    e = (0.05 * rng.standard_normal(200_000)).astype(np.float32)
    a = e + np.float32(0.009) * np.sign(rng.standard_normal(e.size)).astype(np.float32)  # |err| <= atol
    res = compare_outputs(a, e, precision="fp16")
    oc = res.outputs["output"]
    assert not res.passed and oc.mismatched == 0 and not oc.detailed
    assert oc.cosine < 0.9999 and oc.metric_failures[0].startswith("cosine similarity")
    assert oc.cosine == pytest.approx(exact_metric_sums(a, e).cosine(), abs=1e-12)


def test_a_close_output_is_summed_once(monkeypatch):
    """A healthy fp16-like output: verdict and metrics from the one pass, no exact re-sum."""
    monkeypatch.setattr(verdict, "detail_float", _must_not_run)
    monkeypatch.setattr(verdict, "exact_metric_sums", _must_not_run)
    rng = np.random.default_rng(4)
    e = rng.standard_normal(300_000).astype(np.float32)
    a = e * (1 + np.float32(1e-3) * rng.standard_normal(e.size).astype(np.float32))
    oc = compare_outputs(a, e, precision="fp16").outputs["output"]
    assert oc.passed and oc.metric_elements == e.size and oc.min_cosine == 0.9999
    monkeypatch.undo()
    exact = exact_metric_sums(a, e)
    assert abs(oc.cosine - exact.cosine()) <= 1e-12 and abs(oc.snr_db - exact.snr_db()) <= 1e-6


def test_rtol_governed_blocks_take_the_full_rule():
    """|a - e| beyond atol but within rtol * |e|: the shortcut cannot pass the block, the full
    rule does; one element beyond both fails it."""
    e = np.linspace(50, 100, 100_000, dtype=np.float32)
    a = e * np.float32(1.01)  # |err| 0.5..1 > atol 1e-2, < rtol 2e-2 * |e|
    assert compare_outputs(a, e, precision="fp16").passed
    a[77_777] = e[77_777] * np.float32(1.03)
    res = compare_outputs(a, e, precision="fp16")
    assert not res.passed and res.outputs["output"].mismatched == 1


def test_comparison_memory_stays_within_blocks():
    """No full-size temporary: the peak allocation of a compare of two 4 MB outputs is a few
    blocks of scratch (before: |e| and two boolean masks of the whole output for the default
    cosine floor's zero check)."""
    rng = np.random.default_rng(5)
    e = rng.standard_normal(1_000_000).astype(np.float32)
    a = e * np.float32(1.0001)
    compare_outputs(a, e, precision="fp16")  # imports and first-use allocations
    tracemalloc.start()
    try:
        assert compare_outputs(a, e, precision="fp16").passed
        assert compare_outputs(a, e, precision="bf16", min_snr_db=20).passed
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1_500_000, f"peak {peak} bytes for outputs of {e.nbytes} bytes"


def test_blas_is_held_to_one_thread_during_a_scan_and_restored_after():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    controller = threadpoolctl.ThreadpoolController().select(user_api="blas")
    if not controller.lib_controllers:
        pytest.skip("threadpoolctl finds no BLAS library in numpy here")
    before = [lib.num_threads for lib in controller.lib_controllers]

    def now():
        return [lib.get_num_threads() for lib in controller.lib_controllers]

    with blas.single_threaded_dot(1 << 15) as dot:
        assert dot is not blas.einsum_dot and now() == [1] * len(before)
        with blas.single_threaded_dot(1 << 15):  # a second scan (another thread) shares the limit
            assert now() == [1] * len(before)
        assert now() == [1] * len(before)  # still held: the first scan is running
    assert now() == before
    with blas.single_threaded_dot(blas.SMALL_BLOCK) as dot:  # short blocks: no BLAS at all
        assert dot is blas.einsum_dot and now() == before


def _must_not_run(*args, **kwargs):
    raise AssertionError("the one-pass path should have decided this output")
