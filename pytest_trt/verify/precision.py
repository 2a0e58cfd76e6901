"""Verify what ran: precision assertions, Myelin-collapse checks, numeric probes.

``assert_precision(engine_or_report, pattern, precision)``
    The pattern is resolved with the plan (:meth:`PrecisionPlan.match`; a pattern that
    matches nothing is a :class:`~pytest_trt.errors.PatternError`). Fixed nodes it
    selects (Constants inside a ``/LayerNorm/`` scope, shape math) are listed as *not
    applicable*, never as failures. Every matched **compute** node must be *shown*
    running in ``precision``; otherwise :class:`~pytest_trt.errors.PrecisionError` (an
    ``AssertionError``) lists each offender with the layer or Myelin region that carries
    it and the dtype seen, plus the remedy. On success a :class:`PrecisionCheck` is
    returned (per node: planned, observed, status, layer, Myelin), for tests and reports.

    Per node (``method="inspect"``, the :class:`~pytest_trt.layers.report.LayerReport`):

    * report status ``ok`` (the engine ran the node as planned): passes iff the plan's
      precision is the asserted one; otherwise it fails with cause ``plan`` (the policy
      lowered, or kept, it: fix the policy, not the engine);
    * ``mismatch`` (the engine did not follow the plan): passes only if the single
      observed dtype is the asserted one, else fails with cause ``engine``;
    * ``unverifiable`` (in no layer's Metadata; fused with nodes of other precisions; or
      known only from a fused kernel's boundary under weak typing, see below): fails
      unless ``allow_unverifiable=True``, which lists it under ``warnings`` instead.

    How each node's precision is known (``NodeVerdict.evidence``, counted per check by
    :meth:`PrecisionCheck.evidence_counts` and shown in every message and report):
    ``observed`` (its own output dtype read from the engine), ``inferred`` (only from the
    boundary of a fused kernel: a Myelin ``__myl_*`` kernel carrying several nodes, a
    ``{ForeignNode[...]}`` region, a ``PWN(...)`` fusion), ``unverifiable`` (nothing
    shows it) or ``emulated`` (the ``emulate`` backend; never "observed"). An
    *inferred* node never passes under weak typing (TensorRT treats precision as a hint
    there and is known to ignore it inside Myelin); under strong typing the network's
    types are the contract, and a consistent boundary passes with the detail "strong
    typing: typed in the network, boundary consistent". An inconsistent boundary (a
    planned FP32 node whose kernel outputs FP16) fails under either typing.

    ``method="probe"`` runs numeric probes (:mod:`pytest_trt.verify.probes`) on the LayerNorms
    the pattern selects: the LayerNorm built alone with the same backend and plan
    precisions must *behave* like ``precision`` (fp32 vs fp16/bf16). A probe measures a
    **separate build**, fused differently from the engine under test, so its result is
    evidence, never proof: a disagreeing probe fails the node; an agreeing one passes it
    only where the engine's types are a contract (strong typing, where the plan's
    precision must also be the asserted one) or on ``emulate`` (both builds are
    emulations); under weak typing the node stays unverifiable with the probe's result as
    evidence. Matched compute nodes outside any LayerNorm are unverifiable by probes.
    ``method="both"`` requires both: a node passes only if the inspector shows it and
    the probe of its LayerNorm agrees; an inspector-unverifiable node stays unverifiable
    whatever the probe says. Probes need an engine, not a report, and a pattern that
    selects a LayerNorm (else :class:`~pytest_trt.errors.UsageError`).

    ``emulate`` engines: the report is derived from the emulation realization
    (observed = planned by construction) and every message and report says
    ``emulated: derived from the plan's realization, not read from a TensorRT engine``.
    Such a check catches policy errors (a lowered node), never TensorRT ignoring a plan.

``assert_no_collapse(engine_or_report, *, min_layers=None, max_myelin_share=None)``
    Flags engines whose network was folded into a few Myelin layers (NVIDIA/TensorRT
    #4157: an ONNX model of 11,329 layers became one Myelin layer), where per-node
    precision cannot be seen and weak-typing constraints are not honoured. Defaults:

    * ``min_layers = ceil(compute_nodes / 50)`` (:data:`DEFAULT_NODES_PER_LAYER`): on
      average no engine layer may carry more than 50 ONNX compute nodes (ordinary
      fusion gives a few per layer);
    * ``max_myelin_share = 0.5`` (:data:`DEFAULT_MAX_MYELIN_SHARE`): no single Myelin
      layer (a ``{ForeignNode[...]}`` region or one ``__myl_`` kernel) may carry more
      than half of the ONNX compute nodes. A ForeignNode without per-node metadata is
      counted by the span of its ``[first...last]`` names in graph order (approximate).

    The result (:class:`CollapseCheck`) gives compute nodes vs engine layers, nodes in
    Myelin, Myelin regions (kernels grouped by their ``_myl<N>_`` suffix) and the
    largest Myelin layer. Small test models easily exceed the share (a 9-node LayerNorm
    in one kernel of a 12-node model): pass ``max_myelin_share=1.0`` there.

    ``emulate`` cannot observe fusion (it has no layers). Decision: the check **does not
    raise** there; it returns a :class:`CollapseCheck` with ``checked=False`` whose
    message says so, and warns :class:`NotObservableWarning` (shown in pytest's warnings
    summary), so a suite that runs on CPU and on GPU runners keeps one code path and a
    CPU run never reports a fusion check as done. Raising would fail every CPU run;
    skipping the test would hide the assertions after it.

``probe_precision(engine, pattern)`` -> ``list[ProbeResult]``: see :mod:`pytest_trt.verify.probes`.
"""

