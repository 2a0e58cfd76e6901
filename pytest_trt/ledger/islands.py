"""What an FP32 island costs: the same plan timed with and without it, same inputs, same iterations.

For the islands an FP32-fallback search proposes (``suggest``): the plan with every proposed
pattern kept FP32 ("with") against, for each island, the plan without that one pattern
("without": its nodes back in the low precision). The difference of the end-to-end medians is
what keeping the island costs on this timing source; the quartiles beside it say how much of it
is noise. Timing sources as for the ledger (:mod:`pytest_trt.ledger.timing`): the engine's own
(TensorRT) or ONNX Runtime CUDA; elsewhere the result says it cannot be measured on this
backend, and why. Plans that fail accuracy are timed all the same: only time is asked here.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..core.jsonsafe import json_number
from ..errors import BackendUnavailable, UsageError
from ..layers.timing import sample_stats
from .ort_cuda import OrtTimingError, ort_cuda_reason, time_plan
from .timing import DEFAULT_ITERATIONS, DEFAULT_WARMUP, backend_timing_reason, check_timing, engine_profile

if TYPE_CHECKING:  # pragma: no cover
    from ..layers.timing import SampleStats

__all__ = ["IslandCosts", "island_costs"]

#: the timing path of an engine that times its own layers (the profiles name the actual source)
ENGINE = "engine"


@dataclass
class IslandCosts:
    """The measured cost of each proposed FP32 island (``reason`` set, ``islands`` empty: not measured)."""

    source: str | None
    warmup: int
    iterations: int
    with_islands: SampleStats | None = None
    islands: list[dict[str, Any]] = field(default_factory=list)
    reason: str | None = None
    #: how the timing source is labelled: the profile's (the engine's own :attr:`Engine.timing_label`)
    label: str | None = None

    @property
    def measured(self) -> bool:
        return self.source is not None and self.with_islands is not None

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "label": self.label if self.source is not None else None,
                "warmup": self.warmup,
                "iterations": self.iterations,
                "with_islands": self.with_islands.to_json() if self.with_islands is not None else None,
                "islands": list(self.islands), "reason": self.reason}

    def lines(self) -> list[str]:
        """The suggestion's lines about the islands' cost."""
        if not self.measured:
            return [f"  cost of the FP32 islands: cannot be measured on this backend ({self.reason})"]
        assert self.with_islands is not None and self.source is not None
        out = [f"  what each FP32 island costs ({self.label or self.source}; end-to-end median of "
               f"{self.iterations} runs after {self.warmup} warm-ups, same inputs; with every island: "
               f"{self.with_islands.median:.4g} ms, quartiles {self.with_islands.q1:.4g}-{self.with_islands.q3:.4g}):"]
        width = max(len(i["pattern"]) for i in self.islands)
        for i in self.islands:
            out.append(f"    {i['pattern']:<{width}}  {i['delta_ms']:+.4g} ms ({i['delta_share']:+.1%}) vs "
                       f"{i['without']['median_ms']:.4g} ms with its {i['nodes']} node(s) in low precision")
        return out


def island_costs(model, base_policy, patterns, feeds: dict, *, backend, cache=None, config=None,
                 timing: str = "auto", warmup: int = DEFAULT_WARMUP, iterations: int = DEFAULT_ITERATIONS,
                 nodes: dict[str, int] | None = None, on_engine=None) -> IslandCosts:
    """Time ``base_policy`` + ``patterns`` against the same without each pattern (see the module docstring).

    ``model``: a :class:`~pytest_trt.model.Model`; ``nodes``: pattern -> how many nodes it keeps
    FP32 (for the message); ``on_engine(plan, engine)`` after every engine built (TensorRT timing).
    """
    check_timing(timing)
    costs = IslandCosts(source=None, warmup=warmup, iterations=iterations)
    if timing == "off" or not patterns:
        costs.reason = "not timed (timing off)" if timing == "off" else "no island proposed"
        return costs
    engine_reason = backend_timing_reason(backend)
    if timing in ("auto", "engine") and engine_reason is None:
        source = ENGINE  # the engine's own timing: its profiles say their source and label
    elif timing == "engine":
        raise UsageError(f"timing='engine': {engine_reason}")
    else:
        ort_reason = ort_cuda_reason()
        if ort_reason is not None:
            if timing == "onnxruntime-cuda":
                raise UsageError(f"timing='onnxruntime-cuda': {ort_reason}")
            costs.reason = f"{engine_reason}; no ONNX Runtime CUDA timing either: {ort_reason}"
            return costs
        source = "onnxruntime-cuda"

    measured: list = []

    def latency(policy):
        plan = policy.resolve(model)
        if source == "onnxruntime-cuda":
            profile = time_plan(plan, feeds, warmup=warmup, iterations=iterations, per_node=False)
        else:
            engine = backend.build(plan, config, cache)
            if on_engine is not None:
                on_engine(plan, engine)
            profile = engine_profile(engine, feeds, warmup=warmup, iterations=iterations, per_layer=False)
        measured.append(profile)
        return sample_stats(profile.end_to_end_ms)

    def keep(selected):
        kept = tuple(base_policy.keep_fp32) + tuple(p for p in selected if p not in base_policy.keep_fp32)
        return replace(base_policy, keep_fp32=kept)

    try:
        costs.with_islands = latency(keep(patterns))
        for pattern in patterns:
            without = latency(keep([p for p in patterns if p != pattern]))
            if costs.with_islands is None or without is None:
                continue
            delta = costs.with_islands.median - without.median
            costs.islands.append({"pattern": pattern, "nodes": (nodes or {}).get(pattern, 0),
                                  "without": without.to_json(), "delta_ms": json_number(delta, 6),
                                  "delta_share": json_number(delta / without.median if without.median else 0.0, 6)})
    except (OrtTimingError, BackendUnavailable) as exc:
        if timing != "auto":
            raise
        costs.with_islands, costs.islands = None, []
        costs.reason = f"the timing runs failed: {exc}"
        return costs
    if measured:  # what the profiles say they are (the engine's own timing: its source and label)
        costs.source, costs.label = measured[0].source, measured[0].label
    return costs
