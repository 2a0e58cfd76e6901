"""Ledgers timed for real on ONNX Runtime's CUDA provider (issue 32): the timing source that runs real
FP16/BF16 GPU kernels here (not TensorRT).

Marker ``cuda``: needs a CUDA GPU and onnxruntime-gpu, not TensorRT. Elsewhere every test skips with
the exact reason. Run: ``tox -e cuda`` or ``pytest -m cuda tests/gpu/test_ledger_cuda.py -s``; with
``-s`` each test prints the figures docs/VERIFIED.md records (per-node times, the FP32 islands'
share of the time, what each island ``suggest`` proposes costs).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "example_suite" / "models"
EXPORTS = ROOT / "tests" / "data" / "exports"

pytestmark = pytest.mark.cuda




def _case(path: Path, precision: str, keep):
    from pytest_trt.inputs import make_feeds
    from pytest_trt.model.load import load_model
    from pytest_trt.plan.policy import PrecisionPolicy

    model = load_model(path)
    plan = PrecisionPolicy(default=precision, keep_fp32=tuple(keep)).resolve(model)
    first = model.input_names()[0]
    if first == "hidden_states":
        feeds = make_feeds(model, dims={"batch": 2, "sequence": 16}, val_range={first: (-1.0, 1.0)})
    else:  # token ids and the attention mask of an export
        feeds = make_feeds(model, dims={"batch": 1, "sequence": 16},
                           val_range={first: (0, 100), "attention_mask": (1, 1)})
    return model, plan, feeds


#: model, low precision, the FP32 islands (the norms: a decomposed LayerNorm, LayerNormalization, RMSNorm)
MODELS = [(SUITE / "encoder_opset14.onnx", "fp16", ("*/LayerNorm/*",)),
          (SUITE / "encoder_opset17.onnx", "bf16", ("op:LayerNormalization",)),
          (EXPORTS / "llama_dynamo_opset18.onnx", "fp16", ("op:Pow", "op:ReduceMean", "op:Sqrt", "op:Reciprocal")),
          (EXPORTS / "bert_torchscript_opset17.onnx", "fp16", ("op:LayerNormalization",))]


@pytest.mark.parametrize("path, precision, keep", MODELS, ids=[f"{m[0].stem}-{m[1]}" for m in MODELS])
def test_ort_cuda_ledger(ort, path, precision, keep, record_property):
    from pytest_trt.backends.base import BuildConfig, get_backend
    from pytest_trt.ledger import ledger_of

    model, plan, feeds = _case(path, precision, keep)
    engine = get_backend("emulate").build(plan, BuildConfig(), None)
    ledger = ledger_of(engine, feeds, timing="onnxruntime-cuda", warmup=10, iterations=50)
    data = ledger.to_json()
    assert data["time_source"] == "onnxruntime-cuda" and data["time_label"] == "ONNX Runtime CUDA, not TensorRT"
    model_rows = [r for r in data["rows"] if r["origin"] == "model"]
    computed = [r for r in model_rows if r["declared"]]
    assert computed and all(r["time_ms"] is not None and r["time_ms"] >= 0 for r in computed)
    # float nodes run on CUDA; only integer shape/index math may land on the CPU provider (GROUND_TRUTH.md)
    on_cpu = [r for r in computed if r["provider"] == "CPUExecutionProvider"]
    assert not on_cpu, [r["path"] for r in on_cpu[:5]]
    low = [r for r in computed if r["declared"] == precision and r["op_type"] in ("MatMul", "Gemm")]
    dtype = {"fp16": "float16", "bf16": "bfloat16"}[precision]
    assert low and all(dtype in r["timed_dtypes"] for r in low)  # real low-precision kernels were timed
    e2e = data["timing"]["end_to_end"]
    assert e2e["median_ms"] > 0 and data["total_ms"] > 0
    island = ledger.fp32_island_share()
    record_property("ledger", json.dumps({"total_ms": data["total_ms"], "end_to_end_ms": e2e["median_ms"],
                                          "fp32_islands": island, "precisions": data["precisions"]}))
    print(f"\n{path.name} [{data['policy']}] on {data['timing']['device']}:\n{ledger.table(top=10)}")


def test_island_costs_on_ort_cuda(ort, record_property):
    from pytest_trt.inputs import make_feeds
    from pytest_trt.suggest import suggest_fp32_islands

    model, _, _ = _case(SUITE / "encoder_opset14.onnx", "fp16", ("*/LayerNorm/*",))
    feeds = make_feeds(model, dims={"batch": 2, "sequence": 16}, val_range={"hidden_states": (-1.0, 1.0)},
                       outliers={"hidden_states": {"count": 2, "magnitude": 400.0}})
    found = suggest_fp32_islands(model, "fp16", feeds, backend="emulate", atol=1e-2, timing="onnxruntime-cuda",
                                 timing_iterations=50)
    assert found.passed and found.patterns
    costs = found.island_costs
    assert costs.measured and costs.source == "onnxruntime-cuda" and len(costs.islands) == len(found.patterns)
    record_property("island_costs", json.dumps(costs.to_json()))
    print("\n" + "\n".join(costs.lines()))


def test_console_script_times_on_ort_cuda_by_default(ort, tmp_path):
    path = SUITE / "encoder_opset14.onnx"
    proc = subprocess.run([sys.executable, "-m", "pytest_trt.cli", "layers", str(path), "--fp16", "--keep-fp32",
                           "*/LayerNorm/*", "--backend", "emulate", "--input-shapes", "hidden_states:[2,16,64]",
                           "--ledger", "--json", "--iterations", "20", "--export-profile", str(tmp_path / "p.json"),
                           "--export-trace", str(tmp_path / "t.json"), "--cache-dir", str(tmp_path / "cache")],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)["ledger"]
    assert data["time_source"] == "onnxruntime-cuda" and data["timing"]["iterations"] == 20
    profile = json.loads((tmp_path / "p.json").read_text())
    assert profile[0] == {"count": 20} and abs(sum(e["percentage"] for e in profile[1:]) - 100) < 1e-6
    assert json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    assert not list(tmp_path.glob("ort_profile*"))  # the profile went to a temporary directory
