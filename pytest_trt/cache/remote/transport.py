"""Transport of the remote cache: one remote filesystem, its requests and how its failures read.

Under a URL (``file://``, WebDAV ``http(s)://``, ``s3://`` ...) the tier needs five
operations: read a small object (a manifest), stream a file into a local one while hashing,
write an object, publish a manifest only if absent (``link(2)``, WebDAV ``MOVE`` with
``Overwrite: F``, ``pipe_file(mode="create")``), and see whether a name exists. The saved runs
(:mod:`pytest_trt.history.store`) use the same transport and two more: list a folder and remove one.
:class:`Transport` does them and counts requests into the session's
:class:`~pytest_trt.cache.CacheStats`; :func:`describe_error` and
:func:`is_connection_error` tell an unreachable remote from one that refuses. WebDAV goes
through webdav4's client and its httpx session directly (one GET or PUT per file instead of
fsspec's PROPFIND/MKCOL walks); ``file://`` through :mod:`~pytest_trt.cache.remote.localfs`
(regular files only, no link followed). Reads stop at a wall-clock deadline the tier sets per
entry (:meth:`Transport.set_deadline`; :class:`DeadlineExceeded`), and an error writing the
*local* copy is :class:`LocalDiskError`, never mistaken for the remote's. fsspec, webdav4 and
httpx are imported on first use (the ``remote`` extra).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.lazy import lazy_import
from ...errors import UsageError
from .. import CacheStats
from . import localfs
from .layout import EXTRA_HINT
from .signing import RejectedEntry
from .urls import Redactor, display_url

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

__all__ = [
    "DeadlineExceeded",
    "LocalDiskError",
    "Transport",
    "describe_error",
    "is_connection_error",
    "open_filesystem",
    "transport_errors",
]

#: httpx's timeout of one network operation (connect, one read, one write); a read also stops
#: at the entry's deadline
HTTP_TIMEOUT = 30.0


class DeadlineExceeded(TimeoutError):
    """A read did not complete within the entry's wall-clock deadline (the message says which)."""


