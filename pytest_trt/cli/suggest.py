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

from ..backends.base import TIMING_CHOICES
from ..errors import UsageError
from ..glue.case import Feeds
from ..ledger.timing import check_available
from ..suggest import MIN_RECHECK_SEEDS, suggest_fp32_islands
from .common import (
    add_engine_flags,
    add_input_flags,
    add_model_and_policy,
    add_tolerance_flags,
    build_config_from_args,
    cli_spelling,
    emit_json,
    feeds_from_args,
    number,
    policy_from_args,
    session_from_args,
)


def add_parser(sub: Any) -> None:
    """The ``suggest`` subcommand and its flags."""
    p = sub.add_parser("suggest", help="search the fewest FP32 islands (keep_fp32 patterns) that make MODEL pass",
                       description="Starting from the policy (e.g. --fp16), search the shortest list of keep-fp32 "
                       "patterns (name scopes such as '*/LayerNorm/*', op types such as 'op:Softmax') with which "
                       "the engine matches the FP32 ONNX Runtime baseline within tolerance, on the inputs and on "
                       "--recheck-seeds more seeds, with no NaN/Inf inside where FP32 is finite. Every candidate is "
                       "built and run on the backend. Exit 0 when an answer was found (possibly empty: nothing "
                       "to change); 1 when none was, when the outputs pass only with NaN/Inf inside, or when the "
                       "answer keeps more than half of the compute nodes FP32 ('FP32 in effect'); 2 on usage or "
                       "input errors.")
    add_model_and_policy(p)
    add_engine_flags(p)
    add_input_flags(p)
    add_tolerance_flags(p, no_check=False)  # a search against infinite tolerances would find nothing to change
    p.add_argument("--max-builds", type=number(minimum=1, integer=True), default=None, metavar="N",
                   help="budget of builds, the first one included, >= 1 (default: 30)")
    p.add_argument("--threshold", type=number(minimum=0, exclusive=True), default=None,
                   help="relative-error threshold of the layerwise comparisons, > 0 (default: per precision)")
    p.add_argument("--recheck-seeds", type=number(minimum=1, integer=True), default=3, metavar="N",
                   help="re-check every answer on N more input seeds, --seed + 1 ... + N (at least 3; default: 3); "
                        "generated like the inputs, or with --load-inputs the loaded values permuted by seed")
    p.add_argument("--timing", choices=TIMING_CHOICES, default="auto",
                   help="how each proposed FP32 island's cost is measured (the plan with and without it, same inputs "
                        "and runs): auto = TensorRT's own timing, else ONNX Runtime CUDA (not TensorRT), else not "
                        "measured (the message says why); engine / onnxruntime-cuda = that source or an error; "
                        "off (default: auto)")
    p.add_argument("--iterations", type=number(minimum=1, integer=True), default=50, metavar="N",
                   help="timed runs per plan for the island costs, >= 1 (default: 50)")
    p.set_defaults(run=run)


def run(args: Any) -> int:
    """Search the FP32 islands and print them; exit 0 when an answer was found, 1 when not."""
    if args.recheck_seeds < MIN_RECHECK_SEEDS:
        raise UsageError(f"--recheck-seeds must be at least {MIN_RECHECK_SEEDS} (every answer is re-checked on at "
                         f"least {MIN_RECHECK_SEEDS} more seeds), got {args.recheck_seeds}")
    session = session_from_args(args)
    check_available(args.timing, session.backend, "--timing")
    model = session.model(args.model)
    policy = policy_from_args(args)
    session.plan(model, policy)  # pattern and model errors surface here, before any build
    feeds = feeds_from_args(args, model)
    config = build_config_from_args(args, model, feeds)
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
                                 rtol=args.rtol, atol=args.atol, config=config, max_builds=args.max_builds,
                                 threshold=args.threshold, recheck_seeds=seeds, make_feeds=make, timing=args.timing,
                                 timing_iterations=args.iterations)
    if args.json:
        emit_json({"model": str(args.model), "seed": args.seed, **found.to_json()})
    else:
        # the CLI, pytest and marker forms of the patterns are printed on purpose: only the budget's name changes
        print(cli_spelling(found.message(), only={"max_builds"}))
    return 0 if found.passed else 1
