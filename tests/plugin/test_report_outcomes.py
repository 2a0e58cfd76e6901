"""Issue 19, report items: every trt test reaches JSON, HTML and JUnit with pytest's outcome and
its message; negative controls are shown as caught only for pytest-trt's own verdict; NaN/Inf
advice; repeated (Hypothesis) checks condensed to their worst example.

Each test runs a small real suite (the example encoder on the emulate backend) through pytester.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from encoder_suite import ENCODER_PREAMBLE
from report_schema import assert_valid_report

from pytest_trt.report.json_report import SCHEMA_VERSION

try:  # keep hypothesis in pytester's sys.modules snapshot (see tests/plugin/test_reports.py)
    import hypothesis  # noqa: F401
except ImportError:  # pragma: no cover
    pass

HEAD = f"""
import pytest
from pytest_trt import AccuracyError, PrecisionError
{ENCODER_PREAMBLE}FP16 = dict(model=ENCODER, precision="fp16", dims=DIMS, val_range=NORMAL)
"""

OUTCOMES = HEAD + """
@pytest.mark.trt(**FP16, keep_fp32=["*/LayerNorm/*"])
def test_passes(trt):
    trt.check(trt.feeds(outliers=OUTLIERS), atol=1e-2)

@pytest.mark.trt(**FP16)
def test_fails(trt):
    trt.check(trt.feeds(outliers=OUTLIERS), atol=1e-2)

@pytest.mark.trt(**FP16, expect_fp32=["*/LayerNorm/*"])
def test_expect_fp32_fails_before_any_record(trt):
    trt.check()

@pytest.mark.trt(**FP16, bogus=1)
def test_usage_error_in_setup(trt_engine):
    pass

@pytest.mark.trt(**FP16)
def test_skipped(trt):
    pytest.skip("not on this runner")

@pytest.mark.xfail(strict=True, raises=AccuracyError, reason="LayerNorm in FP16 must fail")
@pytest.mark.trt(**FP16)
def test_negative_control_caught(trt):
    trt.check(trt.feeds(outliers=OUTLIERS), atol=1e-2)

@pytest.mark.xfail(strict=True, raises=PrecisionError, reason="the plan lowers LayerNorm")
@pytest.mark.trt(**FP16)
def test_precision_control_caught(trt):
    trt.assert_precision("*/LayerNorm/*", "fp32")

@pytest.mark.xfail(strict=True, reason="written without raises=")
@pytest.mark.trt(**FP16)
def test_negative_control_untested(trt):
    trt.check(atol="not a number")

@pytest.mark.xfail(strict=True, raises=AccuracyError, reason="should fail but the LayerNorm is FP32")
@pytest.mark.trt(**FP16, keep_fp32=["*/LayerNorm/*"])
def test_negative_control_missed(trt):
    trt.check(trt.feeds(outliers=OUTLIERS), atol=1e-2)

@pytest.mark.xfail(reason="not strict")
@pytest.mark.trt(model=ENCODER, precision="fp32", dims=DIMS)
def test_xpass(trt):
    trt.check()

def test_not_trt():
    pass
