"""Issue 15, item 3: a node known only from a fused kernel's boundary is not a pass under weak typing.

A pytest run as users meet it (``--trt-backend tensorrt``), in a subprocess whose conftest
installs the FAKE tensorrt module (tests/unit/fake_tensorrt.py: glue only, named as a fake).
The fake fuses every ``*/LayerNorm/*`` layer into one Myelin ``__myl_`` kernel whose
Metadata lists the nine LayerNorm nodes; with ``myelin_ignores_hints=False`` the kernel's
boundary is FP32, as the weak-typing hints asked. Before issue 15 the inner ``Pow`` was
reported "ok" from that boundary alone and ``trt.assert_precision("*/LayerNorm/*", "fp32")``
passed; now it fails under weak typing (8 nodes inferred from the kernel boundary) and
passes under strong typing with "strong typing: typed in the network, boundary consistent".
"""

from __future__ import annotations

import json
from pathlib import Path

import onnx
from report_schema import assert_valid_report

from pytest_trt.model import testing_models as tm

ROOT = Path(__file__).resolve().parents[2]
FAKE = ROOT / "tests" / "unit" / "fake_tensorrt.py"
LN = "/encoder/layer.0/attention/output/LayerNorm"

CONFTEST = f'''
import importlib.util
import sys

_spec = importlib.util.spec_from_file_location("_pytest_trt_fake_tensorrt", {str(FAKE)!r})
_fake = sys.modules.setdefault("_pytest_trt_fake_tensorrt", importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(_fake)
FAKE = _fake.make_fake_tensorrt("10.8.0", myelin_prefix={LN + "/"!r}, myelin_ignores_hints=False)
sys.modules["tensorrt"] = FAKE

from pytest_trt.core import environment
from pytest_trt.backends.tensorrt import backend as trt_backend
from pytest_trt.backends.tensorrt import compat as trt_compat

GPU = {{"gpu": "NVIDIA Fake 4090", "compute_capability": "8.9", "driver": "580.00", "cuda": "13.0"}}
trt_backend.tensorrt_unavailable_reason = lambda module="tensorrt": None
trt_backend.device_info = lambda: dict(GPU)
trt_backend.installed_version = lambda backend: "10.8.0"
trt_compat.installed_version = lambda backend: "10.8.0"
'''

TEST_FILE = '''
import pytest

@pytest.mark.trt(model="block.onnx", precision="fp16", keep_fp32=["*/LayerNorm/*"])
def test_layernorm_stays_fp32(trt):
    trt.assert_precision("*/LayerNorm/*", "fp32")
'''


def _project(pytester):
    onnx.save(tm.decomposed_layernorm_block(hidden=16, seq=4), str(pytester.path / "block.onnx"))
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_block=TEST_FILE)


def _run(pytester, typing: str):
    report = pytester.path / f"report-{typing}.json"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--trt-backend", "tensorrt",
                                           "--trt-typing", typing, f"--trt-cache-dir={pytester.path / 'cache'}",
                                           f"--trt-report={report}")
    return result, assert_valid_report(json.loads(report.read_text()))


def test_weak_typing_fused_kernel_with_fp32_boundary_fails_as_unverifiable(pytester):
    _project(pytester)
    result, data = _run(pytester, "weak")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*PrecisionError",
        "*assert_precision('[*]/LayerNorm/[*]', 'fp32', method='inspect') failed: 8 of 9 matched compute node(s) "
        "not shown in fp32 (0 failed, 8 unverifiable)*",
        "*typing weak, source inspector",
        "*evidence: 1 observed, 8 inferred from a kernel boundary, 0 unverifiable (not a pass without strong typing)",
        f"*{LN}/Pow (Pow): planned fp32, fp32 inferred from the kernel boundary in Myelin region*",
        "*8 node(s) are known only from a fused kernel's boundary*--trt-typing strong*",
        "precision checks: 0 passed, 1 failed; constrained nodes: 2 not_applicable, 1 pass, 8 unverifiable; "
        "evidence: 1 observed, 8 inferred",
        f"  FAIL test_block.py::test_layernorm_stays_fp32: */LayerNorm/* -> fp32: {LN}/ReduceMean (unverifiable, "
        f"fp32 inferred)*",
    ])
    [check] = data["tests"][0]["precision"]
    assert check["passed"] is False and check["typing"] == "weak"
    assert check["evidence"] == {"observed": 1, "inferred": 8, "unverifiable": 0, "emulated": 0}
    pow_ = next(n for n in check["nodes"] if n["node"] == f"{LN}/Pow")
    assert (pow_["status"], pow_["evidence"], pow_["observed"]) == ("unverifiable", "inferred", "fp32")


def test_strong_typing_reports_typed_in_the_network_and_passes(pytester):
    _project(pytester)
    result, data = _run(pytester, "strong")
    result.assert_outcomes(passed=1)
    [check] = data["tests"][0]["precision"]
    assert check["passed"] is True and check["typing"] == "strong"
    # strongly typed, the realization's Cast back to FP16 (named under the LayerNorm scope) is fused into the
    # kernel too: its boundary is that Cast's FP16 output, as the network types it; all nine are inferred
    assert check["evidence"] == {"observed": 0, "inferred": 9, "unverifiable": 0, "emulated": 0}
    pow_ = next(n for n in check["nodes"] if n["node"] == f"{LN}/Pow")
    assert pow_["status"] == "pass" and pow_["evidence"] == "inferred"
    assert pow_["detail"].startswith("strong typing: typed in the network, boundary consistent")
    result.stdout.fnmatch_lines(["precision checks: 1 passed, 0 failed; constrained nodes: 2 not_applicable, 9 pass; "
                                 "evidence: 9 inferred"])
