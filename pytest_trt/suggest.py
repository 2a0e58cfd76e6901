"""FP32-fallback search: the fewest FP32 islands that make a low-precision model pass.

:func:`suggest_fp32_islands` answers "what do I add to ``keep_fp32`` so this model passes
at this tolerance on these inputs?" with a short list of patterns, every one of which
was verified by a real build and run on the chosen backend.

Search space: groups, not single nodes
--------------------------------------
Candidates are derived from the plan's low-precision compute nodes:

* ``scope``: a node's name scope, ``/encoder/layer.0/attention/output/LayerNorm/*``;
* ``node``: the node's exact name, for nodes at the root or directly inside a *block*
  (``/encoder/layer.0/attention/self/MatMul`` lives next to the ``query/`` sub-scope);
* ``general``: the same last scope component across layers, ``*/LayerNorm/*``
  (only when it spans several scopes);
* ``block``: a scope with sub-scopes, ``/encoder/layer.0/attention/*`` (a pattern ``S*``
  selects the sub-scopes too, so this is a whole block);
* ``op``: an op type, ``op:Softmax``.

A group is the set of low-precision compute nodes its pattern selects; groups that
select the same nodes are merged (the narrower kind names them). Groups are the unit
because they are what users write and maintain: a module (a LayerNorm) kept in FP32 as a
whole is robust to re-exports and to TensorRT's fusion, whereas "Pow and ReduceMean_1 of
layer 0" is brittle. Per-node minimisation inside a module is deliberately not attempted.

Algorithm
---------
1. Build and run the policy as given. If it passes: nothing to change (1 build).
2. Greedy, guided by layerwise errors. On the current (failing) engine run
   :func:`~pytest_trt.layerwise.locate_divergence` and rank the candidate groups that
   contain a divergent node (one that introduced NaN/Inf, or whose error jumped): narrow
   kinds first (scope/node, then general, block, op), then by what the group explains
   (introduced NaN/Inf, divergent nodes, summed log10 jumps), then the earliest, then the
   smallest. Add the top group, rebuild, re-run, re-locate; stop when the outputs pass.
   Re-locating after every build matters: once a node overflows, everything downstream is
   garbage and shows no jumps, so only the first cause is visible; fixing it reveals the
   next. If the next group is a scope whose module repeats a chosen one (a second
   ``LayerNorm`` scope), the generalised group ``*/LayerNorm/*`` is added instead: deep
   models then need two builds for a module that breaks in every layer, not one per layer.
   When no group contains a divergent node (error building up gradually), coarse groups
   go first (general, block, ...) ranked by their largest sub-threshold amplification, so
   the search converges in few builds; pruning removes what was not needed.
3. Refinement: a generalised group is narrowed to the scopes seen diverging, if that passes.
4. Pruning: try removing each chosen group, largest first; keep it out if the rest still
   passes. The result is 1-minimal: no single pattern can be dropped.
5. Compression (no build): chosen groups whose union is exactly one candidate's node set are
   named by that candidate (every LayerNorm scope -> ``*/LayerNorm/*``; every Softmax -> ``op:Softmax``).

Every candidate set is a real ``backend.build`` (through the artifact cache) plus a run and a
:func:`~pytest_trt.compare.compare_outputs` against the FP32 ONNX Runtime baseline. Sets that
resolve to the same plan are built once (memoised by plan fingerprint). Suggested patterns
are added to the policy's ``keep_fp32`` exactly as a user would paste them, so what was
verified is what gets pasted (an explicit ``rules=[...]`` entry of the policy can override them:
such groups are skipped as ineffective).

What "passes" means (issue 15)
------------------------------
A candidate passes only when, on **every input set**, (a) the outputs are within tolerance
and (b) no intermediate tensor the engine exposes is NaN/Inf where the FP32 reference is
finite. Input sets: the user's feeds plus at least three re-check seeds (default: the
feeds' seed + 1, + 2, + 3), made by ``make_feeds(seed)`` when given (the CLI and the ``trt``
fixture generate them with the same shapes, ranges and outliers as the user's), else by
permuting the user's own values with that seed (same values, other positions). A
candidate whose outputs pass while a tensor inside is non-finite is not an answer: the
search goes on, guided by the nodes that introduced the NaN/Inf; if it ends without a clean
answer, the result is ``passes-output-only`` and names those nodes. Re-checks are runs of
the same engine, not builds.

An answer that keeps more than half of the compute nodes in FP32 (by node count; a FLOPs
estimate from :mod:`pytest_trt.flops` is reported beside it) is ``fp32-in-effect``: not a
low-precision engine, so not called found (``pytest-trt suggest`` exits 1).

``builds`` counts every engine built or loaded for the search: distinct plans, engines
re-loaded to re-check an earlier plan, and TensorRT's separate layerwise probe builds.

When nothing passes
-------------------
The fully-FP32 plan is NOT built up front: on a model that merely needs a LayerNorm kept in
FP32 it would be a wasted build (and on TensorRT builds are the cost that matters). It is
built once, lazily, when the answer depends on it: when the first layerwise comparison finds
no divergent node (error accumulating gradually, or a tolerance tighter than FP32 itself can
meet), or when the search ends without a passing set. Then the report says whether the model
fails in FP32 too (no FP32 island can help: loosen the tolerance, or check the backend's FP32,
e.g. TF32) or passes in FP32 but no smaller set was found within ``max_builds``.
"""

from __future__ import annotations

import json
import math
import shlex
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from .errors import UsageError
from .jsonsafe import json_number

