"""The remote tier's logic: modes and trust, fetch-and-verify on a local miss, upload-and-publish.

:class:`RemoteTier` sits behind an :class:`~pytest_trt.cache.ArtifactCache`. On a local miss
:meth:`RemoteTier.fetch` looks up the published manifest of each trusted key in trust order,
verifies it (:mod:`~pytest_trt.cache.remote.signing`) and downloads every file into the local
build directory, checking size and sha256; what fails is deleted before anything loads it.
After a local build :meth:`RemoteTier.publish` uploads the sealed entry and publishes it if no
entry is published yet (first manifest wins); :meth:`RemoteTier.ensure_published` does the same
for a local hit whose upload never completed (a builder killed mid-upload). Nothing the remote
holds can fail a test: a malformed object is a rejected entry (warned, built locally), transport
failures and an entry slower than its deadline warn once and leave the remote (or uploads) alone
for the session. Every URL and message shown goes through :mod:`~pytest_trt.cache.remote.urls`
(no credentials).
"""

from __future__ import annotations

import contextlib
import errno
import math
import os
import re
import secrets
import shutil
import time
import warnings
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..._version import __version__
from ...errors import CacheError, CacheWarning, UsageError
from .. import CacheStats, same_parts
from ..entry import well_formed_file_record
from ..files import space_hint, why
from .layout import (
    DEFAULT_TIMEOUT,
    ENV_KEY,
    ENV_TRUST,
    MANIFEST,
    MODES,
    PREFIX,
    SECONDS_PER_MIB,
    published_name,
)
from .signing import (
    MAX_MANIFEST_BYTES,
    RejectedEntry,
    key_id,
    load_private_key,
    load_public_key,
    sign_manifest,
    verify_manifest,
)
from .transport import LocalDiskError, Transport, describe_error, is_connection_error
from .urls import Redactor, check_url, display_url

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric import ed25519

__all__ = ["RemoteTier"]

_ID_RE = re.compile(r"^[0-9a-f]{32}$")


