"""The baseline's and the upcast's memos live in the run state (issue 21: no module-level caches).

Two runs in one process (two pytest sessions under pytester, or ``runstate.scoped()`` blocks)
do not share ONNX Runtime sessions, upcast models, or what was checked; within one run the
memos are reused and keep their bounds.
"""

from __future__ import annotations

from pathlib import Path

import onnx
from onnx import TensorProto, helper

from pytest_trt.core import runstate
from pytest_trt.model.load import load_model
from pytest_trt.reference.baseline import cached_session, reference_model
from pytest_trt.reference.upcast import fp32_reference_model, needs_upcast

MIXED = Path(__file__).resolve().parents[2] / "example_suite" / "models" / "mixed_autocast.onnx"


def _identity_bytes() -> bytes:
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "identity",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = min(model.ir_version, 8)
    return model.SerializeToString()


def test_onnxruntime_sessions_are_per_run_and_bounded():
    made = []

    def make() -> bytes:
        made.append(1)
        return _identity_bytes()

    with runstate.scoped() as first:
        a = cached_session("identity", make)
        assert cached_session("identity", make) is a and len(made) == 1  # reused within the run
        for i in range(20):
            cached_session(f"identity-{i}", _identity_bytes)
        assert len(first.table("baseline.sessions")) == 16  # the LRU bound
        assert cached_session("identity", make) is not a and len(made) == 2  # evicted, made again
    with runstate.scoped() as second:
        assert "baseline.sessions" not in second.names()
        b = cached_session("identity", make)
        assert b is not a and len(made) == 3  # a new run makes its own
        assert len(second.table("baseline.sessions")) == 1


def test_upcast_models_and_checks_are_per_run():
    model = load_model(MIXED)
    with runstate.scoped() as first:
        upcast = fp32_reference_model(model)
        assert upcast is not model and fp32_reference_model(model) is upcast
        assert needs_upcast(model) and reference_model(model) is upcast
        assert {"upcast.reference_models", "upcast.needs_upcast", "baseline.checked"} <= set(first.names())
    with runstate.scoped() as second:
        assert second.names() == []
        again = fp32_reference_model(model)
        assert again is not upcast and isinstance(again.proto, onnx.ModelProto)
        assert again.sha256 == upcast.sha256  # the same content, computed by this run


def test_reset_forgets_the_process_default_memos():
    model = load_model(MIXED)
    with runstate.scoped():
        runstate.reset()  # inside the block: replaces the block's state, restored on exit
        upcast = fp32_reference_model(model)
        assert fp32_reference_model(model) is upcast
        runstate.reset()
        assert fp32_reference_model(model) is not upcast
