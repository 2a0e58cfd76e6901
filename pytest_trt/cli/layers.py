"""``pytest-trt layers MODEL``: what the engine runs, per ONNX node: planned vs observed precision.

Builds (or loads from the cache) the engine for MODEL under the policy and prints its
:class:`~pytest_trt.layers.report.LayerReport`: one row per node with planned and observed
precision, status (ok / mismatch / unverifiable / fixed), how it is known (evidence:
observed / inferred from a fused kernel's boundary / unverifiable / emulated) and the
carrying layer (``[myelin]`` for Myelin regions). ``--json`` prints the report as JSON,
with ``evidence`` counts for the report and for each ``--expect`` check. On the
``emulate`` backend the report is derived from the plan (emulated = planned) and says so.

Input shapes (``--input-shapes``) are needed for TensorRT's optimization profile when
the model has symbolic dims; the ``emulate`` backend needs none. No input is run, so no
value is needed either: ``--val-range`` is not asked for (an integer input's range
matters to ``compare``, not here), and ``--load-inputs`` only lends its arrays' shapes.

Exit 0 (a report, whatever it shows). With ``--expect PATTERN=PREC`` (repeatable) each
expectation runs :func:`pytest_trt.assert_precision`; exit 1 if any fails.
"""

from __future__ import annotations

import sys

from ..errors import PrecisionError
from ..inputs import parse_input_shape, resolve_profile
from ..plan.policy import parse_rule
from ..verify.precision import assert_precision
from .args import flat
from .common import (
    build_config_from_args,
    emit_json,
    feeds_from_args,
    policy_from_args,
    session_from_args,
)
from .spelling import cli_spelling


def run(args) -> int:
    """The ``layers`` subcommand: print (or ``--json``) the layer report, check ``--expect`` rules."""
    expectations = [parse_rule(text, source="--expect") for text in args.expect]
    session = session_from_args(args)
    model = session.model(args.model)
    plan = session.plan(model, policy_from_args(args))
    if args.load_inputs:
        config = build_config_from_args(args, feeds_from_args(args, model))
    elif args.input_shapes or session.backend.shape_specific:
        # only the shapes matter (the optimization profile); values, e.g. an integer input's
        # range, do not: the same profile compare builds from its feeds, so the cache entry is shared
        shapes = parse_input_shape(flat(args.input_shapes)) if args.input_shapes else None
        config = session.build_config(profiles=(resolve_profile(model, shapes=shapes),))
    else:
        config = session.build_config()  # a backend not building for shapes (emulate) needs no inputs
    engine, event = session.engine(plan, config)
    report = engine.layers()
    checks, failed = [], []
    for rule in expectations:
        try:
            checks.append(assert_precision(engine, rule.pattern, rule.precision,
                                           allow_unverifiable=args.allow_unverifiable))
        except PrecisionError as exc:
            failed.append(exc)
            checks.append(exc.findings)
    if args.json:
        emit_json({"model": str(args.model), "backend": engine.backend_name, "policy": plan.policy.describe(),
                   "engine": event.to_json(), "report": report.to_json(),
                   "expectations": [c.to_json() for c in checks if c is not None],
                   "passed": not failed})
    else:
        print(f"{model.label}: {engine.describe()}")
        print(report.table(statuses=set(args.status) or None))
        for check in checks:
            if check is not None and check.passed:
                print(check.headline())
        for error in failed:
            print(cli_spelling(str(error)), file=sys.stderr)
    return 1 if failed else 0
