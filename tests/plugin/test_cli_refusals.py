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


# -- token ids beyond the embedding table ---------------------------------------------------
LLAMA_SHAPES = ("--input-shapes", "input_ids:[2,16]", "attention_mask:[2,16]")


def test_a_val_range_beyond_the_embedding_is_an_input_error_before_anything_runs(tmp_path, capsys):
    rc, out, err = _cli(capsys, "compare", LLAMA, "--fp16", "--backend", "emulate", f"--cache-dir={tmp_path / 'c'}",
                        *LLAMA_SHAPES, "--val-range", "input_ids:[0,300]", "attention_mask:[1,1]")
    assert rc == 2
    assert ("llama_dynamo_opset18.onnx: val_range['input_ids'] [0, 300] for input 'input_ids' is outside the 256 "
            "rows of 'model.embed_tokens.weight', the table it indexes (valid ids: 0 to 255); use "
            "val_range={'input_ids': (0, 255)} or --val-range input_ids:[0,255]") in err, err
    assert "ONNXRuntimeError" not in err and out == ""


def test_loaded_ids_beyond_the_embedding_are_an_input_error(tmp_path, capsys):
    ids = np.arange(32, dtype=np.int64).reshape(2, 16)
    ids[1, 3] = 300
    np.savez(tmp_path / "ids.npz", input_ids=ids, attention_mask=np.ones((2, 16), np.int64))
    rc, _, err = _cli(capsys, "compare", LLAMA, "--fp16", "--backend", "emulate", f"--cache-dir={tmp_path / 'c'}",
                      "--load-inputs", tmp_path / "ids.npz")
    assert rc == 2
    assert ("input 'input_ids' holds 1 id(s) outside the 256 rows of 'model.embed_tokens.weight', the table it "
            "indexes (ids 0 to 300; first at index (1, 3), 300; valid: 0 to 255)") in err, err


def test_the_marker_and_the_api_check_the_range_too():
    from pytest_trt.errors import InputError
    from pytest_trt.inputs import make_feeds

    with pytest.raises(InputError, match=r"val_range\['input_ids'\] \[0, 256\] for input 'input_ids' is outside "
                                         r"the 256 rows of 'model.embed_tokens.weight'"):
        make_feeds(LLAMA, shapes={"input_ids": (1, 4), "attention_mask": (1, 4)},
                   val_range={"input_ids": (0, 256), "attention_mask": (1, 1)})
    feeds = make_feeds(LLAMA, shapes={"input_ids": (1, 4), "attention_mask": (1, 4)},
                       val_range={"input_ids": (0, 255), "attention_mask": (1, 1)})
    assert int(feeds["input_ids"].max()) <= 255
