"""Fixtures of the remote cache tier: a real nginx WebDAV server on loopback, signing keys.

nginx comes from the system packages (``apt-get install -y nginx libnginx-mod-http-dav-ext``;
``.ci/install-tier-deps`` installs it in CI). Where it is missing the tests skip with that exact
reason, and under ``PYTEST_TRT_CI_NO_SKIP=1`` the skip is a failure (tests/tiers.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from nginx_server import Nginx, NginxMissing  # noqa: E402

# pytester's in-process runs drop the modules first imported inside them: httpx imported by one
# inner run and httpcore re-imported by the next would no longer recognise each other's
# exceptions (an httpcore.ConnectError escapes httpx unmapped). Import the transport libraries
# here, before any inner run (as tests/conftest.py does for onnx).
for _name in ("httpx", "httpcore", "webdav4.client", "webdav4.fsspec", "fsspec"):
    try:
        __import__(_name)
    except ImportError:  # (the tests importorskip the remote extra and say so)
        pass


@pytest.fixture(autouse=True)
def _close_remote_tiers(monkeypatch):
    """Close the HTTP connections of every RemoteTier a test made."""
    from pytest_trt.cache import remote as remote_cache

    made = []
    real_init = remote_cache.RemoteTier.__init__

    def init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(remote_cache.RemoteTier, "__init__", init)
    yield
    for tier in made:
        tier.close()


@pytest.fixture
def nginx(tmp_path):
    """nginx serving WebDAV on 127.0.0.1 (skips with the exact reason where nginx is missing)."""
    try:
        server = Nginx(tmp_path / "nginx")
    except NginxMissing as exc:
        pytest.skip(str(exc))
    server.start()
    yield server
    server.stop()


@pytest.fixture(params=["webdav", "file"])
def remote(request, tmp_path):
    """(url, the directory where the server keeps the cache's files): nginx WebDAV, then a file:// store."""
    if request.param == "webdav":
        server = request.getfixturevalue("nginx")
        return server.url, server.root / "cache"
    shared = tmp_path / "shared"
    shared.mkdir()
    return f"file://{shared}", shared


@pytest.fixture
def keys(tmp_path):
    """A builder's key pair, and a second (untrusted) one."""
    from pytest_trt.cache.remote import generate_keypair

    return {"builder": generate_keypair(tmp_path / "keys", "builder"),
            "stranger": generate_keypair(tmp_path / "keys", "stranger")}