if TYPE_CHECKING:  # pragma: no cover
    from .backends.base import Backend, BuildConfig
    from .cache import ArtifactCache
    from .layerwise import Divergence
    from .policy import PrecisionPolicy

__all__ = ["Attempt", "Group", "Suggestion", "candidate_groups", "escape_glob", "suggest_fp32_islands"]

#: Default budget of builds (distinct plans) of one search.
DEFAULT_MAX_BUILDS = 30
#: Preference among groups of equal contribution (lower first).
KIND_ORDER = {"scope": 0, "node": 0, "general": 1, "block": 2, "op": 3}
#: Preference when no node diverges (gradual error): coarse first.
GRADUAL_KIND_ORDER = {"general": 0, "block": 1, "scope": 2, "node": 3, "op": 4}
#: Cap of a single node's log10 jump in the ranking (an introduced NaN/Inf has an infinite jump).
_LOG_JUMP_CAP = 10.0


def escape_glob(text: str) -> str:
    """``text`` as a shell glob that matches exactly ``text`` (``[`` ``*`` ``?`` escaped)."""
    return "".join(f"[{c}]" if c in "[*?" else c for c in text)


def scope_of(name: str) -> str | None:
    """The name scope of a node (``/a/b/C`` -> ``/a/b/``), None at the root."""
    head, sep, _ = name.rpartition("/")
    if not sep or not head.strip("/"):
        return None
    return head + "/"


@dataclass(frozen=True)
class Group:
    """A candidate FP32 island: a pattern and the low-precision compute nodes it selects."""

    pattern: str
    kind: str  # "scope" | "node" | "general" | "block" | "op"
    nodes: frozenset
    scopes: tuple = ()  # for "general": the scope patterns it spans

    def to_json(self) -> dict[str, Any]:
        data = {"pattern": self.pattern, "kind": self.kind, "nodes": len(self.nodes)}
        if self.scopes:
            data["scopes"] = list(self.scopes)
        return data


