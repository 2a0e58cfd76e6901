"""Resolution: a policy and a model in, a :class:`~pytest_trt.plan.PrecisionPlan` out.

:func:`resolve_plan` runs the pipeline's first stage end to end: type the model
(:mod:`pytest_trt.model.onnx_typing`), check it (:mod:`pytest_trt.plan.checks`), match the
policy's rules to nodes (:mod:`pytest_trt.plan.rules`), decide each node
(:mod:`pytest_trt.plan.decide`), type each node (:mod:`pytest_trt.plan.node_io`) and
assemble the plan with its notes and ``expect_fp32`` failures. :func:`resolve_as_is`
reads the plan from a model that arrives with its own precision instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.dtypes import FP32, LOW_PRECISIONS, PRECISION_OF_ELEM
from ..errors import ModelError, PatternError
from ..model.onnx_typing import GraphContext, domain_of, graph_context
from .checks import check_bindings, check_quantization
from .decide import check_supported, decide, fixed_reason, written_precision
from .node_io import storage, type_nodes
from .records import (
    AS_WRITTEN,
    COMPUTE,
    FIXED,
    QUANTIZATION_OPS,
    ExpectationFailure,
    NodeDecision,
    NodeIO,
    PolicyView,
    PrecisionPlan,
)
from .rules import Rule, fixed_only_message, match_rules, no_match_message

if TYPE_CHECKING:  # pragma: no cover
    from ..model.load import Model


def resolve_plan(model: Model, policy: PolicyView) -> PrecisionPlan:
    """Resolve ``policy`` against ``model`` (``policy.resolve(model)`` calls this)."""
    if policy.as_is:
        return resolve_as_is(model, policy)
    graph = model.proto.graph
    ctx = graph_context(model)
    ctx.check_types()
    check_quantization(ctx)

    deciding = match_rules(policy.rules_in_order(), graph.node, model.label, model.names)
    decisions: dict[str, NodeDecision] = {}
    for node in graph.node:
        decisions[node.name] = decide(node, deciding.get(node.name), policy, ctx)
    check_selects_compute(policy.rules_in_order(), graph.node, decisions, model.label, model.names)
    check_supported(decisions, ctx)

    node_io = type_nodes(ctx, decisions)
    return _assemble(policy, ctx, decisions, node_io)


def resolve_as_is(model: Model, policy: PolicyView) -> PrecisionPlan:
    """The plan of a model that arrives with its own precision (``PrecisionPolicy(as_is=True)``).

    Nothing is decided: every compute node computes in the type of its primary float
    output as the model (after ONNX type inference) writes it, so the model's own Casts
    decide; rule ``"as written"``. Fixed nodes (Q/DQ, shape math, ...) are fixed as in
    any plan. Every tensor is read and stored in its own type, so there are no
    boundaries and the strong realization is the model itself.

    Raises :class:`~pytest_trt.errors.ModelError` naming the node when the model binds
    one type variable to different types (``Add(fp16, fp32)``: ONNX Runtime and
    TensorRT reject it) or a Q/DQ node's scale / zero point has the wrong shape.
    """
    if policy.default != FP32 or policy.rules_in_order():
        raise ModelError(  # PrecisionPolicy refuses this at construction; kept for hand-made policies
            f"as-is policy {policy.describe()!r} also rewrites precision; see PrecisionPolicy(as_is=True)")
    ctx = graph_context(model)
    ctx.check_types()
    check_bindings(ctx)
    check_quantization(ctx)

    decisions: dict[str, NodeDecision] = {}
    node_io: dict[str, NodeIO] = {}
    for node in ctx.graph.node:
        reason = fixed_reason(node, ctx)
        if reason is not None:
            decisions[node.name] = NodeDecision(node.name, node.op_type, None, f"fixed: {reason}", FIXED)
        else:
            decisions[node.name] = NodeDecision(node.name, node.op_type, written_precision(node, ctx),
                                                AS_WRITTEN, COMPUTE)
        node_io[node.name] = NodeIO(
            tuple(ctx.original(n) if ctx.is_float(n) else None for n in node.input),
            tuple(ctx.original(o) if ctx.is_float(o) else None for o in node.output),
            tuple((n, ctx.original(n)) for n in ctx.outer_refs.get(node.name, ()) if ctx.is_float(n)),
        )
    plan = _assemble(policy, ctx, decisions, node_io)
    assert not plan.boundaries, f"as-is plan needs Casts: {plan.boundaries}"  # every read is as stored
    return plan


def check_selects_compute(rules: Any, nodes: Any, decisions: dict[str, NodeDecision], label: str,
                          names: Any = None) -> None:
    """PatternError for a rule whose every matched node is fixed: it selects no float computation
    and would change nothing (``--keep-fp32 op:Shape``), which is as wrong as matching no node.

    One exception has an effect: an FP32 rule over fixed nodes that an earlier rule asked for in
    low precision settles that request (``["/branch/*=fp16", "op:If=fp32"]``: control flow asked
    for FP16 is an error otherwise, whose message proposes exactly this later rule).
    """
    rules = list(rules)

    def info(node: Any) -> Any:
        return names.get(node.name) if names is not None else None

    for index, rule in enumerate(rules):
        matched = [n for n in nodes if rule.matches(n, info(n))]
        if not matched or any(decisions[n.name].kind != FIXED for n in matched):
            continue
        settles = rule.precision == FP32 and any(
            earlier.precision in LOW_PRECISIONS and earlier.matches(n, info(n))
            for earlier in rules[:index] for n in matched)
        if not settles:
            reasons = {n.name: decisions[n.name].rule for n in matched}
            raise PatternError(fixed_only_message(rule, label, matched, reasons, names))


def _assemble(policy: PolicyView, ctx: GraphContext, decisions: dict[str, NodeDecision],
              node_io: dict[str, NodeIO]) -> PrecisionPlan:
    """The plan from the decisions and what each node reads and writes (both resolutions end here)."""
    tensor_precision, boundaries = storage(ctx, node_io)
    return PrecisionPlan(
        model=ctx.model,
        policy=policy,
        nodes=decisions,
        tensor_precision=tensor_precision,
        boundaries=boundaries,
        node_io=node_io,
        elem_types=ctx.elem_types,
        value_info=ctx.infos,
        constant_tensors=frozenset(ctx.constants),
        notes=_source_notes(ctx, policy, decisions),
        expectation_failures=_expectations(policy, decisions, node_io, ctx),
    )


def _source_notes(ctx: GraphContext, policy: PolicyView, decisions: dict[str, NodeDecision]) -> list[str]:
    """What the plan should say about a source model that is not plain FP32."""
    low: dict[str, list[str]] = {}
    names = [*ctx.inputs, *(i.name for i in ctx.graph.initializer)]  # graph order: the same note every run
    names += [o for n in ctx.graph.node for o in n.output if o]
    for name in dict.fromkeys(names):
        elem = ctx.elem_types.get(name)
        if elem in (10, 16):
            low.setdefault(PRECISION_OF_ELEM[elem], []).append(name)
    quant = [n.name for n in ctx.graph.node if n.op_type in QUANTIZATION_OPS and domain_of(n) == ""]
    notes = []
    if low:
        what = "; ".join(f"{len(v)} tensor(s) in {p} (e.g. {', '.join(map(repr, v[:3]))})" for p, v in sorted(low.items()))
        if policy.as_is:
            notes.append(f"source model is mixed precision: {what}; planned as written (as_is)")
        else:
            # the model's own FP32 island (e.g. a norm an autocast export keeps FP32) that this policy lowers
            lowered = [n.name for n in ctx.graph.node
                       if decisions[n.name].kind == COMPUTE and decisions[n.name].precision in LOW_PRECISIONS
                       and n.op_type != "Cast" and written_precision(n, ctx) == FP32]
            island = (f" The model computes {len(lowered)} node(s) in FP32 as written (e.g. "
                      f"{', '.join(map(repr, lowered[:3]))}), which this policy lowers to "
                      f"{decisions[lowered[0]].precision}." if lowered else "")
            notes.append(
                f"source model is mixed precision: {what}.{island} This policy re-types every node, the model's own "
                f"Casts included: realizations start from the model's values (low-precision initializers widen "
                f"exactly) and lower them per the plan, so the model's FP16/BF16 choices are replaced. To test the "
                f"model in its own precision use as_is=True (--trt-as-is); to apply a policy, an FP32 source "
                f"model is the better input.")
    if quant:
        notes.append(f"model has {len(quant)} Q/DQ node(s) (explicit quantization): kept as written by every plan")
    return notes


def _expectations(policy: PolicyView, decisions: dict[str, NodeDecision], node_io: dict[str, NodeIO],
                  ctx: GraphContext) -> list[ExpectationFailure]:
    """Nodes ``expect_fp32`` patterns select that compute in low precision (PatternError: a pattern matches nothing).

    Fixed nodes (Q/DQ, shape math) and Cast nodes are not checked: ``expect_fp32=["/norm/*"]``
    must not fail on the island's own exit Cast to FP16.
    """
    if not policy.expect_fp32:
        return []
    selected = _expect_selection(policy, ctx)
    producers = {o: n.name for n in ctx.graph.node for o in n.output if o}
    failures = []
    for node in ctx.graph.node:
        decision = decisions[node.name]
        precision = decision.precision
        if node.name not in selected or decision.kind != COMPUTE or precision is None or precision not in LOW_PRECISIONS:
            continue
        if node.op_type == "Cast" and domain_of(node) == "":
            continue  # a boundary, not a computation: an island's exit Cast to FP16 is how a model keeps it FP32
        if policy.as_is:
            fix = _cast_fix(node, node_io[node.name], ctx, producers)
        else:
            fix = (f"decided by rule {decision.rule!r}; keep it FP32 with keep_fp32=[{node.name!r}] "
                   f"(or a later rule '{node.name}=fp32')")
        failures.append(ExpectationFailure(node.name, node.op_type, precision, selected[node.name][0], fix,
                                           ctx.model.names.canonical(node.name)))
    return failures


def _expect_selection(policy: PolicyView, ctx: GraphContext) -> dict[str, list[str]]:
    """``{node name: [expect_fp32 patterns selecting it]}``; PatternError for a pattern that selects nothing."""
    rules = tuple(Rule(p, FP32, source="expect_fp32") for p in policy.expect_fp32)
    selected: dict[str, list[str]] = {}
    matched = [False] * len(rules)
    names = ctx.model.names
    for node in ctx.graph.node:
        info = names.get(node.name)
        for index, rule in enumerate(rules):
            if rule.matches(node, info):
                matched[index] = True
                selected.setdefault(node.name, []).append(rule.pattern)
    for index, rule in enumerate(rules):
        if not matched[index]:
            raise PatternError(no_match_message(rule, ctx.model.label, list(ctx.graph.node), names))
        hits = [n for n in ctx.graph.node if rule.matches(n, names.get(n.name))]
        reasons = {n.name: r for n in hits if (r := fixed_reason(n, ctx)) is not None}
        if len(reasons) == len(hits):  # only fixed nodes: nothing of the model's float computation to expect
            raise PatternError(fixed_only_message(rule, ctx.model.label, hits, reasons, names))
    return selected


def _cast_fix(node: Any, io: NodeIO, ctx: GraphContext, producers: dict[str, str]) -> str:
    """The Casts that would make an as-written low-precision node compute in FP32."""
    steps = []
    for name, precision in zip(node.input, io.inputs, strict=True):
        if precision not in LOW_PRECISIONS:
            continue
        if name in ctx.constants:
            steps.append(f"store {name!r} as FLOAT (it is {precision})")
        else:
            src = f" (from {producers[name]!r})" if name in producers else " (a graph input)"
            steps.append(f"Cast {name!r}{src} to FLOAT before it")
    low_out = [o for o, p in zip(node.output, io.outputs, strict=True) if p in LOW_PRECISIONS]
    if low_out:
        back = {"fp16": "FLOAT16", "bf16": "BFLOAT16"}[io.outputs[list(node.output).index(low_out[0])] or ""]
        steps.append(f"let it write {', '.join(map(repr, low_out))} as FLOAT, with a Cast back to {back} "
                     f"where low-precision readers need it")
    text = "; ".join(steps) or "its inputs and outputs are FLOAT already"
    return (f"to keep it FP32 the model needs: {text} (i.e. move it inside the FP32 island, e.g. put it on "
            f"the exporter's FP32 block list)")


__all__ = ["resolve_as_is", "resolve_plan"]
