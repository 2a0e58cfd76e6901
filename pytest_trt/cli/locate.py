"""``pytest-trt locate MODEL``: name the first node whose error jumps, layer by layer.

Builds (or loads) the engine as ``compare`` does, compares the outputs, then compares every
float tensor of the engine with ONNX Runtime FP32 (:func:`pytest_trt.locate_divergence`).
Exit status follows the outputs, like ``compare``: 0 within tolerance (an internal
divergence that the outputs absorb is reported but does not fail), 1 outside tolerance
(with or without a single divergent node: gradual error fails too), 2 usage or input error.
"""

from __future__ import annotations

from typing import Any

from ..locate.divergence import locate_divergence
from .common import (
    add_engine_flags,
    add_input_flags,
    add_model_and_policy,
    add_tolerance_flags,
    emit_json,
    number,
)
from .compare import compare_figures, figures_json, prepare, ratio_line


def add_parser(sub: Any) -> None:
    """The ``locate`` subcommand and its flags."""
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
    p.add_argument("--threshold", type=number(minimum=0, exclusive=True), default=None,
                   help="relative error (max abs err / max |ref|) past which a node can diverge, > 0 "
                   "(default: 1e-2 fp16, 5e-2 bf16, 1e-4 fp32)")
    p.add_argument("--jump", type=number(minimum=1), default=10.0,
                   help="how many times its inputs' worst error a divergent node's error must be, >= 1 (default: 10)")
    p.add_argument("--top", type=number(minimum=1, integer=True), default=5,
                   help="top contributors to list, >= 1 (default: 5)")
    p.set_defaults(run=run)


def run(args: Any) -> int:
    """Compare the outputs, then every intermediate tensor; exit 0 within tolerance, 1 outside."""
    session, model, plan, feeds, engine, event = prepare(args)
    expected = session.baseline(model, feeds)
    actual = engine.run(feeds)
    result, rtol, atol, ratios = compare_figures(plan, actual, expected, args)
    found = locate_divergence(engine, feeds, threshold=args.threshold, jump=args.jump, top=args.top)
    if args.json:
        emit_json({"model": str(args.model), "backend": engine.backend_name, "policy": plan.policy.describe(),
                   "engine": event.to_json(), "seed": args.seed, "passed": result.passed,
                   "compare": figures_json(result, ratios), "divergence": found.to_json()})
    else:
        print(f"{model.label}: {engine.describe()}")
        if engine.backend_name == "emulate":
            print("(backend emulate: CPU precision emulation on ONNX Runtime, not TensorRT)")
        verdict = "within tolerance" if result.passed else "OUTSIDE tolerance"
        print(f"outputs {verdict} [precision {result.precision}; rtol {rtol:g}, atol {atol:g}]: "
              + "; ".join(oc.summary_line() for oc in result.outputs.values()))
        print(ratio_line(ratios))
        print(found.message())
    return 0 if result.passed else 1
