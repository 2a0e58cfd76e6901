"""Layerwise comparison: which node's error jumps first, and which nodes contribute most.

Every float tensor of the engine (``engine.run_layerwise(feeds)``) is compared with the
same tensor of the model run in FP32 by ONNX Runtime (:func:`~pytest_trt.reference.baseline.fp32_intermediates`).
Rows are in topological order, each with the node that produced the tensor.

Per tensor (reference ``r``, engine value ``a``, elements finite on both sides)::

    max_abs = max |a - r|                      (inf when the engine has NaN/Inf where r is finite)
    rel     = max_abs / max(max |r|, REL_FLOOR)   normwise: error relative to the tensor's magnitude

``rel`` is scale-free, so a LayerNorm input of magnitude 400 and its normalised output of
magnitude 1 are judged alike. ``REL_FLOOR`` (1e-6, below FP16's smallest normal) keeps an
all-zero reference tensor from turning noise into an infinite relative error.

Divergence criterion (a node is *divergent*):

* the engine has NaN/Inf where the FP32 reference is finite (or NaN where it is infinite)
  and none of the node's inputs had any: the node *introduced* the non-finite values; or
* ``rel > threshold`` AND ``rel > jump * max(upstream, u)``: the error is large AND
  it jumped by more than ``jump`` (default 10x) over the worst error of the node's
  inputs. ``u`` is the unit roundoff of the plan's low precision (2**-11 for fp16),
  the error any rounded input may carry.

The first condition alone catches overflow (a decomposed LayerNorm's ``Pow``); the jump
condition separates where error is *created* from where it is merely *carried*: after
the first divergent node everything downstream is off too, but those nodes show no jump.
A jump must also *persist*: at least one consumer of the tensor (or the graph output it
is) stays above the threshold. A reduction with cancellation (a LayerNorm's ``ReduceMean``
of values whose mean is near zero) shows a large error relative to its own small output
that ``x - mean`` does not inherit; without this rule it would be blamed on healthy models.
Only compute nodes of the plan can be divergent (a ``Constant`` rounded by FP16, such as
LayerNorm's epsilon 1e-12 becoming 0, is reported but never blamed).

An engine's ``+-inf``, or the low precision's largest finite value (65504 in FP16), of the same
sign where the FP32 reference holds a *masking value* (an attention mask's ``-FLT_MAX``, beyond
the plan's low-precision range: see :func:`pytest_trt.locate.masking.saturation`) is what the
mask means in that precision: such elements are counted in ``saturated``, not as NaN/Inf, and
leave the node's error alone (neither ``max_abs`` nor ``max_ref`` includes them).

Tensors the engine does not expose (TensorRT fuses them away) are ``available=False``;
their consumers are judged against the worst error further upstream.

Default threshold: 1e-2 for fp16 plans, 5e-2 for bf16, 1e-4 for FP32 plans (the
precisions' default ``rtol`` order of magnitude; FP16's rounding error per stored tensor
is 4.9e-4 relative and accumulates to ~2e-3 over a few layers of a healthy network).
"""

from __future__ import annotations

import math
import shlex
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.dtypes import LARGEST_FINITE
from ..core.formatting import fmt_error
from ..core.jsonsafe import json_number
from ..model.names import short_class
from ..reference.baseline import fp32_intermediates, release_heavy_sessions
from .masking import saturation, sentinels
from .scopes import scope_pattern
from .segments import SegmentedValues, SpilledValues, segment_tensors, segments_budget

if TYPE_CHECKING:  # pragma: no cover
    from ..backends.base import Engine

__all__ = [
    "DEFAULT_JUMP",
    "DEFAULT_THRESHOLDS",
    "Divergence",
    "TensorError",
    "compare_tensors",
    "locate_divergence",
]

#: Default relative-error threshold per low precision of the plan (None = FP32 plan).
DEFAULT_THRESHOLDS: dict[str | None, float] = {"fp16": 1e-2, "bf16": 5e-2, None: 1e-4, "fp32": 1e-4}
#: A divergent node's relative error is this many times the worst of its inputs'.
DEFAULT_JUMP = 10.0
#: Unit roundoff per low precision: the error floor of any rounded input.
UNIT_ROUNDOFF: dict[str | None, float] = {"fp16": 2.0**-11, "bf16": 2.0**-8, None: 2.0**-24, "fp32": 2.0**-24}
#: Denominator floor of the relative error (max |reference| below this counts as this).
REL_FLOOR = 1e-6