"""


def _run(pytester, *args):
    return pytester.runpytest(f"--trt-cache-dir={pytester.path / 'cache'}", "--trt-report=out/r.json",
                              "--trt-html=out/r.html", "--junitxml", "out/junit.xml", "-p", "no:randomly", *args)


def test_every_trt_test_reaches_every_report_with_its_pytest_outcome(pytester):
    pytester.makepyfile(test_suite=OUTCOMES)
    result = _run(pytester)
    # pytest's own counts (the XPASS(strict) is a failure)
    result.assert_outcomes(passed=2, failed=3, errors=1, skipped=1, xfailed=3, xpassed=1)  # + test_not_trt

    data = assert_valid_report(json.loads((pytester.path / "out" / "r.json").read_text()))
    assert data["schema_version"] == SCHEMA_VERSION
    tests = {t["nodeid"].split("::")[-1]: t for t in data["tests"]}
    assert "test_not_trt" not in tests
    assert data["summary"]["tests"] == 10
    assert data["summary"]["outcomes"] == {"passed": 1, "failed": 3, "error": 1, "skipped": 1, "xfailed": 3,
                                           "xpassed": 1}
    assert {k: t["outcome"] for k, t in tests.items()} == {
        "test_passes": "passed", "test_fails": "failed", "test_expect_fp32_fails_before_any_record": "failed",
        "test_usage_error_in_setup": "error", "test_skipped": "skipped", "test_negative_control_caught": "xfailed", "test_precision_control_caught": "xfailed",
        "test_negative_control_untested": "xfailed", "test_negative_control_missed": "failed", "test_xpass": "xpassed",
    }
    # failed before any record: no accuracy entry, but the message says why
    early = tests["test_expect_fp32_fails_before_any_record"]
    assert early["accuracy"] == [] and early["message"].startswith("PrecisionError:")
    assert "LayerNorm" in early["message"]
    setup = tests["test_usage_error_in_setup"]
    assert setup["outcome"] == "error" and "unknown @pytest.mark.trt argument 'bogus'" in setup["message"]
    assert tests["test_skipped"]["message"].endswith("not on this runner")
    caught = tests["test_negative_control_caught"]
    assert caught["expected_failure"]["verdict"] == "caught" and caught["verdict"] == "expected failure, caught"
    assert caught["expected_failure"]["raises"] == ["AccuracyError"] and caught["expected_failure"]["strict"] is True
    assert caught["accuracy"][0]["passed"] is False
    untested = tests["test_negative_control_untested"]
    assert untested["expected_failure"]["verdict"] == "not_tested"
    assert untested["expected_failure"]["raised"] != "AccuracyError" and untested["accuracy"] == []
    missed = tests["test_negative_control_missed"]
    assert missed["outcome"] == "failed" and missed["expected_failure"]["verdict"] == "missed"
    assert "XPASS(strict)" in missed["message"]
    assert tests["test_xpass"]["expected_failure"]["verdict"] == "passed"
    assert tests["test_passes"]["message"] is None and tests["test_passes"]["expected_failure"] is None

    # JUnit: every trt test carries its outcome; one with no record carries its message
    cases = {tc.get("name"): {p.get("name"): p.get("value") for p in tc.iter("property")}
             for tc in ET.parse(pytester.path / "out" / "junit.xml").getroot().iter("testcase")}
    assert cases["test_not_trt"] == {}
    assert cases["test_negative_control_caught"]["trt_outcome"] == "xfailed"
    assert cases["test_negative_control_caught"]["trt_verdict"] == "expected failure, caught"
    assert cases["test_negative_control_untested"]["trt_verdict"] == "expected failure, but nothing was tested"
    assert cases["test_negative_control_missed"]["trt_verdict"] == "negative control missed (XPASS strict)"
    assert cases["test_expect_fp32_fails_before_any_record"]["trt_outcome"] == "failed"
    assert cases["test_expect_fp32_fails_before_any_record"]["trt_message"].startswith("PrecisionError:")
    assert cases["test_usage_error_in_setup"]["trt_outcome"] == "error"
    assert cases["test_fails"]["trt_passed"] == "false"

    # HTML: one group per trt test with its pill; the caught control is neutral, not red
    html = (pytester.path / "out" / "r.html").read_text()
    for nodeid in tests:
        assert nodeid in html
    assert html.count('<tbody class="tone-') == 10
    assert '<tbody class="tone-neutral"><tr class="test"><td class="st"><span class="pill" ' \
           'title="expected failure, caught">XFAIL caught</span>' in html
    assert 'title="expected failure, but nothing was tested">XFAIL untested</span>' in html
    assert 'title="negative control missed (XPASS strict)">MISSED</span>' in html
    assert html.index("test_fails") < html.index("test_negative_control_caught") < html.index("test_passes")
    assert "PrecisionError: " in html
    # the caught precision control's card is neutral and folded, not a red failure
    card = html[html.index('id="precision"'):]
    card = card[card.index("test_precision_control_caught") - 120:]
    assert card.startswith('<div class="card"><h3>') or '<div class="card"><h3>' in card[:130]
    assert "FAILED, as expected (negative control caught)" in card[:1000]
    assert tests["test_precision_control_caught"]["expected_failure"]["verdict"] == "caught"
    result.stdout.fnmatch_lines(["precision checks: 0 passed, 0 failed (1 more by negative controls, as expected: "
                                 "xfail)*"])

    # terminal: the caught control's row is an xfail row, not a FAIL
    result.stdout.fnmatch_lines(["xfail *test_negative_control_caught*"])
    result.stdout.no_fnmatch_line("FAIL *test_negative_control_caught*")


NAN = HEAD + """
OVERFLOW = {"hidden_states": {"count": 2, "magnitude": 1.0e5}}   # beyond FP16's 65504: Inf, then NaN

