"""``pytest-trt cache list|prune``: what the artifact cache holds, by model and kind, and pruning it.

``list`` shows every entry grouped by the model it was made from (engines, emulation graphs,
baselines, weight sets), with sizes and last use; ``prune`` removes entries last used more than
``--max-age`` ago and/or least recently used ones until the cache holds at most ``--max-size``.
Entries that share a model's weight set are removed together (:mod:`pytest_trt.cache.prune`).
The flags are defined with the other subcommands' in :mod:`pytest_trt.cli.commands`.
"""

from __future__ import annotations

import os
import re
import time
from datetime import datetime

from ..cache import MARKER, ArtifactCache, CacheEntry, is_cache_dir
from ..cache.prune import groups, plan_prune, uses_of
from ..core.locations import CACHE_DIR_ENV
from ..errors import UsageError
from ..run.settings import parse_size
from .common import cache_dir_from_args, emit_json

_AGE_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_age(text: str, flag: str = "--max-age") -> float:
    """``"7d"`` -> seconds; UsageError naming ``flag`` otherwise. A unit is required: a bare
    ``3`` is refused, not read as 3 seconds (which pruned the whole cache where days were meant).
    The one rule of ``cache prune --max-age`` and ``runs prune --older-than``."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*", str(text).lower())
    if not m:
        raise UsageError(f"invalid {flag} {text!r}: use a number with a unit s, m, h, d or w, e.g. 7d")
    if not m.group(2):
        n = m.group(1)
        raise UsageError(f"{flag} {n}: give a unit, e.g. {n}d (days) or {n}h (hours); s, m and w "
                         f"(seconds, minutes, weeks) also work")
    return float(m.group(1)) * _AGE_UNITS[m.group(2)]


def _open(args, *, read_only: bool) -> ArtifactCache:
    root = cache_dir_from_args(args)
    # where root came from, for the refusal: the flag the user typed, else the default it fell back to
    if args.cache_dir:
        origin, fix = " (--cache-dir)", ("check the path: --cache-dir takes the directory your test runs use as "
                                         "their cache (--trt-cache-dir, default <project root>/.trt-cache)")
    else:
        env = os.environ.get(CACHE_DIR_ENV)
        origin = f" (from ${CACHE_DIR_ENV})" if env else " (the default, <project root>/.trt-cache)"
        fix = "give --cache-dir DIR, the cache directory your test runs use"
    if not root.is_dir():
        raise UsageError(f"no pytest-trt cache at {root.resolve()}{origin}: {fix}")
    if not is_cache_dir(root):
        raise UsageError(f"{root.resolve()}{origin} is not a pytest-trt cache (no {MARKER} marker): {fix}")
    return ArtifactCache(root, read_only=read_only)


def model_label(entry: CacheEntry) -> str:
    """The model an entry was made from, as its label names it (``decoder.onnx``)."""
    label = entry.label
    if label.startswith("baseline "):
        label = label[len("baseline "):]
    for cut in (" [", " weights "):
        if cut in label:
            label = label[:label.index(cut)]
    return label or "(no label)"


def _model_of(entry: CacheEntry) -> str:
    parts = (entry.manifest or {}).get("parts") or {}
    return str(parts.get("model", "")) if isinstance(parts, dict) else ""


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n < 1e9 else f"{n / 1e9:.2f} GB"


def _when(t: float) -> str:
    return datetime.fromtimestamp(t).strftime("%Y-%m-%d %H:%M")


def _record(e: CacheEntry) -> dict:
    return {**e.to_json(), "model": _model_of(e), "model_label": model_label(e),
            "uses": [{"kind": k, "key": key} for k, key in uses_of(e.manifest)]}


def run_list(args) -> int:
    cache = _open(args, read_only=True)
    entries = cache.entries()
    if args.json:
        emit_json({"cache": str(cache.root), "size_bytes": sum(e.size_bytes for e in entries),
                   "entries": [_record(e) for e in entries], "groups": len(groups(entries))})
        return 0
    total = sum(e.size_bytes for e in entries)
    print(f"pytest-trt cache {cache.root}: {len(entries)} entries, {_mb(total)}")
    by_model: dict[tuple[str, str], list[CacheEntry]] = {}
    for e in entries:
        by_model.setdefault((model_label(e), _model_of(e)), []).append(e)
    for (label, sha), members in sorted(by_model.items(), key=lambda kv: -sum(e.size_bytes for e in kv[1])):
        size = sum(e.size_bytes for e in members)
        print(f"{label}  (model {sha[:12] or '?'}): {len(members)} entries, {_mb(size)}")
        for e in sorted(members, key=lambda e: (e.kind, -e.last_used)):
            uses = ", ".join(f"{k} {key[:12]}" for k, key in uses_of(e.manifest))
            print(f"  {e.kind:<12} {_mb(e.size_bytes):>10}  used {_when(e.last_used)}  {e.key[:12]}  {e.label}"
                  + (f"  (uses {uses})" if uses else ""))
    return 0


def run_prune(args) -> int:
    if args.max_age is None and args.max_size is None:
        raise UsageError("prune needs --max-age AGE and/or --max-size SIZE (e.g. --max-age 7d)")
    older_than = time.time() - parse_age(args.max_age) if args.max_age is not None else None
    try:
        max_bytes = parse_size(args.max_size)
    except UsageError:
        raise UsageError(f"invalid --max-size {args.max_size!r}: use a number of bytes or a suffix K, M, G, "
                         f"e.g. 20G") from None
    cache = _open(args, read_only=args.dry_run)
    before = cache.entries()
    broken = {e.path for e in before if e.damaged}  # (said before pruning: a removed entry has no manifest left)
    if args.dry_run:
        removed = [m for g in plan_prune(before, max_bytes=max_bytes, older_than=older_than, marked=cache.marked)
                   for m in g.members]
    else:
        removed = cache.prune(max_bytes, older_than=older_than)
    damaged = sum(1 for e in removed if e.path in broken)
    # damaged entries where the directory is not (yet) marked as the cache's: kept, and said why
    kept = [e for e in before if e.path in broken and not cache.marked]
    freed = sum(e.size_bytes for e in removed)
    left = len(before) - len(removed)
    left_bytes = sum(e.size_bytes for e in before) - freed
    if args.json:
        emit_json({"cache": str(cache.root), "dry_run": bool(args.dry_run), "removed": [_record(e) for e in removed],
                   "removed_bytes": freed, "removed_damaged": damaged, "remaining": left, "remaining_bytes": left_bytes,
                   "kept_damaged": [str(e.path) for e in kept]})
        return 0
    _print_pruned(cache, removed, broken, kept, left, left_bytes, dry_run=args.dry_run)
    return 0


def _print_pruned(cache: ArtifactCache, removed: list[CacheEntry], broken: set, kept: list[CacheEntry], left: int,
                  left_bytes: int, *, dry_run: bool) -> None:
    """``cache prune``'s text output: what went (damaged entries said so), what remains, damaged entries kept."""
    damaged = sum(1 for e in removed if e.path in broken)
    verb = "would remove" if dry_run else "removed"
    print(f"pytest-trt cache {cache.root}: {verb} {len(removed)} entries ({_mb(sum(e.size_bytes for e in removed))})"
          + (f", {damaged} of them with a damaged manifest" if damaged else "")
          + f"; {left} entries ({_mb(left_bytes)}) remain")
    for e in removed:
        print(f"  {e.kind:<12} {_mb(e.size_bytes):>10}  used {_when(e.last_used)}  "
              + ("(damaged manifest)" if e.path in broken else e.label))
    if kept:
        print(f"  {len(kept)} entries with a damaged manifest kept: {cache.root} has no {MARKER} marker, so they are "
              f"not known to be pytest-trt's (a writable prune marks a cache it recognises); delete them by hand: "
              + ", ".join(str(e.path) for e in kept[:5]) + (" ..." if len(kept) > 5 else ""))
