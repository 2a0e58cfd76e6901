"""Every answer in the user's words (issue 30): on a dynamo export, the console script's plan,
the terminal summary, the JSON report and the HTML scope strip name nodes by module path and class.

The model is the example suite's ``decoder_dynamo.onnx`` (the tiny Llama of
tests/data/exports/llama_dynamo_opset18.onnx with outlier channels in the embedding rows of token
ids 248..255), on the emulate backend.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from exports import export
from report_schema import assert_valid_report

from pytest_trt.cli import main
from pytest_trt.model.load import load_model
from pytest_trt.report.json_report import SCHEMA_VERSION

REPO = Path(__file__).resolve().parents[2]
DECODER = REPO / "example_suite" / "models" / "decoder_dynamo.onnx"

SUITE = f"""
import pytest
DECODER = {str(DECODER)!r}
DIMS = {{"batch": 2, "sequence": 8}}
OUTLIER_TOKENS = {{"input_ids": (248, 255), "attention_mask": (1, 1)}}

@pytest.mark.trt(model=DECODER, precision="fp16", keep_fp32=["*/input_layernorm/*"], dims=DIMS,
                 val_range=OUTLIER_TOKENS)
def test_only_the_input_norms_kept(trt):
    trt.locate()  # a layerwise record
    trt.assert_precision("class:LlamaRMSNorm", "fp32")
"""


def _plan(*args) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_TRT")}
    return subprocess.run([sys.executable, "-m", "pytest_trt.cli", "plan", *map(str, args)], capture_output=True,
                          text=True, env=env, timeout=300)


def test_plan_lists_module_path_and_class_per_node():
    proc = _plan(DECODER, "--fp16", "--keep-fp32", "class:*RMSNorm")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["node", "op", "precision", "module", "class", "rule"]
    row = next(line for line in lines if line.startswith("/model/layers.0/input_layernorm/node_pow_1 "))
    assert row.split() == ["/model/layers.0/input_layernorm/node_pow_1", "Pow", "fp32",
                           "model.layers.0.input_layernorm", "LlamaRMSNorm", "class:*RMSNorm=fp32"]
    # torch.export's symbolic-size nodes have no module: their raw name, '-' for module and class
    assert next(line for line in lines if line.startswith("node_Shape_0 ")).split()[3:5] == ["-", "-"]
    assert "182 scoped by the exporter's name_scopes metadata (dynamo)" in proc.stdout


def test_plan_json_keeps_the_raw_name_and_adds_module_and_class(capsys):
    assert main(["plan", str(DECODER), "--fp16", "--keep-fp32", "class:*RMSNorm", "--json"]) == 0
    nodes = {n["name"]: n for n in json.loads(capsys.readouterr().out)["nodes"]}
    assert nodes["node_pow_1"] == {
        "name": "node_pow_1", "op_type": "Pow", "precision": "fp32", "rule": "class:*RMSNorm=fp32",
        "canonical": "/model/layers.0/input_layernorm/node_pow_1", "module": "model.layers.0.input_layernorm",
        "module_class": "transformers.models.llama.modeling_llama.LlamaRMSNorm"}
    assert nodes["node_Shape_0"]["module"] is None and nodes["node_Shape_0"]["canonical"] == "node_Shape_0"


def test_class_pattern_on_a_torchscript_export_is_a_usage_error_pointing_to_scopes():
    proc = _plan(export("llama", "torchscript"), "--fp16", "--keep-fp32", "class:*RMSNorm")
    assert proc.returncode == 2, proc.stdout
    assert "This export has no class information" in proc.stderr
    assert "Use a scope pattern like '*/input_layernorm/*'" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_reports_name_nodes_by_module(pytester):
    pytester.makepyfile(test_decoder=SUITE)
    cache = pytester.path / "cache"
    result = pytester.runpytest("--trt-cache-dir=" + str(cache), "--trt-report=out/report.json",
                                "--trt-html=out/report.html", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    # the terminal summary: the failing precision check names the lowered norms by module path
    assert ("FAIL test_decoder.py::test_only_the_input_norms_kept: class:LlamaRMSNorm -> fp32: "
            "/model/layers.0/post_attention_layernorm/node_pow_2 (fp16)") in out
    # the failure message too
    assert "/model/layers.0/post_attention_layernorm/node_pow_2 (Pow): emulated fp16, planned fp16" in out

    report = json.loads((pytester.path / "out" / "report.json").read_text())
    assert_valid_report(report)
    assert report["schema_version"] == SCHEMA_VERSION == 11
    entry = report["tests"][0]
    nodes = {n["node"]: n for n in entry["precision"][0]["nodes"]}
    assert nodes["node_pow_2"]["canonical"] == "/model/layers.0/post_attention_layernorm/node_pow_2"
    assert nodes["node_pow_2"]["module"] == "model.layers.0.post_attention_layernorm"
    assert nodes["node_pow_2"]["module_class"].endswith(".LlamaRMSNorm")
    first = entry["layerwise"][0]["first"]
    names = load_model(DECODER).names
    assert first["canonical"] == names[first["node"]].canonical and first["canonical"].startswith("/model/layers.")
    assert first["module"] == names[first["node"]].module and first["module"]
    assert all(t["canonical"].endswith(t["node"]) for t in entry["layerwise"][0]["tensors"])

    html = (pytester.path / "out" / "report.html").read_text()
    # the scope strip: one cell per module scope, with its module path and class on hover
    assert 'title="/model/layers.0/input_layernorm = model.layers.0.input_layernorm (LlamaRMSNorm): 7 node(s)' in html
    assert 'title="(top): 4 node(s)' in html  # torch.export's 4 symbolic-size nodes have no module
    assert "/model/layers.0/post_attention_layernorm/node_pow_2 (Pow, LlamaRMSNorm): planned fp16" in html


@pytest.mark.parametrize("command", ["locate", "suggest"])
def test_locate_and_suggest_answer_with_modules(capsys, tmp_path, command):
    from exports import decoder_feeds

    from pytest_trt.inputs import save_feeds

    feeds = save_feeds(tmp_path / "outliers.npz", decoder_feeds(outliers=True))
    code = main([command, str(DECODER), "--fp16", "--backend", "emulate", "--cache-dir", str(tmp_path / "cache"),
                 "--load-inputs", str(feeds)])
    out = capsys.readouterr().out
    if command == "locate":
        assert code == 1
        assert "first divergent node: /model/layers.0/input_layernorm/node_pow_1 (Pow, fp16; LlamaRMSNorm)" in out
        assert "every module of its class: class:LlamaRMSNorm" in out
    else:
        assert code == 0, out
        assert "--keep-fp32 class:LlamaRMSNorm" in out and "class:LlamaRMSNorm  class, 35 nodes" in out
