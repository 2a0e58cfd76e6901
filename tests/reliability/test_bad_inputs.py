"""Bad inputs, table-driven: every row states the EXACT error a user gets (class + message fragments).

Three surfaces, one table of causes:

* ``API_ROWS``: the public Python API (``load_model``, ``PrecisionPolicy.resolve``, ``make_feeds``,
  ``check_feeds``, ``compare_outputs``, backends, ...). The class must be exactly the one
  listed (not a subclass, never a bare ``ValueError``/``KeyError``/onnx or ONNX Runtime type).
* ``CLI_ROWS``: ``pytest-trt plan/compare`` (exit 2 for usage and input errors, 1 for accuracy
  failures, a one-paragraph message on stderr and no traceback); run in-process through
  ``pytest_trt.cli.main``, plus two real console-script runs.
* ``PYTEST_ROWS``: one inner pytest session with one test per row; the failure text the user
  sees contains the message and no internal frames (``pytest_trt/...``) or tracebacks.

Rows a bug breaks are ``xfail(strict=True, reason="BUG: ...")``: they start passing (and
so fail the suite) when the bug is fixed, and the marker goes.
"""

from __future__ import annotations

import math
import re
import shutil
import subprocess
import sys
import textwrap
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_trt.backends.base import BuildConfig, get_backend, select_backend
from pytest_trt.cli import main as cli_main
from pytest_trt.compare import assert_close, compare_outputs
from pytest_trt.errors import (
    AccuracyError,
    BackendUnavailable,
    InputError,
    ModelError,
    PatternError,
    PytestTrtError,
    UsageError,
)
from pytest_trt.glue.case import marker_kwargs
from pytest_trt.inputs import check_feeds, load_feeds, make_feeds, parse_input_shape, parse_val_range
from pytest_trt.model.load import load_model
from pytest_trt.plan.policy import PrecisionPolicy, parse_rule
from pytest_trt.reference.baseline import fp32_baseline
from pytest_trt.suggest import suggest_fp32_islands

REPO = Path(__file__).resolve().parents[2]
ENCODER = REPO / "example_suite" / "models" / "encoder_opset14.onnx"
DIMS = {"batch": 1, "sequence": 4}
X = "hidden_states"


def _feeds(value=0.0, shape=(1, 4, 64), dtype=np.float32, name=X):
    return {name: np.full(shape, value, dtype=dtype)}


def _nan_feeds():
    f = _feeds()
    f[X][0, 1, 2] = np.nan
    return f


def _inf_feeds():
    f = _feeds()
    f[X][0, 0, 0] = -np.inf
    return f


def _emulated_run(path, policy: PrecisionPolicy, feeds):
    plan = policy.resolve(load_model(path))
    return get_backend("emulate").build(plan, BuildConfig(), None).run(feeds)


def _compare_model_with_itself(path, feeds):
    """The emulate engine (FP32 plan) against the FP32 baseline: what trt.check() compares."""
    model = load_model(path)
    actual = _emulated_run(path, PrecisionPolicy("fp32"), feeds)
    return assert_close(actual, fp32_baseline(model, feeds), rtol=1e-2, atol=1e-2)


class _Node:
    """Just enough of a pytest item for marker_kwargs() and TrtCase."""

    nodeid = "test_x.py::test_x"

    def __init__(self, path=None, **kwargs):
        self.path = path
        self._mark = pytest.mark.trt(**kwargs).mark

    def iter_markers(self, name):
        return iter([self._mark]) if name == "trt" else iter(())


_SESSIONS: dict = {}


def _header_bomb_npz(models) -> Path:
    """An .npz whose header declares 10**12 float32 elements over 16 bytes of data (audit F7)."""
    path = models.root / "header_bomb.npz"
    if not path.exists():
        header = b"{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000,), }".ljust(117) + b"\n"
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("X.npy", b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + b"\0" * 16)
    return path


def _huge_external_model(models) -> Path:
    """The layernorm model with one weight stored externally, its ``length`` 2**62 over a 256-byte file (F7)."""
    import onnx
    from onnx import TensorProto

    path = models.root / "ext_huge" / "model.onnx"
    if not path.exists():
        proto = onnx.load(models.layernorm)
        weight = proto.graph.initializer[0]
        weight.ClearField("raw_data")
        weight.ClearField("float_data")
        weight.data_location = TensorProto.EXTERNAL
        for key, value in {"location": "w.bin", "offset": "0", "length": str(2**62)}.items():
            weight.external_data.add(key=key, value=value)
        path.parent.mkdir(exist_ok=True)
        (path.parent / "w.bin").write_bytes(bytes(256))
        onnx.save(proto, path)
    return path


def _marker_check(models, **kwargs):
    """What the `trt` fixture does for ``@pytest.mark.trt(model=<layernorm>, **kwargs)`` + ``trt.check()``."""
    from pytest_trt.glue.case import TrtCase
    from pytest_trt.run.session import TrtSession
    from pytest_trt.run.settings import Settings

    if "session" not in _SESSIONS:
        _SESSIONS["session"] = TrtSession.create(Settings(
            backend="emulate", cache_dir=models.root / "case-cache", sources={"trt_cache_dir": "--trt-cache-dir"}))
    node = _Node(path=models.root / "test_x.py", model=str(models.layernorm), **kwargs)
    return TrtCase(_SESSIONS["session"], node).check(atol=1e-2)




@dataclass(frozen=True)
class Row:
    id: str
    call: Callable[[Any], Any]  # (models) -> anything; must raise
    exc: type
    fragments: tuple[str, ...]
    bug: str | None = None

    def param(self):
        marks = [pytest.mark.xfail(strict=True, reason=f"BUG: {self.bug}")] if self.bug else []
        return pytest.param(self, id=self.id, marks=marks)



