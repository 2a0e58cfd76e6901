"""Issue 19, marker and API consistency: ``rules=`` as a mapping, per-precision tolerances, the
named tolerance record (``resolve_tolerances()``; ``tolerances()`` deprecated, order kept), and
``strategies.feeds`` paths relative to the calling test file."""

from __future__ import annotations

import shutil

from encoder_suite import ENCODER, ENCODER_PREAMBLE

try:  # keep hypothesis in pytester's sys.modules snapshot (see tests/plugin/test_reports.py)
    import hypothesis  # noqa: F401
except ImportError:  # pragma: no cover
    pass

HEADER = f"""
import pytest
import warnings
{ENCODER_PREAMBLE}OUT = "last_hidden_state"
"""


def test_rules_mapping_per_precision_tolerances_and_the_named_record(pytester):
    pytester.makepyfile(HEADER + """
@pytest.mark.trt(model=ENCODER, precision="fp16", rules={"*/LayerNorm/*": "fp32", "op:Softmax": "fp32"},
                 dims=DIMS, val_range=NORMAL)
def test_rules_mapping(trt):
    assert trt.plan.policy.describe() == "fp16; fp32: */LayerNorm/*, op:Softmax"
    trt.check(trt.feeds(outliers=OUTLIERS), atol=1e-2)          # LayerNorm kept: passes
    trt.assert_precision("*/LayerNorm/*", "fp32")

TOL = dict(atol={"fp16": 0.5, "bf16": {OUT: 0.25}}, rtol={"fp16": 0.125})

@pytest.mark.parametrize("precision, atol, rtol", [("fp16", 0.5, 0.125), ("bf16", 0.25, 1e-1), ("fp32", 1e-5, 1e-5)])
def test_per_precision_tolerances(trt_session, request, precision, atol, rtol):
    request.applymarker(pytest.mark.trt(model=ENCODER, precision=precision, dims=DIMS, **TOL))
    trt = request.getfixturevalue("trt")
    tol = trt.resolve_tolerances()
    assert tol.atol == {OUT: atol} and tol.rtol == {OUT: rtol}   # unnamed precisions fall through to defaults
    assert tol._fields == ("atol", "rtol")
    assert trt.resolve_tolerances(atol={"fp16": 9.0, "bf16": 8.0, "fp32": 7.0}).atol[OUT] in (9.0, 8.0, 7.0)
    trt.check()

@pytest.mark.trt(model=ENCODER, precision="fp16", dims=DIMS, atol={"fp16": 0.5, OUT: 0.1})
def test_mixed_keys_are_a_usage_error(trt):
    with pytest.raises(Exception, match="atol= mixes precisions and output names"):
        trt.resolve_tolerances()

@pytest.mark.trt(model=ENCODER, precision="fp16", dims=DIMS, atol=0.5)
def test_tolerances_keeps_its_order_and_warns(trt):
    with pytest.warns(DeprecationWarning, match=r"returns \\(rtol, atol\\); use trt.resolve_tolerances"):
        rtol, atol = trt.tolerances()
    assert atol == {OUT: 0.5} and rtol == {OUT: 2e-2}
""")
    result = pytester.runpytest("-p", "no:randomly", f"--trt-cache-dir={pytester.path / 'cache'}")
    result.assert_outcomes(passed=6)


def test_strategies_feeds_relative_paths_follow_the_calling_test_file(pytester):
    sub = pytester.path / "suite" / "models"
    sub.mkdir(parents=True)
    shutil.copy(ENCODER, sub / "encoder.onnx")
    (pytester.path / "suite" / "test_property.py").write_text("""
import pytest
from hypothesis import HealthCheck, given, settings
from pytest_trt import strategies

@settings(max_examples=3, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(feeds=strategies.feeds("models/encoder.onnx", dims={"batch": 1, "sequence": 4}))
@pytest.mark.trt(model="models/encoder.onnx", precision="fp32", dims={"batch": 1, "sequence": 4})
def test_relative(trt, feeds):
    trt.check(feeds)
""")
    # run from the rootdir, not from suite/: "models/encoder.onnx" is relative to the test file
    result = pytester.runpytest("suite", "-p", "no:randomly", f"--trt-cache-dir={pytester.path / 'cache'}")
    result.assert_outcomes(passed=1)


def test_a_missing_marker_path_is_said_relative_to_the_test_file(pytester):
    # Issue 28: the message said "relative paths are resolved against the current directory" while the
    # path shown was resolved against the test file; a user following the hint moved the model wrongly.
    (pytester.path / "bad").mkdir()
    (pytester.path / "bad" / "test_bad.py").write_text("""
import pytest

@pytest.mark.trt(model="models/missing.onnx")
def test_model(trt):
    trt.check()

@pytest.mark.trt(model="models/missing.onnx", inputs="data/missing.npz")
def test_inputs(trt):
    trt.feeds()
""")
    result = pytester.runpytest("bad", "-p", "no:randomly", f"--trt-cache-dir={pytester.path / 'cache'}")
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    test_file = pytester.path / "bad" / "test_bad.py"
    assert f"ONNX model not found: {pytester.path / 'bad' / 'models' / 'missing.onnx'}" in out
    assert f"model='models/missing.onnx' in the trt marker is relative to the test file {test_file}" in out
    assert f"inputs='data/missing.npz' in the trt marker is relative to the test file {test_file}" in out
    assert "current directory" not in out
