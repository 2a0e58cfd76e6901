"""Garbage collection: the scratch items of dead builders, and nothing else.

Only items the cache creates are candidates, recognised by name (:data:`~pytest_trt.cache.ownership.SCRATCH_ITEM_RE`
in its scratch directory and in ``tmp/`` of a cache written by pytest-trt 0.1.0,
:data:`~pytest_trt.cache.ownership.PROBE_RE` in the root). Anything else, and anything behind a
symbolic link, is left alone.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .files import remove_tree
from .key import KEY_RE
from .ownership import LEGACY_SCRATCH_DIR, PROBE_RE, SCRATCH_DIR, SCRATCH_ITEM_RE, is_real_dir

__all__ = ["collect_scratch"]


def collect_scratch(root: Path, max_age: float,
                    try_lock: Callable[..., contextlib.AbstractContextManager[Any] | None]) -> list[Path]:
    """Remove the cache's scratch items under ``root`` older than ``max_age`` seconds; returns them.

    A build directory (``build-<key>-...``) is removed only when ``try_lock(key, what=...)`` gets its
    key's lock (its builder died: the kernel released the lock); trash and probe leftovers are
    removed by age alone.
    """
    removed = []
    now = time.time()
    items = []
    for where, pattern in ((root / SCRATCH_DIR, SCRATCH_ITEM_RE),
                           (root / LEGACY_SCRATCH_DIR, SCRATCH_ITEM_RE), (root, PROBE_RE)):
        if where != root and not is_real_dir(where):
            continue  # missing, or a link: never followed
        with contextlib.suppress(OSError):
            items += [i for i in os.scandir(where) if pattern.match(i.name)]
    for item in items:
        try:
            age = now - item.stat(follow_symlinks=False).st_mtime
        except OSError:
            continue
        if age < max_age:
            continue
        parts = item.name.split("-")
        if parts[0] == "build" and len(parts) >= 2 and KEY_RE.match(parts[1]):
            ctx = try_lock(parts[1], what=f"stale build directory {item.path}")
            if ctx is None:
                continue  # its builder is alive
            try:
                remove_tree(Path(item.path))
            finally:
                ctx.__exit__(None, None, None)
        else:
            remove_tree(Path(item.path))
        removed.append(Path(item.path))
    return removed
