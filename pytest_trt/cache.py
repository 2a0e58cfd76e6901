"""Content-addressed artifact cache: engines, realized models, FP32 baselines, timing caches.

TensorRT builds take minutes and pytest-xdist runs several workers that may want the
same engine at once. :class:`ArtifactCache` stores every artifact under the sha256 of
the JSON of what produced it (its *parts*: model hash, plan fingerprint, library
versions, device, build config) and builds each key exactly once, whatever the number
of processes asking.

On-disk layout (``<root>`` is the directory given, e.g. ``--trt-cache-dir``)::

    <root>/
      CACHEDIR.TAG                 marks the directory as a cache for backup tools
      <kind>/<key>/                one entry: the built files (subdirectories allowed)
        manifest.json              written last: format_version, kind, key, parts,
                                   files {name: {sha256, size}}, created, build_seconds,
                                   label, pytest_trt; its mtime is the entry's last use
      locks/<key>.lock             per-key lock (filelock); empty files, never deleted
      locks/events.lock            guards events.jsonl
      .pytest-trt-probe-*          write probe at open (removed at once; by GC if killed)
      tmp/build-<key>-<pid>-<rnd>/ a build in progress (or one that was killed)
      tmp/trash-<key>-<pid>-<rnd>/ an entry being deleted
      events.jsonl                 one JSON line per build/hit/corrupt/evict event
      events.1.jsonl               the previous events file, once events.jsonl passed 16 MiB

Guarantees:

* ``build(tmp_dir)`` writes into a fresh directory under ``<root>/tmp`` (same
  filesystem); the cache hashes every file, fsyncs, writes ``manifest.json`` last and
  renames the directory into place. An entry is therefore either complete or absent:
  a build that raises, a KeyboardInterrupt or a ``kill -9`` leaves at most a
  ``tmp/build-*`` directory, which is never read as an entry and is removed when a
  later :class:`ArtifactCache` is opened (older than ``stale_seconds`` *and* its key's
  lock not held, i.e. its builder is dead).
* Writers of an entry (build, rebuild, corrupt-entry removal, eviction, clear) hold the
  key's lock, so N processes asking for one key build it once; the others wait and then
  load it (``CacheResult.waited_seconds``).
* A hit is validated in full: manifest parses, ``format_version``/``kind``/``key``/``parts``
  equal the request, the entry holds exactly the files the manifest lists (no more, no
  symlinks), each with the recorded size and sha256. So only files the cache wrote
  itself are returned (an engine plan is code-like). Anything else warns
  :class:`~pytest_trt.errors.CacheWarning` naming the entry and the fault, deletes the
  entry and rebuilds. The first check runs without the lock (parallel readers); a failed
  check is repeated under the lock before anything is deleted.

Decisions:

* Read-only caches (e.g. a pre-populated directory shared by CI runners): opening an
  unwritable root raises :class:`~pytest_trt.errors.CacheError` unless
  ``read_only=True`` is passed. A read-only cache serves valid hits (validated in full,
  no lock, no touch, no events) and raises ``CacheError`` for a miss, a corrupt entry or
  ``rebuild=True``: a silently slow, never-stored build would hide the misconfiguration.
* LRU: the last use of an entry is its ``manifest.json`` mtime, set to the current time
  (``os.utime``, nanoseconds) when the entry is stored and on every hit. No extra file
  (which the "exactly the listed files" check would have to exempt) and no dependence on
  atime (``noatime`` mounts). After storing an entry, when ``max_bytes`` is set, entries
  are evicted oldest-use first until the entries total at most ``max_bytes``; never the
  entry just stored, never one whose lock another process holds. Eviction cannot see a
  process that holds a returned path without the lock; the entry it just got is the most
  recently used one, and files it already opened stay readable on POSIX.

Remote tier: with ``remote=`` (a :class:`~pytest_trt.remote_cache.RemoteTier`, ``--trt-remote-cache``)
a local miss first asks the remote cache. Its entry is downloaded into the build directory and
verified there (Ed25519 signature of its manifest, size and sha256 of every file) before the
cache seals and installs it like a build; a rejected download is deleted from the build
directory before the real build runs, so it is never loaded. A built entry is then given to
the tier, which uploads it when it holds the signing key. See :mod:`pytest_trt.remote_cache`.

The cache trusts whoever can write its directory: a writer that forges a consistent
manifest is not detected. Keep shared cache directories writable only by trusted users.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import secrets
import shutil
import stat
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ._version import __version__
from .errors import CacheError, CacheWarning, UsageError

__all__ = [
    "FORMAT_VERSION",
    "ArtifactCache",
    "CacheEntry",
    "CacheResult",
    "default_cache_dir",
]

#: Version of the entry layout and manifest. Entries of another version are rebuilt.
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
EVENTS = "events.jsonl"
EVENTS_OLD = "events.1.jsonl"
#: events.jsonl is rotated to events.1.jsonl past this size.
EVENTS_MAX_BYTES = 16 * 1024 * 1024
#: A tmp/ item older than this (and, for a build directory, whose lock is free) is garbage.
STALE_SECONDS = 600.0

_RESERVED_KINDS = frozenset({"locks", "tmp"})
_KIND_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")
_KEY_RE = re.compile(r"^[0-9a-f]{64}$")
_HEX64_RE = _KEY_RE
_NO_SPACE = frozenset(e for e in (errno.ENOSPC, getattr(errno, "EDQUOT", None)) if e is not None)
_CHUNK = 1 << 20
_CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by pytest-trt.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n"
)
_PROBE_PREFIX = ".pytest-trt-probe-"
_HINT_DIR = "Pass --trt-cache-dir=DIR (or set PYTEST_TRT_CACHE_DIR) to use a writable directory"

# Lock paths held by the current thread: re-entering the same key from inside its own
# build would deadlock on flock (a second descriptor of the same process), so it is an error.
_HELD = threading.local()


def default_cache_dir() -> Path:
    """``$PYTEST_TRT_CACHE_DIR``, else ``$XDG_CACHE_HOME/pytest-trt``, else ``~/.cache/pytest-trt``.

    On Windows without those variables: ``%LOCALAPPDATA%\\pytest-trt\\Cache``.
    """
    env = os.environ.get("PYTEST_TRT_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):  # the XDG spec says relative values are to be ignored
        return Path(xdg) / "pytest-trt"
    if os.name == "nt" and os.environ.get("LOCALAPPDATA"):
        return Path(os.environ["LOCALAPPDATA"]) / "pytest-trt" / "Cache"
    try:
        home = Path.home()
    except (RuntimeError, KeyError) as exc:
        raise CacheError(
            f"cannot find a home directory for the pytest-trt cache ({exc}). {_HINT_DIR}."
        ) from exc
    return home / ".cache" / "pytest-trt"


def _canonical(parts: Any) -> str:
    try:
        return json.dumps(parts, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise UsageError(
            f"cache key parts must be plain JSON data (dict, list, str, int, float, bool, None; "
            f"no NaN): {exc}"
        ) from exc


@dataclass(frozen=True)
class CacheResult:
    """What :meth:`ArtifactCache.get_or_build` returns.

    Attributes:
        path: the entry directory ``<root>/<kind>/<key>``; the artifact files are inside.
        key: the content key (sha256 of the canonical JSON of the parts).
        cache_hit: True when an existing valid entry was used (a local hit, or one fetched and
            verified from the remote tier: see ``source``), False when this call built it.
        build_seconds: seconds ``build`` ran in this call (0.0 on a hit; the original build
            time is ``manifest["build_seconds"]``).
        waited_seconds: seconds spent waiting for another process holding the key's lock.
        kind: the entry kind (``engine``, ``baseline``, ...).
        manifest: the entry's manifest.
    """

    path: Path
    key: str
    cache_hit: bool
    build_seconds: float
    waited_seconds: float
    kind: str = ""
    manifest: dict = field(default_factory=dict, repr=False, compare=False)
    #: where the entry came from: ``local`` (a hit), ``remote`` (fetched and verified from the
    #: remote tier on a local miss), ``built`` (built by this call)
    source: str = ""


@dataclass(frozen=True)
class CacheEntry:
    """One entry directory as :meth:`ArtifactCache.entries` lists it (not validated)."""

    kind: str
    key: str
    path: Path
    size_bytes: int
    last_used: float
    manifest: dict | None = field(default=None, repr=False, compare=False)

    @property
    def label(self) -> str:
        return str((self.manifest or {}).get("label", ""))

    @property
    def created(self) -> str | None:
        return (self.manifest or {}).get("created")

    @property
    def build_seconds(self) -> float | None:
        return (self.manifest or {}).get("build_seconds")

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "key": self.key,
            "path": str(self.path),
            "size_bytes": self.size_bytes,
            "last_used": self.last_used,
            "label": self.label,
            "created": self.created,
            "build_seconds": self.build_seconds,
            "has_manifest": self.manifest is not None,
        }


class _Invalid(Exception):
    """Internal: an entry failed validation; the message says why."""


class ArtifactCache:
    """A content-addressed, process-safe artifact cache under ``root``.

    Args:
        root: the cache directory; created when missing.
        max_bytes: size limit of all entries together, enforced by LRU eviction after
            each store; None for no limit.
        read_only: serve hits from an existing cache without writing anything; a miss
            raises :class:`CacheError`. Without it an unwritable root raises at once.
        lock_timeout: seconds to wait for another process building the same key before
            raising :class:`CacheError`; None waits as long as the build takes.
        stale_seconds: age after which a leftover ``tmp/`` item of a dead builder is removed.
        remote: a :class:`~pytest_trt.remote_cache.RemoteTier` asked on a local miss (its
            verified files are sealed and installed like a build) and given every entry this
            cache builds (a read-write tier uploads it). Not with ``read_only``.

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
        remote=None,
    ):
        if max_bytes is not None and (not isinstance(max_bytes, int) or max_bytes < 0):
            raise UsageError(f"cache max_bytes must be a non-negative integer or None, not {max_bytes!r}")
        self.root = Path(root).expanduser().absolute()
        self.max_bytes = max_bytes
        self.read_only = bool(read_only)
        self.lock_timeout = lock_timeout
        self.stale_seconds = stale_seconds
        self.remote = remote
        #: what this process's cache did (hits, builds, remote traffic): a
        #: :class:`~pytest_trt.remote_cache.CacheStats`, shared with the remote tier
        self.stats = remote.stats if remote is not None else _new_stats()
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
                    f"the read-only pytest-trt cache directory {self.root} does not exist. "
                    f"Point --trt-cache-dir=DIR at an existing cache, or open a writable one."
                )
            return
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CacheError(
                f"cannot create the pytest-trt cache directory {self.root}: {_why(exc)}. {_HINT_DIR}."
            ) from exc
        try:
            (self.root / "locks").mkdir(exist_ok=True)
            (self.root / "tmp").mkdir(exist_ok=True)
            # Entries, kind directories and events.jsonl live in the root itself: probe it (a
            # real write, since os.access() says yes to root on a chmod-protected directory).
            for where in (self.root, self.root / "tmp"):
                probe = where / f"{_PROBE_PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
                fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
                os.close(fd)
                os.unlink(probe)
            tag = self.root / "CACHEDIR.TAG"
            if not tag.exists():
                with contextlib.suppress(FileExistsError):  # another process was first
                    _write_new(tag, _CACHEDIR_TAG.encode())
        except OSError as exc:
            raise CacheError(
                f"the pytest-trt cache directory {self.root} is not writable: {_why(exc)}. {_HINT_DIR}, "
                f"or use the entries it holds read-only (pytest --trt-cache-read-only; "
                f"in Python ArtifactCache(..., read_only=True))."
            ) from exc
        self.collect_garbage()

    def __repr__(self) -> str:
        ro = ", read_only=True" if self.read_only else ""
        return f"ArtifactCache({str(self.root)!r}, max_bytes={self.max_bytes!r}{ro})"

    # ------------------------------------------------------------------ keys and paths

    @staticmethod
    def key(parts: dict) -> str:
        """sha256 (hex) of the canonical JSON (sorted keys, no spaces) of ``parts``."""
        if not isinstance(parts, dict):
            raise UsageError(f"cache key parts must be a dict, not {type(parts).__name__}")
        return hashlib.sha256(_canonical(parts).encode("utf-8")).hexdigest()

    def entry_path(self, kind: str, parts: dict) -> Path:
        """Where the entry for ``parts`` lives (whether or not it exists)."""
        _check_kind(kind)
        return self.root / kind / self.key(parts)

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
        ``manifest.json``) into ``tmp_dir``; its return value is ignored. An exception from
        ``build`` propagates unchanged and leaves nothing behind, except that a full disk
        (``ENOSPC``/``EDQUOT``) becomes :class:`CacheError` naming the entry.

        ``rebuild=True`` ignores an existing entry, builds, and replaces it. With
        ``fresh_after`` (a ``time.time()`` value, e.g. the test session's start shared by
        all xdist workers) an entry created at or after that time is used instead of being
        rebuilt again, so ``--trt-rebuild`` rebuilds each key once per run, not once per
        worker.
        """
        _check_kind(kind)
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
            with contextlib.suppress(_Invalid):  # a failure is re-checked under the lock
                manifest = self._validate(entry, kind, key, parts)
                if usable(manifest):
                    return self._hit(kind, key, entry, manifest, label, 0.0, time.monotonic() - t0)

        with self._locked(key, what=f"{kind} entry {entry}") as waited:
            if check:
                t0 = time.monotonic()
                try:
                    manifest = self._validate(entry, kind, key, parts)
                except _Invalid as exc:
                    manifest = None
                    if not rebuild:  # (a rebuild replaces it anyway)
                        self._drop_corrupt(kind, key, entry, label, str(exc))
                if usable(manifest):
                    return self._hit(kind, key, entry, manifest, label, waited, time.monotonic() - t0)
            result = self._build(kind, key, parts, build, entry, label, waited, use_remote=not rebuild)
            if self.max_bytes is not None:
                with contextlib.suppress(CacheError):
                    self.prune(protect=(entry,))
            return result

    def _hit(self, kind, key, entry, manifest, label, waited, seconds) -> CacheResult:
        _touch(entry / MANIFEST)
        self._record_quietly(
            {
                "event": "hit",
                "kind": kind,
                "key": key,
                "label": label or manifest.get("label", ""),
                "seconds": round(seconds, 6),
                "waited": round(waited, 6),
            }
        )
        self.stats.local_hits += 1
        built = manifest.get("build_seconds")
        if isinstance(built, (int, float)):
            self.stats.seconds_saved += max(0.0, float(built) - seconds)
        return CacheResult(entry, key, True, 0.0, waited, kind, manifest, "local")

    def _drop_corrupt(self, kind, key, entry, label, reason) -> None:
        warnings.warn(
            CacheWarning(
                f"pytest-trt cache: discarding unusable {kind} entry {entry}"
                f"{f' ({label})' if label else ''}: {reason}; rebuilding it"
            ),
            stacklevel=3,
        )
        self._record_quietly(
            {
                "event": "corrupt",
                "kind": kind,
                "key": key,
                "label": label,
                "seconds": 0.0,
                "reason": reason,
                "path": str(entry),
            }
        )
        try:
            self._discard(entry, key)
        except OSError as exc:
            raise CacheError(f"cannot remove the unusable cache entry {entry}: {_why(exc)}") from exc

    def _build(self, kind, key, parts, build, entry, label, waited, *, use_remote=True) -> CacheResult:
        what = f"{kind} entry {entry}{f' ({label})' if label else ''}"
        fetched: dict | None = None
        try:
            tmp = self._make_tmp("build", key)
        except OSError as exc:
            raise CacheError(
                f"cannot create a build directory for cache {what}: {_why(exc)}{_space_hint(exc)}"
            ) from exc
        try:
            t0 = time.monotonic()
            try:
                if self.remote is not None and use_remote:
                    # verified into tmp, or tmp left empty (a miss or a rejected entry: never loaded)
                    fetched = self.remote.fetch(kind, key, parts, tmp, label=label)
                if fetched is None:
                    build(tmp)
            except OSError as exc:
                if exc.errno in _NO_SPACE:
                    raise CacheError(
                        f"no space left on the device while building cache {what}: {exc}. "
                        f"Nothing was stored{_space_hint(exc)}"
                    ) from exc
                raise
            build_seconds = time.monotonic() - t0
            try:
                origin = None
                if fetched is not None:
                    origin = {"remote": self.remote.url, "upload_id": fetched.get("upload_id"),
                              "build_seconds": fetched.get("build_seconds"), "fetch_seconds": round(build_seconds, 6)}
                    build_seconds = float(fetched.get("build_seconds") or 0.0)
                manifest = self._seal(tmp, kind, key, parts, label, build_seconds, origin=origin)
                manifest = self._install(tmp, entry, kind, key, parts, manifest)
            except OSError as exc:
                raise CacheError(
                    f"cannot store cache {what}: {_why(exc)}. Nothing was stored{_space_hint(exc)}"
                ) from exc
        except BaseException as exc:
            _remove_tree(tmp)
            if isinstance(exc, Exception):
                self._record_quietly(
                    {
                        "event": "build_failed",
                        "kind": kind,
                        "key": key,
                        "label": label,
                        "seconds": round(time.monotonic() - t0, 6),
                        "error": type(exc).__name__,
                    }
                )
            raise
        _touch(entry / MANIFEST)
        self._record_quietly(
            {
                "event": "remote_hit" if fetched is not None else "build",
                "kind": kind,
                "key": key,
                "label": label,
                "seconds": round(time.monotonic() - t0 if fetched is not None else build_seconds, 6),
                "waited": round(waited, 6),
            }
        )
        if fetched is not None:  # an existing entry was used (fetched, verified): a hit, not a build
            return CacheResult(entry, key, True, 0.0, waited, kind, manifest, "remote")
        self.stats.builds += 1
        self.stats.build_seconds += build_seconds
        if self.remote is not None:
            self.remote.publish(kind, key, parts, entry, manifest, label=label)
        return CacheResult(entry, key, False, build_seconds, waited, kind, manifest, "built")

    def _seal(self, tmp: Path, kind, key, parts, label, build_seconds, origin=None) -> dict:
        """Hash and fsync what ``build`` wrote, then write the manifest (last)."""
        found, dirs, odd = _scan(tmp)
        where = f"the build of {kind} entry {key[:12]}"
        if odd:
            raise UsageError(
                f"{where} left {', '.join(repr(r) for r, _ in odd)} in its directory: only regular "
                f"files (and directories) can be cached, not symlinks or special files"
            )
        if MANIFEST in found:
            raise UsageError(f"{where} wrote {MANIFEST!r}, a name the cache reserves for itself")
        if not found:
            raise UsageError(
                f"{where} wrote no files into {tmp}; build(tmp_dir) must write the artifact there"
            )
        files = {}
        for rel in sorted(found):
            digest, size = _hash_file(found[rel], sync=True)
            files[rel] = {"sha256": digest, "size": size}
        manifest = {
            "format_version": FORMAT_VERSION,
            "kind": kind,
            "key": key,
            "parts": json.loads(_canonical(parts)),
            "files": files,
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "created_unix": time.time(),
            "build_seconds": round(build_seconds, 6),
            "label": label,
            "pytest_trt": __version__,
        }
        if origin is not None:
            manifest["origin"] = origin  # fetched from the remote tier: where, and which upload
        _write_new(
            tmp / MANIFEST, (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode(), sync=True
        )
        for rel in sorted(dirs, key=len, reverse=True):
            _fsync_dir(tmp / rel)
        _fsync_dir(tmp)
        return manifest

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
                existing = self._validate(entry, kind, key, parts)
            except _Invalid:
                existing = None
            if existing is not None:
                _remove_tree(tmp)
                return existing
            self._discard(entry, key)
            os.rename(tmp, entry)
        _fsync_dir(entry.parent)
        return manifest

    def _get_read_only(self, kind, key, parts, entry, *, rebuild, label) -> CacheResult:
        what = f"{kind} entry {entry}{f' ({label})' if label else ''}"
        if rebuild:
            raise CacheError(
                f"cannot rebuild {what}: the cache {self.root} was opened read-only. "
                f"Drop --trt-rebuild, or use a writable --trt-cache-dir."
            )
        try:
            manifest = self._validate(entry, kind, key, parts)
        except _Invalid as exc:
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
            return None if self._validate(self.root / kind / key, kind, key, parts) is not None else "missing"
        except _Invalid as exc:
            return str(exc)

    def _validate(self, entry: Path, kind: str, key: str, parts: dict) -> dict | None:
        """The manifest of a valid entry; None when there is no entry; raises _Invalid(reason)."""
        try:
            st = os.lstat(entry)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise _Invalid(f"cannot stat the entry: {_why(exc)}") from None
        if not stat.S_ISDIR(st.st_mode):
            raise _Invalid("the entry is not a directory (a symlink or file not written by the cache)")
        mpath = entry / MANIFEST
        try:
            mst = os.lstat(mpath)
        except FileNotFoundError:
            raise _Invalid(f"it has no {MANIFEST} (an interrupted or foreign write)") from None
        except OSError as exc:
            raise _Invalid(f"cannot read {MANIFEST}: {_why(exc)}") from None
        if not stat.S_ISREG(mst.st_mode):
            raise _Invalid(f"{MANIFEST} is not a regular file")
        try:
            manifest = json.loads(mpath.read_bytes().decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            raise _Invalid(f"{MANIFEST} is not valid JSON (truncated or corrupt)") from None
        except OSError as exc:
            raise _Invalid(f"cannot read {MANIFEST}: {_why(exc)}") from None
        if not isinstance(manifest, dict):
            raise _Invalid(f"{MANIFEST} is not a JSON object")
        version = manifest.get("format_version")
        if version != FORMAT_VERSION:
            raise _Invalid(
                f"format_version {version!r} in {MANIFEST}; pytest-trt {__version__} writes {FORMAT_VERSION}"
            )
        if manifest.get("kind") != kind:
            raise _Invalid(f"{MANIFEST} says kind {manifest.get('kind')!r}, expected {kind!r}")
        if manifest.get("key") != key:
            raise _Invalid(
                f"{MANIFEST} says key {str(manifest.get('key'))[:16]!r}, the entry is {key[:16]!r}"
            )
        try:
            same_parts = _canonical(manifest.get("parts")) == _canonical(parts)
        except UsageError:
            same_parts = False
        if not same_parts:
            raise _Invalid(
                f"its parts differ from the requested ones: {_parts_diff(manifest.get('parts'), parts)}"
            )
        files = manifest.get("files")
        if not isinstance(files, dict) or not files:
            raise _Invalid(f"{MANIFEST} lists no files")
        for name, meta in files.items():
            if (
                not _safe_rel(name)
                or name == MANIFEST
                or not isinstance(meta, dict)
                or not isinstance(meta.get("size"), int)
                or not isinstance(meta.get("sha256"), str)
                or not _HEX64_RE.match(meta["sha256"])
            ):
                raise _Invalid(f"{MANIFEST} has a malformed file record {name!r}")
        try:
            found, dirs, odd = _scan(entry)
        except OSError as exc:
            raise _Invalid(f"cannot list the entry: {_why(exc)}") from None
        if odd:
            raise _Invalid(
                "it holds "
                + ", ".join(f"{r!r} ({what})" for r, what in odd)
                + ", which the cache never writes"
            )
        found.pop(MANIFEST, None)
        missing = sorted(set(files) - set(found))
        if missing:
            raise _Invalid(f"file {missing[0]!r} listed in {MANIFEST} is missing")
        extra = sorted(set(found) - set(files))
        expected_dirs = {p for name in files for p in _parents(name)}
        extra += sorted(d + "/" for d in dirs - expected_dirs)
        if extra:
            raise _Invalid(f"it holds file(s) not listed in {MANIFEST} (foreign): {', '.join(extra[:5])}")
        for name in sorted(files):
            try:
                size = os.lstat(found[name]).st_size
            except OSError as exc:
                raise _Invalid(f"cannot stat {name!r}: {_why(exc)}") from None
            if size != files[name]["size"]:
                raise _Invalid(
                    f"{name!r} has {size} bytes, {MANIFEST} says {files[name]['size']} (truncated?)"
                )
        for name in sorted(files):
            try:
                digest, _ = _hash_file(found[name])
            except OSError as exc:
                raise _Invalid(f"cannot read {name!r}: {_why(exc)}") from None
            if digest != files[name]["sha256"]:
                raise _Invalid(
                    f"checksum mismatch in {name!r} (sha256 {digest[:16]}..., {MANIFEST} says "
                    f"{files[name]['sha256'][:16]}...)"
                )
        return manifest

    # ------------------------------------------------------------------ locks, tmp, removal

    @contextlib.contextmanager
    def _locked(self, key: str, *, what: str, try_once: bool = False) -> Iterator[float]:
        """Hold the key's lock; yields the seconds spent waiting. ``try_once``: raise filelock.Timeout if held."""
        import filelock

        path = self._lock_path(key)
        held = _held()
        if str(path) in held:
            raise UsageError(
                f"the cache lock of {what} is already held by this thread: get_or_build() was called "
                f"for the same key from inside its own build (or eviction)"
            )
        timeout = 0 if try_once else (-1 if self.lock_timeout is None else self.lock_timeout)
        lock = filelock.FileLock(str(path), timeout=timeout)
        t0 = time.monotonic()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            lock.acquire()
        except filelock.Timeout:
            if try_once:
                raise
            raise CacheError(
                f"timed out after {timeout:g}s waiting for the lock {path} of {what}: another process "
                f"holds it (a build that is still running, or a hung process)"
            ) from None
        except OSError as exc:
            raise CacheError(f"cannot take the lock {path} of {what}: {_why(exc)}{_space_hint(exc)}") from exc
        waited = time.monotonic() - t0
        held.add(str(path))
        try:
            yield waited
        finally:
            held.discard(str(path))
            lock.release()

    def _try_lock(self, key: str, what: str):
        """The key's lock context if it can be had at once, else None (held elsewhere)."""
        import filelock

        ctx = self._locked(key, what=what, try_once=True)
        try:
            ctx.__enter__()
        except (filelock.Timeout, UsageError, CacheError):
            return None
        return ctx

    def _make_tmp(self, prefix: str, key: str) -> Path:
        tmp_root = self.root / "tmp"
        tmp_root.mkdir(parents=True, exist_ok=True)
        while True:
            path = tmp_root / f"{prefix}-{key}-{os.getpid()}-{secrets.token_hex(4)}"
            try:
                os.mkdir(path, 0o777)  # umask applies: entries are as readable as the user's files
                return path
            except FileExistsError:
                continue

    def _discard(self, path: Path, key: str) -> None:
        """Remove an entry (we hold its lock): rename it into tmp/ (atomic), then delete it there."""
        if not os.path.lexists(path):
            return
        try:
            trash = self._make_tmp("trash", key)
        except OSError:
            _remove_tree(path, strict=True)
            return
        try:
            os.rename(path, trash / "entry")
        except FileNotFoundError:
            pass
        except OSError:
            _remove_tree(path, strict=True)
        finally:
            _remove_tree(trash)

    def collect_garbage(self, max_age: float | None = None) -> list[Path]:
        """Remove ``tmp/`` items older than ``max_age`` (default ``stale_seconds``) whose builder is gone.

        A build directory is removed only when its key's lock can be taken (its builder died:
        the kernel released the lock); trash and write-probe leftovers are removed by age alone.
        """
        if self.read_only:
            return []
        max_age = self.stale_seconds if max_age is None else max_age
        removed = []
        now = time.time()
        items = []
        for where in (self.root / "tmp", self.root):
            with contextlib.suppress(OSError):
                items += [
                    i for i in os.scandir(where) if where != self.root or i.name.startswith(_PROBE_PREFIX)
                ]
        for item in items:
            try:
                age = now - item.stat(follow_symlinks=False).st_mtime
            except OSError:
                continue
            if age < max_age:
                continue
            parts = item.name.split("-")
            if parts[0] == "build" and len(parts) >= 2 and _KEY_RE.match(parts[1]):
                ctx = self._try_lock(parts[1], what=f"stale build directory {item.path}")
                if ctx is None:
                    continue  # its builder is alive
                try:
                    _remove_tree(Path(item.path))
                finally:
                    ctx.__exit__(None, None, None)
            else:
                _remove_tree(Path(item.path))
            removed.append(Path(item.path))
        return removed

    # ------------------------------------------------------------------ listing, size, LRU

    def entries(self, kind: str | None = None) -> list[CacheEntry]:
        """Every entry directory (``<kind>/<64-hex key>``), oldest use first. Not validated."""
        out = []
        try:
            kinds = sorted(os.scandir(self.root), key=lambda d: d.name)
        except OSError:
            return out
        for kd in kinds:
            if (
                kd.name in _RESERVED_KINDS
                or not _KIND_RE.match(kd.name)
                or not kd.is_dir(follow_symlinks=False)
            ):
                continue
            if kind is not None and kd.name != kind:
                continue
            try:
                keys = sorted(os.scandir(kd.path), key=lambda d: d.name)
            except OSError:
                continue
            for ed in keys:
                if not _KEY_RE.match(ed.name) or not ed.is_dir(follow_symlinks=False):
                    continue
                path = Path(ed.path)
                try:
                    size = _tree_size(path)
                    manifest = None
                    try:
                        last_used = os.lstat(path / MANIFEST).st_mtime
                        with contextlib.suppress(ValueError, UnicodeDecodeError):
                            manifest = json.loads((path / MANIFEST).read_bytes().decode("utf-8"))
                        if not isinstance(manifest, dict):
                            manifest = None
                    except FileNotFoundError:
                        last_used = os.lstat(path).st_mtime
                except OSError:
                    continue  # deleted while listing
                out.append(CacheEntry(kd.name, ed.name, path, size, last_used, manifest))
        out.sort(key=lambda e: (e.last_used, e.kind, e.key))
        return out

    def size_bytes(self) -> int:
        """Bytes in all entries (what ``max_bytes`` limits; locks, tmp/ and events are not counted)."""
        return sum(e.size_bytes for e in self.entries())

    def prune(self, max_bytes: int | None = None, *, protect=()) -> list[CacheEntry]:
        """Evict least-recently-used entries until the entries total at most ``max_bytes``.

        ``max_bytes`` defaults to the cache's limit (nothing happens without one). Entries in
        ``protect`` and entries whose lock another process (or thread) holds are skipped.
        Returns the evicted entries.
        """
        self._require_writable("prune")
        limit = self.max_bytes if max_bytes is None else max_bytes
        if limit is None:
            return []
        protect = {Path(p) for p in protect}
        entries = self.entries()
        total = sum(e.size_bytes for e in entries)
        evicted = []
        for e in entries:
            if total <= limit:
                break
            if e.path in protect:
                continue
            ctx = self._try_lock(e.key, what=f"{e.kind} entry {e.path}")
            if ctx is None:
                continue
            try:
                if not os.path.lexists(e.path):
                    total -= e.size_bytes
                    continue
                size = _tree_size(e.path)
                self._discard(e.path, e.key)
            except OSError:
                continue
            finally:
                ctx.__exit__(None, None, None)
            total -= size
            evicted.append(e)
            self._record_quietly(
                {
                    "event": "evict",
                    "kind": e.kind,
                    "key": e.key,
                    "label": e.label,
                    "seconds": 0.0,
                    "bytes": size,
                    "path": str(e.path),
                }
            )
        return evicted

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
                raise CacheError(f"cannot delete the cache entry {e.path}: {_why(exc)}") from exc
            finally:
                ctx.__exit__(None, None, None)
        self.collect_garbage()
        return n

    def _require_writable(self, what: str) -> None:
        if self.read_only:
            raise CacheError(f"cannot {what} the cache {self.root}: it was opened read-only")

    # ------------------------------------------------------------------ events

    def record_event(self, event: dict) -> None:
        """Append ``event`` (plus ``pid`` and ``time``) as one JSON line to ``events.jsonl``, under a lock.

        A read-only cache records nothing.
        """
        if self.read_only:
            return
        line = json.dumps({"pid": os.getpid(), "time": time.time(), **event}, sort_keys=True, default=str)
        data = (line.replace("\n", " ") + "\n").encode("utf-8")
        path = self.root / EVENTS
        with self._locked("events", what="the events log"):
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
                raise CacheError(f"cannot append to the cache events log {path}: {_why(exc)}") from exc

    def _record_quietly(self, event: dict) -> None:
        # Events are diagnostics: failing to log one must not fail a build that succeeded.
        with contextlib.suppress(CacheError, OSError):
            self.record_event(event)

    def events(self, since: float | None = None) -> list[dict]:
        """The recorded events, oldest first (``events.1.jsonl`` then ``events.jsonl``).

        ``since``: only events whose ``time`` is at least this ``time.time()`` value.
        Unparseable lines (a writer killed mid-line) are skipped.
        """
        ctx = contextlib.nullcontext() if self.read_only else self._locked("events", what="the events log")
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


