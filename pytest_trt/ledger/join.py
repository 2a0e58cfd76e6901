"""Building a :class:`~pytest_trt.ledger.model.Ledger`: plan x layer report x timing profile.

The joins, each by name, none by position:

* plan node -> engine layers: the layer report's carriers (``NodeObservation.layers``: the
  layers whose ``Metadata`` lists the node, kgen kernels included; for a
  ``{ForeignNode[first...last]}`` region without metadata, the region);
* engine layer -> time: the profile's rows are named like the inspector's layers
  (``IProfiler.report_layer_time(layer_name, ...)``); a profile row no layer has is kept as a
  unit of its own (``unmatched``), so no measured time disappears;
* ONNX Runtime: the profile names ONNX nodes of the strongly typed realization: the model's
  nodes (their own rows) and the Casts the realization inserted (rows of origin
  ``realization``).

A layer's time is never divided among the nodes it carries: each of them shows the layer's
time with ``shared`` set and ``unit_nodes`` saying how many share it; the roll-ups count each
unit once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.jsonsafe import json_number
from ..layers.inspector import myelin_region
from .labels import ROOT_SCOPE, common_scope, node_label
from .model import BUCKETS, Ledger, LedgerRow, LedgerUnit

if TYPE_CHECKING:  # pragma: no cover
    from ..layers.report import LayerReport, NodeObservation
    from ..layers.timing import LayerProfile
    from ..plan import PrecisionPlan

__all__ = ["COLLAPSE_SHARE", "build_ledger"]

#: a unit (or a Myelin region) carrying at least this share of the compute nodes is a collapse
COLLAPSE_SHARE = 0.5


def _carrying_layers(obs: NodeObservation | None) -> list[str]:
    if obs is None:
        return []
    if obs.layers:
        return list(obs.layers)
    return [p for p in (obs.layer or "").split(" | ") if p]


def _bucket(precisions: set) -> str:
    """The roll-up bucket of a unit whose nodes have these precisions (None = fixed nodes)."""
    floats = {p for p in precisions if p is not None}
    if len(floats) > 1:
        return "mixed"
    if floats:
        return next(iter(floats))
    return "fixed" if precisions else "other"


class _Join:
    """One ledger's joins (kept together so each step stays small)."""

    def __init__(self, plan: PrecisionPlan, report: LayerReport, profile: LayerProfile | None):
        self.plan, self.report, self.profile = plan, report, profile
        self.model = plan.model
        self.nodes = [n for n, d in plan.nodes.items() if d.op_type != "Constant"]
        self.node_set = set(self.nodes)
        self.by_node: dict[str, list[str]] = {}
        self.units: dict[str, LedgerUnit] = {}

    # -- units --------------------------------------------------------------------------
    def layer_units(self) -> None:
        """TensorRT (or a report with layers): one unit per engine layer, in engine order."""
        for layer in self.report.layers:
            unit = self.units.setdefault(layer.name, LedgerUnit(layer.name, [], layer_type=layer.layer_type,
                                                                myelin=layer.myelin))
            unit.other_nodes = [n for n in layer.onnx_nodes if n not in self.node_set and n not in self.plan.nodes]
            if layer.myelin and layer.foreign_range is None:
                unit.region = myelin_region(layer.name)
        for name in self.nodes:
            layers = _carrying_layers(self.report.nodes.get(name))
            self.by_node[name] = layers
            for layer_name in layers:
                unit = self.units.setdefault(layer_name, LedgerUnit(layer_name, []))
                unit.nodes.append(name)
        if self.profile is not None:
            for name in self.profile.samples:
                if name not in self.units:
                    self.units[name] = LedgerUnit(name, [], unmatched=True, origin="engine")

    def node_units(self) -> None:
        """ONNX Runtime: one unit per node the profile timed (the model's and the realization's)."""
        assert self.profile is not None
        for name in self.profile.samples:
            unit = LedgerUnit(name, [name] if name in self.node_set else [], layer_type=self.profile_op(name),
                              provider=self.profile.providers.get(name) or None)
            if name not in self.node_set:
                unit.other_nodes = [name]
                unit.origin = "runtime" if name in self.profile.runtime_nodes else "realization"
            self.units[name] = unit
        for name in self.nodes:
            self.by_node[name] = [name] if name in self.units else []

    def profile_op(self, name: str) -> str | None:
        assert self.profile is not None
        return self.profile.op_types.get(name) or None

    def time_units(self) -> None:
        for unit in self.units.values():
            if not unit.nodes and unit.origin == "model":
                unit.origin = "engine"
            decided = {self.plan.nodes[n].precision for n in unit.nodes}
            unit.bucket = _bucket(decided) if unit.nodes else "other"
            realized = {self.realized(n) for n in unit.nodes}
            unit.realized_bucket = ("unknown" if "unknown" in realized else _bucket(realized)) if unit.nodes else "other"
            labels = [node_label(self.model, n).scope for n in unit.nodes]
            if not labels and unit.other_nodes:
                labels = [node_label(self.model, n).scope for n in unit.other_nodes]
            unit.scope = common_scope(labels) if labels else ROOT_SCOPE
            if self.profile is not None:
                stats = self.profile.stats(unit.name)
                if stats is not None:
                    unit.time_ms, unit.stats = stats.median, stats.to_json()

    def realized(self, name: str) -> str | None:
        """The realized precision of a compute node (:attr:`NodeObservation.realized`); None for a node
        the report does not have."""
        obs = self.report.nodes.get(name)
        return None if obs is None else obs.realized

    # -- rows ---------------------------------------------------------------------------
    def rows(self, total: float | None) -> list[LedgerRow]:
        rows = [self.node_row(name, total) for name in self.nodes]
        for unit in self.units.values():
            if not unit.nodes:
                rows.append(self.unit_row(unit, total))
        return rows

    def node_row(self, name: str, total: float | None) -> LedgerRow:
        d = self.plan.nodes[name]
        obs = self.report.nodes.get(name)
        label = node_label(self.model, name)
        units = [self.units[u] for u in self.by_node.get(name, []) if u in self.units]
        row = LedgerRow(node=name, path=label.path, scope=label.scope, op_type=d.op_type,
                        module_class=label.module_class, declared=d.precision, rule=d.rule,
                        units=[u.name for u in units], unit_nodes=max((len(u.nodes) for u in units), default=0))
        if obs is not None:
            row.realized = obs.observed if obs.status != "unverifiable" else None
            row.evidence, row.status = obs.evidence, obs.status
        row.shared = row.unit_nodes > 1
        _time_row(row, [u for u in units if u.time_ms is not None], total)
        if self.profile is not None and self.profile.unit == "ONNX node":
            row.provider = self.profile.providers.get(name) or None
            row.timed_dtypes = list(self.profile.dtypes.get(name, ()))
        return row

    def unit_row(self, unit: LedgerUnit, total: float | None) -> LedgerRow:
        """A row for a unit carrying no node of the model (its time must show somewhere)."""
        onnx_unit = self.profile is not None and self.profile.unit == "ONNX node"
        name = unit.other_nodes[0] if onnx_unit and unit.other_nodes else None
        path = name or unit.name
        row = LedgerRow(node=name, path=path, scope=unit.scope, op_type=unit.layer_type,
                        origin=unit.origin, units=[unit.name], unit_nodes=0,
                        time_ms=unit.time_ms, provider=unit.provider)
        if unit.time_ms is not None and total:
            row.share = unit.time_ms / total
        if unit.stats:
            row.spread = unit.stats.get("spread")
        if onnx_unit and self.profile is not None:
            row.timed_dtypes = list(self.profile.dtypes.get(unit.name, ()))
        return row

    # -- roll-ups -----------------------------------------------------------------------
    def rollup(self, key: str, total: float | None) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for unit in self.units.values():
            bucket = getattr(unit, key)
            entry = out.setdefault(bucket, {"units": 0, "nodes": 0, "time_ms": 0.0 if total is not None else None})
            entry["units"] += 1
            entry["nodes"] += len(unit.nodes)
            if total is not None and unit.time_ms is not None:
                entry["time_ms"] += unit.time_ms
        if key == "bucket":  # nodes carried by no unit still count for their declared precision
            for name in self.nodes:
                if not self.by_node.get(name):
                    entry = out.setdefault(_bucket({self.plan.nodes[name].precision}),
                                           {"units": 0, "nodes": 0, "time_ms": 0.0 if total is not None else None})
                    entry["nodes"] += 1
        for entry in out.values():
            entry["share"] = json_number(entry["time_ms"] / total, 6) if total else None
            entry["time_ms"] = json_number(entry["time_ms"], 6)
        return {b: out[b] for b in BUCKETS if b in out}

    def scopes(self, total: float | None) -> list[dict[str, Any]]:
        """Per scope, in graph order: its nodes, the time of the units whose nodes all lie in it
        (``time_ms``), and with its sub-scopes (``inclusive_ms``)."""
        order: dict[str, dict[str, Any]] = {}
        for name in self.nodes:
            entry = _scope_entry(order, node_label(self.model, name).scope)
            entry["nodes"] += 1
            key = self.plan.nodes[name].precision or "fixed"
            entry["declared"][key] = entry["declared"].get(key, 0) + 1
        ran: dict[str, set] = {}
        inclusive: dict[str, float] = {}
        for unit in self.units.values():
            entry = _scope_entry(order, unit.scope)
            if unit.bucket not in ("other", "fixed"):
                ran.setdefault(unit.scope, set()).add(unit.bucket)
            if unit.time_ms is not None:
                entry["time_ms"] = (entry["time_ms"] or 0.0) + unit.time_ms
                for scope in _ancestors(unit.scope):
                    inclusive[scope] = inclusive.get(scope, 0.0) + unit.time_ms
        for entry in order.values():
            _finish_scope(entry, inclusive.get(entry["scope"]), ran.get(entry["scope"]), total)
        return list(order.values())

    def collapse(self, total: float | None) -> list[str]:
        """One line per unit, and per Myelin region of kgen kernels, carrying most of the network."""
        compute = sum(1 for n in self.nodes if self.plan.nodes[n].kind == "compute")
        if compute < 2:
            return []
        lines = []

        def share_text(ms):
            return f", {ms / total:.0%} of the time" if total and ms is not None else ""

        for unit in self.units.values():
            carried = sum(1 for n in unit.nodes if self.plan.nodes[n].kind == "compute")
            if carried >= 2 and carried >= COLLAPSE_SHARE * compute:
                lines.append(f"{carried:,} ONNX nodes in 1 engine layer ({unit.name}){share_text(unit.time_ms)}")
        regions: dict[str, list[LedgerUnit]] = {}
        for unit in self.units.values():
            if unit.region:
                regions.setdefault(unit.region, []).append(unit)
        for region, units in regions.items():
            nodes = {n for u in units for n in u.nodes if self.plan.nodes[n].kind == "compute"}
            if len(units) > 1 and len(nodes) >= COLLAPSE_SHARE * compute:
                times = [u.time_ms for u in units if u.time_ms is not None]
                lines.append(f"Myelin region {region}: {len(nodes):,} ONNX nodes in {len(units)} engine layers "
                             f"(kgen/gemm kernels of the detailed build){share_text(sum(times) if times else None)}")
        return lines