API_ROWS = [
    # --- the model file --------------------------------------------------------------------------
    Row("model-missing", lambda m: load_model(m.root / "nope.onnx"), ModelError,
        ("ONNX model not found:", "nope.onnx", "check the path")),
    Row("model-is-a-directory", lambda m: load_model(m.root), ModelError,
        ("ONNX model path is a directory, not a file:",)),
    Row("model-empty-file", lambda m: load_model(m.empty), ModelError,
        ("empty.onnx is empty (0 bytes): was it written completely?",)),
    Row("model-malformed-bytes", lambda m: load_model(m.garbage), ModelError,
        ("garbage.onnx is not a valid ONNX model (protobuf parse failed", "truncated or a different file format")),
    Row("model-truncated", lambda m: load_model(m.truncated), ModelError,
        ("truncated.onnx is not a valid ONNX model (protobuf parse failed", "it may be truncated")),
    Row("model-external-data-missing", lambda m: load_model(m.external), ModelError,
        ("model.onnx", "external data", "weights.bin")),
    Row("model-external-data-length-past-the-file", lambda m: load_model(_huge_external_model(m)), ModelError,
        ("model.onnx: tensor", "length 4611686018427387904", "'w.bin', but that file holds 256 bytes")),
    Row("model-fails-onnx-checker", lambda m: load_model(m.unchecked), ModelError,
        ("dangling_input.onnx fails onnx.checker:", "Fix or re-export the model")),
    Row("model-wrong-type", lambda m: load_model(42), ModelError,
        ("expected a path to an ONNX file or an onnx.ModelProto, got int",)),
    # --- ops the backend does not have -------------------------------------------------------------
    Row("custom-domain-op-on-emulate", lambda m: _emulated_run(m.custom, PrecisionPolicy("fp16"), {
        "x": np.ones((2, 3), np.float32)}), ModelError,
        ("ONNX Runtime cannot load emulation of custom_op.onnx", "com.example:MyOp", "is not a registered")),
    Row("custom-domain-op-in-baseline", lambda m: fp32_baseline(load_model(m.custom), {
        "x": np.ones((2, 3), np.float32)}), ModelError,
        ("ONNX Runtime cannot load", "custom_op.onnx", "com.example:MyOp")),
    # --- patterns and rules --------------------------------------------------------------------------
    Row("pattern-matches-nothing", lambda m: PrecisionPolicy("fp16", keep_fp32=["*/LayerNrom/*"]).resolve(ENCODER),
        PatternError, ("precision pattern '*/LayerNrom/*' (from keep_fp32) matches no node of encoder_opset14.onnx",
                       "Closest node names: '/encoder/layer.0/", "LayerNorm/")),
    Row("pattern-needs-leading-star", lambda m: PrecisionPolicy("fp16", keep_fp32=["LayerNorm/*"]).resolve(ENCODER),
        PatternError, ("'*LayerNorm/*' would match", "a pattern must match the WHOLE node name")),
    Row("op-pattern-wrong-case", lambda m: PrecisionPolicy("fp16", keep_fp32=["op:softmax"]).resolve(ENCODER),
        PatternError, ("matches no node", "Op types are case-sensitive: did you mean 'op:Softmax'?")),
    Row("op-pattern-unknown-op", lambda m: PrecisionPolicy("fp16", rules=["op:LayerNormalization=fp32"]).resolve(
        ENCODER), PatternError, ("'op:LayerNormalization' matches no node", "Closest op types in the model:")),
    Row("keep-fp32-selects-only-fixed-nodes", lambda m: PrecisionPolicy("fp16", keep_fp32=["op:Shape"]).resolve(
        ENCODER), PatternError, ("precision pattern 'op:Shape' (from keep_fp32) selects no float computation in "
                                 "encoder_opset14.onnx: it matches 4 node(s), all fixed", "no float output",
                                 "the pattern changes nothing")),
    Row("rule-selects-only-fixed-nodes", lambda m: PrecisionPolicy("fp16", rules=["op:Shape=fp16"]).resolve(ENCODER),
        PatternError, ("precision pattern 'op:Shape' selects no float computation",)),
    Row("expect-fp32-selects-only-fixed-nodes", lambda m: PrecisionPolicy(
        "fp16", expect_fp32=["op:Shape"]).resolve(ENCODER), PatternError,
        ("precision pattern 'op:Shape' (from expect_fp32) selects no float computation",)),
    Row("pattern-empty", lambda m: PrecisionPolicy("fp16", keep_fp32=[""]), PatternError,
        ("empty precision pattern",)),
    Row("pattern-whitespace", lambda m: PrecisionPolicy("fp16", keep_fp32=[" */LayerNorm/*"]), PatternError,
        ("has leading or trailing whitespace",)),
    Row("op-pattern-with-glob", lambda m: PrecisionPolicy("fp16", keep_fp32=["op:Soft*"]), PatternError,
        ("'op:' takes one exact op type, not a glob",)),
    Row("rule-given-as-pattern", lambda m: PrecisionPolicy("fp16", keep_fp32=["*/LayerNorm/*=fp32"]), PatternError,
        ("looks like a rule 'PATTERN=PRECISION'",)),
    Row("rule-without-precision", lambda m: parse_rule("*/LayerNorm/*="), PatternError,
        ("has no precision after '='",)),
    Row("rule-unknown-precision", lambda m: parse_rule("*/LayerNorm/*=fp8"), PatternError,
        ("unknown rule precision 'fp8'", "fp32, fp16, bf16")),
    Row("policy-unknown-precision", lambda m: PrecisionPolicy("int4"), UsageError,
        ("unknown default precision 'int4'",)),
    Row("policy-mixes-fp16-and-bf16", lambda m: PrecisionPolicy("fp16", rules=["op:Softmax=bf16"]), UsageError,
        ("mixes bf16 and fp16", "pick fp16 or bf16")),
    # --- inputs ----------------------------------------------------------------------------------------
    Row("symbolic-dims-undeclared", lambda m: make_feeds(ENCODER), InputError,
        ("input shapes are not fully declared", "no size declared for dim 0 'batch', dim 1 'sequence'",
         "dims={'batch': <batch>, 'sequence': <sequence>}", "--input-shapes hidden_states:[<batch>,<sequence>,64]")),
    Row("shape-for-unknown-input", lambda m: make_feeds(ENCODER, shapes={"hidden": (1, 4, 64)}), InputError,
        ("shapes names 'hidden', which is not an input of encoder_opset14.onnx", "(did you mean 'hidden_states'?)")),
    Row("dims-negative", lambda m: make_feeds(ENCODER, dims={"batch": -1, "sequence": 4}), InputError,
        ("-1 does not mean 'dynamic' here",)),
    Row("shape-contradicts-static-dim", lambda m: make_feeds(ENCODER, shapes={X: (1, 4, 63)}), InputError,
        ("hidden_states", "64", "63")),
    Row("int-input-range-undeclared", lambda m: make_feeds(m.ids), InputError,
        ("integer inputs need a declared value range", "input 'ids' is int64")),
    Row("val-range-min-above-max", lambda m: make_feeds(m.layernorm, val_range={X: (1, -1)}), InputError,
        ("min 1 is greater than max -1",)),
    Row("val-range-nan-bound", lambda m: make_feeds(m.layernorm, val_range={X: (float("nan"), 1)}), InputError,
        ("range bounds must be finite, got nan",)),
    Row("val-range-unknown-input", lambda m: make_feeds(m.layernorm, val_range={"hidden": (0, 1)}), InputError,
        ("val_range names 'hidden', which is not an input", "did you mean 'hidden_states'?")),
    Row("seed-negative", lambda m: make_feeds(m.layernorm, seed=-1), InputError,
        ("seed must be a non-negative integer, got -1",)),
    Row("feeds-wrong-name", lambda m: check_feeds(ENCODER, _feeds(name="hiden_states")), InputError,
        ("input 'hidden_states' is missing", "'hiden_states' is not an input of the model (did you mean "
         "'hidden_states'?)", "the model's inputs: hidden_states: float32[batch, sequence, 64]")),
    Row("feeds-wrong-dtype", lambda m: check_feeds(ENCODER, _feeds(dtype=np.float64)), InputError,
        ("input 'hidden_states' expects float32, got float64", ".astype(np.float32)")),
    Row("feeds-wrong-static-dim", lambda m: check_feeds(ENCODER, _feeds(shape=(1, 4, 63))), InputError,
        ("input 'hidden_states' dim 2 must be 64", "got shape (1, 4, 63)")),
    Row("feeds-wrong-rank", lambda m: check_feeds(ENCODER, _feeds(shape=(4, 64))), InputError,
        ("input 'hidden_states' expects rank 3",)),
    Row("feeds-not-an-array", lambda m: check_feeds(ENCODER, {X: [[0.0] * 64] * 4}), InputError,
        ("is a list, not a numpy array", "np.asarray(value, dtype=np.float32)")),
    Row("feeds-contradict-declared-dims", lambda m: check_feeds(ENCODER, _feeds(), dims={"batch": 2}), InputError,
        ("input 'hidden_states' dim 0 ('batch') is 1, but dims['batch'] declares 2",)),
    Row("feeds-nan", lambda m: check_feeds(ENCODER, _nan_feeds()), InputError,
        ("input 'hidden_states' holds 1 NaN and 0 Inf value(s) (first at index (0, 1, 2))",
         "pass allow_nonfinite=True if that is intended")),
    Row("feeds-inf", lambda m: check_feeds(ENCODER, _inf_feeds()), InputError,
        ("holds 0 NaN and 1 Inf value(s) (first at index (0, 0, 0))",)),
    Row("feeds-file-missing", lambda m: load_feeds(m.root / "nope.npz"), InputError, ("feeds file not found:",)),
    Row("feeds-file-not-npz", lambda m: load_feeds(m.garbage), InputError,
        ("not a readable .npz archive", "np.savez(path, **feeds)")),
    Row("feeds-file-header-declares-a-terabyte", lambda m: load_feeds(_header_bomb_npz(m)), InputError,
        ("header_bomb.npz: array 'X' declares shape (1000000000000,) of float32", "over the limit of 4 GiB")),
    Row("recheck-seeds-too-many", lambda m: suggest_fp32_islands(m.layernorm, "fp16", make_feeds(m.layernorm),
                                                                 backend="emulate", max_builds=1, recheck_seeds=range(101)),
        UsageError, ("recheck_seeds: at most 100 seeds",)),
    Row("cli-val-range-malformed", lambda m: parse_val_range("x:[0;1]"), UsageError,
        ("--val-range 'x:[0;1]'", "a range has exactly 2 values")),
    Row("cli-input-shape-trtexec-spelling", lambda m: parse_input_shape("x:1x3x224x224"), UsageError,
        ("write shapes in brackets", "x:[1,3,224,224]")),
    # --- outputs and tolerances ------------------------------------------------------------------------------
    Row("model-output-nan-fails", lambda m: _compare_model_with_itself(m.nan, {"x": np.full((2, 8), -1, np.float32)}),
        AccuracyError, ("NaN",)),
    Row("tolerance-negative", lambda m: compare_outputs({"y": np.ones(3)}, {"y": np.ones(3)}, atol=-1e-3), UsageError,
        ("atol for output 'y' must be a non-negative number, not -0.001",)),
    Row("tolerance-nan", lambda m: compare_outputs({"y": np.ones(3)}, {"y": np.ones(3)}, rtol=float("nan")),
        UsageError, ("rtol for output 'y' must be a non-negative number, not nan",)),
    Row("tolerance-not-a-number", lambda m: assert_close(np.ones(3), np.ones(3), rtol="1e-3"), UsageError,
        ("rtol for output 'output' must be a number, got '1e-3'",)),
    Row("tolerance-bool", lambda m: assert_close(np.ones(3), np.ones(3), atol=True), UsageError,
        ("atol for output 'output' must be a number, got True",)),
    Row("tolerance-for-unknown-output", lambda m: compare_outputs({"y": np.ones(3)}, {"y": np.ones(3)},
                                                                  rtol={"logits": 1e-2}), UsageError,
        ("rtol names 'logits', which is not compared; outputs compared: 'y'",)),
    Row("tolerance-for-missing-output", lambda m: assert_close({"y": np.ones(3)}, {"y": np.ones(3), "z": np.ones(2)}),
        AccuracyError, ("'z'", "missing from actual")),
    Row("tolerance-none-in-a-dict-means-the-default", lambda m: assert_close(
        {"y": np.zeros(4, np.float32)}, {"y": np.full(4, 1e6, np.float32)}, atol={"y": None}), AccuracyError,
        ("1 of 1 output(s) differ", "'y'")),
    Row("marker-tolerance-dict-with-int-key", lambda m: _marker_check(m, atol={0: 1e-3}), UsageError,
        ("atol names unknown output(s) 0",)),
    # --- markers, backends ------------------------------------------------------------------------------------
    Row("marker-unknown-keyword", lambda m: marker_kwargs(_Node(model="m.onnx", atoll=1e-3)), UsageError,
        ("test_x.py::test_x: unknown @pytest.mark.trt argument 'atoll'; known: ", "atol,")),
    Row("marker-keep-fp32-not-iterable", lambda m: _marker_check(m, keep_fp32=5), UsageError,
        ("keep_fp32", "5")),
    Row("marker-rules-not-iterable", lambda m: _marker_check(m, rules=5), UsageError, ("rules", "5")),
    Row("marker-expect-fp32-not-iterable", lambda m: _marker_check(m, expect_fp32=5), UsageError,
        ("expect_fp32", "5")),
    Row("marker-requires-not-iterable", lambda m: _marker_check(m, requires=5), UsageError, ("requires", "5")),
    Row("marker-inputs-not-a-dict-or-path", lambda m: _marker_check(m, inputs=5), InputError, ("inputs", "5")),
    Row("marker-seed-not-a-number", lambda m: _marker_check(m, seed="seven"), InputError,
        ("seed must be a non-negative integer, got 'seven'",)),
    Row("marker-inputs-missing-file", lambda m: _marker_check(m, inputs="nope.npz"), InputError,
        ("feeds file not found:", "nope.npz")),
    Row("marker-typing-unknown", lambda m: _marker_check(m, typing="strongly"), UsageError,
        ("unknown typing 'strongly': use one of auto, strong, weak",)),
    Row("marker-baseline-unknown", lambda m: _marker_check(m, baseline="fp64"), UsageError,
        ("unknown baseline 'fp64': use 'fp32'",)),
    Row("marker-policy-not-a-policy", lambda m: _marker_check(m, policy="fp16"), UsageError,
        ("test_x.py::test_x: policy= must be a pytest_trt.PrecisionPolicy",)),
    Row("backend-unknown-name", lambda m: get_backend("tensorrtx"), UsageError,
        ("unknown backend 'tensorrtx': choose one of auto, tensorrt, tensorrt-rtx, emulate",)),
    Row("backend-unknown-in-select", lambda m: select_backend("trt"), UsageError,
        ("unknown --trt-backend 'trt': choose one of auto, tensorrt, tensorrt-rtx, emulate",)),
    Row("backend-unavailable", lambda m: select_backend("tensorrt") if get_backend("tensorrt").unavailable_reason()
        else pytest.skip("TensorRT is available here"), BackendUnavailable,
        ("--trt-backend tensorrt cannot run here: ",)),
    Row("build-config-unknown-typing", lambda m: BuildConfig(typing="strongly"), UsageError,
        ("unknown typing 'strongly': use one of auto, strong, weak",)),
]


