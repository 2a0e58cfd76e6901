"""Turning the parsed flags into a session, a policy, feeds and a build config (the flags
themselves are defined in :mod:`pytest_trt.cli.args`). Imported when a subcommand runs."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from ..backends.base import BuildConfig
from ..backends.tensorrt.parser_check import check_parser
from ..backends.tensorrt.parser_check import require as require_parser_check
from ..compare.criterion import Criterion, Level
from ..core.locations import CACHE_DIR_ENV, default_cache_dir, default_runs_dir, ignored_ini_note
from ..errors import UsageError
from ..inputs import check_feeds, load_feeds, make_feeds, parse_input_shape, parse_val_range
from ..plan.policy import PrecisionPolicy
from ..run.session import TrtSession
from ..run.settings import Settings, remote_settings
from .args import flat


def note_ignored_ini(key: str, flag: str, used) -> None:
    """One line on stderr when the project's ini sets ``key`` (which the console script ignores) and
    ``flag`` was not given: the ini's value and the flag to pass. The directory is not changed."""
    note = ignored_ini_note(key, flag, used)
    if note:
        print(note, file=sys.stderr)


def cache_dir_from_args(args) -> Path:
    """``--cache-dir``, else ``$PYTEST_TRT_CACHE_DIR``, else ``<rootdir>/.trt-cache`` (the plugin's rule
    without the ini, :mod:`pytest_trt.core.locations`), with a note when the ini sets ``trt_cache_dir``."""
    if args.cache_dir:
        return Path(args.cache_dir).expanduser()
    used = default_cache_dir()
    if not os.environ.get(CACHE_DIR_ENV):  # pytest too takes the environment over the ini
        note_ignored_ini("trt_cache_dir", "--cache-dir", used)
    return used


def storage_from_args(args) -> str:
    """``--storage``, else ``<rootdir>/.trt-runs``, with a note when the ini sets ``trt_storage``."""
    if args.storage:
        return str(args.storage)
    used = default_runs_dir()
    note_ignored_ini("trt_storage", "--storage", used)
    return str(used)


def parser_check_from_args(args, plan, config=None, cache=None):
    """``--parser-check``: None when off, else the ParserCheck (UsageError when TensorRT-RTX is missing)."""
    which = getattr(args, "parser_check", "off")
    if which == "off":
        return None

    require_parser_check(which, "--parser-check")
    return check_parser(plan, config, cache=cache, rebuild=bool(getattr(args, "rebuild", False)), which=which)


def criterion_from_args(args, plan) -> Criterion:
    """The criterion of ``compare``/``locate``/``suggest``: ``--atol``/``--rtol`` > the ``--criterion`` file
    (a failing test's, with its sources) > the per-precision defaults of the plan's precision;
    ``--no-check`` (else the file's) for no tolerance verdict."""
    names = plan.model.output_names()
    flags = [Level("command line", {"rtol": "--rtol", "atol": "--atol"}, {"rtol": args.rtol, "atol": args.atol})]
    no_check = bool(getattr(args, "no_check", False))
    path = getattr(args, "criterion", None)
    if path is None:
        return Criterion.resolve(names, plan.low_precision or "fp32", flags, no_check=no_check,
                                 no_check_source="--no-check" if no_check else "default")
    saved = Criterion.load(path).with_outputs(names)
    return Criterion.resolve(names, saved.precision, flags + saved.as_levels(f", from {Path(path).name}"),
                             no_check=no_check or saved.no_check,
                             no_check_source="--no-check" if no_check else saved.no_check_source,
                             equal_nan=saved.equal_nan, where="--criterion: ")


def policy_from_args(args):
    default = "fp16" if args.fp16 else "bf16" if args.bf16 else "fp32"
    kwargs: dict[str, Any] = dict(default=default, keep_fp32=tuple(args.keep_fp32), rules=tuple(args.precision))
    if getattr(args, "as_is", False):
        kwargs["as_is"] = True
    return PrecisionPolicy(**kwargs)


def session_from_args(args):


    cache_source = "--cache-dir" if args.cache_dir else f"${CACHE_DIR_ENV}" if os.environ.get(CACHE_DIR_ENV) \
        else "default"
    sources = {"trt_cache_dir": cache_source, "trt_backend": "--backend",
               "trt_typing": "--typing",
               "trt_remote_cache": "--remote-cache",
               "trt_remote_cache_mode": "--remote-cache-mode" if args.remote_cache_mode else "default"}
    remote = remote_settings(args.remote_cache, args.remote_cache_mode, tuple(args.remote_cache_trust), sources)
    cache_dir = cache_dir_from_args(args)  # the plugin's rule (pytest_trt.core.locations), without the ini
    settings = Settings(
        precision="fp16" if getattr(args, "fp16", False) else "bf16" if getattr(args, "bf16", False) else "fp32",
        backend=args.backend, typing=args.typing, cache_dir=Path(cache_dir).expanduser().resolve(),
        rebuild=args.rebuild, seed=getattr(args, "seed", 0),
        remote_cache=remote[0], remote_cache_mode=remote[1], remote_cache_trust=remote[2],
        remote_cache_timeout=args.remote_cache_timeout, sources=sources,
    )
    return TrtSession.create(settings, flag_prefix="--")


def feeds_from_args(args, model, *, shapes_only: bool = False) -> dict:
    """The feeds of ``--load-inputs`` (checked against the model), else generated from ``--val-range``,
    ``--input-shapes`` and ``--seed``. ``shapes_only``: the caller runs nothing (``layers``), so NaN/Inf
    in loaded arrays are not looked at."""
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
        check_feeds(model, feeds, shapes=shapes or None,
                    allow_nonfinite=shapes_only or bool(getattr(args, "allow_nonfinite", False)))
        return feeds
    val_range = parse_val_range(flat(args.val_range)) if args.val_range else {}
    return make_feeds(model, shapes=shapes or None, val_range=val_range or None, seed=args.seed)


def build_config_from_args(args, feeds):

    profile = {name: (tuple(a.shape),) * 3 for name, a in feeds.items()}
    return BuildConfig(typing=args.typing, profiles=(profile,))


def emit_json(data) -> None:
    json.dump(data, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


def require(condition: bool, message: str) -> None:
    if not condition:
        raise UsageError(message)
