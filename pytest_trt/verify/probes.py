"""Numeric probes: does a LayerNorm *behave* like FP32, whatever the inspector says?

The engine inspector shows kernel-boundary dtypes only, and not at all for nodes that
no layer's ``Metadata`` names. The probes are a second, independent opinion: each
LayerNorm the pattern selects is cut out of the model, built alone with the same
backend under the **same precisions the full plan gave its nodes**, and fed inputs that
an FP16 LayerNorm cannot handle (ARCHITECTURE.md, "FP16 probes"):

``offset``   ``1000 + 0.05 * randn`` over the hidden size H. FP16 spacing at 1000 is
             0.5, so storing the input (or ``x - mean`` computed from stored values) in
             FP16 wipes out the 0.05 spread: the normalized output is O(1) wrong.
``outlier``  ``randn`` with one element per row set to >= 300: ``|x - mean| > 255.9``,
             so a decomposed LayerNorm's ``Pow`` overflows FP16 (``inf`` -> 0 or NaN).
``sum``      zero mean, ``std = 1.5 * sqrt(65504 / H)``: the sum of squares exceeds
             65504, so an FP16 *accumulation* of the variance overflows, while no single
             square does.

Each output is compared with the FP32 ONNX Runtime run of the same subgraph. A probe
*flags* low precision when the engine output has a non-finite value where the
reference has none, or when ``max|y - y_ref| / max|y_ref|`` exceeds ``tolerance``
(default 0.02; FP32 arithmetic stays below ~2e-3 even on the offset probe, FP16 gives
O(1) or NaN). The verdict per LayerNorm is ``behaves like fp16/bf16`` when any probe
flags, else ``behaves like fp32``.

Where the LayerNorm comes from:

* **decomposed** (torch.onnx at opset < 17): found by *structure*, not by name
  (``ReduceMean(x) -> Sub(x, mean) -> Pow(., 2) -> ReduceMean -> Add(eps) -> Sqrt ->
  Div -> [Mul(gamma)] -> [Add(beta)]`` over the last axis), so GPT-2's ``ln_1`` and
  ViT's ``layernorm_before`` are found too; the Constants they read come along.
* **LayerNormalization** (opset >= 17) over the last axis.

A LayerNorm is probed when the pattern selects any of its nodes. The subgraph's input
is the LayerNorm's float input ``x`` (a graph input of the probe model, FP32: the probe
tests the LayerNorm's own arithmetic, not the precision of whatever fed it in the full
model); gamma/beta are copied from initializers or Constant nodes; its output is the
final node's output. The probe model's plan gives every compute node exactly the
precision the full plan gave it (one exact-name rule per node; checked after resolving).

What a probe result means: it is measured on a **separate build** of the LayerNorm
alone. On TensorRT, fusion with neighbouring layers (and so a Myelin region that
ignores a weak-typing constraint) can differ from the engine under test; on ``emulate``
the numbers describe the emulation (rounding of stored tensors), not TensorRT.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ..backends.base import BuildConfig
from ..core.dtypes import ELEM_FLOAT
from ..core.evidence import EMULATED, engine_evidence
from ..core.jsonsafe import json_number
from ..errors import ModelError, UsageError
from ..model.load import load_model
from ..plan.policy import PrecisionPolicy
from ..plan.rules import Rule
from ..reference.baseline import reference_outputs
from .layernorm_graph import LayerNormInstance, constant_value, find_layernorms

if TYPE_CHECKING:  # pragma: no cover
    from ..backends.base import Engine
    from ..plan import PrecisionPlan

__all__ = [
    "DEFAULT_TOLERANCE",
    "FP16_MAX",
    "LayerNormInstance",
    "ProbeMeasurement",
    "ProbeResult",
    "find_layernorms",
    "extract_layernorm",
    "make_probes",
    "probe_precision",
]

FP16_MAX = 65504.0
DEFAULT_TOLERANCE = 0.02
DEFAULT_ROWS = 4
PROBES = ("offset", "outlier", "sum")
FP32_VERDICT, LOW_VERDICT = "fp32", "low"
VERDICT_TEXT = {FP32_VERDICT: "behaves like fp32", LOW_VERDICT: "behaves like fp16/bf16"}


# --------------------------------------------------------------------------------------
# Extraction
# --------------------------------------------------------------------------------------
def _glob_escape(name: str) -> str:
    return "".join(f"[{c}]" if c in "*?[" else c for c in name)


def probe_shape(plan: PrecisionPlan, inst: LayerNormInstance, rows: int) -> tuple[int, ...]:
    """``[1, ..., rows, H]`` with the rank of ``x``; H from ``x``'s last dim (or gamma's length)."""
    graph = plan.model.graph
    vi = (plan.value_info or {}).get(inst.input)
    if vi is None:
        vi = next((v for v in graph.input if v.name == inst.input), None)
    dims = list(vi.type.tensor_type.shape.dim) if vi is not None and vi.type.tensor_type.HasField("shape") else []
    hidden = dims[-1].dim_value if dims and dims[-1].HasField("dim_value") else 0
    if not hidden:
        node_names = set(inst.nodes)
        for n in graph.node:
            if n.name in node_names and n.op_type in ("LayerNormalization", "Mul"):
                for i in n.input[1:] if n.op_type == "LayerNormalization" else n.input:
                    for init in graph.initializer:
                        if init.name == i:
                            hidden = int(np.prod(init.dims, dtype=np.int64)) if init.dims else 1
                if hidden:
                    break
    if not hidden:
        raise UsageError(f"cannot probe {inst.label}: its hidden size (last dim of {inst.input!r}) is not static")
    rank = max(len(dims), 2)
    return (1,) * (rank - 2) + (rows, hidden)


def _probe_initializers(graph, inst: LayerNormInstance, nodes: list) -> list[onnx.TensorProto]:
    """The constants the LayerNorm's nodes read, as initializers of the probe model."""
    produced = {o for n in nodes for o in n.output if o}
    inits = {i.name: i for i in graph.initializer}
    producers = {o: n for n in graph.node for o in n.output if o}
    new_inits: list[onnx.TensorProto] = []
    for n in nodes:
        for i in n.input:
            if not i or i in produced or i == inst.input:
                continue
            if i in inits:
                if all(t.name != i for t in new_inits):
                    new_inits.append(inits[i])
                continue
            new_inits.append(_constant_initializer(graph, producers, inits, inst, n, i))
    return new_inits


