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

Modules: :mod:`~pytest_trt.cache.remote.layout` (names), :mod:`~pytest_trt.cache.remote.signing`
(keys, signed manifests), :mod:`~pytest_trt.cache.remote.transport` (the remote filesystem),
:mod:`~pytest_trt.cache.remote.tier` (:class:`RemoteTier`). Everything public is importable
from ``pytest_trt.cache.remote``; :class:`CacheStats` lives in :mod:`pytest_trt.cache`.
"""

from __future__ import annotations

from .. import CacheStats
from .layout import (
    ENV_AUTH,
    ENV_KEY,
    ENV_MODE,
    ENV_TRUST,
    ENV_URL,
    EXTRA_HINT,
    MANIFEST,
    MODES,
    PREFIX,
    published_name,
)
from .signing import (
    FORMAT,
    MAX_MANIFEST_BYTES,
    PUBLIC_KEY_PREFIX,
    SIGNING_CONTEXT,
    generate_keypair,
    key_id,
    load_private_key,
    load_public_key,
    public_key_text,
    sign_manifest,
    verify_manifest,
)
from .tier import RemoteTier

__all__ = [
    "ENV_AUTH",
    "ENV_KEY",
    "ENV_MODE",
    "ENV_TRUST",
    "ENV_URL",
    "EXTRA_HINT",
    "FORMAT",
    "MANIFEST",
    "MAX_MANIFEST_BYTES",
    "MODES",
    "PREFIX",
    "PUBLIC_KEY_PREFIX",
    "SIGNING_CONTEXT",
    "CacheStats",
    "RemoteTier",
    "generate_keypair",
    "key_id",
    "load_private_key",
    "load_public_key",
    "public_key_text",
    "published_name",
    "sign_manifest",
    "verify_manifest",
]
