"""Console-script flags that could not do what they say are usage errors (review1 defects 6b, 6c, 6d).

* ``plan --export-onnx DIR``: said "exists; pass --force", then with ``--force`` "cannot write it: Is a
  directory": a directory is now refused up front, with or without ``--force``.
* ``layers --val-range ... --seed 5 --allow-nonfinite``: accepted and ignored (layers runs no input);
  now refused, except with ``--ledger`` where timing runs the engine on inputs.
* ``compare --val-range input_ids:[0,300]`` on a 256-token model: ONNX Runtime's raw Gather error;
  now an input error naming the input, the range and the embedding table's rows, before any run.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pytest_trt.cli import main as cli_main

REPO = Path(__file__).resolve().parents[2]
ENCODER = REPO / "example_suite" / "models" / "encoder_opset14.onnx"
LLAMA = REPO / "tests" / "data" / "exports" / "llama_dynamo_opset18.onnx"


def _cli(capsys, *args):
    rc = cli_main([str(a) for a in args])
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


# -- plan --export-onnx DIR --------------------------------------------------------------
@pytest.mark.parametrize("force", [[], ["--force"]])
def test_export_onnx_to_a_directory_is_refused_up_front(tmp_path, capsys, force):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine\n")
    rc, _, err = _cli(capsys, "plan", ENCODER, "--fp16", "--export-onnx", out, *force)
    assert rc == 2
    assert f"--export-onnx {out} is a directory: give a file path, e.g. --export-onnx " \
           f"{out / 'encoder_opset14_realized.onnx'}" in err, err
    assert [p.name for p in out.iterdir()] == ["keep.txt"]


# -- layers and the flags of input values ---------------------------------------------------
@pytest.mark.parametrize("flags, named", [
    (["--val-range", "hidden_states:[-1,1]"], "--val-range: layers runs no input"),
    (["--seed", "5"], "--seed: layers runs no input"),
    (["--seed", "0"], "--seed: layers runs no input"),
    (["--allow-nonfinite"], "--allow-nonfinite: layers runs no input"),
    (["--val-range", "hidden_states:[-1,1]", "--seed", "5", "--allow-nonfinite"],
     "--val-range and --seed and --allow-nonfinite: layers runs no input"),
])
def test_layers_refuses_value_flags_it_would_ignore(tmp_path, capsys, flags, named):
    rc, out, err = _cli(capsys, "layers", ENCODER, "--fp16", "--backend", "emulate", f"--cache-dir={tmp_path / 'cache'}", *flags)
    assert rc == 2, out
    assert named in err and "would be ignored; drop " in err and "--input-shapes" in err, err
    assert out == ""


def test_layers_ledger_without_a_timing_source_refuses_them_too(tmp_path, capsys):
    rc, _, err = _cli(capsys, "layers", ENCODER, "--fp16", "--backend", "emulate", f"--cache-dir={tmp_path / 'cache'}",
                      "--ledger", "--val-range", "hidden_states:[-1,1]")
    assert rc == 2
    assert "--val-range: layers --ledger runs no input (no timing source here: " in err, err
    rc, _, err = _cli(capsys, "layers", ENCODER, "--fp16", "--backend", "emulate", f"--cache-dir={tmp_path / 'cache'}",
                      "--ledger", "--timing", "off", "--seed", "3")
    assert rc == 2 and "--seed: layers --ledger runs no input (--timing off)" in err, err


def test_layers_takes_only_the_shapes_of_loaded_inputs(tmp_path, capsys):
    """NaN in an .npz given for its shapes is not looked at: nothing runs."""
    x = np.zeros((1, 4, 64), np.float32)
    x[0, 0, 0] = np.nan
    np.savez(tmp_path / "x.npz", hidden_states=x)
    rc, out, err = _cli(capsys, "layers", ENCODER, "--fp16", "--backend", "emulate", f"--cache-dir={tmp_path / 'cache'}",
                        "--load-inputs", tmp_path / "x.npz")
    assert rc == 0, err
    assert "encoder_opset14.onnx" in out


def test_layers_exit_status_as_a_subprocess(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "pytest_trt.cli", "layers", str(ENCODER), "--fp16", "--backend",
                           "emulate", f"--cache-dir={tmp_path / 'cache'}", "--seed", "5"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
