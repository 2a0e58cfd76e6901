"""Tier ``trt_parser``: the parser check as users meet it (pytester runs, the CLI as a subprocess).

* a node planned FP32 that TensorRT-RTX parses in FP16 fails the test, naming node, planned
  and parsed type, although the accuracy check (on ``emulate``) passes;
* the parser check never makes a test pass: accuracy failures, skips and strict xfails keep
  their outcome with the check on;
* promotions reach the terminal summary, the JSON report and the HTML report.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from encoder_suite import ENCODER, ENCODER_PREAMBLE
from report_schema import assert_valid_report

from pytest_trt.report.json_report import SCHEMA_VERSION

pytestmark = pytest.mark.trt_parser

REPO = Path(__file__).resolve().parents[2]

HEADER = f"""
import pytest
{ENCODER_PREAMBLE}"""

#: An inner conftest that alters the strongly typed realization on purpose: every plan is
#: realized as if it were all FP16, so nodes the plan keeps FP32 reach the parser in FP16.
#: Only the TensorRT glue uses realize_strong; the emulate backend (which runs the accuracy
#: check) uses its own emulation graph, so its verdict is untouched.
LOWERING_CONFTEST = """
import pytest_trt.realize as realize
from pytest_trt.plan.policy import PrecisionPolicy

_real = realize.realize_strong

def _lowered(plan, *args, **kwargs):
    return _real(PrecisionPolicy(default="fp16").resolve(plan.model), *args, **kwargs)

realize.realize_strong = _lowered

def pytest_unconfigure(config):  # in-process pytester runs share the module: undo it
    realize.realize_strong = _real
"""


@pytest.fixture
def cache_dir(pytester):
    return pytester.path / "engine-cache"


def test_planned_fp32_node_parsed_in_fp16_fails_the_test(rtx, pytester, cache_dir):
    pytester.makeconftest(LOWERING_CONFTEST)
    pytester.makepyfile(HEADER + """
@pytest.mark.trt(model=ENCODER, precision="fp16", keep_fp32=["*/LayerNorm/*"], dims=DIMS, val_range=NORMAL)
def test_layernorm_kept_fp32(trt):
    trt.check(atol=5e-2)
""")
    result = pytester.runpytest("--trt-parser-check", "tensorrt-rtx", f"--trt-cache-dir={cache_dir}",
                                "--trt-report=r.json")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "the plan failed TensorRT-RTX's parser check" in out
    assert "/encoder/layer.0/attention/output/LayerNorm/Pow (Pow): planned fp32, parsed fp16" in out
    data = assert_valid_report(json.loads((pytester.path / "r.json").read_text()))
    test = data["tests"][0]
    assert test["accuracy"][0]["passed"] is True  # the accuracy verdict was given, and it passed
    parser = test["parser"][0]
    assert parser["status"] == "failed" and parser["counts"]["lower"] > 0
    assert {f["planned"] for f in parser["failures"]} == {"fp32"}
    assert {f["parsed"] for f in parser["failures"]} == {"fp16"}
    assert data["summary"]["parser_checks_failed"] == 1
    # the same run without the check passes: the check, and only it, failed the test
    pytester.runpytest(f"--trt-cache-dir={cache_dir}").assert_outcomes(passed=1)


def test_explicit_check_parser_raises_with_node_and_types(rtx, pytester, cache_dir):
    pytester.makeconftest(LOWERING_CONFTEST)
    pytester.makepyfile(HEADER + """
from pytest_trt import PrecisionError

@pytest.mark.trt(model=ENCODER, precision="fp16", keep_fp32=["*/LayerNorm/*"], dims=DIMS)
def test_explicit(trt):
    with pytest.raises(PrecisionError) as info:
        trt.check_parser()
    check = info.value.findings
    assert not check.passed
    assert all(f["planned"] == "fp32" and f["parsed"] == "fp16" for f in check.failures)
    assert "*/LayerNorm/*" not in [f["node"] for f in check.failures]
    assert any("LayerNorm/Pow" in f["node"] for f in check.failures)
