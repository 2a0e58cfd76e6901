"""Issue 7: a Hypothesis property test finds a planted FP16 failure, shrinks it, and the
saved .npz replays the failure through `pytest-trt compare --load-inputs`."""

from __future__ import annotations

import shlex
import subprocess
import sys

import numpy as np
import onnx

from pytest_trt.model import testing_models as tm

TEST_FILE = """
import pytest
from hypothesis import HealthCheck, given, settings
from pytest_trt import strategies

MODEL = {model!r}
OUTLIERS = {{"hidden_states": {{"count": (0, 2), "magnitude": (10.0, 1000.0)}}}}

@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(feeds=strategies.feeds(MODEL, outliers=OUTLIERS))
@pytest.mark.trt(model=MODEL, precision="fp16")   # planted: the LayerNorm is left in FP16
def test_fp16_layernorm_for_all_inputs(trt, feeds):
    trt.check(feeds, atol=1e-2)
"""


def test_property_test_finds_shrinks_saves_and_replays(pytester):
    model_path = pytester.path / "layernorm.onnx"
    onnx.save(tm.decomposed_layernorm_block(hidden=64, seq=8), model_path)
    pytester.makepyfile(test_planted_property=TEST_FILE.format(model=str(model_path)))

    result = pytester.runpytest("--trt-cache-dir=" + str(pytester.path / "cache"))
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "Falsifying example" in out or "Failing test case" in out  # Hypothesis reports the shrunk example
    result.stdout.fnmatch_lines(["*inputs: given by the test, saved to *.npz", "*replay: pytest-trt compare *"])

    [saved] = list((pytester.path / "trt-artifacts").glob("*.npz"))
    script = saved.with_suffix(".sh")
    command = script.read_text().strip().splitlines()[-1]
    assert "--fp16" in command and "--load-inputs" in command and "--backend emulate" in command

    # Shrunk: the minimal failing example has one outlier just past the FP16 overflow of Pow
    # (|x - mean| > 255.9), everything else Hypothesis's simplest value.
    with np.load(saved) as data:
        x = data["hidden_states"]
    big = np.abs(x) > 100
    assert big.sum() == 1, f"expected one outlier after shrinking, got {big.sum()}"
    assert 255 < np.abs(x[big]).max() < 1000

    # The saved example replays the failure outside pytest (exit 1 = accuracy failure) ...
    argv = shlex.split(command)
    assert argv[0] == "pytest-trt"
    cli = [sys.executable, "-m", "pytest_trt.cli", *argv[1:], "--cache-dir", str(pytester.path / "cache")]
    replay = subprocess.run(cli, capture_output=True, text=True, cwd=pytester.path)
    assert replay.returncode == 1, replay.stdout + replay.stderr
    assert "last_hidden_state" in replay.stdout or "output" in replay.stdout
    # ... and passes once the LayerNorm is kept FP32 (exit 0).
    fixed = subprocess.run([*cli, "--keep-fp32", "*/LayerNorm/*"], capture_output=True, text=True, cwd=pytester.path)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
