"""Trust of the remote cache: Ed25519 keys, and the signed manifest that names an entry's files.

A manifest is ``{"format", "key_id", "payload", "signature"}``: ``payload`` is the base64 of
the JSON that names kind, key, parts, upload id and every file with its size and sha256;
``signature`` is Ed25519 over ``b"pytest-trt remote manifest v1\\n" + payload``. Verifying
the exact signed bytes avoids any JSON canonicalization question. Builders sign
(:func:`sign_manifest`, private key from ``$PYTEST_TRT_REMOTE_CACHE_KEY``); every reader
verifies with its trusted public keys (:func:`verify_manifest`) before a file is fetched.
``cryptography`` is imported on first use (the ``remote`` extra).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from ...core.lazy import lazy_import
from ...errors import UsageError
from .layout import ENV_KEY, EXTRA_HINT

if TYPE_CHECKING:
    import cryptography.exceptions as crypto_exceptions
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519
else:
    crypto_exceptions = lazy_import("cryptography.exceptions", extra="remote")
    serialization = lazy_import("cryptography.hazmat.primitives.serialization", extra="remote")
    ed25519 = lazy_import("cryptography.hazmat.primitives.asymmetric.ed25519", extra="remote")

__all__ = [
    "FORMAT",
    "MAX_MANIFEST_BYTES",
    "PUBLIC_KEY_PREFIX",
    "SIGNING_CONTEXT",
    "RejectedEntry",
    "generate_keypair",
    "key_id",
    "load_private_key",
    "load_public_key",
    "public_key_text",
    "require_cryptography",
    "sign_manifest",
    "verify_manifest",
]

FORMAT = "pytest-trt-remote-manifest-v1"
SIGNING_CONTEXT = b"pytest-trt remote manifest v1\n"
PUBLIC_KEY_PREFIX = "ed25519:"
#: a published manifest larger than this is not read (a real one is a few KiB)
MAX_MANIFEST_BYTES = 1 << 20


class RejectedEntry(Exception):
    """A published entry failed verification (signature, payload or a file); the message says why."""




def require_cryptography() -> None:
    """Raise :class:`~pytest_trt.errors.UsageError` naming the ``remote`` extra unless cryptography imports."""
    try:
        serialization.Encoding, ed25519.Ed25519PublicKey  # noqa: B018 (the first use imports them)
    except ImportError:
        raise UsageError(f"the remote cache signs and verifies with the `cryptography` package: {EXTRA_HINT}") from None


def key_id(public_key: ed25519.Ed25519PublicKey) -> str:
    """First 16 hex digits of the sha256 of the raw 32-byte Ed25519 public key."""
    require_cryptography()
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


def public_key_text(public_key: ed25519.Ed25519PublicKey) -> str:
    """The one-line form ``ed25519:<base64 of the raw key>`` (what ``--trt-remote-cache-trust`` takes)."""
    require_cryptography()
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


def load_public_key(value: str, *, what: str = "--trt-remote-cache-trust") -> ed25519.Ed25519PublicKey:
    """An Ed25519 public key from ``ed25519:<base64>``, PEM text, or a file holding either."""
    require_cryptography()
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


def load_private_key(value: str, *, what: str = f"${ENV_KEY}") -> ed25519.Ed25519PrivateKey:
    """An Ed25519 private key from PEM (PKCS#8, unencrypted) text or a file holding it."""
    require_cryptography()
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
    require_cryptography()
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


def sign_manifest(private_key: ed25519.Ed25519PrivateKey, payload: dict) -> bytes:
    """The bytes of a signed manifest for ``payload`` (a JSON object)."""
    body = json.dumps(payload, sort_keys=True, separators=(",", ":")).encode("utf-8")
    signature = private_key.sign(SIGNING_CONTEXT + body)
    envelope = {"format": FORMAT, "key_id": key_id(private_key.public_key()), "payload": _b64(body),
                "signature": _b64(signature)}
    return (json.dumps(envelope, indent=1, sort_keys=True) + "\n").encode("utf-8")


def verify_manifest(data: bytes, trusted: dict[str, ed25519.Ed25519PublicKey]) -> dict:
    """The payload of a manifest whose signature verifies with a trusted key; raises RejectedEntry(reason)."""
    if len(data) > MAX_MANIFEST_BYTES:
        raise RejectedEntry(f"the manifest has {len(data)} bytes, more than a manifest can have")
    try:
        envelope = json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise RejectedEntry("the manifest is not valid JSON (truncated or tampered)") from None
    if not isinstance(envelope, dict) or envelope.get("format") != FORMAT:
        raise RejectedEntry(f"the manifest is not a {FORMAT} envelope")
    kid = envelope.get("key_id")
    if kid not in trusted:
        raise RejectedEntry(f"it is signed with key id {str(kid)[:32]!r}, which is not trusted here (trusted: "
                        f"{', '.join(sorted(trusted)) or 'none'}); trust its public key (remote cache trust option) "
                        f"only if that key is yours")
    try:
        body = base64.b64decode(str(envelope.get("payload")), validate=True)
        signature = base64.b64decode(str(envelope.get("signature")), validate=True)
    except (ValueError, binascii.Error):
        raise RejectedEntry("the manifest's payload or signature is not base64 (tampered)") from None
    try:
        trusted[kid].verify(signature, SIGNING_CONTEXT + body)
    except crypto_exceptions.InvalidSignature:
        raise RejectedEntry(f"its signature does not verify with the trusted key {kid} (tampered manifest, "
                        f"or signed by another key claiming that id)") from None
    try:
        payload = json.loads(body.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise RejectedEntry("the signed payload is not JSON") from None
    if not isinstance(payload, dict):
        raise RejectedEntry("the signed payload is not a JSON object")
    return payload