def candidate_groups(plan) -> list[Group]:
    """Candidate groups of a plan's low-precision compute nodes (see the module docstring)."""
    from .dtypes import LOW_PRECISIONS
    from .policy import Rule

    low = [d for d in plan.nodes.values() if d.kind == "compute" and d.precision in LOW_PRECISIONS]
    all_scopes = {scope_of(d.name) for d in plan.nodes.values()} - {None}
    parents = {s[: s.rstrip("/").rfind("/") + 1] for s in all_scopes}  # scopes with sub-scopes
    specs: dict[str, tuple[str, tuple]] = {}
    scopes_of_last: dict[str, set[str]] = {}
    for d in low:
        scope = scope_of(d.name)
        if scope is None or scope in parents:
            # At the root, or directly in a block that has sub-scopes (a layer's residual Add):
            # the node itself is the narrowest module-shaped group.
            specs.setdefault(escape_glob(d.name), ("node", ()))
        if scope is not None:
            specs.setdefault(escape_glob(scope) + "*", ("block" if scope in parents else "scope", ()))
            last = scope.rstrip("/").rpartition("/")[2]
            scopes_of_last.setdefault(last, set()).add(scope)
        specs.setdefault(f"op:{d.op_type}", ("op", ()))
    for last, scopes in scopes_of_last.items():
        if len(scopes) > 1 and last:
            pattern = "*/" + escape_glob(last) + "/*"
            specs.setdefault(pattern, ("general", tuple(sorted(escape_glob(s) + "*" for s in scopes))))
    by_nodes: dict[frozenset, Group] = {}
    for pattern, (kind, scopes) in specs.items():
        rule = Rule(pattern, "fp32")
        nodes = frozenset(d.name for d in low if rule.matches(d))
        if not nodes:
            continue
        group = Group(pattern, kind, nodes, scopes)
        old = by_nodes.get(nodes)
        if old is None or (KIND_ORDER[kind], pattern) < (KIND_ORDER[old.kind], old.pattern):
            by_nodes[nodes] = group
    order = {d.name: i for i, d in enumerate(plan.nodes.values())}
    return sorted(by_nodes.values(), key=lambda g: (min(order[n] for n in g.nodes), KIND_ORDER[g.kind], g.pattern))


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

    def to_json(self) -> dict[str, Any]:
        return {"patterns": list(self.patterns), "phase": self.phase, "passed": self.passed,
                "outputs_passed": self.outputs_passed, "nonfinite_nodes": list(self.nonfinite_nodes),
                "accuracy": self.accuracy, "low_precision_nodes": self.low_nodes, "cache_hit": self.cache_hit,
                "seconds": round(self.seconds, 4), "first_divergence": self.first_divergence,
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
            TensorRT layerwise probe builds); ``cache_hits`` of them came from the artifact cache.
        inputs: per input set of the final (or closest) plan: ``{"label", "seed", "outputs_passed",
            "nonfinite_nodes", "accuracy"}``; the user's feeds first, then the re-check seeds.
        recheck_seeds, recheck_source: the re-check seeds and how their feeds were made.
        nonfinite_nodes: nodes that introduced NaN/Inf where the FP32 reference is finite, under
            the plan of ``patterns`` (``passes-output-only``).
        fp32_nodes, fp32_share, flops, fp32_flops_share: compute nodes kept FP32 by the final plan,
            their share by count, and by a FLOPs estimate (:mod:`pytest_trt.flops`).
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
    rtol: Any = None
    atol: Any = None
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

    # -- derived ---------------------------------------------------------------------------
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

        head = f"FP32-island search for {self.model} [{self.base_policy.describe()}] on {self.backend}"
        if self.backend == "emulate":
            head += " (CPU precision emulation, not TensorRT)"
        lines = [head, f"  tolerance: rtol {_tol(self.rtol)}, atol {_tol(self.atol)}"]
        lines.append(f"  as given: {'passes' if self.reason == 'already-passes' else 'fails'} "
                     f"({_acc_text(self.initial_accuracy)})"
                     + (f"; first divergent node: {self.first_divergence}" if self.first_divergence else ""))
        builds = f"{self.builds} build{'s' if self.builds != 1 else ''}"
        if self.cache_hits:
            builds += f" ({self.cache_hits} from the cache)"
        timing = f"{builds}, {self.seconds:.1f}s"
        share = f"{self.low_nodes} of {self.compute_nodes} compute nodes ({self.low_precision_share:.0%}) stay " \
                f"{self.low_precision or 'low precision'}"
        checked = self._checked_line()
        if self.reason == "already-passes":
            lines.append(f"nothing needs to change: the policy as given passes ({timing}); {share}")
            lines.append(checked)
            return "\n".join(lines)
        if self.reason == "fp32-in-effect":
            flops = (f", ~{self.fp32_flops_share:.0%} of the estimated FLOPs" if self.fp32_flops_share is not None
                     else "")
            what = (f"keeping {', '.join(self.patterns)} in FP32" if self.patterns else "the policy as given")
            lines.append(f"FP32 in effect ({timing}): {what} passes, but keeps {self.fp32_nodes} of "
                         f"{self.compute_nodes} compute nodes ({self.fp32_share:.0%}{flops}) in FP32: that is not a "
                         f"{self.low_precision} engine, so it is not called found. Check the tolerance (is it "
                         f"tighter than {self.low_precision} can meet on a healthy model?) and the inputs.")
            lines.append(f"  accuracy: {_acc_text(self.accuracy)}")
            lines.append(checked)
            return "\n".join(lines)
        if self.reason == "passes-output-only":
            lines.append(f"passes the output check only ({timing}): with {', '.join(self.patterns) or 'the policy as given'} "
                         f"kept FP32 the outputs are within tolerance, but NaN/Inf appear inside where the FP32 "
                         f"reference is finite, first at: {', '.join(self.nonfinite_nodes[:5])}"
                         f"{', ...' if len(self.nonfinite_nodes) > 5 else ''}. Not an answer: "
                         + (f"the policy's own rules keep {', '.join(self.blocked[:3])} in {self.low_precision}; "
                            f"remove those rules" if self.blocked else
                            "keep those nodes' modules FP32 too (raise max_builds), or check the inputs") + ".")
            lines.append(checked)
            return "\n".join(lines)
        if self.passed:
            n = len(self.patterns)
            lines.append(f"found ({timing}): keep {n} more pattern{'s' if n != 1 else ''} in FP32 -> passes"
                         + ("" if self.minimal else " (build budget ran out before pruning: may not be minimal)"))
            width = max(len(g.pattern) for g in self.groups)
            for g in self.groups:
                lines.append(f"    {g.pattern:<{width}}  {g.kind}, {len(g.nodes)} node{'s' if len(g.nodes) != 1 else ''}")
            lines.append(f"  accuracy: {_acc_text(self.accuracy)}")
            lines.append(f"  low precision: {share}")
            lines.append(checked)
            lines.append("  pytest:  " + " ".join(shlex.quote(a) for a in self.pytest_args))
            lines.append("  CLI:     " + " ".join(shlex.quote(a) for a in self.cli_args))
            lines.append("  marker:  " + self.marker)
            if self.alternatives:
                alts = ", ".join(f"{a['pattern']} ({a['scopes']} scopes)" for a in self.alternatives)
                lines.append(f"  note: minimal for THESE inputs; other scopes of the same kind stayed "
                             f"{self.low_precision}. Broader, not built: {alts}")
            return "\n".join(lines)
        # nothing passed
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
        return "\n".join(lines)

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
        source = f" ({self.recheck_source})" if self.recheck_source else ""
        return f"  checked on: {labels}{source}: {verdict}"

    def _closest(self) -> list:
        tried = [a for a in self.attempts if a.phase != "fp32-check"]
        if not tried:
            return []
        best = min(tried, key=lambda a: max((_num(v["max_abs"]) for v in a.accuracy.values()), default=0.0))
        return list(best.patterns)

    def __str__(self) -> str:
        return self.message()

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model, "backend": self.backend, "passed": self.passed, "reason": self.reason,
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
            "rtol": self.rtol, "atol": self.atol, "alternatives": self.alternatives,
            "layerwise_note": self.layerwise_note, "attempts": [a.to_json() for a in self.attempts],
            "inputs": list(self.inputs), "recheck_seeds": list(self.recheck_seeds),
            "recheck_source": self.recheck_source, "passes_output_only": self.passes_output_only,
            "nonfinite_nodes": list(self.nonfinite_nodes), "fp32_in_effect": self.fp32_in_effect,
            "fp32_nodes": self.fp32_nodes, "fp32_share": round(self.fp32_share, 4),
            "flops": {"total": self.flops, "fp32": self.fp32_flops,
                      "fp32_share": None if self.fp32_flops_share is None else round(self.fp32_flops_share, 4),
                      "estimate": "MatMul/Gemm/Conv: 2 x output elements x reduction size; other nodes: elements"},
        }