class LocalDiskError(Exception):
    """Writing the local copy of a downloaded file failed: the local disk's error (``error``), not the remote's."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


class _Unopened:
    """The filesystem of a URL whose transport could not be set up at session start (an ftp://
    server that refused the connection): every use raises that error, which the tier reports as
    an unreachable remote, as it does for a WebDAV server that is down."""

    protocol = ("unopened",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


class _LocalFilesystem:
    """A local directory (a path or ``file://``): every operation goes through
    :mod:`~pytest_trt.cache.remote.localfs` (the standard library), so no fsspec is needed."""

    protocol = ("file", "local")


def open_filesystem(url: str, auth: str | None, on_request: Callable[[], None] | None = None,
                    flag: str = "--trt-remote-cache",
                    on_response: Callable[[int], None] | None = None,
                    what: str = "the remote cache") -> tuple[Any, str, bool]:
    """(fsspec filesystem, root path, counts_requests) for a remote cache URL.

    ``on_request()`` is called for every HTTP request where the transport lets us see them
    (WebDAV, through httpx's event hooks); then ``counts_requests`` is True. A URL that no
    installed filesystem can serve is a :class:`~pytest_trt.errors.UsageError`; a filesystem
    that fails to connect while it is created (ftp://, sftp://) gives an :class:`_Unopened`
    one. Messages show the URL without its secrets. A local directory (a path, ``file://``) needs
    no fsspec (:class:`_LocalFilesystem`); any other URL does, and a missing one is a usage error
    naming ``what`` uses it (``the remote cache``, ``saved runs``) and the extra.
    """
    shown, redact = display_url(url), Redactor(url, auth)
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if scheme in ("", "file", "local"):
        path = url.split("://", 1)[1] if scheme else url
        if not os.path.isabs(path):
            raise UsageError(f"{flag} {shown}: a local remote cache needs an absolute path "
                             f"(file:///shared/trt-cache)")
        return _LocalFilesystem(), path.rstrip("/") or "/", False
    try:
        fsspec.filesystem  # noqa: B018 (the first use imports fsspec)
    except ImportError:
        raise UsageError(f"{flag} {shown}: fsspec (for {what} at a URL) is not installed: {EXTRA_HINT}") from None
    if scheme in ("http", "https", "webdav+http", "webdav+https"):
        try:
            webdav_filesystem = webdav4_fsspec.WebdavFileSystem
        except ImportError:
            raise UsageError(f"{flag} {shown}: WebDAV needs the `webdav4` package: {EXTRA_HINT}") from None
        base = url.split("+", 1)[1] if scheme.startswith("webdav+") else url
        # (a fresh instance: fsspec would otherwise share one per URL, with another tier's counters)
        kwargs: dict[str, Any] = {"retry": False, "timeout": HTTP_TIMEOUT, "skip_instance_cache": True}
        if on_request is not None:
            hooks: dict[str, list[Callable[[Any], None]]] = {"request": [lambda request: on_request()]}
            if on_response is not None:
                hooks["response"] = [lambda response: on_response(response.status_code)]
            kwargs["event_hooks"] = hooks
        if auth:
            user, _, password = auth.partition(":")
            kwargs["auth"] = (user, password)
        try:
            return webdav_filesystem(base.rstrip("/"), **kwargs), "", on_request is not None
        except Exception as exc:  # (httpx refuses some URLs that urllib accepts)
            raise UsageError(f"{flag} {shown}: not a usable WebDAV URL ({redact(str(exc))})") from None
    try:
        fsspec.get_filesystem_class(fsspec.core.split_protocol(url)[0])
    except (ImportError, ValueError) as exc:
        raise UsageError(f"{flag} {shown}: fsspec cannot open it ({redact(str(exc))}); s3://, gs:// and az:// "
                         f"need s3fs, gcsfs or adlfs installed") from None
    try:
        fs, root = fsspec.core.url_to_fs(url)
    except (ImportError, TypeError) as exc:
        raise UsageError(f"{flag} {shown}: fsspec cannot open it ({redact(str(exc))})") from None
    except Exception as exc:  # connecting failed: reported as an unreachable remote at first use
        return _Unopened(exc), "", False
    return fs, root.rstrip("/"), False


def describe_error(exc: BaseException, status: int | None = None) -> str:
    """What went wrong, in a few words: full (507, ENOSPC), read-only (401/403/405, EROFS), an HTTP
    status, a missed deadline or a planted link (their own message), else the exception."""
    if isinstance(exc, (DeadlineExceeded, localfs.UnsafeStorePath)):
        return str(exc)
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

    def __init__(self, url: str, auth: str | None, flag: str, stats: CacheStats,
                 what: str = "the remote cache") -> None:
        self.stats = stats
        #: the last HTTP error status other than 404 (WebDAV clients turn e.g. a refused MKCOL into
        #: FileNotFoundError; the status says what happened)
        self.http_status: int | None = None
        self.fs, self.root, self._counted = open_filesystem(url, auth, self._count_request, flag,
                                                            self._note_status, what)
        #: the exceptions that mean "the transport failed" (connection, HTTP, filesystem)
        self.errors = transport_errors()
        protocol = self.fs.protocol if isinstance(self.fs.protocol, tuple) else (self.fs.protocol,)
        self.local = "file" in protocol or "local" in protocol
        self.webdav = "webdav" in protocol
        #: ``time.monotonic()`` after which a read gives up (:class:`DeadlineExceeded`), and what
        #: the message says; set per entry by the tier
        self._deadline: float | None = None
        self._deadline_text = ""

    def close(self) -> None:
        """Close the HTTP connections (WebDAV)."""
        if self.webdav:
            with contextlib.suppress(Exception):
                self.fs.client.http.close()

    def path(self, *parts: str) -> str:
        """The remote path of ``parts`` under the root."""
        root = self.root.rstrip("/")
        if self.local and not root:  # the store is the filesystem's root
            return "/" + "/".join(parts)
        return "/".join(p for p in (root, *parts) if p)

    def _note_status(self, status: int) -> None:
        if status >= 400 and status != 404:
            self.http_status = status

    def _count_request(self) -> None:
        self.stats.remote_requests += 1

    def _opened(self) -> Any:
        if isinstance(self.fs, _Unopened):
            raise self.fs.error
        return self.fs

    def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)``, counted as one request where the transport cannot count real ones."""
        if not self._counted:  # one filesystem call ~ one request (HTTP transports count the real ones)
            self.stats.remote_requests += 1
        return fn(*args, **kwargs)

    def _parts(self, path: str) -> list[str]:
        """``path`` (under the root) as the list of its names below the root."""
        prefix = self.root.rstrip("/") + "/"
        return path[len(prefix):].split("/") if path.startswith(prefix) else path.lstrip("/").split("/")

    def exists(self, path: str) -> bool:
        """Whether ``path`` exists on the remote."""
        if self.local:
            return bool(self.call(localfs.exists, path))
        return bool(self.call(self._opened().exists, path))

    # ------------------------------------------------------------------ the deadline of an entry

    def set_deadline(self, seconds: float | None, text: str = "") -> None:
        """Reads give up ``seconds`` from now (None: no deadline) with :class:`DeadlineExceeded`\\(``text``)."""
        self._deadline = None if seconds is None else time.monotonic() + seconds
        self._deadline_text = text

    def extend_deadline(self, seconds: float, text: str = "") -> None:
        """Move the current deadline ``seconds`` later (the allowance for files of a known size)."""
        if self._deadline is not None:
            self._deadline += seconds
            self._deadline_text = text or self._deadline_text

    def _check_deadline(self) -> None:
        if self._deadline is not None and time.monotonic() > self._deadline:
            raise DeadlineExceeded(self._deadline_text or "the remote cache answered too slowly")

    def _http_timeout(self) -> Any:
        """httpx's timeouts for one request: no single network wait beyond the deadline."""
        if self._deadline is None:
            return HTTP_TIMEOUT
        self._check_deadline()
        return max(0.05, min(HTTP_TIMEOUT, self._deadline - time.monotonic()))

    # WebDAV goes through webdav4's client and its httpx session directly: one GET per file
    # (streamed, stopped at the signed size) and one PUT per file (collections created only
    # when the server says they are missing), instead of fsspec's PROPFIND before every read and
    # PROPFIND/MKCOL walk before every write (nginx: 17 requests to publish a one-file entry
    # that way, 4 this way; 2 to fetch it instead of 5).

    def read_small(self, path: str, limit: int) -> bytes:
        """The bytes of ``path`` (at most ``limit``, else RejectedEntry); FileNotFoundError when absent."""
        chunks, size = [], 0
        for chunk in self.stream(path):
            size += len(chunk)
            if size > limit:
                raise RejectedEntry(f"{path.rsplit('/', 1)[-1]} has more than {limit} bytes, more than a manifest has")
            chunks.append(chunk)
        return b"".join(chunks)

    def read_to_file(self, path: str, local: Path, signed_size: int) -> tuple[str, int]:
        """Stream ``path`` into the new file ``local``, hashing; stops past the signed size. Returns (sha256, size).

        An OSError of the local file (a full local disk) is raised as :class:`LocalDiskError`:
        it says nothing about the remote.
        """
        h, size = hashlib.sha256(), 0
        try:
            out = open(local, "xb")  # noqa: SIM115 (closed below: its errors are the local disk's)
        except OSError as exc:
            raise LocalDiskError(exc) from exc
        try:
            for chunk in self.stream(path):
                size += len(chunk)
                if size > signed_size:
                    raise RejectedEntry(f"{local.name!r} has more bytes than the signed {signed_size} (stopped "
                                        f"reading; tampered file)")
                h.update(chunk)
                try:
                    out.write(chunk)
                except OSError as exc:
                    raise LocalDiskError(exc) from exc
            try:
                out.close()
            except OSError as exc:
                raise LocalDiskError(exc) from exc
        finally:
            with contextlib.suppress(OSError):
                out.close()
        self.stats.remote_bytes_down += size
        return h.hexdigest(), size

    def stream(self, path: str) -> Iterator[bytes]:
        """The bytes of ``path`` in chunks as they arrive; FileNotFoundError when absent, RejectedEntry
        when it is no regular file (file://), DeadlineExceeded past the entry's deadline."""
        self.http_status = None
        self._check_deadline()
        if self.webdav:
            client = self.fs.client
            with client.http.stream("GET", client.join_url(path), timeout=self._http_timeout()) as response:
                if response.status_code == 404:
                    raise FileNotFoundError(errno.ENOENT, "not on the remote", path)
                response.raise_for_status()
                for chunk in response.iter_bytes():  # (as received: the deadline is checked between reads)
                    self._check_deadline()
                    yield chunk
            return
        if self.local:
            f = self.call(localfs.open_regular, path, "/".join(self._parts(path)[-3:]))
        else:
            f = self.call(self._opened().open, path, "rb")
        with f:
            while chunk := f.read(1 << 20):
                self._check_deadline()
                yield chunk

    def write(self, path: str, source: Path | bytes) -> None:
        """Write a local file or bytes to the new object ``path`` (creating parents where the transport needs it)."""
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
            self.call(localfs.write_new, self.root, self._parts(path), source)
            return
        fs = self._opened()
        if isinstance(source, bytes):
            self.call(fs.pipe_file, path, source)
        else:
            self.call(fs.put_file, str(source), path)

    def list_names(self, path: str) -> list[str]:
        """The names directly under the folder ``path`` (sorted); ``[]`` when it does not exist.

        WebDAV: one ``PROPFIND`` of depth 1; ``file://``: the folder opened without following links;
        other filesystems: ``ls``. Used by the saved runs (:mod:`pytest_trt.history.store`), not by the cache.
        """
        if self.local:
            return list(self.call(localfs.list_names, self.root, self._parts(path)))
        try:
            if self.webdav:
                found = self.call(self.fs.client.ls, path, detail=False)
            else:
                found = self.call(self._opened().ls, path, detail=False)
        except FileNotFoundError:
            return []
        except Exception as exc:
            if type(exc).__name__ == "ResourceNotFound":  # webdav4's 404
                return []
            raise
        names = {str(entry.get("name") if isinstance(entry, dict) else entry).rstrip("/").rsplit("/", 1)[-1]
                 for entry in found}
        return sorted(n for n in names if n)

    def remove_tree(self, path: str) -> None:
        """Delete the folder (or object) ``path`` and everything under it; nothing when it is absent.

        ``file://``: no link is followed (:func:`~pytest_trt.cache.remote.localfs.remove_tree`).
        """
        if self.local:
            self.call(localfs.remove_tree, self.root, self._parts(path))
            return
        try:
            if self.webdav:
                self._webdav_delete(path)
            else:
                self.call(self._opened().rm, path, recursive=True)
        except FileNotFoundError:
            return
        except Exception as exc:
            if type(exc).__name__ == "ResourceNotFound":
                return
            raise

    def _webdav_delete(self, path: str) -> None:
        """WebDAV ``DELETE`` of a collection or a resource: a collection's URL ends with ``/`` (nginx
        answers 409 Conflict otherwise, RFC 4918 allows either), so a 409 is retried with it."""
        client = self.fs.client
        url = str(client.join_url(path)).rstrip("/")
        for target in (url, url + "/"):
            response = client.http.request("DELETE", target)
            if response.status_code == 404:
                raise FileNotFoundError(errno.ENOENT, "not on the remote", path)
            if response.status_code != 409 or target.endswith("/"):
                response.raise_for_status()
                return

    def publish_if_absent(self, staged: str, published: str, manifest: bytes) -> bool:
        """Make ``staged`` (an uploaded manifest) the object ``published`` unless that exists; True if it did."""
        if self.local:
            return bool(self.call(localfs.link_new, self.root, self._parts(staged), self._parts(published)))
        if self.webdav:
            try:
                self.call(self.fs.client.move, staged, published, overwrite=False)
            except webdav4_client.ResourceAlreadyExists:
                return False
            return True
        try:
            self.call(self._opened().pipe_file, published, manifest, mode="create")
        except FileExistsError:
            return False
        return True