from __future__ import annotations

import difflib
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..core.dtypes import FP32, normalize_precision
from ..core.evidence import EMULATED, EVIDENCE, INFERRED, engine_evidence
from ..errors import PatternError, PrecisionError, UsageError
from ..layers.report import LayerReport, engine_layers, evidence_text
from ..plan.rules import Rule, validate_pattern
from .collapse import (
    DEFAULT_MAX_MYELIN_SHARE,
    DEFAULT_NODES_PER_LAYER,
    CollapseCheck,
    NotObservableWarning,
    assert_no_collapse,
    myelin_region,
    shorten,
)
from .probes import DEFAULT_TOLERANCE, ProbeResult, probe_precision

if TYPE_CHECKING:  # pragma: no cover
    from ..layers.report import NodeObservation
    from ..plan import NodeDecision, PrecisionPlan

__all__ = [
    "CollapseCheck",
    "DEFAULT_MAX_MYELIN_SHARE",
    "DEFAULT_NODES_PER_LAYER",
    "EMULATED_NOTE",
    "METHODS",
    "NodeVerdict",
    "NotObservableWarning",
    "PrecisionCheck",
    "ProbeResult",
    "WEAK_TYPING_REMEDY",
    "assert_no_collapse",
    "assert_precision",
    "probe_precision",
]

METHODS = ("inspect", "probe", "both")
PASS, FAIL, UNVERIFIABLE, NOT_APPLICABLE = "pass", "fail", "unverifiable", "not_applicable"
VERDICTS = (PASS, FAIL, UNVERIFIABLE, NOT_APPLICABLE)
#: How many offenders a message lists (per kind); the rest are counted.
MAX_LISTED = 20
#: How many distinct explanations ("why:") a message lists per kind.
MAX_DETAILS = 5
EMULATED_NOTE = "emulated: derived from the plan's realization, not read from a TensorRT engine"
WEAK_TYPING_REMEDY = (
    "weak typing treats per-layer precision as a hint, and TensorRT is known to ignore it inside Myelin regions "
    "(NVIDIA/TensorRT #4505, #3889). Remedies: switch to strong typing with graph-level Casts (the default "
    "--trt-typing auto on TensorRT >= 10.0, or --trt-typing strong), split the model at the island, or mark the "
    "island's output as a network output."
)


