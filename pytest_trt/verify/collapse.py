"""Myelin collapse: did the engine fold the network into a few opaque layers?

:func:`assert_no_collapse` (documented with the other verifications in
:mod:`pytest_trt.verify.precision`, which re-exports it) reads a :class:`~pytest_trt.layers.report.LayerReport`
after the build: compute nodes against engine layers, and the share of the compute nodes the
largest Myelin layer carries. Inside such layers per-node precision cannot be seen and
weak-typing constraints are not honoured (NVIDIA/TensorRT #4157), so a collapsed engine makes
every per-node precision verdict weaker.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

from ..errors import PrecisionError, UsageError
from ..layers.inspector import myelin_region
from ..layers.report import LayerReport, engine_layers

__all__ = ["DEFAULT_MAX_MYELIN_SHARE", "DEFAULT_NODES_PER_LAYER", "CollapseCheck", "NotObservableWarning",
           "assert_no_collapse", "myelin_region", "shorten"]

DEFAULT_NODES_PER_LAYER = 50
DEFAULT_MAX_MYELIN_SHARE = 0.5


class NotObservableWarning(UserWarning):
    """A verification could not observe what it checks on this backend (e.g. fusion on ``emulate``)."""


def shorten(text: str, width: int = 90) -> str:
    """``text`` cut in the middle to ``width`` characters (layer names differ at both ends)."""
    return text if len(text) <= width else text[: width // 2 - 2] + " ... " + text[-(width // 2 - 3):]


# --------------------------------------------------------------------------------------
# assert_no_collapse
# --------------------------------------------------------------------------------------
@dataclass
class CollapseCheck:
    """Figures of :func:`assert_no_collapse`. ``checked=False`` when the backend cannot observe fusion."""

    model: str
    backend: str
    source: str
    checked: bool
    compute_nodes: int
    engine_layers: int
    myelin_layers: int
    myelin_nodes: int
    regions: list[dict[str, Any]]
    largest: dict[str, Any] | None
    min_layers: int
    max_myelin_share: float
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.reasons

    @property
    def myelin_share(self) -> float:
        return self.largest["share"] if self.largest else 0.0

    def message(self) -> str:
        if not self.checked:
            return f"assert_no_collapse: not checked on {self.model} ({self.backend}): " + "; ".join(self.notes)
        head = "failed" if self.reasons else "passed"
        lines = [f"assert_no_collapse {head}: {self.model} on {self.backend}: {self.compute_nodes} ONNX compute "
                 f"nodes in {self.engine_layers} engine layer(s) (min {self.min_layers}); {self.myelin_nodes} "
                 f"node(s) in {self.myelin_layers} Myelin layer(s) of {len(self.regions)} region(s)"]
        if self.largest:
            lg = self.largest
            lines.append(f"  largest Myelin layer: {shorten(lg['layer'])} (region {shorten(lg['region'])}) carries "
                         f"{lg['nodes']} node(s) = {lg['share']:.0%} of compute nodes (max {self.max_myelin_share:.0%})"
                         + (" [approximate: ForeignNode range]" if lg.get("approximate") else ""))
        lines.extend(f"  - {r}" for r in self.reasons)
        if self.reasons:
            lines.append("  per-node precision inside such layers cannot be verified and weak-typing constraints are "
                         "not honoured there; use strong typing, split the model, or mark island outputs as network "
                         "outputs; loosen with min_layers= / max_myelin_share= if this is expected")
        lines.extend(f"  note: {n}" for n in self.notes)
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {"kind": "collapse_check", "model": self.model, "backend": self.backend, "source": self.source,
                "checked": self.checked, "passed": self.passed, "compute_nodes": self.compute_nodes,
                "engine_layers": self.engine_layers, "myelin_layers": self.myelin_layers,
                "myelin_nodes": self.myelin_nodes, "regions": self.regions, "largest": self.largest,
                "min_layers": self.min_layers, "max_myelin_share": self.max_myelin_share,
                "reasons": list(self.reasons), "notes": list(self.notes)}

    def __str__(self) -> str:
        return self.message()


def _layer_nodes(layer, order: list[str], compute: set[str]) -> tuple[set[str], bool]:
    """Compute nodes a layer carries; a ForeignNode without metadata spans ``[first...last]`` in graph order."""
    nodes = {n for n in layer.onnx_nodes if n in compute}
    if nodes or layer.foreign_range is None:
        return nodes, False
    first, last = layer.foreign_range
    if first in order and last in order:
        i, j = sorted((order.index(first), order.index(last)))
        return {n for n in order[i:j + 1] if n in compute}, True
    return set(), True


def _myelin_regions(report: LayerReport, order: list[str],
                    compute: set[str]) -> tuple[list[dict[str, Any]], dict[str, Any] | None, set[str], int]:
    """``(regions, largest layer, nodes in Myelin, Myelin layers)`` of a report, regions largest first."""
    regions: dict[str | None, dict[str, Any]] = {}
    largest: dict[str, Any] | None = None
    myelin_nodes: set[str] = set()
    n_myelin = 0
    n_compute = len(compute)
    for layer in report.layers:
        if not layer.myelin:
            continue
        n_myelin += 1
        nodes, approx = _layer_nodes(layer, order, compute)
        myelin_nodes |= nodes
        region = myelin_region(layer.name)  # None only for a layer without a name
        r = regions.setdefault(region, {"region": region, "layers": 0, "nodes": set()})
        r["layers"] += 1
        r["nodes"] |= nodes
        share = len(nodes) / n_compute if n_compute else 0.0
        if largest is None or len(nodes) > largest["nodes"]:
            largest = {"layer": layer.name, "region": region, "nodes": len(nodes), "share": round(share, 4),
                       "approximate": approx}
    region_list = [{"region": r["region"], "layers": r["layers"], "nodes": len(r["nodes"])}
                   for r in sorted(regions.values(), key=lambda r: -len(r["nodes"]))]
    return region_list, largest, myelin_nodes, n_myelin


def assert_no_collapse(engine_or_report, *, min_layers: int | None = None,
                       max_myelin_share: float | None = None) -> CollapseCheck:
    """Fail (PrecisionError) when the engine folded the network into a few Myelin layers.

    See :mod:`pytest_trt.verify.precision` for the defaults and the ``emulate`` decision.
    """
    report = (engine_or_report.checked() if isinstance(engine_or_report, LayerReport)
              else engine_layers(engine_or_report))
    plan = getattr(engine_or_report, "plan", None)
    model = plan.model.label if plan is not None else "model"
    if max_myelin_share is None:
        max_myelin_share = DEFAULT_MAX_MYELIN_SHARE
    if not 0 < float(max_myelin_share) <= 1:
        raise UsageError(f"max_myelin_share must be in (0, 1], got {max_myelin_share!r}")
    order = list(report.nodes)
    compute = {n for n, o in report.nodes.items() if o.status != "fixed"}
    n_compute = len(compute)
    if min_layers is None:
        min_layers = max(1, math.ceil(n_compute / DEFAULT_NODES_PER_LAYER))
    if report.emulated:
        check = CollapseCheck(model, report.backend, report.source, False, n_compute, 0, 0, 0, [], None,
                              int(min_layers), float(max_myelin_share),
                              notes=["emulated: the emulate backend has no engine layers and cannot observe fusion "
                                     "or Myelin; run with --trt-backend tensorrt for this check"])
        warnings.warn(NotObservableWarning(check.message()), stacklevel=2)
        return check
    if not report.layers:
        raise UsageError(f"the layer report of {model} has no layers: nothing to check for collapse")

    region_list, largest, myelin_nodes, n_myelin = _myelin_regions(report, order, compute)
    reasons: list[str] = []
    if len(report.layers) < min_layers:
        reasons.append(f"{len(report.layers)} engine layer(s) for {n_compute} ONNX compute nodes, fewer than "
                       f"min_layers={min_layers}")
    if largest and largest["share"] > max_myelin_share:
        reasons.append(f"one Myelin layer carries {largest['nodes']} of {n_compute} compute nodes "
                       f"({largest['share']:.0%} > max_myelin_share={max_myelin_share:.0%})")
    check = CollapseCheck(model, report.backend, report.source, True, n_compute, len(report.layers), n_myelin,
                          len(myelin_nodes), region_list, largest, int(min_layers), float(max_myelin_share),
                          reasons, list(report.notes))
    if reasons:
        raise PrecisionError(check.message(), check)
    return check
