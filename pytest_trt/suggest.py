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

    def to_json(self) -> dict[str, Any]:
        return {"patterns": list(self.patterns), "phase": self.phase, "passed": self.passed,
                "accuracy": self.accuracy, "low_precision_nodes": self.low_nodes, "cache_hit": self.cache_hit,
                "seconds": round(self.seconds, 4), "first_divergence": self.first_divergence}


@dataclass
class Suggestion:
    """Result of :func:`suggest_fp32_islands`.

    Attributes:
        passed: a passing set was found (``patterns`` may be empty: nothing to change).
        patterns: keep_fp32 patterns to ADD to the policy (in graph order).
        groups: the chosen :class:`Group` objects.
        policy: the verified policy (base policy + patterns), None when nothing passed.
        base_policy: the policy the search started from.
        builds: distinct plans built and run (the initial one included); ``cache_hits`` of them
            came from the artifact cache.
        accuracy: ``{output: {"max_abs", "max_rel", "passed"}}`` of the final plan (the initial
            plan's when nothing passed).
        initial_accuracy: the same for the policy as given.
        compute_nodes, low_nodes: compute nodes of the model, and those left in low precision.
        low_precision: fp16 / bf16.
        fp32_passes: whether the fully-FP32 plan passes (None: not built, not needed).
        reason: ``already-passes`` | ``found`` | ``fails-in-fp32`` | ``exhausted`` | ``budget``.
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

    # -- derived ---------------------------------------------------------------------------
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
        if self.reason == "already-passes":
            lines.append(f"nothing needs to change: the policy as given passes ({timing}); {share}")
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
        return "\n".join(lines)

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
        }


def suggest_fp32_islands(model, policy, feeds: dict, *, backend, cache: ArtifactCache | None = None,
                         rtol=None, atol=None, config: BuildConfig | None = None, max_builds: int | None = None,
                         threshold: float | None = None, baseline_provider: str = "cpu") -> Suggestion:
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

    >>> s = suggest_fp32_islands("encoder.onnx", PrecisionPolicy("fp16"), feeds, backend="emulate")  # doctest: +SKIP
    >>> s.patterns                                                                                   # doctest: +SKIP
    ['/encoder/layer.0/attention/output/LayerNorm/*']
    """
    return _Search(model, policy, feeds, backend=backend, cache=cache, rtol=rtol, atol=atol, config=config,
                   max_builds=max_builds, threshold=threshold, provider=baseline_provider).run()


class _Search:
    def __init__(self, model, policy, feeds, *, backend, cache, rtol, atol, config, max_builds, threshold,
                 provider="cpu"):
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
        self.threshold = threshold
        self.provider = provider
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
        self.expected = None
        self.reference = None
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

    def evaluate(self, patterns, phase: str, *, policy=None) -> tuple[Attempt, Any]:
        from .compare import compare_outputs
        from .dtypes import LOW_PRECISIONS

        policy = policy if policy is not None else self.policy_with(patterns)
        plan = self.resolve(policy)
        fp = plan.fingerprint()
        if fp in self.memo:
            return self.memo[fp], plan
        if self.expected is None:
            from .baseline import fp32_baseline

            self.expected = fp32_baseline(self.model, self.feeds, cache=self.cache, provider=self.provider)
        t0 = time.perf_counter()
        engine = self.backend.build(plan, self.config, self.cache)
        actual = engine.run(self.feeds)
        result = compare_outputs(actual, self.expected, rtol=self.rtol, atol=self.atol, details=True,
                                 precision=self.plan0.low_precision or "fp32")
        self.builds += 1
        hit = bool(getattr(engine.build_info, "cache_hit", False))
        self.cache_hits += int(hit)
        low = sum(1 for d in plan.nodes.values() if d.kind == "compute" and d.precision in LOW_PRECISIONS)
        attempt = Attempt(tuple(patterns), phase, result.passed, _accuracy(result), low, hit,
                          time.perf_counter() - t0, fp)
        self.memo[fp] = attempt
        self.attempts.append(attempt)
        self.engines = {fp: (engine, plan)}  # keep only the latest engine alive
        return attempt, plan

    def locate(self, attempt: Attempt) -> Divergence:
        from .baseline import fp32_intermediates
        from .layerwise import locate_divergence

        if attempt.fingerprint in self.divergences:
            return self.divergences[attempt.fingerprint]
        engine = self.engine_of(attempt)
        if self.reference is None:
            self.reference = fp32_intermediates(self.model, self.feeds, provider=self.provider)
        div = locate_divergence(engine, self.feeds, threshold=self.threshold, reference=self.reference, top=10)
        self.layerwise_runs += 1
        self.layerwise_note = div.note
        self.evidence.update(t.node for t in div.divergent)
        if attempt.first_divergence is None and div.first is not None:
            attempt.first_divergence = div.first.node
        self.divergences = {attempt.fingerprint: div}
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
        if attempt.fingerprint not in self.engines:  # an earlier plan again: load it (cache hit), not a new build
            plan = self.resolve(self.policy_with(attempt.patterns))
            self.engines = {attempt.fingerprint: (self.backend.build(plan, self.config, self.cache), plan)}
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
                reason = "fails-in-fp32"
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
        passed = final is not None and final.passed
        patterns = list(self.patterns(chosen)) if passed else []
        policy = self.policy_with(patterns) if passed else None
        low_nodes = final.low_nodes if final is not None else self.initial.low_nodes
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
        )


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
