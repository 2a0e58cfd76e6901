"""pytest_trt.strategies: drawn feeds fit the model (check_feeds), respect profiles, ranges,
FP16 safety, outliers and offsets, run in ONNX Runtime; errors come at construction;
save_falsifying_example writes a replayable pair of files."""

from __future__ import annotations

import os
import stat

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from pytest_trt import strategies
from pytest_trt.errors import InputError, UsageError
from pytest_trt.inputs import check_feeds, load_feeds
from pytest_trt.model.load import load_model
from pytest_trt.strategies import DEFAULT_OUTLIERS, save_falsifying_example

VOCAB = 50
FAST = settings(max_examples=15, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
FP16_TINY = float(np.finfo(np.float16).tiny)


def _model(graph):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return load_model(model)


def _bert_like():
    emb = numpy_helper.from_array(np.linspace(-1, 1, VOCAB * 4, dtype=np.float32).reshape(VOCAB, 4), "emb")
    axes = numpy_helper.from_array(np.array([-1], dtype=np.int64), "axes")
    graph = helper.make_graph(
        [
            helper.make_node("Gather", ["emb", "input_ids"], ["E"], name="/emb/Gather"),
            helper.make_node("Cast", ["attention_mask"], ["M"], to=TensorProto.FLOAT, name="/mask/Cast"),
            helper.make_node("Unsqueeze", ["M", "axes"], ["M3"], name="/mask/Unsqueeze"),
            helper.make_node("Mul", ["E", "M3"], ["hidden"], name="/mask/Mul"),
        ],
        "bert_like",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["batch", "seq", 4])],
        initializer=[emb, axes],
    )
    return _model(graph)


def _layernorm_like():
    """x: float32[batch, None, 8], h: float16[batch, 8], flag: bool[batch] -> ReduceMean/Sub/Pow like a LayerNorm."""
    graph = helper.make_graph(
        [
            helper.make_node("ReduceMean", ["x"], ["mean"], axes=[-1], name="/ln/ReduceMean"),
            helper.make_node("Sub", ["x", "mean"], ["d"], name="/ln/Sub"),
            helper.make_node("Mul", ["d", "d"], ["sq"], name="/ln/Pow"),
            helper.make_node("Cast", ["h"], ["h32"], to=TensorProto.FLOAT, name="/h/Cast"),
            helper.make_node("Identity", ["flag"], ["flag_out"], name="/flag/Identity"),
        ],
        "layernorm_like",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", None, 8]),
         helper.make_tensor_value_info("h", TensorProto.FLOAT16, ["batch", 8]),
         helper.make_tensor_value_info("flag", TensorProto.BOOL, ["batch"])],
        [helper.make_tensor_value_info("sq", TensorProto.FLOAT, ["batch", None, 8]),
         helper.make_tensor_value_info("h32", TensorProto.FLOAT, ["batch", 8]),
         helper.make_tensor_value_info("flag_out", TensorProto.BOOL, ["batch"])],
    )
    # ReduceMean-18 takes axes as an input; opset 17 keeps the attribute.
    return _model(graph)


BERT = _bert_like()
LN = _layernorm_like()
BERT_PROFILE = {"input_ids": {"min": (1, 1), "opt": (2, 8), "max": (3, 12)}}
BERT_RANGES = {"input_ids": (0, VOCAB - 1), "attention_mask": (0, 1)}


def _session(model):
    import onnxruntime as ort

    return ort.InferenceSession(model.proto.SerializeToString(), providers=["CPUExecutionProvider"])


@pytest.fixture(scope="module")
def bert_session():
    return _session(BERT)


@pytest.fixture(scope="module")
def ln_session():
    return _session(LN)


def _fp16_exact(a: np.ndarray) -> bool:
    return bool(np.array_equal(a.astype(np.float16).astype(a.dtype), a))


# ---------------------------------------------------------------------------------------
# Drawn feeds fit the model
# ---------------------------------------------------------------------------------------

