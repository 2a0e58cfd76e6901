"""The ``--trt-report`` JSON against its JSON Schema and a golden key structure.

One pytester run over a small real project (the example suite's encoder on the emulate
backend): a passing FP16 check with LayerNorm and Softmax kept FP32 plus a precision
check and a ledger, an all-FP16 check that fails (LayerNorm fed outliers) after locating the node that
broke it (a layerwise record), and the same as a negative control (``xfail(strict=True, raises=AccuracyError)``),
compared with a run saved before (``--trt-compare-run``) and saved itself with its outputs
(``--trt-autosave --trt-save-outputs``), so the history keys are filled. The report it writes must
validate against ``pytest_trt/report/report.schema.json`` (the ``jsonschema`` library),
and its key structure (keys and JSON types, not values) must equal the checked-in golden
file ``tests/plugin/golden/json_report_structure.json``.

When the report changes on purpose: bump ``SCHEMA_VERSION`` in
``pytest_trt/report/json_report.py`` and the schema's ``schema_version`` const, add the
changelog entry there, update the schema, and regenerate the golden file with::

    PYTEST_TRT_REGEN_GOLDEN=1 python -m pytest -p no:cacheprovider tests/plugin/test_json_report_schema.py
"""

from __future__ import annotations

import difflib
import json
import os
from importlib import resources
from pathlib import Path

import pytest
from encoder_suite import ENCODER_PREAMBLE
from report_schema import assert_valid_report

jsonschema = pytest.importorskip("jsonschema", reason="jsonschema not installed: pip install -e '.[test]'")

REPO = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).parent / "golden" / "json_report_structure.json"
REGEN = "PYTEST_TRT_REGEN_GOLDEN=1 python -m pytest -p no:cacheprovider tests/plugin/test_json_report_schema.py"

SUITE = f"""
import pytest
from pytest_trt import AccuracyError

{ENCODER_PREAMBLE}
@pytest.mark.trt(model=ENCODER, precision="fp16", keep_fp32=["*/LayerNorm/*", "op:Softmax"], dims=DIMS,
                 val_range=NORMAL)
def test_layernorm_fp32(trt):
    trt.assert_precision("*/LayerNorm/*", "fp32")
    trt.check(trt.feeds(outliers=OUTLIERS), atol=1e-2)
    trt.ledger()  # a ledger record (no time on emulate: its reason)

@pytest.mark.trt(model=ENCODER, precision="fp16", dims=DIMS, val_range=NORMAL)
def test_all_fp16(trt):
    feeds = trt.feeds(outliers=OUTLIERS)
    trt.locate(feeds)  # a layerwise record
    trt.check(feeds, atol=1e-2)

@pytest.mark.xfail(raises=AccuracyError, strict=True, reason="negative control: FP16 LayerNorm must fail")
@pytest.mark.trt(model=ENCODER, precision="fp16", dims=DIMS, val_range=NORMAL)
def test_negative_control(trt):
    trt.check(trt.feeds(outliers=OUTLIERS), atol=1e-2)
"""

#: Values that depend on the machine, not on the report's schema: their structure is not compared
#: (the schema still checks them). Paths as structure() names them.
MACHINE_DEPENDENT = {
    "session.libraries",      # which libraries are installed (null: not installed)
    "session.gpus",           # empty without a GPU
    "session.gpu_assignment",  # null without --trt-gpus
    "session.fingerprint",    # versions and GPU: null where not installed; git commit: null outside a work tree
}


def _kind(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)) or value in ("inf", "-inf", "nan"):  # non-finite numbers are strings
        return "number"
    if isinstance(value, str):
        return "string"
    raise TypeError(type(value))


def structure(value, path: str = ""):
    """Keys and JSON types, not values: a dict keeps its keys, a list becomes the sorted distinct
    structures of its elements, a scalar its JSON type (the report's "inf"/"nan" strings are numbers)."""
    if path in MACHINE_DEPENDENT:
        return "<machine-dependent>"
    if isinstance(value, dict):
        return {k: structure(v, f"{path}.{k}" if path else k) for k, v in sorted(value.items())}
    if isinstance(value, list):
        distinct = {json.dumps(structure(v, f"{path}[]"), sort_keys=True) for v in value}
        return [json.loads(s) for s in sorted(distinct)]
    return _kind(value)