def suggest_fp32_islands(model, policy, feeds: dict, *, backend, cache: ArtifactCache | None = None,
                         rtol=None, atol=None, config: BuildConfig | None = None, max_builds: int | None = None,
                         threshold: float | None = None, baseline_provider: str = "cpu",
                         recheck_seeds=None, make_feeds=None, on_engine=None) -> Suggestion:
    """Search the smallest set of FP32 islands (keep_fp32 patterns) with which ``model`` passes.

    Args:
        model: a :class:`~pytest_trt.model.Model`, path or ModelProto.
        policy: the :class:`~pytest_trt.policy.PrecisionPolicy` to start from (or a precision
            name such as ``"fp16"``); suggested patterns are added to its ``keep_fp32``.
        feeds: input feeds (the search is only as good as they are: use the inputs that fail).
        backend: a :class:`~pytest_trt.backends.base.Backend` or its name (``"emulate"``).
        cache: artifact cache for engines and the baseline (None: build without caching).
        rtol, atol: tolerances (a number or ``{output: number}``; default per precision).
        config: build config (default ``BuildConfig()``).
        max_builds: budget of builds (distinct plans), the initial one included (default 30).
        threshold: relative-error threshold of the layerwise comparisons.
        baseline_provider: ONNX Runtime provider of the FP32 baseline (``cpu`` or ``cuda``).
        recheck_seeds: at least three seeds on which every answer is re-checked besides ``feeds``
            (default: the feeds' seed + 1, + 2, + 3; the seed is ``feeds.seed`` when the feeds
            remember one, else 0).
        make_feeds: ``make_feeds(seed) -> feeds`` for the re-check seeds, made like ``feeds``
            (same shapes, ranges, outliers). Default: ``feeds.remake`` when the feeds remember how
            they were made (``trt.feeds(...)`` in a test), else ``feeds``' own values permuted with
            the seed (same values in other positions).
        on_engine: ``on_engine(plan, engine)`` after every engine the search built or loaded
            (a TensorRT layerwise probe build too: its own ``build_info``); the pytest plugin
            records them, so the run's engine counts include the search's builds.

    >>> s = suggest_fp32_islands("encoder.onnx", PrecisionPolicy("fp16"), feeds, backend="emulate")  # doctest: +SKIP
    >>> s.patterns                                                                                   # doctest: +SKIP
    ['/encoder/layer.0/attention/output/LayerNorm/*']
    """
    return _Search(model, policy, feeds, backend=backend, cache=cache, rtol=rtol, atol=atol, config=config,
                   max_builds=max_builds, threshold=threshold, provider=baseline_provider,
                   recheck_seeds=recheck_seeds, make_feeds=make_feeds, on_engine=on_engine).run()


#: Re-check seeds per answer (at least this many, besides the user's feeds).
MIN_RECHECK_SEEDS = 3


@dataclass
class InputSet:
    """One set of feeds every answer is checked on."""

    label: str
    seed: int | None
    feeds: dict


def permuted_feeds(feeds: dict, seed: int) -> dict:
    """``feeds`` with each array's elements permuted by ``seed``: the same values in other positions."""
    import numpy as np

    out = {}
    for k, (name, value) in enumerate(feeds.items()):
        arr = np.asarray(value)
        rng = np.random.default_rng([int(seed), k])
        out[name] = rng.permutation(arr.reshape(-1)).reshape(arr.shape).astype(arr.dtype, copy=False)
    return out


def _input_sets(feeds: dict, recheck_seeds, make_feeds) -> tuple[list[InputSet], str]:
    base = getattr(feeds, "seed", None)
    if recheck_seeds is None:
        start = int(base) if base is not None else 0
        recheck_seeds = tuple(range(start + 1, start + 1 + MIN_RECHECK_SEEDS))
    try:
        seeds = [int(k) for k in recheck_seeds]
    except (TypeError, ValueError):
        raise UsageError(f"recheck_seeds must be a list of integer seeds, got {recheck_seeds!r}") from None
    if len(set(seeds)) < MIN_RECHECK_SEEDS:
        raise UsageError(f"recheck_seeds: every answer is re-checked on at least {MIN_RECHECK_SEEDS} distinct seeds "
                         f"besides your feeds, got {recheck_seeds!r}")
    seeds = list(dict.fromkeys(seeds))
    if make_feeds is None:  # feeds that remember how they were made (pytest_trt.case.Feeds)
        make_feeds = getattr(feeds, "remake", None)
    first = InputSet("your inputs" + (f" (seed {base})" if base is not None else ""), base, feeds)
    sets = [first]
    for k in seeds:
        made = make_feeds(k) if make_feeds is not None else permuted_feeds(feeds, k)
        for name, value in feeds.items():
            got = made.get(name) if hasattr(made, "get") else None
            if got is None or tuple(got.shape) != tuple(value.shape):
                raise UsageError(f"make_feeds({k}) must give input {name!r} the shape of your feeds "
                                 f"{tuple(value.shape)}, got {None if got is None else tuple(got.shape)}")
        sets.append(InputSet(f"seed {k}", k, made))
    source = ("generated like your inputs" if make_feeds is not None
              else "your inputs' values, permuted by seed")
    return sets, source


