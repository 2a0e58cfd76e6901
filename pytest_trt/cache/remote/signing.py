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
import contextlib
import hashlib
import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from ...core.jsonsafe import loads_bounded
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
    "key_name_problem",
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


#: a PEM key's body without its header lines: base64 only (whitespace allowed), as long as an Ed25519 PKCS#8 key at least
_BASE64_BODY = re.compile(r"[A-Za-z0-9+/=\s]{40,}")


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


def _unquote(text: str) -> str:
    """``text`` without one pair of surrounding quotes (a CI secret stored as ``"-----BEGIN ..."``)."""
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1].strip()
    return text


def _looks_like_key(text: str) -> bool:
    return text.startswith(PUBLIC_KEY_PREFIX) or text.startswith("-----BEGIN")


def _read_key_source(value: str, what: str, *, secret: bool = False) -> tuple[str, str]:
    """(text, where): ``value`` itself when it is key text, else the text of the file it names.

    Surrounding quotes are dropped and PEM text written on one line with ``\\n`` escapes is
    accepted. With ``secret`` (a private key) the value is never shown in a message: a value that
    is neither a readable file nor key text is described by its length and first character only,
    and a bare base64 body (a PEM key without its header lines) is returned as is (``where`` says so).
    """
    text = _unquote(value.strip())
    if _looks_like_key(text):
        if "\\n" in text and "\n" not in text:
            text = text.replace("\\n", "\n")
        return text, "the given text"
    path = Path(text).expanduser()
    try:
        return path.read_text(encoding="utf-8").strip(), str(path)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or type(exc).__name__
        if not secret:
            raise UsageError(f"{what}: cannot read the key file {path}: {reason}. "
                             f"Give a path to a key file or the key itself") from None
        if _BASE64_BODY.fullmatch(text):
            return text, "the given text (a base64 body without its PEM header lines)"
        raise UsageError(
            f"{what} is neither a readable key file ({reason}) nor PEM text ({len(value)} characters, starting "
            f"with {value.strip()[:1]!r}; the value is not shown: it may be a key). Expected the path of the .key "
            f"file written by `pytest-trt remote-cache keygen`, or that file's text "
            f"(-----BEGIN PRIVATE KEY----- ... -----END PRIVATE KEY-----)") from None


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
    """An Ed25519 private key from PEM (PKCS#8, unencrypted) text, its bare base64 body, or a file
    holding the PEM text. Error messages never show the value (it may be the key)."""
    require_cryptography()
    text, where = _read_key_source(value, what, secret=True)
    try:
        if text.startswith("-----BEGIN"):
            key = serialization.load_pem_private_key(text.encode("ascii"), password=None)
        else:
            der = base64.b64decode("".join(text.split()), validate=True)
            key = serialization.load_der_private_key(der, password=None)
    except (ValueError, TypeError, UnicodeEncodeError, binascii.Error, crypto_exceptions.UnsupportedAlgorithm):
        raise UsageError(f"{what}: {where} is not an unencrypted PKCS#8 private key (PEM text, as written by "
                         f"`pytest-trt remote-cache keygen`, or its base64 body); make one with "
                         f"`pytest-trt remote-cache keygen`") from None
    if not isinstance(key, ed25519.Ed25519PrivateKey):
        raise UsageError(f"{what}: {where} is a {type(key).__name__}, not an Ed25519 private key")
    return key


#: what ``keygen``'s ``--name`` may be: a plain file name stem, not hidden, no path
_KEY_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}")


def key_name_problem(name: str, directory_flag: str = "directory") -> str | None:
    """Why ``name`` cannot be the stem of key files (``NAME.key``/``NAME.pub``), else None."""
    if _KEY_NAME.fullmatch(name or ""):
        return None
    if not name:
        return "it is empty (the files would be the hidden '.key' and '.pub')"
    if "/" in name or "\\" in name or name in (".", ".."):
        return f"it is a path, not a file name; give the folder with {directory_flag}"
    if name.startswith(("-", ".")):
        return f"it starts with {name[0]!r}"
    return "use letters, digits, '_', '.' and '-' only (at most 100 characters)"


