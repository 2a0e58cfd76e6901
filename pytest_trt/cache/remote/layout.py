"""Names of the remote cache: its object layout under the URL, its configuration, its extra.

Everything the signing, transport and tier modules (and the session that configures the
tier) agree on by name: the path prefix and manifest names of the remote layout, the
environment variables and modes of ``--trt-remote-cache*``, and the install hint of the
``remote`` extra that every missing-library message ends with.
"""

from __future__ import annotations

__all__ = [
    "DEFAULT_TIMEOUT",
    "ENV_AUTH",
    "ENV_KEY",
    "ENV_MODE",
    "ENV_TRUST",
    "ENV_URL",
    "EXTRA_HINT",
    "MANIFEST",
    "MODES",
    "PREFIX",
    "SECONDS_PER_MIB",
    "published_name",
]

ENV_URL = "PYTEST_TRT_REMOTE_CACHE"
ENV_KEY = "PYTEST_TRT_REMOTE_CACHE_KEY"
ENV_TRUST = "PYTEST_TRT_REMOTE_CACHE_TRUST"
ENV_MODE = "PYTEST_TRT_REMOTE_CACHE_MODE"
#: ``user:password`` for HTTP basic authentication to a WebDAV server (optional)
ENV_AUTH = "PYTEST_TRT_REMOTE_CACHE_AUTH"

PREFIX = "pytest-trt-remote-v1"
MANIFEST = "manifest.json"
MODES = ("auto", "ro", "rw")
EXTRA_HINT = "install the remote extra: pip install 'pytest-trt[remote]'"
#: ``--trt-remote-cache-timeout``: seconds one entry's fetch may take (its manifest and first
#: bytes), plus SECONDS_PER_MIB for each MiB of its signed files; past that the entry is built
#: locally and the remote is not asked again in the session. 1 s per MiB is a floor of 1 MiB/s
#: (8 Mbit/s): a remote slower than that is no faster than building a large engine locally, and
#: a server that trickles bytes (under every per-read timeout) is stopped.
DEFAULT_TIMEOUT = 60.0
SECONDS_PER_MIB = 1.0


def published_name(kid: str) -> str:
    """The published manifest of the entries signed by key ``kid``: ``manifest.<kid>.json``."""
    return f"manifest.{kid}.json"