# --------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------
@dataclass
class NodeVerdict:
    """One matched node: planned vs observed precision and the verdict.

    ``status``: ``pass`` | ``fail`` | ``unverifiable`` | ``not_applicable`` (fixed node).
    ``cause`` of a failure: ``plan`` (the policy gave it another precision and the
    engine followed), ``engine`` (the engine did not follow the plan), ``probe`` (the
    numeric probes disagree). ``inspector_status`` is the LayerReport status
    (ok/mismatch/unverifiable/fixed), None for ``method="probe"``. ``evidence``: how
    the precision is known: ``observed`` | ``inferred`` | ``unverifiable`` | ``emulated``
    (None for fixed nodes).
    """

    node: str
    op_type: str
    planned: str | None
    observed: str | None
    status: str
    layer: str | None = None
    myelin: bool = False
    detail: str = ""
    rule: str | None = None
    inspector_status: str | None = None
    probe: str | None = None
    cause: str | None = None
    evidence: str | None = None
    #: canonical scoped name, module path and qualified module class (pytest_trt.model.names)
    canonical: str = ""
    module: str | None = None
    module_class: str | None = None

    @property
    def label(self) -> str:
        """The node as messages name it: its canonical scoped name."""
        return self.canonical or self.node

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "canonical": self.label, "module": self.module, "module_class": self.module_class,
                "op_type": self.op_type, "planned": self.planned, "observed": self.observed,
                "status": self.status, "evidence": self.evidence, "layer": self.layer, "myelin": self.myelin,
                "myelin_region": myelin_region(self.layer) if self.myelin else None, "detail": self.detail,
                "rule": self.rule, "inspector_status": self.inspector_status, "probe": self.probe,
                "cause": self.cause}


