"""trt.assert_precision in a pytest run (pytester), the records it leaves, and `pytest-trt layers`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_trt.cli import main

ROOT = Path(__file__).resolve().parents[2]
ENCODER14 = ROOT / "example_suite" / "models" / "encoder_opset14.onnx"
ENCODER17 = ROOT / "example_suite" / "models" / "encoder_opset17.onnx"
LN0 = "/encoder/layer.0/attention/output/LayerNorm"

HEADER = f"""
import pytest
ENCODER14 = {str(ENCODER14)!r}
ENCODER17 = {str(ENCODER17)!r}
DIMS = {{"batch": 1, "sequence": 4}}
"""


# Inner runs: hypothesis' pytest plugin imports hypothesis at the terminal summary, and pytester
# drops modules first imported in an inner run, so each run would pay that import (~4 s) again.
FAST = ("-p", "no:hypothesispytest")


@pytest.fixture
def cache_dir(pytester):
    return str(pytester.path / "engine-cache")


def test_assert_precision_fails_naming_the_lowered_node(pytester, cache_dir):
    pytester.makepyfile(HEADER + """
@pytest.mark.trt(model=ENCODER14, precision="fp16", keep_fp32=["op:Softmax"], dims=DIMS)
def test_layernorm_stays_fp32(trt):
    trt.assert_precision("*/LayerNorm/*", "fp32")
""")
    result = pytester.runpytest(*FAST, f"--trt-cache-dir={cache_dir}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*test_assert_precision_fails_naming_the_lowered_node.py:*: PrecisionError",
        "assert_precision('[*]/LayerNorm/[*]', 'fp32', method='inspect') failed: 36 of 36 matched compute node(s) "
        "not shown in fp32 (36 failed, 0 unverifiable); 8 fixed node(s) not applicable",
        "*encoder_opset14.onnx [[]fp16; fp32: op:Softmax[]] on emulate, typing emulated, source emulation",
        "*evidence: 0 observed, 0 inferred from a kernel boundary, 0 unverifiable, 36 emulated",
        "*emulated: derived from the plan's realization, not read from a TensorRT engine",
        f"*{LN0}/ReduceMean (ReduceMean): emulated fp16, planned fp16 [[]default[]]",
        "*keep_fp32=[[]'[*]/LayerNorm/[*]'[]]*",
    ])
    assert "pytest_trt/verify/precision.py" not in result.stdout.str()  # no internal frames


def test_kept_layernorm_passes_and_the_check_is_recorded(pytester, cache_dir):
    pytester.makepyfile(HEADER + """
@pytest.mark.trt(model=ENCODER17, precision="fp16", keep_fp32=["*/LayerNorm/*"], dims=DIMS)
def test_kept(trt):
    check = trt.assert_precision("*/LayerNorm/*", "fp32", method="both")
    assert check.passed and [p.text for p in check.probes] == ["behaves like fp32"] * 4
    trt.assert_precision("op:MatMul", "fp16")


@pytest.mark.trt(model=ENCODER17, precision="fp16", dims=DIMS)
def test_lowered(trt):
    trt.assert_precision("op:LayerNormalization", "fp32")
""")
    reprec = pytester.inline_run(*FAST, f"--trt-cache-dir={cache_dir}")
    reprec.assertoutcome(passed=1, failed=1)
    calls = {r.nodeid.split("::")[-1]: r for r in reprec.getreports("pytest_runtest_logreport") if r.when == "call"}

    def precision_records(name):
        blob = dict(calls[name].user_properties)["pytest_trt"]
        return [r for r in json.loads(blob)["records"] if r["kind"] == "precision"]  # {outcome, ..., records}

    [failed] = precision_records("test_lowered")
    assert failed["passed"] is False and failed["report"]["kind"] == "precision_check"
    assert {n["status"] for n in failed["report"]["nodes"]} == {"fail"}
    assert {n["cause"] for n in failed["report"]["nodes"]} == {"plan"}
    records = precision_records("test_kept")
    assert [(r["pattern"], r["precision"]) for r in records] == [("*/LayerNorm/*", "fp32"), ("op:MatMul", "fp16")]
    rep = records[0]["report"]
    assert rep["passed"] and rep["emulated"] and rep["method"] == "both"
    node = next(n for n in rep["nodes"] if n["node"] == f"{LN0}/LayerNormalization")
    assert {k: node[k] for k in ("planned", "observed", "status", "layer", "myelin")} == {
        "planned": "fp32", "observed": "fp32", "status": "pass", "layer": None, "myelin": False}
    assert rep["probes"][0]["measurements"][0]["probe"] == "offset"


def test_no_collapse_on_emulate_passes_with_a_warning(pytester, cache_dir):
    pytester.makepyfile(HEADER + """
