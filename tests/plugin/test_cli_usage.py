"""Issue 19, command line: the console script as a person meets it (subprocesses, real models).

Zero-size dims are usage errors everywhere; Polygraphy's multi-value flags; every numeric flag
validated with the subcommand's usage; infinite tolerances only with --no-check; --export-onnx
never overwrites the model and other files only with --force; messages in the command line's
spelling; no ONNX Runtime log lines ahead of our message.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

REPO = Path(__file__).resolve().parents[2]
ENCODER = REPO / "example_suite" / "models" / "encoder_opset14.onnx"
BERT = REPO / "tests" / "data" / "bert_tiny_opset14.onnx"


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("cli-usage")


def cli(work: Path, *args, cache: bool = True) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "pytest_trt.cli", *map(str, args)]
    if cache and args and args[0] != "plan":
        argv += ["--cache-dir", str(work / "cache")]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_TRT")}
    return subprocess.run(argv, capture_output=True, text=True, cwd=work, env=env, timeout=300)


def expect(proc, code: int, *fragments: str):
    assert proc.returncode == code, f"exit {proc.returncode}\nstdout:\n{proc.stdout[-2000:]}\nstderr:\n{proc.stderr[-3000:]}"
    for fragment in fragments:
        assert fragment in proc.stderr + proc.stdout, f"{fragment!r} not in:\n{proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stderr and "\x1b[" not in proc.stderr


# -- zero-size dims ----------------------------------------------------------------------
def test_zero_size_dims_are_usage_errors(work):
    expect(cli(work, "compare", ENCODER, "--input-shapes", "hidden_states:[0,16,64]"), 2,
           "--input-shapes 'hidden_states:[0,16,64]': dim 0 is 0; zero-size dims are not supported")
    empty = work / "empty.npz"
    np.savez(empty, hidden_states=np.zeros((2, 0, 64), np.float32))
    expect(cli(work, "compare", ENCODER, "--load-inputs", empty), 2,
           "input 'hidden_states' has a zero-size dim (shape (2, 0, 64))")


# -- Polygraphy's multi-value flags ----------------------------------------------------------
def test_multi_value_flags_after_one_flag_and_repeated(work):
    one_flag = cli(work, "compare", BERT, "--input-shapes", "input_ids:[2,8]", "attention_mask:[2,8]",
                   "--val-range", "input_ids:[0,255]", "attention_mask:[1,1]", "--json")
    expect(one_flag, 0)
    repeated = cli(work, "compare", BERT, "--input-shapes", "input_ids:[2,8]", "--input-shapes", "attention_mask:[2,8]",
                   "--val-range", "input_ids:[0,255]", "--val-range", "attention_mask:[1,1]", "--json")
    expect(repeated, 0)
    same = ("passed", "outputs", "seed")
    assert {k: json.loads(one_flag.stdout)[k] for k in same} == {k: json.loads(repeated.stdout)[k] for k in same}
    ids, mask = work / "ids.npz", work / "mask.npz"
    np.savez(ids, input_ids=np.ones((2, 8), np.int64))
    np.savez(mask, attention_mask=np.ones((2, 8), np.int64))
    expect(cli(work, "compare", BERT, "--load-inputs", ids, mask), 0)
    expect(cli(work, "compare", BERT, "--load-inputs", ids, "--load-inputs", mask), 0)
    expect(cli(work, "compare", BERT, "--load-inputs", ids, ids), 2,
           f"--load-inputs: input 'input_ids' is in both {ids} and {ids}")


# -- numeric flags -----------------------------------------------------------------------
@pytest.mark.parametrize("args, message", [
    (["locate", ENCODER, "--threshold", "-1"], "argument --threshold: must be > 0, got -1"),
    (["locate", ENCODER, "--jump", "nan"], "argument --jump: nan is not a number"),
    (["locate", ENCODER, "--top", "0"], "argument --top: must be >= 1, got 0"),
    (["suggest", ENCODER, "--threshold", "nan"], "argument --threshold: nan is not a number"),
    (["suggest", ENCODER, "--atol", "inf"], "argument --atol: must be finite, got inf"),
    (["suggest", ENCODER, "--max-builds", "0"], "argument --max-builds: must be >= 1, got 0"),
    (["compare", ENCODER, "--seed", "-3"], "argument --seed: must be >= 0, got -3"),
    (["compare", ENCODER, "--rtol", "-0.1"], "argument --rtol: must be >= 0, got -0.1"),
    (["compare", ENCODER, "--atol", "inf"], "--atol inf switches the accuracy check off; pass --no-check"),
    (["compare", ENCODER, "--bogus"], "unrecognized arguments: --bogus"),
])
def test_numbers_and_unknown_flags_are_usage_errors_with_the_subcommands_usage(work, args, message):
    proc = cli(work, *args, cache=False)
    expect(proc, 2, message, f"usage: pytest-trt {args[0]} ")


def test_infinite_tolerance_only_with_no_check(work):
    shapes = ["--input-shapes", "hidden_states:[2,8,64]"]
    expect(cli(work, "compare", ENCODER, *shapes, "--fp16", "--atol", "inf", "--rtol", "inf", "--no-check"), 0)
    expect(cli(work, "compare", ENCODER, *shapes, "--fp16", "--no-check"), 0)


def test_pytest_option_refuses_an_infinite_tolerance(pytester):
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest("--trt-atol", "inf")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*invalid value 'inf' for trt-atol: must be finite*"])


# -- --export-onnx -----------------------------------------------------------------------
def test_export_onnx_never_overwrites_the_model_and_others_only_with_force(work):
    model = work / "encoder.onnx"
    model.write_bytes(ENCODER.read_bytes())
    before = model.read_bytes()
    expect(cli(work, "plan", model, "--fp16", "--export-onnx", model), 2, "is MODEL itself")
    expect(cli(work, "plan", model, "--fp16", "--export-onnx", model, "--force"), 2, "is MODEL itself")
    assert model.read_bytes() == before
    other = work / "typed.onnx"
    other.write_text("keep me")
    expect(cli(work, "plan", model, "--fp16", "--export-onnx", other), 2, "exists; pass --force to overwrite it")
    assert other.read_text() == "keep me"
    expect(cli(work, "plan", model, "--fp16", "--export-onnx", other, "--force"), 0)
    onnx.checker.check_model(onnx.load(other))


# -- spelling of the interface -----------------------------------------------------------------
def test_messages_use_the_command_lines_spelling(work):
    nan = work / "nan.npz"
    x = np.zeros((2, 8, 64), np.float32)
    x[0, 0, 0] = np.nan
    np.savez(nan, hidden_states=x)
    proc = cli(work, "compare", ENCODER, "--load-inputs", nan)
    expect(proc, 2, "pass --allow-nonfinite if that is intended")
    assert "allow_nonfinite=True" not in proc.stderr
    assert cli(work, "compare", ENCODER, "--load-inputs", nan, "--allow-nonfinite").returncode in (0, 1)

    blocker = work / "a-file"
    blocker.write_text("")
    proc = cli(work, "compare", ENCODER, "--cache-dir", blocker / "cache", cache=False)
    expect(proc, 2, "Pass --cache-dir DIR")
    assert "--trt-cache-dir" not in proc.stderr

    proc = cli(work, "layers", ENCODER, "--fp16", "--expect", "*/LayerNorm/*=fp32")
    assert proc.returncode == 1
    assert "--keep-fp32 '*/LayerNorm/*'" in proc.stderr + proc.stdout
    assert "keep_fp32=[" not in proc.stderr + proc.stdout and "--trt-keep-fp32" not in proc.stderr + proc.stdout
    assert "(--json lists all)" in proc.stderr


def test_pytest_option_names_in_pipeline_messages_become_the_cli_flags():
    # Messages the console script can print that need a GPU or TensorRT to trigger (the typing
    # remedies of verify/precision.py, a corrupt TensorRT cache entry, an RTX engine on an unsupported GPU):
    # the one table in cli/spelling.py rewrites the pytest options to the flags the CLI has.
    from pytest_trt.cli import build_parser
    from pytest_trt.cli.spelling import cli_spelling
    from pytest_trt.verify import precision as verify

    remedy = cli_spelling(verify.WEAK_TYPING_REMEDY)
    assert "--trt-" not in remedy
    assert "--typing auto on TensorRT >= 10.0, or --typing strong" in remedy
    assert cli_spelling("Rebuild it with --trt-rebuild; if that fails too") == "Rebuild it with --rebuild; if that fails too"
    assert cli_spelling("use --trt-backend tensorrt here") == "use --backend tensorrt here"
    # only whole option names: a longer pytest option is not cut into a CLI flag
    assert cli_spelling("--trt-backend-x --trt-typing_y") == "--trt-backend-x --trt-typing_y"
    # the CLI really has those flags
    compare = build_parser().parse_args(["compare", "m.onnx", "--typing", "strong", "--backend", "emulate", "--rebuild"])
    assert (compare.typing, compare.backend, compare.rebuild) == ("strong", "emulate", True)


def test_onnx_runtime_log_lines_do_not_leak_ahead_of_our_message(work):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 3])
    shape = helper.make_tensor("shape", TensorProto.INT64, [2], [3, 3])
    node = helper.make_node("Reshape", ["x", "shape"], ["y"], name="bad_reshape")
    graph = helper.make_graph([node], "g", [x], [y], initializer=[shape])
    bad = work / "bad_reshape.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), bad)
    proc = cli(work, "compare", bad, "--input-shapes", "x:[2,4]")
    expect(proc, 2, "The input tensor cannot be reshaped to the requested shape")
    assert proc.stderr.startswith("pytest-trt compare: error: ONNX Runtime failed to run"), proc.stderr
    assert "[E:onnxruntime" not in proc.stderr
