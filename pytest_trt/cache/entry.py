"""One cache entry: its manifest, how a build directory is sealed, and how a hit is validated.

An entry is ``<root>/<kind>/<key>/``: the built files plus ``manifest.json`` (format_version,
kind, key, parts, files {name: {sha256, size}}, created, build_seconds, label, pytest_trt),
written last. :func:`seal_entry` hashes and fsyncs what a build wrote and writes the manifest;
:func:`validate_entry` checks an entry in full (manifest, exactly the listed files, sizes,
sha256) before anything is loaded from it, so only files the cache wrote itself are returned.
The store (:mod:`pytest_trt.cache.store`) decides what to do with a verdict (hit, rebuild,
error); the results it hands out (:class:`CacheResult`, :class:`CacheEntry`) are defined here.
"""

from __future__ import annotations

import json
import os
import stat
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .._version import __version__
from ..core.jsonsafe import loads_bounded
from ..errors import UsageError
from ..model.weights import DigestMemo
from .files import fsync_dir, hash_file, parent_dirs, scan_tree, why, write_new
from .key import KEY_RE, canonical_json, parts_diff, safe_relative_path, same_parts

__all__ = [
    "FORMAT_VERSION",
    "MANIFEST",
    "MEMO_KINDS",
    "CacheEntry",
    "CacheResult",
    "InvalidEntry",
    "is_own_manifest",
    "read_manifest_quietly",
    "seal_entry",
    "validate_entry",
    "well_formed_file_record",
]

#: Entry kinds validated with the digest memo on a hit (size + an unchanged stat, not a full re-read):
#: multi-gigabyte weight sets, data fed to ONNX Runtime and TensorRT, never deserialized as code.
#: Engines, graphs and everything else are hashed in full on every hit.
MEMO_KINDS = frozenset({"weights"})

#: Version of the entry layout and manifest. Entries of another version are rebuilt.
FORMAT_VERSION = 1
MANIFEST = "manifest.json"


class InvalidEntry(Exception):
    """An entry failed validation; the message says why (the store warns, rebuilds or raises)."""


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
    def own(self) -> bool:
        """Whether the entry carries a manifest pytest-trt wrote (:func:`is_own_manifest`). Such an entry
        is pruned anywhere; a :attr:`damaged` one only in a directory marked as the cache's own."""
        return is_own_manifest(self.manifest, self.kind, self.key)

    @property
    def damaged(self) -> bool:
        """Whether the entry has a ``manifest.json`` (a regular file) that is not pytest-trt's manifest
        for it: truncated, unreadable, or another entry's. In a directory marked as the cache's own
        (:data:`~pytest_trt.cache.ownership.MARKER`) such an entry is the cache's, damaged, and pruned;
        an entry-shaped directory without any ``manifest.json`` is not known to be the cache's."""
        if self.own:
            return False
        try:
            return stat.S_ISREG(os.lstat(self.path / MANIFEST).st_mode)
        except OSError:
            return False

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


# ---------------------------------------------------------------------- sealing


