"""Flags shared by the subcommands, and turning them into a session, a policy and feeds."""

from __future__ import annotations

import argparse
import ast
import json
import math
import os
import re
import shlex
import sys
from pathlib import Path
from typing import Any

from ..backends.base import BACKEND_CHOICES, TYPING_CHOICES, BuildConfig
from ..backends.tensorrt.parser_check import PARSER_CHECK_CHOICES, check_parser
from ..backends.tensorrt.parser_check import require as require_parser_check
from ..errors import UsageError
from ..inputs import check_feeds, load_feeds, make_feeds, parse_input_shape, parse_val_range
from ..plan.policy import PrecisionPolicy
from ..run.session import TrtSession
from ..run.settings import DEFAULT_CACHE_DIRNAME, Settings, remote_settings


def add_model_and_policy(p) -> None:
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


def add_engine_flags(p) -> None:
    p.add_argument("--backend", choices=BACKEND_CHOICES, default="auto",
                   help="auto = TensorRT when available with a GPU, else emulate (default: auto)")
    p.add_argument("--typing", choices=TYPING_CHOICES, default="auto", help="network typing (default: auto)")
    p.add_argument("--cache-dir", default=None, help="artifact cache (default: $PYTEST_TRT_CACHE_DIR or ./.trt-cache)")
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


def number(*, minimum: float | None = None, exclusive: bool = False, allow_inf: bool = False, integer: bool = False):
    """An argparse ``type``: a finite number (an int with ``integer``) at or above ``minimum``
    (above it with ``exclusive``). argparse turns the message into ``argument --FLAG: ...`` with the
    subcommand's usage, exit 2."""

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
        return value

    parse.__name__ = "int" if integer else "number"
    return parse


def add_input_flags(p) -> None:
    # Polygraphy's spelling: several values after one flag (nargs="+", as in Polygraphy's
    # DataLoaderArgs / ModelArgs); repeating the flag adds more.
    p.add_argument("--load-inputs", nargs="+", action="append", default=[], metavar="FILE.npz",
                   help="input feeds from .npz file(s); several files (one flag or repeated) are merged, an "
                   "input in two files is an error")
    p.add_argument("--val-range", nargs="+", action="append", default=[], metavar="NAME:[lo,hi]",
                   help="value ranges of generated inputs, Polygraphy spelling: --val-range input_ids:[0,30521] [-1,1] "
                   "(several after one flag, or the flag repeated)")
    p.add_argument("--input-shapes", nargs="+", action="append", default=[], metavar="NAME:[d,...]",
                   help="shapes of inputs with symbolic dims, Polygraphy spelling: --input-shapes input_ids:[2,128] "
                   "attention_mask:[2,128] (several after one flag, or the flag repeated); every dim >= 1")
    p.add_argument("--seed", type=number(minimum=0, integer=True), default=0,
                   help="seed of generated inputs (default: 0)")
    p.add_argument("--allow-nonfinite", action="store_true",
                   help="accept NaN/Inf in --load-inputs feeds (default: an input error)")


def add_tolerance_flags(p, *, no_check: bool = True) -> None:
    p.add_argument("--atol", type=number(minimum=0, allow_inf=no_check), default=None,
                   help="absolute tolerance, finite and >= 0 (default: per precision)")
    p.add_argument("--rtol", type=number(minimum=0, allow_inf=no_check), default=None,
                   help="relative tolerance, finite and >= 0 (default: per precision)")
    if no_check:
        p.add_argument("--no-check", action="store_true",
                       help="show the figures without a tolerance verdict: atol and rtol become inf unless given "
                       "(NaN/Inf mismatches and missing outputs still fail); the only way to pass --atol/--rtol inf")


def check_args(args, parser) -> None:
    """Checks across flags, after parsing; errors go through the subcommand's parser (its usage, exit 2)."""
    if not hasattr(args, "atol"):
        return
    infinite = [f"--{k} {getattr(args, k)}" for k in ("atol", "rtol")
                if getattr(args, k) is not None and math.isinf(getattr(args, k))]
    if getattr(args, "no_check", False):
        args.atol = math.inf if args.atol is None else args.atol
        args.rtol = math.inf if args.rtol is None else args.rtol
    elif infinite:
        parser.error(f"{' and '.join(infinite)} switches the accuracy check off; pass --no-check to compare "
                     f"without a tolerance verdict, or give a finite tolerance")


def flat(values) -> list[str]:
    """``action="append"`` + ``nargs="+"`` gives a list of lists: one flat list, in order."""
    return [v for group in values or () for v in (group if isinstance(group, list) else [group])]


#: API/pytest spellings in messages raised by shared code, and how the command line spells them
def _keep_flags(match) -> str:

    try:
        patterns = ast.literal_eval("[" + match.group(1) + "]")
    except (ValueError, SyntaxError):
        return match.group(0)
    return " ".join(f"--keep-fp32 {shlex.quote(str(p))}" for p in patterns)


