"""``compare``'s range diagnosis: the fix it prints works (review1 defect 3).

Before: on the example encoder fed outliers (|x| = 400) with LayerNorm in FP16, the diagnosis said
"keep the first one's node FP32 (--keep-fp32 '/encoder/layer.0/attention/output/LayerNorm/Pow')".
Following it changed nothing: the Pow's FP32 output was cast back to FP16 for ``ReduceMean_1``
and overflowed there, and compare then printed no range diagnosis at all. Now the fix is the
node's scope (as ``locate`` advises), and a Cast from an FP32 island into a low-precision reader is
checked too.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from pytest_trt.cli import main as cli_main
from pytest_trt.locate.ranges import range_overflows
from pytest_trt.model.load import load_model
from pytest_trt.plan.policy import PrecisionPolicy

ENCODER = Path(__file__).resolve().parents[2] / "example_suite" / "models" / "encoder_opset14.onnx"
POW = "/encoder/layer.0/attention/output/LayerNorm/Pow"


@pytest.fixture(scope="module")
def outliers():
    """The example suite's outlier regime: uniform in [-1, 1] plus two features at +-400."""
    x = np.random.default_rng(0).uniform(-1, 1, (2, 16, 64)).astype(np.float32)
    x[0, 3, 5], x[1, 9, 17] = 400.0, -400.0
    return {"hidden_states": x}


def _compare(tmp_path, capsys, outliers, *keep):
    np.savez(tmp_path / "outliers.npz", **outliers)
    rc = cli_main(["compare", str(ENCODER), "--fp16", "--backend", "emulate", f"--cache-dir={tmp_path / 'cache'}",
                   "--load-inputs", str(tmp_path / "outliers.npz"), "--keep-fp32", "op:Softmax",
                   *[arg for pattern in keep for arg in ("--keep-fp32", pattern)]])
    return rc, capsys.readouterr().out


def test_following_the_printed_fix_makes_compare_pass(tmp_path, capsys, outliers):
    rc, out = _compare(tmp_path, capsys, outliers)
    assert rc == 1
    fix = next(line for line in out.splitlines() if line.strip().startswith("fix:"))
    pattern = re.search(r"--keep-fp32 '([^']+)'", fix).group(1)
    assert pattern == "/encoder/layer.0/attention/output/LayerNorm/*", fix
    rc, out = _compare(tmp_path, capsys, outliers, pattern)
    assert rc == 0, out
    assert "range:" not in out


def test_an_fp32_island_cast_back_to_fp16_is_diagnosed(tmp_path, capsys, outliers):
    """The old advice (the Pow alone): the overflow moves into the Cast that feeds ReduceMean_1."""
    plan = PrecisionPolicy("fp16", keep_fp32=("op:Softmax", POW)).resolve(load_model(ENCODER))
    found = range_overflows(plan, outliers)
    assert [(f.node, f.precision, f.cast_for, f.masking) for f in found] == [
        (POW, "fp16", "/encoder/layer.0/attention/output/LayerNorm/ReduceMean_1", False)]
    assert found[0].to_json()["cast_for"] == "/encoder/layer.0/attention/output/LayerNorm/ReduceMean_1"
    rc, out = _compare(tmp_path, capsys, outliers, POW)
    assert rc == 1
    assert (f"'{POW}_output_0' (output of '{POW}', Pow; stored FP32, cast to fp16 for "
            f"'/encoder/layer.0/attention/output/LayerNorm/ReduceMean_1') reaches 1.55e+05 in FP32") in out, out
    assert "fix: keep the first one's scope FP32 (--keep-fp32 '/encoder/layer.0/attention/output/LayerNorm/*'" in out