@dataclass
class TensorError:
    """Error statistics of one float tensor against its FP32 reference.

    Attributes:
        tensor, node, op_type: the tensor and the node that produced it.
        index: position of the node in topological order.
        precision: the node's planned precision (None for fixed nodes).
        compute: True for the plan's compute nodes (only they can be divergent).
        available: False when the engine does not expose this tensor.
        shape: the reference's shape.
        max_abs: max |engine - reference| (inf when ``nonfinite`` > 0).
        max_ref: max |reference| over its finite elements.
        rel: ``max_abs / max(max_ref, REL_FLOOR)``.
        mean_abs: mean |engine - reference| over the elements finite on both sides.
        nan, inf: NaN / Inf elements of the engine where the reference is finite.
        nonfinite: elements where engine and reference disagree and one is NaN/Inf.
        saturated: elements where the reference holds a masking value beyond the plan's low
            precision and the engine the infinity or the largest finite value of the same sign
            (a mask saturating as intended); not counted in ``nan``, ``inf``, ``nonfinite``,
            the errors or ``max_ref``.
        upstream: worst ``rel`` of the node's inputs (graph inputs and weights count 0).
        worst_input: the input tensor with that error (None when all are exact).
        upstream_nonfinite: some input already had non-finite disagreements.
        jump: ``rel / max(upstream, u)`` (inf when this node introduced NaN/Inf).
        divergent: the criterion of the module docstring holds.
        canonical, module, module_class: the node's canonical scoped name, module path and
            (qualified) module class (:mod:`pytest_trt.model.names`): what messages show.
    """

    tensor: str
    node: str
    op_type: str
    index: int
    canonical: str = ""
    module: str | None = None
    module_class: str | None = None
    precision: str | None = None
    compute: bool = True
    available: bool = True
    shape: tuple[int, ...] | None = None
    max_abs: float = 0.0
    max_ref: float = 0.0
    rel: float = 0.0
    mean_abs: float = 0.0
    nan: int = 0
    inf: int = 0
    nonfinite: int = 0
    saturated: int = 0
    upstream: float = 0.0
    worst_input: str | None = None
    upstream_nonfinite: bool = False
    jump: float = 0.0
    divergent: bool = False
    problem: str | None = None

    @property
    def label(self) -> str:
        """The node as messages name it: its canonical scoped name."""
        return self.canonical or self.node

    def described(self) -> str:
        """``/model/layers.0/input_layernorm/node_pow_1 (Pow, fp16; LlamaRMSNorm)``."""
        inner = self.op_type + (f", {self.precision}" if self.precision else "")
        if self.module_class:
            inner += f"; {short_class(self.module_class)}"
        return f"{self.label} ({inner})"

    @property
    def new_nonfinite(self) -> bool:
        """This node introduced NaN/Inf (its inputs had none)."""
        return self.available and self.nonfinite > 0 and not self.upstream_nonfinite

    def score(self) -> tuple[int, int, float, float]:
        """Ordering of contributors: introduced NaN/Inf, divergent, log10 of the jump, rel."""
        if not self.available or not self.compute:
            return (0, 0, -math.inf, 0.0)
        log_jump = math.log10(self.jump) if self.jump > 0 else -math.inf
        return (int(self.new_nonfinite), int(self.divergent), log_jump, _finite(self.rel))

    def upstream_text(self, threshold: float) -> str:
        if self.upstream_nonfinite:
            return "inputs already had NaN/Inf"
        if self.upstream <= threshold:
            where = f" (worst input rel {fmt_error(self.upstream)} at {self.worst_input!r})" if self.worst_input else ""
            return f"upstream nodes within tolerance{where}"
        return (f"upstream already off (worst input rel {fmt_error(self.upstream)} at {self.worst_input!r}), "
                f"error jumped {_fmt_jump(self.jump)} here")

    def to_json(self) -> dict[str, Any]:
        return {
            "tensor": self.tensor, "node": self.node, "canonical": self.label, "module": self.module,
            "module_class": self.module_class, "op_type": self.op_type, "index": self.index,
            "precision": self.precision, "compute": self.compute, "available": self.available,
            "shape": list(self.shape) if self.shape is not None else None,
            "max_abs": _json(self.max_abs), "max_ref": _json(self.max_ref), "rel": _json(self.rel),
            "mean_abs": _json(self.mean_abs), "nan": self.nan, "inf": self.inf, "nonfinite": self.nonfinite,
            "saturated": self.saturated, "upstream": _json(self.upstream), "worst_input": self.worst_input,
            "upstream_nonfinite": self.upstream_nonfinite, "jump": _json(self.jump),
            "divergent": self.divergent, "new_nonfinite": self.new_nonfinite, "problem": self.problem,
        }


