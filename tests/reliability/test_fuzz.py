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
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from pytest_trt.cli import SUBCOMMANDS
from pytest_trt.cli import main as cli_main
from pytest_trt.compare import CompareResult, compare_outputs
from pytest_trt.errors import (
    AccuracyError,
    InputError,
    PatternError,
    PrecisionError,
    PytestTrtError,
    UsageError,
)
from pytest_trt.inputs import check_feeds, make_feeds, parse_input_shape, parse_val_range
from pytest_trt.model.load import load_model
from pytest_trt.plan.policy import PrecisionPolicy, parse_rule

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


@fuzz(300)
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
    except PytestTrtError as exc:  # PatternError, UsageError; ModelError for an op without a low-precision form
        message = str(exc)
        assert message.strip(), "empty message"
        # The message quotes the pattern (a rule string "PATTERN=PREC" is stripped around both parts).
        named = pattern if how == "keep_fp32" else pattern.strip()
        if named.strip() and how != "expect_fp32" and "=" not in pattern:
            assert repr(named) in message or named in message, message
        return
    # A pattern that resolved matched at least one node, and the plan says which rule decided each.
    if how == "expect_fp32":
        return
    rule = policy.rules_in_order()[-1]
    matched = plan.match(rule.pattern)
    assert matched
    compute = [n for n in matched if plan.nodes[n].precision is not None]
    assert all(plan.nodes[n].rule == rule.text() and plan.nodes[n].precision == rule.precision for n in compute) \
        or rule.precision != "fp32", [plan.nodes[n] for n in compute]


@fuzz(150)
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
_SCALAR_TOLERANCE = st.one_of(
    st.none(), numbers_, st.booleans(), st.text(max_size=5), st.just([1e-3]), st.just(np.float32(1e-2)),
    st.just(np.float64("nan")), st.just(np.int64(-1)), st.just(complex(1, 1)),
)
# Per-output dicts. No None values: {"y": None} makes compare_outputs pass ANY finite error (a known
# bug, pinned by the strict-xfail rows tolerance-none-in-a-dict-* in test_bad_inputs.py); add
# st.none() to the values once it is fixed.
tolerance = st.one_of(
    _SCALAR_TOLERANCE,
    st.dictionaries(st.one_of(st.sampled_from(_OUT), st.text(max_size=4), st.integers(0, 3)),
                    st.one_of(numbers_, st.text(max_size=3)), max_size=3),
)
# The marker's tolerances also get no non-str keys: TrtCase.tolerances() sorts and joins them
# (TypeError; known bug, pinned by the row marker-tolerance-dict-with-int-key).
marker_tolerance = st.one_of(
    _SCALAR_TOLERANCE,
    st.dictionaries(st.one_of(st.sampled_from(["output", "y"]), st.text(max_size=4)),
                    st.one_of(numbers_, st.text(max_size=3)), max_size=2),
)
float_arrays = arrays(np.float32, st.integers(0, 6), elements=st.floats(width=32, allow_nan=True, allow_infinity=True))
_DTYPES = [np.float16, np.float32, np.float64, np.int32, np.int64, np.uint8, np.bool_]
any_arrays = arrays(st.sampled_from(_DTYPES), st.lists(st.integers(0, 3), max_size=3).map(tuple))
output_value = st.one_of(any_arrays, st.just([1.0, 2.0]), st.just(3.5), st.none(), st.text(max_size=2),
                         st.just(np.array(["a"])), st.just(np.array([None], dtype=object)),
                         st.just(np.array([1 + 1j])))


def _bad_tolerance(value) -> bool:
    """Whether pytest-trt must refuse ``value`` as a tolerance (for the outputs compared)."""
    if value is None:
        return False
    if isinstance(value, dict):
        return any(k not in _OUT for k in value) or any(_bad_tolerance(v) for v in value.values())
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        return True
    # an infinite tolerance switches the check off: refused without no_check=True (issue 28)
    return math.isnan(float(value)) or float(value) < 0 or math.isinf(float(value))


@fuzz(300)
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


@fuzz(200)
@given(actual=st.one_of(st.dictionaries(st.sampled_from(["y", "z", ""]), output_value, max_size=2), output_value),
       expected=st.one_of(st.dictionaries(st.sampled_from(["y", "z", ""]), output_value, max_size=2), output_value),
       names=st.one_of(st.none(), st.sampled_from(["y", ["y", "z"], [], ["y", "y"], ["w"], [3]])),
       equal_nan=st.booleans(), min_cosine=st.one_of(st.none(), numbers_), min_snr_db=st.one_of(st.none(), numbers_))
def test_any_outputs_compare_or_are_a_usage_error(actual, expected, names, equal_nan, min_cosine, min_snr_db):
    """Structure, dtypes, shapes and metric thresholds of whatever a user passes to compare_outputs."""
    try:
        with np.errstate(all="ignore"):
            result = compare_outputs(actual, expected, names=names, equal_nan=equal_nan, min_cosine=min_cosine,
                                     min_snr_db=min_snr_db, details=True)
    except UsageError as exc:
        assert str(exc).strip()
        return
    text = result.message()
    assert isinstance(text, str) and text
    json.dumps(result.to_json())
    for name, oc in result.outputs.items():
        if oc.problem in ("missing", "extra", "shape", "dtype"):
            assert not oc.passed and name in text


