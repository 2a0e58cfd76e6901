"""Typed report records (pytest_trt/core/records.py): their JSON form round-trips, and a JSON form
that drifted from the type (unknown kind, missing or unknown key) is an error, not missing data."""

from __future__ import annotations

import json

import pytest

from pytest_trt.core.records import (
    RECORD_TYPES,
    AccuracyRecord,
    BaselineFallbackRecord,
    EngineRecord,
    ParserRecord,
    PrecisionRecord,
    RecordError,
    as_record,
    record_from_json,
)
from pytest_trt.report.condense import condense_records

ENGINE = EngineRecord(model="m.onnx", policy="fp16", backend="emulate", cache_hit=False, build_seconds=0.5, key="k",
                      gpu=None)


def test_every_kind_the_reports_read_has_a_type():
    assert set(RECORD_TYPES) == {"engine", "parser", "accuracy", "precision", "layerwise", "baseline_fallback",
                                 "ledger", "realized"}


def test_ledger_record_round_trips_and_is_never_condensed():
    from pytest_trt.core.records import LedgerRecord

    rec = LedgerRecord(model="m.onnx", policy="fp16", backend="emulate", ledger={"rows": [], "time_reason": "why"})
    assert "auto" not in rec.to_json() and record_from_json(json.loads(json.dumps(rec.to_json()))) == rec
    auto = LedgerRecord(**{**rec.__dict__, "auto": True})
    assert record_from_json(auto.to_json()).auto is True
    assert condense_records([rec, auto]) == [rec, auto]  # two ledgers of a test are two ledgers


def test_json_form_round_trips_and_leaves_unset_optional_keys_out():
    data = ENGINE.to_json()
    assert data == {"kind": "engine", "model": "m.onnx", "policy": "fp16", "backend": "emulate", "cache_hit": False,
                    "build_seconds": 0.5, "key": "k", "gpu": None}  # no "via", no "examples"
    assert record_from_json(json.loads(json.dumps(data))) == ENGINE
    via = EngineRecord(**{**ENGINE.__dict__, "via": "suggest", "examples": 3})
    assert list(via.to_json())[-2:] == ["via", "examples"]  # examples last, as condensing always wrote it
    assert record_from_json(via.to_json()) == via


@pytest.mark.parametrize("data, message", [
    ({"kind": "engin", "model": "m"}, "unknown record kind 'engin'"),
    ({k: v for k, v in ENGINE.to_json().items() if k != "gpu"}, "engine record: missing key(s) gpu"),
    ({**ENGINE.to_json(), "cache": True}, "engine record: unknown key(s) cache"),
    (["engine"], "must be a JSON object"),
])
def test_a_drifted_json_form_is_an_error_naming_the_key(data, message):
    with pytest.raises(RecordError, match=message.replace("(", r"\(").replace(")", r"\)")):
        record_from_json(data)


def test_as_record_reads_json_forms_and_keeps_records():
    assert as_record(ENGINE) is ENGINE
    fallback = {"kind": "baseline_fallback", "model": "m.onnx", "provider": "cuda", "nodes": [["a", "Det"]]}
    assert as_record(fallback) == BaselineFallbackRecord(model="m.onnx", provider="cuda", nodes=[["a", "Det"]])


def test_optional_keys_stay_optional():
    rec = PrecisionRecord.from_json({"kind": "precision", "pattern": "*", "precision": "fp32", "report": {},
                                     "network": []})
    assert rec.passed is None and rec.count == 1


def test_parser_record_of_a_parser_check():
    from pytest_trt.backends.tensorrt.parser_check import ParserCheck

    check = ParserCheck("encoder.onnx", "bf16", "TensorRT-RTX 1.7.1.116", "passed", nodes={}, build_seconds=0.5, key="k")
    rec = ParserRecord.from_check(check, explicit=True)
    assert rec.to_json() == {"kind": "parser", **check.to_json(), "message": check.message(), "explicit": True}
    assert "explicit" not in ParserRecord.from_check(check).to_json()


def test_condensing_counts_repeated_checks_and_keeps_the_worst():
    def check(passed):
        out = {"passed": passed, "kind": "float", "mismatched": 0 if passed else 3, "atol": 1e-3, "rtol": 1e-3,
               "max_abs": 1e-4 if passed else 1.0, "max_rel": 1e-4 if passed else 1.0}
        return AccuracyRecord(model="m", backend="emulate", policy="fp16", seed=0, baseline="fp32", gpu=None,
                              result={"passed": passed, "outputs": {"y": out}})

    kept = condense_records([check(True), check(False), check(True), ENGINE, ENGINE.to_json()])
    assert [r.kind for r in kept] == ["accuracy", "engine"]
    assert kept[0].passed is False and kept[0].examples == 3
    assert kept[1].examples == 2
