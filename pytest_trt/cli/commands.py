"""Every subcommand's parser: its flags, help and exit statuses; the run functions live in
the subcommand modules and are imported when the subcommand runs.

This is how the console script stays light: ``pytest-trt --help``, ``pytest-trt compare
--help`` and usage errors need every flag of every subcommand (argparse builds all the
subparsers), but none of the pipeline. The subcommand modules (:mod:`pytest_trt.cli.compare`,
...) import numpy, onnx and the session at their top; they are bound here with
:func:`~pytest_trt.core.lazy.lazy_import` and reached only through :func:`_later` when argparse
has picked a subcommand.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..core.choices import MAX_RECHECK_SEEDS, MIN_RECHECK_SEEDS
from ..core.lazy import lazy_import
from .args import (
    add_engine_flags,
    add_input_flags,
    add_ledger_flags,
    add_model_and_policy,
    add_parser_check_flag,
    add_timing_flags,
    add_tolerance_flags,
    number,
)

if TYPE_CHECKING:
    from . import cache, compare, layers, locate, plan, remote_cache, runs, suggest
else:
    plan = lazy_import("pytest_trt.cli.plan")
    compare = lazy_import("pytest_trt.cli.compare")
    layers = lazy_import("pytest_trt.cli.layers")
    locate = lazy_import("pytest_trt.cli.locate")
    suggest = lazy_import("pytest_trt.cli.suggest")
    remote_cache = lazy_import("pytest_trt.cli.remote_cache")
    cache = lazy_import("pytest_trt.cli.cache")
    runs = lazy_import("pytest_trt.cli.runs")

__all__ = ["SUBCOMMANDS", "add_subcommands"]

#: The subcommand modules, in ``--help`` order (module remote_cache is the subcommand remote-cache).
SUBCOMMANDS = ("plan", "compare", "layers", "locate", "suggest", "cache", "remote_cache", "runs")


def _later(module: Any, name: str) -> Callable[[Any], int]:
    """``args.run``: calls ``module.name(args)``, importing the module only then."""

    def run(args: Any) -> int:
        return getattr(module, name)(args)

    run.__qualname__ = run.__name__ = f"{module.__name__}.{name}"
    return run


def add_plan(sub: Any) -> None:
    """The ``plan`` subcommand and its flags."""
    p = sub.add_parser("plan", help="resolve a precision policy against a model and show every node's precision",
                       description="Resolve the precision policy against MODEL: node, op type, precision and the "
                       "rule that decided it. A pattern that matches no node is an error (exit 2).")
    add_model_and_policy(p)
    p.add_argument("--export-onnx", metavar="PATH", help="write the strongly typed realization (Casts at island "
                   "boundaries) to PATH; never over MODEL, and over another existing file only with --force")
    p.add_argument("--force", action="store_true", help="with --export-onnx: overwrite an existing PATH")
    add_parser_check_flag(p)
    p.set_defaults(run=_later(plan, "run"))


def add_compare(sub: Any) -> None:
    """The ``compare`` subcommand and its flags."""
    p = sub.add_parser("compare", help="compare the engine with the FP32 ONNX Runtime baseline",
                       description="Build (or load from the cache) the engine for MODEL under the policy, run it "
                       "and the FP32 ONNX Runtime baseline on the same inputs, and compare. Exit 0 within "
                       "tolerance, 1 outside, 2 on usage or input errors.")
    add_model_and_policy(p)
    add_engine_flags(p)
    add_input_flags(p)
    add_tolerance_flags(p)
    p.add_argument("--baseline", choices=("fp32", "as-written"), default="fp32",
                   help="reference: fp32 = ONNX Runtime on the model upcast to FP32 (Q/DQ removed; for an FP32 model, "
                   "the model itself), as-written = ONNX Runtime on the model as written (fake-quant for Q/DQ) "
                   "(default: fp32)")
    add_parser_check_flag(p)
    p.set_defaults(run=_later(compare, "run"))


def add_layers(sub: Any) -> None:
    p = sub.add_parser("layers", help="planned vs observed precision per node (the engine's layer report)",
                       description="Build (or load from the cache) the engine for MODEL under the policy and print "
                       "what it runs: per ONNX node the planned and the observed precision, the status "
                       "(ok/mismatch/unverifiable/fixed) and the layer or Myelin region that carries it. No input "
                       "is run: only shapes matter (--input-shapes for symbolic dims on TensorRT; emulate needs "
                       "none; --load-inputs lends its arrays' shapes), so --val-range, --seed and --allow-nonfinite "
                       "are usage errors, except with --ledger where timing runs the engine on inputs. Exit 0; with "
                       "--expect, 1 when an expectation fails; 2 on usage or input errors.")
    add_model_and_policy(p)
    add_engine_flags(p)
    add_input_flags(p)
    p.set_defaults(seed=None)  # "not given" (layers refuses value flags it would ignore); 0 when inputs are made
    p.add_argument("--status", action="append", default=[], metavar="STATUS",
                   choices=("ok", "mismatch", "unverifiable", "fixed"),
                   help="show only nodes with this status (repeatable; table only)")
    p.add_argument("--expect", action="append", default=[], metavar="PATTERN=PREC",
                   help="assert that the nodes matching PATTERN are shown running in PREC (repeatable); "
                        "exit 1 if one fails")
    p.add_argument("--allow-unverifiable", action="store_true",
                   help="with --expect: list unverifiable nodes as warnings instead of failing")
    add_ledger_flags(p)
    p.set_defaults(run=_later(layers, "run"))


def add_locate(sub: Any) -> None:
    """The ``locate`` subcommand and its flags."""
    p = sub.add_parser("locate", help="name the first divergent node (layerwise comparison with FP32)",
                       description="Build (or load) the engine for MODEL under the policy, compare its outputs with "
                       "the FP32 ONNX Runtime baseline, and compare every intermediate float tensor to name the first "
                       "node whose error jumps (NaN/Inf introduced, or relative error past --threshold with a jump "
                       "of more than --jump x over its inputs). Exit 0 when the outputs are within tolerance, 1 "
                       "outside, 2 on usage or input errors.")
    add_model_and_policy(p)
    add_engine_flags(p)
    add_input_flags(p)
    add_tolerance_flags(p)
    p.add_argument("--threshold", type=number(minimum=0, exclusive=True), default=None,
                   help="relative error (max abs err / max |ref|) past which a node can diverge, > 0 "
                   "(default: 1e-2 fp16, 5e-2 bf16, 1e-4 fp32)")
    p.add_argument("--jump", type=number(minimum=1), default=10.0,
                   help="how many times its inputs' worst error a divergent node's error must be, >= 1 (default: 10)")
    p.add_argument("--top", type=number(minimum=1, integer=True), default=5,
                   help="top contributors to list, >= 1 (default: 5)")
    p.set_defaults(run=_later(locate, "run"))


def add_suggest(sub: Any) -> None:
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
    p.add_argument("--recheck-seeds", type=number(minimum=1, integer=True, maximum=MAX_RECHECK_SEEDS), default=3,
                   metavar="N",
                   help=f"re-check every answer on N more input seeds, --seed + 1 ... + N ({MIN_RECHECK_SEEDS} to "
                        f"{MAX_RECHECK_SEEDS}; default: 3); "
                        "generated like the inputs, or with --load-inputs the loaded values permuted by seed")
    add_timing_flags(p, what="the cost of each proposed FP32 island (the plan with and without it, same inputs "
                             "and runs)")
    p.set_defaults(run=_later(suggest, "run"))


def add_cache(sub: Any) -> None:
    """The ``cache`` subcommand: ``list`` and ``prune`` (issue 29)."""
    p = sub.add_parser("cache", help="list or prune the artifact cache",
                       description="The artifact cache (engines, emulation graphs, FP32 baselines, a big model's "
                       "weight sets): list its entries by model and kind, or prune them by age or total size. "
                       "Entries sharing a weight set are pruned together.")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True, parser_class=type(p))
    for name, text in (("list", "entries by model and kind, with sizes and last use"),
                       ("prune", "remove entries by age (--max-age) and/or total size (--max-size)")):
        a = actions.add_parser(name, help=text, description=text)
        a.add_argument("--cache-dir", default=None, metavar="DIR",
                       help="the cache (default: $PYTEST_TRT_CACHE_DIR, else <project root>/.trt-cache; the "
                       "console script ignores the ini: where it sets trt_cache_dir, pass --cache-dir, as a note on "
                       "stderr says)")
        a.add_argument("--json", action="store_true", help="machine-readable output on stdout")
        if name == "prune":
            a.add_argument("--max-age", metavar="AGE", default=None,
                           help="remove what was last used longer ago than AGE, with a unit: 30m, 12h, 7d, 2w "
                                "(a bare number is refused)")
            a.add_argument("--max-size", metavar="SIZE", default=None,
                           help="then remove least recently used entries until at most SIZE remain: 500M, 20G")
            a.add_argument("--dry-run", action="store_true", help="say what would be removed, remove nothing")
            a.set_defaults(run=_later(cache, "run_prune"))
        else:
            a.set_defaults(run=_later(cache, "run_list"))


def add_remote_cache(sub: Any) -> None:
    p = sub.add_parser("remote-cache", help="manage the signing keys of a remote engine cache",
                       description="Keys of the remote engine cache (--trt-remote-cache). Builders hold the "
                       "private key ($PYTEST_TRT_REMOTE_CACHE_KEY); every runner trusts the public key "
                       "(--trt-remote-cache-trust).")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True, parser_class=type(p))
    keygen = actions.add_parser("keygen", help="make an Ed25519 key pair",
                                description="Write NAME.key (private, mode 0600: give it to builders only) "
                                "and NAME.pub (the 'ed25519:...' public key: give it to every runner) into DIR. "
                                "Never overwrites a key.")
    keygen.add_argument("--out", default=".", metavar="DIR", help="directory of the key files (default: .)")
    name = keygen.add_argument("--name", default="pytest-trt-cache",
                               help="file name stem: letters, digits, '_', '.', '-' (default: pytest-trt-cache)")
    name.empty_refused_by_command = True  # generate_keypair's own message says what an empty stem would make
    keygen.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    keygen.set_defaults(run=_later(remote_cache, "run_keygen"))


def _storage_flags(p: Any) -> None:
    """Where the runs are, and the keys that verify runs stored at a URL."""
    p.add_argument("--storage", metavar="URI", default=None,
                   help="the saved runs: a directory, or a URL the remote cache takes (file:///dir, https://host/path, "
                   "s3://...; runs there are signed, verified with --remote-cache-trust) (default: <rootdir>/.trt-runs; "
                   "the console script ignores the ini: where it sets trt_storage, pass --storage, as a note on "
                   "stderr says)")
    p.add_argument("--remote-cache-trust", action="append", default=[], metavar="KEY",
                   help="public key (.pub file or 'ed25519:...') whose signatures are accepted on a URL; repeatable "
                   "(default: $PYTEST_TRT_REMOTE_CACHE_TRUST)")
    p.add_argument("--json", action="store_true", help="machine-readable output on stdout")


def add_runs(sub: Any) -> None:
    """The ``runs`` subcommand: list, show, diff, recheck and prune saved runs."""
    p = sub.add_parser("runs", help="saved runs (pytest --trt-save): list, show, diff, recheck, prune",
                       description="Runs saved by pytest --trt-save=NAME / --trt-autosave: a session's JSON report and "
                       "its environment fingerprint. RUN is a run id (or a unique prefix of one), NUM (the position in "
                       "`runs list`, oldest first), NAME (the latest run saved so) or latest (the latest run whose "
                       "session exited 0, its drift gate included). Exit status: 0 pass, 1 a regression (diff --fail) "
                       "or a failing re-check, 2 usage error (a missing or damaged run), 3 internal error.")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True, parser_class=type(p))
    listing = actions.add_parser("list", help="every saved run, oldest first, with NUM, name, exit status and gate",
                                 description="Every run of the storage, oldest first: NUM, id, name, the session's "
                                 "exit status and drift gate, backend and precision. A run whose manifest fails "
                                 "verification (forged, damaged) is listed as rejected, one whose run.json differs from its manifest as "
                                 "damaged (with why); neither is ever used, and `latest` skips them.")
    _storage_flags(listing)
    listing.set_defaults(run=_later(runs, "run_list"))
    show = actions.add_parser("show", help="one run: fingerprint and figures per output",
                              description="One run: its fingerprint (versions, GPU, git commit) and every output's "
                              "figures (x tol, max abs/rel error, cosine).")
    show.add_argument("run_spec", metavar="RUN", help="id, NUM, NAME or latest")
    _storage_flags(show)
    show.set_defaults(run=_later(runs, "run_show"))
    diff = actions.add_parser("diff", help="the drift of run B against run A; --fail gates it",
                              description="The drift of run B against run A, output by output (worst first), the "
                              "fingerprint's changes as one cause line, the nodes whose realized precision changed "
                              "(when both runs carry layer reports) and where layerwise errors grew most. Exit 1 "
                              "when --fail is given and an output regressed past it, or no output was compared (the gate "
                              "judged nothing); improvements never fail.")
    diff.add_argument("run_a", metavar="A", help="the stored (older) run: id, NUM, NAME or latest")
    diff.add_argument("run_b", metavar="B", help="the run judged against A")
    diff.add_argument("--fail", action="append", default=[], metavar="EXPR",
                      help="METRIC:THRESHOLD, relative (max_abs:+25%%) or absolute (cosine:-1e-5); errors (max_abs, "
                      "max_rel, mismatch, x_tol) fail when they grow, floors (cosine, snr_db) when they fall; "
                      "comma-separated or repeatable")
    _storage_flags(diff)
    diff.set_defaults(run=_later(runs, "run_diff"))
    recheck = actions.add_parser("recheck", help="judge a run's saved outputs again against a fresh FP32 baseline",
                                 description="Re-judge a run saved with --trt-save-outputs: each check's saved engine "
                                 "outputs against the FP32 ONNX Runtime reference computed here, under the criterion "
                                 "the run recorded. MODEL must be the file the run tested (its sha256 is checked). Exit "
                                 "0 when every verdict agrees with the recorded one (a check recorded as failed, such "
                                 "as a negative control, that fails again agrees), 1 when one disagrees.")
    recheck.add_argument("run_spec", metavar="RUN", help="id, NUM, NAME or latest")
    recheck.add_argument("--model", action="append", default=[], required=True, metavar="PATH",
                         help="the ONNX model the run tested (repeatable, one per model of the run)")
    recheck.add_argument("--cache-dir", default=None,
                         help="artifact cache for the FP32 baselines (default: $PYTEST_TRT_CACHE_DIR, else "
                         "<rootdir>/.trt-cache; the console script ignores the ini: where it sets trt_cache_dir, pass "
                         "--cache-dir, as a note on stderr says)")
    _storage_flags(recheck)
    recheck.set_defaults(run=_later(runs, "run_recheck"))
    prune = actions.add_parser("prune", help="delete old runs: by age, count or size",
                               description="Delete runs older than --older-than, beyond the newest --keep, then the "
                               "oldest while the storage holds more than --max-size. Only run folders are touched; an "
                               "incomplete run younger than an hour (being written) is left. --damaged deletes the runs "
                               "`runs list` marks damaged (and, in a directory, rejected).")
    prune.add_argument("--older-than", metavar="AGE", default=None,
                       help="with a unit: 30m, 12h, 7d, 2w (s, m, h, d, w; a bare number is refused)")
    prune.add_argument("--keep", type=number(minimum=0, integer=True), default=None, metavar="N",
                       help="keep the newest N runs")
    prune.add_argument("--max-size", metavar="SIZE", default=None, help="e.g. 2G, 500M")
    prune.add_argument("--damaged", action="store_true",
                       help="delete damaged runs (run.json differs from its manifest) and, in a directory, rejected ones")
    prune.add_argument("--dry-run", action="store_true", help="list what would be deleted, delete nothing")
    _storage_flags(prune)
    prune.set_defaults(run=_later(runs, "run_prune"))


def add_subcommands(sub: Any) -> None:
    """Every subcommand's parser, in ``--help`` order, each with ``subparser`` set to itself."""
    adders = (add_plan, add_compare, add_layers, add_locate, add_suggest, add_cache, add_remote_cache, add_runs)
    for name, add in zip(SUBCOMMANDS, adders, strict=True):
        add(sub)
        command = name.replace("_", "-")  # module remote_cache is the subcommand remote-cache
        sub.choices[command].set_defaults(subparser=sub.choices[command])