def generate_keypair(directory: Path | str, name: str = "pytest-trt-cache", *, directory_flag: str = "directory",
                     name_flag: str = "name") -> dict[str, str]:
    """Write ``<name>.key`` (private, mode 0600, PEM) and ``<name>.pub`` (``ed25519:...``) in ``directory``.

    Returns ``{"private": path, "public": path, "key_id": id, "public_key": text}``. Raises
    :class:`~pytest_trt.errors.UsageError` (naming ``directory_flag`` / ``name_flag``, the
    caller's spelling of the arguments) for a name that is not a plain file name, a directory
    that cannot be created or written, or a key file that exists: keys are never overwritten.
    """
    require_cryptography()
    problem = key_name_problem(name, directory_flag)
    if problem:
        raise UsageError(f"{name_flag} {name!r}: {problem}")
    directory = Path(directory).expanduser()
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"{directory_flag} {directory}: not a directory (give the folder to write "
                         f"{name}.key and {name}.pub into)")
    private = ed25519.Ed25519PrivateKey.generate()
    pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    public = private.public_key()
    kid = key_id(public)
    priv_path, pub_path = directory / f"{name}.key", directory / f"{name}.pub"
    for path in (priv_path, pub_path):
        if os.path.lexists(path):
            raise UsageError(f"{path} exists: pytest-trt remote-cache keygen never overwrites a key "
                             f"(choose another {name_flag} or {directory_flag})")
    written: list[Path] = []
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(priv_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        written.append(priv_path)
        with os.fdopen(fd, "wb") as f:
            f.write(pem)
        fd = os.open(pub_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        written.append(pub_path)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(f"{public_key_text(public)} pytest-trt-remote-cache key id {kid}\n")
    except OSError as exc:
        for path in written:  # (only what this call created)
            with contextlib.suppress(OSError):
                path.unlink()
        raise UsageError(f"{directory_flag} {directory}: cannot write the key files there: "
                         f"{exc.strerror or exc}") from None
    return {"private": str(priv_path), "public": str(pub_path), "key_id": kid, "public_key": public_key_text(public)}


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def sign_manifest(private_key: ed25519.Ed25519PrivateKey, payload: dict, *, context: bytes = SIGNING_CONTEXT,
                  fmt: str = FORMAT) -> bytes:
    """The bytes of a signed manifest for ``payload`` (a JSON object).

    ``context`` and ``fmt``: the signed prefix and the envelope's format. The saved runs
    (:mod:`pytest_trt.history.store`) sign with their own, so a signature made for one kind of
    object never verifies as the other."""
    body = json.dumps(payload, sort_keys=True, separators=(",", ":")).encode("utf-8")
    signature = private_key.sign(context + body)
    envelope = {"format": fmt, "key_id": key_id(private_key.public_key()), "payload": _b64(body),
                "signature": _b64(signature)}
    return (json.dumps(envelope, indent=1, sort_keys=True) + "\n").encode("utf-8")


def verify_manifest(data: bytes, trusted: dict[str, ed25519.Ed25519PublicKey], *, context: bytes = SIGNING_CONTEXT,
                    fmt: str = FORMAT) -> dict:
    """The payload of a manifest whose signature verifies with a trusted key; raises RejectedEntry(reason).

    ``context`` and ``fmt`` as in :func:`sign_manifest`.

    Nothing in ``data`` is trusted before the signature verifies: its size is capped, its
    nesting bounded before it is parsed (:func:`~pytest_trt.jsonsafe.loads_bounded`), and every
    field is type-checked before use, so a malformed manifest is a rejection, never another error.
    """
    if len(data) > MAX_MANIFEST_BYTES:
        raise RejectedEntry(f"the manifest has {len(data)} bytes, more than a manifest can have")
    try:
        envelope = loads_bounded(data)
    except ValueError as exc:  # (UnicodeDecodeError and JSONDecodeError are ValueErrors)
        raise RejectedEntry(f"the manifest is not valid JSON ({_short(exc)}; truncated or tampered)") from None
    if not isinstance(envelope, dict) or envelope.get("format") != fmt:
        raise RejectedEntry(f"the manifest is not a {fmt} envelope")
    kid = envelope.get("key_id")
    if not isinstance(kid, str) or kid not in trusted:
        shown = repr(kid[:32]) if isinstance(kid, str) else f"of type {type(kid).__name__}"
        raise RejectedEntry(f"it is signed with key id {shown}, which is not trusted here (trusted: "
                            f"{', '.join(sorted(trusted)) or 'none'}); trust its public key (remote cache trust "
                            f"option) only if that key is yours")
    payload_text, signature_text = envelope.get("payload"), envelope.get("signature")
    if not isinstance(payload_text, str) or not isinstance(signature_text, str):
        raise RejectedEntry("the manifest's payload or signature is not a string (tampered)")
    try:
        body = base64.b64decode(payload_text, validate=True)
        signature = base64.b64decode(signature_text, validate=True)
    except (ValueError, binascii.Error):
        raise RejectedEntry("the manifest's payload or signature is not base64 (tampered)") from None
    try:
        trusted[kid].verify(signature, context + body)
    except crypto_exceptions.InvalidSignature:
        raise RejectedEntry(f"its signature does not verify with the trusted key {kid} (tampered manifest, "
                            f"or signed by another key claiming that id)") from None
    try:
        payload = loads_bounded(body)
    except ValueError as exc:
        raise RejectedEntry(f"the signed payload is not JSON ({_short(exc)})") from None
    if not isinstance(payload, dict):
        raise RejectedEntry("the signed payload is not a JSON object")
    return payload


def _short(exc: BaseException) -> str:
    return str(exc)[:120]
