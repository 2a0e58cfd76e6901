"""``--trt-baseline-provider cuda`` for real: ONNX Runtime's CUDA provider, TF32 off (issue 20).

Marker ``cuda``: needs a CUDA GPU and onnxruntime-gpu, not TensorRT (``gpu`` means "needs
TensorRT"). Elsewhere every test skips with the exact reason. Run: ``tox -e cuda`` or
``pytest -m cuda tests/gpu``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "example_suite" / "models"
CORPUS = ROOT / "tests" / "data" / "calibration"

pytestmark = pytest.mark.cuda






def _models():
    return [SUITE / "encoder_opset14.onnx", SUITE / "encoder_opset17.onnx", SUITE / "convnet.onnx"] + sorted(
        p for p in CORPUS.glob("*.onnx") if p.stem.count("_") == 1)


def _feeds(model):
    from pytest_trt.inputs import make_feeds

    name = model.input_names()[0] if hasattr(model, "input_names") else model.graph.input[0].name
    if name in ("hidden_states", "inputs_embeds"):
        return make_feeds(model, dims={"batch": 2, "sequence": 16}, val_range={name: (-1.0, 1.0)})
    return make_feeds(model, dims={"batch": 2}, val_range={name: (0.0, 1.0)})


@pytest.mark.parametrize("path", _models(), ids=lambda p: p.stem)
def test_cuda_baseline_matches_cpu_with_tf32_off(ort, path, record_property):
    from pytest_trt.model.load import load_model
    from pytest_trt.reference.baseline import check_cuda_session, cuda_placement, fp32_baseline, make_session

    model = load_model(path)
    feeds = _feeds(model)
    session = make_session(model.serialized(), provider="cuda", label=path.name)
    options = check_cuda_session(session, path.name)
    assert options["use_tf32"] == "0"  # observed on the session, not just requested
    cpu = fp32_baseline(model, feeds, provider="cpu")
    cuda = fp32_baseline(model, feeds, provider="cuda")
    worst = max(float(np.abs(cuda[k].astype(np.float64) - cpu[k]).max()) for k in cpu)
    scale = max(1.0, max(float(np.abs(v).max()) for v in cpu.values()))
    placement = cuda_placement(model, feeds)
    record_property("max_abs_cuda_vs_cpu", worst)
    print(f"{path.name}: max |cuda - cpu| = {worst:.3g} (max |ref| {scale:.3g}); providers {placement['providers']}; "
          f"float nodes on CPU: {placement['cpu_float_nodes']}")
    assert worst <= 1e-5 * scale
    assert placement["providers"].get("CUDAExecutionProvider", 0) > 0


def test_plugin_runs_the_cuda_baseline(ort, pytester):
    """Through the plugin: header, JSON report and cache key carry the provider; the test passes."""
    model = SUITE / "encoder_opset14.onnx"
    pytester.makepyfile(test_enc=f"""
        import pytest

        @pytest.mark.trt(model={str(model)!r}, precision="fp16", keep_fp32=["*/LayerNorm/*", "op:Softmax"],
                         dims={{"batch": 2, "sequence": 16}}, val_range={{"hidden_states": (-1.0, 1.0)}})
        def test_encoder(trt):
            trt.check()
    """)
    cache = pytester.path / "cache"
    report = pytester.path / "r.json"
    args = ["-p", "no:cacheprovider", "--trt-backend=emulate", f"--trt-cache-dir={cache}", f"--trt-report={report}"]
    result = pytester.runpytest_subprocess(*args, "--trt-baseline-provider=cuda", "-W",
                                           "error::pytest_trt.errors.ProviderFallbackWarning")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*baseline ONNX Runtime cuda*"])
    meta = json.loads(report.read_text())
    assert json.dumps(meta).count('"baseline_provider": "cuda"') >= 1
    cpu = pytester.runpytest_subprocess(*args, "--trt-baseline-provider=cpu")
    cpu.assert_outcomes(passed=1)
    # the provider is part of the baseline's cache key: two entries, one per provider
    keys = [p for p in cache.rglob("*") if p.is_file() and p.name == "outputs.npz"]
    assert len(keys) == 2, keys
    placements = [p for p in cache.rglob("placement.json")]
    assert len(placements) == 1
    placement = json.loads(placements[0].read_text())
    assert placement["cpu_float_nodes"] == [] and placement["providers"]["CUDAExecutionProvider"] > 0


def test_float_node_on_cpu_is_a_warning(ort, tmp_path):
    """A float op with no CUDA kernel lands on the CPU provider: reported, not silent."""
    import onnx
    from onnx import TensorProto, helper

    from pytest_trt.errors import ProviderFallbackWarning
    from pytest_trt.model.load import load_model
    from pytest_trt.reference.baseline import fp32_baseline

    # Det (determinant) has a CPU kernel only in ONNX Runtime
    graph = helper.make_graph(
        [helper.make_node("Det", ["x"], ["d"], name="det"), helper.make_node("Relu", ["d"], ["y"], name="relu")],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    path = tmp_path / "det.onnx"
    # IR version 10: onnx 1.23 writes 14 by default, which ONNX Runtime 1.31 refuses
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10), path)
    feeds = {"x": np.random.default_rng(0).standard_normal((2, 3, 3)).astype(np.float32)}
    with pytest.warns(ProviderFallbackWarning, match=r"det \(Det\)"):
        fp32_baseline(load_model(path), feeds, provider="cuda")


def test_cold_cuda_baseline_of_a_big_model_within_the_memory_budget(ort, tmp_path):
    """Issue 29's budget (a first run's peak RSS <= 2x the weight bytes) with the CUDA baseline: the
    profiled placement session must not hold the weights while the baseline's session still maps them
    (before the fix: 2.4x on a 1.66 GB model on an H100). A 1.2 GB decoder: big enough that the CUDA context (about 0.5 GB) does not decide the ratio."""
    import sys

    from pytest_trt.model.big_models import write_decoder

    sys.path.insert(0, str(ROOT / "bench"))
    from _peak import run_measured

    info = write_decoder(tmp_path / "model" / "decoder.onnx", target_bytes=1_200_000_000)
    (tmp_path / "test_big.py").write_text(
        "import pytest\n\n"
        f"@pytest.mark.trt(model={str(info.path)!r})\n"
        "def test_big(trt):\n"
        "    trt.check()\n")
    m = run_measured([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                      str(tmp_path / "test_big.py"), "--trt-fp16", "--trt-baseline-provider=cuda",
                      f"--trt-cache-dir={tmp_path / 'cache'}", "-W", "ignore"], cwd=tmp_path)
    assert m.rc == 0, m.output[-3000:]
    assert "1 passed" in m.output, m.output[-2000:]
    assert m.peak_rss <= 2.0 * info.weight_bytes, (
        f"cold run with the CUDA baseline: peak {m.peak_rss / 1e9:.2f} GB, over 2x the weights "
        f"({info.weight_bytes / 1e9:.2f} GB)")