@FAST
@given(data=st.data())
def test_bert_feeds_fit_profile_ranges_and_run_in_onnxruntime(bert_session, data):
    feeds = data.draw(strategies.feeds(BERT, profile=BERT_PROFILE, val_range=BERT_RANGES))
    check_feeds(BERT, feeds)
    ids, mask = feeds["input_ids"], feeds["attention_mask"]
    assert ids.shape == mask.shape  # one size per symbolic dim
    assert 1 <= ids.shape[0] <= 3 and 1 <= ids.shape[1] <= 12
    assert ids.dtype == np.int64 and ids.min() >= 0 and ids.max() <= VOCAB - 1
    assert set(np.unique(mask)) <= {0, 1}
    (hidden,) = bert_session.run(None, feeds)
    assert hidden.shape == (*ids.shape, 4) and np.isfinite(hidden).all()


@FAST
@given(data=st.data())
def test_fixed_dims_inside_a_profile(data):
    feeds = data.draw(strategies.feeds(BERT, profile=BERT_PROFILE, dims={"seq": 5}, val_range=BERT_RANGES))
    assert feeds["input_ids"].shape[1] == 5 and 1 <= feeds["input_ids"].shape[0] <= 3
    fixed = data.draw(strategies.feeds(BERT, dims={"batch": 2, "seq": 3}, val_range=BERT_RANGES))
    assert fixed["input_ids"].shape == (2, 3)


@FAST
@given(data=st.data())
def test_float_feeds_are_fp16_safe_and_run_in_onnxruntime(ln_session, data):
    feeds = data.draw(strategies.feeds(LN, profile={"x": {"min": (1, 1, 8), "opt": (2, 4, 8), "max": (2, 6, 8)}},
                                       val_range={"x": (-3.0, 3.0)}))
    check_feeds(LN, feeds)
    x, h = feeds["x"], feeds["h"]
    assert x.dtype == np.float32 and h.dtype == np.float16 and feeds["flag"].dtype == np.bool_
    assert x.shape[0] == h.shape[0] == feeds["flag"].shape[0]  # 'batch' shared by three inputs
    assert np.abs(x).max(initial=0) <= 3.0 and np.abs(h).max(initial=0) <= 1.0
    for a in (x, h):
        assert _fp16_exact(a) and np.isfinite(a).all()
        nonzero = np.abs(a[a != 0]).astype(np.float32)
        assert (nonzero >= FP16_TINY).all()  # no FP16 subnormals
    outs = ln_session.run(None, feeds)
    assert all(np.isfinite(o).all() for o in outs if o.dtype != np.bool_)


@FAST
@given(data=st.data())
def test_without_fp16_safe_values_use_float32(data):
    feeds = data.draw(strategies.feeds(LN, dims={"batch": 1}, shapes={"x": (1, 2, 8)}, val_range={"x": (-1e6, 1e6)},
                                       fp16_safe=False))
    x = feeds["x"]
    assert np.abs(x).max(initial=0) <= 1e6 and np.isfinite(x).all()
    nonzero = np.abs(x[x != 0])
    assert (nonzero >= np.finfo(np.float32).tiny).all()  # subnormals are off anyway


@FAST
@given(data=st.data())
def test_outliers_true_draws_zero_to_three_fp16_exact_outliers(data):
    feeds = data.draw(strategies.feeds(LN, dims={"batch": 2}, shapes={"x": (2, 4, 8)}, outliers=True))
    check_feeds(LN, feeds)
    lo, hi = DEFAULT_OUTLIERS["magnitude"]
    for name in ("x", "h"):
        a = feeds[name].astype(np.float32)
        big = np.abs(a[np.abs(a) > 1.0])
        assert len(big) <= DEFAULT_OUTLIERS["count"][1]
        assert ((big >= lo) & (big <= hi)).all() and _fp16_exact(feeds[name])


