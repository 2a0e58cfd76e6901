"""Typed per-test records: what a trt test leaves behind for the reports.

A trt test's checks append records to the test item (:func:`pytest_trt.glue.activation.item_records`):
an :class:`EngineRecord` per engine used, a :class:`ParserRecord` per parser check, an
:class:`AccuracyRecord` per ``trt.check()``, a :class:`PrecisionRecord` per
``trt.assert_precision()``, a :class:`LayerwiseRecord` per layerwise comparison, a
:class:`LedgerRecord` per ledger and a :class:`BaselineFallbackRecord` per CUDA baseline whose
float nodes ran on the CPU provider, and while runs are saved or compared a :class:`RealizedRecord`
per engine (the precision each node ran in).
Producers (``glue/case.py``, ``glue/fixtures.py``, ``baseline.warn_placement``, ``plots.layerwise_record``)
build them; the reports (terminal summary, JUnit properties, JSON, HTML) read their attributes.

Between processes (a pytest-xdist worker's test report -> the controller) a record travels as
its JSON form, :meth:`Record.to_json` (``{"kind": ..., <fields>}``; optional fields left out
while unset), and comes back with :func:`record_from_json`, which raises :class:`RecordError`
on an unknown kind, a missing key or an unknown key: a schema drift between producer and
reader is an error, never silently missing data. The nested payloads (``CompareResult.to_json()``,
``PrecisionCheck.to_json()``, tensor rows) stay the JSON their producers define. This module
imports nothing heavy: the plugin's load path may import it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

R = TypeVar("R", bound="Record")


class RecordError(ValueError):
    """A record's JSON form does not match its type (unknown kind, missing or unknown key)."""


@dataclass(kw_only=True)
class Record:
    """Base of the per-test records. Fields with a default are optional keys of the JSON form,
    left out while ``None``."""

    kind: ClassVar[str] = ""
    #: how many repeated checks a condensed record stands for (report/condense.py); unset: one
    examples: int | None = None

    def to_json(self) -> dict[str, Any]:
        """``{"kind": ..., field: value, ..., "examples"}`` in field order, ``examples`` last;
        unset optional fields left out."""
        out: dict[str, Any] = {"kind": self.kind}
        for f in _fields_examples_last(self):
            value = getattr(self, f.name)
            if value is None and _optional(f):
                continue
            out[f.name] = value
        return out

    @classmethod
    def from_json(cls: type[R], data: Mapping[str, Any]) -> R:
        """The record of a JSON form; :class:`RecordError` on another kind, a missing or unknown key."""
        if data.get("kind") != cls.kind:
            raise RecordError(f"a {cls.kind!r} record expected, got kind {data.get('kind')!r}")
        known = {f.name: f for f in dataclasses.fields(cls)}
        missing = [name for name, f in known.items() if not _optional(f) and name not in data]
        unknown = [key for key in data if key != "kind" and key not in known]
        if missing or unknown:
            problems = ([f"missing key(s) {', '.join(missing)}"] if missing else []) + (
                [f"unknown key(s) {', '.join(map(str, unknown))}"] if unknown else [])
            raise RecordError(f"{cls.kind} record: {'; '.join(problems)} (known: {', '.join(known)})")
        return cls(**{k: v for k, v in data.items() if k != "kind"})

    @property
    def count(self) -> int:
        """How many checks this record stands for (1 unless condensed)."""
        return int(self.examples or 1)


def _fields_examples_last(record: Record) -> list[dataclasses.Field]:
    found = dataclasses.fields(record)
    return [f for f in found if f.name != "examples"] + [f for f in found if f.name == "examples"]


def _optional(f: dataclasses.Field) -> bool:
    return f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING


@dataclass(kw_only=True)
class EngineRecord(Record):
    """An engine a test used (:class:`~pytest_trt.run.session.BuildEvent`), built or loaded."""

    kind: ClassVar[str] = "engine"
    model: str
    policy: str
    backend: str
    cache_hit: bool
    build_seconds: float
    key: str
    #: the GPU it ran on (``TrtSession.record_gpu``), None on emulate
    gpu: dict[str, Any] | None
    #: ``"suggest"`` / ``"locate"``: built or loaded by trt.suggest() or a layerwise comparison (its layerwise build)
    via: str | None = None
    #: True: the backend's build is a check (``Backend.build_is_a_check``: a real TensorRT builder, which can
    #: reject the network), so a test that only built this engine checked something; unset: it is not
    build_is_a_check: bool | None = None


@dataclass(kw_only=True)
class ParserRecord(Record):
    """A plan put through TensorRT-RTX's parser (``ParserCheck.to_json()`` plus its message)."""

    kind: ClassVar[str] = "parser"
    model: str
    policy: str
    library: str
    status: str
    passed: bool
    how: str
    counts: dict[str, int]
    failures: list[dict[str, Any]]
    promotions: list[dict[str, Any]]
    error: str | None
    cache_hit: bool
    build_seconds: float
    key: str | None
    message: str
    #: True: trt.check_parser() (its own verdict); False or unset: --trt-parser-check
    explicit: bool | None = None

    @classmethod
    def from_check(cls, check: Any, *, explicit: bool | None = None) -> ParserRecord:
        """The record of a :class:`~pytest_trt.backends.tensorrt.parser_check.ParserCheck`."""
        return cls(**check.to_json(), message=check.message(), explicit=explicit)


@dataclass(kw_only=True)
class AccuracyRecord(Record):
    """One ``trt.check()``: the comparison (``CompareResult.to_json()``) and what was compared."""

    kind: ClassVar[str] = "accuracy"
    model: str
    backend: str
    policy: str
    seed: int | None
    #: the reference: ``"fp32"`` or ``"as-written"``
    baseline: str
    gpu: dict[str, Any] | None
    result: dict[str, Any]
    #: ``{output: error_figures(...)}`` of failing float outputs (report/plots.py)
    figures: dict[str, Any] | None = None
    #: what the check compared, for saved runs (:mod:`pytest_trt.history`): ``{"model_sha256", "plan"
    #: (the plan's fingerprint), "feeds_sha256"}``
    fingerprint: dict[str, Any] | None = None
    #: ``--trt-save-outputs``: the ``.npz`` of the engine's outputs and the feeds, ``{"file", "sha256", "size"}``
    #: (the file's name in the saved run's ``outputs/``)
    outputs_file: dict[str, Any] | None = None

    @property
    def passed(self) -> bool:
        return bool(self.result.get("passed"))

    @property
    def precision(self) -> str | None:
        """The precision whose default tolerances applied."""
        return self.result.get("precision")

    @property
    def no_check(self) -> bool:
        """Compared with ``no_check=True``: figures without a tolerance verdict."""
        return bool(self.result.get("no_check"))

    @property
    def outputs(self) -> dict[str, dict[str, Any]]:
        """``{output name: CompareResult output JSON}``, in the model's order."""
        return self.result.get("outputs") or {}

    @property
    def criterion(self) -> dict[str, Any] | None:
        """The criterion the outputs were judged by (``Criterion.to_json()``: per output, every
        tolerance and floor with its level and source); None in a record written before it was kept."""
        return self.result.get("criterion")


@dataclass(kw_only=True)
class PrecisionRecord(Record):
    """One ``trt.assert_precision(pattern, precision)``: its verdict and report.

    ``report`` is a ``PrecisionCheck.to_json()`` (verify/precision.py) or a ``LayerReport.to_json()``;
    ``network`` the whole planned network per scope (``report.rows.network_scopes``).
    ``passed`` unset: the verdict is the report's own.
    """

    kind: ClassVar[str] = "precision"
    pattern: str
    precision: str
    passed: bool | None = None
    report: Any
    network: list[dict[str, Any]]


