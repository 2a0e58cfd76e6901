"""Flags shared by the subcommands, and turning them into a session, a policy and feeds."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..backends.base import BACKEND_CHOICES, TYPING_CHOICES
from ..errors import UsageError


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


def add_input_flags(p) -> None:
    p.add_argument("--load-inputs", metavar="FILE.npz", help="input feeds from an .npz file")
    p.add_argument("--val-range", action="append", default=[], metavar="NAME:[lo,hi]",
                   help="value range of generated inputs, Polygraphy spelling (repeatable)")
    p.add_argument("--input-shapes", action="append", default=[], metavar="NAME:[d,...]",
                   help="shape of an input with symbolic dims (repeatable)")
    p.add_argument("--seed", type=int, default=0, help="seed of generated inputs (default: 0)")


def add_tolerance_flags(p) -> None:
    p.add_argument("--atol", type=float, default=None, help="absolute tolerance (default: per precision)")
    p.add_argument("--rtol", type=float, default=None, help="relative tolerance (default: per precision)")


def policy_from_args(args):
    from ..policy import PrecisionPolicy

    default = "fp16" if args.fp16 else "bf16" if args.bf16 else "fp32"
    kwargs = dict(default=default, keep_fp32=tuple(args.keep_fp32), rules=tuple(args.precision))
    if getattr(args, "as_is", False):
        kwargs["as_is"] = True
    return PrecisionPolicy(**kwargs)


def session_from_args(args):
    import os

    from ..session import TrtSession
    from ..settings import DEFAULT_CACHE_DIRNAME, Settings, remote_settings

    sources = {"trt_cache_dir": "--cache-dir" if args.cache_dir else "default", "trt_backend": "--backend",
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
    from ..inputs import check_feeds, load_feeds, make_feeds, parse_input_shape, parse_val_range

    shapes = {}
    for text in args.input_shapes:
        shapes.update(parse_input_shape(text))
    if args.load_inputs:
        feeds = load_feeds(Path(args.load_inputs))
        check_feeds(model, feeds, shapes=shapes or None)
        return feeds
    val_range = {}
    for text in args.val_range:
        val_range.update(parse_val_range(text))
    return make_feeds(model, shapes=shapes or None, val_range=val_range or None, seed=args.seed)


def build_config_from_args(args, model, feeds):
    from ..backends.base import BuildConfig

    profile = {name: (tuple(a.shape),) * 3 for name, a in feeds.items()}
    return BuildConfig(typing=args.typing, profiles=(profile,))


def emit_json(data) -> None:
    json.dump(data, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


def require(condition: bool, message: str) -> None:
    if not condition:
        raise UsageError(message)
