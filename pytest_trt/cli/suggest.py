"""``pytest-trt suggest MODEL``: search the fewest FP32 islands with which the model passes.

Every candidate is a real build and run on the chosen backend (through the artifact cache),
guided by layerwise errors; see :mod:`pytest_trt.suggest`. Prints the patterns ready to paste
(``--trt-keep-fp32``, ``--keep-fp32``, the marker). Exit 0 when a passing set was found
(including "nothing needs to change"), 1 when none was, 2 on usage or input errors.
"""

from __future__ import annotations

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


def add_parser(sub) -> None:
    p = sub.add_parser("suggest", help="search the fewest FP32 islands (keep_fp32 patterns) that make MODEL pass",
                       description="Starting from the policy (e.g. --fp16), search the shortest list of keep-fp32 "
                       "patterns (name scopes such as '*/LayerNorm/*', op types such as 'op:Softmax') with which "
                       "the engine matches the FP32 ONNX Runtime baseline within tolerance. Every candidate is "
                       "built and run on the backend. Exit 0 when a passing set was found (possibly empty: nothing "
                       "to change), 1 when none was, 2 on usage or input errors.")
    add_model_and_policy(p)
    add_engine_flags(p)
    add_input_flags(p)
    add_tolerance_flags(p, no_check=False)  # a search against infinite tolerances would find nothing to change
    p.add_argument("--max-builds", type=number(minimum=1, integer=True), default=None, metavar="N",
                   help="budget of builds, the first one included, >= 1 (default: 30)")
    p.add_argument("--threshold", type=number(minimum=0, exclusive=True), default=None,
                   help="relative-error threshold of the layerwise comparisons, > 0 (default: per precision)")
    p.set_defaults(run=run)


def run(args) -> int:
    from ..suggest import suggest_fp32_islands

    session = session_from_args(args)
    model = session.model(args.model)
    policy = policy_from_args(args)
    session.plan(model, policy)  # pattern and model errors surface here, before any build
    feeds = feeds_from_args(args, model)
    config = build_config_from_args(args, model, feeds)
    found = suggest_fp32_islands(model, policy, feeds, backend=session.backend, cache=session.cache,
                                 rtol=args.rtol, atol=args.atol, config=config, max_builds=args.max_builds,
                                 threshold=args.threshold)
    if args.json:
        emit_json({"model": str(args.model), "seed": args.seed, **found.to_json()})
    else:
        # the CLI, pytest and marker forms of the patterns are printed on purpose: only the budget's name changes
        print(cli_spelling(found.message(), only={"max_builds"}))
    return 0 if found.passed else 1
