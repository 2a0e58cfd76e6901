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
value is needed either: ``--load-inputs`` only lends its arrays' shapes (NaN/Inf in them are
not looked at), and the flags of input *values* (``--val-range``, ``--seed``,
``--allow-nonfinite``) are usage errors rather than silently ignored (review1).

Exit 0 (a report, whatever it shows). With ``--expect PATTERN=PREC`` (repeatable) each
expectation runs :func:`pytest_trt.assert_precision`; exit 1 if any fails.

``--ledger`` prints the ledger instead (:mod:`pytest_trt.ledger`): per ONNX node the declared
precision and its rule, the realized precision and its evidence, the engine layer (TensorRT) or
node (ONNX Runtime CUDA) that ran it and its time, with roll-ups per scope and per precision;
``--timing`` picks the timing source (auto: TensorRT's own, else ONNX Runtime CUDA, else none,
saying why). Timing runs the engine, so then the inputs' values matter too (``--val-range`` for
integer inputs, or ``--load-inputs``); where the ledger has no timing source (``--timing off``,
the ``emulate`` backend) it runs nothing, and the value flags are usage errors again.
``--export-profile PATH`` writes trtexec's
``--exportProfile`` JSON, ``--export-trace PATH`` a Chrome/Perfetto trace (both need time; each
implies ``--ledger``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..errors import PrecisionError, UsageError
from ..inputs import parse_input_shape, resolve_profile
from ..layers.report import engine_layers
from ..ledger import chrome_trace, ledger_of, trtexec_profile
from ..ledger.ort_cuda import ort_cuda_reason
from ..ledger.render import TOP
from ..ledger.timing import backend_timing_reason, check_available
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

#: the flags of input values (not shapes): meaningful only where the engine runs inputs (``--ledger`` timing)
VALUE_FLAGS = (("val_range", "--val-range"), ("seed", "--seed"), ("allow_nonfinite", "--allow-nonfinite"))


def value_flags(args) -> list[str]:
    """The input-value flags given (``--seed`` counts when given at all: its default is None here)."""
    def given(value) -> bool:  # `--seed 0` is given (0 == False: compared by identity)
        return value is not None and value is not False and value != []

    return [flag for dest, flag in VALUE_FLAGS if given(getattr(args, dest, None))]


def _refuse_value_flags(given: list[str], why: str) -> None:
    if given:
        raise UsageError(f"{' and '.join(given)}: {why}, so {'they' if len(given) > 1 else 'it'} would be ignored; "
                         f"drop {'them' if len(given) > 1 else 'it'} (layers needs shapes only: --input-shapes, or "
                         f"--load-inputs for its arrays' shapes)")


def run(args) -> int:
    """The ``layers`` subcommand: print (or ``--json``) the layer report, check ``--expect`` rules."""
    expectations = [parse_rule(text, source="--expect") for text in args.expect]
    given = value_flags(args)
    ledger = bool(args.ledger or args.export_profile or args.export_trace)
    if not ledger:  # before any work
        _refuse_value_flags(given, "layers runs no input (it builds the engine and reads what it runs; --ledger "
                                   "times it on inputs)")
    if args.seed is None:
        args.seed = 0
    session = session_from_args(args)
    model = session.model(args.model)
    plan = session.plan(model, policy_from_args(args))
    engine, event = session.engine(plan, _build_config(args, session, model, shapes_only=not ledger))
    if ledger:
        return _ledger(args, session, model, engine, event, plan, given)
    report = engine_layers(engine)
    checks, failed = [], []
    for rule in expectations:
        try:
            checks.append(assert_precision(engine, rule.pattern, rule.precision,
                                           allow_unverifiable=args.allow_unverifiable))
        except PrecisionError as exc:
            failed.append(exc)
            checks.append(exc.findings)
    if args.json:
        emit_json({"model": str(args.model), "backend": engine.backend_name,
                   "backend_disclaimer": engine.backend.disclaimer, "policy": plan.policy.describe(),
                   "engine": event.to_json(), "report": report.to_json(),
                   "expectations": [c.to_json() for c in checks if c is not None],
                   "passed": not failed})
    else:
        print(f"{model.label}: {engine.describe()}")
        if engine.backend.disclaimer:
            print(f"(backend {engine.backend_name}: {engine.backend.disclaimer})")
        print(report.table(statuses=set(args.status) or None))
        for check in checks:
            if check is not None and check.passed:
                print(check.headline())
        for error in failed:
            print(cli_spelling(str(error)), file=sys.stderr)
    return 1 if failed else 0


def _build_config(args, session, model, *, shapes_only: bool):
    """The build config: the shapes of ``--load-inputs`` (only their shapes unless the ledger times on
    them), else of ``--input-shapes`` (or the model's own) where the backend builds for shapes."""
    if args.load_inputs:
        return build_config_from_args(args, feeds_from_args(args, model, shapes_only=shapes_only))
    if args.input_shapes or session.backend.shape_specific:
        # only the shapes matter (the optimization profile); values, e.g. an integer input's
        # range, do not: the same profile compare builds from its feeds, so the cache entry is shared
        shapes = parse_input_shape(flat(args.input_shapes)) if args.input_shapes else None
        return session.build_config(profiles=(resolve_profile(model, shapes=shapes),))
    return session.build_config()  # a backend not building for shapes (emulate) needs no inputs


def _ledger(args, session, model, engine, event, plan, given: list[str]) -> int:
    """``--ledger``: the ledger as text or JSON, and its exports."""
    check_available(args.timing, session.backend, "--timing")
    needed = args.timing != "off" and (backend_timing_reason(session.backend) is None or ort_cuda_reason() is None)
    if not needed:
        why = ("--timing off" if args.timing == "off" else
               f"no timing source here: {backend_timing_reason(session.backend)}")
        _refuse_value_flags(given, f"layers --ledger runs no input ({why})")
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
        emit_json({"model": str(args.model), "backend": engine.backend_name,
                   "backend_disclaimer": engine.backend.disclaimer, "policy": plan.policy.describe(),
                   "engine": event.to_json(), "ledger": data})
    else:
        print(f"{model.label}: {engine.describe()}")
        if engine.backend.disclaimer:
            print(f"(backend {engine.backend_name}: {engine.backend.disclaimer})")
        print(ledger.table(top=None if args.all_rows else TOP))
        for path, _, flag in exports:
            if path:
                print(f"{flag}: wrote {path}")
    return 0
