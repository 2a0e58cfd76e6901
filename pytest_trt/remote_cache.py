"""Deprecated: moved to :mod:`pytest_trt.cache.remote` (the remote tier of the artifact cache).

This module re-exports what ``pytest_trt.remote_cache`` had public and warns ``DeprecationWarning``
once, when it is first imported; it goes in the next minor version. Import from
``pytest_trt.cache.remote`` instead (CHANGELOG.md, "Deprecated").

A module, not a package: the submodules ``pytest_trt.remote_cache.layout``, ``.signing``,
``.transport`` and ``.tier`` are ``pytest_trt.cache.remote.*`` now (no shim).
"""

from __future__ import annotations

import warnings

from .cache.remote import (
    ENV_AUTH,
    ENV_KEY,
    ENV_MODE,
    ENV_TRUST,
    ENV_URL,
    EXTRA_HINT,
    FORMAT,
    MANIFEST,
    MAX_MANIFEST_BYTES,
    MODES,
    PREFIX,
    PUBLIC_KEY_PREFIX,
    SIGNING_CONTEXT,
    CacheStats,
    RemoteTier,
    generate_keypair,
    key_id,
    load_private_key,
    load_public_key,
    public_key_text,
    published_name,
    sign_manifest,
    verify_manifest,
)

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

warnings.warn(
    "pytest_trt.remote_cache is deprecated and goes in the next minor version: import from pytest_trt.cache.remote",
    DeprecationWarning,
    stacklevel=2,
)