def _constant_initializer(graph, producers, inits, inst: LayerNormInstance, node, name: str) -> onnx.TensorProto:
    """Tensor ``name`` that ``node`` reads from a Constant (or a tied-weight Identity), as an initializer."""
    value = constant_value(graph, producers, name)
    p = producers.get(name)
    if value is None and p is not None and p.op_type == "Identity" and p.input[0] in inits:
        value = numpy_helper.to_array(inits[p.input[0]])  # torch's tied-weight Identity
    if value is None:
        raise UsageError(
            f"cannot probe {inst.label}: node {node.name!r} reads {name!r}, a computed tensor (not an initializer "
            f"or Constant); probes feed only the LayerNorm's input {inst.input!r}"
        )
    return numpy_helper.from_array(value, name)


def extract_layernorm(plan: PrecisionPlan, inst: LayerNormInstance, shape: tuple[int, ...]):
    """The LayerNorm as a standalone ONNX model: input ``x`` (static ``shape``), its constants, output."""
    graph = plan.model.graph
    wanted = set(inst.nodes)
    nodes = [n for n in graph.node if n.name in wanted]
    new_inits = _probe_initializers(graph, inst, nodes)
    elem = plan.elem_types.get(inst.input, ELEM_FLOAT)
    out_elem = plan.elem_types.get(inst.output, elem)
    g = helper.make_graph(
        nodes, f"probe {inst.label}",
        [helper.make_tensor_value_info(inst.input, elem, list(shape))],
        [helper.make_tensor_value_info(inst.output, out_elem, list(shape))],
        new_inits,
    )
    src = plan.model.proto
    model = helper.make_model(g, opset_imports=list(src.opset_import), producer_name="pytest_trt.probes")
    model.ir_version = src.ir_version
    try:
        onnx.checker.check_model(model)
    except Exception as exc:  # noqa: BLE001 - the checker raises several types
        raise ModelError(f"the probe subgraph of {inst.label} is not a valid model: {exc}") from exc
    return model


def sub_plan(plan: PrecisionPlan, inst: LayerNormInstance, proto) -> PrecisionPlan:
    """The plan of the probe model: every compute node keeps the full plan's precision."""
    model = load_model(proto)
    if plan.as_is:
        policy = PrecisionPolicy(as_is=True)
    else:
        rules = [Rule(_glob_escape(n), precision) for n in inst.nodes
                 if plan.nodes[n].kind == "compute" and (precision := plan.nodes[n].precision)]
        policy = PrecisionPolicy(default=plan.policy.default, rules=tuple(rules))
    sub = policy.resolve(model)
    differ = [n for n in inst.nodes
              if sub.nodes[n].precision != plan.nodes[n].precision]
    if differ:
        raise ModelError(
            f"the probe subgraph of {inst.label} does not keep the full plan's precisions for "
            f"{', '.join(f'{n} ({plan.nodes[n].precision} -> {sub.nodes[n].precision})' for n in differ[:3])}"
        )
    return sub