# ----------------------------------------------------------------------------- input specs

spec_text = st.one_of(
    st.text(max_size=24),
    st.lists(st.sampled_from(["x", "hidden_states", ":", "[", "]", ",", "-", "1", "0", "64", "1e3", "nan", "inf",
                              " ", "x", "*", "1x3", "+", "9" * 30, "0.5", ""]), max_size=10).map("".join),
    st.lists(st.text(max_size=8), max_size=3),
    st.sampled_from([None, 3, b"x:[1,2]", {"x": 1}]),
)


@fuzz(300)
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


@fuzz(200)
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


@fuzz(150)
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


def _ref(kind: str, n: int):
    """A placeholder for a file of ``cli_world`` (resolved when the test runs)."""
    return st.integers(0, n - 1).map(lambda i: f"@{kind}{i}")


_VALUES = {
    "--keep-fp32": st.one_of(patterns, st.sampled_from(["*/LayerNorm/*", "op:Pow"])),
    "--precision": st.one_of(patterns, st.sampled_from(["op:Pow=fp32", "*/LayerNorm/*=fp16", "op:Pow=fp8"])),
    "--backend": st.sampled_from(["emulate", "auto", "tensorrt", "trt", ""]),
    "--typing": st.sampled_from(["auto", "strong", "weak", "strongly"]),
    "--cache-dir": _ref("DIR", 3),
    "--load-inputs": _ref("NPZ", 4),
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
    "--export-onnx": _ref("OUT", 2),
    "--baseline": st.sampled_from(["fp32", "as-written", "bogus"]),
    "--status": st.sampled_from(["ok", "mismatch", "bogus"]),
    "--expect": st.sampled_from(["*/LayerNorm/*=fp32", "op:Pow=fp16", "nothing=fp32", "x"]),
}
_SWITCHES = ["--fp16", "--bf16", "--as-is", "--json", "--rebuild", "--allow-unverifiable"]
_FLAG = st.one_of(
    st.sampled_from(_SWITCHES).map(lambda s: [s]),
    st.sampled_from(sorted(_VALUES)).flatmap(lambda f: _VALUES[f].map(lambda v: [f, v])),
)
_NOISE = st.one_of(  # what makes argparse refuse the line
    st.sampled_from(["--bogus", "-h", "--help"]).map(lambda s: [s]),
    st.sampled_from(sorted(_VALUES)).map(lambda f: [f]),  # a flag without its value
    st.text(max_size=6).map(lambda t: [t]),
)
#: Mostly well-formed command lines (so the commands really run), some with argparse noise.
ARGV = st.tuples(
    st.sampled_from([*SUBCOMMANDS, "bogus"]),
    _ref("MODEL", 6),
    st.lists(_FLAG, max_size=4),
    st.one_of(st.just([]), st.just([]), st.lists(_NOISE, min_size=1, max_size=2)),
).map(lambda t: [t[0], t[1], *[x for pair in t[2] + t[3] for x in pair]])


@pytest.mark.filterwarnings("ignore::pytest_trt.errors.CacheWarning")
@fuzz(150)
@given(argv=ARGV)
def test_any_cli_argv_exits_0_1_or_2_with_a_message(cli_world, monkeypatch, argv):
    monkeypatch.chdir(cli_world["root"])
    monkeypatch.setenv("PYTEST_TRT_CACHE_DIR", str(cli_world["root"] / "default-cache"))
    argv = [cli_world[a[1:-1]][int(a[-1])] if a.startswith("@") and a[-1:].isdigit() else a for a in argv]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = cli_main(argv)
        except SystemExit as exc:  # argparse: --help exits 0, usage errors exit 2
            rc = exc.code
        except (PytestTrtError, AccuracyError, PrecisionError) as exc:  # main() must turn these into exits
            pytest.fail(f"{argv}: main() let {type(exc).__name__} escape: {exc}")
    event(f"{argv[0]} exit {rc}")
    assert rc in (0, 1, 2), f"{argv}: exit {rc!r}\n{err.getvalue()}"
    if rc == 2:
        assert err.getvalue().strip(), f"{argv}: exit 2 without a message"
        assert "Traceback" not in err.getvalue()


# ----------------------------------------------------------------------------- @pytest.mark.trt keywords


class _Item:
    """Just enough of a pytest item for TrtCase: a nodeid, a path, the trt markers."""

    def __init__(self, path: Path, args: tuple, kwargs: dict):
        self.nodeid = "test_fuzzed.py::test_fuzzed"
        self.path = path / "test_fuzzed.py"
        self._mark = pytest.mark.trt(*args, **kwargs).mark

    def iter_markers(self, name):
        return iter([self._mark]) if name == "trt" else iter(())


