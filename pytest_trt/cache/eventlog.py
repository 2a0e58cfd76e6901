"""The cache's events log: one JSON line per build, hit, remote hit, corrupt entry and eviction.

``<root>/events.jsonl`` is appended under its own lock (``locks/events.lock``) and rotated to
``events.1.jsonl`` once it passes :data:`EVENTS_MAX_BYTES`. Events are diagnostics (the
``pytest-trt cache`` figures, the reliability tests): a line cut short by a killed writer is
skipped when reading, and the next writer starts on a fresh line.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path

from ..errors import CacheError
from .files import why
from .locks import hold

__all__ = ["EVENTS", "EVENTS_MAX_BYTES", "EVENTS_OLD", "EventLog"]

EVENTS = "events.jsonl"
EVENTS_OLD = "events.1.jsonl"
#: events.jsonl is rotated to events.1.jsonl past this size.
EVENTS_MAX_BYTES = 16 * 1024 * 1024


class EventLog:
    """The events log of the cache at ``root`` (nothing is recorded when ``read_only``)."""

    def __init__(self, root: Path, *, read_only: bool, lock_timeout: float | None) -> None:
        self.root = root
        self.read_only = read_only
        self.lock_timeout = lock_timeout

    def _locked(self) -> contextlib.AbstractContextManager[float]:
        return hold(self.root / "locks" / "events.lock", what="the events log", timeout=self.lock_timeout)

    def record(self, event: dict) -> None:
        """Append ``event`` (plus ``pid`` and ``time``) as one JSON line, under the log's lock."""
        if self.read_only:
            return
        line = json.dumps({"pid": os.getpid(), "time": time.time(), **event}, sort_keys=True, default=str)
        data = (line.replace("\n", " ") + "\n").encode("utf-8")
        path = self.root / EVENTS
        with self._locked():
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
        """The recorded events, oldest first; ``since``: only those whose ``time`` is at least this."""
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
