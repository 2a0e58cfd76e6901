"""Remote tier of the artifact cache: one signed engine cache shared by a fleet of runners.

The local :class:`~pytest_trt.cache.ArtifactCache` stays the only place anything is loaded
from. On a local miss, :class:`RemoteTier` is asked first: it fetches the published entry,
verifies its signature and every file's sha256 into the local build directory, and the local
cache then seals and renames it into place like any build. What fails verification is
deleted from the build directory before the real build runs, so it is never deserialized.
After a real build, a read-write tier uploads the sealed local entry.

Remote layout (``<url>`` is ``--trt-remote-cache``; every path below is one object)::

    <url>/pytest-trt-remote-v1/<kind>/<key>/manifest.<key id>.json the entry published by that key (written once)
    <url>/pytest-trt-remote-v1/<kind>/<key>/uploads/<id>/<file>    the files of one upload
    <url>/pytest-trt-remote-v1/<kind>/<key>/uploads/<id>/manifest.json   that upload's signed manifest

``<kind>``/``<key>`` are the local cache's (``key`` = sha256 of the content key parts, see
docs/DESIGN.md "Cache key"): runners with the same GPU model and library versions share entries.

Publishing. Each upload writes its files under a fresh random ``<id>`` (128 bits), then its
signed manifest beside them, then *publishes* by creating ``<kind>/<key>/manifest.<key id>.json``
(the id of the signing key) only if it does not exist:

* ``file://`` (a shared mount): ``link(2)`` of the upload's manifest to the published name,
  atomic and exclusive on POSIX filesystems (NFSv3+ included);
* WebDAV (``http(s)://`` or ``webdav+http(s)://``): ``MOVE`` with ``Overwrite: F``, which the
  server answers 412 when the name exists (RFC 4918 9.9.3; nginx checks then renames, so
  two MOVEs in the same instant may both succeed: the later rename wins);
* other fsspec filesystems (``s3://``, ``gs://``, ``az://``): ``pipe_file(mode="create")``,
  a conditional write where the filesystem implements it (s3fs sends ``If-None-Match: *``),
  else fsspec's check-then-write.

Rule (first manifest wins): a manifest is one object, written whole (rename or single PUT),
and names only files of its own upload, which are complete before it is written. So whichever
manifest a reader finds, it gets one complete upload, never a mix; where the transport cannot
exclude a race, the last of two racing manifests wins and the other upload is an orphan.

Trust. A manifest is ``{"format", "key_id", "payload", "signature"}``: ``payload`` is the
base64 of the JSON that names kind, key, parts, upload id and every file with its size and
sha256; ``signature`` is Ed25519 over ``b"pytest-trt remote manifest v1\\n" + payload``.
Readers hold public keys only (``--trt-remote-cache-trust``); key ids (first 16 hex digits of
the sha256 of the raw public key) let keys rotate: each key publishes under its own name, a reader
looks at the names of its trusted keys in trust order (one request each on a miss) and takes the
first entry that verifies; trust old and new while the fleet moves, then drop the old key (its
entries are then never read; the new key publishes its own).
Builders hold the private key (``$PYTEST_TRT_REMOTE_CACHE_KEY``: a path or the PEM text).
There is no switch that accepts an unsigned or unverifiable entry.

Failures never fail a test: a remote that cannot be reached is reported once
(:class:`~pytest_trt.errors.CacheWarning`) and left alone for the rest of the session; an
entry that fails verification is reported with the reason and built locally; an upload
refused (full: HTTP 507, read-only: 403/405) is reported and uploads stop for the session.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import errno
import hashlib
import io
import json
import os
import re
import secrets
import shutil
import time
import warnings
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ._version import __version__
from .cache import CacheStats, canonical_json, safe_relative_path
from .errors import CacheWarning, UsageError

__all__ = [
    "CacheStats",
    "RemoteTier",
    "generate_keypair",
    "key_id",
    "load_private_key",
    "load_public_key",
]

ENV_URL = "PYTEST_TRT_REMOTE_CACHE"
ENV_KEY = "PYTEST_TRT_REMOTE_CACHE_KEY"
ENV_TRUST = "PYTEST_TRT_REMOTE_CACHE_TRUST"
ENV_MODE = "PYTEST_TRT_REMOTE_CACHE_MODE"
#: ``user:password`` for HTTP basic authentication to a WebDAV server (optional)
ENV_AUTH = "PYTEST_TRT_REMOTE_CACHE_AUTH"

PREFIX = "pytest-trt-remote-v1"
MANIFEST = "manifest.json"
FORMAT = "pytest-trt-remote-manifest-v1"
SIGNING_CONTEXT = b"pytest-trt remote manifest v1\n"
PUBLIC_KEY_PREFIX = "ed25519:"
#: a published manifest larger than this is not read (a real one is a few KiB)
MAX_MANIFEST_BYTES = 1 << 20
MODES = ("auto", "ro", "rw")
EXTRA_HINT = "install the remote extra: pip install 'pytest-trt[remote]'"

_ID_RE = re.compile(r"^[0-9a-f]{32}$")
_KEY_RE = re.compile(r"^[0-9a-f]{64}$")
_KIND_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")


class _Rejected(Exception):
    """Internal: a published entry failed verification; the message says why."""


class _Unreachable(Exception):
    """Internal: the transport failed (connection, server error)."""


# ---------------------------------------------------------------------- keys


def _crypto():
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError:
        raise UsageError(f"the remote cache signs and verifies with the `cryptography` package: {EXTRA_HINT}") from None
    return serialization, ed25519


def key_id(public_key) -> str:
    """First 16 hex digits of the sha256 of the raw 32-byte Ed25519 public key."""
    serialization, _ = _crypto()
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


def public_key_text(public_key) -> str:
    """The one-line form ``ed25519:<base64 of the raw key>`` (what ``--trt-remote-cache-trust`` takes)."""
    serialization, _ = _crypto()
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return PUBLIC_KEY_PREFIX + base64.b64encode(raw).decode("ascii")


def _read_key_source(value: str, what: str) -> tuple[str, str]:
    """(text, where): ``value`` itself when it looks like key text, else the file it names."""
    text = value.strip()
    if text.startswith(PUBLIC_KEY_PREFIX) or text.startswith("-----BEGIN"):
        return text, "the given text"
    path = Path(text).expanduser()
    try:
        return path.read_text(encoding="utf-8").strip(), str(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{what}: cannot read the key file {path}: {getattr(exc, 'strerror', None) or exc}. "
                         f"Give a path to a key file or the key itself") from None


def load_public_key(value: str, *, what: str = "--trt-remote-cache-trust"):
    """An Ed25519 public key from ``ed25519:<base64>``, PEM text, or a file holding either."""
    serialization, ed25519 = _crypto()
    text, where = _read_key_source(value, what)
    line = text.split()[0] if text else ""
    try:
        if line.startswith(PUBLIC_KEY_PREFIX):
            raw = base64.b64decode(line[len(PUBLIC_KEY_PREFIX):], validate=True)
            return ed25519.Ed25519PublicKey.from_public_bytes(raw)
        key = serialization.load_pem_public_key(text.encode("ascii"))
    except (ValueError, binascii.Error, UnicodeEncodeError) as exc:
        raise UsageError(f"{what}: {where} is not an Ed25519 public key ({exc}); expected "
                         f"'ed25519:<base64>' as written by `pytest-trt remote-cache keygen`") from None
    if not isinstance(key, ed25519.Ed25519PublicKey):
        raise UsageError(f"{what}: {where} is a {type(key).__name__}, not an Ed25519 public key")
    return key


def load_private_key(value: str, *, what: str = f"${ENV_KEY}"):
    """An Ed25519 private key from PEM (PKCS#8, unencrypted) text or a file holding it."""
    serialization, ed25519 = _crypto()
    text, where = _read_key_source(value, what)
    try:
        key = serialization.load_pem_private_key(text.encode("ascii"), password=None)
    except (ValueError, TypeError, UnicodeEncodeError) as exc:
        raise UsageError(f"{what}: {where} is not an unencrypted PEM private key ({exc}); make one with "
                         f"`pytest-trt remote-cache keygen`") from None
    if not isinstance(key, ed25519.Ed25519PrivateKey):
        raise UsageError(f"{what}: {where} is a {type(key).__name__}, not an Ed25519 private key")
    return key


def generate_keypair(directory: Path | str, name: str = "pytest-trt-cache") -> dict[str, str]:
    """Write ``<name>.key`` (private, mode 0600, PEM) and ``<name>.pub`` (``ed25519:...``) in ``directory``.

    Returns ``{"private": path, "public": path, "key_id": id, "public_key": text}``. Refuses to
    overwrite an existing key file.
    """
    serialization, ed25519 = _crypto()
    directory = Path(directory).expanduser()
    directory.mkdir(parents=True, exist_ok=True)
    private = ed25519.Ed25519PrivateKey.generate()
    pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    public = private.public_key()
    kid = key_id(public)
    priv_path, pub_path = directory / f"{name}.key", directory / f"{name}.pub"
    for path in (priv_path, pub_path):
        if path.exists():
            raise UsageError(f"{path} exists: pytest-trt remote-cache keygen never overwrites a key "
                             f"(choose another --name or --out)")
    fd = os.open(priv_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(pem)
    pub_path.write_text(f"{public_key_text(public)} pytest-trt-remote-cache key id {kid}\n", encoding="utf-8")
    return {"private": str(priv_path), "public": str(pub_path), "key_id": kid, "public_key": public_key_text(public)}


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def sign_manifest(private_key, payload: dict) -> bytes:
    """The bytes of a signed manifest for ``payload`` (a JSON object)."""
    body = json.dumps(payload, sort_keys=True, separators=(",", ":")).encode("utf-8")
    signature = private_key.sign(SIGNING_CONTEXT + body)
    envelope = {"format": FORMAT, "key_id": key_id(private_key.public_key()), "payload": _b64(body),
                "signature": _b64(signature)}
    return (json.dumps(envelope, indent=1, sort_keys=True) + "\n").encode("utf-8")


def verify_manifest(data: bytes, trusted: dict) -> dict:
    """The payload of a manifest whose signature verifies with a trusted key; raises _Rejected(reason)."""
    from cryptography.exceptions import InvalidSignature

    if len(data) > MAX_MANIFEST_BYTES:
        raise _Rejected(f"the manifest has {len(data)} bytes, more than a manifest can have")
    try:
        envelope = json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise _Rejected("the manifest is not valid JSON (truncated or tampered)") from None
    if not isinstance(envelope, dict) or envelope.get("format") != FORMAT:
        raise _Rejected(f"the manifest is not a {FORMAT} envelope")
    kid = envelope.get("key_id")
    if kid not in trusted:
        raise _Rejected(f"it is signed with key id {str(kid)[:32]!r}, which is not trusted here (trusted: "
                        f"{', '.join(sorted(trusted)) or 'none'}); trust its public key (remote cache trust option) "
                        f"only if that key is yours")
    try:
        body = base64.b64decode(str(envelope.get("payload")), validate=True)
        signature = base64.b64decode(str(envelope.get("signature")), validate=True)
    except (ValueError, binascii.Error):
        raise _Rejected("the manifest's payload or signature is not base64 (tampered)") from None
    try:
        trusted[kid].verify(signature, SIGNING_CONTEXT + body)
    except InvalidSignature:
        raise _Rejected(f"its signature does not verify with the trusted key {kid} (tampered manifest, "
                        f"or signed by another key claiming that id)") from None
    try:
        payload = json.loads(body.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise _Rejected("the signed payload is not JSON") from None
    if not isinstance(payload, dict):
        raise _Rejected("the signed payload is not a JSON object")
    return payload


# ---------------------------------------------------------------------- transport


def _open_filesystem(url: str, auth: str | None, on_request=None, flag: str = "--trt-remote-cache",
                     on_response=None):
    """(fsspec filesystem, root path, counts_requests) for a remote cache URL.

    ``on_request()`` is called for every HTTP request where the transport lets us see them
    (WebDAV, through httpx's event hooks); then ``counts_requests`` is True.
    """
    try:
        import fsspec
    except ImportError:
        raise UsageError(f"{flag} {url}: the remote cache uses fsspec: {EXTRA_HINT}") from None
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if scheme in ("http", "https", "webdav+http", "webdav+https"):
        try:
            from webdav4.fsspec import WebdavFileSystem
        except ImportError:
            raise UsageError(f"{flag} {url}: WebDAV needs the `webdav4` package: {EXTRA_HINT}") from None
        base = url.split("+", 1)[1] if scheme.startswith("webdav+") else url
        # (a fresh instance: fsspec would otherwise share one per URL, with another tier's counters)
        kwargs: dict[str, Any] = {"retry": False, "timeout": 30, "skip_instance_cache": True}
        if on_request is not None:
            kwargs["event_hooks"] = {"request": [lambda request: on_request()],
                                     "response": [lambda response: on_response(response.status_code)]}
        if auth:
            user, _, password = auth.partition(":")
            kwargs["auth"] = (user, password)
        return WebdavFileSystem(base.rstrip("/"), **kwargs), "", on_request is not None
    if scheme in ("", "file", "local"):
        path = url.split("://", 1)[1] if scheme else url
        if not os.path.isabs(path):
            raise UsageError(f"{flag} {url}: a local remote cache needs an absolute path "
                             f"(file:///shared/trt-cache)")
        return fsspec.filesystem("file"), path.rstrip("/"), False
    try:
        fs, root = fsspec.core.url_to_fs(url)
    except (ImportError, ValueError) as exc:
        raise UsageError(f"{flag} {url}: fsspec cannot open it ({exc}); s3://, gs:// and az:// need "
                         f"s3fs, gcsfs or adlfs installed") from None
    return fs, root.rstrip("/"), False


def _describe_error(exc: BaseException, status: int | None = None) -> str:
    if status is None:
        status = getattr(getattr(exc, "response", None), "status_code", None)
    if status is None:
        status = getattr(exc, "status_code", None)
    if status is None and type(exc).__name__ == "InsufficientStorage":
        status = 507
    if status == 507 or getattr(exc, "errno", None) in (errno.ENOSPC, getattr(errno, "EDQUOT", -1)):
        return f"the remote cache is full ({'HTTP 507 Insufficient Storage' if status == 507 else exc})"
    if status in (401, 403, 405) or isinstance(exc, PermissionError) or getattr(exc, "errno", None) == errno.EROFS:
        return f"the remote cache refuses writes (read-only: {f'HTTP {status}' if status else exc})"
    if status is not None:
        return f"HTTP {status} from the remote cache"
    return f"{type(exc).__name__}: {exc}"


def _is_connection_error(exc: BaseException) -> bool:
    """The server could not be reached or went away (as opposed to a server that refused)."""
    if isinstance(exc, (ConnectionError, TimeoutError)):
        return True
    with contextlib.suppress(ImportError):
        import httpx

        if isinstance(exc, httpx.TransportError):
            return True
    return isinstance(exc.__cause__ or exc.__context__, (ConnectionError, TimeoutError)) or (
        (exc.__cause__ or exc.__context__) is not None
        and type(exc.__cause__ or exc.__context__).__module__.startswith("httpx")
        and type(exc.__cause__ or exc.__context__).__name__.endswith(("ConnectError", "ReadError", "WriteError",
                                                                       "RemoteProtocolError", "Timeout"))
    )


def _transport_errors() -> tuple[type[BaseException], ...]:
    errors: list[type[BaseException]] = [OSError, TimeoutError, ValueError]
    with contextlib.suppress(ImportError):
        import httpx

        errors.append(httpx.HTTPError)
    with contextlib.suppress(ImportError):
        from webdav4.client import ClientError

        errors.append(ClientError)
    return tuple(errors)


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

    Raises:
        UsageError: a mode that cannot be honoured (``rw`` without a private key), no trusted
            key at all, an unreadable key, a URL fsspec cannot open, or the ``remote`` extra missing.
    """

    def __init__(self, url: str, *, mode: str = "auto", private_key=None, trusted=(), auth: str | None = None,
                 flag_prefix: str = "--trt-"):
        flag = flag_prefix + "remote-cache"  # error messages in the spelling the user typed (pytest or CLI)
        self.flag = flag
        if mode not in MODES:
            raise UsageError(f"{flag}-mode {mode!r}: choose one of {', '.join(MODES)}")
        #: the URL as shown in headers, warnings and reports (credentials in it masked)
        self.url = re.sub(r"//[^/@]*@", "//***@", url)
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
        #: the last HTTP error status other than 404 (WebDAV clients turn e.g. a refused MKCOL into
        #: FileNotFoundError; the status says what happened)
        self._http_status: int | None = None
        self.fs, self.root, self._counted = _open_filesystem(url, auth, self._count_request, flag,
                                                             self._note_status)
        self.stats = CacheStats()
        #: why the remote is skipped for the rest of the session (unreachable), else None
        self.unavailable: str | None = None
        #: why uploads stopped for the rest of the session (full, read-only), else None
        self.uploads_stopped: str | None = None
        self._errors = _transport_errors()
        protocol = self.fs.protocol if isinstance(self.fs.protocol, tuple) else (self.fs.protocol,)
        self._local = "file" in protocol or "local" in protocol
        self._webdav = "webdav" in protocol

    def close(self) -> None:
        """Close the HTTP connections (WebDAV); the tier must not be used afterwards."""
        if self._webdav:
            with contextlib.suppress(Exception):
                self.fs.client.http.close()

    def __repr__(self) -> str:
        return f"RemoteTier({self.url!r}, mode={self.mode!r}, trusted={sorted(self.trusted)})"

    def describe(self) -> str:
        """One line for the report header."""
        how = "read-write (signing key " + key_id(self.private_key.public_key()) + ")" if self.mode == "rw" \
            else "read-only"
        return f"remote cache {self.url} {how}; trusted key ids {', '.join(sorted(self.trusted))}"

    # ------------------------------------------------------------------ paths

    def _entry_dir(self, kind: str, key: str) -> str:
        return "/".join(p for p in (self.root, PREFIX, kind, key) if p)

    def _note_status(self, status: int) -> None:
        if status >= 400 and status != 404:
            self._http_status = status

    def _count_request(self) -> None:
        self.stats.remote_requests += 1

    def _call(self, fn, *args, **kwargs):
        if not self._counted:  # one filesystem call ~ one request (HTTP transports count the real ones)
            self.stats.remote_requests += 1
        return fn(*args, **kwargs)

    def _warn(self, message: str) -> None:
        warnings.warn(CacheWarning(f"pytest-trt remote cache {self.url}: {message}"), stacklevel=4)

    def _mark_unreachable(self, exc: BaseException) -> None:
        self.stats.remote_errors += 1
        if self.unavailable is None:
            self.unavailable = _describe_error(exc)
            self._warn(f"{self.unavailable}; not used for the rest of this session (entries are built and "
                       f"cached locally)")

    # ------------------------------------------------------------------ fetch

    def fetch(self, kind: str, key: str, parts: dict, dest: Path, *, label: str = "") -> dict | None:
        """Download and verify the published entry into the empty directory ``dest``.

        Returns the verified signed payload (``files``, ``upload_id``, ``build_seconds``, ...)
        when ``dest`` now holds exactly the entry's files, each with its signed size and
        sha256; None on a miss, an unreachable remote or a rejected entry (then ``dest`` is
        empty again and a :class:`CacheWarning` says why).
        """
        if self.unavailable:
            return None
        what = f"{kind} entry {key[:16]}{f' ({label})' if label else ''}"
        t0 = time.monotonic()
        rejected = False
        for kid, public in self.trusted.items():  # one published name per trusted key, in trust order
            name = published_name(kid)
            try:
                data = self._read_small(f"{self._entry_dir(kind, key)}/{name}", MAX_MANIFEST_BYTES)
            except FileNotFoundError:
                continue
            except self._errors as exc:
                self._mark_unreachable(exc)
                return None
            self.stats.remote_bytes_down += len(data)
            try:
                payload = verify_manifest(data, {kid: public})
                files = self._check_payload(payload, kind, key, parts)
                self._download(kind, key, payload["upload_id"], files, dest)
            except _Rejected as exc:
                _empty(dest)
                rejected = True
                self._warn(f"rejected the published {what} ({name}): {exc}. It was not loaded; it is built "
                           f"locally unless another trusted key's entry verifies")
                continue
            except self._errors as exc:
                _empty(dest)
                self._mark_unreachable(exc)
                return None
            break
        else:
            if rejected:
                self.stats.remote_rejected += 1
            else:
                self.stats.remote_misses += 1
            return None
        self.stats.remote_hits += 1
        built = payload.get("build_seconds")
        if isinstance(built, (int, float)) and built > 0:
            self.stats.seconds_saved += max(0.0, float(built) - (time.monotonic() - t0))
        return payload

    def _check_payload(self, payload: dict, kind: str, key: str, parts: dict) -> dict:
        if payload.get("kind") != kind or payload.get("key") != key:
            raise _Rejected(f"the signed manifest is for {payload.get('kind')!r} entry "
                            f"{str(payload.get('key'))[:16]!r}, not this one (a manifest copied from another key)")
        try:
            same = canonical_json(payload.get("parts")) == canonical_json(parts)
        except UsageError:
            same = False
        if not same:
            raise _Rejected("the signed key parts differ from the requested ones")
        if not isinstance(payload.get("upload_id"), str) or not _ID_RE.match(payload["upload_id"]):
            raise _Rejected("the signed manifest has no valid upload id")
        files = payload.get("files")
        if not isinstance(files, dict) or not files:
            raise _Rejected("the signed manifest lists no files")
        for name, meta in files.items():
            if (not safe_relative_path(name) or name == MANIFEST or not isinstance(meta, dict)
                    or not isinstance(meta.get("size"), int) or meta["size"] < 0
                    or not isinstance(meta.get("sha256"), str) or not _KEY_RE.match(meta["sha256"])):
                raise _Rejected(f"the signed manifest has a malformed file record {str(name)[:80]!r}")
        return files

    def _download(self, kind: str, key: str, upload_id: str, files: dict, dest: Path) -> None:
        base = f"{self._entry_dir(kind, key)}/uploads/{upload_id}"
        for name in sorted(files):
            local = dest / name
            local.parent.mkdir(parents=True, exist_ok=True)
            try:
                digest, size = self._read_to_file(f"{base}/{name}", local, files[name]["size"])
            except FileNotFoundError:
                raise _Rejected(f"file {name!r} of upload {upload_id} is missing on the remote") from None
            if size != files[name]["size"]:
                raise _Rejected(f"{name!r} has {size} bytes, the signed manifest says {files[name]['size']} "
                                f"(truncated download or tampered file)")
            if digest != files[name]["sha256"]:
                raise _Rejected(f"checksum mismatch in {name!r} (sha256 {digest[:16]}..., signed "
                                f"{files[name]['sha256'][:16]}...): the file was tampered with or corrupted")

    # ------------------------------------------------------------------ publish

    def publish(self, kind: str, key: str, parts: dict, entry: Path, local_manifest: dict, *,
                label: str = "") -> bool:
        """Upload the sealed local ``entry`` and publish it if no entry is published for the key.

        Returns True when this upload became the published entry. Never raises for transport
        problems: they warn and stop uploads (full, read-only) or the remote (unreachable).
        """
        if self.mode != "rw" or self.unavailable or self.uploads_stopped:
            return False
        what = f"{kind} entry {key[:16]}{f' ({label})' if label else ''}"
        entry_dir = self._entry_dir(kind, key)
        published = f"{entry_dir}/{published_name(key_id(self.private_key.public_key()))}"
        try:
            if self._call(self.fs.exists, published):
                self.stats.remote_lost_races += 1
                return False  # published already (another runner, or an earlier session)
        except self._errors as exc:
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
        manifest = sign_manifest(self.private_key, payload)
        self._http_status = None
        try:
            sent = 0
            # smallest first: on a server that needs its collections created (the first PUT of an
            # upload fails), little is sent in vain
            for name in sorted(files, key=lambda n: (files[n]["size"], n)):
                self._write(f"{base}/{name}", entry / name)
                sent += files[name]["size"]
            self._write(f"{base}/{MANIFEST}", manifest)
            sent += len(manifest)
            self.stats.remote_bytes_up += sent
            won = self._publish_if_absent(f"{base}/{MANIFEST}", published, manifest)
        except self._errors as exc:
            self.stats.remote_upload_failures += 1
            if _is_connection_error(exc):
                self._mark_unreachable(exc)
                return False
            self.uploads_stopped = _describe_error(exc, self._http_status)
            self._warn(f"could not upload {what}: {self.uploads_stopped}. Nothing was published (the entry is "
                       f"kept in the local cache); no more uploads this session")
            return False
        if won:
            self.stats.remote_uploads += 1
        else:
            self.stats.remote_lost_races += 1
        return won

    # ------------------------------------------------------------------ transport
    # WebDAV goes through webdav4's client and its httpx session directly: one GET per file
    # (streamed, stopped at the signed size) and one PUT per file (collections created only
    # when the server says they are missing), instead of fsspec's PROPFIND before every read and
    # PROPFIND/MKCOL walk before every write (nginx: 17 requests to publish a one-file entry
    # that way, 4 this way; 2 to fetch it instead of 5).

    def _read_small(self, path: str, limit: int) -> bytes:
        """The bytes of ``path`` (at most ``limit``); FileNotFoundError when absent."""
        chunks, size = [], 0
        for chunk in self._stream(path):
            size += len(chunk)
            if size > limit:
                raise _Rejected(f"{path.rsplit('/', 1)[-1]} has more than {limit} bytes, more than a manifest has")
            chunks.append(chunk)
        return b"".join(chunks)

    def _read_to_file(self, path: str, local: Path, signed_size: int) -> tuple[str, int]:
        """Stream ``path`` into ``local``, hashing; stops past the signed size. Returns (sha256, size)."""
        import hashlib

        h, size = hashlib.sha256(), 0
        with open(local, "xb") as out:
            for chunk in self._stream(path):
                size += len(chunk)
                if size > signed_size:
                    raise _Rejected(f"{local.name!r} has more bytes than the signed {signed_size} (stopped "
                                    f"reading; tampered file)")
                h.update(chunk)
                out.write(chunk)
        self.stats.remote_bytes_down += size
        return h.hexdigest(), size

    def _stream(self, path: str):
        self._http_status = None
        if self._webdav:
            client = self.fs.client
            with client.http.stream("GET", client.join_url(path)) as response:
                if response.status_code == 404:
                    raise FileNotFoundError(errno.ENOENT, "not on the remote", path)
                response.raise_for_status()
                yield from response.iter_bytes(1 << 20)
            return
        with self._call(self.fs.open, path, "rb") as f:
            while chunk := f.read(1 << 20):
                yield chunk

    def _write(self, path: str, source: Path | bytes) -> None:
        """Write a local file or bytes to ``path`` (creating parents where the transport needs it)."""
        if self._webdav:
            from webdav4.client import HTTPError, ResourceAlreadyExists

            def put():
                if isinstance(source, bytes):
                    self.fs.client.upload_fileobj(io.BytesIO(source), path, overwrite=True)
                else:
                    with open(source, "rb") as f:
                        self.fs.client.upload_fileobj(f, path, overwrite=True)

            try:
                put()
            except HTTPError as exc:
                # a missing parent collection: 409 Conflict (RFC 4918 9.7.1); nginx without
                # create_full_put_path answers 500. Create the collections and retry once.
                if exc.status_code not in (409, 500):
                    raise
                parts = path.split("/")[:-1]
                for i in range(1, len(parts) + 1):
                    with contextlib.suppress(ResourceAlreadyExists):  # 405: it exists
                        self.fs.client.mkdir("/".join(parts[:i]))
                put()
            return
        if self._local:
            os.makedirs(os.path.dirname(path), exist_ok=True)
        if isinstance(source, bytes):
            self._call(self.fs.pipe_file, path, source)
        else:
            self._call(self.fs.put_file, str(source), path)

    def _publish_if_absent(self, staged: str, published: str, manifest: bytes) -> bool:
        if self._local:
            try:
                self._call(os.link, staged, published)
            except FileExistsError:
                return False
            return True
        if self._webdav:
            from webdav4.client import ResourceAlreadyExists

            try:
                self._call(self.fs.client.move, staged, published, overwrite=False)
            except ResourceAlreadyExists:
                return False
            return True
        try:
            self._call(self.fs.pipe_file, published, manifest, mode="create")
        except FileExistsError:
            return False
        return True


def published_name(kid: str) -> str:
    """The published manifest of the entries signed by key ``kid``: ``manifest.<kid>.json``."""
    return f"manifest.{kid}.json"


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

