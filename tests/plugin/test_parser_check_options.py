"""--trt-parser-check / trt_parser_check / CLI --parser-check: requested but not possible is a usage error.

"Not installed" is simulated by an inner conftest that makes pytest_trt.backends.tensorrt.parser_check report
TensorRT-RTX as missing (it is imported before the plugin's pytest_configure), so these
tests run on every machine, with or without the rtx extra.
"""

from __future__ import annotations

import subprocess
import sys

from pytest_trt.layers.network_rule import HIGHER, LOWER, OK, judge, worst

MISSING = """
import pytest_trt.backends.tensorrt.parser_check as pc
_real = pc.unavailable_reason
pc.unavailable_reason = lambda which="tensorrt-rtx": "TensorRT-RTX not installed"

def pytest_unconfigure(config):  # in-process pytester runs share the module: undo it
    pc.unavailable_reason = _real
"""

TEST = """
def test_nothing():
    pass
"""


def test_requested_but_not_installed_is_a_usage_error(pytester):
    pytester.makeconftest(MISSING)
    pytester.makepyfile(TEST)
    result = pytester.runpytest("--trt-parser-check", "tensorrt-rtx")
    assert result.ret == 4  # pytest's usage error
    assert ('--trt-parser-check tensorrt-rtx cannot run here: TensorRT-RTX not installed. Install it: '
            'pip install "pytest-trt[rtx]" (from a checkout: pip install -e ".[rtx]")') in result.stderr.str()


def test_ini_twin_names_the_ini_key(pytester):
    pytester.makeconftest(MISSING)
    pytester.makeini("[pytest]\ntrt_parser_check = tensorrt-rtx\n")
    pytester.makepyfile(TEST)
    result = pytester.runpytest()
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*ini trt_parser_check tensorrt-rtx cannot run here: TensorRT-RTX not installed*"])


def test_unknown_value_is_a_usage_error(pytester):
    pytester.makepyfile(TEST)
    result = pytester.runpytest("--trt-parser-check", "polygraphy")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*--trt-parser-check: invalid choice: 'polygraphy'*"])


def test_off_is_the_default_and_imports_nothing(pytester):
    pytester.makeconftest(MISSING)  # missing TensorRT-RTX does not matter when the check is off
    pytester.makepyfile(TEST)
    pytester.runpytest().assert_outcomes(passed=1)


def test_cli_requested_but_not_installed_exits_2(tmp_path):
    code = ("import sys, pytest_trt.backends.tensorrt.parser_check as pc\n"
            "pc.unavailable_reason = lambda which='tensorrt-rtx': 'TensorRT-RTX not installed'\n"
            "from pytest_trt.cli import main\n"
            "sys.exit(main(['plan', sys.argv[1], '--fp16', '--parser-check', 'tensorrt-rtx']))\n")
    from pathlib import Path

    model = Path(__file__).resolve().parents[2] / "example_suite" / "models" / "convnet.onnx"
    run = subprocess.run([sys.executable, "-c", code, str(model)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "--parser-check tensorrt-rtx cannot run here: TensorRT-RTX not installed" in run.stderr
    assert 'pip install -e ".[rtx]"' in run.stderr


def test_the_rule():
    assert judge("fp32", "fp16") == LOWER and judge("fp32", "bf16") == LOWER  # fails
    assert judge("fp16", "bf16") == LOWER and judge("bf16", "fp16") == LOWER  # another range: fails
    assert judge("fp16", "fp32") == HIGHER and judge("bf16", "fp32") == HIGHER  # reported, never failed
    assert judge("fp16", "fp16") == OK
    assert worst([OK, HIGHER, LOWER]) == LOWER and worst([OK, HIGHER]) == HIGHER and worst([]) == OK