class RemoteTier:
    """The remote cache behind an :class:`~pytest_trt.cache.ArtifactCache` (pass it as ``remote=``).

    Args:
        url: ``file:///shared/dir``, ``https://host/path`` (WebDAV), ``s3://bucket/prefix``, ...
        mode: ``ro`` (fetch only), ``rw`` (fetch and upload; needs ``private_key``), ``auto``
            (``rw`` when a private key is given, else ``ro``).
        private_key: Ed25519 private key (object, or a path / PEM text) of a builder.
        trusted: public keys (objects, or ``ed25519:...`` text / paths) whose signatures are
            accepted. A builder's own public key is always trusted.
        auth: ``user:password`` for WebDAV basic authentication.
        timeout: seconds one entry's fetch may take, plus
            :data:`~pytest_trt.cache.remote.layout.SECONDS_PER_MIB` per MiB of its files
            (``--trt-remote-cache-timeout``); past it the entry is built locally and the remote
            is not asked again this session.
        flag_prefix: ``--trt-`` (pytest) or ``--`` (console script): options are named so in messages.
        url_source: where the URL came from, as messages name it (default: the option).

    Raises:
        UsageError: a mode that cannot be honoured (``rw`` without a private key), no trusted
            key at all, an unreadable key, a malformed URL or one fsspec cannot open, a timeout
            that is not a positive number, or the ``remote`` extra missing. A remote that cannot
            be reached is no error: it is reported (once) at its first use.
    """

    def __init__(self, url: str, *, mode: str = "auto",
                 private_key: ed25519.Ed25519PrivateKey | str | None = None,
                 trusted: Iterable[ed25519.Ed25519PublicKey | str] = (), auth: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT, flag_prefix: str = "--trt-", url_source: str | None = None) -> None:
        flag = flag_prefix + "remote-cache"  # error messages in the spelling the user typed (pytest or CLI)
        self.flag = flag
        check_url(url, url_source or flag)
        #: the URL as shown in headers, warnings, reports and local manifests (no credentials,
        #: query values masked)
        self.url = display_url(url)
        self._redact = Redactor(url, auth)
        if mode not in MODES:
            raise UsageError(f"{flag}-mode {mode!r}: choose one of {', '.join(MODES)}")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not (0 < timeout < math.inf):
            raise UsageError(f"{flag}-timeout {timeout!r}: give a positive, finite number of seconds "
                             f"(default {DEFAULT_TIMEOUT:g})")
        self.timeout = float(timeout)
        if isinstance(private_key, str):
            private_key = load_private_key(private_key)
        if mode == "rw" and private_key is None:
            raise UsageError(f"{flag}-mode rw: uploads are signed, and no signing key is set. Set "
                             f"{ENV_KEY} to the private key file from `pytest-trt remote-cache keygen` (builders "
                             f"only), or use {flag}-mode ro")
        self.mode = mode if mode != "auto" else ("rw" if private_key is not None else "ro")
        self.private_key = private_key if self.mode == "rw" else None
        self.trusted: dict[str, Any] = {}  # key id -> key, in the order entries are looked up
        if private_key is not None:  # a key holder prefers (and always trusts) its own entries
            own = private_key.public_key()
            self.trusted[key_id(own)] = own
        for item in trusted:
            key = load_public_key(item, what=f"{flag}-trust") if isinstance(item, str) else item
            self.trusted[key_id(key)] = key
        if not self.trusted:
            raise UsageError(f"{flag} {self.url}: no trusted public key, so no remote entry could be "
                             f"verified. Pass {flag}-trust KEY (pytest ini trt_remote_cache_trust, or "
                             f"{ENV_TRUST}): the .pub file of `pytest-trt remote-cache keygen` or its "
                             f"'ed25519:...' text")
        self.stats = CacheStats()
        #: the remote filesystem (requests counted in ``stats``)
        self.transport = Transport(url, auth, flag, self.stats)
        #: why the remote is skipped for the rest of the session (unreachable), else None
        self.unavailable: str | None = None
        #: why uploads stopped for the rest of the session (full, read-only), else None
        self.uploads_stopped: str | None = None
        #: (kind, key) whose published entry this session has looked for or uploaded (rw)
        self._publish_checked: set[tuple[str, str]] = set()

    def close(self) -> None:
        """Close the HTTP connections (WebDAV); the tier must not be used afterwards."""
        self.transport.close()

    def __repr__(self) -> str:
        return f"RemoteTier({self.url!r}, mode={self.mode!r}, trusted={sorted(self.trusted)})"

    def describe(self) -> str:
        """One line for the report header."""
        signer = self.private_key
        how = "read-write (signing key " + key_id(signer.public_key()) + ")" if signer is not None else "read-only"
        return f"remote cache {self.url} {how}; trusted key ids {', '.join(sorted(self.trusted))}"

    # ------------------------------------------------------------------ paths

    def _entry_dir(self, kind: str, key: str) -> str:
        return self.transport.path(PREFIX, kind, key)

    def _warn(self, message: str) -> None:
        warnings.warn(CacheWarning(f"pytest-trt remote cache {self.url}: {self._redact(message)}"), stacklevel=4)

    def _mark_unreachable(self, exc: BaseException) -> None:
        self.stats.remote_errors += 1
        if self.unavailable is None:
            self.unavailable = self._redact(describe_error(exc))
            self._warn(f"{self.unavailable}; not used for the rest of this session (entries are built and "
                       f"cached locally)")

    # ------------------------------------------------------------------ fetch

    def fetch(self, kind: str, key: str, parts: dict, dest: Path, *, label: str = "") -> dict | None:
        """Download and verify the published entry into the empty directory ``dest``.

        Returns the verified signed payload (``files``, ``upload_id``, ``build_seconds``, ...)
        when ``dest`` now holds exactly the entry's files, each with its signed size and
        sha256; None on a miss, an unreachable or too slow remote, or a rejected entry (then
        ``dest`` is empty again and a :class:`CacheWarning` says why). Whatever the remote
        holds, nothing else comes out, except :class:`~pytest_trt.errors.CacheError` when the
        *local* disk cannot take the files (as for a local build).
        """
        if self.unavailable:
            return None
        what = f"{kind} entry {key[:16]}{f' ({label})' if label else ''}"
        t0 = time.monotonic()
        rejected = False
        self.transport.set_deadline(self.timeout, self._too_slow(what, 0))
        try:
            for kid, public in self.trusted.items():  # one published name per trusted key, in trust order
                name = published_name(kid)
                try:
                    payload = self._fetch_published(kind, key, parts, dest, name, {kid: public}, what)
                except RejectedEntry as exc:
                    rejected = self._rejected(dest, what, name, str(exc))
                    continue
                except LocalDiskError as exc:
                    with contextlib.suppress(OSError):
                        _empty(dest)
                    raise CacheError(f"cannot write {what}, fetched from the remote cache, into the local cache: "
                                     f"{why(exc.error)}. Nothing was stored{space_hint(exc.error)}") from exc.error
                except self.transport.errors as exc:
                    _empty(dest)
                    self._mark_unreachable(exc)
                    return None
                except Exception as exc:  # (a verification bug must never fail a test: reject, build locally)
                    rejected = self._rejected(dest, what, name, f"it could not be verified ({type(exc).__name__}: "
                                                                f"{str(exc)[:160]})")
                    continue
                if payload is not None:
                    break
            else:
                if rejected:
                    self.stats.remote_rejected += 1
                else:
                    self.stats.remote_misses += 1
                return None
        finally:
            self.transport.set_deadline(None)
        self.stats.remote_hits += 1
        built = payload.get("build_seconds")
        if isinstance(built, (int, float)) and built > 0:
            self.stats.seconds_saved += max(0.0, float(built) - (time.monotonic() - t0))
        return payload

    def _fetch_published(self, kind: str, key: str, parts: dict, dest: Path, name: str, trusted: dict,
                         what: str) -> dict | None:
        """The verified payload of the published manifest ``name`` with its files in ``dest``; None when
        there is none; RejectedEntry when anything about it is wrong."""
        try:
            data = self.transport.read_small(f"{self._entry_dir(kind, key)}/{name}", MAX_MANIFEST_BYTES)
        except FileNotFoundError:
            return None
        self.stats.remote_bytes_down += len(data)
        try:
            payload = verify_manifest(data, trusted)
            files = self._check_payload(payload, kind, key, parts)
        except RejectedEntry:
            raise
        except Exception as exc:  # (no I/O here: any other error is a malformed manifest or our bug)
            raise RejectedEntry(f"it could not be verified ({type(exc).__name__}: {str(exc)[:160]})") from exc
        size = sum(meta["size"] for meta in files.values())
        self.transport.extend_deadline(size / 2**20 * SECONDS_PER_MIB, self._too_slow(what, size))
        self._download(kind, key, payload["upload_id"], files, dest)
        return payload

    def _rejected(self, dest: Path, what: str, name: str, reason: str) -> bool:
        _empty(dest)
        self._warn(f"rejected the published {what} ({name}): {reason}. It was not loaded; it is built "
                   f"locally unless another trusted key's entry verifies")
        return True

    def _too_slow(self, what: str, size: int) -> str:
        allowance = f" plus {SECONDS_PER_MIB:g} s per MiB of its {size / 2**20:.1f} MiB" if size else ""
        limit = self.timeout + size / 2**20 * SECONDS_PER_MIB
        shown = f"{limit:.1f}".rstrip("0").rstrip(".")
        return (f"{what} was not delivered within {shown} s ({self.flag}-timeout={self.timeout:g}{allowance}): "
                f"the remote cache is too slow")

    def _check_payload(self, payload: dict, kind: str, key: str, parts: dict) -> dict:
        if payload.get("kind") != kind or payload.get("key") != key:
            raise RejectedEntry(f"the signed manifest is for {payload.get('kind')!r} entry "
                                f"{str(payload.get('key'))[:16]!r}, not this one (a manifest copied from another key)")
        if not same_parts(payload.get("parts"), parts):
            raise RejectedEntry("the signed key parts differ from the requested ones")
        if not isinstance(payload.get("upload_id"), str) or not _ID_RE.match(payload["upload_id"]):
            raise RejectedEntry("the signed manifest has no valid upload id")
        files = payload.get("files")
        if not isinstance(files, dict) or not files:
            raise RejectedEntry("the signed manifest lists no files")
        for name, meta in files.items():
            if not well_formed_file_record(name, meta):
                raise RejectedEntry(f"the signed manifest has a malformed file record {str(name)[:80]!r}")
        return files

    def _download(self, kind: str, key: str, upload_id: str, files: dict, dest: Path) -> None:
        base = f"{self._entry_dir(kind, key)}/uploads/{upload_id}"
        for name in sorted(files):
            local = dest / name
            try:
                local.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise LocalDiskError(exc) from exc
            try:
                digest, size = self.transport.read_to_file(f"{base}/{name}", local, files[name]["size"])
            except FileNotFoundError:
                raise RejectedEntry(f"file {name!r} of upload {upload_id} is missing on the remote") from None
            if size != files[name]["size"]:
                raise RejectedEntry(f"{name!r} has {size} bytes, the signed manifest says {files[name]['size']} "
                                f"(truncated download or tampered file)")
            if digest != files[name]["sha256"]:
                raise RejectedEntry(f"checksum mismatch in {name!r} (sha256 {digest[:16]}..., signed "
                                f"{files[name]['sha256'][:16]}...): the file was tampered with or corrupted")

    # ------------------------------------------------------------------ publish

    def wants_publish_check(self, kind: str, key: str, local_manifest: dict) -> bool:
        """Whether a local hit of this entry should be checked for its published manifest (no I/O).

        True in rw mode (uploads not stopped, remote not unavailable) for an entry this session
        has not looked for yet, unless it came from the remote (its local manifest's ``origin``).
        """
        return (self.mode == "rw" and self.private_key is not None and not self.unavailable
                and not self.uploads_stopped and (kind, key) not in self._publish_checked
                and not local_manifest.get("origin"))

    def ensure_published(self, kind: str, key: str, entry: Path, local_manifest: dict, *, label: str = "") -> bool:
        """Upload a local hit whose key has no published manifest of this builder's key id.

        A builder killed (or cut off) during its upload left the entry in its local cache, and
        later runs are local hits: without this it would never be published. One existence
        check per key and session (:meth:`wants_publish_check`); the caller holds the key's
        local lock, so the entry cannot change meanwhile. Returns True when this upload was published.
        """
        if not self.wants_publish_check(kind, key, local_manifest):
            return False
        return self.publish(kind, key, entry, local_manifest, label=label, republish=True)

    def publish(self, kind: str, key: str, entry: Path, local_manifest: dict, *, label: str = "",
                republish: bool = False) -> bool:
        """Upload the sealed local ``entry`` and publish it if no entry is published for the key
        (the signed key parts are the local manifest's, which the cache checked against the request).

        Returns True when this upload became the published entry. Never raises for transport
        problems: they warn and stop uploads (full, read-only) or the remote (unreachable).
        ``republish``: the entry is a local hit (:meth:`ensure_published`), so finding it
        published already is no lost race.
        """
        signer = self.private_key  # (set exactly when the mode is rw)
        if self.mode != "rw" or signer is None or self.unavailable or self.uploads_stopped:
            return False
        self._publish_checked.add((kind, key))
        what = f"{kind} entry {key[:16]}{f' ({label})' if label else ''}"
        entry_dir = self._entry_dir(kind, key)
        published = f"{entry_dir}/{published_name(key_id(signer.public_key()))}"
        try:
            if self.transport.exists(published):
                if not republish:
                    self.stats.remote_lost_races += 1
                return False  # published already (another runner, or an earlier session)
        except self.transport.errors as exc:
            self._mark_unreachable(exc)
            return False
        upload_id = secrets.token_hex(16)
        base = f"{entry_dir}/uploads/{upload_id}"
        files = {name: dict(meta) for name, meta in local_manifest["files"].items()}
        payload = {
            "kind": kind, "key": key, "parts": local_manifest["parts"], "upload_id": upload_id,
            "files": files, "build_seconds": local_manifest.get("build_seconds"), "label": label,
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"), "pytest_trt": __version__,
        }
        if local_manifest.get("uses"):  # the entries it needs (a weight set): signed with it, sealed with it on fetch
            payload["uses"] = local_manifest["uses"]
        manifest = sign_manifest(signer, payload)
        self.transport.http_status = None
        try:
            sent = 0
            # smallest first: on a server that needs its collections created (the first PUT of an
            # upload fails), little is sent in vain
            for name in sorted(files, key=lambda n: (files[n]["size"], n)):
                self.transport.write(f"{base}/{name}", entry / name)
                sent += files[name]["size"]
            self.transport.write(f"{base}/{MANIFEST}", manifest)
            sent += len(manifest)
            self.stats.remote_bytes_up += sent
            won = self.transport.publish_if_absent(f"{base}/{MANIFEST}", published, manifest)
        except self.transport.errors as exc:
            self.stats.remote_upload_failures += 1
            if is_connection_error(exc):
                self._mark_unreachable(exc)
                return False
            self.uploads_stopped = self._redact(describe_error(exc, self.transport.http_status))
            self._warn(f"could not upload {what}: {self.uploads_stopped}. Nothing was published (the entry is "
                       f"kept in the local cache); no more uploads this session")
            return False
        if won:
            self.stats.remote_uploads += 1
        else:
            self.stats.remote_lost_races += 1
        return won


def _empty(directory: Path) -> None:
    """Delete everything inside ``directory`` (a rejected download), keeping the directory."""
    with contextlib.suppress(FileNotFoundError):
        for item in os.scandir(directory):
            if item.is_dir(follow_symlinks=False):
                shutil.rmtree(item.path, ignore_errors=True)
            else:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(item.path)
    with contextlib.suppress(FileNotFoundError):
        if any(os.scandir(directory)):
            raise OSError(errno.ENOTEMPTY, "could not empty the build directory after a rejected download",
                          str(directory))