class _Search:
    def __init__(self, model, policy, feeds, *, backend, cache, rtol, atol, config, max_builds, threshold,
                 provider="cpu", recheck_seeds=None, make_feeds=None, on_engine=None):
        from .backends.base import BuildConfig, get_backend
        from .compare import default_tolerances
        from .model import load_model
        from .policy import PrecisionPolicy

        self.start = time.perf_counter()
        self.model = load_model(model)
        if isinstance(policy, str):
            policy = PrecisionPolicy(policy)
        if not isinstance(policy, PrecisionPolicy):
            raise UsageError(f"policy must be a PrecisionPolicy or a precision name, got {policy!r}")
        self.policy = policy
        self.backend: Backend = get_backend(backend) if isinstance(backend, str) else backend
        self.cache = cache
        self.config = config if config is not None else BuildConfig()
        self.feeds = feeds
        self.sets, self.recheck_source = _input_sets(feeds, recheck_seeds, make_feeds)
        self.threshold = threshold
        self.provider = provider
        self.on_engine = on_engine
        self.max_builds = DEFAULT_MAX_BUILDS if max_builds is None else int(max_builds)
        if self.max_builds < 1:
            raise UsageError(f"max_builds must be at least 1, got {max_builds!r}")
        self.plans: dict = {}
        self.plan0 = self.resolve(policy)
        self.order = {d.name: i for i, d in enumerate(self.plan0.nodes.values())}
        self.divergences: dict = {}
        self.blocked: list = []
        low = self.plan0.low_precision or "fp32"
        d_rtol, d_atol = default_tolerances(low)
        self.rtol = d_rtol if rtol is None else rtol
        self.atol = d_atol if atol is None else atol
        self.builds = 0
        self.cache_hits = 0
        self.memo: dict[str, Attempt] = {}
        self.attempts: list[Attempt] = []
        self.engines: dict[str, Any] = {}  # fingerprint -> engine (only the latest few kept)
        self.expected: dict[int, dict] = {}   # input set -> FP32 baseline outputs
        self.references: dict[int, dict] = {}  # input set -> FP32 intermediates
        self.layerwise_runs = 0
        self.layerwise_note = ""
        self.evidence: set[str] = set()  # nodes seen divergent in any layerwise run
        self.fp32_attempt: Attempt | None = None

    # -- building blocks ---------------------------------------------------------------------
    def policy_with(self, patterns) -> PrecisionPolicy:
        keep = tuple(self.policy.keep_fp32) + tuple(p for p in patterns if p not in self.policy.keep_fp32)
        return replace(self.policy, keep_fp32=keep)

    def resolve(self, policy):
        """``policy.resolve(model)``, memoised (resolution runs ONNX shape inference)."""
        key = json.dumps(policy.to_json(), sort_keys=True)
        if key not in self.plans:
            self.plans[key] = policy.resolve(self.model)
        return self.plans[key]

    def budget_left(self) -> int:
        return self.max_builds - self.builds

    def build(self, plan):
        """``backend.build``, counted (every engine built or loaded counts)."""
        engine = self.backend.build(plan, self.config, self.cache)
        self.builds += 1
        self.cache_hits += int(bool(getattr(engine.build_info, "cache_hit", False)))
        if self.on_engine is not None:
            self.on_engine(plan, engine)
        return engine

    def expected_of(self, index: int) -> dict:
        if index not in self.expected:
            from .baseline import fp32_baseline

            self.expected[index] = fp32_baseline(self.model, self.sets[index].feeds, cache=self.cache,
                                                 provider=self.provider)
        return self.expected[index]

    def evaluate(self, patterns, phase: str, *, policy=None) -> tuple[Attempt, Any]:
        from .dtypes import LOW_PRECISIONS

        policy = policy if policy is not None else self.policy_with(patterns)
        plan = self.resolve(policy)
        fp = plan.fingerprint()
        if fp in self.memo:
            return self.memo[fp], plan
        self.expected_of(0)
        t0 = time.perf_counter()
        engine = self.build(plan)
        hit = bool(getattr(engine.build_info, "cache_hit", False))
        low = sum(1 for d in plan.nodes.values() if d.kind == "compute" and d.precision in LOW_PRECISIONS)
        attempt = Attempt(tuple(patterns), phase, False, {}, low, hit, 0.0, fp)
        self.memo[fp] = attempt
        self.attempts.append(attempt)
        self.engines = {fp: (engine, plan)}  # keep only the latest engine alive
        self.check(attempt, engine)
        attempt.seconds = time.perf_counter() - t0
        return attempt, plan

    def check(self, attempt: Attempt, engine) -> None:
        """Outputs on every input set (stopping at the first failure), then, when they all pass,
        NaN/Inf inside on every input set."""
        from .compare import compare_outputs

        attempt.inputs, attempt.failing_set, attempt.nonfinite_nodes = [], None, []
        outputs_ok = True
        for index, inputs in enumerate(self.sets):
            result = compare_outputs(engine.run(inputs.feeds), self.expected_of(index), rtol=self.rtol,
                                     atol=self.atol, details=True, precision=self.plan0.low_precision or "fp32")
            accuracy = _accuracy(result)
            if index == 0:
                attempt.accuracy = accuracy
            attempt.inputs.append({"label": inputs.label, "seed": inputs.seed, "outputs_passed": result.passed,
                                   "nonfinite_nodes": [], "accuracy": accuracy})
            if not result.passed:
                outputs_ok, attempt.failing_set = False, index
                break
        attempt.outputs_passed = outputs_ok
        if outputs_ok:
            for index, entry in enumerate(attempt.inputs):
                div = self.locate(attempt, index, engine=engine)
                bad = [t.node for t in div.tensors if t.available and t.new_nonfinite and (t.nan or t.inf)]
                entry["nonfinite_nodes"] = bad
                if bad and attempt.failing_set is None:
                    attempt.failing_set = index
                attempt.nonfinite_nodes.extend(n for n in bad if n not in attempt.nonfinite_nodes)
        attempt.passed = outputs_ok and not attempt.nonfinite_nodes

    def locate(self, attempt: Attempt, index: int | None = None, *, engine=None) -> Divergence:
        """Layerwise comparison of ``attempt``'s engine on input set ``index`` (default: the first
        that failed), memoised."""
        from .baseline import fp32_intermediates
        from .layerwise import locate_divergence

        if index is None:
            index = attempt.failing_set or 0
        key = (attempt.fingerprint, index)
        if key in self.divergences:
            return self.divergences[key]
        engine = engine if engine is not None else self.engine_of(attempt)
        if index not in self.references:
            self.references[index] = fp32_intermediates(self.model, self.sets[index].feeds, provider=self.provider)
        probe_before = getattr(engine, "_probe", None)
        div = locate_divergence(engine, self.sets[index].feeds, threshold=self.threshold,
                                reference=self.references[index], top=10)
        probe = getattr(engine, "_probe", None)
        if probe is not None and probe is not probe_before:  # TensorRT < 10.12: a separate layerwise build
            self.builds += 1
            self.cache_hits += int(bool(getattr(probe.build_info, "cache_hit", False)))
            if self.on_engine is not None:
                self.on_engine(getattr(engine, "plan", None), probe)
        self.layerwise_runs += 1
        self.layerwise_note = div.note
        self.evidence.update(t.node for t in div.divergent)
        if attempt.first_divergence is None and div.first is not None and index == (attempt.failing_set or 0):
            attempt.first_divergence = div.first.node
        if len(self.divergences) > 64:
            self.divergences.clear()
        self.divergences[key] = div
        return div

    def fp32_check(self) -> Attempt | None:
        """The fully-FP32 plan, built at most once (None when the budget is spent)."""
        from .policy import PrecisionPolicy

        if self.fp32_attempt is None:
            policy = PrecisionPolicy("fp32")
            if self.resolve(policy).fingerprint() in self.memo or self.budget_left() > 0:
                self.fp32_attempt, _ = self.evaluate((), "fp32-check", policy=policy)
        return self.fp32_attempt

    def engine_of(self, attempt: Attempt):
        if attempt.fingerprint not in self.engines:  # an earlier plan again: load it (counted as a build)
            plan = self.resolve(self.policy_with(attempt.patterns))
            self.engines = {attempt.fingerprint: (self.build(plan), plan)}
        return self.engines[attempt.fingerprint][0]

    # -- the search ----------------------------------------------------------------------
    def run(self) -> Suggestion:
        from .dtypes import LOW_PRECISIONS

        self.by_pattern = {}
        self.compute_nodes = sum(1 for d in self.plan0.nodes.values() if d.kind == "compute")
        initial, plan = self.evaluate((), "initial")
        self.initial = initial
        if initial.passed:
            return self.result("already-passes", [], initial)
        if self.plan0.low_precision is None:
            # Nothing runs in low precision: the failure is FP32's own.
            self.fp32_attempt = initial
            return self.result("fails-in-fp32", [], None)

        self.candidates = candidate_groups(self.plan0)
        self.by_pattern = {g.pattern: g for g in self.candidates}
        chosen: list[Group] = []
        ineffective: set[str] = set()
        current, current_plan = initial, plan
        reason = None
        first = True
        while not current.passed:
            div = self.locate(current)
            if first:
                first = False
                if not div.found:
                    fp32 = self.fp32_check()
                    if fp32 is not None and not fp32.passed:
                        return self.result("fails-in-fp32", [], None)
            low_now = {d.name for d in current_plan.nodes.values()
                       if d.kind == "compute" and d.precision in LOW_PRECISIONS}
            ranked = self.rank(div, low_now, chosen, ineffective)
            if not ranked:
                reason = "exhausted"
                self.blocked = [f"{n} ({current_plan.nodes[n].rule})" for n in sorted(self.evidence & low_now,
                                                                                         key=self.order.get)]
                break
            if self.budget_left() <= (0 if self.fp32_attempt is not None else 1):  # keep one for the FP32 check
                reason = "budget"
                break
            group = ranked[0]
            new = self.promote(group, chosen)
            attempt, new_plan = self.evaluate(self.patterns(new), "greedy")
            if attempt.fingerprint == current.fingerprint:
                ineffective.add(group.pattern)  # blocked by the policy's own rules: no change
                continue
            chosen, current, current_plan = new, attempt, new_plan
        if reason is not None:
            # No passing set: does the model pass in FP32 at all? (built once, lazily)
            fp32 = self.fp32_check()
            if fp32 is not None and not fp32.passed:
                return self.result("fails-in-fp32", [], None)
            # Outputs passed everywhere, but with NaN/Inf inside: say so, never "found".
            output_only = [a for a in self.attempts if a.outputs_passed and not a.passed and a.phase != "fp32-check"]
            if output_only:
                best = min(output_only, key=lambda a: (len(a.nonfinite_nodes), -a.low_nodes))
                groups = [self.by_pattern[p] for p in best.patterns if p in self.by_pattern]
                return self.result("passes-output-only", groups, best)
            return self.result(reason, [], None)

        minimal = True
        chosen, minimal = self.refine(chosen, minimal)
        chosen, minimal = self.prune(chosen, minimal)
        chosen = self.compress(chosen)
        final = self.memo[self.resolve(self.policy_with(self.patterns(chosen))).fingerprint()]
        return self.result("found", chosen, final, minimal=minimal)

    def patterns(self, groups) -> tuple:
        order = self.order
        return tuple(g.pattern for g in sorted(groups, key=lambda g: (min(order[n] for n in g.nodes), g.pattern)))

    def rank(self, div: Divergence, low_now: set, chosen: list, ineffective: set) -> list[Group]:
        """Candidate groups, best first (see the module docstring)."""
        scores = div.node_scores()
        order = self.order
        chosen_patterns = {g.pattern for g in chosen}
        keyed = []
        for g in self.candidates:
            if g.pattern in chosen_patterns or g.pattern in ineffective:
                continue
            live = g.nodes & low_now
            if not live:
                continue
            nonfinite = divergent = 0
            jumps = gradual = 0.0
            earliest = len(order)
            for n in live:
                s = scores.get(n)
                if s is None:
                    continue
                nf, dv, log_jump, _ = s
                nonfinite += nf
                divergent += dv
                if nf or dv:
                    jumps += min(log_jump, _LOG_JUMP_CAP)
                    earliest = min(earliest, order[n])
                elif log_jump > gradual and math.isfinite(log_jump):
                    gradual = log_jump
            if nonfinite or divergent:
                # Narrow module-shaped groups first (a leaf scope: one LayerNorm), then generalised
                # scopes, blocks (a whole layer), op types last: an op type cuts every module it
                # appears in, so the module's next op breaks instead. Among one kind: the group
                # explaining the most (introduced NaN/Inf, divergent nodes, jumps), the earliest.
                key = (0, KIND_ORDER[g.kind], -nonfinite, -divergent, -round(jumps, 6), earliest, len(live))
            else:
                # No divergent node in the group: the error builds up gradually. Coarse groups first
                # (a module across layers, then whole blocks) so the search converges in few builds;
                # pruning then drops what was not needed. Among one kind: largest amplification.
                key = (1, GRADUAL_KIND_ORDER[g.kind], 0, 0, -round(gradual, 6), 0, len(live))
            keyed.append((key + (g.pattern,), g))
        keyed.sort(key=lambda kg: kg[0])
        return [g for _, g in keyed]

    def compress(self, chosen: list) -> list:
        """Replace chosen groups by one candidate selecting exactly their nodes (same plan: no build).

        E.g. the four LayerNorm scopes of a 2-layer encoder -> ``*/LayerNorm/*``, or every Softmax
        node of a model without scopes -> ``op:Softmax``.
        """
        changed = True
        while changed and len(chosen) > 1:
            changed = False
            for cand in sorted(self.candidates, key=lambda g: (KIND_ORDER[g.kind], -len(g.nodes), g.pattern)):
                inside = [c for c in chosen if c.nodes <= cand.nodes]
                if len(inside) < 2 or cand in chosen:
                    continue
                if frozenset().union(*(c.nodes for c in inside)) == cand.nodes:
                    chosen = [c for c in chosen if c not in inside] + [cand]
                    changed = True
                    break
        return chosen

    def promote(self, group: Group, chosen: list) -> list:
        """Add ``group``; a scope repeating a chosen scope's module (same last name component, e.g.
        a second ``LayerNorm``) is added as the generalised group ``*/LayerNorm/*`` instead."""
        last = _last_component(group)
        general = self.by_pattern.get("*/" + last + "/*") if last else None
        if general is not None and general.kind == "general" and group.nodes <= general.nodes:
            repeats = [c for c in chosen if c.kind == "scope" and _last_component(c) == last
                       and c.nodes <= general.nodes]
            if repeats:
                return [c for c in chosen if not c.nodes <= general.nodes] + [general]
        return chosen + [group]

    def refine(self, chosen: list, minimal: bool) -> tuple[list, bool]:
        from .policy import Rule

        for general in [g for g in chosen if g.kind == "general"]:
            seen = []
            for scope in general.scopes:
                rule = Rule(scope, "fp32")
                if any(rule.matches(_Named(n)) for n in self.evidence) and scope in self.by_pattern:
                    seen.append(self.by_pattern[scope])
            if not seen or len(seen) == len(general.scopes):
                continue
            if self.budget_left() <= 0:
                return chosen, False
            trial = [c for c in chosen if c is not general] + seen
            attempt, _ = self.evaluate(self.patterns(trial), "refine")
            if attempt.passed:
                chosen = trial
        return chosen, minimal

    def prune(self, chosen: list, minimal: bool) -> tuple[list, bool]:
        # Largest groups first: dropping one of them frees the most nodes.
        for group in sorted(chosen, key=lambda g: (-len(g.nodes), g.pattern)):
            trial = [c for c in chosen if c is not group]
            fp = self.resolve(self.policy_with(self.patterns(trial))).fingerprint()
            if fp not in self.memo and self.budget_left() <= 0:
                minimal = False
                break
            attempt, _ = self.evaluate(self.patterns(trial), "prune")
            if attempt.passed:
                chosen = trial
        return chosen, minimal

    def result(self, reason: str, chosen: list, final: Attempt | None, *, minimal: bool = True) -> Suggestion:
        kept = final is not None and reason in ("found", "already-passes", "passes-output-only")
        low_nodes = final.low_nodes if final is not None else self.initial.low_nodes
        fp32_nodes = self.compute_nodes - low_nodes
        if (reason in ("found", "already-passes") and self.plan0.low_precision is not None
                and fp32_nodes * 2 > self.compute_nodes):
            reason = "fp32-in-effect"
        passed = reason in ("found", "already-passes")
        patterns = list(self.patterns(chosen)) if kept else []
        policy = self.policy_with(patterns) if kept else None
        alternatives = []
        if passed:
            for g in chosen:
                if g.kind != "scope":
                    continue
                general = self.by_pattern.get("*/" + (_last_component(g) or "") + "/*")
                if (general is not None and general.kind == "general" and g.nodes < general.nodes
                        and not any(general.pattern == a["pattern"] for a in alternatives)):
                    alternatives.append({"pattern": general.pattern, "scopes": len(general.scopes),
                                         "nodes": len(general.nodes), "built": False})
        shown = final if final is not None else self._closest_attempt()
        flops, fp32_flops = self.flops_of(final if final is not None else self.initial)
        fp32 = self.fp32_attempt
        return Suggestion(
            passed=passed, patterns=patterns, groups=[g for p in patterns for g in chosen if g.pattern == p],
            policy=policy, base_policy=self.policy, builds=self.builds, cache_hits=self.cache_hits,
            accuracy=(final.accuracy if final is not None else self.initial.accuracy),
            initial_accuracy=self.initial.accuracy, compute_nodes=self.compute_nodes, low_nodes=low_nodes,
            low_precision=self.plan0.low_precision, fp32_passes=None if fp32 is None else fp32.passed,
            fp32_accuracy=fp32.accuracy if fp32 is not None else {}, reason=reason, model=self.model.label,
            backend=self.backend.name, rtol=self.rtol, atol=self.atol,
            first_divergence=self.initial.first_divergence, attempts=list(self.attempts), alternatives=alternatives,
            layerwise_runs=self.layerwise_runs, layerwise_note=self.layerwise_note, blocked=list(self.blocked),
            seconds=time.perf_counter() - self.start, minimal=minimal,
            inputs=list(shown.inputs) if shown is not None else [],
            recheck_seeds=[x.seed for x in self.sets[1:]], recheck_source=self.recheck_source,
            nonfinite_nodes=list(final.nonfinite_nodes) if final is not None else [],
            flops=flops, fp32_flops=fp32_flops,
        )

    def _closest_attempt(self) -> Attempt | None:
        tried = [a for a in self.attempts if a.phase != "fp32-check"]
        if not tried:
            return None
        return min(tried, key=lambda a: (not a.outputs_passed, len(a.nonfinite_nodes),
                                         max((_num(v["max_abs"]) for v in a.accuracy.values()), default=0.0)))

    def flops_of(self, attempt: Attempt | None) -> tuple[int, int]:
        """``(total, fp32)`` estimated FLOPs of the compute nodes under ``attempt``'s plan (0, 0 when unknown)."""
        if attempt is None:
            return 0, 0
        try:
            import numpy as np

            from .baseline import fp32_intermediates
            from .flops import node_flops

            if 0 not in self.references:
                self.references[0] = fp32_intermediates(self.model, self.sets[0].feeds, provider=self.provider)
            shapes = {k: tuple(np.shape(v)) for k, v in self.sets[0].feeds.items()}
            shapes.update({i.name: tuple(i.dims) for i in self.model.proto.graph.initializer})
            shapes.update({k: tuple(np.shape(v)) for k, v in self.references[0].items()})
            per_node = node_flops(self.model, shapes)
        except Exception:  # noqa: BLE001 - an estimate: never fail the search over it
            return 0, 0
        from .dtypes import LOW_PRECISIONS

        if attempt.fingerprint == getattr(self.fp32_attempt, "fingerprint", None):
            plan = self.resolve(self.policy.__class__("fp32"))
        else:
            plan = self.resolve(self.policy_with(attempt.patterns))
        compute = [d for d in plan.nodes.values() if d.kind == "compute"]
        total = sum(per_node.get(d.name, 0) for d in compute)
        fp32 = sum(per_node.get(d.name, 0) for d in compute if d.precision not in LOW_PRECISIONS)
        return int(total), int(fp32)