""")
    pytester.runpytest(f"--trt-cache-dir={cache_dir}").assert_outcomes(passed=1)


def test_no_test_passes_because_of_the_parser_check(rtx, pytester, cache_dir):
    pytester.makepyfile(HEADER + """
@pytest.mark.trt(model=ENCODER, precision="fp16", keep_fp32=["*/LayerNorm/*"], dims=DIMS, val_range=NORMAL)
def test_accuracy_fails(trt):
    trt.check(atol=1e-9, rtol=1e-9)       # impossible in FP16: must stay failed

@pytest.mark.trt(model=ENCODER, precision="fp16", dims=DIMS, requires="tensorrt")
def test_needs_tensorrt(trt):
    trt.check()                             # skipped on emulate: must stay skipped

@pytest.mark.xfail(strict=True, reason="negative control")
@pytest.mark.trt(model=ENCODER, precision="fp16", dims=DIMS, val_range=NORMAL)
def test_negative_control(trt):
    trt.check(trt.feeds(outliers={"hidden_states": {"count": 2, "magnitude": 400.0}}), atol=1e-2)

@pytest.mark.trt(model=ENCODER, precision="fp16", keep_fp32=["*/LayerNorm/*"], dims=DIMS, val_range=NORMAL)
def test_passes(trt):
    trt.check(atol=5e-2)
""")
    with_check = pytester.runpytest("--trt-parser-check", "tensorrt-rtx", f"--trt-cache-dir={cache_dir}",
                                    "--trt-report=r.json", "-rs")
    with_check.assert_outcomes(failed=1, skipped=1, xfailed=1, passed=1)
    data = assert_valid_report(json.loads((pytester.path / "r.json").read_text()))
    by_test = {t["nodeid"].split("::")[1]: t for t in data["tests"]}
    assert by_test["test_accuracy_fails"]["outcome"] == "failed"
    assert by_test["test_accuracy_fails"]["parser"][0]["passed"] is True  # a passing parse did not rescue it
    assert by_test["test_passes"]["parser"][0]["passed"] is True
    without = pytester.runpytest(f"--trt-cache-dir={cache_dir}")
    without.assert_outcomes(failed=1, skipped=1, xfailed=1, passed=1)


@pytest.fixture
def rms_model(rtx, tmp_path):
    """A corpus model TensorRT-RTX 1.7.1 parses as an FP32 layer when planned FP16 (RMSNormalization)."""
    import onnx

    sys.path.insert(0, str(REPO / "tests"))
    from onnx_corpus import iter_corpus

    case = next(iter_corpus(("node",), ids=["node/test_rms_normalization_2d_axis0"]))
    path = tmp_path / "rms.onnx"
    onnx.save(case.model, path)
    return path


def test_promotions_reach_summary_json_and_html(rms_model, pytester, cache_dir):
    pytester.makepyfile(f"""
import pytest

@pytest.mark.trt(model={str(rms_model)!r}, precision="fp16")
def test_rms(trt):
    check = trt.check_parser()
    assert check.passed and check.promotions
