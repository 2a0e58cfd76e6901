"""`pytest-trt locate` / `pytest-trt suggest`, and --trt-locate-on-failure in a pytest run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_trt.cli import main
from pytest_trt.inputs import make_feeds, save_feeds

ROOT = Path(__file__).resolve().parents[2]
ENCODER14 = ROOT / "example_suite" / "models" / "encoder_opset14.onnx"
LN0 = "/encoder/layer.0/attention/output/LayerNorm"
DIMS = {"batch": 2, "sequence": 16}
OUTLIERS = {"hidden_states": {"count": 2, "magnitude": 400.0}}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """The failing inputs (outlier features) and normal ones, as .npz files."""
    d = tmp_path_factory.mktemp("inputs")
    outliers = make_feeds(ENCODER14, dims=DIMS, val_range={"hidden_states": (-1, 1)}, outliers=OUTLIERS)
    normal = make_feeds(ENCODER14, dims=DIMS)
    return {"outliers": str(save_feeds(d / "outliers.npz", outliers)), "normal": str(save_feeds(d / "normal.npz", normal))}


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("trt-cache"))


def _cli(capsys, cache_dir, command, *args):
    code = main([command, str(ENCODER14), "--backend", "emulate", "--cache-dir", cache_dir, *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_help_lists_the_subcommands(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "locate" in out and "suggest" in out
    with pytest.raises(SystemExit):
        main(["suggest", "--help"])
    out = capsys.readouterr().out
    for flag in ("--fp16", "--keep-fp32", "--load-inputs", "--atol", "--max-builds", "--json"):
        assert flag in out, flag


def test_locate_names_the_layernorm_and_fails_like_compare(capsys, cache_dir, inputs):
    code, out, _ = _cli(capsys, cache_dir, "locate", "--fp16", "--load-inputs", inputs["outliers"], "--atol", "1e-2")
    assert code == 1
    assert "outputs OUTSIDE tolerance" in out
    assert f"first divergent node: {LN0}/Pow (Pow, fp16)" in out
    assert "upstream nodes within tolerance" in out


def test_locate_passes_when_the_outputs_pass(capsys, cache_dir, inputs):
    code, out, _ = _cli(capsys, cache_dir, "locate", "--fp16", "--load-inputs", inputs["outliers"], "--atol", "1e-2",
                        "--keep-fp32", f"{LN0}/*")
    assert code == 0
    assert "outputs within tolerance" in out and "no divergent node" in out


def test_locate_json(capsys, cache_dir, inputs):
    code, out, _ = _cli(capsys, cache_dir, "locate", "--fp16", "--load-inputs", inputs["outliers"], "--atol", "1e-2",
                        "--json", "--top", "3")
    data = json.loads(out)
    assert code == 1 and data["passed"] is False
    assert data["divergence"]["first"]["node"] == f"{LN0}/Pow"
    assert len(data["divergence"]["top"]) <= 3
    assert data["compare"]["outputs"]


def test_suggest_then_compare_with_the_suggested_patterns_passes(capsys, cache_dir, inputs):
    code, out, _ = _cli(capsys, cache_dir, "suggest", "--fp16", "--load-inputs", inputs["outliers"], "--atol", "1e-2")
    assert code == 0
    assert f"CLI:     --keep-fp32 '{LN0}/*'" in out
    assert f"pytest:  --trt-keep-fp32 '{LN0}/*'" in out
    code, out, _ = _cli(capsys, cache_dir, "suggest", "--fp16", "--load-inputs", inputs["outliers"], "--atol", "1e-2",
                        "--json")
    data = json.loads(out)
    assert code == 0 and data["passed"] and data["builds"] <= 10
    assert all("/LayerNorm/" in p for p in data["patterns"])
    code, out, _ = _cli(capsys, cache_dir, "compare", "--fp16", "--load-inputs", inputs["outliers"], "--atol", "1e-2",
                        *data["cli_args"])
    assert code == 0, out
    # without them, compare fails
    code, _, _ = _cli(capsys, cache_dir, "compare", "--fp16", "--load-inputs", inputs["outliers"], "--atol", "1e-2")
    assert code == 1


def test_suggest_on_a_passing_model_says_nothing_needs_to_change(capsys, cache_dir, inputs):
    code, out, _ = _cli(capsys, cache_dir, "suggest", "--fp16", "--load-inputs", inputs["normal"], "--atol", "1e-2")
    assert code == 0 and "nothing needs to change" in out and "1 build" in out


def test_suggest_exits_1_when_nothing_passes_within_the_budget(capsys, cache_dir, inputs):
    code, out, _ = _cli(capsys, cache_dir, "suggest", "--fp16", "--load-inputs", inputs["outliers"], "--atol", "1e-2",
                        "--max-builds", "1")
    assert code == 1 and "no passing set within 1 build (--max-builds)" in out and "Raise --max-builds" in out


def test_usage_errors_exit_2(capsys, cache_dir, inputs):
    code, _, err = _cli(capsys, cache_dir, "suggest", "--fp16", "--load-inputs", inputs["outliers"],
                        "--keep-fp32", "*/LayerNrom/*")
    assert code == 2 and "matches no node" in err
    code, _, err = _cli(capsys, cache_dir, "locate", "--fp16", "--load-inputs", "/nonexistent.npz")
    assert code == 2


def test_console_script_runs_locate(inputs, cache_dir):
    proc = subprocess.run([sys.executable, "-m", "pytest_trt.cli", "locate", str(ENCODER14), "--fp16", "--backend",
                           "emulate", "--cache-dir", cache_dir, "--load-inputs", inputs["outliers"], "--atol", "1e-2"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert f"first divergent node: {LN0}/Pow" in proc.stdout


# --------------------------------------------------------------------------------------
# in a pytest run: --trt-locate-on-failure
# --------------------------------------------------------------------------------------
TEST_FILE = f'''
import pytest

@pytest.mark.trt(model={str(ENCODER14)!r}, precision="fp16", dims={DIMS!r}, val_range={{"hidden_states": (-1.0, 1.0)}})
def test_encoder_fp16_outliers(trt):
    trt.check(trt.feeds(outliers={OUTLIERS!r}), atol=1e-2)
'''


def test_locate_on_failure_names_the_layernorm_node(pytester):
    pytester.makepyfile(test_enc=TEST_FILE)
    result = pytester.runpytest("--trt-backend", "emulate", "--trt-cache-dir=" + str(pytester.path / "cache"),
                                "--trt-locate-on-failure")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "AccuracyError" in out
    result.stdout.fnmatch_lines(["*first divergent node: */LayerNorm/* (*, fp16)*upstream nodes within tolerance*"])
    assert f"first divergent node: {LN0}/Pow" in out
    assert "layerwise localisation failed" not in out



def test_an_internal_error_is_exit_3_never_1(monkeypatch, capsys):
    """Exit 1 means "accuracy failure": a bug of ours must not masquerade as one."""
    import importlib

    from pytest_trt import cli

    # the live module (an earlier in-process pytester run may have left a stale one on the package)
    plan_cmd = importlib.import_module("pytest_trt.cli.plan")

    def broken(args):
        raise RuntimeError("boom")

    monkeypatch.setattr(plan_cmd, "run", broken)
    assert cli.main(["plan", "whatever.onnx"]) == 3
    err = capsys.readouterr().err
    assert "RuntimeError: boom" in err and "internal error (exit 3)" in err


# --------------------------------------------------------------------------------------
# issue 15: FP32 in effect exits 1; answers are re-checked on seeds; JSON says so
# --------------------------------------------------------------------------------------
GPT2 = ROOT / "tests" / "data" / "gpt2_tiny_opset14.onnx"


def test_suggest_fp32_in_effect_exits_1_with_json_fields(capsys, cache_dir):
    # BF16 with FP16-sized tolerances: the only passing sets keep ~90% of GPT-2 in FP32
    code = main(["suggest", str(GPT2), "--bf16", "--backend", "emulate", "--cache-dir", cache_dir,
                 "--input-shapes", "input_ids:[2,8]", "--val-range", "input_ids:[0,100]",
                 "--atol", "1e-3", "--rtol", "1e-2", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 1
    assert data["reason"] == "fp32-in-effect" and data["fp32_in_effect"] is True and data["passed"] is False
    assert data["fp32_share"] > 0.5 and data["flops"]["fp32_share"] > 0.5
    assert data["patterns"]  # what was found, for inspection
    assert data["recheck_seeds"] == [1, 2, 3] and data["recheck_source"] == "generated like your inputs"
    assert [i["label"] for i in data["inputs"]] == ["your inputs (seed 0)", "seed 1", "seed 2", "seed 3"]
    assert all(i["outputs_passed"] and i["nonfinite_nodes"] == [] for i in data["inputs"])
    assert data["passes_output_only"] is False and data["nonfinite_nodes"] == []


def test_suggest_answer_is_rechecked_on_seeds(capsys, cache_dir, inputs):
    code, out, _ = _cli(capsys, cache_dir, "suggest", "--fp16", "--load-inputs", inputs["outliers"], "--atol", "1e-2",
                        "--recheck-seeds", "4")
    assert code == 0
    assert ("checked on: your inputs, seed 1, seed 2, seed 3, seed 4 (your inputs' values, permuted by seed): "
            "outputs pass, no NaN/Inf inside where FP32 is finite") in out
    code, _, err = _cli(capsys, cache_dir, "suggest", "--fp16", "--load-inputs", inputs["outliers"],
                        "--recheck-seeds", "2")
    assert code == 2 and "--recheck-seeds must be at least 3" in err


def test_trt_suggest_in_a_test_does_not_call_fp32_in_effect_found(pytester):
    # Before issue 15 `trt.suggest(...).passed` was True here (['/transformer/*', '/lm_head/*'] kept ~90% of
    # the model in FP32), so a test asserting it was green.
    pytester.makepyfile(test_gpt=f'''
import pytest

@pytest.mark.trt(model={str(GPT2)!r}, precision="bf16", dims={{"batch": 2, "sequence": 8}},
                 val_range={{"input_ids": (0, 100)}})
def test_bf16_islands(trt):
    s = trt.suggest(atol=1e-3, rtol=1e-2)
    assert s.passed, s.message()
''')
    result = pytester.runpytest("-p", "no:hypothesispytest", "--trt-backend", "emulate",
                                f"--trt-cache-dir={pytester.path / 'cache'}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*FP32 in effect*compute nodes (9?%*) in FP32: that is not a bf16 engine*",
                                 "*checked on: your inputs (seed 0), seed 1, seed 2, seed 3 (generated like your "
                                 "inputs): outputs pass, no NaN/Inf inside*"])
