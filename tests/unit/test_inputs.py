"""pytest_trt.inputs: specs, shapes and profiles, option parsing, generated feeds, user feeds, input sets.

Models are built here with onnx.helper: a BERT-like model (int64 token ids and attention
mask over symbolic batch/seq), a float model (symbolic, unnamed and static dims), a model
with one static input per dtype, and one with a string and a rank-less input.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from pytest_trt.errors import InputError, UsageError
from pytest_trt.inputs import (
    ALL_INPUTS,
    DEFAULT_FLOAT_RANGE,
    FeedSet,
    InputSpec,
    check_feeds,
    check_seed,
    input_sets,
    input_specs,
    load_feeds,
    make_feeds,
    param_sets,
    parse_input_shape,
    parse_val_range,
    profile_from_shapes,
    resolve_profile,
    resolve_shapes,
    resolve_val_ranges,
    save_feeds,
    symbolic_dims,
)
from pytest_trt.model.load import load_model

REPO = Path(__file__).resolve().parents[2]
VOCAB = 50


# ---------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------

def _model(graph, opset=17, check=True):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    if check:
        onnx.checker.check_model(model)
    return model


def bert_like():
    """input_ids, attention_mask: int64[batch, seq] -> masked embeddings float32[batch, seq, 4]."""
    emb = numpy_helper.from_array(np.arange(VOCAB * 4, dtype=np.float32).reshape(VOCAB, 4) / 100, "emb")
    axes = numpy_helper.from_array(np.array([-1], dtype=np.int64), "axes")
    nodes = [
        helper.make_node("Gather", ["emb", "input_ids"], ["E"], name="/embeddings/Gather"),
        helper.make_node("Cast", ["attention_mask"], ["M"], to=TensorProto.FLOAT, name="/mask/Cast"),
        helper.make_node("Unsqueeze", ["M", "axes"], ["M3"], name="/mask/Unsqueeze"),
        helper.make_node("Mul", ["E", "M3"], ["hidden"], name="/mask/Mul"),
    ]
    graph = helper.make_graph(
        nodes, "bert_like",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"]),
            # old exporters list initializers as graph inputs too: not a model input
            helper.make_tensor_value_info("emb", TensorProto.FLOAT, [VOCAB, 4]),
        ],
        [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["batch", "seq", 4])],
        initializer=[emb, axes],
    )
    return _model(graph)


def float_model():
    """x: float32[batch, ?, 4] (symbolic, unnamed, static), scale: float32[4] -> x * scale."""
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "scale"], ["y"], name="/Mul")], "float_model",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", None, 4]),
            helper.make_tensor_value_info("scale", TensorProto.FLOAT, [4]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", None, 4])],
    )
    return _model(graph)


MIXED = {"h": (TensorProto.FLOAT16, [2, 3]), "d": (TensorProto.DOUBLE, [2]), "i32": (TensorProto.INT32, [5]),
         "u8": (TensorProto.UINT8, [4]), "b": (TensorProto.BOOL, [64])}


def mixed_model():
    """One static input per dtype, each passed through Identity."""
    graph = helper.make_graph(
        [helper.make_node("Identity", [n], [f"{n}_out"], name=f"/id/{n}") for n in MIXED], "mixed",
        [helper.make_tensor_value_info(n, t, s) for n, (t, s) in MIXED.items()],
        [helper.make_tensor_value_info(f"{n}_out", t, s) for n, (t, s) in MIXED.items()],
    )
    return _model(graph)


def odd_model():
    """s: string[2] and r: float32 of unknown rank (which onnx.checker refuses: loaded with check=False)."""
    graph = helper.make_graph(
        [helper.make_node("Identity", ["s"], ["s_out"]), helper.make_node("Identity", ["r"], ["r_out"])], "odd",
        [helper.make_tensor_value_info("s", TensorProto.STRING, [2]),
         helper.make_tensor_value_info("r", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("s_out", TensorProto.STRING, [2]),
         helper.make_tensor_value_info("r_out", TensorProto.FLOAT, None)],
    )
    return _model(graph, check=False)


@pytest.fixture(scope="module")
def bert():
    return load_model(bert_like())


@pytest.fixture(scope="module")
def flt():
    return load_model(float_model())


@pytest.fixture(scope="module")
def mixed():
    return load_model(mixed_model())


@pytest.fixture(scope="module")
def odd():
    return load_model(odd_model(), check=False)


BERT_RANGES = {"input_ids": (0, VOCAB - 1), "attention_mask": (0, 1)}
BERT_DIMS = {"batch": 2, "seq": 7}


def bert_feeds(model, **kw):
    kw.setdefault("dims", BERT_DIMS)
    kw.setdefault("val_range", BERT_RANGES)
    return make_feeds(model, **kw)


def run_ort(model, feeds):
    import onnxruntime as ort

    proto = model.proto if hasattr(model, "proto") else model
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds), strict=True))


# ---------------------------------------------------------------------------------------
# Specs
# ---------------------------------------------------------------------------------------

def test_input_specs_of_bert_like_model_excludes_initializers(bert):
    specs = input_specs(bert)
    assert [s.name for s in specs] == ["input_ids", "attention_mask"]
    ids = specs[0]
    assert ids == InputSpec("input_ids", np.dtype(np.int64), ("batch", "seq"))
    assert ids.is_dynamic and ids.kind == "int" and ids.rank == 2
    assert ids.symbolic_dims == ("batch", "seq")
    assert ids.describe() == "input_ids: int64[batch, seq]"


def test_input_specs_float_unnamed_static_and_unknown_rank(flt, odd):
    x, scale = input_specs(flt)
    assert x.shape == ("batch", None, 4) and x.describe() == "x: float32[batch, ?, 4]"
    assert scale.shape == (4,) and not scale.is_dynamic and scale.kind == "float"
    s, r = input_specs(odd)
    assert s.kind == "other"
    assert r.shape is None and r.is_dynamic and r.rank is None and r.describe() == "r: float32[...]"


def test_input_specs_accepts_path_and_proto(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(float_model(), path)
    assert [s.name for s in input_specs(path)] == ["x", "scale"]
    assert [s.name for s in input_specs(float_model())] == ["x", "scale"]


def test_input_specs_rejects_non_tensor_inputs():
    graph = helper.make_graph(
        [helper.make_node("SequenceLength", ["seq"], ["n"])], "seqmodel",
        [helper.make_tensor_sequence_value_info("seq", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("n", TensorProto.INT64, [])],
    )
    with pytest.raises(InputError, match=r"input 'seq' is a sequence_type value; .*tensor inputs only"):
        input_specs(_model(graph))


def test_symbolic_dims(bert, flt):
    assert symbolic_dims(bert) == {"batch": ["input_ids", "attention_mask"], "seq": ["input_ids", "attention_mask"]}
    assert symbolic_dims(flt) == {"batch": ["x"]}


# ---------------------------------------------------------------------------------------
# Shapes
# ---------------------------------------------------------------------------------------

def test_resolve_shapes_from_dims(bert):
    assert resolve_shapes(bert, dims={"batch": 2, "seq": 128}) == {"input_ids": (2, 128), "attention_mask": (2, 128)}


def test_resolve_shapes_infers_inputs_sharing_symbolic_dims(bert):
    assert resolve_shapes(bert, shapes={"input_ids": (3, 5)}) == {"input_ids": (3, 5), "attention_mask": (3, 5)}
    assert resolve_shapes(bert, shapes="input_ids:[3,5]")["attention_mask"] == (3, 5)
    assert resolve_shapes(bert, shapes={"input_ids": [1, 4]}, dims={"batch": 1})["attention_mask"] == (1, 4)


def test_undeclared_dims_error_names_input_position_and_both_ways(bert):
    with pytest.raises(InputError) as exc:
        resolve_shapes(bert)
    msg = str(exc.value)
    assert "input 'input_ids' int64[batch, seq]: no size declared for dim 0 'batch', dim 1 'seq'" in msg
    assert "input 'attention_mask'" in msg
    assert "dims={'batch': <batch>, 'seq': <seq>}" in msg
    assert "shapes={'input_ids': (<batch>, <seq>)" in msg
    assert "--input-shapes input_ids:[<batch>,<seq>] attention_mask:[<batch>,<seq>]" in msg


def test_undeclared_dims_error_uses_the_declared_part(bert):
    with pytest.raises(InputError) as exc:
        resolve_shapes(bert, dims={"batch": 2})
    msg = str(exc.value)
    assert "dim 1 'seq'" in msg and "dim 0" not in msg
    assert "--input-shapes input_ids:[2,<seq>]" in msg
    assert "dims={'seq': <seq>}" in msg


def test_unnamed_dynamic_dim_needs_a_shape(flt):
    with pytest.raises(InputError) as exc:
        resolve_shapes(flt, dims={"batch": 2})
    msg = str(exc.value)
    assert "input 'x' float32[batch, ?, 4]: no size declared for dim 1 (unnamed)" in msg
    assert "dims={" not in msg  # an unnamed dim cannot be declared by name
    assert "shapes={'x': (2, <dim1>, 4)}" in msg and "--input-shapes x:[2,<dim1>,4]" in msg
    assert resolve_shapes(flt, shapes={"x": (2, 5, 4)}) == {"x": (2, 5, 4), "scale": (4,)}


def test_unknown_rank_input_takes_its_rank_from_the_declared_shape(odd):
    with pytest.raises(InputError, match=r"input 'r' float32\[\.\.\.\]: its rank is unknown"):
        resolve_shapes(odd)
    assert resolve_shapes(odd, shapes={"r": (2, 3)}) == {"s": (2,), "r": (2, 3)}


@pytest.mark.parametrize(
    "kwargs, pattern",
    [
        ({"shapes": {"x": (2, 5, 3)}}, r"shapes\['x'\] = \(2, 5, 3\) contradicts .*: dim 2 of input 'x' is static 4"),
        ({"shapes": {"x": (2, 5)}}, r"shapes\['x'\] = \(2, 5\) has rank 2, but .* declares x: float32\[batch, \?, 4\] \(rank 3\)"),
        ({"shapes": {"scale": (5,)}}, r"dim 0 of input 'scale' is static 4"),
        ({"shapes": {"xx": (1, 2, 4)}}, r"shapes names 'xx', which is not an input of float_model \(did you mean 'x'\?\); "
                                         r"the model's inputs: x: float32\[batch, \?, 4\], scale: float32\[4\]"),
        ({"dims": {"btach": 2}}, r"dims names 'btach', which is no symbolic dim of float_model \(did you mean 'batch'\?\); "
                                 r"its symbolic dims: batch \(x\)"),
        ({"shapes": {"x": (2, -1, 4)}}, r"shapes\['x'\] dim 1 is -1: dims must be non-negative"),
        ({"dims": {"batch": 2.0}}, r"dims\['batch'\] must be a non-negative integer, got 2\.0"),
        ({"dims": {"batch": True}}, r"dims\['batch'\] must be a non-negative integer, got True"),
        ({"shapes": {"x": "2,3,4"}}, r"shapes\['x'\] must be a tuple of ints"),
        ({"shapes": [("x", (1, 2, 4))]}, r"shapes must be a dict"),
        ({"dims": {"batch": 2}, "shapes": {"x": (3, 5, 4)}}, r"dim 'batch' is declared 2 by dims\['batch'\] but 3 by shapes\['x'\] dim 0"),
    ],
)
def test_resolve_shapes_errors(flt, kwargs, pattern):
    with pytest.raises(InputError, match=pattern):
        resolve_shapes(flt, **kwargs)


def test_conflicting_shapes_of_one_symbolic_dim(bert):
    with pytest.raises(InputError, match=r"dim 'seq' is declared 7 by shapes\['input_ids'\] dim 1 but 6 by "
                                         r"shapes\['attention_mask'\] dim 1"):
        resolve_shapes(bert, shapes={"input_ids": (2, 7), "attention_mask": (2, 6)})


def test_dims_on_a_model_without_symbolic_dims(mixed):
    with pytest.raises(InputError, match="the model has no symbolic dims"):
        resolve_shapes(mixed, dims={"batch": 1})


# ---------------------------------------------------------------------------------------
# Profiles
# ---------------------------------------------------------------------------------------

def test_profile_static_and_declared_inputs_have_min_opt_max_equal(flt, mixed):
    assert resolve_profile(mixed)["h"] == ((2, 3), (2, 3), (2, 3))
    prof = resolve_profile(flt, shapes={"x": (2, 5, 4)})
    assert prof == {"x": ((2, 5, 4),) * 3, "scale": ((4,),) * 3}


def test_profile_given_and_inherited_through_shared_dims(bert):
    prof = resolve_profile(bert, profile={"input_ids": {"min": (1, 1), "opt": (2, 64), "max": (8, 128)}})
    assert prof["input_ids"] == ((1, 1), (2, 64), (8, 128))
    assert prof["attention_mask"] == prof["input_ids"]
    # a declared feed shape inside the profile is fine
    assert resolve_profile(bert, dims={"batch": 2, "seq": 16},
                           profile={"input_ids": ((1, 1), (2, 64), (8, 128))})["input_ids"][1] == (2, 64)


@pytest.mark.parametrize(
    "kwargs, pattern",
    [
        ({"profile": {"x": {"min": (1, 1, 4), "opt": (2, 2, 4), "max": (4, 4, 8)}}},
         r"profile\['x'\] contradicts .*: dim 2 of input 'x' is static 4, the profile gives min 4, opt 4, max 8"),
        ({"profile": {"x": {"min": (1, 3, 4), "opt": (2, 2, 4), "max": (4, 4, 4)}}},
         r"profile\['x'\]: dim 1 needs min <= opt <= max, got min 3, opt 2, max 4"),
        ({"profile": {"x": {"min": (1, 1, 4), "max": (4, 4, 4)}}}, r"profile\['x'\] must have exactly the keys .*missing opt"),
        ({"profile": {"x": {"min": (1, 1, 4), "opt": (1, 1, 4), "max": (4, 4, 4), "mid": (1, 1, 4)}}}, r"unknown 'mid'"),
        ({"profile": {"x": {"min": (1, 4), "opt": (1, 4), "max": (4, 4)}}}, r"has rank 2, but .* \(rank 3\)"),
        ({"profile": {"x": {"min": (1, 4), "opt": (1, 1, 4), "max": (4, 4, 4)}}}, r"differ in rank"),
        ({"profile": {"x": {"min": (1, 1, 4), "opt": (2, 2, 4), "max": (4, 4, 4)}}, "dims": {"batch": 9}},
         r"dim 'batch' = 9 \(from dims\['batch'\]\) is outside the profile range \[1, 4\]"),
        ({"profile": {"y": {}}}, r"profile names 'y', which is not an input"),
        ({"profile": {"x": [1, 2, 3]}}, r"profile\['x'\] must be \{'min'"),
    ],
)
def test_resolve_profile_errors(flt, kwargs, pattern):
    with pytest.raises(InputError, match=pattern):
        resolve_profile(flt, **kwargs)


def test_profile_undeclared_input_mentions_profiles(bert, flt):
    with pytest.raises(InputError, match=r"(?s)dim 1 \(unnamed\).*profile=\{input: \{'min'"):
        resolve_profile(flt, dims={"batch": 1})


def test_profiles_of_a_shared_dim_must_overlap(bert):
    with pytest.raises(InputError, match=r"dim 'seq' has profile range \[1, 8\] .* but \[16, 32\] .* do not overlap"):
        resolve_profile(bert, profile={"input_ids": {"min": (1, 1), "opt": (1, 4), "max": (1, 8)},
                                       "attention_mask": {"min": (1, 16), "opt": (1, 16), "max": (1, 32)}})


def test_profile_from_shapes():
    prof = profile_from_shapes("x:[1,8]", "x:[2,16]", {"x": (4, 32)})
    assert prof == {"x": {"min": (1, 8), "opt": (2, 16), "max": (4, 32)}}
    with pytest.raises(UsageError, match="profile for input 'y' lacks its opt/max shape"):
        profile_from_shapes("x:[1] y:[1]", "x:[1]", "x:[1]")


# ---------------------------------------------------------------------------------------
# Option parsing (Polygraphy spelling)
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "arg, expected",
    [
        ("x:[-1,1]", {"x": (-1, 1)}),
        ("[0,5]", {ALL_INPUTS: (0, 5)}),
        (":[0,5]", {ALL_INPUTS: (0, 5)}),
        ("*:[0,5]", {ALL_INPUTS: (0, 5)}),
        ("x:[0.5, 2e3]", {"x": (0.5, 2000.0)}),
        ("  x:[ -1 , 1 ]  ", {"x": (-1, 1)}),
        ("input:0:[0,1]", {"input:0": (0, 1)}),
        ("[0,1] input_ids:[0,30521]", {ALL_INPUTS: (0, 1), "input_ids": (0, 30521)}),
        (["x:[0,1]", "y:[2.5,3]"], {"x": (0, 1), "y": (2.5, 3)}),
        ("x:[3,3]", {"x": (3, 3)}),
    ],
)
def test_parse_val_range_valid(arg, expected):
    out = parse_val_range(arg)
    assert out == expected
    for key, (lo, hi) in expected.items():  # ints stay ints
        assert type(out[key][0]) is type(lo) and type(out[key][1]) is type(hi)


@pytest.mark.parametrize(
    "arg, error, pattern",
    [
        ("x:0,1", UsageError, r"--val-range 'x:0,1': expected NAME:\[MIN,MAX\]"),
        ("x:[0,1,2]", UsageError, r"'x:\[0,1,2\]': a range has exactly 2 values .* got 3"),
        ("x:[]", UsageError, r"exactly 2 values"),
        ("x:[a,1]", UsageError, r"'x:\[a,1\]': 'a' is not a number"),
        ("x:[0,1", UsageError, r"'x:\[0,1'"),
        ("x:[[0,1]]", UsageError, r"expected NAME"),
        ("", UsageError, r"--val-range: empty value"),
        ("x:[0,1] x:[2,3]", UsageError, r"a range for input 'x' is given twice"),
        ("[0,1] :[2,3]", UsageError, r"a range for all inputs is given twice"),
        (5, UsageError, r"expected a string or a list of strings"),
        (["x:[0,1]", 3], UsageError, r"expected strings, got 3"),
        ("x:[5,1]", InputError, r"--val-range 'x:\[5,1\]': min 5 is greater than max 1"),
        ("x:[nan,1]", InputError, r"range bounds must be finite"),
        ("x:[-inf,0]", InputError, r"range bounds must be finite"),
    ],
)
def test_parse_val_range_invalid(arg, error, pattern):
    with pytest.raises(error, match=pattern):
        parse_val_range(arg)


@pytest.mark.parametrize(
    "arg, expected",
    [
        ("x:[1,3,224,224]", {"x": (1, 3, 224, 224)}),
        ("x:[]", {"x": ()}),
        ("x:[ 2 , 3 ]", {"x": (2, 3)}),
        ("input:0:[2]", {"input:0": (2,)}),
        ("a:[1,2] b:[3]", {"a": (1, 2), "b": (3,)}),
        (["a:[1,2]", "b:[5]"], {"a": (1, 2), "b": (5,)}),
    ],
)
def test_parse_input_shape_valid(arg, expected):
    assert parse_input_shape(arg) == expected


@pytest.mark.parametrize(
    "arg, pattern",
    [
        ("x:1x3x224x224", r"write shapes in brackets .*trtexec.*: x:\[1,3,224,224\]"),
        ("[1,2]", r"--input-shapes '\[1,2\]': no input name"),
        (":[1,2]", r"no input name"),
        ("x", r"no input name"),
        ("x:[-1,3]", r"'x:\[-1,3\]': dim 0 is -1"),
        ("x:[batch,3]", r"dim 0 'batch' is not an integer"),
        ("x:[1.5]", r"dim 0 '1.5' is not an integer"),
        ("x:[1,,2]", r"dim 1 '' is not an integer"),
        ("x:(1,2)", r"expected NAME:\[D0,D1,...\]"),
        ("x:[1,2] x:[3]", r"input 'x' is given twice"),
        ("", r"empty value"),
        (None, r"expected a string"),
    ],
)
def test_parse_input_shape_invalid(arg, pattern):
    with pytest.raises(UsageError, match=pattern):
        parse_input_shape(arg)


_SYNTAX = st.text(alphabet="xy_:*[],.-+0123456789eEnaif \t\u00a0\u0661", max_size=30)
_ANY = st.one_of(st.text(max_size=40), _SYNTAX, st.lists(_SYNTAX, max_size=3))


@settings(max_examples=300, deadline=None, database=None)
@given(arg=_ANY)
def test_fuzz_parse_val_range_raises_only_our_errors(arg):
    try:
        out = parse_val_range(arg)
    except (InputError, UsageError):
        return
    for key, (lo, hi) in out.items():
        assert isinstance(key, str) and lo <= hi


@settings(max_examples=300, deadline=None, database=None)
@given(arg=_ANY)
def test_fuzz_parse_input_shape_raises_only_our_errors(arg):
    try:
        out = parse_input_shape(arg)
    except UsageError:
        return
    for name, shape in out.items():
        assert name and all(isinstance(d, int) and d >= 1 for d in shape)


# ---------------------------------------------------------------------------------------
# Value ranges
# ---------------------------------------------------------------------------------------

def test_integer_input_without_range_is_an_error(bert):
    with pytest.raises(InputError) as exc:
        make_feeds(bert, dims=BERT_DIMS)
    msg = str(exc.value)
    # the example comes from the model's embedding table (VOCAB = 50 rows), never a made-up 30521
    assert ("input 'input_ids' is int64: declare its range, e.g. val_range={'input_ids': (0, 49)} "
            "or --val-range input_ids:[0,49] (it indexes 'emb', which has 50 rows)") in msg
    assert "input 'attention_mask' is int64: declare its range, e.g. val_range={'attention_mask': (0, 1)}" in msg
    with pytest.raises(InputError, match=r"input 'attention_mask' is int64: declare its range") as exc:
        make_feeds(bert, dims=BERT_DIMS, val_range={"input_ids": (0, 9)})
    assert "input_ids" not in str(exc.value).split("\n", 1)[1]


def test_token_id_range_hint_follows_the_ids_to_the_embedding_table_or_says_to_fill_it_in(mixed):
    from pytest_trt.inputs.specs import index_table_rows

    gpt2 = Path(__file__).resolve().parents[1] / "data" / "gpt2_tiny_opset14.onnx"  # input_ids -> Reshape -> Gather
    assert index_table_rows(gpt2, "input_ids") == ("transformer.wte.weight", 256)
    with pytest.raises(InputError) as exc:
        make_feeds(gpt2, shapes={"input_ids": (2, 16)})
    assert "val_range={'input_ids': (0, 255)} or --val-range input_ids:[0,255]" in str(exc.value)
    # no table to read it from (i32 only passes through Identity): a placeholder, not a number to copy
    assert index_table_rows(mixed, "i32") is None
    with pytest.raises(InputError) as exc:
        make_feeds(mixed, val_range={"u8": (0, 255)})
    assert ("input 'i32' is int32: declare its range, e.g. val_range={'i32': (0, <vocab_size - 1>)} or "
            "--val-range i32:[0,<vocab_size-1>] (the largest valid id; fill in yours)") in str(exc.value)


def test_resolve_val_ranges_defaults_and_forms(mixed, bert):
    ranges = resolve_val_ranges(mixed, {"i32": (-3, 3), "u8": (0, 255)})
    assert ranges["h"] == DEFAULT_FLOAT_RANGE and ranges["d"] == DEFAULT_FLOAT_RANGE
    assert ranges["b"] == (0, 1) and ranges["i32"] == (-3, 3)
    assert resolve_val_ranges(bert, (0, 5)) == {"input_ids": (0, 5), "attention_mask": (0, 5)}
    assert resolve_val_ranges(bert, {"*": (0, 1), "input_ids": (0, 9)}) == {"input_ids": (0, 9), "attention_mask": (0, 1)}
    assert resolve_val_ranges(bert, "input_ids:[0,9] attention_mask:[1,1]")["attention_mask"] == (1, 1)
    assert resolve_val_ranges(bert, ["[0,1]", "input_ids:[0,9]"])["input_ids"] == (0, 9)
    assert resolve_val_ranges(bert, (0.0, 4.0))["input_ids"] == (0, 4)  # integral floats are fine


@pytest.mark.parametrize(
    "val_range, pattern",
    [
        ({"i32": (0, 2**31), "u8": (0, 1)}, r"val_range\['i32'\] \[0, 2147483648\] for input 'i32' is outside int32's range "
                                            r"\[-2147483648, 2147483647\]"),
        ({"i32": (0, 1), "u8": (-1, 1)}, r"val_range\['u8'\] \[-1, 1\] for input 'u8' is outside uint8's range \[0, 255\]"),
        ({"i32": (5, 1), "u8": (0, 1)}, r"val_range\['i32'\]: min 5 is greater than max 1"),
        ({"i32": (0, 1), "u8": (0, 1), "h": (-1e5, 1)}, r"for input 'h' is outside float16's finite range \[-65504, 65504\]"),
        ({"i32": (0, 1), "u8": (0, 1), "b": (0, 2)}, r"\[0, 2\] for input 'b' is outside bool's values \[0, 1\]"),
        ({"i32": (0, 1.5), "u8": (0, 1)}, r"for input 'i32' \(int32\) has a non-integer bound"),
        ({"": (-0.5, 0.5)}, r"the all-inputs val_range \[-0.5, 0.5\] for input 'i32' \(int32\) has a non-integer bound"),
        ({"i32": (0, 1), "u8": (0, 1), "d": (0, 10**400)}, r"for input 'd' is outside float64's finite range"),
        ({"i32": (0, 1), "u8": (0, 1), "hh": (0, 1)}, r"val_range names 'hh', which is not an input of mixed \(did you mean 'h'\?\)"),
        ({"i32": (0, 1, 2)}, r"val_range\['i32'\] must be a \(min, max\) pair, got 3 values"),
        ({"i32": "0,1"}, r"val_range\['i32'\] must be a \(min, max\) pair"),
        ({"i32": (0, float("inf"))}, r"val_range\['i32'\]: range bounds must be finite"),
        ({"i32": (0, None)}, r"range bounds must be numbers, got None"),
        ({"": (0, 1), "*": (0, 2)}, r"all-inputs range twice"),
    ],
)
def test_val_range_errors(mixed, val_range, pattern):
    with pytest.raises(InputError, match=pattern):
        make_feeds(mixed, val_range=val_range)


def test_string_input_cannot_be_generated(odd):
    with pytest.raises(InputError, match=r"input 's' is object; pytest-trt cannot generate it: pass your own feeds"):
        make_feeds(odd, shapes={"r": (2,)})


# ---------------------------------------------------------------------------------------
# Generated feeds
# ---------------------------------------------------------------------------------------

def test_make_feeds_bert_like_ints_in_declared_inclusive_range_and_run_in_ort(bert):
    feeds = bert_feeds(bert, dims={"batch": 4, "seq": 64}, val_range={"input_ids": (0, VOCAB - 1), "attention_mask": (1, 1)})
    ids, mask = feeds["input_ids"], feeds["attention_mask"]
    assert list(feeds) == ["input_ids", "attention_mask"]
    assert ids.dtype == np.int64 and ids.shape == (4, 64) and mask.shape == (4, 64)
    assert ids.min() >= 0 and ids.max() <= VOCAB - 1
    assert ids.min() == 0 and ids.max() == VOCAB - 1  # inclusive at both ends (256 draws over 50 values)
    assert (mask == 1).all()
    out = run_ort(bert, feeds)["hidden"]
    assert out.shape == (4, 64, 4) and np.isfinite(out).all()
    check_feeds(bert, feeds)


def test_make_feeds_float_default_range_is_minus_one_to_one(flt):
    feeds = make_feeds(flt, shapes={"x": (8, 16, 4)})
    x = feeds["x"]
    assert x.dtype == np.float32 and x.shape == (8, 16, 4) and feeds["scale"].shape == (4,)
    assert x.min() >= -1 and x.max() <= 1 and x.min() < -0.9 and x.max() > 0.9
    assert abs(float(x.mean())) < 0.1
    np.testing.assert_allclose(run_ort(flt, feeds)["y"], x * feeds["scale"], rtol=1e-6)


def test_make_feeds_every_dtype(mixed):
    feeds = make_feeds(mixed, val_range={"i32": (-2**31, 2**31 - 1), "u8": (0, 255), "d": (-1e300, 1e300)}, seed=3)
    for name, (elem, shape) in MIXED.items():
        assert feeds[name].dtype == helper.tensor_dtype_to_np_dtype(elem) and feeds[name].shape == tuple(shape)
    assert set(np.unique(feeds["b"])) == {False, True}  # bool defaults to {0, 1}
    assert np.isfinite(feeds["d"]).all() and np.abs(feeds["d"]).max() <= 1e300
    assert np.isfinite(feeds["h"]).all()
    outs = run_ort(mixed, feeds)
    for name in MIXED:
        np.testing.assert_array_equal(outs[f"{name}_out"], feeds[name])


def test_make_feeds_extreme_float_ranges_stay_finite(mixed):
    feeds = make_feeds(mixed, val_range={"i32": (0, 0), "u8": (0, 0), "h": (-65504, 65504),
                                         "d": (-np.finfo(np.float64).max, np.finfo(np.float64).max)})
    assert np.isfinite(feeds["h"]).all() and np.isfinite(feeds["d"]).all()
    assert (feeds["i32"] == 0).all()


def test_seeded_determinism(bert, flt):
    a, b = bert_feeds(bert, seed=5), bert_feeds(bert, seed=5)
    c = bert_feeds(bert, seed=6)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])
    assert not np.array_equal(a["input_ids"], c["input_ids"])
    x1 = make_feeds(flt, shapes={"x": (2, 3, 4)}, seed=1)
    x2 = make_feeds(flt, shapes={"x": (2, 3, 4)}, seed=2)
    assert not np.array_equal(x1["x"], x2["x"]) and not np.array_equal(x1["scale"], x2["scale"])
    assert bert_feeds(bert)["input_ids"].tolist() == bert_feeds(bert, seed=0)["input_ids"].tolist()  # default seed 0


def test_each_input_has_its_own_stream(flt):
    small = make_feeds(flt, shapes={"x": (1, 2, 4)}, seed=7)
    large = make_feeds(flt, shapes={"x": (3, 9, 4)}, seed=7)
    np.testing.assert_array_equal(small["scale"], large["scale"])


@pytest.mark.parametrize("seed", [-1, 1.5, True, "0", None])
def test_seed_must_be_a_non_negative_int(flt, seed):
    with pytest.raises(InputError, match="seed must be a non-negative integer"):
        make_feeds(flt, shapes={"x": (1, 1, 4)}, seed=seed)


@pytest.mark.parametrize("seed", [-1, 1.5, True, np.bool_(True), "0", None])
def test_check_seed_refuses_what_is_not_a_non_negative_int(seed):
    # check_seed is the public check the trt marker's seed= goes through (glue/case.py)
    with pytest.raises(InputError, match=r"^seed must be a non-negative integer, got "):
        check_seed(seed)


def test_check_seed_returns_a_plain_int():
    assert check_seed(0) == 0
    value = check_seed(np.int64(7))
    assert value == 7 and type(value) is int


def test_offset_with_small_spread(flt):
    feeds = make_feeds(flt, shapes={"x": (2, 8, 4)}, val_range={"x": (-0.05, 0.05)}, offset={"x": 1000.0})
    x = feeds["x"]
    assert 999.94 < x.min() and x.max() < 1000.06 and x.std() > 0.01
    assert np.abs(feeds["scale"]).max() > 0.05  # scale keeps the default range
    both = make_feeds(flt, shapes={"x": (2, 8, 4)}, offset=10.0)
    assert both["x"].min() >= 9 and both["scale"].min() >= 9


def test_outliers_change_only_the_outlier_elements(flt):
    base = make_feeds(flt, shapes={"x": (2, 16, 4)}, seed=4)
    out = make_feeds(flt, shapes={"x": (2, 16, 4)}, seed=4, outliers={"x": {"count": 1, "magnitude": 400.0}})
    diff = base["x"] != out["x"]
    assert diff.sum() == 1 and out["x"][diff][0] == 400.0
    np.testing.assert_array_equal(base["scale"], out["scale"])


def test_outlier_fraction_sign_and_defaults(flt):
    shape = {"x": (10, 25, 4)}  # 1000 elements
    neg = make_feeds(flt, shapes=shape, outliers={"x": {"fraction": 0.01, "magnitude": 300.0, "sign": "-"}})["x"]
    assert (neg == -300.0).sum() == 10
    rnd = make_feeds(flt, shapes=shape, outliers={"x": {"count": 40, "sign": "random"}})["x"]
    big = rnd[np.abs(rnd) > 1]
    assert len(big) == 40 and set(np.unique(big)) == {-400.0, 400.0}
    tiny = make_feeds(flt, shapes=shape, outliers={"x": {"fraction": 1e-9}})["x"]
    assert (tiny == 400.0).sum() == 1  # at least one element
    every = make_feeds(flt, shapes=shape, outliers=True)
    assert (every["x"] == 400.0).sum() == 1 and (every["scale"] == 400.0).sum() == 1
    star = make_feeds(flt, shapes=shape, outliers={"*": {"count": 2}, "scale": {"count": 1}})
    assert (star["x"] == 400.0).sum() == 2 and (star["scale"] == 400.0).sum() == 1


@pytest.mark.parametrize(
    "kwargs, pattern",
    [
        ({"outliers": {"input_ids": {"count": 1}}}, r"outliers\['input_ids'\]: input 'input_ids' is int64; outliers applies to float inputs only"),
        ({"offset": {"input_ids": 3.0}}, r"offset\['input_ids'\]: input 'input_ids' is int64"),
        ({"outliers": {"input_id": {}}}, r"outliers names 'input_id', which is not an input .*did you mean 'input_ids'"),
    ],
)
def test_outliers_and_offset_only_for_float_inputs(bert, kwargs, pattern):
    with pytest.raises(InputError, match=pattern):
        bert_feeds(bert, **kwargs)


@pytest.mark.parametrize(
    "kwargs, pattern",
    [
        ({"outliers": {"x": {"count": 1, "fraction": 0.1}}}, r"give 'count' or 'fraction', not both"),
        ({"outliers": {"x": {"count": 0}}}, r"'count' must be an integer >= 1"),
        ({"outliers": {"x": {"fraction": 0}}}, r"'fraction' must be a number in \(0, 1\]"),
        ({"outliers": {"x": {"magnitude": -4}}}, r"'magnitude' must be a finite number > 0"),
        ({"outliers": {"x": {"magnitude": float("nan")}}}, r"'magnitude' must be a finite number > 0"),
        ({"outliers": {"x": {"sign": "both"}}}, r"'sign' must be '\+', '-' or 'random'"),
        ({"outliers": {"x": {"count": 1, "where": 0}}}, r"unknown key\(s\) 'where'"),
        ({"outliers": {"x": 400.0}}, r"outliers\['x'\] must be a dict like"),
        ({"outliers": {"count": 1, "magnitude": 400.0}}, r"looks like one outlier spec: key it by input"),
        ({"outliers": 3}, r"outliers must be a dict"),
        ({"outliers": {"x": {"magnitude": 1e39}}}, r"outliers\['x'\] magnitude \[-1e\+39, 1e\+39\] for input 'x' is outside float32's finite range"),
        ({"offset": float("inf")}, r"offset for input 'x' must be a finite number"),
        ({"offset": {"x": "1000"}}, r"offset for input 'x' must be a finite number"),
        ({"offset": {"x": 3.5e38}}, r"val_range \+ offset 3.5e\+38 \[3.5e\+38, 3.5e\+38\] for input 'x' is outside float32"),
    ],
)
def test_outlier_and_offset_errors(flt, kwargs, pattern):
    with pytest.raises(InputError, match=pattern):
        make_feeds(flt, shapes={"x": (1, 2, 4)}, **kwargs)


def test_offset_beyond_float16(mixed):
    with pytest.raises(InputError, match=r"val_range \+ offset 65504 \[65503.0, 65505.0\] for input 'h' is outside float16's finite range"):
        make_feeds(mixed, val_range={"i32": (0, 1), "u8": (0, 1)}, offset={"h": 65504.0})


def test_huge_declared_shape_is_refused_before_allocating(bert):
    with pytest.raises(InputError, match=r"input 'input_ids' of shape \(100000, 100000\) would take 74.5 GiB"):
        bert_feeds(bert, dims={"batch": 100000, "seq": 100000})


def test_zero_size_dims_are_an_input_error_everywhere(bert):
    # issue 19: an empty tensor compares nothing (and crashed later with a memoryview TypeError)
    with pytest.raises(InputError, match=r"dims\['batch'\] is 0: zero-size dims are not supported"):
        bert_feeds(bert, dims={"batch": 0, "seq": 3}, outliers=None)
    with pytest.raises(UsageError, match=r"--input-shapes 'input_ids:\[0,16\]': dim 0 is 0; zero-size dims"):
        parse_input_shape("input_ids:[0,16]", option="--input-shapes")
    empty = {"input_ids": np.zeros((0, 3), np.int64), "attention_mask": np.zeros((0, 3), np.int64)}
    with pytest.raises(InputError, match=r"input 'input_ids' has a zero-size dim \(shape \(0, 3\)\)"):
        check_feeds(bert, {k: v for k, v in empty.items() if k in {s.name for s in input_specs(bert)}})


# ---------------------------------------------------------------------------------------
# check_feeds
# ---------------------------------------------------------------------------------------

def test_check_feeds_accepts_generated_feeds(bert, flt, mixed):
    check_feeds(bert, bert_feeds(bert), dims=BERT_DIMS)
    check_feeds(flt, make_feeds(flt, shapes={"x": (2, 3, 4)}), shapes={"x": (2, 3, 4)})
    check_feeds(mixed, make_feeds(mixed, val_range={"i32": (0, 1), "u8": (0, 1)}))


def test_check_feeds_missing_and_extra_names(bert):
    feeds = bert_feeds(bert)
    feeds["input_idz"] = feeds.pop("input_ids")
    with pytest.raises(InputError) as exc:
        check_feeds(bert, feeds)
    msg = str(exc.value)
    assert "input 'input_ids' is missing" in msg
    assert "'input_idz' is not an input of the model (did you mean 'input_ids'?)" in msg
    assert "the model's inputs: input_ids: int64[batch, seq], attention_mask: int64[batch, seq]" in msg


def test_check_feeds_wrong_dtype_says_how_to_cast(bert):
    feeds = bert_feeds(bert)
    feeds["input_ids"] = feeds["input_ids"].astype(np.int32)
    with pytest.raises(InputError, match=r"input 'input_ids' expects int64, got int32: cast it with "
                                         r"feeds\['input_ids'\] = feeds\['input_ids'\]\.astype\(np\.int64\)"):
        check_feeds(bert, feeds)


def test_check_feeds_not_an_array(bert):
    feeds = bert_feeds(bert)
    feeds["attention_mask"] = feeds["attention_mask"].tolist()
    with pytest.raises(InputError, match=r"input 'attention_mask' is a list, not a numpy array: pass np\.asarray\(value, dtype=np\.int64\)"):
        check_feeds(bert, feeds)


def test_check_feeds_rank_and_static_dims(flt):
    feeds = make_feeds(flt, shapes={"x": (2, 3, 4)})
    with pytest.raises(InputError, match=r"input 'x' expects rank 3 \(x: float32\[batch, \?, 4\]\), got shape \(6, 4\)"):
        check_feeds(flt, {**feeds, "x": feeds["x"].reshape(6, 4)})
    with pytest.raises(InputError, match=r"input 'scale' dim 0 must be 4 \(scale: float32\[4\]\), got shape \(5,\)"):
        check_feeds(flt, {**feeds, "scale": np.ones(5, np.float32)})


def test_check_feeds_against_declared_shapes_and_dims(bert):
    feeds = bert_feeds(bert)  # (2, 7)
    with pytest.raises(InputError, match=r"input 'input_ids' dim 1 \('seq'\) is 7, but shapes\['input_ids'\] dim 1 declares 8"):
        check_feeds(bert, feeds, shapes={"input_ids": (2, 8)})
    with pytest.raises(InputError, match=r"input 'input_ids' dim 0 \('batch'\) is 2, but dims\['batch'\] declares 3"):
        check_feeds(bert, feeds, dims={"batch": 3})
    with pytest.raises(InputError, match=r"shapes\['input_ids'\] = \(2, 7, 1\) has rank 3"):
        check_feeds(bert, feeds, shapes={"input_ids": (2, 7, 1)})


def test_check_feeds_one_size_per_symbolic_dim(bert):
    feeds = bert_feeds(bert)
    feeds["attention_mask"] = feeds["attention_mask"][:, :6]
    with pytest.raises(InputError, match=r"input 'attention_mask' dim 1 \('seq'\) is 6, but it is 7 in input 'input_ids'"):
        check_feeds(bert, feeds)


def test_check_feeds_nonfinite(flt):
    feeds = make_feeds(flt, shapes={"x": (2, 3, 4)})
    feeds["x"][0, 1, 2] = np.nan
    feeds["x"][1, 0, 0] = -np.inf
    with pytest.raises(InputError, match=r"input 'x' holds 1 NaN and 1 Inf value\(s\) \(first at index \(0, 1, 2\)\); "
                                         r"pass allow_nonfinite=True"):
        check_feeds(flt, feeds)
    check_feeds(flt, feeds, allow_nonfinite=True)


def test_check_feeds_reports_every_problem_at_once(bert):
    feeds = {"input_ids": np.zeros((2, 3), np.int32)}
    with pytest.raises(InputError) as exc:
        check_feeds(bert, feeds)
    msg = str(exc.value)
    assert msg.startswith("feeds do not fit bert_like:")
    assert "input 'attention_mask' is missing" in msg and "expects int64, got int32" in msg


def test_check_feeds_rejects_non_mapping(bert):
    with pytest.raises(InputError, match=r"feeds must be a dict \{input name: numpy array\}, got list"):
        check_feeds(bert, [np.zeros(2)])


# ---------------------------------------------------------------------------------------
# load / save
# ---------------------------------------------------------------------------------------

def test_save_and_load_round_trip(tmp_path):
    feeds = {"input_ids": np.arange(6, dtype=np.int64).reshape(2, 3), "file": np.ones(2, np.float16),
             "input:0": np.array([True, False]), "allow_pickle": np.zeros((), np.float32)}
    path = save_feeds(tmp_path / "sub" / "case", feeds)
    assert path == tmp_path / "sub" / "case.npz" and path.exists()
    assert sorted(os.listdir(path.parent)) == ["case.npz"]  # no temporary files left
    loaded = load_feeds(path)
    assert list(loaded) == list(feeds)
    for k in feeds:
        assert loaded[k].dtype == feeds[k].dtype
        np.testing.assert_array_equal(loaded[k], feeds[k])
    assert load_feeds(str(path))["file"].dtype == np.float16
    np.savez(tmp_path / "np.npz", x=np.ones(3))  # files written by numpy load too
    assert load_feeds(tmp_path / "np.npz")["x"].tolist() == [1, 1, 1]


def test_save_feeds_errors(tmp_path):
    with pytest.raises(InputError, match="needs a non-empty dict"):
        save_feeds(tmp_path / "a.npz", {})
    with pytest.raises(InputError, match="input 'x' is an object array"):
        save_feeds(tmp_path / "a.npz", {"x": np.array([{}], dtype=object)})
    with pytest.raises(InputError, match="input names must be non-empty strings"):
        save_feeds(tmp_path / "a.npz", {3: np.ones(2)})


def test_load_feeds_errors_name_the_file(tmp_path):
    missing = tmp_path / "nope.npz"
    with pytest.raises(InputError, match=rf"feeds file not found: {missing}"):
        load_feeds(missing)
    with pytest.raises(InputError, match="is a directory"):
        load_feeds(tmp_path)
    text = tmp_path / "text.npz"
    text.write_text("hello")
    with pytest.raises(InputError, match=rf"cannot read feeds file {text}: not a readable \.npz archive"):
        load_feeds(text)
    empty = tmp_path / "empty.npz"
    empty.write_bytes(b"")
    with pytest.raises(InputError, match=rf"cannot read feeds file {empty}"):
        load_feeds(empty)
    npy = tmp_path / "one.npy"
    np.save(npy, np.ones(3))
    with pytest.raises(InputError, match=r"holds a single array \(\.npy\), but feeds need a name per input"):
        load_feeds(npy)
    pickled = tmp_path / "obj.npz"
    np.savez(pickled, x=np.array([{}], dtype=object))
    with pytest.raises(InputError, match=rf"cannot read feeds file {pickled}"):
        load_feeds(pickled)
    good = save_feeds(tmp_path / "good.npz", {"x": np.ones(1000)})
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(good.read_bytes()[:500])
    with pytest.raises(InputError, match=rf"cannot read feeds file {truncated}"):
        load_feeds(truncated)
    nothing = tmp_path / "nothing.npz"
    np.savez(nothing)
    with pytest.raises(InputError, match="holds no arrays"):
        load_feeds(nothing)
    foreign = tmp_path / "foreign.npz"
    with zipfile.ZipFile(foreign, "w") as zf:
        zf.writestr("notes.txt", "not an array")
    with pytest.raises(InputError, match=r"member 'notes.txt' is not a \.npy array"):
        load_feeds(foreign)


def test_loaded_feeds_checked_against_model(tmp_path, bert):
    path = save_feeds(tmp_path / "f", bert_feeds(bert))
    check_feeds(bert, load_feeds(path))
    assert run_ort(bert, load_feeds(path))["hidden"].shape == (2, 7, 4)


# ---------------------------------------------------------------------------------------
# Named input sets
# ---------------------------------------------------------------------------------------

def test_input_sets_from_specs_differ_only_where_they_say(flt):
    sets = input_sets({"normal": {}, "outlier": {"outliers": {"x": {"count": 1}}}, "seed3": {"seed": 3}},
                      flt, shapes={"x": (2, 4, 4)})
    assert [s.name for s in sets] == ["normal", "outlier", "seed3"]
    normal, outlier, seed3 = sets
    assert normal.seed == 0 and seed3.seed == 3
    assert (normal.feeds["x"] != outlier.feeds["x"]).sum() == 1
    assert not np.array_equal(normal.feeds["x"], seed3.feeds["x"])
    assert "outliers=" in outlier.source and outlier.describe().startswith("outlier: seed=0 from make_feeds(")


def test_input_sets_from_directory_files_arrays_and_feedsets(tmp_path, bert):
    for name, seed in (("b_short", 1), ("a_long", 2)):
        save_feeds(tmp_path / name, bert_feeds(bert, seed=seed))
    (tmp_path / "notes.txt").write_text("ignored")
    sets = input_sets(tmp_path, bert)
    assert [s.name for s in sets] == ["a_long", "b_short"] and sets[0].seed is None
    assert sets[0].source == str(tmp_path / "a_long.npz")
    single = input_sets(tmp_path / "a_long.npz")
    assert [s.name for s in single] == ["a_long"]
    arrays = bert_feeds(bert)
    mixed_sets = input_sets({"file": tmp_path / "b_short.npz", "arrays": arrays, "fs": FeedSet("x", arrays, 9)}, bert)
    assert [(s.name, s.seed) for s in mixed_sets] == [("file", None), ("arrays", None), ("fs", 9)]
    assert [s.name for s in input_sets(mixed_sets)] == ["file", "arrays", "fs"]


def test_input_sets_errors(tmp_path, bert):
    save_feeds(tmp_path / "bad", {"input_ids": np.zeros((2, 3), np.int32)})
    with pytest.raises(InputError, match=rf"input set 'bad' \({tmp_path / 'bad.npz'}\): feeds do not fit bert_like"):
        input_sets(tmp_path, bert)
    with pytest.raises(UsageError, match="input set 'gen' is generated .*pass the model"):
        input_sets({"gen": {"seed": 1}})
    with pytest.raises(InputError, match="input set 'odd': expected make_feeds keyword arguments"):
        input_sets({"odd": {"seed": 1, "colour": "red"}}, bert)
    with pytest.raises(InputError, match="input set name 'a' is used twice"):
        input_sets([FeedSet("a", {}), FeedSet("a", {})])
    (tmp_path / "sub").mkdir()
    with pytest.raises(InputError, match=r"no \.npz files in"):
        input_sets(tmp_path / "sub")
    with pytest.raises(InputError, match="input sets directory not found"):
        input_sets(tmp_path / "missing")
    with pytest.raises(InputError, match="input sets: no sets given"):
        input_sets({})


def test_param_sets_gives_readable_ids(flt):
    params = param_sets({"normal": {}, "outlier": {"outliers": {"x": {"count": 1}}}}, flt, shapes={"x": (1, 2, 4)})
    assert [p.id for p in params] == ["normal", "outlier"]
    assert isinstance(params[0].values[0], dict) and set(params[0].values[0]) == {"x", "scale"}
    as_sets = param_sets({"normal": {}}, flt, shapes={"x": (1, 2, 4)}, as_feedset=True, marks=pytest.mark.gpu)
    assert isinstance(as_sets[0].values[0], FeedSet) and as_sets[0].marks[0].name == "gpu"


@pytest.mark.parametrize(
    "feeds",
    param_sets({"normal": {}, "offset": {"offset": 1000.0, "val_range": {"x": (-0.05, 0.05)}},
                "outlier": {"outliers": {"x": {"count": 1}}}},
               float_model(), shapes={"x": (2, 3, 4)}),
)
def test_parametrized_sets_run_in_onnxruntime(request, feeds):
    assert request.node.callspec.id in ("normal", "offset", "outlier")
    out = run_ort(float_model(), feeds)["y"]
    np.testing.assert_allclose(out, feeds["x"] * feeds["scale"], rtol=1e-6)


# ---------------------------------------------------------------------------------------
# A real export (tests/data, written by tests/data/make_test_models.py), when present
# ---------------------------------------------------------------------------------------

@pytest.mark.skipif(not (REPO / "tests/data/bert_tiny_opset14.onnx").exists(), reason="tests/data/bert_tiny_opset14.onnx not generated")
@settings(max_examples=5, deadline=None, database=None)
@given(seed=st.integers(0, 2**32))
def test_feeds_for_a_torch_export_run_in_onnxruntime(seed):
    path = REPO / "tests/data/bert_tiny_opset14.onnx"
    feeds = make_feeds(path, dims={"batch": 2, "sequence": 8}, val_range={"input_ids": (0, 99), "attention_mask": (0, 1)},
                       seed=seed)
    check_feeds(path, feeds)
    outs = run_ort(onnx.load(path), feeds)
    assert all(np.isfinite(v).all() for v in outs.values())