@pytest.mark.parametrize("row", [r.param() for r in API_ROWS])
def test_api_bad_input_raises_exactly(row: Row, models):
    with pytest.raises(BaseException) as info:
        row.call(models)
    assert type(info.value) is row.exc, f"{type(info.value).__module__}.{type(info.value).__name__}: {info.value}"
    message = str(info.value)
    for fragment in row.fragments:
        assert fragment in message, f"{fragment!r} not in:\n{message}"


def test_every_api_row_is_an_error_class_of_pytest_trt():
    """The families users can catch: usage/input errors and real mismatches, nothing else."""
    for row in API_ROWS:
        assert issubclass(row.exc, (PytestTrtError, AccuracyError)), row.id


# ----------------------------------------------------------------------------- not errors: what decides


def test_overlapping_rules_later_wins_and_the_plan_names_the_deciding_rule():
    policy = PrecisionPolicy("fp16", keep_fp32=["*/LayerNorm/*"],
                             rules=["*/LayerNorm/Pow=fp16", "op:Sqrt=fp16", "/encoder/layer.0/*/LayerNorm/Sqrt=fp32"])
    plan = policy.resolve(ENCODER)
    nodes = plan.nodes
    pow_, sqrt0, sqrt1 = ("/encoder/layer.0/attention/output/LayerNorm/Pow",
                          "/encoder/layer.0/attention/output/LayerNorm/Sqrt",
                          "/encoder/layer.1/attention/output/LayerNorm/Sqrt")
    div = "/encoder/layer.0/attention/output/LayerNorm/Div"
    assert (nodes[pow_].precision, nodes[pow_].rule) == ("fp16", "*/LayerNorm/Pow=fp16")
    assert (nodes[div].precision, nodes[div].rule) == ("fp32", "*/LayerNorm/*=fp32")
    assert (nodes[sqrt0].precision, nodes[sqrt0].rule) == ("fp32", "/encoder/layer.0/*/LayerNorm/Sqrt=fp32")
    if sqrt1 in nodes:  # a second layer: only op:Sqrt=fp16 and keep_fp32 match; the later one wins
        assert (nodes[sqrt1].precision, nodes[sqrt1].rule) == ("fp16", "op:Sqrt=fp16")
    assert plan.policy.describe() == ("fp16; fp32: */LayerNorm/*; fp16: */LayerNorm/Pow, op:Sqrt; "
                                      "fp32: /encoder/layer.0/*/LayerNorm/Sqrt")
    # and `pytest-trt plan --json` shows the same deciding rule per node
    rows = {n["name"]: n for n in plan.to_json()["nodes"]}
    assert rows[pow_]["rule"] == "*/LayerNorm/Pow=fp16" and rows[sqrt0]["rule"].endswith("Sqrt=fp32")


