"""Node placement read from ONNX Runtime's profile (the CUDA baseline's fallback report), on CPU."""

import warnings
from pathlib import Path

import pytest

from pytest_trt.errors import ProviderFallbackWarning
from pytest_trt.inputs import make_feeds
from pytest_trt.model.load import load_model
from pytest_trt.reference.baseline import make_session, node_placement, warn_placement

ENCODER = Path(__file__).resolve().parents[2] / "example_suite" / "models" / "encoder_opset14.onnx"


def test_profile_lists_float_nodes_and_skips_shape_nodes(tmp_path):
    model = load_model(ENCODER)
    feeds = make_feeds(model, dims={"batch": 1, "sequence": 4})
    session = make_session(model.serialized(), provider="cpu", profile_dir=tmp_path)
    placement = node_placement(session, model.proto, feeds)
    names = {n for n, _ in placement["cpu_float_nodes"]}
    assert "/encoder/layer.0/attention/output/LayerNorm/Pow" in names
    # shape/index nodes (integer outputs) are expected on the CPU provider and not listed
    assert not any(n.endswith("/Shape") or "/Shape_" in n for n in names)
    assert placement["providers"]["CPUExecutionProvider"] >= len(names)
    assert not list(tmp_path.glob("ort_profile*"))  # the profile file is removed


def test_warning_names_the_nodes():
    with pytest.warns(ProviderFallbackWarning, match=r"2 float node\(s\) ran on ONNX Runtime's CPU provider.*a \(Det\)"):
        warn_placement({"cpu_float_nodes": [["a", "Det"], ["b", "Relu"]]}, "m.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_placement({"cpu_float_nodes": []}, "m.onnx")


def test_a_set_sink_receives_the_fallback_record_and_the_warning_still_fires():
    """The pytest plugin's sink (FALLBACK_SINK) gets a ``baseline_fallback`` record, from a FAKED
    placement result (the real one needs ONNX Runtime's CUDA provider)."""
    from pytest_trt.reference.baseline import FALLBACK_SINK

    got = []
    token = FALLBACK_SINK.set(got.append)
    try:
        with pytest.warns(ProviderFallbackWarning, match="CUDA baseline of models/m.onnx: 1 float node"):
            warn_placement({"cpu_float_nodes": [["a", "Det"]]}, "models/m.onnx", model="m.onnx")
        warn_placement({"cpu_float_nodes": []}, "models/m.onnx", model="m.onnx")  # nothing on CPU: no record
    finally:
        FALLBACK_SINK.reset(token)
    assert [r.to_json() for r in got] == [{"kind": "baseline_fallback", "model": "m.onnx", "provider": "cuda",
                                           "nodes": [["a", "Det"]]}]
    with pytest.warns(ProviderFallbackWarning):  # no sink (the CLI): the warning alone
        warn_placement({"cpu_float_nodes": [["a", "Det"]]}, "m.onnx")
    assert len(got) == 1
