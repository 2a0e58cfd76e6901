"""``pytest-trt layers MODEL``: what the engine runs, per ONNX node: planned vs observed precision.

Builds (or loads from the cache) the engine for MODEL under the policy and prints its
:class:`~pytest_trt.layers.report.LayerReport`: one row per node with planned and observed
precision, status (ok / mismatch / unverifiable / fixed), how it is known (evidence:
observed / inferred from a fused kernel's boundary / unverifiable / emulated) and the
carrying layer (``[myelin]`` for Myelin regions). ``--json`` prints the report as JSON,
with ``evidence`` counts for the report and for each ``--expect`` check. On the
``emulate`` backend the report is derived from the plan (emulated = planned) and says so.

Input shapes (``--input-shapes``) are needed for TensorRT's optimization profile when
the model has symbolic dims; the ``emulate`` backend needs none.

Exit 0 (a report, whatever it shows). With ``--expect PATTERN=PREC`` (repeatable) each
expectation runs :func:`pytest_trt.assert_precision`; exit 1 if any fails.

``--ledger`` prints the ledger instead (:mod:`pytest_trt.ledger`): per ONNX node the declared
precision and its rule, the realized precision and its evidence, the engine layer (TensorRT) or
node (ONNX Runtime CUDA) that ran it and its time, with roll-ups per scope and per precision;
``--timing`` picks the timing source (auto: TensorRT's own, else ONNX Runtime CUDA, else none,
saying why). ``--export-profile PATH`` writes trtexec's ``--exportProfile`` JSON, ``--export-trace
PATH`` a Chrome/Perfetto trace (both need time; each implies ``--ledger``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..errors import PrecisionError, UsageError
from ..ledger import chrome_trace, ledger_of, trtexec_profile
from ..ledger.ort_cuda import ort_cuda_reason
from ..ledger.render import TOP
from ..ledger.timing import TIMING_CHOICES, backend_timing_reason, check_available
from ..plan.policy import parse_rule
from ..verify.precision import assert_precision
from .common import (
    add_engine_flags,
    add_input_flags,
    add_model_and_policy,
    build_config_from_args,
    cli_spelling,
    emit_json,
    feeds_from_args,
    number,
    policy_from_args,
    session_from_args,
)


def add_parser(sub) -> None:
    p = sub.add_parser("layers", help="planned vs observed precision per node (the engine's layer report)",
                       description="Build (or load from the cache) the engine for MODEL under the policy and print "
                       "what it runs: per ONNX node the planned and the observed precision, the status "
                       "(ok/mismatch/unverifiable/fixed) and the layer or Myelin region that carries it. Exit 0; "
                       "with --expect, 1 when an expectation fails; 2 on usage or input errors.")
    add_model_and_policy(p)
    add_engine_flags(p)
    add_input_flags(p)
    p.add_argument("--status", action="append", default=[], metavar="STATUS",
                   choices=("ok", "mismatch", "unverifiable", "fixed"),
                   help="show only nodes with this status (repeatable; table only)")
    p.add_argument("--expect", action="append", default=[], metavar="PATTERN=PREC",
                   help="assert that the nodes matching PATTERN are shown running in PREC (repeatable); "
                        "exit 1 if one fails")
    p.add_argument("--allow-unverifiable", action="store_true",
                   help="with --expect: list unverifiable nodes as warnings instead of failing")
    add_ledger_flags(p)
    p.set_defaults(run=run)


def add_ledger_flags(p) -> None:
    """``--ledger`` and the flags of its timing and exports."""
    p.add_argument("--ledger", action="store_true",
                   help="print the ledger: per ONNX node declared precision (and rule), realized precision (and "
                        "evidence), engine layer or node, time and share; roll-ups per scope and precision")
    p.add_argument("--timing", choices=TIMING_CHOICES, default="auto",
                   help="with --ledger: auto = the engine's own per-layer timing (TensorRT), else ONNX Runtime CUDA "
                        "(the strongly typed realization, not TensorRT), else none (the time column says why); "
                        "engine / onnxruntime-cuda = that source or an error; off = no time (default: auto)")
    p.add_argument("--iterations", type=number(minimum=1, integer=True), default=50, metavar="N",
                   help="with --ledger: timed runs, >= 1 (default: 50)")
    p.add_argument("--warmup", type=number(minimum=0, integer=True), default=10, metavar="N",
                   help="with --ledger: untimed runs first, >= 0 (default: 10)")
    p.add_argument("--all", action="store_true", dest="all_rows",
                   help=f"with --ledger: every row (default: the rows of the top {TOP} units by time, or of the "
                        f"nodes whose precision is in question when there is no time)")
    p.add_argument("--export-profile", metavar="PATH", default=None,
                   help="write the ledger's times as trtexec --exportProfile JSON (implies --ledger; needs time)")
    p.add_argument("--export-trace", metavar="PATH", default=None,
                   help="write the ledger as a Chrome/Perfetto trace, one run by median times (implies --ledger; "
                        "needs time)")


def run(args) -> int:
    """The ``layers`` subcommand: print (or ``--json``) the layer report, check ``--expect`` rules."""
    expectations = [parse_rule(text, source="--expect") for text in args.expect]
    session = session_from_args(args)
    model = session.model(args.model)
    plan = session.plan(model, policy_from_args(args))
    if session.backend.name == "emulate" and not (args.input_shapes or args.load_inputs):
        config = session.build_config()  # emulation ignores shapes and profiles: no inputs needed
    else:
        config = build_config_from_args(args, model, feeds_from_args(args, model))
    engine, event = session.engine(plan, config)
    if args.ledger or args.export_profile or args.export_trace:
        return _ledger(args, session, model, engine, event, plan)
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


def _ledger(args, session, model, engine, event, plan) -> int:
    """``--ledger``: the ledger as text or JSON, and its exports."""
    check_available(args.timing, session.backend, "--timing")
    needed = args.timing != "off" and (backend_timing_reason(session.backend) is None or ort_cuda_reason() is None)
    feeds = feeds_from_args(args, model) if needed else {}
    ledger = ledger_of(engine, feeds, timing=args.timing, warmup=args.warmup, iterations=args.iterations,
                       source="--timing")
    data = ledger.to_json()
    exports = [(args.export_profile, trtexec_profile, "--export-profile"),
               (args.export_trace, chrome_trace, "--export-trace")]
    for path, export, flag in exports:
        if path:
            if not ledger.timed:
                raise UsageError(f"{flag}: the ledger of {model.label} has no time ({ledger.time_reason})")
            Path(path).write_text(json.dumps(export(data), indent=1) + "\n")
    if args.json:
        emit_json({"model": str(args.model), "backend": engine.backend_name, "policy": plan.policy.describe(),
                   "engine": event.to_json(), "ledger": data})
    else:
        print(f"{model.label}: {engine.describe()}")
        print(ledger.table(top=None if args.all_rows else TOP))
        for path, _, flag in exports:
            if path:
                print(f"{flag}: wrote {path}")
    return 0