@dataclass
class Divergence:
    """Result of :func:`locate_divergence`.

    Attributes:
        first: the first divergent tensor in topological order (None if none).
        top: the largest contributors (introduced NaN/Inf first, then by jump), at most ``top``.
        tensors: every compared float tensor, in topological order.
        note: how the engine's values were obtained (e.g. a separate layerwise build).
        threshold, jump: the criterion used.
        model, backend, policy: what was compared.
        outputs: rows of the graph outputs.
    """

    first: TensorError | None
    top: list[TensorError]
    tensors: list[TensorError]
    note: str
    threshold: float
    jump: float
    model: str = ""
    backend: str = ""
    policy: str = ""
    output_names: list[str] = field(default_factory=list)
    low_precision: str | None = None
    #: ``class:LlamaRMSNorm`` for the first divergent node's class, when the model knows classes
    class_pattern: str | None = None

    @property
    def found(self) -> bool:
        """True when some node diverged."""
        return self.first is not None

    @property
    def divergent(self) -> list[TensorError]:
        """Every divergent row, in topological order."""
        return [t for t in self.tensors if t.divergent]

    @property
    def saturated(self) -> list[TensorError]:
        """Rows where masking values saturated to +-inf as intended (see :mod:`pytest_trt.locate.masking`)."""
        return [t for t in self.tensors if t.saturated]

    @property
    def outputs(self) -> list[TensorError]:
        by_name = {t.tensor: t for t in self.tensors}
        return [by_name[n] for n in self.output_names if n in by_name]

    def row(self, tensor: str) -> TensorError:
        for t in self.tensors:
            if t.tensor == tensor:
                return t
        raise KeyError(tensor)

    def node_scores(self) -> dict[str, tuple]:
        """Best :meth:`TensorError.score` per node (a node may write several tensors)."""
        scores: dict[str, tuple] = {}
        for t in self.tensors:
            s = t.score()
            if t.node not in scores or s > scores[t.node]:
                scores[t.node] = s
        return scores

    def message(self, rows: int | None = None) -> str:
        """Human-readable summary: the first divergent node, upstream state, top contributors."""
        avail = [t for t in self.tensors if t.available]
        lines = [
            f"layerwise comparison with FP32 ONNX Runtime: {len(avail)} of {len(self.tensors)} float tensors "
            f"compared (criterion: rel error > {fmt_error(self.threshold)} with a jump > {self.jump:g}x over the "
            f"node's inputs, or NaN/Inf introduced)",
            f"  values: {self.note}",
        ]
        f = self.first
        if f is not None:
            lines.extend(self._first_lines(f))
        else:
            worst = max((t for t in avail if t.compute), key=lambda t: _finite(t.rel), default=None)
            tail = f" (largest: rel {fmt_error(worst.rel)} at {worst.label})" if worst is not None else ""
            lines.append(f"no divergent node: no tensor's error jumps past the criterion{tail}; if the outputs "
                         f"fail, the error accumulates gradually rather than at one node")
        shown = self.top if rows is None else self.top[:rows]
        if shown:
            lines.append("top contributors (error jump over the node's inputs):")
            lines.extend("  " + line for line in _table(shown))
        masked = self.saturated
        if masked:
            nodes = ", ".join(t.label for t in masked[:3]) + (f" and {len(masked) - 3} more" if len(masked) > 3 else "")
            lines.append(f"masking values: {sum(t.saturated for t in masked)} element(s) where FP32 holds a masking "
                         f"constant beyond the {self.low_precision} range (such as an attention mask's -FLT_MAX) are "
                         f"+-inf or +-{LARGEST_FINITE.get(self.low_precision or '', math.inf):.5g} (the largest "
                         f"finite {self.low_precision} value) in the engine at {nodes}: the mask saturating as "
                         f"intended, not counted as NaN/Inf or as an error")
        outs = self.outputs
        if outs:
            lines.append("outputs: " + "; ".join(f"{t.tensor} max abs {fmt_error(t.max_abs)} rel {fmt_error(t.rel)}"
                                                 for t in outs))
        if f is not None:
            pattern = shlex.quote(scope_pattern(f.label))
            klass = (f"; every module of its class: {shlex.quote(self.class_pattern)}" if self.class_pattern else "")
            lines.append(f"next: keep it FP32 to confirm (pytest --trt-keep-fp32 {pattern}, CLI --keep-fp32 {pattern}"
                         f"{klass}), or let `pytest-trt suggest` search the smallest FP32 islands")
        return "\n".join(lines)

    def _first_lines(self, f: TensorError) -> list[str]:
        """The first divergent node, in its module's words."""
        what = f"max abs error {fmt_error(f.max_abs)}"
        if f.nonfinite:
            what += f" ({_nonfinite_text(f)} where the FP32 reference is finite)"
        else:
            what += f" (max |ref| {fmt_error(f.max_ref)}, rel {fmt_error(f.rel)})"
        lines = [f"first divergent node: {f.described()}, tensor {f.tensor!r}: {what}; "
                 f"{f.upstream_text(self.threshold)}"]
        if f.module:
            lines.append(f"  in module {f.module}" + (f" ({f.module_class})" if f.module_class else ""))
        return lines

    def __str__(self) -> str:
        return self.message()

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model, "backend": self.backend, "policy": self.policy, "note": self.note,
            "threshold": self.threshold, "jump": self.jump, "found": self.found,
            "first": self.first.to_json() if self.first else None,
            "top": [t.to_json() for t in self.top],
            "outputs": [t.to_json() for t in self.outputs],
            "tensors": [t.to_json() for t in self.tensors],
        }


