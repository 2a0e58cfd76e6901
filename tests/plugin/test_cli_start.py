"""Issue 33: the console script starts at once. ``--help``, a subcommand's ``--help`` and
usage errors are answered from the light argument modules (pytest_trt.cli.args, .commands)
without importing numpy, onnx, ONNX Runtime or Polygraphy; a subcommand that runs imports
them. Checked on the real console script, in a subprocess, with ``python -X importtime``
(every imported module is listed on stderr). Timing is not asserted: bench/cli_start.py
measures it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

HEAVY = ("numpy", "onnx", "onnxruntime", "polygraphy")
REPO = Path(__file__).resolve().parents[2]
ENCODER = REPO / "example_suite" / "models" / "encoder_opset14.onnx"


def _console_script() -> list[str]:
    """The installed ``pytest-trt`` script run by this interpreter, else the package's ``-m`` entry."""
    script = Path(sysconfig.get_path("scripts")) / "pytest-trt"
    return [str(script)] if script.is_file() else ["-m", "pytest_trt.cli"]


def imported(*args: str, cwd: Path) -> tuple[int, set[str], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_TRT")}
    proc = subprocess.run([sys.executable, "-X", "importtime", *_console_script(), *args], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=120)
    names = set(re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s*([\w.]+)$", proc.stderr, re.MULTILINE))
    assert names, proc.stderr[-2000:]
    return proc.returncode, {n.split(".")[0] for n in names}, proc.stdout + proc.stderr


@pytest.mark.parametrize("args, code, says", [
    (["--help"], 0, "compare"),
    (["compare", "--help"], 0, "--load-inputs"),
    (["suggest", "--help"], 0, "--recheck-seeds"),
    (["compare", "--help"], 0, "--remote-cache-timeout"),
    (["remote-cache", "--help"], 0, "keygen"),
    (["remote-cache", "keygen", "--help"], 0, "--out"),
    (["remote-cache", "keygen", "--help"], 0, "letters, digits"),
    (["remote-cache"], 2, "the following arguments are required: ACTION"),
    (["compare", "m.onnx", "--remote-cache-timeout", "0"], 2, "argument --remote-cache-timeout: must be > 0"),
    (["compare", "m.onnx", "--remote-cache-mode", "wr"], 2, "argument --remote-cache-mode: invalid choice"),
    (["runs", "--help"], 0, "recheck"),
    (["runs", "diff", "--help"], 0, "max_abs:+25%"),
    (["runs", "recheck", "--help"], 0, "--model"),
    (["runs", "recheck", "latest"], 2, "the following arguments are required: --model"),
    (["--version"], 0, "pytest-trt "),
    (["compare"], 2, "the following arguments are required: MODEL"),
    (["compare", "m.onnx", "--atol", "x"], 2, "argument --atol: 'x' is not a number"),
    (["compare", "m.onnx", "--atol", "inf"], 2, "pass --no-check"),
    (["bogus"], 2, "invalid choice: 'bogus'"),
])
def test_help_and_usage_errors_import_no_heavy_library(tmp_path, args, code, says):
    returncode, modules, output = imported(*args, cwd=tmp_path)
    assert returncode == code, output[-2000:]
    assert says in output
    assert not modules & set(HEAVY), f"{' '.join(args)} imported {sorted(modules & set(HEAVY))}"


def test_a_subcommand_that_runs_imports_the_pipeline(tmp_path):
    """The control: the same measurement sees the libraries once a subcommand runs."""
    returncode, modules, output = imported("plan", str(ENCODER), "--fp16", cwd=tmp_path)
    assert returncode == 0, output[-2000:]
    assert {"numpy", "onnx"} <= modules