def _last_component(group: Group) -> str | None:
    """``LayerNorm`` for the scope group ``/encoder/layer.0/attention/output/LayerNorm/*`` (escaped form)."""
    if group.kind != "scope":
        return None
    return group.pattern[:-1].rstrip("/").rpartition("/")[2] or None


class _Named:
    """A stand-in with ``.name`` for Rule.matches on a bare node name (op rules never match it)."""

    op_type = ""

    def __init__(self, name: str):
        self.name = name


def _accuracy(result) -> dict:
    out = {}
    for name, oc in result.outputs.items():
        out[name] = {"max_abs": _jnum(oc.max_abs), "max_rel": _jnum(oc.max_rel), "passed": oc.passed,
                     "mismatched": oc.mismatched, "total": oc.total,
                     "nan": oc.nan_actual or 0, "inf": oc.inf_actual or 0}
    return out


def _jnum(x):
    return json_number(x)


def _num(x) -> float:
    if x is None:
        return 0.0
    if isinstance(x, str):
        return math.inf if x in ("inf", "nan") else -math.inf
    return float(x)


def _acc_text(accuracy: dict) -> str:
    from .layerwise import _fmt

    if not accuracy:
        return "-"
    parts = []
    for name, v in accuracy.items():
        text = f"{name} max abs {_fmt(_num(v['max_abs']))}, max rel {_fmt(_num(v['max_rel']))}"
        if v.get("nan") or v.get("inf"):
            text = f"{name} " + ", ".join(f"{v[k]} {'NaN' if k == 'nan' else 'Inf'}" for k in ("nan", "inf")
                                          if v.get(k))
            if v["max_abs"] is not None and math.isfinite(_num(v["max_abs"])):
                text += f", max abs of the finite elements {_fmt(_num(v['max_abs']))}"
        if not v["passed"]:
            text += f" ({v['mismatched']} of {v['total']} mismatched)"
        parts.append(text)
    return "; ".join(parts)


def _tol(value) -> str:
    if isinstance(value, dict):
        vals = set(value.values())
        if len(vals) == 1:
            return f"{next(iter(vals)):g}"
        return ", ".join(f"{k}={v:g}" for k, v in value.items())
    return f"{value:g}"