def test_marker_seed_none_means_the_session_seed(models):
    """Like every other marker keyword, seed=None means "not given" (the session's seed)."""
    assert _marker_check(models, seed=None).passed


def test_nonfinite_feeds_pass_the_check_when_allowed():
    check_feeds(ENCODER, _nan_feeds(), allow_nonfinite=True)
    check_feeds(ENCODER, _inf_feeds(), allow_nonfinite=True)


def test_model_producing_nan_never_passes_whatever_the_tolerances():
    x = np.array([[-1.0, 4.0] * 4] * 2, np.float32)
    with np.errstate(invalid="ignore"):
        expected = {"y": np.sqrt(x)}  # NaN where x < 0, on both sides
    for rtol, atol in ((0, 0), (1e-2, 1e-3), (1e9, 1e9), (float("inf"), float("inf"))):
        result = compare_outputs({"y": expected["y"].copy()}, expected, rtol=rtol, atol=atol,
                                 no_check=math.isinf(rtol))
        assert not result.passed, (rtol, atol)
        assert "NaN" in result.message()


# ----------------------------------------------------------------------------- the CLI


@dataclass(frozen=True)
class CliRow:
    id: str
    argv: Callable[[Any], list]  # (models) -> argv after "pytest-trt"
    rc: int
    fragments: tuple[str, ...]
    bug: str | None = None

    def param(self):
        marks = [pytest.mark.xfail(strict=True, reason=f"BUG: {self.bug}")] if self.bug else []
        return pytest.param(self, id=self.id, marks=marks)


