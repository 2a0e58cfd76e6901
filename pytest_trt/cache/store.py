"""The store: :class:`ArtifactCache`, content-addressed entries built once, atomically, under locks.

The pipeline's expensive artifacts (engines, realized models, baselines) come from here:
:meth:`ArtifactCache.get_or_build` returns a valid entry, building it on a miss in a fresh
``tmp/`` directory that is sealed (:mod:`~pytest_trt.cache.entry`) and renamed into place
under the key's lock (:mod:`~pytest_trt.cache.locks`), or fetched and verified from the
remote tier first. Listing, LRU eviction, garbage collection of dead builds and the events
log (:mod:`~pytest_trt.cache.eventlog`) live here too. The guarantees and the on-disk
layout are described in :mod:`pytest_trt.cache`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import time
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.locations import default_cache_dir
from ..errors import CacheError, CacheWarning, UsageError
from ..model.weights import MEMO_DIR, DigestMemo
from .entry import (
    MANIFEST,
    MEMO_KINDS,
    CacheEntry,
    CacheResult,
    InvalidEntry,
    read_manifest_quietly,
    seal_entry,
    validate_entry,
)
from .eventlog import EventLog, flush_pending
from .files import NO_SPACE, fsync_dir, remove_tree, space_hint, touch, tree_size, why
from .garbage import collect_scratch
from .key import KEY_RE, KIND_RE, RESERVED_KINDS, check_kind, content_key
from .locks import hold, try_hold
from .ownership import MARKER, SCRATCH_DIR, is_cache_dir, is_regular, open_root, scratch_dir, source_note
from .prune import groups, prunable, uses_of
from .stats import CacheStats

if TYPE_CHECKING:  # the remote tier imports this package, not the other way round
    from .remote import RemoteTier

__all__ = ["MARKER", "SCRATCH_DIR", "STALE_SECONDS", "ArtifactCache", "default_cache_dir", "is_cache_dir"]

#: A scratch item older than this (and, for a build directory, whose lock is free) is garbage.
STALE_SECONDS = 600.0


class ArtifactCache:
    """A content-addressed, process-safe artifact cache under ``root``.

    Args:
        root: the cache directory; created when missing.
        max_bytes: size limit of all entries together, enforced by LRU eviction when the
            cache is opened (a cache already over it, e.g. a smaller ``--trt-cache-max-size``
            than last time, shrinks at once) and after each store; None for no limit.
        read_only: serve hits from an existing cache without writing anything; a miss
            raises :class:`CacheError`. Without it an unwritable root raises at once.
        lock_timeout: seconds to wait for another process building the same key before
            raising :class:`CacheError`; None waits as long as the build takes.
        stale_seconds: age after which a leftover ``tmp/`` item of a dead builder is removed.
        remote: a :class:`~pytest_trt.cache.remote.RemoteTier` asked on a local miss (its
            verified files are sealed and installed like a build) and given every entry this
            cache builds (a read-write tier uploads it). Not with ``read_only``.
        source: where ``root`` came from, as the user gave it (``--trt-cache-dir``,
            ``$PYTEST_TRT_CACHE_DIR``, ``ini trt_cache_dir``, ``default``): errors about the
            directory name it and say how to change it there. None: a caller's own path.

    Raises:
        CacheError: the root cannot be created or is not writable (and not ``read_only``).
    """

    def __init__(
        self,
        root: Path | str,
        max_bytes: int | None = None,
        *,
        read_only: bool = False,
        lock_timeout: float | None = None,
        stale_seconds: float = STALE_SECONDS,
        remote: RemoteTier | None = None,
        source: str | None = None,
    ) -> None:
        if max_bytes is not None and (not isinstance(max_bytes, int) or max_bytes < 0):
            raise UsageError(f"cache max_bytes must be a non-negative integer or None, not {max_bytes!r}")
        self.root = Path(root).expanduser().absolute()
        self.max_bytes = max_bytes
        self.read_only = bool(read_only)
        self.lock_timeout = lock_timeout
        self.stale_seconds = stale_seconds
        self.remote = remote
        self.source = source
        #: what this process's cache did (hits, builds, remote traffic): a
        #: :class:`~pytest_trt.cache.remote.CacheStats`, shared with the remote tier
        self.stats = remote.stats if remote is not None else CacheStats()
        if self.read_only and remote is not None:
            raise UsageError(
                "--trt-cache-read-only and --trt-remote-cache cannot be combined: an entry fetched from the "
                "remote cache is verified and installed into the local cache before it is loaded, and a "
                "read-only local cache cannot hold it. Use a writable --trt-cache-dir with the remote cache "
                "(--trt-remote-cache-mode ro keeps the remote itself read-only)."
            )
        #: default ``fresh_after`` of :meth:`get_or_build`: set by a test session to its start
        #: time (shared with xdist workers) so ``--trt-rebuild`` rebuilds each key once per run
        self.fresh_after: float | None = None
        if self.read_only:
            if not self.root.is_dir():
                raise CacheError(
                    f"the read-only pytest-trt cache directory {self.root}{source_note(source)} does not exist. "
                    f"Point --trt-cache-dir=DIR at an existing cache, or open a writable one."
                )
            return
        open_root(self.root, source)
        self.collect_garbage()
        if self.max_bytes is not None:  # a cache over the limit shrinks when opened, not only after a store
            with contextlib.suppress(CacheError):
                self.prune()

    def __repr__(self) -> str:
        ro = ", read_only=True" if self.read_only else ""
        return f"ArtifactCache({str(self.root)!r}, max_bytes={self.max_bytes!r}{ro})"

    # ------------------------------------------------------------------ keys and paths

    @staticmethod
    def key(parts: dict) -> str:
        """sha256 (hex) of the canonical JSON (sorted keys, no spaces) of ``parts``."""
        return content_key(parts)

    def entry_path(self, kind: str, parts: dict) -> Path:
        """Where the entry for ``parts`` lives (whether or not it exists)."""
        check_kind(kind)
        return self.root / kind / self.key(parts)

    @property
    def memo_dir(self) -> Path:
        """The digest memo of this cache (``<root>/memo/``): local only, never uploaded."""
        return self.root / MEMO_DIR

    def memo(self) -> DigestMemo:
        """The cache's :class:`~pytest_trt.model.weights.DigestMemo` (read-only for a read-only cache)."""
        return DigestMemo(self.memo_dir, read_only=self.read_only)

    def _memo(self, kind: str) -> DigestMemo | None:
        return self.memo() if kind in MEMO_KINDS else None

    def _lock_path(self, key: str) -> Path:
        return self.root / "locks" / f"{key}.lock"

    # ------------------------------------------------------------------ main operation

    def get_or_build(
        self,
        kind: str,
        parts: dict,
        build: Callable[[Path], Any],
        *,
        rebuild: bool = False,
        label: str = "",
        fresh_after: float | None = None,
    ) -> CacheResult:
        """Return the valid entry for ``(kind, parts)``, building it with ``build(tmp_dir)`` if needed.

        ``build`` writes the artifact files (regular files, subdirectories allowed, not
        ``manifest.json``) into ``tmp_dir``. It may return ``{"uses": [{"kind": k, "key": key}, ...]}``:
        other entries this one needs when used (an emulation graph: its model's weight set); they are
        recorded in the manifest (``uses``) and pruned together with it. Other return values are ignored. An exception from
        ``build`` propagates unchanged and leaves nothing behind, except that a full disk
        (``ENOSPC``/``EDQUOT``) becomes :class:`CacheError` naming the entry.

        ``rebuild=True`` ignores an existing entry, builds, and replaces it. With
        ``fresh_after`` (a ``time.time()`` value, e.g. the test session's start shared by
        all xdist workers) an entry created at or after that time is used instead of being
        rebuilt again, so ``--trt-rebuild`` rebuilds each key once per run, not once per
        worker.
        """
        check_kind(kind)
        if fresh_after is None:
            fresh_after = self.fresh_after
        key = self.key(parts)
        entry = self.root / kind / key
        if self.read_only:
            return self._get_read_only(kind, key, parts, entry, rebuild=rebuild, label=label)

        def usable(manifest: dict | None) -> bool:
            if manifest is None:
                return False
            if not rebuild:
                return True
            created = manifest.get("created_unix")
            return fresh_after is not None and isinstance(created, (int, float)) and created >= fresh_after

        check = not rebuild or fresh_after is not None
        if check:
            t0 = time.monotonic()
            with contextlib.suppress(InvalidEntry):  # a failure is re-checked under the lock
                manifest = validate_entry(entry, kind, key, parts, self._memo(kind))
                if usable(manifest):
                    return self._hit(kind, key, parts, entry, manifest, label, 0.0, time.monotonic() - t0)

        with self._locked(key, what=f"{kind} entry {entry}") as waited:
            if check:
                t0 = time.monotonic()
                try:
                    manifest = validate_entry(entry, kind, key, parts, self._memo(kind))
                except InvalidEntry as exc:
                    manifest = None
                    if not rebuild:  # (a rebuild replaces it anyway)
                        self._drop_corrupt(kind, key, entry, label, str(exc))
                if usable(manifest):
                    return self._hit(kind, key, parts, entry, manifest, label, waited, time.monotonic() - t0,
                                     locked=True)
            result = self._build(kind, key, parts, build, entry, label, waited, use_remote=not rebuild)
            if self.max_bytes is not None:
                with contextlib.suppress(CacheError):
                    self.prune(protect=(entry,))
            return result

    def _hit(self, kind, key, parts, entry, manifest, label, waited, seconds, *, locked=False) -> CacheResult:
        touch(entry / MANIFEST)
        self._record_quietly("hit", kind, key, label or manifest.get("label", ""), round(seconds, 6),
                             waited=round(waited, 6), later=True)
        self.stats.local_hits += 1
        built = manifest.get("build_seconds")
        if isinstance(built, (int, float)):
            self.stats.seconds_saved += max(0.0, float(built) - seconds)
        if self.remote is not None and self.remote.wants_publish_check(kind, key, manifest):
            self._publish_hit(kind, key, parts, entry, manifest, label or manifest.get("label", ""), locked)
        return CacheResult(entry, key, True, 0.0, waited, kind, manifest, "local")

    def _publish_hit(self, kind, key, parts, entry, manifest, label, locked) -> None:
        """A read-write remote tier uploads a local hit that was never published (its builder was
        killed or cut off mid-upload), under the key's lock so that the entry cannot be replaced
        or evicted meanwhile; a lock held elsewhere (a build of the key) skips it this time."""
        remote = self.remote
        ctx = None if locked else self._try_lock(key, what=f"{kind} entry {entry}")
        if remote is None or (not locked and ctx is None):
            return
        try:
            if not locked and read_manifest_quietly(entry)[1] != manifest:
                return  # replaced since it was validated (a rebuild elsewhere): that one is its own builder's
            remote.ensure_published(kind, key, entry, manifest, label=label)
        except OSError:
            return  # vanished meanwhile: nothing to publish
        finally:
            if ctx is not None:
                ctx.__exit__(None, None, None)

    def _drop_corrupt(self, kind, key, entry, label, reason) -> None:
        warnings.warn(
            CacheWarning(
                f"pytest-trt cache: discarding unusable {kind} entry {entry}"
                f"{f' ({label})' if label else ''}: {reason}; rebuilding it"
            ),
            stacklevel=3,
        )
        self._record_quietly("corrupt", kind, key, label, 0.0, reason=reason, path=str(entry))
        try:
            self._discard(entry, key)
        except OSError as exc:
            raise CacheError(f"cannot remove the unusable cache entry {entry}: {why(exc)}") from exc

    def _fetch_or_build(self, remote, kind, key, parts, build, tmp, label, what) -> tuple[dict | None, Any]:
        """Fill ``tmp``: the remote tier's verified entry (returns its signed payload), else ``build(tmp)``
        (returns what it returned)."""
        try:
            # verified into tmp, or tmp left empty (a miss or a rejected entry: never loaded)
            fetched = remote.fetch(kind, key, parts, tmp, label=label) if remote is not None else None
            if fetched is None:
                return None, build(tmp)
            return fetched, None
        except OSError as exc:
            if exc.errno in NO_SPACE:
                raise CacheError(
                    f"no space left on the device while building cache {what}: {exc}. "
                    f"Nothing was stored{space_hint(exc)}"
                ) from exc
            raise

    def _build(self, kind, key, parts, build, entry, label, waited, *, use_remote=True) -> CacheResult:
        what = f"{kind} entry {entry}{f' ({label})' if label else ''}"
        remote = self.remote if use_remote else None
        try:
            tmp = self._make_tmp("build", key)
        except OSError as exc:
            raise CacheError(
                f"cannot create a build directory for cache {what}: {why(exc)}{space_hint(exc)}"
            ) from exc
        try:
            t0 = time.monotonic()
            fetched, returned = self._fetch_or_build(remote, kind, key, parts, build, tmp, label, what)
            build_seconds = time.monotonic() - t0
            uses = [{"kind": k, "key": key_} for k, key_ in uses_of(returned if fetched is None else fetched)] or None
            digests = returned.get("digests") if fetched is None and isinstance(returned, dict) else None
            try:
                origin = None
                if fetched is not None and remote is not None:  # (only the remote tier fetches)
                    origin = {"remote": remote.url, "upload_id": fetched.get("upload_id"),
                              "build_seconds": fetched.get("build_seconds"), "fetch_seconds": round(build_seconds, 6)}
                    build_seconds = float(fetched.get("build_seconds") or 0.0)
                manifest = seal_entry(tmp, kind, key, parts, label, build_seconds, origin=origin, uses=uses,
                                      digests=digests)
                manifest = self._install(tmp, entry, kind, key, parts, manifest)
            except OSError as exc:
                raise CacheError(
                    f"cannot store cache {what}: {why(exc)}. Nothing was stored{space_hint(exc)}"
                ) from exc
        except BaseException as exc:
            remove_tree(tmp)
            if isinstance(exc, Exception):
                self._record_quietly("build_failed", kind, key, label, round(time.monotonic() - t0, 6),
                                     error=type(exc).__name__)
            raise
        touch(entry / MANIFEST)
        self._record_quietly(
            "remote_hit" if fetched is not None else "build", kind, key, label,
            round(time.monotonic() - t0 if fetched is not None else build_seconds, 6), waited=round(waited, 6),
        )
        if fetched is not None:  # an existing entry was used (fetched, verified): a hit, not a build
            return CacheResult(entry, key, True, 0.0, waited, kind, manifest, "remote")
        self.stats.builds += 1
        self.stats.build_seconds += build_seconds
        if self.remote is not None:
            self.remote.publish(kind, key, entry, manifest, label=label)
        return CacheResult(entry, key, False, build_seconds, waited, kind, manifest, "built")

    def _install(self, tmp: Path, entry: Path, kind, key, parts, manifest) -> dict:
        """Rename the sealed ``tmp`` to ``entry``, replacing what is there (we hold the lock)."""
        entry.parent.mkdir(parents=True, exist_ok=True)
        if os.path.lexists(entry):  # rebuild=True, or leftovers of a corrupt entry
            self._discard(entry, key)
        try:
            os.rename(tmp, entry)
        except OSError as exc:
            if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                raise
            # Someone wrote the entry without holding the lock (a filesystem where locks do
            # not work, e.g. some network mounts): keep theirs if it is valid.
            try:
                existing = validate_entry(entry, kind, key, parts)
            except InvalidEntry:
                existing = None
            if existing is not None:
                remove_tree(tmp)
                return existing
            self._discard(entry, key)
            os.rename(tmp, entry)
        fsync_dir(entry.parent)
        return manifest

    def _get_read_only(self, kind, key, parts, entry, *, rebuild, label) -> CacheResult:
        what = f"{kind} entry {entry}{f' ({label})' if label else ''}"
        if rebuild:
            raise CacheError(
                f"cannot rebuild {what}: the cache {self.root} was opened read-only. "
                f"Drop --trt-rebuild, or use a writable --trt-cache-dir."
            )
        try:
            manifest = validate_entry(entry, kind, key, parts, self._memo(kind))
        except InvalidEntry as exc:
            raise CacheError(
                f"{what} is unusable ({exc}) and the cache {self.root} is read-only, so it cannot be "
                f"rebuilt. Repair the shared cache, or use a writable --trt-cache-dir."
            ) from None
        if manifest is None:
            raise CacheError(
                f"{what} is not in the read-only cache {self.root}. Populate it from a run with a "
                f"writable cache, or use a writable --trt-cache-dir."
            )
        self.stats.local_hits += 1
        return CacheResult(entry, key, True, 0.0, 0.0, kind, manifest, "local")

    # ------------------------------------------------------------------ validation

    def validate(self, kind: str, parts: dict) -> str | None:
        """None when the entry for ``parts`` is present and valid, else what is wrong ("missing", ...)."""
        key = self.key(parts)
        try:
            return None if validate_entry(self.root / kind / key, kind, key, parts, self._memo(kind)) is not None else "missing"
        except InvalidEntry as exc:
            return str(exc)

    # ------------------------------------------------------------------ locks, tmp, removal

    def _locked(self, key: str, *, what: str) -> contextlib.AbstractContextManager[float]:
        """Hold the key's lock; yields the seconds spent waiting (``lock_timeout``, then CacheError)."""
        return hold(self._lock_path(key), what=what, timeout=self.lock_timeout)

    def _try_lock(self, key: str, what: str) -> contextlib.AbstractContextManager[Any] | None:
        """The key's entered lock context if it can be had at once, else None (held elsewhere)."""
        return try_hold(self._lock_path(key), what=what)

    def _make_tmp(self, prefix: str, key: str) -> Path:
        tmp_root = scratch_dir(self.root)
        while True:
            path = tmp_root / f"{prefix}-{key}-{os.getpid()}-{secrets.token_hex(4)}"
            try:
                os.mkdir(path, 0o777)  # umask applies: entries are as readable as the user's files
                return path
            except FileExistsError:
                continue

    def _discard(self, path: Path, key: str) -> None:
        """Remove an entry (we hold its lock): rename it into the scratch directory (atomic), then delete it."""
        if not os.path.lexists(path):
            return
        try:
            trash = self._make_tmp("trash", key)
        except OSError:
            remove_tree(path, strict=True)
            return
        try:
            os.rename(path, trash / "entry")
        except FileNotFoundError:
            pass
        except OSError:
            remove_tree(path, strict=True)
        finally:
            remove_tree(trash)

    def collect_garbage(self, max_age: float | None = None) -> list[Path]:
        """Remove scratch items older than ``max_age`` (default ``stale_seconds``) whose builder is gone.

        Only items the cache creates are candidates, recognised by name: ``build-<key>-<pid>-<rnd>``
        and ``trash-<key>-<pid>-<rnd>`` in its scratch directory (and in ``tmp/`` of a cache written
        by pytest-trt 0.1.0), ``.pytest-trt-probe-<pid>-<rnd>`` in the root. Anything else, and
        anything behind a symbolic link, is left alone. A build directory is removed only when its
        key's lock can be taken (its builder died: the kernel released the lock); trash and probe
        leftovers are removed by age alone.
        """
        if self.read_only:
            return []
        return collect_scratch(self.root, self.stale_seconds if max_age is None else max_age, self._try_lock)

    # ------------------------------------------------------------------ listing, size, LRU

    def entries(self, kind: str | None = None) -> list[CacheEntry]:
        """Every entry directory (``<kind>/<64-hex key>``), oldest use first. Not validated."""
        out: list[CacheEntry] = []
        for kd in _subdirs(self.root, KIND_RE):
            if kd.name in RESERVED_KINDS or (kind is not None and kd.name != kind):
                continue
            for ed in _subdirs(Path(kd.path), KEY_RE):
                path = Path(ed.path)
                try:
                    size = tree_size(path)
                    last_used, manifest = read_manifest_quietly(path)
                except OSError:
                    continue  # deleted while listing
                out.append(CacheEntry(kd.name, ed.name, path, size, last_used, manifest))
        out.sort(key=lambda e: (e.last_used, e.kind, e.key))
        return out

    @property
    def marked(self) -> bool:
        """Whether the directory carries the cache's marker (:data:`MARKER`): pytest-trt created or adopted it,
        so every ``<kind>/<key>/`` with a ``manifest.json`` is its entry, and a damaged one is pruned."""
        return is_regular(self.root / MARKER)

    def size_bytes(self) -> int:
        """Bytes in all entries (what ``max_bytes`` limits; locks, scratch and events are not counted)."""
        return sum(e.size_bytes for e in self.entries())

    def prune(self, max_bytes: int | None = None, *, protect: Iterable[Path | str] = (),
              older_than: float | None = None) -> list[CacheEntry]:
        """Evict entries last used before ``older_than`` (a ``time.time()`` value), then least-recently-used
        ones until the entries total at most ``max_bytes``.

        ``max_bytes`` defaults to the cache's limit (no size limit without one). Entries that use one
        another (an emulation graph and its model's weight set: the manifest's ``uses``) are evicted
        together, as one group (:mod:`pytest_trt.cache.prune`). A group holding an entry in ``protect``,
        or one whose lock another process (or thread) holds, is skipped. Returns the evicted entries.
        """
        self._require_writable("prune")
        limit = self.max_bytes if max_bytes is None else max_bytes
        if limit is None and older_than is None:
            return []
        protected = {Path(p) for p in protect}
        # entries with pytest-trt's own manifest, and damaged ones where the directory is marked as the
        # cache's: a look-alike directory elsewhere is not the cache's to delete
        all_groups = groups(prunable(self.entries(), marked=self.marked))
        total = sum(g.size_bytes for g in all_groups)
        evicted: list[CacheEntry] = []
        for group in all_groups:
            old = older_than is not None and group.last_used < older_than
            if not old and (limit is None or total <= limit):
                continue
            if any(m.path in protected for m in group.members):
                continue
            removed = self._evict_group(group.members)
            if removed is not None:
                total -= group.size_bytes
                evicted.extend(removed)
        return evicted

    def _evict_group(self, members: list[CacheEntry]) -> list[CacheEntry] | None:
        """Remove every member under its lock; None (nothing removed) when one of them is locked."""
        held = []
        try:
            for e in members:
                ctx = self._try_lock(e.key, what=f"{e.kind} entry {e.path}")
                if ctx is None:
                    return None
                held.append(ctx)
            removed = []
            for e in members:
                try:
                    size = tree_size(e.path) if os.path.lexists(e.path) else 0
                    self._discard(e.path, e.key)
                except OSError:
                    continue
                removed.append(e)
                self.stats.evictions += 1
                self.stats.evicted_bytes += size
                self._record_quietly("evict", e.kind, e.key, e.label, 0.0, bytes=size, path=str(e.path))
            return removed
        finally:
            for ctx in reversed(held):
                ctx.__exit__(None, None, None)

    def clear(self, kind: str | None = None) -> int:
        """Delete every entry (of ``kind``) not locked by a build in progress; returns how many."""
        self._require_writable("clear")
        n = 0
        for e in self.entries(kind):
            ctx = self._try_lock(e.key, what=f"{e.kind} entry {e.path}")
            if ctx is None:
                continue
            try:
                self._discard(e.path, e.key)
                n += 1
            except OSError as exc:
                raise CacheError(f"cannot delete the cache entry {e.path}: {why(exc)}") from exc
            finally:
                ctx.__exit__(None, None, None)
        self.collect_garbage()
        return n

    def _require_writable(self, what: str) -> None:
        if self.read_only:
            raise CacheError(f"cannot {what} the cache {self.root}: it was opened read-only")

    # ------------------------------------------------------------------ events

    @property
    def _events(self) -> EventLog:
        return EventLog(self.root, read_only=self.read_only, lock_timeout=self.lock_timeout)

    def record_event(self, event: dict) -> None:
        """Append ``event`` (plus ``pid`` and ``time``) as one JSON line to ``events.jsonl``, under a lock.

        A read-only cache records nothing.
        """
        self._events.record(event)

    def _record_quietly(self, event: str, kind: str, key: str, label: str, seconds: float, *, later: bool = False,
                        **more: Any) -> None:
        """Record an event of one entry; failing to log it never fails the operation (diagnostics).
        ``later``: a hit, appended with the next batch (:mod:`~pytest_trt.cache.eventlog`)."""
        data = {"event": event, "kind": kind, "key": key, "label": label, "seconds": seconds, **more}
        if later:
            with contextlib.suppress(CacheError, OSError):
                self._events.record_later(data)
        else:
            self._events.record_quietly(data)

    def flush_events(self) -> None:
        """Append the hits this process still keeps to ``events.jsonl``, of this cache and of any
        other opened in this process (hits are appended in batches: :mod:`~pytest_trt.cache.eventlog`)."""
        flush_pending()

    def events(self, since: float | None = None) -> list[dict]:
        """The recorded events, oldest first (``events.1.jsonl`` then ``events.jsonl``); this
        process's pending hits are appended first.

        ``since``: only events whose ``time`` is at least this ``time.time()`` value.
        Unparseable lines (a writer killed mid-line) are skipped.
        """
        return self._events.read(since)


def _subdirs(path: Path, name_re: re.Pattern[str]) -> list[os.DirEntry[str]]:
    """The real subdirectories (no symlinks) of ``path`` whose names match, sorted; [] if unreadable."""
    try:
        items = sorted(os.scandir(path), key=lambda d: d.name)
    except OSError:
        return []
    return [d for d in items if name_re.match(d.name) and d.is_dir(follow_symlinks=False)]
