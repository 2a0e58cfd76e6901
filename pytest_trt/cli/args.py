"""The flags the subcommands share, and the checks across flags after parsing.

Light on purpose: the console script builds its whole parser from this module and
:mod:`pytest_trt.cli.commands` for ``--help`` and usage errors, which import neither numpy,
onnx, ONNX Runtime nor Polygraphy; turning the flags into a session, a policy and feeds is
:mod:`pytest_trt.cli.common`'s job, imported when a subcommand runs.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from ..core.choices import BACKEND_CHOICES, PARSER_CHECK_CHOICES, TIMING_CHOICES, TYPING_CHOICES

__all__ = [
    "add_engine_flags",
    "add_input_flags",
    "add_ledger_flags",
    "add_model_and_policy",
    "add_parser_check_flag",
    "add_timing_flags",
    "add_tolerance_flags",
    "check_args",
    "check_empty_values",
    "flat",
    "number",
]


def add_model_and_policy(p: Any) -> None:
    """MODEL, the precision flags and ``--json``."""
    p.add_argument("model", metavar="MODEL", help="path to the ONNX model")
    prec = p.add_mutually_exclusive_group()
    prec.add_argument("--fp16", action="store_true", help="FP16 everywhere except kept nodes (default: FP32)")
    prec.add_argument("--bf16", action="store_true", help="BF16 everywhere except kept nodes (default: FP32)")
    prec.add_argument("--as-is", action="store_true", help="the model's own types (mixed/Q-DQ models)")
    p.add_argument("--keep-fp32", action="append", default=[], metavar="PATTERN",
                   help="keep nodes matching PATTERN in FP32: shell glob over node names or op:TYPE (repeatable)")
    p.add_argument("--precision", action="append", default=[], metavar="PATTERN=PREC",
                   help="a rule PATTERN=fp32|fp16|bf16 applied after --keep-fp32 (repeatable; later wins)")
    p.add_argument("--json", action="store_true", help="machine-readable output on stdout")


def add_engine_flags(p: Any) -> None:
    """Backend, typing and the caches."""
    p.add_argument("--backend", choices=BACKEND_CHOICES, default="auto",
                   help="auto = TensorRT when available with a GPU, else emulate (default: auto)")
    p.add_argument("--typing", choices=TYPING_CHOICES, default="auto", help="network typing (default: auto)")
    p.add_argument("--cache-dir", default=None,
                   help="artifact cache (default: $PYTEST_TRT_CACHE_DIR, else <rootdir>/.trt-cache: rootdir is the "
                   "nearest directory up from the current one with a pytest configuration file, else the current "
                   "directory; the console script ignores the ini: where it sets trt_cache_dir, pass --cache-dir, as "
                   "a note on stderr says)")
    p.add_argument("--rebuild", action="store_true", help="ignore cached engines and baselines")
    p.add_argument("--remote-cache", metavar="URL", default=None,
                   help="remote engine cache behind the local one: file:///dir, https://host/path (WebDAV), "
                   "s3://... (default: $PYTEST_TRT_REMOTE_CACHE, else none)")
    p.add_argument("--remote-cache-mode", choices=("auto", "ro", "rw"), default=None,
                   help="ro = fetch only; rw = also upload (needs $PYTEST_TRT_REMOTE_CACHE_KEY); auto = rw when "
                   "that key is set (default: $PYTEST_TRT_REMOTE_CACHE_MODE, else auto)")
    p.add_argument("--remote-cache-trust", action="append", default=[], metavar="KEY",
                   help="public key (.pub file or 'ed25519:...') whose signatures are accepted; repeatable "
                   "(default: $PYTEST_TRT_REMOTE_CACHE_TRUST)")
    p.add_argument("--remote-cache-timeout", type=number(minimum=0, exclusive=True), default=60.0, metavar="SECONDS",
                   help="seconds one remote cache entry may take to arrive, plus 1 s per MiB of its files; a slower "
                   "entry is built locally and the remote is not asked again (default: 60)")


def number(*, minimum: float | None = None, exclusive: bool = False, allow_inf: bool = False, integer: bool = False,
           maximum: int | None = None):
    """An argparse ``type``: a finite number (an int with ``integer``) at or above ``minimum``
    (above it with ``exclusive``) and at most ``maximum``. argparse turns the message into
    ``argument --FLAG: ...`` with the subcommand's usage, exit 2."""

    def parse(text: str):
        try:
            value = int(text) if integer else float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {'an integer' if integer else 'a number'}") from None
        if value != value:
            raise argparse.ArgumentTypeError("nan is not a number")
        if not integer and math.isinf(value) and not allow_inf:
            raise argparse.ArgumentTypeError(f"must be finite, got {text}")
        if minimum is not None and (value < minimum or (exclusive and value == minimum)):
            raise argparse.ArgumentTypeError(f"must be {'>' if exclusive else '>='} {minimum:g}, got {text}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"must be <= {maximum}, got {text}")
        return value

    parse.__name__ = "int" if integer else "number"
    return parse


def add_input_flags(p: Any) -> None:
    """Where the inputs come from: files, or generated with value ranges, shapes and a seed."""
    # Polygraphy's spelling: several values after one flag (nargs="+", as in Polygraphy's
    # DataLoaderArgs / ModelArgs); repeating the flag adds more.
    p.add_argument("--load-inputs", nargs="+", action="append", default=[], metavar="FILE.npz",
                   help="input feeds from .npz file(s); several files (one flag or repeated) are merged, an "
                   "input in two files is an error")
    p.add_argument("--val-range", nargs="+", action="append", default=[], metavar="NAME:[lo,hi]",
                   help="value ranges of generated inputs, Polygraphy spelling: --val-range input_ids:[0,<vocab_size-1>] [-1,1] "
                   "(several after one flag, or the flag repeated)")
    p.add_argument("--input-shapes", nargs="+", action="append", default=[], metavar="NAME:[d,...]",
                   help="shapes of inputs with symbolic dims, Polygraphy spelling: --input-shapes input_ids:[2,128] "
                   "attention_mask:[2,128] (several after one flag, or the flag repeated); every dim >= 1")
    p.add_argument("--seed", type=number(minimum=0, integer=True), default=0,
                   help="seed of generated inputs (default: 0)")
    p.add_argument("--allow-nonfinite", action="store_true",
                   help="accept NaN/Inf in --load-inputs feeds (default: an input error)")


def add_tolerance_flags(p: Any, *, no_check: bool = True) -> None:
    """``--atol``, ``--rtol``, ``--criterion`` and (with ``no_check``) ``--no-check``."""
    p.add_argument("--atol", type=number(minimum=0, allow_inf=no_check), default=None,
                   help="absolute tolerance for every output, finite and >= 0 (default: the --criterion file's, "
                   "else per precision)")
    p.add_argument("--rtol", type=number(minimum=0, allow_inf=no_check), default=None,
                   help="relative tolerance for every output, finite and >= 0 (default: the --criterion file's, "
                   "else per precision)")
    p.add_argument("--criterion", metavar="FILE.json", default=None,
                   help="judge by this criterion: per output, the tolerances and the cosine/SNR floors with where "
                   "each came from, as a failing test saved it beside its inputs (<test>.criterion.json, used by "
                   "the replay command); --atol/--rtol given too replace its tolerances")
    if no_check:
        p.add_argument("--no-check", action="store_true",
                       help="show the figures without a tolerance verdict: atol and rtol become inf unless given "
                       "(NaN/Inf mismatches and missing outputs still fail); the only way to pass --atol/--rtol inf")


def add_parser_check_flag(p: Any) -> None:
    """``--parser-check``."""
    p.add_argument("--parser-check", choices=PARSER_CHECK_CHOICES, default="off",
                   help="also parse and build the plan with TensorRT-RTX's real ONNX parser and builder (no GPU "
                   "needed; needs the rtx extra): a node planned FP32 but parsed lower, or a realization it rejects, "
                   "fails (exit 1); promotions to higher precision are listed (default: off)")


def _value_actions(parser: argparse.ArgumentParser):
    """Every action of ``parser`` and its nested subcommands that takes a value (not a switch)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                yield from _value_actions(child)
        elif action.nargs != 0 and action.dest not in ("help", "version", "subparser", "run"):
            yield action


def _blank(value: Any) -> bool:
    if isinstance(value, list):
        return any(_blank(v) for v in value)
    return isinstance(value, str) and not value.strip()


def check_empty_values(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """An empty value (``--cache-dir=``, ``runs show ""``: a shell variable that was unset) is a usage
    error naming the flag or argument and what to give, never silently the default."""
    for action in _value_actions(parser):
        value = getattr(args, action.dest, None)
        if getattr(action, "empty_refused_by_command", False):  # the command says more about it than we can
            continue
        if value is None or value is action.default or not _blank(value):
            continue
        name = max(action.option_strings, key=len) if action.option_strings else (action.metavar or action.dest)
        wanted = action.metavar or (", ".join(action.choices) if action.choices else action.dest.upper())
        parser.error(f"argument {name}: empty value; give {wanted} (an unset shell variable gives an empty value)")


def check_args(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """Checks across flags, after parsing; errors go through the subcommand's parser (its usage, exit 2)."""
    check_empty_values(args, parser)
    if not hasattr(args, "atol"):
        return
    infinite = [f"--{k} {getattr(args, k)}" for k in ("atol", "rtol")
                if getattr(args, k) is not None and math.isinf(getattr(args, k))]
    if infinite and not getattr(args, "no_check", False):  # --no-check: the criterion's defaults are inf
        parser.error(f"{' and '.join(infinite)} switches the accuracy check off; pass --no-check to compare "
                     f"without a tolerance verdict, or give a finite tolerance")


def flat(values: Any) -> list[str]:
    """``action="append"`` + ``nargs="+"`` gives a list of lists: one flat list, in order."""
    return [v for group in values or () for v in (group if isinstance(group, list) else [group])]


def add_timing_flags(p: Any, *, what: str) -> None:
    """``--timing`` and ``--iterations``: the timing source of the ledger (``layers --ledger``) or of the
    island costs (``suggest``), and the timed runs per measurement."""
    p.add_argument("--timing", choices=TIMING_CHOICES, default="auto",
                   help=f"timing source of {what}: auto = the engine's own per-layer timing (TensorRT), else ONNX "
                        "Runtime CUDA (the strongly typed realization, not TensorRT), else none (it says why); engine / "
                        "onnxruntime-cuda = that source or an error (exit 2); off = no time (default: auto)")
    p.add_argument("--iterations", type=number(minimum=1, integer=True), default=50, metavar="N",
                   help="timed runs per measurement, >= 1 (default: 50)")
    p.add_argument("--warmup", type=number(minimum=0, integer=True), default=10, metavar="N",
                   help="untimed runs before them, >= 0 (default: 10)")


def add_ledger_flags(p: Any) -> None:
    """``layers --ledger`` and the flags of its timing and exports."""
    p.add_argument("--ledger", action="store_true",
                   help="print the ledger: per ONNX node declared precision (and rule), realized precision (and "
                        "evidence), engine layer or node, time and share; roll-ups per scope and precision")
    add_timing_flags(p, what="--ledger")
    p.add_argument("--all", action="store_true", dest="all_rows",
                   help="with --ledger: every row (default: the rows of the top 10 units by time, or of the nodes "
                        "whose precision is in question when there is no time)")
    p.add_argument("--export-profile", metavar="PATH", default=None,
                   help="write the ledger's times as trtexec --exportProfile JSON (implies --ledger; needs time)")
    p.add_argument("--export-trace", metavar="PATH", default=None,
                   help="write the ledger as a Chrome/Perfetto trace, one run by median times (implies --ledger; "
                        "needs time)")