def locate_divergence(engine: Engine, feeds: dict, *, threshold: float | None = None, top: int = 5,
                      jump: float = DEFAULT_JUMP, reference: dict | None = None, provider: str = "cpu") -> Divergence:
    """Compare every float tensor of ``engine`` with FP32 ONNX Runtime and name the first divergent node.

    Args:
        engine: a built engine (any backend); its ``run_layerwise(feeds)`` gives the values.
        feeds: input feeds.
        threshold: relative-error threshold (default per the plan's low precision, see module doc).
        top: how many top contributors to list.
        jump: jump factor of the criterion (default 10).
        reference: FP32 intermediates if already computed (``fp32_intermediates(model, feeds)``).
        provider: ONNX Runtime provider of the reference.

    >>> found = locate_divergence(engine, feeds)            # doctest: +SKIP
    >>> found.first.node                                    # doctest: +SKIP
    '/encoder/layer.0/attention/output/LayerNorm/Pow'
    """
    plan = engine.plan
    model = plan.model
    low = plan.low_precision
    if threshold is None:
        threshold = DEFAULT_THRESHOLDS.get(low, DEFAULT_THRESHOLDS[None])
    floor = UNIT_ROUNDOFF.get(low, UNIT_ROUNDOFF[None])
    rows, note = _rows(engine, feeds, reference, provider, threshold=threshold, jump=jump, floor=floor)
    first = next((t for t in rows if t.divergent), None)
    # Divergent rows first; then other real amplifications (at least 2x, not negligible in size).
    ranked = sorted((t for t in rows if t.available and t.compute
                     and (t.divergent or (t.jump >= 2.0 and t.rel > threshold / jump))),
                    key=lambda t: t.score(), reverse=True)
    names = getattr(model, "names", None)
    class_pattern = None
    if first is not None and first.module_class and names is not None:
        class_pattern = names.class_pattern(first.module_class)
    return Divergence(
        first=first, top=ranked[: max(int(top), 0)], tensors=rows, note=note, threshold=float(threshold),
        jump=float(jump), model=model.label, backend=getattr(engine, "backend_name", "?"),
        policy=plan.policy.describe(), output_names=list(model.output_names()), low_precision=low,
        class_pattern=class_pattern,
    )