# --------------------------------------------------------------------------------------
# Probes and measurements
# --------------------------------------------------------------------------------------
def make_probes(shape: tuple[int, ...], *, seed: int = 0) -> dict[str, Any]:
    """``{probe name: float32 array of ``shape``}``; H = ``shape[-1]``."""
    rng = np.random.default_rng(seed)
    hidden = shape[-1]
    rows = int(np.prod(shape[:-1]))
    offset = 1000.0 + 0.05 * rng.standard_normal((rows, hidden))
    outlier = rng.standard_normal((rows, hidden))
    # |x - mean| must exceed sqrt(65504) = 255.9 after the outlier's own share of the mean.
    big = max(300.0, 260.0 * hidden / max(hidden - 1, 1))
    outlier[np.arange(rows), rng.integers(0, hidden, rows)] = big
    spread = 1.5 * math.sqrt(FP16_MAX / hidden)
    total = spread * rng.standard_normal((rows, hidden))
    total -= total.mean(axis=-1, keepdims=True)
    return {name: arr.reshape(shape).astype(np.float32) for name, arr in
            (("offset", offset), ("outlier", outlier), ("sum", total))}


PROBE_TEXT = {
    "offset": "1000 + 0.05*randn (FP16 spacing at 1000 is 0.5)",
    "outlier": "randn with one element >= 300 per row (|x-mean|^2 > 65504)",
    "sum": "std 1.5*sqrt(65504/H) (sum of squares > 65504)",
}


@dataclass
class ProbeMeasurement:
    """One probe's figures against the FP32 ONNX Runtime run of the same subgraph."""

    probe: str
    description: str
    max_abs_err: float
    rel_err: float          # max_abs_err / max|reference|
    nonfinite: int          # non-finite engine outputs where the reference is finite
    total: int
    flagged: bool

    def line(self) -> str:
        nf = f", {self.nonfinite}/{self.total} non-finite" if self.nonfinite else ""
        return (f"{self.probe}: max abs err {self.max_abs_err:.3g}, rel {self.rel_err:.3g}{nf}"
                f"{' -> low precision' if self.flagged else ''}")

    def to_json(self) -> dict[str, Any]:
        return {"probe": self.probe, "description": self.description, "max_abs_err": json_number(self.max_abs_err),
                "rel_err": json_number(self.rel_err), "nonfinite": self.nonfinite, "total": self.total,
                "flagged": self.flagged}


@dataclass
class ProbeResult:
    """The probes' verdict on one LayerNorm.

    ``verdict`` is ``fp32`` or ``low``; :attr:`text` reads ``behaves like fp32`` /
    ``behaves like fp16/bf16``. ``planned`` is the full plan's precision of its compute
    nodes (``mixed`` when they differ).
    """

    label: str
    form: str
    nodes: list[str]
    compute_nodes: list[str]
    planned: str
    hidden: int
    backend: str
    emulated: bool
    tolerance: float
    measurements: list[ProbeMeasurement]
    verdict: str
    notes: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return VERDICT_TEXT[self.verdict]

    def behaves_like(self, precision: str) -> bool:
        """True when the verdict agrees with ``precision`` (fp32 vs fp16/bf16)."""
        return (self.verdict == FP32_VERDICT) == (precision == "fp32")

    def line(self) -> str:
        figures = "; ".join(m.line() for m in self.measurements)
        return f"{self.label} ({self.form}, planned {self.planned}, H={self.hidden}): {self.text} [{figures}]"

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "form": self.form, "nodes": list(self.nodes),
                "compute_nodes": list(self.compute_nodes), "planned": self.planned, "hidden": self.hidden,
                "backend": self.backend, "emulated": self.emulated, "tolerance": self.tolerance,
                "verdict": self.verdict, "text": self.text,
                "measurements": [m.to_json() for m in self.measurements], "notes": list(self.notes)}

    def __str__(self) -> str:
        return self.line()


def measure(name: str, actual, expected, tolerance: float) -> ProbeMeasurement:
    a = np.asarray(actual, dtype=np.float64)
    e = np.asarray(expected, dtype=np.float64)
    ref_ok = np.isfinite(e)
    bad = ref_ok & ~np.isfinite(a)
    both = ref_ok & np.isfinite(a)
    max_abs = float(np.max(np.abs(a[both] - e[both]))) if both.any() else 0.0
    scale = float(np.max(np.abs(e[ref_ok]))) if ref_ok.any() else 0.0
    rel = max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else math.inf)
    nonfinite = int(bad.sum())
    return ProbeMeasurement(name, PROBE_TEXT.get(name, name), max_abs, rel, nonfinite, int(e.size),
                            bool(nonfinite or rel > tolerance))


