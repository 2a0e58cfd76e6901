"""The terminal summary's counts of a green run (review1 defect 5).

Before: a green run with a caught negative control printed "precision checks: 1 passed, 0 failed
(1 more by negative controls, as expected: xfail); constrained nodes: 36 fail, ...": the nodes of
the caught control counted as failures, while the check counts (and the JSON's ``*_caught``) set it
apart.
"""

from __future__ import annotations

import pytest
from encoder_suite import ENCODER_PREAMBLE

SUITE = f"""
import pytest
from pytest_trt import PrecisionError

{ENCODER_PREAMBLE}
@pytest.mark.trt(model=ENCODER, precision="fp16", keep_fp32=["*/LayerNorm/*"], dims=DIMS, val_range=NORMAL)
def test_layernorm_stays_fp32(trt):
    trt.assert_precision("*/LayerNorm/*", "fp32")

@pytest.mark.xfail(raises=PrecisionError, strict=True, reason="negative control: LayerNorm lowered")
@pytest.mark.trt(model=ENCODER, precision="fp16", dims=DIMS, val_range=NORMAL)
def test_negative_control(trt):
    trt.assert_precision("*/LayerNorm/*", "fp32")
"""


def test_a_caught_negative_controls_nodes_are_counted_apart(pytester):
    pytester.makepyfile(SUITE)
    result = pytester.runpytest(f"--trt-cache-dir={pytester.path / 'cache'}", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=1, xfailed=1)
    line = next(ln for ln in result.outlines if ln.startswith("precision checks:"))
    own, _, controls = line.partition("; in negative controls (caught, as expected): ")
    assert own.startswith("precision checks: 1 passed, 0 failed (1 more by negative controls, as expected: xfail); "
                          "constrained nodes: "), line
    assert "fail" not in own.split("constrained nodes: ")[1], line  # a green run shows no failed node
    assert controls == "36 fail, 8 not_applicable", line