@FAST
@given(data=st.data())
def test_outlier_spec_per_input_and_offset(data):
    feeds = data.draw(strategies.feeds(
        LN, dims={"batch": 1}, shapes={"x": (1, 3, 8)}, val_range={"x": (-0.05, 0.05)},
        offset={"x": (900.0, 1100.0)}, outliers={"x": {"count": 1, "magnitude": 300.0, "sign": "-"}},
    ))
    x = feeds["x"]
    assert (x == -300.0).sum() == 1
    rest = x[x != -300.0]
    assert 899.9 <= rest.min() and rest.max() <= 1100.1
    assert rest.max() - rest.min() <= 0.11  # one common offset per example, small spread
    check_feeds(LN, feeds)


def test_outliers_shrink_to_a_minimal_failing_example():
    """A property that fails only with an outlier >= 300: Hypothesis finds one and shrinks it."""
    from hypothesis import find

    found = find(
        strategies.feeds(LN, dims={"batch": 1}, shapes={"x": (1, 2, 8)}, outliers={"x": {"count": (0, 2)}}),
        lambda f: np.abs(f["x"]).max() >= 300,
        settings=settings(max_examples=300, database=None, deadline=None, derandomize=True),
    )
    assert (np.abs(found["x"]) >= 300).sum() == 1  # shrunk to a single outlier


# ---------------------------------------------------------------------------------------
# Errors at construction
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "model, kwargs, pattern",
    [
        (BERT, {"val_range": BERT_RANGES}, r"input shapes are not fully declared(?s:.*)or a TensorRT profile"),
        (BERT, {"dims": {"batch": 1, "seq": 2}}, r"input 'input_ids' is int64: declare its range"),
        (BERT, {"profile": BERT_PROFILE, "dims": {"seq": 20}, "val_range": BERT_RANGES},
         r"dim 'seq' = 20 \(from dims\['seq'\]\) is outside the profile range \[1, 12\]"),
        (LN, {"dims": {"batch": 1}, "shapes": {"x": (1, 1, 8)}, "val_range": {"x": (-1e5, 1e5)}},
         r"input 'x': values reach 100000 .*beyond 65504 \(fp16_safe=True: FP16's finite range\); narrow the range or pass fp16_safe=False"),
        (LN, {"dims": {"batch": 1}, "shapes": {"x": (1, 1, 8)}, "val_range": {"x": (1e-8, 2e-8)}},
         r"val_range for input 'x' \[1e-08, 2e-08\] holds no finite normal float16 value; widen it or pass fp16_safe=False"),
        (LN, {"dims": {"batch": 1}, "shapes": {"x": (1, 1, 8)}, "offset": 65000.0, "val_range": {"x": (-600, 600)}},
         r"input 'x': values reach 65600 \(val_range \[-600, 600\] \+ offset \[65000, 65000\]\)"),
        (LN, {"dims": {"batch": 1}, "shapes": {"x": (1, 1, 8)}, "outliers": {"x": {"magnitude": (1e3, 1e5)}}},
         r"outliers\['x'\]: magnitude up to 100000 is beyond 65504"),
        (LN, {"dims": {"batch": 1}, "shapes": {"x": (1, 1, 8)}, "outliers": {"x": {"fraction": 0.1}}},
         r"strategies take 'count'"),
        (LN, {"dims": {"batch": 1}, "shapes": {"x": (1, 1, 8)}, "outliers": {"x": {"count": (3, 1)}}},
         r"outliers\['x'\]\['count'\]: min 3 is greater than max 1"),
        (LN, {"dims": {"batch": 1}, "shapes": {"x": (1, 1, 8)}, "outliers": {"x": {"magnitude": 0}}},
         r"'magnitude'\] must be > 0"),
        (LN, {"dims": {"batch": 1}, "shapes": {"x": (1, 1, 8)}, "outliers": {"x": {"size": 1}}}, r"unknown key\(s\) 'size'"),
        (LN, {"dims": {"batch": 1}, "shapes": {"x": (1, 1, 8)}, "outliers": {"count": 1}}, r"looks like one outlier spec"),
        (LN, {"dims": {"batch": 1}, "shapes": {"x": (1, 1, 8)}, "outliers": {"flag": {}}},
         r"input 'flag' is bool; outliers applies to float inputs only"),
        (LN, {"dims": {"batch": 1}, "shapes": {"x": (1, 1, 8)}, "offset": {"x": "big"}}, r"offset for input 'x' must be a finite number"),
        (LN, {"dims": {"batch": 1}, "shapes": {"x": (1, 1, 8)}, "val_range": {"flag": (0, 2)}}, r"outside bool's values"),
    ],
)
def test_strategy_errors_at_construction(model, kwargs, pattern):
    with pytest.raises(InputError, match=pattern):
        strategies.feeds(model, **kwargs)


