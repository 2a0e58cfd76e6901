"""``pytest-trt runs recheck`` judges saved outputs under the criterion the check recorded, read back
with ``Criterion.from_json`` (issue 31 on issue 27's Criterion): every value keeps its level, so a
default cosine floor stays a default one (not applied where the reference is within atol of zero),
and an explicit one stays explicit. A real ONNX model, real ONNX Runtime, a real directory store."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from pytest_trt.compare.criterion import Criterion, Level
from pytest_trt.errors import UsageError
from pytest_trt.history.outputs import save_check_outputs
from pytest_trt.history.recheck import recheck_run
from pytest_trt.history.runid import make_run_id
from pytest_trt.history.store import RUN_FORMAT, RunStore
from pytest_trt.model.load import load_model

pytest.importorskip("onnxruntime")


def _tiny_model(path: Path) -> Path:
    """``y = x * 1e-4``: a reference within the FP16 default atol (1e-2) of zero everywhere."""
    scale = numpy_helper.from_array(np.array(1e-4, np.float32), "scale")
    graph = helper.make_graph([helper.make_node("Mul", ["x", "scale"], ["y"], name="mul")], "tiny",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64])], [scale])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def _saved_run(tmp_path: Path, criterion: Criterion) -> tuple[RunStore, Path]:
    """A run holding one check of the tiny model whose saved outputs are the reference negated (cosine -1,
    every element within atol) and recorded as passing under ``criterion``."""
    model_path = _tiny_model(tmp_path / "tiny.onnx")
    x = np.random.default_rng(0).standard_normal(64).astype(np.float32)
    outputs_file = save_check_outputs(tmp_path / "staging", {"x": x}, {"y": -(x * np.float32(1e-4))})
    run = {"format": RUN_FORMAT, "id": make_run_id("r"), "name": "r", "created": "2026-11-27T10:00:00+00:00",
           "exitstatus": 0, "gate": None, "fingerprint": {},
           "report": {"tests": [{"nodeid": "t.py::t", "accuracy": [{
               "model": "tiny.onnx", "policy": "fp16", "baseline": "fp32", "passed": True,
               "criterion": criterion.to_json(), "outputs_file": outputs_file,
               "fingerprint": {"model_sha256": load_model(model_path).sha256},
               "outputs": [{"name": "y", "passed": True}]}]}]}}
    store = RunStore(str(tmp_path / "runs"))
    store.save(run, {outputs_file["file"]: tmp_path / "staging" / outputs_file["file"]})
    return store, model_path


def _recheck(store: RunStore, model: Path):
    [entry] = store.entries()
    return recheck_run(store, entry, store.load(entry), [model])


def test_a_default_cosine_floor_stays_a_default_one(tmp_path):
    """Fails with the branch's adapter, which passed the recorded min_cosine as an explicit floor."""
    store, model = _saved_run(tmp_path, Criterion.resolve(["y"], "fp16"))
    result = _recheck(store, model)
    assert result.passed and result.agrees, result.to_json()


def test_an_explicit_cosine_floor_stays_explicit(tmp_path):
    asked = Criterion.resolve(["y"], "fp16", [Level("marker", "marker", {"min_cosine": 0.9999})])
    store, model = _saved_run(tmp_path, asked)
    result = _recheck(store, model)
    [check] = result.checks
    assert not result.passed and not check.agrees and "cosine" in check.message


def test_a_check_without_a_readable_criterion_is_a_usage_error_naming_it(tmp_path):
    store, model = _saved_run(tmp_path, Criterion.resolve(["y"], "fp16"))
    [entry] = store.entries()
    run = store.load(entry)
    run["report"]["tests"][0]["accuracy"][0]["criterion"] = {"version": 99, "outputs": {}}
    with pytest.raises(UsageError, match=r"t\.py::t \(tiny\.onnx\): criterion: version 99"):
        recheck_run(store, entry, run, [model])
