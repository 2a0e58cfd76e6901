"""The content key of a cache entry: canonical JSON of its parts, sha256, and entry names.

Every artifact (engine, realized model, baseline, timing cache) is stored under the sha256 of
the canonical JSON of what produced it (model hash, plan fingerprint, library versions,
device, build config: docs/DESIGN.md "Cache key"). The local cache and the remote tier derive
and compare keys with these functions only, so "the same parts" means the same everywhere.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from ..errors import UsageError

__all__ = [
    "KEY_RE",
    "KIND_RE",
    "RESERVED_KINDS",
    "canonical_json",
    "check_kind",
    "content_key",
    "parts_diff",
    "safe_relative_path",
    "same_parts",
]

#: directories of the cache root that are not entry kinds
RESERVED_KINDS = frozenset({"locks", "tmp", "memo"})
#: an entry kind: a short lowercase name (``engine``, ``baseline``, ...)
KIND_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")
#: a content key, and a sha256 in a manifest: 64 lowercase hex digits
KEY_RE = re.compile(r"^[0-9a-f]{64}$")


def canonical_json(parts: Any) -> str:
    """The canonical JSON of ``parts``: sorted keys, no spaces, no NaN (the text that is hashed).

    Raises :class:`~pytest_trt.errors.UsageError` for anything that is not plain JSON data.

    >>> canonical_json({"b": 1, "a": [1.5, None]})
    '{"a":[1.5,null],"b":1}'
    """
    try:
        return json.dumps(parts, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise UsageError(
            f"cache key parts must be plain JSON data (dict, list, str, int, float, bool, None; "
            f"no NaN): {exc}"
        ) from exc


def same_parts(have: Any, want: Any) -> bool:
    """Whether two parts have the same canonical JSON (False when either is not plain JSON)."""
    try:
        return canonical_json(have) == canonical_json(want)
    except UsageError:
        return False


def content_key(parts: dict) -> str:
    """sha256 (hex) of the canonical JSON (sorted keys, no spaces) of ``parts``."""
    if not isinstance(parts, dict):
        raise UsageError(f"cache key parts must be a dict, not {type(parts).__name__}")
    return hashlib.sha256(canonical_json(parts).encode("utf-8")).hexdigest()


def check_kind(kind: str) -> None:
    """Raise :class:`~pytest_trt.errors.UsageError` unless ``kind`` can name an entry directory."""
    if not isinstance(kind, str) or not KIND_RE.match(kind) or kind in RESERVED_KINDS:
        raise UsageError(
            f"invalid cache kind {kind!r}: use a short lowercase name like 'engine' or 'baseline' "
            f"([a-z0-9][a-z0-9_.-]*, not {' or '.join(sorted(RESERVED_KINDS))})"
        )


def safe_relative_path(name: Any) -> bool:
    """Whether ``name`` is a normalized relative POSIX path inside an entry (no ``..``, no ``/`` start)."""
    if not isinstance(name, str) or not name or name.startswith("/") or "\\" in name or "\x00" in name:
        return False
    return all(p not in ("", ".", "..") for p in name.split("/"))


def parts_diff(have: Any, want: Any) -> str:
    """Which top-level parts differ, e.g. ``backend_versions: {...} in the entry, {...} requested``."""

    def short(v: Any) -> str:
        s = json.dumps(v, sort_keys=True, default=str)
        return s if len(s) <= 120 else s[:117] + "..."

    if not isinstance(have, dict) or not isinstance(want, dict):
        return f"{short(have)} in the entry, {short(want)} requested"
    diffs = []
    for k in sorted(set(have) | set(want), key=str):
        if k not in want:
            diffs.append(f"{k}: only in the entry")
        elif k not in have:
            diffs.append(f"{k}: missing in the entry")
        elif not same_parts(have[k], want[k]):
            diffs.append(f"{k}: {short(have[k])} in the entry, {short(want[k])} requested")
    return "; ".join(diffs[:4]) or "(same values, different encoding)"
