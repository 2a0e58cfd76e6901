"""FP32-fallback search: the fewest FP32 islands that make a low-precision model pass.

:func:`suggest_fp32_islands` answers "what do I add to ``keep_fp32`` so this model passes
at this tolerance on these inputs?" with a short list of patterns, every one of which
was verified by a real build and run on the chosen backend.

Search space: groups, not single nodes
--------------------------------------
Candidates are derived from the plan's low-precision compute nodes, by their canonical scoped
names (:mod:`pytest_trt.model.names`: a dynamo export's ``node_pow_1`` is
``/model/layers.0/input_layernorm/node_pow_1``):

* ``scope``: a node's module scope, ``/encoder/layer.0/attention/output/LayerNorm/*``;
* ``node``: the node's exact name, for nodes at the root or directly inside a *block*
  (``/encoder/layer.0/attention/self/MatMul`` lives next to the ``query/`` sub-scope);
* ``general``: the same last scope component across layers, ``*/LayerNorm/*``
  (only when it spans several scopes);
* ``class``: a module class that is the innermost class of every node it selects (a leaf
  module such as a norm), ``class:LlamaRMSNorm``, where the model records classes;
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
   :func:`~pytest_trt.locate.divergence.locate_divergence` and rank the candidate groups that
   contain a divergent node (one that introduced NaN/Inf, or whose error jumped): narrow
   kinds first (scope/node, then general, class, block, op), then by what the group explains
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
   named by that candidate (every LayerNorm scope -> ``*/LayerNorm/*``; every RMSNorm scope of a
   dynamo export -> ``class:LlamaRMSNorm``; every Softmax -> ``op:Softmax``). A chosen scope whose
   class covers more modules offers the class as a broader alternative (not built).

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
estimate from :mod:`pytest_trt.suggest.flops` is reported beside it) is ``fp32-in-effect``: not a
low-precision engine, so not called found (``pytest-trt suggest`` exits 1).

``builds`` counts every engine built or loaded for the search: distinct plans, engines
re-loaded to re-check an earlier plan, and TensorRT's separate layerwise builds.

When nothing passes
-------------------
The fully-FP32 plan is NOT built up front: on a model that merely needs a LayerNorm kept in
FP32 it would be a wasted build (and on TensorRT builds are the cost that matters). It is
built once, lazily, when the answer depends on it: when the first layerwise comparison finds
no divergent node (error accumulating gradually, or a tolerance tighter than FP32 itself can
meet), or when the search ends without a passing set. Then the report says whether the model
fails in FP32 too (no FP32 island can help: loosen the tolerance, or check the backend's FP32,
e.g. TF32) or passes in FP32 but no smaller set was found within ``max_builds``.

Layout
------
``groups`` (the candidate groups and the moves that need no build), ``recheck`` (the input
sets every answer is checked on), ``search`` (:func:`suggest_fp32_islands`: builds, checks,
greedy, refine, prune), ``result`` (:class:`Attempt`, :class:`Suggestion` and its message).
``escape_glob`` and ``scope_of`` live in :mod:`pytest_trt.locate.scopes` and are re-exported here.
"""

from __future__ import annotations

from ..locate.scopes import escape_glob, scope_of
from .groups import GRADUAL_KIND_ORDER, KIND_ORDER, Group, candidate_groups, compress_groups
from .recheck import MAX_RECHECK_SEEDS, MIN_RECHECK_SEEDS, InputSet, permuted_feeds
from .result import Attempt, Suggestion
from .search import DEFAULT_MAX_BUILDS, suggest_fp32_islands

__all__ = [
    "DEFAULT_MAX_BUILDS",
    "GRADUAL_KIND_ORDER",
    "KIND_ORDER",
    "MAX_RECHECK_SEEDS",
    "MIN_RECHECK_SEEDS",
    "Attempt",
    "Group",
    "InputSet",
    "Suggestion",
    "candidate_groups",
    "compress_groups",
    "escape_glob",
    "permuted_feeds",
    "scope_of",
    "suggest_fp32_islands",
]