# --------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------
def layernorms_for(plan: PrecisionPlan, names) -> list[LayerNormInstance]:
    """The LayerNorms with at least one node among ``names``."""
    selected = set(names)
    return [inst for inst in find_layernorms(plan) if selected & set(inst.nodes)]


def probe_layernorm(engine: Engine, inst: LayerNormInstance, *, cache=None, backend=None, rows: int = DEFAULT_ROWS,
                    seed: int = 0, tolerance: float = DEFAULT_TOLERANCE) -> ProbeResult:
    """Build ``inst`` alone with the engine's backend and plan precisions, and run the probes."""
    plan = engine.plan
    shape = probe_shape(plan, inst, rows * len(PROBES))
    proto = extract_layernorm(plan, inst, shape)
    sub = sub_plan(plan, inst, proto)
    backend = backend or engine.backend
    config = engine.config or BuildConfig()
    config = dataclasses.replace(config, profiles=({inst.input: (shape, shape, shape)},))
    probe_engine = backend.build(sub, config, cache)

    probes = make_probes((*shape[:-2], rows, shape[-1]), seed=seed)
    stacked = np.concatenate([probes[p] for p in PROBES], axis=-2)
    in_dtype = np.float16 if plan.elem_types.get(inst.input) == 10 else np.float32
    feeds = {inst.input: stacked.astype(in_dtype)}
    actual = probe_engine.run(feeds)[inst.output]
    expected = reference_outputs(sub.model, {inst.input: stacked}, baseline="fp32")[inst.output]
    measurements = []
    for k, name in enumerate(PROBES):
        sl = [slice(None)] * len(shape)
        sl[-2] = slice(k * rows, (k + 1) * rows)
        measurements.append(measure(name, np.asarray(actual)[tuple(sl)], np.asarray(expected)[tuple(sl)],
                                    tolerance))
    planned_of = {n: d.precision for n in inst.nodes if (d := plan.nodes[n]).kind == "compute" and d.precision}
    compute = list(planned_of)
    precs = sorted(set(planned_of.values()))
    planned = precs[0] if len(precs) == 1 else "mixed"
    emulated = engine_evidence(probe_engine) == EMULATED
    notes = [f"built alone ({len(inst.nodes)} nodes) with backend {probe_engine.backend_name}: fusion with "
             f"neighbouring layers may differ from the engine under test"]
    if emulated:
        notes.append(f"{probe_engine.backend_name} backend: the figures describe the emulation's rounding of stored "
                     f"tensors, not TensorRT")
    verdict = LOW_VERDICT if any(m.flagged for m in measurements) else FP32_VERDICT
    return ProbeResult(inst.label, inst.form, list(inst.nodes), compute, planned, shape[-1],
                       probe_engine.backend_name, emulated, tolerance, measurements, verdict, notes)


def probe_precision(engine: Engine, pattern: str, *, cache=None, rows: int = DEFAULT_ROWS, seed: int = 0,
                    tolerance: float = DEFAULT_TOLERANCE) -> list[ProbeResult]:
    """Numeric probes for every LayerNorm with a node matching ``pattern``.

    ``pattern`` is resolved with the engine's plan (:class:`~pytest_trt.errors.PatternError`
    when it matches nothing; :class:`~pytest_trt.errors.UsageError` when it selects no
    LayerNorm). Each LayerNorm is built alone with the engine's backend, through ``cache``
    (default: the cache the engine came from), and probed; see the module docstring.

    >>> [r.text for r in probe_precision(engine, "*/LayerNorm/*")]   # doctest: +SKIP
    ['behaves like fp32', 'behaves like fp32']
    """
    plan = engine.plan
    names = plan.match(pattern)
    instances = layernorms_for(plan, names)
    if not instances:
        raise UsageError(
            f"probe_precision({pattern!r}): the pattern selects no LayerNorm (decomposed ReduceMean..Add over "
            f"the last axis, or LayerNormalization); numeric probes exist for LayerNorm only. Use "
            f"method='inspect' for other nodes."
        )
    if cache is None:
        cache = engine.artifact_cache
    return [probe_layernorm(engine, inst, cache=cache, rows=rows, seed=seed, tolerance=tolerance)
            for inst in instances]
