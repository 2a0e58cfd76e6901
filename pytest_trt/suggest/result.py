"""What the FP32-fallback search found: every attempt, the suggestion, and its message.

:class:`Attempt` is one built and compared candidate set; :class:`Suggestion` the result
of :func:`~pytest_trt.suggest.suggest_fp32_islands`: the patterns to paste (pytest, CLI and
marker forms), why the search ended (``reason``), the accuracy, the share kept in FP32,
the input sets checked, and the message that says all of it for a person.
"""

from __future__ import annotations

import json
import math
import shlex
from dataclasses import dataclass, field
from typing import Any

from ..compare.criterion import Criterion
from ..core.formatting import as_float, fmt_error
from .groups import Group

__all__ = ["Attempt", "Suggestion"]


@dataclass
class Attempt:
    """One built and compared candidate set."""

    patterns: tuple
    phase: str  # initial | greedy | refine | prune | fp32-check
    passed: bool
    accuracy: dict
    low_nodes: int
    cache_hit: bool
    seconds: float
    fingerprint: str = ""
    first_divergence: str | None = None
    #: outputs within tolerance on every input set checked
    outputs_passed: bool = False
    #: nodes that introduced NaN/Inf where the FP32 reference is finite (any input set)
    nonfinite_nodes: list = field(default_factory=list)
    #: per input set: {"label", "seed", "outputs_passed", "nonfinite_nodes", "accuracy"} (stops at the
    #: first set whose outputs fail)
    inputs: list = field(default_factory=list)
    #: index of the first input set that failed (outputs or intermediates), None when all passed
    failing_set: int | None = None
    #: bytes this candidate's build added to the cache (its graph; a big model's weight set only for the
    #: first candidate that needs it: every candidate shares it)
    bytes_written: int = 0

    @property
    def worst_max_abs(self) -> float:
        """The largest ``max_abs`` over the outputs on the user's feeds (NaN/Inf count as inf)."""
        return max((_figure(v["max_abs"]) for v in self.accuracy.values()), default=0.0)

    def to_json(self) -> dict[str, Any]:
        """The attempt as a JSON record (without the per-set accuracy)."""
        return {"patterns": list(self.patterns), "phase": self.phase, "passed": self.passed,
                "outputs_passed": self.outputs_passed, "nonfinite_nodes": list(self.nonfinite_nodes),
                "accuracy": self.accuracy, "low_precision_nodes": self.low_nodes, "cache_hit": self.cache_hit,
                "seconds": round(self.seconds, 4), "first_divergence": self.first_divergence,
                "bytes_written": self.bytes_written,
                "inputs": [{k: v for k, v in i.items() if k != "accuracy"} for i in self.inputs]}


