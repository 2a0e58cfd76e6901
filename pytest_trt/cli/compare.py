"""``pytest-trt compare MODEL``: build (or load) the engine, run it and the FP32 baseline, compare."""

from __future__ import annotations

from .common import (
    add_engine_flags,
    add_input_flags,
    add_model_and_policy,
    add_tolerance_flags,
    build_config_from_args,
    emit_json,
    feeds_from_args,
    policy_from_args,
    session_from_args,
)


def add_parser(sub) -> None:
    p = sub.add_parser("compare", help="compare the engine with the FP32 ONNX Runtime baseline",
                       description="Build (or load from the cache) the engine for MODEL under the policy, run it "
                       "and the FP32 ONNX Runtime baseline on the same inputs, and compare. Exit 0 within "
                       "tolerance, 1 outside, 2 on usage or input errors.")
    add_model_and_policy(p)
    add_engine_flags(p)
    add_input_flags(p)
    add_tolerance_flags(p)
    p.add_argument("--baseline", choices=("fp32", "as-written"), default="fp32",
                   help="reference: fp32 = ONNX Runtime on the model upcast to FP32 (Q/DQ removed; for an FP32 model, "
                   "the model itself), as-written = ONNX Runtime on the model as written (fake-quant for Q/DQ) "
                   "(default: fp32)")
    p.set_defaults(run=run)


def prepare(args):
    """Session, model, plan, feeds and engine for the compare-style subcommands."""
    session = session_from_args(args)
    model = session.model(args.model)
    plan = session.plan(model, policy_from_args(args))
    feeds = feeds_from_args(args, model)
    config = build_config_from_args(args, model, feeds)
    reason = session.backend.supports(plan, config)  # e.g. weak typing refused for as-is models
    if reason:
        from ..errors import BackendUnavailable

        raise BackendUnavailable(
            f"{session.backend.name} cannot build {model.label} [{plan.policy.describe()}]: {reason}")
    engine, event = session.engine(plan, config)
    return session, model, plan, feeds, engine, event


def run(args) -> int:
    from ..baseline import reference_label, reference_model
    from ..compare import compare_outputs, default_tolerances

    session, model, plan, feeds, engine, event = prepare(args)
    expected = session.baseline(reference_model(model, getattr(args, "baseline", "fp32")), feeds)
    actual = engine.run(feeds)
    d_rtol, d_atol = default_tolerances(plan.low_precision or "fp32")
    rtol = args.rtol if args.rtol is not None else d_rtol
    atol = args.atol if args.atol is not None else d_atol
    result = compare_outputs(actual, expected, rtol=rtol, atol=atol, precision=plan.low_precision or "fp32")
    if args.json:
        emit_json({"model": str(args.model), "backend": engine.backend_name, "policy": plan.policy.describe(),
                   "engine": event.to_json(), "seed": args.seed, "baseline": args.baseline,
                   "passed": result.passed, **result.to_json()})
    else:
        print(f"{model.label}: {engine.describe()}")
        if engine.backend_name == "emulate":
            print("(backend emulate: CPU precision emulation on ONNX Runtime, not TensorRT)")
        print(f"reference: {reference_label(model, args.baseline)}")
        print(result.message())
    return 0 if result.passed else 1
