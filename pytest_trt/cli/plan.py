"""``pytest-trt plan MODEL``: which precision every node gets, and which rule decided."""

from __future__ import annotations

import argparse
from pathlib import Path

import onnx

from ..backends.tensorrt.parser_check import require
from ..errors import UsageError
from ..model.load import load_model
from ..plan import PrecisionPlan
from ..realize import realize_strong
from ..realize.weight_sets import save_with_weights
from .common import (
    emit_json,
    parser_check_from_args,
    policy_from_args,
)
from .spelling import cli_spelling


def _check_export_path(args: argparse.Namespace) -> None:
    target, source = Path(args.export_onnx), Path(args.model)
    if target.exists() and source.exists() and target.resolve().samefile(source.resolve()):
        raise UsageError(f"--export-onnx {args.export_onnx} is MODEL itself: the realization never replaces the "
                         f"source model; give another path")
    if target.is_dir():  # refused with or without --force: the export is one file (and its .data beside it)
        raise UsageError(f"--export-onnx {args.export_onnx} is a directory: give a file path, e.g. "
                         f"--export-onnx {target / (Path(args.model).stem + '_realized.onnx')}")
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
    """The plan as a table: node (canonical scoped name), op, precision, module path, module class, rule;
    then the counts and where the names came from."""
    names = plan.names
    rows = []
    for d in plan.nodes.values():
        entry = names.get(d.name)
        module = "-" if entry is None or entry.module is None else (entry.module or "(root)")
        cls = (entry.short_class if entry is not None else None) or "-"
        rows.append((names.canonical(d.name), d.op_type, d.precision or "fixed", module, cls, d.rule))
    header = ("node", "op", "precision", "module", "class", "rule")
    widths = [max(len(r[i]) for r in [*rows, header]) for i in range(5)]
    for row in [header, *rows]:
        print("  ".join(f"{v:<{w}}" for v, w in zip(row, widths, strict=False)) + f"  {row[5]}")
    counts = plan.counts()
    print("\n" + ", ".join(f"{k}: {v}" for k, v in counts.items() if v) + f"  ({len(rows)} nodes; policy {plan.policy.describe()})")
    for note in plan.notes:  # e.g. a mixed-precision model whose FP32 island --fp16 lowers: --as-is tests it as written
        print(f"note: {cli_spelling(note)}")
    print(names_note(names))


def names_note(names) -> str:
    """``node names: 182 scoped by name_scopes metadata, 4 without a module; classes known for 182``."""
    words = {"name_scopes": "scoped by the exporter's name_scopes metadata (dynamo)",
             "torchscript": "scoped by their own names (/module/path/Op, TorchScript)",
             "function": "inlined from ONNX local functions (scope of the call)",
             "none": "without a module"}
    parts = [f"{n} {words.get(s, s)}" for s, n in names.sources.items()]
    known = sum(1 for e in names.values() if e.module_classes)
    classes = (f"module classes known for {known} (patterns 'class:GLOB')" if known else
               "no module classes ('class:' patterns need a dynamo export or ONNX local functions)")
    return f"node names: {', '.join(parts)}; {classes}"
