"""Per-key locks of the cache: N processes asking for one key build it once.

Every writer of an entry (build, rebuild, corrupt-entry removal, eviction, clear) holds the
key's lock, ``<root>/locks/<key>.lock`` (a :mod:`filelock` lock: ``flock`` on POSIX, released
by the kernel when its holder dies). A thread that asks again for a lock it holds gets a
usage error instead of a deadlock (``flock`` through a second descriptor of the same process
would wait for itself).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import filelock

from ..errors import CacheError, UsageError
from .files import space_hint, why

__all__ = ["hold", "try_hold"]

# Lock paths held by the current thread: re-entering the same key from inside its own
# build would deadlock on flock (a second descriptor of the same process), so it is an error.
_HELD = threading.local()


def _held() -> set[str]:
    held = getattr(_HELD, "paths", None)
    if held is None:
        held = _HELD.paths = set()
    return held


@contextlib.contextmanager
def hold(path: Path, *, what: str, timeout: float | None, try_once: bool = False) -> Iterator[float]:
    """Hold the lock file ``path``; yields the seconds spent waiting.

    ``timeout``: seconds to wait (None: as long as it takes), then :class:`CacheError`;
    ``try_once``: raise :class:`filelock.Timeout` at once if another holder has it.
    ``what`` names the locked thing in messages.
    """
    held = _held()
    if str(path) in held:
        raise UsageError(
            f"the cache lock of {what} is already held by this thread: get_or_build() was called "
            f"for the same key from inside its own build (or eviction)"
        )
    wait = 0 if try_once else (-1 if timeout is None else timeout)
    lock = filelock.FileLock(str(path), timeout=wait)
    t0 = time.monotonic()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        lock.acquire()
    except filelock.Timeout:
        if try_once:
            raise
        raise CacheError(
            f"timed out after {wait:g}s waiting for the lock {path} of {what}: another process "
            f"holds it (a build that is still running, or a hung process)"
        ) from None
    except OSError as exc:
        raise CacheError(f"cannot take the lock {path} of {what}: {why(exc)}{space_hint(exc)}") from exc
    waited = time.monotonic() - t0
    held.add(str(path))
    try:
        yield waited
    finally:
        held.discard(str(path))
        lock.release()


def try_hold(path: Path, *, what: str) -> contextlib.AbstractContextManager[Any] | None:
    """The entered lock context of ``path`` if it can be had at once, else None (held elsewhere).

    The caller leaves it with ``ctx.__exit__(None, None, None)``.
    """
    ctx = hold(path, what=what, timeout=0, try_once=True)
    try:
        ctx.__enter__()
    except (filelock.Timeout, UsageError, CacheError):
        return None
    return ctx
