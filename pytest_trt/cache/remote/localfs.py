"""The ``file://`` store of the remote cache (a shared mount): regular files only, links never followed.

Anyone who can write to the mount can plant things in it. A reader opens each object with
``O_NONBLOCK | O_NOFOLLOW`` and requires a regular file (``fstat``): a named pipe would block
``open()`` forever, a directory or a device is no manifest or engine file, a symbolic link may
point anywhere; each is a rejected entry (:class:`~pytest_trt.cache.remote.signing.RejectedEntry`),
never a hang and never an unreachable remote. A builder creates each folder below the store's
root and opens it with ``O_NOFOLLOW | O_DIRECTORY`` relative to its parent's descriptor, then
creates its files with ``O_EXCL | O_NOFOLLOW`` in it and publishes with ``linkat``: a symbolic
link planted anywhere below the root (``<root>/pytest-trt-remote-v1/engine -> /elsewhere``)
stops the upload (:class:`UnsafeStorePath`) instead of redirecting it out of the store. The
root itself is the user's choice and may be a link. Where the platform lacks ``O_NOFOLLOW``
or ``dir_fd`` support (Windows) the same checks are made with ``lstat`` and ``realpath``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
from pathlib import Path
from typing import BinaryIO

from .signing import RejectedEntry

__all__ = ["UnsafeStorePath", "exists", "link_new", "list_names", "open_regular", "remove_tree", "write_new"]

_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | _O_NOFOLLOW | _O_CLOEXEC | getattr(os, "O_BINARY", 0)
#: descriptor-relative walks (openat, mkdirat, linkat) are available: the race-free way
_DIR_FD = bool(_O_NOFOLLOW and _O_DIRECTORY and os.open in os.supports_dir_fd and os.mkdir in os.supports_dir_fd
               and os.link in os.supports_dir_fd)


class UnsafeStorePath(OSError):
    """A folder below the store's root is a symbolic link or not a folder: nothing is written through it."""

    def __init__(self, where: str) -> None:
        super().__init__(errno.ELOOP, "a symbolic link or non-folder planted in the store", where)

    def __str__(self) -> str:
        return (f"{self.filename} in the file:// store is a symbolic link or not a folder; pytest-trt never writes "
                f"through a link planted in the store (remove it)")