import pytest_trt

@pytest.mark.trt(model=ENCODER14, precision="fp16", dims=DIMS)
def test_collapse(trt):
    check = pytest_trt.assert_no_collapse(trt.engine)
    assert check.checked is False
""")
    result = pytester.runpytest(*FAST, f"--trt-cache-dir={cache_dir}")
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(["*NotObservableWarning*cannot observe fusion*"])


# -- pytest-trt layers ---------------------------------------------------------------------
def _cli(capsys, tmp_path, *args):
    code = main(["layers", str(ENCODER14), "--backend", "emulate", "--cache-dir", str(tmp_path / "c"), *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_layers_prints_planned_vs_observed(capsys, tmp_path):
    code, out, err = _cli(capsys, tmp_path, "--fp16", "--keep-fp32", "*/LayerNorm/*")
    assert code == 0, err
    assert "EMULATION (not TensorRT)" in out
    assert "node" in out and "planned" in out and "observed" in out and "status" in out
    line = next(row for row in out.splitlines() if row.startswith(f"{LN0}/Pow "))
    assert line.split()[1:5] == ["Pow", "fp32", "fp32", "ok"]


def test_cli_layers_json_and_expectations(capsys, tmp_path):
    code, out, err = _cli(capsys, tmp_path, "--fp16", "--json", "--expect", "*/LayerNorm/*=fp16")
    assert code == 0, err
    data = json.loads(out)
    assert data["backend"] == "emulate" and data["passed"] is True
    assert data["report"]["source"] == "emulation" and data["report"]["summary"]["ok"] == 98
    node = next(n for n in data["report"]["nodes"] if n["node"] == f"{LN0}/Pow")
    assert (node["planned"], node["observed"], node["status"]) == ("fp16", "fp16", "ok")
    assert node["evidence"] == "emulated"  # the emulate backend never says "observed"
    assert data["report"]["evidence"] == {"observed": 0, "inferred": 0, "unverifiable": 0, "emulated": 98}
    assert data["expectations"][0]["counts"]["pass"] == 36
    assert data["expectations"][0]["evidence"] == {"observed": 0, "inferred": 0, "unverifiable": 0, "emulated": 36}

    code, out, err = _cli(capsys, tmp_path, "--fp16", "--expect", "*/LayerNorm/*=fp32")
    assert code == 1
    assert f"{LN0}/Pow (Pow): emulated fp16, planned fp16" in err

    code, out, err = _cli(capsys, tmp_path, "--fp16", "--expect", "*/LayerNrom/*=fp32")
    assert code == 2 and "matches no node" in err


@pytest.mark.parametrize("flags", [[], ["--input-shapes", "input_ids:[2,16]"],
                                   ["--input-shapes", "input_ids:[2,16]", "attention_mask:[2,16]"]])
def test_cli_layers_needs_shapes_only_never_a_value_range(capsys, tmp_path, flags):
    # Issue 28: with --input-shapes but no --val-range, `layers` generated feeds it never runs and asked
    # for the token ids' range (exit 2), while the same model with no input flags gave exit 0.
    bert = Path(__file__).resolve().parents[1] / "data" / "bert_tiny_opset14.onnx"
    code = main(["layers", str(bert), "--fp16", "--backend", "emulate", "--cache-dir", str(tmp_path / "c"), *flags])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "Tanh" in out and "val-range" not in err
