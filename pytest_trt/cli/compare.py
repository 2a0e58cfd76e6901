"""``pytest-trt compare MODEL``: build (or load) the engine, run it and the FP32 baseline, compare."""

from __future__ import annotations

from typing import Any

from ..backends.tensorrt.parser_check import require
from ..compare import CompareResult, compare_outputs
from ..compare.figures import DETAILS_MAX_ELEMENTS
from ..core.jsonsafe import json_number
from ..errors import BackendUnavailable
from ..locate.ranges import range_message, range_overflows
from ..reference.baseline import reference_label, reference_model
from ..report.rows import binding_text, tolerance_bound
from .common import (
    build_config_from_args,
    criterion_from_args,
    emit_json,
    feeds_from_args,
    parser_check_from_args,
    policy_from_args,
    session_from_args,
)
from .spelling import cli_spelling


def prepare(args: Any) -> tuple[Any, Any, Any, Any, Any, Any]:
    """Session, model, plan, feeds and engine for the compare-style subcommands."""
    if getattr(args, "parser_check", "off") != "off":  # a usage error before any work
        require(args.parser_check, "--parser-check")
    session = session_from_args(args)
    model = session.model(args.model)
    plan = session.plan(model, policy_from_args(args))
    feeds = feeds_from_args(args, model)
    config = build_config_from_args(args, feeds)
    reason = session.backend.supports(plan, config)  # e.g. weak typing refused for as-is models
    if reason:
        raise BackendUnavailable(
            f"{session.backend.name} cannot build {model.label} [{plan.policy.describe()}]: {reason}")
    engine, event = session.engine(plan, config)
    return session, model, plan, feeds, engine, event


def compare_figures(plan: Any, actual: dict, expected: dict,
                    args: Any) -> tuple[CompareResult, dict[str, tuple[float | None, str | None]]]:
    """Compare under the criterion of the flags (:func:`~pytest_trt.cli.common.criterion_from_args`:
    ``--atol``/``--rtol`` > ``--criterion`` > the policy's precision defaults), with the figures of
    passing outputs too (max abs / rel error, cosine, SNR) up to the plugin's size limit.

    Returns ``(result, ratios)`` (``result.criterion`` is the criterion); ``ratios`` maps each output
    to its x-tolerance factor and the bound that sets it (the terminal summary's ``x tol`` and
    ``bound``: :func:`~pytest_trt.report.rows.tolerance_bound`), ``(None, None)`` where not computed.
    """
    details = sum(int(getattr(v, "size", 0)) for v in actual.values()) <= DETAILS_MAX_ELEMENTS
    result = compare_outputs(actual, expected, criterion=criterion_from_args(args, plan), details=details)
    ratios = {name: tolerance_bound(oc.to_json()) for name, oc in result.outputs.items()}
    return result, ratios


def figures_json(result: CompareResult, ratios: dict[str, tuple[float | None, str | None]]) -> dict:
    """``result.to_json()`` with each output's ``tolerance_ratio`` and ``binding``."""
    data = result.to_json()
    for name, out in data["outputs"].items():
        ratio, binding = ratios.get(name, (None, None))
        out["tolerance_ratio"] = json_number(ratio)
        out["binding"] = binding
    return data


def ratio_line(ratios: dict[str, tuple[float | None, str | None]]) -> str:
    """The terminal summary's ``x tol`` line: each output's largest bound, and which it is."""
    def fmt(r: float | None, binding: str | None) -> str:
        if r is None:
            return "n/a (figures not computed: output over the size limit)"
        return f"{r:.3g} ({binding_text(binding)})"

    return ("x tol (the largest of: the worst element's error / max(atol, rtol*|expected|), "
            "(1 - cos) / (1 - min_cosine) where a cosine floor applies, the SNR floor's; > 1 fails): "
            + ", ".join(f"{name!r} {fmt(r, b)}" for name, (r, b) in ratios.items()))


def run(args: Any) -> int:
    """Build or load, run, compare with the baseline, print; exit 0 within tolerance, 1 outside."""
    session, model, plan, feeds, engine, event = prepare(args)
    expected = session.baseline(reference_model(model, getattr(args, "baseline", "fp32")), feeds)
    actual = engine.run(feeds)
    result, ratios = compare_figures(plan, actual, expected, args)
    overflows = []
    if not result.passed and plan.low_precision:
        overflows = range_overflows(plan, feeds)  # why it failed, when it is the range and not rounding
    # the parser check adds a verdict beside the accuracy one; it never replaces it
    parsed = parser_check_from_args(args, plan, engine.config, session.cache)
    passed = result.passed and (parsed is None or parsed.passed)
    if args.json:
        extra = {"range_overflows": [o.to_json() for o in overflows]} if overflows else {}
        emit_json({"model": str(args.model), "backend": engine.backend_name, "policy": plan.policy.describe(),
                   "engine": event.to_json(), "seed": args.seed, "baseline": args.baseline,
                   **figures_json(result, ratios), **extra, "notes": [cli_spelling(n) for n in plan.notes],
                   "passed": passed, "accuracy_passed": result.passed,
                   "parser_check": parsed.to_json() if parsed is not None else None})
    else:
        print(f"{model.label}: {engine.describe()}")
        if session.backend.disclaimer:
            print(f"(backend {engine.backend_name}: {session.backend.disclaimer})")
        print(f"reference: {reference_label(model, args.baseline)}")
        for note in plan.notes:  # e.g. a mixed-precision model whose FP32 island --fp16 lowers (try --as-is)
            print(f"note: {cli_spelling(note)}")
        print(result.message())
        print(ratio_line(ratios))
        if overflows:
            print(range_message(overflows))
        if parsed is not None:
            print(parsed.message())
    return 0 if passed else 1
