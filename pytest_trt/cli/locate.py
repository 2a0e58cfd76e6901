"""``pytest-trt locate MODEL``: name the first node whose error jumps, layer by layer.

Builds (or loads) the engine as ``compare`` does, compares the outputs, then compares every
float tensor of the engine with ONNX Runtime FP32 (:func:`pytest_trt.locate_divergence`).
Exit status follows the outputs, like ``compare``: 0 within tolerance (an internal
divergence that the outputs absorb is reported but does not fail), 1 outside tolerance
(with or without a single divergent node: gradual error fails too), 2 usage or input error.
"""

from __future__ import annotations

from .common import (
    add_engine_flags,
    add_input_flags,
    add_model_and_policy,
    add_tolerance_flags,
    emit_json,
)


def add_parser(sub) -> None:
    p = sub.add_parser("locate", help="name the first divergent node (layerwise comparison with FP32)",
                       description="Build (or load) the engine for MODEL under the policy, compare its outputs with "
                       "the FP32 ONNX Runtime baseline, and compare every intermediate float tensor to name the first "
                       "node whose error jumps (NaN/Inf introduced, or relative error past --threshold with a jump "
                       "of more than --jump x over its inputs). Exit 0 when the outputs are within tolerance, 1 "
                       "outside, 2 on usage or input errors.")
    add_model_and_policy(p)
    add_engine_flags(p)
    add_input_flags(p)
    add_tolerance_flags(p)
    p.add_argument("--threshold", type=float, default=None,
                   help="relative error (max abs err / max |ref|) past which a node can diverge "
                   "(default: 1e-2 fp16, 5e-2 bf16, 1e-4 fp32)")
    p.add_argument("--jump", type=float, default=10.0,
                   help="how many times its inputs' worst error a divergent node's error must be (default: 10)")
    p.add_argument("--top", type=int, default=5, help="top contributors to list (default: 5)")
    p.set_defaults(run=run)


def run(args) -> int:
    from ..compare import compare_outputs, default_tolerances
    from ..layerwise import locate_divergence
    from .compare import prepare

    session, model, plan, feeds, engine, event = prepare(args)
    expected = session.baseline(model, feeds)
    actual = engine.run(feeds)
    d_rtol, d_atol = default_tolerances(plan.low_precision or "fp32")
    rtol = args.rtol if args.rtol is not None else d_rtol
    atol = args.atol if args.atol is not None else d_atol
    result = compare_outputs(actual, expected, rtol=rtol, atol=atol, precision=plan.low_precision or "fp32")
    found = locate_divergence(engine, feeds, threshold=args.threshold, jump=args.jump, top=args.top)
    if args.json:
        emit_json({"model": str(args.model), "backend": engine.backend_name, "policy": plan.policy.describe(),
                   "engine": event.to_json(), "seed": args.seed, "passed": result.passed,
                   "compare": result.to_json(), "divergence": found.to_json()})
    else:
        print(f"{model.label}: {engine.describe()}")
        if engine.backend_name == "emulate":
            print("(backend emulate: CPU precision emulation on ONNX Runtime, not TensorRT)")
        verdict = "within tolerance" if result.passed else "OUTSIDE tolerance"
        print(f"outputs {verdict} (rtol {rtol:g}, atol {atol:g}): "
              + "; ".join(oc.summary_line() for oc in result.outputs.values()))
        print(found.message())
    return 0 if result.passed else 1