def _time_row(row: LedgerRow, timed: list[LedgerUnit], total: float | None) -> None:
    """A node's time: the sum of its carrying units' medians (each shared with the unit's other nodes)."""
    if not timed:
        return
    row.time_ms = sum(u.time_ms for u in timed if u.time_ms is not None)
    row.share = row.time_ms / total if total else None
    spreads = [u.stats["spread"] for u in timed if u.stats and isinstance(u.stats.get("spread"), float)]
    row.spread = max(spreads) if spreads else None


def _scope_entry(order: dict[str, dict[str, Any]], scope: str) -> dict[str, Any]:
    return order.setdefault(scope, {"scope": scope, "nodes": 0, "declared": {}, "time_ms": None,
                                    "inclusive_ms": None, "share": None})


def _ancestors(scope: str) -> list[str]:
    """``/a/b`` -> ``["/a/b", "/a", "/"]``: the scopes whose inclusive time a unit there counts for."""
    parts = [p for p in scope.split("/") if p]
    return ["/" + "/".join(parts[:i]) if i else ROOT_SCOPE for i in range(len(parts), -1, -1)]


def _finish_scope(entry: dict[str, Any], inclusive: float | None, ran: set | None, total: float | None) -> None:
    """Shares and JSON numbers of one scope; its precision is that of what ran there (its units': a kernel
    fusing the scope's FP32 nodes with others is mixed), else the declared precision of its nodes."""
    if inclusive is not None:
        entry["inclusive_ms"] = json_number(inclusive, 6)
    if entry["time_ms"] is not None:
        entry["share"] = json_number(entry["time_ms"] / total, 6) if total else None
        entry["time_ms"] = json_number(entry["time_ms"], 6)
    floats = ran or {k for k in entry["declared"] if k != "fixed"}
    entry["precision"] = (next(iter(floats)) if len(floats) == 1 else "mixed" if floats
                          else ("fixed" if entry["declared"] else "other"))