# ---------------------------------------------------------------------- helpers


def _new_stats():
    from .remote_cache import CacheStats  # (a small module; imports nothing heavy)

    return CacheStats()


def _check_kind(kind: str) -> None:
    if not isinstance(kind, str) or not _KIND_RE.match(kind) or kind in _RESERVED_KINDS:
        raise UsageError(
            f"invalid cache kind {kind!r}: use a short lowercase name like 'engine' or 'baseline' "
            f"([a-z0-9][a-z0-9_.-]*, not {' or '.join(sorted(_RESERVED_KINDS))})"
        )


def _held() -> set:
    held = getattr(_HELD, "paths", None)
    if held is None:
        held = _HELD.paths = set()
    return held


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _space_hint(exc: OSError) -> str:
    if getattr(exc, "errno", None) in _NO_SPACE:
        return (
            ". The disk is full: free space, lower the cache size limit, or point --trt-cache-dir=DIR "
            "to a larger disk"
        )
    return ""


def _safe_rel(name: Any) -> bool:
    """A normalized relative POSIX path inside the entry."""
    if not isinstance(name, str) or not name or name.startswith("/") or "\\" in name or "\x00" in name:
        return False
    return all(p not in ("", ".", "..") for p in name.split("/"))


def _parents(name: str) -> list[str]:
    bits = name.split("/")[:-1]
    return ["/".join(bits[: i + 1]) for i in range(len(bits))]


