"""Content-addressed artifact cache: engines, realized models, FP32 baselines, timing caches.

TensorRT builds take minutes and pytest-xdist runs several workers that may want the
same engine at once. :class:`ArtifactCache` stores every artifact under the sha256 of
the JSON of what produced it (its *parts*: model hash, plan fingerprint, library
versions, device, build config) and builds each key exactly once, whatever the number
of processes asking.

On-disk layout (``<root>`` is the directory given, e.g. ``--trt-cache-dir``)::

    <root>/
      .pytest-trt-cache            marks the directory as a pytest-trt cache (see below)
      CACHEDIR.TAG                 marks it as a cache for backup tools (only if the cache created it)
      <kind>/<key>/                one entry: the built files (subdirectories allowed)
        manifest.json              written last: format_version, kind, key, parts,
                                   files {name: {sha256, size}}, created, build_seconds,
                                   label, pytest_trt; its mtime is the entry's last use
      locks/<key>.lock             per-key lock (filelock); empty files, never deleted
      locks/events.lock            guards events.jsonl
      .pytest-trt-probe-*          write probe at open (removed at once; by GC if killed)
      .pytest-trt-tmp/build-<key>-<pid>-<rnd>/  a build in progress (or one that was killed)
      .pytest-trt-tmp/trash-<key>-<pid>-<rnd>/  an entry being deleted
      timing-cache/                TensorRT timing caches (backends/tensorrt/)
      memo/<dev>-<ino>.json        digest memo: sha256 of model data files and weight sets, with the
                                   file's stat (pytest_trt.model.weights.identity); local, never uploaded
      events.jsonl                 one JSON line per build/hit/corrupt/evict event (hits in batches)
      events.1.jsonl               the previous events file, once events.jsonl passed 16 MiB

Whose directory: the cache deletes only what it created and tags only directories it created.
Opening a cache creates a missing root (and writes ``CACHEDIR.TAG`` there); an existing root is
used when it carries the ``.pytest-trt-cache`` marker, or the layout of a cache written by
pytest-trt 0.1.0 (its ``CACHEDIR.TAG``; its ``tmp/`` scratch is still collected, by name), or
when it is empty or holds only ``timing-cache/`` (restored by a CI step before the first run).
Any other non-empty directory (a project root, ``$HOME``) is refused with a
:class:`~pytest_trt.errors.CacheError` that names a subfolder to use instead. Garbage
collection removes only names the cache generates, never follows a symbolic link, and never
touches other files in the root.

Guarantees:

* ``build(tmp_dir)`` writes into a fresh directory under ``<root>/.pytest-trt-tmp`` (same
  filesystem); the cache hashes every file, fsyncs, writes ``manifest.json`` last and
  renames the directory into place. An entry is therefore either complete or absent:
  a build that raises, a KeyboardInterrupt or a ``kill -9`` leaves at most a
  ``.pytest-trt-tmp/build-*`` directory, which is never read as an entry and is removed when a
  later :class:`ArtifactCache` is opened (older than ``stale_seconds`` *and* its key's
  lock not held, i.e. its builder is dead).
* Writers of an entry (build, rebuild, corrupt-entry removal, eviction, clear) hold the
  key's lock, so N processes asking for one key build it once; the others wait and then
  load it (``CacheResult.waited_seconds``).
* A hit is validated in full (entries of :data:`~pytest_trt.cache.entry.MEMO_KINDS`, multi-gigabyte
  weight sets that are data, never code: size, and the digest memo instead of a re-read when it
  vouches for an unchanged file): manifest parses, ``format_version``/``kind``/``key``/``parts``
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
  atime (``noatime`` mounts). When ``max_bytes`` is set, entries are evicted oldest-use
  first until the entries total at most ``max_bytes``, when the cache is opened and after
  storing an entry; never the entry just stored, never one whose lock another process holds.
  ``CacheStats.evictions`` / ``evicted_bytes`` count them (the terminal summary's cache line). Eviction cannot see a
  process that holds a returned path without the lock; the entry it just got is the most
  recently used one, and files it already opened stay readable on POSIX.

Remote tier: with ``remote=`` (a :class:`~pytest_trt.cache.remote.RemoteTier`, ``--trt-remote-cache``)
a local miss first asks the remote cache. Its entry is downloaded into the build directory and
verified there (Ed25519 signature of its manifest, size and sha256 of every file) before the
cache seals and installs it like a build; a rejected download is deleted from the build
directory before the real build runs, so it is never loaded. A built entry is then given to
the tier, which uploads it when it holds the signing key. See :mod:`pytest_trt.cache.remote`.

The cache trusts whoever can write its directory: a writer that forges a consistent
manifest is not detected. Keep shared cache directories writable only by trusted users.

Modules (one seam each): :mod:`~pytest_trt.cache.key` (canonical JSON, key derivation, entry
names), :mod:`~pytest_trt.cache.entry` (manifest, sealing, validation, the result types),
:mod:`~pytest_trt.cache.files` (durable file operations), :mod:`~pytest_trt.cache.locks`
(per-key locks), :mod:`~pytest_trt.cache.eventlog` (events.jsonl),
:mod:`~pytest_trt.cache.stats` (:class:`CacheStats`), :mod:`~pytest_trt.cache.store`
(:class:`ArtifactCache`). Everything public is importable from ``pytest_trt.cache``.
"""

from .entry import FORMAT_VERSION, MANIFEST, CacheEntry, CacheResult
from .eventlog import EVENTS, EVENTS_MAX_BYTES, EVENTS_OLD
from .key import canonical_json, content_key, safe_relative_path, same_parts
from .stats import CacheStats
from .store import MARKER, SCRATCH_DIR, STALE_SECONDS, ArtifactCache, default_cache_dir, is_cache_dir

__all__ = [
    "EVENTS",
    "EVENTS_MAX_BYTES",
    "EVENTS_OLD",
    "FORMAT_VERSION",
    "MANIFEST",
    "MARKER",
    "SCRATCH_DIR",
    "STALE_SECONDS",
    "ArtifactCache",
    "CacheEntry",
    "CacheResult",
    "CacheStats",
    "canonical_json",
    "content_key",
    "default_cache_dir",
    "is_cache_dir",
    "safe_relative_path",
    "same_parts",
]