@pytest.mark.trt(**FP16, allow_nonfinite=True)
def test_nan_output(trt):
    trt.check(trt.feeds(outliers=OVERFLOW), atol=1e-2)
"""


def test_nan_advice_is_right_in_json_and_html(pytester):
    pytester.makepyfile(test_nan=NAN)
    result = _run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*no tolerance passes the * NaN/Inf mismatch(es)*"])
    data = assert_valid_report(json.loads((pytester.path / "out" / "r.json").read_text()))
    (out,) = data["tests"][0]["accuracy"][0]["outputs"]
    assert out["unfixable"] > 0
    assert out["needed_atol"] is None and out["needed_rtol"] is None
    assert out["needed_reason"] == f"no tolerance passes the {out['unfixable']} NaN/Inf mismatch(es)"
    assert out["advice"].startswith("no tolerance passes")
    html = (pytester.path / "out" / "r.html").read_text()
    assert "would pass with atol" not in html and "no tolerance passes the" in html


PROPERTY = HEAD + """
from hypothesis import HealthCheck, given, settings
from pytest_trt import strategies

@settings(max_examples=12, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(feeds=strategies.feeds(ENCODER, dims=DIMS, outliers={"hidden_states": {"count": (0, 2),
                                                                             "magnitude": (10.0, 1000.0)}}))
@pytest.mark.trt(**FP16)
def test_property(trt, feeds):
    trt.check(feeds, atol=1e-2)
"""


@pytest.mark.parametrize("all_records", [False, True], ids=["condensed", "all-records"])
def test_repeated_checks_are_one_row_with_the_worst_example(pytester, all_records):
    pytester.makepyfile(test_prop=PROPERTY)
    result = _run(pytester, *(["--trt-report-all-records"] if all_records else []))
    result.assert_outcomes(failed=1)
    data = assert_valid_report(json.loads((pytester.path / "out" / "r.json").read_text()))
    (test,) = data["tests"]
    checks = test["accuracy"]
    html = (pytester.path / "out" / "r.html").read_text()
    if all_records:
        assert len(checks) > 2 and all(c["examples"] == 1 for c in checks)
        n = len(checks)
    else:
        (check,) = checks
        n = check["examples"]
        assert n > 2 and check["passed"] is False
        # the worst example: no other check of the same run was further out of tolerance
        assert check["outputs"][0]["tolerance_ratio"] == "inf" or check["outputs"][0]["tolerance_ratio"] > 1
    # either way the HTML shows one row and one failure card, with the count
    assert html.count('<tr class="out ') == 1 and html.count('class="card fail"') == 1
    assert f"worst of {n} checks" in html
    result.stdout.fnmatch_lines([f"accuracy: 1 output(s) in 1 test(s) ({n} checks, the worst per test and output "
                                 "shown)*"])


UNTESTED_CONTROLS = HEAD + """
@pytest.mark.xfail(strict=True, reason="FP16 LayerNorm must fail")
@pytest.mark.trt(**FP16, keep_fp32=["*/LayerNrom/*"])
def test_control_with_a_pattern_typo(trt):
    trt.check(trt.feeds(outliers=OUTLIERS), atol=1e-2)

@pytest.mark.xfail(strict=True, reason="must fail")
@pytest.mark.trt(model="models/missing.onnx", precision="fp16", dims=DIMS)
def test_control_with_a_missing_model(trt):
    trt.check()

@pytest.mark.xfail(strict=True, reason="FP16 LayerNorm must fail")
@pytest.mark.trt(**FP16)
def test_control_caught(trt):
    trt.check(trt.feeds(outliers=OUTLIERS), atol=1e-2)
"""


def test_terminal_summary_names_negative_controls_that_xfailed_without_testing_anything(pytester):
    """Issue 28: a negative control written ``xfail(strict=True)`` without ``raises=`` that fails for
    another reason (a pattern typo, a missing file) was "xfailed", exit 0, and the terminal said
    nothing (the JSON and HTML already called it "not_tested")."""
    pytester.makepyfile(test_controls=UNTESTED_CONTROLS)
    result = pytester.runpytest(f"--trt-cache-dir={pytester.path / 'cache'}", "-p", "no:cacheprovider")
    result.assert_outcomes(xfailed=3)
    result.stdout.fnmatch_lines([
        "*= pytest-trt =*",
        "trt tests: 2 negative control(s) xfailed without testing anything: they raised something other than "
        "pytest-trt's verdict (AccuracyError, PrecisionError); write them "
        "@pytest.mark.xfail(strict=True, raises=AccuracyError) so that pytest fails them too",
        "  test_controls.py::test_control_with_a_pattern_typo: raised PatternError",
        "  test_controls.py::test_control_with_a_missing_model: raised ModelError",
    ])
    assert "test_control_caught: raised" not in result.stdout.str()


GREEN_WITH_CONTROLS = HEAD + """
@pytest.mark.trt(**FP16, keep_fp32=["*/LayerNorm/*"])
def test_passes(trt):
    trt.check(trt.feeds(outliers=OUTLIERS), atol=1e-2)
    trt.assert_precision("*/LayerNorm/*", "fp32")

@pytest.mark.xfail(strict=True, raises=AccuracyError, reason="LayerNorm in FP16 must fail")
@pytest.mark.trt(**FP16)
def test_accuracy_control(trt):
    trt.check(trt.feeds(outliers=OUTLIERS), atol=1e-2)

@pytest.mark.xfail(strict=True, raises=PrecisionError, reason="the plan lowers LayerNorm")
@pytest.mark.trt(**FP16)
def test_precision_control(trt):
    trt.assert_precision("*/LayerNorm/*", "fp32")
"""


def test_json_summary_counts_caught_negative_controls_apart_from_failures(pytester):
    """Issue 28: on a green run whose negative controls caught their failures, ``outputs_failed`` and
    ``precision_checks_failed`` were non-zero, so a CI gate reading the summary had to re-judge
    every test. Failures and caught controls are counted apart."""
    pytester.makepyfile(test_green=GREEN_WITH_CONTROLS)
    result = _run(pytester)
    assert result.ret == 0
    result.assert_outcomes(passed=1, xfailed=2)
    summary = assert_valid_report(json.loads((pytester.path / "out" / "r.json").read_text()))["summary"]
    assert (summary["outputs"], summary["outputs_failed"], summary["outputs_caught"]) == (2, 0, 1)
    assert (summary["precision_checks"], summary["precision_checks_failed"],
            summary["precision_checks_caught"]) == (2, 0, 1)
    assert (summary["parser_checks"], summary["parser_checks_failed"], summary["parser_checks_caught"]) == (0, 0, 0)
