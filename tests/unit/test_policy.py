"""PrecisionPolicy, Rule and pattern syntax (no model needed except for resolve)."""

from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_trt.errors import PatternError, UsageError
from pytest_trt.plan.policy import PrecisionPolicy, Rule, parse_rule, validate_pattern


def node(name: str, op_type: str = "Add"):
    return SimpleNamespace(name=name, op_type=op_type)


LN_POW = node("/encoder/layer.0/attention/output/LayerNorm/Pow", "Pow")
DENSE = node("/encoder/layer.0/attention/output/dense/MatMul", "MatMul")


# -- Rule.matches -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("pattern", "target", "expected"),
    [
        ("*/LayerNorm/*", LN_POW, True),
        ("*/LayerNorm/*", DENSE, False),
        ("/encoder/layer.0/*", DENSE, True),
        ("/encoder/layer.1/*", DENSE, False),
        ("*/layernorm/*", LN_POW, False),  # case-sensitive
        ("*LayerNorm/Po?", LN_POW, True),
        ("*/LayerNorm/[PQ]ow", LN_POW, True),
        ("LayerNorm", LN_POW, False),  # globs match the whole name, not a substring
        ("/encoder/layer.0/attention/output/LayerNorm/Pow", LN_POW, True),  # exact name
        ("op:Pow", LN_POW, True),
        ("op:MatMul", LN_POW, False),
        ("op:pow", LN_POW, False),  # op types are exact
        ("op:Po", LN_POW, False),
    ],
)
def test_rule_matches(pattern, target, expected):
    assert Rule(pattern, "fp32").matches(target) is expected


def test_rule_op_type_and_text():
    assert Rule("op:Softmax", "FP32").op_type == "Softmax"
    assert Rule("*/x/*", "half").op_type is None
    assert Rule("*/x/*", "half").text() == "*/x/*=fp16"
    assert str(Rule("op:Softmax", "bfloat16")) == "op:Softmax=bf16"


def test_rule_is_frozen_and_source_not_part_of_identity():
    rule = Rule("op:Softmax", "fp32", source="cli")
    with pytest.raises(AttributeError):
        rule.precision = "fp16"
    assert rule == Rule("op:Softmax", "fp32", source="keep_fp32")
    assert len({rule, Rule("op:Softmax", "fp32")}) == 1


def test_rule_rejects_unknown_precision():
    with pytest.raises(UsageError, match="int8"):
        Rule("op:Softmax", "int8")


# -- validate_pattern -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("", "empty precision pattern"),
        ("   ", "empty precision pattern"),
        ("op:", "names no op type"),
        ("op:Soft*", "not a glob"),
        ("op:Layer Norm", "is not an ONNX op type"),
        (" */LayerNorm/*", "whitespace"),
        ("*/LayerNorm/*=fp32", "looks like a rule"),
        (None, "must be a string"),
    ],
)
def test_validate_pattern_errors(pattern, message):
    with pytest.raises(PatternError, match=message):
        validate_pattern(pattern)


def test_validate_pattern_accepts_and_returns():
    for pattern in ("*", "*/LayerNorm/*", "op:LayerNormalization", "/a/b", "op:_Custom1", "x=y"):
        assert validate_pattern(pattern) == pattern


def test_invalid_patterns_fail_when_the_policy_is_made():
    with pytest.raises(PatternError, match="op:"):
        PrecisionPolicy("fp16", keep_fp32=["op:"])
    with pytest.raises(PatternError, match="empty"):
        PrecisionPolicy("fp16", rules=[("", "fp32")])


# -- parse_rule ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "pattern", "precision"),
    [
        ("*/LayerNorm/*=fp32", "*/LayerNorm/*", "fp32"),
        ("  op:Softmax = FP16 ", "op:Softmax", "fp16"),
        ("op:Softmax=bfloat16", "op:Softmax", "bf16"),
        ("/a=b/c=fp32", "/a=b/c", "fp32"),  # the last '=' separates
    ],
)
def test_parse_rule(text, pattern, precision):
    rule = parse_rule(text, source="ini")
    assert (rule.pattern, rule.precision, rule.source) == (pattern, precision, "ini")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("*/LayerNorm/*", "write PATTERN=PRECISION"),
        ("*/LayerNorm/*=", "no precision"),
        ("=fp32", "empty precision pattern"),
        ("*/LayerNorm/*=int8", "unknown rule precision 'int8'"),
    ],
)
def test_parse_rule_errors(text, message):
    with pytest.raises(PatternError, match=message) as info:
        parse_rule(text)
    assert text.strip() in str(info.value) or message in str(info.value)


# -- PrecisionPolicy ----------------------------------------------------------------------
def test_policy_normalizes_inputs():
    policy = PrecisionPolicy(
        "HALF",
        keep_fp32="*/LayerNorm/*",  # one string is one pattern
        rules=[Rule("op:Softmax", "fp32"), ("op:Gelu", "float32"), "*/LayerNorm/Add_1=f16"],
        expect_fp32=["op:Softmax"],
    )
    assert policy.default == "fp16"
    assert policy.keep_fp32 == ("*/LayerNorm/*",)
    assert [r.text() for r in policy.rules] == ["op:Softmax=fp32", "op:Gelu=fp32", "*/LayerNorm/Add_1=fp16"]
    assert policy.expect_fp32 == ("op:Softmax",)
    assert PrecisionPolicy(rules={"op:Softmax": "fp32"}).rules == (Rule("op:Softmax", "fp32"),)