@dataclass
class PrecisionCheck:
    """The result of :func:`assert_precision` (returned on success, ``PrecisionError.findings`` on failure)."""

    pattern: str
    precision: str
    method: str
    model: str
    policy: str
    backend: str
    typing: str
    source: str
    emulated: bool
    allow_unverifiable: bool
    nodes: list[NodeVerdict]
    probes: list[ProbeResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    # -- views ------------------------------------------------------------------------
    @property
    def statuses(self) -> dict[str, str]:
        """``{node: pass|fail|unverifiable|not_applicable}``."""
        return {v.node: v.status for v in self.nodes}

    def by_status(self, status: str) -> list[NodeVerdict]:
        return [v for v in self.nodes if v.status == status]

    @property
    def failures(self) -> list[NodeVerdict]:
        return self.by_status(FAIL)

    @property
    def unverifiable(self) -> list[NodeVerdict]:
        return self.by_status(UNVERIFIABLE)

    @property
    def passed(self) -> bool:
        return not self.failures and (self.allow_unverifiable or not self.unverifiable)

    @property
    def warnings(self) -> list[str]:
        """Unverifiable nodes accepted with ``allow_unverifiable=True``."""
        if not self.allow_unverifiable:
            return []
        return [f"{v.label} ({v.op_type}): unverifiable: {v.detail}" for v in self.unverifiable]

    def counts(self) -> dict[str, int]:
        c = Counter(v.status for v in self.nodes)
        out = {s: c.get(s, 0) for s in VERDICTS}
        out["matched"] = len(self.nodes)
        out["compute"] = len(self.nodes) - out[NOT_APPLICABLE]
        return out

    def evidence_counts(self) -> dict[str, int]:
        """How the matched compute nodes' precision is known: ``{"observed", "inferred", "unverifiable",
        "emulated"}`` (the verdict of each is in :meth:`counts`)."""
        c = Counter(v.evidence or UNVERIFIABLE for v in self.nodes if v.status != NOT_APPLICABLE)
        return {e: c.get(e, 0) for e in EVIDENCE}

    # -- output -----------------------------------------------------------------------
    def headline(self) -> str:
        c = self.counts()
        what = f"assert_precision({self.pattern!r}, {self.precision!r}, method={self.method!r})"
        if self.passed:
            head = f"{what} passed: {c[PASS]} of {c['compute']} matched compute node(s) shown in {self.precision}"
            if c[UNVERIFIABLE]:
                head += f", {c[UNVERIFIABLE]} unverifiable (allowed)"
        else:
            bad = c[FAIL] + (0 if self.allow_unverifiable else c[UNVERIFIABLE])
            head = (f"{what} failed: {bad} of {c['compute']} matched compute node(s) not shown in {self.precision} "
                    f"({c[FAIL]} failed, {c[UNVERIFIABLE]} unverifiable"
                    f"{' (allowed)' if self.allow_unverifiable and c[UNVERIFIABLE] else ''})")
        if c[NOT_APPLICABLE]:
            head += f"; {c[NOT_APPLICABLE]} fixed node(s) not applicable"
        return head

    def context(self) -> str:
        return (f"{self.model} [{self.policy}] on {self.backend}, typing {self.typing}, "
                f"source {self.source}")

    def evidence_line(self) -> str:
        ev = self.evidence_counts()
        line = f"evidence: {evidence_text(ev)}"
        if ev["inferred"]:
            line += (" (strong typing: typed in the network, boundary consistent)" if self.typing == "strong"
                     else " (not a pass without strong typing)")
        return line

    def message(self) -> str:
        lines = [self.headline(), f"  {self.context()}", f"  {self.evidence_line()}"]
        if self.emulated:
            lines.append(f"  {EMULATED_NOTE}")
        for kind, rows in ((FAIL, self.failures), (UNVERIFIABLE, self.unverifiable)):
            if not rows:
                continue
            label = "failed" if kind == FAIL else ("unverifiable (allowed)" if self.allow_unverifiable
                                                  else "unverifiable")
            lines.append(f"{label} ({len(rows)}):")
            lines.extend(f"  {_offender_line(v)}" for v in rows[:MAX_LISTED])
            if len(rows) > MAX_LISTED:
                lines.append(f"  ... and {len(rows) - MAX_LISTED} more (PrecisionError.findings.to_json() lists all)")
            details = list(dict.fromkeys(v.detail for v in rows if v.detail))
            if details:
                lines.append("  why:")
                lines.extend(f"    {d}" for d in details[:MAX_DETAILS])
                if len(details) > MAX_DETAILS:
                    lines.append(f"    ... and {len(details) - MAX_DETAILS} more")
        if self.probes:
            lines.append("probes:")
            lines.extend(f"  {p.line()}" for p in self.probes)
        if not self.passed:
            remedies = self.remedies()
            if remedies:
                lines.append("remedy:")
                lines.extend(f"  - {r}" for r in remedies)
        lines.extend(f"note: {n}" for n in self.notes)
        return "\n".join(lines)

    def remedies(self) -> list[str]:
        """What to do about the failures: plan, engine (or probe), then unverifiable nodes."""
        causes = Counter(v.cause for v in self.failures)
        out = self._plan_remedies() if causes.get("plan") else []
        engine = bool(causes.get("engine") or causes.get("probe"))
        strict_unverifiable = bool(self.unverifiable) and not self.allow_unverifiable
        if (engine or strict_unverifiable) and self.typing == "weak":
            out.append(WEAK_TYPING_REMEDY)
        elif engine and self.typing == "strong":
            out.append("with strong typing TensorRT should run the types of the graph: check the realization "
                       "(`pytest-trt plan`), and report the engine's layer information (`pytest-trt layers --json`) "
                       "to NVIDIA if it persists")
        elif engine:
            out.append(WEAK_TYPING_REMEDY)
        if strict_unverifiable:
            out.extend(self._unverifiable_remedies())
        return out

    def _plan_remedies(self) -> list[str]:
        lowered = [v for v in self.failures if v.cause == "plan"]
        rules = ", ".join(sorted({v.rule or "?" for v in lowered}))
        if self.precision == FP32:
            return [f"the plan lowers {len(lowered)} node(s) (rule: {rules}): keep them FP32 with "
                    f"keep_fp32=[{self.pattern!r}] in the trt marker, or --trt-keep-fp32 '{self.pattern}'"]
        return [f"the plan gives {len(lowered)} node(s) another precision than {self.precision} (rule: "
                f"{rules}): change the policy or the assertion"]

    def _unverifiable_remedies(self) -> list[str]:
        out = []
        inferred = [v for v in self.unverifiable if v.evidence == INFERRED]
        if inferred and self.typing != "strong":
            out.append(f"{len(inferred)} node(s) are known only from a fused kernel's boundary: under weak "
                       f"typing that proves nothing about the precision inside the kernel; build strongly typed "
                       f"(--trt-typing strong), where the network's types are the contract")
        out.append("unverifiable nodes are not shown by the engine's layer information: build with "
                   "ProfilingVerbosity.DETAILED (pytest-trt's builds do); method='probe' or 'both' adds numeric "
                   "LayerNorm probes as evidence (a separate build, fused differently: it can fail a node, "
                   "never vouch for it); or accept them with allow_unverifiable=True (then listed as warnings)")
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "precision_check",
            "pattern": self.pattern,
            "precision": self.precision,
            "method": self.method,
            "passed": self.passed,
            "model": self.model,
            "policy": self.policy,
            "backend": self.backend,
            "typing": self.typing,
            "source": self.source,
            "emulated": self.emulated,
            "emulated_note": EMULATED_NOTE if self.emulated else None,
            "allow_unverifiable": self.allow_unverifiable,
            "counts": self.counts(),
            "evidence": self.evidence_counts(),
            "nodes": [v.to_json() for v in self.nodes],
            "probes": [p.to_json() for p in self.probes],
            "warnings": self.warnings,
            "notes": list(self.notes),
        }

    def __str__(self) -> str:
        return self.message()