def _rows(engine: Engine, feeds: dict, reference: dict | None, provider: str, *, threshold: float, jump: float,
          floor: float) -> tuple[list[TensorError], str]:
    """The per-tensor rows and how the engine's values were obtained; a big model's reference first, then
    the engine (only one of them holds the weights at a time), segment by segment above the budget
    (:mod:`pytest_trt.locate.segments`)."""
    plan = engine.plan
    model = plan.model
    segments = segment_tensors(model, feeds) if reference is None else []
    big = getattr(model, "has_external_weights", False)
    if big and reference is None:
        engine.release()  # its bound weights go while the reference runs
    if len(segments) > 1:
        with tempfile.TemporaryDirectory(prefix="pytest-trt-locate-") as tmp:
            ref = SpilledValues(Path(tmp))
            for seg in segments:
                ref.add(fp32_intermediates(model, feeds, names=seg, provider=provider))
            if big:
                release_heavy_sessions()
            values = SegmentedValues(engine, feeds, segments)
            rows = compare_tensors(model, plan, values, ref, threshold=threshold, jump=jump, floor=floor)
            return rows, f"{values.note}; compared in {len(segments)} segments (activations over " \
                         f"{segments_budget()} bytes)"
    if reference is None:
        reference = fp32_intermediates(model, feeds, provider=provider)
        if big:
            release_heavy_sessions()
    whole, note = engine.run_layerwise(feeds)
    return compare_tensors(model, plan, whole, reference, threshold=threshold, jump=jump, floor=floor), note


def compare_tensors(model, plan, values: Any, reference: Any, *, threshold: float, jump: float = DEFAULT_JUMP,
                    floor: float = UNIT_ROUNDOFF["fp16"]) -> list[TensorError]:
    """Per-tensor rows in topological order (the work behind :func:`locate_divergence`).

    ``values`` and ``reference``: ``{tensor: array}`` dicts, or anything with ``get``/``in``/``[]`` that
    loads tensors on demand (the segments of a big model)."""
    decisions = plan.nodes if plan is not None else {}
    names = getattr(model, "names", None)
    low = getattr(plan, "low_precision", None)
    limit = LARGEST_FINITE.get(low) if low else None
    masking = (limit, sentinels(model, limit)) if limit is not None else None
    rows: list[TensorError] = []
    eff: dict[str, float] = {}  # tensor -> error carried (rel, or the worst upstream one when unavailable)
    bad: dict[str, bool] = {}   # tensor -> carries NaN/Inf disagreements
    for index, node in enumerate(model.graph.node):
        ins = [i for i in node.input if i]
        up, worst, up_bad = 0.0, None, False
        for name in ins:
            e = eff.get(name, 0.0)
            if e > up:
                up, worst = e, name
            up_bad = up_bad or bad.get(name, False)
        decision = decisions.get(node.name)
        compute = decision is None or decision.kind == "compute"
        precision = decision.precision if decision is not None else None
        for out in node.output:
            if not out or out not in reference:
                continue
            row = TensorError(tensor=out, node=node.name, op_type=node.op_type, index=index, precision=precision,
                              compute=compute, upstream=up, worst_input=worst, upstream_nonfinite=up_bad,
                              **_name_fields(names, node.name))
            _fill(row, values.get(out), reference[out], masking)
            if row.available:
                eff[out] = row.rel
                bad[out] = row.nonfinite > 0
                row.jump = _jump(row, floor)
                row.divergent = compute and (row.new_nonfinite or (row.rel > threshold and row.jump > jump))
            else:
                eff[out] = up
                bad[out] = up_bad
            rows.append(row)
    _require_persistence(model, rows, eff, threshold)
    return rows


def _name_fields(names: Any, raw: str) -> dict[str, Any]:
    """``canonical``, ``module``, ``module_class`` of a row (:mod:`pytest_trt.model.names`)."""
    info = names.get(raw) if names is not None else None
    if info is None:
        return {"canonical": raw, "module": None, "module_class": None}
    return {"canonical": info.canonical, "module": info.module, "module_class": info.module_class}


def _require_persistence(model, rows: list[TensorError], eff: dict, threshold: float) -> None:
    """A jump counts only if the error persists: some consumer (or the graph output) stays above threshold.

    A reduction with cancellation (a LayerNorm's ReduceMean of values with a near-zero mean)
    shows a large error relative to its own small output, but ``x - mean`` does not inherit
    it; blaming it would send the search after a harmless node. Introduced NaN/Inf always counts.
    """
    consumers: dict[str, list[str]] = {}
    for node in model.graph.node:
        outs = [o for o in node.output if o]
        for name in node.input:
            if name:
                consumers.setdefault(name, []).extend(outs)
    graph_outputs = {o.name for o in model.graph.output}
    for row in rows:
        if not row.divergent or row.new_nonfinite or row.tensor in graph_outputs:
            continue
        downstream = [eff[o] for o in consumers.get(row.tensor, ()) if o in eff]
        if downstream and max(downstream) <= threshold:
            row.divergent = False
            row.problem = "error jump does not persist downstream"