# ---------------------------------------------------------------------------------------
# save_falsifying_example
# ---------------------------------------------------------------------------------------

def test_save_falsifying_example_writes_feeds_and_replay_command(tmp_path):
    feeds = {"input_ids": np.arange(6, dtype=np.int64).reshape(2, 3), "attention_mask": np.ones((2, 3), np.int64)}
    model_path = tmp_path / "my model.onnx"
    onnx.save(BERT.proto, model_path)
    saved = save_falsifying_example(feeds, tmp_path / "out" / "falsifying", model=str(model_path))
    assert saved.feeds_path == tmp_path / "out" / "falsifying.npz"
    assert saved.command_path == tmp_path / "out" / "falsifying.sh"
    assert saved.command == f"pytest-trt compare '{model_path}' --fp16 --load-inputs {saved.feeds_path}"
    script = saved.command_path.read_text()
    assert script.startswith("#!/bin/sh\n") and script.rstrip().endswith(saved.command)
    assert os.stat(saved.command_path).st_mode & stat.S_IXUSR
    loaded = load_feeds(saved.feeds_path)
    for k in feeds:
        np.testing.assert_array_equal(loaded[k], feeds[k])
    check_feeds(model_path, loaded)
    # a Model read from a file, other precisions
    model = load_model(model_path)
    assert " --bf16 " in save_falsifying_example(feeds, tmp_path / "b", model=model, precision="bf16").command
    assert "--fp" not in save_falsifying_example(feeds, tmp_path / "c", model=model, precision="fp32").command


def test_save_falsifying_example_custom_command_and_errors(tmp_path):
    feeds = {"x": np.zeros(3, np.float32)}
    saved = save_falsifying_example(feeds, tmp_path / "ex.npz", "pytest tests/test_x.py --trt-load-inputs {path}")
    assert saved.command == f"pytest tests/test_x.py --trt-load-inputs {tmp_path / 'ex.npz'}"
    assert saved.command in saved.command_path.read_text()
    with pytest.raises(UsageError, match="needs command= or model="):
        save_falsifying_example(feeds, tmp_path / "ex2")
    with pytest.raises(UsageError, match="the model has no file path"):
        save_falsifying_example(feeds, tmp_path / "ex3", model=BERT)
    with pytest.raises(UsageError, match="unknown precision 'fp8'"):
        save_falsifying_example(feeds, tmp_path / "ex4", model="m.onnx", precision="fp8")


def test_property_test_pattern_saves_the_last_failing_example(tmp_path):
    """The documented pattern: save inside the test, re-raise; the file holds the shrunk example."""
    target = tmp_path / "falsifying"

    @settings(max_examples=100, database=None, deadline=None, derandomize=True)
    @given(feeds=strategies.feeds(LN, dims={"batch": 1}, shapes={"x": (1, 2, 8)}, outliers={"x": {"count": (0, 2)}}))
    def prop(feeds):
        try:
            assert np.abs(feeds["x"]).max() < 300, "outlier"
        except AssertionError:
            save_falsifying_example(feeds, target, model="layernorm_like.onnx")
            raise

    with pytest.raises(AssertionError, match="outlier"):
        prop()
    x = load_feeds(target.with_suffix(".npz"))["x"]
    assert (np.abs(x) >= 300).sum() == 1
    assert "--load-inputs" in target.with_suffix(".sh").read_text()