def _offender_line(v: NodeVerdict) -> str:
    where = ""
    if v.layer:
        if v.myelin:
            region = myelin_region(v.layer)
            where = (f" in Myelin region {shorten(region)}" if region == v.layer.split(" | ")[0]
                     else f" in Myelin region {region} (kernel {shorten(v.layer)})")
        else:
            where = f" in layer {shorten(v.layer)}"
    if v.evidence == INFERRED and v.observed:
        seen = f"{v.observed} inferred from the kernel boundary"
    elif v.evidence == EMULATED and v.observed:
        seen = f"emulated {v.observed}"
    elif v.status == UNVERIFIABLE or not v.observed:
        seen = "observed -"
    else:
        seen = f"observed {v.observed}"
    if v.status == UNVERIFIABLE:
        return f"{v.label} ({v.op_type}): planned {v.planned}, {seen}{where}"
    head = f"{v.label} ({v.op_type}): {seen}, planned {v.planned}"
    if v.rule:
        head += f" [{v.rule}]"
    return f"{head}{where}"


# --------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------
def _split(engine_or_report, plan):
    """``(engine | None, plan | None)`` from what the caller gave."""
    if isinstance(engine_or_report, LayerReport):
        return None, plan
    if hasattr(engine_or_report, "layers") and hasattr(engine_or_report, "plan"):
        return engine_or_report, plan or engine_or_report.plan
    raise UsageError(f"expected an engine or a LayerReport, got {type(engine_or_report).__name__}")


def _match(report: LayerReport | None, plan: PrecisionPlan | None, pattern: str) -> list[str]:
    """Node names ``pattern`` selects: with the plan when there is one, else over the report's nodes
    (same glob / ``op:TYPE`` semantics and the same PatternError)."""
    if plan is not None:
        return plan.match(pattern)
    if report is None:  # pragma: no cover - _split gives a plan or a report
        raise UsageError("a pattern needs a plan or a layer report to match against")
    rule = Rule(validate_pattern(pattern), FP32)

    class _N:
        __slots__ = ("name", "op_type")

        def __init__(self, name, op_type):
            self.name, self.op_type = name, op_type

    known = report.names
    names = [n for n, o in report.nodes.items()
             if rule.matches(_N(n, o.op_type), known.get(n) if known is not None else None)]
    if not names:
        pool = sorted({f"op:{o.op_type}" for o in report.nodes.values()}) if rule.op_type else list(report.nodes)
        close = difflib.get_close_matches(pattern, pool, n=3, cutoff=0.3)
        raise PatternError(f"pattern {pattern!r} matches no node of the report ({len(report.nodes)} nodes); "
                           f"closest: {', '.join(map(repr, close)) or '(none)'}")
    return names


def _context(engine, report, plan) -> dict[str, Any]:
    model = plan.model.label if plan is not None else "?"
    policy = plan.policy.describe() if plan is not None else "?"
    if report is not None:
        return {"model": model, "policy": policy, "backend": report.backend, "typing": report.typing,
                "source": report.source, "emulated": report.emulated}
    return {"model": model, "policy": policy, "backend": engine.backend_name, "typing": engine.typing,
            "source": "probe", "emulated": engine_evidence(engine) == EMULATED}


def _typing(engine, report) -> str:
    if report is not None:
        return report.typing
    return str(getattr(engine, "typing", "?"))


def _judge_inspected(name: str, obs: NodeObservation | None, decision: NodeDecision | None,
                     precision: str) -> NodeVerdict:
    """The verdict of one node from its layer-report observation (``obs``) and plan ``decision``."""
    op = obs.op_type if obs is not None else (decision.op_type if decision is not None else "?")
    rule = decision.rule if decision is not None else None
    fixed = (obs is not None and obs.status == "fixed") or (decision is not None and decision.kind != "compute")
    if obs is None:
        if fixed:
            return NodeVerdict(name, op, None, None, NOT_APPLICABLE, rule=rule, detail="fixed node")
        return NodeVerdict(name, op, decision.precision if decision else None, None, UNVERIFIABLE, rule=rule,
                           detail="not in the layer report (a report of another plan?)")
    v = NodeVerdict(name, op, obs.planned, obs.observed, UNVERIFIABLE, obs.layer, obs.myelin, obs.detail, rule,
                    obs.status, evidence=obs.evidence)
    if fixed:
        v.status, v.detail, v.evidence = NOT_APPLICABLE, "fixed node (no float compute): not applicable", None
    else:
        _judge_observation(v, obs, precision)
    return v