# --------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------
def _fill(row: TensorError, actual, expected, masking: tuple | None = None) -> None:
    r = np.asarray(expected)
    row.shape = tuple(int(d) for d in r.shape)
    if actual is None:
        row.available = False
        row.problem = "not exposed by the engine"
        return
    a = np.asarray(actual)
    if a.shape != r.shape:
        row.available = False
        row.problem = f"shape {tuple(a.shape)} differs from the reference's {tuple(r.shape)}"
        return
    wide = np.float64 if np.float64 in (a.dtype, r.dtype) else np.float32
    a = a.astype(wide, copy=False)
    r = r.astype(wide, copy=False)
    if r.size == 0:
        return
    r_fin = np.isfinite(r)
    a_fin = np.isfinite(a)
    both = r_fin & a_fin
    with np.errstate(invalid="ignore", over="ignore"):
        equal = a == r
    disagree = ~(both | equal)  # one side non-finite and not identical (inf == inf is fine)
    inf_here = np.isinf(a) & r_fin
    if masking is not None:
        # a mask's -FLT_MAX as -inf or clamped to -65504: counted apart, neither NaN/Inf nor error
        saturated = saturation(a, r, *masking)
        row.saturated = int(np.count_nonzero(saturated))
        disagree &= ~saturated
        inf_here &= ~saturated
        both &= ~saturated
        r_fin = r_fin & ~saturated
    row.nonfinite = int(np.count_nonzero(disagree))
    row.nan = int(np.count_nonzero(np.isnan(a) & r_fin))
    row.inf = int(np.count_nonzero(inf_here))
    # NaN in the engine where the reference is +-inf counts as a disagreement too (already in `disagree`)
    if np.any(r_fin):
        row.max_ref = float(np.max(np.abs(r[r_fin])))
    if np.any(both):
        with np.errstate(over="ignore", invalid="ignore"):
            diff = np.abs(a[both].astype(np.float64) - r[both].astype(np.float64))
        row.max_abs = float(diff.max())
        row.mean_abs = float(diff.mean())
    if row.nonfinite:
        row.max_abs = math.inf
    row.rel = row.max_abs / max(row.max_ref, REL_FLOOR)


def _jump(row: TensorError, floor: float) -> float:
    if row.new_nonfinite:
        return math.inf
    if math.isinf(row.rel):
        return 1.0 if math.isinf(row.upstream) or row.upstream_nonfinite else math.inf
    if math.isinf(row.upstream):
        return 0.0
    return row.rel / max(row.upstream, floor)


def _nonfinite_text(t: TensorError) -> str:
    parts = []
    if t.inf:
        parts.append(f"{t.inf} Inf")
    if t.nan:
        parts.append(f"{t.nan} NaN")
    other = t.nonfinite - t.inf - t.nan
    if other > 0:
        parts.append(f"{other} other non-finite mismatch(es)")
    return ", ".join(parts) or f"{t.nonfinite} non-finite"


def _table(rows: list[TensorError]) -> list[str]:
    width = min(max(len(t.label) for t in rows), 70)
    cls_width = min(max(len(short_class(t.module_class or "-")) for t in rows), 24)
    head = (f"{'node':<{width}}  {'op':<12} {'prec':<5} {'class':<{cls_width}} {'max abs':>9} {'rel':>9} "
            f"{'jump':>9}  note")
    lines = [head]
    for t in rows:
        name = t.label if len(t.label) <= width else "..." + t.label[-(width - 3):]
        cls = short_class(t.module_class or "-")[:cls_width]
        note = _nonfinite_text(t) if t.nonfinite and t.new_nonfinite else ""
        lines.append(f"{name:<{width}}  {t.op_type[:12]:<12} {(t.precision or '-'):<5} {cls:<{cls_width}} "
                     f"{fmt_error(t.max_abs):>9} {fmt_error(t.rel):>9} {_fmt_jump(t.jump):>9}  {note}".rstrip())
    return lines


def _fmt_jump(x: float) -> str:
    if math.isinf(x):
        return "new"
    return f"x{x:.3g}" if x < 1e4 else f"x{x:.1e}"


def _finite(x: float) -> float:
    return x if math.isfinite(x) else (1e308 if x > 0 else 0.0)


def _json(x: float):
    return json_number(x)