@pytest.fixture(scope="module")
def marker_world(tmp_path_factory, models):
    from pytest_trt.run.session import TrtSession
    from pytest_trt.run.settings import Settings

    root = tmp_path_factory.mktemp("marker-fuzz")
    np.savez(root / "feeds.npz", **make_feeds(load_model(models.layernorm)))
    session = TrtSession.create(Settings(backend="emulate", cache_dir=root / "cache",
                                         sources={"trt_cache_dir": "--trt-cache-dir"}))
    return {"root": root, "session": session,
            "models": [str(models.layernorm), str(models.nan), str(models.garbage), str(ENCODER), "missing.onnx",
                       str(models.custom), str(models.ids)]}


_ITERABLE = st.one_of(st.none(), patterns, st.lists(patterns, max_size=2), st.tuples(patterns))
#: Values per keyword. keep_fp32, rules, expect_fp32, inputs and requires only get None, strings
#: and iterables here, and seed no None or non-numeric string: those are known bugs (an internal
#: TypeError/ValueError), pinned by the strict-xfail rows "marker-*" in test_bad_inputs.py; widen
#: these strategies once they are fixed.
_MARKER_VALUES = {
    "precision": st.sampled_from(["fp32", "fp16", "bf16", "FP16", "half", "fp8", None, 16]),
    "keep_fp32": _ITERABLE,
    "rules": st.one_of(_ITERABLE, st.dictionaries(patterns, st.sampled_from(["fp32", "fp16", "x"]), max_size=2)),
    "expect_fp32": _ITERABLE,
    "atol": marker_tolerance,
    "rtol": marker_tolerance,
    "shapes": st.one_of(st.none(), st.dictionaries(names, shape_value, max_size=2), shape_value),
    "dims": st.one_of(st.none(), st.dictionaries(names, small_dim, max_size=3)),
    "val_range": st.one_of(st.none(), st.dictionaries(names, range_value, max_size=2), st.text(max_size=8)),
    # (seed=None or a non-numeric string: known bug, rows marker-seed-* in test_bad_inputs.py)
    "seed": st.one_of(st.integers(-2, 2**70), st.sampled_from([1.5, "0", True, 2.0**80])),
    "inputs": st.one_of(st.none(), st.sampled_from(["feeds.npz", "missing.npz", "", "."]),
                        st.dictionaries(names, st.one_of(any_arrays, st.none()), max_size=1)),
    "typing": st.sampled_from(["auto", "strong", "weak", "strongly", None, 3]),
    "as_is": st.one_of(st.booleans(), st.none(), st.just("yes")),
    "baseline": st.sampled_from(["fp32", "as-written", "as_written", "bogus", None]),
    "requires": st.sampled_from([None, "emulate", "tensorrt", ["emulate", "tensorrt"], "bogus", ""]),
    "tf32": st.sampled_from([None, True, False, "yes"]),
    "locate_on_failure": st.sampled_from([None, True, False]),
    "profile": st.one_of(st.none(), st.just(5), st.dictionaries(names, st.one_of(shape_value, st.dictionaries(
        st.sampled_from(["min", "opt", "max", "mid"]), shape_value, max_size=3)), max_size=1)),
    "policy": st.sampled_from([None, "fp16"]),
    "atoll": st.just(1e-3),  # unknown keyword
}


@pytest.mark.filterwarnings("ignore::pytest_trt.errors.CacheWarning")
@fuzz(200)
@given(data=st.data())
def test_any_marker_arguments_give_a_verdict_a_skip_or_a_clear_error(marker_world, data):
    """``@pytest.mark.trt(...)`` with fuzzed keywords, then ``trt.check()`` (what a test body does)."""
    from pytest_trt.glue.case import TrtCase

    good, *others = marker_world["models"]
    model = data.draw(st.sampled_from([good] * 6 + others), label="model")  # mostly a model that runs
    common = sorted(set(_MARKER_VALUES) - {"atoll", "policy"})
    focus = data.draw(st.sampled_from(common), label="focus")  # one keyword fuzzed in every example
    keys = [focus, *data.draw(st.lists(st.sampled_from(common), max_size=2, unique=True), label="keys")]
    keys = list(dict.fromkeys(keys))
    keys += data.draw(st.sampled_from([[]] * 8 + [["atoll"], ["policy"]]), label="rare keys")
    kwargs = {"model": model, **{k: data.draw(_MARKER_VALUES[k], label=k) for k in keys}}
    args = data.draw(st.sampled_from([()] * 8 + [(model,)]), label="args")
    item = _Item(marker_world["root"], args, kwargs)
    try:
        with np.errstate(all="ignore"):
            case = TrtCase(marker_world["session"], item)
            case.check()
        event("passed")
    except (AccuracyError, PrecisionError) as exc:
        event(type(exc).__name__)
        assert str(exc).strip()
    except PytestTrtError as exc:
        event(type(exc).__name__)
        assert str(exc).strip()
    except pytest.skip.Exception as exc:
        event("skipped")
        assert str(exc).strip()