def open_regular(path: str, shown: str) -> BinaryIO:
    """``path`` opened for reading if it is a regular file (not followed if a link).

    Raises FileNotFoundError when it is absent, :class:`RejectedEntry` when it is a link, a
    named pipe, a folder or a device, or a folder on the way is not one; other OSErrors as is.
    ``shown`` names the object in messages.
    """
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            raise FileNotFoundError(errno.ENOENT, "not in the store", path) from None
        if exc.errno == errno.ELOOP:
            raise RejectedEntry(f"{shown} is a symbolic link in the file:// store, which holds regular files "
                                f"only (planted?)") from None
        if exc.errno in (errno.ENOTDIR, errno.ENXIO, errno.ENODEV):
            raise RejectedEntry(f"{shown} is not a regular file in the file:// store (or a folder on its way "
                                f"is not a folder): planted?") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise RejectedEntry(f"{shown} is not a regular file in the file:// store but a "
                                f"{_kind(st.st_mode)} (planted?)")
        return os.fdopen(fd, "rb", buffering=0)
    except BaseException:
        os.close(fd)
        raise


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "folder"), (stat.S_ISFIFO, "named pipe"), (stat.S_ISSOCK, "socket"),
                       (stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device")):
        if test(mode):
            return name
    return "special file"


def exists(path: str) -> bool:
    """Whether anything (a link included, not followed) is at ``path``."""
    return os.path.lexists(path)


@contextlib.contextmanager
def _folder(root: str, parts: list[str], *, create: bool):
    """A descriptor of ``root/parts...``, each part created if asked and opened without following links."""
    if create:
        os.makedirs(root or "/", exist_ok=True)
    fd = os.open(root or "/", os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
    try:
        for i, part in enumerate(parts):
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o777, dir_fd=fd)
            try:
                child = os.open(part, os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise UnsafeStorePath("/".join([root, *parts[:i + 1]])) from None
                raise
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def _checked_parent(root: str, parts: list[str], *, create: bool) -> str:
    """(Without descriptor-relative calls) the folder ``root/parts[:-1]``, checked to be no link
    and to stay inside the root."""
    if create:
        os.makedirs(root, exist_ok=True)
    folder = here = root
    for part in parts[:-1]:  # (one at a time: never create anything behind a link)
        here = os.path.join(here, part)
        if create and not os.path.lexists(here):
            with contextlib.suppress(FileExistsError):
                os.mkdir(here, 0o777)
        if os.path.islink(here) or not os.path.isdir(here):
            raise UnsafeStorePath(here)
        folder = here
    real_root = os.path.realpath(root)
    if os.path.commonpath([real_root, os.path.realpath(folder)]) != real_root:
        raise UnsafeStorePath(folder)
    return folder


def write_new(root: str, parts: list[str], source: Path | bytes) -> None:
    """Create the file ``root/parts...`` (it must not exist) with ``source``'s bytes (a local file or bytes)."""
    mode = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC | getattr(os, "O_BINARY", 0)
    if _DIR_FD:
        with _folder(root, parts[:-1], create=True) as dfd:
            fd = os.open(parts[-1], mode, 0o666, dir_fd=dfd)
    else:
        fd = os.open(os.path.join(_checked_parent(root, parts, create=True), parts[-1]), mode, 0o666)
    with os.fdopen(fd, "wb") as out:
        if isinstance(source, bytes):
            out.write(source)
        else:
            with open(source, "rb") as f:
                shutil.copyfileobj(f, out, 1 << 20)


def link_new(root: str, staged: list[str], published: list[str]) -> bool:
    """Hard-link ``root/staged...`` to ``root/published...`` if nothing is there: atomic and
    exclusive (``link(2)``; NFSv3+ included). False when the name exists."""
    try:
        if _DIR_FD:
            with _folder(root, staged[:-1], create=False) as sfd, _folder(root, published[:-1], create=False) as pfd:
                os.link(staged[-1], published[-1], src_dir_fd=sfd, dst_dir_fd=pfd, follow_symlinks=False)
        else:
            os.link(os.path.join(_checked_parent(root, staged, create=False), staged[-1]),
                    os.path.join(_checked_parent(root, published, create=False), published[-1]))
    except FileExistsError:
        return False
    return True


def list_names(root: str, parts: list[str]) -> list[str]:
    """The names in the folder ``root/parts...`` (opened without following links below the root);
    ``[]`` when it does not exist."""
    try:
        if _DIR_FD:
            with _folder(root, parts, create=False) as fd:
                return sorted(os.listdir(fd))
        return sorted(os.listdir(_checked_parent(root, [*parts, ""], create=False)))
    except FileNotFoundError:
        return []


def _remove_at(fd: int, name: str) -> None:
    """Delete ``name`` in the folder ``fd`` (a folder with everything in it), never following a link."""
    try:
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=fd)
        return
    child = os.open(name, os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC, dir_fd=fd)
    try:
        for entry in list(os.scandir(child)):
            _remove_at(child, entry.name)
    finally:
        os.close(child)
    with contextlib.suppress(FileNotFoundError):
        os.rmdir(name, dir_fd=fd)


def remove_tree(root: str, parts: list[str]) -> None:
    """Delete ``root/parts...`` and everything in it, following no link: a link planted in its place
    or inside it is removed as a link, never followed (each folder opened relative to its parent)."""
    if _DIR_FD:
        with _folder(root, parts[:-1], create=False) as fd:
            _remove_at(fd, parts[-1])
        return
    path = os.path.join(_checked_parent(root, parts, create=False), parts[-1])
    if os.path.islink(path) or not os.path.isdir(path):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
    else:
        shutil.rmtree(path)
