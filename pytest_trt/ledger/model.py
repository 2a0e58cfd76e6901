"""The ledger's records: one row per ONNX node, one unit per timed engine layer, and the roll-ups.

A :class:`Ledger` joins, per ONNX node of the model, what was *declared* (the plan's precision
and the rule that decided it), what was *realized* (the engine's layer report: precision and
evidence, observed / inferred / unverifiable / emulated) and how long it took (a
:class:`~pytest_trt.layers.timing.LayerProfile`, or the reason there is no time). Built by
:func:`pytest_trt.ledger.join.build_ledger`; rendered by :mod:`pytest_trt.ledger.render` and the
reports, which all read its JSON form (:meth:`Ledger.to_json`), the one that also travels
between pytest-xdist workers.

Words:

* **unit**: what a timing source times. TensorRT: an *engine layer* (a ``__myl_...`` kgen
  kernel may carry many ONNX nodes, which then share its one time: ``shared``); ONNX Runtime
  CUDA: an *ONNX node* of the strongly typed realization (the model's nodes and the Casts the
  realization inserted). A unit carrying no node of the model (a reformat, a realization
  Cast) gets a row of its own (``origin`` ``engine`` / ``realization``), so the rows' time
  adds up to the profile's.
* **rows**: every node of the model except ``Constant`` nodes, which hold data and compute
  nothing (TensorRT makes them CONSTANT layers without metadata; ONNX Runtime folds them into
  initializers before running; the dynamo exporter writes none): they are counted
  (``constants``), not listed.
* **roll-ups**: a unit's time goes to the innermost scope holding all of its nodes
  (``scopes``: a layer fusing a whole network lands on ``/``) and to the declared precision
  of its nodes (``precisions``: ``mixed`` when they differ; ``fixed`` for shape/index math;
  ``other`` for units carrying no node of the model). In a low-precision plan the ``fp32``
  bucket is the time spent in FP32 islands. By realized precision, a unit carrying a node whose
  precision the engine cannot show (status ``unverifiable``) is ``unknown``: a fused kernel's
  boundary dtype is not the precision of the nodes inside it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..core.jsonsafe import json_number
from .render import ledger_text

__all__ = ["BUCKETS", "Ledger", "LedgerRow", "LedgerUnit"]

#: the precision buckets of the roll-ups, in display order (``unknown``: realized precision not shown)
BUCKETS = ("fp32", "fp16", "bf16", "mixed", "fixed", "unknown", "other")


@dataclass
class LedgerUnit:
    """One timed unit (engine layer or ONNX node) and the nodes of the model it carries."""

    name: str
    #: the model's nodes it carries (plan nodes, Constants excluded)
    nodes: list[str]
    #: other ONNX names in its metadata (Casts of the realization)
    other_nodes: list[str] = field(default_factory=list)
    layer_type: str | None = None
    myelin: bool = False
    #: ``myl<N>`` for kgen kernels of one Myelin region, else None
    region: str | None = None
    scope: str = "/"
    bucket: str = "other"
    realized_bucket: str = "other"
    time_ms: float | None = None
    stats: dict[str, Any] | None = None
    #: ONNX Runtime: the provider that ran it (a CPU provider node on a CUDA run is flagged)
    provider: str | None = None
    #: a profile row whose name no inspector layer has (TensorRT)
    unmatched: bool = False
    #: ``model`` (carries nodes of the model), ``engine`` (a TensorRT layer carrying none: reformat,
    #: realization Cast), ``realization`` (a Cast the realization inserted, ONNX Runtime), ``runtime``
    #: (a node ONNX Runtime inserted itself)
    origin: str = "model"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "nodes": list(self.nodes), "other_nodes": list(self.other_nodes),
                "layer_type": self.layer_type, "myelin": self.myelin, "region": self.region, "scope": self.scope,
                "bucket": self.bucket, "realized_bucket": self.realized_bucket,
                "time_ms": json_number(self.time_ms, 6), "stats": self.stats, "provider": self.provider,
                "unmatched": self.unmatched, "origin": self.origin}


@dataclass
class LedgerRow:
    """One ONNX node: declared, realized, where it ran and how long it took.

    ``origin``: ``model`` (a node of the model), ``realization`` (a Cast the strongly typed
    realization inserted, timed on ONNX Runtime), ``runtime`` (a node ONNX Runtime inserted
    itself), ``engine`` (an engine layer carrying no node of the model: a reformat or a
    realization Cast, TensorRT). ``units``: the engine layers
    (TensorRT) or the node itself (ONNX Runtime) that carry it; ``unit_nodes``: how many nodes
    of the model share that unit (the largest, when several carry it); ``shared``: its time is
    its unit's, shared with those nodes (not divided among them).
    """

    node: str | None
    path: str
    scope: str
    op_type: str | None
    origin: str = "model"
    module_class: str | None = None
    declared: str | None = None
    rule: str | None = None
    realized: str | None = None
    evidence: str | None = None
    status: str | None = None
    units: list[str] = field(default_factory=list)
    unit_nodes: int = 0
    time_ms: float | None = None
    share: float | None = None
    spread: float | None = None
    shared: bool = False
    provider: str | None = None
    timed_dtypes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "path": self.path, "scope": self.scope, "module_class": self.module_class,
                "op_type": self.op_type, "origin": self.origin, "declared": self.declared, "rule": self.rule,
                "realized": self.realized, "evidence": self.evidence, "status": self.status,
                "units": list(self.units), "unit_nodes": self.unit_nodes, "time_ms": json_number(self.time_ms, 6),
                "share": json_number(self.share, 6), "spread": json_number(self.spread, 4), "shared": self.shared,
                "provider": self.provider, "timed_dtypes": list(self.timed_dtypes)}


@dataclass
class Ledger:
    """Per ONNX node: declared precision and rule, realized precision and evidence, time.

    ``time_source`` / ``time_label``: the timing source (``tensorrt``, ``onnxruntime-cuda``) and
    how reports name it, None when there is no time; ``time_reason`` then says why (e.g. "CPU
    emulation computes everything in FP32: no GPU time"). ``unit``: ``engine layer`` or
    ``ONNX node``. ``collapse``: one line per engine layer or Myelin region carrying most of
    the network ("11,329 ONNX nodes in 1 engine layer, 98% of the time").
    """

    model: str
    policy: str
    backend: str
    typing: str
    layer_source: str
    low_precision: str | None
    rows: list[LedgerRow]
    units: list[LedgerUnit]
    unit: str = "engine layer"
    time_source: str | None = None
    time_label: str | None = None
    time_reason: str | None = None
    timing: dict[str, Any] | None = None
    constants: int = 0
    collapse: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    scopes: list[dict[str, Any]] = field(default_factory=list)
    precisions: dict[str, dict[str, Any]] = field(default_factory=dict)
    realized_precisions: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def timed(self) -> bool:
        """True when the rows carry measured GPU time."""
        return self.time_source is not None

    def total_ms(self) -> float | None:
        """The sum of the units' median times (None without time)."""
        if not self.timed:
            return None
        return sum(u.time_ms for u in self.units if u.time_ms is not None)

    def row(self, node: str) -> LedgerRow:
        """The row of an ONNX node (KeyError naming it when the ledger has none)."""
        for r in self.rows:
            if r.node == node:
                return r
        raise KeyError(f"no ledger row for node {node!r}")

    def fp32_island_share(self) -> float | None:
        """The share of the time spent in nodes declared FP32 in a low-precision plan (None without time
        or without a low precision)."""
        if not self.timed or self.low_precision is None:
            return None
        return (self.precisions.get("fp32") or {}).get("share")

    def to_json(self) -> dict[str, Any]:
        """The ledger as JSON (what the reports, the CLI's ``--json`` and records carry)."""
        return {
            "model": self.model, "policy": self.policy, "backend": self.backend, "typing": self.typing,
            "layer_source": self.layer_source, "low_precision": self.low_precision, "unit": self.unit,
            "time_source": self.time_source, "time_label": self.time_label, "time_reason": self.time_reason,
            "timing": self.timing, "total_ms": json_number(self.total_ms(), 6), "constants": self.constants,
            "collapse": list(self.collapse), "notes": list(self.notes),
            "precisions": self.precisions, "realized_precisions": self.realized_precisions,
            "scopes": self.scopes, "units": [u.to_json() for u in self.units],
            "rows": [r.to_json() for r in self.rows],
        }

    def table(self, *, top: int | None = None) -> str:
        """The ledger as text (:func:`pytest_trt.ledger.render.ledger_text`)."""
        return ledger_text(self.to_json(), top=top)

    def __str__(self) -> str:
        return self.table()
