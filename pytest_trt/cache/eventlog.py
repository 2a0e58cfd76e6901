"""The cache's events log: one JSON line per build, hit, remote hit, corrupt entry and eviction.

``<root>/events.jsonl`` is appended under its own lock (``locks/events.lock``) and rotated to
``events.1.jsonl`` once it passes :data:`EVENTS_MAX_BYTES`. Events are diagnostics (the
reliability tests, ``bench/session.py``): a line cut short by a killed writer is skipped when
reading, and the next writer starts on a fresh line.

Hits are the one event of every cached test, so they are appended in batches (issue 33: the
lock and the append cost more than the rest of a cache hit): a process keeps its hit lines in
memory and appends them, in order, before its next other event, before any read of the log
from this process, once :data:`HITS_MAX_PENDING` wait or the oldest waited
:data:`HITS_MAX_SECONDS`, at the end of a test session (:func:`flush_pending`) and at exit. A
process killed outright loses at most those hit lines; builds, corrupt entries and evictions are
appended at once.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import threading
import time
from pathlib import Path

from ..errors import CacheError
from .files import why
from .locks import hold

__all__ = ["EVENTS", "EVENTS_MAX_BYTES", "EVENTS_OLD", "HITS_MAX_PENDING", "HITS_MAX_SECONDS", "EventLog",
           "flush_pending"]

EVENTS = "events.jsonl"
EVENTS_OLD = "events.1.jsonl"
#: events.jsonl is rotated to events.1.jsonl past this size.
EVENTS_MAX_BYTES = 16 * 1024 * 1024
#: hit lines a process keeps before appending them (see the module docstring)
HITS_MAX_PENDING = 128
#: seconds the oldest kept hit line waits at most (checked at the next event of the process)
HITS_MAX_SECONDS = 2.0

# This process's hit lines not appended yet, per cache root: [(time.monotonic() of the first, [lines])].
_PENDING: dict[Path, tuple[float, list[bytes]]] = {}
_PENDING_LOCK = threading.Lock()


def _take_pending(root: Path) -> list[bytes]:
    with _PENDING_LOCK:
        pending = _PENDING.pop(root, None)
    return pending[1] if pending else []


def flush_pending() -> None:
    """Append every hit line this process still keeps, for every cache root (best effort:
    diagnostics never fail a run). Called at the end of a test session and at exit."""
    with _PENDING_LOCK:
        roots = list(_PENDING)
    for root in roots:
        with contextlib.suppress(CacheError, OSError):
            EventLog(root, read_only=False, lock_timeout=None).flush()


atexit.register(flush_pending)
if hasattr(os, "register_at_fork"):  # a forked child must not append its parent's hits again
    os.register_at_fork(after_in_child=_PENDING.clear)


class EventLog:
    """The events log of the cache at ``root`` (nothing is recorded when ``read_only``)."""

    def __init__(self, root: Path, *, read_only: bool, lock_timeout: float | None) -> None:
        self.root = root
        self.read_only = read_only
        self.lock_timeout = lock_timeout

    def _locked(self) -> contextlib.AbstractContextManager[float]:
        return hold(self.root / "locks" / "events.lock", what="the events log", timeout=self.lock_timeout)

    @staticmethod
    def _line(event: dict) -> bytes:
        line = json.dumps({"pid": os.getpid(), "time": time.time(), **event}, sort_keys=True, default=str)
        return (line.replace("\n", " ") + "\n").encode("utf-8")

    def record(self, event: dict) -> None:
        """Append ``event`` (plus ``pid`` and ``time``) as one JSON line, under the log's lock, after
        the hit lines this process still keeps for this log."""
        if self.read_only:
            return
        self._append(self._line(event))

    def record_later(self, event: dict) -> None:
        """Keep ``event`` (a hit) to append with the next batch (module docstring); its ``time`` is now."""
        if self.read_only:
            return
        line, now = self._line(event), time.monotonic()
        with _PENDING_LOCK:
            first, lines = _PENDING.setdefault(self.root, (now, []))
            lines.append(line)
            due = len(lines) >= HITS_MAX_PENDING or now - first >= HITS_MAX_SECONDS
        if due:
            self.flush()

    def flush(self) -> None:
        """Append the hit lines this process keeps for this log (nothing to do: no I/O)."""
        if not self.read_only and self.root in _PENDING:
            self._append(b"")

    def _append(self, data: bytes) -> None:
        path = self.root / EVENTS
        with self._locked():
            data = b"".join(_take_pending(self.root)) + data  # taken under the lock: in order, once
            if not data:
                return
            try:
                with contextlib.suppress(FileNotFoundError):
                    if os.stat(path).st_size > EVENTS_MAX_BYTES:
                        os.replace(path, self.root / EVENTS_OLD)
                fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o666)
                try:
                    end = os.fstat(fd).st_size
                    if end and os.lseek(fd, end - 1, os.SEEK_SET) >= 0 and os.read(fd, 1) != b"\n":
                        data = b"\n" + data  # a writer was killed mid-line: keep this event whole
                    os.write(fd, data)
                finally:
                    os.close(fd)
            except OSError as exc:
                raise CacheError(f"cannot append to the cache events log {path}: {why(exc)}") from exc

    def record_quietly(self, event: dict) -> None:
        """:meth:`record`, ignoring failures: failing to log must not fail a build that succeeded."""
        with contextlib.suppress(CacheError, OSError):
            self.record(event)

    def read(self, since: float | None = None) -> list[dict]:
        """The recorded events, oldest first; ``since``: only those whose ``time`` is at least this.
        This process's kept hit lines are appended first."""
        with contextlib.suppress(CacheError):
            self.flush()
        ctx = contextlib.nullcontext() if self.read_only else self._locked()
        with ctx:
            chunks = []
            for name in (EVENTS_OLD, EVENTS):
                with contextlib.suppress(FileNotFoundError):
                    chunks.append((self.root / name).read_bytes())
        out = []
        for chunk in chunks:
            for raw in chunk.splitlines():
                try:
                    ev = json.loads(raw)
                except ValueError:
                    continue
                if not isinstance(ev, dict):
                    continue
                if since is not None and not (
                    isinstance(ev.get("time"), (int, float)) and ev["time"] >= since
                ):
                    continue
                out.append(ev)
        return out