ENC = str(ENCODER)
SHAPES = ["--input-shapes", "hidden_states:[1,4,64]"]

CLI_ROWS = [
    CliRow("plan-malformed-model", lambda m: ["plan", str(m.garbage)], 2,
           ("pytest-trt plan: error: ", "garbage.onnx is not a valid ONNX model")),
    CliRow("plan-truncated-model", lambda m: ["plan", str(m.truncated)], 2, ("truncated.onnx is not a valid ONNX",)),
    CliRow("plan-external-data-missing", lambda m: ["plan", str(m.external)], 2,
           ("pytest-trt plan: error: ", "weights.bin")),
    CliRow("plan-external-data-length-past-the-file", lambda m: ["plan", str(_huge_external_model(m))], 2,
           ("pytest-trt plan: error: ", "declares external data at offset 0 with length 4611686018427387904")),
    CliRow("compare-feeds-file-header-declares-a-terabyte", lambda m: ["compare", str(m.layernorm), "--load-inputs",
                                                                       str(_header_bomb_npz(m))], 2,
           ("pytest-trt compare: error: feeds file", "declares shape (1000000000000,)", "4 GiB")),
    CliRow("suggest-recheck-seeds-2-to-the-64", lambda m: ["suggest", ENC, *SHAPES, "--fp16", "--max-builds", "1",
                                                           "--recheck-seeds", str(2**64)], 2,
           ("argument --recheck-seeds: must be <= 100, got 18446744073709551616",)),
    CliRow("plan-pattern-matches-nothing", lambda m: ["plan", ENC, "--fp16", "--keep-fp32", "*/LayerNrom/*"], 2,
           ("pytest-trt plan: error: precision pattern '*/LayerNrom/*' (from keep_fp32) matches no node",)),
    CliRow("plan-keep-fp32-selects-only-fixed-nodes", lambda m: ["plan", ENC, "--fp16", "--keep-fp32", "op:Shape"], 2,
           ("pytest-trt plan: error: precision pattern 'op:Shape' (from keep_fp32) selects no float computation",)),
    CliRow("plan-rule-unknown-precision", lambda m: ["plan", ENC, "--precision", "op:Softmax=fp8"], 2,
           ("unknown rule precision 'fp8'",)),
    CliRow("compare-custom-op", lambda m: ["compare", str(m.custom), "--fp16", "--backend", "emulate"], 2,
           ("pytest-trt compare: error: ONNX Runtime cannot load", "com.example:MyOp")),
    CliRow("compare-dims-undeclared", lambda m: ["compare", ENC, "--fp16", "--backend", "emulate"], 2,
           ("input shapes are not fully declared", "--input-shapes hidden_states:[<batch>,<sequence>,64]")),
    CliRow("compare-shape-for-unknown-input", lambda m: ["compare", ENC, "--input-shapes", "hidden:[1,4,64]"], 2,
           ("shapes names 'hidden', which is not an input", "did you mean 'hidden_states'?")),
    CliRow("compare-val-range-nan", lambda m: ["compare", ENC, *SHAPES, "--val-range", "hidden_states:[nan,1]"], 2,
           ("range bounds must be finite, got nan",)),
    CliRow("compare-nan-feeds-file", lambda m: ["compare", ENC, "--load-inputs", str(m.root / "nan_feeds.npz")], 2,
           ("holds 1 NaN and 0 Inf value(s)", "pass --allow-nonfinite")),
    CliRow("compare-wrong-dtype-feeds-file", lambda m: ["compare", ENC, "--load-inputs",
                                                        str(m.root / "f64_feeds.npz")], 2,
           ("input 'hidden_states' expects float32, got float64",)),
    CliRow("compare-negative-atol", lambda m: ["compare", ENC, *SHAPES, "--atol", "-1"], 2,
           ("error: argument --atol: must be >= 0, got -1",)),
    CliRow("compare-nan-rtol", lambda m: ["compare", ENC, *SHAPES, "--rtol", "nan"], 2,
           ("error: argument --rtol: nan is not a number",)),
    CliRow("compare-atol-value-missing", lambda m: ["compare", ENC, *SHAPES, "--atol"], 2,
           ("error: argument --atol: expected one argument",)),
    CliRow("compare-atol-not-a-number", lambda m: ["compare", ENC, *SHAPES, "--atol", "tight"], 2,
           ("error: argument --atol: 'tight' is not a number",)),
    CliRow("compare-unknown-backend", lambda m: ["compare", ENC, *SHAPES, "--backend", "trt"], 2,
           ("argument --backend: invalid choice: 'trt'",)),
    CliRow("compare-unavailable-backend", lambda m: ["compare", ENC, *SHAPES, "--backend", "tensorrt"], 2,
           ("tensorrt cannot run here", "TensorRT not installed")),
    CliRow("compare-unavailable-backend-names-the-cli-flag", lambda m: ["compare", ENC, *SHAPES, "--backend",
                                                                        "tensorrt"], 2,
           ("--backend tensorrt cannot run here",)),
    CliRow("compare-weak-typing-on-emulate", lambda m: ["compare", ENC, *SHAPES, "--backend", "emulate", "--typing",
                                                        "weak"], 2,
           ("pytest-trt compare: error: --typing weak cannot be honoured by emulate", "emulation has no weak typing")),
    CliRow("compare-unknown-subcommand", lambda m: ["comapre", ENC], 2, ("invalid choice: 'comapre'",)),
    CliRow("compare-nan-model-fails", lambda m: ["compare", str(m.nan), "--val-range", "x:[-1,1]"], 1,
           ("NaN",)),
    CliRow("compare-fp16-layernorm-overflow-fails", lambda m: ["compare", ENC, "--fp16", *SHAPES, "--val-range",
                                                               "hidden_states:[-400,400]"], 1,
           ("last_hidden_state",)),
]