def _profile_notes(ledger: Ledger, profile: LayerProfile) -> None:
    """The profile's summary first, and the units no inspector layer has."""
    unmatched = [u.name for u in ledger.units if u.unmatched]
    if unmatched:
        ledger.notes.append(f"{len(unmatched)} timed unit(s) match no layer of the engine inspector (kept as rows "
                            f"of their own): {', '.join(unmatched[:3])}{', ...' if len(unmatched) > 3 else ''}")
    ledger.notes.insert(0, profile.summary())


def build_ledger(plan: PrecisionPlan, report: LayerReport, profile: LayerProfile | None = None, *,
                 time_reason: str | None = None, backend: str | None = None) -> Ledger:
    """The ledger of ``plan`` realized as ``report`` describes, timed by ``profile``.

    Without ``profile`` the time column is empty and ``time_reason`` says why (required then:
    a ledger never has an empty time column without its reason).
    """
    if profile is None and not time_reason:
        raise ValueError("build_ledger: a ledger without a timing profile needs its time_reason")
    join = _Join(plan, report.checked(), profile)  # a backend's unknown evidence is an error, never a row
    if profile is not None and profile.unit == "ONNX node":
        join.node_units()
    else:
        join.layer_units()
    join.time_units()
    total = profile.total_ms() if profile is not None else None
    ledger = Ledger(
        model=plan.model.label, policy=plan.policy.describe(), backend=backend or report.backend,
        typing=report.typing, layer_source=report.source, low_precision=plan.low_precision,
        rows=join.rows(total), units=list(join.units.values()),
        unit=profile.unit if profile is not None else ("engine layer" if report.layers else "ONNX node"),
        time_source=profile.source if profile is not None else None,
        time_label=profile.label if profile is not None else None,
        time_reason=None if profile is not None else time_reason,
        timing=profile.to_json() if profile is not None else None,
        constants=sum(1 for d in plan.nodes.values() if d.op_type == "Constant"),
        notes=list(report.notes) + (list(profile.notes) if profile is not None else []),
    )
    ledger.precisions = join.rollup("bucket", total)
    ledger.realized_precisions = join.rollup("realized_bucket", total)
    ledger.scopes = join.scopes(total)
    ledger.collapse = join.collapse(total)
    if profile is not None:
        _profile_notes(ledger, profile)
    return ledger