@dataclass
class Suggestion:
    """Result of :func:`suggest_fp32_islands`.

    Attributes:
        passed: an answer was found (``reason`` ``found`` or ``already-passes``; ``patterns`` may
            be empty: nothing to change). False for ``fp32-in-effect`` and ``passes-output-only``,
            whose ``patterns``/``policy`` are kept for inspection but are no answer.
        patterns: keep_fp32 patterns to ADD to the policy (in graph order).
        groups: the chosen :class:`Group` objects.
        policy: the policy of ``patterns`` (base policy + patterns), None when nothing was kept.
        base_policy: the policy the search started from.
        builds: every engine built or loaded (distinct plans, re-loads to re-check an earlier plan,
            TensorRT layerwise builds); ``cache_hits`` of them came from the artifact cache.
        inputs: per input set of the final (or closest) plan: ``{"label", "seed", "outputs_passed",
            "nonfinite_nodes", "accuracy"}`` (and ``"masking_nodes"``, where masking values saturated
            to +-inf as intended, once the outputs passed); the user's feeds first, then the re-check seeds.
        recheck_seeds, recheck_source: the re-check seeds and how their feeds were made.
        nonfinite_nodes: nodes that introduced NaN/Inf where the FP32 reference is finite, under
            the plan of ``patterns`` (``passes-output-only``).
        fp32_nodes, fp32_share, flops, fp32_flops_share: compute nodes kept FP32 by the final plan,
            their share by count, and by a FLOPs estimate (:mod:`pytest_trt.suggest.flops`).
        accuracy: ``{output: {"max_abs", "max_rel", "passed"}}`` of the final plan (the initial
            plan's when nothing passed).
        initial_accuracy: the same for the policy as given.
        compute_nodes, low_nodes: compute nodes of the model, and those left in low precision.
        low_precision: fp16 / bf16.
        fp32_passes: whether the fully-FP32 plan passes (None: not built, not needed).
        reason: ``already-passes`` | ``found`` | ``fp32-in-effect`` | ``passes-output-only`` |
            ``fails-in-fp32`` | ``exhausted`` | ``budget``.
        first_divergence: the first divergent node of the policy as given.
        attempts: every build, in order.
        alternatives: broader patterns covering the same kind of module elsewhere (NOT built).
    """

    passed: bool
    patterns: list
    groups: list
    policy: Any
    base_policy: Any
    builds: int
    cache_hits: int
    accuracy: dict
    initial_accuracy: dict
    compute_nodes: int
    low_nodes: int
    low_precision: str | None
    fp32_passes: bool | None
    reason: str
    model: str = ""
    backend: str = ""
    #: what the backend says its results are when they are not TensorRT's (``Backend.disclaimer``)
    backend_disclaimer: str | None = None
    #: the criterion every candidate was judged by (tolerances and floors per output, with sources)
    criterion: Criterion | None = None
    first_divergence: str | None = None
    attempts: list = field(default_factory=list)
    alternatives: list = field(default_factory=list)
    layerwise_runs: int = 0
    layerwise_note: str = ""
    seconds: float = 0.0
    minimal: bool = True
    fp32_accuracy: dict = field(default_factory=dict)
    blocked: list = field(default_factory=list)
    inputs: list = field(default_factory=list)
    recheck_seeds: list = field(default_factory=list)
    recheck_source: str = ""
    nonfinite_nodes: list = field(default_factory=list)
    flops: int = 0
    fp32_flops: int = 0
    #: what each proposed island costs in time (:class:`~pytest_trt.ledger.islands.IslandCosts`), when found
    island_costs: Any = None

    # -- derived ---------------------------------------------------------------------------
    @property
    def rtol(self) -> Any:
        """The criterion's rtol: one number when every output has the same, else ``{output: value}``."""
        return self._tolerance("rtol")

    @property
    def atol(self) -> Any:
        """The criterion's atol: one number when every output has the same, else ``{output: value}``."""
        return self._tolerance("atol")

    def _tolerance(self, what: str) -> Any:
        if self.criterion is None:
            return None
        values = self.criterion.tolerances()[what]
        distinct = set(values.values())
        return distinct.pop() if len(distinct) == 1 else values

    @property
    def fp32_nodes(self) -> int:
        """Compute nodes the final plan keeps in FP32."""
        return self.compute_nodes - self.low_nodes

    @property
    def fp32_share(self) -> float:
        """Share of compute nodes kept in FP32 by the final plan (by count)."""
        return self.fp32_nodes / self.compute_nodes if self.compute_nodes else 0.0

    @property
    def fp32_flops_share(self) -> float | None:
        """Share of the estimated FLOPs kept in FP32 (None when no estimate)."""
        return self.fp32_flops / self.flops if self.flops else None

    @property
    def fp32_in_effect(self) -> bool:
        """More than half of the compute nodes kept FP32 by a plan that was meant to run in low precision."""
        return self.reason == "fp32-in-effect"

    @property
    def passes_output_only(self) -> bool:
        """The outputs pass, but some tensor inside is NaN/Inf where the FP32 reference is finite."""
        return self.reason == "passes-output-only"
    @property
    def low_precision_share(self) -> float:
        """Share of compute nodes left in low precision by the final plan."""
        return self.low_nodes / self.compute_nodes if self.compute_nodes else 0.0

    @property
    def keep_fp32(self) -> list:
        """The full keep_fp32 list to write in the marker: the policy's own plus the suggested ones."""
        base = list(self.base_policy.keep_fp32) if self.base_policy is not None else []
        return base + [p for p in self.patterns if p not in base]

    @property
    def pytest_args(self) -> list:
        """``["--trt-keep-fp32", PATTERN, ...]`` for the pytest command line."""
        return [a for p in self.patterns for a in ("--trt-keep-fp32", p)]

    @property
    def cli_args(self) -> list:
        """``["--keep-fp32", PATTERN, ...]`` for ``pytest-trt compare``."""
        return [a for p in self.patterns for a in ("--keep-fp32", p)]

    @property
    def marker(self) -> str:
        """``@pytest.mark.trt(keep_fp32=[...])``, ready to paste."""
        return "@pytest.mark.trt(keep_fp32=[" + ", ".join(json.dumps(p) for p in self.keep_fp32) + "])"

    # -- rendering ------------------------------------------------------------------------
    def message(self) -> str:
        """The search's report for a person: what was tried, what passes, what to paste."""
        lines = self._head_lines()
        builds = f"{self.builds} build{'s' if self.builds != 1 else ''}"
        if self.cache_hits:
            builds += f" ({self.cache_hits} from the cache)"
        written = sum(int(getattr(a, "bytes_written", 0) or 0) for a in self.attempts)
        if written:
            builds += f", {written / 1e6:.1f} MB written to the cache"
        timing = f"{builds}, {self.seconds:.1f}s"
        share = f"{self.low_nodes} of {self.compute_nodes} compute nodes ({self.low_precision_share:.0%}) stay " \
                f"{self.low_precision or 'low precision'}"
        if self.reason == "already-passes":
            lines.append(f"nothing needs to change: the policy as given passes ({timing}); {share}")
            lines.append(self._checked_line())
        elif self.reason == "fp32-in-effect":
            lines += self._fp32_in_effect_lines(timing)
        elif self.reason == "passes-output-only":
            lines += self._output_only_lines(timing)
        elif self.passed:
            lines += self._found_lines(timing, share)
        else:
            lines += self._nothing_passed_lines(timing)
        return "\n".join(lines)

    def _head_lines(self) -> list[str]:
        head = f"FP32-island search for {self.model} [{self.base_policy.describe()}] on {self.backend}"
        if self.backend_disclaimer:
            head += f" ({self.backend_disclaimer})"
        judged = self.criterion.describe() if self.criterion is not None else "-"
        lines = [head, f"  criterion: {judged}"]
        lines.append(f"  as given: {'passes' if self.reason == 'already-passes' else 'fails'} "
                     f"({_acc_text(self.initial_accuracy)})"
                     + (f"; first divergent node: {self.first_divergence}" if self.first_divergence else ""))
        return lines

    def _fp32_in_effect_lines(self, timing: str) -> list[str]:
        flops = (f", ~{self.fp32_flops_share:.0%} of the estimated FLOPs" if self.fp32_flops_share is not None
                 else "")
        what = (f"keeping {', '.join(self.patterns)} in FP32" if self.patterns else "the policy as given")
        return [f"FP32 in effect ({timing}): {what} passes, but keeps {self.fp32_nodes} of "
                f"{self.compute_nodes} compute nodes ({self.fp32_share:.0%}{flops}) in FP32: that is not a "
                f"{self.low_precision} engine, so it is not called found. Check the tolerance (is it "
                f"tighter than {self.low_precision} can meet on a healthy model?) and the inputs.",
                f"  accuracy: {_acc_text(self.accuracy)}",
                self._checked_line()]

    def _output_only_lines(self, timing: str) -> list[str]:
        return [f"passes the output check only ({timing}): with {', '.join(self.patterns) or 'the policy as given'} "
                f"kept FP32 the outputs are within tolerance, but NaN/Inf appear inside where the FP32 "
                f"reference is finite, first at: {', '.join(self.nonfinite_nodes[:5])}"
                f"{', ...' if len(self.nonfinite_nodes) > 5 else ''}. Not an answer: "
                + (f"the policy's own rules keep {', '.join(self.blocked[:3])} in {self.low_precision}; "
                   f"remove those rules" if self.blocked else
                   "keep those nodes' modules FP32 too (raise max_builds), or check the inputs") + ".",
                self._checked_line()]

    def _found_lines(self, timing: str, share: str) -> list[str]:
        n = len(self.patterns)
        lines = [f"found ({timing}): keep {n} more pattern{'s' if n != 1 else ''} in FP32 -> passes"
                 + ("" if self.minimal else " (build budget ran out before pruning: may not be minimal)")]
        groups: list[Group] = self.groups
        width = max(len(g.pattern) for g in groups)
        for g in groups:
            classes = f" ({', '.join(g.classes)})" if g.classes and g.kind != "class" else ""
            lines.append(f"    {g.pattern:<{width}}  {g.kind}, {len(g.nodes)} node{'s' if len(g.nodes) != 1 else ''}"
                         f"{classes}")
        lines.append(f"  accuracy: {_acc_text(self.accuracy)}")
        lines.append(f"  low precision: {share}")
        lines.append(self._checked_line())
        lines.append("  pytest:  " + " ".join(shlex.quote(a) for a in self.pytest_args))
        lines.append("  CLI:     " + " ".join(shlex.quote(a) for a in self.cli_args))
        lines.append("  marker:  " + self.marker)
        if self.island_costs is not None:
            lines += self.island_costs.lines()
        if self.alternatives:
            alts = ", ".join(f"{a['pattern']} ({a['scopes']} scopes)" for a in self.alternatives)
            lines.append(f"  note: minimal for THESE inputs; other scopes of the same kind stayed "
                         f"{self.low_precision}. Broader, not built: {alts}")
        return lines

    def _nothing_passed_lines(self, timing: str) -> list[str]:
        lines = []
        if self.reason == "fails-in-fp32":
            lines.append(f"no FP32 islands can fix this ({timing}): the model fails even fully in FP32 "
                         f"({_acc_text(self.fp32_accuracy)}). The tolerance is tighter than this backend's FP32 "
                         f"matches ONNX Runtime: loosen it, or check FP32 settings (TF32).")
        elif self.reason == "exhausted":
            held = f" (e.g. {', '.join(self.blocked[:3])})" if self.blocked else ""
            lines.append(f"no passing set ({timing}): every candidate group was tried, but the policy's own rules "
                         f"keep some nodes in {self.low_precision}{held}; the fully-FP32 plan "
                         f"{'passes' if self.fp32_passes else 'was not built'}. Remove the rules that force low "
                         f"precision, or widen the tolerance.")
        else:
            fp32 = ("the fully-FP32 plan passes, so a larger set would" if self.fp32_passes
                    else "the fully-FP32 plan was not built")
            lines.append(f"no passing set within {self.builds} build{'s' if self.builds != 1 else ''} (max_builds); "
                         f"{fp32}. Raise max_builds, "
                         f"or start from the closest set tried: {', '.join(self._closest()) or '(none)'}")
        if self.inputs and self.reason != "fails-in-fp32":
            lines.append(self._checked_line().replace("checked on", "closest set tried, checked on", 1))
        return lines

    def _checked_line(self) -> str:
        """``  checked on: your inputs (seed 0), seeds 1, 2, 3 (...): outputs pass, no NaN/Inf inside``."""
        if not self.inputs:
            return "  checked on: -"
        labels = ", ".join(i["label"] for i in self.inputs)
        bad = [i for i in self.inputs if not i["outputs_passed"] or i["nonfinite_nodes"]]
        if not bad and len(self.inputs) == 1 + len(self.recheck_seeds):
            verdict = "outputs pass, no NaN/Inf inside where FP32 is finite"
        else:
            parts = []
            for i in bad:
                if not i["outputs_passed"]:
                    parts.append(f"{i['label']}: outputs fail")
                else:
                    parts.append(f"{i['label']}: NaN/Inf inside at {', '.join(i['nonfinite_nodes'][:3])}")
            verdict = "; ".join(parts) or "not every input set was reached"
        masking = list(dict.fromkeys(n for i in self.inputs for n in i.get("masking_nodes", ())))
        if masking:
            shown = ", ".join(masking[:3]) + (f" and {len(masking) - 3} more" if len(masking) > 3 else "")
            verdict += (f" (masking values such as an attention mask's -FLT_MAX become +-inf or the largest finite "
                        f"value at {shown}, as the mask intends: not counted)")
        source = f" ({self.recheck_source})" if self.recheck_source else ""
        return f"  checked on: {labels}{source}: {verdict}"

    def _closest(self) -> list:
        tried = [a for a in self.attempts if a.phase != "fp32-check"]
        if not tried:
            return []
        best = min(tried, key=lambda a: a.worst_max_abs)
        return list(best.patterns)

    def __str__(self) -> str:
        return self.message()

    def to_json(self) -> dict[str, Any]:
        """The suggestion as a JSON record (``pytest-trt suggest --json``)."""
        return {
            "model": self.model, "backend": self.backend, "backend_disclaimer": self.backend_disclaimer,
            "passed": self.passed, "reason": self.reason,
            "base_policy": self.base_policy.describe() if self.base_policy is not None else None,
            "policy": self.policy.describe() if self.policy is not None else None,
            "patterns": list(self.patterns), "groups": [g.to_json() for g in self.groups],
            "keep_fp32": self.keep_fp32, "pytest_args": self.pytest_args, "cli_args": self.cli_args,
            "marker": self.marker, "builds": self.builds, "cache_hits": self.cache_hits,
            "layerwise_runs": self.layerwise_runs, "seconds": round(self.seconds, 3),
            "accuracy": self.accuracy, "initial_accuracy": self.initial_accuracy,
            "fp32_passes": self.fp32_passes, "fp32_accuracy": self.fp32_accuracy,
            "compute_nodes": self.compute_nodes, "low_precision_nodes": self.low_nodes,
            "low_precision": self.low_precision, "low_precision_share": round(self.low_precision_share, 4),
            "first_divergence": self.first_divergence, "minimal": self.minimal, "blocked": list(self.blocked),
            "rtol": self.rtol, "atol": self.atol,
            "criterion": None if self.criterion is None else self.criterion.to_json(),
            "alternatives": self.alternatives,
            "layerwise_note": self.layerwise_note, "attempts": [a.to_json() for a in self.attempts],
            "inputs": list(self.inputs), "recheck_seeds": list(self.recheck_seeds),
            "recheck_source": self.recheck_source, "passes_output_only": self.passes_output_only,
            "nonfinite_nodes": list(self.nonfinite_nodes), "fp32_in_effect": self.fp32_in_effect,
            "fp32_nodes": self.fp32_nodes, "fp32_share": round(self.fp32_share, 4),
            "island_costs": self.island_costs.to_json() if self.island_costs is not None else None,
            "flops": {"total": self.flops, "fp32": self.fp32_flops,
                      "fp32_share": None if self.fp32_flops_share is None else round(self.fp32_flops_share, 4),
                      "estimate": "MatMul/Gemm/Conv: 2 x output elements x reduction size; other nodes: elements"},
        }



def _figure(x: Any) -> float:
    """An accuracy figure (:func:`~pytest_trt.suggest.recheck.accuracy_record`, JSON form) as a float,
    0 where not computed."""
    value = as_float(x)
    return 0.0 if value is None else value


def _acc_text(accuracy: dict) -> str:
    if not accuracy:
        return "-"
    parts = []
    for name, v in accuracy.items():
        text = f"{name} max abs {fmt_error(_figure(v['max_abs']))}, max rel {fmt_error(_figure(v['max_rel']))}"
        if v.get("nan") or v.get("inf"):
            text = f"{name} " + ", ".join(f"{v[k]} {'NaN' if k == 'nan' else 'Inf'}" for k in ("nan", "inf")
                                          if v.get(k))
            if v["max_abs"] is not None and math.isfinite(_figure(v["max_abs"])):
                text += f", max abs of the finite elements {fmt_error(_figure(v['max_abs']))}"
        if not v["passed"]:
            text += f" ({v['mismatched']} of {v['total']} mismatched)"
        parts.append(text)
    return "; ".join(parts)