@pytest.fixture(scope="module")
def cli_env(tmp_path_factory, models):
    """Feed files for the CLI rows; the CLI's default cache goes to a temporary directory."""
    base = _feeds()
    np.savez(models.root / "nan_feeds.npz", **_nan_feeds())
    np.savez(models.root / "f64_feeds.npz", **{X: base[X].astype(np.float64)})
    return tmp_path_factory.mktemp("cli")


@pytest.mark.parametrize("row", [r.param() for r in CLI_ROWS])
def test_cli_bad_input_exit_status_and_message(row: CliRow, models, cli_env, capsys, monkeypatch):
    monkeypatch.chdir(cli_env)
    monkeypatch.setenv("PYTEST_TRT_CACHE_DIR", str(cli_env / "cache"))
    try:
        rc = cli_main(row.argv(models))
    except SystemExit as exc:  # argparse
        rc = exc.code
    out, err = capsys.readouterr()
    assert rc == row.rc, f"exit {rc}\nstdout:\n{out}\nstderr:\n{err}"
    text = err if rc == 2 else out + err
    for fragment in row.fragments:
        assert fragment in text, f"{fragment!r} not in:\n{text}"
    assert "Traceback" not in out + err


def test_console_script_exit_statuses(models, cli_env, subprocess_env):
    """The installed ``pytest-trt`` script: 2 for a bad model, 1 for an accuracy failure, 0 for a pass."""
    exe = shutil.which("pytest-trt") or ""
    cmd = [exe] if exe else [sys.executable, "-m", "pytest_trt.cli"]
    env = {**subprocess_env, "PYTEST_TRT_CACHE_DIR": str(cli_env / "script-cache")}

    def run(*args):
        return subprocess.run([*cmd, *args], capture_output=True, text=True, env=env, cwd=cli_env, timeout=120)

    bad = run("plan", str(models.garbage))
    assert bad.returncode == 2 and "garbage.onnx is not a valid ONNX model" in bad.stderr, bad.stderr
    nan = run("compare", str(models.nan), "--val-range", "x:[-1,1]", "--json")
    assert nan.returncode == 1, nan.stderr
    import json

    report = json.loads(nan.stdout)
    assert report["passed"] is False and report["backend"] == "emulate"
    assert "Traceback" not in bad.stderr + nan.stderr


