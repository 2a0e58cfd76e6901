"""The drift gate's expressions and judgements, run ids, and the drift of one report against another
(issue 31): direction-aware thresholds, relative against a stored 0 judged as absolute, improvements
never failing, outputs matched by test id and output, the cause line, precision changes per module."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone

import pytest

from pytest_trt.compare.criterion import Criterion, Level
from pytest_trt.errors import UsageError
from pytest_trt.history.changes import precision_change_lines, precision_changes
from pytest_trt.history.drift import compare_reports, failure_line
from pytest_trt.history.gate import change_text, figure_text, judge, parse_gate
from pytest_trt.history.names import module_pattern, node_key
from pytest_trt.history.runid import RUN_ID_RE, check_name, make_run_id, run_time
from pytest_trt.history.text import drift_lines
from pytest_trt.report.html_history import drift_section


# ----------------------------------------------------------------------------- expressions
def test_expressions_parse_relative_and_absolute_in_each_metrics_direction():
    found = parse_gate(["max_abs:+25%,cosine:-1e-5", "x_tol:0.1", "snr_db:-3"])
    assert [(t.metric, t.amount, t.relative, str(t)) for t in found] == [
        ("max_abs", 0.25, True, "max_abs:+25%"), ("cosine", 1e-5, False, "cosine:-1e-5"),
        ("x_tol", 0.1, False, "x_tol:+0.1"), ("snr_db", 3.0, False, "snr_db:-3")]


@pytest.mark.parametrize("expr, says", [
    ("cosine:+1e-5", "cosine fails only when it falls; write cosine:-1e-5"),
    ("max_abs:-25%", "max_abs fails only when it grows; write max_abs:+25%"),
    ("maxabs:+1", "unknown metric 'maxabs'; choose one of max_abs, max_rel, mismatch, x_tol, cosine, snr_db"),
    ("max_abs", "expected METRIC:THRESHOLD"),
    ("max_abs:+1e999%", "finite number >= 0"),
    ("max_abs:+1,max_abs:+2", "max_abs is given twice"),
])
def test_a_bad_expression_is_a_usage_error_naming_the_flag(expr, says):
    with pytest.raises(UsageError, match="--trt-compare-fail") as info:
        parse_gate([expr])
    assert says in str(info.value)


# ----------------------------------------------------------------------------- judgements
def test_errors_fail_when_they_grow_floors_when_they_fall():
    grow = parse_gate(["max_abs:+25%"])[0]
    assert judge("max_abs", 2e-3, 3e-3, grow).status == "regressed"      # +50 %
    assert judge("max_abs", 2e-3, 2.4e-3, grow).status == "within"       # +20 %
    assert judge("max_abs", 2e-3, 1e-3, grow).status == "improved"       # -50 %: reported, never failed
    fall = parse_gate(["cosine:-1e-5"])[0]
    assert judge("cosine", 0.99999, 0.99997, fall).status == "regressed"
    assert judge("cosine", 0.99997, 0.99999, fall).status == "improved"
    assert judge("cosine", 0.99999, 0.999985, fall).status == "within"


def test_relative_against_a_stored_zero_or_infinite_snr_is_judged_absolute_and_says_so():
    rel = parse_gate(["max_abs:+25%"])[0]
    j = judge("max_abs", 0.0, 1e-7, rel)  # an FP32 run's error is exactly 0: any growth regresses
    assert j.status == "regressed" and "judged as absolute" in j.note and "stored max_abs is 0" in j.note
    assert judge("max_abs", 0.0, 0.0, rel).status == "unchanged"
    snr = parse_gate(["snr_db:-10%"])[0]
    j = judge("snr_db", "inf", 80.0, snr)  # outputs were equal (report spells infinity "inf")
    assert j.status == "regressed" and "judged as absolute" in j.note


def test_nan_counts_as_the_worst_value_and_a_missing_figure_is_not_compared():
    gate = parse_gate(["max_abs:+25%"])[0]
    assert judge("max_abs", 1e-3, "nan", gate).status == "regressed"
    assert judge("cosine", 0.999, "nan", parse_gate(["cosine:-1e-5"])[0]).status == "regressed"
    assert judge("max_abs", None, 1e-3, gate).status == "not compared"


# ----------------------------------------------------------------------------- run ids
def test_run_ids_order_by_time_and_differ_without_coordination():
    t = datetime(2026, 11, 27, 10, 15, tzinfo=timezone.utc)
    ids = [make_run_id("fp16", now=t) for _ in range(200)]
    assert len(set(ids)) == 200  # 48 random bits: never a counter two runners could both take
    m = RUN_ID_RE.match(ids[0])
    assert m and m.group("name") == "fp16" and run_time(ids[0]) == t
    later = make_run_id(None, now=t + timedelta(microseconds=1))
    assert run_time(later) > run_time(ids[0]) and RUN_ID_RE.match(later).group("name") is None


@pytest.mark.parametrize("name", ["3", "latest", "-x", ".hidden", "a/b", "", "x" * 65])
def test_a_run_name_that_would_be_ambiguous_or_unsafe_is_refused(name):
    with pytest.raises(UsageError, match="--trt-save="):
        check_name(name)


# ----------------------------------------------------------------------------- drift of two reports
def _out(name="y", **figures):
    base = {"name": name, "passed": True, "max_abs": 1e-3, "max_rel": 0.1, "mismatched_fraction": 0.0,
            "tolerance_ratio": 0.1, "cosine": 0.99999, "snr_db": 60.0, "atol": 0.01, "rtol": 0.02,
            "min_cosine": 0.9999, "min_snr_db": None}
    return {**base, **figures}


def _criterion(outputs, precision, levels=()):
    """The ``criterion`` an accuracy entry records (``Criterion.to_json()``)."""
    return Criterion.resolve([o["name"] for o in outputs], precision, levels).to_json()


def _report(tests, precision="fp16", realized=None, **fp):
    return {"session": {"fingerprint": {"backend": "tensorrt", "tensorrt": "10.13.3", "precision": precision,
                                        **fp}},
            "tests": tests, "realized": realized or {}}


def _test(nodeid, outputs, policy="fp16", outcome="passed", model_sha="m1", realized=(), levels=()):
    return {"nodeid": nodeid, "outcome": outcome, "realized": list(realized),
            "accuracy": [{"model": "enc.onnx", "policy": policy, "precision": policy, "no_check": False,
                          "criterion": _criterion(outputs, policy, levels),
                          "fingerprint": {"model_sha256": model_sha, "plan": "p-" + policy, "feeds_sha256": "f"},
                          "outputs": outputs}]}


def test_drift_matches_by_test_and_output_gates_and_words_the_cause():
    old = {"id": "A", "name": "base", "fingerprint": None,
           "report": _report([_test("t.py::a", [_out(max_abs=2e-3), _out("z", max_abs=0.0)]),
                              _test("t.py::gone", [_out()]),
                              _test("t.py::control", [_out(max_abs=1.0)], outcome="xfailed")])}
    new = _report([_test("t.py::a", [_out(max_abs=9e-3), _out("z", max_abs=0.0)]),
                   _test("t.py::new", [_out()]),
                   _test("t.py::control", [_out(max_abs=9.0)], outcome="xfailed")], tensorrt="11.4.0")
    drift = compare_reports(old, new, parse_gate(["max_abs:+25%"]))
    assert [(r.label, r.status) for r in drift.rows] == [("t.py::a[y]", "regressed"), ("t.py::a[z]", "unchanged")]
    assert not drift.passed and drift.only_new == ["t.py::new[y]"] and drift.only_old == ["t.py::gone[y]"]
    assert drift.not_gated == 1  # a negative control's error is its purpose: not gated
    assert drift.cause.startswith("TensorRT 10.13.3 -> 11.4.0") and "model unchanged" in drift.cause
    line = failure_line(drift)
    assert line.startswith("pytest-trt drift gate FAILED against run A: 1 regressed output(s) "
                           "(--trt-compare-fail=max_abs:+25%): t.py::a[y] max_abs 0.002 -> 0.009 (+350%")
    assert "\n" not in line
    # the reverse is an improvement: reported, never failed
    back = compare_reports({"id": "B", "report": new}, old["report"], parse_gate(["max_abs:+25%"]))
    assert back.passed and [r.status for r in back.improved] == ["improved"]


def test_without_a_gate_nothing_regresses_and_rows_are_worst_first_by_x_tol_growth():
    old = {"id": "A", "report": _report([_test("t::a", [_out(tolerance_ratio=0.1)]),
                                         _test("t::b", [_out(tolerance_ratio=0.1)])])}
    new = _report([_test("t::a", [_out(tolerance_ratio=0.15)]), _test("t::b", [_out(tolerance_ratio=0.9)])])
    drift = compare_reports(old, new)
    assert drift.passed and not drift.gated and [r.nodeid for r in drift.rows] == ["t::b", "t::a"]


def test_a_changed_model_plan_or_criterion_is_counted_in_the_cause_line():
    old = {"id": "A", "report": _report([_test("t::a", [_out()])])}
    new = _report([_test("t::a", [_out(atol=0.05)], policy="bf16", model_sha="m2",
                         levels=[Level("command line", "--trt-atol", {"atol": 0.05})])], precision="bf16")
    cause = compare_reports(old, new).cause
    assert "default precision fp16 -> bf16" in cause
    assert "policy changed in 1 of 1 check(s) (fp16 -> bf16)" in cause
    assert "criterion changed in 1 of 1 check(s)" in cause and "atol 0.01 -> 0.05 (--trt-atol)" in cause
    assert "model changed in 1 of 1 check(s)" in cause


def test_the_criterion_compared_is_the_recorded_one_not_the_figures_beside_it():
    """The criterion of a check is its recorded ``Criterion.to_json()``: the same values from another
    level are no change; an entry without one (null) is not compared."""
    old = {"id": "A", "report": _report([_test("t::a", [_out()], levels=[Level("marker", "marker", {"atol": 0.01})])])}
    same = _report([_test("t::a", [_out()], levels=[Level("ini", "ini trt_atol", {"atol": 0.01})])])
    assert compare_reports(old, same).checks["criterion"] == 0
    unknown = _report([_test("t::a", [_out()])])
    unknown["tests"][0]["accuracy"][0]["criterion"] = None
    assert compare_reports(old, unknown).checks["criterion"] == 0


# ----------------------------------------------------------------------------- precision changes
def _realized(nodes, model="enc.onnx"):
    return {"model": model, "model_sha256": "m", "plan": "p", "policy": "x", "backend": "tensorrt",
            "source": "inspector", "nodes": nodes}


def test_precision_changes_are_summarised_by_the_largest_module_that_changed_alike():
    ln = {f"/encoder/layer.0/attention/output/LayerNorm/{op}": "fp32" for op in ("Pow", "Sqrt", "Div")}
    rest = {f"/encoder/layer.0/attention/self/{op}": "fp16" for op in ("MatMul", "Add", "Mul", "Softmax")}
    rest["/encoder/layer.0/attention/output/dense/MatMul"] = "fp16"
    old_nodes = {**ln, **rest}
    new_nodes = {**{k: "fp16" for k in ln}, **rest}  # TensorRT 11 ran the LayerNorm in FP16
    old = {"tests": [{"nodeid": "t::a", "realized": ["e:1"]}], "realized": {"e:1": _realized(old_nodes)}}
    new = {"tests": [{"nodeid": "t::a", "realized": ["e:2"]}], "realized": {"e:2": _realized(new_nodes)}}
    changes = precision_changes(old, new)
    assert [(c["pattern"], c["old"], c["new"], c["nodes"]) for c in changes] == [
        ("/encoder/layer.0/attention/output/LayerNorm/*", "fp32", "fp16", 3)]
    assert precision_change_lines(changes) == [
        "3 node(s) fp32 -> fp16 in enc.onnx under /encoder/layer.0/attention/output/LayerNorm/* (3): "
        "/encoder/layer.0/attention/output/LayerNorm/Div, /encoder/layer.0/attention/output/LayerNorm/Pow, "
        "/encoder/layer.0/attention/output/LayerNorm/Sqrt"]
    # a whole-model change (every FP16 node to BF16) is one module; nodes that changed otherwise stay apart
    every = {"tests": [{"nodeid": "t::a", "realized": ["e:3"]}],
             "realized": {"e:3": _realized({k: "bf16" for k in old_nodes})}}
    fp16 = {"tests": [{"nodeid": "t::a", "realized": ["e:4"]}],
            "realized": {"e:4": _realized({k: "fp16" for k in old_nodes})}}
    assert [(c["pattern"], c["old"], c["new"]) for c in precision_changes(fp16, every)] == [
        ("/encoder/layer.0/attention/*", "fp16", "bf16")]
    assert {(c["pattern"], c["old"]) for c in precision_changes(old, every)} == {
        ("/encoder/layer.0/attention/self/*", "fp16"), ("/encoder/layer.0/attention/output/dense/*", "fp16"),
        ("/encoder/layer.0/attention/output/LayerNorm/*", "fp32")}
    # no layer report in one run: nothing to say (never a guess)
    assert precision_changes({"tests": [], "realized": {}}, new) == []


def test_nodes_of_one_run_only_are_summarised_too():
    old = {"tests": [{"nodeid": "t::a", "realized": ["e:1"]}], "realized": {"e:1": _realized({"/a/X": "fp16"})}}
    new = {"tests": [{"nodeid": "t::a", "realized": ["e:2"]}], "realized": {"e:2": _realized({"/b/node_x": "fp16"})}}
    lines = precision_change_lines(precision_changes(old, new))
    assert any("only in this run" in line and "/b/*" in line for line in lines), lines
    assert any("only in the stored run" in line and "/a/*" in line for line in lines), lines


# ----------------------------------------------------------------------------- figures in words
def test_figures_and_changes_are_written_in_core_formattings_formats():
    assert [figure_text(m, x) for m, x in (("max_abs", 2.1e-3), ("x_tol", 0.4321), ("cosine", 0.99999981),
                                           ("snr_db", 41.26), ("max_rel", None))] == [
        "0.0021", "0.432", "0.99999981", "41.3 dB", "n/a"]
    assert [change_text(*c) for c in ((2e-3, 9e-3), (0.619, 13.6), (1.0, 0.5), (0.0, 8.1e-3), (1e-3, 1e-3))] == [
        "+350%", "x22", "-50%", "+0.0081", "unchanged"]


# ----------------------------------------------------------------------------- node names
def test_node_names_and_modules_come_from_one_function():
    assert node_key("/encoder/layer.0/attention/output/LayerNorm/Pow") == (
        "/encoder/layer.0/attention/output/LayerNorm/Pow", "/encoder/layer.0/attention/output/LayerNorm/")
    assert node_key({"node": "Add_3"}) == ("Add_3", "/")
    assert node_key({"canonical": "/model/layers.0/node_rsqrt", "node": "node_rsqrt", "scope": "/model/layers.0/"}) \
        == ("/model/layers.0/node_rsqrt", "/model/layers.0/")
    assert module_pattern("/encoder/") == "/encoder/*"


def test_layerwise_growth_lists_the_tensors_whose_error_grew_most():
    from pytest_trt.history.changes import layerwise_growth

    def report(rels):
        return {"tests": [{"nodeid": "t::a", "layerwise": [{"tensors": [
            {"tensor": f"/ln/{k}_output_0", "node": f"/ln/{k}", "canonical": f"/enc/ln/{k}", "rel": v}
            for k, v in rels.items()]}]}]}

    old = report({"Pow": 1e-3, "Sqrt": 0.0, "Div": 2e-3, "Mul": 5e-3})
    new = report({"Pow": 4e-2, "Sqrt": 1e-4, "Div": 2e-3, "Mul": 1e-3})
    grown = layerwise_growth(old, new)
    assert [(g["tensor"], g["node"]) for g in grown] == [("/ln/Sqrt_output_0", "/enc/ln/Sqrt"),
                                                         ("/ln/Pow_output_0", "/enc/ln/Pow")]
    assert grown[0]["growth"] == math.inf and grown[1]["growth"] == pytest.approx(40.0)
    assert layerwise_growth({"tests": []}, new) == []


@pytest.mark.parametrize(("control_outputs", "said"), [
    (1, "1 output of a negative control (xfail) not compared"),
    (2, "2 outputs of negative controls (xfail) not compared"),
])
def test_outputs_of_negative_controls_not_compared_are_counted_in_english(control_outputs, said):
    outs = [_out(f"o{i}", max_abs=1.0) for i in range(control_outputs)]
    old = {"id": "A", "name": "base", "fingerprint": None,
           "report": _report([_test("t.py::a", [_out()]), _test("t.py::control", outs, outcome="xfailed")])}
    new = _report([_test("t.py::a", [_out()]), _test("t.py::control", outs, outcome="xfailed")])
    drift = compare_reports(old, new, parse_gate(["max_abs:+25%"]))
    assert drift.not_gated == control_outputs
    text = "\n".join(drift_lines(drift))
    assert said in text and " of negative controls" not in text.replace(said, "")

    class History:
        pass

    history = History()
    history.drift = drift  # type: ignore[attr-defined]
    assert said in drift_section(history)