def schema() -> dict:
    return json.loads(resources.files("pytest_trt.report").joinpath("report.schema.json").read_text("utf-8"))


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> dict:
    """One inner run (a subprocess: a clean interpreter, the plugin as users meet it)."""
    import subprocess
    import sys

    root = tmp_path_factory.mktemp("golden")
    (root / "test_encoder.py").write_text(SUITE, encoding="utf-8")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_XDIST_", "PYTEST_TRT_", "PYTEST_ADDOPTS")) and k != "CUDA_VISIBLE_DEVICES"}
    common = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--trt-backend=emulate",
              f"--trt-cache-dir={root / 'cache'}", "--trt-storage=runs"]
    proc = subprocess.run([*common, "--trt-save=base", "-k", "layernorm_fp32", "test_encoder.py"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = subprocess.run([*common, "--trt-compare-run=base", "--trt-autosave", "--trt-save-outputs",
                           "--trt-report=report.json", "test_encoder.py"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # test_all_fp16 fails
    return json.loads((root / "report.json").read_text(encoding="utf-8"))


def test_the_run_is_the_one_the_golden_file_describes(report):
    outcomes = {t["nodeid"].split("::")[1]: t["outcome"] for t in report["tests"]}
    assert outcomes == {"test_layernorm_fp32": "passed", "test_all_fp16": "failed",
                        "test_negative_control": "xfailed"}
    assert report["summary"]["outcomes"] == {"passed": 1, "failed": 1, "xfailed": 1}
    control = next(t for t in report["tests"] if t["nodeid"].endswith("test_negative_control"))
    assert control["expected_failure"]["verdict"] == "caught"
    assert [p["passed"] for t in report["tests"] for p in t["precision"]] == [True]
    assert [bool(lw["found"]) for t in report["tests"] for lw in t["layerwise"]] == [True]
    history = report["history"]
    assert history["compared_with"].endswith("-base") and history["saved_as"]
    assert [r["nodeid"].split("::")[1] for r in history["drift"]["outputs"]] == ["test_layernorm_fp32"]
    assert all(c["outputs_file"] for t in report["tests"] for c in t["accuracy"])
    assert report["realized"] and all(t["realized"] for t in report["tests"])


def test_report_validates_against_the_schema(report):
    from pytest_trt.report.json_report import SCHEMA_VERSION

    sch = schema()
    jsonschema.Draft202012Validator.check_schema(sch)
    assert sch["properties"]["schema_version"]["const"] == SCHEMA_VERSION == report["schema_version"]
    assert_valid_report(report)


def test_schema_rejects_a_report_that_breaks_it(report):
    """The schema can fail: a missing summary key, a wrong type, another version."""
    from pytest_trt.report.json_report import SCHEMA_VERSION

    validator = jsonschema.Draft202012Validator(schema())
    broken = json.loads(json.dumps(report))
    del broken["summary"]["outputs_failed"]
    broken["tests"][0]["accuracy"] = [{"model": 3}]
    broken["schema_version"] = 1
    messages = [e.message for e in validator.iter_errors(broken)]
    assert any("'outputs_failed' is a required property" in m for m in messages), messages
    assert any("3 is not of type" in m for m in messages), messages
    assert any(f"{SCHEMA_VERSION} was expected" in m for m in messages), messages


def test_parser_entries_validate_against_the_schema():
    """A parser check needs TensorRT-RTX, which the golden run lacks: its entry, as the report
    writes it from the record a ParserCheck makes (glue/fixtures.py / glue/case.py), is validated alone."""
    from pytest_trt.backends.tensorrt.parser_check import ParserCheck
    from pytest_trt.report.json_report import _clean, entry_of_test

    check = ParserCheck("encoder.onnx", "bf16", "TensorRT-RTX 1.7.1.116", "failed", nodes={
        "/ln/Pow": {"op_type": "Pow", "planned": "fp32", "parsed": "bf16", "verdict": "lower"},
        "/fc/MatMul": {"op_type": "MatMul", "planned": "bf16", "parsed": "fp32", "verdict": "higher"},
        "/shape/Cast": {"op_type": "Cast", "planned": "bf16", "parsed": None, "verdict": "ok"}},
        build_seconds=0.5, key="k")
    res = {"nodeid": "t.py::test_p", "outcome": "failed", "message": "PrecisionError: ...",
           "records": [{"kind": "parser", **check.to_json(), "message": check.message(), "explicit": True}]}
    entry = _clean(entry_of_test(res))
    test_schema = schema()["properties"]["tests"]["items"]
    validator = jsonschema.Draft202012Validator({**test_schema, "$defs": schema()["$defs"]})
    assert not [e.message for e in validator.iter_errors(entry)]
    assert entry["parser"][0]["counts"] == {"nodes": 3, "ok": 0, "lower": 1, "higher": 1, "not_in_network": 1}
    entry["parser"][0]["status"] = "mostly fine"
    assert any("is not one of" in e.message for e in validator.iter_errors(entry))


def test_timed_ledger_entries_validate_against_the_schema():
    """A timed ledger needs a GPU, which the golden run lacks: the entry of a ledger built from the kgen
    inspector fixture and SYNTHETIC TensorRT layer times (as tests/unit/test_ledger_tensorrt.py makes
    them) is validated alone, and the schema refuses a time source it does not know."""
    from pytest_trt.layers.report import LayerReport
    from pytest_trt.layers.timing import LayerProfile
    from pytest_trt.ledger import build_ledger
    from pytest_trt.model.load import load_model
    from pytest_trt.plan.policy import PrecisionPolicy
    from pytest_trt.report.json_report import _clean, entry_of_test

    plan = PrecisionPolicy(default="fp16", keep_fp32=("*/LayerNorm/*",)).resolve(
        load_model(REPO / "tests" / "data" / "bert_tiny_opset14.onnx"))
    inspector = json.loads((REPO / "tests" / "data" / "inspector" / "bert_tiny_kgen_trt10.json").read_text())
    samples = {layer["Name"]: [0.01, 0.02, 0.03] for layer in inspector["Layers"]}
    profile = LayerProfile(source="tensorrt", unit="engine layer", warmup=1, iterations=3, samples=samples,
                           end_to_end_ms=[0.5, 0.5, 0.6])
    ledger = build_ledger(plan, LayerReport.from_inspector_json(inspector, plan, typing="strong"), profile)
    res = {"nodeid": "t.py::test_l", "outcome": "passed", "records": [
        {"kind": "ledger", "model": "bert", "policy": "fp16", "backend": "tensorrt", "ledger": ledger.to_json()}]}
    entry = _clean(entry_of_test(res))
    test_schema = schema()["properties"]["tests"]["items"]
    validator = jsonschema.Draft202012Validator({**test_schema, "$defs": schema()["$defs"]})
    assert not [e.message for e in validator.iter_errors(entry)]
    assert entry["ledgers"][0]["timing"]["source"] == "tensorrt" and entry["ledgers"][0]["total_ms"] > 0
    entry["ledgers"][0]["time_source"] = "cpu"
    assert any("is not one of" in e.message for e in validator.iter_errors(entry))


def test_report_structure_matches_the_golden_file(report):
    actual = json.dumps(structure(report), indent=1, sort_keys=True) + "\n"
    if os.environ.get("PYTEST_TRT_REGEN_GOLDEN"):
        GOLDEN.write_text(actual, encoding="utf-8")
        pytest.skip(f"regenerated {GOLDEN.relative_to(REPO)}")
    expected = GOLDEN.read_text(encoding="utf-8")
    if actual != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), actual.splitlines(True),
                                            f"golden {GOLDEN.name}", "this run's report", n=2))
        pytest.fail("the --trt-report key structure changed (keys/types, - golden + now):\n" + diff
                    + "\nIf on purpose: bump SCHEMA_VERSION (pytest_trt/report/json_report.py) and the schema's "
                    "schema_version const, add the changelog entry, update pytest_trt/report/report.schema.json, "
                    f"and regenerate the golden file: {REGEN}", pytrace=False)
