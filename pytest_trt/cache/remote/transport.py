"""Transport of the remote cache: one remote filesystem, its requests and how its failures read.

Under a URL (``file://``, WebDAV ``http(s)://``, ``s3://`` ...) the tier needs five
operations: read a small object (a manifest), stream a file into a local one while hashing,
write an object, publish a manifest only if absent (``link(2)``, WebDAV ``MOVE`` with
``Overwrite: F``, ``pipe_file(mode="create")``), and see whether a name exists.
:class:`Transport` does them and counts requests into the session's
:class:`~pytest_trt.cache.CacheStats`; :func:`describe_error` and
:func:`is_connection_error` tell an unreachable remote from one that refuses. WebDAV goes
through webdav4's client and its httpx session directly (one GET or PUT per file instead of
fsspec's PROPFIND/MKCOL walks). fsspec, webdav4 and httpx are imported on first use (the
``remote`` extra).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.lazy import lazy_import
from ...errors import UsageError
from .. import CacheStats
from .layout import EXTRA_HINT
from .signing import RejectedEntry

if TYPE_CHECKING:
    import fsspec
    import httpx
    import webdav4.client as webdav4_client
    import webdav4.fsspec as webdav4_fsspec
else:
    fsspec = lazy_import("fsspec", extra="remote")
    httpx = lazy_import("httpx", extra="remote")
    webdav4_client = lazy_import("webdav4.client", extra="remote")
    webdav4_fsspec = lazy_import("webdav4.fsspec", extra="remote")

__all__ = ["Transport", "describe_error", "is_connection_error", "open_filesystem", "transport_errors"]


def open_filesystem(url: str, auth: str | None, on_request: Callable[[], None] | None = None,
                    flag: str = "--trt-remote-cache",
                    on_response: Callable[[int], None] | None = None) -> tuple[Any, str, bool]:
    """(fsspec filesystem, root path, counts_requests) for a remote cache URL.

    ``on_request()`` is called for every HTTP request where the transport lets us see them
    (WebDAV, through httpx's event hooks); then ``counts_requests`` is True.
    """
    try:
        filesystem = fsspec.filesystem  # the first use imports fsspec
    except ImportError:
        raise UsageError(f"{flag} {url}: the remote cache uses fsspec: {EXTRA_HINT}") from None
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if scheme in ("http", "https", "webdav+http", "webdav+https"):
        try:
            webdav_filesystem = webdav4_fsspec.WebdavFileSystem
        except ImportError:
            raise UsageError(f"{flag} {url}: WebDAV needs the `webdav4` package: {EXTRA_HINT}") from None
        base = url.split("+", 1)[1] if scheme.startswith("webdav+") else url
        # (a fresh instance: fsspec would otherwise share one per URL, with another tier's counters)
        kwargs: dict[str, Any] = {"retry": False, "timeout": 30, "skip_instance_cache": True}
        if on_request is not None:
            hooks: dict[str, list[Callable[[Any], None]]] = {"request": [lambda request: on_request()]}
            if on_response is not None:
                hooks["response"] = [lambda response: on_response(response.status_code)]
            kwargs["event_hooks"] = hooks
        if auth:
            user, _, password = auth.partition(":")
            kwargs["auth"] = (user, password)
        return webdav_filesystem(base.rstrip("/"), **kwargs), "", on_request is not None
    if scheme in ("", "file", "local"):
        path = url.split("://", 1)[1] if scheme else url
        if not os.path.isabs(path):
            raise UsageError(f"{flag} {url}: a local remote cache needs an absolute path "
                             f"(file:///shared/trt-cache)")
        return filesystem("file"), path.rstrip("/"), False
    try:
        fs, root = fsspec.core.url_to_fs(url)
    except (ImportError, ValueError) as exc:
        raise UsageError(f"{flag} {url}: fsspec cannot open it ({exc}); s3://, gs:// and az:// need "
                         f"s3fs, gcsfs or adlfs installed") from None
    return fs, root.rstrip("/"), False


def describe_error(exc: BaseException, status: int | None = None) -> str:
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


def is_connection_error(exc: BaseException) -> bool:
    """The server could not be reached or went away (as opposed to a server that refused)."""
    if isinstance(exc, (ConnectionError, TimeoutError)):
        return True
    with contextlib.suppress(ImportError):  # (httpx comes with webdav4: absent, no error can be its)
        if isinstance(exc, httpx.TransportError):
            return True
    return isinstance(exc.__cause__ or exc.__context__, (ConnectionError, TimeoutError)) or (
        (exc.__cause__ or exc.__context__) is not None
        and type(exc.__cause__ or exc.__context__).__module__.startswith("httpx")
        and type(exc.__cause__ or exc.__context__).__name__.endswith(("ConnectError", "ReadError", "WriteError",
                                                                       "RemoteProtocolError", "Timeout"))
    )


def transport_errors() -> tuple[type[BaseException], ...]:
    errors: list[type[BaseException]] = [OSError, TimeoutError, ValueError]
    with contextlib.suppress(ImportError):
        errors.append(httpx.HTTPError)
    with contextlib.suppress(ImportError):
        errors.append(webdav4_client.ClientError)
    return tuple(errors)


class Transport:
    """The remote filesystem of one tier: reads, writes and exclusive publishing, counted in ``stats``.

    Args:
        url: the remote cache URL (as given: credentials included).
        auth: ``user:password`` for WebDAV basic authentication.
        flag: the option's spelling in the user's words, for error messages.
        stats: where requests (and downloaded bytes) are counted.
    """

    def __init__(self, url: str, auth: str | None, flag: str, stats: CacheStats) -> None:
        self.stats = stats
        #: the last HTTP error status other than 404 (WebDAV clients turn e.g. a refused MKCOL into
        #: FileNotFoundError; the status says what happened)
        self.http_status: int | None = None
        self.fs, self.root, self._counted = open_filesystem(url, auth, self._count_request, flag,
                                                            self._note_status)
        #: the exceptions that mean "the transport failed" (connection, HTTP, filesystem)
        self.errors = transport_errors()
        protocol = self.fs.protocol if isinstance(self.fs.protocol, tuple) else (self.fs.protocol,)
        self.local = "file" in protocol or "local" in protocol
        self.webdav = "webdav" in protocol

    def close(self) -> None:
        """Close the HTTP connections (WebDAV)."""
        if self.webdav:
            with contextlib.suppress(Exception):
                self.fs.client.http.close()

    def path(self, *parts: str) -> str:
        """The remote path of ``parts`` under the root."""
        return "/".join(p for p in (self.root, *parts) if p)

    def _note_status(self, status: int) -> None:
        if status >= 400 and status != 404:
            self.http_status = status

    def _count_request(self) -> None:
        self.stats.remote_requests += 1

    def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)``, counted as one request where the transport cannot count real ones."""
        if not self._counted:  # one filesystem call ~ one request (HTTP transports count the real ones)
            self.stats.remote_requests += 1
        return fn(*args, **kwargs)

    def exists(self, path: str) -> bool:
        """Whether ``path`` exists on the remote."""
        return bool(self.call(self.fs.exists, path))

    # WebDAV goes through webdav4's client and its httpx session directly: one GET per file
    # (streamed, stopped at the signed size) and one PUT per file (collections created only
    # when the server says they are missing), instead of fsspec's PROPFIND before every read and
    # PROPFIND/MKCOL walk before every write (nginx: 17 requests to publish a one-file entry
    # that way, 4 this way; 2 to fetch it instead of 5).

    # WebDAV goes through webdav4's client and its httpx session directly: one GET per file
    # (streamed, stopped at the signed size) and one PUT per file (collections created only
    # when the server says they are missing), instead of fsspec's PROPFIND before every read and
    # PROPFIND/MKCOL walk before every write (nginx: 17 requests to publish a one-file entry
    # that way, 4 this way; 2 to fetch it instead of 5).

    def read_small(self, path: str, limit: int) -> bytes:
        """The bytes of ``path`` (at most ``limit``); FileNotFoundError when absent."""
        chunks, size = [], 0
        for chunk in self.stream(path):
            size += len(chunk)
            if size > limit:
                raise RejectedEntry(f"{path.rsplit('/', 1)[-1]} has more than {limit} bytes, more than a manifest has")
            chunks.append(chunk)
        return b"".join(chunks)

    def read_to_file(self, path: str, local: Path, signed_size: int) -> tuple[str, int]:
        """Stream ``path`` into ``local``, hashing; stops past the signed size. Returns (sha256, size)."""
        h, size = hashlib.sha256(), 0
        with open(local, "xb") as out:
            for chunk in self.stream(path):
                size += len(chunk)
                if size > signed_size:
                    raise RejectedEntry(f"{local.name!r} has more bytes than the signed {signed_size} (stopped "
                                    f"reading; tampered file)")
                h.update(chunk)
                out.write(chunk)
        self.stats.remote_bytes_down += size
        return h.hexdigest(), size

    def stream(self, path: str) -> Iterator[bytes]:
        self.http_status = None
        if self.webdav:
            client = self.fs.client
            with client.http.stream("GET", client.join_url(path)) as response:
                if response.status_code == 404:
                    raise FileNotFoundError(errno.ENOENT, "not on the remote", path)
                response.raise_for_status()
                yield from response.iter_bytes(1 << 20)
            return
        with self.call(self.fs.open, path, "rb") as f:
            while chunk := f.read(1 << 20):
                yield chunk

    def write(self, path: str, source: Path | bytes) -> None:
        """Write a local file or bytes to ``path`` (creating parents where the transport needs it)."""
        if self.webdav:
            def put() -> None:
                if isinstance(source, bytes):
                    self.fs.client.upload_fileobj(io.BytesIO(source), path, overwrite=True)
                else:
                    with open(source, "rb") as f:
                        self.fs.client.upload_fileobj(f, path, overwrite=True)

            try:
                put()
            except webdav4_client.HTTPError as exc:
                # a missing parent collection: 409 Conflict (RFC 4918 9.7.1); nginx without
                # create_full_put_path answers 500. Create the collections and retry once.
                if exc.status_code not in (409, 500):
                    raise
                parts = path.split("/")[:-1]
                for i in range(1, len(parts) + 1):
                    with contextlib.suppress(webdav4_client.ResourceAlreadyExists):  # 405: it exists
                        self.fs.client.mkdir("/".join(parts[:i]))
                put()
            return
        if self.local:
            os.makedirs(os.path.dirname(path), exist_ok=True)
        if isinstance(source, bytes):
            self.call(self.fs.pipe_file, path, source)
        else:
            self.call(self.fs.put_file, str(source), path)

    def publish_if_absent(self, staged: str, published: str, manifest: bytes) -> bool:
        if self.local:
            try:
                self.call(os.link, staged, published)
            except FileExistsError:
                return False
            return True
        if self.webdav:
            try:
                self.call(self.fs.client.move, staged, published, overwrite=False)
            except webdav4_client.ResourceAlreadyExists:
                return False
            return True
        try:
            self.call(self.fs.pipe_file, published, manifest, mode="create")
        except FileExistsError:
            return False
        return True