# ----------------------------------------------------------------------------- through pytest


@dataclass(frozen=True)
class PytestRow:
    id: str  # also the inner test's name: test_<id with - -> _>
    marker: str  # the @pytest.mark.trt(...) arguments
    body: str  # the test body, using `trt`
    kind: str  # the exception class name shown
    fragments: tuple[str, ...]
    bug: str | None = None

    @property
    def test_name(self) -> str:
        return "test_" + self.id.replace("-", "_")


PYTEST_ROWS = [
    PytestRow("malformed-model", "model=GARBAGE", "trt.check()", "ModelError",
              ("garbage.onnx is not a valid ONNX model",)),
    PytestRow("truncated-model", "model=TRUNCATED", "trt.check()", "ModelError", ("truncated.onnx is not a valid",)),
    PytestRow("external-data-missing", "model=EXTERNAL", "trt.check()", "ModelError", ("weights.bin",)),
    PytestRow("custom-op", "model=CUSTOM, precision='fp16'", "trt.check()", "ModelError",
              ("ONNX Runtime cannot load", "com.example:MyOp")),
    PytestRow("pattern-matches-nothing", "model=ENCODER, precision='fp16', keep_fp32=['*/LayerNrom/*'], dims=DIMS",
              "trt.check()", "PatternError", ("precision pattern '*/LayerNrom/*' (from keep_fp32) matches no node",)),
    PytestRow("pattern-selects-only-fixed-nodes", "model=ENCODER, precision='fp16', keep_fp32=['op:Shape'], dims=DIMS",
              "trt.check()", "PatternError", ("precision pattern 'op:Shape' (from keep_fp32) selects no float "
                                              "computation",)),
    PytestRow("dims-undeclared", "model=ENCODER", "trt.check()", "InputError",
              ("input shapes are not fully declared", "dims={'batch': <batch>, 'sequence': <sequence>}")),
    PytestRow("val-range-unknown-input", "model=ENCODER, dims=DIMS, val_range={'hidden': (0, 1)}", "trt.check()",
              "InputError", ("val_range names 'hidden', which is not an input",)),
    PytestRow("nan-in-marker-inputs", "model=ENCODER, inputs=NAN_FEEDS", "trt.check()", "InputError",
              ("holds 1 NaN and 0 Inf value(s)",)),
    PytestRow("nan-in-feeds-given-to-check", "model=ENCODER, dims=DIMS", "trt.check(NAN_FEEDS)", "InputError",
              ("holds 1 NaN and 0 Inf value(s)",)),
    PytestRow("wrong-dtype-in-feeds-given-to-check", "model=ENCODER, dims=DIMS", "trt.check(F64_FEEDS)", "InputError",
              ("input 'hidden_states' expects float32, got float64",)),
    PytestRow("model-producing-nan", "model=NAN, val_range={'x': (-1, 1)}", "trt.check(atol=1e9, rtol=1e9)",
              "AccuracyError", ("NaN",)),
    PytestRow("negative-atol-in-marker", "model=ENCODER, dims=DIMS, atol=-1e-3", "trt.check()", "UsageError",
              ("atol for output 'last_hidden_state' must be a non-negative number",)),
    PytestRow("tolerance-for-unknown-output", "model=ENCODER, dims=DIMS, rtol={'logits': 1e-2}", "trt.check()",
              "UsageError", ("rtol names unknown output(s) logits", "has outputs last_hidden_state")),
    # review2 row 11: a typo'd precision key was only called an unknown output
    PytestRow("tolerance-precision-key-typo", "model=ENCODER, dims=DIMS, atol={'fp61': 1e-2}", "trt.check()",
              "UsageError", ("atol names unknown output(s) fp61", "did you mean 'fp16' (a precision key) for 'fp61'?")),
    PytestRow("unknown-marker-keyword", "model=ENCODER, dims=DIMS, atoll=1e-3", "trt.check()", "UsageError",
              ("unknown @pytest.mark.trt argument 'atoll'",)),
    PytestRow("keep-fp32-not-a-list-in-marker", "model=ENCODER, dims=DIMS, keep_fp32=5", "trt.check()", "UsageError",
              ("keep_fp32",)),
    PytestRow("tolerance-none-in-marker-dict-must-not-pass",
              "model=ENCODER, precision='fp16', dims={'batch': 2, 'sequence': 16}, atol={'last_hidden_state': None}",
              "trt.check(trt.feeds(outliers={'hidden_states': {'count': 2, 'magnitude': 400.0}}))", "AccuracyError",
              ("last_hidden_state",)),
    PytestRow("weak-typing-in-marker-on-emulate", "model=ENCODER, dims=DIMS, typing='weak'", "trt.check()",
              "UsageError", ("emulate cannot build encoder_opset14.onnx", "emulation has no weak typing")),
    PytestRow("unknown-precision-in-marker", "model=ENCODER, dims=DIMS, precision='fp8'", "trt.check()",
              "UsageError", ("unknown precision 'fp8'",)),
]