_CLI_SPELLING = (
    ("keep_fp32", re.compile(r"keep_fp32=\[([^\]]*)\] in the trt marker, or --trt-keep-fp32 '[^']*'"), _keep_flags),
    ("keep_fp32", re.compile(r"keep_fp32=\[([^\]]*)\]"), _keep_flags),
    ("keep_fp32", re.compile(r"--trt-keep-fp32"), "--keep-fp32"),
    ("cache_dir", re.compile(r"--trt-cache-dir=DIR"), "--cache-dir DIR"),
    ("cache_dir", re.compile(r"--trt-cache-dir"), "--cache-dir"),
    ("allow_nonfinite", re.compile(r"pass allow_nonfinite=True"), "pass --allow-nonfinite"),
    ("max_builds", re.compile(r"\(max_builds\)"), "(--max-builds)"),
    ("max_builds", re.compile(r"Raise max_builds"), "Raise --max-builds"),
    ("findings", re.compile(r"\(PrecisionError\.findings\.to_json\(\) lists all\)"), "(--json lists all)"),
    # options the CLI has under another name (check with `pytest-trt compare --help`)
    ("typing", re.compile(r"--trt-typing(?![\w-])"), "--typing"),
    ("rebuild", re.compile(r"--trt-rebuild(?![\w-])"), "--rebuild"),
    ("backend", re.compile(r"--trt-backend(?![\w-])"), "--backend"),
)


def cli_spelling(text: str, only: frozenset | set | None = None) -> str:
    """A message of the shared pipeline in the command line's spelling (``--keep-fp32 P`` rather than
    ``keep_fp32=[P]``, ``--cache-dir`` rather than ``--trt-cache-dir``, ...); ``only`` limits it to
    some of the spellings (``suggest`` prints the marker and pytest forms on purpose)."""
    for name, pattern, replacement in _CLI_SPELLING:
        if only is None or name in only:
            text = pattern.sub(replacement, text)
    return text


def add_parser_check_flag(p) -> None:

    p.add_argument("--parser-check", choices=PARSER_CHECK_CHOICES, default="off",
                   help="also parse and build the plan with TensorRT-RTX's real ONNX parser and builder (no GPU "
                   "needed; needs the rtx extra): a node planned FP32 but parsed lower, or a realization it rejects, "
                   "fails (exit 1); promotions to higher precision are listed (default: off)")


def parser_check_from_args(args, plan, config=None, cache=None):
    """``--parser-check``: None when off, else the ParserCheck (UsageError when TensorRT-RTX is missing)."""
    which = getattr(args, "parser_check", "off")
    if which == "off":
        return None

    require_parser_check(which, "--parser-check")
    return check_parser(plan, config, cache=cache, rebuild=bool(getattr(args, "rebuild", False)), which=which)


def policy_from_args(args):
    default = "fp16" if args.fp16 else "bf16" if args.bf16 else "fp32"
    kwargs: dict[str, Any] = dict(default=default, keep_fp32=tuple(args.keep_fp32), rules=tuple(args.precision))
    if getattr(args, "as_is", False):
        kwargs["as_is"] = True
    return PrecisionPolicy(**kwargs)


def session_from_args(args):


    sources = {"trt_cache_dir": "--cache-dir" if args.cache_dir else "default", "trt_backend": "--backend",
               "trt_typing": "--typing",
               "trt_remote_cache": "--remote-cache",
               "trt_remote_cache_mode": "--remote-cache-mode" if args.remote_cache_mode else "default"}
    remote = remote_settings(args.remote_cache, args.remote_cache_mode, tuple(args.remote_cache_trust), sources)
    cache_dir = args.cache_dir or os.environ.get("PYTEST_TRT_CACHE_DIR") or DEFAULT_CACHE_DIRNAME
    settings = Settings(
        precision="fp16" if getattr(args, "fp16", False) else "bf16" if getattr(args, "bf16", False) else "fp32",
        backend=args.backend, typing=args.typing, cache_dir=Path(cache_dir).expanduser().resolve(),
        rebuild=args.rebuild, seed=getattr(args, "seed", 0),
        remote_cache=remote[0], remote_cache_mode=remote[1], remote_cache_trust=remote[2], sources=sources,
    )
    return TrtSession.create(settings, flag_prefix="--")


def feeds_from_args(args, model) -> dict:

    shapes = parse_input_shape(flat(args.input_shapes)) if args.input_shapes else {}
    paths = flat(args.load_inputs)
    if paths:
        feeds: dict = {}
        origin: dict[str, str] = {}
        for path in paths:
            for name, array in load_feeds(Path(path)).items():
                if name in feeds:
                    raise UsageError(f"--load-inputs: input {name!r} is in both {origin[name]} and {path}; "
                                     f"give each input once")
                feeds[name], origin[name] = array, path
        check_feeds(model, feeds, shapes=shapes or None, allow_nonfinite=bool(getattr(args, "allow_nonfinite", False)))
        return feeds
    val_range = parse_val_range(flat(args.val_range)) if args.val_range else {}
    return make_feeds(model, shapes=shapes or None, val_range=val_range or None, seed=args.seed)


def build_config_from_args(args, model, feeds):

    profile = {name: (tuple(a.shape),) * 3 for name, a in feeds.items()}
    return BuildConfig(typing=args.typing, profiles=(profile,))


def emit_json(data) -> None:
    json.dump(data, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


def require(condition: bool, message: str) -> None:
    if not condition:
        raise UsageError(message)