""")
    result = pytester.runpytest(f"--trt-cache-dir={cache_dir}", "--trt-report=r.json", "--trt-html=r.html")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([
        "parser check (TensorRT-RTX *): 1 check(s) of 1 plan(s), 1 passed, 0 failed; 1 node(s) computed in higher "
        "precision than planned (reported, never failed)",
        "  higher rms.onnx [[]fp16[]]: * (RMSNormalization): planned fp16, parsed fp32: TensorRT computes this in "
        "higher precision than planned",
    ])
    data = assert_valid_report(json.loads((pytester.path / "r.json").read_text()))
    assert data["schema_version"] == SCHEMA_VERSION and data["summary"]["parser_promotions"] == 1
    (promotion,) = data["tests"][0]["parser"][0]["promotions"]
    assert (promotion["op_type"], promotion["planned"], promotion["parsed"]) == ("RMSNormalization", "fp16", "fp32")
    assert promotion["canonical"] == promotion["node"]  # a hand-made model: no scope in the name
    html = (pytester.path / "r.html").read_text()
    assert "Parser check: planned vs parsed network dtypes" in html
    assert "TensorRT computes this in higher precision than planned" in html and "RMSNormalization" in html


def test_cli_plan_and_compare_with_parser_check(rtx, tmp_path):
    cli = [sys.executable, "-m", "pytest_trt.cli"]
    plan = subprocess.run([*cli, "plan", str(ENCODER), "--fp16", "--keep-fp32", "*/LayerNorm/*", "--json",
                           "--parser-check", "tensorrt-rtx"], capture_output=True, text=True, timeout=300)
    assert plan.returncode == 0, plan.stderr
    data = json.loads(plan.stdout)
    assert data["parser_check"]["status"] == "passed" and data["parser_check"]["counts"]["lower"] == 0
    compare = subprocess.run([*cli, "compare", str(ENCODER), "--fp16", "--keep-fp32", "*/LayerNorm/*",
                              "--input-shapes", "hidden_states:[2,8,64]", "--atol", "0.05",
                              "--cache-dir", str(tmp_path / "c"), "--parser-check", "tensorrt-rtx"],
                             capture_output=True, text=True, timeout=300)
    assert compare.returncode == 0, compare.stdout + compare.stderr
    assert "parser check passed: encoder_opset14.onnx [fp16; fp32: */LayerNorm/*]" in compare.stdout


def test_the_automatic_parser_check_serves_as_a_strict_negative_control(rtx, pytester, cache_dir):
    """Issue 28: the automatic check failed the test only after pytest had judged the xfail, so a
    negative control written ``xfail(strict=True, raises=...)`` was reported XPASS(strict) /
    "missed" although the check caught the lowered node. Its failure is now raised in the test's
    call phase as a ParserCheckError (a PrecisionError), which ``raises=`` sees."""
    pytester.makeconftest(LOWERING_CONFTEST)
    pytester.makepyfile(HEADER + """
from pytest_trt import ParserCheckError, PrecisionError

@pytest.mark.xfail(strict=True, raises=ParserCheckError, reason="the parser lowers the FP32 LayerNorm")
@pytest.mark.trt(model=ENCODER, precision="fp16", keep_fp32=["*/LayerNorm/*"], dims=DIMS, val_range=NORMAL)
def test_control(trt):
    trt.check(atol=5e-2)

@pytest.mark.xfail(strict=True, raises=PrecisionError, reason="the same, caught as a PrecisionError")
@pytest.mark.trt(model=ENCODER, precision="fp16", keep_fp32=["*/LayerNorm/*"], dims=DIMS, val_range=NORMAL)
def test_control_as_precision_error(trt_engine):
    pass
""")
    result = pytester.runpytest("--trt-parser-check", "tensorrt-rtx", f"--trt-cache-dir={cache_dir}",
                                "--trt-report=r.json", "-rx")
    result.assert_outcomes(xfailed=2)
    result.stdout.fnmatch_lines(["*XFAIL*test_control*"])
    data = assert_valid_report(json.loads((pytester.path / "r.json").read_text()))
    for test in data["tests"]:
        assert test["expected_failure"]["verdict"] == "caught", test
        assert test["expected_failure"]["raised"] == "ParserCheckError"
        assert "ParserCheckError: " in test["message"] and "planned fp32, parsed fp16" in test["message"]
    assert data["summary"]["parser_checks_failed"] == 0 and data["summary"]["parser_checks_caught"] == 2


def test_a_test_that_skips_itself_after_a_failed_parser_check_fails(rtx, pytester, cache_dir):
    """The check runs on the CPU: a skip in the body (pytest.skip, an unsupported GPU) does not hide it."""
    pytester.makeconftest(LOWERING_CONFTEST)
    pytester.makepyfile(HEADER + """
@pytest.mark.trt(model=ENCODER, precision="fp16", keep_fp32=["*/LayerNorm/*"], dims=DIMS, val_range=NORMAL)
def test_skips(trt_engine):
    pytest.skip("not on this runner")
""")
    result = pytester.runpytest("--trt-parser-check", "tensorrt-rtx", f"--trt-cache-dir={cache_dir}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*ParserCheckError*", "*the plan failed TensorRT-RTX's parser check*"])