def _judge_observation(v: NodeVerdict, obs: NodeObservation, precision: str) -> None:
    """Set the status (and cause, detail) of a compute node's verdict from what the report observed."""
    if obs.status == "unverifiable" or obs.observed is None:
        v.status = UNVERIFIABLE
    elif obs.status == "mismatch" and obs.evidence == INFERRED and obs.observed == precision:
        # a kernel boundary in the asserted precision, inconsistent with the plan: it does not show the node
        v.status = UNVERIFIABLE
        v.detail = f"the kernel boundary is {precision}, but the node's own precision is only inferred: {obs.detail}"
    elif obs.status == "ok":
        if obs.planned == precision:
            v.status = PASS
        else:
            v.status, v.cause = FAIL, "plan"
            v.detail = (f"the plan gives it {obs.planned} and the engine ran it so"
                        + (f" ({obs.detail})" if obs.detail else ""))
    elif obs.status == "mismatch":
        if obs.observed == precision:
            v.status = PASS
            v.detail = f"ran in {precision} although planned {obs.planned}: {obs.detail}"
        else:
            v.status, v.cause = FAIL, "engine"


def _judge_probe(v: NodeVerdict, probe: ProbeResult | None, precision: str, method: str, typing: str) -> None:
    """Fold a probe result into a verdict (see the module docstring: evidence, never proof)."""
    if v.status == NOT_APPLICABLE:
        return
    if probe is None:
        if method == "probe":
            v.status, v.evidence = UNVERIFIABLE, UNVERIFIABLE
            v.detail = f"no numeric probe for {v.op_type} outside a LayerNorm (probes exist for LayerNorm only)"
        return
    v.probe = f"{probe.label}: {probe.text}"
    agrees = probe.behaves_like(precision)
    figures = "; ".join(m.line() for m in probe.measurements if m.flagged) or "no probe flagged low precision"
    separate = f"{probe.backend} build of the LayerNorm alone, fused differently from the engine under test"
    if method == "probe":
        v.inspector_status = None
        v.observed = FP32 if probe.verdict == "fp32" else "fp16/bf16"
        v.layer, v.myelin = None, False
        if not agrees:
            v.status, v.cause = FAIL, "probe"
            v.evidence = "emulated" if probe.emulated else "inferred"
            v.detail = f"probe of {probe.label} ({separate}): {probe.text} [{figures}]"
        elif probe.emulated:
            v.status, v.cause, v.evidence = PASS, None, "emulated"
            v.detail = f"probe (emulated): {probe.text}"
        elif typing == "strong":
            v.evidence = "inferred"
            if v.planned == precision:
                v.status, v.cause = PASS, None
                v.detail = f"strong typing: typed in the network as {v.planned}; probe ({separate}): {probe.text}"
            else:
                v.status, v.cause = FAIL, "plan"
                v.detail = (f"strong typing: typed in the network as {v.planned}, not {precision}; probe "
                            f"({separate}): {probe.text}")
        else:
            v.status, v.cause, v.evidence = UNVERIFIABLE, None, "inferred"
            v.detail = (f"probe ({separate}): {probe.text}; evidence, not proof for this engine: without strong "
                        f"typing nothing shows what the engine under test ran")
        return
    # both
    if not agrees:
        extra = f"probe of {probe.label}: {probe.text} [{figures}]"
        if v.status == PASS:
            v.status, v.cause, v.detail = FAIL, "probe", extra
        else:
            v.detail = f"{v.detail}; {extra}" if v.detail else extra
    elif v.status == UNVERIFIABLE:
        v.detail += f"; the probe of {probe.label} says it {probe.text} (a separate build: not proof for this engine)"


