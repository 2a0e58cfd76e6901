"""Hypothesis fuzzing of everything users type: patterns, tolerances, input specs, CLI argv.

The property is the same everywhere: pytest-trt answers with a result or with one of its
own errors (``PytestTrtError`` subclasses for usage and input errors, ``AccuracyError`` for
real mismatches, ``SystemExit(2)`` from argparse), never with an internal exception
(``KeyError``, ``TypeError``, ``IndexError``, numpy or onnx errors, ...), and its messages
are non-empty and name what was wrong. Each property has a bounded ``max_examples`` so the
file stays well under 20 s on 2 cores.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import numbers
import string
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from pytest_trt.cli import SUBCOMMANDS
from pytest_trt.cli import main as cli_main
from pytest_trt.compare import CompareResult, compare_outputs
from pytest_trt.errors import AccuracyError, InputError, PatternError, PrecisionError, PytestTrtError, UsageError
from pytest_trt.inputs import check_feeds, make_feeds, parse_input_shape, parse_val_range
from pytest_trt.model import load_model
from pytest_trt.policy import PrecisionPolicy, parse_rule

REPO = Path(__file__).resolve().parents[2]
ENCODER = REPO / "example_suite" / "models" / "encoder_opset14.onnx"

_BASE = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def fuzz(max_examples: int) -> settings:
    return settings(_BASE, max_examples=max_examples)


@pytest.fixture(scope="module")
def layernorm(models):
    return load_model(models.layernorm)


@pytest.fixture(scope="module")
def encoder():
    return load_model(ENCODER)


# ----------------------------------------------------------------------------- patterns

_NAME_BITS = ["*", "?", "[", "]", "!", "/", "op:", "=", " ", "\t", "\\", ".", "-", "_", "fp32", "fp16", "bf16",
              "LayerNorm", "ReduceMean", "Pow", "encoder", "layer.0", "attention", "output", "Softmax", "MatMul",
              "Sqrt", "é", "\x00", "**", "[!a-z]", "[]"]
patterns = st.one_of(
    st.lists(st.sampled_from(_NAME_BITS), min_size=0, max_size=6).map("".join),
    st.text(max_size=12),
    st.sampled_from(["*/LayerNorm/*", "op:Pow", "op:Softmax", "*", "op:", "op:*", "=fp32", "x=", "[", "op:Pow=fp32"]),
)


@fuzz(150)
@given(pattern=patterns, how=st.sampled_from(["keep_fp32", "rule-fp32", "rule-fp16", "expect_fp32"]))
def test_any_pattern_resolves_or_is_a_pattern_or_usage_error(layernorm, pattern, how):
    try:
        if how == "keep_fp32":
            policy = PrecisionPolicy("fp16", keep_fp32=[pattern])
        elif how == "expect_fp32":
            policy = PrecisionPolicy("fp16", expect_fp32=[pattern])
        else:
            policy = PrecisionPolicy("fp16", rules=[f"{pattern}={how.split('-')[1]}"])
        plan = policy.resolve(layernorm)
    except (PatternError, UsageError) as exc:
        message = str(exc)
        assert message.strip(), "empty message"
        if pattern.strip() and how != "expect_fp32" and "=" not in pattern:
            assert repr(pattern) in message or pattern in message, message
        return
    # A pattern that resolved matched at least one node, and the plan says which rule decided each.
    matched = plan.match(pattern.rpartition("=")[0] if how.startswith("rule") and "=" in pattern else pattern) \
        if how != "expect_fp32" else None
    if how == "keep_fp32":
        assert matched
        compute = [n for n in matched if plan.nodes[n].precision is not None]
        assert all(plan.nodes[n].precision == "fp32" and plan.nodes[n].rule == f"{pattern}=fp32" for n in compute)


@fuzz(60)
@given(text=st.one_of(st.text(max_size=16), st.lists(st.sampled_from(_NAME_BITS), max_size=5).map("".join)))
def test_any_rule_string_parses_or_is_a_pattern_error(text):
    try:
        rule = parse_rule(text)
    except PatternError as exc:
        assert str(exc).strip()
        return
    assert rule.precision in ("fp32", "fp16", "bf16")
    assert rule.text().endswith("=" + rule.precision)


# ----------------------------------------------------------------------------- tolerances

_OUT = ["y", "z"]
numbers_ = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-10**30, max_value=10**30),
    st.sampled_from([0, 0.0, -0.0, 1e-3, -1e-3, float("nan"), float("inf"), -float("inf"), 1e308, 5e-324]),
)
tolerance = st.one_of(
    st.none(), numbers_, st.booleans(), st.text(max_size=5), st.just([1e-3]), st.just(np.float32(1e-2)),
    st.just(np.float64("nan")), st.just(np.int64(-1)), st.just(complex(1, 1)),
    st.dictionaries(st.one_of(st.sampled_from(_OUT), st.text(max_size=4), st.integers(0, 3)),
                    st.one_of(st.none(), numbers_, st.text(max_size=3)), max_size=3),
)
float_arrays = arrays(np.float32, st.integers(0, 6), elements=st.floats(width=32, allow_nan=True, allow_infinity=True))


def _bad_tolerance(value) -> bool:
    """Whether pytest-trt must refuse ``value`` as a tolerance (for the outputs compared)."""
    if value is None:
        return False
    if isinstance(value, dict):
        return any(k not in _OUT for k in value) or any(_bad_tolerance(v) for v in value.values())
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        return True
    return math.isnan(float(value)) or float(value) < 0


@fuzz(200)
@given(rtol=tolerance, atol=tolerance, y=float_arrays, noise=st.floats(-1e3, 1e3, width=32),
       precision=st.sampled_from(["fp32", "fp16", "bf16"]), details=st.booleans())
def test_any_tolerance_spec_gives_a_result_or_a_usage_error(rtol, atol, y, noise, precision, details):
    actual = {"y": y + np.float32(noise), "z": np.arange(3)}
    expected = {"y": y, "z": np.arange(3)}
    try:
        result = compare_outputs(actual, expected, rtol=rtol, atol=atol, precision=precision, details=details)
    except UsageError as exc:
        assert _bad_tolerance(rtol) or _bad_tolerance(atol), f"refused good tolerances {rtol!r}, {atol!r}: {exc}"
        assert ("rtol" in str(exc)) or ("atol" in str(exc)), str(exc)
        return
    assert not (_bad_tolerance(rtol) or _bad_tolerance(atol)), f"accepted bad tolerances {rtol!r}, {atol!r}"
    assert isinstance(result, CompareResult)
    # NaN anywhere never passes; the figures render and serialize whatever the data.
    if np.isnan(actual["y"]).any() or np.isnan(y).any():
        assert not result.passed
    text = result.message()
    assert isinstance(text, str) and text
    json.dumps(result.to_json())
    if not result.passed:
        with pytest.raises(AccuracyError):
            from pytest_trt.compare import assert_close

            assert_close(actual, expected, rtol=rtol, atol=atol, precision=precision)


# ----------------------------------------------------------------------------- input specs

spec_text = st.one_of(
    st.text(max_size=24),
    st.lists(st.sampled_from(["x", "hidden_states", ":", "[", "]", ",", "-", "1", "0", "64", "1e3", "nan", "inf",
                              " ", "x", "*", "1x3", "+", "9" * 30, "0.5", ""]), max_size=10).map("".join),
    st.lists(st.text(max_size=8), max_size=3),
    st.sampled_from([None, 3, b"x:[1,2]", {"x": 1}]),
)


@fuzz(150)
@given(text=spec_text, which=st.sampled_from(["val_range", "input_shape"]))
def test_any_option_string_parses_or_is_a_usage_or_input_error(text, which):
    try:
        parsed = parse_val_range(text) if which == "val_range" else parse_input_shape(text)
    except (UsageError, InputError) as exc:
        assert str(exc).strip()
        return
    assert isinstance(parsed, dict) and parsed
    for name, value in parsed.items():
        assert isinstance(name, str)
        if which == "input_shape":
            assert all(isinstance(d, int) and d >= 0 for d in value)
        else:
            lo, hi = value
            assert lo <= hi and math.isfinite(lo) and math.isfinite(hi)


small_dim = st.one_of(st.integers(0, 6), st.sampled_from([-1, 2**40, 1.5, "4", None, True]))
names = st.sampled_from(["hidden_states", "batch", "sequence", "x", "", "*"])
shape_value = st.one_of(st.lists(small_dim, max_size=4).map(tuple), small_dim, st.text(max_size=3))
range_value = st.one_of(st.tuples(numbers_, numbers_), st.lists(numbers_, max_size=3), numbers_, st.text(max_size=3))


@fuzz(120)
@given(shapes=st.one_of(st.none(), st.dictionaries(names, shape_value, max_size=2)),
       dims=st.one_of(st.none(), st.dictionaries(names, small_dim, max_size=3), st.just([("batch", 1)])),
       val_range=st.one_of(st.none(), st.dictionaries(names, range_value, max_size=2), st.text(max_size=8)),
       seed=st.one_of(st.integers(-2, 2**70), st.sampled_from([None, 1.5, "0", True])),
       outliers=st.one_of(st.none(), st.booleans(), st.dictionaries(names, st.dictionaries(
           st.sampled_from(["count", "fraction", "magnitude", "sign", "bogus"]),
           st.one_of(numbers_, st.sampled_from(["+", "-", "random", "?"])), max_size=2), max_size=1)))
def test_any_input_spec_gives_checkable_feeds_or_an_input_or_usage_error(encoder, shapes, dims, val_range, seed,
                                                                          outliers):
    try:
        feeds = make_feeds(encoder, shapes=shapes, dims=dims, val_range=val_range, seed=seed, outliers=outliers)
    except (InputError, UsageError) as exc:
        assert str(exc).strip()
        return
    # What make_feeds produces, check_feeds accepts; values are finite and inside the declared range or outliers.
    check_feeds(encoder, feeds)
    x = feeds["hidden_states"]
    assert x.dtype == np.float32 and x.ndim == 3 and x.shape[2] == 64 and np.isfinite(x).all()


@fuzz(80)
@given(feeds=st.one_of(
    st.dictionaries(st.sampled_from(["hidden_states", "hidden", "", "x"]),
                    st.one_of(arrays(st.sampled_from([np.float32, np.float64, np.int64, np.float16, np.bool_]),
                                     st.lists(st.integers(0, 5), min_size=0, max_size=4).map(tuple)),
                              st.just([1.0, 2.0]), st.none(), st.text(max_size=2)), max_size=2),
    st.sampled_from([None, [], "feeds", 3])))
def test_any_feed_dict_is_accepted_or_an_input_error(encoder, feeds):
    try:
        check_feeds(encoder, feeds)
    except InputError as exc:
        assert str(exc).strip()
        return
    x = feeds["hidden_states"]
    assert x.dtype == np.float32 and x.ndim == 3 and x.shape[2] == 64 and np.isfinite(x).all()


# ----------------------------------------------------------------------------- CLI argv


@pytest.fixture(scope="module")
def cli_world(tmp_path_factory, models):
    """Files the fuzzed argv may name: models (good, bad, missing), feed files, cache dirs, outputs."""
    d = tmp_path_factory.mktemp("cli-fuzz")
    good = make_feeds(load_model(models.layernorm))
    np.savez(d / "good.npz", **good)
    bad = {"hidden_states": np.full((1, 8, 64), np.nan, np.float32)}
    np.savez(d / "nan.npz", **bad)
    (d / "not-a-dir").write_text("a file where a cache directory should be")
    return {
        "MODEL": [str(models.layernorm), str(models.garbage), str(d / "missing.onnx"), str(models.nan),
                  str(models.custom), str(models.ids)],
        "NPZ": [str(d / "good.npz"), str(d / "nan.npz"), str(models.garbage), str(d / "missing.npz")],
        "DIR": [str(d / "cache"), str(d / "not-a-dir"), str(d / "cache2")],
        "OUT": [str(d / "exported.onnx"), str(d / "no-such-dir" / "x.onnx")],
        "root": d,
    }


def _argv(world):
    values = {
        "--keep-fp32": st.one_of(patterns, st.sampled_from(["*/LayerNorm/*", "op:Pow"])),
        "--precision": st.one_of(patterns, st.sampled_from(["op:Pow=fp32", "*/LayerNorm/*=fp16", "op:Pow=fp8"])),
        "--backend": st.sampled_from(["emulate", "auto", "tensorrt", "trt", ""]),
        "--typing": st.sampled_from(["auto", "strong", "weak", "strongly"]),
        "--cache-dir": st.sampled_from(world["DIR"]),
        "--load-inputs": st.sampled_from(world["NPZ"]),
        "--val-range": st.one_of(spec_text.filter(lambda t: isinstance(t, str)),
                                 st.sampled_from(["hidden_states:[-1,1]", "[-400,400]", "x:[-1,1]", "ids:[0,3]"])),
        "--input-shapes": st.one_of(st.text(max_size=10), st.sampled_from(["hidden_states:[1,8,64]", "x:[2,8]"])),
        "--seed": st.one_of(st.integers(-3, 2**65).map(str), st.text(max_size=3)),
        "--atol": st.one_of(numbers_.map(str), st.text(max_size=4)),
        "--rtol": st.one_of(numbers_.map(str), st.text(max_size=4)),
        "--max-builds": st.one_of(st.integers(-1, 3).map(str), st.text(max_size=2)),
        "--threshold": st.one_of(numbers_.map(str), st.text(max_size=2)),
        "--jump": st.one_of(numbers_.map(str), st.text(max_size=2)),
        "--top": st.one_of(st.integers(-2, 5).map(str), st.text(max_size=2)),
        "--export-onnx": st.sampled_from(world["OUT"]),
        "--baseline": st.sampled_from(["fp32", "as-written", "bogus"]),
        "--status": st.sampled_from(["ok", "mismatch", "bogus"]),
        "--expect": st.sampled_from(["*/LayerNorm/*=fp32", "op:Pow=fp16", "nothing=fp32", "x"]),
    }
    switches = ["--fp16", "--bf16", "--as-is", "--json", "--rebuild", "--allow-unverifiable", "--bogus", "-h"]
    item = st.one_of(
        st.sampled_from(switches).map(lambda s: [s]),
        st.sampled_from(sorted(values)).flatmap(lambda f: values[f].map(lambda v: [f, v])),
        st.sampled_from(sorted(values)).map(lambda f: [f]),  # flag without its value
        st.text(max_size=6).map(lambda t: [t]),
    )
    command = st.sampled_from([*SUBCOMMANDS, "bogus", "--version", ""])
    return st.tuples(command, st.sampled_from(world["MODEL"]), st.lists(item, max_size=5)).map(
        lambda t: [t[0], t[1], *[x for pair in t[2] for x in pair]])


@pytest.mark.filterwarnings("ignore::pytest_trt.errors.CacheWarning")
def test_any_cli_argv_exits_0_1_or_2_with_a_message(cli_world, monkeypatch):
    monkeypatch.chdir(cli_world["root"])
    monkeypatch.setenv("PYTEST_TRT_CACHE_DIR", str(cli_world["root"] / "default-cache"))

    @fuzz(60)
    @given(argv=_argv(cli_world))
    def run(argv):
        assume(argv[0] != "--version" or len(argv) >= 1)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = cli_main(argv)
            except SystemExit as exc:  # argparse: --help/--version exit 0, usage errors exit 2
                rc = exc.code
            except (PytestTrtError, AccuracyError, PrecisionError) as exc:  # main() must turn these into exits
                pytest.fail(f"{argv}: main() let {type(exc).__name__} escape: {exc}")
        event(f"{argv[0]} exit {rc}")
        assert rc in (0, 1, 2), f"{argv}: exit {rc!r}\n{err.getvalue()}"
        if rc == 2:
            assert err.getvalue().strip(), f"{argv}: exit 2 without a message"
            assert "Traceback" not in err.getvalue()

    run()