def _scan(root: Path) -> tuple[dict[str, Path], set[str], list[tuple[str, str]]]:
    """Regular files {rel: path}, directories {rel}, and anything else [(rel, what)] under ``root``."""
    files: dict[str, Path] = {}
    dirs: set[str] = set()
    odd: list[tuple[str, str]] = []
    stack = [("", str(root))]
    while stack:
        prefix, path = stack.pop()
        with os.scandir(path) as it:
            for item in it:
                rel = prefix + item.name
                if item.is_symlink():
                    odd.append((rel, "a symlink"))
                elif item.is_dir(follow_symlinks=False):
                    dirs.add(rel)
                    stack.append((rel + "/", item.path))
                elif item.is_file(follow_symlinks=False):
                    files[rel] = Path(item.path)
                else:
                    odd.append((rel, "a special file"))
    return files, dirs, sorted(odd)


def _hash_file(path: Path, *, sync: bool = False) -> tuple[str, int]:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        h = hashlib.sha256()
        size = 0
        while True:
            chunk = os.read(fd, _CHUNK)
            if not chunk:
                break
            h.update(chunk)
            size += len(chunk)
        if sync:
            try:
                os.fsync(fd)
            except OSError as exc:  # platforms that cannot fsync a read-only descriptor
                if exc.errno not in (errno.EBADF, errno.EINVAL):
                    raise
        return h.hexdigest(), size
    finally:
        os.close(fd)


