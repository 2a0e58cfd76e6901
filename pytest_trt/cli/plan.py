"""``pytest-trt plan MODEL``: which precision every node gets, and which rule decided."""

from __future__ import annotations

import argparse
from pathlib import Path

import onnx

from ..errors import UsageError
from ..model import load_model
from ..parser_check import require
from ..plan import PrecisionPlan
from ..realize import realize_strong
from ..weight_sets import save_with_weights
from .common import (
    add_model_and_policy,
    add_parser_check_flag,
    emit_json,
    parser_check_from_args,
    policy_from_args,
)


def add_parser(sub) -> None:
    p = sub.add_parser("plan", help="resolve a precision policy against a model and show every node's precision",
                       description="Resolve the precision policy against MODEL: node, op type, precision and the "
                       "rule that decided it. A pattern that matches no node is an error (exit 2).")
    add_model_and_policy(p)
    p.add_argument("--export-onnx", metavar="PATH", help="write the strongly typed realization (Casts at island "
                   "boundaries) to PATH; never over MODEL, and over another existing file only with --force")
    p.add_argument("--force", action="store_true", help="with --export-onnx: overwrite an existing PATH")
    add_parser_check_flag(p)
    p.set_defaults(run=run)


def _check_export_path(args: argparse.Namespace) -> None:
    target, source = Path(args.export_onnx), Path(args.model)
    if target.exists() and source.exists() and target.resolve().samefile(source.resolve()):
        raise UsageError(f"--export-onnx {args.export_onnx} is MODEL itself: the realization never replaces the "
                         f"source model; give another path")
    if target.exists() and not args.force:
        raise UsageError(f"--export-onnx {args.export_onnx} exists; pass --force to overwrite it, or give another "
                         f"path")


def run(args: argparse.Namespace) -> int:
    """Resolve, optionally export the strong realization and parser-check, then print the plan (or ``--json``)."""
    if args.export_onnx:
        _check_export_path(args)  # before any work, so a refused path costs nothing
    if args.parser_check != "off":  # a usage error before any work
        require(args.parser_check, "--parser-check")
    model = load_model(args.model)
    plan = policy_from_args(args).resolve(model)
    if args.export_onnx:
        try:
            if model.has_external_weights:  # its weights converted and copied into <export>.data beside it
                save_with_weights(realize_strong(plan), model, Path(args.export_onnx))
            else:
                onnx.save(realize_strong(plan), args.export_onnx)
        except OSError as exc:
            raise UsageError(f"--export-onnx {args.export_onnx}: cannot write it: {exc.strerror or exc}; "
                             f"give a path in an existing, writable directory") from exc
    parsed = parser_check_from_args(args, plan)
    status = 0 if parsed is None or parsed.passed else 1
    if args.json:
        data = plan.to_json()
        if parsed is not None:
            data["parser_check"] = parsed.to_json()
        emit_json(data)
        return status
    _print_plan(plan)
    if args.export_onnx:
        print(f"strongly typed model written to {args.export_onnx}"
              + (f" (weights in {Path(args.export_onnx).name}.data beside it)" if model.has_external_weights else ""))
    if parsed is not None:
        print(parsed.message())
    return status


def _print_plan(plan: PrecisionPlan) -> None:
    """The plan as a table: node, op, precision, rule; then the counts."""
    rows = [(d.name, d.op_type, d.precision or "fixed", d.rule) for d in plan.nodes.values()]
    widths = [max(len(r[i]) for r in rows + [("node", "op", "precision", "rule")]) for i in range(3)]
    print(f"{'node':<{widths[0]}}  {'op':<{widths[1]}}  {'precision':<{widths[2]}}  rule")
    for name, op, prec, rule in rows:
        print(f"{name:<{widths[0]}}  {op:<{widths[1]}}  {prec:<{widths[2]}}  {rule}")
    counts = plan.counts()
    print("\n" + ", ".join(f"{k}: {v}" for k, v in counts.items() if v) + f"  ({len(rows)} nodes; policy {plan.policy.describe()})")
