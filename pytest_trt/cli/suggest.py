"""``pytest-trt suggest MODEL``: search the fewest FP32 islands with which the model passes.

Every candidate is a real build and run on the chosen backend (through the artifact cache),
guided by layerwise errors; see :mod:`pytest_trt.suggest`. Prints the patterns ready to paste
(``--trt-keep-fp32``, ``--keep-fp32``, the marker). An answer must pass on the inputs and on
``--recheck-seeds`` more seeds (generated like the inputs; with ``--load-inputs``, the loaded
values permuted by seed) with no NaN/Inf inside where the FP32 reference is finite. Exit 0
when an answer was found (including "nothing needs to change"); 1 when none was, when the
outputs pass only with NaN/Inf inside (``passes_output_only``), or when the answer keeps more
than half of the compute nodes FP32 (``fp32_in_effect``); 2 on usage or input errors. An answer
says what each island costs in time (``--timing``: TensorRT's own timing or ONNX Runtime CUDA,
the plan with and without it, same inputs and runs), or why that cannot be measured here.
"""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import UsageError
from ..glue.case import Feeds
from ..ledger.timing import check_available
from ..suggest import MIN_RECHECK_SEEDS, suggest_fp32_islands
from .common import (
    build_config_from_args,
    criterion_from_args,
    emit_json,
    feeds_from_args,
    policy_from_args,
    session_from_args,
)
from .spelling import cli_spelling


def run(args: Any) -> int:
    """Search the FP32 islands and print them; exit 0 when an answer was found, 1 when not."""
    if args.recheck_seeds < MIN_RECHECK_SEEDS:
        raise UsageError(f"--recheck-seeds must be at least {MIN_RECHECK_SEEDS} (every answer is re-checked on at "
                         f"least {MIN_RECHECK_SEEDS} more seeds), got {args.recheck_seeds}")
    session = session_from_args(args)
    check_available(args.timing, session.backend, "--timing")
    model = session.model(args.model)
    policy = policy_from_args(args)
    criterion = criterion_from_args(args, session.plan(model, policy))  # errors here, before any build
    feeds = feeds_from_args(args, model)
    config = build_config_from_args(args, feeds)
    seeds = list(range(args.seed + 1, args.seed + 1 + args.recheck_seeds))
    make = None
    if not args.load_inputs:  # generated feeds: the re-check seeds are generated the same way
        def make(seed):
            return feeds_from_args(argparse.Namespace(**{**vars(args), "seed": seed}), model)
    feeds_seed = None if args.load_inputs else args.seed
    if feeds_seed is not None:
        feeds = Feeds(feeds)
        feeds.seed = feeds_seed
    found = suggest_fp32_islands(model, policy, feeds, backend=session.backend, cache=session.cache,
                                 criterion=criterion, config=config, max_builds=args.max_builds,
                                 threshold=args.threshold, recheck_seeds=seeds, make_feeds=make, timing=args.timing,
                                 timing_iterations=args.iterations, timing_warmup=args.warmup)
    if args.json:
        emit_json({"model": str(args.model), "seed": args.seed, **found.to_json()})
    else:
        # the CLI, pytest and marker forms of the patterns are printed on purpose: only the budget's name changes
        print(cli_spelling(found.message(), only={"max_builds"}))
    return 0 if found.passed else 1