def seal_entry(
    tmp: Path,
    kind: str,
    key: str,
    parts: dict,
    label: str,
    build_seconds: float,
    origin: dict | None = None,
    uses: list[dict] | None = None,
    digests: dict | None = None,
) -> dict:
    """Hash and fsync what a build wrote into ``tmp``, then write the manifest (last); return it.

    Raises :class:`~pytest_trt.errors.UsageError` when the build left symlinks or special
    files, wrote ``manifest.json`` itself, or wrote nothing.

    ``digests``: ``{name: sha256}`` a build of a :data:`MEMO_KINDS` entry computed while writing
    the file (a multi-gigabyte weight set is then not read back just to be hashed); used when
    the file is there, fsynced like the others. The entry's first validation re-reads it anyway
    (its digest memo record is not yet trusted), so a wrong digest is caught on the next hit.
    """
    found, dirs, odd = scan_tree(tmp)
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
    known = digests if kind in MEMO_KINDS and isinstance(digests, dict) else {}
    for rel in sorted(found):
        if isinstance(known.get(rel), str) and KEY_RE.match(known[rel]):
            with open(found[rel], "rb") as f:
                os.fsync(f.fileno())
            files[rel] = {"sha256": known[rel], "size": os.lstat(found[rel]).st_size}
            continue
        digest, size = hash_file(found[rel], sync=True)
        files[rel] = {"sha256": digest, "size": size}
    manifest = {
        "format_version": FORMAT_VERSION,
        "kind": kind,
        "key": key,
        "parts": json.loads(canonical_json(parts)),
        "files": files,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "created_unix": time.time(),
        "build_seconds": round(build_seconds, 6),
        "label": label,
        "pytest_trt": __version__,
    }
    if origin is not None:
        manifest["origin"] = origin  # fetched from the remote tier: where, and which upload
    if uses:
        manifest["uses"] = uses  # entries this one needs at use time (pruned together: cache/prune.py)
    write_new(
        tmp / MANIFEST, (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode(), sync=True
    )
    for rel in sorted(dirs, key=len, reverse=True):
        fsync_dir(tmp / rel)
    fsync_dir(tmp)
    return manifest


# ---------------------------------------------------------------------- validation


def validate_entry(entry: Path, kind: str, key: str, parts: dict, memo: DigestMemo | None = None) -> dict | None:
    """The manifest of a valid entry; None when there is no entry; raises :class:`InvalidEntry` (reason).

    Checks, in order: the entry is a directory with a regular ``manifest.json`` that parses;
    its format version, kind, key and parts equal the request; its file records are well
    formed; the directory holds exactly those files (no symlinks, nothing foreign); each
    has the recorded size, then the recorded sha256.

    ``memo`` (only for kinds whose files are data, never deserialized: :data:`MEMO_KINDS`): a
    file whose digest the memo vouches for (same stat since a record taken long enough after its
    last change, see :mod:`pytest_trt.model.weights.identity`) and equals the manifest's is not re-read;
    a file that is read is recorded there.
    """
    try:
        st = os.lstat(entry)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InvalidEntry(f"cannot stat the entry: {why(exc)}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise InvalidEntry("the entry is not a directory (a symlink or file not written by the cache)")
    manifest = _read_manifest(entry / MANIFEST)
    _check_identity(manifest, kind, key, parts)
    files = _check_file_records(manifest.get("files"))
    found = _check_listing(entry, files)
    _check_contents(found, files, memo)
    return manifest


def _read_manifest(mpath: Path) -> dict:
    try:
        mst = os.lstat(mpath)
    except FileNotFoundError:
        raise InvalidEntry(f"it has no {MANIFEST} (an interrupted or foreign write)") from None
    except OSError as exc:
        raise InvalidEntry(f"cannot read {MANIFEST}: {why(exc)}") from None
    if not stat.S_ISREG(mst.st_mode):
        raise InvalidEntry(f"{MANIFEST} is not a regular file")
    try:
        manifest = loads_bounded(mpath.read_bytes())
    except ValueError as exc:  # (not JSON, not UTF-8, or nested deeper than a manifest can be)
        raise InvalidEntry(f"{MANIFEST} is not valid JSON ({str(exc)[:80]}; truncated or corrupt)") from None
    except OSError as exc:
        raise InvalidEntry(f"cannot read {MANIFEST}: {why(exc)}") from None
    if not isinstance(manifest, dict):
        raise InvalidEntry(f"{MANIFEST} is not a JSON object")
    return manifest


def _check_identity(manifest: dict, kind: str, key: str, parts: dict) -> None:
    """format_version, kind, key and parts of the manifest equal the request."""
    version = manifest.get("format_version")
    if version != FORMAT_VERSION:
        raise InvalidEntry(
            f"format_version {version!r} in {MANIFEST}; pytest-trt {__version__} writes {FORMAT_VERSION}"
        )
    if manifest.get("kind") != kind:
        raise InvalidEntry(f"{MANIFEST} says kind {manifest.get('kind')!r}, expected {kind!r}")
    if manifest.get("key") != key:
        raise InvalidEntry(
            f"{MANIFEST} says key {str(manifest.get('key'))[:16]!r}, the entry is {key[:16]!r}"
        )
    if not same_parts(manifest.get("parts"), parts):
        raise InvalidEntry(
            f"its parts differ from the requested ones: {parts_diff(manifest.get('parts'), parts)}"
        )


def well_formed_file_record(name: Any, meta: Any) -> bool:
    """A manifest's file record ``name: {"size", "sha256"}``, local or signed remote (one check for
    both, :mod:`pytest_trt.cache.remote.tier` uses it): a safe relative name other than the
    manifest's own, a size that is an integer >= 0 (not a bool), a sha256 in hex."""
    size = meta.get("size") if isinstance(meta, dict) else None
    return (
        safe_relative_path(name)
        and name != MANIFEST
        and isinstance(size, int) and not isinstance(size, bool) and size >= 0
        and isinstance(meta.get("sha256"), str)
        and bool(KEY_RE.match(meta["sha256"]))
    )


def _check_file_records(files: Any) -> dict:
    if not isinstance(files, dict) or not files:
        raise InvalidEntry(f"{MANIFEST} lists no files")
    for name, meta in files.items():
        if not well_formed_file_record(name, meta):
            raise InvalidEntry(f"{MANIFEST} has a malformed file record {name!r}")
    return files


def _check_listing(entry: Path, files: dict) -> dict[str, Path]:
    """The entry holds exactly the listed files (and their directories); returns {name: path}."""
    try:
        found, dirs, odd = scan_tree(entry)
    except OSError as exc:
        raise InvalidEntry(f"cannot list the entry: {why(exc)}") from None
    if odd:
        raise InvalidEntry(
            "it holds "
            + ", ".join(f"{r!r} ({what})" for r, what in odd)
            + ", which the cache never writes"
        )
    found.pop(MANIFEST, None)
    missing = sorted(set(files) - set(found))
    if missing:
        raise InvalidEntry(f"file {missing[0]!r} listed in {MANIFEST} is missing")
    extra = sorted(set(found) - set(files))
    expected_dirs = {p for name in files for p in parent_dirs(name)}
    extra += sorted(d + "/" for d in dirs - expected_dirs)
    if extra:
        raise InvalidEntry(f"it holds file(s) not listed in {MANIFEST} (foreign): {', '.join(extra[:5])}")
    return found


def _check_contents(found: dict[str, Path], files: dict, memo: DigestMemo | None = None) -> None:
    """Every file has its recorded size (all checked first: cheap), then its recorded sha256."""
    for name in sorted(files):
        try:
            size = os.lstat(found[name]).st_size
        except OSError as exc:
            raise InvalidEntry(f"cannot stat {name!r}: {why(exc)}") from None
        if size != files[name]["size"]:
            raise InvalidEntry(
                f"{name!r} has {size} bytes, {MANIFEST} says {files[name]['size']} (truncated?)"
            )
    for name in sorted(files):
        size = files[name]["size"]
        if memo is not None and memo.lookup(found[name], [(0, size)]).get((0, size)) == files[name]["sha256"]:
            continue  # unchanged since a trusted record of this very digest
        try:
            before, started = os.stat(found[name]), time.time_ns()
            digest, _ = hash_file(found[name])
        except OSError as exc:
            raise InvalidEntry(f"cannot read {name!r}: {why(exc)}") from None
        if memo is not None and digest == files[name]["sha256"]:
            memo.record(found[name], before, started, {(0, size): digest})
        if digest != files[name]["sha256"]:
            raise InvalidEntry(
                f"checksum mismatch in {name!r} (sha256 {digest[:16]}..., {MANIFEST} says "
                f"{files[name]['sha256'][:16]}...)"
            )


def is_own_manifest(manifest: Any, kind: str, key: str) -> bool:
    """Whether ``manifest`` (parsed JSON) is an entry manifest in pytest-trt's format (any
    ``format_version``, 0.1.0's included) for the entry ``<kind>/<key>``: its format version, kind,
    key and file list, as :func:`seal_entry` writes them. Not a validation of the files."""
    return (isinstance(manifest, dict) and isinstance(manifest.get("format_version"), int)
            and manifest.get("kind") == kind and manifest.get("key") == key
            and isinstance(manifest.get("files"), dict))


def read_manifest_quietly(path: Path) -> tuple[float, dict | None]:
    """(last use, manifest or None) of an entry directory, for listing; no validation.

    The last use is the manifest's mtime (the entry's own when it has no manifest). Raises
    OSError when the entry vanished meanwhile.
    """
    try:
        mst = os.lstat(path / MANIFEST)
    except FileNotFoundError:
        return os.lstat(path).st_mtime, None
    last_used = mst.st_mtime
    if not stat.S_ISREG(mst.st_mode):  # (a named pipe would block the read)
        return last_used, None
    manifest = None
    try:
        manifest = loads_bounded((path / MANIFEST).read_bytes())
    except ValueError:  # (not JSON, not UTF-8, or nested too deep: listed without a manifest)
        manifest = None
    except FileNotFoundError:
        return os.lstat(path).st_mtime, None
    return last_used, manifest if isinstance(manifest, dict) else None