def test_policy_rejects_bad_rule_items():
    with pytest.raises(UsageError, match="cannot use 42"):
        PrecisionPolicy(rules=[42])
    with pytest.raises(UsageError, match="keep_fp32"):
        PrecisionPolicy(keep_fp32=3)


def test_rules_in_order_keep_first_then_rules():
    policy = PrecisionPolicy("fp16", keep_fp32=["*/LayerNorm/*", "op:Softmax"], rules=["*/LayerNorm/Add_1=fp16"])
    ordered = policy.rules_in_order()
    assert [r.text() for r in ordered] == ["*/LayerNorm/*=fp32", "op:Softmax=fp32", "*/LayerNorm/Add_1=fp16"]
    assert [r.source for r in ordered] == ["keep_fp32", "keep_fp32", "api"]


def test_describe():
    assert PrecisionPolicy().describe() == "fp32"
    assert PrecisionPolicy("fp16", keep_fp32=["*/LayerNorm/*", "op:Softmax"]).describe() == \
        "fp16; fp32: */LayerNorm/*, op:Softmax"
    mixed = PrecisionPolicy("fp16", keep_fp32=["*/LayerNorm/*"], rules=["*/LayerNorm/Add_1=fp16", "op:Softmax=fp32"])
    assert mixed.describe() == "fp16; fp32: */LayerNorm/*; fp16: */LayerNorm/Add_1; fp32: op:Softmax"
    assert str(mixed) == mixed.describe()
    assert "expect fp32: op:Softmax" in PrecisionPolicy(expect_fp32=["op:Softmax"]).describe()


def test_to_json_is_canonical():
    a = PrecisionPolicy("fp16", keep_fp32=["*/LayerNorm/*"])
    b = PrecisionPolicy("float16", rules=[("*/LayerNorm/*", "fp32")])
    assert a.to_json() == b.to_json()
    assert a.to_json() == {
        "default": "fp16",
        "rules": [{"pattern": "*/LayerNorm/*", "precision": "fp32"}],
        "as_is": False,
        "expect_fp32": [],
    }
    json.dumps(a.to_json())
    assert PrecisionPolicy.from_json(a.to_json()).to_json() == a.to_json()


def test_with_default_and_with_rules():
    base = PrecisionPolicy(keep_fp32=["op:Softmax"])
    fp16 = base.with_default("fp16")
    assert (fp16.default, fp16.keep_fp32) == ("fp16", ("op:Softmax",))
    assert base.default == "fp32"  # frozen: a new object
    more = fp16.with_rules(["op:Softmax=fp16"])
    assert more.rules_in_order()[-1] == Rule("op:Softmax", "fp16")


def test_policy_is_frozen_and_hashable():
    policy = PrecisionPolicy("fp16", keep_fp32=["op:Softmax"])
    with pytest.raises(AttributeError):
        policy.default = "fp32"
    assert {policy: 1}[PrecisionPolicy("fp16", keep_fp32=("op:Softmax",))] == 1


def test_low_precision_and_mixing_is_refused():
    assert PrecisionPolicy().low_precision is None
    assert PrecisionPolicy(rules=["op:MatMul=bf16"]).low_precision == "bf16"
    with pytest.raises(UsageError, match="mixes bf16 and fp16"):
        PrecisionPolicy("fp16", rules=["op:MatMul=bf16"])
    with pytest.raises(UsageError, match="mixes"):
        PrecisionPolicy(rules=["op:MatMul=fp16"]).with_default("bf16")


def test_as_is_is_stored_and_resolved_from_the_model():
    from pytest_trt.model.testing_models import layernorm17_block

    policy = PrecisionPolicy(as_is=True, expect_fp32=["op:LayerNormalization"])
    assert policy.to_json()["as_is"] is True
    assert policy.to_json()["expect_fp32"] == ["op:LayerNormalization"]
    assert policy.describe().startswith("as-is")
    plan = policy.resolve(layernorm17_block())  # issue 12: read from the model (details: test_as_is.py)
    assert plan.as_is and plan.expectation_failures == []


def test_policy_module_imports_no_onnx():
    code = "import sys, pytest_trt.plan.policy; print('onnx' in sys.modules, 'numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


_patterns = st.one_of(
    st.sampled_from(["*/LayerNorm/*", "op:Softmax", "op:MatMul", "/encoder/*", "*Add_1", "*"]),
    st.from_regex(r"\A[*/a-z0-9._]{1,12}\Z"),
)


@settings(max_examples=60, deadline=None)
@given(
    default=st.sampled_from(["fp32", "fp16"]),
    keep=st.lists(_patterns, max_size=3),
    rules=st.lists(st.tuples(_patterns, st.sampled_from(["fp32", "fp16"])), max_size=4),
)
def test_json_round_trip_and_describe_keep_rule_order(default, keep, rules):
    policy = PrecisionPolicy(default, keep_fp32=keep, rules=rules)
    data = policy.to_json()
    assert PrecisionPolicy.from_json(json.loads(json.dumps(data))).to_json() == data
    ordered = [r.pattern for r in policy.rules_in_order()]
    assert ordered == list(keep) + [p for p, _ in rules]
    groups = policy.describe().split("; ")[1:]
    assert [p for g in groups for p in g.split(": ", 1)[1].split(", ")] == ordered
