"""Ledgers end to end through pytester and the console script (issue 32).

``--trt-ledger`` (and its ini twin) makes the ledger of every trt test that built an engine,
after the test body, into the terminal summary, ``--trt-report`` (validated against the schema)
and ``--trt-html``; ``trt.ledger()`` records one from inside a test. On this CPU machine the
backend is ``emulate``: the ledgers carry declared and realized precision with their evidence and
an empty time column that says why (no CPU time is ever presented as a latency).
``pytest-trt layers --ledger`` is run as a subprocess for its exit codes.
"""

from __future__ import annotations

import json
import subprocess
import sys

from encoder_suite import ENCODER, ENCODER_PREAMBLE
from report_schema import assert_valid_report

NO_GPU_TIME = "CPU emulation computes everything in FP32: no GPU time"

SUITE = f"""
import pytest
{ENCODER_PREAMBLE}
@pytest.mark.trt(model=ENCODER, precision="fp16", keep_fp32=["*/LayerNorm/*"], dims=DIMS, val_range=NORMAL)
def test_checked(trt):
    trt.check(atol=1e-2)

@pytest.mark.trt(model=ENCODER, precision="fp16", keep_fp32=["*/LayerNorm/*"], dims=DIMS, val_range=NORMAL)
def test_own_ledger(trt):
    ledger = trt.ledger(timing="off")
    assert ledger.time_reason == "timing off"
    assert ledger.row("/encoder/layer.0/attention/output/LayerNorm/Pow").declared == "fp32"

@pytest.mark.trt(model=ENCODER, precision="fp16", dims=DIMS, val_range=NORMAL)
def test_failing(trt):
    trt.check(trt.feeds(outliers=OUTLIERS), atol=1e-2)

@pytest.mark.trt(model=ENCODER, precision="fp16", dims=DIMS, val_range=NORMAL)
def test_no_engine(trt):
    assert trt.feeds()
"""


def test_trt_ledger_puts_ledgers_in_the_terminal_the_json_and_the_html(pytester):
    pytester.makepyfile(test_ledger_suite=SUITE)
    result = pytester.runpytest(f"--trt-cache-dir={pytester.path / 'cache'}", "--trt-ledger", "--trt-report=r.json",
                                "--trt-html=r.html", "-p", "no:randomly")
    result.assert_outcomes(passed=3, failed=1)
    out = result.stdout.str()
    assert "test_ledger_suite.py::test_checked: ledger of encoder_opset14.onnx [fp16; fp32: */LayerNorm/*] on emulate" in out
    assert f"time: none ({NO_GPU_TIME}" in out
    assert "by declared precision: fp32 (FP32 islands) 36 nodes, fp16 62 nodes" in out
    assert "FP32 islands: /encoder/layer.0/attention/output/LayerNorm (9)" in out
    # the failing test keeps its failure and still gets its ledger; a test that built no engine gets none
    assert "AccuracyError" in out and "test_ledger_suite.py::test_failing: ledger of" in out
    assert "test_no_engine: ledger" not in out
    data = assert_valid_report(json.loads((pytester.path / "r.json").read_text()))
    ledgers = {t["nodeid"].split("::")[1]: t["ledgers"] for t in data["tests"]}
    assert [lg["auto"] for lg in ledgers["test_checked"]] == [True]
    assert [lg["auto"] for lg in ledgers["test_own_ledger"]] == [False]  # the test's own: no second one
    assert ledgers["test_no_engine"] == [] and len(ledgers["test_failing"]) == 1
    assert data["summary"]["ledgers"] == 3 and data["summary"]["ledgers_timed"] == 0
    checked = ledgers["test_checked"][0]
    assert checked["time_source"] is None and checked["time_reason"].startswith(NO_GPU_TIME)
    rows = [r for r in checked["rows"] if r["origin"] == "model"]
    assert len(rows) == 130 and checked["constants"] == 50
    assert all(r["time_ms"] is None for r in rows)
    assert {r["evidence"] for r in rows if r["declared"]} == {"emulated"}
    html = (pytester.path / "r.html").read_text()
    assert "Where does the time go, and in which precision?" in html and 'class="sortable ledger"' in html
    assert html.count('class="lstrip"') == 3 and "as wide as its share of the nodes (no time)" in html


def test_ini_twins_and_trt_ledger_without_the_option(pytester):
    pytester.makepyfile(test_ledger_suite=SUITE)
    pytester.makeini("[pytest]\ntrt_ledger = true\ntrt_ledger_timing = off\n")
    result = pytester.runpytest(f"--trt-cache-dir={pytester.path / 'cache'}", "-k", "checked", "-p", "no:randomly")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_checked: ledger of encoder_opset14.onnx*time: none (ini trt_ledger_timing off)*"])


def test_an_explicit_ledger_timing_that_cannot_run_is_a_usage_error(pytester):
    pytester.makepyfile(test_ledger_suite=SUITE)
    result = pytester.runpytest("--trt-backend=emulate", "--trt-ledger", "--trt-ledger-timing", "engine")
    assert result.ret == 4
    result.stderr.fnmatch_lines([f"*--trt-ledger-timing engine: {NO_GPU_TIME}*use --trt-ledger-timing auto*"])
    result = pytester.runpytest("--trt-ledger-timing", "gpu")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*argument --trt-ledger-timing: invalid choice: 'gpu'*"])


def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "pytest_trt.cli", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


def test_console_script_layers_ledger_exit_codes(tmp_path):
    base = ["layers", ENCODER, "--fp16", "--keep-fp32", "*/LayerNorm/*", "--backend", "emulate",
            "--cache-dir", tmp_path / "cache"]
    ok = _cli(*base, "--ledger", "--json", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    data = json.loads(ok.stdout)["ledger"]
    assert len([r for r in data["rows"] if r["origin"] == "model"]) == 130
    assert data["time_reason"].startswith(NO_GPU_TIME)
    text = _cli(*base, "--ledger", "--all", cwd=tmp_path)
    assert text.returncode == 0 and "/encoder/layer.0/attention/output/LayerNorm/Pow" in text.stdout
    no_time = _cli(*base, "--export-trace", tmp_path / "t.json", cwd=tmp_path)
    assert no_time.returncode == 2 and "--export-trace: the ledger of encoder_opset14.onnx has no time" in no_time.stderr
    engine = _cli(*base, "--ledger", "--timing", "engine", cwd=tmp_path)
    assert engine.returncode == 2 and f"--timing engine: {NO_GPU_TIME}" in engine.stderr
    bad = _cli(*base, "--ledger", "--timing", "gpu", cwd=tmp_path)
    assert bad.returncode == 2 and "invalid choice: 'gpu'" in bad.stderr
