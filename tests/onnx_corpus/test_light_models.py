"""Tier ``onnx_corpus``: the 9 real CNNs onnx ships (``data/light``), end to end through the
CLI as users run it: ``pytest-trt compare`` in a subprocess gives a real verdict for each
(exit 0 or 1, never 2/3), and a failure caused by FP32 activations beyond the FP16 range
for the runner's inputs says so (resnet50, zfnet512 and four more with the runner's
default inputs in [-1, 1]: measured with onnx 1.23.2)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from onnx_corpus import _file_entries

pytestmark = pytest.mark.onnx_corpus

LIGHT = dict(_file_entries("light"))
#: light models whose FP32 activations exceed 65504 for the runner's default inputs (seed 0)
BEYOND_FP16 = {"light_bvlc_alexnet", "light_inception_v1", "light_resnet50", "light_squeezenet",
               "light_vgg19", "light_zfnet512"}


def _compare(path, *flags, cache):
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_trt.cli", "compare", str(path), "--backend", "emulate", "--json",
         "--cache-dir", str(cache), *flags],
        capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 1), f"{path.name} {flags}: exit {proc.returncode}\n{proc.stderr[-2000:]}"
    return proc.returncode, json.loads(proc.stdout)


def test_there_are_nine():
    assert len(LIGHT) == 9, sorted(LIGHT)


@pytest.mark.parametrize("name", sorted(LIGHT))
def test_light_model_fp16_verdict(name, tmp_path):
    code, report = _compare(LIGHT[name], "--fp16", cache=tmp_path)
    assert report["passed"] == (code == 0)
    overflows = report.get("range_overflows", [])
    if name in BEYOND_FP16:
        assert code == 1 and overflows, report
        first = overflows[0]
        assert first["precision"] == "fp16" and first["max_abs"] > 65504 and first["node"]
    else:
        assert code == 0 and not overflows, report


@pytest.mark.parametrize("name", ["light_resnet50", "light_zfnet512"])
def test_range_failure_says_so_in_text(name, tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_trt.cli", "compare", str(LIGHT[name]), "--fp16", "--backend", "emulate",
         "--cache-dir", str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1
    assert "beyond the fp16 range (65504)" in proc.stdout and "--keep-fp32" in proc.stdout


@pytest.mark.parametrize("name", sorted(LIGHT))
def test_light_model_fp32_policy_passes(name, tmp_path):
    code, report = _compare(LIGHT[name], cache=tmp_path)
    assert code == 0, report