def _inner_module(models) -> str:
    head = textwrap.dedent(f"""
        import numpy as np
        import pytest
        ENCODER = {str(ENCODER)!r}
        GARBAGE, TRUNCATED, EXTERNAL = {str(models.garbage)!r}, {str(models.truncated)!r}, {str(models.external)!r}
        CUSTOM, NAN = {str(models.custom)!r}, {str(models.nan)!r}
        DIMS = {DIMS!r}
        NAN_FEEDS = {{"hidden_states": np.zeros((1, 4, 64), np.float32)}}
        NAN_FEEDS["hidden_states"][0, 1, 2] = np.nan
        F64_FEEDS = {{"hidden_states": np.zeros((1, 4, 64), np.float64)}}
    """)
    tests = [f"\n@pytest.mark.trt({row.marker})\ndef {row.test_name}(trt):\n    {row.body}\n" for row in PYTEST_ROWS]
    return head + "".join(tests)


def _sections(out: str) -> dict[str, str]:
    """The failure (and error) sections of a pytest run, by test name."""
    found = {}
    for m in re.finditer(r"^_{3,} (?:ERROR at \w+ of )?(test_\w+) _{3,}\n(.*?)(?=^_{3,} |^={3,})", out, re.M | re.S):
        found[m.group(1)] = m.group(2)
    return found


def test_pytest_shows_the_message_without_internal_tracebacks_for_every_row(pytester, models):
    """See PYTEST_ROWS; rows with a bug are checked (strictly xfailed) in the next test."""
    pytester.makepyfile(test_rows=_inner_module(models))
    result = pytester.runpytest("--trt-cache-dir=" + str(pytester.path / "cache"), "-rA")
    out = result.stdout.str()
    sections = _sections(out)
    problems = []
    for row in PYTEST_ROWS:
        text = sections.get(row.test_name)
        ok = (text is not None and _shows(text, row.kind)
              and all(f in text for f in row.fragments)
              and "pytest_trt/" not in text and "Traceback" not in text)
        if not ok and row.bug is None:
            problems.append(f"{row.id}:\n{text}")
        if ok and row.bug is not None:
            problems.append(f"{row.id} passes now: remove its bug note\n{text}")
        _ROW_TEXT[row.id] = text or ""
    assert not problems, "\n\n".join(problems)
    # Every row must fail its test, except where a bug lets it pass (e.g. a disabled tolerance).
    passed = set(re.findall(r"^PASSED test_rows.py::(\w+)", out, re.M))
    assert passed <= {row.test_name for row in PYTEST_ROWS if row.bug}, passed


_ROW_TEXT: dict[str, str] = {}


def _shows(text: str, kind: str) -> bool:
    """pytest-trt's short report: ``<test file>:<line>: <Kind>`` (or just ``<Kind>`` for an error in
    fixture setup, e.g. a bad marker) on a line of its own, then the message."""
    return re.search(rf"(^|: ){kind}$", text, re.M) is not None


@pytest.mark.parametrize("row", [pytest.param(r, id=r.id, marks=pytest.mark.xfail(strict=True, reason=f"BUG: {r.bug}"))
                                 for r in PYTEST_ROWS if r.bug])
def test_pytest_rows_broken_by_a_bug(row: PytestRow, pytester, models):
    text = _ROW_TEXT.get(row.id)
    if text is None:  # run on its own
        pytester.makepyfile(test_rows=_inner_module(models))
        result = pytester.runpytest("--trt-cache-dir=" + str(pytester.path / "cache"), "-k", row.test_name)
        text = _sections(result.stdout.str()).get(row.test_name, "")
    assert _shows(text, row.kind), text
    assert all(f in text for f in row.fragments), text
    assert "pytest_trt/" not in text and "Traceback" not in text, text


def test_session_level_bad_options_are_pytest_usage_errors(pytester, models):
    """Options that make the whole session wrong stop it before any test, with exit status 4."""
    pytester.makepyfile(test_one="def test_one():\n    pass\n")
    cases = [
        (["--trt-backend", "trt"], "ERROR: pytest-trt: unknown --trt-backend 'trt': choose one of auto, tensorrt, "
                                   "tensorrt-rtx, emulate"),
        (["--trt-backend", "tensorrt"], "ERROR: pytest-trt: --trt-backend tensorrt cannot run here: "),
        (["--trt-atol", "-1"], "ERROR: pytest-trt: --trt-atol: invalid value '-1' for trt-atol: must be a "
                               "non-negative number"),
        (["--trt-rtol", "nan"], "ERROR: pytest-trt: --trt-rtol: invalid value 'nan' for trt-rtol"),
        (["--trt-atol"], "argument --trt-atol: expected one argument"),
        (["--trt-fp16", "--trt-bf16"], "--trt-fp16 and --trt-bf16 both given"),
        (["--trt-cache-max-size", "lots"], "invalid cache size 'lots'"),
        (["--trt-backend", "emulate", "--trt-typing", "weak"], "ERROR: pytest-trt: --trt-typing weak cannot be "
                                                               "honoured by emulate (requested with --trt-backend emulate): "
                                                               "emulation has no weak typing"),
    ]
    failures = []
    for args, fragment in cases:
        if args == ["--trt-backend", "tensorrt"] and not get_backend("tensorrt").unavailable_reason():
            continue
        result = pytester.runpytest(*args)
        text = result.stdout.str() + result.stderr.str()
        if result.ret != 4 or fragment not in text or "Traceback" in text:
            failures.append(f"{args}: exit {result.ret}\n{text}")
    # The ini twin of an unknown backend is refused the same way.
    pytester.makeini("[pytest]\ntrt_backend = trt\n")
    result = pytester.runpytest()
    text = result.stdout.str() + result.stderr.str()
    if result.ret != 4 or "ERROR: pytest-trt: unknown ini trt_backend 'trt': choose one of" not in text:
        failures.append(f"ini trt_backend: exit {result.ret}\n{text}")
    assert not failures, "\n\n".join(failures)