@dataclass(kw_only=True)
class LayerwiseRecord(Record):
    """A layerwise comparison (:func:`pytest_trt.report.plots.layerwise_record` of a ``Divergence``).

    Tensor rows, in topological order: ``{"tensor", "node", "op_type", "index", "precision",
    "compute", "available", "max_abs", "rel", "jump", "divergent", "nonfinite"}``.
    """

    kind: ClassVar[str] = "layerwise"
    model: str | None
    backend: str | None
    policy: str | None
    seed: int | None
    note: str | None
    threshold: float | None
    jump: float | None
    found: bool | None
    first: dict[str, Any] | None
    tensors: list[dict[str, Any]]


@dataclass(kw_only=True)
class RealizedRecord(Record):
    """Which precision each compute node of an engine really ran in: its layer report, compactly.

    Recorded while the session saves or compares runs (:mod:`pytest_trt.history`: "what changed
    inside"), once per engine (backend and plan) and process with ``nodes``; a later test using the
    same engine records it without (the reports take the map from the first).
    """

    kind: ClassVar[str] = "realized"
    model: str
    model_sha256: str
    #: the plan's fingerprint (PrecisionPlan.fingerprint())
    plan: str
    policy: str
    backend: str
    #: the layer report's source: inspector / network / emulation
    source: str
    #: ``{canonical node name: realized precision}`` of the compute nodes (``NodeObservation.realized``:
    #: fp32/fp16/bf16, ``mixed``, ``unknown`` where the layer report cannot show it; as the ledger reads it)
    nodes: dict[str, str | None] | None = None

    @property
    def engine(self) -> str:
        """``<backend>:<plan fingerprint>``: the engine this map belongs to."""
        return f"{self.backend}:{self.plan}"


@dataclass(kw_only=True)
class BaselineFallbackRecord(Record):
    """A CUDA baseline whose float nodes ran on ONNX Runtime's CPU provider (``baseline.warn_placement``)."""

    kind: ClassVar[str] = "baseline_fallback"
    model: str
    provider: str
    #: ``[[node name, op type], ...]``
    nodes: list[list[str]]


@dataclass(kw_only=True)
class LedgerRecord(Record):
    """A ledger (``trt.ledger()``, or ``--trt-ledger`` after the test body): ``Ledger.to_json()``.

    ``auto``: made by ``--trt-ledger`` (True) or by the test itself (unset)."""

    kind: ClassVar[str] = "ledger"
    model: str
    policy: str
    backend: str
    ledger: dict[str, Any]
    auto: bool | None = None


#: every record type by its kind
RECORD_TYPES: dict[str, type[Record]] = {cls.kind: cls for cls in (
    EngineRecord, ParserRecord, AccuracyRecord, PrecisionRecord, LayerwiseRecord, BaselineFallbackRecord,
    LedgerRecord, RealizedRecord)}


def record_from_json(data: Mapping[str, Any]) -> Record:
    """The typed record of a JSON form (dispatch on ``kind``); :class:`RecordError` when it does not fit."""
    if not isinstance(data, Mapping):
        raise RecordError(f"a record must be a JSON object with a 'kind', got {data!r}")
    cls = RECORD_TYPES.get(str(data.get("kind")))
    if cls is None:
        raise RecordError(f"unknown record kind {data.get('kind')!r} (known: {', '.join(RECORD_TYPES)})")
    return cls.from_json(data)


def as_record(value: Record | Mapping[str, Any]) -> Record:
    """A record as is, or one read from its JSON form (:func:`record_from_json`)."""
    return value if isinstance(value, Record) else record_from_json(value)


__all__ = ["AccuracyRecord", "BaselineFallbackRecord", "EngineRecord", "LayerwiseRecord", "LedgerRecord",
           "ParserRecord", "PrecisionRecord", "RECORD_TYPES", "RealizedRecord", "Record", "RecordError", "as_record",
           "record_from_json"]
