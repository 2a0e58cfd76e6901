"""The FP32-fallback search itself: builds, checks, the greedy loop, refinement and pruning.

:func:`suggest_fp32_islands` runs a ``_Search``: build and check the policy as given, then
add the best-ranked candidate group (:mod:`pytest_trt.suggest.groups`) guided by the
layerwise comparison until the outputs pass on every input set
(:mod:`pytest_trt.suggest.recheck`), narrow generalised groups, prune what was not needed
and name the rest compactly. Every candidate set is a real build (memoised by plan
fingerprint); the answer is a :class:`~pytest_trt.suggest.result.Suggestion`.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ..backends.base import BuildConfig, get_backend
from ..compare import compare_outputs
from ..compare.criterion import Criterion, Level
from ..core.dtypes import LOW_PRECISIONS
from ..errors import UsageError
from ..ledger.islands import island_costs
from ..ledger.timing import DEFAULT_ITERATIONS, DEFAULT_WARMUP, check_timing
from ..locate.divergence import Divergence, locate_divergence
from ..model.load import load_model
from ..plan.policy import PrecisionPolicy
from ..plan.rules import Rule
from ..reference.baseline import fp32_baseline, fp32_intermediates
from .flops import node_flops
from .groups import (
    GRADUAL_KIND_ORDER,
    KIND_ORDER,
    Group,
    candidate_groups,
    compress_groups,
    last_component,
    promote_group,
)
from .recheck import accuracy_record, input_sets
from .result import Attempt, Suggestion

if TYPE_CHECKING:  # pragma: no cover
    from ..backends.base import Backend
    from ..cache import ArtifactCache

__all__ = ["DEFAULT_MAX_BUILDS", "suggest_fp32_islands"]

#: Default budget of builds (distinct plans) of one search.
DEFAULT_MAX_BUILDS = 30
#: Cap of a single node's log10 jump in the ranking (an introduced NaN/Inf has an infinite jump).
_LOG_JUMP_CAP = 10.0


def suggest_fp32_islands(model, policy, feeds: dict, *, backend, cache: ArtifactCache | None = None,
                         rtol=None, atol=None, config: BuildConfig | None = None, max_builds: int | None = None,
                         threshold: float | None = None, baseline_provider: str = "cpu",
                         recheck_seeds=None, make_feeds=None, on_engine=None, timing: str = "auto",
                         timing_iterations: int = DEFAULT_ITERATIONS, timing_warmup: int = DEFAULT_WARMUP,
                         criterion: Criterion | None = None) -> Suggestion:
    """Search the smallest set of FP32 islands (keep_fp32 patterns) with which ``model`` passes.

    Args:
        model: a :class:`~pytest_trt.model.load.Model`, path or ModelProto.
        policy: the :class:`~pytest_trt.plan.policy.PrecisionPolicy` to start from (or a precision
            name such as ``"fp16"``); suggested patterns are added to its ``keep_fp32``.
        feeds: input feeds (the search is only as good as they are: use the inputs that fail).
        backend: a :class:`~pytest_trt.backends.base.Backend` or its name (``"emulate"``).
        cache: artifact cache for engines and the baseline (None: build without caching).
        rtol, atol: tolerances (a number or ``{output: number}``; default per precision).
        criterion: the :class:`~pytest_trt.compare.criterion.Criterion` every candidate is judged by
            (tolerances and metric floors per output, with their sources), instead of ``rtol``/``atol``
            (``trt.suggest()`` passes the test's; its precision is the policy's low precision).
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
            (a TensorRT layerwise build too: its own ``build_info``); the pytest plugin
            records them, so the run's engine counts include the search's builds.
        timing: how the cost of each proposed FP32 island is measured (the plan with and without
            it, same inputs, ``timing_iterations`` runs after ``timing_warmup``): ``auto`` (TensorRT's own timing, else
            ONNX Runtime CUDA, else not measured, saying why), ``engine``, ``onnxruntime-cuda``,
            ``off`` (:mod:`pytest_trt.ledger.islands`; ``Suggestion.island_costs``).

    >>> s = suggest_fp32_islands("encoder.onnx", PrecisionPolicy("fp16"), feeds, backend="emulate")  # doctest: +SKIP
    >>> s.patterns                                                                                   # doctest: +SKIP
    ['/encoder/layer.0/attention/output/LayerNorm/*']
    """
    check_timing(timing)
    search = _Search(model, policy, feeds, backend=backend, cache=cache, rtol=rtol, atol=atol, config=config,
                     max_builds=max_builds, threshold=threshold, provider=baseline_provider,
                     recheck_seeds=recheck_seeds, make_feeds=make_feeds, on_engine=on_engine,
                     criterion=criterion)
    found = search.run()
    if found.passed and found.patterns:
        found.island_costs = island_costs(
            search.model, search.policy, found.patterns, feeds, backend=search.backend, cache=cache,
            config=search.config, timing=timing, warmup=timing_warmup, iterations=timing_iterations, on_engine=on_engine,
            nodes={g.pattern: len(g.nodes) for g in found.groups})
    return found


class _Search:
    """One search: its budget, every attempt so far, and the memo tables of plans, baselines and divergences."""

    def __init__(self, model: Any, policy: Any, feeds: dict, *, backend: Any, cache: ArtifactCache | None,
                 rtol: Any, atol: Any, config: BuildConfig | None, max_builds: int | None, threshold: float | None,
                 provider: str = "cpu", recheck_seeds: Any = None, make_feeds: Any = None,
                 on_engine: Any = None, criterion: Criterion | None = None) -> None:

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
        self.sets, self.recheck_source = input_sets(feeds, recheck_seeds, make_feeds)
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
        names = self.model.output_names()
        if criterion is None:
            criterion = Criterion.resolve(names, self.plan0.low_precision or "fp32",
                                          [Level("argument", "suggest_fp32_islands()", {"rtol": rtol, "atol": atol})])
        elif rtol is not None or atol is not None:
            raise UsageError("suggest_fp32_islands: pass criterion= or rtol=/atol=, not both: the criterion holds them")
        elif criterion.no_check:
            raise UsageError("suggest_fp32_islands: a criterion with no_check has no verdict to search for")
        #: every candidate's judge, unchanged through the search
        self.criterion = criterion.with_outputs(names, "criterion=")
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
            self.expected[index] = fp32_baseline(self.model, self.sets[index].feeds, cache=self.cache,
                                                 provider=self.provider)
        return self.expected[index]

    def evaluate(self, patterns, phase: str, *, policy=None) -> tuple[Attempt, Any]:
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
        attempt.bytes_written = int(getattr(engine.build_info, "bytes_written", 0) or 0)
        self.memo[fp] = attempt
        self.attempts.append(attempt)
        self.engines = {fp: (engine, plan)}  # keep only the latest engine alive
        self.check(attempt, engine)
        attempt.seconds = time.perf_counter() - t0
        return attempt, plan

    def check(self, attempt: Attempt, engine) -> None:
        """Outputs on every input set (stopping at the first failure), then, when they all pass,
        NaN/Inf inside on every input set."""
        attempt.inputs, attempt.failing_set, attempt.nonfinite_nodes = [], None, []
        outputs_ok = True
        for index, inputs in enumerate(self.sets):
            result = compare_outputs(engine.run(inputs.feeds), self.expected_of(index), criterion=self.criterion,
                                     details=True)
            accuracy = accuracy_record(result)
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
                bad = [t.label for t in div.tensors if t.available and t.new_nonfinite and (t.nan or t.inf)]
                entry["nonfinite_nodes"] = bad
                entry["masking_nodes"] = [t.label for t in div.saturated]  # canonical names, as nonfinite_nodes; never NaN/Inf
                if bad and attempt.failing_set is None:
                    attempt.failing_set = index
                attempt.nonfinite_nodes.extend(n for n in bad if n not in attempt.nonfinite_nodes)
        attempt.passed = outputs_ok and not attempt.nonfinite_nodes

    def locate(self, attempt: Attempt, index: int | None = None, *, engine=None) -> Divergence:
        """Layerwise comparison of ``attempt``'s engine on input set ``index`` (default: the first
        that failed), memoised."""
        if index is None:
            index = attempt.failing_set or 0
        key = (attempt.fingerprint, index)
        if key in self.divergences:
            return self.divergences[key]
        engine = engine if engine is not None else self.engine_of(attempt)
        if index not in self.references:
            self.references[index] = fp32_intermediates(self.model, self.sets[index].feeds, provider=self.provider)
        before = engine.layerwise_engine
        div = locate_divergence(engine, self.sets[index].feeds, threshold=self.threshold,
                                reference=self.references[index], top=10)
        built = engine.layerwise_engine
        if built is not None and built is not before:  # TensorRT < 10.12: a separate layerwise build
            self.builds += 1
            self.cache_hits += int(bool(getattr(built.build_info, "cache_hit", False)))
            if self.on_engine is not None:
                self.on_engine(engine.plan, built)
        self.layerwise_runs += 1
        self.layerwise_note = div.note
        self.evidence.update(t.node for t in div.divergent)
        if attempt.first_divergence is None and div.first is not None and index == (attempt.failing_set or 0):
            attempt.first_divergence = div.first.label
        if len(self.divergences) > 64:
            self.divergences.clear()
        self.divergences[key] = div
        return div

    def fp32_check(self) -> Attempt | None:
        """The fully-FP32 plan, built at most once (None when the budget is spent)."""
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
        """The search (see the package docstring): initial build, greedy, refine, prune, compress."""
        self.by_pattern: dict[str, Group] = {}
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
        chosen, reason = self.greedy(initial, plan)
        if reason == "fails-in-fp32":
            return self.result("fails-in-fp32", [], None)
        if reason is not None:
            return self.no_answer(reason)

        minimal = True
        chosen, minimal = self.refine(chosen, minimal)
        chosen, minimal = self.prune(chosen, minimal)
        chosen = self.compress(chosen)
        final = self.memo[self.resolve(self.policy_with(self.patterns(chosen))).fingerprint()]
        return self.result("found", chosen, final, minimal=minimal)

    def greedy(self, initial: Attempt, plan: Any) -> tuple[list[Group], str | None]:
        """Add the best-ranked group, rebuild, re-locate, until the outputs pass.

        Returns the chosen groups and None when they pass, else the reason the loop stopped:
        ``fails-in-fp32`` (no node diverges at first and the FP32 plan fails too),
        ``exhausted`` (no candidate left) or ``budget``.
        """
        chosen: list[Group] = []
        ineffective: set[str] = set()
        current, current_plan = initial, plan
        first = True
        while not current.passed:
            div = self.locate(current)
            if first:
                first = False
                if not div.found:
                    fp32 = self.fp32_check()
                    if fp32 is not None and not fp32.passed:
                        return [], "fails-in-fp32"
            low_now = {d.name for d in current_plan.nodes.values()
                       if d.kind == "compute" and d.precision in LOW_PRECISIONS}
            ranked = self.rank(div, low_now, chosen, ineffective)
            if not ranked:
                held = sorted(self.evidence & low_now, key=lambda n: self.order[n])
                self.blocked = [f"{self.model.names.canonical(n)} ({current_plan.nodes[n].rule})" for n in held]
                return chosen, "exhausted"
            if self.budget_left() <= (0 if self.fp32_attempt is not None else 1):  # keep one for the FP32 check
                return chosen, "budget"
            group = ranked[0]
            new = self.promote(group, chosen)
            attempt, new_plan = self.evaluate(self.patterns(new), "greedy")
            if attempt.fingerprint == current.fingerprint:
                ineffective.add(group.pattern)  # blocked by the policy's own rules: no change
                continue
            chosen, current, current_plan = new, attempt, new_plan
        return chosen, None

    def no_answer(self, reason: str) -> Suggestion:
        """The result when no passing set was found (``reason``: ``exhausted`` or ``budget``)."""
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
        """Chosen groups named compactly (:func:`~pytest_trt.suggest.groups.compress_groups`)."""
        return compress_groups(chosen, self.candidates)

    def promote(self, group: Group, chosen: list) -> list:
        """``chosen`` plus ``group`` (:func:`~pytest_trt.suggest.groups.promote_group`)."""
        return promote_group(group, chosen, self.by_pattern)

    def refine(self, chosen: list, minimal: bool) -> tuple[list, bool]:
        for general in [g for g in chosen if g.kind == "general"]:
            seen = []
            for scope in general.scopes:
                rule = Rule(scope, "fp32")
                names = self.model.names
                if any(rule.matches(_Named(n), names.get(n)) for n in self.evidence) and scope in self.by_pattern:
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
        """The suggestion: ``final`` is the attempt of the answer (None when there is none)."""
        kept = final is not None and reason in ("found", "already-passes", "passes-output-only")
        low_nodes = final.low_nodes if final is not None else self.initial.low_nodes
        fp32_nodes = self.compute_nodes - low_nodes
        if (reason in ("found", "already-passes") and self.plan0.low_precision is not None
                and fp32_nodes * 2 > self.compute_nodes):
            reason = "fp32-in-effect"
        passed = reason in ("found", "already-passes")
        patterns = list(self.patterns(chosen)) if kept else []
        policy = self.policy_with(patterns) if kept else None
        alternatives = self.alternatives(chosen) if passed else []
        outcome = self.outcome(final)
        return Suggestion(
            passed=passed, patterns=patterns, groups=[g for p in patterns for g in chosen if g.pattern == p],
            policy=policy, base_policy=self.policy, builds=self.builds, cache_hits=self.cache_hits,
            initial_accuracy=self.initial.accuracy, compute_nodes=self.compute_nodes, low_nodes=low_nodes,
            low_precision=self.plan0.low_precision, reason=reason, model=self.model.label,
            backend=self.backend.name, backend_disclaimer=self.backend.disclaimer, criterion=self.criterion,
            first_divergence=self.initial.first_divergence, attempts=list(self.attempts), alternatives=alternatives,
            layerwise_runs=self.layerwise_runs, layerwise_note=self.layerwise_note, blocked=list(self.blocked),
            seconds=time.perf_counter() - self.start, minimal=minimal,
            recheck_seeds=[x.seed for x in self.sets[1:]], recheck_source=self.recheck_source, **outcome,
        )

    def alternatives(self, chosen: list) -> list[dict[str, Any]]:
        """Broader general patterns covering the chosen scopes' module elsewhere (NOT built)."""
        alternatives: list[dict[str, Any]] = []
        for g in chosen:
            if g.kind != "scope":
                continue
            general = self.by_pattern.get("*/" + (last_component(g) or "") + "/*")
            if (general is not None and general.kind == "general" and g.nodes < general.nodes
                    and not any(general.pattern == a["pattern"] for a in alternatives)):
                alternatives.append({"pattern": general.pattern, "scopes": len(general.scopes),
                                     "nodes": len(general.nodes), "built": False})
            # every module of the scope's class (class:LlamaRMSNorm), when that is a candidate
            for cand in self.candidates:
                if (cand.kind == "class" and g.nodes < cand.nodes and g.classes == cand.classes
                        and not any(cand.pattern == a["pattern"] for a in alternatives)):
                    names = self.model.names
                    scopes = {names[n].scope for n in cand.nodes if n in names}
                    alternatives.append({"pattern": cand.pattern, "scopes": len(scopes), "nodes": len(cand.nodes),
                                         "built": False})
        return alternatives

    def outcome(self, final: Attempt | None) -> dict[str, Any]:
        """The suggestion's fields taken from ``final`` (the initial or closest attempt when None)."""
        shown = final if final is not None else self._closest_attempt()
        flops, fp32_flops = self.flops_of(final if final is not None else self.initial)
        fp32 = self.fp32_attempt
        return {
            "accuracy": final.accuracy if final is not None else self.initial.accuracy,
            "fp32_passes": None if fp32 is None else fp32.passed,
            "fp32_accuracy": fp32.accuracy if fp32 is not None else {},
            "inputs": list(shown.inputs) if shown is not None else [],
            "nonfinite_nodes": list(final.nonfinite_nodes) if final is not None else [],
            "flops": flops, "fp32_flops": fp32_flops,
        }

    def _closest_attempt(self) -> Attempt | None:
        tried = [a for a in self.attempts if a.phase != "fp32-check"]
        if not tried:
            return None
        return min(tried, key=lambda a: (not a.outputs_passed, len(a.nonfinite_nodes), a.worst_max_abs))

    def flops_of(self, attempt: Attempt | None) -> tuple[int, int]:
        """``(total, fp32)`` estimated FLOPs of the compute nodes under ``attempt``'s plan (0, 0 when unknown)."""
        if attempt is None:
            return 0, 0
        try:
            if 0 not in self.references:
                self.references[0] = fp32_intermediates(self.model, self.sets[0].feeds, provider=self.provider)
            shapes = {k: tuple(np.shape(v)) for k, v in self.sets[0].feeds.items()}
            shapes.update({i.name: tuple(i.dims) for i in self.model.proto.graph.initializer})
            shapes.update({k: tuple(np.shape(v)) for k, v in self.references[0].items()})
            per_node = node_flops(self.model, shapes)
        except Exception:  # noqa: BLE001 - an estimate: never fail the search over it
            return 0, 0
        if attempt.fingerprint == getattr(self.fp32_attempt, "fingerprint", None):
            plan = self.resolve(self.policy.__class__("fp32"))
        else:
            plan = self.resolve(self.policy_with(attempt.patterns))
        compute = [d for d in plan.nodes.values() if d.kind == "compute"]
        total = sum(per_node.get(d.name, 0) for d in compute)
        fp32 = sum(per_node.get(d.name, 0) for d in compute if d.precision not in LOW_PRECISIONS)
        return int(total), int(fp32)


class _Named:
    """A stand-in with ``.name`` for Rule.matches on a bare node name (op rules never match it)."""

    op_type = ""

    def __init__(self, name: str):
        self.name = name

