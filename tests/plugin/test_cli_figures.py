"""``pytest-trt compare`` / ``locate``: the precision label is the policy's, and a passing output
shows its margin (issue 15 item 8). Run in-process through ``pytest_trt.cli.main`` (issue 33): the
figures are the point here; the console script's exit statuses are tested as subprocesses in
test_cli_usage.py, test_cli_locate_suggest.py and tests/reliability/test_bad_inputs.py.

Before: ``compare --fp16`` printed ``[precision fp32; ...]`` and the JSON said
``"precision": "fp32"``; a passing output's ``max_abs``, ``max_rel``, ``cosine`` and ``snr_db``
were null, so nobody saw how close to the tolerance it was.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
from pathlib import Path

import pytest

ENCODER = Path(__file__).resolve().parents[2] / "example_suite" / "models" / "encoder_opset14.onnx"
SHAPES = ("--input-shapes", "hidden_states:[2,8,64]")


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("cli-figures-cache"))


@pytest.fixture
def cli(capfd, cache_dir):
    """``cli(*args)``: ``pytest_trt.cli.main`` in-process; exit status and fd 1/2 as a CompletedProcess."""
    from pytest_trt.cli import main

    def run(*args) -> subprocess.CompletedProcess:
        argv = [*args, "--backend", "emulate", f"--cache-dir={cache_dir}", *SHAPES]
        capfd.readouterr()
        code = main(argv)
        out, err = capfd.readouterr()
        return subprocess.CompletedProcess(argv, code, out, err)

    return run


def _passing_figures(out: dict) -> None:
    assert out["passed"] is True
    for key in ("max_abs", "max_rel", "cosine", "snr_db", "tolerance_ratio"):
        assert isinstance(out[key], float) and math.isfinite(out[key]), (key, out[key])
    assert 0.99 < out["cosine"] <= 1.0 and out["snr_db"] > 20
    assert 0 < out["tolerance_ratio"] <= 1.0


@pytest.mark.parametrize("flag, precision", [("--fp16", "fp16"), ("--bf16", "bf16")])
def test_compare_labels_the_policy_precision_and_shows_the_margin_of_a_pass(cli, flag, precision):
    proc = cli("compare", str(ENCODER), flag, "--keep-fp32", "*/LayerNorm/*", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(proc.stdout)
    assert data["precision"] == precision
    _passing_figures(data["outputs"]["last_hidden_state"])

    text = cli("compare", str(ENCODER), flag, "--keep-fp32", "*/LayerNorm/*")
    assert text.returncode == 0, text.stdout + text.stderr
    assert f"match the reference [precision {precision}; " in text.stdout, text.stdout
    assert "precision fp32" not in text.stdout
    passed = next(line for line in text.stdout.splitlines() if line.startswith("passed: 'last_hidden_state'"))
    for figure in ("max abs err", "max rel err", "cosine", "SNR"):
        assert figure in passed, passed
    assert ("x tol (the largest of: the worst element's error / max(atol, rtol*|expected|), (1 - cos) / "
            "(1 - min_cosine) where a cosine floor applies, the SNR floor's; > 1 fails): 'last_hidden_state' ") in text.stdout
    assert re.search(r"'last_hidden_state' [0-9.e-]+ \((element|cosine)\)", text.stdout), text.stdout


def test_locate_labels_the_policy_precision_and_shows_the_figures(cli):
    proc = cli("locate", str(ENCODER), "--fp16", "--keep-fp32", "*/LayerNorm/*", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(proc.stdout)
    assert data["compare"]["precision"] == "fp16"
    _passing_figures(data["compare"]["outputs"]["last_hidden_state"])

    text = cli("locate", str(ENCODER), "--fp16", "--keep-fp32", "*/LayerNorm/*")
    assert text.returncode == 0, text.stdout + text.stderr
    # the criterion, as every report words it (each value with its source)
    assert ("outputs within tolerance [precision fp16; rtol=0.02, atol=0.01, min_cosine=0.9999 (fp16 default)]"
            in text.stdout), text.stdout
    assert data["compare"]["criterion"]["outputs"]["last_hidden_state"]["atol"]["source"] == "fp16 default"
    assert "max abs err" in text.stdout and "SNR" in text.stdout and "x tol" in text.stdout