# --------------------------------------------------------------------------------------
# assert_precision
# --------------------------------------------------------------------------------------
def assert_precision(engine_or_report, pattern: str, precision: str, *, allow_unverifiable: bool = False,
                     method: str = "inspect", plan: PrecisionPlan | None = None, cache=None,
                     tolerance: float = DEFAULT_TOLERANCE, seed: int = 0) -> PrecisionCheck:
    """Assert every compute node ``pattern`` selects is shown running in ``precision``.

    Args:
        engine_or_report: an engine (its ``layers()`` and ``plan`` are used) or a
            :class:`~pytest_trt.layers.report.LayerReport` (pass ``plan=`` to resolve the pattern
            with the plan; without it the pattern is matched over the report's nodes).
        pattern: node-name glob or ``op:TYPE``.
        precision: ``fp32`` / ``fp16`` / ``bf16`` (aliases accepted).
        allow_unverifiable: list unverifiable nodes as warnings instead of failing.
        method: ``inspect`` (layer report), ``probe`` (numeric LayerNorm probes) or ``both``.
        cache: artifact cache for the probe builds (default: the engine's own).
        tolerance, seed: probe settings (see :mod:`pytest_trt.verify.probes`).

    Returns:
        :class:`PrecisionCheck` (``.nodes``, ``.statuses``, ``.to_json()``).

    Raises:
        PrecisionError: a node failed (or is unverifiable and not allowed); ``.findings``
            is the :class:`PrecisionCheck`.
        PatternError: the pattern matches nothing, or only fixed nodes.
        UsageError: bad method, or probes asked for without an engine / LayerNorm.
    """
    precision = normalize_precision(precision, what="asserted precision")
    if method not in METHODS:
        raise UsageError(f"unknown method {method!r}: use one of {', '.join(METHODS)}")
    engine, plan = _split(engine_or_report, plan)
    report = None
    if engine is None:
        report = engine_or_report.checked()
    else:
        engine_evidence(engine)  # the backend's statement is checked whatever the method
        if method in ("inspect", "both"):
            report = engine_layers(engine)
    if method != "inspect" and engine is None:
        raise UsageError(f"method={method!r} builds the LayerNorm with the engine's backend: pass the engine, "
                         f"not a LayerReport")
    names = _match(report, plan, pattern)
    verdicts = _verdicts(names, report, plan, precision)
    if all(v.status == NOT_APPLICABLE for v in verdicts):
        raise PatternError(
            f"pattern {pattern!r} selects only fixed nodes ({', '.join(v.label for v in verdicts[:3])}"
            f"{', ...' if len(verdicts) > 3 else ''}): there is no float compute to verify"
        )

    probes: list[ProbeResult] = []
    if method in ("probe", "both"):
        probes = probe_precision(engine, pattern, cache=cache, tolerance=tolerance, seed=seed)
        owner = {n: p for p in probes for n in p.compute_nodes}
        for v in verdicts:
            _judge_probe(v, owner.get(v.node), precision, method, _typing(engine, report))

    ctx = _context(engine, report, plan)
    notes = []
    if report is not None:
        notes.extend(report.notes)
    check = PrecisionCheck(pattern=pattern, precision=precision, method=method, allow_unverifiable=allow_unverifiable,
                           nodes=verdicts, probes=probes, notes=notes, **ctx)
    if not check.passed:
        raise PrecisionError(check.message(), check)
    return check


def _verdicts(names: list[str], report: LayerReport | None, plan: PrecisionPlan | None,
              precision: str) -> list[NodeVerdict]:
    """The first verdict of each matched node: from the layer report, or (probes only) from the plan."""
    decisions = plan.nodes if plan is not None else {}
    verdicts: list[NodeVerdict] = []
    for name in names:
        d = decisions.get(name)
        if report is not None:
            verdicts.append(_judge_inspected(name, report.nodes.get(name), d, precision))
        elif d is None or d.kind != "compute" or d.precision is None:
            verdicts.append(NodeVerdict(name, d.op_type if d else "?", None, None, NOT_APPLICABLE,
                                        rule=d.rule if d else None,
                                        detail="fixed node (no float compute): not applicable"))
        else:
            verdicts.append(NodeVerdict(name, d.op_type, d.precision, None, UNVERIFIABLE, rule=d.rule, detail=""))
    names_of = plan.model.names if plan is not None else (report.names if report is not None else None)
    if names_of is not None:
        for v in verdicts:
            entry = names_of.get(v.node)
            if entry is not None:
                v.canonical, v.module, v.module_class = entry.canonical, entry.module, entry.module_class
    return verdicts
