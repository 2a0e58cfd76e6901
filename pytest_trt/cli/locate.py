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
    emit_json,
)
from .compare import compare_figures, figures_json, prepare, ratio_line


def run(args: Any) -> int:
    """Compare the outputs, then every intermediate tensor; exit 0 within tolerance, 1 outside."""
    session, model, plan, feeds, engine, event = prepare(args)
    expected = session.baseline(model, feeds)
    actual = engine.run(feeds)
    result, ratios = compare_figures(plan, actual, expected, args)
    found = locate_divergence(engine, feeds, threshold=args.threshold, jump=args.jump, top=args.top)
    if args.json:
        emit_json({"model": str(args.model), "backend": engine.backend_name, "policy": plan.policy.describe(),
                   "engine": event.to_json(), "seed": args.seed, "passed": result.passed,
                   "compare": figures_json(result, ratios), "divergence": found.to_json()})
    else:
        print(f"{model.label}: {engine.describe()}")
        if session.backend.disclaimer:
            print(f"(backend {engine.backend_name}: {session.backend.disclaimer})")
        verdict = "within tolerance" if result.passed else "OUTSIDE tolerance"
        assert result.criterion is not None  # compare_outputs records the criterion it judged by
        print(f"outputs {verdict} [precision {result.precision}; {result.criterion.describe()}]: "
              + "; ".join(oc.summary_line() for oc in result.outputs.values()))
        print(ratio_line(ratios))
        print(found.message())
    return 0 if result.passed else 1