def _write_new(path: Path, data: bytes, *, sync: bool = False) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: Path) -> None:
    if os.name == "nt":
        return
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno in _NO_SPACE or exc.errno == errno.EIO:
            raise
    finally:
        os.close(fd)


def _touch(path: Path) -> None:
    now = time.time_ns()
    with contextlib.suppress(OSError):
        os.utime(path, ns=(now, now))  # (a validated manifest is a regular file, not a symlink)


def _tree_size(path: Path) -> int:
    total = 0
    stack = [str(path)]
    while stack:
        with os.scandir(stack.pop()) as it:
            for item in it:
                if item.is_dir(follow_symlinks=False):
                    stack.append(item.path)
                else:
                    total += item.stat(follow_symlinks=False).st_size
    return total


def _remove_tree(path: Path, *, strict: bool = False) -> None:
    """Delete a file, symlink or directory tree without following symlinks."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError:
        if strict:
            raise
        return
    try:
        if stat.S_ISDIR(st.st_mode):
            shutil.rmtree(path, ignore_errors=not strict)
        else:
            os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError:
        if strict:
            raise


def _parts_diff(have: Any, want: Any) -> str:
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
        else:
            try:
                same = _canonical(have[k]) == _canonical(want[k])
            except UsageError:
                same = False
            if not same:
                diffs.append(f"{k}: {short(have[k])} in the entry, {short(want[k])} requested")
    return "; ".join(diffs[:4]) or "(same values, different encoding)"
